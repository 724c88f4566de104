"""Waiting and sojourn times of the Markovian controlled models (:mod:`qderive.numeric.engines.ctmc_wait`)
against results computed other ways.

* M|M|1 hysteresis that reduces to M/M/1/R (lambda_1 = lambda_0, H = R - 1: the overload mode
  changes nothing, the discard mode is the full system): the accepted customer's wait is the Erlang
  mixture sum_n p_n Erlang(n, mu) with p_n = rho^n / sum_{k<R} rho^k, tails by mpmath.gammainc;
* the general M|M|1 hysteresis: tails against the same Erlang mixture over the arrival law
  pi(n, s) lambda_s of the oracle chain (:func:`qderive.numeric.oracles.hysteretic.mm1`), the mean
  sojourn against Little's law with the oracle's mean number and the engine's throughput;
* two-flow, FIFO and priority: the mean sojourn against the engine's Little value (C.4), and the
  tails of the wait and the sojourn against alpha exp(Q t) 1 of the tagged chain built by the
  oracle (:func:`qderive.numeric.oracles.two_flow.two_flow_moves`, tuples with a tagged flag, from
  the definition) with mpmath.expm at 40 digits;
* two-flow-hysteretic (relative priority to flow 1): the tails of the wait and the sojourn against
  alpha exp(Q t) 1 of the tagged chain built from the oracle's tuple moves
  (:func:`qderive.numeric.oracles.two_flow.hysteretic_moves`), mpmath.expm at 40 digits; the mean
  sojourn against the per-flow Little values mixed by admitted throughput (float64 and 30 digits);
  float64 against 30 digits; bad options;
* float64 against 30 digits; the quantile against its own tail; the generic ``evaluate`` path.

The simulators (numeric/simulation/two_flow.py, hysteretic.py) accumulate only sums of sojourns
(no individual waits), so tails cannot be checked by simulation; the means are covered by Little.
"""

from fractions import Fraction as F

import mpmath
import pytest
from qderive.numeric.backend import mp_context
from qderive.numeric.engines.ctmc_wait import (
    mm1_hysteretic_laws,
    tagged_two_flow_hysteretic,
    two_flow_hysteretic_laws,
    two_flow_laws,
)
from qderive.numeric.response import moments, quantiles, tails
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.hysteretic import MM1HystereticModel
from qderive.symbolic.models.two_flow import (
    Algorithm,
    TwoFlowHystereticModel,
    TwoFlowModel,
)

TIMES = [F(0), F(1, 2), F(3), F(20)]


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


def _rel(a, b):
    a, b = _mp(a), _mp(b)
    return abs(a - b) / abs(b) if b else abs(a)


def _erlang_mixture(p, mu, t):
    """sum_n p_n P(Erlang(n, mu) > t) = sum_n p_n Q(n, mu t) (regularized upper gamma; Q(0, .) = 0)."""
    x = mpmath.mpf(mu.numerator) / mu.denominator * mpmath.mpf(t.numerator) / t.denominator
    return mpmath.fsum(pn * (mpmath.gammainc(n, x, regularized=True) if n else 0) for n, pn in enumerate(p))


# --------------------------------------------------------------------------------------
# M|M|1 hysteresis
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("lam,mu,L,H,R", [(F(4, 5), F(1), 2, 4, 5), (F(3, 2), F(1), 1, 2, 3),
                                          (F(1, 3), F(2), 3, 6, 7)])
def test_mm1_hysteretic_reduces_to_mm1k(lam, mu, L, H, R):
    model = MM1HystereticModel(lam, lam, mu, L, H, R)
    assert H == R - 1  # the hysteresis does not bind: M/M/1/R
    laws = mm1_hysteretic_laws(model)
    with mpmath.workdps(40):
        rho = mpmath.mpf(lam.numerator) / lam.denominator / (mpmath.mpf(mu.numerator) / mu.denominator)
        w = [rho ** n for n in range(R)]
        p = [x / mpmath.fsum(w) for x in w]
        wait = [_erlang_mixture(p, mu, t) for t in TIMES]
        soj = [_erlang_mixture([0] + p, mu, t) for t in TIMES]
        mean_wait = mpmath.fsum(n * pn for n, pn in enumerate(p)) / (mpmath.mpf(mu.numerator) / mu.denominator)
        got, confirmed, working, _ = tails(laws["wait"], TIMES, 30)
        assert confirmed == 30 and working >= 35
        for g, e in zip(got, wait):
            assert _rel(g, e) < mpmath.mpf(10) ** -29
        got, _, _, _ = tails(laws["sojourn"], TIMES, 30, option="sojourn_tail")
        for g, e in zip(got, soj):
            assert _rel(g, e) < mpmath.mpf(10) ** -29
        f64, *_ = tails(laws["wait"], TIMES, None)
        for g, e in zip(f64, wait):
            assert _rel(g, e) < 1e-13
        (m1,), _ = moments(laws["wait"], 1, 30)
        assert _rel(m1, mean_wait) < mpmath.mpf(10) ** -29
        assert _rel(laws["wait"].p_zero(mp_context(40)), p[0]) < mpmath.mpf(10) ** -35


