r"""The retransmission fixed point of ``sip-retransmission``: every solution of lambda = lambda_0 E[copies](lambda).

**The server at a given copy rate.** Copies reach the server at rate lambda (new requests and
retransmissions together). THE approximation: *the copies form a Poisson process of rate lambda, and
the fates of the copies of one transaction (refused or admitted, and an admitted copy's sojourn time)
are independent, each with the stationary law of the server fed at rate lambda*. Retransmissions are not
Poisson (they follow their transaction's timers and cluster in overload), so this is a mean-field
model; the simulator :mod:`qderive.numeric.simulation.sip` runs the exact model (issue 17 measures the
difference). Given lambda the server is an existing qderive model:

* ``--control none`` without capacity: M/G/1, model ``vacation-infinite`` with ``--vacation none`` and
  batches of 1 (``docs/theory/chapter2.md`` section 1); the sojourn law of
  :mod:`qderive.numeric.engines.vacation_wait`. For lambda E[B] >= 1 there is no stationary regime:
  the waiting time grows without bound, so every copy is unanswered (the limit of P(R > t) -> 1 as
  lambda E[B] -> 1); the map is continuous there.
* ``--control none --capacity K``: M/G/1/K, model ``vacation-finite`` with r = K - 1 waiting places
  (``docs/theory/chapter2.md`` section 2); p = its loss probability (a copy finding K is refused), the
  sojourn of an admitted copy from :mod:`qderive.numeric.engines.vacation_finite_wait`.
* ``--control ignore|503``: the contract's rule (an arrival finding N >= H switches to overload and is
  refused; in overload every arrival is refused; a departure leaving L returns to normal) is *not* the
  rule of ``hysteretic`` (M[X]|G|1|(L,H)|(H,R): the mode changes at departures or when the count
  *reaches* H) nor of ``mm1-hysteretic`` (an admitted arrival reaching H switches at once): both have no
  state "normal mode with N = H", from which a departure returns to H - 1 without overload. So the
  control is the smallest exact chain: for exponential service (rate mu) the CTMC on (n, normal),
  n = 0..H, and (n, overload), n = L+1..H, with (n,0) -> (n+1,0) at lambda (n < H), (H,0) -> (H,1) at
  lambda, (n,s) -> (n-1,s) at mu, (L+1,1) -> (L,0) at mu, solved by the one GTH
  (:func:`qderive.numeric.kernels.chains.gth_stationary`). By PASTA a copy is admitted with probability
  1 - p = sum_{n<H} pi(n, 0), and (FIFO) an admitted copy finding n has the sojourn Erlang(n + 1, mu):
  the tagged chain of :mod:`qderive.numeric.engines.ctmc_wait` (uniformization tails). A general
  service law: for L = H - 1 and c = 1 the server is exactly M/G/1/H (the mode is invisible:
  :meth:`Server._finite_control`, the ``vacation-finite`` route above with K = H); for L <= H - 2, or a
  duplicate cost c < 1, the departure-epoch chain of the rule (:mod:`qderive.numeric.engines.sip_control`,
  :meth:`Server._general_control`: states (n, mode) after a departure, the arrivals during a service from the
  count sequences, the one GTH; p = R / (1 + R) with R the refusals per departure interval, by PASTA; the
  admitted copy's sojourn by the finite room's wait machinery over the normal-mode service starts: Euler
  inversion for a smooth law, the lattice sums for a constant one). It reduces to the M/G/1/H route at
  L = H - 1 and equals the exponential chain for exponential service (tests/test_sip_general_control.py).

* ``--vacation V`` (``--vacation-policy multiple|single``): the same ``vacation-infinite`` /
  ``vacation-finite`` servers with the vacations, and under control with L = H - 1 ``vacation-finite`` with
  r = H - 1 for every service law (:meth:`Server._finite_control`: the mode stays invisible with vacations); with
  L <= H - 2 the departure-epoch chain extended to the period ends, a vacation as the service of a phantom copy
  (:mod:`qderive.numeric.engines.sip_control` item 4, :meth:`Server._general_control`; L = 0 is refused with
  multiple vacations: N >= 1 always, the overload would never end).
* a duplicate cost c < 1 or a service law per flow: the same rooms with a mixture service (*The mixture server*
  below).

**The copies of one transaction** (copy instants tau_0 = 0 < tau_1 < ... < tau_{n-1} < timeout;
p = P(refused), F(t) = P(R_copy > t) for an admitted copy). FIFO: a later copy of a transaction queues
behind its first admitted copy, so the response is the completion of the first admitted copy.

* ``none``/``ignore`` (silent refusal), with m(t) = #{j : tau_j <= t}::

      S(t) = P(no response by t) = p^m(t) + sum_{j < m(t)} p^j (1 - p) F(t - tau_j)                (S)
      E[copies] = sum_k P(copy k sent) = 1 + sum_{k >= 1} [p^k + sum_{j<k} p^j (1-p) F(tau_k - tau_j)] (C)
      P(timeout) = S(timeout) (all n copies),  P(reject) = 0                                      (T)

* ``503``: copy 0 is refused with probability p and answered 503 (the transaction is rejected, no more
  copies). Once copy 0 is admitted the transaction exists at the server: copy k >= 1 is sent iff
  R_0 > tau_k, and a refused one is absorbed (dropped silently, as under ``ignore``), an admitted one
  queues behind copy 0 (FIFO), so the response is copy 0's completion whatever the later copies'
  fates::

      E[copies] = 1 + (1 - p) sum_{k >= 1} F(tau_k),  P(reject) = p,                             (C), (J)
      P(timeout) = (1 - p) F(timeout),
      S(t) = p + (1 - p) F(t)                                                                     (S)

* goodput = lambda_0 (1 - P(timeout) - P(reject)) (G); duplicate ratio 1 - 1/E[copies] (D);
  P(R > T) = S(T) for T < timeout and P(timeout) + P(reject) for T >= timeout (R = inf when unanswered).

(The product form prod_k [p + (1 - p) F(t - tau_k)] would let a later copy answer before the first
admitted one, which FIFO excludes; it is not used.)

**Duplicate cost** c < 1: a copy that is not its transaction's first admitted copy costs c B, so the server's
service is the mixture "B with probability 1 - delta, c B with probability delta"
(:class:`qderive.symbolic.laws.mixture.Mixture`) while the first admitted copy (the tagged one: its completion is
the response) has its own service B, where delta = 1 - f / (q E[copies]) is the fraction of admitted copies that
are duplicates (f = 1 - p^n under silent refusal, q under 503: the transactions whose copy 0 is admitted; the
admitted copies per transaction are q E[copies] = q + q^2 sum_k F(tau_k) under 503). delta is a second unknown: for
each lambda it is the root of D(lambda, delta) = delta (D decreases in delta), found by the Illinois method.

**The mixture server** (a duplicate cost c < 1, or a service law per flow below). FIFO with single Poisson
arrivals: the wait of an admitted copy depends only on the state it finds and the copies ahead, so the tagged
copy's sojourn is W_M + B_own, W_M the wait of the queue with the mixture service and B_own its own law,
independent (:mod:`qderive.numeric.engines.mixture_sojourn`, (S1): one helper, :class:`MixtureServer`, over the
rooms; :meth:`Server._mixture`). The routes:

* ``--control none``: the infinite room (M/G/1 with the mixture and the vacations: the Pollaczek-Khinchine form
  compiled once with the mixture's weights as arguments), or with ``--capacity K`` the finite room (M/G/1/K with
  the mixture and the vacations, r = K - 1; p its loss probability);
* ``--control ignore|503`` without vacations: exponential laws, the control chain with a phase per law (rates
  1/E[B] and 1/(c E[B]), or one per flow; the tagged copy's first service at its own rate, ``tagged_chain``'s
  ``first_rate``; uniformization tails); other smooth laws, the departure-epoch chain of
  :mod:`qderive.numeric.engines.sip_control` with the mixture service (any L < H);
* ``--control ignore|503`` with vacations (L = H - 1): the finite room with K = H (the mode is invisible:
  :meth:`Server._finite_control`) with the mixture service.

Every route but the exponential chain inverts W_M(s) B_own(s) (Euler): the laws and the vacation must be smooth.
Refused with the reason (:func:`check_supported`, the model's validation): a constant service with c < 1 or with two
service laws (the mixture of constants has kinks at all their sums), another law or a vacation law with kinks in a
mixture route, c < 1 together with two service laws (two inner unknowns), L <= H - 2 with vacations.

**Two flows** (``--rate-non-invite`` lambda_2 > 0; the two-flow server of seed 001, INVITE and non-INVITE requests
in one FIFO server): flow 1 is ``--rate`` lambda_1 with ``--method``'s copy instants, flow 2 the other method's
(:meth:`~qderive.symbolic.models.sip_retransmission.SipRetransmissionModel.flow_copy_times`; Timer E capped at T2
when flow 1 is INVITE), both with the same timeout and service law. Under THE approximation both flows meet the same
server fed by Poisson copies at the total rate, so p and F are common and each flow's copies follow (C), (T), (J)
with its own instants; the fixed point is still one equation in lambda::

    lambda = lambda_1 E_1[copies](lambda) + lambda_2 E_2[copies](lambda)                          (F2)

(:meth:`_Map.offered`), solved by the scan and refinement below on [lambda_1 + lambda_2, (lambda_1 + lambda_2)
max n_i]. The top-level measures are the totals: goodput = sum_i lambda_i P_i(answered), mean_copies, P(timeout),
P(reject) and P(R > T) the transaction-weighted means sum_i lambda_i x_i / (lambda_1 + lambda_2), duplicate ratio
1 - 1/mean_copies; ``flows`` gives each flow's goodput, mean_copies, duplicate_ratio, timeout and reject
probabilities. The server is FIFO unless ``--discipline priority`` (below).

**A service law per flow** (``--service-non-invite`` B_2; the INVITE flow's B_1 = ``--service``): the server sees
the mixture service "B_1 with probability w, B_2 with probability 1 - w"
(:class:`qderive.symbolic.laws.mixture.LawMixture`), w = lambda_1 E_1[copies] / sum_i lambda_i E_i[copies] the share
of flow 1 in the admitted copies (q cancels), an inner unknown solved for each lambda as delta is
(:meth:`_Map._delta` with ``kind="share"``). Each flow's admitted copy has its own sojourn W_M + B_i (the mixture
server above, every room and control), so each flow has its own F_i in (C), (T), (S).

**Priority to non-INVITE copies** (``--discipline priority``, seed 001's algorithm 2: non-preemptive, arrival order
within a flow, in every mode; :mod:`qderive.numeric.engines.sip_priority`). The class rates w lambda and
(1 - w) lambda matter even with one service law, so the share w is the inner unknown (:attr:`_Map.inner`); p stays
common (the refusal counts every copy) and each flow has its own F_i (:meth:`Server._priority`): without control
and capacity the M/G/1 non-preemptive priority queue's transforms (Kesten-Runnenburg; (P1), (P2) there; a class
without stationary regime -- the INVITE flow when rho >= 1, both when the non-INVITE load alone reaches 1 -- has
F = 1, the non-INVITE flow then sees the INVITE services as vacations); under ``ignore``/``503`` with exponential
laws the control chain on (n_H, n_L, class in service, mode) and one tagged chain per class (uniformization). The
outer fixed point (F2) is unchanged. Without control the inner equation w = share(w) can have several roots
(share increases with w; past saturation the non-INVITE flow is answered with few copies or collapsed with all of
them): :meth:`_Map._priority_share` brackets them on a grid and :func:`solve` collects the fixed points on the
largest and on the smallest root (:meth:`_Map.branches`); under control the root is found by the secant method
from the transactions' share (:func:`_share_secant`, the Illinois method on [0, 1] if it fails). The rest
(capacity, vacation, duplicate cost, kinked laws, non-exponential laws under control) is refused by
:func:`check_supported` naming the option.

**Seed 001's threshold server** (``--control threshold``, two flows, exponential laws; :meth:`Server._threshold`).
At the class copy rates Lambda_INVITE, Lambda_NON_INVITE the server IS the model ``two-flow``
(:mod:`qderive.numeric.engines.two_flow`): ``TwoFlowModel(Lambda_I, Lambda_N, 1/E[B_I], 1/E[B_N], L, H, R,
algorithm)`` with R = ``--capacity`` (default H + 1, where R does not bind) and the algorithm of ``--discipline``
(priority: seed 001's algorithm 2, non-INVITE first in modes 1 and 2 only, arrival order in mode 0). The refusal is
class-dependent: by PASTA a copy of class c is refused with p_c = B_c (C.3) (mode 1 refuses INVITE, mode 2 and a
full buffer everything), and every refusal is a 503, so each flow's copies follow the ``503`` fates (C), (T), (J)
with its own (p_c, q_c) and its class's sojourn law F_c (the two-flow tagged chain restricted to class c,
:func:`qderive.numeric.engines.ctmc_wait.tagged_two_flow`; uniformization tails)::

    E_c[copies] = 1 + q_c sum_{k >= 1} F_c(tau_k),  P_c(reject) = p_c,  P_c(timeout) = q_c F_c(timeout)

The inner unknown is the *offered* share w = Lambda_1 / (Lambda_1 + Lambda_2) = lambda_1 E_1[copies] / sum_i lambda_i
E_i[copies] (flow 1 = ``--method``'s; q_c differs per class and does not cancel in an admitted share, so the share
is defined on the offered copies, which is what the two-flow server takes), solved per lambda by the secant method
from the transactions' share (the Illinois method on [2^-30, 1 - 2^-30] if it fails: both class rates stay > 0);
the outer fixed point (F2) is unchanged. ``copy_refusal_probability`` (in ``solutions``) is the copy-weighted mean
(Lambda_1 p_1 + Lambda_2 p_2) / lambda; the per-flow p_c are in a note. No new chain: the two-flow engine's solve
and tagged chains. The simulator runs this control too (:mod:`qderive.numeric.simulation.sip`, the same three
modes copy by copy).

**Retry-After** (``--retry-after T --retries m``, under ``503`` and ``threshold``): a request rejected by 503 is sent
again as a new transaction T later, at most m times. Under THE approximation a retry is one more Poisson
transaction of its flow with the same fates, so with J_i = P_i(reject) of one flow-i transaction at the fixed point
(the ``reject_probability`` of :func:`copy_fates`) the flow's transaction rate and the fixed point are::

    Lambda_0i = lambda_i (1 + J_i + ... + J_i^m),   lambda = sum_i Lambda_0i(lambda) E_i[copies](lambda)        (R)

(:meth:`_Map.transaction_rates`; positive terms, no 1 - J subtraction; the scan runs on [lambda_0, lambda_0 n
(m + 1)]; the inner share of two flows weighs the flows by Lambda_0i). T does not enter the stationary rates. The
measures weigh the flows by Lambda_0i: goodput = sum_i Lambda_0i P_i(answered) (answered transactions = answered
requests per second), the per-transaction probabilities stay per transaction; ``request_reject_probability`` =
sum_i lambda_i J_i^(m+1) / sum_i lambda_i (the requests finally rejected) and ``retry_rate`` = sum_i (Lambda_0i -
lambda_i) (retried transactions per second).

**The fixed point** (F): r(lambda) = lambda_0 E[copies](lambda) - lambda on [lambda_0, n lambda_0]
(r(lambda_0) >= 0 >= r(n lambda_0)): scanned at ``scan_points`` points in float64 (tails by one Euler
parameter set or the law's own sum; the inversion's error is absolute and grows with t, measured up to 3e-10 at
t = 15.5 s for M/M/1), every sign
change refined by the Illinois method to 1e-13 relative, then, for ``--digits D``, by the secant
method on the residual evaluated at D + 5 digits until the step is below 10^-(D+3) lambda. Three
crossings (bistability) give three solutions; a crossing's stability is the slope g'(lambda*) of
g = lambda_0 E[copies] (stable iff g' < 1: the iteration lambda <- g(lambda) is attracted; g is
increasing in lambda). The measures at each solution use the sub-models' ``evaluate`` at the requested
digits and the same tails as the scan (:meth:`Server.tails`: a phase-type law's own uniformization, with
relative accuracy, or one Euler inversion whose error is absolute -- said in a note).
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import numpy as np
from qderive.symbolic.errors import NumericalError, ParameterError
from qderive.symbolic.models.sip_retransmission import Control
from qderive.symbolic.numbers import decimal_text

from ..backend import FLOAT64, mp_context
from ..kernels.chains import gth_stationary
from ..kernels.inversion import euler_inversion, euler_parameters
from ..kernels.tails import TAIL_FLOAT64_SETS, tail_transform
from .base import Engine, Trouble
from .mixture_sojourn import MixtureServer, Room, smooth_laws

__all__ = ["SipEngine", "Server", "copy_fates", "solve", "control_chain", "check_supported"]


def _exact(x) -> Fraction:
    """An exact rational from a float, an mpf or a Fraction (binary values exactly)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, float, np.floating)):
        return Fraction(float(x))
    man, exp = mpmath.mpf(x).man_exp
    return Fraction(int(man)) * 2**int(exp) if exp >= 0 else Fraction(int(man), 2**int(-exp))


