"""Response-time laws (waiting and sojourn times): tails, quantiles and moments under the one precision policy.

A model that offers response times has a function registered as its ``response`` consumer
(:mod:`qderive.numeric.consumers`) returning, for a concrete model, a dict
``{"wait": ResponseLaw, "sojourn": ResponseLaw}`` (and ``wait_<flow>``, ``sojourn_<flow>`` for each name of
the model's ``response_flows``: measure keys ``wait_tail_<flow>``, ...). A :class:`ResponseLaw` is the data one
algorithm needs: the LST of the time (a callable on arrays of complex nodes, per context), the
atom P(T = 0) and the raw moments. Everything else is here, once, for every model:

* **tails** P(T > t): the Laplace transform of the tail is (1 - T*(s))/s, inverted by the Euler
  algorithm (:mod:`qderive.numeric.kernels.inversion`). Its error is absolute at the scale of
  the terms (measured: M/M/1 at 30 digits, a tail of 4e-18 has 13 correct digits), so a tail is
  computed with two parameter sets, for D + s + 3 and D + s + 8 digits where s = log10(1/tail)
  (0 at first, then the size the tail showed), that must agree to D + 2 digits (the policy's
  confirmation; more digits are added until they do, within the limit ``inversion_digits``).
  float64 runs the parameter set (A, n, m) = (23, 40, 20) and checks it with (27, 30, 14)
  (:mod:`qderive.numeric.kernels.tails`: the absolute error is about 1e-12, so in practice tails
  below about 1e-2 disagree beyond the tolerance 2e-10); a disagreement, or a tail below 1e-6,
  escalates to mpmath (15 digits, rounded) with a note. Accepted float64 tails were within
  1.1e-10 relative in every case measured (127 tails of 10 models).
* **quantiles** min{t : P(T <= t) >= q}: 0 when q <= P(T = 0); otherwise the root of
  log P(T > t) = log(1 - q), bracketed by doubling from the mean and refined by the Illinois
  variant of regula falsi on log t (the tail is continuous and decreasing for t > 0), each
  tail at the digits of the result plus 5; the root to D + 2 digits. At D digits (and where float64
  escalates) the first root comes from the root of the float64 tails of one parameter set (a guide the D-digit
  tails confirm) by secant steps from it and one Newton step with its float64 slope (``_secant_root``: two D-digit
  tails where its error bound is met; else a narrow bracket around it), the second set's root is sought within the
  first one's tolerance (a bracket of width tol / 2: the certificate), and the searches close their bracket by a step
  across the converged point (``quantile_illinois(close=True)``): 4 D-digit tails a quantile (a lognormal service at
  r = 200: 7 before the secant start, 17 before the guided bracket).
* **moments** E T^k: exact (Fractions) where the law's moments are rational, else evaluated at
  D + 10 digits. A law's float64 moments that detect their own trouble (``Trouble``, saying why) are
  recomputed with mpmath (16 digits, rounded) with a note.
* **supplied tails**: a law may compute its own tails (``tails``, e.g. a phase-type time by
  uniformization, :mod:`qderive.numeric.kernels.phase_type_tail`, a sum of nonnegative terms with
  an a-priori relative error bound); then ``transform`` is not used: float64 tails are kept unless
  one is not finite or falls below 1e-290 (then recomputed at 15 digits, with a note), D digits are
  the law's a-priori D digits (its working digits reported), and quantiles run the same root
  search on log P(T > t) with those tails (tolerance 1e-13 in float64, 10^-(D+4) otherwise). A law that also
  gives ``rough_tails`` (cheap float64 values without the accuracy guarantee, e.g. the constant-service sums whose
  float64 rounding bound fails) has the root of those found first; the search with its own tails then starts from
  a bracket of relative width 2e-9 around it (widened 100-fold while the exact tails do not change sign across
  it; the full search otherwise), so a float64 quantile needs about 4 exact tails, a D-digit one about 6.

The float64 self-check of the tails and the quantile's root search are the kernel
:mod:`qderive.numeric.kernels.tails` (shipped verbatim by ``qderive codegen``, so generated code runs
them too); this module adds the escalation to mpmath and the D-digit confirmations.

Transforms with kinks (deterministic, uniform or empirical laws: an ``exp(-s D)`` factor) are
refused for tails and quantiles -- contour inversion stalls at 1e-4 to 1e-7 relative near the
kinks at every precision (issue 13 measured it) -- unless the law supplies its own exact ``tails``
(a constant service: the lattice sum of :mod:`qderive.numeric.kernels.lattice_wait`). Such a
law's float64 ``tails`` may return None for a point where its own error bound fails (an
alternating sum that cancels): that point is recomputed at 15 digits, with a note.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import mpmath
import numpy as np

from ..symbolic import limits as _limits
from ..symbolic.errors import NumericalError, ParameterError
from .backend import FLOAT64, mp_context
from .engines.base import Trouble
from .kernels.inversion import euler_inversion, euler_parameters
from .kernels.tails import (
    TAIL_FLOAT64_SETS,
    TailError,
    float64_quantile,
    float64_tails,
    quantile_bracket,
    quantile_illinois,
    tail_transform,
)

__all__ = ["ResponseLaw", "ResponseRequest", "tails", "law_float64_tails", "quantiles", "moments", "noted_moments",
           "evaluate_response", "escalation_note", "atom", "KINDS", "OPTIONS"]

#: the two times of a response law, in the order of the measures
KINDS = ("wait", "sojourn")
#: the three questions asked about each, with the measure key suffix
OPTIONS = ("tail", "quantile", "moments")


@dataclass(frozen=True)
class ResponseLaw:
    """A nonnegative time T given by its transform: ``transform(ctx)`` returns F with F(s) = E e^{-sT} on arrays
    of complex s; ``p_zero(ctx)`` P(T = 0) as a context number; ``moment_values(k, digits)`` (E T, ..., E T^k)
    (Fractions when exact; for ``digits`` None it may raise ``Trouble`` saying why float64 cannot be trusted:
    :func:`noted_moments` escalates with a note); ``smooth`` False when the transform has kinks (see the module
    docstring), with ``why_not_smooth`` saying which law. ``tails(ts, digits)``, when given, replaces the
    inversion of the transform: (P(T > t) for t in ``ts``, working digits), floats for ``digits`` None, else mpf
    with ``digits`` correct digits (an a-priori bound; ``ts`` exact numbers >= 0)."""

    name: str
    transform: Callable
    p_zero: Callable
    moment_values: Callable
    smooth: bool = True
    why_not_smooth: str = ""
    tails: Callable | None = None
    #: optional, with ``tails``: ``rough_tails(t)`` a float64 P(T > t) (or None) that may miss the accuracy the law's
    #: ``tails`` guarantee (e.g. an alternating sum whose rounding bound float64 cannot meet): it only guides the
    #: quantile search to a narrow bracket, which is then checked and refined with ``tails`` (:func:`_near_root`)
    rough_tails: Callable | None = None
    #: optional, with ``tails``: ``bracket(t)`` -> (lower, upper, levels): certified bounds of P(T > t) around the
    #: value ``tails`` gives (an estimate inside them, e.g. the lattice bounds of a service law with kinks); the
    #: tails and quantiles then carry a note "between A and B"
    bracket: Callable | None = None
    #: optional, with ``bracket`` and ``rough_tails``: ``bound(t, which)`` -> one certified bound of P(T > t) (0 the
    #: lower, 1 the upper) where ``bracket`` computes both; the quantile search then starts from the root of the
    #: rough tails (:func:`_guided_root`) and the note finds each bound's root from the value's (at half the cost)
    bound: Callable | None = None


@dataclass(frozen=True)
class ResponseRequest:
    """What is asked about the response times: for each kind (wait, sojourn) the tail points, the quantile
    levels (each as a (key, exact value) pair: the key is the text as given) and the number of moments; and the
    same per flow of a model with per-flow laws (``flows``: the model's ``response_flows``; ``per_flow``:
    ((measure key such as ``wait_tail_flow1``, value), ...))."""

    wait_tail: tuple = ()
    wait_quantile: tuple = ()
    wait_moments: int = 0
    sojourn_tail: tuple = ()
    sojourn_quantile: tuple = ()
    sojourn_moments: int = 0
    flows: tuple = ()
    per_flow: tuple = ()

    def __bool__(self):
        return any(getattr(self, f"{k}_{o}") for k in KINDS for o in OPTIONS) or any(v for _, v in self.per_flow)

    def asked(self, kind: str, what: str, flow: str | None = None):
        """The tail points, quantile levels or moment count asked for ``kind`` (of ``flow``, if given)."""
        if flow is None:
            return getattr(self, f"{kind}_{what}")
        return dict(self.per_flow).get(f"{kind}_{what}_{flow}", 0 if what == "moments" else ())

    def kinds(self):
        """(law key, measure key suffix, flow) for every response law asked about, overall first."""
        yield from ((kind, "", None) for kind in KINDS)
        yield from ((f"{kind}_{flow}", f"_{flow}", flow) for flow in self.flows for kind in KINDS)

    def measures_asked(self) -> frozenset:
        """The response measures asked (``{"wait_tail", "sojourn_moments", "wait_tail_<flow>", ...}``): what the
        response law's ``supports(model, asked)`` hook is asked about."""
        own = {f"{kind}_{what}" for kind in KINDS for what in OPTIONS if getattr(self, f"{kind}_{what}")}
        return frozenset(own | {key for key, value in self.per_flow if value})

    @classmethod
    def from_options(cls, options: dict, flows: tuple = ()) -> "ResponseRequest":
        """From ``evaluate(..., wait_tail=[0.5, "1/2"], wait_quantile=..., wait_moments=3, ...)`` keywords:
        numbers or decimal/fraction strings (never evaluated as code); keys are the texts as given. ``flows``:
        the per-flow keywords ``wait_tail_<flow>``, ... accepted as well."""
        values = {}
        for kind in KINDS:
            for what in OPTIONS:
                key = f"{kind}_{what}"
                values[key] = _parse_ask(key, what, options.pop(key, None))
        per_flow = tuple((key, _parse_ask(key, what, options.pop(key))) for flow in flows for kind in KINDS
                         for what in OPTIONS for key in [f"{kind}_{what}_{flow}"] if key in options)
        return cls(**values, flows=tuple(flows), per_flow=per_flow)


