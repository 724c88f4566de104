"""The SIP retransmission simulator (issue 17, ``numeric/simulation/sip/``) against results computed another way.

* Without retransmissions (timeout <= T1: one copy per transaction) the server is M/G/1 (M/G/1/K
  with a capacity): the mean response and P(R > t) of M/M/1 against the closed form
  e^{-(mu - lambda) t}, M/D/1 against the Pollaczek-Khinchine mean and the project's exact engine
  (``VacationQueue`` without vacations, Euler inversion), utilization against lambda E B, the
  M/M/1/K loss (a lost single-copy transaction times out) against pi_K = (1 - rho) rho^K / (1 - rho^(K+1)).
* The timer schedule against the RFC 3261 numbers written out by hand, and the copies a transaction
  that never gets a response really sends against the schedule.
* 503 against ignore under overload; the goodput collapse without control (qualitative); the seed.

Tolerance: a reference must lie in the simulation's interval at the joint level 99 % (independent
replications, jackknife, Student t; Bonferroni over the measures of one run), so a correct simulator
fails with probability <= 1 %; the seeds are fixed, so the tests are deterministic.
"""

from __future__ import annotations

import math
import types
from fractions import Fraction as F

import numpy as np
import pytest

from qderive.numeric.simulation.sip import MEASURES, collapse_times, estimates, replication, setup_of, simulate, simulate_sip
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.sip_retransmission import copy_schedule
from qderive.symbolic.laws import Deterministic, Exponential

LEVEL = 0.99


def sip(**fields):
    """A model with the contract's fields (duck typing: the model class is not needed)."""
    d = dict(rate=1.0, service=Exponential(F(1, 10)), method="invite", t1=0.5, t2=4, timeout=32, capacity=None,
             control="none", thresholds=None, duplicate_cost=1)
    d.update(fields)
    return types.SimpleNamespace(**d)


def assert_within(est: dict, reference: dict):
    level = 1 - (1 - LEVEL) / len(reference)
    outside = []
    for key, ref in reference.items():
        lo, hi = est[key].interval(level)
        if not lo <= ref <= hi:
            outside.append(f"{key}: {ref:.6g} not in [{lo:.6g}, {hi:.6g}]")
    assert not outside, outside


def test_mm1_without_retransmissions():
    lam, mu = 0.5, 1.0
    model = sip(rate=lam, service=Exponential(1), t1=1000, timeout=1000)  # schedule (0,): one copy
    est = estimates(model, horizon=20_000, warmup=200, replications=4, seed=11, response_times=(1, 4))
    ref = {"mean_response": 1 / (mu - lam), "utilization": lam / mu, "goodput": lam, "offered_rate": lam,
           "tail0": math.exp(-(mu - lam) * 1), "tail1": math.exp(-(mu - lam) * 4)}
    assert_within(est, ref)
    assert est["mean_copies"].value == 1 and est["duplicate_ratio"].value == 0
    assert est["timeout_probability"].value == 0 and est["reject_probability"].value == 0


def test_md1_without_retransmissions():
    from qderive.symbolic.batches import Constant
    from qderive.symbolic.models.vacation import VacationQueue

    lam, b = 0.6, 1.0
    exact = VacationQueue(rate=F(3, 5), batch=Constant(1), service=Deterministic(1), vacation=None)
    tails = exact.evaluate(sojourn_tail=["1.5", "3"]).response["sojourn_tail"]
    model = sip(rate=lam, service=Deterministic(1), t1=500, timeout=500)
    est = estimates(model, horizon=15_000, warmup=200, replications=4, seed=12, response_times=(1.5, 3))
    pk = b + lam * b * b / (2 * (1 - lam * b))  # Pollaczek-Khinchine: E R = b + lambda E B^2 / (2 (1 - rho))
    assert_within(est, {"mean_response": pk, "utilization": lam * b,
                        "tail0": float(tails["1.5"]), "tail1": float(tails["3"])})


