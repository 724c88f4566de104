"""Generated code for the wait of an admitted customer of M[X]/G/1/r with vacations: tails and quantiles.

``qderive codegen vacation-finite --measure wait_tail`` (``wait_quantile``, ``sojourn_tail``,
``sojourn_quantile``) writes a numpy-only module for chosen law *families* (:mod:`.families`), as
``codegen vacation-infinite`` does for the infinite room (:mod:`.codegen_wait`)::

    qderive codegen vacation-finite --measure wait_tail --batch geometric --service erlang:k=4 \\
        --vacation exp --out tail.py
    # tail.py: wait_tail(t, lam, batch_mean, service_mean, vacation_mean, r), vectorised over t

The module runs the algorithm of :mod:`qderive.numeric.engines.vacation_finite_wait` (whose docstring
derives it: W*(s) = N(s) / N(0), N(s) = sum_n Phi_n(s) A_n(s) + t_I A_I(s)) with the package's kernels,
copied verbatim:

* :class:`qderive.numeric.kernels.vacation.FiniteVacation` for the embedded law q^r (Statement 1, or level
  crossing for whole admission), with the families' count and batch kernel calls printed by SymPy
  (:func:`.codegen_inputs.law_lines`, the code ``codegen vacation-finite --measure loss_probability``
  runs);
* :mod:`qderive.numeric.kernels.finite_wait` for the s-independent data
  (:func:`~qderive.numeric.kernels.finite_wait.wait_count_sequences`,
  :func:`~qderive.numeric.kernels.finite_wait.wait_finite_start`, the series of N(0) and E W) and the
  transform at the nodes by batches (:func:`~qderive.numeric.kernels.finite_wait.wait_levels_at`,
  :func:`~qderive.numeric.kernels.finite_wait.wait_admission_sum`), as the engine does in float64;
* the Euler inversion and :mod:`qderive.numeric.kernels.tails` (the float64 self-check with two parameter
  sets, the quantile search), with the tail and quantile helpers of :mod:`.codegen_wait`.

Only beta(s) and the difference quotient (beta(s) - beta(lambda)) / (lambda - s) of the service (and
vacation) law are printed by SymPy, from the expressions the engine compiles
(:func:`qderive.numeric.engines.finite_laws.lst_expressions`). The data of a parameter point
are built once and kept (the last few points). Where ``qderive eval`` would recompute with mpmath (the
self-check fails, a tail below 1e-6, the float64 data over- or underflow), the generated function raises
``ValueError`` naming the point and the ``qderive eval vacation-finite ... --digits`` command that computes
it.

Laws with kinks get the exact sums of positive terms ``eval`` answers them by (issue 28, item 4; no transform
is inverted; :func:`_families` chooses the route):

* a phase-type service (exp, erlang:k=K, hyperexp:n=N, coxian:n=N, ph:n=N) with a constant (``det``),
  empirical (``empirical:n=N``: the N sample values are arguments, :func:`.families.family`) or uniform (a
  mixture of constants: ``linear_survival``, Gauss-Legendre over d as eval) vacation: the sums (K1)-(K2) of
  :class:`qderive.numeric.kernels.finite_kinked.KinkedSums`, set up by the kernel's ``uniformized`` from the
  service's PH(alpha, T) printed by SymPy;
* a constant service (``det``) with no vacations or a vacation of exact survival pieces (exp, hyperexp:n=N, det,
  empirical:n=N; erlang, coxian, ph as a uniformized matrix piece (F4)): the sums (F1)-(F4) of
  :class:`qderive.numeric.kernels.lattice_finite.ConstantSums`;
* a constant service with a smooth vacation of no exact pieces whose float64 survival function a kernel computes
  (``gamma``, any shape: the law's ``survival_kernel``, :func:`qderive.numeric.kernels.survival.gamma_survival`,
  the function ``Gamma.survival_many`` runs): the same sums (F1) with the vacation's residual weights (F2) by the
  piecewise Gauss-Legendre quadrature (F9) of
  :class:`qderive.numeric.kernels.vacation_quadrature.QuadraturePiece` (two orders, their difference in the error
  bound; shipped with ``lattice_finite``, which asks the piece by attribute); a point whose survival function has no
  float64 value (a shape below 1/20) raises ValueError with the ``--digits`` command;
* a constant service with a uniform vacation (issue 28 item 4, dq28): the same sums (F1) with the quadrature piece
  split at the vacation's kinks a and b (every k - u_j) and its remainder bound on Bernstein ellipses (the law's
  ``survival_bound_kernel``, :func:`qderive.numeric.kernels.survival.uniform_survival_bound`), the survival function
  :func:`qderive.numeric.kernels.survival.uniform_survival` (the function ``Uniform.survival_many`` runs); b > a is
  checked with the parameters;
* an empirical service ``empirical:n=N`` (its N values arguments, :func:`.families.family`) with no vacations or
  any vacation above: the sums (F1), (F5) of :class:`qderive.numeric.kernels.lattice_finite.LatticeServiceSums`
  (the j services ahead by convolutions of the sample's lattice law, the service period's residual by its
  lattice piece) on the values' decimal lattice h, the greatest common divisor of their decimals, as eval's
  ``exact_lattice`` takes it for the decimal values of the command; a sample with more than 9 decimals or whose
  sums span more than the limit ``lattice_levels`` (its default) raises ValueError with the eval command (eval
  bounds such a law by certified brackets, not generated);

over the same ``_data`` (the state at the batch's arrival), under ``eval``'s float64 policy (rows and steps
extended until the truncation is below 1e-11 of the tail, a tail trusted within 1e-10 of its error bound, else
ValueError with the ``--digits 15`` command); a time array is one sum per time. A float t on a lattice point j D
of a constant service falls on either side of an atom of the wait (the idle server's batches under the single
policy) by the rounding of j D (eval's t is exact). Still refused with the reason: a file's sample, uniform,
gamma or lognormal services with kinked vacations, a sample service with a uniform vacation (eval bounds it by
steps (F7), not generated), a lognormal vacation (its count sequences are computed in the package by
a refined quadrature, not by a kernel: no generated ``_data``, although its survival function is the kernel's
:func:`~qderive.numeric.kernels.survival.lognormal_survival`), and the certified brackets of a service off a short
decimal lattice ((F5), (F6)).

The hysteretic model (``qderive codegen hysteretic --measure wait_tail``; ``--policy departure``, event
convention) runs the same route (:mod:`qderive.numeric.engines.hysteretic_wait`): the embedded law
q[s][j] (16) of the package's :class:`~qderive.numeric.kernels.hysteretic.HystereticSolution` (inputs as
:func:`.codegen_inputs.inputs_function` prints them), one data part per mode with a positive rate
(:func:`~qderive.numeric.kernels.finite_wait.wait_mode_start`) and N(s) summed over the parts::

    qderive codegen hysteretic --measure wait_tail --batch geometric --service erlang:k=2 --out tail.py
    # tail.py: wait_tail(t, lam0, overload_factor, batch_mean, service_mean, L, H, R)
"""

