"""Threshold optimisation of the instantaneous hysteresis models of seed 002 (``qderive optimize``).

The problem (seed 002, abstracts 1 and 3): choose thresholds 1 <= L < H < R minimising the
mean return time E tau_12 from the overload states subject to the throttling constraint
P(S_2) <= eps and the control-cycle constraint E tau >= T:

    min { E tau_12(L, H, R) : P(S_2)(L, H, R) <= eps,  E tau(L, H, R) >= T },

R fixed (the R of ``--thresholds``) or searched in ``--r-range MIN,MAX``. Ties are real
(below), so every tied optimum is listed and the one with the smallest R, then L, then H
is returned.

* :func:`optimize_mm1` -- M|M|1 with bi-level hysteresis (``docs/theory/other-models.md`` B).
  With pi(L, 1) = 1 (:mod:`qderive.numeric.kernels.mm1_hysteretic`) the overload and
  discard segments of the law depend only on the offsets a = H - L and b = R - H, so
  M_1, M_2 and E tau_12 = (M_1 + M_2) / mu are functions of (a, b) alone, while
  M_0 = sum_j pi(j, 0) = sum_{k=1}^{a+1} sum_{m=1}^{k} rho_0^{-m} + pi(L-1, 0) sum_{m=1}^{L-1} rho_0^{-m}
  is strictly increasing in L for fixed a. Hence, for fixed (a, b), E tau = M / mu
  increases and P(S_2) = M_2 / M decreases with L: the feasible L form an interval
  L*(a, b) <= L <= L_max(a, b). The search evaluates each (a, b) once at L_max (the
  most feasible point), takes the smallest E tau_12 over the feasible pairs and bisects
  L* for the minimising pairs: O(R^2) evaluations for a fixed R, O(R_max^2 log R_max)
  for a range (instead of O(R_max^3)). The minimum, the ties and every feasibility
  decision within 1e-9 (relative) of a bound are recomputed exactly (rational arithmetic:
  the kernel in :class:`~qderive.numeric.backend.FractionContext`).
* :func:`optimize_two_flow` -- M2|M|1|R with hysteretic input control and priority to flow
  1: no monotonicity is proved (the flow composition at the switching epochs depends on
  L), so the whole grid is evaluated with the float64 engine (the GTH chain), and the
  near-optimal points and the near-bound decisions are recomputed at
  :data:`CONFIRM_DIGITS` digits under the precision policy.

Both accept an ``executor`` (any :class:`concurrent.futures.Executor`: the float64
evaluations are mapped over it in chunks) and ``progress`` (a bar after 2 s).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import partial

import numpy as np

from ...symbolic.capabilities import declare
from ...symbolic.errors import ParameterError
from ...symbolic.numbers import decimal_text
from .base import Trouble
from .searching import NEAR, compare, first_from, near

__all__ = ["ControlKeys", "MM1_KEYS", "TWO_FLOW_KEYS", "CONFIRM_DIGITS", "threshold_triples",
           "optimize_mm1", "optimize_two_flow", "optimize_controls", "mm1_optimize", "two_flow_optimize"]

#: digits of the confirmation of the two-flow model's optimum (mpmath, under the precision policy)
CONFIRM_DIGITS = 30
#: two confirmed return times are a tie when they agree to this relative distance (the 30-digit values carry
#: 30 correct digits; the ties of the model are exact)
TIE = Fraction(1, 10**(CONFIRM_DIGITS - 5))


@dataclass(frozen=True)
class ControlKeys:
    """The measure keys of the problem in a model's record and what the output calls the model."""

    discard: str
    ret: str
    cycle: str
    described: str


MM1_KEYS = ControlKeys("p_discard", "mean_return_time", "mean_cycle_time",
                       "mm1-hysteretic: M|M|1 with bi-level hysteresis, the mode changes at once when the count "
                       "crosses a threshold (docs/theory/other-models.md B, seed 002)")
TWO_FLOW_KEYS = ControlKeys("p_mode2", "mean_return_time", "mean_cycle_time",
                            "two-flow-hysteretic: M2|M|1|R with bi-level hysteretic input control and relative "
                            "priority to flow 1, the mode changes at once on the count (seed 002)")


def threshold_triples(r_values) -> list:
    """Every (L, H, R) with 1 <= L < H < R for R in ``r_values``, ordered by R, L, H."""
    return [(L, H, R) for R in r_values for L in range(1, R - 1) for H in range(L + 1, R)]


