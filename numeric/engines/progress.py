"""The one progress mechanism of qderive: every long piece of work reports through :class:`Progress`.

Where the report goes is decided once, when the work has lasted ``delay`` seconds (2 s by default; short work
shows nothing):

- **a terminal or Jupyter**: a ``tqdm.auto`` bar (a widget in a Jupyter kernel, a text bar on a terminal);
- **anything else** (a CI log, a job array's output file, a pipe): one plain line on stderr every ``interval``
  seconds (10 s by default) and a last line when the work ends, e.g.
  ``qderive: verify: 120/199 checks (60 %), 31 s``; logs get progress without carriage returns;
- **quiet** (``--quiet``, ``--json`` where it says so, or ``configure(quiet=True)``): nothing.

``total=None`` is work of unknown length (a long ``eval``): the report then says the elapsed time and what has
been counted so far. The command line sets the process-wide defaults once with :func:`configure`; a caller may
override them per bar.
"""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["Progress", "configure", "settings"]

_DEFAULTS = {"quiet": False, "delay": 2.0, "interval": 10.0}


def configure(**values) -> dict:
    """Set the process-wide defaults (``quiet``, ``delay`` in s, ``interval`` in s); returns the previous ones."""
    unknown = set(values) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown progress setting(s): {', '.join(sorted(unknown))}")
    previous = dict(_DEFAULTS)
    _DEFAULTS.update({k: v for k, v in values.items() if v is not None})
    return previous


def settings() -> dict:
    """The process-wide defaults in force."""
    return dict(_DEFAULTS)


def _in_jupyter() -> bool:
    """True inside a Jupyter (IPython) kernel, where tqdm.auto draws a widget."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipykernel without IPython does not exist
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class Progress:
    """``with Progress(total, "checks", desc="verify") as bar: bar.advance()`` (or ``bar.update(done)``).

    ``total`` the amount of work (None: unknown); ``unit`` what is counted; ``desc`` what the work is (the
    subcommand and model); ``quiet``, ``delay``, ``interval`` override :func:`configure`'s defaults;
    ``stream`` the output (stderr). ``ticker=True`` also reports while nobody calls :meth:`update` (a
    background thread wakes every second: for one long computation that cannot count its steps).
    """

    def __init__(self, total: int | None, unit: str, quiet: bool | None = None, delay: float | None = None,
                 desc: str = "", interval: float | None = None, stream=None, ticker: bool = False):
        d = _DEFAULTS
        self.total, self.unit, self.desc = total, unit.strip(), desc
        self.quiet = d["quiet"] if quiet is None else quiet
        self.delay = d["delay"] if delay is None else delay
        self.interval = d["interval"] if interval is None else interval
        self.stream = sys.stderr if stream is None else stream
        self._start = time.monotonic()
        self._done = 0
        self._mode = None          # None (undecided), "bar", "log"
        self._bar = None
        self._last_line = None
        self._lock = threading.Lock()
        self._stop = None
        if ticker and not self.quiet:
            self._stop = threading.Event()
            threading.Thread(target=self._tick, daemon=True).start()

    # ------------------------------------------------------------------ counting

    def __enter__(self):
        return self

    def update(self, done: int) -> None:
        """The amount of work done so far (absolute)."""
        with self._lock:
            self._done = done
            self._report()

    def set_total(self, total: int | None) -> None:
        """The amount of work, once it is known (work counted before that keeps its count)."""
        with self._lock:
            self.total = total
            if self._bar is not None:
                self._bar.total = total
                self._bar.refresh()

    def advance(self, n: int = 1) -> None:
        """``n`` more units done."""
        with self._lock:
            self._done += n
            self._report()

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        with self._lock:
            if self._bar is not None:
                self._bar.n = self._done
                self._bar.close()
                self._bar = None
            elif self._mode == "log":
                self._line(final=True)
            self._mode = "closed"

    def __exit__(self, *exc):
        self.close()
        return False

    # ------------------------------------------------------------------ reporting

    def _tick(self):
        while not self._stop.wait(1.0):
            with self._lock:
                if self._mode != "closed":
                    self._report()

    def _report(self) -> None:
        if self.quiet or self._mode == "closed":
            return
        now = time.monotonic()
        if self._mode is None:
            if now - self._start < self.delay:
                return
            self._mode = "bar" if (_in_jupyter() or _isatty(self.stream)) else "log"
            if self._mode == "bar":
                from tqdm.auto import tqdm

                self._bar = tqdm(total=self.total, unit=f" {self.unit}", desc=self.desc or None, leave=False,
                                 initial=self._done, file=self.stream, unit_scale=(self.total or 0) > 10_000)
                return
        if self._mode == "bar":
            self._bar.n = self._done
            self._bar.refresh()
        elif self._last_line is None or now - self._last_line >= self.interval:
            self._line()

    def _line(self, final: bool = False) -> None:
        elapsed = time.monotonic() - self._start
        if self.total:
            amount = f"{self._done}/{self.total} {self.unit} ({100 * self._done / self.total:.0f} %)"
        else:
            amount = f"{self._done} {self.unit}" if self._done else "running"
        head = f"qderive: {self.desc}: " if self.desc else "qderive: "
        tail = ", done" if final else ""
        print(f"{head}{amount}, {elapsed:.0f} s{tail}", file=self.stream, flush=True)
        self._last_line = time.monotonic()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
