"""Engine of the two-flow INVITE / non-INVITE threshold model (seed 001, ``docs/theory/other-models.md`` C).

The model and its rules are in :mod:`qderive.symbolic.models.two_flow`. Because the
service rate depends on the class and the order of service matters, the exact state is
``(mode, sequence of classes)``, first = in service: about ``3 * 2^(H+1)`` states. Under
FIFO (algorithm 1) the engine holds the queue as segments instead (the classes admitted in
mode 0 are drawn when they enter service, :mod:`.two_flow_segments`): O(H^4) states at most,
exact, bounded by the limit ``two_flow_states``. Under priority (algorithm 2) no such
lumping is exact and the class-sequence chain is bounded by the limit ``two_flow_high``
(:func:`check_sequence_chain`, the one place an analytic engine refuses a large H; the
simulator has no state space and is not limited by it). The chain depends only on L, H,
min(R, H + 1) and the algorithm.

**Encoding** (:func:`state_space`). A sequence of length n is an integer ``bits`` whose
bit i is 1 when the i-th message (0 = in service) is class 2. After a departure the rest
is ``bits >> 1``; under priority in modes 1 and 2 it becomes ``(rest XOR lowbit(rest)) | 1``
(the first class-2 message moves to the front, the class-1 messages before it shift back
by one), so the transition table is built with numpy, without loops over positions.

**Stationary law** pi Q = 0 (``docs/theory/other-models.md`` C, global balance (C.1)):

* :attr:`Solver.GTH` -- the one GTH of :mod:`qderive.numeric.kernels.chains` on the dense
  off-diagonal rates, in any context: every operation adds or multiplies nonnegative
  numbers, so each pi(s), however small, keeps its relative accuracy (a-priori bound
  O(n^3 eps): :meth:`TwoFlowEngine.guard_digits`; no confirmation needed);
* :attr:`Solver.SPARSE` -- pi(empty) = 1 fixed, ``q_i pi_i = sum_j pi_j q_ji`` for the other
  states by :func:`~qderive.numeric.engines.level_solver.solve_level_m_matrix` (float64);
* :attr:`Solver.AUTO` -- GTH for float64 chains up to :data:`DENSE_FLOAT64` states (and within the
  limit ``dense_states``) and for every mpmath context, the sparse solver above.

**Measures** from pi, every probability and rate a sum of positive terms (never ``1 - sum``):
mode probabilities; rejection by PASTA, ``B_1 = P(m in {1, 2} or n = R)``, ``B_2 = P(m = 2
or n = R)`` (C.3); throughput ``theta_c = mu_c P(m = 0, c in service) + mu'_c P(m > 0, c in
service)`` (C.2); accepted rate ``lambda_c P(c accepted)`` (= theta_c, the check of (C.4));
mean numbers; sojourn by Little ``T_c = N_c / (lambda_c P(c accepted))`` (C.4); the mean
return time to mode 0 ``E tau_12 = sum_s alpha(s) h(s)`` with alpha the stationary entry law
into overload (flow from mode 0, normalised) and h the mean first-passage times into mode 0,
``(-Q_OO) h = 1`` by the one subtraction-free :func:`~qderive.numeric.kernels.chains.mmatrix_solve`
(or the level solver); checked against renewal-reward ``(P_1 + P_2) / nu`` (C.5).

>>> from fractions import Fraction as F
>>> from qderive.symbolic.models.two_flow import TwoFlowModel
>>> model = TwoFlowModel(F(3, 5), 2, 1, 5, 2, 4, 5)
>>> sol = solve(model)
>>> sol.space.size, sequence_space(model).size, round(sol.throughput(1) / sol.accepted_rate(1), 12)
(37, 91, 1.0)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.errors import BudgetError, NumericalError, ParameterError
from ...symbolic.models.two_flow import Algorithm, Mode, Solver, TwoFlowModel
from ..backend import FLOAT64, FractionContext
from ..kernels.chains import gth_stationary, mmatrix_solve
from ..sequences import digits_for
from .base import Engine, Trouble
from .level_solver import ConvergenceError, solve_level_m_matrix
from .two_flow_segments import SegmentSpace, segment_rates, segment_space

__all__ = ["LAW_KEYS", "joint_law", "RateKind", "StateSpace", "state_space", "space_of", "TwoFlowSolution", "solve",
           "exact_stationary", "TwoFlowEngine", "DENSE_FLOAT64", "model_rates", "check_sequence_chain",
           "sequence_space", "space_rates"]

#: AUTO uses dense GTH for float64 chains up to this many states (above: the sparse level solver)
DENSE_FLOAT64 = 1200


class RateKind(enum.IntEnum):
    """Index of a transition's rate in :func:`model_rates`: (lambda_1, lambda_2, mu_1, mu_2, mu'_1, mu'_2)."""

    ARRIVAL_1 = 0
    ARRIVAL_2 = 1
    SERVICE_1 = 2
    SERVICE_2 = 3
    OVERLOAD_SERVICE_1 = 4
    OVERLOAD_SERVICE_2 = 5


