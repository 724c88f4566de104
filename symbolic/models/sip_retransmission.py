"""Retransmission-aware SIP overload: a server fed by new transactions and their UDP retransmissions (issue 17).

The model of issue 17 (``docs/guides/sip-retransmission.md``; the same model the simulator
``simulation.sip`` of the numeric layer runs with per-transaction timers; seed 001, section 2: "overload can
occur even when the arrival rate is below the processing rate"). Time unit: seconds.

New transactions arrive as a Poisson process of rate lambda_0 (``rate``). A transaction sends copy 0 at
its start a and copy k >= 1 at a + tau_k while it has no response and tau_k < ``timeout`` (RFC 3261
section 17.1):

* INVITE (Timer A): intervals T1, 2 T1, 4 T1, ... (no cap): tau_k = T1 (2^k - 1); with the defaults
  0.5, 1.5, ..., 31.5 s: 7 copies at most;
* non-INVITE (Timer E): intervals T1, 2 T1, 4 T1, ..., capped at T2: tau = 0.5, 1.5, 3.5, 7.5, 11.5, ...,
  31.5 s with the defaults: 11 copies at most.

One FIFO server processes copies with service times B (``service``); a copy is admitted unless refused
(by the capacity K: silently; by the control). The transaction's response comes when its *first admitted*
copy completes; one with no response by ``timeout`` has timed out. Control on the number N of copies in
the server (waiting + in service), thresholds 0 <= L < H:

* ``none``: admit unless N = K;
* ``ignore`` (Asterisk's PJSIP distributor): an arrival finding N >= H puts the server in overload; in
  overload every arriving copy is dropped silently (the client keeps retransmitting); back to normal when
  a departure leaves N = L;
* ``503``: the same states, but a refused copy of a transaction with no admitted copy yet is answered
  with 503 and its transaction ends at once as *rejected*; a refused retransmission of a transaction
  already admitted is absorbed (dropped silently: the server's transaction layer knows it).

* ``threshold`` (two flows, ``rate_non_invite`` > 0; exponential laws): seed 001's three-mode server of model
  ``two-flow`` (:mod:`qderive.symbolic.models.two_flow`) with ``thresholds`` (L, H), 1 <= L < H, and R =
  ``capacity`` (default H + 1): mode 1 (partial overload) refuses INVITE copies and admits non-INVITE ones, mode 2
  (blocking) refuses every copy; every refusal is answered with 503 as under ``503`` (copy 0 refused: rejected; a
  later refused copy of an admitted transaction absorbed). The refusal probability is per flow. ``--discipline
  priority`` is seed 001's algorithm 2 there: non-INVITE first in modes 1 and 2 only. No vacation, duplicate cost
  1; the simulator runs it too.

**Retry-After** (``retry_after`` T, ``retries`` m; under ``503`` and ``threshold``): the 503 carries Retry-After T;
the client sends the same request again as a *new* transaction (same flow, a new copy schedule) T after the
rejection, at most m times per request. The analytic side (mean-field) takes the retries as Poisson transactions:
flow i's transaction rate is Lambda_0i = lambda_i (1 + J_i + ... + J_i^m) with J_i its transactions' reject
probability (T does not change the stationary rates); the simulator runs the retries at t + T.

An admitted copy that is not the first admitted copy of its transaction costs c B (``duplicate_cost`` c,
0 < c <= 1; c = 1: a retransmission is processed like a new request).

**A service law per flow** (``service_non_invite``, with ``rate_non_invite`` > 0): the non-INVITE flow's copies
take that law, the INVITE flow's ``service`` (:meth:`SipRetransmissionModel.flow_services`); a constant law is
refused with it (the analytic server's mixture of the two laws has kinks at all their sums).

**Vacations** (``vacation`` V, default none; ``vacation_policy``; the server of ``vacation-infinite`` and
``vacation-finite``, ``docs/theory/chapter2.md`` section 0): the server, on becoming empty, leaves for a
vacation (maintenance, garbage collection, other work) of law V; *multiple*: another one while it is still
empty at its end; *single*: one, then it idles until the next copy, which it serves at once. A copy arriving
during a vacation waits for its end. The vacation takes the server's place: N counts the waiting copies plus
one while the server serves *or is on vacation*, so ``capacity`` K leaves K - 1 waiting places also during a
vacation (the waiting room r = K - 1 of the thesis's M/G/1/r), and N also falls at a vacation's end with copies
waiting (one moves to the server): the control returns to normal whenever N falls to L (a departure or a
vacation's end). An empty server is on vacation, N = 1 (a departure leaving nobody starts one), and N = 0 only
when a single vacation ends with nobody waiting: so under multiple vacations N >= 1 always, and L = 0 would keep
the overload forever (refused); under single vacations and L = 0 the overload ends with the vacation that
follows the last departure. Without vacations N is the count above. With a vacation K >= 2 and H >= 2 (a waiting
place) (the analytic server with L = H - 1 is exactly M/G/1/H with the vacations, with L <= H - 2 the
embedded chain with vacations of the numeric layer's SIP control chain); a duplicate cost c < 1 or a service
law per flow makes that server's service a mixture (the numeric layer's mixture server).

The analytic evaluation (the numeric layer's SIP engine, ``engines.sip``) solves the fixed point
lambda = lambda_0 E[copies](lambda) for every solution; ``docs/guides/sip-retransmission.md`` states its
approximation.

>>> from fractions import Fraction as F
>>> from qderive.symbolic.laws import Exponential
>>> m = SipRetransmissionModel(rate=500, service=Exponential(F(1, 1000)))
>>> [float(t) for t in m.copy_times()]
[0.0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5]
>>> len(SipRetransmissionModel(rate=500, service=Exponential(F(1, 1000)), method="non-invite").copy_times())
11
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction

from ..errors import ParameterError
from ..laws.base import TimeLaw, is_concrete
from ..numbers import decimal_text, is_symbolic, positive
from ..params import Kind, param
from .base import Action, MeasureKind, Measures, Model, Request, measure
from .vacation import VacationPolicy, policy_field, vacation_field

__all__ = ["Method", "Control", "Discipline", "SipRetransmissionModel", "SipRetransmissionMeasures", "MAX_COPIES", "copy_schedule",
           "OnsetTarget", "OnsetRequest", "Flow", "SipTransactions", "SipServer"]

#: the largest number of copies a schedule may have (T1 tiny against the timeout would make thousands)
MAX_COPIES = 200


class Method(enum.Enum):
    """The client's timer schedule (RFC 3261 section 17.1)."""

    #: Timer A: intervals T1, 2 T1, 4 T1, ... until Timer B
    INVITE = "invite"
    #: Timer E: intervals T1, 2 T1, 4 T1, ... capped at T2, until Timer F
    NON_INVITE = "non-invite"


