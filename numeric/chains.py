"""Finite Markov chains: stationary laws by GTH, mean hitting times, in float64 or mpmath.

The Grassmann-Taksar-Heyman (GTH) elimination computes the stationary vector of
an irreducible chain without subtractions (the diagonal is never used), so every
entry, however small, keeps full relative accuracy. It is the independent oracle
of the test suite: chains built directly from a model's definition are solved
here and compared with the closed forms.

>>> import sympy as sp
>>> from qderive.numeric.backend import mp_backend
>>> P = [[0, 1], [sp.Rational(1, 2), sp.Rational(1, 2)]]
>>> bk = mp_backend(20)
>>> with bk:
...     [str(x) for x in stationary_gth(P, bk)]
['0.33333333333333333333', '0.66666666666666666667']
"""

from __future__ import annotations

import mpmath
import numpy as np

from .backend import Backend

__all__ = ["stationary_gth", "ctmc_stationary", "mean_hitting_times", "as_matrix"]


def as_matrix(entries, bk: Backend) -> np.ndarray:
    """A dense backend matrix from nested sequences of exact numbers or backend scalars."""
    n = len(entries)
    m = np.empty((n, n), dtype=np.float64 if bk.is_float64 else object)
    for i, row in enumerate(entries):
        if len(row) != n:
            raise ValueError("transition matrix must be square")
        for j, v in enumerate(row):
            m[i, j] = v if isinstance(v, (float, mpmath.mpf)) else bk.num(v)
    return m


def stationary_gth(P, bk: Backend) -> np.ndarray:
    """Stationary vector pi (pi P = pi, sum 1) of an irreducible DTMC, or of a CTMC given its rates.

    Only off-diagonal entries are read, so ``P`` may be a transition matrix or a
    generator. Call inside ``with bk:`` for mpmath precision. The update touches only
    the nonzero entries of the eliminated row, so a chain that is skip-free to the
    left (M/G/1 type: at most a few states below each state) costs O(n^2 w), not O(n^3).
    """
    A = as_matrix(P, bk) if not isinstance(P, np.ndarray) else P.copy()
    n = A.shape[0]
    for k in range(n - 1, 0, -1):
        s = sum(A[k, :k]) if not bk.is_float64 else float(np.sum(A[k, :k]))
        if s == 0:
            raise ValueError(f"the chain is reducible: state {k} has no transition to states 0..{k - 1}")
        A[:k, k] = A[:k, k] / s
        cols = np.nonzero(A[k, :k] != 0)[0] if not bk.is_float64 else np.flatnonzero(A[k, :k])
        if len(cols) * 4 < k:
            A[:k, cols] = A[:k, cols] + np.outer(A[:k, k], A[k, cols])
        else:
            A[:k, :k] = A[:k, :k] + np.outer(A[:k, k], A[k, :k])
    pi = bk.zeros(n)
    pi[0] = bk.num(1)
    for k in range(1, n):
        pi[k] = bk.dot(pi[:k], A[:k, k])
    total = bk.fsum(pi)
    return pi / total


def ctmc_stationary(Q, bk: Backend) -> np.ndarray:
    """Stationary law of a CTMC with generator (or rate matrix) ``Q``: GTH on the rates."""
    return stationary_gth(Q, bk)


def mean_hitting_times(P, targets, costs, bk: Backend):
    """Expected accumulated cost until the chain first enters ``targets``.

    Solves h_i = c_i + sum_{j not in targets} P_ij h_j for every i not in targets
    (``costs[i]`` is the expected cost of one step from i; a DTMC with unit costs
    gives mean numbers of steps, a CTMC's embedded chain with mean holding times gives
    mean times). Returns a dict state -> h. Uses mpmath's LU in mp mode, numpy in float64.
    """
    A = as_matrix(P, bk) if not isinstance(P, np.ndarray) else P
    n = A.shape[0]
    targets = set(targets)
    rest = [i for i in range(n) if i not in targets]
    idx = {s: k for k, s in enumerate(rest)}
    m = len(rest)
    if bk.is_float64:
        M = np.eye(m) - A[np.ix_(rest, rest)]
        rhs = np.array([float(costs[i]) for i in rest])
        h = np.linalg.solve(M, rhs)
        return {s: float(h[idx[s]]) for s in rest}
    M = mpmath.matrix(m, m)
    rhs = mpmath.matrix(m, 1)
    for a, i in enumerate(rest):
        rhs[a] = costs[i]
        for b, j in enumerate(rest):
            M[a, b] = (1 if a == b else 0) - A[i, j]
    h = mpmath.lu_solve(M, rhs)
    return {s: h[idx[s]] for s in rest}
