"""Exact tails of an admitted customer's wait in the finite room with a phase-type service and constant or empirical
vacations (uniform ones through the engine, as mixtures of constants): sums of positive terms over uniformized step
counts.

The finite-room cell "smooth service, kinked vacations" of issue 13, item 4 (``docs/theory/chapter2.md`` sections 0-2;
the state at the batch's arrival of :mod:`qderive.numeric.engines.vacation_finite_wait`, items 1-3, as for the constant
service of :mod:`qderive.numeric.kernels.lattice_finite`). An admitted customer who arrives at the elapsed time x of a
period (a service B or a vacation V), at level n and position m in its batch, waits

    W = (residual of the period) + S_j,    S_j = B_1 + ... + B_j,   j = n + m - 1 services ahead (FIFO),

the idle server's m-th customer W = S_{m-1} (the policies' rule: a vacation ends into a service since the tagged batch
is present, so no further vacation is taken). With the rows w_K of the level vector after K batches and the
admission matrix a[n, j] of (F1), z_K[j] = sum_n w_K[n] a[n, j] counts the batch's admitted customers with j ahead.

**Uniformization** (no transform is inverted, nothing is subtracted). The service PH(beta, T) of order p is
uniformized at theta = max |T_ii|: P = I + T / theta >= 0, exit vector e = 1 - P 1 >= 0, so a service is the time of
the N-th event of a Poisson process of rate theta, N the absorption step of the chain P. Waiting behind a residual
and j services is the *block chain* on (b, phase), b = services left including the current one: a step multiplies
block b by P and moves its exit mass e to block b - 1 with beta (block 1 exits: the wait ends). For a start vector X
over the blocks, M_m(X) = X P_block^m 1 (the mass not yet absorbed after m steps; :meth:`BlockChain.masses`), and::

    P(residual + S_j > t) weighted by X  =  sum_m Pois(m; theta t) M_m(X).                                   (K1)

The service period's start: the phases of the residual service after K batches,
h_K = int_0^oo Pois(K; lambda x) beta e^{T x} dx = (1 / mu) (lambda / mu)^K beta N^{K+1} (mu = lambda + theta,
N = (I - (theta / mu) P)^{-1}, the positive Neumann product of :mod:`~qderive.numeric.kernels.lattice_finite` (F4)),
in block j + 1 with weight sum_K z_K[j] h_K (:func:`residual_phase_rows`). The idle batch: t_I a[I, j] beta in block j.

**A constant vacation d** (a piece w 1{x < d} of ``TimeLaw.survival_pieces``: constant, empirical): the residual is
d - x for the elapsed x in [0, d], with the measure Pois(K; lambda x) dx. For t >= d, c = t - d >= 0, S_j > c + x iff
fewer than N_j events of the rate-theta process fall in [0, c + x], and Pois(theta (c + x)) = Pois(theta c) + Pois(theta x)
(independent), so with the overlap weights::

    nu_K(i) = int_0^d Pois(K; lambda x) Pois(i; theta x) dx = binom(K+i, K) (lambda/mu)^K (theta/mu)^i P(Pois(mu d) > K+i) / mu,
    N_d(W > t) = w sum_l Pois(l; theta c) M_l(Z*),   Z* = sum_i (zeta(i) (x) beta) P_block^i,                 (K2)
    zeta_j(i) = sum_K z_K[j] nu_K(i)     (block j; j = 0: no service ahead, W = d - x <= t),

Z* by Horner (:func:`vacation_start`), independent of t: every t >= d reuses its masses. For t < d, the customers
with x < d - t wait more than t for sure (w sum_K sum_j z_K[j] P(Pois(lambda (d - t)) > K) / lambda), and for
x = (d - t) + y, y in [0, t], Pois(K; lambda x) = sum_k Pois(K - k; lambda (d - t)) Pois(k; lambda y) gives (K2) with
z'_k = sum_{K >= k} Pois(K - k; lambda (d - t)) z_K, the upper limit t in nu and l = 0 (:func:`vacation_below`).
An empirical vacation is a sum of such pieces (its distinct points); a uniform one a mixture of them over d (the
engine integrates these sums over d by Gauss-Legendre, split at d = t). Every term above is a product or a sum of
positive numbers.

**Erlang service** (beta = e_1, P the shift): the steps left are a function of the state, (b - 1) k + (k - phase), so
the masses are reverse cumulative sums of the start's weights by steps left (no chain is run); exact, finite.

**Errors.** Roundings: each value is a positive sum; its relative rounding error is below 4 eps (size + 10) with
size the number of sequential operations (chain steps, Horner steps, rows, levels) plus the magnitude of the
logarithms of the Poisson and negative-binomial weights (float64 forms them from their logarithms). Truncations are
bounded a priori: the Poisson sum (K1) beyond m = M by M_M P(Pois(theta t) > M) (masses decrease), stopped when
below eps of the sum; the Horner sum beyond i = I by w sum_K |z_K|_1 omega_K(0) P(Pois(theta y) > I) (y = d or t)
times sum_l Pois(l; theta c) P(N_B > I + l) (c = t - d; 0 for t < d), N_B the steps from the last block's start
(a term i > I has run at least I + l steps, and N_j <= N_B); the rows beyond the last as in
:mod:`~qderive.numeric.kernels.lattice_finite`.
"""

