"""Generated code for the finite vacation queue: ``qderive codegen vacation-finite``.

The measures of M[X]/G/1/r with multiple vacations (Sopin 2013, chapter 2; partial
admission, as in the thesis) need the cut recursion (2b), not a closed form. The
generated module is the numpy-only runtimes :mod:`qderive.derivations._runtime_arrivals` and
:mod:`qderive.derivations._runtime_vacation_finite` plus the closed forms of the recursion's inputs for the chosen law *families*, printed
by SymPy from the same symbolic laws the package uses: the parameters of the count law
of batches arriving during a service / vacation (``spec/chapter2.md`` section 3:
Poisson for deterministic times, negative binomial for Erlang / gamma / exponential,
mixtures for hyperexponential) and the mean times. The families are fixed when the code
is generated; their numeric parameters are the arguments of the generated function::

    qderive codegen vacation-finite --measure loss_probability --batch geometric \\
        --service erlang:k=4 --vacation exp --out loss.py
    # loss.py: loss_probability(lam, batch_mean, service_mean, vacation_mean, r)

``r`` may be a sequence of capacities (one sweep: the sequences up to max r once).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch

import sympy as sp

from qderive.symbolic import counts as _c
from qderive.symbolic import laws as _t
from qderive.symbolic._exact import ParameterError

from .codegen import RecursionModule, generated_function

__all__ = ["TIME_FAMILIES", "BATCH_FAMILIES", "MEASURE_DOCS", "LAM", "Family", "time_family", "batch_family",
           "count_code", "printer",
           "add_codegen_arguments", "recursion_forms"]

RUNTIME = ("_runtime_arrivals", "_runtime_vacation_finite")
SOURCE = ("Sopin 2013, chapter 2: cut recursion (2b), Statement 1, (9), (10), Statement 2, Theorem 1.1 (12), "
          "Theorem 1.2 (13); spec/chapter2.md sections 2-4")

#: measure -> (description, unit)
MEASURE_DOCS = {
    "loss_probability": ("Probability that a customer is lost (Theorem 1.1 (12)).", "probability"),
    "batch_blocking_probability": ("Probability that an arriving batch finds the waiting room full, p^r_r (10).",
                                   "probability"),
    "idle_probability": ("Probability P^r_e that the server is not serving (vacation or idle), Statement 2.",
                         "probability"),
    "mean_queue_length": ("Mean number waiting N^r = sum_j j p^r_j ((9), (10)).", "customers"),
    "mean_wait": ("Mean wait of an accepted customer W^r = N^r / throughput (Little).", "time"),
    "mean_number_in_system": ("Mean number in the system N^r + 1 - P^r_e.", "customers"),
    "throughput": ("Served customers per unit time (1 - P^r_e) / b_1.", "customers per unit time"),
    "p0": ("Time-stationary probability p^r_0 of an empty waiting room (Theorem 1.2 (13)).", "probability"),
    "pr": ("Time-stationary probability p^r_r of a full waiting room (10).", "probability"),
    "q0": ("Embedded probability q^r_0 (Statement 1).", "probability"),
    "qr": ("Embedded probability q^r_r (Statement 1).", "probability"),
}


@dataclass(frozen=True)
class Family:
    """A law family with its symbolic parameters: ``args`` (python name, description); ``law`` the
    symbolic law; ``checks`` generated validation lines; ``label`` words for the docstring."""

    args: tuple
    law: object
    checks: tuple
    label: str


def _spec(text: str, option: str) -> tuple[str, dict]:
    name, _, rest = text.strip().lower().partition(":")
    fixed = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not value.strip().isdigit() or int(value) < 1:
            raise ParameterError(f"--{option} {text!r}: structural parameters are integers >= 1, e.g. erlang:k=4")
        fixed[key.strip()] = int(value)
    return name, fixed


def time_family(text: str, role: str) -> Family:
    """A time law with symbolic parameters, named ``{role}_...``, from ``det | exp | erlang:k=K |
    gamma | hyperexp:n=N``."""
    name, fixed = _spec(text, role)
    what = "service" if role == "service" else "vacation"

    def sym(suffix):
        return sp.Symbol(f"{role}_{suffix}", positive=True)

    def want(keys):
        if set(fixed) != set(keys):
            need = ", ".join(f"{k}=N" for k in keys) or "no parameters"
            raise ParameterError(f"--{role} {text!r}: {name} takes {need}")

    if name in ("det", "exp", "erlang"):
        want(("k",) if name == "erlang" else ())
        m = sym("mean")
        law = {"det": lambda: _t.Deterministic(m), "exp": lambda: _t.Exponential(m),
               "erlang": lambda: _t.Erlang(fixed.get("k", 1), m)}[name]()
        label = {"det": "deterministic", "exp": "exponential", "erlang": f"Erlang-{fixed.get('k')}"}[name]
        return Family(((m.name, f"mean {what} time (time units)"),), law, (f"_positive({m.name!r}, {m.name})",),
                       f"{label} {what} times")
    if name == "gamma":
        want(())
        a, m = sym("shape"), sym("mean")
        return Family(((a.name, f"gamma shape of the {what} time (> 0)"), (m.name, f"mean {what} time (time units)")),
                       _t.Gamma(a, m), tuple(f"_positive({s.name!r}, {s.name})" for s in (a, m)), f"gamma {what} times")
    if name == "hyperexp":
        want(("n",))
        n = fixed["n"]
        if n < 2:
            raise ParameterError(f"--{role} {text!r}: a hyperexponential law needs n >= 2 phases")
        probs = [sym(f"p{i}") for i in range(1, n)]
        means = [sym(f"mean{i}") for i in range(1, n + 1)]
        last = 1 - sp.Add(*probs)
        args = tuple((p.name, f"probability of {what} phase {i} (the last phase gets 1 - the others)")
                     for i, p in enumerate(probs, 1))
        args += tuple((m.name, f"mean {what} time of phase {i} (time units)") for i, m in enumerate(means, 1))
        checks = tuple(f"_require(0 <= {p.name} <= 1, {p.name!r}, {p.name}, 'a probability')" for p in probs)
        checks += (f"_require({' + '.join(p.name for p in probs)} <= 1, {'+'.join(p.name for p in probs)!r}, "
                   f"{' + '.join(p.name for p in probs)}, '<= 1 (phase probabilities)')",)
        checks += tuple(f"_positive({m.name!r}, {m.name})" for m in means)
        return Family(args, _t.HyperExponential(tuple(probs) + (last,), tuple(means)), checks,
                       f"{n}-phase hyperexponential {what} times")
    raise ParameterError(f"--{role} {text!r}: codegen supports det | exp | erlang:k=K | gamma | hyperexp:n=N"
                         + (" | none" if role == "vacation" else "")
                         + " (uniform times: evaluate with `qderive eval`)")


#: batch family -> (argument, description, runtime constructor, docstring words)
BATCH_FAMILIES = {
    "geometric": ("batch_mean", "mean batch size l_1 (customers, >= 1)", "geometric_batch", "geometric batches"),
    "const": ("batch_size", "batch size (customers, integer >= 1)", "constant_batch", "constant batches"),
    "pmf": ("batch_pmf", "batch-size probabilities (l_1, ..., l_M), summing to 1", "pmf_batch",
            "batches with a finite size law"),
    "poisson1": ("batch_mean", "mean batch size l_1 of X = 1 + Poisson(l_1 - 1) (customers, >= 1)",
                 "poisson1_batch", "1 + Poisson batches"),
}
TIME_FAMILIES = "det | exp | erlang:k=K | gamma | hyperexp:n=N"


def add_codegen_arguments(parser) -> None:
    parser.add_argument("--batch", required=True, metavar="FAMILY",
                        help=f"batch-size family: {' | '.join(BATCH_FAMILIES)}")
    parser.add_argument("--service", required=True, metavar="FAMILY", help=f"service time family: {TIME_FAMILIES}")
    parser.add_argument("--vacation", required=True, metavar="FAMILY",
                        help=f"vacation time family: {TIME_FAMILIES} | none (no vacations)")


#: the batch rate in the generated code (a mode's rate in the hysteretic model)
LAM = sp.Symbol("lam", positive=True)
_PRINT_SETTINGS = {"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False}


def printer():
    """SymPy's NumPyPrinter with the settings of the generated code (numpy fully qualified)."""
    from sympy.printing.numpy import NumPyPrinter

    return NumPyPrinter(_PRINT_SETTINGS)


