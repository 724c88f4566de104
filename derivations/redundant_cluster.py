"""Two-level cluster with k request copies (Bogatyrev & Bogatyrev 2017, seed 004; docs/theory/other-models.md E).

``qderive derive redundant-cluster`` obtains the probability of timely service
r = P(W_1 + W_2 <= t_0) by integrating the convolution with SymPy (atoms and exponentials), the
theta_1 = theta_2 (Erlang-2) branch by the same integral, and displays the form the package
evaluates (:func:`qderive.symbolic.models.redundant_cluster.closed_form_expressions`: positive
terms, no division by theta_2 - theta_1), the fault factors of the paper and the exact pathwise
one, the paper's N-interval sum and its O(1/N) error, and the stable numbers of copies.

``qderive verify redundant-cluster`` evaluates every displayed relation with numbers of an
independent computation: the M/M/1 waiting-time law from the CTMC of one node built from its
definition (:mod:`qderive.numeric.oracles.ctmc`, GTH at the working precision, an arrival that
finds j customers waits j exponential services), ``mpmath.quad`` of the convolution of the
waiting-time laws, and the package's results (``RedundantCluster.evaluate(digits)``) where a
relation says what the package computes. The checks add exact identities (the SymPy integral =
the evaluated form, its Erlang-2 limit), float64 at theta_2 - theta_1 = 1e-12, and the optimal k
against a brute-force scan by quadrature.

Command line (a contract)::

    qderive eval redundant-cluster --rate 3 --copies 2 --nodes 10,10 --service-times 0.3,0.3 \\
        --deadline 0.6 [--failure-rates 0,0] [--failure-model mean|pathwise] [--digits 50] --json
    qderive optimize redundant-cluster --rate 3 --nodes 10,10 --service-times 0.3,0.3 --deadline 0.6 \\
        --max-copies 10 --json                                     # {"copies": 4, "timely_probability": ...}
    qderive codegen redundant-cluster --measure timely_probability --out rc.c --lang c
    qderive figure cluster-fig1 --out cluster-fig1.png --csv cluster-fig1.csv
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import sympy as sp

from ..symbolic.capabilities import declare
from ..symbolic.models.redundant_cluster import (
    FailureModel,
    RedundantCluster,
    closed_form_expressions,
)
from .framework import (
    Check,
    Derivation,
    Step,
    agreement_digits,
    evaluate,
    exact_identity,
    relation_check,
)

__all__ = ["derivation", "timely_closed_form", "quad_timely", "waiting_cdf_from_chain", "RECURSIONS",
           "paper_sum"]

SOURCE = ("V. A. Bogatyrev, S. V. Bogatyrev, \"Reserved service of requests, critical to waiting delays, in "
          "two-level systems\", J. Instrument Engineering 60(10), 2017, 945-950 (seed 004); "
          "docs/theory/other-models.md section E")

# -- symbols --------------------------------------------------------------------------------------------
t, w, x = sp.symbols("t w x", nonnegative=True)
rho1, rho2, th1, th2, th = sp.symbols("rho_1 rho_2 theta_1 theta_2 theta", positive=True)
tha, thb = sp.symbols("theta_a theta_b", positive=True)
Lam, v1, v2, nn, mm, kk = sp.symbols("Lambda v_1 v_2 n m k", positive=True)
r_sym, R_sym, rN, d, r_f = sp.symbols("r R r_N d r_f", positive=True)
Lam1, Lam2, T1, T2, w1, w2 = sp.symbols("Lambda_1 Lambda_2 T_1 T_2 w_1 w_2", positive=True)
l10, l11, l20, l21 = sp.symbols("lambda_10 lambda_11 lambda_20 lambda_21", nonnegative=True)
i_, N_ = sp.symbols("i N", integer=True, nonnegative=True)
F1, F2, S_, phi_, M_ = (sp.Function(s) for s in ("F_1", "F_2", "S", "phi", "M"))
B_ = sp.IndexedBase("B")


def _F(rho, theta, arg):
    """F_i(w) = P(W_i <= w) = 1 - rho_i e^{-theta_i w} (M/M/1 FCFS waiting time)."""
    return 1 - rho * sp.exp(-theta * arg)


@functools.lru_cache(maxsize=2)
def timely_closed_form(equal: bool = False) -> sp.Expr:
    """r(t) = (1 - rho_1) F_2(t) + int_0^t f_1(w) F_2(t - w) dw integrated by SymPy (``equal``: theta_1 = theta_2).

    Derived once per package source (:func:`qderive.symbolic.cache.cached`) and shared by the displayed steps
    and the check that compares it with the package's late mass."""
    from ..symbolic.cache import cached

    return cached(f"qderive.derivations.redundant_cluster.timely_closed_form::{equal}", lambda: _integrate(equal))


