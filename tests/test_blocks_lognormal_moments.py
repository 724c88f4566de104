"""The moments of the wait and the sojourn with a start threshold N > 1 and lognormal laws (issue 26): the formal power
series at s = 0 of ``numeric/engines/blocks_threshold.py`` (:func:`threshold_moments`, the interpreter run over
``numeric/kernels/formal_series.py``), against things computed another way.

* at N = 1 the formal series equal the closed-form moments of W = W_none + R (the thesis's Takacs-type recursions for
  the queue without blocks plus the residual of the idle period, :func:`blocks.wait_moments`: no transform, no
  series in s) with a lognormal in every field, to 1e-25 at 30 digits (both exact up to rounding);
* a lognormal service against the tagged-customer CHAIN (``numeric/oracles/blocks.py``, positive sums over a
  transient chain, no transform) of the same model with a hyperexponential service of the same first four moments:
  E[W^k] depends only on the first k + 1 moments of the service (below), so E[W], E[W^2], E[W^3] must agree (to
  1e-12: the chain at 15 digits, measured 9e-15 for E[W^3]), and E[W^4], which needs the fifth moment where the two
  laws differ, must not (the check can fail);
* a lognormal vacation, setup and close-down enter through their arrival counts as well (not moments only): the
  formal moments against the transform at real points s = h > 0 (the law's own quadrature of its transform, the
  tails' computation) by the Taylor remainder of a nonnegative variable, and E[W] against Little's law (the moment
  interpreter's mean number waiting over lambda l_1, computed separately) to 1e-25;
* a seeded simulation at N = 3 (99 % simultaneous intervals, Bonferroni over the four estimates) for E[W], E[W^2] of
  the wait and of the sojourn;
* the command line computes the moments the issue's example asked (they were refused);
* a lognormal law with a constant setup under N > 1: the Laurent coefficients alpha_D, W~_D(0) of the shifted parts
  (SN) (``numeric/engines/blocks_shifts.py``) by the same formal series (``blocks_threshold.shift_laurent``) equal
  the circle rule's for Erlang and exponential laws (to 1e-20 at 30 digits), satisfy W(0) = 1 and the cancelled pole
  for a lognormal (to 1e-25), and the tails they give lie in a seeded simulation's intervals (99 % simultaneous);
* a law of atoms (an empirical sample) enters by the sum over its atoms, a phase-type law by its matrices: equal to
  their compiled derivatives.

Why E[W^k] needs only m_1..m_{k+1} of the service: the service enters W(s) only through B*(s) -- the weights B*^i of
the customers ahead, X(B*(s)), kappa = (1 - X(B*)) / (1 - B*) and phi(s) = s - lambda (1 - X(B*(s))) -- in
expressions whose other coefficients do not depend on it; [s^j] of an analytic function of B*(s) involves
[s^i] B*(s) = (-1)^i m_i / i! for i <= j only, and the one division by phi(s) = s (1 - rho_bar) + O(s^2) takes
[s^(k+1)] of the numerator into [s^k] W(s).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from conftest import cli

from qderive.numeric.backend import mp_context
from qderive.numeric.engines import blocks as B
from qderive.numeric.engines.blocks_threshold import threshold_moments, threshold_transform
from qderive.numeric.oracles.blocks import tagged_wait
from qderive.numeric.simulation.blocks import simulate_blocks
from qderive.symbolic.batches import FinitePMF, Geometric
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, HyperExponential
from qderive.symbolic.laws.lognormal import LogNormal
from qderive.symbolic.models.vacation import VacationPolicy, VacationQueue

MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE
PMF = FinitePMF({1: F(1, 2), 2: F(1, 2)})
#: a lognormal of mean 1 and scv 4 has m_j = 5^(j (j - 1) / 2); this H3 has the same m_1..m_4 (the reduced moments
#: m_j / j! are those of the three-point law {5/2, 245/6, 5/21} with these weights: solved exactly in rationals,
#: the Hankel system with the node 5/2 fixed) and a different m_5
LOGNORMAL = LogNormal(F(1), F(4))
H3 = HyperExponential((F(727, 2185), F(9, 39215), F(21609, 32395)), (F(5, 2), F(245, 6), F(5, 21)))


def _everywhere(n):
    """A lognormal service, vacation, setup and close-down (rho_bar = 3/8)."""
    return VacationQueue(F(1, 4), PMF, LogNormal(F(1), F(20)), LogNormal(F(1), F(3)), MULTIPLE, n,
                         LogNormal(F(1, 2), F(1)), LogNormal(F(1, 2), F(2)))


def _close(a, b, tol):
    return abs(a - b) <= mpmath.mpf(tol) * abs(b)


def test_at_threshold_one_the_series_equal_the_closed_form_moments():
    for model in (_everywhere(1), dataclasses.replace(_everywhere(1), vacation_policy=SINGLE, close_down=None)):
        ctx = mp_context(30)
        with ctx:
            exact = B.wait_moments(model, ctx, 4)
            series = threshold_moments(model, ctx, 4, B._mean_of(model))
            sojourn = threshold_moments(model, ctx, 3, B._mean_of(model), sojourn=True)
            b = [model.service.moment(j) for j in range(4)]
            w = [1] + exact
            want = [sum(mpmath.binomial(n, i) * w[i] * b[n - i] for i in range(n + 1)) for n in range(1, 4)]
            for got, value in zip(series + sojourn, exact + want):
                assert _close(got, value, "1e-25"), (got, value)


@pytest.mark.parametrize("policy, setup", [(MULTIPLE, None), (SINGLE, Exponential(F(1, 2)))])
def test_a_lognormal_service_equals_the_chain_of_a_moment_matched_hyperexponential(policy, setup):
    assert [LOGNORMAL.moment(j) for j in range(1, 5)] == [H3.moment(j) for j in range(1, 5)]
    assert LOGNORMAL.moment(5) != H3.moment(5)
    lognormal = VacationQueue(F(1, 8), PMF, LOGNORMAL, Exponential(F(1)), policy, 3, setup, None)
    chain = tagged_wait(dataclasses.replace(lognormal, service=H3), digits=15, moments=3)
    laws = B.response_laws(lognormal)
    wait, sojourn = laws["wait"].moment_values(4, 20), laws["sojourn"].moment_values(3, 20)
    with mpmath.workdps(30):
        for got, want in zip(wait[:3] + sojourn, chain.moments + chain.sojourn_moments):
            assert _close(got, want, "1e-12"), (got, want)
        fourth = B.response_laws(dataclasses.replace(lognormal, service=H3))["wait"].moment_values(4, 20)[3]
        assert not _close(wait[3], fourth, "1e-2")  # m_5 differs by 418025000/63: E[W^4] sees it


def test_the_moments_against_the_transform_at_real_points():
    """For W >= 0, r_k(h) = W*(h) - sum_{j<=k} (-h)^j E[W^j] / j! lies between 0 and (-h)^(k+1) E[W^(k+1)] / (k+1)!
    (Taylor's remainder of e^{-hx} with a mean value, integrated). At k = 4 with E[W^5] from the series, the
    remainder's sign and size check E[W], ..., E[W^4] through W*(h) at h = 10^-4 and 10^-6 (the threshold transform
    at real points: the lognormal laws' own quadratures of their transforms and counts, at 40 digits). Measured: the
    bound is 1.39e-24 at h = 10^-6 against terms 4.5e-6, 2.4e-11, 2.4e-16, 8.8e-21 (a relative error of 3e-19 in
    E[W], 6e-14 in E[W^2], 6e-9 in E[W^3], 2e-4 in E[W^4] would fail it), and r_4 / the bound was 0.95 at 10^-4,
    0.9995 at 10^-6 (the remainder tends to the next term). E[W] also equals Little's law to 1e-25."""
    model = VacationQueue(F(1, 4), PMF, LogNormal(F(1, 2), F(1)), LogNormal(F(1), F(3)), MULTIPLE, 3,
                          LogNormal(F(1, 2), F(1)), LogNormal(F(1, 2), F(2)))
    ctx = mp_context(40)
    with ctx:
        mean_y = B._mean_of(model)
        moments = [mpmath.mpf(1)] + threshold_moments(model, ctx, 5, mean_y)
        for e in (4, 6):
            h = mpmath.mpf(10) ** -e
            value = threshold_transform(model, ctx, np.array([mpmath.mpc(h)], dtype=object), mean_y)[0].real
            r = value - mpmath.fsum((-h) ** j * moments[j] / mpmath.factorial(j) for j in range(5))
            bound = h**5 * moments[5] / 120
            # the 1e-10 slack: the transform at 40 digits loses about log10(1/h) digits in (1 - Y) / phi
            assert -bound * (1 + mpmath.mpf(10) ** -10) <= r <= 0, (e, r, bound)
        little = B.measures(model, ctx)["mean_wait"]
        assert _close(moments[1], little, "1e-25"), (moments[1], little)


def test_the_first_two_moments_against_the_simulator():
    model = VacationQueue(F(1, 4), Geometric(F(2)), LogNormal(F(1), F(2)), LogNormal(F(1), F(1)), MULTIPLE, 3,
                          LogNormal(F(1, 2), F(1)), None)
    laws = B.response_laws(model)
    wait, sojourn = laws["wait"].moment_values(2, None), laws["sojourn"].moment_values(2, None)
    sim = simulate_blocks(model, customers=20_000, replications=10, seed=2626, quiet=True, wait_moments=2,
                          sojourn_moments=2)
    level = 1 - 0.01 / 4
    checks = list(zip(sim["wait_moments"], wait)) + list(zip(sim["sojourn_moments"], sojourn))
    for estimate, value in checks:
        lo, hi = estimate.interval(level)
        assert lo <= value <= hi, (value, lo, hi)


def test_the_cli_computes_the_moments_that_were_refused():
    base = ["eval", "vacation-infinite", "--batch", "geometric:mean=2", "--load", "0.5", "--service",
            "lognormal:mean=1,scv=2", "--vacation", "exp:mean=1", "--start-threshold", "3"]
    code, out, err = cli(base + ["--wait-moments", "3", "--sojourn-moments", "2", "--json"])
    assert code == 0 and '"wait_moments"' in out and "Traceback" not in err, err
    import json

    got = json.loads(out)
    model = VacationQueue(F(1, 4), Geometric(F(2)), LogNormal(F(1), F(2)), Exponential(F(1)), MULTIPLE, 3)
    ctx = mp_context(30)
    with ctx:
        want = threshold_moments(model, ctx, 3, B._mean_of(model))
    for a, b in zip(got["measures"]["wait_moments"], want):
        assert _close(mpmath.mpf(a), b, "1e-13"), (a, b)
    code, out, err = cli(base + ["--setup", "det:mean=1", "--wait-moments", "2", "--digits", "30"])
    assert code == 0 and "wait_moments" in out, err


# -- a lognormal law with a constant setup under N > 1: the Laurent coefficients of the shifted parts (SN) -----------


def _laurent_parts(model, digits, sojourn=False):
    """({D: alpha_D}, {D: W~_D(0)}) of (SN) by the formal series (blocks_threshold.shift_laurent) in ``digits`` (the
    simple poles' coefficients: order 1)."""
    from qderive.numeric.engines.block_moments import passage_moments
    from qderive.numeric.engines.blocks_shifts import Horizon, threshold_shift_parts
    from qderive.numeric.engines.blocks_threshold import shift_laurent

    work = mp_context(digits)
    with work, Horizon(F(0)):
        mean_y = passage_moments(model, work, order=1)[0][1]
        alpha, finite = shift_laurent(lambda s: threshold_shift_parts(model, work, s, mean_y, sojourn), work)
        return {D: a[0] for D, a in alpha.items()}, finite


def test_the_formal_laurent_coefficients_equal_the_circle_rule_for_smooth_laws():
    """For laws analytic around 0 (Erlang, exponential) the circle rule of blocks_shifts._laurent (the trapezoidal
    rule around 0, another computation) gives the same alpha_D and W~_D(0), to 1e-20 at 30 digits."""
    from qderive.numeric.engines.blocks_shifts import _laurent

    model = VacationQueue(F(1, 4), PMF, Erlang(2, F(1)), Exponential(F(1)), SINGLE, 3, Deterministic(F(1)),
                          Exponential(F(1, 2)))
    alpha, finite, _, _, _ = _laurent(model, 30, False)
    alpha = {D: a[0] for D, a in alpha.items()}
    with mpmath.workdps(40):
        got_alpha, got_finite = _laurent_parts(model, 50)
        assert set(got_alpha) == set(alpha) and len(alpha) > 1
        for D in alpha:
            assert abs(got_alpha[D] - alpha[D]) <= mpmath.mpf(10) ** -20 * max(1, abs(alpha[D])), D
            assert abs(got_finite[D] - finite[D]) <= mpmath.mpf(10) ** -20 * max(1, abs(finite[D])), D


def test_the_laurent_coefficients_of_a_lognormal_with_a_constant_setup_satisfy_w_at_zero():
    """W(s) = sum_D (alpha_D / s + W~_D(s)) e^{-sD} is a transform: W(0) = 1 and no pole at 0, so
    sum_D alpha_D = 0 and sum_D (W~_D(0) - alpha_D D) = 1 (exact identities, each alpha_D nonzero: to 1e-25)."""
    model = VacationQueue(F(1, 4), Geometric(F(2)), LogNormal(F(1), F(2)), LogNormal(F(1), F(1)), SINGLE, 3,
                          Deterministic(F(1)), None)
    with mpmath.workdps(40):
        alpha, finite = _laurent_parts(model, 40)
        assert len(alpha) == 2 and all(abs(a) > mpmath.mpf(10) ** -3 for a in alpha.values())
        assert abs(mpmath.fsum(alpha.values())) <= mpmath.mpf(10) ** -25
        total = mpmath.fsum(finite[D] - alpha[D] * D.numerator / D.denominator for D in alpha)
        assert abs(total - 1) <= mpmath.mpf(10) ** -25


def test_the_tails_with_a_lognormal_and_a_constant_setup_against_the_simulator():
    from qderive.numeric.response import tails

    model = VacationQueue(F(1, 4), Geometric(F(2)), LogNormal(F(1), F(2)), Exponential(F(1)), MULTIPLE, 3,
                          Deterministic(F(1)), None)
    laws = B.response_laws(model)
    wait = tails(laws["wait"], [F(1, 2), F(2), F(8)], None)[0]
    sim = simulate_blocks(model, customers=20_000, replications=10, seed=2627, quiet=True,
                          wait_tail=("1/2", "2", "8"))
    level = 1 - 0.01 / 3
    for t, value in zip(("1/2", "2", "8"), wait):
        lo, hi = sim["wait_tail"][t].interval(level)
        assert lo <= float(value) <= hi, (t, float(value), lo, hi)
    code, out, err = cli(["eval", "vacation-infinite", "--batch", "geometric:mean=2", "--load", "0.5", "--service",
                          "lognormal:mean=1,scv=2", "--vacation", "exp:mean=1", "--setup", "det:mean=1",
                          "--start-threshold", "3", "--wait-tail", "2", "--json"])
    assert code == 0 and '"wait_tail"' in out, err


def test_a_law_of_atoms_enters_by_its_atoms():
    """A constant or empirical law's Taylor coefficients at a point (``block_laws.lst_taylor``: the sum over its atoms,
    not compiled derivatives) equal the compiled derivatives of its closed-form transform (SymPy), to 1e-25 at 30
    digits at a complex point; with an empirical vacation under N = 3 the formal E[W] equals Little's to 1e-25."""
    from qderive.numeric.engines.block_laws import _evaluate, _taylor_evaluator, lst_taylor
    from qderive.symbolic.laws.empirical import Empirical

    sample = Empirical((F(1, 2), F(3, 4), F(3, 4), F(2), F(7, 5)))
    ctx = mp_context(30)
    with ctx:
        s = np.array([mpmath.mpc("0.7", "1.3")], dtype=object)
        for j, got in enumerate(lst_taylor(sample, s, ctx, 5)):
            want = _evaluate(_taylor_evaluator(sample, j), s, ctx)
            assert abs(got[0] - want[0]) <= mpmath.mpf(10) ** -25 * abs(want[0]), j
        model = VacationQueue(F(1, 4), Geometric(F(2)), LogNormal(F(1), F(2)), sample, MULTIPLE, 3)
        mean = threshold_moments(model, ctx, 2, B._mean_of(model))[0]
        little = B.measures(model, ctx)["mean_wait"]
        assert _close(mean, little, "1e-25"), (mean, little)


def test_a_phase_type_law_enters_by_its_matrices():
    """The exact Taylor coefficients at lambda of a phase-type law (``block_laws.phase_type_taylor``:
    (-1)^j alpha (cI - T)^{-(j+1)} t in rationals) equal the compiled derivatives of its closed-form transform
    (SymPy), to 1e-25 at 30 digits, for a 3-phase Coxian law."""
    from qderive.numeric.engines.block_laws import _evaluate, _taylor_evaluator, phase_type_taylor
    from qderive.symbolic.laws.phase_type import Coxian

    law = Coxian((F(1), F(2), F(3)), (F(1, 2), F(3, 10)))
    c = F(3, 4)
    exact = phase_type_taylor(law, c, 4)
    ctx = mp_context(30)
    with ctx:
        point = np.array([mpmath.mpf(3) / 4], dtype=object)
        for j, value in enumerate(exact):
            want = _evaluate(_taylor_evaluator(law, j), point, ctx)[0]
            assert abs(mpmath.mpf(value.numerator) / value.denominator - want) <= mpmath.mpf(10) ** -25 * abs(want), j
