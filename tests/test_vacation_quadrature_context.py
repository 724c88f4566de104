"""The quadrature (F9) written once over the arithmetic context (:mod:`qderive.numeric.kernels.vacation_quadrature`,
issue 28, dq28): the Poisson weights of both contexts against mpmath's pmf, and the ``--digits`` note saying where
the value came from (the D-digit sums themselves: tests/test_vacation_quadrature_kinks.py, 20 digits against mpmath's
weights at 30).
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

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
