"""One replication of the SIP simulator: the event loop over copy arrivals (the package docstring, *Method*).

The events are the copy arrivals: the Poisson epochs (copy 0 of a new transaction), the retransmission instants
a + tau_k (one FIFO stream per copy index k and flow, merged by a heap of the stream heads), the retries of
Retry-After (:class:`Retries`, a stream of their own) and under priority the resolve entries at a + timeout. A
transaction's state travels with its pending copy: (send time, transaction, start a, response r, first refused
copy f, flow). The server (:mod:`.servers`) is FIFO or priority behind one interface; the control's decision on
each copy is :func:`decide`; a finished transaction is counted by :class:`Tally`.

Five codings of the loop, chosen in :meth:`_Run.run`: the general one (:meth:`_Run._general`, every case, through
the servers' interface; a trace runs it) and four flat ones, where the hot path of the server, the control and the
streams are written out in the loop (a method call per event cost the simulator 1.05-1.5x against the single function
that preceded this package): :meth:`_Run._fifo` (FIFO, no Retry-After, no modes: the common case),
:meth:`_Run._priority` (the priority server, whose ``serve`` and ``admit`` stay calls: a departure is known only at
the copy's start), :meth:`_Run._fifo_modes` (FIFO with ``threshold``'s modes or Retry-After, no vacations) and
:meth:`_Run._fifo_vacations` (FIFO with Retry-After and vacations: the end of a vacation that copies wait for is one
more entry of the departures). In the flat loops of the priority server, the modes and the vacations a pending copy
carries its transaction's retries left instead of its index and Retry-After's retries are one more stream of the
heap (a retry is copy 0 of a new transaction); a finished transaction is counted by :meth:`Tally.finish` (a call per
transaction, not per event) except in :meth:`_Run._fifo` and :meth:`_Run._fifo_vacations`, which write the counts
out. All five return the same numbers bit for bit (``replication(..., general=True)``; ``tests/test_simulate_sip.py``
compares them on 36 feature sets and checks which loop runs), and none is above cyclomatic complexity 40.

The random numbers are drawn from numpy in blocks (:func:`..stats.value_stream`), one stream per kind (inter-arrival
times, the flow of a new transaction, service times per flow, vacations), in the order of the events: a run is a
function of its generator's seed.
"""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_left
from collections import deque

import numpy as np

from ..stats import DEFAULT_BLOCK, value_stream
from .servers import PENDING, STOP, ControlState, FifoServer, PriorityServer
from .setup import Control

__all__ = ["ACCUMULATORS", "replication", "decide", "Tally", "Retries"]

#: the accumulators of one replication (then one tail count per requested time)
ACCUMULATORS = ("time", "transactions", "goodput", "timed_out", "rejected", "copies", "window_copies", "busy",
                "response_sum", "refused", "refused_copies", "after_refusal", "rejected_copies",
                # the second flow's transactions (``rate_non_invite``; the first flow's: the totals minus these)
                "transactions_2", "goodput_2", "timed_out_2", "rejected_2", "copies_2", "response_sum_2",
                # Retry-After (``retry_after``): the first transactions of requests, the transactions finally
                # rejected (no retry left), the retried transactions
                "requests", "final_rejected", "retried")

_INF = math.inf


class _RunEnds(Exception):
    """:meth:`_Run._fifo`: a run ``until_collapse`` ends at this copy (raised at the collapse)."""


class Tally:
    """The counts of the measured transactions (those that start in [window_start, window_end)), one attribute per
    name of :data:`ACCUMULATORS`, and the response-time histogram over the sorted times of ``response_tail``."""

    __slots__ = ACCUMULATORS + ("window_start", "window_end", "timeout", "order", "ts", "hist", "retries")

    def __init__(self, window_start, window_end, timeout, response_times, retries: int = 0):
        self.window_start, self.window_end, self.timeout = window_start, window_end, timeout
        self.retries = retries  # Retry-After's m (0: none)
        for name in ACCUMULATORS:
            setattr(self, name, 0)
        self.response_sum = self.response_sum_2 = 0.0
        self.order = sorted(range(len(response_times)), key=lambda i: response_times[i])
        self.ts = [float(response_times[i]) for i in self.order]
        self.hist = [0] * (len(self.ts) + 1)  # hist[i]: measured transactions with exactly i of the sorted T < R

    def finish(self, a, r, f, k, fl, reject, left) -> None:
        """Count the finished transaction started at a (response r, first refused copy f, k copies, flow fl, ``left``
        retries left of Retry-After: m for the first transaction of a request, the retries, the final rejection)."""
        if not self.window_start <= a < self.window_end:
            return
        if self.retries:
            if left == self.retries:
                self.requests += 1
            else:
                self.retried += 1
            if reject and not left:
                self.final_rejected += 1
        self.transactions += 1
        self.copies += k
        response = _INF
        if reject:
            self.rejected += 1
            self.rejected_copies += k
        elif r - a <= self.timeout:
            response = r - a
            self.goodput += 1
            self.response_sum += response
        else:
            self.timed_out += 1
        if fl:
            self.second(k, reject, response)
        if f >= 0:
            self.refused += 1
            self.refused_copies += k
            self.after_refusal += k - 1 - f
        if self.ts:
            self.hist[bisect_left(self.ts, response)] += 1

    def second(self, k, reject, response) -> None:
        """Count a measured transaction of the second flow (k copies, rejected or not, its response or inf)."""
        self.transactions_2 += 1
        self.copies_2 += k
        if reject:
            self.rejected_2 += 1
        elif response < _INF:
            self.goodput_2 += 1
            self.response_sum_2 += response
        else:
            self.timed_out_2 += 1

    def row(self, busy, window_copies) -> list:
        """The accumulators in the order of :data:`ACCUMULATORS`, then the tail counts in the order given."""
        self.time = self.window_end - self.window_start
        self.busy, self.window_copies = busy, window_copies
        above = [sum(self.hist[i + 1:]) for i in range(len(self.ts))]  # R > T_i: more than i sorted times below R
        tails = [0] * len(self.ts)
        for i, original in enumerate(self.order):
            tails[original] = above[i]
        return [getattr(self, name) for name in ACCUMULATORS] + tails


