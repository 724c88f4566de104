"""The two servers of the simulator behind one interface: :class:`FifoServer` (Lindley: a copy's departure is known
at its arrival) and :class:`PriorityServer` (non-INVITE first: known at the copy's start).

Both keep the control's state in a shared :class:`ControlState` (the overload flag of ``ignore``/``503``, seed 001's
mode of ``threshold``) and answer the event loop (:mod:`.events`) the same questions:

* ``advance(t, state)``: serve up to t (each departure with its state change), return N(t);
* ``admit(t, service, flow, r)``: the copy arriving at t with that service time; returns the transaction's response
  entry (``r`` unchanged for a later copy; for a first admitted copy its departure, or under priority a box [d]
  filled when it starts), or :data:`STOP` when a run ``until_collapse`` ends at this copy;
* ``stop(t, collapsed)``: True when a run ``until_collapse`` can end before the event at t;
* ``close(end, state)``: (busy time in the window, the earliest collapse) after the last event.

The event loop of the common case (:meth:`.events._Run._fifo`: FIFO, no Retry-After, no modes) writes the
FIFO server's hot path out itself (the departures before t, the Lindley step) and calls :meth:`FifoServer.advance`
and :meth:`FifoServer.after_vacations` only for vacations and the overload's end with them.

The package docstring states the model (vacations, the modes, the collapse epoch).
"""

from __future__ import annotations

import math
import sys
from collections import deque

__all__ = ["ControlState", "FifoServer", "PriorityServer", "PENDING", "STOP"]

#: priority: the departure of a first admitted copy that has not started yet (above every time, below inf = none)
PENDING = sys.float_info.max
_INF, _NEG_INF = math.inf, -math.inf  # (module constants: no attribute lookup per event)
#: :meth:`FifoServer.admit`'s answer when a run ``until_collapse`` ends at the copy
STOP = None


class ControlState:
    """The control's state: ``over`` (``ignore``/``503``: the overload state) and ``mode`` (``threshold``: seed 001's
    mode 0 normal, 1 partial overload, 2 blocking)."""

    __slots__ = ("over", "mode")

    def __init__(self):
        self.over = False
        self.mode = 0


