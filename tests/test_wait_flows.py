"""Per-flow response times of the two-flow models (``response_flows``: keys ``wait_tail_invite``, ...,
``wait_tail_flow1``, ..., as ``mean_sojourn_invite`` / ``mean_sojourn_flow1``), each against something computed
another way: the engine's own per-flow mean sojourn (throughput and Little's law on the stationary chain, not
the tagged customer's absorption time), and the overall law as the mixture of the per-flow laws weighted by
the admitted (= served) rates, at 30 digits (float64 for the two-flow chain)."""

from __future__ import annotations

import json

import mpmath
import pytest

import qderive as qd
from conftest import cli


def _rel(a, b):
    with mpmath.workdps(80):
        return abs(mpmath.mpf(a) - mpmath.mpf(b)) / abs(mpmath.mpf(b))


# the two-flow chain at 30 digits takes ~15 s: float64 there (both sides well conditioned: 1e-12 asked)
@pytest.mark.parametrize("cls, digits, tol", [(qd.TwoFlowModel, None, 1e-12), (qd.TwoFlowHystereticModel, 30, 1e-28)])
def test_per_flow_laws_against_the_engine_and_the_mixture(cls, digits, tol):
    model = cls.example()
    f1, f2 = cls.response_flows
    asks = {f"sojourn_moments_{f}": 1 for f in (f1, f2)}
    asks.update({f"wait_tail_{f}": ["1.5"] for f in (f1, f2)})
    r = model.evaluate(digits, wait_tail=["1.5"], **asks)
    for f in (f1, f2):  # E T of the tagged chain = the engine's mean sojourn of that flow
        assert _rel(r.response[f"sojourn_moments_{f}"][0], getattr(r, f"mean_sojourn_{f}")) < tol
    throughput = [getattr(r, f"throughput_{f}") for f in (f1, f2)]
    with mpmath.workdps(60):
        mixed = sum(x * r.response[f"wait_tail_{f}"]["1.5"] for x, f in zip(throughput, (f1, f2))) / sum(throughput)
    assert _rel(mixed, r.response["wait_tail"]["1.5"]) < tol


def test_per_flow_options_on_the_command_line():
    base = ["eval", "two-flow-hysteretic", "--rates-normal", "3/2,1", "--rates-overload", "1/2,1/2",
            "--rates-discard", "1/4,0", "--thresholds", "3,6,9", "--service-rate", "1,2"]
    code, out, _ = cli(base + ["--wait-tail-flow2", "0.50,2", "--wait-moments-flow1", "2", "--json"])
    assert code == 0
    measures = json.loads(out)["measures"]
    assert set(measures["wait_tail_flow2"]) == {"0.50", "2"} and len(measures["wait_moments_flow1"]) == 2
    code, _, err = cli(base + ["--wait-quantile-flow1", "1.5"])
    assert code == 2 and "--wait-quantile-flow1" in err and "strictly between 0 and 1" in err
