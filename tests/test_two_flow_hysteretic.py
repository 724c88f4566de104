"""M2|M|1|R with hysteretic input-rate control and priority to flow 1 (seed 002) against an independent chain.

Oracle: the chain is rebuilt here from the model's definition in
``qderive.numeric.two_flow_hysteretic`` (its docstring is the specification) with a
different state: ``(mode, waiting flow-1, waiting flow-2, flow in service or None)``,
enumerated by breadth-first search; solved with GTH (``stationary_gth``) at 50 digits or
in float64. Loss is computed the other way, ``1 - admitted rate / offered rate``
(harmless at 50 digits), and the cycle times from the hitting-time linear systems solved
by LU (``mpmath.lu_solve`` / ``numpy.linalg.solve``). A second oracle: with mu_1 = mu_2 the
(mode, n) marginal must be the one-flow chain of ``spec/other-models.md`` B with the summed
rates, built here as a birth-death chain with hysteresis.

Tolerances: 1e-45 relative at 50 digits (GTH is subtraction-free; LU loses a few digits);
1e-10 relative in float64 at L, H, R = 3, 7, 10 (the issue's requirement).
"""

from __future__ import annotations

import json
from collections import deque
from fractions import Fraction as Fr

import mpmath
import numpy as np
import pytest

from qderive.derivations.cli import main
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.chains import stationary_gth
from qderive.numeric.two_flow_hysteretic import TwoFlowHystereticModel, solve_hysteretic
from qderive.symbolic._exact import ParameterError

KEYS = ("p_mode0", "p_mode1", "p_mode2", "loss_flow1", "loss_flow2", "throughput_flow1", "throughput_flow2",
        "mean_number_flow1", "mean_number_flow2", "mean_sojourn_flow1", "mean_sojourn_flow2",
        "mean_normal_time", "mean_return_time", "mean_cycle_time")


def _num(bk, x):
    x = Fr(x)
    return x.numerator / x.denominator if bk.is_float64 else mpmath.mpf(x.numerator) / x.denominator


def oracle_chain(rates, mus, L, H, R):
    """(mode, w1, w2, in service) by BFS; rules written from the docstring of the model module."""
    start = (0, 0, 0, None)
    trans, seen, todo = {}, {start}, deque([start])
    while todo:
        st = todo.popleft()
        s, w1, w2, srv = st
        n = w1 + w2 + (srv is not None)
        out = []
        if n < R:
            for c in (1, 2):
                lam = rates[s][c - 1]
                if lam == 0:
                    continue
                if n + 1 == H and s == 0:
                    s2 = 1
                elif n + 1 == R and s == 1:
                    s2 = 2
                else:
                    s2 = s
                if srv is None:
                    out.append(((s2, 0, 0, c), lam))
                else:
                    out.append(((s2, w1 + (c == 1), w2 + (c == 2), srv), lam))
        if srv is not None:
            m = n - 1
            if s == 1 and m == L - 1:
                s2 = 0
            elif s == 2 and m == H:
                s2 = 1
            else:
                s2 = s
            if w1:  # relative priority: a waiting flow-1 customer goes first
                nxt = (s2, w1 - 1, w2, 1)
            elif w2:
                nxt = (s2, 0, w2 - 1, 2)
            else:
                nxt = (s2, 0, 0, None)
            out.append((nxt, mus[srv - 1]))
        for nxt, r in out:
            trans[(st, nxt)] = trans.get((st, nxt), 0) + r
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return sorted(seen, key=repr), trans


