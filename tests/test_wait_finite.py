"""Waiting and sojourn times of an admitted customer of M[X]/G/1/r with vacations (issue 13, item 2), each
against something computed another way:

* the tagged-customer CTMC of :mod:`qderive.numeric.oracles.wait` at 40 digits (built from the model
  definition: phase-type laws, the customer's absorption time by uniformization and M-matrix solves),
  for exponential, Erlang and hyperexponential laws, geometric and pmf batches, r in {1, 3, 20}, both
  admission rules and the three vacation policies: tails, P(W = 0), moments, sojourn tails and moments;
* the mean against the finite engine's ``mean_wait`` (Little's law on the queue-length law (9), (10):
  a different computation);
* the level-residual transforms at s = 0 against the engine's time-stationary law p^r_j (9);
* r = 400 at low load against the infinite-room transform of ``VacationQueue``;
* the M/M/1/K closed form (an admitted customer finding n in the system waits Erlang(n, mu));
* float64 against 30 digits, and the two ways of computing the transforms against each other.

Tolerances: asked for D digits, the policy promises D; the tests ask 10^-(D-2) relative against references
with D + 10 or more correct digits (one or two digits of slack for the rounding of the result to D digits).
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.vacation_finite_wait import (
    Strategy,
    response_laws,
    wait_law_data,
)
from qderive.numeric.kernels import finite_wait as K
from qderive.numeric.kernels.inversion import euler_parameters
from qderive.numeric.oracles.wait import tagged_wait
from qderive.numeric.response import moments, tails
from qderive.symbolic.errors import ParameterError
from qderive.derivations.capabilities import load as _load

P, A = qd.VacationPolicy, qd.Admission


def _rel(a, b):
    with mpmath.workdps(80):
        a, b = mpmath.mpmathify(a), mpmath.mpmathify(b)
        return abs(a - b) / abs(b) if b != 0 else abs(a)


def _mpf(x: F):
    return mpmath.mpf(x.numerator) / x.denominator


PMF = qd.FinitePMF((F(1, 2), F(1, 4), F(1, 4)))
HYPER = qd.HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), F(3, 2)))

#: (model, tail points): every law phase-type, so the CTMC oracle applies
ORACLE_CASES = [
    (qd.FiniteVacationQueue(F(3, 4), qd.Geometric(F(2)), qd.Exponential(F(1, 2)), qd.Exponential(F(2)), 1),
     ("1/10", "2", "9")),
    (qd.FiniteVacationQueue(F(3, 4), PMF, qd.Erlang(3, F(1)), qd.Erlang(2, F(1)), 3, A.WHOLE, P.SINGLE),
     ("1/10", "2", "9")),
    (qd.FiniteVacationQueue(F(3, 4), PMF, HYPER, None, 3), ("1/10", "2", "9")),
    (qd.FiniteVacationQueue(F(3, 4), qd.Geometric(F(2)), qd.Erlang(3, F(1)), HYPER, 3, A.PARTIAL, P.MULTIPLE),
     ("1/10", "2", "9")),
    (qd.FiniteVacationQueue(F(3, 4), qd.Geometric(F(2)), HYPER, qd.Exponential(F(2)), 20), ("1/10", "2", "9")),
    # the case above at r = 20 (about 25 s on a busy machine): in the full suite; the loop keeps it at r = 3
    pytest.param(qd.FiniteVacationQueue(F(3, 4), PMF, qd.Erlang(3, F(1)), qd.Erlang(2, F(1)), 20, A.WHOLE, P.SINGLE),
                 ("1/10", "2", "9"), marks=pytest.mark.slow),
    (qd.FiniteVacationQueue(F(3, 4), qd.Geometric(F(2)), qd.Erlang(3, F(1)), None, 1, A.WHOLE), ("1/10", "2")),
    # a long vacation and many batches per unit time: at t = 15 and 30 the Euler nodes A/(2t) + i k pi/t come
    # within lambda of lambda, where the customer recursion would be unstable and the batch way is used
    (qd.FiniteVacationQueue(F(2), qd.Geometric(F(2)), qd.Erlang(2, F(1, 10)), qd.Exponential(F(5)), 20,
                            A.PARTIAL, P.SINGLE), ("1", "15", "30")),
]


@pytest.mark.parametrize("model, ts", ORACLE_CASES, ids=lambda v: str(v)[16:90] if not isinstance(v, tuple) else "")
def test_against_the_tagged_customer_chain_at_30_digits(model, ts):
    times = [F(t) for t in ts]
    oracle = tagged_wait(model, mp_context(40), times, moments=3, sojourn=True)
    r = model.evaluate(30, wait_tail=["0", *ts], sojourn_tail=list(ts), wait_moments=3, sojourn_moments=2)
    tol = mpmath.mpf(10) ** -28
    for t, want in zip(ts, oracle.tail):
        assert _rel(r.response["wait_tail"][t], want) < tol, t
    for t, want in zip(ts, oracle.sojourn.tail):
        assert _rel(r.response["sojourn_tail"][t], want) < tol, t
    for got, want in zip(r.response["wait_moments"], oracle.moments):
        assert _rel(got, want) < tol
    for got, want in zip(r.response["sojourn_moments"], oracle.sojourn.moments):
        assert _rel(got, want) < tol
    p0 = response_laws(model)["wait"].p_zero(mp_context(30))
    if oracle.p_zero == 0:  # multiple vacations: every admitted customer waits a residual vacation or service
        assert p0 == 0 and r.response["wait_tail"]["0"] == 1
    else:
        assert _rel(p0, oracle.p_zero) < tol
        with mpmath.workdps(60):
            assert _rel(r.response["wait_tail"]["0"], 1 - oracle.p_zero) < tol
    # Little's law on the finite engine's queue-length law: a different computation of the mean
    assert _rel(r.response["wait_moments"][0], r.mean_wait) < tol


def test_unstable_nodes_occur_in_the_long_vacation_case():
    """The last oracle case does exercise the batch way at 30 digits (a check of the test itself)."""
    model = ORACLE_CASES[-1][0]
    A_, n, m = euler_parameters(33)
    nodes = (np.arange(n + m + 1) * 2j * np.pi + A_) / (2 * 15.0)
    stable = K.wait_customer_stable(float(model.rate), 1, nodes, float(model.batch.q))
    assert 0 < np.count_nonzero(~stable) < len(nodes)


def test_level_times_at_zero_are_the_time_stationary_law_of_9():
    # multiple vacations (no idle server): p^r_j is proportional to Phi_j(0) for j < r
    model = qd.FiniteVacationQueue.from_load(F(3, 5), qd.Geometric(F(5, 2)), qd.Erlang(2, F(1, 10)),
                                             qd.Exponential(F(1, 4)), 12)
    rec = model.evaluate(30, include=("p",))
    from qderive.numeric.engines.vacation_finite_wait import _level_series

    data = wait_law_data(model).data(mp_context(30))
    with data.ctx:
        phi0 = _level_series(data, 0)[:, 0]
        total, ptot = mpmath.fsum(phi0), mpmath.fsum(rec.p[:-1])
        for j in range(model.capacity):
            assert _rel(phi0[j] / total, rec.p[j] / ptot) < mpmath.mpf(10) ** -28


def test_residual_moments_sum_to_the_stationary_excess_moments():
    # sum_K M[p, K] = E int_0^B (B - x)^p / p! dx = E B^{p+1} / (p+1)!  (Erlang-3 of mean 1/2, lambda = 3)
    law, lam = qd.Erlang(3, F(1, 2)), F(3)
    from qderive.numeric.engines.vacation_finite_wait import count_data

    ctx = mp_context(40)
    with ctx:
        _, tail, tail2 = count_data(law, lam, ctx, 6)
        M = K.wait_residual_moments(ctx, tail, tail2, ctx.num(lam), 6)
        for p in range(7):
            want = law.moment(p + 1) / math.factorial(p + 1)
            assert _rel(mpmath.fsum(M[p]), _mpf(want)) < mpmath.mpf(10) ** -37


def test_mm1k_closed_form():
    # M/M/1/K, K = r + 1 places in the system: an admitted customer finds n in the system with probability
    # rho^n / sum_{m<K} rho^m and waits Erlang(n, mu) (memoryless residual): P(W > t) = sum_n w_n P(Pois(mu t) < n)
    lam, mu, r = F(3, 4), F(1), 6
    model = qd.FiniteVacationQueue(lam, qd.Constant(1), qd.Exponential(1 / mu), None, r)
    ts = ["1/2", "3", "12"]
    rec = model.evaluate(30, wait_tail=["0", *ts], sojourn_tail=ts, wait_moments=2)
    with mpmath.workdps(60):
        rho, m = _mpf(lam / mu), _mpf(mu)
        w = [rho**n for n in range(r + 1)]
        z = mpmath.fsum(w)
        w = [x / z for x in w]

        def erlang_tail(n, t):
            return mpmath.fsum(mpmath.exp(-m * t) * (m * t) ** i / mpmath.factorial(i) for i in range(n))

        tol = mpmath.mpf(10) ** -28
        assert _rel(rec.response["wait_tail"]["0"], 1 - w[0]) < tol
        for t in ts:
            x = _mpf(F(t))
            want = mpmath.fsum(w[n] * erlang_tail(n, x) for n in range(1, r + 1))
            assert _rel(rec.response["wait_tail"][t], want) < tol
            assert _rel(rec.response["sojourn_tail"][t], mpmath.fsum(w[n] * erlang_tail(n + 1, x)
                                                                     for n in range(r + 1))) < tol
        m1 = mpmath.fsum(w[n] * n for n in range(r + 1)) / m
        m2 = mpmath.fsum(w[n] * n * (n + 1) for n in range(r + 1)) / m**2
        assert _rel(rec.response["wait_moments"][0], m1) < tol
        assert _rel(rec.response["wait_moments"][1], m2) < tol


# the development loop keeps the no-vacation case (about 10 s on a busy machine); the vacation policies (the same
# comparison, 30 to 50 s each: SymPy derives the infinite room's third moments on a cold cache) run in the full suite
@pytest.mark.parametrize("policy", [pytest.param(P.MULTIPLE, marks=pytest.mark.slow),
                                    pytest.param(P.SINGLE, marks=pytest.mark.slow), None])
def test_a_large_room_at_low_load_is_the_infinite_room(policy):
    # rho_bar = 0.3: p_r is 1.8e-25 at 120 waiting places (3e-41 at 200; at 30 digits: far below float64 rounding), so
    # the finite room's transform, atom and moments are the infinite room's to float64 rounding (two unrelated
    # computations: Fuhrmann-Cooper closed forms compiled from SymPy there, the level sums here). 120 places, not
    # 200: the same errors (4e-16 on the transform, 2e-16 on the moments), 0.5 s instead of 2.6 s
    laws = (qd.Geometric(F(2)), qd.Erlang(2, F(1, 10)), None if policy is None else qd.Exponential(F(1, 2)))
    rate = F(3, 10) / (2 * F(1, 10))
    infinite = qd.VacationQueue(rate, *laws, policy or P.MULTIPLE)
    finite = qd.FiniteVacationQueue(rate, *laws, 120, A.PARTIAL, policy or P.MULTIPLE)
    fin, inf = response_laws(finite), _load(infinite, "response")(infinite)
    s = np.array([0.3 + 0.1j, 2 + 5j, 20 - 3j, 1e3 + 1e2j, 0.01 + 0.01j, 1e-4 + 1e-4j])
    ctx = mp_context(30)
    for kind in ("wait", "sojourn"):
        # the reference at 30 digits: the closed form's float64 values lose digits as s -> 0 (its factors are
        # 0/0 there: 3e-14 at |s| = 0.014, 1e-11 at 1e-4), the level sums do not
        with ctx:
            ref = inf[kind].transform(ctx)(np.array([mpmath.mpc(x) for x in s], dtype=object))
        a = fin[kind].transform(FLOAT64)(s)
        assert max(abs(x - complex(y)) for x, y in zip(a, ref)) < 2e-15
        got, want = moments(fin[kind], 3, None)[0], moments(inf[kind], 3, None)[0]
        assert max(abs(x - y) / y for x, y in zip(got, want)) < 1e-13
    assert abs(fin["wait"].p_zero(FLOAT64) - float(inf["wait"].p_zero(FLOAT64))) < 1e-15
    r64 = finite.evaluate(wait_tail=["1/2", "2"])
    rinf = infinite.evaluate(wait_tail=["1/2", "2"])
    for t in ("1/2", "2"):
        assert _rel(r64.response["wait_tail"][t], rinf.response["wait_tail"][t]) < 1e-9


@pytest.mark.slow  # 2.3 s; the loop keeps float64 against 30 digits in test_the_two_ways_and_the_two_arithmetics_agree
def test_float64_against_30_digits_at_r_200():
    # the README's finite example at r = 200 (rho_bar = 1.5): transform values at Euler nodes of float64 and of
    # 30 digits, on both sides of |lambda - s| = lambda, and tails and moments. Every third of the 45 nodes of each
    # t (0.5, 2, 3): the same span of imaginary parts, 10 nodes inside the circle and 35 outside (each node at 30
    # digits is a level sum over 200 places, 8 ms)
    model = qd.FiniteVacationQueue.example().with_capacity(200)
    laws = response_laws(model)
    nodes = np.concatenate([(np.arange(0, 45, 3) * 2j * np.pi + 25) / (2 * t) for t in (0.5, 2.0, 3.0)])
    lam = float(model.rate)
    assert sum(abs(lam - nodes) < lam) >= 5 and sum(abs(lam - nodes) > lam) >= 5
    ctx = mp_context(30)
    f64 = laws["wait"].transform(FLOAT64)(nodes)
    with ctx:
        fmp = laws["wait"].transform(ctx)(np.array([mpmath.mpc(z) for z in nodes], dtype=object))
        err = max(float(abs(a - b)) for a, b in zip(f64, fmp))
    assert err < 1e-14  # absolute: the Euler algorithm's error is absolute at the scale of the terms
    # one tail: the inversion runs the same Euler sum at every t (the transform is compared at t = 1/2 above; the
    # tail at t = 1/2 at 30 digits costs 1.1 s, at t = 2 0.5 s)
    a, b = tails(laws["wait"], [F(2)], None)[0][0], tails(laws["wait"], [F(2)], 30)[0][0]
    assert _rel(a, b) < 1e-9
    a, b = moments(laws["wait"], 3, None)[0], moments(laws["wait"], 3, 30)[0]
    assert max(_rel(x, y) for x, y in zip(a, b)) < 1e-13


def test_the_two_ways_and_the_two_arithmetics_agree():
    # at 30 digits, Phi(s) by batches everywhere, by customers where stable (auto), in gmpy2 and in mpmath
    # numbers; the nodes straddle both stability boundaries (|lambda - s| = lambda, |zeta| = 1)
    model = ORACLE_CASES[-1][0]
    w = wait_law_data(model)
    lam = float(model.rate)
    # geometric batches of mean 2 (q = 1/2): the customer recursion is unstable where |lambda - q s| > |lambda - s|
    # (on the real axis 0 < s < 4 lambda / 3)
    pts = [complex(x * lam, y * lam) for x, y in [(3, 0), (1.5, 0), (1.2, 0), (0.5, 0.3), (0.1, 0.05), (1, 0.6)]]
    stable = K.wait_customer_stable(lam, 1, np.array(pts), float(model.batch.q))
    assert [bool(v) for v in stable] == [True, True, False, False, False, True]
    ctx = mp_context(30)
    with ctx:
        z = np.array([mpmath.mpc(p.real, p.imag) for p in pts], dtype=object)
        ref = w.transform_values(ctx, z, strategy=Strategy.BATCHES, fast=False)
        for strategy, fast in ((Strategy.AUTO, True), (Strategy.AUTO, False), (Strategy.BATCHES, True)):
            got = w.transform_values(ctx, z, strategy=strategy, fast=fast)
            assert max(_rel(a, b) for a, b in zip(got, ref)) < mpmath.mpf(10) ** -28
    f64 = w.transform_values(FLOAT64, np.array(pts), strategy=Strategy.CUSTOMERS)
    assert max(abs(complex(a) - complex(b)) / abs(complex(b)) for a, b in zip(f64, ref)) < 1e-13


def test_kinked_laws_refuse_tails_but_give_moments():
    # a gamma service of non-integer shape (smooth, not phase-type) with a constant vacation: no exact sum (a constant
    # service has exact sums, tests/test_wait_finite_lattice.py; a uniform one with exponential vacations certified
    # brackets, tests/test_wait_lattice_finite_service.py, and with a gamma vacation too,
    # tests/test_wait_finite_vacation_laws.py)
    # (a constant vacation computes since branch sh26, the sums (SF) of blocks_finite_shifts; a uniform one does not)
    kinked = qd.FiniteVacationQueue.from_load(F(3, 5), qd.Geometric(5), qd.Gamma(F(5, 2), F(3, 200)),
                                              qd.Uniform(F(1, 40), F(1, 8)), 30)
    with pytest.raises(ParameterError, match="--wait-tail.*service time gamma.*not phase-type.*no exact sum"):
        kinked.evaluate(wait_tail=[1])
    model = qd.FiniteVacationQueue.from_load(F(3, 5), qd.Geometric(5), qd.Deterministic(F(3, 200)),
                                             qd.Exponential(F(3, 40)), 30)
    r64 = model.evaluate(wait_moments=2)
    assert r64.response["wait_moments"][0] == pytest.approx(r64.mean_wait, rel=1e-13)
    r25 = model.evaluate(25, wait_moments=2)
    assert _rel(r25.response["wait_moments"][0], r25.mean_wait) < mpmath.mpf(10) ** -23
    assert _rel(r64.response["wait_moments"][1], r25.response["wait_moments"][1]) < 1e-13


def test_an_irrational_transform_gamma_of_shape_5_over_2():
    # the difference quotient (beta(s) - beta(lambda)) / (lambda - s) is not cancelled symbolically here
    model = qd.FiniteVacationQueue.from_load(F(3, 5), qd.Geometric(5), qd.Gamma(F(5, 2), F(3, 200)),
                                             qd.Exponential(F(3, 40)), 30)
    r64 = model.evaluate(wait_tail=["1/10", "3/10"], wait_moments=1)
    r25 = model.evaluate(25, wait_tail=["1/10", "3/10"], wait_moments=1)
    for t in ("1/10", "3/10"):
        assert _rel(r64.response["wait_tail"][t], r25.response["wait_tail"][t]) < 1e-9
    assert _rel(r25.response["wait_moments"][0], r25.mean_wait) < mpmath.mpf(10) ** -23


def test_no_waiting_room_means_no_wait():
    # r = 0 without vacations: only the first customer of a batch reaching an idle server is admitted
    model = qd.FiniteVacationQueue(F(1, 2), qd.Geometric(F(3)), qd.Exponential(F(1)), None, 0)
    r = model.evaluate(20, wait_tail=["0"], sojourn_tail=["1"], wait_moments=2, sojourn_moments=2)
    assert r.response["wait_tail"]["0"] == 0 and list(r.response["wait_moments"]) == [0, 0]
    with mpmath.workdps(40):
        assert _rel(r.response["sojourn_tail"]["1"], mpmath.exp(-1)) < mpmath.mpf(10) ** -18
    assert [float(v) for v in r.response["sojourn_moments"]] == [1.0, 2.0]


def test_size_for_a_loss_and_a_delay_target_against_the_tagged_customer_chain():
    """size vacation-finite --target-loss P --target-wait-quantile Q,T in overload (rho_bar = 1.5, M/M laws,
    single arrivals): the capacities [r_min, r_max] returned meet both targets at their ends and r_max + 1 does
    not meet the delay target, judged by the tagged-customer CTMC (P(W > T) <= 1 - Q <=> quantile <= T) at
    30 digits; r_min - 1 misses the loss target (the finite engine)."""
    import json

    from conftest import cli
    from qderive.numeric.backend import mp_context
    from qderive.numeric.oracles.wait import tagged_wait

    # in-process (the console script's subprocess path is tests/test_cli.py's)
    code, out, err = cli(["size", "vacation-finite", "--batch", "const:n=1", "--service", "exp:mean=1", "--vacation",
                          "exp:mean=1/2", "--load", "1.5", "--target-loss", "0.4", "--target-wait-quantile", "0.9,6",
                          "--json"])
    assert code == 0, err
    got = json.loads(out)
    r_min, r_max = got["capacity"], got["max_capacity_for_delay"]
    assert r_min <= r_max
    model = qd.FiniteVacationQueue(F(3, 2), qd.Constant(1), qd.Exponential(1), qd.Exponential(F(1, 2)), r_min)
    for r, meets in ((r_min, True), (r_max, True), (r_max + 1, False)):
        tail = tagged_wait(model.with_capacity(r), mp_context(30), times=(F(6),)).tail[0]
        assert (tail <= mpmath.mpf(1) / 10) is meets, (r, tail)
    assert model.evaluate().loss_probability <= 0.4 < model.with_capacity(r_min - 1).evaluate().loss_probability


@pytest.mark.slow  # 7 s
def test_r200_overload_tails_against_the_tagged_customer_chain_at_50_digits():
    """The issue-13 target: r = 200 tails to 1e-10 relative against an independent 50-digit computation (the
    tagged customer's absorption time, uniformization, numeric/oracles/wait.py): rho_bar = 1.2, geometric
    batches of mean 2, Erlang-2 service, exponential vacations; the 30-digit engine is asked for 1e-28."""
    from qderive.numeric.oracles.wait import tagged_wait

    model = qd.FiniteVacationQueue(F(6), qd.Geometric(F(2)), qd.Erlang(2, F(1, 10)), qd.Exponential(F(1, 5)), 200)
    ts = ("1", "5", "20")
    oracle = tagged_wait(model, mp_context(50), times=tuple(F(t) for t in ts))
    got = model.evaluate(30, wait_tail=list(ts)).response["wait_tail"]
    with mpmath.workdps(50):
        for t, want in zip(ts, oracle.tail):
            assert abs(got[t] / want - 1) < mpmath.mpf(10) ** -28, t
