"""Exact tails of an admitted customer's wait in the finite room with a constant service D: sums of positive terms.

The finite-room counterpart of :mod:`qderive.numeric.kernels.lattice_wait`, for M[X]/D/1/r with vacations
(``docs/theory/chapter2.md`` sections 0-2) and, per mode, for the hysteretic model under ``--policy departure``
(``docs/theory/chapter3.md`` (16), (17)); the state at the batch's arrival is derived in
:mod:`qderive.numeric.engines.vacation_finite_wait` (items 1-3): a period (service or vacation) that started
with the level vector w_0 has, after K batches, the level vector w_K = w_0 L^K (the rows of
:func:`~qderive.numeric.kernels.finite_wait.wait_batch_rows`), and an admitted customer who arrives at the
elapsed time x of a period of length B, at level n and position m in its batch, waits

    W = (B - x) + j D,    j = n + m - 1 customers ahead (FIFO, every one served in D).

With N(x) ~ Poisson(lambda x) batches by the age x, P(level(x) = n) = sum_K e^{-lambda x} (lambda x)^K / K! w_K[n],
and renewal reward over the periods (as in the transform N(s) of that module, item 3), the admitted customers
with W > t are counted by::

    N(W > t) = sum_periods sum_K sum_n w_K[n] sum_j a[n, j] omega_K((t - j D)^+) + t_I sum_{j D > t} a[I, j],   (F1)
    omega_K(u) = int_0^oo (lambda x)^K / K! e^{-lambda x} S(x + u) dx                                           (F2)

with S the survival function of the period's length (the residual exceeds u: B - x > u), a[n, j] the expected
number of the batch's admitted customers with j ahead when it arrives at level n (partial admission:
P(X > j - n) for n <= j < r; whole admission: P(j - n < X <= r - n); the idle server, row I: the m-th customer of
the batch that ends an idle period waits (m - 1) D, a[I, j] = P(X > j) or P(j < X <= r + 1)), and t_I the idle
time of the engine's item 1. P(W > t) = N(W > t) / N(W > -1): both are sums of positive terms, so the tail keeps
its relative accuracy however small it is (no alternating sum, unlike the infinite room's (L3)).

**The residual weights** (F2): for a survival function given as exponential pieces cut at a point,
S(x) = sum_i w_i e^{-theta_i x} 1{x < d_i} (``TimeLaw.survival_pieces``: a constant D is ((1, 0, D),), an
exponential, hyperexponential, empirical law likewise), with mu_i = lambda + theta_i and y_i = d_i - u::

    omega_K(u) = sum_i w_i e^{-theta_i u} lambda^K / mu_i^{K+1} P(Poisson(mu_i y_i) > K)            (y_i > 0; d_i = oo: P = 1)
               = sum_i w_i e^{-theta_i u} lambda^K y_i^{K+1} / (K+1)! e^{-mu_i y_i} S_K(mu_i y_i),       (F3)
    S_K(z) = sum_{k>=0} z^k (K+1)! / (K+1+k)! ,   S_K = 1 + z / (K+2) S_{K+1}

(the regularized incomplete gamma P(K+1, mu y) by its positive series, the series for the top index and the
backward recurrence for the others, every term positive; :func:`residual_weights`). At u = 0,
omega_K(0) = P(K' > K) / lambda, K' the batches of a whole period: the weights g_K(0), h_K(0) of the transform.

**Matrix-exponential pieces** (an Erlang, Coxian or phase-type vacation PH(alpha, T), uniformized as in
:mod:`qderive.numeric.kernels.lattice_wait` (L5): S(x) = w alpha e^{T x} 1 = w e^{-theta x} alpha e^{theta P x} 1,
P = I + T / theta >= 0). With e^{T (x + u)} = e^{T u} e^{T x}, the expansion
e^{theta P x} = sum_m (theta x)^m / m! P^m and the Gamma integral
int (lambda x)^K / K! x^m / m! e^{-mu x} dx = binom(K + m, m) lambda^K / mu^{K+m+1}
(mu = lambda + theta, q = theta / mu)::

    omega_K(u) = beta(u) . G_K,    beta(u) = alpha e^{T u} = e^{-theta u} sum_m (theta u)^m / m! alpha P^m,
    G_K = w / mu (lambda / mu)^K sum_m binom(K + m, m) q^m P^m 1 = w / mu (lambda / mu)^K N^{K+1} 1,   (F4)
    N = (I - q P)^{-1} = prod_{i >= 0} (I + (q P)^{2^i}),   G_K = (lambda / mu) N G_{K-1},

every term positive (the negative-binomial double series summed in closed form over m; the product for N is
the Neumann series by squaring, stopped when |(q P)^{2^i}|_oo mu / lambda <= eps^2, exact for the nilpotent P
of an Erlang law; beta's series, alpha P^m shared by all the columns and the Poisson weights by a positive
recurrence (float64: from their logarithms), is stopped when m > 2 theta u and its remainder bound times the
spread max_K max(G_K) / min(G_K) is below eps of the sum, or exactly when alpha P^m = 0;
:func:`matrix_residual_weights`, :func:`matrix_residual_rows`). The remainder over K > top: G_{K+1} <= nu max(G_K) entrywise with
nu = (lambda / mu) max_i (N 1)_i, and 1 - nu = q min_i (N x)_i, x = 1 - P 1 the exit vector (positive: from
1 = N (I - q P) 1), so sum_{K > top} G_K <= max(G_top) nu / (1 - nu). The sums over the columns j < J0 factorise
over the phases (beta(u_j) for each column, then G_K^T W per period, phases x levels). The
:mod:`~qderive.numeric.kernels.lattice_wait` helper (L5) integrates over a finite range (the infinite room's
omega_n(u) = int_0^u ...), not this one, so it is not reused here; the uniformization is the same.

**Per tail point**, with J0 = ceil(t / D): every j >= J0 has u = 0 (one column sum of a), the service piece
(d = D) adds the one column j = J0 - 1 with 0 < u < D, an exponential piece (d = oo) adds sum_{j < J0}
a[n, j] e^{-theta u_j} (its omega factorises), a constant piece d the columns with u_j < d:
O(r^2 + (rows) r (1 + d / D)) per point after an O(rows r) profile per period (:func:`period_profile`).

**A service on a lattice** (F5) (issue 28; :func:`~qderive.numeric.engines.vacation_finite_wait.service_lattice_tails`).
With a general service the j customers ahead need j fresh services S_j = B_1 + ... + B_j, independent of the state
at the arrival and of the residual (services not yet started), so (F1) becomes::

    N(W > t) = sum_periods sum_K sum_n w_K[n] sum_j a[n, j] E omega_K((t - S_j)^+) + t_I sum_j a[I, j] P(S_j > t).

For a service on the lattice h N (P(B = m h) = b_m) S_j has the lattice pmf s_j = b^{*j} (:func:`lattice_convolutions`:
positive convolutions, j = 1..r + 1, cut at M h >= t, the mass beyond M h as 1 - the sum kept below), and the
sum over j folds into a matrix over the lattice columns k: A[n, k] = sum_j a[n, j] P(S_j = k h), C its reverse
cumulative sums plus sum_j a[n, j] P(S_j > M h); (F1) then holds word for word with the columns k in place of
the customers j and u_k = t - k h (a constant D is h = D, b = e_1, A = a). The service period's residual is
from the same lattice law (:class:`LatticePiece`): omega_K(u_k) = sum_m b_m R_K(m h - u_k), R_K(y) =
int_0^y Pois(K; lambda x) dx the (F3) of a cut piece (:func:`lattice_residual_rows`), and since
m h - u_k = (m + k - J + 1) h - u_{J-1} the weights of all the columns and atoms share one grid of y:
sum_k Z[K, k] omega_K(u_k) = sum_m b_m sum_k G[m + k - J, k], G = R Z (Z = W A, the rows times the columns), the
sums along the diagonals of G (mpmath). Every term is positive; cost O(r M nnz(b)) for the convolutions (float64, a
dense b: blocked Toeplitz products, :func:`_blocked_powers`) and O(rows r M + nnz(b) rows M) per point. In float64
the same sum is taken the other way round (F8), sum_i sum_K R_K((i + 1) h - u_{J-1}) V_J[K, i] with
V_J[K, i] = sum_{k < J} Z[K, k] b[i + J - k]: t enters R only through its offset u_{J-1} from the lattice and V
only through the number J of columns, and V_J follows from a V_J' below it by a shift and the columns between, so
the points of a quantile search (a few lattice cells apart) cost O(rows nnz(b) (1 + J - J')) each after the first
(:class:`LatticeTables`, which also drops the rows K whose weights cannot count, into the truncation bound).
*A fine lattice* (a sample recorded to 0.01 ms or 1 us: t / h = 5e4 ... 1e6 columns): the same sums taken one power
s_j at a time, by FFT convolutions with a certified rounding bound, never holding the matrices S, A, C, Z
(:mod:`~qderive.numeric.kernels.lattice_fft`, (F10), (F11)).
**Monotone bounds for a service off the lattice:** rounding every service
down (up) to the lattice, B_down <= B <= B_up, gives S_j,down <= S_j <= S_j,up pathwise and
S_down(x) <= S(x) <= S_up(x), and each term of the sum is increasing in both (omega_K(u) is an integral of S with
positive weights, decreasing in u), while the rows w_K, the admission weights a and the idle time are those of
the true law (they do not depend on the service times ahead): the rounded-down sum bounds N(W > t) from below,
the rounded-up one from above, each over the exact N(W > -1).

**A vacation with no exact pieces** (F7) (gamma of any shape, lognormal, uniform; issue 28;
:class:`~qderive.numeric.engines.vacation_finite_wait.VacationRounding`). The vacation law enters (F1) through the
state at the arrival (the embedded law, the rows w_K, the idle time, the total N(W > -1): the true law's, from its
count sequences) and through S in the vacation periods' weights omega_K(u) (F2), which are linear in S with
positive weights. So survival functions S_down <= S <= S_up pointwise bound N(W > t) from below and above over the
exact total: an identity of the true model bounded term by term, not a comparison of two queues (which would need
a stochastic monotonicity of the finite room in the vacation law that does not hold in general). The bounds are
a lattice law on the services' lattice h (a :class:`LatticePiece`: its weights share the grid of the columns) plus
steps beyond it, sum_i w_i 1{y < d_i} (:class:`StepPieces`: cut pieces (F3) with theta = 0, the rows times the
columns formed once, every step's weights R_K(d_i - u_j) in one vector per batch of steps,
:func:`step_profile`, :func:`step_columns`); the upper bound adds E (V - c_L)^+ |w_0|_1 max_n C[n, 0] per vacation
period for y beyond the last step c_L (the argument of (F6)). Optionally (float64) the columns' u are taken to
multiples of a spacing, down for the upper bound and up for the lower one (omega_K(u) decreases in u), so that a
step's weights are computed once per multiple instead of once per column. Remainder over the rows K > top of a step:
sum_{K > top} R_K(d) = int_0^d P(Poisson(lambda x) > top) dx = d - sum_{K <= top} R_K(d) (sum_K R_K(d) = d), with
its subtraction's rounding added.

**A smooth vacation by quadrature** (F9) (gamma, lognormal: a survival function analytic on (0, oo); issue 28;
:class:`~qderive.numeric.kernels.vacation_quadrature.QuadraturePiece`). The steps above are first order in h. For
these laws omega_K(u_j) itself is integrated in the age x, where every column's integrand Pois(K; lambda x) S(x + u_j)
is analytic on x > -u_j: piecewise Gauss-Legendre on one mesh per level of u (two orders, their difference the
error estimate), every term positive (:mod:`~qderive.numeric.kernels.vacation_quadrature`). The piece's error,
two-sided, joins the rounding bound; the rows beyond the last by E V - sum_{K <= top} omega_K(0). With a service on
its lattice (a constant one) the lower and the upper sum are then one sum, and the bracket is the quadrature's error
(about 1e-12 relative).

**Errors.** Every operation is a product or a sum of positive numbers, except the logarithms and exponentials of
the leads of (F3), whose arguments are sums of terms of total size L (their relative error is at most eps L):
the rounding error of the tail is below 4 eps (L + rows + r + k + 10) of it (k series terms). Rows beyond the
last computed one (K > top) add at most |w_top|_1 max_n(sum_j a[n, j] e^{-theta u_j}) sum_{K > top} omega_K(0)
(the rows' masses do not increase: L is substochastic; omega_K(u) <= e^{-theta u} omega_K(0)), with the remainder
bounded by the ratio of (F3), lambda y / (K + 2) or lambda / mu. Rows set to 0 where negligible (float64: 1e-150
of their scale, ``entry_error``) add at most entry_error r E[B] max_n a[n, .] per period. For a matrix piece
the rows beyond add at most |w_top|_1 sum_p R max_n c_p(n), R >= sum_{K > top} G_K[p] the bound above, with
c_p(n) = sum_j a[n, j] beta_p(u_j) (beta(0) = alpha; max_n sum_K <= sum_K max_n over the phases separately).
"""

