"""Single vacation: one vacation, then the server waits, available, until N customers are present."""

from __future__ import annotations

from dataclasses import dataclass

from ..laws.base import TimeLaw
from ..models.vacation import VacationPolicy
from .base import StartRule

__all__ = ["SingleVacation"]


@dataclass(frozen=True)
class SingleVacation(StartRule):
    """One vacation of law V; if fewer than N are present at its end the server waits until the count reaches
    N: Y(z) = sum_{m>=N} v_m z^m + sum_{k<N} w_k sum_{m>=N} x_{m-k} z^m with w = v * u (the vacation's customers
    then the batch renewal); N = 1 gives v_0 X(z) + V(z) - v_0 (the primitives ``during`` then ``wait``)."""

    vacation: TimeLaw | None = None
    policy = VacationPolicy.SINGLE
    title = "single vacation"

    def passage(self, op, state):
        return op.wait(op.during(state, self.vacation, vacation=True), self.threshold)

    def laws(self):
        return (("vacation", self.vacation),)
