"""M[X]/M/1/r with exponential multiple vacations and geometric batches: closed forms in symbolic r.

The derivation ``vacation-finite-r`` (Sopin 2013, section 1.2; ``docs/theory/other-models.md``
section A) displays the closed forms of :mod:`qderive.symbolic.closed_forms.vacation_finite_r`:
the rational transforms Q~(z), P~(z) (A.2), their partial fractions q~_j, p~_j (A.4), (A.5),
Statement 1's normaliser S~_r as a finite sum (A.6), and the measures in r: Statement 1 (A.7),
P^r_e (A.8), the loss (A.9), (A.10), p^r_r (A.11), N^r (A.12), W^r (A.13); the full closed forms in r
are the derivation's ``results`` (``S~_r``, ``P^r_e``, ``pi``, ``N^r``, ``W^r``). Every closed form is a ``Piecewise`` with the rho_bar = 1 branch (s_1 = 1:
a geometric sum becomes linear in r) and the double-pole branch (mu p = lambda + nu: s_1 =
s_2) before the generic one, so it can be evaluated at any parameters (the generic form
alone divides by 1 - s_1).

Every displayed step is computed by SymPy or evaluated as displayed by ``qderive verify``
(:func:`~qderive.derivations.framework.relation_check`): the index-form relations (A.7)-(A.12)
with q~_j, p~_j, S~_r from the closed forms and q^r_j, P^r_e, pi, p^r_r, N^r from the exact
stationary law of the CTMC built from the model definition
(:mod:`qderive.numeric.oracles.vacation`, rational GTH), at rho_bar < 1, = 1, > 1, at the
double pole and with batches of one. The checks: the closed forms generate Q~ and P~ (every
case, symbolic parameters); the Piecewise forms substituted at numbers (rho_bar = 1 included)
equal the forms derived afresh at those numbers, identically in r; the direct-sum loss (12)
equals the load-balance form identically in r; every measure equals the exact CTMC (r = 1..3)
and the general engine of ``vacation-finite`` (r = 1, 5, 50, 40 digits).

``python -m qderive.derivations.vacation_finite_closed`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import sympy as sp

from ..symbolic.capabilities import declare
from ..symbolic.closed_forms import vacation_finite_r as V
from ..symbolic.laws.gamma import Exponential
from ..symbolic.models.vacation_closed import (
    ClosedFormCase,
    ClosedFormVacationQueue,
)
from ..symbolic.numbers import to_sympy
from .framework import (
    Check,
    Derivation,
    Step,
    agreement_digits,
    exact_identity,
    relation_check,
)

__all__ = ["derivation", "codegen_forms", "identically_zero_in_r", "POINTS", "REL", "display_piecewise",
           "paper_forms"]


z, j, r = V.z, V.j, V.r
lam, p, mu, nu = V.lam, V.p, V.mu, V.nu
i = sp.Symbol("i", integer=True, nonnegative=True)
s_names = sp.symbols("s_1 s_2", positive=True)
qt, pt = sp.IndexedBase(r"\tilde{q}"), sp.IndexedBase(r"\tilde{p}")
qr, pr = sp.IndexedBase("q^{r}"), sp.IndexedBase("p^{r}")
S, Pe, loss, N, W = sp.symbols(r"\tilde{S}_r P^{r}_{e} \pi N^{r} W^{r}")
A, C, L = sp.Function("A"), sp.Function("C"), sp.Function("L")
Qt_f, Pt_f = sp.Function(r"\tilde{Q}"), sp.Function(r"\tilde{P}")

#: the model points of the evaluated relations and the checks (exact rationals): (load, batch mean, b1, f1)
POINTS = {
    "load 3/5": (F(3, 5), 5, F(3, 200), F(3, 40)),
    "load 1": (1, 4, F(1, 10), F(1, 3)),
    "double pole": (F(2, 5), 3, F(1, 50), F(1, 10)),  # mu p = 50/3 = lambda + nu = 20/3 + 10
    "load 5": (5, 2, F(1, 5), F(1, 2)),
    "batches of one": (F(4, 5), 1, F(1, 2), F(1, 3)),
}
_ORACLE_CAPACITY = {"load 3/5": 4, "load 1": 3, "double pole": 3, "load 5": 2, "batches of one": 3}


def _model(name: str, capacity: int) -> ClosedFormVacationQueue:
    load, mean, b1, f1 = POINTS[name]
    return ClosedFormVacationQueue.from_load(load, mean, b1, f1, capacity)


def _forms(model: ClosedFormVacationQueue) -> V.ClosedForms:
    return V.numeric_forms(model.rate, model.p, model.service_mean, model.vacation_mean)


# -- display ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _generic_ratios() -> tuple:
    return V.case_forms(ClosedFormCase.GENERIC).ratios


def _display_names(case: ClosedFormCase) -> dict:
    """Each ratio of ``case``'s forms -> the display symbol of the generic ratio it equals (s_1, s_2)."""
    sub = V.CASE_SUBSTITUTIONS[case]
    out = {}
    for ratio in V.case_forms(case).ratios:
        for name, generic in zip(s_names, _generic_ratios()):
            if sp.cancel(ratio - generic.xreplace(sub)) == 0:
                out[ratio] = name
                break
    return out


