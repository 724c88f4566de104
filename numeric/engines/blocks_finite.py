"""M[X]/G/1/r with composed start-of-busy-period blocks (close-down, vacations, N-policy, setup): the finite room.

The structure of :mod:`qderive.symbolic.blocks.base` in a waiting room of r places (the customer in service not
counted), partial admission (the first members of a batch that fit) or whole admission (a batch only if it fits
entirely), every quantity a sum of positive terms:

**The departure chain** on 0..r (the number left behind). From j >= 1 the next service starts with j - 1 waiting
and the next departure leaves min(j - 1 + A, r), A the customers arriving during one service (law a, tails
abar_m = P(A > m)); from 0 the idle passage runs (:class:`FinitePassage`) and the first service starts with Y
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

**The idle passage** (:class:`FinitePassage`) interprets ``during``, ``interrupt``, ``wait``, ``repeat`` over
count vectors over 0..r+1 capped by the room as :func:`qderive.symbolic.blocks.machine.places` says (a batch finds
r - k places, r + 1 - k when its arrival starts service at once): partial admission turns the number present
k + (arrivals) into min(k + arrivals, cap), cap = k + places (whole admission: :class:`WholePassage`, the room
process of batches that fit). Per idle period it gives the first-service law y,
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
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...symbolic.blocks import blocks_of, passage
from ...symbolic.blocks.machine import StageKind, epoch_at_end, machine, places, refuse_stuck
from ...symbolic.errors import ParameterError
from ...symbolic.models.vacation import Admission
from ..kernels.arrivals import arrival_counts_of_times
from ..kernels.vacation import cut_recursion, mix_powers, room_kernel, whole_cut
from ..sequences import batch_blocks, batch_vectors, count_sequences
from .blocks import renewal

__all__ = ["FinitePassage", "WholePassage", "capped", "finite_measures"]


def _at_least(ctx, tail_above):
    """P(A >= m), m = 0..len: 1 then P(A > m - 1) (``tail_above`` = P(A > m))."""
    out = ctx.zeros(len(tail_above) + 1)
    out[0] = ctx.num(1)
    out[1:] = tail_above
    return out


class _Jumps:
    """A jump law over 0..n (``pmf``) with P(J >= m) (``geq``), and the level-time pair (``u``, ``ubar``) when it
    is the arrivals of a time (u_m the expected time with m arrived so far, Ubar_m = sum_{i>=m} u_i)."""

    def __init__(self, pmf, geq, u=None, ubar=None):
        self.pmf, self.geq, self.u, self.ubar = pmf, geq, u, ubar


def capped(ctx, v, pmf, geq, cap: int, size: int):
    """The law of min(K + J, cap), K ~ v (zero beyond ``cap``) and J ~ ``pmf`` independent, over 0..size-1:
    out_j = sum_k v_k pmf_{j-k} (j < cap), out_cap = sum_{k<=cap} v_k P(J >= cap - k) (positive sums). With
    (u, Ubar) for (pmf, geq) it gives the expected time at each level during one period of a time."""
    out = ctx.zeros(size)
    w = v[: cap + 1]
    if cap:
        out[:cap] = np.convolve(w, pmf[:cap])[:cap]
    out[cap] = np.dot(w, geq[cap::-1][: len(w)])
    return out


class FinitePassage:
    """The interpreter of the primitives on count vectors over 0..r+1 in the finite room r (module docstring),
    partial admission (:class:`WholePassage`: whole admission); the stages
    (:func:`~qderive.symbolic.blocks.machine.machine`) give the places and the embedded epochs of each primitive,
    in the order the passage calls them.

    After :func:`~qderive.symbolic.blocks.base.passage`: the first-service law (returned by ``finish``), ``times``
    (expected time at level k with r - k places per idle period), ``at_once`` (r + 1 - k places), ``ends``
    (expected embedded vacation ends at level k)."""

    def __init__(self, model, ctx, stages, room: int):
        self.model, self.ctx, self.stages, self.room = model, ctx, stages, room
        self.size = room + 2
        self.lam = ctx.num(model.rate)
        bv = batch_vectors(model.batch, self.size, ctx)
        self.x = _Jumps(bv.pmf[: self.size], _at_least(ctx, bv.tail[: self.size]))
        self.times = ctx.zeros(self.size)
        self.at_once = ctx.zeros(self.size)
        self.ends = ctx.zeros(self.size)
        self.served = ctx.zeros(self.size)
        self.i = 0
        self._prepare(model, ctx, stages)

    def _prepare(self, model, ctx, stages):
        """The count vectors of every law of the passage and of the service (whole admission: the room process)."""
        # the customers arriving during one period of each law (the service's and the stages'), over 0..r+1: one
        # pass over the batch convolutions for all of them (:func:`arrival_counts_of_times`)
        laws = list(dict.fromkeys([model.service] + [s.law for s in stages if s.timed]))
        times = [(*count_sequences(law.count_law(model.rate), self.size, ctx), ctx.num(law.moment(1))) for law in laws]
        found = arrival_counts_of_times(ctx, times, batch_blocks(model.batch, self.size, ctx), self.lam, self.size)
        self._counts = {law: _Jumps(a, _at_least(ctx, abar), u, ubar) for law, (a, abar, u, ubar) in zip(laws, found)}

    def counts(self, law) -> _Jumps:
        """The customers arriving during one period of ``law`` over 0..r+1 (a, P(A >= m), u, Ubar)."""
        return self._counts[law]

    def _stage(self):
        i, self.i = self.i, self.i + 1
        return i, places(self.stages, i, 0, self.room)  # the cap: k + places

    def _epochs(self, i, out, done=0):
        """Add the vacation ends of stage ``i`` (``done`` periods of it run) leaving the law ``out`` that are embedded
        epochs (:func:`epoch_at_end`)."""
        for k in range(self.size):
            if out[k] != 0 and epoch_at_end(self.stages, i, k, done):
                self.ends[k] = self.ends[k] + out[k]

    def _add_times(self, cap, vector):
        """Add expected level times of a stage whose cap is ``cap`` (r + 1: a batch's arrival starts service at once,
        it finds r + 1 - k places; r: it finds r - k)."""
        if cap > self.room:
            self.at_once = self.at_once + vector
        else:
            self.times = self.times + vector

    # -- the primitives ------------------------------------------------------------------------------------
    def start(self):
        v = self.ctx.zeros(self.size)
        v[0] = self.ctx.num(1)
        return v

    def during(self, v, law, vacation=False):
        """A period of ``law``: k -> min(k + A, cap), the time at level j sum_k v_k u_{j-k} (j < cap) and
        sum_k v_k Ubar_{cap-k} at the cap; its ends are epochs when it is a vacation."""
        i, cap = self._stage()
        c = self.counts(law)
        self._add_times(cap, capped(self.ctx, v, c.u, c.ubar, cap, self.size))
        out = capped(self.ctx, v, c.pmf, c.geq, cap, self.size)
        if self.stages[i].vacation:
            self._epochs(i, out)
        return out

    def interrupt(self, v, law):
        """A close-down: the first batch ends it and starts service with min(k + X, cap) present (probability
        P(A > 0) per path, A the customers of the period); time u_0 at level k; the rest v a_0 goes on."""
        i, cap = self._stage()
        c = self.counts(law)
        self._add_times(cap, v * c.u[0])
        busy = c.geq[1]  # P(A > 0) = P(a batch arrives during the period), a positive sum
        self.served = self.served + capped(self.ctx, v, self.x.pmf, self.x.geq, cap, self.size) * busy
        return v * c.pmf[0]

    def _exit(self, v, n, visits, jumps, cap):
        """What stays at n.. plus the walk's jumps from below n, capped."""
        low = self.ctx.zeros(self.size)
        low[:n] = visits
        out = capped(self.ctx, low, jumps.pmf, jumps.geq, cap, self.size)
        out[:n] = self.ctx.zeros(n)
        out[n:] = out[n:] + v[n:]
        return out

    def wait(self, v, threshold):
        """Waiting for N: the visits V_k = v_k + sum_{i>=1} V_{k-i} x_i of the levels k < N (one batch per visit,
        time V_k / lambda each), then the law at N.. of the batches that cross N, capped."""
        i, cap = self._stage()
        n = min(threshold, cap)
        visits = renewal(self.ctx, v[:n], self.x.pmf)
        low = self.ctx.zeros(self.size)
        low[:n] = visits / self.lam
        self._add_times(cap, low)
        return self._exit(v, n, visits, self.x, cap)

    def repeat(self, v, law, threshold, most=None):
        """Periods of ``law`` while k < N at a period's end: U_k (1 - a_0) = v_k + sum_{i>=1} U_{k-i} a_i the
        periods started at level k < N (at most ``most``: period by period), each with the times and ends of
        ``during``."""
        i, cap = self._stage()
        c = self.counts(law)
        n = min(threshold, cap)
        if most is None:
            visits = renewal(self.ctx, v[:n], c.pmf, c.geq[1])  # U_k: the periods started at level k < N
            low = self.ctx.zeros(self.size)
            low[:n] = visits
            self._add_times(cap, capped(self.ctx, low, c.u, c.ubar, cap, self.size))
            self._epochs(i, capped(self.ctx, low, c.pmf, c.geq, cap, self.size))
            return self._exit(v, n, visits, c, cap)
        g = self.ctx.zeros(self.size)
        g[:n] = v[:n]
        rest = v.copy()
        rest[:n] = self.ctx.zeros(n)
        for done in range(1, most + 1):
            self._add_times(cap, capped(self.ctx, g, c.u, c.ubar, cap, self.size))
            moved = capped(self.ctx, g, c.pmf, c.geq, cap, self.size)
            self._epochs(i, moved, done)
            rest[n:] = rest[n:] + moved[n:]
            g = self.ctx.zeros(self.size)
            g[:n] = moved[:n]
        return g + rest

    def finish(self, v):
        return v + self.served


