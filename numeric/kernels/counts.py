"""Count sequences: beta_k, P(K > k) and sum_{i>k} P(K > i) for k = 0..n, as positive terms.

K is the number of Poisson batch arrivals during one random time (``docs/theory/chapter2.md``
section 0); each function evaluates one count family of :mod:`qderive.symbolic.counts`
and returns ``(beta, tail, tail2)``, three context vectors of length n + 1:

* ``beta[k] = P(K = k)``; ``tail[k] = P(K > k)``; ``tail2[k] = sum_{i>k} P(K > i) = E (K - k - 1)^+``.

No tail is formed as ``1 - (cumulative sum)`` where that cancels: below the median
(cdf <= 1/2) ``1 - cdf`` is well conditioned and is used; above it the tail is a
backward sum of terms extended until the remainder (bounded by a geometric series) is
below eps/256 of the sum. ``docs/theory/chapter2.md`` section 4 measured what the naive form
costs: the cut recursion (2b) loses its stability. In float64 the Poisson
probabilities of a large mean (> 500 arrivals) come from Loader's saddle-point form
(no underflow of e^{-x}, relative error ~1e-15), and subnormal results are flushed to
0, so a sequence cannot stall at the smallest subnormal (5e-324 q rounds back to
5e-324 for q > 1/2: the overload slow-down measured in the redesign issue).
"""

import math

import numpy

from .chains import mmatrix_solve
from .points import every, larger

#: the kernels here that accept numbers over points (:class:`~qderive.numeric.kernels.points.Float64Points`: one
#: array of parameters per argument, sequences with a last axis over the points); the others run point by point
OVER_POINTS = ("negative_binomial_sequences", "mixture_sequences", "poisson_sequences")
#: over points, the most numbers of one table (terms x points: 16 MB); a longer one is declined (ArithmeticError) so
#: that the points are computed one by one, each with a table of its own length
POINT_TABLE = 1 << 21

#: the most terms one arrival-count sequence may have (about lambda E[period] plus its spread)
MAX_COUNT_TERMS = 10**7

# Stirling-formula error log(n!) - log(sqrt(2 pi n) (n/e)^n) for n = 0..15 (direct form: at most
# 1e-15 absolute, which is what a Poisson probability's exponent can carry)
_STIRLERR = [0.0] + [math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - 0.5 * math.log(2 * math.pi)
                     for n in range(1, 16)]


def _stirlerr(k):
    """Stirling-formula error for an array of integers k >= 0 (Loader 2000)."""
    k = numpy.asarray(k, dtype=numpy.float64)
    out = numpy.empty_like(k)
    small = k <= 15
    out[small] = numpy.asarray(_STIRLERR)[k[small].astype(numpy.int64)]
    n = k[~small]
    nn = n * n
    out[~small] = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / n
    return out


def _bd0(x, m):
    """x log(x/m) + m - x without cancellation (Loader's deviance), x an array, m > 0."""
    x = numpy.asarray(x, dtype=numpy.float64)
    out = numpy.empty_like(x)
    near = numpy.abs(x - m) < 0.1 * (x + m)
    far = ~near
    with numpy.errstate(divide="ignore", invalid="ignore"):
        xf = x[far]
        out[far] = numpy.where(xf > 0, xf * numpy.log(xf / m), 0.0) + m - xf
    xn = x[near]
    v = (xn - m) / (xn + m)
    s = (xn - m) * v
    ej = 2 * xn * v
    v2 = v * v
    for j in range(1, 400):
        ej = ej * v2
        s_new = s + ej / (2 * j + 1)
        if numpy.array_equal(s_new, s):
            break
        s = s_new
    out[near] = s
    return out


