"""M[X]/G/1 with multiple vacations, infinite waiting room: Sopin (2013), eqs. (2)-(7).

The derivation runs once with *general* laws (an undefined service LST beta(s)
with moments b1, b2, b3; vacation LST varphi(s) with f1, f2, f3; batch PGF L(z)
with l1, l2, l3) and specialises exactly for concrete laws by substituting their
moments. Steps (``spec/chapter2.md`` section 1):

(2)  balance of the embedded chain at service completions and vacation ends,
(2b) its subtraction-free cut form,
(3)  the embedded PGF Q(z) and q0,
(4)  the embedded-to-time relation (semi-Markov, renewal reward),
(5)  the time-stationary PGF P(z) and P_e = 1 - rho_bar,
(6)  the mean wait W, (7) the mean queue length N = lambda l1 W,
and, beyond the thesis, the variance of the queue length, Var = P''(1) + N - N^2.

Run ``python -m qderive.derivations.vacation_infinite`` to re-derive, verify and print.
"""

from __future__ import annotations

import argparse
import functools
import math
from dataclasses import dataclass

import sympy as sp

from qderive.numeric.backend import backend_for
from qderive.numeric.compile import compile as compile_expr
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError, exact, is_number, require_positive
from qderive.symbolic.pgf import derivatives_at, series

from qderive.numeric import _cache
from .cli_args import BATCH_LAW_HELP, TIME_LAW_HELP, parse_batch_law, parse_number, parse_time_law
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits, exact_identity

__all__ = ["VacationQueue", "general_results", "model_results", "derivation", "COMMAND"]

SOURCE = "E. S. Sopin (2013), thesis abstract, chapter 2, eqs. (2)-(7); spec/chapter2.md section 1"

z = sp.Symbol("z")
lam = sp.Symbol("lambda", positive=True)
SERVICE = T.GeneralTime("beta", "b")
VACATION = T.GeneralTime("varphi", "f")
BATCH = B.GeneralBatch("L", "l")
b1, b2, b3 = (SERVICE.moment(k) for k in (1, 2, 3))
f1, f2, f3 = (VACATION.moment(k) for k in (1, 2, 3))
l1, l2, l3 = (BATCH.moment(k) for k in (1, 2, 3))
MOMENT_SYMBOLS = (lam, b1, b2, b3, f1, f2, f3, l1, l2, l3)


def _substitute_general(expr):
    return VACATION.substitute_moments(SERVICE.substitute_moments(BATCH.substitute_moments(expr)))


# ----------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class VacationQueue:
    """M[X]/G/1 with multiple vacations and an infinite waiting room.

    ``lam``: batch arrival rate; ``batch``, ``service``, ``vacation``: laws.
    Requires rho_bar = lam * l1 * b1 < 1 (there is no stationary regime otherwise).
    """

    lam: sp.Expr
    batch: B.BatchLaw
    service: T.TimeLaw
    vacation: T.TimeLaw

    def __post_init__(self):
        object.__setattr__(self, "lam", require_positive(exact(self.lam, "rate"), "rate"))
        for name, cls in (("batch", B.BatchLaw), ("service", T.TimeLaw), ("vacation", T.TimeLaw)):
            if not isinstance(getattr(self, name), cls):
                raise ParameterError(f"{name} = {getattr(self, name)!r}: must be a {cls.__name__}")
        rb = self.rho_bar
        if is_number(rb) and not bool(rb < 1):
            raise ParameterError(
                f"rho_bar = {rb} >= 1: the infinite-buffer model has no stationary regime; "
                "use a finite capacity r (model vacation-finite)"
            )

    @classmethod
    def from_load(cls, load, batch, service, vacation) -> "VacationQueue":
        """The model with offered load rho_bar = lambda l1 b1 (lambda = load / (l1 b1))."""
        load = require_positive(exact(load, "load"), "load")
        return cls(load / (batch.moment(1) * service.moment(1)), batch, service, vacation)

    @property
    def rho_bar(self) -> sp.Expr:
        """Offered load rho_bar = lambda l1 b1 (customers per service time)."""
        return self.lam * self.batch.moment(1) * self.service.moment(1)

    def _repr_latex_(self) -> str:
        """Kendall notation and parameters, rendered by Jupyter."""
        return (f"$M^{{[X]}}|G|1$ with multiple vacations: $\\lambda = {sp.latex(self.lam)}$, "
                f"$\\bar\\rho = {sp.latex(self.rho_bar)}$, $L(z) = {sp.latex(self.batch.pgf(z))}$, "
                f"$\\beta(s) = {sp.latex(self.service.lst(sp.Symbol('s')))}$, "
                f"$\\varphi(s) = {sp.latex(self.vacation.lst(sp.Symbol('s')))}$")

    def __str__(self) -> str:
        return (f"M[X]/G/1 with multiple vacations: lambda = {self.lam}, rho_bar = {self.rho_bar}, "
                f"batch {self.batch}, service {self.service}, vacation {self.vacation}")

    def moments(self) -> dict:
        """Values of the general-law symbols (lambda, b1..b3, f1..f3, l1..l3) for this model."""
        vals = [self.lam]
        vals += [self.service.moment(k) for k in (1, 2, 3)]
        vals += [self.vacation.moment(k) for k in (1, 2, 3)]
        vals += [self.batch.moment(k) for k in (1, 2, 3)]
        return dict(zip(MOMENT_SYMBOLS, vals))