# --------------------------------------------------------------------------------------
# The control chain (exponential service)
# --------------------------------------------------------------------------------------


def control_chain(L: int, H: int, lam, rates, weights):
    """The states and moves (i, j, rate) of the contract's hysteresis with phase-typed exponential services
    (module docstring): states (0, -1, normal), (n, phase, normal) n = 1..H and (n, phase, overload)
    n = L+1..H; ``rates`` the service rate of each phase, ``weights`` the law of a starting copy's phase (the
    mixture of first copies, rate 1/E[B], and duplicates, rate 1/(c E[B]); one phase when c = 1)."""
    P = len(rates)
    states = [(0, -1, 0)] + [(n, j, 0) for n in range(1, H + 1) for j in range(P)] + [
        (n, j, 1) for n in range(L + 1, H + 1) for j in range(P)]
    index = {x: i for i, x in enumerate(states)}
    moves = []
    for (n, j, s) in states:
        i = index[(n, j, s)]
        if s == 0 and n == 0:
            moves += [(i, index[(1, k, 0)], lam * w) for k, w in enumerate(weights)]
        elif s == 0:  # an arrival finding N >= H switches to overload (and is refused)
            moves.append((i, index[(n + 1, j, 0)] if n < H else index[(H, j, 1)], lam))
        if n >= 1:
            after = 0 if s == 0 or n - 1 == L else 1  # a departure leaving L returns to normal
            if n == 1:
                moves.append((i, 0, rates[j]))
            else:
                moves += [(i, index[(n - 1, k, after)], rates[j] * w) for k, w in enumerate(weights)]
    return states, moves


