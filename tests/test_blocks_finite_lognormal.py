"""A lognormal setup, close-down, service or vacation in the finite room with blocks (issue 26 item 2, issue 28 item 1;
branch lb26): the period families of ``numeric/engines/vacation_finite_wait.py`` (item 6) with the lognormal's counts
from its size-biased laws (item 8, ``numeric/size_biased.py``), cut where the rows stop, against things computed
another way:

* Little's mean wait of the finite blocks' state law (``numeric/engines/blocks_finite.py``: the departure chain and
  renewal reward, its own counts of the lognormal by the law's quadrature; no tagged customer, no transform);
* in a large room at a low load, the infinite room: its tails by the inversion of the blocks' transform (WS) with the
  lognormal's own transform (``numeric/engines/blocks.py``, no count sequences), and its moments with the lognormal
  replaced by the hyperexponential H2 of the same first three moments (E[W^k] of the infinite room needs only the first
  k + 1 moments of each law: exact rational arithmetic of a closed form, no lognormal at all);
* a seeded simulation of the stages with the lognormal laws themselves (``numeric/simulation/blocks.py``);
* the float64 inversion against 25 digits (the precision policy).

Note: in the *finite* room the moments depend on each law beyond its moments (the counts of arrivals during a setup
decide the admissions), so a moment-matched phase-type law is not an exact check there: the infinite room's limit is.
"""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli
from finite_blocks_oracle import PMF3, SINGLE, assert_mean_wait_is_littles, assert_simulated_tails_hold_and_without

from qderive.numeric.backend import FLOAT64
from qderive.numeric.engines import blocks as B
from qderive.numeric.engines.blocks_finite import finite_measures
from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.response import tails
from qderive.symbolic.batches import FinitePMF
from qderive.symbolic.laws import Erlang, Exponential, HyperExponential
from qderive.symbolic.laws.lognormal import LogNormal
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy, VacationQueue

MULTIPLE = VacationPolicy.MULTIPLE
LN = LogNormal(F(1, 2), F(2))  # mean 1/2, scv 2: moments 1/2, 3/4, 27/8


def _model(r=6, admission=Admission.PARTIAL, policy=SINGLE, rate=F(1, 2), setup=LN, close=LN, service=None,
           vacation=Exponential(F(1, 2))):
    return FiniteVacationQueue(rate, PMF3, service or Erlang(2, F(2, 3)), vacation, r, admission, policy,
                               setup=setup, close_down=close)


def _h2(law) -> HyperExponential:
    """The hyperexponential of the first three moments of ``law`` (Prony: with a_n = E T^n / n!, the branch means are
    the roots of x^2 - s x + t, s = (a_3 - a_1 a_2) / (a_2 - a_1^2), t = s a_1 - a_2), at 60 digits as exact
    fractions of 55 digits: its moments equal the law's to about 1e-54."""
    with mpmath.workdps(60):
        a1, a2, a3 = [mpmath.mpf(F(law.moment(n)).numerator) / F(law.moment(n)).denominator / mpmath.factorial(n)
                      for n in (1, 2, 3)]
        s = (a3 - a1 * a2) / (a2 - a1 ** 2)
        t = s * a1 - a2
        d = mpmath.sqrt(s * s - 4 * t)
        x1, x2 = (s + d) / 2, (s - d) / 2
        p = F(mpmath.nstr((a1 - x2) / (x1 - x2), 55))
        return HyperExponential((p, 1 - p), (F(mpmath.nstr(x1, 55)), F(mpmath.nstr(x2, 55))))


def test_the_moment_matched_h2_has_the_lognormals_moments():
    h2 = _h2(LN)
    for n in (1, 2, 3):
        assert abs(F(h2.moment(n)) - F(LN.moment(n))) <= F(1, 10 ** 50)


@pytest.mark.parametrize("admission, policy, setup, close", [
    (Admission.PARTIAL, SINGLE, LN, LN), (Admission.WHOLE, MULTIPLE, LN, None), (Admission.PARTIAL, None, None, LN)])