# ----------------------------------------------------------------------------------
# The derivation with general laws (cached: it is the same for every model)
# ----------------------------------------------------------------------------------


def _pgfs(service, vacation, batch, rate):
    s_arg = rate - rate * batch.pgf(z)
    A = service.lst(s_arg)  # A(z) = beta(lambda - lambda L(z))
    C = vacation.lst(s_arg)  # C(z) = varphi(lambda - lambda L(z))
    return A, C


def _derive_general() -> dict:
    A, C = _pgfs(SERVICE, VACATION, BATCH, lam)
    Lz = BATCH.pgf(z)
    rho_bar = lam * l1 * b1
    alpha_bar = lam * l1 * f1
    q0 = (1 - rho_bar) / (1 - rho_bar + alpha_bar)
    Q = q0 * (A - z * C) / (A - z)
    P_e = 1 - rho_bar
    P = P_e * (1 - z) * (1 - C) / (lam * f1 * (1 - Lz) * (A - z))
    P0, P1, P2 = derivatives_at(P, z, 1, 2, _substitute_general)
    (Q1,) = derivatives_at(Q, z, 1, 0, _substitute_general)
    N = sp.factor(P1)
    W = f2 / (2 * f1) + lam * l1 * b2 / (2 * (1 - rho_bar)) + (l2 - l1) * b1 / (2 * l1 * (1 - rho_bar))
    var = sp.factor(sp.cancel(P2 + P1 - P1**2))
    return {
        "A": A, "C": C, "Q": Q, "P": P, "q0": q0, "P_e": P_e, "rho_bar": rho_bar, "alpha_bar": alpha_bar,
        "P(1)": P0, "Q(1)": Q1, "N_derived": N, "W": W, "N": lam * l1 * W,
        "second_factorial_moment": sp.factor(P2), "variance": var,
    }


@functools.lru_cache(maxsize=1)
def general_results() -> dict:
    """Q(z), q0, P(z), P_e, W, N, Var with general laws (derived once, cached on disk)."""
    return _cache.cached("vacation_infinite_general_v1", _derive_general)


def model_results(model: VacationQueue) -> dict:
    """The general results specialised exactly to a concrete model's moments."""
    g = general_results()
    values = model.moments()
    keys = ("q0", "P_e", "W", "N", "variance", "rho_bar")
    return {k: g[k].subs(values) for k in keys}


# ----------------------------------------------------------------------------------
# Measures
# ----------------------------------------------------------------------------------

MEASURE_KEYS = ("q0", "idle_probability", "mean_queue_length", "mean_wait", "queue_length_variance",
                "mean_number_in_system")


