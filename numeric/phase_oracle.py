"""Independent oracle: the vacation queue with phase-type laws as a plain CTMC.

When the service and vacation times are phase-type (exponential, Erlang, integer
gamma, hyperexponential) the M[X]/PH/1 queue with multiple PH vacations is a
continuous-time Markov chain on (activity, phase, number waiting). This module
builds that chain *from the model definition* (``spec/chapter2.md`` section 0:
batch arrivals at rate lambda, a vacation follows an empty departure and repeats
while the queue is empty, the waiting room holds ``capacity`` customers with
partial batch acceptance) and solves it with GTH. It shares no code with the
closed forms or the embedded-chain recursions it is used to check. An infinite
waiting room is approximated by a capacity far beyond the mass of the law (the
caller chooses it so that the truncation is below the compared digits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError

from .backend import Backend
from .chains import stationary_gth

__all__ = ["phase_type", "PhaseQueueLaw", "phase_queue_distribution"]


def _exp(law):
    return [sp.Integer(1)], [[-1 / law.mean]], [1 / law.mean]


def _erlang(k, mean):
    rate = k / mean
    S = [[-rate if i == j else (rate if j == i + 1 else 0) for j in range(k)] for i in range(k)]
    exit_rates = [0] * (k - 1) + [rate]
    return [sp.Integer(1)] + [0] * (k - 1), S, exit_rates


def _gamma(law):
    if not law.shape.is_Integer:
        raise ParameterError(f"gamma shape {law.shape} is not an integer: not phase-type")
    return _erlang(int(law.shape), law.mean)


def _hyper(law):
    n = len(law.probs)
    rates = [1 / m for m in law.means]
    S = [[-rates[i] if i == j else 0 for j in range(n)] for i in range(n)]
    return list(law.probs), S, rates


#: phase-type representation (alpha, S, exit rates) keyed by the law's class
_PHASE = {
    T.Exponential: _exp,
    T.Erlang: lambda law: _erlang(law.k, law.mean),
    T.Gamma: _gamma,
    T.HyperExponential: _hyper,
}


def phase_type(law):
    """(alpha, S, s0): initial vector, sub-generator and exit-rate vector of a PH law."""
    try:
        return _PHASE[type(law)](law)
    except KeyError:
        raise ParameterError(f"{type(law).__name__} is not phase-type: no CTMC oracle") from None


@dataclass(frozen=True)
class PhaseQueueLaw:
    """Time-stationary results of the CTMC: queue-length pmf and the probability of vacation."""

    queue: np.ndarray  # P(number waiting = n), n = 0..capacity
    vacation: object  # P(server on vacation)


def phase_queue_distribution(lam, batch, service, vacation, capacity: int, bk: Backend) -> PhaseQueueLaw:
    """Solve the CTMC of the M[X]/PH/1/capacity queue with multiple PH vacations.

    States: ("V", i, n) vacation in phase i with n waiting; ("B", j, n) service in
    phase j with n waiting (0 <= n <= capacity). Arrivals: batch of size m at rate
    lam * l_m, admitted up to the capacity (the rest is lost). End of vacation: with
    n = 0 a new vacation starts, else a service starts and n decreases by one. End of
    service: with n >= 1 the next service starts (n - 1 waiting), else a vacation.
    """
    av, Sv, ev = phase_type(vacation)
    ab, Sb, eb = phase_type(service)
    kv, kb = len(av), len(ab)
    K = capacity
    index = {}
    for n in range(K + 1):
        for i in range(kv):
            index[("V", i, n)] = len(index)
        for j in range(kb):
            index[("B", j, n)] = len(index)
    size = len(index)
    Q = [[0] * size for _ in range(size)]

    def add(src, dst, rate):
        if rate != 0 and src != dst:
            Q[index[src]][index[dst]] += rate

    max_batch = batch.max_size if batch.max_size is not None else K
    lm = [batch.pmf(m) for m in range(max_batch + 1)]
    tails: dict[int, object] = {}

    def tail(i):
        if i not in tails:
            tails[i] = batch.tail(i)
        return tails[i]

    for (kind, ph, n), _ in list(index.items()):
        src = (kind, ph, n)
        # arrivals: a batch of m fills min(m, K - n) places
        for m in range(1, min(max_batch, K - n) + 1):
            if m < K - n:
                add(src, (kind, ph, n + m), lam * lm[m])
        if n < K:
            # every batch of size >= K - n fills the room
            add(src, (kind, ph, K), lam * tail(K - n - 1))
        if kind == "V":
            for j in range(kv):
                add(src, ("V", j, n), Sv[ph][j])
            if n == 0:
                for j in range(kv):
                    add(src, ("V", j, 0), ev[ph] * av[j])
            else:
                for j in range(kb):
                    add(src, ("B", j, n - 1), ev[ph] * ab[j])
        else:
            for j in range(kb):
                add(src, ("B", j, n), Sb[ph][j])
            if n >= 1:
                for j in range(kb):
                    add(src, ("B", j, n - 1), eb[ph] * ab[j])
            else:
                for j in range(kv):
                    add(src, ("V", j, 0), eb[ph] * av[j])
    pi = stationary_gth(Q, bk)
    queue = bk.zeros(K + 1)
    vac = bk.num(0)
    for (kind, ph, n), k in index.items():
        queue[n] = queue[n] + pi[k]
        if kind == "V":
            vac = vac + pi[k]
    return PhaseQueueLaw(queue, vac)
