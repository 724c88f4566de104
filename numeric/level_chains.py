"""Subtraction-free solvers for CTMCs whose transitions move between adjacent levels.

Two tools used by the two-class models (``numeric/two_flow.py``,
``numeric/two_flow_hysteretic.py``):

* :func:`absorption_times_gth`: expected accumulated reward until a CTMC enters a
  target set, ``(-Q_OO) h = b``, by GTH-style elimination: the diagonal of
  ``-Q_OO`` is never used, the pivot is recomputed as a sum of positive rates
  (off-diagonal rates still present plus the accumulated rate into the targets),
  so every ``h`` keeps full relative accuracy. Dense, float64 or mpmath.
* :func:`solve_level_m_matrix`: ``(diag(d) - W) x = b`` for a large sparse
  nonsingular M-matrix whose off-diagonal part ``W >= 0`` connects only adjacent
  levels (the count n of a queue). GMRES (scipy) preconditioned by one
  symmetric Gauss-Seidel sweep in level order (the diagonal blocks are diagonal,
  so each sweep is a handful of sparse products per level), then polished by
  Gauss-Seidel sweeps ``x_i = (b_i + sum_j W_ij x_j) / d_i`` which add positive
  terms only. Float64. Convergence is checked: a residual above the tolerance
  raises, it is never returned silently.

>>> import sympy as sp
>>> from qderive.numeric.backend import mp_backend
>>> bk = mp_backend(20)
>>> # 0 -> 1 at rate 1, 1 -> 0 at rate 2, 1 -> target at rate 1: h0 = 1 + h1, h1 = 1/3 + 2/3 h0
>>> with bk:
...     h = absorption_times_gth([[0, 1], [2, 0]], [0, 1], [1, 1], bk)
>>> [str(v) for v in h]
['4.0', '3.0']
"""

from __future__ import annotations

import numpy as np

from .backend import Backend

__all__ = ["absorption_times_gth", "solve_level_m_matrix", "ConvergenceError"]


class ConvergenceError(RuntimeError):
    """An iterative solve did not reach its tolerance."""


def absorption_times_gth(off, exit_rates, rewards, bk: Backend) -> np.ndarray:
    """Mean accumulated reward until absorption: ``q_i h_i = b_i + sum_j W_ij h_j``, ``q_i = sum_j W_ij + e_i``.

    ``off[i][j]`` = W_ij >= 0 (transition rates among the transient states; the
    diagonal is ignored), ``exit_rates[i]`` = e_i >= 0 (rate into the targets),
    ``rewards[i]`` = b_i (1 for every state gives mean first-passage times).

    Elimination of the last state k (GTH for absorbing chains): with
    ``S_k = sum_{j<k} W_kj + e_k`` (no subtraction),
    ``W_ij += W_ik W_kj / S_k``, ``e_i += W_ik e_k / S_k``, ``b_i += W_ik b_k / S_k``
    for i, j < k; back substitution ``h_k = (b_k + sum_{j<k} W_kj h_j) / S_k``.
    The invariant ``q_i = sum_{j != i} W_ij + e_i`` is kept exactly, so self-loops
    created by the elimination never enter a pivot. Call inside ``with bk:``.
    """
    conv = (lambda v: v) if isinstance(off, np.ndarray) else bk.num
    m = len(exit_rates)
    dtype = np.float64 if bk.is_float64 else object
    W = np.empty((m, m), dtype=dtype)
    if isinstance(off, np.ndarray):
        W[:, :] = off
    else:
        for i, row in enumerate(off):
            for j, v in enumerate(row):
                W[i, j] = conv(v)
    e = bk.array([_as_num(v, bk) for v in exit_rates])
    b = bk.array([_as_num(v, bk) for v in rewards])
    S = bk.zeros(m)
    for k in range(m - 1, -1, -1):
        S[k] = bk.fsum(W[k, :k]) + e[k] if k else e[k]
        if S[k] == 0:
            raise ValueError(f"state {k} cannot reach the target set: its mean absorption time is infinite")
        f = W[:k, k] / S[k]
        cols = np.flatnonzero(W[k, :k] != 0)  # only the nonzero part of row k changes anything
        if len(cols) * 4 < k:
            W[:k, cols] = W[:k, cols] + np.outer(f, W[k, cols])
        else:
            W[:k, :k] = W[:k, :k] + np.outer(f, W[k, :k])
        e[:k] = e[:k] + f * e[k]
        b[:k] = b[:k] + f * b[k]
    h = bk.zeros(m)
    for k in range(m):
        h[k] = (b[k] + (bk.dot(W[k, :k], h[:k]) if k else 0)) / S[k]
    return h


