"""Batch-size laws: one class per law, registered by its ``spec`` name.

Every module of this package is imported here, so a new batch law is one class in
one new file (subclass :class:`BatchLaw` with ``spec = "name"``).

>>> from fractions import Fraction
>>> G = Geometric(5)
>>> G.pmf(1), G.moment(2), G.factorial_moment(2)
(Fraction(1, 5), Fraction(45, 1), Fraction(40, 1))
>>> BatchLaw.parse("pmf:1=0.5,3=0.5").moment(1)
Fraction(2, 1)
"""

from __future__ import annotations

from ..laws.base import import_family
from .base import BatchLaw

__all__ = ["BatchLaw"]

__all__ = sorted(set(__all__ + import_family(__name__, __path__, BatchLaw, globals())))


def parse_batch_law(text: str, what: str = "batch") -> BatchLaw:
    """A batch law from ``kind:key=value,...`` (see :meth:`BatchLaw.help_text`)."""
    return BatchLaw.parse(text, what)


__all__.append("parse_batch_law")
