"""The composed structure (B1), (B2) of numeric/engines/blocks.py against three independent references:
the thesis's closed forms for today's rules, the block chain (a CTMC built from the stages' definitions, solved by
GTH), and classical results of the literature."""

from dataclasses import replace
from fractions import Fraction as F

import mpmath
import pytest
from own_rules import AtMostJ
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.blocks import measures, waiting_law
from qderive.numeric.engines.vacation import InfiniteEngine, infinite_law
from qderive.numeric.oracles.blocks import chain_measures
from qderive.symbolic.batches import Constant
from qderive.symbolic.batches.geometric import Geometric
from qderive.symbolic.blocks import Setup
from qderive.symbolic.laws.gamma import Erlang, Exponential
from qderive.symbolic.laws.hyperexponential import HyperExponential
from qderive.symbolic.models.vacation import VacationPolicy, VacationQueue

KEYS = ("q0", "idle_probability", "mean_queue_length", "mean_wait", "queue_length_variance", "mean_number_in_system")


def _close(a, b, tol):
    return abs(a - b) <= tol * abs(b)


@pytest.mark.parametrize("policy", ["none", "multiple", "single"])
@pytest.mark.parametrize("laws", [
    (Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40))),
    (Constant(2), HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), F(4))), Erlang(3, F(1, 2))),
])
def test_todays_rules_are_the_thesis_closed_forms(policy, laws):
    # (B1)-(B2) with Y of the built-in rule against the thesis's (3)-(7) (symbolic closed forms, exact): the same
    # numbers to 1e-30 at 40 digits (the series carry 40 digits; nothing cancels beyond a few)
    batch, service, vacation = laws
    model = VacationQueue.from_load(F(3, 5), batch, service, None if policy == "none" else vacation,
                                    VacationPolicy.MULTIPLE if policy != "single" else VacationPolicy.SINGLE)
    ctx = mp_context(40)
    with ctx:
        mine, thesis = measures(model, ctx), InfiniteEngine().compute(model, ctx)
        for key in KEYS:
            assert _close(mine[key], thesis[key], mpmath.mpf(10) ** -30), key


COMPOSED = [
    dict(vacation=None, start_threshold=3, setup=Erlang(2, F(1, 2)), close_down=Exponential(F(1, 4))),
    dict(start_threshold=3, setup=Erlang(2, F(1, 2)), close_down=Exponential(F(1, 4))),
    dict(vacation_policy=VacationPolicy.SINGLE, vacation=Erlang(2, F(1)), start_threshold=4),
    dict(close_down=Erlang(2, F(1, 3))),
    dict(setup=Exponential(F(1, 2)), vacation_policy=VacationPolicy.SINGLE, vacation=Erlang(2, F(1))),
]


@pytest.mark.parametrize("fields", COMPOSED)
def test_composed_variants_equal_their_chain(fields):
    # the chain is built from the blocks' definitions (stages over phase-type laws), not from the PGF; its room is
    # cut where the neglected mass is below 1e-25: agreement to 1e-22 on every measure, every variant
    model = replace(VacationQueue(F(1, 3), Constant(1), Exponential(F(1)), Exponential(F(1))), **fields)
    chain = chain_measures(model, digits=25)
    ctx = mp_context(30)
    with ctx:
        mine = measures(model, ctx)
        for key in KEYS:
            assert _close(mine[key], chain[key], mpmath.mpf(10) ** -22), key
        law = infinite_law(model, ctx)
        assert len(law) >= 16
        for j in range(16):  # the law of the number waiting, level by level (positive terms: relative 1e-20)
            assert _close(law[j], chain["p"][j], mpmath.mpf(10) ** -20), j


@pytest.mark.slow
def test_batches_with_every_block_equal_the_chain():
    # geometric batches with a close-down, a threshold, multiple vacations and a setup (a larger chain: slow)
    model = VacationQueue(F(1, 2), Geometric(F(2)), Erlang(2, F(1, 2)), Exponential(F(2)), VacationPolicy.MULTIPLE,
                          3, Exponential(F(1, 3)), Erlang(2, F(1, 4)))
    # the chain at 22 digits (its GTH solve and truncation grow with the digits: 30 digits cost 10 s, 22 digits 4.6 s),
    # the engine at 30: they must agree to the chain's 22 digits, less two for its roundings
    chain = chain_measures(model, digits=22)
    ctx = mp_context(30)
    with ctx:
        mine = measures(model, ctx)
        for key in KEYS:
            assert _close(mine[key], chain[key], mpmath.mpf(10) ** -20), key



def test_a_rule_of_ones_own_gets_its_measures():
    # at most two vacations, then waiting for N = 3, and a setup: the moment interpreter against the chain of the
    # same blocks (J = 2 is neither the single nor the multiple rule)
    vac, setup = Erlang(2, F(1, 2)), Exponential(F(1, 4))
    model = VacationQueue(F(1, 3), Constant(1), Exponential(F(1)), vac, VacationPolicy.MULTIPLE, 3, setup)
    blocks = (AtMostJ(3, vac, 2), Setup(setup))
    chain = chain_measures(model, digits=25, blocks=blocks)
    ctx = mp_context(30)
    with ctx:
        mine = measures(model, ctx, blocks)
        built_in = measures(model, ctx)
        for key in KEYS:
            assert _close(mine[key], chain[key], mpmath.mpf(10) ** -22), key
        assert abs(mine["mean_wait"] - built_in["mean_wait"]) > mpmath.mpf(10) ** -3  # it is another rule


