"""M[X]/G/1/r with multiple, single or no vacations: the finite waiting room (Sopin 2013, chapter 2).

The thesis's central result (``docs/theory/chapter2.md`` section 2): for every load rho_bar
(also >= 1) the embedded law with r waiting places is the renormalised truncation of
the *unnormalised* infinite-room sequence q~ (Statement 1), and the time-stationary law
is the truncation of p~ with one corrected top term (Theorem 1.2, Corollary 1). This
kernel computes, against an arithmetic context:

* :func:`start_period` -- what follows an empty embedded epoch: a vacation (multiple
  vacations), a vacation and, if it ends empty, an idle period and one service (single
  vacations), or the idle period and one service (no vacations, C(z) = A(z) L(z)/z);
* :func:`cut_recursion` -- q~_0..q~_n from (2b), a_0 q~_{j+1} = q~_0 cbar_j + sum_{i=1}^{j}
  q~_i abar_{j-i+1}, every term positive (the thesis form (2a) subtracts: section 4);
* :class:`PartialEngine` -- every measure for partial admission, incremental in r:
  Statement 1, (9), (10) (p^r_r without cancellation), Statement 2 (11), Theorem 1.1 (12)
  by the direct sum of positive terms;
* :class:`WholeEngine` -- whole-batch admission (a batch that does not fit is rejected):
  the room process within one service, mixed over the batches of the service, and
  level crossing on the embedded chain (Statement 1 does not hold there).

Everything is a sum of positive terms; in float64 a growing q~ (rho_bar > 1) is
rescaled by powers of two, which leaves every ratio unchanged.

Numbers may be arrays, one entry per parameter point (the context
:class:`~qderive.numeric.kernels.points.Float64Points`): a vector is then an array whose first
axis is its index and whose last axis runs over the points, and the partial-admission engine runs
once for all points with the same operations (:func:`convolve`, :func:`_rows` and
:func:`~qderive.numeric.kernels.points.every` take the points' axis into account; every decision
taken on numbers, such as a block length or a table size, is taken for all points at once, and a
rescaling is per point).
"""

import math

import numpy

from .arrivals import arrival_counts, arrival_counts_of_times
from .batches import convolution_blocks
from .points import every

#: float64: the first table of the start-period sequences (growing while their tails have not vanished);
#: below this many waiting places the whole table is built at once (r = 2000: 33 ms, not 46 with 64)
FIRST_SUPPORT = 4096


# --------------------------------------------------------------------------------------
# Start period
# --------------------------------------------------------------------------------------


