"""Derivation ``two-flow``: the INVITE / non-INVITE threshold model (seed 001, ``docs/theory/other-models.md`` C).

The model is :class:`~qderive.symbolic.models.two_flow.TwoFlowModel`; its engine
(:mod:`qderive.numeric.engines.two_flow`) solves the chain on (mode, class sequence).
This derivation shows

* the relations the engine evaluates -- global balance (C.1), throughput (C.2), rejection
  by PASTA (C.3), flow conservation and Little (C.4), renewal-reward for the return time
  (C.5) -- each typeset in index form and **evaluated as displayed** by ``qderive verify``
  with the numbers of the oracle chain (:mod:`qderive.numeric.oracles.two_flow`: built from
  the definition on plain tuples; its sojourn is a tagged-customer first passage, its
  return time a first passage, so (C.4) and (C.5) are real checks);
* the stationary law of the smallest chain L = 1, H = 2 (R = 3; 21 states) in closed form,
  a ratio of polynomials in the six rates for both algorithms (``computed``: the one GTH
  of :mod:`qderive.numeric.kernels.chains` run over the field Q(lambda, mu, mu') by
  :class:`FieldContext`), with the displayed ratio checked against the exact rational
  solve of the oracle chain.

``python -m qderive.derivations.two_flow`` re-derives, verifies and prints.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from ..numeric.backend import FieldContext
from ..symbolic.capabilities import declare
from ..symbolic.models.two_flow import Algorithm, Mode, TwoFlowModel
from ..symbolic.numbers import to_sympy
from .framework import Check, Derivation, Step, agreement_digits, relation_check

__all__ = ["RATE_SYMBOLS", "CHECK_RATES", "SymbolicLaw", "stationary_law", "common_denominator",
           "split_factors", "evaluate_polynomial_law", "symbolic_stationary", "derivation", "check_model"]

_CITE = "[@sipoverload2flow]"
_WHERE = "docs/theory/other-models.md section C (seed 001)"


class _PrimedRate(sp.Symbol):
    """mu'_c, the overload service rate: a Symbol whose LaTeX is braced, so that powers stay valid TeX."""

    def _latex(self, printer):
        return "{\\mu'_{%s}}" % self.name.rsplit("_", 1)[-1]


lam1, lam2, mu1, mu2 = sp.symbols("lambda_1 lambda_2 mu_1 mu_2", positive=True)
mup1, mup2 = _PrimedRate("muprime_1", positive=True), _PrimedRate("muprime_2", positive=True)
#: the rates in the engine's RateKind order (lambda_1, lambda_2, mu_1, mu_2, mu'_1, mu'_2)
RATE_SYMBOLS = (lam1, lam2, mu1, mu2, mup1, mup2)
#: verification point: INVITE five times the work, overload service a little faster
CHECK_RATES = (Fraction(3, 5), Fraction(2), Fraction(1), Fraction(5), Fraction(3, 2), Fraction(6))
_pi = sp.Function(r"\pi")


def check_model(L: int, H: int, R: int, algorithm: Algorithm, rates=CHECK_RATES) -> TwoFlowModel:
    """The model at the verification rates."""
    return TwoFlowModel(rates[0], rates[1], rates[2], rates[3], L, H, R, algorithm, rates[4], rates[5])


# --------------------------------------------------------------------------------------
# The one GTH over a field of rational functions
# --------------------------------------------------------------------------------------


def common_denominator(ratios) -> list:
    """Field elements r_s -> polynomials N_s with r_s = N_s / D (one D, the gcd of the N_s removed)."""
    den = functools.reduce(lambda a, b: a if a == b else a.lcm(b), [p.denom for p in ratios])
    nums = [p.numer * den.exquo(p.denom) for p in ratios]
    g = functools.reduce(lambda a, b: a.gcd(b), nums)
    return [x.exquo(g) for x in nums]


