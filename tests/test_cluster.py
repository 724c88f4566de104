"""Two-level cluster with k copies (seed 004): closed forms vs mpmath.quad, the policy, faults, optimum, CLI.

The oracle is written here from the model's definition: the waiting-time law
F_i(w) = 1 - rho_i e^{-theta_i w} and its density, integrated with mpmath.quad at 50 working
digits (rho_i = k Lambda v_i / n_i and theta_i = (1 - rho_i)/v_i recomputed here from the
parameters). The M/M/1 waiting-time law itself is checked against the node's CTMC in the
derivation (step (W)).
"""

from __future__ import annotations

import csv
import json
import math
from fractions import Fraction as F

import mpmath
import pytest

from conftest import cli
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.cluster import optimize, paper_discretised
from qderive.symbolic import limits
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.models.redundant_cluster import FailureModel, OptimizeCopiesRequest, RedundantCluster


def mpq(q):
    q = F(q)
    with mpmath.workdps(200):
        return mpmath.mpf(q.numerator) / q.denominator


def rel(a, b):
    with mpmath.workdps(200):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return abs(a - b) / abs(b)


def params(rate, k, nodes, v, t0):
    """rho_i = k Lambda v_i/n_i, theta_i = (1 - rho_i)/v_i recomputed from the definition (exact)."""
    rho = [F(k) * F(rate) * F(vi) / ni for vi, ni in zip(v, nodes)]
    theta = [(1 - r) / F(vi) for r, vi in zip(rho, v)]
    return rho, theta


def quad_late(rate, k, nodes, v, t0, tilt=(0, 0)):
    """P(W1 + W2 > t0) (with tilt: E[1{W1+W2 <= t0} e^{-a1 W1 - a2 W2}]) by quadrature. Call in workdps."""
    rho, theta = params(rate, k, nodes, v, t0)
    r1, r2, t1, t2, T = mpq(rho[0]), mpq(rho[1]), mpq(theta[0]), mpq(theta[1]), mpq(t0)
    if tilt == (0, 0):
        surv2 = lambda y: r2 * mpmath.exp(-t2 * y)  # noqa: E731  P(W2 > y), y >= 0
        # P(W1 + W2 > T) = P(W1 = 0) P(W2 > T) + int_0^T f1(w) P(W2 > T - w) dw + P(W1 > T)
        g = lambda w: r1 * t1 * mpmath.exp(-t1 * w) * surv2(T - w)  # noqa: E731
        # mpmath.quad's tolerance is absolute: scale the integrand to O(1) so a tail of 1e-46 keeps its
        # relative digits, and split [0, T] where the integrand falls by many orders across it
        scale = max(g(0), g(T))
        pieces = mpmath.linspace(0, T, 1 + max(1, int(T * (t1 + t2) / 4)))
        return (1 - r1) * surv2(T) + scale * mpmath.quad(lambda w: g(w) / scale, pieces) + r1 * mpmath.exp(-t1 * T)
    a1, a2 = mpq(tilt[0]), mpq(tilt[1])
    # 2-D: atoms and densities of (W1, W2), weighted by e^{-a1 W1 - a2 W2}, over W1 + W2 <= T
    f1 = lambda w: r1 * t1 * mpmath.exp(-(t1 + a1) * w)  # noqa: E731
    f2 = lambda y: r2 * t2 * mpmath.exp(-(t2 + a2) * y)  # noqa: E731
    return ((1 - r1) * (1 - r2) + (1 - r1) * mpmath.quad(f2, [0, T]) + (1 - r2) * mpmath.quad(f1, [0, T])
            + mpmath.quad(lambda w: f1(w) * mpmath.quad(f2, [0, T - w]), [0, T]))


