"""The errors qderive raises, public as :mod:`qderive.errors`.

Every error a user can provoke is one of three kinds, and each says what to do:

* :class:`ParameterError` -- bad input: a value violates its constraint. It names the
  parameter and the constraint (``mean = 0: must be > 0``); the command line adds the
  option it came from (``--vacation exp:mean=0: mean must be > 0``).
* :class:`NumericalError` -- a computation that the precision policy could not cure
  (escalation to the largest allowed working precision did not stabilise the result).
* :class:`BudgetError` -- a size or time limit was reached; it names the limit, its value
  and how to raise it (``--limit capacity=...`` on the command line, ``qd.limits(...)``
  in Python).

All three derive from :class:`QderiveError`; :class:`ParameterError` and
:class:`BudgetError` are also :class:`ValueError` (so ``except ValueError`` keeps working).

>>> err = ParameterError("mean", "must be > 0", 0)
>>> str(err)
'mean = 0: must be > 0'
>>> str(err.within("--vacation exp:mean=0"))
'--vacation exp:mean=0: mean must be > 0'
"""

from __future__ import annotations

__all__ = ["QderiveError", "ParameterError", "NumericalError", "BudgetError"]


class QderiveError(Exception):
    """Base class of every error qderive raises on purpose."""


class ParameterError(QderiveError, ValueError):
    """A parameter violates its constraint.

    ``ParameterError(name, constraint, value)`` formats as ``name = value: constraint``;
    ``ParameterError(message)`` carries a free-form message that already names the
    parameter. :meth:`within` adds the context the value came from (a command-line
    option, a law specification), innermost last.
    """

    def __init__(self, name: str, constraint: str | None = None, value=None, *, context: tuple = ()):
        self.name = name
        self.constraint = constraint
        self.value = value
        self.context = tuple(context)
        super().__init__(str(self))

    def _core(self, with_value: bool) -> str:
        if self.constraint is None:
            return self.name
        if with_value and self.value is not None:
            return f"{self.name} = {_show(self.value)}: {self.constraint}"
        return f"{self.name} {self.constraint}"

    def __str__(self) -> str:
        if not self.context:
            return self._core(True)
        return ": ".join(self.context) + ": " + self._core(False)

    def within(self, where: str) -> "ParameterError":
        """The same error seen from ``where`` (e.g. ``"--vacation exp:mean=0"``); the outermost context first."""
        return ParameterError(self.name, self.constraint, self.value, context=(where, *self.context))

    def __reduce__(self):  # picklable across process pools
        return (_rebuild_parameter_error, (self.name, self.constraint, self.value, self.context))


def _rebuild_parameter_error(name, constraint, value, context):
    return ParameterError(name, constraint, value, context=context)


class NumericalError(QderiveError, ArithmeticError):
    """A result could not be established to the requested accuracy, even after escalation."""


class BudgetError(QderiveError, ValueError):
    """A size or time limit was reached.

    ``limit`` is the name of the limit (as in ``--limit NAME=VALUE``), ``value`` what was
    asked for, ``allowed`` the current limit, ``why`` what the limit protects against.
    """

    def __init__(self, limit: str, value, allowed, why: str = ""):
        self.limit, self.value, self.allowed, self.why = limit, value, allowed, why
        super().__init__(str(self))

    def __str__(self) -> str:
        why = f" ({self.why})" if self.why else ""
        return (f"{self.limit} = {_show(self.value)} exceeds the limit {_show(self.allowed)}{why}; "
                f"raise it with --limit {self.limit}={_show(self.value)} (Python: qderive.limits({self.limit.replace('-', '_')}=...))")

    def __reduce__(self):
        return (BudgetError, (self.limit, self.value, self.allowed, self.why))


def _show(value) -> str:
    """A short display of a parameter value (exact fractions as p/q, long ones abbreviated)."""
    text = str(value)
    return text if len(text) <= 60 else text[:28] + "..." + text[-28:]
