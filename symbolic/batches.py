"""Batch-size laws: the number X of customers in one arriving group.

``P(X = i) = l_i`` for i >= 1 (a batch is never empty), PGF ``L(z) = sum_i l_i z^i``,
raw moments ``l1 = E X``, ``l2 = E X^2`` (the thesis writes l^{(1)}, l^{(2)};
``spec/chapter2.md`` section 0). Each law gives ``pgf(z)``, ``pmf(i)``,
``tail(i) = P(X > i)``, raw ``moment(n)`` and ``factorial_moment(n) = L^{(n)}(1)``.
Closed forms are hooks; the generic path differentiates the PGF at z = 1.

>>> from fractions import Fraction
>>> G = Geometric(5)
>>> G.pmf(1), G.moment(2), G.factorial_moment(2)
(1/5, 45, 40)
>>> FinitePMF({1: Fraction(1, 2), 3: Fraction(1, 2)}).moment(1)
2
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy.functions.combinatorial.numbers import stirling

from ._exact import ParameterError, exact, is_number, require_positive, require_probability

__all__ = ["BatchLaw", "Geometric", "Constant", "FinitePMF", "ShiftedPoisson", "GeneralBatch"]

_z = sp.Symbol("z")


class BatchLaw:
    """Base class of a batch-size law on {1, 2, ...}."""

    kind: str = "batch"

    def pgf(self, z) -> sp.Expr:
        """PGF L(z) = E z^X."""
        raise NotImplementedError

    def pmf(self, i: int) -> sp.Expr:
        """l_i = P(X = i): the i-th Taylor coefficient of L at 0 (generic path)."""
        if i < 1:
            return sp.Integer(0)
        return sp.simplify(sp.diff(self.pgf(_z), _z, i).subs(_z, 0) / sp.factorial(i))

    def tail(self, i: int) -> sp.Expr:
        """P(X > i) (closed forms in subclasses; generic: 1 - sum_{m<=i} l_m, exact only)."""
        return sp.simplify(1 - sp.Add(*[self.pmf(m) for m in range(1, i + 1)]))

    @property
    def max_size(self) -> int | None:
        """Largest possible batch size, or None if unbounded."""
        return None

    def _factorial_moment(self, n: int):
        return None

    def factorial_moment(self, n: int) -> sp.Expr:
        """E X(X-1)...(X-n+1) = L^{(n)}(1)."""
        m = self._factorial_moment(n)
        if m is not None:
            return m if m.is_Rational else sp.simplify(m)
        d = sp.diff(self.pgf(_z), _z, n)
        value = d.subs(_z, 1)
        if value.has(sp.nan, sp.zoo):
            value = sp.limit(d, _z, 1)
        return sp.simplify(value)

    def moment(self, n: int) -> sp.Expr:
        """Raw moment E X^n = sum_k S(n, k) E (X)_k (Stirling numbers of the second kind)."""
        if n == 0:
            return sp.Integer(1)
        return sp.expand(sp.Add(*[stirling(n, k, kind=2) * self.factorial_moment(k) for k in range(1, n + 1)]))

    def _repr_latex_(self) -> str:
        return "$" + sp.latex(sp.Eq(sp.Function("L")(_z), self.pgf(_z))) + "$"


@dataclass(frozen=True)
class Geometric(BatchLaw):
    """Geometric batches on {1, 2, ...} with mean m (p = 1/m).

    l_i = p (1-p)^{i-1}; L(z) = p z / (1 - (1-p) z); P(X > i) = (1-p)^i;
    l2 = (2 - p)/p^2; the k-fold sum is 1 + NegBin: l^{(k)}_n = C(n-1, k-1) p^k (1-p)^{n-k}
    (``spec/chapter2.md`` section 3).
    """

    mean: sp.Expr
    kind = "geometric"

    def __post_init__(self):
        m = exact(self.mean, "mean")
        if is_number(m) and not bool(m >= 1):
            raise ParameterError(f"geometric batch mean = {m}: must be >= 1 (batches are never empty)")
        object.__setattr__(self, "mean", m)

    @property
    def p(self) -> sp.Expr:
        return 1 / self.mean

    def pgf(self, z):
        p = self.p
        return p * z / (1 - (1 - p) * z)

    def pmf(self, i):
        p = self.p
        return p * (1 - p) ** (i - 1) if i >= 1 else sp.Integer(0)

    def tail(self, i):
        return (1 - self.p) ** i if i >= 0 else sp.Integer(1)

    def _factorial_moment(self, n):
        p = self.p
        return sp.factorial(n) * (1 - p) ** (n - 1) / p**n


@dataclass(frozen=True)
class Constant(BatchLaw):
    """Every batch has exactly n customers (n = 1: ordinary Poisson arrivals).  L(z) = z^n."""

    n: int
    kind = "const"

    def __post_init__(self):
        n = exact(self.n, "n")
        if not (n.is_Integer and n >= 1):
            raise ParameterError(f"n = {n}: the constant batch size must be an integer >= 1")
        object.__setattr__(self, "n", int(n))

    @property
    def mean(self):
        return sp.Integer(self.n)

    @property
    def max_size(self):
        return self.n

    def pgf(self, z):
        return z**self.n

    def pmf(self, i):
        return sp.Integer(1 if i == self.n else 0)

    def tail(self, i):
        return sp.Integer(1 if i < self.n else 0)

    def _factorial_moment(self, n):
        return sp.ff(self.n, n)


@dataclass(frozen=True)
class FinitePMF(BatchLaw):
    """An explicit pmf on a finite set of sizes: ``FinitePMF({1: p1, 2: p2, ...})``.

    L(z) = sum_i p_i z^i. The probabilities must be in [0, 1] and sum to 1 exactly.
    """

    probs: tuple  # ((size, prob), ...) sorted by size
    kind = "pmf"

    def __init__(self, probs):
        items = probs.items() if isinstance(probs, dict) else enumerate(probs, start=1)
        cleaned = []
        for size, prob in items:
            size_e = exact(size, "batch size")
            if not (size_e.is_Integer and size_e >= 1):
                raise ParameterError(f"batch size {size}: sizes must be integers >= 1")
            prob_e = require_probability(exact(prob, f"P(X={size})"), f"P(X={size})")
            if prob_e != 0:
                cleaned.append((int(size_e), prob_e))
        cleaned.sort()
        if len({s for s, _ in cleaned}) != len(cleaned):
            raise ParameterError("batch pmf: a size is given twice")
        total = sp.Add(*[p for _, p in cleaned])
        if not cleaned or (is_number(total) and total != 1):
            raise ParameterError(f"batch pmf sums to {total}: the probabilities must sum to 1")
        object.__setattr__(self, "probs", tuple(cleaned))

    @property
    def mean(self):
        return self.moment(1)

    @property
    def max_size(self):
        return self.probs[-1][0]

    def pgf(self, z):
        return sp.Add(*[p * z**i for i, p in self.probs])

    def pmf(self, i):
        return dict(self.probs).get(i, sp.Integer(0))

    def tail(self, i):
        return sp.Add(*[p for size, p in self.probs if size > i])

    def _factorial_moment(self, n):
        return sp.Add(*[p * sp.ff(i, n) for i, p in self.probs])


@dataclass(frozen=True)
class ShiftedPoisson(BatchLaw):
    """X = 1 + Poisson(m - 1): batches of mean m >= 1.  L(z) = z e^{(m-1)(z-1)}."""

    mean: sp.Expr
    kind = "poisson1"

    def __post_init__(self):
        m = exact(self.mean, "mean")
        if is_number(m) and not bool(m >= 1):
            raise ParameterError(f"poisson1 batch mean = {m}: must be >= 1")
        object.__setattr__(self, "mean", m)

    @property
    def nu(self) -> sp.Expr:
        """Mean of the Poisson part, m - 1."""
        return self.mean - 1

    def pgf(self, z):
        return z * sp.exp(self.nu * (z - 1))

    def pmf(self, i):
        nu = self.nu
        return sp.exp(-nu) * nu ** (i - 1) / sp.factorial(i - 1) if i >= 1 else sp.Integer(0)

    def _factorial_moment(self, n):
        # (X)_n of 1 + Y: E (1+Y)_n = nu^n + n nu^{n-1}
        nu = self.nu
        return nu**n + n * nu ** (n - 1)


@dataclass(frozen=True)
class GeneralBatch(BatchLaw):
    """A general batch law: an undefined PGF ``L(z)`` with raw-moment symbols l1, l2, ...

    Derivatives of L at z = 1 become factorial moments written in the raw moments
    (``L'(1) = l1``, ``L''(1) = l2 - l1``, ...) by :meth:`substitute_moments`.
    """

    function_name: str = "L"
    moment_prefix: str = "l"
    kind = "general"
    _fn: sp.FunctionClass = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_fn", sp.Function(self.function_name))

    def pgf(self, z):
        return self._fn(z)

    def moment(self, n):
        return sp.Symbol(f"{self.moment_prefix}{n}", positive=True) if n else sp.Integer(1)

    def _factorial_moment(self, n):
        # E (X)_n = sum_k s(n, k) E X^k, signed Stirling numbers of the first kind
        return sp.expand(sp.Add(*[stirling(n, k, kind=1, signed=True) * self.moment(k) for k in range(1, n + 1)]))

    @property
    def mean(self):
        return self.moment(1)

    def substitute_moments(self, expr: sp.Expr) -> sp.Expr:
        """Replace L(1) by 1 and L^{(n)}(1) by the n-th factorial moment."""
        fn = self._fn

        def is_derivative_at_one(e):
            return (
                isinstance(e, sp.Subs)
                and isinstance(e.expr, sp.Derivative)
                and e.expr.expr.func == fn
                and len(e.point) == 1
                and e.point[0] == 1
            )

        expr = expr.replace(
            is_derivative_at_one,
            lambda e: self.factorial_moment(sum(c for _, c in e.expr.variable_count)),
        )
        expr = expr.replace(
            lambda e: isinstance(e, sp.Derivative) and e.expr.func == fn and e.expr.args[0] == 1,
            lambda e: self.factorial_moment(e.derivative_count),
        )
        return expr.subs(fn(1), 1)
