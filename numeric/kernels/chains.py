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


def _span(v):
    """(positions of the nonzero entries of a vector, first, last + 1, whether they fill [first, last + 1))."""
    nz = v.nonzero()[0]
    if nz.size == 0:
        return nz, 0, 0, True
    lo, hi = int(nz[0]), int(nz[-1]) + 1
    return nz, lo, hi, hi - lo == nz.size


def _runs(nz):
    """The maximal runs ``(lo, hi)`` of consecutive positions in a sorted index vector (None if more than 8)."""
    if nz.size <= 16:
        runs, prev = [], -2
        for i in nz.tolist():
            if i != prev + 1:
                if len(runs) == 8:
                    return None
                runs.append([i, i + 1])
            else:
                runs[-1][1] = i + 1
            prev = i
        return runs
    cut = (numpy.diff(nz) != 1).nonzero()[0] + 1
    if cut.size >= 8:
        return None
    bounds = [0, *cut.tolist(), nz.size]
    return [(int(nz[a]), int(nz[b - 1]) + 1) for a, b in zip(bounds[:-1], bounds[1:])]


def _rank1_add(ctx, M, r0, rspan, c0, cspan, u, v):
    """``M[r0 + i, c0 + j] += u_i v_j`` over the nonzero positions i, j of two :func:`_span` results.

    ``u`` and ``v`` are the factors over the bounding ranges (zeros between the positions
    allowed). Contiguous positions (skip-free and Hessenberg chains) are one slice, updated in
    place; in float64 so is a scattered set whose bounding box is at most 4 times larger (adding
    u_i v_j = 0 changes no entry); otherwise a few runs of consecutive positions are a few slices,
    and only beyond 8 blocks ``numpy.ix_`` takes the nonzero pairs (object arrays never multiply
    the zeros between the runs).
    """
    rows, rlo, rhi, rdense = rspan
    cols, clo, chi, cdense = cspan
    if (rdense and cdense) or (ctx.is_float64 and (rhi - rlo) * (chi - clo) <= 4 * rows.size * cols.size):
        block = M[r0 + rlo: r0 + rhi, c0 + clo: c0 + chi]
        block += u[:, None] * v[None, :]
        return
    rr = [(rlo, rhi)] if rdense else _runs(rows)
    cr = [(clo, chi)] if cdense else _runs(cols)
    if rr is not None and cr is not None and len(rr) * len(cr) <= 8:
        for a, b in rr:
            ua = u[a - rlo: b - rlo, None]
            for c, d in cr:
                block = M[r0 + a: r0 + b, c0 + c: c0 + d]
                block += ua * v[None, c - clo: d - clo]
        return
    ix = numpy.ix_(rows + r0, cols + c0)
    M[ix] = M[ix] + numpy.outer(u[rows - rlo], v[cols - clo])


def gth_stationary(ctx, A):
    """Stationary vector pi (pi P = pi, sum 1) of an irreducible chain; only off-diagonal entries are read.

    ``A`` is a square context matrix (a transition matrix or a generator); it is copied.
    Raises ValueError when a state has no transition to the states before it (reducible).

    The last state is eliminated first, so what remains is always the leading block ``A[:k, :k]``;
    the rank-one update touches only the bounding ranges of the nonzero entries of the pivot row
    and column (slices, in place), so a chain skip-free to the left costs O(n^2). A context with a
    ``twin()`` (mpmath: gmpy2 numbers at the same precision) runs the elimination in it.
    """
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:  # the same correctly rounded arithmetic on faster numbers (mpmath -> gmpy2)
        with twin:
            return twin.to_mp(gth_stationary(twin, twin.from_mp(A)))
    A = numpy.array(A, dtype=ctx.dtype, copy=True)
    gth_eliminate(ctx, A, A.shape[0] - 1)
    return gth_back_substitute(ctx, A)


