"""Closed forms in symbolic r for M[X]/M/1/r with exponential vacations and geometric batches.

Oracles:

* the general engine of ``vacation-finite`` (the cut recursion (2b) and the direct sums of
  :mod:`qderive.numeric.kernels.vacation`, a different algorithm) at 50 digits;
* an exact CTMC written in this file from the model definition (states (serving or on
  vacation, number waiting), SymPy rationals, LU solve);
* the generic (symbolic-parameter) derivation against the one at numbers; the Piecewise
  closed forms substituted at rho_bar = 1 and at the double pole against the engine;
* the guide's printed closed form (docs/guides/vacation-finite.md);
* the generated module of ``qderive codegen vacation-finite-r`` (the recursion) and a
  simulation (joint 99 % intervals).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest
import sympy as sp
from conftest import cli, run_standalone

from qderive.derivations.vacation_finite_closed import derivation, identically_zero_in_r
from qderive.numeric.engines.vacation_closed import exact_measures
from qderive.numeric.simulation.vacation import simulate
from qderive.symbolic.closed_forms import vacation_finite_r as V
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.models.vacation_closed import ClosedFormCase, ClosedFormVacationMeasures, ClosedFormVacationQueue

R = sp.Rational
r = V.r

POINTS = {
    "light": (F(2, 5), 3, F(1, 50), F(1, 5)),
    # both ratios equal 4/5 here: a double pole, coefficients (c0 + c1 j) (4/5)^j
    "double pole": (F(2, 5), 3, F(1, 50), F(1, 10)),
    "rho=1": (1, 5, F(3, 200), F(3, 40)),
    "rho=5": (5, 2, F(1, 4), F(1, 3)),
    "fast vacations": (F(4, 5), 4, F(1, 10), F(1, 100)),
    "batches of one": (F(7, 10), 1, F(1, 2), F(1, 5)),
}
KEYS = set(ClosedFormVacationMeasures.keys())


def _model(name, capacity=1):
    load, mean, b1, f1 = POINTS[name]
    return ClosedFormVacationQueue.from_load(load, mean, b1, f1, capacity)


def _forms(model):
    return V.numeric_forms(model.rate, model.p, model.service_mean, model.vacation_mean)


def _agree(a, b):
    with mpmath.workdps(80):
        a = mpmath.mpf(a.numerator) / a.denominator if isinstance(a, F) else mpmath.mpf(a)
        b = mpmath.mpf(b.numerator) / b.denominator if isinstance(b, F) else mpmath.mpf(b)
        return 99.0 if a == b else float(-mpmath.log10(abs(a - b) / abs(b)))


def test_cases_are_recognised():
    assert _model("light").case is ClosedFormCase.GENERIC
    assert _model("double pole").case is ClosedFormCase.DOUBLE_POLE
    assert _model("rho=1").case is ClosedFormCase.LOAD_ONE and _model("rho=1").rho_bar == 1


@pytest.mark.parametrize("name", list(POINTS))
def test_closed_forms_equal_engine_to_40_digits(name):
    for cap in (1, 5, 50):
        model = _model(name, cap)
        ex = exact_measures(model)  # exact rationals
        general = model.queue.evaluate(45).as_dict()  # the cut recursion at 45 confirmed digits
        worst = min(_agree(general[k], v) for k, v in ex.items())
        # issue 3: 40 digits
        assert worst >= 40, (name, cap, worst)


def _exact_ctmc(model):
    """Exact stationary law of the CTMC (S/V, j) with exponential laws, partial admission."""
    rr, lam = model.capacity, sp.Rational(model.rate)
    p = sp.Rational(model.p)
    mu, nu = sp.Rational(model.mu), sp.Rational(model.nu)
    pmf = lambda k: p * (1 - p) ** (k - 1)  # geometric on {1, 2, ...}
    states = [(a, jj) for a in "SV" for jj in range(rr + 1)]
    idx = {s: n for n, s in enumerate(states)}
    Q = sp.zeros(len(states), len(states))
    for a, jj in states:
        s = idx[(a, jj)]
        for k in range(1, rr - jj):
            Q[s, idx[(a, jj + k)]] += lam * pmf(k)
        if jj < rr:
            Q[s, idx[(a, rr)]] += lam * (1 - p) ** (rr - jj - 1)  # X >= r - j fills the room
        nxt = ("S", jj - 1) if jj >= 1 else ("V", 0)
        if nxt != (a, jj):
            Q[s, idx[nxt]] += mu if a == "S" else nu
    for n in range(len(states)):
        Q[n, n] = -sum(Q[n, :])
    A = Q.T
    A[0, :] = sp.ones(1, len(states))
    b = sp.zeros(len(states), 1)
    b[0] = 1
    law = dict(zip(states, A.LUsolve(b)))
    idle = sum(law[("V", jj)] for jj in range(rr + 1))
    served = mu * sum(law[("S", jj)] for jj in range(rr + 1))
    loss = 1 - served / (lam / p)
    mean_queue = sum(jj * (law[("S", jj)] + law[("V", jj)]) for jj in range(rr + 1))
    top = law[("S", rr)] + law[("V", rr)]
    # embedded epochs: service completions from (S, j) leave j waiting, vacation ends from (V, j) find j
    flow = [mu * law[("S", jj)] + nu * law[("V", jj)] for jj in range(rr + 1)]
    return {"idle_probability": idle, "loss_probability": loss, "mean_queue_length": mean_queue, "pr": top,
            "q0": flow[0] / sum(flow), "qr": flow[-1] / sum(flow)}


@pytest.mark.parametrize("name", ["light", "double pole", "rho=1", "rho=5", "batches of one"])
def test_closed_forms_equal_exact_ctmc(name):
    for cap in (1, 2, 4):
        model = _model(name, cap)
        ref = _exact_ctmc(model)
        ex = exact_measures(model)
        for key, value in ref.items():
            assert sp.cancel(sp.Rational(ex[key].numerator, ex[key].denominator) - value) == 0, (name, cap, key)
        cf = _forms(model)
        assert sp.cancel(cf.loss_direct.subs(r, cap) - ref["loss_probability"]) == 0


def test_double_pole_is_derived_exactly():
    cf = _forms(_model("double pole"))
    assert {t.m for t in cf.qt} == {0, 1} and {t.s for t in cf.qt} == {R(4, 5)}
    sym = V.case_forms(ClosedFormCase.DOUBLE_POLE)
    assert {t.m for t in sym.qt} == {0, 1} and len(sym.ratios) == 1


def test_rho_one_closed_form_has_no_singularity():
    cf = _forms(_model("rho=1"))
    assert cf.rho_bar == 1
    # a ratio equal to 1 turns a geometric sum into a linear one: still exact, still finite
    assert any(t.s == 1 for t in cf.qt)
    assert sp.limit(cf.idle, r, sp.oo) == 0  # the server is never idle with an infinite room at rho_bar = 1


@pytest.mark.parametrize("name", ["rho=1", "double pole"])
def test_printed_piecewise_forms_substitute_at_the_special_cases(name):
    """The issue: the printed closed forms divided by 1 - s_1 (and, at the double pole, by mu p - lambda - nu)
    and gave NaN when substituted there. The Piecewise forms give the engine's values."""
    model = _model(name)
    values = {V.lam: R(model.rate), V.p: R(model.p), V.mu: R(model.mu), V.nu: R(model.nu)}
    generic = V.case_forms(ClosedFormCase.GENERIC)
    # the old failure: the generic form alone is NaN there (or, after 1/zoo = 0, silently wrong)
    bad = generic.explicit(generic.idle).subs(values).subs(r, 5)
    assert bad.has(sp.nan, sp.zoo) or bad != R(exact_measures(model.with_capacity(5))["idle_probability"])
    for attr, key in (("loss_balance", "loss_probability"), ("idle", "idle_probability"), ("pr", "pr"),
                      ("mean_queue", "mean_queue_length"), ("q0", "q0"), ("qr", "qr")):
        form = V.piecewise(attr).subs(values)
        assert not isinstance(form, sp.Piecewise) and not form.has(sp.nan, sp.zoo)
        for cap in (1, 5, 30):
            got = sp.cancel(form.subs(r, cap))
            assert got.is_Rational and F(int(got.p), int(got.q)) == exact_measures(model.with_capacity(cap))[key]


