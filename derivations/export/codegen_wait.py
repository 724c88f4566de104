"""Generated code for the waiting and sojourn time of M[X]/G/1 with vacations: tails and quantiles.

``qderive codegen vacation-infinite --measure wait_tail`` (``wait_quantile``, ``sojourn_tail``,
``sojourn_quantile``) writes a numpy-only module for chosen law *families*
(:mod:`.families`: ``--service erlang:k=4`` fixes k, the mean is an argument)::

    qderive codegen vacation-infinite --measure wait_tail --batch geometric --service erlang:k=4 \\
        --vacation exp --out tail.py
    # tail.py: wait_tail(t, lam, batch_mean, service_mean, vacation_mean), vectorised over t

The module holds

* the transform W(s) of :func:`qderive.symbolic.closed_forms.vacation_wait.wait_transform` (or
  T(s) = W(s) beta(s)) with the families' laws, lambda and the law parameters as symbols, printed
  by SymPy (:func:`qderive.numeric.compile.numpy_source`); P(W = 0) (``p_wait_zero``) and the mean
  (``wait_moments``) the same way;
* the package's kernels, copied verbatim: the float64 context, the Euler inversion
  (:mod:`qderive.numeric.kernels.inversion`) and :mod:`qderive.numeric.kernels.tails` (the float64
  self-check with two parameter sets and the quantile's bracket and Illinois search), which
  :mod:`qderive.numeric.response` runs for ``qderive eval --wait-tail`` too;
* the public function, with the argument checks of :data:`~.codegen.CHECK_HELPER` (the families'
  field constraints, rho_bar = lam l1 b1 < 1).

Where ``qderive eval`` would recompute with mpmath (two float64 parameter sets disagreeing beyond
2e-10 relative, a tail below 1e-6), the generated function raises ``ValueError`` naming the point
and the ``qderive eval ... --digits`` command that computes it. Transforms with kinks
(deterministic, uniform, empirical, lognormal laws) are refused, as ``eval`` refuses their tails.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ...symbolic.errors import ParameterError
from .codegen import (
    CHECK_HELPER,
    KernelModule,
    condition_source,
    generated_function,
    print_expr,
)

__all__ = ["forms", "MEASURES", "SOURCE", "TAIL_HELPERS", "TAIL_KERNELS", "TAIL_WORDS", "TIME_SYMBOLS", "command_template",
           "public_parts", "tail_families", "tail_notes"]

SOURCE = ("W(s) = W_b(s) J(s) V_r(s) (Fuhrmann and Cooper 1985; Chaudhry and Templeton 1983), "
          "qderive.symbolic.closed_forms.vacation_wait; inverted by the Euler algorithm (Abate and Whitt 1995)")

#: measure -> (time, question)
MEASURES = {"wait_tail": ("wait", "tail"), "wait_quantile": ("wait", "quantile"),
            "sojourn_tail": ("sojourn", "tail"), "sojourn_quantile": ("sojourn", "quantile")}

TAIL_KERNELS = ("context", "inversion", "tails")

TIME_SYMBOLS = {"wait": "W", "sojourn": "T"}
TAIL_WORDS = {"wait": "waiting time W (of a random customer, FIFO)",
          "sojourn": "sojourn time T = W + the customer's own service"}

TAIL_HELPERS = '''
_CTX = FLOAT64

''' + CHECK_HELPER.rstrip("\n") + '''


def _scalar(name, value, constraint):
    """One parameter as a float (the transform is compiled for one parameter point; t and q are the vectors)."""
    v = _check(name, value, constraint)
    if numpy.ndim(v) != 0:
        raise ValueError(f"{name} = {value!r}: must be a number (one parameter point; only the first argument "
                         "may be an array)")
    return float(v)


def _points(name, value, constraint):
    """The first argument as a flat float array, and the shape of the result (() for a number)."""
    v = _check(name, value, constraint)
    return numpy.atleast_1d(numpy.asarray(v, dtype=float)).ravel(), numpy.shape(v)


def _shaped(out, shape):
    return float(out[0]) if shape == () else out.reshape(shape)


def _time_tails(t, params, p0, option, what):
    """P(what > t) at the points t, from the transform of the time (the kernels' float64 self-check)."""
    flat, shape = _points("t", t, ">= 0")
    out = numpy.full(flat.shape, 1.0 - p0)
    positive = flat > 0
    if positive.any():
        G = tail_transform(lambda s: _transform(s, *params))
        values, why, where = float64_tails(_CTX, G, flat[positive])
        if why is not None:
            point = float(flat[positive][where])
            raise ValueError(f"t = {point!r}: {why}: this float64 module cannot give P({what} > t) to "
                             f"1e-9 relative (it has no mpmath); compute it with `{_command(params, option, point)}`")
        out[positive] = numpy.minimum(values, 1.0)
    return _shaped(out, shape)


def _time_quantiles(q, params, p0, mean, option):
    """min{t : P(time <= t) >= q} at the levels q (the kernels' bracket and Illinois search)."""
    flat, shape = _points("q", q, "[0, 1]")
    if numpy.any((flat <= 0) | (flat >= 1)):
        raise ValueError(f"q = {q!r}: levels must lie strictly between 0 and 1")
    G = tail_transform(lambda s: _transform(s, *params))
    out = numpy.zeros(flat.shape)
    for i, level in enumerate(flat.tolist()):
        if p0 >= level:
            continue  # the atom at 0 already reaches q
        root = float64_quantile(_CTX, G, 1.0 - level, mean)
        if root is None:
            raise ValueError(f"q = {level!r}: the float64 inversion lost its accuracy near this quantile (a tail "
                             "below 1e-6, or the two parameter sets disagree beyond 2e-10 relative); compute it with "
                             f"`{_command(params, option, level)}`")
        out[i] = root
    return _shaped(out, shape)
'''


def forms(request) -> dict:
    """``measure -> WaitModule`` for :data:`MEASURES` (built when written: ``--list`` needs no family)."""
    return {m: WaitModule(m, request) for m in MEASURES}


@dataclass(frozen=True)
class WaitModule:
    """A tail or quantile module of ``qderive codegen vacation-infinite`` (module docstring)."""

    measure: str
    request: object
    #: ``build(measure, request) -> KernelModule``; None: the infinite room's (``codegen_finite_wait`` has another)
    build: object = None

    def python_module(self, model: str) -> str:
        return (self.build or _build)(self.measure, self.request).python_module(model)

    def c_sources(self, model: str, header_name: str):
        raise ParameterError(f"--lang c: {model} {self.measure} runs an algorithm; C is generated for closed-form "
                             "measures only (use --lang python)")


def tail_families(measure: str, request):
    """(batch, service, vacation or None, policy) from the codegen options; errors name the option."""
    from ...symbolic.batches import BatchLaw
    from .families import family

    example = "e.g. --batch geometric --service erlang:k=4 --vacation exp"
    if request is None or request.batch is None or request.service is None:
        raise ParameterError(f"--measure {measure} needs the law families --batch, --service and --vacation "
                             f"(or --no-vacation), {example}")
    vac_text = request.vacation
    vac_none = vac_text is not None and vac_text.strip().lower() == "none"
    if request.no_vacation and vac_text is not None and not vac_none:
        raise ParameterError("--no-vacation", f"contradicts --vacation {vac_text}")
    if vac_text is None and not request.no_vacation:
        raise ParameterError(f"--measure {measure} needs --vacation FAMILY (or --no-vacation / --vacation none), "
                             f"{example}")
    none = vac_none or request.no_vacation
    if none and request.vacation_policy.value == "single":
        raise ParameterError("--vacation-policy", "single needs a vacation family (not none)", "single")
    batch = family(request.batch, "batch", BatchLaw)
    service = smooth_family(request.service, "service")
    vacation = None if none else smooth_family(vac_text, "vacation")
    return batch, service, vacation, "none" if none else request.vacation_policy.value


@functools.lru_cache(maxsize=64)
def smooth_family(text: str, role: str):
    """The :class:`~.families.Family` of ``--{role} text``, unless its transform has kinks (module docstring).

    The test is the engine's own (:mod:`qderive.numeric.engines.vacation_wait`: an ``exp(-s D)`` factor
    or an integral in the LST), applied to the law class's example before the family is built (so that
    the reason given is the kinks, not the family's other limits) and to the family's law. Built once per
    process for each text and role (a Family is frozen; a refusal is raised again each time).
    """
    from types import SimpleNamespace

    from ...numeric.engines.vacation_wait import smooth_laws
    from ...symbolic.laws import TimeLaw
    from ...symbolic.params import split_spec
    from .families import family

    def refuse(law):
        ok, _ = smooth_laws(SimpleNamespace(service=law, vacation=None))
        if not ok:
            raise ParameterError(f"--{role} {text}: no generated tail or quantile for this family: its transform has "
                                 "exp(-s D) factors or no closed form (contour inversion cannot resolve the kinks of "
                                 "such laws, and the exact lattice sums by which `qderive eval` answers a constant "
                                 "law are not generated); choose a smooth family (exp, erlang:k=K, gamma, "
                                 "hyperexp:n=N, ph:n=N, coxian:n=N), or ask `qderive eval`")

    cls = TimeLaw.registered().get(split_spec(text, f"--{role}")[0])
    examples = getattr(cls, "examples", None)
    if examples is not None and examples():
        refuse(examples()[0])
    fam = family(text, role, TimeLaw)
    refuse(fam.law)
    return fam


def command_template(batch, service, vacation, policy: str, model: str = "vacation-infinite", extra=()) -> str:
    """``qderive eval`` of the model, as a str.format template in the argument names (``extra``: more options)."""
    def spec(fam):
        text = fam.law.spec_text()
        for _, name, *_ in fam.args:
            text = re.sub(rf"\b{re.escape(name)}\b", "{" + name + "!r}", text)
        return text

    parts = [f"qderive eval {model} --rate {{lam!r}}", f"--batch {spec(batch)}", f"--service {spec(service)}",
             f"--vacation {spec(vacation) if vacation else 'none'}", *extra]
    if policy == "single":
        parts.append("--vacation-policy single")
    return " ".join(parts)


def tail_notes(laws_text: str, kind: str, question: str, source: str) -> list:
    """The notes of a generated tail or quantile module of M[X]/G/1 (the docstring's lines): the model, the
    source, and the float64 self-check of ``qderive eval`` with what the function raises where it fails."""
    return [f"M[X]/G/1 with {laws_text}; the {TAIL_WORDS[kind]}.", f"Source: {source}.", "",
            "Float64 with the self-check of `qderive eval` (two parameter sets of the Euler algorithm must agree to",
            "2e-10 relative, the tail must be >= 1e-6); where it fails, ValueError names the point and the",
            "`qderive eval ... --digits 15` command that computes it. Bad input raises ValueError naming the",
            "argument." if question == "tail" else
            "argument; a quantile search that cannot bracket its root raises TailError (an ArithmeticError)."]


def public_parts(measure: str, words: str, names) -> tuple:
    """(first argument and its description, the function's description, its body) of a generated tail or quantile
    function over ``_parameters(*names)``, ``_atom``, ``_mean`` and the helpers of ``TAIL_HELPERS`` (``words``:
    what the time is)."""
    kind, question = MEASURES[measure]
    what, option = TIME_SYMBOLS[kind], f"{kind}-{question}"
    if question == "tail":
        first = ("t", (f"time(s) t >= 0 [time]: a number, or an array (vectorised; the result has its shape); "
                       f"t = 0 gives P({what} > 0) = 1 - P({what} = 0)"))
        description = f"P({what} > t), the tail of the {words}."
        body = ["params = _parameters(" + ", ".join(names) + ")",
                f"return _time_tails(t, params, _atom(*params), {option!r}, {what!r})"]
    else:
        first = ("q", "level(s) 0 < q < 1: a number or an array (the result has its shape)")
        description = (f"min{{t : P({what} <= t) >= q}}, the q-quantile of the {words} [time] "
                       f"(0 where q <= P({what} = 0)).")
        body = ["params = _parameters(" + ", ".join(names) + ")",
                f"return _time_quantiles(q, params, _atom(*params), _mean(*params), {option!r})"]
    return first, description, body


def _build(measure: str, request) -> KernelModule:
    import sympy as sp

    from ...numeric.compile import numpy_source
    from ...symbolic.closed_forms import vacation_wait as VW
    from .families import LAM, moment

    kind, question = MEASURES[measure]
    batch, service, vacation, policy = tail_families(measure, request)
    params = [(LAM, "lam", "batch arrival rate lambda [batches per unit time]; offered load rho_bar = lam l1 b1 < 1",
               "> 0"), *batch.args, *service.args, *(vacation.args if vacation else ())]
    names = {p[0]: p[1] for p in params}
    laws = {"service": service.law, "batch": batch.law, "rate": LAM}
    c0 = vacation.law.lst(LAM) if vacation else sp.Integer(0)  # varphi(lambda): no batch during a vacation
    if vacation:
        laws.update(vacation=vacation.law, zero_count=c0)
    transform = (VW.wait_transform if kind == "wait" else VW.sojourn_transform)(policy, **laws)

    b = [moment(service.law, i) for i in (1, 2)]
    f = [moment(vacation.law, i) for i in (1, 2)] if vacation else [1, 1]  # placeholders no expression uses
    l_ = [batch.law.mean, moment(batch.law, 2)]
    if kind == "wait":
        p0 = VW.p_wait_zero(policy).xreplace(dict(zip(VW.moment_symbols(0), (LAM, b[0], f[0], l_[0], c0))))
    else:
        p0 = sp.Integer(0)  # T = W + B and the smooth service laws have no atom at 0
    moments = VW.wait_moments if kind == "wait" else VW.sojourn_moments
    mean = moments(policy, 1)[0].xreplace(dict(zip(VW.moment_symbols(1), (LAM, *b, *f, *l_, c0))))
    rho_bar = LAM * batch.law.mean * moment(service.law, 1)

    source = numpy_source(transform, [VW.s, *(p[0] for p in params)], "_transform")
    source = source.split("\n\n\nRATIONAL = ")[0].removeprefix("import numpy\n").strip("\n")
    scalars = [p[1] for p in params]
    what = TIME_SYMBOLS[kind]
    fn_params = "def _parameters(" + ", ".join(scalars) + "):"
    checks = [fn_params, '    """The parameters as floats, checked (ValueError naming a bad one)."""']
    checks += [f"    {p[1]} = _scalar({p[1]!r}, {p[1]}, {p[3]!r})" for p in params]
    checks += [f"    if not _holds({condition_source(rho_bar < 1, names)}):",
               "        raise ValueError(f\"rho_bar = lam l1 b1 = {" + print_expr(rho_bar, names) + ":.6g} must be < 1: "
               "the infinite-room queue has no stationary regime otherwise\")",
               f"    return ({', '.join(scalars)},)"]
    template = command_template(batch, service, vacation, policy)
    command = [
        "def _command(params, option, point):",
        '    """The `qderive eval` command that computes this point with mpmath."""',
        f"    values = dict(zip({tuple(scalars)!r}, params))",
        f"    return {template!r}.format(**values) + f\" --{{option}} {{point!r}} --digits 15\"",
    ]
    atoms = [
        "def _atom(" + ", ".join(scalars) + "):",
        f'    """P({what} = 0)."""',
        f"    return {print_expr(p0, names)}",
        "",
        "",
        "def _mean(" + ", ".join(scalars) + "):",
        f'    """E {what}: the start of the quantile\'s bracket."""',
        f"    return {print_expr(mean, names)}",
    ]

    laws_text = (f"{batch.label} batches, {service.label} service, "
                 + (f"{vacation.label} vacations ({policy})" if vacation else "no vacations"))
    notes = tail_notes(laws_text, kind, question, SOURCE)
    first, description, body = public_parts(measure, TAIL_WORDS[kind], scalars)
    arg_lines = [first, *[(p[1], p[2]) for p in params]]
    code = "\n".join([TAIL_HELPERS.strip("\n"), "", "", "# W(s) printed by SymPy" if kind == "wait" else
                      "# T(s) = W(s) beta(s) printed by SymPy", source, "", "", *checks, "", "", *command, "", "",
                      *atoms, "", "", generated_function(measure, arg_lines, description, notes, body)])
    return KernelModule(measure, f"{description} M[X]/G/1 with {laws_text}.", SOURCE, TAIL_KERNELS, code)
