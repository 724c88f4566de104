"""Arithmetic backends: one algorithm, float64 (numpy) or any precision (mpmath).

Numeric algorithms in ``qderive.numeric`` are written once against a
:class:`Backend` (the idea of mpmath's ``ctx``): vectors are numpy arrays,
``float64`` for :data:`FLOAT64` and ``object`` arrays of ``mpf`` for
:func:`mp_backend`, so elementwise products, ``np.dot`` and ``np.cumsum`` run
unchanged in both. Scalar special functions go through ``backend.ctx``
(``mpmath.fp`` or ``mpmath.mp``). Precision is scoped: enter the backend
(``with bk:``) and mpmath works at ``bk.dps`` digits; nothing sets ``mp.dps``
globally.

>>> from fractions import Fraction
>>> import sympy as sp
>>> bk = mp_backend(30)
>>> with bk:
...     print(bk.num(sp.Rational(1, 3)))
0.333333333333333333333333333333
>>> FLOAT64.num(sp.Rational(1, 4))
0.25
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy as sp

__all__ = ["Backend", "FLOAT64", "mp_backend", "backend_for"]


@dataclass(frozen=True)
class Backend:
    """A number system: ``float64`` (numpy + ``mpmath.fp``) or mpmath at ``dps`` digits."""

    name: str
    dps: int
    ctx: object = field(repr=False, compare=False)
    dtype: object = field(repr=False, compare=False)
    _stack: list = field(default_factory=list, repr=False, compare=False)

    @property
    def is_float64(self) -> bool:
        return self.dtype is np.float64

    @property
    def eps(self):
        """Unit roundoff of this backend."""
        return np.finfo(np.float64).eps if self.is_float64 else mpmath.mpf(2) ** (-self.ctx.prec)

    # -- precision scope -----------------------------------------------------------
    def __enter__(self):
        cm = contextlib.nullcontext() if self.is_float64 else mpmath.workdps(self.dps)
        cm.__enter__()
        self._stack.append(cm)
        return self

    def __exit__(self, *exc):
        self._stack.pop().__exit__(*exc)
        return False

    # -- conversion ----------------------------------------------------------------
    def num(self, value):
        """An exact SymPy number (or int) as a backend scalar, rounded once."""
        if isinstance(value, int):
            return float(value) if self.is_float64 else mpmath.mpf(value)
        value = sp.S(value) if not isinstance(value, sp.Basic) else value
        if value.free_symbols:
            raise ValueError(f"cannot evaluate {value}: it has free symbols {sorted(map(str, value.free_symbols))}")
        if isinstance(value, sp.Rational):
            p, q = int(value.p), int(value.q)
            return p / q if self.is_float64 else mpmath.mpf(p) / q
        digits = 20 if self.is_float64 else self.dps + 10
        approx = sp.N(value, digits)
        if not approx.is_real:
            raise ValueError(f"{value} is not real")
        return float(approx) if self.is_float64 else mpmath.mpf(approx._mpf_)

    def zeros(self, n: int) -> np.ndarray:
        if self.is_float64:
            return np.zeros(n)
        z = np.empty(n, dtype=object)
        z[:] = mpmath.mpf(0)
        return z

    def array(self, values) -> np.ndarray:
        if self.is_float64:
            return np.asarray(values, dtype=np.float64)
        a = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            a[i] = v if isinstance(v, mpmath.mpf) else mpmath.mpf(v)
        return a

    def fsum(self, values):
        """Sum of a vector (mpmath's exact-rounding fsum in mp mode)."""
        if self.is_float64:
            return float(np.sum(values))
        return mpmath.fsum(values)

    def dot(self, a, b):
        if self.is_float64:
            return float(np.dot(a, b))
        return mpmath.fdot(a, b)

    def to_float(self, x) -> float:
        return float(x)


FLOAT64 = Backend("float64", 15, mpmath.fp, np.float64)


def mp_backend(dps: int) -> Backend:
    """An mpmath backend working at ``dps`` significant decimal digits."""
    if dps < 1:
        raise ValueError(f"digits = {dps}: must be >= 1")
    return Backend(f"mp{dps}", int(dps), mpmath.mp, object)


def backend_for(digits: int | None) -> Backend:
    """FLOAT64 for ``None``, else an mpmath backend with ``digits`` digits."""
    return FLOAT64 if digits is None else mp_backend(digits)