#: generated-code arguments: (symbol, name, meaning and units)
ARG_DOCS = (
    (lam, "lam", "batch arrival rate lambda (batches per unit time)"),
    (b1, "b1", "mean service time (time)"),
    (b2, "b2", "second moment of the service time (time^2)"),
    (b3, "b3", "third moment of the service time (time^3)"),
    (f1, "f1", "mean vacation time (time)"),
    (f2, "f2", "second moment of the vacation time (time^2)"),
    (f3, "f3", "third moment of the vacation time (time^3)"),
    (l1, "l1", "mean batch size E X (customers)"),
    (l2, "l2", "second moment of the batch size E X^2 (customers^2)"),
    (l3, "l3", "third moment of the batch size E X^3 (customers^3)"),
)

MEASURE_DOCS = {
    "q0": "Probability q0 that the queue is empty at an embedded epoch (service completion or vacation end), eq. (3).",
    "idle_probability": "Probability P_e that the server is not serving (on vacation), P_e = 1 - rho_bar, eq. (5).",
    "mean_queue_length": "Mean number of waiting customers N = lambda l1 W, eqs. (6), (7).",
    "mean_wait": "Mean waiting time W of a customer (time), eq. (6).",
    "queue_length_variance": "Variance of the number of waiting customers, P''(1) + N - N^2 from eq. (5).",
    "mean_number_in_system": "Mean number of customers in the system, N + rho_bar.",
}


@functools.lru_cache(maxsize=1)
def _measure_exprs() -> dict:
    g = general_results()
    return {
        "q0": g["q0"],
        "idle_probability": g["P_e"],
        "mean_queue_length": g["N"],
        "mean_wait": g["W"],
        "queue_length_variance": g["variance"],
        "mean_number_in_system": g["N"] + g["rho_bar"],
    }


@functools.lru_cache(maxsize=1)
def evaluator():
    """One compiled evaluator of every measure (keys :data:`MEASURE_KEYS`) in (lambda, b1..b3, f1..f3, l1..l3).

    ``numpy`` path: float64, vectorised over arrays of parameters; ``mpmath`` path: any precision.
    """
    exprs = _measure_exprs()
    return compile_expr(tuple(exprs[k] for k in MEASURE_KEYS), MOMENT_SYMBOLS, source=SOURCE)


def measures(model: VacationQueue, digits: int | None = None) -> dict:
    """All measures: float64 via the numpy evaluator, or mpmath at ``digits`` digits.

    Exact inputs (rational moments) make the mpmath path exact up to its final rounding.
    """
    values = [model.moments()[s] for s in MOMENT_SYMBOLS]
    ev = evaluator()
    if digits is None:
        bk = backend_for(None)
        out = ev.numpy(*[bk.num(v) for v in values])
        return {k: float(v) for k, v in zip(MEASURE_KEYS, out)}
    return dict(zip(MEASURE_KEYS, ev.mpmath(*values, digits=digits)))


# ----------------------------------------------------------------------------------
# Checks (independent verification)
# ----------------------------------------------------------------------------------


def _check_exact(lhs, rhs, what):
    def run(digits):
        ok = exact_identity(lhs(), rhs())
        return ok, math.inf, what + (" holds exactly" if ok else " does NOT cancel to 0")

    return run


def _mg1_special_case(digits):
    """Single arrivals: W = lambda b2 / (2 (1 - rho)) + f2 / (2 f1) (Pollaczek-Khinchine + Fuhrmann-Cooper)."""
    g = general_results()
    W1 = g["W"].subs({l1: 1, l2: 1})
    expected = lam * b2 / (2 * (1 - lam * b1)) + f2 / (2 * f1)
    ok = exact_identity(W1, expected)
    return ok, math.inf, "W(l1=l2=1) = PK mean wait + residual vacation f2/(2 f1)"


