"""Buffer sizing for the finite vacation queue: the smallest waiting room with loss <= a target.

``qderive size vacation-finite`` (issue 3). The loss probability of M[X]/G/1/r with
multiple vacations falls as r grows (checked on grids by the tests; for rho_bar >= 1 it
falls towards 1 - 1/rho_bar, the load-balance limit of Theorem 1.1 as P^r_e -> 0,
``spec/chapter2.md`` section 2), so a target at or below that limit is refused at once.

* Partial admission (the thesis): the incremental engine
  (:class:`qderive.numeric.vacation.FiniteSweep`) gives the loss at every r in O(r) once
  q~ and p~ reach r, so the capacities are scanned one by one: the answer is the first r
  that meets the target, with no assumption, and the whole scan costs O(R^2) like one
  evaluation at the answer R.
* Whole admission: each r needs an O(r^2) level-crossing solve, so the search gallops
  (r = 1, 2, 4, ...) to a capacity that meets the target and bisects below it, assuming
  the loss is monotone in r (it is on every grid the tests try); the answer's predecessor
  is evaluated and shown not to meet the target.
"""

from __future__ import annotations

from dataclasses import dataclass

from qderive.symbolic._exact import ParameterError, exact

from .backend import Backend
from .vacation import Admission, FiniteMeasures, FiniteSweep, VacationQueue

__all__ = ["SizingResult", "smallest_capacity"]


@dataclass(frozen=True)
class SizingResult:
    """The smallest capacity meeting the target, its measures, and the loss with one place fewer
    (``None`` when the answer is the smallest admissible capacity)."""

    capacity: int
    measures: FiniteMeasures
    loss_one_fewer: object


def _lowest_capacity(model: VacationQueue) -> int:
    r = 0 if model.vacation is None else 1
    while True:
        try:
            model.with_capacity(r)
            return r
        except ParameterError:
            r += 1


def smallest_capacity(model: VacationQueue, target, bk: Backend, max_capacity: int = 100_000) -> SizingResult:
    """min { r : loss(r) <= target } for ``model`` (its own capacity is ignored).

    ``target`` is exact (a rational in (0, 1)); loss(r) is Theorem 1.1 (12) evaluated by
    the stable pipeline. Raises :class:`ParameterError` when the target is below the
    overload limit 1 - 1/rho_bar or is not met up to ``max_capacity``.
    """
    target = exact(target, "target-loss")
    if not (0 < target < 1):
        raise ParameterError(f"target-loss = {target}: must lie strictly between 0 and 1")
    rho = model.rho_bar
    if rho >= 1 and target <= 1 - 1 / rho:
        raise ParameterError(
            f"target-loss = {target} is unreachable: with rho_bar = {rho} >= 1 the loss stays above "
            f"1 - 1/rho_bar = {1 - 1 / rho} for every capacity"
        )
    sweep = FiniteSweep(model, bk)
    with bk:
        goal = bk.num(target)
    start = _lowest_capacity(model)

    def meets(r):
        return sweep.loss_at(r) <= goal

    def fail(r):
        raise ParameterError(
            f"target-loss = {target} is not met with capacity up to {r} (max-capacity); "
            f"raise --max-capacity or the target" + (" (rho_bar = 1: the loss falls only like 1/r)" if rho == 1 else "")
        )

    if model.admission is Admission.PARTIAL:
        r = start
        while not meets(r):
            r += 1
            if r > max_capacity:
                fail(max_capacity)
        found = r
    else:
        lo, hi = start - 1, start  # loss(lo) > target (or lo below the range), test hi
        while not meets(hi):
            lo = hi
            hi = min(2 * hi if hi else 1, max_capacity)
            if lo == max_capacity:
                fail(max_capacity)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if meets(mid):
                hi = mid
            else:
                lo = mid
        found = hi
    measures = sweep.at(found)
    previous = sweep.loss_at(found - 1) if found > start else None
    if previous is not None and previous <= goal:  # pragma: no cover - would mean a non-monotone loss
        raise ParameterError(f"the loss is not monotone in r near r = {found}; size by a full scan")
    return SizingResult(found, measures, previous)
