"""Hysteretic overload control M[X]|G|1|(L,H)|(H,R): the embedded chain (16) and the measures (17)-(23).

Sopin 2013, chapter 3, as reconstructed in ``docs/theory/chapter3.md``. Batches arrive at rate
lambda_s in control mode s (0 normal, 1 overload, 2 discard with lambda_2 = 0); one server
with general service B (mean b_1); at most R customers in the system, the one in service
included (partial acceptance: the excess of a batch is lost). The mode changes only at
departure epochs t_n, by the count n^- just before the departure (``left=False``, the
*event* convention: normal -> overload at n^- >= H, -> discard at n^- >= R; overload ->
normal when the departure leaves L - 1; discard -> overload when it leaves H) or by the
count left behind (the *left* convention, onset j >= H). Embedded states (j, s) = (count
left behind, mode): S_0^e = {(j, 0): j = 0..onset-2}, S_1^e = {(j, 1): j = L..R-2},
S_2^e = {(j, 2): j = H+1..R-1} (section 1 of the spec; with R = H + 1 there is no discard
state: the departure that reaches R leaves H behind, so discard is entered and left at the
same epoch and the chain continues in (R - 1, 1)).

This kernel, written once against an arithmetic context ``ctx`` (float64 or mpmath):

* :class:`HystereticInputs` (built by :func:`hysteretic_inputs` from the laws' kernel calls) --
  everything that does not depend on L and H: the laws of n^- and the expected time at each
  count during one inter-departure interval (the idle period and the service that follows it,
  or one service), from the arrival counts (a, abar, u, Ubar) of each mode
  (:func:`qderive.numeric.kernels.arrivals.arrival_counts`);
* :class:`HystereticChain` -- the transition matrix of X(t_n + 0), (16), and the exit
  probabilities of the normal block P_0 (20) as positive tails P(n^- >= onset);
* :class:`HystereticSolution` -- the stationary vector q by the one GTH elimination
  (:func:`~qderive.numeric.kernels.chains.gth_stationary`; it skips the zero entries, so the
  chain, skip-free to the left, costs O(n^2)), C = b_1 + q_{0,0}/lambda_0 (17), the mode
  probabilities (18), (19), the time-stationary law (17), E tau_0 (21) by the one
  subtraction-free M-matrix solve (:func:`~qderive.numeric.kernels.chains.mmatrix_solve`:
  the upper Hessenberg block I - P_0 costs O(H^2), and its entrywise accuracy does not depend
  on kappa_inf(I - P_0)), E tau_12 (22), E tau (23), the renewal identity
  E tau = C / (q_{L,1} a_0^{(1)}) (spec section 7), the loss and the throughput 1/C.

Every quantity is a sum of positive terms. ``qderive codegen hysteretic`` ships this file
verbatim.
"""

import math

import numpy

from .arrivals import arrival_counts
from .chains import gth_stationary, mmatrix_solve

#: the measure keys of ``qderive eval hysteretic``, then the diagnostics
HYSTERETIC_KEYS = ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time",
                   "mean_cycle_time", "loss_probability", "throughput", "mean_time_between_mode_changes")
#: a float64 result is not trusted when kappa_inf(I - P_0) * eps exceeds this
HYSTERETIC_KAPPA_SWITCH = 1e-6
#: ... or when the renewal identity E tau = C / (q_{L,1} a_0^(1)) fails by more than this (relative)
HYSTERETIC_RENEWAL_TOLERANCE = 1e-10


def hysteretic_convolution(ctx, x, y, n):
    """c_t = sum_{i=0}^{t} x_i y_{t-i} for t = 0..n-1 (positive terms): numpy's convolution in float64,
    dot products in other contexts (n^2/2 products, none beyond t = n - 1)."""
    if n <= 0:
        return ctx.zeros(0)
    if ctx.is_float64:
        return numpy.convolve(x[:n], y[:n])[:n]
    out = ctx.zeros(n)
    for t in range(n):
        out[t] = ctx.dot(x[: t + 1], y[t:: -1])
    return out


def hysteretic_idle_counts(ctx, b1, n):
    """(a, abar, u, Ubar) over 0..n of a service during which no batch arrives (lambda_s = 0).

    a_0 = 1, abar = 0, u_0 = Ubar_0 = b_1 and u_m = Ubar_m = 0 for m >= 1: the overload mode
    of complete blocking (overload factor 0).
    """
    a, abar, u, ubar = ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1)
    a[0] = ctx.num(1)
    u[0] = b1
    ubar[0] = b1
    return a, abar, u, ubar


