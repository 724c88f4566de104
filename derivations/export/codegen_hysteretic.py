"""Generated code for the hysteretic overload control: ``qderive codegen hysteretic``.

The measures of M[X]|G|1|(L,H)|(H,R) (Sopin 2013, chapter 3; ``docs/theory/chapter3.md``) need the
embedded chain (16), GTH and the subtraction-free solve of (21), not a closed form. The
generated module is the package's kernels copied verbatim
(:mod:`qderive.numeric.kernels.hysteretic` and what it uses: the arrival counts, the batch
vectors and columns, the count sequences, GTH and the M-matrix solve), plus, for the chosen
law families, the kernel calls of their count laws printed by SymPy from the package's own
symbolic laws, and the public function::

    qderive codegen hysteretic --measure mean_cycle_time --batch geometric --service det --out tau.py
    # tau.py: mean_cycle_time(lam0, overload_factor, batch_mean, service_mean, L, H, R)

The batch rate is lambda_0 in normal mode and f lambda_0 in overload, so the count law is
printed as a function of the mode's rate ``lam``. The generated code computes the defaults of
``qderive eval hysteretic`` (event convention, interval semantics, corrected E tau_0 (21)) in
float64; where ``eval`` would switch to mpmath (the kernel's own test
:func:`~qderive.numeric.kernels.hysteretic.hysteretic_float64_trouble`, or a non-finite value, or a
probability outside [0, 1]) it emits a ``RuntimeWarning`` and returns the float64 result.

``--measure wait_tail`` (``wait_quantile``, ``sojourn_tail``, ``sojourn_quantile``): the admitted
customer's wait under ``--policy departure``, by :mod:`.codegen_finite_wait`.
"""

from __future__ import annotations

from ...symbolic.batches import BatchLaw
from ...symbolic.capabilities import Rule, declare
from ...symbolic.laws import TimeLaw
from ...symbolic.models.hysteretic import HystereticMeasures
from .codegen import CHECK_HELPER, KernelModule, generated_function, print_expr
from .codegen_inputs import THRESHOLDS_HELPER, inputs_function
from .families import family, moment

__all__ = ["forms", "SOURCE"]

SOURCE = ("Sopin 2013, chapter 3: embedded chain (16), (17), Statement 3 (18), (19), (20), corrected (21), (22), "
          "(23); docs/theory/chapter3.md sections 1-7 (event convention, interval semantics)")

_HELPERS = '''
_CTX = FLOAT64


''' + CHECK_HELPER + '''


''' + THRESHOLDS_HELPER + '''


def _trusted(values):
    """Why qderive eval would recompute this float64 result with mpmath (None: it would not)."""
    reason = hysteretic_float64_trouble(values, _CTX.eps)
    for key in HYSTERETIC_KEYS:
        v = float(values[key])
        if reason is None and not math.isfinite(v):
            reason = f"{key} is not finite in float64"
        if reason is None and key in ("p_normal", "p_overload", "p_discard", "loss_probability") and not 0 <= v <= 1:
            reason = f"{key} = {v!r} lies outside [0, 1] in float64"
    return reason


def _each(point, params, thresholds):
    """``point(*params, *thresholds)`` at one point (a float), or at every point of the broadcast array
    parameters (an array of their shape), one embedded-chain solve per point."""
    if all(type(p) is float or type(p) is int for p in params):
        return point(*params, *thresholds)
    arrays = numpy.broadcast_arrays(*[numpy.asarray(p, dtype=float) for p in params])
    out = numpy.empty(arrays[0].shape)
    for idx in numpy.ndindex(out.shape):
        out[idx] = point(*[float(a[idx]) for a in arrays], *thresholds)
    return float(out) if out.ndim == 0 else out
'''


@declare(
    Rule("convention", lambda c: c.value != "event", "the generated code computes the event convention (the "
         "defaults of qderive eval hysteretic)"),
    Rule("semantics", lambda s: s.value != "interval", "the generated code computes the interval semantics"),
    Rule("thesis_form", bool, "the generated code computes the corrected E tau_0, not the thesis's (21)"),
    Rule("policy", lambda p: p.value != "departure", "the generated code computes the departure policy (the "
         "thesis's embedded chain)"),
    independent={**{name: "an argument of the generated function" for name in ("rate", "overload_factor", "L", "H",
                                                                                 "R")},
                 "service": "its family is fixed by codegen --service; its numbers are arguments",
                 "batch": "its family is fixed by codegen --batch; its numbers are arguments"})