V = F(3, 10)
CASES = {
    # the paper's example: n = m, v1 = v2 -> theta1 = theta2 exactly (the Erlang-2 branch)
    "theta1 = theta2": dict(rate=3, k=2, nodes=(10, 10), v=(V, V), t0=2 * V),
    # theta2 - theta1 = +-1e-12 and 1e-6 (1/v2 = 1/v1 + eps at n = m)
    "1e-12 above": dict(rate=3, k=2, nodes=(10, 10), v=(V, V / (1 + V * F(1, 10**12))), t0=2 * V),
    "1e-12 below": dict(rate=3, k=2, nodes=(10, 10), v=(V, V / (1 - V * F(1, 10**12))), t0=2 * V),
    "1e-6 above": dict(rate=3, k=2, nodes=(10, 10), v=(V, V / (1 + V * F(1, 10**6))), t0=2 * V),
    "distinct": dict(rate=F(5, 2), k=3, nodes=(10, 7), v=(V, F(1, 2)), t0=F(9, 10)),
    "tiny late probability": dict(rate=F(1, 10), k=1, nodes=(10, 10), v=(F(1, 10), F(1, 5)), t0=20),
}


def model(rate, k, nodes, v, t0, **kw):
    return RedundantCluster(rate=rate, copies=k, nodes=nodes, service_times=v, deadline=t0, **kw)


@pytest.mark.parametrize("name", list(CASES))
def test_closed_forms_equal_quadrature_at_40_digits(name):
    case = CASES[name]
    rec = model(**case).evaluate(40)
    with mpmath.workdps(50):  # quadrature at 50 digits, compared to 40
        ref_late = quad_late(**case)
        assert rel(rec.copy_late_probability, ref_late) < mpmath.mpf(10) ** -39
        assert abs(rec.copy_timely_probability - (1 - ref_late)) < mpmath.mpf(10) ** -39
        k = case["k"]
        assert rel(rec.untimely_probability, ref_late**k) < mpmath.mpf(10) ** -38
        assert abs(rec.timely_probability - (1 - ref_late**k)) < mpmath.mpf(10) ** -39


@pytest.mark.parametrize("name", list(CASES))
def test_float64_agrees_with_mpmath_near_equal_thetas(name):
    case = CASES[name]
    ref = model(**case).evaluate(40).copy_late_probability
    got = model(**case).evaluate().copy_late_probability
    # positive terms and expm1: ~1e-15 relative even at theta2 - theta1 = 1e-12 (a division by
    # theta2 - theta1 would leave ~4 digits). exp(-theta t) carries the relative error theta t eps of its
    # rounded argument (theta t ~ 100 in the tiny-tail case).
    _, theta = params(**case)
    scale = max(1.0, float(max(theta) * F(case["t0"])))
    assert rel(got, ref) < 20 * scale * 2.2e-16


def test_the_naive_formula_fails_where_the_stable_one_does_not():
    """Guards the test above: the textbook hypoexponential survival loses ~12 digits at 1e-12-close thetas."""
    case = CASES["1e-12 above"]
    _, theta = params(**case)
    t1, t2, t = float(theta[0]), float(theta[1]), float(case["t0"])
    naive = (t2 * math.exp(-t1 * t) - t1 * math.exp(-t2 * t)) / (t2 - t1)
    with mpmath.workdps(50):
        a, b, T = mpq(theta[0]), mpq(theta[1]), mpq(case["t0"])
        exact = mpmath.exp(-a * T) + mpmath.quad(lambda u: a * mpmath.exp(-a * u - b * (T - u)), [0, T])
    assert rel(naive, exact) > 1e-8


def test_levels_are_symmetric():
    a = model(rate=F(5, 2), k=3, nodes=(10, 7), v=(V, F(1, 2)), t0=F(9, 10)).evaluate(40)
    b = model(rate=F(5, 2), k=3, nodes=(7, 10), v=(F(1, 2), V), t0=F(9, 10)).evaluate(40)
    assert rel(a.copy_late_probability, b.copy_late_probability) < mpmath.mpf(10) ** -39