def tagged_chain(states, H, rates, weights, first_rate, pi_of):
    """The sojourn chain of an admitted *first* copy (position p = copies ahead; the phase of the copy in
    service; its own service at ``first_rate``): entry (n, phase) with weight pi(n, phase, normal), n < H."""
    from .ctmc_wait import TaggedChain

    P = len(rates)
    tag = [(0, -1)] + [(p, j) for p in range(1, H) for j in range(P)]
    where = {x: i for i, x in enumerate(tag)}
    values, rows, cols, kinds, totals = [], [], [], [], []

    def kind(r):
        if r not in values:
            values.append(r)
        return values.index(r)

    for (p, j) in tag:
        i = where[(p, j)]
        if p == 0:
            rows.append(i), cols.append(-1), kinds.append(kind(first_rate))
            totals.append(first_rate)
            continue
        targets = [(0, -1, 1)] if p == 1 else [(p - 1, k, w) for k, w in enumerate(weights)]
        for q, k, w in targets:
            rows.append(i), cols.append(where[(q, k)]), kinds.append(kind(rates[j] * w))
        totals.append(rates[j])
    entries = [(where[(n, j)], si) for si, (n, j, s) in enumerate(states) if s == 0 and n < H]

    def entry(ctx):
        pi = pi_of(ctx)
        w = ctx.zeros(len(tag))
        for ti, si in entries:
            w[ti] = pi[si]
        total = float(np.sum(w)) if ctx.is_float64 else ctx.fsum(w.tolist())
        return w / total

    levels = np.array([p for p, _ in tag], dtype=np.int64)
    return TaggedChain(levels, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
                       np.array(kinds, dtype=np.int64), tuple(values), tuple(totals), entry, len(states))


def _stationary(size, moves, ctx):
    """pi of the chain (i, j, rate) by the one GTH, which scales pi by the first state (the empty one). Far above
    capacity pi(n) grows like (lambda E[B])^n and the ratios overflow float64 (H = 500, lambda E[B] = 6.3): then the
    states are taken in reverse order (scaled by a full state; the tiny ratios of the nearly empty states may
    underflow, harmlessly). The order below capacity is unchanged (the same float64 numbers as before)."""
    A = ctx.zeros((size, size))
    for i, j, r in moves:
        A[i, j] = A[i, j] + ctx.num(r)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            pi = gth_stationary(ctx, A)
        if not ctx.is_float64 or np.all(np.isfinite(pi)):
            return pi
    except OverflowError:
        pass
    order = np.arange(size)[::-1]
    pi = ctx.zeros(size)
    pi[order] = gth_stationary(ctx, A[np.ix_(order, order)])
    return pi


# --------------------------------------------------------------------------------------
# The server at copy rate lambda
# --------------------------------------------------------------------------------------


