"""The idle passage as a state machine: the blocks' primitives recorded as stages (pure data).

The interpreter :class:`Machine` runs a model's blocks (:func:`~qderive.symbolic.blocks.base.passage`) and records
each primitive as a :class:`Stage`; :func:`machine` returns that tuple. It is the description *from the
definition* that two independent consumers read, each written once for every stage kind:

* the continuous-time Markov chain over phase-type laws (the numeric layer's block oracle), at 50 digits;
* the discrete-event simulator with general laws (the numeric layer's block simulator).

So a new block -- one class composing ``during``, ``interrupt``, ``wait`` and ``repeat`` -- gets its checking
chain and its simulation for free: nothing here or there names a block.

The stages run in order after a departure leaves the system empty (k = 0 present); k counts the customers
present, all waiting while the server does not serve. With the waiting room r (``None``: infinite):

``during(L)``
    a period of law L; a batch arriving finds r - k places and its admitted members join; at its end the next
    stage begins.
``interrupt(L)``
    a period of law L (the close-down): the first batch of which a member is admitted ends it and starts
    service at once (it finds r + 1 - k places, one member going straight into service); every later stage is
    skipped. If the period ends first, the next stage begins.
``wait(N)``
    no timer: skipped when k >= N; otherwise the server waits, available, until k >= N (the threshold counts
    admitted customers). A batch finds r - k places, or r + 1 - k when the wait is the last stage (its arrival
    starts service at once when it brings the count to N; with a later stage, e.g. a setup, it finds r - k).
``repeat(L, N, most)``
    periods of law L while k < N (checked on entering and at each period's end; a period in progress runs to
    its end), at most ``most`` of them (None: no bound); a batch finds r - k places.

When the last stage is done the first service of the busy period starts (:func:`resolve` gives the stage the
server is really in after the skips). Someone must be present then: k never decreases during the passage, so a
``wait`` or an unbounded ``repeat`` stage (threshold >= 1) guarantees it, and :func:`machine` refuses a passage
without one.

**Embedded epochs** (the key ``q0``/``qr`` of ``qderive eval``, the thesis's embedded chain generalised): every
service completion, and every end of a vacation (a ``during`` marked ``vacation=True``, every ``repeat``
period) *unless the server then waits* (the next stage really entered is a ``wait``: :func:`epoch_at_end`).
With N = 1, no setup and no close-down this is the thesis's chain (multiple vacations: every vacation end;
single vacations: the vacation ends that leave someone waiting; no vacations: service completions only).

>>> from fractions import Fraction as F
>>> from qderive.symbolic.laws import Exponential
>>> from qderive.symbolic.batches import Constant
>>> from qderive.symbolic.models.vacation import VacationQueue, VacationPolicy
>>> m = VacationQueue(F(1, 4), Constant(1), Exponential(1), Exponential(2), VacationPolicy.SINGLE,
...                   start_threshold=3, setup=Exponential(F(1, 2)))
>>> [(s.kind.value, s.threshold, s.vacation) for s in machine(m)]
[('during', None, True), ('wait', 3, False), ('during', None, False)]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import ParameterError
from ..laws.base import TimeLaw
from .base import passage
from .compose import blocks_of

__all__ = ["StageKind", "Stage", "Machine", "machine", "resolve", "epoch_at_end", "next_after_period", "places",
           "stuck_count", "refuse_stuck"]


class StageKind(enum.Enum):
    """The four primitives of an idle passage (module docstring)."""

    DURING = "during"
    INTERRUPT = "interrupt"
    WAIT = "wait"
    REPEAT = "repeat"


@dataclass(frozen=True)
class Stage:
    """One recorded primitive: ``kind``; ``law`` (None for ``wait``); ``threshold`` N (``wait``, ``repeat``);
    ``most`` (``repeat``: at most this many periods, None: unbounded); ``vacation`` (its ends are embedded
    epochs: ``during(..., vacation=True)`` and every ``repeat``)."""

    kind: StageKind
    law: TimeLaw | None = None
    threshold: int | None = None
    most: int | None = None
    vacation: bool = False

    @property
    def timed(self) -> bool:
        """True when the stage runs periods of its law (all but ``wait``)."""
        return self.kind is not StageKind.WAIT


class Machine:
    """The interpreter ``op`` of :func:`~qderive.symbolic.blocks.base.passage` that records the stages: the state
    is the tuple of stages so far (``start()`` -> (), each primitive appends one, ``finish`` returns it)."""

    def start(self):
        return ()

    def during(self, state, law, vacation=False):
        return state + (Stage(StageKind.DURING, law, vacation=bool(vacation)),)

    def interrupt(self, state, law):
        return state + (Stage(StageKind.INTERRUPT, law),)

    def wait(self, state, threshold):
        return state + (Stage(StageKind.WAIT, threshold=int(threshold)),)

    def repeat(self, state, law, threshold, most=None):
        return state + (Stage(StageKind.REPEAT, law, int(threshold), most, True),)

    def finish(self, state):
        return tuple(state)


def machine(model, blocks=None) -> tuple[Stage, ...]:
    """The stage tuple of ``model``'s idle passage (``blocks``: the blocks to run, default
    :func:`~qderive.symbolic.blocks.base.blocks_of` ``(model)``).

    Refused (ParameterError) when the passage cannot guarantee someone present at the first service: it needs a
    ``wait`` or an unbounded ``repeat`` stage (module docstring)."""
    stages = passage(blocks if blocks is not None else blocks_of(model), Machine())
    if not any(s.kind is StageKind.WAIT or (s.kind is StageKind.REPEAT and s.most is None) for s in stages):
        raise ParameterError("the idle passage has no wait or unbounded repeat stage: the first service could start "
                             "with nobody present")
    for s in stages:
        if s.threshold is not None and s.threshold < 1:
            raise ParameterError("start-threshold", "must be an integer >= 1", s.threshold)
        if s.most is not None and s.most < 1:
            raise ParameterError("repeat: at most", "must be an integer >= 1 (or none)", s.most)
    return stages


def resolve(stages, i: int, k: int, done: int = 0) -> tuple[int, int]:
    """(stage index, periods done) the server is really in on entering stage ``i`` with ``k`` present, ``done``
    periods of a ``repeat`` stage ``i`` already run: a ``wait`` with k >= N, a ``repeat`` with k >= N or its
    ``most`` periods done are skipped; ``len(stages)`` means the first service starts."""
    while i < len(stages):
        s = stages[i]
        if s.kind is StageKind.WAIT and k >= s.threshold:
            i, done = i + 1, 0
        elif s.kind is StageKind.REPEAT and (k >= s.threshold or (s.most is not None and done >= s.most)):
            i, done = i + 1, 0
        else:
            return i, done
    return i, 0


def epoch_at_end(stages, i: int, k: int, done: int) -> bool:
    """Whether the end of a period of stage ``i`` (``done`` periods of it run, this one included), leaving ``k``
    present, is an embedded epoch: the stage is a vacation and the server does not then wait (the stage it
    really enters, :func:`resolve`, is not a ``wait``)."""
    s = stages[i]
    if not s.vacation:
        return False
    if s.kind is StageKind.REPEAT:
        j, _ = resolve(stages, i, k, done)
    else:
        j, _ = resolve(stages, i + 1, k)
    return not (j < len(stages) and stages[j].kind is StageKind.WAIT)


def next_after_period(stages, i: int, k: int, done: int) -> tuple[int, int]:
    """(stage, periods done) after a period of stage ``i`` ends with ``k`` present (``done`` periods of it run,
    this one included): a ``repeat`` goes on while k < N (and fewer than ``most`` periods), any other timed stage
    hands over to the next."""
    if stages[i].kind is StageKind.REPEAT:
        return resolve(stages, i, k, done)
    return resolve(stages, i + 1, k)


def places(stages, i: int, k: int, room):
    """The places a batch finds in stage ``i`` with ``k`` present and waiting room ``room`` (None: infinite):
    r + 1 - k when its arrival starts service at once (an ``interrupt``; a ``wait`` that is the last stage), else
    r - k; None for an infinite room."""
    if room is None:
        return None
    s = stages[i]
    at_once = s.kind is StageKind.INTERRUPT or (s.kind is StageKind.WAIT and i == len(stages) - 1)
    return room + 1 - k if at_once else room - k


def places_below_threshold(stages, n: int, room: int) -> int:
    """The fewest places a batch finds while the count is N - 1 < N = ``n`` (whole admission refuses a larger one;
    :func:`places`): r - N + 1 in a period before the threshold is met (a vacation, a ``repeat``) or in a ``wait``
    a setup follows; r - N + 2 when the only stage holding customers below N is a ``wait`` that ends the passage
    (no vacation, no setup: the batch that meets N starts service at once and finds r + 1 - (N - 1) places; a
    close-down holds nobody). Stages after the last threshold stage (the setup) hold N or more. The engine's rule
    and the generated code's check of r both read it."""
    last = max(i for i, s in enumerate(stages) if s.threshold is not None)
    return min(places(stages, i, n - 1, room) for i, s in enumerate(stages[:last + 1])
               if s.kind is not StageKind.INTERRUPT)