def _integrate(equal: bool) -> sp.Expr:
    a, b = (th, th) if equal else (th1, th2)
    conv = sp.integrate(rho1 * a * sp.exp(-a * w) * _F(rho2, b, t - w), (w, 0, t), conds="none")
    if isinstance(conv, sp.Piecewise):  # SymPy splits on theta_1 = theta_2: the generic piece
        conv = conv.args[0][0]
    return sp.simplify((1 - rho1) * _F(rho2, b, t) + conv)


@functools.lru_cache(maxsize=1)
def _package_late():
    """The package's copy_late_probability expression in this module's symbols (no faults)."""
    exprs, args = closed_form_expressions(FailureModel.MEAN_TIMES)
    names = {str(a): a for a in args}
    mapping = {names["A1"]: 1 - rho1, names["A2"]: 1 - rho2, names["rho1"]: rho1, names["rho2"]: rho2,
               names["theta1"]: th1, names["theta2"]: th2, names["t0"]: t}
    return exprs[3].xreplace(mapping)


# -- the reference recursion of the LaTeX export ------------------------------------------------------------


def paper_sum(B, F2, t0, N):
    r"""(D): $r_N = \sum_{i=0}^{N} B_i F_2(t_0 - i d)$, $d = t_0 / N$."""
    d = t0 / N
    s = 0
    for i in range(N + 1):
        s = s + B[i] * F2(t0 - i * d)
    return s


RECURSIONS = (("The sum (D) over $N$ intervals", paper_sum),)

#: (r) and (r=) as a paper writes them: one minus the late mass, each term a way of being late (a wait at level 1
#: only, at level 2 only, at both); proved equal to the integrated closed forms before they are printed
PAPER_R = (1 - rho1 * (1 - rho2) * sp.exp(-th1 * t) - rho2 * (1 - rho1) * sp.exp(-th2 * t)
           - rho1 * rho2 * (th2 * sp.exp(-th1 * t) - th1 * sp.exp(-th2 * t)) / (th2 - th1))
PAPER_R_EQUAL = 1 - (rho1 + rho2 - rho1 * rho2 + rho1 * rho2 * th * t) * sp.exp(-th * t)

#: phi(x) = (1 - e^{-x})/x, phi(0) = 1: the factor of (S') that removes the singularity at theta_a = theta_b
PHI = sp.Lambda(x, sp.Piecewise((1, sp.Eq(x, 0)), ((1 - sp.exp(-x)) / x, True)))
#: (S'') as a paper writes it: a way of being late at level 1 only, at level 2 only, at both (S' with the smaller
#: rate theta_a = min(theta_1, theta_2) and the larger theta_b = max(theta_1, theta_2))
PAPER_LATE = (rho1 * (1 - rho2) * sp.exp(-th1 * t) + rho2 * (1 - rho1) * sp.exp(-th2 * t)
              + rho1 * rho2 * (1 + tha * t * phi_((thb - tha) * t)) * sp.exp(-tha * t))
#: the names (S'') uses, restored to prove it equal to the evaluated form
LATE_NOTATION = ((tha, sp.Min(th1, th2)), (thb, sp.Max(th1, th2)), (phi_, PHI))


