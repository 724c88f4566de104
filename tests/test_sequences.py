"""Arrival-count sequences (a_n, tails, level times) against independent computations:
Taylor coefficients of A(z) = beta(lambda - lambda L(z)) by mpmath (complex-step free: exact
series of the transform via mpmath.taylor at 40 digits), and U(z) = (1 - A(z)) / (lambda (1 - L(z)))."""

from fractions import Fraction as F

import mpmath
import pytest
import sympy as sp

from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.cut import cut_recursion
from qderive.numeric.sequences import arrival_counts
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T

N = 10
LAWS = [T.Deterministic(F(1, 2)), T.Exponential(2), T.Erlang(3, F(1, 3)), T.Gamma(F(5, 2), 1),
        T.HyperExponential((F(1, 3), F(2, 3)), (1, 2)), T.Uniform(1, 2)]
BATCHES = [B.Geometric(F(5, 2)), B.Constant(2), B.FinitePMF({1: F(1, 4), 3: F(3, 4)}), B.ShiftedPoisson(F(3, 2))]


def _taylor(expr_of_z, n, dps=40):
    z = sp.Symbol("z")
    with mpmath.workdps(dps):
        f = sp.lambdify(z, expr_of_z(z), "mpmath")
        return mpmath.taylor(f, 0, n)


@pytest.mark.parametrize("law", LAWS, ids=lambda l: type(l).__name__)
@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: type(b).__name__)
def test_counts_match_transform_coefficients(law, batch):
    lam = sp.Rational(3, 2)
    s = sp.Symbol("s")
    A = lambda z: law.lst(s).subs(s, lam - lam * batch.pgf(z))  # noqa: E731
    U = lambda z: (1 - A(z)) / (lam * (1 - batch.pgf(z)))  # noqa: E731
    ref_a = _taylor(A, N)
    # U has a removable singularity at z = 1 only; Taylor at 0 is fine
    ref_u = _taylor(U, N)
    bk = mp_backend(30)
    with bk, mpmath.workdps(30):
        ac = arrival_counts(law, batch, lam, N, bk)
        for n in range(N + 1):
            # numerical differentiation in mpmath.taylor keeps ~30 of 40 digits
            assert abs(ac.a[n] - ref_a[n]) < mpmath.mpf(10) ** -25
            tail = 1 - mpmath.fsum(ref_a[: n + 1])
            assert abs(ac.abar[n] - tail) < mpmath.mpf(10) ** -25
            assert abs(ac.u[n] - ref_u[n]) < mpmath.mpf(10) ** -25
        # Ubar_m = E T - sum_{n<m} u_n
        ET = mpmath.mpf(sp.N(law.moment(1), 40))
        for m in range(N + 1):
            assert abs(ac.ubar[m] - (ET - mpmath.fsum(ref_u[:m]))) < mpmath.mpf(10) ** -25
    f64 = arrival_counts(law, batch, lam, N, FLOAT64)
    for n in range(N + 1):
        # float64 path: a few ulps of relative error per term; the numerical Taylor reference has ~1e-40 absolute noise
        assert abs(f64.a[n] - float(ref_a[n])) <= 1e-13 * abs(float(ref_a[n])) + 1e-30  # reference noise ~1e-40


def test_tails_keep_relative_accuracy_when_tiny():
    """abar_n at light load falls far below 1e-16; float64 keeps ~1e-13 relative accuracy
    (a 1 - cumsum would return 0 or noise there)."""
    law, batch, lam = T.Exponential(F(1, 100)), B.Geometric(F(6, 5)), sp.Rational(1)
    n = 60
    bk = mp_backend(60)
    with bk:
        exact = arrival_counts(law, batch, lam, n, bk).abar
    f64 = arrival_counts(law, batch, lam, n, FLOAT64).abar
    assert float(exact[n]) < 1e-40
    for k in range(n + 1):
        assert abs(f64[k] / float(exact[k]) - 1) < 1e-12


def test_cut_recursion_matches_thesis_recursion_at_high_precision():
    """(2b) equals the thesis form (2a) when both run at 80 digits (2a subtracts, so it needs them)."""
    lam, law, vac, batch = sp.Rational(2), T.Erlang(2, F(1, 5)), T.Exponential(F(1, 2)), B.Geometric(2)
    n = 15
    bk = mp_backend(80)
    with bk:
        sa = arrival_counts(law, batch, lam, n + 1, bk)
        sc = arrival_counts(vac, batch, lam, n + 1, bk)
        q = cut_recursion(sa.a[0], sa.abar, sc.abar, n, bk)
        q2 = [mpmath.mpf(1)]
        for j in range(n):
            s = q2[j] - q2[0] * sc.a[j] - mpmath.fsum(q2[i] * sa.a[j - i + 1] for i in range(1, j + 1))
            q2.append(s / sa.a[0])
        for j in range(n + 1):
            assert abs(q[j] / q2[j] - 1) < mpmath.mpf(10) ** -60
