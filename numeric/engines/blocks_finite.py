"""M[X]/G/1/r with composed start-of-busy-period blocks (close-down, vacations, N-policy, setup): the finite room.

The structure of :mod:`qderive.symbolic.blocks.base` in a waiting room of r places (the customer in service not
counted), partial admission (the first members of a batch that fit) or whole admission (a batch only if it fits
entirely), every quantity a sum of positive terms:

**The departure chain** on 0..r (the number left behind). From j >= 1 the next service starts with j - 1 waiting
and the next departure leaves min(j - 1 + A, r), A the customers arriving during one service (law a, tails
abar_m = P(A > m)); from 0 the idle passage runs and the first service starts with Y
present (law y over 1..r+1), so the departure leaves min(Y - 1 + A, r). The chain is of M/G/1 type, and the cut
between j and j + 1 (j < r, the room's cap only merges the mass beyond r into r) gives the positive forward
recursion of the thesis's (2b) (``docs/theory/chapter2.md`` section 2, Statement 1's recursion with the start law
of the blocks)::

    a_0 pi_{j+1} = pi_0 cbar_j + sum_{i=1}^{j} pi_i abar_{j-i+1},     cbar_j = P(Y - 1 + A > j),

solved unnormalised (pi_0 = 1) by :func:`qderive.numeric.kernels.vacation.cut_recursion` (blocks of Toeplitz
inverses with positive entries; float64 rescaled by powers of two): O(r^2) operations, as today's finite kernel.
Under whole admission a departure still leaves at least j - 1, and the same cuts read
pi_{j+1} R[r-j, r-j] = pi_0 P0(end room < r-j) + sum_{i=1}^{j} pi_i Rcum[r-i+1, r-j] in the service's room matrices
(:func:`~qderive.numeric.kernels.vacation.whole_cut`, the kernel's whole-admission chain, P0 from the first-service
law y): O(r^2) per batch of a service for the room matrices, as today's whole-admission kernel.

**The idle passage** (:class:`~qderive.numeric.kernels.idle_passage.CountPassage`) interprets ``during``, ``interrupt``, ``wait``, ``repeat`` over
count vectors over 0..r+1 capped by the room as :func:`qderive.symbolic.blocks.machine.places` says (a batch finds
r - k places, r + 1 - k when its arrival starts service at once): partial admission turns the number present
k + (arrivals) into min(k + arrivals, cap), cap = k + places (whole admission:
:class:`~qderive.numeric.kernels.idle_passage.WholeCountPassage`, the room process of batches that fit). Per idle period it gives the first-service law y,
the expected time at each level k split by the places a batch finds there (``times``: r - k; ``at_once``:
r + 1 - k) and the expected number of embedded vacation ends at each level
(:func:`~qderive.symbolic.blocks.machine.epoch_at_end`).

**Renewal reward** over the intervals between departures (weights pi): the time at waiting level l during the
services is sum_i s_i u^{cap}_{l-i}, s_l = pi_{l+1} + pi_0 y_{l+1} the number waiting at a service start and
u^{cap} the level times of one service capped at r (u_m below the cap, Ubar_{r-i} at it); the idle period adds
pi_0 T_k. With T = pi_0 E[I] + b_1 sum_j pi_j the mean interval, p_l = (time at l) / T (the number waiting, the
one in service not counted); ``idle_probability`` = pi_0 E[I] / T; ``throughput`` = sum_j pi_j / T; the loss
(Theorem 1.1 (12) generalised): sum over the states of the time fraction times E (X - m)^+ / l_1, m the places
(whole admission: E X 1{X > m} / l_1); ``batch_blocking_probability`` the time with no place (whole: P(X > m));
q_0, q_r the embedded epochs (service completions and vacation ends) leaving 0 / r waiting as a fraction of all
of them.

Today's rules (N = 1, no setup, no close-down) are special cases: the tests compare them with
:class:`~qderive.numeric.engines.vacation.FiniteEngine`'s kernel, and every composed variant with the block chain
(:mod:`qderive.numeric.oracles.blocks`).

The computation is the kernel :mod:`qderive.numeric.kernels.idle_passage` (numpy only, shipped verbatim by
``qderive codegen vacation-finite``): the blocks stay the declaration, their state machine
(:func:`~qderive.symbolic.blocks.machine.machine`) is turned here into the kernel's plan (:func:`plan_of`: the
stages as plain data, the places and the embedded epochs read from the machine's rules), and the model's laws
into the kernel's count callables.
"""

from __future__ import annotations

from ...symbolic.blocks import blocks_of
from ...symbolic.blocks.machine import StageKind, epoch_at_end, machine, places, refuse_stuck
from ...symbolic.errors import ParameterError
from ...symbolic.models.vacation import Admission
from ..kernels import idle_passage as K
from ..kernels.idle_passage import capped
from ..sequences import batch_blocks, batch_vectors, count_sequences

__all__ = ["FinitePassage", "WholePassage", "capped", "finite_measures", "plan_of", "refuse_no_places"]


