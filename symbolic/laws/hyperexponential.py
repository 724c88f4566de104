"""A mixture of exponential phases."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..counts import MixtureCount
from ..errors import ParameterError
from ..numbers import is_symbolic
from ..params import Kind, param
from .base import TimeLaw
from .gamma import Exponential

__all__ = ["HyperExponential"]


@dataclass(frozen=True)
class HyperExponential(TimeLaw):
    """With probability p_i the time is exponential with mean m_i.

    LST sum_i p_i / (1 + m_i s); beta_k = sum_i p_i (exponential beta_k with m_i)
    (``docs/theory/chapter2.md`` section 3, hyperexp row). A phase-type law with a diagonal generator.
    """

    spec = "hyperexp"
    probs: tuple = param("phase probabilities p_1/p_2/.. (sum 1)", kind=Kind.NUMBERS, key="p", metavar="P1/P2/..",
                        check="[0, 1]")
    means: tuple = param("phase means m_1/m_2/..", kind=Kind.NUMBERS, key="mean", units="time", metavar="M1/M2/..",
                        check="> 0")

    def _validate(self):
        if len(self.probs) != len(self.means) or not self.probs:
            raise ParameterError(f"hyperexp: {len(self.probs)} probabilities and {len(self.means)} means: "
                                 "give one mean per phase")
        total = sum(self.probs)
        if not is_symbolic(total) and total != 1:
            raise ParameterError("hyperexp probabilities", "must sum to 1", total)

    @property
    def _phases(self):
        return tuple(Exponential(m) for m in self.means)

    @property
    def mean(self):
        """E T."""
        return self.moment(1)

    def lst(self, s):
        import sympy as sp

        from ..numbers import to_sympy

        return sp.Add(*[to_sympy(p) * ph.lst(s) for p, ph in zip(self.probs, self._phases)])

    def _moment(self, n):
        return sum(p * ph.moment(n) for p, ph in zip(self.probs, self._phases))

    def count_law(self, lam):
        return MixtureCount(self.probs, tuple(ph.count_law(lam) for ph in self._phases))

    def phase_type(self):
        k = len(self.means)
        T = tuple(tuple(-1 / self.means[i] if i == j else 0 for j in range(k)) for i in range(k))
        return tuple(self.probs), T

    def survival_pieces(self):
        """P(T > x) = sum_i p_i e^{-x/m_i}."""
        return tuple((p, 1 / m, None) for p, m in zip(self.probs, self.means))

    def sample(self, rng, size):
        import numpy as np

        p = np.array([float(v) for v in self.probs])
        phase = rng.choice(len(p), size=size, p=p / p.sum())
        return rng.exponential(1.0, size) * np.array([float(m) for m in self.means])[phase]

    @classmethod
    def examples(cls):
        return (cls((Fraction(1, 3), Fraction(2, 3)), (Fraction(1, 2), 1)),)
