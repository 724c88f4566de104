"""Truncated power series in w around z = 1 (z = 1 + w): the factorial-moment series of PGFs.

A PGF G(z) = sum_k g_k z^k is carried as its Taylor coefficients at z = 1, G(1 + w) = sum_j E[(K)_j] / j! w^j
(E[(K)_j] the j-th factorial moment), truncated after w^m. The operations are the ring operations, the inverse of
a series with a nonzero constant term, and the composition f(g(w)) with g(0) = 0, over context numbers in plain
lists (float, mpf, Fraction and SymPy expressions alike): the idle-passage interpreters of
:mod:`qderive.numeric.engines.blocks` compute the moments of (B1), (B2) with them.
"""

from math import comb

import numpy

__all__ = ["mul", "add", "scale", "inverse", "compose", "polynomial", "constant"]


def constant(c, zero, m):
    """The series c + 0 w + ... (length m + 1)."""
    return [c] + [zero] * m


def add(*series):
    """The termwise sum of series of one length."""
    out = list(series[0])
    for s in series[1:]:
        out = [x + y for x, y in zip(out, s)]
    return out


def scale(a, c):
    """c a(w)."""
    return [x * c for x in a]


def mul(a, b):
    """a(w) b(w), truncated to the length of a."""
    m = len(a) - 1
    return [sum((a[i] * b[k - i] for i in range(1, k + 1)), a[0] * b[k]) for k in range(m + 1)]


def inverse(a):
    """1 / a(w) for a[0] != 0: c_0 = 1 / a_0, c_k = -(sum_{i=1}^k a_i c_{k-i}) / a_0."""
    c = [1 / a[0]]
    for k in range(1, len(a)):
        c.append(-sum((a[i] * c[k - i] for i in range(2, k + 1)), a[1] * c[k - 1]) / a[0])
    return c


def compose(f, g):
    """f(g(w)) for g(0) = 0 (``g[0]`` is ignored), truncated to the length of g: sum_j f_j g(w)^j."""
    m = len(g) - 1
    zero = g[0] * 0
    g = [zero] + list(g[1:])
    out = constant(f[0], zero, m)
    power = constant(zero + 1, zero, m)
    for j in range(1, min(len(f), m + 1)):
        power = mul(power, g)
        out = add(out, scale(power, f[j]))
    return out


def polynomial(v, m, zero):
    """The series at z = 1 of sum_k v_k z^k (a context vector): c_j = sum_k binom(k, j) v_k, j <= m (one inner
    product each; the binomials are exact in float64 up to 2^53)."""
    v = numpy.asarray(v)
    out = []
    for j in range(m + 1):
        weights = numpy.array([comb(k, j) for k in range(j, len(v))], dtype=v.dtype)
        out.append(numpy.dot(v[j:], weights) + zero if len(weights) else zero)
    return out
