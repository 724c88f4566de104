"""Two message classes (INVITE / non-INVITE) with threshold overload control: ``qderive eval two-flow``.

``spec/other-models.md`` section C, seed 001 (``../shared/seeds/001_*.txt``): a SIP proxy
receives INVITE (class 1) and non-INVITE (class 2) messages; under overload it first
rejects everything (mode 2, more than H messages), then only INVITE (mode 1) until the
count drops below L. Algorithm 1 serves FIFO always; algorithm 2 serves non-INVITE first
(non-preemptive) while overloaded. The chain, its solvers and the measures live in
:mod:`qderive.numeric.two_flow`; this module holds

* :data:`COMMAND` for ``qderive eval two-flow`` (the command-line contract of issue 5);
* the derivation ``two-flow``: the symbolic stationary law of the tiny chain L = 1, H = 2
  (21 states) as ratios of polynomials in the six rates, for both algorithms, with its
  checks (:func:`stationary_law` computes it for any L < H <= 3, see its cost note);
* :func:`figure_comparison`: algorithm 1 versus 2 over the INVITE share and the
  INVITE / non-INVITE work ratio 4..12.

``python -m qderive.derivations.two_flow`` re-derives, verifies and prints.
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

__all__ = [
    "COMMAND",
    "TwoFlowCommand",
    "RATE_SYMBOLS",
    "SymbolicLaw",
    "stationary_law",
    "gth_exact",
    "common_denominator",
    "split_factors",
    "build_derivation",
    "evaluate_measures",
    "comparison_rows",
    "figure_comparison",
    "MEASURE_KEYS",
]

_CITE = "spec/other-models.md section C (seed 001)"

class _PrimedRate(sp.Symbol):
    """mu'_c, the overload service rate: a Symbol whose LaTeX is braced, so that powers stay valid TeX."""

    def _latex(self, printer):
        return "{\\mu'_{%s}}" % self.name.rsplit("_", 1)[-1]


lam1, lam2, mu1, mu2 = sp.symbols("lambda_1 lambda_2 mu_1 mu_2", positive=True)
mup1, mup2 = _PrimedRate("muprime_1", positive=True), _PrimedRate("muprime_2", positive=True)
#: the rates in :class:`~qderive.numeric.two_flow.RateKind` order
RATE_SYMBOLS = (lam1, lam2, mu1, mu2, mup1, mup2)
_pi = sp.Function(r"\pi")

#: JSON measure keys of ``qderive eval two-flow`` (the contract), then the extras
MEASURE_KEYS = (
    "throughput_invite", "throughput_non_invite", "rejection_invite", "rejection_non_invite",
    "mean_sojourn_invite", "mean_sojourn_non_invite", "mean_sojourn", "p_mode0", "p_mode1", "p_mode2",
    "mean_return_time",
)  # fmt: skip


# ---------------------------------------------------------------------------------------
# Measures (numeric)
# ---------------------------------------------------------------------------------------


def evaluate_measures(solution) -> dict:
    """The JSON measures of a :class:`~qderive.numeric.two_flow.TwoFlowSolution` (backend numbers).

    Contract keys first (:data:`MEASURE_KEYS`), then mean numbers and accepted rates.
    ``mean_return_time`` is None when overload never occurs (R <= H).
    """
    s = solution
    with s.bk:
        return {
            "throughput_invite": s.throughput(1),
            "throughput_non_invite": s.throughput(2),
            "rejection_invite": s.rejection_probability(1),
            "rejection_non_invite": s.rejection_probability(2),
            "mean_sojourn_invite": s.mean_sojourn(1),
            "mean_sojourn_non_invite": s.mean_sojourn(2),
            "mean_sojourn": s.mean_sojourn(),
            "p_mode0": s.mode_probability(0),
            "p_mode1": s.mode_probability(1),
            "p_mode2": s.mode_probability(2),
            "mean_return_time": s.mean_return_time(),
            "mean_number_invite": s.mean_number(1),
            "mean_number_non_invite": s.mean_number(2),
            "mean_number": s.mean_number(),
            "accepted_rate_invite": s.accepted_rate(1),
            "accepted_rate_non_invite": s.accepted_rate(2),
        }


