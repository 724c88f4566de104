"""LaTeX export: every step of a derivation, in the source's notation, and its own recursions.

:func:`document` assembles a standalone ``.tex`` file that compiles with pdflatex (T1 fontenc,
amsmath, algorithm, algpseudocode) with no overfull box (tested for every model);
``fragment=True`` gives the body alone, to ``\\input`` into a paper (its preamble needs
amsmath, algorithm and algpseudocode). Each step is an ``align*`` display tagged with the
source's number (``\\tag{3}``; a label that is not a number, ``\\tag*{Theorem 1.1 (12)}``),
written by :mod:`.printing`: the derivation's notation (rho-bar, alpha-bar) substituted,
terms in a person's order, long results broken at the top-level ``+`` of a sum (page breaks
allowed between rows). The numeric recursions are the derivation's own
(``Derivation.recursions``): small reference functions in plain Python that latexify-py
renders as algorithms, their docstring typeset above the block (``$...$`` in it is math).
Each step says how it was verified (computed by SymPy, or evaluated by ``qderive verify``).
"""

from __future__ import annotations

import re

from .printing import PaperLatexPrinter, latex, rows

__all__ = ["document", "body", "render_recursions", "escape", "text", "tag", "align", "aligned", "display_math",
           "notation_text", "WIDTH", "PREAMBLE"]

#: the width in characters (of the 2-D text form, :func:`.printing.text_width`) a display row may take on
#: the page of :data:`PREAMBLE` (a 17.6 cm text block at 11 pt); rows are broken to it
WIDTH = 86

PREAMBLE = (
    "\\documentclass[11pt]{article}",
    "\\usepackage[margin=2cm]{geometry}",
    "\\usepackage[T1]{fontenc}",
    "\\usepackage{lmodern}",
    "\\usepackage{amsmath,amssymb}",
    "\\usepackage{algorithm}",
    "\\usepackage{algpseudocode}",
    "\\allowdisplaybreaks",
)

_ESCAPES = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "#": "\\#", "_": "\\_", "{": "\\{", "}": "\\}",
            "$": "\\$", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "|": "\\textbar{}",
            "<": "\\textless{}", ">": "\\textgreater{}"}


def escape(text: str) -> str:
    """Text for LaTeX's text mode (``|``, ``<``, ``>``, ``_``, ``&``, ``%`` and the other specials escaped)."""
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def _breakable(segment: str) -> str:
    """:func:`escape`, with a permitted line break after ``/``, ``.`` and ``_`` inside a long word (a
    module path or a file name would otherwise stick out of the line)."""
    out = []
    for word in re.split(r"(\s+)", segment):
        pieces = re.split(r"(?<=[/._])(?=\w)", word) if len(word) > 12 else [word]
        out.append("\\allowbreak{}".join(escape(p) for p in pieces))
    return "".join(out)


def text(value: str) -> str:
    """Text with inline math: ``$...$`` segments are kept as math, the rest is :func:`escape`\\ d (long
    words may break after ``/``, ``.``, ``_``)."""
    parts = re.split(r"(\$[^$]+\$)", value)
    return "".join(p if p.startswith("$") and p.endswith("$") and len(p) > 1 else _breakable(p) for p in parts)


def tag(label: str) -> str:
    """``\\tag{3}`` for the source's number ``(3)``; ``\\tag*{...}`` for a label that is not a number."""
    m = re.fullmatch(r"\((.+)\)", label.strip())
    return f"\\tag{{{escape(m.group(1))}}}" if m else f"\\tag*{{{escape(label)}}}"


def _tag_width(label: str) -> int:
    return len(label) + 4


def _rows_tex(rws, tagged: str = "") -> list[str]:
    out = []
    for k, (left, op, right) in enumerate(rws):
        if left or op:
            line = f"{left} &{op} {right}" if op else f"{left} & {right}"
        else:
            line = f"&\\quad {right}"
        if k == 0 and tagged:
            line += " " + tagged
        out.append(line)
    return out


def align(step, notation=(), width: int = WIDTH) -> str:
    """A step as an ``align*`` display: its rows, the first one tagged with the step's label."""
    rws = rows(step.relation, width - _tag_width(step.label), notation)
    lines = _rows_tex(rws, tag(step.label))
    return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}"


def aligned(step, notation=(), width: int = WIDTH) -> str:
    """A step as ``\\begin{aligned} ... \\end{aligned} \\tag{...}`` (MathJax, KaTeX: Markdown, Jupyter)."""
    rws = rows(step.relation, width - _tag_width(step.label), notation)
    inner = " \\\\\n".join(_rows_tex(rws))
    return "\\begin{aligned}\n" + inner + "\n\\end{aligned} " + tag(step.label)


def display_math(step, notation=()) -> str:
    """``$$ ... $$`` of a step (Jupyter's ``_repr_latex_``, the Markdown page)."""
    return "$$\n" + aligned(step, notation) + "\n$$"


def notation_text(notation, math: str = "$") -> str:
    """The sentence introducing a derivation's abbreviations (empty without any)."""
    if not notation:
        return ""
    parts = [f"{math}{latex(a)} = {PaperLatexPrinter({'order': 'none'}).doprint(b)}{math}" for a, b in notation]
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Notation: {joined}, written wherever they shorten a result."


_DOCSTRING = re.compile(r'^[ \t]*\\State \$\\textrm\{".*?"\}\$[ \t]*\n?', re.M | re.S)


def render_recursions(recursions) -> str:
    """LaTeX (algorithm environments) of ``(title, function)`` pairs: latexify-py's algorithmic rendering of
    the function without its docstring, which is typeset above the block as text (``$...$`` math)."""
    if not recursions:
        return ""
    import inspect

    import latexify

    parts = ["\\section*{Numeric recursions}"]
    for title, fn in recursions:
        code = _DOCSTRING.sub("", latexify.get_latex(fn, style=latexify.Style.ALGORITHMIC))
        doc = " ".join((inspect.getdoc(fn) or "").split())
        parts += ["\\begin{algorithm}[H]", f"\\caption{{{text(title)}}}"]
        if doc:
            parts.append(f"\\begin{{minipage}}{{\\linewidth}}\\small {text(doc)}\\end{{minipage}}\\smallskip")
        parts += [code, "\\end{algorithm}", ""]
    return "\n".join(parts)


def body(derivation) -> str:
    """The steps (and recursions) without a preamble."""
    d = derivation
    lines = [f"\\section*{{{text(d.title)}}}", f"Source: {text(d.source)}.", ""]
    for note in d.notes:
        lines += [text(note), ""]
    if d.notation:
        lines += [notation_text(d.notation), ""]
    for s in d.steps:
        cite = f" ({text(s.citation)})" if s.citation else ""
        lines += [f"\\paragraph{{{text(s.label)}}} {text(s.title)}{cite} \\emph{{[{escape(s.verified_by)}]}}",
                  align(s, d.notation), ""]
    lines.append(render_recursions(d.recursions))
    return "\n".join(lines)


def document(derivation, fragment: bool = False) -> str:
    """A standalone LaTeX document holding every step (or the body alone with ``fragment``)."""
    content = body(derivation)
    if fragment:
        needs = " ".join(line for line in PREAMBLE[2:])
        return f"% qderive derive {derivation.name} --latex --fragment: \\input this file; its preamble needs\n% {needs}\n" \
            + content + "\n"
    return "\n".join([*PREAMBLE, "\\begin{document}", content, "\\end{document}", ""])
