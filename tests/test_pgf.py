"""The series algebra: exact truncated power series against SymPy's own series (small orders),
truncation, and removable singularities at z = 1."""

import sympy as sp

from qderive.symbolic.pgf import derivatives_at, series, truncate

z = sp.Symbol("z")


def test_series_matches_sympy_series():
    for expr in (sp.exp(z) / (1 - z), (1 - z / 3) ** sp.Rational(5, 2), sp.exp(2 * (z - 1)) * z / (2 - z)):
        ours = series(expr, z, 0, 7).coeffs
        ref = sp.series(expr, z, 0, 7).removeO()
        assert all(sp.simplify(ours[k] - ref.coeff(z, k)) == 0 for k in range(7))


def test_truncation_and_removable_singularity():
    assert truncate(1 / (1 - z / 2), z, 3) == z**2 / 4 + z / 2 + 1
    assert derivatives_at((1 - z**3) / (1 - z), z, 1, 2) == [3, 3, 2]
    # M/M/1 queue-length PGF (1 - rho)/(1 - rho z): mean rho/(1 - rho) at the removable point of a quotient form
    rho = sp.Rational(1, 3)
    P = (1 - rho) * (1 - z) / ((1 - z) * (1 - rho * z))
    assert derivatives_at(P, z, 1, 1) == [1, rho / (1 - rho)]
