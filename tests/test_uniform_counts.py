"""The count probabilities of a uniform time by positive sums (kernel ``uniform_counts``, (U1)) and the generated code
that ships them (``qderive codegen`` with ``--service uniform`` / ``--vacation uniform``).

* the kernel against P(K = k) = (P(Pois(x_b) > k) - P(Pois(x_a) > k)) / (x_b - x_a) written here with mpmath's
  regularized incomplete gamma at 200 digits (a different formula: the difference, with digits enough for any
  cancellation at these points), in float64 (to 1e-13 relative: sums of positive terms of sizes a few hundred,
  roundings only; measured 6e-14 at worst) and at 30 digits (to 1e-27); the tails from the same reference;
* the package's ``count_sequences`` runs the kernel (one implementation), and where the difference of the tails
  cancels (x_a = 200: P(K = 0) = 8.7e-88 next to 1) it keeps its digits in float64 and at 30 digits;
* generated modules that call the kernel (the loss probability of ``vacation-finite`` with a uniform service and a
  uniform vacation; the hysteretic model's loss with a uniform service) against ``qderive eval`` (1e-11: the same
  recursions on count sequences that agree to 1e-13), an array of rates as point by point; low >= high refused.
"""

from __future__ import annotations

import functools
import json
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from conftest import cli, load_generated
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.kernels.uniform_counts import uniform_mixed_sequences
from qderive.numeric.sequences import count_sequences
from qderive.symbolic.counts import UniformMixedPoissonCount

POINTS = [(F(0), F(3)), (F(1, 2), F(7, 2)), (F(30), F(60)), (F(0), F(1, 100)), (F(200), F(201))]


@functools.cache
def _reference(xa, xb, n):
    """(pmf, P(K > k), sum_{i > k} P(K > i)) for k = 0..n at 200 digits, from the difference of the regularized
    incomplete gamma functions (the second tail as the finite sum over i up to where the terms vanish)."""
    with mpmath.workdps(200):
        a, b = mpmath.mpf(xa.numerator) / xa.denominator, mpmath.mpf(xb.numerator) / xb.denominator

        def pmf(k):
            upper = mpmath.gammainc(k + 1, 0, b, regularized=True)
            lower = mpmath.gammainc(k + 1, 0, a, regularized=True) if a > 0 else 0
            return (upper - lower) / (b - a)

        top = int(2 * float(b)) + n + 200
        p = [pmf(k) for k in range(top)]
        tail = [1 - mpmath.fsum(p[: k + 1]) for k in range(n + 1)]
        tails_all = [1 - mpmath.fsum(p[: k + 1]) for k in range(top)]
        tail2 = [mpmath.fsum(tails_all[k + 1:]) for k in range(n + 1)]
        return p[: n + 1], tail, tail2


