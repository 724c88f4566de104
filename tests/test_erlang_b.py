"""Erlang B (seed 003, eqs. (1)-(6)): the kernel, the engine under the precision policy, sizing, CLI.

Oracles (none shares code with qderive.numeric.kernels.erlang): exact rational direct sums of
eq. (1) written here (Fractions, summed term by term); the incomplete-gamma identity
B = rho^n e^-rho / n! / Q(n+1, rho) in mpmath at 70 digits; brute-force scans for the inverse
problems; the birth-death CTMC of the windows solved by GTH (numeric.oracles.ctmc).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import cli
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.erlang_b import load_for_blocking, smallest_servers
from qderive.numeric.kernels import erlang as K
from qderive.numeric.sequences import digits_for
from qderive.symbolic import limits
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.models.erlang_b import ErlangB, ErlangBSizeRequest, ServiceMix


def exact_B(n: int, rho: Fraction) -> Fraction:
    """B(n, rho) = (rho^n/n!) / sum_{j<=n} rho^j/j!, summed exactly (eq. (1) at k = n)."""
    term, total = Fraction(1), Fraction(1)
    for j in range(1, n + 1):
        term = term * rho / j
        total += term
    return term / total


def mpf(q) -> mpmath.mpf:
    """An exact number as an mpf of 200 digits (an mpf keeps its digits outside the context)."""
    q = Fraction(q)
    with mpmath.workdps(200):
        return mpmath.mpf(q.numerator) / q.denominator


def rel(a, b):
    """|a - b| / |b| at 200 digits (a float or mpf input is taken exactly)."""
    with mpmath.workdps(200):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return abs(a - b) / abs(b)


# (n, rho): moderate, heavy load rho >= 2n (the top sum), light load (the cut + log-gamma), rho << 1
POINTS = [(1, Fraction(1, 3)), (10, Fraction(5)), (37, Fraction(53, 2)), (120, Fraction(100)), (300, Fraction(7)),
          (20, Fraction(101, 2)), (1000, Fraction(10**4)), (40, Fraction(1, 10**30))]


@pytest.mark.parametrize("n, rho", POINTS)
def test_kernel_and_policy_equal_exact_direct_sum_at_50_digits(n, rho):
    ref = exact_B(n, rho)
    ctx = mp_context(60)
    with ctx:
        prev, b, log_b = K.erlang_b(ctx, ctx.num(rho), n)
        # 60 working digits; the recursion loses at most log10(n) digits (errors never amplified) and the
        # log-gamma continuation log10(n (log n + |log rho|)): 50 digits must agree
        assert rel(b, mpf(ref)) < mpmath.mpf(10) ** -50
        assert rel(prev, mpf(exact_B(n - 1, rho))) < mpmath.mpf(10) ** -50
        with mpmath.workdps(80):
            assert abs(log_b - mpmath.log(mpf(ref))) < mpmath.mpf(10) ** -50 * max(1, abs(log_b))
    rec = ErlangB(n, rho).evaluate(50)
    assert rel(rec.blocking_probability, mpf(ref)) < mpmath.mpf(10) ** -50
    assert rel(rec.carried_load, mpf(rho * (1 - ref))) < mpmath.mpf(10) ** -50  # (2), (3) without subtraction
    assert rel(rec.lost_load, mpf(rho * ref)) < mpmath.mpf(10) ** -50
    assert rec.mean_busy_windows == rec.carried_load
    # the policy's guard: D + 10 + log10(n) + 5 working digits, no confirmation needed (an a-priori bound)
    assert rec.working_digits == 50 + 10 + digits_for(n) + 5 and rec.confirmed_digits == 50


def test_birth_death_chain_gives_the_blocking_and_the_busy_windows():
    from qderive.derivations.erlang_b import birth_death_law

    n, rho = 30, Fraction(25)
    pi = birth_death_law(n, rho, mp_context(60))
    rec = ErlangB(n, rho, Fraction(1, 4)).evaluate(50)
    with mpmath.workdps(60):
        assert rel(rec.blocking_probability, pi[n]) < mpmath.mpf(10) ** -50
        assert rel(rec.mean_busy_windows, mpmath.fsum(k * pi[k] for k in range(n + 1))) < mpmath.mpf(10) ** -50
        # Little (4): w_s = N / lambda_e = 1/mu
        assert rec.mean_response_time == mpmath.mpf(1) / 4
        assert rel(rec.carried_rate, 4 * 25 * (1 - pi[n])) < mpmath.mpf(10) ** -50


@pytest.mark.parametrize("rho", [Fraction(9500), Fraction(20001, 2), Fraction(200)])
def test_n_ten_thousand_vs_incomplete_gamma_identity(rho):
    n = 10**4
    with mpmath.workdps(70):
        r = mpf(rho)
        q = mpmath.gammainc(n + 1, r, regularized=True)  # sum_{k<=n} e^-r r^k/k!
        ref = mpmath.exp(n * mpmath.log(r) - r - mpmath.loggamma(n + 1)) / q
    assert rel(ErlangB(n, rho).evaluate(50).blocking_probability, ref) < mpmath.mpf(10) ** -50


@pytest.mark.parametrize("n, rho", [(10, 5), (100, 84), (10**4, 10**4), (10**5, 10**5), (10**5, 1), (1, 10**5),
                                    (10**4, 3 * 10**4), (500, 20)])
def test_float64_kernel_agrees_with_mpmath_and_never_overflows(n, rho):
    p64, b64, log64 = K.erlang_b(FLOAT64, float(rho), n)
    ctx = mp_context(30)
    with ctx:
        prev, b, log_b = K.erlang_b(ctx, ctx.num(rho), n)
    # the relative error of the float64 recursion grows at most linearly, ~2 n eps (4e-11 at n = 1e5)
    assert rel(log64, log_b) < 1e-11
    if b > mpmath.mpf("1e-300"):
        assert rel(b64, b) < 5e-11
    else:  # below the double range: 0 (or a subnormal) with a finite logarithm, never inf or nan
        assert b64 < 2.3e-308 and math.isfinite(log64)


def test_underflowing_blocking_is_escalated_by_the_policy():
    # B(400, 3) ~ 5e-680: float64 gives 0; the policy recomputes with mpmath, keeps the value as an mpf
    rec = ErlangB(400, 3).evaluate()
    ref = exact_B(400, Fraction(3))
    assert isinstance(rec.blocking_probability, mpmath.mpf) and rel(rec.blocking_probability, mpf(ref)) < 1e-16
    assert isinstance(rec.log10_blocking_probability, float)  # stays a float
    with mpmath.workdps(50):
        assert abs(rec.log10_blocking_probability - float(mpmath.log10(mpf(ref)))) < 1e-12
    assert rec.carried_load == 3.0 and any("underflows" in note for note in rec.notes)
    # a B just inside the double range but below 2^-960 is escalated too (next to the subnormals)
    rec = ErlangB(200, 2).evaluate()
    assert rel(rec.blocking_probability, mpf(exact_B(200, Fraction(2)))) < 1e-15


def test_blocking_near_one_keeps_the_relative_accuracy_of_its_complement():
    # n = 1: 1 - B = 1/(1 + rho), carried load rho/(1 + rho); log B = -log1p(1/rho) to full accuracy
    rec = ErlangB(1, 10**5).evaluate()
    assert abs(rec.carried_load - 100000 / 100001) <= 2e-16
    with mpmath.workdps(30):
        assert rel(rec.log10_blocking_probability, -mpmath.log1p(mpmath.mpf(1) / 100000) / mpmath.ln(10)) < 1e-15


def test_the_three_regimes_agree_where_they_meet():
    # rho = 2n switches to the top sum; rho = 2n - 2^-40 runs the recursion: both against the exact sum
    for n in (5, 200):
        for rho in (Fraction(2 * n), Fraction(2 * n) - Fraction(1, 2**40)):
            ref = exact_B(n, rho)
            assert rel(ErlangB(n, rho).evaluate().blocking_probability, mpf(ref)) < 1e-13
    # the cut in mpmath: reached at k ~ 55 for rho = 5 at 40 digits; n = 200 uses log-gamma
    assert rel(ErlangB(200, 5).evaluate(40).blocking_probability, mpf(exact_B(200, Fraction(5)))) < 1e-40


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 400), load=st.fractions(min_value=Fraction(1, 10), max_value=500, max_denominator=100))
def test_property_probability_monotone_in_servers(n, load):
    a, b = ErlangB(n, load).evaluate(), ErlangB(n + 1, load).evaluate()
    assert 0 <= b.blocking_probability <= a.blocking_probability <= 1
    # the logarithm stays finite and strictly decreasing in n
    assert b.log10_blocking_probability < a.log10_blocking_probability <= 0
    ref = ErlangB(n, load).evaluate(40)
    assert rel(a.carried_load, ref.carried_load) <= 1e-12  # float64 vs 40 digits


LOADS = [Fraction(1, 10**300), Fraction(1, 10**30), Fraction(1, 1000), Fraction(1), Fraction(1000), 10**30,
         10**300, Fraction(1, 10**1000), 10**1000]


@pytest.mark.parametrize("n", [1, 2, 10, 1000, 10**5, 10**7])
def test_fuzz_extreme_loads_never_raise_and_stay_in_range(n):
    """Loads 1e-1000 .. 1e1000 with n up to the servers limit: no OverflowError / ZeroDivisionError,
    probabilities in [0, 1] and never 0, a finite float log10, the carried load at most min(n, rho)."""
    for rho in LOADS:
        if n == 10**7 and Fraction(10**5) <= rho <= Fraction(2 * 10**7):
            continue  # 10^7 steps of the recursion (a second each): covered at n = 10^5
        rec = ErlangB(n, rho).evaluate()
        b = rec.blocking_probability
        assert 0 < b <= 1 and mpmath.isfinite(rec.log10_blocking_probability), (n, rho)
        # a float, unless log10 B itself leaves the double range (rho = 1e1000: log10 B ~ -n/(rho ln 10))
        assert isinstance(rec.log10_blocking_probability, float) or abs(rec.log10_blocking_probability) < 2.3e-308
        with mpmath.workdps(30):
            assert rec.carried_load <= min(n, mpf(rho)) * (1 + mpmath.mpf(10) ** -15)
            assert 0 <= rec.window_occupancy <= 1
        if n <= 100 and Fraction(1, 10**30) <= rho <= 10**30:
            assert rel(b, mpf(exact_B(n, Fraction(rho)))) < 1e-13, (n, rho)


@pytest.mark.parametrize("rho, target", [
    (Fraction(8108, 1000), Fraction(1, 100)),
    (Fraction(3), Fraction(1, 1000)),
    (Fraction(1, 2), Fraction(1, 10**6)),
    (Fraction(45), Fraction(1, 50)),
    (Fraction(30), Fraction(1, 10**40)),
    (Fraction(2), Fraction(1, 10**400)),  # below float64: logarithms
])
def test_smallest_servers_vs_exact_brute_force(rho, target):
    n = 1
    while exact_B(n, rho) > target:
        n += 1
    assert smallest_servers(rho, target) == n
    assert smallest_servers(rho, target, 30) == n


def test_smallest_servers_settles_a_float64_tie_with_mpmath():
    # targets within 1e-14 and 1e-25 of B(n) itself: float64 cannot tell which side B(n) is on; the
    # boundary is settled at 30 + guard digits (an exact tie is decided only to that precision)
    for n, rho in ((5, Fraction(3)), (40, Fraction(77, 3)), (12, Fraction(1, 7))):
        target = exact_B(n, rho)
        for eps in (Fraction(1, 10**14), Fraction(1, 10**25)):
            assert smallest_servers(rho, target * (1 + eps)) == n
            assert smallest_servers(rho, target * (1 - eps)) == n + 1


def test_smallest_servers_refuses_unreachable_targets_at_once():
    with pytest.raises(ParameterError, match="not reached with up to 10000000 servers"):
        smallest_servers(10**300, Fraction(1, 2))  # B >= 1 - n/rho: known without a scan
    with limits.limits(servers=10):
        with pytest.raises(ParameterError, match="not reached with up to 10 servers"):
            smallest_servers(5, Fraction(1, 10**6))


def _exact_from_mpf(x) -> Fraction:
    man, exp_ = x.man_exp
    return Fraction(man) * Fraction(2) ** exp_


@pytest.mark.parametrize("n, target", [(1, Fraction(1, 100)), (10, Fraction(1, 100)), (15, Fraction(1, 100)),
                                       (100, Fraction(1, 1000)), (3, Fraction(1, 2))])
def test_load_for_blocking_brackets_the_target_exactly(n, target):
    rho = load_for_blocking(n, target, 40)
    # brute force with the exact direct sum: B crosses the target within 1e-35 (relative) of rho*
    lo = _exact_from_mpf(rho) * (1 - Fraction(1, 10**35))
    hi = _exact_from_mpf(rho) * (1 + Fraction(1, 10**35))
    assert exact_B(n, lo) < target < exact_B(n, hi)
    # float64: to ~1e-13 relative (the recursion's rounding bounds the root's accuracy)
    assert abs(load_for_blocking(n, target) - float(rho)) <= 1e-13 * float(rho)


def test_load_for_blocking_known_table_values():
    # classical Erlang B tables (15 servers at 1%: 8.108 Erlang; 10 at 1%: 4.461): the problem statement
    assert abs(load_for_blocking(15, Fraction(1, 100)) - 8.108) < 5e-4
    assert abs(load_for_blocking(10, Fraction(1, 100)) - 4.461) < 5e-4


def test_load_below_the_float64_range_is_recomputed_with_mpmath():
    # B(1, rho) = rho/(1 + rho) = 1e-400  <=>  rho = 1e-400/(1 - 1e-400): not a double
    rho = load_for_blocking(1, Fraction(1, 10**400))
    assert isinstance(rho, mpmath.mpf) and rel(rho, mpf(Fraction(1, 10**400) / (1 - Fraction(1, 10**400)))) < 1e-15


@pytest.mark.parametrize("call, message", [
    (lambda: ErlangB(0, 5), "servers = 0: must be >= 1"),
    (lambda: ErlangB(10, -5), "load = -5: must be > 0"),
    (lambda: ErlangB(2.5, 5), "servers"),
    (lambda: ErlangB(10, 5, 0), "holding_time = 0: must be > 0"),
    (lambda: ErlangBSizeRequest(Fraction(3, 2), load=5), "target_blocking"),
    (lambda: ErlangBSizeRequest(Fraction(1, 2), load=5, servers=3), "exactly one"),
    (lambda: ErlangBSizeRequest(Fraction(1, 2)), "exactly one"),
])
def test_bad_input_is_refused_with_the_parameter_named(call, message):
    with pytest.raises(ParameterError, match=message):
        call()


def test_servers_budget():
    with pytest.raises(BudgetError, match="servers"):
        ErlangB(10**7 + 1, 5)
    with limits.limits(servers=10**8):
        assert ErlangB(10**7 + 1, 10**30).evaluate().blocking_probability > 0.999


def test_service_mix_worked_example():
    # ratios 1:2, ws = 0.1 s and 0.3 s, R = 14 (docs/guides/erlang-b.md)
    mix = ServiceMix((1, 2), (Fraction(1, 10), Fraction(3, 10)), 14, reference=1)
    S = mix.admitted_rates()
    assert S[0] * Fraction(1, 10) + S[1] * Fraction(3, 10) == 14 and S[1] == 2 * S[0]  # eq. (5), the ratio kept
    assert S == (20, 40) and mix.equivalence_coefficients() == (1, 3)  # eq. (6)
    assert mix.reference_capacity() == 140 == mix.equivalent_reference_rate()  # 20 + 3 * 40
    with pytest.raises(ParameterError, match="same nonzero length"):
        ServiceMix((1, 2), (1,), 3)
    with pytest.raises(ParameterError, match="reference"):
        ServiceMix((1, 2), (1, 2), 3, reference=3)


# -- command line ---------------------------------------------------------------------------------------

KEYS = ["blocking_probability", "carried_load", "lost_load", "mean_busy_windows", "window_occupancy",
        "log10_blocking_probability"]
RATE_KEYS = ["arrival_rate", "carried_rate", "lost_rate", "mean_response_time"]


def test_cli_eval_float64_and_50_digits():
    code, out, _ = cli(["eval", "erlang-b", "--servers", "10", "--load", "5", "--json"])
    assert code == 0
    m = json.loads(out)["measures"]
    assert list(m) == KEYS  # the old keys, without the rates when no holding time is given
    ref = exact_B(10, Fraction(5))
    assert abs(m["blocking_probability"] - float(ref)) < 1e-16
    assert abs(m["carried_load"] - float(5 * (1 - ref))) < 1e-14
    assert m["mean_busy_windows"] == m["carried_load"]  # eq. (3)
    code, out, _ = cli(["eval", "erlang-b", "--servers", "10", "--load", "5", "--digits", "50", "--holding-time",
                        "0.2", "--json"])
    m = json.loads(out)["measures"]
    assert list(m) == KEYS + RATE_KEYS
    with mpmath.workdps(60):
        assert rel(mpmath.mpf(m["blocking_probability"]), mpf(ref)) < mpmath.mpf(10) ** -48
        assert rel(mpmath.mpf(m["carried_rate"]), mpf(5 * (1 - ref) * 5)) < mpmath.mpf(10) ** -48
        assert mpmath.mpf(m["mean_response_time"]) == mpmath.mpf(1) / 5  # eq. (4): w_s = 1/mu


def test_cli_eval_below_the_float64_range():
    code, out, _ = cli(["eval", "erlang-b", "--servers", "400", "--load", "3", "--json"])
    doc = json.loads(out)
    m = doc["measures"]
    assert code == 0 and isinstance(m["blocking_probability"], str) and isinstance(m["log10_blocking_probability"],
                                                                                  float)
    assert rel(mpmath.mpf(m["blocking_probability"]), mpf(exact_B(400, Fraction(3)))) < 1e-15
    assert doc["notes"]


def test_cli_size_both_directions():
    code, out, _ = cli(["size", "erlang-b", "--load", "8.108", "--target-blocking", "0.01", "--json"])
    assert code == 0
    res = json.loads(out)
    assert res["servers"] == 15 and set(res) == {"servers", "load", "blocking_probability",
                                                 "blocking_with_one_fewer", "carried_load"}
    assert res["blocking_probability"] <= 0.01 < res["blocking_with_one_fewer"]
    assert abs(res["blocking_probability"] - float(exact_B(15, Fraction(8108, 1000)))) < 1e-17
    code, out, _ = cli(["size", "erlang-b", "--servers", "15", "--target-blocking", "0.01", "--holding-time", "0.2",
                        "--json"])
    res = json.loads(out)
    assert code == 0 and res["servers"] == 15
    assert set(res) == {"servers", "load", "blocking_probability", "carried_load", "arrival_rate"}
    rho = Fraction(res["load"])
    assert exact_B(15, rho * (1 - Fraction(1, 10**12))) < Fraction(1, 100) < exact_B(15, rho * (1 + Fraction(1, 10**12)))
    assert abs(res["arrival_rate"] - res["load"] * 5) < 1e-12
    code, out, _ = cli(["size", "erlang-b", "--servers", "15", "--target-blocking", "0.01", "--digits", "30",
                        "--json"])
    res = json.loads(out)
    assert code == 0 and isinstance(res["load"], str)
    assert exact_B(15, Fraction(res["load"]) * (1 - Fraction(1, 10**28))) < Fraction(1, 100) \
        < exact_B(15, Fraction(res["load"]) * (1 + Fraction(1, 10**28)))


@pytest.mark.parametrize("argv", [
    ("eval", "erlang-b", "--servers", "10", "--load", "-5"),
    ("eval", "erlang-b", "--servers", "0", "--load", "5"),
    ("eval", "erlang-b", "--servers", "2.5", "--load", "5"),
    ("eval", "erlang-b", "--servers", "10"),
    ("eval", "erlang-b", "--servers", "10", "--load", "abc"),
    ("eval", "erlang-b", "--servers", "100000000", "--load", "5"),
    ("eval", "erlang-b", "--servers", "10", "--load", "1e5000"),
    ("size", "erlang-b", "--load", "5", "--target-blocking", "1.5"),
    ("size", "erlang-b", "--load", "5", "--servers", "3", "--target-blocking", "0.01"),
    ("size", "erlang-b", "--load", "5"),
    ("size", "erlang-b", "--load", "1e300", "--target-blocking", "0.5"),
    ("size", "erlang-b", "--load", "5", "--target-blocking", "0.01", "--holding-time", "0"),
])
def test_cli_bad_input_exits_2_with_one_line(argv):
    code, out, err = cli(argv)
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1


def test_cli_errors_name_the_option():
    assert "--servers = 0: must be >= 1" in cli(["eval", "erlang-b", "--servers", "0", "--load", "5"])[2]
    assert "--target-blocking = 1.5" in cli(["size", "erlang-b", "--load", "5", "--target-blocking", "1.5"])[2]
    assert "--limit servers=" in cli(["eval", "erlang-b", "--servers", "100000000", "--load", "5"])[2]


# -- derivation -----------------------------------------------------------------------------------------


def test_derivation_steps_are_computed_or_checked_and_pass_at_50_digits():
    from qderive.derivations.erlang_b import derivation

    d = derivation()
    assert all(s.computed or s.check for s in d.steps)
    results = d.verify(50)
    assert results and all(r.passed for r in results), [r for r in results if not r.passed]
    assert d.recursions


def test_derivation_fails_against_a_wrong_relation():
    """The step hooks can fail: the displayed recursion with rho replaced by rho + 1/10 does not hold."""
    import sympy as sp

    from qderive.derivations import erlang_b as D
    from qderive.derivations.framework import relation_check

    wrong = D.REL_R.subs(D.rho, D.rho + sp.Rational(1, 10))
    passed, _, _ = relation_check(wrong, D._bind_R)(30)
    assert not passed