import math

import numpy

from .finite_wait import FW_NEGLIGIBLE, wait_batch_rows


def residual_weights(ctx, lam, piece, u, top):
    """omega_K(u) of (F2)-(F3) for one survival piece (w, theta, d) (d None: no cut) and K = 0..top; lam, u >= 0 and
    the piece context numbers. Returns (omega, remainder, size): remainder >= sum_{K > top} omega_K(u) (ctx.huge
    when the ratio bound does not hold yet), size the L + k of the module docstring's rounding bound (a float)."""
    w, theta, d = piece
    out = ctx.zeros(top + 1)
    mu = lam + theta
    ks = ctx.arange(top + 1)
    if d is None:
        if theta == 0:
            raise ValueError("a survival piece without a cut needs theta > 0")
        base = ctx.log(w) - theta * u - ctx.log(mu)
        step = ctx.log(lam) - ctx.log(mu)
        out = ctx.exp(ks * step + base)
        ratio = lam / mu
        size = abs(float(base)) + top * abs(float(step)) + 2 * top
        return ctx.flush(out), out[top] * ratio / (1 - ratio), size
    y = d - u
    if not y > 0:
        return out, ctx.num(0), 0.0
    rows, size = lattice_residual_rows(ctx, lam, ctx.array([y]), top, ctx.array([ctx.log(w) - theta * u]))
    out = rows[0]
    size += abs(float(ctx.log(w))) + float(theta * u)
    rho = lam * y / (top + 2)
    remainder = out[top] * rho / (1 - rho) if 2 * rho <= 1 else ctx.huge
    return out, remainder, size


def lattice_residual_rows(ctx, lam, ys, top, shift=None, rows=None):
    """(R, size): R[i, K] = e^{shift_i} int_0^{y_i} (lambda x)^K / K! e^{-lambda x} dx for the y_i of the context
    vector ``ys`` and K = 0..top: the weight omega_K(0) (F3) of a cut piece (1, 0, y_i), i.e.
    R_K(y) = lambda^K y^{K+1} / (K+1)! e^{-lambda y} S_K(lambda y) (a y <= 0 gives a zero row); ``shift`` (context
    numbers, default 0) multiplies row i by e^{shift_i} inside the exponential (the factor w e^{-theta u} of
    (F3), so that it cannot underflow apart from the lead). The series S_top by its positive terms until, for every
    y, the ratio is below 1/2 and the next term below eps of the sum, then the backward recurrence
    S_K = 1 + z / (K + 2) S_{K+1} (module docstring), every y at once; size the rounding count L + k of the module
    docstring (its largest over the y). ``rows``: only K = 0..rows - 1 (the series then starts at rows - 1), with
    the size of K = 0..top still (the count grows with top and with the series' terms k: an upper bound)."""
    n = len(ys)
    full, top = top, top if rows is None else rows - 1
    out = ctx.zeros((n, top + 1))
    live = numpy.flatnonzero(ys > 0) if ctx.is_float64 else numpy.flatnonzero(
        numpy.array([y > 0 for y in ys], dtype=bool))
    if not len(live):
        return out, 0.0
    y = ys[live]
    z = y * lam  # array first: an mpf operand on the left converts the array through its repr
    one = ctx.num(1)
    # the number of terms from the largest z (the remainder's share of the sum grows with z), then every y at once
    z_max, term, total, k = numpy.max(z) if ctx.is_float64 else max(z), one, ctx.num(0), 0
    while True:
        total = total + term
        k += 1
        ratio = z_max / (top + 1 + k)
        term = term * ratio
        if 2 * ratio <= 1 and term <= ctx.eps * total:
            break
    if len(y) == 1:  # the sum just computed
        total = ctx.zeros(1) + total
    else:
        term, total = ctx.zeros(len(y)) + one, ctx.zeros(len(y))
        for i in range(1, k + 1):
            total = total + term
            term = term * z / (top + 1 + i)
    series = ctx.zeros((top + 1, len(y)))  # K x y: rows contiguous for the recurrence
    series[top] = total
    for K in range(top - 1, -1, -1):
        series[K] = z / (K + 2) * series[K + 1] + one
    series = series.T
    ks = ctx.arange(top + 1)
    log_y = ctx.log(y)
    base = log_y - z if shift is None else shift[live] + log_y - z
    lead = numpy.outer(log_y + ctx.log(lam), ks) + base.reshape(len(y), 1) - ctx.lgamma(ks + 2).reshape(1, top + 1)
    out[live] = ctx.flush(ctx.exp(lead) * series)
    widest = float(numpy.max(numpy.abs(log_y))) if ctx.is_float64 else max(abs(float(v)) for v in log_y)
    size = ((full + 1) * (abs(float(ctx.log(lam))) + widest) + float(z_max)
            + math.lgamma(full + 2) + k + 2 * full)
    return out, size