def stuck_count(stages, room, sizes, whole: bool) -> tuple[int, int] | None:
    """(N, k): a start threshold N that can never be met once k < N are present, or None.

    Only whole admission in a finite room can get stuck (a partial batch always admits someone, and N <= r): k is
    reachable from an empty system by batches that fit (``sizes``: the batch sizes of positive probability up to
    r + 1), and from k no batch fits the places of a ``wait`` or ``repeat`` stage of threshold N > k
    (:func:`places`); the server would then wait (or take vacations) for ever."""
    if room is None or not whole:
        return None
    sizes = sorted(sizes)
    for i, s in enumerate(stages):
        if s.kind not in (StageKind.WAIT, StageKind.REPEAT):
            continue
        n = s.threshold
        seen, todo = {0}, [0]
        while todo:
            k = todo.pop()
            if not any(x <= places(stages, i, k, room) for x in sizes):
                return n, k
            for x in sizes:
                if k + x < n and x <= room - k and k + x not in seen:
                    seen.add(k + x)
                    todo.append(k + x)
    return None


def refuse_stuck(model, stages) -> None:
    """ParameterError naming ``--start-threshold`` when :func:`stuck_count` finds a threshold that ``model`` (its
    room, admission and batch law) can never meet: asked by the chain and the simulator before any work."""
    from ..models.vacation import Admission

    room = getattr(model, "capacity", None)
    whole = getattr(model, "admission", Admission.PARTIAL) is Admission.WHOLE
    if room is None or not whole:
        return
    sizes = [k for k in range(1, room + 2) if model.batch.pmf(k) > 0]
    found = stuck_count(stages, room, sizes, whole)
    if found is not None:
        n, k = found
        raise ParameterError("start-threshold", f"can never be met under whole admission: with {k} present no batch "
                             f"fits the room r = {room} and the count stays below N", n)
