"""Exact tails of an admitted customer's wait with a constant service in the finite room and the hysteretic model
(issue 13, item 4; :mod:`qderive.numeric.kernels.lattice_finite`), each against something computed another way:

* an independent 40-digit computation written here from the models' definitions (:func:`_oracle`): the embedded
  chain at the *starts* of services, vacations and idle periods (not the engines' departure-epoch laws), solved by
  state reduction in mpmath (:func:`_stationary`, written here); the level process batch by batch (partial or whole
  admission, the hysteretic modes by the model's own ``next_state`` rule); the expected number of a period's
  admitted customers with W > t as an integral over the elapsed time by ``mpmath.quad`` (split at the kinks), the
  batch's customers counted one by one. It shares nothing with the kernel: no admission matrix, no incomplete
  gamma, no renewal-reward weights;
* the simulator's 99 % intervals (seeded runs);
* the mean as the integral of the tail (Gauss-Legendre between the kinks) against ``wait_moments`` (the power
  series of the transform at s = 0: another computation);
* float64 against 30 digits, and the total of the sums against the transform's N(0);
* large r at low load: the infinite room's alternating lattice (Prabhu) sum, within 10 times the loss probability.

Tolerances: asked for D digits the policy promises D; the tests ask 10^-(D-1) against references of 40 or more
correct digits (the last digit's rounding).
"""

from __future__ import annotations

from fractions import Fraction as F
from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric.backend import mp_context
from qderive.numeric.engines.vacation_finite_wait import lattice_setup, wait_law_data
from qderive.symbolic.errors import ParameterError

P, A = qd.VacationPolicy, qd.Admission


def _rel(a, b):
    with mpmath.workdps(80):
        a, b = mpmath.mpmathify(a), mpmath.mpmathify(b)
        return abs(a - b) / abs(b) if b != 0 else abs(a)


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


# -- the independent computation ------------------------------------------------------------------------------


