"""The finite room's law data shared by its wait engine and the sums that build on it (no engine imported here).

* :class:`Strategy`: how Phi(s) is computed at the nodes (:mod:`~.vacation_finite_wait`, item 4);
* :func:`lst_at`: (beta(s), (beta(s) - beta(lambda)) / (lambda - s)) of a law at complex nodes, from its closed
  form (:func:`lst_expressions`, compiled once) or its own numeric rule (the lognormal, item 8);
* :func:`suffix_at`: the product of a part's suffix laws' transforms (item 6);
* :func:`linear_parts`: the atoms and densities of a piecewise linear survival function.

Kept apart from :mod:`~.vacation_finite_wait` so that the engines it calls (the shifted sums of
:mod:`~.blocks_finite_shifts`, :mod:`~.blocks_shifts`) read these without importing it back.
"""

from __future__ import annotations

import enum
import functools

import numpy as np

from .vacation_wait import law_values, numeric_transform

__all__ = ["Strategy", "lst_expressions", "lst_at", "suffix_at", "linear_parts"]


class Strategy(enum.Enum):
    """How Phi(s) is computed at the nodes (module docstring, item 4); tests force one to compare them."""

    #: float64: by batches everywhere; mpmath: by customers where that is stable, by batches elsewhere
    AUTO = "auto"
    #: by batches at every node
    BATCHES = "batches"
    #: by customers where that is stable (also in float64), by batches elsewhere
    CUSTOMERS = "customers"


def lst_expressions(law):
    """(beta(s), (beta(s) - beta(lambda)) / (lambda - s)) in s and lambda; the quotient cancelled when rational."""
    import sympy as sp

    s, lam = sp.Symbol("s"), sp.Symbol("lambda", positive=True)
    beta = sp.Integer(1) * law.lst(s)  # a SymPy expression (a law's transform; never text)
    quotient = (beta - beta.subs(s, lam)) / (lam - s)
    if beta.is_rational_function(s):
        quotient = sp.cancel(sp.together(quotient))
    return (beta, quotient), (s, lam)


@functools.lru_cache(maxsize=32)
def _lst(law):
    from ..compile import cached_evaluator

    params = law.spec_text() if hasattr(law, "spec_text") else repr(law)
    return cached_evaluator(f"finite_wait_lst::{type(law).__name__}::{params}", lambda: lst_expressions(law))


def lst_at(law, ctx, z, lam):
    """(beta(s), (beta(s) - beta(lambda)) / (lambda - s)) at the nodes z; a mixture law (``components()``) as the
    weighted sum of its components' values (both are linear in the law)."""
    parts = law.components() if hasattr(law, "components") else None
    if parts:
        values = [(float(w) if ctx.is_float64 else ctx.num(w), lst_at(c, ctx, z, lam)) for w, c in parts]
        return tuple(sum(w * v[i] for w, v in values) for i in (0, 1))
    if numeric_transform(law):  # no closed form (the lognormal): the law's own rule, with its error bound
        if ctx.is_float64:
            return law_values(law, z, ctx, float(lam))
        return _numeric_pair(law, ctx, z, lam)
    ev = _lst(law)
    if ctx.is_float64:
        b, g = ev.numpy(np.asarray(z, dtype=complex), float(lam))
        return np.asarray(b, dtype=complex) * np.ones(len(z)), np.asarray(g, dtype=complex) * np.ones(len(z))
    pair = np.frompyfunc(lambda x: tuple(ev.mpmath(x, lam)), 1, 2)
    b, g = pair(z)
    return b, g


def _numeric_pair(law, ctx, z, lam):
    """(beta(s), (beta(s) - beta(lambda)) / (lambda - s)) of a law with only a numeric transform at the mpmath nodes z
    (item 8): beta at every node by the law's rule (:func:`~.vacation_wait.law_values`), the quotient as that
    difference where |lambda - s| > lambda / 4 (as the law's rule does there) with beta(lambda) kept per law, digits and
    lambda (asked with lambda, the law's rule evaluates lambda itself on its slower quotient path at every call: a fifth
    of a lognormal vacation's 0.99 quantile), and the law's quotient rule at the nodes nearer lambda."""
    b = law_values(law, z, ctx)[0]
    flat = np.asarray(z, dtype=object).ravel()
    lm = complex(lam)
    near = np.array([abs(lm - complex(v)) <= abs(lm) / 4 for v in flat], dtype=bool)
    key = (law.spec_text(), ctx.dps, str(lam))
    if key not in _AT_RATE:
        if len(_AT_RATE) >= 16:
            _AT_RATE.pop(next(iter(_AT_RATE)))
        _AT_RATE[key] = law_values(law, np.array([lam], dtype=object), ctx)[0][0]
    bl = _AT_RATE[key]
    q = np.array([(bv - bl) / (lam - zv) for bv, zv in zip(np.asarray(b).ravel(), flat)], dtype=object)
    if near.any():
        q[near] = np.asarray(law_values(law, flat[near], ctx, lam)[1]).ravel()
    return b, q.reshape(np.shape(b))


#: beta(lambda) of the laws with only a numeric transform, by (law, digits, lambda): 16 entries
_AT_RATE: dict = {}


def suffix_at(data, ctx, z, lam):
    """The product of the transforms of the part's suffix laws (item 6) at the nodes z (1 without any)."""
    out = 1
    for law in data.suffix:
        out = out * lst_at(law, ctx, z, lam)[0]
    return out


def linear_parts(lin):
    """(atoms ((w, d), ...), densities ((c, x_0, x_1), ...)) of a piecewise linear P(V > x) given as pieces
    (x_0, x_1, S(x_0+), S(x_1-)) (exact numbers, or SymPy expressions for generated code): a jump of S at x_1 is an
    atom, a slope a density c = (S(x_0+) - S(x_1-)) / (x_1 - x_0) on [x_0, x_1]."""
    atoms, densities = [], []
    for i, (x0, x1, s0, s1) in enumerate(lin):
        after = lin[i + 1][2] if i + 1 < len(lin) else 0
        if s1 != after:  # a jump of S at x_1: an atom
            atoms.append((s1 - after, x1))
        if s0 != s1:
            densities.append(((s0 - s1) / (x1 - x0), x0, x1))
    return tuple(atoms), tuple(densities)
