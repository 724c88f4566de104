"""The idle period of M[X]/G/1/r with composed blocks (close-down, vacations, N-policy, setup), on count vectors.

The blocks (``qderive.symbolic.blocks``) declare the idle passage; its state machine records it as stages
(``qderive.symbolic.blocks.machine``). This kernel interprets a *plan* of those stages -- plain data, so the same
source runs in the package and in generated code -- and computes the finite room's measures from it by the
departure chain and renewal reward (the derivation: ``qderive.numeric.engines.blocks_finite``; the structure
(B1), (B2) of ``docs/theory/blocks.md``; the thesis's cut recursion (2b) and Theorem 1.1 (12) generalised,
``docs/theory/chapter2.md`` sections 2-4).

A plan is a tuple of stages in the order they run after a departure empties the system, each a tuple
``(kind, law, threshold, most, at_once, epochs)``:

``kind``
    ``"during"``, ``"interrupt"``, ``"wait"`` or ``"repeat"`` (the four primitives);
``law``
    the index of the stage's time law among the laws given to :func:`block_finite_measures` (None for ``wait``;
    index 0 is the service);
``threshold``, ``most``
    the start threshold N (``wait``, ``repeat``) and the largest number of periods (``repeat``; None: unbounded);
``at_once``
    True when a batch arriving in this stage starts service at once (it finds r + 1 - k places, else r - k);
``epochs``
    None when the stage's period ends are not embedded epochs (not a vacation); else, for each number ``done`` of
    periods run (0 for a stage without a bound), a tuple of flags over the levels k = 0..top (its last flag for
    every k >= top): whether a period's end leaving k present is an embedded epoch.

With partial admission a batch finding m places admits min(X, m) (:class:`CountPassage`); with whole admission
only a batch that fits entirely (:class:`WholeCountPassage`: the room process of the service's room matrices).
Every quantity is a sum of positive terms.
"""

import numpy

from .arrivals import arrival_counts_of_times
from .vacation import convolve, cut_recursion, mix_powers, room_kernel, whole_cut


def renewal(ctx, low, jumps, stay=None):
    """Expected visits V_k, k < len(low), of a walk upward started with the sub-law ``low`` and jumps of law
    ``jumps``: V_k = (low_k + sum_{i>=1} V_{k-i} jumps_i) / stay (``stay`` = 1 - jumps_0 when the walk may stay at a
    level, as across a vacation; None: it may not, as across a batch). Positive terms; O(n^2) in inner products."""
    visits = ctx.zeros(len(low))
    for k in range(len(low)):
        into = ctx.dot(visits[:k][::-1], jumps[1: k + 1]) if k else low[k] * 0
        visits[k] = (low[k] + into) if stay is None else (low[k] + into) / stay
    return visits


def at_least(ctx, tail_above):
    """P(A >= m), m = 0..len: 1 then P(A > m - 1) (``tail_above`` = P(A > m))."""
    out = ctx.zeros(len(tail_above) + 1)
    out[0] = ctx.num(1)
    out[1:] = tail_above
    return out


class Jumps:
    """A jump law over 0..n (``pmf``) with P(J >= m) (``geq``), and the level-time pair (``u``, ``ubar``) when it
    is the arrivals of a time (u_m the expected time with m arrived so far, Ubar_m = sum_{i>=m} u_i)."""

    def __init__(self, pmf, geq, u=None, ubar=None):
        self.pmf, self.geq, self.u, self.ubar = pmf, geq, u, ubar


def capped(ctx, v, pmf, geq, cap, size):
    """The law of min(K + J, cap), K ~ v (zero beyond ``cap``) and J ~ ``pmf`` independent, over 0..size-1:
    out_j = sum_k v_k pmf_{j-k} (j < cap), out_cap = sum_{k<=cap} v_k P(J >= cap - k) (positive sums). With
    (u, Ubar) for (pmf, geq) it gives the expected time at each level during one period of a time."""
    out = ctx.zeros(size)
    w = v[: cap + 1]
    if cap:
        out[:cap] = convolve(w, pmf[:cap], cap)
    out[cap] = ctx.dot(w, geq[cap::-1][: len(w)])
    return out


