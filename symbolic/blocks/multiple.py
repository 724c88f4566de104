"""Multiple vacations (the thesis): vacations until, at a vacation's end, at least N customers are present."""

from __future__ import annotations

from dataclasses import dataclass

from ..laws.base import TimeLaw
from ..models.vacation import VacationPolicy
from .base import StartRule

__all__ = ["MultipleVacations"]


@dataclass(frozen=True)
class MultipleVacations(StartRule):
    """Vacations of law V repeated while fewer than N are present at a vacation's end (a vacation in progress
    runs to its end). With v the customers of one vacation (V(z) = V*(lambda (1 - X(z)))) and U_k the expected
    number of vacation ends at level k < N, U_k (1 - v_0) = [k = 0] + sum_{i<k} U_i v_{k-i}, the first-service law
    is Y(z) = sum_{k<N} U_k sum_{m>=N} v_{m-k} z^m; N = 1 gives (V(z) - v_0) / (1 - v_0), the thesis's (2)
    (the primitive ``repeat``)."""

    vacation: TimeLaw | None = None
    policy = VacationPolicy.MULTIPLE
    title = "multiple vacations"

    def passage(self, op, state):
        return op.repeat(state, self.vacation, self.threshold)

    def laws(self):
        return (("vacation", self.vacation),)