import math

import numpy

from .finite_wait import FW_NEGLIGIBLE
from .lattice_finite import (RowSums, admission_matrix, matrix_residual_weights, neumann_product,
                             residual_weights)

#: the most uniformized steps a Poisson sum (K1) runs (about 2 theta t: t up to some 30000 mean phases)
STEPS = 1 << 16


def poisson_weights(ctx, z, M):
    """Pois(m; z) for m = 0..M (context numbers, z >= 0): float64 from the logarithms (no underflow of e^{-z} before
    the product), else by the positive recurrence w_m = w_{m-1} z / m from e^{-z}. Returns (weights, log size)."""
    if z == 0:
        out = ctx.zeros(M + 1)
        out[0] = ctx.num(1)
        return out, 0.0
    if ctx.is_float64:
        m = numpy.arange(M + 1, dtype=float)
        lead = m * math.log(z) - z - numpy.array([math.lgamma(k + 1.0) for k in range(M + 1)])
        return ctx.flush(numpy.exp(lead)), float(numpy.max(numpy.abs(lead))) + M
    out = ctx.zeros(M + 1)
    out[0] = ctx.exp(z)
    out[0] = 1 / out[0]
    for k in range(1, M + 1):
        out[k] = out[k - 1] * z / k
    return out, 2.0 * M + 2


def poisson_tail_bound(ctx, z, M):
    """An upper bound of P(Pois(z) > M): Pois(M + 1; z) / (1 - z / (M + 2)) when M + 2 > 2 z (a geometric ratio
    below 1/2), else 1."""
    if z == 0:
        return ctx.num(0)
    if not M + 2 > 2 * z:
        return ctx.num(1)
    if ctx.is_float64:
        lead = (M + 1) * math.log(z) - z - math.lgamma(M + 2.0)
        return math.exp(lead) / (1 - z / (M + 2))
    return ctx.exp((M + 1) * ctx.log(z) - z - ctx.lgamma(ctx.num(M + 2))) / (1 - z / (M + 2))


def poisson_mass_sum(ctx, z, masses, extend):
    """sum_m Pois(m; z) M_m of (K1)/(K2) for the nonincreasing masses M_0, M_1, ... (``masses``, a context vector;
    ``extend(n)`` returns the masses over 0..n - 1, longer, or the same vector when the sequence is complete: exactly
    0 beyond). The sum is extended until the remainder bound M_M P(Pois(z) > M) is below eps of it. Returns
    (value, size) (size: the rounding count of the module docstring)."""
    M = max(int(2 * float(z)) + 16, 16)
    while True:
        want = min(M, STEPS)
        if len(masses) < want + 1:
            masses = extend(want + 1)
        if M > STEPS and len(masses) > want:  # not complete within the limit
            raise ArithmeticError(f"the Poisson sum of the uniformized steps needs more than {STEPS} terms")
        top = min(M, len(masses) - 1)
        weights, size = poisson_weights(ctx, z, top)
        value = ctx.dot(weights, masses[: top + 1])
        if top < M:  # complete: M_m = 0 beyond
            return value, size + top
        rest = masses[top] * poisson_tail_bound(ctx, z, top)
        if rest <= ctx.eps * value or masses[top] == 0:
            return value, size + top
        M *= 2


