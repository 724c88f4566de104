"""Simulation of a SIP server under client retransmissions: per-transaction timers, one FIFO or priority server.

The model is the contract of issue 17 (``sip-retransmission``; the analytic side approximates it by
a fixed point). It is read by duck typing, field by field: ``rate`` (lambda_0), ``service`` (a time
law with ``sample(rng, size)``), ``method`` (``invite`` / ``non-invite``), ``t1``, ``t2``,
``timeout`` (None: 64 T1), ``capacity`` (K or None), ``control`` (``none`` / ``ignore`` / ``503`` /
``threshold``),
``thresholds`` ((L, H), or None without control) and ``duplicate_cost`` (c); optionally ``vacation`` and
``vacation_policy`` (absent: no vacations), ``discipline`` (absent: fifo).

**Two flows** (optional field ``rate_non_invite``, absent or 0: one flow): new transactions of the other method
(non-invite when ``method`` is invite, and vice versa) arrive as a second Poisson process; each transaction keeps
its own schedule. The superposition is simulated: a new transaction (rate ``rate`` + ``rate_non_invite``) is of
the second flow with probability rate_non_invite / (rate + rate_non_invite) (one uniform number each, drawn only
with two flows: a one-flow run is unchanged, number for number). :func:`simulate_sip` then also returns ``flows``.

The client (zero network delay): a transaction starts at a Poisson epoch a and sends copy 0 at a,
copy k >= 1 at a + tau_k as long as it has no response by then
(:func:`~qderive.symbolic.models.sip_retransmission.copy_schedule`, the model's exact schedule converted to
float once; RFC 3261 section 17.1: INVITE Timer A doubles from T1 without cap, non-INVITE Timer E doubles from T1 up to
T2; only tau_k < timeout, Timer B / F). The server: one FIFO server; a copy finding N copies in the
server (waiting + in service) is

* with control ``ignore`` / ``503``: refused while the server is in its overload state, which it
  enters when an arrival finds N >= H and leaves when a departure leaves N = L; ``ignore`` drops the
  copy silently (the client keeps its timers); ``503`` answers a copy of a transaction that has no
  admitted copy yet at once: the transaction ends as REJECTED (no more copies, not goodput), while a
  refused retransmission of a transaction already admitted is absorbed by the server's transaction
  layer (dropped silently, as under ``ignore``: the response comes from the admitted copy);
* with control ``threshold`` (seed 001's server, :mod:`qderive.symbolic.models.two_flow`; two flows, 1 <= L < H,
  R = ``capacity``, default H + 1): in mode 0 (normal) admitted, in mode 1 (partial overload) refused if it is an
  INVITE copy, in mode 2 (blocking) refused, and refused when N = R; 0 -> 2 and 1 -> 2 when an admitted copy makes
  N = H + 1, 2 -> 1 when a departure leaves N = H, 1 -> 0 when one leaves N = L - 1. Every refusal is a 503 (the
  ``503`` semantics above: copy 0 refused, the transaction is rejected; a refused retransmission of an admitted
  transaction is dropped);
* otherwise dropped silently when N = K (``capacity``);
* otherwise admitted: it costs B, or c B when it is not the first admitted copy of its transaction
  (``duplicate_cost``).

**Vacations** (optional fields ``vacation``, a time law or None, and ``vacation_policy``, ``multiple`` /
``single``; the model's module docstring): the server, on becoming empty, takes a vacation; *multiple*: another
one while it is empty at its end; *single*: one, then it idles and serves the next copy at once. A copy arriving
during a vacation waits for its end; the vacation takes the server's place (N = waiting copies + 1 during it),
and the overload state also ends when N falls to L at a vacation's end. An empty server is on vacation (N = 1:
a departure leaving nobody does not end the overload when L = 0), and N = 0 only after a single vacation that
ends with nobody waiting: with L = 0 (single vacations; multiple ones are refused, N never falls to 0) the
overload ends there. The vacations of an idle period are drawn when its first copy arrives (they depend on
nothing else): from the last departure (or time 0) e = last + V_1 (+ V_2 + ... while e <= t under multiple
vacations); the copy starts at e if e > t, at t otherwise (only under single vacations). In overload with L = 0
the first copy of the idle period draws V_1 at once (kept for the period): it is refused while last + V_1 > t,
and the overload ends if last + V_1 <= t (FIFO; the priority server refuses L = 0 with vacations).

**Discipline** (optional field ``discipline``, ``fifo`` / ``priority``; absent: fifo): the order in which the
server takes the waiting copies. ``priority`` is seed 001's algorithm 2 applied in every mode: the non-INVITE
flow's copies first, non-preemptive (a copy in service finishes), arrival order within a flow. Under control
``threshold`` it is algorithm 2 as seed 001 states it: non-INVITE first in modes 1 and 2 only, arrival order in
mode 0, the order at a departure being that of the mode in force after it (:meth:`_PriorityServer.advance_modes`).
N, the control, the capacity, the costs and the vacations are those of the FIFO server (class-blind); only the
order changes. With one flow it is the FIFO server, copy for copy.

The control is checked before the capacity (with H <= K an arrival finding K copies is always in
the overload state, so the capacity binds only without control). The transaction's response is the
completion of its first admitted copy: R = completion - a; it is goodput when R <= timeout and it was
not rejected, else it timed out (R = inf in ``response_tail``). Copies still queued when the response
comes (or after a timeout or a rejection) are served at their cost.

**Method.** The FIFO single server makes every copy's departure known at its arrival (Lindley:
d = max(t, d_prev) + cost), so the only events are copy arrivals: the Poisson epochs (copy 0) and the
retransmission instants a + tau_k. For a fixed k these are increasing in the transaction's index, so
they form one FIFO stream per k, merged by a heap of the (at most 11) stream heads; the copies in the
server are the deque of departures after the present, popped at each arrival (the state change at a
departure is applied as it is popped). A transaction's state (start, first departure, first refused
copy) travels with its pending copy, and it is counted when it finishes, so the memory is that of the
transactions in progress. Service times and inter-arrival times are drawn from numpy in blocks
(:func:`.stats.value_stream`).

Under ``priority`` a waiting INVITE copy can be overtaken, so its departure is known only when it starts: the
server is the strategy :class:`_PriorityServer` (two queues, advanced lazily to each event time, a departure
d = start + B fixed at the start), and the transaction's response r is read from a box that the server fills when
its first admitted copy starts. The event loop and the transaction logic are the FIFO ones: a copy whose
transaction was answered before its timer (r <= its send time, learnt only then) is not sent, and a measured
transaction whose last copy is sent before its first admitted copy started is counted at a + timeout (one more
stream per flow), by which its response (or its timeout) is known; the run therefore goes on to
warmup + horizon + timeout. The draws are those of the FIFO run (the same numbers in the same order), so a
one-flow run reproduces FIFO's copies exactly. The collapse epoch (a copy that waits beyond the timeout) is seen
at the copy's start or when a queue's head has waited that long, at most one timeout after its arrival.

**Window.** Each replication starts empty at 0; the transactions that start in [warmup, warmup +
horizon) are measured; the run goes on to warmup + horizon + tau_max, so that every measured
transaction has sent all its copies (their arrivals keep the load on the server). ``offered_rate``
and ``utilization`` are time averages over the window; ``goodput`` = measured goodput transactions /
horizon; ``mean_copies``, ``timeout_probability``, ``reject_probability`` and ``response_tail``
are fractions of the measured transactions, ``duplicate_ratio`` = 1 - 1/mean_copies. Estimates and
95 % intervals: :func:`.stats.replication_estimates` (independent replications from
``numpy.random.SeedSequence(seed).spawn``, ratio estimators, jackknife, Student t).

**Retry-After** (``retry_after`` T, ``retries`` m; control 503 or threshold): a transaction rejected by 503 with
retries left starts a new transaction of its flow (a new copy schedule, one retry fewer) at its rejection time + T,
from a stream of its own (a deque: T is constant, so the retries are in time order); a retry is a transaction like
any other (counted in ``transactions``, ``goodput``, ...). With it ``simulate_sip`` also gives
``request_reject_probability`` = measured transactions finally rejected (no retry left) / measured first
transactions of requests and ``retry_rate`` = measured retries / horizon ((R) of the engine's docstring). Without
``retry_after`` the event loop draws the same path as before (the retry stream stays empty).
"""

