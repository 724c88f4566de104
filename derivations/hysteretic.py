"""Hysteretic overload control M[X]|G|1|(L,H)|(H,R): Sopin (2013), chapter 3, eqs. (16)-(23).

As reconstructed in ``docs/theory/chapter3.md``: the embedded chain at departure epochs (event
convention) and its balance equations (16a)-(16d) with symbolic thresholds, the
embedded-to-time relation (17), the mode probabilities (18), (19), the normal-mode block
P_0 (20), the mean normal-mode sojourn E tau_0 (21) -- corrected: the thesis's form (21')
omits the idle periods -- the mean return time E tau_12 (22), the control cycle E tau (23)
and the renewal identity (23'). Every step is typeset in index form and **evaluated as
displayed** by ``qderive verify`` with the numbers of chains built from the model
definition (:mod:`qderive.numeric.oracles.hysteretic`): the embedded chain with Panjer's
arrival counts, solved by GTH, first-passage times and exit laws by the M-matrix solve,
and, for exponential service, the CTMC of the continuous-time process (the time-stationary
law p_{c,s} of (17) and P(S_s) of (18), (19) come from it, not from q). The checks compare
the engine (:mod:`qderive.numeric.kernels.hysteretic`) with the same oracles at points that
cover batch and single arrivals, light and heavy load, the overload factors 1 (pure discard
hysteresis) and 0 (complete blocking), R = H + 1, the left convention and label semantics.

**The instantaneous policy** (``--policy instant``, seed 002, abstract 2): the mode follows the
count at once, so within a service the arrival rate changes as the count crosses H and R: the
arrivals during a service are a state-dependent pure birth process, (I1), (I2) (uniformization,
nonnegative terms; evaluated as displayed against ``mpmath.expm`` of Q D and of Van Loan's
block matrix), the time-stationary law (I3) (evaluated with the kernel's q and interval profiles
against the CTMC of the policy, exponential service) and the mean time between mode changes (I4)
(against the stationary flow of mode-changing transitions). The checks compare the engine with
the M|M|1 hysteresis (single arrivals) and with the instant-policy CTMC (batches).

``python -m qderive.derivations.hysteretic`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import sympy as sp

from ..symbolic.batches import Constant, Geometric
from ..symbolic.capabilities import declare
from ..symbolic.laws import Deterministic, Erlang, Exponential
from ..symbolic.models.hysteretic import Convention, HystereticModel, Semantics
from .framework import Check, Derivation, Step, agreement_digits, relation_check

__all__ = ["derivation", "steps", "CHECK_POINTS", "RECURSIONS", "gth_elimination", "normal_sojourn_solve"]

_CITE = "[@sopin2013, eq. ({})]"
SOURCE = "Sopin 2013, chapter 3, eqs. (16)-(23); reconstruction in docs/theory/chapter3.md"


# -- reference recursions for the LaTeX export (latexify-py renders them as algorithms) ---------------------------


def gth_elimination(P, n):
    r"""The balance equations [@sopin2013, eq. (16)] solved by elimination [@gth1985]: the states are eliminated
    from the last, with no diagonal and no subtraction; $\pi P = \pi$."""
    for k in range(n - 1, 0, -1):
        s = sum(P[k][j] for j in range(k))
        for i in range(k):
            P[i][k] = P[i][k] / s
            for j in range(k):
                P[i][j] = P[i][j] + P[i][k] * P[k][j]
    pi = [0] * n
    pi[0] = 1
    for k in range(1, n):
        pi[k] = sum(pi[i] * P[i][k] for i in range(k))
    return pi


def normal_sojourn_solve(W, s, g, m):
    r"""(21) without subtraction: $(I - P_0)\, y = g$ with $W = P_0$ (upper Hessenberg) and $s$ = its exits."""
    d = [0] * m
    for k in range(m):
        if k > 0:
            f = W[k][k - 1] / d[k - 1]
            s[k] = s[k] + f * s[k - 1]
            g[k] = g[k] + f * g[k - 1]
            for j in range(k + 1, m):
                W[k][j] = W[k][j] + f * W[k - 1][j]
        d[k] = s[k] + sum(W[k][j] for j in range(k + 1, m))
    y = [0] * m
    for k in reversed(range(m)):
        y[k] = (g[k] + sum(W[k][j] * y[j] for j in range(k + 1, m))) / d[k]
    return y


RECURSIONS = (
    ("The stationary vector of the embedded chain", gth_elimination),
    ("The mean normal-mode sojourn (21): elimination of $I - P_0$ without subtraction", normal_sojourn_solve),
)


# -- symbols and the displayed relations ---------------------------------------------------------------------------

i, j, m, c, c0 = sp.symbols("i j m c c_0", integer=True, nonnegative=True)
s = sp.Symbol("s", integer=True, nonnegative=True)
L, H, R = sp.symbols("L H R", integer=True, positive=True)
lam0, b1 = sp.symbols("lambda_0 b_1", positive=True)
q, p, l, J = (sp.IndexedBase(n) for n in ("q", "p", "l", "J"))
lbar = sp.IndexedBase(r"\bar{l}")
a0, a1 = sp.IndexedBase("a^{(0)}"), sp.IndexedBase("a^{(1)}")
A0, A1 = sp.IndexedBase(r"\bar{a}^{(0)}"), sp.IndexedBase(r"\bar{a}^{(1)}")
P0i = sp.IndexedBase("P_0")
C = sp.Symbol("C", positive=True)
PS = tuple(sp.Function("P")(sp.Symbol(rf"\mathcal{{S}}_{k}")) for k in range(3))
tau0, tau12, tau = sp.symbols(r"E\tau_0 E\tau_{12} E\tau", positive=True)
_n = H - 1
P0 = sp.MatrixSymbol("P_0", _n, _n)
eL, e1 = sp.MatrixSymbol("e_L", _n, 1), sp.MatrixSymbol("e_1", _n, 1)
ones = sp.MatrixSymbol(r"\mathbf{1}", _n, 1)
T0, T0t = sp.MatrixSymbol(r"E\tau_0", 1, 1), sp.MatrixSymbol(r"E\tau_0^{thesis}", 1, 1)
#: the cost vector of (21); framework.evaluate reads a MatAdd as a scalar sum, so its value is bound as a whole
_COSTS = b1 * ones + e1 / lam0

_first = sp.Sum(l[m] * a0[j + 1 - m], (m, 1, j + 1))
REL = {
    "(16a)": sp.Eq(q[j, 0], q[0, 0] * _first + sp.Sum(q[i, 0] * a0[j - i + 1], (i, 1, sp.Min(j + 1, H - 2)))
                   + sp.KroneckerDelta(j, L - 1) * q[L, 1] * a1[0]),
    "(16b)": sp.Eq(q[j, 1], sp.Piecewise((q[0, 0] * _first + sp.Sum(q[i, 0] * a0[j - i + 1], (i, 1, H - 2)),
                                          j >= H - 1), (0, True))
                   + sp.Sum(q[i, 1] * a1[j - i + 1], (i, L, sp.Min(j + 1, R - 2)))
                   + sp.KroneckerDelta(j, H) * q[H + 1, 2]),
    "(16c)": sp.Eq(q[j, 2], q[j + 1, 2]),
    "(16d)": sp.Eq(q[R - 1, 2], q[0, 0] * (sp.Sum(l[m] * A0[R - m], (m, 1, R - 1)) + lbar[R])
                   + sp.Sum(q[i, 0] * A0[R - i], (i, 1, H - 2)) + sp.Sum(q[i, 1] * A1[R - i], (i, L, R - 2))),
    "(17a)": sp.Eq(C, b1 + q[0, 0] / lam0),
    "(17b)": sp.Eq(p[c, s], (sp.Sum(q[i, s] * J[s, c - i], (i, 1, c))
                             + sp.KroneckerDelta(s, 0) * q[0, 0] * sp.Sum(l[c0] * J[0, c - c0], (c0, 1, c))) / C),
    "(17c)": sp.Eq(p[0, 0], q[0, 0] / (lam0 * C)),
    "(18)": sp.Eq(PS[1], b1 / C * sp.Sum(q[j, 1], (j, L, R - 2))),
    "(19)": sp.Eq(PS[2], b1 / C * sp.Sum(q[j, 2], (j, H + 1, R - 1))),
    "(20)": sp.Eq(P0i[i, j], sp.Piecewise((_first, sp.Eq(i, 0)), (a0[j - i + 1], j >= i - 1), (0, True))),
    "(21)": sp.Eq(T0, eL.T * (sp.Identity(_n) - P0).inv() * _COSTS),
    "(21')": sp.Eq(T0t, b1 * eL.T * (sp.Identity(_n) - P0).inv() * ones),
    "(22)": sp.Eq(tau12, tau0 * (PS[1] + PS[2]) / PS[0]),
    "(23)": sp.Eq(tau, tau0 + tau12),
    "(23')": sp.Eq(tau, C / (q[L, 1] * a1[0])),
}
_TITLES = {
    "(16a)": (r"The balance of the normal-mode states $(j, 0)$, $j = 0, \dots, H-2$ (event convention)",
              _CITE.format(16)),
    "(16b)": (r"The balance of the overload states $(j, 1)$, $j = L, \dots, R-2$", _CITE.format(16)),
    "(16c)": (r"The discard states drain one by one, $j = H+1, \dots, R-2$", _CITE.format(16)),
    "(16d)": (r"The entry into the discard mode at $(R-1, 2)$, with $\bar a_n = \Pr(A \ge n)$ and "
              r"$\bar l_R = \Pr(X \ge R)$", _CITE.format(16)),
    "(17a)": ("The mean time between departures", _CITE.format(17)),
    "(17b)": (r"The time-stationary law of the count $1 \le c < R$ in the interval mode $s$ ($J_{s,n}$ is the time of "
              "a mode-$s$ service with $n$ arrivals so far)", _CITE.format(17), "docs/theory/chapter3.md section 4"),
    "(17c)": ("The probability of an empty system", _CITE.format(17)),
    "(18)": ("The probability of overload (interval semantics)", "[@sopin2013, Statement 3, eq. (18)]"),
    "(19)": ("The probability of discard, $b_1 (R-1-H) q_{R-1,2} / C$", "[@sopin2013, Statement 3, eq. (19)]"),
    "(20)": ("The embedded transition matrix restricted to the normal-mode states", _CITE.format(20)),
    "(21)": ("The mean normal-mode sojourn, corrected: the idle periods in $(0,0)$ belong to the normal mode",
             _CITE.format(21), "docs/theory/chapter3.md section 6"),
    "(21')": ("The thesis's form, which omits the idle periods (exact only when $q_{0,0} = 0$)", _CITE.format(21)),
    "(22)": ("The mean return time (renewal reward over control cycles)", _CITE.format(22)),
    "(23)": ("The mean control cycle", _CITE.format(23)),
    "(23')": (r"The renewal identity: one cycle per entry into $\mathcal{S}_0$", "",
              "docs/theory/chapter3.md section 7"),
}


# -- the oracle numbers bound to the displayed relations ------------------------------------------------------------

#: the points where every displayed relation is evaluated: (name, model); the first has exponential service, so the
#: CTMC of the process supplies p_{c,s} and P(S_s)
_BOUND = (
    ("geometric batches, exp service, rho_0 = 3/2", lambda: HystereticModel.from_load(
        F(3, 2), service=Exponential(F(1, 200)), batch=Geometric(2), L=4, H=8, R=12)),
    ("single arrivals, det service, rho_0 = 9/10", lambda: HystereticModel.from_load(
        F(9, 10), service=Deterministic(F(1, 200)), batch=Constant(1), L=4, H=8, R=12)),
    ("geometric batches, Erlang-3, complete blocking (f = 0)", lambda: HystereticModel.from_load(
        F(6, 5), service=Erlang(3, F(1, 200)), batch=Geometric(2), L=3, H=6, R=10, overload_factor=0)),
)
#: the relations that need the CTMC of the process (exponential service only)
_PROCESS = ("(17b)", "(17c)", "(18)", "(19)")


@functools.lru_cache(maxsize=8)
def _bindings(name: str, digits: int) -> tuple:
    """(model, env) at ``digits`` (the oracles at digits + 20: their tails P(A >= n) are 1 - sums)."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles import hysteretic as O

    model = dict(_BOUND)[name]()
    ctx = mp_context(digits + 20)
    with ctx:
        e = O.embedded(model, ctx)
        Hm, Lm, Rm = model.H, model.L, model.R
        n = Hm - 1
        nidx = [e.index[(k, 0)] for k in range(n)]
        P0m = mpmath.matrix(n, n)
        for a_, ia in enumerate(nidx):
            for b_, ib in enumerate(nidx):
                P0m[a_, b_] = e.P[ia, ib]
        unit = lambda k: mpmath.matrix([[1 if r == k else 0] for r in range(n)])  # noqa: E731
        env = {
            L: Lm, H: Hm, R: Rm, lam0: ctx.num(model.rate), b1: ctx.num(model.service.moment(1)),
            q: e.q, l: e.extra["pmf"], a0: list(e.a[0]), a1: list(e.a[1]), A0: e.extra["ge"][0], A1: e.extra["ge"][1],
            lbar: {Rm: e.extra["first"][Rm]}, C: e.extra["C"],
            P0i: {(x, y): P0m[x, y] for x in range(n) for y in range(n)},
            P0: P0m, eL: unit(Lm - 1), e1: unit(0), ones: mpmath.matrix([[1]] * n),
            _COSTS: ctx.num(model.service.moment(1)) * mpmath.matrix([[1]] * n) + unit(0) / ctx.num(model.rate),
            T0: mpmath.matrix([[e.measures["mean_normal_time"]]]),
            T0t: mpmath.matrix([[e.extra["thesis_normal_time"]]]),
            tau0: e.measures["mean_normal_time"], tau12: e.measures["mean_return_time"], tau: e.extra["cycle"],
            PS[0]: e.extra["p"][0], PS[1]: e.extra["p"][1], PS[2]: e.extra["p"][2],
        }
        if isinstance(model.service, Exponential):
            o = O.process(model, ctx)
            env.update({p: o.pi, PS[0]: o.measures["p_normal"], PS[1]: o.measures["p_overload"],
                        PS[2]: o.measures["p_discard"],
                        J: {(x, k): v for x in range(3) for k, v in enumerate(O.level_times(model, ctx, x))}})
    return model, env