#: parameter sets for the CTMC oracle (phase-type laws); loads light enough that the
#: truncation at ``capacity`` is far below 1e-50 (checked by the tail mass itself).
ORACLE_CASES = (
    ("exp service, exp vacation, geometric batches",
     lambda: VacationQueue(sp.Rational(1, 5), B.Geometric(sp.Rational(3, 2)), T.Exponential(sp.Rational(1, 2)),
                           T.Exponential(1)), 150),
    ("Erlang-2 service, hyperexp vacation, pmf batches",
     lambda: VacationQueue(sp.Rational(1, 5), B.FinitePMF({1: sp.Rational(1, 2), 2: sp.Rational(1, 2)}),
                           T.Erlang(2, sp.Rational(1, 2)),
                           T.HyperExponential((sp.Rational(1, 3), sp.Rational(2, 3)), (sp.Rational(1, 2), 1))), 150),
    ("hyperexp service, Erlang-3 vacation, constant batches",
     lambda: VacationQueue(sp.Rational(1, 5), B.Constant(2),
                           T.HyperExponential((sp.Rational(1, 4), sp.Rational(3, 4)), (1, sp.Rational(1, 3))),
                           T.Erlang(3, sp.Rational(3, 2))), 170),
)


def _oracle_check(make, capacity):
    def run(digits):
        import mpmath

        from qderive.numeric.backend import mp_backend
        from qderive.numeric.phase_oracle import phase_queue_distribution

        model = make()
        bk = mp_backend(digits + 10)
        with bk:
            law = phase_queue_distribution(model.lam, model.batch, model.service, model.vacation, capacity, bk)
            p = law.queue
            N = mpmath.fsum(n * p[n] for n in range(len(p)))
            M2 = mpmath.fsum(n * n * p[n] for n in range(len(p)))
            var = M2 - N * N
            truncation = p[-1]
        got = measures(model, digits)
        agreed = min(
            agreement_digits(got["mean_queue_length"], N),
            agreement_digits(got["queue_length_variance"], var),
            agreement_digits(got["idle_probability"], law.vacation),
        )
        need = min(digits - 8, float(-mpmath.log10(truncation)) - 5)
        return agreed >= need, agreed, (
            f"N, Var, P_e vs CTMC (GTH, {digits + 10} digits, truncated at {capacity}, tail {mpmath.nstr(truncation, 3)});"
            f" need {need:.0f} digits"
        )

    return run


def _embedded_check(digits):
    """q_j of (3) by the cut recursion (2b) and by the Taylor series of Q(z) vs a GTH solve of the embedded chain."""
    import mpmath

    from qderive.numeric.backend import mp_backend
    from qderive.numeric.chains import stationary_gth
    from qderive.numeric.cut import cut_recursion
    from qderive.numeric.sequences import arrival_counts

    model = VacationQueue(sp.Rational(1, 2), B.Geometric(sp.Rational(5, 4)), T.Deterministic(sp.Rational(1, 5)),
                          T.Exponential(sp.Rational(1, 10)))
    K, J = 110, 6
    bk = mp_backend(digits + 10)
    with bk:
        # the chain from the definition, with a_n, c_n as exact Taylor coefficients of A(z), C(z)
        A, C = _pgfs(model.service, model.vacation, model.batch, model.lam)
        a = [bk.num(c) for c in series(A, z, 0, K + 1).coeffs]
        c = [bk.num(cc) for cc in series(C, z, 0, K + 1).coeffs]
        P = [[0] * (K + 1) for _ in range(K + 1)]
        for j in range(K + 1):
            P[0][j] = c[j] if j < K else 1 - mpmath.fsum(c[:K])
        for i in range(1, K + 1):
            for j in range(i - 1, K + 1):
                P[i][j] = a[j - i + 1] if j < K else 1 - mpmath.fsum(a[: K - i + 1])
        q_chain = stationary_gth(P, bk)
        sa = arrival_counts(model.service, model.batch, model.lam, J, bk)
        sc = arrival_counts(model.vacation, model.batch, model.lam, J, bk)
        qt = cut_recursion(sa.a[0], sa.abar, sc.abar, J, bk)
        q0 = bk.num(model_results(model)["q0"])
        Q_model = model_results(model)["q0"] * (A - z * C) / (A - z)
        Qs = series(Q_model, z, 0, J)
        agreed = min(
            min(agreement_digits(q0 * qt[j], q_chain[j]) for j in range(J)),
            min(agreement_digits(bk.num(Qs.coeffs[j]), q_chain[j]) for j in range(J)),
        )
    return agreed >= digits - 10, agreed, f"q_0..q_{J - 1}: (2b) and series of (3) vs GTH of the {K + 1}-state chain"


