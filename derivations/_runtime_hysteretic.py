"""Numpy-only runtime of the hysteretic overload control M[X]|G|1|(L,H)|(H,R), copied into generated code.

``qderive codegen hysteretic`` pastes this file (without this docstring) after
:mod:`qderive.derivations._runtime_arrivals` (whose count laws ``_poisson_counts``,
``_negbin_counts``, ``_mixture_counts``, batch laws ``*_batch``, ``_columns``,
``_arrival_counts``, ``_require`` and ``_positive`` it uses) into a standalone module,
then appends the generated closed forms of the model's inputs and the public function.
It imports nothing but numpy, math and warnings.

It is a float64 transcription of the in-package engine :mod:`qderive.numeric.hysteretic`
(with :mod:`qderive.numeric.skipfree` and :mod:`qderive.numeric.sequences`) for the
defaults of ``qderive eval hysteretic``: the *event* convention, *interval* semantics and
the *corrected* E tau_0 (21) (Sopin 2013, chapter 3, reconstructed in ``spec/chapter3.md``).
It keeps the same subtraction-free algorithms: positive-term arrival counts and tails,
GTH for the embedded chain (16), the subtraction-free elimination of the M-matrix
I - P_0 for (21). Its results are compared with ``qderive eval`` by
``tests/test_codegen_hysteretic.py``.

Precision policy. ``qderive eval`` switches from float64 to mpmath when
kappa_inf(I - P_0) eps > 1e-6, when the renewal identity E tau = C / (q_{L,1} a_0^(1))
fails by more than 1e-10 relative, or when a measure under/overflows. This code cannot;
it computes the same checks and emits a ``RuntimeWarning`` (``warnings.warn``) when one
triggers, and still returns its float64 result.
"""

import math
import warnings

import numpy

#: float64 results are flagged when kappa_inf(I - P_0) * eps_64 exceeds this (numeric.hysteretic.KAPPA_SWITCH)
_KAPPA_SWITCH = 1e-6
#: float64 results must satisfy the renewal identity to this relative accuracy
_RENEWAL_TOLERANCE = 1e-10

HYSTERETIC_KEYS = ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time",
                   "mean_cycle_time", "loss_probability", "throughput")


def _fsum(values):
    """Sum of positive terms (numpy's pairwise sum, as the in-package float64 backend)."""
    return float(numpy.sum(values))


def _threshold(name, value):
    """A threshold as a nonnegative integer (ValueError naming it otherwise)."""
    try:
        ok = float(value) == int(value) and int(value) >= 0
    except (TypeError, ValueError, OverflowError):
        ok = False
    _require(ok, name, value, "a nonnegative integer (threshold)")
    return int(value)


