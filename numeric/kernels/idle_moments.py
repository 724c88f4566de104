"""The idle period of M[X]/G/1 with composed blocks on factorial-moment series, and the infinite room's measures.

The interpreter of the primitives ``during``, ``interrupt``, ``wait``, ``repeat`` (the blocks of
``qderive.symbolic.blocks``; the plan of :mod:`.idle_passage` in generated code) over the truncated series at
z = 1 of :mod:`.series`: the first-service law Y, the expected time at each level of the idle period T(z), the
expected numbers of vacation ends (and of those that find the system empty) per idle period. Below the start
threshold N it also carries the law itself (the renewal sums of ``wait`` and ``repeat`` need the probabilities of
the levels 0..N-1). Then :func:`block_infinite_measures` gives the measures of ``qderive eval vacation-infinite``
from the structure derived once (``docs/theory/blocks.md``):

    pi_0 = (1 - rho_bar) / E[Y],   Pi(z) (z - A(z)) = pi_0 A(z) (Y(z) - 1)                               (B1)

and the number waiting P_q(z) = i(z) + b(z) / z, i(z) = (1 - rho_bar) T(z) / T(1) the idle part and
b(z) = rho_bar S(z) E_B(z) the busy part, S(z) = Pi(z) - pi_0 + pi_0 Y(z) the number present at a service start,
E_B(z) = (1 - B*(s)) / (b_1 s), s = lambda (1 - X(z)) (B2). The numbers are context numbers (float, mpf, or SymPy
expressions: the derivation runs the same code over symbols).

A subclass gives three hooks for a law (an object, or an index in generated code): ``arrivals(law)``, the series
of A_L(1 + w) = L*(-lambda xi(w)) = sum_j m_j (lambda xi)^j / j! (the customers arriving during one period,
m_j the law's moments); ``level_times(law)``, that of U_L(1 + w) = (1 - L*(s)) / s = sum_{j>=1} m_j (lambda xi)^{j-1}
/ j!; ``counts(law)`` = (a_0..a_{N-1}, P(A > 0), u_0) of the customers A arriving during one period
(:class:`LawSeriesPassage` computes them from the moments and count vectors it is given).
"""

import math

import numpy

from .idle_passage import renewal
from .series import add, compose, constant, inverse, mul, polynomial, scale


class _SeriesState:
    """The sub-law of the number present on one path of the idle passage: ``low`` its probabilities at the
    levels 0..top-1 (top = the largest threshold), ``ser`` the factorial-moment series of all of it."""

    def __init__(self, low, ser):
        self.low, self.ser = low, ser


def arrival_series(ctx, moments, lam, xi, order):
    """A_L(1 + w) = sum_j m_j (lambda xi(w))^j / j! to w^order (``moments`` = m_0..m_order of the law)."""
    f = [ctx.num(1)] + [moments[j] * lam**j / math.factorial(j) for j in range(1, order + 1)]
    return compose(f, xi)


def level_time_series(ctx, moments, lam, xi, order):
    """U_L(1 + w) = sum_{j>=0} m_{j+1} (lambda xi(w))^j / (j + 1)! to w^order (``moments`` = m_0..m_{order+1})."""
    return compose([moments[j + 1] * lam**j / math.factorial(j + 1) for j in range(order + 1)], xi)


