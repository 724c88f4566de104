"""Two-level cluster with k request copies (Bogatyrev & Bogatyrev 2017, seed 004; spec/other-models.md E).

The derivation (``qderive derive redundant-cluster``) obtains the probability of timely
service r = P(W_1 + W_2 <= t_0) by integrating the convolution with SymPy (atoms and
exponentials), derives the theta_1 = theta_2 (Erlang-2) branch by the same integral and
as the limit of the general one, and states the form without the removable singularity
that :mod:`qderive.numeric.cluster` evaluates. ``qderive verify redundant-cluster`` checks
the closed form against ``mpmath.quad`` of the convolution at ``digits`` (including
theta_1 = theta_2, the paper's own example, and theta_1 -> theta_2), the pathwise fault
factor against quadrature, the paper's N-interval sum against its O(1/N) error law, and the
optimal k against a brute-force scan by quadrature.

Command line (a contract)::

    qderive eval redundant-cluster --rate 3 --copies 2 --nodes 10,10 --service-times 0.3,0.3 \\
        --deadline 0.6 [--failure-rates 0,0] [--digits 50] --json
    qderive optimize redundant-cluster --rate 3 --nodes 10,10 --service-times 0.3,0.3 --deadline 0.6 \\
        --max-copies 10 --json                                     # {"copies": 4, "timely_probability": ...}
    qderive figure cluster-fig1 --out docs/figures/cluster-fig1.png --csv docs/figures/cluster-fig1.csv
    qderive figure cluster-fig2 --out docs/figures/cluster-fig2.png --csv docs/figures/cluster-fig2.csv
"""

from __future__ import annotations

import argparse
import csv
import math
from fractions import Fraction

import mpmath
import sympy as sp

from qderive.numeric import cluster as C
from qderive.numeric.backend import FLOAT64, backend_for, mp_backend
from qderive.symbolic._exact import ParameterError

from .cli_args import parse_number, parse_number_list
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits, exact_identity

__all__ = [
    "COMMAND",
    "RedundantClusterCommand",
    "derivation",
    "timely_closed_form",
    "figure_cluster1",
    "figure_cluster2",
]

SOURCE = (
    "V. A. Bogatyrev, S. V. Bogatyrev, \"Reserved service of requests, critical to waiting delays, in "
    "two-level systems\", J. Instrument Engineering 60(10), 2017, 945-950 (seed 004); "
    "spec/other-models.md section E"
)

# -- symbols --------------------------------------------------------------------------
t, w, x = sp.symbols("t w x", nonnegative=True)
rho1, rho2, th1, th2, th = sp.symbols("rho_1 rho_2 theta_1 theta_2 theta", positive=True)
Lam, v1, v2, nn, mm, kk = sp.symbols("Lambda v_1 v_2 n m k", positive=True)
r_sym, R_sym, rN, d = sp.symbols("r R r_N d", positive=True)
Lam1, Lam2, T1, T2, w1, w2 = sp.symbols("Lambda_1 Lambda_2 T_1 T_2 w_1 w_2", positive=True)
l10, l11, l20, l21 = sp.symbols("lambda_10 lambda_11 lambda_20 lambda_21", nonnegative=True)
i_, N_ = sp.symbols("i N", integer=True, positive=True)
F1, F2, S_, phi_ = sp.Function("F_1"), sp.Function("F_2"), sp.Function("S"), sp.Function("phi")


def _F(rho, theta, arg):
    """F_i(w) = P(W_i <= w) = 1 - rho_i e^{-theta_i w} (M/M/1 waiting time)."""
    return 1 - rho * sp.exp(-theta * arg)


def timely_closed_form(equal: bool = False) -> sp.Expr:
    """r(t) = P(W_1 + W_2 <= t) integrated by SymPy: (1 - rho_1) F_2(t) + int_0^t f_1(w) F_2(t - w) dw.

    ``equal=True`` integrates with theta_1 = theta_2 = theta (the Erlang-2 branch).
    """
    a, b = (th, th) if equal else (th1, th2)
    conv = sp.integrate(rho1 * a * sp.exp(-a * w) * _F(rho2, b, t - w), (w, 0, t), conds="none")
    if isinstance(conv, sp.Piecewise):  # SymPy splits on theta_1 = theta_2: keep the generic piece
        conv = conv.args[0][0]
    return sp.simplify((1 - rho1) * _F(rho2, b, t) + conv)