class Server:
    """The server fed by Poisson copies at rate ``lam`` (exact): ``refused(digits)`` (p, utilization) and
    ``tails(ts, digits, fast)`` P(R_copy > t) of an admitted copy (module docstring)."""

    def __init__(self, model, lam: Fraction, delta: Fraction = Fraction(0), share=None):
        from qderive.symbolic.batches.finite import Constant
        from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy, VacationQueue

        self.model, self.lam, self.delta, self.share = model, lam, delta, share
        self.saturated = False
        self.base = self.chain = self.general = self.mixed = None
        #: a service law per flow (``service_non_invite``): (B_1, B_2) of the flows, the server's service their
        #: mixture "B_1 with probability w = ``share``, B_2 with 1 - w" and ``flow_laws`` each flow's sojourn law
        self.flow_services = model.flow_services() if share is not None else None
        self.flow_laws = None
        self.service = model.service
        #: the admitted first copy's own service law(s) when the server's service is a mixture (module docstring,
        #: *Duplicate cost*, *A service law per flow*), else None
        self.owns = None
        self.utilization = None
        #: ``--control threshold``: the two-flow server (:class:`~qderive.symbolic.models.two_flow.TwoFlowModel`) at
        #: the flows' copy rates, and its solutions by context
        self.two_flow = None
        if model.control is Control.THRESHOLD:
            self._threshold()
            return
        if share is not None:
            from qderive.symbolic.laws.mixture import LawMixture

            self.service = LawMixture.of(*self.flow_services, share)
            self.owns = self.flow_services
        elif delta != 0:
            from qderive.symbolic.laws.mixture import Mixture

            self.service = Mixture.of(model.service, model.duplicate_cost, delta)
            self.owns = (model.service,)
        if _priority(model):
            self._priority()
            return
        control = model.control
        vacation, policy = getattr(model, "vacation", None), getattr(model, "vacation_policy", None)
        policy = policy or VacationPolicy.MULTIPLE
        if control is Control.NONE and model.capacity is None:
            if lam * self.service.moment(1) >= 1:
                self.saturated = True
                return
            if self.owns is not None:
                self._mixture(Room.INFINITE, vacation=vacation, policy=policy)
                return
            self.base = VacationQueue(lam, Constant(1), self.service, vacation, policy)
            from .vacation_wait import response_laws
        elif control is Control.NONE:
            if self.owns is not None:
                self._mixture(Room.FINITE, places=model.capacity, vacation=vacation, policy=policy)
                return
            self.base = FiniteVacationQueue(lam, Constant(1), model.service, vacation, model.capacity - 1,
                                            Admission.PARTIAL, policy)
            from .vacation_finite_wait import response_laws
        elif vacation is not None:  # with vacations: M/G/1/H with them for L = H - 1, else the chain with vacations
            L, H = model.thresholds
            if self.owns is not None:
                if L == H - 1:
                    self._mixture(Room.FINITE, places=H, vacation=vacation, policy=policy)
                else:
                    self._mixture(Room.CONTROL, thresholds=(L, H), vacation=vacation, policy=policy)
            elif L == H - 1 and self.finite_room:
                self._finite_control(L, H)
            else:
                self._general_control(L, H)
            return
        else:
            self._control()
            return
        self.law = response_laws(self.base)["sojourn"]
        self._check_tails()

    def _threshold(self):
        """``--control threshold``: seed 001's two-flow server (model ``two-flow``,
        :mod:`qderive.numeric.engines.two_flow`) at the class copy rates Lambda_1 = w lambda (``--method``'s flow)
        and Lambda_2 = (1 - w) lambda (w = ``share``, the offered share)::

            TwoFlowModel(Lambda_INVITE, Lambda_NON_INVITE, 1/E[B_INVITE], 1/E[B_NON_INVITE], L, H, R, algorithm)

        R = ``capacity`` (default H + 1), algorithm FIFO or PRIORITY (seed 001's algorithm 2: non-INVITE first in
        modes 1 and 2 only) from ``--discipline``. Each flow's admitted copy has the sojourn law of its class
        (:func:`qderive.numeric.engines.ctmc_wait.tagged_two_flow` with ``flow``: uniformization tails), each flow
        its own refusal probability p_c = B_c (:meth:`refused_flows`, PASTA, (C.3) of
        ``docs/theory/other-models.md`` section C)."""
        from qderive.symbolic.models.two_flow import Algorithm, TwoFlowModel

        from .ctmc_wait import tagged_two_flow

        model = self.model
        names = [name for name, _, _ in model.flows()]
        inv = names.index("invite")
        non = 1 - inv
        w = self.share if self.share is not None else model.rate / (model.rate + model.rate_non_invite)
        rates = (self.lam * w, self.lam * (1 - w))
        laws = model.flow_services()
        L, H = model.thresholds
        algorithm = Algorithm.PRIORITY if model.discipline.value == "priority" else Algorithm.FIFO
        self.two_flow = TwoFlowModel(rates[inv], rates[non], 1 / laws[inv].mean, 1 / laws[non].mean, L, H,
                                     model.threshold_capacity, algorithm)
        #: the two-flow class (1 = INVITE, 2 = non-INVITE) of each flow of ``model.flows()``
        self.classes = (1, 2) if inv == 0 else (2, 1)
        self._solutions = {}
        self.flow_laws = tuple(phase_type_laws_of(tagged_two_flow(self.two_flow, c, self._two_flow_solution))
                               for c in self.classes)
        self.law = self.flow_laws[0]

    def _two_flow_solution(self, ctx):
        """The two-flow chain's stationary solution in ``ctx`` (:func:`qderive.numeric.engines.two_flow.solve`),
        kept per context; when the sparse float64 solver (chains above ``DENSE_FLOAT64`` states) does not converge,
        as past the server's capacity, the dense GTH in float64 (within the limit ``dense_states``)."""
        from qderive.symbolic.models.two_flow import Solver

        from . import two_flow as TF
        from .level_solver import ConvergenceError

        key = "float64" if ctx.is_float64 else ctx.dps
        if key not in self._solutions:
            with ctx:
                try:
                    self._solutions[key] = TF.solve(self.two_flow, ctx)
                except ConvergenceError:
                    self._solutions[key] = TF.solve(self.two_flow, ctx, Solver.GTH)
        return self._solutions[key]

    def refused_flows(self, digits):
        """``--control threshold``: ((p_i, q_i) of each flow of ``model.flows()``, p = the copy-weighted refusal
        probability (Lambda_1 p_1 + Lambda_2 p_2) / lambda, q = 1 - p, utilization); p_c = B_c of the two-flow
        server (PASTA: the states refusing class c, (C.3)), q_c the states admitting it (each a sum of positive
        terms, never 1 - p_c); utilization P(n > 0). None for the other controls (a common p)."""
        if self.two_flow is None:
            return None
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        sol = self._two_flow_solution(ctx)
        with ctx:
            pq = [(sol.rejection_probability(c), sol._sum(sol.space.accepts(c))) for c in self.classes]
            if digits is None:
                pq = [(float(p), float(q)) for p, q in pq]
            rates = [ctx.num(r) for r in (self.two_flow.arrival_rates[c - 1] for c in self.classes)]
            total = rates[0] + rates[1]
            p = (rates[0] * pq[0][0] + rates[1] * pq[1][0]) / total
            q = (rates[0] * pq[0][1] + rates[1] * pq[1][1]) / total
            busy = sol._sum(sol.space.length > 0)
            return pq, p, q, (float(busy) if digits is None else busy)

    def _priority(self):
        """``--discipline priority`` (non-INVITE copies first, :mod:`qderive.numeric.engines.sip_priority`): each
        flow's sojourn law (:attr:`flow_laws`) at the class rates Lambda_1 = w lambda, Lambda_2 = (1 - w) lambda
        (w = ``share``). ``--control none``: the M/G/1 non-preemptive priority queue (route (a): (P1), (P2); a class
        without stationary regime answers nothing); ``ignore``/``503``: the control chain with priority and the
        tagged chains per class (route (b), exponential laws; :func:`check_supported` refuses the rest)."""
        from . import sip_priority as SP

        model = self.model
        names = [name for name, _, _ in model.flows()]
        hi = names.index("non-invite")
        lo = 1 - hi
        laws = self.flow_services
        rates = (self.lam * self.share, self.lam * (1 - self.share))
        self.law = None
        if model.control is Control.NONE:
            law_hi, law_lo, self.utilization = SP.mg1_priority_laws(laws[hi], laws[lo], rates[hi], rates[lo])
            if law_hi is None:
                self.saturated = True
                return
            never = SP.never_law()
            out = [None, None]
            out[hi], out[lo] = law_hi, (law_lo or never)
            self.flow_laws = tuple(out)
            return
        L, H = model.thresholds
        values = SP.chain_rates(rates[hi], rates[lo], 1 / laws[hi].mean, 1 / laws[lo].mean)
        self.states, labelled = SP.priority_chain(L, H)
        self.moves = [(i, j, values[k]) for i, j, k in labelled]
        self.size = len(self.states)
        self.admitted = [i for i, (nh, nl, _, s) in enumerate(self.states) if s == 0 and nh + nl < H]
        self._pi = {}
        out = [None, None]
        out[hi] = phase_type_laws_of(SP.tagged_high(L, H, values, self.pi))
        out[lo] = phase_type_laws_of(SP.tagged_low(L, H, values, self.pi))
        self.flow_laws = tuple(out)

    def _mixture(self, room, **where):
        """The server whose service is the mixture :attr:`service` and whose tagged copy has its own law(s)
        :attr:`owns`: the sojourn W_M + B_own in the room ``room``
        (:class:`~qderive.numeric.engines.mixture_sojourn.MixtureServer`; the control room keeps its
        :class:`~qderive.numeric.engines.sip_control.ControlServer` as :attr:`general`)."""
        self.mixed = MixtureServer(room, self.lam, self.service, self.owns, **where)
        self.general = self.mixed.control
        self.law = self.mixed.laws[0]
        if self.share is not None:
            self.flow_laws = self.mixed.laws
        if not self.law.smooth:  # refused earlier by check_supported, which names the option
            raise ParameterError("--service", f"has no smooth density here ({self.law.why_not_smooth}): the mixture "
                                 "queue's wait is inverted, for smooth laws only", self.model.service.spec_text())

    def _check_tails(self):
        """Refuse a sojourn law with neither a smooth transform nor tails of its own, naming the option at fault (the
        vacation's when a vacation law is given and the service alone would do)."""
        model = self.model
        vacation = getattr(model, "vacation", None)
        if vacation is not None and not self.law.smooth and self.law.tails is not None and \
                self.base.name == "vacation-infinite":
            # the infinite room's exact tails of a kinked law with vacations (shifted inversions, the lattice sum with
            # the vacation's pieces) take seconds per evaluation, and the scan of the fixed point needs hundreds
            at_fault = "--vacation" if "vacation" in self.law.why_not_smooth else "--service"
            law = vacation if at_fault == "--vacation" else model.service
            raise ParameterError(at_fault, f"has no smooth density with --vacation in this server "
                                 f"({self.law.why_not_smooth}): its exact sojourn tails take seconds each and the "
                                 "fixed point needs hundreds of them; use smooth laws (exp, erlang, hyperexp, gamma, "
                                 "ph), or the simulator (qderive simulate sip-retransmission)", law.spec_text())
        if self.law.smooth or self.law.tails is not None:
            return
        at_fault = "--service" if vacation is None or "vacation" not in self.law.why_not_smooth else "--vacation"
        law = model.service if at_fault == "--service" else vacation
        raise ParameterError(at_fault, f"has no exact response-time tails in this server: {self.law.why_not_smooth} "
                             "(use a smooth law: exp, erlang, hyperexp, gamma, ph)", law.spec_text())

    def _control(self):
        from qderive.symbolic.laws.gamma import Exponential

        from .ctmc_wait import phase_type_laws

        model = self.model
        L, H = model.thresholds
        laws = self.flow_services if self.share is not None else (model.service,)
        if not (all(isinstance(B, Exponential) for B in laws) and self.exponential_chain):
            if self.owns is not None:  # the mixture service (duplicate cost, a law per flow): any L < H
                self._mixture(Room.CONTROL, thresholds=(L, H))
            elif L == H - 1 and self.finite_room:
                self._finite_control(L, H)
            else:
                self._general_control(L, H)
            return
        mu = 1 / model.service.mean
        d = self.delta
        if self.share is not None:  # a service law per flow: the phases are the flows' rates, w the INVITE share
            phases = [(1 / B.mean, w) for B, w in zip(self.flow_services, (self.share, 1 - self.share))]
        else:
            phases = [(mu, 1 - d), (mu / model.duplicate_cost, d)]
        phases = [(r, w) for r, w in phases if w > 0]
        rates, weights = tuple(r for r, _ in phases), tuple(w for _, w in phases)
        self.states, self.moves = control_chain(L, H, self.lam, rates, weights)
        self.size = len(self.states)
        self.admitted = [i for i, (n, _, s) in enumerate(self.states) if s == 0 and n < H]
        self._pi = {}
        self.law = phase_type_laws(tagged_chain(self.states, H, rates, weights, mu, self.pi))["sojourn"]
        if self.share is not None:  # each flow's admitted copy: its own first service rate (tagged_chain's first_rate)
            self.flow_laws = tuple(phase_type_laws(tagged_chain(self.states, H, rates, weights, 1 / B.mean,
                                                                self.pi))["sojourn"] for B in self.flow_services)

    #: the exponential service's own chain (False: the M/G/1/H route of :meth:`_finite_control` for L = H - 1
    #: also for exponential service; the tests compare the two routes)
    exponential_chain = True
    #: the M/G/1/H route for L = H - 1 and c = 1 (False: the general control route of :meth:`_general_control`,
    #: which reduces to it there; the tests compare the two)
    finite_room = True

    def _general_control(self, L, H):
        """The control with a general service law and any L < H: the departure-epoch chain of
        :mod:`qderive.numeric.engines.sip_control` (p by PASTA from the refusals per departure interval, the admitted
        copy's sojourn by the finite room's wait machinery over the normal-mode service starts). A mixture service
        (a duplicate cost c < 1, a law per flow) takes :meth:`_mixture` with the control room."""
        from .sip_control import ControlServer

        model = self.model
        vacation = getattr(model, "vacation", None)
        self.general = ControlServer(self.lam, model.service, L, H, vacation=vacation,
                                     policy=getattr(model, "vacation_policy", None))
        self.law = self.general.law
        if not self.law.smooth and self.law.tails is None:
            at_fault = "--vacation" if vacation is not None and "vacation" in self.law.why_not_smooth else "--service"
            law = vacation if at_fault == "--vacation" else model.service
            raise ParameterError(at_fault, f"has no exact response-time tails in this server: "
                                 f"{self.law.why_not_smooth} (use a smooth law: exp, erlang, hyperexp, gamma, ph)",
                                 law.spec_text())

    def _finite_control(self, L, H):
        """The control with a general service law: exact for L = H - 1 only, where it is M/G/1/H (module docstring).

        With L = H - 1 the overload states are (H, overload) alone, and both (H, normal) and (H, overload) refuse
        every arrival and return to (H - 1, normal) at the departure: the mode is invisible, the count is that of
        M/G/1/K with K = H, i.e. ``vacation-finite`` with r = H - 1 waiting places (``docs/theory/chapter2.md``
        section 2), p its loss probability by PASTA, F the sojourn of an admitted copy
        (:mod:`qderive.numeric.engines.vacation_finite_wait`). For L <= H - 2 the state (H, normal), left by an
        arrival (to overload) or a departure (to H - 1, admitting), makes the mode a race between the Poisson
        arrival and the residual service, which no other qderive model has (``hysteretic --policy instant`` with
        thresholds (L + 1, H, H + 1) has no state (H, normal) and blocks after the departure: for exponential
        service it refuses 0.1687 of the copies where the contract's chain refuses 0.1515 at lambda = 8, mu = 10,
        (L, H) = (1, 4)): :meth:`_general_control` solves it, and a duplicate cost c < 1.

        **With vacations** (``--vacation``; the route for every service law, exponential too) the argument holds
        with N counting the waiting copies plus the server's place, which a vacation takes (the model's module
        docstring): the overload states are again (H, overload) alone; at N = H the waiting room of H - 1 places
        is full, so both (H, normal) and (H, overload) refuse every arrival, and N leaves H only downwards, to
        H - 1 (normal, as L = H - 1), at the departure or at the end of the vacation (a copy moves from the room
        to the server). A vacation never starts with N = H: it starts when the server is empty (N = 1 with the
        vacation, < H as H >= 2). So the count is that of M/G/1/r with r = H - 1 and the vacations
        (``vacation-finite`` with the same law and policy; ``docs/theory/chapter2.md`` section 2), whose waiting
        room has r places also during a vacation."""
        from qderive.symbolic.batches.finite import Constant
        from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy

        from .vacation_finite_wait import response_laws

        model = self.model
        if L != H - 1 or self.delta != 0:  # refused by the model's validation (SipRetransmissionModel._validate)
            raise ParameterError("--thresholds", "a general service law needs L = H - 1 and --duplicate-cost 1",
                                 f"{L},{H}")
        self.base = FiniteVacationQueue(self.lam, Constant(1), model.service, getattr(model, "vacation", None), H - 1,
                                        Admission.PARTIAL, getattr(model, "vacation_policy", None)
                                        or VacationPolicy.MULTIPLE)
        self.law = response_laws(self.base)["sojourn"]
        self._check_tails()

    def pi(self, ctx):
        key = "float64" if ctx.is_float64 else ctx.dps
        if key not in self._pi:
            with ctx:
                self._pi[key] = _stationary(self.size, self.moves, ctx)
        return self._pi[key]

    def refused(self, digits):
        """(p, q = 1 - p, utilization) as context numbers (floats for ``digits`` None); q is computed directly
        (the admitted mass, or throughput / lambda), never as 1 - p, so that an almost sure refusal keeps the
        relative accuracy of q."""
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        if self.saturated:
            return ctx.num(0), ctx.num(1), ctx.num(1)
        if self.two_flow is not None:  # --control threshold: the copy-weighted mean of the flows' p_c
            _, p, q, busy = self.refused_flows(digits)
            return p, q, busy
        if self.utilization is not None:  # priority without control: the M/G/1 queue (min(rho, 1))
            return ctx.num(0), ctx.num(1), ctx.num(self.utilization)
        if self.mixed is not None:
            return self.mixed.refused(digits)
        if self.general is not None:
            return self.general.refused(ctx)
        if self.base is not None:
            if self.model.control is Control.NONE and self.model.capacity is None:
                return ctx.num(0), ctx.num(1), ctx.num(self.lam * self.service.moment(1))
            rec = self.base.evaluate(digits)
            with ctx:
                q = rec.throughput / ctx.num(self.lam)
                return rec.loss_probability, q, rec.throughput * ctx.num(self.model.service.moment(1))
        pi = self.pi(ctx)
        with ctx:
            adm = pi[self.admitted]
            q = float(np.sum(adm)) if ctx.is_float64 else ctx.fsum(adm.tolist())
            busy = float(np.sum(pi[1:])) if ctx.is_float64 else ctx.fsum(pi[1:].tolist())
            return 1 - q, q, busy

    def tails(self, ts, digits, fast=False, law=None):
        """(P(R_copy > t) for t in ``ts`` (exact, > 0), notes), clipped to [0, 1]. A law with its own tails
        (phase-type by uniformization, the lattice sum of a constant service) gives them to its relative
        accuracy; otherwise the Euler inversion of the sojourn transform with one parameter set, whose error
        is absolute: up to about 1e-9 in float64 (it grows with t: 3e-10 at t = 15.5 s measured for M/M/1),
        10^-(digits + 5) at ``digits`` (``fast`` is accepted for symmetry: the scan and the reported measures
        use the same tails). ``law``: another sojourn law of this server (a flow's own, :attr:`flow_laws`)."""
        one = 1.0 if digits is None else mpmath.mpf(1)
        law = getattr(self, "law", None) if law is None else law  # (none when saturated)
        if self.saturated or not ts:
            return [one for _ in ts], []
        ts = list(ts)
        if law.tails is not None:
            try:
                with np.errstate(all="ignore"):  # a float64 sum that overflows returns None (recomputed below)
                    values, _ = law.tails(ts, digits)
            except ParameterError as err:  # the uniformization budget: name what the user controls
                raise ParameterError("--timeout", f"the copy instants are too long for the service rate: {err.constraint}"
                                     " (a smaller --timeout or --t1, a larger --duplicate-cost: duplicates are served at rate 1/(c E[B]))") from None
            if any(v is None for v in values):  # the float64 lattice sum cancels there: 15 digits
                redo = [t for t, v in zip(ts, values) if v is None]
                got = dict(zip(redo, law.tails(redo, 15)[0]))
                values = [float(got[t]) if v is None else v for t, v in zip(ts, values)]
            return [_clip(v, one) for v in values], []
        if digits is None:
            G = tail_transform(law.transform(FLOAT64))
            A, n, m = TAIL_FLOAT64_SETS[0]
            with np.errstate(all="ignore"):
                a = euler_inversion(FLOAT64, G, np.array([float(t) for t in ts]), A, n, m)
            if not np.all(np.isfinite(a)):
                raise Trouble("the float64 inversion of the sojourn transform overflowed")
            return [_clip(float(v), one) for v in a], [_ABSOLUTE_NOTE.format("up to about 1e-9 (it grows with t)")]
        want = digits + 5
        ctx = mp_context(int(1.5 * want) + 10)
        A, n, m = euler_parameters(want)
        with ctx:
            G = tail_transform(law.transform(ctx))
            a = euler_inversion(ctx, G, ctx.array(ts), ctx.num(Fraction(A).limit_denominator(10**12)), n, m)
            return [_clip(+v, one) for v in a], [_ABSOLUTE_NOTE.format(f"below 1e-{want}")]


