"""The geometric batches' convolution blocks computed in gmpy2 (``twin_numbers``, issue 30 item 2: the 50-digit
finite room at r = 2000) against the mpmath blocks and against exact rational arithmetic.

* the twin's operations are the mpmath ones correctly rounded at the same precision, so the arrival counts of a
  service and a vacation from twin blocks equal those from mpmath blocks bit for bit (no tolerance: any
  difference means an operation was done at another precision or in another order);
* against the same counts from mpmath blocks at 60 digits: 10^-25 relative at 30 digits (sums of positive
  terms, O(n) roundings of 10^-30 each; the count sequences have no Fraction context).
"""

from fractions import Fraction as F

import mpmath

import qderive as qd
from qderive.numeric.backend import mp_context
from qderive.numeric.kernels import arrivals
from qderive.numeric.sequences import batch_blocks, count_sequences

LAM, N = F(8), 90
LAWS = (qd.Erlang(4, F(3, 200)), qd.Exponential(F(3, 40)))


def _counts(ctx, twin_numbers):
    with ctx:
        times = [(*count_sequences(t.count_law(LAM), N, ctx), ctx.num(t.moment(1))) for t in LAWS]
        blocks = batch_blocks(qd.Geometric(5), N, ctx, twin_numbers=twin_numbers)
        return arrivals.arrival_counts_of_times(ctx, times, blocks, ctx.num(LAM), N)


def test_twin_blocks_are_twin_numbers_and_give_the_mpmath_counts_bit_for_bit():
    ctx = mp_context(30)
    with ctx:
        first = batch_blocks(qd.Geometric(5), N, ctx, twin_numbers=True)[0][1]
        assert not isinstance(first[0, 1], mpmath.mpf)  # the twin's numbers indeed (not converted back)
    twin, plain = _counts(ctx, True), _counts(ctx, False)
    for got, ref in zip(twin, plain):
        for x, y in zip(got, ref):
            assert all(isinstance(u, mpmath.mpf) for u in x)  # the counts come back as the context's numbers
            assert list(x) == list(y)


def test_twin_blocks_against_60_digits():
    twin, finer = _counts(mp_context(30), True), _counts(mp_context(60), False)
    with mpmath.workdps(60):
        for got, ref in zip(twin, finer):
            for x, y in zip(got, ref):
                assert any(v != 0 for v in y)
                assert all(abs(u - v) <= mpmath.mpf(10) ** -25 * abs(v) for u, v in zip(x, y))
