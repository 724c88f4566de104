"""Independent oracle for the finite vacation queue: the CTMC built from the model's definition.

With phase-type service and vacation times (exponential, Erlang) the M[X]/PH/1/r queue
with multiple PH vacations is a continuous-time Markov chain on (activity, phase, number
waiting). This module builds that chain directly from the model definition
(``spec/chapter2.md`` section 0 and issue 3's variants) -- never from the thesis's
formulas -- and solves it with GTH (``qderive.numeric.chains``) at any precision, or
exactly with SymPy for small chains:

* a batch of k arriving when j wait: partial admission -> min(j + k, r) wait; whole
  admission -> j + k if j + k <= r, else the batch is lost; an idle server (no
  vacations) takes the first customer into service, the rest wait (r + 1 places);
* a service completion with j >= 1 waiting starts the next service (j - 1 wait); with
  j = 0 it starts a vacation (or leaves the server idle without vacations);
* a vacation end with j >= 1 waiting starts a service; with j = 0 another vacation.

Measures come from flows of the chain: the embedded law from the rates of service
completions and vacation ends by the number waiting, the loss from the rate of lost
customers, the throughput from the rate of service completions.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from qderive.numeric.backend import Backend
from qderive.numeric.chains import stationary_gth
from qderive.numeric.vacation import Admission
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError

__all__ = ["OracleResult", "phase_ctmc", "oracle_measures", "oracle_exact"]


def _phases(law) -> tuple[int, sp.Expr]:
    """(number of phases, rate of each phase) of an exponential or Erlang law."""
    if isinstance(law, T.Exponential):
        return 1, 1 / law.mean
    if isinstance(law, T.Erlang):
        return law.k, law.k / law.mean
    raise ParameterError(f"the CTMC oracle needs exponential or Erlang laws, got {law!r}")


def _excess(batch, m: int) -> sp.Expr:
    """E (X - m)^+ exactly (m >= 0): l_1 - sum_{i<m} P(X > i)."""
    return batch.mean - sp.Add(*[batch.tail(i) for i in range(m)])


def _lost_if_whole(batch, m: int) -> sp.Expr:
    """E (X; X > m) exactly: the customers of a batch that does not fit in m places."""
    return batch.mean - sp.Add(*[i * batch.pmf(i) for i in range(1, m + 1)])


@dataclass(frozen=True)
class _Chain:
    states: list
    rates: list  # dense generator entries (exact), off-diagonal
    lost: list  # expected customers lost per batch arrival in each state (exact)
    blocked: list  # probability an arriving batch is lost entirely
    model: object


def phase_ctmc(model) -> _Chain:
    """The CTMC of ``model`` (a :class:`qderive.numeric.vacation.VacationQueue`) with exact rates."""
    r, lam, batch = model.capacity, model.lam, model.batch
    whole = model.admission is Admission.WHOLE
    ks, mu = _phases(model.service)
    kv, nu = _phases(model.vacation) if model.vacation is not None else (0, None)
    states = [("S", ph, j) for j in range(r + 1) for ph in range(ks)]
    states += [("V", ph, j) for j in range(r + 1) for ph in range(kv)]
    if model.vacation is None:
        states.append(("I", 0, 0))
    index = {s: n for n, s in enumerate(states)}
    size = len(states)
    Q = [[sp.Integer(0)] * size for _ in range(size)]
    lost = [sp.Integer(0)] * size
    blocked = [sp.Integer(0)] * size

    def add(a, b, rate):
        if a != b and rate != 0:
            Q[index[a]][index[b]] += rate

    for s in states:
        act, ph, j = s
        room = r + 1 if act == "I" else r - j  # places an arriving batch may fill
        # arrivals of batches of size k = 1..room (the rest: partial -> fills up, whole -> lost)
        for k in range(1, room + 1):
            target = ("S", 0, k - 1) if act == "I" else (act, ph, j + k)
            add(s, target, lam * batch.pmf(k))
        over = batch.tail(room)  # P(X > room)
        if whole:
            lost[index[s]] = _lost_if_whole(batch, room)
            blocked[index[s]] = over
        else:
            full = ("S", 0, r) if act == "I" else (act, ph, r)
            add(s, full, lam * over)
            lost[index[s]] = _excess(batch, room)
            blocked[index[s]] = sp.Integer(1) if room == 0 else sp.Integer(0)
        # phase progress and completions
        if act == "S":
            if ph < ks - 1:
                add(s, ("S", ph + 1, j), mu)
            elif j >= 1:
                add(s, ("S", 0, j - 1), mu)
            else:
                add(s, ("V", 0, 0) if model.vacation is not None else ("I", 0, 0), mu)
        elif act == "V":
            if ph < kv - 1:
                add(s, ("V", ph + 1, j), nu)
            elif j >= 1:
                add(s, ("S", 0, j - 1), nu)
            else:
                add(s, ("V", 0, 0), nu)
    return _Chain(states, Q, lost, blocked, model)


@dataclass(frozen=True)
class OracleResult:
    """Measures of the CTMC: ``p`` queue-length law, ``q`` embedded law, ``idle`` (not serving),
    ``loss`` (lost-customer flow / offered flow), ``loss_from_throughput`` (1 - throughput/(lambda l1)),
    ``blocking`` (batches lost entirely), ``throughput``, ``mean_queue``."""

    p: list
    q: list
    idle: object
    loss: object
    loss_from_throughput: object
    blocking: object
    throughput: object
    mean_queue: object


def _measures(chain: _Chain, pi, one, num) -> OracleResult:
    m = chain.model
    r = m.capacity
    ks, mu = _phases(m.service)
    kv, nu = _phases(m.vacation) if m.vacation is not None else (0, None)
    p = [sum((pi[n] for n, s in enumerate(chain.states) if s[2] == j), 0 * one) for j in range(r + 1)]
    idle = sum((pi[n] for n, s in enumerate(chain.states) if s[0] != "S"), 0 * one)
    # embedded epochs: service completions (and vacation ends), by the number waiting then
    flow = []
    for j in range(r + 1):
        f = pi[chain.states.index(("S", ks - 1, j))] * num(mu)
        if m.vacation is not None:
            f = f + pi[chain.states.index(("V", kv - 1, j))] * num(nu)
        flow.append(f)
    total = sum(flow, 0 * one)
    q = [f / total for f in flow]
    lam, l1 = num(m.lam), num(m.batch.mean)
    lost = sum((pi[n] * num(chain.lost[n]) for n in range(len(pi))), 0 * one) * lam
    throughput = sum((pi[chain.states.index(("S", ks - 1, j))] for j in range(r + 1)), 0 * one) * num(mu)
    blocking = sum((pi[n] * num(chain.blocked[n]) for n in range(len(pi))), 0 * one)
    mean_queue = sum((j * p[j] for j in range(r + 1)), 0 * one)
    return OracleResult(p, q, idle, lost / (lam * l1), 1 - throughput / (lam * l1), blocking, throughput, mean_queue)


def oracle_measures(model, bk: Backend) -> OracleResult:
    """Solve the CTMC of ``model`` with GTH in backend ``bk`` (call with any precision)."""
    chain = phase_ctmc(model)
    with bk:
        pi = stationary_gth(chain.rates, bk)
        return _measures(chain, list(pi), bk.num(1), bk.num)


def oracle_exact(model) -> OracleResult:
    """Solve the CTMC of ``model`` exactly (SymPy rationals; keep the chain small)."""
    chain = phase_ctmc(model)
    n = len(chain.states)
    Q = sp.Matrix(chain.rates)
    for i in range(n):
        Q[i, i] = -sum(Q[i, :])
    # pi Q = 0 with sum pi = 1: replace one balance equation by the normalisation
    A = Q.T
    A[0, :] = sp.ones(1, n)
    rhs = sp.zeros(n, 1)
    rhs[0] = 1
    pi = list(A.LUsolve(rhs))
    pi = [x if x.is_Rational else sp.cancel(x) for x in pi]
    return _measures(chain, pi, sp.Integer(1), lambda v: v)
