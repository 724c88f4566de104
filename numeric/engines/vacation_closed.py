"""Engine of ``vacation-finite-r``: the closed forms in r evaluated exactly in rational arithmetic.

The closed forms of :mod:`qderive.symbolic.closed_forms.vacation_finite_r` (the case the
parameters fall in: generic, rho_bar = 1 or the double pole) are compiled once, with the
powers s_i^r as arguments w_i, into two evaluators kept in the private cache: the ratios
s_1, s_2 from (lambda, p, mu, nu), and the measures from (lambda, p, mu, nu, r, w_1, w_2).
With rational parameters every measure is then an exact rational
(:class:`fractions.Fraction`: w_i = s_i^r formed exactly), rounded once into the context,
so float64 and every precision are exact (``is_exact``); a value outside the double range
is handed on by the precision policy as an mpmath number. No SymPy is imported on this
path once the cache is warm (the loss as a closed form in r at given parameters, which
needs SymPy, is :func:`qderive.symbolic.closed_forms.vacation_finite_r.loss_in_r`).
"""

from __future__ import annotations

import functools
from fractions import Fraction

from ...symbolic.models.vacation_closed import ClosedFormCase
from .base import Engine

__all__ = ["ClosedFormEngine", "exact_measures", "ratios"]

_KEYS = ("loss_probability", "idle_probability", "mean_queue_length", "mean_wait", "pr", "q0", "qr")


@functools.lru_cache(maxsize=8)
def _evaluators(case: ClosedFormCase):
    from ..compile import cached_evaluator

    def ratios():
        from ...symbolic.closed_forms import vacation_finite_r as V

        return V.ratio_expressions(case), V.SYMBOLS

    def measures():
        from ...symbolic.closed_forms import vacation_finite_r as V

        assert V.MEASURE_KEYS == _KEYS
        return V.measure_expressions(case), V.MEASURE_ARGS

    key = case.name.lower()
    return (cached_evaluator(f"vacation_finite_r_ratios::{key}", ratios),
            cached_evaluator(f"vacation_finite_r_measures::{key}", measures))


def exact_measures(model) -> dict:
    """Every measure of ``model`` (a :class:`ClosedFormVacationQueue`) as an exact Fraction."""
    ratios, measures = _evaluators(model.case)
    params = [Fraction(v) for v in (model.rate, model.p, model.mu, model.nu)]
    s = ratios.exact(*params)
    powers = [Fraction(v) ** model.capacity for v in s]
    return dict(zip(_KEYS, measures.exact(*params, model.capacity, *powers)))


def ratios(model) -> tuple:
    """The ratios (s_1, s_2) of q~_j, p~_j at ``model``'s parameters (exact; s_1 = 1 at rho_bar = 1, one ratio
    s_1 = s_2 at the double pole)."""
    ev, _ = _evaluators(model.case)
    values = ev.exact(*[Fraction(v) for v in (model.rate, model.p, model.mu, model.nu)])
    if model.case is ClosedFormCase.GENERIC:
        return tuple(values)
    if model.case is ClosedFormCase.LOAD_ONE:
        return (Fraction(1), values[0])
    return (values[0],)


class ClosedFormEngine(Engine):
    """Exact closed forms in r (see the module docstring)."""

    def is_exact(self, model) -> bool:
        return True

    def compute(self, model, ctx, **options):
        return {k: ctx.num(v) for k, v in exact_measures(model).items()}

    def notes(self, model, values):
        from ...symbolic.numbers import decimal_text

        shown = ", ".join(decimal_text(v) for v in ratios(model))
        return [f"{model.case.value} closed form in r (Sopin 2013 section 1.2), ratios s_i of q~_j: {shown}; the loss "
                "as a function of r: qderive.symbolic.closed_forms.vacation_finite_r.loss_in_r(model) or "
                "`qderive derive vacation-finite-r`"]
