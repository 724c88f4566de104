"""The wait of an admitted customer of M[X]/G/1/r with vacations: level-residual transforms on complex nodes.

The algorithms behind :mod:`qderive.numeric.engines.vacation_finite_wait` (whose docstring derives
them), written once against an arithmetic context: float64 (numpy complex arrays, vectorised over
the nodes) or arbitrary precision (object arrays of mpc; the node functions use only ``zeros`` and
arithmetic, so the engine also runs them on gmpy2 numbers). Vectors run over the queue levels
n = 0..r-1 seen by an arriving batch (level r admits nobody); "nodes" are the complex arguments s
of a transform.

* :func:`wait_batch_rows` -- w_K = w_{K-1} L: the level vector after K batches (partial admission:
  (w L)_n = sum_{k=1}^{n} l_k w_{n-k}; whole admission adds keep_n w_n, keep_n = P(X > r - n),
  the batches that do not fit: :func:`wait_keep`, which for the moments drops the levels that no batch
  fits, where nobody is admitted); positive terms.
* :func:`wait_residual_weights` -- g_K(s) = E int_0^B (lambda x)^K / K! e^{-lambda x} e^{-s (B - x)} dx,
  K = 0..top, from (lambda - s) g_K = lambda g_{K-1} - beta_K: forward where |lambda - s| >= lambda
  (errors shrink by lambda / |lambda - s| per step), backward from g_top = 0 elsewhere (errors shrink
  by |lambda - s| / lambda).
* :func:`wait_levels_by_batches` -- Phi(s) = G(s) W (the rows of :func:`wait_batch_rows` weighted by g_K).
* :func:`wait_levels_by_customers` -- the same Phi(s) by the recursion over levels
  (lambda F_n - s) Phi_n = lambda sum_k l_k Phi_{n-k} + (lambda - s)(g_0 Y_n + h_0 V_n) - Z'_n, O(r)
  per node; its errors are bounded by their sum where lambda / |lambda F_n - s| <= 1 for every n, or,
  for geometric batches under partial admission, where |lambda - q s| <= |lambda - s|
  (:func:`wait_customer_stable`), and grow geometrically elsewhere (not used there).
* :func:`wait_admission_sum` -- N(s) = sum_n Phi_n(s) A_n(s) + t_I A_I(s): the admitted customers'
  beta(s)^{customers ahead}, summed over their positions in the batch.
* :func:`wait_residual_moments`, :func:`wait_series_powers`, :func:`wait_admission_series` -- the
  same at s = 0 as power series in -s (E X^p / p! coefficients): positive terms only;
  :func:`wait_level_series` -- Phi(s) as such a series.
* :func:`wait_count_sequences`, :func:`wait_finite_start` (:func:`wait_mode_start` for a mode of the
  hysteretic model), :func:`wait_service_rows` -- the s-independent
  data (count sequences long enough for the residual moments; Y, V, t_I, the rows W and Z' from the
  embedded law q); :func:`wait_levels_at` -- Phi at nodes by batches from them. The package's engine and
  ``qderive codegen vacation-finite --measure wait_tail`` both run these.
"""

import numpy


def fw_complex_zeros(ctx, shape):
    """Zeros that accept complex values: numpy complex in float64, the context's object zeros otherwise."""
    if ctx.is_float64:
        return numpy.zeros(shape, dtype=complex)
    return ctx.zeros(shape)


#: float64: values below this fraction of their scale are set to 0 (negligible; their products would be
#: subnormal numbers, which slow the arithmetic a hundredfold)
FW_NEGLIGIBLE = 1e-150


def fw_drop_negligible(a, scale):
    """float64: zero the entries of a below 1e-150 times ``scale`` (a row-wise array or a number)."""
    a[numpy.abs(a) < FW_NEGLIGIBLE * scale] = 0
    return a


def _fw_last_nonzero(v):
    nz = numpy.flatnonzero(numpy.asarray(v != 0, dtype=bool))
    return int(nz[-1]) if len(nz) else -1