def _ranges(label: str, model) -> dict:
    Lm, Hm, Rm = model.L, model.H, model.R
    return {"(16a)": {j: range(0, Hm - 1)}, "(16b)": {j: range(Lm, Rm - 1)}, "(16c)": {j: range(Hm + 1, Rm - 1)},
            "(17b)": {c: range(1, Rm), s: range(3)}, "(20)": {i: range(0, Hm - 1), j: range(0, Hm - 1)}}.get(label, {})


def _hook(label: str):
    """Evaluate the displayed relation ``label`` at every bound point (the oracles' numbers)."""

    def run(digits):
        worst, names = math.inf, []
        for name, make in _BOUND:
            if label in _PROCESS and not isinstance(make().service, Exponential):
                continue
            model, env = _bindings(name, digits)
            bind = lambda d, env=env, model=model: (env, _ranges(label, model))  # noqa: E731
            _, agreed, _ = relation_check(REL[label], bind)(digits)
            worst = min(worst, agreed)
            names.append(name)
        return worst >= digits - 5, worst, f"evaluated as displayed at: {'; '.join(names)} (oracle chains)"

    return run


# -- the instantaneous policy: the state-dependent birth kernel --------------------------------------------------------

k_, cc, sp_, mm = sp.symbols("k c' s' m", integer=True, nonnegative=True)
Lam, nu = sp.symbols(r"\Lambda \nu", positive=True)
Mb, Tb, Pk = sp.IndexedBase("M"), sp.IndexedBase("T"), sp.IndexedBase(r"\left(P^{k}\right)")
beta_, btail = sp.IndexedBase(r"\beta"), sp.IndexedBase(r"\bar{\beta}")
tau_k, chi = sp.IndexedBase(r"\tau"), sp.IndexedBase(r"\chi")
tmc = sp.Symbol(r"E\theta", positive=True)
INSTANT_REL = {
    "(I1)": sp.Eq(Mb[c0, c], sp.Sum(beta_[k_] * Pk[k_, c0, c], (k_, 0, sp.oo))),
    "(I2)": sp.Eq(Tb[c0, c], sp.Sum(btail[k_] / Lam * Pk[k_, c0, c], (k_, 0, sp.oo))),
    "(I3)": sp.Eq(p[c, mm], sp.Sum(q[i, sp_] * tau_k[i, sp_, c] * chi[sp_, c, mm], (i, 0, R - 1), (sp_, 0, 2)) / C),
    "(I4)": sp.Eq(tmc, C / nu),
}
_INSTANT_TITLES = {
    "(I1)": (r"The arrivals during a deterministic service of length $D$ with the count-dependent rate: "
             r"$M = e^{Q D}$ by uniformization, $P = I + Q/\Lambda \ge 0$, "
             r"$\beta_k = e^{-\Lambda D} (\Lambda D)^k / k!$", "[@pechinkin_sip]",
             "seed 002, abstract 2; numeric/kernels/birth.py"),
    "(I2)": (r"The expected time at each count during the service, $T = \int_0^D e^{Q t}\, dt$, with "
             r"$\bar\beta_k = \Pr(K > k)$", "", "docs/theory/chapter3.md section 4 (w_k); numeric/kernels/birth.py"),
    "(I3)": (r"The time-stationary law of the count $c$ and the mode $m$ when the mode follows the count at once: "
             r"$\tau_{i,s',c}$ is the expected time at $c$ in the interval from $(i, s')$, and $\chi_{s',c,m} = 1$ "
             r"when $\max(s', \operatorname{level}(c)) = m$", "", "(17) for the instant policy"),
    "(I4)": (r"The mean time between mode changes: $\nu$ is the expected number of changes per departure (up at "
             r"arrivals crossing $H$ or $R$, down at departures), every change counted once", "[@pechinkin_sip]",
             "seed 002, abstract 2"),
}
#: the instant-policy point of (I1)-(I4): deterministic service for (I1), (I2), exponential for (I3), (I4)
_INSTANT_POINT = dict(batch=Geometric(F(3, 2)), L=2, H=4, R=7, rate=F(3, 4), overload_factor=F(1, 2))