class SeriesPassage:
    """The primitives on factorial-moment series (module docstring). The subclass sets ``ctx``, ``top`` (the
    largest threshold, >= 1), ``order``, ``zero``, ``lam``, ``batch`` (the series of X(1 + w)), ``xi`` (X - 1),
    ``x`` (the batch pmf over 0..top) and calls :meth:`_reset`; it gives the hooks ``arrivals``, ``level_times``,
    ``counts``."""

    def _reset(self):
        self.times = constant(self.zero, self.zero, self.order)
        self.served = constant(self.zero, self.zero, self.order)
        self.ends, self.empty_ends = self.zero, self.zero
        self._pending = None  # the state after a vacation of ``during``: its end is an epoch unless the server waits

    def _settle(self, threshold=None):
        """Count the vacation ends of the last ``during`` as embedded epochs of the thesis (q_0): every one, unless the
        next stage is a ``wait(threshold)`` that the end enters (fewer than N present: the server then waits; the
        same rule as the chain's, ``qderive.symbolic.blocks.machine.epoch_at_end``)."""
        state, self._pending = self._pending, None
        if state is None:
            return
        if threshold is None:
            self.ends += state.ser[0]
            self.empty_ends += state.low[0]
        else:
            self.ends += state.ser[0] - sum(state.low[: min(threshold, self.top)], self.zero)

    def _poly(self, v):
        return polynomial(v, self.order, self.zero)

    def _below(self, v, a):
        """The law of v + A at the levels 0..top-1."""
        return numpy.convolve(v, a)[: self.top]

    def start(self):
        low = self.ctx.zeros(self.top)
        low[0] = self.ctx.num(1)
        return _SeriesState(low, constant(self.ctx.num(1), self.zero, self.order))

    def during(self, state, law, vacation=False):
        self._settle()
        a = self.counts(law)[0]
        self.times = add(self.times, mul(state.ser, self.level_times(law)))
        out = _SeriesState(self._below(state.low, a), mul(state.ser, self.arrivals(law)))
        if vacation:
            self._pending = out
        return out

    def interrupt(self, state, law):
        self._settle()
        a, busy, u0 = self.counts(law)  # busy = P(a batch arrives during the period) = 1 - a_0, a positive sum
        self.times = add(self.times, scale(state.ser, u0))
        self.served = add(self.served, scale(mul(state.ser, self.batch), busy))
        return _SeriesState(state.low * a[0], scale(state.ser, a[0]))

    def wait(self, state, threshold):
        self._settle(threshold)
        n = min(threshold, self.top)
        visits = renewal(self.ctx, state.low[:n], self.x)
        landed = visits - state.low[:n]  # sum_{i>=1} V_{k-i} x_i, the part of the visits that came by a batch
        self.times = add(self.times, scale(self._poly(visits), 1 / self.lam))
        out = add(mul(self._poly(visits), self.batch), scale(self._poly(landed), -1))
        return self._leave(state, n, out)

    def repeat(self, state, law, threshold, most=None):
        self._settle()
        a, busy, _ = self.counts(law)
        n = min(threshold, self.top)
        if most is None:
            visits = renewal(self.ctx, state.low[:n], a, busy)  # U_k: the vacations started at level k
            landed = visits - state.low[:n]  # sum_{i>=0} U_{k-i} a_i: the vacation ends at level k < N
            starts = self._poly(visits)
            self.times = add(self.times, mul(starts, self.level_times(law)))
            self.ends += starts[0]
            self.empty_ends += visits[0] * a[0] if n else self.zero
            out = add(mul(starts, self.arrivals(law)), scale(self._poly(landed), -1))
            return self._leave(state, n, out)
        g = state.low[:n]
        out = constant(self.zero, self.zero, self.order)
        for _ in range(most):  # at most ``most`` periods: the remainder below N goes on to the next block
            p = self._poly(g)
            self.times = add(self.times, mul(p, self.level_times(law)))
            self.ends += p[0]
            self.empty_ends += g[0] * a[0]
            moved = numpy.convolve(g, a)[:n]
            out = add(out, mul(p, self.arrivals(law)), scale(self._poly(moved), -1))
            g = moved
        rest = self._leave(state, n, add(out, self._poly(g)))
        rest.low[:n] = g
        # the last period's ends below N go on to the next stage: epochs by its rule (_settle), like a ``during``
        self.ends -= sum(g, self.zero)
        self.empty_ends -= g[0] if n else self.zero
        self._pending = _SeriesState(rest.low.copy(), self._poly(g))
        return rest

    def _leave(self, state, n, out):
        """The state after the levels below ``n`` left as ``out`` (a series); a threshold below the largest one
        would need the law at n..top-1 after it: no built-in block has one."""
        if n < self.top:
            raise NotImplementedError("a threshold below the largest one of the passage")
        ser = add(state.ser, scale(self._poly(state.low[:n]), -1), out)
        return _SeriesState(self.ctx.zeros(self.top), ser)

    def finish(self, state):
        self._settle()
        return add(state.ser, self.served)