def test_mean_wait_is_littles(admission, policy, setup, close):
    """E[W] of the admitted customer's law (the lognormal's counts cut at the rows, the remainders from its totals)
    equals Little's mean wait of the finite blocks' state law (the departure chain, the law's quadrature counts), to
    1e-12 in float64 and 1e-25 at 30 digits (both exact up to their arithmetic; measured 2e-16)."""
    assert_mean_wait_is_littles(_model(admission=admission, policy=policy or MULTIPLE, setup=setup, close=close)
                                if policy else _no_vacation(admission, setup, close))


def _no_vacation(admission, setup, close):
    return _model(admission=admission, policy=MULTIPLE, setup=setup, close=close, vacation=None)


def test_a_large_room_equals_the_infinite_room():
    """r = 60 at a low load (rho 0.2, loss 3.9e-9) with a lognormal setup: the tails at t = 1, 4 against the infinite
    room's inversion of (WS) with the lognormal's own transform, within 10 times the loss (measured 2e-9 and 5e-9:
    the room's effect); the first two moments against the infinite room with the moment-matched H2 setup (exact,
    no lognormal), within 1e-6 and 1e-4 relative (measured 2.4e-7 and 9.3e-6: the room cuts the heavy tail's longest
    waits, the moments feel it more than the tails near the mean). Dropping the setup moves E[W] by 0.6."""
    model = _model(r=60, policy=MULTIPLE, rate=F(1, 5), close=None)
    with FLOAT64:
        loss = float(finite_measures(model, FLOAT64)["loss_probability"])
    assert 0 < loss < 1e-8
    laws = response_laws(model)["wait"]
    got = tails(laws, [F(1), F(4)], None)[0]
    infinite = VacationQueue(F(1, 5), PMF3, Erlang(2, F(2, 3)), Exponential(F(1, 2)), MULTIPLE, setup=LN)
    want = tails(B.infinite_response_laws(infinite)["wait"], [F(1), F(4)], None)[0]
    for g, w in zip(got, want):
        assert abs(g - w) <= 10 * loss
    matched = VacationQueue(F(1, 5), PMF3, Erlang(2, F(2, 3)), Exponential(F(1, 2)), MULTIPLE, setup=_h2(LN))
    exact = B.infinite_response_laws(matched)["wait"].moment_values(2, None)
    moments = laws.moment_values(2, None)
    assert abs(moments[0] - exact[0]) <= 1e-6 * exact[0]
    assert abs(moments[1] - exact[1]) <= 1e-4 * exact[1]


@pytest.mark.slow  # about 5 s: the 25-digit inversion
def test_float64_agrees_with_25_digits():
    """The float64 inversion (its self-check accepted) against the 25-digit law: tails to 1e-9 relative (the precision
    policy's float64 target; measured 3e-11 at t = 2 with both blocks lognormal), the moments to 1e-12 (measured
    3e-16)."""
    model = _model(r=8)
    law = response_laws(model)["wait"]
    ts = [F(1), F(4)]
    rough, fine = tails(law, ts, None)[0], tails(law, ts, 25)[0]
    for a, b in zip(rough, fine):
        assert abs(a - float(b)) <= 1e-9 * float(b)
    for a, b in zip(law.moment_values(2, None), law.moment_values(2, 25)):
        assert abs(a - float(b)) <= 1e-12 * float(b)


@pytest.mark.slow  # about 3 s: 8 x 10 000 customers and the inversion
def test_lognormal_blocks_tails_against_the_simulator():
    """A seeded simulation with the lognormal setup and close-down themselves: 99 % simultaneous intervals hold the
    float64 P(W > 1), P(W > 4), P(T > 3); without the setup P(W > 1) lies outside (the lognormal setup matters)."""
    assert_simulated_tails_hold_and_without(_model(), setup=None)


BASE = ["eval", "vacation-finite", "--batch", "geometric:mean=2", "--load", "0.5", "--capacity", "20", "--service",
        "exp:mean=1", "--vacation", "exp:mean=1"]


@pytest.mark.parametrize("extra", [["--setup", "lognormal:mean=1,scv=2"],
                                   ["--close-down", "lognormal:mean=1/2,scv=4"],
                                   ["--setup", "exp:mean=1/2", "--service", "lognormal:mean=1,scv=2"]])