def _oracle(r, whole, pmf, D, rates, after_service, vacation, single, ts, dps=40, depth=None):
    """P(W > t) for each t of ``ts``: admitted customers of a finite room of r waiting places with constant service
    D, batch sizes ``pmf`` {k: P(X = k)}, batch rate ``rates[s]`` in mode s, vacations ``vacation`` = ("exp", theta)
    or ("det", d) (None: none; ``single``: one vacation, then idle) and ``after_service(level, mode)`` -> the next
    period: ("S", level - 1, mode') or ("V",) or ("I",). The embedded chain at the period starts (:func:`_stationary`),
    then the expected number of admitted customers with W > t over the periods that follow its stationary law
    (linear in the start: one mixture per kind of period), by mpmath.quad over the elapsed time. Batch counts and
    the time integrals are cut where they fall below 10^-``depth`` (default dps + 5): absolutely, so a tail below
    that needs a larger depth."""
    with mpmath.workdps(dps):
        D = _mp(D)
        l = {k: _mp(p) for k, p in pmf.items()}
        times = [mpmath.mpf(-1), *map(_mp, ts)]
        depth = dps + 5 if depth is None else depth
        tiny = mpmath.mpf(10) ** -depth

        def move(n, k):  # (level after a batch of k at level n, customers admitted)
            if whole:
                return (n + k, k) if n + k <= r else (n, 0)
            return min(n + k, r), min(k, r - n)

        def rows(start, K):  # the law of the level after 0..K batches from the law ``start`` {level: weight}
            out, cur = [], dict(start)
            for _ in range(K + 1):
                out.append(cur)
                nxt = {}
                for m, p in cur.items():
                    for k, lk in l.items():
                        m2 = move(m, k)[0]
                        nxt[m2] = nxt.get(m2, 0) + p * lk
                cur = nxt
            return out

        def customers(residual_exceeds):  # per level n: sum over a batch's admitted customers of P(residual + j D > t)
            return [mpmath.fsum(lk * mpmath.fsum(residual_exceeds(n + m - 1) for m in range(1, move(n, k)[1] + 1))
                                for k, lk in l.items()) for n in range(r + 1)]

        def poisson(K, mu):
            return mpmath.exp(-mu) * mu**K / mpmath.factorial(K)

        def fixed(start, lam, B, count):
            """A period of constant length B from the level law ``start`` at batch rate lam: {end level: probability},
            or (``count``) the numbers of admitted customers with W > t for t in ``times``."""
            if not lam:
                return dict(start) if not count else [mpmath.mpf(0)] * len(times)
            K = next(K for K in range(10**4) if K > 2 * lam * B and poisson(K, lam * B) < tiny)
            R = rows(start, K)
            if not count:
                ends = {}
                for K, row in enumerate(R):
                    w = poisson(K, lam * B)
                    for m, p in row.items():
                        ends[m] = ends.get(m, 0) + w * p
                return ends
            out = []
            for t in times:
                cuts = sorted({mpmath.mpf(0), B, *[B + j * D - t for j in range(r + 1) if 0 < B + j * D - t < B]})
                total = 0
                for a, b in zip(cuts, cuts[1:]):  # x: elapsed time; the residual B - x; the count of
                    y = B - (a + b) / 2           # customers with W > t is constant between the cuts
                    c = customers(lambda j: 1 if y + j * D > t else 0)
                    coef = [mpmath.fsum(p * c[m] for m, p in row.items()) for row in R]
                    total += mpmath.quad(_poisson_mixture(lam, lam, 0, coef), [a, b])
                out.append(total)
            return out

        def exponential(start, lam, th, count):  # the same for an exponential period of rate th
            top = int(depth / mpmath.log10((lam + th) / lam)) + 1
            R = rows(start, top)  # P(K batches) = geometric
            if not count:
                ends = {}
                for K, row in enumerate(R):
                    w = th / (lam + th) * (lam / (lam + th)) ** K
                    for m, p in row.items():
                        ends[m] = ends.get(m, 0) + w * p
                return ends
            out = []
            for t in times:  # x: elapsed vacation; the residual is Exp(theta) (memoryless)
                c = customers(lambda j: mpmath.exp(-th * max(t - j * D, 0)))
                coef = [mpmath.fsum(p * c[m] for m, p in row.items()) for row in R]
                # split where the terms (lam x)^K e^{-(lam + theta) x} peak (x = K / (lam + theta)): quad then sees
                # no narrow bump in a wide interval (needed for the deep references, depth > 100)
                step = 8 if depth > 100 else max(8, top // 2)
                cuts = sorted({mpmath.mpf(0), 1 / th, 10 / th, (depth + 5) * 2.5 / th,
                               *[K / (lam + th) for K in range(step, top + 1, step)]})
                out.append(mpmath.quad(_poisson_mixture(lam, lam, th, coef), cuts))
            return out

        def erlang(start, lam, k, th, count):  # the same for an Erlang-k period of phase rate th
            mu = lam + th

            def batches(K):  # P(K batches in the period): negative binomial (K arrivals before the k-th phase)
                return mpmath.binomial(K + k - 1, K) * (lam / mu) ** K * (th / mu) ** k

            top = next(K for K in range(10**5) if K > 2 * k * lam / th + k and batches(K) < tiny)
            R = rows(start, top)
            if not count:
                ends = {}
                for K, row in enumerate(R):
                    w = batches(K)
                    for m, p in row.items():
                        ends[m] = ends.get(m, 0) + w * p
                return ends

            def shifted(u):  # P(B > x + u) = e^{-th x} sum_a c_a x^a (binomial expansion of (x + u)^i)
                return [mpmath.exp(-th * u) * mpmath.fsum(th**i / mpmath.factorial(i) * mpmath.binomial(i, a)
                                                          * u ** (i - a) for i in range(a, k)) for a in range(k)]

            out = []
            for t in times:  # x: elapsed vacation; sum_K P(K batches by x) (level law) times the customers' counts
                polys = []
                for n in range(r + 1):
                    c = [mpmath.mpf(0)] * k
                    for size, lk in l.items():
                        for m in range(1, move(n, size)[1] + 1):
                            c = [a + lk * b for a, b in zip(c, shifted(max(t - (n + m - 1) * D, 0)))]
                    polys.append(c)
                Q = [mpmath.mpf(0)] * (top + k)
                for K, row in enumerate(R):
                    for n, p in row.items():
                        for a, ca in enumerate(polys[n]):
                            Q[K + a] += p * lam**K / mpmath.factorial(K) * ca
                step = max(8, top // 2)
                cuts = sorted({mpmath.mpf(0), 1 / th, 10 / th, *[K / mu for K in range(step, top + k + 1, step)]})
                def density(x, poly=Q[::-1]):
                    return lam * mpmath.exp(-mu * x) * mpmath.polyval(poly, x)

                out.append(mpmath.quad(density, [*cuts, mpmath.inf]))
            return out

        def vacation_period(start, count):
            if vacation[0] == "det":
                return fixed(start, lam0, _mp(vacation[1]), count)
            if vacation[0] == "erlang":
                return erlang(start, lam0, vacation[1], _mp(vacation[2]), count)
            return exponential(start, lam0, _mp(vacation[1]), count)

        states = [("S", n, s) for n in range(r + 1) for s in rates] + ([("V",)] if vacation else []) + [("I",)]
        index = {st: i for i, st in enumerate(states)}
        lam0 = _mp(rates[0])
        admitted = {k: lk for k, lk in l.items() if not whole or k <= r + 1}  # the batch that ends an idle period
        fit = mpmath.fsum(admitted.values())
        trans = [{} for _ in states]  # the rows of the embedded chain, sparse: {column: probability}

        def add(i, st2, p):
            j = index[st2]
            trans[i][j] = trans[i].get(j, 0) + p

        for st in states:
            i = index[st]
            if st[0] == "S":
                for m, p in fixed({st[1]: mpmath.mpf(1)}, _mp(rates[st[2]]), D, False).items():
                    add(i, after_service(m, st[2]), p)
            elif st[0] == "V":
                for m, p in vacation_period({0: mpmath.mpf(1)}, False).items():
                    add(i, ("S", m - 1, 0) if m else (("I",) if single else ("V",)), p)
            else:  # idle: the first admitted batch starts a service at once
                for k, lk in admitted.items():
                    add(i, ("S", min(k, r + 1) - 1, 0), lk / fit)
        # pi T = pi, sum pi = 1 (states never entered get pi = 0); kept last: a vacation, else the idle period,
        # both entered in every cycle
        root = index[("V",)] if vacation else index[("I",)]
        pi = _stationary(trans, [root] + [i for i in range(len(states)) if i != root])
        total = [mpmath.mpf(0)] * len(times)
        for s in rates:  # the services of mode s, mixed over their start levels
            start = {st[1]: pi[index[st]] for st in states if st[0] == "S" and st[2] == s}
            total = [a + b for a, b in zip(total, fixed(start, _mp(rates[s]), D, True))]
        if vacation:
            total = [a + b for a, b in zip(total, vacation_period({0: pi[index[("V",)]]}, True))]
        # the idle server's batch: its m-th customer waits (m - 1) D
        idle = [pi[index[("I",)]] * mpmath.fsum(lk / fit * sum(1 for m in range(1, min(k, r + 1) + 1) if (m - 1) * D > t)
                                                for k, lk in admitted.items()) for t in times]
        total = [a + b for a, b in zip(total, idle)]
        return [v / total[0] for v in total[1:]]


def _stationary(rows, order):
    """The stationary law of the stochastic matrix ``rows`` (sparse rows {column: probability}) by state reduction
    (Grassmann-Taksar-Heyman): the states eliminated from the end of ``order`` back to its first (a recurrent state),
    each one's paths rerouted through its successors, P_ij += P_ik P_kj / S_k with S_k the probability of leaving k
    for the states left; then pi_k = sum_{i before k} pi_i P_ik / S_k forward, normalised. Only subtractions-free
    sums of positive terms (no cancellation); the sparse rows keep the upper-Hessenberg chains of the level process
    at O(n^2) operations (a dense LU of the 203-state chain at r = 200 took 13 s)."""
    P = [dict(row) for row in rows]
    pos = {state: k for k, state in enumerate(order)}
    col = {}  # column -> the rows with an entry there
    for i, row in enumerate(P):
        for j in row:
            col.setdefault(j, set()).add(i)
    leave = {}
    for k in reversed(order[1:]):
        left = [j for j in P[k] if j != k and pos[j] < pos[k]]
        leave[k] = mpmath.fsum(P[k][j] for j in left)
        for i in col.get(k, ()):
            if i == k or pos[i] > pos[k]:
                continue
            f = P[i][k] / leave[k]
            for j in left:
                P[i][j] = P[i].get(j, 0) + f * P[k][j]
                col.setdefault(j, set()).add(i)
    pi = [mpmath.mpf(0)] * len(P)
    pi[order[0]] = mpmath.mpf(1)
    for k in order[1:]:
        pi[k] = mpmath.fsum(pi[i] * P[i][k] for i in col.get(k, ()) if i != k and pos[i] < pos[k]) / leave[k]
    total = mpmath.fsum(pi)
    return [x / total for x in pi]


def _poisson_mixture(scale, lam, theta, coef):
    """x -> scale e^{-(lam + theta) x} sum_K coef[K] (lam x)^K / K! (Horner on the polynomial in x)."""
    poly = [c * lam**K / mpmath.factorial(K) for K, c in enumerate(coef)][::-1]
    return lambda x: scale * mpmath.exp(-(lam + theta) * x) * mpmath.polyval(poly, x)


def _vacation_oracle(model, ts, dps=40, depth=None):
    r, whole = model.capacity, model.admission is A.WHOLE
    vac = model.vacation
    if vac is None:
        vacation = None
    elif isinstance(vac, qd.Deterministic):
        vacation = ("det", vac.mean)
    elif isinstance(vac, qd.Erlang):
        vacation = ("erlang", vac.k, vac.k / F(vac.mean))
    else:
        vacation = ("exp", 1 / vac.mean)
    single = model.vacation is not None and model.vacation_policy is P.SINGLE
    pmf = {k: model.batch.pmf(k) for k in range(1, r + 3) if model.batch.pmf(k)}

    def after(level, mode):
        return ("S", level - 1, 0) if level else (("V",) if vacation else ("I",))

    return _oracle(r, whole, pmf, model.service.mean, {0: model.rate}, after, vacation, single, ts, dps, depth)


PMF = qd.FinitePMF((F(1, 2), F(1, 4), F(1, 4)))

CASES = [
    # partial admission, multiple exponential vacations; t across the lattice and beyond r D
    (qd.FiniteVacationQueue(F(3, 4), PMF, qd.Deterministic(1), qd.Exponential(F(1, 2)), 3), ("0", "1/3", "2", "7/2", "9")),
    # whole admission, single vacations
    (qd.FiniteVacationQueue(F(1, 2), PMF, qd.Deterministic(1), qd.Exponential(F(2, 3)), 3, A.WHOLE, P.SINGLE),
     ("0", "1/2", "1", "5/2", "6")),
    # no vacations (atoms of the idle server's batches at the lattice points)
    (qd.FiniteVacationQueue(F(6, 5), PMF, qd.Deterministic(F(1, 2)), None, 4), ("0", "1/2", "3/4", "3/2")),
    # constant single vacations d = 3/2 (pieces cut at d: the residual d - x), partial admission
    (qd.FiniteVacationQueue(F(1, 2), qd.Constant(1), qd.Deterministic(1), qd.Deterministic(F(3, 2)), 2, A.PARTIAL,
                            P.SINGLE), ("0", "1/4", "2", "11/4")),
]


@pytest.mark.parametrize("model, ts", CASES, ids=["partial-multiple", "whole-single", "none", "constant-vacation"])
def test_tails_match_an_independent_40_digit_computation(model, ts):
    times = [F(t) for t in ts]
    want = _vacation_oracle(model, times)
    got = model.evaluate(30, wait_tail=list(ts)).response["wait_tail"]
    for t, w in zip(ts, want):
        assert _rel(got[t], w) < mpmath.mpf(10) ** -29, (t, got[t], w)


def _hysteretic_oracle(model, ts):
    def after(level, mode):  # the count before the departure is level + 1; the model's own switching rule
        j, mode2 = model.next_state(level + 1, mode)
        return ("S", j - 1, mode2) if j else ("I",)

    rates = {0: model.rate, 1: model.rate1, 2: 0}
    pmf = {k: model.batch.pmf(k) for k in range(1, model.R + 2) if model.batch.pmf(k)}
    return _oracle(model.R - 1, False, pmf, model.service.mean, rates, after, None, False, ts)


def test_hysteretic_tails_match_the_independent_computation_per_mode():
    model = qd.HystereticModel.from_load(F(3, 2), service=qd.Deterministic(1), batch=PMF, L=2, H=3, R=5)
    ts = ("0", "1/2", "5/2", "4")
    want = _hysteretic_oracle(model, [F(t) for t in ts])
    r = model.evaluate(30, wait_tail=list(ts), sojourn_tail=["7/2"])
    for t, w in zip(ts, want):
        assert _rel(r.response["wait_tail"][t], w) < mpmath.mpf(10) ** -29, t
    # the sojourn W + D: P(W + D > 7/2) = P(W > 5/2)
    assert _rel(r.response["sojourn_tail"]["7/2"], want[2]) < mpmath.mpf(10) ** -29


def test_against_the_simulators_99_percent_intervals():
    from qderive.numeric.simulation.hysteretic import simulate as simulate_hysteretic
    from qderive.numeric.simulation.vacation import simulate as simulate_vacation

    model = qd.FiniteVacationQueue(F(9, 10), PMF, qd.Deterministic(1), qd.Exponential(F(1, 2)), 6, A.WHOLE)
    exact = model.evaluate(wait_tail=["5/2"]).response["wait_tail"]["5/2"]
    sim = simulate_vacation(model, 12_000, 6, seed=7, quiet=True, wait_tail=(2.5,))
    lo, hi = sim["wait_tail"][2.5].interval(0.99)  # a seeded run: about 1 % chance to miss
    assert lo <= exact <= hi, (lo, exact, hi)
    model = qd.HystereticModel.from_load(F(3, 2), service=qd.Deterministic(1), batch=PMF, L=2, H=4, R=7)
    exact = model.evaluate(sojourn_tail=["6.5"]).response["sojourn_tail"]["6.5"]
    sim = simulate_hysteretic(model, 12_000, 6, seed=5, quiet=True, sojourn_tail=(6.5,))
    lo, hi = sim["sojourn_tail"][6.5].interval(0.99)
    assert lo <= exact <= hi, (lo, exact, hi)


@pytest.mark.parametrize("model", [
    qd.FiniteVacationQueue(F(3, 4), PMF, qd.Deterministic(1), qd.Exponential(F(1, 2)), 4),
    qd.FiniteVacationQueue(F(3, 2), PMF, qd.Deterministic(1), None, 4, A.WHOLE),
], ids=["exp-vacations", "none-whole"])
def test_the_integral_of_the_tail_is_the_mean_of_wait_moments(model):
    # the tail is analytic between the kinks k D; beyond r D only the exponential residual vacation remains:
    # P(W > t) = P(W > r D) e^{-theta (t - r D)}, whose integral is P(W > r D) / theta (0 without vacations)
    r, n = model.capacity, 8
    x, w = np.polynomial.legendre.leggauss(n)
    nodes = [F(k) + F((xi + 1) / 2) for k in range(r) for xi in x]
    ts = [str(v) for v in nodes] + [str(r)]
    res = model.evaluate(wait_tail=ts, wait_moments=1)
    tails = [res.response["wait_tail"][t] for t in ts]
    integral = sum(wi / 2 * tails[k * n + i] for k in range(r) for i, wi in enumerate(w))
    if model.vacation is not None:
        integral += tails[-1] * float(model.vacation.mean)
    else:
        assert tails[-1] == 0  # W <= r D exactly
    assert integral == pytest.approx(float(res.response["wait_moments"][0]), rel=1e-12)


def test_the_sums_total_is_the_transforms_n0_and_float64_agrees_with_30_digits():
    # low load, r = 30, tails from 0.7 down to 1e-23: float64 keeps 1e-10 (or escalates with a note)
    model = qd.FiniteVacationQueue(F(1, 4), qd.Geometric(2), qd.Deterministic(1), qd.HyperExponential(
        (F(1, 3), F(2, 3)), (F(1, 4), F(1, 2))), 30, A.PARTIAL, P.SINGLE)
    ts = ["1/3", "5/2", "27/2", "29.75", "45"]
    r64 = model.evaluate(wait_tail=ts, sojourn_quantile=["0.99"])
    r30 = model.evaluate(30, wait_tail=ts, sojourn_quantile=["0.99"])
    for t in ts:
        assert _rel(r64.response["wait_tail"][t], r30.response["wait_tail"][t]) < 1e-10, t
    assert r30.response["wait_tail"]["45"] < 1e-20
    assert _rel(r64.response["sojourn_quantile"]["0.99"], r30.response["sojourn_quantile"]["0.99"]) < 1e-10
    law = wait_law_data(model)
    for ctx in (mp_context(30),):
        data = law.parts(ctx)[0]
        assert _rel(data.lattice.mass, data.N0) < mpmath.mpf(10) ** -40  # N(W > -1) = N(0) of item 3


@pytest.mark.parametrize("vacation", [qd.Exponential(1), qd.Erlang(2, 1)], ids=["exponential", "erlang-2"])
def test_large_room_at_low_load_is_the_infinite_rooms_lattice_sum(vacation):
    # the finite and the infinite room coincide on every busy cycle in which the infinite room never holds more
    # than r waiting; the tails differ by about the loss probability (measured: 0.13 to 1.33 times it here,
    # exponential; 0.14 to 1.33 times it, Erlang-2: the matrix pieces (F4) against the infinite room's (L5))
    kw = {"batch": PMF, "service": qd.Deterministic(F(1, 2)), "vacation": vacation}
    finite = qd.FiniteVacationQueue.from_load(F(1, 4), capacity=40, **kw)
    infinite = qd.VacationQueue.from_load(F(1, 4), **kw)
    ts = ["1/4", "2", "23/4"]
    a, b = finite.evaluate(25, wait_tail=ts), infinite.evaluate(25, wait_tail=ts)
    assert a.loss_probability < 1e-12
    for t in ts:
        assert abs(a.response["wait_tail"][t] - b.response["wait_tail"][t]) <= (
            10 * a.loss_probability + mpmath.mpf(10) ** -24 * b.response["wait_tail"][t]), t


def test_laws_without_exact_sums_stay_refused_with_the_reason():
    # (a gamma, lognormal or uniform vacation with a constant service has certified brackets since issue 28, (F7):
    # tests/test_wait_finite_vacation_laws.py; a gamma service of non-integer shape with a constant vacation has none)
    # (a constant vacation computes since branch sh26: tests/test_blocks_finite_shifts.py; a uniform one does not)
    model = qd.FiniteVacationQueue(F(3, 4), PMF, qd.Gamma(F(5, 2), F(1, 2)), qd.Uniform(F(1, 2), F(3, 2)), 3)
    with pytest.raises(ParameterError, match="--wait-tail.*service time gamma.*not phase-type"):
        model.evaluate(wait_tail=["1"])
    # (a uniform service has certified brackets since issue 28: tests/test_wait_lattice_finite_service.py)
    # (a lognormal service or vacation with a smooth other law is inverted since issue 28, branch lg28:
    # tests/test_finite_lognormal_inversion.py)
    assert lattice_setup(qd.Deterministic(2), qd.Deterministic(1))[0] == (2, ((1, 0, 1),))
    # a law stating its survival function by matrix-exponential (phase-type) pieces (w, theta, None, (alpha, P))
    # is accepted, with its exit vector 1 - P 1 exact
    phase_type = SimpleNamespace(survival_pieces=lambda: ((1, 2, None, ((1, 0), ((0, 1), (0, F(1, 3))))),))
    setup, why = lattice_setup(qd.Deterministic(2), phase_type)
    assert setup == (2, ((1, 2, None, ((1, 0), ((0, 1), (0, F(1, 3))), (0, F(2, 3)))),)) and why == ""


# -- Erlang (matrix-exponential) vacations: (F4) ---------------------------------------------------------------

ERLANG_CASES = [
    (qd.FiniteVacationQueue(F(3, 4), PMF, qd.Deterministic(1), qd.Erlang(2, F(2)), 3), ("1/3", "7/2", "9")),
    (qd.FiniteVacationQueue(F(1, 2), PMF, qd.Deterministic(1), qd.Erlang(2, F(3, 2)), 4, A.WHOLE, P.SINGLE),
     ("0", "5/2", "6")),
    (qd.FiniteVacationQueue(F(1, 2), PMF, qd.Deterministic(1), qd.Erlang(2, F(3, 2)), 5, A.PARTIAL, P.SINGLE),
     ("1/4", "4.5", "12")),
]


@pytest.mark.parametrize("model, ts", ERLANG_CASES, ids=["r3-partial-multiple", "r4-whole-single", "r5-partial-single"])
def test_erlang_vacation_tails_match_the_independent_computation(model, ts):
    # the reference at 30 digits (measured: within 1e-30 of the 40-digit one); 30 asked digits checked to 1e-25
    want = _vacation_oracle(model, [F(t) for t in ts], dps=30)
    got = model.evaluate(30, wait_tail=list(ts)).response["wait_tail"]
    for t, w in zip(ts, want):
        assert _rel(got[t], w) < mpmath.mpf(10) ** -25, (t, got[t], w)


def test_erlang_vacations_integral_of_the_tail_float64_and_30_digits():
    # Erlang-2 vacations, r = 4. Between the kinks k D the tail is analytic (Gauss-Legendre, 8 nodes per cell);
    # beyond r D only the vacations' residuals remain: P(W > t) = e^{-theta t} (a + b t) (Erlang-2), integrated
    # exactly by Gauss-Laguerre with 3 nodes. The integral is E W by wait_moments (the transform: another
    # computation); float64 against 30 digits at tails from 0.9 down to 1e-13 (float64 promises 1e-10 or a note)
    model = qd.FiniteVacationQueue(F(3, 4), PMF, qd.Deterministic(1), qd.Erlang(2, F(2)), 4)
    theta, r, n = 1, 4, 8
    x, w = np.polynomial.legendre.leggauss(n)
    xl, wl = np.polynomial.laguerre.laggauss(3)
    nodes = [F(k) + F((xi + 1) / 2) for k in range(r) for xi in x] + [r + F(v / theta) for v in xl]
    ts = [str(v) for v in nodes]
    res = model.evaluate(wait_tail=ts, wait_moments=1)
    tails = [res.response["wait_tail"][t] for t in ts]
    integral = sum(wi / 2 * tails[k * n + i] for k in range(r) for i, wi in enumerate(w))
    integral += sum(wi * np.exp(v) / theta * tails[r * n + i] for i, (v, wi) in enumerate(zip(xl, wl)))
    assert integral == pytest.approx(float(res.response["wait_moments"][0]), rel=1e-12)
    deep = ["1/2", "3", "7/2", "40"]
    r64, r30 = model.evaluate(wait_tail=deep), model.evaluate(30, wait_tail=deep)
    for t in deep:
        assert _rel(r64.response["wait_tail"][t], r30.response["wait_tail"][t]) < 1e-10, t
    assert r30.response["wait_tail"]["40"] < 1e-12


@pytest.mark.slow
def test_r_200_tails_to_1e_minus_10_against_the_independent_computation():
    # issue 13's target (about 4 s of CPU: the 40-digit reference 2.2 s, the engine at 30 digits 1.5 s): r = 200
    # in overload (rho_bar = 1.575), tails from 1 - 3e-11 down to 0.2 near r D; float64 within 1e-10, 30 digits
    # within 1e-29
    model = qd.FiniteVacationQueue(F(9, 10), PMF, qd.Deterministic(1), qd.Exponential(F(1, 2)), 200)
    ts = ["150", "199.5"]
    want = _vacation_oracle(model, [F(t) for t in ts])
    r64, r30 = model.evaluate(wait_tail=ts), model.evaluate(30, wait_tail=ts)
    for t, w in zip(ts, want):
        assert _rel(r64.response["wait_tail"][t], w) < 1e-10, t
        assert _rel(r30.response["wait_tail"][t], w) < mpmath.mpf(10) ** -29, t


def test_a_coxian_vacation_by_its_matrix_piece_is_the_same_law_by_exponential_pieces():
    # Coxian(3, 1; p = 1/3) has P(T > x) = e^{-3x} / 2 + e^{-x} / 2: the hyperexponential (1/2, 1/2) with means
    # (1/3, 1). As a matrix piece (theta = 3, P = [[0, 1/3], [0, 2/3]]: not nilpotent, so the product for
    # (I - q P)^{-1} and the uniformized series are truncated by their bounds) against the exponential pieces (F3)
    cox, hyp = qd.Coxian((3, 1), (F(1, 3),)), qd.HyperExponential((F(1, 2), F(1, 2)), (F(1, 3), 1))
    assert cox.survival_pieces()[0][3][1] == ((0, F(1, 3)), (0, F(2, 3)))
    ts = ["1/3", "5/2", "15/4", "30"]
    for digits, tol in ((None, 1e-13), (30, mpmath.mpf(10) ** -28)):
        a, b = (qd.FiniteVacationQueue(F(3, 4), PMF, qd.Deterministic(1), v, 4).evaluate(
            digits, wait_tail=ts).response["wait_tail"] for v in (cox, hyp))
        for t in ts:
            assert _rel(a[t], b[t]) < tol, (digits, t, a[t], b[t])
    assert b["30"] < 1e-8


def test_many_phases_keep_float64():
    # Erlang-30: G_K spreads over 13 orders of magnitude across the phases, but P is nilpotent (beta's series is
    # finite): float64 keeps its bound (no escalation note) and agrees with 20 digits
    model = qd.FiniteVacationQueue(F(3, 10), qd.Geometric(2), qd.Deterministic(1), qd.Erlang(30, 5), 10)
    ts = ["1/2", "7", "40"]
    r64, r20 = model.evaluate(wait_tail=ts), model.evaluate(20, wait_tail=ts)
    assert not any("wait_tail" in note for note in r64.notes), r64.notes
    for t in ts:
        assert _rel(r64.response["wait_tail"][t], r20.response["wait_tail"][t]) < 1e-11, t
