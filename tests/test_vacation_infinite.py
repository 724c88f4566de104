"""M[X]/G/1 with multiple, single or no vacations: closed forms against (6) by hand, the CTMC and
the embedded chain; exactness for every concrete law; the command-line contract."""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest

from conftest import cli
from qderive.derivations.framework import agreement_digits
from qderive.numeric.backend import mp_context
from qderive.numeric.oracles.vacation import solve
from qderive.symbolic.batches import FinitePMF, Geometric
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Coxian, Deterministic, Erlang, Exponential, LogNormal, Uniform
from qderive.symbolic.models.vacation import VacationPolicy, VacationQueue

EVAL = ["eval", "vacation-infinite", "--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015",
        "--vacation", "exp:mean=0.075"]


def _wait_by_hand(load):
    """(6) with exact fractions: geometric mean 5 (l2 = 45), Erlang-4 mean 3/200 (b2 = 5/4 b1^2),
    exponential vacation 3/40 (f2 = 2 f1^2)."""
    l1, l2, b1, f1 = 5, 45, F(3, 200), F(3, 40)
    b2, f2 = F(5, 4) * b1**2, 2 * f1**2
    lam = load / (l1 * b1)
    return f2 / (2 * f1) + lam * l1 * b2 / (2 * (1 - load)) + (l2 - l1) * b1 / (2 * l1 * (1 - load)), lam


def test_the_readme_example_is_exact():
    q = VacationQueue.example()
    W, lam = _wait_by_hand(F(3, 5))
    rec = q.evaluate()
    assert rec.mean_wait == float(W) and rec.mean_queue_length == float(lam * 5 * W)
    assert rec.idle_probability == 0.4 and rec.notes == ()
    d50 = q.evaluate(50)
    assert d50.confirmed_digits == float("inf")
    with mpmath.workdps(60):
        assert abs(d50.mean_wait - mpmath.mpf(W.numerator) / W.denominator) <= mpmath.mpf(10) ** -49


def test_near_saturation_float64_is_correctly_rounded():
    """The old float64 path was 8e-4 off at rho_bar = 1 - 1e-13; rational moments make it exact."""
    load = F(9999999999999, 10**13)
    W, _ = _wait_by_hand(load)
    rec = VacationQueue.from_load(load, Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40))).evaluate()
    assert rec.mean_wait == float(W)


@pytest.mark.parametrize("policy", list(VacationPolicy))
def test_against_the_ctmc_with_coxian_laws(policy):
    model = VacationQueue(F(1, 4), FinitePMF({1: F(1, 2), 3: F(1, 2)}), Coxian((3, 4), (F(1, 2),)),
                          Erlang(2, F(1, 2)), policy)
    o = solve(model, mp_context(60), capacity=220)
    assert o.truncation < mpmath.mpf(10) ** -70  # the cut at 220 places: N and Var carry < 1e-65 from it
    rec = model.evaluate(50)
    for got, want in ((rec.mean_queue_length, o.mean_queue), (rec.queue_length_variance, o.variance),
                      (rec.idle_probability, o.idle), (rec.q0, o.q[0])):
        assert agreement_digits(got, want) >= 48


def test_single_vacations_with_an_irrational_idle_probability_are_confirmed_at_two_precisions():
    """Deterministic vacations: c0 = e^{-lambda d} is irrational, so the policy compares two precisions."""
    model = VacationQueue(F(1, 5), Geometric(F(3, 2)), Exponential(F(1, 2)), Deterministic(1), VacationPolicy.SINGLE)
    rec = model.evaluate(30)
    assert 30 <= rec.confirmed_digits < float("inf")
    # against Takagi's single-vacation wait, with c0 = e^{-lambda}
    with mpmath.workdps(40):
        lam, l1, l2, b1, b2, f1, f2 = (mpmath.mpf(1) / 5, mpmath.mpf(3) / 2, mpmath.mpf(3), mpmath.mpf(1) / 2,
                                       mpmath.mpf(1) / 2, mpmath.mpf(1), mpmath.mpf(1))
        rb = lam * l1 * b1
        c0 = mpmath.exp(-lam)
        W = lam * l1 * b2 / (2 * (1 - rb)) + (l2 - l1) * b1 / (2 * l1 * (1 - rb)) + lam * f2 / (2 * (lam * f1 + c0))
        assert agreement_digits(rec.mean_wait, W) >= 30
    assert abs(model.evaluate().mean_wait - float(W)) <= 2e-15 * float(W)


def test_every_concrete_law_gives_exact_measures():
    for vac in (Uniform(0, F(1, 5)), LogNormal(F(1, 10), 2), Coxian((2,), ())):
        rec = VacationQueue.from_load(F(1, 2), Geometric(2), Erlang(2, F(1, 10)), vac).evaluate(20)
        assert rec.confirmed_digits == float("inf")


def test_no_vacation_is_the_mx_g_1_queue():
    rec = VacationQueue.from_load(F(1, 2), Geometric(2), Exponential(1), None).evaluate()
    # M[X]/M/1, geometric batches mean 2 (l2 = 6): W = (lambda l1 b2 + (l2 - l1) b1 / l1) / (2 (1 - rho_bar))
    lam = F(1, 4)
    assert rec.mean_wait == pytest.approx(float((lam * 2 * 2 + (6 - 2) / F(2)) / (2 * (1 - F(1, 2)))), rel=1e-15)


def test_instability_is_refused():
    with pytest.raises(ParameterError, match="rho_bar = 1.2 >= 1"):
        VacationQueue.from_load(F(6, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)))


def test_cli_contract():
    code, out, _ = cli(EVAL + ["--load", "0.6", "--json"])
    doc = json.loads(out)
    assert code == 0 and doc["model"] == "vacation-infinite" and doc["precision"] == "float64"
    assert list(doc["measures"]) == ["q0", "idle_probability", "mean_queue_length", "mean_wait",
                                     "queue_length_variance", "mean_number_in_system"]
    W, _ = _wait_by_hand(F(3, 5))
    assert doc["measures"]["mean_wait"] == float(W)
    code, out, _ = cli(EVAL + ["--rate", "8", "--digits", "50", "--json"])
    doc = json.loads(out)
    assert doc["precision"] == 50 and doc["confirmed_digits"] == "exact"
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(doc["measures"]["mean_wait"]) - mpmath.mpf(W.numerator) / W.denominator) \
            <= mpmath.mpf(10) ** -48
    code, out, _ = cli(EVAL + ["--load", "0.6", "--vacation-policy", "single", "--json"])
    assert code == 0 and json.loads(out)["parameters"]["vacation_policy"] == "single"


@pytest.mark.parametrize("extra, fragment", [
    (["--load", "1.2"], "rho_bar = 1.2 >= 1"),
    (["--load", "abc"], "--load = 'abc' is not a number"),
    (["--load", "-0.5"], "--load = -0.5: must be > 0"),
    (["--load", "1e-100000000"], "number-exponent"),
])
def test_bad_input_exits_2_with_one_clear_line(extra, fragment):
    code, out, err = cli(EVAL + extra)
    assert code == 2 and out == "" and fragment in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
