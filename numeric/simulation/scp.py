"""Discrete-event model of an SCP under overload: adaptive window vs ITU-T call gapping and percentage throttling.

Seed 003 (Wang & Liao) proposes an adaptive window at the SCP front end: each BEGIN message
takes one of n windows until its response; a response-time detector shrinks the window when
responses slow down (overload) and widens it when they are normal, so that n_min = n_max - 1
at the optimum (``docs/theory/other-models.md`` section D). The paper claims it is more robust than
the two ITU-T INAP controls, Call Gapping and percentage throttling (ActivateServiceFilter),
"by theory and simulation". This module is a small, seeded simulation to test that claim:

* calls arrive as ``sources`` independent Poisson streams (the SSPs), total rate lambda;
* the SCP back end is ``servers`` processors with one FIFO queue and exponential processing
  of mean ``holding`` (``servers=None``: infinite servers, so a fixed window is exactly the
  M/M/n/n loss system of the paper's eq. (1), the model ``erlang-b``);
* the response time of a call is admission -> completion; every ``interval`` seconds the
  detector compares the mean response time of the calls completed in that interval with
  ``threshold`` and moves the control one level tighter (overload) or looser (normal);
* the controls share the detector and differ only in how a level restricts admission
  (:class:`NoControl`, :class:`AdaptiveWindow` w = w_max - level, :class:`FixedWindow`,
  :class:`CallGapping` g = g_min 2^((level-1)/s) per SSP, :class:`PercentageThrottling`
  admit with probability 1 - level * step).

One run (:func:`simulate_run`) returns throughput (completions per second), goodput
(completions within the SSP ``timeout``), mean response time, the admitted fraction, the
blocking and the mean control level, measured after a warm-up. :func:`replicate` runs
independent replications, seeded by ``numpy.random.SeedSequence(seed).spawn(R)`` (the same
children for every control and load: common random numbers), and gives a
:class:`~qderive.numeric.simulation.stats.Estimate` per measure (mean over the runs, standard
error s/sqrt(R), Student-t intervals).

The event loop is arrival-driven: departures are kept in a heap and processed lazily before
each arrival; the FIFO multi-server back end follows the Kiefer-Wolfowitz recursion (a heap of
the times at which each processor becomes free). Pure Python with numpy random streams.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ...symbolic.errors import ParameterError
from ...symbolic.models.base import Request
from ...symbolic.numbers import decimal_text, exact
from ...symbolic.params import Kind, param
from .stats import Estimate

__all__ = ["SCPConfig", "Control", "NoControl", "AdaptiveWindow", "FixedWindow", "CallGapping",
           "PercentageThrottling", "ServiceWindows", "MeasuredServiceWindows", "service_windows", "fairness_index", "effectiveness",
           "RunResult", "simulate_run", "simulate_services", "replicate", "replicate_services", "model_control",
           "simulate_model", "MEASURES"]


@dataclass(frozen=True)
class SCPConfig(Request):
    """The SCP, its callers and the response-time detector (times in seconds), validated once.

    Defaults: 4 processors, 40 ms mean processing (capacity 100 calls/s), 10 SSPs, detector
    interval 0.5 s and threshold 0.1 s (2.5 mean processing times), SSP timeout 0.5 s, horizon
    120 s of which 20 s warm-up. ``rejection_cost``: refusing a call AT THE SCP still takes
    this fraction of its processing time (FIFO, like any message); calls refused at the SSP
    (call gapping, percentage) cost the SCP nothing.
    """

    servers: int | None = param("processors of the SCP back end, or infinite", kind=Kind.INTEGER, check=">= 1",
                                none_text="infinite", default=4)
    holding: object = param("mean processing time of a call", units="s", check="> 0", default=Fraction(1, 25))
    sources: int = param("SSPs (independent Poisson streams)", kind=Kind.INTEGER, check=">= 1", default=10)
    interval: object = param("detector interval", units="s", check="> 0", default=Fraction(1, 2))
    threshold: object = param("mean response time above which an interval counts as overload", units="s",
                              check="> 0", default=Fraction(1, 10))
    timeout: object = param("SSP timeout: a later response does not count as goodput", units="s", check="> 0",
                            default=Fraction(1, 2))
    horizon: object = param("simulated time", units="s", check="> 0", default=120)
    warmup: object = param("time discarded at the start", units="s", check=">= 0", default=20)
    rejection_cost: object = param("processing a refusal at the SCP costs this fraction of a call", check=">= 0",
                                   default=0)

    def _validate(self):
        if not self.warmup < self.horizon:
            raise ParameterError("warmup", f"must be < horizon = {decimal_text(self.horizon)}",
                                 decimal_text(self.warmup))

    @property
    def capacity(self) -> float:
        """Calls per second the back end completes when saturated: servers / holding."""
        return math.inf if self.servers is None else self.servers / float(self.holding)


# -- controls ------------------------------------------------------------------------------------------


@dataclass
class _State:
    level: int
    last_admit: list = field(default_factory=list)


class Control:
    """An admission control driven by a level 0..levels-1 (0: loosest). Subclasses define ``admits``."""

    name = "control"
    levels = 1
    initial_level = 0
    #: True when calls are refused by the SCP itself (they then cost ``SCPConfig.rejection_cost``)
    at_scp = False

    def state(self, sources: int) -> _State:
        """Fresh mutable run state (a control object itself is immutable and reusable)."""
        return _State(level=self.initial_level, last_admit=[-math.inf] * sources)

    def admits(self, st: _State, t: float, source: int, in_system: int, u: float) -> bool:
        raise NotImplementedError

    def describe(self, level: int) -> str:
        return f"level {level}"


def _integer(value, name, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParameterError(name, f"must be an integer >= {low}", value)


@dataclass(frozen=True)
class NoControl(Control):
    """Every call is admitted (the uncontrolled SCP)."""

    name = "no control"

    def admits(self, st, t, source, in_system, u):
        return True


@dataclass(frozen=True)
class AdaptiveWindow(Control):
    """Seed 003: at most w calls in the SCP (BEGIN holds a window until its response), w = w_max - level.

    The detector changes w by one per interval: w - 1 on overload, w + 1 when normal, so w
    oscillates between n_min and n_max = n_min + 1 at the optimum.
    """

    w_max: int = 100
    w_initial: int = 20
    name = "adaptive window"
    at_scp = True

    def __post_init__(self):
        _integer(self.w_max, "w_max", 1)
        _integer(self.w_initial, "w_initial", 1)
        if self.w_initial > self.w_max:
            raise ParameterError("w_initial", f"must be <= w_max = {self.w_max}", self.w_initial)

    @property
    def levels(self):
        return self.w_max

    @property
    def initial_level(self):
        return self.w_max - self.w_initial

    def admits(self, st, t, source, in_system, u):
        return in_system < self.w_max - st.level

    def describe(self, level):
        return f"window {self.w_max - level}"


@dataclass(frozen=True)
class FixedWindow(Control):
    """A window of constant size n (the M/M/n/n front end of seed 003's eq. (1)); ignores the detector."""

    n: int = 10
    name = "fixed window"
    at_scp = True

    def __post_init__(self):
        _integer(self.n, "n", 1)

    def admits(self, st, t, source, in_system, u):
        return in_system < self.n


@dataclass(frozen=True)
class CallGapping(Control):
    """ITU-T Call Gapping at every SSP: after an admitted call, refuse calls for g seconds.

    Level 0: no gap; level j >= 1: g = g_min 2^((j-1)/s) with s = ``steps_per_doubling``
    (a geometric ladder; s = 4 gives 19% steps), up to ``g_max``.
    """

    g_min: float = 0.005
    g_max: float = 5.0
    steps_per_doubling: int = 4
    name = "call gapping"

    def __post_init__(self):
        if not 0 < float(exact(self.g_min, "g_min")) < float(exact(self.g_max, "g_max")):
            raise ParameterError("g_min", f"must satisfy 0 < g_min < g_max = {self.g_max}", self.g_min)
        _integer(self.steps_per_doubling, "steps_per_doubling", 1)

    @property
    def levels(self):
        return 2 + int(self.steps_per_doubling * math.log2(self.g_max / self.g_min))

    def gap(self, level: int) -> float:
        return 0.0 if level == 0 else self.g_min * 2.0 ** ((level - 1) / self.steps_per_doubling)

    def admits(self, st, t, source, in_system, u):
        if t - st.last_admit[source] >= self.gap(st.level):
            st.last_admit[source] = t
            return True
        return False

    def describe(self, level):
        return f"gap {self.gap(level):.4g} s"


@dataclass(frozen=True)
class PercentageThrottling(Control):
    """ITU-T percentage throttling (ActivateServiceFilter): admit with probability 1 - level * step."""

    step: float = 0.05
    name = "percentage"

    def __post_init__(self):
        if not 0 < float(exact(self.step, "step")) <= 0.5:
            raise ParameterError("step", "must lie in (0, 0.5]", self.step)

    @property
    def levels(self):
        return int(round(1 / self.step))  # down to one step above 0

    def admits(self, st, t, source, in_system, u):
        return u < 1.0 - st.level * self.step

    def describe(self, level):
        return f"admit {100 * (1 - level * self.step):.0f}%"


def service_windows(total: int, ratios, holdings) -> tuple:
    """Seed 003's multi-service allocation of ``total`` windows: integer windows n_i with sum n_i = total.

    The operator fixes the ratios S_1 : ... : S_m of the admitted rates; with the mean response times
    ws_i = h_i of the window model ((4): ws = 1/mu), (5) sum_i S_i ws_i = R with R = ``total`` gives
    S_i = s_i R / sum_j s_j ws_j (:meth:`qderive.symbolic.models.erlang_b.ServiceMix.admitted_rates`),
    and by Little's law service i holds n_i = S_i ws_i windows. Rounded to integers by largest
    remainders (Hamilton), so that the windows add up to ``total`` exactly.
    """
    from ...symbolic.models.erlang_b import ServiceMix

    _integer(total, "windows", 0)
    if total == 0:
        return (0,) * len(tuple(ratios))
    mix = ServiceMix(tuple(ratios), tuple(holdings), total)
    share = [Fraction(a) * Fraction(w) for a, w in zip(mix.admitted_rates(), mix.response_times)]
    base = [int(x) for x in share]  # floor (nonnegative)
    order = sorted(range(len(share)), key=lambda i: (-(share[i] - base[i]), i))
    for i in order[: total - sum(base)]:
        base[i] += 1
    return tuple(base)


@dataclass(frozen=True)
class ServiceWindows(AdaptiveWindow):
    """Seed 003's multi-service adaptive window: the total window R = w_max - level adapts as in
    :class:`AdaptiveWindow` (one step per detector interval) and is shared among the services by
    :func:`service_windows` (5), (6): a call of service i is admitted while fewer than n_i(R) calls of
    service i are in the SCP. ``adaptive=False``: the windows of R = ``w_initial`` for ever (the
    M/M/n_i/n_i window model of each service with an infinite-server back end)."""

    ratios: tuple = (1,)
    holdings: tuple = (Fraction(1, 25),)
    adaptive: bool = True
    name = "service windows"
    per_service = True

    def __post_init__(self):
        super().__post_init__()
        table = tuple(service_windows(w, self.ratios, self.holdings) for w in range(self.w_max + 1))
        object.__setattr__(self, "_table", table)

    @property
    def levels(self):
        return self.w_max if self.adaptive else 1

    @property
    def initial_level(self):
        return self.w_max - self.w_initial if self.adaptive else 0

    def windows(self, level: int) -> tuple:
        """(n_1, ..., n_m) at control level ``level``."""
        return self._table[self.w_max - level if self.adaptive else self.w_initial]

    def admits(self, st, t, source, service, inside, u):
        return inside[service] < self.windows(st.level)[service]

    def describe(self, level):
        return f"windows {'/'.join(map(str, self.windows(level)))}"


@dataclass
class _MeasuredState(_State):
    """Run state of :class:`MeasuredServiceWindows`: the smoothed response times, the current windows and the
    response times collected since the last update (per service: count, sum)."""

    ws: list = field(default_factory=list)
    windows: tuple = ()
    count: list = field(default_factory=list)
    total: list = field(default_factory=list)
    next_update: float = 0.0


@dataclass(frozen=True)
class MeasuredServiceWindows(ServiceWindows):
    """Seed 003's multi-service window with MEASURED response times (``--control adaptive-windows``).

    The paper's ws_i in (5) sum_i S_i ws_i = R and (6) alpha_ik = ws_i / ws_k is "the mean response time of
    service i" as seen by the front end (admission -> response), which under load includes the queueing in the
    back end, not only the processing time h_i. Reconstructed rule (the OCR states the quantities, not the
    procedure; the period and the smoothing are our assumptions, exposed as parameters):

    * every ``update`` seconds (at the first detector tick at or after it), for each service i with at least
      one response completed since the last update, ws_i <- (1 - beta) ws_i + beta * mean_i (exponential
      smoothing, beta = ``smoothing`` in (0, 1]; beta = 1: the last period's mean alone); a service without
      responses keeps its ws_i. Start: ws_i = h_i (the static allocation of :class:`ServiceWindows`);
    * at every detector tick the total window R = w_max - level moves one step as in :class:`AdaptiveWindow`
      and the windows are recomputed from (5), (6) with the current ws_i: n_i = S_i ws_i with
      S_i = s_i R / sum_j s_j ws_j, rounded by largest remainders (:func:`service_windows`), so sum n_i = R.

    Why it is fairer: with every window busy, Little's law gives the admitted rate of service i as
    n_i / ws_i = S_i, proportional to s_i whatever the queueing delay, while the static windows n_i ~ s_i h_i
    give n_i / (h_i + W) and favour the long services once calls wait W > 0.
    """

    update: object = 1.0
    smoothing: object = 0.5
    name = "adaptive windows"

    def __post_init__(self):
        super().__post_init__()
        if not float(exact(self.update, "update")) > 0:
            raise ParameterError("update", "must be > 0", self.update)
        if not 0 < float(exact(self.smoothing, "smoothing")) <= 1:
            raise ParameterError("smoothing", "must lie in (0, 1]", self.smoothing)

    def state(self, sources: int) -> _MeasuredState:
        m = len(self.holdings)
        ws = [float(h) for h in self.holdings]
        return _MeasuredState(level=self.initial_level, last_admit=[-math.inf] * sources, ws=ws,
                              windows=ServiceWindows.windows(self, self.initial_level), count=[0] * m,
                              total=[0.0] * m, next_update=float(self.update))

    def total_window(self, level: int) -> int:
        """R at control level ``level``."""
        return self.w_max - level if self.adaptive else self.w_initial

    def observe(self, st: _MeasuredState, service: int, response: float) -> None:
        """A response of ``service`` after ``response`` seconds in the SCP."""
        st.count[service] += 1
        st.total[service] += response

    def tick(self, st: _MeasuredState, t: float) -> None:
        """The detector tick at time t (after the level moved): smooth ws_i if an update is due, then the
        windows n_i of (5), (6) at R(level) and the current ws_i."""
        if t >= st.next_update:
            beta = float(self.smoothing)
            for i, k in enumerate(st.count):
                if k:
                    st.ws[i] = (1 - beta) * st.ws[i] + beta * st.total[i] / k
                st.count[i], st.total[i] = 0, 0.0
            st.next_update = t + float(self.update)
        ws = tuple(Fraction(w).limit_denominator(10**9) or Fraction(1, 10**9) for w in st.ws)
        st.windows = service_windows(self.total_window(st.level), self.ratios, ws)

    def admits(self, st, t, source, service, inside, u):
        return inside[service] < st.windows[service]

    def describe(self, level):
        return f"total window {self.total_window(level)}"


def fairness_index(throughputs, ratios, num=float):
    """Jain's index of the throughputs x_i normalised by the operator's ratios s_i (services with s_i > 0):
    J = (sum y_i)^2 / (m sum y_i^2), y_i = x_i / s_i; 1 exactly when x_1 : ... : x_m = s_1 : ... : s_m,
    1/m when one service takes everything. ``num`` converts the exact ratios (``ctx.num`` in an engine)."""
    y = [x / num(r) for x, r in zip(throughputs, ratios) if r > 0]
    top = sum(y) ** 2
    bottom = len(y) * sum(v * v for v in y)
    return top / bottom if bottom > 0 else math.nan


def effectiveness(goodputs, holdings, servers) -> float:
    """The share of the processing capacity spent on calls answered within the timeout:
    sum_i goodput_i h_i / c (c processors); NaN with an infinite-server back end."""
    if servers is None:
        return math.nan
    return math.fsum(float(g) * float(h) for g, h in zip(goodputs, holdings)) / servers


# -- one run --------------------------------------------------------------------------------------------

#: the measures of one run, in order
MEASURES = ("offered_rate", "throughput", "goodput", "mean_response", "admitted_fraction", "blocking", "mean_level")


@dataclass(frozen=True)
class RunResult:
    """Measures of one run after the warm-up (rates per second, times in seconds); NaN where undefined
    (no completion, no arrival) -- :func:`replicate` leaves such runs out of the estimate."""

    offered_rate: float
    throughput: float
    goodput: float
    mean_response: float
    admitted_fraction: float
    blocking: float
    mean_level: float


def simulate_run(config: SCPConfig, control: Control, arrival_rate, seed) -> RunResult:
    """One seeded run of the SCP with ``control`` at total Poisson rate ``arrival_rate`` (calls/s).

    ``seed``: an int or a :class:`numpy.random.SeedSequence` (the same seed gives the same run).
    One service of mean processing ``config.holding``: :func:`simulate_services` with one class.
    """
    lam = exact(arrival_rate, "arrival_rate")
    if not lam > 0:
        raise ParameterError("arrival_rate", "must be > 0", decimal_text(lam))
    total, _ = simulate_services(config, control, ((lam, config.holding),), seed)
    return total


def simulate_services(config: SCPConfig, control: Control, services, seed) -> tuple[RunResult, list]:
    """One seeded run with several services: ``services`` = ((rate_i, holding_i), ...) -- Poisson arrivals
    of rate lambda_i (calls/s) and exponential processing of mean h_i (s) per service, one FIFO back end.

    Returns (the :class:`RunResult` of all calls, one :class:`RunResult` per service; a service's
    ``mean_level`` is the control's). With one service the random streams are those of
    :func:`simulate_run`; with several, each call's service is drawn with probability lambda_i / lambda.
    A control with ``per_service`` (:class:`ServiceWindows`) decides by the call's service and the number
    of calls of each service in the SCP; the others by the total number.
    """
    rates = [float(exact(r, "rate")) for r, _ in services]
    holds = [float(exact(h, "holding")) for _, h in services]
    m = len(services)
    lam = sum(rates)
    T, warm = float(config.horizon), float(config.warmup)
    dt, tau, tout = float(config.interval), float(config.threshold), float(config.timeout)
    rng = np.random.default_rng(seed)
    n_max = int(lam * T + 10 * math.sqrt(lam * T) + 100)
    times = np.cumsum(rng.exponential(1 / lam, n_max))
    times = times[times < T]
    n = len(times)
    src = rng.integers(0, config.sources, n).tolist()
    if m == 1:
        kind = [0] * n
        serv = rng.exponential(holds[0], n).tolist()
    else:
        kinds = rng.choice(m, size=n, p=np.asarray(rates) / lam)
        serv = (rng.exponential(1.0, n) * np.asarray(holds)[kinds]).tolist()
        kind = kinds.tolist()
    unif = rng.random(n).tolist()
    times = times.tolist()

    st = control.state(config.sources)
    admits = control.admits
    per_service = getattr(control, "per_service", False)
    observe = getattr(control, "observe", None)  # measured response times (MeasuredServiceWindows)
    levels = control.levels
    infinite = config.servers is None
    reject_cost = float(config.rejection_cost) if control.at_scp else 0.0
    free = [0.0] * (config.servers or 0)  # heap of processor free times (all free at 0)
    busy = []  # heap of (departure, admission, service) of the calls in the SCP
    inside = [0] * m  # calls of each service in the SCP
    next_tick = dt
    win_n = 0
    win_sum = 0.0
    arrivals, admitted, completed, timely = [0] * m, [0] * m, [0] * m, [0] * m
    resp_sum = [0.0] * m
    level_time = 0.0
    heappop, heappush = heapq.heappop, heapq.heappush

    def drain(until):
        nonlocal win_n, win_sum
        while busy and busy[0][0] <= until:
            dep, adm, c = heappop(busy)
            inside[c] -= 1
            r = dep - adm
            win_n += 1
            win_sum += r
            if observe is not None:
                observe(st, c, r)
            if dep >= warm:
                completed[c] += 1
                resp_sum[c] += r
                if r <= tout:
                    timely[c] += 1

    for j in range(n):
        t = times[j]
        while next_tick <= t:
            drain(next_tick)
            overloaded = (win_sum / win_n > tau) if win_n else bool(busy)
            if overloaded and st.level < levels - 1:
                st.level += 1
            elif not overloaded and st.level > 0:
                st.level -= 1
            if observe is not None:
                control.tick(st, next_tick)
            if next_tick > warm:
                level_time += st.level
            win_n, win_sum = 0, 0.0
            next_tick += dt
        drain(t)
        c = kind[j]
        counted = t >= warm
        if counted:
            arrivals[c] += 1
        ok = admits(st, t, src[j], c, inside, unif[j]) if per_service else admits(st, t, src[j], len(busy), unif[j])
        if not ok:
            if reject_cost and not infinite:  # the SCP spends processing on the refusal
                heapq.heapreplace(free, max(t, free[0]) + reject_cost * serv[j])
            continue
        if counted:
            admitted[c] += 1
        if infinite:
            dep = t + serv[j]
        else:
            start = max(t, free[0])
            dep = start + serv[j]
            heapq.heapreplace(free, dep)
        heappush(busy, (dep, t, c))
        inside[c] += 1
    drain(T)
    span = T - warm
    mean_level = level_time / max(1, int(span / dt))

    def result(arr, adm, done, ok, rsum):
        return RunResult(
            offered_rate=arr / span,
            throughput=done / span,
            goodput=ok / span,
            mean_response=rsum / done if done else math.nan,
            admitted_fraction=adm / arr if arr else math.nan,
            blocking=1 - adm / arr if arr else math.nan,
            mean_level=mean_level,
        )

    per = [result(arrivals[i], admitted[i], completed[i], timely[i], resp_sum[i]) for i in range(m)]
    return result(sum(arrivals), sum(admitted), sum(completed), sum(timely), math.fsum(resp_sum)), per


# -- replications -----------------------------------------------------------------------------------------


def _estimate(values) -> Estimate:
    """Mean over the runs where the measure is defined, standard error s/sqrt(R) (the jackknife of a mean)."""
    vals = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if len(vals) == 0:
        return Estimate(None, None, 0)
    if len(vals) < 2:
        return Estimate(float(vals[0]), None, 0)
    return Estimate(float(vals.mean()), float(vals.std(ddof=1)) / math.sqrt(len(vals)), len(vals) - 1)


def replicate_services(config: SCPConfig, control: Control, services, ratios, replications: int,
                       seed: int = 1) -> dict:
    """``replications`` independent runs of :func:`simulate_services` (children of ``SeedSequence(seed)``).

    Returns measure -> :class:`Estimate`: the :data:`MEASURES` of all calls, the same per service with the
    suffix ``_i`` (i = 1..m), ``fairness`` (:func:`fairness_index` of the throughputs against ``ratios``)
    and ``effectiveness`` (:func:`effectiveness`), each estimated over the runs.
    """
    _integer(replications, "replications", 2)
    holdings = [h for _, h in services]
    children = np.random.SeedSequence(seed).spawn(replications)
    runs = [simulate_services(config, control, services, child) for child in children]
    out = {name: _estimate([getattr(total, name) for total, _ in runs]) for name in MEASURES}
    for i in range(len(services)):
        for name in MEASURES:
            if name != "mean_level":
                out[f"{name}_{i + 1}"] = _estimate([getattr(per[i], name) for _, per in runs])
    out["fairness"] = _estimate([fairness_index([p.throughput for p in per], ratios) for _, per in runs])
    out["effectiveness"] = _estimate([effectiveness([p.goodput for p in per], holdings, config.servers)
                                      for _, per in runs])
    return out


def model_control(model) -> Control:
    """The :class:`Control` of a :class:`~qderive.symbolic.models.scp_window.SCPWindowModel`."""
    from ...symbolic.models.scp_window import SCPControl

    kind = model.control
    if kind is SCPControl.ADAPTIVE_WINDOWS:
        return MeasuredServiceWindows(ratios=model.allocation, holdings=model.holdings, w_max=model.w_max,
                                      w_initial=model.windows, update=model.update, smoothing=model.smoothing)
    if kind in (SCPControl.SERVICE_WINDOWS, SCPControl.FIXED_WINDOWS):
        return ServiceWindows(ratios=model.allocation, holdings=model.holdings, w_max=model.w_max,
                              w_initial=model.windows, adaptive=kind is SCPControl.SERVICE_WINDOWS)
    if kind is SCPControl.WINDOW:
        return AdaptiveWindow(w_max=model.w_max, w_initial=model.windows)
    if kind is SCPControl.GAPPING:
        return CallGapping()
    if kind is SCPControl.PERCENTAGE:
        return PercentageThrottling()
    return NoControl()


def simulate_model(model, customers: int = 200_000, replications: int = 10, seed=None, warmup: float = 0.1,
                   quiet: bool = True):
    """``qderive simulate scp-window``: :func:`replicate_services` for the model's services and control.

    Each replication runs until about ``customers`` calls have arrived (horizon = customers / sum lambda_i),
    the first fraction ``warmup`` of the horizon discarded. Returns a
    :class:`~qderive.numeric.simulation.stats.SimulationResult` (measures with Student-t 95% intervals).
    """
    import time

    from .stats import SimulationResult

    _integer(customers, "customers", 1)
    _integer(replications, "replications", 2)
    from ...symbolic import limits as _limits

    _limits.check("customers", customers * replications, "calls simulated in all replications")
    lam = sum(Fraction(r) for r in model.rates)
    horizon = Fraction(customers) / lam
    config = SCPConfig(servers=model.servers or None, holding=model.holdings[0], sources=model.sources,
                       interval=model.interval, threshold=model.threshold, timeout=model.timeout,
                       horizon=horizon, warmup=horizon * Fraction(warmup).limit_denominator(10**6),
                       rejection_cost=model.rejection_cost)
    entropy = np.random.SeedSequence(seed).entropy if seed is None else seed
    start = time.perf_counter()
    services = tuple(zip(model.rates, model.holdings))
    est = replicate_services(config, model_control(model), services, model.allocation, replications, entropy)
    notes = [f"control: {model.control.value}; horizon {float(horizon):.4g} s per replication"]
    if not model.servers:
        notes.append("effectiveness needs a finite number of processors (--servers N, N >= 1)")
    return SimulationResult(model.name, est, customers, int(customers * warmup), replications, int(entropy),
                            time.perf_counter() - start, tuple(notes))


def replicate(config: SCPConfig, control: Control, arrival_rate, replications: int, seed: int = 1) -> dict:
    """``replications`` independent runs (children of ``SeedSequence(seed)``): measure -> Estimate."""
    _integer(replications, "replications", 2)
    children = np.random.SeedSequence(seed).spawn(replications)
    runs = [simulate_run(config, control, arrival_rate, child) for child in children]
    return {name: _estimate([getattr(r, name) for r in runs]) for name in MEASURES}