def test_mm1k_loss_is_the_timeout_of_single_copies():
    lam, K = 0.8, 3
    model = sip(rate=lam, service=Exponential(1), capacity=K, t1=200, timeout=200)
    est = estimates(model, horizon=20_000, warmup=100, replications=4, seed=13)
    loss = (1 - lam) * lam**K / (1 - lam ** (K + 1))
    assert_within(est, {"timeout_probability": loss, "goodput": lam * (1 - loss), "utilization": lam * (1 - loss)})


#: the RFC 3261 schedules of the contract, written out by hand (T1 = 0.5 s, T2 = 4 s, Timer B / F = 32 s)
RFC3261 = {"invite": (0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5),
           "non-invite": (0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5)}


def test_copy_schedule_is_rfc3261():
    # Timer A: intervals T1, 2T1, 4T1, ... below Timer B = 64 T1; Timer E: capped at T2 = 4 s (contract)
    for method, taus in RFC3261.items():
        assert copy_schedule(method, 0.5, 4, 32) == taus
        assert all(isinstance(t, F) for t in copy_schedule(method, 0.5, 4, 32))  # exact: one implementation
    assert copy_schedule("invite", 0.5, 4, 0.5) == (0,)  # tau_k < timeout strictly
    assert copy_schedule("non-invite", 1, 2, 7.5) == (0, 1, 3, 5, 7)
    # decided exactly: tau_2 = 3 T1 = timeout is not a copy, though 0.3 + 0.6 < 0.9 in float64
    assert copy_schedule("invite", 0.3, 4, 0.9) == (0, F(3, 10))
    assert setup_of(sip(t1=0.3, timeout=0.9)).taus == (0.0, 0.3)


@pytest.mark.parametrize("method, copies", [("invite", 7), ("non-invite", 11)])
def test_unanswered_transactions_send_every_copy_at_its_instant(method, copies):
    model = sip(rate=0.05, service=Deterministic(1000), method=method)  # no response before the timeout
    setup = setup_of(model)
    trace = []
    replication(np.random.default_rng(5), setup, 0.0, 200.0, trace=trace)
    arrive = {j: t for j, k, t in trace if k == 0}
    offsets = {}
    for j, k, t in trace:
        if arrive[j] < 200:  # the run ends when these have sent their last copy
            offsets.setdefault(j, []).append((k, t - arrive[j]))
    assert len(offsets) >= 5
    expected = list(enumerate(RFC3261[method]))
    for got in offsets.values():
        assert [k for k, _ in got] == [k for k, _ in expected]
        assert np.allclose([t for _, t in got], [t for _, t in expected], rtol=0, atol=1e-9)
    est = estimates(model, horizon=200, warmup=0, replications=2, seed=5)
    assert est["mean_copies"].value == copies and est["goodput"].value == 0


def test_503_stops_the_copies_that_ignore_retransmits():
    # deterministic 0.1 s service, H = 4: an admitted copy completes within 0.4 s < T1, so under 503 no
    # transaction ever retransmits; under ignore every refused copy is retransmitted at T1, 3 T1, ...
    common = dict(rate=30.0, service=Deterministic(F(1, 10)), thresholds=(2, 4))
    run = dict(horizon=40, warmup=5, replications=3, seed=21)
    rej = estimates(sip(control="503", **common), **run)
    ign = estimates(sip(control="ignore", **common), **run)
    assert rej["mean_copies"].value == 1 and rej["refused_mean_copies"].value == 1
    assert rej["copies_after_refusal"].value == 0
    assert rej["reject_probability"].interval(0.99)[0] > 0.5  # 3x overload: about 2/3 rejected
    assert ign["reject_probability"].value == 0
    assert ign["copies_after_refusal"].interval(0.99)[0] > 1
    assert ign["mean_copies"].interval(0.99)[0] > 2
    assert ign["timeout_probability"].interval(0.99)[0] > rej["timeout_probability"].value


