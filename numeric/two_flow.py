"""Two message classes in a SIP proxy: the INVITE / non-INVITE threshold model (seed 001).

``spec/other-models.md`` section C. Class 1 = INVITE (Poisson lambda_1), class 2 =
non-INVITE (Poisson lambda_2); one server; exponential service with rate mu_c in
mode 0 and mu'_c in modes 1 and 2 (the rate of the message in service follows the
mode, which is harmless because service is memoryless). ``n`` counts the messages
in the system, the one in service included. Modes and switching (instantaneous, on
the count):

* mode 0 (normal) accepts both classes; mode 1 (partial overload) accepts class 2
  only and answers class 1 with 503; mode 2 (blocking) rejects everything;
* 0 -> 2 and 1 -> 2 when an accepted arrival makes n = H + 1 ("more than H");
* 2 -> 1 when a departure makes n = H;
* 1 -> 0 when a departure makes n = L - 1 ("fewer than L").

Algorithm 1 (:attr:`Algorithm.FIFO`) serves in arrival order. Algorithm 2
(:attr:`Algorithm.PRIORITY`) serves in arrival order in mode 0; in modes 1 and 2
the next message is the first class-2 message waiting, else the first class-1
message (non-preemptive: the message in service is never interrupted). The
discipline applied at a departure is the one of the mode in force *after* that
departure (a departure that makes n = L - 1 starts the next service in FIFO order).

Because the service rate depends on the class and FIFO order matters, the state is
``(mode, sequence of classes)`` with the first element in service: the chain has
about ``3 * 2^(H+1)`` states. The buffer R (``1 <= L < H``, ``R >= 1``) rejects an
arrival that finds n = R. Under the switching rules n never exceeds H + 1, so R binds
only when R <= H + 1: R = H + 1 is exactly the blocking state's count (no extra
loss), R > H + 1 is never reached (a note says so, the results are those of R = H + 1),
and R <= H fills the buffer before the overload threshold is crossed, so modes 1 and 2
are never entered (a note says so too). :meth:`TwoFlowModel.notes`.

Encoding. A sequence of length n is an integer ``bits`` whose bit i is 1 when the
i-th message (0 = in service) is class 2. Under priority, after a departure the
remaining sequence ``rest`` becomes ``(rest XOR lowbit(rest)) | 1`` (the first
class-2 message moves to the front, the class-1 messages before it shift back by
one): no loops over positions, so the transition table is built with numpy.

Solvers (:class:`Solver`): dense GTH (subtraction-free, any backend; small chains)
and a level-ordered sparse iterative solver (GMRES preconditioned by Gauss-Seidel,
then polished by positive-term Gauss-Seidel sweeps; float64; about 4 * 10^5 states at
H = 16 in a few seconds; sparse LU fills in and needs gigabytes there).

>>> from fractions import Fraction as F
>>> m = TwoFlowModel((F(6, 10), 2), (1, 5), 2, 4, 5, Algorithm.FIFO)
>>> sol = solve(m)
>>> round(sol.throughput(1), 6) == round(sol.accepted_rate(1), 6)
True
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np
import sympy as sp

from qderive.symbolic._exact import ParameterError, exact, require_positive

from .backend import FLOAT64, Backend
from .chains import stationary_gth
from .level_chains import absorption_times_gth, solve_level_m_matrix

__all__ = [
    "Algorithm",
    "Mode",
    "RateKind",
    "Solver",
    "TwoFlowModel",
    "StateSpace",
    "state_space",
    "TwoFlowSolution",
    "solve",
    "exact_stationary",
    "MAX_HIGH",
    "MAX_DENSE_STATES",
]

#: largest upper threshold accepted (the chain has ~3 * 2^(H+1) states)
MAX_HIGH = 18
#: AUTO uses dense GTH up to this many states in float64 (above: the sparse level solver)
MAX_DENSE_STATES = 1200
#: mpmath solutions are dense O(N^3) in mpf arithmetic: refuse beyond this size
MAX_MP_STATES = 800


class Algorithm(enum.Enum):
    """Service discipline: algorithm 1 (FIFO always) or 2 (non-INVITE first in modes 1, 2)."""

    FIFO = "fifo"
    PRIORITY = "priority"


class Mode(enum.IntEnum):
    """Server mode: what the proxy accepts."""

    NORMAL = 0  # accept both classes
    PARTIAL = 1  # accept class 2 only (INVITE answered with 503)
    BLOCKING = 2  # reject everything


class RateKind(enum.IntEnum):
    """Index of a transition's rate in :attr:`TwoFlowModel.rates` (lambda_1, lambda_2, mu_1, mu_2, mu'_1, mu'_2)."""

    ARRIVAL_1 = 0
    ARRIVAL_2 = 1
    SERVICE_1 = 2
    SERVICE_2 = 3
    OVERLOAD_SERVICE_1 = 4
    OVERLOAD_SERVICE_2 = 5


