"""M[X]/G/1 with multiple, single or no vacations, infinite waiting room: Sopin (2013), eqs. (2)-(7).

The derivation runs once with *general* laws (service LST beta(s) with moments b1, b2, b3;
vacation LST varphi(s) with f1, f2, f3; batch PGF L(z) with l1, l2, l3) in
:mod:`qderive.symbolic.closed_forms.vacation_infinite`, for every vacation policy. Steps
(``docs/theory/chapter2.md`` section 1), in the thesis's numbering for multiple vacations:

(2)  balance of the embedded chain at service completions and vacation ends  [evaluated],
(2b) its subtraction-free cut form                                           [evaluated],
(3)  the embedded PGF Q(z) and q0, (4) the embedded-to-time relation          [evaluated],
(5)  the time-stationary PGF P(z) and P_e = 1 - rho_bar, (6) the mean wait W, (7) N = lambda l1 W,
and, beyond the thesis, the variance of the queue length, single vacations (the server takes
one vacation, then idles until the next batch) and no vacations, and the waiting time of a
random customer: its LST W(s) (the decomposition of
:mod:`qderive.symbolic.closed_forms.vacation_wait`), P(W = 0) and the moments E W^k to any
order (``derivation(wait_moments=K)``, ``qderive derive vacation-infinite --wait-moments K``),
the mean checked against (6) and the second moment against Takacs's recursion. From the third
moment on, E W^k is displayed in structure, not expanded: W = W_b + J + R (independent parts),
with the moments of the batch work S_b and of J by Faa di Bruno's formula (factorial moments
l_[m] of the batch, partial Bell polynomials of the service moments), those of W_b by Takacs's
recursion, and E W^k, E W_none^k as binomial convolutions (steps (MS), (MJ), (MB), (N8), ...,
(W3), ...), each a paper form proved equal to the derived moment before it is printed.

Every result is computed by SymPy; every relation typeset in index form is evaluated by
``qderive verify`` with the embedded and time-stationary laws of the CTMC built from the
model definition (:mod:`qderive.numeric.oracles.vacation`) and the exact Taylor coefficients
of A(z), C(z), U(z), V(z). ``python -m qderive.derivations.vacation_infinite`` re-derives,
verifies and prints.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import sympy as sp

from ..symbolic.batches import FinitePMF, Geometric
from ..symbolic.capabilities import declare
from ..symbolic.closed_forms import vacation_infinite as VI
from ..symbolic.closed_forms import vacation_wait as VW
from ..numeric.kernels import wait_moments as WM
from ..symbolic.laws import Deterministic, Erlang, Exponential, HyperExponential
from ..symbolic.models.vacation import VacationPolicy, VacationQueue
from . import blocks as composed
from .block_checks import checks as block_checks
from .export.codegen_blocks import given
from .export.codegen_blocks_infinite import infinite_block_forms, infinite_block_rules, infinite_tail_forms
from ..symbolic.numbers import to_sympy
from ..symbolic.pgf import series
from .framework import (
    Check,
    Derivation,
    Step,
    agreement_digits,
    exact_identity,
    relation_check,
)

__all__ = ["derivation", "codegen_forms", "RECURSIONS", "cut_recursion", "arrival_counts", "time_stationary"]

SOURCE = "E. S. Sopin (2013), thesis abstract, chapter 2, eqs. (2)-(7); docs/theory/chapter2.md section 1"

z, lam, c0 = VI.z, VI.lam, VI.c0
b1, b2, b3, f1, f2, f3, l1, l2, l3 = VI.SYMBOLS[1:10]

#: the thesis's abbreviations (chapter 2, section 0): rho-bar = lambda l1 b1, alpha-bar = lambda l1 f1
#: (written in this factor order; :func:`.export.printing.present` substitutes them where they shorten a result)
NOTATION = ((sp.Symbol(r"\bar{\rho}", positive=True), sp.Mul(lam, l1, b1, evaluate=False)),
            (sp.Symbol(r"\bar{\alpha}", positive=True), sp.Mul(lam, l1, f1, evaluate=False)))


# -- reference recursions for the LaTeX export (latexify-py renders them as algorithms) ---------------


def cut_recursion(a, abar, cbar, n):
    r"""(2b): $\tilde q_0 = 1$, $a_0 \tilde q_{j+1} = \bar c_j + \sum_{i=1}^{j} \tilde q_i \bar a_{j-i+1}$."""
    q = [0] * (n + 1)
    q[0] = 1
    for j in range(n):
        s = cbar[j]
        for i in range(1, j + 1):
            s = s + q[i] * abar[j - i + 1]
        q[j + 1] = s / a[0]
    return q


cut_recursion.latex_names = {"q": r"\tilde{q}"}


def arrival_counts(beta, l_k, n):
    r"""$a_n = \sum_{k=0}^{n} \beta_k l^{(k)}_n$ (customers arriving during one service)."""
    s = 0
    for k in range(n + 1):
        s = s + beta[k] * l_k[k][n]
    return s


def time_stationary(q, u, v, C, j):
    r"""$p_j = \bigl(q_0 v_j + \sum_{i=1}^{j+1} q_i u_{j-i+1}\bigr) / C$."""
    s = q[0] * v[j]
    for i in range(1, j + 2):
        s = s + q[i] * u[j - i + 1]
    return s / C


arrival_counts.latex_superscripts = {"l_k": "l"}  # l_k[k][n] is l^{(k)}_n, the k-fold convolution

RECURSIONS = (
    ("The numbers of arrivals during a service", arrival_counts),
    ("The cut recursion (2b), with no subtraction", cut_recursion),
    ("From the embedded to the time-stationary law [@sopin2013, eq. (4)]", time_stationary),
)


# -- the oracle data bound to the displayed relations ------------------------------------------------------

#: a phase-type case (exponential laws: rational PGFs, exact series) and the truncation of its room
_BOUND = ("exp service, exp vacation, geometric batches",
          lambda policy: VacationQueue(F(1, 5), Geometric(F(3, 2)), Exponential(F(1, 2)), Exponential(1), policy), 150)


@functools.lru_cache(maxsize=8)
def _bindings(policy: VacationPolicy, digits: int):
    """(q, p, epoch spacing C) from the oracle CTMC, and exact series a, c, u, v, abar, cbar of the model."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.vacation import solve

    model = _BOUND[1](policy)
    o = solve(model, mp_context(digits + 10), capacity=_BOUND[2])
    n = 12
    lam_, Lz = to_sympy(model.rate), model.batch.pgf(z)
    A = model.service.lst(lam_ - lam_ * Lz)
    C = model.vacation.lst(lam_ - lam_ * Lz)
    coeffs = {name: series(expr, z, 0, n).coeffs for name, expr in
              (("a", A), ("c", C), ("u", (1 - A) / (lam_ * (1 - Lz))), ("v", (1 - C) / (lam_ * (1 - Lz))))}
    exact = {k: [_rational(x) for x in v] for k, v in coeffs.items()}
    exact["abar"] = [1 - sum(exact["a"][: m + 1]) for m in range(n)]
    exact["cbar"] = [1 - sum(exact["c"][: m + 1]) for m in range(n)]
    return o, exact


