"""Committed generated pages are current.

* ``docs/formulas/NAME.md`` == ``qderive derive NAME --markdown`` for every registered model with a
  derivation (and no page without a model);
* ``docs/reference/*.md`` == ``python -m qderive.derivations.docgen docs/reference``.

A stale page fails with the command that regenerates it.
"""

from pathlib import Path

import pytest

import qderive as qd
from conftest import cli

DOCS = Path(__file__).resolve().parent.parent / "docs"
DERIVED = sorted(name for name, cls in qd.models().items() if cls.derivation is not None)


def test_every_derivation_has_a_page_and_every_page_a_derivation():
    pages = sorted(p.stem for p in (DOCS / "formulas").glob("*.md"))
    assert DERIVED and pages == DERIVED, "regenerate: qderive derive NAME --markdown docs/formulas/NAME.md"


@pytest.mark.parametrize("name", DERIVED)
def test_formula_page_is_current(name, tmp_path):
    page = DOCS / "formulas" / f"{name}.md"
    fresh = tmp_path / f"{name}.md"
    code, _, err = cli(["derive", name, "--markdown", str(fresh)])  # the command the page names
    assert code == 0, err
    assert page.read_text(encoding="utf-8") == fresh.read_text(encoding="utf-8"), (
        f"{page} is stale: regenerate with `qderive derive {name} --markdown docs/formulas/{name}.md`")


def test_reference_pages_are_current():
    """docs/reference/*.md == the docstrings now (regenerate: python -m qderive.derivations.docgen docs/reference)."""
    from qderive.derivations.docgen import reference_pages

    folder = DOCS / "reference"
    pages = reference_pages()
    assert sorted(pages) == sorted(p.name for p in folder.glob("*.md")), "a reference page is missing or extra"
    for name, text in pages.items():
        page = folder / name
        assert page.read_text(encoding="utf-8") == text, (
            f"{page} is stale: regenerate with `python -m qderive.derivations.docgen docs/reference`")


def test_reference_covers_the_subpackages_and_the_facade():
    """The reference walks the subpackages (a module of each) and documents the facade's names."""
    from qderive.derivations.docgen import reference_pages

    pages = reference_pages()
    for page, module in (("symbolic.md", "qderive.symbolic.laws.phase_type"),
                         ("symbolic.md", "qderive.symbolic.models.vacation"),
                         ("numeric.md", "qderive.numeric.kernels.chains"),
                         ("numeric.md", "qderive.numeric.engines.vacation"),
                         ("derivations.md", "qderive.derivations.export.codegen"),
                         ("derivations.md", "qderive.derivations.cli.options")):
        assert f"## `{module}`" in pages[page], (page, module)
    facade = pages["qderive.md"]
    for name in ("VacationQueue", "FiniteVacationQueue", "Coxian", "LogNormal", "Empirical", "limits"):
        assert f"`{name}`" in facade, name
    assert "`qderive.derivations._qderive`" not in "".join(pages.values())  # private folder, not a module
