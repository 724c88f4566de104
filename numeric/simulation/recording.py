"""What the vacation simulators share: the accumulators and measures of a run, and the recorder of waits.

The event loops of :mod:`qderive.numeric.simulation.vacation` (today's rules) and
:mod:`qderive.numeric.simulation.blocks` (the composed variants) fill the same accumulators and record waits and
sojourns the same way, through the names here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["UNBOUNDED", "INITIAL_LEVELS", "ACCUMULATORS", "FINITE_MEASURES", "INFINITE_MEASURES", "Tape",
           "Recorder"]

#: a waiting room larger than any queue a run can build: "infinite"
UNBOUNDED = 1 << 62
#: initial length of the level lists of the infinite room (they grow on demand)
INITIAL_LEVELS = 256

#: the cumulative accumulators of one run (:class:`~qderive.numeric.simulation.stats.KernelSpec`)
ACCUMULATORS = ("time", "served", "arrived", "lost", "batches", "blocked", "busy", "area", "area2",
                "time_empty", "time_full", "epochs", "epochs_empty", "epochs_full")


class Tape:
    """A sampler that keeps what it draws, to be read back in order (the same variates, none extra)."""

    def __init__(self, draw, dtype):
        self._draw = draw
        self._blocks = []
        self._rest = np.empty(0, dtype=dtype)

    def __call__(self, rng, n):
        block = self._draw(rng, n)
        self._blocks.append(block)
        return block

    def take(self, k: int) -> np.ndarray:
        """The next ``k`` variates drawn (the loop has consumed them)."""
        if self._blocks:
            self._rest = np.concatenate([self._rest, *self._blocks])
            self._blocks.clear()
        out, self._rest = self._rest[:k], self._rest[k:]
        return out


class Recorder:
    """Waits and sojourns of one run, FIFO, from the tapes and the service starts the loop records.

    Batch j arrives at the j-th partial sum of the inter-arrival times (summed in the loop's
    order, so the epochs are the loop's own floats) and brings its size in customers, less
    those lost (the loop records the batches it cut); customers enter service in arrival
    order, the i-th at the i-th recorded start. :meth:`flush`, at each yield of the loop,
    pairs the customers served since the last flush with the arrivals not yet served.
    """

    def __init__(self, draw_e, draw_x):
        self.e, self.x = Tape(draw_e, np.float64), Tape(draw_x, np.int64)
        self.starts = []  # service start times since the last flush (appended by the loop)
        self.cuts = []  # batches that lost customers: their number (1-based), customers admitted, flat
        self._batches = 0
        self._epoch = 0.0  # arrival time of the last batch flushed
        self._waiting = np.empty(0)  # arrival times of admitted customers not yet served, FIFO
        self._wait, self._sojourn = [], []

    def flush(self, batches: int, service: np.ndarray) -> None:
        """Pair the customers served since the last flush (``service``: their service times) with their arrivals."""
        new = batches - self._batches
        if new:
            epochs = np.cumsum(np.concatenate([[self._epoch], self.e.take(new)]))[1:]
            admitted = self.x.take(new).copy()
            if self.cuts:
                index, kept = np.fromiter(self.cuts, np.int64, len(self.cuts)).reshape(-1, 2).T
                admitted[index - 1 - self._batches] = kept
                self.cuts.clear()
            self._waiting = np.concatenate([self._waiting, np.repeat(epochs, admitted)])
            self._epoch, self._batches = float(epochs[-1]), batches
        if self.starts:
            m = len(self.starts)
            start = np.fromiter(self.starts, np.float64, m)
            self.starts.clear()
            arrival, self._waiting = self._waiting[:m], self._waiting[m:]
            self._wait.append(start - arrival)
            self._sojourn.append((start + service) - arrival)

    def samples(self) -> dict[str, np.ndarray]:
        return {"wait": np.concatenate([np.empty(0), *self._wait]),
                "sojourn": np.concatenate([np.empty(0), *self._sojourn])}


FINITE_MEASURES = {
    "loss_probability": lambda a: a["lost"] / a["arrived"],
    "batch_blocking_probability": lambda a: a["blocked"] / a["batches"],
    "idle_probability": lambda a: (a["time"] - a["busy"]) / a["time"],
    "mean_queue_length": lambda a: a["area"] / a["time"],
    "mean_wait": lambda a: a["area"] / (a["arrived"] - a["lost"]),
    "mean_number_in_system": lambda a: (a["area"] + a["busy"]) / a["time"],
    "throughput": lambda a: a["served"] / a["time"],
    "p0": lambda a: a["time_empty"] / a["time"],
    "pr": lambda a: a["time_full"] / a["time"],
    "q0": lambda a: a["epochs_empty"] / a["epochs"],
    "qr": lambda a: a["epochs_full"] / a["epochs"],
}

INFINITE_MEASURES = {
    "q0": FINITE_MEASURES["q0"],
    "idle_probability": FINITE_MEASURES["idle_probability"],
    "mean_queue_length": FINITE_MEASURES["mean_queue_length"],
    "mean_wait": FINITE_MEASURES["mean_wait"],
    "queue_length_variance": lambda a: a["area2"] / a["time"] - (a["area"] / a["time"]) ** 2,
    "mean_number_in_system": FINITE_MEASURES["mean_number_in_system"],
}