def _poisson_terms(ctx, x, count):
    """e^{-x} x^k / k! for k = 0..count-1 (positive; accurate in float64 for any x)."""
    ks = numpy.arange(count)
    if not ctx.is_float64:
        ratios = ctx.zeros(count)
        ratios[0] = ctx.num(1)
        if count > 1:
            ratios[1:] = numpy.divide(x, ctx.arange(count)[1:])  # numpy's loop: mpf / array would try the array
        return numpy.cumprod(ratios) * ctx.exp(-x)
    points = isinstance(x, numpy.ndarray)  # numbers over points: every mean in (0, 500], else declined
    if points and not numpy.all((x > 0) & (x <= 500)):
        raise ArithmeticError("Poisson means of 0 or above 500 among these points: computed one by one")
    if not points and x == 0:
        t = numpy.zeros(count)
        t[0] = 1.0
        return t
    if points or x <= 500:
        ratios = ctx.zeros(count)
        ratios[0] = 1.0
        ratios[1:] = x / ctx.arange(count)[1:]
        return ctx.flush(ctx.exp(-x) * numpy.cumprod(ratios, axis=0))
    t = numpy.empty(count)
    t[0] = 0.0  # e^{-x} < 1e-217: below every accuracy we keep next to the mode
    k = ks[1:].astype(numpy.float64)
    t[1:] = numpy.exp(-_stirlerr(k) - _bd0(k, x)) / numpy.sqrt(2 * math.pi * k)
    return ctx.flush(t)


def _negbin_terms(ctx, a, p0, q, count):
    """Gamma(k+a)/(Gamma(a) k!) p0^a q^k for k = 0..count-1 (positive)."""
    ratios = ctx.zeros(count)
    ratios[0] = ctx.num(1)
    if count > 1:
        k = ctx.arange(count)[1:]
        ratios[1:] = (k - 1 + a) * q / k  # array first: mpf * array would try to convert the array
    low = ctx.is_float64 and a * ctx.log(p0) < -700
    if isinstance(low, numpy.ndarray):  # numbers over points: this form for all of them, or each alone
        if numpy.any(low):
            raise ArithmeticError("p0^a underflows at some points: the count sequences are computed point by point")
        low = False
    if low:
        # p0^a underflows: log-space, each term on its own (relative error ~ eps * |log t|)
        k = numpy.arange(count, dtype=numpy.float64)
        logs = (a * math.log(p0) + k * math.log(q) + numpy.array([math.lgamma(v + a) for v in k])
                - math.lgamma(a) - numpy.array([math.lgamma(v + 1) for v in k]))
        return ctx.flush(numpy.exp(logs))
    first = p0**a
    return ctx.flush(numpy.cumprod(ratios, axis=0) * first)


def count_tails(ctx, terms, n, mean, ratio_after):
    """Tails and second tails for k = 0..n from ``terms`` t_0..t_K (K > n), see the module docstring.

    ``ratio_after`` bounds t_{i+1}/t_i for every i >= K (< 1); ``mean`` = E K.
    """
    K = len(terms) - 1
    cdf = numpy.cumsum(terms[: n + 1], axis=0)
    if ctx.is_float64:  # numbers over points: the first index at which some point's cdf exceeds 1/2 (above it
        # the tails of every point are the backward sums, as accurate as 1 - cdf: positive terms)
        half = cdf > 0.5
        above = numpy.flatnonzero(half if half.ndim == 1 else half.any(axis=1))
    else:
        above = [k for k in range(n + 1) if cdf[k] > 0.5]
    med = int(above[0]) if len(above) else n + 1
    tail = ctx.zeros(n + 1)
    tail2 = ctx.zeros(n + 1)
    if med <= n:
        r = ratio_after
        rem = terms[K] * r / (1 - r)
        rem2 = rem * r / (1 - r)
        suffix = numpy.cumsum(terms[::-1], axis=0)[::-1]  # suffix[i] = sum_{j=i}^{K} t_j
        upper = ctx.zeros(K + 1)  # P(K' > i) for i = 0..K
        upper[:K] = suffix[1:] + rem
        upper[K] = rem
        suffix_t = numpy.cumsum(upper[::-1], axis=0)[::-1]  # sum_{j=i}^{K} P(K' > j)
        idx = slice(med, n + 1)
        tail[idx] = upper[idx]
        tail2[idx] = suffix_t[med + 1:n + 2] + rem2  # K >= n + 1
        tail[:med] = 1 - cdf[:med]
        start = med
    else:
        tail[:] = 1 - cdf
        # E (K - n - 1)^+ = E K - n - 1 + sum_{j<=n} P(K <= j): x - n - 1 dominates (the median is above n)
        tail2[n] = mean - (n + 1) + numpy.sum(cdf, axis=0)
        start = n
    for k in range(start - 1, -1, -1):  # positive backward accumulation
        tail2[k] = tail2[k + 1] + tail[k + 1]
    return ctx.flush(tail), ctx.flush(tail2)


