"""The base of every batch-size law: X >= 1 customers per arriving group.

``P(X = i) = l_i`` for i >= 1 (a batch is never empty), PGF ``L(z) = sum_i l_i z^i``,
raw moments ``l1 = E X``, ``l2 = E X^2`` (the thesis writes l^{(1)}, l^{(2)};
``docs/theory/chapter2.md`` section 0). Each law gives ``pgf(z)`` (SymPy), ``pmf(i)`` and
``tail(i) = P(X > i)`` exactly, raw ``moment(n)`` and ``factorial_moment(n) = L^{(n)}(1)``,
its support bounds and a sampler. Subclassing with ``spec = "name"`` registers the class.
"""

from __future__ import annotations

from fractions import Fraction
from typing import ClassVar

from ..distribution import (
    BatchLawDistribution,  # the scipy.stats-style API (sf, cdf, ppf, rvs, ...): see there
)
from ..errors import ParameterError
from ..laws.base import Law

__all__ = ["BatchLaw"]


class BatchLaw(BatchLawDistribution, Law):
    """A batch-size law on {1, 2, ...} (see the module docstring)."""

    family_name = "batch law"
    _registry: ClassVar[dict] = {}

    def pgf(self, z):
        """L(z) = E z^X as a SymPy expression."""
        raise NotImplementedError

    def pmf(self, i: int):
        """l_i = P(X = i), exactly."""
        raise NotImplementedError

    def tail(self, i: int):
        """P(X > i), exactly (closed forms in subclasses)."""
        raise NotImplementedError

    @property
    def max_size(self) -> int | None:
        """Largest possible batch size, or None if unbounded."""
        return None

    @property
    def min_size(self) -> int:
        """Smallest possible batch size."""
        return 1

    def support(self) -> dict | None:
        """``{size: probability}`` for a law with finitely many sizes, else None."""
        return None

    def _factorial_moment(self, n: int):
        return None

    def factorial_moment(self, n: int):
        """E X(X-1)...(X-n+1) = L^{(n)}(1)."""
        m = self._factorial_moment(n)
        if m is not None:
            return m
        import sympy as sp

        z = sp.Symbol("z")
        d = sp.diff(self.pgf(z), z, n)
        value = d.subs(z, 1)
        if value.has(sp.nan, sp.zoo):
            value = sp.limit(d, z, 1)
        return sp.simplify(value)

    def moment(self, n: int):
        """Raw moment E X^n = sum_k S(n, k) E (X)_k (Stirling numbers of the second kind)."""
        if n == 0:
            return Fraction(1)
        return sum(_stirling2(n, k) * self.factorial_moment(k) for k in range(1, n + 1))

    def excess(self, m: int):
        """E (X - m)^+ = sum_{i >= m} P(X > i), exactly (finite sums; closed forms in subclasses)."""
        if m < 0:
            raise ParameterError("m", "must be >= 0", m)
        return self.mean - sum((self.tail(i) for i in range(m)), Fraction(0))

    def sample(self, rng, size: int):
        raise ParameterError(f"{type(self).__name__} cannot be sampled: give a concrete batch law")

    def _repr_latex_(self) -> str:
        import sympy as sp

        z = sp.Symbol("z")
        return "$" + sp.latex(sp.Eq(sp.Function("L")(z), self.pgf(z))) + "$"


def _stirling2(n: int, k: int) -> int:
    """Stirling number of the second kind S(n, k) (an integer recurrence, no SymPy)."""
    row = [1] + [0] * k
    for i in range(1, n + 1):
        new = [0] * (k + 1)
        for j in range(1, min(i, k) + 1):
            new[j] = j * row[j] + row[j - 1]
        row = new
    return row[k]