def _mm1_arrival_law(model, dps):
    """p_n = P(an admitted customer finds n) from the oracle chain: sum_s pi(n, s) lambda_s, normalised."""
    from qderive.numeric.oracles.hysteretic import mm1

    ctx = mp_context(dps)
    with ctx:
        o = mm1(model, ctx)
        rates = model.rates()
        p = [mpmath.mpf(0)] * (model.R + 1)
        for (n, s), x in o.pi.items():
            p[n] += x * ctx.num(rates[s])
        total = mpmath.fsum(p)
        mean_n = mpmath.fsum(n * x for (n, s), x in o.pi.items())
        return [x / total for x in p], mean_n


@pytest.mark.parametrize("model", [MM1HystereticModel.example(), MM1HystereticModel(F(2), F(1, 2), F(1), 2, 5, 8),
                                   MM1HystereticModel(F(1), F(0), F(3, 2), 1, 3, 4)])
def test_mm1_hysteretic_against_oracle(model):
    laws = mm1_hysteretic_laws(model)
    with mpmath.workdps(40):
        p, mean_n = _mm1_arrival_law(model, 45)
        mu = F(model.service_rate)
        times = TIMES + [F(150)]
        expected = [_erlang_mixture(p, mu, t) for t in times]
        got, *_ = tails(laws["wait"], times, 30)
        for g, e in zip(got, expected):
            assert _rel(g, e) < mpmath.mpf(10) ** -29
        # Little: E sojourn = E N / throughput (the engine's throughput, 30 digits)
        thr = model.evaluate(digits=30).as_dict()["throughput"]
        (s1,), _ = moments(laws["sojourn"], 1, 30)
        assert _rel(s1, mean_n / mpmath.mpf(thr)) < mpmath.mpf(10) ** -28
        # float64 against 30 digits, including a tail far below the float64 epsilon
        f64, *_ = tails(laws["wait"], times, None)
        for g, e in zip(f64, got):
            assert _rel(g, e) < 1e-13
        m64, _ = moments(laws["wait"], 3, None)
        m30, _ = moments(laws["wait"], 3, 30)
        for a, b in zip(m64, m30):
            assert _rel(a, b) < 1e-13


# --------------------------------------------------------------------------------------
# two-flow
# --------------------------------------------------------------------------------------


TWO_FLOW = [TwoFlowModel(F(3, 5), 2, 1, 5, 1, 2, 3, Algorithm.FIFO),
            TwoFlowModel(F(3, 5), 2, 1, 5, 1, 2, 3, Algorithm.PRIORITY),
            TwoFlowModel(F(3, 2), F(5, 2), 2, 3, 1, 2, 4, Algorithm.PRIORITY, 1, F(5, 2)),
            TwoFlowModel(F(3, 2), F(5, 2), 2, 3, 1, 3, 3, Algorithm.FIFO)]


