"""Engine of the Erlang B model: :mod:`qderive.numeric.kernels.erlang` under the one precision policy.

* :class:`ErlangBEngine` -- every measure of ``qderive eval erlang-b`` from one call of
  :func:`~qderive.numeric.kernels.erlang.erlang_b_measures`. The recursion's rounding errors add
  up and are never amplified, and the logarithmic continuation with mpmath loses
  log10(n (log n + |log rho|)) digits at most, so the a-priori guard is log10(n) + 5 digits
  (:meth:`ErlangBEngine.guard_digits`). In float64 a blocking below the double range comes out
  as 0 (or a subnormal): the generic test of the policy sees the underflow and recomputes with
  mpmath; log10_blocking_probability is finite either way and stays a float.
* :func:`size` -- ``qderive size erlang-b``: the smallest number of servers for a target
  blocking (one pass of the recursion, :func:`~qderive.numeric.kernels.erlang.erlang_b_servers`),
  or the load n servers carry at it (:func:`~qderive.numeric.kernels.erlang.erlang_b_load`); the
  reported measures at the answer are evaluated through the policy (``ErlangB.evaluate``).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from ...symbolic import limits as _limits
from ...symbolic.capabilities import declare
from ...symbolic.errors import ParameterError
from ...symbolic.models.erlang_b import ErlangB
from ...symbolic.numbers import decimal_text
from ..backend import FLOAT64, mp_context
from ..kernels import erlang as K
from ..precision import GUARD, outside_note
from ..sequences import digits_for
from .base import Engine, Trouble

__all__ = ["ErlangBEngine", "ServiceWindowEngine", "size", "smallest_servers", "load_for_blocking"]


def _guard(n: int) -> int:
    return digits_for(n) + 5


def _in_range(ctx, value, name):
    """The context number of an exact positive value; Trouble when it is not a normal float64."""
    try:
        v = ctx.num(value)
    except OverflowError:
        v = None
    if ctx.is_float64 and (v is None or not ctx.tiny <= v <= ctx.huge):
        with mpmath.workdps(20):
            shown = mpmath.nstr(mpmath.mpf(value.numerator) / value.denominator, 6)
        raise Trouble(f"{name} = {shown} lies outside the float64 range")
    return v


class ErlangBEngine(Engine):
    """Erlang B by the recursion (R) of :mod:`qderive.numeric.kernels.erlang` (see the module docstring)."""

    def compute(self, model, ctx, **options):
        rho = _in_range(ctx, model.load, "load")
        h = None if model.holding_time is None else _in_range(ctx, model.holding_time, "holding_time")
        out = K.erlang_b_measures(ctx, rho, model.servers, h)
        if "p" in options.get("include", frozenset()):
            _limits.check("capacity", model.servers, "the law of --distribution has n + 1 entries")
            out["p"] = K.erlang_b_law(ctx, rho, model.servers, out["blocking_probability"])
        return out

    def guard_digits(self, model) -> int:
        return _guard(model.servers)


_SIMULATED_ONLY = ("it configures the simulated SCP only (qderive simulate scp-window): the window model (1)-(6) "
                   "is the allocation of the windows without a detector, a back end or a control")


class ServiceWindowEngine(Engine):
    """``qderive eval scp-window``: the multi-service window model of seed 003 at R = ``model.windows``.

    The windows n_i of :func:`qderive.numeric.simulation.scp.service_windows` ((5): sum_i S_i ws_i = R,
    n_i = S_i ws_i, integers by largest remainders); each service an M/M/n_i/n_i loss system at load
    lambda_i h_i: blocking, carried rate (2) and busy windows (3) by
    :func:`~qderive.numeric.kernels.erlang.erlang_b_measures` (a service with n_i = 0 is always blocked);
    fairness :func:`~qderive.numeric.simulation.scp.fairness_index` of the carried rates; effectiveness
    sum_i busy_i / R.
    """

    independent = {name: _SIMULATED_ONLY for name in ("control", "servers", "w_max", "sources", "interval", "threshold",
                                                      "timeout", "update", "smoothing", "rejection_cost")}

    def compute(self, model, ctx, **options):
        from ..simulation.scp import fairness_index, service_windows

        windows = service_windows(model.windows, model.allocation, model.holdings)
        blocking, carried, busy = [], [], []
        for n, lam, h in zip(windows, model.rates, model.holdings):
            if n == 0:
                blocking.append(ctx.num(1))
                carried.append(ctx.num(0))
                busy.append(ctx.num(0))
                continue
            out = K.erlang_b_measures(ctx, _in_range(ctx, Fraction(lam) * Fraction(h), "load"), n,
                                      _in_range(ctx, Fraction(h), "holding"))
            blocking.append(out["blocking_probability"])
            carried.append(out["carried_rate"])
            busy.append(out["mean_busy_windows"])
        return {"windows": list(windows), "blocking": blocking, "carried_rate": carried, "busy_windows": busy,
                "fairness": fairness_index(carried, model.allocation, ctx.num),
                "effectiveness": sum(busy) / model.windows}

    def guard_digits(self, model) -> int:
        return _guard(model.windows)


# --------------------------------------------------------------------------------------
# Sizing
# --------------------------------------------------------------------------------------


def _log(ctx, q: Fraction):
    """log q of an exact q > 0 as a context number (correct also where q itself underflows float64)."""
    if not ctx.is_float64:
        return mpmath.log(ctx.num(q))
    with mpmath.workdps(30):
        return float(mpmath.log(mpmath.mpf(q.numerator) / q.denominator))


def _contexts(digits, n_hint: int):
    """The search contexts: float64, then mpmath at 17 digits if float64 leaves its range; or mpmath at D."""
    if digits is None:
        return [FLOAT64, mp_context(17 + GUARD + _guard(n_hint))]
    return [mp_context(digits + GUARD + _guard(n_hint))]


def _unreached(load, target, limit, why=""):
    return ParameterError("target_blocking", f"is not reached with up to {limit} servers at load "
                          f"{decimal_text(load)}{why}; raise the target or --limit servers=...", decimal_text(target))


def smallest_servers(load, target, digits=None) -> int:
    """min { n : B(n, load) <= target } for exact load and target (ParameterError beyond the servers limit).

    B(n, rho) >= 1 - n/rho (the carried load is below n), so a target at or below 1 - N/rho is
    refused at once for the limit N. Where float64 cannot decide (B(n) or B(n-1) within 1e-9 of
    the target) the boundary is settled with mpmath.
    """
    load, target = Fraction(load), Fraction(target)
    limit = _limits.current().servers
    if 1 - Fraction(limit) / load > target:
        raise _unreached(load, target, limit, " (B >= 1 - n/rho)")
    for ctx in _contexts(digits, limit):
        with ctx:
            rho = ctx.num(load)
            if ctx.is_float64 and not ctx.tiny <= rho <= ctx.huge:
                continue  # the load leaves float64: search with mpmath
            found = K.erlang_b_servers(ctx, rho, ctx.num(target), _log(ctx, target), limit)
        if found is None:
            raise _unreached(load, target, limit)
        n, prev, b, in_logs = found
        if ctx.is_float64 and _tie(prev, b, target, in_logs):
            return _settle(load, target, n)
        return n
    raise AssertionError("unreachable")  # pragma: no cover - the mpmath context takes every load


def _tie(prev, b, target, in_logs) -> bool:
    """True when float64 cannot tell B(n) or B(n-1) from the target (within 1e-9 relative)."""
    if in_logs:
        log_t = _log(FLOAT64, target)
        return min(abs(prev - log_t), abs(b - log_t)) <= 1e-9 * abs(log_t)
    t = float(target)
    return min(abs(prev - t), abs(b - t)) <= 1e-9 * t


def _settle(load, target, n: int) -> int:
    """Move n until B(n) <= target < B(n-1) holds at 30 + guard digits (only near a float64 tie)."""
    ctx = mp_context(30 + _guard(n))
    with ctx:
        rho, t = ctx.num(load), ctx.num(target)

        def meets(m):
            return m >= 1 and K.erlang_b(ctx, rho, m)[1] <= t

        while not meets(n):
            n += 1
        while meets(n - 1):
            n -= 1
    return n


def load_for_blocking(servers: int, target, digits=None):
    """The load rho* with B(servers, rho*) = target: a float (float64), else an mpf (``digits``, or a
    float64 load outside the double range)."""
    target = Fraction(target)
    for ctx in _contexts(digits, servers):
        with ctx:
            try:
                return K.erlang_b_load(ctx, servers, _log(ctx, target), _log(ctx, 1 - target))
            except ArithmeticError:
                if not ctx.is_float64:
                    raise
    raise AssertionError("unreachable")  # pragma: no cover - the mpmath context has no range to leave


def _out(value, digits):
    """An output number: float64 runs give floats, except outside the double range (an mpf, printed as a
    decimal string); ``digits`` runs give mpf."""
    if isinstance(value, Fraction):
        with mpmath.workdps((digits or 17) + GUARD):
            value = mpmath.mpf(value.numerator) / value.denominator
    if digits is None and isinstance(value, mpmath.mpf):
        f = float(value)
        if 2.0**-1022 <= abs(f) < float("inf"):
            return f
    return value


@declare(via_engine=True)
def size(values: dict, request, digits=None) -> dict:
    """``qderive size erlang-b`` (see the module docstring), with the keys of the old command line.

    With ``--load``: servers, load, blocking_probability, blocking_with_one_fewer (B(n-1); 1 for
    n = 1), carried_load. With ``--servers``: servers, load (rho*), blocking_probability (the
    target), carried_load rho* (1 - target). With ``--holding-time`` also arrival_rate = rho/h.
    """
    holding = values.get("holding_time")
    if holding is not None:
        ErlangB(1, 1, holding)  # validates the holding time (the error names its option)
    t = request.target_blocking
    if request.load is not None:
        load = request.load
        n = smallest_servers(load, t, digits)
        rec = ErlangB(n, load).evaluate(digits)
        fewer = ErlangB(n - 1, load).evaluate(digits).blocking_probability if n > 1 else 1.0
        out = {"servers": n, "load": _out(load, digits), "blocking_probability": rec.blocking_probability,
               "blocking_with_one_fewer": fewer, "carried_load": rec.carried_load}
        rho = load
    else:
        n = request.servers
        found = load_for_blocking(n, t, digits)
        with mpmath.workdps((digits or 17) + GUARD):
            rho = mpmath.mpf(found)
            carried = rho * (1 - mpmath.mpf(t.numerator) / t.denominator)
        out = {"servers": n, "load": _out(found, digits), "blocking_probability": _out(t, digits),
               "carried_load": _out(carried, digits)}
    if holding is not None:
        with mpmath.workdps((digits or 17) + GUARD):
            r = mpmath.mpf(rho.numerator) / rho.denominator if isinstance(rho, Fraction) else rho
            out["arrival_rate"] = _out(r / (mpmath.mpf(holding.numerator) / holding.denominator), digits)
    outside = [k for k, v in out.items() if isinstance(v, mpmath.mpf)] if digits is None else []
    if outside:  # float64 left its range (the load search went to mpmath): say so, as eval does
        out["notes"] = [outside_note(outside)]
    return out
