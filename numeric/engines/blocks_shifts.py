"""The wait with composed blocks when a setup or a vacation law is a constant, a few atoms or uniform: exact tails by
smooth inversions at shifted times -- start threshold 1 by (SH) below (a uniform law: (SU), its own section), N > 1 by
(SN) (the section before it; a uniform law raises the order of its poles at 0).

With start threshold 1 the wait is W = W_none + R (:mod:`qderive.numeric.engines.blocks`, (WS)): W_none the wait in
the same queue without vacations, setup or close-down, R independent of it with the residual factor

    V_r(s) = c (1 - Y(s)) / s,        c = lambda l_1 / E[Y],

Y(s) the first-service law in the transform form (:class:`~.blocks.TransformPassage`: a law L enters through
L*(s) when a period of it passes (``during``, ``repeat``), through L*(lambda) alone when the first batch ends it
(``interrupt``: the close-down, whose law therefore never puts a kink in the wait), and X(z) as 1 - s / lambda).
A constant law d has L*(s) = e^{-s d} and a law of a few atoms (an empirical sample, a constant) sum_i w_i
e^{-s d_i}: run with these as *shifts* (:class:`Shifts`, a finite sum sum_D y_D(s) e^{-s D} over the sums D of the
atoms met, each coefficient y_D a product of smooth transforms and of X), the passage gives Y(s) = sum_D y_D(s)
e^{-s D}, Y(0) = sum_D y_D(0) = 1. Then

    V_r(s) = c sum_D [ y_D(0) (1 - e^{-s D}) / s + e^{-s D} g_D(s) ],     g_D(s) = (y_D(0) - y_D(s)) / s,

the first term the Laplace transform of y_D(0) 1{0 <= x < D}, the second that of g_D (a measure of mass
m_D = g_D(0) = -y_D'(0), an atom b_D / lambda at 0 where y_D -> a_D + b_D X as s -> oo) shifted by D, and
c sum_D (D y_D(0) + m_D) = V_r(0) = 1. Conditioning on R, with P(W_none > u) = 1 for u < 0 and the iterated tail
Pi_1(u) = int_u^oo P(W_none > y) dy (m_1 - u for u <= 0, m_1 P(E_1 > u) for u > 0, E_1 the stationary excess of
W_none)::

    P(W > t) = c sum_D [ y_D(0) (Pi_1(t - D) - Pi_1(t)) + m_D Q_D(t - D) ],                              (SH)

Q_D(u) = P(W_none + Z_D > u) (1 for u < 0), Z_D of transform g_D(s) / m_D: a smooth inversion at the shifted time
t - D. No transform with an exp(-s D) factor is inverted. The sojourn T = W + B is the same with W_none + B
(transform W_none(s) B*(s)) in place of W_none. The shifts' coefficients at s = 0 (y_D(0), y_D'(0)) come from the
same passage run on first-order jets (:class:`Jet`: the laws' transforms 1 - m_1 s, exact moments), the atoms b_D
from the passage at s -> oo with X = 1 and X = 0 (as :func:`~.blocks.residual_atom`).

Precision: the terms of (SH) have both signs (the difference of iterated tails of a short shift): kappa =
sum |term| / P(W > t) bounds the sum's relative rounding by kappa times that of the inverted values. D digits (as
:func:`qderive.numeric.engines.vacation_wait.shift_tails`): the values to D + 3 digits, then to D + 2 + log10 kappa.
float64: each difference as the integral int_{max(t - D, 0)}^t P(W_none > y) dy (plus (D - t)^+) by
Gauss-Legendre of 16 and 32 nodes, every term positive, the tails at the nodes and the Q_D by the float64 inversion
with its self-check; accepted when none escalated and the two orders agree to 1e-11 of the tail (the values within
about 1e-10: the tail within 1e-9), else None (the response module recomputes at 15 digits, with a note).

Sources: the decomposition W = W_none + R, Fuhrmann and Cooper 1985; the setup time's residual, Takagi 1991, vol. 1,
sec. 2.5 (a constant setup D with single arrivals and no vacations: R is D with probability 1 / (1 + lambda D) and
uniform on (0, D) otherwise, (SH) with y_D = X).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from ...symbolic.blocks import blocks_of, passage
from .block_laws import lst_at_rate, lst_values
from .generating_passage import GeneratingPassage

__all__ = ["Shifts", "Jet", "ShiftPassage", "shift_plan", "shift_laws", "shift_atom",
           "MOST_SHIFTS", "entering_laws", "ShiftThreshold", "threshold_shift_parts", "threshold_shift_plan",
           "threshold_shift_laws", "shift_pieces", "shift_values", "density_laws", "laurent_shift_laws",
           "generating_shift_parts", "density_shift_laws", "density_shift_atom"]

#: the most shifts D (sums of atoms) a wait may have: each is one more inversion per tail
MOST_SHIFTS = 64


class TooManyShifts(ArithmeticError):
    """A repeated period puts more than :data:`MOST_SHIFTS` shifts below the horizon."""


class Shifts:
    """A finite sum sum_D y_D e^{-s D} (``terms``: {D (Fraction): coefficient}) under +, -, * with scalars, arrays
    and other sums (numpy defers to these operators: ``__array_ufunc__ = None``)."""

    __slots__ = ("terms",)
    __array_ufunc__ = None

    def __init__(self, terms: dict):
        self.terms = terms

    @staticmethod
    def of(x) -> "Shifts":
        return x if isinstance(x, Shifts) else Shifts({Fraction(0): x})

    def __add__(self, other):
        out = dict(self.terms)
        for d, v in Shifts.of(other).terms.items():
            out[d] = out[d] + v if d in out else v
        return Shifts(out)

    __radd__ = __add__

    def __neg__(self):
        return Shifts({d: -v for d, v in self.terms.items()})

    def __sub__(self, other):
        return self + (-Shifts.of(other))

    def __rsub__(self, other):
        return Shifts.of(other) + (-self)

    def __mul__(self, other):
        if not isinstance(other, Shifts):
            return Shifts({d: v * other for d, v in self.terms.items()})
        out: dict = {}
        for d1, v1 in self.terms.items():
            for d2, v2 in other.terms.items():
                p = v1 * v2
                out[d1 + d2] = out[d1 + d2] + p if d1 + d2 in out else p
        return Shifts(out)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, Shifts):
            return self * other.reciprocal()
        return Shifts({d: v / other for d, v in self.terms.items()})

    def __rtruediv__(self, other):
        return Shifts.of(other) * self.reciprocal()

    #: the horizon H of :meth:`reciprocal`: the shifts beyond it are dropped (their mass is bounded by the caller)
    horizon = None
    #: set by :meth:`reciprocal` (reset by :class:`Horizon`): infinitely many shifts, those beyond H dropped
    infinite = False

    def reciprocal(self):
        """1 / (a_0 + sum_{D>0} a_D e^{-sD}) = (1 / a_0) sum_k (-r)^k, r = sum_{D>0} (a_D / a_0) e^{-sD} (a geometric
        series of shifts: a period repeated while the count stays below N), the shifts up to :attr:`horizon`."""
        zero = Fraction(0)
        if set(self.terms) == {zero}:
            return Shifts({zero: 1 / self.terms[zero]})
        if Shifts.horizon is None or zero not in self.terms:
            raise NotImplementedError("the reciprocal of a sum of shifts without a horizon")
        inv0 = 1 / self.terms[zero]
        r = Shifts({d: -v * inv0 for d, v in self.terms.items() if d != zero})
        Shifts.infinite = True  # a geometric series of shifts: those beyond the horizon are dropped
        out, power = Shifts({zero: inv0}), Shifts({zero: inv0})
        while True:
            power = power * r
            power = Shifts({d: v for d, v in power.terms.items() if d <= Shifts.horizon})
            if not power.terms:
                return out
            out = out + power
            if len(out.terms) > MOST_SHIFTS:
                raise TooManyShifts(Shifts.horizon)


class Jet:
    """A first-order jet f(0) + f'(0) s at s = 0 (``v``, ``d``) under +, -, * with scalars and jets."""

    __slots__ = ("v", "d")

    def __init__(self, v, d):
        self.v, self.d = v, d

    def __add__(self, o):
        if isinstance(o, Shifts):
            return NotImplemented
        return Jet(self.v + o.v, self.d + o.d) if isinstance(o, Jet) else Jet(self.v + o, self.d)

    __radd__ = __add__

    def __neg__(self):
        return Jet(-self.v, -self.d)

    def __sub__(self, o):
        return NotImplemented if isinstance(o, Shifts) else self + (-o)

    def __rsub__(self, o):
        return (-self) + o

    def __mul__(self, o):
        if isinstance(o, Shifts):
            return NotImplemented
        if isinstance(o, Jet):
            return Jet(self.v * o.v, self.v * o.d + self.d * o.v)
        return Jet(self.v * o, self.d * o)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return Jet(self.v / o, self.d / o)