class LatticePiece:
    """The survival function of a period length on the lattice h N, P(B = m h) = b[m] (m = 0..M, a context vector;
    a mass at 0 adds nothing): the sum of the cut pieces (b[m], 0, m h), whose weights (F3) share the grid
    y = m h - u_k = (m + k) h - t of the tail points u_k = t - k h (module docstring, *A service on a lattice*).
    A plain class: kernels import numpy, math and each other only (codegen ships them)."""

    __slots__ = ("b", "h")

    def __init__(self, b, h):
        self.b = b
        self.h = h


class StepPieces:
    """Cut pieces (w_i, 0, d_i) of one period's survival function that share its rows: P(V > x) taken as
    sum_i w_i 1{x < d_i} (context vectors ``w`` >= 0 and ``d`` > 0), the steps of a vacation's tail beyond its
    lattice in the bounds (F7) (module docstring). Each is the cut piece of (F3) with theta = 0,
    omega_K(u) = w_i R_K(d_i - u) (:func:`lattice_residual_rows`), all of them summed against the rows and columns
    once (:func:`step_profile`, :func:`step_columns`). A plain class (kernels import numpy, math and each other)."""

    __slots__ = ("w", "d", "spacing", "upper")

    def __init__(self, w, d, spacing=0.0, upper=True):
        self.w = w
        self.d = d
        #: float64 only: the columns' u taken to multiples of ``spacing`` (down for an ``upper`` bound, up for a lower
        #: one: omega_K(u) decreases in u), so that the weights are computed once per multiple (0: exact u)
        self.spacing = spacing
        self.upper = upper


def step_profile(ctx, lam, piece, top):
    """(omega, remainder, size) of :class:`StepPieces` at u = 0: omega_K(0) = sum_i w_i R_K(d_i), K = 0..top, and
    remainder >= sum_{K > top} omega_K(0) = sum_i w_i int_0^{d_i} P(Poisson(lambda x) > top) dx, from
    sum_{K >= 0} R_K(d) = d: sum_i w_i (d_i - sum_{K <= top} R_K(d_i)) (one subtraction per piece, so its rounding,
    4 eps (size + top + 10) d_i, is added: the remainder stays an upper bound)."""
    R, size = lattice_residual_rows(ctx, lam, piece.d, top)
    om = ctx.matmul(piece.w.reshape(1, len(piece.w)), R)[0]
    slack = 4 * ctx.eps * (size + top + 10)
    rest = ctx.fsum([w * (max(d - ctx.fsum(list(row)), 0 * d) + slack * d) for w, d, row in zip(piece.w, piece.d, R)])
    return ctx.flush(om), rest, size