def _fw_step(ctx, w, pmf, keep, support, geometric, trimmed):
    """One batch on the level vector w (see :func:`wait_batch_rows`)."""
    r = len(w)
    if ctx.is_float64:
        out = numpy.convolve(w, trimmed)[:r] if len(trimmed) else numpy.zeros(r)
    elif support is not None:
        out = ctx.zeros(r)
        for k in support:
            if 0 < k < r:
                out[k:] = out[k:] + w[: r - k] * pmf[k]
    elif geometric is not None:
        # (w L)_n = sum_{m<n} p q^{n-1-m} w_m = q^n sum_{m<n} (p q^{-1-m}) w_m: three vector operations on
        # positive terms (mpmath has no exponent range to overflow)
        down, up = geometric
        out = ctx.zeros(r)
        if r > 1:
            out[1:] = numpy.cumsum(w[: r - 1] * up[: r - 1]) * down[1:r]
    else:
        out = ctx.zeros(r)
        for k in range(1, r):
            out[k:] = out[k:] + w[: r - k] * pmf[k]
    if keep is not None:
        out = out + w * keep
    return ctx.flush(out)


def _fw_prepare(ctx, r, pmf, support, geometric):
    """(trimmed pmf in float64, the geometric step's vectors in mpmath) for :func:`_fw_step` over r levels."""
    trimmed = None
    if ctx.is_float64:
        last = _fw_last_nonzero(pmf[:r]) if r else -1
        trimmed = numpy.asarray(pmf[: max(last, 0) + 1], dtype=float) if last > 0 else numpy.zeros(0)
    elif geometric is not None and support is None:
        p, q = geometric
        down = ctx.zeros(r + 1)  # q^n
        down[0] = ctx.num(1)
        if r:
            down[1:] = q
        down = numpy.cumprod(down)
        geometric = (down, p / (down[1:] if r else down[:0]))  # (q^n, p q^{-1-m})
    return trimmed, geometric


def wait_rows_needed(ctx, r, pmf, keep, limit, support=None, geometric=None):
    """The number of rows after which every row w L^K of a start w >= 0 is negligible: the first K with
    |1 L^K| <= eps/256 (1 the vector of ones over the r levels; since w <= max(w) 1, |w L^K| <= |w| |1 L^K|),
    or None when that takes more than ``limit`` batches (whole admission: a level that no batch fits keeps its
    mass). Partial admission: at most r (the rows vanish)."""
    trimmed, geometric = _fw_prepare(ctx, r, pmf, support, geometric)
    w = ctx.zeros(r)
    w[:] = ctx.num(1)
    tol = ctx.eps / 256
    for K in range(limit + 1):
        if ctx.fsum(list(w)) <= tol:
            return K
        w = _fw_step(ctx, w, pmf, keep, support, geometric, trimmed)
    return None


def wait_batch_rows(ctx, start, pmf, keep, top, support=None, geometric=None):
    """The rows w_0 = ``start``, w_K = w_{K-1} L for K = 0..top (module docstring), as a 2-d array.

    ``pmf`` = P(X = k) over k = 0..r (at least); ``keep`` None (partial admission) or the vector
    P(X > r - n), n = 0..r-1 (whole admission); ``support`` the sizes of a finite law or
    ``geometric`` = (p, q) select a faster mpmath step. Rows stop early when one vanishes.
    """
    r = len(start)
    trimmed, geometric = _fw_prepare(ctx, r, pmf, support, geometric)
    rows = [start]
    w = start
    for _ in range(top):
        w = _fw_step(ctx, w, pmf, keep, support, geometric, trimmed)
        if not numpy.any(numpy.asarray(w != 0, dtype=bool)):
            break
        rows.append(w)
    out = ctx.zeros((len(rows), r))
    for K, row in enumerate(rows):
        out[K] = row
    if ctx.is_float64 and r:
        fw_drop_negligible(out, float(numpy.max(numpy.abs(out))))
    return out


