"""Derivations a researcher pastes into a paper without editing (issues 15 and 27).

The text model (prose with ``$math$`` and ``[@key]`` citations, rendered for LaTeX, Markdown and the terminal; no
ASCII math, file path, issue number or command-line flag in any derivation's text), the literature's term order
and notation, paper forms proved equal to the derived results, displays of at most 12 rows, algorithms as
pseudo-code, and a fragment that compiles silently inside a default ``article`` and inside ``amsart`` for every
model (mandatory in CI with ``QDERIVE_REQUIRE_TEX=1``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy as sp
from conftest import cli
from test_wait_moment_structure import structured_displays_fit
from qderive.derivations.capabilities import has as _has
from qderive.derivations.capabilities import load as _load
from qderive.derivations.export import latex as L
from qderive.derivations.export import prose
from qderive.derivations.export.algorithms import pseudocode
from qderive.derivations.export.bibliography import ENTRIES, bibtex, short
from qderive.derivations.export.forms import PaperFormError, prove
from qderive.derivations.export.printing import (
    latex,
    present,
    rows,
    tex_width,
    unicode_name,
)
from qderive.derivations.framework import Step, exact_identity
from qderive.symbolic.models import registered_models

NEEDS_TEX = pytest.mark.skipif(shutil.which("pdflatex") is None and os.environ.get("QDERIVE_REQUIRE_TEX") != "1",
                               reason="pdflatex is not installed (.ci/run installs it and sets QDERIVE_REQUIRE_TEX=1)")
MODELS = sorted(n for n in registered_models() if _has(n, "derivation"))


def _derivation(name):
    return _load(name, "derivation")()


def _sides(relation):
    if isinstance(relation, sp.And):
        return [s for arg in relation.args for s in _sides(arg)]
    if isinstance(relation, sp.core.relational.Relational):
        return [relation.lhs, relation.rhs]
    return [relation]


def _prose(d):
    """Every piece of text of a derivation, with where it is."""
    import inspect

    yield "title", d.title
    yield "source", d.source
    for note in d.notes:
        yield "note", note
    for s in d.steps:
        yield s.label, s.title
        yield s.label + " citation", s.citation
    for c in d.all_checks():
        yield "check", c.name
    for title, fn in d.recursions:
        yield "algorithm", title
        yield "algorithm " + fn.__name__, inspect.getdoc(fn) or ""


# -- the text model ------------------------------------------------------------------------------------------------


def test_prose_renders_in_every_medium():
    text = r"Below $\bar\rho < 1$ the law of $M^{[X]}/G/1/r$ holds [@sopin2013, eq. (3)] and 50% of q_{j}."
    tex = prose.latex_text(text)
    assert r"$\bar\rho < 1$" in tex and r"$M^{[X]}/G/1/r$" in tex and r"\cite[eq.~(3)]{sopin2013}" in tex
    assert r"50\%" in tex and r"q\_\{j\}" in tex  # text outside math is escaped
    md = prose.markdown_text(text)
    assert r"$\bar\rho < 1$" in md and "(Sopin 2013, eq. (3))" in md
    uni = prose.unicode_text(text)
    assert "ρ̄ < 1" in uni and "M^([X])/G/1/r" in uni  # a bracket has no superscript form: ^(...) instead
    assert "$" not in uni and "\\" not in uni and "(Sopin 2013, eq. (3))" in uni
    assert prose.math_unicode(r"\tilde q_{j+1} \le \frac{a}{b_1}") == "q̃ⱼ₊₁ ≤ a/b₁"
    assert prose.citations("[@gth1985] and [@sopin2013, Theorem 1] and [@gth1985]") == ["gth1985", "sopin2013"]


def test_ascii_math_is_found():
    """The issue's examples of ASCII math, internals and flags are each flagged; typeset prose is not."""
    for bad in ("service LST beta(s) with moments b1, b2", "c0 = varphi(lambda)", "(1 - rho_bar)/l1",
                "q~_0 = 1 and Ubar_m = sum_{n>=m} u_n", "docs/theory/chapter2.md section 1", "numeric/kernels/birth.py",
                "issue 17", "seed 004", "with --policy instant", "M[X]/G/1", "M|M|1", "a <= b"):
        assert prose.ascii_math(bad), bad
    for good in (r"The law of $M^{[X]}/G/1$ for $\bar\rho < 1$ [@sopin2013, eq. (6)]",
                 "The mean number of busy windows, by Little's law", "the log-gamma function, in double precision"):
        assert prose.ascii_math(good) == [], good