def model_rates(model: TwoFlowModel) -> tuple:
    """The exact rates in :class:`RateKind` order."""
    return (*model.arrival_rates, *model.service_rates, *model.overload_service_rates)


_ACCEPT = np.array([[Mode(m).accepts(c) for c in (1, 2)] for m in Mode])  # [mode, class - 1]


# --------------------------------------------------------------------------------------
# State space and transition table
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateSpace:
    """Reachable states ``(mode, length, bits)`` and the transitions ``src -> dst`` with their :class:`RateKind`.

    States are numbered level by level (count n ascending; within a level mode, then bits),
    the empty state first: the order of the GTH elimination (highest levels first) and of
    the sparse solver's sweeps.
    """

    low: int
    high: int
    capacity: int
    algorithm: Algorithm
    mode: np.ndarray
    length: np.ndarray
    bits: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray

    @property
    def size(self) -> int:
        return len(self.mode)

    def sequence(self, i: int) -> tuple[int, ...]:
        """The classes (1 or 2) of state i, first = in service."""
        b, n = int(self.bits[i]), int(self.length[i])
        return tuple(1 + ((b >> k) & 1) for k in range(n))

    @cached_property
    def _lookup(self) -> dict:
        return {(int(a), int(b), int(c)): i for i, (a, b, c) in enumerate(zip(self.mode, self.length, self.bits))}

    def index(self, mode: int, sequence) -> int:
        """Index of the state ``(mode, sequence)`` (KeyError if unreachable)."""
        bits = sum((c - 1) << k for k, c in enumerate(sequence))
        return self._lookup[(int(mode), len(sequence), bits)]

    @cached_property
    def class2_count(self) -> np.ndarray:
        """Number of class-2 messages in each state (popcount of ``bits``)."""
        b = self.bits.copy()
        count = np.zeros_like(b)
        while np.any(b):
            count += b & 1
            b >>= 1
        return count

    @property
    def has_overload(self) -> bool:
        """True when modes 1 and 2 are reachable (R > H)."""
        return bool(np.any(self.mode != Mode.NORMAL))

    # the class counts as :class:`~.two_flow_segments.SegmentSpace` has them (here every class is known)
    @property
    def known1(self) -> np.ndarray:
        return self.length - self.class2_count

    @property
    def known2(self) -> np.ndarray:
        return self.class2_count

    @property
    def undrawn(self) -> np.ndarray:
        return np.zeros_like(self.length)

    def accepts(self, cls: int) -> np.ndarray:
        """States where an arriving class-``cls`` message is accepted: its mode accepts it and n < R."""
        return _ACCEPT[self.mode, cls - 1] & (self.length < self.capacity)

    @cached_property
    def in_service(self) -> np.ndarray:
        """Class in service (1, 2), 0 when empty."""
        return np.where(self.length == 0, 0, 1 + (self.bits & 1))


def _blocks(L: int, H: int, R: int):
    """(mode, n) blocks of candidate states: mode 0 for n <= min(H, R), mode 1 for L <= n <= H, mode 2 at n = H + 1."""
    blocks = [(0, n) for n in range(min(H, R) + 1)]
    if R > H:
        blocks += [(1, n) for n in range(L, H + 1)] + [(2, H + 1)]
    offset, start = {}, 0
    for key in blocks:
        offset[key] = start
        start += 1 << key[1]
    return blocks, offset, start


