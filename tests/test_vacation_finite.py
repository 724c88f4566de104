"""M[X]/G/1/r with multiple, single or no vacations: the engine against the exact CTMC of the model.

The oracle (:mod:`qderive.numeric.oracles.vacation`) is built from the model's definition and
solved in rational arithmetic (GTH over Fractions), so the reference values carry no rounding:
at 50 digits the engine must agree to 48 digits (guard digits cover the O(r) roundings), in
float64 to 1e-12 relative (sums of positive terms: a few hundred roundings at most).
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

from qderive.derivations.framework import agreement_digits
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.vacation import FiniteSweep
from qderive.numeric.oracles.vacation import solve
from qderive.symbolic.batches import Constant, FinitePMF, Geometric
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.laws import Coxian, Deterministic, Empirical, Erlang, Exponential, HyperExponential, LogNormal
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy

KEYS = ("loss_probability", "batch_blocking_probability", "idle_probability", "mean_queue_length", "mean_wait",
        "throughput", "p0", "pr", "q0", "qr")


def _oracle_values(model):
    o = solve(model)
    return {"loss_probability": o.loss, "batch_blocking_probability": o.blocking, "idle_probability": o.idle,
            "mean_queue_length": o.mean_queue, "mean_wait": o.mean_queue / o.throughput, "throughput": o.throughput,
            "p0": o.p[0], "pr": o.p[-1], "q0": o.q[0], "qr": o.q[-1], "p": o.p}


POINTS = [
    ("light, partial, multiple", lambda: FiniteVacationQueue.from_load(F(1, 2), Geometric(3), Erlang(2, F(1, 10)),
                                                                      Exponential(F(1, 4)), 6)),
    ("rho_bar = 1", lambda: FiniteVacationQueue.from_load(1, FinitePMF({1: F(1, 2), 3: F(1, 2)}), Erlang(2, F(1, 3)),
                                                         Exponential(F(2, 3)), 4)),
    ("overload rho_bar = 5", lambda: FiniteVacationQueue.from_load(5, Geometric(2), Exponential(F(1, 5)),
                                                                  Exponential(1), 3)),
    ("whole admission", lambda: FiniteVacationQueue.from_load(F(3, 4), Geometric(3), Erlang(2, F(1, 10)),
                                                             Exponential(F(1, 4)), 5, Admission.WHOLE)),
    ("no vacation, r = 0", lambda: FiniteVacationQueue.from_load(F(3, 4), Geometric(3), Erlang(2, F(1, 10)), None, 0)),
    ("no vacation, whole, overload", lambda: FiniteVacationQueue.from_load(5, Geometric(3), Erlang(2, F(1, 10)), None,
                                                                          3, Admission.WHOLE)),
    ("single vacations", lambda: FiniteVacationQueue.from_load(F(3, 4), Geometric(3), Erlang(2, F(1, 10)),
                                                              Exponential(F(1, 4)), 5, Admission.PARTIAL,
                                                              VacationPolicy.SINGLE)),
    ("single vacations, whole, overload", lambda: FiniteVacationQueue.from_load(
        F(5, 2), Geometric(2), Exponential(F(1, 10)), Erlang(3, F(1, 3)), 4, Admission.WHOLE, VacationPolicy.SINGLE)),
    ("single vacations, hyperexp and Coxian", lambda: FiniteVacationQueue.from_load(
        F(3, 4), FinitePMF({1: F(1, 2), 3: F(1, 2)}), HyperExponential((F(1, 3), F(2, 3)), (F(1, 10), F(1, 5))),
        Coxian((2, 3), (F(1, 2),)), 4, Admission.PARTIAL, VacationPolicy.SINGLE)),
]


@pytest.mark.parametrize("make", [p[1] for p in POINTS], ids=[p[0] for p in POINTS])
def test_every_measure_against_the_exact_ctmc(make):
    model = make()
    ref = _oracle_values(model)
    hi = model.evaluate(50, include=("p",))
    lo = model.evaluate(include=("p",))
    for key in KEYS:
        assert agreement_digits(getattr(hi, key), ref[key]) >= 48, key
        want = float(ref[key])
        assert abs(getattr(lo, key) - want) <= 1e-12 * abs(want), (key, getattr(lo, key), want)
    for got, want in zip(hi.p, ref["p"]):
        assert agreement_digits(got, want) >= 48
    assert lo.notes == () or all("overload" in n for n in lo.notes)


def test_light_load_keeps_full_relative_accuracy():
    """The issue's case: rho_bar = 1e-10, r = 5 (exact loss 1e-50). The old float64 path had a relative
    error ~1e-16/rho_bar (p0 = 1.0000000827 > 1); every measure must now be correct to 1e-13."""
    model = FiniteVacationQueue.from_load(F(1, 10**10), Constant(1), Exponential(1), Exponential(1), 5)
    ref = _oracle_values(model)
    got = model.evaluate()
    for key in KEYS:
        want = float(ref[key])
        assert abs(getattr(got, key) - want) <= 1e-13 * abs(want), (key, getattr(got, key), want)
    assert got.p0 <= 1 and got.idle_probability <= 1
    # and at 30 digits every digit (the old mp path lost log10(1/rho_bar) digits of mean_wait)
    d30 = model.evaluate(30)
    for key in KEYS:
        assert agreement_digits(getattr(d30, key), ref[key]) >= 29.5, key


def test_light_load_with_vacations_at_30_digits():
    """rho_bar = 0.01 with vacations: mean_wait, throughput, mean number in system to 30 digits (was 3)."""
    model = FiniteVacationQueue.from_load(F(1, 100), Geometric(2), Erlang(2, F(1, 5)), Exponential(F(1, 3)), 6)
    ref = _oracle_values(model)
    got = model.evaluate(30)
    for key in ("mean_wait", "throughput", "mean_queue_length", "idle_probability", "loss_probability"):
        assert agreement_digits(getattr(got, key), ref[key]) >= 29.5, key


def test_gamma_family_at_light_load_does_not_lose_accuracy_with_r():
    """Shape-200 gamma service at light load, r = 250: float64 within 1e-12 of 30 digits (was 3.4e-12 at r = 400
    and growing linearly in r because q = 1 - p0 was formed by subtraction: about 2.1e-12 at r = 250, still twice
    the tolerance; now 2.7e-15 at either r. r = 250 instead of 400: the 30-digit run grows like r^2, 1.5 s -> 0.6 s)."""
    from qderive.symbolic.laws import Gamma

    model = FiniteVacationQueue.from_load(F(1, 1000), Geometric(F(3, 2)), Gamma(200, 1), Exponential(F(1, 2)), 250)
    lo, hi = model.evaluate(), model.evaluate(30)
    for key in ("mean_wait", "throughput", "idle_probability", "mean_queue_length", "q0"):
        assert abs(getattr(lo, key) - float(getattr(hi, key))) <= 1e-12 * abs(float(getattr(hi, key))), key


def test_probabilities_below_the_double_range_are_escalated_not_zero():
    # load 1/100 at r = 170 (was 1/10 at r = 330: the same escalation, 0.5 s instead of 2 s): the loss, about
    # rho^r (1 - rho) = 9.9e-341, is far below the double range as before (9e-331)
    model = FiniteVacationQueue.from_load(F(1, 100), Constant(1), Exponential(1), Exponential(1), 170)
    rec = model.evaluate()
    assert isinstance(rec.loss_probability, mpmath.mpf)
    assert mpmath.mpf("1e-342") < rec.loss_probability < mpmath.mpf("1e-339")
    assert any("outside the float64 range" in n for n in rec.notes)
    # M/M/1/r+1 with exponential vacations of mean 1: checked at 20 digits
    assert agreement_digits(rec.loss_probability, model.evaluate(20).loss_probability) >= 16


def test_laws_that_coincide_give_the_same_numbers():
    """A Coxian law with equal rates and continuation 1 is an Erlang law; a one-value empirical law is
    deterministic; the lognormal gives the same loss in float64 and at 20 digits (its 20-digit counts by quadrature
    take 1.7 s, 2.5 s at 30 digits; 20 digits are far beyond the 1e-11 tolerance)."""
    base = dict(load=F(3, 5), batch=Geometric(2), capacity=12)

    def loss(service, vacation, digits=None):
        return FiniteVacationQueue.from_load(base["load"], base["batch"], service, vacation, base["capacity"]) \
            .evaluate(digits).loss_probability

    e3 = Erlang(3, F(1, 10))
    cox = Coxian((30, 30, 30), (1, 1))
    assert agreement_digits(loss(cox, e3, 40), loss(e3, e3, 40)) >= 38
    emp = Empirical((F(1, 10),))
    assert agreement_digits(loss(Exponential(F(1, 10)), emp, 40),
                            loss(Exponential(F(1, 10)), Deterministic(F(1, 10)), 40)) >= 38
    ln = LogNormal(F(1, 10), 2)
    assert abs(loss(ln, e3) / float(loss(ln, e3, 20)) - 1) < 1e-11


def test_sweep_over_capacities_equals_single_evaluations():
    model = FiniteVacationQueue.from_load(F(3, 2), Geometric(5), Erlang(4, F(3, 200)), Erlang(4, F(3, 40)), 1)
    sweep = FiniteSweep(model, FLOAT64)
    for r in (1, 7, 40, 120):
        assert sweep.at(r)["loss_probability"] == pytest.approx(model.with_capacity(r).evaluate().loss_probability,
                                                               rel=1e-15)


def test_size_is_the_first_capacity_that_meets_the_target():
    from qderive.numeric.engines.vacation import size
    from qderive.symbolic.models.vacation import SizeRequest

    model = FiniteVacationQueue.from_load(F(3, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)), 1)
    values = {"rate": model.rate, "batch": model.batch, "service": model.service, "vacation": model.vacation}
    out = size(values, SizeRequest(F(1, 10**6)))
    r = out["capacity"]
    assert model.with_capacity(r).evaluate().loss_probability <= 1e-6 < model.with_capacity(r - 1).evaluate() \
        .loss_probability
    with pytest.raises(ParameterError, match="unreachable"):
        size({**values, "rate": model.rate * 3}, SizeRequest(F(1, 10**6)))


def test_validation_and_budgets():
    law = dict(batch=Geometric(5), service=Erlang(4, F(3, 200)), vacation=Exponential(F(3, 40)))
    with pytest.raises(ParameterError, match="capacity"):
        FiniteVacationQueue(8, capacity=0, **law)
    with pytest.raises(BudgetError, match="capacity"):
        FiniteVacationQueue(8, capacity=10**9, **law)
    with pytest.raises(BudgetError, match="whole-capacity"):
        FiniteVacationQueue(8, capacity=5000, admission=Admission.WHOLE, **law)
    with pytest.raises(ParameterError, match="vacation-policy"):
        FiniteVacationQueue(8, Geometric(5), Erlang(4, F(3, 200)), None, 5, vacation_policy=VacationPolicy.SINGLE)
    with pytest.raises(ParameterError, match="no batch ever fits"):
        FiniteVacationQueue(8, Constant(9), Erlang(4, F(3, 200)), Exponential(1), 5, Admission.WHOLE)


def test_mpmath_and_float64_contexts_run_the_same_kernel():
    model = FiniteVacationQueue.from_load(F(6, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)), 60)
    f64 = FiniteSweep(model, FLOAT64).at(60)
    mp = FiniteSweep(model, mp_context(30)).at(60)
    for key in KEYS:
        assert abs(f64[key] - float(mp[key])) <= 1e-12 * abs(float(mp[key])), key


# load 3/2 runs in the full suite: load 1/2 takes the same paths in the loop (sequences built short -- 205 terms
# against 270 -- and padded, which the test asserts; the cut recursion in bands of 256 steps over r = 450)
@pytest.mark.parametrize("load, r", [(F(1, 2), 450), pytest.param(F(3, 2), 560, marks=pytest.mark.slow)],
                         ids=["load0", "load1"])
def test_float64_sequences_cut_at_their_support_agree_with_20_digits(load, r, monkeypatch):
    """r = 450 (load 1/2; 560 at load 3/2), single arrivals, deterministic times (Poisson counts, whose tails fall
    below the double range after about 150 terms): float64 builds the sequences only that far (205 terms at load
    1/2, 270 at 3/2), bands the cut recursion (blocks of 256 steps: two bands here) and pads
    (numeric/kernels/vacation.py); mpmath at 20 digits (no flushing) computes every term. (r = 450 rather than 800:
    the same paths -- the assertion below checks the sequences were built short and padded; at r = 400 (load 1/2)
    or 530 (load 3/2) they are not -- at a third (a half) of the 20-digit cost, which grows like r^2.)
    Tolerance 1e-12: the float64 error of positive-term sums of this length; the dropped terms are
    below 2.2e-308."""
    from qderive.numeric.kernels import vacation as kernel

    monkeypatch.setattr(kernel, "FIRST_SUPPORT", 64)  # the first table is the whole one up to 4096 places
    model = FiniteVacationQueue.from_load(load, Constant(1), Deterministic(F(1, 10)), Deterministic(F(1, 20)), r)
    sweep = FiniteSweep(model, FLOAT64)
    f64 = sweep.at(r)
    seq = sweep._kernel.engine.seq
    assert seq.built < len(seq.abar) and len(seq.abar) > r  # the support path ran: built short, padded
    mp = FiniteSweep(model, mp_context(20)).at(r)
    for key in KEYS:
        want = float(mp[key])
        if abs(want) > 1e-300:
            assert abs(f64[key] - want) <= 1e-12 * abs(want), key
