"""Hysteretic overload control M^[X]|G|1|(L,H)|(H,R) (Sopin 2013 ch. 3) against independent oracles.

Oracles built in this file from the model definition, sharing no code with
``qderive.numeric.hysteretic``:

* deterministic service: the embedded chain at departures, built state by state from the
  switching rules, with the arrival counts a_n from Panjer's recursion for the compound
  Poisson law (not the convolution sums of ``numeric.sequences``); stationary law by GTH
  (``numeric.chains.stationary_gth``), first-passage times and exit laws by mpmath LU, all at
  100 digits;
* exponential service: the CTMC of the continuous-time process over (count, mode in force),
  built from the rules (no embedded chain, no (17)); GTH and first passage at 100 digits.

Tolerances: the module promises D stable digits at ``digits=D`` (its working precision is
D + 10 or more), the oracles run at 100 digits on well-conditioned chains (kappa < 1e6 at these
small thresholds), so 50-digit results must agree to 48 digits (two digits for the rounding of
the last place and the LU of the oracle). float64 results must agree to 1e-10 relative (the
issue's bound; the measured error is ~1e-14).
"""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import lru_cache

import mpmath
import pytest
import sympy as sp

from qderive.derivations.cli import main
from qderive.numeric import hysteretic as nh
from qderive.numeric import hysteretic_optimize as ho
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.chains import stationary_gth
from qderive.numeric.skipfree import solve_hessenberg_mmatrix, stationary_gth_sparse
from qderive.symbolic._exact import ParameterError
from qderive.symbolic.batches import Constant, FinitePMF, Geometric, ShiftedPoisson
from qderive.symbolic.laws import Deterministic, Exponential

ORACLE_DPS = 100
B1 = Fraction(1, 200)  # 5 ms, the thesis's service time
THRESHOLDS = (4, 8, 13)
LOADS = (Fraction(9, 10), Fraction(1), Fraction(3, 2), Fraction(2))

# batch laws as the oracle sees them: name -> (law object for the module, pmf for the oracle)
BATCHES = {
    "geometric": (Geometric(2), lambda i: mpmath.mpf(2) ** (-i)),  # l_i = 0.5^i, i >= 1 (Figure 3)
    "single": (Constant(1), lambda i: mpmath.mpf(1 if i == 1 else 0)),  # ordinary arrivals (section 3.1)
}
MEASURES = nh.MEASURE_KEYS


def rel(a, b):
    """|a - b| / |b| computed exactly (8000 bits): mpf(x) at the default 53 bits would round the inputs.

    Strings (JSON/CSV/guide values) are converted at that precision too, so pass them unconverted.
    """
    with mpmath.workprec(8000):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return abs(a - b) / abs(b)


def switch(s, n_minus, L, H, R, convention="event"):
    """The switching rule at a departure, written from the model description (spec/chapter3.md section 1)."""
    j = n_minus - 1
    if s == 2:
        return (j, 1) if j <= H else (j, 2)
    if n_minus >= R:
        return (R - 1, 2)
    if s == 0:
        over = n_minus >= H if convention == "event" else j >= H
        return (j, 1) if over else (j, 0)
    return (j, 0) if j <= L - 1 else (j, 1)


def _solve_rest(P, rest, rhs_columns):
    """x = (I - P_rest)^{-1} rhs for each column, by mpmath LU (the oracle's linear algebra)."""
    n = len(rest)
    M = mpmath.matrix(n, n)
    for a, i in enumerate(rest):
        for b, k in enumerate(rest):
            M[a, b] = (1 if a == b else 0) - P[i][k]
    out = []
    for col in rhs_columns:
        rhs = mpmath.matrix([col[i] for i in rest])
        out.append(mpmath.lu_solve(M, rhs))
    return out


def first_passage(P, states, inside, costs, start):
    """(mean cost until leaving ``inside`` from ``start``, exit law, mean cost from each outside state back)."""
    idx = {s: k for k, s in enumerate(states)}
    ins = [idx[s] for s in states if s in inside]
    out = [idx[s] for s in states if s not in inside]
    a = ins.index(idx[start])
    (h,) = _solve_rest(P, ins, [costs])
    exit_cols = [[P[i][x] for i in range(len(states))] for x in out]
    exits = {x: sol[a] for x, sol in zip(out, _solve_rest(P, ins, exit_cols))}
    (back,) = _solve_rest(P, out, [costs])
    back_of = {x: back[b] for b, x in enumerate(out)}
    return h[a], exits, back_of