from __future__ import annotations

from ...symbolic.errors import ParameterError
from .codegen import KernelModule, generated_function
from .codegen_wait import (
    MEASURES,
    TAIL_HELPERS,
    TIME_SYMBOLS,
    WaitModule,
    command_template,
    public_parts,
    smooth_family,
)

__all__ = ["forms", "hysteretic_forms", "SOURCE", "HYSTERETIC_SOURCE"]

SOURCE = ("the admitted customer's W*(s) = N(s) / N(0) of qderive.numeric.engines.vacation_finite_wait (PASTA, "
          "renewal reward over the embedded intervals (4), (9), Statement 1); inverted by the Euler algorithm "
          "(Abate and Whitt 1995)")

HYSTERETIC_SOURCE = ("the admitted customer's W*(s) = N(s) / N(0) summed over the modes, "
                     "qderive.numeric.engines.hysteretic_wait (embedded chain (16), (17); --policy departure); "
                     "inverted by the Euler algorithm (Abate and Whitt 1995)")

_KERNELS = ("context", "vacation", "finite_wait", "inversion", "tails")
_HYSTERETIC_KERNELS = ("context", "hysteretic", "batches", "counts", "finite_wait", "inversion", "tails")

_WORDS = {"wait": "waiting time W of an admitted customer (FIFO)",
          "sojourn": "sojourn time T = W + the customer's own service, of an admitted customer"}

FINITE_HELPERS = '''
#: complex numbers per block of nodes x (r + 1) levels in the transform (16 MB an array; measured at r = 200:
#: blocks of 5000 nodes take half the time of all 106 000 nodes of 1000 t at once, and of blocks of 1000)
_BLOCK = 1 << 20
#: the s-independent data of the last parameter points (:func:`_data`)
_DATA = {}


def _capacity(r, lowest):
    """r as an integer >= lowest (ValueError naming it)."""
    try:
        ok = float(r) == int(r)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or int(r) < lowest:
        raise ValueError(f"r = {r!r}: must be an integer >= {lowest} (waiting places, the customer in service "
                         "not counted)")
    return int(r)


def _by_blocks(s, block, nodes):
    """``nodes(z)`` at the complex nodes s (any shape), ``block`` nodes at a time (float64 underflow ignored)."""
    z = numpy.asarray(s, dtype=complex).ravel()
    out = numpy.empty(z.shape, dtype=complex)
    with numpy.errstate(under="ignore"):
        for i in range(0, len(z), block):
            out[i: i + block] = nodes(z[i: i + block])
    return out.reshape(numpy.shape(s))


def _full(value, z):
    """A transform's value at the nodes z as a complex array of their length (a constant broadcast)."""
    return numpy.asarray(value, dtype=complex) * numpy.ones(len(z))


def _counts(ctx, counts):
    """The count sequences over 0..top (wait_count_sequences: long enough for the mean)."""
    got = wait_count_sequences(ctx, counts, 1)
    if got is None:
        raise ArithmeticError("a service or vacation holds too many batch arrivals (more than 2^18 terms)")
    return got


def _refused(params, why):
    """The ValueError of a parameter point whose float64 data fail, with the command that computes it."""
    return ValueError(f"{why}: this float64 module cannot compute the data of this point; compute it with "
                      f"`{_command(params, 'wait-tail', 1.0)}`")


def _kept(params, data):
    if len(_DATA) >= 8:
        _DATA.pop(next(iter(_DATA)))
    _DATA[params] = data
    return data
'''


_SUMS_HELPERS = '''
#: the engine's float64 policy for these sums (qderive.numeric.engines.vacation_finite_wait, the tails of a sum of
#: positive terms): rows and Horner steps are extended until their truncation is below _GOAL of the tail, and a
#: tail whose error bound (rounding and truncation) exceeds _TRUST of it is not returned
_GOAL, _TRUST = 1e-11, 1e-10


class _Part:
    """The data of one parameter point under the names the sums read (the engine's WaitData)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def _gauss(n, ctx):
    """Gauss-Legendre nodes and weights on [-1, 1] (numpy's, as the engine's float64 path)."""
    return numpy.polynomial.legendre.leggauss(n)


def _sums(params):
    """The sums of one parameter point (the kernel's class over _data's level rows, _new_sums; kept)."""
    d = _data(params)
    if "sums" not in d:
        fields = {k: d[k] for k in ("r", "lam", "pmf", "tail", "support", "geometric", "beta", "phi", "t_idle",
                                     "Ws", "Wv")}
        try:
            with numpy.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
                d["sums"] = _new_sums([_Part(ctx=_CTX, whole=_WHOLE, **fields)], params)
        except ArithmeticError as exc:
            raise _refused(params, exc) from None
    return d["sums"]


def _tail_at(params, t, option):
    """P(_WHAT > t) for one t > 0 by the sums (at t - _time_shift(params): 1 below 0), trusted within _TRUST (ValueError
    with the command otherwise)."""
    u = t - _time_shift(params)
    if u < 0:
        return 1.0
    try:
        with numpy.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
            value, error = _sums(params).tail(u, _GOAL)
    except ArithmeticError as exc:  # a size limit of the sums (a vacation of too many service phases)
        raise ValueError(f"t = {t!r}: {exc}: this float64 module cannot give P({_WHAT} > t); compute it with "
                         f"`{_command(params, option, t)}`") from None
    if not (math.isfinite(value) and math.isfinite(error) and (value == 0 or (value > 0 and error <= _TRUST))):
        raise ValueError(f"t = {t!r}: the float64 sums' error bound exceeds {_TRUST:g} of P({_WHAT} > t) (it has no "
                         f"mpmath); compute it with `{_command(params, option, t)}`")
    return min(1.0, float(value))


def _time_tails(t, params, p0, option, what):
    """P(what > t) at the points t: one sum per point (t = 0: 1 - P(what = 0))."""
    flat, shape = _points("t", t, ">= 0")
    out = numpy.full(flat.shape, 1.0 - p0)
    for i in numpy.flatnonzero(flat > 0):
        out[i] = _tail_at(params, float(flat[i]), option)
    return _shaped(out, shape)


def _time_quantiles(q, params, p0, mean, option):
    """min{t : P(time <= t) >= q} at the levels q: the root of log P(time > t) = log(1 - q) in log t (the kernels'
    bracket from the mean by factors of 4, then the safeguarded Illinois method to 1e-13, as qderive eval)."""
    flat, shape = _points("q", q, "[0, 1]")
    if numpy.any((flat <= 0) | (flat >= 1)):
        raise ValueError(f"q = {q!r}: levels must lie strictly between 0 and 1")
    out = numpy.zeros(flat.shape)
    tail_option = option.replace("quantile", "tail")
    for i, level in enumerate(flat.tolist()):
        if p0 >= level:
            continue  # the atom at 0 already reaches q
        lev = math.log(1.0 - level)

        def g(logt):
            return math.log(max(_tail_at(params, math.exp(logt), tail_option), 1e-300)) - lev

        try:
            lo, hi, glo, ghi = quantile_bracket(g, mean if mean > 0 else 1.0, math.log(4.0), math.exp, math.log)
            out[i] = math.exp(quantile_illinois(g, lo, hi, glo, ghi, 1e-13))
        except ValueError as exc:
            raise ValueError(f"q = {level!r}: {exc}; compute it with `{_command(params, option, level)}`") from None
    return _shaped(out, shape)
'''