def test_503_never_rejects_a_transaction_with_an_admitted_copy():
    # exponential 0.1 s service, H = 5 (0.5 s = T1 of work), 3x overload: admitted copies often wait beyond T1,
    # so admitted transactions retransmit into the overload state. The contract's 503 rule answers 503 only to a
    # transaction with no admitted copy (its first copy: a rejected transaction sent exactly one copy) and drops
    # a refused retransmission of an admitted one silently, so those transactions keep their response. Under a
    # rule that rejected at any refused copy, rejected transactions with 2 or more copies would appear.
    common = dict(rate=30.0, service=Exponential(F(1, 10)), thresholds=(4, 5))
    run = dict(horizon=60, warmup=10, replications=3, seed=23)
    rej = estimates(sip(control="503", **common), **run)
    assert rej["rejected_mean_copies"].value == 1
    # transactions with a refused copy: the rejected ones (1 copy) and admitted ones whose retransmission was refused
    assert rej["refused_mean_copies"].value > 1 + 1e-3
    assert rej["mean_copies"].value > 1.05
    # every transaction is rejected, answered or timed out
    total = rej["reject_probability"].value + rej["timeout_probability"].value + rej["goodput"].value / 30.0
    assert abs(total - 1) < 0.02  # goodput per second over a window vs per transaction: a few transactions


def test_goodput_collapses_without_control():
    # capacity 100 copies/s (T1 = 50 E B: a retransmission needs ~50 queued copies), timeout 8 T1 (4 copies at
    # most, a short run); offered load lambda_0 E B = 0.5, 0.8, 3
    out = {}
    for load in (0.5, 0.8, 3):
        model = sip(rate=load * 100, service=Exponential(F(1, 100)), timeout=4)
        out[load] = simulate_sip(model, horizon=5, warmup=5, replications=3, seed=31)["goodput"]
    (g1, h1), (g2, h2), (g3, h3) = out[0.5], out[0.8], out[3]
    assert g1 + h1 < g2 - h2  # goodput rises ...
    assert g3 + h3 < g1 - h1  # ... and falls past capacity


def test_result_keys_and_reproducibility():
    model = sip(rate=8.0, control="ignore", thresholds=(3, 6))
    a = simulate_sip(model, horizon=20, warmup=5, replications=2, seed=3, response_times=("0.5", 2))
    b = simulate_sip(model, horizon=20, warmup=5, replications=2, seed=3, response_times=("0.5", 2))
    c = simulate_sip(model, horizon=20, warmup=5, replications=2, seed=4, response_times=("0.5", 2))
    assert a == b and a != c
    default = sip(rate=8.0, control="ignore", thresholds=(3, 6), timeout=None)  # None: Timer B = 64 T1 = 32 s
    assert simulate_sip(default, horizon=20, warmup=5, replications=2, seed=3, response_times=("0.5", 2)) == a
    assert set(a) == set(MEASURES) | {"response_tail"} and set(a["response_tail"]) == {"0.5", 2}
    for key in MEASURES:
        value, half = a[key]
        assert math.isfinite(value) and half >= 0
    assert abs(a["duplicate_ratio"][0] - (1 - 1 / a["mean_copies"][0])) < 1e-12
    # the qderive-simulate shape: 200 transactions at rate 8 = 25 s, the first 1/5 warm-up: the same run
    r = simulate(model, customers=200, replications=2, seed=3, warmup=0.2)
    assert r.replications == 2 and r.seed == 3 and set(r.measures) == set(MEASURES)
    assert r.measures["goodput"].value == a["goodput"][0]
    assert any(n.startswith("reject_probability: the same in every replication") for n in r.notes)  # ignore: 0
    tailed = types.SimpleNamespace(**{**vars(model), "response_tail": (F(1, 2), 2)})  # the model's field
    r = simulate(tailed, customers=200, replications=2, seed=3, warmup=0.2)
    assert set(r["response_tail"]) == {"0.5", "2"} and r["response_tail"]["0.5"].value == a["response_tail"]["0.5"][0]


