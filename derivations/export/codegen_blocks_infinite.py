"""Generated code for the infinite room with composed blocks: ``qderive codegen vacation-infinite`` with
``--setup``, ``--close-down`` or ``--start-threshold N``.

* Start threshold 1 and ``--setup general`` / ``--close-down general``: the six measures as closed forms (numpy or
  C), the engine's factorial-moment interpreter of the blocks run over SymPy (:func:`closed_block_forms`), with the
  setup's moments s_k and the close-down's delta(lambda) as arguments.
* Law families (any start threshold): the kernel :mod:`qderive.numeric.kernels.idle_moments` the engine runs, with
  the plan of the blocks' state machine as a literal (:func:`kernel_block_forms`).
* The tails and quantiles with a setup and a close-down of smooth families, start threshold 1
  (:func:`build_block_tail`): W_b(s) J(s) V_r(s) printed by SymPy, inverted by the shipped Euler kernel.
"""

from __future__ import annotations

from ...symbolic.errors import ParameterError
from .codegen import KernelModule, generated_function, print_call, print_expr
from .codegen_blocks import TAILS, Options, block_families, block_params, given, plan_of_options, refused_tails
from .families import LAM, family, moment

__all__ = ["infinite_block_forms", "closed_block_forms", "kernel_block_forms", "infinite_block_rules",
           "infinite_tail_forms", "build_block_tail", "INFINITE_SOURCE", "INFINITE_KERNEL_SOURCE", "TAIL_SOURCE"]


def infinite_block_rules() -> tuple:
    """The refusals of ``codegen vacation-infinite`` with blocks: the tails with a start threshold N > 1 (with a
    setup or a close-down of a smooth family they are generated: :func:`infinite_tail_forms`)."""
    from ...symbolic.models.vacation import block_rules

    return block_rules("the generated waiting-time tails", asked=TAILS)[:1]


# -- the infinite room: closed forms (``qderive codegen vacation-infinite --setup general --close-down general``) --

#: the setup's moments and the close-down's no-arrival probability as arguments of the closed forms
_SETUP_DOCS = tuple((k, f"s{k}", f"{('mean', 'second moment', 'third moment')[k - 1]} of the setup time "
                     f"[time{'' if k == 1 else f'^{k}'}]", "> 0") for k in (1, 2, 3))
_D0_DOC = "probability that no batch arrives during a close-down, delta(lambda) (the close-down's LST at lambda)"

INFINITE_SOURCE = ("the departure chain (B1) and level crossing (B2) of M[X]/G/1 with the composed idle period: the "
                   "package's factorial-moment interpreter of the blocks run over SymPy (docs/theory/blocks.md; "
                   "Takagi 1991, vol. 1, sec. 2.4-2.5; Fuhrmann and Cooper 1985)")


def infinite_block_forms(request, policy: str, arg_docs, stable) -> dict:
    """The measures of ``codegen vacation-infinite`` with blocks: the closed forms (:func:`closed_block_forms`) when
    the start threshold is 1 and every block is ``general``, else the kernel for law families
    (:func:`kernel_block_forms`)."""
    general = [given(t) and t.strip().lower() == "general" for t in (request.setup, request.close_down)]
    laws = [given(t) and t.strip().lower() != "general" for t in (request.setup, request.close_down)]
    if request.start_threshold == 1 and not any(laws):
        return closed_block_forms(request, policy, arg_docs, stable)
    for option, text, is_general in (("--setup", request.setup, general[0]), ("--close-down", request.close_down,
                                                                                general[1])):
        if is_general:
            raise ParameterError(option, "general gives the closed forms (start threshold 1, every block general); "
                                 "with a start threshold N > 1 or another block's family give this law's family",
                                 text)
    return kernel_block_forms(request, policy)


