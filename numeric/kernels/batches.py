"""Batch-size vectors and k-fold convolution columns, as positive terms.

For a batch law X on {1, 2, ...} and n >= 0: ``pmf[i] = P(X = i)`` (pmf[0] = 0),
``tail[i] = P(X > i)``, ``excess[m] = E (X - m)^+ = sum_{i>=m} P(X > i)`` for i, m = 0..n
(``docs/theory/chapter2.md`` sections 0 and 3). :func:`convolution_columns` yields, for
k = 1, 2, ..., the k-fold convolution ``l^{(k)}_m = P(S_k = m)`` and ``P(S_k > m)`` for
m = 0..n by recurrences without subtraction (Pascal's rule for geometric batches,
shifted copies for the others). Every excess comes from this one module.
"""

import numpy

from .counts import poisson_sequences


def geometric_vectors(ctx, p, q, n):
    """Geometric batches on {1, 2, ...}, P(X = i) = p q^{i-1} (q = 1 - p given exactly).

    tail_i = q^i, excess_m = q^m / p (``docs/theory/chapter2.md`` section 3).
    """
    powers = _powers(ctx, q, n + 2)
    pmf = ctx.zeros(n + 1)
    pmf[1:] = powers[: n] * p  # array first: mpf * array would try to convert the array
    tail = powers[: n + 1].copy()
    excess = powers[: n + 1] / p
    return pmf, tail, excess


def finite_vectors(ctx, sizes, probs, n):
    """A law on finitely many sizes (``sizes`` ascending, ``probs`` context numbers summing to 1).

    tail_i = sum_{s > i} p_s and excess_m = sum_{s > m} (s - m) p_s, both positive sums.
    """
    pmf, tail, excess = ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1)
    for s, p in zip(sizes, probs):
        if s <= n:
            pmf[s] = pmf[s] + p
        top = min(s, n + 1)
        tail[:top] = tail[:top] + p
        if top:
            excess[:top] = excess[:top] + (s - ctx.arange(top)) * p
    return pmf, tail, excess


def shifted_poisson_vectors(ctx, nu, mean, n):
    """X = 1 + Y, Y ~ Poisson(nu): P(X = i) = P(Y = i - 1), P(X > i) = P(Y > i - 1),
    excess_0 = E X, excess_m = P(Y > m - 1) + sum_{j > m-1} P(Y > j) (m >= 1)."""
    pmf, tail, excess = ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1)
    tail[0] = ctx.num(1)
    excess[0] = mean
    if n == 0:
        return pmf, tail, excess
    beta, ytail, ytail2 = poisson_sequences(ctx, [nu], [ctx.num(1)], n - 1)
    pmf[1:] = beta
    tail[1:] = ytail
    excess[1:] = ytail + ytail2
    return pmf, tail, excess


def _shift(ctx, v, by):
    out = ctx.zeros(len(v))
    if by < len(v):
        out[by:] = v[: len(v) - by]
    return out


def convolution_columns(ctx, pmf, tail, n, geometric=None):
    """Yield ``(k, l^{(k)}, T_k)`` for k = 1, 2, ...: vectors over m = 0..n with T_k(m) = P(S_k > m).

    The rows of :func:`convolution_blocks`, one k at a time, with T_k = sum_{j<=k} X_j (exactly 1 for m < k).
    """
    return block_columns(ctx, convolution_blocks(ctx, pmf, tail, n, geometric), n)


def block_columns(ctx, blocks, n):
    """The rows of :func:`convolution_blocks` as ``(k, l^{(k)}, T_k)``, T_k = sum_{j<=k} X_j (1 for m < k)."""
    T = ctx.zeros(n + 1)
    one = ctx.num(1)
    for k0, L, X in blocks:
        for i in range(len(L)):
            T = T + X[i]
            T[: k0 + i] = one
            yield k0 + i, L[i], T