@lru_cache(maxsize=16)
def state_space(low: int, high: int, capacity: int, algorithm: Algorithm) -> StateSpace:
    """Reachable states and transitions of the seed-001 chain (``docs/theory/other-models.md`` C).

    Out of ``(m, s)`` with ``n = len(s)``: an arrival of class c (rate lambda_c) if n < R and
    mode m accepts c, to ``(m', s + (c,))`` with m' = 2 when n + 1 = H + 1, else m; a departure
    (rate mu_{s_0} in mode 0, mu'_{s_0} in modes 1, 2) to m' = 1 if m = 2 (n - 1 = H), m' = 0 if
    m = 1 and n - 1 = L - 1, else m, the rest ``s[1:]`` reordered by the discipline of m'.
    Candidates per block with numpy; the reachable set from the empty state by frontier
    expansion (irreducible there: every state empties by departures). ``capacity`` is
    min(R, H + 1). The arrays are shared through the cache: read-only.
    """
    L, H, R = low, high, min(capacity, high + 1)
    blocks, offset, total = _blocks(L, H, R)
    src, dst, kind = [], [], []
    for m, n in blocks:
        bits = np.arange(1 << n, dtype=np.int64)
        here = offset[(m, n)] + bits
        if n < R:
            m_up = 2 if n + 1 == H + 1 else m
            for c in (1, 2):
                if _ACCEPT[m, c - 1]:
                    src.append(here)
                    dst.append(offset[(m_up, n + 1)] + (bits | ((c - 1) << n)))
                    kind.append(np.full(bits.shape, RateKind.ARRIVAL_1 + c - 1, dtype=np.int8))
        if n >= 1:
            m_down = 1 if m == 2 else (0 if (m == 1 and n - 1 == L - 1) else m)
            rest = bits >> 1
            if algorithm is Algorithm.PRIORITY and m_down != 0:
                low_bit = rest & -rest
                rest = np.where(rest != 0, (rest ^ low_bit) | 1, rest)
            base = RateKind.SERVICE_1 if m == 0 else RateKind.OVERLOAD_SERVICE_1
            src.append(here)
            dst.append(offset[(m_down, n - 1)] + rest)
            kind.append((base + (bits & 1)).astype(np.int8))
    src, dst, kind = np.concatenate(src), np.concatenate(dst), np.concatenate(kind)

    reached = np.zeros(total, dtype=bool)
    reached[offset[(0, 0)]] = True
    while True:
        new = np.zeros(total, dtype=bool)
        new[dst[reached[src]]] = True
        new &= ~reached
        if not new.any():
            break
        reached |= new
    mode = np.empty(total, dtype=np.int8)
    length = np.empty(total, dtype=np.int64)
    bits_all = np.empty(total, dtype=np.int64)
    for m, n in blocks:
        sl = slice(offset[(m, n)], offset[(m, n)] + (1 << n))
        mode[sl], length[sl], bits_all[sl] = m, n, np.arange(1 << n)
    cand = np.flatnonzero(reached)
    cand = cand[np.lexsort((bits_all[cand], mode[cand], length[cand]))]  # level order, the empty state first
    new_index = np.full(total, -1, dtype=np.int64)
    new_index[cand] = np.arange(len(cand))
    keep = reached[src]
    src, dst, kind = new_index[src[keep]], new_index[dst[keep]], kind[keep]
    mode, length, bits_all = mode[cand], length[cand], bits_all[cand]
    arrays = (mode, length, bits_all, src, dst, kind)
    for a in arrays:
        a.setflags(write=False)
    return StateSpace(L, H, R, algorithm, *arrays)