def _parse_ask(key: str, what: str, given):
    """One option of :meth:`ResponseRequest.from_options`: ((text, exact value), ...) or a moment count."""
    from ..symbolic.numbers import parse_number

    if what == "moments":
        if given is None:  # not asked
            return 0
        if isinstance(given, bool) or not isinstance(given, int) or not 1 <= given <= 8:
            raise ParameterError(key, "must be an integer from 1 to 8", given)
        return given
    given = given or ()
    if isinstance(given, (str, int, float, Fraction)):
        given = (given,)
    pairs = []
    for item in given:
        text = item if isinstance(item, str) else str(item)
        try:  # Fraction() refuses nan and inf
            # a float means the decimal it prints as (0.1 is 1/10, not the binary neighbour)
            value = Fraction(parse_number(text.strip()) if isinstance(item, (str, float)) else item)
        except (ValueError, TypeError, ZeroDivisionError, OverflowError, ParameterError):
            raise ParameterError(key, "expects finite numbers (decimals or fractions like 1/2)", item) from None
        if what == "tail" and value < 0:
            raise ParameterError(key, "expects times >= 0", text)
        if what == "quantile" and not 0 < value < 1:
            raise ParameterError(key, "expects levels strictly between 0 and 1", text)
        pairs.append((text.strip(), value))
    if len({k for k, _ in pairs}) != len(pairs):
        raise ParameterError(key, "repeats a value", ",".join(k for k, _ in pairs))
    return tuple(pairs)


# -- tails ---------------------------------------------------------------------------------------------


def _tail_transform(F, ctx):
    """(1 - F(s)) / s: the Laplace transform of P(T > t) (the kernel :func:`~.kernels.tails.tail_transform`)."""
    return tail_transform(F)