def closed_block_forms(request, policy: str, arg_docs, stable) -> dict:
    """``measure -> ClosedForm`` of the infinite room with a setup and/or a close-down (start threshold 1): the
    measures the engine computes (:func:`qderive.numeric.engines.blocks.measures`), its factorial-moment interpreter
    run over SymPy on the blocks with general laws (:func:`qderive.derivations.blocks.symbolic_measures`), so the
    generated expressions are the engine's own formulas. Arguments: those of the thesis's closed forms
    (``arg_docs``: lambda, b_k, f_k, l_k, c0 = varphi(lambda)), the setup's moments s_1, s_2, s_3 and the
    close-down's d0 = delta(lambda) (the measures depend on the close-down only through it); ``policy``
    "multiple", "single" or "none"; ``stable`` the closed forms' conditions (rho_bar < 1)."""
    import sympy as sp

    from ...symbolic.blocks import CloseDown, MultipleVacations, NoVacation, Setup, SingleVacation
    from ...symbolic.closed_forms import vacation_infinite as VI
    from ...symbolic.models.vacation import VacationMeasures
    from .. import blocks as composed
    from .codegen import ClosedForm

    setup = _infinite_option(request.setup, "--setup")
    close_down = _infinite_option(request.close_down, "--close-down")
    rule = {"multiple": MultipleVacations(1, VI.VACATION), "single": SingleVacation(1, VI.VACATION),
            "none": NoVacation(1)}[policy]
    blocks = ((CloseDown(composed.DOWN),) if close_down else ()) + (rule,) + ((Setup(composed.SETUP),) if setup
                                                                             else ())
    d0 = sp.Symbol("d0", positive=True)
    args = list(arg_docs)
    if setup:
        args += [(composed.SETUP.moment(k), name, doc, check) for k, name, doc, check in _SETUP_DOCS]
    if close_down:
        args.append((d0, "d0", _D0_DOC, "[0, 1]"))
    at_lambda = {VI.VACATION.lst(VI.lam): VI.c0, composed.DOWN.lst(VI.lam): d0}
    exprs = composed.symbolic_measures(blocks)
    docs = {f.name: m for f, m in VacationMeasures.measure_fields()}
    what = {"multiple": "multiple vacations", "single": "single vacations", "none": "no vacations"}[policy]
    idle = ", ".join((["close-down"] if close_down else []) + [what] + (["setup"] if setup else []))
    out = {}
    for key, expr in exprs.items():
        expr = expr.xreplace(at_lambda)  # the engine's formula as it is (cancelling the variance takes minutes)
        left = expr.atoms(sp.core.function.AppliedUndef)  # every transform at lambda is an argument now
        if left:
            raise RuntimeError(f"{key}: transforms left in the closed form: {left}")
        meta = docs[key]
        out[key] = ClosedForm(key, expr, tuple(args), f"{meta.help[0].upper()}{meta.help[1:]} (M[X]/G/1, {idle}; "
                              f"start threshold 1).", INFINITE_SOURCE, stable)
    return out


def _infinite_option(text, option) -> bool:
    """Whether the closed forms have the block of ``option``: "general" (its moments are arguments) or none."""
    if not given(text):
        return False
    if text.strip().lower() != "general":
        raise ParameterError(option, "the closed forms take the law's moments as arguments: give general (or none)",
                             text)
    return True


INFINITE_KERNEL_SOURCE = ("the departure chain (B1) and level crossing (B2) of M[X]/G/1 with the composed idle "
                          "period: the package's factorial-moment interpreter (qderive.numeric.kernels.idle_moments) "
                          "of the blocks' plan (docs/theory/blocks.md)")


