"""Tails of the wait and the sojourn in the finite room for a service on a lattice or rounded to one (issue 28 item 1;
:mod:`qderive.numeric.kernels.lattice_finite` (F5), ``numeric/engines/vacation_finite_wait.py``
``service_lattice_tails``), each against something computed another way:

* an independent 30-digit computation written here (:func:`_oracle`) for a service of a few atoms: the embedded
  chain at the starts of services, vacations and idle periods, solved by ``mpmath.lu_solve``; the level process
  batch by batch; the j services ahead as the exact law of a sum of atoms (dicts of Fractions); the expected count
  of a period's admitted customers with W > t integrated over the elapsed time in closed form (regularized
  incomplete gamma functions by ``mpmath.gammainc`` between the kinks of the residual, geometric sums for an
  exponential vacation). No admission matrix, no lattice convolution, no residual weights (F3) are shared;
* the exact value of a law of three atoms moved off the lattice (the oracle again) inside the certified brackets,
  which shrink as h halves;
* a seeded simulation's 99 % interval for an empirical sample off every coarse lattice and for a uniform service;
* the quantile note's roots against the bounds themselves, and the lognormal vacation's refusal from the laws alone;
* a lognormal service (capped at the lattice's span, (F6)) against a seeded simulation's 99 % interval.
"""

from __future__ import annotations

import time
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from bracket_checks import assert_brackets_overlap_the_simulation
from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.response import _bracket_quantile_note
from qderive.numeric.simulation.vacation import simulate
from qderive.symbolic.laws.empirical import Empirical
from qderive.symbolic.limits import limits

P, A = qd.VacationPolicy, qd.Admission
PMF = qd.FinitePMF((F(1, 2), F(1, 4), F(1, 4)))


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


