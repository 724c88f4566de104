"""Derivation ``two-flow-hysteretic``: M2|M|1|R with bi-level hysteretic input-rate control (seed 002).

The model (:class:`~qderive.symbolic.models.two_flow.TwoFlowHystereticModel`): two Poisson
flows whose rates depend on the mode (normal, overload, discard), one exponential server,
capacity R, relative (non-preemptive) priority to flow 1, switching on the count with
thresholds L < H < R as in ``docs/theory/other-models.md`` B. The engine
(:mod:`qderive.numeric.engines.two_flow_hysteretic`) solves the chain on (s, i, j, k).

The steps: the level cut of the full chain (H.1) and Little's law (H.2); with
mu_1 = mu_2 = mu the pair (mode, n) is B's chain with Lambda_s = lambda_1^(s) + lambda_2^(s)
(lumping: its cut (H.3)), whose law for L, H, R = 2, 4, 6 is given in closed form (H.4),
(H.5.i) (``computed``: the one GTH over Q(Lambda, mu)); the per-flow loss (H.6), the
throughput (H.7) and the cycle identities (H.8), (H.9). Every relation in index form is
evaluated as displayed by ``qderive verify`` with the numbers of the oracle chain
(:mod:`qderive.numeric.oracles.two_flow`: customers as tuples, tagged-customer sojourns,
first-passage cycle times, loss as 1 - admitted / offered).

**A general service law** (``--service LAW``, M2|G|1|R; M2|D|1|R for deterministic service,
seed 002, abstracts 5 and 7): the embedded chain at departures over (i, j, mode) with the
state-dependent birth kernel of the total count (:mod:`qderive.numeric.kernels.birth`; each
arrival is of flow 1 with probability lambda_1^(m) / lambda^(m) in the mode in force, so given the
count path the split is Poisson-binomial); the per-flow mean numbers (G.1) and throughputs (G.2)
by renewal reward over the inter-departure intervals, evaluated as displayed with the kernel's
q and profiles against the oracle chain at ``--service exp`` (the same model).

``python -m qderive.derivations.two_flow_hysteretic`` re-derives, verifies and prints.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction as F

import sympy as sp

from ..symbolic.capabilities import Rule, declare
from ..symbolic.models.two_flow import TwoFlowHystereticModel
from .framework import Check, Derivation, Step, agreement_digits, relation_check
from .two_flow import split_factors, symbolic_stationary

__all__ = ["LumpedLaw", "lumped_law", "lumped_states", "lumped_transitions", "derivation", "CHECK_MODELS"]

_CITE = "[@pechinkin_sip]"
_WHERE = "seed 002 (M2|M|1|R with bi-level hysteretic input control); docs/theory/other-models.md sections B, C"

Lam0, Lam1, Lam2, mu = sp.symbols("Lambda_0 Lambda_1 Lambda_2 mu", positive=True)
_pi = sp.Function(r"\pi")

#: verification models: equal service rates (the lumping holds), unequal rates, the smallest thresholds
CHECK_MODELS = {
    "equal": TwoFlowHystereticModel(F(3, 5), F(2, 5), F(3, 10), F(1, 5), 2, 4, 6, service_rates=1,
                                    lambda1_discard=F(1, 10)),
    "unequal": TwoFlowHystereticModel(F(3, 2), 1, F(1, 2), F(1, 2), 3, 6, 9, service_rates=(1, 2),
                                      lambda1_discard=F(1, 4)),
    "smallest": TwoFlowHystereticModel(2, F(1, 3), 1, F(1, 3), 1, 2, 3, service_rates=F(3, 2),
                                       lambda1_discard=F(1, 2), lambda2_discard=F(1, 5)),
    # the thresholds and rates of "unequal" with one service rate (a service law needs one law for both flows)
    "unequal_as_equal": TwoFlowHystereticModel(F(3, 2), 1, F(1, 2), F(1, 2), 3, 6, 9, service_rates=1,
                                               lambda1_discard=F(1, 4)),
}


def lumped_states(L: int, H: int, R: int) -> list[tuple[int, int]]:
    """(mode, n) of B: S0 = {n <= H-1}, S1 = {L <= n <= R-1}, S2 = {H+1 <= n <= R}; level order, (0, 0) first."""
    states = [(0, n) for n in range(H)] + [(1, n) for n in range(L, R)] + [(2, n) for n in range(H + 1, R + 1)]
    return sorted(states, key=lambda x: (x[1], x[0]))


def lumped_transitions(L: int, H: int, R: int, lam, mu_):
    """((s, n), (s', n'), rate) of B: input rate ``lam[s]``, service rate ``mu_``; (H-1, 0) -> (H, 1) and
    (R-1, 1) -> (R, 2) on an arrival, (L, 1) -> (L-1, 0) and (H+1, 2) -> (H, 1) on a departure."""
    out = []
    for s, n in lumped_states(L, H, R):
        if n < R:
            out.append(((s, n), (1 if (s == 0 and n + 1 == H) else 2 if (s == 1 and n + 1 == R) else s, n + 1),
                        lam[s]))
        if n > 0:
            out.append(((s, n), (0 if (s == 1 and n - 1 == L - 1) else 1 if (s == 2 and n - 1 == H) else s, n - 1),
                        mu_))
    return out


@dataclass(frozen=True)
class LumpedLaw:
    """pi(s, n) = N_(s,n) / sum N of the lumped chain, polynomials in Lambda_0, Lambda_1, Lambda_2, mu."""

    thresholds: tuple
    states: tuple
    ring: object
    polys: tuple

    def values(self, point: dict) -> list:
        """The N_i at exact values ``{symbol: Fraction}``."""
        dom = self.ring.domain
        vals = [(g, dom.from_sympy(sp.Rational(point[g.as_expr()]))) for g in self.ring.gens]
        return [F(str(dom.to_sympy(p.evaluate(vals)))) for p in self.polys]

    def factored(self, i: int) -> sp.Expr:
        """N_i with the rates and the exit-rate sums pulled out (exact trial division)."""
        R = self.ring
        lam = [R.from_expr(v) for v in (Lam0, Lam1, Lam2)]
        m = R.from_expr(mu)
        return split_factors(self.polys[i], list(R.gens) + [x + m for x in lam] + [sum(lam, R.zero)])


@functools.lru_cache(maxsize=4)
def lumped_law(L: int = 2, H: int = 4, R: int = 6) -> LumpedLaw:
    """B's law with symbolic Lambda_0, Lambda_1, Lambda_2, mu by the one GTH over the field of rational functions."""
    states = lumped_states(L, H, R)
    pos = {x: i for i, x in enumerate(states)}
    trans = [(pos[a], pos[b], r) for a, b, r in lumped_transitions(L, H, R, (Lam0, Lam1, Lam2), mu)]
    ring, polys = symbolic_stationary(len(states), trans, (Lam0, Lam1, Lam2, mu), mu,
                                      f"two-flow-hysteretic:{L},{H},{R}")
    return LumpedLaw((L, H, R), tuple(states), ring, polys)


