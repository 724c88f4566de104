"""Progress bars for work longer than a few seconds (tqdm.auto; silent when quiet or not a terminal)."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``with Progress(total, unit) as bar: bar.update(done)``: a tqdm bar shown only after 2 s of work."""

    def __init__(self, total: int, unit: str, quiet: bool = False, delay: float = 2.0):
        self.total, self.unit, self.quiet, self.delay = total, unit, quiet, delay
        self._bar = None
        self._start = time.monotonic()
        self._done = 0

    def __enter__(self):
        return self

    def update(self, done: int) -> None:
        self._done = done
        if self.quiet:
            return
        if self._bar is None and time.monotonic() - self._start > self.delay and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, unit=self.unit, leave=False, initial=done)
        if self._bar is not None:
            self._bar.n = done
            self._bar.refresh()

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.close()
        return False