class Solver(enum.Enum):
    """How the stationary law is computed."""

    AUTO = "auto"  # GTH when small (or not float64), else the sparse level solver
    GTH = "gth"  # dense Grassmann-Taksar-Heyman, any backend, no subtractions
    SPARSE = "sparse"  # level-ordered GMRES + Gauss-Seidel (scipy.sparse), float64 only


def _pair(value, name: str) -> tuple[sp.Expr, sp.Expr]:
    try:
        a, b = value
    except (TypeError, ValueError):
        raise ParameterError(f"{name} = {value!r}: give two values (INVITE, non-INVITE)") from None
    return (require_positive(exact(a, f"{name}[INVITE]"), f"{name}[INVITE]"),
            require_positive(exact(b, f"{name}[non-INVITE]"), f"{name}[non-INVITE]"))


def _threshold(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, sp.Integer)):
        if isinstance(value, sp.Rational) and value.is_Integer:
            return int(value)
        raise ParameterError(f"{name} = {value!r}: must be an integer")
    return int(value)


@dataclass(frozen=True)
class TwoFlowModel:
    """The two-class threshold model of ``spec/other-models.md`` C (seed 001), validated on construction.

    ``arrival_rates = (lambda_1, lambda_2)`` (INVITE, non-INVITE), ``service_rates =
    (mu_1, mu_2)`` in mode 0, ``overload_service_rates = (mu'_1, mu'_2)`` in modes 1
    and 2 (default: the mode-0 rates); thresholds L = ``low``, H = ``high``, R =
    ``capacity`` with ``1 <= L < H`` and ``R >= 1`` (an arrival finding n = R is
    rejected; see :meth:`notes`). All rates exact and > 0.
    """

    arrival_rates: tuple
    service_rates: tuple
    low: int
    high: int
    capacity: int
    algorithm: Algorithm = Algorithm.FIFO
    overload_service_rates: tuple | None = None

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - frozen dataclass normalisation
        set_("arrival_rates", _pair(self.arrival_rates, "arrival rates"))
        set_("service_rates", _pair(self.service_rates, "service rates"))
        over = self.service_rates if self.overload_service_rates is None else self.overload_service_rates
        set_("overload_service_rates", _pair(over, "overload service rates"))
        L = _threshold(self.low, "L")
        H = _threshold(self.high, "H")
        R = _threshold(self.capacity, "R")
        set_("low", L)
        set_("high", H)
        set_("capacity", R)
        if not isinstance(self.algorithm, Algorithm):
            raise ParameterError(f"algorithm = {self.algorithm!r}: must be one of {[a.value for a in Algorithm]}")
        if not (1 <= L < H and R >= 1):
            raise ParameterError(f"thresholds must satisfy 1 <= L < H and R >= 1, got L={L}, H={H}, R={R}")
        if H > MAX_HIGH:
            raise ParameterError(
                f"H = {H}: must be <= {MAX_HIGH} (the state carries the class sequence, about 3 * 2^(H+1) states)")

    @property
    def rates(self) -> tuple[sp.Expr, ...]:
        """Exact rates indexed by :class:`RateKind`: (lambda_1, lambda_2, mu_1, mu_2, mu'_1, mu'_2)."""
        return (*self.arrival_rates, *self.service_rates, *self.overload_service_rates)

    @property
    def capacity_binds(self) -> bool:
        """True when R <= H + 1: the count never exceeds H + 1, so a larger buffer is never reached."""
        return self.capacity <= self.high + 1

    @property
    def effective_capacity(self) -> int:
        """min(R, H + 1): the largest reachable count (the chain is the same for every R >= H + 1)."""
        return min(self.capacity, self.high + 1)

    @property
    def overload_reachable(self) -> bool:
        """False when R <= H: the buffer fills before n can exceed H, modes 1 and 2 never occur."""
        return self.capacity > self.high

    def notes(self) -> list[str]:
        """Messages for the user about R: it does not bind when R > H + 1; it pre-empts overload when R <= H."""
        L, H, R = self.low, self.high, self.capacity
        if R > H + 1:
            return [
                f"R = {R} does not bind: under the seed's rules an arrival that makes n = H + 1 = {H + 1} "
                f"switches to blocking mode, so the count never exceeds H + 1 and the results are those of "
                f"R = {H + 1} ({R - H - 1} buffer places are never used)"
            ]
        if R <= H:
            return [
                f"R = {R} <= H = {H}: the buffer is full (arrivals rejected) before the count can exceed H, so "
                f"the overload modes 1 and 2 are never entered; p_mode1 = p_mode2 = 0 and there is no "
                f"return time (reported as null)"
            ]
        return []

    def _repr_latex_(self) -> str:
        """Kendall-style notation and parameters, rendered by Jupyter."""
        l1, l2 = (sp.latex(x) for x in self.arrival_rates)
        m1, m2 = (sp.latex(x) for x in self.service_rates)
        o1, o2 = (sp.latex(x) for x in self.overload_service_rates)
        return (f"$M_2|M_2|1|R$ with threshold control ({self.algorithm.value}): "
                f"$\\lambda = ({l1}, {l2})$, $\\mu = ({m1}, {m2})$, $\\mu' = ({o1}, {o2})$, "
                f"$L, H, R = {self.low}, {self.high}, {self.capacity}$")

    def __str__(self) -> str:
        return (f"two-flow SIP server ({self.algorithm.value}): lambda = {self.arrival_rates}, "
                f"mu = {self.service_rates}, mu' = {self.overload_service_rates}, "
                f"L, H, R = {self.low}, {self.high}, {self.capacity}")

    def parameters(self) -> dict:
        """Exact parameters, for reports."""
        return {
            "lambda_invite": self.arrival_rates[0], "lambda_non_invite": self.arrival_rates[1],
            "mu_invite": self.service_rates[0], "mu_non_invite": self.service_rates[1],
            "mu_overload_invite": self.overload_service_rates[0],
            "mu_overload_non_invite": self.overload_service_rates[1],
            "L": self.low, "H": self.high, "R": self.capacity, "algorithm": self.algorithm.value,
        }


