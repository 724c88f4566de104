"""Generated code for the hysteretic overload control: ``qderive codegen hysteretic``.

The measures of M[X]|G|1|(L,H)|(H,R) (Sopin 2013, chapter 3; ``spec/chapter3.md``) need the
embedded chain (16) and the solve (21), not a closed form. The generated module is the
numpy-only runtime :mod:`qderive.derivations._runtime_arrivals` (count laws, batch
laws, arrival counts) followed by :mod:`qderive.derivations._runtime_hysteretic` (inputs,
embedded chain, GTH, the subtraction-free solve of (21), the measures), plus the closed forms
of the inputs for the chosen law *families*, printed by SymPy from the symbolic laws the
package uses. The count law of the batches arriving during a service depends on the mode's
batch rate (lambda_0 in normal mode, lambda_1 = f lambda_0 in overload), so it is generated
as a function of the rate ``lam``. The families are fixed when the code is generated; their
numeric parameters are the arguments of the generated function::

    qderive codegen hysteretic --measure mean_cycle_time --batch geometric --service det --out tau.py
    # tau.py: mean_cycle_time(lam0, overload_factor, batch_mean, service_mean, L, H, R)

The generated code reproduces the defaults of ``qderive eval hysteretic``: the event
convention, interval semantics and the corrected E tau_0 (21), in float64. Where ``eval``
would switch to mpmath (kappa_inf(I - P_0) eps > 1e-6, a failed renewal identity, or
under/overflow) it emits a ``RuntimeWarning`` instead.
"""

from __future__ import annotations

from .codegen import RecursionModule, generated_function
from .codegen_vacation import BATCH_FAMILIES, LAM, TIME_FAMILIES, batch_family, count_code, printer, time_family

__all__ = ["MEASURE_DOCS", "RUNTIMES", "add_codegen_arguments", "recursion_forms"]

RUNTIMES = ("_runtime_arrivals", "_runtime_hysteretic")
SOURCE = ("Sopin 2013, chapter 3: embedded chain (16), (17), Statement 3 (18), (19), (20), corrected (21), "
          "(22), (23); spec/chapter3.md sections 1-7 (event convention, interval semantics)")

#: measure -> (description, unit); the keys of `qderive eval hysteretic --json`
MEASURE_DOCS = {
    "p_normal": ("Probability P(S_0) of the normal mode (interval semantics), 1 - (18) - (19).", "probability"),
    "p_overload": ("Probability P(S_1) of the overload mode (interval semantics), (18).", "probability"),
    "p_discard": ("Probability P(S_2) of the discard mode (interval semantics), (19).", "probability"),
    "mean_normal_time": ("Mean sojourn E tau_0 in the normal mode, corrected (21) (idle periods included).",
                         "time"),
    "mean_return_time": ("Mean return time E tau_12 = E tau_0 (P(S_1) + P(S_2)) / P(S_0), (22).", "time"),
    "mean_cycle_time": ("Mean control cycle E tau = E tau_0 + E tau_12, (23).", "time"),
    "loss_probability": ("Fraction of the offered customers (rate lambda_0 l_1) that are not served: "
                         "throttled in overload, discarded in discard mode, or overflowing R.", "probability"),
    "throughput": ("Customers served per unit time, 1 / C (17).", "customers per unit time"),
}


def add_codegen_arguments(parser) -> None:
    """Options of ``qderive codegen hysteretic``: ``--batch FAMILY`` (default const) and ``--service FAMILY``."""
    parser.add_argument("--batch", default="const", metavar="FAMILY",
                        help=f"batch-size family: {' | '.join(BATCH_FAMILIES)} (default const: argument batch_size)")
    parser.add_argument("--service", required=True, metavar="FAMILY", help=f"service time family: {TIME_FAMILIES}")



def recursion_forms(args) -> dict:
    """``measure -> RecursionModule`` for the law families of ``args`` (--batch, --service)."""
    b_arg, b_doc, b_ctor, b_label = batch_family(args.batch)
    service = time_family(args.service, "service")
    pr = printer()
    laws = f"{b_label}, {service.label}"
    arg_lines = [
        ("lam0", "batch arrival rate lambda_0 in normal mode (batches per unit time); rho_0 = lam0 l_1 b_1"),
        ("overload_factor", "f = lambda_1 / lambda_0 in (0, 1): the batch rate in overload is f lam0"),
        (b_arg, b_doc),
        *service.args,
        ("L", "abatement threshold (integer >= 1): overload -> normal when a departure leaves L - 1 customers"),
        ("H", "onset threshold (integer, L < H): normal -> overload when the count reaches H"),
        ("R", "discard threshold = capacity (integer, R >= H + 2, above the mean batch size): the count "
              "reaching R switches to discard; discard -> overload when a departure leaves H"),
    ]
    checks = [
        "lam0 = _positive('lam0', lam0)",
        "overload_factor = _overload_factor(overload_factor)",
        *service.checks,
        "L, H, R = _hysteretic_thresholds(L, H, R)",
        f"batch = {b_ctor}({b_arg}, R)",
        "_require(batch.l1 < R, 'R', R, f'> the mean batch size {batch.l1!r} (a typical batch must fit)')",
    ]
    count_law = service.law.count_law(LAM)
    body = [
        "def service_counts(lam, n):",
        f"    # batches arriving at rate lam during a service: {type(count_law).__name__} (spec/chapter2.md section 3)",
        f"    return {count_code(count_law, pr)}",
        "",
        f"b1 = {pr.doprint(service.law.moment(1))}  # mean service time",
    ]
    forms = {}
    for measure, (description, unit) in MEASURE_DOCS.items():
        notes = [f"M[X]|G|1|(L,H)|(H,R) hysteretic overload control with {laws};",
                 "event convention, interval semantics, corrected E tau_0 (the defaults of",
                 f"`qderive eval hysteretic`). Unit of the result: {unit}.", f"Source: {SOURCE}.", "",
                 "Returns a float. Bad input raises ValueError naming the parameter. Where `qderive eval`",
                 "would switch to mpmath (kappa_inf(I - P_0) eps > 1e-6: light load rho_0 < 1 with a large H,",
                 "where (21) is ill-conditioned; a failed renewal identity; under/overflow) a RuntimeWarning",
                 "is emitted and the float64 result is returned: it may then be inaccurate."]
        statements = [*checks, "", *body, "",
                      "# the batch rate is lambda_0 in normal mode and f lambda_0 in overload: counts are a function of lam",
                      "values = hysteretic_measures(lam0, overload_factor, batch, service_counts, b1, L, H, R)",
                      f"return values[{measure!r}]"]
        code = generated_function(measure, arg_lines, description, notes, statements)
        forms[measure] = RecursionModule(measure, f"{description} M[X]|G|1|(L,H)|(H,R) with {laws}.", SOURCE,
                                         RUNTIMES, code)
    return forms
