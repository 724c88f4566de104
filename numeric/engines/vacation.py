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
* :func:`size` -- ``qderive size``: the smallest waiting room with loss <= a target
  (:func:`smallest_capacity`) or, for a given room, the largest load (:func:`largest_load`; the loss
  has the positive floor :func:`loss_floor` as the load goes to 0).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.capabilities import declare
from ...symbolic.errors import ParameterError
from ...symbolic.models.vacation import (
    Admission,
    FiniteVacationQueue,
    VacationMeasures,
    VacationPolicy,
)
from ..kernels import vacation as K
from ..sequences import batch_blocks, batch_vectors, count_sequences, digits_for
from .base import Engine, Trouble
from .searching import compare, first_true, near

__all__ = ["InfiniteEngine", "FiniteEngine", "FiniteSweep", "size", "smallest_capacity", "largest_load", "loss_floor",
           "policy_key", "infinite_law"]


#: the measures of the closed forms: the fields of the result record, in order (the law p is computed apart)
MEASURE_KEYS = tuple(f.name for f, m in VacationMeasures.measure_fields() if not m.optional)
#: the first table of the infinite-room law p_j (doubled until the missing mass is below 1e6 eps)
FIRST_TERMS = 16


def policy_key(model) -> str:
    if model.vacation is None:
        return "none"
    return model.vacation_policy.value


class InfiniteEngine(Engine):
    """Closed forms of M[X]/G/1 with vacations (see the module docstring)."""


    _evaluators: dict = {}

    def _evaluator(self, policy: str):
        from ..compile import cached_evaluator

        if policy not in self._evaluators:
            def make():
                from ...symbolic.closed_forms import vacation_infinite as VI

                return VI.measure_expressions(policy), VI.SYMBOLS

            self._evaluators[policy] = cached_evaluator(f"vacation_infinite_measures::{policy}", make)
        return self._evaluators[policy]

    def _values(self, model) -> list:
        return model.moment_values()

    def is_exact(self, model) -> bool:
        if model.blocks:  # the blocks' series run in the working precision (count sequences below N)
            return False
        return policy_key(model) != "single" or self._values(model)[-1] is not None

    def escalation_budget(self, model):
        n = model.start_threshold
        if not model.blocks or n < 2:
            return None
        return "mp_capacity", n, f"about {max(1, round(4e-5 * n * n))} s of mpmath arithmetic at N = {n}"

    @property
    def confirm(self):  # only the irrational c_0 of single vacations needs two precisions
        return True

    def compute(self, model, ctx, **options):
        out = self._measures(model, ctx)
        if "p" in options.get("include", frozenset()):
            out["p"] = infinite_law(model, ctx)
        return out

    def notes(self, model, values):
        if "p" not in values:
            return []
        n = len(values["p"])
        return [f"p: the first {n} terms p_0..p_{n - 1} of the law of the number waiting (the smallest power of two "
                f">= {FIRST_TERMS} with 1 - sum p_j <= 2.2e-10 in float64, <= 10^-D with --digits D), from the "
                "finite-room kernel at the working precision (positive sums), not in exact arithmetic like the "
                "other measures"]

    def _measures(self, model, ctx):
        if model.blocks:  # a start threshold, a setup or a close-down: the composed structure (B1), (B2)
            from .blocks import measures

            return measures(model, ctx)
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
        if model.blocks and model.start_threshold > 4000:  # measured: relative error ~ 3e-17 N (5e-14 at N = 1000)
            return (f"start threshold N = {model.start_threshold}: the renewal sums below N lose about log10(N) "
                    "digits in float64")
        return None


