"""SCP overload simulation (seed 003): the simulator against queueing theory, the controls, the study.

The simulator is checked against closed forms that share no code with it: the M/M/n/n window
model (Erlang B by an exact direct sum written here, eqs. (1)-(4), and the package's erlang-b
model), M/M/1 and M/M/c (Erlang C) mean response times. Seeds are fixed, so every check is
deterministic. A simulated mean must lie within 4 standard errors of the theory (the standard
error over the independent replications): a correct simulator fails that with probability ~1e-3
at any seed, while a 95% interval would miss 5% of the time. Runs are small (seconds in total).
"""

from __future__ import annotations

import csv
import math
from fractions import Fraction as F

import pytest

from qderive.numeric.simulation import scp as S
from qderive.numeric.simulation.stats import student_t_quantile
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.erlang_b import ErlangB


def erlang_b_direct(n: int, a: F) -> F:
    term, total = F(1), F(1)
    for j in range(1, n + 1):
        term = term * a / j
        total += term
    return term / total


def near(est, theory: float) -> bool:
    """|mean - theory| <= 4 standard errors."""
    return abs(est.value - theory) <= 4 * est.std_error


def test_runs_are_reproducible_and_seeds_matter():
    cfg = S.SCPConfig(horizon=30, warmup=5)
    a = S.simulate_run(cfg, S.AdaptiveWindow(), 150, seed=7)
    b = S.simulate_run(cfg, S.AdaptiveWindow(), 150, seed=7)
    c = S.simulate_run(cfg, S.AdaptiveWindow(), 150, seed=8)
    assert a == b and a != c
    assert S.replicate(cfg, S.NoControl(), 50, 3, seed=4)["throughput"] == S.replicate(cfg, S.NoControl(), 50, 3,
                                                                                        seed=4)["throughput"]


def test_fixed_window_with_infinite_servers_is_erlang_b():
    # the window model of seed 003: M/M/n/n with n = 5, rho = lambda h = 4
    n, lam, h = 5, F(4), F(1)
    cfg = S.SCPConfig(servers=None, holding=h, horizon=1500, warmup=50, threshold=10**6, timeout=10**6)
    est = S.replicate(cfg, S.FixedWindow(n=n), lam, replications=10, seed=11)
    B = float(erlang_b_direct(n, lam * h))
    assert abs(ErlangB(n, lam * h).evaluate().blocking_probability - B) < 1e-15  # the package agrees
    assert near(est["blocking"], B)  # eq. (1) at k = n
    assert near(est["throughput"], float(lam) * (1 - B))  # eq. (2): lambda_e = lambda (1 - p_n)
    assert near(est["mean_response"], float(h))  # eq. (4): w_s = 1/mu
    assert est["blocking"].interval(0.95)[1] - est["blocking"].interval(0.95)[0] < 0.02  # informative


def test_uncontrolled_mm1_mean_response():
    lam, h = F(1, 2), F(1)  # rho = 0.5: E[response] = h / (1 - rho) = 2
    cfg = S.SCPConfig(servers=1, holding=h, sources=1, horizon=3000, warmup=100, threshold=10**6)
    est = S.replicate(cfg, S.NoControl(), lam, replications=10, seed=3)
    assert near(est["mean_response"], 2.0)
    assert near(est["throughput"], 0.5)


def test_uncontrolled_mmc_mean_response_erlang_c():
    c, lam, h = 4, F(80), F(1, 25)  # a = 3.2 Erlang on 4 servers, rho = 0.8
    a = lam * h
    B = erlang_b_direct(c, a)
    C_wait = B / (1 - (a / c) * (1 - B))  # Erlang C from Erlang B
    mean_resp = float(h + C_wait / (c / h - lam))
    cfg = S.SCPConfig(servers=c, holding=h, horizon=200, warmup=10, threshold=10**6)
    est = S.replicate(cfg, S.NoControl(), lam, replications=10, seed=5)
    assert near(est["mean_response"], mean_resp)


def test_admission_rules():
    win = S.AdaptiveWindow(w_max=10, w_initial=4)
    st = win.state(sources=2)
    assert win.admits(st, 0.0, 0, 3, 0.5) and not win.admits(st, 0.0, 0, 4, 0.5)
    gap = S.CallGapping(g_min=0.1, steps_per_doubling=1)
    st = gap.state(sources=2)
    st.level = 2  # g = 0.2 s
    assert gap.gap(2) == pytest.approx(0.2)
    assert gap.admits(st, 1.0, 0, 0, 0.0)
    assert not gap.admits(st, 1.1, 0, 0, 0.0)  # the same source within the gap
    assert gap.admits(st, 1.1, 1, 0, 0.0)  # another SSP has its own gap
    assert gap.admits(st, 1.25, 0, 0, 0.0)
    pct = S.PercentageThrottling(step=0.25)
    st = pct.state(sources=1)
    st.level = 2  # admit 50%
    assert pct.admits(st, 0.0, 0, 0, 0.49) and not pct.admits(st, 0.0, 0, 0, 0.51)


