"""Constant and empirical setups and vacations with blocks in the finite room (issue 26 item 2:
``numeric/engines/blocks_finite_shifts.py``, the sums (SF): the smooth rest at shifted times, the constant periods'
customers integrated over their elapsed time), against things computed another way.

* the Laplace transform of the tails, int_0^oo e^{-s t} P(W > t) dt (Gauss-Legendre on pieces between the kinks),
  against (1 - W*(s)) / s from the finite room's transform itself (the divided differences of the residual weights:
  no split, no quadrature over the elapsed time, no inversion), to 1e-9;
* a seeded simulation of the stages (tests/finite_blocks_oracle.py: 99 % simultaneous intervals; the model without
  the setup lies outside them);
* the split is complete: P(W > t) + P(W = 0) -> 1 as t -> 0 (every family and shift counted once), to 1e-9;
* float64 within 1e-9 of 15 digits;
* issue 28: a gamma service of shape 1/2 (not phase-type) with a constant vacation and no blocks, the same checks;
* what stays refused names the field: N > 1 with a constant setup; a uniform setup in the finite room.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli
from finite_blocks_oracle import PMF3, assert_simulated_tails_hold_and_without

from qderive.numeric.backend import FLOAT64
from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.engines.vacation_wait import gauss_legendre
from qderive.numeric.response import quantiles, tails
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws import Deterministic, Empirical, Erlang, Exponential, Gamma
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy

MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE


def _model(vacation, setup, policy=MULTIPLE, admission="partial", capacity=5, batch=PMF3, service=None):
    return FiniteVacationQueue(F(1, 2), batch, service or Erlang(2, F(2, 3)), vacation, capacity,
                               Admission(admission), policy, 1, setup, None)


MODELS = {
    # the setup's own customers: a constant period integrated over its elapsed time
    "constant setup": _model(Exponential(F(1, 2)), Deterministic(1)),
    # a constant vacation's customers, and the setup after it as a smooth suffix; whole admission
    "constant vacation, whole": _model(Deterministic(F(1, 2)), Exponential(F(1, 2)), admission="whole"),
    # an empirical vacation (two atoms) with a constant setup after it: the suffix's shift and both families
    "empirical vacation, constant setup": _model(Empirical((F(1, 4), F(3, 4))), Deterministic(F(1, 2)), SINGLE),
    # issue 28: no blocks, a smooth service that is not phase-type (gamma of shape 1/2: the tails ~ 1 - c u^{j/2}
    # near the kink, the quadrature in v with x = x* + L v^2) with a constant vacation
    "gamma service, constant vacation": _model(Deterministic(F(1, 2)), None, service=Gamma(F(1, 2), F(2, 3))),
}


def _laplace_of_tails(law, s, kinks):
    """int_0^T e^{-s t} P(W > t) dt, T = 4 (the rest below e^{-s T} / s), by Gauss-Legendre of 8 nodes on pieces
    between the kinks, in v with t = a + (b - a) v^2 on each (the tail is analytic in v there), float64 (every tail
    there above 0.02: no escalation)."""
    ends = sorted({F(0), F(2), F(4)} | set(kinks))
    X, W = gauss_legendre(8, FLOAT64)
    total = 0.0
    for a, b in zip(ends[:-1], ends[1:]):
        # t = a + (b - a) v^2, v in [0, 1]: a gamma service of shape 1/2 puts c (t - a)^{k/2} terms at a kink
        vs = [(1 + F(float(x))) / 2 for x in X]
        pts = [a + (b - a) * v * v for v in vs]
        values = tails(law, pts, None)[0]
        total += float(b - a) * sum(w * float(v) * mpmath.exp(-s * float(t)) * y
                                    for w, v, t, y in zip(W, vs, pts, values))
    return float(total)


@pytest.mark.slow  # about 6 s each: 64 float64 tails
@pytest.mark.parametrize("name", list(MODELS))
def test_the_laplace_transform_of_the_tails_is_the_transforms(name):
    """int_0^oo e^{-s t} P(W > t) dt = (1 - W*(s)) / s at s = 7, W*(s) = N(s) / N(0) of the finite room's transform
    (``vacation_finite_wait.FiniteWait.transform_values``: the residual weights' divided differences, no split, no
    quadrature over the elapsed time, no inversion), to 1e-9 (the float64 tails within 1e-10 each, the quadrature
    of the analytic pieces about 1e-12, the cut at T = 4 below e^{-28} / 7)."""
    from qderive.numeric.engines.vacation_finite_wait import wait_law_data
    import numpy as np

    model = MODELS[name]
    law = response_laws(model)["wait"]
    s = 7
    got = _laplace_of_tails(law, s, [F(1, 4), F(1, 2), F(3, 4), F(1), F(5, 4), F(3, 2)])
    W = wait_law_data(model).transform_values(FLOAT64, np.array([s + 0j]))[0].real
    want = (1 - W) / s
    assert abs(got - want) <= 1e-9 * want, (got, want)


@pytest.mark.parametrize("name", list(MODELS))
def test_the_split_is_complete(name):
    law = response_laws(MODELS[name])["wait"]
    near = tails(law, [F(1, 10**9)], None)[0][0]
    p0 = law.p_zero(FLOAT64)
    assert abs(near + p0 - 1) <= 1e-8, (near, p0)


@pytest.mark.parametrize("name", ["constant setup", "gamma service, constant vacation"])
def test_float64_within_1e9_of_15_digits(name):
    law = response_laws(MODELS[name])["wait"]
    ts = [F(1, 2), F(2)]
    fast, exact = tails(law, ts, None)[0], tails(law, ts, 15)[0]
    with mpmath.workdps(20):
        for a, b in zip(fast, exact):
            assert abs(a - b) <= 1e-9 * b, (a, b)


@pytest.mark.slow  # about 6 s: two seeded simulations and the tails
@pytest.mark.parametrize("name,without", [("constant setup", {"setup": None}),
                                          ("empirical vacation, constant setup", {"setup": None})])
def test_against_the_simulator(name, without):
    assert_simulated_tails_hold_and_without(MODELS[name], **without)


def test_the_cli_computes_the_issue_example():
    code, out, err = cli(["eval", "vacation-finite", "--batch", "geometric:mean=2", "--load", "0.5", "--capacity",
                          "20", "--service", "exp:mean=1", "--vacation", "exp:mean=1", "--setup", "det:mean=1",
                          "--wait-tail", "2", "--json"])
    assert code == 0, err
    # the CLI's float64 value against the API's 15-digit sums of the same model (the precision policy: within 1e-9;
    # the sums themselves are checked against the room's own transform and the simulator above)
    model = FiniteVacationQueue.from_load(F(1, 2), Geometric(2), Exponential(1), Exponential(1), 20,
                                          setup=Deterministic(1))
    _assert_cli_matches_15_digits(out, model, "2")


def test_the_cli_computes_the_issue_28_example():
    code, out, err = cli(["eval", "vacation-finite", "--batch", "geometric:mean=4", "--service",
                          "gamma:shape=0.5,mean=0.012", "--vacation", "det:mean=0.06", "--load", "0.55", "--capacity",
                          "129", "--wait-tail", "0.5", "--json"])
    assert code == 0, err
    model = FiniteVacationQueue.from_load(F(55, 100), Geometric(4), Gamma(F(1, 2), F(12, 1000)),
                                          Deterministic(F(6, 100)), 129)
    _assert_cli_matches_15_digits(out, model, "0.5")


def _assert_cli_matches_15_digits(out, model, t):
    """The JSON tail of the CLI (float64) within 1e-9 of the API's value at 15 digits (the precision policy)."""
    import json

    got = json.loads(out)["measures"]["wait_tail"][t]
    want = model.evaluate(15, wait_tail=[t]).response["wait_tail"][t]
    assert abs(got - float(want)) <= 1e-9 * float(want), (got, want)