def kernel_block_forms(request, policy: str) -> dict:
    """``measure -> KernelModule`` of the infinite room with blocks for law *families* (any start threshold): the
    kernel :mod:`qderive.numeric.kernels.idle_moments` the engine runs, shipped verbatim, on the plan of the blocks'
    state machine (a literal, as for the finite room) with the count vectors below N of each law (the package's
    count and arrival kernels, the families' parameters printed by SymPy) and the laws' moments."""
    from ...numeric.sequences import batch_kernel, count_kernel
    from ...symbolic.batches import BatchLaw
    from ...symbolic.laws import TimeLaw
    from ...symbolic.models.vacation import VacationMeasures
    from .codegen import CHECK_HELPER

    n = request.start_threshold
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("--start-threshold", "must be an integer >= 1", n)
    for option, text in (("--batch", request.batch), ("--service", request.service)):
        if text is None:
            raise ParameterError(option, "is needed with a start threshold N > 1 or a setup or close-down family "
                                 "(the generated kernel fixes the law families)")
    batch = family(request.batch, "batch", BatchLaw)
    service = family(request.service, "service", TimeLaw)
    if policy == "none":
        vacation = None
    else:
        if not given(request.vacation):
            raise ParameterError("--vacation", f"a family is needed with --vacation-policy {policy} (or --no-vacation)",
                                 request.vacation)
        vacation = family(request.vacation, "vacation", TimeLaw)
    setup, close_down = block_families(request)

    class _Request:
        vacation_policy = request.vacation_policy if vacation is not None else None
        start_threshold = n

    plan, laws = plan_of_options(_Request, service, vacation, setup, close_down)
    params, names, scalars = block_params(batch, service, vacation, setup, close_down)
    top = max(n, 1)
    bcall, geometric, _ = batch_kernel(batch.law)
    geo = "None" if geometric is None else f"({print_expr(geometric[0], names)}, {print_expr(geometric[1], names)})"
    order = 3
    law_rows = []
    for law in laws:
        moments = ", ".join(["1.0"] + [print_expr(moment(law, j), names) for j in range(1, order + 2)])
        law_rows.append(f"        ({print_call(count_kernel(law.count_law(LAM)), names, n=str(top))}, [{moments}]),")
    b1 = print_expr(moment(service.law, 1), names)
    l1 = print_expr(batch.law.mean, names)
    fm = ", ".join(print_expr(batch.law.factorial_moment(j), names) for j in range(1, order + 1))
    body = [
        "def _measures(" + ", ".join(scalars) + "):",
        '    """Every measure at one parameter point (floats): the laws\' count vectors below N and moments, the',
        '    idle passage on factorial-moment series, (B1), (B2)."""',
        "    ctx = _CTX",
        f"    rho = lam * ({l1}) * ({b1})",
        "    if not rho < 1:",
        "        raise ValueError(f'rho_bar = lam l1 b1 = {rho!r} must be < 1: the infinite-room queue has no stationary '",
        "                         'regime otherwise')",
        f"    pmf, tail, excess = {print_call(bcall, names, n=str(top))}",
        f"    columns = list(convolution_blocks(ctx, pmf, tail, {top}, {geo}))  # read once per law",
        "    laws = []",
        "    for (beta, ctail, tail2), moments in (",
        *law_rows,
        "    ):",
        f"        a, abar, u, _ = arrival_counts(ctx, beta, ctail, tail2, columns, lam, moments[1], {top})",
        f"        laws.append((moments, a[:{top}], abar[0], u[0]))",
        f"    op = LawSeriesPassage(ctx, {top}, {order}, lam, [{fm}], pmf[:{top + 1}], laws)",
        "    Y = run_passage(op, _PLAN)",
        f"    return block_infinite_measures(ctx, op, Y, 0, rho, 1 - rho, {b1}, {l1}, {order})",
    ]
    blocks_text = _describe_infinite(request, vacation, setup, close_down, policy)
    laws_text = f"{batch.label} batches, {service.label} service"
    docs = {f.name: m for f, m in VacationMeasures.measure_fields() if not m.optional}
    out = {}
    for measure, meta in docs.items():
        notes = [f"M[X]/G/1 with {laws_text}; {blocks_text}.", f"Unit of the result: {meta.units or meta.kind.value}.",
                 f"Source: {INFINITE_KERNEL_SOURCE}.", "",
                 "Numeric arguments may be numpy arrays; they broadcast together (the points are computed one by",
                 "one). Bad input, rho_bar >= 1 included, raises ValueError naming the parameter."]
        statements = [*(f"{p[1]} = _check({p[1]!r}, {p[1]}, {p[3]!r})" for p in params),
                      f"return _broadcast(lambda *point: [float(_measures(*point)[{measure!r}])], "
                      f"({', '.join(scalars)},), True)"]
        code = "\n".join(["_CTX = FLOAT64", "", CHECK_HELPER.strip("\n"), "", "", _BROADCAST.strip("\n"), "", "",
                          "#: the idle passage (qderive.numeric.engines.blocks_finite.plan_of of the blocks' state "
                          "machine)", f"_PLAN = {plan!r}", "", "", *body, "", "",
                          generated_function(measure, [(p[1], p[2]) for p in params],
                                             f"{meta.help[0].upper()}{meta.help[1:]}.", notes, statements)])
        out[measure] = KernelModule(measure, f"{meta.help} of M[X]/G/1 with {laws_text}; {blocks_text}.",
                                    INFINITE_KERNEL_SOURCE, ("context", "points", "idle_passage", "idle_moments"),
                                    code)
    return out


#: one value per broadcast point (the generated kernel of the infinite room runs point by point)
_BROADCAST = '''
def _broadcast(one, params, single=True):
    """``one(*point)[0]`` at every point of the broadcast parameters: a float, or an array of their shape."""
    if all(type(p) is float or type(p) is int for p in params):
        return one(*[float(p) for p in params])[0]
    arrays = numpy.broadcast_arrays(*[numpy.asarray(p, dtype=float) for p in params])
    flat = numpy.stack([a.reshape(-1) for a in arrays], axis=-1)
    out = numpy.array([one(*row)[0] for row in flat.tolist()], dtype=float)
    return out.reshape(arrays[0].shape)
'''


