"""Arithmetic contexts: float64 (numpy) and mpmath at any precision, with one interface.

Numeric kernels (:mod:`qderive.numeric.kernels`) are written once against a context,
as mpmath's functions are written against ``ctx``. :data:`FLOAT64` is the kernels' own
float64 context; :func:`mp_context` gives an mpmath context with ``dps`` digits whose
vectors are numpy object arrays of ``mpf`` (so slicing, ``np.dot`` and ``np.cumsum``
run unchanged) and whose elementary functions act elementwise. Precision is scoped:
``with ctx:`` works at ``ctx.dps`` digits; nothing sets ``mp.dps`` globally.

Exact inputs (int, :class:`fractions.Fraction`) are converted by :meth:`num` with one
correct rounding (``from_rational``), never through ``float``.

>>> from fractions import Fraction
>>> ctx = mp_context(30)
>>> with ctx:
...     print(ctx.num(Fraction(1, 3)))
0.333333333333333333333333333333
>>> FLOAT64.num(Fraction(1, 4))
0.25
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
from mpmath.libmp import from_rational

from .kernels.context import FLOAT64, Float64Context

__all__ = ["FLOAT64", "Float64Context", "MPContext", "FractionContext", "FieldContext", "GmpyContext", "mp_context",
           "context_for"]

_exp = np.frompyfunc(mpmath.exp, 1, 1)
_log = np.frompyfunc(mpmath.log, 1, 1)
_log1p = np.frompyfunc(mpmath.log1p, 1, 1)
_expm1 = np.frompyfunc(mpmath.expm1, 1, 1)
_sqrt = np.frompyfunc(mpmath.sqrt, 1, 1)
_lgamma = np.frompyfunc(mpmath.loggamma, 1, 1)
_re = np.frompyfunc(mpmath.re, 1, 1)


try:
    import gmpy2 as _gmpy2
except ImportError:  # pragma: no cover - a dependency; mpmath alone is slower, not different
    _gmpy2 = None


class _Special(Exception):
    pass


def _to_mpfr(a):
    """An object array of mpf as gmpy2 mpfr numbers (exact: m 2^e, rounded to the context's precision);
    an object that occurs many times (the zeros of a table, the entries of a Toeplitz matrix) is converted once."""
    mul_2exp = _gmpy2.mul_2exp
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    seen: dict = {}
    native = type(_gmpy2.mpfr(0))
    for i, x in enumerate(a.reshape(-1).tolist()):
        y = seen.get(id(x))
        if y is None:
            if isinstance(x, native):  # already the twin's number (a table kept as such): exact as it is
                flat[i] = x
                continue
            if not hasattr(x, "_mpf_"):  # an exact number (int, Fraction): rounded once
                y = seen[id(x)] = _gmpy2.mpfr(_gmpy2.mpq(Fraction(x).numerator, Fraction(x).denominator))
                flat[i] = y
                continue
            sign, man, exp, bc = x._mpf_
            if not man and exp:
                raise _Special
            y = seen[id(x)] = mul_2exp(-man if sign else man, exp)
        flat[i] = y
    return out


#: mpfr copies of read-only arrays (the batch tables of a figure grid, multiplied again at every point)
_MPFR_CACHE: dict = {}


def _mpfr_operand(b, prec):
    """The mpfr copy of ``b``; for a view of a read-only array, a view of the cached copy of its owner."""
    owner = b.base if b.base is not None else b
    if not isinstance(owner, np.ndarray) or owner.flags.writeable or not owner.flags.c_contiguous or owner.size < 1024:
        return _to_mpfr(b)
    key = (id(owner), prec)
    hit = _MPFR_CACHE.get(key)
    if hit is None or hit[0] is not owner:
        if len(_MPFR_CACHE) >= 64:
            _MPFR_CACHE.pop(next(iter(_MPFR_CACHE)))
        hit = _MPFR_CACHE[key] = (owner, _to_mpfr(owner))
    converted = hit[1]
    offset = (b.__array_interface__["data"][0] - owner.__array_interface__["data"][0]) // b.itemsize
    return np.lib.stride_tricks.as_strided(converted.reshape(-1)[offset:], shape=b.shape, strides=b.strides)


def _from_mpfr(c, prec):
    """gmpy2 mpfr numbers back to mpf (exact at ``prec`` bits: one rounding, already done)."""
    make, from_man_exp = mpmath.mp.make_mpf, mpmath.libmp.from_man_exp
    out = np.empty(c.shape, dtype=object)
    flat = out.reshape(-1)
    for i, y in enumerate(c.reshape(-1).tolist()):
        man, exp = y.as_mantissa_exp()
        flat[i] = make(from_man_exp(int(man), int(exp), prec, "n"))
    return out


def _object_array(values, native, num):
    """An object vector of ``values``: numbers of the ``native`` type kept, the others converted by ``num``."""
    values = list(values)
    a = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        a[i] = v if isinstance(v, native) else num(v)
    return a


def _object_eye(ctx, n, one):
    e = ctx.zeros((n, n))
    for i in range(n):
        e[i, i] = one
    return e


class Scoped:
    """``with ctx:`` enters the context's precision scope (``_scope()``) and leaves it; nothing is set globally."""

    def __enter__(self):
        cm = self._scope()
        cm.__enter__()
        self._stack.append(cm)
        return self

    def __exit__(self, *exc):
        self._stack.pop().__exit__(*exc)
        return False


class MPContext(Scoped):
    """mpmath at ``dps`` significant digits; vectors are numpy object arrays of mpf."""

    is_float64 = False
    tiny = 0
    dtype = object

    def __init__(self, dps: int):
        if dps < 1:
            raise ValueError(f"digits = {dps}: must be >= 1")
        self.dps = int(dps)
        self.name = f"mp{self.dps}"
        self._stack: list = []

    def __repr__(self):
        return f"mp_context({self.dps})"

    def __eq__(self, other):
        return isinstance(other, MPContext) and other.dps == self.dps

    def __hash__(self):
        return hash(("mp", self.dps))

    @property
    def eps(self):
        return mpmath.mpf(2) ** (-mpmath.mp.prec)

    @property
    def huge(self):
        return mpmath.inf

    @property
    def pi(self):
        return +mpmath.pi

    def _scope(self):
        return mpmath.workdps(self.dps)

    def num(self, value):
        """An exact number as an mpf at the current precision, rounded once."""
        if isinstance(value, mpmath.mpf):
            return +value
        if isinstance(value, int):
            return mpmath.mpf(value)
        if isinstance(value, Fraction):
            return mpmath.mp.make_mpf(from_rational(value.numerator, value.denominator, mpmath.mp.prec, "n"))
        if isinstance(value, float):
            return mpmath.mpf(value)
        p, q = getattr(value, "p", None), getattr(value, "q", None)  # sympy.Rational
        if p is not None and q is not None:
            return mpmath.mp.make_mpf(from_rational(int(p), int(q), mpmath.mp.prec, "n"))
        raise TypeError(f"cannot convert {value!r} exactly: give an int or a Fraction")

    def zeros(self, shape):
        z = np.empty(shape, dtype=object)
        z.fill(mpmath.mpf(0))
        return z

    def array(self, values):
        return _object_array(values, mpmath.mpf, self.num)

    def arange(self, n):
        return self.array(range(n))

    def eye(self, n):
        return _object_eye(self, n, mpmath.mpf(1))

    @staticmethod
    def _elementwise(fn, vec, x):
        return vec(x) if isinstance(x, np.ndarray) else fn(x)

    def exp(self, x):
        return self._elementwise(mpmath.exp, _exp, x)

    def log(self, x):
        return self._elementwise(mpmath.log, _log, x)

    def log1p(self, x):
        return self._elementwise(mpmath.log1p, _log1p, x)

    def expm1(self, x):
        return self._elementwise(mpmath.expm1, _expm1, x)

    def sqrt(self, x):
        return self._elementwise(mpmath.sqrt, _sqrt, x)

    def lgamma(self, x):
        return self._elementwise(mpmath.loggamma, _lgamma, x)

    def re(self, x):
        """Real part (elementwise on arrays of mpc)."""
        return self._elementwise(mpmath.re, _re, x)

    def fsum(self, values):
        return mpmath.fsum(values)

    def dot(self, a, b):
        return mpmath.fdot(a, b)

    def twin(self):
        """A :class:`GmpyContext` at this precision (inside ``with self``; None without gmpy2): the same
        correctly rounded operations on gmpy2 numbers, for eliminations run entirely inside it."""
        if _gmpy2 is None or mpmath.mp.dps != self.dps:
            return None
        return GmpyContext(self.dps)

    def matmul(self, a, b):
        """Matrix product of two 2-D object arrays of mpf at the working precision.

        With gmpy2 (a dependency) the products run on its mpfr numbers (about ten times mpmath's
        speed): every entry converted exactly (mantissa, exponent), each product and sum rounded to
        the working precision as mpmath rounds them, the results rounded once back to mpf. The copy of a
        read-only right operand (``flags.writeable`` False: it cannot change) is kept for the next call.
        """
        if _gmpy2 is None or a.shape[1] == 0:
            return np.dot(a, b)
        prec = mpmath.mp.prec
        g = _gmpy2
        with g.context(g.get_context(), precision=prec, round=g.RoundToNearest, emax=g.get_emax_max(),
                       emin=g.get_emin_min()):
            try:
                c = np.dot(_to_mpfr(a), _mpfr_operand(b, prec))
            except _Special:  # an infinity or a NaN: mpmath's own arithmetic
                return np.dot(a, b)
        return _from_mpfr(c, prec)

    def isfinite(self, x):
        if isinstance(x, np.ndarray):
            return all(mpmath.isfinite(v) for v in x.ravel())
        return bool(mpmath.isfinite(x))

    def flush(self, v):
        return v

    def to_float(self, x):
        return float(x)


class GmpyContext(Scoped):
    """The context interface over gmpy2 mpfr numbers at the precision of an :class:`MPContext`
    (correct rounding of every operation, as mpmath's, at about ten times its speed): for loops that
    run entirely inside it (the oracles' dense GTH). Exact inputs are rounded once; :meth:`to_mp` and
    :meth:`from_mp` convert to and from mpf without any further rounding."""

    is_float64 = False
    tiny = 0
    dtype = object

    def __init__(self, dps: int):
        self.dps = int(dps)
        self.prec = mpmath.libmp.dps_to_prec(self.dps)
        self.name = f"gmpy{self.dps}"
        self._stack: list = []

    @property
    def eps(self):
        return _gmpy2.mul_2exp(_gmpy2.mpfr(1), -self.prec)

    def _scope(self):
        g = _gmpy2
        return g.context(g.get_context(), precision=self.prec, round=g.RoundToNearest, emax=g.get_emax_max(),
                         emin=g.get_emin_min())

    def num(self, value):
        """An exact number (int, Fraction) as an mpfr, rounded once; an mpf exactly."""
        g = _gmpy2
        if isinstance(value, Fraction):
            return g.mpfr(g.mpq(value.numerator, value.denominator))
        if isinstance(value, mpmath.mpf):
            return _to_mpfr(np.array([value], dtype=object))[0]
        return g.mpfr(value)

    def zeros(self, shape):
        z = np.empty(shape, dtype=object)
        z.fill(_gmpy2.mpfr(0))
        return z

    def array(self, values):
        return _object_array(values, type(_gmpy2.mpfr(0)), self.num)

    def arange(self, n):
        return self.array(range(n))

    def eye(self, n):
        return _object_eye(self, n, _gmpy2.mpfr(1))

    @staticmethod
    def exp(x):
        """e^x, correctly rounded (elementwise on an object array)."""
        return np.frompyfunc(_gmpy2.exp, 1, 1)(x) if isinstance(x, np.ndarray) else _gmpy2.exp(x)

    @staticmethod
    def expm1(x):
        """e^x - 1, correctly rounded (elementwise on an object array)."""
        return np.frompyfunc(_gmpy2.expm1, 1, 1)(x) if isinstance(x, np.ndarray) else _gmpy2.expm1(x)

    def fsum(self, values):
        """A sum with one rounding (gmpy2.fsum is correctly rounded)."""
        return _gmpy2.fsum(list(values))

    def dot(self, a, b):
        """An inner product with one rounding: the products are exact at twice the precision."""
        g = _gmpy2
        with g.context(g.get_context(), precision=2 * self.prec):
            terms = [x * y for x, y in zip(a, b)]
        return g.fsum(terms)

    def matmul(self, a, b):
        return np.dot(a, b)

    def flush(self, v):
        return v

    def isfinite(self, x):
        if isinstance(x, np.ndarray):
            return all(_gmpy2.is_finite(v) for v in x.ravel())
        return bool(_gmpy2.is_finite(x))

    @staticmethod
    def from_mp(a):
        """An object array of mpf as mpfr (exact at this precision; call inside ``with``)."""
        try:
            return _to_mpfr(np.asarray(a, dtype=object))
        except _Special:
            raise ValueError("an infinite or NaN entry") from None

    def to_mp(self, a):
        """An object array of mpfr as mpf at this precision (exact)."""
        return _from_mpfr(np.asarray(a, dtype=object), self.prec)


def mp_context(dps: int) -> MPContext:
    """An mpmath context working at ``dps`` significant decimal digits."""
    return MPContext(dps)


def context_for(digits: int | None):
    """:data:`FLOAT64` for ``None``, else an mpmath context with ``digits`` digits."""
    return FLOAT64 if digits is None else mp_context(digits)


class FractionContext:
    """Exact rational arithmetic with the context interface (object arrays of Fractions):
    the kernels' eliminations run unchanged and return exact results (oracles, tests)."""

    is_float64 = False
    tiny = 0
    dtype = object
    dps = None
    name = "exact"
    eps = Fraction(0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def num(self, value):
        return value if isinstance(value, Fraction) else Fraction(value)

    def zeros(self, shape):
        z = np.empty(shape, dtype=object)
        z.fill(Fraction(0))
        return z

    def array(self, values):
        values = list(values)
        a = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            a[i] = Fraction(v)
        return a

    def arange(self, n):
        return self.array(range(n))

    def eye(self, n):
        e = self.zeros((n, n))
        for i in range(n):
            e[i, i] = Fraction(1)
        return e

    def fsum(self, values):
        return sum(values, Fraction(0))

    def dot(self, a, b):
        return sum((x * y for x, y in zip(a, b)), Fraction(0))

    def matmul(self, a, b):
        return np.dot(a, b)

    def flush(self, v):
        return v

    def isfinite(self, x):
        return True


class FieldContext:
    """The arithmetic-context interface over a SymPy field K (``sympy.polys.fields.field``): object arrays
    of field elements, so :func:`~qderive.numeric.kernels.chains.gth_stationary` runs unchanged and returns
    the stationary law as rational functions (the two-flow model's exact laws)."""

    is_float64 = False
    dtype = object
    tiny = 0

    def __init__(self, K):
        self.K = K

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def num(self, value):
        from ..symbolic.numbers import to_sympy

        return value if getattr(value, "field", None) == self.K else self.K.from_expr(to_sympy(value))

    def zeros(self, shape):
        z = np.empty(shape, dtype=object)
        z.fill(self.K.zero)
        return z

    def array(self, values):
        values = list(values)
        a = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            a[i] = self.num(v)
        return a

    def fsum(self, values):
        return sum(values, self.K.zero)

    def dot(self, a, b):
        return sum((x * y for x, y in zip(a, b)), self.K.zero)

    def matmul(self, a, b):
        return np.dot(a, b)
