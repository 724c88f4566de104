"""M2|G|1|R with bi-level hysteretic input control and relative priority (``two-flow-hysteretic --service LAW``).

Seed 002, abstracts 5 and 7 (M2|D|1|R). The method: the embedded chain at departures over
(flow-1 count, flow-2 count, mode) with the state-dependent birth kernel (the total count drives
the mode, each arrival is of flow 1 with probability lambda_1^(m) / lambda^(m) in the mode in
force). Checks against computations that share nothing with it but the one GTH:

* exponential service given as a law (``--service exp:mean=1/mu``) against the existing CTMC
  engine over (mode, i, j, flow in service) at 30 digits: the same model, so every measure must
  agree to 25 digits (5 for the roundings of the sums and the uniformization bound eps);
* deterministic service against the event-driven simulator (service times drawn from the law),
  every measure inside its 99 % interval (fixed seed);
* the joint chain lumps to the count chain: its stationary law summed over the compositions is
  the count chain's (two different chains, 1e-13 in float64);
* the command line: ``--service det:mean=D``, the error for ``--service`` with ``--service-rate``,
  and the response-time options refused with a clear message.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction as F

import mpmath
from conftest import cli

from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import two_flow_hysteretic as E
from qderive.numeric.simulation.two_flow import simulate_hysteretic
from qderive.symbolic.laws import Deterministic, Exponential
from qderive.symbolic.models.two_flow import TwoFlowHystereticModel

BASE = TwoFlowHystereticModel(F(3, 2), 1, F(1, 2), F(1, 4), 2, 4, 6, service_rates=(F(4, 5),),
                              lambda1_discard=F(1, 4))


def test_exponential_law_equals_the_ctmc_engine_at_30_digits():
    law = replace(BASE, service_rates=None, service=Exponential(F(5, 4)))
    ctx = mp_context(30)
    with ctx:
        got = E.birth_measures(law, ctx)
        ref = E.solve(BASE, ctx).measures()
        for k, v in ref.items():
            if k == "states":
                continue
            assert abs(got[k] - v) <= mpmath.mpf(10) ** -25 * abs(v), k


def test_deterministic_against_the_simulation():
    model = TwoFlowHystereticModel(F(3, 2), 1, F(1, 2), F(1, 2), 3, 6, 9, service=Deterministic(1),
                                   lambda1_discard=F(1, 4))
    got = model.evaluate().as_dict()
    sim = simulate_hysteretic(model, customers=20_000, replications=6, seed=3, quiet=True)
    for k, v in got.items():
        if k in sim.measures:
            lo, hi = sim.measures[k].interval(0.99)
            assert lo <= v <= hi, (k, v, lo, hi)
    # deterministic service is not exponential here (the check above can fail)
    exp = replace(model, service=Exponential(1)).evaluate().as_dict()
    assert abs(exp["mean_number_flow1"] / got["mean_number_flow1"] - 1) > 0.1


def test_joint_chain_lumps_to_the_count_chain():
    model = replace(BASE, service_rates=None, service=Deterministic(F(6, 5)))
    with FLOAT64:
        count, joint = E.birth_chains(model, FLOAT64)
    lumped = {}
    for k, (i, j, s) in enumerate(joint.states):
        lumped[(i + j, s)] = lumped.get((i + j, s), 0.0) + joint.qs[k]
    assert set(lumped) == set(count.states)
    for k, st in enumerate(count.states):
        assert abs(lumped[st] - count.q[k]) < 1e-13


def test_cli():
    args = ["eval", "two-flow-hysteretic", "--rates-normal", "1.5,1", "--rates-overload", "0.5,0.25",
            "--thresholds", "2,4,6"]
    code, out, err = cli(args + ["--service", "det:mean=1", "--json"])
    assert code == 0, err
    m = json.loads(out)["measures"]
    assert 0 < m["p_mode2"] < 1 and m["mean_sojourn_flow2"] > m["mean_sojourn_flow1"]
    code, _, err = cli(args + ["--service", "det:mean=1", "--service-rate", "1"])
    assert code == 2 and "--service" in err
    code, _, err = cli(args + ["--service", "det:mean=1", "--sojourn-moments", "1"])
    assert code == 2 and "exponential service" in err
    code, _, err = cli(args)
    assert code == 2 and "--service-rate" in err
