"""Simulation of the hysteretic overload control: M[X]|G|1|(L,H)|(H,R) and M|M|1 with bi-level hysteresis.

The model (``docs/theory/chapter3.md`` sections 0-1; ``docs/theory/other-models.md`` B): batches arrive as
a Poisson process whose rate lambda_s depends on the control mode s (0 normal, 1 overload,
2 discard with lambda_2 = 0); one server; at most R customers in the system, the one in
service included; a batch that does not fit is partially admitted (fill up to R, lose the
rest). An empty server waits for the next batch at the rate of the current mode.

When the mode changes:

* :class:`~qderive.symbolic.models.hysteretic.HystereticModel` -- ``--policy departure``: only
  at departures, by the model's own rule
  :meth:`~qderive.symbolic.models.hysteretic.HystereticModel.next_state` (event or left
  convention) applied to the count n^- just before the departure; ``--policy instant``: at
  once, up when an arrival brings the count to H (normal -> overload) or R (-> discard, also
  directly from normal), down when a departure leaves L - 1 (overload -> normal) or H
  (discard -> overload);
* :class:`~qderive.symbolic.models.hysteretic.MM1HystereticModel` -- at once, by its rules
  ``mode_after_arrival`` / ``mode_after_departure``: the arrival rate changes at the switching
  instant (inter-arrival times are redrawn: Poisson arrivals are memoryless). Single arrivals,
  exponential service of rate mu.

Measures (the keys of ``qderive eval``) over the measurement window: ``p_normal``,
``p_overload``, ``p_discard`` as fractions of time with interval semantics (the mode whose
arrival rate is in force) or, when the model asks for it, label semantics (in a mode-0
interval the label is 0 while the count < H, 1 while < R, 2 after; in a mode-1 interval 1
while < R, then 2); ``mean_cycle_time`` = window / entries into mode 0 (renewal reward: a
control cycle runs from one entry into mode 0 to the next), ``mean_normal_time`` = time
labelled normal / entries (the idle periods included: the corrected (21)),
``mean_return_time`` = the rest / entries (undefined when no cycle completes);
``mean_time_between_mode_changes`` (hysteretic model) = window / changes of the mode in force;
``loss_probability`` = the offered customers (rate lambda_0 l_1 in every mode) not served:
the overflow at R counted customer by customer, the throttled traffic as its conditional
expectation given the mode path, l_1 sum_s (lambda_0 - lambda_s) T_s (Rao-Blackwellised:
same mean, smaller variance); ``throughput`` = served customers per unit time. Intervals:
:mod:`qderive.numeric.simulation.stats` (independent replications, jackknife, Student t).
"""

from __future__ import annotations

import math
from collections import deque
from fractions import Fraction

import numpy as np

from ...symbolic.batches.finite import Constant
from ...symbolic.capabilities import declare
from ...symbolic.errors import ParameterError
from ...symbolic.laws.gamma import Exponential
from ...symbolic.models.hysteretic import (
    HystereticModel,
    MM1HystereticModel,
    Policy,
    Semantics,
)
from .stats import (
    KernelSpec,
    SampleRequest,
    SimulationResult,
    run_replications,
    sampler,
    value_stream,
)

__all__ = ["simulate", "kernel_spec"]

_ACCUMULATORS = ("time", "served", "lost", "cycles", "t0", "t1", "t2", "l0", "l1", "l2", "changes")
_CYCLE_NOTE = "no control cycle (return to normal mode) completed: the cycle is longer than the simulated time"


def _label(s, c, H, R):
    """Label of count c during an interval of mode s (``docs/theory/chapter3.md`` section 4)."""
    if s == 0:
        return 0 if c < H else (1 if c < R else 2)
    if s == 1:
        return 1 if c < R else 2
    return 2


def _tables(model):
    """(mode after an arrival brings the count to n, mode after a departure from count n^-, label), by [s][n]."""
    R = model.R
    if isinstance(model, MM1HystereticModel):
        arrive = [[model.mode_after_arrival(s, n) for n in range(R + 1)] for s in range(3)]
        depart = [[model.mode_after_departure(s, max(n - 1, 0)) for n in range(R + 1)] for s in range(3)]
    elif model.policy is Policy.INSTANT:
        H, L = model.H, model.L
        # up at arrivals: count >= H in normal -> overload, count R -> discard (from normal too)
        arrive = [[(2 if n >= R else 1 if n >= H else 0) if s == 0 else (2 if s == 1 and n >= R else s)
                   for n in range(R + 1)] for s in range(3)]
        # down at departures from count n (n - 1 left): overload -> normal at L - 1, discard -> overload at H
        depart = [[0 if s == 1 and n - 1 <= L - 1 else 1 if s == 2 and n - 1 <= H else s for n in range(R + 1)]
                  for s in range(3)]
    else:
        arrive = [[s] * (R + 1) for s in range(3)]
        depart = [[s] + [model.next_state(n, s)[1] for n in range(1, R + 1)] for s in range(3)]
    label = [[_label(s, c, model.H, R) for c in range(R + 1)] for s in range(3)]
    return arrive, depart, label


def _laws(model):
    """(batch law, service law, (lambda_0, lambda_1, lambda_2)) as the simulator sees the model."""
    if isinstance(model, MM1HystereticModel):
        return Constant(1), Exponential(Fraction(1) / model.service_rate), model.rates()
    return model.batch, model.service, (model.rate, model.rate1, Fraction(0))


