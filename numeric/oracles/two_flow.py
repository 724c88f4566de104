"""Oracle chains of the two-class models, written from the model definitions (not from the engines).

The engines (:mod:`qderive.numeric.engines.two_flow`, :mod:`~.two_flow_hysteretic`) encode
states as bit strings or counts and compute the measures by formulas (PASTA, Little,
renewal). Here the rules are restated from ``docs/theory/other-models.md`` C and seed 002 on
plain Python tuples -- one tuple entry per customer, ``(class, tagged)`` -- and the chain is
found by search with the one CTMC builder (:func:`qderive.numeric.oracles.ctmc.build`).
The measures are computed *by definition* where a definition can be evaluated:

* throughputs and accepted rates as stationary flows of departure and arrival transitions;
* mean sojourns from a **tagged customer**: the chain with one marked customer is
  followed from its (accepted) arrival until it departs, the entry law being the
  stationary arrival flow (``pi(x) lambda_c`` for every state x accepting it), so the
  sojourn is a first-passage time, not Little's law;
* the return time (and the normal-mode time) as first passages from the stationary
  entry law, not the renewal formula;
* losses of seed 002 as ``1 - admitted / offered`` (fine at high precision, the engine uses
  positive terms).

Chains are solved exactly (:class:`~qderive.numeric.backend.FractionContext`) or in any
context by the one GTH and the one M-matrix solve.

>>> from fractions import Fraction as F
>>> from qderive.symbolic.models.two_flow import TwoFlowModel
>>> chain = two_flow_chain(TwoFlowModel(F(3, 5), 2, 1, 5, 1, 2, 3))
>>> chain.size
21
"""

from __future__ import annotations

from fractions import Fraction

from ...symbolic.models.two_flow import Algorithm, InputMode, Mode
from ..backend import FractionContext
from .ctmc import CTMC, build

__all__ = ["DONE", "START", "two_flow_moves", "two_flow_chain", "two_flow_measures", "hysteretic_moves",
           "hysteretic_chain", "hysteretic_measures", "one_flow_hysteretic_chain", "tagged_sojourn"]

#: the absorbing state of a tagged chain (the tagged customer has left)
DONE = "done"
#: the virtual initial state of a tagged chain (leaves at the stationary arrival flow into each entry)
START = "start"


def _untagged(seq) -> tuple:
    return tuple((c, False) for c in seq)


# --------------------------------------------------------------------------------------
# two-flow (seed 001)
# --------------------------------------------------------------------------------------


def _two_flow_accepts(mode: int, cls: int) -> bool:
    # spec C: "mode 0 accepts both, mode 1 accepts class 2 only, mode 2 rejects everything"
    return mode == Mode.NORMAL or (mode == Mode.PARTIAL and cls == 2)


def two_flow_moves(model, state):
    """Transitions of ``(mode, ((class, tagged), ...))``, first = in service, restated from spec C.

    Arrival of class c accepted (its mode accepts it, n < R): mode 2 if the count becomes H + 1.
    Departure (mu_c in mode 0, mu'_c in modes 1, 2): 2 -> 1 when n becomes H, 1 -> 0 when n becomes
    L - 1; under algorithm 2 in modes 1 and 2 the first class-2 message waiting goes to the front.
    The departure of the tagged message leads to :data:`DONE`.
    """
    if state == DONE:
        return
    mode, seq = state
    n = len(seq)
    L, H, R = model.L, model.H, model.R
    lam = (model.lambda_invite, model.lambda_non_invite)
    for c in (1, 2):
        if n < R and _two_flow_accepts(mode, c):
            yield (Mode.BLOCKING.value if n + 1 > H else mode, seq + ((c, False),)), lam[c - 1]
    if n:
        (c, tagged), rest = seq[0], list(seq[1:])
        normal = (model.mu_invite, model.mu_non_invite)
        over = (model.mu_overload_invite, model.mu_overload_non_invite)
        rate = (normal if mode == Mode.NORMAL else over)[c - 1]
        m = n - 1
        new_mode = Mode.PARTIAL.value if (mode == Mode.BLOCKING and m == H) else \
            Mode.NORMAL.value if (mode == Mode.PARTIAL and m == L - 1) else mode
        if model.algorithm is Algorithm.PRIORITY and new_mode != Mode.NORMAL:
            first2 = next((a for a, (cls, _) in enumerate(rest) if cls == 2), None)
            if first2 is not None:
                rest = [rest[first2]] + rest[:first2] + rest[first2 + 1:]
        yield (DONE if tagged else (new_mode, tuple(rest))), rate


