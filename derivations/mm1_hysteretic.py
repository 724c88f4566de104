"""M|M|1 with bi-level hysteretic control: closed forms in lambda_0, lambda_1, mu and symbolic L, H, R.

``spec/other-models.md`` section B (seed 002). The CTMC is piecewise birth-death; the level
cuts (flow up across a level = flow down across it) give each mode's stationary
probabilities as geometric segments (:mod:`qderive.numeric.mm1_hysteretic`), so the masses
of S_0, S_1, S_2 are double geometric sums that SymPy evaluates in closed form for symbolic
thresholds (a ``Piecewise`` with the rho_s = 1 branches). From them, with pi(L,1) = 1:

    E tau_0 = M_0 / mu,   E tau_12 = (M_1 + M_2) / mu,   E tau = 1 / (mu pi(L,1)),   P(S_i) = M_i / M.

The checks substitute numbers into the closed forms (exact rationals) and compare them with
the CTMC solved by GTH and with first-passage times on it, at ``digits``.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from functools import lru_cache

import functools

import sympy as sp


from .cli_args import parse_number, parse_number_list
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits

__all__ = ["COMMAND", "MM1HystereticCommand", "closed_forms", "build_derivation", "SYMBOLS", "CHECK_POINTS"]

lam0, lam1, mu = sp.symbols("lambda_0 lambda_1 mu", positive=True)
rho0, rho1 = sp.symbols("rho_0 rho_1", positive=True)
L, H, R = sp.symbols("L H R", integer=True, positive=True)
j, k = sp.symbols("j k", integer=True)
SYMBOLS = {"lambda_0": lam0, "lambda_1": lam1, "mu": mu, "L": L, "H": H, "R": R}
_pi = sp.Function(r"\pi")
_CITE = "spec/other-models.md section B"


def _segments(r0, r1):
    """Unnormalised pi (pi(L,1) = 1) on each geometric segment, as SymPy Sums (r_s = rho_s)."""
    G0 = sp.Sum(r0 ** (-k), (k, 1, H - L + 1))
    z = sp.Sum(r1**k, (k, 0, H - L)) / sp.Sum(r1 ** (-k), (k, 1, R - H))
    return {
        "normal_low": r0 ** (j - L + 1) * G0,  # 0 <= j <= L-1
        "normal_high": sp.Sum(r0 ** (-k), (k, 1, H - j)),  # L-1 <= j <= H-1
        "overload_low": sp.Sum(r1**k, (k, 0, j - L)),  # L <= j <= H
        "overload_high": z * sp.Sum(r1 ** (-k), (k, 1, R - j)),  # H <= j <= R-1
        "discard": z,  # H+1 <= j <= R
    }


def _masses(r0, r1):
    """(M_0, M_1, M_2) as (double) Sums over the segments."""
    seg = _segments(r0, r1)
    M0 = sp.Sum(seg["normal_low"], (j, 0, L - 2)) + sp.Sum(seg["normal_high"], (j, L - 1, H - 1))
    M1 = sp.Sum(seg["overload_low"], (j, L, H - 1)) + sp.Sum(seg["overload_high"], (j, H, R - 1))
    return M0, M1, (R - H) * seg["discard"]


def _generic_branch(expr):
    """Replace each Piecewise produced by a geometric summation by its rho != 1 branch."""
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[-1].expr)


def _evaluate_sums(expr):
    """doit() from the innermost Sum outwards, keeping the generic branch at every level."""
    while expr.has(sp.Sum):
        inner = [s for s in expr.atoms(sp.Sum) if not s.function.has(sp.Sum)]
        expr = expr.xreplace({s: _generic_branch(s.doit()) for s in inner})
    return expr


def _tidy(expr):
    return sp.powsimp(sp.factor(sp.simplify(expr)), force=True)


@lru_cache(maxsize=1)
def closed_forms() -> dict:
    """Closed forms in lambda_0, lambda_1, mu and symbolic L, H, R (``Piecewise`` for lambda_s = mu).

    Keys: ``pi_normal_low`` (0 <= j <= L-1), ``pi_normal_high`` (L-1 <= j <= H-1),
    ``pi_overload_low`` (L <= j <= H), ``pi_overload_high`` (H <= j <= R-1), ``pi_discard``
    (H+1 <= j <= R): the stationary law in the symbol j, unnormalised with pi(L,1) = 1 (divide by
    M = M0 + M1 + M2); ``M0``, ``M1``, ``M2`` (masses of S_0, S_1, S_2), ``p_normal``,
    ``p_overload``, ``p_discard``, ``mean_normal_time``, ``mean_return_time``, ``mean_cycle_time``.
    Each sum is evaluated twice: with rho_s symbolic (generic branch) and with rho_s = 1.
    """
    generic = [_tidy(_evaluate_sums(m)) for m in _masses(rho0, rho1)]
    at_one = [_tidy(_evaluate_sums(m)) for m in _masses(sp.Integer(1), sp.Integer(1))]
    conds = (sp.Eq(lam0, mu), sp.Eq(lam1, mu), sp.Eq(lam1, mu))
    M0, M1, M2 = (
        sp.Piecewise((one, cond), (g.subs({rho0: lam0 / mu, rho1: lam1 / mu}), True))
        for g, one, cond in zip(generic, at_one, conds)
    )
    M = M0 + M1 + M2
    sub = {rho0: lam0 / mu, rho1: lam1 / mu}
    seg_generic = _segments(rho0, rho1)
    seg_one = _segments(sp.Integer(1), sp.Integer(1))
    cond = {"normal_low": conds[0], "normal_high": conds[0]}
    pi = {
        f"pi_{name}": sp.Piecewise(
            (_tidy(_evaluate_sums(seg_one[name])), cond.get(name, conds[1])),
            (_tidy(_evaluate_sums(expr)).subs(sub), True),
        )
        for name, expr in seg_generic.items()
    }
    return {
        **pi,
        "M0": M0,
        "M1": M1,
        "M2": M2,
        "p_normal": M0 / M,
        "p_overload": M1 / M,
        "p_discard": M2 / M,
        "mean_normal_time": M0 / mu,
        "mean_return_time": (M1 + M2) / mu,
        "mean_cycle_time": M / mu,
    }


@functools.lru_cache(maxsize=1)
def _cached_closed_forms() -> dict:
    return closed_forms()


def substitute(expr: sp.Expr, model) -> sp.Expr:
    """An exact number: ``expr`` at the model's rates and thresholds."""
    values = {lam0: model.rate0, lam1: model.rate1, mu: model.service_rate, L: model.L, H: model.H, R: model.R}
    value = expr.subs(values).doit()
    return value if value.is_Rational else sp.cancel(value)