# --------------------------------------------------------------------------------------
# float64 evaluation of many thresholds (chunks; picklable for process pools)
# --------------------------------------------------------------------------------------


def _at(model, t):
    L, H, R = t
    return replace(model, L=L, H=H, R=R)


def _float64_chunk(model, triples) -> list:
    """Each triple's measures in float64 (floats), by the model's engine with the engine's and the generic
    float64 tests; a point whose float64 values are not trusted is evaluated under the precision policy.
    Top-level so that process pools can pickle it."""
    from ..backend import FLOAT64
    from ..precision import engine_of, float64_trouble

    engine = engine_of(model)
    out = []
    for t in triples:
        m = _at(model, t)
        try:
            with FLOAT64, np.errstate(all="ignore"):
                values = engine.compute(m, FLOAT64)
            trouble = engine.float64_trouble(m, values) or float64_trouble(type(m).measures, values)
        except (Trouble, ArithmeticError, ValueError) as exc:
            trouble = str(exc)
        if trouble is not None:
            values = m.evaluate().as_dict()
        out.append({k: float(v) for k, v in values.items() if not isinstance(v, (list, tuple, str))})
    return out


def _float64_map(model, triples, executor, bar, done=0) -> list:
    """:func:`_float64_chunk` over ``triples`` (in order), on ``executor`` when given."""
    n = len(triples)
    if n == 0:
        return []
    parts = max(1, min(n, 64 if executor is not None else 16))
    size = -(-n // parts)
    chunks = [triples[i:i + size] for i in range(0, n, size)]
    fn = partial(_float64_chunk, model)
    results = map(fn, chunks) if executor is None else executor.map(fn, chunks)
    out = []
    for rows in results:
        out += rows
        bar.update(done + len(out))
    return out


# --------------------------------------------------------------------------------------
# decisions: float64 unless near a bound, then exact / high precision
# --------------------------------------------------------------------------------------


def _tied(v, low) -> bool:
    """Two precise return times are equal: exactly for Fractions, within :data:`TIE` (relative) for mpmath."""
    if isinstance(v, Fraction) and isinstance(low, Fraction):
        return v == low
    import mpmath

    with mpmath.workdps(80):
        v, low = mpmath.mpf(v), mpmath.mpf(low)
        return abs(v - low) <= mpmath.mpf(TIE.numerator) / TIE.denominator * max(abs(v), abs(low))


class _Search:
    """The problem for one model: bounds, the precise evaluator, and the precise values computed so far."""

    def __init__(self, model, keys: ControlKeys, discard_bound, min_cycle, precise, confirmed: str):
        self.model, self.keys = model, keys
        self.eps, self.T = Fraction(discard_bound), Fraction(min_cycle)
        self._precise, self.confirmed = precise, confirmed
        self.cache: dict = {}
        self.float_rows: dict = {}

    def precise(self, t) -> dict:
        if t not in self.cache:
            self.cache[t] = self._precise(_at(self.model, t))
        return self.cache[t]

    def feasible(self, t, row: dict) -> bool:
        """P(S_2) <= eps and E tau >= T at ``t`` (``row``: its float64 measures); near a bound, decided on the
        precise values."""
        k, eps, T = self.keys, float(self.eps), float(self.T)
        p, c = row[k.discard], row[k.cycle]
        if near(p, eps) or near(c, T):
            v = self.precise(t)
            return compare(v[k.discard], self.eps) <= 0 and compare(v[k.cycle], self.T) >= 0
        return p <= eps and c >= T

    def margins(self, t) -> dict:
        """eps - P(S_2) and E tau - T at ``t`` from the precise values (>= 0 at a feasible point)."""
        v = self.precise(t)
        return {"discard_margin": _minus(self.eps, v[self.keys.discard]),
                "cycle_margin": _minus(v[self.keys.cycle], self.T)}

    def minimisers(self, rows: dict) -> list:
        """The keys of ``rows`` (key -> (triple, float64 row)) whose return time is the smallest: the float64
        candidates within NEAR of the smallest value, decided on their precise values (ties: exactly equal
        for exact values, within :data:`TIE` for mpmath ones)."""
        ret = self.keys.ret
        best = min(r[ret] for _, r in rows.values())
        close = [key for key, (_, r) in rows.items() if r[ret] <= best + NEAR * abs(best)]
        values = {key: self.precise(rows[key][0])[ret] for key in close}
        low = min(values.values())
        return sorted(key for key, v in values.items() if _tied(v, low))

    def measures(self, t, digits):
        return _at(self.model, t).evaluate(digits).as_dict()


def _minus(a, b) -> float:
    """a - b as a float, for Fractions (exactly, then rounded) or mpmath numbers (at 80 digits)."""
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return float(a - b)
    import mpmath

    def mp(x):
        return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else mpmath.mpf(x)

    with mpmath.workdps(80):
        return float(mp(a) - mp(b))


def _r_values(model, r_range) -> range:
    lo, hi = (model.R, model.R) if r_range is None else r_range
    if hi < 3:
        raise ParameterError("r-range" if r_range is not None else "R", "needs R >= 3 for a search over "
                             "1 <= L < H < R", hi)
    return range(max(3, lo), hi + 1)


def _result(search: _Search, ties: list, digits, evaluations: int, candidates: int, method: str) -> dict:
    best = min(ties, key=lambda t: (t[2], t[0], t[1]))
    out = {"feasible": True, "optimised_model": search.keys.described, "L": best[0], "H": best[1], "R": best[2],
           "measures": search.measures(best, digits),
           "ties": [{"L": L, "H": H, "R": R} for L, H, R in sorted(ties, key=lambda t: (t[2], t[0], t[1]))],
           **search.margins(best), "confirmed": search.confirmed, "search": method,
           "evaluations": evaluations, "candidates": candidates}
    return out


def _infeasible(search: _Search, rows: list, candidates: int, method: str) -> dict:
    """No thresholds meet both constraints: say which comes closest to each."""
    k = search.keys
    low = min(rows, key=lambda r: (r[1][k.discard], -r[1][k.cycle]))
    high = min(rows, key=lambda r: (-r[1][k.cycle], r[1][k.discard]))
    reason = (f"no thresholds 1 <= L < H < R on the searched grid have P(S_2) <= {decimal_text(search.eps)} and "
              f"E tau >= {decimal_text(search.T)}")
    return {"feasible": False, "optimised_model": k.described, "reason": reason, "search": method,
            "candidates": candidates, "evaluations": len(rows),
            "smallest_discard": {"L": low[0][0], "H": low[0][1], "R": low[0][2], k.discard: low[1][k.discard],
                                 k.cycle: low[1][k.cycle]},
            "largest_cycle": {"L": high[0][0], "H": high[0][1], "R": high[0][2], k.discard: high[1][k.discard],
                              k.cycle: high[1][k.cycle]}}


# --------------------------------------------------------------------------------------
# M|M|1 with bi-level hysteresis: monotone in L for fixed offsets (module docstring)
# --------------------------------------------------------------------------------------


def _mm1_exact(model) -> dict:
    """The M|M|1 hysteresis measures exactly (the engine's kernel in rational arithmetic)."""
    from ..backend import FractionContext
    from ..precision import engine_of

    return engine_of(model).compute(model, FractionContext())


def optimize_mm1(model, discard_bound, min_cycle=0, *, r_range=None, digits=None, executor=None,
                 progress: bool = False) -> dict:
    """min E tau_12 s.t. P(S_2) <= ``discard_bound``, E tau >= ``min_cycle`` for an
    :class:`~qderive.symbolic.models.hysteretic.MM1HystereticModel` (its rates; R = ``model.R`` or
    searched in ``r_range``); the monotone search of the module docstring.

    Returns ``{"feasible": True, "L", "H", "R", "measures" (at ``digits``, default float64), "ties"
    (every (L, H, R) with the same smallest E tau_12, smallest R, L, H first), "discard_margin",
    "cycle_margin", ...}`` or ``{"feasible": False, "reason", ...}``.
    """
    from ...symbolic import limits as _limits
    from .progress import Progress

    rs = _r_values(model, r_range)
    _limits.check("threshold", rs[-1], "the M|M|1 threshold search evaluates O(R^2) thresholds")
    r_lo, r_hi = rs[0], rs[-1]
    search = _Search(model, MM1_KEYS, discard_bound, min_cycle, _mm1_exact, "exact")
    # offsets a = H - L >= 1, b = R - H >= 1; L in [max(1, R_lo - a - b), R_hi - a - b]
    pairs = [(a, b) for a in range(1, r_hi - 1) for b in range(1, r_hi - a)]
    top = {(a, b): (r_hi - a - b, r_hi - b, r_hi) for a, b in pairs}
    candidates = sum(r_hi - a - b - max(1, r_lo - a - b) + 1 for a, b in pairs)
    method = "monotone in L for fixed H - L and R - H (proved; exact decisions near the bounds)"
    with Progress(len(pairs), "points", quiet=not progress) as bar:
        rows = _float64_map(model, [top[p] for p in pairs], executor, bar)
    evaluations = len(rows)
    feasible = {p: (top[p], row) for p, row in zip(pairs, rows) if search.feasible(top[p], row)}
    if not feasible:
        return _infeasible(search, list(zip([top[p] for p in pairs], rows)), candidates, method)
    ties = []
    for a, b in search.minimisers(feasible):
        lo, hi = max(1, r_lo - a - b), r_hi - a - b

        def ok(L, a=a, b=b):
            nonlocal evaluations
            t = (L, L + a, L + a + b)
            evaluations += 1
            return search.feasible(t, _float64_chunk(model, [t])[0])

        first = first_from(lo, hi, ok)
        ties += [(L, L + a, L + a + b) for L in range(first, hi + 1)]
    return _result(search, ties, digits, evaluations, candidates, method)


# --------------------------------------------------------------------------------------
# Any model: the whole grid
# --------------------------------------------------------------------------------------


def optimize_controls(model, keys: ControlKeys, discard_bound, min_cycle=0, *, r_range=None, digits=None,
                      executor=None, progress: bool = False) -> dict:
    """The whole grid :func:`threshold_triples` in float64 (on ``executor``), then the near-minimal points and
    the near-bound decisions at :data:`CONFIRM_DIGITS` digits; the result as :func:`optimize_mm1`'s."""
    from .progress import Progress

    triples = threshold_triples(_r_values(model, r_range))
    search = _Search(model, keys, discard_bound, min_cycle,
                     lambda m: m.evaluate(CONFIRM_DIGITS).as_dict(), f"{CONFIRM_DIGITS} digits")
    with Progress(len(triples), "points", quiet=not progress) as bar:
        rows = _float64_map(model, triples, executor, bar)
    feasible = {t: (t, row) for t, row in zip(triples, rows) if search.feasible(t, row)}
    method = "whole grid (float64; the optimum, the ties and near-bound points at 30 digits)"
    if not feasible:
        return _infeasible(search, list(zip(triples, rows)), len(triples), method)
    ties = search.minimisers(feasible)
    return _result(search, ties, digits, len(triples), len(triples), method)


def optimize_two_flow(model, discard_bound, min_cycle=0, **kwargs) -> dict:
    """min E tau_12 s.t. P(S_2) = p_mode2 <= ``discard_bound``, E tau >= ``min_cycle`` for a
    :class:`~qderive.symbolic.models.two_flow.TwoFlowHystereticModel` (the whole grid)."""
    return optimize_controls(model, TWO_FLOW_KEYS, discard_bound, min_cycle, **kwargs)


# --------------------------------------------------------------------------------------
# the model actions (``qderive optimize NAME``)
# --------------------------------------------------------------------------------------


def _run(cls, solver, values: dict, request, digits, progress, executor) -> dict:
    """L and H are chosen by the search (not asked for); R is the given one, or searched with --r-range (then
    the model is built with placeholders only)."""
    R = values.get("R")
    if request.r_range is None:
        if R is None:
            raise ParameterError("give the discard threshold with --thresholds R, or search it with --r-range "
                                 "MIN,MAX (L and H are chosen by the search)")
        if R < 3:
            raise ParameterError("R", "must be >= 3 for a search over 1 <= L < H < R", R)
    model = cls.from_values({**values, "L": 1, "H": 2, "R": max(R or request.r_range[1], 3)})
    return solver(model, request.discard_bound, request.min_cycle, r_range=request.r_range, digits=digits,
                  executor=executor, progress=progress)


@declare(via_engine=True)
def mm1_optimize(values: dict, request, digits=None, progress: bool = True, executor=None) -> dict:
    """``qderive optimize mm1-hysteretic`` (the model's Action): :func:`optimize_mm1`; the L and H of
    ``--thresholds`` are replaced by the search, R too with ``--r-range``."""
    from ...symbolic.models.hysteretic import MM1HystereticModel

    return _run(MM1HystereticModel, optimize_mm1, values, request, digits, progress, executor)


@declare(via_engine=True)
def two_flow_optimize(values: dict, request, digits=None, progress: bool = True, executor=None) -> dict:
    """``qderive optimize two-flow-hysteretic`` (the model's Action): :func:`optimize_two_flow`."""
    from ...symbolic.models.two_flow import TwoFlowHystereticModel

    return _run(TwoFlowHystereticModel, optimize_two_flow, values, request, digits, progress, executor)