def test_window_bounds_the_response_under_overload_and_no_control_does_not():
    cfg = S.SCPConfig(horizon=60, warmup=20)
    lam = 2 * F(100)  # twice the capacity of 100 calls/s
    win = S.replicate(cfg, S.AdaptiveWindow(), lam, replications=2, seed=1)
    none = S.replicate(cfg, S.NoControl(), lam, replications=2, seed=1)
    assert win["mean_response"].value < 1.5 * float(cfg.threshold)
    assert win["throughput"].value > 0.9 * cfg.capacity
    assert none["mean_response"].value > 10 * float(cfg.threshold)
    assert none["goodput"].value < 0.1 * cfg.capacity


def test_refusal_cost_at_the_scp_hurts_the_window_only():
    lam = 3 * F(100)
    free = S.SCPConfig(horizon=40, warmup=10)
    costly = S.SCPConfig(horizon=40, warmup=10, rejection_cost=F(1, 10))
    w0 = S.replicate(free, S.AdaptiveWindow(), lam, 3, seed=2)["throughput"].value
    w1 = S.replicate(costly, S.AdaptiveWindow(), lam, 3, seed=2)["throughput"].value
    g0 = S.replicate(free, S.CallGapping(), lam, 3, seed=2)["throughput"].value
    g1 = S.replicate(costly, S.CallGapping(), lam, 3, seed=2)["throughput"].value
    # 200 refusals/s x 10% x 40 ms = 0.8 of the 4 processors' 4 s/s: about 20% of the capacity lost
    assert w1 < 0.9 * w0
    assert g1 == g0  # refused at the SSP: the SCP does not see them


def test_t_quantile_against_tables():
    # Student t 97.5% quantiles from standard tables (NIST/SEMATECH e-Handbook, table 1.3.6.7.2)
    assert student_t_quantile(0.975, 1) == pytest.approx(12.706, abs=1e-3)
    assert student_t_quantile(0.975, 9) == pytest.approx(2.262, abs=1e-3)
    assert student_t_quantile(0.975, 30) == pytest.approx(2.042, abs=1e-3)


@pytest.mark.parametrize("kwargs, message", [
    (dict(servers=0), "servers = 0: must be >= 1"),
    (dict(warmup=200), "warmup"),
    (dict(holding=-1), "holding = -1: must be > 0"),
    (dict(rejection_cost=-1), "rejection_cost"),
    (dict(sources=F(5, 2)), "sources"),
])
def test_bad_config_is_refused(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        S.SCPConfig(**kwargs)


def test_bad_controls_and_replications_are_refused():
    with pytest.raises(ParameterError, match="w_initial"):
        S.AdaptiveWindow(w_max=5, w_initial=6)
    with pytest.raises(ParameterError, match="step"):
        S.PercentageThrottling(step=0)
    with pytest.raises(ParameterError, match="g_min"):
        S.CallGapping(g_min=1, g_max=0.5)
    with pytest.raises(ParameterError, match="replications"):
        S.replicate(S.SCPConfig(), S.NoControl(), 10, replications=1)
    with pytest.raises(ParameterError, match="arrival_rate"):
        S.simulate_run(S.SCPConfig(), S.NoControl(), -1, seed=1)


@pytest.mark.slow  # 1.4 s; the loop keeps the figures' common path (test_figures_style.py, test_hysteretic.py)
def test_figure_scp_tiny_study(tmp_path):
    from qderive.derivations.figures.scp import FIGURES, figure_scp

    assert FIGURES["scp-overload"] is figure_scp
    png, path = tmp_path / "scp.png", tmp_path / "scp.csv"
    rows = figure_scp(str(png), str(path), load_factors=(F(1, 2), F(2)), replications=2,
                      config=S.SCPConfig(horizon=30, warmup=10))
    assert png.stat().st_size > 10_000
    written = list(csv.DictReader(open(path)))
    assert len(written) == len(rows) == 2 * 4 * 2  # 2 scenarios x 4 controls x 2 loads
    low = [r for r in written if float(r["load_factor"]) == 0.5]
    # at half the capacity no control refuses anything
    assert all(math.isclose(float(r["admitted_fraction"]), 1.0) for r in low)
    assert {"throughput_ci95", "goodput_ci95", "mean_response_ci95"} <= set(written[0])
