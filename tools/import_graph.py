"""The import graph of the package qderive, read from the source files (nothing is imported).

Every ``import`` statement counts: at module level, inside functions, under ``if TYPE_CHECKING:``
(a cycle a type checker sees is a cycle a reader sees). Relative imports are resolved against the
installed names (the folder ``symbolic/`` is ``qderive.symbolic``, ``derivations/_qderive`` is
``qderive``; see ``[tool.setuptools.package-dir]`` in pyproject.toml). ``from package import name``
is an edge to ``package.name`` when that is a module, else to ``package``. Only edges between
modules of qderive are kept.

It also lists the private names one module takes from another: ``from x import _name`` and
``x._name`` attribute access on a name bound by ``import x`` / ``from p import x`` (x a module of
qderive). Dunder names (``__version__``) are not private. Run from anywhere::

    python3 tools/import_graph.py            # prints the cycles and the private imports, exits 1 if any
    python3 tools/import_graph.py --edges    # prints every edge "a -> b"

``tests/test_boundaries.py`` asserts there are none (beyond a short, commented allow-list).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# installed package name -> folder (pyproject.toml [tool.setuptools.package-dir])
FOLDERS = {
    "qderive": ROOT / "derivations" / "_qderive",
    "qderive.symbolic": ROOT / "symbolic",
    "qderive.numeric": ROOT / "numeric",
    "qderive.derivations": ROOT / "derivations",
}


@dataclass(frozen=True)
class Module:
    name: str  # dotted installed name
    path: Path
    is_package: bool  # an __init__.py


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


@dataclass(frozen=True)
class PrivateUse:
    module: str  # the module that uses the name
    path: Path
    line: int
    owner: str  # the module that defines it
    name: str
    kind: str  # "import" (from owner import _name) or "attribute" (owner._name)


def modules() -> dict[str, Module]:
    """Installed dotted name -> Module, for every .py file of the package (tests and tools excluded)."""
    found: dict[str, Module] = {}
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = list(rel.parts)
            if package != "qderive" and parts and parts[0] == "_qderive":
                continue  # the facade folder is the package qderive, listed once
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            name = ".".join([package, *parts])
            found[name] = Module(name, path, is_package)
    return found


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The absolute dotted name a ``from ... import`` refers to."""
    if node.level == 0:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, mods: dict[str, Module]) -> str | None:
    """The longest prefix of ``name`` that is a module of qderive."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in mods:
            return candidate
        parts.pop()
    return None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _scope(root):
    """(the nodes of ``root``'s own scope, the functions defined in it): a function's body is its own scope."""
    own, nested = [], []
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested.append(node)
            own.extend(node.decorator_list)  # decorators and defaults run in the enclosing scope
            own.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None)
            continue
        own.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return own, nested


def scan(mods: dict[str, Module] | None = None, only=None) -> tuple[list[Edge], list[PrivateUse]]:
    """Every import edge between modules of qderive, and every private name used across modules (of the modules
    named in ``only``, default all).

    ``x._name`` counts when ``x`` is bound by an import to a module of qderive in the scope of the access (the
    function, or the enclosing ones, or the module), so two functions may bind one alias to different modules."""
    mods = modules() if mods is None else mods
    edges: list[Edge] = []
    private: list[PrivateUse] = []

    def visit(module: Module, root, outer: dict[str, str]) -> None:
        own, nested = _scope(root)
        aliases = dict(outer)  # local name -> module of qderive it is bound to
        for node in own:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _known(alias.name, mods)
                    if target and target != module.name:
                        edges.append(Edge(module.name, target, node.lineno))
                    if target and alias.asname:
                        aliases[alias.asname] = target
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, node)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in mods:  # a submodule
                        target = full
                        aliases[alias.asname or alias.name] = full
                    else:
                        target = _known(base, mods)
                        if target and _is_private(alias.name) and target != module.name:
                            private.append(PrivateUse(module.name, module.path, node.lineno, target, alias.name,
                                                      "import"))
                    if target and target != module.name:
                        edges.append(Edge(module.name, target, node.lineno))
        for node in own:
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _is_private(node.attr)
                and aliases[node.value.id] != module.name
            ):
                owner = aliases[node.value.id]
                if f"{owner}.{node.attr}" not in mods:
                    private.append(PrivateUse(module.name, module.path, node.lineno, owner, node.attr, "attribute"))
        for function in nested:
            visit(module, function, aliases)

    for module in mods.values():
        if only is not None and module.name not in only:
            continue
        visit(module, ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path)), {})
    return edges, private


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted; a module
    importing itself is not a cycle. Every cycle of the graph lies inside one of them."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:  # iterative Tarjan: the graph is deep enough to matter for recursion
        nonlocal counter
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def elementary_cycles(edges: list[Edge]) -> list[list[str]]:
    """The simple cycles of the graph (each listed once, starting at its smallest module), for reports."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
    found: set[tuple[str, ...]] = set()
    for component in cycles(edges):
        members = set(component)
        for start in component:
            path = [start]

            def walk(node: str) -> None:
                for child in sorted(graph.get(node, ()) & members):
                    if child == start:
                        found.add(tuple(path))
                    elif child > start and child not in path and len(path) < 6:
                        path.append(child)
                        walk(child)
                        path.pop()

            walk(start)
    return [list(c) for c in sorted(found)]


def main(argv: list[str]) -> int:
    edges, private = scan()
    if "--edges" in argv:
        for edge in sorted({(e.source, e.target) for e in edges}):
            print(" -> ".join(edge))
        return 0
    loops = elementary_cycles(edges)
    print(f"{len(loops)} import cycles, in {len(cycles(edges))} groups of mutually importing modules")
    for loop in loops:
        print("  " + " -> ".join([*loop, loop[0]]))
    imported = [p for p in private if p.kind == "import"]
    print(
        f"{len(private)} private names used across modules, in {len({p.path for p in private})} files "
        f"({len(imported)} imported by name in {len({(p.path, p.line) for p in imported})} import statements, "
        f"{len(private) - len(imported)} attribute accesses)"
    )
    for use in sorted(private, key=lambda p: (str(p.path), p.line)):
        print(f"  {use.path.relative_to(ROOT)}:{use.line}: {use.owner}.{use.name} ({use.kind})")
    return 1 if loops or private else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
