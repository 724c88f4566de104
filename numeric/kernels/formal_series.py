"""Truncated Laurent series in s around s = 0 with their precision: formal series arithmetic for moments.

A :class:`Formal` is c_v s^v + c_{v+1} s^{v+1} + ... + O(s^p): ``v`` its valuation, ``p`` its absolute precision
(the first unknown power), ``c`` the p - v known coefficients (context numbers: float, mpf, Fraction, mpc). The ring
operations and the division propagate the precision as for p-adic numbers:

    (a + b): p = min(p_a, p_b);   (a b): v = v_a + v_b, p = min(v_a + p_b, v_b + p_a);
    1 / a (leading coefficient c_v != 0): v = -v_a, p = p_a - 2 v_a,

so a division by a series with a zero constant term (1 / s, or (1 - Y(s)) / phi(s) with phi(0) = 0) loses
precision in the open, never a digit silently: the result says how many coefficients are known. A leading
coefficient is stripped only when it is exactly zero (a structural zero: 1 - B*(s) with B*'s constant term the exact
1); the caller builds its series so that the analytic zeros are exact, and the principal part of a quantity known to
be analytic (rounding left over from such a cancellation) is then dropped with a bound by :meth:`Formal.analytic`.

Objects of this class stand in for the context arrays of the nodes of a transform in a kernel written with the
operators only (:mod:`.threshold_passage`): the same interpreter then gives the formal series at 0 of the transform,
hence its moments E[T^j] = (-1)^j j! [s^j] T*(s) without any contour (the moments need only finitely many
right-derivatives at 0, which exist for every law with finite moments, the lognormal included).

A scalar is a number of a context (int, float, complex, numpy's, Fraction, mpf, mpc); with any other object (a sum
of shifted terms whose coefficients are formal series, say) the operators return NotImplemented, so that object's
own reflected operator decides.
"""

import numpy

from .series import inverse, mul


def _scalar(x):
    """True for a context number (not a series, not a sum of shifts)."""
    return (isinstance(x, (int, float, complex, numpy.number)) or hasattr(x, "_mpf_") or hasattr(x, "_mpc_")
            or (hasattr(x, "numerator") and hasattr(x, "denominator")))


class Formal:
    """c_v s^v + ... + O(s^p) (module docstring). ``Formal(coefficients, v, p)``; ``p`` None: len + v."""

    __slots__ = ("c", "v", "p")

    def __init__(self, c, v=0, p=None):
        self.c = list(c)
        self.v = v
        self.p = v + len(self.c) if p is None else p
        del self.c[self.p - v:]
        if len(self.c) < self.p - v:  # the known coefficients not given are zeros
            self.c += [self.c[0] * 0] * (self.p - v - len(self.c))
        while len(self.c) > 1 and self.c[0] == 0:  # an exact zero: the valuation is higher
            del self.c[0]
            self.v += 1

    # -- construction --------------------------------------------------------------------------------------------
    @classmethod
    def variable(cls, one, precision):
        """s + O(s^precision) over the context's ``one``."""
        return cls([one * 0, one], 0, precision) if precision > 1 else cls([one * 0] * precision, 0, precision)

    @classmethod
    def constant(cls, value, precision):
        return cls([value] + [value * 0] * (precision - 1), 0, precision)

    def _lift(self, value):
        if isinstance(value, Formal):
            return value
        if not _scalar(value):
            return None
        # a scalar is known to every order: give it this series' precision (enough for any operation with it)
        return Formal([value] + [value * 0] * max(self.p - 1, 0), 0, max(self.p, 1))

    def coefficient(self, j):
        """[s^j] (0 below the valuation); an error beyond the precision."""
        if j >= self.p:
            raise ValueError(f"[s^{j}] of a series known to O(s^{self.p})")
        return self.c[j - self.v] if j >= self.v else self.c[0] * 0

    # -- the ring ------------------------------------------------------------------------------------------------
    def __add__(self, other):
        other = self._lift(other)
        if other is None:
            return NotImplemented
        v, p = min(self.v, other.v), min(self.p, other.p)
        if p <= v:
            raise ArithmeticError("a sum of series without a known coefficient")
        zero = self.c[0] * 0 if self.c else other.c[0] * 0
        out = []
        for j in range(v, p):
            a = self.c[j - self.v] if self.v <= j else zero
            b = other.c[j - other.v] if other.v <= j else zero
            out.append(a + b)
        return Formal(out, v, p)

    __radd__ = __add__

    def __neg__(self):
        return Formal([-x for x in self.c], self.v, self.p)

    def __sub__(self, other):
        other = self._lift(other)
        return NotImplemented if other is None else self + (-other)

    def __rsub__(self, other):
        other = self._lift(other)
        return NotImplemented if other is None else other + (-self)

    def __mul__(self, other):
        if not isinstance(other, Formal):
            if not _scalar(other):
                return NotImplemented
            return Formal([x * other for x in self.c], self.v, self.p)
        v = self.v + other.v
        p = min(self.v + other.p, other.v + self.p)
        n = p - v  # n <= len(a), len(b): the Cauchy product of :func:`~.series.mul` on the known coefficients
        return Formal(mul(self.c[:n], other.c[:n]), v, p)

    __rmul__ = __mul__

    def inverse(self):
        """1 / self, after stripping the exactly-zero leading coefficients (module docstring)."""
        c, v = list(self.c), self.v
        while c and c[0] == 0:
            c.pop(0)
            v += 1
        if not c:
            raise ZeroDivisionError(f"the inverse of a series known to be O(s^{self.p})")
        return Formal(inverse(c), -v, -v + len(c))  # the recursion of :func:`~.series.inverse`

    def __truediv__(self, other):
        if not isinstance(other, Formal):
            if not _scalar(other):
                return NotImplemented
            return Formal([x / other for x in self.c], self.v, self.p)
        return self * other.inverse()

    def __rtruediv__(self, other):
        return self.inverse() * other if _scalar(other) else NotImplemented

    def __pow__(self, n: int):
        out = self._lift(self.c[0] * 0 + 1)
        for _ in range(n):
            out = out * self
        return out

    # -- reading ---------------------------------------------------------------------------------------------------
    def analytic(self, count: int, tiny):
        """[c_0, ..., c_{count-1}]: the Taylor coefficients of a quantity known to be analytic at 0, its principal part
        (rounding left over from cancelled poles) checked against ``tiny`` (times the largest coefficient read) and
        dropped; ArithmeticError when fewer coefficients are known or the principal part is not rounding."""
        if self.p < count:
            raise ArithmeticError(f"the series is known to O(s^{self.p}), {count} coefficients asked")
        values = [self.coefficient(j) for j in range(count)]
        size = max([abs(x) for x in values] + [1])
        for j in range(self.v, 0):
            if abs(self.c[j - self.v]) > tiny * size:
                raise ArithmeticError(f"a pole of order {-j} where the quantity is analytic "
                                      f"(coefficient {self.c[j - self.v]} of s^{j})")
        return values

    def __repr__(self):
        return f"Formal({self.c!r}, v={self.v}, p={self.p})"
