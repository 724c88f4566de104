"""The quadrature (F9) of a smooth vacation's residual weights in the finite room's lattice sums
(:mod:`qderive.numeric.kernels.vacation_quadrature`; issue 28 item 1), each against something computed another way:

* the weights sum_K sum_j Z[K, j] omega_K(u_j) of the kernel (gamma of shape 1/2 and 5/2, lognormal of scv 2) against
  mpmath's tanh-sinh quadrature of the definition (F2) at 20 digits (the survival functions in closed form, not
  the law's float64 code the kernel uses), and the kernel's error estimate covering the true error;
* the finite room's tails with an Erlang-2 vacation taken as a law with only a survival function against the exact
  sums (F1), (F4) of its matrix pieces (checked against a 50-digit chain in tests/test_wait_finite_lattice.py);
* the same sums at a small room with a gamma vacation of shape 1/2, re-summed with mpmath's weights at 20 digits
  over the engine's rows and columns;
* a gamma vacation at r = 300 against the infinite room's transform inversion at 15 digits (the loss is 1e-17);
* extreme laws (gamma of shape 1/20, lognormal of scv 100) inside the certified steps (F7); an empirical service on a
  lattice with an Erlang-2 vacation against the exact lattice sums (F5).
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric.backend import FLOAT64
from qderive.numeric.engines.vacation_finite_wait import (VacationRounding, response_laws, service_lattice_setup,
                                                           service_lattice_tails, wait_law_data)
from qderive.numeric.kernels import lattice_finite as LF
from qderive.numeric.kernels import vacation_quadrature as VQ

A, P = qd.Admission, qd.VacationPolicy


def _survival(law):
    """P(V > y) in closed form with mpmath (not the law's code): Q(1/2, z) = erfc(sqrt z), Q(5/2, z) = erfc(sqrt z) +
    e^{-z} 2 sqrt(z / pi) (1 + 2 z / 3) (DLMF 8.4.6 and 8.8.2), z = a y / m; the lognormal's erfc((ln y - mu) /
    (sigma sqrt 2)) / 2."""
    m = mpmath.mpf(law.mean.numerator) / law.mean.denominator
    if isinstance(law, qd.LogNormal):
        sigma2 = mpmath.log(1 + mpmath.mpf(F(law.scv).numerator) / F(law.scv).denominator)
        mu = mpmath.log(m) - sigma2 / 2
        return lambda y: mpmath.erfc((mpmath.log(y) - mu) / mpmath.sqrt(2 * sigma2)) / 2 if y > 0 else mpmath.mpf(1)
    a = mpmath.mpf(F(law.shape_value).numerator) / F(law.shape_value).denominator
    if a == mpmath.mpf(1) / 2:
        return lambda y: mpmath.erfc(mpmath.sqrt(a * y / m))
    assert a == mpmath.mpf(5) / 2
    return lambda y: mpmath.erfc(mpmath.sqrt(a * y / m)) + mpmath.exp(-a * y / m) * 2 * mpmath.sqrt(
        a * y / m / mpmath.pi) * (1 + 2 * a * y / m / 3)


def _omega(survival, lam, K, u):
    """omega_K(u) = int_0^oo Pois(K; lambda x) S(x + u) dx (F2) by mpmath.quad (tanh-sinh), the interval graded
    toward 0 (a branch point at x = -u) and cut at multiples of 1 / lambda."""
    lam = mpmath.mpf(lam)
    u = mpmath.mpf(u)
    f = lambda x: mpmath.exp(-lam * x) * (lam * x) ** K / mpmath.factorial(K) * survival(x + u)  # noqa: E731
    pts = [0] + [mpmath.mpf(2) ** -k for k in (24, 16, 10, 6)] + [k / lam for k in (1, 4, 16, 64)]
    return mpmath.quad(f, pts + [mpmath.inf])


@pytest.mark.parametrize("law", [qd.Gamma(F(1, 2), F(6, 100)), qd.Gamma(F(5, 2), F(6, 100)),
                                 qd.LogNormal(F(6, 100), 2)])
def test_the_weights_against_mpmath(law):
    lam, top = 11.5, 6
    piece = VQ.QuadraturePiece(lambda x: law.survival_many(np.asarray(x, dtype=float)), float(law.mean))
    rng = np.random.default_rng(7)
    W = rng.uniform(0.0, 1.0, (top + 1, 3))  # rows K x levels 0..2; the columns' rows K = 0, 3, 6 only (mpmath's cost)
    W[[1, 2, 4, 5]] = 0.0
    Amat = np.zeros((4, 3))
    Amat[:3] = rng.uniform(0.0, 1.0, (3, 3))  # levels x columns (the idle row last, unused here)
    us = [0.0007, 0.05, 0.4]
    with FLOAT64:
        value, error, _, _ = VQ.quadrature_columns(FLOAT64, lam, piece, W, Amat, us, 3)
        omega, rest, err, _ = VQ.quadrature_profile(piece, lam, W)
    Z = W @ Amat[:3]
    S = _survival(law)
    with mpmath.workdps(20):
        ref = mpmath.fsum(mpmath.mpf(Z[K, j]) * _omega(S, lam, K, us[j]) for K in (0, 3, 6) for j in range(3))
        ref0 = [_omega(S, lam, K, 0) for K in range(top + 1)]
    # the float64 survival function and Poisson weights: about 1e-14 relative; the estimate (the orders' difference,
    # the cell at 0, the rest beyond X, 1e-13 for survival_many) must cover the true error and stay below 1e-12
    assert abs(value - float(ref)) <= min(error, 1e-12 * float(ref)), (value, float(ref), error)
    for K in range(top + 1):
        assert abs(omega[K] - float(ref0[K])) <= min(err[K], 1e-12 * float(ref0[K])), (K, omega[K], ref0[K])
    # the rows beyond top: sum_{K > top} omega_K(0) = E V - sum_{K <= top} omega_K(0) (20 digits), bounded above
    with mpmath.workdps(20):
        true_rest = mpmath.mpf(law.mean.numerator) / law.mean.denominator - mpmath.fsum(ref0)
    assert float(true_rest) <= rest <= float(true_rest) + 1e-12


@pytest.mark.parametrize("admission,policy", [(A.PARTIAL, P.MULTIPLE), (A.WHOLE, P.SINGLE)])
def test_an_erlang_vacation_by_quadrature_meets_its_exact_sums(admission, policy):
    # an Erlang-2 vacation has exact matrix pieces (F4); taken as a law with only a survival function it takes the
    # quadrature (F9): the same tails to 1e-13 relative (measured 4e-15 at 4e-12), inside a bracket of 1e-11
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 5)),
                                             vacation=qd.Gamma(2, F(1, 2)), capacity=12, admission=admission,
                                             vacation_policy=policy)
    exact = response_laws(model)
    assert exact["wait"].bracket is None  # the exact sums (F1), (F4)
    got, _ = service_lattice_setup(model.service, None)
    setup = (got[0], VacationRounding(model.vacation), got[2], got[3], got[4])
    ts = [F(1, 4), F(1), F(5, 2), F(8)]  # P(W > 8) is about 4e-12
    law = wait_law_data(model)
    for kind in ("wait", "sojourn"):
        reference = exact[kind].tails(ts, None)[0]
        tails, bracket, _, _ = service_lattice_tails(law, setup, kind)
        for t, e in zip(ts, reference):
            v = tails([t], None)[0][0]
            lo, hi, _ = bracket(t)
            assert lo <= e <= hi and hi - lo <= 1e-11 * e, (kind, t, lo, e, hi)
            assert abs(v - e) <= 1e-13 * e, (kind, t, v, e)


def test_the_finite_sums_against_mpmath_weights():
    """P(W > t) at r = 6 with a gamma vacation of shape 1/2 (the branch point at 0): the engine's value against the
    same sums (F1) re-summed with the residual weights of mpmath's quadrature at 20 digits (the engine's rows w_K,
    admission weights and service periods, which the Erlang check above covers)."""
    model = qd.FiniteVacationQueue.from_load(F(1, 2), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 10)),
                                             vacation=qd.Gamma(F(1, 2), F(1, 5)), capacity=6)
    laws = response_laws(model)
    t = F(7, 20)
    value = laws["wait"].tails([t], None)[0][0]
    law = wait_law_data(model)
    parts = law._moment_parts(FLOAT64, 1)
    D = F(1, 10)
    with FLOAT64:
        # the service periods and the idle time by the kernel with the vacation's pieces left out, the vacation
        # periods' part by mpmath below; the total N(W > -1) is the true law's (as in the engine)
        no_vac = LF.ConstantSums(parts, D, ())
        Amat, r, lam = no_vac.A, no_vac.r, float(parts[0].lam)
        base = no_vac._sum(t)[0]
        total = FLOAT64.fsum([d.N0 for d in parts])
    J0 = int(-((-t) // D))
    us = [float(t - j * D) for j in range(J0)]
    W = parts[0].Wv
    S = _survival(model.vacation)
    with mpmath.workdps(20):
        vac_part = mpmath.mpf(0)
        for K in range(W.shape[0]):
            for j in range(r + 1):
                weight = mpmath.fsum(mpmath.mpf(W[K, n]) * mpmath.mpf(Amat[n, j]) for n in range(r))
                if weight:
                    u = us[j] if j < J0 else 0
                    vac_part += weight * _omega(S, lam, K, u)
        ref = (base + vac_part) / mpmath.mpf(total)
    # 1e-12: the kernel's float64 weights (1e-14) and the rounding of the rows' sums
    assert abs(value - float(ref)) <= 1e-12 * float(ref), (value, float(ref))


def test_a_gamma_vacation_at_a_large_room_meets_the_infinite_room():
    # r = 300 at load 0.55: the loss is 1.1e-17, so the finite room's P(W > 0.5) is the infinite room's to ~1e-15.
    # 0.00748904029191064: `qderive eval vacation-infinite --batch geometric:mean=4 --service det:mean=0.012
    # --vacation gamma:shape=2.5,mean=0.06 --load 0.55 --wait-tail 0.5 --digits 15` (the infinite room's
    # quadrature against its lattice part, engines/vacation_wait.py; no code shared with the finite sums)
    model = qd.FiniteVacationQueue.from_load(F(55, 100), batch=qd.Geometric(4), service=qd.Deterministic(F(12, 1000)),
                                             vacation=qd.Gamma(F(5, 2), F(6, 100)), capacity=300)
    got = response_laws(model)["wait"].tails([F(1, 2)], None)[0][0]
    # 1e-12: the quadrature's estimate (~1e-13) and the infinite reference's 15 digits
    assert abs(got - 0.00748904029191064) <= 1e-12 * 0.00748904029191064, got


def test_a_service_on_a_lattice_with_an_erlang_vacation_by_quadrature():
    # an empirical service on the lattice 1/20 with an Erlang-2 vacation: the exact lattice sums (F5) with the matrix
    # pieces (F4) against the same service with the vacation taken by quadrature (F9), where the levels are chosen so
    # that the service rounds to itself (one sum for both bounds): 1e-12 relative (the quadrature's ~1e-13)
    from qderive.symbolic.laws.empirical import Empirical

    service = Empirical((F(1, 10), F(3, 20), F(3, 10), F(3, 20)))
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=service,
                                             vacation=qd.Gamma(2, F(1, 2)), capacity=10)
    exact = response_laws(model)
    assert exact["wait"].bracket is None  # the exact lattice sums
    got, _ = service_lattice_setup(model.service, None)
    setup = (got[0], VacationRounding(model.vacation), got[2], got[3], got[4])
    ts = [F(1, 3), F(3, 2), F(4)]
    # the exact sums under the precision policy (float64 where their bound allows, else 15 digits)
    got = model.evaluate(wait_tail=[str(t) for t in ts]).response["wait_tail"]
    reference = [float(got[str(t)]) for t in ts]
    tails, bracket, _, _ = service_lattice_tails(wait_law_data(model), setup, "wait")
    for t, e in zip(ts, reference):
        v = tails([t], None)[0][0]
        lo, hi, _ = bracket(t)
        assert abs(v - e) <= 1e-12 * e and lo <= e <= hi and hi - lo <= 1e-11 * e, (t, lo, v, e, hi)


@pytest.mark.parametrize("vacation", [qd.Gamma(F(1, 20), F(1, 2)), qd.LogNormal(F(1, 2), 100)])
def test_the_quadrature_lies_inside_the_certified_steps(vacation):
    # extreme laws (a gamma of shape 1/20: S(x) = 1 - O(x^(1/20)) at 0; a lognormal of scv 100): the quadrature's value
    # and its bracket inside the certified bracket of the steps (F7) at 1024 levels (a method that shares only the
    # state at the arrival with it), the quadrature's bracket 1e-9 wide at most
    from qderive.numeric.engines.vacation_finite_wait import VacationBounds
    from qderive.symbolic.limits import limits

    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 5)),
                                             vacation=vacation, capacity=8)
    got, _ = service_lattice_setup(model.service, None)
    law = wait_law_data(model)
    for t in (F(1, 2), F(3)):
        quad = service_lattice_tails(law, (got[0], VacationRounding(vacation), got[2], got[3], got[4]), "wait")
        v = quad[0]([t], None)[0][0]
        qlo, qhi, _ = quad[1](t)
        with limits(lattice_levels=1024):
            steps = service_lattice_tails(law, (got[0], VacationRounding(vacation, VacationBounds.STEPS), got[2],
                                                got[3], got[4]), "wait")
            lo, hi, _ = steps[1](t)
        assert lo <= qlo <= v <= qhi <= hi and qhi - qlo <= 1e-9 * v, (t, lo, qlo, v, qhi, hi)


@pytest.mark.parametrize("admission,policy", [(A.PARTIAL, P.SINGLE), (A.WHOLE, P.SINGLE)])  # multiple: P(W = 0) = 0
def test_the_atom_from_the_moments_data_is_the_transforms(admission, policy):
    # P(W = 0) for these laws comes from the moments' data (the count sequences as far as the rows reach): the same
    # number as from the transform's data (counts to negligibility), within 1e-13 (their own roundings)
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 5)),
                                             vacation=qd.Gamma(F(5, 2), F(1, 2)), capacity=8, admission=admission,
                                             vacation_policy=policy)
    w = wait_law_data(model)
    response_laws(model, w)
    assert w.rows_atom
    rows = w.p_zero("wait")(FLOAT64)
    w.rows_atom = False
    full = w.p_zero("wait")(FLOAT64)
    assert 0 < full < 1 and abs(rows - full) <= 1e-13 * full, (rows, full)


def test_the_quantile_note_prints_two_distinct_bounds_around_the_quantile():
    """The quadrature's bracket is about 1e-11 wide, so 8 significant digits printed "between x and x"; the note now
    prints as many digits as the two bounds need to differ (the old note fails the first assertion here). The bounds
    printed must lie on either side of the quantile found (another computation: the search on the estimate), within
    1e-6 of it relative (the quadrature's error estimate is about 1e-11)."""
    model = qd.FiniteVacationQueue.from_load(F(1, 2), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 10)),
                                             vacation=qd.Gamma(F(1, 2), F(1, 5)), capacity=6)
    r = model.evaluate(wait_quantile=["0.99"])
    q = float(r.response["wait_quantile"]["0.99"])
    note = next(n for n in r.notes if "is between" in n)
    lo_text, hi_text = note.split("is between ")[1].split(" (")[0].split(" and ")
    assert lo_text != hi_text, note
    lo, hi = float(lo_text), float(hi_text)
    assert lo <= q <= hi and hi - lo <= 1e-6 * q, (lo, q, hi)
