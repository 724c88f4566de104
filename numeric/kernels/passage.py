"""Birth-death chains: the mean first-passage time upward, and the Poisson distribution function by levels.

* :func:`poisson_cdf_levels` -- P(Poisson(x) <= n) = P(Erlang(n + 1, 1) > x) for n = 0..N, as the
  cumulative sums of the pmf e^{-x} x^i / i! (positive terms, each from its logarithm, so no term
  overflows; a term below the double range is 0);
* :func:`passage_time_log` -- log E T_{0 -> N} of a birth-death chain on 0..N with birth rates b_n and
  death rates d_n (the classical sum, e.g. Karlin & Taylor, *A First Course in Stochastic Processes*,
  2nd ed., section 4.7)::

      E T_{0 -> N} = sum_{k=0}^{N-1} S_k / b_k,   S_0 = 1,   S_k = 1 + S_{k-1} d_k / b_{k-1}

  (S_k / b_k is the mean time to go from k to k + 1: S_k = sum_{j <= k} pi_j / pi_k with
  pi_j = prod_{i<j} b_i / d_{i+1}). Every term is positive; S and the sum are carried as logarithms
  (the lifetime of a metastable state can exceed the double range).

>>> import math
>>> from qderive.numeric.kernels.context import FLOAT64
>>> # 0 -> 2 with b = (1, 1), d_1 = 1: E T = 1 + (1 + 1) = 3
>>> round(math.exp(passage_time_log(FLOAT64, [1.0, 1.0], [0.0, 1.0])), 12)
3.0
>>> [round(float(v), 12) for v in poisson_cdf_levels(FLOAT64, 1.0, 2)]
[0.367879441171, 0.735758882343, 0.919698602929]
"""

import numpy


def poisson_cdf_levels(ctx, x, N):
    """P(Poisson(x) <= n) for n = 0..N (module docstring); ``x`` > 0."""
    i = ctx.arange(N + 1)
    x = ctx.num(x)
    pmf = ctx.exp(-x + i * ctx.log(x) - ctx.lgamma(i + 1))
    return numpy.cumsum(pmf)


def _log_add(a, b, ctx):
    """log(e^a + e^b) with the larger exponent factored out."""
    if a < b:
        a, b = b, a
    return a + ctx.log1p(ctx.exp(b - a))


def passage_time_log(ctx, birth, death):
    """log E T_{0 -> N}, N = len(birth), for births ``birth[n]`` > 0 (n = 0..N-1) and deaths ``death[n]`` >= 0
    (n = 1..N-1; ``death[0]`` is not used) (module docstring)."""
    logb = [ctx.log(ctx.num(b)) for b in birth]
    log_s = ctx.num(0)  # log S_0
    total = log_s - logb[0]
    for k in range(1, len(birth)):
        d = ctx.num(death[k])
        if d > 0:
            log_s = _log_add(ctx.num(0), log_s + ctx.log(d) - logb[k - 1], ctx)
        else:
            log_s = ctx.num(0)
        total = _log_add(total, log_s - logb[k], ctx)
    return total
