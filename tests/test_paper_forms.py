"""The results of issue 27 printed in the literature's form, never in SymPy's expansion (cheap: no verify run).

vacation-infinite: N (7), Var (with (NV)), the single-vacation mean wait (S6), E[W] (W1), E[W^2] (W2, with (N7));
vacation-finite-r: Q~(z), P~(z) (A.2), (A.2'), the cases of q~_j, p~_j, S~_r (A.4)-(A.6); redundant-cluster:
the loads (L) and the evaluated late mass (S''). Each is checked three ways: the printed LaTeX has the paper
form's structure (and none of the expansion's), the stated form equals the computed result exactly (its named
results and abbreviations replaced by their definitions by hand, then ``exact_identity``), and the no-vacation
parts reduce to published M/M/1 values. The general term order of the printer is tested on the issue's examples.
"""

from __future__ import annotations

import pytest
import sympy as sp
from qderive.derivations import redundant_cluster as RC
from qderive.derivations import vacation_finite_closed as VF
from qderive.derivations import vacation_infinite as VI
from qderive.derivations.export import latex as L
from qderive.derivations.export.forms import PaperFormError, prove
from qderive.derivations.export.printing import latex
from qderive.derivations.framework import Step, exact_identity

LISTED = {
    "vacation-infinite": (VI.derivation, ("(7)", "Var", "(NV)", "(S6)", "(W1)", "(W2)", "(N7)")),
    "vacation-finite-r": (VF.derivation, ("(A.2)", "(A.2')", "(A.4)", "(A.5)", "(A.6)")),
    "redundant-cluster": (RC.derivation, ("(L)", "(S'')")),
}
CASES = [(name, label) for name, (_, labels) in LISTED.items() for label in labels]


def _step(name, label):
    return LISTED[name][0]().step(label)


def _sides(rel):
    if isinstance(rel, sp.And):  # paired by left-hand side, as displayed
        return [s for a in sorted(rel.args, key=lambda r: sp.default_sort_key(r.lhs)) for s in _sides(a)]
    return [rel.lhs, rel.rhs]


def _by_hand(expr, notation):
    """The step's named results and abbreviations replaced by their definitions (applied functions too), expm1
    written out: written here again, not the export's restore()."""
    from sympy.codegen.cfunctions import expm1

    for symbol, definition in notation:
        expr = expr.replace(symbol, definition) if isinstance(definition, sp.Lambda) else \
            expr.xreplace({symbol: definition.func(*definition.args) if definition.args else definition})
    return expr.replace(expm1, lambda a: sp.exp(a) - 1)


def _equal(a, b) -> bool:
    if isinstance(a, sp.Piecewise) or isinstance(b, sp.Piecewise):
        # the same cases, in the same order, each value equal as an identity (s_1, s_2 free)
        return (isinstance(a, sp.Piecewise) and isinstance(b, sp.Piecewise) and len(a.args) == len(b.args)
                and all(ca == cb and _equal(va, vb) for (va, ca), (vb, cb) in zip(a.args, b.args)))
    return exact_identity(a, b)


@pytest.mark.parametrize("name,label", CASES)
def test_the_stated_form_is_printed_and_equals_the_computed_result(name, label):
    """The step has a paper form, the export prints exactly it, and it equals the computed relation side by side
    (substituting by hand, cancelling exactly)."""
    step = _step(name, label)
    assert step.paper is not None, (name, label)
    assert step.latex() == latex(step.paper)
    for shown, derived in zip(_sides(step.paper), _sides(step.relation), strict=True):
        assert _equal(_by_hand(shown, step.notation), _by_hand(derived, step.notation)), (name, label, shown)


