"""Engine of M2|M|1|R with bi-level hysteretic input-rate control and relative priority (seed 002).

The model (:class:`~qderive.symbolic.models.two_flow.TwoFlowHystereticModel`): two Poisson
flows with rates ``lambda_c^(s)`` by mode s (normal, overload, discard), one exponential
server (rate mu_c for a flow-c customer), capacity R, relative (non-preemptive) priority
to flow 1, switching on the count as in ``docs/theory/other-models.md`` B. Within a flow the
order does not matter (identical rates), so the state ``(s, i, j, k)`` -- mode, flow-1
and flow-2 customers in the system, flow in service (0 when empty) -- is a CTMC:

* arrival of flow c (rate lambda_c^(s), n = i + j < R): s' = 1 if s = 0 and n + 1 = H,
  s' = 2 if s = 1 and n + 1 = R, else s; an arrival to the empty system enters service;
* departure (rate mu_k): s' = 0 if s = 1 and n - 1 = L - 1, s' = 1 if s = 2 and n - 1 = H,
  else s; the next customer is a waiting flow-1 customer if any, else flow 2.

Stationary law by the one GTH (:func:`~qderive.numeric.kernels.chains.gth_stationary`),
states in level order; measures as sums of positive terms:

* ``loss_c = sum_x pi(x) [(lambda_c^(0) - lambda_c^(s)) + lambda_c^(s) 1{n = R}] / lambda_c^(0)``
  (the exact differences are rationals of the input: no cancellation) (H.6);
* throughput ``theta_c = mu_c P(k = c)`` (= admitted rate, (H.7)); Little for the sojourns;
* ``E tau_0`` (from the entry (L-1, 0) to overload) and ``E tau_12`` (from the entry into
  overload back to S0): first passages ``(-Q_AA) h = 1`` by the one subtraction-free
  :func:`~qderive.numeric.kernels.chains.mmatrix_solve`, averaged over the stationary entry
  law; ``E tau = E tau_0 + E tau_12`` (= 1 / nu, the renewal identity (H.8)).

>>> from fractions import Fraction as F
>>> from qderive.symbolic.models.two_flow import TwoFlowHystereticModel
>>> sol = solve(TwoFlowHystereticModel(F(1, 2), F(1, 4), F(1, 4), F(1, 8), 2, 4, 6, service_rates=1))
>>> abs(sol.mean_cycle_time() * sol.switch_rate() - 1) < 1e-12
True
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.errors import BudgetError, NumericalError, ParameterError
from ...symbolic.models.two_flow import InputMode, TwoFlowHystereticModel
from ..backend import FLOAT64, FractionContext
from ..kernels.chains import gth_stationary, mmatrix_solve
from ..sequences import digits_for
from .base import Engine, Trouble
from .two_flow import LAW_KEYS, joint_law

__all__ = ["HystereticSpace", "hysteretic_space", "HystereticSolution", "solve", "exact_stationary",
           "birth_chains", "birth_measures", "TwoFlowHystereticEngine"]


@dataclass(frozen=True)
class HystereticSpace:
    """Reachable states (s, i, j, k) in level order and the transitions (src, dst, exact rate)."""

    states: tuple
    src: np.ndarray
    dst: np.ndarray
    rates: tuple  # exact, one per transition

    @property
    def size(self) -> int:
        return len(self.states)

    @cached_property
    def mode(self) -> np.ndarray:
        return np.array([s[0] for s in self.states])

    @cached_property
    def count(self) -> np.ndarray:
        """n = i + j of each state."""
        return np.array([s[1] + s[2] for s in self.states])

    @cached_property
    def in_service(self) -> np.ndarray:
        return np.array([s[3] for s in self.states])

    def number(self, flow: int) -> np.ndarray:
        """Flow-``flow`` customers in each state (i or j)."""
        return np.array([s[flow] for s in self.states])


def _successors(model: TwoFlowHystereticModel, state):
    """Transitions out of (s, i, j, k) (module docstring): arrivals of each flow, the departure."""
    L, H, R = model.L, model.H, model.R
    s, i, j, k = state
    n = i + j
    if n < R:
        for c in (1, 2):
            lam = model.rate(InputMode(s), c)
            if lam == 0:
                continue
            s2 = 1 if (s == 0 and n + 1 == H) else 2 if (s == 1 and n + 1 == R) else s
            yield (s2, i + (c == 1), j + (c == 2), k if n else c), lam
    if k:
        i2, j2 = i - (k == 1), j - (k == 2)
        n2 = n - 1
        s2 = 0 if (s == 1 and n2 == L - 1) else 1 if (s == 2 and n2 == H) else s
        k2 = 0 if n2 == 0 else (1 if i2 > 0 else 2)  # relative priority to flow 1
        yield (s2, i2, j2, k2), model.service_rates[k - 1]


@lru_cache(maxsize=8)
def hysteretic_space(model: TwoFlowHystereticModel) -> HystereticSpace:
    """Breadth-first enumeration from the empty normal state (0, 0, 0, 0), then level order (n, s, i, k)."""
    start = (0, 0, 0, 0)
    seen = {start}
    todo = deque([start])
    trans = []
    while todo:
        st = todo.popleft()
        for nxt, rate in _successors(model, st):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
            trans.append((st, nxt, rate))
    states = tuple(sorted(seen, key=lambda x: (x[1] + x[2], x[0], x[1], x[3])))
    index = {s: a for a, s in enumerate(states)}
    src = np.array([index[a] for a, _, _ in trans], dtype=np.int64)
    dst = np.array([index[b] for _, b, _ in trans], dtype=np.int64)
    return HystereticSpace(states, src, dst, tuple(r for _, _, r in trans))


def _total(ctx, values):
    """A sum of nonnegative terms (pairwise in float64, ctx.fsum otherwise)."""
    if ctx.is_float64:
        return float(np.sum(np.asarray(values, dtype=np.float64)))
    return ctx.fsum(list(values))


@dataclass(frozen=True)
class HystereticSolution:
    """Stationary law and measures of a :class:`TwoFlowHystereticModel` in context ``ctx``."""

    model: TwoFlowHystereticModel
    space: HystereticSpace
    pi: np.ndarray
    ctx: object
    rates: list  # context numbers, one per transition

    def _sum(self, mask):
        return _total(self.ctx, self.pi[np.asarray(mask)])

    def mode_probability(self, mode: int):
        """P(S_mode); the integer 0 when the mode is unreachable (structural, not an underflow)."""
        mask = self.space.mode == mode
        return self._sum(mask) if mask.any() else 0

    def throughput(self, flow: int):
        """theta_c = mu_c P(flow c in service) (H.7)."""
        return self.ctx.num(self.model.service_rates[flow - 1]) * self._sum(self.space.in_service == flow)

    def admitted_rate(self, flow: int):
        """sum_x pi(x) lambda_c^(s(x)) 1{n(x) < R}: the rate at which flow c enters the system."""
        ctx, sp_ = self.ctx, self.space
        lam = [ctx.num(self.model.rate(m, flow)) for m in InputMode]
        open_ = np.flatnonzero(sp_.count < self.model.R)
        return _total(ctx, [self.pi[x] * lam[sp_.mode[x]] for x in open_.tolist()])

    def loss(self, flow: int):
        """``sum_x pi(x) [(lambda_c^(0) - lambda_c^(s)) + lambda_c^(s) 1{n = R}] / lambda_c^(0)`` (H.6).

        The weights are exact rationals of the input, every term >= 0; at n = R the weight is 1.
        """
        m, ctx, sp_ = self.model, self.ctx, self.space
        lam0 = m.rate(InputMode.NORMAL, flow)
        throttled = [ctx.num((lam0 - m.rate(s, flow)) / lam0) for s in InputMode]
        weight = [ctx.num(1) if n == m.R else throttled[s] for s, n in zip(sp_.mode.tolist(), sp_.count.tolist())]
        return _total(ctx, [p * w for p, w in zip(self.pi, weight) if w != 0])

    def mean_number(self, flow: int):
        """Mean number of flow-c customers in the system."""
        counts = self.space.number(flow)
        w = counts.astype(np.float64) if self.ctx.is_float64 else np.array(counts.tolist(), dtype=object)
        return self.ctx.dot(self.pi, w)

    def mean_sojourn(self, flow: int):
        """Little: N_c / (admitted rate of flow c)."""
        return self.mean_number(flow) / self.admitted_rate(flow)

    # -- cycle times ------------------------------------------------------------------
    def _flows_into(self, sources: set, targets: set) -> dict:
        """Stationary flow pi(x) q(x, y) into each y with mode in ``targets`` from x with mode in ``sources``."""
        sp_, out = self.space, {}
        for a, b, r in zip(sp_.src.tolist(), sp_.dst.tolist(), self.rates):
            if sp_.mode[a] in sources and sp_.mode[b] in targets:
                out.setdefault(b, []).append(self.pi[a] * r)
        return {b: _total(self.ctx, v) for b, v in out.items()}

    def switch_rate(self):
        """nu: switches S0 -> S1 per unit time (= S1 -> S0 switches = cycles per unit time)."""
        return _total(self.ctx, list(self._flows_into({0}, {1, 2}).values()))

    def _mean_passage(self, start: set, goal: set):
        """Mean first-passage time into the modes ``goal`` from the stationary entry law into ``start``."""
        ctx, sp_ = self.ctx, self.space
        entry = self._flows_into(goal, start)
        inside = np.flatnonzero(np.isin(sp_.mode, list(start)))
        pos = np.full(sp_.size, -1)
        pos[inside] = np.arange(len(inside))
        m = len(inside)
        W, leave = ctx.zeros((m, m)), ctx.zeros(m)
        for a, b, r in zip(sp_.src.tolist(), sp_.dst.tolist(), self.rates):
            if pos[a] < 0:
                continue
            if pos[b] >= 0:
                W[pos[a], pos[b]] = W[pos[a], pos[b]] + r
            else:
                leave[pos[a]] = leave[pos[a]] + r
        h = mmatrix_solve(ctx, W, leave, [ctx.array([1] * m)])[0]
        terms = [f * h[pos[y]] for y, f in entry.items()]
        return _total(ctx, terms) / _total(ctx, list(entry.values()))

    def mean_return_time(self):
        """E tau_12: from entering overload at (H, 1) until the return to S0 (first passage)."""
        return self._mean_passage({1, 2}, {0})

    def mean_normal_time(self):
        """E tau_0: from entering S0 at (L-1, 0) until the switch to overload (first passage)."""
        return self._mean_passage({0}, {1, 2})

    def mean_cycle_time(self):
        """E tau = E tau_0 + E tau_12 (the renewal identity: = 1 / nu)."""
        return self.mean_normal_time() + self.mean_return_time()

    def laws(self) -> dict:
        """``joint_law`` [s][i][j] (mode, flow-1 and flow-2 counts, summed over the flow in service) and
        ``number_law`` of the stationary pi (:func:`qderive.numeric.engines.two_flow.joint_law`)."""
        sp_ = self.space
        return joint_law(self.ctx, self.pi, sp_.mode, sp_.number(1), sp_.number(2), self.model.R)

    def measures(self) -> dict:
        """Every measure of :class:`~qderive.symbolic.models.two_flow.TwoFlowHystereticMeasures`."""
        normal, ret = self.mean_normal_time(), self.mean_return_time()
        return {
            "p_mode0": self.mode_probability(0),
            "p_mode1": self.mode_probability(1),
            "p_mode2": self.mode_probability(2),
            "loss_flow1": self.loss(1),
            "loss_flow2": self.loss(2),
            "throughput_flow1": self.throughput(1),
            "throughput_flow2": self.throughput(2),
            "mean_number_flow1": self.mean_number(1),
            "mean_number_flow2": self.mean_number(2),
            "mean_sojourn_flow1": self.mean_sojourn(1),
            "mean_sojourn_flow2": self.mean_sojourn(2),
            "mean_normal_time": normal,
            "mean_return_time": ret,
            "mean_cycle_time": normal + ret,
            "states": self.space.size,
        }


def _context_rates(model, space, ctx) -> list:
    if not ctx.is_float64:
        return [ctx.num(r) for r in space.rates]
    out = []
    for r in space.rates:
        try:
            f = float(r)
        except OverflowError:
            f = float("inf")
        if not (FLOAT64.tiny <= f <= FLOAT64.huge):
            raise Trouble(f"a rate ({float(r):.3g}) lies outside the float64 range")
        out.append(f)
    return out


def solve(model: TwoFlowHystereticModel, ctx=FLOAT64) -> HystereticSolution:
    """Stationary law of the (s, i, j, k) chain by the one GTH, in ``ctx`` (dense: limit ``dense_states``)."""
    _limits.check("dense_states", model.state_bound(), "the chain on (mode, i, j, flow in service) is solved "
                  "densely by GTH: O(n^2) memory, up to O(n^3) time")
    space = hysteretic_space(model)
    rates = _context_rates(model, space, ctx)
    n = space.size
    A = ctx.zeros((n, n))
    for a, b, r in zip(space.src.tolist(), space.dst.tolist(), rates):
        A[a, b] = A[a, b] + r
    pi = gth_stationary(ctx, A)
    return HystereticSolution(model, space, pi, ctx, rates)


def exact_stationary(model: TwoFlowHystereticModel) -> list:
    """The stationary law as exact rationals (the one GTH in FractionContext), in the order of the space."""
    return list(solve(model, FractionContext()).pi)


# --------------------------------------------------------------------------------------
# a general service law (--service LAW): M2|G|1|R, e.g. M2|D|1|R
# --------------------------------------------------------------------------------------


def birth_chains(model: TwoFlowHystereticModel, ctx):
    """(count chain, joint chain), solved, of ``--service LAW`` (call inside ``with ctx:``).

    One service law for both flows, so the total count with the mode is the queue of
    :class:`~qderive.numeric.kernels.birth.BirthChain` (single arrivals at the total rate
    lambda^(m) = lambda_1^(m) + lambda_2^(m) of the mode in force; the mode follows the count
    at once); :class:`~qderive.numeric.kernels.birth.BirthTwoFlowChain` adds the composition
    (flow 1 w.p. lambda_1^(m) / lambda^(m) per arrival, relative priority to flow 1).
    """
    from fractions import Fraction

    from ..kernels.birth import BirthChain, BirthTwoFlowChain
    from .birth import threshold_matrices

    R = model.R
    tot = [Fraction(a) + Fraction(b) for a, b in model.rates]
    pmf, tail = ctx.zeros(R + 1), ctx.zeros(R + 1)
    pmf[1] = ctx.num(1)
    tail[0] = ctx.num(1)
    mats, reach = threshold_matrices(model.service, tot, pmf, tail, model.L, model.H, R, ctx)
    first = ctx.zeros(R + 1)
    first[1] = ctx.num(1)
    count = BirthChain(ctx, mats, reach, first, tuple(ctx.num(x) for x in tot), ctx.num(model.service.moment(1)),
                       model.L, model.H, R).solve()
    p = [ctx.num(Fraction(a) / t) if t else ctx.num(0) for (a, _), t in zip(model.rates, tot)]
    q = [ctx.num(Fraction(b) / t) if t else ctx.num(0) for (_, b), t in zip(model.rates, tot)]
    joint = BirthTwoFlowChain(ctx, count, p, q).solve()
    return count, joint


def birth_measures(model: TwoFlowHystereticModel, ctx) -> dict:
    """Every measure of the model with ``--service LAW`` (call inside ``with ctx:``).

    p_mode_m, E tau_0 (21), E tau_12 (22), E tau (23) from the count chain (as for ``hysteretic
    --policy instant``); loss_c = sum_{n,m} p_m(n) [(lambda_c^(0) - lambda_c^(m)) + lambda_c^(m) 1{n = R}]
    / lambda_c^(0) (PASTA on the time-stationary law, weights exact); throughput, mean numbers from the
    joint chain (:meth:`~qderive.numeric.kernels.birth.BirthTwoFlowChain.flow_measures`); Little for the
    sojourns. ``_renewal_cycle_time`` = C / (entries into S0 per departure), the check of E tau.
    """
    count, joint = birth_chains(model, ctx)
    p = count.time_law()
    pm = count.mode_probabilities(p)
    t0, kappa = count.normal_time()
    R = model.R
    loss = []
    for flow in (1, 2):
        lam0 = model.rate(InputMode.NORMAL, flow)
        w = [ctx.num((lam0 - model.rate(m, flow)) / lam0) for m in InputMode]
        terms = [p[m][n] * (ctx.num(1) if n == R else w[m]) for m in range(3) for n in range(R + 1)]
        loss.append(_total(ctx, [x for x in terms if x != 0]))
    thr1, thr2, n1, n2 = joint.flow_measures()
    t12 = t0 * (pm[1] + pm[2]) / pm[0]
    return {
        "p_mode0": pm[0], "p_mode1": pm[1], "p_mode2": pm[2],
        "loss_flow1": loss[0], "loss_flow2": loss[1],
        "throughput_flow1": thr1, "throughput_flow2": thr2,
        "mean_number_flow1": n1, "mean_number_flow2": n2,
        "mean_sojourn_flow1": n1 / thr1, "mean_sojourn_flow2": n2 / thr2,
        "mean_normal_time": t0, "mean_return_time": t12, "mean_cycle_time": t0 + t12,
        "states": len(joint.states),
        "_renewal_cycle_time": count.C / count.entries_per_departure(), "_kappa": kappa,
    }


def birth_state_bound(model: TwoFlowHystereticModel) -> int:
    """An upper bound on the joint embedded states (i, j, s): n + 1 compositions of each count n left behind."""
    def block(lo, hi):  # sum over n = lo..hi - 1 of (n + 1), in closed form
        return (lo + 1 + hi) * (hi - lo) // 2 if hi > lo else 0

    H, R, L = model.H, model.R, model.L
    return block(0, H - 1) + block(L, R - 1) + block(H + 1, R)


class TwoFlowHystereticEngine(Engine):
    """Under the precision policy: GTH and the M-matrix solve are subtraction-free (a-priori guard only);
    with ``--service LAW`` the uniformization is truncated where its remainder bound is below eps relative
    to every entry (:func:`~qderive.numeric.kernels.birth.birth_mixture`), also an a-priori bound."""

    confirm = False

    def compute(self, model, ctx, **options):
        laws = bool(set(LAW_KEYS) & options.get("include", frozenset()))
        if model.service is not None:
            if laws:
                raise ParameterError("distribution", "the joint law is that of the CTMC: it needs exponential "
                                     "service (--service-rate), not --service LAW", str(model.service))
            return self._compute_birth(model, ctx)

        def values():
            sol = solve(model, ctx)
            return {**sol.measures(), **(sol.laws() if laws else {})}

        try:
            if ctx.is_float64:
                with np.errstate(all="ignore"):
                    return values()
            return values()
        except (BudgetError, ParameterError):
            raise
        except ValueError as exc:  # GTH or the M-matrix solve met a state without exit: an underflowed rate
            if ctx.is_float64:
                raise Trouble(f"float64 underflow in the chain ({exc})") from None
            raise NumericalError(f"two-flow-hysteretic: {exc}") from None

    def _compute_birth(self, model, ctx):
        _limits.check("dense_states", birth_state_bound(model), "the joint chain at departures (i, j, mode) is "
                      "solved densely by GTH")
        try:
            if ctx.is_float64:
                with np.errstate(all="ignore"):
                    return birth_measures(model, ctx)
            return birth_measures(model, ctx)
        except (BudgetError, ParameterError):
            raise
        except ValueError as exc:
            if ctx.is_float64:
                raise Trouble(f"float64 underflow in the chain ({exc})") from None
            raise NumericalError(f"two-flow-hysteretic: {exc}") from None

    def float64_trouble(self, model, values):
        if model.service is None:
            return None
        import math

        kappa = float(values["_kappa"])
        if not math.isfinite(kappa) or kappa * FLOAT64.eps > 1e-6:
            return f"I - P0 is ill-conditioned (kappa_inf = {kappa:.2g})"
        t, ref = float(values["mean_cycle_time"]), float(values["_renewal_cycle_time"])
        if not (math.isfinite(t) and math.isfinite(ref)) or abs(t - ref) > 1e-10 * ref:
            return "the renewal identity E tau = C / (entries per departure) fails in float64"
        return None

    def guard_digits(self, model) -> int:
        if model.service is not None:
            return digits_for(birth_state_bound(model) ** 2) + 1
        return digits_for(model.state_bound() ** 3) + 1