def euler_tails(law: ResponseLaw, ctx, ts, digits):
    A, n, m = euler_parameters(digits)
    G = _tail_transform(law.transform(ctx), ctx)
    with ctx:
        try:
            return euler_inversion(ctx, G, ctx.array(ts), ctx.num(Fraction(A).limit_denominator(10**12)), n, m)
        except (ZeroDivisionError, OverflowError):
            kind, _, flow = law.name.partition("_")
            end = "-" + flow.replace("_", "-") if flow else ""
            raise NumericalError(f"P({law.name} > t) at t = {', '.join(_shown(t) for t in ts)}: t is too large for "
                                 f"the transform inversion at {digits} digits (its nodes come within rounding of "
                                 f"s = 0); give a smaller time with --{kind}-tail{end}, or a level nearer 1/2 with "
                                 f"--{kind}-quantile{end}") from None


def _refuse_kinks(law: ResponseLaw, option: str):
    if not law.smooth and law.tails is None:
        raise ParameterError(option, f"is not available for this model: {law.why_not_smooth} (transform inversion "
                             "cannot give such tails to the requested digits, and no exact sum of the package covers "
                             "this combination of laws: the theory page 'Algorithms', section 'Laws with kinks', lists "
                             "those that have one); the moments (--wait-moments) work for every law")


def law_float64_tails(law: ResponseLaw, ts: list):
    """float64 tails and None, or None and the reason to escalate (the kernel
    :func:`~.kernels.tails.float64_tails`: two parameter sets must agree)."""
    G = _tail_transform(law.transform(FLOAT64), FLOAT64)
    try:
        t = np.array([float(x) for x in ts])
    except OverflowError:
        return None, "a time lies beyond the float64 range"
    try:
        with np.errstate(all="ignore"):
            a, why, _ = float64_tails(FLOAT64, G, t)
    except (OverflowError, ZeroDivisionError):  # an exact coefficient of the transform beyond the float64 range
        return None, "the transform's coefficients lie beyond the float64 range"
    if why is not None:
        return None, why
    return [min(1.0, float(x)) for x in a], None


def _mp_tails(law: ResponseLaw, ts: list, digits: int):
    """Tails to ``digits`` relative digits (module docstring): (values, confirmed digits, working digits).

    Two parameter sets, for D + s + 3 and D + s + 8 digits where s = log10(1/tail) (0 at first), must agree
    to D + 2 digits; a disagreement raises s to the size the tail showed (at least doubling it) or, for a
    tail of the size assumed, adds 10 digits. The digits are bounded by the limit ``inversion_digits``.
    """
    out, confirmed, working = [], math.inf, 0
    for t in ts:
        size, extra = 0.0, 0
        while True:
            want = digits + int(math.ceil(size)) + 3 + extra
            _limits.check("inversion_digits", want, f"the tail at t = {_shown(t)} is about 1e-{int(size)} or smaller: "
                          f"{digits} relative digits of it need {want} digits of inversion")
            a_ctx, b_ctx = mp_context(int(1.5 * want) + 10), mp_context(int(1.5 * (want + 5)) + 10)
            with a_ctx:
                a = euler_tails(law, a_ctx, [t], want)[0]
            with b_ctx:
                b = euler_tails(law, b_ctx, [t], want + 5)[0]
                agreed = _agreement(a, b)
                if b > 0 and agreed >= digits + 2:
                    out.append(+b)
                    confirmed = min(confirmed, agreed)
                    working = max(working, b_ctx.dps)
                    break
                grown = -float(mpmath.log10(abs(b))) if b != 0 else 2 * size + digits
                if grown > size + 1:
                    size = max(grown, 2 * size)
                else:
                    extra += 10
    return out, confirmed, working


def _shown(t) -> str:
    return mpmath.nstr(mpmath.mpf(t.numerator) / t.denominator if isinstance(t, Fraction) else t, 6)


def _agreement(a, b) -> float:
    if a == b:
        return math.inf
    return float(-mpmath.log10(abs(a - b) / abs(b))) if b != 0 else 0.0


def tails(law: ResponseLaw, ts, digits: int | None, option: str = "wait_tail"):
    """P(T > t) for every t in ``ts`` (exact numbers): (values, confirmed digits or None, working digits or None,
    notes). t = 0 gives 1 - P(T = 0) exactly as the atom."""
    _refuse_kinks(law, option)
    ts = list(ts)
    if law.tails is not None:
        return _supplied_tails(law, ts, digits, option)
    positive = [t for t in ts if t > 0]
    check = FLOAT64 if digits is None else mp_context(digits + 10)
    with check:
        p0, notes = atom(law, check, option)
        if p0 == 1:  # T = 0 surely (a finite room of 0 places): every tail is 0, exactly
            zero = 0.0 if digits is None else mpmath.mpf(0)
            return [zero for _ in ts], (None if digits is None else math.inf), None, notes
    if len(positive) == len(ts):  # the atom only decided the case above: its note is not the values'
        notes = []
    if digits is None:
        values, why = law_float64_tails(law, positive) if positive else ([], None)
        if why is None:
            got = dict(zip(positive, values))
            return [got[t] if t > 0 else 1.0 - float(p0) for t in ts], None, None, notes
        notes = [escalation_note(option, why)]
        mp_values, confirmed, working = _mp_tails(law, positive, 15)
        got = dict(zip(positive, mp_values))
        p0 = float(law.p_zero(mp_context(30)))
        return [_to_float(got[t]) if t > 0 else 1.0 - p0 for t in ts], None, None, notes
    mp_values, confirmed, working = _mp_tails(law, positive, digits) if positive else ([], math.inf, None)
    got = dict(zip(positive, mp_values))
    with check:
        return [got[t] if t > 0 else 1 - p0 for t in ts], confirmed, working, notes