# what the paper form shows, and what the expansion showed (before issue 27 was finished)
SHAPE = {
    ("vacation-infinite", "(7)"): ([r"N = \lambda l_{1} W"], [r"\bar{\alpha}", r"f_{2}", r"1 - \bar{\rho}"]),
    ("vacation-infinite", "Var"): ([r"\mathrm{Var}_{\text{none}}",
                                    r"\lambda^{2} l_{1}^{2} \left(\frac{f_{3}}{3 f_{1}} - \frac{f_{2}^{2}}{4 f_{1}^{2}}\right)"],
                                   [r"\bar{\alpha}", r"\left(1 - \bar{\rho}\right)^{2}"]),
    ("vacation-infinite", "(NV)"): ([r"N_{\text{none}} + N_{\text{none}}^{2} + ", r"\left(2 l_{1} - 3 l_{2} + l_{3}\right)",
                                     r"{3 \left(1 - \bar{\rho}\right)}", r"{1 - \bar{\rho}}"], [r"\bar{\alpha}", r"3 - 3"]),
    ("vacation-infinite", "(S6)"): ([r"\frac{\lambda f_{2}}{2 \left(c_{0} + \lambda f_{1}\right)}",
                                     r"\frac{b_{1} \left(l_{2} - l_{1}\right)}{2 l_{1} \left(1 - \bar{\rho}\right)}"],
                                    [r"\bar{\alpha}", r"b_{1} c_{0} l_{1}"]),
    ("vacation-infinite", "(W1)"): ([r"= \frac{f_{2}}{2 f_{1}} + \frac{\lambda l_{1} b_{2}}{2 \left(1 - \bar{\rho}\right)} + "],
                                    [r"\bar{\alpha}"]),
    ("vacation-infinite", "(W2)"): ([r"= \frac{f_{3}}{3 f_{1}} + \mathrm{E}[W_{\text{none}}^{2}] + "
                                     r"\frac{f_{2} W_{\text{none}}}{f_{1}}"], [r"\bar{\alpha}", "b_{3}"]),
    ("vacation-infinite", "(N7)"): ([r"= 2 W_{\text{none}}^{2} + ", r"\frac{\lambda l_{1} b_{3}}{3 \left(1 - \bar{\rho}\right)}"],
                                    [r"\left(1 - \bar{\rho}\right)^{2}"]),
    ("vacation-finite-r", "(A.2)"): ([r"\left(1 - z \left(1 - p\right)\right)", r"\mu - z \left(\lambda + \mu \left(1 - p\right)\right)",
                                      r"\lambda + \nu - z \left(\lambda + \nu \left(1 - p\right)\right)"], [r"p z - z", r"\mu p z"]),
    ("vacation-finite-r", "(A.2')"): ([r"\lambda + \mu - z \left(\lambda + \mu \left(1 - p\right)\right)"], [r"p z - z"]),
    ("vacation-finite-r", "(A.4)"): ([r"\dfrac{\lambda s_{1}^{j} \left(\mu + \lambda j\right)}{\mu p \left(\lambda + \mu \left(1 - p\right)\right)}",
                                      r"\lambda + \nu \left(1 - p\right)", r"\dfrac{\mu p}{\nu} - "], [r"\nu p + \nu", r"- \nu p"]),
    ("vacation-finite-r", "(A.5)"): ([r"\mu \left(2 - p\right)", r"\lambda + \nu \left(1 - p\right)"], [r"2 \mu", r"- \nu p"]),
    ("vacation-finite-r", "(A.6)"): ([r"s_{2} \left(1 - s_{2}^{r}\right)", r"\left(1 - s_{1}\right)^{2}"],
                                     [r"\frac{s_{2}}{1 - s_{2}}", r"1 + s_{1}^{2} - 2 s_{1}"]),
    ("redundant-cluster", "(L)"): ([r"\theta_{1} = \frac{1 - \rho_{1}}{v_{1}}"], [r"1 - \frac{\Lambda"]),
    ("redundant-cluster", "(S'')"): ([r"\phi(t \left(\theta_{b} - \theta_{a}\right))", r"e^{- \theta_{a} t}"],
                                     [r"\min", r"\max", "expm1", r"\chi"]),
}


@pytest.mark.parametrize("name,label", CASES)
def test_the_printed_latex_has_the_paper_structure(name, label):
    """The display (rows and all, as exported) shows the grouped form; a fall-back to SymPy's expansion fails."""
    d = LISTED[name][0]()
    line, block = d.step(label).latex(), L.display(d.step(label), d.notation, prefix=name)
    present, absent = SHAPE[(name, label)]
    for piece in present:
        assert piece in line, (label, piece, line)
    for piece in absent:
        assert piece not in line and piece not in block, (label, piece, block)
    assert block.count("\\\\") + 1 <= 8, (label, block)  # a few rows (three cases of two), not pages


