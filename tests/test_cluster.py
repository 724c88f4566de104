"""Two-level cluster with k copies (seed 004): closed form vs mpmath.quad, discretisation, faults, optimum, CLI.

The oracle is written here from the model's definition: the waiting-time law
F_i(w) = 1 - rho_i e^{-theta_i w} and its density, integrated with mpmath.quad at 50
working digits. Nothing is imported from the code under test except the model's exact
parameters (rho_i, theta_i are one line of arithmetic, recomputed here as well).
"""

from __future__ import annotations

import csv
import json
import math
from fractions import Fraction as F

import mpmath
import pytest
import sympy as sp

from qderive.derivations.cli import main
from qderive.numeric import cluster as C
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.symbolic._exact import ParameterError


@pytest.fixture(autouse=True)
def _restore_mp():
    dps = mpmath.mp.dps
    yield
    mpmath.mp.dps = dps


def mpq(q):
    q = F(q)
    return mpmath.mpf(q.numerator) / q.denominator


def params(rate, k, nodes, v, t0):
    """rho_i = k Lambda v_i/n_i, theta_i = (1 - rho_i)/v_i recomputed from the definition (exact)."""
    rho = [F(k) * F(rate) * F(vi) / ni for vi, ni in zip(v, nodes)]
    theta = [(1 - r) / F(vi) for r, vi in zip(rho, v)]
    return rho, theta


def quad_late(rate, k, nodes, v, t0, tilt=(0, 0)):
    """P(W1 + W2 > t0) (or, with tilt, E[1{W1+W2 <= t0} e^{-a1 W1 - a2 W2}]) by quadrature. Call in workdps."""
    rho, theta = params(rate, k, nodes, v, t0)
    r1, r2, t1, t2, T = mpq(rho[0]), mpq(rho[1]), mpq(theta[0]), mpq(theta[1]), mpq(t0)
    if tilt == (0, 0):
        surv2 = lambda y: r2 * mpmath.exp(-t2 * y)  # noqa: E731  P(W2 > y), y >= 0
        # P(W1 + W2 > T) = P(W1 = 0) P(W2 > T) + int_0^T f1(w) P(W2 > T - w) dw + P(W1 > T)
        g = lambda w: r1 * t1 * mpmath.exp(-t1 * w) * surv2(T - w)  # noqa: E731
        # mpmath.quad's tolerance is absolute: scale the integrand to O(1) so a tail of 1e-46 keeps
        # its relative digits, and split [0, T] when the integrand falls by many orders across it
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
    # the paper's example: n = m, v1 = v2 -> theta1 = theta2 exactly (Erlang-2 branch)
    "theta1 = theta2": dict(rate=3, k=2, nodes=(10, 10), v=(V, V), t0=2 * V),
    # theta2 - theta1 = +-1e-12 and 1e-6 (1/v2 = 1/v1 + eps at n = m)
    "1e-12 above": dict(rate=3, k=2, nodes=(10, 10), v=(V, V / (1 + V * F(1, 10**12))), t0=2 * V),
    "1e-12 below": dict(rate=3, k=2, nodes=(10, 10), v=(V, V / (1 - V * F(1, 10**12))), t0=2 * V),
    "1e-6 above": dict(rate=3, k=2, nodes=(10, 10), v=(V, V / (1 + V * F(1, 10**6))), t0=2 * V),
    "distinct": dict(rate=F(5, 2), k=3, nodes=(10, 7), v=(V, F(1, 2)), t0=F(9, 10)),
    "tiny late probability": dict(rate=F(1, 10), k=1, nodes=(10, 10), v=(F(1, 10), F(1, 5)), t0=20),
}


def model(rate, k, nodes, v, t0, **kw):
    return C.RedundantCluster(rate=rate, copies=k, nodes=nodes, service_times=v, deadline=t0, **kw)


@pytest.mark.parametrize("name", list(CASES))
def test_closed_form_equals_quadrature_at_40_digits(name):
    case = CASES[name]
    bk = mp_backend(40)
    with bk:
        got_late = C.copy_late_probability(model(**case), bk)
        got_r = C.copy_timely_probability(model(**case), bk)
    with mpmath.workdps(50):  # quadrature at 50 digits, compared to 40
        ref_late = quad_late(**case)
        assert abs(got_late - ref_late) / ref_late < mpmath.mpf(10) ** -39
        assert abs(got_r - (1 - ref_late)) < mpmath.mpf(10) ** -39


