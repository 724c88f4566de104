"""float64 numbers that are arrays over parameter points: one pass of a kernel for many points.

:class:`Float64Points` is the float64 context (:class:`~qderive.numeric.kernels.context.Float64Context`)
whose numbers are numpy arrays of shape (points,): a vector of such numbers is an array of shape
(length, points) (the index first, the points last), so ``v[i]`` is the number i of every point and the
elementwise operations of a kernel apply to every point at once. A vector that does not depend on the
point (a batch law shared by the points) is given as shape (length, 1) and broadcasts. The kernels that
accept it are written once for every context (:mod:`qderive.numeric.kernels.vacation`: the partial-admission
engine; :mod:`qderive.numeric.kernels.arrivals`); generated code uses it to run the recursion (2b) of an
array of loads in one pass (``qderive codegen vacation-finite``).

>>> ctx = Float64Points(3)
>>> v = ctx.zeros(2)
>>> v[1] = numpy.array([1.0, 2.0, 3.0])
>>> ctx.dot(v, ctx.arange(2)).tolist()
[1.0, 2.0, 3.0]
"""

import numpy

from .context import Float64Context


def every(condition):
    """Whether a condition on numbers holds at every point (a plain bool for scalar numbers, also mpmath's)."""
    return bool(numpy.all(condition))


def larger(x, y):
    """max(x, y), per point for numbers over points (Python's max for scalar numbers)."""
    return numpy.maximum(x, y) if isinstance(x, numpy.ndarray) or isinstance(y, numpy.ndarray) else max(x, y)


class Float64Points(Float64Context):
    """IEEE double precision over ``points`` parameter points at once (numbers: arrays of shape (points,)).

    Sums are numpy's (pairwise), not :func:`math.fsum`, and products of vectors are numpy's elementwise
    ones: the results agree with the scalar context to rounding (about 1e-15 relative for each sum of
    positive terms), not bit for bit.
    """

    name = "float64-points"

    def __init__(self, points):
        self.points = int(points)

    def zeros(self, shape):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return numpy.zeros(shape + (self.points,))

    def arange(self, n):
        """0, 1, ..., n - 1: the same for every point (shape (n, 1))."""
        return numpy.arange(n, dtype=numpy.float64)[:, None]

    def fsum(self, values):
        """The sum of a sequence of numbers (numpy's pairwise sum, per point)."""
        return numpy.sum(numpy.asarray(list(values), dtype=numpy.float64), axis=0)

    def dot(self, a, b):
        """sum_i a_i b_i for every point (vectors of shape (length, points) or (length, 1), or 1-D)."""
        return numpy.sum(a * b if a.ndim == b.ndim else (a.T * b.T).T, axis=0)

    def matmul(self, a, b):
        """Row vectors over points times one matrix shared by every point: ``a`` (..., k, points) (a stack of
        vectors of length k), ``b`` (k, columns); the result (..., columns, points) holds sum_i a[..., i, p] b[i, j]."""
        if b.ndim != 2 or a.ndim < 2:
            raise ValueError("Float64Points.matmul: a matrix over points times one shared matrix")
        return numpy.einsum("...kp,km->...mp", a, b, optimize=True)  # BLAS products, no copy of the stack

    def isfinite(self, x):
        return bool(numpy.all(numpy.isfinite(x)))

    def to_float(self, x):
        return numpy.asarray(x, dtype=numpy.float64)