def _describe_infinite(request, vacation, setup, close_down, policy) -> str:
    parts = []
    if close_down is not None:
        parts.append(f"close-down ({close_down.label})")
    parts.append(f"{policy} vacations ({vacation.label})" if vacation is not None else "no vacations")
    parts.append(f"start threshold N = {request.start_threshold}")
    if setup is not None:
        parts.append(f"setup ({setup.label})")
    return ", ".join(parts)


# -- the infinite room's tails with a setup or a close-down (start threshold 1, smooth families) -----------------

TAIL_SOURCE = ("W(s) = W_b(s) J(s) V_r(s), V_r(s) = lambda (1 - Y(s)) / (E[Y_b] s) (Fuhrmann and Cooper 1985): Y(s) "
               "the first-service law of the blocks by the package's generating-function interpreter over SymPy "
               "(qderive.numeric.engines.blocks.GeneratingPassage); inverted by the Euler algorithm (Abate and Whitt "
               "1995)")


def infinite_tail_forms(request) -> dict:
    """The tails and quantiles of ``codegen vacation-infinite`` with blocks: generated (:func:`build_block_tail`)
    with start threshold 1 and setup/close-down families, else refused naming the option (a start threshold N > 1:
    the transform of the threshold's later batches has no generated code; ``general``: the transform needs the
    law's family)."""
    from .codegen_wait import MEASURES, WaitModule

    if request.start_threshold != 1:
        why = ("the transform of the wait with a start threshold N > 1 (the later batches of the threshold) has no "
               "generated code; qderive eval computes the tails")
        return refused_tails(request, ("--start-threshold", request.start_threshold, why))
    for option, text in (("--setup", request.setup), ("--close-down", request.close_down)):
        if given(text) and text.strip().lower() == "general":
            return refused_tails(request, (option, text, "the tails need the law's family (its transform), not "
                                           "general moments"))
    return {m: WaitModule(m, request, build=build_block_tail) for m in MEASURES}


class _SymbolicTransform:
    """The generating-function primitives (:class:`~qderive.numeric.engines.blocks.GeneratingPassage`) over SymPy in
    the transform form X = 1 - s / lambda, A_L = L*(s) (``at_s``; False: s -> oo, every transform 0) and the
    no-arrival probability L*(lambda)."""

    @staticmethod
    def make(X, s, at_s):
        from ...numeric.engines.blocks import GeneratingPassage

        class Passage(GeneratingPassage):
            def arrivals(self, law):
                return law.lst(s) if at_s else 0

            def idle(self, law):
                return law.lst(LAM)

        op = Passage()
        op.X, op.served = X, 0
        return op