def test_cli_computes_the_tails_and_moments(extra):
    """Issue 26's refused command computes: the tail, the median and the moments; the median's tail is 0.5
    (to the float64 policy) and E[W] is the model's mean wait (Little: the departure chain)."""
    code, out, err = cli(BASE + extra + ["--wait-tail", "2", "--wait-quantile", "0.5", "--wait-moments", "2",
                                         "--json"])
    assert code == 0, err
    got = json.loads(out)["measures"]
    assert 0 < got["wait_tail"]["2"] < 1
    assert abs(got["wait_moments"][0] - got["mean_wait"]) <= 1e-12 * got["mean_wait"]
    code, out, err = cli(BASE + extra + ["--wait-tail", str(got["wait_quantile"]["0.5"]), "--json"])
    assert code == 0, err
    assert abs(next(iter(json.loads(out)["measures"]["wait_tail"].values())) - 0.5) <= 1e-8


@pytest.mark.parametrize("threshold, setup, close, service", [
    (2, LN, None, None), (3, Exponential(F(1, 2)), LN, None), (2, None, None, LogNormal(F(1, 2), F(2)))])
def test_a_start_threshold_mean_wait_is_littles(threshold, setup, close, service):
    """N > 1 (item 7: the excess of the customers still below N takes the lognormal's derivatives by its own rule on
    its size-biased laws, as the infinite room): E[W] equals Little's mean wait of the departure chain, 1e-12 in float64
    and 1e-25 at 30 digits (measured 2e-16 and 5e-41)."""
    model = _model(setup=setup, close=close, service=service)
    assert_mean_wait_is_littles(dataclasses.replace(model, start_threshold=threshold))


def test_a_start_threshold_in_a_large_room_equals_the_infinite_room():
    """N = 2, a lognormal setup, single vacations, r = 60 at rho 0.2 (loss 3.1e-9): the tails at t = 1, 4 and the
    first two moments against the infinite room's (WN) with the same lognormal, within 10 times the loss for the tails
    (measured 1.5e-9 and 3.6e-9) and 1e-6, 1e-4 relative for the moments (measured 1.4e-7 and 2.6e-6: the room
    cuts the longest waits)."""
    model = dataclasses.replace(_model(r=60, rate=F(1, 5), close=None), start_threshold=2)
    with FLOAT64:
        loss = float(finite_measures(model, FLOAT64)["loss_probability"])
    assert 0 < loss < 1e-8
    law = response_laws(model)["wait"]
    infinite = VacationQueue(F(1, 5), PMF3, Erlang(2, F(2, 3)), Exponential(F(1, 2)), SINGLE, setup=LN,
                             start_threshold=2)
    other = B.infinite_response_laws(infinite)["wait"]
    for g, w in zip(tails(law, [F(1), F(4)], None)[0], tails(other, [F(1), F(4)], None)[0]):
        assert abs(g - w) <= 10 * loss
    for g, w, tol in zip(law.moment_values(2, None), other.moment_values(2, None), (1e-6, 1e-4)):
        assert abs(g - w) <= tol * w


def test_cli_computes_a_lognormal_setup_with_a_start_threshold():
    """N = 3 with a lognormal setup: the tail, and E[W] equal to the output's mean wait (Little)."""
    code, out, err = cli(BASE + ["--setup", "lognormal:mean=1,scv=2", "--start-threshold", "3", "--wait-tail", "2",
                                 "--wait-moments", "1", "--json"])
    assert code == 0, err
    got = json.loads(out)["measures"]
    assert 0 < got["wait_tail"]["2"] < 1
    assert abs(got["wait_moments"][0] - got["mean_wait"]) <= 1e-12 * got["mean_wait"]


