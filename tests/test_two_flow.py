"""The INVITE / non-INVITE threshold model (seed 001, ``docs/theory/other-models.md`` C) against independent computations.

Oracle: :mod:`qderive.numeric.oracles.two_flow` rebuilds the chain from the model's rules on
plain tuples ``(mode, ((class, tagged), ...))`` by search (no bit encoding, nothing from the
engine) and computes every measure by definition: throughputs and accepted rates as flows of
departure and arrival transitions, mean sojourns as tagged-customer first passages (not
Little), the return time as a first passage (not renewal). A second, textbook oracle: with
R <= H the overload modes are never entered and, with equal service rates, the count is
M/M/1/R (truncated geometric law).

Tolerances: at 50 digits both sides are subtraction-free eliminations at 50 + guard digits, so
we ask 1e-45 relative (five digits for the oracle's own roundings). In float64 at L,H,R =
3,7,10 (759 / 650 states) 1e-10 relative, for the dense GTH and the sparse level solver
(measured: 13-15 digits), also at a light load where P(mode 2) ~ 4e-14.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.two_flow import (
    TwoFlowEngine,
    exact_stationary,
    solve,
    state_space,
)
from qderive.numeric.oracles.two_flow import two_flow_chain, two_flow_measures
from qderive.symbolic import limits
from qderive.symbolic.errors import BudgetError, NumericalError, ParameterError
from qderive.symbolic.models.two_flow import (
    Algorithm,
    Solver,
    TwoFlowMeasures,
    TwoFlowModel,
)

#: the contract of ``qderive eval two-flow --json`` (the old version's keys)
CONTRACT_KEYS = {
    "throughput_invite", "throughput_non_invite", "rejection_invite", "rejection_non_invite",
    "mean_sojourn_invite", "mean_sojourn_non_invite", "mean_sojourn", "p_mode0", "p_mode1", "p_mode2",
    "mean_return_time", "mean_number_invite", "mean_number_non_invite", "mean_number", "accepted_rate_invite",
    "accepted_rate_non_invite",
}  # fmt: skip

RATES = [
    ((F(3, 5), 2), (1, 5), (F(3, 2), 6)),  # INVITE 5x the work, faster in overload
    ((F(7, 4), F(1, 3)), (F(1, 2), 4), (F(1, 2), 4)),  # INVITE-heavy overload
]


def make(rates, L, H, R, algorithm=Algorithm.FIFO, solver=Solver.AUTO):
    (l1, l2), (m1, m2), (o1, o2) = rates
    return TwoFlowModel(l1, l2, m1, m2, L, H, R, algorithm, o1, o2, solver)


def assert_close(got: dict, ref: dict, rel, keys=None):
    for key in keys or CONTRACT_KEYS:
        g, r = got[key], ref[key]
        if r is None or g is None:
            assert g is None and r is None, key
            continue
        if r == 0:
            assert g == 0, key
            continue
        assert abs(mpmath.mpf(g) - r) <= rel * abs(r), (key, g, r)


def at_50(model):
    ctx = mp_context(60)
    return two_flow_measures(model, ctx)


# --------------------------------------------------------------------------- 50 digits, small thresholds


@pytest.mark.parametrize("algorithm", list(Algorithm))
@pytest.mark.parametrize("rates", RATES)
@pytest.mark.parametrize("thresholds", [(1, 2, 3), (2, 4, 5), (1, 3, 7), (2, 4, 3)])
def test_every_measure_at_50_digits(algorithm, rates, thresholds):
    model = make(rates, *thresholds, algorithm)
    ref = at_50(model)
    got = model.evaluate(50)
    if algorithm is Algorithm.PRIORITY:  # FIFO is solved over segments (tests/test_two_flow_segments.py)
        assert got.states == ref["states"]  # the same reachable state space
    with mpmath.workdps(60):
        assert_close(got.as_dict(), ref, mpmath.mpf(10) ** -45)
    assert got.confirmed_digits == 50 and got.working_digits >= 60


# --------------------------------------------------------------------------- float64 at L, H, R = 3, 7, 10


@pytest.mark.parametrize("algorithm", list(Algorithm))
@pytest.mark.parametrize("rates", [RATES[0], ((F(3, 500), F(1, 50)), (1, 5), (1, 5))])
@pytest.mark.parametrize("solver", [Solver.GTH, Solver.SPARSE])
def test_float64_at_3_7_10_both_solvers(algorithm, rates, solver):
    # the second point is a light load: P(mode 2) ~ 4e-14, P(mode 1) ~ 1e-13; every measure still to 1e-10
    model = make(rates, 3, 7, 10, algorithm, solver)
    ref = two_flow_measures(model, FLOAT64, tagged=False)  # Little in the oracle too: 6000-state tagged chains
    got = model.evaluate()
    assert got.confirmed_digits is None  # no escalation needed
    assert got.states == ref["states"] or algorithm is Algorithm.FIFO  # FIFO: the segment chain, fewer states
    assert_close(got.as_dict(), ref, 1e-10)


def test_state_counts_match_the_sequence_count():
    # FIFO reaches every sequence: mode 0 has 2^(H+1) - 1, mode 2 has 2^(H+1), mode 1 sum_{n=L..H} 2^n
    for L, H in ((1, 2), (2, 4), (3, 7)):
        assert state_space(L, H, H + 1, Algorithm.FIFO).size == (2 ** (H + 1) - 1) + 2 ** (H + 1) + sum(
            2**n for n in range(L, H + 1))
    # priority: fewer (a class-1 message in overload service implies no class 2 ahead of it)
    assert state_space(2, 4, 5, Algorithm.PRIORITY).size < state_space(2, 4, 5, Algorithm.FIFO).size


def test_exact_law_by_the_one_gth_in_rationals():
    model = make(RATES[0], 2, 4, 5, Algorithm.PRIORITY)
    exact = exact_stationary(model)
    assert all(isinstance(p, F) for p in exact) and sum(exact) == 1
    chain = two_flow_chain(model)
    ref = dict(zip(((s[0], tuple(c for c, _ in s[1])) for s in chain.states), chain.stationary_exact()))
    space = state_space(2, 4, 5, Algorithm.PRIORITY)
    assert all(exact[i] == ref[(int(space.mode[i]), space.sequence(i))] for i in range(space.size))


# --------------------------------------------------------------------------- a textbook oracle


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_equal_service_rates_below_h_is_mm1r(algorithm):
    # R <= H: overload never entered; with mu_1 = mu_2 = mu the count is M/M/1/R: p_n = (1 - rho) rho^n / (1 - rho^(R+1))
    lam, mu_, R = F(3, 5) + 2, F(5, 2), 4
    rho = lam / mu_
    p = [(1 - rho) * rho**n / (1 - rho ** (R + 1)) for n in range(R + 1)]
    model = TwoFlowModel(F(3, 5), 2, mu_, mu_, 2, 6, R, algorithm)
    got = model.evaluate(30)
    with mpmath.workdps(40):
        for key, value in (("rejection_invite", p[R]), ("rejection_non_invite", p[R]), ("p_mode0", 1),
                           ("mean_number", sum(n * q for n, q in enumerate(p))),
                           ("mean_sojourn", sum(n * q for n, q in enumerate(p)) / (lam * (1 - p[R])))):
            assert abs(mpmath.mpf(got[key]) - mpmath.mpf(value.numerator) / value.denominator) < mpmath.mpf(10) ** -28
    assert got.p_mode1 == 0 and got.p_mode2 == 0 and got.mean_return_time is None


# --------------------------------------------------------------------------- identities


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_accepted_rate_equals_throughput_and_renewal(algorithm):
    ctx = mp_context(60)
    with ctx:
        sol = solve(make(RATES[1], 2, 4, 5, algorithm), ctx)
        for c in (1, 2):
            assert abs(sol.accepted_rate(c) / sol.throughput(c) - 1) < mpmath.mpf(10) ** -55
        assert abs(sol.mean_return_time() / sol.renewal_return_time() - 1) < mpmath.mpf(10) ** -55


def test_equal_service_rates_give_equal_totals_and_priority_matters_otherwise():
    lam = (F(3, 5), 2)
    equal = [TwoFlowModel(*lam, 2, 2, 2, 4, 5, a, 3, 3).evaluate(40) for a in Algorithm]
    with mpmath.workdps(50):
        for key in ("p_mode0", "p_mode1", "mean_number", "mean_return_time"):
            a, b = (mpmath.mpf(e[key]) for e in equal)
            assert abs(a - b) <= mpmath.mpf(10) ** -35 * abs(a), key
        # per class the disciplines differ even with equal rates (non-INVITE jumps the queue in overload)
        assert equal[1].mean_sojourn_non_invite < equal[0].mean_sojourn_non_invite
    unequal = [TwoFlowModel(*lam, 1, 5, 2, 4, 5, a).evaluate() for a in Algorithm]
    assert abs(unequal[0].p_mode0 - unequal[1].p_mode0) > 1e-3


def test_float64_and_mpmath_agree():
    model = make(RATES[0], 2, 4, 5, Algorithm.PRIORITY)
    a, b = model.evaluate().as_dict(), model.evaluate(30).as_dict()
    assert_close(a, {k: mpmath.mpf(v) for k, v in b.items() if v is not None} | {"mean_return_time":
                                                                               mpmath.mpf(b["mean_return_time"])},
                 1e-13)


def test_capacity_beyond_h_plus_one_does_not_bind_and_says_so():
    for alg in Algorithm:
        a, b = (make(RATES[0], 2, 4, R, alg).evaluate(30).as_dict() for R in (9, 5))
        assert a == b
    assert any("does not bind" in n for n in make(RATES[0], 2, 4, 9).evaluate().notes)
    assert make(RATES[0], 2, 4, 5).evaluate().notes == ()
    notes = make(RATES[0], 2, 4, 3).evaluate().notes
    assert any("never entered" in n and "null" in n for n in notes)


# --------------------------------------------------------------------------- bad and extreme input


def test_bad_parameters_are_refused_naming_the_field():
    with pytest.raises(ParameterError, match="H must exceed L"):
        TwoFlowModel(1, 1, 1, 1, 4, 3, 5)
    with pytest.raises(ParameterError, match="L must be >= 1"):
        TwoFlowModel(1, 1, 1, 1, 0, 3, 5)
    with pytest.raises(ParameterError, match="mu_invite = 0: must be > 0"):
        TwoFlowModel(1, 1, 0, 1, 1, 3, 5)
    with pytest.raises(ParameterError, match="mu_overload_non_invite"):
        TwoFlowModel(1, 1, 1, 1, 1, 3, 5, mu_overload_invite=2)
    with pytest.raises(ParameterError, match="must be an integer"):
        TwoFlowModel(1, 1, 1, 1, 1, 2.5, 5)
    model = TwoFlowModel(1, 1, 1, 1, 1, 17, 20, Algorithm.PRIORITY)  # the model is valid: the engine refuses
    with pytest.raises(BudgetError, match="two-flow-high = 17 .*--limit two-flow-high=17"):
        model.evaluate()
    with pytest.raises(BudgetError, match="dense-states = 2572 .*--limit dense-states=2572"):
        TwoFlowModel(1, 1, 1, 1, 4, 9, 10, Algorithm.PRIORITY).evaluate(20)  # too many for the dense mpmath solve
    with limits.limits(dense_states=50):  # the budget is the user's: lowered, it refuses 83 states
        with pytest.raises(BudgetError, match="dense-states = 83"):
            make(RATES[0], 2, 4, 5, Algorithm.PRIORITY).evaluate(20)


def test_extreme_rates_escalate_instead_of_failing():
    # lambda ratios of 1e600: float64 GTH overflows, the policy recomputes with mpmath; values outside the
    # double range stay mpmath numbers; every probability in [0, 1]
    rec = TwoFlowModel(F(1, 10**300), 10**300, 1, 5, 2, 4, 5).evaluate()
    assert rec.working_digits is not None and any("recomputed with mpmath" in n for n in rec.notes)
    for f, m in TwoFlowMeasures.measure_fields():
        v = getattr(rec, f.name)
        if m.kind.value == "probability":
            assert 0 <= v <= 1, f.name
    # a rate below the float64 range on a chain too large for the dense mpmath solve: one clear error
    with pytest.raises(NumericalError, match="too large for the dense mpmath solve"):
        TwoFlowModel(F(1, 10**400), 1, 1, 5, 8, 16, 17, Algorithm.PRIORITY).evaluate()


def test_guard_digits_grow_with_the_chain():
    engine = TwoFlowEngine()
    assert engine.guard_digits(make(RATES[0], 1, 2, 3)) < engine.guard_digits(make(RATES[0], 3, 7, 10))


# --------------------------------------------------------------------------- the symbolic law and the derivation


def test_symbolic_law_matches_the_exact_oracle_chain():
    from qderive.derivations.two_flow import CHECK_RATES, check_model, stationary_law

    for alg in Algorithm:
        law = stationary_law(1, 2, alg)
        chain = two_flow_chain(check_model(1, 2, 3, alg))
        ref = dict(zip(((s[0], tuple(c for c, _ in s[1])) for s in chain.states), chain.stationary_exact()))
        exact = law.at(CHECK_RATES)
        assert exact == [ref[(int(law.space.mode[i]), law.space.sequence(i))] for i in range(law.space.size)]


def test_derivation_verifies_and_exports():
    d = TwoFlowModel.example().derive()
    assert all(s.computed or s.check for s in d.steps)
    results = d.verify(20)
    assert all(r.passed for r in results), [r.as_dict() for r in results if not r.passed]
    assert "\\mu'" in d.latex()
    md = d.markdown()
    # the state polynomials are results (verified by the exact checks), not pages of displays
    assert "(F.0)" in md or "N_i" in md
    assert len(d.results["numerators_fifo"]) == d.results["law_fifo"].space.size


@pytest.mark.slow  # 1.7 s; the loop keeps the figures' common path (test_figures_style.py, test_hysteretic.py)
def test_figure_files(tmp_path):
    from qderive.derivations.figures.two_flow import FIGURES

    png, csv_path = tmp_path / "f.png", tmp_path / "f.csv"
    FIGURES["two-flow-comparison"](str(png), str(csv_path))
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("invite_share,work_ratio,algorithm") and len(lines) == 1 + 9 * 5 * 2
    assert png.stat().st_size > 10_000


def test_comparison_rows_small_grid():
    from qderive.derivations.figures.two_flow import comparison_rows

    study = {"rho": F(6, 5), "L": 2, "H": 4, "R": 5, "shares": (F(1, 2),), "ratios": (4, 12)}
    rows = comparison_rows(study)
    assert len(rows) == 4
    for r in rows:
        k, f = r["work_ratio"], F(1, 2)
        lam = F(6, 5) / (f * k + 1 - f)
        model = TwoFlowModel(f * lam, (1 - f) * lam, F(1, k), 1, 2, 4, 5, Algorithm(r["algorithm"]))
        ref = two_flow_measures(model, FLOAT64)
        assert r["rejection_invite"] == pytest.approx(ref["rejection_invite"], rel=1e-12)
        assert r["throughput_total"] == pytest.approx(ref["throughput_invite"] + ref["throughput_non_invite"],
                                                      rel=1e-12)


# --------------------------------------------------------------------------- command line


def run_eval(*args):
    return cli(["eval", "two-flow", *args])


def test_cli_contract_and_values():
    code, out, _ = run_eval("--rates", "0.6,2.0", "--service-rates", "1,5", "--thresholds", "2,4,5",
                            "--algorithm", "priority", "--json")
    assert code == 0
    payload = json.loads(out)
    assert CONTRACT_KEYS <= set(payload["measures"]) and payload["measures"]["states"] == 83
    ref = two_flow_measures(TwoFlowModel(F(3, 5), 2, 1, 5, 2, 4, 5, Algorithm.PRIORITY), FLOAT64)
    assert_close(payload["measures"], ref, 1e-12)
    assert "notes" not in payload


def test_cli_digits_and_overload_rates():
    code, out, _ = run_eval("--rates", "0.6,2", "--service-rates", "1,5", "--overload-service-rates", "1.5,6",
                            "--thresholds", "1,3,7", "--algorithm", "fifo", "--digits", "40", "--json")
    assert code == 0
    payload = json.loads(out)
    ref = at_50(TwoFlowModel(F(3, 5), 2, 1, 5, 1, 3, 7, Algorithm.FIFO, F(3, 2), 6))
    with mpmath.workdps(50):
        assert_close({k: mpmath.mpf(v) for k, v in payload["measures"].items()}, ref, mpmath.mpf(10) ** -38)
    assert any("does not bind" in n for n in payload["notes"])  # R = 7 > H + 1 = 4


def test_cli_solver_choice_and_sparse_at_digits():
    base = ["--rates", "0.6,2", "--service-rates", "1,5", "--thresholds", "3,7,10", "--json"]
    a, b = (json.loads(run_eval(*base, "--solver", s)[1])["measures"] for s in ("gth", "sparse"))
    assert_close(a, b, 1e-12)
    # mpmath always uses dense GTH: --solver sparse with --digits gives the GTH values
    c = json.loads(run_eval(*base[:-1], "--solver", "sparse", "--digits", "20", "--json")[1])["measures"]
    assert_close({k: float(v) for k, v in c.items()}, a, 1e-12)


def test_cli_note_in_text_output_and_null_return_time():
    code, out, _ = run_eval("--rates", "0.6,2", "--service-rates", "1,5", "--thresholds", "3,7,10")
    assert code == 0 and "note: R = 10 does not bind" in out
    code, out, _ = run_eval("--rates", "0.6,2", "--service-rates", "1,5", "--thresholds", "2,4,3", "--json")
    payload = json.loads(out)
    assert payload["measures"]["mean_return_time"] is None and payload["measures"]["p_mode2"] == 0
    assert any("never entered" in n for n in payload["notes"])


@pytest.mark.parametrize("args, message", [
    (["--thresholds", "4,3,5"], "--thresholds = 3: H must exceed L"),
    (["--thresholds", "2,4,5", "--rates", "0.6"], "--rates"),
    (["--thresholds", "2,4,5", "--rates", "0.6,x"], "--rates LAMBDA2"),
    (["--thresholds", "2,4,5", "--service-rates", "1,-5"], "--service-rates MU2 = -5: must be > 0"),
    (["--thresholds", "2,4.5,5"], "--thresholds H"),
    (["--thresholds", "2,4,5", "--algorithm", "lifo"], "lifo"),
    (["--thresholds", "4,9,10", "--digits", "30", "--algorithm", "priority"], "--limit dense-states=2572"),
    (["--thresholds", "4,17,18", "--algorithm", "priority"], "--limit two-flow-high=17"),
    (["--thresholds", "2,4,5", "--rates", "1e-2000,1"], "--rates"),  # the number bound of symbolic/limits
])
def test_cli_bad_input_exits_2_with_one_line(args, message):
    base = {"--rates": "0.6,2", "--service-rates": "1,5"}
    given = dict(zip(args[::2], args[1::2]))
    argv = [tok for key, value in {**base, **given}.items() for tok in (key, value)]
    code, out, err = run_eval(*argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert message in err, err


def test_cli_limit_raises_the_dense_budget():
    code, out, _ = run_eval("--rates", "0.6,2", "--service-rates", "1,5", "--thresholds", "2,4,5",
                            "--digits", "15", "--limit", "dense-states=100", "--algorithm", "priority", "--json")
    assert code == 0 and json.loads(out)["measures"]["states"] == 83