def _named(case: ClosedFormCase, which: str) -> tuple:
    """The terms of the probabilities q̃ⱼ or p̃ⱼ (``which`` = "qt", "pt") with each ratio shown by its display
    symbol."""
    names = _display_names(case)
    return tuple(V.ExpTerm(t.c, t.m, names.get(t.s, t.s)) for t in getattr(V.case_forms(case), which))


def _terms_display(case: ClosedFormCase, which: str) -> sp.Expr:
    return sp.Add(*[t.at(j) for t in _named(case, which)])


def _total_display(case: ClosedFormCase) -> sp.Expr:
    """The total S̃ᵣ = 1 + Σⱼ₌₁ʳ q̃ⱼ summed by :func:`power_sum` with the display symbols (the powers sʳ written
    out)."""
    return 1 + sp.Add(*[V.power_sum(t, 1, 0, lambda s: s**r) for t in _named(case, "qt")])


def _closed_display(case: ClosedFormCase, attr: str) -> sp.Expr:
    """The closed form ``attr`` (a :class:`V.ClosedForms` field) of ``case`` with s_i^r shown as powers of the
    display symbols s_1, s_2 (the coefficients stay rational in lambda, p, mu, nu)."""
    cf = V.case_forms(case)
    return cf.explicit(getattr(cf, attr)).xreplace({s**r: name**r for s, name in _display_names(case).items()})


def display_piecewise(make) -> sp.Piecewise:
    """``Piecewise`` of ``make(case)`` over the cases (load one, a double pole, the generic case), for display."""
    return sp.Piecewise(*[(make(c), V.CASE_CONDITIONS[c]) for c in (ClosedFormCase.LOAD_ONE,
                                                                     ClosedFormCase.DOUBLE_POLE)],
                        (make(ClosedFormCase.GENERIC), True))


def _paper_cases(load_one, double_pole, generic) -> sp.Piecewise:
    """A Piecewise over the cases in the order and with the conditions of :func:`display_piecewise`."""
    return sp.Piecewise((load_one, V.CASE_CONDITIONS[ClosedFormCase.LOAD_ONE]),
                        (double_pole, V.CASE_CONDITIONS[ClosedFormCase.DOUBLE_POLE]), (generic, True))