def steps() -> tuple[Step, ...]:
    """The derivation (B0)-(B14): geometric segments of pi, masses as Sums, their closed forms, the measures."""
    seg = _segments(rho0, rho1)
    sums = _masses(rho0, rho1)
    cf = closed_forms()
    Ms = sp.symbols("M_0 M_1 M_2", positive=True)
    tau0, tau12, tau = sp.symbols(r"E\tau_0 E\tau_{12} E\tau", positive=True)
    return (
        Step("(B0)", "load per mode", sp.Eq(sp.Tuple(rho0, rho1), sp.Tuple(lam0 / mu, lam1 / mu)), _CITE),
        Step("(B1)", "normal mode, L-1 <= j <= H-1 (cut inside S_0: lambda_0 pi_j = mu pi_{j+1} + mu pi(L,1))",
             sp.Eq(_pi(j, 0), seg["normal_high"]), _CITE),
        Step("(B1')", "summed", sp.Eq(_pi(j, 0), cf["pi_normal_high"]), _CITE),
        Step("(B2)", "normal mode, 0 <= j <= L-1 (birth-death)", sp.Eq(_pi(j, 0), seg["normal_low"]), _CITE),
        Step("(B2')", "summed", sp.Eq(_pi(j, 0), cf["pi_normal_low"]), _CITE),
        Step("(B3)", "overload mode, L <= j <= H", sp.Eq(_pi(j, 1), seg["overload_low"]), _CITE),
        Step("(B3')", "summed", sp.Eq(_pi(j, 1), cf["pi_overload_low"]), _CITE),
        Step("(B4)", "overload mode, H <= j <= R-1", sp.Eq(_pi(j, 1), seg["overload_high"]), _CITE),
        Step("(B4')", "summed", sp.Eq(_pi(j, 1), cf["pi_overload_high"]), _CITE),
        Step("(B5)", "discard mode, H+1 <= j <= R: flat", sp.Eq(_pi(j, 2), seg["discard"]), _CITE),
        Step("(B5')", "summed", sp.Eq(_pi(j, 2), cf["pi_discard"]), _CITE),
        Step("(B6)", "mass of the normal mode", sp.Eq(Ms[0], sums[0]), _CITE),
        Step("(B7)", "mass of the overload mode", sp.Eq(Ms[1], sums[1]), _CITE),
        Step("(B8)", "mass of the discard mode", sp.Eq(Ms[2], sums[2]), _CITE),
        Step("(B9)", "M_0 summed", sp.Eq(Ms[0], cf["M0"]), _CITE),
        Step("(B10)", "M_1 summed", sp.Eq(Ms[1], cf["M1"]), _CITE),
        Step("(B11)", "M_2 summed", sp.Eq(Ms[2], cf["M2"]), _CITE),
        Step("(B12)", "mean normal-mode sojourn (pi(L,1) = 1)", sp.Eq(tau0, Ms[0] / mu), _CITE),
        Step("(B13)", "mean return time", sp.Eq(tau12, (Ms[1] + Ms[2]) / mu), _CITE),
        Step("(B14)", "mean control cycle = 1/(mu pi(L,1)) (renewal)", sp.Eq(tau, (Ms[0] + Ms[1] + Ms[2]) / mu), _CITE),
    )


