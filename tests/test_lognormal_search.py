"""The fast paths of the lognormal response times (issue 30 item 2, issue 28 item 1), each against something computed
another way:

* the law's transform at D digits on a line whose turn is capped (a small scv: |arg s| > 2 sigma sqrt2, so the
  phase keeps its q X_j part) and on the steepest-descent line, against ``mpmath.quad`` / ``mpmath.quadosc`` on the
  density in x at 30 digits;
* c_0 = varphi(lambda) of a lognormal single vacation at 30 digits (the law's own rule) against ``mpmath.quad``;
* the Gauss-Legendre nodes by Newton's iteration against mpmath's ``gauss_quadrature`` (the eigenvalues of the
  Jacobi matrix) at 40 digits;
* the D-digit root search with ``close=True`` against the exact root of a smooth function, with fewer evaluations
  than plain Illinois;
* the 20-digit tails of a lognormal single-vacation model (c_0 by the law's rule, the D-digit transform) against the
  float64 tails (c_0 by the count quadrature, the float64 rule and inversion), within the float64 self-check's
  2e-10 (the float64 tails are accepted by it here).
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.vacation_wait import _legendre_newton, _zero_count, response_laws
from qderive.numeric.kernels.tails import quantile_illinois
from qderive.numeric.response import law_float64_tails, tails


def _density_transform(law, s):
    """E e^{-s T} by mpmath.quad on the lognormal density in x (quadosc on the oscillating part for complex s)."""
    sigma2 = mpmath.log(1 + mpmath.mpf(law.scv.numerator) / law.scv.denominator)
    mu = mpmath.log(mpmath.mpf(law.mean.numerator) / law.mean.denominator) - sigma2 / 2
    med = mpmath.exp(mu)

    def f(x):
        return mpmath.exp(-s * x - (mpmath.log(x) - mu) ** 2 / (2 * sigma2)) / (x * mpmath.sqrt(2 * mpmath.pi * sigma2))

    w = abs(mpmath.im(s))
    if w == 0:
        return mpmath.quad(f, [0, med / 10, med, 10 * med, mpmath.inf])
    return mpmath.quad(f, [0, med / 10]) + mpmath.quadosc(f, [med / 10, mpmath.inf], omega=w)


@pytest.mark.parametrize("scv", [F(1, 100), F(2)])
def test_transform_at_25_digits_on_capped_and_steepest_lines(scv):
    """scv 1/100: sigma sqrt2 = 0.14, so arg s = 1.2 caps the turn (eta = 2); scv 2: the steepest-descent line.
    Tolerance 1e-24: the rule's own 25 digits (its bound is below that), the quadrature's 30."""
    law = qd.LogNormal(F(1), scv)
    pts = [mpmath.mpc(3, 8), mpmath.mpc("0.4", 0)]
    with mpmath.workdps(40):
        got, _, bound = law.transform_values(pts, digits=25)
        with mpmath.workdps(30):
            ref = [_density_transform(law, z) for z in pts]
        for g, b, r in zip(got, bound, ref):
            assert abs(g - r) < mpmath.mpf(10) ** -24 and b < mpmath.mpf(10) ** -24, (g, r, b)


def test_single_vacation_c0_by_the_laws_rule_matches_quadrature():
    """c_0 = E e^{-lambda V} at 30 digits (the trapezoidal rule of the law) against mpmath.quad at 40: 1e-29."""
    vac = qd.LogNormal(F(3, 40), F(1))
    model = qd.VacationQueue(F(8), qd.Geometric(F(5)), qd.Erlang(4, F(3, 200)), vac,
                             vacation_policy=qd.VacationPolicy.SINGLE)
    c0 = _zero_count(model, 30)
    with mpmath.workdps(40):
        ref = _density_transform(vac, mpmath.mpf(8))
        assert abs(c0 - ref) < mpmath.mpf(10) ** -29 * ref


@pytest.mark.parametrize("n", [1, 2, 7, 24])
def test_gauss_legendre_by_newton_matches_the_jacobi_eigenvalues(n):
    """Nodes and weights at 40 digits against mpmath's gauss_quadrature (eigenvalues): 1e-38 (rounding of both)."""
    xs, ws = _legendre_newton(n, 40)
    with mpmath.workdps(40):
        X, W = mpmath.mp.gauss_quadrature(n, "legendre")
        for i in range(n):
            assert abs(xs[i] - X[i]) < mpmath.mpf(10) ** -38 and abs(ws[i] - W[i]) < mpmath.mpf(10) ** -38


def test_closing_search_finds_the_exact_root_with_fewer_evaluations():
    """g(x) = log P(T > e^x) - log q for an Erlang-2 tail (1 + t) e^{-t}, q = 1/100: the root by mpmath.findroot at
    60 digits; both searches within the tolerance 1e-34 (absolute in x below 1, relative above), the closing one with
    fewer tails (Illinois keeps evaluating at the converged point to bring the stale end in)."""
    with mpmath.workdps(60):
        q = mpmath.mpf(1) / 100

        def tail(t):
            return (1 + t) * mpmath.exp(-t)

        exact = mpmath.log(mpmath.findroot(lambda t: tail(t) - q, 6.6))
    with mpmath.workdps(45):
        counts = {}
        for close in (False, True):
            calls = []

            def g(x):
                calls.append(x)
                t = mpmath.exp(x)
                return mpmath.log(tail(t)) - mpmath.log(q)

            lo, hi = exact - mpmath.mpf(10) ** -9, exact + mpmath.mpf(10) ** -9
            root = quantile_illinois(g, lo, hi, g(lo), g(hi), mpmath.mpf(10) ** -34, close=close)
            assert abs(root - exact) <= mpmath.mpf(10) ** -34 * max(1, abs(exact))
            counts[close] = len(calls)
        assert counts[True] < counts[False], counts


def test_single_vacation_tails_at_20_digits_match_float64():
    """Erlang-4 service, lognormal single vacations: P(W > t) at 20 digits against the float64 tails (accepted by their
    self-check, within 2e-10 relative of the truth)."""
    model = qd.VacationQueue(F(8), qd.Geometric(F(5)), qd.Erlang(4, F(3, 200)), qd.LogNormal(F(3, 40), F(1)),
                             vacation_policy=qd.VacationPolicy.SINGLE)
    law = response_laws(model)["wait"]
    ts = [F(1, 10), F(3, 10)]
    f64, why = law_float64_tails(law, ts)
    assert why is None
    d20 = tails(law, ts, 20)[0]
    for a, b in zip(f64, d20):
        assert abs(a - float(b)) <= 2e-10 * float(b), (a, b)
    with mp_context(25):
        assert all(0 < b < 1 for b in d20)
    assert FLOAT64.is_float64
