"""The multi-service SCP window of seed 003 (issue 14, item 4): allocation (5), (6), the window model per
service, the simulation against it, fairness and effectiveness, the command line.

Oracles: Erlang B by an exact direct sum of (1) written here (no code shared with the recursion of the
engine); the allocation by exact rationals; the simulation of fixed per-service windows with an
infinite-server back end is exactly the M/M/n_i/n_i model of each service, so its blocking must lie within
its 99.9% Student-t interval around Erlang B (a correct simulator fails that with probability 1e-3 at any
seed; few replications, so t, not a normal quantile).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest

from conftest import cli
from test_scp import erlang_b_direct  # the exact direct sum of (1)
from qderive.numeric.simulation import scp as S
from qderive.numeric.simulation.stats import student_t_quantile
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.scp_window import SCPWindowModel


def fixed_windows():
    """The allocation of 20 windows at ratios 3 : 1 (holdings 0.1, 0.3 s: 10 windows each), not adapted."""
    return S.ServiceWindows(ratios=(3, 1), holdings=(F(1, 10), F(3, 10)), w_max=20, w_initial=20, adaptive=False)


def near(estimate, want) -> bool:
    """``want`` inside the 99.9% Student-t interval of a simulated estimate."""
    return abs(estimate.value - float(want)) <= student_t_quantile(0.9995, estimate.dof) * estimate.std_error


def test_allocation_follows_5_and_6():
    """n_i = S_i ws_i with sum S_i ws_i = R: exact when the shares are integers; otherwise largest remainders."""
    assert S.service_windows(20, (3, 1), (F(1, 10), F(3, 10))) == (10, 10)  # S = 100, 100/3: 3 : 1
    assert S.service_windows(15, (1, 1, 2), (1, 2, 1)) == (3, 6, 6)  # S_i = 3, 3, 6 calls/s: sum S_i h_i = 15
    assert S.service_windows(12, (1, 1, 2), (1, 2, 1)) == (2, 5, 5)  # 2.4, 4.8, 4.8: the two larger remainders
    for R in range(1, 40):
        n = S.service_windows(R, (2, 1, 5), (F(1, 7), F(3, 10), F(1, 20)))
        assert sum(n) == R
        share = [F(2, 7), F(3, 10), F(5, 20)]
        exact = [R * x / sum(share) for x in share]
        assert all(abs(a - b) < 1 for a, b in zip(n, exact))


def test_eval_is_the_erlang_b_window_model_per_service():
    model = SCPWindowModel((60, 30), (F(1, 10), F(3, 10)), 20, ratios=(3, 1))
    got = model.evaluate(30)
    assert got["windows"] == [10, 10]

    def close(value, exact):  # 30 correct digits asked: 28 checked
        with mpmath.workdps(60):
            return abs(mpmath.mpf(value) / (mpmath.mpf(exact.numerator) / exact.denominator) - 1) < 1e-28

    carried = []
    for i, (lam, h) in enumerate(zip(model.rates, model.holdings)):
        b = erlang_b_direct(10, lam * h)
        assert close(got["blocking"][i], b)
        carried.append(lam * (1 - b))
        assert close(got["carried_rate"][i], carried[-1])
    y = [carried[0] / 3, carried[1] / 1]
    assert close(got["fairness"], sum(y) ** 2 / (2 * sum(v * v for v in y)))
    busy = sum(c * h for c, h in zip(carried, model.holdings))
    assert close(got["effectiveness"], busy / 20)


def test_simulated_fixed_windows_reproduce_erlang_b_per_service():
    config = S.SCPConfig(servers=None, horizon=120, warmup=10)
    control = fixed_windows()
    services = ((60, F(1, 10)), (30, F(3, 10)))
    est = S.replicate_services(config, control, services, (3, 1), 6, seed=11)
    for i, (lam, h) in enumerate(services, start=1):
        want = float(erlang_b_direct(10, lam * h))
        e = est[f"blocking_{i}"]
        assert near(e, want), (i, e.value, want, e.std_error)
        # the response time of an admitted call is its processing: (4) ws = 1/mu
        r = est[f"mean_response_{i}"]
        assert near(r, h)
    assert est["effectiveness"].value is None  # needs finitely many processors


def test_one_service_is_the_single_service_simulator():
    config = S.SCPConfig(horizon=30, warmup=5)
    a = S.simulate_run(config, S.AdaptiveWindow(), 150, seed=7)
    total, per = S.simulate_services(config, S.AdaptiveWindow(), ((150, config.holding),), seed=7)
    assert a == total == per[0]


def test_fairness_of_saturated_service_windows():
    """Both services far above their windows, infinite servers: carried_i ~ n_i / h_i, in the ratio 3 : 1."""
    config = S.SCPConfig(servers=None, horizon=40, warmup=5)
    control = fixed_windows()
    services = ((500, F(1, 10)), (300, F(3, 10)))
    est = S.replicate_services(config, control, services, (3, 1), 4, seed=2)
    carried = [lam * (1 - erlang_b_direct(10, lam * h)) for lam, h in services]  # (2), the window model
    for i, want in enumerate(carried, start=1):
        e = est[f"throughput_{i}"]
        assert near(e, want), (i, e.value, float(want))
    y = [float(carried[0]) / 3, float(carried[1])]
    jain = sum(y) ** 2 / (2 * sum(v * v for v in y))
    assert jain > 0.99 and near(est["fairness"], jain)
    assert S.fairness_index([3, 1], (3, 1)) == 1 and S.fairness_index([4, 0], (1, 1)) == 0.5


def test_cli_eval_and_simulate():
    base = ["--rates", "60,30", "--holdings", "0.1,0.3", "--ratios", "3,1", "--windows", "20"]
    code, out, err = cli(["eval", "scp-window", *base, "--json"])
    assert code == 0, err
    assert json.loads(out)["measures"]["windows"] == [10, 10]
    code, out, err = cli(["simulate", "scp-window", *base, "--control", "gapping", "--customers", "3000",
                          "--replications", "3", "--seed", "1", "--json"])
    assert code == 0, err
    measures = json.loads(out)["measures"]
    assert {"throughput_1", "goodput_2", "fairness", "effectiveness"} <= set(measures)
    code, _, err = cli(["eval", "scp-window", "--rates", "60,30", "--holdings", "0.1", "--windows", "20"])
    assert code == 2 and "holdings" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ParameterError, match="w-max"):
        SCPWindowModel((1,), (1,), 200)


def test_comparison_figure_writes_its_rows(tmp_path):
    from qderive.derivations.figures.scp import FIGURES, figure_scp_services

    assert "scp-services" in FIGURES
    png, out = tmp_path / "f.png", tmp_path / "f.csv"
    rows = figure_scp_services(str(png), str(out), load_factors=(F(2),), replications=2,
                               config=S.SCPConfig(horizon=6, warmup=1))
    assert png.stat().st_size > 0 and len(out.read_text().splitlines()) == 1 + len(rows) == 6
    assert {r["control"] for r in rows} == {"service windows", "adaptive windows", "adaptive window", "call gapping",
                                            "percentage"}
    assert all(0 < r["fairness"] <= 1 for r in rows)
