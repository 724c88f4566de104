"""Service times on a lattice h: the work of a batch, the own batch ahead, and monotone lattice bounds of the wait.

**Composition.** A service law on the lattice h N (every value an integer multiple of h: a constant D = h, an
empirical sample recorded to 1 ms) has the pmf b(z) = sum_m b_m z^m of B / h. The work of a batch of X customers
has the PGF L(b(z)) (L the batch PGF), the services of the K earlier members of the own batch (P(K = k) =
P(X > k) / l_1) the PGF P_K(b(z)); :func:`compose_pgf` gives their coefficients up to z^N by Horner's rule in b
(positive terms only; a geometric batch, L(z) = p z / (1 - q z), by the recursions s = p b + q b s and
j = p + q b j instead, O(N |b|)). With these the generalised Erlang/Prabhu sum (L1)-(L3) of
:mod:`qderive.numeric.kernels.lattice_wait` holds word for word with D replaced by h, L(z) by L(b(z)) and
P_K(z) by P_K(b(z)): its transform is (1 - rho) P_K(B(s)) / (s - lambda + lambda L(B(s))), B(s) = b(e^{-s h}),
the Pollaczek-Khinchine transform of V + J (Takacs; Prabhu, *Queues and Inventories*, 1965, ch. 2). A constant D
is b(z) = z: the same code (``engines.vacation_wait._work_vectors`` passes the batch law's own vectors through).
(L1) needs h_{n,m} = 0 for m < n, i.e. no service of length 0 (b_0 = 0); a sample holding the value 0 takes
the bounds below, whose recursions divide by 1 - q b_0 and 1 - rho g_0 instead.

**Monotone bounds for any service law with a cdf** (uniform, an empirical sample off a coarse lattice). Round every
service down and up to the lattice: B_down = h floor(B / h) <= B <= B_up = h ceil(B / h). In the infinite room the
wait W = V + J + R (V the workload met by the batch, J the own batch ahead, R the residual vacation, independent;
``symbolic/closed_forms/vacation_wait.py``, spec chapter 2 section 0) is stochastically increasing in the service:
V pathwise through Lindley's recursion (the workload after every event is a nondecreasing function of the works
that entered), J as a sum of services, and R does not depend on the service. So P(W_down > t) <= P(W > t) <=
P(W_up > t). The lattice laws of V_down, V_up then follow from Benes' (Pollaczek-Khinchine) form of the workload
(Benes, *General Stochastic Processes in the Theory of Queues*, 1963; Abate and Whitt, "Numerical inversion of
probability generating functions", 1992, for the lattice version): with S the work of one batch (on h N),
rho = lambda E S < 1,

    V = H_1 + ... + H_N,   P(N = n) = (1 - rho) rho^n,   H_i iid with the density P(S > x) / E S.                (B1)

For S on h N the density is constant on each cell [k h, (k + 1) h): H = h (G + U), U uniform on (0, 1) independent
of G, P(G = k) = h P(S > k h) / E S. Hence h G <= H <= h (G + 1) pathwise, and the sums over the same N,
Y = sum G_i and Y' = sum (G_i + 1), bound V: h Y <= V <= h Y'. Both are compound geometric on the integers, whose
pmf follows by the positive recursion (Panjer's for a geometric count; Adelson 1966)::

    y_0 = (1 - rho) / (1 - rho g_0),   y_k = rho sum_{j=1}^{k} g_j y_{k-j} / (1 - rho g_0),                     (B2)

(for Y' the law of G + 1, which has no mass at 0). With the lower laws (service rounded down, ladder heights
rounded down) and the upper ones (both up) the lattice part L = Y + J / h has the pmf p = y * j (a convolution of
positive terms) and, R independent with P(R > x) = w_c E (V_vac - x)^+ for x >= 0 (an atom a_0 at 0, the density
w_c P(V_vac > x)),

    P(h L + R > t) = P(L > floor(t / h)) + sum_{k <= t / h} p_k P(R > t - k h).                                 (B3)

The sojourn W + B is the same with p convolved once more with b_down (b_up). Every step adds positive numbers; the
only subtraction is P(L > n) = 1 - sum_{k <= n} p_k (compensated: math.fsum), which loses eps / tail relative
(1e-10 at a tail of 1e-6). Both bounds converge to the true tail as h -> 0 (the roundings move each service and
each ladder height by less than h), the width is O(h); the caller halves h until the width meets its tolerance.
The roundings are symmetric on average (U and the rounding of a continuous service are uniform on a cell), so the
midpoint of the bracket is second order in h: the Richardson value m_h + (m_h - m_{2h}) / 3 is an estimate inside
the bracket (measured: 1.5e-10 relative at N = 4096 with a 1.6 % bracket, on a lattice dividing the service's
own; erratic at the 1 % level when the lattice cuts a few atoms unevenly -- the bracket stays certified).
A service law without a bounded support would need its mass beyond N h, which the recursions truncate: the
caller admits only bounded laws. An upper law with rho >= 1 (a coarse h) has P(W_up > t) = 1.
Cost O(N^2) for N = t / h levels ((B2) as N dot products; the geometric batch's composition O(N |b|)).
"""

