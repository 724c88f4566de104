"""The composed start of a busy period, derived from the blocks: Y(z), (B1), (B2) and the mean wait in symbols.

The blocks of :mod:`qderive.symbolic.blocks` run here on two symbolic interpreters of their primitives:

* :class:`PgfPassage` -- the PGF Y(z) of the number present at the first service start (start threshold N = 1,
  general laws: close-down C with LST delta(s), vacations with varphi(s), setup S with sigma(s));
* :class:`SymbolicPassage` -- the numeric engine's factorial-moment interpreter
  (:class:`~qderive.numeric.engines.blocks.MomentPassage`) over SymPy numbers: the same code that evaluates
  ``qderive eval`` computes E[Y], E[Y(Y-1)] and the mean wait W in symbols.

The steps are appended to the ``vacation-infinite`` derivation; the checks prove that the two interpreters agree
(Y'(1), Y''(1)), that today's rules give the thesis's (6), and that the classical results of the literature
follow: Yadin and Naor's N-policy, Takagi's setup time, Fuhrmann and Cooper's decomposition.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy as sp

from ..numeric.engines.blocks import GeneratingPassage, MomentPassage, measures
from ..symbolic.blocks import CloseDown, MultipleVacations, NoVacation, Setup, SingleVacation
from ..symbolic.closed_forms import vacation_infinite as VI
from ..symbolic.laws.general import GeneralTime
from .framework import Check, Step, agreement_digits

__all__ = ["PgfPassage", "SymbolicPassage", "SympyContext", "GeneralModel", "block_steps", "block_checks",
           "symbolic_measures", "first_service_pgf", "DOWN", "SETUP"]

z, lam = VI.z, VI.lam
#: the close-down C (LST delta, moments d_k) and the setup S (LST sigma, moments s_k)
DOWN = GeneralTime("delta", "d")
SETUP = GeneralTime("sigma", "s")


class SympyContext:
    """The arithmetic context of the moment interpreter over SymPy expressions (exact numbers as Rationals)."""

    is_float64 = False
    eps = 0
    dps = None
    name = "sympy"

    def num(self, value):
        if isinstance(value, Fraction):
            return sp.Rational(value.numerator, value.denominator)
        return sp.Integer(value) if isinstance(value, int) else value

    def zeros(self, n):
        out = np.empty(n, dtype=object)
        out.fill(sp.Integer(0))
        return out

    def dot(self, a, b):
        """An exact inner product (the kernels' ``ctx.dot``; SymPy's sum rounds nothing)."""
        return sp.Add(*[x * y for x, y in zip(a, b)])


@dataclass(frozen=True)
class GeneralModel:
    """The model the symbolic interpreters read: batch rate lambda, a batch law, a service law (general or not)."""

    rate: object
    batch: object
    service: object

    @property
    def rho_bar(self):
        return self.rate * self.batch.mean * self.service.moment(1)


class SymbolicPassage(MomentPassage):
    """The numeric engine's moment interpreter over symbols: a period of law L has no arrival with probability
    L*(lambda) (its LST at lambda); below N the batch law's probabilities (concrete batches only when N > 1)."""

    def __init__(self, model, ctx, top: int, order: int = 3):
        self.model, self.ctx, self.top, self.order = model, ctx, max(top, 1), order
        self.zero = sp.Integer(0)
        self.lam = model.rate
        batch = model.batch
        self.batch = [sp.Integer(1)] + [batch.factorial_moment(j) / sp.factorial(j) for j in range(1, order + 1)]
        self.xi = [self.zero] + self.batch[1:]
        x = self.ctx.zeros(self.top + 1)
        if self.top > 1:
            for i in range(1, self.top + 1):
                x[i] = self.ctx.num(batch.pmf(i))
        self.x = x
        self.times = [self.zero] * (order + 1)
        self.served = [self.zero] * (order + 1)
        self.ends, self.empty_ends = self.zero, self.zero
        self._pending = None
        self._counts = {}

    def counts(self, law):
        if self.top > 1:
            raise NotImplementedError("a vacation or setup below a threshold N > 1 has no closed form here")
        a0 = law.lst(self.lam)
        a = self.ctx.zeros(1)
        a[0] = a0
        return a, 1 - a0, (1 - a0) / self.lam


