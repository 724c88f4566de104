"""Erlang B (seed 003, eqs. (1)-(6)): recursion vs independent computations, inverse problems, CLI.

Oracles: exact rational direct sums written here (Fractions, no shared code), the
incomplete-gamma identity B = rho^n e^-rho / n! / Q(n+1, rho) in mpmath at 60 digits,
and brute-force scans for the inverse problems.
"""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from qderive.derivations.cli import main
from qderive.numeric import erlang as E
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.symbolic._exact import ParameterError


@pytest.fixture(autouse=True)
def _restore_mp():
    dps = mpmath.mp.dps
    yield
    mpmath.mp.dps = dps


def exact_B(n: int, rho: Fraction) -> Fraction:
    """B(n, rho) = (rho^n/n!) / sum_{j<=n} rho^j/j!, summed exactly (eq. (1) at k = n)."""
    term, total = Fraction(1), Fraction(1)
    for j in range(1, n + 1):
        term = term * rho / j
        total += term
    return term / total


def mpf(q: Fraction):
    return mpmath.mpf(q.numerator) / q.denominator


def rel(a, b):
    return abs(a - b) / abs(b)


POINTS = [(1, Fraction(1, 3)), (10, Fraction(5)), (37, Fraction(53, 2)), (120, Fraction(100)), (300, Fraction(7))]


@pytest.mark.parametrize("n, rho", POINTS)
def test_recursion_equals_exact_direct_sum_at_50_digits(n, rho):
    ref = exact_B(n, rho)
    bk = mp_backend(60)
    with bk:
        got = E.erlang_b(n, sp.Rational(rho.numerator, rho.denominator), bk)
        # 60 working digits; the recursion loses at most ~log10(3n) digits (one rounding per
        # operation, errors never amplified), so 50 digits must agree.
        assert rel(got, mpf(ref)) < mpmath.mpf(10) ** -50
        # carried load rho (1 - B) without subtraction (eqs. (2), (3))
        car = E.carried_load(n, sp.Rational(rho.numerator, rho.denominator), bk)
        assert rel(car, mpf(rho * (1 - ref))) < mpmath.mpf(10) ** -50


@pytest.mark.parametrize("rho", [Fraction(9500), Fraction(20001, 2), Fraction(200)])
def test_n_ten_thousand_vs_incomplete_gamma_identity(rho):
    n = 10**4
    with mpmath.workdps(70):
        r = mpf(rho)
        q = mpmath.gammainc(n + 1, r, regularized=True)  # sum_{k<=n} e^-r r^k/k!
        ref = mpmath.exp(n * mpmath.log(r) - r - mpmath.loggamma(n + 1)) / q
    bk = mp_backend(60)
    with bk:
        got = E.erlang_b(n, sp.Rational(rho.numerator, rho.denominator), bk)
        # 60 digits working, <= 5 digits lost over 10^4 steps: 50 digits must agree.
        assert rel(got, ref) < mpmath.mpf(10) ** -50


@pytest.mark.parametrize("n, rho", [(10, 5), (100, 84), (10**4, 10**4), (10**5, 10**5), (10**5, 1), (1, 10**5)])
def test_float64_agrees_with_mpmath_and_never_overflows(n, rho):
    rec64 = E.erlang_b_recursion(n, rho, FLOAT64)
    bk = mp_backend(30)
    with bk:
        rec = E.erlang_b_recursion(n, rho, bk)
        # relative error of the float64 recursion grows at most linearly, ~n * eps (1e-11 at n = 1e5)
        assert rel(mpmath.mpf(rec64.log_blocking), rec.log_blocking) < 1e-11
        if rec.blocking > mpmath.mpf("1e-300"):
            assert rel(mpmath.mpf(rec64.blocking), rec.blocking) < 2e-11
            assert rel(mpmath.mpf(rec64.carried_load), rec.carried_load) < 1e-13
        else:  # underflows float64: 0.0 with a finite logarithm, never inf or nan
            assert rec64.blocking == 0.0


