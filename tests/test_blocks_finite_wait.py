"""The wait of an admitted customer in the finite room with blocks: the tagged-customer chain
(``numeric/oracles/blocks.py``, :func:`tagged_wait` on a FiniteVacationQueue) against things computed another way.

* N = 1 with no setup and no close-down: the finite room's wait law without blocks
  (``numeric/engines/vacation_finite_wait.py``: renewal reward over the embedded intervals and transform inversion,
  no chain) for the three vacation rules and both admissions: tails of the wait and the sojourn, P(W = 0) and the
  first two moments to 1e-20 at 30 digits (measured 1e-40 to 1e-42: both are exact up to the working precision);
* a close-down, a setup and N = 2 in a large room at a low load: the infinite room's blocks' law
  (``numeric/engines/blocks.py``, the transforms (WS), (WN)); the two differ by the room's effect, bounded by the loss
  (measured at r = 60, load 0.2: differences 2e-33 with loss 2e-33; here r = 16 at load 0.1, tolerance 100 times the
  chain's own loss probability);
* N = 3 with a setup and a close-down: the oracle's E[W] equals Little's mean wait of the finite blocks' state law
  (``numeric/engines/blocks_finite.py``, the departure chain, no tagged customer).

The engine (the period families of ``numeric/engines/vacation_finite_wait.py``, item 6; start threshold 1) against:

* the oracle, for the three rules x both admissions x (setup, close-down, both), and a hyperexponential setup with
  an Erlang-3 close-down: float64 moments and P(W = 0) to 1e-12, tails to 1e-9 (the float64 inversion's policy); at
  30 digits tails, P(W = 0), moments to 1e-20 (measured 1e-40);
* the two ways at the nodes (by batches, by customers) at 30 digits;
* gamma laws of non-integer shape (no chain): E[W] equals Little's mean wait of the finite state law; tails inside a
  seeded simulation's intervals (``numeric/simulation/blocks.py``);
* the CLI: computes, and refuses N > 1 under whole admission and laws with kinks naming the option (N > 1 under
  partial admission: tests/test_blocks_finite_wait_threshold.py).
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

from qderive.numeric.backend import mp_context

from qderive.numeric.engines import blocks as B
from qderive.numeric.engines.blocks_finite import finite_measures
from qderive.numeric.engines.vacation_finite_wait import Strategy, wait_law_data
from qderive.numeric.kernels import finite_wait as K
from qderive.numeric.oracles.blocks import chain_measures, tagged_wait
from qderive.numeric.response import tails
from qderive.symbolic.batches import FinitePMF
from qderive.symbolic.laws import Erlang, Exponential, HyperExponential
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationQueue



@pytest.mark.parametrize("admission", list(Admission))
@pytest.mark.parametrize("policy", RULES)
def test_oracle_without_blocks_equals_the_finite_wait_law(policy, admission):
    vac = None if policy is None else Exponential(F(1, 2))
    model = FiniteVacationQueue(F(1, 2), PMF3, Erlang(2, F(2, 3)), vac, 5, admission, policy or MULTIPLE)
    assert_equals_the_oracle(model)


@pytest.mark.parametrize("policy", RULES)
def test_oracle_in_a_large_room_equals_the_infinite_room(policy):
    vac = None if policy is None else Exponential(F(1, 2))
    args = (F(1, 10), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(2, 3)), vac)
    blocks = dict(vacation_policy=policy or MULTIPLE, start_threshold=2, setup=Erlang(2, F(1, 2)),
                  close_down=Exponential(F(1, 2)))
    finite = FiniteVacationQueue(*args, capacity=16, **blocks)
    ts = [F(2), F(10)]
    oracle = tagged_wait(finite, times=ts, digits=20)
    loss = chain_measures(finite, digits=20)["loss_probability"]
    wait = tails(B.response_laws(VacationQueue(*args, **blocks))["wait"], [F(0), *ts], 20)[0]
    with mpmath.workdps(30):
        assert 0 < loss < 1e-8  # the room matters: the comparison is not empty, but little
        tol = 100 * loss
        assert abs((1 - wait[0]) - oracle.p_zero) <= tol
        for got, want in zip(wait[1:], oracle.tail):
            assert abs(got - want) <= tol



@pytest.mark.parametrize("admission", list(Admission))
@pytest.mark.parametrize("policy", RULES)
def test_oracle_mean_wait_with_a_threshold_is_littles(policy, admission):
    """N = 3 with a setup and a close-down in a small room under overload: the oracle's E[W] (absorption times of the
    tagged customer) equals Little's mean wait of the finite blocks' state law (numeric/engines/blocks_finite.py:
    the departure chain and renewal reward, no tagged customer) to 1e-25 at 30 digits (both exact up to the
    arithmetic)."""
    vac = None if policy is None else Exponential(F(1, 2))
    model = FiniteVacationQueue(F(1), PMF3, Erlang(2, F(2, 3)), vac, 4, admission, policy or MULTIPLE, 3, SETUP,
                                CLOSE)
    got = tagged_wait(model, digits=30, moments=1).moments[0]
    ctx = mp_context(40)
    with ctx:
        want = finite_measures(model, ctx)["mean_wait"]
    with mpmath.workdps(40):
        assert abs(got - want) <= mpmath.mpf(10) ** -25 * want


# -- the engine: the period families of the idle passage (numeric/engines/vacation_finite_wait.py, item 6) --------

def _blocks(policy, admission, setup=SETUP, close=CLOSE, r=5):
    vac = None if policy is None else Exponential(F(1, 2))
    return FiniteVacationQueue(F(1, 2), PMF3, Erlang(2, F(2, 3)), vac, r, admission, policy or MULTIPLE,
                               setup=setup, close_down=close)


COMBOS = [(p, a, s, c) for p in RULES for a in Admission for s, c in ((SETUP, None), (None, CLOSE), (SETUP, CLOSE))]
COMBOS += [(MULTIPLE, Admission.WHOLE, HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), 1)), Erlang(3, F(1, 2)))]


@pytest.mark.parametrize("policy, admission, setup, close", COMBOS)
def test_float64_law_equals_the_oracle(policy, admission, setup, close):
    """float64: moments and P(W = 0) to 1e-12 (measured 1e-16); tails by the inversion to 1e-9 relative (the
    float64 inversion's policy, numeric/response.py: accepted tails were within 1.1e-10; measured here 1e-11, as
    for the finite room without blocks)."""
    assert_float64_equals_the_oracle(_blocks(policy, admission, setup, close))


@pytest.mark.parametrize("policy, admission", [(None, Admission.WHOLE), (MULTIPLE, Admission.PARTIAL),
                                               (SINGLE, Admission.PARTIAL)])
def test_30_digit_law_equals_the_oracle(policy, admission):
    """30 digits, a setup and a close-down together: tails, P(W = 0) and moments to 1e-20 (measured 1e-40 for all
    eighteen combinations of the rules, the admissions and the blocks)."""
    model = _blocks(policy, admission, r=3)
    assert_equals_the_oracle(model)



@pytest.mark.parametrize("admission", list(Admission))
def test_the_two_ways_at_the_nodes_agree(admission):
    """The period families' Phi by batches (every family's residual weights times its rows) and by customers (the
    recursion over levels, one source per family) at 30 digits, at nodes where the recursion is stable: two
    different algorithms, to 1e-25 relative (both carry the data's guard digits)."""
    model = _blocks(SINGLE, admission, GAMMA_SETUP, GAMMA_CLOSE, r=12)
    law = wait_law_data(model)
    ctx = mp_context(30)
    with ctx:
        s = np.array([mpmath.mpc(2, 1), mpmath.mpc(5, -7), mpmath.mpc("0.01", 3)], dtype=object)
        assert all(K.wait_customer_stable(model.rate, 0, s))  # the recursion really runs there (F_n >= 0)
        by_batches = law.transform_values(ctx, s, strategy=Strategy.BATCHES)
        by_customers = law.transform_values(ctx, s, strategy=Strategy.CUSTOMERS)
    with mpmath.workdps(40):
        for a, b in zip(by_batches, by_customers):
            assert abs(a - b) <= mpmath.mpf(10) ** -25 * abs(b)


@pytest.mark.parametrize("policy, admission", [(SINGLE, Admission.PARTIAL), (MULTIPLE, Admission.WHOLE)])
def test_gamma_blocks_mean_wait_is_littles(policy, admission):
    """Gamma laws of non-integer shape (no chain): E[W] of the admitted customer's law equals Little's mean wait of
    the finite blocks' state law (numeric/engines/blocks_finite.py: mean number waiting over the throughput, by
    renewal reward over the departure chain, no tagged customer), to 1e-12 in float64 and 1e-25 at 30 digits
    (both are exact up to the arithmetic)."""
    model = _blocks(policy, admission, GAMMA_SETUP, GAMMA_CLOSE, r=6)
    assert_mean_wait_is_littles(model)


def test_gamma_blocks_tails_against_the_simulator():
    """A seeded simulation of the stages with the gamma laws themselves (numeric/simulation/blocks.py): 99 %
    simultaneous intervals (Bonferroni over the three) hold the float64 tails; without the setup the tail at 1 lies
    outside (the blocks matter at this size)."""
    model = _blocks(SINGLE, Admission.PARTIAL, GAMMA_SETUP, GAMMA_CLOSE, r=6)
    assert_simulated_tails_hold_and_without(model, setup=None)


BASE = ["eval", "vacation-finite", "--rate", "1/2", "--batch", "geometric:mean=2", "--service", "exp:mean=1",
        "--vacation", "exp:mean=1", "--capacity", "10"]


def test_cli_computes_the_wait_with_a_setup_and_a_close_down():
    code, out, err = cli(BASE + ["--setup", "exp:mean=0.02", "--close-down", "gamma:shape=1.5,mean=1", "--wait-tail",
                                 "0.05", "--wait-moments", "2", "--sojourn-quantile", "0.9", "--json"])
    assert code == 0, err
    got = json.loads(out)["measures"]
    assert 0 < got["wait_tail"]["0.05"] < 1
    assert abs(got["wait_moments"][0] - got["mean_wait"]) < 1e-12 * got["mean_wait"]


@pytest.mark.parametrize("extra, field", [(["--start-threshold", "2", "--setup", "exp:mean=1", "--admission", "whole"],
                                           "start-threshold"),
                                          # (a constant setup computes now: tests/test_blocks_finite_shifts.py; a
                                          # lognormal close-down too: tests/test_blocks_finite_lognormal.py)
                                          (["--setup", "uniform:low=1/2,high=3/2"], "setup")])
def test_cli_refuses_what_it_does_not_compute(extra, field):
    code, _, err = cli(BASE + extra + ["--wait-tail", "1"])
    assert code != 0 and f"--{field}" in err and "Traceback" not in err
    size = ["size", "vacation-finite", *BASE[2:-2], "--target-loss", "0.2", "--target-wait-quantile", "0.9,10"]
    code, _, err = cli(size + extra)
    assert code != 0 and f"--{field}" in err and "Traceback" not in err


def test_size_with_a_wait_target_keeps_the_blocks_in_the_infinite_room_limit():
    """size --target-wait-quantile with a setup and a close-down: the quantile at the capacity found is eval's there,
    and the infinite room's limit is that of the same blocks (vacation-infinite), not of the queue without them."""
    laws = ["--rate", "1/4", "--batch", "geometric:mean=2", "--service", "exp:mean=1", "--vacation", "exp:mean=1",
            "--setup", "exp:mean=0.5", "--close-down", "exp:mean=0.2"]
    got = assert_size_limit_is_the_infinite_rooms(laws, "0.01", "10")
    code, out, err = cli(["eval", "vacation-finite", *laws, "--capacity", str(got["capacity"]), "--wait-quantile",
                          "0.9", "--json"])
    assert code == 0, err
    there = json.loads(out)["measures"]["wait_quantile"]["0.9"]
    assert abs(got["wait_quantile_at_capacity"] - there) <= 1e-9 * got["wait_quantile_infinite_room"]
