"""LaTeX export: every step of a derivation (``sympy.latex``) and its own recursions (latexify-py).

:func:`document` assembles a standalone ``.tex`` file that compiles with pdflatex
(amsmath, breqn, algorithm, algpseudocode); ``fragment=True`` gives the body alone, to
``\\input`` into a paper. The numeric recursions are the derivation's own
(``Derivation.recursions``): small reference functions in plain Python that latexify-py
renders as algorithms; nothing is appended that the derivation does not declare.
Each step says how it was verified (computed by SymPy, or evaluated by ``qderive verify``).
"""

from __future__ import annotations

__all__ = ["document", "body", "render_recursions", "escape"]

_ESCAPES = (("\\", "\\textbackslash{}"), ("&", "\\&"), ("%", "\\%"), ("#", "\\#"), ("_", "\\_"),
            ("{", "\\{"), ("}", "\\}"), ("$", "\\$"), ("~", "\\textasciitilde{}"), ("^", "\\textasciicircum{}"),
            ("|", "\\textbar{}"), ("<", "\\textless{}"), (">", "\\textgreater{}"))


def escape(text: str) -> str:
    """Text for LaTeX's text mode (``|``, ``<``, ``>``, ``_`` and the specials escaped)."""
    out = []
    for ch in text:
        for a, b in _ESCAPES:
            if ch == a:
                out.append(b)
                break
        else:
            out.append(ch)
    return "".join(out)


def render_recursions(recursions) -> str:
    """LaTeX (algorithmic environments) of ``(title, function)`` pairs, rendered by latexify-py."""
    if not recursions:
        return ""
    import latexify

    parts = ["\\section*{Numeric recursions}"]
    for title, fn in recursions:
        code = latexify.get_latex(fn, style=latexify.Style.ALGORITHMIC)
        parts += [f"\\paragraph{{{escape(title)}}}", code, ""]
    return "\n".join(parts)


def body(derivation) -> str:
    """The steps (and recursions) without a preamble."""
    lines = [f"\\section*{{{escape(derivation.title)}}}", f"Source: {escape(derivation.source)}.", ""]
    for note in derivation.notes:
        lines += [escape(note), ""]
    for s in derivation.steps:
        cite = f" ({escape(s.citation)})" if s.citation else ""
        lines += [f"\\paragraph{{{escape(s.label)}}} {escape(s.title)}{cite} \\emph{{[{escape(s.verified_by)}]}}",
                  "\\begin{dmath*}", s.latex(), "\\end{dmath*}", ""]
    lines.append(render_recursions(derivation.recursions))
    return "\n".join(lines)


def document(derivation, fragment: bool = False) -> str:
    """A standalone LaTeX document holding every step (or the body alone with ``fragment``)."""
    text = body(derivation)
    if fragment:
        return text + "\n"
    return "\n".join([
        "\\documentclass[11pt]{article}",
        "\\usepackage[margin=2cm]{geometry}",
        "\\usepackage[T1]{fontenc}",
        "\\usepackage{amsmath,amssymb}",
        "\\usepackage{breqn}",
        "\\usepackage{algorithm}",
        "\\usepackage{algpseudocode}",
        "\\begin{document}",
        text,
        "\\end{document}",
        "",
    ])