def _never_met(threshold, k):
    return ValueError(f"the start threshold N = {threshold} can never be met: with {k} present no batch fits the "
                      "room and the count stays below N")


class CountPassage:
    """The primitives on count vectors over 0..r+1 in the finite room r, partial admission (module docstring):
    a batch arriving with k present turns it into min(k + X, cap), cap = r + 1 when it starts service at once,
    else r. ``counts``: the customers arriving during one period of each law (a, P(A >= m), u, Ubar) as
    :class:`Jumps`; ``x``: the batch's.

    After :func:`run_passage`: the first-service law (its result), ``times`` (expected time at level k with r - k
    places per idle period), ``at_once`` (r + 1 - k places), ``ends`` (expected embedded vacation ends at level
    k)."""

    def __init__(self, ctx, plan, room, lam, x, counts):
        self.ctx, self.plan, self.room, self.lam, self.x, self._counts = ctx, plan, room, lam, x, counts
        self.size = room + 2
        self.times = ctx.zeros(self.size)
        self.at_once = ctx.zeros(self.size)
        self.ends = ctx.zeros(self.size)
        self.served = ctx.zeros(self.size)
        self.i = 0

    def counts(self, law):
        return self._counts[law]

    def _stage(self):
        """(index, cap) of the next stage: the count after a batch is at most k + places = cap."""
        i, self.i = self.i, self.i + 1
        return i, self.room + (1 if self.plan[i][4] else 0)

    def _epochs(self, i, out, done=0):
        """Add the period ends of stage ``i`` (``done`` periods of it run) leaving the law ``out`` that are embedded
        epochs (the stage's flags)."""
        flags = self.plan[i][5]
        if flags is None:
            return
        flags = flags[done]
        top = len(flags) - 1
        for k in range(self.size):
            if flags[min(k, top)]:
                self.ends[k] = self.ends[k] + out[k]

    def _add_times(self, cap, vector):
        if cap > self.room:
            self.at_once = self.at_once + vector
        else:
            self.times = self.times + vector

    def start(self):
        v = self.ctx.zeros(self.size)
        v[0] = self.ctx.num(1)
        return v

    def during(self, v, law, vacation=False):
        """A period of ``law``: k -> min(k + A, cap), the time at level j sum_k v_k u_{j-k} (j < cap) and
        sum_k v_k Ubar_{cap-k} at the cap; its ends are epochs when it is a vacation (the plan's flags, which the
        argument ``vacation`` of the primitive repeats)."""
        i, cap = self._stage()
        c = self.counts(law)
        self._add_times(cap, capped(self.ctx, v, c.u, c.ubar, cap, self.size))
        out = capped(self.ctx, v, c.pmf, c.geq, cap, self.size)
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