def _module_code(helpers, laws: str, lst_source: str, *sections) -> str:
    """The generated module's text: the shipped helpers, the SymPy-printed transforms of the ``laws``, then the
    sections (lists of lines, or one text), each two blank lines apart (both rooms' modules)."""
    parts = [h.strip("\n") for h in helpers]
    parts.append(f"# beta(s) and (beta(s) - beta(lam)) / (lam - s) of the {laws}, printed by SymPy\n{lst_source}")
    parts += ["\n".join(sec) if isinstance(sec, list) else sec for sec in sections]
    return "\n\n\n".join(parts)


def forms(request) -> dict:
    """``measure -> WaitModule`` for :data:`~.codegen_wait.MEASURES`, built when written (a family with kinks
    is refused then, not when another measure of ``codegen vacation-finite`` is asked for)."""
    return {m: WaitModule(m, request, _build) for m in MEASURES}


def _families(measure: str, request):
    """(batch, service, vacation or None, policy, whole, route) from the codegen options; errors name the option.
    ``route``: None for smooth laws (the transform inverted), else the builder of a module of exact sums:
    :func:`_constant_module` (a constant service) or :func:`_kinked_module` (a phase-type service with a vacation
    of steps)."""
    from ...symbolic.batches import BatchLaw
    from .families import family

    vac_text = request.vacation
    none = vac_text.strip().lower() == "none"
    policy = "none" if none else request.vacation_policy.value
    if none and request.vacation_policy.value == "single":
        raise ParameterError("--vacation-policy", "single needs a vacation family (not none)", "single")
    batch = family(request.batch, "batch", BatchLaw)
    try:
        service, constant = smooth_family(request.service, "service"), False
    except ParameterError as refusal:
        service, constant = _constant_service(request.service, refusal), True
    try:
        vacation, stepped = (None if none else smooth_family(vac_text, "vacation")), False
    except ParameterError as refusal:
        vacation, stepped = _stepped_vacation(vac_text, refusal), True
    route = None
    if constant:
        pieces = service.law.survival_pieces()
        route = _constant_module if len(pieces) == 1 and pieces[0][0] == 1 else _lattice_module
        # a kinked vacation (uniform) by the quadrature (F9) only with a constant service: with a sample's lattice the
        # cells would split at k - t + j h for every lattice step (eval bounds that one by steps (F7))
        if vacation is not None and vacation.law.survival_pieces() is None and vacation.law.phase_type() is None \
                and (_survival_kernel(vacation.law) is None
                     or (route is _lattice_module and vacation.law.survival_kinks())):
            why = ("kinks that the lattice of a sample's sums would split at every step" if
                   _survival_kernel(vacation.law) is not None else "no float64 survival function for generated code")
            raise ParameterError(f"--vacation {vac_text}: no exact survival pieces and {why}, so the finite room "
                                 "has no generated exact tail with the "
                                 f"service {request.service} (the sums (F1)-(F5) need an exp, hyperexp:n=N, "
                                 "erlang:k=K, coxian:n=N, ph:n=N, det or empirical:n=N vacation, the quadrature (F9) "
                                 "a gamma one, or with a det service a uniform one)")
    elif stepped:
        route = _kinked_module
        if service.law.phase_type() is None:
            raise ParameterError(f"--service {request.service}: not phase-type, so the finite room has no generated "
                                 f"exact tail with the vacation {vac_text} (the sums (K1)-(K2) uniformize a "
                                 "phase-type service: exp, erlang:k=K, hyperexp:n=N, coxian:n=N, ph:n=N)")
    return batch, service, vacation, policy, request.admission.value == "whole", route


def _kink_order_lines(vacation, names):
    """``_parameters`` lines checking that the kinks of a vacation whose survival function a kernel computes increase
    (a uniform law: b > a, its ``_validate``), ValueError naming both; none for any other vacation."""
    from .codegen import print_expr

    if vacation is None or _survival_kernel(vacation.law) is None:
        return []
    kinks = vacation.law.survival_kinks()
    lines = []
    for a, b in zip(kinks, kinks[1:]):
        na, nb = print_expr(a, names), print_expr(b, names)
        lines += [f"    if not {nb} > {na}:",
                  f"        raise ValueError(f'{nb} = {{{nb}!r}} must exceed {na} = {{{na}!r}}')"]
    return lines


def _survival_kernel(law):
    """(kernel function, the law's arguments) of a law whose float64 survival function a kernel computes
    (``survival_kernel``: gamma, lognormal; :mod:`qderive.numeric.kernels.survival`), for the quadrature (F9) of a
    smooth vacation; None for any other law."""
    got = getattr(law, "survival_kernel", None)
    return None if got is None else got()


def _steps(law) -> bool:
    """True when P(T > x) of the (symbolic) law is steps w 1{x < d} (a constant, an empirical law)."""
    pieces = law.survival_pieces()
    return bool(pieces) and all(len(p) == 3 and p[1] == 0 and p[2] is not None for p in pieces)


def _constant_service(text, refusal):
    """The service family of ``--service text`` when it is a constant D (``det``): the exact sums (F1)-(F4) of
    :class:`~qderive.numeric.kernels.lattice_finite.ConstantSums` (shipped); anything else re-raises the smooth
    families' ``refusal``."""
    from ...symbolic.laws import TimeLaw
    from .families import family

    fam = family(text, "service", TimeLaw, samples=True)
    pieces = fam.law.survival_pieces()
    if not _steps(fam.law):
        if fam.law.survival_kinks() or pieces:
            raise ParameterError(f"--service {text}: no generated tail or quantile in the finite room: of the services "
                                 "with kinks only a constant (det) and a sample on a lattice (empirical:n=N) have "
                                 "generated sums (qderive eval answers this one by certified brackets (F5), which are "
                                 "not generated)")
        raise refusal
    return fam