def paper_loads(loads):
    """(L) as the paper writes it: rho_i = lambda_i v_i with lambda_1 = k Lambda / n, lambda_2 = k Lambda / m, and
    theta_i = (1 - rho_i)/v_i; ``loads``: the derived (rho_1, rho_2). Returns (derived, paper, notation): the
    paper form names rho_i in theta_i, restored by the notation to prove it."""
    derived = sp.And(sp.Eq(rho1, loads[0]), sp.Eq(rho2, loads[1]), sp.Eq(th1, (1 - loads[0]) / v1),
                     sp.Eq(th2, (1 - loads[1]) / v2))
    paper = sp.And(sp.Eq(rho1, kk * Lam * v1 / nn), sp.Eq(rho2, kk * Lam * v2 / mm), sp.Eq(th1, (1 - rho1) / v1),
                   sp.Eq(th2, (1 - rho2) / v2))
    return derived, paper, ((rho1, loads[0]), (rho2, loads[1]))


# -- independent computations -------------------------------------------------------------------------------


def _mp(q):
    q = F(q)
    return mpmath.mpf(q.numerator) / q.denominator


def _laws(c: RedundantCluster):
    """(rho_i, theta_i) recomputed from the definition: rho_i = k Lambda v_i / n_i, theta_i = (1 - rho_i)/v_i."""
    rho = [F(c.copies) * F(c.rate) * F(v) / nv for v, nv in zip(c.service_times, c.nodes)]
    return [_mp(r) for r in rho], [_mp((1 - r) / F(v)) for r, v in zip(rho, c.service_times)]


def quad_timely(c: RedundantCluster, tilt=(0, 0)):
    """E[1{W_1 + W_2 <= t_0} e^{-a_1 W_1 - a_2 W_2}] by mpmath.quad of the convolution (call in workdps)."""
    (r1, r2), (t1, t2) = _laws(c)
    a1, a2 = (_mp(z) for z in tilt)
    t0 = _mp(c.deadline)

    def G2(y):  # E[1{W_2 <= y} e^{-a_2 W_2}]: the atom + the elementary integral of the density
        return (1 - r2) + r2 * t2 / (t2 + a2) * (1 - mpmath.exp(-(t2 + a2) * y))

    inner = mpmath.quad(lambda u: r1 * t1 * mpmath.exp(-(t1 + a1) * u) * G2(t0 - u), [0, t0])
    return (1 - r1) * G2(t0) + inner


def waiting_cdf_from_chain(lam_node: F, v: F, ctx, capacity: int = 200):
    """P(W <= w) of an M/M/1 FCFS node from its CTMC (arrivals lam_node, services 1/v), truncated at
    ``capacity``: an arrival that finds j customers (PASTA) waits j exponential services, so
    P(W <= w) = pi_0 + sum_{j>=1} pi_j P(Gamma(j, 1/v) <= w). Returns (cdf, pi)."""
    from ..numeric.oracles.ctmc import build

    mu = 1 / F(v)

    def moves(j):
        if j < capacity:
            yield j + 1, F(lam_node)
        if j > 0:
            yield j - 1, mu

    chain = build(0, moves)
    with ctx:
        pi = chain.stationary(ctx)
    pi = [pi[chain.index[j]] for j in range(capacity + 1)]

    def cdf(wv):
        wv = mpmath.mpf(wv)
        return pi[0] + mpmath.fsum(pi[j] * mpmath.gammainc(j, 0, _mp(mu) * wv, regularized=True)
                                   for j in range(1, capacity + 1) if pi[j] > mpmath.mpf(10) ** (-mpmath.mp.dps - 5))

    return cdf, pi


#: the displayed relations are evaluated at these clusters
_BASE = dict(rate=F(5, 2), nodes=(10, 7), service_times=(F(3, 10), F(1, 2)), deadline=F(9, 10), copies=3)
_FAULTS = (F(1, 10), F(1, 5))
_SERVING = (F(1, 20), F(3, 100))


def _cluster(**kw):
    return RedundantCluster(**{**_BASE, **kw})


@functools.lru_cache(maxsize=32)
def _package(digits, **kw):
    return _cluster(**kw).evaluate(digits)


@functools.lru_cache(maxsize=8)
def _chain_level(level: int, digits: int):
    """The node's CTMC, truncated where rho^capacity < 10^-(digits + 20)."""
    from ..numeric.backend import mp_context

    c = _cluster()
    lam_node = F(c.copies) * c.rate / c.nodes[level]
    rho = float(lam_node * c.service_times[level])
    capacity = int((digits + 20) / -math.log10(rho)) + 10
    return waiting_cdf_from_chain(lam_node, c.service_times[level], mp_context(digits + 10), capacity), lam_node


