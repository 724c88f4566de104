"""sip-retransmission with a service law per flow (``--service-non-invite``, issue 17).

The references share no code with the engine: the FIFO M/H2/1 queue in closed form (exponential services mu_1 !=
mu_2 mixed with the INVITE share w: the Pollaczek-Khinchine transform of the wait is rational, so a flow's sojourn
W(s) mu_i / (mu_i + s) has two real poles and its tail is a sum of two exponentials, written out here from the
partial fractions), with the share w and the fixed point solved by mpmath's findroot at 40 digits; and the
transaction simulator with Timer B = T1 (one copy per transaction: the fixed point is exact), which draws each
copy's service from its own flow's law.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest

from qderive.derivations.cli import main
from qderive.numeric.engines.sip import FixedPointMap
from qderive.numeric.simulation.sip import simulate_sip
from qderive.numeric.simulation.stats import student_t_quantile
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Deterministic, Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

# T1 = 1/2, T2 = 1, Timer B = F = 4 s: the copy instants after copy 0 (written out: no code of the package)
_INVITE = [F(1, 2), F(3, 2), F(7, 2)]
_NON_INVITE = [F(1, 2), F(3, 2), F(5, 2), F(7, 2)]
MU1, MU2, R1, R2 = 10, 20, 3, 2


def _model(**kw):
    return Sip(rate=R1, rate_non_invite=R2, service=Exponential(F(1, MU1)), service_non_invite=Exponential(F(1, MU2)),
               t1=F(1, 2), t2=1, timeout=4, scan_points=8, **kw)


def _tail(lam, w, mu_i, mu_j, t):
    """P(T_i > t) of the M/H2/1 sojourn of a flow-i copy: T_i(s) = (1 - rho) mu_i (mu_j + s) / Q(s), Q(s) = s^2 +
    (mu_1 + mu_2 - lambda) s + mu_1 mu_2 - lambda ((1 - w) mu_1 + w mu_2) (the P-K denominator s - lambda +
    lambda B(s) over (mu_1 + s)(mu_2 + s), divided by s), B = w Exp(mu_1) + (1 - w) Exp(mu_2)."""
    rho = lam * (w / MU1 + (1 - w) / MU2)
    a, b = mpmath.polyroots([1, MU1 + MU2 - lam, MU1 * MU2 - lam * ((1 - w) * MU1 + w * MU2)], maxsteps=200,
                            extraprec=100)
    a, b = -a, -b
    ca = (1 - rho) * mu_i * (mu_j - a) / (b - a)
    cb = (1 - rho) * mu_i * (mu_j - b) / (a - b)
    return mpmath.re(ca / a * mpmath.exp(-a * t) + cb / b * mpmath.exp(-b * t))


def _copies(lam, w):
    """(E_1[copies], E_2[copies]) at copy rate lambda and share w: p = 0, E_i = 1 + sum_k P(T_i > tau_k)."""
    e1 = 1 + sum(_tail(lam, w, MU1, MU2, t) for t in _INVITE)
    e2 = 1 + sum(_tail(lam, w, MU2, MU1, t) for t in _NON_INVITE)
    return e1, e2


def _share(lam):
    def h(w):
        e1, e2 = _copies(lam, w)
        return R1 * e1 / (R1 * e1 + R2 * e2) - w
    return mpmath.findroot(h, mpmath.mpf(R1) / (R1 + R2), tol=mpmath.mpf(10) ** -36)


@pytest.mark.slow  # 1.8 s; the loop keeps the MH2 fixed point against the closed form (the next test)
def test_mh2_copies_per_flow_at_a_given_rate_against_the_closed_form():
    """Control none, infinite room, mu_1 = 10 != mu_2 = 20: each flow's E[copies] at lambda = 8 (with the share w
    solved there) to 1e-20 (the engine at 20 digits: Euler inversion with absolute error below 1e-25; the reference
    at 40 digits)."""
    m = _model()
    with mpmath.workdps(40):
        lam = mpmath.mpf(8)
        e1, e2 = _copies(lam, _share(lam))
        fmap = FixedPointMap(m)
        got = fmap.flow_fates(fmap.server(F(8), 20), 20)[3]
        assert abs(got[0]["mean_copies"] - e1) < 1e-20 and abs(got[1]["mean_copies"] - e2) < 1e-20
        assert abs(e1 - e2) > 1e-3  # the two laws matter


def _star():
    def g(x):
        e1, e2 = _copies(x, _share(x))
        return R1 * e1 + R2 * e2 - x
    return mpmath.findroot(g, mpmath.mpf("5.2"), tol=mpmath.mpf(10) ** -34)


def test_mh2_fixed_point_in_float64_against_the_closed_form():
    """The smallest fixed point and each flow's E[copies] there, float64: to 1e-8 (the float64 inversion's absolute
    error is up to about 1e-9 per tail, a few tails per flow)."""
    with mpmath.workdps(40):
        star = _star()
        e1, e2 = _copies(star, _share(star))
    r = _model().evaluate()  # (the CLI test below evaluates the same model: cached)
    assert abs(r.offered_rate - float(star)) < 1e-8 * float(star)
    assert abs(r.flows["invite"]["mean_copies"] - float(e1)) < 1e-8
    assert abs(r.flows["non-invite"]["mean_copies"] - float(e2)) < 1e-8


def test_one_copy_per_transaction_goodput_per_flow_within_the_simulated_99_percent_interval():
    """Timer B = T1 (one copy per transaction: exact), control ignore (the control chain with a phase per flow, each
    admitted copy's own first service rate): the per-flow goodput within the simulator's 99 % intervals (8
    replications of 300 s). Means 0.1 and 0.02 s: a server that gave both flows one law would miss them."""
    m = Sip(rate=5, rate_non_invite=6, service=Exponential(F(1, 10)), service_non_invite=Exponential(F(1, 50)),
            control="ignore", thresholds=(3, 4), timeout=F(1, 2), scan_points=16)
    r = m.evaluate()
    sim = simulate_sip(m, horizon=300, warmup=10, replications=8, seed=5)
    widen = student_t_quantile(0.995, 7) / student_t_quantile(0.975, 7)
    for name in ("invite", "non-invite"):
        est, hw = sim["flows"][name]["goodput"]
        assert abs(r.flows[name]["goodput"] - est) <= widen * hw, (name, r.flows[name]["goodput"], est, hw)
    g1, g2 = (r.flows[n]["goodput"] / rate for n, rate in (("invite", 5), ("non-invite", 6)))
    assert g2 - g1 > 0.01  # the shorter non-INVITE service answers more often within T1


def test_cli_json_and_bad_inputs(capsys):
    assert main(["eval", "sip-retransmission", "--rate", "3", "--rate-non-invite", "2", "--service", "exp:mean=0.1",
                 "--service-non-invite", "exp:mean=0.05", "--t1", "0.5", "--t2", "1", "--timeout", "4",
                 "--scan-points", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"]["service_non_invite"] == "exp:mean=0.05"
    flows = out["measures"]["flows"]
    assert flows["invite"]["mean_copies"] > flows["non-invite"]["mean_copies"] > 1
    with pytest.raises(ParameterError, match="service_non_invite.*second flow"):
        Sip(rate=3, service=Exponential(F(1, 10)), service_non_invite=Exponential(F(1, 20)))
    # a constant law per flow is not computed by the engine (its declaration, not the model's): refused at once
    constant = Sip(rate=3, rate_non_invite=2, service=Exponential(F(1, 10)), service_non_invite=Deterministic(F(1, 20)))
    with pytest.raises(ParameterError, match="constant law") as err:
        constant.evaluate()
    assert "--service-non-invite" in str(err.value) and err.value.refusal.field == "service_non_invite"
    assert main(["eval", "sip-retransmission", "--rate", "3", "--service", "exp:mean=0.1",
                 "--service-non-invite", "exp:mean=0.05"]) != 0
    assert "--rate-non-invite" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="two inner unknowns"):  # (--capacity is computed: test_sip_mixture_routes)
        _model(duplicate_cost=F(1, 2)).evaluate()


def test_law_mixture_against_its_components():
    """LawMixture of exp(mean 1/10) and erlang: moments, the PH form's mean (-alpha T^-1 1, numpy) and samples'
    mean (20000 draws: 4 standard errors) against the weighted components."""
    import numpy as np

    from qderive.symbolic.laws import Erlang
    from qderive.symbolic.laws.mixture import LawMixture

    a, b = Exponential(F(1, 10)), Erlang(2, F(1, 5))
    m = LawMixture.of(a, b, F(1, 3))
    assert m.moment(2) == F(1, 3) * a.moment(2) + F(2, 3) * b.moment(2)
    alpha, T = m.phase_type()
    ph_mean = -np.array(alpha, dtype=float) @ np.linalg.solve(np.array(T, dtype=float), np.ones(len(alpha)))
    assert abs(ph_mean - float(m.mean)) < 1e-12
    x = m.sample(np.random.default_rng(3), 20000)
    assert abs(x.mean() - float(m.mean)) < 4 * x.std() / np.sqrt(len(x))
    with pytest.raises(ParameterError, match="sum to 1"):
        LawMixture((a, b), (F(1, 2), F(1, 3)))
