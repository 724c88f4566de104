"""Tails and quantiles of a nonnegative time T from its transform: the float64 self-check and the root search.

The tail P(T > t) has the Laplace transform (1 - F(s)) / s (:func:`tail_transform`, F the LST
of T), inverted by the Euler algorithm (:mod:`~qderive.numeric.kernels.inversion`).

* **float64 tails** (:func:`float64_tails`): the result of the parameter set (A, n, m) = (23, 40, 20),
  checked against (27, 30, 14). In float64 the inversion's error is absolute, about 1e-12: roundoff
  amplified by e^{A/2} (the first set's is e^2 ~ 7 times smaller than the second's) plus aliasing
  below e^{-A} relative (1e-10 at A = 23; the second set's is 50 times smaller), so the difference
  of the two sets estimates the first one's error -- roughly: the roundoff of the transform's own
  float64 evaluation does not scale with A (on the README's server at rho_bar = 0.9 the sets
  A = 19, 21, 23 err by 1e-10, 1e-9, 1.1e-9 at a tail of 7e-3 while 23 and 27 differ by 3.7e-10).
  Two sets close in A share their error (the pair (25, 30, 14), (23, 38, 11) agreed to 1e-9 on a
  tail whose error was 1.3e-8). Measured over 10 models (the README's server at 8 loads from 0.05
  to 0.95, M/M/1, a single-vacation case), wait and sojourn, at 9 times from 0.01 to 8 mean waits,
  against 14-digit tails: with the tolerance 2e-10 every accepted tail (127 of them) is within
  1.1e-10 relative; with 5e-10, one of 138 erred by 1.1e-9. A disagreement beyond 2e-10 relative, a tail below 1e-6 (where the absolute error of the inversion is no
  longer small against the tail), a non-finite value or a time below the normal float64 range
  is reported with the first point concerned: the caller recomputes with more digits
  (:mod:`qderive.numeric.response`) or refuses (generated code, which has no mpmath).
* **quantiles** min{t : P(T <= t) >= q} for q above the atom P(T = 0): the root of
  g(x) = log P(T > e^x) - log(1 - q), decreasing in x = log t, bracketed by steps of log 4 from
  the log of the mean (:func:`quantile_bracket`) and refined by the Illinois variant of regula
  falsi (:func:`quantile_illinois`). Both work on any numbers with ordinary arithmetic (floats
  or mpmath numbers); :func:`float64_quantile` is the float64 search with the tails of
  :func:`float64_tails`'s self-check at every step.
"""

import math

import numpy

from .inversion import euler_inversion

#: float64 parameter sets of the Euler algorithm (A, n, m) whose agreement is the float64 self-check
TAIL_FLOAT64_SETS = ((23.0, 40, 20), (27.0, 30, 14))
#: largest relative disagreement of the two float64 sets that is accepted
TAIL_FLOAT64_TOLERANCE = 2e-10
#: smallest float64 tail accepted (below it the inversion's absolute error is not small relative to the tail)
TAIL_FLOAT64_SMALLEST = 1e-6


class TailError(ArithmeticError):
    """The quantile search failed (no bracket, no convergence) or a float64 tail was inaccurate."""


def tail_transform(F):
    """(1 - F(s)) / s: the Laplace transform of P(T > t) from the LST F of T."""
    def G(s):
        return (1 - F(s)) / s

    return G


def float64_tails(ctx, G, t):
    """(tails, None, None) for a float64 array of times t > 0 and the tail transform G, or, when the
    self-check fails (module docstring), (None, reason, index of the first point concerned)."""
    t = numpy.asarray(t, dtype=numpy.float64)
    low = numpy.flatnonzero(t < 1e-300)
    if low.size:
        return None, "a time lies below the normal float64 range", int(low[0])
    runs = []
    with numpy.errstate(all="ignore"):
        for A, n, m in TAIL_FLOAT64_SETS:
            runs.append(euler_inversion(ctx, G, t, A, n, m))
    a, b = runs
    bad = numpy.flatnonzero(~(numpy.isfinite(a) & numpy.isfinite(b)))
    if bad.size:
        return None, "the float64 inversion overflowed", int(bad[0])
    bad = numpy.flatnonzero(a < TAIL_FLOAT64_SMALLEST)
    if bad.size:
        return None, (f"a tail is below {TAIL_FLOAT64_SMALLEST:g}, where float64 inversion loses its relative "
                      "accuracy"), int(bad[0])
    bad = numpy.flatnonzero(numpy.abs(a - b) > TAIL_FLOAT64_TOLERANCE * numpy.abs(a))
    if bad.size:
        return None, "the two float64 parameter sets of the inversion disagree", int(bad[0])
    return a, None, None