def _twin_check(digits):
    model = VacationQueue.from_load(sp.Rational(3, 5), B.Geometric(5), T.Erlang(4, sp.Rational(3, 200)),
                                    T.Exponential(sp.Rational(3, 40)))
    f64 = measures(model)
    mp = measures(model, digits)
    agreed = min(agreement_digits(f64[k], mp[k]) for k in f64)
    return agreed >= 12, agreed, "float64 (numpy) vs mpmath evaluators of every measure"


# ----------------------------------------------------------------------------------
# The derivation object
# ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def derivation() -> Derivation:
    """The registered derivation ``vacation-infinite`` with its steps and checks."""
    g = general_results()
    q, a, c, p, u, v = sp.symbols("q a c p u v", cls=sp.IndexedBase)
    qt = sp.IndexedBase(r"\tilde{q}")
    abar, cbar = sp.IndexedBase(r"\bar{a}"), sp.IndexedBase(r"\bar{c}")
    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    Cm = sp.Symbol("C")
    Q_, P_, W_, N_, Var_ = sp.Function("Q")(z), sp.Function("P")(z), sp.Symbol("W"), sp.Symbol("N"), sp.Symbol(r"\operatorname{Var}")
    q0s, Pes = sp.Symbol("q_0"), sp.Symbol("P_e")
    rho_bar = g["rho_bar"]
    steps = (
        Step("(2)", "Balance of the embedded chain (service completions and vacation ends)",
             sp.Eq(q[j], q[0] * c[j] + sp.Sum(q[i] * a[j - i + 1], (i, 1, j + 1))), "Sopin 2013, eq. (2)"),
        Step("(2b)", "Cut form of (2): flow up = flow down across the cut j | j+1, no subtractions",
             sp.Eq(a[0] * qt[j + 1], qt[0] * cbar[j] + sp.Sum(qt[i] * abar[j - i + 1], (i, 1, j))),
             "spec/chapter2.md section 1"),
        Step("A, C", "Customers arriving during one service / one vacation",
             sp.Eq(sp.Function("A")(z), g["A"]), "spec/chapter2.md section 0"),
        Step("(3)", "Embedded queue-length PGF", sp.Eq(Q_, g["Q"]), "Sopin 2013, eq. (3)"),
        Step("(3')", "Probability the embedded queue is empty", sp.Eq(q0s, g["q0"]), "Sopin 2013, eq. (3)"),
        Step("(4)", "Embedded to time-stationary (semi-Markov, renewal reward)",
             sp.Eq(p[j], (q[0] * v[j] + sp.Sum(q[i] * u[j - i + 1], (i, 1, j + 1))) / Cm), "Sopin 2013, eq. (4)"),
        Step("(4')", "Mean time between embedded epochs", sp.Eq(Cm, f1 / (1 - rho_bar + g["alpha_bar"])),
             "spec/chapter2.md section 1"),
        Step("(5)", "Time-stationary queue-length PGF", sp.Eq(P_, g["P"]), "Sopin 2013, eq. (5)"),
        Step("(5')", "Probability the server is not serving (on vacation)", sp.Eq(Pes, g["P_e"]), "Sopin 2013, eq. (5)"),
        Step("(6)", "Mean wait: residual vacation + other batches' work + own batch ahead",
             sp.Eq(W_, g["W"]), "Sopin 2013, eq. (6)"),
        Step("(7)", "Mean queue length (Little)", sp.Eq(N_, lam * l1 * W_), "Sopin 2013, eq. (7)"),
        Step("Var", "Variance of the queue length, P''(1) + N - N^2 (not in the thesis)",
             sp.Eq(Var_, g["variance"]), "derived here from (5)"),
    )
    checks = [
        Check("(3) Q(1) = 1 (general laws, exact)", _check_exact(lambda: g["Q(1)"], lambda: sp.Integer(1), "Q(1) = 1")),
        Check("(5) P(1) = 1 (general laws, exact)", _check_exact(lambda: g["P(1)"], lambda: sp.Integer(1), "P(1) = 1")),
        Check("(6),(7) P'(1) = lambda l1 W (general laws, exact)",
              _check_exact(lambda: g["N_derived"], lambda: g["N"], "P'(1) = lambda l1 W")),
        Check("M/G/1 special case = Pollaczek-Khinchine + Fuhrmann-Cooper", _mg1_special_case),
        Check("(2b), (3) embedded law vs GTH chain solve", _embedded_check),
    ]
    checks += [Check(f"N, Var, P_e vs CTMC oracle: {name}", _oracle_check(make, cap)) for name, make, cap in ORACLE_CASES]
    checks.append(Check("numpy vs mpmath evaluators agree", _twin_check))
    return Derivation(
        name="vacation-infinite",
        title="M[X]/G/1 with multiple vacations, infinite waiting room",
        source=SOURCE,
        steps=steps,
        checks=tuple(checks),
        results=dict(g),
        notes=(
            "General laws: service LST beta(s) with moments b1, b2, b3; vacation LST varphi(s) with f1, f2, f3; "
            "batch PGF L(z) with raw moments l1, l2, l3; rho_bar = lambda l1 b1.",
        ),
    )


