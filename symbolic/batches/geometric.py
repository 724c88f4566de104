"""Geometric batches."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..numbers import to_sympy
from ..params import param
from .base import BatchLaw

__all__ = ["Geometric"]


@dataclass(frozen=True)
class Geometric(BatchLaw):
    """Geometric batches on {1, 2, ...} with mean m (p = 1/m).

    l_i = p (1-p)^{i-1}; L(z) = p z / (1 - (1-p) z); P(X > i) = (1-p)^i; E(X - m)^+ = (1-p)^m / p;
    the k-fold sum is 1 + NegBin: l^{(k)}_n = C(n-1, k-1) p^k (1-p)^{n-k} (``docs/theory/chapter2.md`` section 3).
    """

    spec = "geometric"
    mean: object = param("mean batch size m (>= 1)", units="customers", metavar="X", check=">= 1")

    @property
    def p(self):
        return 1 / self.mean

    @property
    def q(self):
        """1 - p = (m - 1)/m, formed without subtracting from 1."""
        return (self.mean - 1) / self.mean

    def pgf(self, z):
        p, q = to_sympy(self.p), to_sympy(self.q)
        return p * z / (1 - q * z)

    def pmf(self, i):
        return self.p * self.q ** (i - 1) if i >= 1 else 0 * self.p

    def tail(self, i):
        return self.q**i if i >= 0 else 1 + 0 * self.p

    def excess(self, m):
        return self.q**m / self.p

    def _factorial_moment(self, n):
        return math.factorial(n) * self.q ** (n - 1) / self.p**n

    def sample(self, rng, size):
        return rng.geometric(float(self.p), size)

    # -- scipy.stats-style hooks (:mod:`qderive.symbolic.distribution`) --------------------------------------
    def _tail_float(self, k):
        """(1 - p)^k in float64 (no exact power of a large k)."""
        return float(self.q) ** k

    def _to_scipy(self):
        from scipy import stats

        return stats.geom(float(self.p))

    @classmethod
    def _from_scipy(cls, frozen):
        """scipy's geom(p) (on 1, 2, ...): mean 1/p (15 significant digits)."""
        from ..distribution import decimal_fraction, scipy_arguments
        from ..errors import ParameterError

        args = scipy_arguments(frozen, "geom")
        if args is None:
            return None
        (p,), loc, _ = args
        if loc != 0:
            raise ParameterError("loc", "must be 0 for a batch law on 1, 2, ...", loc)
        return cls(decimal_fraction(1 / float(p), 15))

    @classmethod
    def examples(cls):
        return (cls(Fraction(3, 2)), cls(5), cls(1))
