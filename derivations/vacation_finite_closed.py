"""M[X]/M/1/r with exponential multiple vacations and geometric batches: closed forms in symbolic r.

The thesis's simplest Markov model (section 1.2; ``spec/other-models.md`` section A):
geometric batches on {1, 2, ...} with mean 1/p, exponential service (rate mu = 1/b_1) and
exponential vacations (rate nu = 1/f_1). Every transform is rational:

    L(z) = p z / (1 - q z),   lambda - lambda L(z) = lambda (1 - z) / (1 - q z),   q = 1 - p,
    Q~(z) = (A(z) - z C(z)) / (A(z) - z)
          = (1 - q z)(mu nu + lambda mu - (mu nu q + lambda nu) z) / ((mu - (mu q + lambda) z)(nu + lambda - (nu q + lambda) z)),
    P~(z) = (1 - q z)(mu + lambda - (mu q + lambda) z) nu / ((mu - (mu q + lambda) z)(nu + lambda - (nu q + lambda) z)),

so partial fractions give q~_j and p~_j as sums of two geometric sequences with ratios
q + lambda/mu (below 1 iff rho_bar < 1) and (nu q + lambda)/(nu + lambda) (named s_1, s_2
in the derivation's steps), and finite geometric sums give Statement 1's normaliser, P^r_e (11) and the loss (12) as
closed-form expressions in r, valid for every load (the denominators never vanish: q~ is
defined for every rho_bar). The loss is derived twice -- by the load balance and by the
direct sum of Theorem 1.1, 1 - P^r_e sum_{j<r} p~_j (1 - q^{r-j}) (pi_j = q^{r-j} for
geometric batches) -- and the two are proven equal as functions of r.

The derivation ``vacation-finite-r`` checks the closed forms against the numeric engine
(:mod:`qderive.numeric.vacation`) at r = 1, 5, 50 to 40 digits, for rho_bar < 1, = 1 and
> 1, and against the exact CTMC at small r.

Command line::

    qderive eval vacation-finite-r --batch-mean 5 --service-mean 0.015 --vacation-mean 0.075 \\
        (--load 0.6 | --rate 8) --capacity 50 [--digits 40] --json
"""

from __future__ import annotations

import argparse
import functools
import math
from dataclasses import dataclass

import sympy as sp

from qderive.numeric.backend import backend_for, mp_backend
from qderive.numeric.vacation import FiniteSweep, VacationQueue
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError, exact, require_positive

from .cli_args import parse_number, parse_positive_int
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits, exact_identity
from .vacation_finite_oracle import oracle_exact

__all__ = ["COMMAND", "ClosedForms", "closed_forms", "derivation", "taylor_coefficient"]

z = sp.Symbol("z")
j = sp.Symbol("j", integer=True, nonnegative=True)
r = sp.Symbol("r", integer=True, positive=True)
lam_s, p_s, mu_s, nu_s = sp.symbols("lambda p mu nu", positive=True)


# -- coefficients of a rational function in closed form ----------------------------------


@dataclass(frozen=True)
class ExpTerm:
    """c * j^m * s^j: one term of an exponential polynomial in the index j."""

    c: sp.Expr
    m: int
    s: sp.Expr

    def at(self, n) -> sp.Expr:
        return self.c * n**self.m * self.s**n


def taylor_coefficient(F: sp.Expr, var: sp.Symbol) -> tuple[list[ExpTerm], int]:
    """(terms, d): the n-th Taylor coefficient at 0 of the rational function F is
    sum(t.at(n) for t in terms) for every n > d.

    Partial fractions (``sympy.apart``): a term c / (alpha + beta z)^k contributes
    c alpha^{-k} binomial(n + k - 1, k - 1) (-beta/alpha)^n; the polynomial part (degree d)
    only changes the coefficients n <= d, which the caller takes from F itself.
    """
    n = sp.Dummy("n")
    terms: list[ExpTerm] = []
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
            terms.append(ExpTerm(sp.factor(num * cm / (const * alpha**k)), m, ratio))
    return terms, degree


def _value(terms, n) -> sp.Expr:
    return sp.Add(*[t.at(n) for t in terms])


def power_sum(term: ExpTerm, lo, hi) -> sp.Expr:
    """sum_{j=lo}^{hi} c j^m s^j in closed form (hi - lo + 1 >= 0 terms).

    Generic s: (x d/dx)^m of (x^lo - x^(hi+1)) / (1 - x) at x = s. A numeric s = 1 gives the
    sum of the polynomial c j^m.
    """
    c, m, s = term.c, term.m, term.s
    if s == 1:
        return c * sp.summation(j**m, (j, lo, hi))
    x = sp.Dummy("x")
    g = (x**lo - x ** (hi + 1)) / (1 - x)
    for _ in range(m):
        g = x * sp.diff(g, x)
    return c * g.subs(x, s)