@functools.lru_cache(maxsize=4)
def _instant_kernel_bindings(digits: int) -> dict:
    """(I1), (I2) from the definition: Q of the birth process (rates lambda_0 below H, lambda_1 from H, R
    absorbing), mpmath.expm of Q D and of [[Q, I], [0, 0]] D (Van Loan), the powers of P = I + Q / lambda_0
    and the Poisson(lambda_0 D) probabilities -- none from the kernel."""
    pt = _INSTANT_POINT
    Rm, Hm, batch = pt["R"], pt["H"], pt["batch"]
    lam = (pt["rate"], pt["rate"] * pt["overload_factor"])
    D = F(2)

    def mpq(x):
        x = F(x)
        return mpmath.mpf(x.numerator) / x.denominator

    with mpmath.workdps(digits + 20):
        n = Rm + 1
        Q = mpmath.zeros(n, n)
        for x in range(Rm):
            r = lam[0] if x < Hm else lam[1]
            for y in range(1, Rm - x):
                Q[x, x + y] += mpq(r * batch.pmf(y))
            Q[x, Rm] += mpq(r * batch.tail(Rm - x - 1))
            Q[x, x] -= mpq(r)
        big = mpmath.zeros(2 * n, 2 * n)
        for x in range(n):
            big[x, n + x] = 1
            for y in range(n):
                big[x, y] = Q[x, y]
        Dm, L0 = mpq(D), mpq(lam[0])
        E, V = mpmath.expm(Q * Dm), mpmath.expm(big * Dm)
        Pm = mpmath.eye(n) + Q / L0
        powers = [mpmath.eye(n)]

        def power(kk, a, b):
            while len(powers) <= kk:
                powers.append(powers[-1] * Pm)
            return powers[kk][a, b]

        def beta(kk):
            return mpmath.exp(-L0 * Dm) * (L0 * Dm) ** kk / mpmath.factorial(kk)

        def tail(kk):  # P(K > kk) = P(kk + 1, Lambda D), the regularized lower incomplete gamma (no 1 - sum)
            return mpmath.gammainc(kk + 1, 0, L0 * Dm, regularized=True)

        return {Mb: {(a, b): E[a, b] for a in range(n) for b in range(n)},
                Tb: {(a, b): V[a, n + b] for a in range(n) for b in range(n)},
                Pk: power, beta_: beta, btail: tail, Lam: L0, "R": Rm}


