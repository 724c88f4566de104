"""An empirical time law: the distribution of a sample of measured times."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from .. import limits as _limits
from ..counts import PoissonCount
from ..errors import ParameterError
from ..numbers import parse_number, to_sympy
from ..params import Kind, param
from .base import TimeLaw

__all__ = ["Empirical", "read_sample"]

_SPLIT = re.compile(r"[,;\s]+")
_NUMBERISH = frozenset("0123456789.+-/")
_CHUNK = 1 << 16


def _number_like(token: str) -> bool:
    """True for a token meant as a number: one that parses, or whose characters are mostly digits, '.',
    signs or '/' (``O.02`` with a letter O, ``0,01`` split ... ), so a mistyped value is never taken for a
    header word."""
    return sum(c in _NUMBERISH for c in token) * 2 > len(token)


def _open_regular(path: str):
    """A binary reader of ``path`` after checking that it is a regular file.

    The file is opened non-blocking and checked with ``fstat`` on the open descriptor (no race between
    the check and the open): a fifo must not block ``open()``, a device such as ``/dev/zero`` must not be
    read, a directory is refused with the same one line.
    """
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ParameterError("file", f"cannot be read ({exc.strerror or exc})", path) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a fifo" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
                    if stat.S_ISSOCK(mode) else "not a regular file")
            raise ParameterError("file", f"must be a regular text file, not {kind}", path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _lines(fh, path: str):
    """(line number, tokens) of a text file read in chunks; a line longer than a chunk is handed over in
    pieces cut at separators (its line number repeated), so memory stays bounded whatever the file."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    number, rest = 1, ""
    while True:
        raw = fh.read(_CHUNK)
        try:
            text = decoder.decode(raw, final=not raw)
        except UnicodeDecodeError:
            raise ParameterError("file", f"is not a UTF-8 text file (line {number})", path) from None
        rest += text
        lines = rest.split("\n")
        rest = lines.pop() if raw else ""
        for line in lines:
            yield number, [t for t in _SPLIT.split(line.strip()) if t]
            number += 1
        if not raw:
            if rest:
                yield number, [t for t in _SPLIT.split(rest.strip()) if t]
            return
        if len(rest) > _CHUNK:  # a very long line: hand over its complete tokens now
            cut = max(rest.rfind(c) for c in ",; \t\r")
            if cut > 0:
                yield number, [t for t in _SPLIT.split(rest[:cut].strip()) if t]
                rest = rest[cut:]
            elif len(rest) > 4 * _limits.current().number_length:
                raise ParameterError("file", f"line {number} holds a token of more than "
                                     f"{_limits.current().number_length} characters", path)


def read_sample(path: str) -> tuple:
    """The numbers of a text/CSV file (separated by commas, semicolons or white space), exactly.

    Only a regular file is read (a fifo, device or directory is refused before reading); it is read in
    chunks and reading stops as soon as the sample exceeds the limit ``sample_size``. The first non-empty
    line is a header when none of its tokens is number-like (``time,size``); any other token that is not
    a number is an error naming its line and the token (``0.01,O.02`` with a letter O is refused, not
    skipped as a header).
    """
    lines, count = [], 0
    cap = _limits.current().sample_size
    first = True
    with _open_regular(path) as fh:
        for number, tokens in _lines(fh, path):
            if not tokens:
                continue
            if first:
                first = False
                if not any(_number_like(t) for t in tokens):
                    continue  # a header: no token that is (or looks like) a number
            lines.append((number, tokens))
            count += len(tokens)
            if count > cap:  # before any number is parsed
                _limits.check("sample_size", count, f"points of an empirical law; {path} has more, reading "
                              "stopped there")
    values = []
    for number, tokens in lines:
        for t in tokens:
            try:
                values.append(parse_number(t, "file"))
            except ParameterError:
                raise ParameterError("file", f"line {number}: {t[:40]!r} is not a number (numbers separated by "
                                     "',', ';' or spaces; one header line allowed)", path) from None
    if not values:
        raise ParameterError("file", "contains no numbers", path)
    return tuple(values)


@dataclass(frozen=True)
class Empirical(TimeLaw):
    """The empirical distribution of a sample x_1..x_N of times (each with probability 1/N).

    ``Empirical(values)`` or ``empirical:file=times.csv`` (which reads the sample) (exact decimals). E T^n = (1/N) sum x_i^n
    exactly; LST (1/N) sum e^{-s x_i}; arrivals during one such time: the Poisson mixture
    with one node lambda x per distinct value (``docs/theory/chapter2.md`` section 3, row D, mixed).
    """

    spec = "empirical"
    values: tuple = param("the sample of times", kind=Kind.NUMBERS, units="time", cli=False)
    source: str | None = param("file the sample was read from", kind=Kind.TEXT, key="file", default=None)

    def __post_init__(self):
        if self.source is not None and not self.values:
            object.__setattr__(self, "values", read_sample(self.source))
        from ..numbers import exact

        values = tuple(exact(v, f"sample[{i}]") for i, v in enumerate(self.values))
        object.__setattr__(self, "values", values)
        self._validate()

    @classmethod
    def from_file(cls, path: str) -> "Empirical":
        """The empirical law of the times in a text/CSV file (:func:`read_sample`)."""
        return cls((), str(path))

    @classmethod
    def from_spec_values(cls, values):
        if set(values) == {"file"}:
            return cls.from_file(values["file"])
        if set(values) == {"values"}:
            from ..params import Param, parse_value

            return cls(parse_value(values["values"], Param("sample", Kind.NUMBERS), "values"))
        raise ParameterError(f"expects {cls.usage()}")

    @classmethod
    def usage(cls) -> str:
        return "empirical:file=PATH | empirical:values=X1/X2/.."

    def _validate(self):
        if not self.values:
            raise ParameterError("empirical: the sample is empty")
        _limits.check("sample_size", len(self.values), "points of an empirical law")
        low = min(self.values)
        if low < 0:
            raise ParameterError("sample", "must hold times >= 0", low)
        if not sum(self.values) > 0:
            raise ParameterError("sample", "must have a positive mean")

    @property
    def _atoms(self):
        counts = Counter(self.values)
        size = len(self.values)
        return tuple(sorted((x, Fraction(c, size)) for x, c in counts.items()))

    @property
    def mean(self):
        """E T."""
        return self.moment(1)

    def lst(self, s):
        import sympy as sp

        return sp.Add(*[to_sympy(w) * sp.exp(-to_sympy(x) * s) for x, w in self._atoms])

    def _moment(self, n):
        return sum(w * x**n for x, w in self._atoms)

    def count_law(self, lam):
        atoms = self._atoms
        return PoissonCount(tuple(lam * x for x, _ in atoms), tuple(w for _, w in atoms))

    def survival_pieces(self):
        """P(T > x) = sum over the distinct sample points x_j of their weight times 1{x < x_j}."""
        return tuple((w, 0, x) for x, w in self._atoms if x > 0)

    def sample_array(self):
        import numpy as np

        return np.array([float(v) for v in self.values])

    def sample(self, rng, size):
        return rng.choice(self.sample_array(), size=size)

    def spec_text(self):
        """``empirical:file=PATH`` for a sample read from a file, else ``empirical:values=...`` (parses back)."""
        if self.source is not None:
            return f"empirical:file={self.source}"
        from ..params import show_value

        return f"empirical:values={show_value(self.values)}"

    @classmethod
    def examples(cls):
        return (cls((Fraction(1, 10), Fraction(1, 20), Fraction(1, 5), Fraction(1, 10))),)