def remainder_ok(ctx, terms, n, r):
    """True when the geometric bound on what lies beyond the last term is below eps/256 of
    t_{n+2} (<= P(K > n + 1) <= both tail_n and tail2_n), or the terms have underflowed."""
    K = len(terms) - 1
    rem = terms[K] * r / (1 - r)
    rem = rem * larger(1, r / (1 - r))  # also bounds the second tail's remainder
    ref = terms[min(n + 2, K)]
    return every((ref == 0) | (terms[K] == 0) | (rem <= ctx.eps / 256 * ref))  # at every point


def _extension(ctx, n, mean, spread):
    """A first guess of how many terms beyond n the backward tail sums need."""
    digits = 17 if ctx.is_float64 else ctx.dps + 5
    c = math.sqrt(2 * digits * math.log(10)) + 2
    need = max(n, float(mean)) + 10 + c * float(spread) + 2 * digits
    if not need <= MAX_COUNT_TERMS:  # also inf and nan: lambda E[period] beyond any table (a one-line refusal)
        raise ValueError(f"the arrivals during one service or vacation period (mean {float(mean):.3g}) would need more "
                         f"than {MAX_COUNT_TERMS:.0e} terms of their count sequence: --service or "
                         "--vacation is too long for the arrival rate --rate / --load")
    return int(need)


def poisson_sequences(ctx, means, weights, n):
    """Count sequences of a Poisson mixture K ~ sum_j w_j Poisson(m_j) (deterministic and empirical times).

    ``means`` and ``weights`` are context numbers (weights summing to 1). Returns
    (beta, tail, tail2) for k = 0..n.
    """
    beta, tail, tail2 = ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1)
    for x, w in zip(means, weights):
        b, t, t2 = _poisson_one(ctx, x, n)
        beta = beta + b * w  # array first: numpy multiplies elementwise (mpf * array would not)
        tail = tail + t * w
        tail2 = tail2 + t2 * w
    return ctx.flush(beta), ctx.flush(tail), ctx.flush(tail2)


def _poisson_one(ctx, x, n):
    # numbers over points: xf the largest mean, the regime the same for all (else declined), r per point
    xs = numpy.asarray(x, dtype=float)
    far = xs > n + 40 * math.sqrt(n + 1) + 100
    if numpy.any(far) and not numpy.all(far):
        raise ArithmeticError("Poisson means on both sides of the table's far regime: computed one by one")
    far, xf = bool(numpy.all(far)), float(numpy.max(xs))
    if far:
        count = n + 2  # the whole range 0..n lies far below the median: 1 - cdf everywhere
    else:
        count = _extension(ctx, n, xf, math.sqrt(xf + 1)) + 1
    while True:
        if xs.ndim and count * xs.size > POINT_TABLE:
            raise ArithmeticError("the count tables of these points together are too long: compute them one by one")
        terms = _poisson_terms(ctx, x, count)
        K = count - 1
        r = (xf if not xs.ndim else xs) / (K + 1)
        if count == n + 2 and far:
            r = 0.5  # unused: no backward sums in this regime
            break
        if every(r < 1) and remainder_ok(ctx, terms, n, r):
            break
        count = 2 * count
    beta = terms[: n + 1].copy()
    tail, tail2 = count_tails(ctx, terms, n, x, r if every(r < 1) else ctx.num(1) / 2)
    return beta, tail, tail2