def _sum(terms, lo, hi) -> sp.Expr:
    return sp.Add(*[power_sum(t, lo, hi) for t in terms])


@dataclass(frozen=True)
class ClosedForms:
    """Closed forms in r (``r`` is the module's symbol) of the finite model, every load.

    ``qt`` (q~_j for j >= 1 as exponential-polynomial terms; q~_0 = 1), ``pt`` (p~_j for j >= 1)
    and ``pt0`` = p~_0; ``total`` = sum_{j=0}^{r} q~_j; ``q0`` = q^r_0, ``qr`` = q^r_r
    (Statement 1); ``idle`` = P^r_e (11); ``pr`` = p^r_r = 1 - P^r_e sum_{j<r} p~_j ((14), (15));
    ``loss_balance`` = 1 - (1 - P^r_e)/rho_bar; ``loss_direct`` = sum_j p^r_j pi_j (12);
    ``mean_queue`` = P^r_e sum_{j<r} j p~_j + r p^r_r; ``rho_bar``.
    """

    qt: tuple
    pt: tuple
    pt0: sp.Expr
    total: sp.Expr
    q0: sp.Expr
    qr: sp.Expr
    idle: sp.Expr
    pr: sp.Expr
    loss_balance: sp.Expr
    loss_direct: sp.Expr
    mean_queue: sp.Expr
    rho_bar: sp.Expr

    def qt_expr(self, n=j) -> sp.Expr:
        return _value(self.qt, n)

    def pt_expr(self, n=j) -> sp.Expr:
        return _value(self.pt, n)


def transforms(lam, p, b1, f1) -> tuple[sp.Expr, sp.Expr]:
    """(Q~(z), P~(z)) for geometric batches (mean 1/p), exponential service and vacation, factored."""
    mu, nu, q = 1 / b1, 1 / f1, 1 - p
    L = p * z / (1 - q * z)
    A = mu / (mu + lam - lam * L)
    C = nu / (nu + lam - lam * L)
    Qt = sp.factor(sp.cancel((A - z * C) / (A - z)))
    Pt = sp.factor(sp.cancel((1 - z) * (1 - C) / (lam * f1 * (1 - L) * (A - z))))
    return Qt, Pt


def closed_forms(lam, p, b1, f1) -> ClosedForms:
    """Derive the closed forms for batch rate ``lam``, geometric parameter ``p`` (mean 1/p),
    mean service ``b1`` and mean vacation ``f1`` (symbols or exact numbers).

    With symbols the generic case (ratios != 1, distinct poles) is derived; with numbers
    the sums also cover rho_bar = 1 (a ratio equal to 1) and coinciding poles exactly.
    """
    q = 1 - p
    Qt, Pt = transforms(lam, p, b1, f1)
    qt, dq = taylor_coefficient(Qt, z)
    pt, dp = taylor_coefficient(Pt, z)
    if max(dq, dp) > 0:  # pragma: no cover - the degrees are 2 over 2 here
        raise ValueError("unexpected polynomial part")
    pt0 = sp.cancel(Pt.subs(z, 0))
    total = 1 + _sum(qt, 1, r)
    q0 = 1 / total
    qr = _value(qt, r) / total
    idle = f1 / (f1 + b1 * (total - 1))
    rho = lam * b1 / p
    s_pt = pt0 + _sum(pt, 1, r - 1)
    # pi_j = E (X - (r - j))^+ / l_1 = q^(r - j) for geometric batches
    s_pt_pi = q**r * (pt0 + _sum([ExpTerm(t.c, t.m, t.s / q) for t in pt], 1, r - 1)) if q != 0 else pt0 * 0
    s_jpt = _sum([ExpTerm(t.c, t.m + 1, t.s) for t in pt], 1, r - 1)
    pr = 1 - idle * s_pt
    loss_direct = idle * s_pt_pi + pr  # (12): sum_{j<r} p^r_j pi_j + p^r_r * 1
    loss_balance = 1 - (1 - idle) / rho
    mean_queue = idle * s_jpt + r * pr
    return ClosedForms(tuple(qt), tuple(pt), pt0, total, q0, qr, idle, pr, loss_balance, loss_direct, mean_queue, rho)