def _oracle(model, atoms, ts, dps=30):
    """P(W > t) (and the sojourn's, as a second list) of an admitted customer for a service with the ``atoms``
    {value: probability} (Fractions), exponential or no vacations, either admission rule and vacation policy."""
    r, whole = model.capacity, model.admission is A.WHOLE
    single = model.vacation is not None and model.vacation_policy is P.SINGLE
    with mpmath.workdps(dps):
        lam = _mp(F(model.rate))
        th = None if model.vacation is None else 1 / _mp(F(model.vacation.mean))
        l = {k: _mp(F(model.batch.pmf(k))) for k in range(1, r + 3) if model.batch.pmf(k)}
        tiny = mpmath.mpf(10) ** -(dps + 5)

        def move(n, k):  # (level after a batch of k at level n, its admitted customers)
            if whole:
                return (n + k, k) if n + k <= r else (n, 0)
            return min(n + k, r), min(k, r - n)

        sums = [{F(0): F(1)}]  # the exact law of S_j, j = 0..r + 2
        for _ in range(r + 2):
            nxt = {}
            for s, p in sums[-1].items():
                for d, q in atoms.items():
                    nxt[s + d] = nxt.get(s + d, 0) + p * q
            sums.append(nxt)

        def exceed(j, y, t):  # P(y + S_j > t)
            return mpmath.fsum(_mp(p) for s, p in sums[j].items() if y + _mp(s) > t)

        def counts(f):  # per level n: sum over a batch's admitted customers of f(j), j = n + m - 1 ahead
            return [mpmath.fsum(lk * mpmath.fsum(f(n + m - 1) for m in range(1, move(n, k)[1] + 1))
                                for k, lk in l.items()) for n in range(r + 1)]

        def rows(start, K):
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

        def service(start, d, ts_, extra):
            """(end-level law, [N(T > t) for t]) of a service of length d from the level law ``start``."""
            d = _mp(d)
            top = next(K for K in range(10**4) if K > 2 * lam * d and mpmath.exp(-lam * d) * (lam * d) ** K
                       / mpmath.factorial(K) < tiny)
            R = rows(start, top)
            ends = {}
            for K, row in enumerate(R):
                w = mpmath.exp(-lam * d) * (lam * d) ** K / mpmath.factorial(K)
                for m, p in row.items():
                    ends[m] = ends.get(m, 0) + w * p
            out = []
            for t in ts_:
                kinks = {_mp(0), d}
                for j in range(r + 2):
                    for s in sums[j]:
                        x = d - (t - _mp(s))  # the elapsed time where the residual d - x crosses t - s
                        if 0 < x < d:
                            kinks.add(x)
                cuts = sorted(kinks)
                total = 0
                for a, b in zip(cuts, cuts[1:]):
                    y = d - (a + b) / 2
                    c = counts(lambda j: exceed(j + extra, y, t))
                    for K, row in enumerate(R):
                        coef = mpmath.fsum(p * c[m] for m, p in row.items())
                        if coef:  # lam int_a^b (lam x)^K / K! e^{-lam x} dx
                            total += coef * mpmath.gammainc(K + 1, lam * a, lam * b, regularized=True)
                out.append(total)
            return ends, out

        def vacation(start, ts_, extra):  # an exponential vacation: K batches geometric, the residual Exp(theta)
            q = lam / (lam + th)
            top = next(K for K in range(10**5) if q**K < tiny)
            R = rows(start, top)
            ends = {}
            for K, row in enumerate(R):
                for m, p in row.items():
                    ends[m] = ends.get(m, 0) + (1 - q) * q**K * p
            out = []
            for t in ts_:  # P(residual + S_j > t) = E exp(-theta (t - S_j)^+)
                c = counts(lambda j: mpmath.fsum(_mp(p) * mpmath.exp(-th * max(t - _mp(s), 0))
                                                 for s, p in sums[j + extra].items()))
                # lam int (lam x)^K / K! e^{-(lam + theta) x} dx = q^(K + 1)
                out.append(mpmath.fsum(q ** (K + 1) * mpmath.fsum(p * c[m] for m, p in row.items())
                                       for K, row in enumerate(R)))
            return ends, out

        states = [("S", n) for n in range(r + 1)] + ([("V",)] if th else []) + [("I",)]
        index = {s: i for i, s in enumerate(states)}
        T = mpmath.zeros(len(states))
        after = lambda m: ("S", m - 1) if m else (("V",) if th else ("I",))  # noqa: E731
        for st in states:
            i = index[st]
            if st[0] == "S":
                for d, p in atoms.items():
                    for m, w in service({st[1]: mpmath.mpf(1)}, d, [], 0)[0].items():
                        T[i, index[after(m)]] += _mp(p) * w
            elif st[0] == "V":
                for m, w in vacation({0: mpmath.mpf(1)}, [], 0)[0].items():
                    T[i, index[("S", m - 1) if m else (("I",) if single else ("V",))]] += w
            else:
                fit = mpmath.fsum(lk for k, lk in l.items() if not whole or k <= r + 1)
                for k, lk in l.items():
                    if not whole or k <= r + 1:
                        T[i, index[("S", min(k, r + 1) - 1)]] += lk / fit
        n = len(states)
        M = T.T - mpmath.eye(n)
        for j in range(n):
            M[n - 1, j] = 1
        rhs = mpmath.zeros(n, 1)
        rhs[n - 1] = 1
        pi = mpmath.lu_solve(M, rhs)
        result = []
        for extra in (0, 1):
            points = [mpmath.mpf(-1), *map(_mp, ts)]
            total = [mpmath.mpf(0)] * len(points)
            start = {st[1]: pi[index[st]] for st in states if st[0] == "S"}
            for d, p in atoms.items():
                total = [a + _mp(p) * b for a, b in zip(total, service(start, d, points, extra)[1])]
            if th:
                total = [a + b for a, b in zip(total, vacation({0: pi[index[("V",)]]}, points, extra)[1])]
            fit = mpmath.fsum(lk for k, lk in l.items() if not whole or k <= r + 1)
            for i, t in enumerate(points):  # the idle server's batch: its m-th customer waits S_{m-1}
                total[i] += pi[index[("I",)]] * mpmath.fsum(
                    lk / fit * mpmath.fsum(exceed(m - 1 + extra, 0, t) for m in range(1, min(k, r + 1) + 1))
                    for k, lk in l.items() if not whole or k <= r + 1)
            result.append([v / total[0] for v in total[1:]])
        return result


ATOMS = {F(1, 2): F(1, 2), F(1): F(1, 4), F(3, 2): F(1, 4)}


def _service(atoms):
    values = []
    for d, p in atoms.items():  # an empirical law: each value repeated by its weight (all weights k / 4)
        values += [d] * int(p * 4)
    return Empirical(tuple(values))


CASES = [
    (qd.FiniteVacationQueue(F(3, 4), PMF, _service(ATOMS), qd.Exponential(F(2)), 3), ("0", "1/3", "2", "7/2", "6")),
    (qd.FiniteVacationQueue(F(1, 2), PMF, _service(ATOMS), qd.Exponential(F(3, 2)), 3, A.WHOLE, P.SINGLE),
     ("1/2", "1", "5/2", "5")),
    (qd.FiniteVacationQueue(F(6, 5), PMF, _service(ATOMS), None, 2), ("0", "1/2", "3/4", "3")),
]