def test_paper_discretisation_error_is_order_one_over_N():
    case = CASES["distinct"]
    m = model(**case)
    ctx = mp_context(30)
    with ctx:
        r = 1 - quad_late(**case)
        errs = {N: r - paper_discretised(m, N, ctx) for N in (100, 200, 400, 800)}
        assert all(e > 0 for e in errs.values())  # the paper's sum under-estimates r
        ratios = [errs[N] / errs[2 * N] for N in (100, 200, 400)]
        assert all(abs(q - 2) < mpmath.mpf("0.02") for q in ratios)  # halving d halves the error
        rho, theta = params(**case)
        r1, r2, t1, t2, T = (mpq(x) for x in (rho[0], rho[1], theta[0], theta[1], case["t0"]))
        limit = T / 2 * mpmath.quad(lambda w: r1 * t1 * mpmath.exp(-t1 * w) * r2 * t2 * mpmath.exp(-t2 * (T - w)),
                                    [0, T])
        assert abs(800 * errs[800] - limit) / limit < mpmath.mpf("0.01")  # O(1/N) remainder
        ref = paper_discretised(m, 1000, ctx)
    assert abs(paper_discretised(m, 1000, FLOAT64) - ref) < 1e-14  # float64 vectorised = mpmath
    with pytest.raises(ParameterError, match="N"):
        paper_discretised(m, 0, FLOAT64)


def test_mean_time_fault_factors_of_the_paper():
    case = CASES["distinct"]
    L1, L2 = F(1, 10), F(1, 5)
    rho, _ = params(**case)
    T1, T2 = case["v"][0] / (1 - rho[0]), case["v"][1] / (1 - rho[1])  # M/M/1 mean sojourn
    got = model(**case, failure_rates=(L1, L2)).evaluate(40)
    with mpmath.workdps(50):
        ref = mpmath.exp(-mpq(L1 * T1 + L2 * T2)) * (1 - quad_late(**case))
        assert rel(got.copy_timely_probability, ref) < mpmath.mpf(10) ** -39
        assert rel(got.failure_free_probability, mpmath.exp(-mpq(L1 * T1 + L2 * T2))) < mpmath.mpf(10) ** -39
    # split form: waiting rates l11, l21 on the mean waits, service rates l10, l20 on v_i
    w1, w2 = rho[0] * case["v"][0] / (1 - rho[0]), rho[1] * case["v"][1] / (1 - rho[1])
    got2 = model(**case, failure_rates=(L1, L2), service_failure_rates=(F(1, 50), F(1, 40))).evaluate(40)
    with mpmath.workdps(50):
        ref2 = (mpmath.exp(-mpq(L1 * w1 + L2 * w2 + F(1, 50) * case["v"][0] + F(1, 40) * case["v"][1]))
                * (1 - quad_late(**case)))
        assert rel(got2.copy_timely_probability, ref2) < mpmath.mpf(10) ** -39


def test_pathwise_faults_vs_two_dimensional_quadrature():
    case = CASES["distinct"]
    a, s = (F(1, 10), F(1, 5)), (F(1, 20), F(3, 100))
    rec = model(**case, failure_rates=a, service_failure_rates=s, failure_model=FailureModel.PATHWISE).evaluate(30)
    with mpmath.workdps(40):
        # exponential service S_i ~ Exp(mean v_i): E e^{-l S_i} = 1/(1 + l v_i)
        ref = quad_late(**case, tilt=a) / ((1 + mpq(s[0] * case["v"][0])) * (1 + mpq(s[1] * case["v"][1])))
        assert rel(rec.copy_timely_probability, ref) < mpmath.mpf(10) ** -28
        assert rel(1 - rec.copy_timely_probability, 1 - ref) < mpmath.mpf(10) ** -28
    # without faults the two fault models coincide
    p = model(**case, failure_model=FailureModel.PATHWISE).evaluate(30)
    m = model(**case).evaluate(30)
    assert rel(p.timely_probability, m.timely_probability) < mpmath.mpf(10) ** -29


def test_optimal_copies_vs_brute_force_by_quadrature():
    base = dict(rate=F(7, 2), nodes=(10, 10), service_times=(V, V), deadline=2 * V)
    best = optimize(base, OptimizeCopiesRequest(10), 30)
    with mpmath.workdps(40):
        values = {k: 1 - quad_late(rate=F(7, 2), k=k, nodes=(10, 10), v=(V, V), t0=2 * V) ** k for k in range(1, 10)}
    k_best = max(values, key=values.get)
    assert best["copies"] == k_best == 3 and best["max_stable_copies"] == 9  # 3.5 k 0.3/10 < 1 <=> k <= 9
    assert len(best["timely_probability_by_copies"]) == 9
    assert abs(best["timely_probability"] - values[k_best]) < mpmath.mpf(10) ** -28