def discrete_atoms(law):
    """((d, w), ...) of a law that is a finite set of atoms (a constant, an empirical sample), else None."""
    from .vacation_wait import service_atoms

    return service_atoms(law)


def shift_pieces(law):
    """:func:`_shift_pieces`, kept per law (a law that cannot be hashed, with symbolic parameters, has none)."""
    try:
        return _shift_pieces(law)
    except TypeError:  # unhashable
        return None


@functools.lru_cache(maxsize=64)
def _shift_pieces(law):
    """(atoms ((d, w), ...), densities ((c, x_0, x_1), ...)) exactly (Fractions) of a law whose survival function is
    piecewise linear with at least one slope (a uniform law: a density c on [x_0, x_1], a mixture of constants), else
    None (:func:`~.vacation_wait.linear_pieces`). Its transform is a finite sum of shifts with coefficients in 1 / s,

        L*(s) = sum_i w_i e^{-s d_i} + sum_k c_k (e^{-s x_0k} - e^{-s x_1k}) / s,

    the uniform law on [a, b]: (e^{-s a} - e^{-s b}) / ((b - a) s)."""
    from .finite_laws import linear_parts
    from .vacation_wait import linear_pieces

    if discrete_atoms(law) is not None or not hasattr(law, "survival"):
        return None
    try:
        lin = linear_pieces(law)
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        return None
    if lin is None:
        return None
    atoms, densities = linear_parts(lin)
    if not densities:
        return None
    return tuple((Fraction(d), Fraction(w)) for w, d in atoms), tuple((Fraction(c), Fraction(a), Fraction(b))
                                                                        for c, a, b in densities)


def shift_values(pieces, s, ctx) -> "Shifts":
    """L*(s) of a law of :func:`shift_pieces` at the context array ``s`` as :class:`Shifts`: each atom w at d the
    shift d with coefficient w, each density c on [x_0, x_1] the shifts x_0 and x_1 with coefficients c / s and
    -c / s."""
    atoms, densities = pieces
    terms: dict = {}
    inv = 1 / s
    for d, w in atoms:
        terms[d] = terms[d] + ctx.num(w) if d in terms else inv * 0 + ctx.num(w)
    for c, x0, x1 in densities:
        for x, v in ((x0, inv * ctx.num(c)), (x1, inv * ctx.num(-c))):
            terms[x] = terms[x] + v if x in terms else v
    return Shifts(terms)


def density_laws(model) -> tuple:
    """((field, law), ...) of the laws entering the wait (:func:`entering_laws`, the service excluded) with a density
    part of shifts (:func:`shift_pieces`: uniform)."""
    return tuple((f, law) for f, law in entering_laws(model)[1:] if shift_pieces(law) is not None)


def _shift_atoms(law):
    """The points D where ``law`` puts shifts: its atoms, or the atoms and the densities' ends of a law of
    :func:`shift_pieces`; None for a smooth law."""
    atoms = discrete_atoms(law)
    if atoms is not None:
        return [d for d, _ in atoms]
    pieces = shift_pieces(law)
    if pieces is None:
        return None
    return sorted({d for d, _ in pieces[0]} | {x for _, a, b in pieces[1] for x in (a, b)})


class ShiftPassage(GeneratingPassage):
    """The primitives on :class:`Shifts` (module docstring) in one of three modes: at the context array ``s`` of
    the inversion's nodes, on first-order jets at s = 0 (``jets``), or at s -> oo with X given (``X``)."""

    def __init__(self, model, ctx, s=None, X=None, jets: bool = False):
        self.ctx, self.s, self.jets = ctx, s, jets
        self.lam = ctx.num(model.rate)
        if jets:
            x = Jet(ctx.num(1), -1 / self.lam)
        elif X is not None:
            x = X
        else:
            x = 1 - s / self.lam
        self.X = Shifts.of(x)
        self._values: dict = {}

    def arrivals(self, law):
        if law in self._values:
            return self._values[law]
        ctx = self.ctx
        atoms = discrete_atoms(law)
        pieces = None if atoms is not None else shift_pieces(law)
        if atoms is not None:
            value = Shifts({d: ctx.num(w) for d, w in atoms})
        elif pieces is not None:  # a density part of shifts (uniform): c / s coefficients, which vanish as s -> oo
            if self.jets:
                raise NotImplementedError("the jets at 0 of a law with a density part of shifts (its coefficients "
                                          "have poles at 0: the Laurent parts of :func:`density_shift_laws`)")
            if self.s is None:
                value = Shifts({d: ctx.num(w) for d, w in pieces[0]}) if pieces[0] else Shifts.of(ctx.num(0))
            else:
                value = shift_values(pieces, self.s, ctx)
        elif self.jets:
            value = Shifts.of(Jet(ctx.num(1), -ctx.num(law.moment(1))))
        elif self.s is None:
            value = Shifts.of(ctx.num(0))  # every smooth law's transform vanishes as s -> oo (no atom at 0)
        else:
            value = Shifts.of(lst_values(law, self.s, ctx))
        self._values[law] = value
        return value

    def idle(self, law):
        key = ("rate", law)
        if key not in self._values:
            self._values[key] = lst_at_rate(law, self.lam, self.ctx)
        return self._values[key]

    def finish(self, state):
        return Shifts.of(super().finish(state))


