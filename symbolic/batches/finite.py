"""Batch laws with finitely many sizes: a constant size and an explicit pmf."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .. import limits as _limits
from ..errors import ParameterError
from ..numbers import exact, exact_int, is_symbolic, parse_number, probability, to_sympy
from ..params import Kind, param
from .base import BatchLaw

__all__ = ["Constant", "FinitePMF"]


class _Finite(BatchLaw):
    """Shared formulas of a law given by ``support()``."""

    def pmf(self, i):
        return self.support().get(i, Fraction(0))

    def tail(self, i):
        return sum((p for s, p in self.support().items() if s > i), Fraction(0))

    def excess(self, m):
        return sum(((s - m) * p for s, p in self.support().items() if s > m), Fraction(0))

    @property
    def max_size(self):
        return max(self.support())

    @property
    def min_size(self):
        return min(self.support())

    @property
    def mean(self):
        """l_1 = E X."""
        return self.moment(1)

    def pgf(self, z):
        import sympy as sp

        return sp.Add(*[to_sympy(p) * z**s for s, p in self.support().items()])

    def _factorial_moment(self, n):
        out = Fraction(0)
        for s, p in self.support().items():
            ff = 1
            for j in range(n):
                ff *= s - j
            out += p * ff
        return out

    def sample(self, rng, size):
        import numpy as np

        sizes = np.array(sorted(self.support()))
        probs = np.array([float(self.support()[s]) for s in sizes])
        return rng.choice(sizes, size=size, p=probs / probs.sum())


@dataclass(frozen=True)
class Constant(_Finite):
    """Every batch has exactly n customers (n = 1: ordinary Poisson arrivals).  L(z) = z^n."""

    spec = "const"
    n: int = param("batch size", kind=Kind.INTEGER, units="customers", metavar="N", check=">= 1", structural=True)

    def _validate(self):
        _limits.check("batch_size", self.n, "largest batch size")

    def support(self):
        return {self.n: Fraction(1)}

    def sample(self, rng, size):
        import numpy as np

        return np.full(size, self.n, dtype=np.int64)

    @classmethod
    def examples(cls):
        return (cls(1), cls(3))


@dataclass(frozen=True)
class FinitePMF(_Finite):
    """An explicit pmf: ``FinitePMF({1: p1, 2: p2, ...})``, ``pmf:1=0.5,3=0.5`` on the command line.

    L(z) = sum_i p_i z^i; the probabilities lie in [0, 1] and sum to 1 exactly.
    """

    spec = "pmf"
    probs: tuple = param("(size, probability) pairs", kind=Kind.NUMBERS, cli=False)

    def __init__(self, probs):
        items = probs.items() if isinstance(probs, dict) else (
            probs if probs and isinstance(next(iter(probs)), tuple) else enumerate(probs, start=1))
        cleaned = []
        for size, prob in items:
            s = exact_int(size, "batch size", minimum=1)
            _limits.check("batch_size", s, "largest batch size")
            p = probability(exact(prob, f"P(X={s})"), f"P(X={s})")
            if p != 0:
                cleaned.append((s, p))
        cleaned.sort()
        if len({s for s, _ in cleaned}) != len(cleaned):
            raise ParameterError("batch pmf: a size is given twice")
        total = sum(p for _, p in cleaned)
        if not cleaned or (not is_symbolic(total) and total != 1):
            raise ParameterError("batch pmf probabilities", "must sum to 1", total)
        object.__setattr__(self, "probs", tuple(cleaned))

    @classmethod
    def from_spec_values(cls, values):
        probs = {}
        for size, prob in values.items():
            s = parse_number(size, "size")
            if s.denominator != 1 or s < 1:
                raise ParameterError(f"size {size!r} must be an integer >= 1")
            probs[int(s)] = parse_number(prob, f"P(X={size})")
        return cls(probs)

    @classmethod
    def usage(cls):
        return "pmf:1=P1,2=P2,..."

    def support(self):
        return dict(self.probs)

    @classmethod
    def _from_scipy(cls, frozen):
        """A finite ``scipy.stats.rv_discrete(values=(sizes, probs))`` on sizes >= 1 (one size: :class:`Constant`);
        probabilities as the exact values of their shortest decimal texts."""
        from ..distribution import decimal_fraction

        dist = frozen.dist
        if not (hasattr(dist, "xk") and hasattr(dist, "pk")):
            return None
        if frozen.kwds.get("loc", 0) != 0 or (frozen.args and frozen.args[0] != 0):
            raise ParameterError("loc", "must be 0 for a batch law", frozen.kwds.get("loc", frozen.args[:1]))
        bad = [x for x, p in zip(dist.xk, dist.pk) if p != 0 and not (x == int(x) and x >= 1)]
        if bad:
            raise ParameterError("rv_discrete sizes", "must be integers >= 1 for a batch law", bad[0])
        pairs = {int(x): decimal_fraction(p) for x, p in zip(dist.xk, dist.pk) if p != 0}
        if len(pairs) == 1:
            return Constant(next(iter(pairs)))
        return cls(pairs)

    def spec_text(self):
        from ..numbers import decimal_text

        return "pmf:" + ",".join(f"{s}={decimal_text(p)}" for s, p in self.probs)

    def __repr__(self):
        return f"FinitePMF({dict(self.probs)!r})"

    @classmethod
    def examples(cls):
        return (cls({1: Fraction(1, 2), 3: Fraction(1, 2)}), cls({2: Fraction(1, 4), 5: Fraction(3, 4)}))