def infinite_law(model, ctx) -> list:
    """p_0..p_{n-1}: the time-stationary law of the number waiting in M[X]/G/1 with vacations (rho_bar < 1), any
    start-of-busy-period blocks (:func:`qderive.numeric.engines.blocks.waiting_law`: the departure chain (B1) by
    its positive recursion and the split p_j = i_j + b_{j+1} of the time-stationary law into the idle and the busy
    part; for today's rules it agrees with Theorem 1.2's p_j = (1 - rho_bar) p~_j to 1e-15 relative). n = 16, 32,
    ... until the missing mass 1 - sum_{j<n} p_j is at most 2.2e-10 in float64 (1e6 eps), 10^-(w - 10) at w
    working digits (10^-D under ``digits=D``); limits ``capacity`` (float64) and ``mp_capacity`` (mpmath)."""
    from .blocks import passage_moments, waiting_law

    tolerance = ctx.num(10**6) * ctx.eps if ctx.is_float64 else ctx.num(10) ** -max(1, ctx.dps - 10)
    mean_y = passage_moments(model, ctx)[0][1]
    n = FIRST_TERMS
    while True:
        _limits.check("capacity" if ctx.is_float64 else "mp_capacity", n,
                      "terms of the infinite-room law p_j (--distribution): the load is too close to 1")
        p = waiting_law(model, ctx, n, mean_y)
        if 1 - ctx.fsum(p) <= tolerance:
            return p
        n *= 2


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
            bv = batch_vectors(m.batch, n, ctx, keep=True)  # read-only, built once per law and n
            return bv.pmf, bv.tail, bv.excess, bv.l1, bv.geometric, bv.support

        self._kernel = K.FiniteVacation(
            ctx, service_counts, vacation_counts if m.vacation is not None else None, batch, lam_c, b1, f1,
            single=m.vacation_policy is VacationPolicy.SINGLE, whole=m.admission is Admission.WHOLE,
            columns=lambda n: batch_blocks(m.batch, n, ctx, twin_numbers=True), whole_max=_limits.current().whole_capacity)

    def at(self, r: int) -> dict:
        """Every measure with r waiting places (composed blocks: :func:`block_measures`, O(r^2) per r)."""
        if self.model.blocks:
            return block_measures(self.model.with_capacity(r), self.ctx)
        if r != self.model.capacity:  # the model's own capacity was validated with it
            self.model.with_capacity(r)  # validation only
        with self.ctx:
            try:
                return self._kernel.at(int(r))
            except ArithmeticError as exc:
                if self.ctx.is_float64:
                    raise Trouble(str(exc)) from None
                raise

    def loss_at(self, r: int):
        """The loss probability with r places; O(r) per r under partial admission (composed blocks: O(r^2))."""
        if self.model.blocks:
            return self.at(r)["loss_probability"]
        self.model.with_capacity(r)
        with self.ctx:
            return self._kernel.loss_at(int(r))


def block_measures(model, ctx) -> dict:
    """The measures of the finite room with composed blocks (:func:`qderive.numeric.engines.blocks_finite.
    finite_measures`); float64 trouble (an underflowing a_0) becomes :class:`Trouble`."""
    from .blocks_finite import finite_measures

    with ctx:
        try:
            return finite_measures(model, ctx)
        except ArithmeticError as exc:
            if ctx.is_float64:
                raise Trouble(str(exc)) from None
            raise


class FiniteEngine(Engine):
    """M[X]/G/1/r by :mod:`qderive.numeric.kernels.vacation` (positive terms throughout); with a start threshold,
    a setup or a close-down (``model.blocks``) by :mod:`qderive.numeric.engines.blocks_finite` (both admissions)."""

    def compute(self, model, ctx, **options):
        if model.blocks:
            out = block_measures(model, ctx)
        else:
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
            from ...symbolic.numbers import decimal_text

            return [f"overload: rho_bar = {decimal_text(rb)} >= 1, the loss stays above 1 - 1/rho_bar = "
                    f"{decimal_text(1 - 1 / rb)} for every capacity"]
        return []


# --------------------------------------------------------------------------------------
# Buffer sizing
# --------------------------------------------------------------------------------------


def _lowest_capacity(model) -> int:
    r = 0 if model.vacation is None else 1
    if model.blocks:  # N <= r, and a setup needs a place for the batch that meets the threshold
        r = max(r, model.start_threshold, 1 if model.setup is not None else 0)
        if model.admission is Admission.WHOLE:  # and whole batches must be able to meet N (a larger room helps)
            from ...symbolic.blocks.machine import machine, refuse_stuck

            stages = machine(model)
            while r < model.capacity:
                try:
                    refuse_stuck(model.with_capacity(r), stages)
                    break
                except ParameterError:
                    r += 1
    if model.admission is Admission.WHOLE:
        room = model.batch.min_size
        r = max(r, room - (0 if model.vacation is not None else 1))
    return r