def paper_forms() -> dict:
    """(A.2)-(A.6) as the literature writes them, each proved equal to the derived form before it is printed.

    With the batch factor g = 1 - (1 - p) z and the groups lambda + mu (1 - p) = mu s_1, lambda + nu (1 - p) =
    (lambda + nu) s_2 (Sopin 2013, sec. 1.2, with q = 1 - p)::

        Q~(z) = g (mu (lambda + nu) - nu (lambda + mu (1 - p)) z) / ((mu - (lambda + mu (1 - p)) z)
                (lambda + nu - (lambda + nu (1 - p)) z)),
        P~(z) = nu g (lambda + mu - (lambda + mu (1 - p)) z) / (the same denominator);

    q~_j, p~_j a constant or geometric term per pole (the double pole: a geometric term times a linear one),
    and S~_r = 1 + sum_{j=1}^r q~_j summed in closed form: sum_{j=1}^r s^j = s (1 - s^r)/(1 - s) and
    sum_{j=1}^r j s^j = s (1 - (r + 1) s^r + r s^{r+1})/(1 - s)^2. The values of each case hold with s_1, s_2 as
    free symbols (identities, not only under the case's condition), so a case is proved on its own.
    """
    s1, s2 = s_names
    q = 1 - p
    g = 1 - q * z
    den = (mu - (lam + mu * q) * z) * (lam + nu - (lam + nu * q) * z)
    a, b, c = lam + mu * q, lam + nu * q, lam + nu - mu * p  # a = mu s_1, b = (lambda + nu) s_2 (generic case)
    b1 = mu * p + nu * q  # b at lambda = mu p
    geo = lambda s_: s_ * (1 - s_**r) / (1 - s_)  # noqa: E731  sum_{j=1}^r s^j
    lin = s1 * (1 - (r + 1) * s1**r + r * s1 ** (r + 1)) / (1 - s1) ** 2  # sum_{j=1}^r j s_1^j
    return {
        "(A.2)": sp.Eq(Qt_f(z), g * (mu * (lam + nu) - nu * a * z) / den),
        "(A.2')": sp.Eq(Pt_f(z), nu * g * (lam + mu - a * z) / den),
        "(A.4)": sp.Eq(qt[j], _paper_cases(
            mu * p / nu - mu * p**2 * (mu - nu) * s2**j / (nu * b1),
            lam * (mu + lam * j) * s1**j / (mu * p * a),
            lam * s1**j / c - lam * p * (mu - nu) * s2**j / (c * b))),
        "(A.5)": sp.Eq(pt[j], _paper_cases(
            p - mu * p**3 * (mu - nu) * s2**j / ((nu + mu * p) * b1),
            lam * (mu * p - lam) * (lam + mu * (2 - p) + lam * j) * s1**j / (mu**2 * p * a),
            lam * nu * s1**j / (mu * c) - lam * nu * p**2 * (mu - nu) * s2**j / ((lam + nu) * c * b))),
        "(A.6)": sp.Eq(S, _paper_cases(
            1 + mu * p * r / nu - mu * p**2 * (mu - nu) * geo(s2) / (nu * b1),
            1 + lam * geo(s1) / (p * a) + lam**2 * lin / (mu * p * a),
            1 + lam * geo(s1) / c - lam * p * (mu - nu) * geo(s2) / (c * b))),
    }


def _law_transforms():
    Lz = p * z / (1 - (1 - p) * z)
    arg = lam - lam * Lz
    return Lz, Exponential(1 / mu).lst(arg), Exponential(1 / nu).lst(arg)


# -- the relations evaluated as displayed -----------------------------------------------------------------

REL = {
    "(A.7)": sp.Eq(qr[j], qt[j] / S),
    "(A.8)": sp.Eq(Pe, mu / (mu + nu * (S - 1))),  # f_1/(f_1 + b_1 sum_{j=1}^r q~_j), f_1 = 1/nu, b_1 = 1/mu
    "(A.9)": sp.Eq(loss, 1 - (1 - Pe) * p * mu / lam),
    "(A.10)": sp.Eq(loss, 1 - Pe * sp.Sum(pt[j] * (1 - (1 - p) ** (r - j)), (j, 0, r - 1))),
    "(A.11)": sp.Eq(pr[r], 1 - Pe * sp.Sum(pt[j], (j, 0, r - 1))),
    "(A.12)": sp.Eq(N, Pe * sp.Sum(j * pt[j], (j, 0, r - 1)) + r * pr[r]),
    "(A.13)": sp.Eq(W, N / (mu * (1 - Pe))),
}

_TITLES = {
    "(A.7)": (r"Statement 1 in $r$: the embedded law is $\tilde q$ truncated at $r$ and renormalised by "
              r"$\tilde S_r$, $j = 0, \dots, r$", "[@sopin2013, Statement 1]"),
    "(A.8)": ("Statement 2 in $r$", "[@sopin2013, eq. (11)]"),
    "(A.9)": ("The loss probability in $r$ (the load-balance form of Theorem 1.1)", "[@sopin2013, Theorem 1]"),
    "(A.10)": (r"The same loss by the direct sum [@sopin2013, eq. (12)], with $\pi_j = (1 - p)^{r-j}$ for geometric batches",
               "[@sopin2013, eqs. (12), (15)]"),
    "(A.11)": (r"The full waiting room: the finite law is $P^{r}_{e} \tilde p_j$ below the top",
               "[@sopin2013, eqs. (14), (15)]"),
    "(A.12)": ("The mean number waiting", "[@sopin2013, eqs. (9), (10), (15)]"),
    "(A.13)": (r"The mean wait of an admitted customer, by Little's law with the throughput "
               r"$\mu (1 - P^{r}_{e}) = \lambda l_1 (1 - \pi)$", "[@sopin2013, sec. 1.2]"),
}


