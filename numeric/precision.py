"""One precision policy for every model, in the Python API and on the command line.

``evaluate(model, digits=None)``:

* **float64** (``digits=None``): the engine computes in float64; the result is tested --
  by the engine (ill-conditioning, a renewal identity, a quantity that underflows) and
  generically (a non-finite value, a probability outside [0, 1], a value in or near the
  subnormal range, a probability that is exactly 0) -- and, if anything is wrong,
  recomputed with mpmath and rounded to float64, with a note saying why. A value outside
  the float64 range is kept as an mpmath number (the command line prints it as a
  decimal string, with a note), never as 0 or inf.
* **D digits** (``digits=D``): the engine computes at ``D + 10 + guard`` working digits,
  where ``guard`` is its a-priori bound on the digits its algorithm can lose (log10 of a
  recursion's length, log10 kappa, ...). An engine whose accuracy is an estimate rather
  than a bound (``Engine.confirm``, or ``confirm=True``) computes again at a higher
  precision and escalates until two consecutive precisions agree to D + 2 digits. An
  engine with exact results (closed forms with rational inputs) is exact at any precision.

The result record says how many digits were confirmed (``confirmed_digits``; ``inf``
for exact results) and at which working precision (``working_digits``).
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np

from ..symbolic import limits as _limits
from ..symbolic.errors import BudgetError, NumericalError, ParameterError
from ..symbolic.models.base import MeasureKind
from .backend import FLOAT64, mp_context
from .engines.base import Trouble

__all__ = ["evaluate", "ask", "GUARD", "agreement", "engine_of", "float64_trouble"]

#: guard digits added to every mpmath evaluation
GUARD = 10
#: a probability that is a ratio of positive sums may exceed 1 by a few roundings: up to 8 ulps it is
#: rounded to 1 (anything larger is trouble: the old finite queue gave p0 = 1.0000000827)
_ULPS_ABOVE_1 = 8 * 2.0**-52
#: |x| below this in float64 is in or next to the subnormal range (2^-960 ~ 1e-289)
_NEAR_UNDERFLOW = 2.0**-960
_ENGINES: dict = {}


def engine_of(model):
    """The engine instance of a model's class (loaded once)."""
    cls = type(model)
    if cls not in _ENGINES:
        from .consumers import load

        engine = load(cls, "engine")
        if engine is None:
            raise ParameterError(f"model {cls.name!r} has no numeric engine")
        _ENGINES[cls] = engine()
    return _ENGINES[cls]


def _flat(value):
    if hasattr(value, "ndim") and getattr(value, "ndim", 0) >= 1:
        value = list(value)
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    elif value is not None and not isinstance(value, (bool, int, str)):
        yield value


class Reason(str):
    """Why a float64 result is not trusted; ``underflow`` when it is only a value below the double range."""

    underflow = False


def _underflow(text: str) -> Reason:
    r = Reason(text)
    r.underflow = True
    return r


@functools.lru_cache(maxsize=None)
def _kinds(record_cls) -> dict:
    """Measure key -> :class:`MeasureKind` of a record class (its fields do not change)."""
    return {f.name: m.kind for f, m in record_cls.measure_fields()}


