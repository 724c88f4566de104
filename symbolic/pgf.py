"""PGF algebra: exact truncated power series, the truncation operator, moments at z = 1.

* :class:`Series` — a truncated power series with exact SymPy coefficients and the
  operations a queueing PGF needs (``+``, ``-``, ``*``, ``/``, ``exp``, real powers, composition
  with an undefined function by derivative substitution). Every operation is an
  O(n^2) coefficient recurrence over the exact coefficients (never
  ``sympy.series`` to high order: STYLE.md measured 0.10 s against > 210 s).
* :func:`series` — the Taylor coefficients of an expression in ``z`` about a point.
* :func:`truncate` — the operator ``[Phi(z)]_n = sum_{j<n} phi_j z^j`` of
  ``docs/theory/chapter2.md`` section 2 (Statement 1, Theorem 1.2).
* :func:`derivatives_at` — ``F(z0), F'(z0), ..., F^{(k)}(z0)`` of a quotient with a
  removable 0/0 at ``z0`` (e.g. the factorial moments of P(z) at z = 1, (5)-(7)).

>>> import sympy as sp
>>> z = sp.Symbol("z")
>>> series(sp.exp(z) / (1 - z), z, 0, 4).coeffs
[1, 2, 5/2, 8/3]
>>> truncate(1 / (1 - z / 2), z, 3)
z**2/4 + z/2 + 1
>>> derivatives_at((1 - z**3) / (1 - z), z, 1, 2)
[3, 3, 2]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

__all__ = ["Series", "series", "truncate", "derivatives_at", "is_zero"]


def is_zero(expr: sp.Expr) -> bool:
    """Exact zero test of a coefficient: ``cancel`` first, ``simplify`` as a fallback."""
    if expr == 0:
        return True
    c = sp.cancel(sp.together(expr))
    if c == 0:
        return True
    if c.is_Rational:  # an exact rational after cancel, and not 0 (no nsimplify: PSLQ on a rational costs ~10 ms)
        return False
    return sp.simplify(c) == 0


def _clean(c: sp.Expr) -> sp.Expr:
    """Normal form of a coefficient: expanded (cheap, and exact zero shows as 0)."""
    return sp.expand(c)


@dataclass(frozen=True)
class Series:
    """Truncated power series sum_{k<n} c_k t^k with exact coefficients."""

    coeffs: list

    @property
    def order(self) -> int:
        return len(self.coeffs)

    @classmethod
    def constant(cls, c, n: int) -> "Series":
        return cls([c] + [sp.Integer(0)] * (n - 1))

    @classmethod
    def variable(cls, z0, n: int) -> "Series":
        """The series of z = z0 + t."""
        return cls(([z0, sp.Integer(1)] + [sp.Integer(0)] * n)[:n])

    def __add__(self, other: "Series") -> "Series":
        return Series([_clean(a + b) for a, b in zip(self.coeffs, other.coeffs)])

    def __sub__(self, other: "Series") -> "Series":
        return Series([_clean(a - b) for a, b in zip(self.coeffs, other.coeffs)])

    def __neg__(self) -> "Series":
        return Series([-a for a in self.coeffs])

    def __mul__(self, other: "Series") -> "Series":
        n = min(self.order, other.order)
        a, b = self.coeffs, other.coeffs
        return Series([_clean(sp.Add(*[a[i] * b[k - i] for i in range(k + 1)])) for k in range(n)])

    def valuation(self) -> int:
        """Index of the first exactly nonzero coefficient (order if all vanish)."""
        for k, c in enumerate(self.coeffs):
            if not is_zero(c):
                return k
        return self.order

    def __truediv__(self, other: "Series") -> "Series":
        """Quotient; a common factor t^m (removable 0/0) is cancelled, losing m orders."""
        m = other.valuation()
        if m == other.order:
            raise ZeroDivisionError("division by a series that vanishes to the working order")
        for k in range(m):
            if not is_zero(self.coeffs[k]):
                raise ZeroDivisionError("the quotient has a pole at the expansion point")
        a, b = self.coeffs[m:], other.coeffs[m:]
        n = min(len(a), len(b))
        out: list = []
        for k in range(n):
            s = a[k] - sp.Add(*[out[i] * b[k - i] for i in range(k)])
            out.append(sp.cancel(s / b[0]) if (s.free_symbols or b[0].free_symbols) else sp.expand(s / b[0]))
        return Series(out)

    def exp(self) -> "Series":
        """exp(F): f_0 = e^{c_0}, k f_k = sum_{j=1}^{k} j c_j f_{k-j}  (from F' exp F)."""
        c = self.coeffs
        out = [sp.exp(c[0])]
        for k in range(1, self.order):
            out.append(_clean(sp.Add(*[j * c[j] * out[k - j] for j in range(1, k + 1)]) / k))
        return Series(out)

    def power(self, alpha) -> "Series":
        """F^alpha for c_0 != 0: c_0 k f_k = sum_{j=1}^{k} (alpha j - (k - j)) c_j f_{k-j}  (J. C. P. Miller)."""
        c = self.coeffs
        if is_zero(c[0]):
            if sp.Integer(alpha) == alpha and alpha >= 0:
                out = Series.constant(sp.Integer(1), self.order)
                for _ in range(int(alpha)):
                    out = out * self
                return out
            raise ZeroDivisionError("power of a series with zero constant term")
        out = [c[0] ** alpha]
        for k in range(1, self.order):
            s = sp.Add(*[(alpha * j - (k - j)) * c[j] * out[k - j] for j in range(1, k + 1)])
            out.append(_clean(s / (k * c[0])))
        return Series(out)

    def compose_function(self, derivative_at: Callable[[int, sp.Expr], sp.Expr]) -> "Series":
        """f(F) for an analytic f given by ``derivative_at(k, c0) = f^{(k)}(c0)``.

        f(c0 + h) = sum_k f^{(k)}(c0)/k! h^k with h = F - c0 (Faa di Bruno by series powers).
        """
        n = self.order
        h = Series([sp.Integer(0)] + self.coeffs[1:])
        out = Series.constant(derivative_at(0, self.coeffs[0]), n)
        hk = Series.constant(sp.Integer(1), n)
        for k in range(1, n):
            hk = hk * h
            out = out + Series([derivative_at(k, self.coeffs[0]) / sp.factorial(k) * c for c in hk.coeffs])
        return out

    def as_expr(self, t: sp.Symbol) -> sp.Expr:
        return sp.Add(*[c * t**k for k, c in enumerate(self.coeffs)])


def series(expr: sp.Expr, z: sp.Symbol, z0, n: int, substitute: Callable[[sp.Expr], sp.Expr] | None = None) -> Series:
    """Taylor coefficients of ``expr`` in ``z`` about ``z0`` to order n-1, exactly.

    Walks the expression tree: sums, products, powers, ``exp`` and applied functions
    (an undefined LST or PGF is expanded through its derivatives at the inner point:
    ``Subs(Derivative(f(x), x, k), x, c0)`` objects, which a general law then maps to
    its moments). A removable singularity (0/0) is cancelled by :meth:`Series.__truediv__`;
    such a quotient loses orders, so ask for a few more than you need.
    ``substitute`` is applied to every constant and to every derivative value as soon
    as it appears (e.g. ``GeneralTime.substitute_moments``), which keeps coefficients small.
    """
    z0 = sp.Integer(z0) if isinstance(z0, int) else z0
    sub = substitute if substitute is not None else (lambda e: e)

    def walk(e: sp.Expr) -> Series:
        if not e.has(z):
            return Series.constant(sub(e), n)
        if e == z:
            return Series.variable(z0, n)
        if e.is_Add:
            parts = [walk(a) for a in e.args]
            out = parts[0]
            for p in parts[1:]:
                out = out + p
            return out
        if e.is_Mul:
            num = [a for a in e.args if not (a.is_Pow and a.exp.is_negative)]
            den = [a.base ** (-a.exp) for a in e.args if a.is_Pow and a.exp.is_negative]
            out = Series.constant(sp.Integer(1), n)
            for a in num:
                out = out * walk(a)
            for d in den:
                out = out / walk(d)
            return out
        if e.is_Pow:
            base, ex = e.args
            if ex.has(z):
                return walk(sp.exp(ex * sp.log(base)))
            if ex.is_Integer and ex < 0:
                return Series.constant(sp.Integer(1), n) / walk(base ** (-ex))
            return walk(base).power(ex)
        if isinstance(e, sp.exp):
            return walk(e.args[0]).exp()
        if isinstance(e, sp.core.function.AppliedUndef) and len(e.args) == 1:
            inner = walk(e.args[0])
            f = e.func
            x = sp.Dummy("x")

            def deriv(k, c0):
                return sub(f(c0) if k == 0 else sp.Subs(sp.Derivative(f(x), (x, k)), x, c0))

            return inner.compose_function(deriv)
        # Fallback: differentiate (rare, low order only).
        coeffs = []
        d = e
        for k in range(n):
            coeffs.append(sp.simplify(d.subs(z, z0)) / sp.factorial(k))
            d = sp.diff(d, z)
        return Series(coeffs)

    return walk(expr)


def truncate(expr: sp.Expr, z: sp.Symbol, n: int) -> sp.Expr:
    """[Phi(z)]_n = sum_{j=0}^{n-1} phi_j z^j: the first n Taylor coefficients at 0.

    ``docs/theory/chapter2.md`` section 2: the index form is authoritative.
    """
    return series(expr, z, 0, n).as_expr(z)


def derivatives_at(expr: sp.Expr, z: sp.Symbol, z0, k: int, substitute: Callable[[sp.Expr], sp.Expr] | None = None):
    """``[F(z0), F'(z0), ..., F^{(k)}(z0)]`` for F with a removable 0/0 at ``z0``.

    Numerator and denominator are expanded separately (with ``substitute`` applied to
    each coefficient, e.g. mapping derivatives of a general LST to moments), the common
    power of (z - z0) cancels, and the quotient's coefficients times j! are returned.
    """
    num, den = sp.fraction(sp.together(expr))
    extra = 2  # typical order of the removable zero of a queueing PGF at z = 1
    while True:
        order = k + 1 + extra
        sn, sd = series(num, z, z0, order, substitute), series(den, z, z0, order, substitute)
        q = sn / sd
        if q.order >= k + 1:
            break
        extra = order - q.order + extra
        if extra > 12:
            raise ValueError("the 0/0 at the expansion point is of order > 12")
    return [sp.factor(sp.factorial(j) * q.coeffs[j]) if q.coeffs[j].free_symbols else sp.factorial(j) * q.coeffs[j]
            for j in range(k + 1)]
