"""The controlled models' simulators (two-flow, two-flow-hysteretic, mm1-hysteretic, hysteretic) record waits
and sojourns (issue 13, item 8): their empirical tails and moments against the exact phase-type laws of
``engines/ctmc_wait.py`` (the tagged customer's absorption time, itself
checked against an independently built chain in tests/test_wait_ctmc.py), with 99.9 % Student-t intervals over
8 seeded replications (a seeded run: about 0.1 % chance per point to miss); recording draws the same random
numbers, so every other measure is unchanged."""

from __future__ import annotations

import pytest

import qderive as qd
from qderive.numeric.simulation import hysteretic
from qderive.numeric.simulation.two_flow import simulate, simulate_hysteretic


@pytest.mark.parametrize("model, sim", [(qd.TwoFlowModel.example(), simulate),
                                        (qd.TwoFlowHystereticModel.example(), simulate_hysteretic),
                                        (qd.MM1HystereticModel.example(), hysteretic.simulate)])
def test_simulated_waits_match_the_phase_type_laws(model, sim):
    exact = model.evaluate(wait_tail=["0.5", "2"], sojourn_tail=["1"], wait_moments=1).response
    res = sim(model, 20_000, 8, seed=3, quiet=True, wait_tail=("0.5", "2"), sojourn_tail=("1",), wait_moments=1)
    checks = [(res["wait_tail"][t], exact["wait_tail"][t]) for t in ("0.5", "2")]
    checks += [(res["sojourn_tail"]["1"], exact["sojourn_tail"]["1"]), (res["wait_moments"][0], exact["wait_moments"][0])]
    for est, want in checks:
        lo, hi = est.interval(0.999)
        assert lo <= want <= hi, (est, want)


def test_recording_does_not_change_the_other_measures():
    model = qd.TwoFlowModel.example()
    plain = simulate(model, 3_000, 3, seed=5, quiet=True)
    recorded = simulate(model, 3_000, 3, seed=5, quiet=True, wait_quantile=("0.9",))
    assert {k: v.value for k, v in plain.measures.items()} == {k: v.value for k, v in recorded.measures.items()}
    assert recorded["wait_quantile"]["0.9"].value > 0


def test_the_general_hysteretic_simulator_records_waits_without_changing_its_measures():
    model = qd.HystereticModel.example()  # no response law yet: the samples alone, FIFO per admitted customer
    plain = hysteretic.simulate(model, 4_000, 3, seed=2, quiet=True)
    recorded = hysteretic.simulate(model, 4_000, 3, seed=2, quiet=True, wait_moments=1, sojourn_moments=1)
    assert {k: v.value for k, v in plain.measures.items()} == {k: v.value for k, v in recorded.measures.items()}
    w, t = recorded["wait_moments"][0].value, recorded["sojourn_moments"][0].value
    assert 0 < w and t == pytest.approx(w + 0.005, rel=1e-9)  # the sojourn adds the constant service of 5 ms