@functools.lru_cache(maxsize=4)
def _instant_chain_bindings(digits: int) -> dict:
    """(I3), (I4): the kernel's q, interval profiles, C and changes per departure, against the instant-policy
    CTMC (exponential service) of :func:`qderive.numeric.oracles.hysteretic.instant`."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.hysteretic import instant_chain
    from ..numeric.kernels.birth import birth_mode
    from ..numeric.oracles.hysteretic import instant
    from ..symbolic.models.hysteretic import Policy

    model = HystereticModel(service=Exponential(F(1, 2)), policy=Policy.INSTANT, **_INSTANT_POINT)
    ctx = mp_context(digits + 20)
    with ctx:
        ch = instant_chain(model, ctx)
        o = instant(model, ctx)
        qd = {st: ch.q[k] for k, st in enumerate(ch.states)}
        prof = {(j_, s_, x): ch.profile(j_, s_)[x] for (j_, s_) in ch.states for x in range(model.R + 1)}
        return {q: qd, tau_k: prof, chi: lambda s_, x, m_: int(birth_mode(s_, x, model.H, model.R) == m_),
                p: {(x, m_): v for (x, m_), v in o.pi.items()}, C: ch.C, R: model.R, nu: ch.changes_per_departure(
                    ch.batch.tail), tmc: o.measures["mean_time_between_mode_changes"], "R_": model.R}


def _instant_hook(label: str):
    def run(digits):
        if label in ("(I1)", "(I2)"):
            env = _instant_kernel_bindings(digits)
            n = env["R"] + 1
            ranges = {c0: range(n), c: range(n)}
            where = "deterministic service, geometric batches (mpmath.expm, Van Loan)"
        else:
            env = _instant_chain_bindings(digits)
            ranges = {c: range(env["R_"] + 1), mm: range(3)} if label == "(I3)" else {}
            where = "exponential service, geometric batches (the instant-policy CTMC)"
        env = {key: v for key, v in env.items() if not isinstance(key, str)}
        ok, agreed, detail = relation_check(INSTANT_REL[label], lambda d: (env, ranges))(digits)
        return ok, agreed, f"{detail}; {where}"

    return run


def steps() -> tuple:
    """The relations (16)-(23) and (I1)-(I4) of the instant policy, each with its evaluation hook."""
    def prose(entry):  # (title, citation[, provenance])
        return {"title": entry[0], "citation": entry[1], "provenance": entry[2] if len(entry) > 2 else ""}

    return (tuple(Step(label, relation=REL[label], check=_hook(label), **prose(_TITLES[label])) for label in REL)
            + tuple(Step(label, relation=INSTANT_REL[label], check=_instant_hook(label),
                         **prose(_INSTANT_TITLES[label])) for label in INSTANT_REL))


# -- checks: the engine against the oracles --------------------------------------------------------------------------


def _model(load, service, batch, thresholds, **kw):
    Lm, Hm, Rm = thresholds
    return HystereticModel.from_load(load, service=service, batch=batch, L=Lm, H=Hm, R=Rm, **kw)


#: (name, model) of the engine checks: both arrival types, light and heavy load, every variant of the model
CHECK_POINTS = (
    ("geometric, det, rho_0 = 3/2", lambda: _model(F(3, 2), Deterministic(F(1, 200)), Geometric(2), (10, 20, 30))),
    ("single, det, rho_0 = 9/10", lambda: _model(F(9, 10), Deterministic(F(1, 200)), Constant(1), (10, 20, 30))),
    ("geometric, exp, rho_0 = 1", lambda: _model(F(1), Exponential(F(1, 200)), Geometric(2), (4, 8, 12))),
    ("geometric, exp, rho_0 = 2, pure discard hysteresis f = 1",
     lambda: _model(F(2), Exponential(F(1, 200)), Geometric(2), (4, 8, 12), overload_factor=1)),
    ("single, exp, rho_0 = 3/2, complete blocking f = 0",
     lambda: _model(F(3, 2), Exponential(F(1, 200)), Constant(1), (4, 8, 12), overload_factor=0)),
    ("geometric, Erlang-2, rho_0 = 3/2, R = H + 1", lambda: _model(F(3, 2), Erlang(2, F(1, 200)), Geometric(2),
                                                                   (4, 8, 9))),
    ("geometric, det, rho_0 = 3/2, left convention", lambda: _model(F(3, 2), Deterministic(F(1, 200)), Geometric(2),
                                                                    (4, 8, 12), convention=Convention.LEFT)),
)


def _compare(pairs):
    worst = math.inf
    for x, ref in pairs:
        if ref == 0 and x == 0:
            continue
        worst = min(worst, agreement_digits(x, ref))
    return worst


def _check_embedded(digits):
    """Every measure of the engine (interval semantics, corrected and thesis (21)) = the embedded-chain oracle."""
    from dataclasses import replace

    from ..numeric.backend import mp_context
    from ..numeric.oracles.hysteretic import embedded

    worst = math.inf
    for name, make in CHECK_POINTS:
        model = make()
        ctx = mp_context(digits + 20)
        with ctx:
            o = embedded(model, ctx)
        got = model.evaluate(digits).as_dict()
        thesis = replace(model, thesis_form=True).evaluate(digits).mean_normal_time
        worst = min(worst, _compare([(got[k], v) for k, v in o.measures.items()]
                                    + [(thesis, o.extra["thesis_normal_time"])]))
    return worst >= digits - 2, worst, f"8 measures + thesis (21') at {len(CHECK_POINTS)} points (embedded oracle)"


def _check_process(digits):
    """Interval and label semantics of the engine = the CTMC of the process (exponential service)."""
    from dataclasses import replace

    from ..numeric.backend import mp_context
    from ..numeric.oracles.hysteretic import process

    worst, count = math.inf, 0
    for name, make in CHECK_POINTS:
        model = make()
        if not isinstance(model.service, Exponential) or model.convention is not Convention.EVENT:
            continue
        ctx = mp_context(digits + 20)
        with ctx:
            o = process(model, ctx)
        got = model.evaluate(digits).as_dict()
        lab = replace(model, semantics=Semantics.LABEL).evaluate(digits).as_dict()
        worst = min(worst, _compare([(got[k], v) for k, v in o.measures.items()]
                                    + [(lab[k], v) for k, v in o.extra["label"].items()]))
        count += 1
    return worst >= digits - 2, worst, f"both semantics, every measure, at {count} points (process CTMC)"


def _check_size(digits):
    """``size hysteretic`` = a scan of the process CTMC at ``digits``: L, H = 2, 4, exponential service, geometric
    batches, rho_0 = 1.2, f = 1/2; the bound 0.08 is met at R = 6, not at R = 7..11 (the rise), then from R = 12."""
    from dataclasses import replace

    import mpmath

    from ..numeric.backend import mp_context
    from ..numeric.engines.hysteretic import smallest_threshold
    from ..numeric.oracles.hysteretic import process

    model = HystereticModel.from_load(F(6, 5), service=Exponential(1), batch=Geometric(2), L=2, H=4, R=6)
    ctx = mp_context(digits + 10)
    with ctx:
        p = {R: process(replace(model, R=R), ctx).measures["p_discard"] for R in range(6, 17)}
    eps = mpmath.mpf(8) / 100
    expected = min(R for R in p if all(p[x] <= eps for x in p if x >= R))
    got = smallest_threshold(model, F(8, 100), digits=digits)
    agreed = agreement_digits(got["p_discard"], p[expected])
    ok = got["R"] == expected and got["p_discard_one_fewer"] > eps and agreed >= digits - 2
    return ok, agreed, f"R = {got['R']} (scan of the process CTMC: {expected}), P(S_2) there and at R - 1"


def _check_time_law(digits):
    """(17) as computed by the kernel: p_{c,s} for every count and mode = the stationary law of the process CTMC."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.hysteretic import solution
    from ..numeric.oracles.hysteretic import process

    model = _BOUND[0][1]()
    ctx = mp_context(digits + 20)
    with ctx:
        cols = solution(model, ctx).time_distribution()
        o = process(model, ctx)
        pairs = [(cols[sm][cc], o.pi.get((cc, sm), 0)) for cc in range(model.R + 1) for sm in range(3)]
    worst = _compare(pairs)
    return worst >= digits, worst, f"p_(c,s), c = 0..R, s = 0..2 at {_BOUND[0][0]}"