@pytest.mark.parametrize("name", MODELS)
def test_no_ascii_math_internals_or_flags_in_the_text(name):
    d = _derivation(name)
    bad = {where: prose.ascii_math(text or "") for where, text in _prose(d)}
    assert not {k: v for k, v in bad.items() if v}, name
    prose_text = " ".join(text or "" for _, text in _prose(d))
    from qderive.derivations.export.bibliography import check_keys

    check_keys(prose.citations(prose_text))  # every citation is in the bibliography


@pytest.mark.parametrize("name", MODELS)
def test_the_text_refers_only_to_displays_it_has(name):
    """A bare "(R)" or "(12)" in the text is a step of this derivation (printed as \\eqref, so the host paper's
    numbers apply); the source's other equations are cited ([@sopin2013, eq. (2)])."""
    d = _derivation(name)
    refs = L.step_refs(d, d.name)
    for where, text in _prose(d):
        for kind, value in prose.split(text or ""):
            if kind == "text":
                for m in re.finditer(r"\((?:\d{1,2}[a-z]?'?|[A-Z](?:\.?\d+)*'?)\)", value):  # not (503)
                    assert m.group(0) in refs, (where, m.group(0))


def test_bibtex_of_the_cited_sources(tmp_path):
    """``--bib FILE`` writes exactly the entries the derivation cites; they parse as BibTeX entries."""
    bib = tmp_path / "refs.bib"
    frag = tmp_path / "v.tex"
    assert cli(["derive", "vacation-infinite", "--latex", str(frag), "--fragment", "--bib", str(bib)])[0] == 0
    text = bib.read_text()
    keys = re.findall(r"^@\w+\{([\w:-]+),", text, re.M)
    assert keys[0] == "sopin2013" and {"fuhrmann_cooper1985", "takagi1991"} <= set(keys)
    cited = set(re.findall(r"\\cite(?:\[[^\]]*\])?\{([^}]+)\}", frag.read_text()))
    assert cited == set(keys)
    assert short("gth1985") == "Grassmann et al. 1985" and short("wang_liao_scp") == "Wang and Liao"
    assert bibtex(["sopin2013"]).count("@phdthesis{sopin2013,") == 1 and len(ENTRIES) >= 10
    code, _, err = cli(["derive", "erlang-b", "--bib", str(tmp_path / "no" / "x.bib")])
    assert code != 0 and "--bib" in err and "Traceback" not in err


# -- term order and notation ---------------------------------------------------------------------------------------


def test_terms_in_the_literatures_order():
    """The issue's examples: 1 - B(n), (1 - B(c)) lambda_c, (1 - l(c)) lambda(c, 0), lambda_0 (1 - P_J - P_T)."""
    expected = {
        ("erlang-b", "(R')"): r"1 - B(n) = ",
        ("two-flow-hysteretic", "(H.7)"): r"\theta(c) = \lambda(c, 0) \left(1 - \ell(c)\right)",
        ("two-flow", "(C.4)"): r"\lambda_{c} \left(1 - B(c)\right) = \theta(c)",
        ("sip-retransmission", "(G)"): r"\gamma = \lambda_{0} \left(1 - P_{J} - P_{T}\right)",
    }
    for (name, label), shown in expected.items():
        assert shown in _derivation(name).step(label).latex(), (name, label)
    n, rho_bar = sp.Symbol("n", integer=True), sp.Symbol(r"\bar{\rho}")
    assert latex(present(1 - sp.Function("B")(n))) == "1 - B(n)"
    assert latex(present(-sp.Symbol("lambda_0") * (sp.Symbol("P_J") + sp.Symbol("P_T") - 1))) == \
        r"\lambda_{0} \left(1 - P_{J} - P_{T}\right)"
    assert latex(present(rho_bar - 1)) == r"\bar{\rho} - 1"  # no constant first without a subtraction from it


