"""Hysteretic overload control M^[X]|G|1|(L,H)|(H,R): embedded chain, (16)-(23), loss and throughput.

Sopin 2013, chapter 3 (reconstructed in ``spec/chapter3.md``). Batches of customers
arrive as a Poisson process whose rate depends on the control mode s: lambda_0
(normal), lambda_1 = f lambda_0 < lambda_0 (overload), lambda_2 = 0 (discard). One
server, general service time B with mean b_1; at most R customers in the system
(partial acceptance of a batch, the excess is lost). Thresholds L < H < R: the
count reaching H switches normal -> overload, reaching R switches to discard,
dropping to H returns discard -> overload, dropping to L - 1 returns overload ->
normal; the switch takes effect at the next departure epoch t_n.

What this module computes, written once against a backend (float64 or mpmath):

* the embedded chain X(t_n + 0) over (count left behind, mode) under the *event*
  convention (default; decisions use the count n^- just before the departure) or
  the *left-behind* convention (``spec/chapter3.md`` section 1), and its stationary
  vector q (balance equations (16)) by subtraction-free GTH;
* C = b_1 + q_{0,0} / lambda_0 and the time-stationary law (17);
* P(S_1), P(S_2) (18), (19) in interval semantics (the mode whose arrival rate is in
  force; default) or label semantics (ideal hysteresis applied to the count path);
* P_0 (20) and E tau_0 (21): the corrected form e_L (I - P_0)^{-1} (b_1 1 + e_1^T / lambda_0)
  by default, the thesis's form b_1 e_L (I - P_0)^{-1} 1 on request; E tau_12 (22), E tau (23);
* the renewal identity E tau = C / (q_{L,1} a_0^{(1)}) (section 7 of the spec);
* the loss probability (customers offered at rate lambda_0 l^{(1)} that are not served:
  throttled in overload, discarded in discard mode, or overflowing R) and the throughput 1/C.

Conditioning and precision. ``I - P_0`` is ill-conditioned for rho_0 < 1 (the thesis
says (21) is unusable there). (21) is solved here by a subtraction-free elimination
(:func:`qderive.numeric.skipfree.solve_hessenberg_mmatrix`) whose entrywise accuracy
does not depend on kappa; kappa_inf(I - P_0) is nevertheless computed exactly
(one more right-hand side) and the precision policy of :func:`evaluate` is:

* float64: when kappa eps > 1e-6, or the renewal identity fails by more than 1e-10,
  or a measure under/overflows, the evaluation switches automatically to mpmath (the
  ``digits = 16`` rule below, started at ``16 + 10 + ceil(log10 kappa)`` digits) and returns
  float64 numbers with a note saying so;
* ``digits = D``: evaluate at ``w = D + 10`` digits, then again at
  ``max(w + 10, D + 10 + ceil(log10 kappa))`` digits, and escalate the same way until every
  measure agrees between two consecutive precisions to at least D + 2 digits; the result of
  the higher precision is returned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property, singledispatch

import mpmath
import numpy as np
import sympy as sp

from qderive.symbolic import batches as _b
from qderive.symbolic import laws as _t
from qderive.symbolic._exact import ParameterError, exact, require_positive

from .backend import FLOAT64, Backend, mp_backend
from .sequences import arrival_counts, batch_pmf_tail, count_sequence
from .skipfree import solve_hessenberg_mmatrix, stationary_gth_sparse

__all__ = [
    "Convention",
    "Semantics",
    "NormalTimeForm",
    "HystereticModel",
    "ArrivalInputs",
    "arrival_inputs",
    "EmbeddedChain",
    "embedded_chain",
    "HystereticSolution",
    "solve",
    "HystereticMeasures",
    "MEASURE_KEYS",
    "evaluate",
    "batch_excess",
    "KAPPA_SWITCH",
    "float64_trouble",
    "ordered_thresholds",
]

#: float64 evaluations switch to mpmath when kappa_inf(I - P_0) * eps_64 exceeds this
KAPPA_SWITCH = 1e-6
#: float64 results must satisfy the renewal identity to this relative accuracy
RENEWAL_TOLERANCE = 1e-10
#: extra working digits of the mpmath path
GUARD_DIGITS = 10

MEASURE_KEYS = (
    "p_normal",
    "p_overload",
    "p_discard",
    "mean_normal_time",
    "mean_return_time",
    "mean_cycle_time",
    "loss_probability",
    "throughput",
)


class Convention(Enum):
    """When a mode switch is decided at a departure epoch (``spec/chapter3.md`` section 1).

    EVENT (default): from the count n^- just before the departure (the largest count of
    the service), j = n^- - 1 left behind. Normal: n^- >= R -> discard, n^- >= H ->
    overload. Overload: n^- >= R -> discard, j <= L - 1 -> normal. Discard: j <= H -> overload.
    Reproduces the index ranges of (16) and (20): P_0 lives on j = 0..H-2.

    LEFT: from the left-behind count j only: normal: j >= R - 1 -> discard, j >= H ->
    overload; the other rules are the same. P_0 lives on j = 0..H-1 (inconsistent with
    (20); for comparison only).
    """

    EVENT = "event"
    LEFT = "left"

    def onset(self, H: int) -> int:
        """The smallest n^- of a normal-mode service that switches to overload."""
        return H if self is Convention.EVENT else H + 1


class Semantics(Enum):
    """Which mode a moment of time belongs to (``spec/chapter3.md`` section 5).

    INTERVAL: the mode whose arrival rate is in force (the embedded-chain mode of the
    current inter-departure interval). LABEL: the ideal hysteresis applied to the count
    path (the count reaching H inside a normal-mode service is already overload).
    """

    INTERVAL = "interval"
    LABEL = "label"


class NormalTimeForm(Enum):
    """E tau_0 (21): CORRECTED includes the idle periods in (0, 0); THESIS omits them."""

    CORRECTED = "corrected"
    THESIS = "thesis"


def _threshold(value, name: str) -> int:
    v = exact(value, name)
    if not (v.is_Integer and v >= 0):
        raise ParameterError(f"{name} = {value}: thresholds must be nonnegative integers")
    return int(v)


def ordered_thresholds(L, H, R) -> tuple[int, int, int]:
    """(L, H, R) as integers with 1 <= L < H < R (both hysteretic models), or a ParameterError naming them."""
    L, H, R = (_threshold(v, n) for v, n in ((L, "L"), (H, "H"), (R, "R")))
    if not L < H:
        raise ParameterError(f"thresholds must satisfy L < H < R, got L={L}, H={H}")
    if not H < R:
        raise ParameterError(f"thresholds must satisfy L < H < R, got H={H}, R={R}")
    if L < 1:
        raise ParameterError(f"L = {L}: must be >= 1 (normal mode is re-entered at L - 1 customers)")
    return L, H, R


@dataclass(frozen=True)
class HystereticModel:
    """M^[X]|G|1|(L,H)|(H,R) (Sopin 2013, section 3.2; ``spec/chapter3.md`` section 0).

    ``rate`` is lambda_0 (batches per unit time in normal mode), ``overload_factor``
    f = lambda_1 / lambda_0 in (0, 1); L < H < R with L >= 1 and R >= H + 2 (the
    discard states H+1..R-1 of the embedded chain must exist), and R must exceed the
    mean batch size (a typical batch must fit into the system).

    >>> from fractions import Fraction
    >>> m = HystereticModel.from_load(_b.Geometric(2), _t.Deterministic(Fraction(1, 200)), Fraction(3, 2),
    ...                               Fraction(1, 2), 73, 84, 100)
    >>> m.rate, m.rate1
    (150, 75)
    """

    batch: _b.BatchLaw
    service: _t.TimeLaw
    rate: sp.Expr
    overload_factor: sp.Expr
    L: int
    H: int
    R: int
    convention: Convention = Convention.EVENT

    def __post_init__(self):
        if not isinstance(self.batch, _b.BatchLaw) or isinstance(self.batch, _b.GeneralBatch):
            raise ParameterError(f"batch = {self.batch!r}: give a concrete batch-size law (e.g. geometric:mean=2)")
        if not isinstance(self.service, _t.TimeLaw) or isinstance(self.service, _t.GeneralTime):
            raise ParameterError(f"service = {self.service!r}: give a concrete service-time law (e.g. det:mean=0.005)")
        if not isinstance(self.convention, Convention):
            raise ParameterError(f"convention = {self.convention!r}: must be a Convention")
        L, H, R = ordered_thresholds(self.L, self.H, self.R)
        if R < H + 2:
            raise ParameterError(
                f"R = {R}, H = {H}: need R >= H + 2 so that the discard states H+1..R-1 of the embedded chain exist"
            )
        rate = require_positive(exact(self.rate, "rate lambda_0"), "rate lambda_0")
        f = exact(self.overload_factor, "overload factor")
        if rate.free_symbols or f.free_symbols:
            raise ParameterError("rate and overload factor must be numbers for the numeric model")
        if not (f > 0 and f < 1):
            raise ParameterError(f"overload factor lambda_1/lambda_0 = {f}: must lie in (0, 1)")
        l1 = self.batch.mean
        if not bool(l1 < R):
            raise ParameterError(
                f"R = {R} is too small for the batch law: the mean batch size {l1} must be below R"
            )
        object.__setattr__(self, "L", L)
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "rate", rate)
        object.__setattr__(self, "overload_factor", f)

    @classmethod
    def from_load(cls, batch, service, load, overload_factor, L, H, R, convention=Convention.EVENT):
        """The model with lambda_0 = rho_0 / (l^{(1)} b_1), rho_0 = ``load``."""
        load = require_positive(exact(load, "load rho_0"), "load rho_0")
        if not isinstance(batch, _b.BatchLaw) or not isinstance(service, _t.TimeLaw):
            raise ParameterError("batch and service must be batch and time laws")
        return cls(batch, service, load / (batch.mean * service.moment(1)), overload_factor, L, H, R, convention)

    @property
    def rate1(self) -> sp.Expr:
        """lambda_1 = f lambda_0 (overload-mode batch rate)."""
        return self.rate * self.overload_factor

    @property
    def load(self) -> sp.Expr:
        """rho_0 = lambda_0 l^{(1)} b_1 (customers offered per mean service time, normal mode)."""
        return self.rate * self.batch.mean * self.service.moment(1)

    @property
    def top_normal(self) -> int:
        """Largest left-behind count of a normal-mode embedded state (H - 2 event, H - 1 left)."""
        return self.convention.onset(self.H) - 2

    def states(self) -> tuple:
        """Embedded states (j, s) in the solver's order: normal, overload, discard (section 1 of the spec)."""
        return (
            tuple((j, 0) for j in range(self.top_normal + 1))
            + tuple((j, 1) for j in range(self.L, self.R - 1))
            + tuple((j, 2) for j in range(self.H + 1, self.R))
        )

    def next_state(self, n_minus: int, s: int) -> tuple[int, int]:
        """State after a departure in mode ``s`` whose count just before it was ``n_minus``.

        The switching rules of :class:`Convention` (``spec/chapter3.md`` section 1).
        """
        j = n_minus - 1
        if s == 2:
            return (j, 1) if j <= self.H else (j, 2)
        if n_minus >= self.R:
            return (self.R - 1, 2)
        if s == 0:
            return (j, 1) if n_minus >= self.convention.onset(self.H) else (j, 0)
        return (j, 0) if j <= self.L - 1 else (j, 1)