def float64_trouble(record_cls, values: dict) -> str | None:
    """The generic test of a float64 result (see the module docstring); None when it can be trusted."""
    kinds = _kinds(record_cls)
    unit = (MeasureKind.PROBABILITY, MeasureKind.DISTRIBUTION)
    for key, value in values.items():
        kind = kinds.get(key)
        if isinstance(value, float):  # a Python or numpy double: in [2^-960, 1] (or of a normal size) passes
            if (_NEAR_UNDERFLOW <= value <= 1 + _ULPS_ABOVE_1 if kind in unit
                    else _NEAR_UNDERFLOW <= abs(value) < math.inf):
                continue
        elif isinstance(value, np.ndarray) and value.dtype == np.float64:
            # a float64 vector at once; the first entry that fails (if any) is reported as below
            flat = value.reshape(-1)
            if flat.size:  # its extremes first: every entry in [2^-960, 1] (or [2^-960, inf)) passes every test
                lo, hi = flat.min(), flat.max()  # a NaN makes both NaN and fails the comparisons
                if lo >= _NEAR_UNDERFLOW and (hi <= 1 + _ULPS_ABOVE_1 if kind in unit else hi < math.inf):
                    continue
            size = np.abs(flat)
            bad = ~np.isfinite(flat) | ((size > 0) & (size < _NEAR_UNDERFLOW))
            if kind in unit:
                bad |= ~((flat >= 0) & (flat <= 1 + _ULPS_ABOVE_1))
            if kind is MeasureKind.PROBABILITY:
                bad |= flat == 0
            if not bad.any():
                continue
            value = [float(flat[int(np.argmax(bad))])]
        for v in _flat(value):
            f = float(v)
            if not math.isfinite(f):
                return f"{key} is not finite in float64"
            if kind in unit and not (0 <= f <= 1 + _ULPS_ABOVE_1):
                return f"{key} = {f!r} lies outside [0, 1] in float64"
            if 0 < abs(f) < _NEAR_UNDERFLOW:
                return _underflow(f"{key} = {f:.3g} is at the float64 underflow threshold")
            if f == 0 and kind is MeasureKind.PROBABILITY:
                return _underflow(f"{key} underflows to 0 in float64")
    return None


def agreement(a, b) -> float:
    """Significant decimal digits on which two results (dicts of numbers and lists) agree (inf: identical)."""
    worst = math.inf
    for x, y in zip(_flat(a), _flat(b)):
        with mpmath.workprec(20000):  # the difference exactly (any two mpf of our precisions)
            x, y = mpmath.mpf(x), mpmath.mpf(y)
            if x == y:
                continue
            ratio = abs(x - y) / max(abs(x), abs(y))
        with mpmath.workprec(53):  # its logarithm needs no more than double precision
            worst = min(worst, float(-mpmath.log10(+ratio)))
    return worst


def _compute(engine, model, ctx, options):
    try:
        with ctx:
            return engine.compute(model, ctx, **options)
    except (Trouble, ParameterError, BudgetError, NumericalError):
        raise
    except ArithmeticError as exc:
        if ctx.is_float64:
            raise Trouble(f"float64 {type(exc).__name__.replace('Error', '').lower()}: {exc}") from None
        raise NumericalError(f"{model.name}: {exc}") from None
    except ValueError as exc:  # a kernel's refusal (a reducible chain, a singular system): one clear line
        raise NumericalError(f"{model.name}: {exc}") from None


def _stable(engine, model, digits: int, options, confirm: bool):
    """(values, working digits, confirmed digits) correct to ``digits`` significant digits."""
    lim = _limits.current()
    w = digits + GUARD + engine.guard_digits(model)
    if w > lim.working_digits:
        _limits.check("working_digits", w, f"{digits} digits need {w} working digits")
    current = _compute(engine, model, mp_context(w), options)
    if engine.is_exact(model):
        return current, w, math.inf
    if not (confirm or engine.confirm):
        return current, w, float(digits)
    while True:
        w_next = w + GUARD + (current.pop("_extra_digits", 0) if isinstance(current, dict) else 0)
        if w_next > lim.working_digits:
            raise NumericalError(
                f"{model.name}: the measures did not stabilise to {digits} digits below {lim.working_digits} working "
                f"digits; raise it with --limit working-digits=... if you mean it")
        nxt = _compute(engine, model, mp_context(w_next), options)
        nxt.pop("_extra_digits", None)
        agreed = agreement({k: v for k, v in current.items() if not k.startswith("_")},
                           {k: v for k, v in nxt.items() if not k.startswith("_")})
        if agreed >= digits + 2:
            return nxt, w_next, min(agreed, float(w))
        current, w = nxt, w_next