class PgfPassage(GeneratingPassage):
    """The primitives on PGFs (start threshold 1): the numeric engine's generating-function interpreter
    (:class:`~qderive.numeric.engines.blocks.GeneratingPassage`, the same code that evaluates the transform of the
    wait) over SymPy, with X = X(z), A_L = L*(lambda - lambda X(z)) and the no-arrival probability L*(lambda)."""

    def __init__(self, batch):
        self.X = batch.pgf(z)
        self.served = sp.Integer(0)

    def arrivals(self, law):
        return law.lst(lam - lam * self.X)

    def idle(self, law):
        return law.lst(lam)

    def start(self):
        return sp.Integer(1), sp.Integer(1)


def _composed(rule_cls):
    rule = rule_cls(1) if rule_cls is NoVacation else rule_cls(1, VI.VACATION)
    return (CloseDown(DOWN), rule, Setup(SETUP))


def first_service_pgf(blocks, batch=VI.BATCH):
    """Y(z) of ``blocks`` (threshold 1, general laws allowed) by the PGF interpreter."""
    from ..symbolic.blocks import passage

    return passage(blocks, PgfPassage(batch))


def symbolic_measures(blocks, batch=VI.BATCH, service=VI.SERVICE) -> dict:
    """The infinite room's measures of ``blocks`` in symbols (lambda, the laws' moments and LSTs at lambda): the
    numeric engine's formulas over SymPy numbers."""
    return _moments(blocks, batch, service)[1]


def _y_pgf(blocks):
    from ..symbolic.blocks import passage

    return passage(blocks, PgfPassage(VI.BATCH))


@functools.lru_cache(maxsize=32)
def _moments(blocks, batch=VI.BATCH, service=VI.SERVICE):
    """(Y series, measures) of ``blocks`` in symbols, kept: the steps and the checks ask for the same blocks."""
    from ..numeric.engines.blocks import passage_moments

    model = GeneralModel(lam, batch, service)
    Y, op = passage_moments(model, SympyContext(), blocks, SymbolicPassage)
    return Y, measures(model, SympyContext(), blocks, SymbolicPassage)


def decomposition(Y):
    """W - W_none = (E[Y(Y-1)] / (2 E[Y]) - (l_2 - l_1) / (2 l_1)) / (lambda l_1) from the series of Y (module
    docstring of :mod:`qderive.symbolic.blocks.base`); the checks compare it with the engine's mean wait."""
    return sp.factor(sp.cancel((Y[2] / Y[1] - (VI.l2 - VI.l1) / (2 * VI.l1)) / (lam * VI.l1)))


def residual_factor(blocks):
    """V_r(s) = lambda l_1 (1 - Y(s)) / (E[Y] s) (start threshold 1): the factor of the wait's LST that the idle
    period adds, W(s) = W_b(s) J(s) V_r(s) (Fuhrmann and Cooper 1985): every block with threshold 1 depends on z
    through L(z) only, Y(z) = Y_b(L(z)) with Y_b the number of batches present at the first service; the batches,
    served as super-customers, form an M/G/1 queue with generalized vacations whose delay is the classic one plus
    an independent residual of LST (1 - Y_b(u)) / (E[Y_b] (1 - u)), u = 1 - s / lambda, which is V_r(s); the
    customer then waits for its batchmates ahead (J). Y(s) is Y(z) with L(z) = 1 - s / lambda. (Not from
    Pi(z) = W(s) A(z) R(z): the batchmates behind are independent of the wait for geometric batches only.)"""
    from ..symbolic.closed_forms.vacation_wait import s

    from sympy.core.function import AppliedUndef

    Ys = _y_pgf(blocks).subs(VI.BATCH.pgf(z), 1 - s / lam)
    Ys = Ys.replace(lambda e: isinstance(e, AppliedUndef), lambda e: e.func(*[sp.expand(a) for a in e.args]))
    series, _ = _moments(blocks)
    return lam * VI.l1 * (1 - sp.expand(Ys)) / (series[1] * s), series, Ys


