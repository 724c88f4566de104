"""Simulation of M[X]/G/1 and M[X]/G/1/r with multiple, single or no vacations (the chapter-2 models).

The model (``docs/theory/chapter2.md`` sections 0 and 2, and the variants of
:mod:`qderive.symbolic.models.vacation`) as a discrete-event simulation that shares nothing
with the formulas but the model object and its laws' own samplers (``law.sample``):
batches arrive as a Poisson process of rate lambda with sizes X; one server; service
times B and vacation times F; a waiting room of r places that does not count the customer
in service (:class:`~qderive.symbolic.models.vacation.VacationQueue`: infinite).

* :attr:`VacationPolicy.MULTIPLE` (the thesis): a server that finds the queue empty, at a
  service completion or at the end of a vacation, starts a vacation. During a vacation at
  most r customers are present.
* :attr:`VacationPolicy.SINGLE`: after a service that empties the queue the server takes
  one vacation; if the queue is still empty when it ends, the server idles until the next
  batch, whose first customer is served at once (that batch finds r + 1 places).
* No vacations (``vacation=None``): the idle server waits for the next batch, whose first
  customer is served at once (r + 1 places for that batch).
* :class:`Admission`: ``PARTIAL`` (the thesis) -- a batch of k finding room for m < k
  admits m and loses the rest; ``WHOLE`` -- a batch that does not fit is rejected entirely.
* The composed variants (a start threshold N > 1, a setup, a close-down: ``model.blocks``) run
  the stages of their idle passage in :mod:`qderive.numeric.simulation.blocks`, with the same
  accumulators and measures; the loop below is kept for today's variants (and their seeded numbers).

The event loop advances period by period (a service, a vacation or an idle wait): the
batch arrivals inside a period are taken from pre-drawn streams of inter-arrival times and
batch sizes (blocks of numpy variates, :func:`~qderive.numeric.simulation.stats.value_stream`),
each admitted or lost in time order; there is no event heap, since arrivals are the only
events inside a period. The time spent at each queue level and the queue level seen at
each embedded epoch are counted in two lists (one list subscript per segment, cheaper than
two running areas), from which every measure below is formed.

Measures (the JSON keys of ``qderive eval vacation-finite`` / ``vacation-infinite``), over
the measurement window after the warm-up (:mod:`qderive.numeric.simulation.stats`):

* ``loss_probability``: lost customers / arriving customers (Theorem 1.1, (12));
* ``batch_blocking_probability``: batches of which no customer was admitted / batches;
* ``idle_probability``: fraction of time the server is not serving (P^r_e, (11); 1 - rho_bar, (5));
* ``mean_queue_length``: time-average number waiting (the customer in service not counted);
* ``mean_wait``: mean wait of an admitted customer by Little's law (queue area / admitted);
* ``mean_number_in_system``: time-average number waiting or in service;
* ``throughput``: served customers per unit time;
* ``p0``, ``pr``: fractions of time with an empty / a full waiting room ((9), (10));
* ``q0``, ``qr``: fractions of embedded epochs with an empty / a full queue (Statement 1;
  (3) for the infinite room). The embedded epochs are the service completions and the
  vacation ends, except that under single vacations a vacation that ends with an empty
  queue is followed by the idle wait and the next service within the same step of the
  embedded chain (:func:`qderive.numeric.kernels.vacation.start_period`);
* ``queue_length_variance`` (infinite room): time-average of Q^2 minus the squared mean.

On request (:func:`simulate`'s ``wait_tail``, ``wait_quantile``, ``wait_moments`` and the
``sojourn_`` ones) the waiting time W (service start minus arrival, FIFO) and the sojourn
time T (W plus the own service) of every admitted customer are recorded, with no extra
random number: the loop appends each service start time to a list and notes the batches it
cuts; the arrival epochs, batch sizes and service times are read back from the blocks the
streams drew (:class:`~qderive.numeric.simulation.recording.Tape`), and the waits are formed with numpy at each yield of the
loop (:class:`~qderive.numeric.simulation.recording.Recorder`). Their tails, quantiles and moments over the customers served
after the warm-up: :class:`~qderive.numeric.simulation.stats.SampleRequest`. The busy time
is summed from the same service blocks at each yield (sequentially, as a running ``+=``).

>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Exponential
>>> from qderive.symbolic.batches import Constant
>>> from qderive.symbolic.models.vacation import FiniteVacationQueue
>>> m = FiniteVacationQueue(Fraction(1, 2), Constant(1), Exponential(1), None, 2)
>>> res = simulate(m, customers=20_000, replications=4, seed=1, quiet=True)
>>> abs(res["loss_probability"].value - 1 / 15) < 0.02   # M/M/1/3: rho^3 (1 - rho) / (1 - rho^4)
True
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ...symbolic.errors import ParameterError
from ...symbolic.laws.gamma import Exponential
from ...symbolic.models.vacation import (
    Admission,
    FiniteVacationQueue,
    VacationPolicy,
    VacationQueue,
)
from ...symbolic.models.vacation_closed import ClosedFormVacationQueue
from .recording import (
    ACCUMULATORS,
    FINITE_MEASURES,
    INFINITE_MEASURES,
    INITIAL_LEVELS,
    UNBOUNDED,
    Recorder,
    Tape,
)
from .stats import (
    KernelSpec,
    SampleRequest,
    SimulationResult,
    run_replications,
    sampler,
    value_stream,
)

__all__ = ["simulate", "kernel_spec", "ACCUMULATORS", "FINITE_MEASURES", "INFINITE_MEASURES"]

def _loop(rng, model, record: bool = False):
    """The event loop as a generator: ``send(n)`` serves up to n customers in all, returns the accumulators.

    With ``record``, ``send(None)`` finishes it, returning the waits and sojourns of every
    customer served, in service order (the random numbers drawn are the same).
    """
    vacation = model.vacation
    capacity = getattr(model, "capacity", None)
    draw_e = sampler(Exponential(1 / model.rate), "inter-arrival time")
    draw_x = sampler(model.batch, "batch law")
    tape_s = Tape(sampler(model.service, "service law"), np.float64)  # busy time = sum of the services drawn
    rec = Recorder(draw_e, draw_x) if record else None
    if rec is not None:
        draw_e, draw_x = rec.e, rec.x
        push, cut = rec.starts.append, rec.cuts.append
    interarrival = value_stream(draw_e, rng)
    sizes = value_stream(draw_x, rng)
    services = value_stream(tape_s, rng)
    next_e, next_x, next_s = interarrival.__next__, sizes.__next__, services.__next__
    next_v = None if vacation is None else value_stream(sampler(vacation, "vacation law"), rng).__next__
    vac = vacation is not None
    multiple = vac and model.vacation_policy is VacationPolicy.MULTIPLE
    partial = getattr(model, "admission", Admission.PARTIAL) is Admission.PARTIAL
    r = UNBOUNDED if capacity is None else capacity
    size = INITIAL_LEVELS if capacity is None else capacity + 1
    lev = [0.0] * size  # time spent with q waiting, by q
    emb = [0] * size  # embedded epochs that found q waiting, by q

    t = tl = 0.0  # clock; time up to which the level times are accumulated
    q = 0  # customers waiting (the one in service not counted)
    served = arrived = lost = batches = blocked = 0
    busy = 0.0  # service time of the customers served, summed at each yield in service order
    summed = 0  # customers whose service time is in busy
    take_vacation = vac  # at time 0 the server has just emptied the queue
    na = next_e()  # next batch arrival
    target = yield
    while True:
        while served < target:
            if q == 0 and take_vacation:
                end = t + next_v()
                serving = False
            else:
                if q == 0:  # idle until the next batch, whose first customer starts service (r + 1 places)
                    lev[0] += na - tl
                    t = tl = na
                    x = next_x()
                    arrived += x
                    batches += 1
                    if x <= r + 1:
                        q = x
                        if q >= size:
                            lev.extend([0.0] * (q + size))
                            emb.extend([0] * (q + size))
                            size = len(lev)
                    elif partial:
                        q = r + 1
                        lost += x - r - 1
                        if record:
                            cut(batches)
                            cut(q)
                    else:
                        lost += x
                        blocked += 1
                        if record:
                            cut(batches)
                            cut(0)
                    na += next_e()
                    if q == 0:
                        continue
                if record:
                    push(t)
                q -= 1
                end = t + next_s()
                serving = True
            while na <= end:  # batch arrivals during this service / vacation
                lev[q] += na - tl
                tl = na
                x = next_x()
                arrived += x
                batches += 1
                room = r - q
                if x <= room:
                    q += x
                    if q >= size:
                        lev.extend([0.0] * (q + size))
                        emb.extend([0] * (q + size))
                        size = len(lev)
                elif partial:
                    q = r
                    lost += x - room
                    if room == 0:
                        blocked += 1
                    if record:
                        cut(batches)
                        cut(room)
                else:
                    lost += x
                    blocked += 1
                    if record:
                        cut(batches)
                        cut(0)
                na += next_e()
            lev[q] += end - tl
            t = tl = end
            if serving:
                served += 1
                emb[q] += 1
                take_vacation = vac
            else:
                if multiple or q:  # single vacations: an empty vacation end is no embedded epoch
                    emb[q] += 1
                take_vacation = multiple
        top = min(r, size - 1)
        area = math.fsum(k * v for k, v in enumerate(lev) if v)
        area2 = math.fsum(k * k * v for k, v in enumerate(lev) if v)
        service = tape_s.take(served - summed)
        busy = float(np.cumsum(np.concatenate([[busy], service]))[-1])  # the sequential sum, as += would give
        summed = served
        if record:
            rec.flush(batches, service)
        target = yield (t, served, arrived, lost, batches, blocked, busy, area, area2, lev[0], lev[top],
                        sum(emb), emb[0], emb[top])
        if target is None:
            return rec.samples() if record else None


def kernel_spec(model) -> KernelSpec:
    """The event loop and measure table of ``model`` for :func:`~qderive.numeric.simulation.stats.run_replications`.

    A :class:`ClosedFormVacationQueue` (``vacation-finite-r``) is simulated as its :attr:`queue`, with the
    measures of its own result record.
    """
    if isinstance(model, ClosedFormVacationQueue):
        spec = kernel_spec(model.queue)
        keys = model.measures.keys()
        return replace(spec, model=model.name, measures={k: v for k, v in spec.measures.items() if k in keys})
    if not isinstance(model, (VacationQueue, FiniteVacationQueue)):
        raise ParameterError(f"the vacation simulator takes a VacationQueue, FiniteVacationQueue or "
                             f"ClosedFormVacationQueue, not {type(model).__name__}")
    if model.blocks:  # a start threshold, a setup or a close-down: the idle passage's stages (today's loop kept)
        from .blocks import block_kernel_spec

        return block_kernel_spec(model)
    for law, what in ((model.batch, "batch law"), (model.service, "service law"), (model.vacation, "vacation law")):
        if law is not None:
            sampler(law, what)  # refuses a symbolic law before any run starts
    sampler(Exponential(1 / model.rate), "rate")
    finite = isinstance(model, FiniteVacationQueue)
    return KernelSpec(
        model=model.name,
        accumulators=ACCUMULATORS,
        start=lambda rng: _loop(rng, model),
        measures=FINITE_MEASURES if finite else INFINITE_MEASURES,
        undefined_notes={"mean_wait": "no customer was admitted", "q0": "no embedded epoch was observed",
                         "qr": "no embedded epoch was observed"},
        samples=("wait", "sojourn"),
        start_recording=lambda rng: _loop(rng, model, record=True),
    )


def simulate(model, customers: int, replications: int = 10, seed: int | None = None, *, warmup: float = 0.1,
             quiet: bool = False, wait_tail=(), wait_quantile=(), wait_moments: int = 0, sojourn_tail=(),
             sojourn_quantile=(), sojourn_moments: int = 0) -> SimulationResult:
    """Simulate a :class:`VacationQueue`, :class:`FiniteVacationQueue` (or :class:`ClosedFormVacationQueue`):
    estimates with 95 % intervals.

    A composed variant (``model.blocks``: a start threshold N > 1, a setup or a close-down) runs the stages
    of its idle passage (:mod:`qderive.numeric.simulation.blocks`, same options, accumulators and measures);
    today's variants keep this module's loop (and so their seeded numbers).

    ``customers`` are served in each of ``replications`` independent runs started empty
    (the server starts a vacation at time 0, or waits idle without vacations); the first
    ``warmup`` fraction of them is discarded. Method: independent replications, jackknife
    standard errors, Student t (:mod:`qderive.numeric.simulation.stats`). Measures: the
    module docstring (``docs/theory/chapter2.md``, the measure keys of ``qderive eval``).

    Waiting and sojourn times (recorded only when one of these options is given; the
    random numbers drawn, and so every other measure, are the same either way): the wait W
    of an admitted customer is its service start minus its arrival (FIFO), its sojourn T
    the wait plus its own service; each run contributes the customers it serves after the
    warm-up. ``wait_tail=(t, ...)`` gives ``result["wait_tail"] = {t: Estimate of P(W > t)}``
    (keyed by the t as given: ``"0.5"`` or ``0.5``; each t finite and >= 0),
    ``wait_quantile=(q, ...)`` gives ``{q: Estimate of the q-quantile of W}`` (0 < q < 1),
    ``wait_moments=K`` gives ``[Estimate of E W^k for k = 1..K]`` (K <= 8); the ``sojourn_*``
    options the same for T. Intervals: over the replications, as for every measure; the
    quantile is the mean over the runs of each run's empirical quantile (the ceil(q n)-th
    smallest of its n values) with the Student-t interval of that mean. ``wait_moments[0]``
    is the sample mean of W, which differs from ``mean_wait`` (Little's law on the same run)
    only by the customers present at the ends of the measurement window. Cost: about 16
    bytes per customer of one replication, and a small fraction of the run time.

    >>> from fractions import Fraction
    >>> from qderive.symbolic.laws import Exponential
    >>> from qderive.symbolic.batches import Constant
    >>> from qderive.symbolic.models.vacation import VacationQueue
    >>> mm1 = VacationQueue(Fraction(1, 2), Constant(1), Exponential(1), None)
    >>> res = simulate(mm1, 20_000, 4, seed=1, quiet=True, wait_tail=("1",), sojourn_quantile=(0.5,))
    >>> abs(res["wait_tail"]["1"].value - 0.5 * math.exp(-0.5)) < 0.03   # P(W > t) = rho e^{-mu (1 - rho) t}
    True
    >>> abs(res["sojourn_quantile"][0.5].value - 2 * math.log(2)) < 0.1   # T ~ Exp(mu - lambda)
    True
    """
    requests = (SampleRequest.parse("wait", wait_tail, wait_quantile, wait_moments),
                SampleRequest.parse("sojourn", sojourn_tail, sojourn_quantile, sojourn_moments))
    return run_replications(kernel_spec(model), customers, replications, seed, warmup, quiet, samples=requests)