class HystereticInputs:
    """The quantities of the chain that do not depend on L and H (reuse them over a threshold grid).

    ``counts[s]`` = (a, abar, u, Ubar) over 0..R of one service in mode s = 0, 1 (abar_n =
    P(A > n), u_n the expected time with n arrivals so far, Ubar_m the time with at least m);
    ``pmf``, ``tail``, ``excess`` the batch law over 0..R (l_i, P(X > i), E (X - m)^+);
    ``lam`` = (lambda_0, lambda_1), ``throttle`` = lambda_0 - lambda_1 (computed by the caller
    without cancellation), ``b1``, ``l1`` the means. Derived here (``docs/theory/chapter3.md`` sections 2-4):

    * ``ge[s][n]`` = P(A^{(s)} >= n), the chapter-3 bar-a (ge_0 = 1, ge_n = abar_{n-1});
    * ``first[c]`` = l_c (c < R), P(X >= R) (c = R): the count when the first batch of an idle
      period arrives;
    * ``idle_next[c]`` = sum_{c0} first[c0] a^{(0)}_{c-c0} (c < R), the law of n^- of the service
      that follows the idle period (its mass at R as a positive tail);
    * ``idle_profile[c]``: the expected time at count c from the departure that empties the system
      to the next departure: 1/lambda_0 at c = 0, then sum_{c0} first[c0] u^{(0)}_{c-c0}, and the
      time at R from Ubar.
    """

    def __init__(self, ctx, counts0, counts1, pmf, tail, excess, lam0, lam1, throttle, b1, l1, R):
        self.ctx, self.R = ctx, R
        self.lam, self.throttle, self.b1, self.l1 = (lam0, lam1), throttle, b1, l1
        self.counts = (counts0, counts1)
        ge = []
        for a, abar, _, _ in self.counts:
            g = ctx.zeros(R + 1)
            g[0] = ctx.num(1)
            g[1:] = abar[:R]
            ge.append(g)
        self.ge = tuple(ge)
        first = ctx.zeros(R + 1)
        first[1:R] = pmf[1:R]
        first[R] = tail[R - 1]
        self.first = first
        self.excess = excess[: R + 1].copy()
        a0, _, u0, ubar0 = counts0
        idle_next, idle_profile = ctx.zeros(R + 1), ctx.zeros(R + 1)
        idle_next[1:R] = hysteretic_convolution(ctx, first[1:R], a0, R - 1)
        idle_profile[1:R] = hysteretic_convolution(ctx, first[1:R], u0, R - 1)
        idle_next[R] = ctx.dot(first[1:R], self.ge[0][R - 1: 0: -1]) + first[R]
        idle_profile[R] = ctx.dot(first[1:R], ubar0[R - 1: 0: -1]) + first[R] * b1
        idle_profile[0] = 1 / lam0
        self.idle_next, self.idle_profile = idle_next, idle_profile

    def next_count(self, j, s):
        """Law of n^- (count just before the next departure) over 0..R from the embedded state (j, s)."""
        if j == 0:
            return self.idle_next
        R, d = self.R, self.ctx.zeros(self.R + 1)
        if s == 2:
            d[j] = self.ctx.num(1)
            return d
        d[j:R] = self.counts[s][0][: R - j]
        d[R] = self.ge[s][R - j]
        return d

    def profile(self, j, s):
        """Expected time at each count 0..R until the next departure from (j, s).

        J^{(s)}(c - j) = u^{(s)}_{c-j} for j <= c < R and Ubar^{(s)}_{R-j} at R (spec section 4);
        a discard-mode service stays at j; from (0, 0) the idle period and the first service.
        """
        if j == 0:
            return self.idle_profile
        R, t = self.R, self.ctx.zeros(self.R + 1)
        if s == 2:
            t[j] = self.b1
            return t
        _, _, u, ubar = self.counts[s]
        t[j:R] = u[: R - j]
        t[R] = ubar[R - j]
        return t


