"""Factors of a product in the source's order (issue 27): the thesis writes lambda l_1 b_2 (chapter 2, (6)) and
lambda l_1 W ((7)) -- rates, then batch moments, then service and vacation moments, then the rest, numbers first,
sums last -- never SymPy's b_2 l_1 lambda. One printing layer does it for every export (LaTeX, Markdown, the
terminal's unicode); these tests fail when a product of lambda, l_k and b_k prints in SymPy's order.

The expected strings are written by hand from the thesis's notation (not copied from the printer's output), and the
reordering is checked to keep the value (the factors multiply back to the product).
"""

from __future__ import annotations

import pytest
import sympy as sp
from qderive.derivations import vacation_infinite as VI
from qderive.derivations.export import latex as L
from qderive.derivations.export import markdown as M
from qderive.derivations.export.printing import latex, paper_factors, pretty

lam, l1, l2, b1, b2, b3, f1, f2, c0, W, rho = sp.symbols(r"lambda l_1 l_2 b_1 b_2 b_3 f_1 f_2 c_0 W \bar{\rho}",
                                                         positive=True)


@pytest.mark.parametrize("expr,tex", [
    # (a number times a sum is distributed by SymPy: 1/(2 (1 - rho)) is written as a power times 1/2)
    (b2 * l1 * lam, r"\lambda l_{1} b_{2}"),
    (lam * l1 * W, r"\lambda l_{1} W"),
    (f2 * l2 * lam, r"\lambda l_{2} f_{2}"),
    (b3 * l1**3 * lam**3, r"\lambda^{3} l_{1}^{3} b_{3}"),
    (3 * b1 * l1 * lam, r"3 \lambda l_{1} b_{1}"),
    (-b2 * l1 * lam, r"- \lambda l_{1} b_{2}"),
    (-2 * b2 * l1 * lam, r"- 2 \lambda l_{1} b_{2}"),
    ((1 - rho) ** -1 * b2 * l1 * lam / 2, r"\frac{\lambda l_{1} b_{2}}{2 \left(1 - \bar{\rho}\right)}"),
    ((c0 + f1 * lam) ** -1 * lam * f2 / 2, r"\frac{\lambda f_{2}}{2 \left(c_{0} + \lambda f_{1}\right)}"),  # nested
    (b1 * lam * (l2 - l1), r"\lambda b_{1} \left(l_{2} - l_{1}\right)"),  # a sum last
    (-b1 * lam * (l2 - l1) / 2, r"- \frac{\lambda b_{1} \left(l_{2} - l_{1}\right)}{2}"),
    # an exponential after the sums, as papers write it (redundant-cluster's r); a rate function first
    (rho * (1 - W) * sp.exp(-lam * c0), r"\bar{\rho} \left(1 - W\right) e^{- \lambda c_{0}}"),
    (sp.Function("lambda")(c0) * (1 - sp.Function("B")(c0)), r"\lambda(c_{0}) \left(1 - B(c_{0})\right)"),
])
def test_a_product_prints_in_the_sources_order(expr, tex):
    assert latex(expr) == tex
    # SymPy's own order is the one to avoid (b_2 l_1 lambda): the test can fail
    assert sp.latex(b2 * l1 * lam) == r"b_{2} l_{1} \lambda"


def test_the_order_keeps_the_value_and_the_unicode_printer_follows_it():
    for expr in (b2 * l1 * lam, -3 * b3 * l1**2 * lam / (2 * f1 * (1 - rho)), lam * l1 * W * (l2 - l1)):
        assert sp.Mul(*paper_factors(expr)) == expr
    assert pretty(b2 * l1 * lam, columns=200) == "λ⋅l₁⋅b₂"
    assert pretty(-b2 * l1 * lam, columns=200) == "-λ⋅l₁⋅b₂"
    # order="none" (the notation's definitions): the factors as given
    assert pretty(sp.Mul(b2, lam, l1, evaluate=False), order="none", columns=200) == "b₂⋅λ⋅l₁"


def test_the_exports_of_vacation_infinite_write_lambda_l1_b2():
    """(6) and (7) in the LaTeX body and the Markdown page: lambda l_1 b_2 and N = lambda l_1 W, never b_2 l_1
    lambda (SymPy's order)."""
    d = VI.derivation()
    for text in (L.body(d), M.page(d)):
        assert r"\frac{\lambda l_{1} b_{2}}{2 \left(1 - \bar{\rho}\right)}" in text
        assert r"N &= \lambda l_{1} W" in text or r"N = \lambda l_{1} W" in text
        for sympy_order in (r"b_{2} l_{1} \lambda", r"b_{1} l_{1} \lambda", r"f_{2} l_{1} \lambda", r"l_{1} \lambda"):
            assert sympy_order not in text, sympy_order
