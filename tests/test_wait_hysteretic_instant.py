"""Waiting and sojourn times of admitted customers of M[X]|G|1|(L,H)|(H,R) under ``--policy instant``.

The law (numeric/engines/hysteretic_wait.py: the birth kernel's rows weighted by the rate in force,
inverted by Euler) is checked against things computed another way:

* exponential service with geometric batches: the tagged customer's absorption time in the instant-policy CTMC
  over (count, mode) built from the definition (numeric/oracles/hysteretic_wait.py; an admitted customer with
  n services ahead waits Erlang(n, mu)), at 50 digits: tails, moments, the sojourn and P(W = 0) to 1e-28
  relative at 30 digits (measured: 1e-40; the inversion is confirmed to 32 digits), float64 to 1e-9 (the
  policy's float64 tolerance); f = 1/2 and f = 0 (complete blocking: the overload part has no arrivals);
* single arrivals and exponential service: the M|M|1 hysteresis model's own response law (``mm1-hysteretic``,
  numeric/engines/ctmc_wait.py: uniformization of its tagged chain), another model object and algorithm;
* Little's law: E W = E(number waiting) / throughput from the instant engine's time-stationary law (17) and
  1/C (the embedded chain's renewal reward, not the wait's rows), float64 to 1e-12; and the identity N(0) = 1
  (admitted customers per departure) to 1e-13;
* a hyperexponential service against a seeded simulation of the instant policy (the simulator's FIFO waits
  of admitted customers; its mode tables are written independently of the birth kernel), inside simultaneous
  99 % intervals (Bonferroni over the 7 estimates);
* float64 against 30 digits (tails 1e-9, moments 1e-12; the 30-digit tail confirmed at two inversion precisions);
* a constant service: moments (mean against Little's law); its exact tails: tests/test_wait_instant_lattice.py.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F

import mpmath
import pytest
import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.hysteretic import instant_chain
from qderive.numeric.engines.hysteretic_wait import hysteretic_laws
from qderive.numeric.oracles.hysteretic_wait import instant_wait
from qderive.numeric.response import moments, quantiles, tails
from qderive.symbolic.models.hysteretic import Policy

TIGHT = mpmath.mpf(10) ** -28

EXP = qd.HystereticModel(service=qd.Exponential(F(1, 2)), batch=qd.Geometric(F(3, 2)), L=2, H=4, R=7, rate=F(3, 4),
                         overload_factor=F(1, 2), policy=Policy.INSTANT)
HYPER = qd.HystereticModel(service=qd.HyperExponential((F(1, 4), F(3, 4)), (F(5, 2), F(1, 2))),
                           batch=qd.Geometric(F(2)), L=2, H=4, R=7, rate=F(2, 5), policy=Policy.INSTANT)
# the simulated case (R = 10: the float64 quantile search stays where both inversion parameter sets agree)
HYPER10 = replace(HYPER, L=3, H=6, R=10)


def _close(got, ref, tol):
    for g, r in zip(got, ref, strict=True):
        assert abs(g - r) <= tol * abs(r), (g, r)


@pytest.mark.parametrize("f", [F(1, 2), F(0)], ids=["throttle", "block"])
def test_exponential_against_tagged_ctmc(f):
    model = replace(EXP, overload_factor=f)
    laws = hysteretic_laws(model)
    ts = [F(1, 2), F(6)]
    ref_tail, ref_mom = instant_wait(model, 50, ts, 2)
    ref_soj, _ = instant_wait(model, 50, ts[:1], 0, sojourn=True)
    got, digits, _, _ = tails(laws["wait"], ts, 30)
    assert digits >= 32
    with mpmath.workdps(50):
        _close(got, ref_tail, TIGHT)
        _close(moments(laws["wait"], 2, 30)[0], ref_mom, TIGHT)
        _close(tails(laws["sojourn"], ts[:1], 30)[0], ref_soj, TIGHT)
        busy = instant_wait(model, 50, [F(0)])[0][0]
        assert abs(laws["wait"].p_zero(mp_context(30)) - (1 - busy)) <= TIGHT
    # float64 (a tail above 1e-2: both float64 inversion parameter sets agree there, no escalation)
    _close(tails(laws["wait"], ts[:1], None)[0], [float(ref_tail[0])], 1e-9)


def test_single_arrivals_are_the_mm1_hysteresis():
    model = qd.HystereticModel(service=qd.Exponential(F(1)), L=2, H=4, R=7, rate=F(9, 10), overload_factor=F(1, 3),
                               policy=Policy.INSTANT)
    mm1 = qd.MM1HystereticModel(F(9, 10), F(3, 10), 1, 2, 4, 7)
    ts = (F(1, 2), F(3))
    a = model.evaluate(wait_tail=ts, wait_moments=2, sojourn_tail=ts[:1])
    b = mm1.evaluate(wait_tail=ts, wait_moments=2, sojourn_tail=ts[:1])
    for key in ("wait_tail", "sojourn_tail"):
        _close(list(a.response[key].values()), list(b.response[key].values()), 1e-9)
    _close(a.response["wait_moments"], b.response["wait_moments"], 1e-12)


def test_little_and_precisions():
    laws = hysteretic_laws(HYPER)
    with FLOAT64:
        chain = instant_chain(HYPER, FLOAT64)
        p = chain.time_law()
    queue = sum(max(c - 1, 0) * float(p[m][c]) for m in range(3) for c in range(HYPER.R + 1))
    mean, _ = moments(laws["wait"], 2, None)
    assert abs(mean[0] - queue * float(chain.C)) <= 1e-12 * mean[0]  # throughput 1/C
    from qderive.numeric.engines.hysteretic_wait import instant_wait_data

    assert abs(sum(float(d.N0) for d in instant_wait_data(HYPER).parts(FLOAT64)) - 1) <= 1e-13
    ts = [F(5)]
    lo = tails(laws["wait"], ts, None)[0]
    hi, digits, _, _ = tails(laws["wait"], ts, 30)
    assert digits >= 32  # two inversion precisions agree
    _close(lo, [float(x) for x in hi], 1e-9)
    m30 = moments(laws["wait"], 2, 30)[0]
    _close(mean, [float(x) for x in m30], 1e-12)
    s30 = moments(laws["sojourn"], 1, 30)[0]
    assert abs(s30[0] - m30[0] - 1) <= TIGHT  # E T = E W + b_1 (b_1 = 1/4 5/2 + 3/4 1/2 = 1)


def test_simulation_interval():
    from qderive.numeric.simulation.hysteretic import simulate

    laws = hysteretic_laws(HYPER10)
    ref = {"wait_tail": dict(zip(("0.5", "5"), tails(laws["wait"], (F(1, 2), F(5)), None)[0])),
           "wait_quantile": dict(zip(("0.5", "0.9"), quantiles(laws["wait"], (F(1, 2), F(9, 10)), None, 3.0)[0])),
           "wait_moments": moments(laws["wait"], 2, None)[0],
           "sojourn_tail": {"2": tails(laws["sojourn"], (F(2),), None)[0][0]}}
    res = simulate(HYPER10, 20_000, 20, seed=2026, quiet=True, wait_tail=("0.5", "5"), wait_quantile=("0.5", "0.9"),
                   wait_moments=2, sojourn_tail=("2",))
    checks = [(f"{name}[{key}]", res[name][key], float(v))
              for name, refs in ref.items()
              for key, v in (refs.items() if isinstance(refs, dict) else enumerate(refs))]
    level = 1 - 0.01 / len(checks)  # simultaneous 99 %
    bad = [f"{label}: {v:.6g} outside {est.interval(level)}" for label, est, v in checks
           if not est.interval(level)[0] <= v <= est.interval(level)[1]]
    assert not bad, bad


def test_constant_service_moments_and_exact_tails():
    model = replace(HYPER, service=qd.Deterministic(F(1)))
    laws = hysteretic_laws(model)
    with FLOAT64:
        chain = instant_chain(model, FLOAT64)
        p = chain.time_law()
    queue = sum(max(c - 1, 0) * float(p[m][c]) for m in range(3) for c in range(model.R + 1))
    mean = moments(laws["wait"], 1, None)[0][0]
    assert abs(mean - queue * float(chain.C)) <= 1e-12 * mean
    # the tails are the exact lattice sums now (tests/test_wait_instant_lattice.py checks them)
    assert 0 < tails(laws["wait"], [F(1)], None)[0][0] < 1


@pytest.mark.parametrize("f", [F(1, 2), F(0)], ids=["throttle", "block"])
def test_recursion_over_counts_equals_the_rows(f):
    """Phi at the nodes by the recursion over the counts (birth_levels_by_customers) = by the batch rows, at nodes
    where the recursion is stable (and used by AUTO in mpmath): float64 to 1e-13, 30 digits to 1e-29."""
    import numpy as np
    from qderive.numeric.engines.hysteretic_wait import instant_wait_data
    from qderive.numeric.engines.vacation_finite_wait import Strategy
    from qderive.numeric.kernels.finite_wait import wait_customer_stable

    w = instant_wait_data(replace(HYPER, overload_factor=f))
    s = np.array([0.1 + 0.5j, 1 + 3j, 0.3 + 10j, 2 + 40j, 1.5 + 0j])
    assert all(wait_customer_stable(d.lam, d.low, s).all() for d in w.parts(FLOAT64))
    a = w.transform_values(FLOAT64, s, "wait", Strategy.BATCHES)
    b = w.transform_values(FLOAT64, s, "wait", Strategy.CUSTOMERS)
    assert np.all(np.abs(a - b) <= 1e-13 * np.abs(a))
    ctx = mp_context(30)
    with ctx:
        z = np.array([mpmath.mpc(complex(x)) for x in s], dtype=object)
        a = w.transform_values(ctx, z, "wait", Strategy.BATCHES)
        b = w.transform_values(ctx, z, "wait", Strategy.CUSTOMERS, fast=False)
        assert all(abs(x - y) <= mpmath.mpf(10) ** -29 * abs(x) for x, y in zip(a, b))