def _loop(rng, model, record: bool = False):
    """The event loop as a generator: ``send(n)`` serves up to n customers in total, returns the accumulators.

    With ``record`` the admitted customers' arrival epochs are kept FIFO (a batch as [epoch, customers
    admitted]) and every service start records the wait (start minus arrival) and the sojourn (its end minus
    arrival) of the customer at the head; ``send(None)`` finishes with ``{"wait": array, "sojourn": array}``
    in service order (:class:`~qderive.numeric.simulation.stats.KernelSpec`). The same random numbers are drawn."""
    batch, service, rates = _laws(model)
    exps = value_stream(lambda g, n: g.standard_exponential(n), rng)
    sizes = value_stream(sampler(batch, "batch"), rng)
    services = value_stream(sampler(service, "service"), rng)
    next_e, next_x, next_s = exps.__next__, sizes.__next__, services.__next__
    scale = [0.0 if r == 0 else 1 / float(r) for r in rates]  # mean inter-arrival time per mode, 0: none
    after_arrival, after_departure, label = _tables(model)
    cap = model.R
    inf = math.inf

    t = tl = 0.0
    n = 0  # customers in the system, the one in service included
    s = 0  # control mode
    served = lost = cycles = changes = 0
    tm = [0.0, 0.0, 0.0]  # time per mode (interval semantics)
    tlab = [0.0, 0.0, 0.0]  # time per label
    na = next_e() * scale[0]
    fifo, waits, sojourns = deque(), [], []  # recording only: [arrival epoch, customers left] per batch
    target = yield
    while True:
        if target is None and record:
            return {"wait": np.array(waits, dtype=np.float64), "sojourn": np.array(sojourns, dtype=np.float64)}
        while served < target:
            if n == 0:  # idle until the next batch (mode 0 has a positive rate)
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
                if record:
                    fifo.append([t, n])
                new = after_arrival[s][n]
                if new != s:
                    changes += 1
                    s = new
                sc = scale[s]
                na = t + next_e() * sc if sc else inf
            end = t + next_s()
            if record:  # the head of the FIFO starts its service now
                head = fifo[0]
                waits.append(t - head[0])
                sojourns.append(end - head[0])
                head[1] -= 1
                if not head[1]:
                    fifo.popleft()
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
                if record and x and room:
                    fifo.append([na, min(x, room)])
                new = after_arrival[s][n]  # instantaneous switching changes the rate of the next arrival
                if new != s:
                    changes += 1
                    s = new
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
                changes += 1
                s = new
                sc = scale[s]
                na = t + next_e() * sc if sc else inf
        target = yield (t, served, lost, cycles, tm[0], tm[1], tm[2], tlab[0], tlab[1], tlab[2], changes)


def _measures(model, label: bool) -> dict:
    out = _control_measures(model, label)
    if isinstance(model, HystereticModel):
        out["mean_time_between_mode_changes"] = lambda a: a["time"] / a["changes"]
    return out


def _control_measures(model, label: bool) -> dict:
    k0, k1, k2 = (f"{'l' if label else 't'}{i}" for i in range(3))
    batch, _, rates = _laws(model)
    lam = [float(r) for r in rates]
    l1 = float(batch.mean)
    throttle = [(lam[0] - lam[s]) / lam[0] for s in range(3)]  # throttled fraction of the offered traffic
    offered = lam[0] * l1

    def loss(a):
        return (throttle[1] * a["t1"] + throttle[2] * a["t2"]) / a["time"] + a["lost"] / (offered * a["time"])

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


def kernel_spec(model) -> KernelSpec:
    """The event loop and measure table of a hysteretic model for :func:`run_replications`."""
    if not isinstance(model, (HystereticModel, MM1HystereticModel)):
        raise ParameterError(f"simulate: {type(model).__name__} is not a hysteretic model")
    if isinstance(model, HystereticModel) and model.thesis_form:
        raise ParameterError("thesis-form", "has no simulated counterpart: a simulation measures the true E tau_0 "
                             "(the corrected (21))", True)
    label = isinstance(model, HystereticModel) and model.semantics is Semantics.LABEL
    return KernelSpec(
        model=model.name,
        accumulators=_ACCUMULATORS,
        start=lambda rng: _loop(rng, model),
        measures=_measures(model, label),
        samples=("wait", "sojourn"),
        start_recording=lambda rng: _loop(rng, model, record=True),
        undefined_notes={**{k: _CYCLE_NOTE for k in ("mean_normal_time", "mean_return_time", "mean_cycle_time")},
                         "mean_time_between_mode_changes": "no mode change occurred in the simulated time"},
    )


@declare(independent={"thesis_form": "it selects the engine's formula for E tau_0 (the thesis's (21)); the simulation "
                                     "measures E tau_0 itself"})
def simulate(model, customers: int = 200_000, replications: int = 10, seed: int | None = None, *,
             warmup: float = 0.1, quiet: bool = False, wait_tail=(), wait_quantile=(), wait_moments: int = 0,
             sojourn_tail=(), sojourn_quantile=(), sojourn_moments: int = 0) -> SimulationResult:
    """Simulate a hysteretic model: mode probabilities, cycle times, loss and throughput with 95 % intervals.

    ``customers`` are served in each of ``replications`` independent runs started empty in
    normal mode; the first ``warmup`` fraction is discarded (:mod:`.stats`). Cycle measures are
    renewal-reward ratios (``docs/theory/chapter3.md`` section 7). ``wait_tail``, ..., ``sojourn_moments``: the
    waits and sojourns of the admitted customers (FIFO), with the estimators of :class:`.stats.SampleRequest`.
    """
    requests = (SampleRequest.parse("wait", wait_tail, wait_quantile, wait_moments),
                SampleRequest.parse("sojourn", sojourn_tail, sojourn_quantile, sojourn_moments))
    return run_replications(kernel_spec(model), customers, replications, seed, warmup, quiet, samples=requests)
