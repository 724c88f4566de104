"""Exact numbers: every parameter is converted once, exactly, and never through ``eval``.

:func:`exact` turns what a user may pass into an exact number -- ``int``,
:class:`fractions.Fraction`, :class:`decimal.Decimal`, numpy integers and floats, SymPy
rationals, Python floats and decimal strings -- and keeps SymPy symbols and expressions
for symbolic work. The exact type of a number is :class:`fractions.Fraction` (no SymPy
import on numeric paths, so ``qderive eval`` stays quick).

* A ``float`` converts exactly through its shortest decimal representation, as the
  command line does: ``0.015`` is 3/200 (``repr(0.015) == '0.015'``), not the binary
  neighbour 0.01499999999999999944...
* A string is parsed as a decimal number (``"0.015"``, ``"1e-6"``, ``"3/200"``) by a
  regular expression and :class:`~fractions.Fraction`; it is never evaluated. Its length
  and exponent are bounded (:mod:`qderive.symbolic.limits`), so ``"1e-100000000"`` is
  refused at once instead of building a hundred-million-digit integer.

>>> exact(0.015, "mean")
Fraction(3, 200)
>>> exact("1e-6", "load")
Fraction(1, 1000000)
>>> exact("3/200", "mean")
Fraction(3, 200)
>>> exact(float("nan"), "load")
Traceback (most recent call last):
...
qderive.symbolic.errors.ParameterError: load = nan: must be a finite number
>>> decimal_text(Fraction(3, 200)), decimal_text(Fraction(1, 3))
('0.015', '1/3')
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal
from fractions import Fraction
from numbers import Integral, Rational

from . import limits as _limits
from .errors import BudgetError, ParameterError

__all__ = [
    "Fraction",
    "exact",
    "exact_int",
    "parse_number",
    "is_symbolic",
    "decimal_text",
    "to_sympy",
    "positive",
    "nonnegative",
    "probability",
]

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _sympy_basic():
    """sympy.Basic if SymPy has been imported (a SymPy object cannot exist otherwise)."""
    mod = sys.modules.get("sympy")
    return getattr(mod, "Basic", None) if mod is not None else None


def is_symbolic(value) -> bool:
    """True for a SymPy expression with free symbols (a symbolic parameter)."""
    basic = _sympy_basic()
    return basic is not None and isinstance(value, basic) and bool(value.free_symbols)


def parse_number(text: str, name: str = "number") -> Fraction:
    """An exact rational from decimal or scientific notation, or ``p/q``; a clear error otherwise.

    Bounded by the limits ``number_length`` and ``number_exponent``.
    """
    if not isinstance(text, str):
        raise ParameterError(name, "must be given as text", text)
    text = text.strip()
    lim = _limits.current()
    if len(text) > lim.number_length:
        raise BudgetError("number-length", len(text), lim.number_length, f"{name} has {len(text)} characters")
    if "/" in text:
        num_text, _, den_text = text.partition("/")
        if "/" in den_text:  # a/b/c is ambiguous: a/(b/c) or (a/b)/c; one '/' between two decimals only
            raise ParameterError(f"{name} = {text!r} is not a number: a fraction has one '/' between two decimals "
                                 "(write e.g. 3/200)")
        num, den = parse_number(num_text, name), parse_number(den_text, name)
        if den == 0:
            raise ParameterError(name, "divides by zero", text)
        return num / den
    if not _NUMBER.match(text):
        raise ParameterError(f"{name} = {text!r} is not a number (write e.g. 0.015, 3e-2 or 3/200)")
    mantissa, _, exponent = text.lower().partition("e")
    if exponent and abs(int(exponent)) > lim.number_exponent:
        raise BudgetError("number-exponent", abs(int(exponent)), lim.number_exponent,
                          f"{name} = {text}: decimal exponents are bounded so that parsing stays instant")
    return Fraction(text)


def exact(value, name: str):
    """``value`` as an exact number (:class:`Fraction`) or, if symbolic, the SymPy expression itself.

    Accepts int, Fraction, Decimal, numpy scalars, SymPy numbers and expressions, floats
    (through their shortest decimal representation) and decimal strings. Refuses
    booleans, NaN, infinities and anything else with a :class:`ParameterError` naming ``name``.
    """
    if isinstance(value, bool):
        raise ParameterError(name, "must be a number, not a boolean", value)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, Integral):
        return Fraction(int(value))
    if isinstance(value, str):
        return parse_number(value, name)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ParameterError(name, "must be a finite number", value)
        return exact(str(value), name) if abs(value.adjusted()) > _limits.current().number_exponent else Fraction(value)
    basic = _sympy_basic()
    if basic is not None and isinstance(value, basic):
        if value.free_symbols:
            if any(type(a).__name__ == "Float" for a in value.atoms()):
                raise ParameterError(name, "contains a Float: build it from exact numbers", value)
            return value
        if value.is_Rational:
            return Fraction(int(value.p), int(value.q))
        if value.is_Float:
            return exact(float(value), name)
        raise ParameterError(name, "must be a rational number or a symbol", value)
    if isinstance(value, Rational):  # numbers.Rational implementations (gmpy2.mpq, ...)
        return Fraction(int(value.numerator), int(value.denominator))
    try:
        f = float(value)  # numpy floats, anything float-like
    except (TypeError, ValueError):
        raise ParameterError(name, "must be a number", type(value).__name__) from None
    if not math.isfinite(f):
        raise ParameterError(name, "must be a finite number", f)
    return Fraction(repr(f))


def exact_int(value, name: str, minimum: int | None = None) -> int:
    """An exact integer (``4``, ``4.0``, ``"4"``, ``"1e3"``), at least ``minimum``."""
    v = exact(value, name)
    if is_symbolic(v) or v.denominator != 1:
        raise ParameterError(name, "must be an integer", v)
    if minimum is not None and v < minimum:
        raise ParameterError(name, f"must be an integer >= {minimum}", v)
    return int(v)


def positive(value, name: str):
    """``exact(value)`` refusing numbers <= 0 (symbols pass: they are taken to be positive)."""
    v = exact(value, name)
    if not is_symbolic(v) and not v > 0:
        raise ParameterError(name, "must be > 0", decimal_text(v))
    return v


def nonnegative(value, name: str):
    v = exact(value, name)
    if not is_symbolic(v) and v < 0:
        raise ParameterError(name, "must be >= 0", decimal_text(v))
    return v


def probability(value, name: str, *, open_low: bool = False):
    """``exact(value)`` in [0, 1] (or (0, 1] with ``open_low``)."""
    v = exact(value, name)
    if not is_symbolic(v):
        ok = (v > 0 if open_low else v >= 0) and v <= 1
        if not ok:
            raise ParameterError(name, f"must lie in {'(0, 1]' if open_low else '[0, 1]'}", decimal_text(v))
    return v


def decimal_text(value) -> str:
    """A short exact text of a number: a terminating decimal where there is one, else ``p/q``.

    Never prints an integer of more than 60 digits (Python's int-to-str limit is not hit):
    longer values are shown to 17 significant digits with a ``~`` prefix.
    """
    if not isinstance(value, Fraction):
        return str(value)
    p, q = value.numerator, value.denominator
    if p.bit_length() > 200 or q.bit_length() > 200:
        return "~" + _sci(value)
    q2, twos, fives = q, 0, 0
    while q2 % 2 == 0:
        q2 //= 2
        twos += 1
    while q2 % 5 == 0:
        q2 //= 5
        fives += 1
    if q2 != 1:
        return f"{p}/{q}"
    places = max(twos, fives)
    if places == 0:
        return str(p)
    scaled = p * 10**places // q
    sign = "-" if scaled < 0 else ""
    digits = str(abs(scaled)).rjust(places + 1, "0")
    text = f"{sign}{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    if len(text) > 30:
        return f"{p}/{q}" if len(f"{p}/{q}") < len(text) else text
    return text


def _sci(value: Fraction) -> str:
    """17 significant digits of any Fraction (no float: values beyond 1e308 or below 1e-308 are fine)."""
    import mpmath
    from mpmath.libmp import from_rational

    with mpmath.workdps(20):
        x = mpmath.mp.make_mpf(from_rational(value.numerator, value.denominator, mpmath.mp.prec, "n"))
        return mpmath.nstr(x, 17)


def to_sympy(value):
    """An exact number as a SymPy number (Fraction -> Rational, int -> Integer; SymPy values pass unchanged).

    Never parses text (the replacement for ``sympify`` on internal values): anything else is a TypeError.
    """
    import sympy as sp

    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    if isinstance(value, Integral):
        return sp.Integer(int(value))
    if isinstance(value, (list, tuple)):
        return type(value)(to_sympy(v) for v in value)
    raise TypeError(f"to_sympy: {type(value).__name__} is not an exact number")