@pytest.mark.parametrize("fields, option", [
    (dict(control="drop"), "control"), (dict(control="503"), "thresholds"),
    (dict(control="ignore", thresholds=(5, 3)), "thresholds"), (dict(rate=0), "rate"),
    (dict(duplicate_cost=0), "duplicate_cost"), (dict(method="bye"), "method"), (dict(capacity=0), "capacity"),
])
def test_bad_fields_name_the_option(fields, option):
    with pytest.raises(ParameterError, match=option):
        simulate_sip(sip(**fields), horizon=1, warmup=0, replications=2, seed=0)
    with pytest.raises(ParameterError, match="replications"):
        simulate_sip(sip(), horizon=1, warmup=0, replications=1, seed=0)


def test_a_huge_run_is_refused_before_it_starts():
    from qderive.symbolic.errors import BudgetError

    with pytest.raises(BudgetError, match="customers"):
        simulate_sip(sip(rate=1e6), horizon=1e6, warmup=0, replications=2, seed=0)
    with pytest.raises(BudgetError, match="customers"):
        collapse_times(sip(rate=1e300), limit=1e300, replications=2, seed=0)


def _hysteretic_stationary(lam: float, mu: float, low: int, high: int) -> dict:
    """{state: pi} of M/M/1 with the contract's control, by a direct CTMC solve.

    States (n, normal) for n = 0..H and (n, overload) for n = L+1..H: an arrival finding H in the normal
    state switches to overload (and is refused); a departure leaving L in overload switches back."""
    states = [(n, 0) for n in range(high + 1)] + [(n, 1) for n in range(low + 1, high + 1)]
    index = {s: i for i, s in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    for (n, s), i in index.items():
        if s == 0:
            Q[i, index[(n + 1, 0)] if n < high else index[(high, 1)]] += lam
        if n > 0:
            Q[i, index[(n - 1, 1 if s and n - 1 > low else 0)]] += mu
    np.fill_diagonal(Q, -Q.sum(axis=1))
    A = np.vstack([Q.T, np.ones(len(states))])
    pi = np.linalg.lstsq(A, np.r_[np.zeros(len(states)), 1], rcond=None)[0]
    return dict(zip(states, pi))


def _hysteretic_refusal(lam: float, mu: float, low: int, high: int) -> float:
    """P(an arrival is refused) (PASTA): pi(H, normal) + the overload states of :func:`_hysteretic_stationary`."""
    pi = _hysteretic_stationary(lam, mu, low, high)
    return float(pi[(high, 0)] + sum(v for (n, s), v in pi.items() if s))


@pytest.mark.parametrize("control, key", [("ignore", "timeout_probability"), ("503", "reject_probability")])
def test_hysteretic_control_of_single_copies_against_its_ctmc(control, key):
    lam, low, high = 1.2, 2, 5
    refused = _hysteretic_refusal(lam, 1.0, low, high)
    model = sip(rate=lam, service=Exponential(1), control=control, thresholds=(low, high), t1=100, timeout=100)
    est = estimates(model, horizon=10_000, warmup=50, replications=4, seed=41)
    assert_within(est, {key: refused, "goodput": lam * (1 - refused), "utilization": lam * (1 - refused)})


def test_ignore_goodput_with_a_binding_timeout_against_its_ctmc():
    """One copy per transaction (timeout = T1) under ignore, the case ``verify --simulate`` compares: by PASTA and
    FIFO a copy admitted finding n has the sojourn Erlang(n + 1, mu), so

        goodput = lambda sum_{n < H} pi(n, normal) P(Erlang(n + 1, mu) <= timeout)

    with pi from the direct CTMC solve (checks the rule R <= timeout and the overload entry at N = H)."""
    from scipy.stats import gamma

    lam, mu, low, high, timeout = 0.9, 1.0, 4, 5, 5.0  # the example's shape (rho = 0.9, L, H = 4, 5) in units of E B
    pi = _hysteretic_stationary(lam, mu, low, high)
    answered = sum(pi[(n, 0)] * gamma.cdf(timeout, n + 1, scale=1 / mu) for n in range(high))
    refused = _hysteretic_refusal(lam, mu, low, high)
    model = sip(rate=lam, service=Exponential(1), control="ignore", thresholds=(low, high), t1=timeout,
                timeout=timeout)
    est = estimates(model, horizon=100_000, warmup=50, replications=5, seed=43)
    assert est["mean_copies"].value == 1
    assert 0.1 < 1 - answered - refused < 0.3  # the timeout binds: about 1/6 of the admitted copies are late
    assert_within(est, {"goodput": lam * answered, "timeout_probability": 1 - answered,
                        "utilization": lam * (1 - refused)})


def test_duplicate_cost_by_work_conservation():
    # no refusal: every copy is admitted, the first at cost B, the others at c B, so the server's busy
    # fraction is lambda_0 E B (1 + c (E copies - 1)); T1 = 1.5 E B makes retransmissions frequent
    lam, b, c = 4.0, 0.1, 0.25
    model = sip(rate=lam, service=Exponential(F(1, 10)), t1=0.15, timeout=4.8, duplicate_cost=c)
    est = estimates(model, horizon=3000, warmup=20, replications=4, seed=51)
    copies, util = est["mean_copies"], est["utilization"]
    assert copies.value > 1.3  # the check needs duplicates
    (clo, chi), (ulo, uhi) = copies.interval(0.995), util.interval(0.995)
    assert ulo - 1e-12 <= lam * b * (1 + c * (chi - 1)) and lam * b * (1 + c * (clo - 1)) <= uhi + 1e-12
    assert not ulo <= lam * b * copies.value <= uhi  # full cost would be seen


def test_collapse_times_against_a_lindley_recursion():
    # single copies (timeout <= T1), M/D/1 at load 2: the first customer whose wait exceeds x = 20, by the
    # simulator and by the Lindley recursion w_{n+1} = max(0, w_n + b - A_n) written out here (numpy)
    lam, b, x, runs = 2.0, 1.0, 20.0, 200
    model = sip(rate=lam, service=Deterministic(1), t1=x, timeout=x)
    out = collapse_times(model, limit=1000, replications=runs, seed=61)
    sim = np.array(out["times"])
    assert np.all(np.isfinite(sim)) and out["collapsed"] == (1.0, 0.0)
    rng = np.random.default_rng(62)
    ref = []
    for _ in range(runs):
        gaps = rng.exponential(1 / lam, 400)
        w, t = 0.0, gaps[0]
        for gap in gaps[1:]:
            w = max(0.0, w + b - gap)
            t += gap
            if w > x:
                ref.append(t)
                break
    ref = np.array(ref)
    assert len(ref) == runs
    se = math.hypot(sim.std(ddof=1) / math.sqrt(runs), ref.std(ddof=1) / math.sqrt(runs))
    assert abs(sim.mean() - ref.mean()) < 3.3 * se  # two-sample test at level 0.999
    assert abs(sim.mean() - x / (lam * b - 1)) < 5  # Wald: about x / drift (+ overshoot, detection)
    none = collapse_times(sip(rate=0.2, service=Deterministic(1), t1=x, timeout=x), limit=50, replications=3, seed=1)
    assert none["times"] == [math.inf] * 3 and none["collapsed"] == (0.0, 0.0)


@pytest.mark.parametrize("fields, kwargs", [
    (dict(rate=12.0), dict(response_times=(0.3, 40.0))),  # collapses: 7 copies, waits beyond the timeout
    (dict(rate=8.0, method="non-invite", t1=0.25, timeout=4), {}),
    (dict(rate=12.0, control="503", thresholds=(10, 20)), dict(response_times=(0.5,))),
    (dict(rate=14.0, control="ignore", thresholds=(5, 10), duplicate_cost=0.5), {}),
    (dict(rate=11.0, service=Deterministic(F(1, 10)), capacity=30), {}),
    (dict(rate=9.0, vacation=Exponential(F(1, 20)), vacation_policy="multiple"), {}),
    (dict(rate=11.0, vacation=Exponential(F(1, 20)), vacation_policy="single", control="ignore", thresholds=(0, 4)),
     {}),
    (dict(rate=12.0), dict(until_collapse=True)),
    (dict(rate=12.0, control="503", thresholds=(10, 20)), dict(until_collapse=True, overload_collapse=True)),
    (dict(rate=9.0, vacation=Exponential(F(1, 2)), vacation_policy="single", t1=0.2, timeout=0.4),
     dict(until_collapse=True)),  # the collapse is a wait for a vacation's end
    (dict(rate=8.0, rate_non_invite=4.0, control="503", thresholds=(10, 20)), dict(response_times=(0.5,))),
    (dict(rate=5.0, rate_non_invite=6.0, service_non_invite=Exponential(F(1, 20)), duplicate_cost=0.5),
     dict(response_times=(0.2, 1.0))),  # a service law per flow, the second flow non-INVITE
    (dict(rate=3.0, method="non-invite", rate_non_invite=7.0, control="ignore", thresholds=(4, 8),
          vacation=Exponential(F(1, 20)), vacation_policy="multiple"), {}),
    # the priority server's loop (every control, Retry-After, vacations, the collapse epochs)
    (dict(rate=8.0, rate_non_invite=4.0, control="503", thresholds=(10, 20), discipline="priority"),
     dict(response_times=(0.5,))),
    (dict(rate=7.0, rate_non_invite=4.0, discipline="priority", service_non_invite=Exponential(F(1, 20))),
     dict(response_times=(0.3, 1.0))),
    (dict(rate=6.0, rate_non_invite=3.0, discipline="priority", vacation=Exponential(F(1, 20)), control="ignore",
          thresholds=(4, 8)), {}),
    (dict(rate=8.0, rate_non_invite=4.0, control="threshold", thresholds=(5, 10), discipline="priority",
          retry_after=1, retries=2), dict(response_times=(0.2,))),
    (dict(rate=8.0, rate_non_invite=4.0, control="503", thresholds=(3, 6), discipline="priority", retry_after=2,
          retries=1), {}),
    (dict(rate=9.0, rate_non_invite=6.0, discipline="priority", timeout=4), dict(until_collapse=True)),
    (dict(rate=8.0, rate_non_invite=4.0, control="503", thresholds=(10, 20), discipline="priority"),
     dict(until_collapse=True, overload_collapse=True)),
    # the FIFO loop with the modes of threshold or Retry-After
    (dict(rate=8.0, rate_non_invite=4.0, control="threshold", thresholds=(5, 10)), dict(response_times=(0.5,))),
    (dict(rate=9.0, rate_non_invite=5.0, control="threshold", thresholds=(3, 8), capacity=12), {}),
    (dict(rate=8.0, rate_non_invite=4.0, control="threshold", thresholds=(5, 10), retry_after=0.5, retries=3), {}),
    (dict(rate=12.0, control="503", thresholds=(10, 20), retry_after=1, retries=2), dict(response_times=(0.3,))),
    (dict(rate=12.0, control="503", thresholds=(2, 4), timeout=0.5, retry_after=1, retries=2), {}),
    (dict(rate=12.0, control="503", thresholds=(0, 4), retry_after=1), {}),  # L = 0: overload ends at N = 0
    (dict(rate=12.0, control="503", thresholds=(10, 20), retry_after=1, retries=2),
     dict(until_collapse=True, overload_collapse=True)),
    (dict(rate=12.0, rate_non_invite=2.0, control="threshold", thresholds=(5, 10), timeout=4),
     dict(until_collapse=True)),
    (dict(rate=10.0, vacation=Exponential(F(1, 20)), control="503", thresholds=(3, 8), retry_after=1), {}),
    (dict(rate=11.0, vacation=Exponential(F(1, 20)), vacation_policy="single", control="503", thresholds=(0, 4),
          retry_after=0.5, retries=2), dict(response_times=(0.2,))),  # L = 0: the overload ends after a vacation
    (dict(rate=9.0, vacation=Exponential(F(1, 2)), vacation_policy="single", control="503", thresholds=(2, 6),
          t1=0.2, timeout=0.4, retry_after=1), dict(until_collapse=True)),  # the collapse: a wait for a vacation
    # the FIFO loop with vacations and Retry-After (the vacation's end among the departures, the counts written out)
    (dict(rate=6.0, rate_non_invite=3.0, vacation=Exponential(F(1, 20)), control="503", thresholds=(4, 8),
          retry_after=0.5, retries=3), dict(response_times=(0.3,))),  # two flows
    (dict(rate=11.0, vacation=Deterministic(F(1, 30)), control="503", thresholds=(3, 8), capacity=8, retry_after=2,
          duplicate_cost=0.5), {}),
    (dict(rate=12.0, vacation=Exponential(F(1, 20)), control="503", thresholds=(3, 8), retry_after=1),
     dict(until_collapse=True, overload_collapse=True)),
    (dict(rate=14.0, vacation=Exponential(F(1, 20)), vacation_policy="single", control="503", thresholds=(20, 40),
          timeout=2, retry_after=1), dict(until_collapse=True)),  # the collapse: a wait behind the copies
    (dict(rate=14.0, vacation=Exponential(F(1, 20)), control="503", thresholds=(20, 40), timeout=2, retry_after=1),
     dict(response_times=(0.3, 1.5))),  # waits beyond the timeout, the run goes on
])
def test_the_flat_loops_are_the_general_loop_number_for_number(fields, kwargs):
    """The flat loops (the server written out, no call per event: the common case's, the priority server's, the FIFO
    server's with modes or Retry-After) and the general loop (the servers' interface) are codings of one simulation:
    the same accumulators, tail counts and collapse epoch for the same seed, bit for bit (exact equality: the same
    floating-point operations in the same order)."""
    setup = setup_of(sip(**fields))
    fast = replication(np.random.default_rng(3), setup, 20.0, 320.0, **kwargs)
    general = replication(np.random.default_rng(3), setup, 20.0, 320.0, general=True, **kwargs)
    assert fast == general
    assert fast[0][1] > 100 or ("until_collapse" in kwargs and math.isfinite(fast[1]))  # something was simulated


@pytest.mark.parametrize("fields, loop", [
    (dict(rate=12.0, vacation=Exponential(F(1, 20)), vacation_policy="multiple"), "_fifo"),
    (dict(rate=8.0, rate_non_invite=4.0, discipline="priority", retry_after=1, control="503", thresholds=(3, 6)),
     "_priority"),
    (dict(rate=12.0, control="503", thresholds=(10, 20), retry_after=1), "_fifo_modes"),
    (dict(rate=10.0, vacation=Exponential(F(1, 20)), control="503", thresholds=(3, 8), retry_after=1),
     "_fifo_vacations"),
])
def test_each_case_runs_its_flat_loop(fields, loop, monkeypatch):
    """The comparison above tests each flat loop only if the loop runs: the event loop chosen for a setup (FIFO
    without Retry-After; priority; FIFO with Retry-After or modes; FIFO with Retry-After and vacations) is the one
    named, and no other flat loop runs."""
    from qderive.numeric.simulation.sip import events

    ran = []
    for name in ("_fifo", "_priority", "_fifo_modes", "_fifo_vacations", "_general"):
        method = getattr(events._Run, name)
        monkeypatch.setattr(events._Run, name, lambda self, _m=method, _n=name, **kw: ran.append(_n) or _m(self, **kw))
    replication(np.random.default_rng(3), setup_of(sip(**fields)), 5.0, 30.0)
    assert ran == [loop]