def _overload_factor(value):
    """f = lambda_1 / lambda_0 as a float in (0, 1) (ValueError naming ``overload_factor`` otherwise)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        f = math.nan
    _require(0 < f < 1, "overload_factor", value, "a number in (0, 1) (lambda_1 / lambda_0)")
    return f


def _hysteretic_thresholds(L, H, R):
    """Check L < H < R, L >= 1, R >= H + 2 (``HystereticModel.__post_init__``); return them as ints."""
    L, H, R = _threshold("L", L), _threshold("H", H), _threshold("R", R)
    _require(L < H, "L", L, f"< H = {H} (thresholds L < H < R)")
    _require(H < R, "H", H, f"< R = {R} (thresholds L < H < R)")
    _require(L >= 1, "L", L, ">= 1 (normal mode is re-entered at L - 1 customers)")
    _require(R >= H + 2, "R", R, f">= H + 2 = {H + 2} (the discard states H+1..R-1 of the embedded chain must exist)")
    return L, H, R


# ---- inputs independent of L and H (spec/chapter3.md sections 2-4) ------------------------------


class _HystereticInputs:
    """Arrival counts of modes 0 and 1 over 0..R and the batch quantities (``numeric.hysteretic.ArrivalInputs``).

    ``counts[s]`` = (a, abar, u, ubar) of one service in mode s; ``ge[s][n]`` = P(A >= n) (the
    chapter-3 bar-a); ``first[c]`` = l_c (c < R) and P(X >= R) (c = R): the count at the start of
    the service after an idle period; ``idle_next`` its law of n^-, ``idle_profile`` the expected
    time at each count from the departure that empties the system to the next departure.
    """

    def __init__(self, lam, batch, service_counts, b1, R):
        self.lam, self.b1, self.R, self.l1 = lam, b1, R, batch.l1
        self.counts = tuple(_arrival_counts(service_counts(lm, R), batch, lm, R, b1) for lm in lam)
        self.ge = []
        for a, abar, _, _ in self.counts:
            g = numpy.zeros(R + 1)
            g[0] = 1.0
            g[1:] = abar[:R]  # P(A >= n) = P(A > n - 1)
            self.ge.append(g)
        first = batch.pmf[: R + 1].copy()
        first[R] = batch.tail[R - 1]  # P(X >= R): the batch that fills the system
        self.first = first
        # the service after an idle period starts with min(X, R) customers: convolve the first
        # batch with the arrivals of that service (dot products of positive vectors)
        a0, _, u0, ubar0 = self.counts[0]
        ge0 = self.ge[0]
        idle_next = numpy.zeros(R + 1)
        idle_profile = numpy.zeros(R + 1)
        for c in range(1, R):
            idle_next[c] = float(numpy.dot(first[1 : c + 1], a0[c - 1 :: -1][:c]))
            idle_profile[c] = float(numpy.dot(first[1 : c + 1], u0[c - 1 :: -1][:c]))
        idle_next[R] = float(numpy.dot(first[1:R], ge0[R - 1 : 0 : -1])) + first[R]
        idle_profile[R] = float(numpy.dot(first[1:R], ubar0[R - 1 : 0 : -1])) + first[R] * b1
        idle_profile[0] = 1 / lam[0]  # the idle period itself, at count 0
        self.idle_next, self.idle_profile = idle_next, idle_profile
        self.excess = batch.excess[: R + 1].copy()  # E (X - m)^+, m = 0..R

    def profile(self, j, s):
        """Expected time at each count 0..R until the next departure from the embedded state (j, s).

        From (0, 0): the idle period, then the first service. From (c0, s), c0 >= 1: J^{(s)}(c - c0)
        = u^{(s)}_{c-c0} for c0 <= c < R and Ubar^{(s)}_{R-c0} at R (spec section 4); discard stays at c0.
        """
        if j == 0:
            return self.idle_profile
        R = self.R
        t = numpy.zeros(R + 1)
        if s == 2:
            t[j] = self.b1
            return t
        _, _, u, ubar = self.counts[s]
        t[j:R] = u[: R - j]
        t[R] = ubar[R - j]
        return t

    def next_count(self, j, s):
        """Law of n^- (count just before the departure) of the service that follows the state (j, s)."""
        if j == 0:
            return self.idle_next
        R = self.R
        d = numpy.zeros(R + 1)
        if s == 2:
            d[j] = 1.0
            return d
        d[j:R] = self.counts[s][0][: R - j]
        d[R] = self.ge[s][R - j]
        return d


# ---- the embedded chain (16), event convention (spec/chapter3.md sections 1, 3) ------------------


def _next_state(n_minus, s, L, H, R):
    """State after a departure in mode s whose count just before it was n^- (event convention).

    Normal: n^- >= R -> discard, n^- >= H -> overload. Overload: n^- >= R -> discard, j <= L - 1 ->
    normal. Discard: j <= H -> overload; j = n^- - 1 is the count left behind.
    """
    j = n_minus - 1
    if s == 2:
        return (j, 1) if j <= H else (j, 2)
    if n_minus >= R:
        return (R - 1, 2)
    if s == 0:
        return (j, 1) if n_minus >= H else (j, 0)
    return (j, 0) if j <= L - 1 else (j, 1)


def _embedded_chain(inp, L, H, R):
    """(states, P, exits): the embedded chain X(t_n + 0) of (16) and the exits of the normal block P_0 (20).

    States S_0^e = {(j, 0): j = 0..H-2}, S_1^e = {(j, 1): j = L..R-2}, S_2^e = {(j, 2): j = H+1..R-1},
    in this order (P_0 is the leading block). From (i, s), i >= 1, s in {0, 1}: n^- = min(R, i + A),
    A ~ a^{(s)}; from (0, 0): n^- = min(R, min(X, R) + A); from (i, 2): n^- = i.
    ``exits[i]`` = P(leave S_0 from normal state i) as a positive tail P(n^- >= H).
    """
    states = ([(j, 0) for j in range(H - 1)] + [(j, 1) for j in range(L, R - 1)]
              + [(j, 2) for j in range(H + 1, R)])
    index = {st: k for k, st in enumerate(states)}
    n = len(states)
    P = numpy.zeros((n, n))
    dest = {s: numpy.array([-1] + [index[_next_state(c, s, L, H, R)] for c in range(1, R + 1)]) for s in (0, 1)}
    for k, (j, s) in enumerate(states):
        if s == 2:
            P[k, index[_next_state(j, 2, L, H, R)]] = 1.0
            continue
        law = inp.next_count(j, s)
        lo = max(j, 1)
        P[k, dest[s][lo:]] = law[lo:]
    exits = numpy.zeros(H - 1)
    exits[0] = _fsum(inp.idle_next[H:])
    for j in range(1, H - 1):
        exits[j] = inp.ge[0][H - j]
    return states, index, P, exits


def _stationary_gth_sparse(P):
    """Stationary vector of P by GTH (Grassmann-Taksar-Heyman), skipping zeros left of the diagonal.

    State k is eliminated (last to first) by A[:k, j] += A[:k, k] A[k, j] / s_k for the columns
    j < k with A[k, j] != 0, s_k = sum_{j<k} A[k, j]: no diagonal, no subtraction
    (``numeric.skipfree.stationary_gth_sparse``). Solves the balance equations (16).
    """
    A = P.copy()
    n = A.shape[0]
    for k in range(n - 1, 0, -1):
        row = A[k, :k]
        down = numpy.flatnonzero(row != 0)
        if down.size == 0:
            raise ValueError(f"the chain is reducible: state {k} has no transition to states 0..{k - 1}")
        s = _fsum(row[down])
        col = A[:k, k] / s
        A[:k, k] = col
        for j in down:
            A[:k, j] = A[:k, j] + col * A[k, j]
    pi = numpy.zeros(n)
    pi[0] = 1.0
    for k in range(1, n):
        pi[k] = float(numpy.dot(pi[:k], A[:k, k]))
    return pi / _fsum(pi)


def _solve_hessenberg_mmatrix(P0, delta, rhs):
    """((I - P_0)^{-1} g for g in rhs, kappa_inf(I - P_0)) for an upper Hessenberg substochastic P_0.

    Elimination of the subdiagonal of I - P_0 carrying the row sums s_k instead of the diagonal
    (``numeric.skipfree.solve_hessenberg_mmatrix``; Alfa, Xue & Ye 2002): every operation adds or
    multiplies nonnegative numbers, so the entrywise relative error does not depend on kappa.
    ``delta[i]`` = 1 - sum_j P_0[i, j], computed by the caller as positive tails.
    """
    m = P0.shape[0]
    U = P0.copy()
    s = delta.copy()
    d = numpy.zeros(m)
    rhs = [numpy.array(g, dtype=float) for g in rhs] + [numpy.ones(m)]
    off = [_fsum(numpy.concatenate((P0[k, :k], P0[k, k + 1 :]))) for k in range(m)]
    norm = max(delta[k] + 2 * off[k] for k in range(m))  # ||I - P_0||_inf
    for k in range(m):
        if k > 0:
            mult = U[k, k - 1] / d[k - 1]
            if k + 1 < m:
                U[k, k + 1 :] = U[k, k + 1 :] + U[k - 1, k + 1 :] * mult
            s[k] = s[k] + mult * s[k - 1]
            for g in rhs:
                g[k] = g[k] + mult * g[k - 1]
        d[k] = s[k] + (_fsum(U[k, k + 1 :]) if k + 1 < m else 0)
        if d[k] == 0:
            raise ValueError(f"I - P0 is singular: no exit from the normal-mode states reachable from state {k}")
    out = []
    for g in rhs:
        y = numpy.zeros(m)
        for k in range(m - 1, -1, -1):
            acc = g[k] + (float(numpy.dot(U[k, k + 1 :], y[k + 1 :])) if k + 1 < m else 0)
            y[k] = acc / d[k]
        out.append(y)
    ones_solution = out.pop()
    return out, norm * max(ones_solution)


# ---- the measures (17)-(23), interval semantics, corrected (21) (spec sections 4-7) --------------


def hysteretic_measures(lam0, overload_factor, batch, service_counts, b1, L, H, R):
    """Every measure of M[X]|G|1|(L,H)|(H,R) (event convention, interval semantics, corrected (21)).

    ``batch``: a ``_Batch`` over 0..R; ``service_counts(lam, n)`` -> (beta, tails, second tails) of
    the batches arriving at rate lam during one service; ``b1`` the mean service time. Returns a
    dict with the keys of ``qderive eval hysteretic --json`` plus ``renewal_cycle_time`` and
    ``kappa`` (kappa_inf(I - P_0)); warns when ``qderive eval`` would switch to mpmath.

    C = b_1 + q_{0,0}/lambda_0 (17); P(S_1), P(S_2) by (18), (19), P(S_0) = (b_1 sum_j q_{j,0} +
    q_{0,0}/lambda_0)/C; E tau_0 = e_L (I - P_0)^{-1} (b_1 1 + e_1^T/lambda_0) (20), (21) corrected;
    E tau_12 = E tau_0 (P(S_1) + P(S_2))/P(S_0) (22); E tau = E tau_0 + E tau_12 (23); the loss
    (throttled, discarded and overflowing customers over the offered lambda_0 l_1) and the throughput 1/C.
    """
    lam = (lam0, lam0 * overload_factor)
    inp = _HystereticInputs(lam, batch, service_counts, b1, R)
    states, index, P, exits = _embedded_chain(inp, L, H, R)
    q = _stationary_gth_sparse(P)
    n0, n1 = H - 1, H - 1 + (R - 1 - L)  # the modes are contiguous blocks of the state list
    sums = (_fsum(q[:n0]), _fsum(q[n0:n1]), _fsum(q[n1:]))
    C = b1 + q[0] / lam0  # (17)
    p0 = (b1 * sums[0] + q[0] / lam0) / C
    p1, p2 = b1 * sums[1] / C, b1 * sums[2] / C  # (18), (19)
    g = numpy.full(n0, b1)
    g[0] = g[0] + 1 / lam0  # corrected (21): the idle periods in (0, 0) are normal mode
    (y,), kappa = _solve_hessenberg_mmatrix(P[:n0, :n0], exits, [g])
    t0 = y[L - 1]  # entering S_0 at (L - 1, 0)
    t12 = t0 * (p1 + p2) / p0  # (22)
    ex_rev = inp.excess[::-1].copy()  # ex_rev[c] = E (X - (R - c))^+
    overflow = [q[k] * lam[s] * float(numpy.dot(inp.profile(j, s), ex_rev))
                for k, (j, s) in enumerate(states) if s != 2]
    throttle = b1 * inp.l1 * (lam0 * (1 - overload_factor) * sums[1] + lam0 * sums[2])
    loss = (throttle + _fsum(overflow)) / (C * lam0 * inp.l1)
    renewal = C / (q[index[(L, 1)]] * inp.counts[1][0][0])  # spec section 7: C / (q_{L,1} a_0^(1))
    values = [float(v) for v in (p0, p1, p2, t0, t12, t0 + t12, loss, 1 / C)]
    out = dict(zip(HYSTERETIC_KEYS, values))
    out["renewal_cycle_time"], out["kappa"] = float(renewal), float(kappa)
    reason = _float64_trouble(out)
    if reason is not None:
        warnings.warn(f"{reason}: `qderive eval hysteretic` would evaluate this case with mpmath; "
                      "the float64 result may be inaccurate", RuntimeWarning, stacklevel=3)
    return out


def _float64_trouble(m):
    """Why a float64 result cannot be trusted (None when it can): ``numeric.hysteretic.float64_trouble``."""
    values = [m[k] for k in HYSTERETIC_KEYS]
    if not all(math.isfinite(v) and v > 0 for v in values) or not m["kappa"] < math.inf:
        return "a measure under- or overflows float64"
    if m["kappa"] * float(numpy.finfo(numpy.float64).eps) > _KAPPA_SWITCH:
        return f"I - P0 is ill-conditioned (kappa_inf = {m['kappa']:.2g})"
    if abs(m["mean_cycle_time"] - m["renewal_cycle_time"]) > _RENEWAL_TOLERANCE * m["renewal_cycle_time"]:
        return "the renewal identity E tau = C / (q_{L,1} a_0^(1)) fails in float64"
    return None