@pytest.mark.parametrize("model,ts", CASES)
def test_exact_lattice_service_against_the_independent_chain(model, ts):
    wait, sojourn = _oracle(model, ATOMS, [F(t) for t in ts])
    laws = response_laws(model)
    assert laws["wait"].bracket is None  # on the lattice 1/2: the exact sums, no bracket
    got = laws["wait"].tails([F(t) for t in ts], None)[0]
    got_s = laws["sojourn"].tails([F(t) for t in ts], None)[0]
    for t, a, b, c, d in zip(ts, got, wait, got_s, sojourn):
        # float64 keeps a tail whose error bound is below 1e-10 of it (the policy): 1e-10 relative
        assert abs(a - float(b)) <= 1e-10 * float(b), (t, a, b)
        assert abs(c - float(d)) <= 1e-10 * float(d), (t, c, d)
    digits = laws["wait"].tails([F(t) for t in ts], 20)[0]  # 20 digits asked: 10^-19 against 30-digit references
    for t, a, b in zip(ts, digits, wait):
        assert abs(a - b) <= mpmath.mpf(10) ** -19 * b, (t, a, b)


def test_brackets_of_a_law_off_the_lattice_hold_the_exact_value_and_shrink():
    # the atoms moved off every coarse lattice (the gcd of the values is 1 / (2 * 7919 * 7907)): certified bounds
    atoms = {F(1, 2) + F(1, 7919): F(1, 2), F(1): F(1, 4), F(3, 2) - F(1, 7907): F(1, 4)}
    model = qd.FiniteVacationQueue(F(3, 4), PMF, _service(atoms), qd.Exponential(F(2)), 3)
    ts = [F(1, 3), F(2), F(7, 2)]
    wait, sojourn = _oracle(model, atoms, ts)
    widths = []
    for levels in (512, 1024, 2048):
        with limits(lattice_levels=levels):
            laws = response_laws(model)
            for kind, exact in (("wait", wait), ("sojourn", sojourn)):
                values = laws[kind].tails(ts, None)[0]
                for t, v, e in zip(ts, values, exact):
                    lo, hi, n = laws[kind].bracket(t)
                    assert n == levels and lo <= v <= hi
                    # the bounds hold the exact value (1e-13: the reference's last digits where it is 1, the sojourn
                    # below the shortest service; the bounds' own rounding bound is inside them)
                    assert lo - 1e-13 <= e <= hi + 1e-13, (kind, levels, t, lo, e, hi)
                    widths.append((kind, t, levels, hi - lo))
    for kind in ("wait", "sojourn"):
        for t in ts:
            w = [x for k, s, _, x in widths if k == kind and s == t]
            if w[0] < 1e-9:  # P = 1 exactly (the sojourn at t below the shortest service): nothing to shrink
                continue
            # the width is first order in h: it shrinks at each halving of h, and two halvings take it below half
            # (about a quarter; the lattice's phase against t and the atoms makes single steps irregular)
            assert w[2] < w[1] < w[0] and w[2] <= 0.5 * w[0], (kind, t, w)


def _sample():
    return Empirical(tuple(F(int(v * 10**6), 10**6) + F(1, 10**7) for v in
                           np.random.default_rng(3).lognormal(np.log(0.2), 0.6, 200)))  # off every coarse lattice


@pytest.mark.parametrize("service,admission,policy", [
    (_sample(), A.PARTIAL, P.MULTIPLE),
    (qd.Uniform(F(1, 10), F(2, 5)), A.WHOLE, P.SINGLE),  # a density: rounded to the lattice by its cdf
])
def test_bracket_overlaps_the_simulation(service, admission, policy):
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=service,
                                             vacation=qd.Exponential(F(1, 2)), capacity=8, admission=admission,
                                             vacation_policy=policy)
    laws = response_laws(model)
    ts = ["1/2", "2"]
    with limits(lattice_levels=2048):
        got = laws["wait"].tails([F(t) for t in ts], None)[0]
        brackets = [laws["wait"].bracket(F(t)) for t in ts]
    sim = simulate(model, 40_000, 8, seed=11, quiet=True, wait_tail=ts)
    for t, v, (lo, hi, _) in zip(ts, got, brackets):
        a, b = sim["wait_tail"][t].interval(0.99)
        # the certified bracket and the simulation's 99 % interval (8 replications of 40 000) overlap
        assert lo <= v <= hi and a <= hi and lo <= b, (t, lo, hi, a, b)


