"""Simulation of the composed vacation models: the idle passage's stages run with general laws.

The model's idle passage as recorded stages (:func:`qderive.symbolic.blocks.machine.machine`: ``during``,
``interrupt``, ``wait``, ``repeat``; that module fixes the skips, the places a batch finds and the embedded
epochs) is run here as a discrete-event simulation with any numeric time law (each law's own sampler, as in
:mod:`.vacation`): nothing here names a block, so a new block composed of the primitives is simulated with no
new code. Batches arrive as a Poisson process of rate lambda with sizes X; FCFS; the members of a batch are
served in random order (exchangeable: the recorded waits do not depend on it) and, under partial admission, the
admitted ones are the first of that order. Both rooms (the infinite one unbounded), both admissions
(:class:`~qderive.symbolic.models.vacation.Admission`).

After a departure leaves the system empty (and at time 0) the stages run in turn: a ``during`` period admits
batches (r - k places); an ``interrupt`` period (the close-down) is ended by the first batch of which a member
is admitted (r + 1 - k places), whose arrival starts service at once, skipping every later stage; a ``wait``
admits batches until k >= N (r + 1 - k places when it is the last stage: the batch that brings the count to N
starts service at once); a ``repeat`` runs periods while k < N at a period's end. Then the first service starts.

Measures: the same accumulators and tables as :mod:`.vacation` (``ACCUMULATORS``, ``FINITE_MEASURES``,
``INFINITE_MEASURES``: ``idle_probability`` the time not serving -- close-down, vacation, waiting, setup --,
``mean_queue_length`` everyone present not in service, ``mean_wait`` by Little's law, the setup a customer waits
through included), the embedded epochs being the service completions and the vacation ends of
:func:`~qderive.symbolic.blocks.machine.epoch_at_end`; waits and sojourns on request, from the same recorder.

>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Exponential
>>> from qderive.symbolic.batches import Constant
>>> from qderive.symbolic.models.vacation import VacationQueue
>>> m = VacationQueue(Fraction(1, 2), Constant(1), Exponential(1), None, start_threshold=3)
>>> res = simulate_blocks(m, customers=20_000, replications=4, seed=1, quiet=True)
>>> abs(res["mean_number_in_system"].value - 2) < 0.2   # Yadin-Naor: rho/(1-rho) + (N-1)/2
True
"""

from __future__ import annotations

import math
from functools import lru_cache
from functools import partial as partial_fn

import numpy as np

from ...symbolic.blocks.machine import (
    StageKind,
    epoch_at_end,
    machine,
    next_after_period,
    places,
    refuse_stuck,
    resolve,
)
from ...symbolic.laws.gamma import Exponential
from ...symbolic.models.vacation import Admission, FiniteVacationQueue
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

__all__ = ["block_kernel_spec", "simulate_blocks"]

_WAIT, _INTERRUPT, _REPEAT = StageKind.WAIT, StageKind.INTERRUPT, StageKind.REPEAT


