"""The setup block: a setup time before the first service of a busy period."""

from __future__ import annotations

from dataclasses import dataclass

from ..laws.base import TimeLaw
from .base import Block

__all__ = ["Setup"]


@dataclass(frozen=True)
class Setup(Block):
    """A setup time S once the start condition holds; batches arriving during it join the queue: Y(z) is
    multiplied by S*(lambda (1 - X(z))) (the primitive ``during``)."""

    law: TimeLaw
    title = "setup"

    def passage(self, op, state):
        return op.during(state, self.law)

    def laws(self):
        return (("setup", self.law),)