def _as_num(v, bk: Backend):
    if bk.is_float64:
        return float(v)
    import mpmath

    return v if isinstance(v, mpmath.mpf) else bk.num(v)


def solve_level_m_matrix(W, d, level, b, *, rtol: float = 1e-13, polish: int = 8, maxiter: int = 40) -> np.ndarray:
    """Solve ``(diag(d) - W) x = b`` (float64) where ``W >= 0`` links only states of adjacent levels.

    ``W`` is a scipy sparse matrix, ``d > 0`` with ``d_i >= sum_j W_ij`` (a
    nonsingular M-matrix: every state leaks, directly or not), ``level`` an integer
    per state, ``b >= 0``. GMRES(100) with a symmetric Gauss-Seidel preconditioner
    in level order, restarted up to ``maxiter`` times; then ``polish`` symmetric
    Gauss-Seidel sweeps (positive terms only). Raises :class:`ConvergenceError`
    when the relative residual stays above ``rtol``.
    """
    import scipy.sparse as sps
    from scipy.sparse.linalg import LinearOperator, gmres

    n = len(d)
    order = np.argsort(level, kind="stable")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    lev = np.asarray(level)[order]
    Wp = sps.csr_matrix(W)[order][:, order].tocsr()
    dp = np.asarray(d, dtype=np.float64)[order]
    bp = np.asarray(b, dtype=np.float64)[order]
    levels = np.unique(lev)
    bounds = np.searchsorted(lev, np.append(levels, levels[-1] + 1))
    nl = len(levels)
    blocks = [(Wp[bounds[k]:bounds[k + 1]], bounds[k], bounds[k + 1]) for k in range(nl)]
    lower = [Wp[bounds[k]:bounds[k + 1], bounds[k - 1]:bounds[k]] if k else None for k in range(nl)]
    upper = [Wp[bounds[k]:bounds[k + 1], bounds[k + 1]:bounds[k + 2]] if k < nl - 1 else None for k in range(nl)]
    # only adjacent-level links are allowed (the diagonal blocks must be diagonal)
    for k, (row, a, c) in enumerate(blocks):
        inside = row[:, a:c]
        far_low = row[:, :bounds[k - 1]] if k else None
        far_up = row[:, bounds[k + 2]:] if k < nl - 1 else None
        if inside.nnz or (far_low is not None and far_low.nnz) or (far_up is not None and far_up.nnz):
            raise ValueError("solve_level_m_matrix: W must link adjacent levels only")

    def forward(r, x):
        """x_k = (r_k + L_k x_{k-1}(new) + U_k x_{k+1}(old)) / d_k, level by level upwards."""
        for k in range(nl):
            a, c = bounds[k], bounds[k + 1]
            t = r[a:c].copy()
            if k:
                t += lower[k] @ x[bounds[k - 1]:a]
            if k < nl - 1:
                t += upper[k] @ x[c:bounds[k + 2]]
            x[a:c] = t / dp[a:c]
        return x

    def backward(r, x):
        for k in range(nl - 1, -1, -1):
            a, c = bounds[k], bounds[k + 1]
            t = r[a:c].copy()
            if k:
                t += lower[k] @ x[bounds[k - 1]:a]
            if k < nl - 1:
                t += upper[k] @ x[c:bounds[k + 2]]
            x[a:c] = t / dp[a:c]
        return x

    def sgs(r):
        return backward(r, forward(r, np.zeros(n)))

    A = (sps.diags(dp) - Wp).tocsr()
    M = LinearOperator((n, n), matvec=sgs, dtype=np.float64)
    x0 = sgs(bp)
    try:
        x, _ = gmres(A, bp, x0=x0, M=M, rtol=rtol, atol=0.0, restart=100, maxiter=maxiter)
    except TypeError:  # scipy < 1.12 names the tolerance `tol`
        x, _ = gmres(A, bp, x0=x0, M=M, tol=rtol, atol=0.0, restart=100, maxiter=maxiter)
    x = np.maximum(x, 0.0)
    for _ in range(polish):
        x = backward(bp, forward(bp, x))
    res = np.linalg.norm(A @ x - bp) / np.linalg.norm(bp)
    if not res <= 10 * rtol:
        raise ConvergenceError(f"level solver: relative residual {res:.2e} > {10 * rtol:.0e} after {maxiter} restarts")
    return x[pos]
