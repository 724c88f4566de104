"""The close-down block: the server stays for a close-down time after the departure that empties the system."""

from __future__ import annotations

from dataclasses import dataclass

from ..laws.base import TimeLaw
from .base import Block

__all__ = ["CloseDown"]


@dataclass(frozen=True)
class CloseDown(Block):
    """A close-down time C after a departure that empties the system: a batch arriving during it is served at
    once (no vacation, no setup, whatever N is); if C ends with the system empty, the start rule begins.
    With c_0 = C*(lambda) the probability that no batch arrives during C, it contributes (1 - c_0) X(z) to the
    first-service law Y(z) and c_0 times the rest (Takagi 1991, vol. 1, sec. 2.5; the primitive ``interrupt``)."""

    law: TimeLaw
    title = "close-down"

    def passage(self, op, state):
        return op.interrupt(state, self.law)

    def laws(self):
        return (("close_down", self.law),)
