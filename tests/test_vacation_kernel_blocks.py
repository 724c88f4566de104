"""The float64 fast paths of the finite vacation queue (issue 16, item 4) against slower, independent forms.

* the cut recursion (2b) in long float64 blocks (block inverse by doubling) against the same recursion at
  30 digits, including overload (rescaled prefixes) and flushed tails: positive sums, so the relative
  error of every entry that matters is O(n eps); the measured worst is 0.25 (n + 1) eps, the test allows
  2 (n + 1) eps;
* the arrival counts of a service and a vacation in one pass against each time alone (the rows of the
  shorter time are exact zeros: equal to a few ulps in float64, to 25 digits in mpmath);
* the batch vectors kept per law: read-only, equal to fresh ones, a Fraction context never served a
  float64 entry;
* the generic float64 test's cheaper proof (extremes first) gives the verdict of the full test.
"""

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric import precision
from qderive.numeric.backend import FLOAT64, FractionContext, mp_context
from qderive.numeric.kernels import arrivals, vacation
from qderive.numeric.sequences import batch_blocks, batch_vectors, count_sequences

EPS = 2.0**-52


def _random_sequences(rng, n):
    N = n + int(rng.integers(0, 20))
    decay = rng.uniform(0.05, 1.2)  # below ~0.5 with a small a_0: overload, q~ grows (rescaled)
    abar = np.exp(-decay * np.arange(N + 1)) * rng.uniform(0.1, 3)
    if rng.random() < 0.3:
        abar[int(rng.integers(2, N + 1)):] = 0.0  # a flushed tail
    cbar = np.exp(-decay * np.arange(N + 1)) * rng.uniform(0.1, 1)
    return rng.uniform(0.01, 1), abar, cbar


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_long_float64_blocks_match_the_recursion_at_30_digits(seed):
    rng = np.random.default_rng(seed)
    ctx = mp_context(30)
    for _ in range(4):
        n = int(rng.integers(40, 300))
        a0, abar, cbar = _random_sequences(rng, n)
        z = np.zeros(len(abar))
        q, shift = vacation.cut_recursion(FLOAT64, vacation.StartPeriod(a0, abar, z, z, cbar, z, z, 0, 0, 0, 1), n)
        with ctx:
            zm = ctx.zeros(len(abar))
            seq = vacation.StartPeriod(mpmath.mpf(a0), ctx.array([mpmath.mpf(x) for x in abar]), zm, zm,
                                       ctx.array([mpmath.mpf(x) for x in cbar]), zm, zm, 0, 0, 0, 1)
            ref, ref_shift = vacation.cut_recursion(ctx, seq, n)
            assert ref_shift == 0  # mpmath is never rescaled
            top = max(ref)
            for x, r in zip(q, ref):
                if r < top * mpmath.mpf(2) ** -900:  # far below the largest entry: flushed after rescaling
                    continue
                err = abs(mpmath.ldexp(mpmath.mpf(float(x)), shift) - r) / r
                assert err <= 2 * (n + 1) * EPS, (n, float(err))


@pytest.mark.parametrize("ctx", [FLOAT64, mp_context(30)], ids=["float64", "mp30"])
def test_one_pass_for_two_times_equals_each_time_alone(ctx):
    lam, batch, n = F(8), qd.Geometric(5), 120
    laws = (qd.Erlang(4, F(3, 200)), qd.Exponential(F(3, 40)))  # short and long count sequences
    with ctx:
        times = [(*count_sequences(t.count_law(lam), n, ctx), ctx.num(t.moment(1))) for t in laws]
        together = arrivals.arrival_counts_of_times(ctx, times, batch_blocks(batch, n, ctx), ctx.num(lam), n)
        for (beta, tail, tail2, mean), both in zip(times, together):
            alone = arrivals.arrival_counts(ctx, beta, tail, tail2, batch_blocks(batch, n, ctx), ctx.num(lam), mean, n)
            for x, y in zip(both, alone):
                tol = 4 * EPS if ctx.is_float64 else mpmath.mpf(10) ** -25
                assert all(abs(u - v) <= tol * abs(v) for u, v in zip(x, y))


def test_kept_batch_vectors_are_read_only_and_per_context():
    batch = qd.Geometric(F(7, 2))
    kept = batch_vectors(batch, 30, FLOAT64, keep=True)
    fresh = batch_vectors(batch, 30, FLOAT64)
    assert kept is batch_vectors(batch, 30, FLOAT64, keep=True)
    for a, b in ((kept.pmf, fresh.pmf), (kept.tail, fresh.tail), (kept.excess, fresh.excess)):
        assert not a.flags.writeable and np.array_equal(a, b)
    exact = batch_vectors(batch, 30, FractionContext(), keep=True)  # no digits, as float64: another entry
    assert exact.tail[1] == F(5, 7) and isinstance(exact.tail[1], F)
    assert batch_blocks(batch, 30, FractionContext())[0][1].dtype == object
    assert batch_blocks(batch, 30, FLOAT64)[0][1].dtype == np.float64


@pytest.mark.parametrize("vector, verdict", [
    ([0.5, 0.25, 0.25], None),
    ([0.5, 1 + 4 * EPS, 0.0], None),  # a zero and a few ulps above 1: the full test, which passes them
    ([0.5, 1e-300, 0.5], "underflow"),
    ([0.5, float("nan"), 0.5], "not finite"),
    ([0.5, 1.5, 0.5], "outside"),
    ([0.5, -0.25, 0.5], "outside"),
])
def test_extremes_first_give_the_full_verdict(vector, verdict):
    record = qd.FiniteVacationQueue.measures
    reason = precision.float64_trouble(record, {"p": np.array(vector)})
    assert (reason is None) if verdict is None else (verdict in reason)
    for x in vector:  # the scalar form of the same test (a probability)
        one = precision.float64_trouble(record, {"loss_probability": x})
        alone = None if 0 < x <= 1 + 8 * EPS and x >= 2.0**-960 else "bad"
        assert (one is None) == (alone is None), (x, one)