def outside_note(keys) -> str:
    """The note of float64 results outside the double range, given as decimal strings (mpmath's, 17 digits)."""
    return f"{', '.join(keys)} lie outside the float64 range: given to 17 significant digits as decimal strings"


def _to_float64(values: dict):
    """Round mpmath results to float64, keeping values outside the double range as mpf (with a note)."""
    out, outside = {}, []

    def conv(key, v):
        if isinstance(v, dict):  # a measure that is a dict (sip-retransmission's solutions, tails by time)
            return {k: conv(key, x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [conv(key, x) for x in v]
        if v is None or isinstance(v, (bool, int, str)):
            return v
        f = float(v)
        if (f == 0 and v != 0) or (0 < abs(f) < 2.0**-1022) or math.isinf(f):
            outside.append(key)
            return +v
        return f

    for key, v in values.items():
        out[key] = conv(key, v)
    return out, sorted(set(outside))


def evaluate(model, digits: int | None = None, *, include=(), confirm: bool = False, **options):
    """The measures of ``model`` under the precision policy (module docstring); returns its record.

    Response-time measures are asked with ``wait_tail=(t, ...)``, ``wait_quantile=(q, ...)``,
    ``wait_moments=K`` and the ``sojourn_`` ones (models whose class names a ``response`` law;
    :mod:`qderive.numeric.response`): computed under the same policy, added to the record's
    ``response`` and to its confirmed digits and notes.
    """
    from .consumers import load
    from .response import ResponseRequest

    # no options: nothing asked (the common case of a grid or a sweep)
    request = ResponseRequest.from_options(options, getattr(type(model), "response_flows", ())) if options else None
    asked = request.measures_asked() if request else frozenset()
    response_laws = load(model, "response") if request else None
    if request and response_laws is None:
        first = min(asked)
        raise ParameterError(first, f"is not available for model {type(model).name!r} (no response-time law yet)")
    # what is not computed is refused before any work, by the consumer that does not compute it
    ask(model, engine_of(model), frozenset(), "eval")
    if response_laws is not None:
        ask(model, response_laws, asked, "eval")
    laws = response_laws(model) if request else None  # built before the measures: its refusals come first
    record = _evaluate_measures(model, digits, include, confirm, options)
    if not request:
        return record
    import dataclasses

    from .response import evaluate_response

    measures, confirmed, working, notes = evaluate_response(laws, request, digits)
    if digits is not None:
        confirmed = min(record.confirmed_digits if record.confirmed_digits is not None else math.inf, confirmed)
        working = max(record.working_digits or 0, working or 0) or None
    else:
        confirmed, working = record.confirmed_digits, record.working_digits
    return dataclasses.replace(record, response=measures, notes=record.notes + tuple(notes),
                               confirmed_digits=confirmed, working_digits=working)


def ask(model, consumer, asked=frozenset(), verb="evaluate") -> None:
    """Raise the consumer's refusal of ``model`` (its ``supports`` hook, :mod:`qderive.symbolic.capabilities`)
    as a ParameterError naming the option; nothing when it computes it. The refusal of a response measure
    names that measure (``wait_tail``); the command line shows it as ``--wait-tail``."""
    from ..symbolic.capabilities import ask_consumer

    refusal = ask_consumer(consumer, model, asked)
    if refusal is not None:
        asked_one = refusal.asked or (min(asked) if asked else "")
        raise refusal.error(model, "--" + asked_one.replace("_", "-") if asked_one else verb)


def _evaluate_measures(model, digits, include, confirm, options):
    engine = engine_of(model)
    # the optional measures asked for (``--distribution``): engines compute a law only when it is asked
    options = {**options, "include": frozenset(include)}
    record_cls = type(model).measures
    if digits is not None:
        if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
            raise ParameterError("digits", "must be an integer >= 1", digits)
        _limits.check("digits", digits, "mpmath cost grows with the precision")
    notes: list[str] = []
    if digits is None:
        reason = None
        try:
            values = _compute(engine, model, FLOAT64, options)
            reason = engine.float64_trouble(model, values) or float64_trouble(record_cls, values)
        except Trouble as exc:
            reason, values = str(exc), None
        if reason is None:
            values = _plain(_clamp_probabilities(record_cls, values))
            notes += engine.notes(model, values)
            return _record(model, values, "float64", None, None, notes, include)
        budget = engine.escalation_budget(model)
        if budget is not None and budget[1] > getattr(_limits.current(), budget[0]):
            limit, size, cost = budget
            if values is not None and getattr(reason, "underflow", False):
                values = _plain(values)
                notes.append(f"{reason}: its value is below 2.2e-308 (given as 0); recomputing it with mpmath would "
                             f"take {cost}, beyond the limit {limit.replace('_', '-')} = "
                             f"{getattr(_limits.current(), limit)}: raise it with --limit "
                             f"{limit.replace('_', '-')}={size} (Python: qderive.limits) to get its digits")
                notes += engine.notes(model, values)
                return _record(model, values, "float64", None, None, notes, include)
            _limits.check(limit, size, f"{reason}; recomputing with mpmath would take {cost}")
        hi, w, agreed = _stable(engine, model, 17, options, False)
        values, outside = _to_float64(_plain(hi))
        optional = {f.name for f, m in record_cls.measure_fields() if m.optional and f.name not in include}
        outside = [k for k in outside if k not in optional]
        agreed = min(agreed, 17.0)  # what a float64 carries, whatever the mpmath result confirmed
        notes.append(f"{reason}: recomputed with mpmath at {w} digits and rounded to float64")
        if outside:
            notes.append(outside_note(outside))
        notes += engine.notes(model, values)
        return _record(model, values, "float64", agreed, w, notes, include)
    budget = engine.escalation_budget(model)
    if budget is not None:
        _limits.check(budget[0], budget[1], f"evaluating with mpmath would take {budget[2]}")
    values, w, agreed = _stable(engine, model, digits, options, confirm)
    values = _plain(values)
    notes += engine.notes(model, values)
    return _record(model, values, digits, agreed, w, notes, include)


def _clamp_probabilities(record_cls, values: dict) -> dict:
    """Probabilities within 8 ulps above 1 (rounding of a ratio of positive sums) become exactly 1."""
    kinds = _kinds(record_cls)

    def clamp(v):
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            return np.where((v > 1.0) & (v <= 1 + _ULPS_ABOVE_1), 1.0, v) if v.size and v.max() > 1.0 else v
        if isinstance(v, list):
            if all(type(x) is float for x in v):
                return [1.0 if 1.0 < x <= 1 + _ULPS_ABOVE_1 else x for x in v]
            return [clamp(x) for x in v]
        return 1.0 if isinstance(v, float) and 1.0 < v <= 1 + _ULPS_ABOVE_1 else v

    return {k: clamp(v) if kinds.get(k) in (MeasureKind.PROBABILITY, MeasureKind.DISTRIBUTION) else v
            for k, v in values.items()}


def _plain(values: dict) -> dict:
    """Engine values as plain Python: floats (or mpf), lists for vectors; private keys dropped."""
    import numpy as np

    def conv(v):
        if isinstance(v, np.ndarray):
            return [conv(x) for x in v.tolist()] if v.dtype == object else v.tolist() if v.dtype == np.float64 \
                else v.astype(float).tolist()
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        return v

    return {k: conv(v) for k, v in values.items() if not k.startswith("_")}


def _record(model, values, precision, confirmed, working, notes, include):
    record_cls = type(model).measures
    fields = {}
    for f, m in record_cls.measure_fields():
        if f.name in values and (not m.optional or f.name in include):
            fields[f.name] = values[f.name]
    return record_cls(**fields, model=model, precision=precision, confirmed_digits=confirmed,
                      working_digits=working, notes=tuple(notes))