def _stable_late(theta_a, theta_b):
    """The evaluated form: 1 - r with S(t) = e^{-theta_a t}(1 + theta_a t phi(x)), phi(x) = (1 - e^{-x})/x."""
    xx = (theta_b - theta_a) * t
    phi_expr = (1 - sp.exp(-xx)) / xx
    surv = sp.exp(-theta_a * t) * (1 + theta_a * t * phi_expr)
    return (1 - rho1) * rho2 * sp.exp(-th2 * t) + rho1 * (1 - rho2) * sp.exp(-th1 * t) + rho1 * rho2 * surv


def _steps() -> tuple[Step, ...]:
    late = (1 - rho1) * rho2 * sp.exp(-th2 * t) + rho1 * (1 - rho2) * sp.exp(-th1 * t) + rho1 * rho2 * S_(t)
    return (
        Step("(L)", "loads and decay rates of the M/M/1 nodes (copies split evenly over n and m nodes)",
             sp.Eq(sp.Tuple(rho1, rho2, th1, th2),
                   sp.Tuple(kk * Lam * v1 / nn, kk * Lam * v2 / mm, (1 - rho1) / v1, (1 - rho2) / v2)),
             "seed 004, lambda_1 = k Lambda/n, lambda_2 = k Lambda/m"),
        Step("(W)", "waiting time at level i: atom 1 - rho_i at 0, else Exp(theta_i)",
             sp.Eq(F1(w), _F(rho1, th1, w)), "M/M/1 FCFS waiting time; same for level 2"),
        Step("(C)", "a copy is timely when W_1 + W_2 <= t_0: the convolution",
             sp.Eq(r_sym, (1 - rho1) * F2(t) + sp.Integral(rho1 * th1 * sp.exp(-th1 * w) * F2(t - w), (w, 0, t))),
             "spec/other-models.md E"),
        Step("(r)", "closed form, theta_1 != theta_2 (integrated by SymPy)",
             sp.Eq(r_sym, timely_closed_form(False)), "derived"),
        Step("(r=)", "closed form, theta_1 = theta_2 = theta (Erlang-2 branch; the paper's example n = m, v_1 = v_2)",
             sp.Eq(r_sym, timely_closed_form(True)), "derived"),
        Step("(S)", "evaluated form: the complement as positive terms, no division by theta_2 - theta_1",
             sp.Eq(1 - r_sym, late), "derived"),
        Step("(S')", "hypoexponential survival with theta_a = min, theta_b = max, phi(x) = -expm1(-x)/x, phi(0) = 1",
             sp.Eq(S_(t), sp.exp(-sp.Symbol("theta_a") * t)
                   * (1 + sp.Symbol("theta_a") * t * phi_((sp.Symbol("theta_b") - sp.Symbol("theta_a")) * t))),
             "derived"),
        Step("(R)", "at least one of k independent copies is timely",
             sp.Eq(R_sym, 1 - (1 - r_sym) ** kk), "seed 004"),
        Step("(F1)", "fault-free and timely copy, faults at the mean sojourn times",
             sp.Eq(sp.Symbol("r_f"), sp.exp(-Lam1 * T1 - Lam2 * T2) * r_sym), "seed 004, T_i = v_i/(1 - rho_i)"),
        Step("(F2)", "separate fault rates while waiting (lambda_i1) and while being served (lambda_i0)",
             sp.Eq(sp.Symbol("r_f"), sp.exp(-l11 * w1 - l21 * w2 - l10 * v1 - l20 * v2) * r_sym),
             "seed 004, w_i = rho_i v_i/(1 - rho_i)"),
        Step("(F3)", "pathwise faults (this package): Poisson faults during the actual waiting and (exponential) "
                     "service times; M(a_1, a_2) = E[1{W_1 + W_2 <= t_0} exp(-a_1 W_1 - a_2 W_2)] is (C) with W_i "
                     "tilted: atom 1 - rho_i, weight rho_i theta_i/(theta_i + a_i), rate theta_i + a_i",
             sp.Eq(sp.Symbol("r_f"), sp.Function("M")(l11, l21) / ((1 + l10 * v1) * (1 + l20 * v2))),
             "exact counterpart of (F2)"),
        Step("(D)", "the paper's N-interval sum, d = t_0/N, B_0 = 1 - rho_1, B_i = F_1(i d) - F_1((i-1) d)",
             sp.Eq(rN, sp.Sum(sp.Indexed("B", i_) * F2(t - i_ * d), (i_, 0, N_))), "seed 004"),
        Step("(E)", "its error is O(1/N)",
             sp.Eq(sp.Limit(N_ * (r_sym - rN), N_, sp.oo),
                   t / 2 * sp.Integral(rho1 * th1 * sp.exp(-th1 * w) * rho2 * th2 * sp.exp(-th2 * (t - w)), (w, 0, t))),
             "derived"),
        Step("(K)", "stable numbers of copies; the optimal k maximises R(k) among them",
             sp.StrictLessThan(kk, sp.Min(nn / (Lam * v1), mm / (Lam * v2))), "seed 004"),
    )