def block_steps(notation: tuple = ()) -> tuple:
    """The steps of the composed structure (close-down, multiple vacations, setup; general laws); ``notation``: the
    derivation's abbreviations (the paper forms add the named results they refer to)."""
    Pi, P, Y, A, X = (sp.Function(n)(z) for n in (r"\Pi", "P", "Y", "A", "L"))
    pi0, EY, W, Wn = sp.symbols(r"\pi_0 E[Y] W W_{none}")
    blocks = _composed(MultipleVacations)
    Yz = _y_pgf(blocks)
    series, values = _moments(blocks)
    rho = VI.lam * VI.l1 * VI.b1
    none = VI.general_results("none")["W"]
    delta, phi = DOWN.lst(lam), VI.VACATION.lst(lam)
    f1, f2, s1, s2 = VI.f1, VI.f2, SETUP.moment(1), SETUP.moment(2)
    mean_y = sp.factor(series[1])
    cite = "[@takagi1991, sec. 2.5]"
    from ..symbolic.closed_forms.vacation_wait import s as VS

    residual = lam * VI.l1 * (1 - sp.Function("Y")(VS)) / (EY * VS)
    y_of_s = sp.collect(sp.expand(residual_factor(blocks)[2]), delta)
    return (
        Step("(B1)", "The number left behind by a departure: the embedded chain at departures, with $Y$ the number "
             "present when the first service of a busy period starts", sp.And(
                 sp.Eq(Pi * (z - A), pi0 * A * (Y - 1)), sp.Eq(pi0, (1 - rho) / EY)), cite,
             computed=True),
        Step("(B2)", "Level crossing with Poisson batches: the time-stationary number in the system", sp.Eq(
            P, Pi * VI.l1 * (1 - z) / (1 - X)), "[@takagi1991, sec. 2.2]", computed=True),
        Step("(Y)", r"The first-service law of a close-down $C$, multiple vacations and a setup $S$: a batch that "
             r"arrives during the close-down is served at once (probability $1 - \delta(\lambda)$)", sp.Eq(Y, Yz),
             cite, computed=True),
        Step("(EY)", "Its mean, from the moment series of the blocks", sp.Eq(EY, mean_y), "", computed=True,
             paper=sp.Eq(EY, VI.l1 * (1 - delta) + delta * lam * VI.l1 * (f1 / (1 - phi) + s1))),
        Step("(WS)", r"The transform of the wait: the wait without vacations, the customer's own batch ahead of it, "
             r"and the residual of the idle period (threshold $N = 1$: $Y$ depends on $z$ through $L(z)$ only)",
             sp.And(sp.Eq(sp.Function("W")(VS), sp.Function("W_b")(VS) * sp.Function("J")(VS) * residual),
                    sp.Eq(sp.Function("Y")(VS), y_of_s)),
             "[@fuhrmann_cooper1985]", computed=True,
             paper=sp.And(sp.Eq(sp.Function("W")(VS), sp.Function("W_b")(VS) * sp.Function("J")(VS) * residual),
                          sp.Eq(sp.Function("Y")(VS), (1 - delta) * (1 - VS / lam) + delta * SETUP.lst(VS)
                                * (VI.VACATION.lst(VS) - phi) / (1 - phi)))),
        _n_policy_step(EY),
        Step("(WB)", "The mean wait: the wait without vacations and the equilibrium of $Y$ less the batch's own "
             "(the decomposition of Fuhrmann and Cooper)", sp.Eq(W, Wn + decomposition(series)),
             "[@fuhrmann_cooper1985]", computed=True,
             paper=sp.Eq(W, Wn + lam * VI.l1 * delta * (f2 + 2 * f1 * s1 + s2 * (1 - phi)) / (2 * (1 - phi) * EY)),
             notation=tuple(notation) + ((EY, mean_y), (Wn, none))),
    )


