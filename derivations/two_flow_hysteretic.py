"""Two flows with bi-level hysteretic input-rate control, M2|M|1|R (seed 002): ``qderive eval two-flow-hysteretic``.

The model (our reading of seed 002, stated in full in :mod:`qderive.numeric.two_flow_hysteretic`):
two Poisson flows whose rates depend on the mode (normal, overload, discard: one rate pair
per mode, as in the M|M|1 hysteretic model of ``spec/other-models.md`` B), one exponential
server, capacity R, relative (non-preemptive) priority to flow 1, switching on the count
with thresholds L < H < R exactly as in B.

The derivation ``two-flow-hysteretic``: with mu_1 = mu_2 = mu the pair (mode, n) is Markov,
the chain of B with Lambda_s = lambda_1^(s) + lambda_2^(s) (lumping); its law for
L, H, R = 2, 4, 6 in closed form (rational functions of Lambda_0, Lambda_1, Lambda_2, mu);
the per-flow loss and Little; the cycle-time renewal identity. Checks compare the closed
form with the full (s, i, j, k) chain solved by GTH, first-passage times with the renewal
identities, and float64 with mpmath.

``python -m qderive.derivations.two_flow_hysteretic`` re-derives, verifies and prints.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass

import sympy as sp

from qderive.symbolic._exact import exact

from .cli_args import parse_number_list
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits

__all__ = ["COMMAND", "TwoFlowHystereticCommand", "lumped_law", "LumpedLaw", "build_derivation",
           "evaluate_measures", "MEASURE_KEYS"]

_CITE = "seed 002 (M2|M|1|R with bi-level hysteretic input control); spec/other-models.md sections B, C"

Lam0, Lam1, Lam2, mu = sp.symbols("Lambda_0 Lambda_1 Lambda_2 mu", positive=True)
_pi = sp.Function(r"\pi")

MEASURE_KEYS = (
    "p_mode0", "p_mode1", "p_mode2", "loss_flow1", "loss_flow2", "throughput_flow1", "throughput_flow2",
    "mean_number_flow1", "mean_number_flow2", "mean_sojourn_flow1", "mean_sojourn_flow2",
    "mean_normal_time", "mean_return_time", "mean_cycle_time",
)  # fmt: skip


def evaluate_measures(sol) -> dict:
    """JSON measures of a :class:`~qderive.numeric.two_flow_hysteretic.HystereticSolution` (backend numbers)."""
    with sol.bk:
        return {
            "p_mode0": sol.mode_probability(0),
            "p_mode1": sol.mode_probability(1),
            "p_mode2": sol.mode_probability(2),
            "loss_flow1": sol.loss(1),
            "loss_flow2": sol.loss(2),
            "throughput_flow1": sol.throughput(1),
            "throughput_flow2": sol.throughput(2),
            "mean_number_flow1": sol.mean_number(1),
            "mean_number_flow2": sol.mean_number(2),
            "mean_sojourn_flow1": sol.mean_sojourn(1),
            "mean_sojourn_flow2": sol.mean_sojourn(2),
            "mean_normal_time": sol.mean_normal_time(),
            "mean_return_time": sol.mean_return_time(),
            "mean_cycle_time": sol.mean_cycle_time(),
        }


# ---------------------------------------------------------------------------------------
# The lumped chain (mu_1 = mu_2) in closed form
# ---------------------------------------------------------------------------------------


def lumped_states(L: int, H: int, R: int) -> list[tuple[int, int]]:
    """(mode, n) of B: S0 = {(n, 0): n <= H-1}, S1 = {(n, 1): L <= n <= R-1}, S2 = {(n, 2): H+1 <= n <= R}."""
    return ([(0, n) for n in range(H)] + [(1, n) for n in range(L, R)] + [(2, n) for n in range(H + 1, R + 1)])


def lumped_transitions(L: int, H: int, R: int, lam, mu_):
    """Transitions ((s, n), (s', n'), rate) of B with input rates ``lam[s]`` and service rate ``mu_``.

    (H-1, 0) -> (H, 1) and (R-1, 1) -> (R, 2) on an arrival; (L, 1) -> (L-1, 0) and
    (H+1, 2) -> (H, 1) on a departure; arrivals in mode 2 (rate lam[2]) while n < R.
    """
    out = []
    for s, n in lumped_states(L, H, R):
        if n < R:
            up = 1 if (s == 0 and n + 1 == H) else 2 if (s == 1 and n + 1 == R) else s
            out.append(((s, n), (up, n + 1), lam[s]))
        if n > 0:
            down = 0 if (s == 1 and n - 1 == L - 1) else 1 if (s == 2 and n - 1 == H) else s
            out.append(((s, n), (down, n - 1), mu_))
    return out


@dataclass(frozen=True)
class LumpedLaw:
    """pi(s, n) = N_(s,n) / sum N of the lumped chain, polynomials in Lambda_0, Lambda_1, Lambda_2, mu."""

    thresholds: tuple
    states: tuple
    ring: object
    polys: tuple

    def at(self, values: dict) -> list:
        """The law at exact values ``{symbol: Rational}`` (exact rationals, in ``states`` order)."""
        from .two_flow import evaluate_polynomial_law

        return evaluate_polynomial_law(self.ring, self.polys, values)

    def factored(self, i: int) -> sp.Expr:
        """N_i with the rates and the exit-rate sums pulled out (exact trial division, deterministic)."""
        from .two_flow import split_factors

        R = self.ring
        lam = [R.from_expr(v) for v in (Lam0, Lam1, Lam2)]
        m = R.from_expr(mu)
        return split_factors(self.polys[i], list(R.gens) + [x + m for x in lam] + [sum(lam, R.zero)])


@functools.lru_cache(maxsize=4)
def lumped_law(L: int = 2, H: int = 4, R: int = 6) -> LumpedLaw:
    """The stationary law of B's chain with symbolic Lambda_0, Lambda_1, Lambda_2, mu (exact sparse GTH).

    Level order (n ascending, (0, 0) kept): :func:`qderive.derivations.two_flow.gth_exact`,
    then a common denominator. Small thresholds only (each mode is a geometric segment;
    the symbolic-threshold closed form belongs to the ``mm1-hysteretic`` derivation).
    """
    from sympy.polys.fields import field

    from .two_flow import common_denominator, gth_exact

    K, *_ = field([Lam0, Lam1, Lam2, mu], sp.QQ)
    states = sorted(lumped_states(L, H, R), key=lambda x: (x[1], x[0]))
    pos = {x: i for i, x in enumerate(states)}
    lam = [K.from_expr(v) for v in (Lam0, Lam1, Lam2)]
    trans = [(pos[a], pos[b], r) for a, b, r in lumped_transitions(L, H, R, lam, K.from_expr(mu))]
    nums = common_denominator(gth_exact(len(states), trans, K))
    return LumpedLaw((L, H, R), tuple(states), K.ring, tuple(nums))


# ---------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------

#: verification models: (rate pairs by mode, service rates, L, H, R)
_EQUAL_MU = (((sp.Rational(3, 5), sp.Rational(2, 5)), (sp.Rational(3, 10), sp.Rational(1, 5)),
              (sp.Rational(1, 10), 0)), (1, 1), 2, 4, 6)
_UNEQUAL_MU = (((sp.Rational(3, 2), 1), (sp.Rational(1, 2), sp.Rational(1, 2)), (sp.Rational(1, 4), 0)),
               (1, 2), 3, 6, 9)


def _model(spec):
    from qderive.numeric.two_flow_hysteretic import TwoFlowHystereticModel

    rates, mus, L, H, R = spec
    return TwoFlowHystereticModel(rates, mus, L, H, R)


def _check_lumped_balance(digits):
    law = lumped_law()
    L, H, R = law.thresholds
    Rg = law.ring
    pos = {x: i for i, x in enumerate(law.states)}
    out = [Rg.zero] * len(law.states)
    inflow = [Rg.zero] * len(law.states)
    lam = [Rg.from_expr(v) for v in (Lam0, Lam1, Lam2)]
    for a, b, r in lumped_transitions(L, H, R, lam, Rg.from_expr(mu)):
        out[pos[a]] += r
        inflow[pos[b]] += law.polys[pos[a]] * r
    ok = all(inflow[i] == law.polys[i] * out[i] for i in range(len(law.states)))
    return ok, None, f"global balance of the lumped chain as polynomial identities, {len(law.states)} states"


def _check_lumping(digits):
    from qderive.numeric.backend import mp_backend
    from qderive.numeric.two_flow_hysteretic import solve_hysteretic

    model = _model(_EQUAL_MU)
    bk = mp_backend(digits + 10)
    sol = solve_hysteretic(model, bk)
    law = lumped_law(model.low, model.high, model.capacity)
    vals = {Lam0: sum(model.rates[0]), Lam1: sum(model.rates[1]), Lam2: sum(model.rates[2]),
            mu: model.service_rates[0]}
    exact_vals = law.at(vals)
    agree = []
    with bk:
        for (s, n), p in zip(law.states, exact_vals):
            mask = [(st[0] == s and st[1] + st[2] == n) for st in sol.space.states]
            agree.append(agreement_digits(sol._sum(mask), bk.num(p)))
    a = min(agree)
    return a >= digits, min(a, digits), "(mode, n) marginal of the (s, i, j, k) chain (GTH) = closed-form lumped law"


def _cycle_check(digits, what):
    from qderive.numeric.backend import mp_backend
    from qderive.numeric.two_flow_hysteretic import solve_hysteretic

    agree = []
    for spec in (_EQUAL_MU, _UNEQUAL_MU):
        bk = mp_backend(digits + 10)
        sol = solve_hysteretic(_model(spec), bk)
        with bk:
            nu = sol.switch_rate()
            if what == "cycle":
                agree.append(agreement_digits(sol.mean_cycle_time(), 1 / nu))
            elif what == "return":
                agree.append(agreement_digits(sol.mean_return_time(), (sol.mode_probability(1) +
                                                                       sol.mode_probability(2)) / nu))
            elif what == "throughput":
                agree += [agreement_digits(sol.throughput(c), sol.admitted_rate(c)) for c in (1, 2)]
            elif what == "loss":
                agree += [agreement_digits(sol.loss(c), 1 - sol.admitted_rate(c) / bk.num(sol.model.rate(0, c)))
                          for c in (1, 2)]
    return min(agree)


def _check(what, detail):
    def run(digits):
        a = _cycle_check(digits, what)
        return a >= digits - 2, min(a, digits), detail
    return run


def _check_float_vs_mp(digits):
    from qderive.numeric.backend import FLOAT64, mp_backend
    from qderive.numeric.two_flow_hysteretic import solve_hysteretic

    agree = []
    for spec in (_EQUAL_MU, _UNEQUAL_MU):
        a = evaluate_measures(solve_hysteretic(_model(spec), FLOAT64))
        b = evaluate_measures(solve_hysteretic(_model(spec), mp_backend(digits + 10)))
        agree += [agreement_digits(a[k], b[k]) for k in MEASURE_KEYS]
    a = min(agree)
    return a >= 12, a, "float64 vs mpmath, every measure, two models"


@functools.lru_cache(maxsize=1)
def build_derivation() -> Derivation:
    """The ``two-flow-hysteretic`` derivation."""
    s, n, c = sp.symbols("s n c", integer=True)
    i, j, k = sp.symbols("i j k", integer=True)
    q = sp.Function("q")
    lam_c = sp.Function(r"\lambda_c")
    lam_1, lam_2 = sp.Function(r"\lambda_1"), sp.Function(r"\lambda_2")
    Lam = sp.Function(r"\Lambda")
    P, loss, theta = sp.Function("P"), sp.Function(r"\ell"), sp.Function(r"\theta")
    nu = sp.Symbol(r"\nu")
    Et0, Et12 = sp.Symbol(r"E\tau_0"), sp.Symbol(r"E\tau_{12}")
    one_R = sp.Symbol(r"1_{\{n=R\}}")
    steps = [
        Step("(H.1)", "arrival of flow c in mode s (n < R); the mode switches as in B",
             sp.Eq(q(sp.Tuple(s, i, j, k), sp.Tuple(sp.Symbol("s'"), i + 1, j, k)), lam_1(s)), _CITE),
        Step("(H.2)", "departure of the customer in service (flow k); next: flow 1 if any waits (relative priority)",
             sp.Eq(q(sp.Tuple(s, i, j, 1), sp.Tuple(sp.Symbol("s'"), i - 1, j, sp.Symbol("k'"))),
                   sp.Symbol(r"\mu_1")), _CITE),
        Step("(H.3)", "lumping: with mu_1 = mu_2 = mu, (mode, n) is B's chain with the total input rate",
             sp.Eq(Lam(s), lam_1(s) + lam_2(s)), _CITE),
        Step("(H.4)", "level cut of the lumped chain: flow up = flow down between n and n + 1",
             sp.Eq(sp.Sum(_pi(s, n) * Lam(s), (s, 0, 2)), mu * sp.Sum(_pi(s, n + 1), (s, 0, 2))),
             "spec/other-models.md section B"),
    ]
    law = lumped_law()
    Ns = sp.Symbol("N")
    for idx, (st, nn) in enumerate(law.states):
        steps.append(Step(f"(H.5.{idx + 1})", f"lumped law, L,H,R = {law.thresholds}: mode {st}, n = {nn}",
                          sp.Eq(_pi(st, nn), law.factored(idx) / Ns), "spec/other-models.md section B"))
    steps.append(Step("(H.5.N)", "the normaliser", sp.Eq(Ns, sp.Add(*[sp.Symbol(f"N_{{{x + 1}}}")
                                                                     for x in range(len(law.states))])), ""))
    steps += [
        Step("(H.6)", "loss of flow c: throttled, discarded or blocked share of its offered (normal-mode) traffic",
             sp.Eq(loss(c), sp.Sum(_pi(sp.Symbol("x")) * ((lam_c(0) - lam_c(s)) + lam_c(s) * one_R),
                                   (sp.Symbol("x"), sp.Symbol("S_0"), sp.Symbol("S_2"))) / lam_c(0)), _CITE),
        Step("(H.7)", "throughput per flow = admitted rate (check); mean sojourn by Little",
             sp.Eq(theta(c), lam_c(0) * (1 - loss(c))), _CITE),
        Step("(H.8)", "cycle renewal: normal time + return time = 1 / (rate of S0 -> S1 switches)",
             sp.Eq(Et0 + Et12, 1 / nu), "spec/other-models.md section B"),
        Step("(H.9)", "return time by renewal-reward (checked against the first-passage value)",
             sp.Eq(Et12, (P(1) + P(2)) / nu), "spec/other-models.md section B"),
    ]
    checks = (
        Check("lumped law satisfies global balance (exact)", _check_lumped_balance),
        Check("lumping: full chain marginal = closed-form lumped law (digits)", _check_lumping),
        Check("renewal: E tau_0 + E tau_12 = 1 / nu, first passages (digits)",
              _check("cycle", "first-passage E tau_0 + E tau_12 vs 1 / nu, two models")),
        Check("return time: first passage = (P1 + P2) / nu (digits)",
              _check("return", "first-passage E tau_12 vs renewal-reward, two models")),
        Check("throughput = admitted rate per flow (digits)",
              _check("throughput", "mu_c P(c in service) vs sum pi lambda_c^(s) 1{n<R}, two models")),
        Check("loss (positive terms) = 1 - admitted / offered (digits)",
              _check("loss", "positive-term loss vs the subtraction form at high precision, two models")),
        Check("float64 = mpmath for every measure", _check_float_vs_mp),
    )
    return Derivation(
        name="two-flow-hysteretic",
        title="M2|M|1|R with bi-level hysteretic input-rate control and relative priority to flow 1",
        source=_CITE,
        steps=tuple(steps),
        checks=checks,
        results={"lumped_law": law},
        notes=("State (s, i, j, k): mode, numbers of flow-1 and flow-2 customers, flow in service. "
               "lambda_c(s) is the rate of flow c in mode s (0 normal, 1 overload, 2 discard); the lumped law "
               "uses Lambda_s = lambda_1(s) + lambda_2(s) and holds when mu_1 = mu_2 = mu.",),
    )


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------


class TwoFlowHystereticCommand(ModelCommand):
    """``qderive eval two-flow-hysteretic``."""

    name = "two-flow-hysteretic"
    summary = "M2|M|1|R, two flows with hysteretic input-rate control and priority to flow 1 (seed 002)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rates-normal", required=True, metavar="L1,L2",
                            help="rates of flows 1 and 2 in normal mode (the offered traffic)")
        parser.add_argument("--rates-overload", required=True, metavar="L1,L2",
                            help="reduced rates in overload mode (<= normal)")
        parser.add_argument("--rates-discard", default="0,0", metavar="L1,L2",
                            help="rates in discard mode (<= overload; default 0,0)")
        parser.add_argument("--service-rate", required=True, metavar="MU[,MU2]",
                            help="exponential service rate (one for both flows, or MU1,MU2)")
        parser.add_argument("--thresholds", required=True, metavar="L,H,R", help="1 <= L < H < R, R = capacity")

    def build(self, args):
        from qderive.numeric.two_flow_hysteretic import TwoFlowHystereticModel
        from qderive.symbolic._exact import ParameterError

        pairs = tuple(tuple(parse_number_list(getattr(args, f"rates_{m}"), f"--rates-{m}", count=2))
                      for m in ("normal", "overload", "discard"))
        mus = parse_number_list(args.service_rate, "--service-rate")
        if len(mus) not in (1, 2):
            raise ParameterError(f"--service-rate = {args.service_rate!r}: give MU or MU1,MU2")
        thr = parse_number_list(args.thresholds, "--thresholds", count=3)
        if not all(v.is_Integer for v in thr):
            raise ParameterError(f"--thresholds = {args.thresholds!r}: L, H, R must be integers")
        return TwoFlowHystereticModel(pairs, tuple(mus) if len(mus) == 2 else mus[0], *map(int, thr))

    def evaluate(self, model, digits, args) -> Evaluation:
        from qderive.numeric.backend import FLOAT64, mp_backend
        from qderive.numeric.two_flow_hysteretic import solve_hysteretic

        bk = FLOAT64 if digits is None else mp_backend(digits + 10)
        sol = solve_hysteretic(model, bk)
        params = dict(model.parameters())
        params["states"] = sol.space.size
        return Evaluation(self.name, params, evaluate_measures(sol))

    def derivation(self):
        return build_derivation()


COMMAND = TwoFlowHystereticCommand()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if build_derivation().report(40) else 1)
