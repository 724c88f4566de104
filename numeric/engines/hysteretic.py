"""Engines of the hysteretic overload control, and the threshold optimiser (``qderive optimize hysteretic``).

* :class:`HystereticEngine` -- M[X]|G|1|(L,H)|(H,R) (Sopin 2013, chapter 3): the laws become
  arrival counts of each mode (:func:`qderive.numeric.sequences.arrival_counts`) and batch
  vectors (:func:`~qderive.numeric.sequences.batch_vectors`: pmf, tail, excess), then
  :mod:`qderive.numeric.kernels.hysteretic` builds the embedded chain (16), solves it by GTH
  and (21) by the subtraction-free M-matrix solve. Precision policy: the accuracy is an
  estimate (``confirm``): every mpmath result is confirmed at a higher precision, raised by
  ``ceil(log10 kappa_inf(I - P_0))`` digits (``"_extra_digits"``); a float64 result is
  recomputed with mpmath when kappa eps > 1e-6 or the renewal identity
  E tau = C / (q_{L,1} a_0^(1)) fails by more than 1e-10.
* :class:`MM1HystereticEngine` -- M|M|1 with bi-level hysteresis: the product-free stationary
  law of :mod:`qderive.numeric.kernels.mm1_hysteretic` (positive sums; a-priori bound).
* :func:`optimize` / :func:`optimize_thresholds` -- (L, H) minimising E tau_12 subject to
  P(S_2) <= a bound and E tau >= a minimum cycle (seed 002), for the model whose mode changes
  at departures (the embedded chain); the arrival inputs depend only on the rates, the laws
  and R, so each chunk of the grid computes them once; the chunks run on any
  :class:`concurrent.futures.Executor` (``--workers N``: a process pool), with a progress bar.
* :func:`smallest_threshold` / :func:`size_threshold` -- the smallest R from which on P(S_2) <= a
  bound (``qderive size hysteretic``).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace
from fractions import Fraction

import numpy

from ...symbolic import limits as _limits
from ...symbolic.capabilities import Rule, declare
from ...symbolic.errors import BudgetError, NumericalError, ParameterError
from ...symbolic.models.hysteretic import (
    HystereticModel,
    MM1HystereticModel,
    NormalTimeForm,
    Policy,
    Semantics,
)
from ..kernels import birth as KB
from ..kernels import hysteretic as K
from ..kernels import mm1_hysteretic as M
from ..sequences import batch_blocks, batch_vectors, count_sequences, digits_for
from .base import Engine

__all__ = ["HystereticEngine", "MM1HystereticEngine", "hysteretic_inputs", "solution", "instant_chain", "diagnostics",
           "threshold_pairs", "optimize_thresholds", "optimize", "OPTIMISED_MODEL", "smallest_threshold",
           "size_threshold"]


# --------------------------------------------------------------------------------------
# M[X]|G|1|(L,H)|(H,R)
# --------------------------------------------------------------------------------------


def hysteretic_inputs(model: HystereticModel, ctx) -> K.HystereticInputs:
    """The kernel inputs of ``model`` that do not depend on L and H (call inside ``with ctx:``).

    The laws become kernel calls as everywhere (:mod:`qderive.numeric.sequences`): the count
    sequences of each mode's exact rate, the batch vectors and the (cached) convolution columns;
    :func:`qderive.numeric.kernels.hysteretic.hysteretic_inputs` assembles them.
    """
    R = model.R
    rates = (model.rate, model.rate1)
    bv = batch_vectors(model.batch, R, ctx)
    return K.hysteretic_inputs(
        ctx, lambda s, n: count_sequences(model.service.count_law(rates[s]), n, ctx), (bv.pmf, bv.tail, bv.excess),
        lambda: _columns(model.batch, R, ctx, bv), tuple(ctx.num(r) for r in rates),
        ctx.num(rates[0] - rates[1]), ctx.num(model.service.moment(1)), ctx.num(model.batch.mean), R)


def _columns(batch, R, ctx, bv):
    """The batch law's convolution columns over 0..R (the kernels never modify them). A grid of loads (a figure)
    reuses them: :func:`~qderive.numeric.sequences.batch_blocks` keeps them in mpmath, this small cache in
    float64 (R <= 400: at most 0.3 MB each)."""
    if ctx.is_float64 and R <= 400:
        key = (batch, R)
        if key not in _FLOAT64_COLUMNS:
            if len(_FLOAT64_COLUMNS) >= 4:
                _FLOAT64_COLUMNS.pop(next(iter(_FLOAT64_COLUMNS)))
            _FLOAT64_COLUMNS[key] = list(batch_blocks(batch, R, ctx, vectors=bv))
        return _FLOAT64_COLUMNS[key]
    return batch_blocks(batch, R, ctx, vectors=bv)


_FLOAT64_COLUMNS: dict = {}


def solution(model: HystereticModel, ctx, inputs=None) -> K.HystereticSolution:
    """The solved embedded chain of ``model`` (q, C and the measures as methods); call inside ``with ctx:``."""
    inputs = hysteretic_inputs(model, ctx) if inputs is None else inputs
    return K.HystereticSolution(ctx, inputs, model.L, model.H, model.R, model.onset)


#: the optional distributions of the hysteretic record (``--distribution``)
LAW_KEYS = ("embedded_law", "time_law", "number_law")


def _values(model: HystereticModel, ctx, inputs=None, sojourns=None, laws=False, solved=None) -> dict:
    sol = solution(model, ctx, inputs) if solved is None else solved
    label = model.semantics is Semantics.LABEL
    out = sol.measures(label, model.normal_time_form is NormalTimeForm.THESIS, sojourns)
    if laws:
        out.update(sol.laws(label))
    if model.R == model.H + 1 and model.semantics is Semantics.INTERVAL:
        out["p_discard"] = 0  # no discard state: the mode is never in force (an exact 0, not an underflow)
    return out


def instant_chain(model: HystereticModel, ctx) -> KB.BirthChain:
    """The solved embedded chain of ``--policy instant`` (:class:`~qderive.numeric.kernels.birth.BirthChain`;
    call inside ``with ctx:``).

    The rate in force during a service that starts in mode s is lambda_{max(s, level(count))}
    (lambda_2 = 0): the state-dependent birth process of :mod:`qderive.numeric.engines.birth`
    over the batch law, once per starting mode; the first batch of an idle period brings
    min(X, R).
    """
    from .birth import threshold_matrices

    R = model.R
    bv = batch_vectors(model.batch, R, ctx)
    rates = (model.rate, model.rate1, Fraction(0))
    mats, reach = threshold_matrices(model.service, rates, bv.pmf, bv.tail, model.L, model.H, R, ctx)
    first = ctx.zeros(R + 1)
    first[1:R] = bv.pmf[1:R]
    first[R] = bv.tail[R - 1]
    chain = KB.BirthChain(ctx, mats, reach, first, tuple(ctx.num(r) for r in rates),
                          ctx.num(model.service.moment(1)), model.L, model.H, R)
    chain.batch = bv
    return chain.solve()


def _instant_values(model: HystereticModel, ctx) -> dict:
    """The measures of ``--policy instant`` from :func:`instant_chain` (interval = label semantics)."""
    chain = instant_chain(model, ctx)
    bv = chain.batch
    throttle = (ctx.num(0), ctx.num(model.rate - model.rate1), ctx.num(model.rate))
    return chain.measures(bv.tail, bv.excess, ctx.num(model.batch.mean), throttle)


def diagnostics(model: HystereticModel, digits: int | None = None) -> dict:
    """``kappa`` = kappa_inf(I - P_0) of (21) and ``renewal_cycle_time`` = C / (q_{L,1} a_0^(1)) (spec section 7),
    in float64 or at ``digits`` (+ 10 guard) working digits."""
    from ..backend import FLOAT64, mp_context

    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    with ctx:
        sol = solution(model, ctx)
        kappa = sol.normal_time(model.semantics is Semantics.LABEL, model.thesis_form)[1]
        return {"kappa": kappa, "renewal_cycle_time": sol.renewal_cycle_time()}


@contextlib.contextmanager
def _quiet(ctx):
    """float64: over/underflow yields inf/nan silently (the precision policy detects them and recomputes with
    mpmath); a kernel's ValueError (a count sequence that cannot be summed) becomes a NumericalError naming
    the model, not a traceback."""
    try:
        if ctx.is_float64:
            with numpy.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                yield
        else:
            yield
    except (ParameterError, BudgetError):
        raise
    except ValueError as exc:
        if ctx.is_float64:  # e.g. a transition probability that underflowed to 0 (a reducible chain): mpmath
            from .base import Trouble

            raise Trouble(f"float64 underflow in the chain ({exc})") from None
        raise NumericalError(f"the hysteretic chain cannot be evaluated here: {exc}") from None


class HystereticEngine(Engine):
    """M[X]|G|1|(L,H)|(H,R) by :mod:`qderive.numeric.kernels.hysteretic` (see the module docstring)."""

    confirm = True

    def compute(self, model, ctx, **options):
        if not ctx.is_float64:
            n = len(K.hysteretic_states(model.L, model.H, model.R, model.onset))
            _limits.check("dense_states", n, "states of the embedded chain at --digits (dense mpmath matrices)")
        with _quiet(ctx):
            laws = bool(set(LAW_KEYS) & options.get("include", frozenset()))
            if model.policy is Policy.INSTANT:
                if laws:
                    raise ParameterError("distribution", "the laws q_{j,s}, p_{j,s} are those of the departure "
                                         "policy's embedded chain (16); not available with --policy instant",
                                         "instant")
                out = _instant_values(model, ctx)
            else:
                out = _values(model, ctx, laws=laws)
        kappa = out["_kappa"]
        # ask the escalation for log10 kappa more digits (the solve is subtraction-free, the inputs are not exact)
        out["_extra_digits"] = math.ceil(float(ctx.log(kappa)) / math.log(10)) if kappa > 1 else 0
        return out

    def guard_digits(self, model) -> int:
        # O(n) roundings in the positive sums of GTH and of the M-matrix solve (n ~ 2R states)
        return digits_for(2 * model.R) + 2

    def float64_trouble(self, model, values):
        from ..backend import FLOAT64

        return K.hysteretic_float64_trouble(values, FLOAT64.eps, model.thesis_form)

    def notes(self, model, values):
        notes = []
        if model.thesis_form:
            notes.append("thesis form of (21): the idle periods in (0, 0) are omitted, so E tau differs from the "
                         "renewal value C / (q_(L,1) a_0^(1)), the mean_cycle_time of the corrected form")
        if model.R == model.H + 1 and model.policy is Policy.DEPARTURE:
            notes.append("R = H + 1: the departure that reaches R leaves H behind, so the discard mode is entered "
                         "and left at the same epoch (no discard state in the embedded chain)")
        return notes


# --------------------------------------------------------------------------------------
# M|M|1 with bi-level hysteresis
# --------------------------------------------------------------------------------------


class MM1HystereticEngine(Engine):
    """M|M|1 with bi-level hysteresis: :func:`qderive.numeric.kernels.mm1_hysteretic.mm1_hysteresis_measures`."""

    def compute(self, model: MM1HystereticModel, ctx, **options):
        lam0, lam1, mu = model.rate0, model.rate1, model.service_rate
        r1 = lam1 / mu
        inv1 = None if lam1 == 0 else mu / lam1
        with _quiet(ctx):
            out = M.mm1_hysteresis_measures(ctx, ctx.num(mu / lam0), ctx.num(r1),
                                            None if inv1 is None else ctx.num(inv1), r1 >= 1, ctx.num(mu),
                                            ctx.num(lam0), ctx.num(lam1), ctx.num(1 - lam1 / lam0),
                                            model.L, model.H, model.R)
        if lam1 == 0:
            out["p_discard"] = 0  # never reached: an exact 0
        if {"time_law", "number_law"} & options.get("include", frozenset()):
            _limits.check("capacity", model.R, "the joint law of --distribution has 3 (R + 1) entries")
            with _quiet(ctx):
                law = M.mm1_hysteresis_law(ctx, ctx.num(mu / lam0), ctx.num(r1), None if inv1 is None else
                                           ctx.num(inv1), r1 >= 1, model.L, model.H, model.R)
                joint = M.mm1_hysteresis_joint(ctx, *law, model.L, model.H, model.R)
            out.update(time_law=joint, number_law=joint[0] + joint[1] + joint[2])
        return out

    def guard_digits(self, model) -> int:
        return digits_for(model.R) + 2


# --------------------------------------------------------------------------------------
# Threshold optimisation (seed 002)
# --------------------------------------------------------------------------------------

#: what ``optimize hysteretic`` optimises (said in its output)
OPTIMISED_MODEL = ("hysteretic M[X]|G|1|(L,H)|(H,R): the mode changes at departure epochs (the M[X]|G|1 embedded "
                   "chain (16)), not the instantaneous M|M|1 hysteresis of seed 002 (for that model: qderive "
                   "optimize mm1-hysteretic)")


def threshold_pairs(R: int, low_range=None, high_range=None) -> list:
    """All (L, H) with 1 <= L < H < R in the inclusive ranges ``(min, max)`` (default L in 1..R-3, H in 2..R-2)."""
    lo_min, lo_max = low_range or (1, R - 3)
    hi_min, hi_max = high_range or (2, R - 2)
    return [(L, H) for L in range(max(1, lo_min), min(R - 2, lo_max) + 1)
            for H in range(max(L + 1, hi_min), min(R - 1, hi_max) + 1)]


def _column_laws(ctx, inputs, H, lows, R, onset):
    """(L, chain, x) for each L of ``lows`` (descending) at one H: the chain (16)
    (:class:`~qderive.numeric.kernels.hysteretic.HystereticChain`) and the stationary vector x of its censored chain
    (None where it must be solved alone).

    The chains of one H share the normal states and every overload state (j, 1) with j > L, with the same
    transitions: only (L, 1) differs (its departure that leaves L - 1 returns to normal). GTH eliminates the last
    states first, entry by entry with the same operations whatever the other states
    (:func:`~qderive.numeric.kernels.chains.gth_eliminate`), so the overload states are eliminated once, in the
    chain of the smallest L, and the chain of each L resumes from a copy of that block at (L, 1), its own row
    (L, 1) put back: x bit for bit as the chain's own GTH gives it (``qderive optimize hysteretic`` at
    R = 100, 4753 points: 12.1 s -> 10.6 s of CPU).
    """
    from ..kernels.chains import gth_back_substitute, gth_eliminate

    lows = sorted(lows, reverse=True)
    low = lows[-1]
    big, _ = K.hysteretic_censored(K.HystereticChain(ctx, inputs, low, H, R, onset))
    big = big.copy()
    normal = onset - 1  # the normal states come first, then (L, 1), (L + 1, 1), ...
    done = big.shape[0]  # the states from here on are eliminated
    for L in lows:
        chain = K.HystereticChain(ctx, inputs, L, H, R, onset)
        x = None
        if big is not None:
            first = normal + L - low  # (L, 1) in the chain of the smallest L
            try:
                gth_eliminate(ctx, big, done - 1, first + 1)
                done = first + 1
                keep = numpy.r_[0:normal, first:big.shape[0]]
                A = big[numpy.ix_(keep, keep)]
                own, _ = K.hysteretic_censored(chain)
                A[normal, :normal] = own[normal, :normal]  # the row of (L, 1): its transition to (L - 1, 0)
                gth_eliminate(ctx, A, normal)
                x = gth_back_substitute(ctx, A)
            except (ArithmeticError, ValueError):  # a reducible chain: each L solved (and reported) on its own
                big, x = None, None
        yield L, chain, x


def _grid_chunk(model: HystereticModel, pairs) -> list:
    """(L, H, float64 measures, trouble or None) for each pair; the arrival inputs are computed once, the chains
    of one H share their elimination (:func:`_column_laws`). Top-level so that process pools can pickle it."""
    from ..backend import FLOAT64
    from ..precision import float64_trouble

    engine = HystereticEngine()
    label, thesis = model.semantics is Semantics.LABEL, model.thesis_form
    columns = {}
    for L, H in pairs:
        columns.setdefault(H, set()).add(L)
    with FLOAT64:
        inputs = hysteretic_inputs(model, FLOAT64)
        out, sojourns = [], {}
        for H in sorted(columns):
            onset = replace(model, L=min(columns[H]), H=H).onset
            laws = {L: (chain, x) for L, chain, x in _column_laws(FLOAT64, inputs, H, columns[H], model.R, onset)}
            for L in sorted(columns[H]):
                m = replace(model, L=L, H=H)
                try:
                    chain, x = laws[L]
                    sol = K.HystereticSolution(FLOAT64, inputs, L, H, m.R, m.onset, chain, x)
                    if H not in sojourns:  # (21) depends on H, not on L: solved once per H
                        sojourns = {H: sol.normal_sojourns(label, thesis)}
                    values = _values(m, FLOAT64, inputs, sojourns[H], solved=sol)
                    trouble = engine.float64_trouble(m, values) or float64_trouble(type(m).measures, values)
                except (ArithmeticError, ValueError) as exc:
                    values, trouble = None, str(exc)
                out.append((L, H, None if values is None else {k: float(values[k]) for k in K.HYSTERETIC_KEYS},
                            trouble))
    return out


def optimize_thresholds(model: HystereticModel, discard_bound, min_cycle=0, *, pairs=None, executor=None,
                        progress: bool = False, chunks: int | None = None) -> dict:
    """(L, H) minimising E tau_12 (22) subject to P(S_2) <= ``discard_bound`` and E tau >= ``min_cycle``.

    For the rates, laws, R and variant (convention, semantics, form) of ``model``. The grid
    (default :func:`threshold_pairs`) is evaluated in float64 chunks, on ``executor`` (any
    :class:`concurrent.futures.Executor`) when given; points whose float64 values are not
    trusted (the engine's test and the generic one) are recomputed under the precision policy.
    Returns the optimum, its measures and the grid counts; a ParameterError if nothing is feasible.
    """
    from .progress import Progress

    bound, cycle = Fraction(discard_bound), Fraction(min_cycle)
    pairs = list(pairs) if pairs is not None else threshold_pairs(model.R)
    if not pairs:
        raise ParameterError("the (L, H) grid is empty: need 1 <= L < H < R inside --l-range and --h-range")
    # chunks of whole H columns (each chunk computes the arrival inputs once, and (21) once per H)
    columns = {}
    for pair in pairs:
        columns.setdefault(pair[1], []).append(pair)
    n = chunks or max(1, min(len(columns), 64 if executor is not None else 8))
    groups = sorted(columns.values(), key=len, reverse=True)
    parts = [[pair for g in groups[i::n] for pair in g] for i in range(n)]
    parts = [p for p in parts if p]
    rows = []
    with Progress(len(pairs), "points", quiet=not progress) as bar:
        if executor is None:
            for part in parts:
                rows += _grid_chunk(model, part)
                bar.update(len(rows))
        else:
            from concurrent.futures import as_completed

            from ..parallel import with_limits

            limits_now = _limits.current()  # a worker process does not inherit --limit
            futures = [executor.submit(with_limits, limits_now, _grid_chunk, model, part) for part in parts]
            for fut in as_completed(futures):
                rows += fut.result()
                bar.update(len(rows))
    flagged = [(L, H) for L, H, _, trouble in rows if trouble is not None]
    again = _recompute(model, flagged, executor, progress)
    recomputed, checked = len(flagged), [(L, H, again[(L, H)] if trouble is not None else values)
                                         for L, H, values, trouble in rows]
    feasible = [r for r in checked if r[2]["p_discard"] <= bound and r[2]["mean_cycle_time"] >= cycle]
    if not feasible:
        raise ParameterError(f"no (L, H) on the grid of {len(checked)} points has P(S_2) <= {float(bound):g} and "
                             f"E tau >= {float(cycle):g}")
    L, H, values = min(feasible, key=lambda r: (r[2]["mean_return_time"], r[0], r[1]))
    return {"optimised_model": OPTIMISED_MODEL, "L": L, "H": H, "R": model.R, "grid_points": len(checked),
            "feasible_points": len(feasible), "recomputed_points": recomputed, **values}


def _recompute(model, pairs, executor, progress) -> dict:
    """(L, H) -> float measures of the grid points whose float64 values were not trusted, each by
    ``Model.evaluate`` (the precision policy: mpmath where float64 is in trouble), on ``executor`` in
    chunks when given (:func:`qderive.numeric.sweep.evaluate_chunk`, as ``qderive sweep`` runs its points),
    with a progress bar: at light loads most points are ill-conditioned in float64 (0.3-0.5 s each)."""
    from ...symbolic.params import params_of
    from ..sweep import evaluate_chunk
    from .progress import Progress

    if not pairs:
        return {}
    fixed = {f.name: getattr(model, f.name) for f, _ in params_of(type(model))}
    points = [(k, {"L": L, "H": H}) for k, (L, H) in enumerate(pairs)]
    size = 1 if executor is not None else 4
    chunks = [points[i:i + size] for i in range(0, len(points), size)]
    args = (type(model), fixed), (None, (), {}, _limits.current())
    out = {}
    with Progress(len(pairs), "recomputed points", quiet=not progress) as bar:
        def take(results):
            for index, measures, *_, error in results:
                if error is not None:
                    raise error
                out[pairs[index]] = {k: float(v) for k, v in measures.items()}
            bar.update(len(out))

        if executor is None:
            for chunk in chunks:
                take(evaluate_chunk(*args[0], chunk, *args[1]))
        else:
            from concurrent.futures import as_completed

            for fut in as_completed([executor.submit(evaluate_chunk, *args[0], chunk, *args[1]) for chunk in chunks]):
                take(fut.result())
    return out


@declare(Rule("policy", lambda policy: policy is not Policy.DEPARTURE,
              "optimize hysteretic searches the model whose mode changes at departures (--policy departure)"),
         via_engine=True)
def optimize(values: dict, request, digits=None, progress: bool = True, executor=None) -> dict:
    """``qderive optimize hysteretic`` (the model's :class:`~qderive.symbolic.models.base.Action`).

    The grid runs on ``executor`` (any :class:`concurrent.futures.Executor`; the command line's
    ``--executor local|dask --workers N --scheduler ADDRESS``, :mod:`qderive.numeric.parallel`) when
    given; with ``--digits`` the optimum's measures are recomputed to that many digits.
    """
    if values.get("R") is not None and values["R"] < 3:
        raise ParameterError("R", "must be >= 3 for a search over 1 <= L < H < R", values["R"])
    model = HystereticModel.from_values({"L": 1, "H": 2, **values})  # L and H: chosen below (placeholders)
    if model.policy is not Policy.DEPARTURE:
        raise ParameterError("policy", "optimize hysteretic searches the model whose mode changes at departures "
                             "(--policy departure)", model.policy.value)
    pairs = threshold_pairs(model.R, request.l_range, request.h_range)
    best = optimize_thresholds(model, request.discard_bound, request.min_cycle, pairs=pairs, progress=progress,
                               executor=executor)
    if digits is not None:
        best.update(replace(model, L=best["L"], H=best["H"]).evaluate(digits).as_dict())
    return best


# --------------------------------------------------------------------------------------
# Sizing the discard threshold (``qderive size hysteretic``)
# --------------------------------------------------------------------------------------

def smallest_threshold(model: HystereticModel, discard_bound, max_threshold: int = 3000, digits=None) -> dict:
    """min { R >= H + 2 : P(S_2)(R') <= ``discard_bound`` for every R' >= R } (19), L and H of ``model`` fixed.

    R = H + 1 has no discard state (the departure that reaches R leaves H behind: P(S_2) = 0
    trivially, the excess is lost at the capacity instead), so the search starts at H + 2. As R
    grows P(S_2) rises from there to a maximum and then falls (the discard mode is entered less
    often); with rho_1 = lambda_1 l_1 b_1 >= 1 it need not fall. Assuming this shape (unimodal in R:
    observed, not proved), the peak is found by galloping and bisecting on the sign of
    P(S_2)(R + 1) - P(S_2)(R), and the answer is H + 2 if the peak meets the bound, else the first R
    past the peak with P(S_2) <= the bound (gallop and bisect again): O(log R) evaluations of the
    embedded chain (16) under the precision policy; a value within 1e-9 of the bound is decided at
    30 digits (or ``digits``). The result shows P(S_2) at the answer and at R - 1 and the peak.
    """
    from ...symbolic.numbers import decimal_text
    from .searching import compare, first_from, near

    bound = Fraction(discard_bound)
    first, top = model.H + 2, max_threshold
    if top < first:
        raise ParameterError("max-threshold", f"must be >= H + 2 = {first}", top)
    values: dict = {}

    def p(R, d=digits):
        if (R, d) not in values:
            values[(R, d)] = replace(model, R=R).evaluate(d).p_discard
        return values[(R, d)]

    def meets(R):
        v = p(R)
        if near(v, bound):
            v = p(R, max(30, digits or 0))
        return compare(v, bound) <= 0

    def falling(R):  # P(S_2)(R + 1) <= P(S_2)(R): past the peak (R = top counts as past it)
        return R >= top or p(R + 1) <= p(R)

    peak = first_from(first, top, falling)
    found = first if meets(peak) else first_from(peak, top, meets)
    if found is None:
        rho1 = model.rate1 * model.batch.mean * model.service.moment(1)
        why = (f"; with rho_1 = lambda_1 l_1 b_1 = {decimal_text(rho1)} >= 1 the overload mode does not drain the "
               "queue, so a larger R does not make the discard mode rare" if rho1 >= 1 else "")
        raise ParameterError(f"discard-bound = {decimal_text(bound)} is not met with R up to {top} "
                             f"(--max-threshold): P(S_2) = {float(p(top)):.6g} at R = {top}{why}")
    out = {"R": found, "L": model.L, "H": model.H, "p_discard": p(found)}
    if found > first:
        out["p_discard_one_fewer"] = p(found - 1)
    out.update({"peak_R": peak, "p_discard_at_peak": p(peak),
                "loss_probability": replace(model, R=found).evaluate(digits).loss_probability,
                "note": f"R = H + 1 = {model.H + 1} has no discard state (P(S_2) = 0: the excess is lost at the "
                        f"capacity instead); from R = {found} on, P(S_2) <= {decimal_text(bound)}"})
    return out


@declare(via_engine=True)
def size_threshold(values: dict, request, digits=None) -> dict:
    """``qderive size hysteretic`` (the model's Action): :func:`smallest_threshold` for the L and H of
    ``--thresholds L,H``."""
    H = values.get("H")
    model = HystereticModel.from_values({**values, "R": (H or 1) + 2})
    return smallest_threshold(model, request.discard_bound, request.max_threshold, digits)