@functools.lru_cache(maxsize=8)
def _env(name: str) -> dict:
    """Closed-form values (q̃ⱼ, p̃ⱼ, S̃ᵣ) and the exact CTMC (qʳ, Pʳₑ, π, pʳ, Nʳ) at one point."""
    from ..numeric.oracles.vacation import solve

    model = _model(name, _ORACLE_CAPACITY[name])
    cap = model.capacity
    cf = _forms(model)
    qt_vals = [F(1)] + [_exact(cf.qt_expr(n)) for n in range(1, cap + 1)]
    pt_vals = [_exact(cf.pt0)] + [_exact(cf.pt_expr(n)) for n in range(1, cap + 1)]
    o = solve(model.queue)
    return {
        r: cap, lam: model.rate, p: model.p, mu: model.mu, nu: model.nu,
        qt: qt_vals, pt: pt_vals, S: _exact(cf.total.subs(r, cap)),
        qr: o.q, pr: o.p, Pe: o.idle, loss: o.loss, N: o.mean_queue, W: o.mean_queue / o.throughput,
    }


def _exact(expr) -> F:
    value = sp.cancel(to_sympy(expr))
    if not value.is_Rational:
        raise ValueError(f"not a rational number: {expr}")
    return F(int(value.p), int(value.q))


def _hook(label: str):
    """Evaluate the displayed relation ``label`` at every point (closed forms vs the exact CTMC)."""

    def run(digits):
        worst = math.inf
        for name in POINTS:
            env = _env(name)
            ranges = {j: range(env[r] + 1)} if label == "(A.7)" else {}
            _, agreed, _ = relation_check(REL[label], lambda d, env=env, ranges=ranges: (env, ranges))(digits)
            worst = min(worst, agreed)
        return worst >= digits - 5, worst, f"evaluated as displayed at {', '.join(POINTS)} (exact CTMC, r = 2..4)"

    return run


# -- checks -----------------------------------------------------------------------------------------------------


def identically_zero_in_r(expr: sp.Expr) -> bool:
    """Is ``expr`` (a rational function of exponentials b^r and powers of r) zero for every r >= 1?

    The numerator of ``together(expr)`` is an exponential polynomial sum_i P_i(r) b_i^r with
    positive bases; it has at most sum_i (deg P_i + 1) - 1 real zeros unless it vanishes
    identically (Polya-Szego, Descartes' rule for exponential sums), so exact zeros at that
    many integers prove it.
    """
    num = sp.numer(sp.together(expr))
    num = sp.powsimp(sp.expand(num), combine="exp")
    bound = 0
    for term in sp.Add.make_args(num):
        # a term c r^m b^r counts m + 1 in the zero bound (Polya-Szego)
        m = sum(int(f.exp) if f.is_Pow and f.base == r else (1 if f == r else 0) for f in sp.Mul.make_args(term))
        bound += m + 1
    return all(sp.cancel(num.subs(r, rv)) == 0 for rv in range(1, bound + 1))


def _check_generating(digits):
    """For every case, with symbolic parameters: Σⱼ q̃ⱼ zʲ = Q̃(z) and Σⱼ p̃ⱼ zʲ = P̃(z)."""

    def gf(terms, first):
        out = first
        for t in terms:  # sum_{j>=1} c s^j z^j = c s z / (1 - s z); with j^1: c s z / (1 - s z)^2
            out += t.c * t.s * z / (1 - t.s * z) ** (1 + t.m)
        return out

    for case in ClosedFormCase:
        sub = V.CASE_SUBSTITUTIONS[case]
        cf = V.case_forms(case)
        Qt, Pt = V.transforms(lam.xreplace(sub), p, 1 / mu, 1 / nu.xreplace(sub))
        if not (exact_identity(gf(cf.qt, 1), Qt) and exact_identity(gf(cf.pt, cf.pt0), Pt)):
            return False, None, f"{case.value}: the coefficients do not generate Q̃ or P̃"
    return True, math.inf, ("Σⱼ q̃ⱼ zʲ = Q̃(z) and Σⱼ p̃ⱼ zʲ = P̃(z) with symbolic λ, p, μ, ν, in the generic case, "
                            "at load one and with a double pole")