def negative_binomial_sequences(ctx, shape, p0, q, n):
    """Count sequences of K ~ NegBin(shape a, p0) with q = 1 - p0 given exactly (gamma-family times).

    beta_k = Gamma(k + a)/(Gamma(a) k!) p0^a q^k; E K = a q / p0 (``docs/theory/chapter2.md`` section 3).
    A context with a ``twin()`` (mpmath: gmpy2 numbers at the same precision) runs it there, as the GTH does.
    """
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:  # the same correctly rounded operations on faster numbers (mpmath -> gmpy2)
        with twin:
            args = [x if isinstance(x, int) else twin.from_mp([x])[0] for x in (shape, p0, q)]
            return tuple(twin.to_mp(v) for v in negative_binomial_sequences(twin, *args, n))
    a = shape
    mean = a * q / p0
    fm, fp = numpy.asarray(mean, dtype=float), numpy.asarray(p0, dtype=float)  # numbers over points: the largest
    count = _extension(ctx, n, float(numpy.max(fm)), math.sqrt(float(numpy.max(fm / fp)) + 1)) + 1
    while True:
        if numpy.ndim(p0) and count * numpy.size(p0) > POINT_TABLE:
            raise ArithmeticError("the count tables of these points together are too long: compute them one by one")
        terms = _negbin_terms(ctx, a, p0, q, count)
        K = count - 1
        r = larger(q * (K + a) / (K + 1), q)
        if every(r < 1) and remainder_ok(ctx, terms, n, r):
            break
        count = 2 * count
        if count > 4_000_000:
            # not a rounding problem (more precision cannot help): a refusal
            raise ValueError(f"the count sequence of a gamma-type time (mean {float(mean):.3g} arrivals, shape "
                             f"{float(a):.3g}) needs more than 4e6 terms: its tail decays too slowly to sum")
    beta = terms[: n + 1].copy()
    tail, tail2 = count_tails(ctx, terms, n, mean, r)
    return beta, tail, tail2


def mixture_sequences(ctx, weights, parts, n):
    """The weighted sum of count sequences ``parts`` [(beta, tail, tail2), ...] over 0..n (hyperexponential times)."""
    out = [None, None, None]
    for w, part in zip(weights, parts):
        for i in range(3):
            out[i] = part[i] * w if out[i] is None else out[i] + part[i] * w
    return tuple(out)


def phase_type_sequences(ctx, alpha, T, lam, n):
    """Count sequences of the Poisson(lam) arrivals during a PH(alpha, T) time, without subtraction.

    N = (lam I - T)^{-1} >= 0 by a subtraction-free M-matrix solve (row sums lam + t_i,
    t = exit rates), M = lam N: beta_k = alpha M^k N t, P(K > k) = alpha M^{k+1} 1,
    sum_{i>k} P(K > i) = alpha M^{k+2} (lam m + 1), m = (-T)^{-1} 1.
    """
    m = len(alpha)
    W = ctx.zeros((m, m))
    exits = ctx.zeros(m)
    for i in range(m):
        for j in range(m):
            if i != j:
                W[i, j] = T[i][j]
        exits[i] = -ctx.fsum(list(T[i]))  # exit rate t_i = -sum_j T_ij (exact inputs: no cancellation)
    ones = ctx.array([1] * m)
    # (lam I - T) x = b: off-diagonal part -W, row sums lam + t_i
    rows = exits + lam
    cols = mmatrix_solve(ctx, W, rows, [ctx.eye(m)[:, j].copy() for j in range(m)] + [exits.copy(), ones.copy()])
    N = ctx.zeros((m, m))
    for j in range(m):
        N[:, j] = cols[j]
    v = cols[m]  # N t
    mean_rest = mmatrix_solve(ctx, W, exits, [ones.copy()])[0]  # (-T)^{-1} 1
    M = lam * N
    a = ctx.array(alpha)
    beta, tail, tail2 = ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1)
    row = a
    z = lam * mean_rest + 1
    for k in range(n + 1):
        beta[k] = ctx.dot(row, v)
        nxt = numpy.dot(row, M)
        tail[k] = ctx.fsum(list(nxt))
        tail2[k] = ctx.dot(numpy.dot(nxt, M), z)
        row = nxt
    return ctx.flush(beta), ctx.flush(tail), ctx.flush(tail2)