def _supplied_tails(law: ResponseLaw, ts: list, digits: int | None, option: str):
    """Tails from the law's own ``tails`` (module docstring, *supplied tails*)."""
    if not ts:
        return [], (None if digits is None else math.inf), None, []
    if digits is not None:
        values, working = law.tails(ts, digits)
        return list(values), digits, working, _bracket_notes(law, ts, option)
    values, _ = law.tails(ts, None)
    if law.bracket is not None:
        return [min(1.0, float(v)) for v in values], None, None, _bracket_notes(law, ts, option)
    if None in values:  # the law detected its own trouble (e.g. cancellation in an alternating sum)
        notes = [escalation_note(option, CANCELS)]
        redo = [t for t, v in zip(ts, values) if v is None]
        got = dict(zip(redo, law.tails(redo, 15)[0]))
        return [_to_float(got[t]) if v is None else min(1.0, float(v)) for t, v in zip(ts, values)], None, None, notes
    if all(math.isfinite(v) and (v == 0 or v >= 1e-290) for v in values) and not any(
            v == 0 and t > 0 for v, t in zip(values, ts)):
        return [min(1.0, float(v)) for v in values], None, None, []
    again, _ = law.tails(ts, 15)
    # a tail that is 0 at 15 digits too is an exact 0 (t beyond the largest possible time): no underflow to report
    flagged = [(v, w) for v, w, t in zip(values, again, ts)
               if not math.isfinite(v) or 0 < v < 1e-290 or (v == 0 and t > 0)]
    notes = [] if all(v == 0 and w == 0 for v, w in flagged) else [
        escalation_note(option, "a float64 tail is below 1e-290 (or not finite)")]
    return [_to_float(v) for v in again], None, None, notes


def _bracket_notes(law: ResponseLaw, ts: list, option: str) -> list:
    """The notes "P(T > t) is between A and B" of a law with certified bounds around its values (``bracket``)."""
    if law.bracket is None:
        return []
    notes = []
    rounded = getattr(law.bracket, "rounded", "the service times")  # what the bounds round (a bracket may say)
    how = getattr(law.bracket, "how", None)  # or how the bracket says it was made, from its levels
    for t in ts:
        if t > 0:
            lo, hi, levels = law.bracket(t)
            notes.append(f"{option}: P({law.name} > {_shown(t)}) is between {lo:.10g} and {hi:.10g} (" + (
                how(levels) if how is not None else f"certified bounds: {rounded} rounded down and up to a lattice "
                f"of {levels} levels; the value is an estimate inside them") + ")")
    return notes


def _bracket_quantile_note(law: ResponseLaw, level: Fraction, root, option: str, q) -> str:
    """The note "the quantile is between A and B" of a law with certified bounds: the quantiles of the lower and
    the upper bound (:func:`bracket_quantiles`)."""
    lo, hi = bracket_quantiles(law, level, root)
    bounds = getattr(law.bracket, "bounds", "certified lower and upper bounds")  # a bracket may name its bounds
    # 8 significant digits, more where the two agree to 8 (a narrow bracket printed as "between x and x" says nothing)
    d = next((d for d in range(8, 18) if f"{lo:.{d}g}" != f"{hi:.{d}g}"), 17)
    return (f"{option}: the {q} quantile of the {law.name} is between {lo:.{d}g} and {hi:.{d}g} "
            f"(the quantiles of the {bounds})")


def bracket_quantiles(law: ResponseLaw, level: Fraction, root) -> tuple:
    """(lower, upper): the roots of the lower and the upper bound of P(T > t) = level of a law with certified bounds
    (``bracket``), by the Illinois rule in log t (the bounds decrease in t) from a bracket around ``root`` (the
    value's quantile): with the law's ``bound`` and ``rough_tails``, Newton steps of the rough slope from ``root``
    (each bound's root lies within the bracket's width of the value's: two or three evaluations of that bound
    alone); else a doubling bracket. The true quantile lies between them."""
    lev = float(level)
    slope = _rough_slope(law, math.log(float(root))) if law.bound is not None and float(root) > 0 else None

    def root_of(which):
        seen: dict = {}

        def bound(t):  # one side only where the law can (``bound``); each point once
            if t not in seen:
                seen[t] = law.bound(Fraction(t), which) if law.bound is not None else law.bracket(Fraction(t))[which]
            return seen[t]

        near = None
        if slope is not None:  # from the value's root by Newton steps of the rough slope (within the bracket's width)
            near = _guided_bracket(lambda x: math.log(max(bound(math.exp(x)), 1e-300)) - math.log(lev),
                                   math.log(float(root)), slope)
        if near is not None and near[0] != near[1]:
            lo, hi = math.exp(near[0]), math.exp(near[1])
        else:
            lo, hi = float(root), float(root)
            while lo > 1e-300 and bound(lo) <= lev:
                lo /= 2
            while bound(hi) > lev:
                hi *= 2
            if lo <= 1e-300:
                return hi
        # the Illinois rule of the kernel on g(x) = bound(e^x) - level (decreasing; it may jump at an atom of the
        # lattice: the kernel's bisection safeguard), with its closing steps (``close``: each bound costs a tail of
        # the finest lattice; the previous loop's bisection after two steps on one side took about 9 per root, the
        # bisection to 2^-40 80), stopped at 1e-10 in log t (the note prints 8 digits)
        a, b = math.log(lo), math.log(hi)
        ga, gb = bound(lo) - lev, bound(hi) - lev
        if not ga > 0 or gb > 0:
            return hi
        try:
            return math.exp(quantile_illinois(lambda x: bound(math.exp(x)) - lev, a, b, ga, gb, 1e-10, close=True))
        except TailError:
            return hi

    return root_of(0), root_of(1)


def _rough_root(law: ResponseLaw, level: Fraction, mean, tol: float = 1e-13):
    """The root of log ``rough_tails`` = log(level) in log t (float64), or None: where the exact tails cost much
    more than the rough ones, the search with the exact ones then starts from a narrow bracket (:func:`_near_root`)."""
    if law.rough_tails is None:
        return None
    lev = math.log(float(level))

    def g(logt):
        tail = law.rough_tails(Fraction(math.exp(logt)))
        if tail is None or not math.isfinite(tail) or tail <= 0:
            raise TailError("no rough tail")
        return math.log(tail) - lev

    try:
        # steps of at most 1.5 (not 4): rough tails may fail far beyond the root (e.g. where a float64 sum cancels);
        # extrapolated, so that the last step stops near the root (a rough tail's cost grows with t)
        lo, hi, glo, ghi = _extrapolated_bracket(g, math.log(mean if mean > 0 else 1.0), math.log(1.5))
        return quantile_illinois(g, lo, hi, glo, ghi, tol)
    except (TailError, ArithmeticError, OverflowError, ValueError):
        return None


