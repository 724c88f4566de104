"""sip-retransmission, --control ignore/503 with --vacation and any L < H (numeric/engines/sip/control.py, item 4).

The route under test: the embedded chain at the period ends (departures and vacation ends; a vacation is a
"service" of a phantom copy with the vacation's count sequences), p = R / (D + R), the admitted copy's sojourn by
the finite room's wait machinery with vacations over the normal-mode period starts. The references share no step
with it:

* exponential service and vacations: a CTMC on (server serving / on vacation / idle, N, mode) written here from the
  model's rule (N counts the vacation's place; normal again whenever N falls to L), solved by mpmath's LU at 40
  digits; the admitted copy's sojourn a phase-type law (the residual vacation or service, the copies ahead, its
  own service) by mpmath's expm;
* L = H - 1: the M/G/1/H route (``vacation-finite`` with its own embedded law, loss and tails) for an Erlang-2
  service and a constant vacation;
* the transaction simulator (real vacations, per-transaction timers) with one copy per transaction, where the fixed
  point is exact.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from qderive.derivations.cli import main
from qderive.numeric.engines.sip import routes as R
from qderive.numeric.engines.sip.control import ControlServer, control_embedded_chain
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Deterministic, Erlang, Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

TIMES = (F(1, 20), F(1, 5), F(1, 2))


def _ctmc(lam, mu, theta, L, H, single):
    """The model's rule as a CTMC, written here: states (kind, N, overload) with kind S (serving), V (on vacation:
    N = waiting + 1) or I (idle after a single vacation, N = 0). An arrival in normal mode is admitted below H and
    switches to overload at H; a departure leaving nobody starts a vacation (N stays 1); a vacation's end moves a
    waiting copy to the server (N - 1) or, with nobody waiting, starts another (multiple) or leaves the server idle
    (single, N = 0); the mode is normal again whenever N falls to L. The reachable states from (V, 1, normal), the
    balance equations with sum pi = 1 by LU at the current precision."""
    def moves(st):
        kind, n, o = st
        out = []
        if not o:
            out.append((lam, ("S", 1, 0) if kind == "I" else ((kind, n + 1, 0) if n < H else (kind, n, 1))))
        if kind == "S":
            out.append((mu, ("V", 1, o) if n == 1 else ("S", n - 1, 0 if n - 1 == L else o)))
        if kind == "V" and n >= 2:
            out.append((theta, ("S", n - 1, 0 if n - 1 == L else o)))
        elif kind == "V" and single:
            out.append((theta, ("I", 0, 0)))  # N falls to 0 (normal: L = 0, or the mode was normal already)
        return out

    states, todo = [("V", 1, 0)], [("V", 1, 0)]
    while todo:
        for _, b in moves(todo.pop()):
            if b not in states:
                states.append(b)
                todo.append(b)
    pos = {s: i for i, s in enumerate(states)}
    A = mpmath.zeros(len(states))
    for a in states:
        for r, b in moves(a):
            A[pos[b], pos[a]] += r
            A[pos[a], pos[a]] -= r
    for j in range(len(states)):
        A[0, j] = 1
    rhs = mpmath.zeros(len(states), 1)
    rhs[0] = 1
    x = mpmath.lu_solve(A, rhs)
    return {s: x[pos[s]] for s in states}


def _ctmc_measures(pi, mu, theta, H, ts):
    """(p, q, utilization, P(R_copy > t) for t in ts) from the CTMC: by PASTA p = P(overload or N = H), q the rest;
    the busy time; an admitted copy finding (S, n) has n + 1 exponential services to go, (V, n) the residual vacation
    and n services (n - 1 waiting, its own), (I, 0) its own service: the phases ('s', k) (k services left) and
    ('v', k) (a vacation, then k services), P(R > t) by uniformization at rate max(mu, theta), summed until the
    Poisson weights fall below 10^-(dps + 5) past the mode."""
    p = mpmath.fsum(w for (_, n, o), w in pi.items() if o or n == H)
    adm = {s: w for s, w in pi.items() if not s[2] and s[1] < H}
    q = mpmath.fsum(adm.values())
    busy = mpmath.fsum(w for s, w in pi.items() if s[0] == "S")
    alpha = {}
    for (kind, n, _), w in adm.items():
        key = ("s", 1) if kind == "I" else (("s", n + 1) if kind == "S" else ("v", n))
        alpha[key] = alpha.get(key, 0) + w / q
    rate = max(mu, theta)
    tails = []
    for t in ts:
        v, weight, k, total = dict(alpha), mpmath.exp(-rate * t), 0, mpmath.mpf(0)
        while k < 2 * rate * t or weight > mpmath.mpf(10) ** -(mpmath.mp.dps + 5):
            total += weight * mpmath.fsum(v.values())
            nxt = {}
            for (kind, j), x in v.items():  # one uniformized step: leave the phase with probability (its rate) / rate
                r = mpmath.mpf(mu if kind == "s" else theta) / rate
                nxt[kind, j] = nxt.get((kind, j), 0) + x * (1 - r)
                if kind == "v" or j > 1:
                    to = ("s", j) if kind == "v" else ("s", j - 1)
                    nxt[to] = nxt.get(to, 0) + x * r
            v, k = nxt, k + 1
            weight = weight * rate * t / k
        tails.append(total)
    return p, q, busy, tails


def _rel(a, b):
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    return abs(a - b) / abs(b)


def _mp(t):
    return mpmath.mpf(t.numerator) / t.denominator


@pytest.mark.parametrize("policy, L, H, control, tails30", [("multiple", 1, 4, "ignore", True),
                                                            ("single", 0, 3, "503", True),
                                                            ("single", 1, 5, "ignore", False),
                                                            ("multiple", 2, 5, "503", False)])
def test_exponential_against_the_ctmc(policy, L, H, control, tails30):
    """Exponential service (mean 0.1 s) and vacations (mean 0.05 s), L <= H - 2, at copy rate 8: p, q, the
    utilization and the admitted copy's sojourn tails against the CTMC at 40 digits. The engine at 30 digits within
    1e-25 relative (measured 1e-40 for p, q, utilization; 1e-36 for the tails, Euler inversion at 35 digits, in two
    cases: 0.3 s each); float64 1e-14 (p, q, utilization: measured 2e-16) and 1e-9 absolute for the tails (the
    inversion's note; measured 7e-11).
    Then the contract's measures with one copy per transaction (Timer B = T1, the fixed point is lambda_0): under
    ignore goodput = lambda_0 q (1 - F(T)) and P(timeout) = p + q F(T), under 503 P(reject) = p and P(timeout) =
    q F(T) (float64, 1e-8 absolute: the tails' inversion)."""
    lam = F(8)
    m = Sip(rate=lam, service=Exponential(F(1, 10)), control=control, thresholds=(L, H), timeout=F(1, 2),
            vacation=Exponential(F(1, 20)), vacation_policy=policy)
    s = R.server(m, lam)
    assert s.general is not None and s.general.vacation is not None
    with mpmath.workdps(40):
        ref = _ctmc_measures(_ctmc(mpmath.mpf(8), mpmath.mpf(10), mpmath.mpf(20), L, H, policy == "single"), 10,
                             20, H, [_mp(t) for t in TIMES])
        assert 0.1 < ref[0] < 0.3
        for a, b in zip(s.refused(30), ref[:3]):
            assert _rel(a, b) < 1e-25
        for a, b in zip(s.tails(TIMES, 30)[0] if tails30 else (), ref[3]):
            assert _rel(a, b) < 1e-25
    for a, b in zip(s.refused(None), ref[:3]):
        assert abs(a - b) < 1e-14
    values, notes = s.tails(TIMES, None)
    assert max(abs(a - float(b)) for a, b in zip(values, ref[3])) < 1e-9 and notes
    p, q, busy = (float(v) for v in ref[:3])
    F_T = float(ref[3][-1])  # P(R_copy > 1/2), the timeout
    r = m.evaluate()
    assert abs(float(r.goodput) - 8 * q * (1 - F_T)) < 1e-8 and abs(float(r.utilization) - busy) < 1e-12
    if control == "ignore":
        assert abs(float(r.timeout_probability) - (p + q * F_T)) < 1e-8 and float(r.reject_probability) == 0
    else:
        assert abs(float(r.reject_probability) - p) < 1e-12 and abs(float(r.timeout_probability) - q * F_T) < 1e-8


@pytest.mark.parametrize("policy", ["multiple", "single"])
def test_L_equal_H_minus_1_reduces_to_the_MG1H_route(policy):
    """L = H - 1 = 3, Erlang-2 service, a constant vacation 0.05 s: the chain with vacations (forced,
    the route GeneralControl constructed directly) against the M/G/1/H route with the vacations (vacation-finite's own embedded law, loss,
    and the phase-type service's exact sums with constant vacations for the tails) at 30 digits: 1e-25 relative
    (measured 2e-41 for p, q, utilization and 1e-61 for the tails); float64 1e-13 (measured 3e-16)."""
    lam = F(11)
    m = Sip(rate=lam, service=Erlang(2, F(1, 10)), control="ignore", thresholds=(3, 4), timeout=F(1),
            vacation=Deterministic(F(1, 20)), vacation_policy=policy)
    finite = R.server(m, lam)
    assert isinstance(finite, R.FiniteControl) and finite.general is None and finite.base is not None
    general = R.GeneralControl(m.server, lam)  # the chain with vacations, constructed directly
    assert general.general is not None
    with mpmath.workdps(40):
        for a, b in zip(finite.refused(30), general.refused(30)):
            assert _rel(b, a) < 1e-25
        for a, b in zip(finite.tails(TIMES, 30)[0], general.tails(TIMES, 30)[0]):
            assert _rel(b, a) < 1e-25
    for a, b in zip(finite.refused(None) + tuple(finite.tails(TIMES, None)[0]),
                    general.refused(None) + tuple(general.tails(TIMES, None)[0])):
        assert abs(a - b) < 1e-13


def test_no_vacation_chain_unchanged():
    """Without vacations the embedded chain is item 1's departure chain exactly: the matrix written here from the
    rule ((n, normal) -> (m + j - 1, normal) with beta_j, -> overload with T_{H-m}, m = max(n, 1); (n, overload) ->
    (n - 1)) equals the engine's entry by entry (the same float64 sums), for L <= H - 2 and L = H - 1."""
    from qderive.numeric.backend import FLOAT64
    from qderive.numeric.sequences import count_sequences

    for L, H in ((1, 5), (0, 3), (3, 4)):
        with FLOAT64:
            beta, tail, _ = count_sequences(Erlang(2, F(1, 10)).count_law(F(9)), H, FLOAT64)
        over = {n: H + n - L - 1 for n in range(L + 1, H)}
        size = H + len(over)
        ref = np.zeros((size, size))
        for n in range(H):
            m = max(n, 1)
            for j in range(H - m + 1):
                ref[n, m + j - 1] += beta[j]
            ref[n, over.get(H - 1, H - 1)] += tail[H - m]
        for n, i in over.items():
            ref[i, over.get(n - 1, n - 1)] = 1
        got = control_embedded_chain(FLOAT64, L, H, beta, tail)
        assert got.shape == ref.shape and np.array_equal(np.asarray(got, dtype=float), ref)


@pytest.mark.parametrize("policy, L, H", [("multiple", 1, 4), ("single", 0, 3), ("single", 2, 6)])
def test_refusals_against_the_mean_period(policy, L, H):
    """Erlang-2 service, a constant vacation 0.2 s (no CTMC): the copies arriving per period are admitted (one per
    service period) or refused, so D + R = lambda E[period] = lambda E[B] D + lambda E[V] (pi(vacations)) + pi(I)
    (an idle period lasts 1 / lambda on average), with D = q (D + R) the service periods; the engine's R comes from
    the count tails T + T^(2), the right-hand side from the mean lengths: equal within 1e-35 at 40 digits (rounding)."""
    from qderive.numeric.backend import mp_context
    from qderive.symbolic.models.vacation import VacationPolicy

    lam, B, V = F(11), Erlang(2, F(1, 10)), Deterministic(F(1, 5))
    s = ControlServer(lam, B, L, H, vacation=V, policy=VacationPolicy(policy))
    ctx = mp_context(40)
    pi = s.pi(ctx)
    p, q, util = s.refused(ctx)
    main = H + max(0, H - 1 - L)  # (n, normal), (n, overload); then I (single) and Vo (L = 0)
    vacations = [0] + ([main + 1] if policy == "single" and L == 0 else [])
    idle = [main] if policy == "single" else []
    with mpmath.workdps(40):
        D = mpmath.fsum(pi[i] for i in range(len(pi)) if i not in vacations)
        rhs = (D * _mp(lam * B.moment(1)) + mpmath.fsum(pi[i] for i in vacations) * _mp(lam * V.moment(1))
               + mpmath.fsum(pi[i] for i in idle))
        assert abs(D / q - rhs) < mpmath.mpf(10) ** -35 and abs(p + q - 1) < mpmath.mpf(10) ** -35
        assert abs(util - _mp(lam * B.moment(1)) * q) < mpmath.mpf(10) ** -35


_Z99 = 2.5758 / 1.9600  # the simulator's half-widths are 95 % ones (normal quantiles)


@pytest.mark.parametrize("policy, L, H, control", [("multiple", 1, 4, "503"), ("single", 0, 3, "ignore")])
def test_against_the_transaction_simulator(policy, L, H, control):
    """Erlang-2 service (mean 0.1 s), a constant vacation 0.2 s, Timer B = T1 (one copy per transaction: the fixed
    point is exact): goodput, P(timeout), P(reject) and the utilization inside the simulator's 99 % intervals
    (4 x 400 s, seeded). The single-vacation case with L = 0 checks the simulator's rule that the overload ends only
    when the vacation after the last departure ends (with the earlier rule, normal again at that departure, the
    goodput was 5.19 +- 0.02 where the model's is 4.77)."""
    from qderive.numeric.simulation.sip import simulate_sip

    m = Sip(rate=8, service=Erlang(2, F(1, 10)), control=control, thresholds=(L, H), timeout=F(1, 2),
            vacation=Deterministic(F(1, 5)), vacation_policy=policy)
    r = m.evaluate()
    sim = simulate_sip(m, horizon=400.0, warmup=20.0, replications=4, seed=4242)
    for key in ("goodput", "timeout_probability", "reject_probability", "utilization"):
        est, half = sim[key]
        assert abs(float(getattr(r, key)) - est) <= _Z99 * half + 1e-12, (key, float(getattr(r, key)), est, half)


def test_L_zero_with_multiple_vacations_is_refused(capsys):
    """L = 0 with multiple vacations: N >= 1 always (an empty server is on vacation), the overload never ends; the
    CLI refuses it in one line naming --thresholds, and so does the simulator."""
    from types import SimpleNamespace

    from qderive.numeric.simulation.sip import simulate_sip

    code = main(["eval", "sip-retransmission", "--rate", "5", "--service", "exp:mean=0.1", "--vacation",
                 "exp:mean=0.1", "--control", "ignore", "--thresholds", "0,4"])
    err = capsys.readouterr().err
    assert code == 2 and "--thresholds" in err and "never" in err and len(err.strip().splitlines()) == 1, err
    model = SimpleNamespace(rate=1, service=Exponential(1), method="invite", t1=0.5, t2=4, timeout=None,
                            capacity=None, control="ignore", thresholds=(0, 4), duplicate_cost=1,
                            vacation=Exponential(1), vacation_policy="multiple")
    with pytest.raises(ParameterError, match="thresholds"):
        simulate_sip(model, horizon=10, warmup=0, replications=2, seed=1)
