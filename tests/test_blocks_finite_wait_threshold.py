"""The wait of an admitted customer in the finite room with a start threshold N > 1 (partial admission, and whole
admission when no batch can be refused below N): the period
families with the thresholds met plus the excess of the customers still below N
(``numeric/engines/vacation_finite_wait.py``, item 7; ``numeric/engines/blocks_threshold.py``,
:func:`threshold_excess`) against things computed another way:

* the tagged-customer chain of ``numeric/oracles/blocks.py`` (:func:`tagged_wait`: absorption times in a transient
  CTMC built from the stages, with the true count while idle; no transform), N = 2 and 3, r = 4..6, the three
  vacation rules, with and without a setup and a close-down, and N = r;
* the infinite room's wait with the same blocks (``numeric/engines/blocks_threshold.py``) in a large room at a low load;
* Little's mean wait of the finite blocks' state law (``numeric/engines/blocks_finite.py``: the departure chain and
  renewal reward, no tagged customer) for gamma laws of non-integer shape, which have no chain;
* the two ways at the nodes (by batches, by customers) at 30 digits;
* a seeded simulation of the stages with the gamma laws themselves (``numeric/simulation/blocks.py``);
* the CLI: computes, refuses whole admission where a batch could be refused below N (geometric batches) and a law
  without a closed-form transform, naming the option.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from conftest import cli
from finite_blocks_oracle import (CLOSE, GAMMA_CLOSE, GAMMA_SETUP, MULTIPLE, PMF3, RULES, SETUP, SINGLE,
                                  assert_equals_the_oracle, assert_float64_equals_the_oracle,
                                  assert_mean_wait_is_littles, assert_simulated_tails_hold_and_without,
                                  assert_size_limit_is_the_infinite_rooms)

from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import blocks as B
from qderive.numeric.engines.blocks_finite import finite_measures
from qderive.numeric.engines.vacation_finite_wait import Strategy, response_laws, wait_law_data
from qderive.numeric.kernels import finite_wait as K
from qderive.numeric.response import tails
from qderive.symbolic.batches import FinitePMF
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, Gamma, HyperExponential, Uniform
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationQueue

BLOCKS = [(None, None), (SETUP, None), (None, CLOSE), (SETUP, CLOSE)]


def _model(policy, n, setup=SETUP, close=CLOSE, r=5, service=Erlang(2, F(2, 3)), rate=F(1, 2),
           admission=Admission.PARTIAL):
    vac = None if policy is None else Exponential(F(1, 2))
    return FiniteVacationQueue(rate, PMF3, service, vac, r, admission, policy or MULTIPLE, n, setup, close)


@pytest.mark.parametrize("admission", list(Admission))
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("setup, close", BLOCKS)
@pytest.mark.parametrize("policy", RULES)
def test_float64_law_equals_the_oracle(policy, setup, close, n, admission):
    """float64: P(W = 0) and the first two moments of the wait and the sojourn to 1e-12 (measured 4e-16; the moments
    of the excess by the trapezoidal rule at 20 digits); tails by the float64 inversion to 1e-9 relative (the
    inversion's policy, numeric/response.py: it accepts a tail within 1e-10; measured here 5e-11, as without a
    threshold). Whole admission: batches of at most 3 = r - N + 1 (r = 5, N <= 3), never refused below N."""
    assert_float64_equals_the_oracle(_model(policy, n, setup, close, admission=admission))


@pytest.mark.parametrize("policy, setup, close, admission", [(None, SETUP, CLOSE, Admission.PARTIAL),
                                                               (MULTIPLE, None, CLOSE, Admission.WHOLE),
                                                               (SINGLE, SETUP, None, Admission.PARTIAL)])
def test_30_digit_law_equals_the_oracle(policy, setup, close, admission):
    assert_equals_the_oracle(_model(policy, 2, setup, close, r=4, admission=admission))


@pytest.mark.slow
@pytest.mark.parametrize("policy", RULES)
def test_30_digit_law_equals_the_oracle_at_n_equal_r(policy):
    """N = r = 4 (the largest threshold the room allows), a hyperexponential setup and an Erlang-3 close-down."""
    model = _model(policy, 4, HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), 1)), Erlang(3, F(1, 2)), r=4)
    assert_equals_the_oracle(model)


def test_the_two_ways_at_the_nodes_agree():
    """Multiple vacations with N = 3: the repeat's periods start at the levels k < N (not only 0). Phi by batches and
    by customers at 30 digits, at nodes where the recursion is stable: two different algorithms, to 1e-25 relative
    (both carry the data's guard digits)."""
    model = _model(MULTIPLE, 3, GAMMA_SETUP, GAMMA_CLOSE, r=12)
    law = wait_law_data(model)
    ctx = mp_context(30)
    with ctx:
        s = np.array([mpmath.mpc(2, 1), mpmath.mpc(5, -7), mpmath.mpc("0.01", 3)], dtype=object)
        assert all(K.wait_customer_stable(model.rate, 0, s))
        by_batches = law.transform_values(ctx, s, strategy=Strategy.BATCHES)
        by_customers = law.transform_values(ctx, s, strategy=Strategy.CUSTOMERS)
    with mpmath.workdps(40):
        for a, b in zip(by_batches, by_customers):
            assert abs(a - b) <= mpmath.mpf(10) ** -25 * abs(b)


@pytest.mark.parametrize("policy", RULES)
def test_gamma_laws_mean_wait_is_littles(policy):
    """Gamma laws of non-integer shape (no chain), N = 3: E[W] of the admitted customer's law equals Little's mean
    wait of the finite blocks' state law (mean number waiting over the throughput, no tagged customer) to 1e-12 in
    float64 and 1e-25 at 30 digits (both are exact up to the arithmetic)."""
    model = _model(policy, 3, GAMMA_SETUP, GAMMA_CLOSE, r=6, service=Gamma(F(3, 2), F(2, 3)))
    assert_mean_wait_is_littles(model)


@pytest.mark.parametrize("policy", RULES)
def test_a_large_room_at_a_low_load_equals_the_infinite_room(policy):
    """Gamma laws (no chain), N = 3, r = 24 at load 0.1: the finite room's wait equals the infinite room's
    (numeric/engines/blocks_threshold.py, the transform (WN) with the serving part and the whole later-arrival
    recursion; no period families) up to the room's effect, bounded by the loss (measured 1e-16 here, differences
    1e-12: the float64 inversion's); tolerance: tails 1e-9 relative (the float64 inversion's policy) and the moments
    1e-12 relative, plus 100 times the loss."""
    vac = None if policy is None else Exponential(F(1, 2))
    args = (F(1, 10), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Gamma(F(3, 2), F(2, 3)), vac)
    blocks = dict(vacation_policy=policy or MULTIPLE, start_threshold=3, setup=GAMMA_SETUP, close_down=CLOSE)
    finite = FiniteVacationQueue(*args, capacity=24, **blocks)
    with FLOAT64:
        loss = finite_measures(finite, FLOAT64)["loss_probability"]
    assert loss < 1e-12
    ts = [F(0), F(2), F(10)]
    ours, theirs = response_laws(finite), B.response_laws(VacationQueue(*args, **blocks))
    for kind in ("wait", "sojourn"):
        for a, b in zip(tails(ours[kind], ts, None)[0], tails(theirs[kind], ts, None)[0]):
            assert abs(a - b) <= 1e-9 * b + 100 * loss
        for a, b in zip(ours[kind].moment_values(2, None), theirs[kind].moment_values(2, None)):
            assert abs(a - b) <= 1e-12 * b + 100 * loss * b


@pytest.mark.parametrize("policy", [MULTIPLE, SINGLE])
def test_kinked_laws_moments_are_littles(policy):
    """A constant service and a uniform setup (kinks: no tails, the moments work), N = 2: E[W] equals Little's mean
    wait of the finite state law to 1e-12 in float64 (the excess's Taylor coefficients come from exp(-s D) and the
    uniform law's transform on a small circle)."""
    model = _model(policy, 2, Uniform(F(1, 4), F(3, 4)), CLOSE, r=6, service=Deterministic(F(2, 3)))
    with FLOAT64:
        want = finite_measures(model, FLOAT64)["mean_wait"]
    got = response_laws(model)["wait"].moment_values(1, None)[0]
    assert abs(got - want) <= 1e-12 * want


@pytest.mark.slow
def test_gamma_laws_tails_against_the_simulator():
    """A seeded simulation of the stages with the gamma laws themselves, single vacations and N = 3: 99 %
    simultaneous intervals (Bonferroni over the three) hold the float64 tails; with N = 1 the tail at 1 lies outside
    (the threshold matters at this size)."""
    model = _model(SINGLE, 3, GAMMA_SETUP, GAMMA_CLOSE, r=6, service=Gamma(F(3, 2), F(2, 3)))
    assert_simulated_tails_hold_and_without(model, start_threshold=1)


BASE = ["eval", "vacation-finite", "--batch", "geometric:mean=4", "--service", "exp:mean=0.012", "--vacation",
        "exp:mean=0.06", "--load", "0.55", "--capacity", "20", "--start-threshold", "3"]


def test_cli_computes_the_wait_with_a_threshold():
    """The issue's command: the tail, the moments (E[W] equal to Little's mean wait of the same output, to 1e-12)
    and a sojourn quantile."""
    code, out, err = cli(BASE + ["--wait-tail", "0.05", "--wait-moments", "2", "--sojourn-quantile", "0.9", "--json"])
    assert code == 0, err
    got = json.loads(out)["measures"]
    assert 0 < got["wait_tail"]["0.05"] < 1 and got["sojourn_quantile"]["0.9"] > 0
    assert abs(got["wait_moments"][0] - got["mean_wait"]) <= 1e-12 * got["mean_wait"]


def test_whole_admission_refuses_a_batch_that_could_be_refused_below_the_threshold():
    """Batches of up to 3 with r = 4 and N = 3: a batch of 3 at level 2 does not fit (3 > r - N + 1 = 2), so the
    count below N is not the infinite room's; refused naming the field (without the rule the mean wait would be
    2.0246 against the chain's 2.1070, measured)."""
    model = _model(SINGLE, 3, SETUP, None, r=4, admission=Admission.WHOLE)
    refusal = response_laws.supports(model, frozenset({"wait_moments"}))
    assert refusal is not None and refusal.field == "start_threshold" and "r - N + 1 = 2" in refusal.why
    assert response_laws.supports(_model(SINGLE, 2, SETUP, None, r=4, admission=Admission.WHOLE),
                                  frozenset({"wait_moments"})) is None


@pytest.mark.parametrize("extra, field", [(["--admission", "whole"], "start-threshold")])
def test_cli_refuses_what_it_does_not_compute(extra, field):
    # a lognormal setup with N > 1 computes since branch lb26 (tests/test_blocks_finite_lognormal.py)
    for measure in (["--wait-tail", "0.05"], ["--wait-moments", "2"]):
        code, _, err = cli(BASE + extra + measure)
        assert code != 0 and f"--{field}" in err and "Traceback" not in err, err


@pytest.mark.slow  # 3 s; the loop keeps size with a wait target and blocks (test_blocks_finite_wait.py)
def test_size_with_a_wait_target_and_a_threshold_equals_a_scan_of_the_capacities():
    """size --target-wait-quantile with N = 3: the largest capacity whose 0.9-quantile of the wait is <= 10 equals a
    scan of eval over r (an independent route to the gallop and bisection, which assume the quantile grows with r:
    the scan checks that too); a target above the infinite room's limit returns none, with the limit of
    vacation-infinite with the same threshold (not of the queue without it)."""
    laws = ["--rate", "2/5", "--batch", "geometric:mean=2", "--service", "exp:mean=1", "--vacation", "exp:mean=1",
            "--start-threshold", "3"]
    code, out, err = cli(["size", "vacation-finite", *laws, "--target-loss", "0.2", "--target-wait-quantile", "0.9,10",
                          "--json"])
    assert code == 0, err
    got = json.loads(out)
    scan = {}
    for r in range(got["capacity"], got["max_capacity_for_delay"] + 3):
        code, out, err = cli(["eval", "vacation-finite", *laws, "--capacity", str(r), "--wait-quantile", "0.9",
                              "--json"])
        assert code == 0, err
        scan[r] = json.loads(out)["measures"]["wait_quantile"]["0.9"]
    assert all(scan[r] < scan[r + 1] for r in list(scan)[:-1])
    assert max(r for r, q in scan.items() if q <= 10) == got["max_capacity_for_delay"]
    assert_size_limit_is_the_infinite_rooms(laws, "0.2", "40")