@singledispatch
def count_code(law, pr) -> str:
    """Generated call of the runtime that evaluates the count law ``law`` (beta_k, tails) for n = 0..n."""
    raise ParameterError(f"codegen: no generated code for the count law {law!r}")  # pragma: no cover


@count_code.register
def _(law: _c.PoissonCount, pr):
    return f"_poisson_counts({pr.doprint(law.mean)}, n)"


@count_code.register
def _(law: _c.NegativeBinomialCount, pr):
    # q = 1 - p0 printed as its own closed form: no subtraction at light load
    return (f"_negbin_counts({pr.doprint(law.shape)}, {pr.doprint(law.p0)}, "
            f"{pr.doprint(sp.factor(sp.cancel(1 - law.p0)))}, n)")


@count_code.register
def _(law: _c.MixtureCount, pr):
    weights = ", ".join(pr.doprint(w) for w in law.weights)
    parts = ", ".join(count_code(c, pr) for c in law.components)
    return f"_mixture_counts([{weights}], [{parts}])"


def batch_family(text: str) -> tuple:
    """(argument, description, runtime constructor, label) of the ``--batch`` family ``text``."""
    name = text.strip().lower()
    if name not in BATCH_FAMILIES:
        raise ParameterError(f"--batch {text!r}: codegen supports {' | '.join(BATCH_FAMILIES)}")
    return BATCH_FAMILIES[name]