class WholePassage(FinitePassage):
    """The same interpreter under whole admission (a batch is admitted only if it fits entirely: k + x <= cap,
    cap = k + places; the threshold counts admitted customers). Within a time the number present follows the
    room process of :func:`~qderive.numeric.kernels.vacation.mix_powers` (room d = cap - k, a batch of x fits when
    x <= d); ``interrupt`` ends at the first batch that fits (the others are refused and the close-down goes on),
    ``wait`` leaves level k at rate lambda f_k, f_k = P(X <= cap - k). Positive sums throughout."""

    def __init__(self, model, ctx, stages, room: int):
        super().__init__(model, ctx, stages, room)
        bv = batch_vectors(model.batch, self.size + 1, ctx)
        self.pmf, self.tail, self.geometric, self.support = bv.pmf, bv.tail, bv.geometric, bv.support
        self.H = room_kernel(ctx, bv.pmf, bv.tail, self.size - 1)  # rooms 0..r+1

    def _prepare(self, model, ctx, stages):
        pass

    def batches(self, law):
        """(beta, P(K > k)) of the batches K arriving during one period of ``law`` over 0..size."""
        count = law.count_law(self.model.rate)
        return lambda size: count_sequences(count, size, self.ctx)[:2]

    def mix(self, start, law, cap, kernel=None):
        """(end law, level times) in levels 0..cap of the room process during one period of ``law`` from the rows of
        ``start`` (levels 0..cap); ``kernel``: another room kernel (diagonal: the interrupt)."""
        H = self.H[: cap + 1, : cap + 1] if kernel is None else kernel
        structure = (self.geometric, self.support) if kernel is None else (None, None)
        ends, times = mix_powers(self.ctx, start[..., ::-1], H, self.batches(law), self.lam, self.pmf, self.tail,
                                 *structure)
        return ends[..., ::-1], times[..., ::-1]

    def _pad(self, v):
        out = self.ctx.zeros(self.size)
        out[: len(v)] = v
        return out

    def fits(self, cap, n):
        """f_k = P(X <= cap - k), k = 0..n-1 (positive partial sums of the pmf)."""
        cum = np.cumsum(self.pmf[: cap + 1])
        return self.ctx.array([cum[cap - k] for k in range(n)])

    def during(self, v, law, vacation=False):
        i, cap = self._stage()
        out, times = self.mix(v[: cap + 1], law, cap)
        self._add_times(cap, self._pad(times))
        out = self._pad(out)
        if self.stages[i].vacation:
            self._epochs(i, out)
        return out

    def interrupt(self, v, law):
        i, cap = self._stage()
        n = cap + 1
        refused = self.ctx.zeros((n, n))  # a batch that does not fit leaves the level (and the period) as it is
        for k in range(n):
            refused[k, k] = self.tail[cap - k]
        rest, times = self.mix(v[:n], law, cap, refused[::-1, ::-1])
        self._add_times(cap, self._pad(times))
        ended = times * self.lam  # expected batches per level; those that fit start service at once
        self.served = self.served + self._pad(np.convolve(ended, self.pmf[: n])[:n])
        return self._pad(rest)

    def wait(self, v, threshold):
        i, cap = self._stage()
        n = min(threshold, cap)
        f = self.fits(cap, n)
        rate = self.ctx.zeros(n)  # W_k = V_k / f_k: the batches that fit, per unit of pmf, arriving at level k
        for k in range(n):
            came = np.dot(rate[:k][::-1], self.pmf[1: k + 1]) if k else v[0] * 0
            rate[k] = (v[k] + came) / f[k]
        self._add_times(cap, self._pad(rate / self.lam))
        out = self._pad(np.convolve(rate, self.pmf[: cap + 1])[: cap + 1])
        out[:n] = self.ctx.zeros(n)
        return out + np.concatenate([self.ctx.zeros(n), v[n:]])

    def _rows(self, law, n, cap):
        start = self.ctx.zeros((n, cap + 1))
        for k in range(n):
            start[k, k] = self.ctx.num(1)
        return self.mix(start, law, cap)

    def repeat(self, v, law, threshold, most=None):
        i, cap = self._stage()
        n = min(threshold, cap)
        ends, times = self._rows(law, n, cap)  # rows: the period started at level k < n
        if most is None:
            visits = self.ctx.zeros(n)
            for k in range(n):
                came = np.dot(visits[:k], ends[:k, k]) if k else v[0] * 0
                visits[k] = (v[k] + came) / self.ctx.fsum(list(ends[k, k + 1:]))  # P(the count grows)
            self._add_times(cap, self._pad(np.dot(visits, times)))
            moved = self._pad(np.dot(visits, ends))
            self._epochs(i, moved)
            moved[:n] = self.ctx.zeros(n)
            return moved + np.concatenate([self.ctx.zeros(n), v[n:]])
        g = v[:n].copy()
        rest = np.concatenate([self.ctx.zeros(n), v[n:]])
        for done in range(1, most + 1):
            self._add_times(cap, self._pad(np.dot(g, times)))
            moved = self._pad(np.dot(g, ends))
            self._epochs(i, moved, done)
            rest[n:] = rest[n:] + moved[n:]
            g = moved[:n]
        return self._pad(g) + rest