def _hitting(states, trans, inside, bk, p, entry_from):
    """Mean time to leave the set ``inside`` from the stationary entry law into it (LU solve)."""
    o = {s: i for i, s in enumerate(x for x in states if inside(x))}
    m = len(o)
    A = np.zeros((m, m)) if bk.is_float64 else mpmath.matrix(m, m)
    for (a, b), r in trans.items():
        if a in o:
            A[o[a], o[a]] += _num(bk, r)
            if b in o:
                A[o[a], o[b]] -= _num(bk, r)
    h = np.linalg.solve(A, np.ones(m)) if bk.is_float64 else mpmath.lu_solve(A, mpmath.matrix([1] * m))
    entry = {}
    for (a, b), r in trans.items():
        if entry_from(a) and b in o:
            entry[b] = entry.get(b, 0) + p[a] * _num(bk, r)
    return sum(f * h[o[b]] for b, f in entry.items()) / sum(entry.values())


def oracle_measures(rates, mus, L, H, R, bk):
    states, trans = oracle_chain(rates, mus, L, H, R)
    idx = {s: i for i, s in enumerate(states)}
    n = len(states)
    count = lambda st: st[1] + st[2] + (st[3] is not None)  # noqa: E731
    with bk:
        Q = np.zeros((n, n)) if bk.is_float64 else np.full((n, n), mpmath.mpf(0), dtype=object)
        for (a, b), r in trans.items():
            Q[idx[a], idx[b]] += _num(bk, r)
        pi = stationary_gth(Q, bk)
        p = dict(zip(states, pi))
        zero = 0 * pi[0]
        out = {f"p_mode{m}": sum((p[s] for s in states if s[0] == m), zero) for m in range(3)}
        for c in (1, 2):
            admitted = sum((p[s] * _num(bk, rates[s[0]][c - 1]) for s in states if count(s) < R), zero)
            number = sum((p[s] * ((s[c]) + (s[3] == c)) for s in states), zero)
            out[f"loss_flow{c}"] = 1 - admitted / _num(bk, rates[0][c - 1])
            out[f"throughput_flow{c}"] = _num(bk, mus[c - 1]) * sum((p[s] for s in states if s[3] == c), zero)
            out[f"mean_number_flow{c}"] = number
            out[f"mean_sojourn_flow{c}"] = number / admitted
        out["mean_normal_time"] = _hitting(states, trans, lambda s: s[0] == 0, bk, p, lambda s: s[0] != 0)
        out["mean_return_time"] = _hitting(states, trans, lambda s: s[0] != 0, bk, p, lambda s: s[0] == 0)
        out["mean_cycle_time"] = out["mean_normal_time"] + out["mean_return_time"]
    return out, n


def model_measures(model, bk):
    from qderive.derivations.two_flow_hysteretic import evaluate_measures

    sol = solve_hysteretic(model, bk)
    return evaluate_measures(sol), sol


def assert_close(got, ref, rel, keys=KEYS):
    for k in keys:
        assert abs(got[k] - ref[k]) <= rel * abs(ref[k]), (k, got[k], ref[k])


MODELS = [
    # (rates by mode, service rates, L, H, R)
    (((Fr(3, 5), Fr(2, 5)), (Fr(3, 10), Fr(1, 5)), (0, 0)), (1, 1), 2, 4, 6),  # seed 002: one mu, discard 0
    (((Fr(3, 2), 1), (Fr(1, 2), Fr(1, 2)), (Fr(1, 4), 0)), (1, 2), 3, 6, 9),  # unequal mu, discard flow 1 only
    (((2, Fr(1, 3)), (1, Fr(1, 3)), (Fr(1, 2), Fr(1, 5))), (Fr(3, 2), Fr(3, 2)), 1, 2, 3),  # smallest thresholds
]


@pytest.mark.parametrize("spec", MODELS)
def test_every_measure_at_50_digits(spec):
    rates, mus, L, H, R = spec
    bk = mp_backend(50)
    ref, n = oracle_measures(rates, mus, L, H, R, bk)
    got, sol = model_measures(TwoFlowHystereticModel(rates, mus, L, H, R), bk)
    assert sol.space.size == n
    with bk:
        assert_close(got, ref, mpmath.mpf(10) ** -45)