def _oracle_tagged(model, wait: bool):
    """(alpha, Q, atom) of the tagged chain of the oracle (tuples (class, tagged), from the definition):
    entries pi(x) lambda_c over the accepting states, absorption at the tagged message's departure (sojourn)
    or when it enters service (wait). Exact rationals."""
    from qderive.numeric.oracles.ctmc import build
    from qderive.numeric.oracles.two_flow import (
        DONE,
        START,
        two_flow_chain,
        two_flow_moves,
    )
    from qderive.symbolic.models.two_flow import Mode

    chain = two_flow_chain(model)
    pi = chain.stationary_exact()
    lam = (model.lambda_invite, model.lambda_non_invite)
    entries = {}
    for s, x in zip(chain.states, pi):
        mode, seq = s
        for c in (1, 2):
            if (mode == Mode.NORMAL or (mode == Mode.PARTIAL and c == 2)) and len(seq) < model.R:
                new = (Mode.BLOCKING.value if len(seq) + 1 > model.H else mode, seq + ((c, True),))
                entries[new] = entries.get(new, 0) + x * lam[c - 1]

    def served(s):
        return s not in (START, DONE) and s[1][0][1]

    def step(s):
        if s == START:
            yield from entries.items()
        elif not (wait and served(s)):
            yield from two_flow_moves(model, s)

    return _absorption_form(build(START, step), entries, lambda s: s in (START, DONE) or (wait and served(s)))


def _absorption_form(tc, entries, absorbing):
    """(alpha, sub-generator Q over the transient states, atom at absorption) of a built tagged chain: the entry
    weights normalised, every rate out of a transient state on the diagonal, into a transient state off it."""
    transient = [i for i, s in enumerate(tc.states) if not absorbing(s)]
    pos = {i: k for k, i in enumerate(transient)}
    total = sum(entries.values())
    alpha, atom = [0] * len(transient), 0
    for s, w in entries.items():
        i = tc.index[s]
        if i in pos:
            alpha[pos[i]] += w / total
        else:
            atom += w / total
    Q = [[0] * len(transient) for _ in transient]
    for (i, j), r in tc.rates.items():
        if i in pos:
            Q[pos[i]][pos[i]] -= r
            if j in pos:
                Q[pos[i]][pos[j]] += r
    return alpha, Q, atom


def _expm_steps(alpha, Q, h, times):
    """alpha exp(Q t) 1 at multiples t of h: one mpmath.expm(Q h), then vector-matrix products."""
    A = mpmath.matrix([[mpmath.mpf(v.numerator) / v.denominator for v in row] for row in Q])
    E = mpmath.expm(A * (mpmath.mpf(h.numerator) / h.denominator))
    v = mpmath.matrix([[mpmath.mpf(F(x).numerator) / F(x).denominator for x in alpha]])
    out, k = [], 0
    for t in times:
        steps = t / h
        assert steps.denominator == 1
        while k < steps:
            v, k = v * E, k + 1
        out.append(mpmath.fsum(v))
    return out


# priority-124 (the same comparison as priority-123, about 18 s on a busy machine) and fifo-123 (the FIFO chain of
# fifo-133, with priority-123's rates and thresholds: 1.6 s) run in the full suite only; the loop keeps one model of
# each algorithm, priority-123 and fifo-133
@pytest.mark.parametrize("model", [pytest.param(m, marks=pytest.mark.slow)
                                   if (m.algorithm, m.R) == (Algorithm.PRIORITY, 4) or m is TWO_FLOW[0] else m
                                   for m in TWO_FLOW],
                         ids=lambda m: f"{m.algorithm.value}-{m.L}{m.H}{m.R}")
def test_two_flow_tails_against_oracle_expm(model):
    laws = two_flow_laws(model)
    times = [F(0), F(1, 2), F(2), F(6)]
    with mpmath.workdps(40):
        for kind in ("wait", "sojourn"):
            alpha, Q, atom = _oracle_tagged(model, kind == "wait")
            expected = _expm_steps(alpha, Q, F(1, 2), times)  # one expm: 3x faster
            got, confirmed, _, _ = tails(laws[kind], times, 30, option=f"{kind}_tail")
            for g, e in zip(got, expected):
                assert _rel(g, e) < mpmath.mpf(10) ** -28, (kind, g, e)
            assert _rel(laws[kind].p_zero(mp_context(40)) if kind == "wait" else 0, atom) < mpmath.mpf(10) ** -35
            f64, *_ = tails(laws[kind], times, None, option=f"{kind}_tail")
            for g, e in zip(f64, expected):
                assert _rel(g, e) < 1e-13


@pytest.mark.parametrize("model", TWO_FLOW + [TwoFlowModel.example(),
                                              TwoFlowModel(F(3, 5), 2, 1, 5, 3, 7, 10, Algorithm.FIFO)],
                         ids=lambda m: f"{m.algorithm.value}-{m.L}{m.H}{m.R}")