def two_flow_chain(model) -> CTMC:
    """The seed-001 chain from the empty normal state, built by search."""
    return build((Mode.NORMAL.value, ()), lambda s: two_flow_moves(model, s))


def tagged_sojourn(moves, entries: dict, ctx):
    """Mean time from the entry law ``entries`` ({tagged state: weight}) until :data:`DONE` (one CTMC).

    A virtual :data:`START` leaves at rate ``weight`` into each entry; with reward 0 in START and 1
    elsewhere, the mean reward until DONE is the mean sojourn of the tagged customer.
    """
    def step(s):
        if s == START:
            yield from entries.items()
        else:
            yield from moves(s)

    chain = build(START, step)
    rewards = [0 if s == START else 1 for s in chain.states]
    with ctx:
        h = chain.mean_reward_until(ctx, [chain.index[DONE]], rewards)
    return h[chain.index[START]]


def _solve(chain: CTMC, ctx):
    if isinstance(ctx, FractionContext):
        return chain.stationary_exact()
    with ctx:
        return list(chain.stationary(ctx))


def _fsum(ctx, values):
    values = list(values)
    return ctx.fsum(values) if values else ctx.num(0)


def two_flow_measures(model, ctx, *, tagged: bool = True) -> dict:
    """Every measure key of ``qderive eval two-flow`` from the oracle chain (``tagged=False``: Little for the
    sojourns, for chains too large for the tagged solve)."""
    chain = two_flow_chain(model)
    pi = _solve(chain, ctx)
    states = chain.states
    lam = (model.lambda_invite, model.lambda_non_invite)
    with ctx:
        def flow(select):
            return _fsum(ctx, [pi[i] * ctx.num(r) for (i, j), r in chain.rates.items()
                               if select(states[i], states[j])])

        def prob(select):
            return _fsum(ctx, [p for s, p in zip(states, pi) if select(s)])

        out = {}
        for c, key in ((1, "invite"), (2, "non_invite")):
            out[f"throughput_{key}"] = flow(lambda s, t, c=c: len(t[1]) < len(s[1]) and s[1][0][0] == c)
            out[f"accepted_rate_{key}"] = flow(lambda s, t, c=c: len(t[1]) > len(s[1]) and t[1][-1][0] == c)
            out[f"rejection_{key}"] = prob(lambda s, c=c: not (_two_flow_accepts(s[0], c) and len(s[1]) < model.R))
            out[f"mean_number_{key}"] = _fsum(ctx, [p * sum(1 for x in s[1] if x[0] == c) for s, p in zip(states, pi)])
        out["mean_number"] = out["mean_number_invite"] + out["mean_number_non_invite"]
        for m in Mode:
            out[f"p_mode{int(m)}"] = prob(lambda s, m=m: s[0] == m)
        for c, key in ((1, "invite"), (2, "non_invite")):
            if tagged:
                entries = {}
                for s, p in zip(states, pi):
                    if _two_flow_accepts(s[0], c) and len(s[1]) < model.R:
                        mode = Mode.BLOCKING.value if len(s[1]) + 1 > model.H else s[0]
                        key_state = (mode, s[1] + ((c, True),))
                        entries[key_state] = entries.get(key_state, 0) + p * ctx.num(lam[c - 1])
                out[f"mean_sojourn_{key}"] = tagged_sojourn(lambda s: two_flow_moves(model, s), entries, ctx)
            else:
                out[f"mean_sojourn_{key}"] = out[f"mean_number_{key}"] / out[f"accepted_rate_{key}"]
        a1, a2 = out["accepted_rate_invite"], out["accepted_rate_non_invite"]
        out["mean_sojourn"] = (a1 * out["mean_sojourn_invite"] + a2 * out["mean_sojourn_non_invite"]) / (a1 + a2)
        over = [i for i, s in enumerate(states) if s[0] != Mode.NORMAL]
        if not over:
            out["mean_return_time"] = None
        else:
            normal = [i for i, s in enumerate(states) if s[0] == Mode.NORMAL]
            h = chain.mean_reward_until(ctx, normal, [1] * chain.size)
            entry = {}
            for (i, j), r in chain.rates.items():
                if states[i][0] == Mode.NORMAL and states[j][0] != Mode.NORMAL:
                    entry[j] = entry.get(j, 0) + pi[i] * ctx.num(r)
            out["mean_return_time"] = _fsum(ctx, [f * h[j] for j, f in entry.items()]) / _fsum(ctx, entry.values())
        out["states"] = chain.size
    return out


