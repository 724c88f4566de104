"""The arrivals during a service when the arrival rate depends on the current count: a pure birth process.

**The process.** N(t) on the counts 0..R: from count c, batches arrive at rate lambda(c); a
batch of size X (pmf l_i, i >= 1) brings the count to min(c + X, R) (partial acceptance, the
excess is lost); R is absorbing (lambda(R) = 0 for the count). Its generator Q is upper
triangular (bidiagonal for single arrivals). For a service time S with d.f. B, independent of
the arrivals, the two matrices of every embedded chain at departures are

    M = E exp(Q S) = int exp(Q t) dB(t),              M[c0, c] = P(N(S) = c | N(0) = c0),
    T = E int_0^S exp(Q t) dt = int (1 - B(t)) exp(Q t) dt,  T[c0, c] = the expected time at c.

**Uniformization** (no cancellation): with Lambda >= max lambda(c), P = I + Q / Lambda is
stochastic and entrywise >= 0 (P[c, c] = 1 - lambda(c)/Lambda is given exactly by the caller),
exp(Q t) = sum_k e^{-Lambda t} (Lambda t)^k / k! P^k, hence

    M = sum_k beta_k P^k,   beta_k = int e^{-Lambda t} (Lambda t)^k / k! dB(t),
    T = sum_k w_k P^k,      w_k = int (1 - B(t)) e^{-Lambda t} (Lambda t)^k / k! dt = P(K > k) / Lambda,

K the number of Poisson(Lambda) events during one service: beta_k and P(K > k) are the count
sequences of the service law at the rate Lambda (``docs/theory/chapter3.md`` section 2: the same beta_k,
w_k of (16), (17)). Every term is >= 0. Deterministic service D gives M = exp(Q D) (Poisson
beta_k), exponential service of rate mu gives M = mu (mu I - Q)^{-1} (geometric beta_k),
phase-type and general laws their own count families: one formula for every law.

**Mode thresholds** (:func:`birth_mode`). Under instantaneous control the rate is the one of
the mode in force, and within a service the count only grows: a service that starts in mode
s is, at count c, in mode max(s, level(c)) (level 0 below H, 1 on H..R-1, 2 at R), so lambda(c)
= lambda_{max(s, level(c))} is a function of (s, c): the process above, once per starting mode.
:class:`BirthChain` is the embedded chain at departures of a single-server queue with this
control (1 <= L < H < R; a departure leaving j customers in mode 1 with j <= L - 1 returns to
0, in mode 2 with j <= H to 1), its stationary law q (the one GTH), the time-stationary law of
(count, mode) (renewal reward over the inter-departure intervals, as (17)), the mode
probabilities, the mean normal time (21) (the one M-matrix solve), the control cycle, the loss
and the rate of mode changes.

>>> from qderive.numeric.backend import FLOAT64 as ctx
>>> P = birth_uniformized(ctx, ctx.array([1, 1, 0]), ctx.array([0, 0, 1]), ctx.array([0, 1, 0]),
...                       ctx.array([1, 0, 0]), 2)
>>> M, T, rel = birth_mixture(ctx, P, ctx.array([0.5, 0.25, 0.125, 0.125]), ctx.array([0.5, 0.25, 0.125, 0]),
...                           ctx.array([0.375, 0.125, 0, 0]), 1.0)
>>> [float(x) for x in M[0]], float(T[0].sum()), rel
([0.5, 0.25, 0.25], 0.875, 0.0)
"""

import numpy

from .chains import gth_stationary, mmatrix_solve

#: the measure keys a :class:`BirthChain` gives (with the hysteretic model's names)
BIRTH_KEYS = ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time",
              "loss_probability", "throughput", "mean_time_between_mode_changes")


def birth_mode(s, c, H, R):
    """The mode in force at count c during a service that started in mode s: max(s, level(c)),
    level(c) = 0 for c < H, 1 for H <= c < R, 2 for c = R (the count reaching H switches normal ->
    overload, reaching R switches to discard, a direct jump from below H to R is normal -> discard)."""
    level = 0 if c < H else (1 if c < R else 2)
    return s if s > level else level


