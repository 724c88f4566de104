"""M|M|1 with bi-level hysteretic control (docs/theory/other-models.md B) against a CTMC written here.

The oracle is the CTMC of this file: its own transition list, typed from the model
description (not the model's switching methods), built by the one CTMC builder
(``numeric.oracles.ctmc.build``) and solved *exactly* (rational GTH) and, for first-passage
times, by the M-matrix solve in rationals. It shares no code with the closed forms
(``symbolic.closed_forms.mm1_hysteretic``) or the positive recurrences
(``numeric.kernels.mm1_hysteretic``). Tolerances: closed forms are exact rationals and must
equal the exact oracle; mpmath results at 50 digits agree to 48; float64 to 1e-12 relative
(positive recurrences: error ~ R eps).
"""

from __future__ import annotations

import json
from fractions import Fraction
from functools import lru_cache

import mpmath
import pytest
import sympy as sp

from qderive.numeric.backend import FractionContext
from qderive.numeric.kernels.chains import hitting_costs
from qderive.numeric.oracles.ctmc import build
from qderive.symbolic.closed_forms import mm1_hysteretic as CF
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.models.hysteretic import MM1HystereticModel

from conftest import cli

POINTS = [  # (lambda_0, lambda_1, mu, L, H, R)
    (Fraction(6, 5), Fraction(3, 5), 1, 3, 6, 9),  # the issue's example
    (Fraction(1), Fraction(1, 2), 1, 2, 5, 8),  # rho_0 = 1
    (Fraction(3, 2), Fraction(1), 1, 4, 7, 12),  # rho_1 = 1
    (Fraction(1, 2), Fraction(1, 5), 1, 5, 10, 14),  # light load
    (Fraction(5, 2), Fraction(7, 4), Fraction(3, 2), 1, 2, 3),  # smallest thresholds
    (Fraction(1), Fraction(1), 1, 2, 5, 8),  # pure discard hysteresis, rho_0 = rho_1 = 1 (--rates 1,1)
    (Fraction(3, 2), Fraction(0), 1, 4, 7, 12),  # complete blocking in overload
    (Fraction(3, 2), Fraction(1, 3), Fraction(1, 2), 4, 7, 8),  # R = H + 1
]
MEASURES = ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time",
            "loss_probability", "throughput")


@lru_cache(maxsize=None)
def oracle(point):
    """Exact measures of the CTMC of other-models.md B, typed here; pi unnormalised with pi(L, 1) = 1 too."""
    lam0, lam1, mu, L, H, R = (Fraction(v) for v in point)
    L, H, R = int(L), int(H), int(R)

    def moves(state):
        j, s = state
        if s == 0:
            yield ((j + 1, 0) if j + 1 <= H - 1 else (H, 1)), lam0
            if j >= 1:
                yield (j - 1, 0), mu
        elif s == 1:
            if lam1:
                yield ((j + 1, 1) if j + 1 <= R - 1 else (R, 2)), lam1
            yield ((j - 1, 1) if j - 1 >= L else (L - 1, 0)), mu
        else:
            yield ((j - 1, 2) if j - 1 >= H + 1 else (H, 1)), mu

    chain = build((0, 0), moves)
    pi = chain.stationary_exact()
    ctx = FractionContext()
    A = chain.matrix(ctx)
    ones = [Fraction(1)] * chain.size

    def hit(start, inside):
        targets = [k for k, st in enumerate(chain.states) if not inside(st)]
        return hitting_costs(ctx, A, targets, ones)[chain.index[start]]

    t0 = hit((L - 1, 0), lambda st: st[1] == 0)
    t12 = hit((H, 1), lambda st: st[1] != 0)
    p = [sum((pi[k] for k, st in enumerate(chain.states) if st[1] == x), Fraction(0)) for x in range(3)]
    thr = mu * (1 - pi[chain.index[(0, 0)]])
    return {
        "p_normal": p[0], "p_overload": p[1], "p_discard": p[2],
        "mean_normal_time": t0, "mean_return_time": t12, "mean_cycle_time": t0 + t12,
        "renewal": 1 / (mu * pi[chain.index[(L, 1)]]), "throughput": thr, "loss_probability": 1 - thr / lam0,
        "pi": {st: v / pi[chain.index[(L, 1)]] for st, v in zip(chain.states, pi)},
    }


def rel(a, b):
    """|a - b| / |b| computed exactly (8000 bits); 0 when both are 0."""
    with mpmath.workprec(8000):
        a = mpmath.mpf(a.numerator) / a.denominator if isinstance(a, Fraction) else mpmath.mpf(a)
        b = mpmath.mpf(b.numerator) / b.denominator if isinstance(b, Fraction) else mpmath.mpf(b)
        return mpmath.mpf(0) if a == b else abs(a - b) / abs(b)