def quantile_illinois(g, lo, hi, glo, ghi, tol, limit=600, safeguard=3, close=False):
    """A root of the decreasing g on [lo, hi] (g(lo) > 0 > g(hi)) by the Illinois method, to ``tol`` relative
    (absolute below 1), safeguarded by bisection: after ``safeguard`` secant steps in a row on one side (the
    Illinois halving has not brought the next step across: a kink, or a jump of the tail such as the atom of the
    sojourn T = W + D at t = D when the level equals P(W = 0)) one step bisects, so the search ends whatever g.
    ``safeguard=None``: plain Illinois (the float64 search, whose g is smooth where it is trusted: a bisection
    point there only adds a tail whose float64 self-check can fail, and a jump escalates to mpmath anyway).
    ``close=True`` (the D-digit searches, whose every g costs a high-precision tail): after two points on one side
    the next is the secant through them where it falls inside the bracket (superlinear, where Illinois halves the
    stale end's value and lands about as far on the other side); and where the next step would move less than a
    quarter of the tolerance from the last point, the iteration has converged far inside it and only the bracket's
    far end is stale (Illinois would take two or three more steps at the same point to bring it in): the step then
    goes across the root from the last point by half the tolerance, which closes the bracket."""
    side, same = 0, 0
    prev = last = None
    for _ in range(limit):
        if safeguard is not None and same >= safeguard:
            x, same = (lo + hi) / 2, 0
        else:
            x = (lo * ghi - hi * glo) / (ghi - glo)
        if close and prev is not None and (prev[1] > 0) == (last[1] > 0) and prev[1] != last[1]:
            # the secant through the last two points (one side: where Illinois would halve a stale end), if inside
            secant = last[0] - last[1] * (last[0] - prev[0]) / (last[1] - prev[1])
            if lo < secant < hi:
                x = secant
        if close and last is not None and abs(x - last[0]) <= tol * max(1, abs(x)) / 4:
            x = last[0] + (tol * max(1, abs(x)) / 2 if last[1] > 0 else -tol * max(1, abs(x)) / 2)
        gx = g(x)
        prev, last = last, (x, gx)
        if gx == 0:
            return x
        if gx > 0:
            lo, glo = x, gx
            if side == 1:
                ghi /= 2
                same += 1
            else:
                same = 1
            side = 1
        else:
            hi, ghi = x, gx
            if side == -1:
                glo /= 2
                same += 1
            else:
                same = 1
            side = -1
        if abs(hi - lo) <= tol * max(1, abs(x)):
            # close: the regula falsi point of the last bracket (inside it: within the tolerance too, and the
            # secant's accuracy where g is smooth, so that a second search started there finds the same root)
            return (lo * ghi - hi * glo) / (ghi - glo) if close else (lo + hi) / 2
    raise TailError("the quantile search did not converge")


def quantile_bracket(g, start, step, exp, log):
    """[lo, hi] in log t with g(lo) > 0 > g(hi), from log(start) by steps of ``step`` (log 4): (lo, hi, glo, ghi)."""
    lo = hi = log(start)
    glo = ghi = g(lo)
    for _ in range(200):
        if glo > 0:
            break
        lo -= step
        glo = g(lo)
    else:
        raise TailError("the quantile lies below 4^-200 times the mean (an atom near 0?)")
    for _ in range(200):
        if ghi < 0:
            break
        hi += step
        ghi = g(hi)
    else:
        raise TailError("the quantile lies beyond 4^200 times the mean")
    return lo, hi, glo, ghi


def float64_quantile(ctx, G, level, mean):
    """The t with P(T > t) = ``level`` (= 1 - q, a float) in float64, or None when the float64 tails lost their
    accuracy near it (module docstring); ``mean`` (E T) starts the bracket. Raises :class:`TailError` when the
    search itself fails."""
    failed = []

    def g(logt):
        t = numpy.array([math.exp(logt)])
        with numpy.errstate(all="ignore"):
            a, b = (euler_inversion(ctx, G, t, A, n, m)[0] for A, n, m in TAIL_FLOAT64_SETS)
        if (not (math.isfinite(a) and math.isfinite(b)) or a < TAIL_FLOAT64_SMALLEST
                or abs(a - b) > TAIL_FLOAT64_TOLERANCE * abs(a)):
            # inaccurate, but far enough from the level for its sign to be sure: good enough for a bracket end
            if a > 0 and b > 0 and abs(a - b) < 0.1 * min(abs(a - level), abs(b - level)) and (a > level) == (b > level):
                return math.log(a) - math.log(level)
            failed.append(True)
            raise TailError("float64 inversion")
        return math.log(a) - math.log(level)

    try:
        lo, hi, glo, ghi = quantile_bracket(g, mean if mean > 0 else 1.0, math.log(4.0), math.exp, math.log)
        x = quantile_illinois(g, lo, hi, glo, ghi, 1e-13, limit=200, safeguard=None)
        # a tail error e moves the root by e / |d log P(T > t) / d log t|: refuse where that exceeds 1e-9
        # (a flat tail, e.g. just above an atom at 0)
        h = 1e-4
        slope = (g(x + h) - g(x - h)) / (2 * h)
        if not abs(slope) * 1e-9 >= TAIL_FLOAT64_TOLERANCE:
            return None
        return math.exp(x)
    except TailError:
        if failed:
            return None
        raise
