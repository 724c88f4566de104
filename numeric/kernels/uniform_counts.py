"""Count probabilities of a uniform time by sums of positive terms: the batches arriving at rate lambda during
T ~ U(a, b) (``docs/theory/chapter2.md`` section 3, row U; :class:`qderive.symbolic.counts.UniformMixedPoissonCount`).

With x_a = lambda a, x_b = lambda b and u = x - x_a, Pois(k; x_a + u) = sum_{i <= k} Pois(k - i; x_a) Pois(i; u)
(the sum of two independent Poisson counts), so::

    P(K = k) = (1 / (x_b - x_a)) int_{x_a}^{x_b} Pois(k; x) dx = (1 / (x_b - x_a)) sum_{i <= k} Pois(k - i; x_a) R_i,
    R_i = int_0^{x_b - x_a} Pois(i; u) du = P(Pois(x_b - x_a) > i),                                          (U1)

R_i by the positive series of :func:`~qderive.numeric.kernels.lattice_finite.lattice_residual_rows` (rate 1), the
Poisson weights from their logarithms (:mod:`~qderive.numeric.kernels.finite_kinked`): every term is positive, so
float64 keeps each probability's relative accuracy (the closed form (P(Pois(x_b) > k) - P(Pois(x_a) > k)) /
(x_b - x_a) subtracts; the package evaluates it with 30 extra digits, :func:`qderive.numeric.sequences.count_sequences`,
and ``tests/test_uniform_counts.py`` checks the two against each other). The terms run to a length K where the
ratio bound x_b / (K + 1) < 1 of the terms beyond (each Pois(k; x), x <= x_b, falls by x / (k + 1)) leaves a
remainder below eps / 256 of P(K = n + 2) (:func:`~qderive.numeric.kernels.counts.remainder_ok`); the tails by
:func:`~qderive.numeric.kernels.counts.count_tails`. Generated code (``qderive codegen``) ships this kernel.
"""

import numpy

from .counts import count_tails, remainder_ok
from .finite_kinked import poisson_weights
from .lattice_finite import lattice_residual_rows


def uniform_mixed_sequences(ctx, lam_low, lam_high, n):
    """(P(K = k), P(K > k), sum_{i > k} P(K > i)) for k = 0..n of K ~ Poisson(lambda T), T ~ U(a, b), from
    lam_low = lambda a >= 0 and lam_high = lambda b > lam_low by (U1) (module docstring). ValueError when
    lam_high <= lam_low (a uniform law needs low < high)."""
    xa, xb = lam_low, lam_high
    if not (xa >= 0 and xb > xa):
        raise ValueError(f"a uniform time needs 0 <= low < high (lambda low = {xa!r}, lambda high = {xb!r})")
    y = xb - xa
    count = n + 2
    while True:
        R, _ = lattice_residual_rows(ctx, ctx.num(1), ctx.array([y]), count)
        P, _ = poisson_weights(ctx, xa, count)
        terms = numpy.convolve(P, R[0])[: count + 1] / y
        r = xb / (count + 1)
        if r < 1 and remainder_ok(ctx, terms, n, r):
            break
        count *= 2
    tail, tail2 = count_tails(ctx, terms, n, (xa + xb) / 2, r)
    return ctx.flush(terms[: n + 1]), tail, tail2
