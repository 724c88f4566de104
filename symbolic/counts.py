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
    "ARRIVALS_PER_PERIOD",
    "check_arrivals_per_period",
    "CountLaw",
    "PoissonCount",
    "NegativeBinomialCount",
    "MixtureCount",
    "PhaseTypeCount",
    "UniformMixedPoissonCount",
    "QuadratureCount",
    "GenericCount",
]


#: the most batch arrivals, on average, during one service or vacation period that a model is evaluated at: the
#: count sequences (the count kernels of the numeric layer) hold at most 10^7 terms, and beyond that the room is
#: full after every period (the result is the limit, not a computation)
ARRIVALS_PER_PERIOD = 10**7


def check_arrivals_per_period(rate, periods) -> None:
    """Refuse at once, naming the option, a model whose mean number of batch arrivals lambda E T during one
    period T exceeds :data:`ARRIVALS_PER_PERIOD` (``--rate 1e17``, ``--load 1e400``, ``--vacation exp:mean=1e300``).

    ``periods``: ((field name, law or None), ...), e.g. (("service", B), ("vacation", V)). The field blamed is
    ``rate`` when the rate alone is extreme (every period then has too many arrivals), else the law whose
    period is too long."""
    from fractions import Fraction

    from .errors import ParameterError
    from .numbers import decimal_text, is_symbolic

    if is_symbolic(rate):
        return
    over = []
    for name, law in periods:
        mean = None if law is None else law.moment(1)
        if mean is None or is_symbolic(mean) or is_symbolic(law):
            continue
        n = Fraction(rate) * Fraction(mean)
        if n > ARRIVALS_PER_PERIOD:
            over.append((name, law, n))
    if not over:
        return
    def shown(x):
        return f"{float(x):.3g}" if x < Fraction(10) ** 300 else f"1e{len(str(x.numerator // x.denominator)) - 1}"
    laws = [law for _, law in periods if law is not None]
    name, law, n = over[0]
    what = "service" if name.startswith("service") else name
    if len(over) == len(laws):  # every period: the rate is the extreme value
        raise ParameterError("rate", f"gives about {shown(n)} batch arrivals during one {what} (mean "
                             f"{decimal_text(Fraction(law.moment(1)))}): at most {ARRIVALS_PER_PERIOD:.0e} are computed "
                             "(the count sequence of a period); lower --rate / --load", decimal_text(Fraction(rate)))
    raise ParameterError(name, f"is too long for the arrival rate {decimal_text(Fraction(rate))}: about {shown(n)} "
                         f"batch arrivals during one {what}, at most {ARRIVALS_PER_PERIOD:.0e} are computed (the "
                         "count sequence of a period)", law.spec_text() if hasattr(law, "spec_text") else str(law))


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
