"""Oracle of the waiting and sojourn times of the vacation queues, from the model definition.

The law of the wait W (and of the sojourn W + own service) of an *admitted* customer of
M[X]/PH/1/r with PH vacations (``docs/theory/chapter2.md`` section 0, and the variants of
:mod:`qderive.symbolic.models.vacation`: partial or whole admission, multiple, single or no
vacations), built from the definition only -- never from a transform or a closed form of
the wait:

1. **The state seen by an arriving batch** is the time-stationary law pi of the CTMC of
   :func:`.vacation.vacation_ctmc` (PASTA): activity (service S, vacation V, idle I),
   phase, number waiting j. An infinite room is that chain cut at a capacity c far beyond
   its mass (:attr:`WaitOracle.truncation`).
2. **The tagged customer** is a random customer (customer average): a batch of size k
   carries k customers, so the pair (batch size K, position I of the tagged customer in it) has

       P(K = k, I = i) = l_k / E X,   i = 1..k,   hence   P(I = i) = P(X >= i) / E X.

   Arriving in state s = (a, phase, j), it is admitted with the indicator A_s(k, i):
   in S or V (room R_s = r - j) partial admission keeps the first min(k, R_s) of the batch,
   so A = [i <= R_s]; whole admission keeps the batch iff k <= R_s, so A = [k <= R_s]
   (then every i <= k). An idle server takes the first customer into service at once and
   leaves r places for the rest: R_I = r + 1, with the same two rules. Summing over k::

       P(s, I = i, admitted) = pi_s g_s(i) / E X,
       g_s(i) = sum_{k >= i} l_k A_s(k, i) = P(X >= i) [i <= R_s]              (partial)
                                           = sum_{k=i}^{R_s} l_k  [i <= R_s]  (whole),

   and the law of an admitted customer is this divided by its sum Z = sum_{s,i} pi_s g_s(i)
   (Z / E X = 1 - loss); E X cancels. With an infinite room the cut at c acts as a
   partial admission at c; the customers it turns away are below the truncation target.
3. **Customers ahead.** In S or V with j waiting: n = j + i - 1 (the j waiting and the i - 1
   admitted before it in its batch) plus the activity in progress, whose residual is the
   remaining phases of the current phase-type service or vacation. Idle: position 1 starts
   service at once (W = 0); position i >= 2 finds a service just started (phase drawn from
   the service's initial law) and n = i - 2 ahead.
4. **The wait** is then the absorption time of a transient CTMC on (activity, phase, n):
   FIFO, so later arrivals do not matter. A service phase moves by the service
   sub-generator; a service completion with n >= 1 starts the next service at level n - 1,
   with n = 0 it starts the tagged customer's service (absorption). A vacation phase moves
   by the vacation sub-generator; a vacation ends with the tagged customer present, so it
   starts a service (level n - 1, or absorption if n = 0) under every policy.
   **The sojourn** is the same chain with the tagged customer counted among those ahead
   (level n + 1; the zero-wait customers start at level 0 in service), absorbed when the
   service at level 0 ends.

Measures: P(W > t) = alpha exp(T t) 1 by uniformization, a sum of nonnegative terms
(relative accuracy for tails far below the working precision's epsilon), with as many
terms as a rigorous Poisson tail bound relative to the partial sum requires; moments
E W^k = k! alpha (-T)^{-k} 1 by subtraction-free M-matrix solves
(:func:`~qderive.numeric.kernels.chains.mmatrix_solve`), level by level (the transient
chain only moves down), exact in :class:`~qderive.numeric.backend.FractionContext`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.errors import ParameterError
from ...symbolic.models.vacation import Admission, FiniteVacationQueue, VacationQueue
from ..kernels.chains import mmatrix_solve
from ..kernels.phase_type_tail import poisson_sum
from .vacation import vacation_ctmc

__all__ = ["WaitOracle", "tagged_wait"]

#: largest Lambda t (uniformization rate x time) accepted: the number of terms grows like it
MAX_UNIFORMIZATION = 200_000
_LN10 = math.log(10)


@dataclass(frozen=True)
class WaitOracle:
    """The law of the wait of an admitted customer (or of its sojourn, in :attr:`sojourn`).

    ``p_zero`` = P(W = 0); ``tail`` = (P(W > t) for t in times); ``moments`` = (E W, ..., E W^K);
    ``truncation`` = the stationary mass at the cut of an infinite room (None for a finite room);
    ``capacity`` = the waiting room of the chain (the model's r, or the cut c); ``sojourn`` = the
    same record for W + own service (``sojourn=True``), else None.
    """

    p_zero: object
    tail: tuple
    moments: tuple
    truncation: object
    capacity: int
    sojourn: WaitOracle | None = None


def tagged_wait(model, ctx, times=(), moments: int = 0, sojourn: bool = False,
                capacity: int | None = None) -> WaitOracle:
    """The waiting time (and, with ``sojourn``, the sojourn time) of an admitted customer of ``model``.

    ``model``: a :class:`VacationQueue` or :class:`FiniteVacationQueue` with phase-type service and
    vacation laws and a batch law with rational probabilities. ``ctx``: FLOAT64, an mpmath context
    (``mp_context(dps)``), or ``FractionContext()`` (exact p_zero and moments; no tails, and an
    infinite room needs an explicit ``capacity``). ``times``: exact numbers t >= 0; ``moments``: K.

    An infinite room is cut at ``capacity`` if given (its effect is reported, not bounded), else
    at the first capacity found where the stationary mass at the cut and the customers the cut
    turns away are below 10^-(D + 5) and below 10^-(D + 5) times the smallest tail asked for
    (D = the context's digits, 16 in float64).

    The tagged customer is a random admitted customer: with pi the stationary law of the model's
    CTMC (PASTA) and l_k = P(X = k), it arrives in state s at position i of its batch with probability
    pi_s g_s(i) / Z, where g_s(i) = sum_{k >= i} l_k A_s(k, i) (A_s = 1 if admitted: partial
    i <= R_s, whole k <= R_s; R_s = r - j in service or vacation with j waiting, r + 1 at an idle
    server) and Z = sum_{s, i} pi_s g_s(i) = E X (1 - loss). The rest of the construction is in the
    module docstring. Every sum is of nonnegative terms: the tails keep their relative accuracy far
    below the working epsilon (O(n eps) rounding in the chain's size n, and eps Lambda t in float64
    from the Poisson weights' logarithms).
    """
    if not isinstance(model, (VacationQueue, FiniteVacationQueue)):
        raise ParameterError(f"tagged_wait needs a VacationQueue or FiniteVacationQueue, got {type(model).__name__}")
    if isinstance(moments, bool) or not isinstance(moments, int) or moments < 0:
        raise ParameterError("moments", "must be an integer >= 0", moments)
    exact = ctx.dps is None and not ctx.is_float64
    times = tuple(times)
    if times and exact:
        raise ParameterError("times", "tails need a floating context (float64 or mp_context(dps)), not exact "
                             "rationals", times)
    for t in times:
        if not t >= 0:
            raise ParameterError("times", "must be >= 0", t)
    laws = _Laws.of(model)
    finite = isinstance(model, FiniteVacationQueue)
    if finite:
        if capacity is not None and capacity != model.capacity:
            raise ParameterError("capacity", f"applies to an infinite room only; the model has r = {model.capacity} "
                                 "(use model.with_capacity(r))", capacity)
        with ctx:
            return _compute(model, ctx, laws, model.capacity, False, None, times, moments, sojourn)
    if capacity is not None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ParameterError("capacity", "must be an integer >= 1", capacity)
        with ctx:
            return _compute(model, ctx, laws, capacity, True, None, times, moments, sojourn)
    if exact:
        raise ParameterError("capacity", "an infinite room in exact arithmetic needs an explicit cut: pass "
                             "capacity=c (the result is then exact for the room cut at c)")
    digits = 16 if ctx.is_float64 else ctx.dps
    goal = -(digits + 5)  # log10 of the truncation target
    chains: dict = {}
    c = _probe_capacity(model, laws, goal, chains)
    with ctx:
        for _ in range(6):
            _check_size(laws, c, goal)
            out = _compute(model, ctx, laws, c, True, goal, times, moments, sojourn, chains)
            if isinstance(out, WaitOracle):
                return out
            c = max(out, c + 1)
    raise ParameterError(f"the infinite room could not be cut with stationary mass below 1e{goal} at the cut "
                         f"(last tried c = {c}): pass capacity=")


# --------------------------------------------------------------------------------------
# The laws, exactly
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Laws:
    """Exact phase-type forms (alpha, T, exit rates) of service and vacation, the batch law and lambda."""

    ab: list
    Tb: list
    tb: list
    av: list
    Tv: list
    tv: list
    batch: object
    lam: Fraction

    @classmethod
    def of(cls, model):
        ab, Tb, tb = _phase_type(model.service, "service")
        av, Tv, tv = _phase_type(model.vacation, "vacation") if model.vacation is not None else ([], [], [])
        try:
            lam = Fraction(model.rate)
            Fraction(model.batch.pmf(1)), Fraction(model.batch.tail(1))
        except (TypeError, ValueError, NotImplementedError):
            raise ParameterError(f"batch = {model.batch}: the wait oracle needs a numeric rate and a batch law with "
                                 "rational probabilities (geometric, const, pmf)") from None
        return cls(ab, Tb, tb, av, Tv, tv, model.batch, lam)

    def pmf(self, n):
        """l_1..l_n exactly."""
        return [Fraction(self.batch.pmf(k)) for k in range(1, n + 1)]

    def at_least(self, n):
        """P(X >= i) for i = 1..n exactly."""
        return [Fraction(self.batch.tail(i - 1)) for i in range(1, n + 1)]


def _phase_type(law, what):
    form = law.phase_type()
    if form is None:
        raise ParameterError(f"{what} = {law}: the wait oracle needs a phase-type law (exp, erlang, hyperexp, "
                             "coxian, ph, gamma of integer shape)")
    alpha, T = form
    try:
        alpha = [Fraction(a) for a in alpha]
        T = [[Fraction(v) for v in row] for row in T]
    except (TypeError, ValueError):
        raise ParameterError(f"{what} = {law}: the wait oracle needs numeric phase-type parameters") from None
    if sum(alpha) != 1:
        raise ParameterError(f"{what} = {law}: the initial phase probabilities sum to {sum(alpha)}, not 1")
    return alpha, T, [-sum(row) for row in T]


# --------------------------------------------------------------------------------------
# The computation at one capacity
# --------------------------------------------------------------------------------------


def _compute(model, ctx, laws, r, cut, goal, times, K, sojourn, chains=None):
    """The record with r places (``cut``: r cuts an infinite room). With ``goal`` (log10 of the target of an
    automatic cut) returns instead the next capacity to try when the cut's mass exceeds the target."""
    nb, nv = len(laws.ab), len(laws.av)
    PiS, PiV, PiI = _stationary(model, ctx, r, nb, nv, chains)
    truncation = None
    if cut:
        levels = [ctx.fsum(list(PiS[j]) + list(PiV[j])) + (PiI if j == 0 else 0) for j in range(r + 1)]
        truncation = levels[r]
        if goal is not None and _log10(ctx, max(truncation, _cut_loss(ctx, laws, r, PiS, PiV, PiI))) > goal:
            return _next_capacity([_log10(ctx, v) for v in levels], goal)
    whole = getattr(model, "admission", Admission.PARTIAL) is Admission.WHOLE
    AS, AV, a0 = _arrivals(ctx, laws, r, whole, PiS, PiV, PiI)
    Z = ctx.fsum(list(AS.ravel()) + list(AV.ravel()) + [a0])
    AS, AV, a0 = AS / Z, AV / Z, a0 / Z
    chain = _Transient(ctx, laws, r + 1)
    tails, mom = chain.measures(AS, AV, times, K)
    if goal is not None and times:  # the cut must also be far below the smallest tail asked for
        smallest = min([v for v in tails if v > 0] or [ctx.num(1)])
        need = goal + min(0.0, _log10(ctx, smallest))
        if _log10(ctx, truncation) > need:
            return _next_capacity([_log10(ctx, v) for v in levels], need)
    soj = None
    if sojourn:  # the tagged customer counts among those ahead; W = 0 starts its own service at level 0
        SS, SV = ctx.zeros(AS.shape), ctx.zeros(AV.shape)
        SS[1:], SV[1:] = AS[:-1], AV[:-1]
        SS[0] = SS[0] + a0 * ctx.array(laws.ab)
        stails, smom = chain.measures(SS, SV, times, K)
        soj = WaitOracle(ctx.num(0), stails, smom, truncation, r)
    return WaitOracle(a0, tails, mom, truncation, r, soj)


def _stationary(model, ctx, r, nb, nv, chains=None):
    """Stationary law of the model's CTMC with r places as arrays PiS[j, phase], PiV[j, phase], PiI."""
    chain = chains.get(r) if chains is not None else None
    if chain is None:
        chain, _ = vacation_ctmc(model, r)
        if chains is not None:
            chains[r] = chain
    pi = chain.stationary(ctx)
    PiS, PiV, PiI = ctx.zeros((r + 1, nb)), ctx.zeros((r + 1, nv)), ctx.num(0)
    for (act, ph, j), x in zip(chain.states, pi):
        if act == "S":
            PiS[j, ph] = x
        elif act == "V":
            PiV[j, ph] = x
        else:
            PiI = x
    return PiS, PiV, PiI


def _arrivals(ctx, laws, r, whole, PiS, PiV, PiI):
    """(AS[n, phase], AV[n, phase], a0): sum over (s, i) of pi_s g_s(i) by the state of the transient chain
    where the tagged customer starts (levels 0..r, the last one 0) and at W = 0 (see the module docstring)."""
    nb, nv = len(laws.ab), len(laws.av)
    AS, AV = ctx.zeros((r + 1, nb)), ctx.zeros((r + 1, nv))
    if whole:
        lvec = ctx.array(laws.pmf(r + 1))

        def g(R):  # g(i) = sum_{k=i}^{R} l_k, i = 1..R (reversed cumulative sums: positive terms)
            return np.cumsum(lvec[:R][::-1])[::-1] if R else ctx.zeros(0)
    else:
        gall = ctx.array(laws.at_least(r + 1))

        def g(R):  # g(i) = P(X >= i), i = 1..R
            return gall[:R]
    for j in range(r):  # in service or on vacation with j waiting: i = 1..r - j, level n = j + i - 1
        gj = g(r - j)[:, None]
        if nb:
            AS[j:r] = AS[j:r] + gj * PiS[j][None, :]
        if nv:
            AV[j:r] = AV[j:r] + gj * PiV[j][None, :]
    gi = g(r + 1)  # an idle server: i = 1 is served at once, i >= 2 finds a fresh service and i - 2 ahead
    a0 = PiI * gi[0]
    if r:
        AS[0:r] = AS[0:r] + (PiI * gi[1:])[:, None] * ctx.array(laws.ab)[None, :]
    return AS, AV, a0


def _cut_loss(ctx, laws, c, PiS, PiV, PiI):
    """The fraction of arriving customers that a cut at c turns away: sum_s pi_s E (X - R_s)^+ / E X."""
    b = laws.batch
    parts = [(ctx.fsum(list(PiS[j]) + list(PiV[j]))) * ctx.num(Fraction(b.excess(c - j))) for j in range(c + 1)]
    return ctx.fsum(parts + [PiI * ctx.num(Fraction(b.excess(c + 1)))]) / ctx.num(Fraction(b.mean))


# --------------------------------------------------------------------------------------
# The transient chain of the tagged customer
# --------------------------------------------------------------------------------------


class _Transient:
    """Levels n = 0..L-1 of phases (service 0..nb-1, vacation 0..nv-1); see item 4 of the module docstring.

    Within a level: the service and vacation sub-generators. Out of a level: a service completion
    (rates tb) or a vacation end (rates tv) goes to a fresh service (initial law ab) one level down,
    or, at level 0, is absorbed. -T is block lower bidiagonal with diagonal blocks diag(-Tb, -Tv).
    """

    def __init__(self, ctx, laws, L):
        self.ctx, self.laws, self.L = ctx, laws, L

    # moments: (-T) x_k = x_{k-1}, x_0 = 1, level by level: (-T_blk) x_k[n] = x_{k-1}[n] + exits * (ab . x_k[n-1])
    def _inverse(self, T, exits):
        """(-T)^{-1} of a sub-generator (entrywise >= 0) by the subtraction-free M-matrix solve."""
        ctx, n = self.ctx, len(T)
        if n == 0:
            return ctx.zeros((0, 0))
        W = ctx.zeros((n, n))
        for i in range(n):
            for j in range(n):
                if i != j and T[i][j]:
                    W[i, j] = ctx.num(T[i][j])
        units = []
        for j in range(n):
            e = ctx.zeros(n)
            e[j] = ctx.num(1)
            units.append(e)
        cols = mmatrix_solve(ctx, W, ctx.array(exits), units)
        M = ctx.zeros((n, n))
        for j, col in enumerate(cols):
            M[:, j] = col
        return M

    def moments(self, AS, AV, K):
        ctx, laws, L = self.ctx, self.laws, self.L
        if K == 0:
            return ()
        MB, MV = self._inverse(laws.Tb, laws.tb), self._inverse(laws.Tv, laws.tv)
        ab, tb, tv = ctx.array(laws.ab), ctx.array(laws.tb), ctx.array(laws.tv)
        nb, nv = len(laws.ab), len(laws.av)
        prevS, prevV = ctx.zeros((L, nb)), ctx.zeros((L, nv))
        prevS[:], prevV[:] = ctx.num(1), ctx.num(1)
        out = []
        for k in range(1, K + 1):
            xS, xV = ctx.zeros((L, nb)), ctx.zeros((L, nv))
            for n in range(L):
                rs, rv = prevS[n], prevV[n]
                if n:
                    below = ctx.dot(ab, xS[n - 1])
                    rs = rs + tb * below
                    rv = rv + tv * below if nv else rv
                xS[n] = MB @ rs
                if nv:
                    xV[n] = MV @ rv
            total = ctx.fsum(list((AS * xS).ravel()) + list((AV * xV).ravel()))
            out.append(ctx.num(math.factorial(k)) * total)
            prevS, prevV = xS, xV
        return tuple(out)

    # tails: a_m = alpha P^m 1 with P = I + T / Lambda (nonnegative), P(W > t) = sum_m Pois(m; Lambda t) a_m
    def _steps(self, AS, AV):
        """Generator of (s_m, log-scale L_m): a_m = s_m exp(L_m) (float64 rescales; mpmath keeps L_m = 0).

        An mpmath context iterates on its ``twin()``, gmpy2 numbers at the same precision (the same correctly
        rounded operations, about ten times faster: :class:`~qderive.numeric.backend.GmpyContext`); s_m is mpf."""
        ctx, laws = self.ctx, self.laws
        fast = ctx.twin() if hasattr(ctx, "twin") else None
        work = fast if fast is not None else ctx
        rates = [-laws.Tb[i][i] for i in range(len(laws.Tb))] + [-laws.Tv[i][i] for i in range(len(laws.Tv))]
        lam = max(rates)

        def stochastic(T):
            n = len(T)
            P = work.zeros((n, n))
            for i in range(n):
                for j in range(n):
                    v = T[i][j] / lam + (1 if i == j else 0)  # exact: no cancellation
                    if v:
                        P[i, j] = work.num(v)
            return P

        with work:
            PB, PV = stochastic(laws.Tb), stochastic(laws.Tv)
            eb, ev = work.array([v / lam for v in laws.tb]), work.array([v / lam for v in laws.tv])
            ab = work.array(laws.ab)
            yS, yV = (fast.from_mp(AS), fast.from_mp(AV)) if fast is not None else (AS.copy(), AV.copy())
        nv = len(laws.av)
        scale = ctx.num(0)
        while True:
            with work:
                s = work.fsum(list(yS.ravel()) + list(yV.ravel()))
            yield (fast.to_mp([s])[0] if fast is not None else s), scale
            if s == 0:
                return
            with work:
                flow = yS @ eb + (yV @ ev if nv else 0)
                nS = yS @ PB
                nS[:-1] = nS[:-1] + flow[1:, None] * ab[None, :]
                yS = nS
                if nv:
                    yV = yV @ PV
            if ctx.is_float64:
                top = max(float(yS.max(initial=0)), float(yV.max(initial=0)))
                if 0 < top < 1e-200:
                    yS, yV, scale = yS / top, yV / top, scale + math.log(top)

    def tail(self, terms, x):
        """sum_m e^{-x} x^m / m! a_m with the rigorous truncation bound: the kernel
        :func:`~qderive.numeric.kernels.phase_type_tail.poisson_sum` (a_m nonincreasing since P 1 <= 1)."""
        return poisson_sum(self.ctx, terms, x)

    def measures(self, AS, AV, times, K):
        ctx, laws = self.ctx, self.laws
        tails = ()
        if times:
            rates = [-laws.Tb[i][i] for i in range(len(laws.Tb))] + [-laws.Tv[i][i] for i in range(len(laws.Tv))]
            lam = max(rates)
            for t in times:
                if float(t) * float(lam) > MAX_UNIFORMIZATION:
                    raise ParameterError("times", f"Lambda t = {float(t * lam):.3g} is beyond the uniformization "
                                         f"budget {MAX_UNIFORMIZATION} (Lambda = {lam}, the largest phase rate)", t)
            gen, seen = self._steps(AS, AV), []

            def terms(m):
                while len(seen) <= m:
                    seen.append(next(gen, (ctx.num(0), ctx.num(0))))
                return seen[m]

            lam_c = ctx.num(lam)
            tails = tuple(self.tail(terms, lam_c * ctx.num(t)) for t in times)
        return tails, self.moments(AS, AV, K)


# --------------------------------------------------------------------------------------
# Choosing the cut of an infinite room
# --------------------------------------------------------------------------------------


def _log10(ctx, v):
    return -math.inf if v == 0 else float(ctx.log(v)) / _LN10


def _next_capacity(logp, goal):
    """A capacity where the level masses (log10 p_j, j = 0..c of a chain cut at c) extrapolate below ``goal``
    (at least c + 1, at most 8c + 8 per step).

    For j < c the masses of the cut chain are proportional to those of the infinite room
    (``docs/theory/chapter2.md`` Statement 1 and (15)), so their decay rate is the infinite law's.
    """
    c = len(logp) - 1
    return max(c + 1, min(_extrapolate(logp, goal), 8 * c + 8))


def _extrapolate(logp, goal):
    c = len(logp) - 1
    finite = [j for j in range(c) if logp[j] > -280]  # float64: above the underflow
    j2 = max(finite) if finite else 0
    j1 = j2 // 2
    slope = (logp[j1] - logp[j2]) / (j2 - j1) if j2 > j1 else 0.0
    if not slope > 1e-9:
        return 2 * c
    return j2 + math.ceil(1.1 * (logp[j2] - goal) / slope) + 2


def _check_size(laws, c, goal):
    """ParameterError when a cut at c needs more states than the limit ``dense_states`` allows."""
    states = (len(laws.ab) + len(laws.av)) * (c + 1) + 1
    allowed = _limits.current().dense_states
    if states > allowed:
        raise ParameterError(f"the infinite room would need a cut at about c = {c} places ({states} states, beyond "
                             f"the limit dense-states = {allowed}) to reach a truncation of 1e{goal}: the batch "
                             "law or the load leave too much mass far out; pass capacity=c, raise "
                             "qderive.limits(dense_states=...), or use a finite room")


def _probe_capacity(model, laws, goal, chains):
    """The cut for an infinite room from float64 solves (double precision sees masses down to 1e-280;
    below, the decay rate is extrapolated and checked in the caller's context)."""
    from ..backend import FLOAT64

    nb, nv = len(laws.ab), len(laws.av)
    top = laws.batch.max_size
    c = max(32, 2 * top) if top is not None else 32
    for _ in range(20):
        _check_size(laws, c, goal)
        PiS, PiV, PiI = _stationary(model, FLOAT64, c, nb, nv, chains)
        logp = [_log10(FLOAT64, float(np.sum(PiS[j]) + np.sum(PiV[j]) + (PiI if j == 0 else 0)))
                for j in range(c + 1)]
        if logp[c] <= goal:
            return c
        _check_size(laws, _extrapolate(logp, goal), goal)
        nxt = _next_capacity(logp, goal)
        if logp[c] < -250:
            return nxt
        c = nxt
    return c
