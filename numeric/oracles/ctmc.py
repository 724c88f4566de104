"""The one CTMC builder of the oracles: states by search, exact rates, GTH at any precision.

>>> from fractions import Fraction as F
>>> # M/M/1/2: arrivals 1/2, services 1
>>> def moves(n):
...     if n < 2:
...         yield n + 1, F(1, 2)
...     if n > 0:
...         yield n - 1, F(1)
>>> chain = build(0, moves)
>>> [str(p) for p in chain.stationary_exact()]
['4/7', '2/7', '1/7']
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Hashable, Iterable

import numpy as np

from ...symbolic import limits as _limits
from ..backend import FractionContext
from ..kernels.chains import gth_stationary, hitting_costs

__all__ = ["CTMC", "build"]


@dataclass
class CTMC:
    """A finite CTMC: ``states`` in discovery order, ``index``, and ``rates[(i, j)]`` (exact, i != j)."""

    states: list
    index: dict
    rates: dict

    @property
    def size(self) -> int:
        return len(self.states)

    def matrix(self, ctx) -> np.ndarray:
        """The off-diagonal rates as a dense context matrix (only the nonzero entries are converted, each
        distinct rate once)."""
        n = self.size
        A = ctx.zeros((n, n))
        done: dict = {}
        for (i, j), r in self.rates.items():
            v = done.get(r)
            if v is None:
                v = done[r] = ctx.num(r)
            A[i, j] = v
        return A

    def stationary(self, ctx) -> np.ndarray:
        """Stationary law by GTH in ``ctx`` (call inside ``with ctx:``)."""
        return gth_stationary(ctx, self.matrix(ctx))

    def stationary_exact(self) -> list:
        """Stationary law exactly (GTH in rational arithmetic)."""
        ctx = FractionContext()
        return [Fraction(v) for v in gth_stationary(ctx, self.matrix(ctx))]

    def mean_reward_until(self, ctx, targets: Iterable[int], rewards) -> np.ndarray:
        """Mean accumulated reward until the chain enters ``targets`` (reward rates per state)."""
        targets = list(targets)
        A = self.matrix(ctx)
        return hitting_costs(ctx, A, targets, [ctx.num(r) for r in rewards])

    def flow(self, pi, select: Callable[[Hashable, Hashable], bool]):
        """sum over transitions s -> t with ``select(s, t)`` of pi(s) rate(s, t) (pi from :meth:`stationary`)."""
        total = 0
        for (i, j), r in self.rates.items():
            if select(self.states[i], self.states[j]):
                total = total + pi[i] * r
        return total


def build(initial, transitions: Callable[[Hashable], Iterable[tuple[Hashable, object]]]) -> CTMC:
    """The CTMC reachable from ``initial``: ``transitions(state)`` yields (next state, exact rate).

    Rates to the same state add up; self-loops and zero rates are dropped. The number of
    states is bounded by the limit ``dense_states`` (x 40 for these sparse oracles).
    """
    states, index, rates = [initial], {initial: 0}, {}
    todo = deque([initial])
    cap = 40 * _limits.current().dense_states
    while todo:
        s = todo.popleft()
        i = index[s]
        for t, r in transitions(s):
            if r == 0 or t == s:
                continue
            if t not in index:
                index[t] = len(states)
                states.append(t)
                todo.append(t)
                if len(states) > cap:
                    _limits.check("dense_states", len(states) // 40 + 1, "states of an oracle chain")
            key = (i, index[t])
            rates[key] = rates.get(key, 0) + r
    return CTMC(states, index, rates)