class _Probe:
    """An interpreter that records the laws whose transform at s enters the wait (``during``, ``repeat``), not those
    that enter through L*(lambda) alone (``interrupt``)."""

    def __init__(self):
        self.entering = []

    def start(self):
        return None

    def during(self, state, law, vacation=False):
        self.entering.append(law)
        return state

    def interrupt(self, state, law):
        return state

    def wait(self, state, threshold):
        return state

    def repeat(self, state, law, threshold, most=None):
        self.entering.append(law)
        return state

    def finish(self, state):
        return state


def entering_laws(model, blocks=None) -> tuple:
    """((field, law), ...) of the service and of the blocks' laws whose transform at s enters the wait (module
    docstring): the close-down, which the first batch ends, enters through C*(lambda) alone and is not listed."""
    blocks = blocks_of(model) if blocks is None else tuple(blocks)
    probe = _Probe()
    passage(blocks, probe)
    named = [fl for b in blocks for fl in b.laws()]
    out = [("service", model.service)]
    for law in probe.entering:
        field = next((f for f, lw in named if lw is law), None) or next(f for f, lw in named if lw == law)
        if (field, law) not in out:
            out.append((field, law))
    return tuple(out)


def shift_plan(model):
    """(the shifts D, "") when (SH) computes the tails of ``model`` (start threshold 1, a smooth service, every law
    entering the wait smooth or a finite set of atoms, at most :data:`MOST_SHIFTS` shifts), else (None, the field
    and the reason) -- or (None, None) when no law entering the wait has atoms (nothing to shift)."""
    from .vacation_wait import service_smooth, smooth_law

    if model.start_threshold != 1:
        return None, None
    laws = entering_laws(model)
    discrete = [(f, law) for f, law in laws[1:] if _shift_atoms(law) is not None]
    if not discrete:
        return None, None
    if not service_smooth(model):
        return None, ("service", f"the service time {model.service} has kinks: with a constant, empirical or "
                      f"uniform {discrete[0][0].replace('_', '-')} the wait's tails are sums of shifted inversions "
                      "of the queue without blocks, which needs a smooth service")
    for field, law in laws[1:]:
        if _shift_atoms(law) is None and not smooth_law(law):
            return None, (field, f"the {field.replace('_', '-')} time {law} has kinks but no atoms (its transform "
                          "is no finite sum of exp(-s D) factors): transform inversion cannot give the tails with a "
                          "setup, a close-down or a start threshold, and no shifted sum covers it (the moments are "
                          "computed)")
    sums = {Fraction(0)}
    for _, law in discrete:
        atoms = _shift_atoms(law)
        sums = {a + d for a in sums for d in atoms}
        if len(sums) > MOST_SHIFTS:
            return None, (discrete[0][0], f"the {discrete[0][0].replace('_', '-')} time {discrete[0][1]} and the "
                          f"other laws with atoms make more than {MOST_SHIFTS} shifts of the wait (each one more "
                          "inversion per tail): not computed (the moments are)")
    return tuple(sorted(sums)), ""


def _coefficients(model, ctx):
    """({D: y_D(0)}, {D: m_D}, {D: b_D / lambda}) in ``ctx`` (module docstring): the jets and the limits s -> oo."""
    blocks = blocks_of(model)
    Y = passage(blocks, ShiftPassage(model, ctx, jets=True))
    one = passage(blocks, ShiftPassage(model, ctx, X=ctx.num(1)))
    zero = passage(blocks, ShiftPassage(model, ctx, X=ctx.num(0)))
    lam = ctx.num(model.rate)
    y0, m, atom = {}, {}, {}
    for D, jet in Y.terms.items():
        jet = jet if isinstance(jet, Jet) else Jet(jet, ctx.num(0))
        y0[D], m[D] = jet.v, -jet.d
        b = one.terms.get(D, 0) - zero.terms.get(D, 0)
        atom[D] = b / lam
    return y0, m, atom


def shift_atom(model, ctx):
    """P(R = 0) = c b_0 / lambda (module docstring: only the unshifted part's g_0 has an atom at 0), in ``ctx``."""
    with ctx:
        y0, m, atom = _coefficients(model, ctx)
        c = 1 / sum((ctx.num(D) * y0[D] + m[D] for D in y0), ctx.num(0))
        return c * atom.get(Fraction(0), ctx.num(0))


def _shifted_law(model, bare_law, D):
    """The law of W_none + Z_D (module docstring): transform W_none(s) g_D(s) / m_D, P(= 0) = P(W_none = 0) b_D /
    (lambda m_D)."""
    from ..response import ResponseLaw

    def make(ctx):
        base = bare_law.transform(ctx)
        with ctx:
            y0, m, _ = _coefficients(model, ctx)
            y0D, mD = y0[D], m[D]

        def F(s):
            with ctx:
                yD = passage(blocks_of(model), ShiftPassage(model, ctx, s=s)).terms.get(D, 0)
                return base(s) * ((y0D - yD) / (s * mD))
        return F

    def p_zero(ctx):
        with ctx:
            _, m, atom = _coefficients(model, ctx)
            return bare_law.p_zero(ctx) * (atom[D] / m[D])

    def no_moments(*_):  # pragma: no cover - only its tails are asked
        raise NotImplementedError("the moments of a shifted part of the wait")

    return ResponseLaw(f"{bare_law.name} shifted", make, p_zero, no_moments)