def _priority(model) -> bool:
    """True for ``--discipline priority`` with two flows (the server of :mod:`qderive.numeric.engines.sip_priority`;
    not under ``--control threshold``, whose two-flow server orders the flows itself)."""
    if getattr(model, "control", None) is Control.THRESHOLD:
        return False
    return getattr(getattr(model, "discipline", None), "value", "fifo") == "priority" and bool(
        getattr(model, "rate_non_invite", 0))


def phase_type_laws_of(chain):
    """The sojourn law of a tagged chain (:func:`qderive.numeric.engines.ctmc_wait.phase_type_laws`)."""
    from .ctmc_wait import phase_type_laws

    return phase_type_laws(chain)["sojourn"]


_ABSOLUTE_NOTE = ("the copy sojourn tails P(R_copy > t) come from one Euler inversion of its transform, absolute "
                  "error {}: probabilities smaller than that (timeout_probability, response_tail) carry no "
                  "relative digits")


def _clip(v, one):
    return one * 0 if v < 0 else (one if v > 1 else v)


# --------------------------------------------------------------------------------------
# The copies of one transaction
# --------------------------------------------------------------------------------------


def _needed(control, taus, timeout, tail_times=()):
    """The times t > 0 at which F(t) is needed by :func:`copy_fates`."""
    need = set()
    if control is Control.REJECT:
        need.update(taus[1:])
        need.add(timeout)
        need.update(t for t in tail_times if 0 < t < timeout)
        return sorted(need)
    for k in range(1, len(taus)):
        need.update(taus[k] - taus[j] for j in range(k))
    need.update(timeout - t for t in taus)
    for T in tail_times:
        if T < timeout:
            need.update(T - t for t in taus if t < T)
    return sorted(need)


def copy_fates(control, taus, timeout, p, q, F, tail_times=()):
    """E[copies], P(timeout), P(reject), P(answered) and S(T) = P(R > T) for T in ``tail_times`` (module docstring,
    (S), (C), (T), (J)) from p = P(a copy is refused), q = 1 - p and F (a dict t -> P(R_copy > t) for the times of
    :func:`_needed`), in the arithmetic of p. P(answered) is a sum of nonnegative terms (the goodput keeps its
    relative accuracy when almost every transaction times out)."""
    one = p * 0 + 1
    zero = 0 * one

    def f(t):
        return one if t <= 0 else F[t]

    n = len(taus)
    ends = list(taus[1:]) + [timeout]
    if control is Control.REJECT:
        # copy 0 refused: rejected; admitted: copy k sent iff R_0 > tau_k (a refused later copy is absorbed)
        sent = [one] + [q * f(taus[k]) for k in range(1, n)]
        mean = sum(sent[1:], one)
        reject = p
        timeout_p = q * f(timeout)
        # answered: R_0 in (tau_m, tau_{m+1}] (tau_n = timeout), a sum of nonnegative terms
        answered = sum((q * max(zero, f(taus[m]) - f(ends[m])) for m in range(n)), zero)

        def S(T):
            return p + q * f(min(T, timeout))
    else:
        def S_before(T, m):
            return p**m + sum((p**j * q * f(T - taus[j]) for j in range(m)), zero)

        sent = [one] + [S_before(taus[k], k) for k in range(1, n)]
        mean = sum(sent[1:], one)
        reject = zero
        timeout_p = S_before(timeout, n)
        answered = sum((p**j * q * (1 - f(timeout - taus[j])) for j in range(n)), zero)

        def S(T):
            if T >= timeout:
                return timeout_p
            return S_before(T, sum(1 for t in taus if t <= T))
    return {"mean_copies": mean, "timeout_probability": timeout_p, "reject_probability": reject,
            "answered": answered, "sent": sent, "tail": [S(T) for T in tail_times]}


# --------------------------------------------------------------------------------------
# The fixed point
# --------------------------------------------------------------------------------------