def _stepped_vacation(text, refusal):
    """The vacation family of ``--vacation text`` whose survival function is steps w 1{x < d} (a constant, an
    empirical law of N values given as arguments: ``empirical:n=N``, :func:`.families.family`): the exact sums
    (K1)-(K2) of :class:`~qderive.numeric.kernels.finite_kinked.KinkedSums` with a phase-type service, or (F1)
    with a constant one (shipped). Anything else re-raises the smooth families' ``refusal``."""
    from ...symbolic.laws import TimeLaw
    from .families import family

    fam = family(text, "vacation", TimeLaw, samples=True)
    if not (_steps(fam.law) or _vacation_parts(fam.law) is not None):
        raise refusal
    return fam


def _vacation_parts(law):
    """(atoms ((w, d), ...), densities ((c, x_0, x_1), ...)) of a kinked vacation law with symbolic parameters: its
    steps w 1{x < d} (``survival_pieces``), or its linear pieces (``linear_survival``: uniform, a mixture of constant
    vacations with the density c on [x_0, x_1]) by the engine's
    :func:`~qderive.numeric.engines.vacation_finite_wait.linear_parts`; None for any other law."""
    from ...numeric.engines.finite_laws import linear_parts

    if _steps(law):
        return tuple((w, d) for w, _, d in law.survival_pieces()), ()
    lin = getattr(law, "linear_survival", None)
    return None if lin is None else linear_parts(lin())


def _lst_source(service, vacation, lst_args):
    """``_lsts(s, lam, ...)``: [beta(s), (beta(s) - beta(lam)) / (lam - s)] (and the vacation's), printed by SymPy
    from the engine's expressions."""
    import sympy as sp

    from ...numeric.compile import numpy_source
    from ...numeric.engines.finite_laws import lst_expressions
    from .families import LAM

    s = sp.Symbol("s")
    exprs = []
    for law in (service, vacation):
        if law is None:
            continue
        pair, (s_e, lam_e) = lst_expressions(law.law)
        exprs += [e.xreplace({s_e: s, lam_e: LAM}) for e in pair]
    source = numpy_source(exprs, [s, *lst_args], "_lsts")
    return source.split("\n\n\nRATIONAL = ")[0].removeprefix("import numpy\n").strip("\n")


def _build(measure: str, request) -> KernelModule:
    from .codegen_inputs import law_lines
    from .families import LAM

    kind, question = MEASURES[measure]
    batch, service, vacation, policy, whole, route = _families(measure, request)
    params = [(LAM, "lam", "batch arrival rate lambda [batches per unit time] (any load)", "> 0"), *batch.args,
              *service.args, *(vacation.args if vacation else ())]
    names = {p[0]: p[1] for p in params}
    lowest = 0 if vacation is None else 1
    scalars = [p[1] for p in params]
    all_names = [*scalars, "r"]
    lst_names = ["lam", *(p[1] for p in service.args), *(p[1] for p in (vacation.args if vacation else ()))]
    what = TIME_SYMBOLS[kind]
    single, vac = policy == "single", vacation is not None

    checks = ["def _parameters(" + ", ".join(all_names) + "):",
              '    """The parameters as floats (r an integer), checked (ValueError naming a bad one)."""',
              *(f"    {p[1]} = _scalar({p[1]!r}, {p[1]}, {p[3]!r})" for p in params),
              *_kink_order_lines(vacation, names),
              f"    r = _capacity(r, {lowest})",
              f"    return ({', '.join(all_names)},)"]
    extra = ["--capacity {r!r}"] + (["--admission whole"] if whole else [])
    template = command_template(batch, service, vacation, policy, "vacation-finite", extra)
    command = [
        "def _command(params, option, point):",
        '    """The `qderive eval` command that computes this point with mpmath."""',
        f"    values = dict(zip({tuple(all_names)!r}, params))",
        f"    return {template!r}.format(**values) + f\" --{{option}} {{point!r}} --digits 15\"",
    ]
    law_body = [f"    {line}" if line else "" for line in law_lines(batch, service, vacation, names)]
    data = [
        "def _data(params):",
        '    """The s-independent data of one parameter point (kept for later calls): the embedded law q^r of the',
        "    FiniteVacation kernel, the count sequences, wait_finite_start, N(0) and the first coefficient of N(-s)",
        '    (the mean); ValueError with the mpmath command where float64 over- or underflows."""',
        "    got = _DATA.get(params)",
        "    if got is not None:",
        "        return got",
        f"    {', '.join(all_names)}, = params",
        "    ctx = _CTX",
        *law_body,
        "    try:",
        "        with numpy.errstate(under='ignore'):",
        "            kernel = FiniteVacation(ctx, service_counts, vacation_counts, batch, lam, b1, f1, "
        f"single={single}, whole={whole})",
        '            q = kernel.engine.at(r)["q"]',
        "            pmf, tail, _, _, geometric, support = batch(r + 1)",
        "            beta, btail, btail2 = _counts(ctx, service_counts)",
        ("            phi, vtail, vtail2 = _counts(ctx, vacation_counts)" if vac else
         "            phi = vtail = vtail2 = None"),
        f"            d = wait_finite_start(ctx, q, lam, pmf, tail, beta, phi, {policy!r}, {whole}, support, geometric)",
        "            series = (wait_level_series(ctx, lam, btail, btail2, d['Ws'], vtail, vtail2, d['Wv'], 1) if r",
        "                      else numpy.zeros((0, 2)))",
        f"            N = wait_admission_series(ctx, series, numpy.array([1.0, b1]), tail, pmf, d['t_idle'], {whole})",
        "    except ArithmeticError as exc:",
        "        raise _refused(params, exc) from None",
        "    if not (numpy.all(numpy.isfinite(d['Ws'])) and numpy.all(numpy.isfinite(d['Wv']))",
        "            and numpy.all(numpy.isfinite(d['Zp'])) and math.isfinite(N[0]) and N[0] > 0):",
        "        raise _refused(params, 'the level vectors over- or underflow float64')",
        "    d.update(lam=lam, pmf=pmf, tail=tail, beta=beta, phi=phi, N0=float(N[0]), N1=float(N[1]), b1=b1,",
        "             support=support, geometric=geometric, r=r)",
        "    return _kept(params, d)",
    ]
    laws_text = (f"{batch.label} batches, {service.label} service, "
                 + (f"{vacation.label} vacations ({policy})" if vacation else "no vacations")
                 + f", {'whole' if whole else 'partial'} admission")
    r_line = ("r", f"waiting places r (an integer >= {lowest}; the customer in service not counted)")
    if route is not None:
        return route(measure, service, vacation, names, whole, all_names, laws_text,
                     [*[(p[1], p[2]) for p in params], r_line], [checks, command, data])
    transform = [
        "def _transform(s, *params):",
        f'    """E e^{{-s {what}}} at the complex nodes s (any shape): N(s) / N(0)'
        + (" times beta(s)" if kind == "sojourn" else "") + ', by batches (the engine\'s float64 way)."""',
        "    d = _data(params)",
        f"    {', '.join(all_names)}, = params",
        "",
        "    def nodes(z):",
        f"        lst = _lsts(z, {', '.join(lst_names)})",
        "        b, g0 = _full(lst[0], z), _full(lst[1], z)",
        ("        h0 = _full(lst[3], z)" if vac else "        h0 = None"),
        "        Phi = wait_levels_at(_CTX, z, d['lam'], g0, d['beta'], d['Ws'], h0, d['phi'], d['Wv'])",
        f"        N = wait_admission_sum(_CTX, Phi, b, d['tail'], d['pmf'], d['t_idle'], {whole})",
        "        return N / d['N0']" + (" * b" if kind == "sojourn" else ""),
        "",
        "    return _by_blocks(s, max(256, _BLOCK // (r + 1)), nodes)",
    ]
    atoms, public, description = public_source(measure, f"M[X]/G/1/r with {laws_text}", "vacation-finite", all_names,
                                         [*[(p[1], p[2]) for p in params], r_line])
    code = _module_code([TAIL_HELPERS, FINITE_HELPERS], "service (and vacation) law",
                        _lst_source(service, vacation, [next(k for k, v in names.items() if v == n) for n in lst_names]),
                        checks, command, data, transform, atoms, public)
    return KernelModule(measure, f"{description} M[X]/G/1/r with {laws_text}.", SOURCE, _KERNELS, code)


