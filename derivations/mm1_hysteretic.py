"""M|M|1 with bi-level hysteretic control: closed forms in lambda_0, lambda_1, mu and symbolic L, H, R.

``docs/theory/other-models.md`` section B (seed 002; the exponential case of Sopin 2013, chapter 3,
with instantaneous switching). The CTMC is piecewise birth-death: the level cuts give each
mode's stationary law as a geometric segment ((B1)-(B5), evaluated by ``qderive verify``
with the stationary law of the CTMC built from the model's definition,
:func:`qderive.numeric.oracles.hysteretic.mm1`), the masses of S_0, S_1, S_2 are (double)
geometric sums ((B6)-(B8), evaluated the same way) that SymPy sums for symbolic thresholds
((B9)-(B11), computed; :mod:`qderive.symbolic.closed_forms.mm1_hysteretic`), and with
pi(L, 1) = 1 the cycle measures are ratios of masses ((B12)-(B14), evaluated with the
CTMC's first-passage times). The checks compare the closed forms with the CTMC solved
*exactly* (rational GTH and first passage) and the engine's positive recurrences with it.

``python -m qderive.derivations.mm1_hysteretic`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import sympy as sp

from ..symbolic.capabilities import declare
from ..symbolic.closed_forms import mm1_hysteretic as CF
from ..symbolic.models.hysteretic import MM1HystereticMeasures, MM1HystereticModel
from .framework import Check, Derivation, Step, agreement_digits, relation_check

__all__ = ["derivation", "codegen_forms", "CHECK_POINTS", "RECURSIONS", "level_law"]

_CITE = "[@pechinkin_sip]"
_WHERE = "docs/theory/other-models.md section B"
lam0, lam1, mu, rho0, rho1 = CF.lam0, CF.lam1, CF.mu, CF.rho0, CF.rho1
L, H, R, j = CF.L, CF.H, CF.R, CF.j
_pi = sp.Function(r"\pi")
_M = sp.symbols("M_0 M_1 M_2", positive=True)
_tau0, _tau12, _tau = sp.symbols(r"E\tau_0 E\tau_{12} E\tau", positive=True)

#: (lambda_0, lambda_1, mu, L, H, R) of the checks: generic, rho_0 = 1, rho_1 = 1, light load, the pure discard
#: hysteresis (lambda_1 = lambda_0) and complete blocking (lambda_1 = 0)
CHECK_POINTS = (
    (F(6, 5), F(3, 5), 1, 3, 6, 9),
    (F(1), F(1, 2), 1, 2, 5, 8),
    (F(3, 2), F(1), 1, 4, 7, 12),
    (F(1, 2), F(1, 5), 1, 5, 10, 14),
    (F(3, 2), F(3, 2), 1, 2, 4, 6),
    (F(3, 2), F(0), 1, 2, 4, 6),
)


# -- the reference recursion of the LaTeX export (latexify-py renders it) -------------------------------------


def level_law(r0, r1, L, H, R):
    r"""$\pi(j, s)$ with $\pi(L, 1) = 1$ from the level cuts, as positive recurrences (the form for $\rho_1 > 0$;
    the kernel writes the segment above $H$ in powers of $\rho_1$ when $\rho_1 < 1$, which includes $\rho_1 = 0$)."""
    normal = [0] * H
    normal[H - 1] = 1 / r0
    for j in range(H - 2, L - 2, -1):
        normal[j] = (normal[j + 1] + 1) / r0
    for j in range(L - 2, -1, -1):
        normal[j] = normal[j + 1] / r0
    over = [0] * (R + 1)
    over[L] = 1
    for j in range(L, H):
        over[j + 1] = r1 * over[j] + 1
    v = [0] * (R + 1)
    v[R - 1] = 1 / r1
    for j in range(R - 2, H - 1, -1):
        v[j] = (v[j + 1] + 1) / r1
    z = over[H] / v[H]
    for j in range(H + 1, R):
        over[j] = z * v[j]
    return normal, over, z


level_law.latex_names = {"normal": r"\pi^{(0)}", "over": r"\pi^{(1)}", "v": "v"}

RECURSIONS = (("The stationary law of $M/M/1$ with hysteresis, by level cuts (positive terms)", level_law),)


# -- the steps -----------------------------------------------------------------------------------------------------

_SEG = CF.segments(rho0, rho1)
_MASSES = CF.masses(rho0, rho1)
_RANGES = {  # the index range of each segment (other-models.md B)
    "(B1)": ("normal_high", 0, lambda m: range(m.L - 1, m.H)),
    "(B2)": ("normal_low", 0, lambda m: range(0, m.L)),
    "(B3)": ("overload_low", 1, lambda m: range(m.L, m.H + 1)),
    "(B4)": ("overload_high", 1, lambda m: range(m.H, m.R)),
    "(B5)": ("discard", 2, lambda m: range(m.H + 1, m.R + 1)),
}
_TITLES = {
    "(B1)": r"The normal mode, $L-1 \le j \le H-1$ (the cut inside $\mathcal{S}_0$: $\lambda_0 \pi(j,0) = "
            r"\mu \pi(j+1,0) + \mu \pi(L,1)$)",
    "(B2)": r"The normal mode, $0 \le j \le L-1$ (birth and death)",
    "(B3)": r"The overload mode, $L \le j \le H$",
    "(B4)": r"The overload mode, $H \le j \le R-1$ (nonnegative powers of $\rho_1$, so that $\lambda_1 = 0$ "
            "is included)",
    "(B5)": r"The discard mode, $H+1 \le j \le R$: the law is flat",
}


@functools.lru_cache(maxsize=8)
def _oracle(point, digits):
    """The CTMC of the model at ``point`` solved at ``digits + 10`` digits (pi normalised to pi(L,1) = 1)."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.hysteretic import mm1

    model = MM1HystereticModel(*point)
    ctx = mp_context(digits + 10)
    with ctx:
        o = mm1(model, ctx)
        scale = o.pi[(model.L, 1)]
        pi = {st: v / scale for st, v in o.pi.items()}
        M = [mpmath.fsum(v for st, v in pi.items() if st[1] == s) for s in range(3)]
    return model, o, pi, M


