"""The state-dependent birth kernel (``qderive.numeric.kernels.birth``) against independent computations.

M = E exp(Q S) and T = E int_0^S exp(Q t) dt of a pure birth process whose rate depends on the
count (two rate levels at a threshold H, absorbing at R, batch jumps), computed by
uniformization with nonnegative terms, checked against:

* scipy.linalg.expm of Q D and of the block matrix [[Q, I], [0, 0]] D (Van Loan) in float64
  (deterministic service; tolerance 1e-13: both are accurate to a few ulps on these O(1) entries);
* mpmath.expm at 50 digits (deterministic service; tolerance 1e-45);
* the exact rationals M = mu (mu I - Q)^{-1}, T = (mu I - Q)^{-1} of exponential service (a
  Fraction Gaussian elimination, no uniformization), to 1e-45 at 50 digits;
* with one rate level the kernel's counts equal the chapter-3 arrival counts a_n, u_n of
  :mod:`qderive.numeric.kernels.arrivals` (a different algorithm: convolution columns), 1e-13;
* float64 against mpmath for an Erlang law (its own count family), 1e-12.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
import scipy.linalg as sl

from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.birth import threshold_matrices
from qderive.numeric.sequences import arrival_counts, batch_vectors
from qderive.symbolic.batches import Constant, Geometric
from qderive.symbolic.laws import Deterministic, Erlang, Exponential

R, H = 7, 4
RATES = (F(3), F(1), F(0))


def _generator(batch, rates=RATES, R=R, H=H):
    """Q over 0..R from the definition (exact): rate lambda_0 below H, lambda_1 from H, R absorbing."""
    Q = [[F(0)] * (R + 1) for _ in range(R + 1)]
    for c in range(R):
        lam = rates[0] if c < H else rates[1]
        for i in range(1, R - c):
            Q[c][c + i] += lam * batch.pmf(i)
        Q[c][R] += lam * batch.tail(R - c - 1)
        Q[c][c] -= lam
    return Q


def _kernel(service, batch, ctx, rates=RATES):
    with ctx:
        bv = batch_vectors(batch, R, ctx)
        mats, _ = threshold_matrices(service, rates, bv.pmf, bv.tail, 2, H, R, ctx)
    M, T = mats[0]
    assert all(x == 0 for x in M[0]) and all(x == 0 for x in T[0])  # a service starts with a customer
    return M[1:, 1:], T[1:, 1:]


@pytest.mark.parametrize("batch", [Constant(1), Geometric(2)], ids=["single", "geometric"])
def test_float64_against_scipy_expm(batch):
    D = F(1, 2)
    M, T = _kernel(Deterministic(D), batch, FLOAT64)
    Q = np.array([[float(x) for x in row] for row in _generator(batch)])
    n = R + 1
    big = np.zeros((2 * n, 2 * n))
    big[:n, :n], big[:n, n:] = Q, np.eye(n)
    assert np.abs(M - sl.expm(Q * float(D))[1:, 1:]).max() < 1e-13
    assert np.abs(T - sl.expm(big * float(D))[:n, n:][1:, 1:]).max() < 1e-13


def test_mpmath_50_digits_against_mpmath_expm():
    D = F(3, 4)
    ctx = mp_context(50)
    M, _ = _kernel(Deterministic(D), Constant(1), ctx)
    with mpmath.workdps(70):
        Q = mpmath.matrix([[mpmath.mpf(x.numerator) / x.denominator for x in row] for row in _generator(Constant(1))])
        E = mpmath.expm(Q * mpmath.mpf(3) / 4)
        for i in range(1, R + 1):
            for j in range(1, R + 1):
                ref = E[i, j]
                assert abs(M[i - 1, j - 1] - ref) <= mpmath.mpf(10) ** -45 * max(abs(ref), mpmath.mpf(10) ** -60)


def _solve_exact(A, B):
    """X = A^{-1} B by Gaussian elimination over the rationals."""
    n = len(A)
    M = [list(A[i]) + list(B[i]) for i in range(n)]
    for k in range(n):
        p = next(i for i in range(k, n) if M[i][k] != 0)
        M[k], M[p] = M[p], M[k]
        for i in range(n):
            if i != k and M[i][k] != 0:
                f = M[i][k] / M[k][k]
                M[i] = [a - f * b for a, b in zip(M[i], M[k])]
    return [[x / M[i][i] for x in M[i][n:]] for i in range(n)]


def test_exponential_service_against_the_exact_resolvent():
    mu = F(4)
    batch = Geometric(2)
    Q = _generator(batch)
    A = [[(mu if i == j else 0) - Q[i][j] for j in range(R + 1)] for i in range(R + 1)]
    eye = [[F(int(i == j)) for j in range(R + 1)] for i in range(R + 1)]
    T_exact = _solve_exact(A, eye)  # int_0^inf e^{-mu t} exp(Q t) dt = (mu I - Q)^{-1}
    ctx = mp_context(50)
    M, T = _kernel(Exponential(1 / mu), batch, ctx)
    with ctx:
        tol = mpmath.mpf(10) ** -45
        for i in range(1, R + 1):
            for j in range(i, R + 1):
                exact = T_exact[i][j]
                if exact == 0:
                    assert M[i - 1, j - 1] == 0 and T[i - 1, j - 1] == 0
                    continue
                assert abs(T[i - 1, j - 1] / ctx.num(exact) - 1) < tol
                assert abs(M[i - 1, j - 1] / ctx.num(mu * exact) - 1) < tol


def test_one_rate_level_gives_the_chapter3_arrival_counts():
    lam = F(5, 2)
    service, batch = Erlang(3, F(1, 2)), Geometric(F(3, 2))
    M, T = _kernel(service, batch, FLOAT64, rates=(lam, lam, F(0)))
    with FLOAT64:
        c = arrival_counts(service, batch, lam, R, FLOAT64)
    for c0 in range(1, R):
        row, trow = M[c0 - 1], T[c0 - 1]  # counts 1..R
        np.testing.assert_allclose(row[c0 - 1: R - 1], c.a[: R - c0], rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(trow[c0 - 1: R - 1], c.u[: R - c0], rtol=1e-13, atol=1e-300)
        assert abs(row[R - 1] - c.abar[R - c0 - 1]) < 1e-13  # P(A >= R - c0)


def test_float64_against_mpmath_erlang():
    service = Erlang(4, F(2, 3))
    M64, T64 = _kernel(service, Geometric(2), FLOAT64)
    Mmp, Tmp = _kernel(service, Geometric(2), mp_context(30))
    for a, b in ((M64, Mmp), (T64, Tmp)):
        ref = np.array([[float(x) for x in row] for row in b])
        nz = ref > 0
        assert (a[~nz] == 0).all()
        assert np.abs(a[nz] / ref[nz] - 1).max() < 1e-12
