"""The wait with composed blocks when a setup or a vacation law is a constant or a few atoms: exact tails by smooth
inversions at shifted times -- start threshold 1 by (SH) below, N > 1 by (SN) (the last section).

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

import math
from fractions import Fraction

import numpy as np

from ...symbolic.blocks import blocks_of, passage
from .block_laws import lst_at_rate, lst_values
from .generating_passage import GeneratingPassage

__all__ = ["Shifts", "Jet", "ShiftPassage", "shift_plan", "shift_laws", "shift_atom",
           "MOST_SHIFTS", "entering_laws", "ShiftThreshold", "threshold_shift_parts", "threshold_shift_plan",
           "threshold_shift_laws"]

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
        if atoms is not None:
            value = Shifts({d: ctx.num(w) for d, w in atoms})
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
    discrete = [(f, law) for f, law in laws[1:] if discrete_atoms(law) is not None]
    if not discrete:
        return None, None
    if not service_smooth(model):
        return None, ("service", f"the service time {model.service} has kinks: with a constant or empirical "
                      f"{discrete[0][0].replace('_', '-')} the wait's tails are sums of shifted inversions of the "
                      "queue without blocks, which needs a smooth service")
    for field, law in laws[1:]:
        if discrete_atoms(law) is None and not smooth_law(law):
            return None, (field, f"the {field.replace('_', '-')} time {law} has kinks but no atoms (its transform "
                          "is no finite sum of exp(-s D) factors): transform inversion cannot give the tails with a "
                          "setup, a close-down or a start threshold, and no shifted sum covers it (the moments are "
                          "computed)")
    sums = {Fraction(0)}
    for _, law in discrete:
        atoms = [d for d, _ in discrete_atoms(law)]
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
                if atoms is None:
                    return super().law_taylor(law, z, n)
                ctx, lam = self.ctx, self.lam
                with ctx:
                    decay = {d: (np.exp(-float(lam) * float(d)) if ctx.is_float64 else mpmath.exp(-lam * ctx.num(d)))
                             for d, _ in atoms}
                    return [Shifts({d: self.one_array * (ctx.num(w * (-d) ** j / factorial(j)) * decay[d])
                                    for d, w in atoms}) for j in range(n)]

            def law_transform(self, law, z):  # L*(s) at the nodes themselves as shifts; elsewhere a number
                atoms = discrete_atoms(law)
                if atoms is None or z is not self.s:
                    return super().law_transform(law, z)
                with self.ctx:
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
    discrete = [(f, law) for f, law in laws[1:] if discrete_atoms(law) is not None]
    if not discrete:
        return None, None
    if not smooth_law(model.service):
        return None, ("service", f"the service time {model.service} has kinks: with a constant or empirical "
                      f"{discrete[0][0].replace('_', '-')} the wait's tails are sums of shifted inversions, which "
                      "need a smooth service")
    repeated = [f for f, law in discrete if f == "vacation" and model.vacation_policy.value == "multiple"]
    if repeated:
        return None, ("vacation", f"the vacation time {model.vacation} has atoms: with multiple vacations and a start "
                      "threshold N > 1 the wait's transform has factors 1 / (1 - c e^{-s D}), infinitely many shifts "
                      "whose signed parts the quantile search could not bound in the time budget (a setup and single "
                      "vacations are computed; the moments are)")
    for field, law in laws[1:]:
        if discrete_atoms(law) is None and not smooth_law(law):
            return None, (field, f"the {field.replace('_', '-')} time {law} has kinks but no atoms: not computed "
                          "(the moments are)")
    sums = {Fraction(0)}
    for _, law in discrete:
        sums = {a + d for a in sums for d, _ in discrete_atoms(law)}
        if len(sums) > MOST_SHIFTS:
            return None, (discrete[0][0], f"more than {MOST_SHIFTS} shifts of the wait: not computed (the moments "
                          "are)")
    return tuple(sorted(sums)), ""


def _laurent(model, digits: int, sojourn: bool, H=Fraction(0)):
    """({D: alpha_D}, {D: W~_D(0)}, {D: W_D(oo)}, E[Y]) of (SN) to ``digits`` digits (mpf): the trapezoidal rule on
    the circle of radius h = scale / 1000 around 0 (:func:`~.blocks_threshold.singularity_scale`) with digits + 10 nodes at
    digits + 2 log10(1/h) + 10 working digits (the pole's alpha / h cancels in W~_D(0)); for a lognormal (no circle
    around 0: a cut) the formal series of :func:`~.blocks_threshold.shift_laurent`."""
    import mpmath

    from ..backend import mp_context
    from .block_moments import passage_moments
    from .blocks_threshold import numeric_law, shift_laurent, singularity_scale

    blocks = blocks_of(model)
    scale = singularity_scale(model, blocks)
    work = mp_context(digits + int(2 * math.log10(1000 / float(scale))) + 10)
    with work, Horizon(H):
        mean_y = passage_moments(model, work, order=1)[0][1]
        if numeric_law(model) is not None:  # a lognormal (a cut along the negative axis): formal series at 0
            alpha, finite = shift_laurent(lambda s: threshold_shift_parts(model, work, s, mean_y, sojourn), work)
        else:
            h = work.num(scale) / 1000
            n = digits + 10
            pts = [h * mpmath.expj(2 * mpmath.pi * (k + mpmath.mpf(1) / 2) / n) for k in range(n)]
            parts = threshold_shift_parts(model, work, np.array(pts, dtype=object), mean_y, sojourn)
            alpha, finite = {}, {}
            for D, values in parts.items():
                values = np.broadcast_to(values, (n,))
                alpha[D] = mpmath.fsum(v * p for v, p in zip(values, pts)).real / n
                finite[D] = mpmath.fsum(values).real / n
        at_infinity = {D: (np.broadcast_to(v, (1,))[0] if not sojourn else 0)
                       for D, v in threshold_shift_parts(model, work, None, mean_y).items()}
        at_infinity = {D: (v.real if hasattr(v, "real") else v) for D, v in at_infinity.items()}
    return alpha, finite, at_infinity, mean_y


def threshold_shift_laws(model, kind: str):
    """``tails(ts, digits)`` of the wait (``kind`` "wait") or the sojourn by (SN) (section above); float64 gives
    None where it must escalate (an inversion that fails its self-check, or kappa > 10)."""
    from ..response import ResponseLaw, law_float64_tails, tails as inverted_tails

    sojourn = kind == "sojourn"
    kept: dict = {}

    def coefficients(digits, H=Fraction(0)):
        """The Laurent data at ``digits`` (+ 15: the remainder beyond the horizon is a difference) for a horizon at
        least H (the largest kept when it covers H)."""
        key = digits or 15
        got = kept.get(key)
        if got is None or got[0] < H:
            kept[key] = (H, _laurent(model, key + 15, sojourn, H))
        return kept[key][1]

    def part_law(D, digits):
        alpha, finite, at_inf, mean_y = coefficients(digits, D)

        def make(ctx):
            with ctx:
                a, f, ey = ctx.num(alpha[D]) if not ctx.is_float64 else float(alpha[D]), \
                    (ctx.num(finite[D]) if not ctx.is_float64 else float(finite[D])), \
                    (ctx.num(mean_y) if not ctx.is_float64 else float(mean_y))

            def F(s):
                with ctx, Horizon(D):
                    W = threshold_shift_parts(model, ctx, s, ey, sojourn).get(D, 0)
                    return (W - a / s) / f
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

        alpha, finite, _, _ = coefficients(digits, t)
        pieces = []
        with mpmath.workdps((digits or 15) + 10):
            # the shifts D <= t explicitly (complete: the reciprocals keep every shift up to the horizon H >= t); those
            # beyond t, sum_{D > t} [W~_D(0) + (-alpha_D) (D - t)], from sum_D (W~_D(0) - alpha_D D) = W(0) = 1 and
            # sum_D alpha_D = 0: 1 - sum_{D <= t} (W~_D(0) - alpha_D D) - t sum_{D <= t} alpha_D (computed with the
            # coefficients' digits + 15: a difference of O(1) numbers)
            near = [D for D in finite if D <= t]
            tm = mpmath.mpf(t.numerator) / t.denominator
            rest = (1 - mpmath.fsum(mpmath.mpf(finite[D]) - mpmath.mpf(alpha[D]) * (mpmath.mpf(D.numerator) /
                                                                                 D.denominator) for D in near)
                    - tm * mpmath.fsum(mpmath.mpf(alpha[D]) for D in near))
            if rest != 0:
                pieces.append(rest)
            for D in near:
                if finite[D] == 0:
                    continue
                u = t - D
                law = part_law(D, digits)
                if u == 0:
                    value = 1 - mpmath.mpf(law.p_zero(_context_for(digits)))
                elif digits is None:
                    got, why = law_float64_tails(law, [u])
                    if why is not None:
                        return None, math.inf
                    value = got[0]
                else:
                    value = inverted_tails(law, [u], digits, option=f"{kind}_tail")[0][0]
                pieces.append(mpmath.mpf(finite[D]) * mpmath.mpf(value))
            total = mpmath.fsum(pieces)
            if not total > 0:
                return total, math.inf
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


def _context_for(digits):
    """The float64 context for ``digits`` None, else an mpmath context with 10 guard digits."""
    from ..backend import FLOAT64, mp_context

    return FLOAT64 if digits is None else mp_context(digits + 10)
