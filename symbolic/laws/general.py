"""A general time law for symbolic derivations: an undefined LST with moment symbols."""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import TimeLaw

__all__ = ["GeneralTime"]


@dataclass(frozen=True)
class GeneralTime(TimeLaw):
    """``GeneralTime("beta", "b")``: LST beta(s) and moments b1, b2, ... (the thesis's service law B);
    ``GeneralTime("varphi", "f")`` is the vacation law F with f1, f2, ....

    Derivatives of beta at 0 are replaced by moments with :meth:`substitute_moments`.
    Not on the command line and not numeric: it exists for the general-law derivations.
    """

    function_name: str = "beta"
    moment_prefix: str = "b"
    _fn: object = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self):
        import sympy as sp

        object.__setattr__(self, "_fn", sp.Function(self.function_name))

    def lst(self, s):
        return self._fn(s)

    def _moment(self, n):
        import sympy as sp

        return sp.Symbol(f"{self.moment_prefix}{n}", positive=True)

    def substitute_moments(self, expr):
        """Replace beta(0) by 1 and beta^{(n)}(0) by (-1)^n b_n in ``expr``."""
        import sympy as sp

        fn = self._fn

        def is_derivative_at_zero(e):
            return (isinstance(e, sp.Subs) and isinstance(e.expr, sp.Derivative) and e.expr.expr.func == fn
                    and len(e.point) == 1 and e.point[0] == 0)

        def moment_of(e):
            n = sum(count for _, count in e.expr.variable_count)
            return (-1) ** n * self.moment(n)

        expr = expr.replace(is_derivative_at_zero, moment_of)
        expr = expr.replace(
            lambda e: isinstance(e, sp.Derivative) and e.expr.func == fn and e.expr.args[0] == 0,
            lambda e: (-1) ** e.derivative_count * self.moment(e.derivative_count),
        )
        return expr.subs(fn(0), 1)
