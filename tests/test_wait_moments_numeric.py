"""E[W^k] and E[T^k] of vacation-infinite by the numeric recursions (issue 30 item 2): no symbolic series.

The engine's moments (:func:`qderive.numeric.engines.vacation_wait.wait_moment_values`) run the structure
W = W_b + J + R of :mod:`qderive.numeric.kernels.wait_moments` over numbers; here they are compared with

* the Taylor coefficients of the symbolic transform W(s) (the closed form
  :func:`qderive.symbolic.closed_forms.vacation_wait.wait_transform` with concrete rational laws, cancelled to
  P(s)/Q(s) and divided as power series here, exactly): equal as rationals, K = 1..6, every policy, wait and sojourn;
* the derivatives at 0 of a transform written here in mpmath (a deterministic service and vacation: c_0 = e^{-lambda
  D} irrational), by Cauchy's integral on a circle at 50 digits (``mpmath.diff(method="quad")``): no point at the
  transform's removable 0/0;
* the partial Bell polynomials against SymPy's;
* and the CLI answers --wait-moments 6 / --sojourn-moments 6 without building the symbolic series (the symbolic
  moment functions are replaced by ones that fail), also with an empty derivation cache (slow: the measures'
  general-law derivation).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction as F

import mpmath
import pytest
import sympy as sp

import qderive as qd
from qderive.numeric.engines import vacation_wait as V
from qderive.numeric.kernels import wait_moments as WM
from qderive.symbolic.closed_forms import vacation_wait as VW

#: batch X in {1, 3} with probabilities 1/3, 2/3 (l1 = 7/3), Erlang-2 service of mean 1/2, lambda = 1/5:
#: rho-bar = 7/30
BATCH = qd.FinitePMF({1: F(1, 3), 3: F(2, 3)})
SERVICE = qd.Erlang(2, F(1, 2))
CASES = (("multiple", qd.Erlang(2, F(3))), ("single", qd.Exponential(F(2))), ("none", None))


def _model(policy, vacation):
    kw = {} if vacation is None else {"vacation_policy": policy}
    return qd.VacationQueue(F(1, 5), BATCH, SERVICE, vacation, **kw)


def _taylor_moments(expr, k):
    """E X^n = (-1)^n n! [s^n] X(s), n = 1..k, of a rational transform, exactly: X = P/Q after cancelling the
    removable 0/0, then c_n = (p_n - sum_{i=1}^n q_i c_{n-i}) / q_0."""
    num, den = sp.fraction(sp.cancel(sp.together(expr)))
    p = sp.Poly(num, VW.s).all_coeffs()[::-1]
    q = sp.Poly(den, VW.s).all_coeffs()[::-1]
    p += [0] * (k + 1 - len(p))
    q += [0] * (k + 1 - len(q))
    c = []
    for n in range(k + 1):
        c.append((p[n] - sum((q[i] * c[n - i] for i in range(1, n + 1)), sp.Integer(0))) / q[0])
    assert c[0] == 1  # a transform is 1 at 0
    return [F(int(sp.Rational(x).p), int(sp.Rational(x).q)) * (-1) ** n * math.factorial(n)
            for n, x in enumerate(c) if n]


@pytest.mark.parametrize("policy,vacation", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("kind", ["wait", "sojourn"])
def test_the_recursions_equal_the_transforms_taylor_coefficients(policy, vacation, kind):
    """Exact rationals, K = 1..6: the recursions (MS), (MJ), (MB), (N8), (W3) over Fractions and the series of the
    closed-form transform with these laws must be the same numbers (no tolerance: both exact)."""
    model = _model(policy, vacation)
    laws = {"service": SERVICE, "batch": BATCH, "rate": sp.Rational(1, 5)}
    if vacation is not None:
        laws["vacation"] = vacation
        laws["zero_count"] = sp.Rational(vacation.lst(sp.Rational(1, 5)))
    transform = (VW.wait_transform if kind == "wait" else VW.sojourn_transform)(policy, **laws)
    want = _taylor_moments(transform, 6)
    for k in range(1, 7):
        got = V.wait_moment_values(model, kind)(k, None)
        assert all(isinstance(x, F) for x in got)
        assert got == want[:k]


def test_irrational_c0_against_cauchys_integral_of_the_transform():
    """Single vacations of constant length D = 1 (c_0 = e^{-lambda} irrational) and a constant service 1/4, batches
    of 1 or 2: E W^k, k = 1..6, at 40 digits against (-1)^k W^(k)(0) of the transform written here in mpmath,
    differentiated by Cauchy's integral on the circle |s| = 1/2 (inside the disc where W is analytic: the pole of
    W_b is at s < -1) at 50 digits; the quadrature of an analytic periodic integrand loses a few digits of the 50,
    so 1e-35 relative is a safe bound that a wrong coefficient (a relative change far above 1e-10) cannot meet."""
    lam, d, b = F(1, 2), F(1), F(1, 4)
    pmf = {1: F(1, 2), 2: F(1, 2)}
    model = qd.VacationQueue(lam, qd.FinitePMF(pmf), qd.Deterministic(b), qd.Deterministic(d),
                             vacation_policy="single")
    got = V.wait_moment_values(model, "wait")(6, 40)
    with mpmath.workdps(50):
        lam_, d_, b_ = (mpmath.mpf(x.numerator) / x.denominator for x in (lam, d, b))
        l1 = mpmath.mpf(3) / 2
        rho = lam_ * l1 * b_
        c0 = mpmath.exp(-lam_ * d_)

        def L(z):
            return (z + z * z) / 2

        def W(s):
            beta = mpmath.exp(-s * b_)
            phi = mpmath.exp(-s * d_)
            return ((1 - rho) * s / (s - lam_ + lam_ * L(beta)) * (1 - L(beta)) / (l1 * (1 - beta))
                    * (lam_ * (1 - phi) / s + c0) / (lam_ * d_ + c0))

        for k in range(1, 7):
            want = (-1) ** k * mpmath.diff(W, 0, k, method="quad", radius=mpmath.mpf(1) / 2)
            assert abs(mpmath.re(want) - got[k - 1]) < mpmath.mpf(10) ** -35 * abs(want), k


def test_partial_bell_polynomials_are_sympys():
    """B_{n,m}(x_1, ...) by the kernel's recurrence (over SymPy symbols here) equals sympy.bell(n, m, x), n <= 8."""
    x = sp.symbols("x1:10")
    for n in range(0, 9):
        for m in range(0, n + 1):
            assert sp.expand(WM.partial_bell(n, m, x) - sp.bell(n, m, x[: n - m + 1])) == 0, (n, m)


