"""Every example in the docstrings runs: doctest over every module of the installed package.

The modules are discovered by walking the facade ``qderive`` and its subpackages
(``qderive.symbolic``, ``qderive.numeric``, ``qderive.derivations`` and theirs), so a new
module is tested without being listed here. ``__main__`` modules are skipped (importing one
runs the command line). A test also checks that the walk finds the packages it must find,
so a broken discovery cannot pass by finding nothing.
"""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import qderive

PACKAGES = ("qderive.symbolic", "qderive.numeric", "qderive.derivations")


def _walk() -> list[str]:
    """Every module once: the facade's folder ``derivations/_qderive`` is also reachable as
    ``qderive.derivations._qderive``; a module whose file was already seen is skipped."""
    names, files = ["qderive"], {qderive.__file__}
    for pkg_name in PACKAGES:
        pkg = importlib.import_module(pkg_name)
        found = [pkg_name] + [info.name for info in pkgutil.walk_packages(pkg.__path__, pkg_name + ".")
                              if info.name.rsplit(".", 1)[-1] != "__main__"]
        for name in found:
            spec = importlib.util.find_spec(name)
            if spec.origin not in files:
                files.add(spec.origin)
                names.append(name)
    return sorted(names)


MODULES = _walk()


def test_the_walk_finds_every_subpackage():
    """The discovery reaches the subpackages (laws, models, kernels, engines, cli, export, ...)."""
    for name in ("qderive.symbolic.laws.phase_type", "qderive.symbolic.models.vacation",
                 "qderive.numeric.kernels.vacation", "qderive.numeric.engines.vacation",
                 "qderive.numeric.oracles.ctmc", "qderive.numeric.simulation.stats",
                 "qderive.derivations.cli.options", "qderive.derivations.export.codegen",
                 "qderive.derivations.figures.vacation"):
        assert name in MODULES, name
    assert len(MODULES) > 80 and "qderive.derivations._qderive" not in MODULES


def test_the_docstrings_hold_examples():
    """Not vacuous: the package's docstrings hold many examples (the facade's among them)."""
    finder = doctest.DocTestFinder()
    total = sum(len(t.examples) for name in MODULES for t in finder.find(importlib.import_module(name)))
    assert total >= 40
    assert any(t.examples for t in finder.find(qderive))


@pytest.mark.every_case  # each case is its own module or law: the loop sees them all
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
