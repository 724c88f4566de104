"""``qderive eval hysteretic --policy instant``: the mode follows the count at once (seed 002, abstract 2).

Checks, each against something computed another way:

* exponential service, single arrivals: the M|M|1 bi-level hysteresis (``mm1`` oracle: the CTMC of
  ``docs/theory/other-models.md`` B from the model's switching rules, no embedded chain) at 50 digits --
  the same semantics, so every measure must agree to 45 digits (the kernel runs at 50 digits, the
  oracle is an exact-rate GTH at 50 digits; 5 digits for the roundings of the sums);
* exponential service, geometric batches: the (count, mode) CTMC of the instantaneous policy built
  from its definition (``instant`` oracle; a batch jump from below H to R is one normal -> discard
  change), the mode-change rate as the stationary flow of mode-changing transitions; 25 digits at 30;
* the departure policy's new ``mean_time_between_mode_changes`` against the same flow in the
  process CTMC of the departure policy (``process`` oracle), 25 digits at 30;
* deterministic service with batches (no Markov chain exists): the simulator's instantaneous
  policy, every measure inside its 99 % interval (fixed seed);
* the command line: ``--policy instant`` and the error for ``--convention left``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli

from qderive.numeric.backend import mp_context
from qderive.numeric.engines.hysteretic import _instant_values
from qderive.numeric.oracles import hysteretic as O
from qderive.numeric.simulation.hysteretic import simulate
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws import Deterministic, Exponential
from qderive.symbolic.models.hysteretic import HystereticModel, MM1HystereticModel, Policy

KEYS = ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time",
        "loss_probability", "throughput")


def _instant(ctx, **kw):
    with ctx:
        return _instant_values(HystereticModel(policy=Policy.INSTANT, **kw), ctx)


def test_exponential_single_arrivals_equal_the_mm1_hysteresis_at_50_digits():
    lam0, lam1, mu, L, H, R = F(6, 5), F(3, 5), F(1), 2, 4, 6
    ctx = mp_context(50)
    got = _instant(ctx, service=Exponential(1 / mu), L=L, H=H, R=R, rate=lam0, overload_factor=lam1 / lam0)
    mm1 = MM1HystereticModel(lam0, lam1, mu, L, H, R)
    with ctx:
        ref = O.mm1(mm1, ctx)
        changes = ref.extra["mean_time_between_mode_changes"]
        tol = mpmath.mpf(10) ** -45
        for k in KEYS:
            assert abs(got[k] - ref.measures[k]) <= tol * abs(ref.measures[k]), k
        assert abs(got["mean_time_between_mode_changes"] - changes) <= tol * changes


@pytest.mark.parametrize("f", [F(1, 2), F(0)], ids=["throttle", "blocking"])
def test_exponential_batches_against_the_instant_ctmc(f):
    kw = dict(service=Exponential(F(1, 2)), batch=Geometric(F(3, 2)), L=2, H=4, R=7, rate=F(3, 4),
              overload_factor=f)
    ctx = mp_context(30)
    got = _instant(ctx, **kw)
    with ctx:
        ref = O.instant(HystereticModel(policy=Policy.INSTANT, **kw), ctx).measures
        for k, v in ref.items():
            assert abs(got[k] - v) <= mpmath.mpf(10) ** -25 * abs(v), k


def test_departure_policy_mode_changes_against_the_process_ctmc():
    model = HystereticModel(service=Exponential(F(1, 2)), batch=Geometric(F(3, 2)), L=2, H=4, R=7, rate=F(3, 4))
    ctx = mp_context(30)
    got = model.evaluate(20).as_dict()["mean_time_between_mode_changes"]
    with ctx:
        ref = O.process(model, ctx).measures["mean_time_between_mode_changes"]
        assert abs(mpmath.mpf(got) - ref) <= mpmath.mpf(10) ** -18 * ref


def test_deterministic_batches_against_the_simulated_instant_policy():
    model = HystereticModel(service=Deterministic(F(1, 100)), batch=Geometric(2), L=4, H=8, R=12, rate=60,
                            overload_factor=F(1, 2), policy=Policy.INSTANT)
    got = model.evaluate().as_dict()
    sim = simulate(model, customers=12_000, replications=6, seed=11, quiet=True)
    for k, v in got.items():
        lo, hi = sim.measures[k].interval(0.99)
        assert lo <= v <= hi, (k, v, lo, hi)
    # the policies differ (else the test above proves nothing about the policy)
    dep = replace(model, policy=Policy.DEPARTURE).evaluate().as_dict()
    assert abs(dep["p_discard"] / got["p_discard"] - 1) > 0.02


def test_cli():
    args = ["eval", "hysteretic", "--service", "det:mean=0.01", "--batch", "geometric:mean=2", "--rate", "60",
            "--thresholds", "4,8,12"]
    code, out, _ = cli(args + ["--policy", "instant", "--json"])
    assert code == 0
    out = json.loads(out)
    assert out["parameters"]["policy"] == "instant"
    assert out["measures"]["mean_time_between_mode_changes"] > 0
    code, _, err = cli(args + ["--policy", "instant", "--convention", "left"])
    assert code == 2 and "--convention" in err and "policy departure" in err


def test_complete_blocking_with_single_arrivals_never_discards():
    """f = 0 and single arrivals: the count cannot pass H in overload, the discard mode never occurs -- an exact 0
    (as in the instant-policy CTMC, whose state space has no discard state), not an underflow with a note."""
    model = HystereticModel(service=Exponential(F(1, 2)), L=1, H=2, R=3, rate=F(1, 3), overload_factor=0,
                            policy=Policy.INSTANT)
    r = model.evaluate()
    assert r.p_discard == 0 and not r.notes
    ctx = mp_context(30)
    with ctx:
        ref = O.instant(model, ctx)
    assert all(st[1] != 2 for st in ref.states)
    assert abs(r.mean_cycle_time / float(ref.measures["mean_cycle_time"]) - 1) < 1e-13
