"""The one precision policy: float64 escalates with a note; digits=D is confirmed; limits hold."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import pytest

from qderive.numeric.precision import agreement, float64_trouble
from qderive.symbolic.batches import Constant, Geometric
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.laws import Deterministic, Erlang, Exponential
from qderive.symbolic.limits import limits
from qderive.symbolic.models.vacation import FiniteVacationMeasures, FiniteVacationQueue, VacationQueue


def test_generic_float64_checks():
    ok = {"loss_probability": 0.5, "p": [0.5, 0.5]}
    assert float64_trouble(FiniteVacationMeasures, ok) is None
    assert "outside [0, 1]" in float64_trouble(FiniteVacationMeasures, {"idle_probability": 1.0000000827})
    assert "underflows" in float64_trouble(FiniteVacationMeasures, {"loss_probability": 0.0})
    assert "underflow threshold" in float64_trouble(FiniteVacationMeasures, {"mean_wait": 1e-300})
    assert "not finite" in float64_trouble(FiniteVacationMeasures, {"mean_wait": math.inf})


def test_agreement_digits():
    assert agreement({"a": 1.0}, {"a": 1.0}) == math.inf
    with mpmath.workdps(40):
        assert 19.5 < agreement({"a": mpmath.mpf(1)}, {"a": 1 + mpmath.mpf(10) ** -20}) < 20.5


def test_deterministic_service_with_many_arrivals_escalates_instead_of_refusing():
    """lambda d = 900 customers per service: e^{-900} underflows in float64 (the old code said 'use --digits')."""
    model = FiniteVacationQueue(900, Constant(1), Deterministic(1), None, 3)
    rec = model.evaluate()
    assert rec.notes and "recomputed with mpmath" in rec.notes[0]
    assert 0 < rec.loss_probability < 1 and rec.loss_probability == pytest.approx(1 - 1 / 900, rel=1e-3)


def test_digits_are_confirmed_and_reported():
    model = FiniteVacationQueue.from_load(F(3, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)), 50)
    r30, r60 = model.evaluate(30), model.evaluate(60)
    assert r30.confirmed_digits == 30 and r30.working_digits >= 40
    assert agreement({"x": r30.loss_probability}, {"x": r60.loss_probability}) >= 30


def test_requests_beyond_the_limits_are_refused():
    model = VacationQueue.example()
    with pytest.raises(BudgetError, match="digits"):
        model.evaluate(5000)
    with limits(digits=6000, working_digits=7000):
        assert model.evaluate(1500).confirmed_digits == math.inf  # exact closed forms
    with pytest.raises(ParameterError):
        model.evaluate(0)