class Control(enum.Enum):
    """The server's load control (hysteretic on the number N of copies in the server)."""

    #: admit unless N = K
    NONE = "none"
    #: overload from an arrival finding N >= H until a departure leaves L; refused copies dropped silently
    IGNORE = "ignore"
    #: the same states; a refused copy of a transaction with no admitted copy is answered with 503 (rejected);
    #: a refused retransmission of an admitted transaction is dropped silently
    REJECT = "503"
    #: seed 001's three-mode server of two flows (model ``two-flow``): mode 1 answers INVITE copies with 503 and
    #: admits non-INVITE ones, mode 2 refuses every copy (503); class-dependent refusal
    THRESHOLD = "threshold"


class Discipline(enum.Enum):
    """The order in which the server takes the waiting copies of the two flows (``rate_non_invite`` > 0)."""

    #: arrival order
    FIFO = "fifo"
    #: non-INVITE copies first (non-preemptive; arrival order within a flow): seed 001's algorithm 2, applied in
    #: every mode
    PRIORITY = "priority"


_SRC = "issue 17; docs/guides/sip-retransmission.md"


@dataclass(frozen=True)
class SipRetransmissionMeasures(Measures):
    """The contract's measures (the JSON keys of ``qderive eval sip-retransmission``), at the fixed point with the
    smallest offered rate; ``solutions`` lists every fixed point with the same measures and its stability."""

    offered_rate: object = measure("copies arriving at the server per second, lambda = lambda_0 E[copies] (the "
                                   "fixed point)", MeasureKind.RATE, units="1/s", source="(F)")
    mean_copies: object = measure("E[copies sent per transaction] = 1 + sum_k P(copy k is sent)", MeasureKind.VALUE,
                                  source="(C)")
    duplicate_ratio: object = measure("retransmitted copies / all copies arriving = 1 - 1/E[copies]",
                                      MeasureKind.PROBABILITY, source="(D)")
    goodput: object = measure("transactions answered before their timeout, per second", MeasureKind.RATE,
                              units="1/s", source="(G)")
    timeout_probability: object = measure("fraction of transactions that time out (a value in [0, 1]; below the "
                                          "tails' absolute accuracy, see the notes, it has no relative digits)",
                                          MeasureKind.VALUE, source="(T)")
    reject_probability: object = measure("fraction of transactions rejected by 503 (0 without 503; a value "
                                         "in [0, 1], exactly 0 when nothing is rejected)", MeasureKind.VALUE,
                                         source="(J)")
    utilization: object = measure("fraction of time the server is busy", MeasureKind.PROBABILITY, source=_SRC)
    response_tail: object = measure("P(R > T) of the transaction response time R (R = inf when unanswered) for "
                                    "each T of --response-tail: {\"T\": value}", MeasureKind.VALUE, source="(S)")
    solutions: object = measure("every fixed point lambda = lambda_0 E[copies](lambda) on [lambda_0, lambda_0 n], "
                                "by increasing offered rate: a list of dicts of the measures above plus "
                                "'stable' (|slope| < 1), 'slope' (d lambda_0 E[copies] / d lambda) and 'residual' "
                                "(|lambda - lambda_0 E[copies]| / lambda)", MeasureKind.VALUE, source="(F)")
    flows: object = measure("per flow of new transactions {\"invite\": {goodput, mean_copies, duplicate_ratio, "
                            "timeout_probability, reject_probability}, \"non-invite\": {...}} (also in each solution; "
                            "the second flow with --rate-non-invite > 0 only); the other measures are the totals over "
                            "the flows", MeasureKind.VALUE, source="(F2)")
    request_reject_probability: object = measure("fraction of client requests finally rejected after all "
                                                 "--retries (Retry-After): J^(m+1), request-weighted over the flows "
                                                 "(on request; in every solution with --retry-after)", MeasureKind.VALUE, source="(R)",
                                                 optional=True)
    retry_rate: object = measure("retried transactions per second, sum_i lambda_i (J_i + ... + J_i^m) (on "
                                 "request; in every solution with --retry-after)", MeasureKind.RATE, units="1/s", source="(R)", optional=True)


