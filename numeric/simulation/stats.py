"""Independent replications, warm-up, and confidence intervals for the simulator.

Method (the same for every simulated model):

* **Independent replications.** ``replications`` = K runs, each from an empty system
  with its own generator ``numpy.random.default_rng(child)``, the children spawned
  from one ``numpy.random.SeedSequence(seed)``: the same seed gives the same numbers.
* **Warm-up.** Each run serves ``customers`` customers; the first
  ``round(warmup * customers)`` are discarded: every accumulator (time, areas,
  counts) is measured from the departure of the last warm-up customer to the
  departure of the last customer.
* **Estimates.** Every measure is a smooth function f of accumulator totals
  (a ratio such as lost / arrived or area / time, or area2/T - (area/T)^2), so the
  point estimate is f evaluated at the totals over the K runs (the classical ratio
  estimator of regenerative / replicated simulation).
* **Intervals.** The standard error is the jackknife over the K independent runs
  (leave one run out: se^2 = (K-1)/K * sum_k (f_(k) - mean f_(.))^2); for a plain
  mean it equals the textbook s/sqrt(K), for a ratio it is the delta-method error.
  The interval is estimate +- t_{K-1, 1-(1-level)/2} * se (Student t with K-1
  degrees of freedom; K >= 2 needed).

**Per-customer samples** (a simulator that records them, e.g. the waiting and sojourn
times of :mod:`~qderive.numeric.simulation.vacation`; :class:`SampleRequest`): each run
gives the values of the customers it served after the warm-up, in service order. Per run:
the number n of them, the count of values > t (each requested t), the empirical
q-quantile (the smallest value x with F_n(x) >= q: the ceil(q n)-th smallest) and the power
sums sum x^k. These are accumulated like the other totals, so the tail P(X > t) = count / n
and the moment E X^k = power sum / n are ratio estimators over the runs, and the quantile
is the mean of the K per-run empirical quantiles; all get the jackknife error and the
Student-t interval above (since every run measures the same n customers, these are the
plain mean over the runs and s/sqrt(K)). The per-run quantile is biased by O(1/n), far
inside the interval for runs of thousands of customers.

A measure whose denominator is zero in the totals (no control cycle completed,
no arrival observed) has estimate ``None``; one that is undefined when a run is
left out has interval ``None``; a measure that is the same in every run (a loss
never observed) gets a zero-width interval and a note that says so. Nothing is
silently NaN.
"""

from __future__ import annotations

import math
import operator
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from numbers import Number

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.errors import ParameterError
from ..engines.progress import Progress

__all__ = [
    "Estimate",
    "SimulationResult",
    "KernelSpec",
    "SampleRequest",
    "MAX_MOMENTS",
    "run_replications",
    "replication_estimates",
    "estimate_notes",
    "student_t_quantile",
    "sampler",
    "value_stream",
]

_ANY = (-math.inf, math.inf)
_UNIT = (0.0, 1.0)
_NONNEGATIVE = (0.0, math.inf)


def measure_bounds(model: str) -> dict[str, tuple[float, float]]:
    """The range of each measure of the registered model ``model``, from the kinds its result record declares:
    a probability lies in [0, 1]; a time, a count or a rate in [0, inf); anything else is unbounded."""
    from ...symbolic.models.base import MeasureKind, registered_models

    cls = registered_models().get(model)
    if cls is None:
        return {}
    ranges = {MeasureKind.PROBABILITY: _UNIT, MeasureKind.TIME: _NONNEGATIVE, MeasureKind.COUNT: _NONNEGATIVE,
              MeasureKind.RATE: _NONNEGATIVE}
    return {f.name: ranges[m.kind] for f, m in cls.measures.measure_fields() if m.kind in ranges}


#: customers served between two progress-bar updates
_CHUNK = 50_000


