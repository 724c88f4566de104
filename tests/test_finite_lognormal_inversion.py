"""Lognormal laws in the finite room by transform inversion (issue 28 item 1, branch lg28).

The finite room's transform (``numeric/engines/vacation_finite_wait.py``, items 1-4) needs the probabilities beta_K of
K batches during a service (varphi_K during a vacation); for a lognormal they come from its size-biased laws
(``numeric/size_biased.py``: beta_K = lambda^K m_K / K! L_K*(lambda), one trapezoidal rule centred at each
integrand's peak), only as far as the rows and the backward sweep's nodes need. Every number against something
computed another way:

* the counts and their tails against ``mpmath.quad`` of the Poisson-lognormal mixture (the density written here) at
  30 digits;
* the tail against today's certified lattice bracket (F5)/(F6) of the capped service (the other method of the engine:
  sums of positive terms over the rounded-down and rounded-up lattices, no transform);
* a large room at a low load against the infinite room's inversion (vacation-infinite: the Fuhrmann-Cooper
  decomposition with the law's own transform, no count sequence), within the finite room's loss;
* a lognormal vacation with an Erlang-2 service, both admission rules and three vacation policies, against a seeded
  simulation's 99 % interval;
* 20 digits against 30 digits.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

import qderive as qd
from qderive.numeric.backend import mp_context
from qderive.numeric.engines.vacation_finite_wait import (response_laws, service_lattice_setup,
                                                           service_lattice_tails, wait_law_data)
from qderive.numeric.response import tails
from qderive.numeric.size_biased import count_terms, size_biased_sequences
from qderive.symbolic.models.vacation import Admission, VacationPolicy

SERVICE = qd.LogNormal(F(12, 1000), F(2))  # the law: mean 12 ms, scv 2
RATE = F(275, 24)  # load 0.55 with geometric batches of mean 4


def _density_mixture(law, lam, K, tail=False):
    """P(K arrivals) (``tail``: P(more than K)) of Poisson(lam T), T lognormal, by mpmath.quad on the density in x,
    split at the median's decades and at K / lam (the Poisson weight's peak): not the package's rule."""
    sigma2 = mpmath.log(1 + mpmath.mpf(law.scv.numerator) / law.scv.denominator)
    mu = mpmath.log(mpmath.mpf(law.mean.numerator) / law.mean.denominator) - sigma2 / 2
    lm = mpmath.mpf(lam.numerator) / lam.denominator

    def f(x):
        pdf = mpmath.exp(-(mpmath.log(x) - mu) ** 2 / (2 * sigma2)) / (x * mpmath.sqrt(2 * mpmath.pi * sigma2))
        if tail:
            return pdf * mpmath.gammainc(K + 1, 0, lm * x, regularized=True)  # P(Poisson(lam x) > K)
        return pdf * mpmath.exp(-lm * x + K * mpmath.log(lm * x) - mpmath.loggamma(K + 1))

    med = mpmath.exp(mu)
    cuts = sorted({med * mpmath.mpf(10) ** k for k in range(-4, 9)} | ({mpmath.mpf(K) / lm} if K else set()))
    return mpmath.quad(f, [0] + cuts + [mpmath.inf])


def test_counts_and_tails_match_the_quadrature_of_the_mixture_at_30_digits():
    with mpmath.workdps(30):
        got = count_terms(SERVICE, RATE, [0, 3, 40, 150], 30)
        beta, tail, _ = size_biased_sequences(SERVICE, RATE, 40, mp_context(30))
    with mpmath.workdps(45):  # the references at 45 digits (tanh-sinh on the split intervals)
        for K, g in zip([0, 3, 40, 150], got):
            ref = _density_mixture(SERVICE, RATE, K)
            # 30 digits asked (beta_150 = 2e-14: relative to itself, not to beta_0)
            assert abs(g - ref) <= mpmath.mpf(10) ** -29 * ref, (K, g, ref)
        for K in (3, 40):
            ref = _density_mixture(SERVICE, RATE, K, tail=True)
            assert abs(beta[K] - _density_mixture(SERVICE, RATE, K)) <= mpmath.mpf(10) ** -29 * beta[K]
            assert abs(tail[K] - ref) <= mpmath.mpf(10) ** -28 * ref, (K, tail[K], ref)  # P(K > 40) = 2e-8


def _model(r, load=F(55, 100), **kw):
    return qd.FiniteVacationQueue.from_load(load, qd.Geometric(4), SERVICE, qd.Exponential(F(6, 100)), r, **kw)


@pytest.mark.slow  # about 6 s of CPU: the escalated inversion (2.3 s) and the bracket's two lattices of 8192 levels
def test_the_inversion_lies_inside_the_capped_lattice_bracket():
    """The value the engine now gives (the inversion, escalated to 15 digits by the float64 check) inside the
    certified bracket (F5)/(F6) of the capped service that it replaced (computed here from the same state)."""
    model = _model(30)
    law = response_laws(model)["wait"]
    assert law.smooth and law.tails is None and law.bracket is None  # the inversion, not the brackets
    ts = [F(1, 10), F(1, 2)]
    values = tails(law, ts, None)[0]
    setup, why = service_lattice_setup(model.service, model.vacation)
    assert setup is not None, why
    _, bracket, _, _ = service_lattice_tails(wait_law_data(model), setup, "wait")
    for t, v in zip(ts, values):
        lo, hi, _ = bracket(t)
        assert lo <= v <= hi, (t, lo, v, hi)
        assert hi - lo < 0.05 * v  # the bracket is a real check (a few % wide)


