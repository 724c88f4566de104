"""The lognormal inside the blocks' waiting times in the infinite room (issues 26 and 28): a lognormal service, vacation,
setup or close-down with a start threshold N > 1 (``numeric/engines/blocks_threshold.py``), against things computed
another way.

* the derivatives of the lognormal's transform, E[(-T)^j e^{-sT}] = (-1)^j m_j L_j*(s) with L_j the size-biased
  lognormal (``block_laws.size_biased``, the law's own quadrature), against ``mpmath.quad`` of the density written
  here, at a complex point, to 1e-20 at 30 digits (the quadratures agree to about 1e-29);
* the arrival counts a_k of a lognormal period from those derivatives (``block_laws.numeric_counts``) against the
  count sequences of ``numeric/sequences.py`` (the trapezoidal rule of the Poisson probabilities in log time), to
  1e-17 at 20 digits (measured 3e-31 at 30 digits);
* Yadin and Naor's N-policy mean wait, E[W] = lambda b_2 / (2 (1 - rho)) + (N - 1) / (2 lambda) (Takagi 1991, vol. 1,
  sec. 2.5), exactly in rationals (a lognormal's moments are rational), against the response law's mean (Little's:
  the moment interpreter's number waiting over lambda l_1) at 20 digits, to 1e-15;
* the higher moments (formal series at 0, not a circle around 0): ``tests/test_blocks_lognormal_moments.py``;
* with N = 1 the threshold transform (derivatives and counts of the lognormal setup) equals the decomposition
  W_b(s) J(s) V_r(s) (its transform values only) at complex points, to 1e-25 at 30 digits;
* a seeded simulation (99 % simultaneous intervals, Bonferroni over the three checks): the tails of the wait and the
  sojourn with a lognormal service and a lognormal setup under N = 3.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F

import mpmath
import numpy as np
from conftest import cli

from qderive.numeric.backend import mp_context
from qderive.numeric.engines import blocks as B
from qderive.numeric.engines.block_laws import lst_taylor, numeric_counts
from qderive.numeric.engines.blocks_threshold import threshold_transform
from qderive.numeric.response import tails
from qderive.numeric.sequences import arrival_counts
from qderive.numeric.simulation.blocks import simulate_blocks
from qderive.symbolic.batches import Constant, FinitePMF, Geometric
from qderive.symbolic.laws import Exponential
from qderive.symbolic.laws.lognormal import LogNormal
from qderive.symbolic.models.vacation import VacationPolicy, VacationQueue

MULTIPLE = VacationPolicy.MULTIPLE
PMF = FinitePMF({1: F(1, 2), 2: F(1, 2)})


def _density_moment(law, j, s):
    """E[(-T)^j e^{-sT}] by mpmath.quad over t = ln T (the lognormal density written here)."""
    sigma2 = mpmath.log(1 + mpmath.mpf(law.scv.numerator) / law.scv.denominator)
    mu = mpmath.log(mpmath.mpf(law.mean.numerator) / law.mean.denominator) - sigma2 / 2

    def f(y):  # the normal density of ln T times (-e^y)^j e^{-s e^y}
        x = mpmath.exp(y)
        return (-x) ** j * mpmath.exp(-s * x) * mpmath.exp(-(y - mu) ** 2 / (2 * sigma2)) / mpmath.sqrt(
            2 * mpmath.pi * sigma2)

    width = 12 * mpmath.sqrt(sigma2)
    return mpmath.quad(f, mpmath.linspace(mu - width, mu + width, 9))


def test_the_derivatives_of_the_transform_against_quadrature():
    law = LogNormal(F(3, 4), F(2))
    ctx = mp_context(30)
    with ctx:
        s = mpmath.mpc("1.5", "2.25")
        got = lst_taylor(law, np.array([s], dtype=object), ctx, 4)
        for j, value in enumerate(got):
            want = _density_moment(law, j, s) / mpmath.factorial(j)
            assert abs(value[0] - want) <= mpmath.mpf(10) ** -20 * abs(want), j


def test_the_counts_from_the_derivatives_equal_the_count_sequences():
    for law, lam, batch in ((LogNormal(F(6, 100), F(3)), F(275, 24), Geometric(F(4))),
                            (LogNormal(F(1, 1000), F(1, 2)), F(3), PMF)):
        ctx = mp_context(20)
        with ctx:
            a, busy, u0 = numeric_counts(law, batch, lam, 4, ctx)
            want = arrival_counts(law, batch, lam, 4, ctx)
            pairs = list(zip(a, want.a[:4])) + [(busy, want.abar[0]), (u0, want.u[0])]
            for got, value in pairs:
                assert abs(got - value) <= mpmath.mpf(10) ** -17 * value


def test_yadin_naor_mean_wait_with_a_lognormal_service():
    lam, service, n = F(2, 5), LogNormal(F(3, 2), F(2)), 3
    model = VacationQueue(lam, Constant(1), service, None, MULTIPLE, n)
    rho = lam * service.moment(1)
    want = lam * service.moment(2) / (2 * (1 - rho)) + F(n - 1) / (2 * lam)
    got = B.response_laws(model)["wait"].moment_values(1, 20)[0]
    with mpmath.workdps(30):
        assert abs(got - mpmath.mpf(want.numerator) / want.denominator) <= mpmath.mpf(10) ** -15 * got


def _model(n=3):
    """A lognormal service and setup, multiple exponential vacations, N (rho_bar = 1/2)."""
    return VacationQueue(F(1, 2), PMF, LogNormal(F(2, 3), F(1)), Exponential(F(1, 2)), MULTIPLE, n,
                         LogNormal(F(1, 2), F(2)), None)


def test_the_mean_wait_is_littles_with_lognormal_blocks():
    """E[W] of the response law (the quantile search starts there) is the moment interpreter's mean_wait."""
    model = dataclasses.replace(_model(), vacation=LogNormal(F(1, 2), F(3)), close_down=LogNormal(F(1, 4), F(1)))
    law = B.response_laws(model)["wait"]
    ctx = mp_context(20)
    with ctx:
        little = B.measures(model, ctx)["mean_wait"]
    with mpmath.workdps(30):
        assert abs(law.moment_values(1, 20)[0] - little) <= mpmath.mpf(10) ** -18 * little