#: parameter points of the checks (lambda_0, lambda_1, mu, L, H, R); the second and third hit rho_s = 1
CHECK_POINTS = (
    (Fraction(6, 5), Fraction(3, 5), 1, 3, 6, 9),
    (Fraction(1), Fraction(1, 2), 1, 2, 5, 8),
    (Fraction(3, 2), Fraction(1), 1, 4, 7, 12),
    (Fraction(1, 2), Fraction(1, 5), 1, 5, 10, 14),
)


def _model(point):
    from qderive.numeric.mm1_hysteretic import MM1HystereticModel

    return MM1HystereticModel(*point)


def ctmc_reference(model, digits: int) -> dict:
    """Measures of the CTMC by GTH and first passage (mpmath at ``digits + 20``), independent of the closed forms."""
    import mpmath

    from qderive.numeric.backend import mp_backend
    from qderive.numeric.chains import mean_hitting_times, stationary_gth
    from qderive.numeric.mm1_hysteretic import ctmc_rates

    states, Q = ctmc_rates(model)
    bk = mp_backend(digits + 20)
    with bk:
        pi = stationary_gth(Q, bk)
        out_rate = [mpmath.fsum(bk.num(r) for r in row) for row in Q]
        jump = [[bk.num(r) / out_rate[a] for r in row] for a, row in enumerate(Q)]
        hold = [1 / v for v in out_rate]
        normal = [a for a, s in enumerate(states) if s[1] == 0]
        rest = [a for a, s in enumerate(states) if s[1] != 0]
        entry = states.index((model.L - 1, 0))
        t0 = mean_hitting_times(jump, rest, hold, bk)[entry]
        back = mean_hitting_times(jump, normal, hold, bk)
        exit_state = states.index((model.H, 1))  # S_0 is always left to (H, 1)
        p = [mpmath.fsum(pi[a] for a, s in enumerate(states) if s[1] == x) for x in range(3)]
        return {
            "p_normal": p[0], "p_overload": p[1], "p_discard": p[2],
            "mean_normal_time": t0, "mean_return_time": back[exit_state],
            "mean_cycle_time": t0 + back[exit_state],
            "renewal_cycle_time": 1 / (bk.num(model.service_rate) * pi[states.index((model.L, 1))]),
        }


def _check_closed_forms(point):
    def run(digits):
        import mpmath

        model = _model(point)
        ref = ctmc_reference(model, digits)
        cf = closed_forms()
        worst = mpmath.inf
        with mpmath.workdps(digits + 20):
            for key in ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time",
                        "mean_cycle_time"):
                exact_value = substitute(cf[key], model)
                if not exact_value.is_Rational:
                    return False, None, f"{key} did not evaluate to a rational: {exact_value}"
                value = mpmath.mpf(exact_value.p) / exact_value.q
                worst = min(worst, agreement_digits(value, ref[key]))
        return worst >= digits, float(worst), f"rates {point[:3]}, thresholds {point[3:]}"

    return Check(f"closed forms = CTMC (GTH, first passage) at {point}", run)


def _check_numeric(point):
    def run(digits):
        from qderive.numeric.backend import mp_backend
        from qderive.numeric.mm1_hysteretic import measures

        model = _model(point)
        ref = ctmc_reference(model, digits)
        bk = mp_backend(digits + 10)
        with bk:
            got = measures(model, bk)
        keys = [k for k in got if k in ref]
        worst = min(agreement_digits(got[k], ref[k]) for k in keys)
        renewal = agreement_digits(ref["mean_cycle_time"], ref["renewal_cycle_time"])
        return min(worst, renewal) >= digits, min(worst, renewal), "positive recurrences and renewal identity"

    return Check(f"numeric recurrences = CTMC, E tau = 1/(mu pi(L,1)) at {point}", run)