class _Map:
    """g(lambda) = lambda_0 E[copies](lambda), or sum_i lambda_i E_i[copies](lambda) over the flows (F2), with the
    servers kept per lambda."""

    def __init__(self, model):
        self.model = model
        self.taus = model.copy_times()
        self.timeout = model.timer
        #: the copies' fates follow (C), (T), (J) of this control: ``--control threshold`` answers a refused copy with
        #: 503 (the semantics of ``503``: copy 0 refused -> rejected, a later refused copy absorbed)
        self.fate_control = Control.REJECT if model.control is Control.THRESHOLD else model.control
        self.need = _needed(self.fate_control, self.taus, self.timeout)
        self.servers = {}
        #: (name, lambda_i, copy instants) of each flow (one, or two with ``rate_non_invite``; module docstring, (F2))
        flows = getattr(model, "flows", None)
        self.flows = flows() if flows is not None else ((model.method.value, model.rate, self.taus),)
        self.max_copies = max(len(t) for _, _, t in self.flows)
        self.total_rate = sum(r for _, r, _ in self.flows)
        #: m, the retries of a request rejected by 503 (``--retry-after``; 0: none), (R)
        self.retries = getattr(model, "retry_count", 0)
        #: ``--discipline priority`` without control: which root of the inner share equation (it may have several:
        #: share(w) increases with w) -- "high" the largest w (the fewest non-INVITE copies), "low" the smallest
        self.branch = None

    def branches(self):
        """The inner-root branches whose fixed points :func:`solve` collects: ("high", "low") for priority without
        control (:meth:`_priority_share`), else (None,)."""
        if self.inner == "share" and _priority(self.model) and self.model.control is Control.NONE:
            return ("high", "low")
        return (None,)

    def server(self, lam, digits=None) -> Server:
        """The server at copy rate ``lam``; with duplicate cost c < 1 at the duplicate fraction delta*(lam); with a
        service law per flow (``service_non_invite``) at the INVITE share w*(lam) of the admitted copies."""
        lam = _exact(lam)
        kind = self.inner
        if kind is None:
            x = Fraction(0)
        else:
            key = (kind, lam, digits, self.branch)
            if key not in self.servers:
                self.servers[key] = self._delta(lam, digits, kind)
            x = self.servers[key]
        if (kind, lam, x) not in self.servers:
            if len(self.servers) > 256:
                self.servers.clear()
            self.servers[(kind, lam, x)] = self._make(lam, kind, x)
        return self.servers[(kind, lam, x)]

    @property
    def inner(self):
        """The inner unknown solved per lambda: "delta" (duplicate cost c < 1), "share" (a service law per flow, or
        ``--discipline priority``) or None."""
        if self.model.duplicate_cost != 1:
            return "delta"
        per_flow = getattr(self.model, "service_non_invite", None) is not None
        if self.model.control is Control.THRESHOLD:
            return "share"  # the class rates w lambda, (1 - w) lambda: class-dependent refusal (and priority)
        if len(self.flows) > 1 and (_priority(self.model) or per_flow):
            return "share"  # priority: the class rates w lambda, (1 - w) lambda matter even with one law
        return None

    def _make(self, lam, kind, x):
        return Server(self.model, lam, share=x) if kind == "share" else Server(self.model, lam, x)

    def fates(self, s: Server, digits, tail_times=()):
        """(p, q, utilization, copy_fates(...), notes) of the server ``s``."""
        p, q, util = s.refused(digits)
        if digits is None:
            p, q = float(p), float(q)
        need = self.need if not tail_times else _needed(self.fate_control, self.taus, self.timeout, tail_times)
        values, notes = s.tails(need, digits)
        fates = copy_fates(self.fate_control, self.taus, self.timeout, p, q, dict(zip(need, values)), tail_times)
        return p, q, util, fates, notes

    def flow_fates(self, s: Server, digits, tail_times=()):
        """(p, q, utilization, [copy_fates(...) of each flow], notes): every flow meets the same server (the same
        p and F at the total copy rate), each with its own copy instants. ``--control threshold``: each flow its own
        (p_i, q_i) (:meth:`Server.refused_flows`) and F_i, p the copy-weighted mean."""
        if len(self.flows) == 1:
            p, q, util, fates, notes = self.fates(s, digits, tail_times)
            return p, q, util, [fates], notes
        p, q, util = s.refused(digits)
        if digits is None:
            p, q = float(p), float(q)
        per_flow = s.refused_flows(digits)
        pqs = [(p, q)] * len(self.flows) if per_flow is None else per_flow[0]
        control = self.fate_control
        need = sorted({t for _, _, taus in self.flows for t in _needed(control, taus, self.timeout, tail_times)})
        if s.flow_laws is None or s.saturated:
            values, notes = s.tails(need, digits)
            Fs = [dict(zip(need, values))] * len(self.flows)
        else:  # a service law per flow: each flow's admitted copy has its own sojourn law
            Fs, notes = [], []
            for law in s.flow_laws:
                values, more = s.tails(need, digits, law=law)
                Fs.append(dict(zip(need, values)))
                notes += [m for m in more if m not in notes]
        return p, q, util, [copy_fates(control, taus, self.timeout, pi, qi, F, tail_times)
                            for (_, _, taus), F, (pi, qi) in zip(self.flows, Fs, pqs)], notes

    def transaction_rates(self, fates, digits):
        """Lambda_0i of each flow: lambda_i without ``--retry-after``, else (R)::

            Lambda_0i = lambda_i (1 + J_i + ... + J_i^m),   J_i = P_i(reject) of one transaction       (R)

        (a rejected request comes back as a new transaction, at most m times; a sum of positive terms, no
        1 - J subtraction). ``fates`` the flows' :func:`copy_fates`."""
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        rates = [ctx.num(r) for _, r, _ in self.flows]
        if not self.retries:
            return rates
        out = []
        for r, f in zip(rates, fates):
            J, term, total = f["reject_probability"], ctx.num(1), ctx.num(1)
            for _ in range(self.retries):
                term = term * J
                total = total + term
            out.append(r * total)
        return out

    def invite_share(self, s: Server, digits):
        """w = the share of flow 1 (``--method``'s flow; the INVITE flow by default) in the admitted copies:
        lambda_1 E_1[copies] / sum_i lambda_i E_i[copies] (the admission probability q is common to the flows and
        cancels; under 503 the admitted copies per transaction are q E_i[copies], as in :meth:`duplicate_fraction`).
        ``--control threshold``: q_i differs per flow and does not cancel in an admitted share; w is then defined as
        the *offered* share Lambda_1 / (Lambda_1 + Lambda_2), the same expression (the two-flow server takes the
        offered class rates)."""
        flows = self.flow_fates(s, digits)[3]
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        parts = [r * f["mean_copies"] for r, f in zip(self.transaction_rates(flows, digits), flows)]
        return parts[0] / sum(parts, ctx.num(0))

    def offered(self, lam, digits):
        """g(lambda) = sum_i Lambda_0i E_i[copies](lambda) (F2): the copies offered by every flow at copy rate lambda
        (Lambda_0i = lambda_i without ``--retry-after``, (R) with it: :meth:`transaction_rates`)."""
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        fates = self.flow_fates(self.server(lam, digits), digits)[3]
        return sum((r * f["mean_copies"] for r, f in zip(self.transaction_rates(fates, digits), fates)), ctx.num(0))

    def duplicate_fraction(self, s: Server, digits):
        """D = 1 - f / (q E[copies]): the fraction of admitted copies that are not their transaction's first admitted
        one; f = P(some copy admitted) = 1 - p^n (silent refusal) or q (503: only copy 0 can be first, and the
        admitted copies per transaction are q E[copies] = q (1 + q sum_k F(tau_k))). Two flows: the first admitted and
        all admitted copies summed over the flows, D = 1 - sum_i lambda_i f_i / (q sum_i lambda_i E_i[copies])."""
        if len(self.flows) == 1:
            p, q, _, fates, _ = self.fates(s, digits)
            first = q if self.model.control is Control.REJECT else 1 - p ** len(self.taus)
            admitted = q * fates["mean_copies"]
            return 1 - first / admitted if admitted > 0 else 0 * q
        p, q, _, flows, _ = self.flow_fates(s, digits)
        rates = self.transaction_rates(flows, digits)
        first = sum(r * (q if self.model.control is Control.REJECT else 1 - p ** len(taus))
                    for r, (_, _, taus) in zip(rates, self.flows))
        admitted = q * sum(r * f["mean_copies"] for r, f in zip(rates, flows))
        return 1 - first / admitted if admitted > 0 else 0 * q

    def _delta(self, lam: Fraction, digits, kind="delta"):
        """delta*(lam): the root of h(delta) = D(lam, delta) - delta on [0, 1) (D decreases in delta: cheaper
        duplicates, shorter sojourns, fewer copies), by the Illinois method to 1e-13 or 10^-(digits + 3).
        ``kind`` "share": the same for the INVITE share w*(lam) = :meth:`invite_share` on [0, 1] (h(0) > 0 > h(1):
        each flow has copies)."""
        fraction = self.duplicate_fraction if kind == "delta" else self.invite_share

        def h(d):
            d = _exact(d)
            if (kind, lam, d) not in self.servers:
                self.servers[(kind, lam, d)] = self._make(lam, kind, d)
            return fraction(self.servers[(kind, lam, d)], digits) - d

        end = 2.0**-30 if kind == "delta" else 0
        if digits is None:
            a, b, tol = 0.0, 1.0 - end, 1e-13
        else:
            ctx = mp_context(digits + 10)
            a, b, tol = ctx.num(0), ctx.num(1) - mpmath.mpf(end), mpmath.mpf(10) ** -(digits + 3)
        if kind == "share" and _priority(self.model) and self.model.control is Control.NONE:
            return self._priority_share(lam, digits, h, tol)
        if kind == "share" and self.model.control is Control.THRESHOLD:
            end = 2.0**-30  # the two-flow server needs both class rates > 0
            a, b = (end, 1 - end) if digits is None else (ctx.num(end), 1 - ctx.num(end))
        if kind == "share" and (_priority(self.model) or self.model.control is Control.THRESHOLD):
            start = self.flows[0][1] / self.total_rate  # flow 1's share of the transactions
            w = _share_secant(h, float(start) if digits is None else ctx.num(start), tol)
            if w is not None:
                return _exact(w)
        ha = h(a)
        if ha <= 0:
            return Fraction(0)
        hb = h(b)
        if hb >= 0:
            return _exact(b)
        return _exact(_illinois(h, a, b, ha, hb, tol))

    def _priority_share(self, lam, digits, h, tol):
        """The inner share w*(lam) of ``--discipline priority`` without control, on the branch :attr:`branch`.

        share(w) increases with w (a larger INVITE share leaves fewer non-INVITE copies in the server, so fewer
        retransmissions), so h(w) = share(w) - w can have several roots: past the server's saturation the
        non-INVITE flow is self-consistently answered (few copies, w near 1) and also self-consistently collapsed
        (its own load of all its copies >= 1). The roots are bracketed on the grid w = 0, 1/10, ..., 1 (in float64;
        two roots closer than 1/10 can be missed) and refined by the Illinois method (at ``digits`` inside the
        float64 bracket); "high" (and None) takes the largest, "low" the smallest. The middle root of three is an
        unstable equilibrium of w <- share(w) and is not used."""
        def h64(w):
            return float(h(w)) if digits is None else float(self._delta_h64(lam, w))

        grid = [k / 10 for k in range(11)]
        values = [h64(w) for w in grid]
        brackets = [(grid[i], grid[i + 1], values[i], values[i + 1]) for i in range(10)
                    if values[i] != 0 and values[i + 1] != 0 and (values[i] > 0) != (values[i + 1] > 0)]
        zeros = [w for w, v in zip(grid, values) if v == 0]
        if not brackets and not zeros:  # h keeps one sign: the end where it points
            return Fraction(1) if values[-1] > 0 else Fraction(0)
        found = [(w, w, 0.0, 0.0) for w in zeros] + brackets
        a, b, _, _ = max(found) if self.branch != "low" else min(found)
        if a == b:
            return _exact(a)
        if digits is None:
            return _exact(_illinois(h, a, b, h(a), h(b), tol))
        ctx = mp_context(digits + 10)
        a, b = ctx.num(_exact(a)), ctx.num(_exact(b))
        return _exact(_illinois(h, a, b, h(a), h(b), tol))

    def _delta_h64(self, lam, w):
        """h(w) = share(w) - w in float64 (the bracketing of :meth:`_priority_share` at ``digits``)."""
        w = _exact(w)
        if ("share", lam, w) not in self.servers:
            self.servers[("share", lam, w)] = self._make(lam, "share", w)
        return self.invite_share(self.servers[("share", lam, w)], None) - float(w)

    def mean_copies(self, lam, digits, fast=False):
        return self.fates(self.server(lam, digits), digits)[3]["mean_copies"]

    def residual(self, lam, digits=None, fast=False):
        if len(self.flows) > 1 or self.retries:
            return self.offered(lam, digits) - lam
        rate = float(self.model.rate) if digits is None else mp_context(digits + 10).num(self.model.rate)
        return rate * self.mean_copies(lam, digits, fast) - lam


