"""A start rule that is not built in, for the tests of every interpreter (the notebook "A start rule of one's own"
writes the same class): at most J vacations while fewer than N are present, then wait for N."""

from dataclasses import dataclass

from qderive.symbolic.blocks import StartRule


@dataclass(frozen=True)
class AtMostJ(StartRule):
    """At most J vacations while fewer than N are present, then waiting for N: ``repeat`` then ``wait``."""

    vacation: object = None
    most: int = 1

    def passage(self, op, state):
        return op.wait(op.repeat(state, self.vacation, self.threshold, self.most), self.threshold)
