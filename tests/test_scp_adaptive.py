"""The multi-service window of seed 003 with MEASURED response times ws_i (issue 14, item 4, the adaptive part).

Oracles: the update rule and the allocation (5), (6) recomputed by hand here (exact rationals, largest
remainders written out); at light load with an infinite-server back end the response time of a call is its
processing time, so the measured ws_i converge to h_i from a wrong start and the windows to the static
allocation: each service is then the M/M/n_i/n_i model, its blocking inside the 99.9% Student-t interval of
the simulation around Erlang B by the direct sum of (1); under overload, Little's law predicts fairness near 1
for measured ws_i, and the test asks the improvement over the static windows to exceed 3.3 standard errors.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction as F

import pytest

from test_scp import erlang_b_direct  # the exact direct sum of (1)
from test_scp_services import near  # the 99.9% Student-t interval
from qderive.numeric.simulation import scp as S
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.scp_window import SCPControl, SCPWindowModel


def by_hand(R, ratios, ws):
    """n_i = S_i ws_i, S_i = s_i R / sum_j s_j ws_j (5); floors, then +1 to the largest remainders (ties: first)."""
    share = [F(s) * F(w) for s, w in zip(ratios, ws)]
    exact = [R * x / sum(share) for x in share]
    n = [math.floor(x) for x in exact]
    for i in sorted(range(len(n)), key=lambda i: (n[i] - exact[i], i))[: R - sum(n)]:
        n[i] += 1
    return tuple(n)


def test_update_rule_smooths_the_measured_response_times():
    c = S.MeasuredServiceWindows(ratios=(3, 1), holdings=(F(1, 100), F(3, 100)), w_max=20, w_initial=20,
                                 update=2, smoothing=F(1, 4))
    st = c.state(1)
    assert st.windows == by_hand(20, (3, 1), (F(1, 100), F(3, 100)))  # the start: the static allocation
    for r in (0.05, 0.07):
        c.observe(st, 0, r)
    c.observe(st, 1, 0.09)
    c.tick(st, 1.0)  # before the first update: ws unchanged
    assert st.ws == [0.01, 0.03]
    c.tick(st, 2.0)
    want = [0.75 * 0.01 + 0.25 * 0.06, 0.75 * 0.03 + 0.25 * 0.09]
    assert st.ws == pytest.approx(want, rel=1e-15)
    assert st.windows == by_hand(20, (3, 1), [F(w).limit_denominator(10**9) for w in want])
    c.tick(st, 3.0)  # no response since: ws kept, next update at 4
    assert st.ws == pytest.approx(want, rel=1e-15) and st.next_update == 4.0
    with pytest.raises(ParameterError, match="smoothing"):
        S.MeasuredServiceWindows(smoothing=0)
    with pytest.raises(ParameterError, match="smoothing"):
        SCPWindowModel((1,), (1,), 2, smoothing=F(3, 2))


def test_allocation_always_sums_to_R():
    rng = random.Random(5)
    c = S.MeasuredServiceWindows(ratios=(2, 1, 5), holdings=(F(1, 7), F(3, 10), F(1, 20)), w_max=40)
    for _ in range(200):
        st = c.state(1)
        st.level = rng.randrange(c.levels)
        st.ws = [rng.uniform(1e-4, 3.0) for _ in range(3)]
        c.tick(st, 0.0)
        assert sum(st.windows) == 40 - st.level and min(st.windows) >= 0
        assert st.windows == by_hand(40 - st.level, (2, 1, 5), [F(w).limit_denominator(10**9) for w in st.ws])


def test_light_load_converges_to_the_static_allocation_and_erlang_b():
    """Prior ws = (0.2, 0.2) (windows 15 / 5); true h = (0.1, 0.3): after the warm-up the windows are (10, 10)."""
    c = S.MeasuredServiceWindows(ratios=(3, 1), holdings=(F(1, 5), F(1, 5)), w_max=20, w_initial=20, update=5,
                                 smoothing=F(1, 5))
    assert c.state(1).windows == (15, 5)
    config = S.SCPConfig(servers=None, horizon=160, warmup=60, threshold=10)  # the detector never fires
    services = ((60, F(1, 10)), (20, F(3, 10)))
    est = S.replicate_services(config, c, services, (3, 1), 5, seed=4)
    for i, (lam, h) in enumerate(services, start=1):
        want = float(erlang_b_direct(10, lam * h))
        assert near(est[f"blocking_{i}"], want), (i, est[f"blocking_{i}"].value, want)


def test_seeded_runs_are_reproducible():
    config = S.SCPConfig(horizon=8, warmup=2)
    c = S.MeasuredServiceWindows(ratios=(3, 1), holdings=(F(1, 100), F(3, 100)), update=F(1, 2))
    services = ((500, F(1, 100)), (250, F(3, 100)))
    a = S.simulate_services(config, c, services, seed=9)
    assert a == S.simulate_services(config, c, services, seed=9)
    assert a != S.simulate_services(config, c, services, seed=10)


def test_measured_windows_are_fairer_than_static_ones_under_overload():
    """The comparison figure's services (10 ms, 30 ms; offered 2 : 1; ratios 3 : 1) at 3x the capacity."""
    from qderive.derivations.figures.scp import SERVICES, SERVICE_RATIOS

    config = S.SCPConfig(horizon=25, warmup=10)
    holdings = tuple(h for h, _ in SERVICES)
    lam = 3 * config.servers / (sum(h * w for h, w in SERVICES) / 3)
    services = tuple((lam * w / 3, h) for h, w in SERVICES)
    static = S.replicate_services(config, S.ServiceWindows(ratios=SERVICE_RATIOS, holdings=holdings), services,
                                  SERVICE_RATIOS, 3, seed=1)["fairness"]
    measured = S.replicate_services(config, S.MeasuredServiceWindows(ratios=SERVICE_RATIOS, holdings=holdings),
                                    services, SERVICE_RATIOS, 3, seed=1)["fairness"]
    gap = measured.value - static.value
    assert gap > 3.3 * math.hypot(static.std_error, measured.std_error), (static, measured)
    assert measured.value > 0.95


def test_cli_choice():
    model = SCPWindowModel((60, 30), (F(1, 10), F(3, 10)), 20, ratios=(3, 1), control=SCPControl.ADAPTIVE_WINDOWS,
                           update=3, smoothing=F(1, 3))
    c = S.model_control(model)
    assert isinstance(c, S.MeasuredServiceWindows) and c.update == 3 and c.smoothing == F(1, 3)