def build_block_tail(measure: str, request) -> KernelModule:
    """The tail or quantile module of the infinite room with a setup and/or a close-down (start threshold 1): the
    module of :mod:`.codegen_wait` for the same queue without blocks (policy none: W_b(s) J(s)) times the residual
    factor V_r(s) of the blocks, P(W = 0) times P(R = 0) = b / E[Y_b] (b the coefficient of X in Y as s -> oo), the
    mean plus E[R] = -Y''(0) / (2 Y'(0)) -- as the engine composes them
    (:func:`qderive.numeric.engines.blocks.response_laws`)."""
    import re

    import sympy as sp

    from ...numeric.compile import numpy_source
    from ...symbolic.blocks import blocks_of, passage
    from ...symbolic.closed_forms import vacation_wait as VW
    from .codegen import condition_source
    from .codegen_wait import (MEASURES, TAIL_HELPERS, TAIL_KERNELS, TAIL_WORDS, TIME_SYMBOLS, command_template,
                               public_parts, tail_families, tail_notes)

    kind, question = MEASURES[measure]
    batch, service, vacation, policy = tail_families(measure, request)
    setup, close_down = block_families(request, smooth=True)
    params, names, scalars = block_params(batch, service, vacation, setup, close_down, stable=True)
    options = Options(vacation and vacation.law, request.vacation_policy, 1, setup and setup.law,
                       close_down and close_down.law)
    blocks = blocks_of(options)
    s, x = VW.s, sp.Symbol("x")
    Y = passage(blocks, _SymbolicTransform.make(1 - s / LAM, s, True))
    Y1, Y2 = (sp.diff(Y, s, k).subs(s, 0) for k in (1, 2))
    mean_yb = -LAM * Y1  # E[Y_b]: the batches present at the first service start
    residual = LAM * (1 - Y) / (mean_yb * s)
    atom_r = sp.expand(passage(blocks, _SymbolicTransform.make(x, s, False))).coeff(x, 1) / mean_yb
    rest = -Y2 / (2 * Y1)  # E[R]

    laws = {"service": service.law, "batch": batch.law, "rate": LAM}
    transform = (VW.wait_transform if kind == "wait" else VW.sojourn_transform)("none", **laws) * residual
    b = [moment(service.law, i) for i in (1, 2)]
    l_ = [batch.law.mean, moment(batch.law, 2)]
    none = (LAM, *b, 1, 1, *l_, 0)  # the queue without vacations: vacation moments are placeholders, c0 = 0
    if kind == "wait":
        p0 = VW.p_wait_zero("none").xreplace(dict(zip(VW.moment_symbols(0), (LAM, b[0], 1, l_[0], 0)))) * atom_r
    else:
        p0 = sp.Integer(0)  # T = W + B and the smooth service laws have no atom at 0
    moments = VW.wait_moments if kind == "wait" else VW.sojourn_moments
    mean = moments("none", 1)[0].xreplace(dict(zip(VW.moment_symbols(1), none))) + rest
    rho_bar = LAM * batch.law.mean * moment(service.law, 1)

    source = numpy_source(transform, [s, *(p[0] for p in params)], "_transform")
    source = source.split("\n\n\nRATIONAL = ")[0].removeprefix("import numpy\n").strip("\n")
    what = TIME_SYMBOLS[kind]
    checks = ["def _parameters(" + ", ".join(scalars) + "):",
              '    """The parameters as floats, checked (ValueError naming a bad one)."""',
              *(f"    {p[1]} = _scalar({p[1]!r}, {p[1]}, {p[3]!r})" for p in params),
              f"    if not _holds({condition_source(rho_bar < 1, names)}):",
              "        raise ValueError(f\"rho_bar = lam l1 b1 = {" + print_expr(rho_bar, names) + ":.6g} must be < 1: "
              "the infinite-room queue has no stationary regime otherwise\")",
              f"    return ({', '.join(scalars)},)"]

    def spec(fam):
        text = fam.law.spec_text()
        for _, name, *_ in fam.args:
            text = re.sub(rf"\b{re.escape(name)}\b", "{" + name + "!r}", text)
        return text

    extra = ([f"--setup {spec(setup)}"] if setup else []) + ([f"--close-down {spec(close_down)}"] if close_down else [])
    template = command_template(batch, service, vacation, policy, extra=extra)
    command = ["def _command(params, option, point):",
               '    """The `qderive eval` command that computes this point with mpmath."""',
               f"    values = dict(zip({tuple(scalars)!r}, params))",
               f"    return {template!r}.format(**values) + f\" --{{option}} {{point!r}} --digits 15\""]
    atoms = ["def _atom(" + ", ".join(scalars) + "):", f'    """P({what} = 0)."""', f"    return {print_expr(p0, names)}",
             "", "", "def _mean(" + ", ".join(scalars) + "):", f'    """E {what}: the start of the quantile\'s bracket."""',
             f"    return {print_expr(mean, names)}"]
    laws_text = (f"{batch.label} batches, {service.label} service, "
                 + (f"{vacation.label} vacations ({policy})" if vacation else "no vacations")
                 + (f", close-down {close_down.label}" if close_down else "") + (f", setup {setup.label}" if setup
                                                                                 else ""))
    notes = tail_notes(laws_text, kind, question, TAIL_SOURCE)
    first, description, body = public_parts(measure, TAIL_WORDS[kind], scalars)
    code = "\n".join([TAIL_HELPERS.strip("\n"), "", "", "# W(s) = W_b(s) J(s) V_r(s) printed by SymPy" if kind == "wait"
                      else "# T(s) = W(s) beta(s) printed by SymPy", source, "", "", *checks, "", "", *command, "", "",
                      *atoms, "", "", generated_function(measure, [first, *[(p[1], p[2]) for p in params]],
                                                         description, notes, body)])
    return KernelModule(measure, f"{description} M[X]/G/1 with {laws_text}.", TAIL_SOURCE, TAIL_KERNELS, code)