@pytest.mark.parametrize("N", [1, 2, 5])
def test_yadin_naor_n_policy(N):
    # M/M/1 under the N-policy: L = rho / (1 - rho) + (N - 1) / 2 (Yadin and Naor 1963), exactly in rationals
    model = VacationQueue(F(1, 2), Constant(1), Exponential(F(1)), None, start_threshold=N)
    ctx = mp_context(30)
    with ctx:
        L = measures(model, ctx)["mean_number_in_system"]
    assert _close(L, mpmath.mpf(1) + F(N - 1, 2), mpmath.mpf(10) ** -28)


def test_takagi_setup_mean_wait():
    # M/G/1 with a setup time S (Takagi 1991, vol. 1, sec. 2.4): W = lambda E B^2 / (2 (1 - rho))
    # + (2 E S + lambda E S^2) / (2 (1 + lambda E S))
    lam, B, S = F(1, 2), Erlang(2, F(1)), Erlang(3, F(2))
    model = VacationQueue(lam, Constant(1), B, None, setup=S)
    rho = lam * B.moment(1)
    W = lam * B.moment(2) / (2 * (1 - rho)) + (2 * S.moment(1) + lam * S.moment(2)) / (2 * (1 + lam * S.moment(1)))
    with FLOAT64:
        assert _close(float(measures(model, FLOAT64)["mean_wait"]), float(W), 1e-14)


def test_the_law_has_the_mean_of_the_closed_forms():
    # float64: the law's mean sum_j j p_j against the moment series (two interpreters of the same blocks)
    model = VacationQueue(F(1, 2), Geometric(F(2)), Erlang(2, F(1, 2)), Exponential(F(2)), VacationPolicy.MULTIPLE,
                          3, Exponential(F(1, 3)), Erlang(2, F(1, 4)))
    with FLOAT64:
        p = waiting_law(model, FLOAT64, 400)
        N = float(measures(model, FLOAT64)["mean_queue_length"])
    assert abs(sum(p) - 1) < 1e-13
    assert _close(sum(j * v for j, v in enumerate(p)), N, 1e-12)


def test_the_command_line_computes_the_blocks():
    import contextlib
    import io
    import json

    from qderive.derivations.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["eval", "vacation-infinite", "--load", "0.5", "--batch", "geometric:mean=2", "--service",
                     "exp:mean=1", "--vacation", "exp:mean=1", "--start-threshold", "3", "--setup",
                     "erlang:k=2,mean=0.5", "--close-down", "exp:mean=0.3", "--distribution", "--json", "--quiet"])
    assert code == 0
    record = json.loads(out.getvalue())
    m = record["measures"]
    assert abs(sum(m["p"]) - 1) < 1e-9
    assert m["idle_probability"] == 0.5
    assert abs(m["mean_wait"] - m["mean_queue_length"] / 0.5) < 1e-12  # Little: lambda l_1 = 0.25 * 2


@pytest.mark.parametrize("policy", ["none", "multiple", "single"])
def test_wait_moments_of_todays_rules_are_takacs(policy):
    # the distributional Little's law on the blocks' series against the thesis's transform route (Takacs's
    # recursion for batches, symbolic closed forms): E W, E W^2 to 1e-30 at 40 digits (order 2: the thesis route's
    # symbolic moments of higher order take a minute to derive on a cold cache)
    from qderive.numeric.engines.blocks import wait_moments

    base = VacationQueue.example()
    model = replace(base, vacation=None) if policy == "none" else replace(
        base, vacation_policy=VacationPolicy(policy))
    ctx = mp_context(40)
    with ctx:
        mine = wait_moments(model, ctx, 2)
    thesis = model.evaluate(digits=35, wait_moments=2).response["wait_moments"]
    for a, b in zip(mine, thesis):
        assert _close(a, b, mpmath.mpf(10) ** -30)


def test_wait_moments_with_a_setup_and_a_close_down_against_the_simulator():
    # N = 1 with a setup and a close-down (the wait depends on the past only): E W^2 and E T^2 inside the simulator's
    # 99 % intervals widened by 1.5 (seeded, 10 x 40 000 customers; a correct engine fails with probability < 1e-3)
    model = VacationQueue(F(1, 4), Geometric(F(2)), Exponential(F(1)), Exponential(F(1)), VacationPolicy.MULTIPLE,
                          1, Erlang(2, F(1, 2)), Exponential(F(3, 10)))
    from qderive.numeric.simulation.vacation import simulate

    record = model.evaluate(wait_moments=2, sojourn_moments=2)
    sim = simulate(model, 40_000, 10, seed=11, quiet=True, wait_moments=2, sojourn_moments=2)
    for key in ("wait_moments", "sojourn_moments"):
        for value, estimate in zip(record.response[key], sim[key]):
            assert abs(value - estimate.value) <= 1.5 * estimate.half_width(0.99), (key, value, estimate)


def test_wait_moments_under_the_n_policy_are_computed():
    """Geometric batches of mean 2 at rate 1/4, N = 3 (docs/theory/blocks.md: the past-only decomposition gave a
    mean wait of 7.69 against the true 5.33): the response law's mean equals Little's mean_wait of the measures (the
    moment interpreter), to 1e-12 in float64."""
    model = VacationQueue(F(1, 4), Geometric(F(2)), Exponential(F(1)), Exponential(F(1)), start_threshold=3)
    record = model.evaluate(wait_moments=2)
    assert abs(record.response["wait_moments"][0] - record.mean_wait) <= 1e-12 * 5.34