def birth_departure_mode(m, j, L, H):
    """The mode after a departure in mode m that leaves j customers: overload -> normal at j <= L - 1,
    discard -> overload at j <= H, else m."""
    if m == 1 and j <= L - 1:
        return 0
    if m == 2 and j <= H:
        return 1
    return m


def birth_uniformized(ctx, up, stay, pmf, tail, R):
    """The uniformized transition matrix P = I + Q / Lambda over the counts 0..R.

    ``up[c]`` = lambda(c) / Lambda and ``stay[c]`` = 1 - lambda(c) / Lambda (both >= 0, given
    exactly by the caller: no subtraction here), ``pmf[i]`` = l_i and ``tail[i]`` = P(X > i) of the
    batch law over 0..R. P[c, c + i] = up[c] l_i (c + i < R), P[c, R] = up[c] P(X >= R - c),
    P[c, c] = stay[c]; the count R is absorbing (up[R] = 0, stay[R] = 1).
    """
    P = ctx.zeros((R + 1, R + 1))
    for c in range(R + 1):
        P[c, c] = stay[c]
        if c < R and up[c] != 0:
            if R - c > 1:
                P[c, c + 1: R] = pmf[1: R - c] * up[c]
            P[c, R] = P[c, R] + up[c] * tail[R - c - 1]
    return P


def birth_product(ctx, V, P, diagonals):
    """V P for an upper triangular P: a dense product, or (few nonzero diagonals: single arrivals give two)
    the sum over the offsets d in ``diagonals`` of V[:, c] P[c, c + d] shifted by d (O(R^2) per diagonal)."""
    n = P.shape[0]
    if len(diagonals) * 4 > n:
        # float64: einsum's own loop (a BLAS product of these small matrices spends more in thread start-up)
        if ctx.is_float64:
            return numpy.einsum("ij,jk->ik", V, P)
        # object arrays: both factors upper triangular (V holds the rows first..n-1 of P^k), so row r of the
        # product needs only V[r, c:] P[c:, c:] with c = first + r (a third of the dense operations)
        W = ctx.zeros(V.shape)
        off = n - V.shape[0]
        for r in range(V.shape[0]):
            c = off + r
            W[r, c:] = V[r, c:].dot(P[c:, c:])
        return W
    W = ctx.zeros(V.shape)
    for d in diagonals:
        band = numpy.array([P[c, c + d] for c in range(n - d)], dtype=ctx.dtype)
        W[:, d:] = W[:, d:] + V[:, : n - d] * band[None, :]
    return W


def birth_mixture(ctx, P, beta, tail, tail2, lam, first=0, check=8):
    """(M, T, rel) = (sum_k beta_k P^k, sum_k (P(K > k) / Lambda) P^k, the relative remainder) over the rows
    ``first``..R (module docstring); row ``first`` + r of the result is row r.

    ``beta``, ``tail``, ``tail2``: the count sequences of the service law at the uniformization rate
    ``lam`` = Lambda, k = 0..K (beta_k, P(K > k), sum_{i > k} P(K > i)). The sums stop after the
    first term k (checked every ``check`` terms) at which the neglected remainders are below
    eps relative to every nonzero entry: as P^{k'} = P^k P^{k'-k} with P^{k'-k} <= 1 and upper
    triangular, sum_{k' > k} beta_k' P^k' [c0, c] <= P(K > k) sum_{c' <= c} P^k[c0, c'], and the
    same with sum_{i > k} P(K > i) / Lambda for T. ``rel`` is the largest bound / entry reached (<= eps
    unless the sequences ran out: then the caller gives more terms). Nonnegative terms only.

    A context with a ``twin()`` (mpmath: gmpy2 numbers at the same precision, correctly rounded as mpmath
    rounds) runs the products there, as the GTH does (measured: a 100-square product 1.76 s in mpf, 0.21 s
    in gmpy2 at 60 digits).
    """
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:
        with twin:
            M, T, rel = birth_mixture(twin, twin.from_mp(P), twin.from_mp(beta), twin.from_mp(tail),
                                      twin.from_mp(tail2), twin.from_mp([lam])[0], first, check)
            return twin.to_mp(M), twin.to_mp(T), twin.to_mp([rel])[0]
    n = P.shape[0]
    diagonals = [d for d in range(n) if any(P[c, c + d] != 0 for c in range(n - d))]
    V = ctx.eye(n)[first:]
    M = V * beta[0]
    T = V * (tail[0] / lam)
    rel = None
    last = len(beta) - 1
    for k in range(1, last + 1):
        V = birth_product(ctx, V, P, diagonals)
        if ctx.is_float64:
            V[V < ctx.tiny] = 0.0  # subnormals stall the products
        M = M + V * beta[k]
        T = T + V * (tail[k] / lam)
        if k % check == 0 or k == last:
            rel = birth_remainder(ctx, V, M, T, tail[k], tail2[k] / lam)
            if rel <= ctx.eps:
                break
    return M, T, rel