def copy_schedule(method, t1, t2, timeout) -> tuple[Fraction, ...]:
    """The send offsets (tau_0 = 0, tau_1, ...) of a transaction's copies with tau_k < timeout, exact (Fractions).

    RFC 3261 section 17.1 (17.1.1.2 Timer A, 17.1.2.2 Timer E; issue 17, the contract's copy schedule)::

        INVITE (Timer A):     tau_k = (2^k - 1) T1                      (intervals T1, 2 T1, 4 T1, ...)
        non-INVITE (Timer E): interval_k = min(2^(k-1) T1, T2),  tau_k = sum_{i <= k} interval_i

    ``method`` a :class:`Method` or its value (``"invite"``, ``"non-invite"``); the times are made exact
    (:func:`~qderive.symbolic.numbers.exact`: a float through its shortest decimal text), so the strict
    comparison tau_k < timeout is decided exactly. The one implementation: the model's :meth:`copy_times`, the
    analytic engine and the simulator (which converts the offsets to float once) all use it. More than
    :data:`MAX_COPIES` copies is refused.

    >>> [str(t) for t in copy_schedule("invite", Fraction(1, 2), 4, 32)]
    ['0', '1/2', '3/2', '7/2', '15/2', '31/2', '63/2']
    >>> s = copy_schedule("non-invite", 0.5, 4, 32)
    >>> len(s), [float(t) for t in s[4:7]]
    (11, [7.5, 11.5, 15.5])
    """
    try:
        method = Method(getattr(method, "value", method))
    except ValueError:
        raise ParameterError("method", "must be invite or non-invite", method) from None
    t1, t2, timeout = (positive(x, name) for x, name in ((t1, "t1"), (t2, "t2"), (timeout, "timeout")))
    if any(is_symbolic(x) for x in (t1, t2, timeout)):
        raise ParameterError("timeout", "the copy schedule needs numbers for --t1, --t2 and --timeout, not symbols")
    out, tau, interval = [Fraction(0)], Fraction(0), t1
    while True:
        tau = tau + interval
        if not tau < timeout:
            return tuple(out)
        out.append(tau)
        if len(out) > MAX_COPIES:
            raise ParameterError("timeout", f"gives more than {MAX_COPIES} copies per transaction with --t1 "
                                 f"{decimal_text(t1)} (make --t1 larger or --timeout smaller)", decimal_text(timeout))
        interval = 2 * interval if method is Method.INVITE else min(2 * interval, t2)


