"""Write ``docs/reference/support.md``: what each model's subcommands and response measures compute.

Generated from the consumers' declarations (:func:`qderive.derivations.capabilities.support_page`), the same
ones ``qderive list MODEL`` prints and the verbs ask before any work; ``tests/test_capabilities.py`` checks
that the page is current. Run ``python tools/support_page.py`` after changing a declaration.
"""

from __future__ import annotations

import sys
from pathlib import Path

from qderive.derivations.capabilities import support_page

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "support.md"

if __name__ == "__main__":
    text = support_page()
    if "--check" in sys.argv:
        sys.exit(0 if PAGE.exists() and PAGE.read_text(encoding="utf-8") == text else 1)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
