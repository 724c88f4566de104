"""Response-time laws of the infinite-room vacation queue: the transforms of
:mod:`qderive.symbolic.closed_forms.vacation_wait` with the model's own laws, compiled once.

:func:`response_laws` (the model's ``response`` reference) gives the wait and the sojourn time
of a random customer as :class:`~qderive.numeric.response.ResponseLaw` objects:

* the transform is ``wait_transform(policy, service=..., vacation=..., batch=..., rate=...)``
  with the concrete laws substituted (one SymPy expression in s), compiled by
  :func:`qderive.numeric.compile.cached_evaluator` and kept in the private cache under the
  model's parameters (a warm process imports no SymPy for float64 tails); numpy on complex
  arrays in float64, the same printed source on mpc in mpmath (rational transforms) or
  SymPy's mpmath printer (transcendental ones, e.g. a gamma law of non-integer shape);
* P(W = 0) is ``p_wait_zero(policy)`` at the model's moments; the moments are
  ``wait_moments(policy, k)`` (general laws) evaluated exactly at the model's moments
  b_1..b_{k+1}, f_1..f_{k+1}, l_1..l_{k+1} and c_0 = varphi(lambda) (mpmath when c_0 is
  irrational, e.g. a deterministic vacation).

A transform with an ``exp(-s D)`` factor (deterministic, uniform, empirical laws) is marked
not smooth: tails and quantiles are refused for it, the moments are not.
"""

from __future__ import annotations

import functools
import json
from fractions import Fraction

import numpy as np

from ..response import ResponseLaw

__all__ = ["response_laws"]


def _policy(model) -> str:
    return "none" if model.vacation is None else model.vacation_policy.value


def _key(model, kind: str) -> str:
    return f"vacation_{kind}_lst::{_policy(model)}::" + json.dumps(model.parameters(), sort_keys=True)


def _expression(model, kind: str):
    import sympy as sp
    from qderive.symbolic.closed_forms import vacation_wait as VW
    from qderive.symbolic.numbers import to_sympy

    policy = _policy(model)
    laws = {"service": model.service, "batch": model.batch, "rate": to_sympy(model.rate)}
    if model.vacation is not None:
        c0 = model.moment_values()[-1]
        laws["vacation"] = model.vacation
        laws["zero_count"] = to_sympy(c0) if c0 is not None else model.vacation.lst(to_sympy(model.rate))
    expr = (VW.wait_transform if kind == "wait" else VW.sojourn_transform)(policy, **laws)
    return sp.sympify(expr), (VW.s,)


def _smooth(model) -> tuple[bool, str]:
    """False (and which law) when a law's transform has an exp(-s D) factor (module docstring)."""
    import sympy as sp

    s = sp.Symbol("s")
    for what, law in (("service", model.service), ("vacation", model.vacation)):
        if law is None:
            continue
        lst = law.lst(s)
        if any(s in e.free_symbols for e in lst.atoms(sp.exp)) or lst.has(sp.Integral):
            return False, f"the {what} time {law} has no smooth density (its transform has exp(-s D) factors)"
    return True, ""


@functools.lru_cache(maxsize=64)
def _compiled(model, kind: str):
    from ..compile import cached_evaluator

    return cached_evaluator(_key(model, kind), lambda: _expression(model, kind))


def _transform(model, kind: str):
    def make(ctx):
        ev = _compiled(model, kind)
        if ctx.is_float64:
            return lambda s: ev.numpy(np.asarray(s, dtype=complex))
        scalar = np.frompyfunc(ev.mpmath, 1, 1)  # elementwise: mpc scalars, never mpf (op) array
        return lambda s: scalar(s)

    return make


def _zero_count(model, ctx):
    """c_0 = varphi(lambda) (single vacations only; 0 otherwise, unused): exact, or the count kernel's beta_0."""
    if model.vacation is None or model.vacation_policy.value != "single":
        return Fraction(0)
    c0 = model.moment_values()[-1]
    if c0 is not None:
        return c0
    from ..sequences import count_sequences

    with ctx:
        return count_sequences(model.vacation.count_law(model.rate), 0, ctx)[0][0]


def _evaluate(ev, args, digits):
    """Exact when the expressions are rational and the arguments are; else mpmath at digits + 10."""
    if ev.rational and all(isinstance(a, (int, Fraction)) for a in args):
        return list(ev.exact(*args))
    from ..backend import mp_context

    ctx = mp_context((digits or 15) + 10)
    with ctx:
        return list(ev.mpmath(*[ctx.num(a) if isinstance(a, (int, Fraction)) else +a for a in args]))


def _moment_expressions(kind: str, policy: str, k: int):
    from qderive.symbolic.closed_forms import vacation_wait as VW

    moments = VW.wait_moments if kind == "wait" else VW.sojourn_moments
    return moments(policy, k), VW.moment_symbols(k)


def _moment_values(model, kind: str):
    def values(k: int, digits):
        from ..backend import mp_context
        from ..compile import cached_evaluator

        policy = _policy(model)
        ev = cached_evaluator(f"vacation_{kind}_moments::{policy}::{k}", lambda: _moment_expressions(kind, policy, k))
        n = k + 1
        vac = model.vacation
        args = [model.rate, *(model.service.moment(i) for i in range(1, n + 1))]
        args += [vac.moment(i) for i in range(1, n + 1)] if vac is not None else [Fraction(1)] * n
        args += [model.batch.moment(i) for i in range(1, n + 1)]
        args.append(_zero_count(model, mp_context((digits or 15) + 10)))
        return _evaluate(ev, args, digits)

    return values


def _p_zero_expression(policy: str):
    from qderive.symbolic.closed_forms import vacation_wait as VW

    return (VW.p_wait_zero(policy),), VW.moment_symbols(0)  # lambda, b_1, f_1, l_1, c_0


def _p_zero(model):
    def p0(ctx):
        from ..compile import cached_evaluator

        policy = _policy(model)
        ev = cached_evaluator(f"vacation_wait_p0::{policy}", lambda: _p_zero_expression(policy))
        f1 = model.vacation.moment(1) if model.vacation is not None else Fraction(1)
        args = [model.rate, model.service.moment(1), f1, model.batch.moment(1), _zero_count(model, ctx)]
        value = _evaluate(ev, args, ctx.dps)[0]
        with ctx:
            return ctx.num(value) if isinstance(value, (int, Fraction)) else (float(value) if ctx.is_float64 else +value)

    return p0


def response_laws(model) -> dict:
    """``{"wait": ResponseLaw, "sojourn": ResponseLaw}`` of a concrete :class:`VacationQueue` (module docstring)."""
    from qderive.symbolic.cache import cached

    smooth, why = cached(f"vacation_wait_smooth::{_policy(model)}::" + json.dumps(model.parameters(), sort_keys=True),
                         lambda: _smooth(model))
    return {kind: ResponseLaw(kind, _transform(model, kind), _p_zero(model), _moment_values(model, kind), smooth, why)
            for kind in ("wait", "sojourn")}
