r"""LaTeX export: a derivation as text a researcher pastes into a paper.

:func:`document` gives a standalone ``.tex`` file (section headings, the source's equation numbers as tags,
the algorithms, a reference list); ``fragment=True`` gives the body alone, to ``\input`` into a paper whose
preamble loads ``amsmath`` and ``amssymb`` (``algorithms=True`` adds the algorithm blocks, which need
``algorithm`` and ``algpseudocode``: the fragment's first comment line names the packages it needs).

* Prose is the derivation's text model (:mod:`.prose`): inline math, ``\cite[eq.~(3)]{sopin2013}`` (the
  entries: ``--bib FILE``, :mod:`.bibliography`).
* Every display is one ``equation`` (a ``split`` when it takes several rows) with ``\label{P:...}``
  (``label_prefix``, default the model's name): the host paper numbers it, or ``source_tags`` shows the
  source's number as its tag.
* Relations are written by :mod:`.printing` in the source's notation and a person's term order; a step with a
  stated paper form prints that form, proved equal to the derived one first (:func:`.forms.shown`).
* How a step was verified (the check, the module, the theory page) goes into a LaTeX comment above its
  display, and into the optional ``provenance`` appendix; never into the text.
"""

from __future__ import annotations

import re

from .printing import PaperLatexPrinter, latex, rows
from .prose import escape, latex_text

__all__ = ["document", "body", "render_recursions", "escape", "text", "tag", "display", "aligned", "display_math",
           "step_text", "step_refs", "cited_keys", "provenance_appendix", "notation_text", "label",
           "SECTION_LEVELS", "WIDTH", "PREAMBLE", "FRAGMENT_PACKAGES",
           "ALGORITHM_PACKAGES", "MAX_ROWS"]

#: the width (in :func:`.printing.tex_width` units, about half an em) a display row may take: the text block
#: of a default 10 pt ``article`` (345 pt) or ``amsart``, less room for the equation number; rows are broken to it
WIDTH = 54
#: no display takes more rows than this (tested for every model)
MAX_ROWS = 12
#: heading levels of ``--section-level``: (the derivation's heading, a sub-heading) or None (no headings)
SECTION_LEVELS = {"section": ("section", "subsection"), "subsection": ("subsection", "subsubsection"),
                  "none": (None, "paragraph")}
FRAGMENT_PACKAGES = ("amsmath", "amssymb")
ALGORITHM_PACKAGES = ("algorithm", "algpseudocode")

PREAMBLE = (
    "\\documentclass{article}",
    "\\usepackage[T1]{fontenc}",
    "\\usepackage{lmodern}",
    "\\usepackage{amsmath,amssymb}",
    "\\usepackage{algorithm}",
    "\\usepackage{algpseudocode}",
    "\\emergencystretch=2em",
)


def text(value: str, refs: dict | None = None) -> str:
    """LaTeX of prose (:func:`.prose.latex_text`), references to the steps as ``\\eqref``."""
    return latex_text(value, refs)


def step_refs(derivation, prefix: str) -> dict:
    """``"(R)" -> "\\eqref{prefix:R}"`` for every step whose label is a parenthesised number or name."""
    refs = {}
    for s in derivation.steps:
        ref = f"\\eqref{{{label(prefix, s.label)[7:-1]}}}"
        if re.fullmatch(r"\([\w.']+\)", s.label):
            refs[s.label] = ref
        else:  # "Theorem 1.1 (12)": the text may write (12)
            m = re.search(r"(\(\d+'?\))$", s.label)
            if m:
                refs.setdefault(m.group(1), ref)
    return refs


def tag(label: str) -> str:
    """``\\tag{3}`` for the source's number ``(3)``; ``\\tag*{...}`` for a label that is not a number."""
    m = re.fullmatch(r"\((.+)\)", label.strip())
    return f"\\tag{{{escape(m.group(1))}}}" if m else f"\\tag*{{{escape(label)}}}"


def label(prefix: str, step_label: str) -> str:
    """``\\label{prefix:3p}`` of a step: its source label with ``'`` as ``p`` and other punctuation dropped."""
    core = step_label.strip().replace("'", "p").replace("=", "eq")
    core = re.sub(r"[^A-Za-z0-9.-]+", "-", core).strip("-") or "step"
    return f"\\label{{{prefix}:{core}}}"


