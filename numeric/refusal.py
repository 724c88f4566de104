"""A consumer's refusal of a model: the option at fault and the reason (what its ``supports(model)`` returns).

The engine of ``sip-retransmission`` (:func:`qderive.numeric.engines.sip.supports`) and its simulator
(:func:`qderive.numeric.simulation.sip.supports`) declare what they compute with it: None, or a :class:`Refusal`
whose :meth:`~Refusal.error` is the one-line error of the command line.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..symbolic.errors import ParameterError

__all__ = ["Refusal", "limit_refusal"]


@dataclass(frozen=True)
class Refusal:
    """Why a consumer does not compute a model: the option at fault, the reason, the value (None: not shown)."""

    option: str
    reason: str
    value: object = None

    def error(self) -> ParameterError:
        """The one-line error of the command line (``--option = value: reason``)."""
        return ParameterError(self.option, self.reason or None, self.value)

    def for_model(self, model):
        """This refusal in the capability protocol's terms (:class:`qderive.symbolic.capabilities.Refusal`): the
        model field behind the option, and the reason."""
        from ..symbolic.capabilities import Refusal as FieldRefusal
        from ..symbolic.capabilities import field_of_option

        return FieldRefusal(field_of_option(type(model), self.option), self.reason)

    def __str__(self) -> str:
        return str(self.error())


def limit_refusal(option: str, limit: str, value, why: str) -> Refusal | None:
    """The size limit ``limit`` (:mod:`qderive.symbolic.limits`) as a declaration: None when ``value`` is within it,
    else the refusal of ``option`` with the limit's own message (its value and how to raise it)."""
    from qderive.symbolic import limits

    try:
        limits.check(limit, value, why)
    except ParameterError as err:
        return Refusal(option, err.constraint, err.value)
    return None