def test_math_conventions():
    """Word subscripts upright, the expectation upright, indices attached to the base, functions upright."""
    i, j = sp.symbols("i j", integer=True)
    assert latex(sp.Symbol("W_{single}")) == r"W_{\text{single}}"
    assert latex(sp.Symbol(r"E\tau_0^{thesis}")) == r"\mathrm{E}\tau_0^{\text{thesis}}"
    assert latex(sp.Symbol("E[W^{2}]")) == r"\mathrm{E}[W^{2}]"
    assert latex(sp.IndexedBase("q^{r}")[j]) == "q^{r}_{j}"
    assert latex(sp.IndexedBase("a^{(1)}")[0]) == "a^{(1)}_{0}"
    assert latex(sp.IndexedBase("q_{L}")[1]) == "q_{L,1}"
    assert latex(sp.IndexedBase("w_s")[i]) == "w_{s,i}"
    assert latex(sp.Function("Var")(j)) == r"\operatorname{Var}(j)"
    assert latex(sp.Function("B")(j - 1)) == "B(j - 1)"
    d = _derivation("hysteretic")
    tex = L.body(d)
    assert r"{q^{r}}_" not in tex and r"}{}_" not in tex and "E\\tau" not in tex.replace(r"\mathrm{E}\tau", "")


def test_vacation_results_read_as_the_thesis_writes_them():
    """rho-bar and alpha-bar introduced once and used: (3') and (5') as in the thesis; (6) as the thesis writes it
    (no f_1 l_1 to cancel); (S3') with its denominator in the thesis's terms; no leading minus in a parenthesis."""
    d = _derivation("vacation-infinite")
    tex = L.body(d)
    assert tex.count(r"\bar{\rho} = \lambda l_{1} b_{1}") == 1 and r"\bar{\alpha} = \lambda l_{1} f_{1}" in tex
    assert d.step("(5')").latex() == r"P_{e} = 1 - \bar{\rho}"
    assert d.step("(3')").latex() == r"q_{0} = \frac{1 - \bar{\rho}}{1 + \bar{\alpha} - \bar{\rho}}"
    six = d.step("(6)").latex()
    assert r"\frac{f_{2}}{2 f_{1}}" in six and r"\frac{\lambda l_{1} b_{2}}{2 \left(1 - \bar{\rho}\right)}" in six
    assert r"\frac{b_{1} \left(l_{2} - l_{1}\right)}{2 l_{1} \left(1 - \bar{\rho}\right)}" in six
    assert "f_{1} l_{1}" not in six and "l_{1} f_{1}" not in six
    assert d.step("(S3')").latex().endswith(
        r"\frac{1 - \bar{\rho}}{1 + \bar{\alpha} - \bar{\rho} + c_{0} \left(\bar{\rho} + l_{1} - 1\right)}")
    for bad in (r"b_{1} l_{1} \lambda", r"b_{2} l_{1} \lambda", r"- \bar{\rho} + 1", r"\left(- "):
        assert bad not in tex, bad


NOTATION_MODELS = ["mm1-hysteretic", "vacation-finite", "vacation-infinite"]


def _same(printed, original) -> bool:
    """``printed`` (notation substituted back) equals ``original``: the same tree, or the difference cancels
    (Piecewise: branch by branch, the conditions compared the same way)."""
    if printed == original:
        return True
    if isinstance(printed, sp.Piecewise) and isinstance(original, sp.Piecewise):
        return len(printed.args) == len(original.args) and all(
            _same(v1, v2) and (c1 == c2 or (isinstance(c1, sp.Eq) and isinstance(c2, sp.Eq)
                                            and _same(c1.lhs - c1.rhs, c2.lhs - c2.rhs)))
            for (v1, c1), (v2, c2) in zip(printed.args, original.args))
    return exact_identity(printed, original)


@pytest.mark.parametrize("name", NOTATION_MODELS)
def test_printed_form_is_the_derived_expression(name):
    """Parse-free: the expression that is printed, with each abbreviation replaced by its definition by hand,
    minus the derived expression simplifies to 0, for every side of every step (a stated paper form is proved
    by the export itself: test_stated_paper_forms_equal_the_derived_results)."""
    d = _derivation(name)
    assert d.notation, name
    back = {sym: definition.func(*definition.args) for sym, definition in d.notation}
    used = set()
    for step in d.steps:
        for side in _sides(step.relation):
            shown = present(side, d.notation)
            used |= shown.free_symbols & set(back)
            assert _same(shown.subs(back), side.subs(back)), (step.label, shown)
    assert used == set(back), f"{name}: abbreviations declared but never used: {set(back) - used}"