# -- independent oracles --------------------------------------------------------------------
def _mp(q):
    q = sp.Rational(q)
    return mpmath.mpf(int(q.p)) / int(q.q)


def quad_timely(c: C.RedundantCluster, tilt=(0, 0)):
    """E[1{W_1 + W_2 <= t_0} e^{-a_1 W_1 - a_2 W_2}] by mpmath.quad of the convolution (call in workdps).

    Built from the model's definition (waiting-time densities), sharing no code with numeric.cluster.
    """
    (r1, r2), (t1, t2) = [tuple(_mp(z) for z in pair) for pair in (c.loads(), c.decay_rates())]
    a1, a2 = (_mp(z) for z in tilt)
    t0 = _mp(c.deadline)

    def G2(y):  # E[1{W_2 <= y} e^{-a_2 W_2}]: atom + the elementary integral of r2 t2 e^{-(t2 + a2) u} over [0, y]
        return (1 - r2) + r2 * t2 / (t2 + a2) * (1 - mpmath.exp(-(t2 + a2) * y))

    inner = mpmath.quad(lambda u: r1 * t1 * mpmath.exp(-(t1 + a1) * u) * G2(t0 - u), [0, t0])
    return (1 - r1) * G2(t0) + inner


def _example(v2=Fraction(3, 10), rate=3, copies=2, nodes=(10, 10), t0=Fraction(3, 5), **kw):
    return C.RedundantCluster(rate=rate, copies=copies, nodes=nodes, service_times=(Fraction(3, 10), v2),
                              deadline=t0, **kw)


def _quad_points():
    """theta_1 = theta_2 (the paper's example), 1e-12-close, 1e-6-close, and clearly different."""
    v = Fraction(3, 10)
    return (
        ("theta1 = theta2", _example()),
        ("theta2 - theta1 = 1e-12", _example(v2=v / (1 + v * Fraction(1, 10**12)))),
        ("theta2 - theta1 = 1e-6", _example(v2=v / (1 + v * Fraction(1, 10**6)))),
        ("n != m, v1 != v2", _example(v2=Fraction(1, 2), nodes=(10, 7), rate=Fraction(5, 2), copies=3,
                                      t0=Fraction(9, 10))),
    )


def _check_symbolic_branch(digits: int):
    """The SymPy-integrated r equals 1 - (S) exactly, and its limit theta_2 -> theta_1 is (r=)."""
    generic, equal = timely_closed_form(False), timely_closed_form(True)
    ok = exact_identity(sp.expand(generic), sp.expand(1 - _stable_late(th1, th2)))
    ok &= exact_identity(sp.expand(generic), sp.expand(1 - _stable_late(th2, th1)))  # symmetric in theta
    lim = sp.limit(generic.subs(th2, th1 + sp.Symbol("epsilon")), sp.Symbol("epsilon"), 0)
    ok &= exact_identity(lim.subs(th1, th), equal)
    return ok, None, "SymPy integral = evaluated form (both orders of theta); limit theta2 -> theta1 = Erlang-2 branch"


def _check_quad(digits: int):
    """numeric.cluster (mpmath) vs mpmath.quad of the convolution, 4 points incl. theta1 = theta2 and 1e-12-close."""
    bk = mp_backend(digits + 10)
    worst, rows = math.inf, []
    with bk:
        for name, c in _quad_points():
            got = C.copy_timely_probability(c, bk)
            ref = quad_timely(c)
            dig = agreement_digits(got, ref)
            # the small complement too: late probability 1 - r
            dig = min(dig, agreement_digits(C.copy_late_probability(c, bk), 1 - ref))
            rows.append(f"{name}: {min(dig, 99):.0f}")
            worst = min(worst, dig)
    return worst >= digits, worst, "; ".join(rows)