def _check_renewal(digits):
    """E tau = E tau_0 + E tau_12 of the engine equals C / (q_{L,1} a_0^(1)) (both semantics; the corrected (21))."""
    from dataclasses import replace

    from ..numeric.engines.hysteretic import diagnostics

    worst = math.inf
    for name, make in CHECK_POINTS[:4]:
        for sem in Semantics:
            model = replace(make(), semantics=sem)
            worst = min(worst, agreement_digits(model.evaluate(digits).mean_cycle_time,
                                                diagnostics(model, digits)["renewal_cycle_time"]))
    return worst >= digits - 2, worst, "interval and label semantics at 4 points"


def _check_instant(digits):
    """--policy instant = the M|M|1 hysteresis (single arrivals) and the instant-policy CTMC (batches, f = 1/2
    and f = 0), every measure (exponential service: both are chains from the definition)."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.hysteretic import instant, mm1
    from ..symbolic.models.hysteretic import MM1HystereticModel, Policy

    worst = math.inf
    single = HystereticModel(service=Exponential(1), L=2, H=4, R=6, rate=F(6, 5), overload_factor=F(1, 2),
                             policy=Policy.INSTANT)
    ctx = mp_context(digits + 20)
    with ctx:
        o = mm1(MM1HystereticModel(F(6, 5), F(3, 5), 1, 2, 4, 6), ctx)
        ref = {**o.measures, "mean_time_between_mode_changes": o.extra["mean_time_between_mode_changes"]}
    got = single.evaluate(digits).as_dict()
    worst = min(worst, _compare([(got[k], v) for k, v in ref.items()]))
    for f in (F(1, 2), F(0)):
        model = HystereticModel(service=Exponential(F(1, 2)), policy=Policy.INSTANT,
                                **{**_INSTANT_POINT, "overload_factor": f})
        with ctx:
            ref = instant(model, ctx).measures
        got = model.evaluate(digits).as_dict()
        worst = min(worst, _compare([(got[k], v) for k, v in ref.items()]))
    return worst >= digits - 2, worst, "M|M|1 hysteresis and the instant CTMC (9 measures each) at 3 points"


def _check_departure_changes(digits):
    """mean_time_between_mode_changes of the departure policy = 1 / (mode-changing flow) of the process CTMC."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.hysteretic import process

    worst = math.inf
    for name, make in CHECK_POINTS[2:5]:
        model = make()
        ctx = mp_context(digits + 20)
        with ctx:
            ref = process(model, ctx).measures["mean_time_between_mode_changes"]
        worst = min(worst, agreement_digits(model.evaluate(digits).mean_time_between_mode_changes, ref))
    return worst >= digits - 2, worst, "3 exponential-service points (process CTMC)"