# -- paper forms ---------------------------------------------------------------------------------------------------


def test_a_paper_form_is_printed_only_when_proved_equal():
    """prove() accepts an equal form (by cancellation, or at random exact points with integer exponents) and
    refuses a different one; a step with a wrong paper form cannot be exported."""
    x, k = sp.Symbol("x", positive=True), sp.Symbol("k", integer=True, positive=True)
    W = sp.Symbol("W")
    assert prove(sp.Eq(W, (1 - x**k) / (1 - x)), sp.Eq(W, sp.Sum(x**sp.Symbol("m"), (sp.Symbol("m"), 0, k - 1)).doit()))
    with pytest.raises(PaperFormError):
        prove(sp.Eq(W, (1 - x**(k + 1)) / (1 - x)), sp.Eq(W, (1 - x**k) / (1 - x)))
    bad = Step("(X)", "A wrong form", sp.Eq(W, 1 - x), computed=True, paper=sp.Eq(W, 1 + x))
    with pytest.raises(PaperFormError):
        L.display(bad)


@pytest.mark.parametrize("name", ["mm1-hysteretic", "redundant-cluster", "vacation-infinite"])
def test_stated_paper_forms_equal_the_derived_results(name):
    """Every paper form of these models is proved equal to its derived relation (the export's own proof), and
    the printed (B1') reads (1 - rho_0^{j-H})/(rho_0 - 1), not (1 - rho_0^{j-H})/(rho_0 (1 - 1/rho_0))."""
    d = _derivation(name)
    papers = [s for s in d.steps if s.paper is not None]
    assert papers
    for s in papers:
        assert prove(s.paper, s.relation, tuple(s.notation or d.notation))  # a step may name results it uses
    if name == "mm1-hysteretic":
        assert r"\dfrac{1 - \rho_{0}^{j - H}}{\rho_{0} - 1}" in d.step("(B1')").latex()
        assert r"1 - \frac{1}{\rho_{0}}" not in L.body(d)


@pytest.mark.parametrize("name", MODELS)
def test_no_display_longer_than_twelve_rows(name):
    d = _derivation(name)
    for s in d.steps:
        block = L.display(s, d.notation, prefix=d.name)
        assert block.count("\\\\") + 1 <= L.MAX_ROWS, (name, s.label)


# -- algorithms ----------------------------------------------------------------------------------------------------


def test_algorithms_read_as_pseudocode():
    """for k = a to b / down to, q_{j+1} <- ..., zero fill with its length (the lost * of [0]*m), no Python."""
    from qderive.derivations import hysteretic, mm1_hysteretic, vacation_infinite

    solve = pseudocode(hysteretic.normal_sojourn_solve)
    assert r"\For{$k = m - 1$ \textbf{down to} $0$}" in solve and r"$d_{i} \gets 0$, $i = 0, \dots, m - 1$" in solve
    cut = pseudocode(vacation_infinite.cut_recursion)
    assert r"\For{$j = 0$ \textbf{to} $n - 1$}" in cut and r"\tilde{q}_{j + 1} \gets \frac{s}{a_{0}}" in cut
    assert r"\Function{Cut-Recursion}{$a, \bar{a}, \bar{c}, n$}" in cut
    assert r"\beta_{k} l^{(k)}_{n}" in pseudocode(vacation_infinite.arrival_counts)  # the k-fold convolution
    assert r"\pi_{k} \gets \sum_{i = 0}^{k - 1} \pi_{i} P_{i, k}$" in pseudocode(hysteretic.gth_elimination)
    levels = pseudocode(mm1_hysteretic.level_law)
    assert r"\For{$j = L - 2$ \textbf{down to} $0$}" in levels and r"\rho_0" in levels
    for name in MODELS:
        for title, fn in _derivation(name).recursions:
            tex = pseudocode(fn)
            for idiom in ("range", "append", "reversed", r"\mathrm{sum}", "textrm", "right] ", "_\\"):
                assert idiom not in tex, (name, fn.__name__, idiom)

    def appends(n):
        """Not a mathematical reading."""
        q = [1]
        for k in range(n):
            q.append(k)
        return q

    from latexify.exceptions import LatexifyNotSupportedError

    with pytest.raises(LatexifyNotSupportedError, match="append"):
        pseudocode(appends)