def _model_params(model: VacationQueue):
    return model.lam, model.batch.p, model.service.mean, model.vacation.mean


@functools.lru_cache(maxsize=32)
def closed_forms_for(model: VacationQueue) -> ClosedForms:
    """:func:`closed_forms` at the numbers of ``model`` (geometric batches, exponential laws)."""
    if not (isinstance(model.batch, B.Geometric) and isinstance(model.service, T.Exponential)
            and isinstance(model.vacation, T.Exponential)):
        raise ParameterError("closed forms in r need geometric batches, exponential service and exponential vacations")
    return closed_forms(*_model_params(model))


def evaluate_closed(cf: ClosedForms, capacity: int) -> dict:
    """The closed forms at an integer capacity, as exact rationals."""
    at = {r: sp.Integer(capacity)}
    out = {}
    for name in ("q0", "qr", "idle", "pr", "loss_balance", "loss_direct", "mean_queue"):
        out[name] = sp.cancel(getattr(cf, name).subs(at))
    return out


# -- the derivation -------------------------------------------------------------------


def _symbolic() -> ClosedForms:
    return closed_forms(lam_s, p_s, 1 / mu_s, 1 / nu_s)


def _ratio_symbols(cf: ClosedForms) -> dict:
    """The distinct ratios of q~_j and p~_j, named s_1, s_2, ... for display."""
    ratios = []
    for t in cf.qt + cf.pt:
        if t.s not in ratios:
            ratios.append(t.s)
    return {ratio: sp.Symbol(f"s_{n + 1}", positive=True) for n, ratio in enumerate(ratios)}


def _steps(cf: ClosedForms) -> tuple[Step, ...]:
    qt_, pt_, Pe, pi = sp.IndexedBase(r"\tilde{q}"), sp.IndexedBase(r"\tilde{p}"), sp.Symbol("P^{r}_{e}"), sp.Symbol(r"\pi")
    S = sp.Symbol(r"\tilde{S}_r")
    names = _ratio_symbols(cf)
    shown = [ExpTerm(t.c, t.m, names[t.s]) for t in cf.qt]
    Qt, Pt = transforms(lam_s, p_s, 1 / mu_s, 1 / nu_s)
    ratio_steps = tuple(Step(f"(A.3{chr(ord('a') + n)})", "a ratio of the geometric sequences (a pole of Q~ or P~)",
                             sp.Eq(sym, ratio), "partial fractions") for n, (ratio, sym) in enumerate(names.items()))
    return (
        Step("(A.1)", "geometric batches (mean 1/p), exponential service (rate mu) and vacation (rate nu)",
             sp.Eq(sp.Function("A")(z), mu_s / (mu_s + lam_s * (1 - z) / (1 - (1 - p_s) * z))),
             "spec/other-models.md section A"),
        Step("(A.2)", "Q~(z) = (A - zC)/(A - z) is rational (the factor 1 - z cancels)",
             sp.Eq(sp.Function(r"\tilde{Q}")(z), Qt), "Sopin 2013, eq. (3), unnormalised"),
        Step("(A.2')", "P~(z) of (13') is rational", sp.Eq(sp.Function(r"\tilde{P}")(z), Pt), "Sopin 2013, eq. (13)"),
        *ratio_steps,
        Step("(A.4)", "partial fractions: q~_j for j >= 1 (q~_0 = 1), two geometric sequences",
             sp.Eq(qt_[j], _value(shown, j)), "Sopin 2013, section 1.2"),
        Step("(A.5)", "p~_j for j >= 1 (p~_0 = P~(0))",
             sp.Eq(pt_[j], _value([ExpTerm(t.c, t.m, names[t.s]) for t in cf.pt], j)), "Sopin 2013, eq. (13)"),
        Step("(A.6)", "Statement 1's normaliser as a finite geometric sum (s_i != 1)",
             sp.Eq(S, 1 + _sum(shown, 1, r)), "Sopin 2013, Statement 1"),
        Step("(A.7)", "Statement 1 in r", sp.Eq(sp.IndexedBase("q^{r}")[j], qt_[j] / S), "Sopin 2013, Statement 1"),
        Step("(A.8)", "Statement 2 in r", sp.Eq(Pe, 1 / (1 + (S - 1) * nu_s / mu_s)), "Sopin 2013, eq. (11)"),
        Step("(A.9)", "loss probability in r (load balance form of Theorem 1.1)",
             sp.Eq(pi, 1 - (1 - Pe) * p_s * mu_s / lam_s), "Sopin 2013, Theorem 1"),
        Step("(A.10)", "the same loss by the direct sum (12) with pi_j = (1 - p)^{r-j}",
             sp.Eq(pi, 1 - Pe * sp.Sum(pt_[j] * (1 - (1 - p_s) ** (r - j)), (j, 0, r - 1))),
             "Sopin 2013, eq. (12), (15)"),
    )