def _chain_means(digits):
    """Mean wait w_i and sojourn T_i from the chains (Little: mean number waiting / lambda_i)."""
    out = []
    for level in (0, 1):
        (_, pi), lam_node = _chain_level(level, digits)
        waiting = mpmath.fsum((j - 1) * pi[j] for j in range(1, len(pi)))
        in_system = mpmath.fsum(j * pi[j] for j in range(len(pi)))
        out.append((waiting / _mp(lam_node), in_system / _mp(lam_node)))
    return out


# -- hooks that evaluate displayed relations holding integrals ------------------------------------------


def _evaluate_with_integrals(expr, env):
    """framework.evaluate, with each definite integral replaced by mpmath.quad of its integrand."""
    found = list(expr.atoms(sp.Integral))
    if not found:
        return evaluate(expr, env)
    env = dict(env)
    subs = {}
    for integral in found:
        (var, lo, hi), body = integral.limits[0], integral.function
        a, b = evaluate(lo, env), evaluate(hi, env)
        value = mpmath.quad(lambda u: evaluate(body, {**env, var: u}), [a, b])
        dummy = sp.Dummy()
        subs[integral] = dummy
        env[dummy] = value
    return evaluate(expr.xreplace(subs), env)


def _integral_check(relation, bindings, need=None, describe=""):
    def run(digits):
        with mpmath.workdps(digits + 10):
            worst, count = math.inf, 0
            for env in bindings(digits):
                worst = min(worst, agreement_digits(_evaluate_with_integrals(relation.lhs, env),
                                                    _evaluate_with_integrals(relation.rhs, env)))
                count += 1
            target = need(digits) if need else digits - 5
            return worst >= target, worst, f"displayed relation evaluated at {count} points{describe}"

    return run


# -- displayed relations and their bindings -----------------------------------------------------------------

REL_W = sp.Eq(F1(w), _F(rho1, th1, w))
REL_C = sp.Eq(r_sym, (1 - rho1) * F2(t) + sp.Integral(rho1 * th1 * sp.exp(-th1 * w) * F2(t - w), (w, 0, t)))
REL_SP = sp.Eq(S_(t), sp.exp(-tha * t) * (1 + tha * t * phi_((thb - tha) * t)))
REL_R = sp.Eq(R_sym, 1 - (1 - r_sym) ** kk)
REL_F1 = sp.Eq(r_f, sp.exp(-Lam1 * T1 - Lam2 * T2) * r_sym)
REL_F2 = sp.Eq(r_f, sp.exp(-l11 * w1 - l21 * w2 - l10 * v1 - l20 * v2) * r_sym)
REL_F3 = sp.Eq(r_f, M_(l11, l21) / ((1 + l10 * v1) * (1 + l20 * v2)))
REL_D = sp.Eq(rN, sp.Sum(B_[i_] * F2(t - i_ * d), (i_, 0, N_)))
REL_K = sp.StrictLessThan(kk, sp.Min(nn / (Lam * v1), mm / (Lam * v2)))


def _level_values():
    (r1, r2), (t1, t2) = _laws(_cluster())
    return r1, r2, t1, t2


def _bind_W(digits):
    (cdf, _), _ = _chain_level(0, digits)
    r1, _, t1, _ = _level_values()
    return {F1: cdf, rho1: r1, th1: t1}, {w: (0, F(1, 10), F(1, 2), 1, 3)}


def _F2_value(y):
    _, r2, _, t2 = _level_values()
    return 1 - r2 * mpmath.exp(-t2 * y)


def _bind_C(digits):
    r1, r2, t1, t2 = _level_values()
    rec = _package(digits, copies=_BASE["copies"])
    return [{r_sym: 1 - rec.copy_late_probability, F2: _F2_value, rho1: r1, th1: t1, t: _mp(_BASE["deadline"])}]


