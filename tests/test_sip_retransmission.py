"""sip-retransmission (issue 17): the fixed point lambda = lambda_0 E[copies](lambda) against independent computations.

Every reference here is computed in the test from the model's definition, sharing no code with the engine:
the M/M/1/K law in closed form, the contract's hysteresis chain solved by mpmath's LU at 50 digits, the
M/M/1 sojourn tail exp(-(mu - lambda) t) and the Erlang tails by mpmath's incomplete gamma function.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from qderive.derivations.cli import main
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Deterministic, Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip


def _erlang_tail(k, mu, t):
    """P(Erlang(k, mu) > t) by the regularized upper incomplete gamma function."""
    return mpmath.gammainc(k, mpmath.mpf(mu) * t, mpmath.inf, regularized=True)


def _contract_chain(lam, mu, L, H):
    """pi of the contract's hysteresis (an arrival finding N >= H -> overload, refused; overload refuses;
    a departure leaving L -> normal), written from the rule: states ('n', n) n = 0..H, ('o', n) n = L+1..H,
    balance equations solved by LU in mpmath (the current precision)."""
    states = [("n", n) for n in range(H + 1)] + [("o", n) for n in range(L + 1, H + 1)]
    index = {s: i for i, s in enumerate(states)}
    Q = mpmath.zeros(len(states))

    def add(a, b, r):
        Q[index[a], index[b]] += r
        Q[index[a], index[a]] -= r

    for n in range(H + 1):
        add(("n", n), ("n", n + 1) if n < H else ("o", H), lam)
        if n:
            add(("n", n), ("n", n - 1), mu)
    for n in range(L + 1, H + 1):
        add(("o", n), ("o", n - 1) if n - 1 > L else ("n", L), mu)
    A = Q.T
    for j in range(len(states)):
        A[len(states) - 1, j] = 1
    b = mpmath.zeros(len(states), 1)
    b[len(states) - 1] = 1
    x = mpmath.lu_solve(A, b)
    return {s: x[i] for s, i in index.items()}


def _ignore_mean_copies(lam, lam_mu, L, H, taus):
    """E[copies] of the ignore control from the chain above and the first-admitted-copy law:
    sent_k = p^k + sum_{j<k} p^j (1 - p) F(tau_k - tau_j), F the Erlang mixture of an admitted copy."""
    pi = _contract_chain(lam, lam_mu, L, H)
    admitted = [pi[("n", n)] for n in range(H)]
    a = mpmath.fsum(admitted)
    p = 1 - a

    def Ft(t):
        return mpmath.fsum(w / a * _erlang_tail(n + 1, lam_mu, t) for n, w in enumerate(admitted))

    total = mpmath.mpf(1)
    for k in range(1, len(taus)):
        total += p**k + mpmath.fsum(p**j * (1 - p) * Ft(taus[k] - taus[j]) for j in range(k))
    return total


def test_without_retransmissions_the_model_is_the_base_queue():
    """timeout <= T1: one copy per transaction; goodput = lambda_0 (1 - loss) P(R <= timeout) with the M/M/1/K
    loss (1 - rho) rho^K / (1 - rho^(K+1)) and the admitted sojourn an Erlang mixture (closed forms here)."""
    K, lam, mu, timeout = 5, F(50), F(100), F(1, 20)
    m = Sip(rate=lam, service=Exponential(1 / mu), capacity=K, timeout=timeout, response_tail=(F(1, 50),))
    r = m.evaluate()
    rho = mpmath.mpf(50) / 100
    pk = [(1 - rho) * rho**n / (1 - rho ** (K + 1)) for n in range(K + 1)]
    loss = pk[K]
    tail = mpmath.fsum(pk[n] / (1 - loss) * _erlang_tail(n + 1, float(mu), float(timeout)) for n in range(K))
    assert r.mean_copies == 1 and r.offered_rate == float(lam) and len(r.solutions) == 1
    # float64 inversion: absolute error ~1e-12 on the tail (the note), so 1e-9 relative on O(1) measures
    assert abs(r.goodput - float(lam * (1 - loss) * (1 - tail))) <= 1e-9 * float(lam)
    assert abs(r.timeout_probability - float(loss + (1 - loss) * tail)) <= 1e-10
    t2 = mpmath.fsum(pk[n] / (1 - loss) * _erlang_tail(n + 1, float(mu), 0.02) for n in range(K))
    assert abs(r.response_tail["0.02"] - float(loss + (1 - loss) * t2)) <= 1e-10
    # the ignore control with thresholds (2, 4): the contract's chain, solved here by LU
    m2 = Sip(rate=lam, service=Exponential(1 / mu), control="ignore", thresholds=(2, 4), timeout=timeout)
    r2 = m2.evaluate()
    with mpmath.workdps(30):
        pi = _contract_chain(mpmath.mpf(50), mpmath.mpf(100), 2, 4)
        p = 1 - mpmath.fsum(pi[("n", n)] for n in range(4))
    assert abs(r2.goodput / 50 - (1 - r2.timeout_probability)) < 1e-12
    assert r2.timeout_probability >= float(p) - 1e-12 and r2.reject_probability == 0
    assert abs(r2.utilization - float(1 - pi[("n", 0)])) < 1e-12


def _mm1_copies(lam0, mu, taus, lam):
    """lambda_0 E[copies](lambda) for M/M/1: F(t) = exp(-(mu - lambda) t), every copy admitted."""
    lam = np.asarray(lam, dtype=float)
    inside = lam < mu
    total = np.ones_like(lam)
    for t in taus[1:]:
        total = total + np.where(inside, np.exp(-(mu - np.minimum(lam, mu)) * t), 1.0)
    return lam0 * total


def test_mm1_fixed_points_bistability_and_copies_against_the_direct_sum():
    """lambda_0 = 90, mu = 100, INVITE timers: the map crosses the diagonal three times (found by a fine scan of
    the closed form here); the engine finds the same three fixed points, their stability and E[copies]."""
    lam0, mu = 90.0, 100.0
    m = Sip(rate=90, service=Exponential(F(1, 100)))
    r = m.evaluate()
    taus = [float(t) for t in m.copy_times()]
    grid = np.linspace(lam0, lam0 * len(taus), 200_001)
    res = _mm1_copies(lam0, mu, taus, grid) - grid
    crossings = np.flatnonzero(np.sign(res[:-1]) * np.sign(res[1:]) < 0)
    roots = []
    for i in crossings:
        a, b = grid[i], grid[i + 1]
        for _ in range(80):
            c = (a + b) / 2
            if (_mm1_copies(lam0, mu, taus, c) - c > 0) == (_mm1_copies(lam0, mu, taus, a) - a > 0):
                a = c
            else:
                b = c
        roots.append((a + b) / 2)
    if res[-1] == 0:
        roots.append(grid[-1])
    assert len(roots) == 3
    got = [s["offered_rate"] for s in r.solutions]
    assert len(got) == 3
    for x, y in zip(got, roots):
        # float64 Euler tails carry absolute errors up to ~3e-10 (measured at t = 15.5 s), ~21 of them in
        # E[copies]: a few 1e-9 on g, divided by |1 - g'| >= 0.5 here
        assert abs(x - y) <= 1e-7 * y
    for s, x in zip(r.solutions, roots):
        h = 1e-6 * x
        slope = (_mm1_copies(lam0, mu, taus, min(x + h, lam0 * 7)) - _mm1_copies(lam0, mu, taus, x - h)) / (
            min(x + h, lam0 * 7) - x + h)
        assert s["stable"] == bool(slope < 1)
        expected = _mm1_copies(lam0, mu, taus, s["offered_rate"]) / lam0
        assert abs(s["mean_copies"] - expected) <= 1e-8 * expected
    assert [s["stable"] for s in r.solutions] == [True, False, True]
    assert r.offered_rate == r.solutions[0]["offered_rate"] and r.solutions[2]["goodput"] == 0


def test_fixed_point_residual_at_30_digits():
    """--digits 30 with the ignore control: each reported fixed point satisfies lambda = lambda_0 E[copies] to 1e-25
    with E[copies] recomputed here at 50 digits from the chain (LU) and the Erlang tails (incomplete gamma)."""
    m = Sip(rate=F(9), service=Exponential(F(1, 10)), control="ignore", thresholds=(3, 6), timeout=F(8),
            scan_points=24)
    r = m.evaluate(30)
    taus = [mpmath.mpf(t.numerator) / t.denominator for t in m.copy_times()]
    assert r.solutions
    with mpmath.workdps(50):
        for s in r.solutions:
            lam = mpmath.mpf(s["offered_rate"])
            g = 9 * _ignore_mean_copies(lam, mpmath.mpf(10), 3, 6, taus)
            assert abs(g - lam) / lam < mpmath.mpf(10) ** -25, (s["offered_rate"], g)
            assert abs(mpmath.mpf(s["mean_copies"]) - g / 9) < mpmath.mpf(10) ** -25


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, option", [
    (["--control", "ignore"], "--thresholds"),
    (["--control", "503", "--thresholds", "5,3"], "--thresholds"),
    (["--capacity", "4", "--control", "ignore", "--thresholds", "2,5"], "--thresholds"),
    (["--duplicate-cost", "0"], "--duplicate-cost"),
    (["--thresholds", "1,2"], "--thresholds"),
    (["--method", "non-invite", "--t1", "0.001", "--t2", "0.001", "--timeout", "32"], "--timeout"),
    (["--rate", "-1"], "--rate"),
])
def test_bad_input_names_the_option(argv, option, capsys):
    base = ["eval", "sip-retransmission", "--rate", "5", "--service", "exp:mean=0.1"]
    args = base + argv
    if "--rate" in argv:
        args = ["eval", "sip-retransmission", "--service", "exp:mean=0.1"] + argv
    code, out, err = _cli(args, capsys)
    assert code == 2 and option in err and len(err.strip().splitlines()) == 1, err


def test_control_needs_exponential_service_and_eval_json_keys(capsys):
    with pytest.raises(ParameterError, match="service"):
        Sip(rate=5, service=Deterministic(F(1, 10)), control="ignore", thresholds=(1, 3)).evaluate()
    code, out, _ = _cli(["eval", "sip-retransmission", "--rate", "9", "--service", "exp:mean=0.1", "--control", "503",
                         "--thresholds", "3,6", "--timeout", "8", "--scan-points", "16", "--response-tail", "1,9",
                         "--json"], capsys)
    assert code == 0
    doc = json.loads(out)["measures"]
    assert list(doc)[:9] == ["offered_rate", "mean_copies", "duplicate_ratio", "goodput", "timeout_probability",
                             "reject_probability", "utilization", "response_tail", "solutions"]
    assert set(doc["response_tail"]) == {"1", "9"} and doc["reject_probability"] > 0
    s = doc["solutions"][0]
    # 503: a rejected or timed-out transaction is unanswered, and nothing is answered after the timeout
    assert abs(doc["response_tail"]["9"] - (s["timeout_probability"] + s["reject_probability"])) < 1e-15
    assert abs(doc["goodput"] - 9 * (1 - doc["timeout_probability"] - doc["reject_probability"])) < 1e-12
