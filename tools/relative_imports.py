"""Write the imports between modules of the three code folders as relative imports.

``from qderive.numeric.kernels import chains`` inside ``qderive.derivations.x`` becomes ``from ..numeric.kernels
import chains``: the three folders sit side by side at the repository root and are installed side by side under
``qderive`` (``[tool.setuptools.package-dir]`` in pyproject.toml), so a relative import names the same module in
the installed package and in the file tree, and a reader of the files sees the layers. The facade
(``derivations/_qderive``, installed as ``qderive`` itself) keeps absolute imports: there the file tree and the
package differ (``derivations/_qderive/symbolic`` does not exist). The kernels (``numeric/kernels``) import no
other folder (they are shipped verbatim by codegen) and are left alone. ``import qderive.x.y as z`` statements
are reported, not rewritten. Run from anywhere::

    python3 tools/relative_imports.py           # lists what would change, exits 1 if anything would
    python3 tools/relative_imports.py --write   # rewrites the files (idempotent)

Every rewrite is checked with ``tools/import_graph.py``: the rewritten file's import edges equal the original's.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_graph as G  # noqa: E402

ROOT = G.ROOT
FOLDERS = ("qderive.symbolic", "qderive.numeric", "qderive.derivations")


def _relative(module: G.Module, target: str) -> str:
    """``target`` (absolute dotted name) written relative to ``module``: dots, then the rest."""
    package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    parts = target.split(".")
    common = 0
    while common < min(len(package), len(parts)) and package[common] == parts[common]:
        common += 1
    dots = "." * (len(package) - common + 1)
    return dots + ".".join(parts[common:])


def _convertible(module: G.Module) -> bool:
    return module.name.startswith(FOLDERS) and not module.name.startswith("qderive.numeric.kernels")


def convert(module: G.Module, text: str) -> tuple[str, list[str]]:
    """(the text with its ``from qderive.<folder>...`` imports made relative, the ``import qderive...`` lines
    left as they are)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    left = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(FOLDERS):
            line = lines[node.lineno - 1]
            head = f"from {node.module} import"
            at = line.find(head, node.col_offset)
            if at != node.col_offset:
                raise ValueError(f"{module.path}:{node.lineno}: cannot find {head!r}")
            lines[node.lineno - 1] = line[:at] + f"from {_relative(module, node.module)} import" + line[at + len(head):]
        elif isinstance(node, ast.Import) and any(a.name.startswith(FOLDERS) for a in node.names):
            left.append(f"{module.path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return "".join(lines), left


def plan() -> tuple[dict, list[str]]:
    """{Module: new text} for the modules that would change, and the ``import qderive...`` lines left."""
    mods = G.modules()
    changes, left = {}, []
    for module in mods.values():
        if not _convertible(module):
            continue
        text = module.path.read_text(encoding="utf-8")
        new, kept = convert(module, text)
        left += kept
        if new != text:
            changes[module] = new
    return changes, left


def same_edges(changes: dict) -> list[str]:
    """The modules whose rewritten imports would name other modules than before (none, or a bug here)."""
    mods = G.modules()
    before, _ = G.scan(mods)
    old = {}
    for e in before:
        old.setdefault(e.source, set()).add(e.target)
    bad = []
    for module, text in changes.items():
        edges = _edges_in_memory(module, text, mods)
        if edges != old.get(module.name, set()):
            bad.append(module.name)
    return bad


def _edges_in_memory(module: G.Module, text: str, mods) -> set:
    """The import targets of ``text`` as the source of ``module`` (nothing written)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / module.path.name
        path.write_text(text, encoding="utf-8")
        edges, _ = G.scan({**mods, module.name: G.Module(module.name, path, module.is_package)}, only={module.name})
    return {e.target for e in edges if e.source == module.name}


def main(argv: list[str]) -> int:
    changes, left = plan()
    bad = same_edges(changes)
    if bad:
        print("a rewrite would change what these modules import (not written):", ", ".join(bad))
        return 2
    count = sum(a != b for m, t in changes.items()
                for a, b in zip(m.path.read_text(encoding="utf-8").splitlines(), t.splitlines()))
    if "--write" in argv:
        for module, text in changes.items():
            module.path.write_text(text, encoding="utf-8")
        print(f"rewrote {count} imports in {len(changes)} files")
    else:
        print(f"{count} absolute imports between modules of the folders would be relative, in {len(changes)} files")
        for module in sorted(changes, key=lambda m: str(m.path)):
            print(f"  {module.path.relative_to(ROOT)}")
    for line in left:
        print(f"  left absolute: {line}")
    return 0 if "--write" in argv or not changes else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
