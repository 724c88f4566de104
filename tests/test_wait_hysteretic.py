"""Waiting and sojourn times of admitted customers of M[X]|G|1|(L,H)|(H,R) (``--policy departure``; instant:
test_wait_hysteretic_instant.py).

Each result is checked against something computed another way:

* exponential service, single arrivals: the CTMC on (count n, mode s) built here from the definition
  (arrival n -> n + 1 at lambda_s while n < R, departure at mu to ``next_state(n, s)``); an admitted
  arrival finding n >= 1 waits Erlang(n, mu) (memoryless residual), so P(W > t) is an exact mixture of
  Erlang tails at 50 digits -- no transform, no embedded chain (tolerance 1e-28 relative at 30 digits);
* the mean wait against Little's law, E W = E(number waiting) / admitted throughput, from the engine's
  time law (17) and throughput (another algorithm: the embedded chain's measures; 1e-12 in float64);
* a seeded simulation of a batch / Erlang case (the simulator's FIFO waits of admitted customers) within
  simultaneous 99.9 % intervals;
* float64 against 30 digits (the policy's float64 tolerance, 1e-9 relative on tails, 1e-12 on moments);
* with f = 1 and R = H + 1 the control never throttles nor discards: the same law as the finite queue M[X]/G/1/(R-1) without
  vacations (``vacation-finite --vacation none``), a different model object and embedded chain.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
import qderive as qd
from qderive.numeric.engines.hysteretic import solution
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.response import moments, quantiles, tails
from qderive.symbolic.models.hysteretic import Convention

from test_simulate_vacation import assert_samples_within


def _mm1_oracle(model, ts, k, dps=50):
    """(P(W > t) for t in ts, E W^1..k) of the exponential/single-arrival model from the (n, s) CTMC."""
    R = model.R
    with mpmath.workdps(dps):
        def num(x):
            x = F(x)
            return mpmath.mpf(x.numerator) / x.denominator

        mu = 1 / num(model.service.moment(1))
        rates = (num(model.rate), num(model.rate1), 0)
        states, todo = [], [(0, 0)]  # the states reachable from the empty normal one
        while todo:
            n, s = todo.pop()
            if (n, s) in states:
                continue
            states.append((n, s))
            todo += ([(n + 1, s)] if n < R and rates[s] else []) + ([model.next_state(n, s)] if n else [])
        idx = {st: i for i, st in enumerate(states)}
        Q = mpmath.zeros(len(states))
        for (n, s), i in idx.items():
            if n < R and rates[s] > 0:
                Q[i, idx[(n + 1, s)]] += rates[s]
            if n >= 1:
                Q[i, idx[model.next_state(n, s)]] += mu
        for i in range(len(states)):
            Q[i, i] = -mpmath.fsum(Q[i, j] for j in range(len(states)) if j != i)
        # pi Q = 0, sum pi = 1 (unreachable states get 0)
        A = Q.T.copy()
        A[0, :] = mpmath.matrix([[1] * len(states)])
        b = mpmath.zeros(len(states), 1)
        b[0] = 1
        pi = mpmath.lu_solve(A, b)
        w = {}
        for (n, s), i in idx.items():
            if n < R and rates[s] > 0:
                w[n] = w.get(n, 0) + pi[i] * rates[s]
        total = mpmath.fsum(w.values())
        # P(Erlang(n, mu) > t) = Q(n, mu t), the regularized upper incomplete gamma function
        tail = [mpmath.fsum(p * mpmath.gammainc(n, a=mu * num(t), regularized=True) for n, p in w.items() if n)
                / total for t in ts]
        mom = [mpmath.fsum(p * mpmath.rf(n, j) / mu**j for n, p in w.items()) / total for j in range(1, k + 1)]
    return tail, mom


MM1 = qd.HystereticModel(service=qd.Exponential(F(1)), L=2, H=4, R=7, rate=F(9, 10), overload_factor=F(1, 3))
# complete blocking in overload (lambda_1 = 0: only the normal mode's part), the left-behind convention
BLOCK = qd.HystereticModel(service=qd.Exponential(F(1, 2)), L=1, H=3, R=5, rate=F(3, 2), overload_factor=F(0),
                           convention=Convention.LEFT)


@pytest.mark.parametrize("model", [MM1, BLOCK], ids=["throttle", "block-left"])
def test_exponential_against_tagged_ctmc(model):
    from qderive.numeric.engines.hysteretic_wait import hysteretic_laws

    laws = hysteretic_laws(model)
    ts = [F(1, 2), F(3), F(12)]
    ref_tail, ref_mom = _mm1_oracle(model, ts, 2)
    got, _, _, _ = tails(laws["wait"], ts, 30)
    for g, r in zip(got, ref_tail):
        assert abs(g - r) <= mpmath.mpf(10) ** -28 * r
    mom, _ = moments(laws["wait"], 2, 30)
    for g, r in zip(mom, ref_mom):
        assert abs(g - r) <= mpmath.mpf(10) ** -28 * r
    # float64 against the same oracle (the policy's float64 tolerance)
    f64, _, _, _ = tails(laws["wait"], ts, None)
    for g, r in zip(f64, ref_tail):
        assert abs(g - float(r)) <= 1e-9 * float(r)
    # P(W = 0) = 1 - P(W > 0)
    p0 = laws["wait"].p_zero(mp_context(30))
    busy = _mm1_oracle(model, [F(0)], 0)[0][0]
    with mpmath.workdps(50):
        assert abs(p0 - (1 - busy)) <= mpmath.mpf(10) ** -28


GEO = qd.HystereticModel(service=qd.Erlang(2, F(1)), batch=qd.Geometric(F(2)), L=3, H=6, R=10, rate=F(2, 5))


def test_little_and_float64_against_digits():
    from qderive.numeric.engines.hysteretic_wait import hysteretic_laws

    laws = hysteretic_laws(GEO)
    with FLOAT64:
        sol = solution(GEO, FLOAT64)
        p = sol.laws()["number_law"]
        meas = sol.measures()
    queue = sum(max(j - 1, 0) * float(x) for j, x in enumerate(p))
    mean, _ = moments(laws["wait"], 2, None)
    assert abs(mean[0] - queue / float(meas["throughput"])) <= 1e-12 * mean[0]
    ts = [F(1, 2), F(5), F(20)]
    lo, _, _, _ = tails(laws["wait"], ts, None)
    hi, _, _, _ = tails(laws["wait"], ts, 30)
    hi2, _, _, _ = tails(laws["wait"], ts, 40)
    for a, b, c in zip(lo, hi, hi2):
        assert abs(b - c) <= mpmath.mpf(10) ** -29 * c
        assert abs(a - float(b)) <= 1e-9 * float(b)
    m30, _ = moments(laws["wait"], 2, 30)
    for a, b in zip(mean, m30):
        assert abs(a - float(b)) <= 1e-12 * float(b)
    s30, _ = moments(laws["sojourn"], 1, 30)
    assert abs(s30[0] - m30[0] - 1) <= mpmath.mpf(10) ** -28  # E T = E W + b_1 (b_1 = 1)


def test_no_throttle_is_the_finite_queue():
    from qderive.numeric.engines.hysteretic_wait import hysteretic_laws
    from qderive.numeric.engines.vacation_finite_wait import response_laws

    # R = H + 1: reaching R returns to overload at once (no discard state), and f = 1 does not throttle
    h = qd.HystereticModel(service=qd.Erlang(2, F(1)), batch=qd.Geometric(F(2)), L=2, H=5, R=6, rate=F(2, 5),
                           overload_factor=F(1))
    f = qd.FiniteVacationQueue(F(2, 5), qd.Geometric(F(2)), qd.Erlang(2, F(1)), None, 5)
    ts = [F(1, 2), F(4)]
    a, _, _, _ = tails(hysteretic_laws(h)["wait"], ts, 30)
    b, _, _, _ = tails(response_laws(f)["wait"], ts, 30)
    for x, y in zip(a, b):
        assert abs(x - y) <= mpmath.mpf(10) ** -28 * y


def test_simulation_interval():
    from qderive.numeric.engines.hysteretic_wait import hysteretic_laws
    from qderive.numeric.simulation.hysteretic import simulate

    laws = hysteretic_laws(GEO)
    ts = (F(1, 2), F(5))
    wt, _, _, _ = tails(laws["wait"], ts, None)
    wq, _, _ = quantiles(laws["wait"], (F(1, 2), F(9, 10)), None, 2.5)
    wm, _ = moments(laws["wait"], 2, None)
    st, _, _, _ = tails(laws["sojourn"], (F(2),), None)
    res = simulate(GEO, 40_000, 20, seed=2026, quiet=True, wait_tail=("0.5", "5"), wait_quantile=("0.5", "0.9"),
                   wait_moments=2, sojourn_tail=("2",))
    assert_samples_within(res, {"wait_tail": {"0.5": wt[0], "5": wt[1]},
                                "wait_quantile": {"0.5": wq[0], "0.9": wq[1]},
                                "wait_moments": wm, "sojourn_tail": {"2": st[0]}})