def _lumped_point(model) -> dict:
    r = model.rates
    return {Lam0: r[0][0] + r[0][1], Lam1: r[1][0] + r[1][1], Lam2: r[2][0] + r[2][1], mu: model.service_rates[0]}


# --------------------------------------------------------------------------------------
# Oracle bindings
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _oracle(name: str, digits: int):
    """The oracle chain of CHECK_MODELS[name] at digits + 10: model, chain, pi, every measure, nu."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.two_flow import hysteretic_chain, hysteretic_measures

    model = CHECK_MODELS[name]
    ctx = mp_context(digits + 10)
    chain = hysteretic_chain(model)
    with ctx:
        pi = list(chain.stationary(ctx))
        nu = sum((pi[i] * ctx.num(r) for (i, j), r in chain.rates.items()
                  if chain.states[i][0] == 0 and chain.states[j][0] != 0), ctx.num(0))
    return model, chain, pi, hysteretic_measures(model, ctx), nu


def _count(state) -> int:
    return len(state[1]) + len(state[2]) + (state[3] is not None)


_s, _n, _c, _k = sp.symbols("s n c k", integer=True, nonnegative=True)
_lam = sp.Function(r"\lambda")          # lambda(c, s): rate of flow c in mode s
_P, _Pk = sp.Function("P"), sp.Function("P_k")  # P(s) or P(s, n); P_k(k, n): flow k in service
_mu = sp.IndexedBase(r"\mu")
_T, _N, _loss, _theta = sp.Function("T"), sp.Function("N"), sp.Function(r"\ell"), sp.Function(r"\theta")
_nu, _Et0, _Et12 = sp.Symbol(r"\nu"), sp.Symbol(r"E\tau_0"), sp.Symbol(r"E\tau_{12}")
_R, _S = sp.Symbol("R"), sp.Symbol("|S|")
_sx, _nx, _x = sp.Function("s"), sp.Function("n"), sp.Symbol("x", integer=True, positive=True)


def _bindings(name: str, ranges):
    def bindings(digits):
        model, chain, pi, m, nu = _oracle(name, digits)
        states = chain.states
        zero = 0 * pi[0]

        def P(*args):
            if len(args) == 1:  # P(mode)
                return m[f"p_mode{args[0]}"]
            s, n = args
            return sum((p for st, p in zip(states, pi) if st[0] == s and _count(st) == n), zero)

        def Pk(k, n):
            return sum((p for st, p in zip(states, pi) if _count(st) == n and st[3] is not None and st[3][0] == k),
                       zero)

        env = {
            _lam: lambda c, s: model.rate(s, c),
            _P: P, _Pk: Pk,
            _mu: {1: model.service_rates[0], 2: model.service_rates[1]},
            _T: lambda c: m[f"mean_sojourn_flow{c}"],
            _N: lambda c: m[f"mean_number_flow{c}"],
            _loss: lambda c: m[f"loss_flow{c}"],
            _theta: lambda c: m[f"throughput_flow{c}"],
            _nu: nu, _Et0: m["mean_normal_time"], _Et12: m["mean_return_time"],
            _R: model.R, _S: chain.size,
            sp.Symbol(r"\mu"): model.service_rates[0],
            _pi: lambda x: pi[x - 1],
            _sx: lambda x: states[x - 1][0],
            _nx: lambda x: _count(states[x - 1]),
        }
        return env, ranges(model)

    return bindings


_q, _tau, _w, _sig = sp.Function("q"), sp.Function(r"\tau"), sp.Function("w"), sp.Function(r"\sigma")
_Cs, _cc = sp.Symbol("C", positive=True), sp.Symbol("c'", integer=True, nonnegative=True)


def _service_law_model(name: str):
    """CHECK_MODELS[name] (equal service rates mu) with the law ``--service exp:mean=1/mu`` instead of the rate."""
    from dataclasses import replace

    from ..symbolic.laws import Exponential

    model = CHECK_MODELS[name]
    return replace(model, service_rates=None, service=Exponential(1 / F(model.service_rates[0])))


@functools.lru_cache(maxsize=4)
def _birth_bindings(digits: int):
    """(G.1), (G.2): the joint chain of the birth kernel (q, interval profiles tau, flow counts w, the flow of
    the next service sigma, C), and the oracle chain's N(c), theta(c) (exponential service, the same model)."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.two_flow_hysteretic import birth_chains
    from ..numeric.kernels.birth import birth_split_mean

    model = _service_law_model("equal")
    _, _, _, m, _ = _oracle("equal", digits)
    ctx = mp_context(digits + 10)
    with ctx:
        count, joint = birth_chains(model, ctx)
        H, R = model.H, model.R
        tau, w, sig = {}, {}, {}
        for x, (i, j, s) in enumerate(joint.states, start=1):
            for c in (1, 2):
                sig[(c, x)] = ctx.fsum([wt for wt, (a, b) in joint._starts(i, j, s) if (a >= 1) == (c == 1)])
            for cc in range(R + 1):
                tau[(x, cc)] = count.profile(i + j, s)[cc] if i + j else count.idle_profile[cc]
                for c, pr in ((1, joint.p), (2, joint.q)):
                    if cc == 0:
                        w[(c, x, cc)] = 0
                        continue
                    terms = [wt * ((a if c == 1 else b) + birth_split_mean(ctx, pr, a + b, cc, s, H, R))
                             * count.mats[s][1][a + b][cc] for wt, (a, b) in joint._starts(i, j, s)]
                    # the flow-c customers at count cc, weighted by the time there; divided by tau below
                    w[(c, x, cc)] = ctx.fsum(terms) / tau[(x, cc)] if tau[(x, cc)] != 0 else 0
        env = {_q: lambda x: joint.qs[x - 1], _tau: lambda x, cc: tau[(x, cc)], _w: lambda c, x, cc: w[(c, x, cc)],
               _sig: lambda c, x: sig[(c, x)], _Cs: joint.C, _R: R, _S: len(joint.states),
               _N: lambda c: m[f"mean_number_flow{c}"], _theta: lambda c: m[f"throughput_flow{c}"]}
    return env, {_c: (1, 2)}