class FifoServer:
    """The FIFO server: the departures of the copies in the server (an increasing deque), the last departure, the
    vacation in progress while copies wait for its end (``vac_end``), and with L = 0 in overload the end of the idle
    period's first vacation drawn early (``drawn``)."""

    __slots__ = ("system", "last", "vac_end", "drawn", "vacations", "single", "low", "high", "threshold", "low_empty",
                 "timeout", "window_start", "window_end", "busy", "collapsed", "until_collapse", "plain")

    def __init__(self, setup, vacations, window_start, window_end, until_collapse):
        self.system = deque()
        self.last = 0.0  # departure of the last admitted copy
        self.vac_end = _NEG_INF  # the end of the vacation in progress while copies wait for it (-inf: none)
        self.drawn = None
        self.vacations, self.single = vacations, setup.single
        self.low, self.high, self.threshold = setup.low, setup.high, setup.control == 3
        # with vacations a departure leaving nobody keeps N = 1 > L = 0
        self.low_empty = setup.vacation is not None and setup.low == 0
        self.timeout, self.window_start, self.window_end = setup.timeout, window_start, window_end
        self.busy, self.collapsed, self.until_collapse = 0.0, _INF, until_collapse
        self.plain = setup.vacation is None and not self.threshold

    #: a copy's wait is known at its arrival: a run ``until_collapse`` ends at the collapse itself
    waits_known_at_arrival = True

    def stop(self, t: float, collapsed: float) -> bool:
        return False

    def advance(self, t: float, state: ControlState) -> int:
        """The departures before t, each with its state change; N(t) (the vacation's place counted while copies
        wait for its end)."""
        system = self.system
        if self.plain:  # no vacation, no modes: the departures before t (the overload's end with them)
            if state.over:
                self._overload(t, state)
            else:
                while system and system[0] <= t:
                    system.popleft()
            return len(system)
        if self.vac_end > _NEG_INF and self.vac_end <= t:  # N falls at the vacation's end (a copy moves to the server)
            self.vac_end = _NEG_INF
            if state.over and len(system) <= self.low:
                state.over = False
        if self.threshold:  # seed 001's modes: 2 -> 1 when a departure leaves N = H, 1 -> 0 when it leaves L - 1
            if state.mode:
                self._modes(t, state)
            else:
                while system and system[0] <= t:
                    system.popleft()
        elif state.over:
            self._overload(t, state)
        else:
            while system and system[0] <= t:  # the departures before t
                system.popleft()
        # the vacation takes the server's place (an empty server: N <= 1 < 2 <= H, K, not counted)
        return len(system) + 1 if self.vac_end > t else len(system)

    def _overload(self, t: float, state: ControlState) -> None:
        """The departures before t in the overload state: a departure leaving L ends it (not with L = 0 and
        vacations: N = 1 then, the vacation's place; the overload ends when the vacation after the last departure
        ends with nobody waiting)."""
        system, low, over = self.system, self.low, True
        while system and system[0] <= t:
            system.popleft()
            if over and len(system) <= low and not self.low_empty:
                over = False
        if over and self.low_empty and not system:  # L = 0, single vacations: has the vacation after `last` ended?
            if self.drawn is None:
                self.drawn = self.last + self.vacations()
            if self.drawn <= t:  # it ended with nobody waiting (all refused): N fell to 0 = L
                over = False
        state.over = over

    def _modes(self, t: float, state: ControlState) -> None:
        system, mode, high, low = self.system, state.mode, self.high, self.low
        while system and system[0] <= t:
            system.popleft()
            if mode == 2:
                if len(system) == high:
                    mode = 1
            elif mode == 1 and len(system) == low - 1:
                mode = 0
        state.mode = mode

    def admit(self, t: float, service: float, flow: int, r):
        """Start the copy at max(t, last departure), after the vacations of an idle period; its departure d is the
        response of a first admitted copy (r = inf)."""
        last = self.last
        if last > t:
            start = last
            if start - t > self.timeout and self.collapsed == _INF and self._collapse(t):
                return STOP
        elif self.vacations is None:
            start = t
        else:
            start = self.after_vacations(t)
            if start is STOP:
                return STOP
        self.last = d = start + service
        self.system.append(d)
        ws, we = self.window_start, self.window_end
        if d > ws and start < we:
            self.busy += (d if d < we else we) - (start if start > ws else ws)
        return d if r == _INF else r

    def after_vacations(self, t: float):
        """The start of a copy finding the server empty: on vacation since the last departure (or time 0)? The
        vacations of the idle period are drawn now; :data:`STOP` when a run ``until_collapse`` ends at this copy."""
        vacations = self.vacations
        e = self.last + vacations() if self.drawn is None else self.drawn
        self.drawn = None
        if not self.single:
            while e <= t:
                e += vacations()
        if e > t:
            self.vac_end = e
            if e - t > self.timeout and self.collapsed == _INF and self._collapse(t):
                return STOP
            return e
        return t

    def _collapse(self, t: float) -> bool:
        """The copy arriving at t waits beyond the timeout: the collapse epoch; True when the run ends here."""
        self.collapsed = t
        return self.until_collapse

    def close(self, end: float, state: ControlState):
        return self.busy, self.collapsed


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