def build_derivation(points=CHECK_POINTS) -> Derivation:
    """The registered derivation ``mm1-hysteretic``, its closed forms checked at ``points`` against the CTMC."""
    checks = [_check_closed_forms(p) for p in points] + [_check_numeric(p) for p in points[:2]]
    return Derivation(
        name="mm1-hysteretic",
        title="M|M|1 with bi-level hysteretic control: closed forms",
        source="seed 002 (hysteretic input-rate control), spec/other-models.md section B",
        steps=steps(),
        checks=tuple(checks),
        notes=("rho_s = lambda_s / mu. pi is unnormalised with pi(L,1) = 1; every segment is a geometric sum.",),
    )


class MM1HystereticCommand(ModelCommand):
    """``qderive eval mm1-hysteretic --rates L0,L1 --service-rate MU --thresholds L,H,R``."""

    name = "mm1-hysteretic"
    summary = "M|M|1 with bi-level hysteretic input control (closed forms): P(S_i), E tau_0, E tau_12, E tau"
    example_args = ("--rates", "1.2,0.6", "--service-rate", "1", "--thresholds", "3,6,9")

    def closed_forms(self):
        """The closed forms of :func:`closed_forms` for ``qderive codegen`` (rates and integer thresholds)."""
        from .codegen import ClosedForm

        forms = _cached_closed_forms()
        args = (
            (lam0, "lam0", "arrival rate lambda_0 in normal mode (customers per unit time)"),
            (lam1, "lam1", "arrival rate lambda_1 in overload mode, lambda_1 < lambda_0 (customers per unit time)"),
            (mu, "mu", "service rate (customers per unit time)"),
            (L, "L", "abatement threshold (integer, customers in the system)"),
            (H, "H", "overload onset threshold, L < H (integer)"),
            (R, "R", "discard threshold = capacity, H < R (integer)"),
        )
        docs = {
            "p_normal": "Time-stationary probability of normal mode P(S0).",
            "p_overload": "Time-stationary probability of overload mode P(S1).",
            "p_discard": "Time-stationary probability of discard mode P(S2).",
            "mean_normal_time": "Mean sojourn E tau_0 in normal mode (time).",
            "mean_return_time": "Mean return time E tau_12 from overload onset back to normal mode (time).",
            "mean_cycle_time": "Mean control-cycle time E tau = E tau_0 + E tau_12 (time).",
        }
        return {k: ClosedForm(k, forms[k], args, d, f"M|M|1 bi-level hysteresis, {_CITE}") for k, d in docs.items()}

    def simulate(self, model, args):
        """Instantaneous switching on the count (other-models.md B) in the simulator."""
        from qderive.numeric.simulate import SimHysteresisModel, SwitchingConvention
        from qderive.symbolic.batches import Constant
        from qderive.symbolic.laws import Exponential

        sim = SimHysteresisModel(model.rate0, model.rate1, Constant(1), Exponential(1 / model.service_rate),
                                 (model.L, model.H, model.R), SwitchingConvention.INSTANT)
        return sim, {}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rates", required=True, metavar="LAMBDA0,LAMBDA1",
                            help="arrival rates in normal and overload mode (lambda_1 < lambda_0)")
        parser.add_argument("--service-rate", required=True, metavar="MU", help="service rate mu")
        parser.add_argument("--thresholds", required=True, metavar="L,H,R", help="L < H < R, R = capacity")

    def build(self, args):
        from qderive.numeric.mm1_hysteretic import MM1HystereticModel

        from .hysteretic import parse_thresholds

        r0, r1 = parse_number_list(args.rates, "--rates", count=2)
        return MM1HystereticModel(r0, r1, parse_number(args.service_rate, "--service-rate"),
                                  *parse_thresholds(args.thresholds))

    def evaluate(self, model, digits, args) -> Evaluation:
        from qderive.numeric.backend import FLOAT64, mp_backend
        from qderive.numeric.mm1_hysteretic import measures

        bk = FLOAT64 if digits is None else mp_backend(digits + 10)  # positive recurrences: no escalation needed
        with bk:
            values = measures(model, bk)
        params = {"rate0": model.rate0, "rate1": model.rate1, "service_rate": model.service_rate,
                  "L": model.L, "H": model.H, "R": model.R}
        return Evaluation("mm1-hysteretic", params, values)

    def derivation(self):
        return build_derivation()


COMMAND = MM1HystereticCommand()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if build_derivation().report(40) else 1)
