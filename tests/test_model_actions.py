"""``model.size(...)``, ``model.largest_load(...)``, ``model.optimize(...)``: the command line's actions as
Python methods returning records, and ``optimize`` without placeholder thresholds.

Oracles: the Erlang B recursion in exact fractions (B(0) = 1, B(n) = rho B(n-1) / (n + rho B(n-1)), Erlang
1917; shares no code with the engine's recursion), an exact brute force over every (L, H) of the M|M|1
hysteresis (the oracle of tests/test_optimize_seed002.py, rational arithmetic), and the command line's JSON
for the same request (the method must run the same action, with the model's fields as the options).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import pytest

from qderive.numeric.backend import FractionContext
from qderive.numeric.oracles import hysteretic as OH
from qderive.symbolic.batches import Geometric
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Exponential
from qderive.symbolic.models import model_class
from qderive.symbolic.models.actions import ActionResult
from qderive.symbolic.models.erlang_b import ErlangB
from qderive.symbolic.models.hysteretic import MM1HystereticModel

from conftest import cli


def _erlang_b(n, rho):
    b = F(1)
    for k in range(1, n + 1):
        b = rho * b / (k + rho * b)
    return b


def test_erlang_b_size_and_largest_load_against_the_exact_recursion():
    model = ErlangB(servers=10, load=5)
    res = model.size(target_blocking=F(1, 100))
    assert isinstance(res, ActionResult) and res.varied == ("servers",)
    n = res.servers
    assert _erlang_b(n, F(5)) <= F(1, 100) < _erlang_b(n - 1, F(5))  # the smallest n
    assert res["blocking_probability"] == pytest.approx(float(_erlang_b(n, F(5))), rel=1e-13)
    load = model.largest_load(target_blocking=F(1, 100))
    assert load.varied == ("load",) and load.servers == 10
    rho = F(repr(load.load))
    # B(10, rho*) = 0.01 to the float64 rho* (B rises with rho: the printed rho* brackets the target)
    assert float(_erlang_b(10, rho)) == pytest.approx(0.01, rel=1e-12)
    code, out, _ = cli(["size", "erlang-b", "--load", "5", "--target-blocking", "0.01", "--json"])
    assert code == 0 and json.loads(out)["servers"] == n


def test_vacation_finite_size_and_largest_load_equal_the_command_line():
    cls = model_class("vacation-finite")
    model = cls.from_values({"batch": Geometric(2), "service": Exponential(1), "vacation": Exponential(2),
                             "capacity": 3, "load": F(1, 2)})
    res = model.largest_load(target_loss=F(3, 10))
    code, out, _ = cli(["size", "vacation-finite", "--batch", "geometric:mean=2", "--service", "exp:mean=1",
                        "--vacation", "exp:mean=2", "--capacity", "3", "--target-loss", "0.3", "--json"])
    want = json.loads(out)
    assert code == 0 and res.varied == ("rate",)
    assert res.load == pytest.approx(want["load"], rel=1e-12) and res.loss_probability <= 0.3
    small = model.size(target_loss=F(1, 3))
    code, out, _ = cli(["size", "vacation-finite", "--batch", "geometric:mean=2", "--service", "exp:mean=1",
                        "--vacation", "exp:mean=2", "--load", "0.5", "--target-loss", "1/3", "--json"])
    assert code == 0 and small.varied == ("capacity",) and small.capacity == json.loads(out)["capacity"]
    assert set(small.as_dict()) == set(small) and small["capacity"] == small.capacity


def _mm1(L, H, R):
    ctx = FractionContext()
    with ctx:
        return OH.mm1(MM1HystereticModel(F(6, 5), F(3, 5), 1, L, H, R), ctx).measures


def test_optimize_ignores_the_models_own_thresholds():
    """The seed-002 optimum (6, 7) at R = 10 (exact brute force), whatever L and H the model was built with."""
    best, ties = OH.threshold_optimum(_mm1, [10], F(1, 20), 5, "p_discard")
    assert ties == [(6, 7, 10)]
    for L, H in ((1, 2), (3, 5), (8, 9)):
        res = MM1HystereticModel(F(6, 5), F(3, 5), 1, L, H, 10).optimize(discard_bound=F(1, 20), min_cycle=5)
        assert (res.feasible, res.L, res.H, res.R) == (True, 6, 7, 10) and res.varied == ("L", "H")
        assert res.measures["mean_return_time"] == pytest.approx(float(best), rel=1e-13)


def test_optimize_command_line_needs_no_placeholder_thresholds():
    args = ["optimize", "mm1-hysteretic", "--rates", "1.2,0.6", "--service-rate", "1", "--discard-bound", "0.05",
            "--min-cycle", "5", "--json"]
    code, out, err = cli([*args, "--thresholds", "10"])
    assert code == 0 and err == "" and (json.loads(out)["L"], json.loads(out)["H"]) == (6, 7)
    code, old, err = cli([*args, "--thresholds", "1,2,10"])  # the old spelling: read, L and H not used, one note
    assert code == 0 and json.loads(old) == json.loads(out)
    assert err.count("\n") == 1 and "not used" in err and "--thresholds 10" in err
    code, _, err = cli([*args, "--thresholds", "1,10"])
    assert code == 2 and "--thresholds" in err and err.count("\n") == 1
    code, out, _ = cli(["optimize", "hysteretic", "--help"])
    assert "--thresholds R" in " ".join(out.split())


def test_action_errors_name_what_is_wrong():
    model = ErlangB(servers=10, load=5)
    with pytest.raises(ParameterError, match="has no optimize"):
        model.optimize(max_copies=3)
    with pytest.raises(ParameterError, match="unknown option target_loss"):
        model.size(target_loss=F(1, 10))
    with pytest.raises(ParameterError, match="vary"):
        model.size(vary="holding_time", target_blocking=F(1, 100))
    with pytest.raises(AttributeError, match="has no 'capacity'"):
        model.size(target_blocking=F(1, 100)).capacity


def test_optimize_with_r_range_needs_no_threshold_at_all():
    """--r-range searches R too: no --thresholds (the ties of the exact brute force over R <= 9)."""
    args = ["optimize", "mm1-hysteretic", "--rates", "1.2,0.6", "--service-rate", "1", "--discard-bound", "0.1",
            "--min-cycle", "3", "--json"]
    code, out, err = cli([*args, "--r-range", "3,9"])
    best, ties = OH.threshold_optimum(lambda L, H, R: _mm1(L, H, R), range(3, 10), F(1, 10), 3, "p_discard")
    assert code == 0 and err == "" and (json.loads(out)["L"], json.loads(out)["H"], json.loads(out)["R"]) == ties[0]
    res = MM1HystereticModel(F(6, 5), F(3, 5), 1, 1, 2, 5).optimize(discard_bound=F(1, 10), min_cycle=3,
                                                                    r_range=(3, 9))
    assert (res.L, res.H, res.R) == ties[0]
    code, _, err = cli(args)
    assert code == 2 and "--r-range" in err and err.count("\n") == 1