def _extrapolated_bracket(g, x0: float, cap: float, margin: float = 1.1, least: float = 0.01, limit: int = 400):
    """[lo, hi] in x = log t with g(lo) > 0 > g(hi) for the decreasing g (log P(T > t) - log(level)), from x0:
    (lo, hi, g(lo), g(hi)). Downwards by steps of ``cap`` while g(x0) <= 0. Upwards: the first step is ``cap``;
    each next one extrapolates g linearly from its last two points, x_{k+1} = x_k + ``margin`` g_k (x_k - x_{k-1})
    / (g_{k-1} - g_k) (the secant's root, 10 % beyond), at most ``cap`` and at least ``least`` -- and at least
    twice the previous step when that one was extrapolated and stopped short (a tail flattening, e.g. past a kink
    or in a heavy tail: the extrapolation falls short at most a logarithmic number of times). A tail whose
    log is concave in log t (light tails, the lognormal's) is passed by the first extrapolated step; with steps of
    ``cap`` alone the last step overshot by up to ``cap`` (a rough tail of the lattice sums costs O(t^3): a step
    of 1.5 past a root at t = 1.68 cost twice the whole search). Raises :class:`TailError` after ``limit`` steps."""
    x, gx = x0, g(x0)
    if not gx > 0:
        for _ in range(limit):
            y = x - cap
            gy = g(y)
            if gy > 0:
                return y, x, gy, gx
            x, gx = y, gy
        raise TailError("the quantile lies far below the mean (an atom near 0?)")
    previous, floor = None, least
    for _ in range(limit):
        step = cap
        if previous is not None and gx < previous[1]:
            secant = margin * gx * (x - previous[0]) / (previous[1] - gx)
            step = min(cap, max(floor, secant))
        y = x + step
        gy = g(y)
        if gy <= 0:  # 0: the root itself (the Illinois step there returns it)
            return x, y, gx, gy
        floor = 2 * step if step < cap else least
        previous, x, gx = (x, gx), y, gy
    raise TailError("the quantile lies far beyond the mean")


def _near_root(g, guess, lift):
    """A bracket (lo, hi, g(lo), g(hi)) of the root of g (decreasing in log t) around the rough root ``guess``
    (log t; ``lift`` maps a float to the search's numbers): log t = guess -+ 1e-9, widened 100-fold (up to 1e-1)
    while g does not change sign across it; None when it never does (the caller then searches from the mean).
    The exact g decides: the rough tails only choose where it is evaluated."""
    if guess is None:
        return None
    width = 1e-9
    while width <= 0.1:
        lo, hi = lift(guess - width * max(1.0, abs(guess))), lift(guess + width * max(1.0, abs(guess)))
        glo, ghi = g(lo), g(hi)
        if glo > 0 > ghi:
            return lo, hi, glo, ghi
        width *= 100
    return None


def _rough_slope(law: ResponseLaw, x: float, delta: float = 0.02):
    """d log P(T > t) / d log t at log t = ``x`` from the law's ``rough_tails`` (a central difference over
    +-``delta``), or None where they give none: the Newton steps of :func:`_guided_bracket`."""
    try:
        a, b = (law.rough_tails(Fraction(math.exp(x + d))) for d in (-delta, delta))
    except (ArithmeticError, ValueError, OverflowError):
        return None
    if a is None or b is None or not (a > 0 and b > 0):
        return None
    return (math.log(b) - math.log(a)) / (2 * delta)


def _guided_bracket(g, x0, slope, steps: int = 40):
    """A bracket (lo, hi, g(lo), g(hi)) with g(lo) > 0 >= g(hi) of the root of the decreasing g (in log t) near the
    rough root ``x0``: g(x0), then steps of 1.5 times the Newton step -g / ``slope`` (the rough tails' slope of the
    same g; at least 1e-12 of x0) across to the other sign, doubled while g keeps its sign; None when ``slope`` is
    not negative or no sign change is found in ``steps`` steps (the caller then searches from the mean). Where the
    rough root lies within a bracket's width of the exact one this costs two evaluations of g instead of the
    widening of :func:`_near_root` (two per hundredfold, from 1e-9). (x0, x0, 0, 0) when g(x0) = 0."""
    if slope is None or not slope < 0 or not math.isfinite(slope):
        return None
    x, gx = x0, g(x0)
    if gx == 0:
        return x0, x0, 0, 0
    least = 1e-12 * max(1.0, abs(x0))
    step = -1.5 * gx / slope
    step = math.copysign(max(abs(step), least), step)
    for _ in range(steps):
        y = x + step
        gy = g(y)
        if (gy > 0) != (gx > 0):
            return (x, y, gx, gy) if step > 0 else (y, x, gy, gx)
        x, gx = y, gy
        step *= 2
    return None


def _supplied_quantile(law: ResponseLaw, level: Fraction, mean, digits: int | None, below=None):
    """The root of log P(T > t) = log(level) with the law's own tails (float64, or D digits); a law with
    ``rough_tails`` starts from a narrow bracket around their root (:func:`_near_root`), checked with its tails;
    their search starts at ``below`` (a quantile of a lower level, found before) where given, else at the mean."""
    # a guide for the bracketed laws' Newton steps needs no more than 1e-8 (their exact tails then take over)
    guess = _rough_root(law, level, below if below is not None and below > 0 else mean,
                        1e-13 if law.bound is None else 1e-8)
    if digits is None:
        lev = float(level)

        def g(logt):
            t = Fraction(math.exp(logt))
            tail = law.tails([t], None)[0][0]
            if tail is None:  # the law's float64 sum cancels here: its 15-digit value
                tail = law.tails([t], 15)[0][0]
            return math.log(max(float(tail), 1e-300)) - math.log(lev)

        if law.bound is not None and guess is not None:  # certified bounds: every exact tail costs a fine lattice
            near = _guided_bracket(g, guess, _rough_slope(law, guess))
            if near is not None and near[2] == near[3] == 0:  # g vanishes at the rough root itself
                return math.exp(near[0])
        else:
            near = _near_root(g, guess, float)
        lo, hi, glo, ghi = near or _bracket(g, mean if mean > 0 else 1.0, math.log(4.0), math.exp, math.log)
        return math.exp(_illinois(g, lo, hi, glo, ghi, 1e-13))
    if law.bracket is not None and guess is not None:  # its tails need D + 5 digits of the bounds (guess: log t)
        _refuse_wide_bracket(law, Fraction(math.exp(guess)), digits, level)
    ctx = mp_context(digits + 10)
    with ctx:
        lev = ctx.num(level)

        def g(logt):
            t = mpmath.exp(logt)
            tail = law.tails([Fraction(t.man) * Fraction(2) ** int(t.exp)], digits + 5)[0][0]
            if tail <= 0:
                return mpmath.mpf(-1)
            return mpmath.log(tail) - mpmath.log(lev)

        start = mpmath.mpf(mean) if mean > 0 else mpmath.mpf(1)
        near = _near_root(g, guess, mpmath.mpf)
        lo, hi, glo, ghi = near or _bracket(g, start, mpmath.log(4), mpmath.exp, mpmath.log)
        return +mpmath.exp(_illinois(g, lo, hi, glo, ghi, mpmath.mpf(10) ** (-(digits + 4)), close=True))