def check_sequence_chain(model: TwoFlowModel) -> None:
    """Refuse (:class:`BudgetError`, limit ``two_flow_high``) a class-sequence chain too large to build.

    The one analytic refusal of a large H: the chain over class sequences has about 3 * 2^(H+1)
    states. Under FIFO the measures and the response laws do not need it (:func:`space_of` holds the
    queue as segments; :func:`~.ctmc_wait.tagged_two_flow_segments`); priority does, and so do the
    tagged copies of ``sip-retransmission --control threshold``. The simulator has no state space and
    never calls this.
    """
    H = model.H
    if H <= _limits.current().two_flow_high:
        return
    what = ("the priority discipline (algorithm 2) has no exact polynomial formulation: the next message served "
            "in modes 1 and 2 depends on every class in the queue" if model.algorithm is Algorithm.PRIORITY else
            "this computation follows a tagged message through the class-sequence chain")
    import math

    states = f"1e{int((H + 1) * math.log10(2) + math.log10(3))}"  # as a power of ten: 2^(H+1) overflows a float
    _limits.check("two_flow_high", H, f"{what}; the chain has about 3 * 2^(H+1) = {states} states, "
                  "so raising the limit far does not help: `qderive simulate two-flow` has no such limit")


def sequence_space(model: TwoFlowModel) -> StateSpace:
    """The chain over class sequences (:func:`state_space`), after :func:`check_sequence_chain`."""
    check_sequence_chain(model)
    return state_space(model.L, model.H, model.effective_capacity, model.algorithm)


def space_of(model: TwoFlowModel) -> StateSpace | SegmentSpace:
    """The engine's chain: FIFO as segments (:func:`~.two_flow_segments.segment_space`, polynomial in H, exact),
    priority over class sequences (:func:`sequence_space`)."""
    if model.algorithm is Algorithm.FIFO:
        return segment_space(model.L, model.H, model.effective_capacity)
    return sequence_space(model)


def space_rates(model: TwoFlowModel, space) -> tuple:
    """The exact rate of each transition kind of ``space``: :func:`model_rates`, extended for a segment space
    (:func:`~.two_flow_segments.segment_rates`)."""
    rates = model_rates(model)
    return segment_rates(rates) if isinstance(space, SegmentSpace) else rates


# --------------------------------------------------------------------------------------
# Solution and measures
# --------------------------------------------------------------------------------------


def _total(ctx, values):
    """A sum of nonnegative terms: numpy's pairwise sum in float64 (relative error O(log2(n) eps)), else ctx.fsum."""
    if ctx.is_float64:
        return float(np.sum(values))
    return ctx.fsum(list(values))


def _dense(ctx, n: int, rows, cols, values):
    """A dense context matrix with ``A[rows[t], cols[t]] += values[t]`` (only the entries present converted)."""
    if ctx.is_float64:
        A = np.zeros((n, n))
        np.add.at(A, (rows, cols), values)
        return A
    A = ctx.zeros((n, n))
    for i, j, v in zip(rows.tolist(), cols.tolist(), values):
        A[i, j] = A[i, j] + v
    return A