def _bind_SP(digits):
    """S(t) = P(E_a + E_b > t) by quadrature of its definition; phi(x) = (1 - e^{-x})/x; equal, 1e-12-close
    and distinct rates."""
    envs = []
    for a, b in ((F(3, 2), F(3, 2)), (F(3, 2), F(3, 2) + F(1, 10**12)), (F(1, 2), F(7, 3))):
        ta, tb = _mp(a), _mp(b)

        def surv(tv, ta=ta, tb=tb):
            return mpmath.exp(-ta * tv) + mpmath.quad(lambda u: ta * mpmath.exp(-ta * u - tb * (tv - u)), [0, tv])

        envs.append({S_: surv, phi_: lambda xv: mpmath.mpf(1) if xv == 0 else -mpmath.expm1(-xv) / xv,
                     tha: ta, thb: tb, t: _mp(F(9, 10))})
    return envs


def _quad(digits, c=None, tilt=(0, 0)):
    with mpmath.workdps(digits + 15):
        return quad_timely(c or _cluster(), tilt)


def _bind_R(digits):
    rec = _package(digits)
    return {R_sym: rec.timely_probability, r_sym: _quad(digits), kk: _BASE["copies"]}, {}


def _bind_F1(digits):
    rec = _package(digits, failure_rates=_FAULTS)
    (_, T1v), (_, T2v) = _chain_means(digits)
    return {r_f: rec.copy_timely_probability, r_sym: _quad(digits), Lam1: _mp(_FAULTS[0]), Lam2: _mp(_FAULTS[1]),
            T1: T1v, T2: T2v}, {}


def _bind_F2(digits):
    rec = _package(digits, failure_rates=_FAULTS, service_failure_rates=_SERVING)
    (w1v, _), (w2v, _) = _chain_means(digits)
    v = _BASE["service_times"]
    return {r_f: rec.copy_timely_probability, r_sym: _quad(digits), l11: _mp(_FAULTS[0]), l21: _mp(_FAULTS[1]),
            l10: _mp(_SERVING[0]), l20: _mp(_SERVING[1]), w1: w1v, w2: w2v, v1: _mp(v[0]), v2: _mp(v[1])}, {}


def _bind_F3(digits):
    rec = _package(digits, failure_rates=_FAULTS, service_failure_rates=_SERVING,
                   failure_model=FailureModel.PATHWISE)
    v = _BASE["service_times"]
    return {r_f: rec.copy_timely_probability,
            M_: lambda a1, a2: _quad(digits, tilt=(_FAULTS[0], _FAULTS[1])),
            l11: _mp(_FAULTS[0]), l21: _mp(_FAULTS[1]), l10: _mp(_SERVING[0]), l20: _mp(_SERVING[1]),
            v1: _mp(v[0]), v2: _mp(v[1])}, {}


_N_PAPER = 20


def _bind_D(digits):
    from ..numeric.backend import mp_context
    from ..numeric.engines.cluster import paper_discretised

    c = _cluster()
    ctx = mp_context(digits + 10)
    with ctx:
        got = paper_discretised(c, _N_PAPER, ctx)
    r1, _, t1, _ = _level_values()
    t0 = _mp(c.deadline)
    dv = t0 / _N_PAPER

    def F1v(y):
        return 1 - r1 * mpmath.exp(-t1 * y)

    Bs = [1 - r1] + [F1v(j * dv) - F1v((j - 1) * dv) for j in range(1, _N_PAPER + 1)]
    return {rN: got, B_: Bs, F2: _F2_value, t: t0, d: dv, N_: _N_PAPER}, {}


