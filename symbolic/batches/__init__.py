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

import importlib
import inspect
import pkgutil

from .base import BatchLaw

__all__ = ["BatchLaw"]

for _info in pkgutil.iter_modules(__path__):
    if _info.name != "base":
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _name in getattr(_module, "__all__", ()):
            _obj = getattr(_module, _name)
            globals()[_name] = _obj
            if inspect.isclass(_obj) and issubclass(_obj, BatchLaw):
                __all__.append(_name)
__all__ = sorted(set(__all__))
del _info, _module, _name, _obj


def parse_batch_law(text: str, what: str = "batch") -> BatchLaw:
    """A batch law from ``kind:key=value,...`` (see :meth:`BatchLaw.help_text`)."""
    return BatchLaw.parse(text, what)


__all__.append("parse_batch_law")
