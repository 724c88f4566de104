"""The simulator's reading of a ``sip-retransmission`` model: one frozen :class:`SimSetup`, checked, and the
simulator's one declaration of what it simulates (:func:`supports`).

The model is read by duck typing, field by field (the package docstring lists the fields; a model without an
optional field has its default), so a test can hand the simulator a plain namespace. Every bad value is refused
with an error naming the option, before any random number is drawn.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

from ....symbolic.capabilities import Refusal
from ....symbolic.errors import ParameterError
from ....symbolic.models.sip_retransmission import copy_schedule
from ....symbolic.numbers import exact

__all__ = ["Control", "SimSetup", "setup_of", "supports"]


class Control:
    """The control codes of the event loop (ints: compared once per copy)."""

    NONE, IGNORE, REJECT, THRESHOLD = 0, 1, 2, 3
    BY_NAME = {"none": NONE, "ignore": IGNORE, "503": REJECT, "threshold": THRESHOLD}


@dataclass(frozen=True)
class Retry:
    """Retry-After: a request rejected by 503 is sent again as a new transaction ``after`` seconds later, at most
    ``retries`` times."""

    after: float
    retries: int


@dataclass(frozen=True)
class SimSetup:
    """The model's fields as the event loop uses them (floats, the copy schedules converted once).

    ``laws`` (flow 1's service law, flow 2's); ``taus`` and ``taus2`` the copy offsets of flow 1 (``method``'s) and
    flow 2 (the other method's; () with one flow); ``control`` a :class:`Control` code; ``capacity`` K (R under
    ``threshold``, default H + 1) or None; ``low``, ``high`` the thresholds (0 without control); ``cost`` the
    duplicate cost c; ``vacation`` the law or None, ``single`` the single-vacation policy; ``rate2`` the second
    flow's rate (0: one flow); ``names`` the methods of flows 1 and 2; ``priority`` the discipline; ``retry`` a
    :class:`Retry` or None."""

    rate: float
    laws: tuple
    taus: tuple
    timeout: float
    control: int
    capacity: int | None
    low: int
    high: int
    cost: float
    vacation: object
    single: bool
    rate2: float
    taus2: tuple
    names: tuple
    priority: bool
    retry: Retry | None

    @property
    def tau_max(self) -> float:
        """The last copy offset of either flow."""
        return max(self.taus[-1], (self.taus2 or (0.0,))[-1])


def read_field(model, name):
    """The model's field ``name`` (a ParameterError when the model has none)."""
    try:
        return getattr(model, name)
    except AttributeError:
        raise ParameterError(f"simulate_sip: the model has no field {name!r} (sip-retransmission contract)") from None


def read_float(value, name: str, rule, text: str) -> float:
    """``value`` as a finite float satisfying ``rule``, else a ParameterError naming ``name`` with ``text``."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(name, text, value) from None
    if not (math.isfinite(x) and rule(x)):
        raise ParameterError(name, text, value)
    return x


def read_integer(value, name: str, minimum: int, text: str) -> int:
    """``value`` as an int >= ``minimum`` (not a bool), else a ParameterError naming ``name`` with ``text``."""
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise ParameterError(name, text, value) from None
    if n < minimum:
        raise ParameterError(name, text, value)
    return n


def _choice(model, name, default):
    value = getattr(model, name, None)
    return str(getattr(value, "value", value) or default).lower()


def _method(model) -> str:
    method = getattr(read_field(model, "method"), "value", read_field(model, "method"))
    method = str(method).lower().replace("_", "-")
    if method not in ("invite", "non-invite"):
        raise ParameterError("method", "must be invite or non-invite", method)
    return method


def _sampling(law, name: str) -> None:
    if not callable(getattr(law, "sample", None)):
        raise ParameterError(name, "the simulator needs a numeric time law (with sample(rng, size))", law)


def _timers(model, method):
    """(flow 1's copy offsets as floats, the timeout as a float, the exact timeout): the one schedule (exact: tau_k
    < timeout decided without rounding), converted to float once."""
    t1, t2, timeout = (read_field(model, name) for name in ("t1", "t2", "timeout"))
    for value, name in ((t1, "t1"), (t2, "t2"), (timeout, "timeout")):
        if value is not None or name != "timeout":
            read_float(value, name, lambda x: x > 0, "must be a finite time > 0")
    if timeout is None:  # the default Timer B / F = 64 T1
        timeout = 64 * exact(t1, "t1")
    taus = tuple(float(tau) for tau in copy_schedule(method, t1, t2, timeout))
    return taus, float(timeout)


def _control(model):
    """(control code, capacity, L, H): thresholds 0 <= L < H (<= K), under ``threshold`` 1 <= L and R = K (default
    H + 1)."""
    control = read_field(model, "control")
    control = str(getattr(control, "value", control)).lower()
    if control not in Control.BY_NAME:
        raise ParameterError("control", "must be none, ignore, 503 or threshold", control)
    cap = read_field(model, "capacity")
    if cap is not None:
        cap = read_integer(cap, "capacity", 1, "must be an integer >= 1 (or none)")
    code = Control.BY_NAME[control]
    if not code:
        return code, cap, 0, 0
    th = read_field(model, "thresholds")
    try:
        low, high = (operator.index(x) for x in th)
    except (TypeError, ValueError):
        raise ParameterError("thresholds", f"control {control} needs two integers L,H", th) from None
    if not 0 <= low < high or (cap is not None and high > cap):
        raise ParameterError("thresholds", "need 0 <= L < H (<= capacity when given)", th)
    if code == Control.THRESHOLD:  # seed 001's three modes: 1 <= L < H, R = capacity (default H + 1)
        if low < 1:
            raise ParameterError("thresholds", "need 1 <= L < H with control threshold (seed 001's thresholds)", th)
        if cap is None:
            cap = high + 1
    return code, cap, low, high


def _vacations(model, cap, high):
    """(the vacation law or None, single policy?) from the optional fields ``vacation`` and ``vacation_policy``
    (a model without them has no vacations). A vacation takes the server's place, so the capacity K and the
    threshold H must leave a waiting place: K >= 2, H >= 2."""
    vacation = getattr(model, "vacation", None)
    policy = _choice(model, "vacation_policy", "multiple")
    if policy not in ("multiple", "single", "none"):
        raise ParameterError("vacation_policy", "must be multiple or single", policy)
    if vacation is None:
        if policy == "single":
            raise ParameterError("vacation_policy", "single needs a vacation law", policy)
        return None, False
    _sampling(vacation, "vacation")
    for room, name in ((cap, "capacity"), (high, "thresholds")):
        if room is not None and room < 2:
            raise ParameterError(name, "must leave a waiting place with vacations: K >= 2 and H >= 2 (a vacation "
                                 "takes the server's place)", room)
    return vacation, policy == "single"


def _flows(model, method, timeout, code):
    """(rate2, flow 2's copy offsets, (flow 1's law, flow 2's law), (method, other)): the second flow (optional field
    ``rate_non_invite``, 0 or absent: none) with the other method's schedule; a service law per flow (optional field
    ``service_non_invite``: the non-invite flow's)."""
    service = read_field(model, "service")
    _sampling(service, "service")
    rate2 = read_float(getattr(model, "rate_non_invite", None) or 0, "rate_non_invite", lambda x: x >= 0,
                       "must be a finite rate >= 0")
    if code == Control.THRESHOLD and not rate2:
        raise ParameterError("rate_non_invite", "must be > 0 with control threshold (seed 001's server has an INVITE "
                             "and a non-INVITE flow)", rate2)
    other = "non-invite" if method == "invite" else "invite"
    taus2 = ()
    if rate2:
        taus2 = tuple(float(tau) for tau in copy_schedule(other, read_field(model, "t1"), read_field(model, "t2"),
                                                          exact(timeout, "timeout")))
    service2 = getattr(model, "service_non_invite", None)
    if service2 is not None:
        if not rate2:
            raise ParameterError("service_non_invite", "needs a second flow (rate_non_invite > 0)", service2)
        _sampling(service2, "service_non_invite")
    laws = (service, service) if service2 is None else ((service, service2) if method == "invite" else
                                                         (service2, service))
    return rate2, taus2, laws, (method, other)


def _retry(model, code):
    """Retry-After (optional fields ``retry_after`` T, ``retries`` m): None, or a :class:`Retry`."""
    retry = getattr(model, "retry_after", None)
    if retry is None:
        return None
    if code < Control.REJECT:
        raise ParameterError("retry_after", "needs a control that rejects with 503 (503 or threshold)", retry)
    return Retry(read_float(retry, "retry_after", lambda x: x > 0, "must be a finite time > 0"),
                 read_integer(getattr(model, "retries", 1), "retries", 1, "must be an integer in 1..100"))


def _not_simulated(setup: SimSetup) -> Refusal | None:
    """The simulator's declaration of what it does not simulate (everything else of the contract it does)."""
    if setup.vacation is not None and setup.control == Control.THRESHOLD:
        return Refusal.of_option(
            "vacation", "is not simulated with control threshold (seed 001's server has no vacations)",
            setup.vacation)
    if setup.vacation is not None and setup.control and setup.low == 0 and not setup.single:
        return Refusal.of_option("thresholds", "L = 0 with multiple vacations: the overload never ends (N counts the "
                                 "vacation's place, N >= 1 always)", (setup.low, setup.high))
    if setup.priority and setup.vacation is not None and setup.control and setup.low == 0:
        return Refusal.of_option(
            "thresholds", "L = 0 with vacations and --discipline priority is not simulated (the "
            "overload's end after the vacation that follows the last departure is simulated for fifo "
            "only); give L >= 1", (setup.low, setup.high))
    return None


def _read(model) -> SimSetup:
    """The model's fields, each checked (errors naming the option), as a :class:`SimSetup`."""
    rate = read_float(read_field(model, "rate"), "rate", lambda x: x > 0, "must be a finite rate > 0")
    _sampling(read_field(model, "service"), "service")
    method = _method(model)
    taus, timeout = _timers(model, method)
    code, cap, low, high = _control(model)
    cost = read_float(read_field(model, "duplicate_cost"), "duplicate_cost", lambda x: 0 < x <= 1,
                      "must lie in 0 < c <= 1")
    vacation, single = _vacations(model, cap, high if code else None)
    rate2, taus2, laws, names = _flows(model, method, timeout, code)
    discipline = _choice(model, "discipline", "fifo")
    if discipline not in ("fifo", "priority"):
        raise ParameterError("discipline", "must be fifo or priority", discipline)
    return SimSetup(rate, laws, taus, timeout, code, cap, low, high, cost, vacation, single, rate2, taus2, names,
                    discipline == "priority", _retry(model, code))


def setup_of(model) -> SimSetup:
    """The :class:`SimSetup` of ``model``; refuses a bad value or what is not simulated (:func:`supports`), naming the
    option."""
    setup = _read(model)
    refusal = _not_simulated(setup)
    if refusal is not None:
        raise refusal.error()
    return setup


def supports(model) -> Refusal | None:
    """The simulator's one declaration: None when it simulates ``model``, else the refusal naming the option (a
    value outside the contract, a law without a sampler, or a combination it does not simulate). It reads the fields
    only (no random number is drawn)."""
    try:
        setup = _read(model)
    except ParameterError as err:
        return Refusal.of_option(err.name, err.constraint or "", err.value)
    return _not_simulated(setup)