def public_source(measure, model_text, model, all_names, param_lines, source=SOURCE, cost=None):
    """(the ``_atom`` and ``_mean`` source lines, the public function's source, its description) of a generated
    tail or quantile module over ``_data(params)`` (keys ``zero_weight``, ``N0``, ``N1``, ``b1``)."""
    kind, question = MEASURES[measure]
    what = TIME_SYMBOLS[kind]
    atoms = [
        "def _atom(*params):",
        f'    """P({what} = 0)' + (": t_I A_I(oo) / N(0)." if kind == "wait" else
                                  " = 0 (service times are a.s. positive).") + '"""',
        ("    d = _data(params)\n    return d['zero_weight'] / d['N0']" if kind == "wait" else "    return 0.0"),
        "",
        "",
        "def _mean(*params):",
        f'    """E {what} = [s^1] N(-s) / N(0)' + (" + b1" if kind == "sojourn" else "")
        + ': the start of the quantile\'s bracket."""',
        "    d = _data(params)",
        "    return d['N1'] / d['N0']" + (" + d['b1']" if kind == "sojourn" else ""),
    ]

    notes = [f"{model_text}; the {_WORDS[kind]}.",
             f"Source: {source}.", ""]
    notes += cost or [
             "Cost: the model's parameters are numbers (not arrays): the finite-room data (O(r^2) float64",
             "operations) are computed once per parameter set and kept for the next calls; " + (
                 "an array of times t" if question == "tail" else "an array of levels q"),
             "is one inversion for all of them (the transform at the nodes of every t at once)." if question == "tail"
             else "is searched level by level (a bracket, then the Illinois method: tens of tail evaluations each).",
             "Float64 with the self-check of `qderive eval` (two parameter sets of the Euler algorithm must agree to",
             "2e-10 relative, the tail must be >= 1e-6); where it fails, ValueError names the point and the",
             f"`qderive eval {model} ... --digits 15` command that computes it. Bad input raises ValueError",
             "naming the argument." if question == "tail" else
             "naming the argument; a quantile search that cannot bracket its root raises TailError."]
    first, description, body = public_parts(measure, _WORDS[kind], all_names)
    return atoms, generated_function(measure, [first, *param_lines], description, notes, body), description


# -- the hysteretic model (``qderive codegen hysteretic --measure wait_tail``) -------------------------------


def hysteretic_forms(request) -> dict:
    """``measure -> WaitModule`` of ``qderive codegen hysteretic`` (built when written)."""
    return {m: WaitModule(m, request, _build_hysteretic) for m in MEASURES}