class LawSeriesPassage(SeriesPassage):
    """:class:`SeriesPassage` with the laws given by index (generated code): ``batch_moments`` the factorial
    moments E[(X)_j], j = 1..order; ``x`` the batch pmf over 0..top; ``laws[i]`` = (moments m_0..m_{order+1},
    a_0..a_{top-1}, P(A > 0), u_0) of law i (0: the service)."""

    def __init__(self, ctx, top, order, lam, batch_moments, x, laws):
        self.ctx, self.top, self.order, self.lam = ctx, max(top, 1), order, lam
        self.zero = ctx.num(0)
        self.batch = [ctx.num(1)] + [batch_moments[j - 1] / math.factorial(j) for j in range(1, order + 1)]
        self.xi = [self.zero] + self.batch[1:]
        self.x = x
        self._laws = laws
        self._series = {}
        self._reset()

    def arrivals(self, law):
        key = ("arrivals", law)
        if key not in self._series:
            self._series[key] = arrival_series(self.ctx, self._laws[law][0], self.lam, self.xi, self.order)
        return self._series[key]

    def level_times(self, law):
        key = ("times", law)
        if key not in self._series:
            self._series[key] = level_time_series(self.ctx, self._laws[law][0], self.lam, self.xi, self.order)
        return self._series[key]

    def counts(self, law):
        return self._laws[law][1:]


def block_infinite_measures(ctx, op, Y, service, rho, gap, b1, l1, order=3):
    """The measures of the infinite room (module docstring) from the series ``Y`` of the first-service law and the
    interpreter ``op`` that ran the passage (its ``times``, vacation ends and hooks; ``service`` the service law as
    its hooks name it); ``rho`` = rho_bar = lambda l_1 b_1 and ``gap`` = 1 - rho_bar (exact where the caller has
    it), ``b1`` the mean service time, ``l1`` the mean batch size. q_0 (the queue empty at an embedded epoch: a
    service completion or a vacation end) counts both kinds of epochs per idle period."""
    one = ctx.num(1)
    pi0 = gap / Y[1]
    A = op.arrivals(service)
    shift = Y[1:] + [ctx.num(0)]  # (Y - 1) / w and (A - 1) / w, one order less
    num = scale(mul(A, shift), pi0)
    den = [gap] + [-c for c in A[2:]] + [ctx.num(0)]  # 1 - (A - 1) / w: 1 - rho_bar - A_2 w - ...
    Pi = mul(num, inverse(den))[:order]  # (B1): the number left behind by a departure, to w^(order - 1)
    Ys = Y[:order]
    start = add(Pi, scale(Ys, pi0))
    start[0] -= pi0
    equilibrium = scale(op.level_times(service)[:order], 1 / b1)
    busy = scale(mul(start, equilibrium), rho)
    idle = scale(op.times[:order], gap / op.times[0])
    back = [(-one) ** j for j in range(order)]  # 1 / z = 1 / (1 + w)
    queue = add(idle, mul(busy, back))
    N = queue[1]
    q0 = pi0 * (1 + op.empty_ends) / (1 + pi0 * op.ends)
    return {"q0": q0, "idle_probability": gap, "mean_queue_length": N, "mean_wait": N / (op.lam * l1),
            "queue_length_variance": 2 * queue[2] + N - N * N, "mean_number_in_system": N + rho}
