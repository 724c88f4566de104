"""Generate the API reference (``docs/reference/*.md``) from the docstrings.

``python -m qderive.derivations.docgen docs/reference`` writes one Markdown page per
package (symbolic, numeric, derivations) listing every module with its docstring and
the public names of ``__all__`` with their signatures and docstrings. A test compares
the committed pages with a fresh generation, so the reference cannot drift from the code.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

__all__ = ["reference_pages", "write_reference"]

PACKAGES = ("qderive.symbolic", "qderive.numeric", "qderive.derivations")


def _signature(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def _module_section(name: str) -> list[str]:
    module = importlib.import_module(name)
    lines = [f"## `{name}`", ""]
    doc = inspect.getdoc(module)
    if doc:
        lines += ["```text", doc, "```", ""]
    for public in getattr(module, "__all__", ()):
        obj = getattr(module, public, None)
        if obj is None or not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        kind = "class" if inspect.isclass(obj) else "def"
        lines += [f"### `{kind} {public}{_signature(obj)}`", ""]
        odoc = inspect.getdoc(obj)
        lines += (["```text", odoc, "```", ""] if odoc else ["*(no docstring)*", ""])
    return lines


def reference_pages() -> dict[str, str]:
    """``{file name: Markdown text}`` for every package."""
    pages = {}
    for pkg_name in PACKAGES:
        pkg = importlib.import_module(pkg_name)
        modules = sorted(
            info.name for info in pkgutil.iter_modules(pkg.__path__, pkg_name + ".") if not info.name.rsplit(".", 1)[1].startswith("_")
        )
        lines = [f"# Reference: `{pkg_name}`", "",
                 "*Generated from the docstrings by `python -m qderive.derivations.docgen docs/reference`; "
                 "do not edit by hand.*", ""]
        for name in modules:
            lines += _module_section(name)
        pages[pkg_name.split(".")[1] + ".md"] = "\n".join(lines)
    return pages


def write_reference(folder: str | Path) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in reference_pages().items():
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    write_reference(sys.argv[1] if len(sys.argv) > 1 else "docs/reference")