def _identically_zero_in_r(expr: sp.Expr) -> bool:
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


_POINTS = {
    "rho_bar = 3/5": (sp.Rational(3, 5), 5, sp.Rational(3, 200), sp.Rational(3, 40)),
    "rho_bar = 1": (1, 4, sp.Rational(1, 10), sp.Rational(1, 3)),
    "rho_bar = 5": (5, 2, sp.Rational(1, 5), sp.Rational(1, 2)),
}
_CAPACITIES = (1, 5, 50)


def _point_model(name, capacity):
    load, mean, b1, f1 = _POINTS[name]
    return VacationQueue.from_load(load, B.Geometric(mean), T.Exponential(b1), T.Exponential(f1), capacity)


def _check_engine(digits):
    """Closed forms at r = 1, 5, 50 (exact rationals) vs the numeric engine at digits + 10."""
    worst = math.inf
    bk = mp_backend(digits + 10)
    for name in _POINTS:
        model = _point_model(name, 1)
        cf = closed_forms_for(model)
        sweep = FiniteSweep(model, bk)
        for cap in _CAPACITIES:
            ex = evaluate_closed(cf, cap)
            m = sweep.at(cap)
            with bk:
                pairs = [(m.q[0], ex["q0"]), (m.q[-1], ex["qr"]), (m.idle_probability, ex["idle"]),
                         (m.p[-1], ex["pr"]), (m.loss_probability, ex["loss_direct"]),
                         (m.loss_probability, ex["loss_balance"]), (m.mean_queue_length, ex["mean_queue"])]
                for got, want in pairs:
                    worst = min(worst, agreement_digits(got, bk.num(want)))
    need = min(digits, 40)
    return worst >= need, worst, (f"q^r_0, q^r_r, P^r_e, p^r_r, loss (both forms), N^r at r = 1, 5, 50 and "
                                  f"{', '.join(_POINTS)} vs the engine (need {need} digits)")


def _check_loss_forms(digits):
    """Theorem 1.1: the direct-sum and load-balance closed forms are equal as functions of r."""
    for name in _POINTS:
        cf = closed_forms_for(_point_model(name, 1))
        if not _identically_zero_in_r(cf.loss_direct - cf.loss_balance):
            return False, None, f"the two loss forms differ at {name}"
    return True, None, ("loss by direct sum (12) == loss by load balance identically in r (exponential-sum "
                        "zero count), at " + ", ".join(_POINTS))


def _check_ctmc(digits):
    """Closed forms at r = 1..3 vs the exact CTMC of the model definition."""
    for name in _POINTS:
        cf = closed_forms_for(_point_model(name, 1))
        for cap in (1, 2, 3):
            ora = oracle_exact(_point_model(name, cap))
            ex = evaluate_closed(cf, cap)
            for got, want in ((ex["idle"], ora.idle), (ex["loss_direct"], ora.loss), (ex["q0"], ora.q[0]),
                              (ex["pr"], ora.p[-1]), (ex["mean_queue"], ora.mean_queue)):
                if not exact_identity(got, want):
                    return False, None, f"{name}, r = {cap}: {got} != {want}"
    return True, None, "P^r_e, loss, q^r_0, p^r_r, N^r exactly equal to the exact CTMC, r = 1, 2, 3"


def _check_symbolic_generating(digits):
    """The symbolic q~_j, p~_j (j >= 1) are the coefficients of Q~(z), P~(z) (summed geometric series)."""
    cf = _symbolic()
    Qt, Pt = transforms(lam_s, p_s, 1 / mu_s, 1 / nu_s)

    def gf(terms, first):
        out = first
        for t in terms:  # sum_{j>=1} c s^j z^j = c s z / (1 - s z); with j: c s z / (1 - s z)^2
            out += t.c * t.s * z / (1 - t.s * z) ** (1 + t.m)
        return out

    ok = exact_identity(gf(cf.qt, 1), Qt) and exact_identity(gf(cf.pt, cf.pt0), Pt)
    return ok, None, "sum_j q~_j z^j == Q~(z) and sum_j p~_j z^j == P~(z) with symbolic lambda, p, mu, nu"


