"""Exact-input guards shared by the symbolic layer.

Every parameter that enters a law or a model passes through :func:`exact`, which
accepts integers, :class:`fractions.Fraction`, SymPy numbers and symbols, and
refuses Python floats (a hidden float would make an exact derivation inexact and
silently round an mpmath evaluation to 53 bits).
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Integral

import sympy as sp

__all__ = ["ParameterError", "exact", "require_positive", "require_probability", "is_number"]


class ParameterError(ValueError):
    """A model or law parameter violates its constraint.

    The message always names the parameter and the constraint, e.g.
    ``mean = -1: must be > 0``.
    """


def exact(value, name: str) -> sp.Expr:
    """Return ``value`` as an exact SymPy expression, refusing floats.

    >>> exact(Fraction(3, 200), "mean")
    3/200
    >>> exact(0.015, "mean")
    Traceback (most recent call last):
    ...
    qderive.symbolic._exact.ParameterError: mean = 0.015 is a float: give an exact number (int, Fraction, sympy.Rational) so results stay exact
    """
    if isinstance(value, bool):
        raise ParameterError(f"{name} = {value!r} is not a number")
    if isinstance(value, Integral):
        return sp.Integer(int(value))
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    if isinstance(value, float):
        raise ParameterError(
            f"{name} = {value!r} is a float: give an exact number (int, Fraction, "
            "sympy.Rational) so results stay exact"
        )
    if isinstance(value, sp.Basic):
        if value.atoms(sp.Float):
            raise ParameterError(f"{name} = {value} contains a Float: give exact numbers")
        return value
    raise ParameterError(f"{name} = {value!r} is not a number or a SymPy expression")


def is_number(expr: sp.Expr) -> bool:
    """True when ``expr`` has no free symbols (it can be evaluated numerically)."""
    return not expr.free_symbols


def require_positive(expr: sp.Expr, name: str) -> sp.Expr:
    """Refuse a numeric value that is not > 0 (symbols pass: they are assumed positive)."""
    if is_number(expr) and not bool(expr > 0):
        raise ParameterError(f"{name} = {expr}: must be > 0")
    return expr


def require_probability(expr: sp.Expr, name: str, *, open_low: bool = False) -> sp.Expr:
    """Refuse a numeric value outside [0, 1] (or (0, 1] with ``open_low``)."""
    if is_number(expr):
        low_ok = bool(expr > 0) if open_low else bool(expr >= 0)
        if not (low_ok and bool(expr <= 1)):
            bound = "(0, 1]" if open_low else "[0, 1]"
            raise ParameterError(f"{name} = {expr}: must lie in {bound}")
    return expr