# ---------------------------------------------------------------------------------------
# Symbolic stationary law of tiny chains
# ---------------------------------------------------------------------------------------


def evaluate_polynomial_law(ring, polys, values: dict) -> list:
    """pi_i = N_i / sum_j N_j with every N_i evaluated exactly at ``{symbol: Rational}``."""
    dom = ring.domain
    point = [(g, dom.from_sympy(exact(values[g.as_expr()], str(g)))) for g in ring.gens]
    nums = [dom.to_sympy(p.evaluate(point)) for p in polys]
    total = sp.Add(*nums)
    return [x / total for x in nums]


@dataclass(frozen=True)
class SymbolicLaw:
    """pi(s) = N_s / N with polynomials N_s in the rates (gcd removed) and N = sum_s N_s.

    ``polys`` are the N_s as elements of ``ring`` (fast exact arithmetic for the checks);
    :meth:`numerator` gives them as SymPy expressions.
    """

    space: object
    rates: tuple
    ring: object
    polys: tuple

    def numerator(self, i: int) -> sp.Expr:
        """N_i, expanded, as a SymPy expression."""
        return self.polys[i].as_expr()

    def factored(self, i: int) -> sp.Expr:
        """N_i with the rates and the states' exit-rate sums pulled out as factors (:func:`split_factors`)."""
        sp_ = self.space
        r = [self.ring.from_expr(x) for x in self.rates]
        out = [self.ring.zero] * sp_.size
        for s, k in zip(sp_.src, sp_.kind):
            out[s] += r[k]
        return split_factors(self.polys[i], list(self.ring.gens) + out)

    def normaliser(self) -> sp.Expr:
        """N = sum_s N_s (expanded)."""
        return sum(self.polys, self.ring.zero).as_expr()

    def probability(self, i: int) -> sp.Expr:
        """pi(state i) = N_i / N as a SymPy expression."""
        return self.numerator(i) / self.normaliser()

    def at(self, values: dict) -> list:
        """The law at exact rate values ``{symbol: Rational}``: exact rationals in state order."""
        return evaluate_polynomial_law(self.ring, self.polys, values)


def gth_exact(n: int, transitions, K) -> list:
    """Stationary vector (up to a factor, pi[0] = 1) of a CTMC over an exact field ``K`` by sparse GTH.

    ``transitions`` = iterable of ``(i, j, rate)`` with rates in ``K``; states are
    eliminated from n - 1 down to 1 (put the state to keep first, and order the rest so
    that eliminated states have few neighbours: level order for queues). Pivots are
    sums of rates, never differences (Grassmann-Taksar-Heyman).
    """
    A = [dict() for _ in range(n)]
    into = [set() for _ in range(n)]
    for i, j, rate in transitions:
        A[i][j] = A[i].get(j, K.zero) + rate
        into[j].add(i)
    for k in range(n - 1, 0, -1):
        total = sum((v for j, v in A[k].items() if j < k), K.zero)
        for i in [i for i in into[k] if i < k]:
            f = A[i][k] / total
            A[i][k] = f
            for j, v in A[k].items():
                if j < k:
                    if j not in A[i]:
                        into[j].add(i)
                    A[i][j] = A[i].get(j, K.zero) + f * v
    pi = [K.zero] * n
    pi[0] = K.one
    for k in range(1, n):
        pi[k] = sum((pi[i] * A[i][k] for i in into[k] if i < k), K.zero)
    return pi


def common_denominator(ratios) -> list:
    """Field elements r_s -> polynomials N_s with r_s = N_s / D (common D, gcd of the N_s removed)."""
    den = functools.reduce(lambda a, b: a.lcm(b), [p.denom for p in ratios])
    nums = [p.numer * den.exquo(p.denom) for p in ratios]
    g = functools.reduce(lambda a, b: a.gcd(b), nums)
    return [x.exquo(g) for x in nums]