def test_blocking_near_one_keeps_relative_accuracy_of_its_complement():
    # n = 1: B = rho/(1 + rho), 1 - B = 1/(1 + rho); rho = 1e5: carried load = rho/(1+rho) exactly
    car = E.carried_load(1, 10**5, FLOAT64)
    assert abs(car - 100000 / 100001) <= 2e-16
    # log B = -log1p(1/rho): full relative accuracy (log(B) of the rounded B would keep only ~11 digits)
    with mpmath.workdps(30):
        ref = -mpmath.log1p(mpmath.mpf(1) / 100000)
        assert rel(mpmath.mpf(E.erlang_b_log(1, 10**5, FLOAT64)), ref) < 1e-15


@pytest.mark.parametrize("rho, target", [
    (Fraction(8108, 1000), Fraction(1, 100)),
    (Fraction(3), Fraction(1, 1000)),
    (Fraction(1, 2), Fraction(1, 10**6)),
    (Fraction(45), Fraction(1, 50)),
    (Fraction(30), Fraction(1, 10**40)),
])
def test_smallest_servers_vs_exact_brute_force(rho, target):
    n = 1
    while exact_B(n, rho) > target:
        n += 1
    r, t = sp.Rational(rho.numerator, rho.denominator), sp.Rational(target.numerator, target.denominator)
    assert E.smallest_servers(r, t, FLOAT64) == n
    bk = mp_backend(50)
    with bk:
        assert E.smallest_servers(r, t, bk) == n


def test_smallest_servers_below_float64_range_uses_logarithms():
    # target 1e-400 cannot be a float64; the log comparison still finds n (brute force in exact arithmetic)
    rho, target = Fraction(2), Fraction(1, 10**400)
    n = 1
    while exact_B(n, rho) > target:
        n += 1
    assert E.smallest_servers(sp.Integer(2), sp.Rational(1, 10**400), FLOAT64) == n


def _exact_from_mpf(x) -> Fraction:
    man, exp_ = x.man_exp
    return Fraction(man) * Fraction(2) ** exp_


@pytest.mark.parametrize("n, target", [(1, Fraction(1, 100)), (10, Fraction(1, 100)), (15, Fraction(1, 100)),
                                       (100, Fraction(1, 1000)), (3, Fraction(1, 2))])
def test_load_for_blocking_brackets_the_target_exactly(n, target):
    t = sp.Rational(target.numerator, target.denominator)
    bk = mp_backend(50)
    with bk:
        rho = E.load_for_blocking(n, t, bk)
    # brute force with the exact direct sum: B crosses the target within 1e-45 (relative) of rho*
    lo = _exact_from_mpf(rho) * (1 - Fraction(1, 10**45))
    hi = _exact_from_mpf(rho) * (1 + Fraction(1, 10**45))
    assert exact_B(n, lo) < target < exact_B(n, hi)
    # float64: to ~1e-13 relative (the recursion's rounding bounds the root's accuracy)
    r64 = E.load_for_blocking(n, t, FLOAT64)
    assert abs(r64 - float(rho)) <= 1e-13 * float(rho)


def test_load_for_blocking_known_table_values():
    # Classical Erlang B tables (e.g. 15 servers at 1%: 8.108 Erlang; 10 at 1%: 4.461): a sanity
    # check of the problem statement, the exactness is proved by the bracketing test above.
    assert abs(E.load_for_blocking(15, sp.Rational(1, 100), FLOAT64) - 8.108) < 5e-4
    assert abs(E.load_for_blocking(10, sp.Rational(1, 100), FLOAT64) - 4.461) < 5e-4


@pytest.mark.parametrize("call, message", [
    (lambda: E.erlang_b(0, 5, FLOAT64), "servers"),
    (lambda: E.erlang_b(10, -5, FLOAT64), "load"),
    (lambda: E.erlang_b(10, 5.0, FLOAT64), "float"),
    (lambda: E.smallest_servers(5, sp.Rational(3, 2), FLOAT64), "target_blocking"),
    (lambda: E.load_for_blocking(5, 0, FLOAT64), "target_blocking"),
])
def test_bad_input_is_refused_with_the_parameter_named(call, message):
    with pytest.raises(ParameterError, match=message):
        call()


