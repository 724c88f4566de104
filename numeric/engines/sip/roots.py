"""Scalar root finding shared by the fixed point (:mod:`.fixed_point`) and the collapse onset (:mod:`.onset`).

In float64 or in an mpmath context: the arithmetic of the arguments is kept. :func:`to_fraction` turns an iterate
into the exact rational the servers are keyed by.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

__all__ = ["to_fraction", "illinois", "share_secant"]


def to_fraction(x) -> Fraction:
    """An exact rational from a float, an mpf or a Fraction (binary values exactly)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, float, np.floating)):
        return Fraction(float(x))
    man, exp = mpmath.mpf(x).man_exp
    return Fraction(int(man)) * 2**int(exp) if exp >= 0 else Fraction(int(man), 2**int(-exp))


def illinois(f, a, b, fa, fb, tol):
    """A root of f in [a, b] (f(a), f(b) of opposite signs) by the Illinois variant of regula falsi, to ``tol``
    relative in x; returns the iterate with the smallest |f|."""
    best = (abs(fa), a) if abs(fa) <= abs(fb) else (abs(fb), b)
    side = 0
    for _ in range(100):
        x = (a * fb - b * fa) / (fb - fa) if fb != fa else (a + b) / 2
        fx = f(x)
        if abs(fx) < best[0]:
            best = (abs(fx), x)
        if fx == 0 or abs(b - a) <= tol * abs(x):
            break
        if (fx > 0) == (fa > 0):
            a, fa = x, fx
            if side == -1:
                fb /= 2
            side = -1
        else:
            b, fb = x, fx
            if side == 1:
                fa /= 2
            side = 1
    return best[1]


def share_secant(h, w0, tol):
    """The root of h(w) = share(w) - w (``--discipline priority``'s inner unknown) by the secant method from the
    transaction share w0 and the fixed-point step w1 = share(w0): share(w) depends weakly on w (h' near -1), so a
    few steps reach ``tol`` relative where the bracketing Illinois method from [0, 1] needs about twice as many
    evaluations of the server. None when an iterate leaves [0, 1] or it does not converge in 20 steps (the caller
    then brackets)."""
    h0 = h(w0)
    w1 = w0 + h0
    for _ in range(20):
        if not 0 <= w1 <= 1:
            return None
        h1 = h(w1)
        if h1 == 0 or h1 == h0:
            return w1
        w2 = w1 - h1 * (w1 - w0) / (h1 - h0)
        if abs(w2 - w1) <= tol * abs(w2):
            return w2 if 0 <= w2 <= 1 else None
        w0, h0, w1 = w1, h1, w2
    return None
