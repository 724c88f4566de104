"""A general batch law for symbolic derivations: an undefined PGF with moment symbols."""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import BatchLaw

__all__ = ["GeneralBatch"]


@dataclass(frozen=True)
class GeneralBatch(BatchLaw):
    """An undefined PGF ``L(z)`` with raw-moment symbols l1, l2, ....

    Derivatives of L at z = 1 become factorial moments written in the raw moments
    (``L'(1) = l1``, ``L''(1) = l2 - l1``, ...) by :meth:`substitute_moments`.
    """

    function_name: str = "L"
    moment_prefix: str = "l"
    _fn: object = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self):
        import sympy as sp

        object.__setattr__(self, "_fn", sp.Function(self.function_name))

    @property
    def mean(self):
        """l_1 = E X."""
        return self.moment(1)

    def pgf(self, z):
        return self._fn(z)

    def moment(self, n):
        import sympy as sp

        return sp.Symbol(f"{self.moment_prefix}{n}", positive=True) if n else sp.Integer(1)

    def _factorial_moment(self, n):
        import sympy as sp
        from sympy.functions.combinatorial.numbers import stirling

        return sp.expand(sp.Add(*[stirling(n, k, kind=1, signed=True) * self.moment(k) for k in range(1, n + 1)]))

    def substitute_moments(self, expr):
        """Replace L(1) by 1 and L^{(n)}(1) by the n-th factorial moment."""
        import sympy as sp

        fn = self._fn

        def is_derivative_at_one(e):
            return (isinstance(e, sp.Subs) and isinstance(e.expr, sp.Derivative) and e.expr.expr.func == fn
                    and len(e.point) == 1 and e.point[0] == 1)

        expr = expr.replace(is_derivative_at_one,
                            lambda e: self.factorial_moment(sum(c for _, c in e.expr.variable_count)))
        expr = expr.replace(
            lambda e: isinstance(e, sp.Derivative) and e.expr.func == fn and e.expr.args[0] == 1,
            lambda e: self.factorial_moment(e.derivative_count),
        )
        return expr.subs(fn(1), 1)
