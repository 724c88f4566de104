"""Tails of the wait and the sojourn in the finite room for a vacation law with no exact survival pieces (gamma of any
shape, lognormal, uniform) with a constant, empirical, uniform or lognormal service (issue 28 item 1; the bounds (F7)
of :mod:`qderive.numeric.kernels.lattice_finite` and ``VacationRounding`` of
``numeric/engines/vacation_finite_wait.py``), each against something computed another way:

* the exact sums (F1), (F4) of an Erlang-2 vacation (a gamma law of integer shape: matrix-exponential pieces, checked
  against a 50-digit chain in tests/test_wait_finite_lattice.py) inside the bounds (F7) of the same law taken as a
  law with only a survival function, the bracket shrinking as h halves; and the service-lattice sums (F5) of a
  constant service against its own sums (F1), with sums of services wholly beyond the lattice's span;
* the pieces of (F7) as survival functions below and above the law's own, the cdf by mpmath (not the law's
  ``survival_many``);
* the steps' residual weights against mpmath's quadrature of their definition (F2);
* seeded simulations' 99 % intervals for a lognormal, a gamma (shape 5/2) and a uniform vacation, both admission rules
  and both vacation policies;
* the refusals that remain, from the laws alone.
"""

from __future__ import annotations

import time
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from bracket_checks import assert_brackets_overlap_the_simulation
from qderive.numeric.backend import FLOAT64
from qderive.numeric.engines.vacation_finite_wait import (VacationBounds, VacationRounding, response_laws,
                                                           service_lattice_setup, service_lattice_tails, wait_law_data)
from qderive.numeric.kernels import lattice_finite as LF
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws.empirical import Empirical
from qderive.symbolic.limits import limits

P, A = qd.VacationPolicy, qd.Admission


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


@pytest.mark.parametrize("admission,policy", [(A.PARTIAL, P.MULTIPLE), (A.WHOLE, P.SINGLE)])
def test_bounds_of_an_erlang_vacation_hold_its_exact_sums_and_shrink(admission, policy):
    # an Erlang-2 vacation has exact pieces (F4); taken as a law with only a survival function, the steps (F7) (forced:
    # a smooth law takes the quadrature (F9), tests/test_vacation_quadrature.py) must bracket them.
    # r = 12: at t = 1/4 the span is c = 2/5 and the sums of 3 or more services lie wholly beyond it (their lattice
    # rows were left at P(S_j > c) = 0 once one row was empty, so that an arrival with 4 or more ahead never waited
    # longer than t: 4 % low at r = 129 in the SIP question)
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 5)),
                                             vacation=qd.Gamma(2, F(1, 2)), capacity=12, admission=admission,
                                             vacation_policy=policy)
    exact = response_laws(model)  # the constant service's sums (F1) with the matrix pieces (F4)
    assert exact["wait"].bracket is None
    got, _ = service_lattice_setup(model.service, None)
    setup = (got[0], VacationRounding(model.vacation, VacationBounds.STEPS), got[2], got[3], got[4])
    ts = [F(1, 4), F(1), F(5, 2)]
    law = wait_law_data(model)
    for kind in ("wait", "sojourn"):
        reference = exact[kind].tails(ts, None)[0]
        widths = []
        for levels in (256, 1024):
            with limits(lattice_levels=levels):
                for t, e in zip(ts, reference):  # each t on its own lattice (the span follows the largest t asked)
                    tails, bracket, _, _ = service_lattice_tails(law, setup, kind)
                    v = tails([t], None)[0][0]
                    lo, hi, n = bracket(t)
                    # the certified bounds hold the exact float64 sums (1e-12: their own rounding, within 1e-10 of
                    # the 50-digit chain by the policy), and the estimate lies inside them
                    assert n == levels and lo <= v <= hi, (kind, t, lo, v, hi)
                    assert lo - 1e-12 <= e <= hi + 1e-12, (kind, levels, t, lo, e, hi)
                    widths.append(hi - lo)
                    # the Richardson estimate is far closer than the bracket's width (second order in h)
                    assert abs(v - e) <= 0.1 * (hi - lo) + 1e-12, (kind, t, v, e, hi - lo)
        k = len(ts)
        for i in range(k):  # two halvings of h at least halve the width (first order in h: about a quarter)
            assert widths[k + i] <= 0.5 * widths[i], (kind, widths)