def residual_phase_rows(ctx, lam, theta, beta, P, top):
    """h_K = int_0^oo Pois(K; lambda x) beta e^{T x} dx = (1 / mu) (lambda / mu)^K beta N^{K+1}, K = 0..top (rows of a
    (top + 1) x p array; T = theta (P - I), mu = lambda + theta, N = (I - q P)^{-1}, q = theta / mu, by the positive
    product prod_i (I + (q P)^{2^i}) of :func:`~qderive.numeric.kernels.lattice_finite.neumann_product`, stopped when |(q P)^{2^i}|_oo mu / lambda <= eps^2 or it is 0 (module
    docstring; the missing N - N_i >= 0 is counted in the returned size). |h_K|_1 = P(K' > K) / lambda, K' the batches
    of a whole service."""
    n = len(beta)
    mu = lam + theta
    q, ratio = theta / mu, lam / mu
    N, steps, _ = neumann_product(ctx, P * q, mu / lam)
    H = ctx.zeros((top + 1, n))
    g = ctx.matmul(beta.reshape(1, n), N)[0] / mu
    for K in range(top + 1):
        if K:
            g = ctx.matmul(g.reshape(1, n), N)[0] * ratio
        H[K] = ctx.flush(g)
    return H, (top + 1) * (n + 2 + steps * (2 * n + 2))


def overlap_weights(ctx, lam, theta, y, top, I):
    """nu_K(i) = int_0^y Pois(K; lambda x) Pois(i; theta x) dx for K = 0..top, i = 0..I (a (top + 1) x (I + 1) array;
    (K2)): binom(K + i, K) (lambda / mu)^K (theta / mu)^i P(Pois(mu y) > K + i) / mu, the regularized incomplete
    gamma by the positive series of :func:`~qderive.numeric.kernels.lattice_finite.residual_weights` (called with the
    rate mu and a cut y). Returns (nu, size)."""
    mu = lam + theta
    out = ctx.zeros((top + 1, I + 1))
    if not y > 0:
        return out, 0.0
    gam, _, size = residual_weights(ctx, mu, (ctx.num(1), ctx.num(0), y), ctx.num(0), top + I)
    Ks = numpy.arange(top + 1)
    Is = numpy.arange(I + 1)
    if ctx.is_float64:
        lg = numpy.array([math.lgamma(k + 1.0) for k in range(top + I + 1)])
        lead = (lg[Ks[:, None] + Is[None, :]] - lg[Ks][:, None] - lg[Is][None, :]
                + Ks[:, None] * math.log(lam / mu) + Is[None, :] * math.log(theta / mu))
        out = numpy.exp(lead) * gam[Ks[:, None] + Is[None, :]]
        return ctx.flush(out), size + float(numpy.max(numpy.abs(lead))) + top + I
    a, b = lam / mu, theta / mu
    row = ctx.zeros(I + 1)  # binom(K + i, K) a^K b^i, K = 0 first: b^i
    row[0] = ctx.num(1)
    for i in range(1, I + 1):
        row[i] = row[i - 1] * b
    for K in range(top + 1):
        if K:  # binom(K+i, K) = binom(K-1+i, K-1) (K+i)/K: one rounding more per factor
            row = row * ctx.array([a * (K + i) / K for i in range(I + 1)])
        out[K] = row * gam[K: K + I + 1]
    return out, size + 4.0 * (top + I) + 10


