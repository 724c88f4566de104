"""Generated waiting and sojourn time tails and quantiles of the finite room with composed blocks: ``qderive codegen
vacation-finite --measure wait_tail`` (``wait_quantile``, ``sojourn_tail``, ``sojourn_quantile``) with ``--setup``,
``--close-down`` or ``--start-threshold N``::

    qderive codegen vacation-finite --measure wait_tail --batch geometric --service exp --vacation exp \\
        --start-threshold 3 --setup exp --out tail.py
    # tail.py: wait_tail(t, lam, batch_mean, service_mean, vacation_mean, setup_mean, r), vectorised over t

The module runs the algorithm of items 6 and 7 of :mod:`qderive.numeric.engines.vacation_finite_wait` (the admitted
customer's W*(s) = N(s) / N(0) with the period families of the idle passage, plus pi_0 Delta(s) of the customers
still below N) with the package's kernels, copied verbatim, as the engine runs them in float64:

* :mod:`qderive.numeric.kernels.idle_passage` (the interpreter of the blocks' plan, the departure chain by the cut
  recursion (2b)) with the recorder of :mod:`qderive.numeric.kernels.block_wait`, which gives the parts (one per
  suffix of full periods);
* :mod:`qderive.numeric.kernels.finite_wait` (the rows, Phi(s) by batches per period family
  (:func:`~qderive.numeric.kernels.finite_wait.wait_levels_of_periods`), N(s), the series of N(0) and E W);
* with N > 1, :class:`qderive.numeric.kernels.threshold_passage.ThresholdSeries` (the excess Delta(s) on count
  series), its three law hooks given by the transforms, their Taylor coefficients and the batch's PGF printed by
  SymPy from the package's symbolic laws;
* the Euler inversion and :mod:`qderive.numeric.kernels.tails` (the float64 self-check with two parameter sets, the
  quantile search), with the helpers of :mod:`.codegen_finite_wait`.

The plan of the idle passage (the blocks' state machine, :func:`qderive.numeric.engines.blocks_finite.plan_of`) and
each stage's *suffix* (the laws a customer present at its end waits through in full: the engine's
:func:`~qderive.numeric.engines.vacation_finite_wait.stage_suffix`) are literals read when the code is generated.

Refused, naming the option: a family whose transform has kinks or no closed form (the inversion cannot resolve them:
constant, uniform, empirical, lognormal laws, as without blocks); N > 1 under whole admission with a batch family of
unbounded support (a batch can be refused below N: the engine's rule); with a bounded one the generated function
requires r >= (largest batch) + N - 1, or + N - 2 where the batch that meets N starts service at once (no vacation, no
setup): then no batch is refused below N (:func:`qderive.symbolic.blocks.machine.places_below_threshold`, the rule the
engine reads too).
"""

from __future__ import annotations

from ...symbolic.errors import ParameterError
from .codegen import KernelModule
from .codegen_blocks import Options, block_families, block_params, input_lines, plan_of_options
from .families import LAM, family

__all__ = ["block_tail_forms", "BLOCK_TAIL_SOURCE"]

BLOCK_TAIL_SOURCE = ("the admitted customer's W*(s) = N(s) / N(0) with the period families of the idle passage and, "
                     "with a start threshold N > 1, the excess Delta(s) of the customers still below N "
                     "(qderive.numeric.engines.vacation_finite_wait, items 6 and 7; renewal reward over the departure "
                     "chain of M[X]/G/1/r with the composed idle period, Sopin 2013, chapter 2, Statement 1 "
                     "generalised); inverted by the Euler algorithm (Abate and Whitt 1995)")

_KERNELS = ("context", "points", "idle_passage", "block_wait", "finite_wait", "threshold_passage", "inversion",
            "tails")


def block_tail_forms(request) -> dict:
    """``measure -> WaitModule`` of the tails and quantiles of the finite room with blocks (built when written: a
    family with kinks is refused then, naming its option)."""
    from .codegen_wait import MEASURES, WaitModule

    return {m: WaitModule(m, request, _build) for m in MEASURES}


def _stages(request, service, vacation, setup, close_down):
    """The stages of the blocks' state machine for the codegen options (symbolic laws)."""
    from ...symbolic.blocks import blocks_of
    from ...symbolic.blocks.machine import machine

    options = Options(vacation and vacation.law, request.vacation_policy, request.start_threshold,
                      setup and setup.law, close_down and close_down.law)
    return machine(options, blocks_of(options))


