"""The simulator of the hysteretic models against chains computed another way.

Oracles (``qderive.numeric.oracles.hysteretic``; none shares code with the simulator's event
loop): for exponential service the CTMC of the process over (count, mode in force), solved by
GTH, with first-passage cycle times; the M|M|1 hysteresis (instantaneous switching) by its own
CTMC. The simulator samples with the laws' own samplers and applies the model's switching rule.

Tolerance: the reference values must lie in the simulation's intervals at the joint level 99 %
(independent replications, jackknife standard errors, Student t; Bonferroni over the m measures
of one run: each interval at level 1 - 0.01/m), so a correct simulator fails a test with
probability at most 1 %. The seeds are fixed: the tests are deterministic.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction as F

import pytest

from qderive.numeric.backend import mp_context
from qderive.numeric.oracles import hysteretic as O
from qderive.numeric.simulation.hysteretic import simulate
from qderive.symbolic.batches import FinitePMF, Geometric
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Exponential
from qderive.symbolic.models.hysteretic import Convention, HystereticModel, MM1HystereticModel, Semantics

from conftest import cli

LEVEL = 0.99


def assert_within(result, reference: dict):
    """Every measure with a proper interval contains the reference at the joint level LEVEL."""
    keys = [k for k, est in result.measures.items() if k in reference and est.interval(0.95) is not None
            and est.std_error > 0]
    assert keys, "nothing to compare"
    level = 1 - (1 - LEVEL) / len(keys)
    outside = []
    for k in keys:
        lo, hi = result.measures[k].interval(level)
        if not lo <= float(reference[k]) <= hi:
            outside.append(f"{k}: {float(reference[k]):.6g} not in [{lo:.6g}, {hi:.6g}]")
    assert not outside, outside


def _model(rho0, convention=Convention.EVENT, semantics=Semantics.INTERVAL, factor=F(1, 2), thresholds=(2, 4, 7)):
    L, H, R = thresholds
    return HystereticModel.from_load(rho0, service=Exponential(1), batch=FinitePMF({1: F(1, 2), 2: F(1, 2)}),
                                     L=L, H=H, R=R, overload_factor=factor, convention=convention, semantics=semantics)


def _process(model):
    with mp_context(30) as ctx:
        o = O.process(model, ctx)
    return o.extra["label"] if model.semantics is Semantics.LABEL else o.measures


#: the development loop keeps a covering design, each convention and each load once: (2, event), the only case of the
#: label semantics, and (4/5, left). loop sibling of (4/5, event): test_limit_cases_against_the_ctmc (the event
#: convention with interval semantics); of (2, left): (4/5, left) (the same convention and semantics). Full suite: all
_HYST_LOOP = {(F(4, 5), Convention.LEFT), (F(2), Convention.EVENT)}


@pytest.mark.parametrize("rho0, convention", [
    pytest.param(rho0, convention, id=f"rho0{i}-{convention}",
                 marks=() if (rho0, convention) in _HYST_LOOP else pytest.mark.slow)
    for i, rho0 in enumerate([F(4, 5), F(2)]) for convention in Convention])
def test_hysteresis_against_its_ctmc(convention, rho0):
    semantics = Semantics.INTERVAL if rho0 < 1 or convention is Convention.LEFT else Semantics.LABEL
    model = _model(rho0, convention, semantics)
    assert_within(simulate(model, 50_000, 20, seed=31, quiet=True), _process(model))


@pytest.mark.parametrize("factor, thresholds", [(F(1), (2, 4, 7)), (F(0), (2, 4, 7)), (F(1, 2), (2, 4, 5))])
def test_limit_cases_against_the_ctmc(factor, thresholds):
    """The pure discard hysteresis (f = 1), complete blocking (f = 0) and R = H + 1."""
    model = _model(F(3, 2), factor=factor, thresholds=thresholds)
    assert_within(simulate(model, 50_000, 20, seed=7, quiet=True), _process(model))


@pytest.mark.parametrize("point", [(F(6, 5), F(3, 5), 1, 3, 6, 9), (F(3, 2), F(0), 1, 2, 4, 6),
                                   (F(1), F(1), 1, 2, 5, 8)])
def test_mm1_instantaneous_switching_against_its_ctmc(point):
    model = MM1HystereticModel(*point)
    with mp_context(30) as ctx:
        ref = O.mm1(model, ctx).measures
    assert_within(simulate(model, 50_000, 20, seed=11, quiet=True), ref)


def test_analytic_examples_lie_in_the_simulation_intervals():
    """The models' examples (verify --simulate): the analytic float64 measures vs a seeded run."""
    from qderive.derivations.smoke import simulation_check

    for cls in (HystereticModel, MM1HystereticModel):
        result = simulation_check(cls.example(), customers=60_000, replications=10)(50)
        assert result.passed, result.detail


def test_undefined_cycle_time_is_none_with_a_note():
    """rho_0 = 0.1 and H = 30: overload is never reached in a short run."""
    model = HystereticModel(service=Exponential(1), rate=F(1, 10), L=10, H=30, R=40)
    res = simulate(model, 2_000, 3, seed=1, quiet=True)
    assert res["mean_cycle_time"].value is None
    assert res.as_dict()["mean_cycle_time"] == {"estimate": None, "ci95": None}
    assert any("mean_cycle_time" in note for note in res.notes)


def test_thesis_form_has_no_simulated_counterpart():
    with pytest.raises(ParameterError, match="no simulated counterpart"):
        simulate(replace(_model(F(2)), thesis_form=True), 1_000, 2, seed=1, quiet=True)


def test_same_seed_same_numbers_and_the_cli():
    model = HystereticModel(service=Exponential(F(1, 200)), batch=Geometric(2), rate=150, L=4, H=8, R=12)
    a = simulate(model, 5_000, 3, seed=5, quiet=True).as_dict()
    b = simulate(model, 5_000, 3, seed=5, quiet=True).as_dict()
    assert a == b
    code, out, err = cli(["simulate", "hysteretic", "--service", "exp:mean=0.005", "--batch", "geometric:mean=2",
                          "--rate", "150", "--thresholds", "4,8,12", "--customers", "5000", "--replications", "3",
                          "--seed", "5", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["measures"] == json.loads(json.dumps(a)) and doc["model"] == "hysteretic"
    code, out, err = cli(["simulate", "mm1-hysteretic", "--rates", "1.2,0.6", "--service-rate", "1", "--thresholds",
                          "3,6,9", "--customers", "2000", "--replications", "2", "--seed", "1", "--json"])
    assert code == 0, err
    assert set(json.loads(out)["measures"]) == {"p_normal", "p_overload", "p_discard", "mean_normal_time",
                                                 "mean_return_time", "mean_cycle_time", "loss_probability",
                                                 "throughput"}
