"""Mixtures of time laws: :class:`Mixture`, of scaled copies of one law (the duplicate-cost service of
``sip-retransmission``), and :class:`LawMixture`, of different laws (the two flows' service laws of
``sip-retransmission`` with ``--service-non-invite``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..counts import MixtureCount
from ..errors import ParameterError
from ..numbers import decimal_text, is_symbolic, to_sympy
from ..params import Kind, param
from .base import TimeLaw

__all__ = ["Mixture", "LawMixture"]


def _check_weights(weights, parts, what):
    """One ``what`` per weight, at least one, and the weights sum to 1 (unless symbolic)."""
    if len(weights) != len(parts) or not weights:
        raise ParameterError(f"mixture: {len(weights)} weights and {len(parts)} {what}s: give one {what} per component")
    total = sum(weights)
    if not is_symbolic(total) and total != 1:
        raise ParameterError("mixture weights", "must sum to 1", total)


@dataclass(frozen=True)
class Mixture(TimeLaw):
    """With probability w_i the time is c_i T, T of the law ``law`` (an internal law: no command-line name).

    LST sum_i w_i beta_T(c_i s); E M^n = sum_i w_i c_i^n E T^n; the Poisson(lambda) arrivals during c_i T are those
    during T at rate c_i lambda, so beta_k = sum_i w_i beta^{(T, c_i lambda)}_k (a mixture count, as for the
    hyperexponential law of ``docs/theory/chapter2.md`` section 3). Smooth exactly when ``law`` is (its transform
    has exp(-s D) factors exactly when T's has). ``sip-retransmission`` with ``--duplicate-cost c``: the service of
    a copy is B with probability 1 - delta and c B with probability delta (:meth:`of`)."""

    law: TimeLaw = param("the time law T scaled by each component", kind=Kind.TIME_LAW)
    weights: tuple = param("component probabilities w_1/w_2/.. (sum 1)", kind=Kind.NUMBERS, key="w",
                           check="[0, 1]")
    scales: tuple = param("component scale factors c_1/c_2/..", kind=Kind.NUMBERS, key="c", check="> 0")

    def _validate(self):
        _check_weights(self.weights, self.scales, "scale")

    @classmethod
    def of(cls, law, c, delta):
        """``law`` with probability 1 - delta, c ``law`` with probability delta" (exact numbers)."""
        delta = Fraction(delta)
        return cls(law, (1 - delta, delta), (Fraction(1), Fraction(c)))

    def spec_text(self) -> str:
        """A readable text that names the law exactly (no command-line syntax: the law has no ``spec``)."""
        parts = "; ".join(f"{decimal_text(w)} x {decimal_text(c)}" for w, c in zip(self.weights, self.scales))
        return f"mixture({self.law.spec_text()}; {parts})"

    def components(self):
        """((w_i, c_i T), ...): the weighted scaled laws (c_i = 1: ``law`` itself; others one-component mixtures),
        or None for one component. Evaluators sum the components' values (a transform at nodes is linear in the
        weights: one compiled form per scaled law, whatever the weights)."""
        if len(self.weights) == 1:
            return None
        return tuple((w, self.law if c == 1 else Mixture(self.law, (Fraction(1),), (c,)))
                     for w, c in zip(self.weights, self.scales))

    @property
    def mean(self):
        """E M."""
        return self.moment(1)

    def lst(self, s):
        import sympy as sp

        return sp.Add(*[to_sympy(w) * self.law.lst(to_sympy(c) * s) for w, c in zip(self.weights, self.scales)])

    def _moment(self, n):
        m = self.law.moment(n)
        return sum(w * c**n * m for w, c in zip(self.weights, self.scales))

    def count_law(self, lam):
        return MixtureCount(self.weights, tuple(self.law.count_law(lam * c) for c in self.scales))

    def phase_type(self):
        """The block-diagonal PH law of the components (T_i = T / c_i) when ``law`` is phase-type, else None."""
        ph = self.law.phase_type()
        if ph is None:
            return None
        alpha, T = ph
        k, n = len(alpha), len(self.weights)
        out_alpha = tuple(w * a for w in self.weights for a in alpha)
        rows = []
        for i, c in enumerate(self.scales):
            for r in range(k):
                rows.append(tuple(T[r][j % k] / c if j // k == i else 0 for j in range(n * k)))
        return out_alpha, tuple(rows)

    def sample(self, rng, size):
        import numpy as np

        w = np.array([float(v) for v in self.weights])
        pick = rng.choice(len(w), size=size, p=w / w.sum())
        return self.law.sample(rng, size) * np.array([float(c) for c in self.scales])[pick]



@dataclass(frozen=True)
class LawMixture(TimeLaw):
    """With probability w_i the time is T_i, of the law ``laws[i]`` (an internal law: no command-line name).

    LST sum_i w_i beta_i(s); E M^n = sum_i w_i E T_i^n; beta_k = sum_i w_i beta^{(T_i, lambda)}_k (a mixture count,
    as for the hyperexponential law of ``docs/theory/chapter2.md`` section 3). ``sip-retransmission`` with
    ``--service-non-invite``: under the Poisson-copy approximation the FIFO server sees the service "B_1 with
    probability w, B_2 with probability 1 - w", w the INVITE share of the admitted copies (:meth:`of`)."""

    laws: tuple
    weights: tuple = param("component probabilities w_1/w_2/.. (sum 1)", kind=Kind.NUMBERS, key="w", check="[0, 1]")

    def _validate(self):
        _check_weights(self.weights, self.laws, "law")

    @classmethod
    def of(cls, first, second, w):
        """``first`` with probability w, ``second`` with probability 1 - w (w exact)."""
        w = Fraction(w)
        return cls((first, second), (w, 1 - w))

    def spec_text(self) -> str:
        """A readable text that names the law exactly (no command-line syntax: the law has no ``spec``)."""
        return "mixture(" + "; ".join(f"{decimal_text(w)} x {law.spec_text()}"
                                      for w, law in zip(self.weights, self.laws)) + ")"

    def components(self):
        """((w_i, T_i), ...): the weighted laws (evaluators may sum the components' values)."""
        return tuple(zip(self.weights, self.laws))

    @property
    def mean(self):
        """E M."""
        return self.moment(1)

    def lst(self, s):
        import sympy as sp

        return sp.Add(*[to_sympy(w) * law.lst(s) for w, law in zip(self.weights, self.laws)])

    def _moment(self, n):
        return sum(w * law.moment(n) for w, law in zip(self.weights, self.laws))

    def count_law(self, lam):
        return MixtureCount(self.weights, tuple(law.count_law(lam) for law in self.laws))

    def phase_type(self):
        """The block-diagonal PH law of the components when every one is phase-type, else None."""
        phs = [law.phase_type() for law in self.laws]
        if any(ph is None for ph in phs):
            return None
        size = sum(len(a) for a, _ in phs)
        out_alpha, rows, at = [], [], 0
        for w, (alpha, T) in zip(self.weights, phs):
            k = len(alpha)
            out_alpha += [w * a for a in alpha]
            for r in range(k):
                rows.append(tuple(T[r][j - at] if at <= j < at + k else 0 for j in range(size)))
            at += k
        return tuple(out_alpha), tuple(rows)

    def sample(self, rng, size):
        import numpy as np

        w = np.array([float(v) for v in self.weights])
        pick = rng.choice(len(w), size=size, p=w / w.sum())
        draws = np.stack([np.asarray(law.sample(rng, size), dtype=np.float64) for law in self.laws])
        return draws[pick, np.arange(size)]
