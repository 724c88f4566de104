"""Generated code with composed blocks: ``qderive codegen vacation-finite`` with ``--start-threshold N``,
``--setup FAMILY`` or ``--close-down FAMILY`` (the infinite room: :mod:`.codegen_blocks_infinite`, which shares
the plan and the refusals written here).

The generated module ships the package's kernel :mod:`qderive.numeric.kernels.idle_passage` verbatim (the one
the engine :mod:`qderive.numeric.engines.blocks_finite` runs: the idle passage on count vectors, the departure
chain by the cut recursion (2b), renewal reward) with what it imports, and the generated part:

* the *plan* of the idle passage as a literal: the blocks of the codegen options ([close-down] + the vacation
  rule with its start threshold N + [setup]) run on their state machine
  (:func:`qderive.symbolic.blocks.machine.machine`) and turned into plain data by
  :func:`qderive.numeric.engines.blocks_finite.plan_of` -- the places a batch finds and the embedded epochs come
  from the machine's own rules at generation time, so the generated code has no copy of them;
* the kernel calls of the law families (batch, service, vacation, setup, close-down), printed by SymPy from the
  package's own symbolic laws (:func:`qderive.numeric.sequences.count_kernel`); the numbers of every law are
  arguments of the generated function, the families fixed by the options;
* the public function (arguments broadcast; under partial admission the points of an array with the same batch
  parameters in one pass of the kernel over numbers over points, ``Float64Points``; whole admission point by point),
  ``r`` an integer or a sequence::

    qderive codegen vacation-finite --measure loss_probability --batch geometric --service erlang:k=2 \\
        --vacation exp --setup exp --start-threshold 3 --out loss.py
    # loss.py: loss_probability(lam, batch_mean, service_mean, vacation_mean, setup_mean, r)

The waiting and sojourn times' tails and quantiles with blocks are :mod:`.codegen_blocks_tails` (the finite room) and
:mod:`.codegen_blocks_infinite` (the infinite room).

The start threshold N is fixed in the code, not an argument: it fixes the plan's structure (which stages are
skipped at which levels, which period ends are embedded epochs), read from the state machine when the code is
generated; an argument N would need those rules in the generated code, a second copy of them.
"""

from __future__ import annotations

from ...symbolic.errors import ParameterError
from .codegen import KernelModule, generated_function, print_call, print_expr
from .families import LAM, family, moment

__all__ = ["block_forms", "block_families", "block_params", "refused_tails", "has_blocks", "given", "plan_of_options", "RefusedModule", "input_lines",
           "TAILS", "BLOCK_SOURCE"]

BLOCK_SOURCE = ("the departure chain of M[X]/G/1/r with the composed idle period (B1), the cut recursion (2b) and "
                "renewal reward (docs/theory/blocks.md; Sopin 2013, chapter 2, Statement 1, Theorem 1.1 (12) "
                "generalised)")

_KERNELS = ("context", "points", "idle_passage")

_COST_WHOLE = [
    "Cost: O(r^2) float64 operations per parameter point and capacity (the idle passage on count vectors over",
    "0..r+1, the cut recursion (2b), dense (r+1) x (r+1) room matrices per service: whole admission's room",
    "process is not vectorised). The points of an array, and the capacities of a sequence r, are computed one",
    "by one.",
]
_COST_PARTIAL = [
    "Cost: O(r^2) float64 operations per parameter point and capacity (the idle passage on count vectors over",
    "0..r+1, the cut recursion (2b)). The points of an array with the same batch parameters run together, up",
    "to 1024 at a time, in ONE pass of the idle passage and the recursion: the kernel's numbers are then",
    "arrays over the points (Float64Points), the count sequences of each point stacked, the batch law's",
    "convolution tables shared; the values agree with the point-by-point ones to rounding (~1e-15 relative).",
    "The capacities of a sequence r are computed one by one.",
]