class Retries:
    """Retry-After: a transaction rejected by 503 with retries left starts a new one of its flow T later. The
    retries in time order (T constant): (start, flow, retries left); :attr:`lefts` the retries left of the retry
    transactions in progress (the others have m)."""

    def __init__(self, retry):
        self.after, self.retries = (retry.after, retry.retries) if retry is not None else (_INF, 0)
        self.active = retry is not None
        self.queue = deque()
        self.lefts = {}

    def finish(self, j, t, fl, reject) -> int:
        """Transaction j (flow fl) is finished at t: a rejected one with retries left comes back T later; returns its
        retries left (:meth:`Tally.finish` counts it as a request or a retry, and as finally rejected)."""
        left = self.lefts.pop(j, self.retries) if self.lefts else self.retries
        if reject and left:
            self.queue.append((t + self.after, fl, left - 1))
        return left


def _clipped(start, d, ws, we) -> float:
    """The part of the service [start, d) inside the window [ws, we)."""
    return (d if d < we else we) - (start if start > ws else ws)


def decide(ctl, state: ControlState, n, k, f, r, fl, invite, cap, high):
    """The control's decision on a copy k of flow ``fl`` arriving with N = n: (n, or ``cap`` when it is refused; f,
    the transaction's first refused copy; reject: a 503 that ends the transaction; entered: the overload state was
    entered now).

    ``threshold``: mode 2 refuses every copy, mode 1 the INVITE flow's, the capacity R any, all by 503; an admitted
    copy that makes N = H + 1 switches to mode 2. ``ignore``/``503``: an arrival finding N >= H enters overload; in
    overload every copy is refused (503 ends a transaction with no admitted copy, r = inf; a retransmission of an
    admitted one is dropped)."""
    if ctl == Control.THRESHOLD:
        mode = state.mode
        if mode == 2 or (mode == 1 and fl == invite) or n >= cap:
            return cap, (k if f < 0 else f), r == _INF, False
        if n == high:  # the admitted copy makes N = H + 1: blocking
            state.mode = 2
        return n, f, False, False
    entered = False
    if not state.over and n >= high:
        state.over = entered = True
    if state.over:
        return cap, (k if f < 0 else f), ctl == Control.REJECT and r == _INF, entered
    return n, f, False, entered


def _pending(r, t, k, copies):
    """Priority: (r, box, sent, k) of an event: the response r read from its box (the departure, or PENDING: not
    started yet); the copy is not sent when the transaction was answered by t, or for a resolve entry at
    a + timeout (then every copy was sent: k = the number of copies)."""
    box = None
    if r.__class__ is list:
        box = r
        r = box[0]
    sent = k < copies and r > t
    if not sent and k > copies:
        k = copies
    return r, box, sent, k


