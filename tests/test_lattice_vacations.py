"""Constant service with phase-type (Erlang, Coxian, PH) vacations: the matrix-exponential pieces (L5) of
:mod:`qderive.numeric.kernels.lattice_wait` (issue 13, item 4), each against something computed another way:

* M/D/1 with vacations: the convolution P(V + R > t) = a_0 P(V > t) + P(R > t) + int_0^t f_R(x) P(V > t - x) dx
  with V from Erlang's M/D/1 sum written here (mpmath, 60 digits) and R's law from the vacation's definition
  (its survival function, mean and c_0 = E e^{-lambda V}, written here in closed form), by mpmath.quad split
  at the kinks t - k D (30 digits): shares nothing with the kernel;
* batches: the mean E W (the symbolic moments, :mod:`qderive.symbolic.closed_forms.vacation_wait`) against the
  integral of the tail (Gauss-Legendre between the kinks), a seeded simulation's 99.9 % interval, float64
  against 30 digits;
* the uniformized pieces against the law's own LST.

Tolerances: D digits promise D correct digits; the tests ask D - 1 (the reference's own rounding).
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric.simulation.vacation import simulate


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


def _md1_tail(lam, t, dps=60):
    """P(V > t) of M/D/1 with D = 1 (load lam) by Erlang's alternating sum at ``dps`` digits."""
    with mpmath.workdps(dps):
        t = mpmath.mpf(t)
        if t < 0:
            return mpmath.mpf(1)
        s = mpmath.fsum(mpmath.exp(lam * (t - k)) * (lam * (k - t)) ** k / mpmath.factorial(k)
                        for k in range(int(mpmath.floor(t)) + 1))
        return +(1 - (1 - lam) * s)


def _reference(lam, t, S, f1, c0, policy, dps=25, kinks=()):
    """P(W > t) for M/D/1 (D = 1, rate lam) with vacations of survival function S, mean f1 and c_0 = E e^{-lam V}
    (single vacations), by the convolution of the module docstring at ``dps`` digits."""
    with mpmath.workdps(dps):
        lam, t = _mp(lam), _mp(t)
        if policy == "multiple":
            a0, w = mpmath.mpf(0), 1 / f1
        else:
            a0, w = c0 / (lam * f1 + c0), lam / (lam * f1 + c0)
        total = a0 * _md1_tail(lam, t, dps + 10) + w * mpmath.quad(S, [t, mpmath.inf])  # P(R > t) = w int_t^oo S
        cuts = sorted({mpmath.mpf(0), t, *[t - k for k in range(int(t) + 1) if 0 < t - k < t],
                       *[_mp(x) for x in kinks if 0 < _mp(x) < t]})  # the vacation's own kinks (uniform: its ends)

        def f(x):
            return S(x) * _md1_tail(lam, t - x, dps + 10)

        # tanh-sinh at 0, where a vacation density may be singular (gamma: x^{a - 1}); Gauss-Legendre elsewhere
        total += w * (mpmath.quad(f, cuts[:2], method="tanh-sinh") + mpmath.quad(f, cuts[1:], method="gauss-legendre"))
        return total


def _erlang2(mean):
    """Erlang-2 of the given mean from its definition: S(x) = e^{-r x} (1 + r x), r = 2 / mean."""
    r = 2 / _mp(mean)
    return (lambda x: mpmath.exp(-r * x) * (1 + r * x)), _mp(mean), lambda lam: (r / (r + lam)) ** 2


def _coxian(a, b, p):
    """Coxian: Exp(a), then with probability p an Exp(b) more: S(x) = e^{-a x} + p a (e^{-a x} - e^{-b x}) / (b - a)."""
    a, b, p = _mp(a), _mp(b), _mp(p)
    return ((lambda x: mpmath.exp(-a * x) + p * a * (mpmath.exp(-a * x) - mpmath.exp(-b * x)) / (b - a)),
            1 / a + p / b, lambda lam: a / (a + lam) * (1 - p + p * b / (b + lam)))


def _rel(a, b):
    with mpmath.workdps(80):
        return abs(mpmath.mpf(a) - mpmath.mpf(b)) / abs(mpmath.mpf(b))


