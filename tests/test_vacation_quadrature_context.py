"""The quadrature (F9) written once over the arithmetic context (:mod:`qderive.numeric.kernels.vacation_quadrature`,
issue 28, dq28): the Poisson weights of both contexts against mpmath's pmf; the same column sums in float64 and at
30 digits against the integral (F2) of a uniform vacation's piece written here (the engine's 20-digit tails:
tests/test_vacation_quadrature_kinks.py, against mpmath's weights at 30); and the ``--digits`` note saying where the
value came from.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.kernels import vacation_quadrature as VQ


def test_the_poisson_weights_of_both_contexts_against_mpmath():
    # float64 takes them from their logarithms (underflow), mpmath as products: both against mpmath's own Poisson pmf
    # at 40 digits, float64 within its counted rounding (eps times the count), 30 digits within 10^-30 relative
    lam, top = 3.5, 40
    xs = [0.01, 1.0, 9.0, 300.0]
    with mpmath.workdps(40):
        ref = [[mpmath.exp(-mpmath.mpf(lam) * mpmath.mpf(x)) * (mpmath.mpf(lam) * mpmath.mpf(x)) ** K
                / mpmath.factorial(K) for K in range(top + 1)] for x in xs]
    P, count = VQ.age_poisson_weights(FLOAT64, lam, np.array(xs), np.ones(len(xs)), top, size=True)
    for i in range(len(xs)):
        for K in range(top + 1):
            if ref[i][K] > mpmath.mpf(10) ** -280:
                assert abs(P[i, K] - float(ref[i][K])) <= 2.3e-16 * count * float(ref[i][K]), (i, K)
    ctx = mp_context(30)
    with ctx:
        Pm = VQ.age_poisson_weights(ctx, ctx.num(F(7, 2)), ctx.array([ctx.num(float(x))
                                                                   for x in xs]), ctx.array([1] * len(xs)), top)
        with mpmath.workdps(40):
            for i in range(len(xs)):
                for K in range(top + 1):
                    assert abs(mpmath.mpf(Pm[i, K]) - ref[i][K]) <= mpmath.mpf(10) ** -30 * ref[i][K], (i, K)


def test_the_digits_note_says_the_value_came_from_d_digits():
    # a uniform vacation with a constant service: the float64 quadrature's bracket (a bound) and, at --digits 20, the
    # value from the same quadrature at 20 digits: the note says so (and does not without --digits); the 20-digit
    # value lies in the float64 bracket
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=qd.Deterministic(F(1, 5)),
                                             vacation=qd.Uniform(F(1, 4), F(3, 4)), capacity=4)
    plain = model.evaluate(wait_tail=["1"])
    assert not any("digits" in n for n in plain.notes), plain.notes
    out = model.evaluate(wait_tail=["1"], digits=20)
    notes = [n for n in out.notes if "P(wait > 1.0) is between" in n]
    assert notes and "the float64 quadrature's, the value is the same quadrature's at 20 digits" in notes[0], notes
    lo, hi = (float(v) for v in notes[0].split("is between ")[1].split(" (")[0].split(" and "))
    # the note prints 10 significant digits (rounded: up to 5e-10 relative)
    assert lo * (1 - 1e-9) <= float(out.response["wait_tail"]["1"]) <= hi * (1 + 1e-9)


def test_the_same_column_sums_in_both_contexts_against_the_integral():
    # one row K = 5 and one column u = 1/25 of a uniform vacation on [1/50, 1/10]: the cells split at the kink
    # b - u = 3/50, beyond which S(x + u) = 0; the reference is mpmath's quadrature at 40 digits of the one analytic
    # piece, 3/8 int_0^{b - u} Pois(5; lambda x) (b - x - u) / (b - a) dx (Z = W A = 3/4 * 1/2 exactly). Float64 within
    # its own error bound and 1e-14; 30 digits (the twin, the same functions) within 10^-30 relative
    law = qd.Uniform(F(1, 50), F(1, 10))
    top, u = 5, F(1, 25)
    W = np.zeros((top + 1, 1))
    W[5] = 0.75
    A = np.zeros((2, 1))
    A[0] = 0.5
    piece = VQ.QuadraturePiece(lambda xs: law.survival_many(np.asarray(xs, dtype=float)), float(law.mean),
                               [float(k) for k in law.survival_kinks()], law.survival_bound)
    with mpmath.workdps(40):
        lam, uu, a, b = mpmath.mpf(23) / 2, mpmath.mpf(1) / 25, mpmath.mpf(1) / 50, mpmath.mpf(1) / 10
        ref = mpmath.mpf(3) / 8 * mpmath.quad(
            lambda x: mpmath.exp(-lam * x) * (lam * x) ** 5 / 120 * (b - x - uu) / (b - a), [0, b - uu])
    with FLOAT64:
        v64, e64, _, _ = VQ.quadrature_columns(FLOAT64, 11.5, piece, W, A, [float(u)], 1)
    assert abs(v64 - float(ref)) <= min(e64, 1e-14 * float(ref)), (v64, float(ref), e64)
    ctx = mp_context(30)

    def survival(xs):
        return np.array([+v for v in law.survival_many(list(xs), digits=30)] + [None], dtype=object)[:-1]

    with ctx:
        twin = piece.at(ctx, survival, ctx.num(F(law.mean)), [ctx.num(F(k)) for k in law.survival_kinks()])
        Wc = np.array([[ctx.num(float(v)) for v in row] for row in W], dtype=object)
        Ac = np.array([[ctx.num(float(v)) for v in row] for row in A], dtype=object)
        value, error, _, _ = VQ.quadrature_columns(ctx, ctx.num(F(23, 2)), twin, Wc, Ac, [ctx.num(u)], 1)
    with mpmath.workdps(40):
        assert abs(value - ref) <= mpmath.mpf(10) ** -30 * ref, (value, ref, error)
