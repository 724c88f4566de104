"""Threshold optimisation of the seed-002 models (``qderive optimize mm1-hysteretic`` / ``two-flow-hysteretic``).

Every optimum is checked against a brute force over the whole grid with the oracles of
:mod:`qderive.numeric.oracles` (CTMCs built from the model definitions, never from the kernels
the optimiser uses), in exact rational arithmetic (M|M|1) or at 30 digits (two flows): the
optimum, the set of tied optima and the tie-break (smallest R, then L, then H) must agree
exactly. The issue's numbers (lambda0 = 1.2, lambda1 = 0.6, mu = 1, R = 10, P(S2) <= 0.05,
E tau >= 5: (L, H) = (6, 7), E tau_12 = 4.2065) are the published brute-force values.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction as F

import mpmath
import pytest

from qderive.numeric.backend import FractionContext, mp_context
from qderive.numeric.engines import threshold_search as S
from qderive.numeric.oracles import hysteretic as OH
from qderive.numeric.oracles import two_flow as OT
from qderive.symbolic.models.hysteretic import MM1HystereticModel
from qderive.symbolic.models.two_flow import TwoFlowHystereticModel

from conftest import cli

ISSUE = ["--rates", "1.2,0.6", "--service-rate", "1", "--thresholds", "10", "--discard-bound", "0.05",
         "--min-cycle", "5", "--json"]


def _mm1_oracle(L, H, R, lam0=F(6, 5), lam1=F(3, 5), mu=1):
    ctx = FractionContext()
    with ctx:
        return OH.mm1(MM1HystereticModel(lam0, lam1, mu, L, H, R), ctx).measures


def _brute_force(measures_at, r_values, eps, T, discard="p_discard"):
    """(smallest E tau_12, all tied optima sorted by R, L, H) over the whole grid (exact comparisons)."""
    return OH.threshold_optimum(measures_at, r_values, eps, T, discard)


def test_issue_example_against_an_exact_brute_force():
    """The issue's optimum (6, 7) with E tau_12 = 4.2065: the CLI, an exact brute force over the 36 (L, H)."""
    code, out, err = cli(["optimize", "mm1-hysteretic", *ISSUE])
    assert code == 0 and err == ""
    got = json.loads(out)
    best, ties = _brute_force(_mm1_oracle, [10], F(1, 20), 5)
    assert ties == [(6, 7, 10)] and best == F(5153, 1225)  # exact oracle value
    assert (got["feasible"], got["L"], got["H"], got["R"]) == (True, 6, 7, 10)
    assert got["ties"] == [{"L": 6, "H": 7, "R": 10}]
    assert round(got["measures"]["mean_return_time"], 4) == 4.2065  # the issue's brute-force value
    assert got["measures"]["mean_return_time"] == pytest.approx(float(best), rel=1e-14)  # float64 O(R eps)
    exact = _mm1_oracle(6, 7, 10)
    assert got["discard_margin"] == pytest.approx(float(F(1, 20) - exact["p_discard"]), rel=1e-12)
    assert got["cycle_margin"] == pytest.approx(float(exact["mean_cycle_time"] - 5), rel=1e-12)
    assert "at once" in got["optimised_model"] and got["confirmed"] == "exact"


@pytest.mark.parametrize("eps, T", [(F(1, 10), 3), (F(3, 20), 4), (F(1, 20), 2)])
def test_r_range_ties_against_an_exact_brute_force(eps, T):
    """With --r-range the ties are real (E tau_12 depends on H - L and R - H only): the exact brute force over
    all 84 triples with R <= 9 gives the same tied set, and the smallest R, L, H is returned."""
    model = MM1HystereticModel(F(6, 5), F(3, 5), 1, 1, 2, 9)
    got = S.optimize_mm1(model, eps, T, r_range=(3, 9))
    best, ties = _brute_force(_mm1_oracle, range(3, 10), eps, T)
    assert [(t["L"], t["H"], t["R"]) for t in got["ties"]] == ties and len(ties) > 1
    assert (got["L"], got["H"], got["R"]) == ties[0]
    assert got["measures"]["mean_return_time"] == pytest.approx(float(best), rel=1e-14)


def test_monotone_structure_that_the_search_uses():
    """The proof behind the monotone search, checked on the oracle: for fixed a = H - L and b = R - H,
    E tau_12 does not depend on L, P(S2) decreases and E tau increases with L (exactly)."""
    for a, b in ((1, 2), (2, 3)):
        rows = [_mm1_oracle(L, L + a, L + a + b) for L in range(1, 6)]
        assert len({r["mean_return_time"] for r in rows}) == 1
        assert all(x["p_discard"] > y["p_discard"] for x, y in zip(rows, rows[1:]))
        assert all(x["mean_cycle_time"] < y["mean_cycle_time"] for x, y in zip(rows, rows[1:]))


