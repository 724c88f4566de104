"""The SIP simulator under ``discipline = priority`` (non-INVITE copies first, non-preemptive, FIFO within a flow;
seed 001, algorithm 2) against results computed another way.

* One copy per transaction, no control: the two-class M/G/1 non-preemptive priority queue, Cobham's closed form
  (Cobham 1954; Kleinrock, Queueing Systems vol. 2, eq. (3.31)): W_H = W0 / (1 - rho_H),
  W_L = W0 / ((1 - rho_H)(1 - rho)), W0 = sum_i lambda_i E[B_i^2] / 2; with multiple vacations V,
  W0 += (1 - rho) E[V^2] / (2 E[V]) (Kella & Yechiali 1988, "Priorities in M/G/1 queue with server vacations",
  Naval Research Logistics 35, the nonpreemptive case); sojourn = W + E[B_i].
* Control ignore, one exponential law, one copy per transaction: the refusal probability is class-blind, the
  contract rule's CTMC (:func:`test_simulate_sip._hysteretic_refusal`, a direct solve).
* With one flow the priority server is the FIFO one: the same run, copy for copy (every feature: controls,
  capacity, duplicate cost, both vacation policies, collapse epochs); FIFO runs are those of a model without the
  field.
* In overload the non-INVITE flow's response falls (503 control, 20 % overload).

Tolerance: as in ``test_simulate_sip.py``, a reference inside the simulation's joint 99 % interval (Bonferroni
over the measures of a run; a correct simulator fails with probability <= 1 %; fixed seeds).
"""

from __future__ import annotations

import json
import types
from fractions import Fraction as F

import numpy as np
import pytest
from test_simulate_sip import _hysteretic_refusal, assert_within, sip

from qderive.derivations.cli import main
from qderive.numeric.simulation.sip import collapse_times, estimates, replication, setup_of, simulate_sip
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Deterministic, Exponential
from qderive.symbolic.models.sip_retransmission import Discipline

#: one copy per transaction: tau_1 = T1 >= Timer B (copy_schedule keeps tau_k < timeout only)
SINGLE = dict(t1=1000, timeout=1000)


@pytest.mark.parametrize("invite, ev, ev2", [
    (Deterministic(1), None, None),  # M/G/1: E B^2 = 1 for the INVITE flow, 2 E B^2 = 0.5 for the other
    (Exponential(1), 1.0, 1.0),  # deterministic multiple vacations of 1 s: E V = E V^2 = 1
])
def test_single_copies_are_the_cobham_priority_queue(invite, ev, ev2):
    lam_i, lam_n, b_i, b_n = 0.3, 0.4, 1.0, 0.5
    m2_i = float(invite.moment(2))
    m2_n = 2 * b_n ** 2  # exponential non-INVITE service of mean 0.5
    vac = {} if ev is None else dict(vacation=Deterministic(1), vacation_policy="multiple")
    model = sip(rate=lam_i, rate_non_invite=lam_n, service=invite, service_non_invite=Exponential(F(1, 2)),
                discipline="priority", **SINGLE, **vac)
    est = estimates(model, horizon=15_000, warmup=100, replications=4, seed=5)
    rho_h, rho = lam_n * b_n, lam_n * b_n + lam_i * b_i
    w0 = (lam_i * m2_i + lam_n * m2_n) / 2 + (0 if ev is None else (1 - rho) * ev2 / (2 * ev))
    w_h, w_l = w0 / (1 - rho_h), w0 / ((1 - rho_h) * (1 - rho))
    # flow 1: invite (``method``), flow 2: non-invite
    assert_within(est, {"flow1_mean_response": w_l + b_i, "flow2_mean_response": w_h + b_n, "utilization": rho})
    assert est["mean_copies"].value == 1
    # the check can fail: FIFO's common wait w0 / (1 - rho) lies outside both intervals
    fifo = w0 / (1 - rho)
    for key, b in (("flow1_mean_response", b_i), ("flow2_mean_response", b_n)):
        lo, hi = est[key].interval(0.99)
        assert not lo <= fifo + b <= hi


def test_ignore_refusal_of_single_copies_is_class_blind():
    # one exponential law for both flows: N is the M/M/1 count under the contract's rule whatever the order, and
    # a refused single copy times out (PASTA: each flow sees the same refusal probability)
    lam_i, lam_n, low, high = 0.7, 0.5, 2, 5
    refused = _hysteretic_refusal(lam_i + lam_n, 1.0, low, high)
    model = sip(rate=lam_i, rate_non_invite=lam_n, service=Exponential(1), control="ignore", thresholds=(low, high),
                discipline="priority", t1=100, timeout=100)
    est = estimates(model, horizon=8_000, warmup=50, replications=4, seed=41)
    assert_within(est, {"timeout_probability": refused, "flow1_timeout_probability": refused,
                        "flow2_timeout_probability": refused, "utilization": (lam_i + lam_n) * (1 - refused)})


def test_fifo_runs_are_those_of_a_model_without_the_field():
    common = dict(rate=6.0, rate_non_invite=3.0, control="503", thresholds=(4, 8), duplicate_cost=0.5)
    run = dict(horizon=20, warmup=5, replications=2, seed=9, response_times=(0.2, 1))
    base = simulate_sip(sip(**common), **run)  # no field ``discipline``: main's path
    assert simulate_sip(sip(discipline="fifo", **common), **run) == base
    assert simulate_sip(sip(discipline=Discipline.FIFO, **common), **run) == base
    assert simulate_sip(sip(discipline="priority", **common), **run) != base