def test_two_flow_mean_sojourn_little(model):
    laws = two_flow_laws(model)
    (s1, s2), _ = moments(laws["sojourn"], 2, None)
    little = model.evaluate().as_dict()["mean_sojourn"]
    assert _rel(s1, little) < 1e-12
    (w1,), _ = moments(laws["wait"], 1, None)
    assert 0 < w1 < s1 and s2 > s1 ** 2


@pytest.mark.parametrize("model", TWO_FLOW[1:3], ids=lambda m: f"{m.algorithm.value}-{m.L}{m.H}{m.R}")
def test_two_flow_mean_sojourn_little_30_digits(model):
    laws = two_flow_laws(model)
    (s1,), _ = moments(laws["sojourn"], 1, 30)
    little = model.evaluate(digits=30).as_dict()["mean_sojourn"]
    assert _rel(s1, little) < mpmath.mpf(10) ** -28


def test_two_flow_priority_differs_from_fifo():
    """Priority lets class 2 overtake in modes 1 and 2: the wait law changes (the tagged chain tracks it)."""
    a, b = (two_flow_laws(TwoFlowModel(F(3, 5), 2, 1, 5, 2, 4, 5, alg)) for alg in Algorithm)
    ta, *_ = tails(a["wait"], [F(2)], None)
    tb, *_ = tails(b["wait"], [F(2)], None)
    assert abs(ta[0] - tb[0]) > 1e-3


# --------------------------------------------------------------------------------------
# quantiles, float64 against 30 digits, the evaluate path
# --------------------------------------------------------------------------------------


# two-flow (1.4 s) runs in the full suite. loop sibling: mm1-hyst (the same quantile search of numeric/response.py on
# a chain's law) and test_wait_ctmc.py::test_two_flow_tails_against_oracle_expm[priority-123] (a two-flow law's tails
# at 30 digits against the oracle)
@pytest.mark.parametrize("laws", [lambda: mm1_hysteretic_laws(MM1HystereticModel.example()),
                                  pytest.param(lambda: two_flow_laws(TwoFlowModel(F(3, 5), 2, 1, 5, 2, 4, 5,
                                                                                  Algorithm.PRIORITY)),
                                               marks=pytest.mark.slow)],
                         ids=["mm1-hyst", "two-flow"])
def test_quantiles_invert_the_tails(laws):
    law = laws()["wait"]
    mean = float(law.moment_values(1, None)[0])
    qs = [F(9, 10), F(999, 1000), F(1) - F(1, 10**12)]
    q64, _, _ = quantiles(law, qs, None, mean)
    q30, confirmed, _ = quantiles(law, qs, 30, mean)
    for q, a, b in zip(qs, q64, q30):
        assert _rel(a, b) < 1e-11
        with mpmath.workdps(40):
            t = F(int(b.man)) * F(2) ** int(b.exp)
            tail, *_ = tails(law, [t], 30)
            assert _rel(tail[0], mpmath.mpf(1) - mpmath.mpf(q.numerator) / q.denominator) < mpmath.mpf(10) ** -25


@pytest.mark.slow  # 5 s
def test_evaluate_response_path():
    model = TwoFlowModel.example()
    rec = model.evaluate(wait_tail=["1", "5"], wait_quantile=["0.99"], sojourn_moments=2)
    out = rec.as_dict()
    assert 0 < out["wait_tail"]["5"] < out["wait_tail"]["1"] < 1
    assert _rel(out["sojourn_moments"][0], out["mean_sojourn"]) < 1e-12
    # the 30-digit tail at t = 1 (the uniformization's terms grow with t: at t = 5 it costs 6 s of mpmath)
    rec30 = model.evaluate(digits=30, wait_tail=["1"], sojourn_moments=1)
    d = rec30.as_dict()
    assert _rel(d["wait_tail"]["1"], out["wait_tail"]["1"]) < 1e-13
    hyst = MM1HystereticModel.example()
    deep = hyst.evaluate(wait_tail=["400"]).as_dict()["wait_tail"]["400"]
    deep30 = hyst.evaluate(digits=30, wait_tail=["400"]).as_dict()["wait_tail"]["400"]
    assert 0 < deep < 1e-150 and _rel(deep, deep30) < 1e-13  # far below the float64 epsilon, relative accuracy
    rec = hyst.evaluate(wait_tail=["1500"])  # below 1e-290: recomputed at 15 digits, with a note
    assert any("below 1e-290" in n for n in rec.notes)
    assert 0 < rec.as_dict()["wait_tail"]["1500"] < 1e-300