def _check_E(digits):
    """(E): N (r - r_N) -> the displayed limit; Richardson at N = 400, 800 and the remainder O(1/N)."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.cluster import paper_discretised

    c = _cluster()
    ctx = mp_context(30)
    with ctx:
        r = quad_timely(c)
        e1 = 400 * (r - paper_discretised(c, 400, ctx))
        e2 = 800 * (r - paper_discretised(c, 800, ctx))
        (r1, r2), (t1, t2) = _laws(c)
        t0 = _mp(c.deadline)
        ref = t0 / 2 * mpmath.quad(lambda u: r1 * t1 * mpmath.exp(-t1 * u) * r2 * t2 * mpmath.exp(-t2 * (t0 - u)),
                                   [0, t0])
        d_lim = agreement_digits(2 * e2 - e1, ref)
        ratio = (e1 - ref) / (e2 - ref)
    ok = d_lim >= 5 and abs(ratio - 2) < mpmath.mpf("0.05")
    return ok, d_lim, f"Richardson limit of N (r - r_N) vs the displayed integral; remainder ratio " \
                      f"{mpmath.nstr(ratio, 4)} (expect 2)"


def _check_K(digits):
    """(K) evaluated at k = 1..kmax+1: true exactly for the k the model accepts."""
    base = dict(_BASE, copies=1)
    c = RedundantCluster(**base)
    env = {Lam: _mp(c.rate), v1: _mp(c.service_times[0]), v2: _mp(c.service_times[1]), nn: c.nodes[0],
           mm: c.nodes[1]}
    kmax = c.max_stable_copies()
    for kv in range(1, kmax + 2):
        holds = bool(evaluate(REL_K, {**env, kk: kv}))
        try:
            c.with_copies(kv)
            accepted = True
        except ValueError:
            accepted = False
        if holds != accepted:
            return False, None, f"k = {kv}: (K) {'holds' if holds else 'fails'} but the model " \
                                f"{'accepts' if accepted else 'refuses'} it"
    return True, None, f"(K) holds exactly for k = 1..{kmax}, the copies the model accepts"


# -- checks ---------------------------------------------------------------------------------------------


def _branch(expr, lo, hi):
    """The package's expression on the branch theta_lo <= theta_hi with x != 0 (Min, Max, phi resolved)."""
    from sympy.codegen.cfunctions import expm1

    e = expr.xreplace({sp.Min(th1, th2): lo, sp.Max(th1, th2): hi})
    e = e.replace(lambda a: isinstance(a, sp.Piecewise), lambda a: a.args[-1][0])
    return e.replace(expm1, lambda a: sp.exp(a) - 1)


def _check_symbolic(digits):
    """The SymPy integral (r) = 1 - the package's late mass on both orderings of the rates; the limit
    theta_2 -> theta_1 of (r) is the Erlang-2 branch (r=)."""
    generic, equal = timely_closed_form(False), timely_closed_form(True)
    late = _package_late()
    ok = all(exact_identity(sp.expand(generic), sp.expand(1 - _branch(late, lo, hi)))
             for lo, hi in ((th1, th2), (th2, th1)))
    eps = sp.Symbol("epsilon", positive=True)
    lim = sp.limit(generic.subs(th2, th1 + eps), eps, 0)
    ok &= exact_identity(lim.subs(th1, th), equal)
    return ok, math.inf, "(r) = 1 - the package's late mass (both orderings of theta); its limit theta_2 -> " \
                         "theta_1 = the Erlang-2 branch (r=)"


def _quad_points():
    v = F(3, 10)
    base = dict(rate=3, copies=2, nodes=(10, 10), service_times=(v, v), deadline=F(3, 5))
    return (
        ("theta1 = theta2", RedundantCluster(**base)),
        ("theta2 - theta1 = 1e-12", RedundantCluster(**{**base, "service_times": (v, v / (1 + v * F(1, 10**12)))})),
        ("theta2 - theta1 = 1e-6", RedundantCluster(**{**base, "service_times": (v, v / (1 + v * F(1, 10**6)))})),
        ("n != m, v1 != v2", _cluster()),
    )


def _check_quad(digits):
    worst, rows = math.inf, []
    for name, c in _quad_points():
        rec = c.evaluate(digits)
        with mpmath.workdps(digits + 15):
            ref = quad_timely(c)
            dig = min(agreement_digits(rec.copy_late_probability, 1 - ref),
                      agreement_digits(rec.copy_timely_probability, ref))
        rows.append(f"{name}: {min(dig, 99):.0f}")
        worst = min(worst, dig)
    return worst >= digits - 2, worst, "r and 1 - r vs mpmath.quad: " + "; ".join(rows)


def _check_float64_near_equal(digits):
    c = _quad_points()[1][1]
    dig = agreement_digits(c.evaluate().copy_late_probability, c.evaluate(30).copy_late_probability)
    return dig >= 14, dig, "float64 vs 30 digits, late probability at theta2 - theta1 = 1e-12"


