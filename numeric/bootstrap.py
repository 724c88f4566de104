"""Bootstrap intervals of a model's measures over the samples of its empirical laws.

A measured law (:class:`~qderive.symbolic.laws.empirical.Empirical`, ``empirical:file=times.csv``) answers as the
law of its sample: the measures are exact for the sample, not for the server the sample was taken from. How much
they would move with another sample of the same size is estimated by the nonparametric bootstrap (Efron and
Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 6 and 13): each of the model's empirical laws
x_1..x_N is resampled with replacement, x*_i = x_{U_i} with U_i uniform on {1..N} (a seeded
:class:`numpy.random.Generator`), the model is rebuilt with the resampled laws (``dataclasses.replace``; every
other field, e.g. the arrival rate, held at its value), the same measures are evaluated, and the percentile
interval of the B replicate values theta*_1..theta*_B is reported,

    [ q_{(1-c)/2}(theta*), q_{(1+c)/2}(theta*) ]     (Efron-Tibshirani (13.3); q the linear-interpolation quantile)

at confidence c. The replicates are evaluated in float64 under the precision policy (a sampling interval needs no
more digits; the full-sample answer keeps the digits asked for). Generic: whatever measures the engines compute
for the model (moments, tails, quantiles; per-flow measures) get an interval, key by key.

>>> import qderive as qd
>>> q = qd.VacationQueue(2, qd.Geometric(2), qd.Empirical((0.1, 0.1, 0.1)), qd.Exponential(0.5))
>>> b = qd.bootstrap(q, 20, seed=1, quiet=True)
>>> b.intervals["mean_wait"] == [q.evaluate().mean_wait] * 2   # a constant sample: a zero-width interval
True
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..symbolic import limits as _limits
from ..symbolic.errors import ParameterError
from ..symbolic.params import Kind, params_of

__all__ = ["BootstrapResult", "bootstrap", "empirical_fields"]


@dataclass(frozen=True)
class BootstrapResult:
    """The full-sample evaluation and the bootstrap intervals of its measures.

    ``record`` the model's result record on the full sample (as ``model.evaluate`` gives it); ``intervals``
    measure key -> ``[lo, hi]`` for a number, ``{point: [lo, hi]}`` for a tail or quantile, ``[[lo, hi], ...]``
    for moments (the shape of the measure, each number replaced by its interval); ``resamples`` B; ``seed``
    the seed of the generator (the run is reproducible with it); ``confidence`` c; ``laws`` the fields
    resampled; ``sizes`` their sample sizes.
    """

    record: object
    intervals: dict
    resamples: int
    seed: int
    confidence: float
    laws: tuple
    sizes: tuple
    notes: tuple = field(default=())

    def as_dict(self) -> dict:
        """The keys added to ``qderive eval --json`` by ``--bootstrap B``."""
        return {"bootstrap": self.intervals, "bootstrap_resamples": self.resamples, "bootstrap_seed": self.seed,
                "bootstrap_confidence": self.confidence, "bootstrap_laws": list(self.laws)}


def empirical_fields(model) -> tuple[str, ...]:
    """The names of the model's time-law fields that hold an empirical law (in declaration order)."""
    from ..symbolic.laws.empirical import Empirical

    return tuple(f.name for f, meta in params_of(type(model))
                 if meta.kind is Kind.TIME_LAW and isinstance(getattr(model, f.name), Empirical))