class WholeCountPassage(CountPassage):
    """The same primitives under whole admission (a batch is admitted only if it fits entirely: k + x <= cap; the
    threshold counts admitted customers). Within a time the number present follows the room process of
    :func:`~qderive.numeric.kernels.vacation.mix_powers` (room d = cap - k, a batch of x fits when x <= d);
    ``interrupt`` ends at the first batch that fits (the others are refused and the close-down goes on), ``wait``
    leaves level k at rate lambda f_k, f_k = P(X <= cap - k). ``batch`` = (pmf, tail, geometric, support) over
    0..r+2; ``counts[law](size)`` = (beta, P(K > k), sum_{i>k} P(K > i)) of the batches arriving during one period
    of the law (the last for the room kernel's closed sums, :func:`~qderive.numeric.kernels.vacation.mix_powers`). A
    threshold that can never be met (no batch fits below it) raises ValueError."""

    def __init__(self, ctx, plan, room, lam, batch, counts):
        super().__init__(ctx, plan, room, lam, None, counts)
        self.pmf, self.tail, self.geometric, self.support = batch
        self.H = room_kernel(ctx, self.pmf, self.tail, self.size - 1)  # rooms 0..r+1

    def mix(self, start, law, cap, kernel=None):
        """(end law, level times) in levels 0..cap of the room process during one period of ``law`` from the rows
        of ``start`` (levels 0..cap); ``kernel``: another room kernel (diagonal: the interrupt)."""
        H = self.H[: cap + 1, : cap + 1] if kernel is None else kernel
        structure = (self.geometric, self.support) if kernel is None else (None, None)
        # the room kernel: the sum stops once the rooms a batch fits are empty (closed, the absorbing rooms' rest
        # summed exactly), not when the count itself is negligible (a lognormal service: 16384 terms, refused)
        ends, times = mix_powers(self.ctx, start[..., ::-1], H, self.counts(law), self.lam, self.pmf, self.tail,
                                 *structure, closed=kernel is None)
        return ends[..., ::-1], times[..., ::-1]

    def _pad(self, v):
        out = self.ctx.zeros(self.size)
        out[: len(v)] = v
        return out

    def fits(self, cap, n):
        """f_k = P(X <= cap - k), k = 0..n-1 (positive partial sums of the pmf)."""
        cum = numpy.cumsum(self.pmf[: cap + 1])
        return self.ctx.array([cum[cap - k] for k in range(n)])

    def during(self, v, law, vacation=False):
        i, cap = self._stage()
        out, times = self.mix(v[: cap + 1], law, cap)
        self._add_times(cap, self._pad(times))
        out = self._pad(out)
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
        self.served = self.served + self._pad(numpy.convolve(ended, self.pmf[: n])[:n])
        return self._pad(rest)

    def wait(self, v, threshold):
        i, cap = self._stage()
        n = min(threshold, cap)
        f = self.fits(cap, n)
        rate = self.ctx.zeros(n)  # W_k = V_k / f_k: the batches that fit, per unit of pmf, arriving at level k
        for k in range(n):
            came = numpy.dot(rate[:k][::-1], self.pmf[1: k + 1]) if k else v[0] * 0
            if not f[k] > 0:
                if v[k] + came != 0:
                    raise _never_met(threshold, k)
                continue
            rate[k] = (v[k] + came) / f[k]
        self._add_times(cap, self._pad(rate / self.lam))
        out = self._pad(numpy.convolve(rate, self.pmf[: cap + 1])[: cap + 1])
        out[:n] = self.ctx.zeros(n)
        return out + numpy.concatenate([self.ctx.zeros(n), v[n:]])

    def _rows(self, law, n, cap):
        start = self.ctx.zeros((n, cap + 1))
        for k in range(n):
            start[k, k] = self.ctx.num(1)
        return self.mix(start, law, cap)

    def repeat_visits(self, v, ends, n, threshold):
        """U_k, k < n: the periods started at level k (``ends`` the end law of one period from each level k < n),
        U_k P(the count grows) = v_k + sum_{i<k} U_i ends[i, k] (positive terms)."""
        visits = self.ctx.zeros(n)
        for k in range(n):
            came = numpy.dot(visits[:k], ends[:k, k]) if k else v[0] * 0
            grows = self.ctx.fsum(list(ends[k, k + 1:]))  # P(the count grows)
            if not grows > 0:
                if v[k] + came != 0:
                    raise _never_met(threshold, k)
                continue
            visits[k] = (v[k] + came) / grows
        return visits

    def repeat(self, v, law, threshold, most=None):
        i, cap = self._stage()
        n = min(threshold, cap)
        ends, times = self._rows(law, n, cap)  # rows: the period started at level k < n
        if most is None:
            visits = self.repeat_visits(v, ends, n, threshold)
            self._add_times(cap, self._pad(numpy.dot(visits, times)))
            moved = self._pad(numpy.dot(visits, ends))
            self._epochs(i, moved)
            moved[:n] = self.ctx.zeros(n)
            return moved + numpy.concatenate([self.ctx.zeros(n), v[n:]])
        g = v[:n].copy()
        rest = numpy.concatenate([self.ctx.zeros(n), v[n:]])
        for done in range(1, most + 1):
            self._add_times(cap, self._pad(numpy.dot(g, times)))
            moved = self._pad(numpy.dot(g, ends))
            self._epochs(i, moved, done)
            rest[n:] = rest[n:] + moved[n:]
            g = moved[:n]
        return self._pad(g) + rest