@dataclass(frozen=True)
class Flow:
    """One Poisson flow of new transactions: its timer schedule (``method``), its rate lambda_i and its copy instants
    tau_0 = 0 < tau_1 < ... < tau_{n-1} < timeout (:func:`copy_schedule`, exact)."""

    method: Method
    rate: object
    copy_times: tuple

    @property
    def name(self) -> str:
        """The flow's key in the measure ``flows``: its method's value (``invite``, ``non-invite``)."""
        return self.method.value


@dataclass(frozen=True)
class SipTransactions:
    """The client side of :class:`SipRetransmissionModel` (:attr:`~SipRetransmissionModel.transactions`): what the
    fates of a transaction's copies depend on (module docstring; the engine's (C), (T), (J), (R)).

    ``flows`` the flows of new transactions, the ``method`` flow first; ``timeout`` Timer B / F; ``rejects``: a
    refused copy 0 is answered with 503 and ends its transaction (``--control 503`` and ``threshold``; otherwise a
    refusal is silent and the client retransmits); ``retries`` m, the retries of a rejected request with
    ``retry_after`` T (0 without Retry-After)."""

    flows: tuple
    timeout: object
    rejects: bool
    retries: int
    retry_after: object

    @property
    def total_rate(self):
        """lambda_0 = sum_i lambda_i, the new transactions per second of all flows."""
        return sum(f.rate for f in self.flows)

    @property
    def max_copies(self) -> int:
        """The most copies a transaction of any flow sends."""
        return max(len(f.copy_times) for f in self.flows)


@dataclass(frozen=True)
class SipServer:
    """The server side of :class:`SipRetransmissionModel` (:attr:`~SipRetransmissionModel.server`): what the server
    fed by copies does (module docstring), the input of the engine's routes (``engines.sip`` of the numeric layer).

    ``flow_methods`` and ``flow_rates`` the flows in the order of :attr:`SipTransactions.flows`, ``flow_services``
    each flow's service law; ``capacity`` K (``threshold_capacity`` R under ``--control threshold``)."""

    control: Control
    thresholds: tuple | None
    capacity: int | None
    threshold_capacity: int | None
    service: TimeLaw
    service_non_invite: TimeLaw | None
    flow_methods: tuple
    flow_rates: tuple
    flow_services: tuple
    duplicate_cost: object
    vacation: TimeLaw | None
    vacation_policy: VacationPolicy
    discipline: Discipline

    @property
    def two_flows(self) -> bool:
        """A second flow of transactions (``rate_non_invite`` > 0)."""
        return len(self.flow_methods) > 1

    @property
    def priority(self) -> bool:
        """``--discipline priority`` with two flows, not under ``--control threshold`` (whose two-flow server orders
        the flows itself)."""
        return self.discipline is Discipline.PRIORITY and self.two_flows and self.control is not Control.THRESHOLD

    @property
    def law_per_flow(self) -> bool:
        """A service law per flow (``service_non_invite`` with a second flow)."""
        return self.service_non_invite is not None and self.two_flows

    def option_of(self, law) -> str:
        """The command-line option of one of this server's laws (for a refusal that names it)."""
        if law is self.vacation:
            return "--vacation"
        return "--service-non-invite" if law is self.service_non_invite and law is not self.service else "--service"


class OnsetTarget(enum.Enum):
    """What ``qderive size sip-retransmission`` searches."""

    #: the ends of the bistable range in lambda_0 (``engines.sip.onset`` of the numeric layer)
    COLLAPSE_ONSET = "collapse-onset"