def hysteretic_inputs(ctx, service_counts, batch, columns, lam, throttle, b1, l1, R):
    """The :class:`HystereticInputs` of a model from its laws, as kernel callables.

    ``service_counts(s, n)`` -> (beta, P(K > k), sum_{i>k} P(K > i)) over 0..n: the batches arriving
    during one service in mode s (:mod:`~qderive.numeric.kernels.counts`); ``batch`` = (pmf, tail,
    excess) over 0..R; ``columns()`` -> the batch law's convolution blocks over 0..R (built once,
    for both modes); ``lam`` = (lambda_0, lambda_1). A mode with lambda_s = 0 (complete blocking)
    has :func:`hysteretic_idle_counts`; with lambda_1 = lambda_0 the counts are shared.
    """
    pmf, tail, excess = batch
    cols = []

    def counts(s):
        if lam[s] == 0:
            return hysteretic_idle_counts(ctx, b1, R)
        if not cols:
            cols.extend(columns())
        beta, tail_k, tail2_k = service_counts(s, R)
        return arrival_counts(ctx, beta, tail_k, tail2_k, cols, lam[s], b1, R)

    c0 = counts(0)
    c1 = c0 if lam[1] == lam[0] else counts(1)
    return HystereticInputs(ctx, c0, c1, pmf, tail, excess, lam[0], lam[1], throttle, b1, l1, R)


def hysteretic_next_state(n_minus, s, L, H, R, onset):
    """The embedded state after a departure in mode s whose count just before it was n^-.

    j = n^- - 1 is left behind. Discard: j <= H -> overload. Otherwise n^- >= R -> discard
    (entered at (R - 1, 2), or at once overload if R - 1 <= H). Normal: n^- >= onset ->
    overload (onset = H: event convention; H + 1: left convention). Overload: j <= L - 1 -> normal.
    """
    j = n_minus - 1
    if s == 2:
        return (j, 1) if j <= H else (j, 2)
    if n_minus >= R:
        return (R - 1, 2) if R - 1 > H else (R - 1, 1)
    if s == 0:
        return (j, 1) if n_minus >= onset else (j, 0)
    return (j, 0) if j <= L - 1 else (j, 1)


def hysteretic_states(L, H, R, onset):
    """The embedded states in the solver's order: normal j = 0..onset-2, overload j = L..R-2
    (R - 1 when R = H + 1), discard j = H+1..R-1 (P_0 of (20) is the leading block)."""
    top = R - 2 if R - 1 > H else R - 1
    return ([(j, 0) for j in range(onset - 1)] + [(j, 1) for j in range(L, top + 1)]
            + [(j, 2) for j in range(H + 1, R)])


class HystereticChain:
    """The embedded chain X(t_n + 0) (16): ``states``, ``index``, transition matrix ``P`` and ``exits``.

    From (i, s), i >= 1, s in {0, 1}: n^- = min(R, i + A^{(s)}); from (0, 0): n^- = min(R,
    min(X, R) + A^{(0)}); from (i, 2): n^- = i. The next state is :func:`hysteretic_next_state`.
    ``exits[i]`` = P(n^- >= onset) from the normal state i: the row deficits of P_0, as tails.
    """

    def __init__(self, ctx, inputs, L, H, R, onset):
        self.ctx, self.inputs = ctx, inputs
        self.L, self.H, self.R, self.onset = L, H, R, onset
        self.states = hysteretic_states(L, H, R, onset)
        self.index = {st: k for k, st in enumerate(self.states)}
        self.n_normal = onset - 1
        n = len(self.states)
        P = ctx.zeros((n, n))
        dest = {s: numpy.array([-1] + [self.index[hysteretic_next_state(c, s, L, H, R, onset)]
                                       for c in range(1, R + 1)]) for s in (0, 1)}
        for k, (j, s) in enumerate(self.states):
            if s == 2:
                P[k, self.index[hysteretic_next_state(j, 2, L, H, R, onset)]] = ctx.num(1)
                continue
            law = inputs.next_count(j, s)
            lo = max(j, 1)
            P[k, dest[s][lo:]] = law[lo:]
        self.P = P
        exits = ctx.zeros(self.n_normal)
        exits[0] = ctx.fsum(list(inputs.idle_next[onset:]))
        for j in range(1, self.n_normal):
            exits[j] = inputs.ge[0][onset - j]
        self.exits = exits

    def profile(self, k):
        """Expected time at each count 0..R until the next departure from ``states[k]``."""
        return self.inputs.profile(*self.states[k])


