"""Uniform setups and vacations inside the blocks' waiting times in the infinite room (issue 26 item 2:
``numeric/engines/blocks_shifts.py``, the Laurent parts (SU) at start threshold 1 and (SN) with poles of higher order
under N > 1), against things computed another way.

* M/M/1 with a uniform setup on [a, b], no vacations, single arrivals: the residual factor is linear in the setup's
  law (V_r(s) (1 + lambda E S) = lambda (1 - S*(s)) / s + S*(s)), so the constant-setup formula of
  tests/test_blocks_kinked.py (Takagi 1991, vol. 1, sec. 2.5) mixed over the uniform density,
  P(W > t) = int_a^b [lambda int_0^d S_0(t - x) dx + S_0(t - d)] dd / ((b - a) (1 + lambda E S)), S_0 the M/M/1
  wait's tail (the sojourn's: e^{-(mu - lambda) u}); written here and integrated by ``mpmath.quad`` (split at the
  kinks x = t, d = t), to 1e-15 at 20 digits (the inversions' confirmed digits);
* (SU) run on a uniform vacation alone (no setup, no close-down) against ``vacation_wait.shift_tails`` (another
  formula: integration by parts of the vacation's linear survival against the iterated tails Pi_1, Pi_2), multiple
  and single vacations, wait and sojourn, to 1e-17 at 20 digits (measured 5e-32), and float64 (where it does not
  escalate) within 1e-9;
* the uniform law on [1 - e, 1 + e] tends to the constant 1 computed by (SH) (the jets, another formula) as e^2
  (the mixture's second-order term): the difference at e = 1/1000 is below 1e-7 and quarters when e halves;
* (SN) at N = 1 (the threshold transform, another formulation) equals (SU) with a uniform setup, to 1e-17;
* under N = 3: a uniform single vacation and a uniform setup against a seeded simulation (99 % simultaneous
  intervals, Bonferroni over the checks);
* the CLI computes the issue's examples; multiple uniform vacations under N > 1 stay refused in one line.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli

from qderive.numeric.engines import blocks as B
from qderive.numeric.engines import vacation_wait as VW
from qderive.numeric.engines.blocks_shifts import density_shift_laws, threshold_shift_laws
from qderive.numeric.response import tails
from qderive.numeric.simulation.blocks import simulate_blocks
from qderive.symbolic.batches import Constant, FinitePMF, Geometric
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, Uniform
from qderive.symbolic.models.vacation import VacationPolicy, VacationQueue

MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator


def _mm1_uniform_setup_tail(lam, mu, a, b, t, sojourn=False):
    """P(W > t) (or P(W + B > t)) of M/M/1 with a uniform setup on [a, b] and no vacations (module docstring)."""
    lam, mu, a, b, t = (_mp(x) for x in (lam, mu, a, b, t))
    rho = lam / mu

    def S0(u):
        if u < 0:
            return mpmath.mpf(1)
        return mpmath.exp(-(mu - lam) * u) if sojourn else rho * mpmath.exp(-mu * (1 - rho) * u)

    def given(d):  # the constant setup d's term
        cuts = [0, d] if not 0 < t < d else [0, t, d]
        return lam * mpmath.quad(lambda x: S0(t - x), cuts) + S0(t - d)

    outer = [a, b] if not a < t < b else [a, t, b]
    return mpmath.quad(given, outer) / (b - a) / (1 + lam * (a + b) / 2)


def test_mm1_with_a_uniform_setup():
    lam, mu, a, b = F(1, 2), F(1), F(1, 2), F(2)
    model = VacationQueue(lam, Constant(1), Exponential(1 / mu), None, MULTIPLE, 1, Uniform(a, b), None)
    laws = B.response_laws(model)
    ts = [F(1), F(3, 2), F(3), F(12)]  # below, inside and beyond the setup's support
    wait = tails(laws["wait"], ts, 20)[0]
    sojourn = tails(laws["sojourn"], ts, 20)[0]
    with mpmath.workdps(30):
        for t, w, s in zip(ts, wait, sojourn):
            want = _mm1_uniform_setup_tail(lam, mu, a, b, t)
            assert abs(w - want) <= mpmath.mpf(10) ** -15 * want, (t, w, want)
            want = _mm1_uniform_setup_tail(lam, mu, a, b, t, sojourn=True)
            assert abs(s - want) <= mpmath.mpf(10) ** -15 * want, (t, s, want)
    # float64 (escalated with a note where the signed parts cancel) within 1e-9 of the 20-digit value
    fast = tails(laws["wait"], ts, None)[0]
    for x, y in zip(fast, wait):
        assert abs(x - float(y)) <= 1e-9 * float(y)


@pytest.mark.parametrize("policy", [MULTIPLE, SINGLE])
def test_a_uniform_vacation_alone_equals_the_kinked_vacation_tails(policy):
    model = VacationQueue(F(1, 2), Geometric(F(3, 2)), Erlang(2, F(2, 3)), Uniform(F(1, 2), F(2)), policy, 1, None,
                          None)
    ts = [F(1, 2), F(2), F(6)]
    for kind in ("wait", "sojourn"):
        ours = density_shift_laws(model, kind)
        theirs = tails(VW.response_laws(model)[kind], ts, 20)[0]
        with mpmath.workdps(30):
            for x, y in zip(ours(ts, 20)[0], theirs):
                assert abs(x - y) <= mpmath.mpf(10) ** -17 * y
        for x, y in zip(ours(ts, None)[0], theirs):
            assert x is None or abs(x - float(y)) <= 1e-9 * float(y)


def test_a_narrow_uniform_setup_tends_to_the_constant_one():
    def model(setup):
        return VacationQueue(F(1, 2), Geometric(F(3, 2)), Erlang(2, F(2, 3)), Exponential(1), MULTIPLE, 1, setup, None)

    ts = [F(3, 2), F(4)]
    constant = B.response_laws(model(Deterministic(1)))["wait"].tails(ts, 20)[0]
    gaps = []
    for e in (F(1, 1000), F(1, 2000)):
        narrow = B.response_laws(model(Uniform(1 - e, 1 + e)))["wait"].tails(ts, 20)[0]
        gaps.append([abs(x - y) for x, y in zip(narrow, constant)])
    for g in gaps[0]:
        assert 1e-12 < g < 1e-7
    for g0, g1 in zip(*gaps):  # second order in e: the ratio is 4 (measured 4.00)
        assert 3.5 < g0 / g1 < 4.5


def test_the_threshold_transform_at_n1_equals_the_laurent_parts():
    model = VacationQueue(F(1, 2), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(2, 3)), Exponential(F(1, 2)),
                          SINGLE, 1, Uniform(F(1, 4), F(3, 4)), Exponential(F(1, 3)))
    ts = [F(1, 2), F(1), F(4)]
    ours = threshold_shift_laws(model, "wait")(ts, 20)[0]
    theirs = density_shift_laws(model, "wait")(ts, 20)[0]
    with mpmath.workdps(30):
        for x, y in zip(ours, theirs):
            assert abs(x - y) <= mpmath.mpf(10) ** -17 * y


@pytest.mark.slow  # about 8 s: the float64 sums escalate to 15 digits (two uniform laws' signed parts)
def test_uniform_laws_under_the_n_policy_against_the_simulator():
    model = VacationQueue(F(1, 2), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(2, 3)), Uniform(F(1, 2), F(3, 2)),
                          SINGLE, 3, Uniform(F(1, 4), F(3, 4)), None)
    laws = B.response_laws(model)
    wait = tails(laws["wait"], [F(1, 2), F(2)], None)[0]
    sojourn = tails(laws["sojourn"], [F(3)], None)[0]
    sim = simulate_blocks(model, customers=20_000, replications=10, seed=2611, quiet=True,
                          wait_tail=("1/2", "2"), sojourn_tail=("3",))
    checks = [(sim["wait_tail"][k], v) for k, v in zip(("1/2", "2"), wait)]
    checks.append((sim["sojourn_tail"]["3"], sojourn[0]))
    level = 1 - 0.01 / len(checks)
    for estimate, value in checks:
        lo, hi = estimate.interval(level)
        assert lo <= float(value) <= hi, (float(value), lo, hi)


def test_the_cli_computes_the_issue_examples():
    base = ["eval", "vacation-infinite", "--batch", "geometric:mean=2", "--load", "0.5", "--service", "exp:mean=1",
            "--wait-tail", "2", "--json"]
    for extra in (["--vacation", "exp:mean=1", "--setup", "uniform:low=0.5,high=1.5"],
                  ["--vacation", "uniform:low=0.5,high=1.5", "--start-threshold", "3", "--vacation-policy", "single"]):
        code, out, err = cli(base + extra)
        assert code == 0, err
        assert '"wait_tail": {"2": 0.' in out, out


def test_multiple_uniform_vacations_under_the_n_policy_are_refused_in_one_line():
    code, out, err = cli(["eval", "vacation-infinite", "--batch", "geometric:mean=2", "--load", "0.5", "--service",
                          "exp:mean=1", "--vacation", "uniform:low=0.5,high=1.5", "--start-threshold", "3",
                          "--wait-tail", "2"])
    assert code != 0 and "--vacation" in err and "shifts" in err and "Traceback" not in err, err
