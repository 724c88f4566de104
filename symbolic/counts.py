"""Laws of the number of Poisson batch arrivals during one random time: the count families.

If batches arrive as a Poisson process of rate lambda and a service (or vacation) lasts
a random time T, the number K of batches arriving during it has the Poisson-mixing
probabilities (Sopin 2013, section 0 of ``docs/theory/chapter2.md``)::

    beta_k = P(K = k) = int_0^oo (lambda x)^k / k! e^{-lambda x} dB(x) = (-lambda)^k / k! beta^{(k)}(lambda).

A time law *describes* its count law with one of the families below (exact
parameters); the numeric layer evaluates each family once, by one kernel
(``kernels.counts`` of the numeric layer), as positive-term sequences beta_k, P(K > k) and
sum_{i>k} P(K > i). A new time law picks a family -- a Poisson mixture for a sample or a
quadrature, a negative-binomial mixture for gamma-type laws, the phase-type family for
any PH law -- and needs no numeric code of its own. Each family also gives ``pmf(k)``
exactly (SymPy), the closed-form hook of :meth:`TimeLaw.poisson_mixing`.

=================================  ============================================  ===================
family                             beta_k                                        laws
=================================  ============================================  ===================
:class:`PoissonCount`              sum_j w_j e^{-m_j} m_j^k / k!                 det, empirical
:class:`NegativeBinomialCount`     Gamma(k+a)/(Gamma(a) k!) p0^a q^k             exp, Erlang, gamma
:class:`MixtureCount`              sum_i w_i beta^{(i)}_k                        hyperexponential
:class:`PhaseTypeCount`            alpha M^k (lambda I - T)^{-1} t               PH, Coxian
:class:`UniformMixedPoissonCount`  (P(Pois(lb) > k) - P(Pois(la) > k))/(lb-la)    uniform
:class:`QuadratureCount`           a Poisson mixture at the working precision    lognormal
:class:`GenericCount`              the derivative formula (symbolic only)        general laws
=================================  ============================================  ===================
"""

from __future__ import annotations

from dataclasses import dataclass

from .numbers import to_sympy

__all__ = [
    "CountLaw",
    "PoissonCount",
    "NegativeBinomialCount",
    "MixtureCount",
    "PhaseTypeCount",
    "UniformMixedPoissonCount",
    "QuadratureCount",
    "GenericCount",
]


class CountLaw:
    """The distribution of the number of batches arriving during one random time."""

    def pmf(self, k: int):
        """P(K = k) exactly (a SymPy expression)."""
        raise NotImplementedError


@dataclass(frozen=True)
class PoissonCount(CountLaw):
    """K ~ sum_j w_j Poisson(m_j): a deterministic time d has one node m = lambda d;
    an empirical law one node per sample value (``docs/theory/chapter2.md`` section 3, row D)."""

    means: tuple
    weights: tuple = (1,)

    def pmf(self, k):
        import sympy as sp

        return sp.Add(*[to_sympy(w) * sp.exp(-to_sympy(m)) * to_sympy(m) ** k / sp.factorial(k)
                        for m, w in zip(self.means, self.weights)])


@dataclass(frozen=True)
class NegativeBinomialCount(CountLaw):
    """K ~ NegBin(shape a, p0): arrivals during a gamma time of shape a and mean m.

    With nu = a/m: p0 = nu/(lambda + nu) = a/(a + lambda m) and q = lambda m/(a + lambda m),
    both given exactly (q is never formed as 1 - p0, which cancels at light load);
    beta_k = Gamma(k + a)/(Gamma(a) k!) p0^a q^k (``docs/theory/chapter2.md`` section 3).
    """

    shape: object
    p0: object
    q: object

    def pmf(self, k):
        import sympy as sp

        a, p0, q = (to_sympy(v) for v in (self.shape, self.p0, self.q))
        return sp.gamma(k + a) / (sp.gamma(a) * sp.factorial(k)) * p0**a * q**k


@dataclass(frozen=True)
class MixtureCount(CountLaw):
    """beta_k = sum_i w_i beta^{(i)}_k: the count law of a mixture of times (hyperexponential)."""

    weights: tuple
    components: tuple

    def pmf(self, k):
        import sympy as sp

        return sp.Add(*[to_sympy(w) * c.pmf(k) for w, c in zip(self.weights, self.components)])


@dataclass(frozen=True)
class PhaseTypeCount(CountLaw):
    """Arrivals during a phase-type time PH(alpha, T) (exit rates t = -T 1).

    With N = (lambda I - T)^{-1} (entrywise >= 0) and M = lambda N:
    beta_k = alpha M^k N t, P(K > k) = alpha M^{k+1} 1, sum_{i>k} P(K > i) = alpha M^{k+2} (lambda m + 1)
    with m = (-T)^{-1} 1 the mean remaining times: every quantity is a product of
    nonnegative matrices and vectors (no subtraction).
    """

    alpha: tuple
    T: tuple
    lam: object

    def pmf(self, k):
        import sympy as sp

        n = len(self.alpha)
        T = sp.Matrix([[to_sympy(v) for v in row] for row in self.T])
        lam = to_sympy(self.lam)
        N = (lam * sp.eye(n) - T).inv()
        t = -T * sp.ones(n, 1)
        a = sp.Matrix([[to_sympy(v) for v in self.alpha]])
        return sp.simplify((a * (lam * N) ** k * N * t)[0, 0])


@dataclass(frozen=True)
class UniformMixedPoissonCount(CountLaw):
    """K ~ Poisson(lambda T), T uniform on [a, b]:
    beta_k = (P(Pois(lambda b) > k) - P(Pois(lambda a) > k)) / (lambda (b - a)) (``docs/theory/chapter2.md`` section 3)."""

    lam_low: object
    lam_high: object

    def pmf(self, k):
        import sympy as sp

        u = sp.Dummy("u", positive=True)
        lo, hi = to_sympy(self.lam_low), to_sympy(self.lam_high)
        return sp.integrate(u**k * sp.exp(-u), (u, lo, hi)) / (sp.factorial(k) * (hi - lo))


@dataclass(frozen=True)
class QuadratureCount(CountLaw):
    """A law whose count probabilities are integrals without closed form (lognormal).

    The numeric layer asks ``law.quadrature(dps, level)`` for nodes x_j and positive weights
    w_j at the working precision (the law's density integrated in a transformed variable),
    evaluates the Poisson mixture sum_j w_j Poisson(lambda x_j) and checks it against the
    next level; exact values are not available (``pmf`` raises).
    """

    law: object
    lam: object

    def pmf(self, k):
        raise NotImplementedError(f"{type(self.law).__name__}: count probabilities have no closed form")


@dataclass(frozen=True)
class GenericCount(CountLaw):
    """Only the generic formula is known: beta_k = (-lambda)^k / k! d^k/ds^k beta(s) at s = lambda."""

    lst: object
    s: object
    lam: object

    def pmf(self, k):
        import sympy as sp

        return (-self.lam) ** k / sp.factorial(k) * sp.diff(self.lst, self.s, k).subs(self.s, self.lam)
