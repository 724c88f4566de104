r"""The text model of a derivation: prose with inline math and citations, rendered for every medium.

A derivation's prose (its title, source, notes, step titles and citations, the algorithms' captions and
docstrings) is authored in one small markup:

* ``$...$`` -- inline math in LaTeX (``$\bar\rho < 1$``, ``$M^{[X]}/G/1/r$``);
* ``[@key]`` or ``[@key, locator]`` -- a citation of an entry of :mod:`.bibliography`
  (``[@sopin2013, eq. (3)]``);
* everything else is plain text (no ASCII math: :func:`ascii_math` finds it, and a test runs it over every
  derivation's prose).

Renderers: :func:`latex_text` (``\cite[eq.~(3)]{sopin2013}``, the text escaped), :func:`markdown_text`
(math kept for MathJax, citations as "(Sopin 2013, eq. (3))"), :func:`unicode_text` (the terminal and
Jupyter's plain text: the math in unicode, ``\bar\rho < 1`` -> ``ρ̄ < 1``).
"""

from __future__ import annotations

import re

__all__ = ["MATH", "CITATION", "split", "latex_text", "markdown_text", "unicode_text", "math_unicode", "citations",
           "ascii_math", "escape"]

#: an inline math segment ``$...$``
MATH = re.compile(r"\$[^$]+\$")
#: a citation ``[@key]`` or ``[@key, locator]``
CITATION = re.compile(r"\[@([A-Za-z0-9_:-]+)(?:,\s*([^\]]+))?\]")
_TOKEN = re.compile(r"(\$[^$]+\$|\[@[A-Za-z0-9_:-]+(?:,\s*[^\]]+)?\])")

_ESCAPES = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "#": "\\#", "_": "\\_", "{": "\\{", "}": "\\}",
            "$": "\\$", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "|": "\\textbar{}",
            "<": "\\textless{}", ">": "\\textgreater{}"}


def escape(text: str) -> str:
    """Text for LaTeX's text mode (``|``, ``<``, ``>``, ``_``, ``&``, ``%`` and the other specials escaped)."""
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def split(text: str) -> list[tuple[str, str | tuple]]:
    """The prose as ``(kind, value)`` parts: ``("text", s)``, ``("math", tex)``, ``("cite", (key, locator))``."""
    out = []
    for part in _TOKEN.split(text):
        if not part:
            continue
        if part.startswith("$") and part.endswith("$") and len(part) > 1:
            out.append(("math", part[1:-1]))
            continue
        m = CITATION.fullmatch(part)
        if m:
            out.append(("cite", (m.group(1), (m.group(2) or "").strip())))
        else:
            out.append(("text", part))
    return out


def citations(text: str) -> list[str]:
    """The bibliography keys cited in ``text``, in order of first appearance."""
    keys = []
    for key, _ in (v for k, v in split(text) if k == "cite"):
        if key not in keys:
            keys.append(key)
    return keys


def _locator_tex(locator: str) -> str:
    """``eq. (3)`` -> ``eq.~(3)``; ``eqs. (2)--(7)`` stays an en dash; text escaped."""
    out = escape(locator)
    return re.sub(r"\b(eqs?|ch|sec|p|pp|vol|Thm|Cor)\.\s+", r"\1.~", out)


def _plain_tex(value: str) -> str:
    return escape(value).replace("--", "\\textendash{}") if "---" not in value else escape(value)


def latex_text(text: str, refs: dict | None = None) -> str:
    """LaTeX of prose: math kept, ``\\cite[locator]{key}`` for a citation, the rest escaped. ``refs`` maps a
    step's label as the text writes it (``"(R)"``) to its reference (``"\\eqref{erlang-b:R}"``): the paper
    numbers the displays, so the text refers to them by ``\\eqref`` (math and citations are left alone)."""
    pattern = re.compile("(" + "|".join(re.escape(k) for k in sorted(refs, key=len, reverse=True)) + ")") \
        if refs else None
    out = []
    for kind, value in split(text):
        if kind == "math":
            out.append(f"${value}$")
        elif kind == "cite":
            key, loc = value
            out.append(f"\\cite[{_locator_tex(loc)}]{{{key}}}" if loc else f"\\cite{{{key}}}")
        elif pattern is not None:
            out.append("".join(refs[p] if p in refs else _plain_tex(p) for p in pattern.split(value) if p))
        else:
            out.append(_plain_tex(value))
    return "".join(out)


def _cite_text(key: str, locator: str) -> str:
    from .bibliography import short

    locator = locator.replace("--", "–")
    return f"({short(key)}, {locator})" if locator else f"({short(key)})"


def markdown_text(text: str) -> str:
    """Markdown of prose: math kept as ``$...$`` (MathJax), citations as "(Sopin 2013, eq. (3))"."""
    out = []
    for kind, value in split(text):
        if kind == "math":
            out.append(f"${value}$")
        elif kind == "cite":
            out.append(_cite_text(*value))
        else:
            out.append(value.replace("*", "\\*"))
    return "".join(out)


def unicode_text(text: str) -> str:
    """Plain unicode text of prose (terminal): the math in unicode (:func:`math_unicode`)."""
    out = []
    for kind, value in split(text):
        if kind == "math":
            out.append(math_unicode(value))
        elif kind == "cite":
            out.append(_cite_text(*value))
        else:
            out.append(value.replace("--", "–"))
    return "".join(out)