def _build_hysteretic(measure: str, request) -> KernelModule:
    """The generated module for M[X]|G|1|(L,H)|(H,R) under ``--policy departure`` (event convention): the embedded
    law q[s][j] (16) of the package's :class:`~qderive.numeric.kernels.hysteretic.HystereticSolution` (inputs by
    :func:`.codegen_inputs.inputs_function`), one data part per mode with a positive rate
    (:func:`~qderive.numeric.kernels.finite_wait.wait_mode_start`), N(s) summed over them."""
    from ...numeric.sequences import batch_kernel, count_kernel
    from ...symbolic.batches import BatchLaw
    from .codegen import print_call, print_expr
    from .codegen_inputs import THRESHOLDS_HELPER, inputs_function
    from .families import LAM, family, moment

    kind, question = MEASURES[measure]
    batch = family(request.batch, "batch", BatchLaw)
    service = smooth_family(request.service, "service")
    params, scalars, inputs_fn = inputs_function(request, batch, service)
    names = {LAM: "lam", **{a[0]: a[1] for a in (*batch.args, *service.args)}}
    svc = [a[1] for a in service.args]
    all_names = [*scalars, "L", "H", "R"]
    what = TIME_SYMBOLS[kind]
    bcall, _, _ = batch_kernel(batch.law)

    checks = ["def _parameters(" + ", ".join(all_names) + "):",
              '    """The parameters as floats (L, H, R integers), checked (ValueError naming a bad one)."""',
              *(f"    {p[0]} = _scalar({p[0]!r}, {p[0]}, {p[2]!r})" for p in params),
              "    L, H, R = _thresholds(L, H, R)",
              f"    return ({', '.join(all_names)},)"]

    def spec(fam):
        import re

        text = fam.law.spec_text()
        for _, name, *_ in fam.args:
            text = re.sub(rf"\b{re.escape(name)}\b", "{" + name + "!r}", text)
        return text

    template = (f"qderive eval hysteretic --rate {{lam0!r}} --overload-factor {{overload_factor!r}} "
                f"--batch {spec(batch)} --service {spec(service)} --thresholds {{L!r}},{{H!r}},{{R!r}} "
                "--policy departure")
    command = [
        "def _command(params, option, point):",
        '    """The `qderive eval` command that computes this point with mpmath."""',
        f"    values = dict(zip({tuple(all_names)!r}, params))",
        f"    return {template!r}.format(**values) + f\" --{{option}} {{point!r}} --digits 15\"",
    ]
    data = [
        "def _service_counts(" + ", ".join(["ctx", "lam", *svc, "n"]) + "):",
        '    """The count sequences of the batches arriving at rate lam during one service, over 0..n."""',
        f"    return {print_call(count_kernel(service.law.count_law(LAM)), names)}",
        "",
        "",
        "def _data(params):",
        '    """The s-independent data of one parameter point (kept for later calls): the embedded law q[s][j] (16) of',
        "    the HystereticSolution kernel (onset H: the event convention), one part per mode with a positive rate",
        '    (wait_mode_start), N(0) and the mean summed over them; ValueError with the mpmath command where float64',
        '    over- or underflows."""',
        "    got = _DATA.get(params)",
        "    if got is not None:",
        "        return got",
        f"    {', '.join(all_names)}, = params",
        "    ctx = _CTX",
        "    try:",
        "        with numpy.errstate(under='ignore'):",
        f"            inputs = _inputs({', '.join(scalars + ['R'])})",
        "            q = HystereticSolution(ctx, inputs, L, H, R, H).embedded_law()",
        f"            pmf, tail, _ = {print_call(bcall, names, n='R')}",
        f"            b1 = {print_expr(moment(service.law, 1), names)}",
        "            parts = []",
        "            for mode, lam in enumerate((lam0, lam0 * overload_factor)):",
        "                if lam == 0:",
        "                    continue  # no arrivals in this mode",
        f"                beta, btail, btail2 = _counts(ctx, lambda n: _service_counts({', '.join(['ctx', 'lam', *svc, 'n'])}))",
        "                d = wait_mode_start(ctx, q, mode, lam, pmf, beta)",
        "                series = wait_level_series(ctx, lam, btail, btail2, d['Ws'], order=1)",
        "                N = wait_admission_series(ctx, series, numpy.array([1.0, b1]), tail, pmf, d['t_idle'], False)",
        "                if not (numpy.all(numpy.isfinite(d['Ws'])) and numpy.all(numpy.isfinite(d['Zp']))",
        "                        and math.isfinite(N[0])):",
        "                    raise ArithmeticError('the level vectors over- or underflow float64')",
        "                d.update(lam=lam, beta=beta, N0=float(N[0]), N1=float(N[1]))",
        "                parts.append(d)",
        "    except ArithmeticError as exc:",
        "        raise _refused(params, exc) from None",
        "    return _kept(params, {'parts': parts, 'pmf': pmf, 'tail': tail, 'b1': b1, 'zero_weight': parts[0]['t_idle'],",
        "                          'N0': sum(p['N0'] for p in parts), 'N1': sum(p['N1'] for p in parts)})",
    ]
    transform = [
        "def _transform(s, *params):",
        f'    """E e^{{-s {what}}} at the complex nodes s (any shape): N(s) / N(0)'
        + (" times beta(s)" if kind == "sojourn" else "") + ', N summed over the modes, by batches."""',
        "    d = _data(params)",
        f"    {', '.join(all_names)}, = params",
        "",
        "    def nodes(z):",
        "        N = 0",
        "        for part in d['parts']:",
        "            lst = _lsts(z, " + ", ".join(["part['lam']", *svc]) + ")",
        "            b, g0 = _full(lst[0], z), _full(lst[1], z)",
        "            Phi = wait_levels_at(_CTX, z, part['lam'], g0, part['beta'], part['Ws'])",
        "            N = N + wait_admission_sum(_CTX, Phi, b, d['tail'], d['pmf'], part['t_idle'], False)",
        "        return N / d['N0']" + (" * b" if kind == "sojourn" else ""),
        "",
        "    return _by_blocks(s, max(256, _BLOCK // R), nodes)",
    ]
    laws_text = f"{batch.label} batches, {service.label} service"
    model_text = f"M[X]|G|1|(L,H)|(H,R) hysteretic overload control with {laws_text} (--policy departure)"
    atoms, public, description = public_source(
        measure, model_text, "hysteretic", all_names,
        [*[(p[0], p[1]) for p in params],
         ("L", "abatement threshold (integer >= 1): overload -> normal when a departure leaves L - 1"),
         ("H", "onset threshold (integer, L < H): normal -> overload when the count reaches H (event convention)"),
         ("R", "discard threshold = capacity (integer, H < R), the customer in service included")],
        HYSTERETIC_SOURCE)
    code = _module_code([TAIL_HELPERS, THRESHOLDS_HELPER, FINITE_HELPERS, "\n".join(inputs_fn)], "service law",
                        _lst_source(service, None, [LAM, *(a[0] for a in service.args)]),
                        checks, command, data, transform, atoms, public)
    return KernelModule(measure, f"{description} {model_text}.", HYSTERETIC_SOURCE, _HYSTERETIC_KERNELS, code)


# -- laws with kinks: exact sums of positive terms (a constant service (F1)-(F4); a phase-type service with a
# -- vacation of steps (K1)-(K2)) -----------------------------------------------------------------------------


KINKED_SOURCE = ("the positive sums (K1)-(K2) of qderive.numeric.kernels.finite_kinked over the state at the batch's "
                 "arrival of qderive.numeric.engines.vacation_finite_wait (the service uniformized, the constant "
                 "vacation's residual by overlap weights and Horner's rule; no transform is inverted)")

CONSTANT_SOURCE = ("the positive sums (F1)-(F4) of qderive.numeric.kernels.lattice_finite over the state at the "
                   "batch's arrival of qderive.numeric.engines.vacation_finite_wait (j customers ahead wait j D; the "
                   "period's residual by regularized incomplete gamma series; no transform is inverted)")

LATTICE_SOURCE = ("the positive sums (F1), (F5) of qderive.numeric.kernels.lattice_finite over the state at the "
                  "batch's arrival of qderive.numeric.engines.vacation_finite_wait (the j services ahead by the "
                  "convolutions of the sample's lattice law; no transform is inverted)")

QUADRATURE_SOURCE = ("the positive sums (F1) of qderive.numeric.kernels.lattice_finite over the state at the batch's "
                     "arrival of qderive.numeric.engines.vacation_finite_wait (j customers ahead wait j D), the "
                     "vacation's residual weights (F2) by the piecewise Gauss-Legendre quadrature (F9) of "
                     "qderive.numeric.kernels.vacation_quadrature in the age (no transform is inverted)")