def _refuse_wide_bracket(law: ResponseLaw, t: Fraction, digits: int, level: Fraction):
    """The refusal of a D-digit quantile of a law with certified bounds (``bracket``) where the bounds at its float64
    root ``t``, on the finest lattice the limit allows, are wider than the D + 5 digits its search asks of the tails
    (before the search, which would stop at its first tail with the same lattices; the refusal names the user's D)."""
    if getattr(law.bracket, "digits", False):  # the law's tails answer D digits beyond its bounds (issue 28, uq28)
        return
    lo, hi, levels = law.bracket(t)
    if hi - lo <= mpmath.mpf(10) ** -(digits + 5) * lo:
        return
    reached = math.log10(2 * hi / (hi - lo)) if hi > lo else math.inf
    raise ParameterError(f"--digits {digits}: the quantile at {float(1 - level):.6g} needs the tails to {digits + 5} "
                         f"digits, and the certified lattice bounds of P({law.name} > {float(t):.6g}) reach "
                         f"{reached:.1f} ({lo:.6g} <= P <= {hi:.6g} with {levels} levels, the limit "
                         "lattice-levels): no D-digit algorithm covers this law (drop --digits for the estimate inside "
                         "the bounds, or raise --limit lattice-levels=...)")


def _to_float(x):
    """An mpf as a float; a value below the double range, or among its subnormal numbers (fewer than 16 digits), stays
    an mpf (printed as a decimal string)."""
    f = float(x)
    return f if abs(f) >= sys.float_info.min or x == 0 else x


# -- quantiles ------------------------------------------------------------------------------------------


def quantiles(law: ResponseLaw, qs, digits: int | None, mean, option: str = "wait_quantile"):
    """min{t: P(T <= t) >= q} for every q (module docstring): (values, confirmed digits, notes).

    The root of log P(T > t) = log(1 - q) in log t. float64: with the float64 tails (both parameter
    sets must agree at every step), else as for 15 digits. D digits: with one parameter set for
    D + log10(1/(1 - q)) + 8 digits, then refined with a second set 5 digits finer; the two roots
    must agree to D + 2 digits (more digits are added until they do).
    """
    _refuse_kinks(law, option)
    out, notes, confirmed = [], [], math.inf
    # the atom P(T = 0) only decides which levels it reaches (their quantile is exactly 0): float64 (the mpmath data
    # of a finite room cost seconds to minutes), at 25 digits (D + 10 for --digits D) only for a level within 1e-9
    # of it, where float64 cannot decide
    ctx = FLOAT64
    p0, notes = atom(law, ctx, option)  # every level is compared with it: its note stays
    for q in qs:
        if ctx.is_float64 and abs(float(p0) - float(q)) <= 1e-9:
            ctx = mp_context(max(25, (digits or 0) + 10))
            with ctx:
                p0 = law.p_zero(ctx)
        with ctx:
            at_zero = p0 >= ctx.num(Fraction(q))
        if at_zero:
            out.append(0.0 if digits is None else mpmath.mpf(0))  # the atom at 0 already reaches q
            continue
        if law.tails is not None:
            lower = [r for p, r in zip(qs, out) if Fraction(p) < Fraction(q) and r > 0]
            out.append(_supplied_quantile(law, Fraction(1) - Fraction(q), mean, digits,
                                          float(max(lower)) if lower else None))
            confirmed = min(confirmed, digits or 0)
            if law.bracket is not None and out[-1] > 0:
                notes.append(_bracket_quantile_note(law, Fraction(1) - Fraction(q), out[-1], option, q))
            continue
        if digits is None:
            root = _float64_quantile(law, float(1 - q), float(mean))
            if root is not None:
                out.append(root)
                continue
            notes.append(f"{option}: the float64 inversion lost its accuracy near the quantile {_shown(Fraction(q))}; "
                         "recomputed with mpmath to 15 digits and rounded to float64")
            guess = _float64_guess(law, float(1 - q), float(mean))
            out.append(_to_float(_mp_quantile(law, Fraction(1) - Fraction(q), mean, 15, guess)[0]))
            continue
        guess = _float64_guess(law, float(1 - q), float(mean))
        root, agreed = _mp_quantile(law, Fraction(1) - Fraction(q), mean, digits, guess)
        out.append(root)
        confirmed = min(confirmed, agreed)
    return out, (None if digits is None else confirmed), notes


def _illinois(g, lo, hi, glo, ghi, tol, limit=600, close=False):
    """The kernel :func:`~.kernels.tails.quantile_illinois`, its failure as a NumericalError."""
    try:
        return quantile_illinois(g, lo, hi, glo, ghi, tol, limit, close=close)
    except TailError as exc:
        raise NumericalError(str(exc)) from None


def _bracket(g, start, step, exp, log):
    """The kernel :func:`~.kernels.tails.quantile_bracket`, its failure as a NumericalError."""
    try:
        return quantile_bracket(g, start, step, exp, log)
    except TailError as exc:
        raise NumericalError(str(exc)) from None


def _float64_quantile(law, level: float, mean: float):
    """The float64 quantile of the kernel :func:`~.kernels.tails.float64_quantile`, or None (escalate)."""
    G = _tail_transform(law.transform(FLOAT64), FLOAT64)
    try:
        return float64_quantile(FLOAT64, G, level, mean)
    except TailError as exc:
        raise NumericalError(str(exc)) from None