@lru_cache(maxsize=256)
def student_t_quantile(p: float, dof: int) -> float:
    """The p-quantile of Student's t with ``dof`` degrees of freedom (scipy.stats.t.ppf).

    >>> round(student_t_quantile(0.975, 9), 6)
    2.262157
    >>> round(student_t_quantile(0.975, 299), 6)
    1.96793
    """
    if not (0.5 < p < 1) or dof < 1:
        raise ParameterError(f"t quantile: need 1/2 < p < 1 and dof >= 1, got p={p}, dof={dof}")
    from scipy.stats import t

    return float(t.ppf(p, dof))


@dataclass(frozen=True)
class Estimate:
    """A simulated measure: point estimate, jackknife standard error over the runs, dof = K - 1.

    ``value`` is None when the measure is undefined in the totals; ``std_error`` is
    None when no interval can be formed (one run, or undefined with a run left out).
    """

    value: float | None
    std_error: float | None
    dof: int
    #: the measure's range (a probability's [0, 1], a time's [0, inf)): the interval never leaves it
    bounds: tuple[float, float] = (-math.inf, math.inf)

    def half_width(self, level: float = 0.95) -> float | None:
        """t_{dof, (1+level)/2} * std_error: the half width of the symmetric interval, before it is cut to the
        measure's range (None where no interval can be formed)."""
        if self.value is None or self.std_error is None or self.dof < 1:
            return None
        return student_t_quantile((1 + level) / 2, self.dof) * self.std_error

    def interval(self, level: float = 0.95) -> tuple[float, float] | None:
        """Two-sided Student-t interval value +- t_{dof, (1+level)/2} * std_error, cut to the measure's range
        (the true value lies in the range, so cutting loses no coverage)."""
        half = self.half_width(level)
        if half is None:
            return None
        lo, hi = self.bounds
        return (max(self.value - half, lo), min(self.value + half, hi))

    def as_dict(self) -> dict:
        """``{"estimate": x, "ci95": [lo, hi]}`` (None where undefined) for the JSON output."""
        ci = self.interval(0.95)
        return {"estimate": self.value, "ci95": None if ci is None else [ci[0], ci[1]]}


@dataclass(frozen=True)
class SimulationResult:
    """Estimates of one simulated model.

    ``customers`` is the number served per replication (warm-up included),
    ``warmup_customers`` the discarded ones per replication, ``seed`` the entropy of
    the seed sequence (re-running with it reproduces every number).
    """

    model: str
    measures: dict[str, Estimate]
    customers: int
    warmup_customers: int
    replications: int
    seed: int
    seconds: float
    notes: tuple[str, ...] = ()
    #: estimates from per-customer samples (:class:`SampleRequest`): ``wait_tail`` -> {t: Estimate},
    #: ``wait_quantile`` -> {q: Estimate}, ``wait_moments`` -> [E W, E W^2, ...]; only those requested
    sample_measures: dict[str, dict | list] = field(default_factory=dict)

    def as_dict(self) -> dict[str, dict]:
        """``{measure: {"estimate": x, "ci95": [lo, hi]}}``: the contract of ``qderive simulate --json``.

        A sample measure nests the same pair: ``{"wait_tail": {t: {...}}, "wait_moments": [{...}, ...]}``
        (the t and q keys as they were given).
        """
        out = {name: est.as_dict() for name, est in self.measures.items()}
        for name, group in self.sample_measures.items():
            if isinstance(group, dict):
                out[name] = {key: est.as_dict() for key, est in group.items()}
            else:
                out[name] = [est.as_dict() for est in group]
        return out

    def summary(self) -> dict:
        """The measures plus the run's description (model, seed, sizes, time, notes)."""
        return {
            "model": self.model,
            "method": "independent replications, jackknife standard errors, Student-t 95% intervals",
            "customers_per_replication": self.customers,
            "warmup_customers_per_replication": self.warmup_customers,
            "replications": self.replications,
            "seed": self.seed,
            "seconds": self.seconds,
            "measures": self.as_dict(),
            "notes": list(self.notes),
        }

    def __getitem__(self, name: str):
        """The :class:`Estimate` of a measure, or the dict / list of estimates of a sample measure."""
        if name in self.measures:
            return self.measures[name]
        return self.sample_measures[name]