def _check_display(digits):
    """The displayed (A.4)-(A.6), (A.12'), (A.13') (ratios shown as s_1, s_2) are the evaluated closed forms,
    every case."""
    for case in ClosedFormCase:
        cf = V.case_forms(case)
        back = {name: ratio for ratio, name in _display_names(case).items()}
        pairs = ((_total_display(case), cf.explicit(cf.total)),
                 (_terms_display(case, "qt"), cf.qt_expr()), (_terms_display(case, "pt"), cf.pt_expr()),
                 *((_closed_display(case, a), cf.explicit(getattr(cf, a))) for a in ("mean_queue", "mean_wait")))
        for shown, evaluated in pairs:
            if not exact_identity(sp.powsimp(shown.xreplace(back)), sp.powsimp(evaluated)):
                return False, None, f"{case.value}: a displayed closed form differs from the evaluated one"
    return True, math.inf, ("(A.4), (A.5), (A.6), (A.12'), (A.13') as displayed == the evaluated closed forms, "
                            "symbolic r, every case")


_PIECEWISE_NAMES = ("total", "idle", "pr", "loss_balance", "mean_queue", "mean_wait", "q0", "qr")


def _check_piecewise_substitution(digits):
    """The printed Piecewise forms at each point's numbers (rho_bar = 1 and the double pole included) equal the
    forms derived afresh at those numbers, identically in r; neither is ever NaN."""
    for name in POINTS:
        model = _model(name, 1)
        cf = _forms(model)
        values = {lam: _sym(model.rate), p: _sym(model.p), mu: _sym(model.mu), nu: _sym(model.nu)}
        for attr in _PIECEWISE_NAMES:
            # xreplace: the numbers put in every branch and condition, then the Piecewise keeps the first branch
            # whose condition is True (what subs gives here, ~10x faster: no re-evaluation at each level)
            got = V.piecewise(attr).xreplace(values)
            if got.has(sp.nan, sp.zoo, sp.oo) or isinstance(got, sp.Piecewise):
                return False, None, f"{name}: the Piecewise {attr} does not evaluate ({got})"
            if not identically_zero_in_r(got - getattr(cf, attr)):
                return False, None, f"{name}: the Piecewise {attr} differs from the numeric derivation"
    return True, math.inf, (f"{', '.join(_PIECEWISE_NAMES)}: Piecewise at the numbers == derived at the numbers, "
                            f"identically in r, at {', '.join(POINTS)}")


def _sym(x: F):
    return sp.Rational(x.numerator, x.denominator)


def _check_loss_forms(digits):
    """Theorem 1.1: the direct-sum and load-balance closed forms are equal as functions of r."""
    for name in POINTS:
        cf = _forms(_model(name, 1))
        if not identically_zero_in_r(cf.loss_direct - cf.loss_balance):
            return False, None, f"the two loss forms differ at {name}"
    return True, math.inf, ("loss by direct sum (12) == loss by load balance identically in r (exponential-sum "
                            "zero count), at " + ", ".join(POINTS))


def _check_ctmc(digits):
    """Every measure of the engine (exact closed forms) at r = 1..3 == the exact CTMC of the model definition."""
    from ..numeric.oracles.vacation import solve

    for name in POINTS:
        for cap in (1, 2, 3):
            model = _model(name, cap)
            e = model.evaluate(30)
            o = solve(model.queue)
            exact = _exact_values(model)
            pairs = {"idle_probability": o.idle, "loss_probability": o.loss, "q0": o.q[0], "qr": o.q[-1],
                     "pr": o.p[-1], "mean_queue_length": o.mean_queue,
                     "mean_wait": o.mean_queue / o.throughput}  # Little with the CTMC's service-completion flow
            for key, want in pairs.items():
                if exact[key] != want:
                    return False, None, f"{name}, r = {cap}: {key} = {exact[key]} != {want} (CTMC)"
            if e.confirmed_digits != math.inf:
                return False, None, f"{name}: the engine does not report its result as exact"
    return True, math.inf, "q^r_0, q^r_r, P^r_e, loss, p^r_r, N^r, W^r exactly equal to the exact CTMC, r = 1, 2, 3"


def _exact_values(model) -> dict:
    from ..numeric.engines.vacation_closed import exact_measures

    return exact_measures(model)


