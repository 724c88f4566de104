"""Simulation of M[X]/G/1/r with multiple vacations (or none): the chapter-2 model.

Model (``spec/chapter2.md`` sections 0 and 2, issue 3's variants): batches arrive as a
Poisson process of rate lambda with sizes X from a batch law; one server; service
times B and vacation times F from the time laws; a waiting room of r places that does
not count the customer in service (``capacity=None``: infinite).

* **Multiple vacations**: when the server finds the queue empty (at a service
  completion or at the end of a vacation) it starts a vacation; the queue is looked at
  again when the vacation ends. During a vacation every customer waits, so at most r
  are present. **No vacations** (``vacation=None``): the idle server waits for the next
  batch, whose first customer enters service at once (r + 1 places for that batch).
* **Admission**: ``PARTIAL`` (the thesis): a batch of k finding j waiting admits
  min(k, r - j) and loses the rest; ``WHOLE``: a batch that does not fit entirely is
  rejected entirely.

The event loop advances service by service (and vacation by vacation): a period of
length B (or F) starts, the batch arrivals falling inside it are taken from a
pre-drawn stream of exponential inter-arrival times and batch sizes (blocks of numpy
variates), each is admitted or lost, and the queue-length area is accumulated
piecewise; then the next period starts. There is no event heap: the only events
inside a period are arrivals, which are already in time order.

Measures (JSON keys of ``qderive eval vacation-finite`` / ``vacation-infinite``), all
over the measurement window after the warm-up (see :mod:`qderive.numeric.sim_stats`):

* ``loss_probability``: lost customers / arriving customers (Theorem 1.1, (12));
* ``batch_blocking_probability``: batches of which no customer was admitted / batches
  (partial admission: batches finding the room full; whole: rejected batches);
* ``idle_probability``: fraction of time the server is not serving (P^r_e, (11));
* ``mean_queue_length``: time-average number waiting (customer in service not counted);
* ``mean_wait``: mean wait of an accepted customer, by Little's law
  (queue area / accepted customers, the W^r of section 2);
* ``mean_number_in_system``: time-average number waiting or in service;
* ``throughput``: served customers per unit time;
* ``queue_length_variance`` (infinite room): time-average of Q^2 minus the square of
  the mean.

>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Exponential
>>> from qderive.symbolic.batches import Constant
>>> m = SimVacationModel(rate=Fraction(1, 2), batch=Constant(1), service=Exponential(1), capacity=2)
>>> res = simulate_vacation(m, customers=20_000, replications=4, seed=1, quiet=True)
>>> abs(res["loss_probability"].value - Fraction(1, 15)) < 0.02   # M/M/1/3: rho^3(1-rho)/(1-rho^4)
True
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import sympy as sp

from qderive.symbolic._exact import ParameterError, exact, require_positive
from qderive.symbolic.batches import BatchLaw
from qderive.symbolic.laws import TimeLaw

from .sim_sampling import batch_sampler, time_sampler, to_float, value_stream
from .sim_stats import KernelSpec, SimulationResult, run_replications
from .vacation import Admission  # one enum for the analytic engine and the simulator

__all__ = ["Admission", "SimVacationModel", "simulate_vacation", "vacation_kernel_spec"]

#: a waiting room larger than any queue a run can build: "infinite"
_UNBOUNDED = 1 << 62


@dataclass(frozen=True)
class SimVacationModel:
    """M[X]/G/1/r with multiple vacations or none, as the simulator sees it.

    ``rate`` is lambda (batches per unit time, exact), ``batch``, ``service`` and
    ``vacation`` are law objects (``vacation=None``: no vacations), ``capacity`` is the
    waiting room r (an int >= 0, the customer in service not counted; None = infinite),
    ``admission`` is :class:`Admission` (ignored when the room is infinite).
    """

    rate: sp.Expr
    batch: BatchLaw
    service: TimeLaw
    vacation: TimeLaw | None = None
    capacity: int | None = None
    admission: Admission = Admission.PARTIAL

    def __post_init__(self):
        object.__setattr__(self, "rate", require_positive(exact(self.rate, "rate"), "rate"))
        if not isinstance(self.batch, BatchLaw):
            raise ParameterError(f"batch = {self.batch!r}: must be a batch law")
        if not isinstance(self.service, TimeLaw):
            raise ParameterError(f"service = {self.service!r}: must be a time law")
        if self.vacation is not None and not isinstance(self.vacation, TimeLaw):
            raise ParameterError(f"vacation = {self.vacation!r}: must be a time law or None")
        try:
            object.__setattr__(self, "admission", Admission(self.admission))
        except ValueError:
            raise ParameterError(
                f"admission = {self.admission!r}: must be Admission.PARTIAL or Admission.WHOLE"
            ) from None
        # samplers refuse symbolic laws and parameters
        batch_sampler(self.batch, "batch law")
        time_sampler(self.service, "service law")
        if self.vacation is not None:
            time_sampler(self.vacation, "vacation law")
        to_float(self.rate, "rate")
        if self.capacity is not None:
            r = exact(self.capacity, "capacity")
            if not (r.is_Integer and r >= 0):
                raise ParameterError(f"capacity = {self.capacity}: the waiting room r must be an integer >= 0 or None")
            object.__setattr__(self, "capacity", int(r))
            if self.capacity == 0 and self.vacation is not None:
                raise ParameterError(
                    "capacity = 0 with vacations: nobody could wait for the vacation to end; use r >= 1 or no vacations"
                )
            if self.admission is Admission.WHOLE:  # else the loop would never serve anybody
                room = self.capacity if self.vacation is not None else self.capacity + 1
                smallest = next(i for i in range(1, 1 << 20) if self.batch.pmf(i) != 0)
                if smallest > room:
                    raise ParameterError(
                        f"capacity = {self.capacity}: under whole admission no batch ever fits "
                        f"(smallest batch {smallest} > {room} places); increase the capacity"
                    )
        elif not bool(self.offered_load < 1):
            raise ParameterError(
                f"rho_bar = {self.offered_load} >= 1: the infinite-buffer model has no stationary regime; "
                "use a finite capacity r"
            )

    @property
    def offered_load(self) -> sp.Expr:
        """rho_bar = lambda l1 b1 (``spec/chapter2.md`` section 0)."""
        return self.rate * self.batch.moment(1) * self.service.moment(1)

    @property
    def name(self) -> str:
        return "vacation-infinite" if self.capacity is None else "vacation-finite"


_ACCUMULATORS = ("time", "served", "arrived", "lost", "batches", "blocked", "busy", "area", "area2")


def _vacation_loop(rng, model: SimVacationModel):
    """The event loop as a generator: ``send(n)`` serves up to n customers, returns the accumulators."""
    lam = to_float(model.rate, "rate")
    interarrival = value_stream(lambda g, n: g.exponential(1 / lam, n), rng)
    sizes = value_stream(batch_sampler(model.batch), rng)
    services = value_stream(time_sampler(model.service), rng)
    vacations = None if model.vacation is None else value_stream(time_sampler(model.vacation), rng)
    next_e, next_x, next_s = interarrival.__next__, sizes.__next__, services.__next__
    next_v = None if vacations is None else vacations.__next__
    r = _UNBOUNDED if model.capacity is None else model.capacity
    partial = model.admission is Admission.PARTIAL
    vac = next_v is not None

    t = tl = 0.0  # clock; time up to which the areas are accumulated
    q = 0  # customers waiting (the one in service not counted)
    served = arrived = lost = batches = blocked = 0
    busy = area = area2 = 0.0
    na = next_e()  # next batch arrival
    target = yield
    while True:
        while served < target:
            if q == 0 and vac:
                end = t + next_v()
                serving = False
            else:
                if q == 0:  # no vacations: idle until the next batch, whose first customer starts service
                    t = tl = na
                    x = next_x()
                    arrived += x
                    batches += 1
                    if x <= r + 1:
                        q = x
                    elif partial:
                        q = r + 1
                        lost += x - r - 1
                    else:
                        lost += x
                        blocked += 1
                    na += next_e()
                    if q == 0:
                        continue
                q -= 1
                s = next_s()
                busy += s
                end = t + s
                serving = True
            while na <= end:  # batch arrivals during this service / vacation
                dt = na - tl
                area += q * dt
                area2 += q * q * dt
                tl = na
                x = next_x()
                arrived += x
                batches += 1
                room = r - q
                if x <= room:
                    q += x
                elif partial:
                    q = r
                    lost += x - room
                    if room == 0:
                        blocked += 1
                else:
                    lost += x
                    blocked += 1
                na += next_e()
            dt = end - tl
            area += q * dt
            area2 += q * q * dt
            t = tl = end
            if serving:
                served += 1
        target = yield (t, served, arrived, lost, batches, blocked, busy, area, area2)


_FINITE_MEASURES = {
    "loss_probability": lambda a: a["lost"] / a["arrived"],
    "batch_blocking_probability": lambda a: a["blocked"] / a["batches"],
    "idle_probability": lambda a: (a["time"] - a["busy"]) / a["time"],
    "mean_queue_length": lambda a: a["area"] / a["time"],
    "mean_wait": lambda a: a["area"] / (a["arrived"] - a["lost"]),
    "mean_number_in_system": lambda a: (a["area"] + a["busy"]) / a["time"],
    "throughput": lambda a: a["served"] / a["time"],
}

_INFINITE_MEASURES = {
    "idle_probability": _FINITE_MEASURES["idle_probability"],
    "mean_queue_length": _FINITE_MEASURES["mean_queue_length"],
    "mean_wait": _FINITE_MEASURES["mean_wait"],
    "queue_length_variance": lambda a: a["area2"] / a["time"] - (a["area"] / a["time"]) ** 2,
    "mean_number_in_system": _FINITE_MEASURES["mean_number_in_system"],
}


def vacation_kernel_spec(model: SimVacationModel) -> KernelSpec:
    """The event loop and measure table of ``model`` for :func:`~qderive.numeric.sim_stats.run_replications`."""
    return KernelSpec(
        model=model.name,
        accumulators=_ACCUMULATORS,
        start=lambda rng: _vacation_loop(rng, model),
        measures=_INFINITE_MEASURES if model.capacity is None else _FINITE_MEASURES,
        undefined_notes={"mean_wait": "no customer was accepted"},
    )


def simulate_vacation(
    model: SimVacationModel,
    customers: int,
    replications: int = 10,
    seed: int | None = None,
    *,
    warmup: float = 0.1,
    quiet: bool = False,
) -> SimulationResult:
    """Simulate M[X]/G/1/r with multiple vacations (or none): estimates with 95 % intervals.

    ``customers`` are served in each of ``replications`` independent runs started empty
    (the server starts a vacation at time 0, or waits idle without vacations); the first
    ``warmup`` fraction of them is discarded. Intervals: independent replications,
    jackknife standard errors, Student t (:mod:`qderive.numeric.sim_stats`).
    Measures: see the module docstring (chapter-2 measures, ``spec/chapter2.md``).
    """
    return run_replications(vacation_kernel_spec(model), customers, replications, seed, warmup, quiet)