@pytest.mark.parametrize("law,cdf", [
    (qd.LogNormal(F(6, 100), 2), lambda x: mpmath.ncdf((mpmath.log(x) - (mpmath.log(mpmath.mpf(6) / 100)
                                                                        - mpmath.log(3) / 2)) / mpmath.sqrt(mpmath.log(3)))),
    (qd.Gamma(F(5, 2), F(6, 100)), lambda x: mpmath.gammainc(mpmath.mpf(5) / 2, 0, mpmath.mpf(5) / 2 * x / (
        mpmath.mpf(6) / 100), regularized=True)),
])
def test_the_pieces_bound_the_survival_function(law, cdf):
    """(F7): the lattice part plus the steps is below P(V > y) (lower) and above it (upper) at every y, the upper part's
    miss beyond the last step is E (V - c_L)^+; P(V > y) by mpmath's cdf at 30 digits."""
    h, N = F(1, 2000), 256  # c = 0.128: P(V > c) = 0.1 (lognormal)
    down, up, cap = VacationRounding(law, VacationBounds.STEPS).pieces(h, N, 10.0)

    def survival(pieces, y):
        lat, steps = pieces[0], (pieces[1] if len(pieces) > 1 else None)
        m = np.arange(len(lat.b))
        value = float(np.sum(lat.b[m * float(h) > y]))
        if steps is not None:
            value += float(np.sum(steps.w[steps.d > y]))
        return value

    rng = np.random.default_rng(5)
    ys = np.concatenate([rng.uniform(0, 0.2, 300), rng.uniform(0.1, 3, 300), np.arange(N) * float(h)])
    with mpmath.workdps(30):
        for y in ys:
            true = float(1 - cdf(mpmath.mpf(float(y)))) if y > 0 else 1.0
            # 1e-14: the float64 differences of survival_many that make the pmfs
            assert survival(down, y) <= true + 1e-14 and survival(up, y) >= true - 1e-14, (y, true)
    # the upper bound's term beyond the last step c_L is E (V - c_L)^+ = int_{c_L}^oo P(V > y) dy (mpmath's quadrature;
    # 1e-8 relative: the law's stop_loss at 20 digits, the quadrature of a tail over [c_L, oo))
    with mpmath.workdps(30):
        c_last = mpmath.mpf(float(up[1].d[-1]))
        true = mpmath.quad(lambda y: 1 - cdf(y), [c_last, 2 * c_last, 8 * c_last, mpmath.inf])
    assert abs(cap - float(true)) <= 1e-8 * float(true) and cap < 1e-9  # lambda c_L = 500: negligible


