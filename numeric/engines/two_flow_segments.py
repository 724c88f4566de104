"""Seed 001's two-flow chain under FIFO held as segments: polynomial in H (``docs/theory/other-models.md`` C).

**Why it is exact.** In mode 0 both classes are admitted, and an admitted message's class
acts on nothing until it enters service: acceptance, the switching rules and the mode depend
on the count n only, and under FIFO (algorithm 1) the order of service is the order of
arrival whatever the classes. By the principle of deferred decisions the class of a message
admitted in mode 0 can therefore be drawn when it *enters service*: class 1 with probability
``p = lambda_1 / (lambda_1 + lambda_2)``, class 2 with ``q = lambda_2 / (lambda_1 + lambda_2)``,
independently of everything before. A message admitted in mode 1 is class 2 for sure. So
the process ``(mode, class in service, the queue as a word in A (class not yet drawn) and B
(class 2))`` is a Markov chain with the same law of (mode, n, class in service) paths as the
chain of :mod:`qderive.numeric.engines.two_flow` over class sequences, and given its state the
undrawn classes are i.i.d. Bernoulli(p): every measure of the class-sequence chain is an
expectation over them (the class-1 count of an A run of length u is Binomial(u, p)).

**Why it is small.** The queue, run-length encoded, alternates A and B runs. A mode-0 period
starts at n = L - 1 and ends at n = H + 1; the following overload ends at n = L - 1 again, so
between two starts of mode 0 at least H - L + 2 messages are admitted, all of them behind the
L - 1 present at the first start. When H >= 2L - 3 nothing admitted before a mode-0 period
is left at the next one: the queue is a suffix of ``A B A B`` (at most four runs) and the
chain has O(H^4) states (about (H^4 - L^4) / 12 in the worst case, far fewer in practice);
for a smaller H - L more runs survive and the degree grows, but the count stays polynomial
for a fixed ratio (H - L) / L. The reachable set is built by frontier expansion from the
empty state and numbered level by level, as the class-sequence chain.

**Priority (algorithm 2) has no such lumping**: in modes 1 and 2 the next message served is
the first class-2 message *waiting*, which depends on the undrawn classes of the whole queue,
and when mode 0 returns, the interleaving of the remaining class-1 and class-2 messages
matters again under FIFO; deferring the draws is not exact there, and that engine keeps the
class-sequence chain (:func:`qderive.numeric.engines.two_flow.sequence_chain_supported`).

Transition kinds index :func:`segment_rates`: the six rates of
:class:`~qderive.numeric.engines.two_flow.RateKind`, then ``lambda_1 + lambda_2`` (an admitted
mode-0 arrival appended as A), then each service rate times p and times q (a departure that
draws the class of the next message from an A run).

>>> sp = segment_space(2, 4, 5)
>>> sp.size, int(sp.length.max()), max(len(r) for r in sp.runs)
(37, 5, 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.models.two_flow import Mode

__all__ = ["SegmentSpace", "segment_space", "segment_rates", "ARRIVAL_ANY", "drawn_kind"]

#: kind of a mode-0 arrival to a busy server (rate lambda_1 + lambda_2): appended as an A message
ARRIVAL_ANY = 6
_SERVICE_KINDS = (2, 3, 4, 5)  # SERVICE_1, SERVICE_2, OVERLOAD_SERVICE_1, OVERLOAD_SERVICE_2


def drawn_kind(service_kind: int, cls: int) -> int:
    """Kind of a departure at rate ``rates[service_kind]`` after which the next message, drawn from an A run,
    is of class ``cls``: rate times p (cls = 1) or q (cls = 2)."""
    return 7 + 2 * (service_kind - 2) + (cls - 1)


def segment_rates(rates: tuple) -> tuple:
    """The exact rates of every kind from the six of :class:`~qderive.numeric.engines.two_flow.RateKind`:
    ``(..., lambda_1 + lambda_2, mu_1 p, mu_1 q, mu_2 p, mu_2 q, mu'_1 p, mu'_1 q, mu'_2 p, mu'_2 q)``."""
    lam1, lam2 = Fraction(rates[0]), Fraction(rates[1])
    p, q = lam1 / (lam1 + lam2), lam2 / (lam1 + lam2)
    out = [Fraction(r) for r in rates] + [lam1 + lam2]
    for k in _SERVICE_KINDS:
        out += [Fraction(rates[k]) * p, Fraction(rates[k]) * q]
    return tuple(out)


@dataclass(frozen=True)
class SegmentSpace:
    """Reachable states ``(mode, class in service, runs)`` and transitions ``src -> dst`` of kind ``kind``.

    ``runs`` is the queue behind the server as alternating runs, +u for u A messages (class
    not yet drawn), -u for u B messages (class 2). Per state: ``length`` n, ``known2`` (class-2
    messages whose class is known, the one in service included), ``known1`` likewise for class
    1, ``undrawn`` (messages in A runs). Level order (n ascending), the empty state first.
    """

    low: int
    high: int
    capacity: int
    mode: np.ndarray
    length: np.ndarray
    service: np.ndarray
    known1: np.ndarray
    known2: np.ndarray
    undrawn: np.ndarray
    runs: tuple
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray

    @property
    def size(self) -> int:
        return len(self.mode)

    @property
    def has_overload(self) -> bool:
        """True when modes 1 and 2 are reachable (R > H)."""
        return bool(np.any(self.mode != Mode.NORMAL))

    def accepts(self, cls: int) -> np.ndarray:
        """States where an arriving class-``cls`` message is accepted: its mode accepts it and n < R."""
        ok = (self.mode == Mode.NORMAL) | ((self.mode == Mode.PARTIAL) & (cls == 2))
        return ok & (self.length < self.capacity)

    @cached_property
    def in_service(self) -> np.ndarray:
        """Class in service (1, 2), 0 when empty."""
        return self.service


def _step(m: int, n: int, L: int, H: int):
    """(mode after an arrival that makes n + 1, mode after a departure that makes n - 1), the rules of C."""
    up = 2 if n + 1 == H + 1 else m
    down = 1 if m == 2 else (0 if (m == 1 and n - 1 == L - 1) else m)
    return up, down


@lru_cache(maxsize=8)
def segment_space(low: int, high: int, capacity: int) -> SegmentSpace:
    """Reachable states and transitions of the FIFO chain with deferred class draws (module docstring).

    From ``(m, c, runs)`` with n messages: an admitted arrival (n < R; mode 0: both classes,
    rate lambda_1 + lambda_2, appended as A -- into service with its class when the server is
    idle, rate lambda_c; mode 1: class 2 only, appended as B) moves to mode 2 when it makes
    n = H + 1; a departure (rate mu_c in mode 0, mu'_c otherwise) applies the switching rules
    and takes the head of the queue into service, drawing its class (p, q) when it is an A.
    The number of states is bounded by the limit ``two_flow_states``, checked as they are found.
    """
    L, H = low, high
    R = min(capacity, H + 1)
    allowed = _limits.current().two_flow_states
    start = (0, 0, ())
    index = {start: 0}
    states = [start]
    src, dst, kind = [], [], []

    def target(state):
        i = index.get(state)
        if i is None:
            i = len(states)
            if i >= allowed:
                _limits.check("two_flow_states", i + 1, "states of the two-flow FIFO chain held as segments, "
                              "counted until the limit: the count grows like H^4 and faster when H - L is small "
                              "against L; `qderive simulate two-flow` has no state-space limit")
            index[state] = i
            states.append(state)
        return i

    head = 0
    while head < len(states):
        here = head
        m, c, runs = states[head]
        head += 1
        n = (c > 0) + sum(abs(r) for r in runs)
        up, down = _step(m, n, L, H)
        if n < R and m != 2:
            if c == 0:
                for k in ((1, 2) if m == 0 else (2,)):
                    src.append(here)
                    dst.append(target((up, k, ())))
                    kind.append(k - 1)
            else:
                sign = 1 if m == 0 else -1
                if runs and (runs[-1] > 0) == (sign > 0):
                    new = runs[:-1] + (runs[-1] + sign,)
                else:
                    new = runs + (sign,)
                src.append(here)
                dst.append(target((up, c, new)))
                kind.append(ARRIVAL_ANY if m == 0 else 1)
        if c:
            base = (2 if m == 0 else 4) + (c - 1)
            if not runs:
                src.append(here)
                dst.append(target((down, 0, ())))
                kind.append(base)
                continue
            first = runs[0]
            rest = runs[1:] if abs(first) == 1 else (first - (1 if first > 0 else -1),) + runs[1:]
            if first < 0:
                src.append(here)
                dst.append(target((down, 2, rest)))
                kind.append(base)
            else:
                for k in (1, 2):
                    src.append(here)
                    dst.append(target((down, k, rest)))
                    kind.append(drawn_kind(base, k))
    mode = np.array([s[0] for s in states], dtype=np.int8)
    service = np.array([s[1] for s in states], dtype=np.int64)
    undrawn = np.array([sum(r for r in s[2] if r > 0) for s in states], dtype=np.int64)
    queued2 = np.array([-sum(r for r in s[2] if r < 0) for s in states], dtype=np.int64)
    length = (service > 0) + undrawn + queued2
    order = np.lexsort((mode, length))  # level order; stable: the empty mode-0 state stays first
    new_index = np.empty(len(states), dtype=np.int64)
    new_index[order] = np.arange(len(states))
    src = new_index[np.array(src, dtype=np.int64)]
    dst = new_index[np.array(dst, dtype=np.int64)]
    kind = np.array(kind, dtype=np.int8)
    known2 = queued2 + (service == 2)
    known1 = (service == 1).astype(np.int64)
    arrays = [a[order] for a in (mode, length, service, known1, known2, undrawn)] + [src, dst, kind]
    for a in arrays:
        a.setflags(write=False)
    runs = tuple(states[i][2] for i in order.tolist())
    mode, length, service, known1, known2, undrawn, src, dst, kind = arrays
    return SegmentSpace(L, H, R, mode, length, service, known1, known2, undrawn, runs, src, dst, kind)