def _n_policy_step(EY):
    """(WN): the wait's transform with a start threshold N > 1 (:mod:`qderive.numeric.engines.blocks_threshold`),
    checked by ``verify`` against Yadin and Naor's mean and the tagged customer's chain
    (:func:`qderive.derivations.block_checks.n_policy_wait`)."""
    from ..symbolic.closed_forms.vacation_wait import s as VS
    from .block_checks import n_policy_wait

    beta = VI.SERVICE.lst(VS)
    batch = VI.BATCH.pgf(beta)
    phi = VS - lam * (1 - batch)
    rho = lam * VI.l1 * VI.b1
    W = sp.Function("W")(VS)
    value = lam * (1 - rho) / EY * ((1 - batch) / (1 - beta) * (1 - sp.Function("Y")(beta)) / phi
                                    + sp.Function("I")(VS))
    return Step("(WN)", r"The transform of the wait under the N-policy ($N > 1$, where a customer waits for later "
                r"batches): the tagged batch finds the server serving (the work present, from the workload of a busy "
                r"period started by $Y$ customers) or not ($I(s)$: the rest of the idle passage, counting the later "
                r"arrivals up to $N$, then the services ahead of it)", sp.Eq(W, value), "[@takagi1991, sec. 2.5]",
                check=n_policy_wait)


def _zero(expr):
    """True when the rational expression ``expr`` is identically 0 (cancel, then expand: no simplify heuristics)."""
    return sp.expand(sp.cancel(sp.together(expr))) == 0




def block_checks() -> tuple:
    """The checks of the composed structure (each one a separate computation, run by ``verify``)."""
    checks = []
    for rule_cls in (NoVacation, MultipleVacations, SingleVacation):
        checks.append(Check(f"$Y'(1)$, $Y''(1)$ of the PGF interpreter = the moment series ({rule_cls.title})",
                            functools.partial(_interpreters_agree, rule_cls)))
    for policy, rule_cls in (("none", NoVacation), ("multiple", MultipleVacations), ("single", SingleVacation)):
        checks.append(Check(f"the blocks' mean wait = the thesis's (6) ({policy})",
                            functools.partial(_thesis_wait, policy, rule_cls)))
    checks.append(Check("the engine's mean wait = $W_{\\mathrm{none}}$ + the decomposition (WB), at random rational "
                        "points",
                        _decomposition_check))
    checks.append(Check("(WS): $-W'(0)$ of the transform = the engine's mean wait (exact)", _transform_mean))
    checks.append(Check("Takagi's setup time: "
                        "$W = \\lambda b_2/(2(1-\\rho)) + (2 s_1 + \\lambda s_2)/(2(1 + \\lambda s_1))$",
                        _takagi))
    checks.append(Check("Yadin and Naor's $N$-policy: $L = \\rho/(1-\\rho) + (N-1)/2$, $N = 1, \\dots, 5$",
                        _yadin_naor))
    checks.append(Check("the blocks' symbolic mean wait at a rational point = the block chain", _against_chain))
    return tuple(checks)


def _proved(left, right, substitute=VI.substitute_moments):
    difference = substitute(left) - substitute(right)
    zero = all(_zero(d) for d in (difference if isinstance(difference, sp.MatrixBase) else [difference]))
    return zero, float("inf") if zero else None, "proved equal by SymPy"


def _interpreters_agree(rule_cls, digits):
    blocks = _composed(rule_cls)
    series, _ = _moments(blocks)
    Yz = _y_pgf(blocks)
    derivatives = sp.Matrix([sp.diff(Yz, z).subs(z, 1), sp.diff(Yz, z, 2).subs(z, 1) / 2])
    return _proved(derivatives, sp.Matrix(series[1:3]), _substitute_all)


def _thesis_wait(policy, rule_cls, digits):
    rule = rule_cls(1) if rule_cls is NoVacation else rule_cls(1, VI.VACATION)
    _, values = _moments((rule,))
    thesis = VI.general_results(policy)["W"].subs(VI.c0, VI.VACATION.lst(lam))
    return _proved(values["mean_wait"], thesis)


def _substitute_all(expr):
    out = VI.substitute_moments(expr)
    for law in (DOWN, SETUP):
        out = law.substitute_moments(out)
    return out


def _decomposition_check(digits):
    """The moment interpreter's mean wait (the engine's formulas) against W_none + (WB), both rational functions of
    the symbols, compared exactly at three random rational points (Schwartz-Zippel: a nonzero rational function of
    degree <= 60 vanishes at a random point of a grid of 10^9 values per symbol with probability <= 6e-8; cancelling
    the difference symbolically takes about 10 s)."""
    import random

    rng = random.Random(2026)
    blocks = _composed(MultipleVacations)
    series, values = _moments(blocks)
    claim = VI.general_results("none")["W"] + decomposition(series)
    left, right = _substitute_all(values["mean_wait"]), _substitute_all(claim)
    symbols = sorted(left.free_symbols | right.free_symbols, key=str)
    functions = sorted({f for e in (left, right) for f in e.atoms(sp.Function)}, key=str)
    for _ in range(3):
        point = {x: sp.Rational(rng.randint(1, 10**9), 10**9) for x in symbols + functions}
        if sp.nsimplify(left.subs(point)) != sp.nsimplify(right.subs(point)):
            return False, None, f"differ at {point}"
    return True, float("inf"), "equal exactly at 3 random rational points"