def birth_rows(ctx, start, P, top):
    """The rows w_K = ``start`` P^K, K = 0..top, of the uniformized chain over the counts 0..R: a 2-d array.

    ``start`` is a nonnegative vector over 0..R (a law of the count at a service's start, unnormalised).
    With the uniformization weights g_K(s) = E int_0^B e^{-Lambda x} (Lambda x)^K / K! e^{-s (B - x)} dx of
    the service law (:func:`qderive.numeric.kernels.finite_wait.wait_residual_weights` at the rate Lambda),
    the joint transform of the count and the residual service over one service is::

        E int_0^B 1{N(x) = c} e^{-s (B - x)} dx = sum_K g_K(s) w_K[c]     (N(0) ~ start)

    (the expansion exp(Q x) = sum_K e^{-Lambda x} (Lambda x)^K / K! P^K of the module docstring; at s = 0,
    g_K = P(K' > K) / Lambda and the sum is ``start`` T of :func:`birth_mixture`). Every term is >= 0.
    The rows stop early when a row vanishes on the counts below R (R is absorbing, so every later
    row does too); float64 flushes subnormal entries to 0, as :func:`birth_mixture` does.
    """
    n = P.shape[0]
    diagonals = [d for d in range(n) if any(P[c, c + d] != 0 for c in range(n - d))]
    banded = len(diagonals) * 4 <= n
    v = ctx.zeros((1, n))
    v[0] = start
    rows = [v[0]]
    for _ in range(top):
        v = birth_product(ctx, v, P, diagonals) if banded else v.dot(P)
        if ctx.is_float64:
            v[v < ctx.tiny] = 0.0
        if not numpy.any(numpy.asarray(v[0, : n - 1] != 0, dtype=bool)):
            break
        rows.append(v[0])
    out = ctx.zeros((len(rows), n))
    for K, row in enumerate(rows):
        out[K] = row
    return out


def birth_level_rows(ctx, rows, rate):
    """The admitted-arrival level rows W[K, n] = lambda(n + 1) w_K[n + 1] over the counts c = n + 1 = 1..R-1 of the
    rows w_K = start P^K of :func:`birth_rows` (``rate[n]`` = lambda(n + 1), a context array).

    With P(N(x) = c) = sum_K e^{-Lambda x} (Lambda x)^K / K! w_K[c] (uniformization, module docstring) the batches
    arriving at the age x of a service at count c have the intensity lambda(c) P(N(x) = c): W is the level vector
    w_K of the constant-service sums (F1) of :mod:`qderive.numeric.kernels.lattice_finite` at the batch rate
    Lambda (an admitted customer at count c, position i, arriving at the age x of a service D waits
    (D - x) + (c - 1 + i - 1) D, FIFO, partial admission; int_0^y e^{-Lambda x} (Lambda x)^K / K! dx =
    P(Poisson(Lambda y) > K) / Lambda are its weights (F3)) and the level vectors of the transform (the finite
    queue's item 3). Every term is >= 0."""
    R = rows.shape[1] - 1
    return rows[:, 1:R] * rate[None, :]