def _check_float64_near_equal(digits: int):
    """The float64 path keeps ~15 digits at theta2 - theta1 = 1e-12 (a naive division would keep ~4)."""
    c = _quad_points()[1][1]
    bk = mp_backend(40)
    with bk:
        ref = C.copy_late_probability(c, bk)
    dig = agreement_digits(C.copy_late_probability(c, FLOAT64), ref)
    return dig >= 14, dig, "float64 vs 40-digit late probability at theta2 - theta1 = 1e-12"


def _check_pathwise(digits: int):
    """Pathwise fault factor vs quadrature of the tilted convolution (times 1/((1+l10 v1)(1+l20 v2)))."""
    c = _example(v2=Fraction(2, 5), nodes=(10, 8), failure_rates=(Fraction(1, 10), Fraction(1, 5)),
                 service_failure_rates=(Fraction(1, 20), Fraction(3, 100)), failure_model=C.FailureModel.PATHWISE)
    bk = mp_backend(digits + 10)
    with bk:
        got = C.copy_timely_probability(c, bk)
        ref = quad_timely(c, tilt=c.failure_rates) / ((1 + _mp(Fraction(1, 20)) * _mp(Fraction(3, 10)))
                                                      * (1 + _mp(Fraction(3, 100)) * _mp(Fraction(2, 5))))
        dig = agreement_digits(got, ref)
    return dig >= digits, dig, "PATHWISE r_f vs mpmath.quad of E[1{W1+W2<=t0} e^(-a1 W1 - a2 W2)]"


def _check_mean_times(digits: int):
    """(F1) is (F2) with equal waiting and serving rates: T_i = w_i + v_i (exact)."""
    c = _example(failure_rates=(Fraction(1, 10), Fraction(1, 5)))
    (T1v, T2v), (w1v, w2v) = c.mean_sojourns(), c.mean_waits()
    a, b = c.failure_rates
    ok = exact_identity(a * T1v + b * T2v, a * w1v + b * w2v + a * c.service_times[0] + b * c.service_times[1])
    bk = mp_backend(digits + 10)
    with bk:
        got = C.copy_timely_probability(c, bk)
        ref = mpmath.exp(-_mp(a * T1v + b * T2v)) * quad_timely(c)
        dig = agreement_digits(got, ref)
    return ok and dig >= digits, dig, "exp(-L1 T1 - L2 T2) r vs quadrature; T_i = w_i + v_i exactly"


def _check_discretisation(digits: int):
    """The paper's r_N: N (r - r_N) -> (E), with a remainder O(1/N) (Richardson at N = 400, 800)."""
    c = _quad_points()[3][1]
    bk = mp_backend(30)
    with bk:
        r = quad_timely(c)
        e1 = 400 * (r - C.paper_discretised(c, 400, bk))
        e2 = 800 * (r - C.paper_discretised(c, 800, bk))
        limit = 2 * e2 - e1  # Richardson: removes the O(1/N) term of N (r - r_N)
        # (E) evaluated independently: (t0/2) * quad of f1(w) f2(t0 - w)
        (r1, r2), (t1, t2) = [tuple(_mp(z) for z in p) for p in (c.loads(), c.decay_rates())]
        t0 = _mp(c.deadline)
        ref = t0 / 2 * mpmath.quad(lambda u: r1 * t1 * mpmath.exp(-t1 * u) * r2 * t2 * mpmath.exp(-t2 * (t0 - u)), [0, t0])
        d_lim = agreement_digits(limit, ref)
        d_const = agreement_digits(C.discretisation_error_constant(c, bk), ref)
        ratio = (e1 - ref) / (e2 - ref)  # ~2: the remainder of N (r - r_N) is O(1/N)
    ok = d_lim >= 5 and d_const >= 25 and abs(ratio - 2) < mpmath.mpf("0.05")
    return ok, min(d_lim, d_const), (f"Richardson limit of N(r - r_N) agrees with (E) to {d_lim:.1f} digits; "
                                     f"remainder ratio {mpmath.nstr(ratio, 4)} (expect 2)")