def _rational(x) -> F:
    """An exact series coefficient as a Fraction (the exponential laws' series are rational; anything else is
    refused, not approximated)."""
    x = x if x.is_Rational else sp.cancel(x)
    if not x.is_Rational:
        raise ValueError(f"a series coefficient is not rational: {x}")
    return F(int(x.p), int(x.q))


_q, _a, _c, _p, _u, _v = sp.symbols("q a c p u v", cls=sp.IndexedBase)
_qt = sp.IndexedBase(r"\tilde{q}")
_abar, _cbar = sp.IndexedBase(r"\bar{a}"), sp.IndexedBase(r"\bar{c}")
_i, _j = sp.symbols("i j", integer=True, nonnegative=True)
_Cm = sp.Symbol("C")

REL_2 = sp.Eq(_q[_j], _q[0] * _c[_j] + sp.Sum(_q[_i] * _a[_j - _i + 1], (_i, 1, _j + 1)))
REL_2B = sp.Eq(_a[0] * _qt[_j + 1], _qt[0] * _cbar[_j] + sp.Sum(_qt[_i] * _abar[_j - _i + 1], (_i, 1, _j)))
REL_4 = sp.Eq(_p[_j], (_q[0] * _v[_j] + sp.Sum(_q[_i] * _u[_j - _i + 1], (_i, 1, _j + 1))) / _Cm)


def _need(digits):
    return min(digits - 6, 45)  # the oracle's truncation at 150 places leaves a tail of ~1e-53


def _bind_2(digits):
    o, ex = _bindings(VacationPolicy.MULTIPLE, digits)
    return {_q: o.q, _a: ex["a"], _c: ex["c"]}, {_j: range(0, 8)}


def _bind_2b(digits):
    o, ex = _bindings(VacationPolicy.MULTIPLE, digits)
    qt = [x / o.q[0] for x in o.q]
    return {_qt: qt, _a: ex["a"], _abar: ex["abar"], _cbar: ex["cbar"]}, {_j: range(0, 8)}


def _bind_4(digits):
    o, ex = _bindings(VacationPolicy.MULTIPLE, digits)
    return {_p: o.p, _q: o.q, _u: ex["u"], _v: ex["v"], _Cm: 1 / o.epoch_rate}, {_j: range(0, 8)}


# -- checks ------------------------------------------------------------------------------------------------


def _exact(lhs, rhs, what):
    def run(digits):
        ok = exact_identity(lhs(), rhs())
        return ok, math.inf, what + (" holds exactly" if ok else " does NOT cancel to 0")

    return run


def _thesis_P():
    g = VI.general_results("multiple")
    return (1 - lam * l1 * b1) * (1 - z) * (1 - g["C"]) / (lam * f1 * (1 - g["L"]) * (g["A"] - z))


def _thesis_W():
    rb = lam * l1 * b1
    return f2 / (2 * f1) + lam * l1 * b2 / (2 * (1 - rb)) + (l2 - l1) * b1 / (2 * l1 * (1 - rb))


def _single_W_literature():
    """Single vacations (Takagi 1991, vol. 1, section 2.3, batch arrivals): the residual vacation term
    lambda f2 / (2 (lambda f1 + varphi(lambda))) replaces f2 / (2 f1)."""
    rb = lam * l1 * b1
    return lam * l1 * b2 / (2 * (1 - rb)) + (l2 - l1) * b1 / (2 * l1 * (1 - rb)) + lam * f2 / (2 * (lam * f1 + c0))


def _P_equals_thesis(digits):
    """(5) as the thesis writes it equals the P(z) derived from (3) and (4): compared through their
    Taylor coefficients at z = 1 up to order 2 (general laws, exact)."""
    from ..symbolic.pgf import derivatives_at

    g = VI.general_results("multiple")
    sub = VI.substitute_moments
    mine = derivatives_at(g["P"], z, 1, 2, sub)
    thesis = derivatives_at(_thesis_P(), z, 1, 2, sub)
    ok = all(exact_identity(a, b) for a, b in zip(mine, thesis))
    return ok, math.inf, "P(1), P'(1), P''(1) of the thesis's (5) equal those of the derived P(z)"


def _mg1_special_case(digits):
    g = VI.general_results("multiple")
    W1 = g["W"].subs({l1: 1, l2: 1})
    expected = lam * b2 / (2 * (1 - lam * b1)) + f2 / (2 * f1)
    return exact_identity(W1, expected), math.inf, "W(l1=l2=1) = Pollaczek-Khinchine + residual vacation f2/(2 f1)"


def _none_case(digits):
    g = VI.general_results("none")
    rb = lam * l1 * b1
    expected = lam * l1 * b2 / (2 * (1 - rb)) + (l2 - l1) * b1 / (2 * l1 * (1 - rb))
    return exact_identity(g["W"], expected), math.inf, "no vacations: W = the M[X]/G/1 mean wait (Burke 1975)"


def _takacs_second_moment(policy: str):
    """E W^2 assembled from the decomposition W = W_b + J + V_r (independent parts), each part's moments
    computed another way than the series of W(s): W_b by Takacs's recursion for M/G/1 applied to the batch
    work S (E W_b = lambda E S^2 / (2 (1 - rho_bar)), E W_b^2 = 2 (E W_b)^2 + lambda E S^3 / (3 (1 - rho_bar)),
    Takacs 1962), S = a sum of X services (compound moments), J = a sum of K services with
    E C(K, m) = E C(X, m + 1) / l_1, and the residual non-serving period (E V_r^n = f_{n+1} / ((n + 1) f_1) for
    multiple vacations, times lambda f_1 / (lambda f_1 + c_0) for single ones)."""
    b = [None, b1, b2, b3]
    f = [None, f1, f2, f3]
    rb = lam * l1 * b1
    ES2 = l1 * b2 + (l2 - l1) * b1**2
    ES3 = l1 * b3 + 3 * (l2 - l1) * b1 * b2 + (l3 - 3 * l2 + 2 * l1) * b1**3
    Wb1 = lam * ES2 / (2 * (1 - rb))
    Wb2 = 2 * Wb1**2 + lam * ES3 / (3 * (1 - rb))
    EK = (l2 - l1) / (2 * l1)
    EKK = (l3 - 3 * l2 + 2 * l1) / (3 * l1)  # E K (K - 1) = 2 E C(X, 3) / l_1
    J1, J2 = EK * b[1], EK * b[2] + EKK * b[1] ** 2
    weight = {"multiple": sp.Integer(1), "single": lam * f1 / (lam * f1 + c0), "none": sp.Integer(0)}[policy]
    V1, V2 = weight * f[2] / (2 * f1), weight * f[3] / (3 * f1)
    return Wb2 + J2 + V2 + 2 * (Wb1 * J1 + Wb1 * V1 + J1 * V1)