def test_the_no_vacation_parts_reduce_to_mm1():
    """(NV) and (N7) with single arrivals and exponential service (b_k = k!/mu^k) are the M/M/1 values: the variance
    of the number waiting rho^2 (1 + rho - rho^2)/(1 - rho)^2, and E W^2 = 2 rho/(mu^2 (1 - rho)^2) (P(W > t) =
    rho e^{-mu (1 - rho) t}); published values, not the code's."""
    lam, mu = sp.symbols("lambda mu", positive=True)
    rho = lam / mu
    d = VI.derivation()
    values = {VI.b1: 1 / mu, VI.b2: 2 / mu**2, VI.b3: 6 / mu**3, VI.l1: 1, VI.l2: 1, VI.l3: 1, VI.lam: lam}
    for label, want in (("(NV)", rho**2 * (1 + rho - rho**2) / (1 - rho) ** 2),
                        ("(N7)", 2 * rho / (mu**2 * (1 - rho) ** 2))):
        step = d.step(label)
        got = _by_hand(step.paper.rhs, step.notation).xreplace(values)
        assert exact_identity(got, want), (label, sp.factor(got))


def test_a_wrong_grouping_is_refused():
    """One coefficient changed in a stated form (the residual vacation's f_3/(3 f_1) as f_3/(2 f_1); a q~_j case;
    the level-2 way of being late) and the export refuses to print it."""
    d = VI.derivation()
    var = d.step("Var")
    wrong = var.paper.xreplace({VI.f3: 3 * VI.f3 / 2})
    with pytest.raises(PaperFormError):
        prove(wrong, var.relation, tuple(var.notation))
    q = VF.derivation().step("(A.4)")
    value, cond = q.paper.rhs.args[1]
    bent = sp.Eq(q.paper.lhs, sp.Piecewise(q.paper.rhs.args[0], (value * (1 + VF.j / 10**6), cond), q.paper.rhs.args[2]))
    with pytest.raises(PaperFormError):
        prove(bent, q.relation, tuple(q.notation))
    late = RC.derivation().step("(S'')")
    wrong = late.paper.xreplace({RC.rho2 * (1 - RC.rho1) * sp.exp(-RC.th2 * RC.t):
                                 RC.rho2 * (1 - RC.rho2) * sp.exp(-RC.th2 * RC.t)})
    assert wrong != late.paper
    with pytest.raises(PaperFormError):
        prove(wrong, late.relation, tuple(late.notation))
    with pytest.raises(PaperFormError):  # and the export itself refuses the step
        L.display(Step("(X)", "A wrong form", var.relation, computed=True,
                       paper=var.paper.xreplace({VI.f3: 3 * VI.f3 / 2}), notation=var.notation))


def test_terms_in_a_natural_order():
    """From the simplest term to the most involved, a leading constant first, ascending powers, equally simple terms
    in index order (the moments grouped), and no sum opening with a minus sign."""
    r1, r2, th, t, x, p, lam, mu = sp.symbols("rho_1 rho_2 theta t x p lambda mu", positive=True)
    l1, l2, l3 = sp.symbols("l1 l2 l3", positive=True)
    N = sp.Symbol("N_{none}")
    assert latex(r1 + r2 - r1 * r2 + r1 * r2 * th * t) == r"\rho_{1} + \rho_{2} - \rho_{1} \rho_{2} + \rho_{1} \rho_{2} \theta t"
    assert latex(x**3 + x**2 + x + 1) == "1 + x + x^{2} + x^{3}"
    assert latex(l3 - 3 * l2 + 2 * l1) == "2 l_{1} - 3 l_{2} + l_{3}"
    assert latex(N**2 + N) == r"N_{\text{none}} + N_{\text{none}}^{2}"
    assert latex(1 - p + lam / mu) == r"1 - p + \frac{\lambda}{\mu}"
    assert latex(l2 - l1) == "l_{2} - l_{1}" and latex(1 - r1) == r"1 - \rho_{1}"
    # the example, redundant-cluster (r=): rho_1 rho_2 t theta - rho_1 rho_2 + rho_1 + rho_2 before
    assert r"1 - \left(\rho_{1} + \rho_{2} - \rho_{1} \rho_{2} + \rho_{1} \rho_{2} \theta t\right) e^{- \theta t}" in \
        RC.derivation().step("(r=)").latex()
    # the thesis's order of (6): the residual vacation, the batches ahead, the own batch
    six = VI.derivation().step("(6)").latex()
    assert six.index(r"\frac{f_{2}}{2 f_{1}}") < six.index(r"\lambda l_{1} b_{2}") < six.index(r"l_{2} - l_{1}")