def cancelling_sums(ts, digits: int, kind: str, what: str, value):
    """(P(kind > t) for t in ``ts`` to ``digits`` digits, the most working digits used) of a tail that is a sum of
    ``what`` that cancel: ``value(t, work)`` gives (the sum at ``work`` digits, kappa = the sum of the parts' moduli
    over the sum's), and the working digits rise to digits + 2 + log10(kappa) (a nonfinite kappa: 10 more), within
    the ``inversion_digits`` limit."""
    from ...symbolic import limits as _limits

    out, working = [], 0
    for t in ts:
        work = digits + 3
        while True:
            total, kappa = value(t, work)
            need = digits + 2 + max(0, math.ceil(math.log10(kappa))) if math.isfinite(kappa) else work + 10
            if need <= work:
                break
            work = _limits.check("inversion_digits", need, f"P({kind} > {float(t):.6g}) is a sum of {what} that "
                                 f"cancel: {digits} digits of it need {need} digits of each")
        out.append(total)
        working = max(working, work)
    return out, (working or None)


def shift_laws(model, kind: str):
    """``tails(ts, digits)`` of the wait (``kind`` "wait") or the sojourn by (SH) (module docstring); float64 gives
    None where it must escalate."""
    from ..backend import mp_context
    from ..response import law_float64_tails, tails as inverted_tails
    from .block_laws import bare_model
    from .vacation_wait import excess_laws

    bare = bare_model(model)
    base, first, _, m1, _ = excess_laws(bare, kind)
    shifts, _ = shift_plan(model)
    exact = mp_context(40)
    with exact:
        y0, m, _ = _coefficients(model, exact)
        c = 1 / exact.fsum([exact.num(D) * y0[D] + m[D] for D in y0])
    parts = {D: _shifted_law(model, base, D) for D in y0 if m[D] != 0}

    def terms(t: Fraction):
        """[(coefficient, term key, point)] of (SH) at t over c: "pi" for Pi_1, D for m_D Q_D."""
        keyed: dict = {}

        def add(key, u, coefficient):
            keyed[(key, u)] = keyed.get((key, u), 0) + coefficient

        for D in y0:
            if y0[D] != 0 and D != 0:
                add("pi", t - D, y0[D])
                add("pi", t, -y0[D])
            if m[D] != 0:
                add(D, t - D, m[D])
        return [(coefficient, key, u) for (key, u), coefficient in keyed.items() if coefficient != 0]

    def value_of(key, u, got):
        """The value of term ``key`` at u: Pi_1(u) (exact for u <= 0) or Q_D(u) (1 for u < 0)."""
        if key == "pi":
            return (m1 - u) if u <= 0 else m1 * got[("pi", u)]
        if u < 0:
            return 1
        return got[(key, u)]

    def needed(ts):
        keys = set()
        for t in ts:
            for _, key, u in terms(t):
                if u > 0 or (key != "pi" and u == 0):
                    keys.add((key, u))
        return keys

    def law_of(key):
        return first if key == "pi" else parts[key]

    def evaluate(keys, digits):
        got = {}
        by_law: dict = {}
        for key, u in keys:
            by_law.setdefault(key, []).append(u)
        for key, us in by_law.items():
            law = law_of(key)
            pts = sorted(set(us))
            zero = [u for u in pts if u == 0]
            positive = [u for u in pts if u > 0]
            if zero:
                ctx = mp_context((digits or 15) + 10)
                with ctx:
                    p0 = law.p_zero(ctx)
                got[(key, Fraction(0))] = 1 - p0
            if not positive:
                continue
            if digits is None:
                values, why = law_float64_tails(law, positive)
                if why is not None:
                    return None
            else:
                values = inverted_tails(law, positive, digits, option=f"{kind}_tail")[0]
            got.update({(key, u): v for u, v in zip(positive, values)})
        return got

    def combine(t, got, digits):
        import mpmath

        with mpmath.workdps((digits or 15) + 10):
            cm = mpmath.mpf(c)
            pieces = []
            for coefficient, key, u in terms(t):
                value = value_of(key, u, got)
                value = mpmath.mpf(value.numerator) / value.denominator if isinstance(value, Fraction) else \
                    mpmath.mpf(value)
                pieces.append(cm * mpmath.mpf(coefficient) * value)
            total = mpmath.fsum(pieces)
            if not total > 0:
                return total, math.inf
            return +total, float(mpmath.fsum(abs(p) for p in pieces) / total)

    def quadrature(t, got):
        """float64 P(W > t) with the differences Pi_1(t - D) - Pi_1(t) of (SH) (which cancel for a short shift D:
        kappa > 10, and whose excess law's float64 inversion fails first in the tail) each taken as
        int_{max(t - D, 0)}^t P(W_none > y) dy (plus (D - t)^+ exactly) by Gauss-Legendre of 16 and 32 nodes, the
        tails at every node by one float64 inversion of W_none; every term is then positive. None (escalate) when
        the two orders differ by more than 1e-11 of the tail or the inversion fails its self-check."""
        from .vacation_wait import gauss_legendre
        from ..backend import FLOAT64

        spans = []  # (weight y0_D, a, b): y0_D int_a^b P(W_none > y) dy
        exact = 0.0
        for D in y0:
            if y0[D] == 0 or D == 0:
                continue
            a = t - D
            if a < 0:
                exact += float(y0[D]) * float(-a)
            lo = max(a, Fraction(0))
            if t > lo:
                spans.append((float(y0[D]), float(lo), float(t)))
        rules = [gauss_legendre(n, FLOAT64) for n in (16, 32)]
        nodes = [(a + b) / 2 + (b - a) / 2 * x for _, a, b in spans for X, _ in rules for x in X]
        values, why = law_float64_tails(base, nodes) if nodes else ([], None)
        if why is not None:
            return None
        at = iter(values)
        sums = [exact, exact]
        for w, a, b in spans:
            for i, (X, W) in enumerate(rules):
                sums[i] += w * (b - a) / 2 * sum(wk * next(at) for wk in W)
        rest = sum(float(m[D]) * float(value_of(D, t - D, got)) for D in y0 if m[D] != 0)
        fine, coarse = float(c) * (sums[1] + rest), float(c) * (sums[0] + rest)
        return min(1.0, fine) if fine > 0 and abs(fine - coarse) <= 1e-11 * fine else None

    def tails(ts, digits):
        ts = [Fraction(t) for t in ts]
        if digits is None:  # one vectorised inversion per law for all the points; per point where that fails
            def shifted(points):
                return {(key, u) for key, u in needed(points) if key != "pi"}

            joint = evaluate(shifted(ts), None)
            out = []
            for t in ts:
                got = joint if joint is not None else evaluate(shifted([t]), None)
                out.append(None if got is None else quadrature(t, got))
            return out, None
        return cancelling_sums(ts, digits, kind, "shifted iterated tails",
                               lambda t, work: combine(t, evaluate(needed([t]), work), work))

    return tails


