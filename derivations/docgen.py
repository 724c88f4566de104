"""Generate the API reference (``docs/reference/*.md``) from the docstrings.

``python -m qderive.derivations.docgen docs/reference`` writes one Markdown page for the
facade (``qderive.md``: ``import qderive as qd``) and one per package (``symbolic.md``,
``numeric.md``, ``derivations.md``). A package page covers the package and every module of
its subpackages (``qderive.symbolic.laws.phase_type``, ``qderive.numeric.kernels.vacation``,
...), found by walking the package: each module with its docstring and the public names of
its ``__all__`` (classes and functions) with their signatures and docstrings. Private modules
(a name starting with ``_``) and ``__main__`` modules are left out. A test compares the
committed pages with a fresh generation, so the reference cannot drift from the code.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

__all__ = ["PACKAGES", "modules_of", "reference_pages", "write_reference"]

#: the packages with a page of their own (the facade ``qderive`` has one too)
PACKAGES = ("qderive.symbolic", "qderive.numeric", "qderive.derivations")

_HEADER = ("*Generated from the docstrings by `python -m qderive.derivations.docgen docs/reference`; "
           "do not edit by hand.*")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _signature(obj) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    return _ADDRESS.sub("", text)  # a default's repr must not carry a memory address


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split(".")[1:])


def modules_of(pkg_name: str) -> list[str]:
    """The package and every public module of it and of its subpackages, in dotted-name order."""
    pkg = importlib.import_module(pkg_name)
    names = [pkg_name]
    for info in pkgutil.walk_packages(pkg.__path__, pkg_name + ".", onerror=lambda name: None):
        if _public(info.name):
            names.append(info.name)
    return sorted(names)


def _object_section(public: str, obj) -> list[str]:
    kind = "class" if inspect.isclass(obj) else "def"
    lines = [f"### `{kind} {public}{_signature(obj)}`", ""]
    doc = inspect.getdoc(obj)
    return lines + (["```text", doc, "```", ""] if doc else ["*(no docstring)*", ""])


def _module_section(name: str, only_defined_here: bool = False) -> list[str]:
    module = importlib.import_module(name)
    lines = [f"## `{name}`", ""]
    doc = inspect.getdoc(module)
    if doc:
        lines += ["```text", doc, "```", ""]
    for public in getattr(module, "__all__", ()):
        obj = getattr(module, public, None)
        if obj is None or not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if only_defined_here and getattr(obj, "__module__", name) != name:
            continue  # a re-export: documented in its own module
        lines += _object_section(public, obj)
    return lines


def _facade_page() -> str:
    import qderive

    lines = ["# Reference: `qderive` (the facade, `import qderive as qd`)", "", _HEADER, ""]
    lines += _module_section("qderive", only_defined_here=True)
    groups: dict[str, list[str]] = {}
    for public in qderive.__all__:
        obj = getattr(qderive, public)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            groups.setdefault(getattr(obj, "__module__", "qderive"), []).append(public)
    lines += ["## Where each name is defined", "", "| module | names |", "|---|---|"]
    for module in sorted(groups):
        lines.append(f"| `{module}` | {', '.join(f'`{n}`' for n in sorted(groups[module]))} |")
    lines.append("")
    return "\n".join(lines)


def reference_pages() -> dict[str, str]:
    """``{file name: Markdown text}``: ``qderive.md`` and one page per package of :data:`PACKAGES`."""
    pages = {"qderive.md": _facade_page()}
    for pkg_name in PACKAGES:
        lines = [f"# Reference: `{pkg_name}`", "", _HEADER, "", "Modules:", ""]
        modules = modules_of(pkg_name)
        lines += [f"- `{name}`" for name in modules] + [""]
        for name in modules:
            lines += _module_section(name)
        pages[pkg_name.split(".")[1] + ".md"] = "\n".join(lines)
    return pages


def write_reference(folder: str | Path) -> list[Path]:
    """Write :func:`reference_pages` into ``folder``; returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in reference_pages().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover
    for written_path in write_reference(sys.argv[1] if len(sys.argv) > 1 else "docs/reference"):
        print(written_path)
