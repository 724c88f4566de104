"""The layers point down: ``symbolic/`` neither imports nor names ``numeric/`` or ``derivations/`` (strings and
docstrings included: a model names none of the code that computes it); ``numeric/`` imports nothing of
``derivations/``. The checks read the source files (no import), so they cannot be fooled by a lazy import inside
a function, and each is shown to fail on a planted line first."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: a module path of the upper layers, written out (``qderive.numeric.engines``, a ``"qderive.derivations:x"`` string)
NAMED = re.compile(r"qderive\.(numeric|derivations)\b")


def _imports(tree: ast.AST, package: str) -> list[str]:
    """Every module imported anywhere in the file (function-level imports included), resolved to absolute names."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]
    return out


def _package_of(path: Path, folder: str) -> str:
    rel = path.relative_to(ROOT / folder).with_suffix("")
    parts = ["qderive", folder, *rel.parts]
    return ".".join(parts if parts[-1] == "__init__" else parts[:-1]).removesuffix(".__init__")


def upward(folder: str, forbidden: tuple, strings: bool, source: str | None = None, path: Path | None = None):
    """The offending (file, line text) pairs of ``folder``'s sources (or of one ``source`` text, for the test of the
    test): imports of the ``forbidden`` layers and, with ``strings``, any text naming their module paths."""
    files = [(path, source)] if source is not None else [
        (p, p.read_text(encoding="utf-8")) for p in sorted((ROOT / folder).rglob("*.py"))]
    bad = []
    for p, text in files:
        package = _package_of(p, folder)
        for name in _imports(ast.parse(text), package):
            if any(name == f"qderive.{layer}" or name.startswith(f"qderive.{layer}.") for layer in forbidden):
                bad.append((p.name, f"imports {name}"))
        if strings:
            for line in text.splitlines():
                m = NAMED.search(line)
                if m and m.group(1) in forbidden:
                    bad.append((p.name, line.strip()))
    return bad


def test_symbolic_names_no_upper_layer():
    assert upward("symbolic", ("numeric", "derivations"), strings=True) == []


def test_numeric_imports_no_derivations():
    assert upward("numeric", ("derivations",), strings=False) == []


def test_the_scan_fails_on_planted_references():
    """Each kind of upward reference is caught: an absolute import, a relative one inside a function, a lazy
    reference string."""
    path = ROOT / "symbolic" / "models" / "planted.py"
    for text in ("import qderive.numeric.precision\n",
                 "def f():\n    from ...numeric import precision\n",
                 "engine = 'qderive.numeric.engines.vacation:FiniteEngine'\n",
                 "from ...derivations.capabilities import ask\n"):
        assert upward("symbolic", ("numeric", "derivations"), strings=True, source=text, path=path), text
    numeric = ROOT / "numeric" / "engines" / "planted.py"
    assert upward("numeric", ("derivations",), strings=False, source="from ...derivations import smoke\n",
                  path=numeric)
    assert not upward("numeric", ("derivations",), strings=False, source="from ..kernels import chains\n",
                      path=numeric)
