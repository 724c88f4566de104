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
    powers = ctx.zeros(n + 2)
    powers[0] = ctx.num(1)
    for i in range(1, n + 2):
        powers[i] = powers[i - 1] * q
    powers = ctx.flush(powers)
    pmf = ctx.zeros(n + 1)
    pmf[1:] = p * powers[: n]
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
            excess[:top] = excess[:top] + p * (s - ctx.arange(top))
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

    Generic recurrences with positive terms: l^{(k)} = l * l^{(k-1)} and
    T_k = T_{k-1} + l^{(k-1)} * lbar (the k-th batch crosses m). ``geometric = (p, q)``
    uses Pascal's rule instead, O(n) per k: l^{(k+1)}_m = l^{(k)}_{m-1} p (m - 1)/k and
    T_k(m) = T_{k-1}(m) + l^{(k)}_{m+1} / p. Stops after k = n or when the column vanishes.
    """
    if geometric is not None:
        p, q = geometric
        col = ctx.zeros(n + 2)  # l^{(k)}_m for m = 0..n+1
        col[1:] = p * _powers(ctx, q, n + 1)
        T = ctx.zeros(n + 1)
        factors = ctx.arange(n + 2) - 1
        k = 1
        while True:
            # T_k(m) = T_{k-1}(m) + l^{(k)}_{m+1} / p, and l^{(k)}_{m+1} = 0 for m < k - 1
            T = T.copy()  # yielded columns are kept (cached) by callers: never update them in place
            T[k - 1:] = T[k - 1:] + col[k: n + 2] / p
            yield k, col[: n + 1], T
            if k >= n:
                return
            new = ctx.zeros(n + 2)
            new[k + 1:] = col[k: n + 1] * factors[k + 1:]
            new[k + 1:] = new[k + 1:] * (p / k)
            # the column is unimodal in m: if neither end is below the normal range, no entry is
            if ctx.is_float64 and (new[k + 1] < ctx.tiny or new[n + 1] < ctx.tiny):
                ctx.flush(new)
            col = new
            k += 1
    support = [i for i in range(1, n + 1) if pmf[i] != 0]
    tail_support = [j for j in range(n + 1) if tail[j] != 0]
    prev = ctx.zeros(n + 1)
    prev[0] = ctx.num(1)
    T = ctx.zeros(n + 1)
    k = 0
    while True:
        k += 1
        cross = ctx.zeros(n + 1)
        for j in tail_support:
            cross = cross + _shift(ctx, prev, j) * tail[j]
        T = T + cross
        col = ctx.zeros(n + 1)
        for i in support:
            col = col + _shift(ctx, prev, i) * pmf[i]
        col = ctx.flush(col)
        yield k, col, T
        if k >= n or not numpy.any(col != 0):
            return
        prev = col


def _powers(ctx, q, count):
    out = ctx.zeros(count)
    out[0] = ctx.num(1)
    for i in range(1, count):
        out[i] = out[i - 1] * q
    return ctx.flush(out)