def wait_residual_weights(ctx, s, lam, g0, beta):
    """G[i, K] = g_K(s_i), K = 0..len(beta)-1 (module docstring), for a 1-d array of nodes s.

    ``g0`` = g_0(s) = (beta(s) - beta_0) / (lambda - s) on the same nodes (used where the recursion
    runs forward); ``beta`` the count probabilities beta_K. The backward sweep starts from
    g_top = 0: its error there, at most P(K > top) / lambda, shrinks on the way down.
    """
    top = len(beta) - 1
    G = fw_complex_zeros(ctx, (len(s), top + 1))
    if not len(s):
        return G
    ls = -(s - lam)  # lambda - s (the array on the left: elementwise in mpmath)
    dist = numpy.abs(ls)
    forward = numpy.asarray(dist >= lam, dtype=bool)
    f, b = numpy.flatnonzero(forward), numpy.flatnonzero(~forward)
    if len(f):
        inv = 1 / ls[f]
        g = g0[f]
        G[f, 0] = g
        for K in range(1, top + 1):
            g = (g * lam - beta[K]) * inv
            G[f, K] = g
    if len(b):
        c = ls[b] / lam
        g = fw_complex_zeros(ctx, len(b))
        for K in range(top, 0, -1):
            g = g * c + beta[K] / lam
            G[b, K - 1] = g
    if ctx.is_float64:
        fw_drop_negligible(G, numpy.max(numpy.abs(G), axis=1)[:, None])
    return G


def wait_levels_by_batches(ctx, G, Ws, H=None, Wv=None):
    """Phi = G[:, :K_s] W_s (+ H[:, :K_v] W_v): level-residual transforms, nodes x levels."""
    Phi = numpy.dot(G[:, : Ws.shape[0]], Ws)
    if H is not None and Wv is not None and Wv.shape[0]:
        Phi = Phi + numpy.dot(H[:, : Wv.shape[0]], Wv)
    return Phi


def wait_customer_stable(lam, low, s, geometric_q=None):
    """Boolean array: the nodes where :func:`wait_levels_by_customers` does not amplify errors.

    In general: lambda / |lambda F_n - s| <= 1 for every F_n in [low, 1] (the response of level n to an
    error at level m is a sum over paths of products of such factors times batch probabilities, at
    most 1 in modulus). Partial admission of geometric batches (``geometric_q`` = q): the response is
    exactly theta p zeta^{n-m-1} with theta = lambda / (lambda - s), zeta = theta p + q, so the condition
    is |zeta| <= 1, i.e. |lambda - q s| <= |lambda - s| (then |theta p| <= 1 + q). Floats suffice: at the
    boundary errors neither grow nor shrink, and both methods are accurate there.
    """
    lam = float(lam)
    x = numpy.array([float(v.real) for v in s]) if s.dtype == object else numpy.real(s)
    y = numpy.array([float(v.imag) for v in s]) if s.dtype == object else numpy.imag(s)
    if geometric_q is not None:
        q = float(geometric_q)
        return numpy.hypot(lam - q * x, q * y) <= numpy.hypot(lam - x, y)
    a = lam * float(low)
    # distance from s to the real segment [a, lam]
    dx = numpy.where(x < a, a - x, numpy.where(x > lam, x - lam, 0.0))
    return numpy.hypot(dx, y) >= lam


