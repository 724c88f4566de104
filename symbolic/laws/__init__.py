"""Time laws (service and vacation times): one class per law, registered by its ``spec`` name.

Every module of this package is imported here, so a new law is one class in one new
file: subclassing :class:`TimeLaw` with ``spec = "name"`` registers it for the command
line (``--service name:key=value,...``), the help texts, the simulator and codegen.
``__all__`` lists the base classes and every law class defined in the package.

>>> from fractions import Fraction
>>> B = Erlang(4, Fraction(3, 200))
>>> B.moment(1), B.moment(2)
(Fraction(3, 200), Fraction(9, 32000))
>>> TimeLaw.parse("erlang:k=4,mean=0.015") == B
True
"""

from __future__ import annotations

from .base import Law, TimeLaw, import_family, is_concrete

__all__ = ["Law", "TimeLaw", "is_concrete"]

__all__ = sorted(set(__all__ + import_family(__name__, __path__, TimeLaw, globals())))


def parse_time_law(text: str, what: str = "law") -> TimeLaw:
    """A time law from ``kind:key=value,...`` (see :meth:`TimeLaw.help_text`)."""
    return TimeLaw.parse(text, what)


__all__.append("parse_time_law")
