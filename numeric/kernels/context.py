"""The float64 arithmetic context of the kernels (numpy and math only).

A context gives a kernel everything that differs between float64 and arbitrary
precision: how to make numbers and vectors, the elementary functions (elementwise on
arrays), exact-rounding sums, the unit roundoff ``eps`` and the smallest normal number
``tiny`` (0 for mpmath, which has no underflow). The mpmath context with the same
interface lives in :mod:`qderive.numeric.backend`; this module is shipped verbatim in
generated code.

>>> ctx = FLOAT64
>>> ctx.num(3) / 4, float(ctx.fsum(ctx.array([0.1, 0.2, 0.3])))
(0.75, 0.6)
"""

import math

import numpy


class Float64Context:
    """IEEE double precision through numpy: vectors are float64 arrays, scalars Python floats."""

    is_float64 = True
    dps = None
    eps = float(numpy.finfo(numpy.float64).eps)
    tiny = float(numpy.finfo(numpy.float64).tiny)
    huge = float(numpy.finfo(numpy.float64).max)
    dtype = numpy.float64
    name = "float64"
    pi = math.pi

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def num(self, value):
        """An exact number (int, Fraction) or a float as a float (correctly rounded)."""
        return float(value)

    def zeros(self, shape):
        return numpy.zeros(shape)

    def array(self, values):
        return numpy.asarray(values, dtype=numpy.float64)

    def arange(self, n):
        return numpy.arange(n, dtype=numpy.float64)

    def eye(self, n):
        return numpy.eye(n)

    def exp(self, x):
        return numpy.exp(x) if isinstance(x, numpy.ndarray) else math.exp(x)

    def log(self, x):
        return numpy.log(x) if isinstance(x, numpy.ndarray) else math.log(x)

    def log1p(self, x):
        return numpy.log1p(x) if isinstance(x, numpy.ndarray) else math.log1p(x)

    def expm1(self, x):
        return numpy.expm1(x) if isinstance(x, numpy.ndarray) else math.expm1(x)

    def sqrt(self, x):
        return numpy.sqrt(x) if isinstance(x, numpy.ndarray) else math.sqrt(x)

    def re(self, x):
        """Real part (elementwise on arrays of complex numbers)."""
        return numpy.real(x) if isinstance(x, numpy.ndarray) else x.real

    def lgamma(self, x):
        if isinstance(x, numpy.ndarray):
            return numpy.array([math.lgamma(float(v)) for v in x.ravel()]).reshape(x.shape)
        return math.lgamma(x)

    def fsum(self, values):
        """Sum of a vector with one rounding (math.fsum)."""
        return math.fsum(values)

    def dot(self, a, b):
        """Inner product of two vectors (einsum's loop: no BLAS thread start-up for short vectors)."""
        return float(numpy.einsum("i,i->", a, b))

    def matmul(self, a, b):
        """Matrix product of two 2-D arrays (numpy's matmul, BLAS: the few-row products of the kernels run
        4 times faster than einsum's loop, and their size keeps OpenBLAS on one thread)."""
        return numpy.matmul(a, b)

    def isfinite(self, x):
        return bool(numpy.all(numpy.isfinite(x)))

    def flush(self, v):
        """Set subnormal entries of a vector to 0 (they stall recurrences and slow the FPU)."""
        v[numpy.abs(v) < self.tiny] = 0.0
        return v

    def to_float(self, x):
        return float(x)


FLOAT64 = Float64Context()