def hysteretic_censored(ch):
    """(A, entry): the transition matrix of the :class:`HystereticChain` ``ch`` censored on the normal and overload
    states, and the flow into (R-1, 2) from each of them (None when there is no discard state: A is then P itself).

    The discard states drain one by one ((16c): (j, 2) -> (j-1, 2) -> ... -> (H, 1) with
    probability 1), so the censored chain sends the flow into (R-1, 2) to (H, 1).
    """
    drain = ch.R - 1 - ch.H  # the discard states, last in the order
    if drain <= 0:
        return ch.P, None
    keep = len(ch.states) - drain
    entry = ch.P[:keep, ch.index[(ch.R - 1, 2)]].copy()
    A = ch.P[:keep, :keep].copy()
    out = ch.index[(ch.H, 1)]
    A[:, out] = A[:, out] + entry
    return A, entry


class HystereticSolution:
    """The solved chain: q (GTH), C, and every measure of chapter 3 as a method.

    ``label`` selects label semantics (the ideal hysteresis applied to the count path, spec
    section 5) instead of interval semantics (the mode whose arrival rate is in force).
    """

    def __init__(self, ctx, inputs, L, H, R, onset, chain=None, censored_law=None):
        self.ctx, self.inputs = ctx, inputs
        self.chain = HystereticChain(ctx, inputs, L, H, R, onset) if chain is None else chain
        self.q = self._stationary(censored_law)
        blocks = [[k for k, st in enumerate(self.chain.states) if st[1] == s] for s in range(3)]
        self.sums = tuple(ctx.fsum([self.q[k] for k in b]) if b else ctx.num(0) for b in blocks)
        # C = b_1 + q_{0,0} / lambda_0: mean time between departures (17)
        self.C = inputs.b1 + self.q[0] / inputs.lam[0]

    def censored(self):
        """:func:`hysteretic_censored` of the chain."""
        return hysteretic_censored(self.chain)

    def _stationary(self, x=None):
        """q of (16) from the stationary vector x of the chain censored on the normal and overload states
        (:meth:`censored`; by GTH unless given).

        x is q up to a factor, and every q_{j,2} equals the flow into (R-1, 2), f = sum_k x_k P_{k,(R-1,2)}
        ((16d)). GTH would perform exactly these steps first.
        """
        ctx, ch = self.ctx, self.chain
        n = len(ch.states)
        A, entry = self.censored()
        if x is None:
            x = gth_stationary(ctx, A)
        if entry is None:
            return x
        drain = ch.R - 1 - ch.H
        keep = n - drain
        f = ctx.dot(x, entry)
        q = ctx.zeros(n)
        q[:keep] = x
        q[keep:] = f
        return q / (1 + drain * f)

    def _label_ranges(self, s, label):
        """(label, first count, last count + 1) of the moments of a mode-s interval (spec section 4)."""
        R, H = self.chain.R, self.chain.H
        if not label or s == 2:
            return ((s, 0, R + 1),)
        if s == 0:
            return ((0, 0, H), (1, H, R), (2, R, R + 1))
        return ((1, 0, R), (2, R, R + 1))

    def time_distribution(self, label=False):
        """p[s][c]: probability of count c with mode (or label) s at an arbitrary time, (17).

        p = (1/C) sum_{(i,s')} q_{i,s'} x (expected time at count c with mode/label s during the
        interval that starts in (i, s')). Three context vectors over c = 0..R.
        """
        ctx, R = self.ctx, self.chain.R
        cols = [ctx.zeros(R + 1) for _ in range(3)]
        for k, (j, s) in enumerate(self.chain.states):
            t = self.chain.profile(k) * self.q[k]
            for x, lo, hi in self._label_ranges(s, label):
                cols[x][lo:hi] = cols[x][lo:hi] + t[lo:hi]
        return [c / self.C for c in cols]

    def embedded_law(self):
        """q_{j,s} of (16) as three context vectors [s][j] over j = 0..R-1 (0 where (j, s) is not a state)."""
        ctx, R = self.ctx, self.chain.R
        cols = [ctx.zeros(R) for _ in range(3)]
        for k, (j, s) in enumerate(self.chain.states):
            cols[s][j] = self.q[k]
        return cols

    def laws(self, label=False):
        """The distributions of ``qderive eval hysteretic --distribution``: ``embedded_law`` q_{j,s} (16)
        ([s][j], j = 0..R-1), ``time_law`` p_{j,s} (17) ([s][j], j = 0..R; the label s under ``label``)
        and ``number_law`` p_j = p_{j,0} + p_{j,1} + p_{j,2} (positive sums)."""
        p = self.time_distribution(label)
        return {"embedded_law": self.embedded_law(), "time_law": p, "number_law": p[0] + p[1] + p[2]}

    def mode_probabilities(self, label=False):
        """(P(S_0), P(S_1), P(S_2)): (18), (19) in interval semantics,
        P(S_1) = (b_1/C) sum_{j=L}^{R-2} q_{j,1}, P(S_2) = (b_1/C) sum_{j=H+1}^{R-1} q_{j,2},
        P(S_0) = (b_1 sum_j q_{j,0} + q_{0,0}/lambda_0)/C; label semantics: column sums of (17)."""
        ctx, inp = self.ctx, self.inputs
        if label:
            return tuple(ctx.fsum(list(col)) for col in self.time_distribution(True))
        p0 = (inp.b1 * self.sums[0] + self.q[0] / inp.lam[0]) / self.C
        return p0, inp.b1 * self.sums[1] / self.C, inp.b1 * self.sums[2] / self.C

    def normal_time(self, label=False, thesis=False):
        """(E tau_0, kappa_inf(I - P_0)): (21) e_L (I - P_0)^{-1} g, entering S_0 at (L - 1, 0)."""
        y, kappa = self.normal_sojourns(label, thesis)
        return y[self.chain.L - 1], kappa

    def normal_sojourns(self, label=False, thesis=False):
        """(y = (I - P_0)^{-1} g, kappa_inf(I - P_0)): the mean normal-mode time from every normal state.

        Corrected (interval): g = b_1 1 + e_1^T / lambda_0 (the idle periods in (0, 0) are normal
        mode); the thesis's form (``thesis``): g = b_1 1. Label semantics: g_i = the expected time
        with 1 <= count < H in the interval from (i, 0) (plus the idle period unless ``thesis``).
        The solve is :func:`mmatrix_solve` with W = P_0 and row sums ``exits`` (positive tails);
        kappa_inf = ||I - P_0||_inf max((I - P_0)^{-1} 1) (the inverse is nonnegative). P_0, the exits
        and g depend on H (the onset), not on L: a grid over L reuses them (:meth:`measures`).
        """
        ctx, inp, ch = self.ctx, self.inputs, self.chain
        m = ch.n_normal
        P0 = ch.P[:m, :m]
        if label:
            g = ctx.array([ctx.fsum(list(ch.profile(k)[1: ch.H])) for k in range(m)])
        else:
            g = ctx.array([inp.b1] * m)
        if not thesis:
            g[0] = g[0] + 1 / inp.lam[0]
        y, ones = mmatrix_solve(ctx, P0, ch.exits, [g, ctx.array([1] * m)])
        # ||I - P_0||_inf = max_k |1 - P_kk| + sum_{j != k} P_kj = max_k exits_k + 2 off_k, off_k the row's
        # off-diagonal mass: a_0 + sum_{n=2}^{onset-1-k} a_n (k >= 1), sum_{c>=2} of the idle row (k = 0)
        a0 = inp.counts[0][0]
        tail = ctx.zeros(ch.onset + 1)
        tail[2: ch.onset] = numpy.cumsum(a0[2: ch.onset])
        off = [ctx.fsum(list(inp.idle_next[2: ch.onset]))] + [a0[0] + tail[ch.onset - 1 - k] for k in range(1, m)]
        norm = max(ch.exits[k] + 2 * off[k] for k in range(m))
        return y, norm * max(ones)

    def loss(self):
        """Fraction of the offered customers (rate lambda_0 l_1) that are not served.

        Per departure: throttled (lambda_0 - lambda_1) l_1 b_1 in overload and lambda_0 l_1 b_1 in
        discard, plus the overflow lambda_s sum_c t(c) E (X - (R - c))^+ of an interval spending
        t(c) at count c; divided by C lambda_0 l_1. Positive terms only.
        """
        ctx, inp, R = self.ctx, self.inputs, self.chain.R
        ex = inp.excess
        overflow = [self.q[0] * inp.lam[0] * ctx.dot(inp.idle_profile, ex[::-1].copy())]
        # from (j, s), j >= 1, with t = R - j: sum_{c=j}^{R-1} u_{c-j} E(X - (R - c))^+ + Ubar_t E X
        # = sum_{i<t} u_i ex_{t-i} + Ubar_t ex_0 (all t at once in float64, one dot per state otherwise)
        per = []
        for s in (0, 1):
            _, _, u, ubar = inp.counts[s]
            if ctx.is_float64:
                conv = numpy.zeros(R + 1)
                conv[1:R] = hysteretic_convolution(ctx, u, ex[1:], R - 1)
                per.append(lambda t, conv=conv, ubar=ubar: conv[t] + ubar[t] * ex[0])
            else:
                per.append(lambda t, u=u, ubar=ubar: ctx.dot(u[:t], ex[t:0:-1]) + ubar[t] * ex[0])
        overflow += [self.q[k] * inp.lam[s] * per[s](R - j)
                     for k, (j, s) in enumerate(self.chain.states) if s != 2 and j >= 1]
        throttled = inp.b1 * inp.l1 * (inp.throttle * self.sums[1] + inp.lam[0] * self.sums[2])
        return (throttled + ctx.fsum(overflow)) / (self.C * inp.lam[0] * inp.l1)

    def renewal_cycle_time(self):
        """E tau = C / (q_{L,1} a_0^{(1)}): one control cycle per entry into S_0 (spec section 7)."""
        k = self.chain.index[(self.chain.L, 1)]
        return self.C / (self.q[k] * self.inputs.counts[1][0][0])

    def changes_per_departure(self):
        """Expected mode changes per departure: sum_k q_k sum_{k'} P_{k k'} 1{s_k != s_k'}.

        Every change happens at a departure (the mode in force before and after it); a normal ->
        discard switch is one change; with R = H + 1 discard is entered and left at the same epoch,
        which changes nothing for overload and is one change from normal.
        """
        ctx, ch = self.ctx, self.chain
        modes = numpy.array([st[1] for st in ch.states])
        rows, cols = numpy.nonzero((modes[:, None] != modes[None, :]) & (ch.P != 0))
        if ctx.is_float64:  # positive terms: numpy's pairwise sum
            return float(numpy.sum(self.q[rows] * ch.P[rows, cols]))
        return ctx.fsum([self.q[a] * ch.P[a, b] for a, b in zip(rows.tolist(), cols.tolist())])

    def measures(self, label=False, thesis=False, sojourns=None):
        """Every measure: the keys :data:`HYSTERETIC_KEYS` and the diagnostics ``_renewal_cycle_time``, ``_kappa``.

        E tau_12 = E tau_0 (P(S_1) + P(S_2)) / P(S_0) (22), E tau = E tau_0 + E tau_12 (23),
        throughput = 1 / C, mean time between mode changes = C / :meth:`changes_per_departure`.
        ``sojourns``: :meth:`normal_sojourns` of a solution with the same inputs,
        H and onset (any L), reused instead of solving (21) again.
        """
        p0, p1, p2 = self.mode_probabilities(label)
        y, kappa = self.normal_sojourns(label, thesis) if sojourns is None else sojourns
        t0 = y[self.chain.L - 1]
        t12 = t0 * (p1 + p2) / p0
        values = (p0, p1, p2, t0, t12, t0 + t12, self.loss(), 1 / self.C, self.C / self.changes_per_departure())
        out = dict(zip(HYSTERETIC_KEYS, values))
        out["_renewal_cycle_time"] = self.renewal_cycle_time()
        out["_kappa"] = kappa
        return out


