"""Committed generated pages are current.

``docs/formulas/NAME.md`` == ``qderive derive NAME --markdown`` for every registered model with a
derivation (and no page without a model). A stale page fails with the command that regenerates it.
(The API reference is not committed: autodoc generates it when the site is built, see
``tests/test_docs_site.py``.)
"""

from pathlib import Path

import pytest

import qderive as qd
from conftest import cli

DOCS = Path(__file__).resolve().parent.parent / "docs"
DERIVED = sorted(name for name, cls in qd.models().items() if cls.derivation is not None)


def test_every_derivation_has_a_page_and_every_page_a_derivation():
    pages = sorted(p.stem for p in (DOCS / "formulas").glob("*.md") if p.stem != "index")  # index.md: the site's list
    assert DERIVED and pages == DERIVED, "regenerate: qderive derive NAME --markdown docs/formulas/NAME.md"


@pytest.mark.parametrize("name", DERIVED)
def test_formula_page_is_current(name, tmp_path):
    page = DOCS / "formulas" / f"{name}.md"
    fresh = tmp_path / f"{name}.md"
    code, _, err = cli(["derive", name, "--markdown", str(fresh)])  # the command the page names
    assert code == 0, err
    assert page.read_text(encoding="utf-8") == fresh.read_text(encoding="utf-8"), (
        f"{page} is stale: regenerate with `qderive derive {name} --markdown docs/formulas/{name}.md`")
