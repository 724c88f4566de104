"""The batched survival functions ``TimeLaw.survival_many`` (gamma, lognormal, uniform) against the laws' own scalar
``survival`` evaluated point by point at 50 digits (mpmath's ``gammainc`` / ``erfc``: a different algorithm from
the batched numpy series and continued fraction of float64 and from the Taylor cells at D digits).

Points: 0, tiny ones (the scalar fallback below 2^-40 in z, and the geometric cells near 0), the cell boundaries
of the gamma law's Taylor cells (z = 2, 5/2, 1/2, 2^-10), and a grid into the deep tail (survival down to about
1e-30). Tolerances: float64 4e-13 relative (the numpy forms round z = a x / m and the prefactor
exp(a ln z - z - ln Gamma(a)), an error of about (z + a |ln z|) eps, z <= 80 here, plus the continued fraction's
stop at 4e-16); D digits: 10^-D relative (what ``survival_many`` promises).
"""

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from qderive.symbolic.laws import parse_time_law

LAWS = ["gamma:shape=5/2,mean=3/40", "gamma:shape=1/2,mean=2", "gamma:shape=7,mean=1",
        "lognormal:mean=3/40,scv=1/2", "lognormal:mean=2,scv=4", "uniform:low=1/40,high=1/8"]


def _points(law):
    """x >= 0 from 0 to where P(T > x) is about 1e-30, and the gamma law's cell boundaries (in z = a x / m)."""
    m = float(Fraction(law.mean))
    xs = [0.0, 1e-20, 1e-13, 1e-9, 1e-4 * m] + list(np.linspace(0.01, 3, 25) * m)
    if hasattr(law, "shape"):
        a = float(Fraction(law.shape))
        xs += [z * m / a for z in (2.0, 2.5, 0.5, 2.0**-10, 2.0**-40, 7.25)]
        xs += list(np.geomspace(3, 80 + 2 * a, 12) * m / a)  # Q(a, 80) ~ 1e-33
    elif law.spec == "lognormal":
        sigma = np.sqrt(np.log1p(float(Fraction(law.scv))))
        xs += list(np.geomspace(3 * m, m * float(np.exp(11 * sigma)), 12))  # z up to ~ 11 / sqrt 2: 1e-27
    else:
        xs += [float(Fraction(law.low)), float(Fraction(law.high)), 0.1249, 0.2]
    return xs


def _reference(law, xs):
    with mpmath.workdps(50):
        return [law.survival(mpmath.mpf(x)) for x in xs]


@pytest.mark.parametrize("spec", LAWS)
def test_float64_batch_matches_the_scalar_survival_at_50_digits(spec):
    law = parse_time_law(spec)
    xs = _points(law)
    got = law.survival_many(np.array(xs))
    assert isinstance(got, np.ndarray) and got.dtype == float and len(got) == len(xs)
    for x, g, r in zip(xs, got, _reference(law, xs)):
        if r < 1e-300:
            assert g < 1e-290
            continue
        assert abs(g - float(r)) <= 4e-13 * float(r), (spec, x, g, r)


@pytest.mark.parametrize("spec", LAWS)
@pytest.mark.parametrize("digits", [20, 40])
def test_digits_batch_matches_the_scalar_survival_at_50_digits(spec, digits):
    law = parse_time_law(spec)
    xs = _points(law)
    with mpmath.workdps(digits + 15):
        got = law.survival_many([mpmath.mpf(x) for x in xs], digits)
    refs = _reference(law, xs)
    with mpmath.workdps(50):
        for x, g, r in zip(xs, got, refs):
            assert isinstance(g, mpmath.mpf)
            if r == 0:
                assert g == 0, (spec, x, g)
                continue
            assert abs(g - r) <= mpmath.mpf(10) ** -digits * r, (spec, digits, x, g, r)


def test_the_taylor_cells_are_shared_by_later_batches():
    """The gamma law's Taylor centres do not depend on the points: a second batch of other points in the same cells
    reuses them (the tails of a quantile search), with the same accuracy."""
    from qderive.symbolic.laws import gamma as G

    law = parse_time_law("gamma:shape=5/2,mean=3/40")
    xs = [mpmath.mpf(x) for x in np.linspace(0.2, 0.3, 7)]
    with mpmath.workdps(45):
        law.survival_many(xs, 30)
        before = G._gamma_taylor.cache_info().hits
        got = law.survival_many([x + mpmath.mpf(1) / 10**6 for x in xs], 30)
        assert G._gamma_taylor.cache_info().hits > before
    with mpmath.workdps(50):
        for x, g in zip(xs, got):
            r = law.survival(x + mpmath.mpf(1) / 10**6)
            assert abs(g - r) <= mpmath.mpf(10) ** -30 * r


def test_a_law_without_a_survival_function_gives_none():
    assert parse_time_law("det:mean=1").survival_many(np.array([0.5])) is None
