"""Every registered derivation: each displayed step is computed by SymPy or evaluated by verify;
exports work; the vacation derivations' checks all pass."""

from __future__ import annotations

import pytest

from qderive.symbolic.models import registered_models

NAMES = sorted(n for n, c in registered_models().items() if c.derivation is not None)


def _derivation(name):
    return registered_models()[name].derivation.load()()


@pytest.mark.parametrize("name", NAMES)
def test_every_step_is_computed_or_evaluated(name):
    d = _derivation(name)
    unverified = [s.label for s in d.steps if not (s.computed or s.check)]
    assert not unverified, f"{name}: steps neither computed nor evaluated by verify: {unverified}"
    assert d.all_checks(), name


@pytest.mark.parametrize("name", NAMES)
def test_exports_and_notebook_rendering(name):
    d = _derivation(name)
    md, tex = d.markdown(), d.latex(fragment=True)
    assert all(s.label in md for s in d.steps) and tex.count("\\begin{align*}") == len(d.steps)
    assert d._repr_latex_().startswith("$")


@pytest.mark.parametrize("name", ["vacation-infinite", "vacation-finite"])
def test_vacation_derivations_verify(name):
    results = _derivation(name).verify(40)
    failed = [(r.name, r.detail) for r in results if not r.passed]
    assert not failed
    assert sum(r.name.endswith("as displayed, evaluated") for r in results) >= 3