def split_factors(poly, candidates) -> sp.Expr:
    """``poly`` as ``product of candidate factors ** multiplicity * cofactor`` by exact trial division.

    The candidates are the rates and the exit-rate sums of the states (the pivots of the
    elimination, so the usual factors of a stationary law). Deterministic and fast, unlike
    a general multivariate factorisation (Wang's algorithm draws random evaluation points
    and occasionally takes minutes); the cofactor is returned expanded.
    """
    factors = []
    seen = set()
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


def _sparse_gth_field(space, rates, K):
    """pi(s) / pi(empty) of the seed-001 chain over ``K``: :func:`gth_exact` in level order (count n ascending)."""
    order = sorted(range(space.size), key=lambda i: (int(space.length[i]), int(space.mode[i]), int(space.bits[i])))
    pos = {s: i for i, s in enumerate(order)}
    pi = gth_exact(space.size, ((pos[int(s)], pos[int(d)], rates[k]) for s, d, k in
                                zip(space.src, space.dst, space.kind)), K)
    return [pi[pos[s]] for s in range(space.size)]


@functools.lru_cache(maxsize=8)
def stationary_law(low: int = 1, high: int = 2, algorithm=None, rates: tuple = RATE_SYMBOLS) -> SymbolicLaw:
    """The stationary law of the seed-001 chain with L = ``low``, H = ``high`` (R = H + 1) in closed form.

    ``spec/other-models.md`` C: global balance ``pi(s) q(s) = sum_t pi(t) q(t, s)`` solved
    exactly over the field of rational functions of the rate symbols (sparse GTH, level
    order), then put over a common denominator: ``pi(s) = N_s / sum_t N_t`` with
    polynomials N_s. ``rates`` (RateKind order) may mix symbols and rationals.

    Cost with six symbols (measured, 2-core machine): L, H = 1, 2 (21 states) 0.3 s
    (priority) to 1.6 s (FIFO); H = 3 (40 to 45 states): 1.5 to 4.5 s for priority, 84 s
    (L = 1) and 117 s (L = 2) for FIFO, with numerators of up to 1500 terms. Fewer
    symbols (numbers for some rates) are much faster. Refused for H > 3.
    """
    from sympy.polys.fields import field

    from qderive.numeric.two_flow import Algorithm, state_space

    algorithm = Algorithm.FIFO if algorithm is None else algorithm
    if not (1 <= low < high <= 3):
        from qderive.symbolic._exact import ParameterError

        raise ParameterError(f"symbolic law: thresholds must satisfy 1 <= L < H <= 3, got L={low}, H={high}")
    space = state_space(low, high, high + 1, algorithm)
    rates = tuple(exact(r, "rate") for r in rates)
    gens = sorted(set().union(*(r.free_symbols for r in rates)), key=str)
    if not gens:
        raise ValueError("stationary_law: give at least one symbolic rate (use exact_stationary for numbers)")
    K, *_ = field(gens, sp.QQ)
    nums = common_denominator(_sparse_gth_field(space, [K.from_expr(r) for r in rates], K))
    return SymbolicLaw(space, rates, K.ring, tuple(nums))


def _state_label(space, i: int) -> sp.Expr:
    return _pi(int(space.mode[i]), sp.Tuple(*space.sequence(i)))


# ---------------------------------------------------------------------------------------
# The derivation
# ---------------------------------------------------------------------------------------

#: verification point: rational rates (INVITE slower, overload service a little faster)
CHECK_RATES = {lam1: sp.Rational(3, 5), lam2: sp.Integer(2), mu1: sp.Integer(1), mu2: sp.Integer(5),
               mup1: sp.Rational(3, 2), mup2: sp.Integer(6)}


