"""Committed formula pages are current: docs/formulas/NAME.md == `qderive derive NAME --markdown`."""

from pathlib import Path

import pytest

from qderive.derivations.command import load_command

PAGES = sorted((Path(__file__).resolve().parent.parent / "docs" / "formulas").glob("*.md"))


def test_there_are_formula_pages():
    assert PAGES, "docs/formulas/ holds no generated page"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_formula_page_is_current(page):
    derivation = load_command(page.stem).derivation()
    assert page.read_text(encoding="utf-8") == derivation.markdown(), (
        f"{page} is stale: regenerate with `qderive derive {page.stem} --markdown {page}`"
    )


def test_reference_pages_are_current():
    """docs/reference/*.md == the docstrings now (regenerate: python -m qderive.derivations.docgen docs/reference)."""
    from qderive.derivations.docgen import reference_pages

    folder = Path(__file__).resolve().parent.parent / "docs" / "reference"
    for name, text in reference_pages().items():
        page = folder / name
        assert page.exists() and page.read_text(encoding="utf-8") == text, f"{page} is stale"
