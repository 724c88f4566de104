"""The wait with a start threshold N > 1 (``numeric/engines/blocks_threshold.py``) against things computed another way.

* the tagged customer's absorption time (``numeric/oracles/blocks.py``: the block CTMC's stationary law seen by the
  batch, then a transient chain over (stage, phase, customers ahead, customers present capped at N), uniformization
  with positive terms and, for the moments, back-substitution over the customers ahead; no transform): tails of the
  wait and the sojourn and P(W = 0) to 1e-18 at 20 digits (measured: 1e-23 to 1e-26; the truncation of the chain
  leaves < 1e-20), moments to 1e-18 (measured 1e-21 to 1e-23);
* with N = 1 the transform equals W_b(s) J(s) V_r(s), the decomposition of the blocks' engine (another formula: the
  thesis's transform times the residual factor), to 1e-28 at 30 digits at complex points;
* Yadin and Naor's M/G/1 N-policy, E[W] = lambda b_2 / (2 (1 - rho)) + (N - 1) / (2 lambda) (Takagi 1991, vol. 1,
  sec. 2.5), exactly in rationals, to 1e-25 at 30 digits; the mean wait equals Little's (the moment interpreter's
  mean number waiting over lambda l_1) for a deterministic service too (no chain: not phase-type);
* the documented simulation of docs/theory/blocks.md (E[W^2] = 45.4 +- 0.3 where the past-only decomposition gave
  23.2) and a short seeded simulation of the blocks (99 % simultaneous intervals, Bonferroni over the three).
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
from qderive.numeric.engines.blocks_threshold import threshold_transform
from qderive.numeric.oracles.blocks import tagged_wait
from qderive.numeric.response import tails
from qderive.numeric.simulation.blocks import simulate_blocks
from qderive.symbolic.batches import Constant, FinitePMF, Geometric
from qderive.symbolic.laws import Deterministic, Erlang, Exponential
from qderive.symbolic.models.vacation import VacationPolicy, VacationQueue

MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE
PMF = FinitePMF({1: F(1, 2), 2: F(1, 2)})
RULES = [None, MULTIPLE, SINGLE]


def _model(policy, n=3):
    """A close-down, the rule, N and a setup together (rho_bar = 1/2)."""
    vac = None if policy is None else Exponential(F(1, 2))
    return VacationQueue(F(1, 2), PMF, Erlang(2, F(2, 3)), vac, policy or MULTIPLE, n, Erlang(2, F(1, 2)),
                         Exponential(F(1, 2)))


@pytest.mark.parametrize("policy", RULES)
def test_tails_equal_the_tagged_customer_chain(policy):
    model = _model(policy)
    ts = (F(2),)
    oracle = tagged_wait(model, times=ts, digits=20)
    laws = B.response_laws(model)
    wait = tails(laws["wait"], [F(0), *ts], 20)[0]
    sojourn = tails(laws["sojourn"], list(ts), 20)[0]
    with mpmath.workdps(30):
        assert abs((1 - wait[0]) - oracle.p_zero) <= mpmath.mpf(10) ** -18
        for got, want in zip(wait[1:] + sojourn, oracle.tail + oracle.sojourn_tail):
            assert abs(got - want) <= mpmath.mpf(10) ** -18 * want


@pytest.mark.parametrize("policy", RULES)
def test_moments_equal_the_tagged_customer_chain(policy):
    model = _model(policy, 4)
    oracle = tagged_wait(model, digits=20, moments=3)
    laws = B.response_laws(model)
    for kind, want in (("wait", oracle.moments), ("sojourn", oracle.sojourn_moments)):
        got = laws[kind].moment_values(3, 20)
        with mpmath.workdps(30):
            for g, w in zip(got, want):
                assert abs(g - w) <= mpmath.mpf(10) ** -18 * w


@pytest.mark.parametrize("policy", RULES)
def test_with_threshold_one_the_transform_is_the_decomposition(policy):
    model = _model(policy, 1)
    ctx = mp_context(30)
    with ctx:
        s = np.array([mpmath.mpc(1, 2), mpmath.mpc("0.3", "-0.1"), mpmath.mpc(5, 0)], dtype=object)
        ours = threshold_transform(model, ctx, s, lambda c: B.passage_moments(model, c, order=1)[0][1])
        theirs = B.response_laws(model)["wait"].transform(ctx)(s)
        for a, b in zip(ours, theirs):
            assert abs(a - b) <= mpmath.mpf(10) ** -28


@pytest.mark.parametrize("n", [2, 5])
def test_yadin_naor_mean_wait(n):
    """M/G/1 (Erlang-3 service), no vacation, N-policy: E[W] = lambda b2 / (2 (1 - rho)) + (N - 1) / (2 lambda)."""
    lam, service = F(2, 5), Erlang(3, F(3, 2))
    model = VacationQueue(lam, Constant(1), service, None, MULTIPLE, n)
    rho = lam * service.moment(1)
    want = lam * service.moment(2) / (2 * (1 - rho)) + F(n - 1) / (2 * lam)
    got = B.response_laws(model)["wait"].moment_values(1, 30)[0]
    with mpmath.workdps(40):
        assert abs(got - mpmath.mpf(want.numerator) / want.denominator) <= mpmath.mpf(10) ** -25 * got


def test_mean_wait_equals_littles_for_a_deterministic_service():
    model = VacationQueue(F(1, 4), Geometric(F(2)), Deterministic(F(1)), Exponential(F(1)), SINGLE, 3,
                          Erlang(2, F(1, 2)), Exponential(F(1, 3)))
    ctx = mp_context(30)
    with ctx:
        little = B.measures(model, ctx)["mean_wait"]
        got = B.wait_moments(model, ctx, 1)[0]
        assert abs(got - little) <= mpmath.mpf(10) ** -25 * little


def test_the_documented_second_moment():
    """docs/theory/blocks.md: single arrivals at rate 1/4, exponential services and multiple exponential vacations
    of mean 1, N = 3: simulated E[W^2] = 45.4 +- 0.3; the transform gives 45.4017... (the tagged chain's too)."""
    model = VacationQueue(F(1, 4), Constant(1), Exponential(F(1)), Exponential(F(1)), MULTIPLE, 3)
    got = B.response_laws(model)["wait"].moment_values(2, 20)
    want = tagged_wait(model, digits=20, moments=2).moments
    assert abs(got[1] - 45.4) <= 0.3
    with mpmath.workdps(30):
        assert abs(got[1] - want[1]) <= mpmath.mpf(10) ** -17 * want[1]


def test_tails_against_the_simulator():
    model = _model(SINGLE)
    laws = B.response_laws(model)
    wait = tails(laws["wait"], [F(1), F(4)], None)[0]  # float64 (the inversion's own self-check)
    sojourn = tails(laws["sojourn"], [F(3)], None)[0]
    sim = simulate_blocks(model, customers=20_000, replications=10, seed=26, quiet=True, wait_tail=("1", "4"),
                          sojourn_tail=("3",))
    level = 1 - 0.01 / 3
    checks = [(sim["wait_tail"]["1"], wait[0]), (sim["wait_tail"]["4"], wait[1]), (sim["sojourn_tail"]["3"],
                                                                                  sojourn[0])]
    for estimate, value in checks:
        lo, hi = estimate.interval(level)
        assert lo <= float(value) <= hi, (float(value), lo, hi)
    # the threshold matters at these intervals: with N = 1 the tail at 4 lies outside
    lo, hi = sim["wait_tail"]["4"].interval(level)
    one = B.response_laws(dataclasses.replace(model, start_threshold=1))["wait"]
    assert not lo <= float(tails(one, [F(4)], None)[0][0]) <= hi


BASE = ["eval", "vacation-infinite", "--rate", "1/4", "--batch", "geometric:mean=2", "--vacation", "exp:mean=1",
        "--start-threshold", "3"]


def test_cli_computes_the_response_times_under_the_n_policy():
    code, out, err = cli(BASE + ["--service", "exp:mean=1", "--wait-moments", "2", "--wait-tail", "1",
                                 "--sojourn-quantile", "0.9", "--json"])
    assert code == 0, err
    assert '"wait_moments"' in out and '"wait_tail"' in out and '"sojourn_quantile"' in out


@pytest.mark.parametrize("extra,option", [
    # (a lognormal service computes now: tests/test_blocks_lognormal.py)
    # (a uniform setup computes now by the Laurent parts (SN), tests/test_blocks_uniform.py; multiple uniform
    # vacations do not: infinitely many shifts)
    (["--service", "exp:mean=1", "--vacation", "uniform:low=1/2,high=3/2", "--wait-tail", "1"], "--vacation"),
    (["--service", "det:mean=1", "--wait-tail", "1"], "--service"),
])
def test_refused_with_the_option_named(extra, option):
    code, out, err = cli(BASE + extra)
    assert code != 0 and option in err and "Traceback" not in err, err


def test_the_verify_checks_pass():
    """The two ``qderive verify`` checks of the blocks' response times (derivations/block_checks.py), at 20 digits."""
    from qderive.derivations.block_checks import _tails, n_policy_wait

    for check in (_tails, n_policy_wait):
        passed, agreed, detail = check(20)
        assert passed, detail


def test_size_for_a_wait_tail_refuses_the_n_policy():
    """P(W > T) is not monotone in the load under the N-policy (single arrivals: it tends to 1 at light load, the
    wait for N - 1 later arrivals growing like (N - 1) / lambda), so the bisection of ``size --target-wait-tail``
    would not find the largest load: refused, naming the option, before any work."""
    code, out, err = cli(["size", "vacation-infinite", "--batch", "geometric:mean=2", "--service", "exp:mean=1",
                          "--vacation", "exp:mean=1", "--start-threshold", "3", "--target-wait-tail", "10,0.5"])
    assert code != 0 and "--start-threshold 3" in err and "Traceback" not in err, err
