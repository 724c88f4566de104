"""Generated code for the finite vacation queue: ``qderive codegen vacation-finite``.

The measures of M[X]/G/1/r need the cut recursion (2b), not a closed form. The
generated module is the package's kernels, copied verbatim
(:class:`qderive.numeric.kernels.vacation.FiniteVacation` and what it uses), plus, for the
chosen law families, the kernel calls of their count laws printed by SymPy from the
package's own symbolic laws (``docs/theory/chapter2.md`` section 3) and the public function::

    qderive codegen vacation-finite --measure loss_probability --batch geometric \\
        --service erlang:k=4 --vacation exp --out loss.py
    # loss.py: loss_probability(lam, batch_mean, service_mean, vacation_mean, r), or by keyword with
    # load=rho_bar instead of lam (rho_bar = lam l1 b1)

Numeric arguments broadcast (numpy arrays); ``r`` may be a sequence of capacities (one
sweep up to max r per parameter point).

With ``--start-threshold N``, ``--setup FAMILY`` or ``--close-down FAMILY`` the module ships the blocks' kernel
instead (:mod:`.codegen_blocks`); the waiting-time tails are then refused, naming the option.
"""

from __future__ import annotations

from ...symbolic.batches import BatchLaw
from ...symbolic.capabilities import declare
from ...symbolic.laws import TimeLaw
from ...symbolic.models.vacation import FiniteVacationMeasures
from .codegen import SWEEP_HELPERS, KernelModule, generated_function, print_expr
from .codegen_blocks import block_forms, has_blocks
from .codegen_inputs import law_lines, over_points
from .families import LAM, family, moment

__all__ = ["forms"]

SOURCE = ("Sopin 2013, chapter 2: cut recursion (2b), Statement 1, (9), (10), Statement 2, Theorem 1.1 (12), "
          "Theorem 1.2 (13); docs/theory/chapter2.md sections 2-4")



_COST_PARTIAL = [
    "Cost: O(r^2) float64 operations per parameter point. The points of an array with the same batch",
    "parameters run together, up to 1024 at a time, in ONE pass of the recursion (2b): the kernel's",
    "numbers are then arrays over the points (Float64Points), the count sequences of each point stacked,",
    "the batch law's convolution tables shared. Measured at r = 129 on 2 busy cores: 10^5 loads in 10",
    "CPU-seconds with one BLAS thread (OPENBLAS_NUM_THREADS=1; 19 with BLAS threads that wait for a core),",
    "against 40 point by point; a sequence r costs one pass up to max r. The values agree with the",
    "point-by-point ones to rounding (sums in another order: ~1e-14 relative), not bit for bit.",
]
_COST_WHOLE = [
    "Cost: the recursion runs once per parameter point, O(r^2) float64 operations (whole admission: the",
    "room matrices of each point are sized to its own count laws, so the points are not vectorised); the",
    "points of an array run one by one, sharing the batch law's convolution tables; a sequence r costs",
    "one pass up to max r per point.",
]

_POINTS_KERNEL = '''
def _kernel_points(rows):
    """One FiniteVacation kernel for many parameter points with the same batch law (``rows``: one row of floats
    per point): numbers over points (Float64Points), count sequences stacked, batch vectors and convolution
    columns shared."""
    ctx = Float64Points(len(rows))
    together = _laws(ctx, *(rows[:, i].copy() for i in range(rows.shape[1])))
    laws = None

    def counts(i, over_points):  # over points at once where the count kernel takes them, else point by point
        nonlocal laws
        if over_points:
            return together[i]
        laws = laws or [_laws(_CTX, *row) for row in rows.tolist()]
        return lambda n: tuple(numpy.stack(v, axis=-1) for v in zip(*(law[i](n) for law in laws)))

    _, _, first_batch, columns, _, _ = _laws(_CTX, *rows[0].tolist())

    def batch(n):  # the same for every point: vectors of shape (n + 1, 1)
        pmf, tail, excess, l1, geometric, support = first_batch(n)
        return pmf[:, None], tail[:, None], excess[:, None], l1, geometric, support

    b1, f1 = (numpy.broadcast_to(numpy.asarray(together[i], dtype=float), (len(rows),)).copy() for i in (4, 5))
    service, vacation = {over!r}
    return FiniteVacation(ctx, counts(0, service), None if together[1] is None else counts(1, vacation), batch,
                          rows[:, 0].copy(), b1, f1, {flags}, columns=columns)
'''


@declare(independent={"rate": "an argument of the generated function", "capacity": "an argument of the generated function", "batch": "its family is fixed by the codegen option of the same name; its numbers are arguments", "service": "its family is fixed by the codegen option of the same name; its numbers are arguments",
                      "vacation": "its family is fixed by the codegen option of the same name; its numbers are arguments", "admission": "fixed by codegen --admission",
                      "vacation_policy": "fixed by codegen --vacation-policy",
                      "start_threshold": "fixed by codegen --start-threshold (it fixes the idle passage's plan)",
                      "setup": "its family is fixed by codegen --setup; its numbers are arguments",
                      "close_down": "its family is fixed by codegen --close-down; its numbers are arguments"})
