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
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.base import Request
from qderive.symbolic.numbers import decimal_text, exact
from qderive.symbolic.params import Kind, param

from .stats import Estimate

__all__ = ["SCPConfig", "Control", "NoControl", "AdaptiveWindow", "FixedWindow", "CallGapping",
           "PercentageThrottling", "RunResult", "simulate_run", "replicate", "MEASURES"]


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
    """
    lam = exact(arrival_rate, "arrival_rate")
    if not lam > 0:
        raise ParameterError("arrival_rate", "must be > 0", decimal_text(lam))
    lam = float(lam)
    T, warm = float(config.horizon), float(config.warmup)
    h, dt, tau, tout = (float(config.holding), float(config.interval), float(config.threshold),
                        float(config.timeout))
    rng = np.random.default_rng(seed)
    n_max = int(lam * T + 10 * math.sqrt(lam * T) + 100)
    times = np.cumsum(rng.exponential(1 / lam, n_max))
    times = times[times < T]
    n = len(times)
    src = rng.integers(0, config.sources, n).tolist()
    serv = rng.exponential(h, n).tolist()
    unif = rng.random(n).tolist()
    times = times.tolist()

    st = control.state(config.sources)
    admits = control.admits
    levels = control.levels
    infinite = config.servers is None
    reject_cost = float(config.rejection_cost) if control.at_scp else 0.0
    free = [0.0] * (config.servers or 0)  # heap of processor free times (all free at 0)
    busy = []  # heap of (departure, admission) of the calls in the SCP
    next_tick = dt
    win_n = 0
    win_sum = 0.0
    arrivals = admitted = completed = timely = 0
    resp_sum = 0.0
    level_time = 0.0
    heappop, heappush = heapq.heappop, heapq.heappush

    def drain(until):
        nonlocal win_n, win_sum, completed, timely, resp_sum
        while busy and busy[0][0] <= until:
            dep, adm = heappop(busy)
            r = dep - adm
            win_n += 1
            win_sum += r
            if dep >= warm:
                completed += 1
                resp_sum += r
                if r <= tout:
                    timely += 1

    for j in range(n):
        t = times[j]
        while next_tick <= t:
            drain(next_tick)
            overloaded = (win_sum / win_n > tau) if win_n else bool(busy)
            if overloaded and st.level < levels - 1:
                st.level += 1
            elif not overloaded and st.level > 0:
                st.level -= 1
            if next_tick > warm:
                level_time += st.level
            win_n, win_sum = 0, 0.0
            next_tick += dt
        drain(t)
        counted = t >= warm
        if counted:
            arrivals += 1
        if not admits(st, t, src[j], len(busy), unif[j]):
            if reject_cost and not infinite:  # the SCP spends processing on the refusal
                heapq.heapreplace(free, max(t, free[0]) + reject_cost * serv[j])
            continue
        if counted:
            admitted += 1
        if infinite:
            dep = t + serv[j]
        else:
            start = max(t, free[0])
            dep = start + serv[j]
            heapq.heapreplace(free, dep)
        heappush(busy, (dep, t))
    drain(T)
    span = T - warm
    ticks = max(1, int(span / dt))
    return RunResult(
        offered_rate=arrivals / span,
        throughput=completed / span,
        goodput=timely / span,
        mean_response=resp_sum / completed if completed else math.nan,
        admitted_fraction=admitted / arrivals if arrivals else math.nan,
        blocking=1 - admitted / arrivals if arrivals else math.nan,
        mean_level=level_time / ticks,
    )


# -- replications -----------------------------------------------------------------------------------------


def _estimate(values) -> Estimate:
    """Mean over the runs where the measure is defined, standard error s/sqrt(R) (the jackknife of a mean)."""
    vals = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if len(vals) == 0:
        return Estimate(None, None, 0)
    if len(vals) < 2:
        return Estimate(float(vals[0]), None, 0)
    return Estimate(float(vals.mean()), float(vals.std(ddof=1)) / math.sqrt(len(vals)), len(vals) - 1)


def replicate(config: SCPConfig, control: Control, arrival_rate, replications: int, seed: int = 1) -> dict:
    """``replications`` independent runs (children of ``SeedSequence(seed)``): measure -> Estimate."""
    _integer(replications, "replications", 2)
    children = np.random.SeedSequence(seed).spawn(replications)
    runs = [simulate_run(config, control, arrival_rate, child) for child in children]
    return {name: _estimate([getattr(r, name) for r in runs]) for name in MEASURES}