# ----------------------------------------------------------------------------------------
# Batch excess E (X - m)^+ (overflow), one closed form per batch family, positive terms
# ----------------------------------------------------------------------------------------


@singledispatch
def batch_excess(batch, n: int, bk: Backend) -> np.ndarray:
    """ex_m = E (X - m)^+ = sum_{i >= m} P(X > i) for m = 0..n (customers of a batch beyond m).

    Bounded batches: the finite sum. Geometric: q^m / p. 1 + Poisson(nu): the second tail
    of the Poisson law. Every value is a sum of positive terms. Call inside ``with bk:``.
    """
    size = batch.max_size
    if size is None:
        raise ParameterError(f"no overflow formula for the batch law {batch!r}")
    _, lbar = batch_pmf_tail(batch, max(size, n), bk)
    out = bk.zeros(n + 1)
    acc = bk.num(0)
    for m in range(max(size, n), -1, -1):
        acc = acc + lbar[m]
        if m <= n:
            out[m] = acc
    return out


@batch_excess.register
def _(batch: _b.Geometric, n, bk):
    p, q = bk.num(batch.p), bk.num(1 - batch.p)
    return bk.array([q**m / p for m in range(n + 1)])


@batch_excess.register
def _(batch: _b.ShiftedPoisson, n, bk):
    out = bk.zeros(n + 1)
    out[0] = bk.num(batch.mean)
    if batch.nu == 0:
        return out
    # Y = X - 1 ~ Poisson(nu) is the count of rate-1 arrivals during a deterministic time nu
    cs = count_sequence(_t.Deterministic(batch.nu), sp.Integer(1), max(n - 1, 0), bk)
    for m in range(1, n + 1):  # sum_{i>=m} P(Y > i - 1) = P(Y > m - 1) + sum_{j > m-1} P(Y > j)
        out[m] = cs.tail[m - 1] + cs.tail2[m - 1]
    return out


