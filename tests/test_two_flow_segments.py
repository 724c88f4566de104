"""Seed 001's FIFO chain held as segments (:mod:`qderive.numeric.engines.two_flow_segments`).

Checked against the chain over class sequences solved by the same engine code
(:func:`~qderive.numeric.engines.two_flow.sequence_space`) and against the oracle of
:mod:`qderive.numeric.oracles.two_flow` (the chain rebuilt from the model's rules over class
sequences, a different code path), at small thresholds where both are cheap: the two chains are
different Markov chains (the segment chain draws the classes at service entry), so agreement
tests the lumping, not a formula against itself. Tolerances: both solves are GTH
eliminations (entrywise relative error O(n^3 eps) with n <= a few hundred states, ~1e-13 in
float64), hence 1e-12; at 40 digits the same bound leaves far more than 30 digits, hence 1e-30.
At H = 40 (about 1e13 class sequences: no exact chain to compare) the simulator's 99.9% intervals.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.two_flow import SegmentSpace, StateSpace, sequence_space, solve, space_of
from qderive.numeric.engines.two_flow_segments import segment_space
from qderive.numeric.oracles.two_flow import two_flow_measures
from qderive.symbolic import limits
from qderive.symbolic.errors import BudgetError
from qderive.symbolic.models.two_flow import Algorithm, Solver, TwoFlowModel

KEYS = ("throughput_invite", "throughput_non_invite", "rejection_invite", "rejection_non_invite",
        "mean_sojourn_invite", "mean_sojourn_non_invite", "mean_sojourn", "p_mode0", "p_mode1", "p_mode2",
        "mean_return_time", "mean_number_invite", "mean_number_non_invite", "mean_number",
        "accepted_rate_invite", "accepted_rate_non_invite")

# (L, H, R): H >= 2L - 3 (at most four runs), H < 2L - 3 (more runs survive a cycle), R <= H, R = H + 1, R > H + 1
THRESHOLDS = [(2, 4, 5), (4, 6, 7), (5, 7, 9), (3, 6, 5), (1, 3, 4)]
MODELS = [
    lambda L, H, R: TwoFlowModel(F(3, 5), 2, 1, 5, L, H, R, Algorithm.FIFO, F(3, 2), 6),
    lambda L, H, R: TwoFlowModel(F(7, 4), F(1, 3), F(1, 2), 4, L, H, R),
]


def close(a, b, rel):
    for key in KEYS:
        x, y = a[key], b[key]
        if y is None or x is None:
            assert x is None and y is None, key
        else:
            assert abs(x - y) <= rel * abs(y), (key, x, y)


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("thresholds", THRESHOLDS)
def test_segments_agree_with_the_class_sequence_chain_float64(make, thresholds):
    model = make(*thresholds)
    seg = solve(model, FLOAT64, Solver.GTH)
    assert isinstance(seg.space, SegmentSpace)
    ref = solve(model, FLOAT64, Solver.GTH, space=sequence_space(model))
    assert isinstance(ref.space, StateSpace) and seg.space.size < ref.space.size
    a, b = seg.measures(), ref.measures()
    close(a, b, 1e-12)
    la, lb = seg.laws(), ref.laws()  # the joint law of (mode, INVITE count, non-INVITE count): binomial spread
    for m in range(3):
        for i, row in enumerate(lb["joint_law"][m]):
            for j, v in enumerate(row):
                assert abs(la["joint_law"][m][i][j] - v) <= 1e-12 * max(v, 1e-300) + 1e-300, (m, i, j)
    assert max(abs(x - y) for x, y in zip(la["number_law"], lb["number_law"])) <= 1e-13


@pytest.mark.parametrize("thresholds", [(2, 4, 5), (3, 6, 5)])
def test_segments_agree_with_the_oracle_at_40_digits(thresholds):
    model = MODELS[0](*thresholds)
    ctx = mp_context(40)
    with ctx:
        got = solve(model, ctx).measures()
    ref = two_flow_measures(model, mp_context(50), tagged=False)  # Little, as the engine
    with mpmath.workdps(50):
        close({k: (None if v is None else mpmath.mpf(v)) for k, v in got.items()}, ref, mpmath.mpf(10) ** -30)


def test_state_counts_are_polynomial():
    # worst case H >= 2L - 3: a suffix of A B A B; the counts grow like H^4 / 24 at most, not 2^H
    sizes = {H: segment_space(H // 2, H, H + 1).size for H in (8, 16, 24)}
    assert sizes[16] < 16 * sizes[8] * 1.5 and sizes[24] < (24 / 16) ** 4 * sizes[16] * 1.5
    assert sizes[24] < 3 * 2 ** 25 / 1000


def test_simulate_is_not_limited_by_the_analytic_state_space():
    # the model at seed 001's real thresholds is valid; only the class-sequence chain is limited
    model = TwoFlowModel(30, 60, F(250, 3), F(1000, 3), 20, 40, 60)
    assert isinstance(space_of(model), SegmentSpace)
    code, out, err = cli(["simulate", "two-flow", "--rates", "30,60", "--service-rates", "250/3,1000/3",
                          "--thresholds", "20,40,60", "--customers", "2000", "--replications", "2", "--seed", "1",
                          "--json"])
    assert code == 0, err


def test_priority_at_large_h_refuses_pointing_to_the_simulator():
    with pytest.raises(BudgetError, match="two-flow-high = 40 .*no exact polynomial formulation.*simulate two-flow"):
        TwoFlowModel(30, 60, F(250, 3), F(1000, 3), 20, 40, 60, Algorithm.PRIORITY).evaluate()
    code, out, err = cli(["eval", "two-flow", "--rates", "30,60", "--service-rates", "250/3,1000/3",
                          "--thresholds", "20,40,60", "--algorithm", "priority"])
    assert code == 2 and "simulate two-flow" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("thresholds", [(2, 4, 5), (3, 6, 5), (1, 3, 4)])
def test_response_laws_over_segments_agree_with_the_class_sequence_tagged_chain(thresholds):
    # the tagged message's chain over segments (waiting: (segment state, position); in service: (mode, n,
    # class)) against the one over class sequences: tails of the wait and the sojourn, either class and per
    # class, and their first two moments; uniformization sums of positive terms and M-matrix solves on
    # chains of a few hundred states: 1e-12
    from qderive.numeric.engines.ctmc_wait import phase_type_laws, tagged_two_flow, tagged_two_flow_segments

    model = MODELS[0](*thresholds)
    for flow in (None, 1, 2):
        a = phase_type_laws(tagged_two_flow_segments(model, flow))
        b = phase_type_laws(tagged_two_flow(model, flow))
        for kind in ("wait", "sojourn"):
            ta, tb = a[kind].tails([0.25, 1, 4], None)[0], b[kind].tails([0.25, 1, 4], None)[0]
            assert all(abs(x - y) <= 1e-12 * y for x, y in zip(ta, tb)), (flow, kind, ta, tb)
            ma, mb = a[kind].moment_values(2, None), b[kind].moment_values(2, None)
            assert all(abs(x - y) <= 1e-12 * y for x, y in zip(ma, mb)), (flow, kind, ma, mb)


def test_response_laws_over_segments_at_40_digits():
    # the same comparison at 40 digits (both sides at the working precision the policy chooses): 1e-30
    from qderive.numeric.engines.ctmc_wait import phase_type_laws, tagged_two_flow, tagged_two_flow_segments

    model = MODELS[1](2, 4, 5)
    for flow in (None, 2):
        a = phase_type_laws(tagged_two_flow_segments(model, flow))["sojourn"].tails([1], 40)[0]
        b = phase_type_laws(tagged_two_flow(model, flow))["sojourn"].tails([1], 40)[0]
        with mpmath.workdps(50):
            assert abs(mpmath.mpf(a[0]) - mpmath.mpf(b[0])) <= mpmath.mpf(10) ** -30 * mpmath.mpf(b[0])


def test_segment_states_limit_is_the_users():
    with limits.limits(two_flow_states=100), pytest.raises(BudgetError, match="two-flow-states"):
        segment_space(5, 12, 13)


@pytest.mark.slow
def test_h40_against_the_simulator():
    # seed 001's thresholds L,H,R = 20,40,60 at load 0.9 (overload occurs: P(mode 2) ~ 1e-3); no exact chain
    # over class sequences exists at this size (6.6e12 states), so the simulator's intervals are the check:
    # the 95% Student-t intervals of 8 replications widened to 99.9% (t quantiles, 7 degrees of freedom) so
    # that five measures fail together with probability < 0.5% when the engine is right
    from scipy.stats import t as student

    args = ["--rates", "30,60", "--service-rates", "50,200", "--thresholds", "20,40,60", "--json"]
    code, out, err = cli(["eval", "two-flow", *args])
    assert code == 0, err
    exact = json.loads(out)["measures"]
    code, out, err = cli(["simulate", "two-flow", *args, "--customers", "200000", "--replications", "8",
                          "--seed", "7", "--quiet"])
    assert code == 0, err
    sim = json.loads(out)["measures"]
    widen = student.ppf(0.9995, 7) / student.ppf(0.975, 7)
    for key in ("rejection_invite", "rejection_non_invite", "mean_return_time", "p_mode0", "mean_sojourn_invite"):
        lo, hi = sim[key]["ci95"]
        mid, half = sim[key]["estimate"], (hi - lo) / 2 * widen
        assert abs(mid - exact[key]) <= half, (key, mid, half, exact[key])
    assert exact["p_mode2"] > 1e-4  # the check covers overload, not only the normal mode


@pytest.mark.parametrize("rates", [(30, 60, F(250, 3), F(1000, 3)), (F(3, 5), 2, 1, 5), (3, 6, F(250, 3), F(1000, 3))])
def test_sparse_level_solver_on_the_segment_chain_against_gth(rates):
    # L,H = 8,16: 1025 segment states (the class-sequence chain would have ~2e5): seed 001's rates
    # (P(mode 2) ~ 2e-4 at H = 16), a critical load (P(mode 2) ~ 0.05) and a light one (P(mode 2) ~ 4e-18).
    # The level solver's relative residual is 1e-12, GTH's entrywise error O(n^3 eps): 1e-10 relative, as
    # tests/test_two_flow.py
    model = TwoFlowModel(*rates, 8, 16, 17)
    a = solve(model, FLOAT64, Solver.SPARSE).measures()
    b = solve(model, FLOAT64, Solver.GTH).measures()
    assert a["states"] == b["states"] == 1025
    close(a, b, 1e-10)


def test_sparse_moments_when_a_level_is_too_large_for_the_dense_solve():
    # with dense-states lowered, float64 moments come from the level solver over the system count; against
    # the dense per-level M-matrix solve of the same chain (relative residual 1e-13, polished): 1e-11
    from qderive.numeric.engines.ctmc_wait import phase_type_laws, tagged_two_flow_segments

    model = MODELS[0](4, 6, 7)
    for flow in (None, 1):
        dense = phase_type_laws(tagged_two_flow_segments(model, flow))
        with limits.limits(dense_states=5):
            sparse = phase_type_laws(tagged_two_flow_segments(model, flow))
            got = {k: sparse[k].moment_values(3, None) for k in ("wait", "sojourn")}
        for kind, values in got.items():
            ref = dense[kind].moment_values(3, None)
            assert all(abs(x - y) <= 1e-11 * y for x, y in zip(values, ref)), (flow, kind, values, ref)


@pytest.mark.slow
def test_h40_tagged_mean_sojourn_per_flow_is_littles():
    # L,H,R = 20,40,60 (22 855 segment states, ~4.6e5 tagged states per flow): the mean sojourn per flow as
    # the tagged message's absorption time (sparse level solves) against Little's N_c / lambda_c^acc from the
    # stationary law -- two different computations on the same chain; both float64 level solves at
    # relative residual 1e-13: 1e-9
    from qderive.numeric.engines.ctmc_wait import two_flow_laws

    model = TwoFlowModel(30, 60, F(250, 3), F(1000, 3), 20, 40, 60)
    little = solve(model).measures()
    laws = two_flow_laws(model)
    for name in ("invite", "non_invite"):
        mean = laws[f"sojourn_{name}"].moment_values(1, None)[0]
        assert abs(mean - little[f"mean_sojourn_{name}"]) <= 1e-9 * mean, (name, mean, little)


def test_tagged_chain_size_is_bounded_before_it_is_built():
    from qderive.numeric.engines.ctmc_wait import tagged_two_flow_segments

    model = MODELS[0](5, 12, 13)
    size = int(sum(max(n - 1, 0) for n in segment_space(5, 12, 13).length.tolist()))
    with limits.limits(two_flow_states=size - 1), pytest.raises(BudgetError, match="tagged message's chain"):
        tagged_two_flow_segments(model)
