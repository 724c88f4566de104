"""Discrete-event model of an SCP under overload: adaptive window vs ITU-T call gapping and percentage throttling.

Seed 003 (Wang & Liao) proposes an adaptive window at the SCP front end: each BEGIN
message takes one of n windows until its response; a response-time detector shrinks
the window when responses slow down (overload) and widens it when they are normal,
so that n_min = n_max - 1 at the optimum (``spec/other-models.md`` section D). The
paper claims it is more robust than the two ITU-T INAP controls, Call Gapping and
percentage throttling (ActivateServiceFilter), "by theory and simulation". This module
is a small, seeded simulation to test that claim:

* calls arrive as ``sources`` independent Poisson streams (the SSPs), total rate lambda;
* the SCP back end is ``servers`` processors with one FIFO queue and exponential
  processing of mean ``holding`` (``servers=None``: an infinite-server back end, so a window
  control is exactly the M/M/n/n loss system of the paper's eq. (1));
* the response time of a call is admission -> completion; every ``interval`` seconds the
  detector compares the mean response time of the calls completed in that interval with
  ``threshold`` and moves the control one level tighter (overload) or looser (normal);
* the controls share the detector and differ only in how a level restricts admission:

  - :class:`NoControl`: every call admitted;
  - :class:`AdaptiveWindow`: at most w calls in the SCP, level j gives w = w_max - j;
  - :class:`CallGapping`: per source, after an admitted call, calls are refused for g
    seconds; level j gives g = g_min 2^((j-1)/s) (level 0: no gap);
  - :class:`PercentageThrottling`: each call admitted with probability 1 - j*step.

One run returns throughput (completions per second), goodput (completions within the
SSP ``timeout``), mean response time and the admitted fraction, measured after a warm-up;
:func:`replicate` runs independent replications (seeds ``seed, seed+1, ...``, the same
random numbers for every control: common random numbers) and gives 95% Student-t
confidence intervals.

The event loop is arrival-driven: departures are kept in a heap and processed lazily
before each arrival, the FIFO multi-server back end by the Kiefer-Wolfowitz recursion
(a heap of the times at which each processor becomes free). Pure Python + numpy random
streams: about 12 ms for a 120 s run at 300 offered calls/s (docs/performance.md).

Floats are fine here (a simulation); parameters are accepted as exact numbers or ints
like everywhere else and converted once.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from qderive.symbolic._exact import ParameterError, exact

__all__ = [
    "SCPConfig",
    "Control",
    "NoControl",
    "AdaptiveWindow",
    "FixedWindow",
    "CallGapping",
    "PercentageThrottling",
    "RunResult",
    "Estimate",
    "simulate_run",
    "replicate",
    "t_quantile",
]


def _pos_float(value, name, allow_zero=False) -> float:
    v = exact(value, name)
    if v.free_symbols or not (bool(v >= 0) if allow_zero else bool(v > 0)):
        raise ParameterError(f"{name} = {value}: must be a number {'>= 0' if allow_zero else '> 0'}")
    return float(v)


@dataclass(frozen=True)
class SCPConfig:
    """The SCP, its callers and the response-time detector (times in seconds).

    Defaults: 4 processors, 40 ms mean processing (capacity 100 calls/s), 10 SSPs,
    detector interval 0.5 s and threshold 0.1 s (2.5 mean processing times), SSP timeout
    0.5 s, horizon 120 s of which 20 s warm-up. ``rejection_cost``: processing a call refused
    AT THE SCP still takes this fraction of its processing time (FIFO, like any message); calls
    refused at the SSP (call gapping, percentage) cost the SCP nothing.
    """

    servers: int | None = 4
    holding: object = Fraction(1, 25)
    sources: int = 10
    interval: object = Fraction(1, 2)
    threshold: object = Fraction(1, 10)
    timeout: object = Fraction(1, 2)
    horizon: object = 120
    warmup: object = 20
    rejection_cost: object = 0


    def __post_init__(self):
        if self.servers is not None and not (isinstance(self.servers, int) and self.servers >= 1):
            raise ParameterError(f"servers = {self.servers}: must be an integer >= 1 or None (infinite)")
        if not (isinstance(self.sources, int) and self.sources >= 1):
            raise ParameterError(f"sources = {self.sources}: must be an integer >= 1")
        for name in ("holding", "interval", "threshold", "timeout", "horizon"):
            _pos_float(getattr(self, name), name)
        _pos_float(self.rejection_cost, "rejection_cost", allow_zero=True)
        warm = _pos_float(self.warmup, "warmup", allow_zero=True)
        if not warm < _pos_float(self.horizon, "horizon"):
            raise ParameterError(f"warmup = {self.warmup}: must be < horizon = {self.horizon}")

    @property
    def capacity(self) -> float:
        """Calls per second the back end completes when saturated: servers / holding."""
        if self.servers is None:
            return math.inf
        return self.servers / float(self.holding)


# -- controls ------------------------------------------------------------------------------------
class Control:
    """An admission control driven by a level 0..levels-1 (0: loosest). Subclasses define ``admits``."""

    name = "control"
    levels = 1
    initial_level = 0
    #: True when calls are refused by the SCP itself (they then cost ``SCPConfig.rejection_cost``)
    at_scp = False

    def state(self, sources: int) -> "_State":
        """Fresh mutable run state (a control object itself is immutable and reusable)."""
        return _State(level=self.initial_level, last_admit=[-math.inf] * sources)

    def admits(self, st: "_State", t: float, source: int, in_system: int, u: float) -> bool:
        raise NotImplementedError

    def describe(self, level: int) -> str:
        return f"level {level}"


@dataclass
class _State:
    level: int
    last_admit: list = field(default_factory=list)


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
        if not (isinstance(self.w_max, int) and 1 <= self.w_initial <= self.w_max):
            raise ParameterError(f"window: need 1 <= w_initial <= w_max, got {self.w_initial}, {self.w_max}")

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
        if not (0 < self.g_min < self.g_max and isinstance(self.steps_per_doubling, int)
                and self.steps_per_doubling >= 1):
            raise ParameterError(f"call gapping: need 0 < g_min < g_max and an integer steps_per_doubling >= 1, "
                                 f"got {self.g_min}, {self.g_max}, {self.steps_per_doubling}")

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
    """ITU-T percentage throttling (ActivateServiceFilter): admit with probability 1 - level*step."""

    step: float = 0.05
    name = "percentage"

    def __post_init__(self):
        if not (0 < self.step <= 0.5):
            raise ParameterError(f"percentage: step = {self.step}: must lie in (0, 0.5]")

    @property
    def levels(self):
        return int(round(1 / self.step))  # down to one step above 0

    def admits(self, st, t, source, in_system, u):
        return u < 1.0 - st.level * self.step

    def describe(self, level):
        return f"admit {100 * (1 - level * self.step):.0f}%"


# -- one run ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunResult:
    """Measures of one run after the warm-up (rates per second, times in seconds)."""

    offered_rate: float
    throughput: float
    goodput: float
    mean_response: float
    admitted_fraction: float
    blocking: float
    mean_level: float


def simulate_run(config: SCPConfig, control: Control, arrival_rate, seed: int) -> RunResult:
    """One seeded run of the SCP with ``control`` at total Poisson rate ``arrival_rate`` (calls/s)."""
    lam = _pos_float(arrival_rate, "arrival_rate")
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
    busy = []  # heap of (departure, admission) of calls in the SCP
    next_tick = dt
    win_n = 0
    win_sum = 0.0
    # post-warm-up accumulators
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


# -- replications and confidence intervals ---------------------------------------------------------
def t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t with ``df`` degrees of freedom (mpmath: regularised incomplete beta)."""
    if df < 1:
        raise ParameterError(f"df = {df}: need at least 2 replications")
    with mpmath.workdps(20):
        cdf = lambda x: 1 - mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, df / (df + x * x), regularized=True) / 2  # noqa: E731
        z = mpmath.findroot(lambda x: cdf(x) - p, 2)
        return float(z)


