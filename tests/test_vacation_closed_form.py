"""Closed forms in symbolic r for M[X]/M/1/r with exponential vacations and geometric batches.

Oracles: the numeric engine (qderive.numeric.vacation, a different algorithm: the cut
recursion and the direct sums) at 50 digits, and an exact CTMC written in this file from
the model definition (states (serving or on vacation, number waiting), SymPy rationals).
"""

from __future__ import annotations

import json

import mpmath
import pytest
import sympy as sp

from qderive.derivations.cli import main
from qderive.derivations.vacation_finite_closed import (
    _identically_zero_in_r,
    closed_forms,
    closed_forms_for,
    derivation,
    evaluate_closed,
    r,
)
from qderive.numeric.backend import mp_backend
from qderive.numeric.vacation import FiniteSweep, VacationQueue
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws import Exponential

R = sp.Rational

POINTS = {
    "light": (R(2, 5), 3, R(1, 50), R(1, 5)),
    # both ratios equal 4/5 here: a double pole, coefficients (c0 + c1 j) (4/5)^j
    "double pole": (R(2, 5), 3, R(1, 50), R(1, 10)),
    "rho=1": (1, 5, R(3, 200), R(3, 40)),
    "rho=5": (5, 2, R(1, 4), R(1, 3)),
    "fast vacations": (R(4, 5), 4, R(1, 10), R(1, 100)),
}


def _model(name, capacity=1):
    load, mean, b1, f1 = POINTS[name]
    return VacationQueue.from_load(load, Geometric(mean), Exponential(b1), Exponential(f1), capacity)


def _agree(a, b):
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    return 99.0 if a == b else float(-mpmath.log10(abs(a - b) / abs(b)))


@pytest.mark.parametrize("name", list(POINTS))
def test_closed_forms_equal_engine_to_40_digits(name):
    cf = closed_forms_for(_model(name))
    bk = mp_backend(50)
    sweep = FiniteSweep(_model(name), bk)
    for cap in (1, 5, 50):
        ex = evaluate_closed(cf, cap)  # exact rationals
        m = sweep.at(cap)
        with mpmath.workdps(60):
            pairs = [(m.q[0], ex["q0"]), (m.q[-1], ex["qr"]), (m.idle_probability, ex["idle"]),
                     (m.p[-1], ex["pr"]), (m.loss_probability, ex["loss_direct"]),
                     (m.loss_probability, ex["loss_balance"]), (m.mean_queue_length, ex["mean_queue"])]
            worst = min(_agree(a, mpmath.mpf(b.p) / b.q) for a, b in pairs)
        # issue 3: 40 digits; the engine works at 50 with positive-term sums
        assert worst >= 40, (name, cap, worst)


def _exact_ctmc(model):
    """Exact stationary law of the CTMC (S/V, j) with exponential laws, partial admission."""
    rr, lam, batch = model.capacity, model.lam, model.batch
    mu, nu = 1 / model.service.mean, 1 / model.vacation.mean
    states = [(a, jj) for a in "SV" for jj in range(rr + 1)]
    idx = {s: n for n, s in enumerate(states)}
    Q = sp.zeros(len(states), len(states))
    for (a, jj) in states:
        s = idx[(a, jj)]
        for k in range(1, rr - jj + 1):
            Q[s, idx[(a, jj + k)]] += lam * batch.pmf(k) if jj + k < rr else 0
        if jj < rr:
            Q[s, idx[(a, rr)]] += lam * batch.tail(rr - jj - 1)  # X >= r - j fills the room
        rate = mu if a == "S" else nu
        nxt = ("S", jj - 1) if jj >= 1 else ("V", 0)
        if nxt != (a, jj):
            Q[s, idx[nxt]] += rate
    for n in range(len(states)):
        Q[n, n] = -sum(Q[n, :])
    A = Q.T
    A[0, :] = sp.ones(1, len(states))
    b = sp.zeros(len(states), 1)
    b[0] = 1
    pi = A.LUsolve(b)
    law = dict(zip(states, pi))
    idle = sum(law[("V", jj)] for jj in range(rr + 1))
    served = mu * sum(law[("S", jj)] for jj in range(rr + 1))
    loss = 1 - served / (lam * batch.mean)
    mean_queue = sum(jj * (law[("S", jj)] + law[("V", jj)]) for jj in range(rr + 1))
    top = law[("S", rr)] + law[("V", rr)]
    return idle, loss, mean_queue, top