def step_columns(ctx, lam, piece, W, A, us, J):
    """(sum_K sum_n W[K, n] sum_{j < J} A[n, j] omega_K(u_j), size, per-level reach) of :class:`StepPieces` for the
    columns j < J of (F1) with u_j = ``us``[j] > 0: the rows times the columns Z = W A once, the weights
    sum_i w_i R_K(d_i - u_j) accumulated over the pieces (a y = d_i - u_j <= 0 gives 0), every term positive;
    reach[n] = sum_{j < J} A[n, j] bounds the columns' share of a row beyond the last (omega_K(u) <= omega_K(0))."""
    r = A.shape[0] - 1
    top = W.shape[0] - 1
    Z = ctx.matmul(W[:, :r], A[:r, :J])  # rows x columns
    u = ctx.array(us[:J]) if not ctx.is_float64 else numpy.asarray(us[:J], dtype=float)
    if ctx.is_float64 and piece.spacing:  # the columns grouped by their multiple of the spacing (see StepPieces)
        q = u / piece.spacing
        key = numpy.floor(q) if piece.upper else numpy.ceil(q)
        uniq, inv = numpy.unique(key, return_inverse=True)
        grouped = numpy.zeros((Z.shape[0], len(uniq)))
        numpy.add.at(grouped.T, inv, Z.T)
        Z, u = grouped, numpy.maximum(uniq * piece.spacing, 0.0)
    acc = ctx.zeros((len(u), top + 1))
    size = 0.0
    n = len(u)
    chunk = max(1, _STEP_CHUNK // max(n * (top + 1), 1))  # pieces per call: their y's in one vector
    for i0 in range(0, len(piece.w), chunk):
        ws, ds = piece.w[i0: i0 + chunk], piece.d[i0: i0 + chunk]
        if ctx.is_float64:
            ys = (ds[:, None] - u[None, :]).reshape(-1)
        else:
            ys = ctx.array([d - v for d in ds for v in u])
        R, sz = lattice_residual_rows(ctx, lam, ys, top)
        for k, w in enumerate(ws):
            acc = acc + R[k * n: (k + 1) * n] * w
        size = max(size, sz)
    value = ctx.fsum(list((acc * Z.T).sum(axis=1)))
    return value, size + len(piece.w) + top + r + J, A[:r, :J].sum(axis=1)


def lattice_convolutions(ctx, b, count, M, negligible=0.0):
    """(S, beyond, slack, size): S[j, k] = P(S_j = k h) for S_j = B_1 + ... + B_j (j = 0..count-1, k = 0..M), the
    services iid on the lattice with the pmf ``b`` over 0..len(b)-1, by the positive convolutions
    s_j = s_{j-1} * b cut at M (each restricted to the nonzero window of s_{j-1}); beyond[j] = P(S_j > M h) =
    1 - sum_k S[j, k] (the one subtraction, floored at 0) with the absolute bound ``slack``[j] of its
    error; entries below ``negligible`` (float64: subnormal products are a hundred times slower) are set to 0, at
    most (M + 1) negligible of mass per row, counted in ``slack``. size: the rounding count of an entry (at most
    j (nnz(b) + 1) relative roundings, all terms positive). A dense b in float64 (a law with a density rounded to
    the lattice) takes the same sums grouped by blocks (:func:`_blocked_powers`, whose count is smaller); P(S_j > M h)
    = 1 once the sums of j services all lie beyond the lattice."""
    S = ctx.zeros((count, M + 1))
    beyond = ctx.zeros(count)
    slack = numpy.zeros(count)
    S[0, 0] = ctx.num(1)
    nz = numpy.flatnonzero(numpy.array([v != 0 for v in b], dtype=bool))
    b_lo = int(nz[0]) if len(nz) else 0
    bb = b[b_lo: int(nz[-1]) + 1] if len(nz) else b[:1]
    blocks = -(-(M + 1) // _POWER_BLOCK)
    # a dense pmf (a rounded law with a density): the products by blocks (BLAS), whose rounding count
    # (j - 1)(L + blocks + 1) stays below the j (nnz(b) + 1) of the convolutions one by one (:func:`_blocked_powers`)
    dense = ctx.is_float64 and count > 2 and len(nz) and M + 1 >= 2 * _POWER_BLOCK and \
        len(nz) >= _POWER_BLOCK + blocks + 1
    if dense:
        S[1:] = _blocked_powers(numpy.asarray(b, dtype=float), count - 1, M, negligible)
    for j in range(1, 1 if dense else count):
        prev = S[j - 1]
        alive = numpy.flatnonzero(numpy.array([v != 0 for v in prev], dtype=bool)) if not ctx.is_float64 else \
            numpy.flatnonzero(prev)
        if not len(alive) or not len(nz):  # S_{j-1} lies wholly beyond M h (its row is 0), and so does every later
            break  # sum (services are >= 0): their rows stay 0, and the loop below gives P(S_i > M h) = 1
        lo = int(alive[0]) + b_lo
        if lo <= M:
            a0 = int(alive[0])
            got = _head_convolve(prev[a0: int(alive[-1]) + 1], bb, M + 1 - lo)
            if ctx.is_float64 and negligible:
                got[got < negligible] = 0.0
            S[j, lo: lo + len(got)] = got
    # P(S_j > M h) by positive sums, not 1 - sum (whose absolute error eps limited a tail of 1e-6 to 1e-9 relative):
    # S_j = S_{j-1} + B, so P(S_j > M h) = P(S_{j-1} > M h) + sum_{i <= M} P(S_{j-1} = i h) P(B > (M - i) h)
    L = len(b)
    tail_b = ctx.zeros(M + 1)  # tail_b[M - i] = P(B > (M - i) h), reversed so that the sum is a dot product
    running = ctx.num(0)  # P(B > k h) = sum_{m > k} b[m], from the top (positive sums of at most L terms)
    for k in range(L - 2, -1, -1):
        running = running + b[k + 1]
        if k <= M:
            tail_b[M - k] = running
    for j in range(1, count):
        step = numpy.dot(S[j - 1], tail_b) if ctx.is_float64 else ctx.fsum(list(S[j - 1] * tail_b))
        beyond[j] = min(beyond[j - 1] + step, ctx.num(1))
        # relative: the entries' roundings (those of S_{j-1}, the tails' sums of at most L terms, the dot product's),
        # one addition per j; absolute: the entries set to 0 as negligible (their mass is in neither part)
        rel = j * (len(nz) + 1) * 2 + L + 2 * math.log2(M + 1) + j + 4
        slack[j] = float(ctx.eps) * rel * float(beyond[j]) + (M + 1) * negligible * j
    return S, beyond, slack, float(count * (len(nz) + 1))


#: the block L of :func:`_blocked_powers` (the Toeplitz blocks L x L of one power: (M + 1) L numbers, 16 MB at 8192
#: levels)
_POWER_BLOCK = 256


def _blocked_powers(b, count, M, negligible):
    """The powers b^{*j}, j = 1..count (rows), cut at M, of a float64 pmf b (over 0..len(b) - 1), by doubling: with
    S_1..S_m known, S_{m+p} = S_m * S_p for p = 1..min(m, count - m), all p at once as one product of the
    lower-triangular Toeplitz matrix of S_m with the matrix of the S_p. Cut into blocks of L levels, the Toeplitz matrix has the
    blocks T_{e-f} (e, f the blocks of the output and the input levels) with T_d[u, v] = S_m[d L + u - v] (0 below
    the diagonal of T_0): the m + p rows come from one BLAS product per d, Y[:, e] += T_d X[:, e - d]. Each entry
    is the same sum of positive products as the convolution's (grouped otherwise: at most L terms within a
    block, then over the blocks in sequence), so the relative error of S_j is at most (j - 1)(L + blocks + 1)
    roundings (induction on m + p: those of S_m and S_p plus the product and the sum); entries below
    ``negligible`` are set to 0 (as in :func:`lattice_convolutions`: at most (M + 1) negligible of mass a power,
    j (M + 1) negligible in all)."""
    L = _POWER_BLOCK
    blocks = -(-(M + 1) // L)
    width = blocks * L
    out = numpy.zeros((count + 1, width))
    out[1, : min(len(b), M + 1)] = b[: M + 1]
    have = 1
    while have < count:
        m, q = have, min(have, count - have)
        # T[d, u, v] = S_m[d L + u - v]: a strided view of S_m after L zeros, copied (blocks x L x L)
        padded = numpy.concatenate([numpy.zeros(L), out[m]])
        item = padded.itemsize
        T = numpy.ascontiguousarray(numpy.lib.stride_tricks.as_strided(
            padded[L:], shape=(blocks, L, L), strides=(L * item, item, -item), writeable=False))
        # X[u, f, p] = S_p[f L + u] (p = 1..q): the input blocks side by side, so that the blocks f < blocks - d
        # of every p form one matrix L x (blocks - d) q
        X = numpy.ascontiguousarray(out[1: q + 1].reshape(q, blocks, L).transpose(2, 1, 0))
        Y = numpy.zeros((L, blocks, q))
        for d in range(blocks):
            k = blocks - d
            Y[:, d:, :] += numpy.matmul(T[d], X[:, :k, :].reshape(L, k * q)).reshape(L, k, q)
        got = Y.transpose(2, 1, 0).reshape(q, width)
        if negligible:
            got[got < negligible] = 0.0
        out[m + 1: m + q + 1] = got
        have = m + q
    return out[1:, : M + 1]


def _head_convolve(a, b, L):
    """The first L entries of the convolution a * b (numpy arrays; fewer when a * b is shorter), without the others:
    with h = ceil(L / 2), a = a_1 + x^h a_2 and b likewise, a * b = a_1 b_1 + x^h (a_1 b_2 + a_2 b_1) + x^2h a_2 b_2,
    the last beyond L, the middle ones the first L - h entries of theirs (recursively): about L^2 / 2 products
    instead of the L^2 of the whole convolution (the positive sums of :func:`lattice_convolutions` grouped
    otherwise: each entry still a sum of the same positive products)."""
    a, b = a[:L], b[:L]
    if min(len(a), len(b)) <= 64 or L <= 512:
        return numpy.convolve(a, b)[:L]
    h = (L + 1) // 2
    out = numpy.convolve(a[:h], b[:h])
    out = numpy.concatenate([out, numpy.zeros(min(L, len(a) + len(b) - 1) - len(out), dtype=out.dtype)])
    for x, y in ((a[:h], b[h:]), (a[h:], b[:h])):
        if len(x) and len(y):
            part = _head_convolve(x, y, L - h)
            out[h: h + len(part)] += part
    return out


def lattice_shifted(ctx, S, beyond, slack):
    """The (S, beyond, slack) of :func:`lattice_convolutions` for the services each one lattice step longer,
    B + h (the pmf b shifted by one: a law rounded up where no value lies on the lattice is its rounding down
    shifted), from those of B: S_j + j h, so S'[j, k] = S[j, k - j] and beyond'[j] = beyond[j] + the mass of S_j
    moved past M h (a sum of positive terms: ``slack`` grows by its rounding)."""
    count, width = S.shape
    out = ctx.zeros((count, width))
    far = ctx.zeros(count)
    more = numpy.array(slack, dtype=float)
    for j in range(count):
        if j < width:
            out[j, j:] = S[j, : width - j]
        cut = S[j, max(width - j, 0):]
        far[j] = beyond[j] + (cut.sum() if ctx.is_float64 else ctx.fsum(list(cut)))
        more[j] += float(ctx.eps) * (math.log2(width) + 2)
    return out, far, more


def _vecmat(ctx, v, M):
    return ctx.matmul(v.reshape(1, len(v)), M)[0]


def _matvec(ctx, M, v):
    return ctx.matmul(M, v.reshape(len(v), 1))[:, 0]


def matrix_residual_weights(ctx, lam, piece, top):
    """The u-free factor of omega_K(u) (F2) for a matrix-exponential piece (w, theta, None, (alpha, P, exit)) of
    (F4): (G, remainder, size, spread) with G[K] = G_K (K = 0..top, vectors over the phases), so that
    omega_K(u) = beta(u) . G_K (beta of :func:`matrix_residual_rows`; omega_K(0) = alpha . G_K); ``exit`` = 1 - P 1
    (exact: the caller's, from the law's rationals). remainder >= max_p sum_{K > top} G_K[p] (ctx.huge when the
    ratio bound (F4) does not hold); size the rounding count of the module docstring; spread =
    max_K max(G_K) / min(G_K), the factor by which a relative error of beta(u) (in the 1-norm) can grow in
    beta(u) . G_K (:func:`matrix_residual_rows` takes it into its stopping rule).

    N = (I - q P)^{-1} (q = theta / mu) by the positive product prod_i (I + (q P)^{2^i}), stopped when
    |(q P)^{2^i}|_oo mu / lambda <= eps^2 or (q P)^{2^i} = 0 (Erlang: nilpotent, exact); the product then misses
    N - N_i = (q P)^{2^i} N >= 0, at most |(q P)^{2^i}|_oo (mu / lambda) kappa relative in each application to
    a vector of spread kappa (entries >= 1 since N >= I); this enters ``size``."""
    w, theta, _, (alpha, P, exit_) = piece
    n = len(alpha)
    mu = lam + theta
    q, ratio = theta / mu, lam / mu
    N, steps, delta = neumann_product(ctx, P * q, mu / lam)
    G = ctx.zeros((top + 1, n))
    g = _matvec(ctx, N, ctx.zeros(n) + ctx.num(1)) * (w / mu)
    spread, widest = 0.0, 1.0  # sum and max over K of max(G_K) / min(G_K) (entries flushed to 0 excluded)
    for K in range(top + 1):
        if K:
            g = _matvec(ctx, N, g) * ratio
        g = ctx.flush(g)
        G[K] = g
        low = min(g)
        if low > 0:
            kappa = float(max(g) / low)
            spread, widest = spread + kappa, max(widest, kappa)
    miss = float(delta * mu / lam) * spread if delta else 0.0
    size = (top + 1) * (n + 2 + steps * (2 * n + 2)) + miss / float(ctx.eps)
    s = q * min(_matvec(ctx, N, exit_))  # 1 - nu >= s (F4)
    remainder = max(G[top]) * (1 - s) / s if s > 0 else ctx.huge
    return G, remainder, size, widest


def neumann_product(ctx, A, scale):
    """(N, steps, delta): N = prod_{i < steps} (I + A^{2^i}) = sum_{m < 2^steps} A^m, the Neumann series of
    (I - A)^{-1} for A >= 0 by squaring, stopped when delta = |A^{2^steps}|_oo satisfies delta ``scale`` <= eps^2 or
    delta = 0 (a nilpotent A: exact), at most 64 squarings. Positive products and sums only."""
    N, power, steps = ctx.eye(A.shape[0]), A, 0
    while True:
        N = N + ctx.matmul(N, power)  # sum_{m < 2^(i+1)} A^m
        power = ctx.matmul(power, power)
        steps += 1
        delta = max(ctx.fsum(list(row)) for row in power)
        if delta == 0 or delta * scale <= ctx.eps**2 or steps >= 64:
            return N, steps, delta


def matrix_residual_rows(ctx, piece, us, spread=1.0):
    """beta(u) = alpha e^{T u} = e^{-theta u} sum_m (theta u)^m / m! alpha P^m of (F4) for a matrix-exponential
    piece and each u > 0 of ``us`` (rows of the result), and the rounding count: the positive uniformized series,
    alpha P^m computed once for all the u, the Poisson weights by the positive recurrence
    w_m = w_{m-1} theta u / m from e^{-theta u} (float64: from their logarithms, no underflow of e^{-theta u}),
    summed up to one m_max for all the u: once m_max > 2 theta u and the remainder bound
    Pois(m_max; theta u) |alpha P^m_max|_1 / (1 - theta u / (m_max + 1)) (|alpha P^m|_1 does not increase) times
    ``spread`` (of :func:`matrix_residual_weights`) is below eps of the sum's 1-norm for every u, so that the
    remainder of beta(u) . G_K is below eps of it; or exactly when alpha P^m = 0 (Erlang). A context with a
    ``twin()`` (mpmath: gmpy2 numbers at the same precision, the same correctly rounded operations) runs the
    series there."""
    _, theta, _, (alpha, P, _) = piece
    xs = ctx.array(us) * theta
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is None:
        return _uniformized_rows(ctx, xs, None if ctx.is_float64 else ctx.exp(-xs), alpha, P, spread)
    start = ctx.exp(-xs)
    with twin:
        B, size = _uniformized_rows(twin, *(twin.from_mp(a) for a in (xs, start, alpha, P)), spread)
        return twin.to_mp(B), size


def _uniformized_rows(ctx, xs, start, alpha, P, spread):
    """The sums of :func:`matrix_residual_rows` for the points x = theta u of ``xs`` (``start``: e^{-x}, None for
    float64, whose weights come from logarithms)."""
    n = len(alpha)
    x_max = max(xs)
    rows = [alpha.copy()]

    def powers(upto):
        while len(rows) <= upto and ctx.fsum(list(rows[-1])) > 0:
            rows.append(ctx.flush(_vecmat(ctx, rows[-1], P)))

    def weights(M):  # J x (M + 1): Pois(m; x_j)
        if ctx.is_float64:
            m = numpy.arange(M + 1, dtype=float)
            lead = numpy.log(xs)[:, None] * m[None, :] - xs[:, None] - numpy.array([math.lgamma(k + 1) for k in m])
            return numpy.exp(lead), float(numpy.max(numpy.abs(lead))) + float(x_max) + M
        out = ctx.zeros((len(xs), M + 1))
        out[:, 0] = start
        for m in range(1, M + 1):
            out[:, m] = out[:, m - 1] * xs / m
        return out, 2.0 * M + 2

    M = math.ceil(2 * float(x_max)) + 8
    while True:
        powers(M + 1)
        if len(rows) <= M + 1:  # alpha P^m = 0 from m = len(rows): the series is finite
            Wt, size = weights(len(rows) - 1)
            break
        Wt, size = weights(M + 1)
        norm = ctx.fsum(list(rows[M + 1]))
        V = numpy.array(rows[: M + 1]) if not ctx.is_float64 else numpy.array(rows[: M + 1], dtype=float)
        sums = ctx.matmul(Wt[:, : M + 1], V).sum(axis=1)
        bound = Wt[:, M + 1] * (norm * spread) / (1 - xs / (M + 2))
        if all(b <= ctx.eps * v for b, v in zip(bound, sums)):
            Wt = Wt[:, : M + 1]
            break
        M *= 2
    V = numpy.array(rows[: Wt.shape[1]]) if not ctx.is_float64 else numpy.array(rows[: Wt.shape[1]], dtype=float)
    return ctx.flush(ctx.matmul(Wt, V)), size + Wt.shape[1] * (n + 2)


def admission_matrix(ctx, pmf, tail, r, whole):
    """(A, C): A[n, j] = a[n, j] of (F1) for the levels n = 0..r-1 and the idle row n = r, j = 0..r (customers
    ahead); C[n, J] = sum_{j >= J} A[n, j], J = 0..r+1 (C[:, r+1] = 0). ``pmf`` and ``tail`` (P(X > i)) over
    0..r+1; ``whole``: whole-batch admission. Positive sums only (reverse cumulative sums)."""
    A = ctx.zeros((r + 1, r + 1))
    for n in range(r + 1):
        offset, cap = (n, r - n) if n < r else (0, r + 1)
        if whole:
            row = numpy.cumsum(pmf[cap:0:-1])[::-1]  # sum_{k=i+1}^{cap} l_k, i = 0..cap-1
        else:
            row = tail[:cap]
        A[n, offset: offset + cap] = row
    C = ctx.zeros((r + 1, r + 2))
    C[:, : r + 1] = numpy.cumsum(A[:, ::-1], axis=1)[:, ::-1]
    return A, C


def period_profile(ctx, W, lam, pieces, entry_error=0):
    """The t-independent part of one period (rows ``W``: K x levels, batch rate ``lam``, survival ``pieces`` of its
    length): (full, each, remainders, size, mass, drop) with each[i] = omega^(i)(0) W (a vector over the levels;
    a matrix piece (F4): G^T W, phases x levels, whose u = 0 part is alpha G^T W), full the sum of the u = 0
    parts, remainders[i] >= sum_{K > top} omega^(i)_K(0) (a matrix piece: the bound on
    max_p sum_{K > top} G_K[p] and the spread, of :func:`matrix_residual_weights`), mass = |w_top|_1 (the caller
    sets it to 0 when the next row is exactly 0: nothing is cut) and drop = ``entry_error`` r sum_{K <= top}
    omega_K(0), the bound of the rows' zeroed entries (module docstring) before the factor max_n a[n, .]."""
    top = W.shape[0] - 1
    each, remainders, size, mean = [], [], 0.0, ctx.num(0)
    full = ctx.zeros(W.shape[1])
    for piece in pieces:
        if getattr(piece, "quadrature", False):  # (F9): a smooth vacation by quadrature, its error per row
            om, rest, err, sz = piece.profile(lam, W)
            rem = (rest, ctx.matmul(err.reshape(1, top + 1), W)[0])  # the error of each level's weight
            each.append(ctx.matmul(om.reshape(1, top + 1), W)[0])
            full = full + each[-1]
        elif isinstance(piece, StepPieces):  # (F7): the steps of a tail beyond a lattice, theta = 0
            om, rem, sz = step_profile(ctx, lam, piece, top)
            each.append(ctx.matmul(om.reshape(1, top + 1), W)[0])
            full = full + each[-1]
        elif not isinstance(piece, LatticePiece) and len(piece) == 4:  # matrix-exponential (F4): G^T W, phases x levels
            G, rem, sz, spread = matrix_residual_weights(ctx, lam, piece, top)
            rem = (rem, spread)
            alpha = piece[3][0]
            om = _matvec(ctx, G, alpha)  # omega_K(0) = alpha . G_K
            E = ctx.matmul(numpy.ascontiguousarray(G.T), W)
            each.append(E)
            full = full + _vecmat(ctx, alpha, E)
        elif isinstance(piece, LatticePiece):  # omega_K(0) = sum_m b_m R_K(m h), the ratio bound at the largest m
            ms = lattice_atoms(piece.b)
            R, sz = lattice_residual_rows(ctx, lam, ctx.array([ctx.num(int(m)) for m in ms]) * piece.h, top)
            om = ctx.matmul(piece.b[ms].reshape(1, len(ms)), R)[0] if len(ms) else ctx.zeros(top + 1)
            rho = lam * piece.h * int(ms[-1]) / (top + 2) if len(ms) else ctx.num(0)
            rem = om[top] * rho / (1 - rho) if 2 * rho <= 1 else ctx.huge
            each.append(ctx.matmul(om.reshape(1, top + 1), W)[0])
            full = full + each[-1]
        else:
            om, rem, sz = residual_weights(ctx, lam, piece, ctx.num(0), top)
            each.append(ctx.matmul(om.reshape(1, top + 1), W)[0])
            full = full + each[-1]
        remainders.append(rem)
        size = max(size, sz)
        mean = mean + ctx.fsum(list(om))  # sum_{K <= top} omega_K(0): the rows that hold zeroed entries
    mass = ctx.fsum(list(W[top])) if W.shape[1] else ctx.num(0)
    return full, each, remainders, size, mass, entry_error * W.shape[1] * mean

def lattice_atoms(b):
    """The indices m >= 1 with b[m] != 0 (a lattice pmf's atoms that add to a survival function)."""
    ms = numpy.flatnonzero(numpy.array([v != 0 for v in b], dtype=bool))
    return ms[ms >= 1]


def lattice_finite_tail(ctx, periods, idle, A, C, J0, J1, us, tables=None):
    """N(W > t) of (F1) and its error bound: ``periods`` ((W, lam, pieces, profile), ...) with the profile of
    :func:`period_profile`; ``idle`` = t_I; (A, C) of :func:`admission_matrix`; J0 = ceil(t / D) (j >= J0: u = 0),
    J1 = floor(t / D) + 1 (the idle customers with j D > t) and ``us`` = (t - j D for j < min(J0, r)), context
    numbers (computed exactly by the caller). t < 0 (J0 = J1 = 0, no ``us``) gives the total N(W > -1).
    Returns (value, rounding bound, truncation bound) (module docstring, *Errors*)."""
    r = A.shape[0] - 1
    columns = A.shape[1]
    total = idle * C[r, min(J1, columns)]
    trunc, size = ctx.num(0), 0.0
    J = min(J0, columns, len(us))
    cut = min(J0, columns)
    quadrature = 0.0  # (F9): the quadrature's error (two-sided), added to the rounding bound
    for p, (W, lam, pieces, (full, each, remainders, psize, mass, drop)) in enumerate(periods):
        top = W.shape[0] - 1
        size = max(size, psize + top + r)
        if not r:
            continue
        column = C[:r, cut]
        total = total + ctx.dot(full, column)
        if drop:
            trunc = trunc + drop * numpy.max(C[:r, 0])
        for i, piece in enumerate(pieces):
            if getattr(piece, "quadrature", False):  # (F9): the columns u_j > 0 at the mesh's nodes, Z = W A once
                reach = column
                quadrature += float(ctx.dot(remainders[i][1], column))
                if J:
                    value, err, sz, more = piece.columns(ctx, lam, W, A, us, J)
                    total, quadrature = total + value, quadrature + err
                    size = max(size, psize + sz + r)
                    reach = column + more
                if mass:
                    trunc = trunc + mass * remainders[i][0] * numpy.max(reach)
                continue
            if isinstance(piece, StepPieces):  # (F7): every step at every column u_j > 0, the rows times columns once
                reach = column
                if J:
                    value, sz, more = step_columns(ctx, lam, piece, W, A, us, J)
                    total = total + value
                    size = max(size, psize + sz + r)
                    reach = column + more
                if mass:
                    trunc = trunc + mass * remainders[i] * numpy.max(reach)
                continue
            if not isinstance(piece, LatticePiece) and len(piece) == 4:  # (F4): beta(u_j) . G_K over the phases
                alpha = piece[3][0]
                reach = ctx.matmul(column.reshape(r, 1), alpha.reshape(1, len(alpha)))  # levels x phases
                if J:
                    B, sz = matrix_residual_rows(ctx, piece, us[:J], remainders[i][1])
                    size = max(size, psize + sz + top + r)
                    V = ctx.matmul(A[:r, :J], B)
                    total = total + ctx.fsum([ctx.dot(each[i][p], V[:, p]) for p in range(len(alpha))])
                    reach = reach + V
                if mass:
                    trunc = trunc + mass * remainders[i][0] * ctx.fsum([numpy.max(reach[:, p])
                                                                     for p in range(len(alpha))])
                continue
            if isinstance(piece, LatticePiece):  # (F5): the columns within the largest atom of t, one grid of y
                reach = column
                ms = lattice_atoms(piece.b)
                if J and len(ms):
                    kmin = max(0, J - int(ms[-1]))
                    last = us[J - 1]  # y = m h - u_k = (m + k - J + 1) h - u_{J-1}
                    if ctx.is_float64:  # the same numbers 1, 2, ... without a Python list
                        grid = numpy.arange(1, int(ms[-1]) + 1, dtype=float) * piece.h - last
                    else:
                        grid = ctx.array([ctx.num(i + 1) for i in range(int(ms[-1]))]) * piece.h - last
                    if ctx.is_float64:  # sum_{i, K} R_K(y_i) V_J[K, i] (F8) with the t-free tables of the period
                        store = tables.get(p) if tables is not None else None
                        if store is None or store.W is not W:  # new rows (extended): new tables
                            scale = float(ctx.dot(full, C[:r, 0]))  # the period's N(W > -1)
                            store = LatticeTables(ctx, W, A, r, piece, int(ms[-1]), lam, scale)
                            if tables is not None:
                                tables[p] = store
                        R, sz = lattice_residual_rows(ctx, lam, grid, top, rows=store.kept)
                        VT = store.at(J)
                        total = total + numpy.sum(R * VT)  # n x rows, both contiguous: one pairwise sum
                        trunc = trunc + store.dropped
                        # V's entries: sums of at most J - kmin positive products; the pairwise sum of the products
                        size = max(size, psize + sz + r + (J - kmin) + 2 + pairwise_depth(R.size))
                    else:
                        R, sz = lattice_residual_rows(ctx, lam, grid, top)
                        size = max(size, psize + sz + top + r)
                        Z = ctx.matmul(W[:, :r], A[:r, kmin:J])  # rows x columns
                        G = ctx.matmul(R, Z)  # G[i, c] = sum_K R_K(y_i) Z[K, c]
                        sums = [ctx.fsum(list(numpy.diagonal(G, J - kmin - int(m)))) for m in ms]
                        total = total + ctx.dot(piece.b[ms], ctx.array(sums))
                    reach = column + A[:r, kmin:J].sum(axis=1)
                if mass:
                    trunc = trunc + mass * remainders[i] * numpy.max(reach)
                continue
            w, theta, d = piece
            reach = column
            if d is None:
                if J:
                    e = ctx.exp(-theta * ctx.array(us[:J]))
                    size = max(size, float(theta * us[0]) + top + r + J)
                    v = ctx.matmul(A[:r, :J], e.reshape(J, 1))[:, 0]
                    total = total + ctx.dot(each[i], v)
                    reach = column + v
            else:  # the columns with u_j < d, all at once: omega_K(u_j) = w e^{-theta u_j} R_K(d - u_j) (F3)
                idx = [j for j in range(J) if us[j] < d]
                if idx:
                    uu = ctx.array([us[j] for j in idx])
                    R, sz = lattice_residual_rows(ctx, lam, -uu + d, top, uu * (-theta) + ctx.log(w))
                    size = max(size, sz + abs(float(ctx.log(w))) + float(theta * uu[0]) + top + r)
                    Z = ctx.matmul(W[:, :r], A[:r, idx])  # rows x the columns
                    total = total + ctx.fsum(list((R * Z.T).sum(axis=1)))
                    reach = reach + ctx.matmul(A[:r, idx], ctx.exp(uu * (-theta)).reshape(len(idx), 1))[:, 0]
            if mass:
                trunc = trunc + mass * remainders[i] * numpy.max(reach)
    bound = 4 * ctx.eps * (size + 10) * total + quadrature
    return total, bound, trunc


#: entries of the weights R of one call of :func:`step_columns` (pieces x columns x rows: 32 MB in float64)
_STEP_CHUNK = 1 << 22

#: columns of one block of the products V = Z T of the lattice piece (F5) in float64 (the Toeplitz block T: grid x
#: block, 16 MB at 8192 levels)
_DIAGONAL_BLOCK = 256


def pairwise_depth(count):
    """A bound on the additions any one term of numpy's float64 ``sum`` of ``count`` contiguous numbers goes through:
    its pairwise summation (blocks of 128 in 8 sequential accumulators, then halving), allowing for chunks of 8192
    summed in sequence."""
    return 19 + max(0, math.ceil(math.log2(max(count, 1) / 128))) + -(-count // 8192)


def rows_kept(ctx, W, reach, r, b, n, lam, h, scale):
    """(K*, bound) of the rows of a service period that can count in the service's residual (F8): R_K(y) increases
    in y and the columns' weight of row K is at most max(b) z_K, z_K = sum_n W[K, n] ``reach``[n] (``reach`` >= the
    admission rows' sums over the lattice columns), so the rows K >= K* add at most
    max(b) n sum_{K >= K*} R_K(n h) z_K; K* the least row where that is below eps^2 of ``scale`` (the period's
    N(W > -1)), the bound returned (:class:`LatticeTables`, :mod:`~qderive.numeric.kernels.lattice_fft`)."""
    z = numpy.matmul(W[:, :r], reach)  # z_K (rows)
    top = W.shape[0] - 1
    R, _ = lattice_residual_rows(ctx, lam, numpy.array([n * float(h)]), top)
    bound = float(numpy.max(b[: n + 1])) * n * R[0] * z
    tail = numpy.cumsum(bound[::-1])[::-1]  # tail[K] = the bound of the rows K..top
    cut = numpy.flatnonzero(tail > float(ctx.eps) ** 2 * scale)
    kept = int(cut[-1]) + 1 if len(cut) else 1
    return kept, (float(tail[kept]) * (1 + 1e-10) if kept <= top else 0.0)


class LatticeTables:
    """The t-free tables of the lattice piece (F5) of one period in float64 (a plain class: kernels import numpy,
    math and each other only). With Z = W A over every lattice column k (rows x columns) and n the largest atom of
    b, the sum of (F5) at a tail point with J columns of positive u_k (u_{J-1} = t - (J - 1) h in (0, h]) is

        sum_K sum_k Z[K, k] sum_m b_m R_K(m h - u_k) = sum_{i < n} sum_K R_K((i + 1) h - u_{J-1}) V_J[K, i],
        V_J[K, i] = sum_{k < J} Z[K, k] b[i + J - k]                                                      (F8)

    (m = i + J - k; module docstring): t enters R only through u_{J-1} (an O(rows n) table of (F3)) and V only
    through J. V_J is a product Z T of the columns with a Toeplitz matrix of b (by blocks of columns, BLAS), and
    one J from another below it by a shift, V_J[K, i] = V_J'[K, i + J - J'] + sum_{J' <= k < J} Z[K, k]
    b[i + J - k] (the columns between them only; V_J'[K, i] = 0 for i >= n): the quantile searches' points lie
    within a few lattice cells of each other, so after the first they cost O(rows n (1 + J - J')) instead of the
    O(rows n J) of the whole product. Every entry stays a sum of at most J positive products, whatever the
    grouping (the rounding count of the tail's bound). Kept: V at the lowest J asked (computed at J - J / 32, so
    that the search's points below the first are reached by shifts too) and at the last J.

    *Rows that cannot count* (``kept``, ``dropped``): R_K(y) increases in y and V_J[K, i] <= max(b) z_K,
    z_K = sum_k Z[K, k], so the rows K >= K* add at most max(b) n sum_{K >= K*} R_K(n h) z_K to any point;
    K* is the least row where that bound is below eps^2 of the period's N(W > -1) (``scale``), and the bound
    joins the tail's truncation bound (the rows beyond a period's last add theirs there too). The weights
    R_K(n h) <= P(Poisson(lambda n h) > K) / lambda fall off faster than geometrically: at 8192 levels over
    [0, 1] and lambda = 11.5 (issue 28's lognormal), K* = 74 of 129 rows."""

    __slots__ = ("W", "ZT", "bpad", "n", "saved", "kept", "dropped")

    def __init__(self, ctx, W, A, r, piece, n, lam, scale):
        b = piece.b
        self.W = W
        self.n = n
        self.kept, self.dropped = rows_kept(ctx, W, A[:r].sum(axis=1), r, b, n, lam, float(piece.h), scale)
        self.ZT = numpy.ascontiguousarray(numpy.matmul(W[: self.kept, :r], A[:r]).T)  # columns x rows kept
        self.bpad = numpy.zeros(A.shape[1] + n + 2)  # b, then zeros: every index of the Toeplitz blocks
        self.bpad[: min(len(b), n + 1)] = b[: n + 1]
        self.saved = {}

    def _columns(self, VT, J, k_from, k_to):
        """VT[i] += sum_{k_from <= k < k_to} b[i + J - k] Z[:, k] (i < n), by blocks of columns: the transposed
        Toeplitz block T[i, c] = b[i + J - c0 - c] (a strided view of b, copied) times the rows ZT[c0:c1]."""
        n, step, item = self.n, _DIAGONAL_BLOCK, self.bpad.itemsize
        for c0 in range(k_from, k_to, step):
            c1 = min(c0 + step, k_to)
            rows = min(n, n - J + c1)  # b[i + J - k] = 0 beyond the largest atom for every column of the block
            if rows <= 0:
                continue
            T = numpy.lib.stride_tricks.as_strided(self.bpad[J - c0:], shape=(rows, c1 - c0), strides=(item, -item),
                                                   writeable=False)
            VT[:rows] += numpy.matmul(numpy.ascontiguousarray(T), self.ZT[c0:c1])

    def at(self, J):
        """V_J of (F8), transposed (n x rows), from the nearest kept V below J (or from the columns themselves)."""
        if J in self.saved:
            return self.saved[J]
        below = [j for j in self.saved if j < J]
        if below:
            start = max(below)
        else:  # the first V: a little below J (a later, smaller J of the same search is reached by a shift)
            start = max(0, J - max(8, J // 32))
            VT = numpy.zeros((self.n, self.ZT.shape[1]))
            self._columns(VT, start, max(0, start - self.n), start)
            self.saved = {start: VT}
        d, VT = J - start, numpy.zeros((self.n, self.ZT.shape[1]))
        if d < self.n:
            VT[: self.n - d] = self.saved[start][d:]
        self._columns(VT, J, max(start, J - self.n), J)
        low = min(self.saved)
        self.saved = {low: self.saved[low], J: VT}
        return VT

#: rows of one period beyond which the sums stop extending them (the weights (F3) decay at least geometrically)
LATTICE_ROWS = 1 << 14


class RowSums:
    """The driver shared by the sums of positive terms over the rows w_K of the periods ((F1), (F5), (K1)-(K2)):
    extend the rows until the truncation bound of a tail is below its tolerance. A subclass sets ``ctx``, ``r``,
    ``keep`` (whole admission: P(X > i) reversed, else None), ``periods`` (lists [W, data, kind or pieces,
    profile, complete]; ``data`` has ``lam``, ``pmf``, ``support``, ``geometric``), ``mass`` = N(W > -1), and
    defines ``_sum(t)`` -> (N(W > t), rounding bound, truncation bound) and ``_period(data, W, kind, complete)``.
    The engine (:mod:`qderive.numeric.engines.vacation_finite_wait`) and generated code run it (a plain class:
    kernels import numpy, math and each other only)."""

    def _extend(self):
        """Double the rows of every period that is not complete; False when none can grow."""
        grown = False
        for i, (W, data, pieces, _, complete) in enumerate(self.periods):
            if complete or W.shape[0] >= LATTICE_ROWS:
                continue
            more = wait_batch_rows(self.ctx, W[-1], data.pmf, self.keep, W.shape[0], data.support, data.geometric)
            self.periods[i] = self._period(data, numpy.concatenate([W, more[1:]]), pieces, more.shape[0] <= W.shape[0])
            grown = True
        if grown:
            self.mass = self._sum(-1)[0]
        return grown

    def tail(self, t, tolerance):
        """(P(W > t), relative error bound) with the rows extended until the truncation is below ``tolerance`` of
        the tail (or nothing is left to extend; call inside ``with ctx:``; t exact in the engine: a Fraction)."""
        while True:
            value, rounding, trunc = self._sum(t)
            if trunc <= tolerance * value or (value == 0 and trunc == 0) or not self._extend():
                break
        if value == 0:
            return value, (0 if trunc == 0 else self.ctx.huge)
        return value / self.mass, (rounding + trunc) / value + 4 * self.ctx.eps * (2 * self.r + 10)


class ConstantSums(RowSums):
    """The data of the sums (F1) for a constant service D in the context of the law's data ``parts`` (objects with
    the fields of the engine's ``WaitData`` that the sums read: ``ctx``, ``r``, ``whole``, ``lam``, ``pmf``,
    ``tail``, ``support``, ``geometric``, ``t_idle``, ``Ws``, ``Wv``, ``beta``, ``phi``; one per arrival rate) and
    the vacation's survival pieces ``vacation`` in the context (:func:`period_profile`): the admission matrices,
    the idle weight, per period (the service and, with vacations, the vacation of each part) its rows, batch rate,
    survival pieces, profile and whether its rows are complete (the next row is exactly 0), and the total
    N(W > -1). Rows are extended (doubled) while their truncation
    bound exceeds the tolerance of a tail (:meth:`RowSums.tail`). The engine
    (:mod:`qderive.numeric.engines.vacation_finite_wait`) and generated code run it; t is exact there (a Fraction),
    a float here (floor divisions and t - j D in float64)."""

    def __init__(self, parts, D, vacation):
        first = parts[0]
        self.ctx, self.D, self.r = first.ctx, D, first.r
        ctx = self.ctx
        with ctx:
            self.keep = first.tail[self.r:0:-1].copy() if first.whole else None
            self.A, self.C = admission_matrix(ctx, first.pmf, first.tail, self.r, first.whole)
            self.idle = ctx.fsum([d.t_idle for d in parts])
            self._periods(parts, ((ctx.num(1), ctx.num(0), ctx.num(D)),), vacation)

    def _periods(self, parts, service, vacation):
        """The service and vacation periods of every part (``service``: the service's pieces in the context,
        ``vacation``: the vacation's survival pieces in the context), and the total mass of the sums (t = -1)."""
        self.periods = []
        for data in parts:
            self.periods.append(self._period(data, data.Ws, service, data.Ws.shape[0] < len(data.beta)))
            if data.Wv.shape[0]:
                self.periods.append(self._period(data, data.Wv, vacation, data.Wv.shape[0] < len(data.phi)))
        self.mass = self._sum(-1)[0]

    def _period(self, data, W, pieces, complete):
        ctx = self.ctx
        error = 0
        if ctx.is_float64 and W.size:  # wait_batch_rows zeroes entries below 1e-150 of its scale
            error = FW_NEGLIGIBLE * float(numpy.max(numpy.abs(W)))
        profile = list(period_profile(ctx, W, data.lam, pieces, error))
        if complete:
            profile[4] = ctx.num(0)  # nothing cut: the next row is 0
        return [W, data, pieces, tuple(profile), complete]

    def _sum(self, t):
        """(N(W > t), rounding bound, truncation bound) by the kernel (t exact; t < 0: the total)."""
        ctx, D = self.ctx, self.D
        if t < 0:
            J0 = J1 = 0
        else:
            J0, J1 = int(-((-t) // D)), int(t // D + 1)  # a Fraction's floor is an int already, a float's a float
        us = [ctx.num(t - j * D) for j in range(min(J0, self.r))]
        periods = [(W, data.lam, pieces, profile) for W, data, pieces, profile, _ in self.periods]
        return lattice_finite_tail(ctx, periods, self.idle, self.A, self.C, int(J0), int(J1), us)


class LatticeServiceSums(ConstantSums):
    """The sums (F1) with the services on the lattice h (kernel (F5)): ``b`` the pmf of B / h over 0..len(b)-1
    (context numbers or floats), M + 1 lattice columns; A[n, k] = sum_j a[n, j] P(S_j = k h) (S_j the j services
    ahead; the sojourn, ``extra`` 1: j + 1), C its reverse cumulative sums plus sum_j a[n, j] P(S_j > M h) in every
    column; the service periods' residual from the same lattice law (:class:`LatticePiece`),
    the vacations' from their pieces (in the context: :meth:`ConstantSums._periods`; the engine's subclass converts
    exact ones). ``h`` a number t - k h is computed in (the engine: a Fraction, exact; generated code: a float).
    ``mass``: the exact N(W > -1) when ``b`` is a rounded law (the bounds
    of a tail divide by the true law's total), None to sum it (an exact lattice law)."""

    def __init__(self, parts, b, h, M, vacation, extra, mass=None, shifted=None, cap=0.0):  # noqa: D107 - the class
        # docstring says it; ``shifted``: the sums of the law b shifted down by one step (their convolutions, shifted
        # back); ``cap``: E (B - c)^+ of a law capped at c (the engine's ``capped_rounding``, (F6)), the upper
        # bound's term
        first = parts[0]
        self.ctx, self.r, self.h, self.M, self.given = first.ctx, first.r, h, M, mass
        ctx, r = self.ctx, self.r
        with ctx:
            self.keep = first.tail[r:0:-1].copy() if first.whole else None
            A0, _ = admission_matrix(ctx, first.pmf, first.tail, r, first.whole)
            bc = ctx.array([ctx.num(v) for v in b]) if not ctx.is_float64 else numpy.asarray(b, dtype=float)
            if shifted is None:
                S, beyond, slack, self.conv_size = lattice_convolutions(
                    ctx, bc, r + 1 + extra, M, FW_NEGLIGIBLE if ctx.is_float64 else 0.0)
            else:
                S, beyond, slack = lattice_shifted(ctx, *shifted.convolved[:3])
                self.conv_size = shifted.convolved[3] + 2
            self.convolved = (S, beyond, slack, self.conv_size)
            S, beyond, slack = S[extra:], beyond[extra:], slack[extra:]
            self.A = ctx.matmul(A0, S)
            self.C = ctx.zeros((r + 1, M + 2))
            self.C[:, : M + 1] = numpy.cumsum(self.A[:, ::-1], axis=1)[:, ::-1]
            self.C = self.C + ctx.matmul(A0, beyond).reshape(r + 1, 1)
            self.slack = A0.astype(float) @ slack if ctx.is_float64 else numpy.array([float(v) for v in A0 @ slack])
            self.idle = ctx.fsum([d.t_idle for d in parts])
            self.tables = {}  # the t-free tables of the lattice piece per period (float64, (F8) of the kernel)
            self._periods(parts, (LatticePiece(bc, ctx.num(self.h)),), vacation)
            # (F6): E (B - c)^+ sum over the service periods of |w_0|_1 max_n C[n, 0]
            self.cap = cap * sum(float(numpy.sum(W[0])) for W, _, pieces, _, _ in self.periods
                                 if W.shape[0] and isinstance(pieces[0], LatticePiece)) * float(
                numpy.max(self.C[:r, 0], initial=0)) if cap else 0.0

    def _sum(self, t):
        """(N(W > t), rounding bound, truncation bound) by the kernel (t exact; t < 0: the total, the exact one
        given for a rounded law). The rounding bound holds the absolute error of the subtraction P(S_j > M h)
        (``slack``) times the weight of the columns it enters."""
        ctx, h = self.ctx, self.h
        if t < 0 and self.given is not None:
            return self.given, 0 * self.given, 0 * self.given
        if t < 0:
            J0 = J1 = 0
        else:  # beyond the last column every u_k is positive (a t past the lattice: the columns' own residuals)
            J0, J1 = min(-((-t) // h), self.M + 1), min(t // h + 1, self.M + 1)
        n = int(J0)
        us = []
        if n:  # u_k = u_{n-1} + (n - 1 - k) h: the last one exact, then sums of positive numbers (3 roundings)
            us = ctx.num(t - (n - 1) * h) + ctx.arange(n)[::-1] * ctx.num(h)
        periods = [(W, data.lam, pieces, profile) for W, data, pieces, profile, _ in self.periods]
        value, rounding, trunc = lattice_finite_tail(ctx, periods, self.idle, self.A, self.C, int(J0), int(J1), us,
                                                        self.tables)
        weight = float(self.idle) * float(self.slack[self.r]) + float(numpy.max(self.slack[: self.r], initial=0)) * sum(
            float(ctx.fsum(list(p[3][0]))) for p in self.periods)
        rounding = rounding + ctx.num(weight) + 4 * ctx.eps * self.conv_size * value
        return value, rounding, trunc

    def bounds(self, t):
        """(N(W > t) - error, N(W > t) + error + rows cut (+ the cap's term (F6) of a capped law)) of this lattice
        law, the rows extended while what they cut exceeds 1e-12 of the value."""
        while True:
            value, rounding, trunc = self._sum(t)
            if trunc <= 1e-12 * value or not self._extend():
                break
        return value - rounding, value + rounding + trunc + self.cap
