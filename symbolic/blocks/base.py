"""The start of a busy period as composed blocks: M[X]/G/1 with close-down, vacations, N-policy and setup.

After a departure leaves the system empty the server is idle (not serving) until the first service of the next
busy period starts. The *idle passage* is a sequence of blocks, each a stage of that period::

    [close-down C]  ->  start rule (no vacation | multiple vacations | single vacation, threshold N)  ->  [setup S]

Every block is written once as a composition of four primitives of an idle passage over the number present k:

``during(L)``
    a period of law L; batches arriving during it join (k grows by the customers A_L of the period);
``interrupt(L)``
    a period of law L that the first arriving batch ends, its members being served at once (the close-down:
    no later block, no setup);
``wait(N)``
    no timer: the server waits, available, until k >= N (at once when k >= N already);
``repeat(L, N, most)``
    periods of law L repeated while k < N at a period's end (at most ``most`` periods; multiple vacations).

A block is a class with one method, ``passage(op, state)``, calling these primitives on an interpreter ``op``.
The interpreters are written once each, for every block: the numeric layer's count vectors and factorial-moment
series (the first-service law Y, the expected time at each level of the idle period, the vacation ends), and the
state machine over phase-type laws from which the chain and the simulator's events are built. A rule that is not
built in (at most J vacations, ...) is one new class composed of the primitives: it gets every interpreter.

**The structure, derived once** (``docs/theory/blocks.md``). Let Y be the number present when the first service
of a busy period starts (arrivals during the setup included), A the customers arriving during one service
(PGF A(z) = B*(lambda (1 - X(z)))), X the batch size. The number left behind by a departure has the PGF

    Pi(z) (z - A(z)) = pi_0 A(z) (Y(z) - 1),        pi_0 = (1 - rho_bar) / E[Y]                        (B1)

(the embedded chain at departures, M/G/1 type; with Y = X it is the classic M[X]/G/1), and level crossing with
Poisson batches (a departure leaving k matches a customer arriving to find k ahead of it, batchmates included)
gives the time-stationary number in the system

    P(z) = Pi(z) l_1 (1 - z) / (1 - X(z)).                                                              (B2)

Fuhrmann-Cooper's decomposition follows: P(z) = P_std(z) zeta(z) / R(z) with P_std the classic M[X]/G/1,
zeta(z) = (1 - Y(z)) / (E[Y] (1 - z)) and R(z) = (1 - X(z)) / (l_1 (1 - z)) (the batchmates ahead). The
time-stationary law splits by the server's state: p_j = i_j + b_j, the idle part i_j = (1 - rho_bar) T_j / E[I]
(T_j the expected time at level j during one idle period I, E[I] = E[Y] / (lambda l_1)) and the busy part
b_j = rho_bar sum_i s_i e_{j-i}, s the number present at a service start (pi_j for j >= 1, pi_0 y_j) and e the
customers arriving during the elapsed part of a service (equilibrium law, e_m = u^B_m / b_1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["Block", "StartRule", "passage", "start_rule"]


@dataclass(frozen=True)
class Block:
    """One stage of the idle period (module docstring): ``passage(op, state)`` composes the primitives."""

    #: the stage's name in text (derivations, the support page)
    title = ""

    def passage(self, op, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def laws(self) -> tuple:
        """The time laws this block reads ((field name, law), ...): a consumer that cannot use one refuses it."""
        return ()


@dataclass(frozen=True)
class StartRule(Block):
    """What the server does from an empty system until the start condition holds (the middle block)."""

    threshold: int = 1

    #: the vacation policy this built-in rule implements (None: no vacations); rules register themselves by it
    policy = None
    _registry: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "policy" in cls.__dict__:
            StartRule._registry[cls.policy] = cls


def start_rule(model) -> StartRule:
    """The built-in start rule of a vacation model: its vacation policy (none without a vacation law) and its
    start threshold N."""
    policy = None if model.vacation is None else model.vacation_policy
    cls = StartRule._registry[policy]
    return cls(model.start_threshold) if policy is None else cls(model.start_threshold, model.vacation)


def passage(blocks, op):
    """Run the idle passage of ``blocks`` on the interpreter ``op``: ``op.finish(...)`` of the last state."""
    state = op.start()
    for block in blocks:
        state = block.passage(op, state)
    return op.finish(state)