@lru_cache(maxsize=None)
def det_oracle(batch_name, load, L=4, H=8, R=13, convention="event", factor=Fraction(1, 2)):
    """The embedded chain for deterministic service b = 5 ms, solved at 100 digits."""
    law, l = BATCHES[batch_name]
    with mpmath.workdps(ORACLE_DPS):
        b = mpmath.mpf(B1.numerator) / B1.denominator
        l1 = mpmath.mpf(law.mean)
        lam0 = mpmath.mpf(load.numerator) / load.denominator / (l1 * b)
        lam = {0: lam0, 1: lam0 * factor.numerator / factor.denominator}
        a = {}
        for s, rate in lam.items():  # Panjer: f_0 = e^{-Lambda}, f_n = Lambda/n sum_i i l_i f_{n-i}
            Lam = rate * b
            f = [mpmath.exp(-Lam)]
            for n in range(1, R + 1):
                f.append(Lam / n * mpmath.fsum(i * l(i) * f[n - i] for i in range(1, n + 1)))
            a[s] = f
        first = {c: l(c) for c in range(1, R)}
        first[R] = 1 - mpmath.fsum(first.values())

        def departure_law(i, s):
            if s == 2:
                return {i: mpmath.mpf(1)}
            starts = {i: mpmath.mpf(1)} if i >= 1 else first
            law_ = {}
            for c0, w in starts.items():
                for n in range(0, R - c0):
                    law_[c0 + n] = law_.get(c0 + n, 0) + w * a[s][n]
                law_[R] = law_.get(R, 0) + w * (1 - mpmath.fsum(a[s][: R - c0]))
            return law_

        states, todo, rows = [(0, 0)], [(0, 0)], {}
        while todo:
            st = todo.pop()
            row = {}
            for nm, p in departure_law(*st).items():
                nxt = switch(st[1], nm, L, H, R, convention)
                row[nxt] = row.get(nxt, 0) + p
            rows[st] = row
            for nxt in row:
                if nxt not in states:
                    states.append(nxt)
                    todo.append(nxt)
        idx = {s: k for k, s in enumerate(states)}
        P = [[mpmath.mpf(0)] * len(states) for _ in states]
        for st, row in rows.items():
            for nxt, p in row.items():
                P[idx[st]][idx[nxt]] += p
        q = stationary_gth(P, mp_backend(ORACLE_DPS))
        hold = [b + (1 / lam0 if s == (0, 0) else 0) for s in states]
        C = mpmath.fsum(qi * m for qi, m in zip(q, hold))
        p = [mpmath.fsum(q[k] * hold[k] for k, s in enumerate(states) if s[1] == x) / C for x in range(3)]
        normal = {s for s in states if s[1] == 0}
        t0, exits, back = first_passage(P, states, normal, hold, (L - 1, 0))
        t0_thesis, _, _ = first_passage(P, states, normal, [b] * len(states), (L - 1, 0))
        t12 = mpmath.fsum(pr * back[x] for x, pr in exits.items())
        thr = 1 / C
        return {
            "p_normal": p[0], "p_overload": p[1], "p_discard": p[2],
            "mean_normal_time": t0, "mean_return_time": t12, "mean_cycle_time": t0 + t12,
            "loss_probability": 1 - thr / (lam0 * l1), "throughput": thr,
            "thesis_normal_time": t0_thesis, "a": a, "states": states,
        }


def _label(c, s, H, R):
    if s == 2 or c >= R:
        return 2
    return 0 if s == 0 and c < H else 1