def forms(request) -> dict:
    """``measure -> KernelModule`` for the law families of ``request`` (:class:`HystereticCodegenFamilies`)."""
    from . import codegen_finite_wait

    batch = family(request.batch, "batch", BatchLaw)
    service = family(request.service, "service", TimeLaw)
    params, scalars, kernel_fn = inputs_function(request, batch, service)
    checks = [f"{p[0]} = _check({p[0]!r}, {p[0]}, {p[2]!r})" for p in params]
    laws = f"{batch.label} batches, {service.label} service"
    out = {}
    for f, meta in HystereticMeasures.measure_fields():
        if meta.optional:  # the laws of --distribution are not generated
            continue
        notes = [f"M[X]|G|1|(L,H)|(H,R) hysteretic overload control with {laws}; event convention,",
                 "interval semantics, corrected E tau_0 (the defaults of `qderive eval hysteretic`).",
                 f"Unit of the result: {meta.units or meta.kind.value}. Source: {meta.source or SOURCE}.", "",
                 "The offered load may be given instead of the rate: f(..., load=rho_0), rho_0 = lam0 l1 b1.",
                 "Numeric arguments other than L, H, R may be numpy arrays; they broadcast together, and the result",
                 "is an array of their shape (a float for numbers).",
                 "Cost: one embedded-chain solve per parameter point, O(R^2) float64 operations; the points of an",
                 "array are solved one by one (the chain's matrices depend on every parameter: not vectorised).",
                 "Bad input raises ValueError naming the parameter. Where `qderive eval` would",
                 "recompute with mpmath (kappa_inf(I - P_0) eps > 1e-6: light load with a large H, where (21) is",
                 "ill-conditioned; a failed renewal identity; a non-finite value) a RuntimeWarning is emitted and",
                 "the float64 result is returned."]
        arg_lines = [(p[0], p[1]) for p in params] + [
            ("L", "abatement threshold (integer >= 1): overload -> normal when a departure leaves L - 1"),
            ("H", "onset threshold (integer, L < H): normal -> overload when the count reaches H"),
            ("R", "discard threshold = capacity (integer, H < R), the customer in service included")]
        statements = [*checks, "L, H, R = _thresholds(L, H, R)",
                      f"return _each(_{f.name}_point, ({', '.join(scalars)},), (L, H, R))"]
        point = [f"def _{f.name}_point({', '.join(scalars + ['L', 'H', 'R'])}):",
                 f'    """{f.name} at one parameter point (floats; L, H, R checked)."""',
                 f"    inputs = _inputs({', '.join(scalars + ['R'])})",
                 "    values = hysteretic_measures(_CTX, inputs, L, H, R, H)  # onset H: the event convention",
                 "    reason = _trusted(values)",
                 "    if reason is not None:",
                 "        warnings.warn(f'{reason}: `qderive eval hysteretic` would evaluate this case with mpmath; '",
                 "                      'the float64 result may be inaccurate', RuntimeWarning, stacklevel=4)",
                 f"    return float(values[{f.name!r}])"]
        names = {a[0]: a[1] for a in (*batch.args, *service.args)}
        factor = f"({print_expr(batch.law.mean, names)}) * ({print_expr(moment(service.law, 1), names)})"
        load = ("lam0", factor, [(p[0], p[2]) for p in params[1:]])  # rho_0 = lam0 l1 b1
        code = "\n".join(["import warnings", "", _HELPERS.strip("\n"), "", "", *kernel_fn, "", "", *point, "", "",
                          generated_function(f.name, arg_lines, f"{meta.help[0].upper()}{meta.help[1:]}.", notes,
                                             statements, load=load)])
        out[f.name] = KernelModule(f.name, f"{meta.help} of M[X]|G|1|(L,H)|(H,R) with {laws}.", SOURCE,
                                   ("context", "hysteretic", "batches", "counts"), code)
    out.update(codegen_finite_wait.hysteretic_forms(request))  # wait_tail, ...: built when written
    return out