def forms(request) -> dict:
    """``measure -> KernelModule`` for the law families of ``request`` (:class:`CodegenFamilies`)."""
    batch = family(request.batch, "batch", BatchLaw)
    service = family(request.service, "service", TimeLaw, samples=True)  # empirical:n=N: values as arguments
    vac_none = request.vacation.strip().lower() == "none"
    vacation = None if vac_none else family(request.vacation, "vacation", TimeLaw, samples=True)
    whole = request.admission.value == "whole"
    single = request.vacation_policy.value == "single"
    if single and vacation is None:
        from ...symbolic.errors import ParameterError

        raise ParameterError("--vacation-policy", "single needs a vacation family (not none)", "single")
    docs = {f.name: m for f, m in FiniteVacationMeasures.measure_fields() if not m.optional}
    if has_blocks(request):  # a composed idle period: the kernel of the blocks (:mod:`.codegen_blocks`)
        from .codegen_blocks_tails import block_tail_forms

        out = block_forms(request, batch, service, vacation, docs)
        out.update(block_tail_forms(request))  # wait_tail, ...: built when written
        return out
    params = [(LAM, "lam", "batch arrival rate lambda [batches per unit time]; offered load rho_bar = lam l1 b1",
               "> 0"), *batch.args, *service.args, *(vacation.args if vacation else ())]
    names = {p[0]: p[1] for p in params}
    key = ", ".join([*(p[1] for p in batch.args), "n"]) + ","
    body = [
        *law_lines(batch, service, vacation, names),
        "",
        "def columns(n):  # depend on the batch law only: shared by the points of an array (_columns)",
        "    def make():",
        "        pmf, tail, _, _, geometric, _ = batch(n)",
        "        return convolution_blocks(ctx, pmf, tail, n, geometric)",
        "",
        f"    return _columns(({key}), make, n)",
        "",
        "return service_counts, vacation_counts, batch, columns, b1, f1",
    ]
    scalars = [p[1] for p in params]
    flags = f"single={single}, whole={whole}"
    kernel_fn = ["def _laws(ctx, " + ", ".join(scalars) + "):",
                 '    """The kernel callables of one parameter point (floats; or of many: arrays over points and',
                 '    ctx = Float64Points, for the count kernels that take numbers over points): count sequences,',
                 '    batch vectors and convolution columns, b1, f1."""',
                 *(f"    {line}" if line else "" for line in body), "", "",
                 "def _kernel(" + ", ".join(scalars) + "):",
                 '    """The package\'s FiniteVacation kernel for one parameter point (floats)."""',
                 "    service_counts, vacation_counts, batch, columns, b1, f1 = _laws(_CTX, " + ", ".join(scalars) + ")",
                 f"    return FiniteVacation(_CTX, service_counts, vacation_counts, batch, {scalars[0]}, b1, f1, {flags}, "
                 "columns=columns)"]
    if not whole:
        over = (over_points(service.law), vacation is None or over_points(vacation.law))
        kernel_fn += ["", "", *_POINTS_KERNEL.format(flags=flags, over=over).strip("\n").splitlines()]
    checks = [f"_check({p[1]!r}, {p[1]}, {p[3]!r})" for p in params]
    laws = f"{batch.label} batches, {service.label} service, " + (f"{vacation.label} vacations" if vacation
                                                                   else "no vacations")
    lowest = 0 if vacation is None else 1
    out = {}
    for measure, meta in docs.items():
        notes = [f"M[X]/G/1/r with {laws}; {'whole' if whole else 'partial'} admission"
                 f"{', single vacations' if single else ''}.", f"Unit of the result: {meta.units or meta.kind.value}.",
                 f"Source: {meta.source or SOURCE}.", "",
                 "Numeric arguments may be numpy arrays; they broadcast together. Returns a float, or an array",
                 "of the broadcast shape, with a last axis over r when r is a sequence. The offered load may be",
                 "given instead of the rate: f(batch_mean=..., ..., r=..., load=rho_bar).",
                 "",
                 *(_COST_WHOLE if whole else _COST_PARTIAL),
                 "Bad input raises ValueError naming the parameter; a float64 underflow raises FloatingPointError",
                 "naming the point (an array's points are then computed one by one, so no other point is affected)."]
        arg_lines = [(p[1], p[2]) for p in params] + [("r", f"waiting places (integer >= {lowest}; the customer in "
                                                           "service not counted), or a sequence of them")]
        statements = [*checks, f"rs, single = _capacities(r, {lowest})"]
        point = f"lambda *point: _sweep(_kernel(*point), {measure!r}, rs), ({', '.join(scalars)},), single"
        if whole:
            statements.append(f"return _broadcast({point}, width=len(rs))")
        else:
            shared = tuple(range(1, 1 + len(batch.args)))
            statements.append(f"return _broadcast({point},")
            statements.append(f"                  lambda rows: _sweep_points(_kernel_points(rows), {measure!r}, rs), "
                              f"{shared!r}, _chunk(rs), len(rs))")
        factor = f"({print_expr(batch.law.mean, names)}) * ({print_expr(moment(service.law, 1), names)})"
        load = ("lam", factor, [(p[1], p[3]) for p in params[1:]])  # rho_bar = lam l1 b1
        code = "\n".join([SWEEP_HELPERS.strip("\n"), "", "", *kernel_fn, "", "",
                          generated_function(measure, arg_lines, f"{meta.help[0].upper()}{meta.help[1:]}.", notes,
                                             statements, load=load)])
        out[measure] = KernelModule(measure, f"{meta.help} of M[X]/G/1/r with {laws}.", SOURCE,
                                    ("context", "points", "vacation"), code)
    from . import codegen_finite_wait

    out.update(codegen_finite_wait.forms(request))  # wait_tail, ...: built when written
    return out