class StartPeriod:
    """Sequences over 0..n of the chain of partial admission.

    Service: ``a0``, ``abar``, ``u``, ``ubar``. Start period after an empty epoch: ``cbar``
    (P(it ends with more than j waiting)), level times ``w`` and ``wbar`` (arrivals see the
    ordinary r places), ``idle`` (expected idle time; arrivals see r + 1 places),
    ``not_serving`` (vacation + idle time: the normaliser f_1 of the thesis), ``services``
    (expected number of services inside it) and ``b1``.
    """

    def __init__(self, a0, abar, u, ubar, cbar, w, wbar, idle, not_serving, services, b1):
        self.a0, self.abar, self.u, self.ubar = a0, abar, u, ubar
        self.cbar, self.w, self.wbar = cbar, w, wbar
        self.idle, self.not_serving, self.services, self.b1 = idle, not_serving, services, b1
        self.built = len(abar)  # how many terms were computed (fewer than len(abar) when padded)
        # reversed service tails: abar[j-i+1], i = 1..j, is the contiguous slice rev[N-j:N] (fast dot)
        self.abar_rev = abar[::-1].copy()
        self.ubar_rev = ubar[::-1].copy()

    def vanishes_at(self, m):
        """Whether every tail is exactly 0 at index m (float64 after flushing: each omitted point mass
        beyond m is below the smallest normal double, so it is 0 in the longer sequences too)."""
        return all(every(t[m] == 0) for t in (self.abar, self.ubar, self.cbar, self.wbar))

    def next_size(self, m, n):
        """A longer table (at most n) in which the tails should vanish: each tail extrapolated
        geometrically from indices m/2 and m to the smallest normal double, with 25 % to spare;
        at least 2m, and n when that is not much more (half of n: one more table of size n costs
        less than two rounds; numbers over points: the largest size any point wants)."""
        want = 2 * m
        tiny = 2.0**-1022
        for t in (self.abar, self.ubar, self.cbar, self.wbar):
            for hi, lo in zip(numpy.ravel(t[m]).tolist(), numpy.ravel(t[m // 2]).tolist()):
                if hi > 0 and lo > hi:
                    per_index = (math.log(lo) - math.log(hi)) / (m - m // 2)
                    want = max(want, int(1.25 * (m + (math.log(hi) - math.log(tiny)) / per_index)) + 1)
                elif hi > 0:  # not decaying yet
                    want = max(want, 4 * m)
        return n if want >= n // 2 else want

    def padded(self, ctx, n):
        """The same sequences over 0..n (n >= their length - 1), zero beyond what they hold."""
        def pad(v):
            out = ctx.zeros(n + 1)
            out[: len(v)] = v
            return out

        out = StartPeriod(self.a0, pad(self.abar), pad(self.u), pad(self.ubar), pad(self.cbar), pad(self.w),
                          pad(self.wbar), self.idle, self.not_serving, self.services, self.b1)
        out.built = self.built
        return out


def _rows(mask):
    """A mask over a vector's indices: True where the entry is True for some point (the mask itself when the
    numbers are scalars)."""
    return mask if mask.ndim == 1 else mask.reshape(len(mask), -1).any(axis=1)


def convolve(x, y, size=None):
    """The first ``size`` terms (all by default) of the convolution of the vectors x and y, sum_i x_i y_{k-i}.

    Scalar numbers: numpy's direct convolution. Numbers over points (a trailing axis, or a vector of one
    number per index shared by every point): the same sums for every point at once, one product of a
    term of the shorter vector with the other vector per step (no FFT: every term is a product of
    positive numbers, whatever its size)."""
    if x.ndim == 1 and y.ndim == 1:
        full = numpy.convolve(x, y)
        return full if size is None else full[:size]
    if len(x) > len(y):
        x, y = y, x
    total = len(x) + len(y) - 1 if size is None else min(size, len(x) + len(y) - 1)
    out = numpy.zeros((total,) + numpy.broadcast_shapes(x.shape[1:], y.shape[1:]))
    for k in range(min(len(x), total)):
        m = min(len(y), total - k)
        out[k: k + m] += x[k] * y[:m]
    return out


def _correlate(a, v):
    """sum_i a_{c+i} v_i for c = 0..len(a) - len(v) (numpy's "valid" correlation; numbers over points as in
    :func:`convolve`)."""
    if a.ndim == 1 and v.ndim == 1:
        return numpy.correlate(a, v, "valid")
    size = len(a) - len(v) + 1
    out = numpy.zeros((size,) + numpy.broadcast_shapes(a.shape[1:], v.shape[1:]))
    for i in range(len(v)):
        out += a[i: i + size] * v[i]
    return out


def _conv(ctx, x, y, n):
    """First n + 1 terms of the convolution of x and y (truncated: no work beyond n): x times the
    upper triangular Toeplitz matrix Y[i, k] = y_{k-i} (``ctx.matmul``; a strided view, no copies)."""
    m = min(len(x), n + 1)
    pad = ctx.zeros(2 * n + 1)
    pad[n: n + min(len(y), n + 1)] = y[: n + 1]
    Y = numpy.lib.stride_tricks.as_strided(pad[n:], shape=(m, m), strides=(-pad.itemsize, pad.itemsize))  # Y[i, k] = pad[n - i + k]
    return ctx.matmul(x[None, :m], Y)[0]


def _truncated_convolution(ctx, x, y, n, block=512):
    """c_k = sum_{i<=k} x_i y_{k-i}, k = 0..n: float64 by blocks of x (direct sums, no FFT, no work
    beyond n: n^2/2 products instead of the n^2 of a full convolution); mpmath term by term."""
    if not ctx.is_float64:
        return _conv(ctx, x, y, n)
    y = y[: _support(y, n) + 1]  # exact zeros beyond the last nonzero term (flushed tails) cost nothing
    out = ctx.zeros(n + 1)
    if not len(y):
        return out
    for s in range(0, n + 1, block):
        xb = x[s: min(s + block, n + 1)]
        c = convolve(xb, y, n + 1 - s)
        out[s: s + len(c)] += c
    return out


def _support(v, n):
    """The last index <= n of a nonzero entry of v (-1 if none; numbers over points: of any point)."""
    nz = numpy.flatnonzero(_rows(v[: n + 1] != 0))
    return int(nz[-1]) if len(nz) else -1


def _idle_start(ctx, service, pmf, tail, lam, b1, n):
    """No vacation: the idle period (mean 1/lambda), then one service that starts with X - 1 waiting.

    cbar_j = sum_{k<=j} l_{k+1} abar_{j-k} + P(X > j+1); w_j = sum_{k<=j} l_{k+1} u_{j-k};
    wbar_m = sum_{k<m} l_{k+1} Ubar_{m-k} + P(X > m) b_1 (m >= 1), wbar_0 = b_1.
    """
    a, abar, u, ubar = service
    shifted = pmf[1: n + 2]  # l_{k+1}, k = 0..n
    cbar = _truncated_convolution(ctx, shifted, abar, n) + tail[1: n + 2]
    w = _truncated_convolution(ctx, shifted, u, n)
    wbar = ctx.zeros(n + 1)
    wbar[0] = b1
    if n >= 1:
        wbar[1:] = _truncated_convolution(ctx, shifted, ubar[1:], n - 1) + tail[1: n + 1] * b1
    return cbar, w, wbar, 1 / lam


def start_period(ctx, service, vacation, pmf, tail, lam, b1, f1, single, n):
    """The :class:`StartPeriod` for a waiting room up to n (needs service/vacation sequences and
    the batch pmf, tail over 0..n+1).

    ``service``, ``vacation``: (a, abar, u, ubar) of one service / one vacation (``vacation``
    None: no vacations). ``single``: single vacations (after a vacation that ends with an
    empty queue the server idles until the next batch, whose first customer is served at
    once); otherwise multiple vacations. With c_0 = P(nobody arrives during a vacation):
    cbar = cbar_vac + c_0 cbar_idle, w = v + c_0 w_idle, idle = c_0 / lambda,
    not_serving = f_1 + c_0 / lambda, services = c_0.
    """
    a, abar, u, ubar = service
    if vacation is None:
        cbar, w, wbar, idle = _idle_start(ctx, service, pmf, tail, lam, b1, n)
        return StartPeriod(a[0], abar, u, ubar, cbar, w, wbar, idle, idle, ctx.num(1), b1)
    c, cbar, v, vbar = vacation
    if not single:
        return StartPeriod(a[0], abar, u, ubar, cbar, v, vbar, ctx.num(0), f1, ctx.num(0), b1)
    c0 = c[0]
    icbar, iw, iwbar, idle = _idle_start(ctx, service, pmf, tail, lam, b1, n)
    return StartPeriod(a[0], abar, u, ubar, cbar + c0 * icbar, v + c0 * iw, vbar + c0 * iwbar,
                       c0 * idle, f1 + c0 * idle, c0, b1)


# --------------------------------------------------------------------------------------
# The cut recursion (2b)
# --------------------------------------------------------------------------------------

_RESCALE_AT = 2.0**600


def cut_recursion(ctx, seq, n, start=None):
    """q~_0..q~_n from (2b) (q~_0 = 1): a_0 q~_{j+1} = q~_0 cbar_j + sum_{i=1}^{j} q~_i abar_{j-i+1}.

    ``start`` continues an earlier run (the recursion is homogeneous, so a rescaled prefix
    is continued consistently). Returns ``(q, shift)`` with q~ = q 2^shift: in float64 the
    prefix is rescaled whenever it exceeds 2^400 (overload makes q~ grow geometrically), and
    the steps are taken by blocks (:func:`_cut_blocks`); mpmath has no exponent limit and is
    never rescaled.
    """
    q = ctx.zeros(n + 1)
    shift = 0
    if start is not None and len(start[0]):
        done = min(len(start[0]), n + 1)
        q[:done] = start[0][:done]
        shift = start[1]
    else:
        q[0] = ctx.num(1)
        done = 1
    shift = _cut_blocks(ctx, seq, q, n, done, shift)
    return q, shift


#: blocks of the cut recursion: at most this many steps (mpmath: its products cost O(block^2) each; float64:
#: a few numpy calls per block, whatever its size), and (float64) entries of the block inverse below 2^200
_CUT_BLOCK = 32
_CUT_BLOCK_FLOAT64 = 256
_BLOCK_RESCALE_AT = 2.0**400
_G_LIMIT = 2.0**200


def _toeplitz_times(ctx, g, x):
    """y_i = sum_{c<=i} g_{i-c} x_c for i < len(x): the lower triangular Toeplitz matrix of g times x (positive
    terms; float64: numpy's direct convolution, mpmath: :func:`_conv`)."""
    b = len(x)
    if ctx.is_float64:
        return convolve(g[:b], x, b)
    return _conv(ctx, x, g[:b], b - 1)


def _block_inverse(ctx, abar, a0, B):
    """g_0..g_{B'-1}, the first column of the inverse of the lower triangular Toeplitz matrix with diagonal a_0
    and -abar_1, -abar_2, ... below it: g_0 = 1/a_0, g_j = (1/a_0) sum_{k=1}^{j} abar_k g_{j-k} (positive).

    The first ``_CUT_BLOCK`` terms by that recursion, the rest (float64 blocks are longer) by doubling: with
    G_m the Toeplitz matrix of g_0..g_{m-1} and C[j, k] = abar_{m+j-k} (k < m), the inverse of the matrix of
    size 2m is [[G_m, 0], [G_m C G_m, G_m]], so g_{m..2m-1} = G_m (C g_{0..m-1}): two convolutions of positive
    terms per doubling. (Doubling from g_0 on would be as fast but twice as inexact: the rounding errors of
    the first terms reach every later one; the recursion's first 32 terms keep the error of the old blocks.)
    float64: B' <= B stops before the first g_j > 2^200 (at least 1 term), which keeps a block's products
    far from overflow (numbers over points: before the first j at which some point's g_j does).
    """
    m = min(B, _CUT_BLOCK)
    # the recursion on Python numbers: 31 short sums cost less as plain loops than as 31 numpy calls
    ab, first, zero = abar[1: m].tolist() if abar.ndim == 1 else list(abar[1: m]), [1 / a0], ctx.num(0)
    for j in range(1, m):
        v = zero
        for x, y in zip(ab, reversed(first)):  # sum_{k=1}^{j} abar_k g_{j-k}, in this order
            v = v + x * y
        v = v / a0
        if ctx.is_float64 and not every(v <= _G_LIMIT):
            return ctx.array(first)
        first.append(v)
    g = ctx.zeros(B)
    g[:m] = first
    while m < B:
        e = min(2 * m, B)
        c = convolve(abar[:e], g[:m], e)[m: e]  # c_j = sum_{k<m} abar_{m+j-k} g_k, j = 0..e-m-1 (float64)
        g[m: e] = _toeplitz_times(ctx, g, c)
        big = numpy.flatnonzero(_rows(~(g[m: e] <= _G_LIMIT)))
        if len(big):
            return g[: m + int(big[0])]
        m = e
    return g


def _cut_blocks(ctx, seq, q, n, done, shift):
    """(2b) for q[done..n], one block of steps per pair of products; returns the new shift.

    Within a block t = s..e-1 the recursion is a lower triangular Toeplitz system with diagonal a_0
    and entries -abar_1, -abar_2, ... below it; its inverse is the Toeplitz matrix of the positive g of
    :func:`_block_inverse`. So q[s:e] = G (q~_0 cbar_{t-1} + sum_{i<s} q~_i abar_{t-i}): two products of
    positive terms. Blocks of ``_CUT_BLOCK`` steps in mpmath; in float64 of up to ``_CUT_BLOCK_FLOAT64``
    (r = 200 is one block: the recursion is two convolutions), abar_k = 0 for k > width (a flushed tail), so
    only q_i with i >= s - width contribute, and the prefix is rescaled by a power of two when it exceeds
    2^400 (g <= 2^200 keeps a block below 2^600 (1 + sum abar)); numbers over points: each point's prefix by its
    own power of two (``shift`` is then an array).
    """
    N = len(seq.abar) - 1
    abar, rev, cbar = seq.abar, seq.abar_rev, seq.cbar
    a0 = ctx.to_float(seq.a0) if ctx.is_float64 else seq.a0
    width = max(_support(abar, N), 1) if ctx.is_float64 else N
    g = _block_inverse(ctx, abar, a0, max(1, min(_CUT_BLOCK_FLOAT64 if ctx.is_float64 else _CUT_BLOCK, n)))
    B = len(g)
    windows = numpy.lib.stride_tricks.sliding_window_view
    t = done
    while t <= n:
        e = min(t + B, n + 1)
        rhs = cbar[t - 1: e - 1] * q[0]
        lo = max(1, t - width)
        if t > lo:  # sum_{i=lo}^{t-1} q_i abar[t + c - i], c = 0..e-t-1
            if ctx.is_float64:
                rhs = rhs + _correlate(abar[1: e - lo], q[lo: t][::-1])
            else:  # M[c, i] = abar[t + c - lo - i]: windows of the reversed tails
                M = windows(rev[N - e + 1 + lo: N], t - lo)[::-1]
                rhs = rhs + ctx.matmul(M, q[lo: t, None])[:, 0]
        q[t: e] = _toeplitz_times(ctx, g, rhs)
        if ctx.is_float64:
            top = q[t: e].max(axis=0)
            if numpy.any(top > _BLOCK_RESCALE_AT):  # per point: 2^-x with x = 0 leaves a point unchanged
                x = numpy.where(top > _BLOCK_RESCALE_AT, numpy.frexp(top)[1], 0)
                q[:e] = numpy.ldexp(q[:e], -x)
                shift = shift + (int(x) if x.ndim == 0 else x)
        t = e
    return shift


# --------------------------------------------------------------------------------------
# Measures from one cycle's unnormalised quantities
# --------------------------------------------------------------------------------------


def finish(ctx, r, q, t_std, t_idle, t_ns, t_busy, b1, batch, whole):
    """Every measure from the unnormalised cycle quantities (one common scale).

    ``q``: embedded weights 0..r; ``t_std[j]``: expected time at queue level j in which
    arrivals see r places; ``t_idle``: idle time (level 0, r + 1 places); ``t_ns``:
    not-serving time; ``t_busy``: serving time; mean cycle T = t_ns + t_busy (renewal
    reward, (4)). ``batch`` = (pmf, tail, excess, l1) over 0..r+1.
    Loss: Theorem 1.1 (12), pi = sum_j p^r_j E (X - (r - j))^+ / l_1 (partial admission), or
    sum_j p^r_j E (X; X > r - j) / l_1 (whole admission, E (X; X > m) = m P(X > m) + E (X - m)^+).
    """
    pmf, tail, excess, l1 = batch
    T = t_ns + t_busy
    p_std = t_std / T
    p_idle = t_idle / T
    p = p_std.copy()
    p[0] = p[0] + p_idle
    e_rev = excess[r::-1]  # E (X - (r - j))^+, j = 0..r
    tail_rev = tail[r::-1]
    if not whole:
        lost = ctx.dot(p_std, e_rev) + p_idle * excess[r + 1]
        blocked = p_std[r]
    else:
        levels = ctx.arange(r + 1)[::-1]
        lost = ctx.dot(p_std, levels * tail_rev + e_rev) + p_idle * ((r + 1) * tail[r + 1] + excess[r + 1])
        blocked = ctx.dot(p_std, tail_rev) + p_idle * tail[r + 1]
    nq = ctx.dot(p, ctx.arange(r + 1))
    busy = t_busy / T
    throughput = busy / b1
    return {
        "capacity": r,
        "q": q / ctx.fsum(list(q)),
        "p": p,
        "idle_probability": t_ns / T,
        "loss_probability": lost / l1,
        "batch_blocking_probability": blocked,
        "mean_queue_length": nq,
        "mean_wait": nq / throughput,
        "mean_number_in_system": nq + busy,
        "throughput": throughput,
    }


# --------------------------------------------------------------------------------------
# Partial admission (the thesis): truncation of the infinite-room recursion
# --------------------------------------------------------------------------------------


class PartialEngine:
    """Statement 1, (9), (10), Statement 2, Theorem 1.1, incremental in r.

    ``sequences(n)`` returns the :class:`StartPeriod` over 0..n and the batch vectors
    (pmf, tail, excess, l1) over 0..n+1; the engine asks for more (doubling) when a larger
    r is requested, so a sweep r = 1..R costs O(R^2), the cost of its largest r.
    """

    def __init__(self, ctx, sequences):
        self.ctx, self.sequences = ctx, sequences
        self.n = -1

    def _ensure(self, r):
        if r + 1 <= self.n:
            return
        n = max(r + 1, 2 * self.n, 16)
        self.seq, self.batch = self.sequences(n)
        self.q, self.shift = cut_recursion(self.ctx, self.seq, n)
        # p~ numerators T_j = q~_0 w_j + sum_{i=1}^{j+1} q~_i u_{j-i+1}, j = 0..n-1 (valid for every r >= j+1)
        seq, q = self.seq, self.q
        self.t = seq.w[:n] * q[0] + _truncated_convolution(self.ctx, q[1: n + 1], seq.u, n - 1)
        # s1[j] = sum_{i=1}^{j} q~_i, formed directly (never sum_{i<=j} q~_i - q~_0: that cancels at light load)
        self.s1 = self.ctx.zeros(n + 1)
        self.s1[1:] = numpy.cumsum(q[1:], axis=0)
        self.n = n

    def at(self, r, loss_only=False):
        """Every measure with r waiting places (or the loss probability alone, O(r))."""
        self._ensure(r)
        ctx, seq, q = self.ctx, self.seq, self.q
        N = len(seq.abar) - 1
        q0 = q[0]
        # (10): the top level without cancellation, Vbar_r and Ubar_{r-i+1}, i = 1..r
        top = q0 * seq.wbar[r]
        if r >= 1:
            top = top + ctx.dot(q[1: r + 1], seq.ubar_rev[N - r: N])
        t_std = ctx.zeros(r + 1)
        t_std[:r] = self.t[:r]
        t_std[r] = top
        t_busy = seq.b1 * (q0 * seq.services + self.s1[r])
        if loss_only:
            pmf, tail, excess, l1 = self.batch
            T = q0 * seq.not_serving + t_busy
            lost = ctx.dot(t_std, excess[r::-1]) + q0 * seq.idle * excess[r + 1]
            return lost / (T * l1)
        return finish(ctx, r, q[: r + 1], t_std, q0 * seq.idle, q0 * seq.not_serving, t_busy, seq.b1,
                      self.batch, False)


# --------------------------------------------------------------------------------------
# Whole admission: the room process within one service
# --------------------------------------------------------------------------------------


def room_kernel(ctx, pmf, tail, n):
    """H[d, d']: one batch at room d -> d - k if k <= d (prob l_k), else it is rejected (P(X > d))."""
    H = ctx.zeros((n + 1, n + 1))
    for d in range(n + 1):
        H[d, d] = tail[d]
        if d:
            H[d, :d] = pmf[d:0:-1]
    return H


def _batch_step(W, H, pmf, tail, geometric, support):
    """W H for the room kernel H using its structure (last axis: rooms)."""
    n = W.shape[-1]
    tl = tail[:n]
    if geometric is not None:
        p, q = geometric
        out = W * tl
        acc = W[..., n - 1] * 0
        for d in range(n - 2, -1, -1):
            acc = W[..., d + 1] * p + acc * q
            out[..., d] = out[..., d] + acc
        return out
    if support is not None:
        out = W * tl
        for k in support:
            if k < n:
                out[..., : n - k] = out[..., : n - k] + W[..., k:] * pmf[k]
        return out
    return numpy.dot(W, H)


def mix_powers(ctx, start, H, counts, lam, pmf, tail, geometric, support, closed=False):
    """(sum_K beta_K start H^K, (1/lambda) sum_K P(K' > K) start H^K) over the batches K of one time.

    ``counts(size)`` gives (beta, tail) of the time's count law over 0..size. The sum stops when
    P(K' > K) < eps/256 and every entry's next term is below eps/256 of the accumulated sum.

    ``closed``: H is the room kernel (:func:`room_kernel`) and ``counts(size)`` gives (beta, tail, tail2), tail2_K =
    sum_{j>K} P(K' > j) (positive sums). The rooms below the smallest batch (room 0 at least) keep their mass for
    ever, so the sum above runs until the count itself is negligible (a lognormal service: 8192 terms, 10 s of CPU at
    r = 129). Closed, it stops as soon as the other rooms' mass T_K (nonincreasing in K: no batch leads back up) is
    negligible, the absorbing rooms' rest summed exactly as the finite room's moments sum their remainders
    (``engines/vacation_finite_wait.py`` item 5): their entries stay W_K beyond K up to the mass still to come in, so

        sum_{j>K} beta_j W_j = P(K' > K) W_K,   sum_{j>K} P(K' > j) W_j = tail2_K W_K

    with an error below T_K P(K' > K), resp. T_K tail2_K, in every entry of a row (every entry beyond K, the other
    rooms' included, is at most T_K); the sum stops where that is below eps/256 of each entry (the zero ones, after
    more batches than rooms, are unreachable).

    A context with a ``twin()`` (mpmath: gmpy2 numbers at the same precision, the same correctly rounded
    operations, so the same numbers) runs the sum there: its inputs converted exactly, once.
    """
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is None:
        acc_r, acc_u = _mix_powers(ctx, start, H, counts, pmf, tail, geometric, support, closed)
        return acc_r, acc_u / lam
    with twin:
        conv = twin.from_mp
        acc_r, acc_u = _mix_powers(twin, conv(start), conv(H), lambda size: tuple(map(conv, counts(size))),
                                   conv(pmf), conv(tail),
                                   None if geometric is None else tuple(conv(numpy.array(geometric, dtype=object))),
                                   support, closed)
        acc_r, acc_u = twin.to_mp(acc_r), twin.to_mp(acc_u)
    return acc_r, acc_u / lam


def _absorbing_rooms(pmf, n: int) -> int:
    """The number of rooms 0..m-1 below the smallest batch size m (no batch fits: H[d, d] = 1), at most ``n``."""
    for k in range(1, min(n, len(pmf))):
        if pmf[k] != 0:
            return k
    return n


def _mix_powers(ctx, start, H, counts, pmf, tail, geometric, support, closed=False):
    """(sum_K beta_K start H^K, sum_K P(K' > K) start H^K): :func:`mix_powers` in ``ctx``."""
    tol = ctx.eps / 256
    size = 64
    beta, ctail, *more = counts(size)
    W = start
    acc_r = W * beta[0]
    acc_u = W * ctail[0]
    rooms = W.shape[-1]
    low = _absorbing_rooms(pmf, rooms) if closed else 0  # rooms 0..low-1 keep their mass
    K = 0
    while True:
        K += 1
        if K > size:
            size *= 2
            if size > 1 << 16:
                raise ArithmeticError("too many batches per service or vacation to sum (the time is very long)")
            beta, ctail, *more = counts(size)
        W = _batch_step(W, H, pmf, tail, geometric, support)
        acc_r = acc_r + W * beta[K]
        acc_u = acc_u + W * ctail[K]
        rest = W * ctail[K]
        if ctail[K] <= tol and numpy.all(rest <= acc_r * tol):
            break
        if low and K > rooms:
            left = more[0][K]  # sum_{j > K} P(K' > j)
            T = numpy.asarray(W[..., low:].sum(axis=-1))[..., None]  # the mass outside the absorbing rooms, per row
            reached = acc_r > ctx.tiny
            if numpy.all(~reached | ((T * ctail[K] <= acc_r * tol) & (T * left <= acc_u * tol))):
                acc_r[..., :low] = acc_r[..., :low] + W[..., :low] * ctail[K]
                acc_u[..., :low] = acc_u[..., :low] + W[..., :low] * left
                break
    return acc_r, acc_u


def whole_cut(ctx, r, up, Rs, Rcum):
    """x_0..x_r, the embedded chain of whole admission unnormalised (x_0 = 1), by the cuts between queue j and
    j + 1 (rooms r - j and r - j - 1), every term positive:
    x_{j+1} R[r-j, r-j] = x_0 P0(end room < r-j) + sum_{i=1}^{j} x_i Rcum[r-i+1, r-j]
    (``up[d]`` = P0(end room < d) after an empty epoch, ``Rs``/``Rcum`` the service's room matrices); float64
    rescales the prefix by powers of two when it grows."""
    x = ctx.zeros(r + 1)
    x[0] = ctx.num(1)
    for j in range(r):
        s = x[0] * up[r - j]
        if j >= 1:
            s = s + ctx.dot(x[1: j + 1], Rcum[r - j + 1: r + 1, r - j][::-1])
        x[j + 1] = s / Rs[r - j, r - j]
        if ctx.is_float64 and x[j + 1] > _RESCALE_AT:
            x[: j + 2] = numpy.ldexp(x[: j + 2], -int(numpy.frexp(x[j + 1])[1]))
    return x


class WholeEngine:
    """Whole-batch admission: level crossing on the embedded chain, room matrices reused across r.

    ``service_counts(size)`` / ``vacation_counts(size)`` give (beta, tail, tail2) of the count laws;
    ``batch(n)`` the vectors (pmf, tail, excess, l1, geometric, support) over 0..n+1.
    """

    def __init__(self, ctx, service_counts, vacation_counts, batch, lam, b1, f1, single, max_capacity):
        self.ctx = ctx
        self.service_counts, self.vacation_counts, self.batch_vectors = service_counts, vacation_counts, batch
        self.lam, self.b1, self.f1, self.single = lam, b1, f1, single
        self.max_capacity = max_capacity
        self.n = -1

    def _ensure(self, r):
        if r <= self.n:
            return
        n = max(r, min(2 * self.n, self.max_capacity), 8)
        ctx = self.ctx
        self.batch = self.batch_vectors(n + 1)
        pmf, tail, excess, l1, geometric, support = self.batch
        self.H = room_kernel(ctx, pmf, tail, n)
        self.Rs, self.Us = mix_powers(ctx, ctx.eye(n + 1), self.H, self.service_counts, self.lam, pmf, tail,
                                      geometric, support, closed=True)
        # Rcum[e, d] = P(service from room e ends in a room < d) (positive terms)
        self.Rcum = ctx.zeros(self.Rs.shape)
        self.Rcum[:, 1:] = numpy.cumsum(self.Rs, axis=1)[:, :-1]
        self.n = n

    def _idle_start(self, r):
        """No vacation: idle until an admissible batch (X <= r + 1), then a service from room r - (X - 1)."""
        ctx = self.ctx
        pmf = self.batch[0]
        weights = pmf[1: r + 2]  # l_k, k = 1..r+1 -> start room r + 1 - k
        fit = ctx.fsum(list(weights))
        mix = weights / fit
        rooms = slice(r, None, -1)
        up = numpy.dot(mix, self.Rcum[rooms, : r + 1])
        times = numpy.dot(mix, self.Us[rooms, : r + 1])
        idle = 1 / (self.lam * fit)
        return up, times, idle

    def _start(self, r):
        """(P(end room < d), level times by room, idle time, not-serving time, services) after an empty epoch."""
        ctx = self.ctx
        if self.vacation_counts is None:
            up, times, idle = self._idle_start(r)
            return up, times, idle, idle, ctx.num(1)
        pmf, tail, _, _, geometric, support = self.batch
        row = ctx.zeros(r + 1)
        row[r] = ctx.num(1)
        rv, uv = mix_powers(ctx, row, self.H[: r + 1, : r + 1], self.vacation_counts, self.lam, pmf, tail,
                            geometric, support, closed=True)
        up = ctx.zeros(r + 1)
        up[1:] = numpy.cumsum(rv)[:-1]
        if not self.single:
            return up, uv, ctx.num(0), self.f1, ctx.num(0)
        c0 = rv[r]  # the vacation ends with nobody admitted: idle, then the first admissible batch
        iup, itimes, idle = self._idle_start(r)
        return up + c0 * iup, uv + c0 * itimes, c0 * idle, self.f1 + c0 * idle, c0

    def at(self, r):
        self._ensure(r)
        ctx = self.ctx
        up, start_times, idle, not_serving, services = self._start(r)
        Rs, Rcum, Us = self.Rs, self.Rcum, self.Us
        x = whole_cut(ctx, r, up, Rs, Rcum)
        rooms = start_times * x[0]
        if r >= 1:
            rooms = rooms + numpy.dot(x[1:], Us[r:0:-1, : r + 1])
        t_std = rooms[::-1].copy()  # queue j = room r - j
        s1 = ctx.fsum(list(x[1:])) if r >= 1 else ctx.num(0)
        t_busy = self.b1 * (x[0] * services + s1)
        pmf, tail, excess, l1, _, _ = self.batch
        return finish(ctx, r, x, t_std, x[0] * idle, x[0] * not_serving, t_busy, self.b1,
                      (pmf, tail, excess, l1), True)


# --------------------------------------------------------------------------------------
# The whole model: laws given as kernel callables
# --------------------------------------------------------------------------------------


class FiniteVacation:
    """Every measure of M[X]/G/1/r for any r, from the laws given as kernel callables.

    ``service_counts(n)`` / ``vacation_counts(n)`` return the count sequences (beta, tail,
    tail2) over 0..n of the batches arriving during one service / vacation (``vacation_counts``
    None: no vacations); ``batch(n)`` returns (pmf, tail, excess, l1, geometric, support) over
    0..n; ``columns(n)`` optionally supplies the convolution columns (the engine caches them in
    mpmath mode); ``lam``, ``b1``, ``f1`` are context numbers; ``single``: single vacations;
    ``whole``: whole-batch admission (rooms up to ``whole_max``). This is the code both the
    package and ``qderive codegen vacation-finite`` run.
    """

    def __init__(self, ctx, service_counts, vacation_counts, batch, lam, b1, f1, single=False, whole=False,
                 columns=None, whole_max=2000):
        self.ctx = ctx

        def cols(n):
            if columns is not None:
                return columns(n)
            pmf, tail, _, _, geometric, _ = batch(n)
            return convolution_blocks(ctx, pmf, tail, n, geometric)

        if not whole:
            def start(m):
                service = (*service_counts(m), b1)
                if ctx.is_float64 and not every(service[0][0] > ctx.tiny):
                    raise ArithmeticError("the probability that nobody arrives during a service underflows float64")
                if vacation_counts is None:
                    sv, vc = arrival_counts(ctx, *service[:3], cols(m), lam, b1, m), None
                else:  # the service and the vacation in one pass over the columns (made once, not kept)
                    sv, vc = arrival_counts_of_times(ctx, [service, (*vacation_counts(m), f1)], cols(m), lam, m)
                pmf, tail, _, _, _, _ = batch(m + 1)
                return start_period(ctx, sv, vc, pmf, tail, lam, b1, f1, single, m)

            support = [FIRST_SUPPORT]

            def sequences(n):
                # float64: the tails flush to 0 after a few thousand terms even when r is 10^5; build the
                # sequences up to where they vanish (growing the table) and pad, instead of O(n) columns
                # of O(n); up to FIRST_SUPPORT places the first table is the whole one
                m = n if not ctx.is_float64 else min(n, support[0])
                seq = start(m)
                while m < n and not seq.vanishes_at(m):
                    m = seq.next_size(m, n)
                    seq = start(m)
                support[0] = max(support[0], m)
                if m < n:
                    seq = seq.padded(ctx, n)
                pmf, tail, excess, l1, _, _ = batch(n + 1)
                return seq, (pmf, tail, excess, l1)

            self.engine = PartialEngine(ctx, sequences)
        else:
            self.engine = WholeEngine(ctx, service_counts, vacation_counts, batch, lam, b1, f1, single, whole_max)

    def at(self, r):
        """The measures with r waiting places (a dict of context numbers; ``p`` the queue-length law)."""
        out = self.engine.at(r)
        p, q = out["p"], out["q"]
        return {
            "loss_probability": out["loss_probability"],
            "batch_blocking_probability": out["batch_blocking_probability"],
            "idle_probability": out["idle_probability"],
            "mean_queue_length": out["mean_queue_length"],
            "mean_wait": out["mean_wait"],
            "mean_number_in_system": out["mean_number_in_system"],
            "throughput": out["throughput"],
            "p0": p[0],
            "pr": p[-1],
            "q0": q[0],
            "qr": q[-1],
            "p": p,
        }

    def reserve(self, r):
        """Compute the sequences for r waiting places now (a sweep up to r then builds them once)."""
        self.engine._ensure(r)

    def loss_at(self, r):
        """The loss probability alone (O(r) once the sequences reach r, under partial admission)."""
        if isinstance(self.engine, PartialEngine):
            return self.engine.at(r, loss_only=True)
        return self.engine.at(r)["loss_probability"]