@dataclass(frozen=True)
class Estimate:
    """Mean over replications and the half-width of its 95% Student-t confidence interval."""

    mean: float
    half_width: float
    values: tuple

    @classmethod
    def of(cls, values) -> "Estimate":
        vals = np.asarray(values, dtype=float)
        vals = vals[~np.isnan(vals)]
        if len(vals) < 2:
            return cls(float(vals.mean()) if len(vals) else math.nan, math.inf, tuple(vals))
        half = t_quantile(0.975, len(vals) - 1) * float(vals.std(ddof=1)) / math.sqrt(len(vals))
        return cls(float(vals.mean()), half, tuple(vals))

    def contains(self, x: float) -> bool:
        return abs(x - self.mean) <= self.half_width


def replicate(config: SCPConfig, control: Control, arrival_rate, replications: int, seed: int = 1) -> dict:
    """``replications`` independent runs (seeds seed..seed+R-1): a dict measure -> :class:`Estimate`."""
    if not (isinstance(replications, int) and replications >= 2):
        raise ParameterError(f"replications = {replications}: must be an integer >= 2")
    runs = [simulate_run(config, control, arrival_rate, seed + i) for i in range(replications)]
    return {name: Estimate.of([getattr(r, name) for r in runs]) for name in RunResult.__dataclass_fields__}
