"""sip-retransmission with two flows (``--rate-non-invite``): INVITE and non-INVITE transactions sharing one FIFO server.

The references share no code with the engine: the transaction simulator (real timers per transaction, each with
its own schedule) where the fixed point is exact (Timer B = T1: one copy per transaction, so the copies are the
Poisson superposition of the two flows), and the M/M/1 two-flow map in closed form (P(R > t) = e^{-(mu - lambda) t},
both RFC 3261 schedules written out here) solved by mpmath's findroot at 50 digits.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest

from qderive.derivations.cli import main
from qderive.numeric.simulation.sip import simulate_sip
from qderive.numeric.simulation.stats import student_t_quantile
from qderive.symbolic.laws import Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

FLOW_KEYS = {"goodput", "mean_copies", "duplicate_ratio", "timeout_probability", "reject_probability"}


@pytest.mark.parametrize("method, control, other", [("invite", "ignore", "non-invite"),
                                                    ("non-invite", "503", "invite")])
def test_one_copy_per_transaction_goodput_per_flow_within_the_simulated_99_percent_interval(method, control, other):
    """Timer B = T1: each transaction sends one copy, so the copies are Poisson at lambda_1 + lambda_2 and the fixed
    point is exact; the per-flow goodput, timeout and reject fractions must lie in the simulator's 99 % intervals
    (8 replications of 400 s, about 3600 transactions each; 95 % half-widths widened by t_0.995 / t_0.975).
    An engine that fed the server only the --rate flow would refuse far fewer copies (p ~ 0.13 instead of 0.26)."""
    m = Sip(rate=5, rate_non_invite=4, method=method, service=Exponential(F(1, 10)), control=control,
            thresholds=(4, 5), timeout=F(1, 2), scan_points=16)
    r = m.evaluate()
    assert set(r.flows) == {method, other} and all(set(v) == FLOW_KEYS for v in r.flows.values())
    sim = simulate_sip(m, horizon=400, warmup=10, replications=8, seed=17)
    widen = student_t_quantile(0.995, 7) / student_t_quantile(0.975, 7)
    for name, rate in ((method, 5), (other, 4)):
        for key in ("goodput", "timeout_probability", "reject_probability"):
            est, hw = sim["flows"][name][key]
            got = r.flows[name][key]
            assert abs(got - est) <= widen * hw + 1e-12, (name, key, got, est, hw)
        assert r.flows[name]["mean_copies"] == 1 and sim["flows"][name]["mean_copies"][0] == 1
    est, hw = sim["goodput"]
    assert abs(r.goodput - est) <= widen * hw
    # the totals are the flows' sums (goodput) and transaction-weighted means (probabilities)
    assert abs(r.goodput - r.flows[method]["goodput"] - r.flows[other]["goodput"]) < 1e-12
    key = "timeout_probability" if control == "ignore" else "reject_probability"
    assert r[key] > 0.1
    assert abs(r[key] - (5 * r.flows[method][key] + 4 * r.flows[other][key]) / 9) < 1e-12


# the RFC 3261 copy instants after copy 0 with T1 = 1/2, T2 = 1, Timer B = F = 8 s (written out: no code of the package)
_INVITE = [F(1, 2), F(3, 2), F(7, 2), F(15, 2)]
_NON_INVITE = [F(1, 2)] + [F(2 * k + 3, 2) for k in range(7)]  # intervals 1/2, 1, 1, ... (capped at T2 = 1)


def _closed_map(lam, mu, r1, r2):
    """lambda_1 E_1[copies] + lambda_2 E_2[copies] of M/M/1 without control: p = 0, P(R > t) = e^{-(mu - lambda) t},
    E_i = 1 + sum_k P(R > tau_k) over the flow's own instants."""
    def tail(t):
        return mpmath.exp(-(mu - lam) * mpmath.mpf(t.numerator) / t.denominator)

    return (r1 * (1 + mpmath.fsum(tail(t) for t in _INVITE)), r2 * (1 + mpmath.fsum(tail(t) for t in _NON_INVITE)))


