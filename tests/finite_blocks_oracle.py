"""The finite room's blocks shared by the tests of their waiting-time law (``tests/test_blocks_finite_wait.py``,
N = 1; ``tests/test_blocks_finite_wait_threshold.py``, N > 1): the laws of the examples, and the comparison of
the engine's wait and sojourn laws with the tagged customer's chain (:func:`qderive.numeric.oracles.blocks.tagged_wait`:
absorption times in a transient CTMC built from the stages; no transform), written once."""

from __future__ import annotations

from fractions import Fraction as F

import mpmath

from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.oracles.blocks import tagged_wait
from qderive.numeric.response import tails
from qderive.symbolic.batches import FinitePMF
from qderive.symbolic.laws import Erlang, Exponential, Gamma
from qderive.symbolic.models.vacation import VacationPolicy

MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE
RULES = [None, MULTIPLE, SINGLE]
PMF3 = FinitePMF({1: F(1, 2), 2: F(1, 3), 3: F(1, 6)})
SETUP, CLOSE = Erlang(2, F(1, 2)), Exponential(F(1, 2))
GAMMA_SETUP, GAMMA_CLOSE = Gamma(F(3, 2), F(1, 2)), Gamma(F(5, 2), F(1, 3))
TIMES = [F(1), F(4)]


def assert_float64_equals_the_oracle(model):
    """float64: P(W = 0) and the first two moments of the wait and the sojourn to 1e-12 (measured 4e-16 to 1e-16);
    the tails at t = 1, 4 by the float64 inversion to 1e-9 relative (the inversion's policy, numeric/response.py:
    it accepts a tail within 1e-10; measured 1e-11 to 5e-11), against the chain at 20 digits."""
    oracle = tagged_wait(model, times=TIMES, digits=20, moments=2)
    laws = response_laws(model)
    wait = tails(laws["wait"], [F(0), *TIMES], None)[0]
    sojourn = tails(laws["sojourn"], TIMES, None)[0]
    moments = laws["wait"].moment_values(2, None) + laws["sojourn"].moment_values(2, None)
    assert abs((1 - wait[0]) - float(oracle.p_zero)) <= 1e-12
    for got, want in zip(moments, oracle.moments + oracle.sojourn_moments):
        assert abs(got - float(want)) <= 1e-12 * float(want)
    for got, want in zip(wait[1:] + sojourn, oracle.tail + oracle.sojourn_tail):
        assert abs(float(got) - float(want)) <= 1e-9 * float(want)


def assert_equals_the_oracle(model):
    """The 30-digit law's P(W = 0), wait and sojourn tails at t = 1, 4 and first two moments against the chain at
    30 digits, to 1e-20 (both exact up to their working precision: measured 1e-39 to 1e-42)."""
    oracle = tagged_wait(model, times=TIMES, digits=30, moments=2)
    laws = response_laws(model)
    wait = tails(laws["wait"], [F(0), *TIMES], 30)[0]
    sojourn = tails(laws["sojourn"], TIMES, 30)[0]
    moments = laws["wait"].moment_values(2, 30)
    with mpmath.workdps(40):
        tol = mpmath.mpf(10) ** -20
        assert abs((1 - wait[0]) - oracle.p_zero) <= tol
        for got, want in zip(wait[1:] + sojourn + moments, oracle.tail + oracle.sojourn_tail + oracle.moments):
            assert abs(got - want) <= tol * want


def assert_simulated_tails_hold_and_without(model, **without):
    """A seeded simulation of the stages with the model's own laws (``numeric/simulation/blocks.py``, 8 x 10 000
    customers, seed 26): 99 % simultaneous intervals (Bonferroni over the three) hold the float64 P(W > 1),
    P(W > 4) and P(T > 3); the model with the fields ``without`` (a setup removed, the threshold 1) has P(W > 1)
    outside its interval, so the check sees what those fields do."""
    import dataclasses

    from qderive.numeric.simulation.blocks import simulate_blocks

    laws = response_laws(model)
    wait = tails(laws["wait"], [F(1), F(4)], None)[0]
    sojourn = tails(laws["sojourn"], [F(3)], None)[0]
    sim = simulate_blocks(model, customers=10_000, replications=8, seed=26, quiet=True, wait_tail=("1", "4"),
                          sojourn_tail=("3",))
    level = 1 - 0.01 / 3
    for estimate, value in ((sim["wait_tail"]["1"], wait[0]), (sim["wait_tail"]["4"], wait[1]),
                            (sim["sojourn_tail"]["3"], sojourn[0])):
        lo, hi = estimate.interval(level)
        assert lo <= float(value) <= hi, (float(value), lo, hi)
    lo, hi = sim["wait_tail"]["1"].interval(level)
    bare = response_laws(dataclasses.replace(model, **without))["wait"]
    assert not lo <= float(tails(bare, [F(1)], None)[0][0]) <= hi


def assert_mean_wait_is_littles(model):
    """E[W] of the admitted customer's law equals Little's mean wait of the finite blocks' state law
    (``numeric/engines/blocks_finite.py``: the mean number waiting over the throughput, by renewal reward over the
    departure chain, no tagged customer), to 1e-12 in float64 and 1e-25 at 30 digits (both exact up to the
    arithmetic): the check for laws without a chain (gamma of non-integer shape)."""
    from qderive.numeric.backend import FLOAT64, mp_context
    from qderive.numeric.engines.blocks_finite import finite_measures

    law = response_laws(model)["wait"]
    with FLOAT64:
        want = finite_measures(model, FLOAT64)["mean_wait"]
    assert abs(law.moment_values(1, None)[0] - want) <= 1e-12 * want
    ctx = mp_context(40)
    with ctx:
        want = finite_measures(model, ctx)["mean_wait"]
    with mpmath.workdps(40):
        assert abs(law.moment_values(1, 30)[0] - want) <= mpmath.mpf(10) ** -25 * want


def assert_size_limit_is_the_infinite_rooms(laws: list, target_loss: str, target: str) -> dict:
    """``size vacation-finite LAWS --target-loss L --target-wait-quantile 0.9,T`` where T is above the infinite
    room's 0.9-quantile: no largest capacity, and the limit printed is ``eval vacation-infinite`` with the same
    blocks (to 1e-9), not that of the queue without them. Returns size's JSON."""
    import json

    from conftest import cli

    code, out, err = cli(["size", "vacation-finite", *laws, "--target-loss", target_loss, "--target-wait-quantile",
                          f"0.9,{target}", "--json"])
    assert code == 0, err
    got = json.loads(out)
    code, out, err = cli(["eval", "vacation-infinite", *laws, "--wait-quantile", "0.9", "--json"])
    assert code == 0, err
    limit = json.loads(out)["measures"]["wait_quantile"]["0.9"]
    assert got["max_capacity_for_delay"] is None and abs(got["wait_quantile_infinite_room"] - limit) <= 1e-9 * limit
    return got
