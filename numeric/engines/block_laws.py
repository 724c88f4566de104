"""The transforms of the blocks' laws at the context arrays of the inversion's nodes, compiled once per law.

* :func:`lst_values`: L*(s), the closed form compiled (or the law's own numeric transform: the lognormal);
* :func:`lst_taylor`: the Taylor coefficients L*^(j)(s) / j!, j < n, from the closed form's derivatives (the joint
  transform of the arrivals and a period's length, L*(s + lambda - lambda X(w)), as a series in w); for a law with
  only a numeric transform (the lognormal), L*^(j)(s) = E[(-T)^j e^{-sT}] = (-1)^j m_j L_j*(s) by the law's own rule
  applied to its size-biased law L_j (:func:`~qderive.numeric.size_biased.size_biased`: density x^j f(x) / m_j), with
  its error bound; for a law of a few or many atoms (a constant, an empirical sample) the sum over its atoms;
* :func:`batch_values`: the batch's X(z) at complex z.

Used by the blocks' transforms (:mod:`qderive.numeric.engines.blocks`,
:mod:`qderive.numeric.engines.blocks_threshold`).
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import numpy as np

from ..size_biased import count_terms, size_biased

__all__ = ["lst_values", "lst_at_rate", "lst_taylor", "batch_values", "size_biased", "numeric_counts",
           "phase_type_taylor"]


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


def lst_at_rate(law, lam, ctx):
    """L*(lambda), the probability that no batch arrives during one period of ``law``, as a real number of ``ctx``
    (:func:`lst_values` at the one point lambda)."""
    value = lst_values(law, np.array([lam], dtype=complex if ctx.is_float64 else object), ctx)[0]
    return value.real


def lst_taylor(law, s, ctx, n: int) -> list:
    """[L*^(j)(s) / j! for j < n] at the context array ``s``: the closed form's derivatives, compiled once; for a
    law with only a numeric transform (the lognormal) (-1)^j m_j / j! L_j*(s), L_j the size-biased law of
    :func:`size_biased`, by the law's own quadrature (float64: NaN where its bound exceeds 1e-12 of the transform,
    so the inversion's self-check escalates)."""
    from .vacation_wait import numeric_transform, service_atoms

    atoms = None if numeric_transform(law) else service_atoms(law)
    if atoms is not None:  # a constant, an empirical sample: sum_i w_i (-d_i)^j / j! e^{-s d_i}, no derivative compiled
        return _atoms_taylor(atoms, s, ctx, n)
    if numeric_transform(law):
        out = []
        for j in range(n):
            biased = size_biased(law, j)
            if biased is None:
                raise NotImplementedError(f"the derivatives of the transform of {law}")
            c = Fraction(law.moment(j)) * (-1) ** j / factorial(j)
            out.append(lst_values(biased, s, ctx) * (float(c) if ctx.is_float64 else ctx.num(c)))
        return out
    return [_evaluate(_taylor_evaluator(law, j), s, ctx) for j in range(n)]


def _atoms_taylor(atoms, s, ctx, n: int) -> list:
    """[L*^(j)(s) / j! for j < n] of a law of finitely many atoms ((d_i, w_i), exact) at the context array ``s``:
    L*(s) = sum_i w_i e^{-s d_i}, so L*^(j)(s) / j! = sum_i w_i (-d_i)^j / j! e^{-s d_i} (an empirical sample of
    hundreds of values: the compiled derivatives of its transform cost a minute cold at the orders the formal moments
    ask)."""
    num = (lambda q: float(q)) if ctx.is_float64 else ctx.num
    s = np.asarray(s, dtype=complex if ctx.is_float64 else object)
    out = [0 * s for _ in range(n)]
    for d, w in atoms:
        e = ctx.exp(s * (-num(d))) if d else 1 + 0 * s
        for j in range(n):
            c = w * (-d) ** j / factorial(j)
            if c:
                out[j] = out[j] + e * num(c)
    return out


def phase_type_taylor(law, c: Fraction, n: int):
    """[L*^(j)(c) / j! for j < n] exactly (Fractions) at the rational point c >= 0 for a phase-type law PH(alpha, T)
    with exact entries, else None: L*(s) = alpha_0 + alpha (sI - T)^{-1} t, t = -T 1 (alpha_0 = 1 - sum alpha, an atom
    at 0), so L*^(j)(c) / j! = (-1)^j alpha (cI - T)^{-(j+1)} t for j >= 1 (Neuts 1981, sec. 2.2: the LST of a PH
    law; here differentiated j times) -- n linear solves, where the compiled derivatives of a 4-phase Coxian's
    transform cost minutes cold at the orders the formal moments ask."""
    from ...symbolic.numbers import is_symbolic
    from ...symbolic.laws.phase_type import solve_exact

    ph = law.phase_type()
    if ph is None:
        return None
    alpha, T = ph
    if any(is_symbolic(v) for row in T for v in row) or any(is_symbolic(v) for v in alpha):
        return None
    size = len(alpha)
    shifted = [[(c if i == j else 0) - Fraction(T[i][j]) for j in range(size)] for i in range(size)]
    v = [-sum((Fraction(x) for x in row), Fraction(0)) for row in T]  # t = -T 1
    out = []
    for j in range(n):
        v = solve_exact(shifted, v)  # (cI - T)^{-(j+1)} t
        out.append((-1) ** j * sum((Fraction(a) * x for a, x in zip(alpha, v)), Fraction(0)))
    out[0] += 1 - sum((Fraction(a) for a in alpha), Fraction(0))
    return out


def numeric_counts(law, batch, lam: Fraction, n: int, ctx):
    """(a_0..a_{n-1}, P(A > 0), u_0) of the customers A arriving during one period of a law with only a numeric
    transform (the lognormal), in the mpmath context ``ctx``, without its count sequences:
    a(w) = L*(lambda - lambda X(w)) = sum_j beta_j X(w)^j (X the PGF of ``batch``, X(0) = 0), the batch counts
    beta_j = lambda^j m_j / j! L_j*(lambda) = (-lambda)^j L*^(j)(lambda) / j! by the size-biased laws L_j
    (:func:`~qderive.numeric.size_biased.count_terms`, each to the digits asked relative to itself);
    P(A > 0) = 1 - beta_0 and u_0 = E int_0^L e^{-lambda t} dt = (1 - beta_0) / lambda. Computed at the context's
    digits plus 10 plus the digits 1 - beta_0 ~ lambda E[L] cancels, and rounded to the context."""
    import math

    from ..backend import mp_context
    from ..kernels import series as S

    small = Fraction(lam) * Fraction(law.moment(1))
    lost = max(0, math.ceil(-math.log10(min(float(small), 1.0))))
    work = mp_context(ctx.dps + 10 + lost)
    with work:
        lw = work.num(Fraction(lam))
        beta = count_terms(law, lam, range(max(n, 1)), work.dps)
        a = S.compose(beta, [work.num(Fraction(batch.pmf(k))) if k else lw * 0 for k in range(max(n, 1))])
        busy = 1 - beta[0]
    with ctx:
        return [+v for v in a[:n]], +busy, +(busy / lw)


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


def bare_model(model):
    """The same queue without vacations, setup or close-down (N = 1): its wait is W_b J of (WS)."""
    import dataclasses

    return dataclasses.replace(model, vacation=None, vacation_policy=type(model.vacation_policy)("multiple"),
                               setup=None, close_down=None, start_threshold=1)