@lru_cache(maxsize=None)
def exp_oracle(batch_name, load, L=4, H=8, R=13, factor=Fraction(1, 2)):
    """The CTMC over (count, mode in force) for exponential service of mean 5 ms, at 100 digits."""
    law, l = BATCHES[batch_name]
    with mpmath.workdps(ORACLE_DPS):
        mu = mpmath.mpf(B1.denominator) / B1.numerator
        l1 = mpmath.mpf(law.mean)
        lam0 = mpmath.mpf(load.numerator) / load.denominator * mu / l1
        lam = {0: lam0, 1: lam0 * factor.numerator / factor.denominator, 2: 0}
        states, todo, rates = [(0, 0)], [(0, 0)], {}
        while todo:
            c, s = todo.pop()
            out = {}
            if lam[s] and c < R:
                for x in range(1, R - c + 1):
                    w = l(x) if x < R - c else 1 - mpmath.fsum(l(y) for y in range(1, R - c))
                    if w:
                        out[(c + x, s)] = out.get((c + x, s), 0) + lam[s] * w
            if c >= 1:
                nxt = switch(s, c, L, H, R)
                out[nxt] = out.get(nxt, 0) + mu
            rates[(c, s)] = out
            for t in out:
                if t not in states:
                    states.append(t)
                    todo.append(t)
        idx = {s: k for k, s in enumerate(states)}
        Q = [[mpmath.mpf(0)] * len(states) for _ in states]
        for st, out in rates.items():
            for t, r in out.items():
                Q[idx[st]][idx[t]] += r
        pi = stationary_gth(Q, mp_backend(ORACLE_DPS))
        total_rate = [mpmath.fsum(row) for row in Q]
        J = [[r / total_rate[k] for r in row] for k, row in enumerate(Q)]
        hold = [1 / v for v in total_rate]
        res = {"pi": dict(zip(states, pi))}
        for sem in ("interval", "label"):
            mode = (lambda c, s: s) if sem == "interval" else (lambda c, s: _label(c, s, H, R))
            p = [mpmath.fsum(pi[k] for k, (c, s) in enumerate(states) if mode(c, s) == x) for x in range(3)]
            zero = {st for st in states if mode(*st) == 0}
            t0, exits, back = first_passage(J, states, zero, hold, (L - 1, 0))
            t12 = mpmath.fsum(pr * back[x] for x, pr in exits.items())
            res[sem] = {"p_normal": p[0], "p_overload": p[1], "p_discard": p[2],
                        "mean_normal_time": t0, "mean_return_time": t12, "mean_cycle_time": t0 + t12}
        busy0 = [h if (st[1] == 0 and st[0] >= 1) else 0 for h, st in zip(hold, states)]
        res["thesis_normal_time"] = first_passage(J, states, {s for s in states if s[1] == 0}, busy0, (L - 1, 0))[0]
        thr = mu * (1 - res["pi"][(0, 0)])
        res["throughput"] = thr
        res["loss_probability"] = 1 - thr / (lam0 * l1)
        return res


def model_for(batch_name, service, load, thresholds=THRESHOLDS, **kw):
    return nh.HystereticModel.from_load(BATCHES[batch_name][0], service, load, Fraction(1, 2), *thresholds, **kw)


# ------------------------------------------------------------------------------------------
# every measure against the oracles: batch and single arrivals, rho_0 in {0.9, 1, 1.5, 2}
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", sorted(BATCHES))
@pytest.mark.parametrize("load", LOADS)
def test_deterministic_service_against_embedded_oracle(batch, load):
    ref = det_oracle(batch, load)
    model = model_for(batch, Deterministic(B1), load)
    got = nh.evaluate(model, 50)
    for key in MEASURES:
        assert rel(getattr(got, key), ref[key]) < mpmath.mpf(10) ** -48, key
    thesis = nh.evaluate(model, 50, form=nh.NormalTimeForm.THESIS)
    assert rel(thesis.mean_normal_time, ref["thesis_normal_time"]) < mpmath.mpf(10) ** -48
    # renewal identity E tau = C / (q_{L,1} a_0^(1)) and label semantics with the same E tau
    assert rel(got.mean_cycle_time, got.renewal_cycle_time) < mpmath.mpf(10) ** -48
    label = nh.evaluate(model, 50, semantics=nh.Semantics.LABEL)
    assert rel(label.mean_cycle_time, ref["mean_cycle_time"]) < mpmath.mpf(10) ** -48
    if load >= 1:  # float64 to 1e-10 where the thesis says (21) is usable
        f64 = nh.evaluate(model)
        assert f64.working_digits is None
        for key in MEASURES:
            assert rel(getattr(f64, key), ref[key]) < 1e-10, key


@pytest.mark.parametrize("batch", sorted(BATCHES))
@pytest.mark.parametrize("load", LOADS)
def test_exponential_service_against_ctmc(batch, load):
    ref = exp_oracle(batch, load)
    model = model_for(batch, Exponential(B1), load)
    for sem in nh.Semantics:
        got = nh.evaluate(model, 50, semantics=sem)
        for key, value in ref[sem.value].items():
            assert rel(getattr(got, key), value) < mpmath.mpf(10) ** -48, (sem, key)
        assert rel(got.loss_probability, ref["loss_probability"]) < mpmath.mpf(10) ** -48
        assert rel(got.throughput, ref["throughput"]) < mpmath.mpf(10) ** -48
        assert rel(got.mean_cycle_time, got.renewal_cycle_time) < mpmath.mpf(10) ** -48
    thesis = nh.evaluate(model, 50, form=nh.NormalTimeForm.THESIS)
    assert rel(thesis.mean_normal_time, ref["thesis_normal_time"]) < mpmath.mpf(10) ** -48
    if load >= 1:
        f64 = nh.evaluate(model, semantics=nh.Semantics.LABEL)
        for key, value in ref["label"].items():
            assert rel(getattr(f64, key), value) < 1e-10, key