@pytest.mark.parametrize("vacation, policy, law", [
    (qd.Erlang(2, F(3, 2)), qd.VacationPolicy.MULTIPLE, lambda: _erlang2(F(3, 2))),
    # P not nilpotent: an infinite uniformized series
    (qd.Coxian((2, 3), (F(1, 2),)), qd.VacationPolicy.SINGLE, lambda: _coxian(2, 3, F(1, 2))),
])
def test_phase_type_vacations_against_the_convolution(vacation, policy, law):
    lam = F(3, 5)
    model = qd.VacationQueue(lam, qd.Constant(1), qd.Deterministic(1), vacation, policy)
    r = model.evaluate(20, wait_tail=["4.25"], sojourn_tail=["3.5"])
    with mpmath.workdps(30):
        S, f1, lst = law()
        c0 = lst(_mp(lam))
        want = _reference(lam, F(17, 4), S, f1, c0, policy.value)
        assert _rel(r.response["wait_tail"]["4.25"], want) < mpmath.mpf(10) ** -19
        if policy is qd.VacationPolicy.MULTIPLE:  # the sojourn W + D: P(W + D > t) = P(W > t - D)
            want = _reference(lam, F(5, 2), S, f1, c0, policy.value)
            assert _rel(r.response["sojourn_tail"]["3.5"], want) < mpmath.mpf(10) ** -19


def _batch_model(vacation):
    # the README's laws with a constant service: geometric batches of mean 5, D = 15 ms, load 0.6
    return qd.VacationQueue.from_load(F(3, 5), qd.Geometric(5), qd.Deterministic(F(3, 200)), vacation)


def test_mean_is_the_integral_of_the_tail_and_float64_agrees_with_30_digits():
    model = qd.VacationQueue.from_load(F(3, 10), qd.Constant(1), qd.Deterministic(1), qd.Erlang(2, F(1, 2)))
    D, n, K = F(1), 8, 12
    x, w = np.polynomial.legendre.leggauss(n)
    nodes = [str(D * k + D * F((xi + 1) / 2).limit_denominator(10**15)) for k in range(K) for xi in x]
    r = model.evaluate(wait_tail=nodes, wait_moments=1)
    tails = [r.response["wait_tail"][v] for v in nodes]
    # the tail is analytic between the kinks k D (Gauss-Legendre, 8 nodes: about 1e-14 there); beyond K D it
    # falls geometrically (the residual vacation's rate): the rest is the last interval's part times q / (1 - q)
    parts = [sum(float(D) * wi / 2 * tails[k * n + i] for i, wi in enumerate(w)) for k in range(K)]
    q = parts[-1] / parts[-2]
    assert 0 < q < 0.2 and parts[-1] < 1e-9 * float(r.mean_wait)  # the estimated rest is below 1e-10 relative
    integral = sum(parts) + parts[-1] * q / (1 - q)
    assert integral == pytest.approx(float(r.mean_wait), rel=1e-11)
    r30 = model.evaluate(30, wait_tail=[nodes[7], nodes[-3]])
    for t in (nodes[7], nodes[-3]):
        assert _rel(r.response["wait_tail"][t], r30.response["wait_tail"][t]) < 1e-14  # float64 or 15 digits


def test_batch_model_with_erlang_vacations_against_the_simulation():
    model = _batch_model(qd.Erlang(2, F(3, 40)))
    exact = model.evaluate(wait_tail=["0.1", "0.5"]).response
    sim = simulate(model, 20_000, 8, seed=5, quiet=True, wait_tail=(0.1, 0.5))
    for t in ("0.1", "0.5"):
        lo, hi = sim["wait_tail"][float(t)].interval(0.999)  # a seeded run: about 0.1 % chance to miss
        assert lo <= exact["wait_tail"][t] <= hi, (t, lo, hi)


@pytest.mark.parametrize("law", [qd.Erlang(3, F(1, 2)), qd.Coxian((2, 3), (F(1, 2),)),
                                 qd.PhaseType((F(1, 2), F(1, 2)), (-2, 1, 1, -3))])
def test_uniformized_pieces_reproduce_the_lst(law):
    import sympy as sp

    s = sp.Rational(7, 3)
    (w, theta, d, (alpha, P)), = law.survival_pieces()
    assert d is None and all(v >= 0 for row in P for v in row)
    n = len(alpha)
    M = sp.Matrix([[sp.Rational(v) for v in row] for row in P])
    a = sp.Matrix([[sp.Rational(v) for v in alpha]])
    # Laplace transform of w e^{-theta x} alpha e^{theta P x} 1 is w alpha ((s + theta) I - theta P)^{-1} 1
    laplace = sp.Rational(w) * (a * ((s + theta) * sp.eye(n) - theta * M).inv() * sp.ones(n, 1))[0, 0]
    assert sp.simplify(1 - s * laplace - law.lst(s)) == 0  # LST = 1 - s * (Laplace transform of P(T > x))


# -- vacations with a density and no pieces (gamma, lognormal, uniform): quadrature against the lattice part ----


def test_gamma_vacations_against_the_convolution():
    lam, shape, mean = F(3, 5), F(1, 2), F(3, 2)  # shape 1/2: a density singular at 0
    model = qd.VacationQueue(lam, qd.Constant(1), qd.Deterministic(1), qd.Gamma(shape, mean))
    r = model.evaluate(15, wait_tail=["3.25"])
    with mpmath.workdps(30):
        a, m = _mp(shape), _mp(mean)

        def S(x):  # the gamma law's survival function, regularized upper incomplete gamma (mpmath)
            return mpmath.gammainc(a, a * x / m, mpmath.inf, regularized=True)

        want = _reference(lam, F(13, 4), S, m, None, "multiple")
    assert _rel(r.response["wait_tail"]["3.25"], want) < mpmath.mpf(10) ** -14


