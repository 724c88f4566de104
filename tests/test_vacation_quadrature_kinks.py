"""The quadrature (F9) of a kinked vacation (a uniform law: its survival function analytic between its ends) with a
service on a lattice (:mod:`qderive.numeric.kernels.vacation_quadrature`, *Kinks*; issue 28 item 1), each against
something computed another way:

* the kernel's weights sum_K sum_j Z[K, j] omega_K(u_j) against mpmath's quadrature of (F2) at 30 digits, the
  piecewise-linear survival function written here (not the law's code) and the interval split at its kinks;
* the finite room's tails at r = 6 re-summed with those mpmath weights over the engine's rows and columns, near the
  largest wait; 20 digits (tails and a quantile) against the same sums at 30 digits;
* r = 300 against the infinite room's exact lattice sums (``vacation-infinite``: a uniform vacation as a mixture of
  constants, engines/vacation_wait.py; no code shared with the quadrature) at 15 digits, tails 6.5e-3 and 3.5e-6;
* an empirical service on a lattice: the quadrature inside the certified steps (F7) of the same model.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric.backend import FLOAT64
from qderive.numeric.engines.vacation_finite_wait import (VacationBounds, VacationRounding, response_laws,
                                                           rounded_vacation_setup, service_lattice_tails,
                                                           wait_law_data)
from qderive.numeric.kernels import lattice_finite as LF
from qderive.numeric.kernels import vacation_quadrature as VQ


def _uniform_survival(a, b):
    """P(V > y) of a uniform law on [a, b], written here with mpmath: 1, (b - y) / (b - a), 0."""
    a, b = mpmath.mpf(a.numerator) / a.denominator, mpmath.mpf(b.numerator) / b.denominator
    return lambda y: mpmath.mpf(1) if y <= a else (mpmath.mpf(0) if y >= b else (b - y) / (b - a))


def _omega(survival, kinks, lam, K, u):
    """omega_K(u) = int_0^oo Pois(K; lambda x) S(x + u) dx (F2) by mpmath.quad, the interval cut at the kinks
    x = k - u (the integrand is analytic between them) and at multiples of 1 / lambda."""
    lam, u = mpmath.mpf(lam), mpmath.mpf(u)
    f = lambda x: mpmath.exp(-lam * x) * (lam * x) ** K / mpmath.factorial(K) * survival(x + u)  # noqa: E731
    cuts = sorted({mpmath.mpf(k.numerator) / k.denominator - u for k in kinks} | {k / lam for k in (1, 4, 16)})
    return mpmath.quad(f, [0] + [c for c in cuts if c > 0] + [mpmath.inf])


def test_the_kinked_weights_against_mpmath():
    a, b = F(1, 50), F(1, 10)
    law = qd.Uniform(a, b)
    lam, top = 11.5, 6
    piece = VQ.QuadraturePiece(lambda x: law.survival_many(np.asarray(x, dtype=float)), float(law.mean), (a, b))
    rng = np.random.default_rng(5)
    W = rng.uniform(0.0, 1.0, (top + 1, 3))
    W[[1, 2, 4, 5]] = 0.0  # the rows K = 0, 3, 6 only (mpmath's cost)
    Amat = np.zeros((4, 4))
    Amat[:3] = rng.uniform(0.0, 1.0, (3, 4))
    us = [0.0007, 0.012, 0.05, 0.085]  # columns before, between and across the kinks (k - u for k = a, b)
    with FLOAT64:
        value, error, _, _ = VQ.quadrature_columns(FLOAT64, lam, piece, W, Amat, us, 4)
        omega, rest, err, _ = VQ.quadrature_profile(piece, lam, W)
    Z = W @ Amat[:3]
    S = _uniform_survival(a, b)
    with mpmath.workdps(30):
        ref = mpmath.fsum(mpmath.mpf(Z[K, j]) * _omega(S, (a, b), lam, K, us[j]) for K in (0, 3, 6) for j in range(4))
        ref0 = [_omega(S, (a, b), lam, K, 0) for K in range(top + 1)]
    # float64 Poisson weights and survival function: ~1e-14 relative; the estimate must cover the true error and stay
    # below 1e-12 (without the split at the kinks the two orders differ by ~1e-4 and the mesh bisects to its limit)
    assert abs(value - float(ref)) <= min(error, 1e-12 * float(ref)), (value, float(ref), error)
    for K in range(top + 1):
        assert abs(omega[K] - float(ref0[K])) <= min(err[K], 1e-12 * float(ref0[K])), (K, omega[K], ref0[K])
    with mpmath.workdps(30):
        true_rest = mpmath.mpf(3) / 50 - mpmath.fsum(ref0)  # sum_{K > top} omega_K(0) = E V - sum_{K <= top}
    assert float(true_rest) <= rest <= float(true_rest) + 1e-12
    # the meshes are split at the kinks, so Gauss-Legendre converges geometrically on every cell: 3 or 4 cells each
    # (measured; without the split the bisection finds the kinks itself with 47 to 49 cells per mesh)
    assert max(mesh.cells for mesh in piece.meshes.values()) <= 8


def _small_model():
    return qd.FiniteVacationQueue.from_load(F(1, 2), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 10)),
                                            vacation=qd.Uniform(F(1, 20), F(3, 10)), capacity=6)


@pytest.mark.parametrize("t", [F(7, 20), F(3, 4), F(79, 100)])
def test_the_small_room_against_mpmath_weights(t):
    """P(W > t) at r = 6 (t = 7/20: about 0.27; 3/4: 3e-4; 79/100: near the largest wait, 4/5): the engine's value
    and bracket against the same sums (F1) re-summed with the residual weights of mpmath's quadrature at 30 digits
    (the engine's rows w_K, admission weights and service periods: the Erlang checks of
    tests/test_vacation_quadrature.py cover those)."""
    model = _small_model()
    laws = response_laws(model)
    assert laws["wait"].bracket is not None
    value = laws["wait"].tails([t], None)[0][0]
    lo, hi, _ = laws["wait"].bracket(t)
    law = wait_law_data(model)
    parts = law._moment_parts(FLOAT64, 1)
    D = F(1, 10)
    with FLOAT64:
        no_vac = LF.ConstantSums(parts, D, ())
        Amat, r, lam = no_vac.A, no_vac.r, float(parts[0].lam)
        base = no_vac._sum(t)[0]
        total = FLOAT64.fsum([d.N0 for d in parts])
    J0 = int(-((-t) // D))
    us = [t - j * D for j in range(J0)]
    W = parts[0].Wv
    S = _uniform_survival(F(1, 20), F(3, 10))
    with mpmath.workdps(30):
        vac_part = mpmath.mpf(0)
        for K in range(W.shape[0]):
            for j in range(r + 1):
                weight = mpmath.fsum(mpmath.mpf(W[K, n]) * mpmath.mpf(Amat[n, j]) for n in range(r))
                if weight:
                    u = us[j] if j < J0 else F(0)
                    u = mpmath.mpf(u.numerator) / u.denominator
                    vac_part += weight * _omega(S, (F(1, 20), F(3, 10)), lam, K, u)
        ref = float((base + vac_part) / mpmath.mpf(total))
    # 1e-11: the float64 rows and weights (measured 1e-14 .. 1e-13); the bracket must hold the reference up to the
    # rows' own rounding (1e-13) and be at most 1e-9 wide (issue 28: 1e-9 relative for tails >= 1e-6)
    assert abs(value - ref) <= 1e-11 * ref, (value, ref)
    assert lo * (1 - 1e-13) <= ref <= hi * (1 + 1e-13) and hi - lo <= 1e-9 * ref, (lo, ref, hi)


@pytest.mark.parametrize("t,reference", [
    # `qderive eval vacation-infinite --batch geometric:mean=4 --service det:mean=0.012 --vacation
    # uniform:low=0.02,high=0.1 --load 0.55 --wait-tail 0.5,1.2 --digits 15` (the infinite room's exact sums of a
    # mixture of constant vacations; the loss at r = 300 is 2.6e-18, so the rooms agree to ~1e-15)
    (F(1, 2), 0.00652125785655428),
    (F(6, 5), 3.52446411047874e-6),
])
def test_a_large_room_meets_the_infinite_room(t, reference):
    model = qd.FiniteVacationQueue.from_load(F(55, 100), batch=qd.Geometric(4), service=qd.Deterministic(F(12, 1000)),
                                             vacation=qd.Uniform(F(2, 100), F(1, 10)), capacity=300)
    got = response_laws(model)["wait"].tails([t], None)[0][0]
    # 1e-10: the quadrature (measured 3e-15 and 6e-12) and the reference's 15 digits (the (F7) steps at 8192 levels
    # were 6e-5 wide here)
    assert abs(got - reference) <= 1e-10 * reference, got


@pytest.mark.parametrize("admission,policy,kind", [(qd.Admission.PARTIAL, qd.VacationPolicy.MULTIPLE, "wait"),
                                                   (qd.Admission.WHOLE, qd.VacationPolicy.SINGLE, "sojourn")])
def test_a_sample_service_with_a_uniform_vacation_lies_inside_the_steps(admission, policy, kind):
    # an empirical service on the lattice 1/20 with a uniform vacation: the quadrature (F9) at the kinks, its value and
    # bracket inside the certified bracket of the steps (F7) at 1024 levels (shares only the state at the arrival)
    from qderive.symbolic.laws.empirical import Empirical
    from qderive.symbolic.limits import limits

    vacation = qd.Uniform(F(1, 20), F(7, 10))
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2),
                                             service=Empirical((F(1, 10), F(3, 20), F(3, 10), F(3, 20))),
                                             vacation=vacation, capacity=8, admission=admission,
                                             vacation_policy=policy)
    setup = rounded_vacation_setup(model.service, model.vacation)
    assert setup[1].lattice == F(1, 20) and setup[1].smooth  # the quadrature, split at k - u_j
    law = wait_law_data(model)
    quad = service_lattice_tails(law, setup, kind)
    for t in (F(1, 2), F(2)):
        v = quad[0]([t], None)[0][0]
        qlo, qhi, _ = quad[1](t)
        with limits(lattice_levels=1024):
            steps = service_lattice_tails(law, (setup[0], VacationRounding(vacation, VacationBounds.STEPS),
                                                *setup[2:]), kind)
            lo, hi, _ = steps[1](t)
        assert lo <= qlo <= v <= qhi <= hi and qhi - qlo <= 1e-9 * v, (t, lo, qlo, v, qhi, hi)


def test_a_kinked_vacation_off_every_lattice_keeps_the_steps():
    # a uniform service (rounded to up to 2^13 levels: the kinks' points k - u_j would be k / h): the steps (F7)
    setup = rounded_vacation_setup(qd.Uniform(F(1, 10), F(3, 10)), qd.Uniform(F(1, 20), F(7, 10)))
    assert setup[1].lattice is None and not setup[1].smooth


@pytest.mark.parametrize("law,u", [(qd.Uniform(F(1, 5), F(3)), 0.0), (qd.Uniform(F(1, 5), F(3)), 0.45),
                                   (qd.Gamma(2, F(6, 100)), 0.013), (qd.Gamma(3, F(1, 2)), 0.2)])
def test_the_remainder_bound_holds_the_true_error(law, u):
    """The error bound (:func:`~qderive.numeric.kernels.vacation_quadrature.remainder_bound`: Gauss-Legendre on
    Bernstein ellipses, the law's ``survival_bound`` off the real axis) of a 6-node rule on wide cells, where the rule's
    true error (against mpmath's quadrature at 30 digits of the integrand written here) is far above the float64
    rounding: the bound must hold it on every cell (it is loose: up to ~1e7 times the error on these cells)."""
    lam, K = 11.5, 8
    piece = VQ.QuadraturePiece(lambda x: law.survival_many(np.asarray(x, dtype=float)), float(law.mean),
                               law.survival_kinks(), law.survival_bound)
    kinks = [float(k) - u for k in law.survival_kinks() if float(k) > u]
    edges = sorted({0.0, 0.5, 1.5, 4.0, *kinks})
    mesh = VQ.QuadratureMesh(edges, lam, K, 0.0)
    Z = np.zeros((K + 1, 1))
    Z[K] = 1.0  # the row K alone
    n = 6
    bound = VQ.remainder_bound(piece, mesh, Z, [u], n=n)[:, 0]
    t, w = np.polynomial.legendre.leggauss(n)
    seen = 0
    with mpmath.workdps(30):
        lam_mp, u_mp = mpmath.mpf(lam), mpmath.mpf(u)

        def f(x):
            return mpmath.exp(-lam_mp * x) * (lam_mp * x) ** K / mpmath.factorial(K) * law.survival(x + u_mp)
        for i in range(mesh.cells):
            a, b = edges[i], edges[i + 1]
            truth = mpmath.quad(f, [a, b])
            rule = mpmath.fsum(mpmath.mpf(float(wk)) * (b - a) / 2
                               * f(mpmath.mpf((a + b) / 2 + (b - a) / 2 * float(tk))) for tk, wk in zip(t, w))
            err = abs(rule - truth)
            assert err <= bound[i], (i, a, b, err, bound[i])
            seen += err > 1e-12
    assert seen  # at least one cell where the rule's error is far above rounding: the check can fail


@pytest.mark.parametrize("law", [qd.Gamma(2, F(6, 100)), qd.Gamma(5, F(1, 2)), qd.Uniform(F(1, 5), F(3))])
def test_the_survival_bound_holds_the_continuation(law):
    """``survival_bound`` (the laws' hook) against |S(z)| at random points of its rectangles: for a gamma law of integer
    shape k, S(z) = Q(k, k z / m) by mpmath's gammainc at complex arguments; for a uniform law the piece at the center
    (1, (b - z) / (b - a) or 0) written here."""
    rng = np.random.default_rng(11)
    lo = rng.uniform(-0.5, 3.0, 40)
    hi = lo + rng.uniform(0.0, 1.0, 40)
    height = rng.uniform(0.0, 1.0, 40)
    center = (lo + hi) / 2
    got = law.survival_bound(center, lo, hi, height)
    for i in range(40):
        for _ in range(5):
            z = mpmath.mpc(rng.uniform(lo[i], hi[i]), rng.uniform(-height[i], height[i]))
            if isinstance(law, qd.Uniform):
                a, b = mpmath.mpf(1) / 5, mpmath.mpf(3)
                s = 1 if center[i] < a else ((b - z) / (b - a) if center[i] < b else 0)
            else:
                k = int(law.shape_value)
                s = mpmath.gammainc(k, k * z / (mpmath.mpf(law.mean.numerator) / law.mean.denominator), mpmath.inf,
                                    regularized=True)
            assert abs(s) <= got[i], (i, z, abs(s), got[i])


@pytest.mark.parametrize("vacation,t", [
    (qd.Uniform(F(1, 20), F(3, 10)), F(7, 20)),
    (qd.Uniform(F(1, 20), F(3, 10)), F(3, 4)),
    pytest.param(qd.Gamma(F(5, 2), F(1, 5)), F(7, 10), marks=pytest.mark.slow),  # 3 s: the gamma's mpmath survival
])
def test_twenty_digits_against_mpmath_weights_at_thirty(vacation, t):
    """--digits 20 (the quadrature (F9) at D digits: the same cells, 24 and 48 nodes, mpmath's arithmetic) at r = 6
    against the sums (F1) re-summed at 30 digits with the residual weights of mpmath's quadrature of (F2) (the rows
    w_K, admission weights and the service periods of the kernel at 30 digits: a computation that shares with the
    engine only the state at the arrival)."""
    model = qd.FiniteVacationQueue.from_load(F(1, 2), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 10)),
                                             vacation=vacation, capacity=6)
    got = model.evaluate(wait_tail=[str(t)], digits=20).response["wait_tail"][str(t)]
    with mpmath.workdps(30):
        ref = _reference_tail(model, t)
        # 1e-20 relative: the digits asked (the reference's own error is below 1e-25)
        assert abs(mpmath.mpf(got) - ref) <= mpmath.mpf(10) ** -20 * ref, (got, ref)


def test_a_twenty_digit_quantile_meets_the_reference_tail():
    """--wait-quantile 0.99 --digits 20 (the search over the tails at 25 digits by the quadrature at D digits): the
    reference tail of the test above at the quantile returned is 0.01 to 1e-18 relative (the tail's slope there
    times 1e-20 of q; measured: 4e-27)."""
    model = qd.FiniteVacationQueue.from_load(F(1, 2), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 10)),
                                             vacation=qd.Uniform(F(1, 20), F(3, 10)), capacity=6)
    q = model.evaluate(wait_quantile=["0.99"], digits=20).response["wait_quantile"]["0.99"]
    with mpmath.workdps(30):
        ref = _reference_tail(model, F(str(q)))
        assert abs(ref - mpmath.mpf(1) / 100) <= mpmath.mpf(10) ** -18 / 100, (q, ref)


def _reference_tail(model, t):
    """P(W > t) of a model with a constant service 1/10 at 30 digits: the sums (F1) over the kernel's rows, admission
    weights and service periods at 30 digits, the vacation periods' residual weights by mpmath's quadrature of (F2)."""
    from qderive.numeric.backend import mp_context

    vacation = model.vacation
    law = wait_law_data(model)
    ctx = mp_context(30)
    D = F(1, 10)
    with ctx:
        parts = law._moment_parts(ctx, 1)
        no_vac = LF.ConstantSums(parts, D, ())
        Amat, r, lam = no_vac.A, no_vac.r, parts[0].lam
        base = no_vac._sum(t)[0]
        total = ctx.fsum([d.N0 for d in parts])
        J0 = int(-((-t) // D))
        W = parts[0].Wv
        if isinstance(vacation, qd.Uniform):
            S, kinks = _uniform_survival(vacation.low, vacation.high), (vacation.low, vacation.high)
        else:
            S, kinks = vacation.survival, ()
        vac_part = mpmath.mpf(0)
        for K in range(W.shape[0]):
            for j in range(r + 1):
                weight = mpmath.fsum(W[K, n] * Amat[n, j] for n in range(r))
                if weight:
                    u = t - j * D if j < J0 else F(0)
                    vac_part += weight * _omega(S, kinks, lam, K, mpmath.mpf(u.numerator) / u.denominator)
        return (base + vac_part) / total
