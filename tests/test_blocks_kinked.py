"""Constant and empirical (few-atom) laws inside the blocks' waiting times in the infinite room
(``numeric/engines/blocks_shifts.py``, the shifted sums (SH)), and the close-down, which enters the wait through
C*(lambda) alone, against things computed another way.

* M/M/1 with a constant (or two-atom) setup and no vacations, single arrivals: the customer who finds the server
  idle waits for the setup's rest, which is D with probability 1 / (1 + lambda E S) per atom weight and uniform on
  (0, D) otherwise (Takagi 1991, vol. 1, sec. 2.5), so with S_0(u) = rho e^{-mu (1 - rho) u} the M/M/1 wait's tail
  (1 for u < 0), P(W > t) = sum_i w_i [lambda int_0^{d_i} S_0(t - x) dx + S_0(t - d_i)] / (1 + lambda E S), and the
  sojourn's with S_0 replaced by e^{-(mu - lambda) u}: written here and integrated by ``mpmath.quad``, to 1e-15 at
  20 digits (the inversions' confirmed digits; measured about 1e-20);
* without a setup or a close-down, (SH) run on the start rule alone against the kinked-vacation tails of
  ``vacation_wait.shift_tails`` (another formula: integration by parts of the residual vacation's linear survival
  pieces against the iterated tails), constant and empirical vacations, multiple and single, to 1e-17 at 20 digits
  (measured 1e-31), and float64 within 1e-9;
* the normalisation c sum_D (D y_D(0) + m_D) = 1 of the jets equals lambda l_1 / E[Y] of the moment interpreter, to
  1e-25 at 30 digits (two interpreters of the same blocks, one on transforms, one on factorial moments);
* a seeded simulation (99 % simultaneous intervals, Bonferroni over the checks) with geometric batches, multiple
  constant vacations, an empirical setup and a constant close-down (start threshold 1), and with a constant
  close-down under N = 3 (the threshold transform: the close-down enters through C*(lambda) only);
* float64 within 1e-9 of the 20-digit value (the precision policy's float64 criterion);
* under N > 1 the shifted parts (SN) of the threshold transform (``blocks_shifts.threshold_shift_laws``): run at
  N = 1 they equal (SH) (another formulation: the decomposition W = W_none + R with iterated tails) to 1e-17 at 20
  digits (measured: all 20 digits), with multiple constant vacations too (the geometric series of shifts, refused
  to users under N > 1: its quantile search did not end in the budget); at N = 3 a constant setup with exponential
  vacations, and an empirical setup with empirical single vacations and a constant close-down, against a seeded
  simulation (99 % intervals, Bonferroni over the eight checks);
* what stays refused says why: a uniform service with a uniform setup, a constant service with a constant setup.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli

from qderive.numeric.backend import mp_context
from qderive.numeric.engines import blocks as B
from qderive.numeric.engines.blocks_shifts import _coefficients
from qderive.numeric.response import quantiles, tails
from qderive.numeric.simulation.blocks import simulate_blocks
from qderive.symbolic.batches import Constant, FinitePMF, Geometric
from qderive.symbolic.laws import Deterministic, Empirical, Erlang, Exponential
from qderive.symbolic.models.vacation import VacationPolicy, VacationQueue

MULTIPLE = VacationPolicy.MULTIPLE


def _mm1_setup_tail(lam, mu, atoms, t, sojourn=False):
    """P(W > t) (or P(W + B > t)) of M/M/1 with a setup of atoms ((d, w), ...) and no vacations (module docstring)."""
    lam, mu, t = (mpmath.mpf(x.numerator) / x.denominator for x in (lam, mu, t))
    rho = lam / mu

    def S0(u):
        if u < 0:
            return mpmath.mpf(1)
        return mpmath.exp(-(mu - lam) * u) if sojourn else rho * mpmath.exp(-mu * (1 - rho) * u)

    mean = sum(mpmath.mpf(d.numerator) / d.denominator * mpmath.mpf(w.numerator) / w.denominator for d, w in atoms)
    total = mpmath.mpf(0)
    for d, w in atoms:
        d, w = mpmath.mpf(d.numerator) / d.denominator, mpmath.mpf(w.numerator) / w.denominator
        cuts = [0, d] if not 0 < t < d else [0, t, d]  # the kink of S0(t - x) at x = t
        total += w * (lam * mpmath.quad(lambda x: S0(t - x), cuts) + S0(t - d))
    return total / (1 + lam * mean)


@pytest.mark.parametrize("setup,atoms", [
    (Deterministic(F(3, 2)), ((F(3, 2), F(1)),)),
    (Empirical((F(1, 2), F(2))), ((F(1, 2), F(1, 2)), (F(2), F(1, 2)))),
])
def test_mm1_with_a_constant_or_empirical_setup(setup, atoms):
    lam, mu = F(1, 2), F(1)
    model = VacationQueue(lam, Constant(1), Exponential(1 / mu), None, MULTIPLE, 1, setup, None)
    laws = B.response_laws(model)
    ts = [F(1), F(3), F(12)]
    wait = tails(laws["wait"], ts, 20)[0]
    sojourn = tails(laws["sojourn"], ts, 20)[0]
    with mpmath.workdps(30):
        for t, w, s in zip(ts, wait, sojourn):
            want = _mm1_setup_tail(lam, mu, atoms, t)
            assert abs(w - want) <= mpmath.mpf(10) ** -15 * want, (t, w, want)
            want = _mm1_setup_tail(lam, mu, atoms, t, sojourn=True)
            assert abs(s - want) <= mpmath.mpf(10) ** -15 * want, (t, s, want)
    # float64 within 1e-9 of the 20-digit value
    fast = tails(laws["wait"], ts, None)[0]
    for a, b in zip(fast, wait):
        assert abs(a - float(b)) <= 1e-9 * float(b)


@pytest.mark.parametrize("policy,vacation", [
    (MULTIPLE, Deterministic(F(1))),
    (VacationPolicy.SINGLE, Empirical((F(1, 2), F(2), F(3)))),
])
def test_the_start_rule_alone_equals_the_kinked_vacation_tails(policy, vacation):
    from qderive.numeric.engines import vacation_wait as VW
    from qderive.numeric.engines.blocks_shifts import shift_laws

    model = VacationQueue(F(1, 2), Geometric(F(3, 2)), Erlang(2, F(2, 3)), vacation, policy, 1, None, None)
    ts = [F(1, 2), F(2)]
    for kind in ("wait", "sojourn"):
        ours = shift_laws(model, kind)
        theirs = tails(VW.response_laws(model)[kind], ts, 20)[0]
        with mpmath.workdps(30):
            for a, b in zip(ours(ts, 20)[0], theirs):
                assert abs(a - b) <= mpmath.mpf(10) ** -17 * b
        for a, b in zip(ours(ts, None)[0], theirs):
            assert abs(a - float(b)) <= 1e-9 * float(b)


def _model():
    """Geometric batches, multiple constant vacations, an empirical setup, a constant close-down (rho_bar = 1/2)."""
    return VacationQueue(F(1, 2), Geometric(F(3, 2)), Erlang(2, F(2, 3)), Deterministic(F(1)), MULTIPLE, 1,
                         Empirical((F(1, 4), F(1, 2), F(3, 2))), Deterministic(F(1, 3)))


def test_the_jets_normalise_as_the_moment_interpreter():
    model = _model()
    ctx = mp_context(30)
    with ctx:
        y0, m, _ = _coefficients(model, ctx)
        total = ctx.fsum([ctx.num(D) * y0[D] + m[D] for D in y0])
        mean_y = B.passage_moments(model, ctx, order=1)[0][1]
        want = mean_y / (ctx.num(model.rate) * ctx.num(model.batch.mean))
        assert abs(total - want) <= mpmath.mpf(10) ** -25 * want
        assert abs(ctx.fsum(y0.values()) - 1) <= mpmath.mpf(10) ** -25


def test_against_the_simulator():
    model = _model()
    n3 = VacationQueue(F(1, 2), Geometric(F(3, 2)), Erlang(2, F(2, 3)), Exponential(F(1)), MULTIPLE, 3, None,
                       Deterministic(F(1, 3)))
    level = 1 - 0.01 / 5
    checks = []
    for mdl, seed in ((model, 26), (n3, 28)):
        laws = B.response_laws(mdl)
        wait = tails(laws["wait"], [F(1), F(4)], None)[0]
        sojourn = tails(laws["sojourn"], [F(3)], None)[0]
        sim = simulate_blocks(mdl, customers=20_000, replications=10, seed=seed, quiet=True, wait_tail=("1", "4"),
                              sojourn_tail=("3",))
        checks += [(sim["wait_tail"]["1"], wait[0]), (sim["wait_tail"]["4"], wait[1])]
        if mdl is model:
            checks.append((sim["sojourn_tail"]["3"], sojourn[0]))
    assert len(checks) == 5
    for estimate, value in checks:
        lo, hi = estimate.interval(level)
        assert lo <= float(value) <= hi, (float(value), lo, hi)


def test_a_quantile_is_the_root_of_the_tails():
    laws = B.response_laws(_model())
    q = quantiles(laws["wait"], [F(9, 10)], None, 2.0)[0][0]
    for t, side in ((q * (1 - 1e-7), 1), (q * (1 + 1e-7), -1)):
        value = tails(laws["wait"], [F(t)], None)[0][0]
        assert side * (value - 0.1) > 0


@pytest.mark.parametrize("extra,option", [
    # a uniform setup computes now (tests/test_blocks_uniform.py); with a uniform service the queue without blocks
    # has kinks
    (["--service", "uniform:low=1/2,high=3/2", "--setup", "uniform:low=1/2,high=3/2"], "--service"),
    (["--service", "det:mean=1", "--setup", "det:mean=1"], "--service"),
])
def test_what_stays_refused_says_why(extra, option):
    base = ["eval", "vacation-infinite", "--rate", "1/4", "--batch", "geometric:mean=2", "--vacation", "exp:mean=1",
            "--service", "exp:mean=1"]
    code, out, err = cli(base + extra + ["--wait-tail", "1"])
    assert code != 0 and option in err and "Traceback" not in err, err


def test_the_cli_computes_the_issue_examples():
    base = ["eval", "vacation-infinite", "--batch", "geometric:mean=4", "--vacation", "exp:mean=0.06", "--load",
            "0.55", "--service", "exp:mean=0.012", "--wait-tail", "0.05", "--json"]
    for extra in (["--setup", "det:mean=0.01"], ["--close-down", "det:mean=0.01", "--start-threshold", "3"]):
        code, out, err = cli(base + extra)
        assert code == 0, err
        assert '"wait_tail": {"0.05": 0.8' in out


@pytest.mark.parametrize("threshold", [1, 2])
def test_finite_room_with_a_constant_close_down(threshold):
    """The finite room's close-down also enters through its count probabilities alone (nobody waits through it):
    a constant close-down computes, against a seeded simulation (finite_blocks_oracle: 99 % simultaneous
    intervals; the model without the close-down lies outside them) and, N = 1, Little's mean wait (1e-12 in
    float64, 1e-25 at 30 digits)."""
    from finite_blocks_oracle import PMF3, assert_mean_wait_is_littles, assert_simulated_tails_hold_and_without

    from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue

    model = FiniteVacationQueue(F(1, 2), PMF3, Erlang(2, F(2, 3)), Exponential(F(1, 2)), 5, Admission("partial"),
                                MULTIPLE, threshold, None, Deterministic(F(1)))
    assert_simulated_tails_hold_and_without(model, close_down=None)
    if threshold == 1:
        assert_mean_wait_is_littles(model)


def _threshold_models():
    pmf = FinitePMF({1: F(1, 2), 2: F(1, 2)})
    return (VacationQueue(F(1, 2), pmf, Erlang(2, F(2, 3)), Exponential(F(1, 2)), MULTIPLE, 3, Deterministic(F(1, 2)),
                          Deterministic(F(1, 3))),
            VacationQueue(F(1, 2), pmf, Erlang(2, F(2, 3)), Empirical((F(1, 4), F(1))), VacationPolicy.SINGLE, 3,
                          Empirical((F(1, 4), F(3, 4))), Deterministic(F(1, 3))))


@pytest.mark.parametrize("vacation,policy,setup", [
    (Exponential(F(1, 2)), VacationPolicy.SINGLE, Deterministic(F(1, 2))),
    # multiple constant vacations: 1 / (1 - c e^{-sD}), the geometric series of shifts up to the horizon t
    (Deterministic(F(1, 2)), MULTIPLE, Deterministic(F(1, 4))),
])
def test_the_threshold_shifts_at_n1_equal_the_shifted_sums(vacation, policy, setup):
    from qderive.numeric.engines.blocks_shifts import shift_laws, threshold_shift_laws

    model = VacationQueue(F(1, 2), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(2, 3)), vacation, policy, 1,
                          setup, Exponential(F(1, 3)))
    ts = [F(1, 4), F(1), F(4)]
    ours = threshold_shift_laws(model, "wait")(ts, 20)[0]
    theirs = shift_laws(model, "wait")(ts, 20)[0]
    with mpmath.workdps(30):
        for a, b in zip(ours, theirs):
            assert abs(a - b) <= mpmath.mpf(10) ** -17 * b


@pytest.mark.slow  # 8 s: two simulations and their tails (the N = 1 equalities stay in the loop)
def test_threshold_shifts_against_the_simulator():
    level = 1 - 0.01 / 8
    for model, seed in zip(_threshold_models(), (5, 6)):
        laws = B.response_laws(model)
        wait = tails(laws["wait"], [F(1, 4), F(1), F(4)], None)[0]
        sojourn = tails(laws["sojourn"], [F(3)], None)[0]
        sim = simulate_blocks(model, customers=20_000, replications=10, seed=seed, quiet=True,
                              wait_tail=("1/4", "1", "4"), sojourn_tail=("3",))
        checks = [(sim["wait_tail"][k], v) for k, v in zip(("1/4", "1", "4"), wait)]
        checks.append((sim["sojourn_tail"]["3"], sojourn[0]))
        for estimate, value in checks:
            lo, hi = estimate.interval(level)
            assert lo <= float(value) <= hi, (float(value), lo, hi)
    # float64 within 1e-9 of 20 digits
    laws = B.response_laws(_threshold_models()[0])
    fast, exact = tails(laws["wait"], [F(1)], None)[0], tails(laws["wait"], [F(1)], 20)[0]
    assert abs(fast[0] - float(exact[0])) <= 1e-9 * float(exact[0])


def test_multiple_constant_vacations_under_the_n_policy_are_refused_in_one_line():
    base = ["eval", "vacation-infinite", "--batch", "geometric:mean=4", "--load", "0.55", "--service",
            "exp:mean=0.012", "--vacation", "det:mean=0.06", "--start-threshold", "3", "--wait-tail", "0.5"]
    code, out, err = cli(base)
    assert code != 0 and "--vacation" in err and "shifts" in err and "Traceback" not in err, err