def test_float64_at_3_7_10():
    rates = ((Fr(3, 5), Fr(1, 2)), (Fr(3, 10), Fr(1, 4)), (Fr(1, 10), 0))
    ref, _ = oracle_measures(rates, (1, Fr(4, 5)), 3, 7, 10, FLOAT64)
    got, _ = model_measures(TwoFlowHystereticModel(rates, (1, Fr(4, 5)), 3, 7, 10), FLOAT64)
    assert_close(got, ref, 1e-10)


def test_equal_service_lumps_to_the_one_flow_hysteretic_chain():
    # spec B chain on (mode, n) with Lambda_s = lambda_1^(s) + lambda_2^(s), built here directly
    rates, mus, L, H, R = MODELS[0]
    lam = [Fr(a) + Fr(b) for a, b in rates]
    states = [(0, n) for n in range(H)] + [(1, n) for n in range(L, R)] + [(2, n) for n in range(H + 1, R + 1)]
    idx = {s: i for i, s in enumerate(states)}
    bk = mp_backend(50)
    with bk:
        Q = np.full((len(states), len(states)), mpmath.mpf(0), dtype=object)
        for s, n in states:
            if n < R and lam[s]:
                up = (1 if s == 0 and n + 1 == H else 2 if s == 1 and n + 1 == R else s, n + 1)
                Q[idx[(s, n)], idx[up]] += _num(bk, lam[s])
            if n:
                down = (0 if s == 1 and n - 1 == L - 1 else 1 if s == 2 and n - 1 == H else s, n - 1)
                Q[idx[(s, n)], idx[down]] += _num(bk, mus[0])
        pi = stationary_gth(Q, bk)
        got, _ = model_measures(TwoFlowHystereticModel(rates, mus, L, H, R), bk)
        for m in range(3):
            ref = mpmath.fsum(pi[i] for i, st in enumerate(states) if st[0] == m)
            assert abs(got[f"p_mode{m}"] - ref) <= mpmath.mpf(10) ** -45 * ref


def test_renewal_and_priority():
    rates, mus, L, H, R = MODELS[1]
    bk = mp_backend(50)
    got, sol = model_measures(TwoFlowHystereticModel(rates, mus, L, H, R), bk)
    with bk:
        nu = sol.switch_rate()
        assert abs(got["mean_cycle_time"] * nu - 1) < mpmath.mpf(10) ** -45
        assert abs(got["mean_return_time"] * nu / (got["p_mode1"] + got["p_mode2"]) - 1) < mpmath.mpf(10) ** -45
    # relative priority: with identical flows (same rates and service) flow 1 waits less
    same = (((1, 1), (Fr(1, 2), Fr(1, 2)), (0, 0)), (Fr(5, 2), Fr(5, 2)), 2, 4, 7)
    g, _ = model_measures(TwoFlowHystereticModel(*same), FLOAT64)
    assert g["mean_sojourn_flow1"] < g["mean_sojourn_flow2"]
    assert g["loss_flow1"] == pytest.approx(g["loss_flow2"], rel=1e-13)  # losses depend on the count only


def test_bad_parameters_are_refused():
    ok = ((1, 1), (Fr(1, 2), Fr(1, 2)), (0, 0))
    with pytest.raises(ParameterError, match="L < H < R"):
        TwoFlowHystereticModel(ok, 1, 3, 3, 5)
    with pytest.raises(ParameterError, match="discard <= overload <= normal"):
        TwoFlowHystereticModel(((1, 1), (2, 1), (0, 0)), 1, 1, 3, 5)
    with pytest.raises(ParameterError, match="normal rate of flow 2"):
        TwoFlowHystereticModel(((1, 0), (0, 0), (0, 0)), 1, 1, 3, 5)
    with pytest.raises(ParameterError, match="float"):
        TwoFlowHystereticModel(ok, 0.5, 1, 3, 5)
    with pytest.raises(ParameterError, match="> 0"):
        TwoFlowHystereticModel(ok, (1, 0), 1, 3, 5)