ONE_FLOW = {
    "none": dict(rate=9.5),  # near capacity: retransmissions and a collapse
    "ignore, c": dict(rate=12.0, control="ignore", thresholds=(5, 10), duplicate_cost=0.5),
    "503, K": dict(rate=12.0, control="503", thresholds=(5, 10), capacity=15, method="non-invite"),
    "K, c": dict(rate=12.0, capacity=6, duplicate_cost=0.3),
    "multiple vacations": dict(rate=6.0, vacation=Exponential(F(1, 20)), service=Deterministic(F(1, 10))),
    "single vacations": dict(rate=6.0, vacation=Exponential(F(1, 5)), vacation_policy="single", control="ignore",
                             thresholds=(3, 8)),
}


@pytest.mark.parametrize("name", list(ONE_FLOW))
def test_with_one_flow_priority_is_fifo_copy_for_copy(name):
    # the same draws in the same order: the same copies at the same instants, the same accumulators (up to the
    # order of the float sums: 1e-12 relative), the same collapse epochs
    fifo, prio = (sip(discipline=d, **ONE_FLOW[name]) for d in ("fifo", "priority"))
    rows, traces = [], []
    for model in (fifo, prio):
        trace = []
        row, _ = replication(np.random.default_rng(3), setup_of(model), 5.0, 60.0, (0.3, 1.0), trace=trace)
        rows.append(np.array(row))
        traces.append(trace)
    assert np.allclose(rows[0], rows[1], rtol=1e-12, atol=0)
    assert traces[1][:len(traces[0])] == traces[0]  # priority runs on to window_end + timeout
    criteria = ("wait", "overload") if "control" in ONE_FLOW[name] else ("wait",)
    for criterion in criteria:
        a, b = (collapse_times(m, limit=40, replications=3, seed=2, criterion=criterion)["times"] for m in (fifo, prio))
        assert a == b


def test_priority_lowers_the_non_invite_response_in_overload():
    # 20 % overload (12 copies/s of 0.1 s) under 503, L, H = 10, 20: FIFO answers both flows after ~13 queued
    # copies (~1.3 s); priority serves a non-INVITE copy after the few non-INVITE ones (rho_H = 0.4): ~0.2 s
    common = dict(rate=8.0, rate_non_invite=4.0, control="503", thresholds=(10, 20))
    run = dict(horizon=150, warmup=5, replications=4, seed=7)
    fifo = estimates(sip(discipline="fifo", **common), **run)
    prio = estimates(sip(discipline="priority", **common), **run)
    key = "flow2_mean_response"  # flow 2: non-invite
    assert prio[key].interval(0.99)[1] < 0.5 * fifo[key].interval(0.99)[0]
    assert prio["flow1_mean_response"].interval(0.99)[1] > fifo["flow1_mean_response"].interval(0.99)[0]


def test_cli_json_and_bad_input(capsys):
    argv = ["simulate", "sip-retransmission", "--rate", "8", "--rate-non-invite", "4", "--service", "exp:mean=0.1",
            "--control", "503", "--thresholds", "10,20", "--customers", "600", "--replications", "2", "--seed", "1",
            "--json"]
    outs = {}
    for discipline in ("fifo", "priority"):
        assert main(argv + ["--discipline", discipline]) == 0
        outs[discipline] = json.loads(capsys.readouterr().out)
    assert outs["fifo"].keys() == outs["priority"].keys()
    assert outs["fifo"]["measures"].keys() == outs["priority"]["measures"].keys()
    assert outs["fifo"]["measures"] != outs["priority"]["measures"]
    with pytest.raises(ParameterError, match="discipline"):
        simulate_sip(types.SimpleNamespace(**{**vars(sip()), "discipline": "lifo"}), horizon=1, warmup=0,
                     replications=2, seed=0)


def test_unanswered_transactions_of_both_flows_send_their_whole_schedules():
    # a 1000 s service: no response before Timer B, so every transaction of either flow sends every copy of its
    # own RFC 3261 schedule at its instant, and is counted (timed out) at a + timeout, once its last copy is sent
    # while its first admitted copy still waits (the priority server's resolve entries)
    from test_simulate_sip import RFC3261

    model = sip(rate=0.03, rate_non_invite=0.03, service=Deterministic(1000), discipline="priority")
    trace = []
    replication(np.random.default_rng(5), setup_of(model), 0.0, 300.0, trace=trace)
    sent = {}
    for j, k, t in trace:
        sent.setdefault(j, []).append((k, t))
    lengths = {len(RFC3261["invite"]), len(RFC3261["non-invite"])}
    assert {len(c) for j, c in sent.items() if c[0][1] < 300} == lengths  # both flows present, whole schedules
    for copies in sent.values():
        a = copies[0][1]
        if a < 300:
            taus = RFC3261["invite" if len(copies) == 7 else "non-invite"]
            assert [k for k, _ in copies] == list(range(len(taus)))
            assert np.allclose([t - a for _, t in copies], taus, rtol=0, atol=1e-9)
    est = estimates(model, horizon=300, warmup=0, replications=2, seed=5)
    assert est["flow1_mean_copies"].value == 7 and est["flow2_mean_copies"].value == 11
    assert est["goodput"].value == 0 and est["timeout_probability"].value == 1
