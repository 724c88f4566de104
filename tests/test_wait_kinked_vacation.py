"""Tails of the wait with a smooth service and a kinked vacation law (issue 13 item 4;
:func:`qderive.numeric.engines.vacation_wait.shift_tails`), each against something computed another way:

* M/M/1 with constant vacations V (single arrivals, service rate mu, gamma = mu - lambda): the wait without
  vacations has P(W_0 > u) = rho e^{-gamma u}; the residual vacation is uniform on [0, V] (multiple vacations) or
  has the atom c_0 / (lambda V + c_0) (c_0 = e^{-lambda V}) and the density lambda / (lambda V + c_0) on [0, V]
  (single vacations), so P(W > t) is elementary, written out below at 50 digits:
  multiple, t >= V: rho e^{-gamma t} (e^{gamma V} - 1) / (gamma V); t < V: ((V - t) + rho (1 - e^{-gamma t}) / gamma) / V;
* uniform [a, b] vacations with an exponential service: mpmath.quad of rho e^{-gamma (t - x)} against the residual
  density P(V > x) / f_1, split at a, b, t, at 40 digits (the project's code is not used);
* the integral of the tail against the symbolic mean (``wait_moments``, another way);
* float64 against 30 digits; a seeded simulation's interval (``qderive simulate ... --wait-tail``).

Tolerances: D digits promise D correct digits; the tests ask D - 1 (the reference's rounding). float64 promises
about 1e-10 relative (the Euler self-check's tolerance): the tests ask 1e-9.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

import qderive as qd
from qderive.symbolic.errors import ParameterError


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


def _rel(a, b):
    with mpmath.workdps(60):
        return abs(mpmath.mpf(a) - mpmath.mpf(b)) / abs(mpmath.mpf(b))


def _mm1_det(lam, mu, V, t, single=False, dps=50):
    """P(W > t) of M/M/1 with constant vacations V by the elementary convolution (module docstring)."""
    with mpmath.workdps(dps):
        lam, mu, V, t = _mp(lam), _mp(mu), _mp(V), _mp(t)
        rho, g = lam / mu, mu - lam
        if t >= V:  # int_{t-V}^t rho e^{-g u} du
            conv = rho * mpmath.exp(-g * t) * mpmath.expm1(g * V) / g
        else:  # int_0^t ... + (V - t) (P(W_0 > u) = 1 for u < 0)
            conv = (V - t) + rho * -mpmath.expm1(-g * t) / g
        if not single:
            return conv / V
        c0 = mpmath.exp(-lam * V)
        return (c0 * rho * mpmath.exp(-g * t) + lam * conv) / (lam * V + c0)


def _model(lam, mu, vacation, policy=qd.VacationPolicy.MULTIPLE):
    return qd.VacationQueue(F(lam), qd.Constant(1), qd.Exponential(F(1, mu)), vacation, policy)


@pytest.mark.parametrize("policy", [qd.VacationPolicy.MULTIPLE, qd.VacationPolicy.SINGLE])
def test_mm1_constant_vacations_match_the_closed_convolution_at_30_digits(policy):
    single = policy is qd.VacationPolicy.SINGLE
    model = _model(F(3, 5), 1, qd.Deterministic(2), policy)
    ts = ["0.5", "3", "180"]  # inside the vacation, past it, a tail near 5e-32 (relative digits kept)
    r = model.evaluate(30, wait_tail=ts)
    for t in ts:
        got = r.response["wait_tail"][t]
        assert _rel(got, _mm1_det(F(3, 5), 1, 2, F(t), single)) < 1e-29, (t, got)
    r64 = model.evaluate(wait_tail=ts[:2])
    for t in ts[:2]:
        assert _rel(r64.response["wait_tail"][t], _mm1_det(F(3, 5), 1, 2, F(t), single)) < 1e-9


def test_uniform_vacations_against_quadrature_and_the_sojourn():
    a, b, lam = F(1, 2), F(3, 2), F(1, 2)
    model = _model(lam, 1, qd.Uniform(a, b))
    t = F(2)
    with mpmath.workdps(40):
        A, B, L, T = _mp(a), _mp(b), _mp(lam), _mp(t)

        def S(x):
            return 1 if x <= A else (0 if x >= B else (B - x) / (B - A))

        def W0(u):
            return 1 if u < 0 else L * mpmath.exp(-(1 - L) * u)

        ref = mpmath.quad(lambda x: S(x) * W0(T - x), [0, A, B]) / ((A + B) / 2)
    r = model.evaluate(20, wait_tail=[str(t)])
    assert _rel(r.response["wait_tail"][str(t)], ref) < 1e-19
    # sojourn = W + B with B exponential: P(W + B > t) = P(W > t) + int_0^t e^{-(t - w)} dP(W <= w); check E T
    r64 = model.evaluate(sojourn_tail=["2"], wait_tail=["2"])
    assert r64.response["sojourn_tail"]["2"] > r64.response["wait_tail"]["2"]


def test_mean_is_the_integral_of_the_tail():
    """Geometric batches, exponential service, empirical vacations {1, 3}: int_0^oo P(W > t) dt against
    wait_moments (the symbolic mean, another way). Gauss-Legendre (6 nodes) between the kinks 1, 3 and beyond
    (the tail is analytic there) up to T = 14; the rest int_T^oo from the exponential decay beyond the
    vacation's support (W_0 is an atom plus one exponential here): P(W > T) / g, g = log(P(W > T - 1) /
    P(W > T)). The rest is 3.5e-3 of the mean; the sum must match to 1e-10 (the float64 tails' accuracy)."""
    import numpy as np

    model = qd.VacationQueue(F(1, 10), qd.Geometric(2), qd.Exponential(F(1)), qd.Empirical((F(1), F(3))))
    cuts = [0, 1, 3, 6, 10, 14]
    x, w = np.polynomial.legendre.leggauss(6)
    nodes, weights = [], []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        nodes += list((x + 1) * (hi - lo) / 2 + lo)
        weights += list(w * (hi - lo) / 2)
    keys = [repr(float(v)) for v in nodes]
    r = model.evaluate(wait_tail=keys + ["13", "14"], wait_moments=1)
    tail = r.response["wait_tail"]
    rest = tail["14"] / np.log(tail["13"] / tail["14"])
    integral = sum(wt * tail[k] for wt, k in zip(weights, keys)) + rest
    mean = float(r.response["wait_moments"][0])
    assert abs(integral - mean) < 1e-10 * mean


def test_against_the_simulation():
    from qderive.numeric.simulation.vacation import simulate

    model = qd.VacationQueue.from_load(F(1, 2), qd.Geometric(2), qd.Erlang(2, F(1, 1)), qd.Uniform(F(1, 2), 2))
    exact = model.evaluate(wait_tail=["1", "4"], sojourn_tail=["4"]).response
    sim = simulate(model, 40_000, 8, seed=5, quiet=True, wait_tail=(1.0, 4.0), sojourn_tail=(4.0,))
    for kind, t in (("wait", "1"), ("wait", "4"), ("sojourn", "4")):
        lo, hi = sim[f"{kind}_tail"][float(t)].interval(0.99)  # a seeded run: about 1 % chance to miss each
        assert lo <= exact[f"{kind}_tail"][t] <= hi, (kind, t, lo, hi, exact[f"{kind}_tail"][t])


def test_quantile_solves_the_closed_form_and_float64_agrees():
    model = _model(F(3, 5), 1, qd.Deterministic(2))
    r = model.evaluate(wait_quantile=["0.99"])
    q = r.response["wait_quantile"]["0.99"]
    assert abs(float(_mm1_det(F(3, 5), 1, 2, F(q))) - 0.01) < 1e-11


def test_a_kinked_service_with_a_kinked_vacation_gets_certified_bounds():
    # since issue 28 a uniform service is covered by the lattice bounds (tests/test_wait_lattice_service.py), with
    # a constant vacation too (its residual's stop-loss from the survival pieces): the value inside the bracket
    model = qd.VacationQueue(F(1, 2), qd.Constant(1), qd.Uniform(F(1, 2), 1), qd.Deterministic(1))
    r = model.evaluate(wait_tail=["1"])
    note = next(n for n in r.notes if "is between" in n)
    lo, hi = (float(x) for x in note.split("is between ")[1].split(" (")[0].split(" and "))
    assert lo <= r.response["wait_tail"]["1"] <= hi and hi - lo < 0.01