def convolution_blocks(ctx, pmf, tail, n, geometric=None, first=32, twin_numbers=False, start=None):
    """Yield blocks ``(k0, L, X)``: ``L[i, m] = l^{(k)}_m = P(S_k = m)`` and ``X[i, m] = P(S_{k-1} <= m < S_k)``
    (the k-th batch crosses m), k = k0 + i, m = 0..n, for k = 1, 2, ... (k0 = 1 first; the blocks grow
    from ``first`` rows, at most 2^18 numbers). P(S_k > m) = sum_{j<=k} X_j(m).

    Generic recurrences with positive terms: l^{(k)} = l * l^{(k-1)} and X_k = l^{(k-1)} * lbar.
    ``geometric = (p, q)`` uses Pascal's rule instead, l^{(k+1)}_m = l^{(k)}_{m-1} p (m - 1)/k, and
    X_k(m) = l^{(k)}_{m+1} / p (memoryless batches): along a diagonal m - k = d the factors of a whole
    block are one cumulative product (one numpy call, not one per k). Stops after k = n or when a
    column vanishes; in float64 an entry below the normal range is 0, and so is everything after it
    on its diagonal (the column recurrence that flushes subnormals gives the same zeros).

    ``twin_numbers`` (geometric batches, a context with a ``twin()``): the blocks are computed and yielded as the
    twin's numbers (the same correctly rounded operations at the same precision, so the same values, at about ten
    times mpmath's speed), for a consumer that multiplies them in the twin
    (:func:`~qderive.numeric.kernels.arrivals.arrival_counts_of_times`; at r = 2000 and 50 digits the mpmath blocks
    and their conversion for each product took two thirds of the finite room's time). ``start``: the first column
    l^{(1)}_m, m = 0..n+1, of geometric batches, when given (the twin's, converted once).
    """
    cap = max(1, (1 << 18) // (n + 2))
    rows = min(first, cap)
    twin = ctx.twin() if twin_numbers and geometric is not None and hasattr(ctx, "twin") else None
    if twin is not None:
        p, q = geometric
        col = ctx.zeros(n + 2)
        col[1:] = _powers(ctx, q, n + 1) * p
        with twin:
            col, geometric = twin.from_mp(col), tuple(twin.from_mp(numpy.array([p, q], dtype=object)))
        blocks = convolution_blocks(twin, None, None, n, geometric, first, start=col)
        while True:
            with twin:  # each block computed inside the twin's precision, yielded outside it
                block = next(blocks, None)
            if block is None:
                return
            yield block
    if geometric is not None:
        p, q = geometric
        col = start
        if col is None:
            col = ctx.zeros(n + 2)  # l^{(k)}_m for m = 0..n+1
            col[1:] = _powers(ctx, q, n + 1) * p
        k = 1
        top = max(n, 1)
        while k <= top:
            b = min(rows, top - k + 1)  # rows k .. k+b-1, and the column k+b that starts the next block
            w = n + 2 - k  # l^{(k+i)}_m = 0 for m < k: only m = k..n+1 is computed
            W = w + b
            # diagonal coordinates, d = m - i stored at column b + d - k (b zero columns in front):
            # G[i, d] = (d + i - 1) p / (k + i - 1), i >= 1, the step from l^{(k+i-1)}_{d+i-1} to l^{(k+i)}_{d+i}
            G = ctx.zeros((b + 1, W))
            G[0, b:] = col[k:]
            if ctx.is_float64:
                i_f = numpy.arange(1.0, b + 1)[:, None]
                G[1:, b:] = (numpy.arange(k, n + 2.0)[None, :] + (i_f - 1)) * (p / (i_f + (k - 1)))
            else:
                i_c = ctx.arange(b + 1)[1:, None]
                G[1:, b:] = (ctx.arange(n + 2)[None, k:] + (i_c - 1)) * numpy.divide(p, i_c + (k - 1))
            D = numpy.cumprod(G, axis=0)  # D[i, b + d - k] = l^{(k+i)}_{d+i}
            if ctx.is_float64 and numpy.any((D < ctx.tiny) & (D > 0)):
                D[numpy.logical_or.accumulate(D < ctx.tiny, axis=0)] = 0.0
            # L[i, m] = D[i, b + m - i - k]: a strided view of D (row step W - 1; m < k + i reads zeros)
            L = ctx.zeros((b + 1, n + 2))
            L[:, k:] = numpy.lib.stride_tricks.as_strided(D.reshape(-1)[b:], shape=(b + 1, w), strides=((W - 1) * D.itemsize, D.itemsize))
            X = ctx.zeros((b, n + 1))
            X[:, k - 1:] = L[:b, k:] / p  # X_k(m) = 0 for m < k - 1
            L.flags.writeable = X.flags.writeable = False  # callers keep (cache) the blocks
            yield k, L[:b, : n + 1], X
            col = L[b]
            k += b
            rows = min(2 * rows, cap)
        return
    support = [i for i in range(1, n + 1) if pmf[i] != 0]
    tail_support = [j for j in range(n + 1) if tail[j] != 0]
    prev = ctx.zeros(n + 1)
    prev[0] = ctx.num(1)
    k = 0
    done = False
    while not done:
        k0, cols, crossings = k + 1, [], []
        while len(cols) < rows:
            k += 1
            cross = ctx.zeros(n + 1)
            for j in tail_support:
                cross = cross + _shift(ctx, prev, j) * tail[j]
            col = ctx.zeros(n + 1)
            for i in support:
                col = col + _shift(ctx, prev, i) * pmf[i]
            col = ctx.flush(col)
            cols.append(col)
            crossings.append(cross)
            if k >= n or not numpy.any(col != 0):
                done = True
                break
            prev = col
        L, X = ctx.zeros((len(cols), n + 1)), ctx.zeros((len(cols), n + 1))
        for i in range(len(cols)):
            L[i], X[i] = cols[i], crossings[i]
        L.flags.writeable = X.flags.writeable = False  # callers keep (cache) the blocks
        yield k0, L, X
        rows = min(2 * rows, cap)


def _powers(ctx, q, count):
    out = ctx.zeros(count)
    out[0] = ctx.num(1)
    out[1:] = q
    out = numpy.cumprod(out)  # q^i = q^{i-1} q, one rounding per step as in a loop
    if ctx.is_float64:
        # a power that falls below the normal range is 0, and so is every later one (as the loop's flush)
        small = numpy.flatnonzero(out < ctx.tiny)
        if len(small):
            out[small[0]:] = 0.0
    return out