def _check_optimum(digits: int):
    """optimal_copies vs a brute-force scan of R(k) = 1 - (1 - r_k)^k with r_k by quadrature."""
    base = _example()
    bk = mp_backend(30)
    with bk:
        got = C.optimal_copies(base, 20, bk)
        values = []
        for k in range(1, base.max_stable_copies() + 1):
            if k > 20:
                break
            values.append((1 - (1 - quad_timely(base.with_copies(k))) ** k, k))
        best = max(values, key=lambda vk: vk[0])
        dig = agreement_digits(got.timely_probability, best[0])
    return got.copies == best[1] and dig >= 25, dig, f"optimal k = {got.copies} (brute force {best[1]})"


def derivation() -> Derivation:
    """The registered redundant-cluster derivation."""
    return Derivation(
        name="redundant-cluster",
        title="Two-level cluster with k request copies: probability of timely service",
        source=SOURCE,
        steps=_steps(),
        checks=(
            Check("SymPy integral = evaluated form; Erlang-2 limit", _check_symbolic_branch, "(r=)"),
            Check("r vs mpmath.quad, theta1 = theta2 and -> theta2", _check_quad, "(S)"),
            Check("float64 at theta2 - theta1 = 1e-12", _check_float64_near_equal, "(S')"),
            Check("(F1) mean-sojourn fault factor", _check_mean_times, "(F1)"),
            Check("(F3) pathwise faults vs quadrature", _check_pathwise, "(F3)"),
            Check("(D), (E) paper's discretisation error O(1/N)", _check_discretisation, "(E)"),
            Check("(K) optimal k vs brute force", _check_optimum, "(K)"),
        ),
        notes=(
            "The paper's example (n = m, v_1 = v_2) has theta_1 = theta_2 exactly: the Erlang-2 branch is "
            "its normal case, not an edge case.",
        ),
    )


# -- command line ---------------------------------------------------------------------------
_FAILURE_MODELS = {m.value: m for m in C.FailureModel}

#: arguments of the generated closed forms: (symbol, python name, description with units)
CODEGEN_ARGS = (
    (Lam, "rate", "request rate Lambda (requests per second)"),
    (kk, "copies", "copies k of each request (integer >= 1)"),
    (nn, "nodes_lower", "nodes n of the lower level"),
    (mm, "nodes_upper", "nodes m of the upper level"),
    (v1, "service_time_lower", "mean service time v_1 at a lower node (s)"),
    (v2, "service_time_upper", "mean service time v_2 at an upper node (s)"),
    (t, "deadline", "bound t_0 on the total waiting time W_1 + W_2 (s)"),
    (Lam1, "failure_rate_lower", "fault rate Lambda_1 of a lower node, while waiting and served (1/s)"),
    (Lam2, "failure_rate_upper", "fault rate Lambda_2 of an upper node, while waiting and served (1/s)"),
)
_STABLE = " Valid for stable levels, rho_i = k Lambda v_i / n_i < 1."
_CODEGEN_DOCS = {
    "timely_probability": "Probability that at least one of the k copies is timely and fault-free, "
                          "1 - (1 - r_f)^k." + _STABLE,
    "copy_timely_probability": "Probability r_f that one copy is timely (W_1 + W_2 <= t_0) and fault-free." + _STABLE,
    "untimely_probability": "Probability (1 - r_f)^k that no copy is timely and fault-free." + _STABLE,
    "copy_late_probability": "Probability 1 - r = P(W_1 + W_2 > t_0) that one copy is late (no faults)." + _STABLE,
    "failure_free_probability": "Fault factor e^{-Lambda_1 T_1 - Lambda_2 T_2} (faults at the mean times)." + _STABLE,
    "load_lower": "Load rho_1 = k Lambda v_1 / n of a lower node.",
    "load_upper": "Load rho_2 = k Lambda v_2 / m of an upper node.",
    "mean_wait_lower": "Mean wait w_1 = rho_1 v_1 / (1 - rho_1) at a lower node (s)." + _STABLE,
    "mean_wait_upper": "Mean wait w_2 = rho_2 v_2 / (1 - rho_2) at an upper node (s)." + _STABLE,
    "mean_sojourn_lower": "Mean sojourn T_1 = v_1 / (1 - rho_1) at a lower node (s)." + _STABLE,
    "mean_sojourn_upper": "Mean sojourn T_2 = v_2 / (1 - rho_2) at an upper node (s)." + _STABLE,
}


