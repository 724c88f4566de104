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

A measure whose denominator is zero in the totals (no control cycle completed,
no arrival observed) has estimate ``None``; one that is undefined when a run is
left out has interval ``None``; a measure that is the same in every run (a loss
never observed) gets a zero-width interval and a note that says so. Nothing is
silently NaN.
"""

from __future__ import annotations

import math
import operator
import sys
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from qderive.symbolic import limits as _limits
from qderive.symbolic.errors import ParameterError

__all__ = [
    "Estimate",
    "SimulationResult",
    "KernelSpec",
    "run_replications",
    "student_t_quantile",
    "PROGRESS_THRESHOLD",
    "sampler",
    "value_stream",
]

#: a run serving at least this many customers in total shows a progress bar (unless quiet)
PROGRESS_THRESHOLD = 200_000
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

    def interval(self, level: float = 0.95) -> tuple[float, float] | None:
        """Two-sided Student-t interval value +- t_{dof, (1+level)/2} * std_error."""
        if self.value is None or self.std_error is None or self.dof < 1:
            return None
        half = student_t_quantile((1 + level) / 2, self.dof) * self.std_error
        return (self.value - half, self.value + half)

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

    def as_dict(self) -> dict[str, dict]:
        """``{measure: {"estimate": x, "ci95": [lo, hi]}}``: the contract of ``qderive simulate --json``."""
        return {name: est.as_dict() for name, est in self.measures.items()}

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

    def __getitem__(self, name: str) -> Estimate:
        return self.measures[name]


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
    """

    model: str
    accumulators: tuple[str, ...]
    start: Callable[[np.random.Generator], Generator]
    measures: dict[str, MeasureFn]
    undefined_notes: dict[str, str] = field(default_factory=dict)


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


def _progress_bar(total: int, quiet: bool, label: str):
    if quiet or total < PROGRESS_THRESHOLD:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"simulate {label}", unit=" customers", unit_scale=True, file=sys.stderr, leave=False)


def _evaluate(fn: MeasureFn, totals: Mapping[str, np.ndarray], dof: int) -> Estimate:
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(fn(totals), dtype=np.float64)
    full = values[0]
    if not np.isfinite(full):
        return Estimate(None, None, dof)
    loo = values[1:]
    if dof < 1 or not np.all(np.isfinite(loo)):
        return Estimate(float(full), None, dof)
    k = len(loo)
    se = math.sqrt((k - 1) / k * float(np.sum((loo - loo.mean()) ** 2)))
    return Estimate(float(full), se, dof)


def run_replications(
    spec: KernelSpec,
    customers: int,
    replications: int,
    seed: int | None,
    warmup: float,
    quiet: bool,
    notes: tuple[str, ...] = (),
) -> SimulationResult:
    """Run ``replications`` independent copies of ``spec``'s event loop and estimate its measures.

    See the module docstring for the method (warm-up, ratio estimators, jackknife,
    Student-t intervals).
    """
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
    bar = _progress_bar(customers * replications, quiet, spec.model)
    started = time.perf_counter()
    try:
        for k, child in enumerate(children):
            loop = spec.start(np.random.default_rng(child))
            next(loop)
            first = np.asarray(loop.send(n_warm), dtype=np.float64)
            done = n_warm
            if bar is not None:
                bar.update(n_warm)
            while done < customers:
                step = min(customers, done + _CHUNK)
                last = loop.send(step)
                if bar is not None:
                    bar.update(step - done)
                done = step
            loop.close()
            rows[k] = np.asarray(last, dtype=np.float64) - first
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - started
    totals_row = rows.sum(axis=0)
    stacked = np.vstack([totals_row, totals_row - rows])  # totals, then leave-one-out totals
    totals = {name: stacked[:, i] for i, name in enumerate(spec.accumulators)}
    dof = replications - 1
    measures = {name: _evaluate(fn, totals, dof) for name, fn in spec.measures.items()}
    all_notes = list(notes)
    if replications < 2:
        all_notes.append("one replication: no confidence intervals (use replications >= 2)")
    for name, est in measures.items():
        if est.value is None:
            all_notes.append(
                f"{name}: undefined in this run; {spec.undefined_notes.get(name, 'its denominator is zero')}"
            )
        elif est.std_error is None and replications >= 2:
            all_notes.append(f"{name}: no interval, the measure is undefined when one replication is left out")
        elif est.std_error == 0 and replications >= 2:
            all_notes.append(
                f"{name}: the same in every replication (e.g. an event never observed): "
                "its zero-width interval says nothing about its uncertainty; simulate longer"
            )
    return SimulationResult(
        model=spec.model,
        measures=measures,
        customers=int(customers),
        warmup_customers=n_warm,
        replications=int(replications),
        seed=int(seq.entropy),
        seconds=seconds,
        notes=tuple(all_notes),
    )


def sampler(law, what: str):
    """``draw(rng, n)`` for a time or batch law: the law's own :meth:`sample` (batch sizes as int64)."""
    from qderive.symbolic.batches.base import BatchLaw
    from qderive.symbolic.laws.base import is_concrete

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