def _env(point, digits):
    model, o, pi, M = _oracle(point, digits)
    env = {lam0: model.rate0, lam1: model.rate1, mu: model.service_rate, rho0: model.rate0 / model.service_rate,
           rho1: model.rate1 / model.service_rate, L: model.L, H: model.H, R: model.R,
           _pi: lambda jj, ss: pi.get((int(jj), int(ss)), 0),
           _M[0]: M[0], _M[1]: M[1], _M[2]: M[2],
           _tau0: o.measures["mean_normal_time"], _tau12: o.measures["mean_return_time"],
           _tau: o.measures["mean_cycle_time"]}
    return model, env


def _points_hook(relation, ranges=None, points=CHECK_POINTS):
    """Evaluate ``relation`` as displayed at every check point (the CTMC's values bound to its symbols)."""

    def run(digits):
        worst, count = math.inf, 0
        for point in points:
            model, env = _env(point, digits)
            rng = {} if ranges is None else {j: ranges(model)}
            if ranges is not None and not list(rng[j]):
                continue
            _, agreed, _ = relation_check(relation, lambda d, env=env, rng=rng: (env, rng))(digits)
            worst, count = min(worst, agreed), count + 1
        return worst >= digits - 5, worst, f"evaluated as displayed at {count} points with the CTMC's law"

    return run