# ---------------------------------------------------------------------------------------
# State space and transition table (depends only on L, H, min(R, H + 1) and the algorithm)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateSpace:
    """Reachable states ``(mode, length, bits)`` and the transition table ``src -> dst`` with its :class:`RateKind`.

    ``bits`` bit i = 1 when position i (0 = in service) holds a class-2 message.
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
    _lookup: dict = field(repr=False, compare=False)

    @property
    def size(self) -> int:
        """Number of reachable states."""
        return len(self.mode)

    def sequence(self, i: int) -> tuple[int, ...]:
        """The classes (1 or 2) of state i, first = in service."""
        b, n = int(self.bits[i]), int(self.length[i])
        return tuple(1 + ((b >> k) & 1) for k in range(n))

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

    def accepts(self, cls: int) -> np.ndarray:
        """States where an arriving class-``cls`` message is accepted: its mode accepts it and n < R."""
        by_mode = (self.mode == Mode.NORMAL) if cls == 1 else (self.mode != Mode.BLOCKING)
        return by_mode & (self.length < self.capacity)

    @cached_property
    def in_service(self) -> np.ndarray:
        """Class in service (1, 2) or 0 when empty."""
        return np.where(self.length == 0, 0, 1 + (self.bits & 1))


def _candidate_blocks(L: int, H: int, R: int):
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
    """Reachable states and transitions of the seed-001 chain (``spec/other-models.md`` C).

    Transitions out of ``(m, s)`` with ``n = len(s)``:

    * arrival of class c (rate lambda_c) if n < R and (m = 0, or m = 1 and c = 2):
      ``(m', s + (c,))`` with m' = 2 when n + 1 = H + 1, else m;
    * departure (rate mu_{s_0} in mode 0, mu'_{s_0} in modes 1, 2): m' = 1 if m = 2;
      m' = 0 if m = 1 and n - 1 = L - 1; else m. The rest ``s[1:]`` is reordered by
      the discipline of m' (priority: first class 2 to the front).

    Candidates are enumerated per block with numpy; the reachable set from the empty
    state is found by frontier expansion (the chain restricted to it is irreducible:
    every state empties by departures).
    """
    L, H, R = low, high, min(capacity, high + 1)
    blocks, offset, total = _candidate_blocks(L, H, R)
    src, dst, kind = [], [], []
    for m, n in blocks:
        bits = np.arange(1 << n, dtype=np.int64)
        here = offset[(m, n)] + bits
        # arrivals
        if m != 2 and n < R:
            m_up = 2 if n + 1 == H + 1 else m
            for c in ((1, 2) if m == 0 else (2,)):
                src.append(here)
                dst.append(offset[(m_up, n + 1)] + (bits | ((c - 1) << n)))
                kind.append(np.full(bits.shape, RateKind.ARRIVAL_1 + c - 1, dtype=np.int8))
        # departures
        if n >= 1:
            m_down = 1 if m == 2 else (0 if (m == 1 and n - 1 == L - 1) else m)
            rest = bits >> 1
            if algorithm is Algorithm.PRIORITY and m_down != 0:
                low_bit = rest & -rest
                rest = np.where(rest != 0, (rest ^ low_bit) | 1, rest)
            first = bits & 1
            base = RateKind.SERVICE_1 if m == 0 else RateKind.OVERLOAD_SERVICE_1
            src.append(here)
            dst.append(offset[(m_down, n - 1)] + rest)
            kind.append((base + first).astype(np.int8))
    src = np.concatenate(src)
    dst = np.concatenate(dst)
    kind = np.concatenate(kind)

    # reachable set from the empty state (0, ())
    reached = np.zeros(total, dtype=bool)
    reached[offset[(0, 0)]] = True
    while True:
        new = np.zeros(total, dtype=bool)
        new[dst[reached[src]]] = True
        new &= ~reached
        if not new.any():
            break
        reached |= new
    keep = reached[src]
    src, dst, kind = src[keep], dst[keep], kind[keep]
    new_index = np.full(total, -1, dtype=np.int64)
    new_index[reached] = np.arange(int(reached.sum()))

    mode = np.empty(total, dtype=np.int8)
    length = np.empty(total, dtype=np.int64)
    bits_all = np.empty(total, dtype=np.int64)
    for m, n in blocks:
        sl = slice(offset[(m, n)], offset[(m, n)] + (1 << n))
        mode[sl], length[sl], bits_all[sl] = m, n, np.arange(1 << n)
    mode, length, bits_all = mode[reached], length[reached], bits_all[reached]
    lookup = {(int(a), int(b), int(c)): i for i, (a, b, c) in enumerate(zip(mode, length, bits_all))}
    arrays = (mode, length, bits_all, new_index[src], new_index[dst], kind)
    for a in arrays:  # shared through the cache: read-only
        a.setflags(write=False)
    return StateSpace(L, H, R, algorithm, *arrays, lookup)


# ---------------------------------------------------------------------------------------
# Solution and measures
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TwoFlowSolution:
    """Stationary law ``pi`` of a :class:`TwoFlowModel` and the measures computed from it.

    Every probability and rate is a sum of positive terms over states (no ``1 - sum``).
    """

    model: TwoFlowModel
    space: StateSpace
    pi: np.ndarray
    bk: Backend
    solver: Solver

    @cached_property
    def _rates(self):
        return [self.bk.num(r) for r in self.model.rates]

    def _sum(self, mask) -> object:
        with self.bk:
            return self.bk.fsum(self.pi[mask])

    def mode_probability(self, mode: int):
        """P(mode = m) = sum of pi over the states of mode m."""
        return self._sum(self.space.mode == int(mode))

    def rejection_probability(self, cls: int):
        """P(an arriving class-c message is rejected, 503) by PASTA: sum of pi over the states that refuse c.

        INVITE: modes 1 and 2 (and n = R); non-INVITE: mode 2 (and n = R). A direct sum of
        positive terms, never ``1 - P(accept)``.
        """
        return self._sum(~self.space.accepts(cls))

    def accepted_rate(self, cls: int):
        """lambda_c P(accept c): lambda_1 P(mode 0) for INVITE, lambda_2 (P(mode 0) + P(mode 1)) for non-INVITE.

        (For R <= H: lambda_c P(n < R).)
        """
        with self.bk:
            return self._rates[cls - 1] * self._sum(self.space.accepts(cls))

    def throughput(self, cls: int):
        """Departure rate of class c: sum over states with c in service of pi(s) * (mu_c or mu'_c by mode)."""
        sp_ = self.space
        with self.bk:
            normal = self._rates[RateKind.SERVICE_1 + cls - 1]
            over = self._rates[RateKind.OVERLOAD_SERVICE_1 + cls - 1]
            busy = sp_.in_service == cls
            return (normal * self.bk.fsum(self.pi[busy & (sp_.mode == Mode.NORMAL)])
                    + over * self.bk.fsum(self.pi[busy & (sp_.mode != Mode.NORMAL)]))

    def mean_number(self, cls: int | None = None):
        """Mean number of class-c messages in the system (both classes when ``cls`` is None)."""
        sp_ = self.space
        counts = {1: sp_.length - sp_.class2_count, 2: sp_.class2_count, None: sp_.length}[cls]
        with self.bk:
            w = counts.astype(np.float64) if self.bk.is_float64 else np.array([int(c) for c in counts], dtype=object)
            return self.bk.dot(self.pi, w)

    def mean_sojourn(self, cls: int | None = None):
        """Mean sojourn of an accepted message by Little: N_c / (accepted rate of c); total: N / sum of the accepted rates."""
        with self.bk:
            if cls is None:
                return self.mean_number() / (self.accepted_rate(1) + self.accepted_rate(2))
            return self.mean_number(cls) / self.accepted_rate(cls)

    # -- return time to the normal mode --------------------------------------------------
    def _exit_rates(self):
        q = self.bk.zeros(self.space.size)
        with self.bk:
            for k, r in enumerate(self._rates):
                sel = self.space.kind == k
                if self.bk.is_float64:
                    np.add.at(q, self.space.src[sel], r)
                else:
                    for i in self.space.src[sel]:
                        q[i] += r
        return q

    def _entry_flows(self):
        """Stationary flow into each overload state from mode 0: sum over 0 -> 2 transitions of pi(s) q(s, s')."""
        sp_ = self.space
        sel = (sp_.mode[sp_.src] == Mode.NORMAL) & (sp_.mode[sp_.dst] != Mode.NORMAL)
        flows = {}
        with self.bk:
            for s, d, k in zip(sp_.src[sel], sp_.dst[sel], sp_.kind[sel]):
                flows[int(d)] = flows.get(int(d), 0) + self.pi[s] * self._rates[k]
        return flows

    def overload_entry_rate(self):
        """nu = rate of overload periods = total stationary flow from mode 0 into mode 2."""
        with self.bk:
            return self.bk.fsum(list(self._entry_flows().values()))

    def renewal_return_time(self):
        """Mean overload period by renewal-reward: (P(mode 1) + P(mode 2)) / nu (the check of the first-passage value).

        None when overload never occurs (R <= H).
        """
        if not self.space.has_overload:
            return None
        with self.bk:
            return (self.mode_probability(1) + self.mode_probability(2)) / self.overload_entry_rate()

    def mean_return_time(self):
        """Mean return time to mode 0: sum_s alpha(s) h(s), alpha = entry law into mode 2, h = mean first-passage times.

        h solves (-Q_OO) h = 1 on the overload states O (modes 1, 2); alpha(s) is the
        stationary flow from mode 0 into s, normalised (the Palm law of an overload period).
        None when overload never occurs (R <= H).
        """
        if not self.space.has_overload:
            return None
        flows = self._entry_flows()
        h = self._hitting_times_sparse() if self.solver is Solver.SPARSE else self._hitting_times_dense()
        with self.bk:
            total = self.bk.fsum(list(flows.values()))
            return self.bk.fsum([f * h[s] for s, f in flows.items()]) / total

    def _hitting_times_dense(self) -> dict:
        """Mean first-passage times into mode 0 from every overload state (GTH elimination, positive terms)."""
        sp_ = self.space
        over = np.flatnonzero(sp_.mode != Mode.NORMAL)
        pos = np.full(sp_.size, -1)
        pos[over] = np.arange(len(over))
        m = len(over)
        with self.bk:
            W = np.zeros((m, m)) if self.bk.is_float64 else np.full((m, m), self.bk.num(0), dtype=object)
            e = self.bk.zeros(m)
            for s, d, k in zip(sp_.src, sp_.dst, sp_.kind):
                if pos[s] < 0:
                    continue
                if pos[d] >= 0:
                    W[pos[s], pos[d]] += self._rates[k]
                else:
                    e[pos[s]] += self._rates[k]
            h = absorption_times_gth(W, e, [1] * m, self.bk)
        return {int(s): h[pos[s]] for s in over}

    def _hitting_times_sparse(self) -> dict:
        """The same first-passage times for large chains: level-ordered GMRES + Gauss-Seidel (float64)."""
        import scipy.sparse as sps

        sp_ = self.space
        over = np.flatnonzero(sp_.mode != Mode.NORMAL)
        pos = np.full(sp_.size, -1)
        pos[over] = np.arange(len(over))
        rates = np.array([float(r) for r in self._rates])
        q = self._exit_rates()
        sel = (pos[sp_.src] >= 0) & (pos[sp_.dst] >= 0)
        m = len(over)
        W = sps.csr_matrix((rates[sp_.kind[sel]], (pos[sp_.src[sel]], pos[sp_.dst[sel]])), shape=(m, m))
        h = solve_level_m_matrix(W, q[over], sp_.length[over], np.ones(m))
        return {int(s): float(h[pos[s]]) for s in over}


def _generator_dense(space: StateSpace, rates, bk: Backend) -> np.ndarray:
    n = space.size
    Q = np.zeros((n, n)) if bk.is_float64 else np.full((n, n), bk.num(0), dtype=object)
    with bk:
        for s, d, k in zip(space.src, space.dst, space.kind):
            Q[s, d] += rates[k]
    return Q


def _stationary_sparse(space: StateSpace, rates) -> np.ndarray:
    """pi Q = 0 for large chains: fix pi(empty) = 1 and solve q_i pi_i = sum_j pi_j q_ji for the rest.

    ``(diag(q) - W^T) x = w_root`` is a nonsingular M-matrix system linking adjacent
    levels n only: :func:`~qderive.numeric.level_chains.solve_level_m_matrix`.
    """
    import scipy.sparse as sps

    n = space.size
    r = np.array(rates, dtype=np.float64)
    vals = r[space.kind]
    q = np.zeros(n)
    np.add.at(q, space.src, vals)
    WT = sps.csr_matrix((vals, (space.dst, space.src)), shape=(n, n))  # WT[i, j] = q(j -> i)
    root = space.index(0, ())
    rest = np.setdiff1d(np.arange(n), [root])
    x = solve_level_m_matrix(WT[rest][:, rest], q[rest], space.length[rest], WT[rest][:, [root]].toarray().ravel())
    pi = np.empty(n)
    pi[root] = 1.0
    pi[rest] = x
    return pi / np.sum(pi)


def solve(model: TwoFlowModel, bk: Backend = FLOAT64, solver: Solver = Solver.AUTO) -> TwoFlowSolution:
    """Stationary law of the seed-001 chain (``spec/other-models.md`` C) and its measures.

    ``Solver.GTH``: dense GTH (``numeric/chains.py``), float64 or mpmath, every entry
    with full relative accuracy. ``Solver.SPARSE``: level-ordered GMRES + Gauss-Seidel
    (:func:`~qderive.numeric.level_chains.solve_level_m_matrix`), float64 only.
    ``Solver.AUTO``: GTH for mpmath backends and for float64 chains up to
    :data:`MAX_DENSE_STATES` states, the sparse solver above.
    """
    space = state_space(model.low, model.high, model.effective_capacity, model.algorithm)
    if solver is Solver.AUTO:
        solver = Solver.GTH if (not bk.is_float64 or space.size <= MAX_DENSE_STATES) else Solver.SPARSE
    if solver is Solver.SPARSE and not bk.is_float64:
        raise ParameterError("the sparse solver works in float64 only: drop --digits or use the GTH solver")
    if not bk.is_float64 and space.size > MAX_MP_STATES:
        raise ParameterError(
            f"H = {model.high}: the chain has {space.size} states; the mpmath solution (dense, O(N^3)) is limited "
            f"to {MAX_MP_STATES} states (H <= 7): use float64 for larger thresholds")
    with bk:
        rates = [bk.num(r) for r in model.rates]
        if solver is Solver.SPARSE:
            pi = _stationary_sparse(space, rates)
        else:
            pi = stationary_gth(_generator_dense(space, rates, bk), bk)
    return TwoFlowSolution(model, space, pi, bk, solver)


def exact_stationary(model: TwoFlowModel) -> list[sp.Rational]:
    """The stationary law as exact rationals (small chains): pi Q = 0, sum pi = 1 over QQ.

    Solved with SymPy's ``DomainMatrix`` over QQ; index order of :func:`state_space`.
    """
    space = state_space(model.low, model.high, model.effective_capacity, model.algorithm)
    return stationary_exact(space, model.rates, sp.QQ)


def stationary_exact(space: StateSpace, rates, domain) -> list:
    """Solve pi Q = 0, sum pi = 1 over an exact ``domain`` (QQ, or a fraction field of the rate symbols).

    The balance equation of the empty state is replaced by the normalisation.
    Returns domain elements converted to SymPy expressions.
    """
    from sympy.polys.matrices import DomainMatrix

    n = space.size
    conv = [domain.from_sympy(exact(r, "rate")) for r in rates]
    rows = [[domain.zero] * n for _ in range(n)]  # rows = equations (columns of Q)
    for s, d, k in zip(space.src, space.dst, space.kind):
        rows[d][s] += conv[k]
        rows[s][s] -= conv[k]
    root = space.index(0, ())
    rows[root] = [domain.one] * n
    rhs = [[domain.zero] for _ in range(n)]
    rhs[root] = [domain.one]
    A = DomainMatrix(rows, (n, n), domain)
    b = DomainMatrix(rhs, (n, 1), domain)
    x = A.lu_solve(b)
    return [domain.to_sympy(x[i, 0].element) for i in range(n)]
