"""Oracle of the composed vacation models: the CTMC of M[X]/PH/1(/r) built from the idle passage's stages.

The check "from the definition, not from the PGF" of the blocks (close-down, vacations, start threshold N,
setup): the model's idle passage as recorded stages (:func:`qderive.symbolic.blocks.machine.machine`: ``during``,
``interrupt``, ``wait``, ``repeat``) becomes, with phase-type laws (exponential, Erlang, hyperexponential,
Coxian, PH) for the service and every stage, a finite CTMC on

* ``("S", phase, n)``: the server serves (service phase), n >= 1 present (n - 1 waiting);
* ``("I", i, phase, done, n)``: the server is in stage i of the idle passage (the stage law's phase, 0 for a
  ``wait``; ``done`` the periods run of a ``repeat`` with at most ``most`` of them, else 0), n present, all
  waiting.

Nothing here names a block: the transitions are those of the four primitives (the module docstring of
:mod:`~qderive.symbolic.blocks.machine`, which also fixes the skips, the places a batch finds and the embedded
epochs), written once. A batch of k finding m places admits min(k, m) (partial admission, the first members of
its random order) or k if k <= m and nobody otherwise (whole admission); the threshold counts admitted
customers. A service completion leaving nobody starts the idle passage; the last stage done starts the first
service. Rates are exact (rationals); the stationary law is solved by GTH (:mod:`.ctmc`) at any precision.

**Rooms.** The finite room r is the model's. The infinite room is a room of ``levels`` places with partial
admission at the cut: the truncation's neglected mass is estimated by the mass the cut piles up at the top
level, p_w(L) (about the infinite queue's mass at L and beyond); :func:`chain_solution` picks L so that it is
below ``tail`` (default 10^-digits) and reports it (``neglected``).

**Measures** (the keys of ``qderive eval vacation-infinite`` / ``vacation-finite``): the time-stationary laws of
the number in the system and of the number waiting (everyone present not in service); ``idle_probability`` the
mass of the idle states (not serving); ``mean_queue_length`` and ``queue_length_variance`` of the number
waiting; ``mean_number_in_system``; ``throughput`` = sum over serving states of pi times the completion rate;
``mean_wait`` = mean_queue_length / (admitted customers per unit time: lambda l_1 in the infinite room, the
throughput in the finite one; Little's law, the setup a customer waits through included); ``loss_probability``
= lost customers / offered; ``batch_blocking_probability`` = batches admitting nobody / batches; ``p0``, ``pr``
the number waiting 0 / r; ``q0``, ``qr`` the embedded epochs (service completions and vacation ends,
:func:`~qderive.symbolic.blocks.machine.epoch_at_end`) leaving 0 / r waiting, as a fraction of all of them.

>>> from fractions import Fraction as F
>>> from qderive.symbolic.laws import Exponential
>>> from qderive.symbolic.batches import Constant
>>> from qderive.symbolic.models.vacation import VacationQueue
>>> m = VacationQueue(F(1, 2), Constant(1), Exponential(1), None, start_threshold=3)
>>> got = chain_measures(m, digits=20)
>>> abs(got["mean_number_in_system"] - (1 + F(3 - 1, 2))) < 1e-18   # Yadin-Naor: rho/(1-rho) + (N-1)/2
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ...symbolic.blocks.machine import (
    StageKind,
    epoch_at_end,
    machine,
    next_after_period,
    places,
    refuse_stuck,
    resolve,
)
from ...symbolic.errors import ParameterError
from ...symbolic.models.vacation import Admission, FiniteVacationQueue
from ..backend import FLOAT64, mp_context
from .ctmc import CTMC, build

__all__ = ["block_ctmc", "ChainSolution", "chain_solution", "chain_measures", "chain_law", "TaggedWait", "tagged_wait"]

#: guard digits of the GTH solve over the digits asked
_GUARD = 10


def _ph(law, what):
    """(alpha, T rows, exit rates) of a phase-type law, exactly; refused otherwise or with an atom at zero."""
    form = law.phase_type()
    if form is None:
        raise ParameterError(f"the block chain needs phase-type laws: {what} = {law} is not phase-type")
    alpha, T = form
    alpha = [Fraction(a) for a in alpha]
    if sum(alpha) != 1:
        raise ParameterError(f"the block chain needs phase-type laws without an atom at zero: {what} = {law}")
    T = [[Fraction(v) for v in row] for row in T]
    return alpha, T, [-sum(row) for row in T]


@dataclass(frozen=True)
class _Info:
    stages: tuple
    room: int
    whole: bool
    lam: Fraction
    pmf: dict
    service: tuple
    laws: tuple


def block_ctmc(model, levels: int | None = None, blocks=None) -> tuple[CTMC, _Info]:
    """(CTMC, description) of ``model`` (a VacationQueue: ``levels`` waiting places, partial admission at the
    cut; a FiniteVacationQueue: its room r, ``levels`` ignored), states as in the module docstring; ``blocks``:
    the idle passage's blocks (default the model's, :func:`~qderive.symbolic.blocks.base.blocks_of`)."""
    finite = isinstance(model, FiniteVacationQueue)
    if finite:
        room = model.capacity
    else:
        if levels is None or levels < 1:
            raise ParameterError("levels", "the infinite room is truncated at a number of places >= 1", levels)
        room = levels
    stages = machine(model, blocks)
    refuse_stuck(model, stages)
    for s in stages:
        if s.threshold is not None and s.threshold > room:
            raise ParameterError("levels", f"must be >= the start threshold {s.threshold}", room)
    whole = finite and model.admission is Admission.WHOLE
    lam = Fraction(model.rate)
    batch = model.batch
    top = room + 1 if batch.max_size is None else min(batch.max_size, room + 1)
    pmf = {k: Fraction(batch.pmf(k)) for k in range(1, top + 1)}
    pmf = {k: p for k, p in pmf.items() if p}
    tails = [Fraction(batch.tail(m)) for m in range(room + 2)]
    service = _ph(model.service, "service")
    laws = tuple(_ph(s.law, s.kind.value + " law") if s.timed else None for s in stages)
    end = len(stages)

    def admitted(k, m):
        if whole:
            return k if k <= m else 0
        return min(k, m)

    def arrivals(m):
        """(admitted a >= 1, rate) of the batches finding m places."""
        if m <= 0:
            return
        for k, p in pmf.items():
            if k > m:
                break
            a = admitted(k, m)
            if a:
                yield a, lam * p
        if not whole and tails[m]:
            yield m, lam * tails[m]

    def serve(n, rate):
        for ph, a in enumerate(service[0]):
            if a:
                yield ("S", ph, n), rate * a

    def enter(i, done, n, rate):
        i, done = resolve(stages, i, n, done)
        if i == end:
            if n < 1:  # pragma: no cover - machine() guarantees someone present
                raise ParameterError("the idle passage ended with nobody present")
            yield from serve(n, rate)
        elif stages[i].kind is StageKind.WAIT:
            yield ("I", i, 0, 0, n), rate
        else:
            for ph, a in enumerate(laws[i][0]):
                if a:
                    yield ("I", i, ph, done, n), rate * a

    def moves(state):
        if state[0] == "S":
            _, ph, n = state
            for a, rate in arrivals(room - (n - 1)):
                yield ("S", ph, n + a), rate
            _, T, t = service
            for q, rate in enumerate(T[ph]):
                if q != ph and rate:
                    yield ("S", q, n), rate
            if t[ph]:
                if n >= 2:
                    yield from serve(n - 1, t[ph])
                else:
                    yield from enter(0, 0, 0, t[ph])
            return
        _, i, ph, done, n = state
        s = stages[i]
        for a, rate in arrivals(places(stages, i, n, room)):
            if s.kind is StageKind.INTERRUPT:
                yield from serve(n + a, rate)  # the close-down ends: its members are served at once
            elif s.kind is StageKind.WAIT:
                yield from enter(i, 0, n + a, rate)
            else:
                yield ("I", i, ph, done, n + a), rate
        if not s.timed:
            return
        _, T, t = laws[i]
        for q, rate in enumerate(T[ph]):
            if q != ph and rate:
                yield ("I", i, q, done, n), rate
        if t[ph]:
            if s.kind is StageKind.REPEAT:
                d = done + 1 if s.most is not None else 0
                j, d = next_after_period(stages, i, n, d)
                yield from enter(j, d, n, t[ph])
            else:
                yield from enter(i + 1, 0, n, t[ph])

    initial = next(iter(enter(0, 0, 0, Fraction(1))))[0]
    chain = build(initial, moves)
    return chain, _Info(stages, room, whole, lam, pmf, service, laws)


@dataclass(frozen=True)
class ChainSolution:
    """The solved chain: ``p_system`` (n = 0..r+1 present), ``p_waiting`` (j = 0..r waiting), ``measures`` (the
    keys of ``qderive eval``, ``p`` the law of the number waiting), ``levels`` (the room solved: r, or the
    truncation L of the infinite room), ``neglected`` (infinite room: p_waiting[L], the truncation's estimated
    neglected mass; 0 for a finite room), ``states`` (the chain's size)."""

    p_system: list
    p_waiting: list
    measures: dict
    levels: int
    neglected: object
    states: int
    notes: tuple = field(default=())


def _solve(chain: CTMC, info: _Info, ctx, finite: bool, batch) -> ChainSolution:
    with ctx:
        pi = list(chain.stationary(ctx))
        num = ctx.num
        zero = num(0)
        r, stages = info.room, info.stages
        p_sys = [zero] * (r + 2)
        p_wait = [zero] * (r + 1)
        flow = [zero] * (r + 1)
        idle = throughput = lost = blocked = zero
        l1 = Fraction(batch.mean)
        cache: dict = {}

        def loss_terms(m):
            """(E customers lost, P(nobody admitted)) of one batch finding m places, exactly."""
            got = cache.get(m)
            if got is None:
                m = max(m, 0)
                if info.whole:
                    kept = sum((k * p for k, p in info.pmf.items() if k <= m), Fraction(0))
                    got = (l1 - kept, Fraction(batch.tail(m)))
                else:
                    got = (Fraction(batch.excess(m)), Fraction(1 if m == 0 else 0))
                got = cache[m] = (num(got[0]), num(got[1]))
            return got

        for x, state in zip(pi, chain.states):
            n = state[-1]
            p_sys[n] += x
            if state[0] == "S":
                _, ph, _ = state
                p_wait[n - 1] += x
                m = r - (n - 1)
                rate = info.service[2][ph]
                if rate:
                    done = x * num(rate)
                    throughput += done
                    flow[n - 1] += done
            else:
                _, i, ph, d, _ = state
                p_wait[n] += x
                idle += x
                m = places(stages, i, n, r)
                s = stages[i]
                if s.timed and s.vacation and info.laws[i][2][ph]:
                    dd = d + 1 if s.most is not None else 0
                    if epoch_at_end(stages, i, n, dd):
                        flow[n] += x * num(info.laws[i][2][ph])
            per, none = loss_terms(m)
            lost += x * per
            blocked += x * none
        lam = num(info.lam)
        offered = lam * num(l1)
        mean_q = ctx.fsum([j * v for j, v in enumerate(p_wait)])
        mean_n = ctx.fsum([n * v for n, v in enumerate(p_sys)])
        second = ctx.fsum([j * j * v for j, v in enumerate(p_wait)])
        epochs = ctx.fsum(flow)
        if finite:
            measures = {
                "loss_probability": lost * lam / offered,
                "batch_blocking_probability": blocked,
                "idle_probability": idle,
                "mean_queue_length": mean_q,
                "mean_wait": mean_q / throughput,
                "mean_number_in_system": mean_n,
                "throughput": throughput,
                "p0": p_wait[0],
                "pr": p_wait[r],
                "q0": flow[0] / epochs,
                "qr": flow[r] / epochs,
                "p": list(p_wait),
            }
            neglected = zero
        else:
            measures = {
                "q0": flow[0] / epochs,
                "idle_probability": idle,
                "mean_queue_length": mean_q,
                "mean_wait": mean_q / offered,
                "queue_length_variance": second - mean_q * mean_q,
                "mean_number_in_system": mean_n,
                "p": list(p_wait),
            }
            neglected = p_wait[r]
    return ChainSolution(p_sys, p_wait, measures, r, neglected, chain.size)


def _levels_for(model, tail: Fraction, blocks) -> int:
    """A truncation L whose float64 solve puts p_waiting[L] <= ``tail`` / 100 (the float64 GTH is
    subtraction-free: its tiny probabilities carry their relative accuracy): from a solve at 32 levels (or twice
    the threshold) the geometric decay eta of p_waiting between L/4 and L/2 extrapolates the level where the
    mass falls below the target (+ 10 %), checked by a solve there; doubled until it holds."""
    import math

    target = float(tail) / 100
    levels = max(32, 2 * max((s.threshold or 0) for s in machine(model, blocks)))
    while True:
        chain, info = block_ctmc(model, levels, blocks)
        sol = _solve(chain, info, FLOAT64, False, model.batch)
        if sol.neglected <= target:
            return levels
        p = [float(v) for v in sol.p_waiting]
        a, b = levels // 4, levels // 2
        guess = 2 * levels
        if p[a] > 0 and 0 < p[b] < p[a]:
            eta = (p[b] / p[a]) ** (1 / (b - a))
            guess = max(guess, math.ceil(1.1 * (b + math.log(target / p[b]) / math.log(eta))))
            guess = min(guess, 16 * levels)
        levels = guess


def chain_solution(model, digits: int = 50, levels: int | None = None, tail=None, blocks=None) -> ChainSolution:
    """The block chain of ``model`` solved by GTH at ``digits`` + 10 digits (:class:`ChainSolution`).

    Infinite room: ``levels`` waiting places (None: the smallest doubling of 32 whose estimated neglected mass
    is below ``tail`` / 100, ``tail`` default 10^-digits); the result's ``neglected`` states the mass at the cut,
    and a note says when it exceeds ``tail``. A finite room ignores ``levels``. ``blocks``: the idle passage's
    blocks (default the model's; a rule of one's own composed of the primitives is solved the same way)."""
    finite = isinstance(model, FiniteVacationQueue)
    tail = Fraction(1, 10**digits) if tail is None else Fraction(tail)
    if not finite and levels is None:
        levels = _levels_for(model, tail, blocks)
    chain, info = block_ctmc(model, levels, blocks)
    sol = _solve(chain, info, mp_context(digits + _GUARD), finite, model.batch)
    if not finite and sol.neglected > float(tail):
        sol = ChainSolution(sol.p_system, sol.p_waiting, sol.measures, sol.levels, sol.neglected, sol.states,
                            (f"the truncation at {levels} places neglects about {float(sol.neglected):.1e} > "
                             f"{float(tail):.1e}",))
    return sol


def chain_measures(model, digits: int = 50, levels: int | None = None, tail=None, blocks=None) -> dict:
    """The measures of ``model`` from its block chain (the keys of ``qderive eval``; module docstring), as mpf
    numbers carrying ``digits`` + 10 digits (:func:`chain_solution`): compare them with ``agreement_digits`` or
    inside ``mpmath.workdps`` (arithmetic on them at mpmath's default precision keeps 15 digits)."""
    return chain_solution(model, digits, levels, tail, blocks).measures


def chain_law(model, digits: int = 50, levels: int | None = None, tail=None, blocks=None) -> tuple[list, list]:
    """(p_system, p_waiting): the time-stationary laws of the number in the system (0..r+1) and of the number
    waiting (0..r) from the block chain (:func:`chain_solution`)."""
    sol = chain_solution(model, digits, levels, tail, blocks)
    return sol.p_system, sol.p_waiting


def _admissions(info: _Info, batch, m):
    """(a, P(a admitted)) of one batch finding ``m`` places, a >= 1 (the chain's rule: partial admission
    min(X, m), the first members of its random order; whole admission X if X <= m, else nobody)."""
    if m is None or m <= 0:
        return
    for k, p in info.pmf.items():
        if k > m:
            break
        yield k, p
    if not info.whole and batch.tail(m):
        yield m, Fraction(batch.tail(m))


@dataclass(frozen=True)
class TaggedWait:
    """The law of a random customer's wait from the block chain (:func:`tagged_wait`): ``tail`` P(W > t) at the
    times asked, ``sojourn_tail`` P(W + B > t), ``p_zero`` P(W = 0), ``levels`` the truncation, ``moments``
    E[W], ..., E[W^k] and ``sojourn_moments`` E[T], ..., E[T^k] (k asked), as mpf numbers."""

    tail: list
    sojourn_tail: list
    p_zero: object
    levels: int
    moments: list = field(default_factory=list)
    sojourn_moments: list = field(default_factory=list)


def tagged_wait(model, times=(), digits: int = 30, tail=None, blocks=None, moments: int = 0) -> TaggedWait:
    """P(W > t), P(W + B > t) and the moments E[W^j], E[(W + B)^j], j <= ``moments``, of a random customer (FCFS,
    random order in its batch; in a finite room a random *admitted* customer) in the infinite or the finite room,
    from the definition: the absorption time of a tagged customer
    in a transient chain built from the stages (:mod:`~qderive.symbolic.blocks.machine`), never from a transform.

    1. **The state seen by the tagged customer's batch** is the block chain's stationary law pi (PASTA; the chain
       of :func:`block_ctmc` truncated as :func:`chain_solution` does, ``tail`` default 10^-digits); the pair
       (batch size k, position i) has P(K = k, I = i) = x_k / l_1, i = 1..k (customer average).
    2. **Customers ahead**: serving with n present, a = n - 1 + i - 1 wait ahead of it besides the one in service;
       in an idle stage with n present (all waiting), a = n + i - 1, and n + k are present after its batch. A batch
       arriving in an ``interrupt`` stage (the close-down) starts service at once: W = 0 for the first of it
       (a = 0), else the service of one of those ahead starts (phase by the service's initial law). In a ``wait``
       stage the batch that brings the count to its threshold N ends it (a ``wait`` that is the last stage: service
       starts at once); in any other stage it joins and the stage goes on.
    3. **Its wait** is the time until the service start with nobody ahead. While the server is idle the chain also
       counts the customers present, n, capped at the largest threshold (FCFS: the later arrivals are behind the
       tagged customer, only their number matters, for the thresholds): a later batch of k moves n to
       min(n + k, N); an idle stage's phase moves by its sub-generator; at a period's end the next stage really
       entered (:func:`resolve` with the count n) runs, or the first service starts; a service completion with
       a >= 1 ahead starts the next (a - 1); with a = 0 the tagged customer's own service starts (absorption).
       Once service has started later arrivals do not matter. **The sojourn** adds the tagged customer's service
       (its phases, then absorption). With N = 1 the count is always 1: a customer then waits for the past only.
    4. **The finite room r** (no truncation: the chain of :func:`block_ctmc` itself): a batch finding m places
       (:func:`~qderive.symbolic.blocks.machine.places`: r - n while the server does not serve, r + 1 - n where
       its arrival starts service at once, r - (n - 1) during a service) admits a = min(X, m) (partial) or X if
       X <= m (whole); the tagged customer is a random admitted one, P(state, a, i) = pi p_a / E[admitted],
       i = 1..a. While idle the chain keeps the true count n (not capped: the places a later batch finds
       depend on it) and a later batch admits as above (the threshold counts admitted customers).

    P(W > t) = v exp(Q t) 1 by uniformization, a sum of positive terms, stopped where the Poisson weights left
    are below 10^-(digits + 5) (one pass of the powers for all the times); E[T^j] = j! v (-Q)^-j 1 by
    back-substitution over the customers ahead a (a never increases: each level's small block is solved once per
    distinct set of local states, by mpmath's LU); at digits + 10 working digits."""
    import mpmath

    finite = isinstance(model, FiniteVacationQueue)
    stages = machine(model, blocks)
    top = max([s.threshold or 1 for s in stages] + [1])
    tail = Fraction(1, 10**digits) if tail is None else Fraction(tail)
    levels = None if finite else _levels_for(model, tail, blocks)
    chain, info = block_ctmc(model, levels, blocks)
    levels = info.room
    ctx = mp_context(digits + _GUARD)
    end = len(stages)
    alpha, T, exits = info.service
    batch = model.batch
    # later batches while idle: n -> min(n + k, top), P(X >= top - n) = P(X > top - n - 1)
    jumps = {n: [(k, info.pmf.get(k, Fraction(0))) for k in range(1, top - n)] + [(top - n, batch.tail(top - n - 1))]
             for n in range(1, top)}
    if finite:  # the finite room: the count n is the true one (the places depend on it), admitted as the chain does
        jumps = {(i, n): list(_admissions(info, batch, places(stages, i, n, info.room)))
                 for i, s in enumerate(stages) for n in range(1, info.room + 2)}
    with ctx:
        pi = list(chain.stationary(ctx))
        num = ctx.num
        l1 = Fraction(batch.mean)
        lam = num(info.lam)

        def add(out, state, p):
            out[state] = out.get(state, 0) + p

        def serve(out, a, p, sojourn):
            """A service starts with ``a`` ahead of the tagged customer (a = -1: its own; in the wait, the end:
            the key None)."""
            if a < 0 and not sojourn:
                add(out, None, p)
                return
            for ph, w in enumerate(alpha):
                if w:
                    add(out, ("S", ph, a), p * num(w))

        def enter(out, i, done, a, n, p, sojourn):
            """Stage ``i`` entered with ``a`` ahead and ``n`` present (the skips of :func:`resolve`)."""
            i, done = resolve(stages, i, n, done)
            if i == end:
                serve(out, a - 1, p, sojourn)
                return
            n = n if finite else min(n, top)
            if stages[i].kind is StageKind.INTERRUPT:
                raise ParameterError("an interrupt stage entered with someone present is not covered")
            if stages[i].kind is StageKind.WAIT:
                add(out, ("I", i, 0, 0, a, n), p)
                return
            for ph, w in enumerate(info.laws[i][0]):
                if w:
                    add(out, ("I", i, ph, done, a, n), p * num(w))

        if finite:  # the admitted customers: P(state, a admitted, position i <= a) = pi p_a / E[admitted]
            seen = []
            for x, state in zip(pi, chain.states):
                m = info.room - (state[-1] - 1) if state[0] == "S" else places(stages, state[1], state[-1], info.room)
                seen.extend((x, state, a, num(pa)) for a, pa in _admissions(info, batch, m))
            admitted = ctx.fsum([x * pa * a for x, _, a, pa in seen])
        else:
            seen = [(x, state, k, num(pk / l1)) for x, state in zip(pi, chain.states) for k, pk in info.pmf.items()]
            admitted = num(1)

        def initial(sojourn):
            out: dict = {}
            for x, state, k, pk in seen:
                for i in range(1, k + 1):
                    p = x * pk / admitted
                    if state[0] == "S":
                        _, ph, n = state
                        add(out, ("S", ph, n - 1 + i - 1), p)
                        continue
                    _, j, ph, done, n = state
                    s = stages[j]
                    a = n + i - 1
                    if s.kind is StageKind.INTERRUPT:
                        serve(out, a - 1, p, sojourn)  # its arrival starts service at once
                    elif s.kind is StageKind.WAIT:
                        enter(out, j, 0, a, n + k, p, sojourn)
                    else:
                        add(out, ("I", j, ph, done, a, n + k if finite else min(n + k, top)), p)
            zero = out.pop(None, num(0))
            return out, zero

        def moves(state, sojourn):
            """{next state (None: absorbed): rate} of the transient chain."""
            out: dict = {}
            if state[0] == "S":
                _, ph, a = state
                for q, rate in enumerate(T[ph]):
                    if q != ph and rate:
                        add(out, ("S", q, a), num(rate))
                if exits[ph]:
                    if a < (0 if sojourn else 1):
                        add(out, None, num(exits[ph]))
                    else:
                        serve(out, a - 1, num(exits[ph]), sojourn)
                return out
            _, i, ph, done, a, n = state
            stage = stages[i]
            if finite or n < top:  # a later batch: only the count moves (it is behind the tagged customer)
                for k, pk in (jumps[i, n] if finite else jumps[n]):
                    if not pk:
                        continue
                    rate = lam * num(pk)
                    if stage.kind is StageKind.WAIT:
                        enter(out, i, 0, a, n + k, rate, sojourn)
                    else:
                        add(out, ("I", i, ph, done, a, n + k), rate)
            if not stage.timed:
                return out
            law = info.laws[i]
            for q, rate in enumerate(law[1][ph]):
                if q != ph and rate:
                    add(out, ("I", i, q, done, a, n), num(rate))
            if law[2][ph]:
                if stage.kind is StageKind.REPEAT:
                    d = done + 1 if stage.most is not None else 0
                    j, d = next_after_period(stages, i, n, d)
                else:
                    j, d = i + 1, 0
                enter(out, j, d, a, n, num(law[2][ph]), sojourn)
            return out

        def transient(sojourn):
            v, zero = initial(sojourn)
            states, index, rows = list(v), {}, []
            for st in states:
                index[st] = len(index)
            k = 0
            while k < len(states):  # the transient states reachable from the initial ones, with their moves
                row = list(moves(states[k], sojourn).items())
                for target, _ in row:
                    if target is not None and target not in index:
                        index[target] = len(states)
                        states.append(target)
                rows.append(row)
                k += 1
            vec = [num(0)] * len(states)
            for st, p in v.items():
                vec[index[st]] = p
            return states, index, rows, vec, zero

        def tails(states, index, rows, vec):
            if not times:
                return []
            out = [-ctx.fsum([r for _, r in row]) for row in rows]
            lam_u = max(-o for o in out)
            P = [[(index[t], r / lam_u) for t, r in row if t is not None] for row in rows]
            stay = [1 + o / lam_u for o in out]
            eps = mpmath.mpf(10) ** -(digits + 5)
            xs = [lam_u * num(Fraction(t)) for t in times]
            big = max(xs)
            sums, cur, m, left, weight = [], list(vec), 0, mpmath.mpf(1), mpmath.exp(-big)
            while True:  # the powers v P^m 1 once, up to where the largest time's Poisson weights are spent
                sums.append(ctx.fsum(cur))
                left -= weight
                if left < eps and m > big:
                    break
                nxt = [c * st for c, st in zip(cur, stay)]
                for a_, row in enumerate(P):
                    if cur[a_]:
                        for b_, r in row:
                            nxt[b_] += cur[a_] * r
                cur, m = nxt, m + 1
                weight = weight * big / m
            values = []
            for x in xs:
                w, total = mpmath.exp(-x), []
                for j, s_ in enumerate(sums):
                    total.append(w * s_)
                    w = w * x / (j + 1)
                values.append(ctx.fsum(total))
            return values

        def moment_values(states, index, rows, vec):
            """E[T^j] = j! v m_j, (-Q) m_j = m_{j-1} (m_0 = 1), solved level by level of the customers ahead."""
            if not moments:
                return []
            levels_of: dict = {}
            for st in states:
                levels_of.setdefault(st[-1] if st[0] == "S" else st[4], []).append(st)
            solved = [dict() for _ in range(moments + 1)]
            for st in states:
                solved[0][st] = num(1)
            inverses: dict = {}
            for a in sorted(levels_of):
                group = levels_of[a]
                local = {st: j for j, st in enumerate(group)}
                key = tuple(st[:-1] if st[0] == "S" else st[:4] + st[5:] for st in group)
                inv = inverses.get(key)
                if inv is None:
                    M = mpmath.zeros(len(group))
                    for j, st in enumerate(group):
                        for target, r in rows[index[st]]:
                            M[j, j] += r
                            if target is not None and target in local:
                                M[j, local[target]] -= r
                    inv = inverses[key] = mpmath.inverse(M)
                for order in range(1, moments + 1):
                    rhs = []
                    for st in group:
                        # (-Q) m = m_{order-1}: the exits to lower levels carry their solved values
                        r_ = solved[order - 1][st] + ctx.fsum([r * solved[order][t] for t, r in rows[index[st]]
                                                                if t is not None and t not in local])
                        rhs.append(r_)
                    x = inv * mpmath.matrix(rhs)
                    for j, st in enumerate(group):
                        solved[order][st] = x[j]
            out = []
            for order in range(1, moments + 1):
                out.append(mpmath.factorial(order) * ctx.fsum([p * solved[order][st] for st, p in zip(states, vec)
                                                               if p]))
            return out

        wait_chain = transient(False)
        sojourn_chain = transient(True)
        return TaggedWait(tails(*wait_chain[:4]), tails(*sojourn_chain[:4]), wait_chain[4], levels,
                          moment_values(*wait_chain[:4]), moment_values(*sojourn_chain[:4]))