#: the vectorised pass over points (partial admission): the kernel's numbers over points
_POINTS = '''
#: per plan law: whether its count kernel takes numbers over points (else the points' sequences are stacked)
_OVER = {over!r}


def _values_points(measure, rs, rows):
    """``measure`` at each capacity of ``rs`` for the points ``rows`` (one row of floats per point, the same batch
    parameters): one pass of block_finite_measures over numbers over points (Float64Points)."""
    ctx = Float64Points(len(rows))
    first, columns, _, _, _ = _inputs(*rows[0].tolist())

    def batch(n):  # the same for every point: vectors of shape (n + 1, 1)
        pmf, tail, excess, l1, geometric, support = first(n)
        return pmf[:, None], tail[:, None], excess[:, None], l1, geometric, support

    arrays = [rows[:, i].copy() for i in range(rows.shape[1])]
    _, _, together, means, b1 = _inputs(*arrays, ctx=ctx)
    alone = []

    def stacked(i):
        if not alone:
            alone.extend(_inputs(*row)[2] for row in rows.tolist())
        return lambda n: tuple(numpy.stack(v, axis=-1) for v in zip(*(law[i](n) for law in alone)))

    counts = [c if _OVER[i] else stacked(i) for i, c in enumerate(together)]
    means = [numpy.broadcast_to(numpy.asarray(m, dtype=float), (len(rows),)).copy() for m in means]
    b1 = numpy.broadcast_to(numpy.asarray(b1, dtype=float), (len(rows),)).copy()
    out = []
    for r in rs:
        got = block_finite_measures(ctx, _PLAN, r, arrays[0], batch, columns, counts, means, b1, False)
        out.append(numpy.broadcast_to(numpy.asarray(got[measure], dtype=float), (len(rows),)))
    return numpy.stack(out, axis=-1)
'''


def has_blocks(request) -> bool:
    """True when the codegen options ask for a composed idle period (N > 1, a setup or a close-down)."""
    return request.start_threshold != 1 or given(request.setup) or given(request.close_down)


def given(text) -> bool:
    """True when a law option's text names a family (not None, not "none")."""
    return text is not None and text.strip().lower() != "none"


#: the waiting and sojourn times' tails and quantiles (with blocks: :mod:`.codegen_blocks_tails` for the finite room,
#: :mod:`.codegen_blocks_infinite` for the infinite one)
TAILS = frozenset({"wait_tail", "wait_quantile", "sojourn_tail", "sojourn_quantile"})


def refused_tails(request, reason=None) -> dict:
    """``measure -> RefusedModule`` for :data:`TAILS` with a composed idle period that has no generated tails: asking
    for one names the option (``reason`` = (option, value, why); default the first block option given)."""
    option, value = (("--setup", request.setup) if given(request.setup) else
                     ("--close-down", request.close_down) if given(request.close_down) else
                     ("--start-threshold", getattr(request, "start_threshold", None)))
    why = ("the generated waiting-time tails have no setup time, close-down or start threshold N > 1 (the other "
           "measures are generated with them; qderive eval computes the tails)")
    if reason is not None:
        option, value, why = reason
    return {m: RefusedModule(m, ParameterError(option, why, value)) for m in sorted(TAILS)}


class RefusedModule:
    """A measure the codegen options do not generate: writing it raises ``error`` (a ParameterError naming the
    option), so ``--list`` still shows the measure and asking for it names the option at fault."""

    def __init__(self, measure, error):
        self.measure, self.error = measure, error

    def python_module(self, model):
        raise self.error

    def c_sources(self, model, header_name):
        raise self.error


def block_params(batch, service, vacation, setup, close_down, stable=False):
    """(params, names, scalars) of a generated function with blocks: the batch rate, then the arguments of the
    batch, service, vacation, setup and close-down families (a symbol shared by two families once); ``stable``:
    the documentation of the rate says rho_bar < 1 (the infinite room's tails)."""
    params = [(LAM, "lam", "batch arrival rate lambda [batches per unit time]; offered load rho_bar = lam l1 b1"
               + (" < 1" if stable else ""), "> 0"), *batch.args, *service.args]
    for fam in (vacation, setup, close_down):
        if fam is not None:
            params += [a for a in fam.args if a[0] not in {p[0] for p in params}]
    return params, {p[0]: p[1] for p in params}, [p[1] for p in params]