@pytest.mark.parametrize("kwargs, message", [
    (dict(rate=3, k=12, nodes=(10, 10), v=(V, V), t0=1), "copies = 12: level 1 is unstable"),
    (dict(rate=40, k=1, nodes=(10, 10), v=(V, V), t0=1), "rate = 40: makes level 1 unstable with even one copy"),
    (dict(rate=-3, k=1, nodes=(10, 10), v=(V, V), t0=1), "rate = -3: must be > 0"),
    (dict(rate=3, k=1, nodes=(10, 10), v=(V, V), t0=0), "deadline"),
    (dict(rate=3, k=1, nodes=(F(5, 2), 10), v=(V, V), t0=1), "nodes"),
    (dict(rate=3, k=1, nodes=(10,), v=(V, V), t0=1), "nodes"),
    (dict(rate=3, k=1, nodes=(10, 10), v=(V, V), t0=1, failure_rates=(-1, 0)), "failure_rates"),
    (dict(rate=3, k=0, nodes=(10, 10), v=(V, V), t0=1), "copies = 0: must be >= 1"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        model(**kwargs)


def test_copies_budget():
    with pytest.raises(BudgetError, match="copies"):
        model(rate=F(1, 10**9), k=10**4 + 1, nodes=(10, 10), v=(V, V), t0=1)
    with pytest.raises(BudgetError, match="copies"):
        OptimizeCopiesRequest(10**5)
    with limits.limits(copies=10**5):
        assert model(rate=F(1, 10**9), k=10**4 + 1, nodes=(10, 10), v=(V, V), t0=1).evaluate().timely_probability == 1


def test_max_stable_copies():
    assert model(rate=3, k=1, nodes=(10, 10), v=(V, V), t0=1).max_stable_copies() == 11  # k 3 0.3/10 < 1
    assert model(rate=F(10, 3), k=1, nodes=(10, 10), v=(V, V), t0=1).max_stable_copies() == 9  # k = 10 gives rho = 1


def test_heavy_load_cancellation_is_escalated_and_accurate():
    """rho_i -> 1: the timely mass 1 - L >= (1 - rho_1)(1 - rho_2) ~ 1e-12 loses ~12 digits in float64; the engine
    says so and the policy recomputes with mpmath (guard digits from the same bound)."""
    case = dict(rate=F(10, 3) * (1 - F(1, 10**6)), k=1, nodes=(1, 1), v=(V, V), t0=F(1, 1000))
    rec = model(**case).evaluate()
    assert rec.notes and "lose" in rec.notes[0]
    with mpmath.workdps(60):
        ref = 1 - quad_late(**case)
        assert rel(rec.copy_timely_probability, ref) < 1e-15
        assert rel(model(**case).evaluate(30).copy_timely_probability, ref) < mpmath.mpf(10) ** -30


EXTREMES = [
    dict(rate=F(1, 10**300)), dict(rate=F(1, 10**1000)), dict(deadline=F(1, 10**300)), dict(deadline=10**300),
    dict(deadline=10**1000), dict(failure_rates=(10**300, 10**300)), dict(failure_rates=(F(1, 10**300), 0)),
    dict(service_times=(F(1, 10**300), F(1, 10**300))), dict(nodes=(10**300, 10**300)),
    dict(failure_rates=(10**30, 1), failure_model=FailureModel.PATHWISE, service_failure_rates=(10**300, 1)),
    dict(copies=10**4, rate=F(1, 10**5)),
]


@pytest.mark.parametrize("change", EXTREMES, ids=[str(sorted(c)) for c in EXTREMES])
def test_fuzz_extreme_parameters_never_raise_and_stay_in_range(change):
    base = dict(rate=3, nodes=(10, 10), service_times=(V, V), deadline=F(3, 5), copies=2)
    rec = RedundantCluster(**{**base, **change}).evaluate()
    for key in ("timely_probability", "copy_timely_probability", "untimely_probability", "copy_late_probability",
                "failure_free_probability"):
        value = getattr(rec, key)
        assert 0 <= value <= 1 and mpmath.isfinite(value), (key, value)
    # the float64 answer (escalated by the policy where float64 cannot give it) agrees with 30 digits
    ref = RedundantCluster(**{**base, **change}).evaluate(30)
    for key in ("timely_probability", "copy_timely_probability", "untimely_probability", "copy_late_probability",
                "failure_free_probability", "mean_wait_lower"):
        a, b = getattr(rec, key), getattr(ref, key)
        assert (a == b == 0) or rel(a, b) < 1e-13, (key, a, b)


# -- command line -------------------------------------------------------------------------------------------
ARGS = ["--rate", "3", "--nodes", "10,10", "--service-times", "0.3,0.3", "--deadline", "0.6"]
KEYS = ["timely_probability", "copy_timely_probability", "untimely_probability", "copy_late_probability",
        "failure_free_probability", "load_lower", "load_upper", "mean_wait_lower", "mean_wait_upper",
        "mean_sojourn_lower", "mean_sojourn_upper", "max_stable_copies"]


def test_cli_eval_matches_quadrature():
    code, out, _ = cli(["eval", "redundant-cluster", *ARGS, "--copies", "2", "--failure-rates", "0,0", "--json"])
    assert code == 0
    m = json.loads(out)["measures"]
    assert list(m) == KEYS and m["max_stable_copies"] == 11
    with mpmath.workdps(50):
        late = quad_late(**CASES["theta1 = theta2"])
        assert abs(m["copy_timely_probability"] - float(1 - late)) < 2e-16
        assert abs(m["timely_probability"] - float(1 - late**2)) < 2e-16
    code, out, _ = cli(["eval", "redundant-cluster", *ARGS, "--copies", "2", "--digits", "40", "--json"])
    m = json.loads(out)["measures"]
    with mpmath.workdps(50):
        assert abs(mpmath.mpf(m["timely_probability"]) - (1 - late**2)) < mpmath.mpf(10) ** -39
        assert rel(mpmath.mpf(m["untimely_probability"]), late**2) < mpmath.mpf(10) ** -38


def test_cli_eval_pathwise_and_split_rates():
    code, out, _ = cli(["eval", "redundant-cluster", "--rate", "2.5", "--copies", "3", "--nodes", "10,7",
                        "--service-times", "0.3,0.5", "--deadline", "0.9", "--failure-rates", "0.1,0.2",
                        "--service-failure-rates", "0.05,0.03", "--failure-model", "pathwise", "--json"])
    assert code == 0
    m = json.loads(out)["measures"]
    case = CASES["distinct"]
    with mpmath.workdps(40):
        ref = quad_late(**case, tilt=(F(1, 10), F(1, 5))) / ((1 + mpq(F(1, 20) * V)) * (1 + mpq(F(3, 100) / 2)))
        assert rel(m["copy_timely_probability"], ref) < 1e-15


def test_cli_optimize():
    code, out, _ = cli(["optimize", "redundant-cluster", *ARGS, "--max-copies", "10", "--json"])
    assert code == 0
    res = json.loads(out)
    assert set(res) >= {"copies", "timely_probability", "untimely_probability", "max_stable_copies",
                        "timely_probability_by_copies"}
    with mpmath.workdps(30):
        values = {k: 1 - quad_late(rate=3, k=k, nodes=(10, 10), v=(V, V), t0=2 * V) ** k for k in range(1, 11)}
    k_best = max(values, key=values.get)
    assert res["copies"] == k_best == 4
    assert abs(res["timely_probability"] - float(values[k_best])) < 1e-15
    assert len(res["timely_probability_by_copies"]) == 10


@pytest.mark.parametrize("argv", [
    ("eval", "redundant-cluster", *ARGS, "--copies", "12"),  # unstable k
    ("eval", "redundant-cluster", "--rate", "-3", "--copies", "1", "--nodes", "10,10",
     "--service-times", "0.3,0.3", "--deadline", "0.6"),  # negative rate
    ("eval", "redundant-cluster", *ARGS, "--copies", "2", "--nodes", "10"),
    ("eval", "redundant-cluster", *ARGS, "--copies", "2", "--failure-rates", "0,-1"),
    ("eval", "redundant-cluster", *ARGS, "--copies", "20000"),  # the copies budget
    ("optimize", "redundant-cluster", *ARGS, "--max-copies", "0"),
    ("optimize", "redundant-cluster", *ARGS, "--max-copies", "100000"),
    ("optimize", "redundant-cluster", *ARGS, "--copies", "2", "--max-copies", "5"),
    ("optimize", "redundant-cluster", "--rate", "40", "--nodes", "10,10", "--service-times", "0.3,0.3",
     "--deadline", "0.6", "--max-copies", "5"),  # even k = 1 unstable
])
def test_cli_bad_input_exits_2(argv):
    code, out, err = cli(argv)
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1


def test_cli_errors_name_the_option():
    assert "--copies = 12: level 1 is unstable" in cli(["eval", "redundant-cluster", *ARGS, "--copies", "12"])[2]
    err = cli(["optimize", "redundant-cluster", "--rate", "40", "--nodes", "10,10", "--service-times", "0.3,0.3",
               "--deadline", "0.6", "--max-copies", "5"])[2]
    assert "--rate = 40" in err


# -- figures ----------------------------------------------------------------------------------------------


def test_figure_cluster2_csv_optima_match_brute_force(tmp_path):
    from qderive.derivations.figures.cluster import FIGURES

    path = tmp_path / "fig2.csv"
    FIGURES["cluster-fig2"](None, str(path))
    rows = list(csv.DictReader(open(path)))
    # panel b, curve 3: Lambda = 3.5, t0 = 2v -> optimum k = 3 (brute force in the optimum test above)
    opt = [r for r in rows if r["panel"] == "b" and r["curve"] == "3" and r["optimal"] == "1"]
    assert len(opt) == 1 and opt[0]["copies"] == "3"
    row = next(r for r in rows if r["panel"] == "a" and r["curve"] == "1" and r["copies"] == "2")
    with mpmath.workdps(30):
        ref = 1 - quad_late(rate=3, k=2, nodes=(10, 10), v=(V, V), t0=4 * V) ** 2
    assert abs(float(row["timely_probability"]) - float(ref)) < 1e-14


def test_figure_cluster1_png_and_csv(tmp_path):
    from qderive.derivations.figures.cluster import FIGURES

    png, path = tmp_path / "fig1.png", tmp_path / "fig1.csv"
    FIGURES["cluster-fig1"](str(png), str(path))
    assert png.stat().st_size > 10_000
    rows = list(csv.DictReader(open(path)))
    assert {r["curve"] for r in rows} == {str(i) for i in range(1, 7)}
    row = next(r for r in rows if r["curve"] == "5" and float(r["rate"]) == 4.0)  # t0 = 3v, k = 2
    with mpmath.workdps(30):
        ref = 1 - quad_late(rate=4, k=2, nodes=(10, 10), v=(V, V), t0=3 * V) ** 2
    assert abs(float(row["timely_probability"]) - float(ref)) < 1e-14
    # the paper's discretisation (N = 10) under-estimates R
    assert all(float(r["timely_probability_paper_N10"]) <= float(r["timely_probability"]) + 1e-15 for r in rows)


# -- derivation ---------------------------------------------------------------------------------------------


def test_derivation_steps_are_computed_or_checked_and_pass_at_40_digits():
    from qderive.derivations.redundant_cluster import derivation

    d = derivation()
    assert all(s.computed or s.check for s in d.steps)
    results = d.verify(40)
    assert results and all(r.passed for r in results), [r for r in results if not r.passed]


def test_sympy_closed_form_matches_quadrature_at_a_point():
    import sympy as sp

    from qderive.derivations import redundant_cluster as D

    case = CASES["distinct"]
    rho, theta = params(**case)
    expr = D.timely_closed_form(False).subs({D.rho1: sp.Rational(rho[0]), D.rho2: sp.Rational(rho[1]),
                                            D.th1: sp.Rational(theta[0]), D.th2: sp.Rational(theta[1]),
                                            D.t: sp.Rational(case["t0"])})
    with mpmath.workdps(50):
        ref = 1 - quad_late(**case)
        assert abs(mpmath.mpf(sp.N(expr, 50)._mpf_) - ref) < mpmath.mpf(10) ** -45
