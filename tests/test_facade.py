"""``import qderive as qd``: the public API, exact parameter conversion, errors."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction as F

import numpy as np
import pytest

import qderive as qd


def test_public_names():
    for name in ("Erlang", "Exponential", "Deterministic", "Gamma", "HyperExponential", "Uniform", "PhaseType",
                 "Coxian", "Empirical", "LogNormal", "Geometric", "Constant", "FinitePMF", "ShiftedPoisson",
                 "VacationQueue", "FiniteVacationQueue", "VacationPolicy", "Admission", "errors", "limits"):
        assert hasattr(qd, name), name
    assert qd.__version__ and issubclass(qd.errors.ParameterError, ValueError)
    assert set(qd.models()) >= {"vacation-infinite", "vacation-finite"}
    for cls in qd.models().values():
        assert getattr(qd, cls.__name__) is cls


@pytest.mark.parametrize("value", [0.015, "0.015", Decimal("0.015"), np.float64(0.015), F(3, 200)])
def test_parameters_are_exact_whatever_their_type(value):
    assert qd.Erlang(4, value).mean == F(3, 200)


def test_strings_are_parsed_never_evaluated():
    with pytest.raises(qd.errors.ParameterError, match="is not a number"):
        qd.Exponential("__import__('os').system('true')")
    with pytest.raises(qd.errors.ParameterError):
        qd.Exponential(True)
    with pytest.raises(qd.errors.ParameterError, match="finite"):
        qd.Exponential(float("inf"))


def test_models_evaluate_and_derive():
    q = qd.FiniteVacationQueue.from_load("0.6", qd.Geometric(5), qd.Erlang(4, 0.015), qd.Exponential(0.075), 200)
    rec = q.evaluate()
    assert 0 < rec.loss_probability < 1e-6 and rec.model is q
    assert "loss_probability" in rec._repr_markdown_()
    assert q.derive().name == "vacation-finite"
