"""E[W^k] for k >= 3 of vacation-infinite in structure (issue 27, item 2): W = W_b + J + R.

The displays (MS) (the work of a batch, Faa di Bruno), (MJ) (the own batch ahead), (MB) (Takacs's recursion),
(N8) (W_none = W_b + J) and (W3) (W = W_none + R) are paper forms proved equal to the derived moments by the
export's own proof (:func:`qderive.derivations.export.forms.prove`); here

* a perturbed form of each kind is refused by that proof (the proof can fail);
* the displayed chain, evaluated step by step for concrete laws (exact rationals; the factorial moments of the
  batch from its PMF, the service and vacation moments from their laws, all written here), gives E W^3 equal to
  the third derivative at 0 of the transform W(s) of those laws, written here and differentiated numerically by
  mpmath at 50 digits (another way: no series of the derivation, no moment symbol);
* every display has at most 12 rows, for --wait-moments 3 and 4.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
import sympy as sp
from qderive.derivations.export import latex as L
from qderive.derivations.export.forms import PaperFormError, prove, shown
from qderive.derivations.vacation_infinite import derivation
from qderive.symbolic.closed_forms.vacation_infinite import BATCH, SERVICE, VACATION, lam

STRUCTURE = ("(MS)", "(MJ)", "(MB)", "(N8)", "(W3)")


@pytest.fixture(scope="module")
def d3():
    return derivation(wait_moments=3)


def _perturbed(rel, factor):
    """The relation (or each relation of a conjunction) with its right-hand side's last term scaled."""
    if isinstance(rel, sp.And):
        parts = list(rel.args)
        parts[-1] = _perturbed(parts[-1], factor)
        return sp.And(*parts)
    rhs = rel.rhs
    terms = list(sp.Add.make_args(rhs))
    terms[-1] = terms[-1] * factor
    return sp.Eq(rel.lhs, sp.Add(*terms))


#: the cheap cases run always; the proofs that a perturbed (MS), (MJ), (MB), (N8) is wrong take 3-7 s each (SymPy
#: tries to cancel the difference before the random points refuse it)
_CASES = ["(W3)", *(pytest.param(label, marks=pytest.mark.slow) for label in STRUCTURE if label != "(W3)")]


@pytest.mark.parametrize("label", _CASES)
def test_the_structured_forms_are_proved_and_a_perturbed_one_is_refused(d3, label):
    """Each form is proved equal to the derived moments; the same form with one term scaled by 3/2 (a wrong
    binomial coefficient, a wrong factorial-moment weight) is refused: such a step cannot be exported."""
    import dataclasses

    step = d3.step(label)
    assert step.paper is not None and step.notation
    assert prove(step.paper, step.relation, tuple(step.notation))
    assert L.display(step, d3.notation)
    bad = _perturbed(step.paper, sp.Rational(3, 2))
    with pytest.raises(PaperFormError):
        L.display(dataclasses.replace(step, paper=bad), d3.notation)


def test_the_residual_and_the_recursion_coefficients_matter(d3):
    """Two plausible slips are refused: E R^n = f_{n+1}/(n f_1) (instead of (n + 1) f_1) in (W3), and Takacs's
    recursion without the 1/(i + 1) in (MB)."""
    f = [VACATION.moment(i) for i in range(5)]
    w3 = d3.step("(W3)")
    wrong = w3.paper.rhs.subs(f[4], f[4] * 4 / 3)  # f4/(4 f1) -> f4/(3 f1)
    with pytest.raises(PaperFormError):
        prove(sp.Eq(w3.paper.lhs, wrong), w3.relation, tuple(w3.notation))
    mb = d3.step("(MB)")
    ES4 = sp.Symbol("E[S_{b}^{4}]")
    wrong = mb.paper.subs(ES4, 4 * ES4)
    with pytest.raises(PaperFormError):
        prove(wrong, mb.relation, tuple(mb.notation))


# -- the displayed chain vs the transform, for concrete laws ------------------------------------------------------

#: batch X in {1, 2, 3} with probabilities 1/2, 1/4, 1/4; Erlang-2 service of mean 1/2; exponential vacation of
#: mean 2; lambda = 1/2, so rho-bar = lambda l1 b1 = 7/16
PMF = {1: F(1, 2), 2: F(1, 4), 3: F(1, 4)}
LAM, K, MU, THETA = F(1, 2), 2, 4, F(1, 2)  # Erlang-K with rate MU per phase (mean K/MU); vacation rate THETA


def _values(n):
    """The symbols of the displays for these laws, exactly: lambda, b_i (Erlang: (K)_i / MU^i), f_i
    (exponential: i!/THETA^i), l_i and l_[m] (from the PMF), rho-bar, alpha-bar."""
    import math

    v = {lam: sp.Rational(LAM)}
    for i in range(1, n + 1):
        v[SERVICE.moment(i)] = sp.Rational(math.prod(range(K, K + i)), MU**i)
        v[VACATION.moment(i)] = sp.Rational(F(math.factorial(i)) / THETA**i)
        v[BATCH.moment(i)] = sp.Rational(sum(p * x**i for x, p in PMF.items()))
        falling = sum(p * math.prod(range(x - i + 1, x + 1)) for x, p in PMF.items())  # E X ...(X-i+1)
        v[sp.Symbol(f"l_{{[{i}]}}")] = sp.Rational(falling)
    v[sp.Symbol(r"\bar{\rho}", positive=True)] = v[lam] * v[BATCH.moment(1)] * v[SERVICE.moment(1)]
    v[sp.Symbol(r"\bar{\alpha}", positive=True)] = v[lam] * v[BATCH.moment(1)] * v[VACATION.moment(1)]
    return v