def gth_eliminate(ctx, A, start, stop=1):
    """The GTH elimination of states ``start``, ``start - 1``, ..., ``stop`` of ``A``, in place (the steps of
    :func:`gth_stationary`; states after ``start`` eliminated already, or absent). Each step touches only the
    entries of the leading block and the eliminated state's column, entry by entry the same operations whatever
    the other states: a chain that shares the states and transitions of another beyond some state may resume from
    a copy of the other's eliminated block (the threshold grid of the hysteretic model)."""
    for k in range(start, stop - 1, -1):
        row = A[k, :k]
        dspan = _span(row)
        down, d0, d1, ddense = dspan
        if down.size == 0:
            raise ValueError(f"the chain is reducible: state {k} has no transition to states 0..{k - 1}")
        total = ctx.fsum((row[d0:d1] if ddense else row[down]).tolist())
        col = A[:k, k]
        rspan = _span(col)
        if rspan[0].size:
            r0, r1 = rspan[1], rspan[2]
            col[r0:r1] /= total
            _rank1_add(ctx, A, 0, rspan, 0, dspan, col[r0:r1], row[d0:d1])


def gth_back_substitute(ctx, A):
    """pi of :func:`gth_stationary` from the eliminated matrix ``A`` (every state but the first eliminated)."""
    n = A.shape[0]
    pi = ctx.zeros(n)
    pi[0] = ctx.num(1)
    for k in range(1, n):
        pi[k] = ctx.dot(pi[:k], A[:k, k])
    return pi / ctx.fsum(pi.tolist())


def mmatrix_solve(ctx, W, s, rhs):
    """Solve ``(diag(d) - W) x = b`` for each ``b`` in ``rhs`` (lists of vectors >= 0), subtraction-free.

    ``W``: m x m off-diagonal part (>= 0; its diagonal is ignored), ``s``: the row sums of the
    matrix (>= 0), so ``d_i = s_i + sum_{j != i} W_ij``. Returns the list of solutions
    (entrywise >= 0). Raises ValueError when the matrix is singular (a class of states with
    no exit). Elimination of row k: for every later row i with W_ik > 0, f = W_ik / d_k,
    W_ij += f W_kj (j > k), s_i += f s_k, b_i += f b_k; back substitution
    x_k = (b_k + sum_{j>k} W_kj x_j) / d_k with d_k = s_k + sum_{j>k} W_kj. What remains after
    step k is the trailing block ``W[k+1:, k+1:]``; the updates touch only the bounding ranges
    of the nonzero entries (slices, in place; s and the b's are the columns of one array ``sb``),
    so an upper Hessenberg matrix costs O(m^2). A context with a ``twin()`` runs it there (as GTH).
    """
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None and len(W):  # the same correctly rounded arithmetic on faster numbers (mpmath -> gmpy2)
        with twin:
            out = mmatrix_solve(twin, twin.from_mp(W), twin.from_mp(s), [twin.from_mp(b) for b in rhs])
            return [twin.to_mp(x) for x in out]
    W = numpy.array(W, dtype=ctx.dtype, copy=True)
    m = W.shape[0]
    for i in range(m):
        W[i, i] = ctx.num(0)
    sb = numpy.empty((m, 1 + len(rhs)), dtype=ctx.dtype)
    sb[:, 0] = s
    for j, b in enumerate(rhs):
        sb[:, 1 + j] = b
    d = ctx.zeros(m)
    for k in range(m):
        upper = W[k, k + 1:]
        uspan = _span(upper)
        nz, u0, u1, udense = uspan
        d[k] = sb[k, 0] + (ctx.fsum((upper[u0:u1] if udense else upper[nz]).tolist()) if nz.size else 0)
        if d[k] == 0:
            raise ValueError(f"singular M-matrix: state {k} has no exit (its mean time is infinite)")
        bspan = _span(W[k + 1:, k])
        below, b0, b1, bdense = bspan
        if below.size == 0:
            continue
        f = W[k + 1 + b0: k + 1 + b1, k] / d[k]  # over the bounding range (0 between the positions)
        if nz.size:
            _rank1_add(ctx, W, k + 1, bspan, k + 1, uspan, f, upper[u0:u1])
        if bdense or ctx.is_float64:
            rs = sb[k + 1 + b0: k + 1 + b1]
            rs += f[:, None] * sb[None, k]
        else:
            rs = below + (k + 1)
            sb[rs] = sb[rs] + f[below - b0, None] * sb[None, k]
    out = []
    for j in range(len(rhs)):
        b = sb[:, 1 + j]
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
    into = ctx.array([ctx.fsum(P[i, tl].tolist()) for i in rest]) if tl else ctx.zeros(len(rest))
    c = ctx.array([costs[i] for i in rest])
    h = mmatrix_solve(ctx, W, into, [c])[0] if rest else ctx.zeros(0)
    out = ctx.zeros(n)
    for a, i in enumerate(rest):
        out[i] = h[a]
    return out