def wait_levels_by_customers(ctx, s, lam, admit, pmf, Y, v0, Zp, g0, h0, support=None, geometric=None):
    """Phi[i, n] by the recursion over levels of the module docstring, for nodes s (1-d) and n = 0..r-1.

    ``admit`` None (partial admission: F_n = 1) or F_n = P(X <= r - n); ``Y`` the services' start
    vector, ``v0`` the vacations' start weight (at level 0), ``Zp`` = sum_{K >= 1} (beta_K w^s_K +
    varphi_K w^v_K); ``g0``, ``h0`` (None without vacations) the K = 0 weights of service and vacation.
    """
    r = len(Y)
    nodes = len(s)
    Phi = fw_complex_zeros(ctx, (nodes, r))
    if not r or not nodes:
        return Phi
    ls = -(s - lam)
    if admit is None:
        inv = 1 / ls
    else:
        inv = 1 / (-(s[:, None] - admit[None, :] * lam))
    src = (g0 * ls)[:, None] * Y[None, :] - Zp[None, :]
    if h0 is not None:
        src[:, 0] = src[:, 0] + h0 * ls * v0
    acc = fw_complex_zeros(ctx, nodes)
    sizes = [k for k in (support or ()) if 0 < k < r]
    for n in range(r):
        if n == 0:
            conv = None
        elif geometric is not None:
            p, q = geometric
            acc = Phi[:, n - 1] * p + acc * q
            conv = acc
        elif support is not None:
            conv = None
            for k in sizes:
                if k <= n:
                    term = Phi[:, n - k] * pmf[k]
                    conv = term if conv is None else conv + term
        else:
            conv = numpy.dot(Phi[:, :n], pmf[n:0:-1])
        top = src[:, n] if conv is None else conv * lam + src[:, n]
        Phi[:, n] = top * (inv if admit is None else inv[:, n])
    return Phi


def wait_admission_sum(ctx, Phi, b, tail, pmf, t_idle, whole, once=None):
    """N(s) = sum_n Phi_n A_n + t_I A_I for nodes (rows of Phi) with b = beta(s).

    Partial admission: A_n = b^n P_{r-n}, A_I = P_{r+1}, P_m = sum_{i=1}^{m} P(X >= i) b^{i-1};
    whole admission: A_n = b^n D_{r-n}, A_I = D_{r+1}, D_m = sum_{k=1}^{m} l_k (1 + b + ... + b^{k-1}).
    ``tail`` = P(X > i) and ``pmf`` over i = 0..r+1. ``once`` (or None): the times o_n at the levels n = 1..r-1
    (entry 0 unused) where a batch's arrival starts service at once with n waiting (a start threshold N > 1 met
    by the batch): it finds r + 1 - n places, + sum_n o_n b^n P_{r+1-n} (D_{r+1-n}).
    """
    nodes, r = Phi.shape
    pw = fw_complex_zeros(ctx, (nodes, r + 1))
    pw[:, 0] = 1
    if r:
        pw[:, 1:] = b[:, None]
    pw = numpy.cumprod(pw, axis=1)  # b^i, i = 0..r (|b| <= 1 for Re s >= 0)
    if ctx.is_float64:
        fw_drop_negligible(pw, 1.0)
    Q = fw_complex_zeros(ctx, (nodes, r + 2))
    if not whole:
        Q[:, 1:] = numpy.cumsum(pw * tail[None, : r + 1], axis=1)
    else:
        Gs = numpy.cumsum(pw, axis=1)  # 1 + b + ... + b^{k-1}, k = 1..r+1
        Q[:, 1:] = numpy.cumsum(Gs * pmf[None, 1: r + 2], axis=1)
    N = Q[:, r + 1] * t_idle
    if r:
        A = pw[:, :r] * Q[:, r:0:-1]
        N = N + numpy.sum(Phi * A, axis=1)
    if once is not None and r > 1:
        N = N + numpy.sum(pw[:, 1:r] * Q[:, r:1:-1] * once[None, 1:r], axis=1)
    return N


# -- moments: power series in -s, coefficients E X^p / p! ------------------------------------------