def test_two_loss_forms_identical_in_r_and_the_zero_test_can_fail():
    for name in POINTS:
        cf = _forms(_model(name))
        assert identically_zero_in_r(cf.loss_direct - cf.loss_balance)
        # a perturbation that vanishes only at r = 3 must be detected
        assert not identically_zero_in_r(cf.loss_direct - cf.loss_balance + (r - 3) * R(1, 2) ** r)


def test_symbolic_closed_form_specialises_to_numeric_one():
    lam, p, b1, f1 = sp.symbols("lambda p b1 f1", positive=True)
    gen = V.derive(lam, p, b1, f1, explicit_powers=True)
    model = _model("light")
    num = _forms(model)
    subs = {lam: R(model.rate), p: R(model.p), b1: R(model.service_mean), f1: R(model.vacation_mean)}
    for cap in (1, 7):
        assert sp.cancel(gen.loss_balance.subs(r, cap).subs(subs) - num.loss_balance.subs(r, cap)) == 0


def test_derivation_checks_pass_and_every_step_is_computed_or_evaluated():
    d = derivation()
    assert all(s.computed or s.check is not None for s in d.steps)
    results = d.verify(40)
    assert all(res.passed for res in results), [(res.name, res.detail) for res in results if not res.passed]


# -- the command line ---------------------------------------------------------------------------------------

