"""Subtraction-free solvers for chains that are skip-free to the left.

Two structured eliminations, written once against a :class:`~qderive.numeric.backend.Backend`:

* :func:`stationary_gth_sparse`: the Grassmann-Taksar-Heyman elimination of
  :func:`qderive.numeric.chains.stationary_gth`, touching only the nonzero entries
  of the eliminated row to the left of the diagonal. For a chain whose states can
  be ordered so that every state has few transitions to earlier states (a tree of
  "one step down" moves, as in the embedded chain of the hysteretic queue,
  ``spec/chapter3.md`` section 3) this costs O(n^2) instead of O(n^3), with the
  same arithmetic (no subtractions, every entry keeps full relative accuracy).
* :func:`solve_hessenberg_mmatrix`: ``(I - P_0)^{-1} G`` for a substochastic upper
  Hessenberg block ``P_0`` (``(P_0)_{ij} = 0`` for ``j < i - 1``) with nonnegative
  right-hand sides, given the exit probabilities ``delta_i = 1 - sum_j (P_0)_{ij}``
  computed directly (as positive tails). Gaussian elimination of an M-matrix that
  carries the row sums instead of the diagonal (the GTH idea, Alfa, Xue & Ye 2002,
  Math. Comp. 71, 217-236): every operation adds or multiplies nonnegative numbers,
  so the entrywise relative error is O(n eps) *whatever* ``kappa(I - P_0)`` is.
  This is how (21) of Sopin 2013 is evaluated: the thesis's remark that (21) is
  unusable for rho_0 < 1 is a statement about ordinary LU, not about the problem.

>>> import numpy as np
>>> from qderive.numeric.backend import FLOAT64
>>> P0 = np.array([[0.5, 0.25], [0.5, 0.0]])
>>> res = solve_hessenberg_mmatrix(P0, np.array([0.25, 0.5]), [np.array([1.0, 1.0])], FLOAT64)
>>> [round(float(v), 12) for v in res.solutions[0]]
[3.333333333333, 2.666666666667]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .backend import Backend

__all__ = ["stationary_gth_sparse", "solve_hessenberg_mmatrix", "MMatrixSolution"]


def stationary_gth_sparse(P: np.ndarray, bk: Backend) -> np.ndarray:
    """Stationary vector pi (pi P = pi, sum pi = 1) by GTH, skipping zero entries left of the diagonal.

    ``P`` is a dense backend matrix (float64, or object array of mpf); only its
    off-diagonal entries are read. State ``k`` is eliminated (from the last to the
    first) by ``A[:k, j] += A[:k, k] A[k, j] / s_k`` for the columns ``j < k`` with
    ``A[k, j] != 0`` only, ``s_k = sum_{j<k} A[k, j]`` (GTH: no diagonal, no
    subtraction). Identical to dense GTH in exact arithmetic. Call inside ``with bk:``.
    """
    A = P.copy()
    n = A.shape[0]
    for k in range(n - 1, 0, -1):
        row = A[k, :k]
        down = np.flatnonzero(row != 0)
        if down.size == 0:
            raise ValueError(f"the chain is reducible: state {k} has no transition to states 0..{k - 1}")
        s = bk.fsum(row[down])
        col = A[:k, k] / s
        A[:k, k] = col
        for j in down:
            A[:k, j] = A[:k, j] + col * A[k, j]
    pi = bk.zeros(n)
    pi[0] = bk.num(1)
    for k in range(1, n):
        pi[k] = bk.dot(pi[:k], A[:k, k])
    return pi / bk.fsum(pi)


@dataclass(frozen=True)
class MMatrixSolution:
    """Solutions ``y = (I - P_0)^{-1} g`` (one per right-hand side) and ``kappa_inf(I - P_0)``.

    ``norm_inverse`` = ``||(I - P_0)^{-1}||_inf`` = max_i ((I - P_0)^{-1} 1)_i (the inverse
    is entrywise nonnegative); ``norm`` = ``||I - P_0||_inf``; ``kappa`` their product.
    """

    solutions: tuple
    norm: object
    norm_inverse: object

    @property
    def kappa(self):
        return self.norm * self.norm_inverse


def solve_hessenberg_mmatrix(P0: np.ndarray, delta: np.ndarray, rhs, bk: Backend) -> MMatrixSolution:
    """``(I - P_0)^{-1} g`` for each ``g`` in ``rhs`` (all entries >= 0), subtraction-free.

    ``P0`` is an m x m upper Hessenberg substochastic matrix, ``delta[i] = 1 - sum_j P0[i, j]``
    its exit probabilities (> 0 somewhere, computed by the caller as positive sums).
    Elimination of the subdiagonal of ``A = I - P0`` row by row, carrying the row sums
    ``s_i`` of the reduced rows instead of their diagonals:

        mult_k   = P0[k, k-1] / d_{k-1}
        U[k, j]  = P0[k, j] + mult_k U[k-1, j]      (j > k)
        s_k      = delta_k + mult_k s_{k-1}
        d_k      = s_k + sum_{j>k} U[k, j]          (the pivot, a sum of positive terms)
        g_k     += mult_k g_{k-1}

    then back substitution ``y_k = (g_k + sum_{j>k} U[k, j] y_j) / d_k``. The matrix
    ``(I - P0)^{-1} 1`` is also computed, for ``||(I - P0)^{-1}||_inf`` and ``kappa``.
    Call inside ``with bk:``.
    """
    m = P0.shape[0]
    U = P0.copy()
    s = delta.copy()
    d = bk.zeros(m)
    rhs = [np.array(g, copy=True) for g in rhs] + [bk.array([bk.num(1)] * m)]
    # ||I - P0||_inf: row k has |1 - P0[k,k]| + sum_{j != k} P0[k,j] = delta_k + 2 sum_{j != k} P0[k, j]
    off = [bk.fsum(np.concatenate((P0[k, :k], P0[k, k + 1:]))) for k in range(m)]
    norm = max(delta[k] + 2 * off[k] for k in range(m))
    for k in range(m):
        if k > 0:
            mult = U[k, k - 1] / d[k - 1]
            if k + 1 < m:
                U[k, k + 1:] = U[k, k + 1:] + U[k - 1, k + 1:] * mult
            s[k] = s[k] + mult * s[k - 1]
            for g in rhs:
                g[k] = g[k] + mult * g[k - 1]
        d[k] = s[k] + (bk.fsum(U[k, k + 1:]) if k + 1 < m else 0)
        if d[k] == 0:
            raise ValueError(f"I - P0 is singular: no exit from the normal-mode states reachable from state {k}")
    out = []
    for g in rhs:
        y = bk.zeros(m)
        for k in range(m - 1, -1, -1):
            acc = g[k] + (bk.dot(U[k, k + 1:], y[k + 1:]) if k + 1 < m else 0)
            y[k] = acc / d[k]
        out.append(y)
    ones_solution = out.pop()
    return MMatrixSolution(tuple(out), norm, max(ones_solution))