def _check_instant_wait(digits):
    """--policy instant, an admitted customer's P(W > t), E W, E W^2 and E T (numeric/engines/hysteretic_wait.py,
    ``--policy instant``: the birth kernel's rows, inverted at ``digits``) vs the tagged customer's absorption
    time in the instant-policy CTMC built from the definition (numeric/oracles/hysteretic_wait.py, digits + 20):
    exponential service, geometric batches, f = 1/2."""
    from ..numeric.oracles.hysteretic_wait import instant_wait
    from ..symbolic.models.hysteretic import Policy

    model = HystereticModel(service=Exponential(F(1, 2)), policy=Policy.INSTANT, **_INSTANT_POINT)
    ts = ("1/2", "6")
    got = model.evaluate(digits, wait_tail=list(ts), wait_moments=2, sojourn_moments=1).response
    tail, mom = instant_wait(model, digits + 20, [F(t) for t in ts], 2)
    soj = instant_wait(model, digits + 20, (), 1, sojourn=True)[1]
    worst = _compare([(got["wait_tail"][t], r) for t, r in zip(ts, tail)] + list(zip(got["wait_moments"], mom))
                     + list(zip(got["sojourn_moments"], soj)))
    return worst >= digits - 2, worst, "P(W > t), t = 1/2, 6, E W, E W^2, E T vs the tagged customer in the CTMC"