def test_reference_recursions_still_compute():
    """The rewritten reference functions (indices instead of append) compute what they did."""
    from fractions import Fraction as F

    from qderive.derivations import hysteretic, vacation_infinite

    q = vacation_infinite.cut_recursion([F(1, 2)], [0, F(1, 4), F(1, 8)], [F(1, 3), F(1, 6)], 2)
    # q_1 = cbar_0 / a_0; q_2 = (cbar_1 + q_1 abar_1) / a_0, by hand
    assert q == [1, F(2, 3), (F(1, 6) + F(2, 3) * F(1, 4)) / F(1, 2)]
    P = [[F(1, 2), F(1, 2)], [F(1, 3), F(2, 3)]]
    pi = hysteretic.gth_elimination([row[:] for row in P], 2)
    assert pi[1] / pi[0] == F(3, 2)  # the two-state chain: pi_1 / pi_0 = p_01 / p_10


# -- the fragment --------------------------------------------------------------------------------------------------


def test_fragment_layout_options(tmp_path):
    """Only amsmath and amssymb (named in the first line), a label P:... on every display, host numbering
    (no \\tag) unless --source-tags, the heading level chosen, algorithms only with --algorithms."""
    frag = tmp_path / "e.tex"
    assert cli(["derive", "erlang-b", "--latex", str(frag), "--fragment"])[0] == 0
    text = frag.read_text()
    first = text.splitlines()[0]
    assert first.startswith("%") and "{amsmath,amssymb}" in first and "algorithm" not in first
    assert "\\begin{algorithm}" not in text and "\\tag" not in text and "\\section" not in text
    assert text.count("\\begin{equation}") == text.count("\\label{erlang-b:") - 1  # + the subsection's label
    assert "\\subsection{" in text and "\\label{erlang-b:R}" in text and "\\label{erlang-b:Rp}" in text
    # the text refers to the displays as the paper numbers them, never by the source's bare "(R)"
    uncommented = "\n".join(line for line in text.splitlines() if not line.startswith("%"))
    assert "the recursion \\eqref{erlang-b:R}" in text and "(R)" not in uncommented
    assert cli(["derive", "erlang-b", "--latex", str(frag), "--fragment", "--algorithms", "--source-tags",
                "--section-level", "none", "--label-prefix", "eb"])[0] == 0
    text = frag.read_text()
    assert "algorithm,algpseudocode" in text.splitlines()[0] and "\\begin{algorithm}[H]" in text
    assert "\\tag{R}" in text and "\\label{eb:R}" in text and "section{" not in text.split("\\begin{algorithm}")[0]
    code, _, err = cli(["derive", "erlang-b", "--latex", str(frag), "--fragment", "--label-prefix", "a}b"])
    assert code != 0 and "--label-prefix" in err and "Traceback" not in err
    # the body carries no provenance; the comments and --provenance do
    assert cli(["derive", "hysteretic", "--latex", str(frag), "--fragment", "--provenance"])[0] == 0
    body = "\n".join(line for line in frag.read_text().splitlines() if not line.startswith("%"))
    main, appendix = body.split("Provenance of the derivation")
    for internal in ("docs/", ".py", "evaluated by verify", "computed by SymPy", "seed 0", "issue 1"):
        assert internal not in main, internal
    assert not re.search(r"(?<![\w)-])--[a-z]", main)  # no command-line flag
    assert "docs/\\allowbreak{}theory" in appendix and "computed by SymPy" in appendix or "evaluated" in appendix