@dataclass(frozen=True)
class TwoFlowSolution:
    """Stationary law ``pi`` of a :class:`TwoFlowModel` in context ``ctx`` and the measures from it."""

    model: TwoFlowModel
    space: StateSpace
    pi: np.ndarray
    ctx: object
    solver: Solver
    rates: tuple  # context numbers in RateKind order

    def _sum(self, mask):
        return _total(self.ctx, self.pi[np.asarray(mask)])

    def mode_probability(self, mode: int):
        """P(mode = m) = sum of pi over the states of mode m."""
        return self._sum(self.space.mode == int(mode))

    def rejection_probability(self, cls: int):
        """B_c: sum of pi over the states refusing class c (PASTA) -- never ``1 - P(accept)`` (C.3)."""
        return self._sum(~self.space.accepts(cls))

    def accepted_rate(self, cls: int):
        """lambda_c P(c accepted): lambda_1 P(mode 0, n < R) for INVITE, lambda_2 P(mode < 2, n < R) otherwise."""
        return self.rates[cls - 1] * self._sum(self.space.accepts(cls))

    def throughput(self, cls: int):
        """theta_c = mu_c P(m = 0, c in service) + mu'_c P(m > 0, c in service) (C.2)."""
        sp_ = self.space
        busy = sp_.in_service == cls
        normal = self.rates[RateKind.SERVICE_1 + cls - 1] * self._sum(busy & (sp_.mode == Mode.NORMAL))
        if not sp_.has_overload:
            return normal
        return normal + self.rates[RateKind.OVERLOAD_SERVICE_1 + cls - 1] * self._sum(busy & (sp_.mode != Mode.NORMAL))

    def mean_number(self, cls: int | None = None):
        """Mean number of class-c messages in the system (both classes when ``cls`` is None); a message whose
        class is not drawn yet (segment space) counts p = lambda_1 / (lambda_1 + lambda_2) for class 1."""
        sp_ = self.space
        if cls is None:
            return self._weighted(sp_.length)
        known = sp_.known1 if cls == 1 else sp_.known2
        if not np.any(sp_.undrawn):
            return self._weighted(known)
        lam = self.rates[0] + self.rates[1]
        return self._weighted(known) + (self.rates[cls - 1] / lam) * self._weighted(sp_.undrawn)

    def _weighted(self, counts):
        counts = np.asarray(counts)
        w = counts.astype(np.float64) if self.ctx.is_float64 else np.array(counts.tolist(), dtype=object)
        return self.ctx.dot(self.pi, w)

    def mean_sojourn(self, cls: int | None = None):
        """Little with the accepted rate: N_c / (lambda_c P(c accepted)); total N / (sum of the accepted rates) (C.4)."""
        if cls is None:
            return self.mean_number() / (self.accepted_rate(1) + self.accepted_rate(2))
        return self.mean_number(cls) / self.accepted_rate(cls)

    # -- the return time to mode 0 ----------------------------------------------------
    @cached_property
    def _entry(self):
        """(overload states entered from mode 0, the stationary flow pi(s) q(s, s') into each)."""
        sp_ = self.space
        sel = (sp_.mode[sp_.src] == Mode.NORMAL) & (sp_.mode[sp_.dst] != Mode.NORMAL)
        src, dst, kind = sp_.src[sel], sp_.dst[sel], sp_.kind[sel]
        if self.ctx.is_float64:
            rates = np.array(self.rates, dtype=np.float64)
            targets, inverse = np.unique(dst, return_inverse=True)
            flows = np.zeros(len(targets))
            np.add.at(flows, inverse, self.pi[src] * rates[kind])
            return targets, flows
        flows: dict = {}
        for s, d, k in zip(src.tolist(), dst.tolist(), kind.tolist()):
            flows.setdefault(d, []).append(self.pi[s] * self.rates[k])
        targets = np.array(sorted(flows), dtype=np.int64)
        return targets, [self.ctx.fsum(flows[int(d)]) for d in targets]

    def overload_entry_rate(self):
        """nu: the rate of overload periods, the stationary flow from mode 0 into mode 2."""
        return _total(self.ctx, self._entry[1])

    def renewal_return_time(self):
        """(P(mode 1) + P(mode 2)) / nu (renewal-reward, the check of the first-passage value); None if R <= H."""
        if not self.space.has_overload:
            return None
        return (self.mode_probability(1) + self.mode_probability(2)) / self.overload_entry_rate()

    def mean_return_time(self):
        """E tau_12 = sum_s alpha(s) h(s): entry law alpha into overload, h the mean first-passage times to mode 0.

        None when overload never occurs (R <= H): the return time is not defined there.
        """
        if not self.space.has_overload:
            return None
        targets, flows = self._entry
        h = self.hitting_times()[targets]
        if self.ctx.is_float64:
            return float(np.sum(flows * h)) / float(np.sum(flows))
        return self.ctx.dot(flows, h) / self.ctx.fsum(flows)

    def hitting_times(self) -> np.ndarray:
        """Mean first-passage time into mode 0 from every state (0 in mode 0): ``(-Q_OO) h = 1`` on overload."""
        sp_ = self.space
        over = np.flatnonzero(sp_.mode != Mode.NORMAL)
        pos = np.full(sp_.size, -1)
        pos[over] = np.arange(len(over))
        m = len(over)
        from_o = pos[sp_.src] >= 0
        inside = from_o & (pos[sp_.dst] >= 0)
        leave = from_o & (pos[sp_.dst] < 0)
        ctx = self.ctx
        if self.solver is Solver.SPARSE:
            import scipy.sparse as sps

            rates = np.array(self.rates, dtype=np.float64)
            W = sps.csr_matrix((rates[sp_.kind[inside]], (pos[sp_.src[inside]], pos[sp_.dst[inside]])), shape=(m, m))
            q = np.zeros(m)
            np.add.at(q, pos[sp_.src[from_o]], rates[sp_.kind[from_o]])
            out = np.zeros(sp_.size)
            out[over] = solve_level_m_matrix(W, q, sp_.length[over], np.ones(m))
            return out
        vals = [self.rates[k] for k in sp_.kind[inside].tolist()]
        W = _dense(ctx, m, pos[sp_.src[inside]], pos[sp_.dst[inside]], vals)
        exit_rates = ctx.zeros(m)
        for s, k in zip(pos[sp_.src[leave]].tolist(), sp_.kind[leave].tolist()):
            exit_rates[s] = exit_rates[s] + self.rates[k]
        out = ctx.zeros(sp_.size)
        out[over] = mmatrix_solve(ctx, W, exit_rates, [ctx.array([1] * m)])[0]
        return out

    def laws(self) -> dict:
        """``joint_law`` [m][i][j] (mode, INVITE and non-INVITE counts) and ``number_law`` of the stationary pi
        (:func:`joint_law`; the counts reach at most min(R, H + 1))."""
        sp_ = self.space
        if np.any(sp_.undrawn):
            return _segment_joint_law(self.ctx, self.pi, sp_, self.rates)
        return joint_law(self.ctx, self.pi, sp_.mode, sp_.known1, sp_.known2, int(sp_.length.max()))

    def measures(self) -> dict:
        """Every measure of :class:`~qderive.symbolic.models.two_flow.TwoFlowMeasures` (context numbers).

        Without overload (R <= H) p_mode1 = p_mode2 = 0 exactly (the integer 0: structural, not an
        underflow) and mean_return_time is None (not defined).
        """
        over = self.space.has_overload
        return {
            "throughput_invite": self.throughput(1),
            "throughput_non_invite": self.throughput(2),
            "rejection_invite": self.rejection_probability(1),
            "rejection_non_invite": self.rejection_probability(2),
            "mean_sojourn_invite": self.mean_sojourn(1),
            "mean_sojourn_non_invite": self.mean_sojourn(2),
            "mean_sojourn": self.mean_sojourn(),
            "p_mode0": self.mode_probability(0),
            "p_mode1": self.mode_probability(1) if over else 0,
            "p_mode2": self.mode_probability(2) if over else 0,
            "mean_return_time": self.mean_return_time(),
            "mean_number_invite": self.mean_number(1),
            "mean_number_non_invite": self.mean_number(2),
            "mean_number": self.mean_number(),
            "accepted_rate_invite": self.accepted_rate(1),
            "accepted_rate_non_invite": self.accepted_rate(2),
            "states": self.space.size,
        }


