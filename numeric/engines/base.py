"""The engine protocol of the precision policy."""

from __future__ import annotations

__all__ = ["Engine", "Trouble"]


class Trouble(Exception):
    """Raised by an engine in float64 when the result cannot be trusted (the message says why);
    the precision policy then recomputes with mpmath."""


class Engine:
    """What :func:`qderive.numeric.precision.evaluate` needs from a model's engine.

    ``compute(model, ctx, **options)`` returns ``{measure key: value}`` (context numbers,
    lists, ints) inside ``with ctx:``. ``confirm`` says whether an mpmath result must be
    confirmed by a second, higher precision (an estimate, not an a-priori bound);
    ``guard_digits(model)`` is the a-priori number of digits the algorithm may lose;
    ``float64_trouble(model, values)`` the engine's own test of a float64 result (None: fine).
    ``exact`` True when ``compute`` returns exact values (then every precision is exact).

    What it computes is declared (:mod:`qderive.symbolic.capabilities`): ``rules``, predicates over the model's
    fields that it refuses, and/or :meth:`supports` overridden for what rules cannot say; the precision policy
    asks it before any work.
    """

    confirm: bool = False
    #: :class:`~qderive.symbolic.capabilities.Rule` objects: field values this engine does not compute
    rules: tuple = ()
    #: ``{field: why}``: the fields the engine's result does not depend on, and why (none: it reads every field)
    independent: dict = {}

    @classmethod
    def supports(cls, model, asked=frozenset()):
        """None when the engine computes ``model``; else a Refusal naming the field (default: its ``rules``)."""
        from ...symbolic.capabilities import supports

        return supports(cls.rules, model, asked)

    def compute(self, model, ctx, **options) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def guard_digits(self, model) -> int:
        return 0

    def float64_trouble(self, model, values) -> str | None:
        return None

    def notes(self, model, values) -> list[str]:
        """Notes for the user that do not depend on the precision (a threshold that does not bind)."""
        return []

    def is_exact(self, model) -> bool:
        return False

    def escalation_budget(self, model):
        """(limit name, size, cost) when recomputing this model with mpmath is expensive, else None.

        When ``size`` exceeds the limit and the float64 result only underflows, the policy keeps it
        and says so in a note instead of spending minutes; other trouble raises BudgetError.
        """
        return None