@pytest.mark.parametrize("name", list(CASES))
def test_float64_path_agrees_with_mpmath_near_equal_thetas(name):
    case = CASES[name]
    bk = mp_backend(40)
    with bk:
        ref = C.copy_late_probability(model(**case), bk)
    got = C.copy_late_probability(model(**case), FLOAT64)
    # positive terms and expm1: ~1e-15 relative even at theta2 - theta1 = 1e-12 (dividing by
    # theta2 - theta1 would leave ~4 digits there). exp(-theta t) carries the relative error
    # theta*t*eps of its rounded argument (theta t ~ 100 in the tiny-tail case).
    _, theta = params(**case)
    scale = max(1.0, float(max(theta) * F(case["t0"])))
    assert abs(got - ref) / ref < 20 * scale * 2.2e-16


def test_naive_formula_would_fail_where_the_stable_one_does_not():
    # guards the test above: the textbook form loses ~12 digits at 1e-12-close thetas in float64
    case = CASES["1e-12 above"]
    rho, theta = params(**case)
    t1, t2, t = float(theta[0]), float(theta[1]), float(case["t0"])
    naive = (t2 * math.exp(-t1 * t) - t1 * math.exp(-t2 * t)) / (t2 - t1)
    bk = mp_backend(40)
    with bk:
        exact = C.hypoexponential_survival(mpq(theta[0]), mpq(theta[1]), mpq(case["t0"]), bk)
    assert abs(naive - exact) / exact > 1e-8
    stable = C.hypoexponential_survival(t1, t2, t, FLOAT64)
    assert abs(stable - exact) / exact < 1e-15


def test_levels_are_symmetric():
    a = model(rate=F(5, 2), k=3, nodes=(10, 7), v=(V, F(1, 2)), t0=F(9, 10))
    b = model(rate=F(5, 2), k=3, nodes=(7, 10), v=(F(1, 2), V), t0=F(9, 10))
    bk = mp_backend(40)
    with bk:
        assert abs(C.copy_late_probability(a, bk) - C.copy_late_probability(b, bk)) < mpmath.mpf(10) ** -39


def test_R_of_k_and_untimely_probability():
    case = CASES["distinct"]
    bk = mp_backend(40)
    with bk:
        m = model(**case)
        ref_late = quad_late(**case)
        assert abs(C.untimely_probability(m, bk) - ref_late ** 3) / ref_late ** 3 < mpmath.mpf(10) ** -38
        assert abs(C.timely_probability(m, bk) - (1 - ref_late ** 3)) < mpmath.mpf(10) ** -39


def test_paper_discretisation_error_is_order_one_over_N():
    case = CASES["distinct"]
    m = model(**case)
    bk = mp_backend(30)
    with bk:
        r = 1 - quad_late(**case)
        errs = {N: r - C.paper_discretised(m, N, bk) for N in (100, 200, 400, 800)}
        assert all(e > 0 for e in errs.values())  # the paper's sum under-estimates r
        ratios = [errs[N] / errs[2 * N] for N in (100, 200, 400)]
        assert all(abs(q - 2) < mpmath.mpf("0.02") for q in ratios)  # halving d halves the error
        # the limit N (r - r_N) -> (t0/2) int_0^t0 f1(w) f2(t0 - w) dw, by quadrature here
        rho, theta = params(**case)
        r1, r2, t1, t2, T = (mpq(x) for x in (rho[0], rho[1], theta[0], theta[1], case["t0"]))
        limit = T / 2 * mpmath.quad(lambda w: r1 * t1 * mpmath.exp(-t1 * w) * r2 * t2 * mpmath.exp(-t2 * (T - w)), [0, T])
        assert abs(C.discretisation_error_constant(m, bk) - limit) / limit < mpmath.mpf(10) ** -25
        assert abs(800 * errs[800] - limit) / limit < mpmath.mpf("0.01")  # O(1/N) remainder
    # float64 vectorised path = mpmath loop
    with bk:
        ref = C.paper_discretised(m, 1000, bk)
    assert abs(C.paper_discretised(m, 1000, FLOAT64) - ref) < 1e-14


def test_mean_time_fault_factors_of_the_paper():
    case = CASES["distinct"]
    L1, L2 = F(1, 10), F(1, 5)
    m = model(**case, failure_rates=(L1, L2))
    rho, _ = params(**case)
    T1, T2 = case["v"][0] / (1 - rho[0]), case["v"][1] / (1 - rho[1])  # M/M/1 mean sojourn
    bk = mp_backend(40)
    with bk:
        got = C.copy_timely_probability(m, bk)
    with mpmath.workdps(50):
        ref = mpmath.exp(-mpq(L1 * T1 + L2 * T2)) * (1 - quad_late(**case))
        assert abs(got - ref) / ref < mpmath.mpf(10) ** -39
    # split form: waiting rates l11, l21 on the mean waits, service rates l10, l20 on v_i
    m2 = model(**case, failure_rates=(L1, L2), service_failure_rates=(F(1, 50), F(1, 40)))
    w1, w2 = rho[0] * case["v"][0] / (1 - rho[0]), rho[1] * case["v"][1] / (1 - rho[1])
    with bk:
        got2 = C.copy_timely_probability(m2, bk)
    with mpmath.workdps(50):
        ref2 = (mpmath.exp(-mpq(L1 * w1 + L2 * w2 + F(1, 50) * case["v"][0] + F(1, 40) * case["v"][1]))
                * (1 - quad_late(**case)))
        assert abs(got2 - ref2) / ref2 < mpmath.mpf(10) ** -39