def recursion_forms(args) -> dict:
    """``measure -> RecursionModule`` for the law families of ``args`` (--batch, --service, --vacation)."""
    b_arg, b_doc, b_ctor, b_label = batch_family(args.batch)
    service = time_family(args.service, "service")
    vacation = None if args.vacation.strip().lower() == "none" else time_family(args.vacation, "vacation")
    pr = printer()
    laws = f"{b_label}, {service.label}, " + (vacation.label if vacation else "no vacations")
    arg_lines = [("lam", "batch arrival rate lambda (batches per unit time); offered load rho_bar = lam l_1 b_1"),
                 (b_arg, b_doc), *service.args, *(vacation.args if vacation else ())]
    lowest = "1" if vacation else "0"
    arg_lines.append(("r", f"waiting places (integer >= {lowest}; the customer in service not counted), "
                           "or a sequence of them"))
    checks = ["lam = _positive('lam', lam)", *service.checks, *(vacation.checks if vacation else ())]
    # every numeric argument broadcasts except the batch pmf (a sequence) and r (a sweep)
    scalars = [a for a, _ in arg_lines if a not in ("batch_pmf", "r")]
    body = [
        "def service_counts(n):",
        f"    # batches arriving during a service: {type(service.law.count_law(LAM)).__name__} (spec/chapter2.md section 3)",
        f"    return {count_code(service.law.count_law(LAM), pr)}",
        "",
        f"b1 = {pr.doprint(service.law.moment(1))}  # mean service time",
    ]
    if vacation:
        body += [
            "",
            "def vacation_counts(n):",
            f"    # batches arriving during a vacation: {type(vacation.law.count_law(LAM)).__name__}",
            f"    return {count_code(vacation.law.count_law(LAM), pr)}",
            "",
            f"f1 = {pr.doprint(vacation.law.moment(1))}  # mean vacation time",
        ]
    else:
        body += ["vacation_counts = f1 = None  # no vacations: the classic M[X]/G/1/r"]
    forms = {}
    for measure, (description, unit) in MEASURE_DOCS.items():
        notes = [f"M[X]/G/1/r with {laws}; partial admission (a batch fills the waiting room,",
                 f"the rest of it is lost). Unit of the result: {unit}.", f"Source: {SOURCE}.", "",
                 "Numeric arguments (except batch_pmf) may be numpy arrays; they broadcast together.",
                 "Returns a float, or an array of the broadcast shape, with a last axis over r when",
                 "r is a sequence (one sweep up to max r per parameter point).",
                 "Bad input raises ValueError naming the parameter."]
        inner = [*checks, "", *body, "",
                 f"return finite_measures(lam, lambda n: {b_ctor}({b_arg}, n), service_counts, b1,",
                 f"                       vacation_counts, f1, rs)[{measure!r}]"]
        statements = ["rs, single = _capacities(r)", "",
                      f"def one({', '.join(scalars)}):  # one parameter point, every capacity in rs",
                      *(f"    {line}" if line else "" for line in inner), "",
                      f"return _broadcast(one, ({', '.join(scalars)},), single)"]
        code = generated_function(measure, arg_lines, description, notes, statements)
        forms[measure] = RecursionModule(measure, f"{description} M[X]/G/1/r with {laws}.", SOURCE, RUNTIME, code)
    return forms
