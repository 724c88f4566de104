"""Numerical inversion of a Laplace transform: the Euler algorithm of Abate and Whitt (1995), over a context.

For a function f on t > 0 with Laplace transform F(s) = int_0^oo e^{-st} f(t) dt, the trapezoidal
rule on the Bromwich line Re s = A / (2t) gives the alternating series (Abate and Whitt 1992, eq. (5))

    f(t) ~ e^{A/2} / t * [ Re F(A/(2t)) / 2 + sum_{k>=1} (-1)^k Re F((A + 2 k pi i) / (2t)) ],

whose discretisation error is sum_{k>=1} e^{-kA} f((2k+1) t): for a nonincreasing f (a tail
probability) at most e^{-A} / (1 - e^{-A}) times f(t), a *relative* error. The series is
summed to n terms and then averaged binomially over m more partial sums (Euler summation):

    f(t) ~ sum_{j=0}^{m} C(m, j) 2^{-m} s_{n+j}(t),   s_N = the partial sum to k = N.

The terms are of size up to e^{A/2} 2/A (|F| <= 1/Re s for a tail), so the working precision
must exceed the digits wanted by about log10 e^{A/2} plus log10 of 1/f(t); :func:`euler_parameters`
chooses (A, n, m) for a target of relative digits, and the caller runs two parameter sets and
compares (the precision policy's confirmation). ``F`` is evaluated once, on a (len(t), n + m + 1)
array of complex nodes (vectorised in float64; object arrays of mpc in mpmath).
"""

import math

import numpy


def euler_parameters(digits):
    """(A, n, m) for about ``digits`` correct relative digits of a smooth nonincreasing f of size ~1.

    A = (digits + 1) ln 10 bounds the discretisation error; the Euler summation error falls by
    about a factor 10 per two binomial terms, so m = 2 digits and n = 1.5 digits + 10 (measured on
    the waiting time of ``VacationQueue.example()`` at t = 0.5 against a 120-digit inversion:
    15, 30, 50 digits asked give 18, 33, 53; with m = n = digits only 9, 15, 23). Abate and Whitt's
    double-precision choice (A, n, m) = (18.4, 15, 11) gives about 8 digits.
    """
    A = (digits + 1) * math.log(10.0)
    m = max(11, int(math.ceil(2.0 * digits)))
    n = max(15, int(math.ceil(1.5 * digits)) + 10)
    return A, n, m


def euler_inversion(ctx, F, t, A, n, m):
    """f at the points ``t`` (a 1-d context array of positive times) from its transform F (module docstring).

    ``F(s)`` takes a 2-d array of complex nodes and returns an array of the same shape. ``A`` is a
    context number (or float); the binomial weights are exact integers scaled by 2^-m.
    """
    K = n + m + 1
    # arrays on the left of every operation: an mpmath number on the left of an object array tries
    # to convert the whole array first (slow), an array on the left works elementwise
    k = ctx.arange(K)
    step = 2 * ctx.pi * 1j
    nodes = (k[None, :] * step + A) / (2 * t[:, None])
    values = ctx.re(F(nodes))
    signs = numpy.where(numpy.arange(K) % 2 == 0, 1, -1)
    terms = values * signs[None, :]
    terms[:, 0] = terms[:, 0] / 2
    partial = numpy.cumsum(terms, axis=1)
    acc = partial[:, n] * 1
    for j in range(1, m + 1):
        acc = acc + partial[:, n + j] * math.comb(m, j)
    return acc / (t * 2**m) * ctx.exp(A / 2)