def _refuse(model, stages):
    r = model.capacity
    for i, s in enumerate(stages):
        if s.kind is not StageKind.INTERRUPT and places(stages, i, 0, r) <= 0:
            raise ParameterError("capacity", f"must be >= 1 here: in the {s.kind.value} stage of the idle period a "
                                 "batch finds r - k = 0 places (its arrival does not start service at once), so "
                                 "nobody could ever be admitted", r)


def _partial_chain(model, ctx, op, s0, r):
    """(pi_0..pi_r unnormalised, the time at each waiting level during the services weighted by pi) under partial
    admission: the cut recursion (2b) with cbar_j = P(Y - 1 + A > j) and the capped level times of a service."""
    service = op.counts(model.service)
    size = op.size
    if ctx.is_float64 and not service.pmf[0] > ctx.tiny:
        raise ArithmeticError("the probability that nobody arrives during a service underflows float64")
    abar = service.geq[1: size + 1]  # P(A > m), m = 0..r+1
    # cbar_j = P(Y - 1 + A > j) = sum_{l<=j} s0_l abar_{j-l} + P(Y - 1 > j), j = 0..r-1 (positive sums)
    beyond = ctx.zeros(r + 1)
    for j in range(r - 1, -1, -1):
        beyond[j] = beyond[j + 1] + s0[j + 1]
    cbar = np.convolve(s0[: r + 1], abar[: r + 1])[: r + 1] + beyond
    seq = SimpleNamespace(a0=service.pmf[0], abar=abar[: r + 1].copy(), abar_rev=abar[: r + 1][::-1].copy(),
                          cbar=cbar)
    pi, _ = cut_recursion(ctx, seq, r)
    start = ctx.zeros(size)  # s_l: the number waiting at a service start, weighted
    start[: r + 1] = s0[: r + 1] * pi[0]
    start[: r] = start[: r] + pi[1:]
    return pi, capped(ctx, start, service.u, service.ubar, r, size)[: r + 1]