def test_pathwise_faults_vs_two_dimensional_quadrature():
    case = CASES["distinct"]
    a = (F(1, 10), F(1, 5))
    s = (F(1, 20), F(3, 100))
    m = model(**case, failure_rates=a, service_failure_rates=s, failure_model=C.FailureModel.PATHWISE)
    bk = mp_backend(30)
    with bk:
        got = C.copy_timely_probability(m, bk)
        unt = C.copy_untimely_probability(m, bk)
    with mpmath.workdps(40):
        # exponential service S_i ~ Exp(mean v_i): E e^{-l S_i} = 1/(1 + l v_i)
        ref = quad_late(**case, tilt=a) / ((1 + mpq(s[0] * case["v"][0])) * (1 + mpq(s[1] * case["v"][1])))
        assert abs(got - ref) / ref < mpmath.mpf(10) ** -28
        assert abs(unt - (1 - ref)) / (1 - ref) < mpmath.mpf(10) ** -28


def test_optimal_copies_vs_brute_force_by_quadrature():
    base = dict(rate=F(7, 2), nodes=(10, 10), v=(V, V), t0=2 * V)
    bk = mp_backend(30)
    with bk:
        best = C.optimal_copies(model(k=1, **base), 10, bk)
    with mpmath.workdps(40):
        kmax = 9  # 3.5 * k * 0.3 / 10 < 1  <=>  k <= 9
        values = {k: 1 - quad_late(k=k, **base) ** k for k in range(1, kmax + 1)}
    k_best = max(values, key=values.get)
    assert best.copies == k_best == 3
    assert len(best.table) == kmax
    assert abs(best.timely_probability - values[k_best]) < mpmath.mpf(10) ** -28