# ----------------------------------------------------------------------------------------
# Inputs that do not depend on L and H
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArrivalInputs:
    """Arrival-count sequences and batch quantities for modes 0 and 1, n = 0..R (backend vectors).

    ``counts[s]``: a^{(s)}_n, u^{(s)}_n, ... (:func:`qderive.numeric.sequences.arrival_counts`);
    ``ge[s][n]`` = P(A >= n) (the chapter-3 bar-a, with >=); ``first[c]``: the count at the
    start of the service that follows an idle period, l_c (c < R) and P(X >= R) (c = R);
    ``excess[m]`` = E (X - m)^+; ``idle_next[c]``: the law of n^- of that service;
    ``idle_profile[c]``: the expected time at count c from the departure that empties the
    system to the next departure (the idle period 1/lambda_0 at c = 0, then that service).
    """

    key: tuple
    bk: Backend
    lam: tuple
    b1: object
    l1: object
    counts: tuple
    ge: tuple
    first: np.ndarray
    batch_tail: np.ndarray
    excess: np.ndarray
    idle_next: np.ndarray
    idle_profile: np.ndarray

    def profile(self, s: int, c0: int) -> np.ndarray:
        """Expected time at each count c = 0..R during one service that starts with c0 >= 1 customers in mode s.

        J^{(s)}(c - c0) = u^{(s)}_{c-c0} for c0 <= c < R, and the time at c = R is
        Ubar^{(s)}_{R-c0} (``spec/chapter3.md`` section 4); a discard-mode service stays at c0.
        """
        bk, R = self.bk, len(self.first) - 1
        t = bk.zeros(R + 1)
        if s == 2:
            t[c0] = self.b1
            return t
        cnt = self.counts[s]
        t[c0:R] = cnt.u[: R - c0]
        t[R] = cnt.ubar[R - c0]
        return t

    def next_count(self, s: int, c0: int) -> np.ndarray:
        """Law of n^- (count just before the departure) of a mode-s service started with c0 >= 1."""
        bk, R = self.bk, len(self.first) - 1
        d = bk.zeros(R + 1)
        if s == 2:
            d[c0] = bk.num(1)
            return d
        d[c0:R] = self.counts[s].a[: R - c0]
        d[R] = self.ge[s][R - c0]
        return d


