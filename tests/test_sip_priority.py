"""sip-retransmission with priority to non-INVITE copies (``--discipline priority``, seed 001's algorithm 2).

The references share no code with the engine: Cobham's mean waits of the M/G/1 non-preemptive priority queue (and
the M/G/1 queue with multiple vacations for the high class when the low one saturates) against the transforms'
derivatives at 80 digits; a truncated CTMC of the M/M/1 two-class priority queue written here (numpy solve, tails by
scipy's expm_multiply) for the per-class sojourn tails; a direct CTMC of the controlled priority queue written here
(numpy solve, not GTH) for the refusal probability and, by Little's law per class, the mean sojourns of the
engine's tagged chains.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from qderive.derivations.cli import main
from qderive.numeric.backend import mp_context
from qderive.numeric.engines.sip import FixedPointMap, server
from qderive.numeric.engines.sip.priority import mg1_priority_laws
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, HyperExponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip


def _model(**kw):
    kw.setdefault("service", Exponential(F(1, 10)))
    kw.setdefault("service_non_invite", Exponential(F(1, 20)))
    kw.setdefault("timeout", 4)
    return Sip(rate=kw.pop("rate", 2), rate_non_invite=kw.pop("rate_non_invite", 3), t1=F(1, 2), t2=1, scan_points=8,
               discipline="priority", **kw)


def _mean(law, ctx, h):
    """E[T] = -Im T(i h) / h + O(h^2) (the complex step: no subtraction of nearly equal numbers)."""
    v = law.transform(ctx)(np.array([mpmath.mpc(0, h)], dtype=object))[0]
    return -mpmath.im(v) / h


@pytest.mark.parametrize("rate_lo", [F(5), F(20)])
def test_cobham_mean_sojourns_at_30_digits(rate_lo):
    """Erlang-2 high class, hyperexponential low class; rate_lo = 5: rho = 0.2 + 0.5 (Cobham: W_H = R0/(1 - rho_H),
    W_L = R0/((1 - rho_H)(1 - rho))); rate_lo = 20: rho = 2.2 > 1, the low class saturated (no law) and the high
    class the M/G/1 queue with multiple vacations of the low law (W_H = Lambda_H E[B_H^2] / (2 (1 - rho_H)) +
    E[V^2] / (2 E[V])). The transforms at 80 digits, complex step h = 1e-20: error O(h^2) + 1e-80 / h^2 (the
    transform's O(h) numerator and denominator lose 20 digits, the step 20 more), below 1e-30."""
    Bh, Bl = Erlang(2, F(1, 20)), HyperExponential((F(1, 4), F(3, 4)), (F(1, 4), F(1, 20)))
    lh = F(4)
    hi, lo, util = mg1_priority_laws(Bh, Bl, lh, rate_lo)
    ctx = mp_context(80)
    with ctx:
        h = mpmath.mpf(10) ** -20
        m = [mpmath.mpf(x.numerator) / x.denominator for x in (Bh.moment(1), Bh.moment(2), Bl.moment(1),
                                                                Bl.moment(2))]
        rho_h, rho = lh * m[0], lh * m[0] + rate_lo * m[2]
        if rho < 1:
            R0 = (lh * m[1] + rate_lo * m[3]) / 2
            assert abs(_mean(hi, ctx, h) - (R0 / (1 - rho_h) + m[0])) < 1e-30
            assert abs(_mean(lo, ctx, h) - (R0 / ((1 - rho_h) * (1 - rho)) + m[2])) < 1e-30
            assert util == F(7, 10)
        else:
            assert lo is None and util == 1
            want = lh * m[1] / (2 * (1 - rho_h)) + m[3] / (2 * m[2]) + m[0]
            assert abs(_mean(hi, ctx, h) - want) < 1e-30


def test_fifo_unchanged_and_the_conservation_law():
    """One exponential law (mean 0.1 s), lambda = 5: FIFO keeps its path (no inner unknown) and its M/M/1 sojourn
    tail e^{-(mu - lambda) t} (float64 inversion: 1e-9 absolute); priority with the same law changes the order,
    not the count N, so the copy-weighted mean sojourn is FIFO's 1/(mu - lambda) (Kleinrock's conservation law),
    each class's mean by the complex step at 80 digits (h = 1e-20: the transform's O(h) numerator and denominator
    cost 20 digits, the step another 20; error O(h^2) + 1e-80 / h^2, below 1e-30)."""
    from dataclasses import replace

    prio = _model(service_non_invite=None)
    fifo = replace(prio, discipline="fifo")
    assert FixedPointMap(fifo).inner is None and FixedPointMap(prio).inner == "share"
    s = FixedPointMap(fifo).server(F(5))
    got = s.tails([F(1, 10), F(1, 2)], None)[0]
    assert max(abs(g - np.exp(-5 * t)) for g, t in zip(got, (0.1, 0.5))) < 1e-9
    w = F(2, 5)
    laws = server(prio, F(5), share=w).flow_laws
    ctx = mp_context(80)
    with ctx:
        h = mpmath.mpf(10) ** -20
        lo, hi = (_mean(law, ctx, h) for law in laws)
        assert abs(lo * mpmath.mpf(2) / 5 + hi * mpmath.mpf(3) / 5 - mpmath.mpf(1) / 5) < 1e-30
        assert lo - hi > 0.01


# M/M/1 with two classes: INVITE (low) rate 2, mean 1/10; non-INVITE (high) rate 3, mean 1/20; rho = 0.35
LAM, SHARE, MU_LO, MU_HI, TIMES = F(5), F(2, 5), 10.0, 20.0, (0.05, 0.2, 0.5)


def _stationary(Q):
    """pi Q = 0, sum pi = 1 (the balance equations with the last replaced by the normalisation; numpy solve)."""
    np.fill_diagonal(Q, -Q.sum(axis=1))
    A = Q.T.copy()
    A[-1] = 1.0
    return np.linalg.solve(A, np.r_[np.zeros(len(Q) - 1), 1.0])


def _mm1_reference():
    """(P(T_H > t), P(T_L > t)) of the truncated CTMC (N <= 22 and at most 22 copies ahead of a tagged one:
    P(N > 22) ~ 0.35^22 ~ 1e-10)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.linalg import expm_multiply

    lh, ll = float(LAM * (1 - SHARE)), float(LAM * SHARE)
    top = 22
    states = [(0, 0, -1)] + [(h, n - h, c) for n in range(1, top + 1) for h in range(n + 1) for c in (0, 1)
                             if (h if c == 0 else n - h) >= 1]
    idx = {x: i for i, x in enumerate(states)}
    Q = np.zeros((len(states), len(states)))

    def add(x, y, r):
        if y in idx:
            Q[idx[x], idx[y]] += r

    for (h, low, c) in states:
        if c == -1:
            add((0, 0, -1), (1, 0, 0), lh), add((0, 0, -1), (0, 1, 1), ll)
            continue
        add((h, low, c), (h + 1, low, c), lh), add((h, low, c), (h, low + 1, c), ll)
        rh, rl = h - (c == 0), low - (c == 1)
        nxt = (0, 0, -1) if rh + rl == 0 else (rh, rl, 0 if rh else 1)
        add((h, low, c), nxt, MU_HI if c == 0 else MU_LO)
    pi = _stationary(Q)
    # tagged high copy: (k high ahead, class in service) or in service; tagged low copy: (h, a, class) or in service
    out = []
    for tagged in ("high", "low"):
        if tagged == "high":
            tag = ["svc"] + [(k, c) for k in range(top) for c in (0, 1)]
        else:
            tag = ["svc"] + [(h, a, c) for h in range(top) for a in range(top - h) for c in (0, 1)]
        where = {x: i for i, x in enumerate(tag)}
        T = np.zeros((len(tag), len(tag)))
        T[0, 0] = -(MU_HI if tagged == "high" else MU_LO)
        for x in tag[1:]:
            i = where[x]
            c = x[-1]
            mu = MU_HI if c == 0 else MU_LO
            T[i, i] -= mu
            if tagged == "high":
                k = x[0]
                T[i, where[(k - 1, 0)] if k else 0] += mu
            else:
                h, a, _ = x
                y = (h - 1, a, 0) if h else ((0, a - 1, 1) if a else "svc")
                T[i, where[y]] += mu
                if (h + 1, a, c) in where:
                    T[i, where[(h + 1, a, c)]] += lh
                T[i, i] -= lh
        alpha = np.zeros(len(tag))
        for (h, low, c), p in zip(states, pi):
            if c == -1:
                alpha[0] += p
            elif tagged == "high":
                if (h - (c == 0), c) in where:
                    alpha[where[(h - (c == 0), c)]] += p
            elif (h - (c == 0), low - (c == 1), c) in where:
                alpha[where[(h - (c == 0), low - (c == 1), c)]] += p
        G = csr_matrix(T)
        out.append([float(alpha @ expm_multiply(G * t, np.ones(len(tag)))) for t in TIMES])
    return out


def test_mm1_priority_tails_per_class_against_a_direct_ctmc():
    """Route (a) (float64 Euler inversion: absolute error up to about 1e-9) against the truncated CTMC's tails
    (expm_multiply, about 1e-13): to 1e-8."""
    s = server(_model(), LAM, share=SHARE)
    ref_hi, ref_lo = _mm1_reference()
    got_lo, got_hi = (s.tails([F(t).limit_denominator(100) for t in TIMES], None, law=law)[0] for law in s.flow_laws)
    assert max(abs(a - b) for a, b in zip(got_hi, ref_hi)) < 1e-8
    assert max(abs(a - b) for a, b in zip(got_lo, ref_lo)) < 1e-8
    assert min(b - a for a, b in zip(ref_hi, ref_lo)) > 0.01  # the classes differ


def test_route_b_tends_to_route_a_for_a_large_threshold_and_float64_agrees_with_digits():
    """--control ignore with (L, H) = (19, 20) at rho = 0.35: P(N >= 20) ~ 0.35^20 ~ 1e-9, so p and the tails of the
    chain route (uniformization, relative accuracy) match route (a)'s to 1e-7. Route (a) at 20 digits against its
    float64 path: 1e-9 (the float64 inversion's absolute error)."""
    ts = [F(1, 20), F(1, 5)]
    a = server(_model(), LAM, share=SHARE)
    b = server(_model(control="ignore", thresholds=(19, 20)), LAM, share=SHARE)
    assert b.refused(None)[0] < 1e-8
    assert abs(b.refused(None)[2] - 0.35) < 1e-8
    for la, lb in zip(a.flow_laws, b.flow_laws):
        x, y = a.tails(ts, None, law=la)[0], b.tails(ts, None, law=lb)[0]
        assert max(abs(u - v) for u, v in zip(x, y)) < 1e-7
        z = a.tails(ts, 20, law=la)[0]
        assert max(abs(u - float(v)) for u, v in zip(x, z)) < 1e-9


def _controlled_reference(L, H, lh, ll, mh, ml):
    """(p, E[n_high], E[n_low]) of the controlled priority queue, a direct CTMC over (n_high, n_low, class in
    service, overload) solved by numpy."""
    states = [(nh, nl, c, o) for nh in range(H + 1) for nl in range(H + 1 - nh) for c in (0, 1, None)
              for o in (0, 1) if (c is None) == (nh + nl == 0) and (c != 0 or nh) and (c != 1 or nl)
              and (not o or nh + nl > L)]
    idx = {x: i for i, x in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    for x in states:
        nh, nl, c, o = x
        n = nh + nl
        if not o:
            for d, r in ((0, lh), (1, ll)):
                if n == H:
                    Q[idx[x], idx[(nh, nl, c, 1)]] += r
                else:
                    y = (nh + (d == 0), nl + (d == 1), d if c is None else c, 0)
                    Q[idx[x], idx[y]] += r
        if c is not None:
            rh, rl = nh - (c == 0), nl - (c == 1)
            o2 = 0 if (not o or n - 1 == L) else 1
            y = (rh, rl, None if rh + rl == 0 else (0 if rh else 1), o2)
            Q[idx[x], idx[y]] += mh if c == 0 else ml
    pi = _stationary(Q)
    admitted = sum(p for (nh, nl, c, o), p in zip(states, pi) if not o and nh + nl < H)
    return 1 - admitted, sum(p * x[0] for x, p in zip(states, pi)), sum(p * x[1] for x, p in zip(states, pi))


def test_controlled_chain_refusal_and_little_law_per_class():
    """--control 503, (L, H) = (1, 4), INVITE rate 4 mean 1/8, non-INVITE rate 6 mean 1/20 (rho = 0.8): p against
    the direct CTMC, and each class's mean sojourn (the tagged chain's first moment, M-matrix solve) against Little's
    law E[n_c] / (Lambda_c (1 - p)): 1e-12 (two float64 solves of chains of a few dozen states); the tails in
    float64 against --digits 20."""
    lam, w = F(10), F(2, 5)
    s = server(_model(control="503", thresholds=(1, 4), service=Exponential(F(1, 8))), lam, share=w)
    p, n_hi, n_lo = _controlled_reference(1, 4, 6.0, 4.0, 20.0, 8.0)
    assert abs(s.refused(None)[0] - p) < 1e-12 and p > 0.05
    for law, n, rate in zip(s.flow_laws, (n_lo, n_hi), (4.0, 6.0)):
        assert abs(law.moment_values(1, None)[0] - n / (rate * (1 - p))) < 1e-12
        # float64 against 20 digits: uniformization keeps relative accuracy O((n + Lambda t) eps), about 1e-14 here
        x, y = s.tails([F(2)], None, law=law)[0][0], s.tails([F(2)], 20, law=law)[0][0]
        assert abs(x - float(y)) < 1e-12 * float(y)


def test_priority_helps_the_non_invite_flow_in_overload():
    """--control none, 8/s INVITE + 3/s non-INVITE of mean 0.1 s (load 1.1 of first copies), Timer B = 4 s: FIFO
    saturates (every copy unanswered, goodput 0). Priority has two fixed points: the non-INVITE flow answered (its
    copies Lambda_H = 3 E_2 at the INVITE services' vacation queue: T_H = Exp(mu - Lambda_H) + Exp(mu), the M/M/1
    sojourn plus the exponential residual vacation, P(T_H > t) = [mu e^{-(mu - Lambda) t} - (mu - Lambda)
    e^{-mu t}] / Lambda, the fixed point Lambda = 3 (1 + sum_k P(T_H > tau_k)) by mpmath.findroot at 30 digits) and
    collapsed (offered rate 8 x 4 + 3 x 5 = 47, nothing answered). The first to 1e-8 (the float64 inversion)."""
    kw = dict(rate=8, rate_non_invite=3, service_non_invite=None)
    prio, fifo = _model(**kw).evaluate(), _fifo(**kw).evaluate()
    assert fifo.flows["non-invite"]["goodput"] == 0 and fifo.goodput == 0
    with mpmath.workdps(30):
        mu = mpmath.mpf(10)

        def tail(lam, t):
            return (mu * mpmath.exp(-(mu - lam) * t) - (mu - lam) * mpmath.exp(-mu * t)) / lam

        taus = [mpmath.mpf(x) / 2 for x in (1, 3, 5, 7)]  # Timer E with T1 = 1/2, T2 = 1 before 4 s
        star = mpmath.findroot(lambda x: 3 * (1 + mpmath.fsum(tail(x, t) for t in taus)) - x, 3.3)
    first, second = prio.solutions
    assert abs(first["offered_rate"] - (32 + float(star))) < 1e-8 * 35
    assert abs(first["flows"]["non-invite"]["mean_copies"] - float(star) / 3) < 1e-8
    assert first["flows"]["invite"]["goodput"] == 0 and first["flows"]["non-invite"]["goodput"] > 2.999
    assert second["offered_rate"] == 47 and second["goodput"] == 0
    assert prio.utilization == 1


def _fifo(**kw):
    from dataclasses import replace

    return replace(_model(**kw), discipline="fifo")


def test_one_copy_per_transaction_within_the_simulated_99_percent_interval():
    """Timer B = T1 / 2 (one copy per transaction: the fixed point is exact), --control 503, (L, H) = (2, 4), INVITE
    5/s of mean 0.1 s, non-INVITE 6/s of mean 0.05 s: each flow's goodput, reject and timeout fractions (the chain
    route's p and tagged tails at T = 0.25 s) within the priority simulator's 99 % intervals (6 replications of
    200 s; the t quantile widened from the reported 95 %)."""
    from qderive.numeric.simulation.sip import simulate_sip
    from qderive.numeric.simulation.stats import student_t_quantile

    m = _model(rate=5, rate_non_invite=6, control="503", thresholds=(2, 4), timeout=F(1, 4))
    r = m.evaluate()
    sim = simulate_sip(m, horizon=200, warmup=10, replications=6, seed=7)
    widen = student_t_quantile(0.995, 5) / student_t_quantile(0.975, 5)
    for name in ("invite", "non-invite"):
        for key in ("goodput", "reject_probability", "timeout_probability"):
            est, hw = sim["flows"][name][key]
            assert abs(r.flows[name][key] - est) <= widen * hw, (name, key, r.flows[name][key], est, hw)
    assert r.flows["invite"]["timeout_probability"] > 2 * r.flows["non-invite"]["timeout_probability"]


def test_bad_inputs_and_saturation(capsys):
    """Every setting outside the two routes is refused naming an option; a saturated high class gives probabilities
    (all copies unanswered), no NaN."""
    for kw, option in ((dict(capacity=8), "--discipline"), (dict(vacation=Exponential(F(1, 100))), "--discipline"),
                       (dict(duplicate_cost=F(1, 2), control="ignore", thresholds=(1, 2)), "--duplicate-cost"),
                       (dict(service=Deterministic(F(1, 10)), service_non_invite=None), "--service"),
                       (dict(control="ignore", thresholds=(1, 3), service_non_invite=Erlang(2, F(1, 20))),
                        "--service-non-invite")):
        with pytest.raises(ParameterError) as err:
            _model(**kw).evaluate()
        assert option in str(err.value) and "priority" in str(err.value)
    with pytest.raises(BudgetError):
        _model(control="ignore", thresholds=(10, 31)).evaluate()
    with pytest.raises(ParameterError, match="second flow"):
        Sip(rate=3, service=Exponential(F(1, 10)), discipline="priority")
    r = _model(rate_non_invite=30, rate=1, timeout=F(1, 4)).evaluate()  # rho_H = 30 / 20 > 1: nothing answered
    assert r.goodput == 0 and all(0 <= f["timeout_probability"] <= 1 for f in r.flows.values())
    assert main(["eval", "sip-retransmission", "--rate", "3", "--rate-non-invite", "2", "--service", "exp:mean=0.1",
                 "--discipline", "priority", "--t1", "0.5", "--t2", "1", "--timeout", "0.25", "--scan-points", "8",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"]["discipline"] == "priority"
    assert set(out["measures"]["flows"]) == {"invite", "non-invite"}

