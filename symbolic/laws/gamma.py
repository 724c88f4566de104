"""The gamma family: exponential, Erlang-k and gamma times (one set of formulas).

LST (a / (a + m s))^a with shape a and mean m; E T^n = m^n a (a+1)...(a+n-1) / a^n;
arrivals during one such time: NegBin(a, p0 = a/(a + lambda m)), q = lambda m/(a + lambda m)
(``docs/theory/chapter2.md`` section 3, Erlang / gamma row; a = 1 is the exponential row).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..counts import NegativeBinomialCount
from ..numbers import is_symbolic, to_sympy
from ..params import Kind, param
from .base import TimeLaw

__all__ = ["Exponential", "Erlang", "Gamma"]


def _mpf(v):
    """An exact number as an mpf at the current precision."""
    import mpmath

    v = Fraction(v)
    return mpmath.mpf(v.numerator) / v.denominator


class _GammaFamily(TimeLaw):
    """Shared formulas; subclasses define ``shape`` and ``mean``."""

    @property
    def shape_value(self):
        return self.shape

    def lst(self, s):
        a, m = to_sympy(self.shape_value), to_sympy(self.mean)
        return (a / (a + m * s)) ** a

    def _moment(self, n):
        a, m = self.shape_value, self.mean
        out = m**n
        for i in range(n):
            out = out * (a + i) / a
        return out

    def count_law(self, lam):
        a, m = self.shape_value, self.mean
        return NegativeBinomialCount(a, a / (a + lam * m), lam * m / (a + lam * m))

    def phase_type(self):
        a = self.shape_value
        if is_symbolic(a) or a != int(a):
            return None
        k = int(a)
        rate = k / self.mean
        T = tuple(tuple(-rate if j == i else (rate if j == i + 1 else 0) for j in range(k)) for i in range(k))
        return (1,) + (0,) * (k - 1), T

    def survival(self, x):
        """P(T > x) = Q(a, a x / m), the regularized upper incomplete gamma function (mpmath)."""
        import mpmath

        if is_symbolic(self.shape_value) or is_symbolic(self.mean):
            return None
        a, m = _mpf(self.shape_value), _mpf(self.mean)
        return mpmath.gammainc(a, a * x / m, mpmath.inf, regularized=True)

    def survival_root(self):
        """The denominator q of the shape p/q: P(T > x) = 1 - x^{p/q} (analytic) is analytic in x^{1/q}."""
        a = self.shape_value
        return 1 if is_symbolic(a) else Fraction(a).denominator

    def stop_loss(self, x):
        """E (T - x)^+ = (m - x) Q(a, z) + m z^a e^{-z} / Gamma(a + 1), z = a x / m (Q(a + 1, z) = Q(a, z) +
        z^a e^{-z} / Gamma(a + 1)); for x > m the two terms cancel to about log10(x / m) digits, which are
        added as guard digits."""
        import mpmath

        if is_symbolic(self.shape_value) or is_symbolic(self.mean):
            return None
        guard = 10 + max(0, int(mpmath.log10(1 + x / _mpf(self.mean))))
        with mpmath.extradps(guard):
            a, m = _mpf(self.shape_value), _mpf(self.mean)
            z = a * x / m
            value = (m - x) * mpmath.gammainc(a, z, mpmath.inf, regularized=True) + m * mpmath.exp(
                a * mpmath.log(z) - z - mpmath.loggamma(a + 1)) if z > 0 else m
        return +value

    def sample(self, rng, size):
        a = float(self.shape_value)
        return rng.gamma(a, float(self.mean) / a, size)


@dataclass(frozen=True)
class Exponential(_GammaFamily):
    """Exponential time with mean m (rate 1/m).  LST 1/(1 + m s);
    beta_k = mu/(lambda + mu) (lambda/(lambda + mu))^k (``docs/theory/chapter2.md`` section 3)."""

    spec = "exp"
    mean: object = param("mean time m (rate 1/m)", units="time", metavar="X", check="> 0")

    @property
    def shape_value(self):
        return 1

    def survival_pieces(self):
        """P(T > x) = e^{-x/m}."""
        return ((1, 1 / self.mean, None),)

    def sample(self, rng, size):
        return rng.exponential(float(self.mean), size)

    @classmethod
    def examples(cls):
        return (cls(Fraction(1, 2)), cls(Fraction(3, 40)))


@dataclass(frozen=True)
class Erlang(_GammaFamily):
    """Erlang-k time with mean m: k exponential phases of rate k/m.  LST (k/(k + m s))^k."""

    spec = "erlang"
    k: int = param("number of phases", kind=Kind.INTEGER, structural=True, metavar="K", check=">= 1")
    mean: object = param("mean time m", units="time", metavar="X", check="> 0")

    @property
    def shape_value(self):
        return self.k

    @classmethod
    def examples(cls):
        return (cls(2, Fraction(1, 2)), cls(4, Fraction(3, 200)))


@dataclass(frozen=True)
class Gamma(_GammaFamily):
    """Gamma time with shape a > 0 and mean m (rate a/m).  LST (a/(a + m s))^a."""

    spec = "gamma"
    shape: object = param("shape a (> 0)", metavar="A", check="> 0")
    mean: object = param("mean time m", units="time", metavar="X", check="> 0")

    @classmethod
    def examples(cls):
        return (cls(Fraction(5, 2), Fraction(1, 3)), cls(Fraction(1, 2), 2))