def _model(alg, L, H, R, rates=CHECK_RATES):
    from qderive.numeric.two_flow import TwoFlowModel

    return TwoFlowModel((rates[lam1], rates[lam2]), (rates[mu1], rates[mu2]), L, H, R, alg,
                        (rates[mup1], rates[mup2]))


def _check_balance_exact(alg):
    def run(digits):
        law = stationary_law(1, 2, alg)
        sp_, R = law.space, law.ring
        r = [R.from_expr(x) for x in law.rates]
        out = [R.zero] * sp_.size
        inflow = [R.zero] * sp_.size
        for s, d, k in zip(sp_.src, sp_.dst, sp_.kind):
            out[s] += r[k]
            inflow[d] += law.polys[s] * r[k]
        bad = [i for i in range(sp_.size) if inflow[i] != law.polys[i] * out[i]]
        return (not bad, None, f"N_s q(s) = sum_t N_t q(t, s) as polynomials for all {sp_.size} states"
                + (f"; fails at {bad[:3]}" if bad else ""))
    return run


def _check_accepted_equals_throughput_exact(alg):
    def run(digits):
        from qderive.numeric.two_flow import Mode, RateKind

        law = stationary_law(1, 2, alg)
        sp_, R = law.space, law.ring
        r = [R.from_expr(x) for x in law.rates]
        ok = True
        for c in (1, 2):
            accepted = r[c - 1] * sum((law.polys[i] for i in range(sp_.size) if sp_.accepts(c)[i]), R.zero)
            served = R.zero
            for i in range(sp_.size):
                if sp_.in_service[i] == c:
                    base = RateKind.SERVICE_1 if sp_.mode[i] == Mode.NORMAL else RateKind.OVERLOAD_SERVICE_1
                    served += r[base + c - 1] * law.polys[i]
            ok &= accepted == served
        return ok, None, "lambda_c sum_{accepting} N_s = sum_{c in service} mu_c(mode) N_s, c = 1, 2 (polynomials)"
    return run


def _check_law_vs_exact_solve(alg):
    def run(digits):
        from qderive.numeric.two_flow import exact_stationary

        law = stationary_law(1, 2, alg)
        exact_pi = exact_stationary(_model(alg, 1, 2, 3))
        ok = law.at(CHECK_RATES) == list(exact_pi)
        return ok, None, "symbolic law at the check rates == DomainMatrix solve over QQ (exact rationals)"
    return run


def _check_law_vs_mp(alg):
    def run(digits):
        import mpmath

        from qderive.numeric.backend import mp_backend
        from qderive.numeric.two_flow import Solver, solve

        law = stationary_law(1, 2, alg)
        bk = mp_backend(digits)
        sol = solve(_model(alg, 1, 2, 3), bk, Solver.GTH)
        with bk:
            exact_vals = law.at(CHECK_RATES)
            agree = min(agreement_digits(sol.pi[i], bk.num(exact_vals[i])) for i in range(law.space.size))
        return agree >= digits - 3, min(agree, digits), f"GTH at {digits} digits vs the symbolic law, every state"
    return run


def _check_equal_service_totals(digits):
    """Equal service rates per mode: the (mode, n) process is the same for both algorithms."""
    from qderive.numeric.backend import mp_backend
    from qderive.numeric.two_flow import Algorithm, solve

    bk = mp_backend(digits + 10)
    rates = dict(CHECK_RATES)
    rates[mu1] = rates[mu2] = sp.Integer(2)
    rates[mup1] = rates[mup2] = sp.Rational(5, 2)
    sols = [solve(_model(a, 2, 4, 5, rates), bk) for a in Algorithm]
    agree = []
    with bk:
        for f in (lambda s: s.mode_probability(0), lambda s: s.mode_probability(2), lambda s: s.mean_number(),
                  lambda s: s.throughput(1) + s.throughput(2), lambda s: s.mean_return_time()):
            agree.append(agreement_digits(f(sols[0]), f(sols[1])))
    a = min(agree)
    return a >= digits - 2, min(a, digits), "FIFO vs priority with mu_1 = mu_2, mu'_1 = mu'_2 (L,H,R = 2,4,5): " \
        "P(mode 0), P(mode 2), mean number, total throughput, return time"


