"""Derivation and command line of the hysteretic overload control M^[X]|G|1|(L,H)|(H,R).

Sopin 2013, chapter 3, equations (16)-(23), as reconstructed in ``spec/chapter3.md``:
the embedded chain at departure epochs, its balance equations with symbolic thresholds,
the embedded-to-time relation, the mode probabilities, the normal-mode block P_0, the mean
normal-mode sojourn E tau_0 (corrected: the thesis's (21) omits the idle periods), the mean
return time E tau_12 and the control cycle E tau. The numbers come from
:mod:`qderive.numeric.hysteretic`; the checks compare them with first-passage computations
on the chain, the renewal identity, and (exponential service) the CTMC of the
continuous-time process built here from the model's definition.

``python -m qderive.derivations.hysteretic`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import sympy as sp

from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError

from .cli_args import BATCH_LAW_HELP, TIME_LAW_HELP, parse_batch_law, parse_number, parse_number_list, parse_time_law
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits

__all__ = ["COMMAND", "HystereticCommand", "build_derivation", "steps", "CHECK_POINTS", "parse_thresholds"]

_CITE = "Sopin 2013, eq. ({})"

# ----------------------------------------------------------------------------------------------
# The steps (16)-(23) with symbolic thresholds
# ----------------------------------------------------------------------------------------------


def steps() -> tuple[Step, ...]:
    """The relations (16)-(23) as SymPy objects (sums over symbolic L, H, R)."""
    i, j, m, c, c0 = sp.symbols("i j m c c_0", integer=True, nonnegative=True)
    L, H, R = sp.symbols("L H R", integer=True, positive=True)
    lam0, b1 = sp.symbols("lambda_0 b_1", positive=True)
    q = sp.IndexedBase("q")
    p = sp.IndexedBase("p")
    l = sp.IndexedBase("l")
    lbar = sp.IndexedBase(r"\bar{l}")
    a0 = sp.IndexedBase("a^{(0)}")
    a1 = sp.IndexedBase("a^{(1)}")
    A0 = sp.IndexedBase(r"\bar{a}^{(0)}")
    A1 = sp.IndexedBase(r"\bar{a}^{(1)}")
    J0 = sp.Function("J^{(0)}")
    Js = sp.Function("J^{(s)}")
    C = sp.Symbol("C", positive=True)
    PS0, PS1, PS2 = (sp.Function("P")(sp.Symbol(rf"\mathcal{{S}}_{k}")) for k in range(3))
    tau0, tau12, tau = sp.symbols(r"E\tau_0 E\tau_{12} E\tau", positive=True)
    first_batch = sp.Sum(l[m] * a0[j + 1 - m], (m, 1, j + 1))
    normal_in = q[0, 0] * first_batch + sp.Sum(q[i, 0] * a0[j - i + 1], (i, 1, sp.Min(j + 1, H - 2)))
    n = H - 1
    P0 = sp.MatrixSymbol("P_0", n, n)
    eL = sp.MatrixSymbol("e_L", n, 1)
    e1 = sp.MatrixSymbol("e_1", n, 1)
    ones = sp.MatrixSymbol(r"\mathbf{1}", n, 1)
    inv = (sp.Identity(n) - P0).inv()
    s = sp.Symbol("s", integer=True, nonnegative=True)
    return (
        Step(
            "(16a)", "balance of the normal-mode states (j, 0), j = 0..H-2 (event convention)",
            sp.Eq(q[j, 0], normal_in + sp.KroneckerDelta(j, L - 1) * q[L, 1] * a1[0]), _CITE.format(16),
        ),
        Step(
            "(16b)", "balance of the overload states (j, 1), j = L..R-2",
            sp.Eq(
                q[j, 1],
                sp.Piecewise(
                    (q[0, 0] * first_batch + sp.Sum(q[i, 0] * a0[j - i + 1], (i, 1, H - 2)), j >= H - 1), (0, True)
                )
                + sp.Sum(q[i, 1] * a1[j - i + 1], (i, L, sp.Min(j + 1, R - 2)))
                + sp.KroneckerDelta(j, H) * q[H + 1, 2],
            ),
            _CITE.format(16),
        ),
        Step("(16c)", "discard states drain one by one, j = H+1..R-2", sp.Eq(q[j, 2], q[j + 1, 2]), _CITE.format(16)),
        Step(
            "(16d)", "entry into the discard mode at (R-1, 2) (bar-a_n = P(A >= n))",
            sp.Eq(
                q[R - 1, 2],
                q[0, 0] * (sp.Sum(l[m] * A0[R - m], (m, 1, R - 1)) + lbar[R])
                + sp.Sum(q[i, 0] * A0[R - i], (i, 1, H - 2))
                + sp.Sum(q[i, 1] * A1[R - i], (i, L, R - 2)),
            ),
            _CITE.format(16),
        ),
        Step("(17a)", "mean time between departures", sp.Eq(C, b1 + q[0, 0] / lam0), _CITE.format(17)),
        Step(
            "(17b)", "time-stationary law: idle state and counts 1 <= c < R in interval mode s",
            sp.Eq(
                p[c, s],
                (sp.Sum(q[i, s] * Js(c - i), (i, 1, c))
                 + sp.KroneckerDelta(s, 0) * q[0, 0] * sp.Sum(l[c0] * J0(c - c0), (c0, 1, c))) / C,
            ),
            _CITE.format(17),
        ),
        Step("(17c)", "empty system", sp.Eq(p[0, 0], q[0, 0] / (lam0 * C)), _CITE.format(17)),
        Step("(18)", "probability of overload (interval semantics)",
             sp.Eq(PS1, b1 / C * sp.Sum(q[j, 1], (j, L, R - 2))), _CITE.format(18)),
        Step("(19)", "probability of discard (= b_1 (R-1-H) q_{R-1,2} / C)",
             sp.Eq(PS2, b1 / C * sp.Sum(q[j, 2], (j, H + 1, R - 1))), _CITE.format(19)),
        Step(
            "(20)", "the embedded transition matrix restricted to the normal-mode states",
            sp.Eq(
                sp.Indexed("P_0", i, j),
                sp.Piecewise((first_batch, sp.Eq(i, 0)), (a0[j - i + 1], j >= i - 1), (0, True)),
            ),
            _CITE.format(20),
        ),
        Step(
            "(21)", "mean normal-mode sojourn, corrected: the idle periods in (0,0) are normal mode",
            sp.Eq(sp.MatrixSymbol(r"E\tau_0", 1, 1), eL.T * inv * (b1 * ones + e1 / lam0)),
            _CITE.format(21) + "; spec/chapter3.md section 6",
        ),
        Step(
            "(21')", "the thesis's form (omits the idle periods; exact only when q_{0,0} = 0)",
            sp.Eq(sp.MatrixSymbol(r"E\tau_0^{thesis}", 1, 1), b1 * eL.T * inv * ones),
            _CITE.format(21),
        ),
        Step("(22)", "mean return time (renewal reward over control cycles)",
             sp.Eq(tau12, tau0 * (PS1 + PS2) / PS0), _CITE.format(22)),
        Step("(23)", "mean control cycle", sp.Eq(tau, tau0 + tau12), _CITE.format(23)),
        Step("(23')", "renewal identity: one cycle per entry into S_0",
             sp.Eq(tau, C / (q[L, 1] * a1[0])), "spec/chapter3.md section 7"),
    )


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------

#: (name, batch, service, rho_0, overload factor, (L, H, R)) of the verification points
CHECK_POINTS = (
    ("geometric batches, det service, rho0=3/2", B.Geometric(2), T.Deterministic(Fraction(1, 200)),
     Fraction(3, 2), Fraction(1, 2), (10, 20, 30)),
    ("single arrivals, det service, rho0=9/10", B.Constant(1), T.Deterministic(Fraction(1, 200)),
     Fraction(9, 10), Fraction(1, 2), (10, 20, 30)),
    ("geometric batches, exp service, rho0=1", B.Geometric(2), T.Exponential(Fraction(1, 200)),
     Fraction(1), Fraction(1, 2), (4, 8, 12)),
)


def _model(point):
    from qderive.numeric.hysteretic import HystereticModel

    _, batch, service, rho, f, (L, H, R) = point
    return HystereticModel.from_load(batch, service, rho, f, L, H, R)


def _first_passage(model, digits):
    """E tau_0, thesis E tau_0, E tau_12 by first passage on the embedded chain (mpmath LU at digits + 20)."""
    import mpmath

    from qderive.numeric import hysteretic as nh
    from qderive.numeric.backend import mp_backend
    from qderive.numeric.chains import mean_hitting_times

    bk = mp_backend(digits + 20)
    with bk:
        chain = nh.embedded_chain(model, bk)
        inp = chain.inputs
        normal = list(range(chain.n_normal))
        outside = list(range(chain.n_normal, len(chain.states)))
        costs = [inp.b1 + (1 / inp.lam[0] if st == (0, 0) else 0) for st in chain.states]
        start = chain.index[(model.L - 1, 0)]
        t0 = mean_hitting_times(chain.P, outside, costs, bk)[start]
        t0_thesis = mean_hitting_times(chain.P, outside, [inp.b1] * len(chain.states), bk)[start]
        # exit law of S_0 from (L-1, 0): absorption probabilities, one "cost" column per exit state
        back = mean_hitting_times(chain.P, normal, [inp.b1] * len(chain.states), bk)
        t12 = mpmath.mpf(0)
        for x in outside:
            column = [chain.P[k, x] if k in normal else 0 for k in range(len(chain.states))]
            prob = mean_hitting_times(chain.P, outside, column, bk)[start]
            t12 += prob * back[x]
    return t0, t0_thesis, t12


def _ctmc_exponential(model, digits):
    """Measures of the continuous-time process for exponential service: a CTMC over (count, mode).

    Built from the model's definition (not from the embedded chain): in interval mode s the
    count c grows by a batch at rate lambda_s (capped at R) and falls at rate mu; a departure
    from (c, s) leads to ``model.next_state(c, s)`` (the count just before it is c).
    """
    import mpmath

    from qderive.numeric.backend import mp_backend
    from qderive.numeric.chains import stationary_gth

    mu = 1 / model.service.moment(1)
    lam = {0: model.rate, 1: model.rate1, 2: sp.Integer(0)}
    R = model.R
    start = (0, 0)
    states, rates, todo = {start: 0}, {}, [start]
    while todo:
        c, s = todo.pop()
        out = {}
        if lam[s] != 0 and c < R:
            for x in range(1, R - c + 1):
                prob = model.batch.pmf(x) if x < R - c else model.batch.tail(R - c - 1)
                if prob != 0:
                    out[(c + x, s)] = out.get((c + x, s), 0) + lam[s] * prob
        if c >= 1:
            nxt = model.next_state(c, s)
            out[nxt] = out.get(nxt, 0) + mu
        rates[(c, s)] = out
        for t in out:
            if t not in states:
                states[t] = len(states)
                todo.append(t)
    order = sorted(states, key=states.get)
    Q = [[sp.Integer(0)] * len(order) for _ in order]
    for st, out in rates.items():
        for t, r in out.items():
            Q[states[st]][states[t]] += r
    bk = mp_backend(digits + 20)
    with bk:
        pi = stationary_gth(Q, bk)
        prob = {st: pi[k] for st, k in states.items()}
        p_int = [mpmath.fsum(v for (c, s), v in prob.items() if s == x) for x in range(3)]

        def label(c, s):
            if s == 2 or c >= R:
                return 2
            return 0 if s == 0 and c < model.H else 1

        p_lab = [mpmath.fsum(v for (c, s), v in prob.items() if label(c, s) == x) for x in range(3)]
        cycle = 1 / (bk.num(mu) * prob[(model.L, 1)])
        throughput = bk.num(mu) * (1 - prob[(0, 0)])
    return {"p_int": p_int, "p_lab": p_lab, "cycle": cycle, "throughput": throughput}


def _agree(pairs, digits, slack=3):
    worst = min(agreement_digits(v, ref) for v, ref in pairs)
    return worst >= digits - slack, worst


def _check_first_passage(point):
    def run(digits):
        from qderive.numeric import hysteretic as nh

        model = _model(point)
        r = nh.evaluate(model, digits)
        thesis = nh.evaluate(model, digits, form=nh.NormalTimeForm.THESIS)
        t0, t0_thesis, t12 = _first_passage(model, digits)
        ok, worst = _agree(
            [(r.mean_normal_time, t0), (r.mean_return_time, t12), (thesis.mean_normal_time, t0_thesis)], digits
        )
        return ok, worst, f"{point[0]}: E tau_0 = {r.mean_normal_time}, E tau_12 = {r.mean_return_time}"

    return Check(f"(21),(21'),(22) = first passage on the chain [{point[0]}]", run, "(21)")


def _check_renewal(point):
    def run(digits):
        from qderive.numeric import hysteretic as nh

        model = _model(point)
        pairs = []
        for sem in nh.Semantics:
            r = nh.evaluate(model, digits, semantics=sem)
            pairs.append((r.mean_cycle_time, r.renewal_cycle_time))
        ok, worst = _agree(pairs, digits)
        return ok, worst, f"{point[0]}: E tau = {pairs[0][1]} (interval and label semantics)"

    return Check(f"(23) E tau = C/(q_(L,1) a_0^(1)), interval and label [{point[0]}]", run, "(23')")


def _check_ctmc(point):
    def run(digits):
        from qderive.numeric import hysteretic as nh

        model = _model(point)
        ref = _ctmc_exponential(model, digits)
        pairs = []
        for sem, key in ((nh.Semantics.INTERVAL, "p_int"), (nh.Semantics.LABEL, "p_lab")):
            r = nh.evaluate(model, digits, semantics=sem)
            pairs += [(r.p_normal, ref[key][0]), (r.p_overload, ref[key][1]), (r.p_discard, ref[key][2]),
                      (r.mean_cycle_time, ref["cycle"])]
        pairs.append((r.throughput, ref["throughput"]))
        ok, worst = _agree(pairs, digits)
        return ok, worst, f"{point[0]}: (17)-(23) against the CTMC of the continuous-time process"

    return Check(f"(17)-(19),(23) = CTMC of the process, exponential service [{point[0]}]", run, "(17)")


def _check_stability(point):
    def run(digits):
        from qderive.numeric import hysteretic as nh

        model = _model(point)
        a, b = nh.evaluate(model, digits), nh.evaluate(model, digits + 20)
        ok, worst = _agree([(getattr(a, k), getattr(b, k)) for k in nh.MEASURE_KEYS], digits, slack=0)
        return ok, worst, f"{point[0]}: every measure at {digits} and {digits + 20} digits"

    return Check(f"results at D and D+20 digits agree [{point[0]}]", run)


def build_derivation(points=CHECK_POINTS) -> Derivation:
    """The registered derivation ``hysteretic`` with checks at the given points."""
    checks = []
    for pt in points:
        checks += [_check_first_passage(pt), _check_renewal(pt)]
        if isinstance(pt[2], T.Exponential):
            checks.append(_check_ctmc(pt))
    checks.append(_check_stability(points[0]))
    return Derivation(
        name="hysteretic",
        title="Hysteretic overload control M^[X]|G|1|(L,H)|(H,R): control-cycle measures",
        source="Sopin 2013, chapter 3, eqs. (16)-(23); reconstruction in spec/chapter3.md",
        steps=steps(),
        checks=tuple(checks),
        notes=(
            "Event convention: a departure switches the mode by the count n^- just before it "
            "(normal -> overload at n^- >= H, -> discard at n^- >= R; overload -> normal when the departure "
            "leaves L - 1 customers; discard -> overload when it leaves H). Interval semantics: a moment "
            "belongs to the mode whose arrival rate is in force.",
            "Correction: the thesis's (21) omits the idle periods in state (0,0); the corrected form adds "
            "e_1^T / lambda_0 to the cost vector. The difference matters for rho_0 <= 1.",
        ),
    )


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


def parse_thresholds(text: str) -> tuple[int, int, int]:
    """``"L,H,R"`` -> three integers (order is checked by the model)."""
    values = parse_number_list(text, "thresholds", count=3)
    for name, v in zip("LHR", values):
        if not v.is_Integer:
            raise ParameterError(f"thresholds {text!r}: {name} = {v} must be an integer")
    return tuple(int(v) for v in values)


def _parse_range(text, name):
    if text is None:
        return None
    lo, hi = parse_number_list(text, name, count=2)
    if not (lo.is_Integer and hi.is_Integer and lo <= hi):
        raise ParameterError(f"{name} = {text!r}: give two integers MIN,MAX with MIN <= MAX")
    return int(lo), int(hi)


class HystereticCommand(ModelCommand):
    """``qderive eval|optimize hysteretic`` (command-line contract of issue 4)."""

    name = "hysteretic"
    summary = "M[X]|G|1|(L,H)|(H,R) hysteretic overload control (Sopin 2013 ch. 3): P(S_i), E tau_0, E tau_12, E tau"
    example_args = ("--batch", "geometric:mean=2", "--service", "det:mean=0.005", "--thresholds", "73,84,100",
                    "--load", "1.5", "--overload-factor", "0.5")

    def simulate(self, model, args):
        """The simulator's view of the model (event / left convention, interval / label semantics)."""
        from qderive.numeric.simulate import ModeSemantics, SimHysteresisModel, SwitchingConvention

        if getattr(args, "thesis_form", False):
            raise ParameterError("--thesis-form has no simulated counterpart (a simulation measures the true E tau_0)")
        sim = SimHysteresisModel(model.rate, model.rate * model.overload_factor, model.batch, model.service,
                                 (model.L, model.H, model.R), SwitchingConvention(model.convention.value))
        return sim, {"semantics": ModeSemantics(getattr(args, "semantics", "interval"))}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--batch", default="const:n=1", help=f"batch-size law (default const:n=1): {BATCH_LAW_HELP}")
        parser.add_argument("--service", required=True, help=f"service-time law: {TIME_LAW_HELP}")
        parser.add_argument("--thresholds", required=True, metavar="L,H,R",
                            help="abatement L, onset H, discard R (L < H < R, R >= H + 2)")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--load", metavar="RHO0", help="rho_0 = lambda_0 l1 b1 (normal-mode offered load)")
        group.add_argument("--rate", metavar="LAMBDA0", help="lambda_0, batches per unit time in normal mode")
        parser.add_argument("--overload-factor", default="0.5", metavar="F",
                            help="lambda_1 / lambda_0 in (0, 1) (default 0.5, as in the thesis)")
        parser.add_argument("--convention", choices=["event", "left"], default="event",
                            help="mode switch by the count before the departure (event, default) or left behind")
        parser.add_argument("--semantics", choices=["interval", "label"], default="interval",
                            help="mode of a moment: arrival rate in force (interval, default) or ideal hysteresis label")
        parser.add_argument("--thesis-form", action="store_true",
                            help="E tau_0 by the thesis's (21), which omits the idle periods")

    def build(self, args):
        from qderive.numeric.hysteretic import Convention, HystereticModel

        batch = parse_batch_law(args.batch, "--batch")
        service = parse_time_law(args.service, "--service")
        L, H, R = parse_thresholds(args.thresholds)
        f = parse_number(args.overload_factor, "--overload-factor")
        conv = Convention(args.convention)
        if args.load is not None:
            return HystereticModel.from_load(batch, service, parse_number(args.load, "--load"), f, L, H, R, conv)
        return HystereticModel(batch, service, parse_number(args.rate, "--rate"), f, L, H, R, conv)

    @staticmethod
    def _options(args):
        from qderive.numeric.hysteretic import NormalTimeForm, Semantics

        form = NormalTimeForm.THESIS if getattr(args, "thesis_form", False) else NormalTimeForm.CORRECTED
        return Semantics(getattr(args, "semantics", "interval")), form

    def evaluate(self, model, digits, args) -> Evaluation:
        from qderive.numeric import hysteretic as nh

        semantics, form = self._options(args)
        res = nh.evaluate(model, digits, semantics=semantics, form=form)
        notes = list(res.notes)
        if form is nh.NormalTimeForm.THESIS:
            notes.append(
                "thesis form of (21): idle periods omitted; E tau differs from the renewal value "
                f"C/(q_(L,1) a_0^(1)) = {float(res.renewal_cycle_time):.10g}"
            )
        return Evaluation("hysteretic", self._parameters(model, semantics, form), res.as_dict(), notes)

    @staticmethod
    def _parameters(model, semantics, form) -> dict:
        return {
            "batch": repr(model.batch),
            "service": repr(model.service),
            "L": model.L,
            "H": model.H,
            "R": model.R,
            "rate": model.rate,
            "load": model.load,
            "overload_factor": model.overload_factor,
            "convention": model.convention.value,
            "semantics": semantics.value,
            "normal_time_form": form.value,
        }

    def derivation(self):
        return build_derivation()

    def add_optimize_arguments(self, parser) -> None:
        parser.add_argument("--discard-bound", required=True, metavar="P",
                            help="largest admissible P(S_2), the probability of the discard mode")
        parser.add_argument("--min-cycle", default="0", metavar="T", help="smallest admissible E tau (default 0)")
        parser.add_argument("--l-range", metavar="MIN,MAX", help="search L in MIN..MAX (default 1..R-3)")
        parser.add_argument("--h-range", metavar="MIN,MAX", help="search H in MIN..MAX (default 2..R-2)")
        parser.add_argument("--workers", type=int, default=1, metavar="N",
                            help="evaluate the grid in N processes (default 1)")

    def optimize(self, args) -> dict:
        from qderive.numeric import hysteretic as nh
        from qderive.numeric import hysteretic_optimize as ho

        model = self.build(args)
        semantics, form = self._options(args)
        pairs = ho.threshold_pairs(model.R, _parse_range(args.l_range, "--l-range"),
                                   _parse_range(args.h_range, "--h-range"))
        if args.workers < 1:
            raise ParameterError(f"--workers = {args.workers}: must be >= 1")
        kwargs = dict(pairs=pairs, semantics=semantics, form=form, progress=not args.json)
        bound = parse_number(args.discard_bound, "--discard-bound")
        cycle = parse_number(args.min_cycle, "--min-cycle")
        if args.workers > 1:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(args.workers) as ex:
                best = ho.optimize_thresholds(model, bound, cycle, executor=ex, **kwargs)
        else:
            best = ho.optimize_thresholds(model, bound, cycle, **kwargs)
        if args.digits is not None:
            import dataclasses

            res = nh.evaluate(dataclasses.replace(model, L=best["L"], H=best["H"]), args.digits,
                              semantics=semantics, form=form)
            best.update(res.as_dict())
        return best

    def add_codegen_arguments(self, parser) -> None:
        """Options of ``qderive codegen hysteretic``: the batch and service law families."""
        from .codegen_hysteretic import add_codegen_arguments

        add_codegen_arguments(parser)

    def codegen_forms(self, args) -> dict:
        """``measure -> RecursionModule``: the embedded chain (16) and (17)-(23) as numpy-only code."""
        from .codegen_hysteretic import recursion_forms

        return recursion_forms(args)


COMMAND = HystereticCommand()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if build_derivation().report(50) else 1)