# -- a start threshold N > 1 with a constant or few-atom setup or single vacation ---------------------------------
#
# The threshold transform (WN) of :mod:`.blocks_threshold` run with a discrete law's L*(sigma) as shifts
# (:class:`ShiftThreshold`): the count before the tagged arrival (``pre``) never carries one (a period enters it
# through L*(lambda - lambda X(B* w)), a smooth function of s), the time after it (``post``) does, through
# L*(s + lambda - lambda X(w)) = sum_i w_i e^{-lambda d_i (1 - X(w))} e^{-s d_i}. So
#
#     W(s) = sum_D W_D(s) e^{-s D},    W_D(s) = alpha_D / s + W~_D(s)                                    (SN)
#
# with W~_D analytic at 0 (the divided differences over phi(s) put a simple pole at 0 in each shifted part, and
# sum_D alpha_D = 0). Hence W(s) = sum_D W~_D(s) e^{-s D} + sum_D alpha_D (e^{-s D} - 1) / s: the measures W~_D
# shifted by D plus the density -sum_D alpha_D 1{0 <= x < D} (the customers arriving during a constant period), and
#
#     P(W > t) = sum_D W~_D(0) P(Z_D > t - D) + sum_D (-alpha_D) (D - t)^+,
#
# Z_D of transform W~_D(s) / W~_D(0) (P(Z_D > u) = 1 for u < 0), a smooth inversion at the shifted time t - D;
# alpha_D and W~_D(0) are the Laurent coefficients at 0 of W_D (the trapezoidal rule on a small circle, as the
# moments of (WN)), the atom of Z_D at 0 its limit s -> oo (the shifts kept apart). A repeated period (multiple
# vacations) brings 1 / (1 - c e^{-s D}) = sum_k (c e^{-s D})^k, an infinite sum of shifts: its terms are kept up to
# the horizon H = t (:class:`Horizon`, :meth:`Shifts.reciprocal`), every shift D <= t then complete, and the shifts
# beyond t enter through sum_D (W~_D(0) - alpha_D D) = W(0) = 1 and sum_D alpha_D = 0 (equal to (SH) at N = 1 to
# 20 digits, tests/test_blocks_kinked.py; but its signed parts made a 0.99 quantile search exceed the inversion
# digits' limit after minutes, so multiple vacations with atoms stay refused under N > 1, :func:`threshold_shift_plan`):
#
#     P(W > t) = sum_{D <= t} W~_D(0) P(Z_D > t - D) + 1 - sum_{D <= t} (W~_D(0) - alpha_D D) - t sum_{D <= t} alpha_D
#
# (the last terms with the Laurent coefficients' digits + 15: a difference of numbers of order 1).


class Horizon:
    """``with Horizon(H):`` the reciprocals of sums of shifts (:meth:`Shifts.reciprocal`) keep the shifts up to H."""

    def __init__(self, H):
        self.H, self.before = H, None

    def __enter__(self):
        self.before, Shifts.horizon = Shifts.horizon, self.H
        Shifts.infinite = False
        return self

    def __exit__(self, *exc):
        Shifts.horizon = self.before


class ShiftThreshold:
    """Builds the interpreter :class:`~.blocks_threshold.ThresholdTransform` whose discrete laws give their
    transforms at s + lambda - lambda X(w) as :class:`Shifts` (module section above)."""

    @staticmethod
    def make(model, ctx, s, top):
        from math import factorial

        import mpmath

        from .blocks_threshold import ThresholdTransform

        class _Shifted(ThresholdTransform):
            """The kernel's hooks for a law with atoms: L*(s) and the Taylor coefficients at s + lambda as
            :class:`Shifts` (e^{-s D} kept as the shift D, e^{-lambda D} as a number); the kernel's ``_law`` builds
            the series from them as for any law."""

            def law_taylor(self, law, z, n):  # the kernel asks at z = s + lambda only
                atoms = discrete_atoms(law)
                pieces = None if atoms is not None else shift_pieces(law)
                if atoms is None and pieces is None:
                    return super().law_taylor(law, z, n)
                ctx, lam = self.ctx, self.lam
                densities = () if pieces is None else pieces[1]
                atoms = atoms if pieces is None else pieces[0]
                ends = {x for _, a, b in densities for x in (a, b)}
                with ctx:
                    decay = {d: (np.exp(-float(lam) * float(d)) if ctx.is_float64 else mpmath.exp(-lam * ctx.num(d)))
                             for d in {d for d, _ in atoms} | ends}
                    out = [Shifts({d: self.one_array * (ctx.num(w * (-d) ** j / factorial(j)) * decay[d])
                                   for d, w in atoms}) for j in range(n)]
                    if densities:
                        # c e^{-z x} / z at z = s + lambda: [z^j] of its Taylor series at z is e^{-z x}
                        # sum_{i<=j} (-x)^{j-i} / (j-i)! (-1)^i z^{-i-1}, e^{-z x} = e^{-lambda x} (the shift x)
                        inv = [1 / z]
                        for _ in range(n):
                            inv.append(inv[-1] / z)
                        for j in range(n):
                            extra: dict = {}
                            for c, a, b in densities:
                                for x, sign in ((a, 1), (b, -1)):
                                    v = sum((inv[i] * ctx.num(sign * c * (-x) ** (j - i) * (-1) ** i
                                                              / factorial(j - i)) for i in range(j + 1)),
                                            self.one_array * 0) * decay[x]
                                    extra[x] = extra[x] + v if x in extra else v
                            out[j] = out[j] + Shifts(extra)
                    return out

            def law_transform(self, law, z):  # L*(s) at the nodes themselves as shifts; elsewhere a number
                atoms = discrete_atoms(law)
                pieces = None if atoms is not None else shift_pieces(law)
                if (atoms is None and pieces is None) or z is not self.s:
                    return super().law_transform(law, z)
                with self.ctx:
                    if pieces is not None:
                        return shift_values(pieces, self.s, self.ctx) * self.one_array
                    return Shifts({d: self.one_array * self.ctx.num(w) for d, w in atoms})

        return _Shifted(model, ctx, s, top)


