"""Customers arriving during one random time: a_n, abar_n, u_n and Ubar_n as positive sums.

With K the batches arriving during a time T (count sequences beta, tail = P(K > k) and
tail2, :mod:`~qderive.numeric.kernels.counts`) and S_k the customers of k batches
(:func:`~qderive.numeric.kernels.batches.convolution_blocks`), for n = 0..N
(``docs/theory/chapter2.md`` section 0)::

    a_n    = sum_{k<=n} beta_k l^{(k)}_n                      (n customers arrive during T)
    abar_n = sum_{1<=k<=n} beta_k P(S_k > n) + P(K > n)        (more than n arrive)
    u_n    = (1/lambda) sum_{k<=n} P(K > k) l^{(k)}_n          (expected time with n arrivals so far)
    Ubar_m = (1/lambda) [ sum_{1<=k<m} P(K > k) P(S_k > m-1) + sum_{k>=m} P(K > k) ],  Ubar_0 = E T.

The rows stop as soon as beta_k and P(K > k) vanish (below the float64 range,
flushed to 0): the remaining k contribute P(K > last) to abar and the second tail to
Ubar, exactly as the terms with S_k > n do.
"""


import numpy


def arrival_counts(ctx, beta, tail, tail2, blocks, lam, mean_time, n):
    """(a, abar, u, ubar), context vectors over 0..n; ``blocks`` yields (k0, L, X): rows k0, k0+1, ... of
    l^{(k)} and X_k(m) = P(S_{k-1} <= m < S_k) (:func:`~qderive.numeric.kernels.batches.convolution_blocks`).

    ``lam`` is the batch rate and ``mean_time`` E T (context numbers). With P(S_k > m) = R(m) + sum_{j=k0}^{k} X_j(m)
    (R = P(S_{k0-1} > .), carried from block to block), a block's rows add
    sum_k beta_k P(S_k > m) = (sum_k beta_k) R(m) + sum_j X_j(m) sum_{k>=j} beta_k (positive suffix sums), and
    the same with P(K > k) for Ubar: two matrix products (``ctx.matmul``) per block, over the columns where
    l^{(k)}_m (m >= k0) and X_k(m) (m >= k0 - 1) can be nonzero. :func:`arrival_counts_of_times` does the
    same for several times at once (one pass over the blocks).
    """
    return arrival_counts_of_times(ctx, [(beta, tail, tail2, mean_time)], blocks, lam, n)[0]


def arrival_counts_of_times(ctx, times, blocks, lam, n):
    """[(a, abar, u, ubar), ...] of :func:`arrival_counts` for several times T_i with the same batches,
    ``times`` = [(beta, tail, tail2, E T), ...] (a service and a vacation): one pass over the blocks, the
    rows of every time stacked in the same two products (each time's rows stop where its beta_k and
    P(K > k) vanish, as alone: the rows after that are exact zeros). Numbers may be arrays over points
    (:class:`~qderive.numeric.kernels.points.Float64Points`: the sequences of ``times`` then carry a last axis over
    the points, the blocks are shared); the rows then stop where they vanish for every point."""
    T = len(times)
    if numpy.all(lam == 0):  # nobody arrives: the whole time is spent with 0 arrivals
        out = []
        for _, _, _, mean_time in times:
            a, abar, u, ubar = ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1), ctx.zeros(n + 1)
            a[0] = ctx.num(1)
            u[0] = mean_time
            ubar[0] = mean_time
            out.append((a, abar, u, ubar))
        return out
    # rows 0..T-1 of AU: a of each time, rows T..2T-1: u (times lambda); BAR likewise abar and Ubar, Ubar
    # shifted by one (BAR[T + i, m - 1] = lambda Ubar_m, m = 1..n: column n of those rows is not used)
    AU, BAR = ctx.zeros((2 * T, n + 1)), ctx.zeros((2 * T, n + 1))
    # the rows that count for each time: k = 1..top, before the first k at which beta_k and P(K > k) both vanish
    tops = []
    for i, (beta, tail, _, _) in enumerate(times):
        AU[i, 0] = beta[0]
        AU[T + i, 0] = tail[0]
        gone = (beta[1: n + 1] == 0) & (tail[1: n + 1] == 0)
        gone = numpy.flatnonzero(gone if gone.ndim == 1 else gone.reshape(n, -1).all(axis=1))  # for every point
        tops.append(int(gone[0]) if len(gone) else n)
    top = max(tops)
    betas = numpy.array([t[0][: top + 1] for t in times] + [t[1][: top + 1] for t in times])
    last = 0
    carried = ctx.zeros(n + 1)  # P(S_{k0-1} > m)
    one = ctx.num(1)
    for k0, L, X in blocks:
        if k0 > top:
            break
        rows = min(len(L), top - k0 + 1)
        V = betas[:, k0: k0 + rows]  # beta_k of each time, then P(K > k) of each time
        S = ctx.zeros((2 * T + 1, rows))
        S[: 2 * T] = numpy.cumsum(V[:, ::-1], axis=1)[:, ::-1]  # sum_{k=j}^{end of block} beta_k, ...
        S[2 * T] = one
        j0 = k0 - 1
        AU[:, k0:] += _product(ctx, V, L[:rows, k0:])
        AX = _product(ctx, S, X[:rows, j0:])
        BAR += carried * S[: 2 * T, :1]
        BAR[:, j0:] += AX[: 2 * T]
        carried[j0:] += AX[2 * T]
        last = k0 + rows - 1
        if rows < len(L):
            break
    out = []
    for i, (beta, tail, tail2, mean_time) in enumerate(times):
        # every k > last has P(S_k > m) = 1 for m <= n (S_k >= k > n, or the column vanished)
        end = min(last, tops[i])
        ubar = ctx.zeros(n + 1)
        ubar[1:] = BAR[T + i, :n] + tail2[end]
        ubar = ubar / lam
        ubar[0] = mean_time
        out.append((ctx.flush(AU[i]), ctx.flush(BAR[i] + tail[end]), ctx.flush(AU[T + i] / lam), ctx.flush(ubar)))
    return out


def _product(ctx, A, B):
    """``ctx.matmul(A, B)``; where ``B`` holds the numbers of the context's twin (blocks made with
    ``twin_numbers``, :func:`~qderive.numeric.kernels.batches.convolution_blocks`), the product runs in the twin on
    them as they are (only ``A`` and the result are converted: the same roundings as ``ctx.matmul``, which converts
    both operands to the twin's numbers first)."""
    twin = ctx.twin() if hasattr(ctx, "twin") and B.size else None
    if twin is None:
        return ctx.matmul(A, B)
    with twin:
        if not isinstance(B.flat[0], type(twin.num(0))):
            return ctx.matmul(A, B)
        return twin.to_mp(twin.matmul(twin.from_mp(A), B))