class PriorityServer:
    """The server under ``discipline = priority`` (seed 001, algorithm 2, in every mode): non-preemptive, a queue
    per flow, the non-INVITE flow's copies first, arrival order within a flow.

    A copy's departure is no longer known at its arrival (a later non-INVITE copy can overtake a waiting INVITE
    one), but it is at the copy's service start: the server is advanced lazily to each event time t, handing itself
    at each departure (or vacation end) s <= t to the head of the first non-empty queue in priority order, which
    departs at d = s + B (B drawn at the copy's arrival, c B for a duplicate, as under FIFO). A first admitted copy
    carries a box [d]: :data:`PENDING` until it starts, then d (the event loop reads the transaction's response from
    it). The vacations are those of the FIFO server: drawn when a copy finds the server empty, from the last
    departure; the vacation holds the server's place while copies wait. ``busy`` (service time inside the window)
    and ``collapsed`` (the earliest arrival of a copy seen waiting longer than the timeout) are accumulated as the
    copies start. Under control ``threshold`` the mode (:class:`ControlState`) chooses the order at each departure
    (:meth:`advance`)."""

    __slots__ = ("queues", "order", "free", "last", "busy", "collapsed", "timeout", "window_start", "window_end",
                 "vacations", "single", "low", "high", "threshold", "until_collapse")

    def __init__(self, setup, vacations, window_start, window_end, until_collapse):
        first = 0 if setup.names[0] == "non-invite" else 1
        self.queues = (deque(), deque())  # by flow: (arrival, service time, box or None) of the waiting copies
        self.order = (self.queues[first], self.queues[1 - first])  # the non-invite flow's queue first
        self.free = _NEG_INF  # the end of the service (or vacation) in progress; -inf: idle, nothing waits
        self.last = 0.0  # the last departure (or 0): the vacations of an idle period start there
        self.busy = 0.0
        self.collapsed = _INF
        self.timeout, self.window_start, self.window_end = setup.timeout, window_start, window_end
        self.vacations, self.single = vacations, setup.single
        self.low, self.high, self.threshold = setup.low, setup.high, setup.control == 3
        self.until_collapse = until_collapse

    #: a copy's wait is known at its start: a run ``until_collapse`` ends one timeout after the collapse
    waits_known_at_arrival = False

    def stop(self, t: float, collapsed: float) -> bool:
        """A run ``until_collapse`` ends one timeout after the earliest collapse seen (``collapsed``: the event
        loop's own, the overload criterion; every earlier wait is seen by then)."""
        return self.until_collapse and min(collapsed, self.collapsed) + self.timeout < t

    def advance(self, t: float, state: ControlState) -> int:
        """Serve up to t (:meth:`serve`); returns N(t). N does not rise in the overload state (every copy refused):
        its fall to L is seen now."""
        n = self.serve(t, state)
        if state.over and n <= self.low:
            state.over = False
        return n

    def serve(self, t: float, state: ControlState) -> int:
        """Serve up to t (every departure or vacation end s <= t starts the next copy); returns N(t): the copies
        waiting and in service, plus the vacation's place while copies wait for its end (:meth:`advance` without
        the overload state, which the priority server's flat loop keeps itself).

        The departures are served here, in one of two orders (one method call per event, the flat loop's only one
        besides :meth:`admit`): priority order, or under control ``threshold`` seed 001's algorithm 2
        (``docs/theory/other-models.md`` section C; :mod:`qderive.symbolic.models.two_flow`): at each departure
        leaving N copies the mode changes first (2 -> 1 when N = H, 1 -> 0 when N = L - 1), then the mode in force
        after it chooses the next copy: in mode 0 the earliest arrival of the two queue heads (arrival order), in
        modes 1 and 2 the non-INVITE queue's head first. The mode is set to 2 by the event loop when an admitted
        copy makes N = H + 1."""
        free, (first, second) = self.free, self.order
        if _NEG_INF < free <= t:
            timeout, ws, we, busy, collapsed = self.timeout, self.window_start, self.window_end, self.busy, \
                self.collapsed
            if not self.threshold:  # priority order
                while True:
                    q = first or second
                    if not q:  # a departure leaving the server empty
                        self.last, free = free, _NEG_INF
                        break
                    free, busy, collapsed = _serve(q, free, timeout, ws, we, busy, collapsed)
                    if free > t:
                        break
            else:  # the modes
                mode, low, high = state.mode, self.low, self.high
                while True:
                    n = len(first) + len(second)  # N just after the departure at `free`
                    if mode == 2:
                        if n == high:
                            mode = 1
                    elif mode == 1 and n == low - 1:
                        mode = 0
                    if not n:  # a departure leaving the server empty
                        self.last, free = free, _NEG_INF
                        break
                    if mode or not second or (first and first[0][0] <= second[0][0]):
                        q = first or second
                    else:  # mode 0: arrival order (the earlier head; the two never tie: one copy per event)
                        q = second
                    free, busy, collapsed = _serve(q, free, timeout, ws, we, busy, collapsed)
                    if free > t:
                        break
                state.mode = mode
            self.free, self.busy, self.collapsed = free, busy, collapsed
        # a head waiting beyond the timeout (the oldest copy of its flow): the collapse is seen before its start
        if first and first[0][0] + self.timeout < t and first[0][0] < self.collapsed:
            self.collapsed = first[0][0]
        if second and second[0][0] + self.timeout < t and second[0][0] < self.collapsed:
            self.collapsed = second[0][0]
        return len(first) + len(second) + (free > t)

    def admit(self, t: float, service: float, flow: int, r):
        """The copy arriving at t (after :meth:`advance` (t)) of the given flow and service time: served at once by
        an empty server after its vacations (the FIFO server's rule), else queued in its flow's queue. A first
        admitted copy (r = inf) gets a box [PENDING] that receives its departure when it starts."""
        box = [PENDING] if r == _INF else None
        if self.free > t:  # busy, or on vacation with copies waiting
            self.queues[flow].append((t, service, box))
            return r if box is None else box
        vacations = self.vacations
        if vacations is not None:  # empty (advanced to t): on vacation since the last departure?
            e = self.last + vacations()
            if not self.single:
                while e <= t:
                    e += vacations()
            if e > t:  # the copy waits for the vacation's end
                self.free = e
                self.queues[flow].append((t, service, box))
                return r if box is None else box
        d = self.free = t + service
        if box is not None:
            box[0] = d
        ws, we = self.window_start, self.window_end
        if d > ws and t < we:  # the busy time in the window
            self.busy += (d if d < we else we) - (t if t > ws else ws)
        return r if box is None else box

    def close(self, end: float, state: ControlState):
        """The services that start before the end (the window's busy time), the waits seen by then."""
        self.advance(end, state)
        return self.busy, self.collapsed
