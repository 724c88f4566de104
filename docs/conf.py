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
import functools
import importlib
import inspect
import os
import pkgutil
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.search.en import SearchEnglish
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

# matplotlib's font cache built here, before the notebooks run: a kernel that builds it prints
# "Matplotlib is building the font cache" into the first figure's cell
import matplotlib.font_manager  # noqa: E402,F401

# notebooks: executed at every build (small and fast); an error in a cell fails the build
nb_execution_mode = os.environ.get("QDERIVE_DOCS_EXECUTE", "force")
nb_execution_timeout = 120
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# API reference generated from the docstrings at build time
autosummary_generate = False
autosummary_imported_members = False
# members are asked for where they are wanted (``:members:`` on each class): Sphinx 9 documents every
# member of a module whose directive says ``:no-members:`` when the default says members
autodoc_default_options = {"show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "signature"
toc_object_entries = False  # the navigation lists pages and modules, not every object (build time)
napoleon_google_docstring = True
napoleon_numpy_docstring = True
add_module_names = False

html_theme = "furo"
html_title = f"qderive {release}"
html_static_path = ["_static"]
html_css_files = ["qderive.css"]
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


def _family(obj) -> str:
    """The API page of a public name of ``qd``: ``laws``, ``models``, ``results`` or ``functions`` (the rest)."""
    from qderive.symbolic.batches import BatchLaw
    from qderive.symbolic.laws import Law
    from qderive.symbolic.models.base import Measures, Model

    for family, base in (("laws", (Law, BatchLaw)), ("models", Model), ("results", Measures)):
        if inspect.isclass(obj) and issubclass(obj, base):
            return family
    return "functions"


def _autodoc(obj, target: str) -> list[str]:
    """The autodoc directive that documents ``obj`` as ``target``: a class with its members, a function, a constant."""
    if inspect.isclass(obj):
        return [f".. autoclass:: {target}", "   :members:"]
    return [f".. {'autofunction' if inspect.isroutine(obj) else 'autodata'}:: {target}"]


def _facade_names() -> dict[str, list[str]]:
    """Family -> the qualified names (``module.Class``) of the classes and functions of ``qderive.__all__``."""
    out: dict[str, list[str]] = {}
    for name in qderive.__all__:
        obj = getattr(qderive, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.setdefault(_family(obj), []).append(f"{obj.__module__}.{obj.__qualname__}")
    return out


class FamilyDirective(SphinxDirective):
    """``{qderive-family} laws``: every public class or function of one family of ``import qderive as qd``.

    The names come from ``qderive.__all__`` at build time (a new law or model appears by itself),
    grouped by the module that defines them; each is documented in full here (its methods, and for a
    result record its measures), and nowhere else: the module pages link to it.
    """

    required_arguments = 1

    def run(self):
        by_module: dict[str, list[str]] = {}
        for target in sorted(_facade_names().get(self.arguments[0], [])):
            module, _, _ = target.rpartition(".")
            by_module.setdefault(module, []).append(target)
        lines = []
        for module, targets in sorted(by_module.items()):
            lines += [f"## {{mod}}`{module}`", ""]
            for target in targets:
                obj = getattr(importlib.import_module(module), target.rpartition(".")[2])
                lines += _rst(_autodoc(obj, target))
        return _parse(self, lines, self.arguments[0])


class ModuleDirective(SphinxDirective):
    """``{qderive-module} qderive.numeric.kernels.vacation``: one module, its docstring and its public names.

    The names of its ``__all__`` that it defines, except those of ``import qderive as qd``, which
    are documented on their family's page (laws, models, results, functions) and linked from here.
    """

    required_arguments = 1

    def run(self):
        module_name = self.arguments[0]
        facade = {t: family for family, targets in _facade_names().items() for t in targets}
        members, elsewhere = [], []
        for name in _own_members(module_name):
            target = f"{module_name}.{name}"
            (elsewhere if target in facade else members).append((name, facade.get(target)))
        rst = [f".. automodule:: {module_name}"]
        rst += [f"   :members: {', '.join(n for n, _ in members)}"] if members else []
        lines = _rst(rst)
        if elsewhere:
            links = ", ".join(f"{{py:obj}}`~{module_name}.{n}` ({family})" for n, family in elsewhere)
            lines = [f"Public names of `qd` defined here (documented with their family): {links}.", "", *lines]
        return _parse(self, lines, module_name)


def _plain_markdown(text: str) -> str:
    """A docstring's reST line as Markdown text: roles and ````literals```` as code; ``*``, ``$``, ``<`` as
    characters."""
    text = re.sub(r":[\w:]+:`~?([^`]+)`", r"`\1`", text).replace("``", "`")
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else re.sub(r"([*$<_\\[\]])", r"\\\1", p) for p in parts)


class ModuleListDirective(SphinxDirective):
    """``{qderive-modules}``: a list of the module pages (``api/modules/NAME.md``), by package, each with the
    first line of its docstring (the pages are orphans: the navigation of every page stays short)."""

    def run(self):
        lines = []
        for package in API_PACKAGES:
            lines += [f"## `{package}`", ""]
            for name in _public_modules(package):
                doc = inspect.getdoc(importlib.import_module(name)) or ""
                first = _plain_markdown(doc.strip().split("\n\n")[0].replace("\n", " "))
                lines.append(f"- [`{name}`](modules/{name}.md)" + (f": {first}" if first else ""))
            lines.append("")
        return _parse(self, lines, "qderive-modules")


#: the packages whose modules get a page each (``api/modules/NAME.md``, written at build time)
API_PACKAGES = ("qderive.symbolic", "qderive.numeric", "qderive.derivations")


def _module_pages(app):
    """``api/modules/NAME.md`` for every public module of :data:`API_PACKAGES`, generated at build time.

    A page per module keeps every page of the reference small (the whole package on one page
    was about 1 MB). The pages are not committed (``.gitignore``); a page is rewritten only when
    its text changed, and the page of a module that no longer exists is removed.
    """
    from pathlib import Path

    folder = Path(app.srcdir) / "api" / "modules"
    folder.mkdir(exist_ok=True)
    wanted = {}
    for package in API_PACKAGES:
        for name in _public_modules(package):
            # orphan: linked from api/modules.md, kept out of the navigation of every page
            wanted[f"{name}.md"] = f"---\norphan: true\n---\n\n# `{name}`\n\n```{{qderive-module}} {name}\n```\n"
    for page in folder.glob("*.md"):
        if page.name not in wanted:
            page.unlink()
    for file_name, text in wanted.items():
        page = folder / file_name
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")


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
    incremental build reads only what changed. Derivations, and each page's text, are cached
    (``QDERIVE_CACHE``: an entry's key holds a hash of the whole package source, so a page is
    exported again after any change to the code).
    """
    from pathlib import Path

    from qderive.derivations.capabilities import has, load
    from qderive.symbolic.cache import cached

    folder = Path(app.srcdir) / "formulas"
    for name, cls in sorted(qderive.models().items()):
        if not has(cls, "derivation"):
            continue
        text = cached(f"docs.conf.formula_page::{name}", lambda cls=cls: load(cls, "derivation")().markdown())
        page = folder / f"{name}.md"
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")


class _StemCachedEnglish(SearchEnglish):
    """Sphinx's English search language with each word stemmed once per build (the same index).

    The search index stems every word of every page (about 70,000 stems, a few thousand distinct
    words); the Snowball stemmer is a pure function of the word, so its result is kept.
    """

    def __init__(self, options):
        super().__init__(options)
        self.stem = functools.lru_cache(maxsize=None)(self.stem)


_NAVIGATION: dict = {}


def _shared_navigation(app, pagename, templatename, context, doctree):
    """One rendering of the site's navigation for every page that no toctree lists (the module pages).

    Furo renders the whole navigation tree on every page (``toctree(...)``). For a page that is in
    no toctree, that tree marks no entry as current, so it depends on the page only through the
    folder its relative links start from: it is rendered once per folder and keyword set and
    reused (the same HTML). Pages in a toctree, and the root page, are rendered as before.
    """
    if "toctree" not in context or pagename == app.config.root_doc:
        return
    if "listed" not in _NAVIGATION:  # the pages of every toctree, known once the sources are read
        _NAVIGATION["listed"] = set().union(*app.builder.env.toctree_includes.values())
    if pagename in _NAVIGATION["listed"]:
        return
    render, folder = context["toctree"], pagename.rpartition("/")[0]

    def toctree(**kwargs):
        key = (folder, tuple(sorted(kwargs.items())))
        if key not in _NAVIGATION:
            _NAVIGATION[key] = render(**kwargs)
        return _NAVIGATION[key]

    context["toctree"] = toctree


def setup(app):
    app.connect("builder-inited", lambda app: _NAVIGATION.clear())
    app.connect("builder-inited", _formula_pages)
    app.connect("builder-inited", _module_pages)
    # MathJax on every page, not only on pages with math in their body: the navigation of every
    # page holds titles with math ($M^{[X]}|G|1|r$)
    app.set_html_assets_policy("always")
    app.connect("doctree-read", _tagged_displays)
    app.connect("html-page-context", _plain_title)
    app.connect("html-page-context", _shared_navigation, priority=400)  # before furo's (500) renders the tree
    app.add_search_language(_StemCachedEnglish)
    app.connect("autodoc-process-docstring", _plain_bars)
    app.add_directive("qderive-facade", FacadeDirective)
    app.add_directive("qderive-family", FamilyDirective)
    app.add_directive("qderive-module", ModuleDirective)
    app.add_directive("qderive-modules", ModuleListDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
