"""Every example in the public docstrings runs (doctest over all qderive modules)."""

import doctest
import importlib
import pkgutil

import pytest

import qderive.derivations
import qderive.numeric
import qderive.symbolic

MODULES = sorted(
    info.name
    for pkg in (qderive.symbolic, qderive.numeric, qderive.derivations)
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