@pytest.mark.parametrize("kwargs, message", [
    (dict(rate=3, k=12, nodes=(10, 10), v=(V, V), t0=1), "copies = 12: level 1 is unstable"),
    (dict(rate=-3, k=1, nodes=(10, 10), v=(V, V), t0=1), "rate"),
    (dict(rate=3, k=1, nodes=(10, 10), v=(V, V), t0=0), "deadline"),
    (dict(rate=3, k=1, nodes=(F(5, 2), 10), v=(V, V), t0=1), "nodes"),
    (dict(rate=3, k=1, nodes=(10, 10), v=(V, V), t0=1, failure_rates=(-1, 0)), "failure_rates"),
    (dict(rate=3.0, k=1, nodes=(10, 10), v=(V, V), t0=1), "float"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        model(**kwargs)


def test_max_stable_copies():
    assert model(rate=3, k=1, nodes=(10, 10), v=(V, V), t0=1).max_stable_copies() == 11  # k * 3 * 0.3/10 < 1  <=>  k < 11.1
    assert model(rate=F(10, 3), k=1, nodes=(10, 10), v=(V, V), t0=1).max_stable_copies() == 9  # k = 10 gives rho = 1


# -- command line ------------------------------------------------------------------------------------
ARGS = ["--rate", "3", "--nodes", "10,10", "--service-times", "0.3,0.3", "--deadline", "0.6"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_eval_matches_quadrature(capsys):
    code, out, _ = run_cli(capsys, "eval", "redundant-cluster", *ARGS, "--copies", "2", "--failure-rates", "0,0", "--json")
    assert code == 0
    m = json.loads(out)["measures"]
    with mpmath.workdps(50):
        late = quad_late(**CASES["theta1 = theta2"])
        assert abs(m["copy_timely_probability"] - float(1 - late)) < 2e-16
        assert abs(m["timely_probability"] - float(1 - late**2)) < 2e-16
    code, out, _ = run_cli(capsys, "eval", "redundant-cluster", *ARGS, "--copies", "2", "--digits", "40", "--json")
    m = json.loads(out)["measures"]
    with mpmath.workdps(50):
        assert abs(mpmath.mpf(m["timely_probability"]) - (1 - late**2)) < mpmath.mpf(10) ** -39
        assert abs(mpmath.mpf(m["untimely_probability"]) - late**2) / late**2 < mpmath.mpf(10) ** -38


def test_cli_optimize(capsys):
    code, out, _ = run_cli(capsys, "optimize", "redundant-cluster", *ARGS, "--max-copies", "10", "--json")
    assert code == 0
    res = json.loads(out)
    with mpmath.workdps(30):
        values = {k: 1 - quad_late(rate=3, k=k, nodes=(10, 10), v=(V, V), t0=2 * V) ** k for k in range(1, 11)}
    k_best = max(values, key=values.get)
    assert res["copies"] == k_best
    assert abs(res["timely_probability"] - float(values[k_best])) < 1e-15
    assert len(res["timely_probability_by_copies"]) == 10


@pytest.mark.parametrize("argv", [
    ("eval", "redundant-cluster", *ARGS, "--copies", "12"),  # unstable k
    ("eval", "redundant-cluster", "--rate", "-3", "--copies", "1", "--nodes", "10,10",
     "--service-times", "0.3,0.3", "--deadline", "0.6"),  # negative rate
    ("eval", "redundant-cluster", *ARGS, "--copies", "2", "--nodes", "10"),
    ("eval", "redundant-cluster", *ARGS, "--copies", "2", "--failure-rates", "0,-1"),
    ("optimize", "redundant-cluster", *ARGS, "--max-copies", "0"),
    ("optimize", "redundant-cluster", *ARGS, "--copies", "2", "--max-copies", "5"),
    ("optimize", "redundant-cluster", "--rate", "40", "--nodes", "10,10", "--service-times", "0.3,0.3",
     "--deadline", "0.6", "--max-copies", "5"),  # even k = 1 unstable
])
def test_cli_bad_input_exits_2(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1


# -- figures ---------------------------------------------------------------------------------------
def test_figure_cluster2_csv_optima_match_brute_force(tmp_path):
    from qderive.derivations.redundant_cluster import figure_cluster2

    path = tmp_path / "fig2.csv"
    figure_cluster2(None, str(path))
    rows = list(csv.DictReader(open(path)))
    # panel b, curve 3: Lambda = 3.5, t0 = 2v -> optimum k = 3 (brute force in the optimum test above)
    opt = [r for r in rows if r["panel"] == "b" and r["curve"] == "3" and r["optimal"] == "1"]
    assert len(opt) == 1 and opt[0]["copies"] == "3"
    row = next(r for r in rows if r["panel"] == "a" and r["curve"] == "1" and r["copies"] == "2")
    with mpmath.workdps(30):
        ref = 1 - quad_late(rate=3, k=2, nodes=(10, 10), v=(V, V), t0=4 * V) ** 2
    assert abs(float(row["timely_probability"]) - float(ref)) < 1e-14


def test_figure_cluster1_png_and_csv(tmp_path):
    from qderive.derivations.redundant_cluster import figure_cluster1

    png, path = tmp_path / "fig1.png", tmp_path / "fig1.csv"
    figure_cluster1(str(png), str(path))
    assert png.stat().st_size > 10_000
    rows = list(csv.DictReader(open(path)))
    assert {r["curve"] for r in rows} == {str(i) for i in range(1, 7)}
    row = next(r for r in rows if r["curve"] == "5" and float(r["rate"]) == 4.0)  # t0 = 3v, k = 2
    with mpmath.workdps(30):
        ref = 1 - quad_late(rate=4, k=2, nodes=(10, 10), v=(V, V), t0=3 * V) ** 2
    assert abs(float(row["timely_probability"]) - float(ref)) < 1e-14
    # the paper's discretisation (N = 10) under-estimates R
    assert all(float(r["timely_probability_paper_N10"]) <= float(r["timely_probability"]) + 1e-15 for r in rows)


def test_derivation_checks_pass_at_40_digits():
    from qderive.derivations.redundant_cluster import derivation

    results = derivation().verify(40)
    assert results and all(r.passed for r in results), [r for r in results if not r.passed]


def test_sympy_closed_form_matches_numeric_at_a_point():
    from qderive.derivations import redundant_cluster as D

    case = CASES["distinct"]
    rho, theta = params(**case)
    expr = D.timely_closed_form(False).subs({D.rho1: sp.Rational(rho[0]), D.rho2: sp.Rational(rho[1]),
                                            D.th1: sp.Rational(theta[0]), D.th2: sp.Rational(theta[1]),
                                            D.t: sp.Rational(case["t0"])})
    with mpmath.workdps(50):
        ref = 1 - quad_late(**case)
        value = mpmath.mpf(sp.N(expr, 50)._mpf_)
        assert abs(value - ref) < mpmath.mpf(10) ** -45