def _check_accepted_equals_throughput_numeric(digits):
    from qderive.numeric.backend import mp_backend
    from qderive.numeric.two_flow import Algorithm, solve

    bk = mp_backend(digits + 10)
    agree = []
    for alg in Algorithm:
        sol = solve(_model(alg, 2, 4, 5), bk)
        with bk:
            agree += [agreement_digits(sol.accepted_rate(c), sol.throughput(c)) for c in (1, 2)]
    a = min(agree)
    return a >= digits, min(a, digits), "accepted rate = throughput per class, both algorithms, L,H,R = 2,4,5"


def _check_return_time_renewal(digits):
    from qderive.numeric.backend import mp_backend
    from qderive.numeric.two_flow import Algorithm, solve

    bk = mp_backend(digits + 10)
    agree = []
    for alg in Algorithm:
        sol = solve(_model(alg, 2, 4, 5), bk)
        with bk:
            agree.append(agreement_digits(sol.mean_return_time(), sol.renewal_return_time()))
    a = min(agree)
    return a >= digits, min(a, digits), "first-passage return time (GTH absorption) = (P1 + P2) / nu (renewal)"


def _check_sparse_vs_gth(digits):
    from qderive.numeric.two_flow import Algorithm, Solver, solve

    agree = []
    for alg in Algorithm:
        model = _model(alg, 3, 7, 10)
        a, b = (evaluate_measures(solve(model, solver=s)) for s in (Solver.SPARSE, Solver.GTH))
        agree += [agreement_digits(a[k], b[k]) for k in MEASURE_KEYS]
    a = min(agree)
    return a >= 10, a, "float64: sparse level solver vs dense GTH, every measure, L,H,R = 3,7,10"


