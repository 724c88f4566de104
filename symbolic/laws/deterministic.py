"""A constant time."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..counts import PoissonCount
from ..numbers import to_sympy
from ..params import param
from .base import TimeLaw

__all__ = ["Deterministic"]


@dataclass(frozen=True)
class Deterministic(TimeLaw):
    """Constant time d.  LST e^{-d s}; E T^n = d^n; arrivals during it: Poisson(lambda d)
    (``docs/theory/chapter2.md`` section 3, row D)."""

    spec = "det"
    mean: object = param("the constant time d", units="time", metavar="X", check="> 0")

    def lst(self, s):
        import sympy as sp

        return sp.exp(-to_sympy(self.mean) * s)

    def _moment(self, n):
        return self.mean**n

    def count_law(self, lam):
        return PoissonCount((lam * self.mean,))

    def survival_pieces(self):
        """P(T > x) = 1{x < d}."""
        return ((1, 0, self.mean),)

    def sample(self, rng, size):
        import numpy as np

        return np.full(size, float(self.mean))

    @classmethod
    def examples(cls):
        return (cls(Fraction(1, 5)), cls(3))