def test_derivation_verifies():
    from qderive.derivations.two_flow_hysteretic import build_derivation

    d = build_derivation()
    results = d.verify(20)
    assert all(r.passed for r in results), [r.as_dict() for r in results if not r.passed]
    assert "Lambda" in d.markdown() or "\\Lambda" in d.markdown()


# --------------------------------------------------------------------------- command line


def run_cli(capsys, *args):
    code = main(["eval", "two-flow-hysteretic", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_values(capsys):
    code, out, _ = run_cli(capsys, "--rates-normal", "1.5,1", "--rates-overload", "0.5,0.5", "--rates-discard",
                           "0.25,0", "--service-rate", "1,2", "--thresholds", "3,6,9", "--json")
    assert code == 0
    payload = json.loads(out)
    assert set(KEYS) <= set(payload["measures"])
    ref, _ = oracle_measures(*MODELS[1][:2], 3, 6, 9, FLOAT64)
    assert_close(payload["measures"], ref, 1e-11)


def test_cli_digits(capsys):
    code, out, _ = run_cli(capsys, "--rates-normal", "0.6,0.4", "--rates-overload", "0.3,0.2", "--service-rate",
                           "1", "--thresholds", "2,4,6", "--digits", "40", "--json")
    assert code == 0
    measures = json.loads(out)["measures"]
    ref, _ = oracle_measures(*MODELS[0][:2], 2, 4, 6, mp_backend(50))
    with mp_backend(50):
        for k in KEYS:
            assert abs(mpmath.mpf(measures[k]) - ref[k]) <= mpmath.mpf(10) ** -38 * abs(ref[k]), k


@pytest.mark.parametrize("args", [
    ["--rates-normal", "0.6,0.4", "--rates-overload", "0.7,0.2", "--service-rate", "1", "--thresholds", "2,4,6"],
    ["--rates-normal", "0.6,0.4", "--rates-overload", "0.3,0.2", "--service-rate", "1", "--thresholds", "2,6,6"],
    ["--rates-normal", "0.6", "--rates-overload", "0.3,0.2", "--service-rate", "1", "--thresholds", "2,4,6"],
    ["--rates-normal", "0.6,0.4", "--rates-overload", "0.3,0.2", "--service-rate", "1,2,3", "--thresholds", "2,4,6"],
    ["--rates-normal", "0.6,0.4", "--rates-overload", "0.3,0.2", "--service-rate", "0", "--thresholds", "2,4,6"],
    ["--rates-normal", "0.6,0.4", "--rates-overload", "0.3,0.2", "--thresholds", "2,4,6"],  # missing option
])
def test_cli_bad_input_exits_2(capsys, args):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_guide_example_and_hand_check():
    # docs/guides/two-flow.md section 2; E tau_0 by hand: with Lambda_0 = mu = 1 the count is a symmetric
    # walk, climbing k -> k+1 takes (k+1)/Lambda_0 on average, so from L-1 = 1 to H = 4: 2 + 3 + 4 = 9
    rates = ((Fr(3, 5), Fr(2, 5)), (Fr(3, 10), Fr(1, 5)), (0, 0))
    bk = mp_backend(30)
    got, _ = model_measures(TwoFlowHystereticModel(rates, 1, 2, 4, 6), bk)
    with bk:
        assert abs(got["mean_normal_time"] - 9) < mpmath.mpf(10) ** -25
    expected = {"p_mode0": 0.624277, "p_mode1": 0.33526, "p_mode2": 0.0404624, "loss_flow1": 0.208092,
                "loss_flow2": 0.208092, "mean_sojourn_flow1": 2.11683, "mean_sojourn_flow2": 3.31198,
                "mean_return_time": 5.41667}
    ref, _ = oracle_measures(rates, (1, 1), 2, 4, 6, FLOAT64)
    for key, value in expected.items():
        assert float(ref[key]) == pytest.approx(value, rel=6e-6), key