def threshold_shift_parts(model, ctx, s, mean_y, sojourn: bool = False):
    """{D: W_D(s)} of (SN) at the context array ``s`` (None: the limit s -> oo) in ``ctx``."""
    from .blocks_threshold import largest_threshold

    blocks = blocks_of(model)
    op = ShiftThreshold.make(model, ctx, s, largest_threshold(blocks))
    y, idle = passage(blocks, op)
    lam = ctx.num(model.rate)
    c = lam * ctx.num(1 - model.rho_bar) / mean_y
    idle = Shifts.of(idle)
    if s is None:
        parts = {D: v * c for D, v in idle.terms.items()}
    else:
        phi = s - (1 - op.XB) * lam
        parts = {D: v * c for D, v in (idle + op.kappa1 * (1 - y) / phi).terms.items()}
        if sojourn:
            parts = {D: v * op.B for D, v in parts.items()}
    return parts


def threshold_shift_plan(model):
    """(the shifts D of one pass, "") when (SN) computes the tails of ``model`` (N > 1; the laws entering the wait
    smooth or discrete, no lognormal among them), else (None, (field, reason)); (None, None) when no such law has
    atoms."""
    from .vacation_wait import smooth_law

    if model.start_threshold == 1:
        return None, None
    laws = entering_laws(model)
    discrete = [(f, law) for f, law in laws[1:] if _shift_atoms(law) is not None]
    if not discrete:
        return None, None
    if not smooth_law(model.service):
        return None, ("service", f"the service time {model.service} has kinks: with a constant or empirical "
                      f"{discrete[0][0].replace('_', '-')} the wait's tails are sums of shifted inversions, which "
                      "need a smooth service")
    repeated = [f for f, law in discrete if f == "vacation" and model.vacation_policy.value == "multiple"]
    if repeated:
        return None, ("vacation", f"the vacation time {model.vacation} puts shifts in the wait (a constant, empirical or "
                      "uniform law): with multiple vacations and a start "
                      "threshold N > 1 the wait's transform has factors 1 / (1 - c e^{-s D}), infinitely many shifts "
                      "whose signed parts the quantile search could not bound in the time budget (a setup and single "
                      "vacations are computed; the moments are)")
    for field, law in laws[1:]:
        if _shift_atoms(law) is None and not smooth_law(law):
            return None, (field, f"the {field.replace('_', '-')} time {law} has kinks but no atoms: not computed "
                          "(the moments are)")
    sums = {Fraction(0)}
    for _, law in discrete:
        sums = {a + d for a in sums for d in _shift_atoms(law)}
        if len(sums) > MOST_SHIFTS:
            return None, (discrete[0][0], f"more than {MOST_SHIFTS} shifts of the wait: not computed (the moments "
                          "are)")
    return tuple(sorted(sums)), ""


def _laurent(model, digits: int, sojourn: bool, H=Fraction(0), parts=None, order: int = 1):
    """({D: [alpha_D1, ..., alpha_DJ]}, {D: W~_D(0)}, {D: W_D(oo)}, E[Y], whether every shift is kept: no
    geometric series of shifts cut at the horizon) of (SN) (J = ``order``, the highest pole
    order at 0 of the shifted parts W_D(s) = sum_j alpha_Dj / s^j + W~_D(s)) to ``digits`` digits (mpf): the
    trapezoidal rule on the circle of radius h = scale / 1000 around 0
    (:func:`~.blocks_threshold.singularity_scale`) with digits + 10 nodes at digits + (J + 1) log10(1/h) + 10 working
    digits (the poles' alpha_Dj / h^j cancel in W~_D(0)), alpha_Dj = (1/n) sum_k W_D(p_k) p_k^j and W~_D(0) =
    (1/n) sum_k W_D(p_k). ``parts(ctx, s, mean_y)`` gives {D: W_D(s)} (s None: the limit s -> oo; default the
    threshold transform's, :func:`threshold_shift_parts`); for a lognormal (no circle around 0: a cut)
    the formal series of :func:`~.blocks_threshold.shift_laurent`."""
    import mpmath

    from ..backend import mp_context
    from .block_moments import passage_moments
    from .blocks_threshold import numeric_law, shift_laurent, singularity_scale

    if parts is None:
        def parts(ctx, s, mean_y):
            return threshold_shift_parts(model, ctx, s, mean_y, sojourn)
    blocks = blocks_of(model)
    scale = singularity_scale(model, blocks)
    work = mp_context(digits + int((order + 1) * math.log10(1000 / float(scale))) + 10)
    with work, Horizon(H):
        mean_y = passage_moments(model, work, order=1)[0][1]
        complete = not Shifts.infinite
        if numeric_law(model) is not None:  # a lognormal (a cut along the negative axis): formal series at 0
            alpha, finite = shift_laurent(lambda z: parts(work, z, mean_y), work, order)
        else:
            h = work.num(scale) / 1000
            n = digits + 10
            pts = [h * mpmath.expj(2 * mpmath.pi * (k + mpmath.mpf(1) / 2) / n) for k in range(n)]
            values_of = parts(work, np.array(pts, dtype=object), mean_y)
            alpha, finite = {}, {}
            for D, values in values_of.items():
                values = np.broadcast_to(values, (n,))
                alpha[D] = [mpmath.fsum(v * p**j for v, p in zip(values, pts)).real / n for j in range(1, order + 1)]
                finite[D] = mpmath.fsum(values).real / n
        at_infinity = {} if sojourn else parts(work, None, mean_y)
        at_infinity = {D: np.broadcast_to(v, (1,))[0] for D, v in at_infinity.items()}
        at_infinity = {D: (v.real if hasattr(v, "real") else v) for D, v in at_infinity.items()}
    return alpha, finite, at_infinity, mean_y, complete


def threshold_shift_laws(model, kind: str):
    """``tails(ts, digits)`` of the wait (``kind`` "wait") or the sojourn by (SN) (section above); float64 gives
    None where it must escalate (an inversion that fails its self-check, or kappa > 10). A uniform law among the
    laws entering the wait adds poles of higher order to the shifted parts: :func:`laurent_shift_laws` with
    J = 2 + (the number of such laws)."""
    order = 1 + (1 + len(density_laws(model)) if density_laws(model) else 0)
    return laurent_shift_laws(model, kind, None, order)