#: the optional distributions of the two-class records (``--distribution``)
LAW_KEYS = ("joint_law", "number_law")


def joint_law(ctx, pi, mode, first, second, top: int) -> dict:
    """The stationary laws of a two-class chain from pi by state: ``joint_law`` [m][i][j] = sum of pi over
    the states with mode m, i class-1 and j class-2 customers (i, j = 0..``top``), and ``number_law`` [n] =
    sum over i + j = n (n = 0..``top``); sums of positive terms (the global balance (C.1) solved by GTH)."""
    cells = (np.asarray(mode) * (top + 1) + np.asarray(first)) * (top + 1) + np.asarray(second)
    total = np.asarray(first) + np.asarray(second)
    if ctx.is_float64:
        flat = np.bincount(cells, weights=np.asarray(pi, dtype=np.float64), minlength=3 * (top + 1) ** 2)
        number = np.bincount(total, weights=np.asarray(pi, dtype=np.float64), minlength=top + 1)
    else:
        flat, number = ctx.zeros(3 * (top + 1) ** 2), ctx.zeros(top + 1)
        for x, c, n in zip(pi, cells.tolist(), total.tolist()):
            flat[c] = flat[c] + x
            number[n] = number[n] + x
    grid = flat.reshape(3, top + 1, top + 1)
    return {"joint_law": [[list(row) for row in block] for block in grid], "number_law": list(number)}


