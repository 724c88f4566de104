"""The engine of ``sip-retransmission`` for the precision policy (:func:`~.fixed_point.solve`, every fixed point)."""

from __future__ import annotations

import functools

from ..base import Engine
from .capabilities import supports
from .fixed_point import solve

__all__ = ["SipEngine"]


class SipEngine(Engine):
    """``sip-retransmission``: :func:`~.fixed_point.solve`; the top-level measures are the first solution's."""

    @classmethod
    def supports(cls, model, asked=frozenset()):
        """The engine's declaration (:func:`supports`: the routes' and the fixed point's), as the capability
        protocol's refusal naming the model field (asked before any work)."""
        found = supports(model)
        return None if found is None else found.for_model(model)

    def compute(self, model, ctx, **options):
        digits = None if ctx.is_float64 else max(15, ctx.dps - 10)
        sols, notes = _solve_cached(model, digits)
        first = dict(sols[0])
        for key in ("stable", "slope", "residual", "copy_refusal_probability", "admitted_duplicate_fraction"):
            first.pop(key)
        first["solutions"] = [dict(s) for s in sols]
        if not model.retry_count:  # the solutions' keys without --retry-after are unchanged
            for s in first["solutions"]:
                s.pop("request_reject_probability"), s.pop("retry_rate")
        self._notes = notes
        return first

    def guard_digits(self, model) -> int:
        return 2

    def float64_trouble(self, model, values):
        """P(answered) = sum_j p^j q (1 - F(T_B - tau_j)) loses its relative digits when the tails are near 1: a
        goodput below 1e-6 lambda_0 (but not 0, the saturated queue) is recomputed with mpmath."""
        g = float(values["goodput"]) / float(model.rate + model.rate_non_invite)
        if 0 < g < 1e-6:
            return f"goodput = {g:.3g} lambda_0: float64 cancels in 1 - P(R_copy > t)"
        return None

    def notes(self, model, values):
        return list(getattr(self, "_notes", []))


@functools.lru_cache(maxsize=8)
def _solve_cached(model, digits):
    return solve(model, digits)