def laurent_shift_laws(model, kind: str, parts, order: int):
    """``tails(ts, digits)`` of the wait (``kind`` "wait") or the sojourn from its shifted parts
    W(s) = sum_D e^{-s D} W_D(s), W_D(s) = sum_{j=1}^{J} alpha_Dj / s^j + W~_D(s) with W~_D analytic at 0
    (``parts``: see :func:`_laurent`; J = ``order``). The inverse of e^{-s D} / s^j is (x - D)_+^{j-1} / (j-1)!, so
    the distribution function is a finite sum over the shifts D <= t:

        P(W > t) = 1 - sum_{D <= t} [ W~_D(0) P(Z_D <= t - D) + sum_j alpha_Dj (t - D)^j / j! ],           (SN)

    Z_D of transform W~_D(s) / W~_D(0), a smooth inversion at the shifted time t - D, its atom at 0 W_D(oo) / W~_D(0).
    Beyond the largest shift M the polynomial parts cancel (the pole parts sum to the transform of a function
    supported on [0, M]) and sum_D W~_D(0) = W(0) - sum_{D,j} alpha_Dj (-D)^j / j!, so for t >= M

        P(W > t) = sum_D W~_D(0) P(Z_D > t - D)                                                             (SN')

    with no "1 -" (the only form for a small tail). J = 1 with the threshold transform's parts is the section's
    (SN); a uniform setup or vacation (its transform (e^{-s a} - e^{-s b}) / ((b - a) s): two shifts with a 1 / s
    factor) raises J. float64 gives None where it must escalate (an inversion that fails its self-check, or
    kappa > 10)."""
    from ..response import ResponseLaw, law_float64_tails, tails as inverted_tails

    sojourn = kind == "sojourn"
    kept: dict = {}

    def coefficients(digits, H=Fraction(0)):
        """The Laurent data at ``digits`` (+ 15: the remainder beyond the horizon is a difference) for a horizon at
        least H (the largest kept when it covers H)."""
        key = digits or 15
        got = kept.get(key)
        if got is None or got[0] < H:
            kept[key] = (H, _laurent(model, key + 15, sojourn, H, parts, order))
        return kept[key][1]

    def part_law(D, digits):
        alpha, finite, at_inf, mean_y, _ = coefficients(digits, D)

        def make(ctx):
            def num(x):
                return float(x) if ctx.is_float64 else ctx.num(x)

            with ctx:
                a, f, ey = [num(v) for v in alpha[D]], num(finite[D]), num(mean_y)

            def F(s):
                with ctx, Horizon(D):
                    W = (parts(ctx, s, ey) if parts is not None else
                         threshold_shift_parts(model, ctx, s, ey, sojourn)).get(D, 0)
                    inv = 1 / s
                    power = inv
                    for aj in a:
                        W = W - power * aj
                        power = power * inv
                    return W / f
            return F

        def p_zero(ctx):
            with ctx:
                return ctx.num(at_inf.get(D, 0)) / ctx.num(finite[D]) if not ctx.is_float64 else \
                    float(at_inf.get(D, 0)) / float(finite[D])

        def no_moments(*_):  # pragma: no cover - only its tails are asked
            raise NotImplementedError("the moments of a shifted part of the wait")

        return ResponseLaw(f"{kind} shifted", make, p_zero, no_moments)

    def one(t, digits):
        import mpmath

        alpha, finite, _, _, complete = coefficients(digits, t)
        pieces = []
        with mpmath.workdps((digits or 15) + 10):
            # (SN): the shifts D <= t explicitly (complete: the reciprocals keep every shift up to the horizon
            # H >= t), 1 - sum_{D <= t} (W~_D(0) + sum_j alpha_Dj (t - D)^j / j!) computed with the coefficients'
            # digits + 15 (a difference of O(1) numbers); beyond the largest shift (SN'), without it
            near = [D for D in finite if D <= t]
            tm = mpmath.mpf(t.numerator) / t.denominator
            beyond = complete and t >= max(finite)
            rest, scales, errors = mpmath.mpf(0), [], []
            if not beyond:
                rest = 1 - mpmath.fsum(mpmath.mpf(finite[D]) for D in near) - mpmath.fsum(
                    mpmath.mpf(a) * (tm - mpmath.mpf(D.numerator) / D.denominator) ** j / mpmath.factorial(j)
                    for D in near for j, a in enumerate(alpha[D], start=1))
                if rest != 0:
                    pieces.append(rest)
            for D in near:
                if finite[D] == 0:
                    continue
                u = t - D
                law = part_law(D, digits)
                if u == 0:
                    value = 1 - mpmath.mpf(law.p_zero(_context_for(digits)))
                elif digits is None and order > 1:  # a signed part: its tail unclamped, with its error
                    value, error = float64_signed_tail(law, u)
                    if value is None:
                        return None, math.inf
                    errors.append(abs(mpmath.mpf(finite[D])) * error)
                elif digits is None:
                    got, why = law_float64_tails(law, [u])
                    if why is not None:
                        return None, math.inf
                    value = got[0]
                elif order > 1:  # signed parts (a uniform law): each tail to 10^-(digits + 1) absolute
                    value = absolute_tail(law, u, digits, kind)
                else:
                    value = inverted_tails(law, [u], digits, option=f"{kind}_tail")[0][0]
                pieces.append(mpmath.mpf(finite[D]) * mpmath.mpf(value))
                scales.append(abs(mpmath.mpf(finite[D])))
            total = mpmath.fsum(pieces)
            if not total > 0:
                return total, math.inf
            if order > 1 and digits is None:  # float64: kept when the parts' errors are within 1e-9 of the sum (the
                # float64 criterion of the precision policy), else escalated (kappa oo)
                error = mpmath.fsum(errors) + 1e-15 * mpmath.fsum(abs(p) for p in pieces)
                return +total, (1.0 if error <= 1e-9 * total else math.inf)
            if order > 1 and digits is not None:  # the error bound: sum_D |W~_D(0)| 10^-(digits + 1)
                return +total, float((abs(rest) + mpmath.fsum(scales)) / total) if not beyond else \
                    float(mpmath.fsum(scales) / total)
            return +total, float(mpmath.fsum(abs(p) for p in pieces) / total)

    def tails(ts, digits):
        try:
            return tails_of(ts, digits)
        except TooManyShifts as exc:
            from ...symbolic.errors import ParameterError

            raise ParameterError(f"--{kind}-tail", f"lies beyond the {MOST_SHIFTS} shifts of the wait that are "
                                 "computed (the repeated constant or empirical vacations put one more inversion per "
                                 "shift below t): give a smaller time (or a quantile level nearer 1/2)",
                                 exc.args[0]) from None

    def tails_of(ts, digits):
        ts = [Fraction(t) for t in ts]
        if digits is None:
            out = []
            for t in ts:
                total, kappa = one(t, None)
                out.append(min(1.0, float(total)) if total is not None and kappa <= 10 else None)
            return out, None
        return cancelling_sums(ts, digits, kind, "shifted parts", one)

    return tails