def split_factors(poly, candidates) -> sp.Expr:
    """``poly`` as (product of candidate factors ** multiplicity) * cofactor, by exact trial division.

    The candidates are the rates and the exit-rate sums of the states (the pivots of the
    elimination, so the usual factors of a stationary law): deterministic and fast, unlike a
    general multivariate factorisation. The cofactor is returned expanded.
    """
    factors, seen = [], set()
    for c in candidates:
        if c.is_ground or c in seen:
            continue
        seen.add(c)
        e = 0
        while True:
            q, r = poly.div(c)
            if r:
                break
            poly, e = q, e + 1
        if e:
            factors.append(c.as_expr() ** e)
    return sp.Mul(*factors, poly.as_expr())


def evaluate_polynomial_law(ring, polys, values: dict) -> list:
    """pi_i = N_i / sum_j N_j with every N_i evaluated exactly at ``{symbol: rational}`` (Fractions)."""
    dom = ring.domain
    point = [(g, dom.from_sympy(sp.Rational(values[g.as_expr()]))) for g in ring.gens]
    nums = [Fraction(str(dom.to_sympy(p.evaluate(point)))) for p in polys]
    total = sum(nums)
    return [x / total for x in nums]


@dataclass(frozen=True)
class SymbolicLaw:
    """pi(s) = N_s / sum_t N_t with polynomials N_s in the rates; ``space`` the engine's state space."""

    space: object
    ring: object
    polys: tuple

    def factored(self, i: int) -> sp.Expr:
        """N_i with the rates and the states' exit-rate sums pulled out as factors."""
        sp_ = self.space
        r = [self.ring.from_expr(x) for x in RATE_SYMBOLS]
        out = [self.ring.zero] * sp_.size
        for s, k in zip(sp_.src.tolist(), sp_.kind.tolist()):
            out[s] += r[k]
        return split_factors(self.polys[i], list(self.ring.gens) + out)

    def at(self, rates=CHECK_RATES) -> list:
        """The law at exact rates (RateKind order): Fractions in state order."""
        return evaluate_polynomial_law(self.ring, self.polys, dict(zip(RATE_SYMBOLS, rates)))


def symbolic_stationary(n: int, transitions, symbols: tuple, scale, key: str):
    """Stationary law N_s / sum N of a CTMC with rates linear in ``symbols``: (ring, polynomials N_s).

    ``transitions``: (i, j, rate) with rate a SymPy sum of symbols (homogeneous of degree 1), state 0
    first. pi is homogeneous of degree 0 in the rates, so the one GTH
    (:func:`~qderive.numeric.kernels.chains.gth_stationary`) runs in :class:`FieldContext` over Q(symbols
    without ``scale``) with ``scale`` = 1 (one variable fewer: about half the time), the result is put over
    one denominator, gcd removed, and every N_s is rehomogenised with powers of ``scale`` to the common
    total degree (exact: with the gcd removed the N_s are homogeneous of one degree). The polynomials are
    kept in the qderive cache under ``key`` (the FIFO law of L, H = 1, 2 takes seconds to derive).
    """
    from sympy.polys.fields import field
    from sympy.polys.rings import ring

    from ..numeric.kernels.chains import gth_stationary
    from ..symbolic.cache import cached

    symbols = tuple(symbols)
    at = symbols.index(scale)

    def derive():
        rest = [x for x in symbols if x is not scale]
        K, *_ = field(rest, sp.QQ)
        ctx = FieldContext(K)
        A = ctx.zeros((n, n))
        for i, j, rate in transitions:
            A[i, j] = A[i, j] + K.from_expr(to_sympy(rate).subs(scale, 1))
        nums = common_denominator(list(gth_stationary(ctx, A)))
        degree = max(sum(m) for p in nums for m in p.monoms())
        return [[(m[:at] + (degree - sum(m),) + m[at:], int(c.numerator), int(c.denominator)) for m, c in p.terms()]
                for p in nums]

    R, *_ = ring(list(symbols), sp.QQ)
    terms = cached(f"qderive.derivations.two_flow.symbolic_stationary::{key}", derive)
    return R, tuple(R.from_dict({m: sp.QQ(p, q) for m, p, q in poly}) for poly in terms)