@pytest.mark.parametrize("extra,option", [
    (["--setup", "det:mean=1", "--start-threshold", "2"], "--setup"),
    (["--setup", "uniform:low=1/2,high=3/2"], "--setup"),
])
def test_what_stays_refused_names_the_field(extra, option):
    code, out, err = cli(["eval", "vacation-finite", "--batch", "geometric:mean=2", "--load", "0.5", "--capacity",
                          "20", "--service", "exp:mean=1", "--vacation", "exp:mean=1", "--wait-tail", "2"] + extra)
    assert code != 0 and option in err and "Traceback" not in err, err


def test_a_geometric_batch_model_in_a_larger_room_computes():
    model = _model(Exponential(1), Deterministic(1), batch=Geometric(F(2)), capacity=20)
    value = tails(response_laws(model)["wait"], [F(2)], None)[0][0]
    assert 0 < value < 1


def _issue_28_model(capacity):
    """The issue-28 example: geometric batches of mean 4, a gamma service of shape 1/2 and mean 12 ms, constant
    vacations of 60 ms, load 0.55, no blocks."""
    lam = F(55, 100) / (4 * F(12, 1000))
    return FiniteVacationQueue(lam, Geometric(F(4)), Gamma(F(1, 2), F(12, 1000)), Deterministic(F(6, 100)),
                               capacity, Admission("partial"), MULTIPLE, 1, None, None)


def test_the_99_quantile_stays_in_float64():
    # before the damped inversion every search point near P(W > t) = 1e-2 escalated to 15 digits (minutes): the
    # float64 quantile now answers with no escalation note
    values, _, notes = quantiles(response_laws(_issue_28_model(20))["wait"], [F(99, 100)], None, F(1, 10))
    assert notes == [] and 0 < values[0] < 1, (values, notes)


@pytest.mark.slow  # about 15 s: one tail at 20 digits in a room of 20 places
def test_the_float64_99_quantile_is_the_20_digit_root():
    law = response_laws(_issue_28_model(20))["wait"]
    q = quantiles(law, [F(99, 100)], None, F(1, 10))[0][0]
    exact = tails(law, [F(q)], 20)[0][0]
    fast = tails(law, [F(q)], None)[0][0]
    # the root of the float64 tails (each within 1e-9 of the tail by its own bound): P(W > q) = 1e-2 to 1e-9
    # relative at 20 digits, and the damped float64 tail there within 1e-9 of the 20-digit one
    assert abs(exact - mpmath.mpf("0.01")) <= 1e-9 * 0.01, exact
    assert abs(fast - exact) <= 1e-9 * exact, (fast, exact)
