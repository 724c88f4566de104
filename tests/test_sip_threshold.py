"""sip-retransmission with ``--control threshold``: seed 001's two-flow server (model ``two-flow``) fed by copies.

The reference shares no code with the engine: a CTMC of seed 001's rule on (n, mode) written here (FIFO with one
service rate for both classes: admissions depend on n and the mode only), solved by mpmath's LU at 50 digits (not
GTH, not the engine's state space of class sequences); the refusal probability of class c by PASTA, and, FIFO with
one rate, the sojourn of an admitted copy finding n is Erlang(n + 1, mu) (its tail a finite Poisson sum).
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

from qderive.derivations.cli import main
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Erlang, Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

L, H = 2, 4


def _model(**kw):
    kw.setdefault("service", Exponential(F(1, 10)))
    kw.setdefault("control", "threshold")
    kw.setdefault("thresholds", (L, H))
    return Sip(rate=kw.pop("rate", 3), rate_non_invite=kw.pop("rate_non_invite", 4), scan_points=8, **kw)


def _seed001_chain(lam1, lam2, mu, low, high):
    """pi over the states (n, mode) of seed 001's rule (module docstring of qderive.symbolic.models.two_flow,
    R = H + 1 not binding) at 50 digits: mode 0 accepts both classes for n = 0..H (an accepted arrival making
    n = H + 1 switches to mode 2), mode 1 (n = L..H) accepts class 2 only (a departure making n = L - 1 returns
    to mode 0), mode 2 (n = H + 1) refuses everything (a departure making n = H enters mode 1)."""
    mpmath.mp.dps = 50
    lam1, lam2, mu = (mpmath.mpf(x.numerator) / x.denominator for x in map(F, (lam1, lam2, mu)))
    states = [(n, 0) for n in range(high + 1)] + [(n, 1) for n in range(low, high + 1)] + [(high + 1, 2)]
    at = {s: i for i, s in enumerate(states)}
    Q = mpmath.zeros(len(states))

    def move(a, b, r):
        Q[at[a], at[b]] += r
        Q[at[a], at[a]] -= r

    for n, m in states:
        if m == 0:
            move((n, 0), (n + 1, 0) if n < high else (high + 1, 2), lam1 + lam2)
            if n >= 1:
                move((n, 0), (n - 1, 0), mu)
        elif m == 1:
            move((n, 1), (n + 1, 1) if n < high else (high + 1, 2), lam2)
            move((n, 1), (n - 1, 1) if n - 1 >= low else (n - 1, 0), mu)
        else:
            move((n, 2), (high, 1), mu)
    A = Q.T
    for j in range(len(states)):  # replace one balance equation by the normalisation
        A[0, j] = 1
    b = mpmath.zeros(len(states), 1)
    b[0] = 1
    pi = mpmath.lu_solve(A, b)
    return states, [pi[i] for i in range(len(states))], mu


@pytest.fixture(scope="module")
def one_copy():
    """One copy per transaction (T1 = 10 s, timeout 1 s: tau_1 = 10 >= timeout): the fixed point is lambda =
    lambda_1 + lambda_2 and the server is TwoFlowModel(3, 4, 10, 10, 2, 4, 5); at 30 digits."""
    return _model(t1=10, timeout=1).evaluate(digits=30)


def test_one_copy_refusals_and_timeouts_against_the_seed001_chain(one_copy):
    """p_c = B_c (PASTA): B_1 = P(mode 1 or 2), B_2 = P(mode 2); goodput_c = lambda_c (1 - B_c - P_c(timeout)) and
    P_c(timeout) = sum over the states admitting c of pi(x) P(Erlang(n + 1, mu) > T). The engine runs at 30 digits
    (its tails by uniformization, relative accuracy) and the reference at 50: tolerance 1e-25 relative (the 30
    digits with room for the last ones' rounding)."""
    states, pi, mu = _seed001_chain(3, 4, 10, L, H)
    T = mpmath.mpf(1)

    def tail(n):  # P(Erlang(n + 1, mu) > T)
        return mpmath.fsum(mpmath.exp(-mu * T) * (mu * T) ** k / mpmath.factorial(k) for k in range(n + 1))

    admits = {"invite": lambda m: m == 0, "non-invite": lambda m: m < 2}
    for name, lam in (("invite", 3), ("non-invite", 4)):
        B = mpmath.fsum(p for (n, m), p in zip(states, pi) if not admits[name](m))
        tout = mpmath.fsum(p * tail(n) for (n, m), p in zip(states, pi) if admits[name](m))
        f = one_copy.flows[name]
        assert abs(f["reject_probability"] - B) <= 1e-25 * B
        assert abs(f["timeout_probability"] - tout) <= 1e-25 * tout
        assert abs(f["goodput"] - lam * (1 - B - tout)) <= 1e-25 * lam
        assert f["mean_copies"] == 1
    # the totals: the transaction-weighted means of the flows
    total = (3 * one_copy.flows["invite"]["reject_probability"] + 4 * one_copy.flows["non-invite"][
        "reject_probability"]) / 7
    assert abs(one_copy.reject_probability - total) <= 1e-28
    assert abs(one_copy.offered_rate - 7) <= 1e-28


@pytest.fixture(scope="module")
def retransmitting():
    """Retransmissions on (T1 = 0.5 s, T2 = 1 s, timeout 2 s: copies at 0, 0.5, 1.5 s in both flows), mean service
    1 s, 0.45 + 0.45 transactions per second, thresholds (1, 3): fifo and priority (seed 001's algorithm 2),
    float64."""
    kw = dict(rate=F(45, 100), rate_non_invite=F(45, 100), service=Exponential(1), t1=F(1, 2), t2=1, timeout=2,
              thresholds=(1, 3))
    return _model(**kw).evaluate(), _model(discipline="priority", **kw).evaluate()


@pytest.mark.slow  # 1.5 s; the loop keeps the threshold server against the seed-001 chain (test_one_copy_...)
def test_retransmissions_fixed_point_fifo_and_priority(retransmitting):
    """A fixed point exists (residual |lambda - sum_i lambda_i E_i[copies]| / lambda below 1e-12: the scan's refinement
    reaches 1e-13 relative in lambda, the residual's slope is below 1), lambda > lambda_1 + lambda_2 (copies are
    retransmitted), each flow's P(reject) + P(timeout) + P(answered) = 1 (goodput / lambda_i: float64, 1e-12),
    and seed 001's priority in modes 1, 2 changes the flows (non-INVITE answered more often: more than 1e-4 apart,
    far above float64 and the 1e-9 tails)."""
    for r in retransmitting:
        sol = r.solutions[0]
        assert sol["residual"] < 1e-12 and sol["offered_rate"] > 0.9
        for name, f in r.flows.items():
            total = f["reject_probability"] + f["timeout_probability"] + f["goodput"] / 0.45
            assert abs(total - 1) < 1e-12
            assert 0 < f["reject_probability"] < 1 and f["mean_copies"] > 1
        # the copy-weighted mean of the flows' copy refusal probabilities lies between them
        assert 0 < sol["copy_refusal_probability"] < 1
    fifo, prio = retransmitting
    assert prio.flows["non-invite"]["goodput"] > fifo.flows["non-invite"]["goodput"] + 1e-4
    assert abs(prio.offered_rate - fifo.offered_rate) > 1e-4


@pytest.mark.parametrize("discipline", ["fifo", "priority"])
def test_server_refusals_at_given_class_rates(discipline):
    """At copy rate lambda = 2 with offered INVITE share w = 1/3 the server's p_c are B_c of seed 001's chain at
    (w lambda, (1 - w) lambda): with one service rate the count and the mode do not depend on the order of service,
    so priority (algorithm 2) refuses exactly as FIFO does (float64 GTH against the 50-digit LU: 1e-13 relative),
    and the copy-weighted p is w p_1 + (1 - w) p_2."""
    from qderive.numeric.engines.sip import server

    m = _model(rate=1, rate_non_invite=2, service=Exponential(1), thresholds=(1, 3), discipline=discipline)
    s = server(m, F(2), share=F(1, 3))
    (p1, q1), (p2, q2) = s.refused_flows(None)[0]
    p, q, _ = s.refused(None)
    states, pi, _ = _seed001_chain(F(2, 3), F(4, 3), 1, 1, 3)
    B1 = mpmath.fsum(x for (n, mode), x in zip(states, pi) if mode > 0)
    B2 = mpmath.fsum(x for (n, mode), x in zip(states, pi) if mode == 2)
    for got, want in ((p1, B1), (p2, B2), (q1, 1 - B1), (q2, 1 - B2), (p, (B1 + 2 * B2) / 3)):
        assert abs(got - want) <= 1e-13 * want


def test_method_non_invite_orders_the_flows(one_copy):
    """--method non-invite makes flow 1 the non-INVITE one: the same server with the flows swapped (float64 against
    the 30-digit run: 1e-13 relative)."""
    swapped = _model(rate=4, rate_non_invite=3, method="non-invite", t1=10, timeout=1).evaluate()
    for name in ("invite", "non-invite"):
        for key in ("reject_probability", "timeout_probability", "goodput"):
            want = one_copy.flows[name][key]
            assert abs(swapped.flows[name][key] - want) <= 1e-13 * want


@pytest.mark.parametrize("kw, option", [
    (dict(rate_non_invite=0), "rate_non_invite"),
    (dict(thresholds=(0, 4)), "thresholds"),
    (dict(thresholds=(4, 4)), "thresholds"),
    (dict(thresholds=None), "thresholds"),
])
def test_bad_input_names_the_option(kw, option):
    """The model's domain rules of --control threshold (two flows, 1 <= L < H), at construction."""
    with pytest.raises(ParameterError) as err:
        _model(**kw)
    assert err.value.name == option


@pytest.mark.parametrize("kw, option", [
    (dict(service=Erlang(2, F(1, 10))), "--service"),
    (dict(service_non_invite=Erlang(2, F(1, 10))), "--service-non-invite"),
    (dict(vacation=Exponential(F(1, 10))), "--vacation"),
    (dict(duplicate_cost=F(1, 2)), "--duplicate-cost"),
])
def test_what_the_engine_does_not_compute_names_the_option(kw, option):
    """What the two-flow chain does not compute (non-exponential laws, a duplicate cost, vacations) is the engine's
    declaration (``supports``, the threshold route's), asked before any work; ``solve`` raises it."""
    from qderive.numeric.engines.sip import solve, supports

    m = _model(**kw)
    refusal = supports(m)
    assert refusal is not None and refusal.option == option, refusal
    with pytest.raises(ParameterError) as err:
        solve(m)
    assert err.value.name == option


def test_simulator_runs_threshold(capsys):
    """qderive simulate runs seed 001's three-mode server (tests/test_simulate_sip_threshold.py checks its values
    against the engine): exit 0, the contract's JSON keys, probabilities in [0, 1]."""
    import json

    code = main(["simulate", "sip-retransmission", "--rate", "3", "--rate-non-invite", "4", "--service",
                 "exp:mean=0.1", "--control", "threshold", "--thresholds", "2,4", "--timeout", "1", "--customers",
                 "500", "--replications", "2", "--seed", "1", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)["measures"]
    assert 0 < out["reject_probability"]["estimate"] < 1 and out["mean_copies"]["estimate"] >= 1