def exact(value):
    value = sp.nsimplify(value) if not isinstance(value, sp.Basic) else value
    assert value.is_Rational, value
    return Fraction(int(value.p), int(value.q))


@pytest.mark.parametrize("point", POINTS)
def test_closed_forms_equal_the_exact_ctmc(point):
    ref = oracle(point)
    assert ref["mean_cycle_time"] == ref["renewal"]  # the renewal identity on the CTMC, exactly
    model = MM1HystereticModel(*point)
    cf = CF.closed_forms()
    for key in MEASURES:
        assert exact(CF.substitute(cf[key], model)) == ref[key], key


@pytest.mark.parametrize("point", POINTS)
def test_engine_equals_the_ctmc(point):
    ref = oracle(point)
    model = MM1HystereticModel(*point)
    got = model.evaluate(50)
    f64 = model.evaluate()
    assert not f64.notes, f64.notes  # positive recurrences: no float64 trouble, no recomputation
    for key in MEASURES:
        assert rel(got[key], ref[key]) < mpmath.mpf(10) ** -48, key
        assert rel(f64[key], ref[key]) < 1e-12, key


@pytest.mark.parametrize("point", POINTS[:3] + POINTS[5:])
def test_stationary_law_closed_form_equals_the_ctmc(point):
    """Every pi(j, s) from the segment closed forms (pi(L,1) = 1) = the CTMC's exact law; nothing else has mass."""
    ref = oracle(point)["pi"]
    model = MM1HystereticModel(*point)
    cf = CF.closed_forms()
    L, H, R = model.L, model.H, model.R
    ranges = {"pi_normal_low": (0, range(0, L)), "pi_normal_high": (0, range(L - 1, H)),
              "pi_overload_low": (1, range(L, H + 1)), "pi_overload_high": (1, range(H, R)),
              "pi_discard": (2, range(H + 1, R + 1))}
    seen = set()
    for key, (s, js) in ranges.items():
        for jj in js:
            value = exact(CF.substitute(cf[key].subs(CF.j, jj), model))
            assert value == ref.get((jj, s), 0), (key, jj)
            if value:
                seen.add((jj, s))
    assert seen == set(ref)


def test_closed_forms_are_symbolic_in_rates_and_thresholds():
    cf = CF.closed_forms()
    names = {str(s) for s in cf["mean_normal_time"].free_symbols | cf["mean_return_time"].free_symbols}
    assert names == {"lambda_0", "lambda_1", "mu", "L", "H", "R"}
    assert not cf["M0"].has(sp.Sum) and not cf["M1"].has(sp.Sum)
    # the lambda_0 = mu branch is the limit of the generic branch (at L = 3, H = 7)
    generic = cf["M0"].args[1].expr.subs({CF.L: 3, CF.H: 7})
    at_one = cf["M0"].args[0].expr.subs({CF.L: 3, CF.H: 7})
    assert sp.simplify(sp.limit(generic, CF.lam0, CF.mu) - at_one) == 0
    # every power of lambda_1 has a nonnegative exponent (at 1 <= L < H < R): lambda_1 = 0 needs no limit
    sample = {CF.L: 2, CF.H: 5, CF.R: 9, CF.j: 5}
    for key in ("M1", "M2", "pi_overload_high", "pi_discard", "p_normal", "mean_cycle_time"):
        for pw in cf[key].atoms(sp.Pow):
            if pw.base in (CF.lam1, CF.lam1 / CF.mu):
                assert pw.exp.subs(sample) >= 0, (key, pw)


def test_large_thresholds_float64_stays_accurate():
    """R = 400 at rho_0 = 0.5: pi spans ~1e-120; the positive recurrences keep every digit (exact closed form)."""
    model = MM1HystereticModel(Fraction(1, 2), Fraction(1, 4), 1, 150, 300, 400)
    cf = CF.closed_forms()
    f64 = model.evaluate()
    for key in ("mean_normal_time", "p_overload", "mean_return_time"):
        assert rel(f64[key], exact(CF.substitute(cf[key], model))) < 1e-12, key