@pytest.mark.parametrize("name", ["light", "double pole", "rho=1", "rho=5"])
def test_closed_forms_equal_exact_ctmc(name):
    cf = closed_forms_for(_model(name))
    for cap in (1, 2, 4):
        idle, loss, nq, top = _exact_ctmc(_model(name, cap))
        ex = evaluate_closed(cf, cap)
        assert sp.cancel(ex["idle"] - idle) == 0
        assert sp.cancel(ex["loss_direct"] - loss) == 0
        assert sp.cancel(ex["loss_balance"] - loss) == 0
        assert sp.cancel(ex["mean_queue"] - nq) == 0
        assert sp.cancel(ex["pr"] - top) == 0


def test_double_pole_is_derived_exactly():
    cf = closed_forms_for(_model("double pole"))
    assert {t.m for t in cf.qt} == {0, 1} and {t.s for t in cf.qt} == {R(4, 5)}


def test_rho_one_closed_form_has_no_singularity():
    cf = closed_forms_for(_model("rho=1"))
    assert cf.rho_bar == 1
    # a ratio equal to 1 turns a geometric sum into a linear one: still exact, still finite
    assert any(t.s == 1 for t in cf.qt)
    assert sp.limit(cf.idle, r, sp.oo) == 0  # the server is never idle with an infinite room at rho_bar = 1


def test_two_loss_forms_identical_in_r_and_the_zero_test_can_fail():
    for name in POINTS:
        cf = closed_forms_for(_model(name))
        assert _identically_zero_in_r(cf.loss_direct - cf.loss_balance)
        # a perturbation that vanishes only at r = 3 must be detected
        assert not _identically_zero_in_r(cf.loss_direct - cf.loss_balance + (r - 3) * R(1, 2) ** r)


def test_symbolic_closed_form_specialises_to_numeric_one():
    lam, p, b1, f1 = sp.symbols("lambda p b1 f1", positive=True)
    gen = closed_forms(lam, p, b1, f1)
    load, mean, b1v, f1v = POINTS["light"]
    num = closed_forms_for(_model("light"))
    subs = {lam: _model("light").lam, p: R(1, mean), b1: b1v, f1: f1v}
    for cap in (1, 7):
        assert sp.cancel(gen.loss_balance.subs(r, cap).subs(subs) - num.loss_balance.subs(r, cap)) == 0


def test_derivation_checks_pass():
    results = derivation().verify(40)
    assert all(res.passed for res in results), [(res.name, res.detail) for res in results if not res.passed]


def test_cli_eval_closed_form(capsys):
    code = main(["eval", "vacation-finite-r", "--batch-mean", "5", "--service-mean", "0.015", "--vacation-mean",
                 "0.075", "--load", "0.6", "--capacity", "50", "--digits", "40", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    m = FiniteSweep(VacationQueue.from_load(R(3, 5), Geometric(5), Exponential(R(3, 200)), Exponential(R(3, 40)), 1),
                    mp_backend(50)).at(50)
    assert _agree(mpmath.mpf(out["measures"]["loss_probability"]), m.loss_probability) >= 38
    code = main(["eval", "vacation-finite-r", "--batch-mean", "0.5", "--service-mean", "0.015", "--vacation-mean",
                 "0.075", "--load", "0.6", "--capacity", "5"])
    assert code == 2 and "mean" in capsys.readouterr().err


def test_guide_worked_example(capsys):
    """The numbers printed in docs/guides/vacation-finite.md, against the exact closed form."""
    model = VacationQueue.from_load(R(3, 5), Geometric(5), Exponential(R(3, 200)), Exponential(R(3, 40)), 1)
    cf = closed_forms_for(model)
    # the closed form printed in the guide, identical to the derived one for every r
    printed = 2 * (23 * sp.Integer(184) ** r - 8 * sp.Integer(175) ** r) / (
        3 * (25 * sp.Integer(200) ** r - 23 * sp.Integer(184) ** r + 8 * sp.Integer(175) ** r))
    assert _identically_zero_in_r(cf.loss_balance - printed)
    ex = evaluate_closed(cf, 200)
    guide = {"loss_direct": 3.509582085332189e-08, "pr": 4.578016430626096e-09,
             "idle": 0.40000002105749266, "mean_queue": 9.899989334373993}
    for key, value in guide.items():
        assert value == pytest.approx(float(ex[key]), rel=1e-13), key
    # the sizing answer of the guide: the first r with loss <= 1e-6 (exact rationals)
    assert printed.subs(r, 160) <= R(1, 10**6) < printed.subs(r, 159)
    code = main(["size", "vacation-finite", "--batch", "geometric:mean=5", "--service", "exp:mean=0.015",
                 "--vacation", "exp:mean=0.075", "--load", "0.6", "--target-loss", "1e-6", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["capacity"] == 160