def test_20_digits_agree_with_30_digits():
    law = response_laws(_model(12))
    t = [F(1, 2)]
    for kind in ("wait", "sojourn"):
        a = tails(law[kind], t, 20)[0][0]
        b = tails(law[kind], t, 30)[0][0]
        assert abs(a - b) <= mpmath.mpf(10) ** -20 * b, (kind, a, b)  # 20 digits asked


@pytest.mark.slow  # about 10 s: the 15-digit data at r = 300 (the rows' r^2 products) and the infinite room
def test_a_large_room_equals_the_infinite_room_within_its_loss():
    """r = 300 at load 0.2: the finite room's loss is 3.1e-12 (q_r 5e-14); its tails differ from the infinite room's
    (vacation-infinite: W = W_M/G/1 + residual vacation, the lognormal's own transform) by the customers the room turns
    away and the waits they would have caused, of the order of the loss (measured: 2.1e-12 and 3.8e-12 at t = 0.1,
    0.5). The bound asked: 4 times the loss, absolute."""
    fin = _model(300, load=F(1, 5))
    inf = qd.VacationQueue.from_load(F(1, 5), qd.Geometric(4), SERVICE, qd.Exponential(F(6, 100)))
    ts = ["0.1", "0.5"]
    a = fin.evaluate(digits=15, wait_tail=ts)
    b = inf.evaluate(digits=15, wait_tail=ts)
    loss = a.loss_probability
    assert loss < 1e-11
    for t in ts:
        assert abs(a.response["wait_tail"][t] - b.response["wait_tail"][t]) <= 4 * loss, t


_VACATION = qd.LogNormal(F(1, 2), F(2))


@pytest.mark.slow  # about 3 s each: the simulation (8 x 40 000 customers) and the escalated inversion
@pytest.mark.parametrize("admission, policy, service, vacation", [
    (Admission.PARTIAL, VacationPolicy.MULTIPLE, qd.Erlang(2, F(1, 5)), _VACATION),
    (Admission.WHOLE, VacationPolicy.SINGLE, qd.Erlang(2, F(1, 5)), _VACATION),
    (Admission.WHOLE, VacationPolicy.MULTIPLE, qd.LogNormal(F(1, 5), F(2)), None),  # no vacations: the service
    (Admission.PARTIAL, VacationPolicy.SINGLE, qd.LogNormal(F(1, 5), F(2)), _VACATION),  # both (bracketed before)
])
def test_lognormal_laws_against_the_simulation(admission, policy, service, vacation):
    """A lognormal vacation (mean 1/2, scv 2) with an Erlang-2 or a lognormal service, and a lognormal service without
    vacations: the inversion inside the 99 % interval of a seeded simulation (8 replications of 40 000 customers): a
    wrong tail would leave it with probability about 1 %."""
    from qderive.numeric.simulation.vacation import simulate

    model = qd.FiniteVacationQueue.from_load(F(3, 5), qd.Geometric(2), service, vacation, 8, admission=admission,
                                             vacation_policy=policy)
    laws = response_laws(model)
    assert laws["wait"].smooth and laws["wait"].bracket is None
    ts = ["1/2", "2"]
    got = tails(laws["wait"], [F(t) for t in ts], None)[0]
    soj = tails(laws["sojourn"], [F(2)], None)[0][0]
    sim = simulate(model, 40_000, 8, seed=11, quiet=True, wait_tail=ts, sojourn_tail=["2"])
    for interval, v in [(sim["wait_tail"][t], g) for t, g in zip(ts, got)] + [(sim["sojourn_tail"]["2"], soj)]:
        a, b = interval.interval(0.99)
        assert a <= v <= b, (a, v, b)


@pytest.mark.slow  # about 3 s: the simulation (10 x 100 000 customers)
def test_a_sip_route_with_a_lognormal_service_against_the_simulator():
    """The SIP server's finite room with a lognormal service (inverted since this branch; refused before as
    brackets-only): the timeout probability and the goodput inside the simulator's 95 % intervals widened to 99 %
    (the same Student-t intervals: half-width times t_0.995 / t_0.975 = 3.25 / 2.26 at 9 degrees of freedom)."""
    import json

    from conftest import cli

    args = ["sip-retransmission", "--rate", "9", "--service", "lognormal:mean=0.1,scv=2", "--timeout", "0.5",
            "--control", "ignore", "--thresholds", "4,5", "--json"]
    code, out, err = cli(["eval", *args])
    assert code == 0, err
    got = json.loads(out)["measures"]
    code, out, err = cli(["simulate", *args, "--seed", "5", "--customers", "100000"])
    assert code == 0, err
    sim = json.loads(out)["measures"]
    for name in ("timeout_probability", "goodput"):
        lo, hi = sim[name]["ci95"]
        mid, half = (lo + hi) / 2, (hi - lo) / 2 * 3.25 / 2.26
        assert abs(float(got[name]) - mid) <= half, (name, got[name], lo, hi)
