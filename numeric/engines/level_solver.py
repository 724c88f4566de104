"""Large sparse M-matrix systems whose off-diagonal part links adjacent levels only (float64, scipy).

``(diag(d) - W) x = b`` with ``W >= 0`` linking states of adjacent levels (the count n of
a queue: arrivals n -> n + 1, departures n -> n - 1), ``d_i >= sum_j W_ij`` and every
state leaking (a nonsingular M-matrix). The two-class chains of seed 001 carry the class
sequence, so at H = 16 they have about 4 * 10^5 states; sparse LU fills in and needs
gigabytes there (measured: stopped after 10 minutes at 3.5 GB), the dense kernels of
:mod:`qderive.numeric.kernels.chains` need O(n^2). This solver:

1. BiCGSTAB (scipy) preconditioned by one symmetric Gauss-Seidel sweep in level order,
   GMRES(30) as the fallback when BiCGSTAB stalls or breaks down. The diagonal blocks
   are diagonal, so a sweep is a handful of sparse products per level:
   ``x_k = (r_k + L_k x_{k-1} + U_k x_{k+1}) / d_k``, up the levels and down again.
   (The first port used GMRES(100), as the old ``level_chains`` did: at H = 16 scipy's
   GMRES spends most of its time in its Python-level modified Gram-Schmidt, 4.6 s against
   1.5 s for BiCGSTAB with the same preconditioner and ~22 iterations, on this machine.)
2. then ``polish`` symmetric Gauss-Seidel sweeps ``x_i = (b_i + sum_j W_ij x_j) / d_i``:
   positive terms only, so components many orders of magnitude below the largest (a
   probability of 1e-14 next to one of 0.7) recover their relative accuracy.

Convergence is checked: a relative residual above ``10 * rtol`` raises
:class:`ConvergenceError` (a :class:`~qderive.errors.NumericalError`); it is never
returned silently. Stationary laws use it with pi(root) = 1 fixed (the balance
``q_i pi_i = sum_j pi_j q_ji`` of the other states is such a system, the root's inflow
on the right-hand side) and first-passage times with ``W`` the rates inside the set.

>>> import numpy as np, scipy.sparse as sps
>>> # levels 0, 1, 2 linked at rate 1, each state leaking at rate 1: A = (2 -1 0; -1 3 -1; 0 -1 2), A 1 = 1
>>> W = sps.csr_matrix(np.array([[0, 1.0, 0], [1.0, 0, 1.0], [0, 1.0, 0]]))
>>> x = solve_level_m_matrix(W, np.array([2.0, 3.0, 2.0]), np.array([0, 1, 2]), np.array([1.0, 1.0, 1.0]))
>>> [round(float(v), 12) for v in x]
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

import numpy as np

from ...symbolic.errors import NumericalError

__all__ = ["solve_level_m_matrix", "ConvergenceError"]


class ConvergenceError(NumericalError):
    """The iterative level solver did not reach its tolerance (the message gives the residual)."""


def _levels(W, level):
    """Level-ordered permutation, level bounds and the off-diagonal blocks (checked: adjacent levels only)."""
    import scipy.sparse as sps

    n = len(level)
    order = np.argsort(level, kind="stable")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    lev = np.asarray(level)[order]
    Wp = sps.csr_matrix(W)[order][:, order].tocsr()
    levels = np.unique(lev)
    bounds = np.searchsorted(lev, np.append(levels, levels[-1] + 1))
    nl = len(levels)
    lower, upper = [None] * nl, [None] * nl
    for k in range(nl):
        a, c = bounds[k], bounds[k + 1]
        rows = Wp[a:c]
        inside = rows[:, a:c]
        far_low = rows[:, :bounds[k - 1]] if k else None
        far_up = rows[:, bounds[k + 2]:] if k < nl - 1 else None
        if inside.nnz or (far_low is not None and far_low.nnz) or (far_up is not None and far_up.nnz):
            raise ValueError("solve_level_m_matrix: W must link adjacent levels only")
        if k:
            lower[k] = rows[:, bounds[k - 1]:a].tocsr()
        if k < nl - 1:
            upper[k] = rows[:, c:bounds[k + 2]].tocsr()
    return order, pos, Wp, bounds, lower, upper


def solve_level_m_matrix(W, d, level, b, *, rtol: float = 1e-13, polish: int = 8, maxiter: int = 200) -> np.ndarray:
    """Solve ``(diag(d) - W) x = b`` in float64 (see the module docstring); returns x in the input order.

    ``W`` a scipy sparse matrix (>= 0, adjacent levels only), ``d > 0`` with ``d_i >= sum_j W_ij``,
    ``level`` an integer per state, ``b >= 0``. Raises :class:`ConvergenceError` when the relative
    residual ``|A x - b| / |b|`` stays above ``10 * rtol``.
    """
    import scipy.sparse as sps
    from scipy.sparse.linalg import LinearOperator, bicgstab, gmres

    n = len(d)
    order, pos, Wp, bounds, lower, upper = _levels(W, level)
    nl = len(bounds) - 1
    dp = np.asarray(d, dtype=np.float64)[order]
    bp = np.asarray(b, dtype=np.float64)[order]
    if not (np.all(np.isfinite(dp)) and np.all(dp > 0) and np.all(np.isfinite(bp))):
        raise ConvergenceError("level solver: the diagonal or the right-hand side is not finite and positive in "
                               "float64")

    def sweep(r, x, levels):
        for k in levels:
            a, c = bounds[k], bounds[k + 1]
            t = r[a:c].copy()
            if k:
                t += lower[k] @ x[bounds[k - 1]:a]
            if k < nl - 1:
                t += upper[k] @ x[c:bounds[k + 2]]
            x[a:c] = t / dp[a:c]
        return x

    up, down = range(nl), range(nl - 2, -1, -1)  # the top level is final after the upward sweep

    def sgs(r):
        return sweep(r, sweep(r, np.zeros(n), up), down)

    A = (sps.diags(dp) - Wp).tocsr()
    M = LinearOperator((n, n), matvec=sgs, dtype=np.float64)
    norm_b = np.linalg.norm(bp)

    def residual(x):
        return np.linalg.norm(A @ x - bp) / norm_b

    with np.errstate(all="ignore"):
        x0 = sgs(bp)
        x, _ = bicgstab(A, bp, x0=x0, M=M, rtol=rtol, atol=0.0, maxiter=maxiter)
        if not (np.all(np.isfinite(x)) and residual(x) <= 10 * rtol):
            x, _ = gmres(A, bp, x0=x0, M=M, rtol=rtol, atol=0.0, restart=30, maxiter=40)
        x = np.maximum(x, 0.0)
        for _ in range(polish):
            x = sweep(bp, sweep(bp, x, up), down)
        res = residual(x)
    if not res <= 10 * rtol:
        raise ConvergenceError(f"level solver: relative residual {res:.2e} > {10 * rtol:.0e} (BiCGSTAB, then "
                               "GMRES(30))")
    return x[pos]
