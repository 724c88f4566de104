"""Sphinx configuration of the qderive documentation site.

Build (strict: every warning is an error)::

    python3 -m pip install -e ".[docs]"
    python3 -m sphinx -W --keep-going -b html docs docs/_build/html

Why Sphinx: the docstrings are reStructuredText with Sphinx roles (``:func:``, ``:class:``,
``:mod:``, several hundred of them), which autodoc renders and cross-links as written;
MyST-Parser reads the Markdown pages unchanged (``$...$`` and ``$$...$$`` math, relative
``.md`` links checked at build time), myst-nb executes the notebooks during the build, and
``-W`` turns a broken link, an unknown reference or a malformed docstring into a failure.
MathJax is served from the site itself (sphinx-mathjax-offline), so the pages render
without network access.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import pkgutil
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

import qderive

project = "qderive"
author = "qderive developers"
copyright = "qderive developers"  # noqa: A001 (Sphinx's name)
release = qderive.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_nb",  # Markdown pages (MyST-Parser) and executed notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",  # the facade table (no generated pages)
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into _static: math renders offline
]

root_doc = "index"
exclude_patterns = ["_build", "README.md", "**.ipynb_checkpoints", "jupyter_execute"]
# .rst first: autosummary writes its generated pages with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# MyST: $...$, $$...$$ (with labels), amsmath environments, heading anchors so that
# ``theory/chapter2.md#2-finite-waiting-room-r-ge1``-style links resolve
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_dmath_double_inline = True
myst_heading_anchors = 3
myst_links_external_new_tab = False

# notebooks: executed at every build (small and fast); an error in a cell fails the build
nb_execution_mode = os.environ.get("QDERIVE_DOCS_EXECUTE", "force")
nb_execution_timeout = 120
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# API reference generated from the docstrings at build time
autosummary_generate = False
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "signature"
toc_object_entries = False  # the navigation lists pages and modules, not every object (build time)
napoleon_google_docstring = True
napoleon_numpy_docstring = True
add_module_names = False

html_theme = "furo"
html_title = f"qderive {release}"
html_static_path = []
html_extra_path = []
templates_path = ["_templates"]

suppress_warnings = [
    # a short name in a docstring (``name``, ``load``) that several classes define resolves to
    # one of them; Sphinx would warn about the choice
    "ref.python",
]


def _parse(directive, lines, source):
    """Nodes of MyST Markdown ``lines`` parsed in the directive's context (the page is MyST)."""
    node = nodes.section()
    node.document = directive.state.document
    directive.state.nested_parse(StringList(lines, source=source), directive.content_offset, node, match_titles=True)
    return node.children


def _rst(lines):
    """reStructuredText ``lines`` (autodoc's directives) as a MyST ``eval-rst`` block."""
    return ["```{eval-rst}", *lines, "```", ""]


class FacadeDirective(SphinxDirective):
    """``{qderive-facade}``: a summary table of every name of ``import qderive as qd``.

    The names come from ``qderive.__all__`` at build time; each links to the object's
    documentation in the module that defines it, so a new model or law appears here by itself.
    """

    def run(self):
        groups: dict[str, list[str]] = {}
        for name in qderive.__all__:
            obj = getattr(qderive, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                module = getattr(obj, "__module__", "qderive")
                groups.setdefault(module, []).append(f"{module}.{obj.__qualname__}")
        lines = _rst([".. py:currentmodule:: None"])
        for module in sorted(groups):
            rst = [f".. rubric:: :mod:`{module}`", "", ".. autosummary::", ""]
            rst += [f"   ~{target}" for target in sorted(groups[module])]
            lines += _rst(rst)
        return _parse(self, lines, "qderive-facade")


def _public_modules(package: str) -> list[str]:
    """The package and every module of it and of its subpackages (no ``_private`` or ``__main__``)."""
    pkg = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, package + ".", onerror=lambda name: None):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _own_members(module_name: str) -> list[str]:
    """The names of ``__all__`` that the module defines itself (a re-export is documented where it is defined)."""
    module = importlib.import_module(module_name)
    own = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name, None)
        defined_in = getattr(obj, "__module__", None) if (inspect.isclass(obj) or inspect.isroutine(obj)) else None
        if obj is not None and not inspect.ismodule(obj) and defined_in in (None, module_name):
            own.append(name)
    return own


class PackageDirective(SphinxDirective):
    """``{qderive-package} qderive.numeric``: every module of a package, with its docstring and its public names.

    The modules are found by walking the package when the site is built (a new module appears
    by itself); each is documented by autodoc with the names of its ``__all__`` that it
    defines (classes with their public methods and properties, functions, constants).
    """

    required_arguments = 1

    def run(self):
        lines = []
        for module_name in _public_modules(self.arguments[0]):
            members = _own_members(module_name)
            rst = [f".. automodule:: {module_name}"]
            rst += [f"   :members: {', '.join(members)}"] if members else ["   :no-members:"]
            lines += [f"## `{module_name}`", "", *_rst(rst)]
        return _parse(self, lines, self.arguments[0])


_LITERAL = re.compile(r"(``.*?``)")
_BAR = re.compile(r"(?<![\\])\|")