def _evaluate_displays(d, labels, values):
    """Evaluate the displayed relations (as printed: the paper forms) of ``labels`` in order, each left-hand side
    a name whose value the later displays use; a relation is evaluated once its right-hand side is known."""
    pending = []
    for label in labels:
        rel = shown(d.step(label))
        pending += list(rel.args) if isinstance(rel, sp.And) else [rel]
    while pending:
        ready = [r for r in pending if r.rhs.free_symbols <= set(values)]
        assert ready, [r.lhs for r in pending]
        for r in ready:
            values[r.lhs] = sp.nsimplify(r.rhs.xreplace(values))
            pending.remove(r)
    return values


def _transform_third_moment():
    """-W'''(0) of W(s) = W_b(s) J(s) R(s) for these laws, by mpmath at 50 digits (central differences of the
    transform; its 0/0 at s = 0 is never evaluated: the odd-order stencil has no point at 0)."""
    with mpmath.workdps(50):
        def q(x):
            return mpmath.mpf(x.numerator) / x.denominator

        lam_, mu, theta = q(LAM), mpmath.mpf(MU), q(THETA)
        l1 = q(sum(p * x for x, p in PMF.items()))
        b1 = mpmath.mpf(K) / mu
        f1 = 1 / theta
        rho = lam_ * l1 * b1

        def L(z):
            return mpmath.fsum(q(p) * z**x for x, p in PMF.items())

        def W(s):
            beta = (mu / (mu + s)) ** K
            phi = theta / (theta + s)
            return ((1 - rho) * s / (s - lam_ + lam_ * L(beta)) * (1 - L(beta)) / (l1 * (1 - beta))
                    * (1 - phi) / (f1 * s))

        return -mpmath.diff(W, 0, 3)


def test_the_displayed_third_moment_equals_the_transforms_derivative(d3):
    """E W^3 from the printed chain (N6), (N7), (MS), (MJ), (MB), (N8), (W3) = -W'''(0) by mpmath (50 digits;
    the displays give an exact rational, so they must agree to the numerical derivative's accuracy: >= 40
    digits, mpmath's differentiation losing well under 10 of the 50)."""
    values = _evaluate_displays(d3, ("(N6)", "(N7)", "(MS)", "(MJ)", "(MB)", "(N8)", "(W3)"), _values(5))
    got = values[sp.Symbol("E[W^{3}]")]
    assert got.is_Rational and got > 0
    want = _transform_third_moment()
    with mpmath.workdps(50):
        rel = abs((mpmath.mpf(got.p) / got.q - want) / want)
    assert rel < mpmath.mpf(10) ** -40, (got, want)


def structured_displays_fit(k):
    """The parts' displays of E W^k hold every order it needs (E S_b^n up to n = k + 1) within the row limit.

    Also run at k = 4 by test_latex_export.py's test_higher_wait_moment_fragments_compile_silently_in_article_and_amsart,
    right after its export of the fourth moments has proved every display (about 20 s of proofs cold, which a
    separate test here did again on another worker)."""
    d = derivation(wait_moments=k)
    labels = [s.label for s in d.steps]
    assert {"(MS)", "(MJ)", "(MB)", f"(N{k + 5})", f"(W{k})"} <= set(labels)
    assert "E[S_{b}^{%d}]" % (k + 1) in str(d.step("(MS)").paper)
    for s in d.steps:
        if s.label not in ("(MS)", "(MJ)", "(MB)") and not s.label.startswith(("(N", "(W")):
            continue
        block = L.display(s, d.notation, prefix=d.name)
        assert block.count("\\\\") + 1 <= L.MAX_ROWS, (k, s.label)


def test_no_structured_display_is_longer_than_twelve_rows():
    """:func:`structured_displays_fit` at k = 3 (k = 4: in the export test that derives the fourth moments)."""
    structured_displays_fit(3)


def test_a_part_longer_than_the_row_limit_is_shown_in_several_displays(d3, monkeypatch):
    """With a row limit of 2, (MS) for E W^3 (E S_b^2 .. E S_b^4: 3 rows) is split into (MS.1), (MS.2): each
    display within the limit, together every order once, each proved (the split --wait-moments 8 needs). (Order 3,
    whose moments the module's derivation ``d3`` has already derived, with the limit 2, runs the same greedy split
    as order 4 with the limit 4, which derived the fourth moments cold for this test alone: about 5 s.)"""
    from qderive.derivations import vacation_infinite as V

    monkeypatch.setattr(L, "MAX_ROWS", 2)
    parts = [s for s in V._part_steps(3) if s.label.startswith("(MS")]
    assert [s.label for s in parts] == ["(MS.1)", "(MS.2)"]
    orders = []
    for s in parts:
        assert prove(s.paper, s.relation, tuple(s.notation))
        assert L.display(s, ()).count("\\\\") + 1 <= 2, s.label
        orders += [str(r.lhs) for r in s.paper.args] if isinstance(s.paper, sp.And) else [str(s.paper.lhs)]
    assert sorted(orders) == [f"E[S_{{b}}^{{{n}}}]" for n in range(2, 5)]


def test_an_order_past_the_derive_moments_limit_is_refused_before_any_work():
    """--wait-moments 5 is past the default limit derive-moments = 4 (cold, K = 5 costs about a minute of proofs):
    one line naming the limit and how to raise it, before the derivation starts (the call returns at once; a
    derivation of order 5 would take tens of seconds); order 4 is within it."""
    import time

    from conftest import cli
    from qderive.symbolic import limits

    start = time.process_time()
    code, out, err = cli(["derive", "vacation-infinite", "--wait-moments", "5"])
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "derive-moments = 5 exceeds the limit 4" in err and "--limit derive-moments=5" in err, err
    assert time.process_time() - start < 5
    assert limits.current().derive_moments == 4