@functools.lru_cache(maxsize=4)
def stationary_law(low: int = 1, high: int = 2, algorithm: Algorithm = Algorithm.FIFO) -> SymbolicLaw:
    """The law of the seed-001 chain with L = ``low``, H = ``high``, R = H + 1 over Q(lambda, mu, mu').

    Global balance (C.1) solved by the one GTH over the field of rational functions of the rates
    (:func:`symbolic_stationary`), states in the engine's level order. Cost with six symbols:
    L, H = 1, 2 (21 states) a few seconds for FIFO, faster for priority; H = 3 (40-45 states) takes
    minutes for FIFO, so only H <= 3 is accepted.
    """
    from ..numeric.engines.two_flow import state_space

    if not (1 <= low < high <= 3):
        from ..symbolic.errors import ParameterError

        raise ParameterError("H", f"the symbolic law needs 1 <= L < H <= 3 (L = {low})", high)
    space = state_space(low, high, high + 1, algorithm)
    transitions = [(s, d, RATE_SYMBOLS[k]) for s, d, k in zip(space.src.tolist(), space.dst.tolist(),
                                                                space.kind.tolist())]
    R, polys = symbolic_stationary(space.size, transitions, RATE_SYMBOLS, mu1,
                                   f"two-flow:{low},{high},{algorithm.value}")
    return SymbolicLaw(space, R, polys)


# --------------------------------------------------------------------------------------
# Bindings from the oracle chain
# --------------------------------------------------------------------------------------

#: the model whose oracle chain the relation hooks evaluate (R = H + 1: every mode reachable, R binds)
_HOOK = (2, 4, 5, Algorithm.PRIORITY)


