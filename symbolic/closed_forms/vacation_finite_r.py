"""M[X]/M/1/r with exponential multiple vacations and geometric batches: closed forms in symbolic r.

Sopin 2013, section 1.2 and chapter 2 (``docs/theory/other-models.md`` section A): geometric
batches on {1, 2, ...} with mean 1/p (q = 1 - p), exponential service (rate mu = 1/b_1)
and exponential vacations (rate nu = 1/f_1). Every transform is rational::

    L(z) = p z / (1 - q z),   A(z) = mu / (mu + lambda - lambda L(z)),   C(z) = nu / (nu + lambda - lambda L(z)),
    Q~(z) = (A(z) - z C(z)) / (A(z) - z)                                           (3), unnormalised (q~_0 = 1)
          = (1 - q z)(mu nu + lambda mu - (mu nu q + lambda nu) z) / ((mu - (mu q + lambda) z)(nu + lambda - (nu q + lambda) z)),
    P~(z) = (1 - z)(1 - C(z)) / (lambda f_1 (1 - L(z))(A(z) - z))                  (13')

so partial fractions (:func:`taylor_coefficient`) give q~_j and p~_j (j >= 1) as sums of
geometric sequences c j^m s^j with the ratios s_1 = q + lambda/mu (below 1 iff rho_bar < 1)
and s_2 = (nu q + lambda)/(nu + lambda), and finite sums (:func:`power_sum`) give, as closed
forms in r valid for every load:

* Statement 1's normaliser S~_r = sum_{j=0}^{r} q~_j, q^r_0 = 1/S~_r, q^r_r = q~_r/S~_r;
* Statement 2 (11): P^r_e = f_1 / (f_1 + b_1 (S~_r - 1));
* (14), (15): p^r_r = 1 - P^r_e sum_{j<r} p~_j (the finite law is P^r_e p~_j below the top);
* Theorem 1.1 (12) in load-balance form: pi = 1 - (1 - P^r_e)/rho_bar, and by the direct sum
  P^r_e sum_{j<r} p~_j q^{r-j} + p^r_r (pi_j = q^{r-j} for geometric batches);
* N^r = P^r_e sum_{j<r} j p~_j + r p^r_r;
* W^r = N^r b_1 / (1 - P^r_e), Little's law with the throughput (1 - P^r_e)/b_1 = lambda l_1 (1 - pi).

The partial fractions differ in two cases (:class:`ClosedFormCase`): rho_bar = 1 (lambda =
mu p: s_1 = 1, and the geometric sum (s_1 - s_1^{r+1})/(1 - s_1) becomes r) and the double
pole mu p = lambda + nu (s_1 = s_2: terms (c_0 + c_1 j) s_1^j). Each case is derived with
symbolic lambda, p, mu, nu under its relation (:func:`case_forms`), and :func:`piecewise`
joins them into one ``Piecewise`` that can be evaluated at any parameters, rho_bar = 1
included (a generic form alone divides by 1 - s_1 there). Both special relations cannot
hold together (they would need nu = 0).

For evaluation every power s_i^r is a symbol w_i (:data:`POWERS`), so the measures are
rational functions of (lambda, p, mu, nu, r, w_1, w_2), evaluated exactly from rational
parameters (``engines.vacation_closed`` of the numeric layer) once w_i = s_i^r is formed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from ..cache import cached
from ..models.vacation_closed import ClosedFormCase
from ..numbers import to_sympy

__all__ = ["z", "j", "r", "lam", "p", "mu", "nu", "POWERS", "SYMBOLS", "MEASURE_ARGS", "MEASURE_KEYS", "ExpTerm",
           "ClosedForms", "taylor_coefficient", "power_sum", "transforms", "derive", "numeric_forms", "case_forms",
           "loss_in_r", "CASE_CONDITIONS", "CASE_SUBSTITUTIONS", "piecewise", "measure_expressions", "ratio_expressions"]

z = sp.Symbol("z")
j = sp.Symbol("j", integer=True, nonnegative=True)
r = sp.Symbol("r", integer=True, positive=True)
lam, p, mu, nu = sp.symbols("lambda p mu nu", positive=True)
#: w_i stands for s_i^r in the evaluated measures
POWERS = sp.symbols("w_1 w_2", positive=True)
#: the parameters of the ratios
SYMBOLS = (lam, p, mu, nu)
#: the arguments of every measure expression, in order
MEASURE_ARGS = (lam, p, mu, nu, r, *POWERS)
#: the measures of :func:`measure_expressions`, in order (the keys of ``qderive eval vacation-finite-r``)
MEASURE_KEYS = ("loss_probability", "idle_probability", "mean_queue_length", "mean_wait", "pr", "q0", "qr")

#: the relation under which each special case's closed form holds
CASE_CONDITIONS = {
    ClosedFormCase.LOAD_ONE: sp.Eq(lam, mu * p),
    ClosedFormCase.DOUBLE_POLE: sp.Eq(nu, mu * p - lam),
}
#: the substitution that imposes it on the symbolic parameters
CASE_SUBSTITUTIONS = {
    ClosedFormCase.GENERIC: {},
    ClosedFormCase.LOAD_ONE: {lam: mu * p},
    ClosedFormCase.DOUBLE_POLE: {nu: mu * p - lam},
}


# -- coefficients of a rational function in closed form ---------------------------------------------


@dataclass(frozen=True)
class ExpTerm:
    """c * j^m * s^j: one term of an exponential polynomial in the index j."""

    c: sp.Expr
    m: int
    s: sp.Expr

    def at(self, n) -> sp.Expr:
        """The term at index n (s^n written out)."""
        return self.c * n**self.m * self.s**n


def taylor_coefficient(F: sp.Expr, var: sp.Symbol) -> tuple[tuple[ExpTerm, ...], int]:
    """(terms, d): the n-th Taylor coefficient at 0 of the rational function F is
    sum(t.at(n) for t in terms) for every n > d.

    Partial fractions (``sympy.apart``): a term c / (alpha + beta z)^k contributes
    c alpha^{-k} binomial(n + k - 1, k - 1) (-beta/alpha)^n; the polynomial part (degree d)
    only changes the coefficients n <= d. Terms with the same (m, s) are merged.
    """
    n = sp.Dummy("n")
    merged: dict = {}
    degree = -1
    for term in sp.Add.make_args(sp.apart(sp.cancel(F), var)):
        if not term.has(var):
            degree = max(degree, 0)
            continue
        num, den = sp.fraction(sp.factor(term))
        if sp.Poly(den, var).degree() == 0:  # polynomial term
            degree = max(degree, sp.Poly(num, var).degree())
            continue
        if num.has(var):
            raise ValueError(f"unexpected partial fraction {term}")
        const, factors = sp.factor_list(den, var)
        if len(factors) != 1 or sp.Poly(factors[0][0], var).degree() != 1:
            raise ValueError(f"denominator {den} is not a power of one linear factor")
        base, k = factors[0]
        alpha, beta = base.subs(var, 0), sp.Poly(base, var).coeff_monomial(var)
        ratio = sp.factor(-beta / alpha)
        poly = sp.Poly(sp.expand_func(sp.binomial(n + k - 1, k - 1)), n)
        for (m,), cm in poly.terms():
            key = (int(m), ratio)
            merged[key] = merged.get(key, 0) + num * cm / (const * alpha**k)
    terms = tuple(ExpTerm(sp.factor(c), m, s) for (m, s), c in merged.items() if sp.cancel(c) != 0)
    return terms, degree


def power_sum(term: ExpTerm, lo: int, offset: int, power) -> sp.Expr:
    """sum_{j=lo}^{r+offset} c j^m s^j in closed form, with s^r written ``power(s)``.

    Generic s: (x d/dx)^m of (x^lo - x^(r+offset+1)) / (1 - x) at x = s; s = 1 gives the sum
    of the polynomial c j^m (Faulhaber), linear or quadratic in r.
    """
    c, m, s = term.c, term.m, term.s
    if s == 1:
        return c * sp.summation(j**m, (j, lo, r + offset))
    x, w = sp.Dummy("x", positive=True), sp.Dummy("w", positive=True)
    g = (x**lo - x ** (r + offset + 1)) / (1 - x)
    for _ in range(m):
        g = x * sp.diff(g, x)
    g = sp.expand_power_exp(sp.expand(g)).xreplace({x**r: w})
    if any(a.exp.has(r) for a in g.atoms(sp.Pow)):
        raise ValueError(f"power_sum: a power of x other than x^r remains in {g}")
    return c * g.xreplace({x: s, w: power(s)})


def transforms(lam_, p_, b1, f1) -> tuple[sp.Expr, sp.Expr]:
    """(Q~(z), P~(z)) for geometric batches (mean 1/p), exponential service and vacation, factored."""
    mu_, nu_, q = 1 / b1, 1 / f1, 1 - p_
    L = p_ * z / (1 - q * z)
    A = mu_ / (mu_ + lam_ - lam_ * L)
    C = nu_ / (nu_ + lam_ - lam_ * L)
    Qt = sp.factor(sp.cancel((A - z * C) / (A - z)))
    Pt = sp.factor(sp.cancel((1 - z) * (1 - C) / (lam_ * f1 * (1 - L) * (A - z))))
    return Qt, Pt


@dataclass(frozen=True)
class ClosedForms:
    """Closed forms in r (the module's ``r``) of the finite model, every load.

    ``qt`` (q~_j for j >= 1 as exponential-polynomial terms; q~_0 = 1), ``pt`` (p~_j for
    j >= 1) and ``pt0`` = p~_0; ``ratios`` the distinct ratios s_i != 1 and ``powers`` what
    stands for s_i^r in the expressions (symbols w_i, or the powers s_i^r themselves);
    ``total`` = S~_r = sum_{j=0}^{r} q~_j; ``q0`` = q^r_0, ``qr`` = q^r_r (Statement 1);
    ``idle`` = P^r_e (11); ``pr`` = p^r_r = 1 - P^r_e sum_{j<r} p~_j ((14), (15));
    ``loss_balance`` = 1 - (1 - P^r_e)/rho_bar; ``loss_direct`` = sum_j p^r_j pi_j (12) (None
    with symbolic powers); ``mean_queue`` = N^r = P^r_e sum_{j<r} j p~_j + r p^r_r; ``mean_wait`` = W^r =
    N^r b_1 / (1 - P^r_e) (Little: the throughput is (1 - P^r_e)/b_1); ``rho_bar``.
    """

    qt: tuple
    pt: tuple
    pt0: sp.Expr
    ratios: tuple
    powers: tuple
    total: sp.Expr
    q0: sp.Expr
    qr: sp.Expr
    idle: sp.Expr
    pr: sp.Expr
    loss_balance: sp.Expr
    mean_queue: sp.Expr
    mean_wait: sp.Expr
    rho_bar: sp.Expr
    loss_direct: sp.Expr | None = None

    def qt_expr(self, n=j) -> sp.Expr:
        """q~_n (n >= 1) with the powers written out."""
        return sp.Add(*[t.at(n) for t in self.qt])

    def pt_expr(self, n=j) -> sp.Expr:
        """p~_n (n >= 1) with the powers written out."""
        return sp.Add(*[t.at(n) for t in self.pt])

    def explicit(self, expr) -> sp.Expr:
        """``expr`` with each power symbol w_i replaced by s_i^r."""
        return to_sympy(expr).xreplace({w: s**r for w, s in zip(self.powers, self.ratios) if w.is_Symbol})


def derive(lam_, p_, b1, f1, *, explicit_powers: bool = False) -> ClosedForms:
    """Derive the closed forms for batch rate ``lam_``, geometric parameter ``p_`` (mean 1/p), mean service
    ``b1`` and mean vacation ``f1`` (symbols or exact numbers).

    With symbols the partial fractions are those of the case the parameters impose (generic,
    or a special relation substituted: :func:`case_forms`); with numbers every case is derived
    exactly. ``explicit_powers`` writes s_i^r (numeric parameters, and the direct-sum loss);
    otherwise s_i^r is the symbol w_i of :data:`POWERS`.
    """
    q = 1 - p_
    Qt, Pt = transforms(lam_, p_, b1, f1)
    qt, dq = taylor_coefficient(Qt, z)
    pt, dp = taylor_coefficient(Pt, z)
    if max(dq, dp) > 0:  # pragma: no cover - the degrees are 2 over 2 here
        raise ValueError("unexpected polynomial part")
    ratios = []
    for t in qt + pt:
        if t.s != 1 and t.s not in ratios:
            ratios.append(t.s)
    if len(ratios) > len(POWERS):  # pragma: no cover - two poles at most
        raise ValueError(f"more ratios than power symbols: {ratios}")
    powers = tuple(s**r for s in ratios) if explicit_powers else POWERS[: len(ratios)]
    table = dict(zip(ratios, powers))

    def power(s):
        return table[s] if s in table else s**r

    def sums(terms, lo, offset, extra_m=0):
        return sp.Add(*[power_sum(ExpTerm(t.c, t.m + extra_m, t.s), lo, offset, power) for t in terms])

    pt0 = sp.cancel(Pt.subs(z, 0))
    total = 1 + sums(qt, 1, 0)
    q0 = 1 / total
    qr = sp.Add(*[t.c * r**t.m * power(t.s) for t in qt]) / total
    idle = f1 / (f1 + b1 * (total - 1))
    rho = lam_ * b1 / p_
    s_pt = pt0 + sums(pt, 1, -1)
    s_jpt = sums(pt, 1, -1, extra_m=1)
    pr = 1 - idle * s_pt
    loss_balance = 1 - (1 - idle) / rho
    mean_queue = idle * s_jpt + r * pr
    loss_direct = None
    if explicit_powers:
        # pi_j = E (X - (r - j))^+ / l_1 = q^(r - j) for geometric batches: sum_{j<r} p~_j q^{r-j}
        if q != 0:
            shifted = [ExpTerm(t.c, t.m, t.s / q) for t in pt]
            s_pt_pi = q**r * (pt0 + sp.Add(*[power_sum(t, 1, -1, lambda s: s**r) for t in shifted]))
        else:
            s_pt_pi = sp.Integer(0)
        loss_direct = idle * s_pt_pi + pr  # (12): sum_{j<r} p^r_j pi_j + p^r_r * 1
    mean_wait = mean_queue * b1 / (1 - idle)  # Little: W^r = N^r / throughput, throughput = (1 - P^r_e)/b_1
    return ClosedForms(qt, pt, pt0, tuple(ratios), powers, total, q0, qr, idle, pr, loss_balance, mean_queue,
                       mean_wait, rho, loss_direct)


@functools.lru_cache(maxsize=64)
def numeric_forms(lam_, p_, b1, f1) -> ClosedForms:
    """:func:`derive` at exact numbers, powers written out (every case; the direct-sum loss too)."""
    R = [sp.Rational(v.numerator, v.denominator) if hasattr(v, "denominator") else to_sympy(v)
         for v in (lam_, p_, b1, f1)]
    return derive(*R, explicit_powers=True)


def loss_in_r(model) -> sp.Expr:
    """The loss probability of a :class:`~qderive.symbolic.models.vacation_closed.ClosedFormVacationQueue` as a
    closed form in the symbol r at the model's parameters: 1 - (1 - P^r_e)/rho_bar, Theorem 1.1 (12), (A.9).

    >>> from fractions import Fraction as F
    >>> from qderive.symbolic.models.vacation_closed import ClosedFormVacationQueue
    >>> loss_in_r(ClosedFormVacationQueue.from_load(F(3, 5), 5, F(3, 200), F(3, 40), 50))
    -2*(8*175**r - 23*184**r)/(3*(8*175**r - 23*184**r + 25*200**r))
    >>> loss_in_r(ClosedFormVacationQueue.from_load(1, 5, F(3, 200), F(3, 40), 50))   # rho_bar = 1
    5*10**r/(10**r*r + 10**r + 4*9**r)
    """
    cf = numeric_forms(model.rate, model.p, model.service_mean, model.vacation_mean)
    return sp.factor(sp.cancel(sp.powsimp(cf.loss_balance)))


def _derive_case(case: ClosedFormCase) -> ClosedForms:
    sub = CASE_SUBSTITUTIONS[case]
    return derive(lam.xreplace(sub), p, 1 / mu, 1 / nu.xreplace(sub))


@functools.lru_cache(maxsize=3)
def case_forms(case: ClosedFormCase) -> ClosedForms:
    """The closed forms with symbolic lambda, p, mu, nu under ``case``'s relation (powers w_i), cached on disk."""
    return cached(f"vacation_finite_r::{case.value}", lambda: _derive_case(case))


def piecewise(name: str) -> sp.Piecewise:
    """The closed form ``name`` (a :class:`ClosedForms` field) for every parameter: a ``Piecewise`` with the
    rho_bar = 1 and double-pole branches before the generic one, powers written s_i^r."""
    branches = []
    for case in (ClosedFormCase.LOAD_ONE, ClosedFormCase.DOUBLE_POLE):
        cf = case_forms(case)
        branches.append((cf.explicit(getattr(cf, name)), CASE_CONDITIONS[case]))
    cf = case_forms(ClosedFormCase.GENERIC)
    branches.append((cf.explicit(getattr(cf, name)), True))
    return sp.Piecewise(*branches)


def measure_expressions(case: ClosedFormCase) -> tuple:
    """The measures of :data:`MEASURE_KEYS` for ``case``, rational in :data:`MEASURE_ARGS` (w_i = s_i^r)."""
    cf = case_forms(case)
    return (cf.loss_balance, cf.idle, cf.mean_queue, cf.mean_wait, cf.pr, cf.q0, cf.qr)


def ratio_expressions(case: ClosedFormCase) -> tuple:
    """(s_1, s_2) of ``case`` in :data:`SYMBOLS` (a missing ratio is 1: its power is not used)."""
    ratios = case_forms(case).ratios
    return tuple(ratios) + (sp.Integer(1),) * (len(POWERS) - len(ratios))