def _printed(values, names):
    """A tuple of SymPy-printed expressions, as source."""
    from .codegen import print_expr

    return "(" + ", ".join(print_expr(v, names) for v in values) + ",)"


def _ph_lines(law, names, what):
    """Source lines that set ``got`` = the kernel's ``uniformized(alpha, T)`` of the law's PH(alpha, T) printed by
    SymPy, and check it is a law with no atom at 0 (ValueError naming ``what``)."""
    alpha, T = law.phase_type()
    return [f"    alpha = {_printed(alpha, names)}",
            "    T = (" + ", ".join(_printed(row, names) for row in T) + ",)",
            "    got = uniformized(alpha, T)",
            "    if not (abs(math.fsum(alpha) - 1) <= 1e-12 and min(alpha) >= 0 and got[0] > 0",
            "            and min(min(row) for row in got[1]) >= 0 and min(got[2]) >= -1e-12):",
            f"        raise ValueError(f'the {what} (alpha, T) = ({{alpha}}, {{T}}) is not a phase-type law with no "
            "atom at 0')"]


def _kinked_module(measure, service, vacation, names, whole, all_names, laws_text, param_lines, sections):
    """The module of a phase-type service with a vacation of steps w 1{x < d} (constant, empirical): the sums of
    :class:`~qderive.numeric.kernels.finite_kinked.KinkedSums`, set up from the service's PH(alpha, T) printed by
    SymPy and uniformized by the kernel's :func:`~qderive.numeric.kernels.finite_kinked.uniformized`, and the
    vacation's steps."""
    from .codegen import print_expr

    kind, _ = MEASURES[measure]
    atoms, densities = _vacation_parts(vacation.law)
    setup = [
        "def _setup(params):",
        '    """((theta, P, exit, alpha, k), (atoms, densities)) of the sums (K1)-(K2): the service PH(alpha, T)',
        "    uniformized, the vacation's steps (w, d) of P(V > x) = sum w 1{x < d} and densities c on [x_0, x_1] (a",
        "    mixture of constant vacations: Gauss-Legendre over d, as eval).\"\"\"",
        f"    {', '.join(all_names)}, = params",
        *_ph_lines(service.law, names, "service"),
        "    atoms = (" + "".join(f"({print_expr(w, names)}, {print_expr(d, names)}), " for w, d in atoms) + ")",
        "    densities = (" + "".join(f"({print_expr(c, names)}, {print_expr(a, names)}, {print_expr(b, names)}), "
                                     for c, a, b in densities) + ")",
        "    return got, (atoms, densities)",
        "",
        "",
        "def _new_sums(parts, params):",
        '    """The sums (K1)-(K2) of the kernel (the wait, or the sojourn: the own service one more block)."""',
        f"    return KinkedSums(parts, _setup(params), {1 if kind == 'sojourn' else 0}, _gauss)",
        "",
        "",
        "def _time_shift(params):",
        '    """The shift of t for the sums: 0 (the sojourn\'s own service is a block of the sums)."""',
        "    return 0.0",
    ]
    return _sums_module(measure, whole, all_names, laws_text, param_lines, sections, setup, KINKED_SOURCE,
                        (*_KERNELS, "finite_kinked"))


def _constant_module(measure, service, vacation, names, whole, all_names, laws_text, param_lines, sections):
    """The module of a constant service D with no vacations or a vacation of exact survival pieces: the sums of
    :class:`~qderive.numeric.kernels.lattice_finite.ConstantSums`, with the vacation's pieces printed by SymPy
    (exponential pieces w e^{-theta x} 1{x < d}: exp, hyperexp, det, empirical) or its PH(alpha, T) uniformized by
    the kernel's :func:`~qderive.numeric.kernels.finite_kinked.uniformized` (a matrix piece (F4): erlang, coxian,
    ph), or (gamma) its survival function by the kernel the law names (``survival_kernel``) integrated by the
    quadrature piece (F9); the sojourn P(W + D > t) = P(W > t - D)."""
    from .codegen import print_expr

    kind, _ = MEASURES[measure]
    D = service.law.survival_pieces()[0][2]
    head = ["def _setup(params):",
            '    """(D, the vacation\'s survival pieces) of the sums (F1)-(F4): (w, theta, d) for w e^{-theta x}',
            '    1{x < d} (d None: no cut), or (w, theta, None, (alpha, P, exit)) for a uniformized PH(alpha, T) (F4),',
            '    or the quadrature piece (F9)."""',
            f"    {', '.join(all_names)}, = params"]
    extra, lines, kernels = _vacation_lines(vacation, names)
    setup = [*extra, *head, *lines, f"    return float({print_expr(D, names)}), pieces", "", "",
             "def _new_sums(parts, params):",
             '    """The sums (F1)-(F4) of the kernel."""',
             "    return ConstantSums(parts, *_setup(params))",
             "", "",
             "def _time_shift(params):",
             '    """The shift of t for the sums: D for the sojourn (P(W + D > t) = P(W > t - D)), else 0."""',
             "    return _setup(params)[0]" if kind == "sojourn" else "    return 0.0"]
    return _sums_module(measure, whole, all_names, laws_text, param_lines, sections, setup,
                        QUADRATURE_SOURCE if "vacation_quadrature" in kernels else CONSTANT_SOURCE, kernels)


def _vacation_lines(vacation, names):
    """(helper lines, ``_setup`` lines that set ``pieces``, kernels) for the vacation of the sums (F1): exponential
    pieces printed by SymPy, a uniformized PH(alpha, T) (F4), or the quadrature piece (F9) of a smooth law over the
    kernel its ``survival_kernel`` names."""
    from .codegen import print_expr

    lines = []
    pieces = None if vacation is None else vacation.law.survival_pieces()
    extra, kernels = [], (*_KERNELS, "lattice_finite", "finite_kinked")
    if vacation is not None and pieces is None and vacation.law.phase_type() is None:
        kernels += ("vacation_quadrature", "survival")
    if vacation is None:
        lines.append("    pieces = ()")
    elif pieces is not None:
        def num(v):
            return "None" if v is None else f"float({print_expr(v, names)})"

        lines.append("    pieces = (" + ", ".join(f"({num(w)}, {num(th)}, {num(d)})" for w, th, d in pieces) + ",)")
    elif vacation.law.phase_type() is not None:
        lines += [*_ph_lines(vacation.law, names, "vacation"),
                  "    theta, P, exit_, alpha, _ = got",
                  "    pieces = ((1.0, float(theta), None, (numpy.array(alpha, dtype=float), numpy.array(P, dtype=float),"
                  " numpy.array(exit_, dtype=float))),)"]
    else:  # (F9): the vacation's survival function integrated by the kernel's quadrature
        from .families import moment

        fn, args = _survival_kernel(vacation.law)
        printed = ", ".join(print_expr(a, names) for a in args)
        kinks = vacation.law.survival_kinks()  # a kinked law (uniform): the cells split at k - u_j, and its bound
        bound = getattr(vacation.law, "survival_bound_kernel", None)
        extra_args = ""
        if kinks:
            extra_args = ", (" + "".join(f"float({print_expr(k, names)}), " for k in kinks) + ")"
            if bound is not None:
                bfn, bargs = bound()  # a function of the kernel survival (shipped with the survival function)
                extra_args += (f", lambda c, lo, hi, h: {bfn}(" + ", ".join(print_expr(a, names) for a in bargs)
                               + ", c, lo, hi, h)")
        lines += ["    pieces = (QuadraturePiece(lambda xs: _vacation_survival(xs, " + printed + "), "
                  f"float({print_expr(moment(vacation.law, 1), names)}){extra_args}),)"]
        extra = ["def _vacation_survival(xs, *law):",
                 f'    """P(V > x) at the points xs of the {vacation.label} vacation in float64 (the kernel\'s {fn});',
                 '    ArithmeticError where it has no float64 value (qderive eval computes that one)."""',
                 f"    values, bad = {fn}(*law, xs)",
                 "    if bad.any():",
                 "        raise ArithmeticError(\"the vacation's survival function does not converge in float64\")",
                 "    return values", "", ""]
    return extra, lines, kernels