class BlockChain:
    """The uniformized block chain of the module docstring for a PH service (theta, P, exit e, beta) and B blocks, in
    one context: steps of start matrices (B x p) and their masses. ``erlang`` = k when beta = e_1 and P is the shift
    (Erlang-k; k = 1: exponential): then a start is kept as weights by steps left (a vector) and its masses are reverse
    cumulative sums, exactly. A context with a ``twin()`` (mpmath: gmpy2 numbers at the same precision, the same
    correctly rounded operations, about ten times faster) runs the chain there; starts live in the twin, inputs and
    results are converted exactly at the boundary (:meth:`add_blocks`, :meth:`add_phases`, :meth:`masses`, :meth:`total`)."""

    def __init__(self, ctx, P, exit_, beta, blocks, erlang=None):
        self.ctx, self.B, self.erlang, self.p = ctx, blocks, erlang, len(beta)
        self.work = (ctx.twin() if hasattr(ctx, "twin") else None) or ctx
        self.twin = self.work is not ctx
        with self.work:
            self.P, self.exit, self.beta = (self._in(a) for a in (P, exit_, beta))

    def _in(self, a):
        return self.work.from_mp(a) if self.twin else a

    def _out(self, a):
        return self.work.to_mp(a) if self.twin else a

    def zero(self):
        w = self.work
        with w:
            return w.zeros((self.B * self.erlang + 1,)) if self.erlang else w.zeros((self.B, self.p))

    def add_blocks(self, X, weights, shift=0):
        """X plus weights[j] beta in block j + shift (j >= 1 - shift; block 0: nothing left), ``weights`` over j
        (a context vector)."""
        with self.work:
            weights = self._in(numpy.asarray(weights, dtype=object) if self.twin else weights)
            for j in range(len(weights)):
                b = j + shift
                if b < 1 or b > self.B or weights[j] == 0:
                    continue
                if self.erlang:
                    X[b * self.erlang] = X[b * self.erlang] + weights[j]
                else:
                    X[b - 1] = X[b - 1] + self.beta * weights[j]
        return X

    def add_phases(self, X, rows, shift=0):
        """X plus rows[j] (a phase vector; ``rows`` a context matrix) in block j + shift."""
        k = self.erlang
        with self.work:
            rows = self._in(rows)
            for j in range(rows.shape[0]):
                b = j + shift
                if b < 1 or b > self.B:
                    continue
                if k:
                    for phase in range(k):
                        X[(b - 1) * k + (k - phase)] = X[(b - 1) * k + (k - phase)] + rows[j][phase]
                else:
                    X[b - 1] = X[b - 1] + rows[j]
        return X

    def step(self, X):
        """One uniformized step of the start X (a new array)."""
        w = self.work
        with w:
            if self.erlang:
                out = w.zeros(X.shape)
                out[:-1] = X[1:]
                out[0] = w.zeros(1)[0]
                return out
            out = w.matmul(X, self.P)
            leave = w.matmul(X, self.exit.reshape(self.p, 1))[:, 0]
            if self.B > 1:
                out[:-1] = out[:-1] + w.matmul(leave[1:].reshape(self.B - 1, 1), self.beta.reshape(1, self.p))
            return w.flush(out)

    def total(self, X):
        """The mass of X (a context number)."""
        with self.work:
            value = self.work.fsum(list(X.ravel()))
            return self._out(numpy.array([value], dtype=object))[0] if self.twin else value

    def masses(self, X):
        """A function n -> (M_0..M_{n-1} of X) (:func:`poisson_mass_sum`'s ``extend``), the chain run and kept."""
        ctx, w = self.ctx, self.work
        if self.erlang:
            with w:
                full = numpy.cumsum(X[::-1])[::-1]  # M_m = sum_{s > m} X[s]
                full = numpy.append(full[1:], w.zeros(1))
                full = self._out(full) if self.twin else full
            return lambda n, full=full: full
        with w:
            state = {"X": X, "out": [w.fsum(list(X.ravel()))]}

        def extend(n):
            while len(state["out"]) < n:
                state["X"] = self.step(state["X"])
                with w:
                    state["out"].append(w.fsum(list(state["X"].ravel())))
            with w:
                out = numpy.array(state["out"], dtype=object if self.twin or not ctx.is_float64 else float)
                return self._out(out) if self.twin else out

        return extend


def vacation_start(chain, zeta, shift=0):
    """Z* = sum_i (zeta(i) (x) beta) P_block^i of (K2) by Horner (``zeta``: (I + 1) x blocks-of-j array, j = 0..;
    the customers with j ahead go to block j + shift). Returns (Z*, Horner steps)."""
    X = chain.zero()
    for i in range(zeta.shape[0] - 1, -1, -1):
        if i < zeta.shape[0] - 1:
            X = chain.step(X)
        X = chain.add_blocks(X, zeta[i], shift)
    return X, zeta.shape[0]