def wait_residual_moments(ctx, tail, tail2, lam, order, totals=None):
    """M[p, K] = E int_0^B (lambda x)^K / K! e^{-lambda x} (B - x)^p / p! dx for p = 0..order, K = 0..top.

    M[p, K] = T^{(p+1)}_K / lambda^{p+1} with T^{(1)} = P(K' > K) (``tail``), T^{(2)} = ``tail2`` and
    T^{(j)}_K = sum_{i > K} T^{(j-1)}_i (backward sums of positive terms). What lies beyond top:

    * extrapolated geometrically with the last ratio of tail2 where that is negligible: ``totals`` None, or
      T^{(p)}_top <= eps/256 T^{(p)}_0 (top chosen so; the subtraction below would only add its rounding);
    * else, with ``totals`` = (E binom(K', m), m = 0..order): exactly. By induction (hockey stick) T^{(j)}_K =
      E binom(K' - K - 1, j - 1) 1{K' > K}, so T^{(j)}_{-1} = E binom(K', j - 1), and for a count of Poisson
      batches during a time B (beta_k of ``docs/theory/chapter2.md`` section 0) E binom(K', m) =
      lambda^m E B^m / m!: the law's own moments. Hence T^{(j)}_top = E binom(K', j - 1) - sum_{i <= top}
      T^{(j-1)}_i, j >= 3, and top need not reach where the count is negligible: only as far as rows are used
      (under partial admission the rows w L^K vanish for K >= r). It is one subtraction per order; its absolute
      error, at most (top + 2) eps E binom(K', j - 1), is the same for every K and bounded by
      :func:`wait_remainder_error` (the backward sums above it add positive terms).
    """
    top = len(tail) - 1
    M = ctx.zeros((order + 1, top + 1))
    rho = None
    if top >= 1 and tail2[top - 1] != 0 and tail2[top] != 0 and tail2[top] < tail2[top - 1]:
        rho = tail2[top] / tail2[top - 1]
    prev = tail
    for p in range(order + 1):
        if p == 0:
            cur = tail
        elif p == 1:
            cur = tail2
        else:
            cur = ctx.zeros(top + 1)
            if totals is not None and prev[top] > ctx.eps / 256 * prev[0]:
                rem = totals[p] - ctx.fsum(list(prev))
                rem = rem if rem > 0 else ctx.num(0)  # rounding: the exact remainder is >= 0
            else:
                rem = prev[top] * rho / (1 - rho) if rho is not None else ctx.num(0)
            cur[top] = rem
            if top:
                cur[:top] = numpy.cumsum(prev[:0:-1])[::-1] + rem
        M[p] = cur / lam ** (p + 1)
        prev = cur
    return M


def wait_remainder_error(ctx, totals, top, lam, order):
    """An upper bound of the absolute error of M[p, K] (every K) of :func:`wait_residual_moments` with ``totals``:
    (top + 2) eps E binom(K', p) / lambda^{p+1} for p >= 2 (the subtraction of top + 1 rounded positive terms from
    the total, each within eps of it), 0 for p < 2 (positive sums only); a vector over p = 0..order."""
    err = ctx.zeros(order + 1)
    for p in range(2, order + 1):
        err[p] = ctx.eps * (top + 2) * totals[p] / lam ** (p + 1)
    return err


def wait_count_totals(ctx, moments, lam, order):
    """(E binom(K', m), m = 0..order) = (lambda^m E B^m / m!) of a count K' of Poisson(lambda) batches during a time
    B with raw moments ``moments`` (E B^0 = 1 first): the totals of :func:`wait_residual_moments`."""
    out = ctx.zeros(order + 1)
    fact = 1
    for m in range(order + 1):
        fact = fact * max(m, 1)
        out[m] = moments[m] * lam**m / fact
    return out


def fw_series_mul(a, b):
    """The product of truncated power series along the last axis (broadcast over the others)."""
    P = a.shape[-1]
    out = a * 0
    for p in range(P):
        acc = a[..., 0] * b[..., p]
        for i in range(1, p + 1):
            acc = acc + a[..., i] * b[..., p - i]
        out[..., p] = acc
    return out


def wait_series_powers(ctx, f, count):
    """c[j] = f^j (truncated power series, f[0] = 1) for j = 0..count-1, by orders: positive terms
    (c[j, p] = c[j-1, p] + sum_{i=1}^{p} f_i c[j-1, p-i])."""
    P = len(f)
    c = ctx.zeros((count, P))
    c[:, 0] = ctx.num(1)
    for p in range(1, P):
        inc = c[: count - 1, p - 1] * f[1]
        for i in range(2, p + 1):
            inc = inc + c[: count - 1, p - i] * f[i]
        c[1:, p] = numpy.cumsum(inc)
    return c