def _model_key(model: HystereticModel, bk: Backend) -> tuple:
    return (model.batch, model.service, model.rate, model.overload_factor, model.R, bk.name)


def arrival_inputs(model: HystereticModel, bk: Backend) -> ArrivalInputs:
    """Everything the embedded chain needs that is independent of L and H (reuse it on a threshold grid).

    a^{(s)}_n = sum_k beta^{(s)}_k l^{(k)}_n (``spec/chapter3.md`` section 2), as positive
    sums. Call inside ``with bk:``.
    """
    R = model.R
    lam = (model.rate, model.rate1)
    counts = tuple(arrival_counts(model.service, model.batch, lm, R, bk) for lm in lam)
    ge = []
    for cnt in counts:
        g = bk.zeros(R + 1)
        g[0] = bk.num(1)
        g[1:] = cnt.abar[:R]  # P(A >= n) = P(A > n - 1)
        ge.append(g)
    pmf, lbar = batch_pmf_tail(model.batch, R, bk)
    first = pmf.copy()
    first[R] = lbar[R - 1]  # P(X >= R): the batch that fills the system
    lam_b = tuple(bk.num(v) for v in lam)
    b1 = bk.num(model.service.moment(1))
    # the service after an idle period starts with min(X, R) customers: convolve the first
    # batch with the arrivals of that service (dot products of positive vectors)
    a0, ge0, u0, ubar0 = counts[0].a, ge[0], counts[0].u, counts[0].ubar
    idle_next = bk.zeros(R + 1)
    idle_profile = bk.zeros(R + 1)
    for c in range(1, R):  # count c < R reached from c0 = 1..c
        idle_next[c] = bk.dot(first[1 : c + 1], a0[c - 1 :: -1][:c])
        idle_profile[c] = bk.dot(first[1 : c + 1], u0[c - 1 :: -1][:c])
    idle_next[R] = bk.dot(first[1:R], ge0[R - 1 : 0 : -1]) + first[R]
    idle_profile[R] = bk.dot(first[1:R], ubar0[R - 1 : 0 : -1]) + first[R] * b1
    idle_profile[0] = 1 / lam_b[0]  # the idle period itself, at count 0
    return ArrivalInputs(
        _model_key(model, bk), bk, lam_b, b1, bk.num(model.batch.mean), counts, tuple(ge), first, lbar,
        batch_excess(model.batch, R, bk), idle_next, idle_profile,
    )


