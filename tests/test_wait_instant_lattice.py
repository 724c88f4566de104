"""Exact tails of an admitted customer's wait with a constant service D under ``--policy instant``.

The tails (numeric/engines/hysteretic_wait.py ``instant_lattice_tails``: the positive sums (F1) of
numeric/kernels/lattice_finite.py over the birth kernel's level rows, numeric/kernels/birth.py
``birth_level_rows``) are checked against things computed another way:

* an independent 30-digit computation written here from the model definition for R = 3 (L = 1, H = 2) and R = 5: the
  embedded chain at departures with the within-service count process as the matrix exponential of its
  generator (mpmath ``expm``, not uniformization), the time at each count below an age y by Van Loan's block
  exponential, the admitted customer's wait (D - x) + (c - 1 + i - 1) D summed over the count c, the position
  i and the residual's range; tails and the sojourn to 1e-25 relative (30 digits asked: the sums' bound is
  10^-32; the oracle's expm and linear solve at 40 digits; measured 1e-40; float64 measured 4e-15);
* the mean from the tail (Gauss-Legendre on each interval between the kinks t = j D, where the tail is
  analytic: 12 nodes integrate the degree-K Poisson sums to far below 1e-12) against ``wait_moments`` of the
  transform (another algorithm: power series of N(s)), to 1e-12; W <= (R - 1) D exactly;
* a seeded simulation of the instant policy (its mode tables written independently of the birth kernel), inside
  its 99 % intervals;
* float64 against ``--digits 30`` on a low-load R = 20 case with tails down to about 1e-18 (float64 rows extended
  by the birth kernel): 1e-10 relative (float64 keeps a tail only when its own bound is 1e-10, else escalates;
  measured 3e-14), the quantile against the tail's crossing, and the sums' total N(W > -1) = 1 (admitted
  customers per departure, renewal reward) to 1e-28;
* the quantile and the CLI path (``qderive eval hysteretic --policy instant --service det:mean=D``).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
import qderive as qd
from qderive.numeric.engines.hysteretic_wait import hysteretic_laws
from qderive.numeric.response import moments, quantiles, tails
from qderive.symbolic.models.hysteretic import Policy

SMALL = qd.HystereticModel(service=qd.Deterministic(F(1)), batch=qd.Geometric(F(3, 2)), L=1, H=2, R=3,
                           rate=F(3, 5), overload_factor=F(1, 2), policy=Policy.INSTANT)
MID = qd.HystereticModel(service=qd.Deterministic(F(1, 2)), batch=qd.Geometric(F(2)), L=2, H=4, R=7,
                         rate=F(9, 10), overload_factor=F(1, 2), policy=Policy.INSTANT)


def _rel(a, b):
    with mpmath.workdps(50):  # the difference of two 30-digit numbers, not rounded to 15 digits
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return abs(a - b) / abs(b) if b else abs(a)


@functools.lru_cache(maxsize=None)
def _oracle(model, ts, dps=40, sojourn=False):
    """P(W > t) from the model definition: counts 0..R, mode s in force max(s, level(c)) (level 0 below H, 1 on
    H..R-1, 2 at R), batch rates lambda_0, f lambda_0, 0; after a departure leaving j: overload -> normal at
    j <= L - 1, discard -> overload at j <= H; a batch at count c admits min(X, R - c) (partial admission)."""
    L, H, R = model.L, model.H, model.R
    with mpmath.workdps(dps):
        D = mpmath.mpf(model.service.mean.numerator) / model.service.mean.denominator
        lam = [mpmath.mpf(model.rate.numerator) / model.rate.denominator, None, mpmath.mpf(0)]
        f = model.overload_factor
        lam[1] = lam[0] * f.numerator / f.denominator
        mean = model.batch.mean
        p = mpmath.mpf(mean.denominator) / mean.numerator  # geometric on 1, 2, ...: P(X = i) = p (1 - p)^(i - 1)
        pmf = [mpmath.mpf(0)] + [p * (1 - p) ** (i - 1) for i in range(1, R + 1)]
        ge = [mpmath.mpf(1)] + [(1 - p) ** (i - 1) for i in range(1, R + 2)]  # P(X >= i)

        def level(c):
            return 0 if c < H else (1 if c < R else 2)

        def rate(s, c):
            return lam[max(s, level(c))]

        def generator(s):
            Q = mpmath.zeros(R + 1, R + 1)
            for c in range(R):
                a = rate(s, c)
                for i in range(1, R - c):
                    Q[c, c + i] = a * pmf[i]
                Q[c, R] += a * ge[R - c]
                Q[c, c] = -a
            return Q

        def after(m, j):
            if m == 1 and j <= L - 1:
                return 0
            if m == 2 and j <= H:
                return 1
            return m

        Qs = [generator(s) for s in range(3)]
        ends = [mpmath.expm(Q * D) for Q in Qs]
        first = [mpmath.mpf(0)] + [pmf[c] for c in range(1, R)] + [ge[R]]  # the count after an idle period's batch

        def starts(j, s):  # (weight, count, mode) of the service after the state (j, s)
            if j == 0:
                return [(first[c], c, 0) for c in range(1, R + 1)]
            return [(mpmath.mpf(1), j, s)]

        states, index, moves = [(0, 0)], {(0, 0): 0}, []
        k = 0
        while k < len(states):  # the states reached from the empty system, with their transitions
            row = {}
            for w, c0, s0 in starts(*states[k]):
                for c in range(c0, R + 1):
                    pr = w * ends[s0][c0, c]
                    if pr:
                        nxt = (c - 1, after(max(s0, level(c)), c - 1))
                        if nxt not in index:
                            index[nxt] = len(states)
                            states.append(nxt)
                        row[index[nxt]] = row.get(index[nxt], 0) + pr
            moves.append(row)
            k += 1
        n = len(states)
        T = mpmath.zeros(n, n)
        for k, row in enumerate(moves):
            for d, pr in row.items():
                T[k, d] = pr
        A = T.T - mpmath.eye(n)
        for k in range(n):
            A[n - 1, k] = 1
        rhs = mpmath.zeros(n, 1)
        rhs[n - 1] = 1
        q = mpmath.lu_solve(A, rhs)

        @functools.lru_cache(maxsize=None)
        def occupancy(s0, y):  # int_0^y expm(Q x) dx: the upper right block of expm([[Q, I], [0, 0]] y)
            Q = Qs[s0]
            B = mpmath.zeros(2 * (R + 1), 2 * (R + 1))
            for a in range(R + 1):
                for b in range(R + 1):
                    B[a, b] = Q[a, b] * y
                B[a, R + 1 + a] = y
            E = mpmath.expm(B)
            return [[E[a, R + 1 + b] for b in range(R + 1)] for a in range(R + 1)]

        def count(t):  # admitted customers per departure with W > t
            total = mpmath.mpf(0)
            for k, (j, s) in enumerate(states):
                if j == 0:  # the batch ending the idle period: its i-th customer waits (i - 1) D
                    total += q[k] * sum(ge[i] for i in range(1, R + 1) if (i - 1) * D > t)
                for w, c0, s0 in starts(j, s):
                    for c in range(1, R):
                        for i in range(1, R - c + 1):
                            ahead = c - 1 + i - 1  # W = (D - x) + ahead D > t  <=>  x < (ahead + 1) D - t
                            y = min(D, (ahead + 1) * D - t)
                            if y > 0:
                                total += q[k] * w * rate(s0, c) * ge[i] * occupancy(s0, y)[c0][c]
            return total

        mass = count(mpmath.mpf(-1))
        out = []
        for t in ts:
            t = mpmath.mpf(t.numerator) / t.denominator - (D if sojourn else 0)
            out.append(count(t) / mass if t >= 0 else mpmath.mpf(1))
        return out


def test_tails_match_an_independent_30_digit_computation_from_the_definition():
    ts = [F(0), F(1, 3), F(1), F(3, 2), F(19, 10)]
    laws = hysteretic_laws(SMALL)
    got = tails(laws["wait"], ts, 30)[0]
    want = _oracle(SMALL, tuple(ts))
    for t, g, w in zip(ts, got, want, strict=True):
        assert _rel(g, w) < mpmath.mpf(10) ** -25, (t, g, w)
    soj = tails(laws["sojourn"], [F(5, 2)], 30)[0][0]
    assert _rel(soj, _oracle(SMALL, (F(5, 2),), sojourn=True)[0]) < mpmath.mpf(10) ** -25
    # complete blocking in overload (f = 0), and R = 5 with L = 2, H = 3, D = 3 (tails near (R - 1) D)
    for model in (replace(SMALL, overload_factor=F(0)),
                  replace(SMALL, service=qd.Deterministic(F(3)), batch=qd.Geometric(F(5, 4)), L=2, H=3, R=5,
                          rate=F(3, 10), overload_factor=F(3, 4))):
        D = model.service.mean
        pts = (D / 7, D * F(13, 10), D * (model.R - 1) - F(1, 100))
        got = tails(hysteretic_laws(model)["wait"], pts, 30)[0]
        for t, g, w in zip(pts, got, _oracle(model, pts), strict=True):
            assert _rel(g, w) < mpmath.mpf(10) ** -25, (model.R, t, g, w)


def test_the_integral_of_the_tail_is_the_mean_of_wait_moments():
    model = MID
    D, R, n = model.service.mean, model.R, 12
    x, w = np.polynomial.legendre.leggauss(n)
    nodes = [D * (k + F((xi + 1) / 2)) for k in range(R - 1) for xi in x]
    law = hysteretic_laws(model)["wait"]
    got = tails(law, nodes + [(R - 1) * D], None)[0]
    assert got[-1] == 0  # W <= (R - 1) D: the residual plus at most R - 2 services ahead
    integral = sum(float(D) * wi / 2 * got[k * n + i] for k in range(R - 1) for i, wi in enumerate(w))
    mean = moments(law, 1, None)[0][0]
    assert integral == pytest.approx(float(mean), rel=1e-12)


def test_against_the_simulators_99_percent_intervals():
    from qderive.numeric.simulation.hysteretic import simulate

    model = MID
    ts = (0.3, 1.1, 2.2)
    exact = model.evaluate(wait_tail=[str(t) for t in ts]).response["wait_tail"]
    sim = simulate(model, 12_000, 6, seed=11, quiet=True, wait_tail=ts)
    level = 1 - 0.01 / len(ts)  # simultaneous 99 % (Bonferroni); a seeded run
    for t in ts:
        lo, hi = sim["wait_tail"][t].interval(level)
        assert lo <= exact[str(t)] <= hi, (t, lo, exact[str(t)], hi)


def test_float64_against_30_digits_down_to_deep_tails_and_the_quantiles():
    # low load, single-ish batches: the tail falls to about 1e-18 by t = (R - 3) D
    model = qd.HystereticModel(service=qd.Deterministic(F(1)), batch=qd.Geometric(F(11, 10)), L=6, H=13, R=20,
                               rate=F(1, 5), overload_factor=F(1, 2), policy=Policy.INSTANT)
    laws = hysteretic_laws(model)
    ts = [F(1, 3), F(5, 2), F(39, 4), F(15), F(37, 2)]
    t64, t30 = tails(laws["wait"], ts, None)[0], tails(laws["wait"], ts, 30)[0]
    for t, a, b in zip(ts, t64, t30, strict=True):
        assert a is not None and _rel(a, b) < 1e-10, t
    assert t30[-1] < 1e-15
    # N(W > -1), the sums' total, is the number of admitted customers per departure: 1 (renewal reward)
    from qderive.numeric.backend import mp_context
    from qderive.numeric.engines.hysteretic_wait import instant_wait_data

    assert _rel(instant_wait_data(model).parts(mp_context(30))[0].lattice.mass, 1) < mpmath.mpf(10) ** -28
    s64, s30 = tails(laws["sojourn"], [F(33, 2)], None)[0][0], tails(laws["sojourn"], [F(33, 2)], 30)[0][0]
    assert _rel(s64, s30) < 1e-10
    assert s30 == tails(laws["wait"], [F(31, 2)], 30)[0][0]  # P(W + D > t) = P(W > t - D)
    mean = moments(laws["wait"], 1, None)[0][0]
    q64 = quantiles(laws["wait"], [F(99, 100)], None, mean)[0][0]
    q30 = quantiles(laws["wait"], [F(99, 100)], 30, mean)[0][0]
    assert _rel(q64, q30) < 1e-10
    # the quantile is where the tail crosses 1 - q
    q = F(str(mpmath.nstr(q30, 30)))
    above, below = tails(laws["wait"], [q + F(1, 10**9), q - F(1, 10**9)], 30)[0]
    assert above <= mpmath.mpf("0.01") < below


def test_the_cli_gives_tails_and_quantiles(capsys):
    import json

    from qderive.derivations.cli import main

    code = main(["eval", "hysteretic", "--policy", "instant", "--service", "det:mean=1", "--batch",
                 "geometric:mean=3/2", "--rate", "3/5", "--thresholds", "1,2,3", "--wait-tail", "1/3,1",
                 "--wait-quantile", "0.5", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    res = json.loads(out)["measures"]
    want = _oracle(SMALL, (F(1, 3), F(1)))
    assert _rel(res["wait_tail"]["1/3"], want[0]) < 1e-10
    assert _rel(res["wait_tail"]["1"], want[1]) < 1e-10
    assert "0.5" in res["wait_quantile"]