class Guess(float):
    """A rough root in log t (:func:`_float64_guess`) with ``slope``, the rough d log P(T > t) / d log t there (or
    None): the Newton step of :func:`_secant_root`."""

    slope = None


def _float64_guess(law, level: float, mean: float):
    """The root (in log t) of log P(T > t) = log(``level``) with the float64 inversion's first parameter set alone,
    without its self-check, or None: a guide that only chooses where the D-digit search evaluates first
    (:func:`_secant_root`, :func:`_near_root`); the D-digit tails decide. A float64 search costs about as much as one
    D-digit tail. A point where the first set gives no tail (a node of the set where the law's float64 transform
    fails: a finite room's node within 1.6e-3 of the circle |lambda - s| = lambda, measured at t = 0.84 for an Erlang-2
    service with a lognormal vacation at r = 200) takes the next set's. The :class:`Guess` carries the slope of the
    same tails at the root (central difference over +-1e-4 in log t: about 1e-7 absolute)."""
    G = _tail_transform(law.transform(FLOAT64), FLOAT64)
    lev = math.log(level)

    def g(logt):
        for A, n, m in TAIL_FLOAT64_SETS:
            with np.errstate(all="ignore"):
                try:
                    tail = euler_inversion(FLOAT64, G, np.array([math.exp(logt)]), A, n, m)[0]
                except (ArithmeticError, ValueError, NumericalError):
                    continue
            if math.isfinite(tail) and tail > 0:
                return math.log(tail) - lev
        raise TailError("no float64 tail")

    try:
        lo, hi, glo, ghi = quantile_bracket(g, mean if mean > 0 else 1.0, math.log(4.0), math.exp, math.log)
        guess = Guess(quantile_illinois(g, lo, hi, glo, ghi, 1e-13, limit=100, safeguard=None))
    except (TailError, ArithmeticError, OverflowError, ValueError, NumericalError):
        return None
    try:
        slope = (g(guess + 1e-4) - g(guess - 1e-4)) / 2e-4
        guess.slope = slope if math.isfinite(slope) and slope < 0 else None
    except (TailError, ArithmeticError, OverflowError, ValueError, NumericalError):
        pass
    return guess


#: a bound of |g'' / (2 g')| for g(x) = log P(T > x) - log(level), x = log t, near the root: the secant's error
#: C |x - a| |x - b| (:func:`_secant_root`) is trusted below a sixteenth of the search's tolerance. Only the speed
#: depends on it: a first root off by more than the tolerance moves the second root's search out of its narrow
#: bracket (:func:`_second_root`), and roots that disagree add digits.
SECANT_CURVATURE = 100


def _secant_root(g, guess, tol, lift, steps: int = 3):
    """The first D-digit root near the rough root ``guess`` (a :class:`Guess` with its slope) by secant steps, without
    a bracket: g at the guess, at one Newton step with the rough slope (off by the rough slope's error times the
    guess's: about 1e-7 x 1e-12), then secants through the last two points until the next one's error bound
    SECANT_CURVATURE |x - a| |x - b| is below tol / 16 (relative, absolute below 1); None when the guess has no slope,
    g is flat between two points, or ``steps`` secants do not get there (the caller then brackets). Two D-digit tails
    where a bracket around the guess and its closing take four to five. The second parameter set's search
    (:func:`_second_root`) brackets its own root within tol / 4 of this one and the two must agree: the certificate."""
    slope = getattr(guess, "slope", None)
    if guess is None or slope is None:
        return None
    x0 = lift(float(guess))
    g0 = g(x0)
    if g0 == 0:
        return x0
    x1 = x0 - g0 / lift(slope)
    points = [(x0, g0), (x1, g(x1))]
    for _ in range(steps):
        (xa, ga), (xb, gb) = points[-2], points[-1]
        if gb == 0:
            return xb
        if ga == gb:
            return None
        x = xb - gb * (xb - xa) / (gb - ga)
        if SECANT_CURVATURE * abs(x - xa) * abs(x - xb) <= tol * max(1, abs(x)) / 16:
            return x
        points.append((x, g(x)))
    return None


def _second_root(g, x0, tol, wide):
    """The root of the second parameter set's g (decreasing in log t) near the first set's root x0 (log t), to the
    search's tolerance ``tol`` (relative, absolute below 1, as :func:`~.kernels.tails.quantile_illinois`), or None
    when it lies farther than ``wide`` (relative) from x0. First g at x0 -+ tol / 4: a sign change there (the two
    sets agree within the first search's own tolerance, the usual case) gives the root by one secant step inside a
    bracket of width tol / 2 (two tails, where a search from a bracket would take five); else the bracket reaches
    out to x0 -+ ``wide`` on the side g points to, and Illinois refines it."""
    scale = max(1, abs(x0))
    lo, hi = x0 - tol * scale / 4, x0 + tol * scale / 4
    glo, ghi = g(lo), g(hi)
    if glo == 0 or ghi == 0:
        return lo if glo == 0 else hi
    if glo > 0 > ghi:
        return lo - glo * (hi - lo) / (ghi - glo)
    if glo > 0:  # both positive: the root lies above
        lo, glo, hi = hi, ghi, x0 + wide * scale
        ghi = g(hi)
    else:
        hi, ghi, lo = lo, glo, x0 - wide * scale
        glo = g(lo)
    if not (glo > 0 > ghi):
        return None
    return _illinois(g, lo, hi, glo, ghi, tol, close=True)


