"""Time laws (service and vacation times) as exact SymPy objects.

A time law is a tiny frozen class: its parameters, a validity check, the
defining formula (the Laplace-Stieltjes transform ``lst(s)``), and optional
closed-form hooks. Everything else comes from one generic path:

* ``moment(n)``: closed-form hook ``_moment`` or, generically,
  ``(-1)^n d^n/ds^n lst(s)`` at s = 0;
* ``poisson_mixing(k, lam)``: the probability beta_k of k Poisson(lam)
  arrivals during one such time (``spec/chapter2.md`` section 0), by the
  closed form of the law's count family (section 3 of the spec) or, generically,
  ``beta_k = (-lam)^k / k! * beta^{(k)}(lam)``.

The test ``tests/test_laws.py`` proves hook == transform for every law.

>>> from fractions import Fraction
>>> B = Erlang(4, Fraction(3, 200))
>>> B.moment(1), B.moment(2)
(3/200, 9/32000)
>>> Deterministic(Fraction(1, 2)).poisson_mixing(2, 2)
exp(-1)/2
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import sympy as sp

from ._exact import ParameterError, exact, is_number, require_positive, require_probability
from .counts import (
    CountLaw,
    GenericCount,
    MixtureCount,
    NegativeBinomialCount,
    PoissonCount,
    UniformMixedPoissonCount,
)

__all__ = [
    "TimeLaw",
    "Deterministic",
    "Exponential",
    "Erlang",
    "Gamma",
    "HyperExponential",
    "Uniform",
    "GeneralTime",
]

_s = sp.Symbol("s")


class TimeLaw:
    """Base class of a nonnegative random time with LST beta(s) = E e^{-sT}."""

    #: short name used in LaTeX and in the command line (``det``, ``exp``, ...)
    kind: str = "time"

    # -- required ---------------------------------------------------------------
    def lst(self, s) -> sp.Expr:
        """Laplace-Stieltjes transform beta(s) = E exp(-s T)."""
        raise NotImplementedError

    # -- optional closed-form hooks (None = use the generic path) ------------------
    def _moment(self, n: int):
        return None

    def count_law(self, lam) -> CountLaw:
        """Law of the number of Poisson(lam) batch arrivals during one such time."""
        return GenericCount(self.lst(_s), _s, lam)

    # -- generic paths -------------------------------------------------------------
    def moment(self, n: int) -> sp.Expr:
        """Raw moment E T^n: closed form if the law has one, else from the LST."""
        if n == 0:
            return sp.Integer(1)
        m = self._moment(n)
        if m is None:
            return self.moment_from_lst(n)
        m = sp.Integer(m) if isinstance(m, int) else m
        return m if m.is_Rational or m.is_Symbol else sp.simplify(m)

    def moment_from_lst(self, n: int) -> sp.Expr:
        """E T^n = (-1)^n beta^{(n)}(0); a removable 0/0 at s = 0 is taken as a limit."""
        d = sp.diff(self.lst(_s), _s, n)
        value = d.subs(_s, 0)
        if value.has(sp.nan, sp.zoo, sp.oo) or value is sp.nan:
            value = sp.limit(d, _s, 0, "+")
        return sp.simplify((-1) ** n * value)

    def poisson_mixing(self, k: int, lam) -> sp.Expr:
        """beta_k: probability of exactly k Poisson(lam) arrivals during one such time.

        ``spec/chapter2.md`` section 0 (definition) and section 3 (closed forms).
        """
        lam = exact(lam, "lam")
        return self.count_law(lam).pmf(k)

    def poisson_mixing_from_lst(self, k: int, lam) -> sp.Expr:
        """Generic path beta_k = (-lam)^k / k! * beta^{(k)}(lam)."""
        lam = exact(lam, "lam")
        return GenericCount(self.lst(_s), _s, lam).pmf(k)

    def variance(self) -> sp.Expr:
        return sp.simplify(self.moment(2) - self.moment(1) ** 2)

    def _repr_latex_(self) -> str:
        return "$" + sp.latex(sp.Eq(sp.Function(r"\beta")(_s), self.lst(_s))) + "$"


class _GammaFamily(TimeLaw):
    """Shared formulas of the gamma family (exponential, Erlang, gamma).

    LST (a / (a + m s))^a with shape a and mean m; E T^n = m^n Gamma(n + a) / (Gamma(a) a^n);
    arrivals: NegBin(a, nu / (lam + nu)) with nu = a / m (``spec/chapter2.md`` section 3).
    """

    shape: sp.Expr
    mean: sp.Expr

    def lst(self, s):
        a, m = self.shape, self.mean
        return (a / (a + m * s)) ** a

    def _moment(self, n):
        a, m = self.shape, self.mean
        return sp.gammasimp(m**n * sp.gamma(n + a) / (sp.gamma(a) * a**n))

    def count_law(self, lam):
        nu = self.shape / self.mean
        return NegativeBinomialCount(self.shape, sp.simplify(nu / (lam + nu)))


@dataclass(frozen=True)
class Exponential(_GammaFamily):
    """Exponential time with mean m (rate mu = 1/m).  LST mu / (mu + s).

    beta_k = mu/(lam+mu) * (lam/(lam+mu))^k  (``spec/chapter2.md`` section 3).
    """

    mean: sp.Expr
    kind = "exp"

    def __post_init__(self):
        object.__setattr__(self, "mean", require_positive(exact(self.mean, "mean"), "mean"))

    @property
    def shape(self):
        return sp.Integer(1)


@dataclass(frozen=True)
class Erlang(_GammaFamily):
    """Erlang-k time with mean m: k exponential phases of rate k/m.

    LST (k / (k + m s))^k.
    """

    k: int
    mean: sp.Expr
    kind = "erlang"

    def __post_init__(self):
        k = exact(self.k, "k")
        if not (k.is_Integer and k >= 1):
            raise ParameterError(f"k = {k}: the number of Erlang phases must be an integer >= 1")
        object.__setattr__(self, "k", int(k))
        object.__setattr__(self, "mean", require_positive(exact(self.mean, "mean"), "mean"))

    @property
    def shape(self):
        return sp.Integer(self.k)


@dataclass(frozen=True)
class Gamma(_GammaFamily):
    """Gamma time with shape a > 0 and mean m (rate a/m).  LST (a / (a + m s))^a."""

    shape: sp.Expr
    mean: sp.Expr
    kind = "gamma"

    def __post_init__(self):
        object.__setattr__(self, "shape", require_positive(exact(self.shape, "shape"), "shape"))
        object.__setattr__(self, "mean", require_positive(exact(self.mean, "mean"), "mean"))


@dataclass(frozen=True)
class Deterministic(TimeLaw):
    """Constant time d.  LST e^{-d s}; E T^n = d^n; arrivals Poisson(lam d)."""

    mean: sp.Expr
    kind = "det"

    def __post_init__(self):
        object.__setattr__(self, "mean", require_positive(exact(self.mean, "mean"), "mean"))

    def lst(self, s):
        return sp.exp(-self.mean * s)

    def _moment(self, n):
        return self.mean**n

    def count_law(self, lam):
        return PoissonCount(lam * self.mean)


@dataclass(frozen=True)
class HyperExponential(TimeLaw):
    """Mixture of exponentials: with probability p_i the time is Exp(mean m_i).

    LST sum_i p_i / (1 + m_i s); beta_k = sum_i p_i * (exponential beta_k with m_i).
    """

    probs: tuple
    means: tuple
    kind = "hyperexp"

    def __post_init__(self):
        probs = tuple(require_probability(exact(p, f"p{i + 1}"), f"p{i + 1}") for i, p in enumerate(self.probs))
        means = tuple(require_positive(exact(m, f"mean{i + 1}"), f"mean{i + 1}") for i, m in enumerate(self.means))
        if len(probs) != len(means) or len(probs) < 1:
            raise ParameterError(
                f"hyperexp: {len(probs)} probabilities and {len(means)} means: give one mean per phase"
            )
        total = sp.Add(*probs)
        if is_number(total) and total != 1:
            raise ParameterError(f"hyperexp probabilities sum to {total}: must sum to 1")
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "means", means)

    @cached_property
    def _phases(self):
        return tuple(Exponential(m) for m in self.means)

    @property
    def mean(self) -> sp.Expr:
        return self.moment(1)

    def lst(self, s):
        return sp.Add(*[p * ph.lst(s) for p, ph in zip(self.probs, self._phases)])

    def _moment(self, n):
        return sp.Add(*[p * ph.moment(n) for p, ph in zip(self.probs, self._phases)])

    def count_law(self, lam):
        return MixtureCount(self.probs, tuple(ph.count_law(lam) for ph in self._phases))


@dataclass(frozen=True)
class Uniform(TimeLaw):
    """Uniform time on [a, b], 0 <= a < b.  LST (e^{-a s} - e^{-b s}) / ((b - a) s).

    E T^n = (b^{n+1} - a^{n+1}) / ((n + 1)(b - a)).
    """

    low: sp.Expr
    high: sp.Expr
    kind = "uniform"

    def __post_init__(self):
        low, high = exact(self.low, "low"), exact(self.high, "high")
        if is_number(low) and bool(low < 0):
            raise ParameterError(f"low = {low}: must be >= 0")
        if is_number(high - low) and not bool(high > low):
            raise ParameterError(f"uniform: high = {high} must exceed low = {low} (use det:mean=... for a constant)")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @property
    def mean(self) -> sp.Expr:
        return (self.low + self.high) / 2

    def lst(self, s):
        a, b = self.low, self.high
        return (sp.exp(-a * s) - sp.exp(-b * s)) / ((b - a) * s)

    def _moment(self, n):
        a, b = self.low, self.high
        return (b ** (n + 1) - a ** (n + 1)) / ((n + 1) * (b - a))

    def count_law(self, lam):
        return UniformMixedPoissonCount(lam * self.low, lam * self.high)


@dataclass(frozen=True)
class GeneralTime(TimeLaw):
    """A general time law: an undefined LST with moment symbols.

    ``GeneralTime("beta", "b")`` has LST ``beta(s)`` and moments ``b1, b2, ...``
    (the thesis's service law B); ``GeneralTime("varphi", "f")`` is the vacation
    law F with moments ``f1, f2, ...``. Derivatives of ``beta`` at 0 are replaced
    by moments with :meth:`substitute_moments`.
    """

    function_name: str = "beta"
    moment_prefix: str = "b"
    kind = "general"
    _fn: sp.FunctionClass = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_fn", sp.Function(self.function_name))

    def lst(self, s):
        return self._fn(s)

    def _moment(self, n):
        return sp.Symbol(f"{self.moment_prefix}{n}", positive=True)

    @property
    def mean(self) -> sp.Expr:
        return self.moment(1)

    def substitute_moments(self, expr: sp.Expr) -> sp.Expr:
        """Replace beta(0) by 1 and beta^{(n)}(0) by (-1)^n b_n in ``expr``."""
        fn = self._fn

        def is_derivative_at_zero(e):
            return (
                isinstance(e, sp.Subs)
                and isinstance(e.expr, sp.Derivative)
                and e.expr.expr.func == fn
                and len(e.point) == 1
                and e.point[0] == 0
            )

        def moment_of(e):
            n = sum(count for _, count in e.expr.variable_count)
            return (-1) ** n * self.moment(n)

        expr = expr.replace(is_derivative_at_zero, moment_of)
        expr = expr.replace(
            lambda e: isinstance(e, sp.Derivative) and e.expr.func == fn and e.expr.args[0] == 0,
            lambda e: (-1) ** e.derivative_count * self.moment(e.derivative_count),
        )
        return expr.subs(fn(0), 1)