@pytest.mark.parametrize("xa, xb", POINTS)
def test_kernel_equals_the_difference_of_incomplete_gammas_at_200_digits(xa, xb):
    n = 40
    want = _reference(xa, xb, n)
    got = uniform_mixed_sequences(FLOAT64, float(xa), float(xb), n)
    for name, g, w in zip(("pmf", "tail", "tail2"), got, want):
        for k in range(n + 1):
            assert float(g[k]) == pytest.approx(float(w[k]), rel=1e-13, abs=0), (name, k)
    ctx = mp_context(30)
    with ctx:
        g = uniform_mixed_sequences(ctx, ctx.num(xa), ctx.num(xb), n)
        for k in (0, n // 2, n):
            assert abs(g[0][k] / w_k - 1) < 1e-27 if (w_k := want[0][k]) else g[0][k] == 0


def test_the_package_runs_the_kernel_and_keeps_the_digits_where_the_difference_cancels():
    """``count_sequences`` of a uniform law is the kernel (one implementation): its values in float64 and at 30
    digits equal the 200-digit reference, and where the difference of the Poisson tails cancels (x_a = 200:
    P(K = 0) = e^{-200} (1 - e^{-1}) = 8.7e-88 next to numbers within 1e-87 of 1) it keeps its digits (the package's
    former difference at 30 extra digits returned exactly 0 there)."""
    n = 40
    xa, xb = POINTS[0]  # the reference the loop's case of the test above computes (cached)
    want = _reference(xa, xb, n)[0]
    law = UniformMixedPoissonCount(xa, xb)
    got = count_sequences(law, n, FLOAT64)[0]
    assert max(abs(float(a) / float(b) - 1) for a, b in zip(got, want)) < 1e-13
    with mpmath.workdps(40):
        exact = mpmath.exp(-200) * (1 - mpmath.exp(-1))
    far = UniformMixedPoissonCount(F(200), F(201))
    assert float(count_sequences(far, 5, FLOAT64)[0][0]) == pytest.approx(float(exact), rel=1e-14)
    ctx = mp_context(30)
    with ctx:
        got = count_sequences(law, n, ctx)[0]
        assert max(abs(a / b - 1) for a, b in zip(got, want)) < 1e-27
        assert abs(count_sequences(far, 5, ctx)[0][0] / exact - 1) < 1e-27


def test_a_uniform_law_needs_low_below_high():
    with pytest.raises(ValueError, match="needs 0 <= low < high"):
        uniform_mixed_sequences(FLOAT64, 2.0, 2.0, 5)


def _eval(model_args, option="loss_probability"):
    code, js, err = cli(["eval", *model_args, "--json"])
    assert code == 0, err
    return float(json.loads(js)["measures"][option])


def test_generated_finite_room_loss_with_uniform_laws_equals_eval(tmp_path):
    out = tmp_path / "loss.py"
    code, _, err = cli(["codegen", "vacation-finite", "--measure", "loss_probability", "--batch", "geometric",
                        "--service", "uniform", "--vacation", "uniform", "--out", str(out)])
    assert code == 0, err
    loss = load_generated(out)["loss_probability"]
    args = (2.0, 0.5, 1.5, 1.0, 3.0)  # batch mean, service low, high, vacation low, high
    rates = [0.3, 0.45]
    together = loss(np.array(rates), *args, 10)
    for lam, value in zip(rates, together):
        want = _eval(["vacation-finite", "--rate", str(lam), "--batch", "geometric:mean=2", "--service",
                      "uniform:low=0.5,high=1.5", "--vacation", "uniform:low=1,high=3", "--capacity", "10"])
        assert value == pytest.approx(want, rel=1e-11, abs=0), lam
        assert loss(lam, *args, 10) == pytest.approx(value, rel=1e-13, abs=0)
    with pytest.raises(ValueError, match="needs 0 <= low < high"):
        loss(0.3, 2.0, 1.5, 0.5, 1.0, 3.0, 10)


def test_generated_hysteretic_loss_with_a_uniform_service_equals_eval(tmp_path):
    out = tmp_path / "hloss.py"
    code, _, err = cli(["codegen", "hysteretic", "--measure", "loss_probability", "--batch", "geometric", "--service",
                        "uniform", "--out", str(out)])
    assert code == 0, err
    loss = load_generated(out)["loss_probability"]
    want = _eval(["hysteretic", "--rate", "8", "--overload-factor", "0.5", "--batch", "geometric:mean=2",
                  "--service", "uniform:low=0.02,high=0.08", "--thresholds", "4,8,12"])
    assert loss(8.0, 0.5, 2.0, 0.02, 0.08, 4, 8, 12) == pytest.approx(want, rel=1e-11, abs=0)


@pytest.mark.parametrize("low, high", [(F(0), F(2)), (F(1, 2), F(5, 2))])
def test_linear_survival_is_the_survival_function(low, high):
    """The generated code's pieces (``Uniform.linear_survival``) against the law's own mpmath ``survival`` at the
    quarter points of each piece and the engine's pieces from ``survival`` (``linear_pieces``)."""
    from qderive.numeric.engines.vacation_finite_wait import linear_parts
    from qderive.numeric.engines.vacation_wait import linear_pieces
    from qderive.symbolic.laws import TimeLaw

    law = TimeLaw.registered()["uniform"](low, high)
    pieces = law.linear_survival()
    for x0, x1, s0, s1 in pieces:
        for i in (1, 2, 3):
            x = x0 + (x1 - x0) * F(i, 4)
            want = law.survival(mpmath.mpf(x.numerator) / x.denominator)
            level = s0 + (s1 - s0) * F(i, 4)
            assert abs(mpmath.mpf(level.numerator) / level.denominator - want) < 1e-25
    assert linear_parts(pieces) == linear_parts(linear_pieces(law))