def test_time_distribution_17_equals_ctmc():
    """(17) maps the embedded q to the time-stationary law: compare every (count, mode) with the CTMC."""
    ref = exp_oracle("geometric", Fraction(3, 2))["pi"]
    model = model_for("geometric", Exponential(B1), Fraction(3, 2))
    bk = mp_backend(60)
    with bk:
        p = nh.solve(model, bk).time_distribution()
    R = model.R
    for c in range(R + 1):
        for s in range(3):
            expected = ref.get((c, s), 0)
            if expected == 0:
                assert p[c, s] == 0
            else:
                assert rel(p[c, s], expected) < mpmath.mpf(10) ** -55


def test_left_convention_against_oracle():
    ref = det_oracle("geometric", Fraction(3, 2), convention="left")
    model = model_for("geometric", Deterministic(B1), Fraction(3, 2), convention=nh.Convention.LEFT)
    got = nh.evaluate(model, 50)
    for key in MEASURES:
        assert rel(getattr(got, key), ref[key]) < mpmath.mpf(10) ** -48, key
    # P_0 has H states under the left convention (j = 0..H-1), H - 1 under the event convention
    assert model.top_normal == model.H - 1
    with pytest.raises(ParameterError, match="label semantics needs the event convention"):
        nh.evaluate(model, semantics=nh.Semantics.LABEL)


def test_arrival_counts_match_panjer():
    """a^(s)_n of the chain (convolution sums) = Panjer's recursion of the oracle, both modes."""
    ref = det_oracle("geometric", Fraction(2))
    model = model_for("geometric", Deterministic(B1), Fraction(2))
    bk = mp_backend(60)
    with bk:
        inputs = nh.arrival_inputs(model, bk)
    for s in (0, 1):
        for n in range(model.R + 1):
            assert rel(inputs.counts[s].a[n], ref["a"][s][n]) < mpmath.mpf(10) ** -55


def test_ordinary_arrivals_are_batch_size_one():
    """Section 3.1 (single arrivals) = batches of size 1, whatever law object says so."""
    svc = Deterministic(B1)
    base = nh.evaluate(nh.HystereticModel.from_load(Constant(1), svc, Fraction(6, 5), Fraction(1, 2), 5, 9, 14))
    for law in (FinitePMF({1: 1}), ShiftedPoisson(1)):
        other = nh.evaluate(nh.HystereticModel.from_load(law, svc, Fraction(6, 5), Fraction(1, 2), 5, 9, 14))
        for key in MEASURES:
            assert rel(getattr(other, key), getattr(base, key)) < 1e-13, key


def test_state_space_of_the_event_convention():
    model = model_for("geometric", Deterministic(B1), Fraction(3, 2), thresholds=(73, 84, 100))
    ref_states = det_oracle("geometric", Fraction(3, 2))["states"]
    small = model_for("geometric", Deterministic(B1), Fraction(3, 2))
    assert set(small.states()) == set(ref_states)  # every state reachable, nothing else
    states = model.states()
    assert [s for s in states if s[1] == 0] == [(j, 0) for j in range(83)]  # j = 0..H-2
    assert [s for s in states if s[1] == 1] == [(j, 1) for j in range(73, 99)]  # j = L..R-2
    assert [s for s in states if s[1] == 2] == [(j, 2) for j in range(85, 100)]  # j = H+1..R-1


# ------------------------------------------------------------------------------------------
# conditioning, precision policy, the (21) correction
# ------------------------------------------------------------------------------------------


def test_kappa_is_the_infinity_condition_number():
    """kappa_inf(I - P_0) from the solver = ||A|| ||A^{-1}|| with A^{-1} by mpmath's inverse (60 digits)."""
    model = model_for("single", Deterministic(B1), Fraction(7, 10), thresholds=(6, 12, 16))
    bk = mp_backend(60)
    with bk:
        sol = nh.solve(model, bk)
        P0, _ = sol.normal_block()
        m = P0.shape[0]
        A = mpmath.matrix([[(1 if i == k else 0) - P0[i, k] for k in range(m)] for i in range(m)])
        Ainv = mpmath.inverse(A)
        kappa = mpmath.mnorm(A, mpmath.inf) * mpmath.mnorm(Ainv, mpmath.inf)
        assert rel(sol.kappa, kappa) < mpmath.mpf(10) ** -40


