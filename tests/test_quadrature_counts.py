"""The count sequences of a lognormal time in float64 (the quadrature's Poisson mixture, its nodes summed by octave
tables: ``numeric/sequences.py``, ``_poisson_mixture``) against the Poisson-lognormal mixture integrated by mpmath at
30 digits: P(K = k) = int phi(z) Pois(k; lambda e^{mu + sigma z}) dz and P(K > k) with the regularized incomplete
gamma function in place of the Poisson pmf (the definition, computed another way: no quadrature nodes shared)."""

from fractions import Fraction

import mpmath
import pytest

from qderive.numeric.backend import FLOAT64
from qderive.numeric.sequences import count_sequences, sum_count_sequences
from qderive.symbolic.laws import LogNormal

MEAN, SCV, LAM = Fraction(12, 1000), Fraction(2), Fraction(275, 24)  # issue 28's service at load 0.55


def _mixture(k, tail):
    """P(K = k) (``tail`` False) or P(K > k) at 30 digits: the integral over the standard normal z, split at the
    points where lambda x crosses the Poisson mode region (the integrand is smooth; mpmath's tanh-sinh per piece)."""
    with mpmath.workdps(30):
        sigma2 = mpmath.log(1 + mpmath.mpf(SCV.numerator) / SCV.denominator)
        sigma = mpmath.sqrt(sigma2)
        mu = mpmath.log(mpmath.mpf(MEAN.numerator) / MEAN.denominator) - sigma2 / 2
        lam = mpmath.mpf(LAM.numerator) / LAM.denominator

        def f(z):
            m = lam * mpmath.exp(mu + sigma * z)
            p = mpmath.gammainc(k + 1, 0, m, regularized=True) if tail else mpmath.exp(-m + k * mpmath.log(m)
                                                                                      - mpmath.loggamma(k + 1))
            return mpmath.npdf(z) * p

        centre = (mpmath.log(mpmath.mpf(max(k, 1)) / lam) - mu) / sigma  # lambda x = k
        # z in [-12, 14]: the normal mass outside is below 1e-32 (a lambda x of 2e5 at z = 14: no overflow)
        cuts = sorted({mpmath.mpf(-12), mpmath.mpf(14)} | {c for c in (centre - 2, centre, centre + 2) if -12 < c < 14})
        return mpmath.quad(f, cuts)


@pytest.mark.parametrize("n", [130])
def test_lognormal_counts_float64_against_mpmath_quad(n):
    law = LogNormal(MEAN, SCV)
    with FLOAT64:
        beta, tail, _ = count_sequences(law.count_law(LAM), n, FLOAT64)
        beta2, tail2, _ = sum_count_sequences(law.count_law(LAM), n, FLOAT64, 2)
    for k in (0, 1, 5, 20, 60, 128):
        want = _mixture(k, False)
        # 1e-11 relative: the trapezoidal levels stop when two agree to 1e-13, and each Poisson term is within a few
        # ulps; the entries compared here (down to P(K = 128) = 6e-14) are far above the rule's truncation (1e-25)
        assert abs(beta[k] - want) <= 1e-11 * want, (k, beta[k], want)
        assert abs(beta2[k] - want) <= 1e-11 * want, (k, beta2[k], want)
    for k in (0, 5, 60):
        want = _mixture(k, True)
        assert abs(tail[k] - want) <= 1e-11 * want, (k, tail[k], want)