def _share_secant(h, w0, tol):
    """The root of h(w) = share(w) - w (``--discipline priority``'s inner unknown) by the secant method from the
    transaction share w0 and the fixed-point step w1 = share(w0): share(w) depends weakly on w (h' near -1), so a
    few steps reach ``tol`` relative where the bracketing Illinois method from [0, 1] needs about twice as many
    evaluations of the server. None when an iterate leaves [0, 1] or it does not converge in 20 steps (the caller
    then brackets)."""
    h0 = h(w0)
    w1 = w0 + h0
    for _ in range(20):
        if not 0 <= w1 <= 1:
            return None
        h1 = h(w1)
        if h1 == 0 or h1 == h0:
            return w1
        w2 = w1 - h1 * (w1 - w0) / (h1 - h0)
        if abs(w2 - w1) <= tol * abs(w2):
            return w2 if 0 <= w2 <= 1 else None
        w0, h0, w1 = w1, h1, w2
    return None


def _illinois(f, a, b, fa, fb, tol):
    """A root of f in [a, b] (f(a), f(b) of opposite signs) by the Illinois variant of regula falsi, to ``tol``
    relative in x; returns the iterate with the smallest |f|."""
    best = (abs(fa), a) if abs(fa) <= abs(fb) else (abs(fb), b)
    side = 0
    for _ in range(100):
        x = (a * fb - b * fa) / (fb - fa) if fb != fa else (a + b) / 2
        fx = f(x)
        if abs(fx) < best[0]:
            best = (abs(fx), x)
        if fx == 0 or abs(b - a) <= tol * abs(x):
            break
        if (fx > 0) == (fa > 0):
            a, fa = x, fx
            if side == -1:
                fb /= 2
            side = -1
        else:
            b, fb = x, fx
            if side == 1:
                fa /= 2
            side = 1
    return best[1]