@functools.lru_cache(maxsize=1)
def build_derivation() -> Derivation:
    """The ``two-flow`` derivation: model relations, the tiny chain's law for both algorithms, checks."""
    from qderive.numeric.two_flow import Algorithm

    x, y = sp.symbols("x y")
    q = sp.Function("q")
    P = sp.Function("P")
    theta, B, T, N, nu, Etau = (sp.Function(r"\theta"), sp.Function("B"), sp.Function("T"), sp.Function("N"),
                                sp.Symbol(r"\nu"), sp.Symbol(r"E\tau_{12}"))
    c = sp.Symbol("c")
    steps = [
        Step("(C.1)", "global balance of the chain on (mode, class sequence); q(x) = total rate out of x",
             sp.Eq(_pi(x) * q(x), sp.Sum(_pi(y) * q(y, x), (y, 1, sp.Symbol("|S|")))), _CITE),
        Step("(C.2)", "throughput of class c: the rate of the message in service follows the mode",
             sp.Eq(theta(c), sp.Symbol(r"\mu_c") * P(sp.Symbol("m=0,c"))
                   + sp.Symbol(r"\mu'_c") * P(sp.Symbol("m>0,c"))),
             _CITE),
        Step("(C.3)", "rejection (503) probabilities by PASTA: INVITE refused in modes 1 and 2, non-INVITE in mode 2",
             sp.Eq(sp.Tuple(B(1), B(2)), sp.Tuple(P(1) + P(2), P(2))), _CITE),
        Step("(C.4)", "accepted rate = throughput (check), mean sojourn by Little with the accepted rate",
             sp.Eq(T(c), N(c) / (sp.Symbol(r"\lambda_c") * (1 - B(c)))), _CITE),
        Step("(C.5)", "mean return time to mode 0 by renewal-reward (nu = rate of 0 -> 2 switches); "
             "computed as a first passage, checked against this", sp.Eq(Etau, (P(1) + P(2)) / nu), _CITE),
    ]
    results = {}
    idx = sp.Symbol("i", integer=True, positive=True)
    for alg, tag in ((Algorithm.FIFO, "F"), (Algorithm.PRIORITY, "P")):
        law = stationary_law(1, 2, alg)
        number = 1 if tag == "F" else 2
        Nb = sp.IndexedBase(f"N_{tag}")
        Ntot = sp.Symbol(f"N_{tag}")
        steps.append(Step(f"({tag}.0)", f"algorithm {number}, L = 1, H = 2, R = 3: the law of state i = (mode, "
                          f"sequence) is a ratio of polynomials in the rates",
                          sp.Eq(_pi(sp.Symbol("x_i")), Nb[idx] / Ntot), _CITE))
        for i in range(law.space.size):
            steps.append(Step(f"({tag}.{i + 1})", f"algorithm {number}: numerator of state {i + 1} = mode "
                              f"{int(law.space.mode[i])}, sequence ({', '.join(map(str, law.space.sequence(i)))}) "
                              "(first = in service; 1 = INVITE, 2 = non-INVITE)",
                              sp.Eq(Nb[i + 1], law.factored(i)), _CITE))
        steps.append(Step(f"({tag}.N)", f"algorithm {number}: the normaliser",
                          sp.Eq(Ntot, sp.Sum(Nb[idx], (idx, 1, law.space.size))), _CITE))
        results[f"law_{alg.value}"] = law
    checks = []
    for alg in Algorithm:
        a = alg.value
        checks += [
            Check(f"{a}: symbolic law satisfies global balance (exact)", _check_balance_exact(alg)),
            Check(f"{a}: accepted rate = throughput per class (exact, polynomials)",
                  _check_accepted_equals_throughput_exact(alg)),
            Check(f"{a}: symbolic law = exact rational solve at the check rates", _check_law_vs_exact_solve(alg)),
            Check(f"{a}: symbolic law = mpmath GTH solve at digits", _check_law_vs_mp(alg)),
        ]
    checks += [
        Check("accepted rate = throughput per class, L,H,R = 2,4,5 (digits)",
              _check_accepted_equals_throughput_numeric),
        Check("equal service rates: FIFO and priority totals agree (digits)", _check_equal_service_totals),
        Check("mean return time: first passage = renewal (digits)", _check_return_time_renewal),
        Check("float64 sparse solver = dense GTH, L,H,R = 3,7,10", _check_sparse_vs_gth),
    ]
    notes = (
        "The state is (mode, class sequence), first = in service: FIFO with class-dependent service rates needs "
        "the order; states are numbered 1..|S|. The laws below are for the smallest thresholds L = 1, H = 2 "
        "(R = 3), algorithm 1 (F) and 2 (P). Symbols: lambda_c arrival rates, mu_c service rates in "
        "mode 0, mu'_c in modes 1 and 2; class 1 = INVITE, class 2 = non-INVITE.",
    )
    return Derivation(
        name="two-flow",
        title="Two message classes (INVITE / non-INVITE) with threshold overload control, FIFO and priority",
        source="Seed 001 (two-flow SIP server, two threshold algorithms); " + _CITE,
        steps=tuple(steps),
        checks=tuple(checks),
        results=results,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------


def _pair_arg(text: str, name: str) -> list:
    return parse_number_list(text, name, count=2)


def _thresholds(text: str) -> list[int]:
    from qderive.symbolic._exact import ParameterError

    values = parse_number_list(text, "--thresholds", count=3)
    if not all(v.is_Integer for v in values):
        raise ParameterError(f"--thresholds = {text!r}: L, H, R must be integers")
    return [int(v) for v in values]


class TwoFlowCommand(ModelCommand):
    """``qderive eval two-flow``: the INVITE / non-INVITE threshold model (seed 001)."""

    name = "two-flow"
    summary = "INVITE / non-INVITE SIP server with threshold overload control, FIFO or priority (seed 001)"
    example_args = ("--rates", "0.6,2.0", "--service-rates", "1,5", "--thresholds", "3,7,10", "--algorithm", "priority")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rates", required=True, metavar="LAMBDA1,LAMBDA2",
                            help="Poisson rates of INVITE and non-INVITE messages")
        parser.add_argument("--service-rates", required=True, metavar="MU1,MU2",
                            help="service rates of INVITE and non-INVITE in normal mode")
        parser.add_argument("--overload-service-rates", metavar="MU1,MU2",
                            help="service rates in modes 1 and 2 (default: the normal-mode rates)")
        parser.add_argument("--thresholds", required=True, metavar="L,H,R",
                            help="1 <= L < H; R = buffer (binds only when R <= H + 1)")
        parser.add_argument("--algorithm", choices=["fifo", "priority"], default="fifo",
                            help="fifo: algorithm 1; priority: algorithm 2, non-INVITE first in overload "
                                 "(default fifo)")
        parser.add_argument("--solver", choices=["auto", "gth", "sparse"], default="auto",
                            help="stationary solver (default auto: dense GTH for small chains and --digits, "
                                 "sparse level solver above)")

    def build(self, args):
        from qderive.numeric.two_flow import Algorithm, TwoFlowModel

        rates = _pair_arg(args.rates, "--rates")
        mus = _pair_arg(args.service_rates, "--service-rates")
        over = _pair_arg(args.overload_service_rates, "--overload-service-rates") \
            if args.overload_service_rates else None
        L, H, R = _thresholds(args.thresholds)
        return TwoFlowModel(tuple(rates), tuple(mus), L, H, R, Algorithm(args.algorithm), over and tuple(over))

    def evaluate(self, model, digits, args) -> Evaluation:
        from qderive.numeric.backend import FLOAT64, mp_backend
        from qderive.numeric.two_flow import Solver, solve

        bk = FLOAT64 if digits is None else mp_backend(digits + 10)  # GTH: no subtractions, guard digits only
        solver = Solver(getattr(args, "solver", "auto") or "auto")
        sol = solve(model, bk, solver)
        params = {k: v for k, v in model.parameters().items()}
        params["states"] = sol.space.size
        return Evaluation(self.name, params, evaluate_measures(sol), model.notes())

    def derivation(self):
        return build_derivation()

    def simulate(self, model, args):
        """The simulator's view of the model (``numeric/sim_two_flow.py``): same rates, thresholds, algorithm."""
        from qderive.numeric.sim_two_flow import SimTwoFlowModel

        return SimTwoFlowModel(model.arrival_rates, model.service_rates, (model.low, model.high, model.capacity),
                               model.algorithm, model.overload_service_rates), {}