class _Run:
    """The state of one replication (the streams of pending copies, the random streams, the server, the counts)."""

    def __init__(self, rng, setup, window_start, window_end, response_times, trace, until_collapse, block,
                 overload_collapse):
        self.setup = s = setup
        self.window_start, self.window_end = window_start, window_end
        self.trace, self.until_collapse, self.overload_collapse = trace, until_collapse, overload_collapse
        self.exps = value_stream(lambda g, n: g.standard_exponential(n), rng, block).__next__
        # two flows: a new transaction is of the second flow with probability rate2 / (rate + rate2) (the
        # superposition of the two Poisson processes); its copies go to the streams m1 + k of its own schedule
        self.second = None if not s.rate2 else value_stream(lambda g, n: g.random(n), rng, block).__next__
        self.share2 = s.rate2 / (s.rate + s.rate2)
        self.schedules = (s.taus, s.taus2)
        self.m1 = len(s.taus)
        self.scale = 1.0 / (s.rate + s.rate2)
        service, service2 = s.laws
        services = value_stream(lambda g, n: np.asarray(service.sample(g, n), dtype=np.float64), rng, block).__next__
        # the second flow's own service law (``service_non_invite``): its own stream, drawn only then
        self.services = (services, services if service2 is service else value_stream(
            lambda g, n: np.asarray(service2.sample(g, n), dtype=np.float64), rng, block).__next__)
        vacations = None if s.vacation is None else value_stream(
            lambda g, n: np.asarray(s.vacation.sample(g, n), dtype=np.float64), rng, block).__next__
        self.end = window_end if until_collapse else window_end + s.tau_max
        if s.priority:  # a response (or a wait beyond the timeout) of a copy sent before window_end is known by then
            self.end = window_end + s.timeout
        self.cap = _INF if s.capacity is None else s.capacity
        self.invite = 0 if s.names[0] == "invite" else 1  # the flow refused in mode 1
        # stream k: (send time, transaction, start a, response r, first refused copy f, flow) of the copies k still
        # to be sent; under priority the streams resolve + flow: the measured transactions that sent their last
        # copy before their first admitted copy started (their response is known by a + timeout)
        self.streams = [deque() for _ in range(self.m1 + len(s.taus2) + 2 * s.priority)]
        self.resolve = self.m1 + len(s.taus2)
        self.heads = []  # heap of (send time, stream) of the first entry of each non-empty stream
        # the flat loops (:meth:`run`): the copy index of stream g's entries (a resolve entry: every copy sent),
        # the first stream of each flow (flow 2's copy k: m1 + k); Retry-After's retries a stream of their own,
        # the last one (:meth:`_flat`: a retry is copy 0 of a new transaction)
        self.streams.append(deque())
        self.retry_stream = len(self.streams) - 1
        self.copy_index = [*range(self.m1), *range(len(s.taus2)), *((self.m1, len(s.taus2)) * s.priority), 0]
        self.offsets = (0, self.m1)
        server = PriorityServer if s.priority else FifoServer
        self.server = server(s, vacations, window_start, window_end, until_collapse)
        self.state = ControlState()
        self.retries = Retries(s.retry)
        self.tally = Tally(window_start, window_end, s.timeout, response_times, self.retries.retries)
        self.collapsed = _INF  # the overload criterion's collapse epoch (the waits: the server's)
        self.waited = _INF  # :meth:`_fifo`: the first copy admitted with a wait beyond the timeout

    def push(self, g, entry) -> None:
        """Append ``entry`` (its send time first) to stream g, keeping the heap of the stream heads."""
        q = self.streams[g]
        if not q:
            heapq.heappush(self.heads, (entry[0], g))
        q.append(entry)

    def retry_transaction(self, j):
        """(start, flow) of the next retry of Retry-After, which becomes transaction j (a new transaction of its
        flow, with its retries left)."""
        t, fl, left = self.retries.queue.popleft()
        self.retries.lefts[j] = left
        return t, fl

    def run(self, general: bool = False):
        """The event loop; returns (the accumulators and tail counts, the collapse epoch). Four flat codings (no
        method call per event where the single function before the package had none) chosen here, and the general
        loop (:meth:`_general`) for a trace or when ``general``: the common case :meth:`_fifo` (FIFO, no
        Retry-After, no modes), :meth:`_priority` (the priority server), :meth:`_fifo_modes` (FIFO with the modes
        of ``threshold`` or Retry-After, no vacations) and :meth:`_fifo_vacations` (FIFO with Retry-After and
        vacations). All draw the same numbers in the same order and return the same values, bit for bit
        (``tests/test_simulate_sip.py`` runs each against the general loop)."""
        s = self.setup
        if general or self.trace is not None:
            return self._general()
        if s.priority:
            return self._priority()
        if s.retry is not None and s.vacation is not None:
            return self._fifo_vacations()
        if s.retry is not None or s.control == Control.THRESHOLD:
            return self._fifo_modes()
        return self._fifo()

    def _fifo(self):
        """The event loop of the common case (FIFO, one or two flows, no Retry-After, no modes), with no method call
        per event: the server's departures before t popped here (with vacations: :meth:`.servers.FifoServer.advance`),
        the control ``ignore``/``503``, the Lindley step d = max(t, last) + B (after the vacations of an idle period:
        :meth:`.servers.FifoServer.after_vacations`), the busy time in the window and the counts of :class:`Tally`
        kept in local variables (the second flow's through :meth:`Tally.second`). A pending copy is (send time,
        start a, response r, first refused copy f, flow). (:meth:`_general` is the same loop through the servers'
        interface; this one is 1.25-1.5x faster.)"""
        s, server, state, streams, heads, tally = self.setup, self.server, self.state, self.streams, [], self.tally
        heappop, heapreplace, heappush, end, exps, scale = heapq.heappop, heapq.heapreplace, heapq.heappush, \
            self.end, self.exps, self.scale
        schedules, services, cost, cap, high, low = self.schedules, self.services, s.cost, self.cap, \
            (s.high if s.control else _INF), s.low
        copy_index, offsets, share2, second_flow = self.copy_index, self.offsets, self.share2, tally.second
        # the flow of a new transaction: the second with probability share2 (one flow: never, and nothing is drawn)
        second = self.second or itertools.repeat(1.0).__next__
        reject_r = _INF if s.control == Control.REJECT else -1.0  # a refused copy 0 (r = inf) is a 503 rejection
        ws, we, timeout, ts, hist, inf = self.window_start, self.window_end, s.timeout, tally.ts, tally.hist, _INF
        system, plain, vacations, wait_limit = server.system, server.plain, server.vacations, s.timeout
        popleft, append = system.popleft, system.append
        heads.append((_INF, len(streams)))  # a head that is never due: the heap is never empty
        last = busy = response_sum = 0.0
        window_copies = measured = good = timed_out = rejected = copies = refused = refused_copies = after = 0
        rejected_copies = 0
        na = exps() * scale
        try:
            while True:
                if heads[0][0] < na:  # the earliest pending copy
                    t, g = heads[0]
                    q = streams[g]
                    _, a, r, f, fl = q.popleft()
                    if q:
                        heapreplace(heads, (q[0][0], g))
                    else:
                        heappop(heads)
                    k = copy_index[g]
                else:  # a new transaction
                    t = na
                    if t > end:
                        break
                    a, r, f, k = t, inf, -1, 0
                    fl = 1 if second() < share2 else 0
                    na = t + exps() * scale
                if plain:  # the departures before t; in overload, one that left N <= L ended it
                    while system and system[0] <= t:
                        popleft()
                    n = len(system)
                    if n <= low and state.over:
                        state.over = False
                else:
                    server.last = last
                    n = server.advance(t, state)
                if ws <= t < we:
                    window_copies += 1
                reject = False
                if n >= high or state.over:  # ignore/503: an arrival finding N >= H enters overload; all refused
                    if not state.over:
                        self._enter(t)
                    n = cap
                    reject = r == reject_r  # 503 ends a transaction with no admitted copy
                if n < cap:
                    service = services[fl]()
                    if r != inf:
                        service *= cost
                    if last > t:  # it waits for the copy ahead
                        start = last
                        if start - t > wait_limit:  # the first wait beyond the timeout: the collapse epoch
                            wait_limit = self._waited(t)
                    elif vacations is None:
                        start = t
                    else:
                        start = self._after_vacations(t, last)
                    last = d = start + service
                    append(d)
                    if ws <= start <= d <= we:  # the busy time in the window
                        busy += d - start
                    elif d > ws and start < we:  # the copy in service at ws or at we
                        busy += _clipped(start, d, ws, we)
                    if r == inf:  # the first admitted copy: its departure is the response
                        r = d
                elif f < 0:
                    f = k
                k += 1  # copies sent
                taus = schedules[fl]
                if not reject and k < len(taus):
                    tk = a + taus[k]
                    if r > tk:  # no response by the next timer: the copy will be sent
                        g = offsets[fl] + k
                        q = streams[g]
                        if not q:
                            heappush(heads, (tk, g))
                        q.append((tk, a, r, f, fl))
                        continue
                if ws <= a < we:  # the transaction is finished: count it (Tally.finish, one flow)
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
                        second_flow(k, reject, response)
                    if f >= 0:
                        refused += 1
                        refused_copies += k
                        after += k - 1 - f
                    if ts:
                        hist[bisect_left(ts, response)] += 1
        except _RunEnds:  # a run until_collapse ends at the collapse
            pass
        tally.transactions, tally.goodput, tally.timed_out, tally.rejected, tally.copies = measured, good, \
            timed_out, rejected, copies
        tally.response_sum, tally.refused, tally.refused_copies, tally.after_refusal, tally.rejected_copies = \
            response_sum, refused, refused_copies, after, rejected_copies
        server.busy += busy
        busy, collapsed = server.close(self.end, state)
        return tally.row(busy, window_copies), min(self.collapsed, self.waited, collapsed)

    def _priority(self):
        """The event loop under the priority server (:class:`.servers.PriorityServer`; every control, two flows,
        Retry-After), written out as :meth:`_fifo` is, with the server's two calls per event (``serve``, ``admit``:
        a departure is known only at the copy's start): the response read from its box, the copy not sent when the
        transaction was answered by then (or a resolve entry at a + timeout, :meth:`wait_response`), the control's
        decision (:func:`decide`; the overload state of ``ignore``/``503`` a local) and Retry-After's retries in the
        loop; the counts through :meth:`Tally.finish` (one call per transaction). A pending copy is (send time,
        retries left, start a, response r or its box, first refused copy f, flow); a retry of Retry-After is copy 0
        of a new transaction, from the last stream."""
        s, server, state, streams, heads, tally = self.setup, self.server, self.state, self.streams, self.heads, \
            self.tally
        advance, admit, heappop, heapreplace, heappush = server.serve, server.admit, heapq.heappop, \
            heapq.heapreplace, heapq.heappush
        end, exps, scale, schedules, services, cost, cap, ctl = self.end, self.exps, self.scale, self.schedules, \
            self.services, s.cost, self.cap, s.control
        high, invite, threshold, until_collapse = (s.high if ctl else _INF), self.invite, ctl == Control.THRESHOLD, \
            self.until_collapse
        reject_r = _INF if ctl >= Control.REJECT else -1.0  # a refused copy 0 (r = inf) is a 503 rejection
        copy_index, offsets, share2, finish, low = self.copy_index, self.offsets, self.share2, tally.finish, s.low
        second = self.second or itertools.repeat(1.0).__next__
        ws, we, inf, pending, wait_response = self.window_start, self.window_end, _INF, PENDING, self.wait_response
        m, after, retry_g = (s.retry.retries, s.retry.after, self.retry_stream) if s.retry else (0, _INF, 0)
        heads.append((_INF, len(streams)))  # a head that is never due: the heap is never empty
        window_copies, over = 0, False  # (ignore/503: the overload state, here only; the server sees it off)
        na = exps() * scale
        while True:
            if heads[0][0] < na:  # the earliest pending copy (or retry)
                t, g = heads[0]
                q = streams[g]
                _, left, a, r, f, fl = q.popleft()
                if q:
                    heapreplace(heads, (q[0][0], g))
                else:
                    heappop(heads)
                k = copy_index[g]
            else:  # a new transaction
                t = na
                if t > end:
                    break
                a, r, f, k, left = t, inf, -1, 0, m
                fl = 1 if second() < share2 else 0
                na = t + exps() * scale
            n = advance(t, state)
            if over and n <= low:  # N does not rise in the overload state (every copy refused): its fall is seen now
                over = False
            if until_collapse and server.stop(t, self.collapsed):  # one timeout after the earliest collapse
                break
            box = None
            if r.__class__ is list:  # the response from the box: the departure, or PENDING (not started yet)
                box = r
                r = box[0]
            taus = schedules[fl]
            reject = False
            if k < len(taus) and r > t:  # not answered by t: the copy is sent (a resolve entry: k = copies)
                if ws <= t < we:
                    window_copies += 1
                if threshold:  # the control's decision (:func:`decide`): mode 2 refuses every copy, mode 1 the
                    mode = state.mode  # INVITE flow's, the capacity R any, all by 503
                    if mode == 2 or (mode == 1 and fl == invite) or n >= cap:
                        n = cap
                        reject = r == inf
                    elif n == high:  # the admitted copy makes N = H + 1: blocking
                        state.mode = 2
                elif n >= high or over:  # ignore/503: an arrival finding N >= H enters overload; all refused
                    if not over:
                        over = True
                        self.overload(t)  # (priority: a run until_collapse ends at the stop above)
                    n = cap
                    reject = r == reject_r
                if n < cap:
                    service = services[fl]()
                    if r == inf:  # the first admitted copy: its box receives its departure when it starts
                        box = admit(t, service, fl, r)
                        r = box[0]
                    else:
                        admit(t, service * cost, fl, r)
                elif f < 0:
                    f = k
                k += 1  # copies sent
                if not reject and k < len(taus):
                    tk = a + taus[k]
                    if r > tk:  # no response by the next timer: the copy will be sent
                        g = offsets[fl] + k
                        q = streams[g]
                        if not q:
                            heappush(heads, (tk, g))
                        q.append((tk, left, a, box if r is pending else r, f, fl))
                        continue
                if r is pending:  # the last copy sent, the first admitted one not started: wait for it
                    wait_response(left, a, box, f, fl)
                    continue
            if reject and left:  # Retry-After: back T later as a new transaction, from the last stream
                q = streams[retry_g]
                if not q:
                    heappush(heads, (t + after, retry_g))
                q.append((t + after, left - 1, t + after, inf, -1, fl))
            finish(a, r, f, k, fl, reject, left)  # the transaction is finished: count it
        busy, collapsed = server.close(self.end, state)
        return tally.row(busy, window_copies), min(self.collapsed, collapsed)

    def _fifo_modes(self):
        """The event loop of the FIFO server with the modes of ``threshold`` or Retry-After (control ``503`` or
        ``threshold``), written out as :meth:`_fifo` is; the counts through :meth:`Tally.finish` (one call per
        transaction). Both controls are hysteretic modes here (``mode``, a local): ``threshold``'s 0, 1, 2
        (:func:`decide`; :meth:`.servers.FifoServer.advance`), and ``503``'s overload as mode 2, entered when an
        arrival finds N >= H and left when a departure leaves N = L (no copy is admitted in overload, so N falls
        through L); no vacations (Retry-After with vacations: :meth:`_fifo_vacations`). A pending copy is (send time,
        retries left, start a, response r, first refused copy f, flow); a retry of Retry-After is copy 0 of a new
        transaction, from the last stream; each flow's copy offsets end with inf (no copy after the last)."""
        s, server, streams, heads, tally = self.setup, self.server, self.streams, self.heads, self.tally
        heappop, heapreplace, heappush, end, exps, scale = heapq.heappop, heapq.heapreplace, heapq.heappush, \
            self.end, self.exps, self.scale
        services, cost, cap, high, invite, state = self.services, s.cost, self.cap, s.high, self.invite, self.state
        schedules = tuple((*taus, _INF) for taus in self.schedules)
        copy_index, offsets, share2, finish = self.copy_index, self.offsets, self.share2, tally.finish
        second = self.second or itertools.repeat(1.0).__next__
        ws, we, inf, wait_limit = self.window_start, self.window_end, _INF, s.timeout
        system = server.system
        popleft, append = system.popleft, system.append
        m, after, retry_g = (s.retry.retries, s.retry.after, self.retry_stream) if s.retry else (0, _INF, 0)
        # the modes: threshold: refused at N >= R, 2 -> 1 when a departure leaves N = H, 1 -> 0 at N = L - 1, an
        # admitted copy making N = H + 1 blocks (mode 2); 503: refused (entering mode 2) at N >= H, 2 -> 0 at N = L
        refuse_at, block_at, down, down_to, up_at, enter_below = (cap, high, high, 1, s.low - 1, 0) \
            if s.control == Control.THRESHOLD else (high, -1, s.low, 0, -1, 1)
        heads.append((_INF, len(streams)))  # a head that is never due: the heap is never empty
        last = busy = 0.0
        window_copies = mode = 0
        na = exps() * scale
        try:
            while True:
                if heads[0][0] < na:  # the earliest pending copy (or retry)
                    t, g = heads[0]
                    q = streams[g]
                    _, left, a, r, f, fl = q.popleft()
                    if q:
                        heapreplace(heads, (q[0][0], g))
                    else:
                        heappop(heads)
                    k = copy_index[g]
                else:  # a new transaction
                    t = na
                    if t > end:
                        break
                    a, r, f, k, left = t, inf, -1, 0, m
                    fl = int(second() < share2)
                    na = t + exps() * scale
                while system and system[0] <= t:  # the departures before t, each with its mode change
                    popleft()
                    if mode:
                        if mode == 2:
                            if len(system) == down:
                                mode = down_to
                        elif len(system) == up_at:
                            mode = 0
                n = len(system)
                if ws <= t < we:
                    window_copies += 1
                reject = False
                if mode == 2 or (mode == 1 and fl == invite) or n >= refuse_at:  # refused, by 503
                    if mode < enter_below:  # 503: an arrival finding N >= H (in mode 0) enters overload
                        mode = 2
                        self._enter(t)
                    n = cap
                    reject = r == inf
                elif n == block_at:  # threshold: the admitted copy makes N = H + 1: blocking
                    mode = 2
                if n < cap:
                    service = services[fl]()
                    if r != inf:
                        service *= cost
                    start = t
                    if last > t:  # it waits for the copy ahead
                        start = last
                        if start - t > wait_limit:  # the first wait beyond the timeout: the collapse epoch
                            wait_limit = self._waited(t)
                    last = d = start + service
                    append(d)
                    if ws <= start <= d <= we:  # the busy time in the window
                        busy += d - start
                    elif d > ws and start < we:  # the copy in service at ws or at we
                        busy += _clipped(start, d, ws, we)
                    if r == inf:  # the first admitted copy: its departure is the response
                        r = d
                elif f < 0:
                    f = k
                k += 1  # copies sent
                if not reject:
                    tk = a + schedules[fl][k]
                    if r > tk:  # no response by the next timer (none after the last copy): the copy will be sent
                        g = offsets[fl] + k
                        q = streams[g]
                        if not q:
                            heappush(heads, (tk, g))
                        q.append((tk, left, a, r, f, fl))
                        continue
                if reject and left:  # Retry-After: back T later as a new transaction, from the last stream
                    q = streams[retry_g]
                    if not q:
                        heappush(heads, (t + after, retry_g))
                    q.append((t + after, left - 1, t + after, inf, -1, fl))
                finish(a, r, f, k, fl, reject, left)  # the transaction is finished: count it
        except _RunEnds:  # a run until_collapse ends at the collapse
            pass
        server.busy += busy
        busy, collapsed = server.close(self.end, state)
        return tally.row(busy, window_copies), min(self.collapsed, self.waited, collapsed)

    def _fifo_vacations(self):
        """The event loop of the FIFO server with vacations and Retry-After (control ``503``), written out as
        :meth:`_fifo` is: no method call per event, the counts of :class:`Tally` in local variables (the second
        flow's through :meth:`Tally.second`). The end of a vacation that copies wait for joins the departures
        (it holds the server's place: N = the copies waiting + 1 until it ends), so one loop pops both: N falls at
        each, and in overload N <= L ends it (not a departure leaving nobody when L = 0: N = 1 then, the vacation's
        place; the overload ends when the vacation after the last departure ends with nobody waiting, its end
        drawn early). A copy finding the server empty starts after the vacations since the last departure
        (:meth:`_vacation_start`; :meth:`.servers.FifoServer.advance` is the same server through its interface).
        A 503 that ends a transaction sets its response to -inf (no further copy). A pending copy is (send time,
        retries left, start a, response r, first refused copy f, flow); a retry of Retry-After is copy 0 of a new
        transaction, from the last stream; each flow's copy offsets end with inf (no copy after the last)."""
        s, server, streams, heads, tally = self.setup, self.server, self.streams, self.heads, self.tally
        heappop, heapreplace, heappush, end, exps, scale = heapq.heappop, heapq.heapreplace, heapq.heappush, \
            self.end, self.exps, self.scale
        services, cost, cap, high, timeout = self.services, s.cost, self.cap, s.high, s.timeout
        schedules = tuple((*taus, _INF) for taus in self.schedules)
        copy_index, offsets, share2, second = self.copy_index, self.offsets, self.share2, self._flow_draws()
        ws, we, inf, rejected_r, wait_limit = self.window_start, self.window_end, _INF, -_INF, s.timeout
        system, vacations, low_empty, second_flow, ts, hist = server.system, server.vacations, server.low_empty, \
            tally.second, tally.ts, tally.hist
        popleft, append, vacation_start = system.popleft, system.append, self._vacation_start
        m, after, retry_g = s.retry.retries, s.retry.after, self.retry_stream
        low_departure = s.low - low_empty  # a departure leaving N <= L ends the overload (not with L = 0: N = 1)
        heads.append((_INF, len(streams)))  # a head that is never due: the heap is never empty
        last = busy = response_sum = 0.0
        window_copies = measured = good = timed_out = rejected = copies = refused = refused_copies = after_refusal = 0
        rejected_copies = 0
        # Retry-After: the measured transactions by their retries left (m: the first transaction of a request, the
        # others retries), and the rejected ones (0 left: finally rejected)
        by_left, rejected_by_left = [0] * (m + 1), [0] * (m + 1)
        over, drawn = False, None
        na = exps() * scale
        try:
            while True:
                if heads[0][0] < na:  # the earliest pending copy (or retry)
                    t, g = heads[0]
                    q = streams[g]
                    _, left, a, r, f, fl = q.popleft()
                    if q:
                        heapreplace(heads, (q[0][0], g))
                    else:
                        heappop(heads)
                    k = copy_index[g]
                else:  # a new transaction
                    t = na
                    if t > end:
                        break
                    a, r, f, k, left = t, inf, -1, 0, m
                    fl = int(second() < share2)
                    na = t + exps() * scale
                while system and system[0] <= t:  # the departures before t (and the vacation's end): N falls
                    popleft()
                    if over and len(system) <= low_departure:
                        over = False
                if over and low_empty and not system:  # L = 0: has the vacation after the last departure ended?
                    if drawn is None:  # (drawn early: the idle period's first vacation)
                        drawn = last + vacations()
                    over = drawn > t  # it ended with nobody waiting (all refused): N fell to 0 = L
                n = len(system)
                if ws <= t < we:
                    window_copies += 1
                if n >= high or over:  # an arrival finding N >= H enters overload; all refused, by 503
                    if not over:
                        over = True
                        self._enter(t)
                    n = cap
                    if r == inf:  # a 503 ends a transaction with no admitted copy
                        r = rejected_r
                if n < cap:
                    service = services[fl]()
                    if r != inf:
                        service *= cost
                    if last > t:  # it waits for the copy ahead
                        start = last
                        if start - t > wait_limit:  # the first wait beyond the timeout: the collapse epoch
                            wait_limit = self._waited(t)
                    else:  # an empty server: after the vacations since the last departure (the first one drawn?)
                        start = vacation_start(t, last, drawn)
                        drawn = None
                    last = d = start + service
                    append(d)
                    if ws <= start <= d <= we:  # the busy time in the window
                        busy += d - start
                    elif d > ws and start < we:  # the copy in service at ws or at we
                        busy += _clipped(start, d, ws, we)
                    if r == inf:  # the first admitted copy: its departure is the response
                        r = d
                elif f < 0:
                    f = k
                k += 1  # copies sent
                tk = a + schedules[fl][k]
                if r > tk:  # no response by the next timer (none after the last copy, nor after a 503)
                    g = offsets[fl] + k
                    q = streams[g]
                    if not q:
                        heappush(heads, (tk, g))
                    q.append((tk, left, a, r, f, fl))
                    continue
                if r == rejected_r and left:  # Retry-After: back T later as a new transaction, from the last stream
                    q = streams[retry_g]
                    if not q:
                        heappush(heads, (t + after, retry_g))
                    q.append((t + after, left - 1, t + after, inf, -1, fl))
                if ws <= a < we:  # the transaction is finished: count it (Tally.finish, written out)
                    measured += 1
                    copies += k
                    by_left[left] += 1
                    response = inf
                    if r == rejected_r:
                        rejected += 1
                        rejected_copies += k
                        rejected_by_left[left] += 1
                    elif r - a <= timeout:
                        response = r - a
                        good += 1
                        response_sum += response
                    else:
                        timed_out += 1
                    if fl:
                        second_flow(k, r == rejected_r, response)
                    if f >= 0:
                        refused += 1
                        refused_copies += k
                        after_refusal += k - 1 - f
                    if ts:
                        hist[bisect_left(ts, response)] += 1
        except _RunEnds:  # a run until_collapse ends at the collapse
            pass
        tally.transactions, tally.goodput, tally.timed_out, tally.rejected, tally.copies = measured, good, \
            timed_out, rejected, copies
        tally.response_sum, tally.refused, tally.refused_copies, tally.after_refusal, tally.rejected_copies = \
            response_sum, refused, refused_copies, after_refusal, rejected_copies
        tally.requests, tally.final_rejected, tally.retried = by_left[m], rejected_by_left[0], measured - by_left[m]
        server.busy += busy
        busy, collapsed = server.close(self.end, self.state)
        return tally.row(busy, window_copies), min(self.collapsed, self.waited, collapsed)

    def _vacation_start(self, t, last, drawn) -> float:
        """:meth:`_fifo_vacations`: the start of a copy arriving at t that finds the server empty (after the
        vacations since ``last``, the first one's end ``drawn`` early or None, :meth:`_after_vacations`); the end of
        the vacation it waits for joins the departures (it holds the server's place in N until then)."""
        self.server.drawn = drawn
        start = self._after_vacations(t, last)
        if start > t:
            self.server.system.append(start)
        return start

    def _flow_draws(self):
        """The flow of a new transaction: the second with probability ``share2`` (one flow: never, nothing drawn)."""
        return self.second or itertools.repeat(1.0).__next__

    def _enter(self, t) -> None:
        """:meth:`_fifo`: the overload state is entered at t (``ignore``/``503``): the collapse epoch of the
        overload criterion; a run ``until_collapse`` ends here."""
        self.state.over = True
        if self.overload(t):
            raise _RunEnds

    def _after_vacations(self, t, last) -> float:
        """:meth:`_fifo`: the start of a copy arriving at t that finds the server empty, after the vacations since
        ``last`` (:meth:`.servers.FifoServer.after_vacations`); a run ``until_collapse`` ends here when it waits
        beyond the timeout."""
        self.server.last = last
        start = self.server.after_vacations(t)
        if start is STOP:
            raise _RunEnds
        return start

    def _waited(self, t) -> float:
        """:meth:`_fifo`: the copy arriving at t is the first to wait beyond the timeout: the collapse epoch (a run
        ``until_collapse`` ends here); the loop's next wait limit (inf: no later wait is checked)."""
        self.waited = t
        if self.until_collapse:
            raise _RunEnds
        return _INF

    def _general(self):
        """The general event loop (every case: FIFO or priority behind the servers' interface, two flows, the modes,
        Retry-After, the trace). Each event: the earliest of the stream heads, the retries and the next new
        transaction; the server advanced to it; the copy sent (the control's decision, :func:`decide`; an admitted
        copy's service, c B for a duplicate) or, under priority, not (answered already, or a resolve entry); the
        transaction queued for its next copy or counted (:class:`Tally`). The hot path is written out here (one call
        per event to the server's ``advance`` and ``admit``)."""
        s, server, state, streams, heads, retry_q = self.setup, self.server, self.state, self.streams, self.heads, \
            self.retries.queue
        advance, admit, heappop, heappush, m1, end, exps, scale = server.advance, server.admit, heapq.heappop, \
            heapq.heappush, self.m1, self.end, self.exps, self.scale
        priority, schedules, services, cost, cap, ctl, high, inf = s.priority, self.schedules, self.services, \
            s.cost, self.cap, s.control, s.high, _INF
        ws, we, trace, tally, retries = self.window_start, self.window_end, self.trace, self.tally, self.retries
        second, share2 = self.second, self.share2
        window_copies = started = 0
        heapreplace = heapq.heapreplace
        heappush(heads, (inf, len(streams)))  # a head that is never due: the heap is never empty
        na = exps() * scale
        while True:
            if heads[0][0] < na and not (retry_q and retry_q[0][0] < heads[0][0]):
                t, g = heads[0]
                q = streams[g]
                _, j, a, r, f, fl = q.popleft()
                if q:
                    heapreplace(heads, (q[0][0], g))
                else:
                    heappop(heads)
                k = g - m1 if fl else g
            elif retry_q and retry_q[0][0] < na:  # a retry (Retry-After): a new transaction of its flow
                t, fl = self.retry_transaction(started)
                j, a, r, f, k = started, t, inf, -1, 0
                started += 1
            else:
                t = na
                if t > end:
                    break
                j, a, r, f, k = started, t, inf, -1, 0
                started += 1
                fl = 1 if second is not None and second() < share2 else 0
                na = t + exps() * scale
            n = advance(t, state)
            taus = schedules[fl]
            box = None
            sent = True  # FIFO: every copy popped is sent
            reject = False
            if priority:
                if server.stop(t, self.collapsed):  # (until_collapse: one timeout after the earliest collapse)
                    break
                r, box, sent, k = _pending(r, t, k, len(taus))
            if sent:
                if trace is not None:
                    trace.append((j, k, t))
                if ws <= t < we:
                    window_copies += 1
                if ctl and (n >= high or state.over or state.mode):  # (else the control admits it, unchanged)
                    n, f, reject, entered = decide(ctl, state, n, k, f, r, fl, self.invite, cap, high)
                    if entered and self.overload(t):
                        break
                if n < cap:
                    service = services[fl]()
                    if r != inf:
                        service *= cost
                    r = admit(t, service, fl, r)
                    if r is STOP:
                        break
                    if priority and r.__class__ is list:  # priority: a first admitted copy's departure, from its box
                        box = r
                        r = box[0]
                elif f < 0:
                    f = k
                k += 1  # copies sent
                if not reject and k < len(taus):
                    tk = a + taus[k]
                    if r > tk:  # no response by the next timer: the copy will be sent
                        g = m1 + k if fl else k
                        q = streams[g]
                        if not q:
                            heappush(heads, (tk, g))
                        q.append((tk, j, a, box if r is PENDING else r, f, fl))  # (FIFO: never PENDING)
                        continue
                if r is PENDING:  # (priority) the last copy sent, the first admitted one not started: wait for it
                    self.wait_response(j, a, box, f, fl)
                    continue
            # the transaction is finished: a rejected one with retries left comes back T later; counted
            tally.finish(a, r, f, k, fl, reject, retries.finish(j, t, fl, reject) if retries.active else 0)
        busy, collapsed = server.close(self.end, state)
        return tally.row(busy, window_copies), min(self.collapsed, collapsed)

    def overload(self, t) -> bool:
        """The overload state was entered at t: the collapse epoch of the overload criterion; True when the run ends
        here (FIFO; under priority once an earlier wait is excluded, :meth:`.servers.PriorityServer.stop`)."""
        if self.overload_collapse and self.collapsed == _INF:
            self.collapsed = t
            return self.until_collapse and self.server.waits_known_at_arrival
        return False

    def wait_response(self, j, a, box, f, fl) -> None:
        """Priority: a measured transaction whose last copy is sent before its first admitted copy started is
        counted at a + timeout (its own stream per flow: a + timeout increases along it). ``j``: the transaction
        (:meth:`_general`) or its retries left (:meth:`_priority`)."""
        if self.window_start <= a < self.window_end:
            self.push(self.resolve + fl, (a + self.setup.timeout, j, a, box, f, fl))