def _suffixes(stages, laws, top) -> tuple:
    """Per stage, the plan indices of the laws of its suffix (the engine's ``stage_suffix``), or None where the engine
    refuses one (a stage it cannot wait through whole)."""
    from ...numeric.engines.vacation_finite_wait import stage_suffix

    out = []
    for i in range(len(stages)):
        try:
            out.append(tuple(laws.index(law) for law in stage_suffix(stages, i, top)))
        except ParameterError:
            out.append(None)
    return tuple(out)


def _families(request):
    """(batch, service, vacation or None, setup, close-down, policy): smooth families (errors name the option)."""
    from ...symbolic.batches import BatchLaw
    from .codegen_wait import smooth_family

    n = request.start_threshold
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("--start-threshold", "must be an integer >= 1", n)
    none = request.vacation is None or request.vacation.strip().lower() == "none"
    policy = "none" if none else request.vacation_policy.value
    if none and request.vacation_policy.value == "single":
        raise ParameterError("--vacation-policy", "single needs a vacation family (not none)", "single")
    batch = family(request.batch, "batch", BatchLaw)
    service = smooth_family(request.service, "service")
    vacation = None if none else smooth_family(request.vacation, "vacation")
    setup, close_down = block_families(request, smooth=True)
    return batch, service, vacation, setup, close_down, policy


def _transforms(laws, params, top, batch):
    """The SymPy-printed sources: ``_lsts(s, *scalars)`` = [L*(s), (L*(s) - L*(lam)) / (lam - s)] per plan law;
    with N > 1 ``_taylors(s, *scalars)`` (L*^(j)(s) / j!, j < N, per plan law after the service) and
    ``_pgf(z, *scalars)`` the batch's X(z); and the offsets of each law's coefficients in ``_taylors``."""
    import sympy as sp

    from ...numeric.compile import numpy_source
    from ...numeric.engines.finite_laws import lst_expressions

    s = sp.Symbol("s")
    symbols = [p[0] for p in params]
    exprs = []
    for law in laws:
        pair, (s_e, lam_e) = lst_expressions(law)
        exprs += [e.xreplace({s_e: s, lam_e: LAM}) for e in pair]
    out = [_source(numpy_source(exprs, [s, *symbols], "_lsts"))]
    offsets = {}
    if top > 1:
        taylors = []
        for i, law in enumerate(laws[1:], start=1):
            offsets[i] = len(taylors)
            lst = sp.Integer(1) * law.lst(s)
            taylors += [sp.diff(lst, s, j) / sp.factorial(j) for j in range(top)]
        out.append(_source(numpy_source(taylors, [s, *symbols], "_taylors")))
        z = sp.Symbol("z")
        out.append(_source(numpy_source(sp.Integer(1) * batch.law.pgf(z), [z, *symbols], "_pgf")))
    return "\n\n\n".join(out), offsets


def _source(text):
    return text.split("\n\n\nRATIONAL = ")[0].removeprefix("import numpy\n").strip("\n")


