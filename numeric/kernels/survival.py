"""Survival functions of the smooth laws in float64, numpy and the C library only: one implementation for the package's
laws (``Gamma.survival_many``, ``LogNormal.survival_many`` call these) and for generated code (the finite room's
quadrature (F9) of a gamma or lognormal vacation ships this kernel with
:mod:`~qderive.numeric.kernels.vacation_quadrature`).

A plain module (kernels import numpy, math and each other only).
"""

import math

import numpy


def gamma_upper(a, z):
    """(Q(a, z), bad) for a float a > 0 and a numpy array z >= 0: Q the regularized upper incomplete gamma function,
    ``bad`` a boolean mask of the points not computed (a < 1/20, or no convergence in 1000 steps; their values are
    meaningless). For z < a + 1 the series P(a, z) = z^a e^{-z} / Gamma(a + 1) sum_k z^k / ((a + 1) ... (a + k)) and
    Q = 1 - P (Q >= 1/20 there for every a >= 1/20: at most about one digit lost), for z >= a + 1 the continued
    fraction Q(a, z) = z^a e^{-z} / Gamma(a) / (z + 1 - a - 1 (1 - a) / (z + 3 - a - 2 (2 - a) / (z + 5 - a - ...)))
    by the modified Lentz method (DLMF 8.7.3 and 8.9.2), every point at once; Q(a, 0) = 1."""
    z = numpy.asarray(z, dtype=float)
    out = numpy.ones_like(z)
    if a < 0.05:
        return out, numpy.ones(len(z), dtype=bool)
    bad = numpy.zeros(len(z), dtype=bool)
    lg, tiny = math.lgamma(a), 1e-300
    with numpy.errstate(all="ignore"):
        low = numpy.nonzero((z > 0) & (z < a + 1))[0]
        if len(low):
            x = z[low]
            term = numpy.full(len(x), 1.0 / a)
            total, ap = term.copy(), a
            for _ in range(1000):
                ap += 1
                term = term * x / ap
                total = total + term
                if numpy.all(term <= 1e-17 * total):
                    break
            else:
                bad[low[term > 1e-17 * total]] = True
            out[low] = 1 - total * numpy.exp(a * numpy.log(x) - x - lg)
        high = numpy.nonzero(z >= a + 1)[0]
        if len(high):
            x = z[high]
            b = x + 1 - a
            c = numpy.full(len(x), 1 / tiny)
            d = 1 / b
            h = d.copy()
            live = numpy.arange(len(x))  # a point stops at its own convergence (others' later steps would
            for i in range(1, 1000):  # only add roundings to its h, and one of thousands fluctuating by 2 ulp
                an = -i * (i - a)  # kept every point iterating to the end and sent it to mpmath)
                b = b + 2
                d = an * d + b
                d = numpy.where(numpy.abs(d) < tiny, tiny, d)
                c = b + an / c
                c = numpy.where(numpy.abs(c) < tiny, tiny, c)
                d = 1 / d
                delta = d * c
                h[live] = h[live] * delta
                going = numpy.abs(delta - 1) > 4e-16
                if not going.any():
                    live = live[:0]
                    break
                live, b, c, d = live[going], b[going], c[going], d[going]
            bad[high[live]] = True
            out[high] = numpy.exp(a * numpy.log(x) - x - lg) * h
    return out, bad


def gamma_survival(shape, mean, x):
    """(P(T > x), bad) of the gamma law of shape a and mean m at the points of the numpy array x >= 0: Q(a, a x / m)
    by :func:`gamma_upper` (``bad`` its mask of points not computed)."""
    a = float(shape)
    return gamma_upper(a, numpy.asarray(x, dtype=float) * (a / float(mean)))


def lognormal_survival(mean, scv, x):
    """(P(T > x), bad) of the lognormal law of mean m and squared coefficient of variation c^2 at the points of the
    numpy array x (1 for x <= 0; ``bad`` all False): erfc(z) / 2, z = (ln x - mu) / (sigma sqrt 2),
    sigma^2 = ln(1 + c^2), mu = ln m - sigma^2 / 2, with numpy's log and the C library's erfc (``math.erfc``, a few ulp
    for every z, also deep in the tail; z is computed to about (|ln x| + |mu|) eps / sigma, which moves erfc(z) by
    2 |z| times that relative)."""
    sigma = math.sqrt(math.log1p(float(scv)))
    mu = math.log(float(mean)) - sigma * sigma / 2
    x = numpy.asarray(x, dtype=float)
    out = numpy.ones(len(x))
    pos = x > 0
    if pos.any():
        with numpy.errstate(divide="ignore"):
            z = (numpy.log(x[pos]) - mu) / (sigma * math.sqrt(2))
        out[pos] = numpy.frompyfunc(math.erfc, 1, 1)(z).astype(float) / 2
    return out, numpy.zeros(len(x), dtype=bool)


def uniform_survival(low, high, x):
    """(P(T > x), bad) of the uniform law on [a, b] at the points of the numpy array x: 1 below a, (b - x) / (b - a)
    on [a, b], 0 beyond (relative error about eps b / (b - x): the rounding of b); ``bad`` all False."""
    a, b = float(low), float(high)
    x = numpy.asarray(x, dtype=float)
    return numpy.where(x <= a, 1.0, numpy.where(x >= b, 0.0, (b - x) / (b - a))), numpy.zeros(len(x), dtype=bool)


def uniform_survival_bound(low, high, center, lo, hi, height):
    """An upper bound of |S(z)| of the uniform law on [a, b] over the complex rectangles lo <= Re z <= hi,
    |Im z| <= height (numpy arrays), S the analytic continuation of its piece at the real point ``center``: 1 below a,
    |b - z| / (b - a) <= hypot(max(|b - lo|, |b - hi|), height) / (b - a) (times 1 + 1e-14 for its rounding) on
    (a, b), 0 beyond b (the quadrature's remainder bound (F9), ``TimeLaw.survival_bound``)."""
    a, b = float(low), float(high)
    c = numpy.asarray(center, dtype=float)
    far = numpy.hypot(numpy.maximum(numpy.abs(b - numpy.asarray(lo)), numpy.abs(b - numpy.asarray(hi))),
                      numpy.asarray(height)) / (b - a)
    return numpy.where(c < a, 1.0, numpy.where(c < b, far * (1 + 1e-14), 0.0))