def _segment_joint_law(ctx, pi, space: SegmentSpace, rates) -> dict:
    """:func:`joint_law` of a segment space: the u undrawn classes of a state are i.i.d., class 1 with
    probability p = lambda_1 / (lambda_1 + lambda_2), so the state's mass spreads over k = 0..u class-1
    messages by the binomial law C(u, k) p^k q^(u-k) (every term positive)."""
    keys = np.stack([space.mode.astype(np.int64), space.known1, space.known2, space.undrawn], axis=1)
    groups, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    if ctx.is_float64:
        mass = np.bincount(inverse, weights=np.asarray(pi, dtype=np.float64), minlength=len(groups))
    else:
        mass = ctx.zeros(len(groups))
        for g, x in zip(inverse.tolist(), pi):
            mass[g] = mass[g] + x
    lam1, lam2 = rates[0], rates[1]
    p, q = lam1 / (lam1 + lam2), lam2 / (lam1 + lam2)
    top = int(space.length.max())
    binomials: dict = {}

    def binomial(u):
        if u not in binomials:
            row, c = [], 1
            for k in range(u + 1):
                row.append(c * p ** k * q ** (u - k))
                c = c * (u - k) // (k + 1)
            binomials[u] = row
        return binomials[u]

    flat = [ctx.num(0)] * (3 * (top + 1) ** 2) if not ctx.is_float64 else np.zeros(3 * (top + 1) ** 2)
    for (m, k1, k2, u), w in zip(groups.tolist(), list(mass)):
        for k, b in enumerate(binomial(u)):
            cell = (m * (top + 1) + k1 + k) * (top + 1) + k2 + u - k
            flat[cell] = flat[cell] + w * b
    flat = np.asarray(flat, dtype=np.float64 if ctx.is_float64 else object)
    grid = flat.reshape(3, top + 1, top + 1)
    number = [ctx.fsum([grid[m, i, n - i] for m in range(3) for i in range(n + 1)]) if not ctx.is_float64 else
              float(sum(grid[m, i, n - i] for m in range(3) for i in range(n + 1))) for n in range(top + 1)]
    return {"joint_law": [[list(row) for row in block] for block in grid], "number_law": number}


def _stationary_sparse(space: StateSpace, rates) -> np.ndarray:
    """pi Q = 0 for large chains: pi(empty) = 1 fixed, ``q_i pi_i = sum_j pi_j q_ji`` for the rest (level solver)."""
    import scipy.sparse as sps

    n = space.size
    vals = np.array(rates, dtype=np.float64)[space.kind]
    q = np.zeros(n)
    np.add.at(q, space.src, vals)
    WT = sps.csr_matrix((vals, (space.dst, space.src)), shape=(n, n))  # WT[i, j] = q(j -> i)
    root = 0  # the empty state
    rest = np.arange(1, n)
    x = solve_level_m_matrix(WT[rest][:, rest], q[rest], space.length[rest], WT[rest][:, [root]].toarray().ravel())
    pi = np.empty(n)
    pi[root] = 1.0
    pi[rest] = x
    return pi / np.sum(pi)


def _float64_rates(model, space) -> tuple:
    """The rates in float64, or :class:`Trouble` when one is outside the normal float64 range."""
    names = ("lambda_invite", "lambda_non_invite", "mu_invite", "mu_non_invite", "mu_overload_invite",
             "mu_overload_non_invite")
    out = []
    for k, r in enumerate(space_rates(model, space)):
        name = names[k] if k < len(names) else "a rate times lambda_c / (lambda_1 + lambda_2)"
        try:
            f = float(r)
        except OverflowError:
            f = float("inf")
        if not (FLOAT64.tiny <= f <= FLOAT64.huge):
            raise Trouble(f"{name} lies outside the float64 range")
        out.append(f)
    return tuple(out)