def test_the_steps_weights_against_quadrature():
    # omega_K(u) = sum_i w_i int_0^oo Pois(K; lambda x) 1{x + u < d_i} dx (F2) by mpmath.quad, against step_profile
    # (u = 0) and step_columns (u > 0, exact columns: spacing 0)
    lam, top = 3.0, 5
    w, d = np.array([0.25, 0.5, 0.125]), np.array([0.7, 1.9, 6.0])
    piece = LF.StepPieces(w, d)
    with FLOAT64:
        om, rest, _ = LF.step_profile(FLOAT64, lam, piece, top)
    with mpmath.workdps(30):
        def omega(K, u):
            return mpmath.fsum(mpmath.mpf(wi) * mpmath.quad(lambda x: mpmath.exp(-lam * x) * (lam * x) ** K
                                                            / mpmath.factorial(K), [0, max(di - u, 0)])
                               for wi, di in zip(w, d))
        for K in range(top + 1):
            assert abs(om[K] - float(omega(K, 0))) <= 1e-13 * float(omega(K, 0)), K
        # sum_{K > top} omega_K(0) = sum_i w_i (d_i - sum_{K <= top} R_K(d_i)): the remainder bounds it, tightly
        true_rest = float(mpmath.fsum(w) * 0 + sum(mpmath.mpf(wi) * (mpmath.mpf(di) - mpmath.fsum(
            mpmath.quad(lambda x: mpmath.exp(-lam * x) * (lam * x) ** K / mpmath.factorial(K), [0, di])
            for K in range(top + 1))) for wi, di in zip(w, d)))
        assert true_rest <= rest <= true_rest + 1e-12
        # one level, rows W (K x 1), columns with A = 1 (u_0, u_1): the sum of the rows' omega at the columns' u
        W = np.array([[0.5], [0.25], [0.125], [0.0625], [0.03125], [0.015625]])
        Aones = np.array([[1.0, 1.0], [0.0, 0.0]])  # levels 0..r-1 = 0 and the idle row
        us = [0.4, 1.3]
        with FLOAT64:
            value, _, reach = LF.step_columns(FLOAT64, lam, piece, W, Aones, us, 2)
        expected = sum(float(W[K, 0] * omega(K, u)) for K in range(top + 1) for u in us)
        assert abs(value - expected) <= 1e-13 * expected and reach[0] == 2.0


def _sample():
    return Empirical(tuple(F(int(v * 10**6), 10**6) + F(1, 10**7) for v in
                           np.random.default_rng(3).lognormal(np.log(0.2), 0.6, 200)))  # off every coarse lattice


# about 3 to 5 s each: the lognormal's count sequences (the state at the arrival) and the simulation
_SLOW = pytest.mark.slow


@pytest.mark.parametrize("service,vacation,admission,policy", [
    pytest.param(qd.Deterministic(F(1, 5)), qd.Gamma(F(5, 2), F(1, 2)), A.PARTIAL, P.MULTIPLE, marks=_SLOW),
    (qd.Uniform(F(1, 10), F(2, 5)), qd.Gamma(F(5, 2), F(1, 2)), A.WHOLE, P.SINGLE),
    (_sample(), qd.Uniform(F(1, 10), F(3, 2)), A.PARTIAL, P.SINGLE),
    pytest.param(qd.Deterministic(F(1, 5)), qd.LogNormal(F(1, 2), 2), A.PARTIAL, P.SINGLE, marks=_SLOW),
    # a capped lognormal service with a kinked vacation (with a smooth one, a gamma or a lognormal, the transform is
    # inverted instead: tests/test_finite_lognormal_inversion.py)
    pytest.param(qd.LogNormal(F(1, 5), 2), qd.Uniform(F(1, 10), F(9, 10)), A.PARTIAL, P.MULTIPLE, marks=_SLOW),
])
def test_bounds_overlap_the_simulation(service, vacation, admission, policy):
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=service, vacation=vacation,
                                             capacity=8, admission=admission, vacation_policy=policy)
    assert_brackets_overlap_the_simulation(model, 1024)


def test_the_note_and_the_digits_refusal_name_the_vacation():
    # a uniform vacation (kinked) with a service off every lattice (uniform: rounded to 512 levels) keeps the steps
    # (F7) (with a constant service it takes the quadrature (F9): tests/test_vacation_quadrature_kinks.py): ~3 digits
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Uniform(F(1, 10), F(3, 10)),
                                             vacation=qd.Uniform(F(1, 4), F(3, 4)), capacity=4)
    with limits(lattice_levels=512):
        out = model.evaluate(wait_tail=["1"])
        assert any("the vacation's survival function rounded" in n for n in out.notes)
        with pytest.raises(ParameterError, match="uniform.* has no exact survival pieces .bounds .F7.."):
            model.evaluate(wait_tail=["1"], digits=8)


