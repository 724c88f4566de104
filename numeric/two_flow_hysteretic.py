"""M2|M|1|R with bi-level hysteretic input-rate control and relative priority (seed 002).

The seed (``../shared/seeds/002_*.txt``, abstracts "On analytical model for optimal SIP
server hop-by-hop overload control", "On Mean Return Time in Queueing System with
Constant Service Time and Bi-level Hysteric Policy") names a single-server queue with
two Poisson input flows, a finite buffer, relative priority to flow 1 and bi-level
hysteretic *input load* control (RFC 6357 hop-by-hop): the server is in one of three
modes (normal, overload, blocking) depending on the number of customers, and each
mode change adjusts the input rates. ``spec/other-models.md`` section B gives the
one-flow M|M|1 version; this module is B with two flows (section C, last paragraph).

Our reading, made precise (the choices are ours where the abstracts are silent):

* Count n = customers in the system, the one in service included; capacity R
  (an arrival finding n = R is lost). Thresholds 1 <= L < H < R.
* Modes s = 0 (normal), 1 (overload), 2 (discard / blocking). In mode s flow c is
  Poisson with rate ``lambda_c^(s)``: one rate pair per mode, as in B's
  lambda_0 > lambda_1 > lambda_2 (default discard pair (0, 0)). The offered traffic is
  the normal-mode pair; ``lambda_c^(2) <= lambda_c^(1) <= lambda_c^(0)`` is required
  (control only reduces the input).
* Switching, instantaneous on the count (B exactly): (H-1, 0) -> (H, 1) on an
  arrival; (L, 1) -> (L-1, 0) on a departure; (R-1, 1) -> (R, 2) on an arrival;
  (H+1, 2) -> (H, 1) on a departure. Mode sets S0 = {n <= H-1}, S1 = {L <= n <= R-1},
  S2 = {H+1 <= n <= R}. If the discard pair is positive, arrivals in mode 2 with n < R
  are admitted (mode stays 2).
* Service: exponential, rate ``mu_c`` for a flow-c customer (the seed's M2|M|1|R has
  one rate mu for both; unequal rates are allowed). Relative (non-preemptive)
  priority to flow 1: when a service ends, the next customer is a waiting flow-1
  customer if there is one, else a flow-2 customer; a service is never interrupted.
* State: (s, i, j, k) with i, j the numbers of flow-1 and flow-2 customers in the
  system and k the flow in service (0 when empty). Within a flow the order does not
  matter (identical rates), so this is a CTMC.

Measures: P(modes); the loss of flow c, the fraction of its offered (normal-mode)
traffic that is not served: throttled (rate lambda_c^(0) - lambda_c^(s) in mode s),
discarded (mode 2) or blocked (n = R),

    loss_c = sum_x pi(x) [ (lambda_c^(0) - lambda_c^(s(x))) + lambda_c^(s(x)) 1{n(x) = R} ] / lambda_c^(0),

a sum of positive terms; throughput per flow; mean number and sojourn per flow
(Little); the mean time E tau_0 in normal mode from its entry (L-1, 0); the mean return
time E tau_12 from the entry (H, 1) back to S0 (first passage, entry law = stationary
flow into the entry states); the cycle E tau = E tau_0 + E tau_12, checked against the
renewal identity E tau = 1 / nu (nu = rate of S0 -> S1 switches).

With mu_1 = mu_2 the pair (mode, n) is itself Markov: it is B's chain with
lambda_s = lambda_1^(s) + lambda_2^(s) (the lumping check of the derivation).

>>> from fractions import Fraction as F
>>> m = TwoFlowHystereticModel(((F(1, 2), F(1, 4)), (F(1, 4), F(1, 8)), (0, 0)), (1, 1), 2, 4, 6)
>>> sol = solve_hysteretic(m)
>>> abs(sol.mean_cycle_time() * sol.switch_rate() - 1) < 1e-12
True
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import sympy as sp

from qderive.symbolic._exact import ParameterError, exact, require_positive

from .backend import FLOAT64, Backend
from .chains import stationary_gth
from .level_chains import absorption_times_gth

__all__ = ["TwoFlowHystereticModel", "HystereticSpace", "hysteretic_space", "HystereticSolution", "solve_hysteretic"]

_MODE_NAMES = ("normal", "overload", "discard")
#: mpmath solutions are dense O(N^3): refuse beyond this many states
MAX_MP_STATES = 900
#: float64 dense GTH beyond this many states is slow: refuse (R about 40)
MAX_STATES = 6000


def _rate_pairs(value) -> tuple:
    try:
        pairs = [tuple(p) for p in value]
    except TypeError:
        raise ParameterError(
            f"rates = {value!r}: give three (flow 1, flow 2) pairs: normal, overload, discard") from None
    if len(pairs) == 2:
        pairs.append((0, 0))
    if len(pairs) != 3 or any(len(p) != 2 for p in pairs):
        raise ParameterError(f"rates = {value!r}: give three (flow 1, flow 2) pairs: normal, overload, discard")
    out = []
    for s, pair in enumerate(pairs):
        row = []
        for c, v in enumerate(pair, start=1):
            name = f"{_MODE_NAMES[s]} rate of flow {c}"
            e = exact(v, name)
            if not bool(e >= 0):
                raise ParameterError(f"{name} = {e}: must be >= 0")
            row.append(e)
        out.append(tuple(row))
    for c in (0, 1):
        if not bool(out[0][c] > 0):
            raise ParameterError(f"normal rate of flow {c + 1} = {out[0][c]}: must be > 0 (it is the offered traffic)")
        if not (bool(out[2][c] <= out[1][c]) and bool(out[1][c] <= out[0][c])):
            raise ParameterError(
                f"rates of flow {c + 1} must satisfy discard <= overload <= normal (control reduces the input), "
                f"got {out[0][c]}, {out[1][c]}, {out[2][c]}")
    return tuple(out)


@dataclass(frozen=True)
class TwoFlowHystereticModel:
    """Seed 002's M2|M|1|R with bi-level hysteretic input-rate control, validated on construction.

    ``rates = ((l1_0, l2_0), (l1_1, l2_1), (l1_2, l2_2))`` by mode (normal, overload,
    discard; the discard pair may be omitted: (0, 0)); ``service_rates = (mu_1, mu_2)``
    (or one number for both); thresholds ``1 <= low < high < capacity`` (L, H, R).
    """

    rates: tuple
    service_rates: tuple
    low: int
    high: int
    capacity: int

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - frozen dataclass normalisation
        set_("rates", _rate_pairs(self.rates))
        mus = self.service_rates
        if not isinstance(mus, (tuple, list)):
            mus = (mus, mus)
        if len(mus) != 2:
            raise ParameterError(f"service rates = {self.service_rates!r}: give mu or (mu_1, mu_2)")
        set_("service_rates", tuple(require_positive(exact(v, f"service rate of flow {c}"), f"service rate of flow {c}")
                                    for c, v in enumerate(mus, start=1)))
        vals = []
        for name, v in (("L", self.low), ("H", self.high), ("R", self.capacity)):
            e = exact(v, name)
            if not e.is_Integer:
                raise ParameterError(f"{name} = {v}: thresholds must be integers")
            vals.append(int(e))
        L, H, R = vals
        set_("low", L)
        set_("high", H)
        set_("capacity", R)
        if not (1 <= L < H < R):
            raise ParameterError(f"thresholds must satisfy 1 <= L < H < R, got L={L}, H={H}, R={R}")

    def rate(self, mode: int, flow: int) -> sp.Expr:
        """lambda_flow^(mode)."""
        return self.rates[mode][flow - 1]

    def _repr_latex_(self) -> str:
        """Kendall notation and parameters, rendered by Jupyter."""
        pairs = ", ".join(f"({sp.latex(a)}, {sp.latex(b)})" for a, b in self.rates)
        return (f"$M_2|M|1|R$ with hysteretic input control: $\\lambda^{{(0,1,2)}} = {pairs}$, "
                f"$\\mu = ({sp.latex(self.service_rates[0])}, {sp.latex(self.service_rates[1])})$, "
                f"$L, H, R = {self.low}, {self.high}, {self.capacity}$")

    def __str__(self) -> str:
        return (f"M2|M|1|R hysteretic input control: rates by mode {self.rates}, mu = {self.service_rates}, "
                f"L, H, R = {self.low}, {self.high}, {self.capacity}")

    def parameters(self) -> dict:
        """Exact parameters, for reports (rate pairs as "a,b" strings)."""
        out = {}
        for s, name in enumerate(_MODE_NAMES):
            out[f"lambda_{name}"] = f"{self.rates[s][0]},{self.rates[s][1]}"
        out["mu"] = f"{self.service_rates[0]},{self.service_rates[1]}"
        out.update({"L": self.low, "H": self.high, "R": self.capacity})
        return out


# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HystereticSpace:
    """Reachable states (s, i, j, k) and transitions ``(src, dst, rate)`` with exact rates."""

    states: tuple
    index: dict
    transitions: tuple  # (src, dst, exact rate, kind) with kind "arrival1", ... for the tests' bookkeeping

    @property
    def size(self) -> int:
        """Number of reachable states."""
        return len(self.states)

    @cached_property
    def mode(self) -> np.ndarray:
        """Mode s of each state."""
        return np.array([s[0] for s in self.states])

    @cached_property
    def count(self) -> np.ndarray:
        """n = i + j of each state."""
        return np.array([s[1] + s[2] for s in self.states])


def _successors(model: TwoFlowHystereticModel, state):
    """Transitions out of (s, i, j, k): arrivals of each flow (rate lambda_c^(s)), the departure (rate mu_k)."""
    L, H, R = model.low, model.high, model.capacity
    s, i, j, k = state
    n = i + j
    if n < R:
        for c in (1, 2):
            lam = model.rate(s, c)
            if lam == 0:
                continue
            s2 = 1 if (s == 0 and n + 1 == H) else 2 if (s == 1 and n + 1 == R) else s
            yield (s2, i + (c == 1), j + (c == 2), k if n else c), lam, f"arrival{c}"
    if k:
        i2, j2 = i - (k == 1), j - (k == 2)
        n2 = n - 1
        s2 = 0 if (s == 1 and n2 == L - 1) else 1 if (s == 2 and n2 == H) else s
        k2 = 0 if n2 == 0 else (1 if i2 > 0 else 2)  # relative priority to flow 1
        yield (s2, i2, j2, k2), model.service_rates[k - 1], f"service{k}"


def hysteretic_space(model: TwoFlowHystereticModel) -> HystereticSpace:
    """Breadth-first enumeration of the states reachable from the empty normal state (0, 0, 0, 0)."""
    start = (0, 0, 0, 0)
    index = {start: 0}
    states = [start]
    trans = []
    todo = deque([start])
    while todo:
        st = todo.popleft()
        for nxt, rate, kind in _successors(model, st):
            if nxt not in index:
                index[nxt] = len(states)
                states.append(nxt)
                todo.append(nxt)
            trans.append((index[st], index[nxt], rate, kind))
        if len(states) > MAX_STATES:
            raise ParameterError(f"R = {model.capacity}: more than {MAX_STATES} states; choose a smaller capacity")
    return HystereticSpace(tuple(states), index, tuple(trans))


@dataclass(frozen=True)
class HystereticSolution:
    """Stationary law and measures of a :class:`TwoFlowHystereticModel` (positive-term sums throughout)."""

    model: TwoFlowHystereticModel
    space: HystereticSpace
    pi: np.ndarray
    bk: Backend

    def _sum(self, mask):
        with self.bk:
            return self.bk.fsum(self.pi[np.asarray(mask)])

    def mode_probability(self, mode: int):
        """P(S_mode) = sum of pi over the states of that mode."""
        return self._sum(self.space.mode == mode)

    def throughput(self, flow: int):
        """Departure rate of flow c: mu_c P(flow c in service)."""
        busy = [st[3] == flow for st in self.space.states]
        with self.bk:
            return self.bk.num(self.model.service_rates[flow - 1]) * self._sum(busy)

    def admitted_rate(self, flow: int):
        """sum_x pi(x) lambda_c^(s(x)) 1{n(x) < R}: the rate at which flow c enters the system."""
        with self.bk:
            lam = [self.bk.num(self.model.rate(s, flow)) for s in range(3)]
            terms = [self.pi[x] * lam[st[0]] for x, st in enumerate(self.space.states)
                     if st[1] + st[2] < self.model.capacity]
            return self.bk.fsum(terms)

    def loss(self, flow: int):
        """Fraction of flow c's offered traffic lambda_c^(0) not served (throttled, discarded or blocked).

        ``sum_x pi(x) [(lambda_c^(0) - lambda_c^(s)) + lambda_c^(s) 1{n = R}] / lambda_c^(0)``;
        the differences are exact rationals, every term is >= 0.
        """
        m = self.model
        with self.bk:
            lam0 = m.rate(0, flow)
            weights = {}
            for s in range(3):
                lam = m.rate(s, flow)
                weights[(s, False)] = self.bk.num((lam0 - lam) / lam0)
                weights[(s, True)] = self.bk.num(1)  # throttled part + blocked part = lambda_c^(0)
            terms = [self.pi[x] * weights[(st[0], st[1] + st[2] == m.capacity)]
                     for x, st in enumerate(self.space.states)]
            return self.bk.fsum(terms)

    def mean_number(self, flow: int):
        """Mean number of flow-c customers in the system."""
        with self.bk:
            return self.bk.fsum([self.pi[x] * st[flow] for x, st in enumerate(self.space.states) if st[flow]])

    def mean_sojourn(self, flow: int):
        """Little: N_c / (admitted rate of flow c)."""
        with self.bk:
            return self.mean_number(flow) / self.admitted_rate(flow)

    # -- cycle times ---------------------------------------------------------------------
    def _flows_into(self, source_modes, target_modes) -> dict:
        """Stationary flow pi(x) q(x, y) into each y in target_modes from x in source_modes."""
        st = self.space.states
        out = {}
        with self.bk:
            for a, b, rate, _ in self.space.transitions:
                if st[a][0] in source_modes and st[b][0] in target_modes:
                    out[b] = out.get(b, 0) + self.pi[a] * self.bk.num(rate)
        return out

    def switch_rate(self):
        """nu: rate of switches S0 -> S1 (= rate of S1 -> S0 switches) = cycles per unit time."""
        with self.bk:
            return self.bk.fsum(list(self._flows_into({0}, {1, 2}).values()))

    def _mean_passage(self, start_modes, goal_modes):
        """Mean first-passage time into ``goal_modes`` from the stationary entry law into ``start_modes``."""
        entry = self._flows_into(goal_modes, start_modes)
        st = self.space.states
        rest = [x for x in range(self.space.size) if st[x][0] in start_modes]
        pos = {x: a for a, x in enumerate(rest)}
        m = len(rest)
        with self.bk:
            W = np.zeros((m, m)) if self.bk.is_float64 else np.full((m, m), self.bk.num(0), dtype=object)
            e = self.bk.zeros(m)
            for a, b, rate, _ in self.space.transitions:
                if a in pos:
                    r = self.bk.num(rate)
                    if b in pos:
                        W[pos[a], pos[b]] += r
                    else:
                        e[pos[a]] += r
            h = absorption_times_gth(W, e, [1] * m, self.bk)
            total = self.bk.fsum(list(entry.values()))
            return self.bk.fsum([f * h[pos[y]] for y, f in entry.items()]) / total

    def mean_return_time(self):
        """E tau_12: mean time from entering overload (H, 1) until the return to S0 (first passage)."""
        return self._mean_passage({1, 2}, {0})

    def mean_normal_time(self):
        """E tau_0: mean time from entering S0 at (L-1, 0) until the switch to overload (first passage)."""
        return self._mean_passage({0}, {1, 2})

    def mean_cycle_time(self):
        """E tau = E tau_0 + E tau_12 (renewal check: = 1 / nu)."""
        with self.bk:
            return self.mean_normal_time() + self.mean_return_time()


def solve_hysteretic(model: TwoFlowHystereticModel, bk: Backend = FLOAT64) -> HystereticSolution:
    """Stationary law of the (s, i, j, k) chain by GTH (``numeric/chains.py``), float64 or mpmath."""
    space = hysteretic_space(model)
    n = space.size
    if not bk.is_float64 and n > MAX_MP_STATES:
        raise ParameterError(f"R = {model.capacity}: {n} states; the mpmath solution is limited to "
                             f"{MAX_MP_STATES} states (R <= 15 or so): use float64")
    with bk:
        Q = np.zeros((n, n)) if bk.is_float64 else np.full((n, n), bk.num(0), dtype=object)
        for a, b, rate, _ in space.transitions:
            Q[a, b] += bk.num(rate)
        pi = stationary_gth(Q, bk)
    return HystereticSolution(model, space, pi, bk)
