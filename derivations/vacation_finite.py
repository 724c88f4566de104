"""M[X]/G/1/r with multiple vacations: the finite-versus-infinite relation (Sopin 2013, chapter 2).

The derivation ``vacation-finite`` states the thesis's central result
(``spec/chapter2.md`` section 2): the embedded law of the system with r waiting places
is the renormalised truncation of the unnormalised infinite-room solution (Statement 1),
the time-stationary law follows by (9) and (10), the server's not-serving probability by
Statement 2 (11), the loss probability by Theorem 1.1 (12) and its load-balance form,
and the whole law by Theorem 1.2 (13), (14) and Corollary 1 (15). Each relation is
*shown*: exactly with SymPy where decidable (symbolic arrival sequences for r = 1..3,
exact rational models with exponential / Erlang laws), and at ``digits`` against the
CTMC built from the model definition (:mod:`qderive.derivations.vacation_finite_oracle`)
for rho_bar < 1, = 1 and > 1 (rho_bar = 5, r = 1), for the two variants (whole-batch
admission, no vacation) as well.

Command line (a contract, issue 3)::

    qderive eval vacation-finite --batch geometric:mean=5 --service erlang:k=4,mean=0.015 \\
        --vacation erlang:k=4,mean=0.075 (--load 0.6 | --rate 8) --capacity 200 \\
        [--admission partial|whole] [--distribution] [--digits 50] --json
    qderive eval vacation-finite ... --vacation none ...        # classic M[X]/G/1/r
    qderive size vacation-finite ... --target-loss 1e-6 --json  # {"capacity": r, "loss_probability": ...}

``python -m qderive.derivations.vacation_finite`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import argparse
import functools
import math

import sympy as sp

from qderive.numeric.backend import backend_for, mp_backend
from qderive.numeric.vacation import Admission, FiniteSweep, VacationQueue, unnormalised_time
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError
from qderive.symbolic.pgf import series

from .cli_args import BATCH_LAW_HELP, TIME_LAW_HELP, parse_batch_law, parse_number, parse_positive_int, parse_time_law
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits, exact_identity
from .vacation_finite_oracle import oracle_exact, oracle_measures

__all__ = ["COMMAND", "VacationFiniteCommand", "derivation", "exact_thesis"]

SOURCE = (
    "Sopin E. S. (2013), thesis, chapter 2: M^X/G/1/r with multiple vacations, Statement 1, (9), (10), "
    "Statement 2 (11), Theorem 1 (12)-(14), Corollary 1 (15); spec/chapter2.md section 2"
)

# -- symbols --------------------------------------------------------------------------
r, j, i, k = sp.symbols("r j i k", integer=True, nonnegative=True)
z = sp.Symbol("z")
lam, b1, f1, l1 = sp.symbols("lambda b_1 f_1 l_1", positive=True)
rho_bar = sp.Symbol(r"\bar{\rho}", positive=True)
qt, qr = sp.IndexedBase(r"\tilde{q}"), sp.IndexedBase("q^{r}")
pt, pr = sp.IndexedBase(r"\tilde{p}"), sp.IndexedBase("p^{r}")
a, abar, cbar = sp.IndexedBase("a"), sp.IndexedBase(r"\bar{a}"), sp.IndexedBase(r"\bar{c}")
u, v = sp.IndexedBase("u"), sp.IndexedBase("v")
Ubar, Vbar = sp.IndexedBase(r"\bar{U}"), sp.IndexedBase(r"\bar{V}")
lk, pij = sp.IndexedBase("l"), sp.IndexedBase(r"\pi")
loss, Pe, P0, theta, Cr = sp.symbols(r"\pi P^{r}_{e} P^{r}_{0} \theta C^{r}")
A, C, L = sp.Function("A"), sp.Function("C"), sp.Function("L")
beta, varphi = sp.Function(r"\beta"), sp.Function(r"\varphi")
Ptilde, Pr = sp.Function(r"\tilde{P}"), sp.Function("P^{r}")


def _steps() -> tuple[Step, ...]:
    return (
        Step("(0)", "customers arriving during a service and during a vacation",
             sp.And(sp.Eq(A(z), beta(lam - lam * L(z))), sp.Eq(C(z), varphi(lam - lam * L(z)))),
             "spec/chapter2.md section 0"),
        Step("(2b)", "level crossing of the balance equations (2): flow up across the cut j|j+1 = flow down; "
             "q~_0 = 1, every term positive, defined for every load",
             sp.Eq(a[0] * qt[j + 1], qt[0] * cbar[j] + sp.Sum(qt[i] * abar[j - i + 1], (i, 1, j))),
             "Sopin 2013, eq. (2); spec/chapter2.md section 1"),
        Step("Statement 1", "the embedded law with r places is the renormalised truncation of q~, "
             "for j = 0..r (including j = r) and every rho_bar",
             sp.Eq(qr[j], qt[j] / sp.Sum(qt[i], (i, 0, r))), "Sopin 2013, Statement 1"),
        Step("(9')", "mean time between embedded epochs", sp.Eq(Cr, qr[0] * f1 + (1 - qr[0]) * b1),
             "spec/chapter2.md section 2"),
        Step("(9)", "time-stationary queue length below the top (renewal reward), j = 0..r-1",
             sp.Eq(pr[j], (qr[0] * v[j] + sp.Sum(qr[i] * u[j - i + 1], (i, 1, j + 1))) / Cr),
             "Sopin 2013, eq. (9)"),
        Step("(10)", "the top level without cancellation, Ubar_m = sum_{n>=m} u_n, Vbar_m = sum_{n>=m} v_n",
             sp.Eq(pr[r], (qr[0] * Vbar[r] + sp.Sum(qr[i] * Ubar[r - i + 1], (i, 1, r))) / Cr),
             "Sopin 2013, eq. (10)"),
        Step("Statement 2 (11)", "probability that the server is not serving (on vacation)",
             sp.Eq(Pe, f1 / (f1 + b1 * sp.Sum(qt[j], (j, 1, r)))), "Sopin 2013, Statement 2, eq. (11)"),
        Step("(12')", "loss of a customer whose batch finds j waiting",
             sp.Eq(pij[j], sp.Sum((k - r + j) * lk[k], (k, r - j + 1, sp.oo)) / l1), "Sopin 2013, eq. (12)"),
        Step("Theorem 1.1 (12)", "loss probability per customer (PASTA): a direct sum of positive terms",
             sp.Eq(loss, sp.Sum(pr[j] * pij[j], (j, 0, r))), "Sopin 2013, Theorem 1, eq. (12)"),
        Step("Theorem 1.1'", "the same loss as load balance: carried load = offered load x (1 - pi)",
             sp.Eq(rho_bar * (1 - loss), 1 - Pe), "Sopin 2013, Theorem 1; spec/chapter2.md section 2"),
        Step("(13')", "unnormalised infinite-room law (q~_0 = 1, C = f_1), analytic at 0 for every load",
             sp.Eq(Ptilde(z), (1 - z) * (1 - C(z)) / (lam * f1 * (1 - L(z)) * (A(z) - z))),
             "Sopin 2013, Theorem 1.2"),
        Step("Theorem 1.2 (13)", "the finite law is the truncated unnormalised law plus one top term",
             sp.Eq(Pr(z), P0 * (sp.Sum(pt[j] * z**j, (j, 0, r - 1)) + theta * z**r)), "Sopin 2013, eq. (13)"),
        Step("(14)", "the top term", sp.Eq(theta, 1 / P0 - sp.Sum(pt[j], (j, 0, r - 1))), "Sopin 2013, eq. (14)"),
        Step("Corollary 1 (15)", "P^r_0 = P^r_e from the load balance with p^r_j = P^r_0 p~_j",
             sp.Eq(P0, 1 / (1 + rho_bar * sp.Sum(pt[j], (j, 0, r - 1))
                            - rho_bar * sp.Sum(pt[j] * pij[j], (j, 0, r - 1)))),
             "Sopin 2013, Corollary 1, eq. (15)"),
    )


# -- the thesis's formulas in exact arithmetic (for the exact checks) -------------------


def _coefficients(expr, n: int) -> list:
    return list(series(expr, z, 0, n).coeffs[:n])


def exact_thesis(model: VacationQueue) -> dict:
    """Every quantity of section 2 of the spec, exactly, from the transforms of ``model``.

    a_n, c_n, u_n, v_n are Taylor coefficients of A(z) = beta(lam - lam L(z)),
    C(z) = varphi(...), U(z) = (1 - A)/(lam (1 - L)), V(z) = (1 - C)/(lam (1 - L)) (exact
    series, ``qderive.symbolic.pgf``); then (2b), Statement 1, (9), (10), (11), (12) and
    its load-balance form, (13) from the series of P~(z), (14) and (15). Partial
    admission with vacations; exact for laws with rational transforms (exponential,
    Erlang) and any batch law with exact tails.
    """
    rr = model.capacity
    bat, srv, vac = model.batch, model.service, model.vacation
    lam_, b1_, f1_, l1_ = model.lam, srv.moment(1), vac.moment(1), bat.mean
    Lz = bat.pgf(z)
    Az = srv.lst(lam_ - lam_ * Lz)
    Cz = vac.lst(lam_ - lam_ * Lz)
    n = rr + 2
    a_ = _coefficients(Az, n)
    c_ = _coefficients(Cz, n)
    u_ = _coefficients((1 - Az) / (lam_ * (1 - Lz)), n)
    v_ = _coefficients((1 - Cz) / (lam_ * (1 - Lz)), n)
    abar_ = [1 - sum(a_[: m + 1]) for m in range(n)]
    cbar_ = [1 - sum(c_[: m + 1]) for m in range(n)]
    ubar_ = [b1_ - sum(u_[:m]) for m in range(n)]
    vbar_ = [f1_ - sum(v_[:m]) for m in range(n)]
    q = [sp.Integer(1)]
    for jj in range(rr):  # (2b)
        q.append(sp.cancel((q[0] * cbar_[jj] + sum(q[ii] * abar_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0]))
    total = sum(q)
    qr_ = [x / total for x in q]  # Statement 1
    Cr_ = qr_[0] * f1_ + (1 - qr_[0]) * b1_
    pr_ = [(qr_[0] * v_[jj] + sum(qr_[ii] * u_[jj - ii + 1] for ii in range(1, jj + 2))) / Cr_ for jj in range(rr)]
    pr_.append((qr_[0] * vbar_[rr] + sum(qr_[ii] * ubar_[rr - ii + 1] for ii in range(1, rr + 1))) / Cr_)  # (10)
    Pe_ = f1_ / (f1_ + b1_ * sum(q[1:]))  # (11)
    excess = [l1_ - sum(bat.tail(m) for m in range(mm)) for mm in range(rr + 1)]
    pi_ = [excess[rr - jj] / l1_ for jj in range(rr + 1)]
    loss12 = sum(pr_[jj] * pi_[jj] for jj in range(rr + 1))
    rho_ = model.rho_bar
    loss_lb = 1 - (1 - Pe_) / rho_
    Pt = (1 - z) * (1 - Cz) / (lam_ * f1_ * (1 - Lz) * (Az - z))
    pt_ = _coefficients(Pt, rr + 1)[:rr]  # (13')
    theta_ = 1 / Pe_ - sum(pt_)  # (14) with P0 = P_e
    P0_15 = 1 / (1 + rho_ * sum(pt_) - rho_ * sum(pt_[jj] * pi_[jj] for jj in range(rr)))
    return dict(qt=q, q=qr_, p=pr_, Pe=Pe_, loss12=loss12, loss_lb=loss_lb, pt=pt_, theta=theta_, P0_15=P0_15,
                pi=pi_)


# -- model points for the checks --------------------------------------------------------
R_ = sp.Rational


def _geo_e2_exp(load, cap, admission=Admission.PARTIAL, vacation=True):
    return VacationQueue.from_load(load, B.Geometric(3), T.Erlang(2, R_(1, 10)),
                                   T.Exponential(R_(1, 4)) if vacation else None, cap, admission)


_EXACT_POINTS = {
    "rho_bar = 1/2, r = 3": lambda: VacationQueue.from_load(R_(1, 2), B.Geometric(R_(3, 2)), T.Exponential(R_(1, 2)),
                                                           T.Erlang(2, R_(1, 1)), 3),
    "rho_bar = 1, r = 2": lambda: VacationQueue.from_load(1, B.FinitePMF({1: R_(1, 2), 3: R_(1, 2)}),
                                                         T.Erlang(2, R_(1, 3)), T.Exponential(R_(2, 3)), 2),
    "rho_bar = 5, r = 1": lambda: VacationQueue.from_load(5, B.Geometric(2), T.Exponential(R_(1, 5)),
                                                         T.Exponential(1), 1),
}

_DIGIT_POINTS = {
    "rho_bar = 1/2, r = 8": lambda: _geo_e2_exp(R_(1, 2), 8),
    "rho_bar = 1, r = 6": lambda: VacationQueue.from_load(1, B.FinitePMF({1: R_(1, 2), 2: R_(1, 4), 4: R_(1, 4)}),
                                                         T.Exponential(R_(1, 5)), T.Erlang(3, R_(1, 2)), 6),
    "rho_bar = 5, r = 1": lambda: _geo_e2_exp(5, 1),
    "rho_bar = 5, r = 4": lambda: _geo_e2_exp(5, 4),
}

_VARIANT_POINTS = {
    "whole, rho_bar = 3/4, r = 5": lambda: _geo_e2_exp(R_(3, 4), 5, Admission.WHOLE),
    "whole, rho_bar = 5, r = 2": lambda: _geo_e2_exp(5, 2, Admission.WHOLE),
    "no vacation, rho_bar = 3/4, r = 0": lambda: _geo_e2_exp(R_(3, 4), 0, vacation=False),
    "no vacation, rho_bar = 3/4, r = 4": lambda: _geo_e2_exp(R_(3, 4), 4, vacation=False),
    "no vacation, whole, rho_bar = 5, r = 3": lambda: _geo_e2_exp(5, 3, Admission.WHOLE, vacation=False),
}


@functools.lru_cache(maxsize=64)
def _pair(name: str, digits: int):
    """(model, engine measures at digits + 5, CTMC oracle at digits + 10) for a named point."""
    maker = {**_DIGIT_POINTS, **_VARIANT_POINTS}[name]
    model = maker()
    eng = FiniteSweep(model, mp_backend(digits + 5)).at(model.capacity)
    ora = oracle_measures(model, mp_backend(digits + 10))
    return model, eng, ora


def _worst(pairs) -> float:
    return min((agreement_digits(x, y) for x, y in pairs), default=math.inf)


def _digits_check(names, compare, what):
    """A check comparing engine and oracle quantities at every named point."""

    def run(digits):
        worst = math.inf
        for name in names:
            model, eng, ora = _pair(name, digits)
            worst = min(worst, _worst(compare(model, eng, ora, digits)))
        return worst >= digits, worst, f"{what} at {', '.join(names)} vs the CTMC of the model definition"

    return run


_LOADS = tuple(_DIGIT_POINTS)


def _cmp_statement1(model, eng, ora, digits):
    return zip(eng.q, ora.q)


def _cmp_9(model, eng, ora, digits):
    return zip(eng.p[:-1], ora.p[:-1])


def _cmp_10(model, eng, ora, digits):
    return [(eng.p[-1], ora.p[-1])]


def _cmp_11(model, eng, ora, digits):
    return [(eng.idle_probability, ora.idle)]


def _cmp_12(model, eng, ora, digits):
    return [(eng.loss_probability, ora.loss), (ora.loss, ora.loss_from_throughput)]


def _cmp_balance(model, eng, ora, digits):
    bk = mp_backend(digits + 5)
    with bk:
        rho = bk.num(model.rho_bar)
        return [(rho * (1 - eng.loss_probability), 1 - ora.idle)]


def _unnormalised_p(model, digits):
    bk = mp_backend(digits + 5)
    with bk:
        return bk, unnormalised_time(model, max(model.capacity - 1, 0), bk)[: model.capacity]


def _pi_vector(model, bk):
    rr, bat = model.capacity, model.batch
    return [bk.num(bat.mean - sum(bat.tail(m) for m in range(rr - jj))) / bk.num(bat.mean) for jj in range(rr + 1)]


def _cmp_13(model, eng, ora, digits):
    """p^r_j = P^r_0 p~_j with the oracle's p^r and P^r_e, p~ from the engine's (4) with C = f_1."""
    bk, ptil = _unnormalised_p(model, digits)
    with bk:
        return [(ora.idle * ptil[jj], ora.p[jj]) for jj in range(model.capacity)]


def _cmp_14(model, eng, ora, digits):
    bk, ptil = _unnormalised_p(model, digits)
    with bk:
        th = 1 / ora.idle - bk.fsum(ptil)
        return [(ora.idle * th, ora.p[-1])]


def _cmp_15(model, eng, ora, digits):
    bk, ptil = _unnormalised_p(model, digits)
    with bk:
        rho = bk.num(model.rho_bar)
        piv = _pi_vector(model, bk)
        s = bk.fsum(ptil)
        s_pi = bk.fsum([ptil[jj] * piv[jj] for jj in range(model.capacity)])
        return [(1 / (1 + rho * s - rho * s_pi), ora.idle)]


def _cmp_all(model, eng, ora, digits):
    pairs = list(zip(eng.p, ora.p)) + list(zip(eng.q, ora.q))
    pairs += [(eng.idle_probability, ora.idle), (eng.loss_probability, ora.loss),
              (eng.batch_blocking_probability, ora.blocking), (eng.throughput, ora.throughput),
              (eng.mean_queue_length, ora.mean_queue)]
    return pairs


def _check_cut_form(digits):
    """(2b) == (2a): summing (2) over levels 0..j, with symbolic a_n, c_n (exact, j <= 4)."""
    n = 6
    a_ = sp.symbols(f"a0:{n}", positive=True)
    c_ = sp.symbols(f"c0:{n}", positive=True)
    q2a, q2b = [sp.Integer(1)], [sp.Integer(1)]
    for jj in range(n - 2):
        # (2a): q_{j+1} = (q_j - q_0 c_j - sum_{i=1}^{j} q_i a_{j-i+1}) / a_0
        q2a.append((q2a[jj] - c_[jj] - sum(q2a[ii] * a_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0])
        abar_ = [1 - sum(a_[: m + 1]) for m in range(n)]
        cbar_ = 1 - sum(c_[: jj + 1])
        q2b.append((cbar_ + sum(q2b[ii] * abar_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0])
    ok = all(exact_identity(x, y) for x, y in zip(q2a, q2b))
    return ok, None, "q~_1..q~_4 of (2b) equal the forward solution of (2) for symbolic a_n, c_n"


def _check_statement1_symbolic(digits):
    """Statement 1 from the definition: solve x P = x of the finite chain (symbolic a_n, c_n), r = 1..3."""
    for rr in (1, 2, 3):
        a_ = sp.symbols(f"a0:{rr + 1}", positive=True)
        c_ = sp.symbols(f"c0:{rr + 1}", positive=True)
        P = sp.zeros(rr + 1, rr + 1)
        for jj in range(rr):
            P[0, jj] = c_[jj]
        P[0, rr] = 1 - sum(c_[:rr])
        for ii in range(1, rr + 1):
            for jj in range(ii - 1, rr):
                P[ii, jj] = a_[jj - ii + 1]
            P[ii, rr] = 1 - sum(a_[: rr - ii + 1])
        xs = sp.symbols(f"x1:{rr + 1}")
        x = sp.Matrix([[1, *xs]])
        eqs = list(x * P - x)
        sol = sp.solve(eqs[:-1], xs, dict=True)[0]
        # the equation for j = r is redundant
        if not exact_identity(eqs[-1].subs(sol), 0):
            return False, None, f"the top balance equation is not redundant at r = {rr}"
        q = [sp.Integer(1)]
        abar_ = [1 - sum(a_[: m + 1]) for m in range(rr + 1)]
        for jj in range(rr):
            cbar_ = 1 - sum(c_[: jj + 1])
            q.append((cbar_ + sum(q[ii] * abar_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0])
        for ii, xv in enumerate(xs, start=1):
            if not exact_identity(sol[xv], q[ii]):
                return False, None, f"q^r_{ii}/q^r_0 differs from q~_{ii} at r = {rr}"
    return True, None, "q^r_j / q^r_0 = q~_j for j = 0..r, symbolic a_n, c_n, r = 1, 2, 3 (top equation redundant)"


@functools.lru_cache(maxsize=8)
def _exact_pair(name: str):
    model = _EXACT_POINTS[name]()
    return model, exact_thesis(model), oracle_exact(model)


def _exact_check(relation):
    def run(digits):
        for name in _EXACT_POINTS:
            model, th, ora = _exact_pair(name)
            for lhs, rhs in relation(model, th, ora):
                if not exact_identity(lhs, rhs):
                    return False, None, f"fails at {name}: {lhs} != {rhs}"
        return True, None, f"exact rational equality at {'; '.join(_EXACT_POINTS)} (exp / Erlang laws, exact CTMC)"

    return run


def _ex_statement1(m, th, ora):
    return zip(th["q"], ora.q)


def _ex_9_10(m, th, ora):
    return zip(th["p"], ora.p)


def _ex_11(m, th, ora):
    return [(th["Pe"], ora.idle)]


def _ex_12(m, th, ora):
    return [(th["loss12"], ora.loss), (th["loss12"], ora.loss_from_throughput), (th["loss_lb"], th["loss12"])]


def _ex_13_15(m, th, ora):
    rr = m.capacity
    pairs = [(th["Pe"] * th["pt"][jj], ora.p[jj]) for jj in range(rr)]  # (13)
    pairs.append((th["Pe"] * th["theta"], ora.p[rr]))  # (14)
    pairs.append((th["P0_15"], ora.idle))  # (15)
    return pairs


def _check_transform_deterministic(digits):
    """(13'): p~_j of the engine = Taylor coefficients of P~(z) for deterministic laws (exact series with exp)."""
    model = VacationQueue.from_load(R_(3, 5), B.Geometric(4), T.Deterministic(R_(3, 200)), T.Deterministic(R_(3, 40)), 6)
    bat, lam_ = model.batch, model.lam
    Lz = bat.pgf(z)
    Az = model.service.lst(lam_ - lam_ * Lz)
    Cz = model.vacation.lst(lam_ - lam_ * Lz)
    Pt = (1 - z) * (1 - Cz) / (lam_ * model.vacation.moment(1) * (1 - Lz) * (Az - z))
    coeffs = series(Pt, z, 0, 7).coeffs
    bk = mp_backend(digits + 5)
    with bk:
        eng = unnormalised_time(model, 6, bk)
        worst = _worst((eng[jj], bk.num(coeffs[jj])) for jj in range(7))
    return worst >= digits, worst, "p~_0..p~_6 (D service, D vacation, geometric batches) vs the series of P~(z)"


def derivation() -> Derivation:
    """The registered derivation ``vacation-finite``."""
    d, v_ = _LOADS, tuple(_VARIANT_POINTS)
    checks = (
        Check("(2b) = forward solution of (2), symbolic a_n, c_n", _check_cut_form, "(2b)"),
        Check("Statement 1 from the chain's definition, symbolic, r = 1..3", _check_statement1_symbolic, "Statement 1"),
        Check("Statement 1 exact vs exact CTMC (rho_bar = 1/2, 1, 5)", _exact_check(_ex_statement1), "Statement 1"),
        Check("(9), (10) exact vs exact CTMC", _exact_check(_ex_9_10), "(9)"),
        Check("Statement 2 (11) exact vs exact CTMC", _exact_check(_ex_11), "Statement 2 (11)"),
        Check("Theorem 1.1 and load balance exact vs exact CTMC", _exact_check(_ex_12), "Theorem 1.1 (12)"),
        Check("Theorem 1.2 (13), (14), Corollary 1 (15) exact vs exact CTMC", _exact_check(_ex_13_15),
              "Theorem 1.2 (13)"),
        Check("Statement 1: q^r vs CTMC", _digits_check(d, _cmp_statement1, "q^r_0..q^r_r"), "Statement 1"),
        Check("(9): p^r_j, j < r, vs CTMC", _digits_check(d, _cmp_9, "p^r_j (j < r)"), "(9)"),
        Check("(10): p^r_r vs CTMC", _digits_check(d, _cmp_10, "p^r_r"), "(10)"),
        Check("Statement 2 (11): P^r_e vs CTMC", _digits_check(d, _cmp_11, "P^r_e"), "Statement 2 (11)"),
        Check("Theorem 1.1 (12): loss direct sum vs CTMC loss flow", _digits_check(d, _cmp_12, "loss"),
              "Theorem 1.1 (12)"),
        Check("Theorem 1.1': load balance vs CTMC", _digits_check(d, _cmp_balance, "rho_bar (1 - pi) = 1 - P^r_e"),
              "Theorem 1.1'"),
        Check("Theorem 1.2 (13): p^r_j = P^r_0 p~_j vs CTMC", _digits_check(d, _cmp_13, "P^r_0 p~_j"),
              "Theorem 1.2 (13)"),
        Check("(14): p^r_r = P^r_0 theta vs CTMC", _digits_check(d, _cmp_14, "P^r_0 theta"), "(14)"),
        Check("Corollary 1 (15): P^r_0 vs CTMC", _digits_check(d, _cmp_15, "P^r_0 of (15)"), "Corollary 1 (15)"),
        Check("(13'): p~ vs series of P~(z), deterministic laws", _check_transform_deterministic, "(13')"),
        Check("whole admission and no vacation: all measures vs CTMC", _digits_check(v_, _cmp_all, "every measure"),
              "Theorem 1.1 (12)"),
    )
    results = {
        "q^r_j": qt[j] / sp.Sum(qt[i], (i, 0, r)),
        "P^r_e": f1 / (f1 + b1 * sp.Sum(qt[j], (j, 1, r))),
        "pi": sp.Sum(pr[j] * pij[j], (j, 0, r)),
        "pi (load balance)": 1 - (1 - Pe) / rho_bar,
    }
    return Derivation(
        name="vacation-finite",
        title="M[X]/G/1/r with multiple vacations: the finite waiting room through the infinite-room solution",
        source=SOURCE,
        steps=_steps(),
        checks=checks,
        results=results,
        notes=(
            "Tilded quantities are the unnormalised infinite-room solution (q~_0 = 1); they exist for every "
            "load, so the finite-room relations hold for rho_bar < 1, = 1 and > 1.",
            "Numerically the loss is taken from the direct sum (12) with p^r_r from (10): both are sums of "
            "positive terms, accurate in float64 down to losses of 1e-16; the load-balance form cancels "
            "(relative error about eps/pi).",
            "Variants beside the thesis: whole-batch admission (a batch that does not fit is rejected; "
            "Statement 1 then no longer holds) and no vacation (classic M[X]/G/1/r, C(z) = A(z) L(z)/z).",
        ),
    )


# -- command line ---------------------------------------------------------------------


class VacationFiniteCommand(ModelCommand):
    name = "vacation-finite"
    summary = "M[X]/G/1/r with multiple vacations (or none): loss, blocking, queue, wait; buffer sizing"
    example_args = ("--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015",
                    "--vacation", "erlang:k=4,mean=0.075", "--load", "1.5", "--capacity", "20")

    def simulate(self, model, args):
        """The simulator's view of the model (same laws, capacity and admission rule)."""
        from qderive.numeric.simulate import SimVacationModel

        return SimVacationModel(rate=model.lam, batch=model.batch, service=model.service, vacation=model.vacation,
                                capacity=model.capacity, admission=model.admission), {}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--batch", required=True, metavar="LAW", help=f"batch-size law: {BATCH_LAW_HELP}")
        parser.add_argument("--service", required=True, metavar="LAW", help=f"service time law: {TIME_LAW_HELP}")
        parser.add_argument("--vacation", required=True, metavar="LAW",
                            help=f"vacation time law, or `none` for no vacations: {TIME_LAW_HELP}")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--load", metavar="RHO", help="offered load rho_bar = lambda l1 b1 (> 0; >= 1 allowed)")
        group.add_argument("--rate", metavar="LAMBDA", help="batch arrival rate lambda (> 0)")
        parser.add_argument("--capacity", metavar="R",
                            help="waiting room r, the customer in service not counted (>= 1; >= 0 without vacations)")
        parser.add_argument("--admission", choices=[a.value for a in Admission], default=Admission.PARTIAL.value,
                            help="partial: fill the room, lose the rest (the thesis, default); "
                                 "whole: a batch that does not fit is rejected entirely")
        parser.add_argument("--distribution", action="store_true",
                            help="also print the time-stationary queue-length law p (list p^r_0..p^r_r)")

    def add_size_arguments(self, parser) -> None:
        parser.add_argument("--target-loss", required=True, metavar="P",
                            help="largest acceptable loss probability, in (0, 1)")
        parser.add_argument("--max-capacity", default="100000", metavar="R",
                            help="give up beyond this capacity (default 100000)")

    @staticmethod
    def _model(args, capacity: int) -> VacationQueue:
        batch = parse_batch_law(args.batch, "batch")
        service = parse_time_law(args.service, "service")
        vacation = None if args.vacation.strip().lower() == "none" else parse_time_law(args.vacation, "vacation")
        admission = Admission(args.admission)
        if args.load is not None:
            load = parse_number(args.load, "load")
            if not load > 0:
                raise ParameterError(f"load = {args.load}: must be > 0")
            return VacationQueue.from_load(load, batch, service, vacation, capacity, admission)
        rate = parse_number(args.rate, "rate")
        if not rate > 0:
            raise ParameterError(f"rate = {args.rate}: must be > 0")
        return VacationQueue(rate, batch, service, vacation, capacity, admission)

    def build(self, args) -> VacationQueue:
        if args.capacity is None:
            raise ParameterError("eval vacation-finite needs --capacity R (the waiting room)")
        return self._model(args, parse_positive_int(args.capacity, "capacity"))

    @staticmethod
    def _parameters(model: VacationQueue) -> dict:
        return {
            "batch": repr(model.batch),
            "service": repr(model.service),
            "vacation": "none" if model.vacation is None else repr(model.vacation),
            "rate": model.lam,
            "load": model.rho_bar,
            "capacity": model.capacity,
            "admission": model.admission.value,
        }

    def evaluate(self, model: VacationQueue, digits, args) -> Evaluation:
        bk = backend_for(digits)
        m = FiniteSweep(model, bk).at(model.capacity)
        measures = {
            "loss_probability": m.loss_probability,
            "batch_blocking_probability": m.batch_blocking_probability,
            "idle_probability": m.idle_probability,
            "mean_queue_length": m.mean_queue_length,
            "mean_wait": m.mean_wait,
            "mean_number_in_system": m.mean_number_in_system,
            "throughput": m.throughput,
            "p0": m.p[0],
            "pr": m.p[-1],
            "q0": m.q[0],
            "qr": m.q[-1],
        }
        if getattr(args, "distribution", False):
            measures["p"] = list(m.p)
        notes = []
        if model.rho_bar >= 1:
            notes.append(f"overload: rho_bar = {model.rho_bar} >= 1, the loss stays above 1 - 1/rho_bar "
                         f"= {1 - 1 / model.rho_bar} for every capacity")
        return Evaluation(self.name, self._parameters(model), measures, notes)

    def size(self, args) -> dict:
        from qderive.numeric.vacation_buffer import smallest_capacity

        target = parse_number(args.target_loss, "target-loss")
        top = parse_positive_int(args.max_capacity, "max-capacity")
        # the model's own capacity is ignored by the search; the largest one allowed is always valid
        model = self._model(args, max(top, 1))
        bk = backend_for(args.digits)
        res = smallest_capacity(model, target, bk, max_capacity=top)
        out = {"capacity": res.capacity, "loss_probability": res.measures.loss_probability}
        if res.loss_one_fewer is not None:
            out["loss_probability_one_fewer"] = res.loss_one_fewer
        return out

    def derivation(self):
        return derivation()

    def add_codegen_arguments(self, parser) -> None:
        from .codegen_vacation import add_codegen_arguments

        add_codegen_arguments(parser)

    def codegen_forms(self, args) -> dict:
        """Every eval measure as a standalone recursion module for the law families in ``args``."""
        from .codegen_vacation import recursion_forms

        return recursion_forms(args)


COMMAND = VacationFiniteCommand()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
