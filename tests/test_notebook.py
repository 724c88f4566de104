"""Notebook friendliness: derivations, steps, models and laws render as LaTeX (Jupyter's
_repr_latex_) and as readable text in a terminal."""

from fractions import Fraction as F

import pytest

from qderive.derivations.command import available_models, load_command
from qderive.derivations.vacation_infinite import VacationQueue
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws import Erlang, Exponential


@pytest.mark.parametrize("name", available_models())
def test_every_derivation_renders(name):
    deriv = load_command(name).derivation()
    if deriv is None:
        pytest.fail(f"{name} has no derivation")
    latex = deriv._repr_latex_()
    assert latex.startswith("$") and latex.endswith("$") and len(deriv.steps) >= 2
    for step in deriv.steps:
        assert step._repr_latex_().startswith("$") and step.label in str(step)
    assert deriv.title in str(deriv)


def test_models_and_laws_render():
    model = VacationQueue.from_load(F(3, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)))
    assert "M^{[X]}|G|1" in model._repr_latex_() and "rho_bar = 3/5" in str(model)
    assert "\\beta" in Erlang(4, F(3, 200))._repr_latex_()
    assert "L{\\left(z \\right)}" in Geometric(5)._repr_latex_()