def _lattice_module(measure, service, vacation, names, whole, all_names, laws_text, param_lines, sections):
    """The module of an empirical service ``empirical:n=N`` (its values arguments) on a lattice: the sums (F1), (F5)
    of :class:`~qderive.numeric.kernels.lattice_finite.LatticeServiceSums` over the values' decimal lattice h (the
    lattice eval takes for the decimal values of the command, ``exact_lattice``: the greatest common divisor of
    the values), the vacation's pieces as :func:`_constant_module`'s; a sample whose values have more than 9
    decimals or whose sums span more than the limit's default levels is refused with the eval command (eval bounds
    it by certified brackets)."""
    from ...symbolic.limits import Limits

    kind, _ = MEASURES[measure]
    count = 1 if kind == "sojourn" else 0
    values = ", ".join(a[1] for a in service.args)
    extra, lines, kernels = _vacation_lines(vacation, names)
    levels = Limits().lattice_levels
    setup = [*extra,
             "def _lattice(values, count):",
             '    """(b, h, M) of the sample ``values`` (each of weight 1 / N): h the greatest common divisor of their',
             "    decimals (repr, at most 9 decimals), b the pmf of B / h, M = count max / h lattice levels (at most",
             f'    {levels}); ArithmeticError otherwise (eval bounds such a sample by certified brackets)."""',
             "    scale = 0",
             "    for v in values:",
             "        text = repr(float(v))",
             "        if 'e' in text or 'E' in text:",
             "            mant, exp = text.lower().split('e')",
             "            digits = len(mant.split('.')[1].rstrip('0')) if '.' in mant else 0",
             "            scale = max(scale, digits - int(exp))",
             "        elif '.' in text:",
             "            scale = max(scale, len(text.split('.')[1].rstrip('0')))",
             "    if scale > 9:",
             "        raise ArithmeticError('the service values have more than 9 decimals (no lattice for exact '",
             "                              'sums)')",
             "    ints = [int(round(float(v) * 10**scale)) for v in values]",
             "    g = 0",
             "    for i in ints:",
             "        g = math.gcd(g, i)",
             "    top = max(ints) // g",
             "    M = count * top",
             f"    if M > {levels}:",
             "        raise ArithmeticError(f'the sums of the service values span {M} lattice levels (more than '",
             f"                              '{levels})')",
             "    b = numpy.zeros(top + 1)",
             "    for i in ints:",
             "        b[i // g] += 1.0 / len(ints)",
             "    return b, g / 10**scale, M",
             "",
             "",
             "def _setup(params):",
             '    """(b, h, M, the vacation\'s pieces) of the sums (F1), (F5) (:func:`_lattice`)."""',
             f"    {', '.join(all_names)}, = params",
             *lines,
             f"    return (*_lattice(({values},), r + 1 + {count}), pieces)",
             "",
             "",
             "def _new_sums(parts, params):",
             f'    """The sums (F1), (F5) of the kernel (the {kind}: {count} service more in the convolutions)."""',
             f"    return LatticeServiceSums(parts, *_setup(params), {count})",
             "",
             "",
             "def _time_shift(params):",
             '    """The shift of t for the sums: 0 (the sojourn\'s own service is one more convolution)."""',
             "    return 0.0"]
    return _sums_module(measure, whole, all_names, laws_text, param_lines, sections, setup, LATTICE_SOURCE,
                        kernels)


def _sums_module(measure, whole, all_names, laws_text, param_lines, sections, setup, source, kernels):
    """The generated module of exact sums: the data of :func:`_build` (``sections``: the parameter checks, the
    command, ``_data``), the ``setup`` lines (``_setup``, ``_new_sums``, ``_time_shift``), and the tails and quantiles
    of :data:`_SUMS_HELPERS` under the engine's float64 policy."""
    from .codegen_wait import TAIL_HELPERS

    kind, question = MEASURES[measure]
    consts = [f"_WHOLE, _WHAT = {whole}, {TIME_SYMBOLS[kind]!r}"]
    cost = ["Cost: the model's parameters are numbers (not arrays): the finite-room data (O(r^2) float64",
            "operations) and the sums' t-independent parts are computed once per parameter set and kept for the",
            "next calls; each t is one sum of positive terms: an array of times t is evaluated point by point",
            "(no transform is inverted, nothing cancels)." if question == "tail" else
            "next calls; a level q is searched (a bracket, then the Illinois method: tens of tails each).",
            "Float64 under the policy of `qderive eval`: each tail's error bound (roundings, rows and steps cut)",
            "must be below 1e-10 of it; where it is not, ValueError names the point and the",
            "`qderive eval vacation-finite ... --digits 15` command that computes it. Bad input raises ValueError",
            "naming the argument."]
    atoms, public, description = public_source(measure, f"M[X]/G/1/r with {laws_text}", "vacation-finite", all_names,
                                         param_lines, source, cost)
    base = TAIL_HELPERS.split("\n\ndef _time_tails(")[0]
    parts = [h.strip("\n") for h in (base, FINITE_HELPERS, _SUMS_HELPERS)]
    parts += ["\n".join(sec) for sec in (consts, *sections, setup, atoms)] + [public]
    return KernelModule(measure, f"{description} M[X]/G/1/r with {laws_text}.", source, kernels, "\n\n\n".join(parts))