def _check_request(model, resamples, seed, confidence, names) -> tuple[float, int]:
    """Refusals before any work: B, the limit, the confidence, the seed, an empirical law to resample."""
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 2:
        raise ParameterError("bootstrap", "must be an integer >= 2 (the number of resamples B)", resamples)
    _limits.check("bootstrap_resamples", int(resamples), "--bootstrap B: each resample is one evaluation of the model")
    from ..symbolic.numbers import exact

    try:
        c = exact(confidence, "confidence")
    except ParameterError:
        c = None
    if not isinstance(c, Fraction) or not 0 < c < 1:
        raise ParameterError("confidence", "must lie strictly between 0 and 1 (e.g. 0.95)", confidence)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError("seed", "must be an integer >= 0", seed)
    if not empirical_fields(model):
        laws = [f"{names.get(f.name, f.name)} {getattr(model, f.name).spec_text()}"
                for f, meta in params_of(type(model))
                if meta.kind is Kind.TIME_LAW and getattr(model, f.name) is not None]
        where = f"among {', '.join(laws)}" if laws else "(the model has no time law)"
        raise ParameterError(f"{names.get('bootstrap', 'bootstrap')}: no empirical law {where} of {type(model).name}: "
                             "resampling needs a measured sample (empirical:file=PATH)")
    return float(c), int(seed)


def _resampler(law, rng):
    """A function giving one resample of the empirical ``law``: its values drawn with replacement (sorted: the
    law's atoms are then counted from an ordered sample), named ``resample of <file>`` (its ``source``, never
    read). The name keeps the engines' cache keys structural, as for a law read from a file (a key names the
    file, not its N values): a resample then costs one evaluation, not a new key that re-derives and stores the
    properties every empirical law shares (e.g. that its transform has kinks)."""
    from ..symbolic.laws.empirical import Empirical

    ordered = sorted(law.values)
    size = len(ordered)
    name = f"resample of {law.source or 'the sample'}"

    def draw():
        return Empirical(tuple(ordered[i] for i in np.sort(rng.integers(0, size, size))), name)

    return draw


def _rebuild(model, laws: dict, hold: dict):
    """The model with the resampled ``laws``: ``dataclasses.replace``, or, with alternatives held (``{"load":
    0.8}``), the model's own constructor from its values with the alternative in place of its field."""
    if not hold:
        return dataclasses.replace(model, **laws)
    values = {f.name: getattr(model, f.name) for f in dataclasses.fields(model) if f.init}
    values.update(laws)
    alternatives = {a.name: a for a in type(model).alternatives}
    for name, value in hold.items():
        values.pop(alternatives[name].field)
        values[name] = value
    return type(model).from_values(values)


def _held_text(model, hold: dict, names: dict) -> str:
    if not hold:
        return "every other parameter held as given"
    alternatives = {a.name: a for a in type(model).alternatives}
    from ..symbolic.params import show_value

    return (", ".join(f"{names.get(n, n)} held at {show_value(v)}" for n, v in hold.items()) + " (the "
            + ", ".join(names.get(alternatives[n].field, alternatives[n].field) for n in hold)
            + " follows each resample), every other parameter as given")


def _leaves(value):
    """The numbers of a measure value in a fixed order (dicts by key, lists by index); None for a non-number."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, (list, tuple, np.ndarray)):
        return [x for v in value for x in _leaves(v)]
    if value is None or isinstance(value, (bool, str)):
        return [None]
    return [float(value)]


def _shaped(value, intervals: list):
    """``value``'s structure with each number replaced by the next interval of ``intervals`` (consumed)."""
    if isinstance(value, dict):
        return {k: _shaped(v, intervals) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_shaped(v, intervals) for v in value]
    return intervals.pop(0)