# ----------------------------------------------------------------------------------------
# The embedded chain (16)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddedChain:
    """The embedded chain X(t_n + 0): ``states`` (j, s), transition matrix ``P`` (backend).

    The first ``n_normal`` states are S_0^e = {(j, 0): j = 0..top} (P_0 of (20) is the
    leading block). ``exits[i]`` = probability of leaving S_0 from normal state i,
    computed as a positive tail (``P(n^- >= onset)``).
    """

    model: HystereticModel
    inputs: ArrivalInputs
    states: tuple
    index: dict
    P: np.ndarray
    exits: np.ndarray

    @property
    def n_normal(self) -> int:
        """Number of normal-mode embedded states (the size of P_0): H - 1 (event) or H (left)."""
        return self.model.top_normal + 1

    @property
    def bk(self) -> Backend:
        return self.inputs.bk

    def start_law(self, state_index: int) -> tuple:
        """(mode, law of n^-) of the service that follows the departure leaving ``states[state_index]``."""
        j, s = self.states[state_index]
        if j == 0:
            return s, self.inputs.idle_next
        return s, self.inputs.next_count(s, j)

    def profile(self, state_index: int) -> np.ndarray:
        """Expected time at each count 0..R until the next departure, starting from ``states[state_index]``."""
        j, s = self.states[state_index]
        return self.inputs.idle_profile if j == 0 else self.inputs.profile(s, j)


def embedded_chain(model: HystereticModel, bk: Backend, inputs: ArrivalInputs | None = None) -> EmbeddedChain:
    """Transition matrix of the embedded chain (Sopin 2013, (16); ``spec/chapter3.md`` section 3).

    From (i, s), i >= 1, s in {0, 1}: n^- = min(R, i + A), A ~ a^{(s)}; from (0, 0):
    n^- = min(R, min(X, R) + A); from (i, 2): n^- = i. The next state is
    :meth:`HystereticModel.next_state` (n^-, s). Call inside ``with bk:``.
    """
    if inputs is None:
        inputs = arrival_inputs(model, bk)
    elif inputs.key != _model_key(model, bk):
        raise ValueError("arrival inputs were computed for another model or backend")
    R = model.R
    states = model.states()
    index = {st: k for k, st in enumerate(states)}
    n = len(states)
    P = np.empty((n, n), dtype=np.float64 if bk.is_float64 else object)
    P[:] = bk.num(0)
    # destination index of each n^- = 1..R, per mode
    dest = {s: np.array([-1] + [index[model.next_state(c, s)] for c in range(1, R + 1)]) for s in (0, 1)}
    chain = EmbeddedChain(model, inputs, states, index, P, bk.zeros(model.top_normal + 1))
    for k, (j, s) in enumerate(states):
        if s == 2:
            P[k, index[model.next_state(j, 2)]] = bk.num(1)
            continue
        _, law = chain.start_law(k)
        lo = max(j, 1)
        P[k, dest[s][lo:]] = law[lo:]
    onset = model.convention.onset(model.H)
    exits = chain.exits
    exits[0] = bk.fsum(inputs.idle_next[onset:])
    for j in range(1, model.top_normal + 1):
        exits[j] = inputs.ge[0][onset - j]
    return chain


# ----------------------------------------------------------------------------------------
# Solution and measures
# ----------------------------------------------------------------------------------------


def _label_ranges(model: HystereticModel, semantics: Semantics, s: int) -> tuple:
    """(label, first count, last count + 1) of the moments of a mode-s interval (``spec/chapter3.md`` section 4).

    Interval semantics: the whole interval has label s. Label semantics (ideal hysteresis on
    the count path): a normal-mode interval is 0 while the count is below H, 1 while it is
    below R, 2 at R; an overload-mode interval is 1 below R and 2 at R; discard stays 2.
    """
    R = model.R
    if semantics is Semantics.INTERVAL or s == 2:
        return ((s, 0, R + 1),)
    if s == 0:
        return ((0, 0, model.H), (1, model.H, R), (2, R, R + 1))
    return ((1, 0, R), (2, R, R + 1))


