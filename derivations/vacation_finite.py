"""M[X]/G/1/r with vacations: the finite waiting room through the infinite-room solution (Sopin 2013, ch. 2).

The derivation ``vacation-finite`` states the thesis's central result (``docs/theory/chapter2.md``
section 2): the embedded law with r waiting places is the renormalised truncation of the
unnormalised infinite-room solution (Statement 1), the time-stationary law follows by (9)
and (10), the server's not-serving probability by Statement 2 (11), the loss by Theorem
1.1 (12) and its load-balance form, and the whole law by Theorem 1.2 (13), (14) and
Corollary 1 (15). Every relation is displayed in the thesis's index form and **evaluated
as displayed** by ``qderive verify``: its symbols are bound to the exact stationary law of
the CTMC built from the model definition (:mod:`qderive.numeric.oracles.vacation`, solved
in rational arithmetic) and to the exact Taylor coefficients of A(z), C(z), U(z), V(z), at
rho_bar = 1/2, 1 and 5. The checks compare the engine (:mod:`qderive.numeric.kernels.vacation`)
with the oracle for every variant: whole-batch admission, no vacation, single vacations.

The steps (BF1)-(BF6) (:mod:`qderive.derivations.blocks_finite`) carry Statement 1 and Theorem 1 over to the
composed start rules (close-down, vacations, start threshold N <= r, setup) under partial admission, for the chain
at departures; the checks show where they do not hold (the top level at departures when a vacation or a setup can
end the idle period with more than r present; whole admission, exactly).

``python -m qderive.derivations.vacation_finite`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import sympy as sp

from ..symbolic.batches import FinitePMF, Geometric
from ..symbolic.capabilities import declare
from ..symbolic.laws import Deterministic, Erlang, Exponential
from ..symbolic.models.vacation import (
    Admission,
    FiniteVacationQueue,
    VacationPolicy,
)
from ..symbolic.numbers import to_sympy
from ..symbolic.pgf import series
from .block_checks import finite_checks as finite_block_checks
from .blocks_finite import finite_block_checks as statement1_block_checks
from .blocks_finite import finite_block_steps
from .framework import (
    Check,
    Derivation,
    Step,
    agreement_digits,
    exact_identity,
    relation_check,
)
from .vacation_infinite import RECURSIONS, WAIT_CHECK_TIMES, wait_oracle_agreement

__all__ = ["derivation", "exact_sequences"]

SOURCE = ("Sopin E. S. (2013), thesis, chapter 2: M^X/G/1/r with multiple vacations, Statement 1, (9), (10), "
          "Statement 2 (11), Theorem 1 (12)-(14), Corollary 1 (15); docs/theory/chapter2.md section 2")

# -- symbols of the displayed relations ---------------------------------------------------------------------
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

REL = {
    "(0)": sp.And(sp.Eq(A(z), beta(lam - lam * L(z))), sp.Eq(C(z), varphi(lam - lam * L(z)))),
    "(2b)": sp.Eq(a[0] * qt[j + 1], qt[0] * cbar[j] + sp.Sum(qt[i] * abar[j - i + 1], (i, 1, j))),
    "Statement 1": sp.Eq(qr[j], qt[j] / sp.Sum(qt[i], (i, 0, r))),
    "(9')": sp.Eq(Cr, qr[0] * f1 + (1 - qr[0]) * b1),
    "(9)": sp.Eq(pr[j], (qr[0] * v[j] + sp.Sum(qr[i] * u[j - i + 1], (i, 1, j + 1))) / Cr),
    "(10)": sp.Eq(pr[r], (qr[0] * Vbar[r] + sp.Sum(qr[i] * Ubar[r - i + 1], (i, 1, r))) / Cr),
    "Statement 2 (11)": sp.Eq(Pe, f1 / (f1 + b1 * sp.Sum(qt[j], (j, 1, r)))),
    "(12')": sp.Eq(pij[j], sp.Sum((k - r + j) * lk[k], (k, r - j + 1, sp.oo)) / l1),
    "Theorem 1.1 (12)": sp.Eq(loss, sp.Sum(pr[j] * pij[j], (j, 0, r))),
    "Theorem 1.1'": sp.Eq(rho_bar * (1 - loss), 1 - Pe),
    "(13')": sp.Eq(Ptilde(z), (1 - z) * (1 - C(z)) / (lam * f1 * (1 - L(z)) * (A(z) - z))),
    "Theorem 1.2 (13)": sp.Eq(Pr(z), P0 * (sp.Sum(pt[j] * z**j, (j, 0, r - 1)) + theta * z**r)),
    "(14)": sp.Eq(theta, 1 / P0 - sp.Sum(pt[j], (j, 0, r - 1))),
    "Corollary 1 (15)": sp.Eq(P0, 1 / (1 + rho_bar * sp.Sum(pt[j], (j, 0, r - 1))
                                       - rho_bar * sp.Sum(pt[j] * pij[j], (j, 0, r - 1)))),
}

_TITLES = {
    "(0)": ("The numbers of customers arriving during a service and during a vacation", "",
            "docs/theory/chapter2.md section 0"),
    "(2b)": (r"The level crossing of the balance equations: the flow up across the cut between $j$ and $j+1$ "
             r"equals the flow down; with $\tilde q_0 = 1$ every term is positive and the solution exists for every "
             "load", "[@sopin2013, eq. (2)]", "docs/theory/chapter2.md section 1"),
    "Statement 1": (r"The embedded law with $r$ places is the renormalised truncation of $\tilde q$, for "
                    r"$j = 0, \dots, r$ (including $j = r$) and every $\bar\rho$", "[@sopin2013, Statement 1]"),
    "(9')": ("The mean time between embedded epochs", "", "docs/theory/chapter2.md section 2"),
    "(9)": (r"The time-stationary queue length below the top (renewal reward), $j = 0, \dots, r-1$",
            "[@sopin2013, eq. (9)]"),
    "(10)": (r"The top level without cancellation, with the tails $\bar U_m = \sum_{n \ge m} u_n$ and "
             r"$\bar V_m = \sum_{n \ge m} v_n$", "[@sopin2013, eq. (10)]"),
    "Statement 2 (11)": ("The probability that the server is on vacation", "[@sopin2013, Statement 2, eq. (11)]"),
    "(12')": ("The loss of a customer whose batch finds $j$ waiting", "[@sopin2013, eq. (12)]"),
    "Theorem 1.1 (12)": ("The loss probability per customer (PASTA), a direct sum of positive terms",
                         "[@sopin2013, Theorem 1, eq. (12)]"),
    "Theorem 1.1'": (r"The same loss by load balance: the carried load is the offered load times $1 - \pi$",
                     "[@sopin2013, Theorem 1]", "docs/theory/chapter2.md section 2"),
    "(13')": (r"The unnormalised infinite-room law ($\tilde q_0 = 1$, $C = f_1$), analytic at 0 for every load",
              "[@sopin2013, Theorem 1.2]"),
    "Theorem 1.2 (13)": ("The finite law is the truncated unnormalised law plus one top term",
                         "[@sopin2013, eq. (13)]"),
    "(14)": ("The top term", "[@sopin2013, eq. (14)]"),
    "Corollary 1 (15)": (r"$P^{r}_{0} = P^{r}_{e}$ from the load balance, with $p^{r}_{j} = P^{r}_{0} \tilde p_j$",
                         "[@sopin2013, Corollary 1, eq. (15)]"),
}

# -- model points ---------------------------------------------------------------------------------------------

R_ = F
_EXACT_POINTS = {
    "rho_bar = 1/2, r = 3": lambda: FiniteVacationQueue.from_load(R_(1, 2), Geometric(R_(3, 2)), Exponential(R_(1, 2)),
                                                                  Erlang(2, 1), 3),
    "rho_bar = 1, r = 2": lambda: FiniteVacationQueue.from_load(1, FinitePMF({1: R_(1, 2), 3: R_(1, 2)}),
                                                                Erlang(2, R_(1, 3)), Exponential(R_(2, 3)), 2),
    "rho_bar = 5, r = 1": lambda: FiniteVacationQueue.from_load(5, Geometric(2), Exponential(R_(1, 5)),
                                                                Exponential(1), 1),
}


def _geo_e2_exp(load, cap, admission=Admission.PARTIAL, vacation=True, policy=VacationPolicy.MULTIPLE):
    return FiniteVacationQueue.from_load(load, Geometric(3), Erlang(2, R_(1, 10)),
                                         Exponential(R_(1, 4)) if vacation else None, cap, admission, policy)


_DIGIT_POINTS = {
    "rho_bar = 1/2, r = 8": lambda: _geo_e2_exp(R_(1, 2), 8),
    "rho_bar = 1, r = 6": lambda: FiniteVacationQueue.from_load(1, FinitePMF({1: R_(1, 2), 2: R_(1, 4), 4: R_(1, 4)}),
                                                                Exponential(R_(1, 5)), Erlang(3, R_(1, 2)), 6),
    "rho_bar = 5, r = 4": lambda: _geo_e2_exp(5, 4),
}

_VARIANT_POINTS = {
    "whole, rho_bar = 3/4, r = 5": lambda: _geo_e2_exp(R_(3, 4), 5, Admission.WHOLE),
    "whole, rho_bar = 5, r = 2": lambda: _geo_e2_exp(5, 2, Admission.WHOLE),
    "no vacation, rho_bar = 3/4, r = 0": lambda: _geo_e2_exp(R_(3, 4), 0, vacation=False),
    "no vacation, whole, rho_bar = 5, r = 3": lambda: _geo_e2_exp(5, 3, Admission.WHOLE, vacation=False),
    "single vacations, rho_bar = 3/4, r = 6": lambda: _geo_e2_exp(R_(3, 4), 6, policy=VacationPolicy.SINGLE),
    "single vacations, whole, rho_bar = 5, r = 3": lambda: _geo_e2_exp(5, 3, Admission.WHOLE,
                                                                       policy=VacationPolicy.SINGLE),
    "single vacations, rho_bar = 1, r = 4": lambda: _geo_e2_exp(1, 4, policy=VacationPolicy.SINGLE),
}


def _coefficients(expr, n):
    return [F(int(c.p), int(c.q)) if c.is_Rational else c for c in series(expr, z, 0, n).coeffs[:n]]


@functools.lru_cache(maxsize=16)
def exact_sequences(name: str) -> dict:
    """The model at an exact point, its exact sequences and the exact oracle (rational GTH).

    a_n, c_n, u_n, v_n: Taylor coefficients of A(z), C(z), U(z) = (1 - A)/(lambda (1 - L)) and
    V(z) (exact series); abar, cbar, Ubar, Vbar as exact partial sums; q~ from (2b) with them;
    p~_j = (v_j + sum_i q~_i u_{j-i+1}) / f_1; pi_j = E (X - (r - j))^+ / l_1 from the batch law.
    """
    from ..numeric.oracles.vacation import solve

    model = _EXACT_POINTS[name]()
    rr = model.capacity
    bat, srv, vac = model.batch, model.service, model.vacation
    lam_, Lz = to_sympy(model.rate), bat.pgf(z)
    Az = srv.lst(lam_ - lam_ * Lz)
    Cz = vac.lst(lam_ - lam_ * Lz)
    n = rr + 3
    a_ = _coefficients(Az, n)
    c_ = _coefficients(Cz, n)
    u_ = _coefficients((1 - Az) / (lam_ * (1 - Lz)), n)
    v_ = _coefficients((1 - Cz) / (lam_ * (1 - Lz)), n)
    b1_, f1_ = srv.moment(1), vac.moment(1)
    abar_ = [1 - sum(a_[: m + 1]) for m in range(n)]
    cbar_ = [1 - sum(c_[: m + 1]) for m in range(n)]
    ubar_ = [b1_ - sum(u_[:m]) for m in range(n)]
    vbar_ = [f1_ - sum(v_[:m]) for m in range(n)]
    q = [F(1)]
    for jj in range(rr + 1):
        q.append((q[0] * cbar_[jj] + sum(q[ii] * abar_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0])
    pt_ = [(v_[jj] + sum(q[ii] * u_[jj - ii + 1] for ii in range(1, jj + 2))) / f1_ for jj in range(rr + 1)]
    pi_ = [bat.excess(rr - jj) / bat.mean for jj in range(rr + 1)]
    lk_ = {kk: F(bat.pmf(kk)) for kk in range(0, (bat.max_size or rr + 200) + 1)}
    oracle = solve(model)
    return {"model": model, "a": a_, "c": c_, "u": u_, "v": v_, "abar": abar_, "cbar": cbar_, "Ubar": ubar_,
            "Vbar": vbar_, "qt": q, "pt": pt_, "pi": pi_, "l": lk_, "oracle": oracle, "A": Az, "C": Cz, "L": Lz}


@functools.lru_cache(maxsize=16)
def _env(name: str) -> dict:
    """The bindings of every displayed relation at the exact point ``name``, derived once and shared by the 14
    step hooks (read-only: :func:`relation_check` copies it; the transforms are evaluated at the caller's
    mpmath precision)."""
    d = exact_sequences(name)
    m, o = d["model"], d["oracle"]
    poly = lambda coeffs: (lambda x: mpmath.fsum(mpmath.mpf(c.numerator) / c.denominator * x**n  # noqa: E731
                                                 for n, c in enumerate(coeffs)))
    ptilde_series = _coefficients((1 - z) * (1 - d["C"]) / (to_sympy(m.rate) * to_sympy(m.vacation.moment(1))
                                                            * (1 - d["L"]) * (d["A"] - z)), 40)
    lam_s = sp.Symbol("s")
    beta_fn = sp.lambdify(lam_s, m.service.lst(lam_s), "mpmath")
    phi_fn = sp.lambdify(lam_s, m.vacation.lst(lam_s), "mpmath")
    L_fn = sp.lambdify(z, d["L"], "mpmath")
    return {
        r: m.capacity, lam: m.rate, b1: m.service.moment(1), f1: m.vacation.moment(1), l1: m.batch.mean,
        rho_bar: m.rho_bar,
        a: d["a"], abar: d["abar"], cbar: d["cbar"], u: d["u"], v: d["v"], Ubar: d["Ubar"], Vbar: d["Vbar"],
        qt: d["qt"], pt: d["pt"], pij: d["pi"], lk: d["l"],
        qr: o.q, pr: o.p, Pe: o.idle, P0: o.idle, loss: o.loss, Cr: 1 / o.epoch_rate,
        theta: o.p[-1] / o.idle,
        # transforms as functions: A, C from their exact Taylor coefficients (the arrival distributions),
        # beta, varphi, L from the laws; P~ from the series of its closed form, P^r from the oracle's law
        A: poly(d["a"] + _coefficients(d["A"], 40)[len(d["a"]):]),
        C: poly(d["c"] + _coefficients(d["C"], 40)[len(d["c"]):]),
        beta: beta_fn, varphi: phi_fn, L: L_fn,
        Ptilde: poly(ptilde_series), Pr: poly(o.p),
    }


def _ranges(label: str, m) -> dict:
    rr = m.capacity
    return {"(0)": {z: [F(1, 10), F(1, 5)]}, "(2b)": {j: range(0, rr)}, "Statement 1": {j: range(0, rr + 1)},
            "(9')": {}, "(9)": {j: range(0, rr)}, "(10)": {}, "Statement 2 (11)": {}, "(12')": {j: range(0, rr + 1)},
            "Theorem 1.1 (12)": {}, "Theorem 1.1'": {}, "(13')": {z: [F(1, 20), F(1, 10)]},
            "Theorem 1.2 (13)": {z: [F(1, 2), F(1)]}, "(14)": {}, "Corollary 1 (15)": {}}[label]


def _hook(label: str):
    """Evaluate the displayed relation ``label`` at every exact point (the oracle solved in rationals)."""

    def run(digits):
        worst, count = math.inf, 0
        for name in _EXACT_POINTS:
            model = exact_sequences(name)["model"]
            env = _env(name)
            ok, agreed, _ = relation_check(REL[label], lambda d: (env, _ranges(label, model)))(digits)
            worst = min(worst, agreed)
            count += 1
        # (13') and (0) compare transforms truncated at 40 Taylor terms near 0: ~25 digits at z <= 1/10
        need = min(digits - 5, 20) if label in ("(13')", "(0)") else digits - 5
        return worst >= need, worst, f"evaluated as displayed at {', '.join(_EXACT_POINTS)} (exact CTMC)"

    return run


# -- checks -----------------------------------------------------------------------------------------------------


def _check_cut_form(digits):
    """(2b) == (2a): summing (2) over levels 0..j, with symbolic a_n, c_n (exact, j <= 4)."""
    n = 6
    a_ = sp.symbols(f"a0:{n}", positive=True)
    c_ = sp.symbols(f"c0:{n}", positive=True)
    q2a, q2b = [sp.Integer(1)], [sp.Integer(1)]
    for jj in range(n - 2):
        q2a.append((q2a[jj] - c_[jj] - sum(q2a[ii] * a_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0])
        abar_ = [1 - sum(a_[: m + 1]) for m in range(n)]
        cbar_ = 1 - sum(c_[: jj + 1])
        q2b.append((cbar_ + sum(q2b[ii] * abar_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0])
    ok = all(exact_identity(x, y) for x, y in zip(q2a, q2b))
    return ok, math.inf, "q~_1..q~_4 of (2b) equal the forward solution of (2) for symbolic a_n, c_n"


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
    return True, math.inf, "q^r_j / q^r_0 = q~_j for j = 0..r, symbolic a_n, c_n, r = 1, 2, 3 (top equation redundant)"


def _engine_vs_oracle(points: dict, what: str):
    def run(digits):
        from ..numeric.backend import mp_context
        from ..numeric.oracles.vacation import solve

        worst = math.inf
        for name, make in points.items():
            model = make()
            e = model.evaluate(digits, include=("p",))
            o = solve(model, mp_context(digits + 10))
            pairs = list(zip(e.p, o.p)) + [(e.q0, o.q[0]), (e.qr, o.q[-1]), (e.idle_probability, o.idle),
                                           (e.loss_probability, o.loss), (e.batch_blocking_probability, o.blocking),
                                           (e.throughput, o.throughput), (e.mean_queue_length, o.mean_queue),
                                           (o.loss, o.loss_from_throughput)]
            worst = min(worst, min(agreement_digits(x, y) for x, y in pairs))
        return worst >= digits - 2, worst, f"{what}: every measure vs the CTMC at {', '.join(points)}"

    return run


def _check_transform_deterministic(digits):
    """(13'): p^r_j / P^r_e of the engine (= p~_j by Corollary 1) vs the Taylor coefficients of P~(z) for
    deterministic service and vacations (exact series with exponentials)."""
    model = FiniteVacationQueue.from_load(R_(3, 5), Geometric(4), Deterministic(R_(3, 200)), Deterministic(R_(3, 40)), 8)
    lam_, Lz = to_sympy(model.rate), model.batch.pgf(z)
    Az = model.service.lst(lam_ - lam_ * Lz)
    Cz = model.vacation.lst(lam_ - lam_ * Lz)
    Pt = (1 - z) * (1 - Cz) / (lam_ * to_sympy(model.vacation.moment(1)) * (1 - Lz) * (Az - z))
    coeffs = series(Pt, z, 0, 8).coeffs
    e = model.evaluate(digits, include=("p",))
    with mpmath.workdps(digits + 10):
        worst = min(agreement_digits(e.p[jj] / e.idle_probability, mpmath.mpf(sp.N(coeffs[jj], digits + 20)))
                    for jj in range(8))
    return worst >= digits - 2, worst, "p^r_j / P^r_e (D service, D vacation) vs the series of P~(z), j = 0..7"


def _wait_vs_tagged_chain(admission, policy):
    """An admitted customer's P(W > t), P(T > t) and E W^2 (numeric/engines/vacation_finite_wait.py, the renewal-
    reward law at the batch's arrival inverted at ``digits``) vs the tagged customer's absorption time in the CTMC
    built from the model definition (uniformization at digits + 10): r = 3 in overload, batches of 1 or 2."""
    def run(digits):
        from ..symbolic.laws import HyperExponential

        vacation = None if policy is None else HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), 1))
        model = FiniteVacationQueue(F(3, 2), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(1, 2)), vacation, 3,
                                    admission, policy or VacationPolicy.MULTIPLE)
        ts = WAIT_CHECK_TIMES
        agreed, _ = wait_oracle_agreement(model, digits)
        return agreed >= digits - 2, agreed, (f"P(W > t), t = {', '.join(ts)}, P(T > 3), E W^2 vs the tagged "
                                              f"customer in the CTMC ({digits + 10} digits)")

    return run


def _rooms_agree(laws, what, ts=("0.5", "3.25", "12.5")):
    """A check: the finite room's exact tails P(W > t), t in ``ts``, at r = 60 and load 0.3 vs the infinite room's,
    for ``laws``: the rooms coincide on every busy cycle that never holds more than r waiting, so the tails differ by
    about the loss probability (the check allows 10 times it). ``what`` describes the two computations."""
    def run(digits):
        from ..symbolic.models.vacation import VacationQueue

        fin = FiniteVacationQueue.from_load(F(3, 10), capacity=60, **laws).evaluate(digits, wait_tail=list(ts))
        inf = VacationQueue.from_load(F(3, 10), **laws).evaluate(digits, wait_tail=list(ts))
        worst, ok = math.inf, True
        with mpmath.workdps(digits + 20):
            for t in ts:
                a, b = fin.response["wait_tail"][t], inf.response["wait_tail"][t]
                ok = ok and abs(a - b) <= 10 * fin.loss_probability + mpmath.mpf(10) ** (1 - digits) * b
                worst = min(worst, agreement_digits(a, b))
        # the criterion is the bound above: the digits agreed are capped by loss / tail (about 42 at t = 12.5)
        return ok, worst, f"r = 60: P(W > t), t = {', '.join(ts)} {what} within 10 x the loss"

    return run


def _constant_service_laws():
    """A constant service in the finite room: the positive sums of ``numeric/kernels/lattice_finite.py`` (over the
    state at the batch's arrival) vs the infinite room's alternating Prabhu sum (``numeric/kernels/lattice_wait.py``,
    checked against Erlang's M/D/1 sum in ``verify vacation-infinite``); loss 6e-55."""
    from ..symbolic.batches import Constant

    return {"batch": Constant(1), "service": Deterministic(1), "vacation": Exponential(F(1, 2))}


def _kinked_vacation_laws():
    """An Erlang-2 service with a constant vacation in the finite room: the positive sums of
    ``numeric/kernels/finite_kinked.py`` (uniformized block chain, the vacation's residual by its overlap weights) vs
    the infinite room's shifted inversions of smooth parts (``numeric/engines/vacation_wait.py``, ``shift_tails``: Euler
    inversion, no kink inverted); loss 2.5e-40."""
    from ..symbolic.batches import Constant

    return {"batch": Constant(1), "service": Erlang(2, 1), "vacation": Deterministic(F(3, 2))}


def _check_largest_load(digits):
    """``size vacation-finite --capacity 3`` (the largest load, float64): the CTMC at ``digits`` meets the target
    at ``load`` and not at ``load_above``; the floor = the CTMC's loss at load 1e-12 (geometric batches: (1/2)^3)."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.vacation import largest_load
    from ..numeric.oracles.vacation import solve

    laws = (Geometric(2), Exponential(1), Exponential(2))
    out = largest_load({"batch": laws[0], "service": laws[1], "vacation": laws[2], "capacity": 3}, F(3, 10))

    def loss(load):  # the float64 answer's loads are exact binary numbers, rounded down / up by largest_load
        return solve(FiniteVacationQueue.from_load(F(load), *laws, 3), mp_context(digits + 10)).loss

    target = mpmath.mpf(3) / 10
    ok = loss(out["load"]) <= target < loss(out["load_above"]) and abs(loss(1e-12) - mpmath.mpf(1) / 8) < 1e-10
    return ok, None, f"loss <= 0.3 at load {float(out['load']):.12g}, > 0.3 just above; floor 1/8 (CTMC)"


@functools.lru_cache(maxsize=1)
@declare(independent={
    "start_threshold": "the steps (BF1)-(BF6) hold for every threshold N <= r (the room refuses larger ones); checked "
                       "at N = 1, 2, 3 against the block chain",
    "setup": "derived for a general setup law (the first-service law Y and the idle times T_k of the blocks); checked "
             "with setups against the block chain",
    "close_down": "derived for a general close-down law (the places r + 1 - k of (BF5), (BF6)); checked with "
                  "close-downs against the block chain",
    "rate": "the steps are in the symbol lambda",
    "batch": "derived for a general batch law (its PGF)",
    "service": "derived for a general service law (its LST)",
    "vacation": "derived for a general vacation law; no vacations are checked against their own chain",
    "capacity": "the steps are in the symbol r",
    "admission": "the steps show partial admission (the thesis); whole admission is checked against its own chain, "
                 "and Statement 1's failure under it is exhibited exactly",
    "vacation_policy": "the steps show multiple vacations (the thesis); single vacations are checked against their "
                       "own chain"})
def derivation() -> Derivation:
    """The registered derivation ``vacation-finite``."""
    def prose(entry):  # (title, citation[, provenance])
        return {"title": entry[0], "citation": entry[1], "provenance": entry[2] if len(entry) > 2 else ""}

    steps = tuple(Step(label, relation=REL[label], check=_hook(label), **prose(_TITLES[label])) for label in REL)
    checks = (
        Check("(2b) = forward solution of [@sopin2013, eq. (2)], symbolic $a_n$, $c_n$", _check_cut_form, "(2b)"),
        Check("Statement 1 from the chain's definition, symbolic, $r = 1, 2, 3$", _check_statement1_symbolic,
              "Statement 1"),
        Check("engine vs CTMC, partial admission ($\\bar\\rho = 1/2, 1, 5$)",
              _engine_vs_oracle(_DIGIT_POINTS, "partial admission"), "Theorem 1.1 (12)"),
        Check("engine vs CTMC: whole admission, no vacation, single vacations",
              _engine_vs_oracle(_VARIANT_POINTS, "variants"), "Theorem 1.1 (12)"),
        Check("(13'): $\\tilde p_j$ vs the series of $\\tilde P(z)$, deterministic laws", _check_transform_deterministic,
              "(13')"),
        *[Check(f"admitted wait and sojourn vs the tagged-customer CTMC ({adm.value}, "
                f"{pol.value if pol else 'no vacations'})", _wait_vs_tagged_chain(adm, pol))
          for adm, pol in ((Admission.PARTIAL, VacationPolicy.MULTIPLE), (Admission.WHOLE, VacationPolicy.SINGLE),
                           (Admission.PARTIAL, None))],
        Check("constant service: finite-room lattice tails = the infinite room's lattice sum at $r = 60$ "
              "(loss $6 \\cdot 10^{-55}$)",
              _rooms_agree(_constant_service_laws(), "by the finite room's positive sums = the infinite room's "
                           "Prabhu sum (constant service)")),
        Check("Erlang service, constant vacations: finite-room tails = the infinite room's shifted inversions at "
              "$r = 60$ (loss $2.5 \\cdot 10^{-40}$)",
              _rooms_agree(_kinked_vacation_laws(), "by the finite room's positive sums = the infinite room's shifted "
                           "inversions (Erlang-2 service, constant vacation 1.5)", ("1.75", "3.25", "12.5"))),
        Check("sizing the room: the largest load = the CTMC at the load and just above it", _check_largest_load),
        *finite_block_checks(),  # the composed variants: the block chain vs a classical closed form
        *statement1_block_checks(),  # where Statement 1 with blocks does not hold: the top at departures, whole
    )
    return Derivation(
        name="vacation-finite",
        title="$M^{[X]}/G/1/r$ with multiple vacations: the finite waiting room through the infinite-room solution",
        source="[@sopin2013, ch. 2, Statements 1 and 2, Theorem 1, Corollary 1]",
        provenance=("docs/theory/chapter2.md section 2", __name__),
        steps=steps + finite_block_steps(),
        checks=checks,
        notes=(
            r"Quantities with a tilde are the unnormalised infinite-room solution ($\tilde q_0 = 1$); they exist for "
            r"every load, so the finite-room relations hold for $\bar\rho < 1$, $\bar\rho = 1$ and $\bar\rho > 1$.",
            r"Numerically the loss is taken from the direct sum (12) with $p^{r}_{r}$ from (10): both are sums of "
            r"positive terms, accurate in double precision down to losses of $10^{-16}$; the load-balance form "
            r"cancels (relative error about $\varepsilon/\pi$).",
            "Variants beside the thesis (checked against a Markov chain): whole-batch admission (a batch that does "
            "not fit is rejected; Statement 1 then no longer holds), no vacation (the classic $M^{[X]}/G/1/r$, "
            "with $C(z) = A(z) L(z)/z$) and single vacations.",
            r"(BF1)-(BF6): the same relations with composed start rules (a close-down, vacations, a start threshold "
            r"$N \le r$, a setup), partial admission, for the chain at departures: $\tilde\pi$, $Y$, $\tilde p$ and "
            r"$\tilde\tau$ are the unbounded room's, unnormalised, and exist for every load. Under whole admission a "
            r"refused batch changes the cuts below the top and Statement 1 does not hold (checked exactly).",
        ),
        recursions=RECURSIONS,
        notation=((rho_bar, sp.Mul(lam, l1, b1, evaluate=False)),),
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
