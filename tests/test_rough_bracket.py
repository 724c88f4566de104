"""The quantile search's extrapolating bracket and the cheaper lattice tables of issue 30 item 2 (the 0.999 quantile
of a constant service with a lognormal vacation: 15.5 s, now within the 5 s budget).

* ``response._extrapolated_bracket`` steps from the start by the secant of its last two points (10 % beyond, at
  most a factor 1.5 in t): on tails where that extrapolation overshoots (a kink where the tail steepens) or falls
  short again and again (a tail that flattens: a mixture with a heavy component) it still returns a bracket of the
  root, and the quantiles found from it satisfy P(T > q) = 1 - p to the digits asked -- checked against the
  tail itself, computed by mpmath at more digits (not against saved output);
* the engine's kept tables: a cell table extended by new rows equals the one made at once (bit for bit: row j
  depends on row j - 1 alone); Horner over the cells that have a term equals the plain Horner over all K steps
  (bit for bit); the float64 sizing of the lattice sum's cancellation equals the 20-digit pass it replaces;
* a lognormal vacation quantile through the command's path: its tail at the answer is 1 - p.
"""

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric import response
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import vacation_wait as VW
from qderive.numeric.kernels import lattice_wait as LW

# two tails whose log is not linear in log t: a kink where the tail steepens (the secant from before it
# overshoots the root) and a heavy mixture (log P convex: the secant falls short at every step)
KINK = 5


def _kinked(t):
    """P(T > t) = e^{-t} up to t = 5, then e^{-5 - 40 (t - 5)}."""
    return mpmath.exp(-t) if t <= KINK else mpmath.exp(-KINK - 40 * (t - KINK))


def _heavy(t):
    """P(T > t) = 0.999 e^{-20 t} + 0.001 / (1 + t)^2 (light then heavy)."""
    return mpmath.mpf(999) / 1000 * mpmath.exp(-20 * t) + 1 / (1000 * (1 + t) ** 2)


def _law(tail):
    """A ResponseLaw with its own D-digit tails (mpmath at D + 10 digits) and float64 rough tails of ``tail``."""

    def tails(ts, digits):
        dps = 30 if digits is None else digits + 10
        with mpmath.workdps(dps):
            values = [tail(mpmath.mpf(t.numerator) / t.denominator) for t in map(F, ts)]
        return ([float(v) for v in values] if digits is None else values), (dps if digits else None)

    def rough(t):
        with mpmath.workdps(15):
            return float(tail(mpmath.mpf(float(t))))

    return response.ResponseLaw("wait", None, lambda ctx: ctx.num(0), lambda k, d: [F(1, 2)] * k, smooth=False,
                                tails=tails, rough_tails=rough)


def _flattening(x):
    """g falls by 10 a unit of log t up to x = 0.09, then by 0.01 (a tail that turns heavy just after the
    extrapolated step: the secant falls short, twice): root 10.09."""
    return 1 - 10 * x if x < 0.09 else 0.1 - 0.01 * (x - 0.09)


def _steepening(x):
    """g falls by 0.1 a unit of log t up to x = 1.5, then by 100 (a tail that drops at a kink: the secant
    overshoots the root 1.5085 by far; the step is at most the cap)."""
    return 1 - 0.1 * x if x < 1.5 else 0.85 - 100 * (x - 1.5)


@pytest.mark.parametrize("g, root", [(_flattening, 10.09), (_steepening, 1.5085)])
def test_the_bracket_holds_the_root_where_extrapolation_misleads(g, root):
    """g(lo) > 0 >= g(hi) around the root, with no more evaluations than the steps of log 1.5 alone plus two
    (after a short extrapolated step the next is at least twice as long, and never longer than the cap)."""
    calls = []

    def counted(x):
        calls.append(x)
        return g(x)

    lo, hi, glo, ghi = response._extrapolated_bracket(counted, 0.0, math.log(1.5))
    assert glo > 0 >= ghi and lo < root <= hi and (glo, ghi) == (g(lo), g(hi))
    assert len(calls) <= math.ceil(root / math.log(1.5)) + 1 + 2


@pytest.mark.parametrize("tail, level", [(_kinked, F(1, 10**4)), (_heavy, F(1, 10**5))])
def test_the_bracket_of_a_kinked_and_a_heavy_tail(tail, level):
    """The same on the two tails of the quantile test below, from t = 0.5."""

    def g(x):
        return math.log(float(tail(mpmath.mpf(math.exp(x))))) - math.log(float(level))

    lo, hi, glo, ghi = response._extrapolated_bracket(g, math.log(0.5), math.log(1.5))
    assert glo > 0 >= ghi and lo < hi