def test_float64_switches_to_mpmath_when_ill_conditioned():
    """Figure-3 setting, single arrivals, rho_0 = 0.6: kappa ~ 4e34, E tau_0 ~ 2.6e32 s (spec section 9)."""
    model = model_for("single", Deterministic(B1), Fraction(3, 5), thresholds=(73, 84, 100))
    f64 = nh.evaluate(model)
    assert f64.working_digits is not None and f64.working_digits >= 16 + 34
    assert "ill-conditioned" in f64.notes[0]
    ref = nh.evaluate(model, 30)
    assert 1e32 < float(ref.mean_normal_time) < 1e33
    assert float(ref.kappa) > 1e34
    for key in MEASURES:
        assert rel(getattr(f64, key), getattr(ref, key)) < 1e-14, key
    # the subtraction-free solve of (21) is accurate in plain float64 too (ordinary LU is wrong by 29 orders)
    raw = nh.evaluate(model, auto_precision=False)
    assert rel(raw.mean_normal_time, ref.mean_normal_time) < 1e-10


def test_digits_escalate_with_kappa_and_are_stable():
    model = model_for("single", Deterministic(B1), Fraction(1, 2), thresholds=(10, 24, 28))
    r30 = nh.evaluate(model, 30)
    r60 = nh.evaluate(model, 60)
    assert r30.working_digits >= 30 + 10 + math.floor(math.log10(float(r30.kappa)))
    for key in MEASURES:
        assert rel(getattr(r30, key), getattr(r60, key)) < mpmath.mpf(10) ** -31, key


def test_thesis_form_omits_exactly_the_idle_time():
    """Corrected - thesis = expected idle time in one normal sojourn (oracle: first passage, idle costs)."""
    ref = det_oracle("single", Fraction(9, 10))
    model = model_for("single", Deterministic(B1), Fraction(9, 10))
    corrected = nh.evaluate(model, 50)
    thesis = nh.evaluate(model, 50, form=nh.NormalTimeForm.THESIS)
    idle = ref["mean_normal_time"] - ref["thesis_normal_time"]
    assert idle > 0
    assert rel(corrected.mean_normal_time - thesis.mean_normal_time, idle) < mpmath.mpf(10) ** -45
    # only the corrected form satisfies the renewal identity
    assert rel(thesis.mean_cycle_time, thesis.renewal_cycle_time) > mpmath.mpf(10) ** -3


def test_thesis_form_gap_is_the_idle_fraction_in_figure_3_setting():
    """Relative omission of the thesis's (21): -> 1 - rho_0 for rho_0 < 1 (long sojourns: the server idles
    a fraction 1 - rho_0 of normal-mode time, a law-of-large-numbers reference), and tiny above 1.

    The bounds below 1 are the LLN limit (the sojourn is >= 1e4 s against cycles of ~0.1 s, so the
    transient at entry changes the fraction by < 1e-4); above 1 the measured gaps are 7e-6 (batches)
    and 8e-14 (single) at rho_0 = 1.2, so the bound 1e-5 is the claim that the form is harmless there.
    (spec/chapter3.md section 6 says < 1e-9 from rho_0 = 1.1; that holds only from ~1.2 for single
    arrivals and ~1.5 for batches.)
    """
    for batch in BATCHES:
        for load in (Fraction(3, 5), Fraction(4, 5), Fraction(6, 5)):
            model = model_for(batch, Deterministic(B1), load, thresholds=(73, 84, 100))
            c = nh.evaluate(model)
            t = nh.evaluate(model, form=nh.NormalTimeForm.THESIS)
            gap = float((c.mean_normal_time - t.mean_normal_time) / c.mean_normal_time)
            if load < 1:
                assert abs(gap - float(1 - load)) < 1e-4, (batch, load, gap)
            else:
                assert 0 < gap < 1e-5, (batch, load, gap)


def test_loss_and_throughput_balance():
    """Offered lambda_0 l1 = served 1/C + lost (throttled, discarded, overflow), at 50 digits."""
    model = model_for("geometric", Deterministic(B1), Fraction(13, 10), thresholds=(10, 20, 26))
    with mp_backend(60) as bk:
        sol = nh.solve(model, bk)
        offered = bk.num(model.rate * model.batch.mean)
        assert rel(offered * (1 - sol.loss_probability()), sol.throughput()) < mpmath.mpf(10) ** -50