def test_a_bound_met_with_equality_is_decided_exactly():
    """eps = P(S2) at (6, 7, 10) exactly: float64 cannot decide p <= eps, the exact recomputation can. One
    rational below, (6, 7) is infeasible and the brute force's next optimum is returned."""
    p = _mm1_oracle(6, 7, 10)["p_discard"]
    model = MM1HystereticModel(F(6, 5), F(3, 5), 1, 1, 2, 10)
    assert (S.optimize_mm1(model, p, 5)["L"], S.optimize_mm1(model, p, 5)["H"]) == (6, 7)
    below = p - F(1, 10**30)
    got = S.optimize_mm1(model, below, 5)
    _, ties = _brute_force(_mm1_oracle, [10], below, 5)
    assert (got["L"], got["H"], got["R"]) == ties[0] != (6, 7, 10)
    assert got["discard_margin"] > 0


def test_infeasible_constraints_say_so():
    code, out, _ = cli(["optimize", "mm1-hysteretic", *ISSUE[:-5], "--discard-bound", "0.001", "--min-cycle", "50",
                        "--json"])
    got = json.loads(out)
    assert code == 0 and got["feasible"] is False and "no thresholds" in got["reason"]
    # the closest points it reports: the smallest P(S2) over the grid (exact brute force: at L = 8, H = 9)
    smallest = min((_mm1_oracle(L, H, 10)["p_discard"], (L, H)) for L in range(1, 9) for H in range(L + 1, 10))
    assert (got["smallest_discard"]["L"], got["smallest_discard"]["H"]) == smallest[1]
    code, _, err = cli(["optimize", "mm1-hysteretic", *ISSUE, "--r-range", "5,2"])
    assert code == 2 and "--r-range" in err and err.count("\n") == 1


def test_executor_gives_the_same_answer():
    model = MM1HystereticModel(F(6, 5), F(3, 5), 1, 1, 2, 9)
    with ThreadPoolExecutor(2) as ex:
        again = S.optimize_mm1(model, F(1, 10), 3, r_range=(3, 9), executor=ex)
    assert again == S.optimize_mm1(model, F(1, 10), 3, r_range=(3, 9))


def _two_flow_oracle(L, H, R):
    ctx = mp_context(30)
    m = TwoFlowHystereticModel(F(1, 2), F(1, 2), F(1, 4), F(1, 8), L, H, R, service_rates=(1, 2),
                               lambda1_discard=F(1, 8))
    with ctx:
        out = OT.hysteretic_measures(m, ctx, tagged=False)
    return {k: out[k] for k in ("p_mode2", "mean_return_time", "mean_cycle_time")}


def test_two_flow_against_an_oracle_brute_force():
    """Unequal service rates (no lumping to M|M|1): the whole-grid search against the oracle chain at 30 digits
    over the 20 triples with R <= 6; the tie test of the brute force is equality to 25 digits."""
    model = TwoFlowHystereticModel(F(1, 2), F(1, 2), F(1, 4), F(1, 8), 1, 2, 6, service_rates=(1, 2),
                                   lambda1_discard=F(1, 8))
    got = S.optimize_two_flow(model, F(1, 50), 9, r_range=(3, 6))
    low, ties = OH.threshold_optimum(_two_flow_oracle, range(3, 7), F(1, 50), 9, "p_mode2",
                                     tie=mpmath.mpf(10)**-25)
    assert [(t["L"], t["H"], t["R"]) for t in got["ties"]] == ties
    assert (got["L"], got["H"], got["R"]) == ties[0] and got["confirmed"] == "30 digits"
    assert got["measures"]["mean_return_time"] == pytest.approx(float(low), rel=1e-12)


def test_two_flow_ties_with_equal_service_rates():
    """Equal service rates: the count is the M|M|1 hysteresis with the total rates, so the ties are real; their
    float64 values differ in the last bits, the 30-digit confirmation makes them one tied set, equal to the
    exact M|M|1 brute force's."""
    model = TwoFlowHystereticModel(F(4, 5), F(2, 5), F(2, 5), F(1, 5), 1, 2, 9, service_rates=1)
    got = S.optimize_two_flow(model, F(1, 10), 3, r_range=(5, 9))
    _, ties = _brute_force(_mm1_oracle, range(5, 10), F(1, 10), 3)
    assert [(t["L"], t["H"], t["R"]) for t in got["ties"]] == ties and len(ties) > 1


def test_two_flow_cli_with_equal_rates_is_the_mm1_optimum():
    """Equal service rates: the two-flow count is the M|M|1 hysteresis with the total rates (1.2, 0.6), so the
    issue's optimum (6, 7, 10) comes back (an independent model and engine)."""
    code, out, _ = cli(["optimize", "two-flow-hysteretic", "--rates-normal", "0.8,0.4", "--rates-overload", "0.4,0.2",
                        *ISSUE[2:]])
    got = json.loads(out)
    assert code == 0 and (got["L"], got["H"], got["R"]) == (6, 7, 10) and "p_mode2" in got["measures"]
    assert got["measures"]["mean_return_time"] == pytest.approx(5153 / 1225, rel=1e-12)


def test_optimize_hysteretic_names_its_model_and_points_at_mm1():
    code, out, _ = cli(["optimize", "hysteretic", "--help"])
    text = " ".join(out.split())
    assert code == 0 and "mode changes at departures" in text and "optimize mm1-hysteretic" in text
    from qderive.numeric.engines.hysteretic import OPTIMISED_MODEL

    assert "departure epochs" in OPTIMISED_MODEL and "mm1-hysteretic" in OPTIMISED_MODEL