_ARGS = ["--batch-mean", "5", "--service-mean", "0.015", "--vacation-mean", "0.075"]


def test_cli_eval_closed_form():
    code, out, err = cli(["eval", "vacation-finite-r", *_ARGS, "--load", "0.6", "--capacity", "50", "--digits", "40",
                          "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc["measures"]) == KEYS and doc["confirmed_digits"] == "exact"
    general = ClosedFormVacationQueue.from_load(F(3, 5), 5, F(3, 200), F(3, 40), 50).queue.evaluate(45).as_dict()
    for key, value in doc["measures"].items():
        assert _agree(value, general[key]) >= 38, key
    code, out2, _ = cli(["eval", "vacation-finite-r", *_ARGS, "--rate", "8", "--capacity", "50", "--json"])
    assert code == 0
    doc2 = json.loads(out2)
    assert set(doc2["measures"]) == KEYS and doc2["precision"] == "float64"
    assert doc2["measures"]["loss_probability"] == float(mpmath.mpf(doc["measures"]["loss_probability"]))
    assert any("generic closed form in r" in note and "0.92, 0.875" in note for note in doc2["notes"])


@pytest.mark.parametrize("argv, message", [
    (["--batch-mean", "0.5", "--service-mean", "0.015", "--vacation-mean", "0.075", "--load", "0.6",
      "--capacity", "5"], "--batch-mean"),
    ([*_ARGS, "--load", "0.6", "--capacity", "0"], "--capacity"),
    ([*_ARGS, "--load", "-1", "--capacity", "5"], "load"),
    ([*_ARGS, "--load", "0.6", "--rate", "8", "--capacity", "5"], "not allowed with"),
    ([*_ARGS, "--load", "0.6", "--capacity", "1e9"], "capacity"),
    (["--batch-mean", "5", "--service-mean", "0", "--vacation-mean", "0.075", "--load", "0.6", "--capacity", "5"],
     "--service-mean"),
])
def test_cli_bad_input_is_one_clear_line(argv, message):
    code, _, err = cli(["eval", "vacation-finite-r", *argv])
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_api_errors_name_the_field():
    with pytest.raises(ParameterError, match="capacity"):
        ClosedFormVacationQueue(5, F(3, 200), F(3, 40), 8, 0)
    with pytest.raises(ParameterError, match="batch_mean"):
        ClosedFormVacationQueue(F(1, 2), F(3, 200), F(3, 40), 8, 5)
    with pytest.raises(BudgetError, match="capacity"):
        ClosedFormVacationQueue(5, F(3, 200), F(3, 40), 8, 10**7)


def test_tiny_values_at_large_r_are_kept_beyond_the_double_range():
    """r = 20000: the loss is ~3.5e-725; float64 gives it as a decimal string (the old code printed 0.0)."""
    code, out, err = cli(["eval", "vacation-finite-r", *_ARGS, "--load", "0.6", "--capacity", "20000", "--json"])
    assert code == 0, err
    got = json.loads(out)["measures"]["loss_probability"]
    assert isinstance(got, str)
    # the closed form printed in the guide (below), evaluated with mpmath at r = 20000
    with mpmath.workdps(40):
        n = 20000
        a, b, c = mpmath.mpf(175) ** n, mpmath.mpf(184) ** n, mpmath.mpf(200) ** n
        want = 2 * (23 * b - 8 * a) / (3 * (25 * c - 23 * b + 8 * a))
    assert _agree(got, want) >= 16


def test_guide_worked_example():
    """The numbers printed in docs/guides/vacation-finite.md, against the exact closed form."""
    model = ClosedFormVacationQueue.from_load(F(3, 5), 5, F(3, 200), F(3, 40), 200)
    cf = _forms(model)
    # the closed form printed in the guide, identical to the derived one for every r
    printed = 2 * (23 * sp.Integer(184) ** r - 8 * sp.Integer(175) ** r) / (
        3 * (25 * sp.Integer(200) ** r - 23 * sp.Integer(184) ** r + 8 * sp.Integer(175) ** r))
    assert identically_zero_in_r(cf.loss_balance - printed)
    assert identically_zero_in_r(V.loss_in_r(model) - printed)
    ex = exact_measures(model)
    guide = {"loss_probability": 3.509582085332189e-08, "pr": 4.578016430626096e-09,
             "idle_probability": 0.40000002105749266, "mean_queue_length": 9.899989334373993}
    for key, value in guide.items():
        assert value == pytest.approx(float(ex[key]), rel=1e-13), key
    # the sizing answer of the guide: the first r with loss <= 1e-6 (exact rationals)
    assert printed.subs(r, 160) <= R(1, 10**6) < printed.subs(r, 159)
    code, out, err = cli(["size", "vacation-finite", "--batch", "geometric:mean=5", "--service", "exp:mean=0.015",
                          "--vacation", "exp:mean=0.075", "--load", "0.6", "--target-loss", "1e-6", "--json"])
    assert code == 0 and json.loads(out)["capacity"] == 160, err


def test_codegen_vacation_finite_r_agrees_with_its_closed_forms(tmp_path):
    """`codegen vacation-finite-r` ships the recursion module (geometric/exp/exp); eval uses the exact closed forms."""
    code, out, err = cli(["codegen", "vacation-finite-r", "--list"])
    assert code == 0 and set(out.split()) == KEYS, err
    target = tmp_path / "vr.py"
    code, out, err = cli(["codegen", "vacation-finite-r", "--measure", "loss_probability", "--out", str(target)])
    assert code == 0, err
    script = "import json, vr\nprint(json.dumps(vr.loss_probability(0.3, 2, 1, 0.5, [3, 30]).tolist()))\n"
    got = json.loads(run_standalone(tmp_path, script))
    for cap, value in zip((3, 30), got):
        want = exact_measures(ClosedFormVacationQueue(2, 1, F(1, 2), F(3, 10), cap))["loss_probability"]
        assert value == pytest.approx(float(want), rel=1e-12), cap


def test_simulation_covers_the_closed_forms():
    """The simulator (the model as its FiniteVacationQueue) covers the closed forms: joint 99 % intervals."""
    for name, cap in (("rho=1", 10), ("rho=5", 4)):
        model = _model(name, cap)
        res = simulate(model, 40_000, 20, seed=3, quiet=True)
        assert set(res.measures) == KEYS
        exact = exact_measures(model)
        level = 1 - 0.01 / len(exact)
        for key, value in exact.items():
            lo, hi = res[key].interval(level)
            assert lo <= float(value) <= hi, (name, key, float(value), lo, hi)
