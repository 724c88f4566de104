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


def read_sample(path: str) -> tuple:
    """The numbers of a text/CSV file (separated by commas, semicolons or white space), exactly.

    A first line without any number is a header and is skipped; any other token that is not
    a number is an error naming the line. The size is bounded by the limit ``sample_size``.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise ParameterError("file", f"cannot be read ({exc.strerror or exc})", path) from None
    except UnicodeDecodeError:
        raise ParameterError("file", "is not a text file", path) from None
    values = []
    cap = _limits.current().sample_size
    for number, line in enumerate(lines, start=1):
        tokens = [t for t in _SPLIT.split(line.strip()) if t]
        if not tokens:
            continue
        try:
            parsed = [parse_number(t, f"{path} line {number}") for t in tokens]
        except ParameterError:
            if number == 1 and not values:
                continue  # a header
            raise
        values.extend(parsed)
        if len(values) > cap:
            _limits.check("sample_size", len(values), "points of an empirical law")
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