def run_passage(op, plan):
    """The first-service law of the idle passage ``plan`` run on the interpreter ``op`` (stage by stage, as the
    blocks call the primitives)."""
    state = op.start()
    for kind, law, threshold, most, _, epochs in plan:
        if kind == "during":
            state = op.during(state, law, epochs is not None)
        elif kind == "interrupt":
            state = op.interrupt(state, law)
        elif kind == "wait":
            state = op.wait(state, threshold)
        elif kind == "repeat":
            state = op.repeat(state, law, threshold, most)
        else:
            raise ValueError(f"unknown stage {kind!r}")
    return op.finish(state)


class _CutSequences:
    """The sequences of the cut recursion (2b) (:func:`~qderive.numeric.kernels.vacation.cut_recursion`)."""

    def __init__(self, a0, abar, cbar):
        self.a0, self.abar, self.abar_rev, self.cbar = a0, abar.copy(), abar[::-1].copy(), cbar


def partial_chain(ctx, op, s0, r):
    """(pi_0..pi_r unnormalised, the time at each waiting level during the services weighted by pi) under partial
    admission: the cut recursion (2b) with cbar_j = P(Y - 1 + A > j) and the capped level times of a service."""
    service = op.counts(0)
    size = op.size
    if ctx.is_float64 and not numpy.all(service.pmf[0] > ctx.tiny):
        raise ArithmeticError("the probability that nobody arrives during a service underflows float64")
    abar = service.geq[1: size + 1]  # P(A > m), m = 0..r+1
    # cbar_j = P(Y - 1 + A > j) = sum_{l<=j} s0_l abar_{j-l} + P(Y - 1 > j), j = 0..r-1 (positive sums)
    beyond = ctx.zeros(r + 1)
    for j in range(r - 1, -1, -1):
        beyond[j] = beyond[j + 1] + s0[j + 1]
    cbar = convolve(s0[: r + 1], abar[: r + 1], r + 1) + beyond
    pi, _ = cut_recursion(ctx, _CutSequences(service.pmf[0], abar[: r + 1], cbar), r)
    start = ctx.zeros(size)  # s_l: the number waiting at a service start, weighted
    start[: r + 1] = s0[: r + 1] * pi[0]
    start[: r] = start[: r] + pi[1:]
    return pi, capped(ctx, start, service.u, service.ubar, r, size)[: r + 1]


def whole_chain(ctx, op, s0, r):
    """The same under whole admission: the service's room matrices (``Rs``, ``Us`` of
    :func:`~qderive.numeric.kernels.vacation.mix_powers` from every room, rooms d = r - waiting) and the positive
    cuts of :func:`~qderive.numeric.kernels.vacation.whole_cut` with P0(end room < d) = sum_l s0_l Rcum[r - l, d]."""
    eye = ctx.zeros((r + 1, r + 1))
    for d in range(r + 1):
        eye[d, d] = ctx.num(1)
    Rs, Us = mix_powers(ctx, eye, op.H[: r + 1, : r + 1], op.counts(0), op.lam, op.pmf, op.tail, op.geometric,
                        op.support, closed=True)
    Rcum = ctx.zeros(Rs.shape)
    Rcum[:, 1:] = numpy.cumsum(Rs, axis=1)[:, :-1]
    first = s0[: r + 1][::-1]  # the first service's start law in rooms (room r - l for l waiting)
    pi = whole_cut(ctx, r, numpy.dot(first, Rcum), Rs, Rcum)
    start = s0[: r + 1] * pi[0]
    start[:r] = start[:r] + pi[1:]
    rooms = numpy.dot(start[::-1], Us)
    return pi, rooms[::-1]