def block_families(request, smooth=False) -> tuple:
    """(setup, close-down) families of the codegen options (None: none); ``smooth``: refused when the transform has
    kinks (:func:`~.codegen_wait.smooth_family`). The close-down's arguments are named ``close_down_...``; its
    errors name the option ``--close-down``."""
    from ...symbolic.laws import TimeLaw

    def read(text, role):
        if not given(text):
            return None
        try:
            if smooth:
                from .codegen_wait import smooth_family

                return smooth_family(text, role)
            return family(text, role, TimeLaw)
        except ParameterError as err:
            if role == "close_down":
                raise ParameterError(str(err).replace("--close_down", "--close-down")) from None
            raise

    return read(request.setup, "setup"), read(request.close_down, "close_down")


class Options:
    """The fields :func:`qderive.symbolic.blocks.blocks_of` reads, from the codegen options (symbolic laws)."""

    def __init__(self, vacation, policy, threshold, setup, close_down):
        self.vacation, self.vacation_policy, self.start_threshold = vacation, policy, threshold
        self.setup, self.close_down = setup, close_down


def plan_of_options(request, service, vacation, setup, close_down):
    from ...numeric.engines.blocks_finite import plan_of
    from ...symbolic.blocks import blocks_of
    from ...symbolic.blocks.machine import machine

    options = Options(vacation and vacation.law, request.vacation_policy, request.start_threshold,
                       setup and setup.law, close_down and close_down.law)
    stages = machine(options, blocks_of(options))
    return plan_of(stages, service.law)


def block_forms(request, batch, service, vacation, measures) -> dict:
    """``measure -> KernelModule`` of the finite room with blocks for the codegen options ``request`` and the
    families already read (``batch``, ``service``, ``vacation`` or None); ``measures``: {name: metadata}."""
    from .codegen import SWEEP_HELPERS

    n = request.start_threshold
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("--start-threshold", "must be an integer >= 1", n)
    setup, close_down = block_families(request)
    whole = request.admission.value == "whole"
    plan, laws = plan_of_options(request, service, vacation, setup, close_down)
    params, names, scalars = block_params(batch, service, vacation, setup, close_down)
    inputs = [
        *input_lines(batch, service, laws, names, scalars),
        "",
        "",
        "def _values(measure, rs, " + ", ".join(scalars) + "):",
        '    """``measure`` at each capacity of ``rs`` for one parameter point (floats)."""',
        "    batch, columns, counts, means, b1 = _inputs(" + ", ".join(scalars) + ")",
        "    out = []",
        "    for r in rs:",
        "        try:",
        f"            got = block_finite_measures(_CTX, _PLAN, r, lam, batch, columns, counts, means, b1, {whole})",
        "        except ArithmeticError as exc:",
        "            raise FloatingPointError(f\"{exc}; evaluate this point with `qderive eval --digits 20`\") from None",
        "        value = float(got[measure])",
        "        if not math.isfinite(value):",
        "            raise FloatingPointError(f\"{measure} is not finite in float64; use `qderive eval --digits 20`\")",
        "        out.append(value)",
        "    return out",
    ]
    if not whole:  # one pass of the idle passage and the chain for the points of an array (partial admission)
        from .codegen_inputs import over_points

        over = tuple(over_points(law) for law in laws)
        inputs += ["", "", *_POINTS.format(over=over).strip("\n").splitlines()]
    stops = any(kind != "interrupt" and not at_once for kind, _, _, _, at_once, _ in plan)
    lowest = max(n, 1 if (stops or vacation is not None) else 0)
    blocks_text = _describe(request, vacation, setup, close_down)
    laws_text = f"{batch.label} batches, {service.label} service, " + (f"{vacation.label} vacations" if vacation
                                                                       else "no vacations")
    out = {}
    for measure, meta in measures.items():
        notes = [f"M[X]/G/1/r with {laws_text}; {blocks_text}; {'whole' if whole else 'partial'} admission.",
                 f"Unit of the result: {meta.units or meta.kind.value}.",
                 f"Source: {meta.source or BLOCK_SOURCE}; {BLOCK_SOURCE}.", "",
                 "Numeric arguments may be numpy arrays; they broadcast together. Returns a float, or an array",
                 "of the broadcast shape, with a last axis over r when r is a sequence. The offered load may be",
                 "given instead of the rate: f(batch_mean=..., ..., r=..., load=rho_bar).", "",
                 *(_COST_WHOLE if whole else _COST_PARTIAL),
                 "Bad input raises ValueError naming the parameter (a start threshold that whole admission can",
                 "never meet included); a float64 underflow raises FloatingPointError naming the point."]
        arg_lines = [(p[1], p[2]) for p in params] + [
            ("r", f"waiting places (integer >= {lowest}: the start threshold N = {n} must be <= r; the customer in "
                  "service not counted), or a sequence of them")]
        point = f"lambda *point: _values({measure!r}, rs, *point), ({', '.join(scalars)},), single"
        many = ("" if whole else f"lambda rows: _values_points({measure!r}, rs, rows), "
                f"{tuple(range(1, 1 + len(batch.args)))!r}, _chunk(rs), ")
        statements = [*(f"{p[1]} = _check({p[1]!r}, {p[1]}, {p[3]!r})" for p in params),
                      f"rs, single = _capacities(r, {lowest})",
                      f"return _broadcast({point}, {many}width=len(rs))"]
        factor = f"({print_expr(batch.law.mean, names)}) * ({print_expr(moment(service.law, 1), names)})"
        load = ("lam", factor, [(p[1], p[3]) for p in params[1:]])
        code = "\n".join([SWEEP_HELPERS.strip("\n"), "", "",
                          "#: the idle passage (qderive.numeric.engines.blocks_finite.plan_of of the blocks' state "
                          "machine):", "#: (kind, law, threshold, most, at_once, embedded epochs)",
                          f"_PLAN = {plan!r}", "", "", *inputs, "", "",
                          generated_function(measure, arg_lines, f"{meta.help[0].upper()}{meta.help[1:]}.", notes,
                                             statements, load=load)])
        out[measure] = KernelModule(measure, f"{meta.help} of M[X]/G/1/r with {laws_text}; {blocks_text}.",
                                    BLOCK_SOURCE, _KERNELS, code)
    return out