def plan_of(stages, service) -> tuple[tuple, list]:
    """(plan, laws): the stages of the state machine (:func:`~qderive.symbolic.blocks.machine.machine`) as the
    plain-data plan of :mod:`qderive.numeric.kernels.idle_passage`, and its laws (``service`` first, then each
    distinct law of the stages; a stage names its law by index). The places a batch finds
    (:func:`~qderive.symbolic.blocks.machine.places`: r + 1 - k or r - k, whatever r) and the embedded epochs
    (:func:`~qderive.symbolic.blocks.machine.epoch_at_end`, over the levels k <= the largest threshold, constant
    beyond it: every threshold is then met) are read from the machine's own rules."""
    laws = list(dict.fromkeys([service] + [s.law for s in stages if s.timed]))
    top = max([s.threshold for s in stages if s.threshold is not None] + [1])
    plan = []
    for i, s in enumerate(stages):
        at_once = places(stages, i, 0, 1) == 2
        epochs = None
        if s.vacation:
            runs = range(1) if s.kind is not StageKind.REPEAT or s.most is None else range(s.most + 1)
            epochs = tuple(tuple(epoch_at_end(stages, i, k, done) for k in range(top + 1)) for done in runs)
        plan.append((s.kind.value, laws.index(s.law) if s.timed else None, s.threshold, s.most, at_once, epochs))
    return tuple(plan), laws


def _inputs(model, ctx, laws):
    """The kernel's callables of ``model`` in ``ctx``: batch(n), columns(n), counts (one per law), means."""
    def batch(n):
        bv = batch_vectors(model.batch, n, ctx)
        return bv.pmf, bv.tail, bv.excess, bv.l1, bv.geometric, bv.support

    def columns(n):
        return batch_blocks(model.batch, n, ctx)

    counts = [lambda n, c=law.count_law(model.rate): count_sequences(c, n, ctx) for law in laws]
    return batch, columns, counts, [ctx.num(law.moment(1)) for law in laws]


def refuse_no_places(model, stages):
    """Refuse a room where a stage of the idle period (other than a close-down, whose batch starts service at once)
    leaves a batch r - k = 0 places: nobody could ever be admitted; names ``capacity``."""
    r = model.capacity
    for i, s in enumerate(stages):
        if s.kind is not StageKind.INTERRUPT and places(stages, i, 0, r) <= 0:
            raise ParameterError("capacity", f"must be >= 1 here: in the {s.kind.value} stage of the idle period a "
                                 "batch finds r - k = 0 places (its arrival does not start service at once), so "
                                 "nobody could ever be admitted", r)


def finite_measures(model, ctx, blocks=None) -> dict:
    """Every measure of ``qderive eval vacation-finite`` (the law ``p`` included) of ``model`` (a
    FiniteVacationQueue, partial or whole admission) with its blocks (or ``blocks``: a rule of one's own), by the
    departure chain and renewal reward (module docstring;
    :func:`~qderive.numeric.kernels.idle_passage.block_finite_measures`); context numbers."""
    blocks = blocks_of(model) if blocks is None else tuple(blocks)
    stages = machine(model, blocks)
    refuse_stuck(model, stages)
    refuse_no_places(model, stages)
    plan, laws = plan_of(stages, model.service)
    batch, columns, counts, means = _inputs(model, ctx, laws)
    return K.block_finite_measures(ctx, plan, model.capacity, ctx.num(model.rate), batch, columns, counts, means,
                                   ctx.num(model.service.moment(1)), model.admission is Admission.WHOLE)


class FinitePassage(K.CountPassage):
    """:class:`~qderive.numeric.kernels.idle_passage.CountPassage` of ``model`` (partial admission) over the
    ``stages`` of its machine in the room ``room``, its laws given as objects."""

    def __init__(self, model, ctx, stages, room: int):
        plan, laws = plan_of(stages, model.service)
        size = room + 2
        batch, columns, counts, means = _inputs(model, ctx, laws)
        pmf, tail = batch(size)[:2]
        found = K.arrival_counts_of_times(ctx, [(*c(size), m) for c, m in zip(counts, means)], columns(size),
                                          ctx.num(model.rate), size)
        jumps = [K.Jumps(a, K.at_least(ctx, abar), u, ubar) for a, abar, u, ubar in found]
        super().__init__(ctx, plan, room, ctx.num(model.rate), K.Jumps(pmf[:size], K.at_least(ctx, tail[:size])),
                         jumps)
        self.model, self.stages, self._index = model, stages, {law: i for i, law in enumerate(laws)}

    def counts(self, law):
        """The counts of a law object (the blocks' primitives call with laws) or of its index in the plan (0: the
        service, as the kernel's departure chains ask)."""
        return super().counts(law if isinstance(law, int) else self._index[law])


class WholePassage(K.WholeCountPassage):
    """:class:`~qderive.numeric.kernels.idle_passage.WholeCountPassage` of ``model`` (whole admission) over the
    ``stages`` of its machine in the room ``room``, its laws given as objects."""

    def __init__(self, model, ctx, stages, room: int):
        plan, laws = plan_of(stages, model.service)
        batch, _, counts, _ = _inputs(model, ctx, laws)
        pmf, tail, _, _, geometric, support = batch(room + 3)
        super().__init__(ctx, plan, room, ctx.num(model.rate), (pmf, tail, geometric, support),
                         [lambda n, c=c: c(n)[:3] for c in counts])
        self.model, self.stages, self._index = model, stages, {law: i for i, law in enumerate(laws)}

    def counts(self, law):
        """As :meth:`FinitePassage.counts`."""
        return super().counts(law if isinstance(law, int) else self._index[law])