def _check_optimum(digits):
    from ..numeric.engines.cluster import optimize
    from ..symbolic.models.redundant_cluster import OptimizeCopiesRequest

    values = dict(rate=F(7, 2), nodes=(10, 10), service_times=(F(3, 10), F(3, 10)), deadline=F(3, 5))
    got = optimize(values, OptimizeCopiesRequest(10), 30)
    with mpmath.workdps(40):
        brute = {kv: 1 - (1 - quad_timely(RedundantCluster(**values, copies=kv))) ** kv for kv in range(1, 10)}
    best = max(brute, key=brute.get)
    dig = agreement_digits(got["timely_probability"], brute[best])
    return got["copies"] == best and dig >= 25, dig, f"optimal k = {got['copies']} (brute force by quadrature: {best})"


@functools.lru_cache(maxsize=1)
@declare(independent={
    **{name: "the probability of timely service is derived in symbols" for name in
       ("rate", "nodes", "service_times", "deadline", "copies", "failure_rates", "service_failure_rates")},
    "failure_model": "both fault models are displayed (the paper's at the mean times and the exact pathwise one)"})
def derivation() -> Derivation:
    """The registered derivation ``redundant-cluster``."""
    late = (1 - rho1) * rho2 * sp.exp(-th2 * t) + rho1 * (1 - rho2) * sp.exp(-th1 * t) + rho1 * rho2 * S_(t)
    from ..symbolic.models.redundant_cluster import cluster_loads

    derived_loads, paper_loads_, loads_notation = paper_loads(cluster_loads(Lam, kk, (nn, mm), (v1, v2)))
    steps = (
        Step("(L)", "The loads and decay rates of the $M/M/1$ nodes, the copies split evenly over $n$ and $m$ "
             r"nodes ($\lambda_1 = k \Lambda / n$, $\lambda_2 = k \Lambda / m$)", derived_loads,
             "[@bogatyrev2017]", computed=True, paper=paper_loads_, notation=loads_notation),
        Step("(W)", r"The waiting time at level $i$ (first come, first served): an atom $1 - \rho_i$ at 0, "
             r"otherwise exponential with rate $\theta_i$", REL_W, "",
             check=relation_check(REL_W, _bind_W, describe=" with the waiting law of the node's CTMC")),
        Step("(C)", r"A copy is timely when $W_1 + W_2 \le t_0$: the convolution", REL_C, "",
             provenance="docs/theory/other-models.md section E",
             check=_integral_check(REL_C, lambda digits: _bind_C(digits),
                                   describe=": the package's r vs quadrature of the displayed integral")),
        Step("(r)", r"The closed form for $\theta_1 \ne \theta_2$", sp.Eq(r_sym, timely_closed_form(False)),
             "", computed=True, paper=sp.Eq(r_sym, PAPER_R)),
        Step("(r=)", r"The closed form for $\theta_1 = \theta_2 = \theta$ (an Erlang-2 law; the example of "
             "[@bogatyrev2017] with $n = m$ and $v_1 = v_2$)",
             sp.Eq(r_sym, timely_closed_form(True)), "", computed=True, paper=sp.Eq(r_sym, PAPER_R_EQUAL)),
        Step("(S)", r"The complement as it is evaluated, in positive terms, with $S(t) = \Pr(E_1 + E_2 > t)$",
             sp.Eq(1 - r_sym, late), "", check=_integral_check(sp.Eq(1 - r_sym, late), lambda digits: [
                 {**_bind_C(digits)[0], rho2: _level_values()[1], th2: _level_values()[3],
                  S_: lambda tv: _surv_quad(tv)}], describe=": the package's 1 - r, S by quadrature")),
        Step("(S')", r"$S$ without the removable singularity at $\theta_a = \theta_b$, where $\theta_a$ is the "
             r"smaller rate, $\theta_b$ the larger, $\phi(x) = (1 - e^{-x})/x$ and $\phi(0) = 1$", REL_SP, "",
             check=_integral_check(REL_SP, _bind_SP, describe=" (equal, 1e-12-close, distinct rates)")),
        Step("(S'')", r"The late mass as it is evaluated: (S) with (S'), $\theta_a = \min(\theta_1, \theta_2)$ and "
             r"$\theta_b = \max(\theta_1, \theta_2)$", sp.Eq(1 - r_sym, _package_late()),
             "", provenance="qderive.symbolic.models.redundant_cluster.closed_form_expressions", computed=True,
             paper=sp.Eq(1 - r_sym, PAPER_LATE), notation=LATE_NOTATION),
        Step("(R)", "At least one of $k$ independent copies is timely", REL_R, "[@bogatyrev2017]",
             check=relation_check(REL_R, _bind_R, describe=": the package's R(3) vs r by quadrature")),
        Step("(F1)", r"A fault-free and timely copy, the faults taken at the mean sojourn times "
             r"$T_i = v_i/(1 - \rho_i)$", REL_F1, "[@bogatyrev2017]",
             check=relation_check(REL_F1, _bind_F1, describe=": T_i from the nodes' CTMCs, r by quadrature")),
        Step("(F2)", r"Separate fault rates while waiting ($\lambda_{i1}$) and while being served "
             r"($\lambda_{i0}$), with the mean waits $w_i = \rho_i v_i/(1 - \rho_i)$", REL_F2, "[@bogatyrev2017]",
             check=relation_check(REL_F2, _bind_F2, describe=": w_i from the nodes' CTMCs, r by quadrature")),
        Step("(F3)", "Pathwise faults (the exact counterpart of (F2), beside the paper): Poisson faults during the "
             r"actual waiting and service times, with $M(a_1, a_2) = \mathrm{E}\bigl[\mathbf{1}\{W_1 + W_2 \le "
             r"t_0\}\, e^{-a_1 W_1 - a_2 W_2}\bigr]$", REL_F3, "",
             check=relation_check(REL_F3, _bind_F3, describe=": M by quadrature of the tilted convolution")),
        Step("(D)", r"The sum over $N$ intervals of [@bogatyrev2017], with $d = t_0/N$, $B_0 = 1 - \rho_1$ and "
             r"$B_i = F_1(i d) - F_1((i-1) d)$", REL_D, "",
             check=relation_check(REL_D, _bind_D, describe=": the package's r_N, N = 20")),
        Step("(E)", "Its error is $O(1/N)$",
             sp.Eq(sp.Limit(N_ * (r_sym - rN), N_, sp.oo),
                   t / 2 * sp.Integral(rho1 * th1 * sp.exp(-th1 * w) * rho2 * th2 * sp.exp(-th2 * (t - w)),
                                       (w, 0, t))), "", check=_check_E),
        Step("(K)", "The stable numbers of copies; the optimal $k$ maximises $R(k)$ among them", REL_K,
             "[@bogatyrev2017]",
             check=_check_K),
    )
    checks = (
        Check("SymPy integral = the package's evaluated form; Erlang-2 limit", _check_symbolic, "(r=)"),
        Check("$r$ vs mpmath's quadrature, $\\theta_1 = \\theta_2$ and $\\theta_1 \\to \\theta_2$", _check_quad, "(S)"),
        Check("float64 at $\\theta_2 - \\theta_1 = 10^{-12}$", _check_float64_near_equal, "(S')"),
        Check("optimal k vs brute force by quadrature", _check_optimum, "(K)"),
    )
    return Derivation(
        name="redundant-cluster",
        title="A two-level cluster with $k$ request copies: the probability of timely service",
        source="[@bogatyrev2017]", provenance=("docs/theory/other-models.md section E", __name__),
        steps=steps,
        checks=checks,
        notes=(r"The example of the paper ($n = m$, $v_1 = v_2$) has $\theta_1 = \theta_2$ exactly: the Erlang-2 "
               "branch is its normal case, not an edge case.",),
        recursions=RECURSIONS,
    )


def _surv_quad(tv):
    """S(t) = P(E_1 + E_2 > t) for the levels' rates theta_1, theta_2, by quadrature of its definition."""
    _, _, t1, t2 = _level_values()
    return mpmath.exp(-t1 * tv) + mpmath.quad(lambda u: t1 * mpmath.exp(-t1 * u - t2 * (tv - u)), [0, tv])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(40) else 1)