def _build(measure: str, request) -> KernelModule:
    import re

    from .codegen_finite_wait import FINITE_HELPERS, public_source
    from .codegen_wait import MEASURES, TAIL_HELPERS, TIME_SYMBOLS, command_template

    kind, question = MEASURES[measure]
    batch, service, vacation, setup, close_down, policy = _families(request)
    whole = request.admission.value == "whole"
    n = request.start_threshold
    plan, laws = plan_of_options(request, service, vacation, setup, close_down)
    stages = _stages(request, service, vacation, setup, close_down)
    top = max([s.threshold for s in stages if s.threshold is not None] + [1])
    suffixes = _suffixes(stages, laws, top)
    params, names, scalars = block_params(batch, service, vacation, setup, close_down)
    stops = any(k != "interrupt" and not at_once for k, _, _, _, at_once, _ in plan)
    lowest = max(n, 1 if (stops or vacation is not None) else 0)
    if whole and n > 1:  # the engine's rule: no batch may be refused below N (X <= the fewest places below N)
        from ...symbolic.blocks.machine import places_below_threshold

        size = batch.law.max_size
        offset = places_below_threshold(stages, n, 0)  # the fewest places are r + offset (r - N + 1 or r - N + 2)
        if size is None:
            raise ParameterError("--start-threshold", f"the finite-room waiting-time law computes N = {n} > 1 under "
                                 "whole admission only when no batch can be refused below N (batch sizes at most "
                                 f"r - {-offset}); the {batch.label} batches are unbounded (use --admission partial)", n)
        lowest = max(lowest, int(size) - offset)
    all_names = [*scalars, "r"]
    what = TIME_SYMBOLS[kind]
    transforms, offsets = _transforms(laws, params, top, batch)

    def spec(fam):
        text = fam.law.spec_text()
        for _, name, *_ in fam.args:
            text = re.sub(rf"\b{re.escape(name)}\b", "{" + name + "!r}", text)
        return text

    extra = ["--capacity {r!r}"] + (["--admission whole"] if whole else []) + (
        [f"--start-threshold {n}"] if n != 1 else []) + ([f"--setup {spec(setup)}"] if setup else []) + (
        [f"--close-down {spec(close_down)}"] if close_down else [])
    template = command_template(batch, service, vacation, policy, "vacation-finite", extra)
    consts = ["#: the idle passage (qderive.numeric.engines.blocks_finite.plan_of of the blocks' state machine):",
              "#: (kind, law, threshold, most, at_once, embedded epochs)",
              f"_PLAN = {plan!r}",
              "#: per stage, the plan's laws a customer present at its end waits through in full (the engine's suffix;",
              "#: None: not covered)",
              f"_SUFFIXES = {suffixes!r}",
              f"_TOP, _WHOLE = {top}, {whole}",
              "#: the offsets of each law's Taylor coefficients in _taylors (start threshold N > 1)",
              f"_TAYLOR_AT = {offsets!r}",
              "_RECORDERS = (recording_passage(CountPassage), recording_passage(WholeCountPassage))"]
    checks = ["def _parameters(" + ", ".join(all_names) + "):",
              '    """The parameters as floats (r an integer), checked (ValueError naming a bad one)."""',
              *(f"    {p[1]} = _scalar({p[1]!r}, {p[1]}, {p[3]!r})" for p in params),
              f"    r = _capacity(r, {lowest})",
              f"    return ({', '.join(all_names)},)"]
    command = ["def _command(params, option, point):",
               '    """The `qderive eval` command that computes this point with mpmath."""',
               f"    values = dict(zip({tuple(all_names)!r}, params))",
               f"    return {template!r}.format(**values) + f\" --{{option}} {{point!r}} --digits 15\""]
    sc = ", ".join(scalars)
    data = [
        *input_lines(batch, service, laws, names, scalars),
        "",
        "",
        "def _suffix_of(i):",
        "    if _SUFFIXES[i] is None:",
        "        raise ArithmeticError('a stage the finite-room waiting-time law cannot wait through whole')",
        "    return _SUFFIXES[i]",
        "",
        "",
        "def _data(params):",
        '    """The s-independent data of one parameter point (kept for later calls): the idle passage recorded',
        "    (recording_passage), the departure chain, the parts of block_wait_parts with N(0) and the first",
        "    coefficient of N(-s) (the suffix laws' means), and with N > 1 the weight pi_0 of the excess, the",
        "    customer counts of the laws below N, P(W = 0)'s excess and the mean (Little's: block_finite_measures);",
        "    ValueError with the mpmath command where",
        '    float64 over- or underflows."""',
        "    got = _DATA.get(params)",
        "    if got is not None:",
        "        return got",
        f"    {', '.join(all_names)}, = params",
        "    ctx = _CTX",
        "    try:",
        "        with numpy.errstate(under='ignore'):",
        f"            batch, columns, counts, means, b1 = _inputs({sc})",
        "            op = block_passage(ctx, _PLAN, r, lam, batch, columns, counts, means, _WHOLE, _RECORDERS)",
        "            op.means = means",
        "            y = run_passage(op, _PLAN)",
        "            pi, _ = (whole_chain if _WHOLE else partial_chain)(ctx, op, y[1:], r)",
        "            pmf, tail, _, _, geometric, support = batch(r + 1)",
        "            known = {}",
        "",
        "            def sequences(law):",
        "                if law not in known:",
        "                    known[law] = _counts(ctx, counts[law])",
        "                return known[law]",
        "",
        "            beta, btail, btail2 = sequences(0)",
        "            parts, _, _ = block_wait_parts(ctx, op.records, pi, y, r, _WHOLE, pmf, tail, support, geometric,",
        "                                           beta, _suffix_of, lambda i: (_PLAN[i][1], *sequences(_PLAN[i][1])))",
        "            for part in parts:",
        "                series = (wait_level_series(ctx, lam, btail, btail2, part['Ws'], order=1) if r",
        "                          else numpy.zeros((0, 2)))",
        "                for _, rows, _, ptail, ptail2 in (part['periods'] if r else ()):",
        "                    series = series + wait_level_series(ctx, lam, ptail, ptail2, rows, order=1)",
        "                if part['flat'] is not None:",
        "                    series[:, 0] = series[:, 0] + part['flat']",
        "                N = wait_admission_series(ctx, series, numpy.array([1.0, b1]), tail, pmf, part['t_idle'], _WHOLE,",
        "                                          part['once'])",
        "                for law in part['suffix']:",
        "                    N = fw_series_mul(N, numpy.array([1.0, means[law]]))",
        "                part['N0'], part['N1'] = float(N[0]), float(N[1])",
        "            d = {'parts': parts, 'lam': lam, 'pmf': pmf, 'tail': tail, 'beta': beta, 'b1': b1, 'r': r,",
        "                 'N0': math.fsum(p['N0'] for p in parts), 'N1': math.fsum(p['N1'] for p in parts),",
        "                 'zero_weight': math.fsum(p['zero_weight'] for p in parts)}",
        "            if _TOP > 1:  # the excess of the customers still below N, per idle period: weight pi_0",
        "                a = arrival_counts_of_times(ctx, [(*c(_TOP), m) for c, m in zip(counts, means)], columns(_TOP),",
        "                                            lam, _TOP)",
        "                d.update(weight=float(pi[0]), a=[f[0][:_TOP] for f in a], x=list(pmf[:_TOP]))",
        "                limit = _Threshold(None, d, params)",
        "                run_passage(limit, _PLAN)",
        "                d['zero_weight'] = d['zero_weight'] + float(limit.excess[0].real) * d['weight']",
        "                # E W = N1 / N0 with the excess's share: Little's mean wait of the admitted customers",
        "                little = block_finite_measures(ctx, _PLAN, r, lam, batch, columns, counts, means, b1, _WHOLE)",
        "                d['N1'] = float(little['mean_wait']) * d['N0']",
        "    except ArithmeticError as exc:",
        "        raise _refused(params, exc) from None",
        "    ok = all(numpy.all(numpy.isfinite(p['Ws'])) and numpy.all(numpy.isfinite(p['Zp'])) for p in d['parts'])",
        "    if not (ok and math.isfinite(d['N0']) and d['N0'] > 0 and math.isfinite(d['zero_weight'])):",
        "        raise _refused(params, 'the level vectors over- or underflow float64')",
        "    return _kept(params, d)",
        "",
        "",
        "class _Threshold(ThresholdSeries):",
        '    """The kernel\'s ThresholdSeries at the nodes z (None: s -> oo) of one parameter point: the laws\' hooks',
        "    from the customer counts of the data and the SymPy-printed transforms, Taylor coefficients and batch",
        '    PGF."""',
        "",
        "    def __init__(self, z, d, params):",
        "        self.scalars, self.d = params[:-1], d",
        "        if z is None:",
        "            one = numpy.ones(1, dtype=complex)",
        "            B = XB = one * 0",
        "        else:",
        "            one = numpy.ones(len(z), dtype=complex)",
        "            B = _full(_lsts(z, *self.scalars)[0], z)",
        "            XB = _full(_pgf(B, *self.scalars), z)",
        "        super().__init__(_CTX, z, _TOP, d['lam'], d['x'], B, XB, one)",
        "",
        "    def law_counts(self, law):",
        "        return self.d['a'][law]",
        "",
        "    def law_transform(self, law, z):",
        "        return _full(_lsts(z, *self.scalars)[2 * law], z)",
        "",
        "    def law_taylor(self, law, z, n):",
        "        values = _taylors(z, *self.scalars)",
        "        return [_full(values[_TAYLOR_AT[law] + j], z) for j in range(n)]",
    ]
    transform = [
        "def _transform(s, *params):",
        f'    """E e^{{-s {what}}} at the complex nodes s (any shape): N(s) / N(0)'
        + (" times beta(s)" if kind == "sojourn" else "") + ', N summed over the parts (each times its suffix',
        '    laws\' transforms) plus pi_0 Delta(s) with N > 1; by batches (the engine\'s float64 way)."""',
        "    d = _data(params)",
        f"    {', '.join(all_names)}, = params",
        "",
        "    def nodes(z):",
        f"        lst = _lsts(z, {sc})",
        "        b, g0 = _full(lst[0], z), _full(lst[1], z)",
        "        N = 0",
        "        for part in d['parts']:",
        "            if r:",
        "                hs = [_full(lst[2 * p[0] + 1], z) for p in part['periods']]",
        "                Phi = wait_levels_of_periods(_CTX, z, d['lam'], g0, d['beta'], part['Ws'], hs,",
        "                                             [(p[2], p[1]) for p in part['periods']], part['flat'])",
        "            else:",
        "                Phi = numpy.zeros((len(z), 0), dtype=complex)",
        "            n = wait_admission_sum(_CTX, Phi, b, d['tail'], d['pmf'], part['t_idle'], _WHOLE, part['once'])",
        "            for law in part['suffix']:",
        "                n = n * _full(lst[2 * law], z)",
        "            N = N + n",
        "        if _TOP > 1:",
        "            op = _Threshold(z, d, params)",
        "            run_passage(op, _PLAN)",
        "            N = N + op.excess * d['weight']",
        "        return N / d['N0']" + (" * b" if kind == "sojourn" else ""),
        "",
        "    return _by_blocks(s, max(256, _BLOCK // (r + 1)), nodes)",
    ]
    laws_text = (f"{batch.label} batches, {service.label} service, "
                 + (f"{vacation.label} vacations ({policy})" if vacation else "no vacations")
                 + f", {'whole' if whole else 'partial'} admission; " + _blocks_text(n, setup, close_down))
    r_line = ("r", f"waiting places r (an integer >= {lowest}; the customer in service not counted"
                   + (f"; N = {n} <= r" if n > 1 else "")
                   + (f"; no batch may be refused below N: r >= {lowest}" if whole and n > 1 else "")
                   + ")")
    cost = ["Cost: the model's parameters are numbers (not arrays): the finite-room data (the idle passage and",
            "the departure chain, O(r^2) float64 operations) are computed once per parameter set and kept for the",
            "next calls; " + ("an array of times t is one inversion for all of them (the transform at the nodes"
                              if question == "tail" else "an array of levels q is searched level by level (a"),
            ("of every t at once: O(r K) per node and part, K the batches a period holds"
             + (", plus O(N^2) for the excess)." if n > 1 else ").")) if question == "tail" else
            "bracket, then the Illinois method: tens of tail evaluations each).",
            "Float64 with the self-check of `qderive eval` (two parameter sets of the Euler algorithm must agree to",
            "2e-10 relative, the tail must be >= 1e-6); where it fails, ValueError names the point and the",
            "`qderive eval vacation-finite ... --digits 15` command that computes it. Bad input raises ValueError",
            "naming the argument." if question == "tail" else
            "naming the argument; a quantile search that cannot bracket its root raises TailError."]
    atoms, public, description = public_source(measure, f"M[X]/G/1/r with {laws_text}", "vacation-finite", all_names,
                                         [*[(p[1], p[2]) for p in params], r_line], BLOCK_TAIL_SOURCE, cost)
    parts = [h.strip("\n") for h in (TAIL_HELPERS, FINITE_HELPERS)]
    parts += [f"# the transforms of the plan's laws (the service first) and the batch's PGF, printed by SymPy\n"
              f"{transforms}"]
    parts += ["\n".join(sec) for sec in (consts, checks, command, data, transform, atoms)] + [public]
    return KernelModule(measure, f"{description} M[X]/G/1/r with {laws_text}.", BLOCK_TAIL_SOURCE, _KERNELS,
                        "\n\n\n".join(parts))


def _blocks_text(n, setup, close_down) -> str:
    parts = ([f"close-down ({close_down.label})"] if close_down else []) + [f"start threshold N = {n}"] + (
        [f"setup ({setup.label})"] if setup else [])
    return ", ".join(parts)