#: a measure: f(totals) with totals[name] an array (the totals, then the K leave-one-out totals)
MeasureFn = Callable[[Mapping[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class KernelSpec:
    """How the driver reads one model's event loop.

    ``start(rng)`` returns a primed-on-first-``next`` generator; ``send(target)`` runs the
    loop until ``target`` customers have been served in total and returns the tuple of
    cumulative accumulators named by ``accumulators``. ``measures`` maps the JSON measure
    key to a function of the accumulator totals; ``undefined_notes`` explains a measure
    that can come out undefined.

    A loop that can record per-customer samples names them in ``samples`` (e.g. ``("wait",
    "sojourn")``) and provides ``start_recording(rng)``: the same loop, drawing the same random
    numbers, that in addition answers ``send(None)`` by finishing with (``StopIteration.value``)
    ``{sample name: float64 array}``, the values of every customer served, in service order.
    """

    model: str
    accumulators: tuple[str, ...]
    start: Callable[[np.random.Generator], Generator]
    measures: dict[str, MeasureFn]
    undefined_notes: dict[str, str] = field(default_factory=dict)
    samples: tuple[str, ...] = ()
    start_recording: Callable[[np.random.Generator], Generator] | None = None


#: the highest moment E X^k a sample request may ask for (as the analytic response-time measures)
MAX_MOMENTS = 8
#: above this many tail points, the tail counts come from one sort and a binary search
_SORT_TAILS = 8


def _single_or_many(values) -> tuple:
    if isinstance(values, (str, bytes, Number, Fraction)):
        return (values,)
    if not isinstance(values, Iterable):
        raise TypeError
    return tuple(values)


def _points(values, option: str, what: str, check: Callable[[float], bool], rule: str) -> tuple:
    """((key as given, float value), ...) of a tail or quantile option, each checked; a repeated key is refused."""
    from ...symbolic.numbers import exact, is_symbolic

    try:
        given = _single_or_many(values)
    except TypeError:
        raise ParameterError(option, f"must be a sequence of {what}s", type(values).__name__) from None
    out = {}
    for key in given:
        try:
            hash(key)
        except TypeError:
            raise ParameterError(option, f"each {what} must be a number or a decimal string",
                                 type(key).__name__) from None
        number = exact(key, option)
        if is_symbolic(number):
            raise ParameterError(option, f"each {what} must be a number, not a symbol", key)
        try:
            x = float(number)
        except OverflowError:
            x = math.inf
        if not (math.isfinite(x) and check(number)):
            raise ParameterError(option, rule, key)
        if key in out:
            raise ParameterError(option, f"repeats the {what}", key)
        out[key] = x
    return tuple(out.items())


@dataclass(frozen=True)
class SampleRequest:
    """What to estimate from one per-customer sample X (the waits W, the sojourns T, ...).

    ``tail``: ((key, t), ...) for P(X > t); ``quantile``: ((key, q), ...) for the q-quantile;
    ``moments``: K for E X^k, k = 1..K. Build it with :meth:`parse`, which checks the values
    and names the option (``wait_tail``, ...) in its errors. The estimators are in the
    module docstring.

    >>> r = SampleRequest.parse("wait", tail=("0.5", 1), quantile=(0.9,), moments=2)
    >>> r.tail, r.quantile, r.moments
    ((('0.5', 0.5), (1, 1.0)), ((0.9, 0.9),), 2)
    >>> SampleRequest.parse("wait", quantile=(1,))
    Traceback (most recent call last):
    ...
    qderive.symbolic.errors.ParameterError: wait_quantile = 1: each q must lie in 0 < q < 1
    """

    name: str
    tail: tuple[tuple[object, float], ...] = ()
    quantile: tuple[tuple[object, float], ...] = ()
    moments: int = 0

    @classmethod
    def parse(cls, name: str, tail=(), quantile=(), moments=0) -> SampleRequest:
        """The request for sample ``name`` from the options ``{name}_tail``, ``{name}_quantile``, ``{name}_moments``."""
        tails = _points(tail, f"{name}_tail", "time t", lambda t: t >= 0, "each t must be a finite number >= 0")
        quantiles = _points(quantile, f"{name}_quantile", "probability q", lambda q: 0 < q < 1,
                            "each q must lie in 0 < q < 1")
        option = f"{name}_moments"
        try:
            if isinstance(moments, bool):
                raise TypeError
            k = operator.index(moments)
        except TypeError:
            raise ParameterError(option, f"must be an integer from 0 to {MAX_MOMENTS} (the moments k = 1..K)",
                                 moments) from None
        if not 0 <= k <= MAX_MOMENTS:
            raise ParameterError(option, f"must be an integer from 0 to {MAX_MOMENTS} (the moments k = 1..K)", k)
        return cls(name, tails, quantiles, k)

    def __bool__(self) -> bool:
        return bool(self.tail or self.quantile or self.moments)

    @property
    def width(self) -> int:
        """Length of the per-run statistics row: n, the tail counts, the quantiles, the power sums."""
        return 1 + len(self.tail) + len(self.quantile) + self.moments

    def statistics(self, x: np.ndarray) -> np.ndarray:
        """One run's row: [n, #(x > t) per t, empirical q-quantile per q, sum x^k for k = 1..K]."""
        x = np.asarray(x, dtype=np.float64)
        n = len(x)
        row = np.empty(self.width)
        row[0] = n
        i = 1
        ts = np.array([t for _, t in self.tail])
        if len(ts) > _SORT_TAILS:
            ordered = np.sort(x)
            row[i:i + len(ts)] = n - np.searchsorted(ordered, ts, side="right")
        else:
            for j, t in enumerate(ts):
                row[i + j] = np.count_nonzero(x > t)
        i += len(ts)
        if self.quantile:
            # the ceil(q n)-th smallest value (the inverse of the empirical distribution function)
            ranks = [max(math.ceil(q * n), 1) - 1 for _, q in self.quantile]
            part = np.partition(x, sorted(set(ranks)))
            row[i:i + len(ranks)] = part[ranks]
            i += len(ranks)
        if self.moments:
            power = x.copy()
            for k in range(self.moments):
                if k:
                    power *= x
                row[i + k] = float(np.sum(power))
        return row

    def estimates(self, rows: np.ndarray, dof: int) -> dict[str, dict | list]:
        """``{name_tail: {t: Estimate}, name_quantile: {q: ...}, name_moments: [...]}`` from the K runs' rows."""
        runs = rows.shape[0]
        total = rows.sum(axis=0)
        stacked = np.vstack([total, total - rows])  # totals, then leave-one-out totals
        counted = np.concatenate([[runs], np.full(runs, runs - 1)])
        out = {}
        i = 1
        if self.tail:
            out[f"{self.name}_tail"] = {key: _evaluate(lambda a, c=i + j: a[:, c] / a[:, 0], stacked, dof, _UNIT)
                                        for j, (key, _) in enumerate(self.tail)}
            i += len(self.tail)
        if self.quantile:
            out[f"{self.name}_quantile"] = {key: _evaluate(lambda a, c=i + j: a[:, c] / counted, stacked, dof,
                                                           _NONNEGATIVE)
                                            for j, (key, _) in enumerate(self.quantile)}
            i += len(self.quantile)
        if self.moments:
            out[f"{self.name}_moments"] = [_evaluate(lambda a, c=i + k: a[:, c] / a[:, 0], stacked, dof, _NONNEGATIVE)
                                           for k in range(self.moments)]
        return out


def _count(value, name: str) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise ParameterError(f"{name} = {value!r}: must be an integer >= 1") from None
    if n < 1:
        raise ParameterError(f"{name} = {value!r}: must be an integer >= 1")
    return n


def _validate_run(customers, replications, warmup) -> tuple[int, int, int]:
    """(customers, replications, warm-up customers) after checking them."""
    customers = _count(customers, "customers")
    replications = _count(replications, "replications")
    try:
        fraction = float(warmup)
    except (TypeError, ValueError):
        raise ParameterError(f"warmup = {warmup!r}: must be a fraction in [0, 1)") from None
    if not (0 <= fraction < 1):
        raise ParameterError(f"warmup = {warmup}: must be a fraction in [0, 1)")
    _limits.check("customers", customers * replications, "customers x replications of one simulation")
    n_warm = int(round(fraction * customers))
    if n_warm >= customers:
        raise ParameterError(f"warmup = {warmup}: leaves no customer to measure out of {customers}")
    return customers, replications, n_warm


def _evaluate(fn: MeasureFn, totals: Mapping[str, np.ndarray], dof: int,
              bounds: tuple[float, float] = (-math.inf, math.inf)) -> Estimate:
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(fn(totals), dtype=np.float64)
    full = values[0]
    if not np.isfinite(full):
        return Estimate(None, None, dof, bounds)
    loo = values[1:]
    if dof < 1 or not np.all(np.isfinite(loo)):
        return Estimate(float(full), None, dof, bounds)
    k = len(loo)
    se = math.sqrt((k - 1) / k * float(np.sum((loo - loo.mean()) ** 2)))
    return Estimate(float(full), se, dof, bounds)


def replication_estimates(rows: np.ndarray, accumulators: Iterable[str],
                          measures: Mapping[str, MeasureFn],
                          bounds: Mapping[str, tuple[float, float]] | None = None) -> dict[str, Estimate]:
    """Each measure f(totals) with its jackknife error from the K runs' accumulator rows (module docstring).

    ``rows[k]`` holds run k's accumulators, named by ``accumulators``; f is evaluated at the totals
    over the runs and at the K leave-one-out totals: se^2 = (K-1)/K sum_k (f_(k) - mean f_(.))^2,
    dof = K - 1.
    """
    rows = np.asarray(rows, dtype=np.float64)
    total = rows.sum(axis=0)
    stacked = np.vstack([total, total - rows])  # totals, then leave-one-out totals
    totals = {name: stacked[:, i] for i, name in enumerate(accumulators)}
    dof = rows.shape[0] - 1
    bounds = bounds or {}
    return {name: _evaluate(fn, totals, dof, bounds.get(name, _ANY)) for name, fn in measures.items()}


def estimate_notes(labelled: Mapping[str, tuple[Estimate, str, str]], replications: int) -> list[str]:
    """The notes on estimates without a proper interval: ``labelled[name] = (estimate, why it can be
    undefined, an example of a measure that is the same in every run)``."""
    notes = []
    for name, (est, undefined, constant) in labelled.items():
        if est.value is None:
            notes.append(f"{name}: undefined in this run; {undefined}")
        elif est.std_error is None and replications >= 2:
            notes.append(f"{name}: no interval, the measure is undefined when one replication is left out")
        elif est.std_error == 0 and replications >= 2:
            notes.append(
                f"{name}: the same in every replication (e.g. {constant}): "
                "its zero-width interval says nothing about its uncertainty; simulate longer"
            )
    return notes


def run_replications(
    spec: KernelSpec,
    customers: int,
    replications: int,
    seed: int | None,
    warmup: float,
    quiet: bool,
    notes: tuple[str, ...] = (),
    samples: Iterable[SampleRequest] = (),
) -> SimulationResult:
    """Run ``replications`` independent copies of ``spec``'s event loop and estimate its measures.

    See the module docstring for the method (warm-up, ratio estimators, jackknife,
    Student-t intervals). ``samples``: the per-customer samples to record and what to
    estimate from each (:class:`SampleRequest`, a sample named in ``spec.samples``); the
    loop then runs as ``spec.start_recording``, which draws the same random numbers, so
    every other measure is the same as without.
    """
    requests = tuple(r for r in samples if r)
    for r in requests:
        if r.name not in spec.samples or spec.start_recording is None:
            have = ", ".join(spec.samples) or "none"
            raise ParameterError(f"{r.name}: the {spec.model} simulator records no such per-customer sample "
                                 f"(it records: {have})")
    customers, replications, n_warm = _validate_run(customers, replications, warmup)
    if seed is not None:
        try:
            if isinstance(seed, bool) or operator.index(seed) < 0:
                raise TypeError
        except TypeError:
            raise ParameterError(f"seed = {seed!r}: must be an integer >= 0 (or None for fresh entropy)") from None
        seed = operator.index(seed)
    seq = np.random.SeedSequence(seed)
    children = seq.spawn(replications)
    rows = np.empty((replications, len(spec.accumulators)))
    sample_rows = {r.name: np.empty((replications, r.width)) for r in requests}
    start = spec.start_recording if requests else spec.start
    bar = Progress(customers * replications, "customers", quiet=quiet or None, desc=f"simulate {spec.model}")
    started = time.perf_counter()
    try:
        for k, child in enumerate(children):
            loop = start(np.random.default_rng(child))
            next(loop)
            first = np.asarray(loop.send(n_warm), dtype=np.float64)
            done = n_warm
            bar.advance(n_warm)
            while done < customers:
                step = min(customers, done + _CHUNK)
                last = loop.send(step)
                bar.advance(step - done)
                done = step
            if requests:
                recorded = _finish(loop)
                for r in requests:
                    sample_rows[r.name][k] = r.statistics(recorded[r.name][n_warm:customers])
            loop.close()
            rows[k] = np.asarray(last, dtype=np.float64) - first
    finally:
        bar.close()
    seconds = time.perf_counter() - started
    dof = replications - 1
    measures = replication_estimates(rows, spec.accumulators, spec.measures, measure_bounds(spec.model))
    sample_measures = {}
    for r in requests:
        sample_measures.update(r.estimates(sample_rows[r.name], dof))
    all_notes = list(notes)
    if replications < 2:
        all_notes.append("one replication: no confidence intervals (use replications >= 2)")
    labelled = {name: (est, spec.undefined_notes.get(name, "its denominator is zero"), "an event never observed")
                for name, est in measures.items()}
    for name, group in sample_measures.items():
        items = group.items() if isinstance(group, dict) else enumerate(group, start=1)
        labelled.update((f"{name}[{key}]", (est, "it is not finite (overflow)",
                                            "a tail never observed, a quantile at an atom of the law"))
                        for key, est in items)
    all_notes += estimate_notes(labelled, replications)
    return SimulationResult(
        model=spec.model,
        measures=measures,
        customers=int(customers),
        warmup_customers=n_warm,
        replications=int(replications),
        seed=int(seq.entropy),
        seconds=seconds,
        notes=tuple(all_notes),
        sample_measures=sample_measures,
    )


def _finish(loop: Generator) -> Mapping[str, np.ndarray]:
    """The samples a recording loop returns when sent None (:class:`KernelSpec`)."""
    try:
        loop.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("a recording event loop did not finish when sent None")


def sampler(law, what: str):
    """``draw(rng, n)`` for a time or batch law: the law's own :meth:`sample` (batch sizes as int64)."""
    from ...symbolic.batches.base import BatchLaw
    from ...symbolic.laws.base import is_concrete

    if not is_concrete(law):
        raise ParameterError(f"{what} {law}: the simulator needs a numeric law")
    if isinstance(law, BatchLaw):
        return lambda rng, n: np.asarray(law.sample(rng, n), dtype=np.int64)
    return lambda rng, n: np.asarray(law.sample(rng, n), dtype=np.float64)


#: variates drawn per refill of a stream
DEFAULT_BLOCK = 1 << 15


def value_stream(draw, rng: np.random.Generator, block: int = DEFAULT_BLOCK):
    """An endless iterator of Python numbers from ``draw``, refilled ``block`` at a time (C-level iteration)."""
    from itertools import chain, repeat

    return chain.from_iterable(draw(rng, block).tolist() for _ in repeat(None))


def records_samples(simulate) -> bool:
    """True when a model's ``simulate`` function records waits and sojourns (takes ``wait_tail=`` and the
    other sample measures of :class:`SampleRequest`)."""
    import inspect

    return "wait_tail" in inspect.signature(simulate).parameters