def codegen_expressions() -> dict:
    """The evaluated forms of steps (L), (S), (S') in the model's parameters, for generated code.

    1 - r = (1 - rho_1) rho_2 e^{-theta_2 t_0} + rho_1 (1 - rho_2) e^{-theta_1 t_0} + rho_1 rho_2 S(t_0),
    S(t) = e^{-theta_a t}(1 + theta_a t phi((theta_b - theta_a) t)), theta_a = min, theta_b = max,
    phi(x) = -expm1(-x)/x, phi(0) = 1: positive terms, no division by theta_2 - theta_1, so the
    theta_1 = theta_2 case of the paper's example needs no branch of its own. Faults at the mean
    times (seed 004): 1 - r_f = -expm1(-c) + e^{-c} (1 - r), c = Lambda_1 T_1 + Lambda_2 T_2.
    """
    from sympy.codegen.cfunctions import expm1

    r1, r2 = kk * Lam * v1 / nn, kk * Lam * v2 / mm
    s1, s2 = (nn - kk * Lam * v1) / nn, (mm - kk * Lam * v2) / mm  # 1 - rho_i
    a, b = s1 / v1, s2 / v2  # theta_i
    ta, tb = sp.Min(a, b), sp.Max(a, b)
    xx = (tb - ta) * t
    phi = sp.Piecewise((sp.Integer(1), sp.Eq(xx, 0)), (-expm1(-xx) / xx, True))
    late = s1 * r2 * sp.exp(-b * t) + r1 * s2 * sp.exp(-a * t) + r1 * r2 * sp.exp(-ta * t) * (1 + ta * t * phi)
    T1, T2 = v1 / s1, v2 / s2
    c = Lam1 * T1 + Lam2 * T2
    copy_untimely = -expm1(-c) + sp.exp(-c) * late
    return {
        "timely_probability": 1 - copy_untimely**kk,
        "copy_timely_probability": 1 - copy_untimely,
        "untimely_probability": copy_untimely**kk,
        "copy_late_probability": late,
        "failure_free_probability": sp.exp(-c),
        "load_lower": r1,
        "load_upper": r2,
        "mean_wait_lower": r1 * T1,
        "mean_wait_upper": r2 * T2,
        "mean_sojourn_lower": T1,
        "mean_sojourn_upper": T2,
    }

_GUARD = 10