def _rows_tex(rws) -> list[str]:
    out = []
    for left, op, right in rws:
        if left or op:
            out.append(f"{left} &{op} {right}" if op else f"{left} & {right}")
        else:
            out.append(f"&\\quad {right}")
    return out


def _step_rows(step, notation, width):
    from .forms import shown

    if getattr(step, "paper", None) is not None:  # written as the literature writes it: no rewriting
        return rows(shown(step), width, None)
    return rows(shown(step), width, tuple(notation))


def display(step, notation=(), *, prefix: str = "", source_tags: bool = False, width: int = WIDTH) -> str:
    """A step as one ``equation`` (a ``split`` over several rows), labelled ``prefix:...``, tagged with the
    source's number when ``source_tags``."""
    rws = _step_rows(step, notation, width)
    lines = _rows_tex(rws)
    marks = (label(prefix, step.label) if prefix else "") + (" " + tag(step.label) if source_tags else "")
    if len(rws) == 1:
        left, op, right = rws[0]
        return "\\begin{equation}" + marks + "\n" + " ".join(x for x in (left, op, right) if x) \
            + "\n\\end{equation}"
    return ("\\begin{equation}" + marks + "\n\\begin{split}\n" + " \\\\\n".join(lines) + "\n\\end{split}\n"
            "\\end{equation}")


def aligned(step, notation=(), width: int = WIDTH + 20) -> str:
    """A step as ``\\begin{aligned} ... \\end{aligned} \\tag{...}`` (MathJax, KaTeX: Markdown, Jupyter)."""
    inner = " \\\\\n".join(_rows_tex(_step_rows(step, notation, width)))
    return "\\begin{aligned}\n" + inner + "\n\\end{aligned} " + tag(step.label)


def display_math(step, notation=()) -> str:
    """``$$ ... $$`` of a step (Jupyter's ``_repr_latex_``, the Markdown page)."""
    return "$$\n" + aligned(step, notation) + "\n$$"


def step_text(step) -> str:
    """The sentence introducing a step's display: its title, the citation (``\\cite[...]{...}``) if any."""
    title = step.title.rstrip(" .:")
    cite = f" {step.citation}" if step.citation and step.citation.startswith("[@") else (
        f" ({step.citation})" if step.citation else "")
    return title + cite + ":"


def notation_text(notation, math: str = "$") -> str:
    """The sentence introducing a derivation's abbreviations (empty without any)."""
    if not notation:
        return ""
    parts = [f"{math}{latex(a)} = {PaperLatexPrinter({'order': 'none'}).doprint(b)}{math}" for a, b in notation]
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"We write {joined}."


def render_recursions(recursions, heading: str | None = "subsection", refs: dict | None = None) -> str:
    """LaTeX algorithm blocks of ``(title, function)`` pairs (:mod:`.algorithms`), under a heading."""
    from .algorithms import algorithm_block

    if not recursions:
        return ""
    parts = [f"\\{heading}{{Algorithms}}" if heading != "paragraph" else "\\paragraph{Algorithms.}"] \
        if heading else []
    for title, fn in recursions:
        parts += [algorithm_block(title, fn, refs), ""]
    return "\n".join(parts)


def _paragraph(tex: str) -> str:
    """A paragraph of prose in ``sloppypar`` (standard LaTeX): inline math that cannot break moves to the next
    line instead of sticking out of the text block of whatever class hosts the fragment. (A step's sentence and
    its display are one paragraph, in a group with ``\\sloppy``.)"""
    return f"\\begin{{sloppypar}}\n{tex}\n\\end{{sloppypar}}"


def _provenance(step) -> str:
    parts = [step.verified_by]
    if getattr(step, "provenance", ""):
        parts.append(step.provenance)
    return "; ".join(parts)


def _comment(value: str) -> str:
    return "% " + value.replace("\n", " ").replace("%", "\\%")