def _plain_bars(app, what, name, obj, options, lines):
    """Docstrings as written, read right by docutils, with their citations as links.

    Docstrings write ``|x|`` for an absolute value (plain-text math), never a reST substitution:
    a ``|`` outside a literal (``...``, a ``::`` block, a doctest) and outside a table row is
    escaped, so that docutils reads it as the character it is. A citation of a theory page
    (``docs/theory/chapter2.md section 2``) becomes a link to that section of the site.
    """
    lines += _measure_lines(obj) if what == "class" else []
    literal_indent = None  # the indent of the paragraph that opened a literal block
    for n, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = None
        if line.rstrip().endswith("::"):
            literal_indent = indent
        table_row = stripped.startswith(("+-", "+=")) or (stripped.startswith("|") and stripped.rstrip().endswith("|"))
        if stripped.startswith((">>>", "...")):
            continue
        if "|" in line and not table_row:
            parts = _LITERAL.split(line)
            line = "".join(p if p.startswith("``") else _BAR.sub(r"\\|", p) for p in parts)
        lines[n] = _CITE.sub(_cite_link, line)


def _measure_lines(cls) -> list[str]:
    """A result record's measures (its fields declared with ``measure(...)``), as the docstring's last part.

    They are the keys of ``qderive eval NAME --json`` and the attributes of ``model.evaluate()``:
    each with its meaning, units and the source equation, read from the field's metadata.
    """
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        return []
    rows = []
    for f in dataclasses.fields(cls):
        info = f.metadata.get("measure")
        if info is None:
            continue
        extra = "; ".join(x for x in (info.units and f"units: {info.units}", info.source and f"source: {info.source}",
                                      info.optional and "on request") if x)
        rows += [f"``{f.name}``", f"   {info.help}" + (f" ({extra})" if extra else ""), ""]
    if not rows:
        return []
    return ["", "**Measures** (the keys of ``qderive eval ... --json``, attributes of the record):", "", *rows]


_CITE = re.compile(r"(?<![\w/.-])(``)?docs/theory/(chapter2|chapter3|other-models)\.md(``)?"
                   r"(,? (?:section )?([0-9]|[A-E])\b)?")


def _cite_link(match) -> str:
    """A docstring's citation ``docs/theory/PAGE.md section X`` as a link to that section of the site."""
    if bool(match.group(1)) != bool(match.group(3)):  # inside a longer literal: leave it as written
        return match.group(0)
    page, section = match.group(2), match.group(5)
    text = f"docs/theory/{page}.md" + (match.group(4) or "")
    if section:
        return f":ref:`{text} <{page}-section-{section.lower()}>`"
    return f":doc:`{text} </theory/{page}>`"


_INLINE_MATH = re.compile(r"\\\((.*?)\\\)")


def _plain_title(app, pagename, templatename, context, doctree):
    """The browser tab shows a page title as text: ``$M^{[X]}|G|1|r$`` there reads ``M[X]|G|1|r``."""
    def plain(match):
        return re.sub(r"\\([a-zA-Z]+)", r"\1", match.group(1)).replace("^", "").replace("{", "").replace("}", "")

    if context.get("title"):
        context["title"] = _INLINE_MATH.sub(plain, context["title"])


def _tagged_displays(app, doctree):
    """A display with rows (``\\\\``) and a source tag (``\\tag{3}``) is typeset as one ``equation*``.

    Sphinx's MathJax writer wraps a display containing ``\\\\`` in ``split``, where MathJax allows no
    ``\\tag`` ("\\tag not allowed in split environment"); the formula pages' displays are an
    ``aligned`` block followed by the source's tag, so they are passed on whole (``nowrap``) inside
    ``equation*``, which MathJax typesets with the tag at the right margin.
    """
    from docutils import nodes

    for node in list(doctree.findall(nodes.math_block)):
        text = node.astext()
        if not node.get("nowrap") and "\\tag" in text and "\\\\" in text:
            node.children = []
            node += nodes.Text("\\begin{equation*}" + text + "\\end{equation*}")
            node["nowrap"] = True


def _formula_pages(app):
    """``formulas/NAME.md`` for every registered model with a derivation, generated at build time.

    Each page is exactly what ``qderive derive NAME --markdown docs/formulas/NAME.md`` writes (the
    derivation's own Markdown export: its steps, their source tags and the checks of ``qderive
    verify``), so the site always shows the derivations of the code it documents. The pages are
    not committed (``.gitignore``); a page is rewritten only when its text changed, so an
    incremental build reads only what changed. Derivations are cached (``QDERIVE_CACHE``).
    """
    from pathlib import Path

    from qderive.derivations.capabilities import load

    folder = Path(app.srcdir) / "formulas"
    for name, cls in sorted(qderive.models().items()):
        derivation = load(cls, "derivation")
        if derivation is None:
            continue
        text = derivation().markdown()
        page = folder / f"{name}.md"
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")


def setup(app):
    app.connect("builder-inited", _formula_pages)
    app.connect("doctree-read", _tagged_displays)
    app.connect("html-page-context", _plain_title)
    app.connect("autodoc-process-docstring", _plain_bars)
    app.add_directive("qderive-facade", FacadeDirective)
    app.add_directive("qderive-package", PackageDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