def birth_levels_by_customers(ctx, s, lam, rate, jump, start, Zp, g0):
    """Phi[i, n] = rate[n] Phi~_{n+1}(s_i), Phi~ = sum_K g_K(s) ``start`` P^K of :func:`birth_rows`, by a recursion over the
    counts instead of the powers: for a 1-d array of nodes s and the counts c = n + 1 = 1..len(rate).

    Summing (Lambda - s) g_K = Lambda g_{K-1} - beta_K (K >= 1, :mod:`~.finite_wait`) against the rows gives
    Phi~ ((Lambda - s) I - Lambda P) = (Lambda - s) g_0 start - Z', Z' = sum_{K >= 1} beta_K start P^K, and as
    P is upper triangular with Lambda (1 - P[c, c]) = lambda(c)::

        (lambda(c) - s) Phi~_c = (Lambda - s) g_0 start_c - Z'_c + sum_{c' < c} Phi~_{c'} Lambda P[c', c].

    ``lam`` = Lambda, ``rate[n]`` = lambda(n + 1), ``jump[m, n]`` = Lambda P[m + 1, n + 1] (m < n; the rest
    unused), ``start``, ``Zp`` over the counts 1..len(rate), ``g0`` = g_0 at the nodes. An error at count c'
    reaches c with a factor that is a sum over the batch paths of products of lambda(c') l / |lambda(c) - s|,
    at most 1 in modulus where |lambda(c) - s| >= Lambda for every c (the condition of
    :func:`~.finite_wait.wait_customer_stable` with the rates in [min lambda, Lambda]); O(len(rate)^2) per node.
    """
    r = len(rate)
    nodes = len(s)
    Phi = numpy.zeros((nodes, r), dtype=complex) if ctx.is_float64 else ctx.zeros((nodes, r))
    if not r or not nodes:
        return Phi
    ls = -(s - lam)
    src = (g0 * ls)[:, None] * start[None, :] - Zp[None, :]
    for n in range(r):
        top = src[:, n] if n == 0 else numpy.dot(Phi[:, :n], jump[:n, n]) + src[:, n]
        Phi[:, n] = top / (-(s - rate[n]))
    return Phi * rate[None, :]


def birth_remainder(ctx, V, M, T, tail_k, tail2_k):
    """max over the nonzero entries of (P(K > k) cum(V) / M, sum_{i>k} P(K > i) / Lambda cum(V) / T), cum the row
    sums of V = P^k up to each column (the bound of :func:`birth_mixture`)."""
    cum = numpy.cumsum(V, axis=1)
    worst = ctx.num(0)
    for A, t in ((M, tail_k), (T, tail2_k)):
        mask = A != 0
        if ctx.is_float64:
            if mask.any():
                worst = max(worst, float((t * cum[mask] / A[mask]).max()))
        else:
            for x, a in zip(cum[mask].tolist(), A[mask].tolist()):
                r = t * x / a
                if r > worst:
                    worst = r
    return worst


def birth_idle(ctx, b1, R, first=0):
    """(M, T) of a service without arrivals (lambda = 0): M = I, T = b_1 I (rows ``first``..R)."""
    V = ctx.eye(R + 1)[first:]
    return V, V * b1


def birth_threshold_matrix(ctx, s, up, stay, pmf, tail, H, R):
    """P of :func:`birth_uniformized` for a service that starts in mode s, uniformized at lambda_s.

    ``up[m]`` = lambda_m / lambda_s and ``stay[m]`` = (lambda_s - lambda_m) / lambda_s for the modes
    m >= s (lambda_0 >= lambda_1 >= lambda_2); the rate at count c < R is lambda_{birth_mode(s, c)}.
    """
    u, w = ctx.zeros(R + 1), ctx.zeros(R + 1)
    for c in range(R):
        m = birth_mode(s, c, H, R)
        u[c], w[c] = up[m], stay[m]
    w[R] = ctx.num(1)
    return birth_uniformized(ctx, u, w, pmf, tail, R)