def vacation_below(ctx, chain, lam, theta, d, t, z, omega_t, shift, I, beyond=1):
    """N_d(W > t) / w for t < d (module docstring): the customers sure to wait more than t plus the mass of the start
    built from z'_k = sum_{K >= k} Pois(K - k; lambda (d - t)) z_K and nu with the upper limit t (rows ``z``:
    (top + 1) x (j = 0..); ``omega_t`` = P(Pois(lambda (d - t)) > K) / lambda, K = 0..top, the weights (F3) at u = t).
    ``beyond`` >= the mass fraction left after I steps from any block (the caller's P(N_B > I)). Returns (value,
    size, truncation bound / w)."""
    top = z.shape[0] - 1
    sure = ctx.dot(omega_t, z.sum(axis=1) if ctx.is_float64 else numpy.array([ctx.fsum(list(row)) for row in z]))
    if not t > 0:
        return sure, top + 2.0, ctx.num(0)
    weights, size = poisson_weights(ctx, lam * (d - t), top)
    Pm = ctx.zeros((top + 1, top + 1))
    for k in range(top + 1):
        Pm[k, k:] = weights[: top + 1 - k]
    zp = ctx.matmul(Pm, z)
    nu, nsize = overlap_weights(ctx, lam, theta, t, top, I)
    zeta = ctx.matmul(numpy.ascontiguousarray(nu.T), zp)
    X, steps = vacation_start(chain, zeta, shift)
    mass = chain.total(X)
    # the Horner sum beyond I: sum_k |z'_k|_1 int_0^t Pois(k; lambda y) dy P(Pois(theta t) > I)
    total = ctx.fsum(list(zp.ravel()))
    trunc = total / lam * poisson_tail_bound(ctx, theta * t, I) * beyond
    return sure + mass, size + nsize + steps + 2 * top + 10, trunc


def uniformized(alpha, T):
    """(theta, P, exit, alpha, k) of a phase-type law PH(alpha, T) (module docstring): theta = max |T_ii|,
    P = I + T / theta, exit = 1 - P 1, k the Erlang order when alpha = e_1 and P is the shift (else None), in the
    numbers given (the engine: Fractions, exact; generated code: floats, for which an Erlang law's P is exact too:
    1 + (-a) / a = 0 and a / a = 1)."""
    n = len(alpha)
    theta = max(-T[i][i] for i in range(n))
    P = tuple(tuple((1 if i == j else 0) + T[i][j] / theta for j in range(n)) for i in range(n))
    exit_ = tuple(1 - sum(row, 0 * theta) for row in P)
    shift = all(P[i][j] == (1 if j == i + 1 else 0) for i in range(n) for j in range(n))
    erlang = n if shift and all(alpha[i] == int(i == 0) for i in range(n)) else None
    return theta, P, exit_, tuple(alpha), erlang


#: Horner steps of the vacations' start (K2) beyond which the sums stop extending them
KINKED_STEPS = 1 << 14