def block_passage(ctx, plan, room, lam, batch, columns, counts, means, whole, kinds=None):
    """The interpreter of the idle passage ``plan`` in the room r = ``room`` (arguments as for
    :func:`block_finite_measures`): :class:`WholeCountPassage` under whole admission, else :class:`CountPassage` with
    the customers arriving during each law's period; ``kinds`` = (partial class, whole class) replaces the two
    (subclasses: the wait's recording passage, ``qderive.numeric.kernels.block_wait``)."""
    partial, whole_kind = kinds or (CountPassage, WholeCountPassage)
    size = room + 2
    pmf, tail, _, _, geometric, support = batch(size + 1 if whole else size)
    if whole:
        return whole_kind(ctx, plan, room, lam, (pmf, tail, geometric, support),
                          [lambda n, c=c: c(n)[:3] for c in counts])
    found = arrival_counts_of_times(ctx, [(*c(size), m) for c, m in zip(counts, means)], columns(size), lam, size)
    jumps = [Jumps(a, at_least(ctx, abar), u, ubar) for a, abar, u, ubar in found]
    x = Jumps(pmf[:size], at_least(ctx, tail[:size]))
    return partial(ctx, plan, room, lam, x, jumps)


def block_finite_measures(ctx, plan, room, lam, batch, columns, counts, means, b1, whole):
    """Every measure of the finite room r = ``room`` with the idle passage ``plan`` (module docstring), as
    context numbers (the law ``p`` of the number waiting included).

    ``lam`` the batch rate; ``batch(n)`` -> (pmf, tail, excess, l1, geometric, support) of the batch law over
    0..n; ``columns(n)`` its convolution blocks (:func:`~qderive.numeric.kernels.batches.convolution_blocks`);
    ``counts[i](n)`` -> (beta, P(K > k), sum_{i>k} P(K > i)) over 0..n of the batches arriving during one period
    of law i (0: the service, then the laws the plan names) and ``means[i]`` its mean; ``b1`` the mean service
    time; ``whole``: whole admission.

    The departure chain on 0..r (the number left behind) by the cut recursion (2b) with the first-service law y
    of the passage (partial: a_0 pi_{j+1} = pi_0 cbar_j + sum_{i=1}^{j} pi_i abar_{j-i+1},
    cbar_j = P(Y - 1 + A > j); whole: the room matrices' cuts), renewal reward over the intervals between
    departures (mean interval T = pi_0 E[I] + b_1 sum_j pi_j): p_l = (time at waiting level l) / T, the idle
    probability pi_0 E[I] / T, the throughput sum_j pi_j / T, the loss sum over the states of the time fraction
    times E (X - m)^+ / l_1 (m the places a batch finds; whole: E X 1{X > m} / l_1, Theorem 1.1 (12)
    generalised), the batch blocking (no place; whole: P(X > m)), q_0 and q_r over the embedded epochs (service
    completions and vacation ends)."""
    r = room
    size = r + 2
    pmf, tail, excess, l1, geometric, support = batch(size + 1 if whole else size)
    op = block_passage(ctx, plan, r, lam, batch, columns, counts, means, whole)
    y = run_passage(op, plan)
    s0 = y[1:]  # the number waiting at the first service start, 0..r
    pi, serving = (whole_chain if whole else partial_chain)(ctx, op, s0, r)
    pi0 = pi[0]
    std = serving + op.times[: r + 1] * pi0
    once = op.at_once[: r + 1] * pi0
    not_serving = pi0 * ctx.fsum(list(op.times) + list(op.at_once))
    departures = ctx.fsum(list(pi))
    t_busy = b1 * departures
    T = not_serving + t_busy
    p_std, p_once = std / T, once / T
    p = p_std + p_once
    # a batch finding m places loses E (X - m)^+ (partial) or E X 1{X > m} = m P(X > m) + E (X - m)^+ (whole),
    # and nobody is admitted with probability [m = 0] (partial) or P(X > m) (whole): m = r - j, or r + 1 - k
    std_m, once_m = slice(r, None, -1), slice(r + 1, 0, -1)
    lost = ctx.dot(p_std, excess[std_m]) + ctx.dot(p_once, excess[once_m])
    if whole:
        lost = lost + ctx.dot(p_std, ctx.arange(r + 1)[::-1] * tail[std_m]) + ctx.dot(
            p_once, (ctx.arange(r + 1)[::-1] + 1) * tail[once_m])
        blocked = ctx.dot(p_std, tail[std_m]) + ctx.dot(p_once, tail[once_m])
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