def test_service_mix_worked_example_of_the_guide():
    # ratios 1:2, ws = 0.1 s and 0.3 s, R = 14 windows (docs/guides/erlang-b.md)
    mix = E.ServiceMix((1, 2), (sp.Rational(1, 10), sp.Rational(3, 10)), 14, reference=1)
    S = mix.admitted_rates()
    # eq. (5) checked directly: S_i ws_i sums to R, and the ratio is 1:2
    assert S[0] * sp.Rational(1, 10) + S[1] * sp.Rational(3, 10) == 14 and S[1] == 2 * S[0]
    assert S == (20, 40)
    assert mix.equivalence_coefficients() == (1, 3)  # eq. (6): a call of service 2 = 3 reference calls
    assert mix.reference_capacity() == 140  # S*_1 ws_1 = R
    assert mix.equivalent_reference_rate() == 140  # 20 + 3*40
    with pytest.raises(ParameterError, match="same nonzero length"):
        E.ServiceMix((1, 2), (1,), 3)
    with pytest.raises(ParameterError, match="reference"):
        E.ServiceMix((1, 2), (1, 2), 3, reference=3)


# -- command line ---------------------------------------------------------------------------------
def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_eval_float64_and_50_digits(capsys):
    code, out, _ = run_cli(capsys, "eval", "erlang-b", "--servers", "10", "--load", "5", "--json")
    assert code == 0
    m = json.loads(out)["measures"]
    ref = exact_B(10, Fraction(5))
    assert abs(m["blocking_probability"] - float(ref)) < 1e-16
    assert abs(m["carried_load"] - float(5 * (1 - ref))) < 1e-14
    assert m["mean_busy_windows"] == m["carried_load"]  # eq. (3)
    code, out, _ = run_cli(capsys, "eval", "erlang-b", "--servers", "10", "--load", "5", "--digits", "50",
                           "--holding-time", "0.2", "--json")
    m = json.loads(out)["measures"]
    with mpmath.workdps(60):
        assert rel(mpmath.mpf(m["blocking_probability"]), mpf(ref)) < mpmath.mpf(10) ** -48
        assert rel(mpmath.mpf(m["carried_rate"]), mpf(5 * (1 - ref) * 5)) < mpmath.mpf(10) ** -48
        assert mpmath.mpf(m["mean_response_time"]) == mpmath.mpf(1) / 5  # eq. (4): ws = 1/mu


def test_cli_size_both_directions(capsys):
    code, out, _ = run_cli(capsys, "size", "erlang-b", "--load", "8.108", "--target-blocking", "0.01", "--json")
    assert code == 0
    res = json.loads(out)
    n = 1
    while exact_B(n, Fraction(8108, 1000)) > Fraction(1, 100):
        n += 1
    assert res["servers"] == n == 15
    assert res["blocking_probability"] <= 0.01 < res["blocking_with_one_fewer"]
    code, out, _ = run_cli(capsys, "size", "erlang-b", "--servers", "15", "--target-blocking", "0.01", "--json")
    res = json.loads(out)
    assert code == 0 and res["servers"] == 15
    rho = Fraction(res["load"])
    assert exact_B(15, rho * (1 - Fraction(1, 10**12))) < Fraction(1, 100) < exact_B(15, rho * (1 + Fraction(1, 10**12)))


@pytest.mark.parametrize("argv", [
    ("eval", "erlang-b", "--servers", "10", "--load", "-5"),
    ("eval", "erlang-b", "--servers", "0", "--load", "5"),
    ("eval", "erlang-b", "--servers", "2.5", "--load", "5"),
    ("eval", "erlang-b", "--servers", "10"),
    ("eval", "erlang-b", "--servers", "10", "--load", "abc"),
    ("size", "erlang-b", "--load", "5", "--target-blocking", "1.5"),
    ("size", "erlang-b", "--load", "5", "--servers", "3", "--target-blocking", "0.01"),
    ("size", "erlang-b", "--load", "5"),
])
def test_cli_bad_input_exits_2_with_one_line(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1


def test_derivation_checks_pass_at_50_digits():
    from qderive.derivations.erlang_b import derivation

    results = derivation().verify(50)
    assert results and all(r.passed for r in results), [r for r in results if not r.passed]
