"""The waiting-time oracle (:mod:`qderive.numeric.oracles.wait`) against results computed other ways.

* M/M/1: P(W = 0) = 1 - rho, P(W > t) = rho e^{-mu (1 - rho) t}, E W^k = rho k! / (mu (1 - rho))^k,
  at 50 digits, to 1e-40 relative also where the tail is ~1e-30;
* M/M/1 with multiple exponential vacations: W = residual vacation + M/M/1 wait (Fuhrmann-Cooper
  decomposition; the residual of an exponential vacation is exponential), at 50 digits;
* M/M/1/K: an admitted customer finding n in the system waits Erlang(n, mu); the law of n is the
  truncated geometric rho^n conditioned on n <= r, at 50 digits;
* the mean against the package's mean wait ((6) of the spec for an infinite room, N^r / throughput
  for a finite one) for geometric and constant batches, Erlang service, exponential and Erlang
  vacations, the three policies and both admission rules: 30 digits;
* the sojourn: E S = E W + b1 and E S^2 = E W^2 + 2 b1 E W + b2 exactly (rationals);
* float64 against mpmath (tails down to 1e-30): 1e-12 relative; the errors.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

from qderive.derivations.framework import agreement_digits
from qderive.numeric.backend import FLOAT64, FractionContext, mp_context
from qderive.numeric.oracles.wait import tagged_wait
from qderive.symbolic.batches import Constant, Geometric, ShiftedPoisson
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, LogNormal
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy, VacationQueue


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


def _rel(got, want):
    return abs(got - want) / abs(want)


@pytest.mark.parametrize("lam, mu", [(F(1, 2), F(1)), (F(1, 5), F(1)), (F(3, 2), F(5, 2))])
def test_mm1(lam, mu):
    """M/M/1 (batches of 1, exponential service, no vacations); the last two tails are about 1e-30 and 1e-70."""
    model = VacationQueue(lam, Constant(1), Exponential(1 / mu), None)
    rho = lam / mu
    with mpmath.workdps(70):
        eta = _mp(mu) * (1 - _mp(rho))

        def t_at(e):  # rho e^{-eta t} ~ 10^-e
            return F(int(mpmath.ceil((mpmath.log(_mp(rho)) + e * mpmath.log(10)) / eta)))

        times = (0, F(1, 3), 5, t_at(30), t_at(70))
    o = tagged_wait(model, mp_context(50), times=times, moments=3)
    with mpmath.workdps(70):
        rho_m = _mp(rho)
        assert _rel(o.p_zero, 1 - rho_m) < mpmath.mpf(10) ** -45
        want = [rho_m * mpmath.exp(-eta * _mp(F(t))) for t in times]
        assert mpmath.mpf(10) ** -31 < want[-2] <= mpmath.mpf(10) ** -30 and want[-1] <= mpmath.mpf(10) ** -70
        for got, ref in zip(o.tail, want):
            assert _rel(got, ref) < mpmath.mpf(10) ** -40
        for k, got in enumerate(o.moments, start=1):
            assert _rel(got, rho_m * mpmath.factorial(k) / eta**k) < mpmath.mpf(10) ** -45
    assert o.truncation < mpmath.mpf(10) ** -120  # the cut follows the smallest tail (1e-70 x 1e-55)


@pytest.mark.parametrize("lam, mu, theta", [(F(1, 2), F(1), F(1, 3)), (F(1, 4), F(1), F(2))])
def test_mm1_with_multiple_exponential_vacations(lam, mu, theta):
    """W = V + W_MM1 (independent): V ~ Exp(theta), W_MM1 = 0 w.p. 1 - rho, else Exp(eta), eta = mu (1 - rho):
    P(W > t) = (1 - rho) e^{-theta t} + rho (eta e^{-theta t} - theta e^{-eta t}) / (eta - theta)."""
    model = VacationQueue(lam, Constant(1), Exponential(1 / mu), Exponential(1 / theta), VacationPolicy.MULTIPLE)
    times = (0, 1, 7, F(150))
    o = tagged_wait(model, mp_context(50), times=times, moments=2)
    with mpmath.workdps(70):
        rho, th, eta = _mp(lam / mu), _mp(theta), _mp(mu) * (1 - _mp(lam / mu))
        for t, got in zip(times, o.tail):
            t = _mp(F(t))
            want = (1 - rho) * mpmath.exp(-th * t) + rho * (eta * mpmath.exp(-th * t) - th * mpmath.exp(-eta * t)) / (
                eta - th)
            assert _rel(got, want) < mpmath.mpf(10) ** -40
        assert o.tail[-1] < mpmath.mpf(10) ** -20
        assert o.p_zero == 0
        assert _rel(o.moments[0], 1 / th + rho / eta) < mpmath.mpf(10) ** -45
        assert _rel(o.moments[1], 2 / th**2 + 2 * rho / (th * eta) + 2 * rho / eta**2) < mpmath.mpf(10) ** -45


@pytest.mark.parametrize("lam, mu, r", [(F(1, 2), F(1), 4), (F(3), F(2), 6), (F(1), F(1), 3)])
def test_mm1k_admitted_customers(lam, mu, r):
    """M/M/1/K, K = r + 1: an admitted customer finds n <= r with probability rho^n / sum_{m<=r} rho^m and
    then waits Erlang(n, mu); the last time has a tail near 1e-30."""
    model = FiniteVacationQueue(lam, Constant(1), Exponential(1 / mu), None, r)
    times = (0, F(1, 2), 3, F(80) / mu)
    o = tagged_wait(model, mp_context(50), times=times, moments=2)
    assert o.truncation is None and o.capacity == r
    with mpmath.workdps(70):
        rho, m = _mp(lam / mu), _mp(mu)
        q = [rho**n for n in range(r + 1)]
        q = [v / mpmath.fsum(q) for v in q]
        assert _rel(o.p_zero, q[0]) < mpmath.mpf(10) ** -45
        for t, got in zip(times, o.tail):
            x = m * _mp(F(t))
            want = mpmath.fsum(q[n] * mpmath.fsum(mpmath.exp(-x) * x**i / mpmath.factorial(i) for i in range(n))
                               for n in range(1, r + 1))
            assert _rel(got, want) < mpmath.mpf(10) ** -40
        assert o.tail[-1] < mpmath.mpf(10) ** -25
        for k, got in enumerate(o.moments, start=1):
            want = mpmath.fsum(q[n] * mpmath.rf(n, k) for n in range(1, r + 1)) / m**k
            assert _rel(got, want) < mpmath.mpf(10) ** -45


INFINITE = [
    ("geometric, multiple, exp vacations", lambda: VacationQueue.from_load(
        F(1, 4), Geometric(F(3, 2)), Erlang(2, F(1, 2)), Exponential(F(1, 2)), VacationPolicy.MULTIPLE)),
    ("constant, single, Erlang vacations", lambda: VacationQueue.from_load(
        F(2, 5), Constant(2), Erlang(3, F(1, 2)), Erlang(2, F(1)), VacationPolicy.SINGLE)),
    ("geometric, no vacations", lambda: VacationQueue.from_load(F(1, 4), Geometric(F(3, 2)), Erlang(2, F(1, 2)), None)),
    ("constant, multiple, exp vacations", lambda: VacationQueue.from_load(
        F(2, 5), Constant(3), Erlang(2, F(1, 2)), Exponential(F(1)), VacationPolicy.MULTIPLE)),
]

FINITE = [
    ("geometric, partial, multiple", lambda: FiniteVacationQueue.from_load(
        F(3, 4), Geometric(3), Erlang(2, F(1, 10)), Exponential(F(1, 4)), 6)),
    ("geometric, whole, multiple", lambda: FiniteVacationQueue.from_load(
        F(3, 4), Geometric(3), Erlang(2, F(1, 10)), Exponential(F(1, 4)), 5, Admission.WHOLE)),
    ("constant, whole, single, overload", lambda: FiniteVacationQueue.from_load(
        F(5, 2), Constant(2), Erlang(2, F(1, 10)), Erlang(2, F(1, 3)), 5, Admission.WHOLE, VacationPolicy.SINGLE)),
    ("geometric, partial, single, rho_bar = 1", lambda: FiniteVacationQueue.from_load(
        1, Geometric(2), Erlang(3, F(1, 3)), Erlang(2, F(1, 2)), 8, Admission.PARTIAL, VacationPolicy.SINGLE)),
    ("geometric, partial, no vacations", lambda: FiniteVacationQueue.from_load(
        F(3, 4), Geometric(3), Erlang(2, F(1, 10)), None, 4)),
    ("constant, whole, no vacations, overload", lambda: FiniteVacationQueue.from_load(
        3, Constant(3), Erlang(2, F(1, 10)), None, 5, Admission.WHOLE)),
]


@pytest.mark.parametrize("make", [c[1] for c in INFINITE], ids=[c[0] for c in INFINITE])
def test_mean_against_eq_6(make):
    """The oracle at 36 digits (automatic cut below 1e-41) against (6) evaluated at 40 digits: 30 digits."""
    model = make()
    o = tagged_wait(model, mp_context(36), moments=1)
    assert o.truncation < mpmath.mpf(10) ** -41
    assert agreement_digits(o.moments[0], model.evaluate(digits=40).mean_wait) >= 30


@pytest.mark.parametrize("make", [c[1] for c in FINITE], ids=[c[0] for c in FINITE])
def test_mean_against_the_finite_engine_and_the_sojourn_exactly(make):
    """Exact rationals (GTH and M-matrix solves over Fractions) against the engine's N^r / throughput at 40
    digits: 30 digits; the sojourn S = W + own service (independent of W): E S = E W + b1 and
    E S^2 = E W^2 + 2 b1 E W + b2, exactly."""
    model = make()
    o = tagged_wait(model, FractionContext(), moments=2, sojourn=True)
    assert all(isinstance(v, F) for v in (o.p_zero, *o.moments, *o.sojourn.moments))
    assert agreement_digits(o.moments[0], model.evaluate(digits=40).mean_wait) >= 30
    b1, b2 = model.service.moment(1), model.service.moment(2)
    w1, w2 = o.moments
    assert o.sojourn.moments == (w1 + b1, w2 + 2 * b1 * w1 + b2)
    assert o.sojourn.p_zero == 0


def test_sojourn_of_an_infinite_room_cut_explicitly_is_exact():
    model = INFINITE[1][1]()
    o = tagged_wait(model, FractionContext(), moments=1, sojourn=True, capacity=40)
    assert o.capacity == 40 and 0 < o.truncation < F(1, 10**8)
    assert o.sojourn.moments[0] == o.moments[0] + model.service.moment(1)


def test_float64_against_mpmath():
    """float64 and 40 digits agree to 1e-12 relative, also for a tail near 1e-30 (sums of positive terms)."""
    model = FINITE[3][1]()
    times = (0, F(1, 2), 4, 20)
    hi = tagged_wait(model, mp_context(40), times=times, moments=2, sojourn=True)
    lo = tagged_wait(model, FLOAT64, times=times, moments=2, sojourn=True)
    assert 1e-34 < hi.tail[-1] < 1e-24
    for a, b in [(lo.p_zero, hi.p_zero), *zip(lo.tail, hi.tail), *zip(lo.moments, hi.moments),
                 *zip(lo.sojourn.tail, hi.sojourn.tail), *zip(lo.sojourn.moments, hi.sojourn.moments)]:
        assert abs(a - float(b)) <= 1e-12 * float(b)
    # P(W > 0) = 1 - P(W = 0), and the tail at 0 of the sojourn is 1
    with mpmath.workdps(40):
        assert abs(hi.tail[0] - (1 - hi.p_zero)) < mpmath.mpf(10) ** -38 and hi.sojourn.tail[0] == 1


def test_errors():
    mm1 = VacationQueue(F(1, 2), Constant(1), Exponential(1), None)
    with pytest.raises(ParameterError, match="phase-type"):
        tagged_wait(VacationQueue(F(1, 2), Constant(1), Deterministic(1), None), FLOAT64)
    with pytest.raises(ParameterError, match="phase-type"):
        tagged_wait(VacationQueue(F(1, 4), Constant(1), Exponential(1), LogNormal(1, 1)), FLOAT64)
    with pytest.raises(ParameterError, match="rational probabilities"):
        tagged_wait(VacationQueue(F(1, 4), ShiftedPoisson(2), Exponential(1), None), FLOAT64)
    with pytest.raises(ParameterError, match="floating context"):
        tagged_wait(mm1, FractionContext(), times=(1,), capacity=10)
    with pytest.raises(ParameterError, match="explicit cut"):
        tagged_wait(mm1, FractionContext(), moments=1)
    with pytest.raises(ParameterError, match="times"):
        tagged_wait(mm1, FLOAT64, times=(-1,))
    with pytest.raises(ParameterError, match="moments"):
        tagged_wait(mm1, FLOAT64, moments=-1)
    with pytest.raises(ParameterError, match="infinite room only"):
        tagged_wait(FINITE[0][1](), FLOAT64, capacity=9)
    # batches of mean 50 at rho_bar = 0.9: the mass far out needs a cut beyond the dense-states limit
    with pytest.raises(ParameterError, match="dense-states"):
        tagged_wait(VacationQueue.from_load(F(9, 10), Geometric(50), Exponential(1), None), mp_context(30), moments=1)
