"""scipy.stats' names and semantics for every law, written once from each law's own hooks.

A time law (service, vacation) and a batch law get the methods a scientist knows from a frozen
``scipy.stats`` distribution -- ``var()``, ``std()``, ``moment(n)``, ``sf``, ``cdf``, ``pdf`` (or ``pmf``),
``ppf``, ``median()``, ``rvs(size, rng)`` -- plus ``lst(s)`` at numeric points and the conversion to and from a
frozen ``scipy.stats`` distribution (``law.to_scipy()``, ``TimeLaw.from_scipy(frozen)``). ``mean`` stays
what it always was: the exact mean as an attribute (a parameter of most laws), not scipy's method.

Nothing here is written per law. Every method is computed, in float64 and vectorised over numpy arrays,
from the hooks a law already has (sympy.stats' shape, ``ParetoDistribution``: a law may add a closed form as
an optional override, and one generic path covers the rest):

* P(T > x): the law's :meth:`~.laws.base.TimeLaw.survival_many` (gamma, lognormal, uniform), else its
  :meth:`~.laws.base.TimeLaw.survival_pieces` (exponential pieces cut at a point, or a phase-type law
  uniformized: deterministic, Erlang, Coxian, PH, hyperexponential, empirical), else the law's ``_sf`` override
  (mixtures), else the numerical inversion of (1 - beta(s)) / s (Talbot's contour, ``mpmath.invertlaplace``).
* The density: the law's ``_pdf`` closed form (gamma, lognormal, uniform), else the derivative of its survival
  pieces, else the inversion of beta(s); a law with an atom (``atoms()``, from the pieces' cuts) has none:
  ``pdf`` raises :class:`~.errors.ParameterError` naming the atom, ``pmf`` gives its probability.
* beta(s) at numeric s: alpha (s I - T)^{-1} t for a phase-type law, the law's closed-form LST (SymPy,
  lambdified), else 1 - s int_0^oo e^{-s x} P(T > x) dx by quadrature (the lognormal law).
* ``ppf``: the generic inverse of ``cdf`` (bracketing, then bisection to the last bit).
* ``rvs``: the simulator's own sampler (``sample(rng, n)``), reshaped.

A batch law X on {1, 2, ...} gets ``sf``/``cdf``/``ppf``/``rvs`` from its exact ``tail(i)`` and ``sample``;
its exact ``pmf(i)`` (scalar, exact; used by every engine) is unchanged, and :meth:`BatchLawDistribution.pmf_array`
gives the float64 values at an array of sizes.

>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Deterministic, Erlang
>>> B = Erlang(2, Fraction(1, 2))
>>> B.var(), float(B.sf(0.0)), round(float(B.ppf(0.5)), 6), B.to_scipy().dist.name
(Fraction(1, 8), 1.0, 0.419587, 'gamma')
>>> float(Deterministic(Fraction(1, 5)).pmf(0.2)), Deterministic(Fraction(1, 5)).atoms()
(1.0, ((Fraction(1, 5), 1),))
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from .errors import ParameterError

__all__ = ["TimeLawDistribution", "BatchLawDistribution", "decimal_fraction"]


def decimal_fraction(value, digits: int | None = None) -> Fraction:
    """The exact value of a float's shortest decimal text (0.015 -> 3/200, not the binary double), or of its
    text with ``digits`` significant digits (for a value computed in float64 from others: 15 drops the last
    rounding error, so 0.1 + 0.2 gives 3/10)."""
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError("a scipy parameter", "must be finite", value)
    return Fraction(repr(value) if digits is None else f"{value:.{digits}g}")


def _array(x):
    import numpy

    return numpy.asarray(x, dtype=float)


def _shaped(out, x):
    """A scalar for a scalar input (numpy float64, as scipy returns), else the array."""
    import numpy

    out = numpy.asarray(out, dtype=float).reshape(numpy.shape(x))
    return out[()] if out.ndim == 0 else out


def _rng_of(rng):
    import numpy

    if isinstance(rng, numpy.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, numpy.integer)):
        return numpy.random.default_rng(rng)
    raise ParameterError("rng", "must be a numpy Generator, an integer seed or None", type(rng).__name__)


def _concrete_or_refuse(law):
    from .params import is_concrete

    if not is_concrete(law):
        raise ParameterError(f"{law}: a law with symbols has no numeric values; give numbers")


def _poisson_weights(rate_x, K):
    """e^{-u} u^k / k! for k < K at every u of ``rate_x`` (rows), in logs (no overflow, nothing subtracted)."""
    import numpy

    k = numpy.arange(K)
    u = rate_x[:, None]
    with numpy.errstate(divide="ignore", invalid="ignore"):
        logw = k * numpy.log(u) - u - numpy.array([math.lgamma(i + 1) for i in range(K)])
    w = numpy.exp(logw)
    w[rate_x == 0, :] = 0
    w[rate_x == 0, 0] = 1
    return w


def _uniformized(x, theta, alpha, P, end):
    """sum_k e^{-theta x} (theta x)^k / k! alpha P^k ``end`` at every x >= 0 (float64; every term >= 0)."""
    import numpy

    a = numpy.array([float(v) for v in alpha])
    Pm = numpy.array([[float(v) for v in row] for row in P])
    e = numpy.array([float(v) for v in end])
    u = float(theta) * x
    top = float(u.max()) if u.size else 0.0
    K = int(top + 12 * math.sqrt(top) + 40)
    coef = numpy.empty(K)
    v = e
    for k in range(K):  # alpha P^k end
        coef[k] = a @ v
        v = Pm @ v
    return _poisson_weights(u, K) @ coef


@functools.lru_cache(maxsize=256)
def _lambdified_lst(law):
    """beta(s) of a law whose LST is a closed form, as a numpy function (None if it holds an integral)."""
    import sympy as sp

    s = sp.Symbol("s")
    expr = law.lst(s)
    if expr.has(sp.Integral) or expr.free_symbols - {s} or expr.atoms(sp.core.function.AppliedUndef):
        return None
    return sp.lambdify(s, expr, "numpy")


@functools.lru_cache(maxsize=256)
def _mpmath_lst(law):
    import sympy as sp

    s = sp.Symbol("s")
    expr = law.lst(s)
    if expr.has(sp.Integral) or expr.free_symbols - {s} or expr.atoms(sp.core.function.AppliedUndef):
        return None
    return sp.lambdify(s, expr, "mpmath")


class TimeLawDistribution:
    """The scipy.stats-style methods of :class:`~.laws.base.TimeLaw` (see the module docstring).

    Hooks a law may override (each optional; None means "use the generic path"): ``_sf(x)`` and ``_pdf(x)``
    (float64 arrays of points x >= 0), ``_ppf(q)``, ``_lst_numeric(s)``, ``atoms()``, ``support()``, and the
    scipy conversions ``_to_scipy()`` / ``_from_scipy(frozen)`` (a classmethod; None when ``frozen`` is not this
    law's scipy family).
    """

    # -- beta(s) at numeric points: ``lst(s)`` dispatches here for a number or an array ---------------------
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = getattr(cls, "lst", None)
        if own is not None and not getattr(own, "_numeric_dispatch", False):
            @functools.wraps(own)
            def lst(self, s, _own=own):
                if _is_numeric(s):
                    return self.lst_numeric(s)
                return _own(self, s)

            lst._numeric_dispatch = True
            lst.__doc__ = (own.__doc__ or "The Laplace-Stieltjes transform E exp(-s T).") + (
                "\n\n        SymPy input: a SymPy expression; a number or numpy array: the float64 value(s) "
                "(:meth:`lst_numeric`).")
            cls.lst = lst

    def lst_numeric(self, s):
        """beta(s) = E e^{-s T} at numeric points ``s`` (float, complex or array; Re s >= 0), in float64.

        Phase-type laws: alpha (s I - T)^{-1} t (one linear solve per point); a closed-form LST: the SymPy
        expression lambdified; otherwise (the lognormal law) 1 - s int_0^oo e^{-s x} P(T > x) dx by quadrature
        of :meth:`sf` (real s only)."""
        import numpy

        _concrete_or_refuse(self)
        s_arr = numpy.asarray(s)
        hook = self._lst_numeric(s_arr)
        if hook is not None:
            return hook[()] if numpy.ndim(s) == 0 else hook
        ph = self.phase_type()
        if ph is not None:
            alpha, T = ph
            a = numpy.array([float(v) for v in alpha])
            Tm = numpy.array([[float(v) for v in row] for row in T])
            t = -Tm.sum(axis=1)
            flat = s_arr.reshape(-1)
            out = numpy.array([a @ numpy.linalg.solve(z * numpy.eye(len(a)) - Tm, t) for z in flat])
            out = out.reshape(s_arr.shape)
            out = out if numpy.iscomplexobj(s_arr) else out.real.astype(float)
            return out[()] if out.ndim == 0 else out
        fn = _lambdified_lst(self)
        if fn is not None:
            with numpy.errstate(all="ignore"):
                out = numpy.asarray(fn(s_arr * 1.0)) * numpy.ones(s_arr.shape)
            zero = s_arr == 0  # removable singularities at s = 0 (uniform): beta(0) = 1
            if numpy.any(zero):
                out = numpy.where(zero, 1.0, out)
            return out[()] if numpy.ndim(s) == 0 else out
        if numpy.iscomplexobj(s_arr):
            raise ParameterError("s", f"{self}: the transform has no closed form; give real s >= 0")
        from scipy import integrate

        def one(z):
            if z == 0:
                return 1.0
            value, _ = integrate.quad(lambda x: math.exp(-z * x) * float(self.sf(x)), 0, math.inf, limit=200,
                                      epsabs=0, epsrel=1e-12)
            return 1.0 - z * value

        out = numpy.array([one(float(z)) for z in s_arr.reshape(-1)]).reshape(s_arr.shape)
        return out[()] if numpy.ndim(s) == 0 else out

    def _lst_numeric(self, s):
        return None

    # -- moments -------------------------------------------------------------------------------------------
    def var(self):
        """Var T = E T^2 - (E T)^2, exactly (scipy's ``var()``)."""
        return self.moment(2) - self.moment(1) ** 2

    def std(self):
        """The standard deviation sqrt(Var T), float."""
        return math.sqrt(float(self.var()))

    # -- atoms and support ---------------------------------------------------------------------------------
    def atoms(self) -> tuple:
        """((x, P(T = x)), ...): the point masses, from the cuts of :meth:`survival_pieces` (a piece
        w e^{-theta x} 1{x < d} jumps by w e^{-theta d} at d); () for a law without pieces (taken as having
        a density: gamma, lognormal, uniform). Exact when theta = 0."""
        pieces = self.survival_pieces()
        if pieces is None:
            return ()
        out: dict = {}
        for piece in pieces:
            w, theta, d = piece[:3]
            if d is None:
                continue
            mass = w if theta == 0 else float(w) * math.exp(-float(theta) * float(d))
            out[d] = out.get(d, 0) + mass
        if all(len(piece) == 3 for piece in pieces):  # the mass at 0: 1 - P(T > 0) (an empirical sample's zeros)
            zero = 1 - sum(piece[0] for piece in pieces if piece[2] is None or piece[2] > 0)
            if zero != 0:
                out[0] = out.get(0, 0) + zero
        return tuple(sorted((x, p) for x, p in out.items() if p != 0))

    def support(self) -> tuple:
        """(lower, upper) ends of the support as floats: (0, max cut) for a law whose pieces are all cut,
        else (0, inf); laws override with their own ends (uniform)."""
        pieces = self.survival_pieces()
        if pieces and all(p[2] is not None for p in pieces):
            return (min(float(x) for x, _ in self.atoms()), max(float(p[2]) for p in pieces))
        return (0.0, math.inf)

    # -- survival, distribution and density ----------------------------------------------------------------
    def sf(self, x):
        """P(T > x) at ``x`` (float or array), float64 (scipy's ``sf``); 1 for x < 0."""
        import numpy

        _concrete_or_refuse(self)
        xs = _array(x)
        flat = xs.reshape(-1)
        out = numpy.ones(flat.shape)
        pos = flat >= 0
        if numpy.any(numpy.isnan(flat)):
            raise ParameterError("x", "must be a number (not NaN)", "nan")
        if pos.any():
            out[pos] = self._sf_generic(flat[pos])
        return _shaped(out, x)

    def cdf(self, x):
        """P(T <= x) = 1 - P(T > x), float64 (scipy's ``cdf``)."""
        return _shaped(1.0 - _array(self.sf(x)), x)

    def pdf(self, x):
        """The density f(x), float64 (scipy's ``pdf``); 0 for x < 0.

        A law with an atom has no density: :class:`ParameterError` naming the atom (use :meth:`pmf`)."""
        import numpy

        _concrete_or_refuse(self)
        atoms = self.atoms()
        if atoms:
            where = ", ".join(f"{float(a):g} (probability {float(p):g})" for a, p in atoms[:3])
            raise ParameterError(f"{self} has no density: it has an atom at {where}"
                                 f"{' and more' if len(atoms) > 3 else ''}; use pmf(x) for P(T = x) and cdf(x)")
        xs = _array(x)
        flat = xs.reshape(-1)
        out = numpy.zeros(flat.shape)
        pos = flat >= 0
        if pos.any():
            out[pos] = self._pdf_generic(flat[pos])
        return _shaped(out, x)

    def pmf(self, x):
        """P(T = x): the atom at x (:meth:`atoms`), 0 elsewhere (0 everywhere for a law with a density)."""
        import numpy

        xs = _array(x)
        out = numpy.zeros(xs.shape)
        for a, p in self.atoms():
            out = numpy.where(xs == float(a), out + float(p), out)
        return _shaped(out, x)

    def ppf(self, q):
        """The quantile inf {x : P(T <= x) >= q} for q in [0, 1] (scipy's ``ppf``), float64.

        The law's ``_ppf`` closed form when it has one, else the generic inverse of :meth:`cdf`: the upper
        end doubled until it holds q, then bisection until the bracket is one float apart (above the median on
        P(T > x) <= 1 - q, so that a quantile near 1 keeps the survival function's relative accuracy)."""
        import numpy

        _concrete_or_refuse(self)
        qs = _array(q)
        if numpy.any(~((qs >= 0) & (qs <= 1))):
            raise ParameterError("q", "must lie in [0, 1]", q)
        flat = qs.reshape(-1)
        low, high = self.support()
        out = numpy.empty(flat.shape)
        out[flat == 0] = low
        out[flat == 1] = high
        inner = (flat > 0) & (flat < 1)
        if inner.any():
            hook = self._ppf(flat[inner])
            out[inner] = hook if hook is not None else self._ppf_generic(flat[inner], low, high)
        return _shaped(out, q)

    def _ppf(self, q):
        return None

    def isf(self, q):
        """The inverse survival function: ppf(1 - q)."""
        return self.ppf(1.0 - _array(q))

    def median(self):
        """ppf(1/2)."""
        return self.ppf(0.5)

    def rvs(self, size=None, rng=None, *, random_state=None):
        """Independent variates (scipy's ``rvs``): ``size`` None (one float), an int or a shape; ``rng`` a numpy
        :class:`~numpy.random.Generator` or a seed (``random_state`` is scipy's spelling of it). The simulator's
        own sampler (:meth:`sample`)."""
        import numpy

        if rng is not None and random_state is not None:
            raise ParameterError("give rng or random_state, not both")
        gen = _rng_of(rng if rng is not None else random_state)
        shape = () if size is None else ((int(size),) if numpy.ndim(size) == 0 else tuple(int(v) for v in size))
        n = int(numpy.prod(shape)) if shape else 1
        values = numpy.asarray(self.sample(gen, n), dtype=float)
        return values[0] if size is None else values.reshape(shape)

    # -- scipy -------------------------------------------------------------------------------------------
    def to_scipy(self):
        """The frozen ``scipy.stats`` distribution of this law (expon, gamma, lognorm, uniform); a
        :class:`ParameterError` for a law scipy has no family for."""
        _concrete_or_refuse(self)
        frozen = self._to_scipy()
        if frozen is None:
            raise ParameterError(f"{self}: scipy.stats has no distribution of this law (it has expon, gamma, lognorm "
                                 "and uniform); use the law's own sf, pdf, ppf and rvs")
        return frozen

    def _to_scipy(self):
        return None

    @classmethod
    def from_scipy(cls, frozen):
        """The law of a frozen ``scipy.stats`` distribution (expon, gamma: Erlang for an integer shape,
        lognorm, uniform), its parameters taken as the exact values of their shortest decimal texts.
        Every registered law is asked (its ``_from_scipy`` hook): no list to edit."""
        dist = getattr(frozen, "dist", None)
        if dist is None:
            raise ParameterError("frozen", "must be a frozen scipy.stats distribution (e.g. "
                                 "scipy.stats.expon(scale=2))", type(frozen).__name__)
        for law_cls in sorted(cls.registered().values(), key=lambda c: c.__name__):
            hook = law_cls.__dict__.get("_from_scipy")
            if hook is None:
                continue
            law = hook.__get__(None, law_cls)(frozen)
            if law is not None:
                return law
        raise ParameterError("frozen", "has no qderive time law (expon, gamma, lognorm, uniform are converted)",
                             dist.name)

    # -- the generic paths ---------------------------------------------------------------------------------
    def _sf(self, x):
        """Optional override: P(T > x) at an array of x >= 0 (float64), or None."""
        return None

    def _pdf(self, x):
        """Optional override: the density at an array of x >= 0 (float64), or None."""
        return None

    def _sf_generic(self, x):
        import numpy

        hook = self._sf(x)
        if hook is not None:
            return hook
        values = self.survival_many(x)
        if values is not None:
            return numpy.asarray(values, dtype=float)
        pieces = self.survival_pieces()
        if pieces is not None:
            return _pieces_value(pieces, x, derivative=False)
        return _invert(self, x, density=False)

    def _pdf_generic(self, x):
        hook = self._pdf(x)
        if hook is not None:
            return hook
        pieces = self.survival_pieces()
        if pieces is not None:
            return _pieces_value(pieces, x, derivative=True)
        return _invert(self, x, density=True)

    def _ppf_generic(self, q, low, high):
        import numpy

        lo = numpy.full(q.shape, low)
        hi = numpy.full(q.shape, high if math.isfinite(high) else max(float(self.moment(1)), 1e-300))
        upper, tail = q > 0.5, 1.0 - q  # exact for q >= 1/2 (Sterbenz): above the median compare P(T > x) with 1 - q

        def holds(x):  # P(T <= x) >= q
            return numpy.where(upper, self.sf(x) <= tail, self.cdf(x) >= q)

        if not math.isfinite(high):
            for _ in range(2100):
                short = ~holds(hi)
                if not short.any():
                    break
                hi = numpy.where(short, hi * 2, hi)
                lo = numpy.where(short, hi / 2, lo)
        for _ in range(1100):  # the cdf at hi holds q, at lo (if lo > low) it does not
            mid = lo + (hi - lo) / 2
            moving = (mid > lo) & (mid < hi)
            if not moving.any():
                break
            ok = holds(mid)
            hi = numpy.where(moving & ok, mid, hi)
            lo = numpy.where(moving & ~ok, mid, lo)
        return hi


def _is_numeric(s) -> bool:
    import numbers

    import numpy

    if isinstance(s, numpy.ndarray):
        return s.dtype.kind in "biufc"
    return isinstance(s, numbers.Number) and not _is_sympy(s) and not isinstance(s, Fraction)


def _is_sympy(s) -> bool:
    try:
        import sympy
    except ImportError:  # pragma: no cover
        return False
    return isinstance(s, sympy.Basic)


def _pieces_value(pieces, x, derivative: bool):
    """sum over the pieces of w e^{-theta x} [alpha e^{theta P x} 1] 1{x < d} (or minus its derivative in x):
    the survival function or the density of :meth:`~.laws.base.TimeLaw.survival_pieces`, float64."""
    import numpy

    out = numpy.zeros(x.shape)
    for piece in pieces:
        w, theta, d = piece[:3]
        inside = numpy.ones(x.shape, dtype=bool) if d is None else x < float(d)
        if len(piece) > 3:
            alpha, P = piece[3]
            if derivative:  # -(d/dx) e^{-theta x} alpha e^{theta P x} 1 = theta e^{-theta x} alpha e^{theta P x} (I-P) 1
                end = [1 - sum(Fraction(v) for v in row) for row in P]
                value = float(theta) * _uniformized(x, theta, alpha, P, end)
            else:
                value = _uniformized(x, theta, alpha, P, [1] * len(alpha))
        else:
            value = numpy.exp(-float(theta) * x) * (float(theta) if derivative else 1.0)
        out += float(w) * numpy.where(inside, value, 0.0)
    return out


def _invert(law, x, density: bool):
    """P(T > x) from (1 - beta(s)) / s, or the density from beta(s), by Talbot's inversion (mpmath, 30 digits),
    point by point: the generic path of a law that has only its transform."""
    import mpmath
    import numpy

    beta = _mpmath_lst(law)
    if beta is None:
        raise ParameterError(f"{law}: neither a survival function nor a closed-form transform to invert")
    out = numpy.empty(x.shape)
    with mpmath.workdps(30):
        for i, v in enumerate(x):
            if v == 0:
                out[i] = 1.0 if not density else float(mpmath.limit(lambda s: s * beta(s), mpmath.inf))
                continue
            fn = (lambda s: beta(s)) if density else (lambda s: (1 - beta(s)) / s)
            out[i] = float(mpmath.invertlaplace(fn, mpmath.mpf(float(v)), method="talbot"))
    return out


class BatchLawDistribution:
    """The scipy.stats-style methods of :class:`~.batches.base.BatchLaw` (a law on {1, 2, ...}): ``var``,
    ``std``, ``sf``/``cdf`` from the exact ``tail(i)``, ``pmf_array``, ``ppf``, ``rvs``, ``to_scipy`` /
    ``from_scipy``. The exact scalar ``pmf(i)`` and ``moment(n)`` are the laws' own."""

    def var(self):
        """Var X = E X^2 - (E X)^2, exactly."""
        return self.moment(2) - self.moment(1) ** 2

    def std(self):
        """sqrt(Var X), float."""
        return math.sqrt(float(self.var()))

    def _tail_float(self, k: int) -> float:
        return float(self.tail(k))

    def sf(self, k):
        """P(X > k) at ``k`` (int, float or array; floor taken, as scipy), float64."""
        import numpy

        _concrete_or_refuse(self)
        ks = numpy.floor(_array(k)).reshape(-1)
        out = numpy.array([1.0 if v < 1 else self._tail_float(int(v)) for v in ks])
        return _shaped(out, k)

    def cdf(self, k):
        """P(X <= k), float64."""
        return _shaped(1.0 - _array(self.sf(k)), k)

    def pmf_array(self, k):
        """P(X = k) as float64 at every point of ``k`` (0 off the integers >= 1); the exact scalar is ``pmf(i)``."""
        import numpy

        ks = _array(k).reshape(-1)
        out = numpy.array([float(self.pmf(int(v))) if v >= 1 and v == int(v) else 0.0 for v in ks])
        return _shaped(out, k)

    def ppf(self, q):
        """The smallest size k with P(X <= k) >= q (scipy's ``ppf``; 0 at q = 0, the largest size or inf at 1)."""
        import numpy

        _concrete_or_refuse(self)
        qs = _array(q)
        if numpy.any(~((qs >= 0) & (qs <= 1))):
            raise ParameterError("q", "must lie in [0, 1]", q)
        out = []
        for v in qs.reshape(-1):
            if v == 0:
                out.append(0.0)
                continue
            if v == 1:
                out.append(math.inf if self.max_size is None else float(self.max_size))
                continue
            k, hi = self.min_size, self.min_size
            while 1.0 - self._tail_float(hi) < v:  # gallop, then bisect on the integers
                k, hi = hi, 2 * hi
                if self.max_size is not None and hi >= self.max_size:
                    hi = self.max_size
                    break
            lo = k - 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if 1.0 - self._tail_float(mid) >= v:
                    hi = mid
                else:
                    lo = mid
            out.append(float(hi))
        return _shaped(numpy.array(out), q)

    def median(self):
        return self.ppf(0.5)

    def rvs(self, size=None, rng=None, *, random_state=None):
        """Independent sizes (int64), as :meth:`TimeLawDistribution.rvs`."""
        import numpy

        if rng is not None and random_state is not None:
            raise ParameterError("give rng or random_state, not both")
        gen = _rng_of(rng if rng is not None else random_state)
        shape = () if size is None else ((int(size),) if numpy.ndim(size) == 0 else tuple(int(v) for v in size))
        n = int(numpy.prod(shape)) if shape else 1
        values = numpy.asarray(self.sample(gen, n)).astype(numpy.int64)
        return values[0] if size is None else values.reshape(shape)

    def to_scipy(self):
        """The frozen ``scipy.stats`` distribution of this batch law (geom, poisson shifted by one, or a
        finite ``rv_discrete``)."""
        _concrete_or_refuse(self)
        frozen = self._to_scipy()
        if frozen is None:
            raise ParameterError(f"{self}: scipy.stats has no distribution of this batch law")
        return frozen

    def _to_scipy(self):
        support = self.support()
        if support is None:
            return None
        from scipy import stats

        sizes = sorted(support)
        return stats.rv_discrete(values=(sizes, [float(support[s]) for s in sizes])).freeze()

    @classmethod
    def from_scipy(cls, frozen):
        """The batch law of a frozen ``scipy.stats`` distribution (geom; poisson with loc=1; a finite
        rv_discrete on sizes >= 1), parameters as the exact values of their shortest decimal texts."""
        if getattr(frozen, "dist", None) is None:
            raise ParameterError("frozen", "must be a frozen scipy.stats distribution", type(frozen).__name__)
        for law_cls in sorted(cls.registered().values(), key=lambda c: c.__name__):
            hook = law_cls.__dict__.get("_from_scipy")
            if hook is None:
                continue
            law = hook.__get__(None, law_cls)(frozen)
            if law is not None:
                return law
        raise ParameterError("frozen", "has no qderive batch law (geom, poisson with loc=1, a finite rv_discrete)",
                             frozen.dist.name)


def scipy_arguments(frozen, name: str):
    """(shape arguments, loc, scale) of a frozen scipy distribution of family ``name``, else None."""
    dist = getattr(frozen, "dist", None)
    if dist is None or getattr(dist, "name", None) != name:
        return None
    shapes, loc, scale = dist._parse_args(*frozen.args, **frozen.kwds)
    return shapes, loc, scale
