"""The interpreter of the blocks' primitives on generating functions (start threshold 1), one class for the
derivation's PGF Y(z) over SymPy (:class:`qderive.derivations.blocks.PgfPassage`), the numeric transform Y(s)
(:class:`~qderive.numeric.engines.blocks.TransformPassage`) and the shifted sums of constant laws
(:mod:`~qderive.numeric.engines.blocks_shifts`). It imports nothing of the engines, so each of them can build on
it."""

from __future__ import annotations

__all__ = ["GeneratingPassage"]


class GeneratingPassage:
    """The interpreter of the primitives on generating functions (start threshold 1), written once for the
    derivation's PGF Y(z) (:class:`qderive.derivations.blocks.PgfPassage`, over SymPy) and for the numeric
    transform Y(s) at the inversion's nodes (:class:`TransformPassage`). The state is (P(no one present), the
    sub-law's generating function); a subclass gives ``X`` (the batch's X(z); 1 - s / lambda in the transform form)
    and two hooks: ``arrivals(law)`` = L*(lambda - lambda X), the customers arriving during one period of ``law``,
    and ``idle(law)`` = L*(lambda), the probability that no batch arrives during it::

        during(L):       (p_0 L*(lambda),  Y A_L)
        interrupt(L):    (p_0 c,  Y c),  served += (1 - c) Y X,   c = L*(lambda)
        wait(1):         (0,  Y - p_0 + p_0 X)
        repeat(L, 1):    (0,  Y - p_0 + p_0 (A_L - v_0) / (1 - v_0)),   v_0 = L*(lambda)

    (Takagi 1991, vol. 1, sec. 2.4-2.5; ``docs/theory/blocks.md`` section 3.)"""

    X = None
    served = 0

    def arrivals(self, law):  # pragma: no cover - abstract
        raise NotImplementedError

    def idle(self, law):  # pragma: no cover - abstract
        raise NotImplementedError

    def start(self):
        return 1, 1

    def during(self, state, law, vacation=False):
        p0, Y = state
        return p0 * self.idle(law), Y * self.arrivals(law)

    def interrupt(self, state, law):
        p0, Y = state
        c = self.idle(law)
        self.served = self.served + Y * self.X * (1 - c)  # arrays first: mpmath scalars convert numpy operands
        return p0 * c, Y * c

    def wait(self, state, threshold):
        if threshold != 1:
            raise NotImplementedError("the generating function of the first service for a start threshold N > 1")
        p0, Y = state
        return 0, Y - p0 + self.X * p0

    def repeat(self, state, law, threshold, most=None):
        if threshold != 1:
            raise NotImplementedError("the generating function of the first service for a start threshold N > 1")
        p0, Y = state
        v0 = self.idle(law)
        if most is None:
            return 0, Y - p0 + (self.arrivals(law) - v0) * (p0 / (1 - v0))
        rest, stay = Y - p0, p0  # at most ``most`` periods: those still empty after them go on empty
        for _ in range(most):
            rest, stay = rest + (self.arrivals(law) - v0) * stay, stay * v0
        return stay, rest + stay

    def finish(self, state):
        return state[1] + self.served