def _loop(rng, model, stages, record: bool = False):
    """The event loop as a generator, with the protocol of :func:`qderive.numeric.simulation.vacation._loop`:
    ``send(n)`` serves up to n customers in all and returns the accumulators; with ``record``, ``send(None)``
    finishes it with the waits and sojourns. The batch arrivals during a service are handled inline (the hot
    path); the idle passage, stage by stage, in :func:`passage`."""

    capacity = getattr(model, "capacity", None)
    room = capacity  # None: infinite (the places of machine.places)
    r = UNBOUNDED if capacity is None else capacity
    draw_e = sampler(Exponential(1 / model.rate), "inter-arrival time")
    draw_x = sampler(model.batch, "batch law")
    tape_s = Tape(sampler(model.service, "service law"), np.float64)
    rec = Recorder(draw_e, draw_x) if record else None
    if rec is not None:
        draw_e, draw_x = rec.e, rec.x
        push, cut = rec.starts.append, rec.cuts.append
    next_e = value_stream(draw_e, rng).__next__
    next_x = value_stream(draw_x, rng).__next__
    next_s = value_stream(tape_s, rng).__next__
    periods = [value_stream(sampler(s.law, f"{s.kind.value} law"), rng).__next__ if s.timed else None
               for s in stages]
    partial = getattr(model, "admission", Admission.PARTIAL) is Admission.PARTIAL
    n_stages = len(stages)
    # the stage decisions depend on (stage, count, periods done) only: memoised for the run
    resolve_at = lru_cache(maxsize=None)(partial_fn(resolve, stages))
    epoch_at = lru_cache(maxsize=None)(partial_fn(epoch_at_end, stages))
    after = lru_cache(maxsize=None)(partial_fn(next_after_period, stages))
    places_at = lru_cache(maxsize=None)(partial_fn(places, stages))
    size = INITIAL_LEVELS if capacity is None else capacity + 1
    lev = [0.0] * size  # time spent with q waiting, by q
    emb = [0] * size  # embedded epochs that found q waiting, by q
    t = tl = 0.0  # clock; time up to which the level times are accumulated
    q = 0  # customers waiting (all present while the server does not serve)
    arrived = lost = batches = blocked = 0
    na = next_e()  # next batch arrival

    def grow():
        nonlocal lev, emb, size
        lev.extend([0.0] * (q + size))
        emb.extend([0] * (q + size))
        size = len(lev)

    def refuse(x, m):
        """A batch of x that does not fit the m places: the customers admitted (partial: m; whole: none)."""
        nonlocal lost, blocked
        a = max(m, 0) if partial else 0
        lost += x - a
        if a == 0:
            blocked += 1
        if record:
            cut(batches)
            cut(a)
        return a

    def arrive(i):
        """The batch at ``na`` in stage ``i`` of the idle passage: the level time up to it, its admission to the
        stage's places; returns the customers admitted (q already raised)."""
        nonlocal t, tl, q, na, arrived, batches
        lev[q] += na - tl
        t = tl = na
        x = next_x()
        arrived += x
        batches += 1
        m = None if room is None else places_at(i, q, room)
        a = x if m is None or x <= m else refuse(x, m)
        q += a
        if q >= size:
            grow()
        na += next_e()
        return a

    def until(end):
        """The clock to ``end`` (no arrival before it)."""
        nonlocal t, tl
        lev[q] += end - tl
        t = tl = end

    def passage():
        """The idle passage from an empty system: returns when the first service starts (at ``t``)."""
        i, done = resolve_at(0, q, 0)
        while i < n_stages:
            s = stages[i]
            if s.kind is _WAIT:
                while q < s.threshold:
                    arrive(i)
                i, done = resolve_at(i, q, 0)
                continue
            end = t + periods[i]()
            if s.kind is _INTERRUPT:
                while na <= end:
                    if arrive(i):
                        return  # the close-down ends: its members are served at once
                until(end)
                i, done = resolve_at(i + 1, q, 0)
                continue
            while na <= end:
                arrive(i)
            until(end)
            done = done + 1 if (s.kind is _REPEAT and s.most is not None) else 0
            if s.vacation and epoch_at(i, q, done):
                emb[q] += 1
            i, done = after(i, q, done)

    served = 0
    busy = 0.0
    summed = 0
    idle = True  # at time 0 the system is empty: the idle passage runs
    target = yield
    while True:
        while served < target:
            if idle:
                passage()
            if record:
                push(t)
            q -= 1
            end = t + next_s()
            while na <= end:  # batch arrivals during this service: r - q places
                lev[q] += na - tl
                tl = na
                x = next_x()
                arrived += x
                batches += 1
                a = x if x <= r - q else refuse(x, r - q)
                q += a
                if q >= size:
                    grow()
                na += next_e()
            lev[q] += end - tl
            t = tl = end
            served += 1
            emb[q] += 1
            idle = q == 0
        top = min(r, size - 1)
        area = math.fsum(k * v for k, v in enumerate(lev) if v)
        area2 = math.fsum(k * k * v for k, v in enumerate(lev) if v)
        service = tape_s.take(served - summed)
        busy = float(np.cumsum(np.concatenate([[busy], service]))[-1])
        summed = served
        if record:
            rec.flush(batches, service)
        target = yield (t, served, arrived, lost, batches, blocked, busy, area, area2, lev[0], lev[top], sum(emb),
                        emb[0], emb[top])
        if target is None:
            return rec.samples() if record else None


def block_kernel_spec(model, blocks=None) -> KernelSpec:
    """The event loop and measure table of a composed vacation model (``model.blocks``), for
    :func:`~qderive.numeric.simulation.stats.run_replications`: the accumulators and measures of
    :mod:`.vacation`; ``blocks``: the idle passage's blocks (default the model's)."""

    stages = machine(model, blocks)
    refuse_stuck(model, stages)
    for law, what in ((model.batch, "batch law"), (model.service, "service law")):
        sampler(law, what)  # refuses a symbolic law before any run starts
    for s in stages:
        if s.timed:
            sampler(s.law, f"{s.kind.value} law")
    sampler(Exponential(1 / model.rate), "rate")
    finite = isinstance(model, FiniteVacationQueue)
    return KernelSpec(
        model=model.name,
        accumulators=ACCUMULATORS,
        start=lambda rng: _loop(rng, model, stages),
        measures=FINITE_MEASURES if finite else INFINITE_MEASURES,
        undefined_notes={"mean_wait": "no customer was admitted", "q0": "no embedded epoch was observed",
                         "qr": "no embedded epoch was observed"},
        samples=("wait", "sojourn"),
        start_recording=lambda rng: _loop(rng, model, stages, record=True),
    )


def simulate_blocks(model, customers: int, replications: int = 10, seed: int | None = None, *, warmup: float = 0.1,
                    quiet: bool = False, blocks=None, wait_tail=(), wait_quantile=(), wait_moments: int = 0,
                    sojourn_tail=(), sojourn_quantile=(), sojourn_moments: int = 0) -> SimulationResult:
    """Simulate a vacation model (``blocks`` or not) through the stages of its idle passage: the options and
    results of :func:`qderive.numeric.simulation.vacation.simulate` (which sends the composed variants here).
    ``blocks``: the idle passage's blocks (default the model's; a rule of one's own composed of the primitives
    runs the same way)."""
    requests = (SampleRequest.parse("wait", wait_tail, wait_quantile, wait_moments),
                SampleRequest.parse("sojourn", sojourn_tail, sojourn_quantile, sojourn_moments))
    return run_replications(block_kernel_spec(model, blocks), customers, replications, seed, warmup, quiet,
                            samples=requests)
