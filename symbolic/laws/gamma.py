"""The gamma family: exponential, Erlang-k and gamma times (one set of formulas).

LST (a / (a + m s))^a with shape a and mean m; E T^n = m^n a (a+1)...(a+n-1) / a^n;
arrivals during one such time: NegBin(a, p0 = a/(a + lambda m)), q = lambda m/(a + lambda m)
(``docs/theory/chapter2.md`` section 3, Erlang / gamma row; a = 1 is the exponential row).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

from ..counts import NegativeBinomialCount
from ..errors import ParameterError
from ..numbers import is_symbolic, to_sympy
from ..params import Kind, param
from .base import TimeLaw, taylor_cells, taylor_coefficients

__all__ = ["Exponential", "Erlang", "Gamma"]



def _mpf(v):
    """An exact number as an mpf at the current precision."""
    import mpmath

    v = Fraction(v)
    return mpmath.mpf(v.numerator) / v.denominator


def _gamma_q_float64(law, xs):
    """Q(a, a x / m) in float64 for a numpy array of x >= 0 (:meth:`_GammaFamily.survival_many`): the numeric layer's
    kernel ``survival`` (:data:`~.base.FLOAT64_SURVIVAL`; numpy only, shipped by generated code), the points it
    cannot compute (or all, without it) by :meth:`survival` (mpmath)."""
    import numpy

    from .base import float64_survival

    got = float64_survival(law, numpy.asarray(xs, dtype=float))
    out, bad = got if got is not None else (numpy.ones(len(xs)), numpy.ones(len(xs), dtype=bool))
    if bad.any():
        import mpmath

        with mpmath.workdps(17):
            for i in numpy.nonzero(bad)[0]:
                out[i] = float(law.survival(mpmath.mpf(float(xs[i]))))
    return out


def _gamma_cell(z):
    """The Taylor cell of z (:meth:`_GammaFamily.survival_many`): ("u", k) for z in [k / 2, (k + 1) / 2), k >= 4;
    ("g", e) for z in [2^e, 2^{e+1}), -40 <= e <= 0; None below 2^-40 (the scalar survival)."""
    import math

    f = float(z)  # the cell of the float: a point within 1e-15 of a boundary may go to the neighbour (still converges)
    if f >= 2:
        return ("u", int(math.floor(2 * f)))
    if f < 2.0**-40:
        return None
    return ("g", math.frexp(f)[1] - 1)


def _gamma_cell_centre(key):
    """(centre, radius) of a cell as exact mpf numbers (binary fractions)."""
    import mpmath

    kind, k = key
    if kind == "u":
        return mpmath.mpf(2 * k + 1) / 4, mpmath.mpf(1) / 4
    return mpmath.ldexp(3, k - 1), mpmath.ldexp(1, k - 1)


@functools.lru_cache(maxsize=4096)
def _gamma_taylor(a: Fraction, key, prec: int):
    """(Q(a, c), [A_0, ..., A_N], c) with Q(a, c + h) = Q(a, c) - sum_k A_k h^{k+1}, A_k = c^{a-1} e^{-c} g_k /
    (Gamma(a) (k + 1)) (:meth:`_GammaFamily.survival_many`), at ``prec`` bits (mpf numbers)."""
    import mpmath

    with mpmath.workprec(prec + 10):
        A = _mpf(a)
        c, r = _gamma_cell_centre(key)
        q = mpmath.gammainc(A, c, mpmath.inf, regularized=True)
        lead = mpmath.exp((A - 1) * mpmath.log(c) - c - mpmath.loggamma(A))
        coef = taylor_coefficients(lead, lambda k, g, g1: ((A - 1 - c - k) * g - g1) / (c * (k + 1)), r,
                                   q * mpmath.ldexp(1, -(prec + 8)))
    with mpmath.workprec(prec):
        q, coef = +q, [+v for v in coef]
    return q, coef, c


class _GammaFamily(TimeLaw):
    """Shared formulas; subclasses define ``shape`` and ``mean``."""

    @property
    def shape_value(self):
        return self.shape

    def decay_rate(self):
        """shape / mean: a gamma law's transform (1 + s m / a)^{-a} is analytic for Re s > -a / m (None for symbols)."""
        try:
            return float(self.shape_value) / float(self.mean)
        except TypeError:
            return None

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

    def survival_bound(self, center, lo, hi, height):
        """For an integer shape k (:meth:`TimeLaw.survival_bound`): S(z) = e^{-w} sum_{i<k} w^i / i!, w = k z / m,
        so |S(z)| <= e^{-k lo / m} sum_{i<k} (k R / m)^i / i!, R = hypot(max(|lo|, |hi|), height) the largest |z|; a
        shape that is not an integer: None (no bound of the incomplete gamma function off the real axis here)."""
        if is_symbolic(self.shape_value) or is_symbolic(self.mean) or self.shape_value != int(self.shape_value):
            return None
        import numpy

        k, m = int(self.shape_value), float(self.mean)
        lo, hi = numpy.asarray(lo, dtype=float), numpy.asarray(hi, dtype=float)
        w = k * numpy.hypot(numpy.maximum(numpy.abs(lo), numpy.abs(hi)), numpy.asarray(height, dtype=float)) / m
        term, total = numpy.ones_like(w), numpy.ones_like(w)
        for i in range(1, k):
            term = term * w / i
            total = total + term
        return total * numpy.exp(-k * lo / m) * (1 + 1e-13)

    def survival(self, x):
        """P(T > x) = Q(a, a x / m), the regularized upper incomplete gamma function (mpmath)."""
        import mpmath

        if is_symbolic(self.shape_value) or is_symbolic(self.mean):
            return None
        a, m = _mpf(self.shape_value), _mpf(self.mean)
        return mpmath.gammainc(a, a * x / m, mpmath.inf, regularized=True)

    def survival_many(self, xs, digits=None):
        """P(T > x) = Q(a, z), z = a x / m, at every point of ``xs`` at once (:meth:`TimeLaw.survival_many`).

        float64 (``digits`` None; numpy, no SciPy): for z < a + 1 the series
        P(a, z) = z^a e^{-z} / Gamma(a + 1) sum_k z^k / ((a + 1) ... (a + k)) and Q = 1 - P (Q >= 1/20 there for
        every a >= 1/20: at most about one digit lost), for z >= a + 1 the continued fraction
        Q(a, z) = z^a e^{-z} / Gamma(a) / (z + 1 - a - 1 (1 - a) / (z + 3 - a - 2 (2 - a) / (z + 5 - a - ...)))
        by the modified Lentz method (DLMF 8.7.3 and 8.9.2), every point of the batch at once; points that
        do not converge in 1000 steps (and shapes below 1/20) fall back to :meth:`survival`.

        ``digits`` D (mpmath): a Taylor expansion around fixed centres c (in z: cells of width 1/2 for z >= 2,
        [2^e, 2^{e+1}) below, centre the middle, radius r with r / c <= 1/3; below 2^-40 and at 0 the scalar
        :meth:`survival`)::

            Q(a, c + h) = Q(a, c) - c^{a-1} e^{-c} / Gamma(a) sum_{k>=0} g_k h^{k+1} / (k + 1),
            sum_k g_k v^k = (1 + v / c)^{a-1} e^{-v},
            g_0 = 1,  g_{k+1} = ((a - 1 - c - k) g_k - g_{k-1}) / (c (k + 1))

        (from (c + v) G'(v) = (a - 1 - c - v) G(v), the integrand of Q's derivative -z^{a-1} e^{-z} / Gamma(a);
        DLMF 8.2.4), stopped when two consecutive terms at h = r are below 2^-(p + 8) Q(a, c) (p the bits
        of D + 5 digits: the terms then fall at least like max(r / c, r / k) <= 1/3), Horner at every point of a
        cell at once. Q(a, c) (one ``mpmath.gammainc`` per cell) and the coefficients are kept per (law, cell,
        precision): they do not depend on the points, so the nodes of every tail of a quantile search reuse
        them. Over a cell Q(a, c + h) >= Q(a, c) / 4, so the subtraction loses under one digit."""
        if is_symbolic(self.shape_value) or is_symbolic(self.mean):
            return None
        if digits is None:
            return _gamma_q_float64(self, xs)
        import mpmath

        with mpmath.workdps(digits + 5):
            a, m = _mpf(self.shape_value), _mpf(self.mean)
            zs = [a / m * x for x in xs]
            prec, shape = mpmath.mp.prec, Fraction(self.shape_value)
            out = taylor_cells(zs, _gamma_cell, lambda key: _gamma_taylor(shape, key, prec), prec)
            for i, z in enumerate(zs):
                if out[i] is None:
                    out[i] = mpmath.gammainc(a, z, mpmath.inf, regularized=True)
            return out

    def survival_kernel(self):
        """(kernel function, its law arguments) of the float64 survival function (the numeric layer's kernel
        ``survival``, which generated code ships): ``gamma_survival`` (shape, mean)."""
        return "gamma_survival", (self.shape_value, self.mean)

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

    # -- scipy.stats-style hooks (:mod:`qderive.symbolic.distribution`) --------------------------------------
    def _pdf(self, x):
        """f(x) = (a/m)^a x^{a-1} e^{-a x/m} / Gamma(a), in logarithms (float64)."""
        import math

        import numpy

        a, m = float(self.shape_value), float(self.mean)
        with numpy.errstate(divide="ignore", invalid="ignore"):
            logf = a * math.log(a / m) + (a - 1) * numpy.log(x) - a * x / m - math.lgamma(a)
            out = numpy.exp(logf)
        at0 = x == 0
        if numpy.any(at0):  # a < 1: infinite; a = 1: 1/m; a > 1: 0
            out = numpy.where(at0, numpy.inf if a < 1 else (1 / m if a == 1 else 0.0), out)
        return out

    def _to_scipy(self):
        from scipy import stats

        a = float(self.shape_value)
        return stats.gamma(a, scale=float(self.mean) / a)

    @classmethod
    def _from_gamma(cls, frozen, integer: bool):
        from ..distribution import decimal_fraction, scipy_arguments

        args = scipy_arguments(frozen, "gamma")
        if args is None:
            return None
        (a,), loc, scale = args
        if loc != 0:
            raise ParameterError("loc", "must be 0 for a time law (a shifted gamma law is not converted)", loc)
        shape = decimal_fraction(a)
        if (shape.denominator == 1) != integer:
            return None
        mean = decimal_fraction(float(a) * float(scale), 15)
        return cls(int(shape), mean) if integer else cls(shape, mean)


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

    def _ppf(self, q):
        """-m ln(1 - q) (log1p: no cancellation for small q)."""
        import numpy

        return -float(self.mean) * numpy.log1p(-q)

    def _to_scipy(self):
        from scipy import stats

        return stats.expon(scale=float(self.mean))

    @classmethod
    def _from_scipy(cls, frozen):
        from ..distribution import decimal_fraction, scipy_arguments

        args = scipy_arguments(frozen, "expon")
        if args is None:
            return None
        _, loc, scale = args
        if loc != 0:
            raise ParameterError("loc", "must be 0 for a time law (a shifted exponential law is not converted)", loc)
        return cls(decimal_fraction(scale))

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
    def _from_scipy(cls, frozen):
        """scipy's gamma with an integer shape k."""
        return cls._from_gamma(frozen, integer=True)

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
    def _from_scipy(cls, frozen):
        """scipy's gamma with a shape that is not an integer (an integer one is an Erlang law)."""
        return cls._from_gamma(frozen, integer=False)

    @classmethod
    def examples(cls):
        return (cls(Fraction(5, 2), Fraction(1, 3)), cls(Fraction(1, 2), 2))