def _wait_mean_check(policy):
    def run(digits):
        ok = exact_identity(VW.wait_moments(policy, 1)[0], VI.general_results(policy)["W"])
        return ok, math.inf, f"({policy}) -W'(0) = the mean wait of P'(1)/(lambda l1) ((6) for multiple vacations)"

    return run


def _wait_second_check(policy):
    def run(digits):
        ok = exact_identity(VW.wait_moments(policy, 2)[1], _takacs_second_moment(policy))
        return ok, math.inf, f"({policy}) W''(0) = E W^2 from Takacs's recursion and the decomposition"

    return run


def _md1_erlang_check(digits):
    """Constant service: the exact lattice tails (``numeric/kernels/lattice_wait.py``) vs Erlang's M/D/1 sum
    P(W <= t) = (1 - rho) sum_{k <= t} e^{rho (t - k)} (rho (k - t))^k / k! (D = 1, rho = 4/5), written here
    independently at 2 D + 60 digits, down to t = 40.5 (a tail of 2.3e-8 whose float64 sum returns 432)."""
    import mpmath

    from ..symbolic.batches import Constant

    ts = ("0.5", "3.25", "40.5")
    r = VacationQueue(F(4, 5), Constant(1), Deterministic(1), None).evaluate(digits, wait_tail=list(ts))
    worst = math.inf
    with mpmath.workdps(2 * digits + 60):
        lam = mpmath.mpf(4) / 5
        for text in ts:
            t = mpmath.mpf(F(text).numerator) / F(text).denominator
            s = mpmath.fsum(mpmath.exp(lam * (t - k)) * (lam * (k - t)) ** k / mpmath.factorial(k)
                            for k in range(int(mpmath.floor(t)) + 1))
            want, got = 1 - (1 - lam) * s, mpmath.mpf(r.response["wait_tail"][text])
            worst = min(worst, math.inf if got == want else float(-mpmath.log10(abs(got - want) / want)))
    return worst >= digits - 1, worst, "M/D/1 (rho = 0.8) P(W > t), t = 0.5, 3.25, 40.5: lattice sum = Erlang's sum"


def _sojourn_check(digits):
    ok = all(exact_identity(VW.sojourn_moments(p, 1)[0], VI.general_results(p)["W"] + b1) for p in VW.POLICIES)
    return ok, math.inf, "E T = E W + b1 for the three policies"


def _p_zero_check(digits):
    """P(W = 0) of the formula vs SymPy's limit of W(s) at s -> oo for concrete phase-type laws."""
    ok = True
    for policy in VW.POLICIES:
        model = _BOUND[1](VacationPolicy.SINGLE if policy == "single" else VacationPolicy.MULTIPLE)
        laws = {"service": model.service, "vacation": model.vacation, "batch": model.batch,
                "rate": to_sympy(model.rate), "zero_count": to_sympy(model.moment_values()[-1])}
        limit = sp.limit(VW.wait_transform(policy, **laws), VW.s, sp.oo)
        values = dict(zip(VI.SYMBOLS, [to_sympy(v) for v in model.moment_values()]))
        ok = ok and sp.simplify(limit - VW.p_wait_zero(policy).subs(values)) == 0
    return ok, math.inf, "P(W = 0) = lim W(s), s -> oo (exp service and vacation, geometric batches, 3 policies)"


#: the times of the response checks against the tagged customer's chain
WAIT_CHECK_TIMES = ("1/2", "3", "20")


def wait_oracle_agreement(model, digits):
    """(digits agreed, oracle): the model's P(W > t) at ``WAIT_CHECK_TIMES``, P(T > 3) and E W^2 at ``digits``
    vs the tagged customer's absorption time in the CTMC built from the model definition (uniformization
    at digits + 10, :func:`qderive.numeric.oracles.wait.tagged_wait`); shared by the vacation models' checks."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.wait import tagged_wait

    ts = WAIT_CHECK_TIMES
    o = tagged_wait(model, mp_context(digits + 10), times=tuple(F(t) for t in ts), moments=2, sojourn=True)
    r = model.evaluate(digits, wait_tail=list(ts), wait_moments=2, sojourn_tail=["3"])
    agreed = min([agreement_digits(r.response["wait_tail"][t], x) for t, x in zip(ts, o.tail)]
                 + [agreement_digits(r.response["sojourn_tail"]["3"], o.sojourn.tail[1]),
                    agreement_digits(r.response["wait_moments"][1], o.moments[1])])
    return agreed, o


def _wait_oracle_check(policy):
    """P(W > t), the sojourn tail and E W^2 of the engine (transform inversion at ``digits``) vs the tagged
    customer's absorption time in the CTMC built from the model definition (uniformization, digits + 10)."""
    def run(digits):
        import mpmath

        vacation = None if policy is None else HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), 1))
        model = VacationQueue(F(1, 5), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(1, 2)), vacation,
                              policy or VacationPolicy.MULTIPLE)
        ts = WAIT_CHECK_TIMES
        agreed, o = wait_oracle_agreement(model, digits)
        need = min(digits - 2, float(-mpmath.log10(o.truncation)) - 5)
        return agreed >= need, agreed, (f"P(W > t), t = {', '.join(ts)}, P(T > 3), E W^2 vs the tagged customer in the "
                                        f"CTMC ({digits + 10} digits); need {need:.0f}")

    return run


#: oracle cases: phase-type laws, the truncation of the room (tail mass checked)#: oracle cases: phase-type laws, the truncation of the room (tail mass checked)
ORACLE_CASES = (
    ("exp service, exp vacation, geometric batches",
     lambda pol: VacationQueue(F(1, 5), Geometric(F(3, 2)), Exponential(F(1, 2)), Exponential(1), pol), 150),
    ("Erlang-2 service, hyperexp vacation, pmf batches",
     lambda pol: VacationQueue(F(1, 5), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(1, 2)),
                               HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), 1)), pol), 150),
)


