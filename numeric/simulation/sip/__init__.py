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
mode 0, the order at a departure being that of the mode in force after it (:meth:`.servers.PriorityServer.advance`).
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
(:func:`..stats.value_stream`).

Under ``priority`` a waiting INVITE copy can be overtaken, so its departure is known only when it starts: the
server is the strategy :class:`.servers.PriorityServer` (two queues, advanced lazily to each event time, a departure
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
95 % intervals: :func:`..stats.replication_estimates` (independent replications from
``numpy.random.SeedSequence(seed).spawn``, ratio estimators, jackknife, Student t).

**Retry-After** (``retry_after`` T, ``retries`` m; control 503 or threshold): a transaction rejected by 503 with
retries left starts a new transaction of its flow (a new copy schedule, one retry fewer) at its rejection time + T,
from a stream of its own (a deque: T is constant, so the retries are in time order); a retry is a transaction like
any other (counted in ``transactions``, ``goodput``, ...). With it ``simulate_sip`` also gives
``request_reject_probability`` = measured transactions finally rejected (no retry left) / measured first
transactions of requests and ``retry_rate`` = measured retries / horizon ((R) of the engine's docstring). Without
``retry_after`` the event loop draws the same path as before (the retry stream stays empty).

**The package.** :mod:`.setup` reads the model into one frozen :class:`~.setup.SimSetup` (each value checked, naming
the option) and declares what the simulator does not simulate (:func:`supports`); :mod:`.servers` has the FIFO and
the priority server behind one interface; :mod:`.events` the event loop of one replication (the control's decision,
the copy streams, Retry-After's retries, the counts) in codings that give the same numbers bit for bit: flat loops
with the server and the control written out (the common case: FIFO, one or two flows, no Retry-After, no modes; the
priority server; FIFO with the modes of ``threshold`` or Retry-After; FIFO with Retry-After and vacations), no
method call per event where the single function before the package had none (docs/performance.md), and the general
loop through the servers' interface; this module the estimates over replications.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ....symbolic.capabilities import declare
from ....symbolic.errors import ParameterError
from ...engines.progress import Progress
from ..stats import (
    Estimate,
    SimulationResult,
    estimate_notes,
    measure_bounds,
    replication_estimates,
)
from .events import ACCUMULATORS, replication
from .setup import (
    Control,
    SimSetup,
    read_field,
    read_float,
    read_integer,
    setup_of,
    supports,
)

__all__ = ["simulate_sip", "simulate", "collapse_times", "estimates", "supports", "MEASURES", "FLOW_MEASURES",
           "ACCUMULATORS", "SimSetup", "setup_of", "replication"]

#: the measure keys of the contract (``qderive eval sip-retransmission --json``), in order
MEASURES = ("offered_rate", "mean_copies", "duplicate_ratio", "goodput", "timeout_probability",
            "reject_probability", "utilization")
#: the per-flow measures of ``flows`` (two flows only)
FLOW_MEASURES = ("goodput", "mean_copies", "duplicate_ratio", "timeout_probability", "reject_probability")


def _budget(setup: SimSetup, length: float, replications: int) -> None:
    """Refuse a run of more than the ``customers`` limit of expected transactions (all replications)."""
    from ....symbolic import limits as _limits

    expected = (setup.rate + setup.rate2) * (length + setup.tau_max) * replications
    _limits.check("customers", math.ceil(min(expected, 1e300)),
                  "transactions x replications of one simulation (rate x (warmup + horizon + tau_max) x replications)")
    vacation = setup.vacation
    if vacation is not None and callable(getattr(vacation, "moment", None)):  # multiple vacations of a tiny mean
        most = (length + setup.taus[-1]) * replications / float(vacation.moment(1))
        _limits.check("customers", math.ceil(min(most, 1e300)), "vacations x replications of one simulation (at "
                      "most (warmup + horizon + tau_max) / E[V] x replications)")


def _check_seed(seed) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ParameterError("seed", "must be an integer >= 0 (or None for fresh entropy)", seed)


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
        t = read_float(key, "response_tail", lambda x: x >= 0, "each time T must be a finite number >= 0")
        if any(k == key for k, _ in out):
            raise ParameterError("response_tail", "repeats the time", key)
        out.append((key, t))
    return out


def estimates(model, *, horizon, warmup, replications, seed, response_times=(), run=None,
              quiet: bool = True) -> dict[str, Estimate]:
    """Every measure (contract keys, diagnostics, ``tail{i}``) as an :class:`.stats.Estimate`.

    ``run``: a dict that receives the seed sequence's ``entropy`` and the wall-clock ``seconds``."""
    setup = setup_of(model)
    horizon = read_float(horizon, "horizon", lambda x: x > 0, "must be a finite time > 0")
    warmup = read_float(warmup, "warmup", lambda x: x >= 0, "must be a finite time >= 0")
    replications = read_integer(replications, "replications", 2, "must be an integer >= 2 (an interval needs two)")
    _check_seed(seed)
    times = _times(response_times)
    _budget(setup, warmup + horizon, replications)
    sequence = np.random.SeedSequence(seed)
    rows = np.empty((replications, len(ACCUMULATORS) + len(times)))
    started = time.perf_counter()
    with Progress(replications, "replications", desc="simulate sip-retransmission", quiet=quiet or None) as bar:
        for i, child in enumerate(sequence.spawn(replications)):
            rows[i] = replication(np.random.default_rng(child), setup, warmup, warmup + horizon,
                                  [t for _, t in times])[0]
            bar.advance()
    if run is not None:
        run.update(entropy=int(sequence.entropy), seconds=time.perf_counter() - started)
    names = ACCUMULATORS + tuple(f"tail{i}" for i in range(len(times)))
    bounds = measure_bounds("sip-retransmission") | {f"tail{i}": (0.0, 1.0) for i in range(len(times))}
    return replication_estimates(rows, names, _measure_table(len(times), bool(setup.rate2)), bounds)


def _pair(est: Estimate) -> tuple:
    return (est.value, est.half_width(0.95))


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
    est = estimates(model, horizon=horizon, warmup=warmup, replications=replications, seed=seed,
                     response_times=[t for _, t in times])
    out = {name: _pair(est[name]) for name in MEASURES}
    out["response_tail"] = {key: _pair(est[f"tail{i}"]) for i, (key, _) in enumerate(times)}
    if getattr(model, "retry_after", None) is not None:  # Retry-After: the measures of the requests
        out["request_reject_probability"] = _pair(est["request_reject_probability"])
        out["retry_rate"] = _pair(est["retry_rate"])
    if "flow2_goodput" in est:  # two flows: flow 1 is ``method``'s, flow 2 the other method's
        names = setup_of(model).names
        out["flows"] = {names[i - 1]: {m: _pair(est[f"flow{i}_{m}"]) for m in FLOW_MEASURES} for i in (1, 2)}
    return out


def _declared(model, asked=frozenset()):
    """The simulator's declaration (:func:`.setup.supports`) as the capability protocol's refusal."""
    found = supports(model)
    return None if found is None else found.for_model(model)


@declare(independent={"scan_points": "it is the grid of the engine's fixed-point scan; the simulation solves no fixed "
                                     "point"}, check=_declared)
def simulate(model, customers: int = 200_000, replications: int = 10, seed: int | None = None, *,
             warmup: float = 0.1, quiet: bool = False) -> SimulationResult:
    """:func:`simulate_sip` in the shape of ``qderive simulate`` (the other simulators' ``simulate``).

    ``customers``: transactions started per replication on average, warm-up included: each run covers
    customers / lambda_0 seconds (lambda_0 the total rate of both flows with ``rate_non_invite``), of which the ``warmup`` fraction is discarded (horizon = (1 - warmup)
    customers / lambda_0). Returns a :class:`.stats.SimulationResult` with the contract's measures
    (:data:`MEASURES`) and, when the model has a field ``response_tail`` (times T), the sample measure
    ``response_tail`` {T as decimal text: P(R > T)}. Progress (the replications done) goes through the one
    progress mechanism unless ``quiet``.
    """
    from ....symbolic.numbers import decimal_text

    rate = read_float(read_field(model, "rate"), "rate", lambda x: x > 0, "must be a finite rate > 0")
    rate += read_float(getattr(model, "rate_non_invite", None) or 0, "rate_non_invite", lambda x: x >= 0,
                   "must be a finite rate >= 0")  # two flows: the customers of both
    customers = read_integer(customers, "customers", 1, "must be an integer >= 1")
    fraction = read_float(warmup, "warmup", lambda x: 0 <= x < 1, "must be a fraction in [0, 1)")
    total = customers / rate
    run = {}
    tail = tuple(getattr(model, "response_tail", None) or ())
    est = estimates(model, horizon=(1 - fraction) * total, warmup=fraction * total, replications=replications,
                     seed=seed, response_times=tail, run=run, quiet=quiet)
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
    setup = setup_of(model)
    limit = read_float(limit, "limit", lambda x: x > 0, "must be a finite time > 0")
    replications = read_integer(replications, "replications", 2, "must be an integer >= 2 (an interval needs two)")
    _check_seed(seed)
    if criterion not in ("wait", "overload") or (criterion == "overload" and setup.control not in (Control.IGNORE, Control.REJECT)):
        raise ParameterError("criterion", "must be wait, or overload with control ignore or 503", criterion)
    _budget(setup, limit, replications)
    times = [replication(np.random.default_rng(child), setup, 0.0, limit, until_collapse=True, block=2048,
                          overload_collapse=criterion == "overload")[1]
             for child in np.random.SeedSequence(seed).spawn(replications)]
    rows = np.array([[1.0, float(t <= limit)] for t in times])
    est = replication_estimates(rows, ("runs", "collapsed"), {"collapsed": lambda a: a["collapsed"] / a["runs"]})
    return {"times": sorted(times), "collapsed": _pair(est["collapsed"])}
