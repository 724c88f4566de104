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


class _Mixed:
    """The one implementation of a mixture's law functions over ``parts()`` = ((w_i, T_i, c_i), ...), component i
    being c_i T_i with probability w_i: LST sum_i w_i beta_i(c_i s); E M^n = sum_i w_i c_i^n E T_i^n; the Poisson
    arrivals during c_i T_i at rate lambda are those during T_i at rate c_i lambda, so beta_k is the mixture count
    of the components' counts (``docs/theory/chapter2.md`` section 3, as for the hyperexponential law)."""

    @property
    def mean(self):
        """E M."""
        return self.moment(1)

    def lst(self, s):
        import sympy as sp

        return sp.Add(*[to_sympy(w) * law.lst(to_sympy(c) * s) for w, law, c in self.parts()])

    def _moment(self, n):
        return sum(w * c**n * law.moment(n) for w, law, c in self.parts())

    def count_law(self, lam):
        parts = self.parts()
        return MixtureCount(tuple(w for w, _, _ in parts), tuple(law.count_law(lam * c) for _, law, c in parts))

    def phase_type(self):
        """The block-diagonal PH law of the components (T_i / c_i) when every one is phase-type, else None."""
        parts = self.parts()
        phs = [law.phase_type() for _, law, _ in parts]
        if any(ph is None for ph in phs):
            return None
        size = sum(len(a) for a, _ in phs)
        out_alpha, rows, at = [], [], 0
        for (w, _, c), (alpha, T) in zip(parts, phs):
            k = len(alpha)
            out_alpha += [w * a for a in alpha]
            for r in range(k):
                rows.append(tuple(T[r][j - at] / c if at <= j < at + k else 0 for j in range(size)))
            at += k
        return tuple(out_alpha), tuple(rows)

    # -- scipy.stats-style hooks (:mod:`qderive.symbolic.distribution`): from the components' own ---------
    def _sf(self, x):
        """P(M > x) = sum_i w_i P(T_i > x / c_i)."""
        return sum(float(w) * law.sf(x / float(c)) for w, law, c in self.parts())

    def _pdf(self, x):
        """f_M(x) = sum_i w_i f_i(x / c_i) / c_i (every component has a density when M has no atom)."""
        return sum(float(w) * law.pdf(x / float(c)) / float(c) for w, law, c in self.parts())

    def atoms(self):
        """The components' atoms, scaled by c_i and weighted by w_i."""
        out: dict = {}
        for w, law, c in self.parts():
            for x, p in law.atoms():
                out[x * c] = out.get(x * c, 0) + w * p
        return tuple(sorted(out.items()))

    def support(self):
        ends = [law.support() for _, law, _ in self.parts()]
        scales = [float(c) for _, _, c in self.parts()]
        return (min(lo * c for (lo, _), c in zip(ends, scales)), max(hi * c for (_, hi), c in zip(ends, scales)))

    def sample(self, rng, size):
        import numpy as np

        parts = self.parts()
        w = np.array([float(v) for v, _, _ in parts])
        pick = rng.choice(len(w), size=size, p=w / w.sum())
        if all(law is parts[0][1] for _, law, _ in parts):  # scaled copies of one law: one draw per time
            return parts[0][1].sample(rng, size) * np.array([float(c) for _, _, c in parts])[pick]
        draws = np.stack([np.asarray(law.sample(rng, size), dtype=np.float64) * float(c) for _, law, c in parts])
        return draws[pick, np.arange(size)]


@dataclass(frozen=True)
class Mixture(_Mixed, TimeLaw):
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

    def parts(self):
        """((w_i, T, c_i), ...): component i is c_i T."""
        return tuple((w, self.law, c) for w, c in zip(self.weights, self.scales))


@dataclass(frozen=True)
class LawMixture(_Mixed, TimeLaw):
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

    def parts(self):
        """((w_i, T_i, 1), ...): component i is T_i."""
        return tuple((w, law, 1) for w, law in zip(self.weights, self.laws))