_SYMBOLS = {
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "to": "→", "gets": "←",
    "leftarrow": "←", "rightarrow": "→", "sum": "∑", "prod": "∏", "int": "∫", "infty": "∞", "cdot": "·",
    "times": "×", "dots": "…", "ldots": "…", "cdots": "⋯", "in": "∈", "approx": "≈", "equiv": "≡",
    "mid": "|", "ell": "ℓ", "partial": "∂", "pm": "±", "lvert": "|", "rvert": "|", "quad": "  ", "qquad": "    ",
    "sim": "∼", "propto": "∝", "cup": "∪", "cap": "∩", "emptyset": "∅", "setminus": "∖",
}
_DROP = {"left", "right", "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr", "big", "Big", "displaystyle",
         "mathopen", "mathclose", "limits"}


def math_unicode(tex: str) -> str:
    """Inline LaTeX math as unicode text: Greek letters, accents (``\\bar\\rho`` -> ρ̄), sub- and superscripts
    (``q_{j+1}`` -> qⱼ₊₁), relations (≤, ≥, ←), ``\\frac{a}{b}`` -> a/b, ``\\binom{n}{i}`` -> C(n, i),
    ``\\text{..}``, ``\\mathrm{E}`` -> E."""
    from .printing import ACCENTS, GREEK, SUBSCRIPTS, SUPERSCRIPTS, script, shift, tex_group

    out, i = [], 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
            name = m.group(1)
            i += len(m.group(0))
            if name in GREEK:
                out.append(GREEK[name])
            elif name in _SYMBOLS:
                out.append(_SYMBOLS[name])
            elif name in _DROP:
                if i < len(tex) and tex[i] == ".":
                    i += 1
            elif name in ("frac", "dfrac", "tfrac"):
                a, i = tex_group(tex, i)
                b, i = tex_group(tex, i)
                a, b = math_unicode(a), math_unicode(b)
                wrap = lambda x: x if re.fullmatch(r"[\w\u0300-\u036f′]+", x) else f"({x})"  # noqa: E731
                out.append(f"{wrap(a)}/{wrap(b)}")
            elif name in ("binom", "dbinom", "tbinom"):  # the binomial coefficient as C(n, i)
                a, i = tex_group(tex, i)
                b, i = tex_group(tex, i)
                out.append(f"C({math_unicode(a)}, {math_unicode(b)})")
            elif name in ("text", "textrm", "mathrm", "operatorname", "mathit", "textit", "emph", "mbox"):
                g, i = tex_group(tex, i)
                out.append(math_unicode(g) if name in ("mathrm", "operatorname", "mathit") else g)
            elif name == "mathcal":
                g, i = tex_group(tex, i)
                out.append("".join(script(ch, "SCRIPT") for ch in g))
            elif name in ACCENTS:
                g, i = tex_group(tex, i)
                out.append(math_unicode(g) + ACCENTS[name])
            elif name in (",", ";", ":", " ", "!"):
                out.append(" " if name != "!" else "")
            elif name in ("{", "}", "|", "_", "%", "&", "#", "$"):
                out.append({"|": "‖"}.get(name, name))
            elif name == "prime":
                out.append("′")
            else:
                out.append(name)
            continue
        if c in "_^":
            g, i = tex_group(tex, i + 1)
            inner = math_unicode(g)
            out.append(shift(inner, SUBSCRIPTS if c == "_" else SUPERSCRIPTS, c))
            continue
        if c in "{}":
            i += 1
            continue
        if c == "-":
            out.append("−")
        elif c == "'":
            out.append("′")
        elif c == "~":
            out.append(" ")
        else:
            out.append(c)
        i += 1
    return "".join(out)


# --------------------------------------------------------------------------------------
# ASCII math in prose: the lint
# --------------------------------------------------------------------------------------

_GREEK_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "theta", "lambda", "mu", "nu", "rho", "sigma", "tau",
                "phi", "varphi", "psi", "omega", "pi", "xi", "eta", "zeta", "kappa", "chi", "Lambda", "Gamma",
                "Delta", "Theta", "Sigma", "Phi", "Psi", "Omega")
_ASCII_PATTERNS = (
    re.compile(r"(?<!-)\b(?:" + "|".join(_GREEK_WORDS) + r")(?:_\w+|\d+)?\b(?!-)"),  # a Greek letter spelt out
    re.compile(r"\b[A-Za-z]+_\{?[\w+-]+"),                                      # x_1, q_{j+1}, W_single
    re.compile(r"[\w)\]]\^[\w({]"),                                             # x^2, (..)^k
    re.compile(r"<=|>=|!=|==|->|<-"),                                           # ASCII relations
    re.compile(r"\b[a-z][a-z]?\d\b"),                                           # b1, l2, f1, rho0-like names
    re.compile(r"\b(?:sum|prod)_|\b(?:exp|log|expm1|sqrt)\("),                  # sum_{..}, exp(..)
    re.compile(r"\b[A-Za-z]\(\w[^)]*\)\s*=|\b[A-Za-z]\(\w\)"),                  # Q(z) = , beta(s)
    re.compile(r"\w\s*[*/]\s*\w|\w\s+[+]\s+\w|\w\s+-\s+\w"),                    # a * b, a/b, a + b, a - b
    re.compile(r"M\[X\]|M\^X|\|[A-Z]\||[A-Z]\|[A-Z0-9]"),                        # M[X]/G/1, M|M|1
    re.compile(r"\w/\w+/\d"),                                                  # M/M/1 outside math
    re.compile(r"(?:docs|numeric|symbolic|derivations)/|\.py\b|\bqderive\.|\bissue \d|\bseed 0\d\d", re.I),
    re.compile(r"(?<![\w-])--[a-z]"),                                           # a command-line flag
)


def ascii_math(text: str) -> list[str]:
    """The fragments of ``text`` outside ``$...$`` and citations that look like ASCII math, repository internals
    or command-line flags (empty list: clean prose)."""
    found = []
    for kind, value in split(text):
        if kind != "text":
            continue
        for pattern in _ASCII_PATTERNS:
            found += [m.group(0) for m in pattern.finditer(value)]
    return found