def wait_admission_series(ctx, Phis, Bs, tail, pmf, t_idle, whole, once=None):
    """The power series (in -s) of :func:`wait_admission_sum` (``once`` as there): ``Phis`` levels x orders, ``Bs``
    the series of beta (b_p / p!); every coefficient a sum of positive terms."""
    r, P = Phis.shape
    pw = wait_series_powers(ctx, Bs, r + 1)
    Q = ctx.zeros((r + 2, P))
    if not whole:
        Q[1:] = numpy.cumsum(pw * tail[: r + 1, None], axis=0)
    else:
        Gs = numpy.cumsum(pw, axis=0)
        Q[1:] = numpy.cumsum(Gs * pmf[1: r + 2, None], axis=0)
    N = Q[r + 1] * t_idle
    if r:
        A = fw_series_mul(pw[:r], Q[r:0:-1])
        N = N + numpy.sum(fw_series_mul(Phis, A), axis=0)
    if once is not None and r > 1:
        N = N + numpy.sum(fw_series_mul(pw[1:r], Q[r:1:-1]) * once[1:r, None], axis=0)
    return N


# -- the s-independent data (engine and generated code) ------------------------------------------


def wait_count_sequences(ctx, counts, order, start=32, limit=1 << 18, rows=None):
    """(beta, P(K > k), sum_{i>k} P(K > i)) over k = 0..top from ``counts(n)`` (the count sequences over 0..n),
    with top the first index where every residual moment is negligible: M[p, top] <= eps/256 M[p, 0] for
    p <= ``order`` (:func:`wait_residual_moments` at lambda = 1; M decreases in K). n doubles from ``start``;
    None when more than ``limit`` terms would be needed.

    ``rows``: the rows w L^K vanish for K >= ``rows`` (partial admission: rows = r) and the moments are summed
    with the law's totals (:func:`wait_residual_moments`): n = rows - 1 at once (top = min(that index, rows - 1)),
    whatever the tail of the count. A heavy-tailed law (lognormal) needs no longer sequences for higher moments."""
    cap = None if rows is None else max(rows - 1, 0)
    n = start if cap is None else cap  # one call: a quadrature law restarts its levels at each length
    tol = ctx.eps / 256
    while True:
        beta, tail, tail2 = counts(n)
        M = wait_residual_moments(ctx, tail, tail2, ctx.num(1), max(order, 1))
        small = [all(M[p, k] <= tol * M[p, 0] for p in range(M.shape[0])) for k in range(n + 1)]
        if small[n] or (cap is not None and n >= cap):
            top = small.index(True) if small[n] else n  # the first negligible index, or every row
            return beta[: top + 1].copy(), tail[: top + 1].copy(), tail2[: top + 1].copy()
        n *= 2
        if cap is not None:
            n = min(n, cap)
        if n > limit:
            return None


def wait_service_rows(ctx, Y, pmf, keep, beta, support=None, geometric=None, phi=None, Wv=None):
    """(W^s, Z'): the service rows W^s_K = Y L^K (:func:`wait_batch_rows`, K up to len(beta) - 1) and
    Z' = sum_{K >= 1} (beta_K W^s_K + varphi_K W^v_K) (``phi``, ``Wv``: the vacations' counts and rows, or None)."""
    r = len(Y)
    Ws = wait_batch_rows(ctx, Y, pmf, keep, len(beta) - 1, support, geometric)
    Zp = ctx.zeros(r)
    if Ws.shape[0] > 1:
        Zp = Zp + numpy.dot(beta[1: Ws.shape[0]], Ws[1:])
    if Wv is not None and Wv.shape[0] > 1:
        Zp = Zp + numpy.dot(phi[1: Wv.shape[0]], Wv[1:])
    return Ws, ctx.flush(Zp)