@declare(via_engine=True)
def size(values: dict, request, digits=None, progress: bool = True) -> dict:
    """``qderive size vacation-finite``: the smallest capacity (:func:`smallest_capacity`, no ``--capacity``)
    or, with ``--capacity`` and without ``--load`` / ``--rate``, the largest load (:func:`largest_load`)."""
    given_load = values.get("rate") is not None or values.get("load") is not None
    blocks = [o for o, f in (("start-threshold", "start_threshold"), ("setup", "setup"), ("close-down", "close_down"))
              if values.get(f) not in (None, 1)]
    if blocks and values.get("capacity") is not None:
        raise ParameterError(blocks[0], "is not computed by size --capacity (the largest load): its loss floor as the "
                             "load goes to 0 is written for the thesis's rules only; size the capacity with --load "
                             "instead")
    if values.get("capacity") is not None:
        if given_load:
            raise ParameterError("give --capacity R to find the largest load, or --load / --rate to find the smallest "
                                 "capacity, not both")
        if request.wait_level is not None:
            raise ParameterError("target-wait-quantile", "sizes the capacity; it does not apply with --capacity "
                                 "(the largest load)")
        return largest_load(values, request.target_loss, digits)
    if not given_load:
        raise ParameterError("size vacation-finite needs --load (or --rate) to find the smallest capacity, or "
                             "--capacity to find the largest load")
    return smallest_capacity(values, request, digits, progress)


#: under partial admission, capacities up to this one are scanned one by one (no assumption); beyond it
#: the search brackets the answer from the loss's geometric decay and bisects (the loss falls with r)
SCAN_CAPACITY = 2000


def smallest_capacity(values: dict, request, digits=None, progress: bool = True) -> dict:
    """min { r : loss(r) <= target } (``qderive size vacation-finite`` without ``--capacity``).

    The loss of M[X]/G/1/r falls as r grows, towards L = max(0, 1 - 1/rho_bar) (the
    load-balance limit of Theorem 1.1 as P^r_e -> 0), so a target at or below L is refused at
    once. Partial admission: the incremental engine gives the loss at each r in O(r) once the
    sequences reach r; capacities up to ``SCAN_CAPACITY`` are scanned one by one (no
    assumption). Beyond it, the excess g(r) = loss(r) - L decays geometrically,
    g(r) ~ C sigma^r (sigma = 1/z*, the dominant pole of the queue-length PGF; like 1/r at
    rho_bar = 1): sigma is estimated from g at r0/2 and r0 = ``SCAN_CAPACITY``, which predicts
    r* ~ r0 + log(g_target/g(r0)) / log(sigma). A prediction beyond twice ``--max-capacity``
    is refused at once, naming the limit; otherwise the answer is bracketed by probes starting at
    the prediction (doubling) and found by bisection, the loss being decreasing in r, and the
    answer's predecessor is shown not to meet the target (``loss_probability_one_fewer``). With
    ``--digits`` the float64 search finds the place first (refused beyond the limit ``mp-capacity``)
    and the mpmath losses decide there (moving the answer by single steps if they disagree). The work
    is O(r*^2) for the sequences and O(r* log r*) for the probes (was O(r*^2) probes: 41 s
    to give up at 10^5). Whole admission (r <= whole-capacity) and the composed blocks (a start threshold, a
    setup, a close-down: O(r^2) per capacity, from r = N on): gallop and bisect from the start.
    An mpmath probe beyond the limit ``mp-capacity`` is refused (mpmath costs O(r^2)).
    A progress bar (tqdm on stderr, on a terminal, after 2 s) follows the capacities probed.
    """
    from ...symbolic.numbers import decimal_text
    from ..backend import FLOAT64, mp_context

    target, top = request.target_loss, request.max_capacity
    model = FiniteVacationQueue.from_values({**values, "capacity": max(top, 1) if values.get("admission")
                                             is not Admission.WHOLE else min(max(top, 1),
                                                                             _limits.current().whole_capacity)})
    if request.wait_level is not None:  # the quantile's laws refused before the loss search, named as asked
        _refuse_wait(model)
    rho = model.rho_bar
    if rho >= 1 and target <= 1 - 1 / rho:
        raise ParameterError(f"target-loss = {decimal_text(target)} is unreachable: with rho_bar = {decimal_text(rho)} "
                             f">= 1 the loss stays above 1 - 1/rho_bar = {decimal_text(1 - 1 / rho)} for every capacity")
    located = None
    if digits is not None and target > Fraction(1, 10**290):  # float64 finds the place, mpmath decides there
        located = smallest_capacity(values, replace(request, wait_level=None, wait_bound=None), None,
                                    progress)["capacity"]
        _limits.check("mp_capacity", located, f"size --digits: float64 puts the answer at r = {located}; mpmath "
                      "costs O(r^2)")
    ctx = FLOAT64 if digits is None else mp_context(digits + 10 + digits_for(top))
    sweep = FiniteSweep(model, ctx)
    with ctx:
        goal = ctx.num(target)
    start = _lowest_capacity(model)
    from .progress import Progress

    bar = Progress(top, "capacity", quiet=not progress)

    def loss(r):
        if digits is not None:
            _limits.check("mp_capacity", r, f"size --digits probes r = {r}; mpmath costs O(r^2)")
        bar.update(r)
        return sweep.loss_at(r)

    def meets(r):
        return loss(r) <= goal

    def fail(r, estimate=""):
        hint = " (rho_bar = 1: the loss falls only like 1/r)" if rho == 1 else ""
        raise ParameterError(f"target-loss = {decimal_text(target)} is not met with capacity up to {r} "
                             f"(--max-capacity){hint}{estimate}; raise --max-capacity or the target")

    with bar:
        if located is not None:  # the float64 answer, moved by the mpmath losses if they disagree there
            r = located
            while r > start and meets(r - 1):
                r -= 1
            while not meets(r):
                r += 1
                if r > top:
                    fail(top)
            found = r
        elif model.admission is Admission.PARTIAL and not model.blocks:
            r, scan_top = start, min(top, max(start, SCAN_CAPACITY))
            while r <= scan_top and not meets(r):
                r += 1
            if r > top:
                fail(top)
            found = r if r <= scan_top else _bracket(loss, meets, scan_top, top, target, rho, fail)
        else:
            lo, hi = start - 1, start
            while not meets(hi):
                lo = hi
                hi = min(2 * hi if hi else 1, top)
                if lo == top:
                    fail(top)
            found = first_true(lo, hi, meets)
        m = sweep.at(found)
        out = {"capacity": found, "loss_probability": m["loss_probability"]}
        if found > start:
            out["loss_probability_one_fewer"] = sweep.loss_at(found - 1)
    if request.wait_level is not None:
        out.update(_delay_capacities(model, found, top, request, digits))
    return out