class KinkedSums(RowSums):
    """The data of the sums (K1)-(K2) of :mod:`qderive.numeric.kernels.finite_kinked` in the context of the law's
    ``parts``, for the wait (``extra`` 0) or the sojourn (1: the customer's own service is one more block): the
    admission matrices, the idle weight, the block chain of the service, per period its rows, batch rate, start (the
    service: the residual phases summed with the admission weights; a vacation piece (w, d): its Horner start Z* and
    the rows' admission weights z_K) and truncation bounds, and the total N(W > -1). Rows and Horner steps are
    extended (doubled) while the truncation bound exceeds the tolerance of a tail
    (:meth:`~qderive.numeric.kernels.lattice_finite.RowSums.tail`).

    ``parts``: objects with the fields of the engine's ``WaitData`` that the sums read (``ctx``, ``r``, ``whole``,
    ``lam``, ``pmf``, ``tail``, ``support``, ``geometric``, ``t_idle``, ``Ws``, ``Wv``, ``beta``, ``phi``);
    ``setup``: ((theta, P, exit, beta, k), (atoms ((w, d), ...), densities ((c, x_0, x_1), ...))) of
    :func:`uniformized` and the vacation's pieces (exact numbers in the engine, floats in generated code);
    ``nodes(n, ctx)``: the Gauss-Legendre nodes and weights on [-1, 1] of a uniform vacation's density. The engine
    (:mod:`qderive.numeric.engines.vacation_finite_wait`) and generated code run it."""

    def __init__(self, parts, setup, extra, nodes):  # noqa: D107 - the class docstring says it
        (theta, P, exit_, beta, erlang), (pieces, densities) = setup
        self.nodes = nodes
        first = parts[0]
        self.ctx, self.r, self.extra = first.ctx, first.r, extra
        ctx = self.ctx
        with ctx:
            self.keep = first.tail[self.r:0:-1].copy() if first.whole else None
            self.A, self.C = admission_matrix(ctx, first.pmf, first.tail, self.r, first.whole)
            self.idle = ctx.fsum([d.t_idle for d in parts])
            self.theta = ctx.num(theta)
            n = len(beta)
            Pc = ctx.zeros((n, n))
            for i in range(n):
                for j in range(n):
                    Pc[i, j] = ctx.num(P[i][j])
            self.P, self.exit, self.beta = Pc, ctx.array([ctx.num(v) for v in exit_]), ctx.array([ctx.num(a)
                                                                                                 for a in beta])
            self.piece = (ctx.num(1), self.theta, None, (self.beta, self.P, self.exit))
            self.chain = BlockChain(ctx, self.P, self.exit, self.beta, self.r + 2 + extra, erlang)
            self.vpieces = tuple((ctx.num(w), ctx.num(d), d) for w, d in pieces)
            self.steps = {d: self._initial_steps(ctx.num(d)) for _, _, d in self.vpieces}
            self.densities = tuple((ctx.num(c), x0, x1) for c, x0, x1 in densities)
            self.order, self.horner = (12 if ctx.is_float64 else ctx.dps // 3 + 8), 1  # Gauss-Legendre nodes, I x
            self.periods = []
            for data in parts:
                self.periods.append(self._period(data, data.Ws, "service", data.Ws.shape[0] < len(data.beta)))
                if data.Wv.shape[0]:
                    self.periods.append(self._period(data, data.Wv, "vacation", data.Wv.shape[0] < len(data.phi)))
            worst = self.chain.add_blocks(self.chain.zero(), [ctx.num(0)] * (self.chain.B - 1) + [ctx.num(1)], 1)
            self.worst = self.chain.masses(worst)  # P(N_B > m): the steps from the last block's start
            self._idle_start()
            self.mass = self._sum(-1)[0]

    def _beyond(self, I, z):
        """sum_l Pois(l; z) P(N_B > I + l) (the Horner cut's factor, kernel docstring *Errors*)."""
        ctx = self.ctx

        def shifted(n):
            full = self.worst(n + I)
            return full[I:] if len(full) > I else ctx.zeros(1)

        return poisson_mass_sum(ctx, z, shifted(1), shifted)[0]

    def _initial_steps(self, d):
        """The first Horner length I for a piece at d: P(Pois(theta d) > I) <= eps (ArithmeticError beyond
        :data:`KINKED_STEPS`: a vacation of more than about 8000 service phases)."""
        ctx, I = self.ctx, int(2 * float(self.theta * d)) + 16
        while poisson_tail_bound(ctx, self.theta * d, I) > ctx.eps:
            I *= 2
        if I > KINKED_STEPS:
            raise ArithmeticError(f"the vacation {float(d):.6g} spans about {float(self.theta * d):.6g} uniformized "
                                  f"service phases: its residual needs more than {KINKED_STEPS} steps")
        return I

    def _idle_start(self):
        """The start of the service periods and the idle batch together (one Poisson sum at theta t) and its masses."""
        chain = self.chain
        X = chain.zero()
        X = chain.add_blocks(X, self.A[self.r] * self.idle, self.extra)
        for W, data, kind, profile, _ in self.periods:
            if kind == "service":
                X = chain.add_phases(X, profile["start"], 1 + self.extra)
        self.start = X
        self.start_masses = chain.masses(X)
        self.start_size = (self.r + 2) * (chain.p + 2)

    def _period(self, data, W, kind, complete):
        ctx, r = self.ctx, self.r
        lam = data.lam
        top = W.shape[0] - 1
        z = ctx.matmul(W, self.A[:r]) if r else ctx.zeros((W.shape[0], r + 1))  # z_K[j]
        mass = ctx.fsum(list(W[top])) if W.shape[1] else ctx.num(0)
        reach = numpy.max(self.C[:r, 0]) if r else ctx.num(0)
        error = FW_NEGLIGIBLE * float(numpy.max(numpy.abs(W))) if ctx.is_float64 and W.size else 0
        profile = {"z": z, "trunc": ctx.num(0), "size": float(top + r)}
        if kind == "service":
            H, size = residual_phase_rows(ctx, lam, self.theta, self.beta, self.P, top)
            profile["start"] = ctx.matmul(numpy.ascontiguousarray(z.T), H)
            profile["size"] += size
            if not complete and mass:
                _, rem, _, _ = matrix_residual_weights(ctx, lam, self.piece, top)
                profile["trunc"] = profile["trunc"] + mass * rem * reach
            if error:
                profile["trunc"] = profile["trunc"] + error * r * ctx.fsum(list(H.ravel())) * reach
        else:
            rowsum = numpy.array([ctx.fsum(list(row)) for row in z], dtype=object) if not ctx.is_float64 else z.sum(axis=1)
            profile["rowsum"], profile["vac"] = rowsum, []
            for w, d, exact_d in self.vpieces:
                om, rem, size = residual_weights(ctx, lam, (w, ctx.num(0), d), ctx.num(0), top)
                start = self._start(lam, z, rowsum, d, self.steps[exact_d])
                start["total"] = ctx.dot(om, rowsum)  # this piece's admitted customers
                start["size"] += size
                profile["vac"].append(start)
                if not complete and mass:
                    profile["trunc"] = profile["trunc"] + mass * rem * reach
                if error:
                    profile["trunc"] = profile["trunc"] + error * r * ctx.fsum(list(om)) * reach
            for c, x0, x1 in self.densities:  # the rows cut: as an atom at x_1 (omega_K(0) grows with d)
                om, rem, _ = residual_weights(ctx, lam, (c * ctx.num(x1 - x0), ctx.num(0), ctx.num(x1)),
                                                 ctx.num(0), top)
                if not complete and mass:
                    profile["trunc"] = profile["trunc"] + mass * rem * reach
                if error:
                    profile["trunc"] = profile["trunc"] + error * r * ctx.fsum(list(om)) * reach
        return [W, data, kind, profile, complete]

    def _start(self, lam, z, rowsum, d, I):
        """The Horner start Z* of (K2) for a constant vacation d (weight 1) with I steps: its masses, the weight its
        Horner cut may miss (before the factor of :meth:`_beyond`) and its rounding count."""
        ctx = self.ctx
        nu, nsize = overlap_weights(ctx, lam, self.theta, d, z.shape[0] - 1, I)
        Z, steps = vacation_start(self.chain, ctx.matmul(numpy.ascontiguousarray(nu.T), z), self.extra)
        cut = ctx.fsum(list(rowsum)) / lam * poisson_tail_bound(ctx, self.theta * d, I)
        return {"masses": self.chain.masses(Z), "cut": cut, "size": nsize + steps * (self.chain.p + 2), "I": I}

    def _point(self, data, W, profile, d, tt, start=None):
        """(N_d(W > t), size, truncation) of a constant vacation d (weight 1; a context number, tt = t likewise):
        t >= d by the Poisson sum over the masses of its start (``start``, made here when None), t < d by
        :func:`~qderive.numeric.kernels.finite_kinked.vacation_below`."""
        ctx = self.ctx
        if d <= tt:
            if start is None:
                start = self._start(data.lam, profile["z"], profile["rowsum"], d, self._initial_steps(d) * self.horner)
            got, sz = poisson_mass_sum(ctx, self.theta * (tt - d), start["masses"](1), start["masses"])
            cut = start["cut"] * self._beyond(start["I"], self.theta * (tt - d)) if start["cut"] else ctx.num(0)
            return got, sz + start["size"], cut
        I = start["I"] if start is not None else self._initial_steps(d) * self.horner
        om = residual_weights(ctx, data.lam, (ctx.num(1), ctx.num(0), d), tt, W.shape[0] - 1)[0]
        got, sz, cut = vacation_below(ctx, self.chain, data.lam, self.theta, d, tt, profile["z"], om, self.extra,
                                         I, self._beyond(I, ctx.num(0)))
        return got, sz + profile["size"], cut

    def _density(self, data, W, profile, c, x0, x1, t):
        """(c int_{x_0}^{x_1} N_d(W > t) dd, size, truncation) by Gauss-Legendre of ``order`` and 2 ``order`` nodes
        on each side of d = t (N_d is analytic in d there); their difference enters the truncation. t < 0: the
        total number of the density's admitted customers (N_d(W > 0): every vacation customer waits)."""
        ctx = self.ctx
        tt = ctx.num(max(t, 0))
        cuts = [x0, t, x1] if x0 < t < x1 else [x0, x1]
        out, size, trunc = [], 0.0, ctx.num(0)
        for n in (self.order, 2 * self.order):
            nodes, weights = self.nodes(n, ctx)
            terms = []
            for lo, hi in zip(cuts, cuts[1:]):
                half, mid = ctx.num((hi - lo) / 2), ctx.num((hi + lo) / 2)  # exact in the engine: Fractions
                for x, w in zip(nodes, weights):
                    got, sz, cut = self._point(data, W, profile, mid + half * ctx.num(x), tt)
                    terms.append(half * ctx.num(w) * got)
                    size, trunc = max(size, sz + n), (trunc + half * ctx.num(w) * cut if n > self.order else trunc)
            out.append(c * ctx.fsum(terms))
        return out[1], size, c * trunc + abs(out[1] - out[0])

    def _extend(self):
        """Double the rows (:meth:`RowSums._extend`) and the Horner steps; False when neither can grow."""
        grown = False
        for d, I in self.steps.items():
            if I < KINKED_STEPS:
                self.steps[d], grown = 2 * I, True
        if self.densities and self.order < 256:
            self.order, self.horner, grown = 2 * self.order, 2 * self.horner, True
        if grown:
            self.periods = [self._period(data, W, kind, complete) for W, data, kind, _, complete in self.periods]
        grown = super()._extend() or grown
        if grown:
            self._idle_start()
            self.mass = self._sum(-1)[0]
        return grown

    def _sum(self, t):
        """(N(W > t), rounding bound, truncation bound) by (K1)-(K2) (t exact; t < 0: the total N(W > -1))."""
        ctx = self.ctx
        if t < 0:
            parts = [self.idle * self.C[self.r, 0]]
            for W, data, kind, profile, _ in self.periods:
                if kind == "service":
                    parts.append(ctx.fsum(list(profile["start"].ravel())))
                else:
                    parts.extend(v["total"] for v in profile["vac"])
            trunc = ctx.fsum([p[3]["trunc"] for p in self.periods])
            for W, data, kind, profile, _ in self.periods:
                for c, x0, x1 in self.densities if kind == "vacation" else ():
                    got, _, cut = self._density(data, W, profile, c, x0, x1, -1)
                    parts.append(got)
                    trunc = trunc + cut
            total = ctx.fsum(parts)
            return total, 4 * ctx.eps * (len(parts) + self.r + 10) * total, trunc
        tt = ctx.num(t)
        value, size = poisson_mass_sum(ctx, self.theta * tt, self.start_masses(1), self.start_masses)
        size += self.start_size
        parts, trunc = [value], ctx.num(0)
        for W, data, kind, profile, _ in self.periods:
            size = max(size, profile["size"])
            trunc = trunc + profile["trunc"]
            if kind == "service":
                continue
            for (w, d, exact_d), v in zip(self.vpieces, profile["vac"]):
                got, sz, cut = self._point(data, W, profile, d, tt, v)
                parts.append(w * got)
                size, trunc = max(size, sz), trunc + w * cut
            for c, x0, x1 in self.densities:
                got, sz, cut = self._density(data, W, profile, c, x0, x1, t)
                parts.append(got)
                size, trunc = max(size, sz), trunc + cut
        total = ctx.fsum(parts)
        return total, 4 * ctx.eps * (size + 10) * total, trunc
