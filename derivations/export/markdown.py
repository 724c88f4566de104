"""Markdown export: a derivation as a page with ``$...$`` inline math and ``$$...$$`` displays (tagged with
the source's numbers, long results broken over rows: :mod:`.latex`), rendered by MathJax, KaTeX and Jupyter.
The prose is the derivation's text model (:mod:`.prose`): citations as "(Sopin 2013, eq. (3))", a reference
list at the end; how each step was verified is listed under "Checks", never in the text."""

from __future__ import annotations

from .latex import cited_keys, display_math, notation_text, step_text
from .prose import markdown_text

__all__ = ["page", "step_markdown"]


def step_markdown(step) -> str:
    """A step's sentence and display (a page's paragraph; Jupyter's rendering of one step)."""
    return f"{markdown_text(step_text(step))}\n\n{display_math(step, step.notation)}"


def page(derivation) -> str:
    """The Markdown page of a derivation."""
    from .bibliography import ENTRIES, short

    d = derivation
    lines = [f"# {markdown_text(d.title)}", "", f"Source: {markdown_text(d.source)}.", ""]
    for note in d.notes:
        lines += [markdown_text(note), ""]
    if d.notation:
        lines += [notation_text(d.notation), ""]
    for s in d.steps:
        lines += [step_markdown(s), ""]
    keys = cited_keys(d)
    if keys:
        lines += ["## References", ""]
        for key in keys:
            title = dict(ENTRIES[key][1]).get("title", "").replace("{", "").replace("}", "")
            lines.append(f"- {short(key)}: *{title}*.")
        lines.append("")
    checks = d.all_checks()
    if checks:
        lines += [f"## Checks ({len(checks)})", ""]
        lines += [f"- {markdown_text(c.name)}" for c in checks]
        lines.append("")
    return "\n".join(lines)