@pytest.mark.parametrize("tail", [_kinked, _heavy])
@pytest.mark.parametrize("digits", [None, 20])
def test_quantiles_from_the_bracket_meet_the_tail(tail, digits):
    """min{t: P(T <= t) >= p} for p = 0.99, 0.9999 (the second search starts from the first quantile): the tail at
    the answer equals 1 - p to the digits asked (float64: 1e-12 relative, the search's 1e-13 in log t times the
    tail's slope; D digits: 10^-D), computed by mpmath at 40 digits."""
    law = _law(tail)
    qs = [F(99, 100), F(9999, 10000)]
    values, _, _ = response.quantiles(law, qs, digits, 0.5)
    with mpmath.workdps(40):
        for q, t in zip(qs, values):
            got = tail(mpmath.mpf(t))
            want = 1 - mpmath.mpf(q.numerator) / q.denominator
            assert abs(got / want - 1) <= (1e-12 if digits is None else mpmath.mpf(10) ** -digits), (q, t)


def _model():
    return qd.VacationQueue(F(50), qd.Constant(1), qd.Deterministic(F(1, 100)), qd.LogNormal(F(6, 100), F(2)))


def test_an_extended_cell_table_equals_the_whole_one():
    model = _model()
    D = F(1, 100)
    with mp_context(40) as ctx:
        h = VW._table(model, ctx, 60)
        whole = LW.lattice_cell_table(ctx, h, 60, ctx.num(D), ctx.num(model.rate), twin_numbers=True)
        part = LW.lattice_cell_table(ctx, h, 37, ctx.num(D), ctx.num(model.rate), twin_numbers=True)
        grown = LW.lattice_cell_table(ctx, h, 60, ctx.num(D), ctx.num(model.rate), twin_numbers=True, before=part)
        for a, b in zip(whole, grown):
            assert [str(x) for x in a.ravel()] == [str(x) for x in b.ravel()]


def test_horner_over_the_cells_with_a_term_equals_the_plain_horner():
    """lattice_cell_tails against Horner over every k = K..0 for every point (float64: the same operations, so the
    same values bit for bit), points of many cells in one call."""
    model = _model()
    D = 0.01
    with FLOAT64:
        h = VW._table(model, FLOAT64, 40)
        C, Cabs = LW.lattice_cell_table(FLOAT64, h, 40, D, 50.0)
        rng = np.random.default_rng(3)
        js = rng.integers(0, 41, 200)
        ys = (js + rng.random(200)) * D
        tails, bounds = LW.lattice_cell_tails(FLOAT64, C, Cabs, ys, js, D, 50.0, 0.5)
        K = int(js.max())
        S = ys - D * js
        signed, size = C[js, K], Cabs[js, K]
        for k in range(K - 1, -1, -1):
            signed = signed * (S / (k + 1)) + C[js, k]
            size = size * (S / (k + 1)) + Cabs[js, k]
        e = np.exp(S * 50.0)
        assert np.array_equal(tails, -(e * signed * 0.5) + 1)
        assert np.array_equal(bounds, (e * size * 0.5 + 1) * (4 * (2 * K * K + 3 * K + 10) * FLOAT64.eps))


@pytest.mark.parametrize("t", [F(1, 10), F(30, 100), F(90, 100)])
def test_the_float64_sizing_equals_the_20_digit_pass(t):
    """log10(C M / tail) as _lattice_size gives it against the 20-digit pass it replaces: the same to 0.01 (the
    float64 sum resolves the tail at t = 0.1; it cancels beyond 16 digits at t = 0.9, where both give log10 C M)."""
    model = _model()
    D = F(1, 100)
    K = int(t // D)
    with mp_context(20) as ctx:
        h = VW._table(model, ctx, K)
        C, Cabs = LW.lattice_cell_table(ctx, h, K, ctx.num(D), ctx.num(model.rate))
        tails, bounds = LW.lattice_cell_tails(ctx, C, Cabs, ctx.array([ctx.num(t)]), [K], ctx.num(D),
                                              ctx.num(model.rate), ctx.num(VW._rho(model)))
        want = VW._size(tails[0], bounds[0], ctx.eps)
    assert abs(VW._lattice_size(model, D, t) - want) <= 0.01


def test_a_lognormal_vacation_quantile_meets_its_tail():
    """The command's path (rough guide, extrapolating bracket, float64 search with 15-digit tails): P(W > q) = 1 - p
    by the law's own 20-digit tail at the answer, to 1e-12 (the search's 1e-13 in log t times the slope ~3)."""
    model = _model()
    law = VW.response_laws(model)["wait"]
    q = F(99, 100)
    (t,), _, _ = response.quantiles(law, [q], None, 0.095)
    (tail,), _ = law.tails([F(t)], 20)
    assert abs(float(tail) / 0.01 - 1) <= 1e-12