def test_float64_and_mpmath_twins_agree_in_figure_3_setting():
    for batch in BATCHES:
        model = model_for(batch, Deterministic(B1), Fraction(3, 2), thresholds=(73, 84, 100))
        f64 = nh.evaluate(model)
        mp = nh._measures_at(model, mp_backend(30), nh.Semantics.INTERVAL, nh.NormalTimeForm.CORRECTED)
        for key in MEASURES:
            assert rel(f64.as_dict()[key], getattr(mp, key)) < 1e-12, (batch, key)


# ------------------------------------------------------------------------------------------
# building blocks
# ------------------------------------------------------------------------------------------


EXCESS_LAWS = [  # (law, its pmf written here with mpmath)
    (Geometric(Fraction(5, 2)), lambda i: mpmath.mpf(2) / 5 * (mpmath.mpf(3) / 5) ** (i - 1)),
    (FinitePMF({1: Fraction(1, 3), 4: Fraction(2, 3)}), lambda i: {1: mpmath.mpf(1) / 3, 4: mpmath.mpf(2) / 3}.get(i, 0)),
    (ShiftedPoisson(Fraction(7, 2)), lambda i: mpmath.exp(-mpmath.mpf(5) / 2) * (mpmath.mpf(5) / 2) ** (i - 1) / mpmath.factorial(i - 1)),
    (Constant(3), lambda i: mpmath.mpf(1 if i == 3 else 0)),
]


@pytest.mark.parametrize("law, pmf", EXCESS_LAWS)
def test_batch_excess_against_direct_sum(law, pmf):
    """E (X - m)^+ = sum_{i > m} (i - m) l_i, summed directly (mpmath.nsum for unbounded laws)."""
    n = 12
    with mp_backend(50) as bk:
        ex = nh.batch_excess(law, n, bk)
        top = law.max_size
        for m in range(n + 1):
            if top is None:
                direct = mpmath.nsum(lambda i: (i - m) * pmf(int(i)), [m + 1, mpmath.inf])
            else:
                direct = mpmath.fsum((i - m) * pmf(i) for i in range(m + 1, top + 1))
            if direct == 0:
                assert ex[m] == 0
            else:
                assert rel(ex[m], direct) < mpmath.mpf(10) ** -45


def test_sparse_gth_equals_dense_gth():
    model = model_for("geometric", Deterministic(B1), Fraction(6, 5), thresholds=(5, 10, 15))
    with mp_backend(50) as bk:
        chain = nh.embedded_chain(model, bk)
        a = stationary_gth_sparse(chain.P, bk)
        b = stationary_gth(chain.P, bk)
        assert max(rel(x, y) for x, y in zip(a, b)) < mpmath.mpf(10) ** -45
        assert all(abs(bk.fsum(chain.P[k, :]) - 1) < mpmath.mpf(10) ** -48 for k in range(len(chain.states)))


def test_hessenberg_mmatrix_solve_keeps_tiny_exits_exact():
    """Exit probabilities of 1e-30: the subtraction-free solve in float64 matches the exact rational solution."""
    eps = sp.Rational(1, 10**30)
    m = 6
    P = sp.zeros(m, m)
    for i in range(m):
        if i > 0:
            P[i, i - 1] = sp.Rational(1, 2)
        if i + 1 < m:
            P[i, i + 1] = sp.Rational(1, 2) - (eps if i == 0 else 0)
        else:
            P[i, i] = sp.Rational(1, 2) - eps
    P[0, 0] = 0
    P[0, 1] = 1 - eps
    delta = [1 - sum(P.row(i)) for i in range(m)]
    exact = (sp.eye(m) - P).LUsolve(sp.ones(m, 1))
    import numpy as np

    res = solve_hessenberg_mmatrix(np.array(P.tolist(), dtype=float), np.array([float(d) for d in delta]),
                                   [np.ones(m)], FLOAT64)
    for k in range(m):
        assert abs(res.solutions[0][k] / float(exact[k]) - 1) < 1e-13