def test_lognormal_service_with_a_uniform_vacation_is_bracketed_decided_from_the_laws_in_under_a_second():
    # a lognormal vacation has certified brackets with a uniform service since (F7) (tests/test_wait_finite_vacation_
    # laws.py), a lognormal law is inverted with a smooth other law (tests/test_finite_lognormal_inversion.py), and a
    # lognormal service with a uniform vacation (kinks, no exact pieces) has the brackets (F7) of the capped service
    model = qd.FiniteVacationQueue.from_load(F(1, 2), batch=PMF, service=qd.LogNormal(F(15, 1000), 2),
                                             vacation=qd.Uniform(F(3, 100), F(9, 100)), capacity=20)
    start = time.perf_counter()
    refusal = response_laws.supports(model, frozenset({"wait_tail"}))
    assert time.perf_counter() - start < 1.0
    assert refusal is None
    law = response_laws(model)["wait"]
    assert not law.smooth and law.bracket is not None


@pytest.mark.slow  # about 4 s: the lognormal's count sequences (the state at the arrival) and two lattices
def test_lognormal_service_bracket_overlaps_the_simulation():
    # (F6): the service capped at the lattice's span, the upper bound with E (B - c)^+ for the residuals beyond it;
    # a constant vacation (kinks: no inversion; with a smooth vacation the transform is inverted instead,
    # tests/test_finite_lognormal_inversion.py)
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.LogNormal(F(1, 5), 2),
                                             vacation=qd.Deterministic(F(1, 2)), capacity=8)
    # the bracket is about 1 % wide at 2048 levels
    assert_brackets_overlap_the_simulation(model, 2048)


def test_the_quantile_note_gives_the_roots_of_the_bounds():
    atoms = {F(1, 2) + F(1, 7919): F(1, 2), F(1): F(1, 4), F(3, 2) - F(1, 7907): F(1, 4)}
    model = qd.FiniteVacationQueue(F(3, 4), PMF, _service(atoms), qd.Exponential(F(2)), 3)
    with limits(lattice_levels=1024):
        q = model.evaluate(wait_quantile=["0.9"]).response["wait_quantile"]["0.9"]
        law = response_laws(model)["wait"]
        law.tails([F(2 * q)], None)  # one lattice (over [0, 8]) for the note and the checks below
        note = _bracket_quantile_note(law, F(1, 10), q, "wait_quantile", "0.9")
        a, b = (float(x) for x in note.split("is between ")[1].split(" (")[0].split(" and "))
        # the quantiles of the lower and the upper bound hold the value; each bound crosses the level 0.1 there
        # (it may jump: the idle server's customers wait exactly S_j, atoms of the lattice; 1e-7 relative on each
        # side: the note prints 8 digits)
        assert a <= q <= b
        for t, side in ((a, 0), (b, 1)):
            assert law.bracket(F(t * (1 - 1e-7)))[side] > 0.1 >= law.bracket(F(t * (1 + 1e-7)))[side], (t, side)


def test_the_capped_roundings_are_laws_that_bracket_the_capped_service():
    """(F6): the lognormal capped at c = N h and rounded down / up to the lattice h is a law (total mass 1) with
    B_down <= min(B, c) <= B_up pathwise, so P(B_down <= k h) >= P(min(B, c) <= k h) >= P(B_up <= k h) at every
    level; the cdf P(B <= k h) here by mpmath's lognormal at 30 digits, not the law's survival_many. (The upper
    law once dropped P(c - h < B < c): its mass was 1 - that, and the certified upper bound could fall short.)"""
    from qderive.numeric.engines.vacation_finite_wait import capped_rounding

    law = qd.LogNormal(F(12, 1000), F(2))
    h, N = F(1, 500), 40  # c = 0.08: P(B > c) = 1.6e-2, P(c - h < B < c) = 4.8e-4
    down, up = capped_rounding(law)(h, N)
    assert abs(down.sum() - 1) < 1e-14 and abs(up.sum() - 1) < 1e-14  # float64 differences of a survival function
    with mpmath.workdps(30):
        scv, mean = mpmath.mpf(2), mpmath.mpf(12) / 1000
        sigma2 = mpmath.log(1 + scv)
        mu = mpmath.log(mean) - sigma2 / 2
        cdf = [mpmath.ncdf((mpmath.log(k * mpmath.mpf(h.numerator) / h.denominator) - mu) / mpmath.sqrt(sigma2))
               if k else mpmath.mpf(0) for k in range(N + 1)]
    for k in range(N):  # at the cap both laws hold everything (min(B, c) <= c)
        true = float(cdf[k])
        assert np.sum(down[: k + 1]) >= true - 1e-14 >= np.sum(up[: k + 1]) - 2e-14, k