def _whole_chain(model, ctx, op, s0, r):
    """The same under whole admission: the service's room matrices (``Rs``, ``Us`` of
    :func:`~qderive.numeric.kernels.vacation.mix_powers` from every room, rooms d = r - waiting) and the positive
    cuts of :func:`~qderive.numeric.kernels.vacation.whole_cut` with P0(end room < d) = sum_l s0_l Rcum[r - l, d]."""
    eye = ctx.zeros((r + 1, r + 1))
    for d in range(r + 1):
        eye[d, d] = ctx.num(1)
    Rs, Us = mix_powers(ctx, eye, op.H[: r + 1, : r + 1], op.batches(model.service), op.lam, op.pmf, op.tail,
                        op.geometric, op.support)
    Rcum = ctx.zeros(Rs.shape)
    Rcum[:, 1:] = np.cumsum(Rs, axis=1)[:, :-1]
    first = s0[: r + 1][::-1]  # the first service's start law in rooms (room r - l for l waiting)
    pi = whole_cut(ctx, r, np.dot(first, Rcum), Rs, Rcum)
    start = s0[: r + 1] * pi[0]
    start[:r] = start[:r] + pi[1:]
    rooms = np.dot(start[::-1], Us)
    return pi, rooms[::-1]


def finite_measures(model, ctx, blocks=None) -> dict:
    """Every measure of ``qderive eval vacation-finite`` (the law ``p`` included) of ``model`` (a
    FiniteVacationQueue, partial or whole admission) with its blocks (or ``blocks``: a rule of one's own), by the
    departure chain and renewal reward (module docstring); context numbers."""
    whole = model.admission is Admission.WHOLE
    blocks = blocks_of(model) if blocks is None else tuple(blocks)
    stages = machine(model, blocks)
    refuse_stuck(model, stages)
    _refuse(model, stages)
    r = model.capacity
    op = (WholePassage if whole else FinitePassage)(model, ctx, stages, r)
    y = passage(blocks, op)
    s0 = y[1:]  # the number waiting at the first service start, 0..r
    pi, serving = (_whole_chain if whole else _partial_chain)(model, ctx, op, s0, r)
    pi0 = pi[0]
    size = op.size
    b1 = ctx.num(model.service.moment(1))
    std = serving + op.times[: r + 1] * pi0
    once = op.at_once[: r + 1] * pi0
    not_serving = pi0 * ctx.fsum(list(op.times) + list(op.at_once))
    departures = ctx.fsum(list(pi))
    t_busy = b1 * departures
    T = not_serving + t_busy
    p_std, p_once = std / T, once / T
    p = p_std + p_once
    bv = batch_vectors(model.batch, size, ctx)
    l1 = ctx.num(model.batch.mean)
    # a batch finding m places loses E (X - m)^+ (partial) or E X 1{X > m} = m P(X > m) + E (X - m)^+ (whole),
    # and nobody is admitted with probability [m = 0] (partial) or P(X > m) (whole): m = r - j, or r + 1 - k
    std_m, once_m = slice(r, None, -1), slice(r + 1, 0, -1)
    lost = ctx.dot(p_std, bv.excess[std_m]) + ctx.dot(p_once, bv.excess[once_m])
    if whole:
        lost = lost + ctx.dot(p_std, ctx.arange(r + 1)[::-1] * bv.tail[std_m]) + ctx.dot(
            p_once, (ctx.arange(r + 1)[::-1] + 1) * bv.tail[once_m])
        blocked = ctx.dot(p_std, bv.tail[std_m]) + ctx.dot(p_once, bv.tail[once_m])
    else:
        blocked = p_std[r]
    nq = ctx.dot(p, ctx.arange(r + 1))
    busy = t_busy / T
    throughput = departures / T
    flow = pi + op.ends[: r + 1] * pi0
    epochs = ctx.fsum(list(flow))
    return {
        "loss_probability": lost / l1,
        "batch_blocking_probability": blocked,
        "idle_probability": not_serving / T,
        "mean_queue_length": nq,
        "mean_wait": nq / throughput,
        "mean_number_in_system": nq + busy,
        "throughput": throughput,
        "p0": p[0],
        "pr": p[r],
        "q0": flow[0] / epochs,
        "qr": flow[r] / epochs,
        "p": p,
    }
