"""Rewrite the citations of the reconstruction files to the theory pages of the repository.

Docstrings, derivation steps, tests and pages once cited the reconstruction as ``spec/`` plus a
page name (chapter 2, chapter 3, the other models), files that are not in the repository. The
same text now lives in ``docs/theory/`` with the same sections, so each such citation becomes
the theory page of the same name (section numbers and letters unchanged). Run from anywhere::

    python3 tools/cite_theory.py          # rewrites the tracked files, prints each file changed

It rewrites only git-tracked text files and is idempotent (a second run changes nothing).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("chapter2", "chapter3", "other-models")
# an old citation: not preceded by a path character (``docs/theory/...`` and ``shared/spec/...`` are left alone)
OLD = re.compile(r"(?<![\w./-])spec/(" + "|".join(map(re.escape, PAGES)) + r")\.md\b")
SUFFIXES = {".py", ".md", ".bib", ".toml", ".txt", ".ipynb", ".cff", ".tex"}


def rewrite(text: str) -> str:
    return OLD.sub(lambda m: f"docs/theory/{m.group(1)}.md", text)


def main() -> int:
    listed = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    changed = 0
    for name in listed.splitlines():
        path = ROOT / name
        if path.suffix not in SUFFIXES or not path.is_file() or path.resolve() == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
            print(name)
    print(f"{changed} files rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