def test_with_threshold_one_the_transform_is_the_decomposition():
    model = _model(1)
    ctx = mp_context(30)
    with ctx:
        s = np.array([mpmath.mpc(1, 2), mpmath.mpc("0.3", "-0.1"), mpmath.mpc(5, 0)], dtype=object)
        ours = threshold_transform(model, ctx, s, lambda c: B.passage_moments(model, c, order=1)[0][1])
        theirs = B.response_laws(model)["wait"].transform(ctx)(s)
        for a, b in zip(ours, theirs):
            assert abs(a - b) <= mpmath.mpf(10) ** -25


def test_tails_against_the_simulator():
    model = _model()
    laws = B.response_laws(model)
    wait = tails(laws["wait"], [F(1), F(4)], None)[0]  # float64 (the inversion's own self-check)
    sojourn = tails(laws["sojourn"], [F(3)], None)[0]
    sim = simulate_blocks(model, customers=20_000, replications=10, seed=28, quiet=True, wait_tail=("1", "4"),
                          sojourn_tail=("3",))
    level = 1 - 0.01 / 3
    checks = [(sim["wait_tail"]["1"], wait[0]), (sim["wait_tail"]["4"], wait[1]),
              (sim["sojourn_tail"]["3"], sojourn[0])]
    for estimate, value in checks:
        lo, hi = estimate.interval(level)
        assert lo <= float(value) <= hi, (float(value), lo, hi)


def test_the_cli_computes_the_issue_example():
    code, out, err = cli(["eval", "vacation-infinite", "--batch", "geometric:mean=4", "--service",
                          "lognormal:mean=0.012,scv=2", "--vacation", "exp:mean=0.06", "--load", "0.55",
                          "--start-threshold", "3", "--wait-tail", "0.05", "--json"])
    assert code == 0, err
    assert '"wait_tail": {"0.05": 0.846839018' in out