def birth_support(P):
    """(reach, steps): reach[c0][c] True when the count c can be reached from c0 (P upper triangular), and
    the largest over the reachable pairs of the fewest jumps from c0 to c (the first power of P with every
    reachable entry positive: single arrivals need c - c0, batches of unbounded size 1)."""
    n = P.shape[0]
    far = n + 1
    dist = numpy.full((n, n), far, dtype=numpy.int64)
    for c0 in range(n - 1, -1, -1):
        dist[c0, c0] = 0
        succ = [c for c in range(c0 + 1, n) if P[c0, c] != 0]
        if succ:
            dist[c0, c0 + 1:] = numpy.minimum(dist[c0, c0 + 1:], dist[succ, c0 + 1:].min(axis=0) + 1)
    reach = dist < far
    return reach, int(dist[reach].max())


class BirthChain:
    """The embedded chain at departures of a queue whose mode follows the count at once (module docstring).

    ``mats[s]`` = (M_s, T_s) over the rows 0..R for a service started in mode s (:func:`birth_mixture`,
    or :func:`birth_idle` when lambda_s = 0), ``reach[s]`` their supports (:func:`birth_support`);
    ``first[c]`` = the count after the first batch of an idle period (l_c for c < R, P(X >= R) at R);
    ``lam`` = (lambda_0, lambda_1, lambda_2) batches per unit time; ``b1``; ``L``, ``H``, ``R``.

    States (j, s) after a departure, found from (0, 0). From (j, s), j >= 1, the service ends at
    count c w.p. M_s[j, c] and leaves (c - 1, birth_departure_mode(birth_mode(s, c), c - 1)); from
    (0, 0) the idle period (mean 1 / lambda_0, count 0, mode 0) is followed by the first batch
    and a service from its count: law ``idle_next`` = sum_c1 first[c1] M_0[c1, .] (a service
    from a count c1 >= H in mode 0 is the one in mode max(0, level(c1)): the same rates).
    """

    def __init__(self, ctx, mats, reach, first, lam, b1, L, H, R):
        self.ctx, self.mats, self.reach = ctx, mats, reach
        self.lam, self.b1, self.L, self.H, self.R = lam, b1, L, H, R
        M0, T0 = mats[0]
        self.first = first
        self.idle_next = first.dot(M0)
        self.idle_profile = first.dot(T0)
        self.idle_profile[0] = self.idle_profile[0] + 1 / lam[0]
        idle_reach = numpy.zeros(R + 1, dtype=bool)
        for c1 in range(1, R + 1):
            if first[c1] != 0:
                idle_reach |= reach[0][c1]
        self.idle_reach = idle_reach
        states, index = [(0, 0)], {(0, 0): 0}
        rows = []
        k = 0
        while k < len(states):
            j, s = states[k]
            row = {}
            for c in numpy.flatnonzero(self._reach(j, s)).tolist():
                if c == 0:
                    continue
                nxt = (c - 1, birth_departure_mode(birth_mode(s, c, H, R), c - 1, L, H))
                if nxt not in index:
                    index[nxt] = len(states)
                    states.append(nxt)
                row[index[nxt]] = row.get(index[nxt], []) + [c]
            rows.append(row)
            k += 1
        self.states, self.index = states, index
        n = len(states)
        P = ctx.zeros((n, n))
        for k, row in enumerate(rows):
            law = self.next_count(*states[k])
            for dest, cs in row.items():
                P[k, dest] = ctx.fsum([law[c] for c in cs])
        self.P, self.rows = P, rows

    def _reach(self, j, s):
        return self.idle_reach if j == 0 else self.reach[s][j]

    def next_count(self, j, s):
        """The law of the count just before the next departure, over 0..R, from (j, s)."""
        return self.idle_next if j == 0 else self.mats[s][0][j]

    def profile(self, j, s):
        """The expected time at each count 0..R until the next departure from (j, s) (the idle period included)."""
        return self.idle_profile if j == 0 else self.mats[s][1][j]

    def solve(self):
        """The stationary vector q of the embedded chain (the one GTH) and C = b_1 + q_{0,0} / lambda_0 (17)."""
        self.q = gth_stationary(self.ctx, self.P)
        self.C = self.b1 + self.q[0] / self.lam[0]
        return self

    def time_law(self):
        """p[m][c] = P(count c, mode m) at an arbitrary time = (1/C) sum_k q_k tau_k(c) 1{mode = m} (17)."""
        ctx, R, H = self.ctx, self.R, self.H
        cols = [ctx.zeros(R + 1) for _ in range(3)]
        for k, (j, s) in enumerate(self.states):
            t = self.profile(j, s) * self.q[k]
            for c in range(R + 1):
                if t[c] != 0:
                    m = birth_mode(s, c, H, R)
                    cols[m][c] = cols[m][c] + t[c]
        return [col / self.C for col in cols]

    def modes_reached(self):
        """The modes that occur at all (structurally: a reachable count of some interval is in that mode)."""
        seen = {0}
        for j, s in self.states:
            seen.update(birth_mode(s, c, self.H, self.R) for c in numpy.flatnonzero(self._reach(j, s)).tolist())
        return seen

    def mode_probabilities(self, p=None):
        """P(S_m) = sum_c p_m(c) (:meth:`time_law`); the integer 0 for a mode that never occurs (an exact 0, not
        an underflow: overload without arrivals never reaches R with single arrivals)."""
        p = self.time_law() if p is None else p
        reached = self.modes_reached()
        return [self.ctx.fsum(list(col)) if m in reached else 0 for m, col in enumerate(p)]

    def normal_time(self):
        """(E tau_0, kappa_inf(I - P_0)): (21) y = (I - P_0)^{-1} g from the entry (L - 1, 0), g_k = the
        expected time with count < H in the interval from the normal state k (the idle period included);
        the exits of P_0 are the positive sums of the rows over the other states."""
        ctx = self.ctx
        normal = [k for k, st in enumerate(self.states) if st[1] == 0]
        pos = {k: a for a, k in enumerate(normal)}
        m = len(normal)
        W, exits, g = ctx.zeros((m, m)), ctx.zeros(m), ctx.zeros(m)
        for a, k in enumerate(normal):
            for dest in self.rows[k]:
                if dest in pos:
                    W[a, pos[dest]] = self.P[k, dest]
            exits[a] = ctx.fsum([self.P[k, d] for d in self.rows[k] if d not in pos])
            g[a] = ctx.fsum(list(self.profile(*self.states[k])[: self.H]))
        y, ones = mmatrix_solve(ctx, W, exits, [g, ctx.array([1] * m)])
        off = [ctx.fsum([W[a, b] for b in range(m) if b != a]) for a in range(m)]
        norm = max(exits[a] + 2 * off[a] for a in range(m))
        return y[pos[self.index[(self.L - 1, 0)]]], norm * max(ones)

    def entries_per_departure(self):
        """The probability per departure of an entry into the normal mode: sum over the other states
        of q_k P(k -> a normal state); E tau = C / this (renewal reward, spec section 7)."""
        ctx = self.ctx
        terms = []
        for k, (j, s) in enumerate(self.states):
            if s != 0:
                terms += [self.q[k] * self.P[k, d] for d in self.rows[k] if self.states[d][1] == 0]
        return ctx.fsum(terms)

    def changes_per_departure(self, tail):
        """Expected mode changes per inter-departure interval (every change once, normal -> discard included).

        Upward changes happen at arrivals: from count c in mode m, rate lambda_m, the batch crosses
        the next threshold (H for m = 0, R for m = 1) w.p. P(X >= threshold - c) (``tail[i]`` =
        P(X > i)); their expected number in an interval is sum_c tau(c) lambda_m P(X >= . - c).
        Downward changes happen at departures: the mode at the end of the service differs from
        the mode after the departure.
        """
        ctx, R, H, L = self.ctx, self.R, self.H, self.L
        terms = []
        for k, (j, s) in enumerate(self.states):
            t = self.profile(j, s)
            up = []
            for c in range(R):
                if t[c] != 0:
                    m = birth_mode(s, c, H, R)
                    bound = H if m == 0 else R if m == 1 else None
                    if bound is not None and self.lam[m] != 0:
                        up.append(t[c] * self.lam[m] * tail[bound - c - 1])
            law = self.next_count(j, s)
            down = [law[c] for c in numpy.flatnonzero(self._reach(j, s)).tolist()
                    if c >= 1 and birth_mode(s, c, H, R) != birth_departure_mode(birth_mode(s, c, H, R), c - 1, L, H)]
            terms.append(self.q[k] * ctx.fsum(up + down))
        return ctx.fsum(terms)

    def measures(self, tail, excess, l1, throttle):
        """The measures :data:`BIRTH_KEYS`, and ``_renewal_cycle_time`` = C / (entries per departure), ``_kappa``.

        P(S_m) = column sums of :meth:`time_law`; E tau_0 (21); E tau_12 = E tau_0 (P(S_1) + P(S_2)) /
        P(S_0) (22); E tau = E tau_0 + E tau_12 (23); loss = [l_1 sum_m (lambda_0 - lambda_m) P(S_m)
        + sum_{c,m} p_m(c) lambda_m E(X - (R - c))^+] / (lambda_0 l_1) (throttled, plus the overflow
        at R; ``throttle[m]`` = lambda_0 - lambda_m exactly, ``excess[i]`` = E(X - i)^+); throughput 1/C;
        mean time between mode changes = C / (changes per departure).
        """
        ctx, R = self.ctx, self.R
        p = self.time_law()
        pm = self.mode_probabilities(p)
        t0, kappa = self.normal_time()
        t12 = t0 * (pm[1] + pm[2]) / pm[0]
        over = [p[m][c] * self.lam[m] * excess[R - c] for m in range(3) for c in range(R + 1)
                if self.lam[m] != 0 and p[m][c] != 0]
        lost = l1 * ctx.fsum([throttle[m] * pm[m] for m in (1, 2)]) + ctx.fsum(over)
        values = (pm[0], pm[1], pm[2], t0, t12, t0 + t12, lost / (self.lam[0] * l1), 1 / self.C,
                  self.C / self.changes_per_departure(tail))
        out = dict(zip(BIRTH_KEYS, values))
        out["_renewal_cycle_time"] = self.C / self.entries_per_departure()
        out["_kappa"] = kappa
        return out