def _host(cls: str, names) -> str:
    lines = [f"\\documentclass{{{cls}}}", "\\usepackage{amsmath,amssymb}", "\\usepackage{algorithm,algpseudocode}",
             "\\begin{document}", "\\section{Introduction}", "The paper's own equation",
             "\\begin{equation}\\label{eq:own} x = 1 \\end{equation}"]
    for n in names:
        lines += [f"\\section{{The model {n}}}", f"\\input{{{n}}}",
                  f"By \\eqref{{eq:own}} and \\eqref{{{n}:section}}, and our own", "\\begin{equation} y = 2 \\end{equation}"]
    lines += ["\\bibliographystyle{plain}", "\\bibliography{refs}", "\\end{document}", ""]
    return "\n".join(lines)


def _problems(log: str) -> list[str]:
    """The log's warnings, overfull boxes and errors, each with the fragment being read."""
    out, current = [], "host"
    for line in log.splitlines():
        for m in re.finditer(r"\(\./([\w-]+)\.tex", line):
            current = m.group(1)
        if re.search(r"Warning|^Overfull|^!", line):
            out.append(f"{current}: {line}")
    return out


def _compile_silently(tmp_path, names):
    """The fragments ``names`` (with refs.bib) in a default article and in amsart: pdflatex, bibtex, pdflatex twice;
    each run ends without error and the log has no warning and no overfull box."""
    for cls in ("article", "amsart"):
        (tmp_path / f"{cls}.tex").write_text(_host(cls, names))
        for cmd in (["pdflatex", "-interaction=nonstopmode", f"{cls}.tex"], ["bibtex", cls],
                    ["pdflatex", "-interaction=nonstopmode", f"{cls}.tex"],
                    ["pdflatex", "-interaction=nonstopmode", f"{cls}.tex"]):
            proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:]
        problems = _problems((tmp_path / f"{cls}.log").read_text(errors="replace"))
        assert not problems, (cls, problems[:20])


@NEEDS_TEX
@pytest.mark.slow
def test_every_fragment_compiles_silently_in_article_and_amsart(tmp_path):
    """Every model's fragment (with its algorithms), \\input into a default article and into amsart between the
    host's own sections and equations, with the BibTeX file of --bib: pdflatex, bibtex, pdflatex twice; the log
    has no warning (no undefined reference or citation, no multiply defined label) and no overfull box. One host
    document per class holds every model (each with its own label prefix), so that the whole test is 8 TeX runs."""
    assert shutil.which("pdflatex") and shutil.which("bibtex"), "pdflatex and bibtex are required here"
    bibs = []
    for n in MODELS:
        assert cli(["derive", n, "--latex", str(tmp_path / f"{n}.tex"), "--fragment", "--algorithms",
                    "--bib", str(tmp_path / f"{n}.bib")])[0] == 0
        bibs.append((tmp_path / f"{n}.bib").read_text())
    entries = {m.group(1): m.group(0) for b in bibs for m in re.finditer(r"@\w+\{([\w:-]+),.*?\n\}\n", b, re.S)}
    (tmp_path / "refs.bib").write_text("\n".join(entries.values()))
    _compile_silently(tmp_path, MODELS)


@NEEDS_TEX
@pytest.mark.slow
def test_higher_wait_moment_fragments_compile_silently_in_article_and_amsart(tmp_path):
    """vacation-infinite with --wait-moments 3 and 4 (E W^k in structure: (MS), (MJ), (MB), (N8), (N9), (W3),
    (W4)), each fragment with its own label prefix, \\input into a default article and into amsart between the
    host's sections and equations: no warning and no overfull box."""
    assert shutil.which("pdflatex") and shutil.which("bibtex"), "pdflatex and bibtex are required here"
    names = []
    for k in (3, 4):
        name = f"vi-w{k}"
        assert cli(["derive", "vacation-infinite", "--wait-moments", str(k), "--latex", str(tmp_path / f"{name}.tex"),
                    "--fragment", "--label-prefix", name, "--bib", str(tmp_path / "refs.bib")])[0] == 0
        body = (tmp_path / f"{name}.tex").read_text()
        assert f"\\label{{{name}:MB}}" in body and f"\\label{{{name}:W{k}}}" in body
        names.append(name)
    # the displays of E W^4 within the row limit (test_wait_moment_structure.py), once the export above has proved them
    structured_displays_fit(4)
    _compile_silently(tmp_path, names)