def _mp_quantile(law, level: Fraction, mean, digits: int, guess=None):
    """(root, digits agreed) of the module docstring's D-digit quantile. The first root's search starts from a narrow
    bracket around ``guess`` (log t, e.g. :func:`_float64_guess`) where the D-digit tails confirm one
    (:func:`_near_root`); the second's at the first root (:func:`_second_root`): where it lies farther than 10^-(D+1)
    (relative in log t) the two roots differ by more than the D + 2 digits asked, so the digits grow at once."""
    size = max(0.0, -math.log10(float(level))) if level > 0 else 0.0
    extra = 0
    while True:
        want = digits + int(math.ceil(size)) + 8 + extra
        _limits.check("inversion_digits", want, f"a quantile at level 1 - {_shown(level)} needs {want} digits of "
                      "inversion")
        roots = []
        for offset in (0, 5):
            ctx = mp_context(int(1.5 * (want + offset)) + 10)
            with ctx:
                lev = ctx.num(level)

                def g(logt, ctx=ctx, lev=lev, w=want + offset):
                    tail = euler_tails(law, ctx, [mpmath.exp(logt)], w)[0]
                    if tail <= 0:
                        return mpmath.mpf(-1)
                    return mpmath.log(tail) - mpmath.log(lev)

                tol = mpmath.mpf(10) ** (-(digits + 4))
                if not roots:
                    root = _secant_root(g, guess, tol, mpmath.mpf)
                    if root is not None:
                        roots.append(mpmath.exp(root))
                        continue
                    near = _near_root(g, guess, mpmath.mpf)
                    lo, hi, glo, ghi = near or _bracket(g, mpmath.mpf(mean) if mean > 0 else mpmath.mpf(1),
                                                        mpmath.log(4), mpmath.exp, mpmath.log)
                else:
                    root = _second_root(g, mpmath.log(roots[0]), tol, mpmath.mpf(10) ** (-(digits + 1)))
                    if root is None:
                        break  # the second root lies beyond: the roots disagree in the D + 2 digits asked
                    roots.append(mpmath.exp(root))
                    continue
                roots.append(mpmath.exp(_illinois(g, lo, hi, glo, ghi, tol, close=True)))
        agreed = _agreement(roots[0], roots[1]) if len(roots) == 2 else 0
        if agreed >= digits + 2:
            return roots[1], agreed
        extra += 10


# -- moments ----------------------------------------------------------------------------------------------


#: the digits of the mpmath recomputation of float64 moments whose law detected its own trouble
MOMENT_ESCALATION_DIGITS = 16


#: why a law's own float64 tails (a sum with its rounding bound) were recomputed
CANCELS = "the float64 sum cancels beyond its accuracy"


def atom(law: ResponseLaw, ctx, option: str):
    """(P(T = 0) in ``ctx``, notes). A law's float64 ``p_zero`` that detects its own trouble raises ``Trouble``
    saying why (the finite room's float64 data that over- or underflow): the atom is then recomputed with mpmath to
    15 digits and rounded to float64, with the :func:`escalation_note`, as float64 tails and moments are."""
    if not ctx.is_float64:
        return law.p_zero(ctx), []
    try:
        return law.p_zero(FLOAT64), []
    except Trouble as trouble:
        return _to_float(law.p_zero(mp_context(15))), [escalation_note(option, str(trouble))]


def escalation_note(option: str, why: str, digits: int = 15) -> str:
    """The note of a float64 response value that detected its own trouble (``why``) and was recomputed with
    mpmath to ``digits`` digits: the one text of tails, quantiles, moments and the SIP routes' copy tails."""
    return f"{option}: {why}; recomputed with mpmath to {digits} digits and rounded to float64"


def moments(law: ResponseLaw, k: int, digits: int | None):
    """(E T, ..., E T^k): floats in float64, exact or D-digit numbers otherwise; and the confirmed digits (the
    notes of an escalation: :func:`noted_moments`)."""
    return noted_moments(law, k, digits)[:2]


def noted_moments(law: ResponseLaw, k: int, digits: int | None, option: str = "wait_moments"):
    """:func:`moments` with the notes: (values, confirmed digits, notes). A law's float64 ``moment_values`` raises
    :class:`~qderive.numeric.engines.base.Trouble` when it detects its own trouble (the message says why, e.g. a
    rounding bound above 1e-10 of a moment): the moments are then recomputed with mpmath to
    ``MOMENT_ESCALATION_DIGITS`` digits and rounded to float64, with a note, as float64 tails are."""
    if digits is None:
        try:
            return [float(v) for v in law.moment_values(k, None)], None, []
        except Trouble as trouble:
            values = law.moment_values(k, MOMENT_ESCALATION_DIGITS)
            return [_to_float(v) for v in values], None, [escalation_note(option, str(trouble),
                                                                            MOMENT_ESCALATION_DIGITS)]
    values = law.moment_values(k, digits)
    exact = all(isinstance(v, (int, Fraction)) for v in values)
    ctx = mp_context(digits + 10)
    with ctx:
        return [ctx.num(v) if isinstance(v, (int, Fraction)) else v for v in values], (math.inf if exact else None), []


# -- everything asked, for the precision policy ------------------------------------------------------------


def evaluate_response(laws: dict, request: ResponseRequest, digits: int | None, mean_of=None) -> tuple:
    """The measures of ``request`` from the model's response laws: (measures dict, confirmed digits, working
    digits, notes). Keys of tails and quantiles are the texts as given; moments are lists."""
    measures, notes = {}, []
    confirmed, working = math.inf, None
    for law_key, suffix, flow in request.kinds():
        kind = law_key[: len(law_key) - len(suffix)]
        law = laws[law_key]
        ts = request.asked(kind, "tail", flow)
        if ts:
            values, c, w, n = tails(law, [v for _, v in ts], digits, option=f"{kind}_tail{suffix}")
            measures[f"{kind}_tail{suffix}"] = {key: v for (key, _), v in zip(ts, values)}
            notes += n
            confirmed = min(confirmed, c) if c is not None else confirmed
            working = max(working or 0, w or 0) or None
        qs = request.asked(kind, "quantile", flow)
        if qs:
            mean = noted_moments(law, 1, None)[0][0]  # a start of the search only: its note is not the output's
            values, c, n = quantiles(law, [v for _, v in qs], digits, float(mean), option=f"{kind}_quantile{suffix}")
            measures[f"{kind}_quantile{suffix}"] = {key: v for (key, _), v in zip(qs, values)}
            notes += n
            confirmed = min(confirmed, c) if c is not None else confirmed
        k = request.asked(kind, "moments", flow)
        if k:
            values, c, n = noted_moments(law, k, digits, option=f"{kind}_moments{suffix}")
            measures[f"{kind}_moments{suffix}"] = values
            notes += n
            confirmed = min(confirmed, c) if c is not None else confirmed
    return measures, (None if digits is None else confirmed), working, notes