def _oracle_check(make, capacity, policy):
    def run(digits):
        import mpmath

        from ..numeric.backend import mp_context
        from ..numeric.oracles.vacation import solve

        model = make(policy)
        o = solve(model, mp_context(digits + 10), capacity=capacity)
        got = model.evaluate(digits)
        agreed = min(agreement_digits(got.mean_queue_length, o.mean_queue),
                     agreement_digits(got.queue_length_variance, o.variance),
                     agreement_digits(got.idle_probability, o.idle), agreement_digits(got.q0, o.q[0]))
        need = min(digits - 8, float(-mpmath.log10(o.truncation)) - 8)
        return agreed >= need, agreed, (f"N, Var, P_e, q0 vs the CTMC ({digits + 10} digits, room truncated at "
                                        f"{capacity}, tail {mpmath.nstr(o.truncation, 3)}); need {need:.0f} digits")

    return run


def _embedded_deterministic(digits):
    """q0 of (3) for deterministic service (not phase-type) vs GTH of the embedded chain built from the
    exact Taylor coefficients of A(z) and C(z) (the chain's definition, truncated at K states)."""
    import mpmath

    from ..numeric.backend import mp_context
    from ..numeric.kernels.chains import gth_stationary

    model = VacationQueue(F(1, 2), Geometric(F(5, 4)), Deterministic(F(1, 5)), Exponential(F(1, 10)))
    K = 110
    ctx = mp_context(digits + 10)
    lam_, Lz = to_sympy(model.rate), model.batch.pgf(z)
    A = model.service.lst(lam_ - lam_ * Lz)
    C = model.vacation.lst(lam_ - lam_ * Lz)
    with ctx:
        a = [ctx.num(sp.Rational(0)) + mpmath.mpf(sp.N(x, digits + 20)) for x in series(A, z, 0, K + 1).coeffs]
        c = [mpmath.mpf(sp.N(x, digits + 20)) for x in series(C, z, 0, K + 1).coeffs]
        P = ctx.zeros((K + 1, K + 1))
        for j in range(K + 1):
            P[0, j] = c[j] if j < K else 1 - mpmath.fsum(c[:K])
        for i in range(1, K + 1):
            for j in range(i - 1, K + 1):
                P[i, j] = a[j - i + 1] if j < K else 1 - mpmath.fsum(a[: K - i + 1])
        q = gth_stationary(ctx, P)
        got = model.evaluate(digits).q0
        agreed = agreement_digits(got, q[0])
    return agreed >= digits - 10, agreed, f"q0 (D service): (3) vs GTH of the {K + 1}-state embedded chain"


def _twin_check(digits):
    """The vectorised numpy evaluator of the closed forms (codegen's path) vs the exact evaluation."""
    import numpy as np

    from ..numeric.engines.vacation import InfiniteEngine

    model = VacationQueue.example()
    ev = InfiniteEngine()._evaluator("multiple")
    vals = model.moment_values()
    vals[-1] = F(0)
    exact = ev.exact(*vals)
    f64 = ev.numpy(*[np.float64(float(v)) for v in vals])
    agreed = min(agreement_digits(float(x), y) for x, y in zip(f64, exact))
    return agreed >= 13, agreed, "float64 (numpy) vs exact evaluation of every measure"


# -- the derivation ----------------------------------------------------------------------------------------


def _wait_steps(k: int) -> tuple:
    """The waiting-time steps: W(s) and its factors, P(W = 0), E W^j for j <= k (multiple vacations), and the
    single- and no-vacation transforms."""
    Ws_, Ts_ = sp.Function("W")(VW.s), sp.Function("T")(VW.s)
    f = VW.wait_factors("multiple")
    steps = [
        Step("(W)", "The Laplace--Stieltjes transform of the wait of a random customer is the product of the "
             "batch-level Pollaczek--Khinchine factor, the factor of its own batch ahead of it and the residual "
             "vacation (the decomposition of [@fuhrmann_cooper1985]; see also [@chaudhry_templeton1983] and "
             "[@takagi1991, sec. 2.3])", sp.Eq(Ws_, f["batch"] * f["own"] * f["residual"]),
             "", computed=True),
        Step("(T)", "The transform of the sojourn time (the own service is independent of the wait)",
             sp.Eq(Ts_, sp.Function("W")(VW.s) * SERVICE_LST), "", computed=True),
        Step("(SW)", "Single vacations: the residual factor (a batch ends an idle period with probability "
             r"$c_0/(\lambda f_1 + c_0)$)", sp.Eq(sp.Function("V_r")(VW.s), VW.wait_factors("single")["residual"]),
             "", computed=True),
        Step("(W0)", r"The probability of no wait: $(1 - \bar\rho)/l_1$ times the probability that the batch "
             "meets an idle server", sp.And(*[sp.Eq(sp.Symbol(rf"\Pr(W=0)_{{\text{{{p}}}}}"), VW.p_wait_zero(p))
                                               for p in VW.POLICIES]), "", check=_p_zero_check),
    ]
    wait_none = VI.general_results("none")["W"]
    for j, m in enumerate(VW.wait_moments("multiple", k), start=1):
        moment = sp.Symbol("E[W]" if j == 1 else f"E[W^{{{j}}}]")
        if j == 2:
            steps.append(Step("(N7)", "No vacations: the second moment of the wait (Takács's recursion for the work "
                              "of a batch, and the own batch ahead)",
                              sp.Eq(_W2_NONE, VW.wait_moments("none", 2)[1]), "", computed=True,
                              paper=sp.Eq(_W2_NONE, _paper_wait_second_none()),
                              notation=_with((_W_NONE, wait_none))))
        if j >= 3:
            if j == 3:
                steps += _part_steps(k)
            steps.append(Step(f"(N{j + 5})", f"No vacations: the moment of order {j} of the wait" + (
                              r"; $W_{\text{none}} = W_{b} + J$, the sum of independent parts (W)" if j == 3 else
                              ", as in (N8)"),
                              sp.Eq(_moment("W_{none}", j), VW.wait_moments("none", k)[j - 1]), "", computed=True,
                              paper=sp.Eq(_moment("W_{none}", j), _paper_wait_none_moment(j)),
                              notation=_structure_notation(k)))
        paper, notation = {1: (f2 / (2 * f1) + _paper_wait_none(), ()),
                           2: (_paper_wait_second(), _with((_W_NONE, wait_none),
                                                           (_W2_NONE, VW.wait_moments("none", 2)[1])))
                           }.get(j, (None, ()))
        if j >= 3:
            paper, notation = _paper_wait_moment(j), _structure_notation(k)
        title = {1: "The mean wait, $-W'(0)$ (general laws; equal to (6))",
                 2: r"The second moment of the wait, $W''(0)$ (general laws): the wait without vacations (N6), "
                    "(N7) and the residual vacation are independent"}.get(
            j, f"The moment of order {j} of the wait, $(-1)^{{{j}}} W^{{({j})}}(0)$ (general laws)" + (
                r": $W = W_{\text{none}} + R$ with the residual vacation $R$ independent of $W_{\text{none}}$, "
                r"$\mathrm{E}[R^{n}] = f_{n+1}/((n+1) f_{1})$" if j == 3 else ", as in (W3)"))
        steps.append(Step(f"(W{j})", title, sp.Eq(moment, m), "", computed=True,
                          paper=None if paper is None else sp.Eq(moment, paper), notation=notation))
    return tuple(steps)