def derivation() -> Derivation:
    cf = _symbolic()
    return Derivation(
        name="vacation-finite-r",
        title="M[X]/M/1/r with exponential vacations, geometric batches: closed forms in r",
        source="Sopin E. S. (2013), thesis, section 1.2 and chapter 2; spec/other-models.md section A",
        steps=_steps(cf),
        checks=(
            Check("q~_j closed form generates Q~(z), symbolic parameters", _check_symbolic_generating, "(A.3)"),
            Check("loss: direct sum (12) == load balance, identically in r", _check_loss_forms, "(A.8)"),
            Check("closed forms vs exact CTMC, r = 1..3", _check_ctmc, "(A.6)"),
            Check("closed forms at r = 1, 5, 50 vs numeric engine (40 digits)", _check_engine, "(A.7)"),
        ),
        results={"q~_j": cf.qt_expr(), "p~_j": cf.pt_expr(), "P^r_e": cf.idle, "pi": cf.loss_balance},
        notes=(
            "The ratio q + lambda/mu is < 1 exactly when rho_bar < 1; for rho_bar >= 1 the same expressions "
            "hold (q~_j grows geometrically, every finite r is well defined). With symbolic parameters the "
            "generic case (ratios != 1, distinct poles) is shown; numeric parameters are derived afresh and "
            "cover rho_bar = 1 (ratio 1) and coinciding poles exactly.",
        ),
    )


# -- command line ---------------------------------------------------------------------


class VacationFiniteClosedCommand(ModelCommand):
    name = "vacation-finite-r"
    summary = "M[X]/M/1/r, exponential vacations, geometric batches: closed forms in r evaluated at --capacity"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--batch-mean", required=True, metavar="M", help="mean of the geometric batch size (>= 1)")
        parser.add_argument("--service-mean", required=True, metavar="B", help="mean exponential service time b1")
        parser.add_argument("--vacation-mean", required=True, metavar="F", help="mean exponential vacation time f1")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--load", metavar="RHO", help="offered load rho_bar = lambda l1 b1")
        group.add_argument("--rate", metavar="LAMBDA", help="batch arrival rate lambda")
        parser.add_argument("--capacity", required=True, metavar="R", help="waiting room r (>= 1)")

    def build(self, args) -> VacationQueue:
        batch = B.Geometric(parse_number(args.batch_mean, "batch-mean"))
        service = T.Exponential(parse_number(args.service_mean, "service-mean"))
        vacation = T.Exponential(parse_number(args.vacation_mean, "vacation-mean"))
        cap = parse_positive_int(args.capacity, "capacity")
        if args.load is not None:
            load = require_positive(exact(parse_number(args.load, "load"), "load"), "load")
            return VacationQueue.from_load(load, batch, service, vacation, cap)
        rate = parse_number(args.rate, "rate")
        return VacationQueue(rate, batch, service, vacation, cap)

    def evaluate(self, model: VacationQueue, digits, args) -> Evaluation:
        cf = closed_forms_for(model.with_capacity(1))
        ex = evaluate_closed(cf, model.capacity)
        bk = backend_for(digits)
        with bk:
            measures = {
                "loss_probability": bk.num(ex["loss_direct"]),
                "idle_probability": bk.num(ex["idle"]),
                "mean_queue_length": bk.num(ex["mean_queue"]),
                "pr": bk.num(ex["pr"]),
                "q0": bk.num(ex["q0"]),
                "qr": bk.num(ex["qr"]),
            }
        params = {"batch": repr(model.batch), "service": repr(model.service), "vacation": repr(model.vacation),
                  "rate": model.lam, "load": model.rho_bar, "capacity": model.capacity}
        return Evaluation(self.name, params, measures, [f"loss(r) = {sp.simplify(cf.loss_balance)}"])

    def derivation(self):
        return derivation()

    def codegen_forms(self, args) -> dict:
        """Generated code for the measures of ``eval``: the recursion module of ``vacation-finite`` with
        geometric batches and exponential service and vacations.

        The closed forms in r are not printed as float64 code on purpose: p^r_r = 1 - P^r_e sum_{j<r} p~_j
        ((14), (15)) cancels at light load, and the partial fractions have a removable singularity at
        rho_bar = 1; the recursion (2b) has neither problem and agrees with these closed forms (tested).
        """
        import argparse

        from .codegen_vacation import recursion_forms

        forms = recursion_forms(argparse.Namespace(batch="geometric", service="exp", vacation="exp"))
        return {k: forms[k] for k in ("loss_probability", "idle_probability", "mean_queue_length", "pr", "q0", "qr")}


COMMAND = VacationFiniteClosedCommand()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
