"""sip-retransmission, --control ignore/503 with a general service law and any L < H (numeric/engines/sip/control.py, the route GeneralControl).

The route under test: the departure-epoch chain of the contract's hysteresis (GTH), the refusal probability from
the refusals per departure interval, the admitted copy's sojourn by the finite room's wait machinery over the
normal-mode service starts (Euler inversion; the lattice sums for a constant service). The references share no
step with it:

* exponential service: the contract's CTMC of the engine (``control_chain``, ``tagged_chain``: a time-continuous
  chain on (n, mode), uniformization tails) -- another chain, another time scale, another tail algorithm;
* Erlang-2 service: a CTMC on (n, mode, phase) written here from the rule, solved by mpmath's LU, the admitted
  copy's sojourn an Erlang law with the phases ahead (mpmath's incomplete gamma function);
* L = H - 1: the M/G/1/H server (``vacation-finite``, its own embedded law from the finite engine);
* the transaction simulator (per-transaction timers) where the fixed point is exact (Timer B = T1).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest

from qderive.derivations.cli import main
from qderive.numeric.backend import mp_context
from qderive.numeric.engines.sip import routes as R
from qderive.numeric.engines.sip.control import ControlServer
from qderive.symbolic.laws import Erlang, Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

TIMES = (F(1, 20), F(1, 5), F(1, 2), F(3, 2))


def _general(model, lam):
    """The server at copy rate ``lam`` by the general control route (constructed directly: also for exponential
    service and for L = H - 1, where the selection takes the exponential chain or the M/G/1/H route)."""
    assert R.GeneralControl.supports(model.server) is None
    s = R.GeneralControl(model.server, lam)
    assert s.general is not None
    return s


def _rel(a, b):
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("L, H, lam", [(1, 4, F(8)), (2, 6, F(13))])
def test_exponential_service_against_the_contract_chain(L, H, lam):
    """Exponential service, L <= H - 2: p, the utilization (1e-25 relative at 30 digits; measured 1e-40) and the
    admitted copy's sojourn tails (1e-25 relative at 30 digits, Euler at 35: measured 5e-37; float64 1e-9 absolute,
    the inversion's note) against the engine's CTMC route; 1 + R = lambda E[B] + pi(0) (two ways to the mean
    departure interval)."""
    m = Sip(rate=lam, service=Exponential(F(1, 10)), control="ignore", thresholds=(L, H), timeout=F(1))
    chain = R.server(m, lam)
    assert isinstance(chain, R.ExponentialChain)
    general = _general(m, lam)
    with mpmath.workdps(60):
        for a, b in zip(chain.refused(30), general.refused(30)):
            assert _rel(b, a) < 1e-25
        for a, b in zip(chain.tails(TIMES, 30)[0], general.tails(TIMES, 30)[0]):
            assert _rel(b, a) < 1e-25
        ctx = mpmath.mp
        p, q, _ = general.general.refused(mp_context(40))
        pi0 = general.general.pi(mp_context(40))[0]
        assert abs(1 / q - (lam / 10 + pi0)) < mpmath.mpf(10) ** -35 and ctx.almosteq(p + q, 1, 1e-38)
    for a, b in zip(chain.refused(None), general.refused(None)):
        assert abs(a - b) < 1e-14
    values, notes = general.tails(TIMES, None)
    assert max(abs(a - b) for a, b in zip(chain.tails(TIMES, None)[0], values)) < 1e-9 and notes


def _erlang2_chain(lam, nu, L, H):
    """The contract's rule with Erlang-2 service (phase rate nu each), written here: states ('n', 0, 0) (empty),
    ('n'|'o', n, j) with j the phase of the copy in service. The balance equations sum_a x_a r(a, b) = x_b out(b)
    with x(empty) = 1 on the right-hand side, by LU at the current precision; returns pi (normalised) as a dict."""
    empty = ("n", 0, 0)
    states = [empty] + [(s, n, j) for s, lo in (("n", 1), ("o", L + 1)) for n in range(lo, H + 1) for j in (1, 2)]
    rates = {}

    def move(a, b, r):
        rates[a, b] = rates.get((a, b), 0) + r

    move(empty, ("n", 1, 1), lam)
    for (s, n, j) in states[1:]:
        if s == "n":  # an arrival finding H switches to overload (refused); below H it is admitted
            move((s, n, j), ("n", n + 1, j) if n < H else ("o", H, j), lam)
        if j == 1:
            move((s, n, j), (s, n, 2), nu)
        else:  # a departure; leaving L returns to normal
            move((s, n, j), empty if n == 1 else ("n" if s == "n" or n - 1 == L else "o", n - 1, 1), nu)
    pos = {x: i - 1 for i, x in enumerate(states)}  # unknowns: every state but the empty one
    M, rhs = mpmath.zeros(len(states) - 1), mpmath.zeros(len(states) - 1, 1)
    for (a, b), r in rates.items():
        M[pos[a], pos[a]] -= r if a != empty else 0
        if b != empty:
            if a == empty:
                rhs[pos[b]] -= r
            else:
                M[pos[b], pos[a]] += r
    x = mpmath.lu_solve(M, rhs)
    total = 1 + mpmath.fsum(x)
    return {st: (1 if st == empty else x[pos[st]]) / total for st in states}


@pytest.mark.parametrize("L, H, lam", [(1, 4, F(12)), (0, 3, F(7))])
def test_erlang2_service_against_a_phase_chain(L, H, lam):
    """Erlang-2 service (mean 0.1 s), L <= H - 2: the refusal probability (PASTA: the time in (H, normal) and in
    overload), the utilization and P(R_copy > t) = sum over the state an admitted copy finds of P(Erlang(k, nu) > t)
    with k = 2 (empty) or 2 n + 3 - j phases (the rest of the service in phase j, n - 1 services, its own), from the
    chain above at 50 digits; the engine at 30 digits within 1e-25 relative (measured 1e-36), float64 within 1e-13
    (p, utilization) and 1e-9 (tails: the inversion's absolute error)."""
    m = Sip(rate=lam, service=Erlang(2, F(1, 10)), control="503", thresholds=(L, H), timeout=F(1))
    s = R.server(m, lam)
    assert s.general is not None
    with mpmath.workdps(50):
        nu = mpmath.mpf(20)
        pi = _erlang2_chain(mpmath.mpf(lam.numerator), nu, L, H)
        adm = {x: w for x, w in pi.items() if x[0] == "n" and x[1] < H}
        q = mpmath.fsum(adm.values())
        busy = 1 - pi[("n", 0, 0)]

        def tail(t):
            return mpmath.fsum(w / q * mpmath.gammainc(2 if n == 0 else 2 * n + 3 - j, nu * t, mpmath.inf,
                                                       regularized=True) for (_, n, j), w in adm.items())

        ref = [1 - q, q, busy]
        ref_tails = [tail(mpmath.mpf(t.numerator) / t.denominator) for t in TIMES]
        assert 0.05 < ref[0] < 0.5
        for a, b in zip(s.refused(30), ref):
            assert _rel(a, b) < 1e-25
        for a, b in zip(s.tails(TIMES, 30)[0], ref_tails):
            assert _rel(a, b) < 1e-25
        for a, b in zip(s.refused(None), ref):
            assert abs(a - b) < 1e-13
        for a, b in zip(s.tails(TIMES, None)[0], ref_tails):
            assert abs(a - b) < 1e-9


def test_L_equal_H_minus_1_reduces_to_the_MG1H_route():
    """L = H - 1, Erlang-2: the general route (departure chain with no overload state left, the injected start law)
    against the M/G/1/H route (vacation-finite's own embedded law and loss probability) at 30 digits: 1e-25."""
    lam = F(11)
    m = Sip(rate=lam, service=Erlang(2, F(1, 10)), control="ignore", thresholds=(3, 4), timeout=F(1))
    finite = R.server(m, lam)
    assert isinstance(finite, R.FiniteControl) and finite.general is None and finite.base is not None
    general = _general(m, lam)
    with mpmath.workdps(50):
        for a, b in zip(finite.refused(30), general.refused(30)):
            assert _rel(b, a) < 1e-25
        for a, b in zip(finite.tails(TIMES[:3], 30)[0], general.tails(TIMES[:3], 30)[0]):
            assert _rel(b, a) < 1e-25


def test_cli_fixed_point_and_constant_service(capsys):
    """The contract's command works end to end (JSON keys, one stable solution, goodput <= lambda_0, a refusal
    probability p with E[copies] >= 1 + p); a constant service with L <= H - 2 has exact lattice tails (no
    inversion note) and at Timer B = T1 its response tail at T >= H D is the 503 rejection alone (the sojourn of an
    admitted copy is at most H D)."""
    code = main(["eval", "sip-retransmission", "--rate", "9", "--service", "erlang:k=2,mean=0.1", "--control",
                 "ignore", "--thresholds", "2,5", "--scan-points", "24", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    meas = doc["measures"]
    sol = meas["solutions"][0]
    assert sol["stable"] and 0 < meas["goodput"] <= 9 and sol["residual"] < 1e-12
    assert meas["mean_copies"] >= 1 + sol["copy_refusal_probability"] - 1e-12
    code = main(["eval", "sip-retransmission", "--rate", "12", "--service", "det:mean=0.1", "--control", "503",
                 "--thresholds", "1,4", "--timeout", "0.5", "--response-tail", "0.2,0.4", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and not any("Euler" in n for n in doc["notes"])
    meas = doc["measures"]
    assert meas["response_tail"]["0.4"] == pytest.approx(meas["reject_probability"], abs=1e-14)
    assert meas["reject_probability"] < meas["response_tail"]["0.2"] < 1


_Z99 = 2.5758 / 1.9600  # the simulator's half-widths are 95 % ones (normal quantiles)


@pytest.mark.parametrize("control, rate", [("ignore", 9), ("503", 20)])
def test_goodput_against_the_transaction_simulator(control, rate):
    """Erlang-2 service (mean 0.1 s), thresholds (2, 5), Timer B = T1: one copy per transaction, where the fixed point
    is exact; the analytic goodput inside the simulator's 99 % interval (4 x 400 s, seeded)."""
    from qderive.numeric.simulation.sip import simulate_sip

    m = Sip(rate=rate, service=Erlang(2, F(1, 10)), control=control, thresholds=(2, 5), timeout=F(1, 2))
    r = m.evaluate()
    est, half = simulate_sip(m, horizon=400.0, warmup=20.0, replications=4, seed=4242)["goodput"]
    assert abs(float(r.goodput) - est) <= _Z99 * half, (float(r.goodput), est, half)


def test_duplicate_cost_mixture_against_the_two_phase_chain():
    """c = 1/4, L <= H - 2: the general route with the mixture service "B w.p. 1 - delta, c B w.p. delta" (and the
    first copy's own service B) against the engine's CTMC with two service phases, at a given (lambda, delta):
    p, the utilization and the sojourn tails within 1e-25 relative at 30 digits (measured 4e-37), float64 1e-9."""
    m = Sip(rate=8, service=Exponential(F(1, 10)), control="ignore", thresholds=(2, 5), timeout=F(8),
            duplicate_cost=F(1, 4))
    lam, delta = F(14), F(3, 7)
    chain = R.server(m, lam, delta)
    assert isinstance(chain, R.ExponentialChain)
    assert R.MixtureControl.supports(m.server, mixture=True) is None
    general = R.MixtureControl(m.server, lam, delta)
    assert general.general is not None and general.general.own is m.service
    with mpmath.workdps(60):
        for a, b in zip(chain.refused(30), general.refused(30)):
            assert _rel(b, a) < 1e-25
        for a, b in zip(chain.tails(TIMES, 30)[0], general.tails(TIMES, 30)[0]):
            assert _rel(b, a) < 1e-25
    assert max(abs(a - b) for a, b in zip(chain.tails(TIMES, None)[0], general.tails(TIMES, None)[0])) < 1e-9


def test_mixture_law_moments_counts_and_sampler():
    """The mixture of scaled copies (symbolic/laws/mixture.py): its moment hook against the derivatives of its
    transform (SymPy, exact), its count kernel (float64) against the generic (-lambda)^k / k! beta^(k)(lambda) of
    its transform, its phase-type form's mean, and the sampler's mean (4 sigma)."""
    import numpy as np
    import sympy as sp

    from qderive.numeric.backend import FLOAT64
    from qderive.numeric.sequences import count_sequences
    from qderive.symbolic.laws import Mixture

    law = Mixture.of(Erlang(2, F(1, 10)), F(1, 4), F(1, 3))
    s = sp.Symbol("s")
    for n in (1, 2, 3):
        assert sp.nsimplify((-1) ** n * sp.diff(law.lst(s), s, n).subs(s, 0)) == sp.Rational(law.moment(n))
    assert law.moment(1) == F(2, 3) * F(1, 10) + F(1, 3) * F(1, 40)
    beta, tail, _ = count_sequences(law.count_law(F(7)), 6, FLOAT64)
    exact = [float(law.poisson_mixing_from_lst(k, F(7))) for k in range(7)]
    assert np.allclose(beta, exact, rtol=1e-13, atol=0)
    assert abs(tail[0] - (1 - exact[0])) < 1e-14
    alpha, T = law.phase_type()
    mean = sp.Matrix([alpha]) * (-sp.Matrix(T)).inv() * sp.ones(len(alpha), 1)
    assert sp.Rational(mean[0]) == sp.Rational(law.moment(1))
    x = law.sample(np.random.default_rng(7), 40000)
    sd = float(law.variance()) ** 0.5 / 200
    assert abs(x.mean() - float(law.moment(1))) < 4 * sd


def test_heavy_overload_keeps_float64_finite():
    """lambda E[B] = 100, H = 160 (H = 260 for the CTMC): pi(n) spans more than 1e308 from the empty state; the chains are
    scaled by a full state there. float64 p, q and the utilization against 20 digits (1e-13 relative), all finite
    (before: an OverflowError in GTH's normalisation)."""
    from qderive.numeric.backend import FLOAT64

    s = ControlServer(F(100000), Erlang(2, F(1, 1000)), 100, 160)
    got, ref = s.refused(FLOAT64), s.refused(mp_context(20))
    assert 0.98 < got[0] < 1
    for a, b in zip(got, ref):
        assert abs(a - b) <= 1e-13 * abs(b)
    # the exponential service's own chain (the contract's CTMC) likewise (GTH retried in reverse order), against
    # the departure-epoch chain of the same exponential server at 20 digits
    m = Sip(rate=900, service=Exponential(F(1, 1000)), control="ignore", thresholds=(200, 260))
    chain = R.server(m, F(100000))
    assert chain.general is None
    ref = ControlServer(F(100000), Exponential(F(1, 1000)), 200, 260).refused(mp_context(20))
    for a, b in zip(chain.refused(None), ref):
        assert abs(a - b) <= 1e-13 * abs(b)
