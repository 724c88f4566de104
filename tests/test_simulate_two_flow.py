"""The two-class simulators (:mod:`qderive.numeric.simulation.two_flow`) against the oracle chains.

References: :mod:`qderive.numeric.oracles.two_flow` -- the chains rebuilt from the model rules on
tuples, measures by definition (tagged-customer sojourns, first-passage return and cycle
times), solved by GTH in float64; they share nothing with the simulators but the model object.

Tolerance: every reference value must lie in the simulation's simultaneous 99 % intervals
(independent replications, jackknife standard errors, Student t; Bonferroni over the m
measures of a run, each interval at level 1 - 0.01/m), so a correct simulator fails a case with
probability at most 1 %; the seeds are fixed, so the tests are deterministic. 20 replications
(19 degrees of freedom) of 50 000 customers, at a light and a heavy load.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import pytest
from conftest import cli
from qderive.numeric.backend import FLOAT64
from qderive.numeric.oracles.two_flow import hysteretic_measures, two_flow_measures
from qderive.numeric.simulation.two_flow import simulate, simulate_hysteretic
from qderive.symbolic.models.two_flow import (
    Algorithm,
    TwoFlowHystereticModel,
    TwoFlowModel,
)

LEVEL = 0.99


def assert_within(result, reference: dict, keys):
    failures = []
    level = 1 - (1 - LEVEL) / len(keys)
    for name in keys:
        lo, hi = result[name].interval(level)
        if not (lo <= float(reference[name]) <= hi):
            failures.append(f"{name}: reference {float(reference[name]):.6g} outside [{lo:.6g}, {hi:.6g}]")
    assert not failures, "\n".join(failures)


TWO_FLOW_KEYS = ("throughput_invite", "throughput_non_invite", "rejection_invite", "rejection_non_invite",
                 "mean_sojourn_invite", "mean_sojourn_non_invite", "mean_sojourn", "p_mode0", "p_mode1", "p_mode2",
                 "mean_return_time")


#: the development loop keeps a covering design (each discipline once, each load once): fifo at the light load,
#: priority at the heavy one; the other two pairs (the same simulator branches at the other load) run in the full
#: suite
@pytest.mark.parametrize("lam, algorithm", [
    pytest.param(lam, alg, id=f"{alg}-{lid}", marks=() if (lid, alg) in {("lam0", Algorithm.FIFO),
                                                                      ("lam1", Algorithm.PRIORITY)} else pytest.mark.slow)
    for lid, lam in (("lam0", (F(3, 10), F(1))), ("lam1", (F(3, 5), F(2)))) for alg in Algorithm])
def test_two_flow_against_its_chain(algorithm, lam):
    model = TwoFlowModel(*lam, 1, 5, 2, 4, 5, algorithm, F(3, 2), 6)
    reference = two_flow_measures(model, FLOAT64)
    assert_within(simulate(model, 50_000, 20, seed=17, quiet=True), reference, TWO_FLOW_KEYS)


def test_two_flow_notes_a_buffer_that_does_not_bind():
    res = simulate(TwoFlowModel(1, 1, 2, 2, 2, 4, 9), 2_000, 2, seed=1, quiet=True)
    assert any("does not bind" in note for note in res.notes)


def test_rates_outside_float64_are_refused_naming_the_rate():
    from qderive.symbolic.errors import ParameterError

    with pytest.raises(ParameterError, match="lambda_invite = 1.0e-400: is outside the float64 range"):
        simulate(TwoFlowModel(F(1, 10**400), 1, 1, 5, 2, 4, 5), 1_000, 2, seed=1, quiet=True)


def test_two_flow_without_overload_has_no_return_time():
    res = simulate(TwoFlowModel(1, 1, 2, 2, 2, 4, 3), 2_000, 3, seed=1, quiet=True)
    assert res["mean_return_time"].value is None
    assert any("mean_return_time" in note and "never returned" in note for note in res.notes)


HYST = [
    TwoFlowHystereticModel(F(3, 5), F(2, 5), F(3, 10), F(1, 5), 2, 4, 6, service_rates=1),
    TwoFlowHystereticModel(F(3, 2), 1, F(1, 2), F(1, 2), 3, 6, 9, service_rates=(1, 2), lambda1_discard=F(1, 4)),
]


# equal-mu (1.2 s) runs in the full suite: unequal-mu, in the loop, runs the same simulator with two service rates
# and a discarded fraction of flow 1 (the general case of equal-mu's chain)
@pytest.mark.slow  # 1.6 s a case; the loop keeps the two-flow simulator against its chain (above)
@pytest.mark.parametrize("model", HYST[:2], ids=["equal-mu", "unequal-mu"])
def test_hysteretic_against_its_chain(model):
    reference = hysteretic_measures(model, FLOAT64)
    keys = [k for k in reference if k != "states"]
    assert_within(simulate_hysteretic(model, 50_000, 20, seed=23, quiet=True), reference, keys)


def test_cli_simulate_agrees_with_the_chain():
    code, out, _ = cli(["simulate", "two-flow", "--rates", "0.6,2.0", "--service-rates", "1,5", "--thresholds",
                        "2,4,5", "--algorithm", "priority", "--customers", "20000", "--replications", "10",
                        "--seed", "3", "--json"])
    assert code == 0
    summary = json.loads(out)
    assert summary["seed"] == 3 and summary["replications"] == 10
    reference = two_flow_measures(TwoFlowModel(F(3, 5), 2, 1, 5, 2, 4, 5, Algorithm.PRIORITY), FLOAT64)
    level = 1 - (1 - LEVEL) / len(TWO_FLOW_KEYS)
    from qderive.numeric.simulation.stats import student_t_quantile

    widen = student_t_quantile((1 + level) / 2, 9) / student_t_quantile(0.975, 9)  # 95 % -> joint 99 %
    for key in TWO_FLOW_KEYS:
        lo, hi = summary["measures"][key]["ci95"]
        centre, half = (lo + hi) / 2, (hi - lo) / 2 * widen
        assert abs(float(reference[key]) - centre) <= half, (key, reference[key], lo, hi)


def test_cli_simulate_hysteretic_runs():
    code, out, err = cli(["simulate", "two-flow-hysteretic", "--rates-normal", "0.6,0.4", "--rates-overload",
                          "0.3,0.2", "--service-rate", "1", "--thresholds", "2,4,6", "--customers", "5000",
                          "--replications", "3", "--seed", "1", "--json"])
    assert code == 0, err
    assert set(json.loads(out)["measures"]) >= {"loss_flow1", "mean_cycle_time"}


def test_examples_simulate_within_their_intervals():
    # what `qderive verify --simulate` runs for these models (smaller runs here)
    for cls, sim in ((TwoFlowModel, simulate), (TwoFlowHystereticModel, simulate_hysteretic)):
        model = cls.example()
        analytic = model.evaluate().as_dict()
        res = sim(model, 40_000, 10, seed=5, quiet=True)
        keys = [k for k in res.measures if res[k].std_error]
        assert_within(res, analytic, keys)
