"""The contract's hysteresis with exponential (phase-typed) services as a CTMC, and its tagged chain.

The chain of the engine's exponential control route (:class:`~.routes.ExponentialChain`; the module docstring of
:mod:`qderive.numeric.engines.sip`, *The server at a given copy rate*): states (n, normal), n = 0..H, and
(n, overload), n = L+1..H; an arrival finding N >= H switches to overload and is refused; a departure leaving L
returns to normal. Solved by the one GTH (:func:`qderive.numeric.kernels.chains.gth_stationary`); an admitted
copy's sojourn from the tagged chain (:mod:`qderive.numeric.engines.ctmc_wait`, uniformization tails).
"""

from __future__ import annotations

import numpy as np

from ...kernels.chains import gth_stationary
from ..ctmc_wait import TaggedChain, phase_type_laws

__all__ = ["control_chain", "tagged_chain", "stationary", "phase_type_laws_of"]


def control_chain(L: int, H: int, lam, rates, weights):
    """The states and moves (i, j, rate) of the contract's hysteresis with phase-typed exponential services
    (module docstring): states (0, -1, normal), (n, phase, normal) n = 1..H and (n, phase, overload)
    n = L+1..H; ``rates`` the service rate of each phase, ``weights`` the law of a starting copy's phase (the
    mixture of first copies, rate 1/E[B], and duplicates, rate 1/(c E[B]); one phase when c = 1)."""
    P = len(rates)
    states = [(0, -1, 0)] + [(n, j, 0) for n in range(1, H + 1) for j in range(P)] + [
        (n, j, 1) for n in range(L + 1, H + 1) for j in range(P)]
    index = {x: i for i, x in enumerate(states)}
    moves = []
    for (n, j, s) in states:
        i = index[(n, j, s)]
        if s == 0 and n == 0:
            moves += [(i, index[(1, k, 0)], lam * w) for k, w in enumerate(weights)]
        elif s == 0:  # an arrival finding N >= H switches to overload (and is refused)
            moves.append((i, index[(n + 1, j, 0)] if n < H else index[(H, j, 1)], lam))
        if n >= 1:
            after = 0 if s == 0 or n - 1 == L else 1  # a departure leaving L returns to normal
            if n == 1:
                moves.append((i, 0, rates[j]))
            else:
                moves += [(i, index[(n - 1, k, after)], rates[j] * w) for k, w in enumerate(weights)]
    return states, moves


def tagged_chain(states, H, rates, weights, first_rate, pi_of):
    """The sojourn chain of an admitted *first* copy (position p = copies ahead; the phase of the copy in
    service; its own service at ``first_rate``): entry (n, phase) with weight pi(n, phase, normal), n < H."""
    P = len(rates)
    tag = [(0, -1)] + [(p, j) for p in range(1, H) for j in range(P)]
    where = {x: i for i, x in enumerate(tag)}
    values, rows, cols, kinds, totals = [], [], [], [], []

    def kind(r):
        if r not in values:
            values.append(r)
        return values.index(r)

    for (p, j) in tag:
        i = where[(p, j)]
        if p == 0:
            rows.append(i), cols.append(-1), kinds.append(kind(first_rate))
            totals.append(first_rate)
            continue
        targets = [(0, -1, 1)] if p == 1 else [(p - 1, k, w) for k, w in enumerate(weights)]
        for q, k, w in targets:
            rows.append(i), cols.append(where[(q, k)]), kinds.append(kind(rates[j] * w))
        totals.append(rates[j])
    entries = [(where[(n, j)], si) for si, (n, j, s) in enumerate(states) if s == 0 and n < H]

    def entry(ctx):
        pi = pi_of(ctx)
        w = ctx.zeros(len(tag))
        for ti, si in entries:
            w[ti] = pi[si]
        total = float(np.sum(w)) if ctx.is_float64 else ctx.fsum(w.tolist())
        return w / total

    levels = np.array([p for p, _ in tag], dtype=np.int64)
    return TaggedChain(levels, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
                       np.array(kinds, dtype=np.int64), tuple(values), tuple(totals), entry, len(states))


def stationary(size, moves, ctx):
    """pi of the chain (i, j, rate) by the one GTH, which scales pi by the first state (the empty one). Far above
    capacity pi(n) grows like (lambda E[B])^n and the ratios overflow float64 (H = 500, lambda E[B] = 6.3): then the
    states are taken in reverse order (scaled by a full state; the tiny ratios of the nearly empty states may
    underflow, harmlessly). The order below capacity is unchanged (the same float64 numbers as before)."""
    A = ctx.zeros((size, size))
    for i, j, r in moves:
        A[i, j] = A[i, j] + ctx.num(r)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            pi = gth_stationary(ctx, A)
        if not ctx.is_float64 or np.all(np.isfinite(pi)):
            return pi
    except OverflowError:
        pass
    order = np.arange(size)[::-1]
    pi = ctx.zeros(size)
    pi[order] = gth_stationary(ctx, A[np.ix_(order, order)])
    return pi


def phase_type_laws_of(chain):
    """The sojourn law of a tagged chain (:func:`qderive.numeric.engines.ctmc_wait.phase_type_laws`)."""
    return phase_type_laws(chain)["sojourn"]
