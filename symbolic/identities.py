"""Exact identities between SymPy expressions: the one test every derivation and every stated paper form uses."""

from __future__ import annotations

import sympy as sp

from .numbers import to_sympy

__all__ = ["exact_identity"]


def exact_identity(lhs, rhs) -> bool:
    """True when ``lhs - rhs`` cancels to 0 exactly (cancel, then simplify as a fallback)."""
    diff = sp.cancel(sp.together(to_sympy(lhs) - to_sympy(rhs)))
    if diff == 0:
        return True
    return sp.simplify(diff) == 0
