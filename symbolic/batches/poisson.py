"""Batches of one plus a Poisson number of customers."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..numbers import to_sympy
from ..params import param
from .base import BatchLaw

__all__ = ["ShiftedPoisson"]


@dataclass(frozen=True)
class ShiftedPoisson(BatchLaw):
    """X = 1 + Poisson(m - 1): batches of mean m >= 1.  L(z) = z e^{(m-1)(z-1)}.

    P(X = i) = e^{-nu} nu^{i-1}/(i-1)! with nu = m - 1; E (X)_n = nu^n + n nu^{n-1}.
    """

    spec = "poisson1"
    mean: object = param("mean batch size m (>= 1)", units="customers", metavar="X", check=">= 1")

    @property
    def nu(self):
        """Mean of the Poisson part, m - 1."""
        return self.mean - 1

    def pgf(self, z):
        import sympy as sp

        return z * sp.exp(to_sympy(self.nu) * (z - 1))

    def pmf(self, i):
        import sympy as sp

        nu = to_sympy(self.nu)
        return sp.exp(-nu) * nu ** (i - 1) / sp.factorial(i - 1) if i >= 1 else sp.Integer(0)

    def tail(self, i):
        import sympy as sp

        return sp.simplify(1 - sp.Add(*[self.pmf(m) for m in range(1, i + 1)]))

    def excess(self, m):
        import sympy as sp

        return sp.simplify(to_sympy(self.mean) - sp.Add(*[self.tail(i) for i in range(m)]))

    def _factorial_moment(self, n):
        return self.nu**n + n * self.nu ** (n - 1)

    def sample(self, rng, size):
        return 1 + rng.poisson(float(self.nu), size)

    # -- scipy.stats-style hooks (:mod:`qderive.symbolic.distribution`) --------------------------------------
    def _tail_float(self, k):
        """P(X > k) = P(Poisson(nu) >= k) = P(k, nu) (the regularized lower gamma function; mpmath, no sum)."""
        import mpmath

        if k < 1:
            return 1.0
        nu = Fraction(self.nu)
        if nu == 0:
            return 0.0
        with mpmath.workdps(20):
            return float(mpmath.gammainc(k, 0, mpmath.mpf(nu.numerator) / nu.denominator, regularized=True))

    def _to_scipy(self):
        from scipy import stats

        return stats.poisson(float(self.nu), loc=1)

    @classmethod
    def _from_scipy(cls, frozen):
        """scipy's poisson(nu, loc=1): mean 1 + nu."""
        from ..distribution import decimal_fraction, scipy_arguments

        args = scipy_arguments(frozen, "poisson")
        if args is None or args[1] != 1:
            return None
        return cls(1 + decimal_fraction(args[0][0]))

    @classmethod
    def examples(cls):
        return (cls(Fraction(5, 2)), cls(1))
