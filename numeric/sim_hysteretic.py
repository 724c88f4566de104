"""Simulation of M[X]|G|1|(L,H)|(H,R): hysteretic overload control (chapter 3).

Model (``spec/chapter3.md`` sections 0-1; ``spec/other-models.md`` B for the
instantaneous rule): batches arrive as a Poisson process whose rate lambda_s depends on
the control mode s (0 normal, 1 overload, 2 discard; by default lambda_2 = 0); one
server with general service times; the system holds at most R customers **including
the one in service**; an arriving batch that does not fit is partially admitted (fill
up to R, lose the rest). Thresholds 0 <= L < H < R. No vacations: an empty server
waits for the next batch at the rate of the current mode.

Switching conventions (:class:`SwitchingConvention`), n^- = the count just before a
departure (= the largest count reached during that service), j = n^- - 1 left behind:

* ``EVENT`` (the spec's default, reproduces the index structure of (16), (20)): the
  mode changes only at departures. s=0: n^- >= R -> 2, else n^- >= H -> 1, else 0;
  s=1: n^- >= R -> 2, else j <= L-1 -> 0, else 1; s=2: j <= H -> 1, else 2.
* ``LEFT``: decisions on the left-behind count only. s=0: j >= R-1 -> 2, j >= H -> 1;
  s=1: j >= R-1 -> 2, j <= L-1 -> 0; s=2: j <= H -> 1.
* ``INSTANT`` (``other-models.md`` B, the M|M|1 model of seed 002): the mode follows the
  count at once. After an arrival: s=0: n >= R -> 2, else n >= H -> 1; s=1: n >= R -> 2.
  After a departure: s=2 and n <= H -> 1; s=1 and n <= L-1 -> 0. The arrival rate
  changes at the switching instant (inter-arrival times are redrawn: Poisson arrivals
  are memoryless).

Measures (JSON keys of ``qderive eval hysteretic``) over the measurement window:

* ``p_normal``, ``p_overload``, ``p_discard``: fractions of time in each mode, with
  :class:`ModeSemantics` ``INTERVAL`` (the mode whose arrival rate is in force, (18),
  (19)) or ``LABEL`` (the label of ``spec/chapter3.md`` section 4: in a mode-0 service
  the label is 0 while the count < H, 1 while < R, 2 after; in a mode-1 service 1 while
  < R, then 2; mode 2 is label 2; idle time is labelled by its mode);
* ``mean_cycle_time`` E tau: window length / number of entries into mode 0 (a control
  cycle runs from one entry into mode 0 to the next; renewal-reward, section 7);
  ``mean_normal_time`` E tau_0 = time labelled normal / entries, ``mean_return_time``
  E tau_12 = the rest of the time / entries. E tau_0 includes the idle periods (the
  corrected (21) of section 6). Undefined (None) when no cycle completes: for
  rho_0 well below 1 a cycle is astronomically long;
* ``loss_probability``: the fraction of the **offered** customers (rate lambda_0 l1 in
  every mode) that are not served: the traffic throttled by the control
  ((lambda_0 - lambda_s) l1 per unit time in mode s, interval semantics) plus the
  customers lost at the capacity R. The overflow is counted customer by customer; the
  throttled part is its conditional expectation given the simulated mode path,
  l1 sum_s (lambda_0 - lambda_s) T_s (a Rao-Blackwellised count: same mean, smaller
  variance); divided by lambda_0 l1 times the window length;
* ``throughput``: served customers per unit time.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import sympy as sp

from qderive.symbolic._exact import ParameterError, exact, require_positive
from qderive.symbolic.batches import BatchLaw
from qderive.symbolic.laws import TimeLaw

from .sim_sampling import batch_sampler, time_sampler, to_float, value_stream
from .sim_stats import KernelSpec, SimulationResult, run_replications, integer_thresholds

__all__ = [
    "SwitchingConvention",
    "ModeSemantics",
    "SimHysteresisModel",
    "simulate_hysteretic",
    "hysteretic_kernel_spec",
]


class SwitchingConvention(enum.Enum):
    """When and on which count the control mode changes (module docstring)."""

    EVENT = "event"
    LEFT = "left"
    INSTANT = "instant"


class ModeSemantics(enum.Enum):
    """Which mode a moment of time is counted in (``spec/chapter3.md`` sections 4-5)."""

    INTERVAL = "interval"
    LABEL = "label"


@dataclass(frozen=True)
class SimHysteresisModel:
    """M[X]|G|1|(L,H)|(H,R) as the simulator sees it.

    ``rate_normal`` lambda_0 > 0 and ``rate_overload`` 0 <= lambda_1 <= lambda_0 (batches
    per unit time, exact), ``rate_discard`` 0 <= lambda_2 <= lambda_0 (default 0, the thesis), ``batch`` and
    ``service`` law objects, ``thresholds`` (L, H, R) integers with 0 <= L < H < R, R the
    capacity including the customer in service, ``convention`` a :class:`SwitchingConvention`.
    """

    rate_normal: sp.Expr
    rate_overload: sp.Expr
    batch: BatchLaw
    service: TimeLaw
    thresholds: tuple[int, int, int]
    convention: SwitchingConvention = SwitchingConvention.EVENT
    rate_discard: sp.Expr = 0

    def __post_init__(self):
        object.__setattr__(self, "rate_normal", require_positive(exact(self.rate_normal, "rate_normal"), "rate_normal"))
        for name in ("rate_overload", "rate_discard"):
            value = exact(getattr(self, name), name)
            if not bool(value >= 0):
                raise ParameterError(f"{name} = {value}: must be >= 0")
            object.__setattr__(self, name, value)
        if not isinstance(self.batch, BatchLaw) or not isinstance(self.service, TimeLaw):
            raise ParameterError("batch must be a batch law and service a time law")
        batch_sampler(self.batch, "batch law")
        time_sampler(self.service, "service law")
        try:
            object.__setattr__(self, "convention", SwitchingConvention(self.convention))
        except ValueError:
            raise ParameterError(f"convention = {self.convention!r}: must be a SwitchingConvention") from None
        low, high, cap = integer_thresholds(self.thresholds)
        if not (0 <= low < high < cap):
            raise ParameterError(f"thresholds must satisfy 0 <= L < H < R, got L={low}, H={high}, R={cap}")
        object.__setattr__(self, "thresholds", (low, high, cap))
        for name in ("rate_overload", "rate_discard"):
            if bool(getattr(self, name) > self.rate_normal):
                raise ParameterError(
                    f"{name} = {getattr(self, name)} > rate_normal = {self.rate_normal}: "
                    "the control may only throttle the offered traffic"
                )
        if low == 0 and self.rate_overload == 0:
            raise ParameterError("L = 0 with rate_overload = 0: the empty system in overload mode would wait forever")

    @property
    def rates(self) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
        return (self.rate_normal, self.rate_overload, self.rate_discard)


# -- switching rules, written once per convention and tabulated over the count ------------


def _no_change(s, n, low, high, cap):
    return s


def _event_departure(s, n_minus, low, high, cap):
    j = n_minus - 1
    if s == 0:
        return 2 if n_minus >= cap else (1 if n_minus >= high else 0)
    if s == 1:
        return 2 if n_minus >= cap else (0 if j <= low - 1 else 1)
    return 1 if j <= high else 2


def _left_departure(s, n_minus, low, high, cap):
    j = n_minus - 1
    if s == 0:
        return 2 if j >= cap - 1 else (1 if j >= high else 0)
    if s == 1:
        return 2 if j >= cap - 1 else (0 if j <= low - 1 else 1)
    return 1 if j <= high else 2


def _instant_arrival(s, n, low, high, cap):
    if s == 0:
        return 2 if n >= cap else (1 if n >= high else 0)
    if s == 1:
        return 2 if n >= cap else 1
    return s


def _instant_departure(s, n_minus, low, high, cap):
    n = n_minus - 1
    if s == 2 and n <= high:
        return 1
    if s == 1 and n <= low - 1:
        return 0
    return s


#: convention -> (mode after an arrival brings the count to n, mode after a departure from count n^-)
_RULES = {
    SwitchingConvention.EVENT: (_no_change, _event_departure),
    SwitchingConvention.LEFT: (_no_change, _left_departure),
    SwitchingConvention.INSTANT: (_instant_arrival, _instant_departure),
}


def _label(s, c, low, high, cap):
    """Label of count c during an interval of mode s (``spec/chapter3.md`` section 4)."""
    if s == 0:
        return 0 if c < high else (1 if c < cap else 2)
    if s == 1:
        return 1 if c < cap else 2
    return 2


def _tables(model: SimHysteresisModel):
    low, high, cap = model.thresholds
    on_arrival, on_departure = _RULES[model.convention]

    def tab(rule):
        return tuple(tuple(rule(s, c, low, high, cap) for c in range(cap + 1)) for s in range(3))

    return tab(on_arrival), tab(on_departure), tab(_label)


_ACCUMULATORS = ("time", "served", "lost", "cycles", "t0", "t1", "t2", "l0", "l1", "l2")


def _hysteresis_loop(rng, model: SimHysteresisModel):
    """The event loop as a generator: ``send(n)`` serves up to n customers, returns the accumulators."""
    exps = value_stream(lambda g, n: g.standard_exponential(n), rng)
    sizes = value_stream(batch_sampler(model.batch), rng)
    services = value_stream(time_sampler(model.service), rng)
    next_e, next_x, next_s = exps.__next__, sizes.__next__, services.__next__
    scale = [0.0 if r == 0 else 1 / to_float(r, "rate") for r in model.rates]  # mean inter-arrival, 0: none
    after_arrival, after_departure, label = _tables(model)
    cap = model.thresholds[2]
    inf = math.inf

    t = tl = 0.0
    n = 0  # customers in the system, the one in service included
    s = 0  # control mode
    served = lost = cycles = 0
    tm = [0.0, 0.0, 0.0]  # time per mode (interval semantics)
    tlab = [0.0, 0.0, 0.0]  # time per label
    na = next_e() * scale[0]
    target = yield
    while True:
        while served < target:
            if n == 0:  # idle until the next batch (validation guarantees a positive rate here)
                dt = na - tl
                tm[s] += dt
                tlab[label[s][0]] += dt
                t = tl = na
                x = next_x()
                if x <= cap:
                    n = x
                else:
                    n = cap
                    lost += x - cap
                s = after_arrival[s][n]
                sc = scale[s]
                na = t + next_e() * sc if sc else inf
            end = t + next_s()
            while na <= end:
                dt = na - tl
                tm[s] += dt
                tlab[label[s][n]] += dt
                tl = na
                x = next_x()
                room = cap - n
                if x <= room:
                    n += x
                else:
                    n = cap
                    lost += x - room
                s = after_arrival[s][n]
                sc = scale[s]
                na = na + next_e() * sc if sc else inf
            dt = end - tl
            tm[s] += dt
            tlab[label[s][n]] += dt
            t = tl = end
            served += 1
            new = after_departure[s][n]
            n -= 1
            if new != s:
                if new == 0:
                    cycles += 1
                s = new
                sc = scale[s]
                na = t + next_e() * sc if sc else inf
        target = yield (t, served, lost, cycles, tm[0], tm[1], tm[2], tlab[0], tlab[1], tlab[2])


def _measures(model: SimHysteresisModel, semantics: ModeSemantics) -> dict:
    k0, k1, k2 = (f"{'t' if semantics is ModeSemantics.INTERVAL else 'l'}{i}" for i in range(3))
    lam = [to_float(r, "rate") for r in model.rates]
    l1 = to_float(model.batch.moment(1), "batch mean")
    # throttled customers per unit time in each (interval) mode, relative to the offered rate
    throttle = [(lam[0] - lam[s]) / lam[0] for s in range(3)]
    offered = lam[0] * l1

    def loss(a):
        throttled = throttle[1] * a["t1"] + throttle[2] * a["t2"]
        return throttled / a["time"] + a["lost"] / (offered * a["time"])

    return {
        "p_normal": lambda a: a[k0] / a["time"],
        "p_overload": lambda a: a[k1] / a["time"],
        "p_discard": lambda a: a[k2] / a["time"],
        "mean_normal_time": lambda a: a[k0] / a["cycles"],
        "mean_return_time": lambda a: (a["time"] - a[k0]) / a["cycles"],
        "mean_cycle_time": lambda a: a["time"] / a["cycles"],
        "loss_probability": loss,
        "throughput": lambda a: a["served"] / a["time"],
    }


_CYCLE_NOTE = "no control cycle (return to normal mode) completed: the cycle is longer than the simulated time"


def hysteretic_kernel_spec(model: SimHysteresisModel, semantics: ModeSemantics = ModeSemantics.INTERVAL) -> KernelSpec:
    """The event loop and measure table of ``model`` for :func:`~qderive.numeric.sim_stats.run_replications`."""
    return KernelSpec(
        model="hysteretic",
        accumulators=_ACCUMULATORS,
        start=lambda rng: _hysteresis_loop(rng, model),
        measures=_measures(model, ModeSemantics(semantics)),
        undefined_notes={k: _CYCLE_NOTE for k in ("mean_normal_time", "mean_return_time", "mean_cycle_time")},
    )


def simulate_hysteretic(
    model: SimHysteresisModel,
    customers: int,
    replications: int = 10,
    seed: int | None = None,
    *,
    semantics: ModeSemantics = ModeSemantics.INTERVAL,
    warmup: float = 0.1,
    quiet: bool = False,
) -> SimulationResult:
    """Simulate M[X]|G|1|(L,H)|(H,R): mode probabilities, cycle times, loss, throughput with 95 % intervals.

    ``customers`` are served in each of ``replications`` independent runs started empty in
    normal mode; the first ``warmup`` fraction is discarded. Intervals: independent
    replications, jackknife standard errors, Student t (:mod:`qderive.numeric.sim_stats`).
    Cycle measures are renewal-reward ratios (``spec/chapter3.md`` section 7).
    """
    return run_replications(hysteretic_kernel_spec(model, semantics), customers, replications, seed, warmup, quiet)
