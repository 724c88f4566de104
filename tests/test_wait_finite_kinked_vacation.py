"""Exact tails of an admitted customer's wait in the finite room with a phase-type service and constant or empirical
vacations (issue 13, item 4; :mod:`qderive.numeric.kernels.finite_kinked`), each against something computed another
way:

* an independent 40-digit computation written here from the model's definition (:func:`_oracle`): the embedded chain
  at the *starts* of services, vacations and idle periods, solved by mpmath's LU; during a service the (level, phase)
  CTMC of an Erlang-k service (occupation times by an LU solve); during a vacation the level after K batches (batch
  by batch) with Poisson(lambda x) batches by the age x; the admitted customers with W > t counted one by one (the
  wait from a phase: an Erlang number of phases, P(Erlang(n) > y) by its finite Poisson sum) and integrated over the
  vacation's age by ``mpmath.quad``, split at the kink x = d - t. It shares nothing with the kernel: no admission
  matrix, no uniformization, no overlap weights, no Horner start;
* the mean as the integral of the tail (Gauss-Legendre between the kinks) against ``wait_moments`` (the power series
  of the transform at s = 0: another computation), for a hyperexponential service (the general block chain);
* the block chain run step by step against the Erlang shortcut (steps left as a function of the state);
* float64 against 30 digits, and the command line.

Tolerances: float64 within 1e-12 relative (the kernel's own bound is 4 eps (size + 10), about 1e-13 here); 30 digits
asked, 10^-25 demanded against a 40-digit reference (the reference's quad converges to its working precision).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import vacation_finite_wait as FW
from qderive.numeric.kernels import finite_kinked as FK

P, A = qd.VacationPolicy, qd.Admission


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


def _rel(a, b):
    with mpmath.workdps(60):
        a, b = mpmath.mpmathify(a), mpmath.mpmathify(b)
        return abs(a - b) / abs(b)


# -- the independent computation ------------------------------------------------------------------------------


def _oracle(r, whole, pmf, k, mean, lam, vacation, single, ts, sojourn=False, dps=60):
    """P(W > t) (or P(W + B > t)) of admitted customers for t in ``ts``: r waiting places, batch sizes ``pmf``
    {size: P}, Erlang-k service of mean ``mean``, batch rate ``lam``, vacation lengths ``vacation`` {d: P} (multiple
    vacations, or ``single``), partial or ``whole`` admission. See the module docstring."""
    with mpmath.workdps(dps):
        l = {s: _mp(p) for s, p in pmf.items()}
        lam, rate = _mp(lam), k / _mp(mean)  # the phase rate
        vac = {_mp(d): _mp(p) for d, p in vacation.items()}
        times = [mpmath.mpf(-1)] + [_mp(t) for t in ts]
        own = k if sojourn else 0

        def move(n, s):  # (level after a batch of s at level n, customers admitted)
            if whole:
                return (n + s, s) if n + s <= r else (n, 0)
            return min(n + s, r), min(s, r - n)

        def erl(n, y):  # P(Erlang(n phases of ``rate``) > y)
            if y < 0:
                return mpmath.mpf(1)
            if n == 0:
                return mpmath.mpf(0)
            return mpmath.fsum(mpmath.exp(-rate * y) * (rate * y) ** i / mpmath.factorial(i) for i in range(n))

        def count(n, phases_of_j, t):  # a batch at level n: sum over its admitted customers of P(W > t)
            return mpmath.fsum(p * mpmath.fsum(phases_of_j(n + m - 1, t) for m in range(1, move(n, s)[1] + 1))
                               for s, p in l.items())

        # a service period from n waiting: the (level, phase) CTMC until the completion
        states = [(m, f) for m in range(r + 1) for f in range(k)]
        idx = {st: i for i, st in enumerate(states)}
        Q = mpmath.zeros(len(states))
        for (m, f), i in idx.items():
            Q[i, i] -= lam + rate
            for s, p in l.items():
                Q[i, idx[(move(m, s)[0], f)]] += lam * p
            if f < k - 1:
                Q[i, idx[(m, f + 1)]] += rate

        def occupation(n):
            e = mpmath.zeros(len(states), 1)
            e[idx[(n, 0)]] = 1
            return mpmath.lu_solve((-Q).T, e)

        def service(n):  # (end levels {m: P}, [N(W > t) for t in times])
            occ = occupation(n)
            ends = {m: occ[idx[(m, k - 1)]] * rate for m in range(r + 1)}
            out = []
            for t in times:
                out.append(lam * mpmath.fsum(occ[idx[(m, f)]] * count(m, lambda j, t, f=f: erl(k - f + j * k + own, t), t)
                                             for m in range(r) for f in range(k)))
            return ends, out

        def rows(K):
            out, cur = [], {0: mpmath.mpf(1)}
            for _ in range(K + 1):
                out.append(cur)
                nxt = {}
                for m, p in cur.items():
                    for s, q in l.items():
                        m2 = move(m, s)[0]
                        nxt[m2] = nxt.get(m2, 0) + p * q
                cur = nxt
            return out

        def pois(K, z):
            return mpmath.exp(-z) * z**K / mpmath.factorial(K)

        def integral(coeffs, mu, a, b):  # int_a^b sum_n coeffs[n] x^n e^{-mu x} dx (mpmath's incomplete gamma)
            return mpmath.fsum(c * mpmath.gammainc(n + 1, mu * a, mu * b) / mu ** (n + 1)
                               for n, c in enumerate(coeffs) if c)

        def product(p, q):
            out = [mpmath.mpf(0)] * (len(p) + len(q) - 1)
            for i, a in enumerate(p):
                for j, b in enumerate(q):
                    out[i + j] += a * b
            return out

        def customers(m):  # {j: expected admitted customers of a batch at level m with j ahead}
            out = {}
            for s, p in l.items():
                for n in range(1, move(m, s)[1] + 1):
                    out[m + n - 1] = out.get(m + n - 1, 0) + p
            return out

        def vacation_period():
            # the level law by the age x: sum_K e^{-lambda x} (lambda x)^K / K! (level after K batches), a polynomial
            # in x times e^{-lambda x}; the customers' P(W > t) a polynomial in x times e^{-rate x}: exact integrals
            ends, out = {}, [mpmath.mpf(0)] * len(times)
            for d, pd in vac.items():
                top = next(K for K in range(10**4) if K > 2 * lam * d and pois(K, lam * d) < mpmath.mpf(10) ** -(dps + 5))
                R = rows(top)
                for K, row in enumerate(R):
                    for m, p in row.items():
                        ends[m] = ends.get(m, 0) + pd * pois(K, lam * d) * p
                level = [[lam**K / mpmath.factorial(K) * row.get(m, 0) for K, row in enumerate(R)] for m in range(r)]
                for i, t in enumerate(times):
                    c = t - d  # W = d - x + S_j > t: x < -c surely; else S_j > x + c
                    lo = min(max(-c, mpmath.mpf(0)), d)
                    total = 0
                    if lo > 0:
                        sure = [mpmath.fsum(level[m][K] * mpmath.fsum(customers(m).values()) for m in range(r))
                                for K in range(top + 1)]
                        total += integral(sure, lam, 0, lo)
                    if lo < d:
                        poly = [mpmath.mpf(0)]
                        for m in range(r):
                            g = [mpmath.mpf(0)]
                            for j, w in customers(m).items():
                                n = j * k + own  # P(Erlang(n) > x + c) e^{rate (x + c)}: sum_i rate^i (x + c)^i / i!
                                for e in range(n):
                                    term = [w * rate**e / mpmath.factorial(e) * mpmath.binomial(e, a) * c ** (e - a)
                                            for a in range(e + 1)]
                                    g = [u + v for u, v in zip(g + [0] * len(term), term + [0] * len(g))][:max(len(g), len(term))]
                            poly = [u + v for u, v in zip(poly + [0] * 200, product(level[m], g) + [0] * 200)]
                        total += mpmath.exp(-rate * c) * integral(poly, lam + rate, lo, d)
                    out[i] += pd * lam * total
            return ends, out

        def idle():
            fit = mpmath.fsum(p for s, p in l.items() if not whole or s <= r + 1)
            ends, out = {}, []
            for s, p in l.items():
                if whole and s > r + 1:
                    continue
                w = min(s, r + 1) - 1
                ends[w] = ends.get(w, 0) + p / fit
            for t in times:
                out.append(mpmath.fsum(p / fit * mpmath.fsum(erl((m - 1) * k + own, t) for m in range(1, min(s, r + 1) + 1))
                                       for s, p in l.items() if not whole or s <= r + 1))
            return ends, out

        names = [("S", n) for n in range(r + 1)] + [("V",), ("I",)]
        at = {st: i for i, st in enumerate(names)}
        periods = {("S", n): service(n) for n in range(r + 1)}
        periods[("V",)] = vacation_period()
        periods[("I",)] = idle()
        T = mpmath.zeros(len(names))
        for st, (ends, _) in periods.items():
            for m, p in ends.items():
                if st == ("I",):
                    T[at[st], at[("S", m)]] += p
                elif m:
                    T[at[st], at[("S", m - 1)]] += p
                else:
                    T[at[st], at[("V",) if st[0] == "S" or not single else ("I",)]] += p
        M = T.T - mpmath.eye(len(names))
        for j in range(len(names)):
            M[len(names) - 1, j] = 1
        b = mpmath.zeros(len(names), 1)
        b[len(names) - 1] = 1
        pi = mpmath.lu_solve(M, b)
        N = [mpmath.fsum(pi[at[st]] * periods[st][1][i] for st in names) for i in range(len(times))]
        return [v / N[0] for v in N[1:]]


def _model(r, whole, pmf, service, vacation, single, lam):
    return qd.FiniteVacationQueue(rate=lam, batch=qd.FinitePMF(pmf), service=service, vacation=vacation, capacity=r,
                                  admission=A.WHOLE if whole else A.PARTIAL,
                                  vacation_policy=P.SINGLE if single else P.MULTIPLE)


# -- against the oracle ---------------------------------------------------------------------------------------

_PMF = {1: F(1, 2), 2: F(3, 10), 3: F(1, 5)}


@pytest.mark.parametrize("case", [
    # exponential service, constant vacation 2, multiple vacations, partial admission; tails 1 .. 1e-20
    dict(r=4, whole=False, k=1, mean=F(1), lam=F(2, 5), vac={F(2): 1}, single=False,
         ts=[F(1, 2), F(3, 2), F(2), F(5), F(20), F(45)], sojourn=False),
    # Erlang-2 service, an empirical vacation (1/2 or 3), single vacations, whole admission; the sojourn
    dict(r=3, whole=True, k=2, mean=F(1, 2), lam=F(1), vac={F(1, 2): F(1, 2), F(3): F(1, 2)}, single=True,
         ts=[F(1, 4), F(1), F(5, 2), F(4), F(25)], sojourn=True),
])
def test_against_oracle(case):
    c = case
    service = qd.Exponential(c["mean"]) if c["k"] == 1 else qd.Erlang(c["k"], c["mean"])
    if len(c["vac"]) == 1:
        vacation = qd.Deterministic(next(iter(c["vac"])))
    else:  # equal weights: each point once
        vacation = qd.Empirical(tuple(c["vac"]))
    m = _model(c["r"], c["whole"], _PMF, service, vacation, c["single"], c["lam"])
    ref = _oracle(c["r"], c["whole"], _PMF, c["k"], c["mean"], c["lam"], c["vac"], c["single"], c["ts"],
                  sojourn=c["sojourn"])
    key = "sojourn_tail" if c["sojourn"] else "wait_tail"
    asked = {key: [str(t) for t in c["ts"]]}
    f64 = m.evaluate(**asked)[key]
    d30 = m.evaluate(digits=30, **asked)[key]
    assert min(ref) < 1e-15  # the cases reach deep tails
    for t, want in zip(c["ts"], ref):
        assert _rel(f64[str(t)], want) < 1e-12, (t, f64[str(t)], want)
        assert _rel(d30[str(t)], want) < 1e-25, (t, d30[str(t)], want)


# -- the mean and the second moment as integrals of the tail (the general chain; a uniform vacation) --------------


def _gauss_legendre(pieces, n):
    x, w = np.polynomial.legendre.leggauss(n)
    nodes, weights = [], []
    for a, b in pieces:
        nodes += list((b - a) / 2 * x + (a + b) / 2)
        weights += list((b - a) / 2 * w)
    return nodes, np.array(weights)


@pytest.mark.parametrize("service, vacation, r, pieces, nodes, last", [
    # a hyperexponential service (the general block chain), a constant vacation 2: split at the kink t = d = 2
    (qd.HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), F(5, 4))), qd.Deterministic(2), 5,
     [(0, 2), (2, 7), (7, 17), (17, 37), (37, 77), (77, 152)], 24, 1e-16),
    # a uniform vacation on [1/2, 2] (a mixture of constants: Gauss-Legendre over d of the constant-d sums, split
    # at d = t), Erlang-2 service: split at the kinks t = 1/2 and 2; measured 2e-16 and 1.4e-16
    (qd.Erlang(2, F(1, 2)), qd.Uniform(F(1, 2), F(2)), 4, [(0, 0.5), (0.5, 2), (2, 6), (6, 14), (14, 30), (30, 60)],
     16, 1e-80),
], ids=["hyperexp-det", "erlang-uniform"])
def test_moments_are_integrals_of_the_tail(service, vacation, r, pieces, nodes, last):
    """E W = int P(W > t) dt and E W^2 = int 2 t P(W > t) dt (Gauss-Legendre, ``nodes`` per piece, split at the
    kinks; beyond the last piece the tail is below ``last``) against ``wait_moments`` (the transform's power series
    at s = 0: no tail is involved). The quadrature error of an analytic integrand on these pieces is far below
    1e-13; asked 1e-12."""
    m = _model(r, False, _PMF, service, vacation, False, F(3, 10))
    law = FW.response_laws(m)["wait"]
    ts, weights = _gauss_legendre(pieces, nodes)
    tails, _ = law.tails([F(t) for t in ts], None)
    assert all(v is not None for v in tails)
    tails = np.array(tails)
    assert tails[-1] < last
    m1, m2 = m.evaluate(wait_moments=2)["wait_moments"]
    assert abs(weights @ tails - m1) < 1e-12 * m1
    assert abs(weights @ (2 * np.array(ts) * tails) - m2) < 1e-12 * m2


# -- kernel: the block chain step by step = the Erlang shortcut ---------------------------------------------------


@pytest.mark.parametrize("ctx", [FLOAT64, mp_context(30)], ids=["float64", "mp30"])
def test_block_chain_equals_erlang_shortcut(ctx):
    """For an Erlang-3 service the chain run step by step (erlang=None) and the steps-left shortcut give the same
    masses of the same start, and the same Horner start Z*: all positive sums, so 1e-14 (float64) / 1e-28 (30
    digits) relative."""
    k, B = 3, 4
    with ctx:
        P = ctx.zeros((k, k))
        for i in range(k - 1):
            P[i, i + 1] = ctx.num(1)
        exit_, beta = ctx.array([0, 0, 1]), ctx.array([1, 0, 0])
        rows, zeta = ctx.zeros((B, k)), ctx.zeros((6, B))
        for i in range(B):
            rows[i] = ctx.array([F(i + 1, 7 + p) for p in range(k)])
        for i in range(6):
            zeta[i] = ctx.array([F(1 + (i * j) % 5, 9 + i) for j in range(B)])
        out = []
        for erlang in (k, None):
            chain = FK.BlockChain(ctx, P, exit_, beta, B, erlang)
            X = chain.add_phases(chain.add_blocks(chain.zero(), ctx.array([F(1, 3), F(1, 5), F(2, 7), 0]), 1), rows)
            Z, _ = FK.vacation_start(chain, zeta)
            out.append((chain.masses(X)(B * k + 2)[: B * k + 1], chain.masses(Z)(B * k + 2)[: B * k + 1],
                        chain.total(X)))
        tol = 1e-14 if ctx.is_float64 else mpmath.mpf(10) ** -28
        for a, b in zip(out[0][:2], out[1][:2]):
            assert all(abs(x - y) <= tol * abs(y) for x, y in zip(a, b) if y) and all(not x for x, y in zip(a, b) if not y)
        assert out[0][0][0] == out[0][2] or abs(out[0][0][0] - out[1][2]) <= tol * out[1][2]


# -- P(W = 0), the quantile, the refusals, the command line ---------------------------------------------------------


def test_zero_atom_quantile_and_cli():
    """Single vacations: P(W > 0) = 1 - P(W = 0) (the atom: the idle server's first customers, from the transform's
    data, another computation); the 0.99 quantile q satisfies P(W > q) = 0.01 (to its tolerance); the command line
    gives the contract's keys, float64 and --digits."""
    from conftest import cli

    m = _model(4, False, _PMF, qd.Erlang(2, F(1, 2)), qd.Deterministic(F(3, 2)), True, F(1, 2))
    law = FW.response_laws(m)["wait"]
    p0 = law.p_zero(FLOAT64)
    assert 0 < p0 < 1
    assert abs(law.tails([F(0)], None)[0][0] - (1 - p0)) < 1e-13
    q = m.evaluate(wait_quantile=["0.99"])["wait_quantile"]["0.99"]
    assert abs(law.tails([F(q)], None)[0][0] - 0.01) < 1e-11
    argv = ["eval", "vacation-finite", "--rate", "0.5", "--batch", "pmf:1=0.5,2=0.3,3=0.2", "--service",
            "erlang:k=2,mean=0.5", "--vacation", "det:mean=1.5", "--capacity", "4", "--vacation-policy", "single",
            "--wait-tail", "0.5,2", "--wait-quantile", "0.99", "--sojourn-tail", "1", "--json"]
    code, out, err = cli(argv)
    assert code == 0, err
    got = json.loads(out)["measures"]
    assert set(got["wait_tail"]) == {"0.5", "2"} and set(got["wait_quantile"]) == {"0.99"}
    assert abs(got["wait_quantile"]["0.99"] - q) < 1e-12 * q
    assert abs(got["wait_tail"]["2"] - law.tails([F(2)], None)[0][0]) < 1e-15
    code, out, err = cli(argv[:-1] + ["--digits", "20", "--json"])
    assert code == 0, err
    assert abs(mpmath.mpf(json.loads(out)["measures"]["wait_tail"]["2"]) - got["wait_tail"]["2"]) < 1e-12 * got[
        "wait_tail"]["2"]


def test_refusals_name_the_law():
    """A gamma service of non-integer shape with a constant vacation and a uniform setup stay refused for tails,
    with the reason (a lognormal service or vacation is inverted with a smooth other law,
    tests/test_finite_lognormal_inversion.py, and bracketed with a kinked one; a lognormal setup is inverted since
    branch lb26, tests/test_blocks_finite_lognormal.py)."""
    from conftest import cli

    base = ["eval", "vacation-finite", "--rate", "0.5", "--batch", "geometric:mean=2", "--capacity", "3"]
    # (a constant vacation computes since branch sh26: tests/test_blocks_finite_shifts.py)
    code, _, err = cli(base + ["--service", "gamma:shape=2.5,mean=1", "--vacation", "uniform:low=1/2,high=3/2",
                               "--wait-tail", "1"])
    assert code == 2 and "not phase-type" in err
    code, _, err = cli(base + ["--service", "exp:mean=1", "--vacation", "exp:mean=1", "--setup",
                               "uniform:low=1/2,high=3/2", "--wait-tail", "1"])
    assert code == 2 and "kinks" in err and "--setup uniform" in err  # asked before any work
