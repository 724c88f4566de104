"""Tails of the wait with a smooth service and a kinked vacation law (constant, uniform, empirical): smooth
inversions at the shifted times t - (the vacation law's breakpoints).

The transform of the wait factors as W(s) = W_b(s) J(s) V_r(s) (:mod:`qderive.symbolic.closed_forms.vacation_wait`):
W = W_0 + R with W_0 (LST W_b J: the wait in the same queue without vacations) independent of the residual R of the
non-serving period (LST V_r). With a smooth service (exponential, Erlang, gamma, hyperexponential, phase-type) W_0's
transform has no ``exp(-s D)`` factor; the kinks of a constant, uniform or empirical vacation V sit in R alone,
whose law is explicit: an atom a_0 at 0 and the density w_c S(x), S(x) = P(V > x) (multiple vacations a_0 = 0,
w_c = 1 / f_1; single vacations a_0 = c_0 / (lambda f_1 + c_0), w_c = lambda / (lambda f_1 + c_0),
c_0 = varphi(lambda); ``docs/theory/chapter2.md`` section 0). With P(W_0 > u) = 1 for u < 0::

    P(W > t) = a_0 P(W_0 > t) + w_c int_0^oo S(x) P(W_0 > t - x) dx.

S is linear on each piece [x_0, x_1] between its breakpoints (a constant d: 1 on [0, d); uniform [a, b]: 1, then
(b - x) / (b - a); empirical: the weight of the points above x), S = alpha + beta x there. With the iterated tails
Pi_1(u) = int_u^oo P(W_0 > y) dy and Pi_2(u) = int_u^oo Pi_1(y) dy, integration by parts in u = t - x gives each
piece exactly::

    int_{x_0}^{x_1} S(x) P(W_0 > t - x) dx = S(x_1) Pi_1(t - x_1) - S(x_0) Pi_1(t - x_0)
                                             + beta (Pi_2(t - x_0) - Pi_2(t - x_1)),

where for u <= 0 (known exactly) Pi_1(u) = m_1 - u, Pi_2(u) = m_2 / 2 - m_1 u + u^2 / 2 (m_k = E W_0^k), and for
u > 0 each is a tail of a smooth law, inverted by the Euler algorithm under the policy of
:mod:`qderive.numeric.response`: Pi_1(u) = m_1 P(E_1 > u), E_1 the stationary excess of W_0 (LST
(1 - W_0(s)) / (m_1 s)), and Pi_2(u) = m_1 e_1 P(E_2 > u), E_2 that of E_1 (LST (1 - E_1(s)) / (e_1 s),
e_1 = E E_1 = m_2 / (2 m_1)). No transform with an ``exp(-s D)`` factor is inverted.

The terms have both signs (a short piece is a difference of nearly equal iterated tails): the sum's relative
rounding is at most kappa times that of the inverted values, kappa = sum |coefficient x inverted value| / P(W > t),
computed with the values themselves (an a-priori bound). D digits: the values to D + 3 digits (two inversion
precisions that agree), accepted when kappa <= 10, else recomputed to D + 2 + log10 kappa digits. float64: the
values by the float64 inversion with its self-check, accepted when no value escalated and kappa <= 10 (the values
are within about 1e-10; the sum within 1e-9), else None (recomputed at 15 digits by the response module, with a
note). The sojourn W + B is the same with W_0 + B (LST W_b J beta) in place of W_0.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

__all__ = ["shift_setup", "shift_tails"]


def _service_smooth(model) -> bool:
    import sympy as sp

    from .vacation_wait import numeric_transform

    if numeric_transform(model.service):  # the lognormal: an integral of an analytic density, evaluated by its rule
        return True
    s = sp.Symbol("s")
    lst = model.service.lst(s)
    return not (any(s in e.free_symbols for e in lst.atoms(sp.exp)) or lst.has(sp.Integral))


def _linear_pieces(law):
    """((x_0, x_1, S(x_0+), S(x_1-)), ...) exactly (Fractions) covering the support of S(x) = P(V > x), or None when
    S is not piecewise linear between its breakpoints: steps from ``survival_pieces`` (w 1{x < d}: constant,
    empirical), else ``survival`` checked linear at three interior points of each piece (uniform)."""
    import mpmath

    pieces = law.survival_pieces()
    if pieces and all(len(p) == 3 and p[1] == 0 and p[2] is not None for p in pieces):
        steps = [(Fraction(w), Fraction(d)) for w, _, d in pieces]
        ends = [Fraction(0)] + sorted({d for _, d in steps})
        out = []
        for x0, x1 in zip(ends[:-1], ends[1:]):
            level = sum((w for w, d in steps if d > x0), Fraction(0))
            out.append((x0, x1, level, level))
        return tuple(out)
    with mpmath.workdps(40):
        if law.survival(mpmath.mpf(1)) is None:
            return None
        ends = [Fraction(0)] + sorted(Fraction(k) for k in law.survival_kinks())
        out = []
        for x0, x1 in zip(ends[:-1], ends[1:]):
            xs = [x0 + (x1 - x0) * Fraction(i, 4) for i in (1, 2, 3)]
            v = [law.survival(mpmath.mpf(x.numerator) / x.denominator) for x in xs]
            if abs(v[0] - 2 * v[1] + v[2]) > mpmath.mpf(10) ** -30:
                return None
            s0, s1 = (_exact_rational(2 * v[0] - v[1]), _exact_rational(2 * v[2] - v[1]))  # at x_0 and x_1
            if abs(mpmath.mpf(s0.numerator) / s0.denominator + mpmath.mpf(s1.numerator) / s1.denominator
                   - 2 * v[1]) > mpmath.mpf(10) ** -30:
                return None
            out.append((x0, x1, s0, s1))
        if law.survival(mpmath.mpf(ends[-1].numerator) / ends[-1].denominator) != 0:  # the support ends there
            return None
    return tuple(out)


def _exact_rational(x) -> Fraction:
    """An mpf that is a rational number of small height (the value of a linear survival function at a rational
    point) as that Fraction."""
    return Fraction(str(x)).limit_denominator(10**12)


def shift_setup(model):
    """(the model without vacations, the linear pieces of P(V > x)) for a smooth service with a vacation law whose
    survival function is linear between breakpoints (constant, uniform, empirical); None otherwise."""
    from qderive.symbolic.cache import cached

    from .vacation_wait import _key

    law = model.vacation
    if law is None or not cached(_key(model, "service_smooth"), lambda: _service_smooth(model)):
        return None  # (cached: a warm process imports no SymPy)
    pieces = _linear_pieces(law)
    if pieces is None:
        return None
    bare = dataclasses.replace(model, vacation=None, vacation_policy=type(model.vacation_policy)("multiple"))
    return bare, pieces


@functools.lru_cache(maxsize=16)
def _laws(bare, kind: str):
    """(the law of W_0 (or W_0 + B), its stationary excess E_1, E_1's stationary excess E_2, m_1, m_2)."""
    from ..response import ResponseLaw
    from .vacation_wait import response_laws

    base = response_laws(bare)[kind]
    m1, m2 = base.moment_values(2, None)
    m1, m2 = Fraction(m1), Fraction(m2)
    e1 = m2 / (2 * m1)

    def excess(parent, mean):
        def make(ctx):
            F = parent.transform(ctx)
            m = ctx.num(mean)
            return lambda s: (1 - F(s)) / (m * s)

        return ResponseLaw(f"{base.name} excess", make, lambda ctx: ctx.num(0), base.moment_values)

    first = excess(base, m1)
    return base, first, excess(first, e1), m1, m2


def _terms(model, setup, kind: str, t: Fraction):
    """P(W > t) as a_0 P(W_0 > t) + w_c sum(coefficient x value): the list of (coefficient, law index, point) of the
    inverted terms (law 0: P(W_0 > u), 1: Pi_1(u) / m_1, 2: Pi_2(u) / (m_1 e_1)) and the exact part (Fractions)."""
    bare, pieces = setup
    _, _, _, m1, m2 = _laws(bare, kind)
    e1m1 = m2 / 2
    inverted, exact = {}, Fraction(0)

    def pi(order, u, coefficient):
        nonlocal exact
        if u <= 0:
            exact += coefficient * ((m1 - u) if order == 1 else (m2 / 2 - m1 * u + u * u / 2))
        else:  # equal points merged: a continuous S telescopes (uniform: S(a) Pi_1(t - a) cancels)
            key = (order, u)
            inverted[key] = inverted.get(key, 0) + coefficient * (m1 if order == 1 else e1m1)

    for x0, x1, s0, s1 in pieces:
        beta = (s1 - s0) / (x1 - x0)
        if s1:
            pi(1, t - x1, s1)
        if s0:
            pi(1, t - x0, -s0)
        if beta:
            pi(2, t - x0, beta)
            pi(2, t - x1, -beta)
    return [(c, order, u) for (order, u), c in inverted.items() if c], exact


def _plan(model, setup, kind, t, ctx):
    """(the inverted terms (coefficient, law index, point), the exact part, a_0, w_c) of P(W > t) (:func:`_terms`,
    a_0 P(W_0 > t) as law 0 at t when a_0 != 0)."""
    from .vacation_wait import _residual

    inverted, exact = _terms(model, setup, kind, t)
    with ctx:
        atom, weight = _residual(model, ctx)
    return inverted, exact, atom, weight


def _values(laws, keys, digits, kind):
    """{(law index, point): P(E > point)} for the ``keys``: float64 by the kernel's self-check without escalation
    (None when it fails), else to ``digits`` confirmed digits (:func:`qderive.numeric.response.tails`)."""
    from ..response import _float64_tails, tails

    values = {}
    for order in (0, 1, 2):
        pts = sorted({u for o, u in keys if o == order})
        if not pts:
            continue
        if digits is None:
            got, why = _float64_tails(laws[order], pts)
            if why is not None:
                return None
        else:
            got = tails(laws[order], pts, digits, option=f"{kind}_tail")[0]
        values.update({(order, u): v for u, v in zip(pts, got)})
    return values


def _combine(plan, t, values, digits):
    """(P(W > t), kappa) from the inverted values (module docstring)."""
    import mpmath

    inverted, exact, atom, weight = plan
    with mpmath.workdps((digits or 15) + 10):

        def num(q):
            return mpmath.mpf(q.numerator) / q.denominator

        a0, wc = mpmath.mpf(atom), mpmath.mpf(weight)
        parts = [(a0 * mpmath.mpf(values[(0, t)]))] if atom != 0 else []
        parts += [wc * num(c) * mpmath.mpf(values[(o, u)]) for c, o, u in inverted]
        total = mpmath.fsum(parts) + wc * num(exact)
        if not total > 0:
            return total, math.inf
        kappa = float(mpmath.fsum(abs(p) for p in parts) / total)
        return +total, kappa


def _keys(plan, t):
    return ([(0, t)] if plan[2] != 0 else []) + [(o, u) for _, o, u in plan[0]]


def shift_tails(model, setup, kind: str):
    """The law's own ``tails`` (:class:`~qderive.numeric.response.ResponseLaw`): P(W > t) (``kind`` "wait") or
    P(W + B > t) ("sojourn") by the shifted inversions of the module docstring; float64 gives None where it must
    escalate (all points' values by one vectorised inversion per law; per point when that fails)."""
    from qderive.symbolic import limits as _limits

    from ..backend import FLOAT64, mp_context

    laws = _laws(setup[0], kind)

    def float64(ts):
        plans = {t: _plan(model, setup, kind, t, FLOAT64) for t in ts}
        values = _values(laws, [k for t in ts for k in _keys(plans[t], t)], None, kind)
        out = {}
        for t in ts:
            got = values if values is not None else _values(laws, _keys(plans[t], t), None, kind)
            if got is None:
                out[t] = None
                continue
            total, kappa = _combine(plans[t], t, got, None)
            out[t] = min(1.0, float(total)) if kappa <= 10 else None
        return out

    def one_mp(t, digits):
        work = digits + 3
        plan = _plan(model, setup, kind, t, mp_context(digits + 10))
        while True:
            total, kappa = _combine(plan, t, _values(laws, _keys(plan, t), work, kind), work)
            need = digits + 2 + max(0, math.ceil(math.log10(kappa))) if math.isfinite(kappa) else work + 10
            if need <= work:
                return total, work
            work = _limits.check("inversion_digits", need, f"P({kind} > {float(t):.6g}) is a difference of nearly "
                                 f"equal iterated tails: {digits} digits of it need {need} digits of each")

    def tails(ts, digits):
        ts = [Fraction(t) for t in ts]
        positive = [t for t in ts if t > 0]
        if digits is None:
            got = float64(positive) if positive else {}
            return [got[t] if t > 0 else _at_zero(model, setup, kind, None) for t in ts], None
        out, working = [], 0
        for t in ts:
            if t <= 0:
                out.append(_at_zero(model, setup, kind, digits))
                continue
            value, w = one_mp(t, digits)
            out.append(value)
            working = max(working, w)
        return out, (working or None)

    return tails


def _at_zero(model, setup, kind, digits):
    """P(W > 0) = 1 - a_0 P(W_0 = 0) (the residual's atom times W_0's); the sojourn: 1."""
    from ..backend import FLOAT64, mp_context
    from .vacation_wait import _residual

    if kind == "sojourn":
        return 1.0 if digits is None else mp_context(digits + 10).num(1)
    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    with ctx:
        atom, _ = _residual(model, ctx)
        value = 1 - atom * _laws(setup[0], "wait")[0].p_zero(ctx)
        return float(value) if digits is None else +value