def test_the_quadrature_note_and_its_digits():
    # a gamma vacation: the quadrature (F9), whose float64 error estimate allows 8 digits; 13 digits come from the same
    # quadrature at D digits (mpmath; tests/test_vacation_quadrature_kinks.py checks 20 digits against mpmath at 30),
    # within the float64 estimate (1e-11) of the float64 value; beyond the budget the refusal names the digits
    from qderive.numeric.engines.vacation_finite_wait import QUADRATURE_DIGITS

    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 5)),
                                             vacation=qd.Gamma(F(5, 2), F(1, 2)), capacity=4)
    out = model.evaluate(wait_tail=["1"])
    assert any("Gauss-Legendre quadrature" in n and "12 and 24 nodes" in n for n in out.notes), out.notes
    value = model.evaluate(wait_tail=["1"], digits=8).response["wait_tail"]["1"]
    assert abs(float(value) - out.response["wait_tail"]["1"]) <= 1e-8 * float(value)
    value = model.evaluate(wait_tail=["1"], digits=13).response["wait_tail"]["1"]
    assert abs(float(value) - out.response["wait_tail"]["1"]) <= 1e-11 * float(value)
    with pytest.raises(ParameterError, match=f"--digits {QUADRATURE_DIGITS + 1}: .*gamma:shape=2.5,mean=0.5.* "
                                             f"quadrature .F9.*ask for at most {QUADRATURE_DIGITS} digits"):
        model.evaluate(wait_tail=["1"], digits=QUADRATURE_DIGITS + 1)


@pytest.mark.parametrize("service", [qd.Exponential(F(1, 100)), qd.Erlang(2, F(1, 100))])
def test_a_smooth_service_with_a_lognormal_vacation_is_inverted_decided_from_the_laws(service):
    # no lattice for the service: the transform is inverted (the lognormal's counts from its size-biased laws, branch
    # lg28; its values against a simulation in tests/test_finite_lognormal_inversion.py), decided from the laws alone
    model = qd.FiniteVacationQueue.from_load(F(1, 2), batch=qd.Geometric(2), service=service,
                                             vacation=qd.LogNormal(F(6, 100), 2), capacity=20)
    start = time.perf_counter()
    refusal = response_laws.supports(model, frozenset({"wait_tail"}))
    assert time.perf_counter() - start < 1.0
    assert refusal is None
    assert response_laws(model)["wait"].smooth and response_laws(model)["wait"].bracket is None


def test_the_service_lattice_sums_count_the_sums_beyond_the_span(monkeypatch):
    """(F5) with exact vacation pieces, the exact-lattice shortcut switched off so that the bracket path runs for a
    constant service: once S_j lies wholly beyond the span, every later P(S_i > M h) is 1 (they were left at 0).
    Against the constant service's own sums (F1) (independent of the lattice convolutions)."""
    import qderive.numeric.engines.vacation_finite_wait as E

    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 5)),
                                             vacation=qd.Exponential(F(1, 2)), capacity=12)
    exact = response_laws(model)["wait"].tails([F(1, 4)], None)[0][0]
    setup, _ = service_lattice_setup(model.service, model.vacation)
    monkeypatch.setattr(E, "exact_lattice", lambda *a: None)
    with limits(lattice_levels=256, fine_lattice_levels=1):  # (F5)'s convolutions, not the FFT powers (F10)
        tails, bracket, _, _ = service_lattice_tails(wait_law_data(model), setup, "wait")
        got = tails([F(1, 4)], None)[0][0]
        lo, hi, _ = bracket(F(1, 4))
    # the constant service on its own lattice: both roundings are the law itself, so the bracket is the exact value
    # up to the sums' rounding (1e-12 relative)
    assert lo - 1e-12 * exact <= exact <= hi + 1e-12 * exact and abs(got - exact) <= 1e-12 * exact, (lo, exact, hi)