def _transform_mean(digits):
    """-V_r'(0) = W - W_none: the residual factor's mean against the moment interpreter's (the two are computed
    from Y(z) and from the series of Y)."""
    from ..symbolic.closed_forms.vacation_wait import s
    from ..symbolic.pgf import derivatives_at

    blocks = _composed(MultipleVacations)
    residual, series, _ = residual_factor(blocks)
    value, slope = derivatives_at(residual, s, 0, 1, _substitute_all)
    ok = _zero(value - 1) and _zero(-slope - decomposition(series))
    return ok, float("inf") if ok else None, "V_r(0) = 1 and -V_r'(0) = the decomposition (WB), proved by SymPy"


def _takagi(digits):
    from ..symbolic.batches.finite import Constant

    _, values = _moments((NoVacation(1), Setup(SETUP)), batch=Constant(1))
    b1, b2, s1, s2 = VI.b1, VI.b2, SETUP.moment(1), SETUP.moment(2)
    rho = lam * b1
    takagi = lam * b2 / (2 * (1 - rho)) + (2 * s1 + lam * s2) / (2 * (1 + lam * s1))
    ok = _zero(values["mean_wait"] - takagi)
    return ok, float("inf") if ok else None, "[@takagi1991, sec. 2.4] proved equal by SymPy"


def _yadin_naor(digits):
    from ..symbolic.batches.finite import Constant
    from ..symbolic.laws.gamma import Exponential

    mu = sp.Symbol("mu", positive=True)
    service = Exponential(Fraction(1))  # moments 1, 2, 6 at mu = 1: lambda stays a symbol (rho = lambda)
    for N in range(1, 6):
        _, values = _moments((NoVacation(N),), batch=Constant(1), service=service)
        L = values["mean_number_in_system"]
        if not _zero(L - (lam / (1 - lam) + sp.Rational(N - 1, 2))):
            return False, None, f"N = {N}"
    del mu
    return True, float("inf"), "[@yadin1963] proved equal by SymPy for N = 1..5 (mu = 1)"


def _against_chain(digits):
    from ..numeric.oracles.blocks import chain_measures
    from ..symbolic.batches.finite import Constant
    from ..symbolic.laws.gamma import Erlang, Exponential
    from ..symbolic.models.vacation import VacationPolicy, VacationQueue

    rate = Fraction(1, 3)
    down, vac, setup, service = Exponential(Fraction(1, 4)), Exponential(Fraction(1)), Erlang(2, Fraction(1, 2)), \
        Exponential(Fraction(1))
    model = VacationQueue(rate, Constant(1), service, vac, VacationPolicy.MULTIPLE, 1, setup, down)
    _, values = _moments(_composed(MultipleVacations))
    point = {lam: sp.Rational(1, 3), VI.l1: 1, VI.l2: 1, VI.l3: 1}
    for law, concrete in ((VI.SERVICE, service), (VI.VACATION, vac), (DOWN, down), (SETUP, setup)):
        point.update({law.moment(k): sp.Rational(concrete.moment(k).numerator, concrete.moment(k).denominator)
                      for k in (1, 2, 3)})
        point[law.lst(lam)] = concrete.lst(sp.Rational(1, 3))
    exact = sp.nsimplify(_substitute_all(values["mean_wait"]).subs(point))
    chain = chain_measures(model, digits=digits)["mean_wait"]
    import mpmath

    with mpmath.workdps(digits + 10):
        agreed = agreement_digits(mpmath.mpf(sp.Rational(exact).p) / sp.Rational(exact).q, chain)
    return agreed >= digits - 5, agreed, f"W = {sp.Rational(exact)} exactly; the chain at {digits} digits"