#: the geometric sums of (B1)-(B5) as the literature writes them (the generic case; the case rho_s = 1 as derived)
_PAPER_SUMS = {
    "(B1)": (1 - rho0 ** (j - H)) / (rho0 - 1),
    "(B2)": rho0 ** (j - L + 1) * (1 - rho0 ** (L - H - 1)) / (rho0 - 1),
    "(B3)": (1 - rho1 ** (j - L + 1)) / (1 - rho1),
    "(B4)": (1 - rho1 ** (H - L + 1)) * (rho1 ** (j - H) - rho1 ** (R - H)) / ((1 - rho1) * (1 - rho1 ** (R - H))),
    "(B5)": rho1 ** (R - H) * (1 - rho1 ** (H - L + 1)) / (1 - rho1 ** (R - H)),
}
_PAPER_EQUAL = {"(B4)": (R - j) * (H - L + 1) / (R - H), "(B5)": (H - L + 1) / (R - H),
                "(B10)": (H - L + 1) * (R - L + 1) / 2}
#: the masses M_0, M_1 in closed form as a paper writes them (generic case)
_PAPER_SUMS["(B9)"] = (H - L + 1) / (rho0 - 1) - (rho0 ** (1 - L) - rho0 ** (-H)) / (rho0 - 1) ** 2
_PAPER_SUMS["(B10)"] = ((H - L + 1) - (R - L + 1) * rho1 ** (R - H) + (R - H) * rho1 ** (R - L + 1)) / (
    (1 - rho1) * (1 - rho1 ** (R - H)))


def _paper_sum(label, derived):
    """The paper form of a summed segment: the derived cases, each value as the literature writes it (proved equal
    before it is printed, :mod:`.export.forms`)."""
    (equal, cond), (_, otherwise) = derived.rhs.args
    return sp.Eq(derived.lhs, sp.Piecewise((_PAPER_EQUAL.get(label, equal), cond), (_PAPER_SUMS[label], otherwise)))


def steps() -> tuple:
    """(B1)-(B14): the segments (evaluated), their sums (computed), the masses and the cycle measures."""
    cf = CF.closed_forms()
    out = []
    for label, (name, s, rng) in _RANGES.items():
        out.append(Step(label, _TITLES[label], sp.Eq(_pi(j, s), _SEG[name]), _CITE, provenance=_WHERE,
                        check=_points_hook(sp.Eq(_pi(j, s), _SEG[name]), rng)))
        derived = sp.Eq(_pi(j, s), cf[f"pi_{name}"])
        out.append(Step(label[:-1] + "')", r"Its sum over the segment (a separate case for $\rho_s = 1$)",
                        derived, "", provenance=_WHERE, computed=True, paper=_paper_sum(label, derived)))
    for n, (label, what) in enumerate((("(B6)", "normal"), ("(B7)", "overload"), ("(B8)", "discard"))):
        rel = sp.Eq(_M[n], _MASSES[n])
        out.append(Step(label, f"The mass of the {what} mode", rel, _CITE, provenance=_WHERE,
                        check=_points_hook(rel)))
    for n, label in enumerate(("(B9)", "(B10)", "(B11)")):
        derived = sp.Eq(_M[n], cf[f"M{n}"])
        out.append(Step(label, f"The mass $M_{n}$ in closed form", derived, "", provenance=_WHERE, computed=True,
                        paper=_paper_sum(label, derived) if label in _PAPER_SUMS else None))
    for label, title, rel in (
        ("(B12)", r"The mean normal-mode sojourn (with $\pi(L,1) = 1$)", sp.Eq(_tau0, _M[0] / mu)),
        ("(B13)", "The mean return time", sp.Eq(_tau12, (_M[1] + _M[2]) / mu)),
        ("(B14)", r"The mean control cycle, $1/(\mu \pi(L,1))$ by renewal", sp.Eq(_tau, (_M[0] + _M[1] + _M[2]) / mu)),
    ):
        out.append(Step(label, title, rel, _CITE, provenance=_WHERE, check=_points_hook(rel)))
    return tuple(out)


# -- the checks ----------------------------------------------------------------------------------------------------


def _exact_oracle(point):
    from ..numeric.backend import FractionContext
    from ..numeric.oracles.hysteretic import mm1

    model = MM1HystereticModel(*point)
    return model, mm1(model, FractionContext())