def test_a_million_levels_in_float64():
    """R = 10^6 (the O(R) recurrences, vectorised): probabilities sum to 1, E tau = E tau_0 + E tau_12, and the
    result agrees with the closed forms evaluated by mpmath at 30 digits."""
    import time

    # rho_1 = 1 + 1e-6: the overload and discard segments span ~e^(-1/2), no value leaves the float64 range
    model = MM1HystereticModel(Fraction(11, 10), 1 + Fraction(1, 10**6), 1, 10, 500_000, 1_000_000)
    start = time.perf_counter()
    m = model.evaluate()
    assert time.perf_counter() - start < 5 and not m.notes
    assert abs(m.p_normal + m.p_overload + m.p_discard - 1) < 1e-12
    cf = CF.closed_forms()
    values = {CF.lam0: sp.Float("1.1", 40), CF.lam1: sp.Float("1.000001", 40), CF.mu: 1, CF.L: 10, CF.H: 500_000,
              CF.R: 1_000_000}
    for key in ("p_overload", "p_discard", "mean_cycle_time"):
        ref = sp.N(cf[key].subs(values), 30)
        # O(R) roundings of the recurrences (R = 1e6): relative error ~ R eps
        assert rel(m[key], mpmath.mpf(str(ref))) < 1e-9, key


def test_model_validation():
    with pytest.raises(ParameterError, match=r"1 <= L < H < R \(got L=6, H=3, R=9\)"):
        MM1HystereticModel(2, 1, 1, 6, 3, 9)
    with pytest.raises(ParameterError, match="lambda_1 <= lambda_0"):
        MM1HystereticModel(1, 2, 1, 3, 6, 9)
    with pytest.raises(ParameterError, match="rate0 = 0: must be > 0"):
        MM1HystereticModel(0, 0, 1, 3, 6, 9)
    with pytest.raises(ParameterError, match="rate1 = -1: must be >= 0"):
        MM1HystereticModel(1, -1, 1, 3, 6, 9)
    with pytest.raises(ParameterError, match="L = 0: must be >= 1"):
        MM1HystereticModel(1, Fraction(1, 2), 1, 0, 6, 9)
    with pytest.raises(BudgetError, match="mm1-threshold"):
        MM1HystereticModel(1, Fraction(1, 2), 1, 3, 6, 10**9)
    MM1HystereticModel(1, 1, 1, 3, 6, 9)  # the pure discard hysteresis ...
    MM1HystereticModel(1, 0, 1, 3, 6, 7)  # ... and complete blocking with R = H + 1 are models


def test_cli_eval_json_and_digits():
    args = ["eval", "mm1-hysteretic", "--rates", "1.2,0.6", "--service-rate", "1", "--thresholds", "3,6,9"]
    ref = oracle(POINTS[0])
    code, out, _ = cli(args + ["--json"])
    assert code == 0
    doc = json.loads(out)
    assert list(doc["measures"]) == list(MEASURES)
    for key in MEASURES:
        assert rel(doc["measures"][key], ref[key]) < 1e-12, key
    code, out, _ = cli(args + ["--digits", "50", "--json"])
    doc = json.loads(out)
    for key in MEASURES:
        assert rel(doc["measures"][key], ref[key]) < mpmath.mpf(10) ** -48, key


def test_cli_issue_cases_rates_equal_and_zero():
    for rates, point in (("1,1", POINTS[5]), ("1.5,0", POINTS[6])):
        L, H, R = point[3:]
        code, out, err = cli(["eval", "mm1-hysteretic", "--rates", rates, "--service-rate", "1", "--thresholds",
                              f"{L},{H},{R}", "--json"])
        assert code == 0, err
        doc = json.loads(out)
        for key in MEASURES:
            assert rel(doc["measures"][key], oracle(point)[key]) < 1e-12, key
        assert "notes" not in doc  # p_discard = 0 with lambda_1 = 0 is an exact 0, not an underflow


@pytest.mark.parametrize("extra, message", [
    (["--rates", "1.2,0.6", "--thresholds", "6,3,9"], "1 <= L < H < R"),
    (["--rates", "0.6,1.2", "--thresholds", "3,6,9"], "lambda_1 <= lambda_0"),
    (["--rates", "1.2", "--thresholds", "3,6,9"], "--rates"),
    (["--rates", "1.2,-1", "--thresholds", "3,6,9"], "must be >= 0"),
])
def test_cli_bad_input_exits_2(extra, message):
    code, _, err = cli(["eval", "mm1-hysteretic", "--service-rate", "1"] + extra)
    assert code == 2
    assert message in err and err.count("\n") == 1, err


def test_derivation_verifies_at_40_digits():
    d = MM1HystereticModel.example().derive()
    assert all(s.check is not None or s.computed for s in d.steps)
    results = d.verify(40)
    assert all(r.passed for r in results), [r for r in results if not r.passed]
    assert all(r.digits >= 35 for r in results)
    assert d.step("(B6)").relation.has(sp.Sum)


# That `qderive derive mm1-hysteretic --latex` compiles with pdflatex is checked (with no overfull box, and only this
# model's own recursions) by tests/test_cli.py::test_exported_tex_compiles_with_pdflatex[mm1-hysteretic].
