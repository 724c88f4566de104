"""Customers arriving during one random time: a_n, abar_n, u_n and Ubar_n as positive sums.

With K the batches arriving during a time T (count sequences beta, tail = P(K > k) and
tail2, :mod:`~qderive.numeric.kernels.counts`) and S_k the customers of k batches
(:func:`~qderive.numeric.kernels.batches.convolution_columns`), for n = 0..N
(``docs/theory/chapter2.md`` section 0)::

    a_n    = sum_{k<=n} beta_k l^{(k)}_n                      (n customers arrive during T)
    abar_n = sum_{1<=k<=n} beta_k P(S_k > n) + P(K > n)        (more than n arrive)
    u_n    = (1/lambda) sum_{k<=n} P(K > k) l^{(k)}_n          (expected time with n arrivals so far)
    Ubar_m = (1/lambda) [ sum_{1<=k<m} P(K > k) P(S_k > m-1) + sum_{k>=m} P(K > k) ],  Ubar_0 = E T.

The column loop stops as soon as beta_k and P(K > k) vanish (below the float64 range,
flushed to 0): the remaining k contribute P(K > last) to abar and the second tail to
Ubar, exactly as the terms with S_k > n do.
"""


import numpy


def arrival_counts(ctx, beta, tail, tail2, columns, lam, mean_time, n):
    """(a, abar, u, ubar), context vectors over 0..n; ``columns`` yields (k, l^{(k)}, P(S_k > .)).

    ``lam`` is the batch rate and ``mean_time`` E T (context numbers).
    """
    a, abar, u, ubar = ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1)
    if lam == 0:  # nobody arrives: the whole time is spent with 0 arrivals
        a[0] = ctx.num(1)
        u[0] = mean_time
        ubar[0] = mean_time
        return a, abar, u, ubar
    a[0] = beta[0]
    u[0] = tail[0]
    last = 0
    if ctx.is_float64:
        last = _accumulate_blocks(beta, tail, columns, n, a, abar, u, ubar)
    else:
        for k, col, T in columns:
            if k > n or (beta[k] == 0 and tail[k] == 0):
                break
            last = k
            # l^{(k)}_m = 0 and P(S_k > m) = 1 for m < k (k batches hold at least k customers): only m >= k
            # varies; the constant parts are added once below, so column k costs n - k operations, not n
            a[k:] = a[k:] + col[k:] * beta[k]
            abar[k:] = abar[k:] + T[k:] * beta[k]
            u[k:] = u[k:] + col[k:] * tail[k]
            ubar[k + 1:] = ubar[k + 1:] + T[k:n] * tail[k]
        if last:
            # abar_m += sum_{m < k <= last} beta_k (T_k(m) = 1) and Ubar_m += sum_{m <= k <= last} tau_k
            # (1 <= m <= last), as backward sums of positive terms
            abar[:last] = abar[:last] + numpy.cumsum(beta[last:0:-1])[::-1]
            ubar[1:last + 1] = ubar[1:last + 1] + numpy.cumsum(tail[last:0:-1])[::-1]
    # every k > last has P(S_k > m) = 1 for m <= n (S_k >= k > n, or the column vanished)
    abar = abar + tail[last]
    ubar[1:] = ubar[1:] + tail2[last]
    u = u / lam
    ubar = ubar / lam
    ubar[0] = mean_time
    return ctx.flush(a), ctx.flush(abar), ctx.flush(u), ctx.flush(ubar)


def _accumulate_blocks(beta, tail, columns, n, a, abar, u, ubar):
    """float64: the column sums of :func:`arrival_counts` as one product per block of columns
    (positive terms; the same sums as the column-by-column loop, with up to 64 times fewer numpy
    calls; a block holds at most 10^6 numbers, 8 MB, whatever n)."""
    block = max(1, min(64, 1_000_000 // (n + 1)))
    cols, tails, ks = [], [], []
    last = 0

    def add():
        if not ks:
            return
        C, T = numpy.array(cols), numpy.array(tails)
        b, t = beta[ks], tail[ks]
        a[:] += numpy.einsum("k,km->m", b, C)
        abar[:] += numpy.einsum("k,km->m", b, T)
        u[:] += numpy.einsum("k,km->m", t, C)
        ubar[1:] += numpy.einsum("k,km->m", t, T[:, :-1])
        cols.clear()
        tails.clear()
        ks.clear()

    for k, col, T in columns:
        if k > n or (beta[k] == 0 and tail[k] == 0):
            break
        last = k
        cols.append(col)
        tails.append(T)
        ks.append(k)
        if len(ks) == block:
            add()
    add()
    return last