# ----------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------


def add_law_arguments(parser: argparse.ArgumentParser, *, vacation_none: bool = False) -> None:
    """--batch, --service, --vacation, --load | --rate: shared by the vacation models."""
    parser.add_argument("--batch", required=True, metavar="LAW", help=f"batch-size law: {BATCH_LAW_HELP}")
    parser.add_argument("--service", required=True, metavar="LAW", help=f"service time: {TIME_LAW_HELP}")
    extra = " | none (no vacations)" if vacation_none else ""
    parser.add_argument("--vacation", required=True, metavar="LAW", help=f"vacation time: {TIME_LAW_HELP}{extra}")
    g = parser.add_mutually_exclusive_group(required=True)
    g.add_argument("--load", metavar="RHO", help="offered load rho_bar = lambda l1 b1")
    g.add_argument("--rate", metavar="LAMBDA", help="batch arrival rate lambda (batches per unit time)")


def rate_from_args(args, batch, service):
    """lambda from --rate, or from --load as rho_bar / (l1 b1)."""
    if args.rate is not None:
        return require_positive(parse_number(args.rate, "--rate"), "--rate")
    load = require_positive(parse_number(args.load, "--load"), "--load")
    return load / (batch.moment(1) * service.moment(1))


class _Command(ModelCommand):
    name = "vacation-infinite"
    summary = "M[X]/G/1 with multiple vacations, infinite waiting room (Sopin 2013, eqs. (2)-(7))"
    example_args = ("--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015",
                    "--vacation", "exp:mean=0.075", "--load", "0.6")

    def add_arguments(self, parser):
        add_law_arguments(parser)

    def build(self, args):
        batch = parse_batch_law(args.batch, "--batch")
        service = parse_time_law(args.service, "--service")
        vacation = parse_time_law(args.vacation, "--vacation")
        return VacationQueue(rate_from_args(args, batch, service), batch, service, vacation)

    def evaluate(self, model, digits, args):
        params = {"rate": model.lam, "load": model.rho_bar, "batch": args.batch, "service": args.service,
                  "vacation": args.vacation}
        return Evaluation(self.name, params, measures(model, digits))

    def derivation(self):
        return derivation()

    def closed_forms(self):
        from .codegen import ClosedForm

        exprs = _measure_exprs()
        return {k: ClosedForm(k, exprs[k], ARG_DOCS, MEASURE_DOCS[k], SOURCE) for k in MEASURE_KEYS}

    def simulate(self, model, args):
        from qderive.numeric.simulate import SimVacationModel

        return SimVacationModel(rate=model.lam, batch=model.batch, service=model.service,
                                vacation=model.vacation, capacity=None), {}


COMMAND = _Command()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