COMMAND = TwoFlowCommand()


# ---------------------------------------------------------------------------------------
# Comparison study (figure)
# ---------------------------------------------------------------------------------------

#: the study's fixed parameters: non-INVITE service time 1, offered work rho, thresholds
STUDY = {"rho": sp.Rational(6, 5), "L": 4, "H": 8, "R": 9,
         "shares": tuple(sp.Rational(k, 10) for k in range(1, 10)), "ratios": (4, 6, 8, 10, 12)}

_CSV_COLUMNS = ("invite_share", "work_ratio", "algorithm", "lambda_total", "throughput_total", "throughput_invite",
                "throughput_non_invite", "mean_sojourn", "mean_sojourn_invite", "mean_sojourn_non_invite",
                "rejection_invite", "rejection_non_invite", "p_mode0", "mean_return_time")


def comparison_rows(study: dict = STUDY) -> list[dict]:
    """Algorithm 1 vs 2 on a grid of INVITE share f and work ratio k = mu_2 / mu_1 (seed 001: 4..12).

    Non-INVITE service time 1 (mu_2 = 1), INVITE mu_1 = 1/k, the same rates in overload;
    total rate lambda chosen so the offered work lambda (f k + 1 - f) equals ``rho``
    (1.2: an overloaded server); lambda_1 = f lambda, lambda_2 = (1 - f) lambda. Float64.
    """
    from qderive.numeric.two_flow import Algorithm, TwoFlowModel, solve

    rows = []
    for k in study["ratios"]:
        for f in study["shares"]:
            lam = study["rho"] / (f * k + 1 - f)
            for alg in Algorithm:
                model = TwoFlowModel((f * lam, (1 - f) * lam), (sp.Rational(1, k), 1), study["L"], study["H"],
                                     study["R"], alg)
                m = evaluate_measures(solve(model))
                rows.append({
                    "invite_share": float(f), "work_ratio": k, "algorithm": alg.value, "lambda_total": float(lam),
                    "throughput_total": m["throughput_invite"] + m["throughput_non_invite"],
                    **{key: m[key] for key in _CSV_COLUMNS[5:]},
                })
    return rows