def _bracket(loss, meets, r0: int, top: int, target, rho, fail) -> int:
    """The smallest r in (r0, top] meeting the target, given loss(r0) above it (see :func:`size`): the
    geometric-decay prediction, then doubling probes and a bisection."""
    from ...symbolic import limits as lim

    limit_value = float(1 - 1 / rho) if rho > 1 else 0.0
    g0, g_half, g_goal = (float(loss(r0)) - limit_value, float(loss(max(1, r0 // 2))) - limit_value,
                          float(target) - limit_value)
    guess, estimate = None, ""
    if 0 < g0 < g_half and g_goal > 0:
        log_sigma = math.log(g0 / g_half) / (r0 - max(1, r0 // 2))
        geometric = r0 + math.log(g_goal / g0) / log_sigma
        harmonic = r0 * g0 / g_goal  # rho_bar = 1: g ~ c / r
        guess = math.ceil(max(geometric, harmonic) if rho == 1 else geometric)
        estimate = (f": the loss falls by a factor {math.exp(log_sigma):.6g} per place beyond r = {r0} (loss "
                    f"{float(loss(r0)):.3g}), so about r = {guess} would be needed")
        # near saturation log g(r) is convex (g ~ C sigma^r / r^a), so the chord underestimates r*: a guess
        # beyond twice the largest capacity allowed is refused without building the sequences
        if guess > 2 * top:
            if guess > lim.current().capacity:
                from ...symbolic.errors import BudgetError

                raise BudgetError("capacity", guess, lim.current().capacity,
                                  f"target-loss needs about r = {guess} places: the loss falls by a factor "
                                  f"{math.exp(log_sigma):.6g} per place beyond r = {r0}; the finite-queue recursion "
                                  "costs O(r^2); raise --max-capacity too")
            fail(top, estimate)
    lo, hi = r0, min(top, max(r0 + 1, guess or 2 * r0))
    while not meets(hi):
        if hi == top:
            fail(top, f": the loss at r = {top} is {float(loss(top)):.6g}")
        lo, hi = hi, min(top, 2 * hi)
    return first_true(lo, hi, meets)


def loss_floor(model: FiniteVacationQueue) -> Fraction:
    """The loss as the load tends to 0 (exact): the first batch of a busy period meets an empty system.

    With multiple vacations the server is then on vacation, so the batch finds m = r places; with
    single vacations (the one vacation is over) or none, the first customer is served at once and the
    batch finds m = r + 1 places. Partial admission loses the excess (X - m)^+, whole admission a batch
    with X > m entirely::

        floor = E (X - m)^+ / l_1   (partial),    floor = E X 1{X > m} / l_1 = (E (X - m)^+ + m P(X > m)) / l_1.

    Positive whenever batches larger than m are possible (geometric batches: always).
    """
    X = model.batch
    m = model.capacity + (0 if model.vacation is not None and model.vacation_policy is VacationPolicy.MULTIPLE else 1)
    lost = X.excess(m) if model.admission is Admission.PARTIAL else X.excess(m) + m * X.tail(m)
    return Fraction(lost) / Fraction(X.mean)


#: relative width of the load bracket of :func:`largest_load` in float64 (with ``--digits D``: 10^-D)
LOAD_TOLERANCE = Fraction(1, 2**40)


def largest_load(values: dict, target, digits=None) -> dict:
    """max { rho_bar : loss(rho_bar) <= target } at the capacity ``values["capacity"]`` (``qderive size
    vacation-finite --capacity R --target-loss EPS``, without ``--load``).

    The loss (Theorem 1.1 (12)) grows with the load rho_bar = lambda l_1 b_1 from the floor
    :func:`loss_floor` (rho_bar -> 0) to 1 (rho_bar -> infinity) -- observed on every grid tried,
    not proved; the answer is checked at the load and just above it. A target at or below the
    floor is refused (ParameterError naming the floor). Since loss >= 1 - 1/rho_bar (the
    throughput is at most 1/b_1), every load meeting the target lies below 1/(1 - target): the
    bracket [lo, hi] (exact loads) is found by halving from there and bisected to a relative
    width of 2^-40 (``digits=D``: 10^-D); each decision loss <= target is taken in float64 under
    the precision policy, or at 30 digits (``digits`` if larger) when the float64 loss lies
    within 1e-9 of the target -- in float64 only while the bracket is wider than 1e-6 (relative;
    a narrower one whose midpoint cannot be decided in float64 is returned as it is). Returns ``load`` (= lo, meets the target), ``rate``, ``loss_probability``,
    ``load_above`` (= hi) with ``loss_probability_above`` (> target) and ``loss_floor``.
    """
    from ...symbolic.numbers import decimal_text

    target = Fraction(target)
    probe = FiniteVacationQueue.from_values({**{k: v for k, v in values.items() if k not in ("rate", "load")},
                                             "load": Fraction(1)})
    per_load = probe.rate  # lambda at rho_bar = 1: 1 / (l_1 b_1)
    floor = loss_floor(probe)
    if target <= floor:
        where = ("a batch arriving during a vacation finds r" if probe.vacation is not None
                 and probe.vacation_policy is VacationPolicy.MULTIPLE else "the first customer is served at once, "
                 "the batch finds r + 1")
        raise ParameterError(f"target-loss = {decimal_text(target)} is below the loss floor "
                             f"{float(floor):.6g} (= {decimal_text(floor)}) of capacity {probe.capacity}: as the "
                             f"load goes to 0 {where} places and loses the excess; no load meets the target "
                             "(raise --capacity or the target)")
    precise = max(30, digits or 0)
    cache: dict = {}

    def loss(rho, d=digits):
        key = (rho, d)
        if key not in cache:
            cache[key] = replace(probe, rate=rho * per_load).evaluate(d).loss_probability
        return cache[key]

    def meets(rho, settle=True):
        """loss(rho) <= target; None when the float64 value is within NEAR of the target and ``settle`` is off."""
        value = loss(rho)
        if near(value, target):
            if not settle:
                return None
            value = loss(rho, precise)
        return compare(value, target) <= 0

    # loss >= 1 - 1/rho_bar (throughput <= 1/b_1, strict: the server idles with positive probability),
    # so every load meeting the target lies below 1/(1 - target): halve from there
    hi = 1 / (1 - target)
    lo = hi / 2
    while not meets(lo):
        hi, lo = lo, lo / 2
        if lo < Fraction(1, 2**300):
            raise ParameterError(f"target-loss = {decimal_text(target)} is not met by any load down to 2^-300 (the "
                                 f"loss falls to its floor {float(floor):.6g} only as the load goes to 0)")
    width = LOAD_TOLERANCE if digits is None else Fraction(1, 10**digits)
    while hi - lo > width * hi:
        mid = (lo + hi) / 2
        # float64: once the loss agrees with the target to NEAR, a bracket narrower than 1e-6 is kept as it
        # is (both ends decided reliably) rather than refined by 30-digit evaluations
        ok = meets(mid, settle=digits is not None or hi - lo > Fraction(1, 10**6) * hi)
        if ok is None:
            break
        if ok:
            lo = mid
        else:
            hi = mid
    return {"load": _number(lo, digits, -1), "rate": _number(lo * per_load, digits, -1), "capacity": probe.capacity,
            "loss_probability": loss(lo), "load_above": _number(hi, digits, 1), "loss_probability_above": loss(hi),
            "target_loss": _number(target, digits), "loss_floor": _number(floor, digits)}


def _number(x: Fraction, digits, direction: int = 0):
    """An exact number for the output: a float (float64 runs; ``direction`` -1 / 1 rounds down / up, so that a
    load that meets the target is printed as one that meets it, and one above it as one above it) or an mpmath
    number of ``digits`` + 10 digits."""
    if digits is None:
        f = float(x)
        if direction and (Fraction(f) - x) * direction < 0:
            f = math.nextafter(f, direction * math.inf)
        return f
    import mpmath

    with mpmath.workdps(digits + 10):
        return mpmath.mpf(x.numerator) / x.denominator


def _refuse_wait(model) -> None:
    """Raise the response laws' refusal of the wait's tails for ``model`` as ``--target-wait-quantile`` (the option
    that asked them; the evaluations below would name ``--wait-tail``)."""
    from ..consumers import load as consumer

    refusal = consumer(model, "response").supports(model, frozenset({"wait_tail"}))
    if refusal is not None:
        raise refusal.error(model, "--target-wait-quantile")


def _delay_capacities(model, found: int, top: int, request, digits) -> dict:
    """The capacities r >= ``found`` (the smallest meeting the loss target) whose admitted customers'
    Q-quantile of the wait is <= T: [found, largest]. The quantile grows with r (a larger room admits
    customers who find more work ahead); gallop and bisect, and check the answer's successor fails."""
    from ...symbolic.numbers import decimal_text

    Q, T = request.wait_level, request.wait_bound
    key = decimal_text(Q)

    def quantile(r):
        return model.with_capacity(r).evaluate(digits, wait_quantile=[key]).response["wait_quantile"][key]

    t_key = decimal_text(T)

    @functools.lru_cache(maxsize=None)  # each capacity's tail once (the gallop and the bisection share ends)
    def meets(r):  # Q-quantile <= T  <=>  P(W > T) <= 1 - Q (the tail is continuous and decreasing): one tail
        tail = model.with_capacity(r).evaluate(digits, wait_tail=[t_key]).response["wait_tail"][t_key]
        return tail <= float(1 - Q) if digits is None else tail <= _exact_mpf(1 - Q)

    _refuse_wait(model.with_capacity(found))  # a rule on the room (whole admission, N > 1): larger r only relax it
    if not meets(found):
        raise ParameterError(f"no capacity meets both targets: r = {found} is the smallest with loss <= "
                             f"--target-loss, and there the {decimal_text(Q)}-quantile of the wait is "
                             f"{float(quantile(found)):.6g} > {decimal_text(T)} (it grows with r)")
    if model.rho_bar < 1:  # the quantile rises to the infinite room's: if that meets the target, every r does
        from ...symbolic.models.vacation import VacationQueue

        infinite = VacationQueue(model.rate, model.batch, model.service, model.vacation, model.vacation_policy,
                                 setup=model.setup, close_down=model.close_down,
                                 start_threshold=model.start_threshold)
        limit = infinite.evaluate(digits, wait_quantile=[key]).response["wait_quantile"][key]
        if (limit <= T) if digits is None else (limit <= _exact_mpf(T)):
            return {"max_capacity_for_delay": None, "wait_quantile_at_capacity": quantile(found),
                    "wait_quantile_infinite_room": limit}
    lo, hi = found, found
    while hi < top and meets(hi):
        lo, hi = hi, min(top, 2 * hi)
    largest = hi if meets(hi) else first_true(lo, hi, lambda r: not meets(r)) - 1
    out = {"max_capacity_for_delay": largest, "wait_quantile_at_capacity": quantile(found),
           "wait_quantile_at_max_capacity": quantile(largest)}
    if largest < top:
        out["wait_quantile_one_more"] = quantile(largest + 1)
    return out


def _exact_mpf(x):
    import mpmath

    return mpmath.mpf(x.numerator) / x.denominator