SERVICE_LST = VI.SERVICE.lst(VW.s)
_RHO, _ALPHA = (symbol for symbol, _ in NOTATION)


def _paper_wait_none():
    """The work of the batches ahead and the own batch ahead, as the thesis writes them (chapter 2, (6)):
    lambda l1 b2 / (2 (1 - rho-bar)) + (l2 - l1) b1 / (2 l1 (1 - rho-bar))."""
    return (1 - _RHO) ** -1 * lam * l1 * b2 / 2 + (l2 - l1) * b1 / (2 * l1 * (1 - _RHO))


#: the named results of the no-vacation steps the paper forms below refer to: W_none (N6), N_none = lambda l1
#: W_none, Var_none (NV), E[W_none^2] (N7)
_W_NONE, _N_NONE = sp.Symbol("W_{none}"), sp.Symbol("N_{none}")
_VAR_NONE, _W2_NONE = sp.Symbol(r"\mathrm{Var}_{none}"), sp.Symbol("E[W_{none}^{2}]")


def _over(x, k):
    """x / (k (1 - rho-bar)), written so that SymPy keeps the factor 1 - rho-bar (not k - k rho-bar)."""
    return (1 - _RHO) ** -1 * x / k


def _paper_wait_single():
    """(S6) as Takagi (1991, vol. 1, sec. 2.3) writes it for batch arrivals: the batch terms of (6) and the
    residual vacation lambda f2 / (2 (c0 + lambda f1)) in place of f2 / (2 f1)."""
    return (c0 + lam * f1) ** -1 * lam * f2 / 2 + _paper_wait_none()


def _paper_variance():
    """Var(N) by the stochastic decomposition (Fuhrmann and Cooper 1985): the queue without vacations and the
    arrivals during the residual vacation (moments f2/(2 f1), f3/(3 f1); a compound Poisson count) are
    independent, so their variances add: Var_none + lambda l2 f2/(2 f1) + lambda^2 l1^2 (f3/(3 f1) - f2^2/(4 f1^2))."""
    return _VAR_NONE + lam * l2 * f2 / (2 * f1) + lam**2 * l1**2 * (f3 / (3 * f1) - f2**2 / (4 * f1**2))


def _paper_variance_none():
    """Var(N) without vacations: N_none + N_none^2 + lambda (lambda^2 l1^3 b3 + 3 lambda l1 (l2 - l1) b2
    + (l3 - 3 l2 + 2 l1) b1) / (3 (1 - rho-bar)); for single arrivals the M/G/1 form N + N^2 + lambda^3 b3/(3 (1 - rho))
    (E Lq (Lq - 1) = lambda^2 E W^2 with Takacs's E W^2)."""
    return (_N_NONE + _N_NONE**2 + _over(lam**3 * l1**3 * b3, 3) + _over(lam**2 * l1 * (l2 - l1) * b2, 1)
            + _over(lam * (l3 - 3 * l2 + 2 * l1) * b1, 3))


def _paper_wait_second():
    """E W^2 (multiple vacations) by the decomposition W = W_none + V_r (Fuhrmann and Cooper 1985):
    E W_none^2 + 2 W_none f2/(2 f1) + f3/(3 f1)."""
    return f3 / (3 * f1) + f2 / f1 * _W_NONE + _W2_NONE


def _paper_wait_second_none():
    """Takacs's second moment of the wait for batches: 2 W_none^2 + (lambda l1 b3/3 + (l2 - l1) b2/(2 l1)
    + (l1^2 + 2 l1 l3 - 3 l2^2) b1^2/(6 l1^2)) / (1 - rho-bar) (for single arrivals 2 W^2 + lambda b3/(3 (1 - rho)))."""
    return (2 * _W_NONE**2 + _over(lam * l1 * b3, 3) + _over((l2 - l1) * b2 / l1, 2)
            + _over((l1**2 + 2 * l1 * l3 - 3 * l2**2) * b1**2 / l1**2, 6))


def _with(*pairs) -> tuple:
    """The derivation's notation and the named results ``pairs`` a paper form refers to (restored to prove it)."""
    return NOTATION + tuple(pairs)


# -- E W^k for k >= 3 in structure: W = W_b + J + R ------------------------------------------------------------
# The decomposition of (W) (Fuhrmann and Cooper 1985; for batches Chaudhry and Templeton 1983, Takagi 1991 vol. 1
# sec. 2.3): the batch-level wait W_b (Pollaczek-Khinchine with the work S of a batch as the service time), the
# service J of the own batch ahead and the residual vacation R are independent, so E W^k is a binomial
# convolution of their moments; each part has a short form (Takacs's recursion, Faa di Bruno's formula).


def _moment(var: str, n: int):
    """The named result E[var^n] (``W_none`` for the mean of ``W_{none}``, as (N6) names it)."""
    if var == "W_{none}" and n == 1:
        return _W_NONE
    return sp.Symbol(f"E[{var}]" if n == 1 else f"E[{var}^{{{n}}}]")


def _factorial_moment(m: int):
    """l_[m] = E X (X - 1) ... (X - m + 1) = sum_i s(m, i) l_i (Stirling numbers of the first kind); l_[1] = l_1."""
    from sympy.functions.combinatorial.numbers import stirling

    return sum(stirling(m, i, kind=1, signed=True) * VI.BATCH.moment(i) for i in range(1, m + 1))


def _l_fact(m: int):
    """The symbol l_[m] of the paper forms (l_1 itself for m = 1)."""
    return l1 if m == 1 else sp.Symbol(f"l_{{[{m}]}}")


def _bell(n: int, m: int):
    """The partial Bell polynomial B_{n,m}(b_1, ..., b_{n-m+1}) of the service moments."""
    return sp.bell(n, m, [VI.SERVICE.moment(i) for i in range(1, n - m + 2)])


def _paper_work(n: int):
    """E S^n of the work S of a batch (a sum of X service times), by Faa di Bruno's formula for L(beta(s)):
    sum_{m=1}^{n} l_[m] B_{n,m}(b_1, ..., b_{n-m+1}) (:func:`~qderive.numeric.kernels.wait_moments.work_moment`, the
    engine's own step, in symbols)."""
    return WM.work_moment(n, _l_fact, _bell)