def wait_keep(ctx, pmf, tail, r, whole, drop_full=False):
    """keep_n = P(X > r - n), n = 0..r-1 (whole admission: the batches that do not fit leave the level as it is;
    None under partial admission). ``drop_full``: 0 instead at the levels that no batch fits (keep_n = 1, F_n =
    P(X <= r - n) = 0): nobody is admitted there (A_n = 0 in :func:`wait_admission_sum`, D_{r-n} = 0) and they are
    above every level a batch can leave (levels only rise), so the rows on the other levels, hence N(s), are
    unchanged, while the mass reaching those levels leaves the rows one batch later instead of staying for ever."""
    if not whole:
        return None
    keep = tail[r:0:-1].copy()
    if drop_full:
        fits = numpy.cumsum(pmf[1: r + 1])[::-1]  # F_n = P(X <= r - n): exactly 0 where no size fits
        for n in range(r):
            if fits[n] == 0:
                keep[n] = keep[n] * 0
    return keep


def wait_finite_start(ctx, q, lam, pmf, tail, beta, phi, policy, whole, support=None, geometric=None, idle=None,
                      drop_full=False):
    """The s-independent data of M[X]/G/1/r from the embedded law q_0..q_r, as a dict.

    With c_I = 0, c_0, 1 for ``policy`` "multiple", "single", "none" (c_0 = sum_K varphi_K (V L^K)_0 / q_0:
    no batch admitted during the vacation) and f_I = 1 (partial) or P(X <= r + 1) (``whole``):

        Y_n = q_{n+1} + i_0 l_{n+1} / f_I,  V = q_0 at level 0,  t_I = i_0 / (lambda f_I),  i_0 = q_0 c_I + e,

    e = ``idle`` (default 0, then i_0 = q_0 c_I exactly): the weight of idle periods that follow a period admitting
    nobody outside q (the contract's control with vacations and L = 0: the vacation in overload,
    :mod:`qderive.numeric.engines.sip.control` item 4).

    the rows ``Ws``, ``Wv`` and ``Zp`` = Z' (:func:`wait_service_rows`), ``admit`` F_n = P(X <= r - n) (whole
    admission; None otherwise) and its smallest value ``low``, ``v0`` = q_0 (None without vacations: ``phi``
    None), ``t_idle`` and ``zero_weight`` = t_I f_I (P(W = 0) times N(0)). ``pmf``, ``tail`` over 0..r+1.
    ``drop_full``: the rows leave the levels that no batch fits (:func:`wait_keep`; only N(s) is kept: Z' and the
    rows there are not the level process's).
    Source: the module docstring of :mod:`qderive.numeric.engines.vacation_finite_wait`, items 1-3.
    """
    r = len(q) - 1
    keep = wait_keep(ctx, pmf, tail, r, whole, drop_full)
    if whole and r:
        admit = numpy.cumsum(pmf[1: r + 1])[::-1].copy()  # F_n = P(X <= r - n), n = 0..r-1
        low = admit[r - 1]
    else:
        admit, low = None, ctx.num(1)
    q0 = q[0]
    if phi is not None:
        V = ctx.zeros(r)
        if r:
            V[0] = q0
        Wv = wait_batch_rows(ctx, V, pmf, keep, len(phi) - 1, support, geometric)
    else:
        Wv = ctx.zeros((0, r))
    if policy == "single":
        c_idle = ctx.dot(phi[: Wv.shape[0]], Wv[:, 0]) / q0 if r else ctx.num(1)
    elif policy == "none":
        c_idle = ctx.num(1)
    else:
        c_idle = ctx.num(0)
    fit = ctx.fsum(list(pmf[1: r + 2])) if whole else ctx.num(1)
    idle0 = q0 * c_idle if idle is None else q0 * c_idle + idle
    Y = q[1: r + 1] + pmf[1: r + 1] * (idle0 / fit)
    t_idle = idle0 / (lam * fit)
    Ws, Zp = wait_service_rows(ctx, Y, pmf, keep, beta, support, geometric, phi, Wv)
    return {"admit": admit, "low": low, "Y": Y, "v0": q0 if phi is not None else None, "Zp": Zp, "t_idle": t_idle,
            "zero_weight": t_idle * fit, "Ws": Ws, "Wv": Wv}