# --------------------------------------------------------------------------------------
# two-flow-hysteretic (seed 002): relative priority to flow 1
# --------------------------------------------------------------------------------------

HYST = [TwoFlowHystereticModel(F(1, 2), F(1, 4), F(1, 4), F(1, 8), 2, 4, 6, service_rates=1),
        TwoFlowHystereticModel(F(3, 2), 1, F(1, 2), F(1, 2), 2, 3, 5, service_rates=(1, 2),
                               lambda1_discard=F(1, 4)),
        TwoFlowHystereticModel(2, F(3, 2), F(1, 2), 1, 1, 3, 4, service_rates=(F(3, 2), F(1, 2)),
                               lambda2_discard=F(1, 2))]


def _oracle_tagged_hysteretic(model, wait: bool):
    """(alpha, Q, atom) of the tagged chain from the oracle's tuple moves
    (:func:`qderive.numeric.oracles.two_flow.hysteretic_moves`: waiting customers as tags per flow, FIFO within a
    flow, flow 1 first), entries pi(x) lambda_c^(s) over the admitting states of both flows, exact rationals;
    absorption at the tagged customer's departure (sojourn) or when it enters service (wait)."""
    from qderive.numeric.oracles.ctmc import build
    from qderive.numeric.oracles.two_flow import (
        DONE,
        START,
        hysteretic_chain,
        hysteretic_moves,
    )
    from qderive.symbolic.models.two_flow import InputMode

    chain = hysteretic_chain(model)
    pi = chain.stationary_exact()
    entries = {}
    for s, x in zip(chain.states, pi):
        mode, w1, w2, srv = s
        n = len(w1) + len(w2) + (srv is not None)
        for c in (1, 2):
            lam = model.rate(InputMode(mode), c)
            if n >= model.R or lam == 0:
                continue
            s2 = 1 if (n + 1 == model.H and mode == 0) else 2 if (n + 1 == model.R and mode == 1) else mode
            t = (s2, (), (), (c, True)) if srv is None else \
                (s2, w1 + ((True,) if c == 1 else ()), w2 + ((True,) if c == 2 else ()), srv)
            entries[t] = entries.get(t, 0) + x * lam

    def served(s):
        return s not in (START, DONE) and s[3] is not None and s[3][1]

    def step(s):
        if s == START:
            yield from entries.items()
        elif not (wait and served(s)):
            yield from hysteretic_moves(model, s)

    return _absorption_form(build(START, step), entries, lambda s: s in (START, DONE) or (wait and served(s)))


@pytest.mark.slow  # 7 s at the largest case
@pytest.mark.parametrize("model", HYST[2:], ids=lambda m: f"{m.L}{m.H}{m.R}")
def test_two_flow_hysteretic_tails_against_oracle_expm(model):
    # (L,H,R) = 2,3,5 (136 transient states) agrees too but its 40-digit expm takes 49 s: HYST[1] is covered by
    # the Little and float64-versus-30-digit tests
    laws = two_flow_hysteretic_laws(model)
    times = [F(0), F(1, 2), F(2), F(7)]
    with mpmath.workdps(40):
        for kind in ("wait", "sojourn"):
            alpha, Q, atom = _oracle_tagged_hysteretic(model, kind == "wait")
            expected = _expm_steps(alpha, Q, F(1, 2), times)
            got, confirmed, _, _ = tails(laws[kind], times, 30, option=f"{kind}_tail")
            assert confirmed == 30
            for g, e in zip(got, expected):
                assert _rel(g, e) < mpmath.mpf(10) ** -28, (kind, g, e)
            if kind == "wait":
                assert _rel(laws[kind].p_zero(mp_context(40)), atom) < mpmath.mpf(10) ** -35
            f64, *_ = tails(laws[kind], times, None, option=f"{kind}_tail")
            for g, e in zip(f64, expected):
                assert _rel(g, e) < 1e-13