def body(derivation, *, section_level: str = "subsection", label_prefix: str | None = None,
         source_tags: bool = False, algorithms: bool = True, provenance: bool = False) -> str:
    """The derivation's text without a preamble."""
    if section_level not in SECTION_LEVELS:
        raise ValueError(f"section_level must be one of {', '.join(SECTION_LEVELS)}, got {section_level!r}")
    d = derivation
    prefix = label_prefix if label_prefix is not None else d.name
    head, sub = SECTION_LEVELS[section_level]
    lines = [_comment(f"qderive derivation {d.name}")]
    for item in getattr(d, "provenance", ()):
        lines.append(_comment(item))
    if head:
        lines.append(f"\\{head}{{{text(d.title)}}}")
        lines.append(label(prefix, "section"))
    refs = step_refs(d, prefix)
    lines += [_paragraph(f"Source: {text(d.source)}."), ""]
    for note in d.notes:
        lines += [_paragraph(text(note, refs)), ""]
    if d.notation:
        lines += [_paragraph(notation_text(d.notation)), ""]
    for s in d.steps:
        lines += [_comment(f"{s.label}: {_provenance(s)}"),
                  "{\\sloppy " + text(step_text(s), refs),
                  display(s, d.notation, prefix=prefix, source_tags=source_tags) + "\\par}", ""]
    if algorithms and d.recursions:
        lines.append(render_recursions(d.recursions, sub, refs))
    if provenance:
        lines.append(provenance_appendix(d, sub or "paragraph"))
    return "\n".join(lines)


def _breakable(value: str) -> str:
    """Escaped text with permitted breaks after ``/``, ``.``, ``_`` inside long words (paths)."""
    out = []
    for word in re.split(r"(\s+)", value):
        pieces = re.split(r"(?<=[/._])(?=\w)", word) if len(word) > 12 else [word]
        out.append("\\allowbreak{}".join(escape(p) for p in pieces))
    return "".join(out)


def provenance_appendix(derivation, heading: str = "subsection") -> str:
    """The optional appendix (``--provenance``): for every step, how it was verified and where it is
    reconstructed; then the derivation's checks, as ``qderive verify`` runs them."""
    d = derivation
    title = "Provenance of the derivation"
    out = [f"\\paragraph{{{title}.}}" if heading == "paragraph" else f"\\{heading}*{{{title}}}",
           "\\begin{itemize}"]
    for item in getattr(d, "provenance", ()):
        out.append(f"\\item {_breakable(item)}")
    for s in d.steps:
        out.append(f"\\item {escape(s.label)}: {_breakable(_provenance(s))}")
    for c in d.checks:
        out.append(f"\\item check: {latex_text(c.name)}")
    out.append("\\end{itemize}")
    return "\n".join(out)


def document(derivation, fragment: bool = False, *, section_level: str | None = None,
             label_prefix: str | None = None, source_tags: bool | None = None, algorithms: bool | None = None,
             provenance: bool = False) -> str:
    """A standalone LaTeX document (headings, source tags, algorithms and a reference list by default), or
    with ``fragment`` the body alone, needing only amsmath and amssymb (plus algorithm and algpseudocode with
    ``algorithms``), its headings at ``section_level`` (default subsection), labels ``label_prefix:...``
    (default the model's name), the host paper numbering the equations unless ``source_tags``."""
    from . import bibliography

    if fragment:
        algorithms = bool(algorithms)
        content = body(derivation, section_level=section_level or "subsection", label_prefix=label_prefix,
                       source_tags=bool(source_tags), algorithms=algorithms, provenance=provenance)
        needs = FRAGMENT_PACKAGES + (ALGORITHM_PACKAGES if algorithms and derivation.recursions else ())
        keys = cited_keys(derivation)
        first = f"% \\input this file; the preamble needs \\usepackage{{{','.join(needs)}}}"
        cite = f"% it cites {', '.join(keys)}: write their entries with --bib FILE" if keys else ""
        return "\n".join(x for x in (first, cite, content) if x) + "\n"
    content = body(derivation, section_level=section_level or "section", label_prefix=label_prefix,
                   source_tags=True if source_tags is None else source_tags,
                   algorithms=True if algorithms is None else algorithms, provenance=provenance)
    return "\n".join([*PREAMBLE, "\\begin{document}", content,
                      bibliography.thebibliography(cited_keys(derivation)), "\\end{document}", ""])


def cited_keys(derivation) -> list[str]:
    """The bibliography keys the derivation's prose cites, in order."""
    from .prose import citations

    d = derivation
    import inspect

    prose = [d.source, *d.notes, *(s.title for s in d.steps), *(s.citation for s in d.steps),
             *(t for t, _ in d.recursions), *(inspect.getdoc(fn) or "" for _, fn in d.recursions)]
    keys: list[str] = []
    for p in prose:
        for k in citations(p or ""):
            if k not in keys:
                keys.append(k)
    return keys