@NEEDS_TEX
def test_escaped_text_and_fragment_compile_and_read_back(tmp_path):
    """A fragment \\input into a paper compiles with no overfull box; the escaped specials come out of the PDF
    as the characters themselves (T1 fontenc: no em dash for |, no inverted punctuation for < and >)."""
    assert shutil.which("pdflatex"), "pdflatex is required here (QDERIVE_REQUIRE_TEX=1)"
    frag = tmp_path / "erlang.tex"
    assert cli(["derive", "erlang-b", "--latex", str(frag), "--fragment", "--source-tags"])[0] == 0
    body = "\n".join(line for line in frag.read_text().splitlines() if not line.startswith("%"))
    assert "\\documentclass" not in body and "\\begin{document}" not in body and "\\usepackage" not in body
    assert "\\begin{equation}" in body and "\\tag{R}" in body
    specials = "a|b <c> d_e & 50% #1 x~y x^y"
    paper = tmp_path / "paper.tex"
    paper.write_text("\n".join([*L.PREAMBLE, "\\begin{document}", f"MARK {prose.escape(specials)} END", "",
                                "\\input{erlang}", "\\end{document}", ""]))
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    log = (tmp_path / "paper.log").read_text(errors="replace")
    assert "Overfull" not in log
    reader = shutil.which("mutool")
    if reader is None:
        assert os.environ.get("QDERIVE_REQUIRE_TEX") != "1", "mutool is required here (.ci/run installs mupdf-tools)"
        pytest.skip("mutool is not installed: the PDF's text cannot be read back")
    text = subprocess.run([reader, "draw", "-q", "-F", "txt", "-o", "-", "paper.pdf", "1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60).stdout
    line = re.search(r"MARK (.*?) END", text.replace("\n", " "))
    assert line and line.group(1) == specials, text[:400]


def test_a_long_machine_expansion_is_broken_into_rows_that_fit():
    """The development loop's sibling of the next test (which derives the third moment, 10 s cold): the second
    moment of the wait of vacation-infinite as derived (its machine expansion, the paper form taken off) is broken
    at the top-level + of its terms and inside their numerators; every row fits the width of a default article's
    text block; the display is one numbered equation (a split) with its label. Same path (rows, display) on an
    expression of the default derivation, which other tests derive anyway."""
    import dataclasses

    d = _derivation("vacation-infinite")
    step = dataclasses.replace(d.step("(W2)"), paper=None)
    rws = rows(step.relation, L.WIDTH, d.notation)
    assert tex_width(latex(present(step.relation.rhs, d.notation))) > L.WIDTH and len(rws) >= 3
    assert all(tex_width(right) + (tex_width(left) + 3 if left else 2) <= L.WIDTH + 2 for left, _, right in rws)
    assert sum(1 for left, _, _ in rws if left) == 1  # one relation, continued on the next rows
    block = L.display(step, d.notation, prefix="vi")
    assert block.startswith("\\begin{equation}\\label{vi:W2}\n\\begin{split}") and "\\tag" not in block
    assert block.count(" \\\\\n") == len(rws) - 1


@pytest.mark.slow  # 10-12 s: derives the third moments; the loop runs the sibling above on (W2)
def test_long_results_are_broken_into_rows_that_fit(monkeypatch):
    """The third moment of the wait of vacation-infinite as derived (a machine expansion; the export prints its
    structured paper form, test_wait_moment_structure.py) is broken at the top-level + of its numerator; every row
    fits the width of a default article's text block; the display is one numbered equation (a split) with its
    label.

    The rows and the width check both need the presented right-hand side (its partial fractions take most of the
    test's time): it is computed once, by the export's own :func:`present`, and the rows read that value."""
    import dataclasses

    from qderive.derivations.export import printing
    from qderive.derivations.vacation_infinite import derivation

    presented = {}

    def present_once(expr, notation=()):
        if (expr, notation) not in presented:
            presented[expr, notation] = present(expr, notation)
        return presented[expr, notation]

    monkeypatch.setattr(printing, "present", present_once)  # what rows() calls, looked up at each call
    d = derivation(wait_moments=3)
    step = dataclasses.replace(d.step("(W3)"), paper=None)
    rws = rows(step.relation, L.WIDTH, d.notation)
    assert tex_width(latex(present_once(step.relation.rhs, d.notation))) > L.WIDTH and len(rws) >= 2
    assert all(tex_width(right) + (tex_width(left) + 3 if left else 2) <= L.WIDTH + 2 for left, _, right in rws)
    block = L.display(step, d.notation, prefix="vi")
    assert block.startswith("\\begin{equation}\\label{vi:W3}\n\\begin{split}") and "\\tag" not in block
    assert L.tag("(3')") == "\\tag{3'}" and L.tag("Theorem 1.1 (12)") == "\\tag*{Theorem 1.1 (12)}"
    assert L.label("p", "(r=)") != L.label("p", "(r)") and L.label("p", "(3')") == "\\label{p:3p}"


def test_escaping_in_text():
    """|, <, >, _, &, %, #, ~, ^, braces and a lone $ in text mode; $...$ stays math."""
    assert prose.escape("a|b <c> d_e & 50% #1 ~ ^ {x} $") == (
        "a\\textbar{}b \\textless{}c\\textgreater{} d\\_e \\& 50\\% \\#1 \\textasciitilde{} \\textasciicircum{} "
        "\\{x\\} \\$")
    assert L.text("for $\\rho_1 < 1$: j|j+1") == "for $\\rho_1 < 1$: j\\textbar{}j+1"


# -- terminal and Jupyter ------------------------------------------------------------------------------------------


def test_terminal_names_are_readable():
    """``qderive derive NAME`` prints unicode names (q̃ⱼ₊₁, c̄ⱼ, φ, ρ̄, λ₀) and unicode prose, never raw LaTeX,
    a dollar sign or a Greek letter spelt out."""
    assert unicode_name(r"\tilde{q}") == "q\u0303" and unicode_name(r"\bar{c}") == "c\u0304"
    assert unicode_name("varphi") == "φ" and unicode_name("lambda_0") == "λ₀" and unicode_name("b1") == "b₁"
    assert unicode_name("q^{r}") == "qʳ" and unicode_name(r"\mathcal{S}_0") == "𝒮₀"
    assert unicode_name(r"\operatorname{Var}") == "Var" and unicode_name("muprime_1") == "μ′₁"
    code, out, _ = cli(["derive", "vacation-infinite"])
    assert code == 0
    for shown in ("q\u0303ⱼ₊₁", "c\u0304ⱼ", "φ(λ - λ⋅L(z))", "1 - ρ\u0304", "Notation: ρ\u0304 = λ⋅l₁⋅b₁",
                  "Sopin 2013, eq. (6)", "M^([X])/G/1"):
        assert shown in out, shown
    for raw in ("\\tilde", "\\bar", "varphi", "lambda", "[j + 1]", "\\", "$", "[@"):
        assert raw not in out, raw


def test_a_step_renders_in_jupyter_as_in_the_export():
    """A single step's Jupyter display uses the derivation's notation (rho-bar) and its paper form, like the
    export; its Markdown carries the sentence with the citation."""
    d = _derivation("vacation-infinite")
    step = d.step("(3')")
    assert r"\bar{\rho}" in step._repr_latex_() and step._repr_latex_().startswith("$$")
    md = step._repr_markdown_()
    assert md.startswith("The probability that the embedded queue is empty (Sopin 2013, eq. (3)):")
    assert r"\frac{1 - \bar{\rho}}{1 + \bar{\alpha} - \bar{\rho}}" in md
    assert r"\frac{f_{2}}{2 f_{1}}" in d.step("(6)")._repr_latex_()  # the paper form, as exported
    page = d.markdown()
    assert "## References" in page and "docs/" not in page.split("## Checks")[0]


def test_progress_bars_use_tqdm_auto():
    """Every progress bar is tqdm.auto (a widget in Jupyter, a bar in a terminal)."""
    root = Path(__file__).resolve().parent.parent
    for path in root.rglob("*.py"):
        if any(part in {"tests", "build", ".git"} or part.startswith(".") for part in path.relative_to(root).parts):
            continue
        for line in path.read_text(errors="replace").splitlines():
            if re.match(r"\s*(from|import)\s+tqdm\b", line):
                assert line.strip().startswith("from tqdm.auto import"), f"{path}: {line.strip()}"