def test_the_quantiles_secant_start_finds_a_root_written_by_hand():
    """The first D-digit root of the quantile search by secant steps from a rough guess and its slope
    (numeric/response.py ``_secant_root``): on g(x) = log P(T > e^x) - log(level) of the lognormal itself, P(T > t) =
    erfc((ln t - mu) / (sigma sqrt 2)) / 2 written here with mpmath at 40 digits, from a guess 1e-11 off with a slope 1e-6
    off (the float64 guess's errors), the root within the search's tolerance 1e-19 of mpmath's findroot (a different
    algorithm) after at most three evaluations of g; and None without a slope (the caller brackets)."""
    from qderive.numeric.response import Guess, _secant_root

    calls = []
    with mpmath.workdps(40):
        sigma = mpmath.sqrt(mpmath.log(3))
        mu = mpmath.log(mpmath.mpf(1) / 2) - sigma ** 2 / 2
        level = mpmath.mpf("0.01")

        def g(x):
            calls.append(x)
            return mpmath.log(mpmath.erfc((x - mu) / (sigma * mpmath.sqrt(2))) / 2) - mpmath.log(level)

        want = mpmath.findroot(lambda x: mpmath.erfc((x - mu) / (sigma * mpmath.sqrt(2))) / 2 - level, 1)
        h = mpmath.mpf(10) ** -8
        slope = float((g(want + h) - g(want - h)) / (2 * h)) * (1 + 1e-6)
        calls.clear()
        guess = Guess(float(want) + 1e-11)
        guess.slope = slope
        tol = mpmath.mpf(10) ** -19
        got = _secant_root(g, guess, tol, mpmath.mpf)
        assert got is not None and abs(got - want) <= tol * max(1, abs(want)) and len(calls) <= 3
        assert _secant_root(g, Guess(float(want)), tol, mpmath.mpf) is None


def _by_hand():
    """One waiting place (r = 1), single arrivals at rate 1/2, exponential service of mean 1, no vacation, a lognormal
    setup S: a customer finding the server idle waits S (nobody else is admitted during the setup: the room's one place
    is its own); one arriving during a service with nobody waiting waits the residual service, Exp(1); per idle period
    one of the first kind and lambda / mu of the second (each service sees an arrival before its end with probability
    lambda / (lambda + mu), a geometric count). So, with rho = lambda / mu = 1/2,

        P(W > t) = (P(S > t) + rho e^{-mu t}) / (1 + rho),  E W^k = (E S^k + rho k! / mu^k) / (1 + rho),

    P(S > t) = erfc((ln t - m) / (s sqrt 2)) / 2, s^2 = ln(1 + scv), m = ln E S - s^2 / 2."""
    model = FiniteVacationQueue(F(1, 2), FinitePMF({1: F(1)}), Exponential(F(1)), None, 1, Admission.PARTIAL,
                                MULTIPLE, setup=LN)

    def tail(t):
        s2 = mpmath.log(1 + mpmath.mpf(2))
        m = mpmath.log(mpmath.mpf(1) / 2) - s2 / 2
        survival = mpmath.erfc((mpmath.log(t) - m) / mpmath.sqrt(2 * s2)) / 2
        return (survival + mpmath.exp(-t) / 2) / (1 + mpmath.mpf(1) / 2)

    moments = [(F(LN.moment(k)) + F(1, 2) * math.factorial(k)) / F(3, 2) for k in (1, 2)]
    return model, tail, moments


def test_a_room_of_one_place_against_the_formula_written_by_hand():
    """:func:`_by_hand`: the float64 tails at t = 1/4, 1, 4 to 1e-9 relative (the policy's float64 target; measured
    4e-17) against mpmath's erfc at 40 digits, the moments to 1e-13 (measured exact in float64) against the exact
    rationals."""
    model, tail, moments = _by_hand()
    law = response_laws(model)["wait"]
    ts = [F(1, 4), F(1), F(4)]
    with mpmath.workdps(40):
        for t, got in zip(ts, tails(law, ts, None)[0]):
            want = tail(mpmath.mpf(t.numerator) / t.denominator)
            assert abs(got - want) <= 1e-9 * want
    for got, want in zip(law.moment_values(2, None), moments):
        assert abs(got - float(want)) <= 1e-13 * float(want)


@pytest.mark.slow  # about 2 s: the 20-digit inversion
def test_a_room_of_one_place_at_20_digits():
    """:func:`_by_hand` at 20 digits: the tail at t = 1 and the moments to 1e-18 (measured 3e-36 at 25 digits)."""
    model, tail, moments = _by_hand()
    law = response_laws(model)["wait"]
    got = tails(law, [F(1)], 20)[0][0]
    with mpmath.workdps(40):
        assert abs(got - tail(mpmath.mpf(1))) <= mpmath.mpf(10) ** -18 * got
        for value, want in zip(law.moment_values(2, 20), moments):
            assert abs(value - mpmath.mpf(want.numerator) / want.denominator) <= mpmath.mpf(10) ** -18 * value
