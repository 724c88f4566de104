"""M[X]/G/1/r with multiple vacations: the finite waiting room through the infinite-room recursion.

The thesis's central result (Sopin 2013, chapter 2; ``spec/chapter2.md`` section 2):
for every load rho_bar (also >= 1) the embedded law of the system with r waiting
places is the renormalised truncation of the *unnormalised* infinite-room sequence
q~ (Statement 1), and the time-stationary law is the truncation of p~ with one
corrected top term (Theorem 1.2, Corollary 1). This module is the numeric engine:

* :func:`unnormalised_embedded` -- q~_0..q~_n from the cut recursion (2b)
  (``qderive.numeric.cut.cut_recursion``; q~_0 = 1), every term positive;
* :func:`unnormalised_time` -- p~_0..p~_n of Theorem 1.2 / (4) with C = f_1;
* :class:`FiniteSweep` -- every finite-r measure, incremental in r: the sequences
  and q~ are computed once up to the largest r (doubling), each further r costs O(r);
* :func:`finite_measures` -- the measures of one :class:`VacationQueue`.

Both entry points run the same code in float64 and in mpmath (``qderive.numeric.backend``).
The stable pipeline of the spec's numerical notes (section 4) is followed throughout:
tails as sums of positive terms, p^r_r from (10) with Ubar / Vbar (no ``1 - sum``),
the loss from the direct sum of Theorem 1.1 with pi_j = E(X - (r - j))^+ / l_1.

Variants beside the thesis (issue 3):

* **admission** :class:`Admission.PARTIAL` (the thesis: a batch of k finding j
  waiting admits min(k, r - j)) or :class:`Admission.WHOLE` (a batch that does not fit
  is rejected entirely). Under whole admission the customers admitted during one
  service are no longer a function of the arrival count: the queue evolves batch by
  batch with a blocking rule that depends on the room left. The engine follows the
  *room* d = r - j, whose per-batch kernel H (d -> d - k if k <= d, else d) does not
  depend on r, and mixes its powers with the Poisson-mixing weights:
  R = sum_K beta_K H^K (end of service), U = (1/lambda) sum_K tau_K H^K (level times).
  Statement 1 (truncation) no longer holds; the embedded chain is still skip-free to
  the left, so the level-crossing recursion solves it without subtractions.
* **no vacation** (``vacation=None``): the classic M[X]/G/1/r; the idle server waits
  for the next batch, whose first customer enters service at once (that batch finds
  r + 1 places). The embedded epochs are departures. The "start period" after an
  empty departure is the idle time plus one service that starts with X - 1 waiting,
  so C(z) = A(z) L(z) / z and (2b) applies unchanged; r = 0 is allowed.

>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Exponential
>>> from qderive.symbolic.batches import Constant
>>> from qderive.numeric.backend import FLOAT64
>>> m = VacationQueue(lam=Fraction(1, 2), batch=Constant(1), service=Exponential(1),
...                   vacation=None, capacity=2)
>>> round(finite_measures(m, FLOAT64).loss_probability, 12)   # M/M/1/3: rho^3 (1 - rho) / (1 - rho^4)
0.066666666667
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from functools import singledispatch

import mpmath
import numpy as np
import sympy as sp

from qderive.symbolic import batches as _b
from qderive.symbolic import laws as _t
from qderive.symbolic._exact import ParameterError, exact, require_positive

from .backend import Backend
from .cut import cut_recursion
from .sequences import arrival_counts, batch_pmf_tail, count_sequence

__all__ = [
    "Admission",
    "VacationQueue",
    "FiniteMeasures",
    "FiniteSweep",
    "finite_measures",
    "unnormalised_embedded",
    "unnormalised_time",
    "batch_excess",
]


class Admission(enum.Enum):
    """How a batch that does not fit in the waiting room is treated."""

    #: the thesis: fill the waiting room, lose the rest of the batch
    PARTIAL = "partial"
    #: a batch that does not fit entirely is rejected entirely
    WHOLE = "whole"


def _min_batch_size(batch) -> int:
    if isinstance(batch, _b.Constant):
        return batch.n
    if isinstance(batch, _b.FinitePMF):
        return batch.probs[0][0]
    return 1


@dataclass(frozen=True)
class VacationQueue:
    """M[X]/G/1/r with multiple vacations (or none): Sopin 2013, chapter 2 (``spec/chapter2.md`` section 0).

    ``lam`` batch rate (exact), ``batch`` batch-size law, ``service`` / ``vacation``
    time laws (``vacation=None``: no vacations, classic M[X]/G/1/r), ``capacity`` the
    waiting room r (the customer in service is not counted; r >= 1 with vacations,
    r >= 0 without), ``admission`` partial (the thesis) or whole.
    Use :meth:`from_load` to give the offered load rho_bar = lambda l_1 b_1 instead.
    """

    lam: sp.Expr
    batch: _b.BatchLaw
    service: _t.TimeLaw
    vacation: _t.TimeLaw | None
    capacity: int
    admission: Admission = Admission.PARTIAL

    def __post_init__(self):
        object.__setattr__(self, "lam", require_positive(exact(self.lam, "lambda"), "lambda"))
        if not isinstance(self.batch, _b.BatchLaw):
            raise ParameterError(f"batch = {self.batch!r}: must be a batch-size law (qderive.symbolic.batches)")
        if not isinstance(self.service, _t.TimeLaw):
            raise ParameterError(f"service = {self.service!r}: must be a time law (qderive.symbolic.laws)")
        if self.vacation is not None and not isinstance(self.vacation, _t.TimeLaw):
            raise ParameterError(f"vacation = {self.vacation!r}: must be a time law or None (no vacations)")
        if not isinstance(self.admission, Admission):
            raise ParameterError(f"admission = {self.admission!r}: must be Admission.PARTIAL or Admission.WHOLE")
        r = self.capacity
        if isinstance(r, bool) or not isinstance(r, (int, sp.Integer)):
            raise ParameterError(f"capacity = {r!r}: must be an integer (the number of waiting places r)")
        r = int(r)
        lowest = 0 if self.vacation is None else 1
        if r < lowest:
            why = "" if self.vacation is None else " with vacations (nobody could wait during a vacation)"
            raise ParameterError(f"capacity = {r}: must be >= {lowest}{why}")
        object.__setattr__(self, "capacity", r)
        if self.admission is Admission.WHOLE:
            room = r if self.vacation is not None else r + 1
            smallest = _min_batch_size(self.batch)
            if smallest > room:
                raise ParameterError(
                    f"capacity = {r}: under whole admission no batch ever fits (smallest batch {smallest} > "
                    f"{room} places); increase the capacity"
                )

    @classmethod
    def from_load(cls, load, batch, service, vacation, capacity, admission=Admission.PARTIAL) -> "VacationQueue":
        """The model with offered load rho_bar = lambda l_1 b_1, i.e. lambda = rho_bar / (l_1 b_1)."""
        load = require_positive(exact(load, "load"), "load")
        return cls(load / (batch.mean * service.moment(1)), batch, service, vacation, capacity, admission)

    @property
    def rho_bar(self) -> sp.Expr:
        """Offered load rho_bar = lambda l_1 b_1 (``spec/chapter2.md`` section 0)."""
        return self.lam * self.batch.mean * self.service.moment(1)

    @property
    def alpha_bar(self) -> sp.Expr:
        """alpha_bar = lambda l_1 f_1 (0 without vacations)."""
        if self.vacation is None:
            return sp.Integer(0)
        return self.lam * self.batch.mean * self.vacation.moment(1)

    def with_capacity(self, r: int) -> "VacationQueue":
        """The same model with r waiting places."""
        return replace(self, capacity=r)

    def _repr_latex_(self) -> str:
        vac = "multiple vacations" if self.vacation is not None else "no vacations"
        return (f"$M^{{[X]}}|G|1|{self.capacity}$ with {vac}, {self.admission.value} admission: "
                f"$\\lambda = {sp.latex(self.lam)}$, $\\bar\\rho = {sp.latex(self.rho_bar)}$")


@dataclass(frozen=True)
class FiniteMeasures:
    """Measures of the finite-r system (``spec/chapter2.md`` section 2), backend numbers.

    ``q`` embedded law q^r_0..q^r_r (Statement 1); ``p`` time-stationary queue-length
    law p^r_0..p^r_r ((9), (10)); ``idle_probability`` P^r_e, the server is not serving
    (on vacation, or idle without vacations) (Statement 2); ``loss_probability`` per
    customer (Theorem 1.1); ``batch_blocking_probability`` an arriving batch loses
    all its customers; ``mean_queue_length`` N^r = sum j p^r_j; ``mean_wait`` of an
    accepted customer W^r = N^r / throughput; ``mean_number_in_system`` N^r + 1 - P^r_e;
    ``throughput`` served customers per unit time = (1 - P^r_e) / b_1.
    """

    capacity: int
    q: np.ndarray
    p: np.ndarray
    idle_probability: object
    loss_probability: object
    batch_blocking_probability: object
    mean_queue_length: object
    mean_wait: object
    mean_number_in_system: object
    throughput: object


# --------------------------------------------------------------------------------------
# Batch excesses e_m = E (X - m)^+ as positive terms
# --------------------------------------------------------------------------------------


def batch_excess(batch, n: int, bk: Backend) -> np.ndarray:
    """e_m = E (X - m)^+ = sum_{i >= m} P(X > i) for m = 0..n, as positive terms.

    pi_j = e_{r-j} / l_1 is the loss of a customer of a batch finding j waiting
    (Theorem 1.1 (12), ``spec/chapter2.md`` section 2). Geometric: e_m = l_1 (1-p)^m
    (section 3 of the spec); bounded batches: finite exact sums; 1 + Poisson: Poisson
    tails. Call inside ``with bk:``.
    """
    return _excess(batch, n, bk)


@singledispatch
def _excess(batch, n, bk):
    if batch.max_size is None:
        raise ParameterError(f"no numeric batch excesses for {batch!r}: choose a concrete batch law")
    top = batch.max_size
    sizes = [(i, batch.pmf(i)) for i in range(1, top + 1)]
    out = bk.zeros(n + 1)
    for m in range(min(n, top) + 1):  # e_m = 0 for m >= max size
        out[m] = bk.num(sp.Add(*[(i - m) * p for i, p in sizes if i > m]))
    return out


@_excess.register
def _(batch: _b.Geometric, n, bk):
    q = bk.num(1 - batch.p)
    mean = bk.num(batch.mean)
    return bk.array([mean * q**m for m in range(n + 1)])


@_excess.register
def _(batch: _b.ShiftedPoisson, n, bk):
    # X = 1 + Y, Y ~ Poisson(nu): e_0 = 1 + nu, e_m = E (Y - (m-1))^+ = P(Y > m-1) + sum_{i > m-1} P(Y > i).
    # Y is the number of unit-rate arrivals in the constant time nu, so its tails come from the
    # positive-term count sequence of ``qderive.numeric.sequences``.
    out = bk.zeros(n + 1)
    out[0] = bk.num(batch.mean)
    if batch.nu == 0 or n == 0:
        return out
    cs = count_sequence(_t.Deterministic(batch.nu), sp.Integer(1), n, bk)
    for m in range(1, n + 1):
        out[m] = cs.tail[m - 1] + cs.tail2[m - 1]
    return out


# --------------------------------------------------------------------------------------
# Start period: what happens after the chain is found empty at an embedded epoch
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sequences:
    """Coefficient sequences for indices 0..n of the partial-admission chain.

    Service: a_0, abar_m = P(more than m arrive), u_m, Ubar_m. Start period (after an
    empty epoch): cbar_m, level times w_m (arrivals see the ordinary r places) and
    wbar_m = sum_{i >= m} w_i, the idle time (arrivals see r + 1 places: the server
    takes one), the mean not-serving time (the thesis's normaliser f_1), its mean
    length and its number of services (0 or 1).
    """

    n: int
    a0: object
    abar: np.ndarray
    u: np.ndarray
    ubar: np.ndarray
    cbar: np.ndarray
    w: np.ndarray
    wbar: np.ndarray
    idle: object
    not_serving: object
    mean: object
    services: int
    b1: object


def _conv(x, y, n: int) -> np.ndarray:
    """First n+1 terms of the convolution of x and y (both of length >= n+1)."""
    return np.convolve(x[: n + 1], y[: n + 1])[: n + 1]


def _sequences(laws, n: int, bk: Backend) -> _Sequences:
    sv = arrival_counts(laws.service, laws.batch, laws.lam, n, bk)
    b1 = bk.num(laws.service.moment(1))
    if laws.vacation is not None:
        # (2b) with the vacation counts c_n, and (9)/(10) with v_n, Vbar_n
        vc = arrival_counts(laws.vacation, laws.batch, laws.lam, n, bk)
        f1 = bk.num(laws.vacation.moment(1))
        return _Sequences(n, sv.a[0], sv.abar, sv.u, sv.ubar, vc.abar, vc.u, vc.ubar, bk.num(0), f1, f1, 0, b1)
    # No vacation: idle (mean 1/lambda), then one service starting with X - 1 waiting.
    #   cbar_j = P(X - 1 + N > j) = sum_{k<=j} l_{k+1} abar_{j-k} + P(X > j+1)
    #   w_j    = sum_{k<=j} l_{k+1} u_{j-k}
    #   wbar_m = sum_{k<m} l_{k+1} Ubar_{m-k} + P(X > m) b_1   (m >= 1),  wbar_0 = b_1
    pmf, lbar = batch_pmf_tail(laws.batch, n + 1, bk)
    shifted = pmf[1 : n + 2]  # l_{k+1}, k = 0..n
    cbar = _conv(shifted, sv.abar, n) + lbar[1 : n + 2]
    w = _conv(shifted, sv.u, n)
    wbar = bk.zeros(n + 1)
    wbar[0] = b1
    if n >= 1:
        wbar[1:] = _conv(shifted, sv.ubar[1:], n - 1) + lbar[1 : n + 1] * b1
    idle = 1 / bk.num(laws.lam)
    return _Sequences(n, sv.a[0], sv.abar, sv.u, sv.ubar, cbar, w, wbar, idle, idle, idle + b1, 1, b1)


# --------------------------------------------------------------------------------------
# q~ with overflow control (float64, rho_bar > 1: q~ grows geometrically)
# --------------------------------------------------------------------------------------

_RESCALE_AT = 2.0**600


def _extend_q(seq: _Sequences, q: np.ndarray | None, n: int, bk: Backend) -> tuple[np.ndarray, int]:
    """Scaled q~_0..q~_n and the exponent s with q~ = scaled * 2^s, continuing ``q``.

    (2b) is linear and homogeneous in (q~_0, ..., q~_j), so the computed prefix may be
    multiplied by a power of two at any point without changing the remaining ratios.
    In float64 the prefix is rescaled whenever it exceeds 2^600; mpmath has no
    exponent limit and is never rescaled.
    """
    if not bk.is_float64:
        return cut_recursion(seq.a0, seq.abar, seq.cbar, n, bk, start=q), 0
    shift = 0
    done = 0 if q is None else len(q)
    step = 32
    while done < n + 1:
        target = min(n, max(done, 1) - 1 + step)
        trial = cut_recursion(seq.a0, seq.abar, seq.cbar, target, bk, start=q)
        if not np.all(np.isfinite(trial)):
            if step == 1:
                raise ParameterError("the unnormalised embedded law overflows float64 in one step; use --digits")
            step = max(1, step // 8)
            continue
        q = trial
        done = len(q)
        top = float(np.max(q))
        if top > _RESCALE_AT:
            e = int(np.frexp(top)[1])
            q = np.ldexp(q, -e)
            shift += e
    return q, shift


def unnormalised_embedded(laws, n: int, bk: Backend) -> np.ndarray:
    """q~_0..q~_n (q~_0 = 1): the unnormalised embedded law, partial admission.

    Level-crossing form (2b) of the balance equations (2) (``spec/chapter2.md``
    section 1): a_0 q~_{j+1} = q~_0 cbar_j + sum_{i=1}^{j} q~_i abar_{j-i+1}. Defined for
    every load; q_j = q_0 q~_j for rho_bar < 1 (q_0 = (1 - rho_bar)/(1 - rho_bar + alpha_bar),
    (3)) and q^r_j = q~_j / sum_{i<=r} q~_i for every load (Statement 1).

    ``laws`` is any object with attributes ``lam`` (exact batch rate), ``batch``,
    ``service`` and ``vacation`` (``None``: no vacations, the chain of departures with
    C(z) = A(z) L(z) / z), e.g. a :class:`VacationQueue`. In float64 the values of an
    overloaded queue grow geometrically and overflow to ``inf`` beyond ~1e308 (the
    finite-r measures use a rescaled copy and are not affected).
    """
    with bk:
        seq = _sequences(laws, max(n, 1), bk)
        q, shift = _extend_q(seq, None, n, bk)
        return np.ldexp(q, shift) if shift else q


def _time_numerators(seq: _Sequences, q: np.ndarray, m: int) -> np.ndarray:
    """T_j = q~_0 w_j + sum_{i=1}^{j+1} q~_i u_{j-i+1} for j = 0..m-1 (needs q~ up to m)."""
    if m <= 0:
        return q[:0]
    return q[0] * seq.w[:m] + _conv(q[1 : m + 1], seq.u, m - 1)


def unnormalised_time(laws, n: int, bk: Backend) -> np.ndarray:
    """p~_0..p~_n: the unnormalised time-stationary queue-length law (Theorem 1.2, (13)).

    p~_j = (1/f_1) [ v_j + sum_{i=1}^{j+1} q~_i u_{j-i+1} ]  (``spec/chapter2.md`` section 2,
    (4) with q~_0 = 1 and C = f_1), the coefficients of
    P~(z) = (1 - z)(1 - C(z)) / (lambda f_1 (1 - L(z)) (A(z) - z)); p_j = (1 - rho_bar) p~_j
    for rho_bar < 1 and p^r_j = P^r_e p~_j for j < r (Corollary 1 (15)).
    Without vacations the normaliser f_1 becomes the idle time 1/lambda and the idle time
    is added to p~_0, so that again p^r_j = P^r_e p~_j (P^r_e = probability of an idle server).
    ``laws`` as in :func:`unnormalised_embedded`.
    """
    with bk:
        seq = _sequences(laws, n + 1, bk)
        q, shift = _extend_q(seq, None, n + 1, bk)
        if shift:
            q = np.ldexp(q, shift)
        t = _time_numerators(seq, q, n + 1)
        t[0] = t[0] + seq.idle
        return t / seq.not_serving


# --------------------------------------------------------------------------------------
# Common finisher: measures from unnormalised cycle times
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Batch:
    """Batch vectors over 0..n: pmf l, tail P(X > m), excess e_m = E (X - m)^+, l_1;
    ``geometric`` = (p, 1 - p) for geometric batches, ``support`` the sizes with l_k > 0 when finite."""

    pmf: np.ndarray
    tail: np.ndarray
    excess: np.ndarray
    l1: object
    geometric: tuple | None
    support: tuple | None

    @classmethod
    def build(cls, batch, n: int, bk: Backend) -> "_Batch":
        pmf, tail = batch_pmf_tail(batch, n, bk)
        geometric = (bk.num(batch.p), bk.num(1 - batch.p)) if isinstance(batch, _b.Geometric) else None
        support = None
        if batch.max_size is not None:
            support = tuple(k for k in range(1, min(batch.max_size, n) + 1) if pmf[k] != 0)
        return cls(pmf, tail, batch_excess(batch, n, bk), bk.num(batch.mean), geometric, support)


def _finish(r: int, q: np.ndarray, t_std: np.ndarray, t_idle, t_ns, t_busy, b1, batch: _Batch,
            admission: Admission, bk: Backend) -> FiniteMeasures:
    """Measures from one cycle's unnormalised quantities (all on one common scale).

    ``q`` embedded weights q~_0..q~_r; ``t_std[j]`` expected time at queue level j in
    which arrivals see r places (vacation or service); ``t_idle`` expected time with an
    idle server (level 0, r + 1 places for the arriving batch); ``t_ns`` not-serving
    time; ``t_busy`` serving time. Mean cycle T = t_ns + t_busy (renewal reward, (4)).
    """
    T = t_ns + t_busy
    p_std = t_std / T
    p_idle = t_idle / T
    p = p_std.copy()
    p[0] = p[0] + p_idle
    e_rev = batch.excess[r::-1]  # e_{r-j}, j = 0..r
    tail_rev = batch.tail[r::-1]  # P(X > r - j)
    if admission is Admission.PARTIAL:
        # Theorem 1.1 (12): pi = sum_j p^r_j E (X - (r-j))^+ / l_1, and an idle server takes one more
        lost = bk.dot(p_std, e_rev) + p_idle * batch.excess[r + 1]
        blocked = p_std[r]
    else:
        # whole admission: a batch of k finding j waiting is lost iff k > r - j;
        # E (X; X > m) = m P(X > m) + E (X - m)^+
        levels = bk.array(list(range(r, -1, -1))) if not bk.is_float64 else np.arange(r, -1, -1, dtype=float)
        lost = bk.dot(p_std, levels * tail_rev + e_rev) + p_idle * ((r + 1) * batch.tail[r + 1] + batch.excess[r + 1])
        blocked = bk.dot(p_std, tail_rev) + p_idle * batch.tail[r + 1]
    loss = lost / batch.l1
    idx = np.arange(r + 1, dtype=float) if bk.is_float64 else bk.array(list(range(r + 1)))
    nq = bk.dot(p, idx)
    busy = t_busy / T
    throughput = busy / b1
    sc = float if bk.is_float64 else (lambda v: v)
    return FiniteMeasures(
        capacity=r,
        q=q / bk.fsum(q),
        p=p,
        idle_probability=sc(t_ns / T),
        loss_probability=sc(loss),
        batch_blocking_probability=sc(blocked),
        mean_queue_length=sc(nq),
        mean_wait=sc(nq / throughput),
        mean_number_in_system=sc(nq + busy),
        throughput=sc(throughput),
    )


# --------------------------------------------------------------------------------------
# Partial admission (the thesis): truncation of the infinite-room recursion
# --------------------------------------------------------------------------------------


class _PartialEngine:
    """Statement 1, (9), (10), Statement 2, Theorem 1.1; incremental in r."""

    def __init__(self, model: VacationQueue, bk: Backend):
        self.model, self.bk = model, bk
        self.n = -1

    def _ensure(self, r: int) -> None:
        if r + 1 <= self.n:
            return
        n = max(r + 1, 2 * self.n, 16)
        bk = self.bk
        self.seq = _sequences(self.model, n, bk)
        self.batch = _Batch.build(self.model.batch, n + 1, bk)
        self.q, _ = _extend_q(self.seq, None, n, bk)
        self.t = _time_numerators(self.seq, self.q, n)  # valid for every r >= j + 1
        self.s1 = np.cumsum(self.q)  # s1[j] = sum_{i<=j} q~_i (positive terms)
        self.n = n

    def loss_at(self, r: int):
        """The loss probability alone (Theorem 1.1), O(r) once the sequences reach r."""
        return self.at(r, loss_only=True)

    def at(self, r: int, loss_only: bool = False):
        self._ensure(r)
        seq, q = self.seq, self.q
        q0 = q[0]
        qs = q[: r + 1]
        # (10): top level without cancellation, Vbar_r and Ubar_{r-i+1}
        top = q0 * seq.wbar[r] + (self.bk.dot(q[1 : r + 1], seq.ubar[r:0:-1]) if r >= 1 else 0)
        t_std = self.bk.zeros(r + 1)
        t_std[:r] = self.t[:r]
        t_std[r] = top
        s1 = self.s1[r] - q0  # sum_{i=1}^{r} q~_i
        t_busy = seq.b1 * (q0 * seq.services + s1)
        if loss_only:
            T = q0 * seq.not_serving + t_busy
            lost = self.bk.dot(t_std, self.batch.excess[r::-1]) + q0 * seq.idle * self.batch.excess[r + 1]
            return lost / (T * self.batch.l1)
        return _finish(r, qs, t_std, q0 * seq.idle, q0 * seq.not_serving, t_busy, seq.b1, self.batch,
                       Admission.PARTIAL, self.bk)


# --------------------------------------------------------------------------------------
# Whole admission: the room process within one service
# --------------------------------------------------------------------------------------


def _room_kernel(batch: _Batch, n: int, bk: Backend) -> np.ndarray:
    """H[d, d'] for rooms 0..n: one batch at room d -> d - k if k <= d (prob l_k), else stays (P(X > d))."""
    H = np.zeros((n + 1, n + 1)) if bk.is_float64 else np.full((n + 1, n + 1), mpmath.mpf(0), dtype=object)
    for d in range(n + 1):
        H[d, d] = batch.tail[d]
        if d:
            H[d, :d] = batch.pmf[d:0:-1]  # H[d, d - k] = l_k, k = 1..d
    return H


def _batch_step(W: np.ndarray, H: np.ndarray, batch: _Batch) -> np.ndarray:
    """W H for the room kernel H, using its structure (rows of W: start rooms; last axis: rooms).

    (W H)[., d] = W[., d] P(X > d) + sum_{k >= 1} W[., d + k] l_k. Geometric batches: the sum
    S_d = p W_{d+1} + q S_{d+1} costs O(n) per row; bounded batches: one shifted copy per
    batch size; otherwise the dense product.
    """
    n = W.shape[-1]
    tail = batch.tail[:n]
    if batch.geometric is not None:
        p, q = batch.geometric
        out = W * tail
        acc = W[..., n - 1] * 0
        for d in range(n - 2, -1, -1):
            acc = W[..., d + 1] * p + acc * q
            out[..., d] = out[..., d] + acc
        return out
    if batch.support is not None:
        out = W * tail
        for k in batch.support:
            if k < n:
                out[..., : n - k] = out[..., : n - k] + W[..., k:] * batch.pmf[k]
        return out
    return np.dot(W, H)


def _mix_powers(start: np.ndarray, H: np.ndarray, time_law, lam, bk: Backend, batch: _Batch):
    """(sum_K beta_K start H^K, (1/lambda) sum_K tau_K start H^K) for the batches K in one time.

    ``start`` is a matrix (rows: start rooms) or a vector. beta_K, tau_K = P(K' > K) from
    the positive-term count sequence; the sum stops when tau_K < eps/256 and every entry's
    next term tau_K (start H^K) is below eps/256 of the accumulated sum (entries still
    growing keep the loop going).
    """
    tol = bk.eps / 256
    size = 64
    cs = count_sequence(time_law, lam, size, bk)
    W = start
    acc_r = W * cs.beta[0]
    acc_u = W * cs.tail[0]
    K = 0
    while True:
        K += 1
        if K > size:
            size *= 2
            if size > 1 << 16:
                raise ParameterError("too many batches per service/vacation to sum (the time is very long); "
                                     "reduce the load")
            cs = count_sequence(time_law, lam, size, bk)
        W = _batch_step(W, H, batch)
        acc_r = acc_r + W * cs.beta[K]
        acc_u = acc_u + W * cs.tail[K]
        rest = W * cs.tail[K]
        if cs.tail[K] <= tol and np.all(rest <= acc_r * tol):
            break
    return acc_r, acc_u / bk.num(lam)


#: largest capacity the whole-admission engine accepts (dense (r+1) x (r+1) room matrices)
WHOLE_MAX_CAPACITY = 2000


class _WholeEngine:
    """Whole-batch admission: level crossing on the embedded chain, room matrices reused across r."""

    def __init__(self, model: VacationQueue, bk: Backend):
        self.model, self.bk = model, bk
        self.n = -1

    def _ensure(self, r: int) -> None:
        if r <= self.n:
            return
        if r > WHOLE_MAX_CAPACITY:
            raise ParameterError(
                f"capacity = {r}: whole admission is limited to r <= {WHOLE_MAX_CAPACITY} (its room matrices cost "
                "O(r^2) memory and O(K r^3) time for K batches per service)"
            )
        n = max(r, min(2 * self.n, WHOLE_MAX_CAPACITY), 8)
        bk, m = self.bk, self.model
        self.batch = _Batch.build(m.batch, n + 1, bk)
        self.H = _room_kernel(self.batch, n, bk)
        eye = np.eye(n + 1) if bk.is_float64 else _identity(n + 1)
        self.Rs, self.Us = _mix_powers(eye, self.H, m.service, m.lam, bk, self.batch)
        # Rcum[e, d] = P(service from room e ends in a room < d) = sum_{d' < d} Rs[e, d'] (positive terms)
        self.Rcum = np.zeros_like(self.Rs)
        self.Rcum[:, 1:] = np.cumsum(self.Rs, axis=1)[:, :-1]
        self.b1 = bk.num(m.service.moment(1))
        self.n = n

    def _start(self, r: int):
        """Start period from an empty epoch at capacity r: (P(end room < d), level times by room,
        idle time, not-serving time, number of services)."""
        bk, m = self.bk, self.model
        if m.vacation is not None:
            row = bk.zeros(r + 1)
            row[r] = bk.num(1)
            rv, uv = _mix_powers(row, self.H[: r + 1, : r + 1], m.vacation, m.lam, bk, self.batch)
            up = bk.zeros(r + 1)
            up[1:] = np.cumsum(rv)[:-1]
            return up, uv, bk.num(0), bk.num(m.vacation.moment(1)), 0
        # no vacation: idle until an admissible batch (X <= r + 1), then a service from room r - (X - 1)
        weights = self.batch.pmf[1 : r + 2]  # l_k, k = 1..r+1  -> start room r + 1 - k
        fit = bk.fsum(weights)
        rooms = slice(r, None, -1) if r >= 0 else None
        mix = weights / fit
        up = np.dot(mix, self.Rcum[rooms, : r + 1])
        times = np.dot(mix, self.Us[rooms, : r + 1])
        idle = 1 / (bk.num(m.lam) * fit)
        return up, times, idle, idle, 1

    def loss_at(self, r: int):
        return self.at(r).loss_probability

    def at(self, r: int) -> FiniteMeasures:
        self._ensure(r)
        bk = self.bk
        up, start_times, idle, not_serving, services = self._start(r)
        Rs, Rcum, Us = self.Rs, self.Rcum, self.Us
        x = bk.zeros(r + 1)
        x[0] = bk.num(1)
        for j in range(r):
            # cut between queue j and j + 1 (rooms r - j and r - j - 1):
            # x_{j+1} R[r-j, r-j] = x_0 P0(end room < r-j) + sum_{i=1}^{j} x_i Rcum[r-i+1, r-j]
            s = x[0] * up[r - j]
            if j >= 1:
                s = s + bk.dot(x[1 : j + 1], Rcum[r - j + 1 : r + 1, r - j][::-1])
            x[j + 1] = s / Rs[r - j, r - j]
            if bk.is_float64 and x[j + 1] > _RESCALE_AT:
                x[: j + 2] = np.ldexp(x[: j + 2], -int(np.frexp(x[j + 1])[1]))
        # level times by room: x_0 (start period) + sum_{i>=1} x_i Us[r - i + 1, :]
        rooms = start_times * x[0]
        if r >= 1:
            rooms = rooms + np.dot(x[1:], Us[r:0:-1, : r + 1])
        t_std = rooms[::-1].copy()  # queue j = room r - j
        s1 = bk.fsum(x[1:]) if r >= 1 else bk.num(0)
        t_busy = self.b1 * (x[0] * services + s1)
        return _finish(r, x, t_std, x[0] * idle, x[0] * not_serving, t_busy, self.b1, self.batch,
                       Admission.WHOLE, bk)


def _identity(n: int) -> np.ndarray:
    eye = np.full((n, n), mpmath.mpf(0), dtype=object)
    for i in range(n):
        eye[i, i] = mpmath.mpf(1)
    return eye


_ENGINES = {Admission.PARTIAL: _PartialEngine, Admission.WHOLE: _WholeEngine}


class FiniteSweep:
    """All finite-r measures of one model for many capacities r, incremental in r.

    The coefficient sequences, q~ and the p~ numerators are computed once up to the
    largest r asked (extended by doubling), so a sweep r = 1..R costs O(R^2), the cost of
    its largest r. The model's own ``capacity`` is ignored; :meth:`at` takes r.
    Under whole admission the room matrices are shared and each r adds an O(r^2)
    level-crossing solve.

    >>> from fractions import Fraction
    >>> from qderive.symbolic.laws import Exponential
    >>> from qderive.symbolic.batches import Geometric
    >>> from qderive.numeric.backend import FLOAT64
    >>> m = VacationQueue.from_load(Fraction(1, 2), Geometric(2), Exponential(1), Exponential(2), 1)
    >>> sweep = FiniteSweep(m, FLOAT64)
    >>> [round(sweep.at(r).loss_probability, 6) for r in (1, 2, 4)]
    [0.655172, 0.450882, 0.231409]
    """

    def __init__(self, model: VacationQueue, bk: Backend):
        self.model, self.bk = model, bk
        self._engine = _ENGINES[model.admission](model, bk)

    def at(self, r: int) -> FiniteMeasures:
        """Measures with r waiting places (validated like the model's capacity)."""
        self.model.with_capacity(r)  # validation only
        with self.bk:
            return self._engine.at(int(r))

    def loss_at(self, r: int):
        """The loss probability with r waiting places; O(r) per r under partial admission."""
        self.model.with_capacity(r)
        with self.bk:
            loss = self._engine.loss_at(int(r))
        return float(loss) if self.bk.is_float64 else loss


def finite_measures(model: VacationQueue, bk: Backend) -> FiniteMeasures:
    """Every finite-r measure of ``model`` at its capacity (float64 or mpmath per ``bk``)."""
    return FiniteSweep(model, bk).at(model.capacity)