# 2.2 s (the fixed points at 30 digits, findroot at 50): the full suite. loop sibling:
# test_sip_flow_laws.py::test_mh2_fixed_point_in_float64_against_the_closed_form (two flows' fixed point against
# the closed-form map) and test_sip_flow_laws.py::test_mh2_copies_per_flow_at_a_given_rate_against_the_closed_form
# (each flow's E[copies] at D digits)
@pytest.mark.slow
def test_mm1_two_flow_fixed_points_at_30_digits_against_the_closed_form_map():
    """M/M/1 (mu = 10), lambda_1 = 3 INVITE, lambda_2 = 2 non-INVITE with T2 = 1 (the schedules differ from the third
    copy on): both fixed points below capacity (stable, unstable) and each flow's E[copies] at --digits 30 agree
    with findroot of the closed form at 50 digits to 1e-25 (the engine's residual is 1e-30; its tails come from an
    inversion at 35 digits); the third is the saturated server, where every transaction sends all its copies."""
    m = Sip(rate=3, rate_non_invite=2, service=Exponential(F(1, 10)), t2=1, timeout=8, scan_points=64)
    assert len(m.flow_copy_times()) == len(_NON_INVITE) + 1
    r = m.evaluate(30)
    assert [s["stable"] for s in r.solutions] == [True, False, True]
    assert r.solutions[2]["offered_rate"] == 3 * (len(_INVITE) + 1) + 2 * (len(_NON_INVITE) + 1)
    with mpmath.workdps(50):
        mu, tol = mpmath.mpf(10), mpmath.mpf(10) ** -25
        for s in r.solutions[:2]:
            lam = mpmath.findroot(lambda x: sum(_closed_map(x, mu, 3, 2)) - x, mpmath.mpf(float(s["offered_rate"])))
            g1, g2 = _closed_map(lam, mu, 3, 2)
            assert abs(mpmath.mpf(s["offered_rate"]) - lam) / lam < tol
            assert abs(mpmath.mpf(s["flows"]["invite"]["mean_copies"]) - g1 / 3) < tol
            assert abs(mpmath.mpf(s["flows"]["non-invite"]["mean_copies"]) - g2 / 2) < tol
            assert abs(mpmath.mpf(s["mean_copies"]) - (g1 + g2) / 5) < tol
            assert g2 / 2 - g1 / 3 > mpmath.mpf(10) ** -6  # the flows' schedules differ visibly at 25 digits
        assert r.mean_copies == r.solutions[0]["mean_copies"]


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_keys_of_two_flows_and_a_negative_rate(capsys):
    base = ["eval", "sip-retransmission", "--rate", "9", "--service", "exp:mean=0.1", "--control", "503",
            "--thresholds", "3,6", "--timeout", "8", "--scan-points", "16", "--json"]
    code, out, _ = _cli(base, capsys)
    assert code == 0
    one = json.loads(out)["measures"]
    assert list(one) == ["offered_rate", "mean_copies", "duplicate_ratio", "goodput", "timeout_probability",
                         "reject_probability", "utilization", "response_tail", "solutions", "flows"]
    assert list(one["flows"]) == ["invite"] and all(one["flows"]["invite"][k] == one[k] for k in FLOW_KEYS)
    code, out, _ = _cli(base + ["--rate-non-invite", "2"], capsys)
    assert code == 0
    doc = json.loads(out)["measures"]
    assert list(doc) == list(one) and list(doc["flows"]) == ["invite", "non-invite"]
    assert all(set(v) == FLOW_KEYS for v in doc["flows"].values()) and set(doc["solutions"][0]["flows"]) == {
        "invite", "non-invite"}
    flows = doc["flows"]
    assert abs(doc["goodput"] - flows["invite"]["goodput"] - flows["non-invite"]["goodput"]) < 1e-12
    assert doc["offered_rate"] > one["offered_rate"] and doc["reject_probability"] > one["reject_probability"]
    code, out, err = _cli(base + ["--rate-non-invite", "-1"], capsys)
    assert code == 2 and "--rate-non-invite" in err and len(err.strip().splitlines()) == 1, err


def test_two_flows_with_one_schedule_are_the_one_flow_model_at_the_total_rate():
    """Timer B = 8 s, T2 = 4 s: both schedules are 0, 0.5, 1.5, 3.5, 7.5, so the two-flow model (6/s INVITE + 3/s
    non-INVITE, under 503) must be the one-flow model at 9/s (the one-flow path of the map),
    to float64 rounding, in every solution; its flows split the goodput 2 : 1."""
    common = dict(service=Exponential(F(1, 10)), control="503", thresholds=(3, 6), timeout=8, scan_points=16)
    two = Sip(rate=6, rate_non_invite=3, **common).evaluate()
    one = Sip(rate=9, **common).evaluate()
    assert len(two.solutions) == len(one.solutions) >= 1
    for a, b in zip(two.solutions, one.solutions):
        for key in ("offered_rate", "mean_copies", "goodput", "timeout_probability", "reject_probability",
                    "utilization"):
            assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12), key
    assert two.reject_probability > 0.01
    assert two.flows["invite"]["goodput"] == pytest.approx(2 * two.flows["non-invite"]["goodput"], rel=1e-12)