import math

import numpy


def compose_pgf(ctx, outer, b, N, geometric=None):
    """[z^k] sum_x outer_x b(z)^x for k = 0..N (a context vector): Horner's rule in b with every product truncated
    at z^N, positive terms only. ``outer`` the coefficients (a context vector), ``b`` the lattice pmf of the service.
    ``geometric`` = (p, q, start): the closed forms of a geometric batch instead of the Horner sum, start False: the
    batch work p b / (1 - q b) (s = p b + q b s), start True: the own batch ahead p / (1 - q b) (j = p + q b j);
    solved term by term (the z^k coefficient of q b s holds s_k once, times q b_0: divided out)."""
    b = b[: N + 1]
    if geometric is not None:
        p, q, start = geometric
        out = ctx.zeros(N + 1)
        lead = ctx.num(1) - q * b[0]
        rb = b[1:][::-1]  # reversed b_1.., for the dot with s_{k-1}, s_{k-2}, ...
        dot = numpy.dot if ctx.is_float64 else ctx.dot  # float64: numpy's own (the context's einsum costs 5 us a call)
        for k in range(N + 1):
            first = (p if k == 0 else ctx.num(0)) if start else (p * b[k] if k < len(b) else ctx.num(0))
            span = min(k, len(b) - 1)
            rest = q * dot(rb[len(rb) - span:], out[k - span: k]) if span else ctx.num(0)
            out[k] = (first + rest) / lead
        return out
    # exact cuts of the Horner sum: trailing zero coefficients (a batch law of finite support), and the powers
    # b^x with x > N / m, m the smallest service level (b_0 = 0): they start beyond z^N
    nonzero = numpy.flatnonzero(numpy.asarray(outer) != 0)
    top = int(nonzero[-1]) if len(nonzero) else 0
    levels = numpy.flatnonzero(numpy.asarray(b) != 0)
    if len(levels) and levels[0] > 0:
        top = min(top, N // int(levels[0]))
    out = ctx.zeros(N + 1)
    out[0] = outer[top]
    for x in range(top - 1, -1, -1):
        out = numpy.convolve(out, b)[: N + 1]
        out[0] = out[0] + outer[x]
    return out


def ladder(ctx, work, mean, N, up):
    """The pmf of G (``up`` False) or of G + 1 (``up`` True) over 0..N of (B1): P(G = k) = P(S > k h) / (E S / h),
    ``work`` the pmf of S / h (long enough: its sum is 1 to rounding), ``mean`` = E S / h exactly (a context number,
    not the truncated sum)."""
    cdf = numpy.cumsum(work[: N + 1])
    tail = -cdf + ctx.num(1)
    tail = numpy.maximum(tail, 0 * tail)
    g = tail / mean
    if not up:
        return g
    out = ctx.zeros(N + 1)
    out[1:] = g[:N]
    return out


def compound_geometric(ctx, rho, g, N):
    """The pmf over 0..N of Y = G_1 + ... + G_N', P(N' = n) = (1 - rho) rho^n, by the positive recursion (B2)."""
    y = ctx.zeros(N + 1)
    lead = ctx.num(1) - rho * g[0]
    y[0] = (ctx.num(1) - rho) / lead
    rg = g[1: N + 1][::-1]
    dot = numpy.dot if ctx.is_float64 else ctx.dot
    for k in range(1, N + 1):
        y[k] = rho * dot(rg[N - k:], y[:k]) / lead
    return y


def lattice_bound_tails(ctx, p, h, ts, residual):
    """P(h L + R > t) by (B3) for each t of ``ts`` (context numbers, t <= N h): ``p`` the pmf of L over 0..N,
    ``residual(xs)`` the survival P(R > x) at a context vector of points x >= 0. The tail past floor(t / h) is
    1 - the compensated sum of the pmf (``math.fsum`` in float64)."""
    out = []
    for t in ts:
        n = int(math.floor(t / h))
        head = p[: n + 1]
        below = ctx.fsum(head)
        xs = -ctx.array(range(n + 1)) * h + t
        out.append(max(ctx.num(1) - below, ctx.num(0)) + ctx.dot(head, residual(xs)))
    return out