def test_quadrature_path_agrees_with_the_exact_erlang_sum():
    # the same Erlang-2 law through the quadrature path (as for gamma) and through the exact pieces (L5)
    from qderive.numeric.engines import vacation_wait as VW

    model = qd.VacationQueue(F(1, 4), qd.Geometric(2), qd.Deterministic(1), qd.Erlang(2, F(1, 2)),
                             qd.VacationPolicy.SINGLE)
    t = F(7, 2)
    exact = model.evaluate(20, wait_tail=[str(t)]).response["wait_tail"][str(t)]
    by_quadrature, _ = VW._convolved_mp(model, F(1), t, 15)
    assert _rel(by_quadrature, exact) < mpmath.mpf(10) ** -14
    assert _rel(VW._convolved_float64(model, F(1), t), exact) < 1e-11


def test_lognormal_and_uniform_vacations_float64_against_20_digits():
    for vacation in (qd.LogNormal(F(3, 40), F(1, 2)), qd.Uniform(F(1, 50), F(1, 10))):
        model = _batch_model(vacation)
        r64 = model.evaluate(wait_tail=["0.05", "0.2"], sojourn_tail=["0.1"])
        r20 = model.evaluate(20, wait_tail=["0.2"])
        assert _rel(r64.response["wait_tail"]["0.2"], r20.response["wait_tail"]["0.2"]) < 1e-11
        assert 0 < r64.response["wait_tail"]["0.2"] < r64.response["wait_tail"]["0.05"] < 1


def test_uniform_vacation_quantile_is_the_root_of_the_independent_tail():
    # M/D/1 (D = 1, load 1/2) with uniform vacations on [1/2, 3/2]: the quantile (cell polynomials (L6), the
    # quadrature stopped at the vacation's upper end, the root search) against the convolution reference written
    # here (Erlang's sum, mpmath.quad): P(W > t_q) = 1 - q. The 20-digit quantile is good to 10^-20 relative, the
    # tail's slope t f / tail is about 3 here, so the reference at t_q must give 1 - q to 1e-17 (asked: 1e-16).
    lam, lo, hi = F(1, 2), F(1, 2), F(3, 2)
    model = qd.VacationQueue(lam, qd.Constant(1), qd.Deterministic(1), qd.Uniform(lo, hi))
    q20 = model.evaluate(20, wait_quantile=["0.99"]).response["wait_quantile"]["0.99"]
    q64 = model.evaluate(wait_quantile=["0.99"]).response["wait_quantile"]["0.99"]
    with mpmath.workdps(30):
        a, b = _mp(lo), _mp(hi)

        def S(x):  # the uniform law's survival function, from its definition
            return mpmath.mpf(1) if x <= a else (mpmath.mpf(0) if x >= b else (b - x) / (b - a))

        t = F(mpmath.nstr(q20, 25))
        want = _reference(lam, t, S, (a + b) / 2, None, "multiple", kinks=(lo, hi))
        assert _rel(want, mpmath.mpf("0.01")) < 1e-16
        assert _rel(q64, q20) < 1e-12  # float64 (tolerance 1e-13 in log t, tails to 1e-10 / slope)


def test_cell_polynomials_equal_the_direct_lattice_sum():
    # (L6) by the shift recurrence against (L2) summed directly (lattice_part_tails), geometric batches, 30 digits
    from qderive.numeric.backend import mp_context
    from qderive.numeric.engines import vacation_wait as VW
    from qderive.numeric.kernels.lattice_wait import lattice_cell_table, lattice_cell_tails, lattice_part_tails

    model = _batch_model(qd.Exponential(F(3, 40)))
    D = F(3, 200)
    with mp_context(30) as ctx:
        h = VW._table(model, ctx, 40)
        lam, rho = ctx.num(model.rate), ctx.num(model.rate * model.batch.mean * D)
        C, Cabs = lattice_cell_table(ctx, h, 40, ctx.num(D), lam)
        for y in (F(1, 100), F(1, 3), F(599, 1000)):
            j = int(y // D)
            got, bound = lattice_cell_tails(ctx, C, Cabs, ctx.array([ctx.num(y)]), [j], ctx.num(D), lam, rho)
            want, _ = lattice_part_tails(ctx, h, ctx.array([ctx.num(y)]), j, ctx.num(D), lam, rho)
            assert abs(got[0] - want[0]) <= 2 * bound[0] and bound[0] < 1e-20 * want[0]
