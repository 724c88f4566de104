"""Searches over one integer or real parameter, and decisions of a computed value against an exact bound.

Shared by the sizing and optimising actions (``qderive size``, ``qderive optimize``):

* :func:`first_true` -- bisection: the smallest x in (lo, hi] with pred(x), for a predicate
  that is false at lo, true at hi and monotone;
* :func:`first_from` -- the smallest x in [lo, hi] with pred(x) by galloping from lo
  (lo + 1, lo + 2, lo + 4, ...) and then bisecting: O(log(x - lo)) calls (None if there is none);
* :func:`compare` -- the sign of value - bound for a float, a Fraction or an mpmath value and
  an exact bound (mpmath values compared at 80 digits, never through a float);
* :func:`near` -- a float64 value within :data:`NEAR` (relative) of a bound, so that the
  decision is taken again at high precision: the engines' float64 results carry errors of
  O(n eps) < 1e-12 for the chains and recursions concerned (n their size, eps = 2.2e-16).
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["NEAR", "first_true", "first_from", "compare", "near"]

#: the relative distance of a float64 value from a bound below which the decision is taken at high precision
NEAR = 1e-9


def first_true(lo: int, hi: int, pred) -> int:
    """The smallest x in (lo, hi] with pred(x), by bisection, given pred(lo) false and pred(hi) true (monotone)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def first_from(lo: int, hi: int, pred) -> int | None:
    """The smallest x in [lo, hi] with pred(x) (pred monotone): gallop from lo, then bisect; None when pred(hi)
    is false (found only when the gallop reaches hi)."""
    if pred(lo):
        return lo
    step, prev = 1, lo
    while prev < hi:
        x = min(hi, lo + step)
        if pred(x):
            return first_true(prev, x, pred)
        prev, step = x, 2 * step
    return None


def compare(value, bound: Fraction) -> int:
    """The sign of ``value`` - ``bound`` (-1, 0, 1): exactly for a Fraction or a float, at 80 digits for mpmath."""
    if isinstance(value, (Fraction, int, float)):
        d = Fraction(value) - bound
        return (d > 0) - (d < 0)
    import mpmath

    with mpmath.workdps(80):
        d = mpmath.mpf(value) - mpmath.mpf(bound.numerator) / bound.denominator
        return (d > 0) - (d < 0)


def near(value: float, bound) -> bool:
    """|value - bound| <= NEAR max(|value|, |bound|) (floats): decide again at high precision."""
    value, bound = float(value), float(bound)
    return abs(value - bound) <= NEAR * max(abs(bound), abs(value))