def _paper_own(n: int):
    """E J^n of the service of the own batch ahead: the number K ahead has P(K = i) = P(X > i)/l_1 (PGF
    (1 - L(z))/(l_1 (1 - z))), factorial moments l_[m+1]/((m+1) l_1); so E J^n = (1/l_1) sum_{m=1}^{n}
    l_[m+1] B_{n,m}(b_1, ...)/(m + 1) (:func:`~qderive.numeric.kernels.wait_moments.own_moment`)."""
    return WM.own_moment(n, _l_fact, _bell, l1)


def _paper_batch(n: int):
    """Takacs's recursion for the batch-level wait (M/G/1 with service S_b): E W_b^n = lambda/(1 - rho-bar)
    sum_{i=1}^{n} C(n, i) E S^{i+1}/(i + 1) E W_b^{n-i}, E W_b^0 = 1 (Takagi 1991, vol. 1, sec. 2.3;
    :func:`~qderive.numeric.kernels.wait_moments.takacs_moment`)."""
    earlier = [sp.Integer(1), *(_moment("W_{b}", m) for m in range(1, n))]  # E W_b^0 = 1, ..., E W_b^{n-1}
    return WM.takacs_moment(n, lam, 1 - _RHO, lambda j: _moment("S_{b}", j), earlier)


def _paper_wait_none_moment(n: int):
    """E W_none^n = sum_i C(n, i) E W_b^i E J^{n-i}: W_none = W_b + J, independent parts
    (:func:`~qderive.numeric.kernels.wait_moments.convolution`)."""
    return WM.convolution(n, [1, *(_moment("W_{b}", i) for i in range(1, n + 1))],
                          [1, *(_moment("J", i) for i in range(1, n + 1))])


def _paper_wait_moment(n: int):
    """E W^n = sum_i C(n, i) E W_none^i f_{n-i+1}/((n-i+1) f_1): W = W_none + R, the residual vacation R
    independent (Fuhrmann and Cooper 1985; :func:`~qderive.numeric.kernels.wait_moments.residual_moment`)."""
    residual = [1, *(WM.residual_moment(j, VI.VACATION.moment, f1) for j in range(1, n + 1))]
    return WM.convolution(n, [1, *(_moment("W_{none}", i) for i in range(1, n + 1))], residual)


@functools.lru_cache(maxsize=8)
def _structure_notation(k: int) -> tuple:
    """The notation and the named results the paper forms of order <= k refer to, each with its derived value:
    l_[m], E S^n, E W_b^n, E J^n, E W_none^n (restored to prove a form)."""
    work, batch, own = (VW.part_moments(p, n) for p, n in (("work", k + 1), ("batch", k), ("own", k)))
    none = VW.wait_moments("none", k)
    return _with(*[(_l_fact(m), _factorial_moment(m)) for m in range(2, k + 2)],
                 *[(_moment("S_{b}", n), work[n - 1]) for n in range(2, k + 2)],
                 *[(_moment("W_{b}", n), batch[n - 1]) for n in range(1, k + 1)],
                 *[(_moment("J", n), own[n - 1]) for n in range(1, k + 1)],
                 *[(_moment("W_{none}", n), none[n - 1]) for n in range(1, k + 1)])


#: the parts' steps: label, title, the part of :data:`VW.PARTS`, its variable, the orders shown, the paper form
_PART_STEPS = (
    ("(MS)", r"The moments of the work $S_{b}$ of a batch, the sum of $X$ service times (Faà di Bruno's formula): "
             r"$\mathrm{E}[S_{b}^{n}] = \sum_{m=1}^{n} l_{[m]} B_{n,m}(b_{1}, \dots, b_{n-m+1})$ with the factorial "
             r"moments $l_{[m]} = \mathrm{E}[X (X-1) \cdots (X-m+1)]$ of the batch size and the partial Bell "
             r"polynomials $B_{n,m}$", "work", "S_{b}", lambda k: range(2, k + 2), _paper_work),
    ("(MJ)", r"The moments of the service $J$ of the customers of its own batch ahead of a random customer: their "
             r"number $K$ has $\Pr(K = i) = \Pr(X > i)/l_{1}$ and the factorial moments $l_{[m+1]}/((m+1) l_{1})$, "
             r"so $\mathrm{E}[J^{n}] = \sum_{m=1}^{n} l_{[m+1]} B_{n,m}(b_{1}, \dots, b_{n-m+1})/((m+1) l_{1})$",
     "own", "J", lambda k: range(1, k + 1), _paper_own),
    ("(MB)", r"The moments of the batch-level wait $W_{b}$, the wait of $M/G/1$ with the work $S_{b}$ of a batch as "
             r"its service time (the first factor of (W)), by Takács's recursion: $\mathrm{E}[W_{b}^{n}] = "
             r"\lambda (1 - \bar\rho)^{-1} \sum_{i=1}^{n} \binom{n}{i} \mathrm{E}[S_{b}^{i+1}] "
             r"\mathrm{E}[W_{b}^{n-i}]/(i+1)$ with $\mathrm{E}[W_{b}^{0}] = 1$ [@takagi1991, sec. 2.3]",
     "batch", "W_{b}", lambda k: range(1, k + 1), _paper_batch),
)


def _part_steps(k: int) -> list:
    """The steps (MS), (MJ), (MB): the moments of the parts up to the orders E W^k needs, as their paper forms
    (proved equal to the moments of the parts' transforms); a part whose display would be longer than the
    export's row limit is shown in several displays ((MS.1), (MS.2), ...)."""
    from .export.latex import MAX_ROWS, WIDTH
    from .export.printing import rows

    notation = _structure_notation(k)
    out = []
    for label, title, part, var, orders, paper_of in _PART_STEPS:
        ns = list(orders(k))
        derived = VW.part_moments(part, max(ns))
        pairs = [(sp.Eq(_moment(var, n), derived[n - 1]), sp.Eq(_moment(var, n), paper_of(n))) for n in ns]
        chunks, current = [], []
        for pair in pairs:  # greedy: as many orders per display as fit in the row limit
            trial = current + [pair]
            if current and len(rows(sp.And(*[p for _, p in trial]), WIDTH, None)) > MAX_ROWS:
                chunks.append(current)
                trial = [pair]
            current = trial
        chunks.append(current)
        for c, chunk in enumerate(chunks, start=1):
            name = label if len(chunks) == 1 else f"{label[:-1]}.{c})"
            out.append(Step(name, title if c == 1 else f"{title} (continued)",
                            sp.And(*[d for d, _ in chunk]), "", computed=True,
                            paper=sp.And(*[p for _, p in chunk]), notation=notation))
    return out