def replication(rng, setup, window_start: float, window_end: float, response_times=(), trace=None,
                until_collapse: bool = False, block: int = DEFAULT_BLOCK, overload_collapse: bool = False,
                general: bool = False):
    """One run from empty: (the accumulators of :data:`ACCUMULATORS` and one tail count per response time,
    the collapse epoch).

    A transaction is counted when it is finished (rejected, or no further copy due), which is at most
    tau_max after its start, so the memory is that of the transactions in progress. The collapse epoch
    is the arrival of the first copy admitted with a wait above the timeout (inf: none);
    ``until_collapse`` ends the run there (or at ``window_end``); ``overload_collapse``: the collapse epoch is
    instead the first arrival that puts the server in overload (finds N >= H; with control). ``trace``: a list
    receiving (transaction, copy index, send time) of every copy (tests only). ``block``: random numbers per refill.
    ``setup.priority``: the server is a :class:`.servers.PriorityServer` (package docstring); a run with
    ``until_collapse`` stops one timeout after the earliest collapse seen (every earlier one is seen by then).
    ``general``: the general loop even in the common case (:meth:`_Run.run`; the same numbers, slower).
    """
    return _Run(rng, setup, window_start, window_end, response_times, trace, until_collapse, block,
                overload_collapse).run(general)