@functools.lru_cache(maxsize=4)
def _oracle(digits: int):
    """The oracle chain of the hook model at ``digits`` + 10 digits: chain, pi, and every measure."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.two_flow import two_flow_chain, two_flow_measures

    model = check_model(*_HOOK)
    ctx = mp_context(digits + 10)
    chain = two_flow_chain(model)
    with ctx:
        pi = list(chain.stationary(ctx))
    return model, chain, pi, two_flow_measures(model, ctx)


def _balance_bindings(digits):
    _, chain, pi, _ = _oracle(digits)
    out_rate = [0] * chain.size
    for (i, _j), r in chain.rates.items():
        out_rate[i] += r

    def q(*args):
        return out_rate[args[0] - 1] if len(args) == 1 else chain.rates.get((args[0] - 1, args[1] - 1), 0)

    x = sp.Symbol("x")
    return {_pi: lambda i: pi[i - 1], sp.Function("q"): q, sp.Symbol("|S|"): chain.size}, {x: range(1, chain.size + 1)}


def _state_probability(digits, select):
    _, chain, pi, _ = _oracle(digits)
    return sum((p for s, p in zip(chain.states, pi) if select(s)), 0 * pi[0])


def _key(c: int) -> str:
    return "invite" if c == 1 else "non_invite"


_c = sp.Symbol("c", integer=True, positive=True)
_theta, _B, _T, _N, _P = (sp.Function(r"\theta"), sp.Function("B"), sp.Function("T"), sp.Function("N"),
                          sp.Function("P"))
_P0, _Pover = sp.Function("P_0"), sp.Function(r"P_{>0}")
_mu, _mup, _lam = sp.IndexedBase(r"\mu"), sp.IndexedBase(r"\mu'"), sp.IndexedBase(r"\lambda")
_nu, _Etau = sp.Symbol(r"\nu"), sp.Symbol(r"E\tau_{12}")


def _measure_bindings(digits):
    model, chain, pi, m = _oracle(digits)
    env = {
        _theta: lambda c: m[f"throughput_{_key(c)}"],
        _B: lambda c: m[f"rejection_{_key(c)}"],
        _T: lambda c: m[f"mean_sojourn_{_key(c)}"],
        _N: lambda c: m[f"mean_number_{_key(c)}"],
        _P: lambda mode: m[f"p_mode{mode}"],
        _P0: lambda c: _state_probability(digits, lambda s: s[0] == Mode.NORMAL and s[1] and s[1][0][0] == c),
        _Pover: lambda c: _state_probability(digits, lambda s: s[0] != Mode.NORMAL and s[1] and s[1][0][0] == c),
        _mu: {1: model.mu_invite, 2: model.mu_non_invite},
        _mup: {1: model.mu_overload_invite, 2: model.mu_overload_non_invite},
        _lam: {1: model.lambda_invite, 2: model.lambda_non_invite},
        _Etau: m["mean_return_time"],
        _nu: sum((pi[i] * r for (i, j), r in chain.rates.items()
                  if chain.states[i][0] == Mode.NORMAL and chain.states[j][0] != Mode.NORMAL), 0 * pi[0]),
    }
    return env, {_c: (1, 2)}


def _law_bindings(alg):
    def bindings(digits):
        from ..numeric.oracles.two_flow import two_flow_chain

        law = stationary_law(1, 2, alg)
        model = check_model(1, 2, 3, alg)
        chain = two_flow_chain(model)
        exact = chain.stationary_exact()
        pos = {(s[0], tuple(c for c, _ in s[1])): a for a, s in enumerate(chain.states)}
        sp_ = law.space
        pi = [exact[pos[(int(sp_.mode[i]), sp_.sequence(i))]] for i in range(sp_.size)]
        ring, point = law.ring, dict(zip(RATE_SYMBOLS, CHECK_RATES))
        dom = ring.domain
        vals = [(g, dom.from_sympy(sp.Rational(point[g.as_expr()]))) for g in ring.gens]
        N = {i + 1: Fraction(str(dom.to_sympy(p.evaluate(vals)))) for i, p in enumerate(law.polys)}
        i = sp.Symbol("i", integer=True, positive=True)
        return {_pi: lambda k: pi[k - 1], sp.IndexedBase("N"): N, sp.Symbol("|S|"): sp_.size}, {i: range(1, sp_.size + 1)}

    return bindings


# --------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------


def _check_balance_exact(alg):
    def run(digits):
        law = stationary_law(1, 2, alg)
        sp_, R = law.space, law.ring
        r = [R.from_expr(x) for x in RATE_SYMBOLS]
        out, inflow = [R.zero] * sp_.size, [R.zero] * sp_.size
        for s, d, k in zip(sp_.src.tolist(), sp_.dst.tolist(), sp_.kind.tolist()):
            out[s] += r[k]
            inflow[d] += law.polys[s] * r[k]
        bad = [i for i in range(sp_.size) if inflow[i] != law.polys[i] * out[i]]
        return (not bad, None, f"N_s q(s) = sum_t N_t q(t, s) as polynomials for all {sp_.size} states"
                + (f"; fails at {bad[:3]}" if bad else ""))
    return run


def _check_accepted_equals_throughput_exact(alg):
    def run(digits):
        from ..numeric.engines.two_flow import RateKind

        law = stationary_law(1, 2, alg)
        sp_, R = law.space, law.ring
        r = [R.from_expr(x) for x in RATE_SYMBOLS]
        ok = True
        for c in (1, 2):
            accepting = sp_.accepts(c)
            accepted = r[c - 1] * sum((law.polys[i] for i in range(sp_.size) if accepting[i]), R.zero)
            served = R.zero
            for i in range(sp_.size):
                if sp_.in_service[i] == c:
                    base = RateKind.SERVICE_1 if sp_.mode[i] == Mode.NORMAL else RateKind.OVERLOAD_SERVICE_1
                    served += r[base + c - 1] * law.polys[i]
            ok &= accepted == served
        return ok, None, "lambda_c sum_{accepting} N_s = sum_{c in service} mu_c(mode) N_s, c = 1, 2 (polynomials)"
    return run


_ENGINE_CASES = ((2, 4, 5), (1, 3, 7), (2, 4, 3))


def _check_engine_vs_oracle(digits):
    from ..numeric.backend import mp_context
    from ..numeric.oracles.two_flow import two_flow_measures

    worst = float("inf")
    for alg in Algorithm:
        for L, H, R in _ENGINE_CASES:
            model = check_model(L, H, R, alg)
            got = model.evaluate(digits).as_dict()
            ref = two_flow_measures(model, mp_context(digits + 10))
            for key, value in got.items():
                if key == "states" and alg is Algorithm.FIFO:  # the engine's FIFO chain is the segment chain
                    continue
                if ref[key] is None or value is None:
                    if (ref[key] is None) != (value is None):
                        return False, None, f"{key}: one side is null ({alg.value}, {L},{H},{R})"
                    continue
                worst = min(worst, agreement_digits(value, ref[key]) if ref[key] != 0 or value != 0 else float("inf"))
    return worst >= digits - 2, min(worst, digits), (f"engine at {digits} digits vs the oracle chain (tagged-customer "
                                                     "sojourns, first-passage return time), every measure, both "
                                                     "algorithms (FIFO: the engine's segment chain), L,H,R = "
                                                     "2,4,5 / 1,3,7 / 2,4,3")


def _check_equal_service_totals(digits):
    """Equal service rates per mode: the (mode, n) process and the totals do not depend on the algorithm."""
    rates = (Fraction(3, 5), Fraction(2), Fraction(2), Fraction(2), Fraction(5, 2), Fraction(5, 2))
    a, b = (check_model(2, 4, 5, alg, rates).evaluate(digits).as_dict() for alg in Algorithm)
    keys = ("p_mode0", "p_mode1", "p_mode2", "mean_number", "mean_return_time")
    agree = [agreement_digits(a[k], b[k]) for k in keys]
    agree.append(agreement_digits(a["throughput_invite"] + a["throughput_non_invite"],
                                  b["throughput_invite"] + b["throughput_non_invite"]))
    w = min(agree)
    return w >= digits - 2, min(w, digits), "mode probabilities, N, total throughput, return time: FIFO = priority"


def _check_return_time_renewal(digits):
    from ..numeric.backend import mp_context
    from ..numeric.engines.two_flow import solve

    agree = []
    for alg in Algorithm:
        ctx = mp_context(digits + 10)
        with ctx:
            sol = solve(check_model(2, 4, 5, alg), ctx)
            agree.append(agreement_digits(sol.mean_return_time(), sol.renewal_return_time()))
    w = min(agree)
    return w >= digits, min(w, digits), "engine: first-passage return time (M-matrix solve) = (P1 + P2) / nu"


def _check_sparse_vs_gth(digits):
    from ..numeric.engines.two_flow import solve
    from ..symbolic.models.two_flow import Solver

    agree = []
    for alg in Algorithm:
        model = check_model(3, 7, 10, alg)
        a, b = (solve(model, solver=s).measures() for s in (Solver.SPARSE, Solver.GTH))
        agree += [agreement_digits(a[k], b[k]) for k in a if a[k] is not None]
    w = min(agree)
    return w >= 10, w, "float64: sparse level solver vs dense GTH, every measure, L,H,R = 3,7,10"


# --------------------------------------------------------------------------------------
# The derivation
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
@declare(independent={
    **{name: "the relations are in index form for every rate and threshold (the closed form at L, H, R = 1, 2, 3)"
       for name in ("lambda_invite", "lambda_non_invite", "mu_invite", "mu_non_invite", "L", "H", "R",
                    "mu_overload_invite", "mu_overload_non_invite")},
    "algorithm": "both algorithms are derived",
    "solver": "it chooses the engine's linear solver, not part of the relations"})
def derivation() -> Derivation:
    """The ``two-flow`` derivation (module docstring)."""
    from ..symbolic.cache import cached

    x, y = sp.symbols("x y")
    q, S = sp.Function("q"), sp.Symbol("|S|")
    c = _c
    hook = "L,H,R = 2,4,5, algorithm 2, at the check rates"
    steps = [
        Step("(C.1)", "The global balance of the chain on the states $x$ = (mode, class sequence), $q(x)$ being the "
             "total rate out of $x$",
             sp.Eq(_pi(x) * q(x), sp.Sum(_pi(y) * q(y, x), (y, 1, S))), _CITE,
             check=relation_check(sp.Eq(_pi(x) * q(x), sp.Sum(_pi(y) * q(y, x), (y, 1, S))), _balance_bindings,
                                  describe=f", oracle chain {hook}")),
        Step("(C.2)", "The throughput of class $c$: the service rate of the message in service follows the mode",
             sp.Eq(_theta(c), _mu[c] * _P0(c) + _mup[c] * _Pover(c)), _CITE),
        Step("(C.3)", "The rejection (503) probabilities by PASTA for $R = H + 1$: an INVITE is refused in modes 1 "
             "and 2, a non-INVITE in mode 2 (for $R \\le H$, $B_1 = B_2 = \\Pr(n = R)$)",
             sp.And(sp.Eq(_B(1), _P(1) + _P(2)), sp.Eq(_B(2), _P(2))), _CITE),
        Step("(C.4)", "The accepted rate equals the throughput (flow conservation); the mean sojourn time follows "
             "by Little's law with the accepted rate",
             sp.And(sp.Eq(_lam[c] * (1 - _B(c)), _theta(c)), sp.Eq(_T(c), _N(c) / (_lam[c] * (1 - _B(c))))), _CITE),
        Step("(C.5)", r"The mean return time to mode 0 by renewal reward, $\nu$ being the rate of the switches "
             "from mode 0 to mode 2 (computed as a first passage time)", sp.Eq(_Etau, (_P(1) + _P(2)) / _nu), _CITE),
    ]
    steps = [steps[0]] + [Step(s.label, s.title, s.relation, s.citation,
                               check=relation_check(s.relation, _measure_bindings, describe=f", oracle chain {hook}"))
                          for s in steps[1:]]
    results = {}
    idx, j = sp.Symbol("i", integer=True, positive=True), sp.Symbol("j", integer=True, positive=True)
    for alg, tag in ((Algorithm.FIFO, "F"), (Algorithm.PRIORITY, "P")):
        law = stationary_law(1, 2, alg)
        number = 1 if tag == "F" else 2
        Nb = sp.IndexedBase("N")
        rel = sp.Eq(_pi(idx), Nb[idx] / sp.Sum(Nb[j], (j, 1, S)))
        steps.append(Step(f"({tag}.0)", f"Algorithm {number} with $L = 1$, $H = 2$, $R = 3$: the probability of "
                          "state $i$ = (mode, sequence) is a ratio of polynomials $N_i$ in the rates, computed "
                          "exactly and checked against global balance", rel, _CITE, provenance=_WHERE,
                          check=relation_check(rel, _law_bindings(alg), describe=", exact oracle chain at the check "
                                               "rates vs the polynomials N_i evaluated there")))
        # the factored numerators are derived once per package source (trial divisions, ~0.5 s) and kept
        factored = cached(f"qderive.derivations.two_flow.factored::{alg.value}",
                          lambda: [law.factored(i) for i in range(law.space.size)])
        # the numerators N_i themselves (pages of polynomials) are results, not displays: the paper states
        # their structure (F.0), (P.0); the exact checks verify them
        results[f"law_{alg.value}"] = law
        results[f"numerators_{alg.value}"] = factored
    checks = []
    for alg in Algorithm:
        checks += [
            Check(f"{alg.value}: symbolic law satisfies global balance (exact)", _check_balance_exact(alg)),
            Check(f"{alg.value}: accepted rate = throughput per class (exact, polynomials)",
                  _check_accepted_equals_throughput_exact(alg)),
        ]
    checks += [
        Check("engine = oracle chain, every measure (digits)", _check_engine_vs_oracle),
        Check("equal service rates: FIFO and priority totals agree (digits)", _check_equal_service_totals),
        Check("engine return time: first passage = renewal (digits)", _check_return_time_renewal),
        Check("float64 sparse solver = dense GTH, $(L, H, R) = (3, 7, 10)$", _check_sparse_vs_gth),
    ]
    notes = ("The state is (mode, class sequence), the first message being in service: first-in first-out service "
             "with class-dependent rates needs the order. The laws below are for the smallest thresholds $L = 1$, "
             "$H = 2$, $R = 3$, algorithm 1 (labels F) and algorithm 2 (labels P); the states are numbered $1, \\dots, |S|$ in "
             "level order. The arrival rates are $\\lambda_c$, the service rates $\\mu_c$ in mode 0 and $\\mu'_c$ "
             "in modes 1 and 2; class 1 is INVITE, class 2 non-INVITE. $P_0(c)$ and $P_{>0}(c)$ are the "
             "probabilities that a message of class $c$ is in service in mode 0 and in modes 1 or 2.",)
    return Derivation(
        name="two-flow",
        title="Two message classes (INVITE and non-INVITE) with threshold overload control, first-in first-out "
              "and priority service",
        source=_CITE, provenance=(_WHERE, __name__),
        steps=tuple(steps), checks=tuple(checks), results=results, notes=notes, recursions=())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(40) else 1)