def _check_dense(n: int, ctx) -> None:
    where = "in float64" if ctx.is_float64 else "with mpmath (--digits, or when float64 cannot be trusted)"
    _limits.check("dense_states", n, f"the two-flow chain is solved densely by GTH {where}: O(n^2) memory, "
                  "up to O(n^3) time")


def solve(model: TwoFlowModel, ctx=FLOAT64, solver: Solver | None = None, space=None) -> TwoFlowSolution:
    """Stationary law of the seed-001 chain in ``ctx`` (call inside ``with ctx:`` for mpmath).

    ``solver`` (default: the model's): GTH, SPARSE (float64 only; in mpmath GTH is used) or
    AUTO (module docstring). Dense solves are bounded by the limit ``dense_states``. ``space``: the chain
    (default :func:`space_of`; :func:`sequence_space` for the class-sequence chain under FIFO).
    """
    space = space_of(model) if space is None else space
    solver = model.solver if solver is None else solver
    if not ctx.is_float64 or solver is Solver.AUTO:
        small = space.size <= min(DENSE_FLOAT64, _limits.current().dense_states)
        solver = Solver.GTH if (not ctx.is_float64 or small) else Solver.SPARSE
    rates = _float64_rates(model, space) if ctx.is_float64 else tuple(ctx.num(r) for r in space_rates(model, space))
    if solver is Solver.SPARSE:
        pi = _stationary_sparse(space, rates)
    else:
        _check_dense(space.size, ctx)
        A = _dense(ctx, space.size, space.src, space.dst,
                   np.array(rates)[space.kind] if ctx.is_float64 else [rates[k] for k in space.kind.tolist()])
        pi = gth_stationary(ctx, A)
    return TwoFlowSolution(model, space, pi, ctx, solver, rates)


def exact_stationary(model: TwoFlowModel) -> list:
    """The stationary law as exact rationals (the one GTH in :class:`~qderive.numeric.backend.FractionContext`).

    States in the order of :func:`state_space`; small chains only (bounded by ``dense_states``).
    """
    ctx = FractionContext()
    sol = solve(model, ctx)
    return list(sol.pi)


class TwoFlowEngine(Engine):
    """The two-flow model under the precision policy: GTH/M-matrix eliminations are subtraction-free, so an
    a-priori guard (O(n^3) roundings) suffices and no second precision is needed."""

    confirm = False

    def compute(self, model, ctx, **options):
        laws = bool(set(LAW_KEYS) & options.get("include", frozenset()))

        def values():
            sol = solve(model, ctx)
            return {**sol.measures(), **(sol.laws() if laws else {})}

        if not ctx.is_float64:
            try:
                return values()
            except (BudgetError, ParameterError):
                raise
            except ValueError as exc:  # exact positive rates in mpmath: a chain without exit would be a bug
                raise NumericalError(f"two-flow: {exc}") from None
        try:
            with np.errstate(all="ignore"):
                return values()
        except (BudgetError, ParameterError):
            raise
        except (Trouble, ConvergenceError, ValueError) as exc:
            # a rate outside float64, an underflow that cut the chain (GTH: a state without exit), or the
            # sparse solver failing: the policy recomputes with mpmath -- if the dense solve can take the chain
            n, allowed = space_of(model).size, _limits.current().dense_states
            if n <= allowed:
                raise Trouble(str(exc)) from None
            raise NumericalError(
                f"two-flow: {exc} in float64, and the chain ({n} states) is too large for the dense mpmath solve "
                f"(limit dense-states = {allowed}): the ratios of the rates span too many orders of magnitude for "
                f"float64; raise the limit with --limit dense-states={n} if you mean it") from None

    def guard_digits(self, model) -> int:
        # GTH and the M-matrix solve: entrywise relative error O(n^3 eps) (O'Cinneide 1993; Alfa, Xue & Ye 2002)
        return digits_for(space_of(model).size ** 3) + 1

    def notes(self, model, values):
        return model.notes()
