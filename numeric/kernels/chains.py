"""Finite chains without subtractions: stationary laws (GTH) and M-matrix solves (hitting times).

Two eliminations, each written once and used by every model and oracle:

* :func:`gth_stationary` -- the Grassmann-Taksar-Heyman elimination: the stationary
  vector of an irreducible chain from its off-diagonal rates or probabilities. The
  diagonal is never read; every operation adds or multiplies nonnegative numbers, so
  every entry, however small, keeps full relative accuracy.
* :func:`mmatrix_solve` -- ``A x = b`` for a nonsingular M-matrix ``A = diag(d) - W``
  (W >= 0) given by its off-diagonal part W and its row sums ``s = A 1 >= 0`` computed
  by the caller as positive sums: the pivots are recomputed as
  ``s_k + sum_{j>k} W_kj`` (Alfa, Xue & Ye 2002, Math. Comp. 71, 217-236), so the
  entrywise relative error is O(n eps) *whatever* the condition number. Mean hitting
  and absorption times (``(I - P_RR) h = c``, ``-Q_RR h = b``), the normal-mode sojourn
  (21) of Sopin 2013 and the phase-type count law all are such solves.

Both skip the zero entries of the eliminated column, so a chain that is skip-free to
the left (M/G/1 type) or an upper Hessenberg block costs O(n^2), not O(n^3).

>>> import numpy as np
>>> from qderive.numeric.kernels.context import FLOAT64
>>> [round(float(v), 12) for v in gth_stationary(FLOAT64, np.array([[0, 1.0], [0.5, 0.5]]))]
[0.333333333333, 0.666666666667]
>>> # h0 = 1 + h1, h1 = 1/3 + 2/3 h0  (rates 0->1: 1, 1->0: 2, 1->target: 1; holding 1 and 1/3)
>>> [float(v) for v in mmatrix_solve(FLOAT64, np.array([[0, 1.0], [2.0, 0]]), np.array([0, 1.0]),
...                                  [np.array([1.0, 1.0])])[0]]
[4.0, 3.0]
"""

import numpy


def gth_stationary(ctx, A):
    """Stationary vector pi (pi P = pi, sum 1) of an irreducible chain; only off-diagonal entries are read.

    ``A`` is a square context matrix (a transition matrix or a generator); it is copied.
    Raises ValueError when a state has no transition to the states before it (reducible).
    """
    A = numpy.array(A, dtype=ctx.dtype, copy=True)
    n = A.shape[0]
    for k in range(n - 1, 0, -1):
        row = A[k, :k]
        down = numpy.flatnonzero(row != 0)
        if down.size == 0:
            raise ValueError(f"the chain is reducible: state {k} has no transition to states 0..{k - 1}")
        total = ctx.fsum(list(row[down]))
        col = A[:k, k] / total
        A[:k, k] = col
        rows = numpy.flatnonzero(col != 0)
        if rows.size:
            A[numpy.ix_(rows, down)] = A[numpy.ix_(rows, down)] + numpy.outer(col[rows], row[down])
    pi = ctx.zeros(n)
    pi[0] = ctx.num(1)
    for k in range(1, n):
        pi[k] = ctx.dot(pi[:k], A[:k, k])
    return pi / ctx.fsum(list(pi))


def mmatrix_solve(ctx, W, s, rhs):
    """Solve ``(diag(d) - W) x = b`` for each ``b`` in ``rhs`` (lists of vectors >= 0), subtraction-free.

    ``W``: m x m off-diagonal part (>= 0; its diagonal is ignored), ``s``: the row sums of the
    matrix (>= 0), so ``d_i = s_i + sum_{j != i} W_ij``. Returns the list of solutions
    (entrywise >= 0). Raises ValueError when the matrix is singular (a class of states with
    no exit). Elimination of row k: for every later row i with W_ik > 0, f = W_ik / d_k,
    W_ij += f W_kj (j > k), s_i += f s_k, b_i += f b_k; back substitution
    x_k = (b_k + sum_{j>k} W_kj x_j) / d_k with d_k = s_k + sum_{j>k} W_kj.
    """
    W = numpy.array(W, dtype=ctx.dtype, copy=True)
    m = W.shape[0]
    for i in range(m):
        W[i, i] = ctx.num(0)
    s = numpy.array(s, dtype=ctx.dtype, copy=True)
    B = [numpy.array(b, dtype=ctx.dtype, copy=True) for b in rhs]
    d = ctx.zeros(m)
    for k in range(m):
        upper = W[k, k + 1:]
        nz = numpy.flatnonzero(upper != 0)
        d[k] = s[k] + (ctx.fsum(list(upper[nz])) if nz.size else 0)
        if d[k] == 0:
            raise ValueError(f"singular M-matrix: state {k} has no exit (its mean time is infinite)")
        below = numpy.flatnonzero(W[k + 1:, k] != 0) + k + 1
        if below.size == 0:
            continue
        f = W[below, k] / d[k]
        if nz.size:
            cols = nz + k + 1
            W[numpy.ix_(below, cols)] = W[numpy.ix_(below, cols)] + numpy.outer(f, upper[nz])
        s[below] = s[below] + f * s[k]
        for b in B:
            b[below] = b[below] + f * b[k]
    out = []
    for b in B:
        x = ctx.zeros(m)
        for k in range(m - 1, -1, -1):
            acc = b[k] + (ctx.dot(W[k, k + 1:], x[k + 1:]) if k + 1 < m else 0)
            x[k] = acc / d[k]
        out.append(x)
    return out


def hitting_costs(ctx, P, targets, costs):
    """Expected accumulated cost until the chain first enters ``targets``, from every other state.

    ``P``: transition probabilities (DTMC, costs = mean step costs) or rates (CTMC, costs =
    reward rates: the result is then the mean accumulated reward, with holding times
    1/(total rate) implicit); ``targets``: state indices. Returns a full-length vector (0 on
    the targets). The row sums of ``I - P_RR`` (or ``-Q_RR``) are the one-step
    probabilities (rates) into the targets, summed as positive terms.
    """
    P = numpy.asarray(P)
    n = P.shape[0]
    tset = set(int(t) for t in targets)
    rest = [i for i in range(n) if i not in tset]
    tl = sorted(tset)
    W = P[numpy.ix_(rest, rest)].copy() if rest else ctx.zeros((0, 0))
    into = ctx.array([ctx.fsum(list(P[i, tl])) for i in rest]) if tl else ctx.zeros(len(rest))
    c = ctx.array([costs[i] for i in rest])
    h = mmatrix_solve(ctx, W, into, [c])[0] if rest else ctx.zeros(0)
    out = ctx.zeros(n)
    for a, i in enumerate(rest):
        out[i] = h[a]
    return out
