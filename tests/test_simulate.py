"""The simulator against values computed another way, inside these tests.

Oracles (none shares code with the simulator):

* M/M/1/K: the textbook truncated-geometric law, written here;
* M[X]/G/1 with and without multiple vacations: the Pollaczek-Khinchine mean wait with
  batches and the vacation residual (``spec/chapter2.md`` (6), (7)), written here with
  moments computed by hand;
* M[X]/M/1/r with exponential vacations, partial and whole admission: the CTMC built
  here from the model definition, solved with ``stationary_gth``;
* the hysteretic model with exponential service, the three switching conventions: the
  CTMC on (count, mode) built here, solved with GTH; the cycle times by the renewal
  argument (rate of entries into mode 0);
* the two-flow model, both algorithms: the CTMC on (mode, class in service, waiting
  classes) built here by breadth-first search, solved with GTH.

Tolerance: the reference values must lie in the simulation's 99 % intervals
(independent replications, jackknife standard errors, Student t), taken simultaneous
over the m measures of one run (Bonferroni: each interval at level 1 - 0.01/m), so a
correct simulator fails a test with probability at most 1 %. Per-measure 99 %
intervals would not do: this file makes about 180 comparisons, so about two would
fail by chance (measured: at 13 times the sample size those two misses had z-scores
below 2, i.e. chance, not bias). The seeds are fixed, so the tests are deterministic;
each model is checked at a light and a heavy-load point. The finite chains use 20
replications (19 degrees of freedom: the run-to-run variance, and with it the interval,
is then itself well estimated); the infinite queues use 10 longer runs, because a
heavily loaded queue needs long runs to forget its empty start.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction as Fr

import numpy as np
import pytest
import sympy as sp

from qderive.numeric.backend import FLOAT64
from qderive.numeric.chains import stationary_gth
from qderive.numeric.sim_sampling import batch_sampler, time_sampler
from qderive.numeric.simulate import (
    Admission,
    Algorithm,
    ModeSemantics,
    SimHysteresisModel,
    SimTwoFlowModel,
    SimVacationModel,
    SwitchingConvention,
    simulate,
    student_t_quantile,
)
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError

LEVEL = 0.99


def assert_within(result, reference: dict):
    """Every reference value lies in the simulation's simultaneous 99 % intervals (Bonferroni)."""
    failures = []
    level = 1 - (1 - LEVEL) / len(reference)
    for name, ref in reference.items():
        lo, hi = result[name].interval(level)
        if not (lo <= float(ref) <= hi):
            failures.append(f"{name}: reference {float(ref):.6g} outside [{lo:.6g}, {hi:.6g}]")
    assert not failures, "\n".join(failures)


