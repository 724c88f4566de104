"""Waiting and sojourn times of an admitted customer in the Markovian controlled models, as phase-type laws.

:func:`mm1_hysteretic_laws` (``mm1-hysteretic``), :func:`two_flow_laws` (``two-flow``; under FIFO over the
segment chain, :func:`tagged_two_flow_segments`, polynomial in H) and
:func:`two_flow_hysteretic_laws` (``two-flow-hysteretic``; its tagged chain, with the level p counted
within the tagged customer's own flow, is described at :func:`tagged_two_flow_hysteretic`) are the
models' ``response`` references: ``{"wait": ResponseLaw, "sojourn": ResponseLaw}``
(:mod:`qderive.numeric.response`) whose tails are computed by uniformization and whose moments by
M-matrix solves (:mod:`qderive.numeric.kernels.phase_type_tail`), never by transform inversion.

**The state seen on arrival.** The models are CTMCs with Poisson arrivals, so by PASTA an arrival
of class c finds state x with the time-stationary probability pi(x); it is admitted where the
model's arrival transition of class c exists (rate lambda_c(x) > 0), so an *admitted* customer
finds x with probability pi(x) lambda_c(x) / sum_{y, c} pi(y) lambda_c(y). For the two-flow model
the law is the mixture over both classes weighted by their admitted rates (a random admitted
message); for the M|M|1 hysteresis lambda_c(x) is the rate of the mode in force.

**The tagged customer's chain.** The tagged customer is marked by its position p in the sequence
(0 = in service); its state is (x, p) with x the model's state *after* its arrival (it takes
position p = n, the count it found) -- the whole state, because the mode, and with it the service
rates, the admission of later arrivals and (priority) the order of service, depends on the count
including the customers behind it. Every transition of the model's CTMC from x applies, with the
same rate:

* an arrival (class c, to x') keeps p (it queues behind): (x', p);
* a departure (to x') moves p to p - 1 (FIFO, and priority in mode 0). Under priority when the
  mode after the departure is 1 or 2, the first class-2 message of the rest (position q in the
  rest) moves to the front and the class-1 messages before it shift back by one: the tagged
  customer (rest position p - 1) goes to p if q > p - 1 (overtaken by a class-2 message from
  behind), to 0 if q = p - 1 (it is that message), and stays at p - 1 if q < p - 1 or the rest
  has no class-2 message;
* a departure at p = 0 is the tagged customer's: the sojourn ends (absorption).

The **wait** is the time until p reaches 0 (the chain restricted to p >= 1, a move to p = 0 an
exit), with the atom P(W = 0) = the mass that enters at p = 0; the **sojourn** the time until the
tagged customer's own departure. The position never increases (p -> p, p - 1 or 0), so the
levels p make -T block lower triangular: the moments are solved level by level. For the M|M|1
hysteresis the service rate mu does not depend on the mode and the service is FIFO, so (x, p)
collapses to p: W given n found is Erlang(n, mu), a pure death chain.

**Precision.** float64: pi by the engine's solver, the tails and the moments in float64 (each a
sum of nonnegative terms: relative error O((n + Lambda t) eps), a tail below 1e-290 is recomputed
by the response module at 15 digits). ``digits = D``: every step in mpmath at D + 5 + g digits,
g = digits_for(n_x^3) (GTH, O(n^3 eps)) + digits_for(n_tagged) + digits_for(Lambda t) (the
uniformization's O((n + Lambda t) eps)) -- the guard is small because no step subtracts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.errors import ParameterError
from ...symbolic.models.two_flow import Algorithm, Mode
from ..backend import FLOAT64, mp_context
from ..kernels.chains import gth_stationary
from ..kernels.phase_type_tail import absorption_moments, uniformized_tail
from ..response import ResponseLaw
from ..sequences import digits_for

__all__ = ["TaggedChain", "tagged_two_flow", "tagged_two_flow_segments", "tagged_mm1_hysteretic",
           "tagged_two_flow_hysteretic",
           "phase_type_laws", "two_flow_laws", "mm1_hysteretic_laws", "two_flow_hysteretic_laws",
           "MAX_UNIFORMIZATION"]

#: largest Lambda t (uniformization rate x time) accepted: the number of terms grows like it
MAX_UNIFORMIZATION = 200_000


@dataclass(frozen=True)
class TaggedChain:
    """The tagged customer's transient chain, exactly: ``levels[i]`` (the position p), transitions
    ``rows -> cols`` (-1: absorption) of rate ``rate_values[kinds]``, the total rate out of each state
    ``totals[i]`` (exact, = the rates of its transitions summed), ``entry(ctx)`` the law of the state entered
    on arrival (context vector; for a restricted chain, defective: the rest is the atom at 0) and ``system_states`` (for the precision guard)."""

    levels: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    kinds: np.ndarray
    rate_values: tuple
    totals: tuple
    entry: object
    system_states: int
    #: the system's count n in each state when every transition changes it by one (None: not given); lets
    #: float64 moments of chains with large levels use the sparse level solver instead of dense blocks
    counts: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.levels)

    @functools.cached_property
    def rate(self) -> Fraction:
        """Lambda: the largest total rate out of a state (the uniformization rate)."""
        return max(self.totals)

    def restricted(self, keep: np.ndarray) -> "TaggedChain":
        """The chain on the states ``keep`` (a mask); a transition leaving them is an absorption."""
        new = np.full(self.size, -1, dtype=np.int64)
        new[keep] = np.arange(int(keep.sum()))
        sel = keep[self.rows]
        cols = self.cols[sel]
        cols = np.where(cols >= 0, new[np.maximum(cols, 0)], -1)
        totals = tuple(t for t, k in zip(self.totals, keep.tolist()) if k)
        entry = self.entry

        def sub_entry(ctx):
            return entry(ctx)[keep]

        return TaggedChain(self.levels[keep], new[self.rows[sel]], cols, self.kinds[sel], self.rate_values, totals,
                           sub_entry, self.system_states, None if self.counts is None else self.counts[keep])


# --------------------------------------------------------------------------------------
# The chain in a context, the law
# --------------------------------------------------------------------------------------


class _Numeric:
    """The chain's arrays in one context: alpha (normalised entry), atom, P's diagonal and entries, -T's
    off-diagonal rates and exits; the uniformization terms are kept for reuse (a quantile search)."""

    def __init__(self, chain: TaggedChain, ctx, atom_mask=None):
        self.ctx = ctx
        with ctx:
            self.alpha = chain.entry(ctx)
            self.chain = chain
            lam = chain.rate
            rv = ctx.array([ctx.num(r) for r in chain.rate_values])
            pv = ctx.array([ctx.num(Fraction(r) / lam) for r in chain.rate_values])
            inner = chain.cols >= 0
            self.rows, self.cols = chain.rows[inner], chain.cols[inner]
            self.rates, self.probs = rv[chain.kinds[inner]], pv[chain.kinds[inner]]
            out = chain.rows[~inner]
            self.exits = ctx.zeros(chain.size)
            if ctx.is_float64:
                self.exits = np.bincount(out, weights=rv[chain.kinds[~inner]], minlength=chain.size)
            else:
                np.add.at(self.exits, out, rv[chain.kinds[~inner]])
            unique = {t: ctx.num((lam - t) / lam) for t in set(chain.totals)}  # exact: no cancellation
            self.diag = ctx.array([unique[t] for t in chain.totals])
            self.lam = ctx.num(lam)
            self.cache: dict = {}

    def tails(self, ts):
        ctx = self.ctx
        with ctx:
            return uniformized_tail(ctx, self.alpha, self.diag, self.rows, self.cols, self.probs, self.lam,
                                    [ctx.num(t) for t in ts], self.cache)

    def moments(self, k):
        ctx = self.ctx
        largest = max(np.bincount(self.chain.levels).tolist() or [0])
        if ctx.is_float64 and self.chain.counts is not None and largest > _limits.current().dense_states:
            return self._sparse_moments(k)
        _limits.check("dense_states", largest, "states of one level of the tagged customer's chain (dense M-matrix "
                      "solve)")
        with ctx:
            return absorption_moments(ctx, self.alpha, self.chain.levels, self.rows, self.cols, self.rates,
                                      self.exits, k)


    def _sparse_moments(self, k):
        """E T^j = alpha x_j with (-T) x_j = j x_{j-1}, x_0 = 1, in float64 by the level solver over the system's
        count (every transition changes it by one: the diagonal blocks are diagonal), subtraction-free sweeps."""
        import scipy.sparse as sps

        from .level_solver import solve_level_m_matrix

        n = self.chain.size
        W = sps.csr_matrix((np.asarray(self.rates, dtype=np.float64), (self.rows, self.cols)), shape=(n, n))
        d = np.array([float(t) for t in self.chain.totals])
        x, out = np.ones(n), []
        for j in range(1, k + 1):
            x = solve_level_m_matrix(W, d, self.chain.counts, j * x)
            out.append(float(np.dot(self.alpha, x)))
        return out


def _atom(chain_full: TaggedChain, keep: np.ndarray, ctx):
    with ctx:
        w = chain_full.entry(ctx)[~keep]
        return float(np.sum(w)) if ctx.is_float64 else ctx.fsum(w.tolist())


def phase_type_laws(sojourn: TaggedChain) -> dict:
    """``{"wait": ..., "sojourn": ...}`` from the tagged customer's sojourn chain (levels = position p; the wait
    is its restriction to p >= 1, P(W = 0) the entry mass at p = 0)."""
    keep = sojourn.levels >= 1
    wait = sojourn.restricted(keep)
    chains = {"wait": wait, "sojourn": sojourn}
    numeric: dict = {}

    def numeric_of(kind, dps):
        key = (kind, dps)
        if key not in numeric:
            ctx = FLOAT64 if dps is None else mp_context(dps)
            numeric[key] = _Numeric(chains[kind], ctx)
        return numeric[key]

    def guard(chain, ts=()):
        top = max([float(t) for t in ts] or [0.0]) * float(chain.rate)
        return digits_for(chain.system_states ** 3) + digits_for(chain.size) + digits_for(int(top) + 1) + 1

    def make(kind):
        chain = chains[kind]

        def tails(ts, digits):
            for t in ts:
                if float(t) * float(chain.rate) > MAX_UNIFORMIZATION:
                    raise ParameterError(f"{kind}_tail", f"Lambda t = {float(t * chain.rate):.3g} is beyond the "
                                         f"uniformization budget {MAX_UNIFORMIZATION} (Lambda = {chain.rate})", t)
            if chain.size == 0:
                return [0.0 if digits is None else mp_context(digits).num(0) for _ in ts], None
            if digits is None:
                return [float(v) for v in numeric_of(kind, None).tails(ts)], None
            w = digits + 5 + guard(chain, ts)
            return numeric_of(kind, w).tails(ts), w

        def p_zero(ctx):
            if kind == "sojourn":
                return ctx.num(0)
            return _atom(sojourn, keep, ctx)

        def moment_values(k, digits):
            if chain.size == 0:
                return [Fraction(0)] * k
            if digits is None:
                return [float(v) for v in numeric_of(kind, None).moments(k)]
            return numeric_of(kind, digits + 10 + guard(chain)).moments(k)

        return ResponseLaw(kind, None, p_zero, moment_values, tails=tails)

    return {"wait": make("wait"), "sojourn": make("sojourn")}


def _memo(entry):
    """``entry`` computed once per context precision (the stationary solve)."""
    seen: dict = {}

    def cached(ctx):
        key = "float64" if ctx.is_float64 else ctx.dps
        if key not in seen:
            w = entry(ctx)
            seen[key] = w / (float(np.sum(w)) if ctx.is_float64 else ctx.fsum(w.tolist()))
        return seen[key].copy()

    return cached


# --------------------------------------------------------------------------------------
# two-flow (seed 001)
# --------------------------------------------------------------------------------------


def tagged_two_flow(model, flow: int | None = None, solve=None) -> TaggedChain:
    """The tagged message's sojourn chain of a :class:`TwoFlowModel` (module docstring), over the engine's
    state space; the entry weights are pi(x) lambda_c over the admitted arrivals of both classes (of class
    ``flow`` = 1 or 2 only, when given: that class's admitted messages). ``solve(ctx)``: the engine's solution
    in ``ctx`` when the caller keeps it (default :func:`qderive.numeric.engines.two_flow.solve`)."""
    from . import two_flow as TF

    space = TF.sequence_space(model)  # the tagged message's class is needed: the class-sequence chain
    rates = TF.model_rates(model)
    length, bits, mode = space.length, space.bits, space.mode
    offs = np.concatenate([[0], np.cumsum(length)]).astype(np.int64)
    levels = np.concatenate([np.arange(n, dtype=np.int64) for n in length.tolist()])
    rows, cols, kinds = [], [], []
    arrival = space.kind <= TF.RateKind.ARRIVAL_2
    priority = model.algorithm is Algorithm.PRIORITY
    for p in range(int(length.max(initial=0))):
        sel = length[space.src] > p
        src, dst, kind = space.src[sel], space.dst[sel], space.kind[sel]
        arr = arrival[sel]
        target = np.where(arr, p, p - 1)
        if priority and p >= 1:
            rest = bits[src] >> 1
            low = rest & -rest
            q = np.where(rest != 0, np.log2(np.maximum(low, 1)).astype(np.int64), -1)
            moved = (~arr) & (mode[dst] != Mode.NORMAL) & (rest != 0)
            target = np.where(moved & (q > p - 1), p, target)
            target = np.where(moved & (q == p - 1), 0, target)
        gone = (~arr) & (p == 0)
        rows.append(offs[src] + p)
        cols.append(np.where(gone, -1, offs[dst] + np.maximum(target, 0)))
        kinds.append(kind.astype(np.int64))
    rows, cols, kinds = (np.concatenate(a) if a else np.zeros(0, dtype=np.int64) for a in (rows, cols, kinds))
    counts = np.zeros((space.size, len(rates)), dtype=np.int64)
    np.add.at(counts, (space.src, space.kind.astype(np.int64)), 1)
    unique = {}
    system_totals = []
    for row in map(tuple, counts.tolist()):
        if row not in unique:
            unique[row] = sum((c * r for c, r in zip(row, rates)), Fraction(0))
        system_totals.append(unique[row])
    totals = tuple(system_totals[i] for i in range(space.size) for _ in range(int(length[i])))
    a_src, a_dst, a_kind = space.src[arrival], space.dst[arrival], space.kind[arrival].astype(np.int64)
    a_at = offs[a_dst] + length[a_src]
    if flow is not None:
        pick = a_kind == int(TF.RateKind.ARRIVAL_1 if flow == 1 else TF.RateKind.ARRIVAL_2)
        a_src, a_kind, a_at = a_src[pick], a_kind[pick], a_at[pick]

    def entry(ctx):
        sol = TF.solve(model, ctx, space=space) if solve is None else solve(ctx)
        if sol.space is not space:
            raise ValueError("tagged_two_flow: the solution must be over the class-sequence chain (sequence_space)")
        lam = ctx.array([ctx.num(rates[0]), ctx.num(rates[1])])
        w = ctx.zeros(len(levels))
        flow = sol.pi[a_src] * lam[a_kind]
        if ctx.is_float64:
            return np.bincount(a_at, weights=flow, minlength=len(levels))
        np.add.at(w, a_at, flow)
        return w

    return TaggedChain(levels, rows, cols, kinds, tuple(rates), totals, _memo(entry), space.size)


def tagged_two_flow_segments(model, flow: int | None = None) -> TaggedChain:
    """The tagged message's sojourn chain of a FIFO :class:`TwoFlowModel` over the segment chain
    (:mod:`qderive.numeric.engines.two_flow_segments`), polynomial in H.

    Waiting: the state is (x, p), x the segment state after the tagged message's arrival (the tagged
    message one of its queued messages, an undrawn A if admitted in mode 0), p >= 1 its position;
    every transition of x applies with its rate, an arrival keeping p, a departure moving p to p - 1.
    Under FIFO nothing before its service depends on the tagged message's class, so this is exact for
    either class. In service (p = 0) only (mode, n, class of the tagged message) matter: arrivals
    (admitted as in x, to mode 2 at n = H + 1) and its own departure (absorption, rate mu_c or mu'_c).
    The class taken into service is the one the segment chain draws (``flow`` None: a random admitted
    message) or ``flow`` (the entry restricted to that class's admitted arrivals, whose class is then
    known). Entry: pi(x) lambda_c over the states admitting class c, at position n (the count found),
    or in service when x is empty.
    """
    from . import two_flow as TF
    from .two_flow_segments import ARRIVAL_ANY

    space = TF.space_of(model)
    rates = TF.space_rates(model, space)
    H, R = space.high, space.capacity
    length, mode = space.length.astype(np.int64), space.mode.astype(np.int64)
    waiting = np.maximum(length - 1, 0)
    offs = np.concatenate([[0], np.cumsum(waiting)]).astype(np.int64)
    n_wait = int(offs[-1])
    _limits.check("two_flow_states", n_wait, "states of the tagged message's chain over the two-flow segment "
                  "chain (segment state, position); `qderive simulate two-flow` records waits and sojourns without "
                  "a state-space limit")

    def served(m, n, c):  # index of the in-service state (mode, n = 1..H + 1, class)
        return n_wait + ((np.asarray(m) * (H + 1) + np.asarray(n) - 1) * 2 + np.asarray(c) - 1)

    n_all = n_wait + 3 * (H + 1) * 2
    levels = np.zeros(n_all, dtype=np.int64)
    levels[:n_wait] = np.concatenate([np.arange(1, n, dtype=np.int64) for n in length.tolist() if n >= 2] or
                                     [np.zeros(0, dtype=np.int64)])
    kind = space.kind.astype(np.int64)
    arrival = (kind <= 1) | (kind == ARRIVAL_ANY)
    rows, cols, kinds = [], [], []
    for p in range(1, int(length.max(initial=0))):
        sel = length[space.src] > p
        src, dst, k, arr = space.src[sel], space.dst[sel], kind[sel], arrival[sel]
        here = offs[src] + p - 1
        into_service = (~arr) & (p == 1)
        cls = space.in_service[dst] if flow is None else np.full(len(dst), flow)
        target = np.where(arr, offs[dst] + p - 1, offs[dst] + p - 2)
        target = np.where(into_service, served(mode[dst], length[dst], np.maximum(cls, 1)), target)
        rows.append(here)
        cols.append(target)
        kinds.append(k)
    s_rows, s_cols, s_kinds = [], [], []
    for m in range(3):
        for n in range(1, H + 2):
            for c in (1, 2):
                at = int(served(m, n, c))
                if n < R and m != 2:
                    up = 2 if n + 1 == H + 1 else m
                    s_rows.append(at)
                    s_cols.append(int(served(up, n + 1, c)))
                    s_kinds.append(ARRIVAL_ANY if m == 0 else 1)
                s_rows.append(at)
                s_cols.append(-1)
                s_kinds.append((2 if m == 0 else 4) + c - 1)
    rows = np.concatenate(rows + [np.array(s_rows, dtype=np.int64)])
    cols = np.concatenate(cols + [np.array(s_cols, dtype=np.int64)])
    kinds = np.concatenate(kinds + [np.array(s_kinds, dtype=np.int64)])
    counts = np.zeros((n_all, len(rates)), dtype=np.int64)
    np.add.at(counts, (rows, kinds), 1)
    unique: dict = {}
    totals = []
    for row in map(tuple, counts.tolist()):
        if row not in unique:
            unique[row] = sum((c * r for c, r in zip(row, rates) if c), Fraction(0))
        totals.append(unique[row])
    # entries: the admitted arrivals of class c from every state that admits it
    e_src, e_at, e_cls = [], [], []
    a_sel = arrival
    src, dst, k = space.src[a_sel], space.dst[a_sel], kind[a_sel]
    for c in ((1, 2) if flow is None else (flow,)):
        admits = space.accepts(c)[src]
        empty = length[src] == 0
        # from an empty state: the class-c arrival's own transition (kind c - 1) into service
        pick = admits & np.where(empty, k == c - 1, True)
        s_, d_ = src[pick], dst[pick]
        at = np.where(length[s_] == 0, served(mode[d_], 1, c), offs[d_] + length[s_] - 1)
        e_src.append(s_)
        e_at.append(at)
        e_cls.append(np.full(len(s_), c - 1))
    e_src, e_at, e_cls = (np.concatenate(a) for a in (e_src, e_at, e_cls))

    def entry(ctx):
        sol = TF.solve(model, ctx, space=space)
        lam = ctx.array([ctx.num(rates[0]), ctx.num(rates[1])])
        w = ctx.zeros(n_all)
        weight = sol.pi[e_src] * lam[e_cls]
        if ctx.is_float64:
            return np.bincount(e_at, weights=weight, minlength=n_all)
        np.add.at(w, e_at, weight)
        return w

    counts = np.empty(n_all, dtype=np.int64)
    counts[:n_wait] = np.repeat(length, waiting)
    counts[n_wait:] = np.tile(np.repeat(np.arange(1, H + 2), 2), 3)
    return TaggedChain(levels, rows, cols, kinds, tuple(rates), tuple(totals), _memo(entry), space.size, counts)


@functools.lru_cache(maxsize=16)
def two_flow_laws(model) -> dict:
    """The ``response`` of ``two-flow``: wait and sojourn of a random admitted message (either class), and per
    class (``wait_invite``, ``sojourn_invite``, ``wait_non_invite``, ``sojourn_non_invite``: the entry restricted
    to that class's admitted arrivals, the same tagged chain). FIFO: over the segment chain
    (:func:`tagged_two_flow_segments`); priority: over the class sequences (:func:`tagged_two_flow`)."""
    tagged = tagged_two_flow_segments if model.algorithm is Algorithm.FIFO else tagged_two_flow
    laws = phase_type_laws(tagged(model))
    for flow, name in zip((1, 2), type(model).response_flows):
        per = phase_type_laws(tagged(model, flow))
        laws.update({f"{kind}_{name}": law for kind, law in per.items()})
    return laws


# --------------------------------------------------------------------------------------
# M|M|1 with bi-level hysteresis
# --------------------------------------------------------------------------------------


def _mm1_states(model):
    """States (n, s) reachable from (0, 0) and the transitions (i, j, rate) of ``docs/theory/other-models.md`` B."""
    rates = model.rates()
    states, index, moves, todo = [(0, 0)], {(0, 0): 0}, [], [(0, 0)]
    while todo:
        n, s = todo.pop()
        out = []
        if rates[s]:
            out.append(((n + 1, model.mode_after_arrival(s, n + 1)), rates[s]))
        if n >= 1:
            out.append(((n - 1, model.mode_after_departure(s, n - 1)), model.service_rate))
        for t, r in out:
            if t not in index:
                index[t] = len(states)
                states.append(t)
                todo.append(t)
            moves.append((index[(n, s)], index[t], r))
    return states, moves


def tagged_mm1_hysteretic(model) -> TaggedChain:
    """The tagged customer's sojourn chain of an :class:`MM1HystereticModel`: the number p of customers ahead
    (FIFO, rate mu in every mode), p -> p - 1 at rate mu, absorption from p = 0; entry at p = n with weight
    sum_s pi(n, s) lambda_s (pi by the one GTH of the (n, s) chain)."""
    states, moves = _mm1_states(model)
    _limits.check("dense_states", len(states), "states of the M|M|1 hysteresis chain (GTH for the arrival law)")
    rates = model.rates()
    top = max(n for n, s in states if rates[s]) if any(rates[s] for _, s in states) else 0
    size = top + 1
    levels = np.arange(size, dtype=np.int64)
    rows = levels.copy()
    cols = levels - 1
    kinds = np.zeros(size, dtype=np.int64)

    def entry(ctx):
        A = ctx.zeros((len(states), len(states)))
        for i, j, r in moves:
            A[i, j] = A[i, j] + ctx.num(r)
        pi = gth_stationary(ctx, A)
        w = ctx.zeros(size)
        for k, (n, s) in enumerate(states):
            if rates[s]:
                w[n] = w[n] + pi[k] * ctx.num(rates[s])
        return w

    return TaggedChain(levels, rows, cols, kinds, (Fraction(model.service_rate),),
                       tuple(Fraction(model.service_rate) for _ in range(size)), _memo(entry), len(states))


@functools.lru_cache(maxsize=16)
def mm1_hysteretic_laws(model) -> dict:
    """The ``response`` of ``mm1-hysteretic``: wait and sojourn of an admitted customer (FIFO)."""
    return phase_type_laws(tagged_mm1_hysteretic(model))


# --------------------------------------------------------------------------------------
# two-flow-hysteretic (seed 002): relative priority to flow 1
# --------------------------------------------------------------------------------------


def tagged_two_flow_hysteretic(model, flow: int | None = None) -> TaggedChain:
    """The tagged customer's sojourn chain of a :class:`TwoFlowHystereticModel`, over the engine's states
    x = (s, i, j, k) (:mod:`qderive.numeric.engines.two_flow_hysteretic`): the state is (x, c, p), c the
    tagged customer's flow and p its level -- 0 in service (then c = k), else 1 + the number of customers *of
    its own flow* waiting ahead of it. Within a flow the order is FIFO, and flow 1 has relative
    (non-preemptive) priority, so later flow-1 arrivals overtake a waiting flow-2 customer: they do not
    change its p, they only delay the departures that lower it. Every system transition x -> x' applies with
    its rate: an arrival keeps (c, p); a departure lowers p by one when the next customer served comes from
    the tagged customer's flow (always for c = 1; for c = 2 only when no flow-1 customer waits), else keeps
    p; a departure at p = 0 is the tagged customer's (absorption). So p never increases (the levels of
    :func:`phase_type_laws`). Entry: an admitted flow-c arrival to x (rate lambda_c^(s) > 0, n < R) enters at
    p = 0 if x is empty, else p = 1 + (flow-c customers waiting in x), weight pi(x) lambda_c^(s)."""
    from . import two_flow_hysteretic as TH

    space = TH.hysteretic_space(model)
    states = space.states
    values = sorted(set(space.rates))
    kind_of = {r: a for a, r in enumerate(values)}
    out: list = [[] for _ in states]
    for a, b, r in zip(space.src.tolist(), space.dst.tolist(), space.rates):
        out[a].append((b, kind_of[r]))
    system_totals = [sum((values[k] for _, k in moves), Fraction(0)) for moves in out]

    def waiting(x, c):
        _, i, j, k = x
        return (i if c == 1 else j) - (k == c)

    tagged = []  # (x index, c, p)
    for a, x in enumerate(states):
        if x[3]:
            tagged.append((a, x[3], 0))
        for c in (1, 2):
            tagged.extend((a, c, p) for p in range(1, waiting(x, c) + 1))
    index = {t: m for m, t in enumerate(tagged)}
    rows, cols, kinds = [], [], []
    for m, (a, c, p) in enumerate(tagged):
        for b, kind in out[a]:
            if space.count[b] > space.count[a]:  # an arrival: queues behind (or overtakes, unseen by p)
                target = index[(b, c, p)]
            elif p == 0:
                target = -1  # the tagged customer's own departure
            else:
                nxt = states[b][3]  # the flow served next (priority to flow 1, the engine's rule)
                q = p - 1 if nxt == c else p
                target = index[(b, c, q)]
            rows.append(m)
            cols.append(target)
            kinds.append(kind)
    levels = np.array([p for _, _, p in tagged], dtype=np.int64)
    totals = tuple(system_totals[a] for a, _, _ in tagged)
    position = {x: a for a, x in enumerate(states)}
    e_src, e_rate, e_at = [], [], []  # the admitted arrivals: from x, rate lambda_c^(s), into the tagged state
    for a, x in enumerate(states):
        s, i, j, k = x
        n = i + j
        if n >= model.R:
            continue
        for c in (1, 2):
            lam = model.rate(TH.InputMode(s), c)
            if lam == 0 or (flow is not None and c != flow):
                continue
            s2 = 1 if (s == 0 and n + 1 == model.H) else 2 if (s == 1 and n + 1 == model.R) else s
            y = (s2, i + (c == 1), j + (c == 2), k if n else c)
            e_src.append(a)
            e_rate.append(Fraction(lam))
            e_at.append(index[(position[y], c, 0 if n == 0 else waiting(x, c) + 1)])
    unique = sorted(set(e_rate))
    e_src, e_at = np.array(e_src, dtype=np.int64), np.array(e_at, dtype=np.int64)
    e_kind = np.array([unique.index(r) for r in e_rate], dtype=np.int64)

    def entry(ctx):
        pi = TH.solve(model, ctx).pi
        lam = ctx.array([ctx.num(r) for r in unique])
        flow = pi[e_src] * lam[e_kind]
        if ctx.is_float64:
            return np.bincount(e_at, weights=flow, minlength=len(tagged))
        w = ctx.zeros(len(tagged))
        np.add.at(w, e_at, flow)
        return w

    return TaggedChain(levels, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
                       np.array(kinds, dtype=np.int64), tuple(values), totals, _memo(entry), space.size)


@functools.lru_cache(maxsize=16)
def two_flow_hysteretic_laws(model) -> dict:
    """The ``response`` of ``two-flow-hysteretic``: wait and sojourn of a random admitted customer (either
    flow, weighted by the admitted rates), relative priority to flow 1; and per flow (``wait_flow1``, ...:
    the entry restricted to that flow's admitted arrivals). Exponential service only."""
    if getattr(model, "service", None) is not None:
        raise ParameterError("service", "the wait and sojourn laws of two-flow-hysteretic are those of the CTMC: "
                             "they need exponential service (--service-rate); with --service LAW only the means "
                             "(mean_sojourn_flow1/2) are computed", str(model.service))
    laws = phase_type_laws(tagged_two_flow_hysteretic(model))
    for flow, name in zip((1, 2), type(model).response_flows):
        per = phase_type_laws(tagged_two_flow_hysteretic(model, flow))
        laws.update({f"{kind}_{name}": law for kind, law in per.items()})
    return laws