# --------------------------------------------------------------------------------------
# two-flow-hysteretic (seed 002)
# --------------------------------------------------------------------------------------


def hysteretic_moves(model, state):
    """Transitions of ``(s, waiting flow 1, waiting flow 2, in service)`` restated from seed 002 / spec B.

    Waiting customers are tuples of tags (FIFO within a flow); ``in service`` is ``(flow, tag)`` or None.
    Arrival of flow c at rate lambda_c^(s) while n < R: (H-1, 0) -> (H, 1), (R-1, 1) -> (R, 2).
    Departure at rate mu_k: (L, 1) -> (L-1, 0), (H+1, 2) -> (H, 1); then a waiting flow-1 customer
    if any (relative priority), else flow 2. The tagged customer's departure leads to :data:`DONE`.
    """
    if state == DONE:
        return
    s, w1, w2, srv = state
    n = len(w1) + len(w2) + (srv is not None)
    L, H, R = model.L, model.H, model.R
    if n < R:
        for c in (1, 2):
            lam = model.rate(InputMode(s), c)
            if lam == 0:
                continue
            s2 = 1 if (n + 1 == H and s == 0) else 2 if (n + 1 == R and s == 1) else s
            if srv is None:
                yield (s2, (), (), (c, False)), lam
            else:
                yield (s2, w1 + ((False,) if c == 1 else ()), w2 + ((False,) if c == 2 else ()), srv), lam
    if srv is not None:
        flow, tagged = srv
        m = n - 1
        s2 = 0 if (s == 1 and m == L - 1) else 1 if (s == 2 and m == H) else s
        if tagged:
            nxt = DONE
        elif w1:
            nxt = (s2, w1[1:], w2, (1, w1[0]))
        elif w2:
            nxt = (s2, w1, w2[1:], (2, w2[0]))
        else:
            nxt = (s2, (), (), None)
        yield nxt, model.service_rates[flow - 1]


def hysteretic_chain(model) -> CTMC:
    return build((0, (), (), None), lambda s: hysteretic_moves(model, s))


def _count(state) -> int:
    _, w1, w2, srv = state
    return len(w1) + len(w2) + (srv is not None)


def _mean_passage(chain, pi, ctx, inside, entry_from):
    """Mean time to leave the states with ``inside(s)`` from the stationary entry law (flows from ``entry_from``)."""
    states = chain.states
    targets = [i for i, s in enumerate(states) if not inside(s)]
    h = chain.mean_reward_until(ctx, targets, [1] * chain.size)
    entry = {}
    for (i, j), r in chain.rates.items():
        if entry_from(states[i]) and inside(states[j]):
            entry[j] = entry.get(j, 0) + pi[i] * ctx.num(r)
    return _fsum(ctx, [f * h[j] for j, f in entry.items()]) / _fsum(ctx, entry.values())