def test_a_span_below_the_shortest_service_keeps_every_customer_ahead():
    # t alone: the lattice spans [0, 1/2] (9/8 t <= 1/2), below the shortest service 1/2 + 1/7919, so every sum of
    # j >= 1 services lies past the lattice, P(S_j > M h) = 1. The powers once stopped at the first that was 0
    # below M h and left P(S_j > M h) = 0 for the later j: the customers with 2 or more ahead were not counted
    # (P(W > 1/3) fell inside neither bound)
    atoms = {F(1, 2) + F(1, 7919): F(1, 2), F(1): F(1, 4), F(3, 2) - F(1, 7907): F(1, 4)}
    model = qd.FiniteVacationQueue(F(3, 4), PMF, _service(atoms), qd.Exponential(F(2)), 3)
    t = F(1, 3)
    (wait,), (sojourn,) = _oracle(model, atoms, [t])
    with limits(lattice_levels=512):
        for kind, exact in (("wait", wait), ("sojourn", sojourn)):
            law = response_laws(model)[kind]
            value = law.tails([t], None)[0][0]
            lo, hi, _ = law.bracket(t)
            # the bounds hold the exact value (1e-13: as in the test above)
            assert lo - 1e-13 <= exact <= hi + 1e-13 and lo <= value <= hi, (kind, lo, exact, hi)


def _empirical_model():
    return qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=_sample(),
                                            vacation=qd.Exponential(F(1, 2)), capacity=8)


def _lognormal_model():
    # scv 1: the count sequences of the state in 0.3 s (scv 2 here: 5 s); a constant vacation keeps the capped
    # brackets (F6) (with a smooth one the transform is inverted: tests/test_finite_lognormal_inversion.py)
    return qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.LogNormal(F(12, 1000), 1),
                                            vacation=qd.Deterministic(F(6, 100)), capacity=8)


@pytest.mark.parametrize("make", [_empirical_model, _lognormal_model])
def test_the_quantile_search_agrees_with_the_tails_at_its_ends(make):
    """The 0.9 quantile q of the value and the quantiles q_lo, q_hi of the certified lower and upper bounds (the
    search reuses the lattice sums' tables from point to point, (F8) of the kernel) against the tails computed
    alone: a new law object per point (every table built for that point only), the same lattice (1024 levels
    over the same span). P(W > t) >= its lower bound = 0.1 at q_lo and <= its upper bound = 0.1 at q_hi, so the
    true quantile lies in [q_lo, q_hi]; each of the three functions crosses 0.1 within 1e-9 of its root."""
    from qderive.numeric.engines.vacation_finite_wait import wait_law_data
    from qderive.numeric.engines.vacation_wait import bracket_span
    from qderive.numeric.response import bracket_quantiles, quantiles

    model = make()
    level = F(1, 10)
    state = wait_law_data(model)  # the state at the arrival (count sequences), shared; the lattice sums are not
    with limits(lattice_levels=1024):
        law = response_laws(model, state)["wait"]
        (q,), _, _ = quantiles(law, ["0.9"], None, float(model.evaluate().mean_wait))
        lo, hi = bracket_quantiles(law, level, q)
        assert lo <= q <= hi
        d = 1e-9  # the roots: the value's to 1e-13 in log t, the bounds' to 1e-10 (the note prints 8 digits)
        points = [(x * (1 - d), x * (1 + d), side) for x, side in ((lo, 0), (q, None), (hi, 1))]
        spans = {bracket_span(model, F(t)) for below, above, _ in points for t in (below, above)}
        assert len(spans) == 1  # one lattice for every point (and for the search, whose points lie between)

        def alone(t, side):
            fresh = response_laws(model, state)["wait"]  # new lattices and tables for this point alone
            value = fresh.tails([F(t)], None)[0][0]
            return value if side is None else fresh.bracket(F(t))[side]

        for below, above, side in points:
            assert alone(below, side) > level >= alone(above, side), (side, below, above)