# -- start threshold 1 with a uniform setup or vacation: the Laurent parts of (SH) ---------------------------------
#
# A uniform law's transform (e^{-s a} - e^{-s b}) / ((b - a) s) is two shifts with coefficients in 1 / s
# (:func:`shift_pieces`), so the first-service law of the passage is Y(s) = sum_D y_D(s) e^{-s D} with y_D meromorphic
# at 0 (poles of order up to the number of uniform laws) and the jets of (SH) do not exist. The wait
# W(s) = W_none(s) V_r(s) = sum_D e^{-s D} W_D(s) with
#
#     W_D(s) = c W_none(s) ([D = 0] - y_D(s)) / s,       c = lambda l_1 / E[Y],                               (SU)
#
# (the sojourn: W_none(s) B*(s) in place of W_none(s)) is then the shifted parts of (SN) with poles of order up to
# J = 2 + (the number of uniform laws), and :func:`laurent_shift_laws` gives its tails: no transform with an
# exp(-s D) factor is inverted, only W~_D(s) = W_D(s) - sum_j alpha_Dj / s^j (an integrated smooth function with its
# polynomial part removed) at the shifted times t - D. P(W = 0) = W_0(oo) = c P(W_none = 0) b_0 / lambda, b_D the
# coefficient of X in y_D as s -> oo (the uniform laws' coefficients c / s vanish there).


def generating_shift_parts(model, kind: str):
    """``parts(ctx, s, mean_y)`` -> {D: W_D(s)} of (SU) at the context array ``s`` (None: the limit s -> oo, where
    W_D(oo) = c P(W_none = 0) b_D / lambda; the sojourn's are 0), for :func:`laurent_shift_laws`."""
    from . import vacation_wait as VW
    from .block_laws import bare_model

    own = VW.response_laws(bare_model(model))[kind]
    blocks = blocks_of(model)
    transforms: dict = {}

    def parts(ctx, s, mean_y):
        lam = ctx.num(model.rate)
        c = lam * ctx.num(model.batch.mean) / mean_y
        if s is None:
            if kind == "sojourn":
                return {Fraction(0): ctx.num(0)}
            one = passage(blocks, ShiftPassage(model, ctx, X=ctx.num(1)))
            zero = passage(blocks, ShiftPassage(model, ctx, X=ctx.num(0)))
            p0 = own.p_zero(ctx)
            return {D: (one.terms.get(D, 0) - zero.terms.get(D, 0)) * (c * p0 / lam)
                    for D in set(one.terms) | set(zero.terms)}
        key = None if ctx.is_float64 else ctx.dps
        if key not in transforms:
            transforms[key] = own.transform(ctx)
        base = transforms[key](s)
        Y = passage(blocks, ShiftPassage(model, ctx, s=s))
        inv = 1 / s
        out = {D: (-y) * inv * base * c for D, y in Y.terms.items()}
        zero_shift = Fraction(0)
        out[zero_shift] = (out[zero_shift] if zero_shift in out else 0) + inv * base * c
        return out

    return parts


def density_shift_laws(model, kind: str):
    """``tails(ts, digits)`` of the wait or the sojourn with start threshold 1 and a uniform law entering the wait
    (section above, (SU)): :func:`laurent_shift_laws` with J = 2 + the number of uniform laws."""
    return laurent_shift_laws(model, kind, generating_shift_parts(model, kind), 2 + len(density_laws(model)))


def density_shift_atom(model, ctx):
    """P(W = 0) = W_0(oo) of (SU) in ``ctx`` (start threshold 1, a uniform law entering the wait)."""
    from .block_moments import passage_moments

    with ctx:
        mean_y = passage_moments(model, ctx, order=1)[0][1]
        value = generating_shift_parts(model, "wait")(ctx, None, mean_y).get(Fraction(0), 0)
        return value.real if hasattr(value, "real") else value


def float64_signed_tail(law, u, tilt=0.0):
    """(P(Z > u), its error) of a signed part's law in float64, or (None, None): the Euler inversion with the two
    parameter sets of :func:`~qderive.numeric.kernels.tails.float64_tails` (discretisation errors about e^{-23} and
    e^{-27}), not clamped to [0, 1] (the part is a signed measure), the error their difference (None: not finite).

    ``tilt`` eta >= 0 (below the decay rate of every singularity of the law's transform: G(s - eta) analytic for
    Re s > 0) inverts h(t) = e^{eta t} P(Z > t), of transform G(s - eta), and returns e^{-eta u} h(u): Euler's
    rounding noise, about 1e-16 e^{A/2} of h's scale, is then relative to e^{eta u} P(Z > u) instead of the mass
    (Abate and Whitt's damping; their discretisation error e^{-A} h(3u) / h(u) is in the two sets' difference)."""
    from ..backend import FLOAT64
    from ..kernels.inversion import euler_inversion
    from ..kernels.tails import TAIL_FLOAT64_SETS, tail_transform

    G0 = tail_transform(law.transform(FLOAT64))
    eta = float(tilt)
    G = G0 if eta == 0 else (lambda s: G0(s - eta))
    t = np.array([float(u)])
    with np.errstate(all="ignore"):
        try:
            a, b = (euler_inversion(FLOAT64, G, t, A, n, m)[0] for A, n, m in TAIL_FLOAT64_SETS)
        except (OverflowError, ZeroDivisionError):
            return None, None
    if not (np.isfinite(a) and np.isfinite(b)):
        return None, None
    scale = math.exp(-eta * float(u))
    return float(np.real(a)) * scale, float(abs(a - b)) * scale


def absolute_tail(law, u, digits: int, kind: str):
    """P(Z > u) of a signed part's law (its tail may be near 0 or negative: no relative digits) to 10^-(digits + 1)
    absolute: the Euler inversion of :mod:`qderive.numeric.response` (discretisation error e^{-A}, absolute) at
    digits + 3 and digits + 8, more by 10 until the two agree, within the ``inversion_digits`` limit."""
    import mpmath

    from ...symbolic import limits as _limits
    from ..backend import mp_context
    from ..response import euler_tails

    extra = 0
    while True:
        want = digits + 3 + extra
        _limits.check("inversion_digits", want, f"a shifted part of P({kind} > t) at {float(u):.6g} needs {want} "
                      "digits of inversion")
        a_ctx, b_ctx = mp_context(int(1.5 * want) + 10), mp_context(int(1.5 * (want + 5)) + 10)
        with a_ctx:
            a = euler_tails(law, a_ctx, [u], want)[0]
        with b_ctx:
            b = euler_tails(law, b_ctx, [u], want + 5)[0]
            if abs(a - b) <= mpmath.mpf(10) ** -(digits + 1):
                return +b
        extra += 10


def _context_for(digits):
    """The float64 context for ``digits`` None, else an mpmath context with 10 guard digits."""
    from ..backend import FLOAT64, mp_context

    return FLOAT64 if digits is None else mp_context(digits + 10)
