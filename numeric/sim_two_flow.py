"""Simulation of the two-flow INVITE / non-INVITE SIP server (``spec/other-models.md`` C).

Model: class 1 = INVITE (Poisson rate lambda_1), class 2 = non-INVITE (Poisson lambda_2);
one server; exponential service with rate mu_c in mode 0 and mu'_c in modes 1, 2 (the
rate of the customer in service follows the current mode); n = number in the system
(the one in service included), buffer R (an arrival finding n = R is rejected).

Modes: 0 normal (accept both), 1 partial overload (accept class 2 only, answer class 1
with 503), 2 blocking (reject all). Switching on the count, instantaneous:
0 -> 2 and 1 -> 2 when an accepted arrival makes n = H + 1; 2 -> 1 when a departure
makes n = H; 1 -> 0 when a departure makes n = L - 1.

Algorithms (:class:`Algorithm`): ``FIFO`` always serves the oldest customer;
``PRIORITY`` serves FIFO in mode 0 and, in modes 1 and 2, the oldest class-2 customer
if there is one, else the oldest class-1 (non-preemptive). The choice is made when a
service starts, in the mode in force after the departure's switching.

The process is a continuous-time Markov chain; the loop draws the time to the next
event (total rate lambda_1 + lambda_2 + the service rate in force) and its kind from
pre-drawn exponential and uniform blocks, and keeps the waiting customers' arrival
times per class, so sojourn times are measured customer by customer.

Measures (JSON keys of ``qderive eval two-flow``) over the measurement window:
``throughput_invite`` / ``_non_invite`` (departures per unit time),
``rejection_invite`` / ``_non_invite`` (rejected / arrived, per class),
``mean_sojourn_invite`` / ``_non_invite`` / ``mean_sojourn`` (mean time from arrival
to departure of the customers that departed), ``p_mode0..2`` (fractions of time),
``mean_return_time`` (time outside mode 0 / number of returns to mode 0: the mean
time from leaving normal mode to re-entering it).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from qderive.symbolic._exact import ParameterError, exact

from .sim_sampling import to_float, value_stream
from .two_flow import Algorithm as _Algorithm
from .sim_stats import KernelSpec, SimulationResult, run_replications, integer_thresholds

__all__ = ["Algorithm", "SimTwoFlowModel", "simulate_two_flow", "two_flow_kernel_spec"]


# the service order is the analytic model's enum: one definition for both
Algorithm = _Algorithm


def _pair(values, name: str, positive: bool) -> tuple:
    if len(values) != 2:
        raise ParameterError(f"{name} = {values}: give two values (INVITE, non-INVITE)")
    out = []
    for label, v in zip(("INVITE", "non-INVITE"), values, strict=True):
        e = exact(v, f"{name} ({label})")
        if not (bool(e > 0) if positive else bool(e >= 0)):
            raise ParameterError(f"{name} ({label}) = {e}: must be {'> 0' if positive else '>= 0'}")
        out.append(e)
    return tuple(out)


@dataclass(frozen=True)
class SimTwoFlowModel:
    """The two-flow SIP server as the simulator sees it.

    ``arrival_rates`` (lambda_INVITE, lambda_non-INVITE) >= 0, not both 0;
    ``service_rates`` (mu_1, mu_2) > 0 in mode 0; ``overload_service_rates`` (mu'_1, mu'_2)
    in modes 1, 2 (None: the same as mode 0); ``thresholds`` (L, H, R) integers with
    1 <= L < H and R >= 1; ``algorithm`` an :class:`Algorithm`. All numbers exact.
    """

    arrival_rates: tuple
    service_rates: tuple
    thresholds: tuple[int, int, int]
    algorithm: Algorithm = Algorithm.FIFO
    overload_service_rates: tuple | None = None

    def __post_init__(self):
        lam = _pair(self.arrival_rates, "arrival_rates", positive=False)
        if lam[0] + lam[1] == 0:
            raise ParameterError("arrival_rates = (0, 0): at least one flow must arrive")
        object.__setattr__(self, "arrival_rates", lam)
        object.__setattr__(self, "service_rates", _pair(self.service_rates, "service_rates", positive=True))
        over = self.service_rates if self.overload_service_rates is None else self.overload_service_rates
        object.__setattr__(self, "overload_service_rates", _pair(over, "overload_service_rates", positive=True))
        try:
            object.__setattr__(self, "algorithm", Algorithm(self.algorithm))
        except ValueError:
            raise ParameterError(
                f"algorithm = {self.algorithm!r}: must be Algorithm.FIFO or Algorithm.PRIORITY"
            ) from None
        low, high, cap = integer_thresholds(self.thresholds)
        if not (1 <= low < high and cap >= 1):
            raise ParameterError(f"thresholds must satisfy 1 <= L < H and R >= 1, got L={low}, H={high}, R={cap}")
        object.__setattr__(self, "thresholds", (low, high, cap))

    @property
    def notes(self) -> tuple[str, ...]:
        """Messages for the user: the buffer R is never reached when R > H + 1."""
        _, high, cap = self.thresholds
        if cap > high + 1:
            return (f"R = {cap} > H + 1 = {high + 1}: the count never exceeds H + 1, so the buffer R does not bind",)
        return ()


_ACCUMULATORS = (
    "time", "served", "served1", "served2", "arrived1", "arrived2", "rejected1", "rejected2",
    "sojourn1", "sojourn2", "t0", "t1", "t2", "returns",
)  # fmt: skip


def _two_flow_loop(rng, model: SimTwoFlowModel):
    """The event loop as a generator: ``send(n)`` serves up to n customers, returns the accumulators."""
    exps = value_stream(lambda g, n: g.standard_exponential(n), rng)
    unifs = value_stream(lambda g, n: g.random(n), rng)
    next_e, next_u = exps.__next__, unifs.__next__
    lam1, lam2 = (to_float(v, "arrival rate") for v in model.arrival_rates)
    lam = lam1 + lam2
    normal = tuple(to_float(v, "service rate") for v in model.service_rates)
    over = tuple(to_float(v, "service rate") for v in model.overload_service_rates)
    mu = (normal, over, over)  # service rate by mode and class
    accept = ((True, True), (False, True), (False, False))  # by mode and class
    low, high, cap = model.thresholds
    priority = model.algorithm is Algorithm.PRIORITY
    q0, q1 = deque(), deque()  # arrival times of the waiting customers of each class
    queues = (q0, q1)

    t = 0.0
    n = 0
    s = 0
    busy = False
    c_in = 0  # class in service
    a_in = 0.0  # its arrival time
    served = returns = 0
    done = [0, 0]
    arrived = [0, 0]
    rejected = [0, 0]
    sojourn = [0.0, 0.0]
    tm = [0.0, 0.0, 0.0]
    target = yield
    while True:
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
                    if n > high:
                        s = 2
                else:
                    rejected[c] += 1
            else:  # a departure
                done[c_in] += 1
                sojourn[c_in] += t - a_in
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
        target = yield (
            t, served, done[0], done[1], arrived[0], arrived[1], rejected[0], rejected[1],
            sojourn[0], sojourn[1], tm[0], tm[1], tm[2], returns,
        )  # fmt: skip


_MEASURES = {
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


def two_flow_kernel_spec(model: SimTwoFlowModel) -> KernelSpec:
    """The event loop and measure table of ``model`` for :func:`~qderive.numeric.sim_stats.run_replications`."""
    return KernelSpec(
        model="two-flow",
        accumulators=_ACCUMULATORS,
        start=lambda rng: _two_flow_loop(rng, model),
        measures=_MEASURES,
        undefined_notes={
            "mean_return_time": "the server never returned to normal mode in the measured time",
            "rejection_invite": "no INVITE arrived",
            "rejection_non_invite": "no non-INVITE arrived",
            "mean_sojourn_invite": "no INVITE was served",
            "mean_sojourn_non_invite": "no non-INVITE was served",
        },
    )


def simulate_two_flow(
    model: SimTwoFlowModel,
    customers: int,
    replications: int = 10,
    seed: int | None = None,
    *,
    warmup: float = 0.1,
    quiet: bool = False,
) -> SimulationResult:
    """Simulate the two-flow SIP server: per-class throughput, rejection, sojourn, modes, return time.

    ``customers`` departures per replication, ``replications`` independent runs started
    empty in mode 0, the first ``warmup`` fraction of departures discarded; 95 % intervals
    by independent replications with jackknife standard errors (:mod:`qderive.numeric.sim_stats`).
    """
    return run_replications(two_flow_kernel_spec(model), customers, replications, seed, warmup, quiet, model.notes)