from __future__ import annotations

import heapq
import math
import operator
import sys
import time
from bisect import bisect_left
from collections import deque

import numpy as np
from qderive.symbolic.capabilities import declare
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.sip_retransmission import copy_schedule
from qderive.symbolic.numbers import exact

from .stats import DEFAULT_BLOCK, Estimate, SimulationResult, estimate_notes, replication_estimates, value_stream

__all__ = ["simulate_sip", "simulate", "collapse_times", "MEASURES", "FLOW_MEASURES"]

#: the measure keys of the contract (``qderive eval sip-retransmission --json``), in order
MEASURES = ("offered_rate", "mean_copies", "duplicate_ratio", "goodput", "timeout_probability",
            "reject_probability", "utilization")
_CONTROLS = {"none": 0, "ignore": 1, "503": 2, "threshold": 3}
#: the accumulators of one replication (then one tail count per requested time)
_ACCUMULATORS = ("time", "transactions", "goodput", "timed_out", "rejected", "copies", "window_copies", "busy",
                 "response_sum", "refused", "refused_copies", "after_refusal", "rejected_copies",
                 # the second flow's transactions (``rate_non_invite``; the first flow's: the totals minus these)
                 "transactions_2", "goodput_2", "timed_out_2", "rejected_2", "copies_2", "response_sum_2",
                 # Retry-After (``retry_after``): the first transactions of requests, the transactions finally
                 # rejected (no retry left), the retried transactions
                 "requests", "final_rejected", "retried")
#: the per-flow measures of ``flows`` (two flows only)
FLOW_MEASURES = ("goodput", "mean_copies", "duplicate_ratio", "timeout_probability", "reject_probability")


def _field(model, name):
    try:
        return getattr(model, name)
    except AttributeError:
        raise ParameterError(f"simulate_sip: the model has no field {name!r} (sip-retransmission contract)") from None