@pytest.mark.parametrize("model", HYST + [TwoFlowHystereticModel.example()], ids=lambda m: f"{m.L}{m.H}{m.R}")
def test_two_flow_hysteretic_mean_sojourn_little(model):
    """E sojourn of an admitted customer = the per-flow Little values mixed by admitted throughput."""
    laws = two_flow_hysteretic_laws(model)
    d = model.evaluate().as_dict()
    a1, a2 = d["throughput_flow1"], d["throughput_flow2"]
    little = (a1 * d["mean_sojourn_flow1"] + a2 * d["mean_sojourn_flow2"]) / (a1 + a2)
    (s1, s2), _ = moments(laws["sojourn"], 2, None)
    assert _rel(s1, little) < 1e-12
    (w1,), _ = moments(laws["wait"], 1, None)
    assert 0 < w1 < s1 and s2 > s1 ** 2
    d30 = model.evaluate(digits=30).as_dict()
    with mpmath.workdps(40):
        a1, a2 = mpmath.mpf(d30["throughput_flow1"]), mpmath.mpf(d30["throughput_flow2"])
        little30 = (a1 * mpmath.mpf(d30["mean_sojourn_flow1"]) + a2 * mpmath.mpf(d30["mean_sojourn_flow2"])) / (a1 + a2)
        (m1,), _ = moments(laws["sojourn"], 1, 30)
        assert _rel(m1, little30) < mpmath.mpf(10) ** -28


@pytest.mark.slow  # 10 s
def test_two_flow_hysteretic_float64_against_30_digits():
    model = TwoFlowHystereticModel.example()
    laws = two_flow_hysteretic_laws(model)
    chain = tagged_two_flow_hysteretic(model)
    times = [F(0), F(1), F(10), F(120)]
    for kind in ("wait", "sojourn"):
        t64, *_ = tails(laws[kind], times, None, option=f"{kind}_tail")
        t30, *_ = tails(laws[kind], times, 30, option=f"{kind}_tail")
        for t, a, b in zip(times, t64, t30):  # the documented bound O((n + Lambda t) eps)
            tol = max(1e-13, (chain.size + float(chain.rate * t)) * 2.3e-16)
            assert _rel(a, b) < tol, (kind, t, a, b)
        m64, _ = moments(laws[kind], 3, None)
        m30, _ = moments(laws[kind], 3, 30)
        for a, b in zip(m64, m30):
            assert _rel(a, b) < 1e-13
    assert 0 < t30[-1] < 1e-15  # a tail below the float64 epsilon, still to relative accuracy
    out = model.evaluate(wait_tail=["10"], wait_quantile=["0.99"], sojourn_moments=1).as_dict()
    assert _rel(out["wait_tail"]["10"], tails(laws["wait"], [F(10)], None)[0][0]) < 1e-15
    assert _rel(out["sojourn_moments"][0], laws["sojourn"].moment_values(1, None)[0]) < 1e-15
    q = F(int(mpmath.mpf(out["wait_quantile"]["0.99"]).man)) * F(2) ** int(mpmath.mpf(out["wait_quantile"]["0.99"]).exp)
    assert abs(tails(laws["wait"], [q], None)[0][0] - 0.01) < 1e-10


def test_two_flow_hysteretic_priority_to_flow1():
    """A flow-1-dominated load with a slow flow 2 (many overtakings of a waiting flow-2 customer): the tagged
    chain, p counted within the own flow, still matches the per-flow Little values mixed by throughput."""
    m = TwoFlowHystereticModel(3, F(1, 10), 1, F(1, 10), 2, 4, 7, service_rates=(4, F(1, 2)))
    laws = two_flow_hysteretic_laws(m)
    d = m.evaluate().as_dict()
    a1, a2 = d["throughput_flow1"], d["throughput_flow2"]
    little = (a1 * d["mean_sojourn_flow1"] + a2 * d["mean_sojourn_flow2"]) / (a1 + a2)
    assert _rel(laws["sojourn"].moment_values(1, None)[0], little) < 1e-12


@pytest.mark.parametrize("options", [{"wait_tail": ["-1"]}, {"wait_tail": ["1/0"]}, {"wait_tail": ["1e9"]},
                                     {"wait_quantile": ["1"]}, {"wait_quantile": ["0x1p-3"]},
                                     {"sojourn_moments": 9}, {"sojourn_tail": ["nan"]},
                                     {"wait_moments": "2; rm -rf /"}])
def test_two_flow_hysteretic_bad_options(options):
    with pytest.raises(ParameterError):
        TwoFlowHystereticModel.example().evaluate(**options)