class RedundantClusterCommand(ModelCommand):
    name = "redundant-cluster"
    summary = "two-level cluster, k request copies: probability that a copy's total wait <= deadline"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rate", required=True, metavar="LAMBDA", help="request rate Lambda (1/s)")
        parser.add_argument("--copies", metavar="K", help="copies k of each request (eval; default 1)")
        parser.add_argument("--nodes", required=True, metavar="N,M", help="nodes of the lower and upper level")
        parser.add_argument("--service-times", required=True, metavar="V1,V2", help="mean service times (s)")
        parser.add_argument("--deadline", required=True, metavar="T0", help="bound t0 on the total waiting time (s)")
        parser.add_argument("--failure-rates", default="0,0", metavar="L1,L2",
                            help="fault rate of a lower / upper node (1/s), during waiting and service "
                                 "(seed 004: exp(-L1 T1 - L2 T2))")
        parser.add_argument("--service-failure-rates", metavar="L10,L20",
                            help="separate fault rates during service; --failure-rates then apply to waiting")
        parser.add_argument("--failure-model", choices=sorted(_FAILURE_MODELS), default="mean",
                            help="mean: faults at the mean times (seed 004); pathwise: during the actual times")

    def add_optimize_arguments(self, parser) -> None:
        parser.add_argument("--max-copies", required=True, metavar="K", help="largest k to consider")

    def closed_forms(self) -> dict:
        """The measures of ``eval`` (mean-time fault model, the same fault rates while waiting and served)
        as closed forms for ``qderive codegen``: see :func:`codegen_expressions`."""
        from .codegen import ClosedForm

        exprs = codegen_expressions()
        return {k: ClosedForm(k, e, CODEGEN_ARGS, _CODEGEN_DOCS[k], SOURCE) for k, e in exprs.items()}

    @staticmethod
    def _model(args, copies) -> C.RedundantCluster:
        nodes = parse_number_list(args.nodes, "nodes", count=2)
        for j, nv in enumerate(nodes):
            if not (nv.is_Integer and nv >= 1):
                raise ParameterError(f"nodes = {args.nodes!r}: node counts must be integers >= 1")
        sfr = None
        if args.service_failure_rates is not None:
            sfr = tuple(parse_number_list(args.service_failure_rates, "service-failure-rates", count=2))
        return C.RedundantCluster(
            rate=parse_number(args.rate, "rate"),
            copies=copies,
            nodes=tuple(int(nv) for nv in nodes),
            service_times=tuple(parse_number_list(args.service_times, "service-times", count=2)),
            deadline=parse_number(args.deadline, "deadline"),
            failure_rates=tuple(parse_number_list(args.failure_rates, "failure-rates", count=2)),
            service_failure_rates=sfr,
            failure_model=_FAILURE_MODELS[args.failure_model],
        )

    def build(self, args):
        copies = parse_number(args.copies, "copies") if args.copies is not None else 1
        return self._model(args, copies)

    def evaluate(self, model: C.RedundantCluster, digits, args) -> Evaluation:
        # guard digits: exp(-theta t0) inherits the relative error theta*t0*ulp of its argument
        bk = backend_for(None if digits is None else digits + _GUARD)
        with bk:
            u_copy = C.copy_untimely_probability(model, bk)
            u_all = u_copy ** model.copies
            (r1, r2), (w1_, w2_), (T1_, T2_) = model.loads(), model.mean_waits(), model.mean_sojourns()
            measures = {
                "timely_probability": 1 - u_all,
                "copy_timely_probability": 1 - u_copy,
                "untimely_probability": u_all,
                "copy_late_probability": C.copy_late_probability(model, bk),
                "failure_free_probability": C.failure_free_probability(model, bk),
                "load_lower": bk.num(r1),
                "load_upper": bk.num(r2),
                "mean_wait_lower": bk.num(w1_),
                "mean_wait_upper": bk.num(w2_),
                "mean_sojourn_lower": bk.num(T1_),
                "mean_sojourn_upper": bk.num(T2_),
                "max_stable_copies": model.max_stable_copies(),
            }
        params = {
            "rate": model.rate, "copies": model.copies, "nodes": f"{model.nodes[0]},{model.nodes[1]}",
            "service_times": ",".join(map(str, model.service_times)), "deadline": model.deadline,
            "failure_rates": ",".join(map(str, model.failure_rates)),
            "failure_model": model.failure_model.value,
        }
        if model.service_failure_rates is not None:
            params["service_failure_rates"] = ",".join(map(str, model.service_failure_rates))
        return Evaluation(self.name, params, measures)

    def optimize(self, args) -> dict:
        if args.copies is not None:
            raise ParameterError("optimize redundant-cluster chooses the number of copies: drop --copies")
        max_copies = parse_number(args.max_copies, "max-copies")
        if not (max_copies.is_Integer and max_copies >= 1):
            raise ParameterError(f"max-copies = {args.max_copies}: must be an integer >= 1")
        model = self._model(args, 1)  # refused (exit 2) when even one copy is unstable
        bk = backend_for(None if args.digits is None else args.digits + _GUARD)
        with bk:
            best = C.optimal_copies(model, int(max_copies), bk)
        return {
            "copies": best.copies,
            "timely_probability": best.timely_probability,
            "untimely_probability": best.untimely_probability,
            "max_stable_copies": model.max_stable_copies(),
            "timely_probability_by_copies": [row[1] for row in best.table],
        }

    def derivation(self):
        return derivation()


COMMAND = RedundantClusterCommand()


# -- figures of the paper ------------------------------------------------------------------------
_V = Fraction(3, 10)


def _paper_model(rate, copies, t0_over_v):
    return C.RedundantCluster(rate=rate, copies=copies, nodes=(10, 10), service_times=(_V, _V),
                              deadline=t0_over_v * _V)


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        wr = csv.writer(fh, lineterminator="\n")
        wr.writerow(header)
        for row in rows:
            wr.writerow([f"{v:.15g}" if isinstance(v, float) else v for v in row])