def wait_mode_start(ctx, q, mode, lam, pmf, beta, support=None, geometric=None):
    """The s-independent data of mode ``mode`` (0 normal, 1 overload; rate ``lam`` > 0) of the hysteretic model
    under ``--policy departure`` from its embedded law q[s][j] (16), j = 0..R-1, as a dict: with r = R - 1,

        Y^(s)_n = lambda_s q_{n+1,s} + [s = 0] lambda_0 q_{0,0} l_{n+1},   t_I = [s = 0] q_{0,0},

    and the rows ``Ws``, ``Zp`` = Z' of :func:`wait_service_rows` (partial admission, no vacations). Source: the
    module docstring of :mod:`qderive.numeric.engines.hysteretic_wait`.
    """
    r = len(q[mode]) - 1
    Y = q[mode][1: r + 1] * lam
    t_idle = ctx.num(0)
    if mode == 0:
        Y = Y + pmf[1: r + 1] * (q[0][0] * lam)
        t_idle = +q[0][0]
    Ws, Zp = wait_service_rows(ctx, Y, pmf, None, beta, support, geometric)
    return {"Y": Y, "t_idle": t_idle, "Ws": Ws, "Zp": Zp}


def wait_level_series(ctx, lam, btail, btail2, Ws, vtail=None, vtail2=None, Wv=None, order=1, btotals=None,
                      vtotals=None):
    """Phi_n as power series in -s, levels x orders: sum_K M[p, K] (W^s_K)_n (+ the vacations' term), M of
    :func:`wait_residual_moments` (coefficients E[.; residual^p] / p!; ``btotals``, ``vtotals``: the service's and
    the vacation's totals of :func:`wait_count_totals`, or None)."""
    Ms = wait_residual_moments(ctx, btail, btail2, lam, order, btotals)
    Phis = numpy.dot(Ms[:, : Ws.shape[0]], Ws).T
    if Wv is not None and Wv.shape[0]:
        Mv = wait_residual_moments(ctx, vtail, vtail2, lam, order, vtotals)
        Phis = Phis + numpy.dot(Mv[:, : Wv.shape[0]], Wv).T
    return Phis


def wait_levels_at(ctx, s, lam, g0, beta, Ws, h0=None, phi=None, Wv=None):
    """Phi at the 1-d nodes s by batches: G = (g_K(s)) of :func:`wait_residual_weights` for the services (and H
    for the vacations, ``h0`` not None), then :func:`wait_levels_by_batches`."""
    G = wait_residual_weights(ctx, s, lam, g0, beta)
    H = wait_residual_weights(ctx, s, lam, h0, phi) if h0 is not None else None
    return wait_levels_by_batches(ctx, G, Ws, H, Wv)


def wait_levels_of_periods(ctx, s, lam, g0, beta, Ws, hs=(), periods=(), flat=None):
    """Phi at the 1-d nodes s by batches with the period families of a composed idle period (the blocks: item 6 of
    ``qderive.numeric.engines.vacation_finite_wait``): the services' G W_s (:func:`wait_levels_at`) plus, per family
    f, H^f W^f with H^f = (h^f_K(s)) of :func:`wait_residual_weights` (``hs``: h^f_0 at the nodes; ``periods``:
    (counts varphi^f, rows W^f) of each family), plus the ``flat`` times (levels without a residual), or None."""
    Phi = wait_levels_at(ctx, s, lam, g0, beta, Ws)
    for h, (counts, rows) in zip(hs, periods):
        H = wait_residual_weights(ctx, s, lam, h, counts)
        Phi = Phi + wait_levels_by_batches(ctx, H, rows)
    if flat is not None:
        Phi = Phi + flat[None, :]
    return Phi