@dataclass(frozen=True)
class OnsetRequest(Request):
    """``qderive size sip-retransmission --target collapse-onset``: the rates lambda_0 at which the uncongested fixed
    point ends (a saddle-node, g'(lambda*) = 1) and at which the congested one appears."""

    target: OnsetTarget = param("collapse-onset: the ends of the bistable range of lambda_0 (the upper end: the "
                                "smallest fixed point jumps to the congested branch)", kind=Kind.CHOICE,
                                choices=OnsetTarget, default=OnsetTarget.COLLAPSE_ONSET)
    max_load: object = param("search the saddle-nodes at loads lambda_0 E[B] up to X (at most 100)", default=Fraction(3),
                             metavar="X", check="> 0")
    run_length: object = param("also give the load at which half of the runs of this length from empty have "
                               "collapsed, by the quasi-static lifetime chain (exponential service; under --control "
                               "ignore/503 the first entry into overload)", units="s", default=None, metavar="T",
                               check="> 0")

    def _validate(self):
        if self.max_load > 100:
            raise ParameterError("max_load", "must lie in (0, 100]", decimal_text(self.max_load))


@dataclass(frozen=True, kw_only=True)
class SipRetransmissionModel(Model):
    """``SipRetransmissionModel(rate=lambda_0, service=B, method=..., t1=..., t2=..., timeout=..., capacity=K,
    control=..., thresholds=(L, H), duplicate_cost=c, vacation=V, vacation_policy=...)`` (keyword arguments;
    module docstring)."""

    rate: object = param("lambda_0: new transactions (client requests) per second, a Poisson process", units="1/s",
                         metavar="LAMBDA0", check="> 0")
    service: TimeLaw = param("processing time B of one copy at the server", kind=Kind.TIME_LAW)
    method: Method = param("timer schedule: invite (Timer A, doubling) or non-invite (Timer E, capped at T2)",
                           kind=Kind.CHOICE, choices=Method, default=Method.INVITE)
    t1: object = param("T1, the first retransmission interval", units="s", default=Fraction(1, 2), metavar="T1",
                       check="> 0")
    t2: object = param("T2, the cap of the non-INVITE interval", units="s", default=Fraction(4), metavar="T2",
                       check="> 0")
    timeout: object = param("Timer B (INVITE) / Timer F (non-INVITE); default 64 T1", units="s", default=None,
                            metavar="T", check="> 0")
    capacity: int | None = param("K: most copies in the server (waiting + in service); a copy finding K is dropped "
                                 "silently; default unlimited", kind=Kind.INTEGER, default=None, metavar="K",
                                 check=">= 1")
    control: Control = param("load control: none | ignore (drop silently in overload) | 503 (reject in overload) | "
                             "threshold (seed 001's two-flow server: INVITE refused with 503 in partial overload, "
                             "every copy in blocking; two flows, exponential laws)",
                             kind=Kind.CHOICE, choices=Control, default=Control.NONE)
    thresholds: tuple | None = param("L,H: overload from an arrival finding N >= H until a departure leaves L "
                                     "(0 <= L < H, H <= K); required "
                                     "by --control ignore/503; with --control threshold seed 001's L,H of model "
                                     "two-flow (1 <= L < H)", kind=Kind.INTEGERS, count=2, default=None,
                                     metavar="L,H")
    duplicate_cost: object = param("c in (0, 1]: a copy admitted after its transaction's first admitted copy costs "
                                   "c B", default=Fraction(1), metavar="C")
    rate_non_invite: object = param("lambda_2 >= 0: a second Poisson flow of new transactions of the other method "
                                    "(non-invite when --method is invite, and vice versa) sharing the FIFO server "
                                    "and the service law; 0: one flow", units="1/s", default=Fraction(0),
                                    metavar="LAMBDA2", check=">= 0")
    service_non_invite: TimeLaw | None = param("processing time of one copy of a non-INVITE transaction (the "
                                               "non-invite flow's own service law, with --rate-non-invite > 0); "
                                               "default: the law of --service", kind=Kind.TIME_LAW, none_text="none",
                                               default=None)
    discipline: Discipline = param("order of service of the two flows (with --rate-non-invite > 0): fifo (arrival "
                                   "order) | priority (non-INVITE copies first, non-preemptive; seed 001's algorithm 2 "
                                   "in every mode)", kind=Kind.CHOICE, choices=Discipline, default=Discipline.FIFO)
    vacation: TimeLaw | None = vacation_field(None)
    vacation_policy: VacationPolicy = policy_field()
    retry_after: object = param("T: the 503 carries Retry-After T; the client sends the rejected request again as a new "
                                "transaction (same flow, a new copy schedule) T after the rejection (--control 503 or "
                                "threshold); default none: a rejected request ends", units="s", default=None,
                                metavar="T", check="> 0")
    retries: int = param("m in 1..100: the most times a client retries one request after a 503 (with --retry-after)",
                         kind=Kind.INTEGER, default=1, metavar="M")
    response_tail: tuple | None = param("times T of the measure response_tail P(R > T)", kind=Kind.NUMBERS,
                                        units="s", default=None, metavar="T1,...", check=">= 0")
    scan_points: int = param("grid points of the scan of the fixed-point residual on [lambda_0, lambda_0 n] (every "
                             "sign change is then refined; two crossings closer than a grid step can be missed)",
                             kind=Kind.INTEGER, default=160, metavar="N")

    name = "sip-retransmission"
    summary = ("SIP server with UDP retransmissions (RFC 3261 Timers A/B, E/F) and ignore/503 overload control: the "
               "fixed point lambda = lambda_0 E[copies](lambda), every solution, goodput and timeouts (issue 17)")
    measures = SipRetransmissionMeasures
    actions = (Action("size", "The collapse onset (--target collapse-onset): the rates lambda_0 at the two ends of the "
                      "bistable range, where the uncongested fixed point ends (upper) and the congested one appears "
                      "(lower); --rate is chosen by the search", OnsetRequest, omit=("rate",)),)

    def _validate(self):
        if self.control is Control.THRESHOLD:
            self._validate_threshold()
        self._validate_retry()
        self._validate_vacation()
        if not is_concrete(self.service):
            raise ParameterError("service", "must be a concrete law (numbers, not symbols)", str(self.service))
        c = self.duplicate_cost
        if not 0 < c <= 1:
            raise ParameterError("duplicate_cost", "must lie in (0, 1]", decimal_text(c))
        if self.scan_points < 8 or self.scan_points > 5000:
            raise ParameterError("scan_points", "must lie in 8..5000", self.scan_points)
        K = self.capacity
        if self.control is Control.NONE:
            if self.thresholds is not None:
                raise ParameterError("thresholds", "apply to --control ignore or 503 only",
                                     ",".join(map(str, self.thresholds)))
        else:
            if self.thresholds is None:
                raise ParameterError("thresholds", f"are required by --control {self.control.value} (give L,H)")
            L, H = self.thresholds
            if not 0 <= L < H:
                raise ParameterError("thresholds", f"must satisfy 0 <= L < H (got L={L}, H={H})", f"{L},{H}")
            if K is not None and H > K:
                raise ParameterError("thresholds", f"H = {H} must not exceed --capacity K = {K}", f"{L},{H}")
        self._validate_timer_scale()
        self.copy_times()  # refuses a schedule with too many copies
        if self.rate_non_invite:
            self.flow_copy_times()
        elif self.discipline is not Discipline.FIFO:
            raise ParameterError("discipline", f"{self.discipline.value} orders two flows: it needs a second flow "
                                 "(--rate-non-invite > 0)", self.discipline.value)
        self._validate_flow_laws()

    #: the timers (T1, T2, Timer B/F) may lie this many decades from the mean service time, no more: the response
    #: transforms are inverted at the timers in float64 first (nodes ~ A / (2 t)), out of range beyond that
    TIMER_DECADES = 100

    def _validate_timer_scale(self):
        """Each timer t of the copy schedule within 10^-100 .. 10^100 times the mean service time E B."""
        mean = self.service.mean
        if is_symbolic(mean) or not mean > 0:
            return
        mean = Fraction(mean)
        span = Fraction(10) ** self.TIMER_DECADES
        for name, value in (("t1", self.t1), ("t2", self.t2), ("timeout", self.timeout)):
            if value is None or is_symbolic(value):
                continue
            if not mean / span <= value <= mean * span:
                raise ParameterError(name, f"must lie within 1e-{self.TIMER_DECADES} to 1e{self.TIMER_DECADES} times "
                                     f"the mean service time E B = {decimal_text(mean)} s (the timers and the "
                                     "service are on one time axis)", decimal_text(value))

    def _validate_threshold(self):
        """``--control threshold`` (seed 001's server, model ``two-flow``; module docstring, *Threshold*): two flows,
        thresholds 1 <= L < H (two-flow's). What the engine computes of it (exponential laws, duplicate cost 1, no
        vacation) is the engine's declaration (``engines.sip.supports`` of the numeric layer)."""
        if not self.rate_non_invite:
            raise ParameterError("rate_non_invite", "must be > 0 with --control threshold (seed 001's server has an "
                                 "INVITE and a non-INVITE flow)", decimal_text(self.rate_non_invite))
        if self.thresholds is None:
            raise ParameterError("thresholds", "are required by --control threshold (give L,H with 1 <= L < H)")
        L, H = self.thresholds
        if not 1 <= L < H:
            raise ParameterError("thresholds", f"must satisfy 1 <= L < H with --control threshold (seed 001's "
                                 f"thresholds; got L={L}, H={H})", f"{L},{H}")

    def _validate_retry(self):
        """``retry_after`` T (Retry-After of the 503, module docstring *Retry-After*) only with a control that rejects
        (503, threshold), T > 0; ``retries`` m in 1..100, other than 1 only with ``retry_after``."""
        if not 1 <= self.retries <= 100:
            raise ParameterError("retries", "must lie in 1..100", self.retries)
        T = self.retry_after
        if T is None:
            if self.retries != 1:
                raise ParameterError("retries", "count the retries after a 503 with Retry-After: they need "
                                     "--retry-after T", self.retries)
            return
        if self.control not in (Control.REJECT, Control.THRESHOLD):
            raise ParameterError("retry_after", "needs a control that rejects with 503 (--control 503 or threshold; "
                                 f"--control {self.control.value} sends no 503)", decimal_text(T))
        if is_symbolic(T):
            raise ParameterError("retry_after", "must be a number, not a symbol", str(T))

    @property
    def retry_count(self) -> int:
        """m, the retries of one request after a 503 (``retries`` with ``retry_after``), else 0."""
        return self.retries if self.retry_after is not None else 0

    @property
    def threshold_capacity(self) -> int:
        """R of the two-flow server of ``--control threshold``: ``capacity``, default H + 1 (where R does not bind:
        seed 001's count never exceeds H + 1)."""
        return self.capacity if self.capacity is not None else self.thresholds[1] + 1

    def _validate_flow_laws(self):
        """``service_non_invite`` (a service law per flow): only with a second flow, a concrete law. Which laws the
        engine's mixture server computes is its declaration (the SIP engine's ``supports``, numeric layer)."""
        B2 = self.service_non_invite
        if B2 is None:
            return
        if not self.rate_non_invite:
            raise ParameterError("service_non_invite", "needs a second flow (--rate-non-invite > 0): with one flow "
                                 "--service is the only service law", B2.spec_text())
        if not is_concrete(B2):
            raise ParameterError("service_non_invite", "must be a concrete law (numbers, not symbols)", str(B2))

    @property
    def transactions(self) -> SipTransactions:
        """The client side as one frozen value (:class:`SipTransactions`): the flows, the timeout, what a refusal
        means to a transaction (503 or silent), Retry-After."""
        flows = tuple(Flow(Method(name), rate, taus) for name, rate, taus in self.flows())
        return SipTransactions(flows, self.timer, self.control in (Control.REJECT, Control.THRESHOLD),
                               self.retry_count, self.retry_after)

    @property
    def server(self) -> SipServer:
        """The server side as one frozen value (:class:`SipServer`): control, rooms, service laws per flow, duplicate
        cost, vacations, discipline."""
        flows = self.flows()
        return SipServer(self.control, self.thresholds, self.capacity,
                         self.threshold_capacity if self.control is Control.THRESHOLD else None, self.service,
                         self.service_non_invite, tuple(name for name, _, _ in flows),
                         tuple(rate for _, rate, _ in flows), self.flow_services(), self.duplicate_cost,
                         self.vacation, self.vacation_policy, self.discipline)

    @property
    def other_method(self) -> Method:
        """The method of the second flow (``rate_non_invite``): the one that is not ``method``."""
        return Method.NON_INVITE if self.method is Method.INVITE else Method.INVITE

    def flow_copy_times(self) -> tuple:
        """The second flow's copy instants (its own schedule, :func:`copy_schedule` with :attr:`other_method`)."""
        return copy_schedule(self.other_method, self.t1, self.t2, self.timer)

    def flows(self) -> tuple:
        """((method value, lambda_i, copy instants), ...): the flows of new transactions, the ``method`` flow first;
        the second (``rate_non_invite``) only when its rate is > 0."""
        out = [(self.method.value, self.rate, self.copy_times())]
        if self.rate_non_invite:
            out.append((self.other_method.value, self.rate_non_invite, self.flow_copy_times()))
        return tuple(out)

    def flow_services(self) -> tuple:
        """The service law of each flow of :meth:`flows` (the non-invite flow's ``service_non_invite`` when given,
        else ``service``)."""
        own = {Method.INVITE.value: self.service, Method.NON_INVITE.value: self.service_non_invite or self.service}
        return tuple(own[name] for name, _, _ in self.flows())

    def _validate_vacation(self):
        """The vacation's constraints (module docstring, *Vacations*): the policy needs a law; K >= 2 and H >= 2
        (a waiting room of K - 1 >= 1 places, also during a vacation); under control L >= 1 with multiple
        vacations (N never falls to 0). The range of the vacation's mean that the engine computes is its declaration
        (``engines.sip.supports`` of the numeric layer)."""
        V = self.vacation
        if V is None:
            if self.vacation_policy is VacationPolicy.SINGLE:
                raise ParameterError("vacation_policy", "single needs a vacation law (give --vacation LAW)", "single")
            return
        if not is_concrete(V):
            raise ParameterError("vacation", "must be a concrete law (numbers, not symbols)", str(V))
        if self.control is Control.NONE:
            room, where = self.capacity, "--capacity K"
        else:
            room, where = (self.thresholds[1] if self.thresholds is not None else None), "--thresholds L,H with H"
        if room is not None and room < 2:
            raise ParameterError("vacation", f"needs {where} >= 2 (a vacation takes the server's place, leaving "
                                 f"{room - 1} waiting places: nobody could wait during a vacation)", V.spec_text())
        if self.control is not Control.NONE and self.thresholds is not None:
            L, H = self.thresholds
            if L == 0 and self.vacation_policy is VacationPolicy.MULTIPLE:
                raise ParameterError("thresholds", "L = 0 with multiple vacations never ends the overload of "
                                     f"--control {self.control.value}: N counts the vacation's place, so N >= 1 always (an "
                                     "empty server is on vacation) and never falls to 0; give L >= 1, or "
                                     "--vacation-policy single (N = 0 when a vacation ends with nobody waiting)",
                                     f"{L},{H}")

    @property
    def timer(self):
        """The timeout: ``timeout`` or 64 T1 (Timer B / Timer F)."""
        return self.timeout if self.timeout is not None else 64 * self.t1

    def copy_times(self) -> tuple:
        """(tau_0 = 0, tau_1, ..., tau_{n-1}): the copy instants after the transaction's start (exact)."""
        return copy_schedule(self.method, self.t1, self.t2, self.timer)

    @property
    def max_copies(self) -> int:
        """n, the most copies a transaction sends."""
        return len(self.copy_times())

    @property
    def load(self):
        """lambda_0 E[B], the offered load of the new transactions alone."""
        return self.rate * self.service.moment(1)

    @classmethod
    def example(cls):
        """The figure's ignore control (E[B] = 0.1 s, thresholds (4, 5)) at lambda_0 E[B] = 0.9 with Timer B = T1:
        one copy per transaction, where the fixed point is exact (``verify --simulate`` compares it with the
        simulator; with retransmissions the analytic side is an approximation whose error the guide measures)."""
        from ..laws.gamma import Exponential

        return cls(rate=9, service=Exponential(Fraction(1, 10)), control=Control.IGNORE, thresholds=(4, 5),
                   timeout=Fraction(1, 2), scan_points=40)
