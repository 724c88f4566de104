"""No vacations: the server waits, available, until N customers are present."""

from __future__ import annotations

from dataclasses import dataclass

from .base import StartRule

__all__ = ["NoVacation"]


@dataclass(frozen=True)
class NoVacation(StartRule):
    """The server waits until at least N are present: Y is the overshoot of the batch sums over N - 1,
    Y(z) = sum_{k<N} u_k sum_{m>=N} x_{m-k} z^m with u the batch renewal sequence (u_0 = 1,
    u_k = sum_{i=1}^k x_i u_{k-i}); N = 1 gives Y = X, the classic M[X]/G/1 (the primitive ``wait``)."""

    policy = None
    title = "waiting"

    def passage(self, op, state):
        return op.wait(state, self.threshold)