def hysteretic_measures(ctx, inputs, L, H, R, onset, label=False, thesis=False):
    """Every measure of M[X]|G|1|(L,H)|(H,R) from :class:`HystereticInputs` (a dict, context numbers)."""
    return HystereticSolution(ctx, inputs, L, H, R, onset).measures(label, thesis)


def hysteretic_float64_trouble(values, eps, thesis=False):
    """Why a float64 result (the dict of :meth:`HystereticSolution.measures`) cannot be trusted (None: it can).

    kappa_inf(I - P_0) eps > :data:`HYSTERETIC_KAPPA_SWITCH`, or (corrected (21) only) the renewal
    identity E tau = C / (q_{L,1} a_0^(1)) missed by more than :data:`HYSTERETIC_RENEWAL_TOLERANCE`.
    """
    kappa = float(values["_kappa"])
    if not math.isfinite(kappa) or kappa * eps > HYSTERETIC_KAPPA_SWITCH:
        return f"I - P0 is ill-conditioned (kappa_inf = {kappa:.2g})"
    if not thesis:
        t, ref = float(values["mean_cycle_time"]), float(values["_renewal_cycle_time"])
        if not (math.isfinite(t) and math.isfinite(ref)) or abs(t - ref) > HYSTERETIC_RENEWAL_TOLERANCE * ref:
            return "the renewal identity E tau = C / (q_{L,1} a_0^(1)) fails in float64"
    return None