def _check_engine(digits):
    """Closed forms at r = 1, 5, 50 (exact) vs the general engine of vacation-finite at ``digits``."""
    worst = math.inf
    need = min(digits, 40)
    for name in POINTS:
        for cap in (1, 5, 50):
            model = _model(name, cap)
            exact = _exact_values(model)
            general = model.queue.evaluate(need).as_dict()
            for key, want in exact.items():
                worst = min(worst, agreement_digits(general[key], want))
    return worst >= need, worst, (f"every measure at r = 1, 5, 50 and {', '.join(POINTS)} vs the engine of "
                                  f"vacation-finite (need {need} digits)")


# -- the derivation ---------------------------------------------------------------------------------------------


def _steps() -> tuple[Step, ...]:
    Lz, Az, Cz = _law_transforms()
    Qt, Pt = V.transforms(lam, p, 1 / mu, 1 / nu)
    ratios = _generic_ratios()
    # the ratios as the literature writes them: s_1 = 1 - p + lambda/mu, s_2 = (lambda + nu (1 - p))/(lambda + nu)
    paper_ratios = (1 - p + lam / mu, (lam + nu * (1 - p)) / (lam + nu))
    ratio_steps = tuple(Step(f"(A.3{chr(ord('a') + n)})", r"A ratio of the geometric sequences (a pole of "
                             r"$\tilde Q$ or $\tilde P$)", sp.Eq(name, ratio), "", computed=True,
                             paper=sp.Eq(name, paper_ratios[n]) if len(ratios) == 2 else None)
                        for n, (name, ratio) in enumerate(zip(s_names, ratios)))
    # (A.1) as the literature writes it: L(z) = p z / (1 - (1 - p) z), A(z) = mu (1 - (1 - p) z) /
    # (mu (1 - (1 - p) z) + lambda (1 - z)), C(z) the same with nu
    geo = 1 - (1 - p) * z
    paper_laws = sp.And(sp.Eq(L(z), p * z / geo), sp.Eq(A(z), mu * geo / (mu * geo + lam * (1 - z))),
                        sp.Eq(C(z), nu * geo / (nu * geo + lam * (1 - z))))
    qt_pw = display_piecewise(lambda c: _terms_display(c, "qt"))
    pt_pw = display_piecewise(lambda c: _terms_display(c, "pt"))
    total_pw = display_piecewise(_total_display)
    papers = paper_forms()
    evaluated = tuple(Step(label, _TITLES[label][0], REL[label], _TITLES[label][1], check=_hook(label))
                      for label in REL)
    # the closed forms of N^r and W^r in r (pages of machine expansion) are results, not displays: (A.12), (A.13)
    # give their structure, _check_display proves the closed forms equal to the evaluated ones
    return (
        Step("(A.1)", r"Geometric batches (mean $1/p$), exponential service (rate $\mu$) and vacations (rate "
             r"$\nu$): the numbers of customers arriving during a service and during a vacation",
             sp.And(sp.Eq(L(z), Lz), sp.Eq(A(z), Az), sp.Eq(C(z), Cz)), "",
             provenance="docs/theory/other-models.md section A", computed=True, paper=paper_laws),
        Step("(A.2)", r"$\tilde Q(z) = (A(z) - z C(z))/(A(z) - z)$ is rational (the factor $1 - z$ cancels); "
             "unnormalised", sp.Eq(Qt_f(z), Qt), "[@sopin2013, eq. (3)]", computed=True, paper=papers["(A.2)"]),
        Step("(A.2')", r"$\tilde P(z)$ is rational", sp.Eq(Pt_f(z), Pt), "[@sopin2013, eq. (13)]",
             computed=True, paper=papers["(A.2')"]),
        *ratio_steps,
        Step("(A.4)", r"Partial fractions give $\tilde q_j$ for $j \ge 1$ ($\tilde q_0 = 1$); $s_1 = 1$ when "
             r"$\bar\rho = 1$, and $s_1 = s_2$ at the double pole $\mu p = \lambda + \nu$", sp.Eq(qt[j], qt_pw),
             "[@sopin2013, sec. 1.2]", computed=True, paper=papers["(A.4)"]),
        Step("(A.5)", r"$\tilde p_j$ for $j \ge 1$ ($\tilde p_0 = \tilde P(0)$)", sp.Eq(pt[j], pt_pw),
             "[@sopin2013, eq. (13)]", computed=True, paper=papers["(A.5)"]),
        Step("(A.6)", r"The normaliser of Statement 1, $\tilde S_r = \sum_{j=0}^{r} \tilde q_j$, as a finite sum in "
             r"every case (at $\bar\rho = 1$ the sum of the sequence with $s_1 = 1$ is linear in $r$)",
             sp.Eq(S, total_pw), "[@sopin2013, Statement 1]", computed=True, paper=papers["(A.6)"]),
        *evaluated,
    )


