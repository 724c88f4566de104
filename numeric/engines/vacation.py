"""Engines of the vacation queues: closed forms (infinite room) and the cut recursion (finite room).

* :class:`InfiniteEngine` -- M[X]/G/1 with multiple, single or no vacations: the measures
  (3), (5), (6), (7) and the variance from the general-law closed forms of
  :mod:`qderive.symbolic.closed_forms.vacation_infinite`, compiled once. With exact
  moments (every concrete law of qderive has rational moments) they are evaluated
  *exactly* in rational arithmetic; only single vacations with a vacation law whose
  P(no arrival) = varphi(lambda) is irrational (deterministic, uniform, lognormal) need
  mpmath, with two precisions compared.
* :class:`FiniteEngine` -- M[X]/G/1/r: :mod:`qderive.numeric.kernels.vacation`
  (partial or whole admission), every quantity a sum of positive terms (a-priori bound:
  O(r) roundings, log10(r) guard digits).
* :func:`size` -- the smallest waiting room with loss <= a target (``qderive size``).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from qderive.symbolic import limits as _limits
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.vacation import (
    Admission,
    FiniteVacationQueue,
    VacationMeasures,
    VacationPolicy,
)

from ..kernels import vacation as K
from ..sequences import batch_blocks, batch_vectors, count_sequences, digits_for
from .base import Engine, Trouble

__all__ = ["InfiniteEngine", "FiniteEngine", "FiniteSweep", "size", "policy_key"]


#: the measures of the closed forms: the fields of the result record, in order
MEASURE_KEYS = VacationMeasures.keys()


def policy_key(model) -> str:
    if model.vacation is None:
        return "none"
    return model.vacation_policy.value


class InfiniteEngine(Engine):
    """Closed forms of M[X]/G/1 with vacations (see the module docstring)."""

    _evaluators: dict = {}

    def _evaluator(self, policy: str):
        from qderive.numeric.compile import cached_evaluator

        if policy not in self._evaluators:
            def make():
                from qderive.symbolic.closed_forms import vacation_infinite as VI

                return VI.measure_expressions(policy), VI.SYMBOLS

            self._evaluators[policy] = cached_evaluator(f"vacation_infinite_measures::{policy}", make)
        return self._evaluators[policy]

    def _values(self, model) -> list:
        return model.moment_values()

    def is_exact(self, model) -> bool:
        return policy_key(model) != "single" or self._values(model)[-1] is not None

    @property
    def confirm(self):  # only the irrational c_0 of single vacations needs two precisions
        return True

    def compute(self, model, ctx, **options):
        policy = policy_key(model)
        ev = self._evaluator(policy)
        values = self._values(model)
        if values[-1] is None or policy != "single":
            values[-1] = Fraction(0) if policy != "single" else None
        if values[-1] is not None:
            exact = ev.exact(*values)
            out = {k: ctx.num(v) for k, v in zip(MEASURE_KEYS, exact)}
            if ctx.is_float64:
                outside = [k for k, v in zip(MEASURE_KEYS, exact) if v != 0 and not 2.0**-1022 <= abs(out[k]) < math.inf]
                if outside:
                    raise Trouble(f"{', '.join(outside)} lie outside the float64 range")
            return out
        # single vacations, c_0 = P(no batch during a vacation) irrational: the count kernel's beta_0
        beta = count_sequences(model.vacation.count_law(model.rate), 0, ctx)[0]
        args = [ctx.num(v) for v in values[:-1]] + [beta[0]]
        out = ev.numpy(*args) if ctx.is_float64 else ev.mpmath(*args)
        return dict(zip(MEASURE_KEYS, out))

    def float64_trouble(self, model, values):
        # exact results are correctly rounded; only the inexact path (single vacations, irrational c_0)
        # forms 1 - rho_bar from rounded moments, with a relative error eps / (1 - rho_bar)
        if self.is_exact(model):
            return None
        gap = 1 - model.rho_bar
        if float(gap) < 1e-6:
            return f"1 - rho_bar = {float(gap):.3g}: the closed forms cancel in float64 near saturation"
        return None


# --------------------------------------------------------------------------------------
# Finite waiting room
# --------------------------------------------------------------------------------------


class FiniteSweep:
    """Every finite-r measure of one model for many capacities r, incremental in r (one context).

    The laws become kernel callables (:mod:`qderive.numeric.sequences`) and
    :class:`qderive.numeric.kernels.vacation.FiniteVacation` does the rest.
    """

    def __init__(self, model: FiniteVacationQueue, ctx):
        self.model, self.ctx = model, ctx
        m = model
        lam = m.rate
        with ctx:
            lam_c, b1 = ctx.num(lam), ctx.num(m.service.moment(1))
            f1 = ctx.num(m.vacation.moment(1)) if m.vacation is not None else ctx.num(0)

        def service_counts(n):
            return count_sequences(m.service.count_law(lam), n, ctx)

        def vacation_counts(n):
            return count_sequences(m.vacation.count_law(lam), n, ctx)

        def batch(n):
            bv = batch_vectors(m.batch, n, ctx)
            return bv.pmf, bv.tail, bv.excess, bv.l1, bv.geometric, bv.support

        self._kernel = K.FiniteVacation(
            ctx, service_counts, vacation_counts if m.vacation is not None else None, batch, lam_c, b1, f1,
            single=m.vacation_policy is VacationPolicy.SINGLE, whole=m.admission is Admission.WHOLE,
            columns=lambda n: batch_blocks(m.batch, n, ctx), whole_max=_limits.current().whole_capacity)

    def at(self, r: int) -> dict:
        """Every measure with r waiting places."""
        self.model.with_capacity(r)  # validation only
        with self.ctx:
            try:
                return self._kernel.at(int(r))
            except ArithmeticError as exc:
                if self.ctx.is_float64:
                    raise Trouble(str(exc)) from None
                raise

    def loss_at(self, r: int):
        """The loss probability with r places; O(r) per r under partial admission."""
        self.model.with_capacity(r)
        with self.ctx:
            return self._kernel.loss_at(int(r))


class FiniteEngine(Engine):
    """M[X]/G/1/r by :mod:`qderive.numeric.kernels.vacation` (positive terms throughout)."""

    def compute(self, model, ctx, **options):
        out = FiniteSweep(model, ctx).at(model.capacity)
        if ctx.is_float64 and not np.all(np.isfinite(np.asarray(out["p"], dtype=float))):
            raise Trouble("the queue-length law over- or underflows float64")
        return out

    def guard_digits(self, model) -> int:
        # O(r) roundings in the recursions, and the count sequences' own sums
        return digits_for(model.capacity + 1) + 3

    def escalation_budget(self, model):
        r = model.capacity
        return "mp_capacity", r, f"about {max(1, round(4.5e-5 * r * r))} s of mpmath arithmetic at r = {r}"

    def notes(self, model, values):
        rb = model.rho_bar
        if rb >= 1:
            from qderive.symbolic.numbers import decimal_text

            return [f"overload: rho_bar = {decimal_text(rb)} >= 1, the loss stays above 1 - 1/rho_bar = "
                    f"{decimal_text(1 - 1 / rb)} for every capacity"]
        return []


# --------------------------------------------------------------------------------------
# Buffer sizing
# --------------------------------------------------------------------------------------


def _lowest_capacity(model) -> int:
    r = 0 if model.vacation is None else 1
    if model.admission is Admission.WHOLE:
        room = model.batch.min_size
        r = max(r, room - (0 if model.vacation is not None else 1))
    return r


def size(values: dict, request, digits=None) -> dict:
    """min { r : loss(r) <= target } (``qderive size vacation-finite``).

    The loss of M[X]/G/1/r falls as r grows, towards 1 - 1/rho_bar for rho_bar >= 1 (the
    load-balance limit of Theorem 1.1 as P^r_e -> 0), so a target at or below that limit is
    refused at once. Partial admission: the incremental engine gives the loss at each r in
    O(r), and capacities are scanned one by one (no assumption; O(R^2) in all, with a
    progress bar beyond a few seconds). Whole admission: gallop and bisect (the loss is
    monotone in r on every grid tried); the answer's predecessor is shown not to meet it.
    """
    from qderive.symbolic.numbers import decimal_text

    from ..backend import FLOAT64, mp_context

    target, top = request.target_loss, request.max_capacity
    model = FiniteVacationQueue.from_values({**values, "capacity": max(top, 1) if values.get("admission")
                                             is not Admission.WHOLE else min(max(top, 1),
                                                                             _limits.current().whole_capacity)})
    rho = model.rho_bar
    if rho >= 1 and target <= 1 - 1 / rho:
        raise ParameterError(f"target-loss = {decimal_text(target)} is unreachable: with rho_bar = {decimal_text(rho)} "
                             f">= 1 the loss stays above 1 - 1/rho_bar = {decimal_text(1 - 1 / rho)} for every capacity")
    ctx = FLOAT64 if digits is None else mp_context(digits + 10 + digits_for(top))
    sweep = FiniteSweep(model, ctx)
    with ctx:
        goal = ctx.num(target)
    start = _lowest_capacity(model)

    def meets(r):
        return sweep.loss_at(r) <= goal

    def fail(r):
        hint = " (rho_bar = 1: the loss falls only like 1/r)" if rho == 1 else ""
        raise ParameterError(f"target-loss = {decimal_text(target)} is not met with capacity up to {r} "
                             f"(--max-capacity){hint}; raise --max-capacity or the target")

    from .progress import Progress

    if model.admission is Admission.PARTIAL:
        r = start
        with Progress(top, "capacity", quiet=digits is None and top <= 2000) as bar:
            while not meets(r):
                r += 1
                bar.update(r)
                if r > top:
                    fail(top)
        found = r
    else:
        lo, hi = start - 1, start
        while not meets(hi):
            lo = hi
            hi = min(2 * hi if hi else 1, top)
            if lo == top:
                fail(top)
        found = _first_true(lo, hi, meets)
    m = sweep.at(found)
    out = {"capacity": found, "loss_probability": m["loss_probability"]}
    if found > start:
        out["loss_probability_one_fewer"] = sweep.loss_at(found - 1)
    if request.wait_level is not None:
        out.update(_delay_capacities(model, found, top, request, digits))
    return out


def _delay_capacities(model, found: int, top: int, request, digits) -> dict:
    """The capacities r >= ``found`` (the smallest meeting the loss target) whose admitted customers'
    Q-quantile of the wait is <= T: [found, largest]. The quantile grows with r (a larger room admits
    customers who find more work ahead); gallop and bisect, and check the answer's successor fails."""
    from qderive.symbolic.numbers import decimal_text

    Q, T = request.wait_level, request.wait_bound
    key = decimal_text(Q)

    def quantile(r):
        return model.with_capacity(r).evaluate(digits, wait_quantile=[key]).response["wait_quantile"][key]

    t_key = decimal_text(T)

    @functools.lru_cache(maxsize=None)  # each capacity's tail once (the gallop and the bisection share ends)
    def meets(r):  # Q-quantile <= T  <=>  P(W > T) <= 1 - Q (the tail is continuous and decreasing): one tail
        tail = model.with_capacity(r).evaluate(digits, wait_tail=[t_key]).response["wait_tail"][t_key]
        return tail <= float(1 - Q) if digits is None else tail <= _exact_mpf(1 - Q)

    if not meets(found):
        raise ParameterError(f"no capacity meets both targets: r = {found} is the smallest with loss <= "
                             f"--target-loss, and there the {decimal_text(Q)}-quantile of the wait is "
                             f"{float(quantile(found)):.6g} > {decimal_text(T)} (it grows with r)")
    if model.rho_bar < 1:  # the quantile rises to the infinite room's: if that meets the target, every r does
        from qderive.symbolic.models.vacation import VacationQueue

        infinite = VacationQueue(model.rate, model.batch, model.service, model.vacation, model.vacation_policy)
        limit = infinite.evaluate(digits, wait_quantile=[key]).response["wait_quantile"][key]
        if (limit <= T) if digits is None else (limit <= _exact_mpf(T)):
            return {"max_capacity_for_delay": None, "wait_quantile_at_capacity": quantile(found),
                    "wait_quantile_infinite_room": limit}
    lo, hi = found, found
    while hi < top and meets(hi):
        lo, hi = hi, min(top, 2 * hi)
    largest = hi if meets(hi) else _first_true(lo, hi, lambda r: not meets(r)) - 1
    out = {"max_capacity_for_delay": largest, "wait_quantile_at_capacity": quantile(found),
           "wait_quantile_at_max_capacity": quantile(largest)}
    if largest < top:
        out["wait_quantile_one_more"] = quantile(largest + 1)
    return out


def _first_true(lo: int, hi: int, pred) -> int:
    """The smallest r in (lo, hi] with pred(r), by bisection, given pred(lo) false and pred(hi) true (monotone)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _exact_mpf(x):
    import mpmath

    return mpmath.mpf(x.numerator) / x.denominator
