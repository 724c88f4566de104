"""Threshold optimisation for the hysteretic model (seed 002): minimise E tau_12 over (L, H).

"Minimise the return time subject to throttling and control-cycle constraints": for given
rates, service and batch laws and discard threshold R, search the abatement and onset
thresholds (L, H) for the smallest mean return time E tau_12 (Sopin 2013, (22)) subject to
P(S_2) <= a bound (19) and E tau >= a minimum cycle time (23) (a short cycle means the
control oscillates). The arrival sequences depend only on the rates, the laws and R, so
each chunk of the grid computes them once (:func:`qderive.numeric.hysteretic.arrival_inputs`).

>>> from fractions import Fraction
>>> from qderive.symbolic.batches import Constant
>>> from qderive.symbolic.laws import Deterministic
>>> m = HystereticModel.from_load(Constant(1), Deterministic(Fraction(1, 200)), Fraction(6, 5), Fraction(1, 2), 2, 4, 8)
>>> best = optimize_thresholds(m, Fraction(1, 10), 0)
>>> (best["L"], best["H"], best["grid_points"])
(5, 6, 15)
"""

from __future__ import annotations

import dataclasses

from qderive.symbolic._exact import ParameterError, exact

from .backend import FLOAT64
from .hysteretic import (
    HystereticModel,
    NormalTimeForm,
    Semantics,
    arrival_inputs,
    evaluate,
    float64_trouble,
)

__all__ = ["threshold_pairs", "optimize_thresholds"]


def _grid_chunk(model: HystereticModel, pairs, semantics: Semantics, form: NormalTimeForm) -> list:
    """Float64 measures for each (L, H) in ``pairs`` (arrival sequences computed once per chunk).

    Returns ``(L, H, measures-dict, trouble)`` tuples; ``trouble`` is the reason a float64
    value would be recomputed by :func:`evaluate` (None when the value is certified).
    Top-level so that process pools can pickle it.
    """
    with FLOAT64:
        inputs = arrival_inputs(model, FLOAT64)
    out = []
    for L, H in pairs:
        m = dataclasses.replace(model, L=L, H=H)
        res = evaluate(m, semantics=semantics, form=form, auto_precision=False, inputs=inputs)
        values = {k: float(v) for k, v in res.as_dict().items()}
        out.append((L, H, values, float64_trouble(res, form)))
    return out


def threshold_pairs(R: int, low_range=None, high_range=None) -> list:
    """All (L, H) with 1 <= L < H <= R - 2 inside the optional inclusive ranges ``(min, max)``."""
    lo_min, lo_max = low_range or (1, R - 3)
    hi_min, hi_max = high_range or (2, R - 2)
    return [
        (L, H)
        for L in range(max(1, lo_min), min(R - 3, lo_max) + 1)
        for H in range(max(L + 1, hi_min), min(R - 2, hi_max) + 1)
    ]


def optimize_thresholds(
    model: HystereticModel,
    discard_bound,
    min_cycle,
    *,
    pairs=None,
    semantics: Semantics = Semantics.INTERVAL,
    form: NormalTimeForm = NormalTimeForm.CORRECTED,
    executor=None,
    progress: bool = False,
    chunks: int | None = None,
) -> dict:
    """(L, H) minimising the mean return time E tau_12 subject to P(S_2) <= ``discard_bound``
    and E tau >= ``min_cycle`` (seed 002), for the rates, service, batch law and R of ``model``.

    The grid (default: every 1 <= L < H <= R - 2) is evaluated in float64 chunks; ``executor``
    may be any :class:`concurrent.futures.Executor` (a process pool, a dask client's
    ``get_executor()``); ``progress`` shows a tqdm bar. Grid points whose float64 values are
    not certified (ill-conditioned or failing the renewal identity) are re-evaluated with
    the precision policy of :func:`evaluate`, and so is the optimum. Returns a dict with the
    optimum, its measures, and the grid counts; raises ParameterError if nothing is feasible.
    """
    bound = exact(discard_bound, "discard bound")
    cycle = exact(min_cycle, "minimum cycle time")
    if not (0 <= bound <= 1):
        raise ParameterError(f"discard bound = {bound}: must lie in [0, 1]")
    if cycle < 0:
        raise ParameterError(f"minimum cycle time = {cycle}: must be >= 0")
    pairs = list(pairs) if pairs is not None else threshold_pairs(model.R)
    if not pairs:
        raise ParameterError("the (L, H) grid is empty: need 1 <= L < H <= R - 2")
    n_chunks = chunks or (max(1, min(len(pairs), 64)) if executor is not None else max(1, min(len(pairs), 20)))
    parts = [pairs[i::n_chunks] for i in range(n_chunks)]
    parts = [p for p in parts if p]
    bar = None
    if progress:
        from tqdm import tqdm  # lazy: only the optimiser's progress bar needs it

        bar = tqdm(total=len(pairs), desc="(L, H) grid", unit="pt")
    rows = []
    try:
        if executor is None:
            for part in parts:
                rows += _grid_chunk(model, part, semantics, form)
                if bar is not None:
                    bar.update(len(part))
        else:
            from concurrent.futures import as_completed

            futures = {executor.submit(_grid_chunk, model, part, semantics, form): len(part) for part in parts}
            for fut in as_completed(futures):
                rows += fut.result()
                if bar is not None:
                    bar.update(futures[fut])
    finally:
        if bar is not None:
            bar.close()
    recomputed = 0
    checked = []
    for L, H, values, trouble in rows:
        if trouble is not None:
            recomputed += 1
            res = evaluate(dataclasses.replace(model, L=L, H=H), semantics=semantics, form=form)
            values = {k: float(v) for k, v in res.as_dict().items()}
        checked.append((L, H, values))
    fb, fc = float(bound), float(cycle)
    feasible = [r for r in checked if r[2]["p_discard"] <= fb and r[2]["mean_cycle_time"] >= fc]
    if not feasible:
        raise ParameterError(
            f"no (L, H) on the grid of {len(checked)} points has P(S2) <= {bound} and E tau >= {cycle}"
        )
    L, H, values = min(feasible, key=lambda r: (r[2]["mean_return_time"], r[0], r[1]))
    return {
        "L": L,
        "H": H,
        "R": model.R,
        "grid_points": len(checked),
        "feasible_points": len(feasible),
        "recomputed_points": recomputed,
        **values,
    }