def birth_split(ctx, p, q, n, c, s, H, R):
    """The law over a1 = 0..c-n of the flow-1 arrivals among the c - n arrivals that bring the count from n
    to c in a service started in mode s: independent Bernoulli(p_m) trials, m = birth_mode(s, x, H, R) at
    the counts x = n..c-1 before each arrival (a Poisson-binomial law; positive sums). ``p[m]``,
    ``q[m]`` = lambda_1^(m) / lambda^(m) and lambda_2^(m) / lambda^(m), exact."""
    law = ctx.zeros(c - n + 1)
    law[0] = ctx.num(1)
    for x in range(n, c):
        m = birth_mode(s, x, H, R)
        a = x - n + 1  # trials so far
        new = ctx.zeros(c - n + 1)
        new[:a] = law[:a] * q[m]
        new[1: a + 1] = new[1: a + 1] + law[:a] * p[m]
        law = new
    return law


def birth_split_mean(ctx, p, n, c, s, H, R):
    """E a1 = sum_{x=n}^{c-1} p_{birth_mode(s, x)}: the mean flow-1 arrivals of :func:`birth_split`."""
    return ctx.fsum([p[birth_mode(s, x, H, R)] for x in range(n, c)]) if c > n else ctx.num(0)


class BirthTwoFlowChain:
    """The embedded chain at departures of two Poisson flows with one service law and relative priority to flow 1.

    States (i, j, s) after a departure: i flow-1 and j flow-2 customers left, mode s. The total count
    n = i + j evolves as in :class:`BirthChain` with single arrivals and the total rates lambda^(m) =
    lambda_1^(m) + lambda_2^(m) (``chain``, solved); given the count path an arrival from count x is
    of flow 1 w.p. p_m = lambda_1^(m) / lambda^(m), m the mode at x, independently (:func:`birth_split`).
    The service starting at a departure is of flow 1 if i >= 1, else of flow 2 (non-preemptive
    priority); from (0, 0, 0) the first arrival (flow 1 w.p. p_0) starts a service at count 1.
    Next state: (i + a1 - [flow 1 served], j + (c - n - a1) - [flow 2 served], the departure mode).
    """

    def __init__(self, ctx, chain, p, q):
        self.ctx, self.chain, self.p, self.q = ctx, chain, p, q
        L, H, R = chain.L, chain.H, chain.R
        start = (0, 0, 0)
        states, index, rows = [start], {start: 0}, []
        k = 0
        while k < len(states):
            row = {}
            for w, (i, j) in self._starts(*states[k]):
                s = states[k][2]
                n = i + j
                law = chain.mats[s][0][n]
                for c in numpy.flatnonzero(chain.reach[s][n]).tolist():
                    split = birth_split(ctx, p, q, n, c, s, H, R)
                    served1 = 1 if i >= 1 else 0
                    mode = birth_departure_mode(birth_mode(s, c, H, R), c - 1, L, H)
                    for a1 in range(c - n + 1):
                        if split[a1] == 0:
                            continue
                        nxt = (i + a1 - served1, j + (c - n - a1) - (1 - served1), mode)
                        if nxt not in index:
                            index[nxt] = len(states)
                            states.append(nxt)
                        row.setdefault(index[nxt], []).append(w * law[c] * split[a1])
            rows.append({d: ctx.fsum(v) for d, v in row.items()})
            k += 1
        self.states, self.index = states, index
        P = ctx.zeros((len(states), len(states)))
        for k, row in enumerate(rows):
            for d, v in row.items():
                P[k, d] = v
        self.P = P

    def _starts(self, i, j, s):
        """(weight, composition at the start of the service): from the empty state, the first arrival."""
        if i + j == 0:
            return ((self.p[0], (1, 0)), (self.q[0], (0, 1)))
        return ((self.ctx.num(1), (i, j)),)

    def solve(self):
        """q by the one GTH; C = b_1 + q_{(0,0,0)} / lambda^(0)."""
        self.qs = gth_stationary(self.ctx, self.P)
        self.C = self.chain.b1 + self.qs[0] / self.chain.lam[0]
        return self

    def flow_measures(self):
        """(throughput_1, throughput_2, mean number_1, mean number_2).

        Throughput_c = (1/C) sum_k q_k P(the service after k is of flow c); mean number of flow c =
        (1/C) sum_k q_k sum_c' tau(c') (customers of flow c at the start + E(flow-c arrivals up to
        count c')), tau = the birth kernel's time profile T_s[n, .] (renewal reward, as (17)).
        """
        ctx, ch = self.ctx, self.chain
        H, R = ch.H, ch.R
        thr, num = [[], []], [[], []]
        for k, (i, j, s) in enumerate(self.states):
            for w, (a, b) in self._starts(i, j, s):
                n = a + b
                thr[0 if a >= 1 else 1].append(self.qs[k] * w)
                T = ch.mats[s][1][n]
                for c in numpy.flatnonzero(ch.reach[s][n]).tolist():
                    e1 = birth_split_mean(ctx, self.p, n, c, s, H, R)
                    e2 = birth_split_mean(ctx, self.q, n, c, s, H, R)
                    num[0].append(self.qs[k] * w * T[c] * (a + e1))
                    num[1].append(self.qs[k] * w * T[c] * (b + e2))
        return tuple(ctx.fsum(x) / self.C for x in (*thr, *num))