def _check_closed_forms_exact(digits):
    """Every closed-form measure at every check point = the CTMC solved in rationals (GTH, first passage)."""
    cf = CF.closed_forms()
    for point in CHECK_POINTS:
        model, o = _exact_oracle(point)
        for key in CF.MEASURE_KEYS:
            value = CF.substitute(cf[key], model)
            if not value.is_Rational or F(int(value.p), int(value.q)) != o.measures[key]:
                return False, None, f"{key} at {point}: closed form {value} != CTMC {o.measures[key]}"
        if o.extra["renewal"] != o.measures["mean_cycle_time"]:
            return False, None, f"renewal identity E tau = 1/(mu pi(L,1)) fails on the CTMC at {point}"
    return True, math.inf, f"{len(CF.MEASURE_KEYS)} measures exactly equal at {len(CHECK_POINTS)} points"


def _check_engine(digits):
    """The engine's positive recurrences (under the precision policy) = the CTMC at ``digits``."""
    worst = math.inf
    for point in CHECK_POINTS:
        model, o, _, _ = _oracle(point, digits)
        e = model.evaluate(digits).as_dict()
        for key, ref in o.measures.items():
            if ref == 0:
                if e[key] != 0:
                    return False, None, f"{key} at {point}: {e[key]} where the CTMC has 0"
                continue
            worst = min(worst, agreement_digits(e[key], ref))
    return worst >= digits - 2, worst, f"every measure at {len(CHECK_POINTS)} points"


def _check_wait_mm1r(digits):
    """Response times where the hysteresis does not bind (lambda_1 = lambda_0): M/M/1/R, whose admitted customer
    finds n < R present with probability rho^n / sum_{m<R} rho^m and waits Erlang(n, mu) (sojourn Erlang(n + 1,
    mu)); the engine's tails (uniformization of the tagged chain, numeric/engines/ctmc_wait.py) at ``digits``."""
    import mpmath

    from ..symbolic.models.hysteretic import MM1HystereticModel

    lam, mu, L, H, R = F(4, 5), F(1), 2, 4, 5
    ts = ("1/2", "3", "20")
    r = MM1HystereticModel(lam, lam, mu, L, H, R).evaluate(digits, wait_tail=list(ts), sojourn_tail=list(ts))
    with mpmath.workdps(digits + 10):
        rho = mpmath.mpf(4) / 5
        p = [rho**n / mpmath.fsum(rho**m for m in range(R)) for n in range(R)]

        def erlang_mixture(weights, t):
            x = mpmath.mpf(F(t).numerator) / F(t).denominator
            return mpmath.fsum(w * mpmath.gammainc(n, x, regularized=True) for n, w in enumerate(weights) if n)

        agreed = min([agreement_digits(r.response["wait_tail"][t], erlang_mixture(p, t)) for t in ts]
                     + [agreement_digits(r.response["sojourn_tail"][t], erlang_mixture([0] + p, t)) for t in ts])
    return agreed >= digits - 2, agreed, "P(W > t), P(T > t) at t = 1/2, 3, 20 vs the M/M/1/R Erlang mixtures"


def _check_optimiser(digits):
    """``optimize mm1-hysteretic`` = the exact brute force over the CTMC: issue 14's example (R = 10: (L, H) =
    (6, 7), E tau_12 = 5153/1225 = 4.2065) and R searched in 3..9 (ties): the optimum and every tied optimum."""
    from ..numeric.engines.threshold_search import optimize_mm1
    from ..numeric.oracles.hysteretic import threshold_optimum

    for eps, T, (lo, hi) in ((F(1, 20), 5, (10, 10)), (F(1, 10), 3, (3, 9))):
        got = optimize_mm1(MM1HystereticModel(F(6, 5), F(3, 5), 1, 1, 2, hi), eps, T, r_range=(lo, hi))
        _, ties = threshold_optimum(lambda L, H, R: _exact_oracle((F(6, 5), F(3, 5), 1, L, H, R))[1].measures,
                                    range(lo, hi + 1), eps, T)
        if [(t["L"], t["H"], t["R"]) for t in got["ties"]] != ties or (got["L"], got["H"], got["R"]) != ties[0]:
            return False, None, f"R in {lo}..{hi}: optimiser {got['ties']} != brute force {ties}"
    return True, math.inf, "optimum, ties and tie-break = exact brute force over the CTMC (R = 10; R in 3..9)"