@functools.lru_cache(maxsize=1)
@declare(independent={name: "the closed forms are in symbols (lambda, l_1, b_1, f_1 and r)" for name in
                      ("batch_mean", "service_mean", "vacation_mean", "rate", "capacity")})
def derivation() -> Derivation:
    """The registered derivation ``vacation-finite-r``."""
    return Derivation(
        name="vacation-finite-r",
        title="$M^{[X]}/M/1/r$ with exponential vacations and geometric batches: closed forms in $r$",
        source="[@sopin2013, sec. 1.2 and ch. 2]", provenance=("docs/theory/other-models.md section A", __name__),
        steps=_steps(),
        checks=(
            Check("$\\tilde q_j$, $\\tilde p_j$ generate $\\tilde Q(z)$, $\\tilde P(z)$: symbolic parameters, "
                  "every case",
                  _check_generating, "(A.4)"),
            Check("(A.4)-(A.6) and the primed forms of (A.12), (A.13) as displayed equal the evaluated closed forms, "
                  "every case",
                  _check_display, "(A.6)"),
            Check("the piecewise forms at numbers ($\\bar\\rho = 1$, double pole) equal those derived at the numbers, "
                  "in $r$",
                  _check_piecewise_substitution, "(A.9)"),
            Check("loss: the direct sum of [@sopin2013, eq. (12)] equals the load balance, identically in $r$",
                  _check_loss_forms, "(A.10)"),
            Check("closed forms vs exact CTMC, $r = 1, 2, 3$", _check_ctmc, "(A.7)"),
            Check("closed forms at $r = 1, 5, 50$ vs the finite-room engine (40 digits)", _check_engine, "(A.8)"),
        ),
        results={"q~_j": display_piecewise(lambda c: _terms_display(c, "qt")),
                 "S~_r": V.piecewise("total"), "P^r_e": V.piecewise("idle"), "pi": V.piecewise("loss_balance"),
                 "N^r": V.piecewise("mean_queue"), "W^r": V.piecewise("mean_wait")},
        notes=(
            r"The ratio $s_1 = q + \lambda/\mu$ is below 1 exactly when $\bar\rho < 1$; for $\bar\rho \ge 1$ the same "
            r"expressions hold ($\tilde q_j$ grows geometrically, and every finite $r$ is well defined). Each closed "
            r"form distinguishes three cases: $\bar\rho = 1$ ($s_1 = 1$, where a geometric sum becomes linear in "
            r"$r$), the double pole $\mu p = \lambda + \nu$ ($s_1 = s_2$), and the generic case.",
            r"These forms are evaluated exactly in rational arithmetic; in double precision "
            r"$p^{r}_{r} = 1 - P^{r}_{e} \sum_j \tilde p_j$ cancels at light load and the load-balance loss has a "
            r"relative error of about $\varepsilon/\pi$, so the cut recursion is used there instead.",
        ),
        recursions=(),
    )


# -- generated code ----------------------------------------------------------------------------------------


@declare(independent={name: "an argument of the generated function" for name in ("batch_mean", "service_mean", "vacation_mean", "rate", "capacity")})
def codegen_forms(request=None) -> dict:
    """Generated code for the measures of ``eval``: the module of ``qderive codegen vacation-finite`` for
    geometric batches, exponential service and exponential vacations (multiple vacations, partial admission).

    The closed forms in r are not printed as float64 code on purpose: p^r_r = 1 - P^r_e sum_{j<r} p~_j
    ((14), (15)) cancels at light load and the partial fractions branch at rho_bar = 1 and at the double
    pole; the recursion (2b) has neither problem and agrees with these closed forms (tested).
    """
    from ..symbolic.models.vacation import CodegenFamilies
    from .export.codegen_vacation import forms

    generated = forms(CodegenFamilies(batch="geometric", service="exp", vacation="exp"))
    return {k: generated[k] for k in V.MEASURE_KEYS}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
