"""Derivations: numbered steps tied to the source's equations, each with its checks.

A :class:`Derivation` reads like the proof: an ordered tuple of :class:`Step`
objects, each a SymPy relation with the source's label (``"(3)"``,
``"Theorem 1.1"``), a citation and one sentence; and a tuple of :class:`Check`
objects, each an independent verification (exact identity, or a comparison with
something computed another way: a chain solve, a direct sum, ``mpmath.quad``)
that returns a :class:`CheckResult`. ``verify(digits)`` runs every check;
``latex()`` / ``markdown()`` export the steps.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import mpmath
import sympy as sp

__all__ = ["Step", "Check", "CheckResult", "Derivation", "agreement_digits", "exact_identity"]


@dataclass(frozen=True)
class Step:
    """One relation of a derivation: ``label`` (the source's number), a sentence, a SymPy relation."""

    label: str
    title: str
    relation: sp.Basic
    citation: str = ""

    def latex(self) -> str:
        return sp.latex(self.relation)

    def _repr_latex_(self) -> str:
        return f"$\\text{{{self.label}}}\\quad {self.latex()}$"

    def __str__(self) -> str:
        return f"{self.label} {self.title}\n{sp.pretty(self.relation, use_unicode=True)}"


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: pass/fail, digits agreed (None for exact), what was compared."""

    name: str
    passed: bool
    digits: float | None
    detail: str
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {
            "check": self.name,
            "passed": self.passed,
            "digits_agreed": (None if self.digits is None else
                              "exact" if math.isinf(self.digits) else round(self.digits, 1)),
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Check:
    """A named verification: ``run(digits)`` returns ``(passed, digits_agreed, detail)``.

    ``digits_agreed`` is ``math.inf`` for an exact identity and None where digits do
    not apply (a statistical test).
    """

    name: str
    run: Callable[[int], tuple[bool, float | None, str]]
    label: str = ""

    def __call__(self, digits: int) -> CheckResult:
        start = time.perf_counter()
        try:
            passed, agreed, detail = self.run(digits)
        except Exception as exc:  # a crashing check is a failed check, reported, not raised
            passed, agreed, detail = False, None, f"{type(exc).__name__}: {exc}"
        return CheckResult(self.name, bool(passed), agreed, detail, time.perf_counter() - start)


def agreement_digits(value, reference) -> float:
    """Number of significant decimal digits on which ``value`` agrees with ``reference``.

    ``-log10(|value - reference| / |reference|)``, capped at the working precision
    (+inf when they are identical).
    """
    with mpmath.workprec(8000):  # exact difference of any two inputs we produce
        value, reference = mpmath.mpf(value), mpmath.mpf(reference)
        diff = abs(value - reference)
        if diff == 0:
            return math.inf
        scale = abs(reference) if reference != 0 else mpmath.mpf(1)
        return float(-mpmath.log10(diff / scale))


def exact_identity(lhs: sp.Expr, rhs: sp.Expr) -> bool:
    """True when ``lhs - rhs`` cancels to 0 exactly (cancel, then simplify as a fallback)."""
    diff = sp.cancel(sp.together(lhs - rhs))
    if diff == 0:
        return True
    return sp.simplify(diff) == 0


@dataclass(frozen=True)
class Derivation:
    """An ordered list of steps with their checks, registered under a model name."""

    name: str
    title: str
    source: str
    steps: tuple[Step, ...]
    checks: tuple[Check, ...] = ()
    results: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def step(self, label: str) -> Step:
        for s in self.steps:
            if s.label == label:
                return s
        raise KeyError(f"{self.name} has no step {label!r}")

    def verify(self, digits: int = 50) -> list[CheckResult]:
        """Run every check at ``digits`` working digits."""
        return [check(digits) for check in self.checks]

    def report(self, digits: int = 50) -> bool:
        """Print the steps, run every check and print one line per result; True if all pass.

        This is what ``python -m qderive.derivations.<model>`` does.
        """
        print(self)
        ok = True
        for res in self.verify(digits):
            ok &= res.passed
            if res.digits is None:
                agreed = "-"
            else:
                agreed = "exact" if math.isinf(res.digits) else f"{res.digits:.1f} digits"
            print(f"{'ok  ' if res.passed else 'FAIL'} {res.name}: {res.detail} ({agreed})")
        return ok

    # -- export --------------------------------------------------------------------
    def latex_body(self) -> str:
        lines = [f"\\section*{{{_tex_escape(self.title)}}}", f"Source: {_tex_escape(self.source)}.", ""]
        for note in self.notes:
            lines += [_tex_escape(note), ""]
        for s in self.steps:
            lines += [
                f"\\paragraph{{{_tex_escape(s.label)}}} {_tex_escape(s.title)}"
                + (f" ({_tex_escape(s.citation)})" if s.citation else ""),
                "\\begin{dmath*}",
                s.latex(),
                "\\end{dmath*}",
                "",
            ]
        return "\n".join(lines)

    def latex(self, extra_body: str = "") -> str:
        """A standalone LaTeX document (compiles with pdflatex) holding every step."""
        return "\n".join(
            [
                "\\documentclass[11pt]{article}",
                "\\usepackage[margin=2cm]{geometry}",
                "\\usepackage{amsmath,amssymb}",
                "\\usepackage{breqn}",
                "\\usepackage{algorithm}",
                "\\usepackage{algpseudocode}",
                "\\begin{document}",
                self.latex_body(),
                extra_body,
                "\\end{document}",
                "",
            ]
        )

    def markdown(self) -> str:
        """A Markdown page with ``$$...$$`` math, as rendered by a plain repository browser."""
        lines = [
            f"# {self.title}",
            "",
            f"*Generated by `qderive derive {self.name} --markdown`; do not edit by hand.*",
            "",
            f"Source: {self.source}.",
            "",
        ]
        for note in self.notes:
            lines += [note, ""]
        for s in self.steps:
            cite = f" ({s.citation})" if s.citation else ""
            lines += [f"**{s.label}** {s.title}{cite}", "", "$$", s.latex(), "$$", ""]
        if self.checks:
            lines += ["## Checks run by `qderive verify " + self.name + "`", ""]
            lines += [f"- {c.name}" for c in self.checks]
            lines.append("")
        return "\n".join(lines)

    def _repr_latex_(self) -> str:
        body = " \\\\ ".join(f"\\text{{{s.label}}}\\quad {s.latex()}" for s in self.steps)
        return f"$\\begin{{array}}{{l}}{body}\\end{{array}}$"

    def __str__(self) -> str:
        out = [self.title, "=" * len(self.title), f"Source: {self.source}", ""]
        out += [str(s) + "\n" for s in self.steps]
        return "\n".join(out)


def _tex_escape(text: str) -> str:
    for a, b in (("\\", "\\textbackslash{}"), ("&", "\\&"), ("%", "\\%"), ("#", "\\#"), ("_", "\\_")):
        text = text.replace(a, b)
    return text