@functools.lru_cache(maxsize=8)
@declare(independent={
    "start_threshold": "the structure (B1), (B2) holds for every threshold; the steps are in general laws (the "
                       "threshold's renewal sums are checked for N = 1..5)",
    "setup": "derived for a general setup law (its LST sigma(s) and moments s_k)",
    "close_down": "derived for a general close-down law (its LST delta(s) and moments d_k)",
    "rate": "the steps are in the symbol lambda",
    "batch": "derived for a general batch law (its PGF L(z) and moments l_k)",
    "service": "derived for a general service law (its LST beta(s) and moments b_k)",
    "vacation": "derived for a general vacation law (its LST varphi(s)) and without vacations",
    "vacation_policy": "derived for every policy (multiple, single, none)"})
def derivation(wait_moments: int = 2) -> Derivation:
    """The registered derivation ``vacation-infinite``; ``wait_moments``: the order of the last moment of the
    wait shown (``qderive derive vacation-infinite --wait-moments K``)."""
    if not isinstance(wait_moments, int) or isinstance(wait_moments, bool) or not 1 <= wait_moments <= 8:
        from ..symbolic.errors import ParameterError

        raise ParameterError("wait_moments", "must be an integer from 1 to 8", wait_moments)
    from ..symbolic import limits

    limits.check("derive_moments", wait_moments, "each moment's structured displays are proved equal to the derived "
                 "moment before printing, and the proofs grow quickly with the order")
    g = VI.general_results("multiple")
    gs = VI.general_results("single")
    gn = VI.general_results("none")
    Q_, P_ = sp.Function("Q")(z), sp.Function("P")(z)
    W_, N_, Var_, q0s, Pes = sp.symbols(r"W N \operatorname{Var} q_0 P_e")
    Ws, Wn, q0single = sp.symbols(r"W_{single} W_{none} q_{0}^{single}")
    cite = "[@sopin2013, eq. ({})]".format
    steps = (
        Step("(2)", "The balance equations of the embedded chain (service completions and vacation ends)", REL_2,
             cite(2),
             check=relation_check(REL_2, _bind_2, need=_need, describe=" with the CTMC's embedded law")),
        Step("(2b)", r"The cut form of (2): the flow up equals the flow down across the cut between $j$ and "
             "$j+1$, with no subtraction", REL_2B, "", provenance="docs/theory/chapter2.md section 1",
             check=relation_check(REL_2B, _bind_2b, need=_need)),
        Step("A, C", "The generating functions of the numbers of customers arriving during one service and "
             "during one vacation", sp.And(sp.Eq(sp.Function("A")(z), g["A"]), sp.Eq(sp.Function("C")(z), g["C"])),
             "", provenance="docs/theory/chapter2.md section 0", computed=True),
        Step("(3)", "The generating function of the embedded queue length", sp.Eq(Q_, g["Q"]), cite(3), computed=True),
        Step("(3')", "The probability that the embedded queue is empty", sp.Eq(q0s, g["q0"]), cite(3), computed=True),
        Step("(4)", "From the embedded to the time-stationary law (a semi-Markov process, renewal reward)", REL_4,
             cite(4),
             check=relation_check(REL_4, _bind_4, need=_need, describe=" with the CTMC's laws")),
        Step("(4')", "The mean time between embedded epochs", sp.Eq(_Cm, g["C_embedded"]), "",
             provenance="docs/theory/chapter2.md section 1", computed=True),
        Step("(5)", "The generating function of the time-stationary queue length, in the thesis's form (equal to "
             "the derived $P(z)$)",
             sp.Eq(P_, _thesis_P()), cite(5), check=_P_equals_thesis),
        Step("(5')", "The probability that the server is on vacation", sp.Eq(Pes, g["P_e"]), cite(5),
             computed=True),
        Step("(6)", "The mean wait: the residual vacation, the work of the batches ahead and the customer's own "
             "batch ahead of it", sp.Eq(W_, g["W"]), cite(6), computed=True,
             paper=sp.Eq(W_, f2 / (2 * f1) + _paper_wait_none())),
        Step("(7)", "The mean queue length, by Little's law", sp.Eq(N_, g["N"]), cite(7), computed=True,
             paper=sp.Eq(N_, lam * l1 * W_), notation=_with((W_, g["W"]))),
        Step("Var", r"The variance of the queue length, $P''(1) + N - N^2$ (not in the thesis; from (5)): that "
             "without vacations (NV) plus that of the number of arrivals during the residual vacation, which is "
             "independent of it [@fuhrmann_cooper1985]", sp.Eq(Var_, g["variance"]), "", computed=True,
             paper=sp.Eq(Var_, _paper_variance()), notation=_with((_VAR_NONE, gn["variance"]))),
        Step("(S3')", r"Single vacations: the probability that the embedded queue is empty ($c_0 = "
             r"\varphi(\lambda)$ is the probability of no batch during a vacation)", sp.Eq(q0single, gs["q0"]), "",
             computed=True, paper=sp.Eq(q0single, (1 - _RHO) / (1 - _RHO + _ALPHA + c0 * (l1 - 1 + _RHO)))),
        Step("(S6)", "Single vacations: the mean wait; the residual vacation term of (6) becomes "
             r"$\lambda f_2/(2 (c_0 + \lambda f_1))$ [@takagi1991, sec. 2.3]", sp.Eq(Ws, gs["W"]), "",
             computed=True, paper=sp.Eq(Ws, _paper_wait_single())),
        Step("(N6)", "No vacations: the mean wait of $M^{[X]}/G/1$", sp.Eq(Wn, gn["W"]), "", computed=True,
             paper=sp.Eq(Wn, _paper_wait_none())),
        Step("(NV)", r"No vacations: the variance of the queue length, with $N_{\text{none}} = \lambda l_1 "
             r"W_{\text{none}}$ the mean queue length", sp.Eq(_VAR_NONE, gn["variance"]), "", computed=True,
             paper=sp.Eq(_VAR_NONE, _paper_variance_none()), notation=_with((_N_NONE, lam * l1 * gn["W"]))),
        *_wait_steps(wait_moments),
    )
    checks = []
    for pol in ("multiple", "single", "none"):
        gp = VI.general_results(pol)
        checks.append(Check(f"({pol}) $Q(1) = 1$ and $P(1) = 1$, general laws, exact",
                            _exact(lambda gp=gp: gp["Q(1)"] + gp["P(1)"], lambda: 2, "Q(1) + P(1) = 2")))
        checks.append(Check(f"({pol}) $P_e = 1 - \\bar\\rho$, general laws, exact",
                            _exact(lambda gp=gp: gp["P_e"], lambda: 1 - lam * l1 * b1, "P_e = 1 - rho_bar")))
    checks += [
        Check("(6) the thesis's mean wait $P'(1)/(\\lambda l_1)$, exact", _exact(lambda: g["W"], _thesis_W, "(6)")),
        Check("the $M/G/1$ special case = Pollaczek-Khinchine and Fuhrmann-Cooper", _mg1_special_case),
        Check("single vacations: W = Takagi's formula", _exact(lambda: gs["W"], _single_W_literature, "(S6)")),
        Check("no vacations: $W$ = that of $M^{[X]}/G/1$", _none_case),
        Check("$q_0$ of (3) vs the embedded chain, deterministic service", _embedded_deterministic),
        *[Check(f"({p}) $E W$ from $W(s)$ = the mean wait", _wait_mean_check(p)) for p in VW.POLICIES],
        *[Check(f"({p}) $E W^2$ from $W(s)$ = Takács and the decomposition", _wait_second_check(p))
          for p in VW.POLICIES],
        Check("$E T = E W + b_1$ (sojourn transform)", _sojourn_check),
        Check("constant service: lattice tails = Erlang's $M/D/1$ sum", _md1_erlang_check),
        *[Check(f"({p.value if p else 'none'}) wait and sojourn tails vs the tagged-customer CTMC",
                _wait_oracle_check(p)) for p in (VacationPolicy.MULTIPLE, VacationPolicy.SINGLE, None)],
    ]
    for name, make, cap in ORACLE_CASES:
        for pol in (VacationPolicy.MULTIPLE, VacationPolicy.SINGLE):
            checks.append(Check(f"$N$, its variance, $P_e$, $q_0$ vs CTMC ({pol.value}): {name}",
                                _oracle_check(make, cap, pol)))
    checks.append(Check("$N$, $q_0$ vs CTMC (no vacations): exp, geometric",
                        _oracle_check(lambda pol: VacationQueue(F(1, 5), Geometric(F(3, 2)), Exponential(F(1, 2)), None),
                                      150, None)))
    checks.append(Check("numpy vs exact evaluators agree", _twin_check))
    checks += block_checks()  # the composed variants: the block chain vs classical closed forms
    checks += composed.block_checks()  # the composed structure in symbols: two interpreters, the literature
    steps = tuple(steps) + composed.block_steps(NOTATION)
    return Derivation(
        name="vacation-infinite",
        title="$M^{[X]}/G/1$ with multiple (or single, or no) vacations and an infinite waiting room, and with a "
              "close-down, a start threshold and a setup",
        source="[@sopin2013, ch. 2, eqs. (2)--(7)]",
        provenance=("docs/theory/chapter2.md section 1", __name__),
        steps=steps,
        checks=tuple(checks),
        results=dict(g),
        notes=(r"The laws are general: the service time has the Laplace--Stieltjes transform $\beta(s)$ and the "
               r"moments $b_1, b_2, b_3$, the vacation the transform $\varphi(s)$ and the moments $f_1, f_2, f_3$, "
               r"the batch size the generating function $L(z)$ and the moments $l_1, l_2, l_3$; "
               r"$c_0 = \varphi(\lambda)$.",),
        recursions=RECURSIONS,
        notation=NOTATION,
    )