def _in_precision(method):
    """Run a HystereticSolution method inside its backend's precision scope (``with bk:``)."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.chain.bk:
            return method(self, *args, **kwargs)

    return wrapper


@dataclass(frozen=True)
class HystereticSolution:
    """The solved embedded chain: stationary q, C, and every measure of chapter 3 as a method.

    Every method computes in the chain's backend precision (it enters ``with bk:`` itself).
    """

    chain: EmbeddedChain
    q: np.ndarray

    @property
    def model(self) -> HystereticModel:
        return self.chain.model

    @property
    def bk(self) -> Backend:
        return self.chain.bk

    def q_of(self, j: int, s: int):
        """q_{j,s} (0 for a state outside the embedded state space)."""
        k = self.chain.index.get((j, s))
        return self.q[k] if k is not None else self.bk.num(0)

    def _mode_sum(self, s: int):
        return self.bk.fsum([self.q[k] for k, st in enumerate(self.chain.states) if st[1] == s])

    @cached_property
    @_in_precision
    def cycle_constant(self):
        """C = b^{(1)} + q_{0,0} / lambda_0: mean time between departures (Sopin 2013, after (17))."""
        inp = self.chain.inputs
        return inp.b1 + self.q[0] / inp.lam[0]

    @_in_precision
    def time_distribution(self, semantics: Semantics = Semantics.INTERVAL) -> np.ndarray:
        """p[c, s]: probability that the count is c and the mode is s at an arbitrary time, (17).

        p = (1/C) sum_{(i,s')} q_{i,s'} x (expected time at count c with mode/label s during
        the inter-departure interval that starts in (i, s')) (``spec/chapter3.md`` section 4).
        Rows c = 0..R, columns s = 0, 1, 2.
        """
        bk, model = self.bk, self.model
        R = model.R
        cols = [bk.zeros(R + 1) for _ in range(3)]
        for k, (j, s) in enumerate(self.chain.states):
            t = self.chain.profile(k) * self.q[k]
            for x, lo, hi in _label_ranges(model, semantics, s):
                cols[x][lo:hi] = cols[x][lo:hi] + t[lo:hi]
        out = np.empty((R + 1, 3), dtype=np.float64 if bk.is_float64 else object)
        for s in range(3):
            out[:, s] = cols[s] / self.cycle_constant
        return out

    @_in_precision
    def mode_probabilities(self, semantics: Semantics = Semantics.INTERVAL) -> tuple:
        """(P(S_0), P(S_1), P(S_2)), each a sum of positive terms.

        Interval semantics: (18), (19): P(S_1) = (b_1 / C) sum_{j=L}^{R-2} q_{j,1},
        P(S_2) = (b_1 / C) sum_{j=H+1}^{R-1} q_{j,2}, and P(S_0) = (b_1 sum_j q_{j,0} +
        q_{0,0}/lambda_0) / C. Label semantics: the column sums of (17) with labels.
        """
        if semantics is Semantics.LABEL:
            p = self.time_distribution(semantics)
            return tuple(self.bk.fsum(p[:, s]) for s in range(3))
        inp, C = self.chain.inputs, self.cycle_constant
        p0 = (inp.b1 * self._mode_sum(0) + self.q[0] / inp.lam[0]) / C
        return p0, inp.b1 * self._mode_sum(1) / C, inp.b1 * self._mode_sum(2) / C

    def normal_block(self) -> tuple:
        """(P_0, exits): the embedded transition matrix restricted to S_0^e (20) and its row deficits."""
        m = self.chain.n_normal
        return self.chain.P[:m, :m], self.chain.exits

    def _normal_costs(self, semantics: Semantics, form: NormalTimeForm) -> np.ndarray:
        """Expected normal-mode time of one inter-departure interval from each normal state."""
        bk, inp = self.bk, self.chain.inputs
        m = self.chain.n_normal
        if semantics is Semantics.INTERVAL:
            g = bk.array([inp.b1] * m)
        else:  # time with count in 1..H-1 (label 0, busy) during the interval; the idle time is added below
            g = bk.array([bk.fsum(self.chain.profile(k)[1 : self.model.H]) for k in range(m)])
        if form is NormalTimeForm.CORRECTED:
            g[0] = g[0] + 1 / inp.lam[0]
        return g

    @cached_property
    @_in_precision
    def _normal_solutions(self) -> dict:
        P0, exits = self.normal_block()
        keys = [(sem, form) for sem in Semantics for form in NormalTimeForm]
        sol = solve_hessenberg_mmatrix(P0, exits, [self._normal_costs(*k) for k in keys], self.bk)
        return {"kappa": sol.kappa, **{k: y for k, y in zip(keys, sol.solutions)}}

    @property
    def kappa(self):
        """kappa_inf(I - P_0) = ||I - P_0||_inf ||(I - P_0)^{-1}||_inf (computed, not estimated)."""
        return self._normal_solutions["kappa"]

    @_in_precision
    def mean_normal_time(self, semantics: Semantics = Semantics.INTERVAL,
                         form: NormalTimeForm = NormalTimeForm.CORRECTED):
        """E tau_0 (21): e_L (I - P_0)^{-1} g, entering S_0 at (L - 1, 0).

        Corrected (interval): g = b_1 1 + e_1^T / lambda_0 (the idle periods in (0, 0) count as
        normal mode); thesis form: g = b_1 1. Label semantics: g_i = expected time with count < H
        during the interval from (i, 0) (plus the idle period when corrected).
        """
        return self._normal_solutions[(semantics, form)][self.model.L - 1]

    @_in_precision
    def mean_return_time(self, semantics: Semantics = Semantics.INTERVAL,
                         form: NormalTimeForm = NormalTimeForm.CORRECTED):
        """E tau_12 (22) = E tau_0 (P(S_1) + P(S_2)) / P(S_0) (renewal reward over control cycles)."""
        p0, p1, p2 = self.mode_probabilities(semantics)
        return self.mean_normal_time(semantics, form) * (p1 + p2) / p0

    @_in_precision
    def mean_cycle_time(self, semantics: Semantics = Semantics.INTERVAL,
                        form: NormalTimeForm = NormalTimeForm.CORRECTED):
        """E tau (23) = E tau_0 + E tau_12."""
        return self.mean_normal_time(semantics, form) + self.mean_return_time(semantics, form)

    @_in_precision
    def renewal_cycle_time(self):
        """E tau = C / (q_{L,1} a_0^{(1)}): one control cycle per entry into S_0 (spec section 7)."""
        a0 = self.chain.inputs.counts[1].a[0]
        return self.cycle_constant / (self.q_of(self.model.L, 1) * a0)

    @_in_precision
    def throughput(self):
        """Customers served per unit time = departures per unit time = 1 / C."""
        return 1 / self.cycle_constant

    @_in_precision
    def loss_probability(self):
        """Fraction of the offered customers (rate lambda_0 l^{(1)}) that are not served.

        Per departure: throttled (lambda_0 - lambda_1) l^{(1)} b_1 in overload and
        lambda_0 l^{(1)} b_1 in discard, plus the overflow lambda_s sum_c t(c) E(X - (R - c))^+
        of an interval spending t(c) at count c; divided by C lambda_0 l^{(1)}. Positive terms only.
        """
        bk, inp, model = self.bk, self.chain.inputs, self.model
        ex_rev = inp.excess[::-1].copy()  # ex_rev[c] = E (X - (R - c))^+
        overflow = []
        for k, (_, s) in enumerate(self.chain.states):
            if s == 2:
                continue
            overflow.append(self.q[k] * inp.lam[s] * bk.dot(self.chain.profile(k), ex_rev))
        throttle = inp.b1 * inp.l1 * (
            bk.num(model.rate * (1 - model.overload_factor)) * self._mode_sum(1) + inp.lam[0] * self._mode_sum(2)
        )
        return (throttle + bk.fsum(overflow)) / (self.cycle_constant * inp.lam[0] * inp.l1)


def solve(model: HystereticModel, bk: Backend, inputs: ArrivalInputs | None = None) -> HystereticSolution:
    """Build the embedded chain and its stationary vector (GTH, no subtractions). Call inside ``with bk:``."""
    chain = embedded_chain(model, bk, inputs)
    return HystereticSolution(chain, stationary_gth_sparse(chain.P, bk))


# ----------------------------------------------------------------------------------------
# Evaluation with the precision policy
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HystereticMeasures:
    """The measures of the command-line contract, with diagnostics.

    ``working_digits`` is None for a float64 computation; ``kappa`` is kappa_inf(I - P_0);
    ``renewal_cycle_time`` is C / (q_{L,1} a_0^{(1)}) (equal to ``mean_cycle_time`` for the
    corrected form).
    """

    p_normal: object
    p_overload: object
    p_discard: object
    mean_normal_time: object
    mean_return_time: object
    mean_cycle_time: object
    loss_probability: object
    throughput: object
    renewal_cycle_time: object
    kappa: object
    working_digits: int | None
    notes: tuple = field(default=())

    def as_dict(self) -> dict:
        """Measure key -> value, in the order of :data:`MEASURE_KEYS`."""
        return {k: getattr(self, k) for k in MEASURE_KEYS}


def _measures(sol: HystereticSolution, semantics: Semantics, form: NormalTimeForm, digits) -> HystereticMeasures:
    p = sol.mode_probabilities(semantics)
    t0 = sol.mean_normal_time(semantics, form)
    t12 = t0 * (p[1] + p[2]) / p[0]
    values = (p[0], p[1], p[2], t0, t12, t0 + t12, sol.loss_probability(), sol.throughput(),
              sol.renewal_cycle_time(), sol.kappa)
    if sol.bk.is_float64:  # plain Python floats, not numpy scalars
        values = tuple(float(v) for v in values)
    return HystereticMeasures(*values, digits)


def _measures_at(model, bk: Backend, semantics, form, inputs=None) -> HystereticMeasures:
    with bk:
        return _measures(solve(model, bk, inputs), semantics, form, None if bk.is_float64 else bk.dps)


def _log10_ceil(x) -> int:
    if x is None or not x > 1:
        return 0
    return int(math.ceil(float(mpmath.log10(x))))


def _agreement(a, b) -> float:
    """Significant digits on which a and b agree (exact difference: mpf() at 53 bits would round them)."""
    with mpmath.workprec(8000):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        if a == b:
            return math.inf
        return float(-mpmath.log10(abs(a - b) / max(abs(a), abs(b))))


def _stable(model, digits: int, semantics, form, kappa_hint=None) -> HystereticMeasures:
    """Evaluate at increasing precision until two consecutive results agree to ``digits + 2`` digits."""
    w = digits + GUARD_DIGITS + _log10_ceil(kappa_hint)
    prev = _measures_at(model, mp_backend(w), semantics, form)
    limit = 20 * digits + 2000
    while True:
        w_next = max(w + GUARD_DIGITS, digits + GUARD_DIGITS + _log10_ceil(prev.kappa))
        cur = _measures_at(model, mp_backend(w_next), semantics, form)
        agreed = min(_agreement(getattr(prev, k), getattr(cur, k)) for k in MEASURE_KEYS)
        if agreed >= digits + 2:
            return cur
        if w_next > limit:
            raise ParameterError(
                f"the hysteretic measures did not stabilise to {digits} digits below {w_next} working digits"
            )
        prev, w = cur, w_next


def float64_trouble(m: HystereticMeasures, form: NormalTimeForm) -> str | None:
    """Why a float64 result cannot be trusted (None when it can): the precision policy's test.

    Non-finite or nonpositive measures (under/overflow), kappa_inf(I - P_0) eps_64 > KAPPA_SWITCH,
    or (corrected form) |E tau - C/(q_{L,1} a_0^(1))| > RENEWAL_TOLERANCE E tau.
    """
    values = [float(v) for v in m.as_dict().values()]
    if not all(math.isfinite(v) and v > 0 for v in values) or not float(m.kappa) < math.inf:
        return "a measure under- or overflows float64"
    if float(m.kappa) * FLOAT64.eps > KAPPA_SWITCH:
        return f"I - P0 is ill-conditioned (kappa_inf = {float(m.kappa):.2g})"
    if form is NormalTimeForm.CORRECTED:
        if abs(m.mean_cycle_time - m.renewal_cycle_time) > RENEWAL_TOLERANCE * m.renewal_cycle_time:
            return "the renewal identity E tau = C / (q_{L,1} a_0^(1)) fails in float64"
    return None


def evaluate(
    model: HystereticModel,
    digits: int | None = None,
    *,
    semantics: Semantics = Semantics.INTERVAL,
    form: NormalTimeForm = NormalTimeForm.CORRECTED,
    auto_precision: bool = True,
    inputs: ArrivalInputs | None = None,
) -> HystereticMeasures:
    """All measures of chapter 3: float64 (``digits=None``) or stable to ``digits`` significant digits.

    Precision policy (module docstring): a float64 result that is ill-conditioned
    (kappa_inf(I - P_0) eps > 1e-6), violates the renewal identity, or under/overflows is
    recomputed with mpmath (``auto_precision=False`` returns the raw float64 result).
    ``inputs`` (float64 only) reuses arrival sequences across a threshold grid.

    >>> from fractions import Fraction
    >>> m = HystereticModel.from_load(_b.Constant(1), _t.Deterministic(Fraction(1, 200)), 2,
    ...                               Fraction(1, 2), 3, 6, 10)
    >>> r = evaluate(m)
    >>> abs(r.mean_cycle_time / r.renewal_cycle_time - 1) < 1e-12
    True
    """
    if semantics is Semantics.LABEL and model.convention is not Convention.EVENT:
        raise ParameterError(
            "label semantics needs the event convention: under the left-behind convention the mode "
            "set by a departure is not the ideal hysteresis of the count path"
        )
    if digits is not None:
        if digits < 1:
            raise ParameterError(f"digits = {digits}: must be >= 1")
        return _stable(model, digits, semantics, form)
    m = _measures_at(model, FLOAT64, semantics, form, inputs)
    reason = float64_trouble(m, form) if auto_precision else None
    if reason is None:
        return m
    hi = _stable(model, 16, semantics, form, kappa_hint=m.kappa if math.isfinite(float(m.kappa)) else None)
    values = {k: float(getattr(hi, k)) for k in (*MEASURE_KEYS, "renewal_cycle_time", "kappa")}
    note = f"{reason}: evaluated with mpmath at {hi.working_digits} digits and rounded to float64"
    return HystereticMeasures(**values, working_digits=hi.working_digits, notes=(note,))
