"""The kernel inputs of one parameter point, printed for generated code: shared by a model's measures and its
wait tails (:mod:`.codegen_vacation`, :mod:`.codegen_hysteretic`, :mod:`.codegen_finite_wait`).

* :func:`law_lines` -- the count and batch kernel calls that
  :class:`qderive.numeric.kernels.vacation.FiniteVacation` takes (finite vacation queue);
* :func:`inputs_function` and :data:`THRESHOLDS_HELPER` -- the inputs of
  :func:`qderive.numeric.kernels.hysteretic.hysteretic_inputs` and the check of L, H, R (hysteretic control).

Each is printed by SymPy from the package's own symbolic laws (``docs/theory/chapter2.md`` section 3).
"""

from __future__ import annotations

from ...symbolic.errors import ParameterError
from .codegen import print_call, print_expr
from .families import LAM, moment

__all__ = ["law_lines", "inputs_function", "THRESHOLDS_HELPER"]

#: the check of L, H, R in generated code (also in the generated wait tails of :mod:`.codegen_finite_wait`)
THRESHOLDS_HELPER = '''
def _thresholds(L, H, R):
    """L, H, R as integers with 1 <= L < H < R (the rule of qderive's hysteretic models)."""
    out = []
    for name, value in (("L", L), ("H", H), ("R", R)):
        try:
            ok = float(value) == int(value)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValueError(f"{name} = {value!r}: must be an integer")
        out.append(int(value))
    L, H, R = out
    if not 1 <= L < H < R:
        raise ValueError(f"L, H, R = {L}, {H}, {R}: must satisfy 1 <= L < H < R")
    return L, H, R
'''


def law_lines(batch, service, vacation, names) -> list:
    """Source lines (in a function with ``ctx`` and ``lam`` defined) of ``service_counts(n)``,
    ``vacation_counts(n)`` (None without vacations), ``batch(n)`` and the means ``b1``, ``f1``: the kernel calls
    of the families' count and batch laws that :class:`~qderive.numeric.kernels.vacation.FiniteVacation` takes
    (printed by SymPy from the package's own symbolic laws)."""
    from ...numeric.sequences import batch_kernel, count_kernel

    bcall, geometric, support = batch_kernel(batch.law)
    geo = "None" if geometric is None else f"({print_expr(geometric[0], names)}, {print_expr(geometric[1], names)})"
    sup = "None" if support is None else f"tuple(s for s in {list(support)} if s <= n)"
    lines = [
        "def service_counts(n):",
        f"    return {print_call(count_kernel(service.law.count_law(LAM)), names)}",
        "",
    ]
    if vacation:
        lines += ["def vacation_counts(n):",
                  f"    return {print_call(count_kernel(vacation.law.count_law(LAM)), names)}", ""]
    else:
        lines += ["vacation_counts = None  # no vacations: the classic M[X]/G/1/r", ""]
    return lines + [
        "def batch(n):",
        f"    pmf, tail, excess = {print_call(bcall, names)}",
        f"    return pmf, tail, excess, {print_expr(batch.law.mean, names)}, {geo}, {sup}",
        "",
        f"b1 = {print_expr(moment(service.law, 1), names)}",
        f"f1 = {print_expr(moment(vacation.law, 1), names) if vacation else '0.0'}",
    ]


def inputs_function(request, batch, service):
    """(params, their names, the source lines of ``_inputs(lam0, overload_factor, <law arguments>, R)``): the
    kernel inputs (:func:`~qderive.numeric.kernels.hysteretic.hysteretic_inputs`) of one parameter point, with
    the families' batch and count kernel calls printed by SymPy; ``params`` (name, description, check)."""
    from ...numeric.sequences import batch_kernel, count_kernel

    params = [("lam0", "batch arrival rate lambda_0 in normal mode [batches per unit time]; rho_0 = lam0 l_1 b_1",
               "> 0"),
              ("overload_factor", "f = lambda_1 / lambda_0 in [0, 1]: the batch rate in overload is f lam0 (1: pure "
               "discard hysteresis, 0: complete blocking)", "[0, 1]"),
              *[(a[1], a[2], a[3]) for a in batch.args], *[(a[1], a[2], a[3]) for a in service.args]]
    names = {LAM: "lam", **{a[0]: a[1] for a in (*batch.args, *service.args)}}
    try:
        bcall, geometric, _ = batch_kernel(batch.law)
        counts = print_call(count_kernel(service.law.count_law(LAM)), names)
    except (ParameterError, ValueError) as exc:
        raise ParameterError(f"--batch {request.batch} --service {request.service}: no generated code for these "
                             f"families ({exc})") from None
    geo = "None" if geometric is None else f"({print_expr(geometric[0], names)}, {print_expr(geometric[1], names)})"
    scalars = [p[0] for p in params]
    body = [
        f"pmf, tail, excess = {print_call(bcall, names, n='R')}",
        f"b1 = {print_expr(moment(service.law, 1), names)}  # mean service time",
        f"l1 = {print_expr(batch.law.mean, names)}  # mean batch size",
        "rates = (lam0, lam0 * overload_factor)",
        "",
        "def service_counts(s, n):",
        "    lam = rates[s]  # batches arriving at the mode's rate during one service",
        f"    return {counts}",
        "",
        "def columns():",
        f"    return list(convolution_blocks(ctx, pmf, tail, R, {geo}))",
        "",
        "return hysteretic_inputs(ctx, service_counts, (pmf, tail, excess), columns, rates,",
        "                         lam0 * (1 - overload_factor), b1, l1, R)",
    ]
    kernel_fn = ["def _inputs(" + ", ".join(scalars + ["R"]) + "):",
                 '    """The kernel inputs of one parameter point (independent of L and H)."""',
                 "    ctx = _CTX", *(f"    {line}" if line else "" for line in body)]
    return params, scalars, kernel_fn


def over_points(law) -> bool:
    """Whether the count kernels of a time law's arrivals take numbers over points (``counts.OVER_POINTS``)."""
    from ...numeric.kernels.counts import OVER_POINTS
    from ...numeric.sequences import KernelCall, count_kernel

    def ok(call):
        return call.function.__name__ in OVER_POINTS and all(ok(a) for a in call.args if isinstance(a, KernelCall))

    return ok(count_kernel(law.count_law(LAM)))