@pytest.mark.parametrize("fresh", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["session-cache", "cold"])
def test_the_cli_answers_six_moments_without_the_symbolic_series(tmp_path, monkeypatch, fresh):
    """--wait-moments 6 --sojourn-moments 6: the values are those of the transform's Taylor coefficients (above;
    exact, printed at 20 digits) and the symbolic moment series is never built (its functions fail if called, so
    no cache, in memory or on disk, can stand in for them). ``cold``: with an empty derivation cache, as a new user
    runs it (before: about 50 s, docs/performance.md; now about 2 s, most of it the measures' general-law
    derivation that every cold eval pays, hence marked slow)."""
    from conftest import cli

    def fail(*args):
        raise AssertionError("the symbolic moment series was built")

    if fresh:
        monkeypatch.setenv("QDERIVE_CACHE", str(tmp_path / "cold"))
    monkeypatch.setattr(VW, "wait_moments", fail)
    monkeypatch.setattr(VW, "sojourn_moments", fail)
    code, out, err = cli(["eval", "vacation-infinite", "--batch", "geometric:mean=5",
                          "--service", "erlang:k=2,mean=0.015", "--vacation", "exp:mean=0.06", "--load", "0.6",
                          "--wait-moments", "6", "--sojourn-moments", "6", "--digits", "20", "--json"])
    assert code == 0, err
    measures = json.loads(out)["measures"]
    rate = F(6, 10) / (5 * F(15, 1000))  # lambda = rho / (l1 b1)
    vacation = qd.Exponential(F(6, 100))
    laws = {"service": qd.Erlang(2, F(15, 1000)), "batch": qd.Geometric(F(5)), "rate": sp.Rational(rate),
            "vacation": vacation}
    for kind in ("wait", "sojourn"):
        transform = (VW.wait_transform if kind == "wait" else VW.sojourn_transform)("multiple", **laws)
        want = _taylor_moments(transform, 6)
        got = measures[f"{kind}_moments"]
        assert len(got) == 6
        for g, w in zip(got, want):  # 20 correct digits asked: a relative error below 1e-19
            assert abs(F(g) - w) <= F(1, 10**19) * w, (kind, g, w)
