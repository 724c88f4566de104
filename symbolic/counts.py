"""Laws of the number of Poisson arrivals during one random time.

If batches arrive as a Poisson process of rate lambda and a service (or a
vacation) lasts a random time T with distribution B, the number K of batches
that arrive during it has the *Poisson-mixing* probabilities (Sopin 2013,
chapter 2, notation of section 0; ``spec/chapter2.md`` section 3)::

    beta_k = P(K = k) = int_0^oo (lambda x)^k / k! e^{-lambda x} dB(x)
           = (-lambda)^k / k! * beta^{(k)}(lambda).

For the common time laws K belongs to a named family; a time law *describes* its
count law with one of the classes below, and the numeric layer evaluates the
whole sequence ``beta_0..beta_n`` and the tails ``sum_{i>k} beta_i`` from that
description (``qderive.numeric.sequences``). Each count law also gives its
probability ``pmf(k)`` as an exact SymPy expression, which is the closed-form
hook of :meth:`qderive.symbolic.laws.TimeLaw.poisson_mixing`.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

__all__ = [
    "CountLaw",
    "PoissonCount",
    "NegativeBinomialCount",
    "MixtureCount",
    "UniformMixedPoissonCount",
    "GenericCount",
]


class CountLaw:
    """Distribution of the number of batches arriving during one random time."""

    def pmf(self, k) -> sp.Expr:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class PoissonCount(CountLaw):
    """K ~ Poisson(mean): arrivals during a deterministic time d, mean = lambda d.

    beta_k = e^{-lambda d} (lambda d)^k / k!   (``spec/chapter2.md`` section 3, row D).
    """

    mean: sp.Expr

    def pmf(self, k):
        return sp.exp(-self.mean) * self.mean**k / sp.factorial(k)


@dataclass(frozen=True)
class NegativeBinomialCount(CountLaw):
    """K ~ NegBin(shape a, success prob p0): arrivals during a gamma time.

    With rate nu = a / m, p0 = nu / (lambda + nu) and q = lambda / (lambda + nu):
    beta_k = Gamma(k + a) / (Gamma(a) k!) p0^a q^k (``spec/chapter2.md`` section 3,
    Erlang / gamma row; a = 1 is the exponential row).
    """

    shape: sp.Expr
    p0: sp.Expr  # nu / (lambda + nu)

    @property
    def q(self) -> sp.Expr:
        return 1 - self.p0

    def pmf(self, k):
        a = self.shape
        return sp.gamma(k + a) / (sp.gamma(a) * sp.factorial(k)) * self.p0**a * self.q**k


@dataclass(frozen=True)
class MixtureCount(CountLaw):
    """A finite mixture: beta_k = sum_i w_i beta^{(i)}_k (hyperexponential times)."""

    weights: tuple
    components: tuple

    def pmf(self, k):
        return sp.Add(*[w * c.pmf(k) for w, c in zip(self.weights, self.components)])


@dataclass(frozen=True)
class UniformMixedPoissonCount(CountLaw):
    """K ~ Poisson(lambda T) with T uniform on [low, high].

    beta_k = 1 / (lambda (b - a)) * 1/k! int_{lambda a}^{lambda b} u^k e^{-u} du
    (``spec/chapter2.md`` section 3, uniform row), i.e. the difference of two
    Poisson tail probabilities divided by lambda (b - a).
    """

    lam_low: sp.Expr  # lambda * a
    lam_high: sp.Expr  # lambda * b

    def pmf(self, k):
        u = sp.Dummy("u", positive=True)
        integral = sp.integrate(u**k * sp.exp(-u), (u, self.lam_low, self.lam_high))
        return integral / (sp.factorial(k) * (self.lam_high - self.lam_low))


@dataclass(frozen=True)
class GenericCount(CountLaw):
    """Only the generic Poisson-mixing formula is known (general or unusual laws).

    beta_k = (-lambda)^k / k! * d^k/ds^k beta(s) at s = lambda.
    """

    lst: sp.Expr
    s: sp.Symbol
    lam: sp.Expr

    def pmf(self, k):
        return (-self.lam) ** k / sp.factorial(k) * sp.diff(self.lst, self.s, k).subs(self.s, self.lam)
