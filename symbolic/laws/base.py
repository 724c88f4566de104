"""The base of every law: exact parameters with metadata, one registry, one specification parser.

A law is a small frozen dataclass whose fields carry :class:`~qderive.symbolic.params.Param`
metadata. Subclassing with a ``spec`` name registers the class, so the command line,
the generated help, the simulator and codegen find it without any list to edit::

    @dataclass(frozen=True)
    class Exponential(TimeLaw):
        spec = "exp"
        mean: object = param("mean time", units="time")

Parameters are exact: :class:`fractions.Fraction` for numbers (no SymPy on numeric
paths) or SymPy expressions for symbolic work. ``_validate`` checks the constraints
once, at construction, with errors that name the parameter.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ..distribution import (
    TimeLawDistribution,  # the scipy.stats-style API (sf, pdf, ppf, rvs, ...): see there
)
from ..errors import ParameterError
from ..params import (
    Kind,
    apply_check,
    exact_value,
    is_concrete,
    params_of,
    parse_value,
    show_value,
    split_spec,
)

__all__ = ["Law", "TimeLaw", "Accuracy", "is_concrete", "import_family"]


@dataclasses.dataclass(frozen=True)
class Accuracy:
    """How many significant digits a time law's numbers are good to when computed at 40 digits: its moments and
    its count probabilities (the count kernels of the numeric layer), as the generic checks of
    ``tests/test_laws.py`` compare them with references computed another way; ``reason`` says why, so a law that
    needs a looser tolerance states it itself (no test special-cases a law class)."""

    digits: int = 35
    reason: str = "exact references (SymPy) at 40 digits; the kernels' sums carry O(n eps)"


try:
    import gmpy2 as _gmpy2
except ImportError:  # pragma: no cover - a dependency (mpmath's fast backend); mpf arithmetic is slower, not different
    _gmpy2 = None


def taylor_cells(zs, cell, expansion, prec: int):
    """Values F(z) at the mpf points ``zs`` from Taylor expansions around fixed centres, every point of a cell at once:
    ``cell(z)`` names the cell of z (hashable; None: no expansion, the value is left None for the caller);
    ``expansion(key)`` gives (F(c), [A_0, ..., A_N], c) as mpf numbers at ``prec`` bits (cached by the caller: the
    centres do not depend on the points), with F(c + h) = F(c) - sum_k A_k h^{k+1} over the cell. Horner runs on
    gmpy2 numbers at ``prec`` bits (the same correctly rounded operations as mpf, about five times faster);
    the values are mpf. The survival functions of the gamma and lognormal laws use it
    (:meth:`TimeLaw.survival_many`)."""
    import mpmath

    out = [None] * len(zs)
    cells: dict = {}
    for i, z in enumerate(zs):
        key = cell(z)
        if key is not None:
            cells.setdefault(key, []).append(i)
    if _gmpy2 is None:  # pragma: no cover
        with mpmath.workprec(prec):
            for key, where in cells.items():
                value, coef, centre = expansion(key)
                for i in where:
                    h = zs[i] - centre
                    acc = coef[-1]
                    for c in coef[-2::-1]:
                        acc = acc * h + c
                    out[i] = value - acc * h
        return out
    make, from_man_exp = mpmath.mp.make_mpf, mpmath.libmp.from_man_exp
    with _gmpy2.context(_gmpy2.get_context(), precision=prec):
        for key, where in cells.items():
            value, coef, centre = (to_mpfr(v) if not isinstance(v, list) else [to_mpfr(c) for c in v]
                                   for v in expansion(key))
            for i in where:
                h = to_mpfr(zs[i]) - centre
                acc = coef[-1]
                for c in coef[-2::-1]:
                    acc = acc * h + c
                man, exp = (value - acc * h).as_mantissa_exp()
                out[i] = make(from_man_exp(int(man), int(exp), prec, "n"))
    return out


def taylor_coefficients(lead, step, radius, small):
    """[A_0, ..., A_N] with A_k = lead g_k / (k + 1) for the Taylor coefficients g_k of a function (g_0 = 1) given by
    the three-term recurrence g_{k+1} = ``step``(k, g_k, g_{k-1}) (mpf numbers, at the caller's precision), so that
    the integral of lead sum_k g_k v^k from 0 to h is sum_k A_k h^{k+1}: stopped when two consecutive terms
    |A_k| r^{k+1} (r = ``radius``) are below ``small`` (and k >= 4). For :func:`taylor_cells`."""
    coef, g_prev, g, k, quiet, rk = [], 0, 1, 0, 0, radius
    while True:
        term = lead * g / (k + 1)
        coef.append(term)
        quiet = quiet + 1 if abs(term) * rk <= small else 0
        if quiet >= 2 and k >= 4:
            return coef
        g_prev, g = g, step(k, g, g_prev)
        k += 1
        rk = rk * radius
        if k > 100000:  # the callers' cells make the terms fall geometrically: a safeguard
            raise ArithmeticError("a Taylor series does not converge")


def to_mpfr(x):
    """An mpf as a gmpy2 mpfr (m 2^e, rounded to the context's precision); an mpfr rounded likewise."""
    if not hasattr(x, "_mpf_"):
        return _gmpy2.mpfr(x)
    sign, man, exp, _ = x._mpf_
    return _gmpy2.mul_2exp(_gmpy2.mpz(-man if sign else man), exp)


def import_family(package: str, path, base, namespace: dict) -> list[str]:
    """Import every module of a law package and put its public law classes into ``namespace``.

    Returns the names of the classes derived from ``base`` (a family's ``__all__``): a new law is
    one new module, with no list to edit.
    """
    import importlib
    import inspect
    import pkgutil

    names = []
    for info in pkgutil.iter_modules(path):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            namespace[name] = obj
            if inspect.isclass(obj) and issubclass(obj, base):
                names.append(name)
    return names


class Law:
    """Common machinery of time laws and batch laws (see the module docstring)."""

    #: name in a specification (``erlang`` in ``erlang:k=4,mean=0.015``); None: not on the command line
    spec: ClassVar[str | None] = None
    #: what the family is called in messages
    family_name: ClassVar[str] = "law"
    _registry: ClassVar[dict]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_registry" in cls.__dict__:  # a family root (TimeLaw, BatchLaw)
            return
        name = cls.__dict__.get("spec")
        if name:
            registry = cls._registry
            if name in registry and registry[name].__qualname__ != cls.__qualname__:
                raise TypeError(f"two {cls.family_name}s are registered as {name!r}: "
                                f"{registry[name].__qualname__} and {cls.__qualname__}")
            registry[name] = cls

    def __post_init__(self):
        for f, meta in params_of(type(self)):
            value = getattr(self, f.name)
            if value is None and meta.none_text is not None:
                continue
            value = exact_value(value, meta, f.name)
            apply_check(value, meta, meta.key or f.name)
            object.__setattr__(self, f.name, value)
        self._validate()

    def _validate(self) -> None:
        """Check the constraints (raise ParameterError naming the parameter)."""

    # -- specification -------------------------------------------------------------------
    @classmethod
    def registered(cls) -> dict:
        """Specification name -> class, for this family."""
        return dict(cls._registry)

    @classmethod
    def parse(cls, text: str, what: str = "law"):
        """Build a law of this family from ``kind:key=value,...``; errors carry ``what`` and the text."""
        kind, values = split_spec(text, what)
        registry = cls._registry
        if kind not in registry:
            raise ParameterError(f"{what} {text}: unknown {cls.family_name} {kind!r}; choose one of "
                                 f"{cls.help_text()}")
        law_cls = registry[kind]
        try:
            return law_cls.from_spec_values(values)
        except ParameterError as err:
            raise err.within(f"{what} {text}") from None

    @classmethod
    def from_spec_values(cls, values: dict[str, str]):
        """The law from a parsed specification ``{key: text}`` (override for special syntaxes)."""
        fields = [(f, m) for f, m in params_of(cls) if m.cli]
        keys = {(m.key or f.name): (f, m) for f, m in fields}
        unknown = [k for k in values if k not in keys]
        required = [k for k, (f, m) in keys.items()
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [k for k in required if k not in values]
        if unknown or missing:
            why = f" (unknown: {', '.join(unknown)})" if unknown else f" (missing: {', '.join(missing)})"
            raise ParameterError(f"expects {cls.usage()}{why}")
        kwargs = {keys[k][0].name: parse_value(v, keys[k][1], k) for k, v in values.items()}
        return cls(**kwargs)

    @classmethod
    def usage(cls) -> str:
        """``erlang:k=K,mean=X``: the specification of this law class."""
        parts = []
        for f, m in params_of(cls):
            if not m.cli:
                continue
            key = m.key or f.name
            meta = m.metavar or ("A/B/.." if m.kind in (Kind.NUMBERS, Kind.INTEGERS) else key.upper())
            optional = f.default is not dataclasses.MISSING
            parts.append(f"[{key}={meta}]" if optional else f"{key}={meta}")
        return f"{cls.spec}:" + ",".join(parts) if parts else str(cls.spec)

    @classmethod
    def help_text(cls) -> str:
        """Every registered law's usage, ``|``-separated (the command line's help)."""
        return " | ".join(c.usage() for _, c in sorted(cls._registry.items()))

    def spec_text(self) -> str:
        """This law as a specification that parses back to an equal law."""
        parts = [f"{m.key or f.name}={show_value(getattr(self, f.name))}"
                 for f, m in params_of(type(self))
                 if m.cli and getattr(self, f.name) is not None and getattr(self, f.name) != f.default]
        return f"{self.spec}:" + ",".join(parts) if parts else str(self.spec)

    def __str__(self) -> str:
        return self.spec_text() if self.spec else repr(self)

    def structural(self) -> dict:
        """Parameters that fix the family of generated code (e.g. Erlang's k)."""
        return {f.name: getattr(self, f.name) for f, m in params_of(type(self)) if m.structural}

    def numeric_parameters(self) -> dict:
        """Parameters that become numeric arguments of generated code (name -> value)."""
        return {f.name: getattr(self, f.name) for f, m in params_of(type(self)) if not m.structural}


#: float64 survival functions by kernel name (``TimeLaw.survival_kernel``): filled by the numeric layer when it is
#: imported, from its kernel ``survival`` (numpy only, shipped by generated code), so that the laws and generated
#: code run one implementation while this layer names no upper one; empty, the laws fall back to mpmath point by point
FLOAT64_SURVIVAL: dict = {}


def float64_survival(law, xs):
    """(P(T > x), bad mask) at the float64 array ``xs`` by the registered kernel of ``law.survival_kernel()``, or None
    when the law names none or none is registered."""
    spec = law.survival_kernel() if hasattr(law, "survival_kernel") else None
    fn = None if spec is None else FLOAT64_SURVIVAL.get(spec[0])
    return None if fn is None else fn(*spec[1], xs)


class TimeLaw(TimeLawDistribution, Law):
    """A nonnegative random time (service, vacation) with LST beta(s) = E e^{-sT}.

    Required: :meth:`lst` (SymPy). Everything else has a generic path and an optional
    closed-form hook: :meth:`moment` (closed form ``_moment`` or derivatives of the LST
    at 0), :meth:`count_law` (the law of the number of Poisson(lambda) batch arrivals
    during one such time; generic: ``(-lam)^k / k! beta^{(k)}(lam)``, Sopin 2013,
    section 0 of ``docs/theory/chapter2.md``), :meth:`sample` (the simulator), :meth:`phase_type`
    (the CTMC oracle; None if the law is not phase-type).

    scipy.stats' names (``var``, ``sf``, ``cdf``, ``pdf``, ``pmf``, ``ppf``, ``rvs``, ``lst`` at numbers,
    ``to_scipy``/``from_scipy``) come from :class:`~qderive.symbolic.distribution.TimeLawDistribution`, computed
    from these same hooks; ``mean`` stays the exact mean as an attribute.
    """

    family_name = "time law"
    _registry: ClassVar[dict] = {}
    #: what the generic checks may expect of this law's moments and count probabilities at 40 digits (:class:`Accuracy`)
    accuracy: ClassVar[Accuracy] = Accuracy()

    def lst(self, s):
        """Laplace-Stieltjes transform E exp(-s T) as a SymPy expression."""
        raise NotImplementedError

    def transform_values(self, s, lam=None, digits=None):
        """E e^{-sT} at the complex points ``s`` (a 1-d array) by the law's own numeric rule, for a law whose
        transform has no closed form (its :meth:`lst` an integral): (beta(s), (beta(s) - beta(lam)) / (lam - s) or
        None, an absolute error bound); float64 numpy arrays, or lists of mpc at ``digits`` digits. None (the
        default): the transform is :meth:`lst`, compiled by the numeric layer."""
        return None

    def _moment(self, n: int):
        return None

    def moment(self, n: int):
        """Raw moment E T^n, exactly: the closed-form hook, else (-1)^n beta^{(n)}(0)."""
        if n == 0:
            from fractions import Fraction

            return Fraction(1)
        m = self._moment(n)
        return m if m is not None else self._moment_from_lst(n)

    def _moment_from_lst(self, n: int):
        import sympy as sp

        from ..numbers import exact

        s = sp.Symbol("s")
        d = sp.diff(self.lst(s), s, n)
        value = d.subs(s, 0)
        if value.has(sp.nan, sp.zoo, sp.oo):
            value = sp.limit(d, s, 0, "+")
        value = sp.simplify((-1) ** n * value)
        return exact(value, f"E T^{n}") if not value.free_symbols and value.is_Rational else value

    def variance(self):
        return self.moment(2) - self.moment(1) ** 2

    def count_law(self, lam):
        """Law of the number of Poisson(``lam``) batch arrivals during one such time."""
        import sympy as sp

        from ..counts import GenericCount
        from ..numbers import to_sympy

        s = sp.Symbol("s")
        return GenericCount(self.lst(s), s, to_sympy(lam))

    def poisson_mixing(self, k: int, lam):
        """beta_k = P(k batches arrive during one such time), exactly (SymPy)."""
        return self.count_law(lam).pmf(k)

    def poisson_mixing_from_lst(self, k: int, lam):
        """Generic path beta_k = (-lam)^k / k! beta^{(k)}(lam) (for the hook == transform tests)."""
        import sympy as sp

        from ..counts import GenericCount
        from ..numbers import to_sympy

        s = sp.Symbol("s")
        return GenericCount(self.lst(s), s, to_sympy(lam)).pmf(k)

    def phase_type(self):
        """(alpha, T): initial probabilities and sub-generator of a phase-type law, exactly; None otherwise."""
        return None

    def decay_rate(self):
        """A rate c > 0 with the transform analytic for Re s > -c (E e^{c' T} finite for c' < c), as a float, or None
        where it is not known: for a phase-type law PH(alpha, T) the transform alpha (sI - T)^{-1} t is analytic
        right of T's eigenvalues, c = -max Re eig(T) (the damped inversions of the finite room's shifted sums (SF)
        stay below it)."""
        ph = self.phase_type()
        if ph is None:
            return None
        import numpy as np

        try:
            return float(-max(np.linalg.eigvals(np.array(ph[1], dtype=float)).real))
        except (TypeError, ValueError, np.linalg.LinAlgError):
            return None

    def survival_pieces(self):
        """The survival function as exponential pieces cut at a point, exactly, or None:
        ((w_1, theta_1, d_1), ...) with P(T > x) = sum_i w_i e^{-theta_i x} 1{x < d_i} (d_i None: no cut),
        w_i >= 0. A constant d is ((1, 0, d),). A piece may also be a matrix exponential
        (w, theta, None, (alpha, P)): w e^{-theta x} alpha e^{theta P x} 1 with P >= 0 entrywise.

        The default is the phase-type law's own (``phase_type()``: Erlang, Coxian, PH), uniformized:
        P(T > x) = alpha e^{T x} 1 = e^{-theta x} alpha e^{theta P x} 1 with theta = max_i |T_ii| and
        P = I + T / theta (nonnegative: no eigenvalue is needed and nothing is subtracted). The exact
        lattice tails with constant service use it (``kernels.lattice_wait`` of the numeric layer, (L4)
        and (L5))."""
        ph = self.phase_type()
        if ph is None or not is_concrete(ph):
            return None
        alpha, T = ph
        from fractions import Fraction

        theta = max(-Fraction(T[i][i]) for i in range(len(T)))
        P = tuple(tuple((1 if i == j else 0) + Fraction(v) / theta for j, v in enumerate(row))
                  for i, row in enumerate(T))
        return ((1, theta, None, (tuple(Fraction(a) for a in alpha), P)),)

    def survival(self, x):
        """P(T > x) as an mpf at the current mpmath precision (``x`` an mpf >= 0), or None when the law gives no
        such evaluation. Laws with a density and no exact pieces (gamma, lognormal, uniform) give it: the
        constant-service tails of ``engines.vacation_wait`` of the numeric layer integrate it against the lattice
        part's tail."""
        return None

    def stop_loss(self, x):
        """E (T - x)^+ = int_x^oo P(T > u) du as an mpf at the current mpmath precision (with :meth:`survival`)."""
        return None

    def survival_many(self, xs, digits=None):
        """P(T > x) at every point of ``xs`` at once, or None when the law gives no :meth:`survival`.

        ``digits`` None: ``xs`` a float64 numpy array (points >= 0), the values a float64 array (relative error
        about 1e-14 or better); ``digits`` D: ``xs`` a sequence of mpf >= 0, the values a list of mpf with D
        correct significant digits (relative; computed with one precision setting for the whole batch). The
        quadrature of ``engines.vacation_wait`` of the numeric layer calls it once per Gauss-Legendre order with
        every node. This default calls :meth:`survival` point by point (at D + 5 digits, or 17 for float64); the
        laws with a density (gamma, lognormal, uniform) override it with batched forms of the same formula."""
        import mpmath

        with mpmath.workdps(17 if digits is None else digits + 5):
            if self.survival(mpmath.mpf(1)) is None:
                return None
            if digits is None:
                import numpy

                return numpy.array([float(self.survival(mpmath.mpf(float(x)))) for x in xs])
            return [self.survival(+x) for x in xs]

    def survival_root(self) -> int:
        """q such that P(T > x) is analytic in v = x^{1/q} near 0 (1: analytic in x; a gamma law of shape p/q: q)."""
        return 1

    def survival_analytic_at_zero(self) -> bool:
        """Whether P(T > x) is analytic at x = 0 in the variable of :meth:`survival_root` (False for the lognormal law,
        whose 1 - P(T > x) = exp(-O(ln^2 x)) is smooth but not analytic there: quadrature grades the interval at 0)."""
        return True

    def survival_kinks(self) -> tuple:
        """The points x > 0 where P(T > x) is not analytic, exactly (uniform: its ends); quadrature splits there."""
        return ()

    def survival_bound(self, center, lo, hi, height):
        """An upper bound of |S(z)| over the complex rectangles lo <= Re z <= hi, |Im z| <= height (float64 arrays),
        S the analytic continuation of P(T > x) from the real point ``center`` (not a kink; the piece of S there), or
        None when the law cannot bound it (the default). The quadrature (F9) of the numeric layer turns it into the
        Gauss-Legendre remainder on Bernstein ellipses (an error bound instead of an estimate)."""
        return None

    def sample(self, rng, size: int):
        """``size`` independent variates (numpy array) for the simulator."""
        raise ParameterError(f"{type(self).__name__} cannot be sampled: give a concrete law")

    def _repr_latex_(self) -> str:
        import sympy as sp

        s = sp.Symbol("s")
        return "$" + sp.latex(sp.Eq(sp.Function(r"\beta")(s), self.lst(s))) + "$"
