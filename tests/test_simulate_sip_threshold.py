"""The SIP simulator under ``--control threshold`` (seed 001's three-mode server, model ``two-flow``) against the
analytic engine, which computes it another way (the stationary law of the two-flow chain, no event loop).

One copy per transaction (T1 = 10 s >= Timer B: tau_1 is never sent), so the engine's fixed point is exact: the
copies are the two Poisson flows. The non-INVITE flow has its own (faster) exponential law, so that under priority
(seed 001's algorithm 2) the order of service changes the count, hence the refusals, not only the responses;
Timer B = 0.3 s is short enough that the responses (goodput) depend on the discipline.

Tolerance: the analytic value inside the simulation's joint 99 % interval (Bonferroni over the six measures of a
run: a correct simulator fails with probability <= 1 %; fixed seeds, so the test is deterministic).
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from test_simulate_sip import assert_within

from qderive.numeric.simulation.sip import estimates, simulate_sip
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

#: one copy per transaction; INVITE 3/s (mean service 0.1 s), non-INVITE 4/s (mean 0.05 s); L, H = 2, 4
SETTINGS = dict(rate=3, rate_non_invite=4, service=Exponential(F(1, 10)), service_non_invite=Exponential(F(1, 20)),
                t1=10, timeout=F(3, 10), control="threshold", thresholds=(2, 4), scan_points=8)


@pytest.fixture(scope="module")
def runs():
    """{discipline: (the engine's float64 result, the simulator's estimates)} (8 x 1500 s each)."""
    out = {}
    for discipline in ("fifo", "priority"):
        model = Sip(discipline=discipline, **SETTINGS)
        out[discipline] = model.evaluate(), estimates(model, horizon=1500, warmup=20, replications=8, seed=7)
    return out


@pytest.mark.parametrize("discipline", ["fifo", "priority"])
def test_per_flow_refusals_and_goodput_against_the_engine(runs, discipline):
    exact, est = runs[discipline]
    ref = {}
    for i, name in ((1, "invite"), (2, "non-invite")):
        for key in ("reject_probability", "goodput", "timeout_probability"):
            ref[f"flow{i}_{key}"] = exact.flows[name][key]
    assert_within(est, ref)
    assert est["mean_copies"].value == 1
    # mode 1 refuses the INVITE flow only, so its refusal is well above the other's
    assert est["flow1_reject_probability"].value > 2 * est["flow2_reject_probability"].value > 0


def test_priority_changes_the_flows(runs):
    """Algorithm 2 serves non-INVITE first in modes 1 and 2: its timeouts fall (engine: 0.078 under fifo, 0.059
    under priority), and the FIFO value lies outside the priority run's 99 % interval, so the check above can fail
    (a simulator ignoring the discipline would)."""
    (fifo, _), (prio, est) = runs["fifo"], runs["priority"]
    want = fifo.flows["non-invite"]["timeout_probability"]
    assert prio.flows["non-invite"]["timeout_probability"] < want - 0.01
    lo, hi = est["flow2_timeout_probability"].interval(0.99)
    assert not lo <= want <= hi


def test_the_other_method_is_flow_one():
    """--method non-invite: flow 1 (``rate``) is the non-INVITE one, and mode 1 refuses the other (flow 2)."""
    kw = dict(SETTINGS, rate=4, rate_non_invite=3, service=Exponential(F(1, 20)),
              service_non_invite=Exponential(F(1, 10)))
    out = simulate_sip(Sip(method="non-invite", **kw), horizon=300, warmup=10, replications=2, seed=3)
    assert out["flows"]["invite"]["reject_probability"][0] > 2 * out["flows"]["non-invite"]["reject_probability"][0]


def _duck(**fields):
    import types

    d = dict(SETTINGS, method="invite", t2=4, capacity=None, duplicate_cost=1, discipline="fifo")
    d.pop("scan_points")
    d.update(fields)
    return types.SimpleNamespace(**d)


@pytest.mark.parametrize("fields, option", [
    (dict(rate_non_invite=0), "rate_non_invite"),
    (dict(thresholds=(0, 4)), "thresholds"),
    (dict(thresholds=(4, 4)), "thresholds"),
    (dict(thresholds=(2, 4), capacity=3), "thresholds"),
    (dict(vacation=Exponential(F(1, 10))), "vacation"),
    (dict(control="thresh"), "control"),
])
def test_bad_input_names_the_option(fields, option):
    """The simulator reads the model by duck typing: it checks the fields itself (the model class also would)."""
    with pytest.raises(ParameterError) as err:
        simulate_sip(_duck(**fields), horizon=10, warmup=0, replications=2, seed=1)
    assert err.value.name == option


def test_collapse_criterion_overload_is_refused():
    """The ``overload`` collapse criterion is the entry into the overload state of ignore / 503; seed 001's server
    has two such modes, so it is refused (naming the option), and the ``wait`` criterion runs."""
    from qderive.numeric.simulation.sip import collapse_times

    with pytest.raises(ParameterError) as err:
        collapse_times(_duck(), limit=10, replications=2, seed=1, criterion="overload")
    assert err.value.name == "criterion"
    out = collapse_times(_duck(), limit=10, replications=2, seed=1)
    assert len(out["times"]) == 2 and 0 <= out["collapsed"][0] <= 1