@functools.lru_cache(maxsize=1)
@declare(independent={
    **{name: "a symbol of the derivation (general laws, rates and thresholds)" for name in
       ("service", "batch", "rate", "overload_factor", "L", "H", "R")},
    **{name: "the steps show the thesis's case (departure policy, event convention, interval semantics, (21) and "
             "its correction (21')); the other variants are checked against their own chains" for name in
       ("convention", "semantics", "thesis_form", "policy")}})
def derivation() -> Derivation:
    """The registered derivation ``hysteretic``."""
    return Derivation(
        name="hysteretic",
        title="Hysteretic overload control in $M^{[X]}/G/1$ with thresholds $L < H < R$: control-cycle measures",
        source="[@sopin2013, ch. 3, eqs. (16)--(23)]",
        provenance=("docs/theory/chapter3.md", __name__),
        steps=steps(),
        checks=(
            Check("engine = embedded chain from the definition (Panjer counts)", _check_embedded, "(21)"),
            Check("engine = CTMC of the process, interval and label semantics", _check_process, "(18)"),
            Check("the time-stationary law of the kernel [@sopin2013, eq. (17)] = CTMC", _check_time_law, "(17b)"),
            Check("(23') renewal identity in the engine", _check_renewal, "(23')"),
            Check("size: smallest R = scan of the process CTMC", _check_size, "(19)"),
            Check("instant switching = the $M/M/1$ hysteresis and the instant-policy CTMC", _check_instant, "(I3)"),
            Check("mean time between mode changes (departure policy) = process CTMC", _check_departure_changes,
                  "(I4)"),
            Check("instant switching: admitted wait and sojourn vs the tagged customer in the instant CTMC",
                  _check_instant_wait),
        ),
        notes=(
            "Event convention: a departure switches the mode by the count $n^-$ just before it (from normal to "
            r"overload when $n^- \ge H$, to discard when $n^- \ge R$; from overload to normal when the departure "
            "leaves $L - 1$ customers; from discard to overload when it leaves $H$). Interval semantics: a moment "
            "belongs to the mode whose arrival rate is in force.",
            "Correction: the thesis's (21) omits the idle periods in the state $(0,0)$; the corrected form adds "
            r"$e_1^{T} / \lambda_0$ to the cost vector. The difference matters for $\rho_0 \le 1$.",
            r"We write $\lambda_1 = f \lambda_0$ with $0 \le f \le 1$: $f = 1$ is the pure discard hysteresis, $f = 0$ "
            r"complete blocking in overload ($a^{(1)}_0 = 1$). With $R = H + 1$ the departure that reaches $R$ leaves "
            "$H$ behind, so the discard mode is entered and left at once (there is no discard state).",
            "When the mode follows the count at once (up at arrivals, down at departures), the embedded chain at "
            "departures has the same states, its rows are the birth kernel (I1) per starting mode, the time law is "
            r"(I3) (the mode in force is $\max(s', \operatorname{level}(c))$), $\mathrm{E}\tau_0$ is (21) with the time "
            "below $H$ as cost, and (22), (23) hold as above.",
        ),
        recursions=RECURSIONS,
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
