"""Simulation of the two-class SIP server models: seed 001 (threshold modes) and seed 002 (hysteretic input).

Seed 001 is a continuous-time Markov chain: its loop draws the time to the next event
(total rate: the arrival rates in force plus the service rate in force) and its kind
from pre-drawn exponential and uniform blocks (:func:`~qderive.numeric.simulation.stats.value_stream`);
the seed-002 loop is event-driven (below). Both keep the waiting customers' arrival times per class, so sojourn times are measured
customer by customer (not by Little). The rules are the model's
(:mod:`qderive.symbolic.models.two_flow`): :meth:`Mode.accepts` decides admission in
seed 001, :meth:`TwoFlowHystereticModel.rate` gives the rates by mode in seed 002.

``simulate`` (two-flow) measures, with the JSON keys of ``qderive eval two-flow``:
throughput per class (departures per unit time), rejection per class (rejected /
arrived), mean sojourn per class and overall (of the customers that departed), the
fractions of time in each mode and the mean return time (time outside mode 0 / number
of returns to mode 0). ``simulate_hysteretic`` (two-flow-hysteretic): mode fractions,
loss per flow (1 - served / offered arrivals, where offered arrivals are those of the
normal-mode rate: an arrival of the normal-rate stream is thinned by the mode's rate,
exactly the throttling of the model), throughput, mean number, mean sojourn, and the
mean normal, return and cycle times (times / number of completed periods). Its loop is
event-driven: each service time is drawn when the service starts (from the law of
``--service LAW``, the same for both flows, or the exponential law of the flow's rate mu_c),
the offered arrivals form one Poisson stream of rate lambda_1^(0) + lambda_2^(0) (thinned by
the mode as above).

Method (independent replications from an empty system, warm-up, jackknife intervals):
:mod:`qderive.numeric.simulation.stats`.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction

import numpy as np

from ...symbolic.capabilities import declare
from ...symbolic.errors import ParameterError
from ...symbolic.laws.gamma import Exponential
from ...symbolic.models.two_flow import (
    Algorithm,
    InputMode,
    Mode,
    TwoFlowHystereticModel,
    TwoFlowModel,
)
from .stats import (
    KernelSpec,
    SampleRequest,
    SimulationResult,
    run_replications,
    sampler,
    value_stream,
)

__all__ = ["simulate", "simulate_hysteretic", "two_flow_spec", "hysteretic_spec"]


def _rate(value, name: str, zero_ok: bool = False) -> float:
    """A rate as a float64 for the event loop (the simulator runs in float64), or a clear error."""
    try:
        f = float(value)
    except OverflowError:
        f = float("inf")
    if not (f < float("inf") and (f > 2.2250738585072014e-308 or (zero_ok and value == 0))):
        import mpmath

        with mpmath.workdps(20):
            shown = mpmath.nstr(mpmath.mpf(value.numerator) / value.denominator, 6)
        raise ParameterError(name, "is outside the float64 range: the simulator runs in float64 (rescale the time "
                             "unit)", shown)
    return f


def _streams(rng):
    exps = value_stream(lambda g, n: g.standard_exponential(n), rng)
    unifs = value_stream(lambda g, n: g.random(n), rng)
    return exps.__next__, unifs.__next__


# --------------------------------------------------------------------------------------
# two-flow (seed 001)
# --------------------------------------------------------------------------------------

_TWO_FLOW_ACC = ("time", "served", "served1", "served2", "arrived1", "arrived2", "rejected1", "rejected2",
                 "sojourn1", "sojourn2", "t0", "t1", "t2", "returns")


def _two_flow_loop(rng, model: TwoFlowModel, record: bool = False):
    """The event loop as a generator: ``send(n)`` runs until n customers are served, returns the accumulators.

    With ``record``, the wait (service start minus arrival) and the sojourn of every customer served, in
    service order, are kept, and ``send(None)`` finishes with ``{"wait": array, "sojourn": array}``
    (:class:`~qderive.numeric.simulation.stats.KernelSpec`); the random numbers drawn are the same."""
    next_e, next_u = _streams(rng)
    lam1, lam2 = (_rate(v, n) for v, n in zip(model.arrival_rates, ("lambda_invite", "lambda_non_invite")))
    lam = lam1 + lam2
    mu = tuple(tuple(_rate(model.service_rate(m, c), "service rate") for c in (1, 2)) for m in Mode)
    accept = tuple(tuple(m.accepts(c) for c in (1, 2)) for m in Mode)
    low, high, cap = model.L, model.H, model.R
    priority = model.algorithm is Algorithm.PRIORITY
    q0, q1 = deque(), deque()  # arrival times of the waiting customers of each class
    queues = (q0, q1)
    t, n, s = 0.0, 0, 0
    busy, c_in, a_in = False, 0, 0.0
    served = returns = 0
    done, arrived, rejected = [0, 0], [0, 0], [0, 0]
    sojourn, tm = [0.0, 0.0], [0.0, 0.0, 0.0]
    waits, sojourns = [], []
    target = yield
    while True:
        if target is None and record:
            return {"wait": np.array(waits, dtype=np.float64), "sojourn": np.array(sojourns, dtype=np.float64)}
        while served < target:
            rate = lam + mu[s][c_in] if busy else lam
            dt = next_e() / rate
            t += dt
            tm[s] += dt
            u = next_u() * rate
            if u < lam:  # an arrival
                c = 0 if u < lam1 else 1
                arrived[c] += 1
                if accept[s][c] and n < cap:
                    n += 1
                    if busy:
                        queues[c].append(t)
                    else:
                        busy, c_in, a_in = True, c, t
                        if record:
                            waits.append(0.0)
                    if n > high:
                        s = 2
                else:
                    rejected[c] += 1
            else:  # a departure
                done[c_in] += 1
                sojourn[c_in] += t - a_in
                if record:
                    sojourns.append(t - a_in)
                served += 1
                n -= 1
                if s == 2 and n == high:
                    s = 1
                elif s == 1 and n == low - 1:
                    s = 0
                    returns += 1
                if n == 0:
                    busy = False
                elif q1 and (not q0 or (priority and s != 0) or q1[0] < q0[0]):
                    c_in, a_in = 1, q1.popleft()
                else:
                    c_in, a_in = 0, q0.popleft()
                if record and n:
                    waits.append(t - a_in)
        target = yield (t, served, done[0], done[1], arrived[0], arrived[1], rejected[0], rejected[1],
                        sojourn[0], sojourn[1], tm[0], tm[1], tm[2], returns)


_TWO_FLOW_MEASURES = {
    "throughput_invite": lambda a: a["served1"] / a["time"],
    "throughput_non_invite": lambda a: a["served2"] / a["time"],
    "rejection_invite": lambda a: a["rejected1"] / a["arrived1"],
    "rejection_non_invite": lambda a: a["rejected2"] / a["arrived2"],
    "mean_sojourn_invite": lambda a: a["sojourn1"] / a["served1"],
    "mean_sojourn_non_invite": lambda a: a["sojourn2"] / a["served2"],
    "mean_sojourn": lambda a: (a["sojourn1"] + a["sojourn2"]) / a["served"],
    "p_mode0": lambda a: a["t0"] / a["time"],
    "p_mode1": lambda a: a["t1"] / a["time"],
    "p_mode2": lambda a: a["t2"] / a["time"],
    "mean_return_time": lambda a: (a["time"] - a["t0"]) / a["returns"],
}


def two_flow_spec(model: TwoFlowModel) -> KernelSpec:
    """The event loop and measure table of a :class:`TwoFlowModel`."""
    return KernelSpec(
        model=model.name, accumulators=_TWO_FLOW_ACC, start=lambda rng: _two_flow_loop(rng, model),
        measures=_TWO_FLOW_MEASURES, samples=("wait", "sojourn"),
        start_recording=lambda rng: _two_flow_loop(rng, model, record=True),
        undefined_notes={
            "mean_return_time": "the server never returned to normal mode in the measured time",
            "rejection_invite": "no INVITE arrived",
            "rejection_non_invite": "no non-INVITE arrived",
            "mean_sojourn_invite": "no INVITE was served",
            "mean_sojourn_non_invite": "no non-INVITE was served",
        })


@declare(independent={"solver": "it chooses the linear solver of the engine's chain; the simulation solves no chain"})
def simulate(model: TwoFlowModel, customers: int, replications: int = 10, seed: int | None = None, *,
             warmup: float = 0.1, quiet: bool = False, wait_tail=(), wait_quantile=(), wait_moments: int = 0,
             sojourn_tail=(), sojourn_quantile=(), sojourn_moments: int = 0) -> SimulationResult:
    """Simulate the two-flow server (``qderive simulate two-flow``): ``customers`` departures per replication.

    ``wait_tail``, ..., ``sojourn_moments``: the per-customer waits and sojourns of the admitted customers
    of both classes in service order (a random admitted message, as the ``response`` of the model), with
    the estimators of :class:`~qderive.numeric.simulation.stats.SampleRequest`."""
    return run_replications(two_flow_spec(model), customers, replications, seed, warmup, quiet, tuple(model.notes()),
                            samples=_requests(wait_tail, wait_quantile, wait_moments, sojourn_tail, sojourn_quantile,
                                              sojourn_moments))


def _requests(wait_tail, wait_quantile, wait_moments, sojourn_tail, sojourn_quantile, sojourn_moments):
    return (SampleRequest.parse("wait", wait_tail, wait_quantile, wait_moments),
            SampleRequest.parse("sojourn", sojourn_tail, sojourn_quantile, sojourn_moments))


# --------------------------------------------------------------------------------------
# two-flow-hysteretic (seed 002)
# --------------------------------------------------------------------------------------

_HYST_ACC = ("time", "served1", "served2", "offered1", "offered2", "sojourn1", "sojourn2", "area1", "area2",
             "t0", "t1", "t2", "normal_periods", "normal_time_done", "returns", "overload_time_done")


def _hysteretic_loop(rng, model: TwoFlowHystereticModel, record: bool = False):
    """Event loop of seed 002: offered arrivals at the normal rates, thinned by the mode's rate (throttling);
    each service time drawn when the service starts, from the law of ``--service`` or the exponential law
    of the flow's rate mu_c.

    ``record``: as :func:`_two_flow_loop` (waits and sojourns in service order, ``send(None)`` finishes).

    Time in mode 0 counts towards ``normal_time_done`` when the period ends (a switch to overload),
    overload time when the server returns to mode 0, so the periods are measured whole.
    """
    next_e, next_u = _streams(rng)
    if model.service is not None:
        draw = value_stream(sampler(model.service, "service"), rng).__next__
        next_s = (draw, draw)
    else:
        next_s = tuple(value_stream(sampler(Exponential(1 / Fraction(mu)), "service"), rng).__next__
                       for mu in model.service_rates)
        for mu in model.service_rates:
            _rate(mu, "service_rates")
    lam = [[_rate(model.rate(m, c), f"lambda{c}_{m.name.lower()}", zero_ok=m is not InputMode.NORMAL)
            for c in (1, 2)] for m in InputMode]
    lam1, lam2 = lam[0]
    offer = lam1 + lam2
    L, H, R = model.L, model.H, model.R
    inf = float("inf")
    q1, q2 = deque(), deque()
    t, n, s = 0.0, 0, 0
    k, a_in = 0, 0.0
    served, offered = [0, 0], [0, 0]
    sojourn, area, tm = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0, 0.0]
    counts = [0, 0]
    period_start = 0.0
    normal_periods = returns = 0
    normal_done = overload_done = 0.0
    total = 0
    waits, sojourns = [], []
    na, end = next_e() / offer, inf
    target = yield
    while True:
        if target is None and record:
            return {"wait": np.array(waits, dtype=np.float64), "sojourn": np.array(sojourns, dtype=np.float64)}
        while total < target:
            nxt = na if na <= end else end
            dt = nxt - t
            t = nxt
            tm[s] += dt
            area[0] += counts[0] * dt
            area[1] += counts[1] * dt
            if na <= end:  # an offered arrival
                na = t + next_e() / offer
                c = 0 if next_u() * offer < lam1 else 1
                offered[c] += 1
                base = lam1 if c == 0 else lam2
                if n < R and next_u() * base < lam[s][c]:
                    n += 1
                    counts[c] += 1
                    if k:
                        (q1 if c == 0 else q2).append(t)
                    else:
                        k, a_in = c + 1, t
                        if record:
                            waits.append(0.0)
                        end = t + next_s[c]()
                    if s == 0 and n == H:
                        s = 1
                        if returns:
                            normal_done += t - period_start
                            normal_periods += 1
                        period_start = t
                    elif s == 1 and n == R:
                        s = 2
            else:  # the departure of the customer in service (flow k)
                served[k - 1] += 1
                sojourn[k - 1] += t - a_in
                if record:
                    sojourns.append(t - a_in)
                counts[k - 1] -= 1
                total += 1
                n -= 1
                if s == 1 and n == L - 1:
                    s = 0
                    overload_done += t - period_start
                    returns += 1
                    period_start = t
                elif s == 2 and n == H:
                    s = 1
                if q1:
                    k, a_in = 1, q1.popleft()
                elif q2:
                    k, a_in = 2, q2.popleft()
                else:
                    k = 0
                if record and k:
                    waits.append(t - a_in)
                end = t + next_s[k - 1]() if k else inf
        target = yield (t, served[0], served[1], offered[0], offered[1], sojourn[0], sojourn[1], area[0], area[1],
                        tm[0], tm[1], tm[2], normal_periods, normal_done, returns, overload_done)


_HYST_MEASURES = {
    "p_mode0": lambda a: a["t0"] / a["time"],
    "p_mode1": lambda a: a["t1"] / a["time"],
    "p_mode2": lambda a: a["t2"] / a["time"],
    "loss_flow1": lambda a: 1 - a["served1"] / a["offered1"],
    "loss_flow2": lambda a: 1 - a["served2"] / a["offered2"],
    "throughput_flow1": lambda a: a["served1"] / a["time"],
    "throughput_flow2": lambda a: a["served2"] / a["time"],
    "mean_number_flow1": lambda a: a["area1"] / a["time"],
    "mean_number_flow2": lambda a: a["area2"] / a["time"],
    "mean_sojourn_flow1": lambda a: a["sojourn1"] / a["served1"],
    "mean_sojourn_flow2": lambda a: a["sojourn2"] / a["served2"],
    "mean_normal_time": lambda a: a["normal_time_done"] / a["normal_periods"],
    "mean_return_time": lambda a: a["overload_time_done"] / a["returns"],
    "mean_cycle_time": lambda a: a["normal_time_done"] / a["normal_periods"] + a["overload_time_done"] / a["returns"],
}


def hysteretic_spec(model: TwoFlowHystereticModel) -> KernelSpec:
    """The event loop and measure table of a :class:`TwoFlowHystereticModel`."""
    return KernelSpec(
        model=model.name, accumulators=_HYST_ACC, start=lambda rng: _hysteretic_loop(rng, model),
        measures=_HYST_MEASURES, samples=("wait", "sojourn"),
        start_recording=lambda rng: _hysteretic_loop(rng, model, record=True),
        undefined_notes={
            "mean_normal_time": "no normal-mode period ended in the measured time",
            "mean_return_time": "the server never returned to normal mode in the measured time",
            "mean_cycle_time": "no complete normal or overload period in the measured time",
            "mean_sojourn_flow1": "no flow-1 customer was served",
            "mean_sojourn_flow2": "no flow-2 customer was served",
        })


def simulate_hysteretic(model: TwoFlowHystereticModel, customers: int, replications: int = 10,
                        seed: int | None = None, *, warmup: float = 0.1, quiet: bool = False, wait_tail=(),
                        wait_quantile=(), wait_moments: int = 0, sojourn_tail=(), sojourn_quantile=(),
                        sojourn_moments: int = 0) -> SimulationResult:
    """Simulate seed 002 (``qderive simulate two-flow-hysteretic``): ``customers`` departures per replication;
    the sample options as :func:`simulate` (admitted customers of both flows, in service order)."""
    return run_replications(hysteretic_spec(model), customers, replications, seed, warmup, quiet,
                            samples=_requests(wait_tail, wait_quantile, wait_moments, sojourn_tail, sojourn_quantile,
                                              sojourn_moments))