@functools.lru_cache(maxsize=1)
@declare(independent={name: "the closed forms are in symbols (lambda_0, lambda_1, mu, L, H, R)" for name in
                      ("rate0", "rate1", "service_rate", "L", "H", "R")})
def derivation() -> Derivation:
    """The registered derivation ``mm1-hysteretic``."""
    return Derivation(
        name="mm1-hysteretic",
        title="$M/M/1$ with bi-level hysteretic control: closed forms",
        source=_CITE, provenance=(_WHERE, __name__),
        steps=steps(),
        checks=(Check("closed forms = CTMC in rationals (GTH, first passage)", _check_closed_forms_exact, "(B9)"),
                Check("positive recurrences (engine) = CTMC", _check_engine, "(B14)"),
                Check("wait and sojourn tails = $M/M/1/R$ Erlang mixtures (thresholds not binding)", _check_wait_mm1r),
                Check("optimisation: thresholds = exact brute force over the CTMC", _check_optimiser)),
        notes=(r"The law $\pi$ is unnormalised, with $\pi(L,1) = 1$; every segment is a geometric sum. "
               r"$\lambda_1 = \lambda_0$ is the pure discard hysteresis, $\lambda_1 = 0$ complete blocking "
               r"($\mathcal{S}_2$ is then never reached and the segments (B4), (B5) vanish above $H$).",),
        recursions=RECURSIONS,
        notation=((rho0, lam0 / mu), (rho1, lam1 / mu)),
    )


# -- generated code ------------------------------------------------------------------------------------------------


@declare(independent={name: "an argument of the generated function" for name in ("rate0", "rate1", "service_rate", "L", "H", "R")})
def codegen_forms(request=None) -> dict:
    """``measure -> ClosedForm``: the closed forms in the rates and integer thresholds (Python and C)."""
    cf = CF.closed_forms()
    # real-valued threshold symbols in the generated code, so that it can check that they are integers
    Lr, Hr, Rr = (sp.Symbol(str(s), real=True) for s in (L, H, R))
    real = {L: Lr, H: Hr, R: Rr}
    args = (
        (lam0, "lam0", "arrival rate lambda_0 in normal mode [customers per unit time]", "> 0"),
        (lam1, "lam1", "arrival rate lambda_1 in overload mode, 0 <= lambda_1 <= lambda_0 [customers per unit time]",
         ">= 0"),
        (mu, "mu", "service rate [customers per unit time]", "> 0"),
        (Lr, "L", "abatement threshold (integer >= 1)", ">= 1"),
        (Hr, "H", "overload onset threshold (integer, L < H)", ">= 1"),
        (Rr, "R", "discard threshold = capacity (integer, H < R)", ">= 1"),
    )
    conditions = (
        (sp.Le(lam1, lam0), "lam1 must be <= lam0 (the overload mode may only throttle the input)"),
        (sp.And(sp.Eq(Lr, sp.floor(Lr)), sp.Eq(Hr, sp.floor(Hr)), sp.Eq(Rr, sp.floor(Rr))),
         "L, H, R must be integers"),
        (sp.And(sp.Lt(Lr, Hr), sp.Lt(Hr, Rr)), "thresholds must satisfy 1 <= L < H < R"),
    )
    from .export.codegen import ClosedForm

    source = f"M|M|1 bi-level hysteresis, {_WHERE}"
    form = ClosedForm
    out = {}
    for f, meta in MM1HystereticMeasures.measure_fields():
        if meta.optional:  # the laws of --distribution are not generated
            continue
        text = f"{meta.help[0].upper()}{meta.help[1:]}" + (f" [{meta.units}]" if meta.units else "") + "."
        out[f.name] = form(f.name, cf[f.name].xreplace(real), args, text, source, conditions)
    return out


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(40) else 1)