def hysteretic_measures(model, ctx, *, tagged: bool = True) -> dict:
    """Every measure key of ``qderive eval two-flow-hysteretic`` from the oracle chain."""
    chain = hysteretic_chain(model)
    pi = _solve(chain, ctx)
    states = chain.states
    with ctx:
        out = {f"p_mode{m}": _fsum(ctx, [p for s, p in zip(states, pi) if s[0] == m]) for m in range(3)}
        for c in (1, 2):
            offered = ctx.num(model.rate(InputMode.NORMAL, c))
            admitted = _fsum(ctx, [pi[i] * ctx.num(r) for (i, j), r in chain.rates.items()
                                   if states[j] != DONE and _count(states[j]) > _count(states[i])
                                   and _arrived_flow(states[i], states[j]) == c])
            number = _fsum(ctx, [p * (len(s[c]) + (s[3] is not None and s[3][0] == c)) for s, p in zip(states, pi)])
            out[f"loss_flow{c}"] = 1 - admitted / offered
            out[f"throughput_flow{c}"] = _fsum(ctx, [pi[i] * ctx.num(r) for (i, j), r in chain.rates.items()
                                                     if _count(states[j]) < _count(states[i])
                                                     and states[i][3][0] == c])
            out[f"mean_number_flow{c}"] = number
            if tagged:
                entries = {}
                for s, p in zip(states, pi):
                    n, mode = _count(s), s[0]
                    lam = model.rate(InputMode(mode), c)
                    if n >= model.R or lam == 0:
                        continue
                    s2 = 1 if (n + 1 == model.H and mode == 0) else 2 if (n + 1 == model.R and mode == 1) else mode
                    _, w1, w2, srv = s
                    if srv is None:
                        t = (s2, (), (), (c, True))
                    else:
                        t = (s2, w1 + ((True,) if c == 1 else ()), w2 + ((True,) if c == 2 else ()), srv)
                    entries[t] = entries.get(t, 0) + p * ctx.num(lam)
                out[f"mean_sojourn_flow{c}"] = tagged_sojourn(lambda s: hysteretic_moves(model, s), entries, ctx)
            else:
                out[f"mean_sojourn_flow{c}"] = number / admitted
        out["mean_normal_time"] = _mean_passage(chain, pi, ctx, lambda s: s[0] == 0, lambda s: s[0] != 0)
        out["mean_return_time"] = _mean_passage(chain, pi, ctx, lambda s: s[0] != 0, lambda s: s[0] == 0)
        out["mean_cycle_time"] = out["mean_normal_time"] + out["mean_return_time"]
        out["states"] = chain.size
    return out


def _arrived_flow(s, t) -> int:
    """The flow of the customer that arrived in the transition s -> t (an arrival: the count grew)."""
    if s[3] is None:
        return t[3][0]
    return 1 if len(t[1]) > len(s[1]) else 2


def one_flow_hysteretic_chain(rates, mu, L: int, H: int, R: int) -> CTMC:
    """Spec B's chain on (mode, n) with input rate ``rates[s]`` in mode s and service rate mu (the lumped chain).

    S0 = {n <= H-1}, S1 = {L <= n <= R-1}, S2 = {H+1 <= n <= R}; (H-1, 0) -> (H, 1) and (R-1, 1) -> (R, 2)
    on an arrival, (L, 1) -> (L-1, 0) and (H+1, 2) -> (H, 1) on a departure.
    """
    rates = tuple(Fraction(r) for r in rates)

    def moves(state):
        s, n = state
        if n < R and rates[s]:
            yield (1 if (s == 0 and n + 1 == H) else 2 if (s == 1 and n + 1 == R) else s, n + 1), rates[s]
        if n:
            yield (0 if (s == 1 and n - 1 == L - 1) else 1 if (s == 2 and n - 1 == H) else s, n - 1), Fraction(mu)

    return build((0, 0), moves)