def figure_comparison(out_png: str | None, out_csv: str | None) -> None:
    """Figure ``two-flow-comparison``: algorithm 1 (FIFO) versus 2 (priority) over INVITE share and work ratio.

    Top row: throughput (messages per unit time), mean sojourn, INVITE rejection; solid =
    algorithm 1, dashed = algorithm 2, one colour per work ratio k. Bottom row: algorithm
    2 relative to algorithm 1 (throughput and sojourn in %, INVITE rejection in
    percentage points). Data: the CSV, one row per (share, k, algorithm).
    """
    rows = comparison_rows()
    if out_csv:
        import csv

        with open(out_csv, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(_CSV_COLUMNS))
            w.writeheader()
            for r in rows:
                w.writerow({k: (f"{v:.10g}" if isinstance(v, float) else v) for k, v in r.items()})
    if not out_png:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = STUDY["ratios"]
    colours = plt.get_cmap("viridis")
    by = {(r["work_ratio"], r["algorithm"], r["invite_share"]): r for r in rows}
    shares = sorted({r["invite_share"] for r in rows})
    panels = (
        ("throughput_total", "throughput (messages / time)", lambda a, b: 100 * (b / a - 1),
         "throughput: alg. 2 vs 1 (%)"),
        ("mean_sojourn", "mean sojourn (time)", lambda a, b: 100 * (b / a - 1), "mean sojourn: alg. 2 vs 1 (%)"),
        ("rejection_invite", "INVITE rejection probability", lambda a, b: 100 * (b - a),
         "INVITE rejection: alg. 2 - alg. 1 (points)"),
    )
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    for col, (key, label, diff, dlabel) in enumerate(panels):
        top, bottom = axes[0, col], axes[1, col]
        for n, k in enumerate(ratios):
            colour = colours(n / max(1, len(ratios) - 1))
            for alg, style in (("fifo", "-"), ("priority", "--")):
                top.plot(shares, [by[(k, alg, f)][key] for f in shares], style, color=colour, marker=".",
                         label=f"k = {k}" if alg == "fifo" else None)
            bottom.plot(shares, [diff(by[(k, "fifo", f)][key], by[(k, "priority", f)][key]) for f in shares],
                        color=colour, marker=".", label=f"k = {k}")
        bottom.axhline(0, color="grey", lw=0.8)
        top.set_ylabel(label)
        bottom.set_ylabel(dlabel)
        for ax in (top, bottom):
            ax.set_xlabel("INVITE share of arrivals")
            ax.grid(alpha=0.3)
    axes[0, 0].legend(title="work ratio (solid: alg. 1, dashed: alg. 2)", fontsize=8, title_fontsize=8)
    s = STUDY
    fig.suptitle(f"Two-flow SIP server, algorithm 1 (FIFO) vs 2 (non-INVITE first in overload): offered work "
                 f"{float(s['rho']):g}, L,H,R = {s['L']},{s['H']},{s['R']}, non-INVITE service time 1, "
                 f"INVITE k times longer")
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if build_derivation().report(40) else 1)
