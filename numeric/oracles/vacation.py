"""Oracle of the vacation queues: the CTMC built from the model definition (phase-type laws).

With phase-type service and vacation times (exponential, Erlang, hyperexponential, Coxian,
PH) M[X]/PH/1/r with PH vacations is a CTMC on (activity, phase, number waiting), built
here from the definition of ``docs/theory/chapter2.md`` section 0 and the variants of the model
(never from the thesis's formulas):

* a batch of k arriving when j wait: partial admission -> min(j + k, r) wait; whole
  admission -> j + k if j + k <= r, else the batch is lost; an idle server takes the first
  customer of the batch into service (r + 1 places);
* a service completion with j >= 1 waiting starts the next service; with j = 0 the server
  starts a vacation (multiple and single vacations) or idles (no vacations);
* a vacation end with j >= 1 waiting starts a service; with j = 0 another vacation starts
  (multiple) or the server idles until the next batch (single).

An infinite waiting room is a capacity far beyond the mass of the law (the caller checks
the truncation with :attr:`VacationOracle.truncation`). Measures come from the chain's
stationary law and flows: the embedded law from the rates of service completions and of
vacation ends (those that leave customers waiting, and, with multiple vacations, those that
start another vacation), the loss from the rate of lost customers, the throughput from the
rate of service completions. Solved exactly (rational GTH) or at any precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ...symbolic.errors import ParameterError
from ...symbolic.models.vacation import Admission
from .ctmc import CTMC, build

__all__ = ["VacationOracle", "vacation_ctmc", "solve"]


def _ph(law, what):
    form = law.phase_type()
    if form is None:
        raise ParameterError(f"the CTMC oracle needs phase-type laws: {what} = {law} is not phase-type")
    alpha, T = form
    exits = [-sum(row) for row in T]
    return [Fraction(a) for a in alpha], [[Fraction(v) for v in row] for row in T], [Fraction(v) for v in exits]


def vacation_ctmc(model, capacity: int | None = None):
    """(CTMC, description) of ``model`` (a VacationQueue or FiniteVacationQueue) with ``capacity`` places.

    States: ("S", phase, j) service, ("V", phase, j) vacation, ("I", 0, 0) idle server.
    """
    r = capacity if capacity is not None else model.capacity
    whole = getattr(model, "admission", Admission.PARTIAL) is Admission.WHOLE
    policy = "none" if model.vacation is None else model.vacation_policy.value
    ab, Tb, tb = _ph(model.service, "service")
    av, Tv, tv = _ph(model.vacation, "vacation") if model.vacation is not None else ([], [], [])
    lam, batch = model.rate, model.batch
    top = batch.max_size if batch.max_size is not None else r + 2
    pmf = {k: Fraction(batch.pmf(k)) for k in range(1, min(top, r + 2) + 1)}

    def tail(m):  # P(X > m), exact
        return Fraction(batch.tail(m))

    def start(kind, alpha, j, rate):
        for ph, a in enumerate(alpha):
            if a:
                yield (kind, ph, j), rate * a

    def empty_after_service(rate):
        if policy == "none":
            yield ("I", 0, 0), rate
        else:
            yield from start("V", av, 0, rate)

    def moves(state):
        act, ph, j = state
        room = r + 1 if act == "I" else r - j
        # arrivals
        for k in range(1, room + 1):
            p = pmf.get(k, Fraction(0))
            if p:
                if act == "I":
                    yield from start("S", ab, k - 1, lam * p)
                else:
                    yield (act, ph, j + k), lam * p
        over = tail(room)
        if over and not whole:
            if act == "I":
                yield from start("S", ab, r, lam * over)
            else:
                yield (act, ph, r), lam * over
        # phases and completions
        if act == "S":
            for q, rate in enumerate(Tb[ph]):
                if q != ph and rate:
                    yield ("S", q, j), rate
            if tb[ph]:
                if j >= 1:
                    yield from start("S", ab, j - 1, tb[ph])
                else:
                    yield from empty_after_service(tb[ph])
        elif act == "V":
            for q, rate in enumerate(Tv[ph]):
                if q != ph and rate:
                    yield ("V", q, j), rate
            if tv[ph]:
                if j >= 1:
                    yield from start("S", ab, j - 1, tv[ph])
                elif policy == "multiple":
                    yield from start("V", av, 0, tv[ph])
                else:
                    yield ("I", 0, 0), tv[ph]

    initial = ("I", 0, 0) if policy == "none" else ("V", 0, 0) if av and av[0] else ("V", av.index(next(a for a in av if a)), 0)
    chain = build(initial, moves)
    info = {"r": r, "whole": whole, "policy": policy, "tb": tb, "tv": tv, "lam": lam, "batch": batch, "pmf": pmf,
            "tail": tail}
    return chain, info


@dataclass(frozen=True)
class VacationOracle:
    """Measures of the CTMC: ``p`` queue-length law, ``q`` embedded law, ``idle`` (not serving),
    ``loss`` (lost-customer flow / offered flow), ``loss_from_throughput`` (1 - throughput / (lambda l1)),
    ``blocking`` (batches that lose every customer), ``throughput``, ``mean_queue``, ``variance`` of
    the queue length, ``truncation`` = p_r (for an infinite room: the mass at the cut),
    ``epoch_rate`` embedded epochs per unit time (1 / the mean time between epochs, C of (4))."""

    p: list
    q: list
    idle: object
    loss: object
    loss_from_throughput: object
    blocking: object
    throughput: object
    mean_queue: object
    variance: object
    truncation: object
    epoch_rate: object


def solve(model, ctx=None, capacity: int | None = None) -> VacationOracle:
    """Solve the oracle chain exactly (``ctx`` None: rationals) or in ``ctx`` (call with any precision)."""
    chain, info = vacation_ctmc(model, capacity)
    if ctx is None:
        pi = chain.stationary_exact()
        one, num = Fraction(1), (lambda v: v)
        return _measures(chain, info, pi, one, num)
    with ctx:
        pi = list(chain.stationary(ctx))
        return _measures(chain, info, pi, ctx.num(1), ctx.num)


def _measures(chain: CTMC, info, pi, one, num) -> VacationOracle:
    r, whole, lam, batch = info["r"], info["whole"], num(info["lam"]), info["batch"]
    zero = 0 * one
    p = [zero] * (r + 1)
    flow = [zero] * (r + 1)
    idle = zero
    throughput = zero
    lost = zero
    blocked = zero
    tail, pmf = info["tail"], info["pmf"]
    l1 = num(batch.mean)
    for k, (act, ph, j) in enumerate(chain.states):
        x = pi[k]
        p[j] = p[j] + x
        if act != "S":
            idle = idle + x
        if act == "S":
            rate = num(info["tb"][ph])
            throughput = throughput + x * rate
            flow[j] = flow[j] + x * rate
        elif act == "V":
            rate = num(info["tv"][ph])
            if j >= 1 or info["policy"] == "multiple":
                flow[j] = flow[j] + x * rate
        room = r + 1 if act == "I" else r - j
        # expected customers lost per batch arriving in this state, and P(the batch loses all)
        if whole:
            per = batch.mean - sum((i * pmf.get(i, 0) for i in range(1, room + 1)), Fraction(0))  # E(X; X > room)
            allp = tail(room)
        else:
            per = batch.excess(room)  # E (X - room)^+
            allp = Fraction(1) if room == 0 else Fraction(0)
        lost = lost + x * num(per)
        blocked = blocked + x * num(allp)
    total = sum(flow, zero)
    q = [f / total for f in flow]
    mean = sum((j * p[j] for j in range(r + 1)), zero)
    second = sum((j * j * p[j] for j in range(r + 1)), zero)
    offered = lam * l1
    return VacationOracle(p, q, idle, lost * lam / offered, 1 - throughput / offered, blocked, throughput, mean,
                          second - mean * mean, p[r], total)