def bootstrap(model, resamples: int, *, seed: int | None = None, confidence=0.95, digits: int | None = None,
              include=(), hold: dict | None = None, quiet: bool | None = None, names: dict | None = None,
              **response) -> BootstrapResult:
    """Percentile bootstrap intervals of ``model``'s measures over the samples of its empirical laws.

    ``model.evaluate(digits, include=include, **response)`` on the full sample, then B = ``resamples``
    evaluations in float64 of the model rebuilt with every empirical law resampled with replacement (module
    docstring; Efron-Tibshirani (13.3)), from ``numpy.random.default_rng(seed)``. ``response`` the
    response-time measures (``wait_tail=["0.5"]``, ``wait_moments=2``, ...) as for ``evaluate``.

    Refused before any work: B < 2, B above the limit ``bootstrap_resamples`` (``qd.limits``), a confidence
    outside (0, 1), a model with no empirical law; a measure the engines refuse is refused as by ``evaluate``.
    A resample that makes the model invalid (a resampled mean service that puts the load at 1 or above, the
    arrival rate being held) stops the run with that reason. ``hold`` alternatives of the model held instead
    of their fields (``{"load": 0.8}`` for a model built ``from_load``: each resample's arrival rate then
    follows its mean service and the load stays 0.8; the command line holds the alternatives given, ``--load``).
    ``quiet`` the progress report (None: the defaults of :mod:`qderive.numeric.engines.progress`); ``names`` how
    to call the fields in messages (the command line passes its options).
    """
    from .engines.progress import Progress
    from .precision import evaluate

    names = names or {}
    c, seed = _check_request(model, resamples, seed, confidence, names)
    hold = dict(hold or {})
    known = {a.name for a in type(model).alternatives}
    for name in hold:
        if name not in known:
            raise ParameterError("hold", f"must name an alternative of {type(model).name} "
                                 f"({', '.join(sorted(known)) or 'it has none'})", name)
    with Progress(None, "", desc=f"eval {type(model).name}", quiet=quiet, ticker=True):
        record = evaluate(model, digits, include=include, **dict(response))
    fields = empirical_fields(model)
    rng = np.random.default_rng(seed)
    draws = {name: _resampler(getattr(model, name), rng) for name in fields}
    full = record.as_dict()
    keys = [k for k, v in full.items() if any(x is not None for x in _leaves(v))]
    columns: dict[str, list] = {k: [] for k in keys}
    shape_notes = set()
    with Progress(int(resamples), "resamples", quiet=quiet, desc=f"bootstrap {type(model).name}") as bar:
        for b in range(int(resamples)):
            laws = {name: draw() for name, draw in draws.items()}
            try:
                replica = _rebuild(model, laws, hold)
            except ParameterError as err:
                what = ", ".join(f"{names.get(n, n)} of mean {float(laws[n].mean):.6g}" for n in fields)
                raise ParameterError(f"{names.get('bootstrap', 'bootstrap')}: resample {b + 1} of {resamples} "
                                     f"({what}) gives no valid model ({err}); {_held_text(model, hold, names)}: "
                                     "the sample cannot tell whether this model is valid (measure more "
                                     "times, or lower the load)") from None
            values = evaluate(replica, None, include=include, **dict(response)).as_dict()
            for k in keys:
                leaves = _leaves(values.get(k))
                if len(leaves) != len(_leaves(full[k])):
                    shape_notes.add(k)
                columns[k].append(leaves)
            bar.advance()
    lo_q, hi_q = (1 - c) / 2, (1 + c) / 2
    intervals, notes = {}, []
    for k in keys:
        if k in shape_notes:
            notes.append(f"bootstrap: {k} changes its length between resamples: no interval")
            continue
        table = np.array([[math.nan if x is None else x for x in row] for row in columns[k]], dtype=float)
        per_leaf = []
        for j, x in enumerate(_leaves(full[k])):
            if x is None or not np.isfinite(table[:, j]).all():
                if x is not None:
                    notes.append(f"bootstrap: {k} is not a number for some resample: no interval (null)")
                per_leaf.append(None)
                continue
            lo, hi = np.quantile(table[:, j], [lo_q, hi_q])
            per_leaf.append([float(lo), float(hi)])
        intervals[k] = _shaped(full[k], per_leaf)
    sizes = tuple(len(getattr(model, n).values) for n in fields)
    laws_text = ", ".join(f"{names.get(n, n)} ({s} values)" for n, s in zip(fields, sizes))
    notes.insert(0, f"bootstrap: {resamples} resamples with replacement of {laws_text}, seed {seed}; {c:g} "
                    f"percentile intervals of float64 replicates; {_held_text(model, hold, names)}")
    return BootstrapResult(record, intervals, int(resamples), seed, c, fields, sizes, tuple(notes))
