"""Statement 1 and Theorem 1 of the thesis with blocks in the finite room (derivations/blocks_finite.py): the
truncation identity against the block engine and the block chain at 50 digits, the whole-admission
counterexample in exact rationals, the derivation's text and capabilities."""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

from qderive.derivations import blocks_finite as BF
from qderive.derivations.capabilities import load
from qderive.derivations.export import prose
from qderive.derivations.framework import agreement_digits
from qderive.numeric.backend import mp_context
from qderive.numeric.engines.blocks_finite import finite_measures
from qderive.symbolic.batches import FinitePMF
from qderive.symbolic.laws import Erlang, Exponential
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue

DIGITS = 50


def _all_three(admission=Admission.PARTIAL):
    """A close-down, multiple vacations, N = 3 and a setup, r = 5, batches of 1, 2 or 4 (phase-type laws: the block
    chain solves it from the definition)."""
    return FiniteVacationQueue.from_load(F(3, 4), FinitePMF({1: F(1, 2), 2: F(1, 4), 4: F(1, 4)}), Erlang(2, F(1, 3)),
                                         Exponential(F(1, 2)), 5, admission, start_threshold=3,
                                         setup=Erlang(2, F(1, 2)), close_down=Exponential(F(1, 3)))


def test_truncation_with_setup_close_down_and_threshold_3_against_the_block_engine():
    """(BF4): the block engine's p^r_j / P^r_I (numeric/engines/blocks_finite.py, room r) = the unbounded room's law
    per unit of idle time p~_j, j < r, computed here by renewal reward from the recursion (BF2) with the unbounded
    room's first-service law; (BF6): the engine's P^r_I from p~ and the at-once times. Tolerance 10^-45: both sides
    carry 60 digits of positive sums; 5 digits of margin."""
    m = _all_three()
    ctx = mp_context(DIGITS + 10)
    with ctx:
        got = finite_measures(m, ctx)
    p, idle = got["p"], got["idle_probability"]
    pt = BF._unbounded_law(m, DIGITS)
    with mpmath.workdps(DIGITS + 10):
        agreed = min(agreement_digits(p[j] / idle, pt[j]) for j in range(m.capacity))
        assert agreed >= DIGITS - 5, agreed
        # the law at the top is not p~_r: it carries the mass beyond r (a probability, here well above 10^-3)
        assert p[m.capacity] / idle > mpmath.mpf("1e-3")
    ok, digits_agreed, _ = BF._check_bf6(DIGITS)
    assert ok and digits_agreed >= DIGITS - 3


def test_departure_law_is_the_truncation_with_the_top_correction():
    """(BF3) at the model with all three blocks: the block chain's departure law (50 + 10 digits, from the stages'
    definition) = pi~_j / S (j < r) and (pi~_r - eps_r) / S; without the correction the top is off by eps_r > 0.
    Tolerance 10^-45 (60-digit GTH and recursion)."""
    m = _all_three()
    r = m.capacity
    q, y = BF.unnormalised_departures(m, DIGITS)
    y_r = BF._finite_passage(m, DIGITS)[0]
    d = BF.departure_law(m, mp_context(DIGITS + 10))[0]
    with mpmath.workdps(DIGITS + 10):
        eps = y_r[r] - y[r]
        assert eps > mpmath.mpf("1e-3")  # a vacation or the setup can end the passage with more than r present
        want = q[:r] + [q[r] - eps]
        agreed = min(agreement_digits(d[j] / sum(d), want[j] / sum(want)) for j in range(r + 1))
        assert agreed >= DIGITS - 5, agreed
        assert abs(d[r] / d[0] - q[r]) > eps / 2  # the plain truncation fails at the top


def test_whole_admission_counterexample_exact():
    """Statement 1 fails under whole admission: the exact (rational GTH) ratio pi^r_2 / pi^r_0 of the block chain
    under whole admission differs from the partial one, which equals pi~_2 of the recursion (60 digits)."""
    ce = BF.whole_counterexample()
    whole, partial = ce["whole"], ce["partial"]
    assert all(isinstance(x, F) for x in whole + partial)
    assert whole[2] != partial[2] and abs(float(whole[2] - partial[2])) > 0.1
    m = FiniteVacationQueue.from_load(F(1, 2), FinitePMF({1: F(1, 2), 3: F(1, 2)}), Exponential(1),
                                      Exponential(F(1, 2)), 3, start_threshold=2, setup=Exponential(1))
    q, _ = BF.unnormalised_departures(m, DIGITS)
    with mpmath.workdps(DIGITS + 10):
        for j in range(m.capacity):
            exact = mpmath.mpf(partial[j].numerator) / partial[j].denominator
            assert agreement_digits(exact, q[j]) >= DIGITS - 5
    ok, _, detail = BF._whole_fails(DIGITS)
    assert ok and "[2]" in detail


@pytest.mark.parametrize("label", ["(BF1)", "(BF2)", "(BF3)", "(BF4)", "(BF5)", "(BF6)"])
def test_each_step_check_passes(label):
    """Every step's check (its own comparison) passes at 30 digits."""
    step = next(s for s in BF.finite_block_steps() if s.label == label)
    ok, agreed, detail = step.check(30)
    assert ok, detail


def test_the_symbolic_checks_and_where_it_does_not_hold():
    """(BF3) and (BF6) proved in symbols (r = 1, 2, 3); the top at departures and whole admission fail as stated."""
    for check in BF.finite_block_checks():
        ok, _, detail = check.run(30)
        assert ok, detail


def test_the_derivation_prints_the_steps_in_paper_text():
    """``derive vacation-finite`` carries (BF1)..(BF6) and the two failure checks; their prose is paper text (no file
    paths, flags or ASCII math)."""
    d = load("vacation-finite", "derivation")()
    labels = [s.label for s in d.steps]
    assert labels[-6:] == ["(BF1)", "(BF2)", "(BF3)", "(BF4)", "(BF5)", "(BF6)"]
    names = [c.name for c in d.all_checks()]
    assert any("whole admission" in n for n in names) and any("fails at $j = r$" in n for n in names)
    for s in d.steps[-6:]:
        assert prose.ascii_math(s.title) == [], s.label
        assert "docs/" not in s.title and ".py" not in s.title and "--" not in s.title
        assert s.check is not None


def test_the_derivation_accepts_the_three_options():
    """The capability: the derivation covers a start threshold, a setup and a close-down (partial and whole)."""
    fn = load("vacation-finite", "derivation")
    for adm in Admission:
        assert fn.supports(_all_three(adm)) is None
