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


def _expected_public_names() -> set:
    """What the facade must export, read from the registries and the packages' own ``__all__``: every law and batch
    law class (registered by its spec, or a base or symbolic law of the laws' packages), every registered model with
    its result record, its action requests and every public class of its module (enums, codegen options)."""
    import inspect

    from qderive.symbolic import batches, laws
    from qderive.symbolic.batches import BatchLaw
    from qderive.symbolic.laws import Law, TimeLaw

    names = {"__version__", "bootstrap", "errors", "limits", "models", "sweep"}
    for package, base in ((laws, Law), (batches, BatchLaw)):
        names |= {n for n in package.__all__ if inspect.isclass(getattr(package, n))
                  and issubclass(getattr(package, n), base)}
    names |= {cls.__name__ for cls in (*TimeLaw.registered().values(), *BatchLaw.registered().values())}
    for cls in qd.models().values():
        names |= {cls.__name__, cls.measures.__name__, *(a.request.__name__ for a in cls.actions)}
        module = inspect.getmodule(cls)
        names |= {n for n in module.__all__ if inspect.isclass(getattr(module, n))}
    return names


def test_all_is_the_registries():
    """``qd.__all__`` is exactly the laws, batch laws and models (with their records, requests and enums): a new law
    or model missing from the facade, or a stale name in it, fails here by name."""
    expected = _expected_public_names()
    listed = set(qd.__all__)
    assert len(listed) == len(qd.__all__), "a name is listed twice in qderive.__all__"
    assert not expected - listed, f"missing from qderive.__all__ (derivations/_qderive/__init__.py): {sorted(expected - listed)}"
    assert not listed - expected, f"in qderive.__all__ but not a registered law or model name: {sorted(listed - expected)}"
    for name in qd.__all__:
        assert getattr(qd, name) is not None, name
    for cls in (*qd.TimeLaw.registered().values(), *qd.BatchLaw.registered().values(), *qd.models().values()):
        assert getattr(qd, cls.__name__) is cls


def test_the_facade_is_literal():
    """Every public name is bound by a literal import or definition in the facade's source (what an IDE or a type
    checker reads): no names filled into ``globals()`` in a loop."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(qd.__file__).read_text(encoding="utf-8"))
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Try):  # __version__
            bound |= {t.id for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets
                      if isinstance(t, ast.Name)}
    assert set(qd.__all__) <= bound, sorted(set(qd.__all__) - bound)
    assert "globals" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


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
