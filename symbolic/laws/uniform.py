"""A uniformly distributed time."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..counts import UniformMixedPoissonCount
from ..errors import ParameterError
from ..numbers import is_symbolic, to_sympy
from ..params import param
from .base import TimeLaw

__all__ = ["Uniform"]


@dataclass(frozen=True)
class Uniform(TimeLaw):
    """Uniform time on [a, b], 0 <= a < b.  LST (e^{-a s} - e^{-b s}) / ((b - a) s);
    E T^n = (b^{n+1} - a^{n+1}) / ((n + 1)(b - a)) (``docs/theory/chapter2.md`` section 3, uniform row)."""

    spec = "uniform"
    low: object = param("lower end a (>= 0)", units="time", metavar="A", check=">= 0")
    high: object = param("upper end b (> a)", units="time", metavar="B")

    def _validate(self):
        if not is_symbolic(self.high - self.low) and not self.high > self.low:
            raise ParameterError(f"high = {self.high} must exceed low = {self.low} "
                                 "(use det:mean=... for a constant)")

    @property
    def mean(self):
        """E T."""
        return self.moment(1)

    def lst(self, s):
        import sympy as sp

        a, b = to_sympy(self.low), to_sympy(self.high)
        return (sp.exp(-a * s) - sp.exp(-b * s)) / ((b - a) * s)

    def _moment(self, n):
        a, b = self.low, self.high
        return (b ** (n + 1) - a ** (n + 1)) / ((n + 1) * (b - a))

    def count_law(self, lam):
        return UniformMixedPoissonCount(lam * self.low, lam * self.high)

    def linear_survival(self):
        """P(T > x) as linear pieces (x_0, x_1, S(x_0+), S(x_1-)): 1 on [0, a], from 1 to 0 on [a, b] (exact or
        symbolic: generated code's mixture of constant vacations; the engine finds the same from :meth:`survival`)."""
        return ((0, self.low, 1, 1), (self.low, self.high, 1, 0))

    def survival(self, x):
        """P(T > x): 1 below a, (b - x) / (b - a) on [a, b], 0 beyond (mpmath)."""
        import mpmath

        a, b = (mpmath.mpf(v.numerator) / v.denominator for v in (Fraction(self.low), Fraction(self.high)))
        return mpmath.mpf(1) if x <= a else (mpmath.mpf(0) if x >= b else (b - x) / (b - a))

    def survival_many(self, xs, digits=None):
        """P(T > x) at every point of ``xs`` at once (:meth:`TimeLaw.survival_many`): 1 below a, (b - x) / (b - a) on
        [a, b], 0 beyond; float64 by numpy (relative error about eps b / (b - x): the rounding of b), ``digits`` D by
        mpmath at D + 5 digits."""
        import mpmath
        import numpy

        if digits is None:  # the registered kernel (:data:`~.base.FLOAT64_SURVIVAL`), else mpmath point by point
            from .base import float64_survival

            got = float64_survival(self, numpy.asarray(xs, dtype=float))
            if got is not None:
                return got[0]
            with mpmath.workdps(17):
                return numpy.array([float(self.survival(mpmath.mpf(float(x)))) for x in xs])
        with mpmath.workdps(digits + 5):
            a, b = (mpmath.mpf(v.numerator) / v.denominator for v in (Fraction(self.low), Fraction(self.high)))
            one, zero, width = mpmath.mpf(1), mpmath.mpf(0), b - a
            return [one if x <= a else (zero if x >= b else (b - x) / width) for x in xs]

    def stop_loss(self, x):
        """E (T - x)^+: (a + b) / 2 - x below a, (b - x)^2 / (2 (b - a)) on [a, b], 0 beyond."""
        import mpmath

        a, b = (mpmath.mpf(v.numerator) / v.denominator for v in (Fraction(self.low), Fraction(self.high)))
        return (a + b) / 2 - x if x <= a else (mpmath.mpf(0) if x >= b else (b - x) ** 2 / (2 * (b - a)))

    def survival_kinks(self):
        return tuple(v for v in (self.low, self.high) if v > 0)

    def survival_kernel(self):
        """(kernel function, its law arguments) of the float64 survival function (the numeric layer's kernel
        ``survival``, which generated code ships): ``uniform_survival`` (a, b)."""
        return "uniform_survival", (self.low, self.high)

    def survival_bound_kernel(self):
        """(kernel function, its law arguments) of :meth:`survival_bound`: ``uniform_survival_bound`` (a, b)."""
        return "uniform_survival_bound", (self.low, self.high)

    def survival_bound(self, center, lo, hi, height):
        """|S(z)| on the rectangles (:meth:`TimeLaw.survival_bound`) for the piece at ``center``: 1 below a,
        |b - z| / (b - a) <= hypot(max(|b - lo|, |b - hi|), height) / (b - a) on (a, b), 0 beyond b (the numeric
        layer's kernel ``uniform_survival_bound``, registered in :data:`~.base.FLOAT64_SURVIVAL`; None without it)."""
        from .base import FLOAT64_SURVIVAL

        fn = FLOAT64_SURVIVAL.get(self.survival_bound_kernel()[0])
        return None if fn is None else fn(float(self.low), float(self.high), center, lo, hi, height)

    def sample(self, rng, size):
        return rng.uniform(float(self.low), float(self.high), size)

    # -- scipy.stats-style hooks (:mod:`qderive.symbolic.distribution`) --------------------------------------
    def support(self):
        """(a, b)."""
        return (float(self.low), float(self.high))

    def _pdf(self, x):
        """1 / (b - a) on [a, b], 0 elsewhere."""
        import numpy

        a, b = float(self.low), float(self.high)
        return numpy.where((x >= a) & (x <= b), 1 / (b - a), 0.0)

    def _ppf(self, q):
        """a + q (b - a)."""
        a, b = float(self.low), float(self.high)
        return a + q * (b - a)

    def _to_scipy(self):
        from scipy import stats

        return stats.uniform(loc=float(self.low), scale=float(self.high - self.low))

    @classmethod
    def _from_scipy(cls, frozen):
        """scipy's uniform(loc, scale): [loc, loc + scale]."""
        from ..distribution import decimal_fraction, scipy_arguments

        args = scipy_arguments(frozen, "uniform")
        if args is None:
            return None
        _, loc, scale = args
        low = decimal_fraction(loc)
        return cls(low, decimal_fraction(float(loc) + float(scale), 15))

    @classmethod
    def examples(cls):
        return (cls(0, Fraction(1, 5)), cls(Fraction(1, 10), Fraction(3, 10)))