# -- generated code ----------------------------------------------------------------------------------------

_ARG_DOCS = (
    (lam, "lam", "batch arrival rate lambda [batches per unit time]", "> 0"),
    (b1, "b1", "mean service time [time]", "> 0"),
    (b2, "b2", "second moment of the service time [time^2]", "> 0"),
    (b3, "b3", "third moment of the service time [time^3]", "> 0"),
    (f1, "f1", "mean vacation time [time]", "> 0"),
    (f2, "f2", "second moment of the vacation time [time^2]", "> 0"),
    (f3, "f3", "third moment of the vacation time [time^3]", "> 0"),
    (l1, "l1", "mean batch size E X [customers]", ">= 1"),
    (l2, "l2", "second moment of the batch size E X^2 [customers^2]", ">= 1"),
    (l3, "l3", "third moment of the batch size E X^3 [customers^3]", ">= 1"),
    (c0, "c0", "probability that no batch arrives during a vacation, varphi(lambda)", "[0, 1]"),
)


@declare(*infinite_block_rules(), independent={"rate": "an argument of the generated function", "batch": "its family is fixed by the codegen option of the same name; its numbers are arguments", "service": "its family is fixed by the codegen option of the same name; its numbers are arguments", "vacation": "its family is fixed by the codegen option of the same name; its numbers are arguments",
                      "vacation_policy": "fixed by codegen --vacation-policy",
                      "setup": "fixed by codegen --setup (general: its moments are arguments of the closed forms; a "
                               "family: its numbers are arguments)",
                      "close_down": "fixed by codegen --close-down (general: delta(lambda) is an argument of the closed "
                                    "forms; a family: its numbers are arguments)",
                      "start_threshold": "fixed by codegen --start-threshold (N > 1: the laws' families are fixed)"})
def codegen_forms(request=None) -> dict:
    """``measure -> ClosedForm`` of the measures of ``eval vacation-infinite`` (Python or C), and the tails and
    quantiles of the waiting and sojourn time for law families (:mod:`.export.codegen_wait`, Python only).

    The generated code refuses arguments out of range and rho_bar = lam l1 b1 >= 1.
    """
    from ..symbolic.models.vacation import VacationMeasures
    from .export import codegen_wait
    from .export.codegen import ClosedForm

    policy = "none" if request is not None and request.no_vacation else (
        request.vacation_policy.value if request is not None else "multiple")
    exprs = dict(zip(VI.MEASURE_KEYS, VI.measure_expressions(policy)))
    docs = {f.name: m for f, m in VacationMeasures.measure_fields()}
    stable = ((lam * l1 * b1 < 1, "rho_bar = lam l1 b1 must be < 1: the infinite-room queue has no stationary "
                                   "regime otherwise"),)
    if request is not None and (given(request.setup) or given(request.close_down) or request.start_threshold != 1):
        return {**infinite_block_forms(request, policy, _ARG_DOCS, stable), **infinite_tail_forms(request)}
    what = {"multiple": "multiple vacations", "single": "single vacations", "none": "no vacations"}[policy]
    out = {k: ClosedForm(k, to_sympy(e), _ARG_DOCS, f"{docs[k].help[0].upper()}{docs[k].help[1:]} (M[X]/G/1, "
                         f"{what}), eq. {docs[k].source}.", SOURCE, stable)
           for k, e in exprs.items()}
    return {**out, **codegen_wait.forms(request)}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