# ------------------------------------------------------------------------------------------
# the model's validation and the command line
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(L=84, H=73, R=100), "L < H < R, got L=84, H=73"),
        (dict(L=3, H=9, R=9), "L < H < R, got H=9, R=9"),
        (dict(L=3, H=8, R=9), "R >= H + 2"),
        (dict(L=0, H=8, R=12), "L = 0: must be >= 1"),
        (dict(L=3, H=8, R=12, rate=0), "must be > 0"),
        (dict(L=3, H=8, R=12, overload_factor=1), "must lie in (0, 1)"),
        (dict(L=3, H=8, R=12, batch=Geometric(12)), "too small for the batch law"),
        (dict(L=3, H=8, R=12, rate=1.5), "is a float"),
    ],
)
def test_model_refuses_bad_parameters(kwargs, message):
    args = dict(batch=Geometric(2), service=Deterministic(B1), rate=100, overload_factor=Fraction(1, 2))
    args.update(kwargs)
    with pytest.raises(ParameterError) as err:
        nh.HystereticModel(**args)
    assert message in str(err.value)


BASE = ["eval", "hysteretic", "--batch", "geometric:mean=2", "--service", "det:mean=0.005",
        "--thresholds", "73,84,100", "--overload-factor", "0.5"]


def test_cli_eval_json_matches_module(capsys):
    import json

    assert main(BASE + ["--load", "1.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["measures"]) == list(MEASURES)
    model = model_for("geometric", Deterministic(B1), Fraction(3, 2), thresholds=(73, 84, 100))
    ref = nh.evaluate(model)
    for key in MEASURES:
        assert out["measures"][key] == pytest.approx(float(getattr(ref, key)), rel=1e-15)
    # --rate 150 is the same model (lambda_0 = rho_0 / (l1 b1) = 1.5 / (2 * 0.005))
    assert main(BASE + ["--rate", "150", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["measures"] == out["measures"]


def test_cli_eval_options_and_digits(capsys):
    import json

    args = ["eval", "hysteretic", "--service", "det:mean=0.005", "--thresholds", "4,8,13", "--load", "1.5",
            "--semantics", "label", "--thesis-form", "--digits", "30", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["precision"] == 30 and out["parameters"]["semantics"] == "label"
    assert out["parameters"]["normal_time_form"] == "thesis" and "thesis form" in out["notes"][0]
    model = model_for("single", Deterministic(B1), Fraction(3, 2))
    ref = nh.evaluate(model, 30, semantics=nh.Semantics.LABEL, form=nh.NormalTimeForm.THESIS)
    assert rel(out["measures"]["mean_return_time"], ref.mean_return_time) < mpmath.mpf(10) ** -29
    assert main(["eval", "hysteretic", "--service", "det:mean=0.005", "--thresholds", "4,8,13", "--load", "1.5",
                 "--convention", "left", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"]["convention"] == "left"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--thresholds", "84,73,100", "--load", "1.5"], "L < H < R"),
        (["--thresholds", "3,6,100", "--load", "1.5", "--batch", "geometric:mean=200"], "too small for the batch"),
        (["--thresholds", "3,6,10", "--rate", "-2"], "must be > 0"),
        (["--thresholds", "3,6,10", "--rate", "0"], "must be > 0"),
        (["--thresholds", "3,6,10", "--load", "1", "--overload-factor", "1.5"], "(0, 1)"),
        (["--thresholds", "3,6,10", "--load", "1", "--rate", "5"], "not allowed with"),
        (["--thresholds", "3,6.5,10", "--load", "1"], "must be an integer"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(capsys, extra, message):
    assert main(["eval", "hysteretic", "--service", "det:mean=0.005"] + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_optimize_finds_the_constrained_minimum(capsys):
    import json

    args = ["optimize", "hysteretic", "--service", "det:mean=0.005", "--batch", "geometric:mean=2",
            "--thresholds", "4,8,14", "--load", "1.2", "--discard-bound", "0.02", "--min-cycle", "0.1", "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    best = json.loads(captured.out)
    assert captured.err == ""  # no progress bar under --json
    # brute force over the same grid, written independently of the optimiser
    base = model_for("geometric", Deterministic(B1), Fraction(6, 5), thresholds=(4, 8, 14))
    feasible = []
    for L in range(1, 12):
        for H in range(L + 1, 13):
            r = nh.evaluate(dataclasses.replace(base, L=L, H=H))
            if r.p_discard <= 0.02 and r.mean_cycle_time >= 0.1:
                feasible.append((float(r.mean_return_time), L, H))
    t12, L, H = min(feasible)
    assert (best["L"], best["H"]) == (L, H) and best["mean_return_time"] == pytest.approx(t12, rel=1e-12)
    assert best["feasible_points"] == len(feasible) and best["grid_points"] == 66
    # any Executor runs the grid: same answer with a thread pool
    with ThreadPoolExecutor(2) as ex:
        again = ho.optimize_thresholds(base, Fraction(1, 50), Fraction(1, 10), executor=ex)
    assert (again["L"], again["H"]) == (L, H)
    # infeasible constraints: exit 2, one line
    assert main(args[:-5] + ["--discard-bound", "0", "--json"]) == 2
    assert "no (L, H)" in capsys.readouterr().err


def test_derivation_steps_and_checks():
    from qderive.derivations.hysteretic import CHECK_POINTS, build_derivation

    small = tuple((name, b, s, rho, f, (4, 8, 12)) for name, b, s, rho, f, _ in CHECK_POINTS)
    d = build_derivation(small)
    labels = [s.label for s in d.steps]
    for eq in ("(16a)", "(16b)", "(16c)", "(16d)", "(17a)", "(18)", "(19)", "(20)", "(21)", "(21')", "(22)",
               "(23)", "(23')"):
        assert eq in labels
    assert d.step("(16a)").relation.has(sp.Sum)
    L = sp.Symbol("L", integer=True, positive=True)
    assert L in d.step("(18)").relation.free_symbols
    results = d.verify(30)
    assert all(r.passed for r in results), [r for r in results if not r.passed]
    assert "\\sum" in d.latex()


def test_guide_worked_example_is_current():
    """docs/guides/hysteretic.md's worked-example table = the module at 25 digits (docs stay in sync)."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs/guides/hysteretic.md").read_text()
    block = text.split("<!-- worked-example:hysteretic")[1].split("<!-- /worked-example -->")[0]
    table = dict(re.findall(r"^\| (\w+) \| ([0-9.e+-]+) \|$", block, flags=re.M))
    assert set(table) == set(MEASURES)
    model = model_for("geometric", Deterministic(B1), Fraction(3, 2), thresholds=(73, 84, 100))
    got = nh.evaluate(model, 25)
    for key, text_value in table.items():
        assert rel(getattr(got, key), text_value) < mpmath.mpf(10) ** -19, key


def test_exported_tex_compiles(tmp_path):
    """`qderive derive hysteretic --latex` gives a standalone document that pdflatex compiles."""
    import shutil
    import subprocess

    assert shutil.which("pdflatex"), "pdflatex is required (Debian: texlive-latex-base texlive-latex-extra)"
    tex = tmp_path / "hyst.tex"
    assert main(["derive", "hysteretic", "--latex", str(tex)]) == 0
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_committed_figure3_data_is_current_and_supports_the_guide():
    """docs/figures/fig3.csv = the module now (sampled rows), and the guide's reading of the thesis's claims."""
    import csv
    import pathlib

    from qderive.derivations.figures_hysteretic import thesis_claims

    path = pathlib.Path(__file__).resolve().parents[1] / "docs/figures/fig3.csv"
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 2 * (21 + 5)
    for r in rows:
        r["rho0"] = Fraction(r["rho0"]).limit_denominator(100)
    for r in rows[5::9]:  # a sample of float64 and 30-digit rows, both arrival types
        model = model_for("geometric" if r["arrivals"] == "batch" else "single", Deterministic(B1), r["rho0"],
                          thresholds=(73, 84, 100))
        got = nh.evaluate(model, None if r["precision"] == "float64" else int(r["precision"]))
        for key in MEASURES:
            assert rel(getattr(got, key), r[key]) < 1e-15, (r["arrivals"], r["rho0"], key)
    claims = thesis_claims(rows)
    assert claims["crossover"] == {"batch": 1.35, "single": 1.35}  # E tau_12 > E tau_0 from rho_0 = 1.35 on
    gaps = claims["max_gap"]
    assert gaps["mean_return_time rho0 in [1.0, 1.6)"] < 0.1 < gaps["mean_return_time rho0 in [1.6, 2.0]"]


def test_escalation_loop_raises_precision_until_stable(monkeypatch):
    """A fake evaluation correct only to (working digits - 30) digits: consecutive precisions w, w + 10
    agree to w - 30 digits, so with D = 20 the loop must climb until w - 30 >= D + 2, i.e. to (60, 70)."""
    calls = []

    def fake(model, bk, semantics, form, inputs=None):
        calls.append(bk.dps)
        with bk:
            v = 1 + mpmath.mpf(10) ** (-(bk.dps - 30))
            return nh.HystereticMeasures(*([v] * 10), bk.dps)

    monkeypatch.setattr(nh, "_measures_at", fake)
    res = nh.evaluate(model_for("single", Deterministic(B1), Fraction(3, 2)), 20)
    assert calls == [30, 40, 50, 60, 70]
    assert res.working_digits == 70
