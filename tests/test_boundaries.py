"""Module boundaries: no import cycle (function-level imports included) and no private name used across modules.

The import graph is read from the source by ``tools/import_graph.py`` (AST; relative imports resolved against the
installed names), so a cycle hidden inside a function counts. Each test is a pure scan of the files: no import of
the package, well under a second.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)
    spec.loader.exec_module(module)
    return module


graph = _tool()


@functools.lru_cache(maxsize=1)
def _scan():
    """One scan of the package's files for the tests below (about a second)."""
    return graph.scan()

# No cycle is allowed (the two that issue 25's other branches removed are gone since their merge).
ALLOWED_CYCLES: list = []


def _sip_file(path: Path) -> bool:
    """No file is exempt from the private-name rule (the SIP package was rewritten onto public names)."""
    return False


def test_the_scan_sees_the_package():
    """The scan finds the four folders' modules and edges of every kind (a scan that sees nothing passes nothing)."""
    mods = graph.modules()
    assert {"qderive", "qderive.symbolic.models.base", "qderive.numeric.precision",
            "qderive.derivations.cli"} <= set(mods)
    assert not any("_qderive" in name for name in mods)
    edges, _ = _scan()  # graph.scan() of graph.modules(): the scan the tests below read (one per process)
    pairs = {(e.source, e.target) for e in edges}
    # a module-level relative import (precision: ``from .backend import FLOAT64``) ...
    assert ("qderive.numeric.precision", "qderive.numeric.backend") in pairs
    # ... and a function-level one (precision.evaluate_response: ``from .response import ...``)
    assert ("qderive.numeric.precision", "qderive.numeric.response") in pairs


def test_the_tool_finds_a_cycle_and_a_private_import(tmp_path):
    """On a two-module package made here: a function-level cycle and ``from .a import _x`` are both reported."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n_x = 1\n")
    (pkg / "b.py").write_text("def f():\n    from .a import _x\n    from . import a\n    return a._x + _x\n")
    mods = {
        "pkg": graph.Module("pkg", pkg / "__init__.py", True),
        "pkg.a": graph.Module("pkg.a", pkg / "a.py", False),
        "pkg.b": graph.Module("pkg.b", pkg / "b.py", False),
    }
    edges, private = graph.scan(mods)
    assert graph.cycles(edges) == [["pkg.a", "pkg.b"]]
    assert {(p.owner, p.name, p.kind) for p in private} == {("pkg.a", "_x", "import"), ("pkg.a", "_x", "attribute")}


def test_no_import_cycles():
    edges, _ = _scan()
    found = graph.cycles(edges)
    unexpected = [c for c in found if c not in ALLOWED_CYCLES]
    assert not unexpected, "import cycles (strongly connected modules): " + "; ".join(" <-> ".join(c) for c in unexpected)


def test_no_private_names_across_modules():
    _, private = _scan()
    bad = [p for p in private if not _sip_file(p.path)]
    assert not bad, "private names used across modules:\n" + "\n".join(
        f"{p.path.relative_to(ROOT)}:{p.line}: {p.owner}.{p.name}" for p in bad)


def test_relative_imports_name_the_same_modules(monkeypatch):
    """tools/relative_imports.py rewrites ``from qderive.<folder>...`` between the three folders as relative imports;
    each rewritten module imports exactly the modules it imported before (the folders sit side by side in the file
    tree as in the installed package). The facade and the kernels are not rewritten."""
    spec = importlib.util.spec_from_file_location("relative_imports", ROOT / "tools" / "relative_imports.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.G is graph
    # the edges before the rewrite: the full scan the other tests read (_scan, one per process; 1 s), not a second
    # one; the rewritten modules are still scanned one by one by the tool
    scanned, scan = _scan(), graph.scan

    def shared_scan(mods=None, only=None):
        if only is None:
            assert mods is None or set(mods) == set(graph.modules())
            return scanned
        return scan(mods, only)

    monkeypatch.setattr(graph, "scan", shared_scan)
    changes, _ = tool.plan()
    assert not any(m.name == "qderive" or m.name.startswith("qderive.numeric.kernels") for m in changes)
    assert tool.same_edges(changes) == []
    # a hand-checked case: two levels up from derivations/export to the numeric folder
    module = graph.Module("qderive.derivations.export.codegen", ROOT / "derivations/export/codegen.py", False)
    assert tool._relative(module, "qderive.numeric.compile") == "...numeric.compile"
    assert tool._relative(module, "qderive.derivations.export.families") == ".families"