def figure_cluster1(out_png: str | None, out_csv: str | None) -> None:
    """Seed 004, Fig. 1: R versus Lambda (0..8 /s) for t0 = 2v (curves 1-3) and 3v (4-6), k = 3, 2, 1.

    n = m = 10, v1 = v2 = 0.3 s. Exact R (the closed form); the CSV also holds r and the paper's
    discretised R with N = 10 intervals.
    """
    rates = [Fraction(j, 20) for j in range(1, 161)]
    curves = [(1, 2, 3), (2, 2, 2), (3, 2, 1), (4, 3, 3), (5, 3, 2), (6, 3, 1)]  # (curve, t0/v, k)
    rows = []
    for curve, t0v, k in curves:
        for lam in rates:
            c = _paper_model(lam, k, t0v)
            u = float(C.copy_untimely_probability(c, FLOAT64))
            r_paper = float(C.paper_discretised(c, 10, FLOAT64))
            rows.append((curve, t0v, k, float(lam), 1 - u, 1 - u**k, 1 - (1 - r_paper) ** k))
    if out_csv:
        _write_csv(out_csv, ("curve", "t0_over_v", "copies", "rate", "copy_timely_probability",
                             "timely_probability", "timely_probability_paper_N10"), rows)
    if out_png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for curve, t0v, k in curves:
            pts = [(row[3], row[5]) for row in rows if row[0] == curve]
            ax.plot(*zip(*pts), ls="-" if t0v == 2 else "--",
                    label=f"{curve}: $t_0$ = {t0v}v, k = {k}")
        ax.set_xlabel(r"request rate $\Lambda$ (1/s)")
        ax.set_ylabel("R (at least one copy waits $\\leq t_0$)")
        ax.set_ylim(0.85, 1.001)
        ax.set_xlim(0, 8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
        ax.set_title("Two-level cluster, n = m = 10, v = 0.3 s (seed 004, Fig. 1)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out_png, dpi=120)
        plt.close(fig)


def figure_cluster2(out_png: str | None, out_csv: str | None) -> None:
    """Seed 004, Fig. 2: R versus k. (a) Lambda = 3/s, t0 = 4v, 3v, 2v, 1.5v; (b) t0 = 2v, Lambda = 2.2, 3, 3.5, 4.

    k runs over the stable copies up to 10; the optimum of each curve is marked.
    """
    panels = {
        "a": [(4, Fraction(3)), (3, Fraction(3)), (2, Fraction(3)), (Fraction(3, 2), Fraction(3))],
        "b": [(2, Fraction(11, 5)), (2, Fraction(3)), (2, Fraction(7, 2)), (2, Fraction(4))],
    }
    rows = []
    for panel, specs in panels.items():
        for curve, (t0v, lam) in enumerate(specs, start=1):
            kmax = min(10, _paper_model(lam, 1, t0v).max_stable_copies())
            best = C.optimal_copies(_paper_model(lam, 1, t0v), kmax, FLOAT64)
            for k, R, U in best.table:
                rows.append((panel, curve, float(t0v), float(lam), k, float(R), float(U),
                             int(k == best.copies)))
    if out_csv:
        _write_csv(out_csv, ("panel", "curve", "t0_over_v", "rate", "copies", "timely_probability",
                             "untimely_probability", "optimal"), rows)
    if out_png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
        for ax, (panel, specs) in zip(axes, panels.items()):
            for curve, (t0v, lam) in enumerate(specs, start=1):
                pts = [(row[4], row[5]) for row in rows if row[0] == panel and row[1] == curve]
                label = (f"{curve}: $t_0$ = {float(t0v):g}v" if panel == "a" else f"{curve}: $\\Lambda$ = {float(lam):g}/s")
                line, = ax.plot(*zip(*pts), marker="o", ms=3, label=label)
                opt = [(row[4], row[5]) for row in rows if row[0] == panel and row[1] == curve and row[7]]
                ax.plot(*zip(*opt), marker="*", ms=12, color=line.get_color())
            ax.set_xlabel("copies k")
            ax.set_ylabel("R")
            ax.set_ylim(0.95, 1.0005)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="lower center")
            ax.set_title(("(a) $\\Lambda$ = 3/s" if panel == "a" else "(b) $t_0$ = 2v") + "; * = optimal k",
                         fontsize=10)
        fig.suptitle("Two-level cluster, n = m = 10, v = 0.3 s (seed 004, Fig. 2)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out_png, dpi=120)
        plt.close(fig)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(40) else 1)