def _check_birth_engine(digits):
    """``--service exp:mean=1/mu`` (the birth kernel) = the oracle chain, every measure but the state count."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.two_flow import hysteretic_measures

    worst = float("inf")
    for name in ("equal", "smallest"):
        got = _service_law_model(name).evaluate(digits).as_dict()
        ref = hysteretic_measures(CHECK_MODELS[name], mp_context(digits + 10))
        worst = min([worst] + [agreement_digits(v, ref[k]) for k, v in got.items() if k != "states"])
    return worst >= digits - 2, min(worst, digits), "--service exp vs the oracle chain, two models, 14 measures"


def _check_birth_lumping(digits):
    """The joint chain at departures (i, j, mode) summed over the compositions = the count chain (n, mode)."""
    from dataclasses import replace

    from ..numeric.backend import mp_context
    from ..numeric.engines.two_flow_hysteretic import birth_chains
    from ..symbolic.laws import Deterministic

    model = replace(_service_law_model("unequal_as_equal"), service=Deterministic(F(6, 5)))
    ctx = mp_context(digits + 10)
    with ctx:
        count, joint = birth_chains(model, ctx)
        lumped = {}
        for k, (i, j, s) in enumerate(joint.states):
            lumped.setdefault((i + j, s), []).append(joint.qs[k])
        worst = min(agreement_digits(ctx.fsum(lumped[st]), count.q[k]) for k, st in enumerate(count.states))
    return worst >= digits - 2, min(worst, digits), "M2|D|1|R, L,H,R = 3,6,9: every (n, mode)"


def _lumped_law_bindings(digits):
    model, chain, pi, _, _ = _oracle("equal", digits)
    law = lumped_law(model.L, model.H, model.R)
    marginal = {}
    for st, p in zip(chain.states, pi):
        key = (st[0], _count(st))
        marginal[key] = marginal.get(key, 0) + p
    N = {i + 1: v for i, v in enumerate(law.values(_lumped_point(model)))}
    i = sp.Symbol("i", integer=True, positive=True)
    return ({_pi: lambda a: marginal[law.states[a - 1]], sp.IndexedBase("N"): N, _S: len(law.states)},
            {i: range(1, len(law.states) + 1)})


# --------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------


def _check_lumped_balance(digits):
    law = lumped_law()
    L, H, R = law.thresholds
    Rg = law.ring
    pos = {x: i for i, x in enumerate(law.states)}
    out, inflow = [Rg.zero] * len(law.states), [Rg.zero] * len(law.states)
    lam = [Rg.from_expr(v) for v in (Lam0, Lam1, Lam2)]
    for a, b, r in lumped_transitions(L, H, R, lam, Rg.from_expr(mu)):
        out[pos[a]] += r
        inflow[pos[b]] += law.polys[pos[a]] * r
    ok = all(inflow[i] == law.polys[i] * out[i] for i in range(len(law.states)))
    return ok, None, f"global balance of the lumped chain as polynomial identities, {len(law.states)} states"


def _check_engine_vs_oracle(digits):
    from ..numeric.backend import mp_context
    from ..numeric.oracles.two_flow import hysteretic_measures

    worst = float("inf")
    for model in CHECK_MODELS.values():
        got = model.evaluate(digits).as_dict()
        ref = hysteretic_measures(model, mp_context(digits + 10))
        worst = min([worst] + [agreement_digits(v, ref[k]) for k, v in got.items()])
    return worst >= digits - 2, min(worst, digits), ("engine at digits vs the oracle chain (tagged sojourns, "
                                                     "first-passage cycle times), every measure, three models")


def _check_optimiser(digits):
    """``optimize two-flow-hysteretic`` = a brute force over the oracle chain at ``digits`` (unequal service rates,
    R in 3..6, ties within 10^-(digits - 5))."""
    import mpmath

    from ..numeric.backend import mp_context
    from ..numeric.engines.threshold_search import optimize_two_flow
    from ..numeric.oracles.hysteretic import threshold_optimum
    from ..numeric.oracles.two_flow import hysteretic_measures

    def model(L, H, R):
        return TwoFlowHystereticModel(F(1, 2), F(1, 2), F(1, 4), F(1, 8), L, H, R, service_rates=(1, 2),
                                      lambda1_discard=F(1, 8))

    got = optimize_two_flow(model(1, 2, 6), F(1, 50), 9, r_range=(3, 6))
    _, ties = threshold_optimum(lambda L, H, R: hysteretic_measures(model(L, H, R), mp_context(digits), tagged=False),
                                range(3, 7), F(1, 50), 9, "p_mode2", tie=mpmath.mpf(10)**(5 - digits))
    ok = [(t["L"], t["H"], t["R"]) for t in got["ties"]] == ties and (got["L"], got["H"], got["R"]) == ties[0]
    return ok, None, f"optimum {ties[0]} and ties of the whole grid (R in 3..6) vs the oracle chain at {digits} digits"


def _check_float_vs_mp(digits):
    worst = float("inf")
    for model in CHECK_MODELS.values():
        a, b = model.evaluate().as_dict(), model.evaluate(digits).as_dict()
        worst = min([worst] + [agreement_digits(a[k], b[k]) for k in a])
    return worst >= 12, worst, "float64 vs mpmath, every measure, three models"


def _check_renewal_engine(digits):
    from ..numeric.backend import mp_context
    from ..numeric.engines.two_flow_hysteretic import solve

    agree = []
    for model in CHECK_MODELS.values():
        ctx = mp_context(digits + 10)
        with ctx:
            sol = solve(model, ctx)
            agree.append(agreement_digits(sol.mean_cycle_time() * sol.switch_rate(), 1))
    w = min(agree)
    return w >= digits, min(w, digits), "engine: E tau_0 + E tau_12 = 1 / nu (first passages vs the switch rate)"


@functools.lru_cache(maxsize=1)
@declare(
    Rule("service", lambda law: law is not None, "the derivation is the exponential server M2|M|1|R "
         "(--service-rates); the engine computes a general service law, the steps do not state it"),
    independent={name: "the relations are in index form for every rate and threshold" for name in
                 ("lambda1_normal", "lambda2_normal", "lambda1_overload", "lambda2_overload", "L", "H", "R",
                  "service_rates", "lambda1_discard", "lambda2_discard")})
def derivation() -> Derivation:
    """The ``two-flow-hysteretic`` derivation (module docstring)."""
    s, n, c, k, x = _s, _n, _c, _k, _x
    every_c = lambda model: {c: (1, 2)}
    cut = sp.Eq(sp.Sum((_lam(1, s) + _lam(2, s)) * _P(s, n), (s, 0, 2)), sp.Sum(_mu[k] * _Pk(k, n + 1), (k, 1, 2)))
    little = sp.Eq(_T(c), _N(c) / (_lam(c, 0) * (1 - _loss(c))))
    mu_s = sp.Symbol(r"\mu")
    lumped_cut = sp.Eq(sp.Sum((_lam(1, s) + _lam(2, s)) * _P(s, n), (s, 0, 2)), mu_s * sp.Sum(_P(s, n + 1), (s, 0, 2)))
    i, j = sp.Symbol("i", integer=True, positive=True), sp.Symbol("j", integer=True, positive=True)
    Nb = sp.IndexedBase("N")
    law_rel = sp.Eq(_pi(i), Nb[i] / sp.Sum(Nb[j], (j, 1, _S)))
    loss = sp.Eq(_loss(c), sp.Sum(_pi(x) * ((_lam(c, 0) - _lam(c, _sx(x))) + _lam(c, _sx(x)) *
                                            sp.KroneckerDelta(_nx(x), _R)), (x, 1, _S)) / _lam(c, 0))
    throughput = sp.Eq(_theta(c), _lam(c, 0) * (1 - _loss(c)))
    cycle = sp.Eq(_Et0 + _Et12, 1 / _nu)
    ret = sp.Eq(_Et12, (_P(1) + _P(2)) / _nu)
    levels = lambda model: {n: range(model.R)}
    none = lambda model: {}
    un, eq = ", oracle chain L,H,R = 3,6,9, mu = (1, 2)", ", oracle chain L,H,R = 2,4,6, mu_1 = mu_2"
    steps = [
        Step("(H.1)", "The level cut of the chain on $(s, i, j, k)$: the flow up from $n$ equals the flow down from "
             "$n + 1$ ($P_k(k, n)$: $n$ in the system, flow $k$ in service)", cut, _CITE, provenance=_WHERE,
             check=relation_check(cut, _bindings("unequal", levels), describe=un)),
        Step("(H.2)", "The mean sojourn time of an admitted customer of flow $c$, by Little's law", little, _CITE,
             check=relation_check(little, _bindings("unequal", every_c), describe=un + " (tagged-customer sojourns)")),
        Step("(H.3)", r"Lumping: with $\mu_1 = \mu_2 = \mu$ the marginal law of (mode, $n$) satisfies the cut of "
             r"the one-flow chain with the total input rate $\Lambda_s = \lambda(1, s) + \lambda(2, s)$", lumped_cut,
             "", provenance="docs/theory/other-models.md section B",
             check=relation_check(lumped_cut, _bindings("equal", levels), describe=eq)),
        Step("(H.4)", "The lumped law for $L = 2$, $H = 4$, $R = 6$: the probability of state $i$ = (mode, $n$), in "
             "level order, is a ratio of polynomials $N_i$ in the rates, computed exactly and checked against "
             "global balance", law_rel, "", provenance="docs/theory/other-models.md section B",
             check=relation_check(law_rel, _lumped_law_bindings, describe=eq + " vs the polynomials N_i")),
    ]
    law = lumped_law()
    # the numerators N_i (pages of polynomials) are a result, not displays: (H.4) states their structure
    steps += [
        Step("(H.6)", "The loss of flow $c$: the throttled, discarded or blocked share of its offered (normal-mode) "
             "traffic, $s(x)$ and $n(x)$ being the mode and the count of the state $x$", loss, _CITE,
             check=relation_check(loss, _bindings("unequal", every_c), describe=un + " (loss as 1 - admitted/offered)")),
        Step("(H.7)", "The throughput of each flow equals its admitted rate", throughput, _CITE,
             check=relation_check(throughput, _bindings("unequal", every_c), describe=un)),
        Step("(H.8)", r"Cycle renewal: the normal time plus the return time is the inverse rate of the switches "
             r"from $\mathcal{S}_0$ to $\mathcal{S}_1$", cycle, "", provenance="docs/theory/other-models.md section B",
             check=relation_check(cycle, _bindings("unequal", none), describe=un + " (first passages)")),
        Step("(H.9)", "The return time by renewal reward", ret, "", provenance="docs/theory/other-models.md section B",
             check=relation_check(ret, _bindings("unequal", none), describe=un + " (first passage)")),
    ]
    cc = _cc
    numbers = sp.Eq(_N(c), sp.Sum(_q(x) * sp.Sum(_tau(x, cc) * _w(c, x, cc), (cc, 0, _R)), (x, 1, _S)) / _Cs)
    served = sp.Eq(_theta(c), sp.Sum(_q(x) * _sig(c, x), (x, 1, _S)) / _Cs)
    ge = ", --service exp (birth kernel, joint chain) vs the oracle chain, L,H,R = 2,4,6"
    steps += [
        Step("(G.1)", "A general service law: the mean number of flow-$c$ customers by renewal reward over the "
             "inter-departure intervals; $q(x)$ is the joint chain at departures on $(i, j, \\text{mode})$, "
             r"$\tau(x, c')$ the expected time at the count $c'$ (the birth kernel), and $w(c, x, c')$ the mean number "
             r"of flow-$c$ customers there: $i$ or $j$ plus $\sum_{m=n}^{c'-1} \lambda_c^{(\mathrm{mode}(m))} / "
             r"\lambda^{(\mathrm{mode}(m))}$ (the split is Poisson-binomial given the count path)",
             numbers, "[@pechinkin_sip]", provenance="seed 002, abstracts 5 and 7 (M2|D|1|R)",
             check=relation_check(numbers, _birth_bindings, describe=ge)),
        Step("(G.2)", "A general service law: the throughput of flow $c$ is the number of its departures per unit "
             r"time; $\sigma(c, x)$ is the probability that the service after $x$ is of flow $c$ (relative priority "
             "to flow 1; from the empty state, the first arrival)", served, "[@pechinkin_sip]",
             provenance="seed 002, abstracts 5 and 7",
             check=relation_check(served, _birth_bindings, describe=ge)),
    ]
    checks = (
        Check("lumped law satisfies global balance (exact)", _check_lumped_balance),
        Check("exponential service (birth kernel) = oracle chain, every measure", _check_birth_engine),
        Check("constant service: the joint chain lumps to the count chain", _check_birth_lumping),
        Check("engine = oracle chain, every measure (digits)", _check_engine_vs_oracle),
        Check("engine renewal: $E\\tau_0 + E\\tau_{12} = 1/\\nu$ (digits)", _check_renewal_engine),
        Check("float64 = mpmath for every measure", _check_float_vs_mp),
        Check("optimisation: thresholds = brute force over the oracle chain", _check_optimiser),
    )
    return Derivation(
        name="two-flow-hysteretic",
        title="$M_2/M/1/R$ with bi-level hysteretic input-rate control and relative priority to flow 1",
        source=_CITE, provenance=(_WHERE, __name__), steps=tuple(steps), checks=checks,
        results={"lumped_law": law, "lumped_numerators": [law.factored(i) for i in range(len(law.states))]},
        notes=("The state $(s, i, j, k)$ holds the mode, the numbers of flow-1 and flow-2 customers and the flow in "
               r"service. $\lambda(c, s)$ is the rate of flow $c$ in mode $s$ (0 normal, 1 overload, 2 discard); the "
               r"lumped law uses $\Lambda_s = \lambda(1, s) + \lambda(2, s)$ and holds when "
               r"$\mu_1 = \mu_2 = \mu$.",),
        recursions=())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(40) else 1)