def _float(value, name: str, rule, text: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(name, text, value) from None
    if not (math.isfinite(x) and rule(x)):
        raise ParameterError(name, text, value)
    return x


def _integer(value, name: str, minimum: int, text: str) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise ParameterError(name, text, value) from None
    if n < minimum:
        raise ParameterError(name, text, value)
    return n


def _budget(setup, length: float, replications: int) -> None:
    """Refuse a run of more than the ``customers`` limit of expected transactions (all replications)."""
    from qderive.symbolic import limits as _limits

    expected = (setup[0] + setup[11]) * (length + max(setup[2][-1], (setup[12] or (0.0,))[-1])) * replications
    _limits.check("customers", math.ceil(min(expected, 1e300)),
                  "transactions x replications of one simulation (rate x (warmup + horizon + tau_max) x replications)")
    vacation = setup[9]
    if vacation is not None and callable(getattr(vacation, "moment", None)):  # multiple vacations of a tiny mean
        most = (length + setup[2][-1]) * replications / float(vacation.moment(1))
        _limits.check("customers", math.ceil(min(most, 1e300)), "vacations x replications of one simulation (at "
                      "most (warmup + horizon + tau_max) / E[V] x replications)")


def _check_seed(seed) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ParameterError("seed", "must be an integer >= 0 (or None for fresh entropy)", seed)


def _method(model) -> str:
    method = getattr(_field(model, "method"), "value", _field(model, "method"))
    method = str(method).lower().replace("_", "-")
    if method not in ("invite", "non-invite"):
        raise ParameterError("method", "must be invite or non-invite", method)
    return method


def _setup(model):
    """The model's fields as the event loop uses them (checked, with errors naming the option)."""
    rate = _float(_field(model, "rate"), "rate", lambda x: x > 0, "must be a finite rate > 0")
    service = _field(model, "service")
    if not callable(getattr(service, "sample", None)):
        raise ParameterError("service", "the simulator needs a numeric time law (with sample(rng, size))", service)
    method = _method(model)
    t1, t2, timeout = (_field(model, name) for name in ("t1", "t2", "timeout"))
    for value, name in ((t1, "t1"), (t2, "t2"), (timeout, "timeout")):
        if value is not None or name != "timeout":
            _float(value, name, lambda x: x > 0, "must be a finite time > 0")
    if timeout is None:  # the default Timer B / F = 64 T1
        timeout = 64 * exact(t1, "t1")
    # the one schedule (exact: tau_k < timeout decided without rounding), converted to float once
    taus = tuple(float(tau) for tau in copy_schedule(method, t1, t2, timeout))
    timeout = float(timeout)
    control = getattr(_field(model, "control"), "value", _field(model, "control"))
    control = str(control).lower()
    if control not in _CONTROLS:
        raise ParameterError("control", "must be none, ignore, 503 or threshold", control)
    cap = _field(model, "capacity")
    if cap is not None:
        cap = _integer(cap, "capacity", 1, "must be an integer >= 1 (or none)")
    low = high = 0
    if _CONTROLS[control]:
        th = _field(model, "thresholds")
        try:
            low, high = (operator.index(x) for x in th)
        except (TypeError, ValueError):
            raise ParameterError("thresholds", f"control {control} needs two integers L,H", th) from None
        if not 0 <= low < high or (cap is not None and high > cap):
            raise ParameterError("thresholds", "need 0 <= L < H (<= capacity when given)", th)
        if control == "threshold":  # seed 001's three modes: 1 <= L < H, R = capacity (default H + 1)
            if low < 1:
                raise ParameterError("thresholds", "need 1 <= L < H with control threshold (seed 001's thresholds)",
                                     th)
            if cap is None:
                cap = high + 1
    cost = _float(_field(model, "duplicate_cost"), "duplicate_cost", lambda x: 0 < x <= 1, "must lie in 0 < c <= 1")
    vacation, single = _vacations(model, cap, high if _CONTROLS[control] else None)
    if vacation is not None and control == "threshold":
        raise ParameterError("vacation", "is not simulated with control threshold (seed 001's server has no "
                             "vacations)", vacation)
    if vacation is not None and _CONTROLS[control] and low == 0 and not single:
        raise ParameterError("thresholds", "L = 0 with multiple vacations: the overload never ends (N counts the "
                             "vacation's place, N >= 1 always)", th)
    # the second flow (optional field ``rate_non_invite``, 0 or absent: none): the other method's schedule
    rate2 = getattr(model, "rate_non_invite", None) or 0
    rate2 = _float(rate2, "rate_non_invite", lambda x: x >= 0, "must be a finite rate >= 0")
    if control == "threshold" and not rate2:
        raise ParameterError("rate_non_invite", "must be > 0 with control threshold (seed 001's server has an INVITE "
                             "and a non-INVITE flow)", rate2)
    other = "non-invite" if method == "invite" else "invite"
    taus2 = tuple(float(tau) for tau in copy_schedule(other, t1, t2, exact(timeout, "timeout"))) if rate2 else ()
    # a service law per flow (optional field ``service_non_invite``, None or absent: ``service`` for both flows)
    service2 = getattr(model, "service_non_invite", None)
    if service2 is not None:
        if not rate2:
            raise ParameterError("service_non_invite", "needs a second flow (rate_non_invite > 0)", service2)
        if not callable(getattr(service2, "sample", None)):
            raise ParameterError("service_non_invite", "the simulator needs a numeric time law (with sample(rng, "
                                 "size))", service2)
    discipline = getattr(model, "discipline", None)
    discipline = str(getattr(discipline, "value", discipline) or "fifo").lower()
    if discipline not in ("fifo", "priority"):
        raise ParameterError("discipline", "must be fifo or priority", discipline)
    if discipline == "priority" and vacation is not None and _CONTROLS[control] and low == 0:
        raise ParameterError("thresholds", "L = 0 with vacations and --discipline priority is not simulated (the "
                             "overload's end after the vacation that follows the last departure is simulated for "
                             "fifo only); give L >= 1", th)
    # (flow 1's law, flow 2's law): the non-invite flow's is service2
    laws = (service, service) if service2 is None else ((service, service2) if method == "invite" else
                                                         (service2, service))
    # Retry-After (optional fields ``retry_after`` T, ``retries`` m): None, or (T, m)
    retry = getattr(model, "retry_after", None)
    if retry is not None:
        if not _CONTROLS[control] >= 2:
            raise ParameterError("retry_after", "needs a control that rejects with 503 (503 or threshold)", retry)
        retry = (_float(retry, "retry_after", lambda x: x > 0, "must be a finite time > 0"),
                 _integer(getattr(model, "retries", 1), "retries", 1, "must be an integer in 1..100"))
    return (rate, laws, taus, timeout, _CONTROLS[control], cap, low, high, cost, vacation, single, rate2, taus2,
            (method, other), discipline == "priority", retry)


def _vacations(model, cap, high):
    """(the vacation law or None, single policy?) from the optional fields ``vacation`` and ``vacation_policy``
    (a model without them has no vacations). A vacation takes the server's place, so the capacity K and the
    threshold H must leave a waiting place: K >= 2, H >= 2."""
    vacation = getattr(model, "vacation", None)
    policy = str(getattr(getattr(model, "vacation_policy", None), "value", getattr(model, "vacation_policy", None))
                 or "multiple").lower()
    if policy not in ("multiple", "single", "none"):
        raise ParameterError("vacation_policy", "must be multiple or single", policy)
    if vacation is None:
        if policy == "single":
            raise ParameterError("vacation_policy", "single needs a vacation law", policy)
        return None, False
    if not callable(getattr(vacation, "sample", None)):
        raise ParameterError("vacation", "the simulator needs a numeric time law (with sample(rng, size))", vacation)
    for room, name in ((cap, "capacity"), (high, "thresholds")):
        if room is not None and room < 2:
            raise ParameterError(name, "must leave a waiting place with vacations: K >= 2 and H >= 2 (a vacation "
                                 "takes the server's place)", room)
    return vacation, policy == "single"


#: priority: the departure of a first admitted copy that has not started yet (above every time, below inf = none)
_PENDING = sys.float_info.max


def _serve(q, free, timeout, ws, we, busy, collapsed):
    """The priority server's one service start: the head of the queue ``q`` starts at ``free`` (the departure before
    it); returns (its departure, the busy time in the window [ws, we) so far, the collapse epoch: its arrival if it
    waited beyond the timeout). A first admitted copy's box receives its departure (the transaction's response)."""
    arrival, service, box = q.popleft()
    if free - arrival > timeout and arrival < collapsed:  # it waited beyond the timeout
        collapsed = arrival
    d = free + service
    if box is not None:
        box[0] = d
    if d > ws and free < we:
        busy += (d if d < we else we) - (free if free > ws else ws)
    return d, busy, collapsed


class _PriorityServer:
    """The server under ``discipline = priority`` (seed 001, algorithm 2, in every mode): non-preemptive, a queue
    per flow, the non-INVITE flow's copies first, arrival order within a flow.

    A copy's departure is no longer known at its arrival (a later non-INVITE copy can overtake a waiting INVITE
    one), but it is at the copy's service start: the server is advanced lazily to each event time t
    (:meth:`advance`), handing itself at each departure (or vacation end) s <= t to the head of the first
    non-empty queue in priority order, which departs at d = s + B (B drawn at the copy's arrival, c B for a
    duplicate, as under FIFO). A first admitted copy carries a box [d]: _PENDING until it starts, then d (the
    event loop reads the transaction's response from it). The vacations are those of the FIFO server: drawn when a
    copy finds the server empty, from the last departure; the vacation holds the server's place while copies wait.
    ``busy`` (service time inside the window) and ``collapsed`` (the earliest arrival of a copy seen waiting longer
    than the timeout) are accumulated as the copies start."""

    __slots__ = ("queues", "order", "free", "last", "busy", "collapsed", "timeout", "window_start", "window_end",
                 "vacations", "single", "mode", "thresholds")

    def __init__(self, first: int, timeout: float, window_start: float, window_end: float, vacations, single: bool):
        self.queues = (deque(), deque())  # by flow: (arrival, service time, box or None) of the waiting copies
        self.order = (self.queues[first], self.queues[1 - first])  # the non-invite flow's queue first
        self.free = -math.inf  # the end of the service (or vacation) in progress; -inf: idle, nothing waits
        self.last = 0.0  # the last departure (or 0): the vacations of an idle period start there
        self.busy = 0.0
        self.collapsed = math.inf
        self.timeout, self.window_start, self.window_end = timeout, window_start, window_end
        self.vacations, self.single = vacations, single
        self.mode, self.thresholds = 0, None  # control threshold (:meth:`advance_modes`): seed 001's mode, (L, H)

    def _start(self, s: float, service: float, box) -> None:
        """The copy of the given service time starts at s: its departure, and the window's busy time."""
        d = self.free = s + service
        if box is not None:
            box[0] = d
        ws, we = self.window_start, self.window_end
        if d > ws and s < we:
            self.busy += (d if d < we else we) - (s if s > ws else ws)

    def advance(self, t: float) -> int:
        """Serve up to t (every departure or vacation end s <= t starts the next copy); returns N(t): the copies
        waiting and in service, plus the vacation's place while copies wait for its end."""
        free = self.free
        first, second = self.order
        timeout = self.timeout
        if -math.inf < free <= t:
            ws, we, busy, collapsed = self.window_start, self.window_end, self.busy, self.collapsed
            while True:
                q = first or second
                if not q:  # a departure leaving the server empty
                    self.last, free = free, -math.inf
                    break
                free, busy, collapsed = _serve(q, free, timeout, ws, we, busy, collapsed)
                if free > t:
                    break
            self.free, self.busy, self.collapsed = free, busy, collapsed
        # a head waiting beyond the timeout (the oldest copy of its flow): the collapse is seen before its start
        if first and first[0][0] + timeout < t and first[0][0] < self.collapsed:
            self.collapsed = first[0][0]
        if second and second[0][0] + timeout < t and second[0][0] < self.collapsed:
            self.collapsed = second[0][0]
        return len(first) + len(second) + (free > t)

    def advance_modes(self, t: float) -> int:
        """:meth:`advance` under control threshold (seed 001's algorithm 2, ``docs/theory/other-models.md`` section
        C; :mod:`qderive.symbolic.models.two_flow`): at each departure leaving N copies the mode changes first
        (2 -> 1 when N = H, 1 -> 0 when N = L - 1), then the mode in force after it chooses the next copy: in mode 0
        the earliest arrival of the two queue heads (arrival order), in modes 1 and 2 the non-INVITE queue's head
        first. The mode (``self.mode``) is set to 2 by the event loop when an admitted copy makes N = H + 1."""
        free = self.free
        first, second = self.order
        timeout = self.timeout
        if -math.inf < free <= t:
            ws, we, busy, collapsed, mode = self.window_start, self.window_end, self.busy, self.collapsed, self.mode
            low, high = self.thresholds
            while True:
                n = len(first) + len(second)  # N just after the departure at `free`
                if mode == 2:
                    if n == high:
                        mode = 1
                elif mode == 1 and n == low - 1:
                    mode = 0
                if not n:  # a departure leaving the server empty
                    self.last, free = free, -math.inf
                    break
                if mode or not second or (first and first[0][0] <= second[0][0]):
                    q = first or second
                else:  # mode 0: arrival order (the earlier head; the two never tie: one copy per event)
                    q = second
                free, busy, collapsed = _serve(q, free, timeout, ws, we, busy, collapsed)
                if free > t:
                    break
            self.free, self.busy, self.collapsed, self.mode = free, busy, collapsed, mode
        if first and first[0][0] + timeout < t and first[0][0] < self.collapsed:
            self.collapsed = first[0][0]
        if second and second[0][0] + timeout < t and second[0][0] < self.collapsed:
            self.collapsed = second[0][0]
        return len(first) + len(second) + (free > t)

    def admit(self, t: float, service: float, flow: int, box) -> None:
        """The copy arriving at t (after :meth:`advance` (t)) of the given flow and service time: served at once
        by an empty server after its vacations (the FIFO server's rule), else queued in its flow's queue."""
        if self.free > t:  # busy, or on vacation with copies waiting
            self.queues[flow].append((t, service, box))
            return
        vacations = self.vacations
        if vacations is not None:  # empty (advanced to t): on vacation since the last departure?
            e = self.last + vacations()
            if not self.single:
                while e <= t:
                    e += vacations()
            if e > t:  # the copy waits for the vacation's end
                self.free = e
                self.queues[flow].append((t, service, box))
                return
        self._start(t, service, box)


def _replication(rng, setup, window_start: float, window_end: float, response_times=(), trace=None,
                 until_collapse: bool = False, block: int = DEFAULT_BLOCK, overload_collapse: bool = False):
    """One run from empty: (the accumulators of :data:`_ACCUMULATORS` and one tail count per response time,
    the collapse epoch).

    A transaction is counted when it is finished (rejected, or no further copy due), which is at most
    tau_max after its start, so the memory is that of the transactions in progress. The collapse epoch
    is the arrival of the first copy admitted with a wait above the timeout (inf: none);
    ``until_collapse`` ends the run there (or at ``window_end``); ``overload_collapse``: the collapse epoch is
    instead the first arrival that puts the server in overload (finds N >= H; with control). ``trace``: a list receiving
    (transaction, copy index, send time) of every copy (tests only). ``block``: random numbers per refill.
    ``discipline = priority`` (the setup's last entry): the server is a :class:`_PriorityServer` (module docstring);
    a run with ``until_collapse`` stops one timeout after the earliest collapse seen (every earlier one is seen by
    then).
    """
    rate, service, taus1, timeout, ctl, cap, low, high, cost, vacation, single, rate2, taus2, names, prio, retry = setup
    # Retry-After: a transaction rejected by 503 with retries left starts a new one of its flow T later; the retries
    # in time order (T constant): (start, flow, retries left); ``lefts`` the retries left of the retry transactions
    # in progress (the others have m)
    retry_after, retries = retry if retry is not None else (math.inf, 0)
    retry_q = deque()
    lefts = {}
    requests = final_rejected = retried = 0
    exps = value_stream(lambda g, n: g.standard_exponential(n), rng, block).__next__
    # two flows: a new transaction is of the second flow with probability rate2 / (rate + rate2) (the superposition
    # of the two Poisson processes); its copies go to the streams m1 + k of its own schedule
    second = None if not rate2 else value_stream(lambda g, n: g.random(n), rng, block).__next__
    share2 = rate2 / (rate + rate2)
    schedules = (taus1, taus2)
    m1 = len(taus1)
    rate = rate + rate2
    service, service2 = service
    services = value_stream(lambda g, n: np.asarray(service.sample(g, n), dtype=np.float64), rng, block).__next__
    # the second flow's own service law (``service_non_invite``): its own stream, drawn only then
    services2 = services if service2 is service else value_stream(
        lambda g, n: np.asarray(service2.sample(g, n), dtype=np.float64), rng, block).__next__
    vacations = None if vacation is None else value_stream(
        lambda g, n: np.asarray(vacation.sample(g, n), dtype=np.float64), rng, block).__next__
    vac_end = -math.inf  # the end of the vacation in progress while copies wait for it (-inf: none)
    drawn = None  # L = 0 in overload: the end of the idle period's first vacation, drawn early (module docstring)
    low_empty = vacation is not None and low == 0  # with vacations a departure leaving nobody keeps N = 1 > L = 0
    scale = 1.0 / rate
    end = window_end if until_collapse else window_end + max(taus1[-1], (taus2 or (0.0,))[-1])
    if prio:  # a response (or a wait beyond the timeout) of a copy sent before window_end is known by then
        end = window_end + timeout
    cap = math.inf if cap is None else cap
    inf = math.inf
    heappush, heappop = heapq.heappush, heapq.heappop
    order = sorted(range(len(response_times)), key=lambda i: response_times[i])
    ts = [float(response_times[i]) for i in order]
    hist = [0] * (len(ts) + 1)  # hist[i]: measured transactions with exactly i of the sorted times T < R

    # stream k: (send time, transaction, its start a, its first admitted copy's departure r (inf: none yet),
    # the index of its first refused copy (-1: none)) of the copies k still to be sent
    streams = [deque() for _ in range(m1 + len(taus2) + 2 * prio)]
    # priority: the server strategy; streams resolve + flow: (a + timeout, ..., box, ...) of the measured transactions
    # that sent their last copy before their first admitted copy started (their response is known by a + timeout)
    resolve = m1 + len(taus2)
    server = advance = admit = box = None
    if prio:
        server = _PriorityServer(0 if names[0] == "non-invite" else 1, timeout, window_start, window_end, vacations,
                                 single)
        advance, admit = server.advance, server.admit
        if ctl == 3:  # seed 001's algorithm 2: the mode decides the order at each departure
            server.thresholds = (low, high)
            advance = server.advance_modes
    mode = 0  # control threshold: seed 001's mode (0 normal, 1 partial overload, 2 blocking)
    invite = 0 if names[0] == "invite" else 1  # the flow refused in mode 1
    pending = _PENDING
    sent = True  # FIFO: every copy popped is sent (priority: decided at each event)
    heads = []  # heap of (send time, k) of the first entry of each non-empty stream
    system = deque()  # departures of the copies in the server, increasing (FIFO)
    pop = system.popleft
    last = 0.0  # departure of the last admitted copy
    over = False
    busy = response_sum = 0.0
    collapsed = inf
    started = window_copies = measured = good = timed_out = rejected = copies = 0
    refused = refused_copies = after_refusal = rejected_copies = 0
    measured2 = good2 = timed_out2 = rejected2 = copies2 = 0
    response_sum2 = 0.0
    na = exps() * scale
    while True:
        if heads and heads[0][0] < na and not (retry_q and retry_q[0][0] < heads[0][0]):
            t, g = heappop(heads)
            q = streams[g]
            _, j, a, r, f, fl = q.popleft()
            if q:
                heappush(heads, (q[0][0], g))
            k = g - m1 if fl else g
        elif retry_q and retry_q[0][0] < na:  # a retry (Retry-After): a new transaction of its flow
            t, fl, left = retry_q.popleft()
            j, a, r, f, k = started, t, inf, -1, 0
            lefts[j] = left
            started += 1
        else:
            t = na
            if t > end:
                break
            j, a, r, f, k = started, t, inf, -1, 0
            fl = 1 if second is not None and second() < share2 else 0
            started += 1
            na = t + exps() * scale
        if prio:  # the server advanced to t; the transaction's response, known once its first admitted copy started
            n = advance(t)
            if ctl == 3:
                mode = server.mode
            if over and n <= low:  # N does not rise in the overload state (every copy refused): its fall is seen now
                over = False
            if until_collapse and min(collapsed, server.collapsed) + timeout < t:  # every earlier wait seen by now
                break
            if r.__class__ is list:
                box = r
                r = box[0]  # the departure, or _PENDING: not started yet
            taus = schedules[fl]
            reject = False
            sent = k < len(taus) and r > t  # not sent: answered by t, or the resolve entry at a + timeout
            if not sent and k > len(taus):
                k = len(taus)  # a resolve entry: every copy was sent
        else:  # the FIFO server: the departures before t (every copy is sent)
            if vac_end > -inf:  # with vacations: N falls at the vacation's end (a copy moves to the server)
                if vac_end <= t:
                    vac_end = -inf
                    if over and len(system) <= low:
                        over = False
            if ctl == 3:  # seed 001's modes: 2 -> 1 when a departure leaves N = H, 1 -> 0 when it leaves L - 1
                while system and system[0] <= t:
                    pop()
                    if mode == 2:
                        if len(system) == high:
                            mode = 1
                    elif mode == 1 and len(system) == low - 1:
                        mode = 0
            while system and system[0] <= t:  # the departures before t, each with its state change
                pop()
                if over and len(system) <= low and not low_empty:
                    over = False
            if over and low_empty and not system:  # L = 0, single vacations: has the vacation after `last` ended?
                if drawn is None:
                    drawn = last + vacations()
                if drawn <= t:  # it ended with nobody waiting (all refused): N fell to 0 = L
                    over = False
            n = len(system)
            if vac_end > t:  # the vacation takes the server's place (an empty server: N <= 1 < 2 <= H, K, not counted)
                n += 1
            reject = False
        if sent:
            if trace is not None:
                trace.append((j, k, t))
            if window_start <= t < window_end:
                window_copies += 1
            if ctl == 3:  # mode 2 refuses every copy, mode 1 the INVITE flow's, the capacity R any; all by 503
                if mode == 2 or (mode == 1 and fl == invite) or n >= cap:
                    if f < 0:
                        f = k
                    reject = r == inf
                    n = cap
                elif n == high:  # the admitted copy makes N = H + 1: blocking
                    mode = 2
                    if prio:
                        server.mode = 2
            elif ctl:
                if not over and n >= high:
                    over = True
                    if overload_collapse and collapsed == inf:
                        collapsed = t
                        if until_collapse and not prio:  # priority: once an earlier wait is excluded (above)
                            break
                if over:
                    if f < 0:
                        f = k
                    # 503 ends a transaction with no admitted copy (r = inf); a retransmission of an admitted one
                    # is dropped
                    reject = ctl == 2 and r == inf
                    n = cap  # ignore: silently dropped, as at the capacity
            if n < cap:
                s = services2() if fl else services()
                if r != inf:
                    s *= cost
                if prio:  # queued (or served at once): a first admitted copy's departure is read from its box
                    if r == inf:
                        box = [pending]
                        admit(t, s, fl, box)
                        r = box[0]
                    else:
                        admit(t, s, fl, None)
                else:
                    if last > t:
                        start = last
                        if start - t > timeout and collapsed == inf:
                            collapsed = t
                            if until_collapse:
                                break
                    elif vacations is None:
                        start = t
                    else:  # an empty server: on vacation since the last departure (or time 0)?
                        e = last + vacations() if drawn is None else drawn
                        drawn = None
                        if not single:
                            while e <= t:
                                e += vacations()
                        if e > t:
                            start = vac_end = e
                            if start - t > timeout and collapsed == inf:
                                collapsed = t
                                if until_collapse:
                                    break
                        else:
                            start = t
                    last = d = start + s
                    system.append(d)
                    if d > window_start and start < window_end:
                        busy += ((d if d < window_end else window_end)
                                 - (start if start > window_start else window_start))
                    if r == inf:
                        r = d
            elif f < 0:
                f = k
            k += 1  # copies sent
            taus = schedules[fl]
            if not reject and k < len(taus):
                tk = a + taus[k]
                if r > tk:  # no response by the next timer: the copy will be sent
                    g = m1 + k if fl else k
                    q = streams[g]
                    if not q:
                        heappush(heads, (tk, g))
                    q.append((tk, j, a, box if r is pending else r, f, fl))  # (FIFO: never the object _PENDING)
                    continue
            if r is pending:  # (priority) the last copy sent, the first admitted one not started: wait for it
                if window_start <= a < window_end:
                    q = streams[resolve + fl]  # a + timeout increases along each flow's stream
                    if not q:
                        heappush(heads, (a + timeout, resolve + fl))
                    q.append((a + timeout, j, a, box, f, fl))
                continue
        if retry is not None:  # the transaction is finished: a rejected one with retries left comes back T later
            left = lefts.pop(j, retries) if lefts else retries
            if reject and left:
                retry_q.append((t + retry_after, fl, left - 1))
            if window_start <= a < window_end:
                if left == retries:
                    requests += 1
                else:
                    retried += 1
                if reject and not left:
                    final_rejected += 1
        if window_start <= a < window_end:  # the transaction is finished: count it
            measured += 1
            copies += k
            response = inf
            if reject:
                rejected += 1
                rejected_copies += k
            elif r - a <= timeout:
                response = r - a
                good += 1
                response_sum += response
            else:
                timed_out += 1
            if fl:
                measured2 += 1
                copies2 += k
                if reject:
                    rejected2 += 1
                elif response < inf:
                    good2 += 1
                    response_sum2 += response
                else:
                    timed_out2 += 1
            if f >= 0:
                refused += 1
                refused_copies += k
                after_refusal += k - 1 - f
            if ts:
                hist[bisect_left(ts, response)] += 1
    row = [window_end - window_start, measured, good, timed_out, rejected, copies, window_copies, busy,
           response_sum, refused, refused_copies, after_refusal, rejected_copies,
           measured2, good2, timed_out2, rejected2, copies2, response_sum2, requests, final_rejected, retried]
    above = [sum(hist[i + 1:]) for i in range(len(ts))]  # R > T_i: more than i of the sorted times below R
    tails = [0] * len(ts)
    for i, original in enumerate(order):
        tails[original] = above[i]
    if prio:  # the services that start before the end (the window's busy time), the waits seen by then
        advance(end)
        collapsed = min(collapsed, server.collapsed)
        row[7] = server.busy
    return row + tails, collapsed


def _measure_table(n_tails: int, flows: bool = False) -> dict:
    out = {
        "offered_rate": lambda a: a["window_copies"] / a["time"],
        "mean_copies": lambda a: a["copies"] / a["transactions"],
        "duplicate_ratio": lambda a: 1 - a["transactions"] / a["copies"],
        "goodput": lambda a: a["goodput"] / a["time"],
        "timeout_probability": lambda a: a["timed_out"] / a["transactions"],
        "reject_probability": lambda a: a["rejected"] / a["transactions"],
        "utilization": lambda a: a["busy"] / a["time"],
        # diagnostics (not in the contract): the mean response of the goodput transactions, the mean copies
        # of the transactions with a refused copy, the copies they sent after their first refusal
        "mean_response": lambda a: a["response_sum"] / a["goodput"],
        "refused_mean_copies": lambda a: a["refused_copies"] / a["refused"],
        "copies_after_refusal": lambda a: a["after_refusal"] / a["transactions"],
        # the mean copies of the rejected transactions (1 under the contract's 503 rule: only a first copy is rejected)
        "rejected_mean_copies": lambda a: a["rejected_copies"] / a["rejected"],
        # Retry-After: the requests finally rejected (no retry left) / the requests; the retried transactions per second
        "request_reject_probability": lambda a: a["final_rejected"] / a["requests"],
        "retry_rate": lambda a: a["retried"] / a["time"],
    }
    for i in (1, 2) if flows else ():  # two flows (1: the totals minus the second flow's)
        def part(a, key, i=i):
            return a[key + "_2"] if i == 2 else a[key] - a[key + "_2"]
        out[f"flow{i}_goodput"] = lambda a, part=part: part(a, "goodput") / a["time"]
        out[f"flow{i}_mean_copies"] = lambda a, part=part: part(a, "copies") / part(a, "transactions")
        out[f"flow{i}_duplicate_ratio"] = lambda a, part=part: 1 - part(a, "transactions") / part(a, "copies")
        out[f"flow{i}_timeout_probability"] = lambda a, part=part: part(a, "timed_out") / part(a, "transactions")
        out[f"flow{i}_reject_probability"] = lambda a, part=part: part(a, "rejected") / part(a, "transactions")
        # diagnostic: the mean response of the flow's goodput transactions
        out[f"flow{i}_mean_response"] = lambda a, part=part: part(a, "response_sum") / part(a, "goodput")
    for i in range(n_tails):
        out[f"tail{i}"] = lambda a, c=f"tail{i}": a[c] / a["transactions"]
    return out


def _times(response_times) -> list[tuple[object, float]]:
    if isinstance(response_times, (str, bytes)) or not hasattr(response_times, "__iter__"):
        response_times = (response_times,)
    out = []
    for key in response_times:
        t = _float(key, "response_tail", lambda x: x >= 0, "each time T must be a finite number >= 0")
        if any(k == key for k, _ in out):
            raise ParameterError("response_tail", "repeats the time", key)
        out.append((key, t))
    return out


def _estimates(model, *, horizon, warmup, replications, seed, response_times=(), run=None) -> dict[str, Estimate]:
    """Every measure (contract keys, diagnostics, ``tail{i}``) as an :class:`.stats.Estimate`.

    ``run``: a dict that receives the seed sequence's ``entropy`` and the wall-clock ``seconds``."""
    setup = _setup(model)
    horizon = _float(horizon, "horizon", lambda x: x > 0, "must be a finite time > 0")
    warmup = _float(warmup, "warmup", lambda x: x >= 0, "must be a finite time >= 0")
    replications = _integer(replications, "replications", 2, "must be an integer >= 2 (an interval needs two)")
    _check_seed(seed)
    times = _times(response_times)
    _budget(setup, warmup + horizon, replications)
    sequence = np.random.SeedSequence(seed)
    rows = np.empty((replications, len(_ACCUMULATORS) + len(times)))
    started = time.perf_counter()
    for i, child in enumerate(sequence.spawn(replications)):
        rows[i] = _replication(np.random.default_rng(child), setup, warmup, warmup + horizon, [t for _, t in times])[0]
    if run is not None:
        run.update(entropy=int(sequence.entropy), seconds=time.perf_counter() - started)
    names = _ACCUMULATORS + tuple(f"tail{i}" for i in range(len(times)))
    return replication_estimates(rows, names, _measure_table(len(times), bool(setup[11])))


def _pair(est: Estimate) -> tuple:
    ci = est.interval(0.95)
    return (est.value, None if ci is None else (ci[1] - ci[0]) / 2)


def simulate_sip(model, *, horizon, warmup, replications, seed, response_times=()) -> dict:
    """Simulate the ``sip-retransmission`` model with real timers per transaction (the module docstring).

    ``horizon``: the measured time per replication, after ``warmup`` (time discarded from the empty
    start), both in seconds; ``replications`` >= 2 independent runs from
    ``numpy.random.SeedSequence(seed)``. Returns ``{measure: (estimate, half_width)}`` of a 95 %
    Student-t interval for the contract's keys (:data:`MEASURES`) and ``response_tail``:
    ``{T: (estimate, half_width)}`` of P(R > T) (R = inf for a transaction not answered by its
    timeout or rejected), T as given. With two flows (``rate_non_invite`` > 0) also ``flows``: ``{method: {key:
    (estimate, half_width)}}`` for the keys of :data:`FLOW_MEASURES` over each flow's transactions (the totals are
    over all transactions). An estimate with a zero denominator is None (e.g. no transaction
    started in the window). Deterministic for a given seed. The estimators::

        offered_rate = copies arriving in the window / horizon           (-> lambda_0 E[copies])
        mean_copies = copies sent / transactions,  duplicate_ratio = 1 - 1 / mean_copies
        goodput = transactions answered with R <= timeout / horizon
        timeout_probability = transactions neither answered in time nor rejected / transactions
        reject_probability = transactions rejected by 503 / transactions
        utilization = busy time in the window / horizon
    """
    times = _times(response_times)
    est = _estimates(model, horizon=horizon, warmup=warmup, replications=replications, seed=seed,
                     response_times=[t for _, t in times])
    out = {name: _pair(est[name]) for name in MEASURES}
    out["response_tail"] = {key: _pair(est[f"tail{i}"]) for i, (key, _) in enumerate(times)}
    if getattr(model, "retry_after", None) is not None:  # Retry-After: the measures of the requests
        out["request_reject_probability"] = _pair(est["request_reject_probability"])
        out["retry_rate"] = _pair(est["retry_rate"])
    if "flow2_goodput" in est:  # two flows: flow 1 is ``method``'s, flow 2 the other method's
        names = _setup(model)[13]
        out["flows"] = {names[i - 1]: {m: _pair(est[f"flow{i}_{m}"]) for m in FLOW_MEASURES} for i in (1, 2)}
    return out


@declare(independent={"scan_points": "it is the grid of the engine's fixed-point scan; the simulation solves no fixed "
                                     "point"})
def simulate(model, customers: int = 200_000, replications: int = 10, seed: int | None = None, *,
             warmup: float = 0.1, quiet: bool = False) -> SimulationResult:
    """:func:`simulate_sip` in the shape of ``qderive simulate`` (the other simulators' ``simulate``).

    ``customers``: transactions started per replication on average, warm-up included: each run covers
    customers / lambda_0 seconds (lambda_0 the total rate of both flows with ``rate_non_invite``), of which the ``warmup`` fraction is discarded (horizon = (1 - warmup)
    customers / lambda_0). Returns a :class:`.stats.SimulationResult` with the contract's measures
    (:data:`MEASURES`) and, when the model has a field ``response_tail`` (times T), the sample measure
    ``response_tail`` {T as decimal text: P(R > T)}. ``quiet`` is accepted for the command line (there is no
    progress bar).
    """
    from qderive.symbolic.numbers import decimal_text

    rate = _float(_field(model, "rate"), "rate", lambda x: x > 0, "must be a finite rate > 0")
    rate += _float(getattr(model, "rate_non_invite", None) or 0, "rate_non_invite", lambda x: x >= 0,
                   "must be a finite rate >= 0")  # two flows: the customers of both
    customers = _integer(customers, "customers", 1, "must be an integer >= 1")
    fraction = _float(warmup, "warmup", lambda x: 0 <= x < 1, "must be a fraction in [0, 1)")
    total = customers / rate
    run = {}
    tail = tuple(getattr(model, "response_tail", None) or ())
    est = _estimates(model, horizon=(1 - fraction) * total, warmup=fraction * total, replications=replications,
                     seed=seed, response_times=tail, run=run)
    measures = {name: est[name] for name in MEASURES}
    samples = {"response_tail": {decimal_text(t): est[f"tail{i}"] for i, t in enumerate(tail)}} if tail else {}
    labelled = {name: (e, "no transaction started in the measured window", "a control that never refuses")
                for name, e in measures.items()}
    labelled.update((f"response_tail[{key}]", (e, "no transaction started in the measured window",
                                               "a tail beyond every response"))
                    for key, e in samples.get("response_tail", {}).items())
    notes = estimate_notes(labelled, replications)
    return SimulationResult(model=getattr(model, "name", "sip-retransmission"), measures=measures,
                            customers=customers, warmup_customers=int(round(fraction * customers)),
                            replications=replications, seed=run["entropy"], seconds=run["seconds"],
                            notes=("customers: transactions started per replication, on average "
                                   "(the run covers customers / rate seconds)", *notes), sample_measures=samples)


def collapse_times(model, *, limit, replications, seed, criterion: str = "wait") -> dict:
    """How long the server takes, from empty, to collapse: the first copy that waits longer than the timeout.

    From that epoch on no new transaction can be answered before its Timer B until the backlog
    drains; without control, once every transaction sends all its copies (load
    lambda_0 E[copies] E B > 1), it does not drain. Without control the simulated collapse is
    metastable below capacity: its onset depends on how long one looks, which these times measure.
    Each of ``replications`` runs (``numpy.random.SeedSequence(seed).spawn``) stops at its
    collapse or at ``limit`` seconds. Returns ``{"times": sorted collapse epochs (inf: none by
    limit), "collapsed": (fraction collapsed by limit, 95 % half-width)}``::

        collapse epoch = min { t : a copy admitted at t waits W(t) > timeout }       (criterion "wait")
        collapse epoch = min { t : a copy arriving at t finds N(t) >= H }            (criterion "overload")

    ``criterion="overload"`` (``--control ignore|503`` only) is for a control whose queue H E B stays below the
    timeout, where no copy can wait that long: the first entry into the overload state.
    """
    setup = _setup(model)
    limit = _float(limit, "limit", lambda x: x > 0, "must be a finite time > 0")
    replications = _integer(replications, "replications", 2, "must be an integer >= 2 (an interval needs two)")
    _check_seed(seed)
    if criterion not in ("wait", "overload") or (criterion == "overload" and setup[4] not in (1, 2)):
        raise ParameterError("criterion", "must be wait, or overload with control ignore or 503", criterion)
    _budget(setup, limit, replications)
    times = [_replication(np.random.default_rng(child), setup, 0.0, limit, until_collapse=True, block=2048,
                          overload_collapse=criterion == "overload")[1]
             for child in np.random.SeedSequence(seed).spawn(replications)]
    rows = np.array([[1.0, float(t <= limit)] for t in times])
    est = replication_estimates(rows, ("runs", "collapsed"), {"collapsed": lambda a: a["collapsed"] / a["runs"]})
    return {"times": sorted(times), "collapsed": _pair(est["collapsed"])}
