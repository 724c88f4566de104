"""The transforms of the blocks' laws at the context arrays of the inversion's nodes, compiled once per law.

* :func:`lst_values`: L*(s), the closed form compiled (or the law's own numeric transform: the lognormal);
* :func:`lst_taylor`: the Taylor coefficients L*^(j)(s) / j!, j < n, from the closed form's derivatives (the joint
  transform of the arrivals and a period's length, L*(s + lambda - lambda X(w)), as a series in w);
* :func:`batch_values`: the batch's X(z) at complex z.

Used by the blocks' transforms (:mod:`qderive.numeric.engines.blocks`,
:mod:`qderive.numeric.engines.blocks_threshold`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["lst_values", "lst_taylor", "batch_values"]


#: the compiled transforms of the laws in this process (a tail's every inversion asks again)
_EVALUATORS: dict = {}


def _law_evaluator(law):
    """L*(s) of a law with a closed-form transform, compiled once (kept in the private cache and in the process)."""
    key = law.spec_text()
    if key not in _EVALUATORS:
        _EVALUATORS[key] = _compile_law(law)
    return _EVALUATORS[key]


def _compile_law(law):
    from ..compile import cached_evaluator

    def make():
        import sympy as sp

        s = sp.Symbol("s")
        return sp.Integer(1) * law.lst(s), (s,)

    return cached_evaluator("block_law_lst_v1::" + law.spec_text(), make)


def lst_values(law, s, ctx):
    """L*(s) at the context array ``s`` (complex float64, or mpc inside ``with ctx:``): the compiled closed form, or
    the law's own numeric transform (:func:`qderive.numeric.engines.vacation_wait.law_values`: the lognormal)."""
    from .vacation_wait import law_values, numeric_transform

    if numeric_transform(law):
        return law_values(law, s, ctx)[0]
    return _evaluate(_law_evaluator(law), s, ctx)


#: the compiled Taylor coefficients L*^(j)(s) / j! of the laws (a tail's every inversion asks again)
_TAYLOR: dict = {}


def _taylor_evaluator(law, j: int):
    key = (law.spec_text(), j)
    if key not in _TAYLOR:
        from ..compile import cached_evaluator

        def make():
            import sympy as sp

            s = sp.Symbol("s")
            return sp.diff(sp.Integer(1) * law.lst(s), s, j) / sp.factorial(j), (s,)

        _TAYLOR[key] = cached_evaluator(f"block_law_taylor_v1::{j}::" + law.spec_text(), make)
    return _TAYLOR[key]


def _evaluate(ev, s, ctx):
    """The compiled evaluator ``ev`` at the context array ``s`` (float64: a constant broadcast to its shape)."""
    if ctx.is_float64:
        return ev.numpy(np.asarray(s, dtype=complex)) + 0 * np.asarray(s, dtype=complex)
    return np.frompyfunc(ev.mpmath, 1, 1)(np.asarray(s, dtype=object))


def lst_taylor(law, s, ctx, n: int) -> list:
    """[L*^(j)(s) / j! for j < n] at the context array ``s`` (the closed form's derivatives, compiled once)."""
    return [_evaluate(_taylor_evaluator(law, j), s, ctx) for j in range(n)]


def batch_values(batch, z, ctx):
    """X(z) at the context array ``z``: a finite sum for a finite support, else the compiled closed form."""
    size = batch.max_size
    if size is not None:
        out = 0 * z
        for k in range(1, size + 1):
            p = batch.pmf(k)
            if p:
                out = out + z**k * ctx.num(Fraction(p))
        return out
    key = ("batch", repr(batch))
    if key not in _TAYLOR:
        from ..compile import cached_evaluator

        def make():
            import sympy as sp

            w = sp.Symbol("z")
            return sp.Integer(1) * batch.pgf(w), (w,)

        _TAYLOR[key] = cached_evaluator(f"block_batch_pgf_v1::{type(batch).__name__}::{batch!r}", make)
    return _evaluate(_TAYLOR[key], z, ctx)