def gth(rates: dict, states: list) -> dict:
    """Stationary law of the CTMC with ``rates[(i, j)]`` (exact), states listed; GTH in float64."""
    index = {s: k for k, s in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    for (i, j), rate in rates.items():
        if i != j:
            Q[index[i], index[j]] += float(FLOAT64.num(sp.Rational(rate)))
    pi = stationary_gth(Q, FLOAT64)
    return {s: float(pi[index[s]]) for s in states}


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("p, dof", [(0.975, 1), (0.975, 4), (0.995, 9), (0.995, 29), (0.9, 200)])
def test_student_t_quantile_matches_scipy(p, dof):
    from scipy import stats

    # scipy's own t inverse; the bisection on mpmath's incomplete beta agrees to ~1e-10
    assert student_t_quantile(p, dof) == pytest.approx(stats.t.ppf(p, dof), rel=1e-9)


# --------------------------------------------------------------------------- samplers

TIME_LAWS = [
    T.Deterministic(Fr(3, 2)),
    T.Exponential(Fr(1, 3)),
    T.Erlang(4, Fr(3, 200)),
    T.Gamma(Fr(1, 2), 2),
    T.HyperExponential((Fr(1, 4), Fr(3, 4)), (1, 3)),
    T.Uniform(1, 4),
]
BATCH_LAWS = [
    B.Geometric(5),
    B.Geometric(1),
    B.Constant(3),
    B.FinitePMF({1: Fr(1, 2), 4: Fr(1, 2)}),
    B.ShiftedPoisson(3),
]


@pytest.mark.parametrize("law", TIME_LAWS + BATCH_LAWS, ids=lambda law: type(law).__name__)
def test_sampler_moments(law):
    draw = batch_sampler(law) if isinstance(law, B.BatchLaw) else time_sampler(law)
    x = draw(np.random.default_rng(7), 400_000).astype(np.float64)
    # the law's exact mean and variance (sympy); tolerance 5 standard errors of the sample
    # mean and of the sample second moment (estimated from the sample's 4th moment)
    m1, m2 = (float(law.moment(k)) for k in (1, 2))
    n = len(x)
    se1 = np.sqrt(max(m2 - m1 * m1, 0.0) / n)
    se2 = np.sqrt(max(np.mean(x**4) - m2 * m2, 0.0) / n)
    assert abs(x.mean() - m1) <= 5 * se1 + 1e-12 * m1
    assert abs(np.mean(x * x) - m2) <= 5 * se2 + 1e-12 * m2


def test_symbolic_laws_are_refused():
    with pytest.raises(ParameterError, match="cannot be simulated"):
        SimVacationModel(rate=1, batch=B.Constant(1), service=T.GeneralTime(), capacity=3)
    with pytest.raises(ParameterError, match="cannot be simulated"):
        SimVacationModel(rate=1, batch=B.GeneralBatch(), service=T.Exponential(1), capacity=3)


def test_bad_input_is_refused():
    with pytest.raises(ParameterError, match="rho_bar"):
        SimVacationModel(rate=2, batch=B.Constant(1), service=T.Exponential(1))
    with pytest.raises(ParameterError, match="capacity"):
        SimVacationModel(rate=1, batch=B.Constant(1), service=T.Exponential(1), capacity=-1)
    with pytest.raises(ParameterError, match="capacity = 0 with vacations"):
        SimVacationModel(rate=1, batch=B.Constant(1), service=T.Exponential(1), vacation=T.Exponential(1), capacity=0)
    with pytest.raises(ParameterError, match="no batch ever fits"):
        SimVacationModel(rate=1, batch=B.Constant(4), service=T.Exponential(1), capacity=2, admission=Admission.WHOLE)
    with pytest.raises(ParameterError, match="L < H < R"):
        SimHysteresisModel(2, 1, B.Constant(1), T.Exponential(1), (84, 73, 100))
    with pytest.raises(ParameterError, match="float"):
        SimHysteresisModel(0.5, 1, B.Constant(1), T.Exponential(1), (1, 2, 3))
    with pytest.raises(ParameterError, match="1 <= L < H"):
        SimTwoFlowModel((1, 1), (1, 1), (0, 2, 3))
    m = SimVacationModel(rate=1, batch=B.Constant(1), service=T.Exponential(2), capacity=3)
    with pytest.raises(ParameterError, match="customers"):
        simulate(m, customers=0)
    with pytest.raises(ParameterError, match="seed"):
        simulate(m, customers=10, seed=-1)
    with pytest.raises(ParameterError, match="warmup"):
        simulate(m, customers=10, warmup=1.0)


def test_seeded_runs_are_reproducible_and_shaped_as_the_contract():
    m = SimVacationModel(rate=Fr(1, 2), batch=B.Geometric(2), service=T.Erlang(2, Fr(1, 2)), capacity=5)
    a = simulate(m, 5_000, 3, seed=11, quiet=True).as_dict()
    b = simulate(m, 5_000, 3, seed=11, quiet=True).as_dict()
    c = simulate(m, 5_000, 3, seed=12, quiet=True).as_dict()
    assert a == b and a != c
    assert set(a) == {
        "loss_probability", "batch_blocking_probability", "idle_probability", "mean_queue_length",
        "mean_wait", "mean_number_in_system", "throughput",
    }  # fmt: skip
    for v in a.values():
        assert set(v) == {"estimate", "ci95"} and v["ci95"][0] <= v["estimate"] <= v["ci95"][1]


# --------------------------------------------------------------------------- M/M/1/K


@pytest.mark.parametrize("rho", [Fr(1, 2), Fr(3, 2)])
def test_mm1k_against_the_truncated_geometric_law(rho):
    r = 4  # waiting room; K = r + 1 places in the system
    K = r + 1
    norm = sum(rho**n for n in range(K + 1))
    p = [rho**n / norm for n in range(K + 1)]  # p_n = rho^n / sum_{m<=K} rho^m
    lam, mu = rho, 1
    lq = sum((n - 1) * p[n] for n in range(1, K + 1))
    reference = {
        "loss_probability": p[K],
        "batch_blocking_probability": p[K],
        "idle_probability": p[0],
        "mean_queue_length": lq,
        "mean_number_in_system": sum(n * p[n] for n in range(K + 1)),
        "throughput": lam * (1 - p[K]),
        "mean_wait": lq / (lam * (1 - p[K])),
    }
    model = SimVacationModel(rate=lam, batch=B.Constant(1), service=T.Exponential(Fr(1, mu)), capacity=r)
    assert_within(simulate(model, 75_000, 20, seed=2024, quiet=True), reference)


# --------------------------------------------------------------------------- M[X]/G/1 (PK)


def _pk(lam, l1, l2, b1, b2, f1=None, f2=None):
    """M[X]/G/1 with multiple vacations (f1 None: none): W, N, idle, in system (spec (6), (7))."""
    rho = lam * l1 * b1
    w = lam * l1 * b2 / (2 * (1 - rho)) + (l2 - l1) * b1 / (2 * l1 * (1 - rho))
    if f1 is not None:
        w += f2 / (2 * f1)
    n = lam * l1 * w
    return {"mean_wait": w, "mean_queue_length": n, "idle_probability": 1 - rho, "mean_number_in_system": n + rho}


@pytest.mark.parametrize("rho", [Fr(3, 10), Fr(4, 5)])
def test_batch_pk_with_vacations(rho):
    # geometric batches, mean 3: E X^2 = (2 - p)/p^2 with p = 1/3 -> 15
    l1, l2 = 3, 15
    # Erlang-4 service of mean 1/10: E B^2 = m^2 (1 + 1/4); Erlang-2 vacations of mean 1/4
    b1, b2 = Fr(1, 10), Fr(1, 100) * Fr(5, 4)
    f1, f2 = Fr(1, 4), Fr(1, 16) * Fr(3, 2)
    lam = rho / (l1 * b1)
    model = SimVacationModel(rate=lam, batch=B.Geometric(3), service=T.Erlang(4, b1), vacation=T.Erlang(2, f1))
    n = 200_000 if rho < Fr(1, 2) else 400_000
    res = simulate(model, n, 10, seed=7, quiet=True)
    assert set(res.measures) == {
        "idle_probability", "mean_queue_length", "mean_wait", "queue_length_variance", "mean_number_in_system",
    }  # fmt: skip
    assert_within(res, _pk(lam, l1, l2, b1, b2, f1, f2))


@pytest.mark.parametrize("rho", [Fr(1, 2), Fr(4, 5)])
def test_mm1_queue_length_variance_and_pk_without_vacations(rho):
    # M/M/1: P(Lq = k) = (1 - rho) rho^{k+1} (k >= 1), so E Lq = rho^2/(1-rho) and
    # Var Lq = rho^2 (1 + rho - rho^2) / (1 - rho)^2
    model = SimVacationModel(rate=rho, batch=B.Constant(1), service=T.Exponential(1))
    res = simulate(model, 400_000 if rho > Fr(1, 2) else 200_000, 10, seed=5, quiet=True)
    reference = _pk(rho, 1, 1, 1, 2)
    reference["queue_length_variance"] = rho**2 * (1 + rho - rho**2) / (1 - rho) ** 2
    assert_within(res, reference)


# --------------------------------------------------------------------------- finite chain with vacations


def _admit(x, room, partial):
    """Customers admitted from a batch of x into ``room`` places (the model's rule, restated)."""
    if x <= room:
        return x
    return room if partial else 0


def vacation_chain_reference(lam, pmf, mu, theta, r, partial, vacations):
    """M[X]/M/1/r with Exp(theta) multiple vacations (or none): CTMC, then PASTA measures.

    States ("V", q) on vacation with q waiting, ("I",) idle without vacations,
    ("B", q) serving with q waiting.
    """
    states = [("B", q) for q in range(r + 1)] + ([("V", q) for q in range(r + 1)] if vacations else [("I",)])
    rates = {}

    def add(i, j, rate):
        rates[(i, j)] = rates.get((i, j), 0) + rate

    for st in states:
        for x, px in pmf.items():
            if st[0] == "I":
                a = _admit(x, r + 1, partial)  # idle server: the first customer starts service
                if a:
                    add(st, ("B", a - 1), lam * px)
            else:
                q = st[1]
                add(st, (st[0], q + _admit(x, r - q, partial)), lam * px)
        if st[0] == "V" and st[1] >= 1:
            add(st, ("B", st[1] - 1), theta)
        if st[0] == "B":
            q = st[1]
            add(st, ("B", q - 1) if q >= 1 else (("V", 0) if vacations else ("I",)), mu)
    pi = gth(rates, states)
    l1 = sum(x * p for x, p in pmf.items())

    def room(st):
        return r + 1 if st[0] == "I" else r - st[1]

    lost = sum(pi[st] * float(px) * (x - _admit(x, room(st), partial)) for st in states for x, px in pmf.items())
    blocked = sum(pi[st] * float(px) for st in states for x, px in pmf.items() if _admit(x, room(st), partial) == 0)
    loss = lost / float(l1)
    busy = sum(pi[st] for st in states if st[0] == "B")
    queue = sum(pi[st] * st[1] for st in states if st[0] != "I")
    return {
        "loss_probability": loss,
        "batch_blocking_probability": blocked,
        "idle_probability": 1 - busy,
        "mean_queue_length": queue,
        "mean_number_in_system": queue + busy,
        "throughput": float(mu) * busy,
        "mean_wait": queue / (float(lam * l1) * (1 - loss)),
    }


@pytest.mark.parametrize("admission", [Admission.PARTIAL, Admission.WHOLE])
@pytest.mark.parametrize("vacations", [True, False])
@pytest.mark.parametrize("load", [Fr(1, 2), Fr(3, 2)])
def test_finite_vacation_model_against_its_ctmc(admission, vacations, load):
    pmf = {1: Fr(1, 2), 3: Fr(1, 2)}  # mean 2
    mu, theta, r = 1, Fr(2, 1), 3
    lam = load / 2
    reference = vacation_chain_reference(lam, pmf, mu, theta, r, admission is Admission.PARTIAL, vacations)
    model = SimVacationModel(
        rate=lam, batch=B.FinitePMF(pmf), service=T.Exponential(1),
        vacation=T.Exponential(1 / theta) if vacations else None, capacity=r, admission=admission,
    )  # fmt: skip
    assert_within(simulate(model, 40_000, 20, seed=99, quiet=True), reference)


# --------------------------------------------------------------------------- hysteresis


def _next_mode_departure(convention, s, n_minus, L, H, R):
    """The spec's switching rules (chapter3.md section 1; other-models.md B), restated for the test."""
    j = n_minus - 1
    if convention is SwitchingConvention.INSTANT:
        if s == 2 and j <= H:
            return 1
        if s == 1 and j < L:
            return 0
        return s
    overload_at = H if convention is SwitchingConvention.EVENT else H + 1  # n^- >= H  vs  j >= H
    if s == 0:
        return 2 if n_minus >= R else 1 if n_minus >= overload_at else 0
    if s == 1:
        return 2 if n_minus >= R else 0 if j < L else 1
    return 1 if j <= H else 2


def _next_mode_arrival(convention, s, n, L, H, R):
    if convention is not SwitchingConvention.INSTANT or s == 2:
        return s
    if n >= R:
        return 2
    return 1 if (s == 1 or n >= H) else 0


def _label(s, c, H, R):
    if s == 0:
        return 0 if c < H else 1 if c < R else 2
    return 1 if (s == 1 and c < R) else 2


def hysteresis_chain_reference(convention, semantics, rates, pmf, mu, L, H, R):
    """CTMC on (count, mode) of M[X]/M/1 with hysteretic control; measures by PASTA and renewal."""
    states = [(n, s) for s in range(3) for n in range(R + 1)]
    trans = {}
    for n, s in states:
        for x, px in pmf.items():
            if rates[s]:
                m = min(n + x, R)
                key = ((n, s), (m, _next_mode_arrival(convention, s, m, L, H, R)))
                trans[key] = trans.get(key, 0) + rates[s] * px
        if n >= 1:
            key = ((n, s), (n - 1, _next_mode_departure(convention, s, n, L, H, R)))
            trans[key] = trans.get(key, 0) + mu
    # keep the states reachable from (0, 0), so the chain is irreducible
    seen, todo = {(0, 0)}, deque([(0, 0)])
    while todo:
        i = todo.popleft()
        for a, b in trans:
            if a == i and b not in seen:
                seen.add(b)
                todo.append(b)
    states = sorted(seen)
    pi = gth({k: v for k, v in trans.items() if k[0] in seen}, states)
    if semantics is ModeSemantics.INTERVAL:
        p = [sum(pi[(n, s)] for (n, s) in states if s == k) for k in range(3)]
    else:
        p = [sum(pi[(n, s)] for (n, s) in states if _label(s, n, H, R) == k) for k in range(3)]
    entries = sum(pi[(n, s)] * mu for (n, s) in states if s != 0 and n >= 1
                  and _next_mode_departure(convention, s, n, L, H, R) == 0)  # fmt: skip
    # loss per offered customer (rate lambda_0 l1): throttled (lambda_0 - lambda_s) l1 in mode s,
    # plus the overflow lambda_s E(X - (R - n))^+ at count n (PASTA)
    l1 = sum(x * p_ for x, p_ in pmf.items())
    offered = float(rates[0] * l1)
    throttled = sum(pi[(n, s)] * float((rates[0] - rates[s]) * l1) for (n, s) in states)
    lost = sum(pi[(n, s)] * float(rates[s] * px) * max(0, n + x - R) for (n, s) in states for x, px in pmf.items())
    cycle = 1 / entries
    return {
        "p_normal": p[0],
        "p_overload": p[1],
        "p_discard": p[2],
        "mean_cycle_time": cycle,
        "mean_normal_time": p[0] * cycle,
        "mean_return_time": (1 - p[0]) * cycle,
        "loss_probability": (throttled + lost) / offered,
        "throughput": mu * sum(pi[(n, s)] for (n, s) in states if n >= 1),
    }


@pytest.mark.parametrize("convention", list(SwitchingConvention))
@pytest.mark.parametrize("rho0", [Fr(4, 5), Fr(2)])
def test_hysteresis_against_its_ctmc(convention, rho0):
    pmf = {1: Fr(1, 2), 2: Fr(1, 2)}  # mean 3/2
    L, H, R = 2, 4, 7
    lam0 = rho0 / Fr(3, 2)
    rates = (lam0, lam0 / 2, 0)
    semantics = ModeSemantics.INTERVAL if rho0 < 1 else ModeSemantics.LABEL
    reference = hysteresis_chain_reference(convention, semantics, rates, pmf, 1, L, H, R)
    model = SimHysteresisModel(lam0, lam0 / 2, B.FinitePMF(pmf), T.Exponential(1), (L, H, R), convention)
    assert_within(simulate(model, 50_000, 20, seed=31, quiet=True, semantics=semantics), reference)


# --------------------------------------------------------------------------- two flows


def two_flow_chain_reference(lam, mu_normal, mu_over, L, H, R, priority):
    """CTMC on (mode, class in service or None, waiting classes in arrival order), built by BFS."""
    mu = (mu_normal, mu_over, mu_over)
    accepts = {0: (True, True), 1: (False, True), 2: (False, False)}
    start = (0, None, ())
    trans, rejections = {}, {}
    seen, todo = {start}, deque([start])
    while todo:
        st = todo.popleft()
        s, c_in, wait = st
        n = 0 if c_in is None else 1 + len(wait)
        out = []
        for c in (0, 1):
            if accepts[s][c] and n < R:
                m = n + 1
                nxt = (2 if m > H else s, c, ()) if c_in is None else (2 if m > H else s, c_in, wait + (c,))
                out.append((nxt, lam[c]))
            else:
                rejections[(st, c)] = True
        if c_in is not None:
            m = n - 1
            s2 = 1 if (s == 2 and m == H) else 0 if (s == 1 and m == L - 1) else s
            if not wait:
                nxt = (s2, None, ())
            else:
                k = wait.index(1) if (priority and s2 != 0 and 1 in wait) else 0
                nxt = (s2, wait[k], wait[:k] + wait[k + 1 :])
            out.append((nxt, mu[s][c_in]))
        for nxt, rate in out:
            trans[(st, nxt)] = trans.get((st, nxt), 0) + rate
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    states = sorted(seen, key=repr)
    pi = gth(trans, states)
    thr = [sum(pi[st] * float(mu[st[0]][c]) for st in states if st[1] == c) for c in (0, 1)]
    number = [sum(pi[st] * ((st[1] == c) + st[2].count(c)) for st in states) for c in (0, 1)]
    rej = [sum(pi[st] for st in states if (st, c) in rejections) for c in (0, 1)]
    p = [sum(pi[st] for st in states if st[0] == k) for k in range(3)]
    returns = sum(pi[a] * float(r) for (a, b), r in trans.items() if a[0] != 0 and b[0] == 0)
    return {
        "throughput_invite": thr[0],
        "throughput_non_invite": thr[1],
        "rejection_invite": rej[0],
        "rejection_non_invite": rej[1],
        "mean_sojourn_invite": number[0] / thr[0],
        "mean_sojourn_non_invite": number[1] / thr[1],
        "mean_sojourn": (number[0] + number[1]) / (thr[0] + thr[1]),
        "p_mode0": p[0],
        "p_mode1": p[1],
        "p_mode2": p[2],
        "mean_return_time": (1 - p[0]) / returns,
    }


@pytest.mark.parametrize("algorithm", list(Algorithm))
@pytest.mark.parametrize("lam", [(Fr(3, 10), Fr(1)), (Fr(3, 5), Fr(2))])
def test_two_flow_against_its_ctmc(algorithm, lam):
    L, H, R = 2, 4, 5
    mu, mu_over = (1, 5), (Fr(3, 2), 6)
    reference = two_flow_chain_reference(lam, mu, mu_over, L, H, R, algorithm is Algorithm.PRIORITY)
    model = SimTwoFlowModel(lam, mu, (L, H, R), algorithm, mu_over)
    assert_within(simulate(model, 50_000, 20, seed=17, quiet=True), reference)


def test_two_flow_notes_a_buffer_that_does_not_bind():
    model = SimTwoFlowModel((1, 1), (2, 2), (2, 4, 9))
    res = simulate(model, 2_000, 2, seed=1, quiet=True)
    assert any("does not bind" in note for note in res.notes)


def test_undefined_cycle_time_is_none_with_a_note():
    # rho_0 = 0.1 and H = 30: overload is never reached in a short run
    model = SimHysteresisModel(Fr(1, 10), Fr(1, 20), B.Constant(1), T.Exponential(1), (10, 30, 40))
    res = simulate(model, 2_000, 3, seed=1, quiet=True)
    assert res["mean_cycle_time"].value is None and res.as_dict()["mean_cycle_time"] == {"estimate": None, "ci95": None}
    assert any("mean_cycle_time" in note for note in res.notes)


def test_progress_bar_on_long_runs_only_unless_quiet(capsys):
    m = SimVacationModel(rate=Fr(1, 2), batch=B.Constant(1), service=T.Exponential(1), capacity=3)
    simulate(m, 100_000, 2, seed=1, quiet=True)
    assert capsys.readouterr().err == ""
    simulate(m, 100_000, 2, seed=1)  # 200 000 customers: a long run
    assert "simulate vacation-finite" in capsys.readouterr().err
    simulate(m, 1_000, 2, seed=1)  # short: no bar
    assert capsys.readouterr().err == ""
