"""GTH against exact rational linear algebra; the series algebra against sympy.series."""

import random

import mpmath
import sympy as sp

from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.chains import mean_hitting_times, stationary_gth
from qderive.symbolic.pgf import derivatives_at, series, truncate


def _random_chain(n, seed):
    rng = random.Random(seed)
    P = [[sp.Rational(rng.randint(0, 5), 1) for _ in range(n)] for _ in range(n)]
    for i in range(n):
        P[i][(i + 1) % n] += 1  # irreducible
        total = sum(P[i])
        P[i] = [x / total for x in P[i]]
    return P


def test_gth_equals_exact_solution():
    for seed in range(3):
        P = _random_chain(7, seed)
        M = sp.Matrix(P).T - sp.eye(7)
        M = M.row_insert(7, sp.ones(1, 7))
        rhs = sp.Matrix([0] * 7 + [1])
        exact = M.solve_least_squares(rhs)
        bk = mp_backend(50)
        with bk:
            pi = stationary_gth(P, bk)
            for i in range(7):
                assert abs(pi[i] - mpmath.mpf(sp.N(exact[i], 60))) < mpmath.mpf(10) ** -48
        pi64 = stationary_gth(P, FLOAT64)
        assert max(abs(pi64[i] - float(exact[i])) for i in range(7)) < 1e-14


def test_mean_hitting_times_of_a_walk():
    # symmetric walk on 0..4, absorbed at 0: h_i = i (8 - i)  (gambler's ruin with reflecting 4)
    P = [[0] * 5 for _ in range(5)]
    for i in range(1, 4):
        P[i][i - 1] = P[i][i + 1] = sp.Rational(1, 2)
    P[4][3] = 1
    P[0][1] = 1
    bk = mp_backend(30)
    with bk:
        h = mean_hitting_times(P, [0], [1] * 5, bk)
        for i in range(1, 5):
            assert abs(h[i] - i * (8 - i)) < mpmath.mpf(10) ** -25


def test_series_matches_sympy_series():
    z, a = sp.symbols("z a", positive=True)
    exprs = [sp.exp(a * (z - 1)) / (1 - z / 3), (2 / (2 + a * (1 - z))) ** 3, z / (1 - (1 - a) * z)]
    for e in exprs:
        ours = series(e, z, 0, 6).as_expr(z)
        ref = sp.series(e, z, 0, 6).removeO()
        assert sp.simplify(sp.expand(ours - ref)) == 0


def test_truncation_and_removable_singularity():
    z = sp.Symbol("z")
    assert truncate(1 / (1 - z), z, 4) == 1 + z + z**2 + z**3
    # (1 - z^4)/(1 - z) = 1 + z + z^2 + z^3: value 4, f'(1) = 1 + 2 + 3 = 6, f''(1) = 2 + 6 = 8
    assert derivatives_at((1 - z**4) / (1 - z), z, 1, 2) == [4, 6, 8]