def input_lines(batch, service, laws, names, scalars) -> list:
    """The source lines of ``_inputs(*scalars)``: the kernel inputs of one parameter point (floats) -- batch(n),
    columns(n), the count callables of the plan's ``laws`` (the service first) and their means, b1 -- printed by
    SymPy from the package's batch and count kernels (:func:`qderive.numeric.sequences.batch_kernel`,
    :func:`~qderive.numeric.sequences.count_kernel`); the finite room's measures and waiting times with blocks."""
    from ...numeric.sequences import batch_kernel, count_kernel

    bcall, geometric, support = batch_kernel(batch.law)
    geo = "None" if geometric is None else f"({print_expr(geometric[0], names)}, {print_expr(geometric[1], names)})"
    sup = "None" if support is None else f"tuple(s for s in {list(support)} if s <= n)"
    counts = [f"        lambda n: {print_call(count_kernel(law.count_law(LAM)), names)}," for law in laws]
    means = ", ".join(print_expr(moment(law, 1), names) for law in laws)
    return [
        "def _inputs(" + ", ".join(scalars) + ", ctx=_CTX):",
        '    """The kernel inputs of one parameter point (floats; or, with ctx = Float64Points, arrays over points for',
        "    the count kernels that take them, _values_points): batch(n), columns(n), the count callables of the",
        '    plan\'s laws (the service first) and their means, b1."""',
        "",
        "    def batch(n):",
        f"        pmf, tail, excess = {print_call(bcall, names)}",
        f"        return pmf, tail, excess, {print_expr(batch.law.mean, names)}, {geo}, {sup}",
        "",
        "    def columns(n):",
        "        pmf, tail, _, _, geometric, _ = batch(n)",
        "        return convolution_blocks(ctx, pmf, tail, n, geometric)",
        "",
        "    counts = [",
        *counts,
        "    ]",
        f"    return batch, columns, counts, [{means}], {print_expr(moment(service.law, 1), names)}",
    ]


def _describe(request, vacation, setup, close_down) -> str:
    """The idle period in words: "close-down (exp), multiple vacations, start threshold N = 3, setup (exp)"."""
    parts = []
    if close_down is not None:
        parts.append(f"close-down ({close_down.label})")
    if vacation is not None:
        parts.append(f"{request.vacation_policy.value} vacations")
    parts.append(f"start threshold N = {request.start_threshold}")
    if setup is not None:
        parts.append(f"setup ({setup.label})")
    return ", ".join(parts)