def scan_grid(lo, hi, capacity, points):
    """The scan's grid on [lo, hi]: ``points // 2`` uniform points, and ``points // 4`` on each side of the service
    capacity c = 1/E[B] at c (1 -+ 10^-x), x from 0.3 to 8 (the residual changes fastest where the server's load
    crosses 1), restricted to [lo, hi]."""
    x = np.linspace(0.3, 8.0, max(2, points // 4))
    near = np.concatenate([capacity * (1 - 10.0**-x), capacity * (1 + 10.0**-x)])
    grid = np.concatenate([np.linspace(lo, hi, max(2, points - 2 * len(x))), near[(near > lo) & (near < hi)]])
    grid = np.unique(grid)
    grid[0], grid[-1] = lo, hi
    return grid


def _scan(fmap, lo, hi, points, fallback=True):
    """Float64 roots of the residual on [lo, hi] (every sign change on :func:`scan_grid`, refined); none found: the
    point of smallest |r| (``fallback``) or nothing."""
    grid = scan_grid(lo, hi, 1 / float(fmap.model.service.moment(1)), points)
    points = len(grid)
    r = [fmap.residual(x, None, fast=True) for x in grid]
    roots = []
    for i in range(points):
        if r[i] == 0:
            roots.append(float(grid[i]))
        elif i + 1 < points and r[i + 1] != 0 and (r[i] > 0) != (r[i + 1] > 0):
            def f(x):
                return fmap.residual(x, None, fast=True)
            roots.append(float(_illinois(f, float(grid[i]), float(grid[i + 1]), r[i], r[i + 1], 1e-13)))
    if not roots and fallback:  # |r| below the scan's resolution everywhere: the smallest |r|
        roots.append(float(grid[int(np.argmin(np.abs(r)))]))
    return roots


def _slope(fmap, lam, lo, hi):
    """g'(lambda) by a central difference in float64 (one-sided at an end of the interval)."""
    h = 1e-6 * lam
    a, b = max(lo, lam - h), min(hi, lam + h)
    if b <= a:
        return 0.0
    ga = fmap.residual(a, None, fast=True) + a
    gb = fmap.residual(b, None, fast=True) + b
    return float((gb - ga) / (b - a))


def _refine(fmap, lam, digits, lo, hi):
    """The root near the float64 root ``lam`` to ``digits`` digits (secant on the residual at digits + 5)."""
    w = digits + 5
    ctx = mp_context(w + 10)
    with ctx:
        lo_, hi_ = ctx.num(_exact(lo)), ctx.num(_exact(hi))
        x0 = ctx.num(_exact(lam))
        if x0 in (lo_, hi_) and fmap.residual(x0, w) == 0:
            return x0
        x1 = x0 * (1 + mpmath.mpf(10) ** -9)
        x1 = min(max(x1, lo_), hi_)
        if x1 == x0:
            x1 = x0 * (1 - mpmath.mpf(10) ** -9)
        f0, f1 = fmap.residual(x0, w), fmap.residual(x1, w)
        for _ in range(60):
            if f1 == f0:
                return x1
            x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
            x2 = min(max(x2, lo_), hi_)
            if abs(x2 - x1) <= abs(x2) * mpmath.mpf(10) ** -(digits + 3):
                return x2
            x0, f0, x1, f1 = x1, f1, x2, fmap.residual(x2, w)
    raise NumericalError(f"sip-retransmission: the fixed point near offered rate {lam:.6g} did not converge to "
                         f"{digits} digits")


def _measures(fmap, lam, digits):
    """The contract's measures at offered rate ``lam`` (a float or an mpf), under the precision policy."""
    model = fmap.model
    s = fmap.server(lam, digits)
    tail_times = tuple(model.response_tail or ())
    p, q, util, flows, notes = fmap.flow_fates(s, digits, tail_times)
    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    requests = [ctx.num(r) for _, r, _ in fmap.flows]
    rates = fmap.transaction_rates(flows, digits)  # Lambda_0i: lambda_i, or (R) with --retry-after
    rate = sum(rates[1:], rates[0])

    def total(key):  # the transaction-weighted mean over the flows (the value itself for one flow)
        if len(flows) == 1:
            return flows[0][key]
        return sum((r * f[key] for r, f in zip(rates, flows)), ctx.num(0)) / rate

    mean = total("mean_copies")
    out = {
        "offered_rate": float(lam) if digits is None else ctx.num(_exact(lam)),
        "mean_copies": mean,
        "duplicate_ratio": 1 - 1 / mean,
        "goodput": rate * total("answered"),
        "timeout_probability": total("timeout_probability"),
        "reject_probability": total("reject_probability"),
        "utilization": util,
        "response_tail": {decimal_text(T): (v if len(flows) == 1 else
                                            sum((r * f["tail"][i] for r, f in zip(rates, flows)), ctx.num(0)) / rate)
                          for i, (T, v) in enumerate(zip(tail_times, flows[0]["tail"]))},
    }
    # (R): a request is finally rejected when its m + 1 transactions are; the retries are the transactions beyond the
    # requests
    # requests (m = 0 without --retry-after: reject_probability and 0)
    m = fmap.retries
    out["request_reject_probability"] = (
        sum((r * f["reject_probability"] ** (m + 1) for r, f in zip(requests, flows)), ctx.num(0))
        / ctx.num(fmap.total_rate) if len(flows) > 1 else flows[0]["reject_probability"] ** (m + 1))
    out["retry_rate"] = sum((R - r for R, r in zip(rates, requests)), ctx.num(0))
    out["flows"] = {name: {"goodput": r * f["answered"], "mean_copies": f["mean_copies"],
                           "duplicate_ratio": 1 - 1 / f["mean_copies"],
                           "timeout_probability": f["timeout_probability"],
                           "reject_probability": f["reject_probability"]}
                    for (name, _, _), r, f in zip(fmap.flows, rates, flows)}
    out["residual"] = abs(out["offered_rate"] - rate * mean) / out["offered_rate"]
    out["copy_refusal_probability"] = p
    out["admitted_duplicate_fraction"] = (float(s.delta) if digits is None else ctx.num(s.delta))
    if s.two_flow is not None:  # --control threshold: the class-dependent refusal
        pqs = s.refused_flows(None)[0]
        notes = list(notes) + [f"--control threshold: at offered rate {float(lam):.6g} the copies are refused with "
                               + ", ".join(f"p_{name} = {pq[0]:.6g}" for (name, _, _), pq in zip(fmap.flows, pqs))
                               + " (copy_refusal_probability: their copy-weighted mean); the "
                               f"{fmap.flows[0][0]} flow's offered share w = {float(s.share):.6g}"]
    if _priority(model) and s.share is not None:
        name = fmap.flows[0][0]
        notes = list(notes) + [f"--discipline priority: at offered rate {float(lam):.6g} the {name} flow's share of "
                               f"the admitted copies is w = {float(s.share):.6g} (the inner unknown)"]
        if s.saturated or (s.utilization == 1 and model.control is Control.NONE):
            who = "no flow" if s.saturated else "only the non-invite flow"
            notes.append(f"--discipline priority: at offered rate {float(lam):.6g} the server is saturated and "
                         f"{who} has a stationary regime (the other's copies are never answered)")
    return out, notes


def check_supported(model):
    """Refuse what the map does not compute, naming the option: with ``--discipline priority`` what
    :func:`_check_priority` refuses; a duplicate cost below 1
    together with a service law per flow (two inner unknowns); and, when the server's service is a mixture (a
    duplicate cost c < 1, or a service law per flow ``service_non_invite``) outside the exponential control chain
    (control ignore/503, exponential laws, no vacations), a service or vacation law without a smooth density (the
    mixture queue's wait of :mod:`~qderive.numeric.engines.mixture_sojourn` is inverted; a constant service is
    refused by the model already)."""
    if _priority(model):
        _check_priority(model)
    B2 = getattr(model, "service_non_invite", None)
    if B2 is not None and model.duplicate_cost != 1:
        raise ParameterError("--service-non-invite", "with --duplicate-cost below 1 (two inner unknowns) is not "
                             "computed: a service law per flow is computed with --duplicate-cost 1 (every room and "
                             "control); the simulator runs it", B2.spec_text())
    flows = B2 is not None and bool(getattr(model, "rate_non_invite", 0))
    if model.duplicate_cost == 1 and not flows:
        return
    from qderive.symbolic.laws.gamma import Exponential

    laws = [("--service", model.service)] + ([("--service-non-invite", B2)] if flows else [])
    vacation = getattr(model, "vacation", None)
    if model.control is not Control.NONE and vacation is None and all(isinstance(B, Exponential) for _, B in laws):
        return  # the control chain with a phase per service law (uniformization)
    what = "--duplicate-cost below 1" if model.duplicate_cost != 1 else "two service laws (--service-non-invite)"
    for option, law in laws + ([("--vacation", vacation)] if vacation is not None else []):
        smooth, why = smooth_laws((law,))
        if not smooth:
            raise ParameterError(option, f"is not computed here ({why}): with {what} "
                                 "the server's service is a mixture whose queue's wait is computed by inversion, for "
                                 "smooth laws only (exp, erlang, hyperexp, gamma, ph); the simulator runs it",
                                 law.spec_text())


_PRIORITY_COMPUTED = ("priority is computed without --capacity, --vacation or a --duplicate-cost below 1, for "
                      "--control none (smooth laws: the M/G/1 priority queue) and --control ignore/503 (exponential "
                      "laws: the control chain with priority); --discipline fifo computes the rest")


def _check_priority(model):
    """Refuse what the priority server does not compute (:mod:`qderive.numeric.engines.sip_priority`), naming the
    option: a capacity, a vacation, a duplicate cost below 1, a law with kinks without control, a non-exponential
    law under control; H within the limit ``priority_high``."""
    from qderive.symbolic import limits as _limits
    from qderive.symbolic.laws.gamma import Exponential

    if model.duplicate_cost != 1:
        raise ParameterError("--duplicate-cost", f"below 1 with --discipline priority is not computed "
                             f"({_PRIORITY_COMPUTED})", decimal_text(model.duplicate_cost))
    for option, value in (("--capacity", model.capacity), ("--vacation", getattr(model, "vacation", None))):
        if value is not None:
            raise ParameterError("--discipline", f"priority with {option} is not computed ({_PRIORITY_COMPUTED})",
                                 "priority")
    names = [name for name, _, _ in model.flows()]
    for law, name in zip(model.flow_services(), names):
        own = name == "non-invite" and model.service_non_invite is not None
        option = "--service-non-invite" if own else "--service"
        if model.control is Control.NONE:
            smooth, why = smooth_laws((law,))
            if not smooth:
                raise ParameterError(option, f"has no smooth density ({why}): the priority queue's sojourn is "
                                     "computed by inversion, for smooth laws only (exp, erlang, hyperexp, gamma, ph)",
                                     law.spec_text())
        elif not isinstance(law, Exponential):
            raise ParameterError(option, f"with --discipline priority and --control {model.control.value} must be "
                                 f"exponential (the control chain with priority has a phase per class; "
                                 f"{_PRIORITY_COMPUTED})", law.spec_text())
    if model.control is not Control.NONE:
        _limits.check("priority_high", model.thresholds[1], "the tagged INVITE copy's chain of --discipline priority "
                      "has about H^3/3 states")


def solve(model, digits=None):
    """Every fixed point (module docstring): a list of dicts of the measures plus ``stable``, ``slope`` and
    ``residual``, by increasing offered rate; and the notes."""
    check_supported(model)
    fmap = _Map(model)
    lam0 = float(fmap.total_rate)
    n = fmap.max_copies
    lo, hi = lam0, lam0 * n * (1 + fmap.retries)  # (R): at most m + 1 transactions per request
    one = n == 1 and not fmap.retries  # one copy per transaction and no retry: lambda = lambda_0
    found = []
    for i, branch in enumerate(fmap.branches()):  # priority without control: both ends of the inner share's roots
        fmap.branch = branch
        for lam in ([lam0] if one else _scan(fmap, lo, hi, model.scan_points, fallback=i == 0)):
            if not any(abs(lam - x) <= 1e-9 * lam for x, _ in found):
                found.append((lam, branch))
    found.sort(key=lambda x: x[0])
    out, notes = [], []
    for lam, branch in found:
        fmap.branch = branch
        slope = 0.0 if one else _slope(fmap, lam, lo, hi)
        x = lam if digits is None else (mp_context(digits + 15).num(fmap.total_rate) if one
                                         else _refine(fmap, lam, digits, lo, hi))
        values, more = _measures(fmap, x, digits)
        values["stable"] = bool(slope < 1)
        values["slope"] = slope
        out.append(values)
        notes += [m for m in more if m not in notes]
    if len(out) > 1:
        notes.append(f"{len(out)} fixed points (offered rates "
                     + ", ".join(f"{float(v['offered_rate']):.6g}" for v in out)
                     + "): the top-level measures are those of the smallest")
    return out, notes


class SipEngine(Engine):
    """``sip-retransmission``: :func:`solve`; the top-level measures are the first solution's."""

    @classmethod
    def supports(cls, model, asked=frozenset()):
        """The refusals of :func:`check_supported` (what the map does not compute), as a Refusal naming the field:
        asked before any work."""
        from qderive.symbolic.capabilities import Refusal

        try:
            check_supported(model)
        except ParameterError as err:
            field = err.name.removeprefix("--").replace("-", "_")
            return Refusal(field, err.constraint or str(err))
        return None

    def compute(self, model, ctx, **options):
        digits = None if ctx.is_float64 else max(15, ctx.dps - 10)
        sols, notes = _solve_cached(model, digits)
        first = dict(sols[0])
        for key in ("stable", "slope", "residual", "copy_refusal_probability", "admitted_duplicate_fraction"):
            first.pop(key)
        first["solutions"] = [dict(s) for s in sols]
        if not getattr(model, "retry_count", 0):  # the solutions' keys without --retry-after are unchanged
            for s in first["solutions"]:
                s.pop("request_reject_probability"), s.pop("retry_rate")
        self._notes = notes
        return first

    def guard_digits(self, model) -> int:
        return 2

    def float64_trouble(self, model, values):
        """P(answered) = sum_j p^j q (1 - F(T_B - tau_j)) loses its relative digits when the tails are near 1: a
        goodput below 1e-6 lambda_0 (but not 0, the saturated queue) is recomputed with mpmath."""
        g = float(values["goodput"]) / float(model.rate + getattr(model, "rate_non_invite", 0))
        if 0 < g < 1e-6:
            return f"goodput = {g:.3g} lambda_0: float64 cancels in 1 - P(R_copy > t)"
        return None

    def notes(self, model, values):
        return list(getattr(self, "_notes", []))


@functools.lru_cache(maxsize=8)
def _solve_cached(model, digits):
    return solve(model, digits)

