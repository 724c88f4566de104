"""sip-retransmission with a server on vacation (issue 17, "the server of any qderive model": the vacation queue).

References computed here, sharing no code with the engine:

* M/M/1 with multiple exponential vacations (rate theta): the sojourn decomposes (Fuhrmann-Cooper) into the
  M/M/1 sojourn Exp(mu - lambda) plus the residual vacation, Exp(theta) (memoryless), independent, so for
  a = mu - lambda != theta

      P(R > t) = (theta e^{-a t} - a e^{-theta t}) / (theta - a),

  and the fixed point lambda = lambda_0 (1 + sum_{k >= 1} P_lambda(R > tau_k)) (no refusal: a later copy is sent
  iff the first one has not completed) is solved by mpmath's findroot on that closed-form map;
* the transaction-level simulator (per-transaction timers, real vacations) with Timer B = T1: one copy per
  transaction, so the fixed point is exact and the analytic goodput and timeout probability must lie within
  the simulator's 99 % intervals;
* the simulator's own paths: ignore with (L, H) = (H - 1, H) and the bare capacity K = H give the same sample
  path copy by copy (the mode is invisible also with vacations: the argument of the engine's ``_finite_control``).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from qderive.derivations.cli import main
from qderive.numeric.simulation.sip import estimates, replication, setup_of
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Deterministic, Erlang, Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip


def _fc_tail(lam, mu, theta, t):
    """P(R > t), R = Exp(mu - lam) + Exp(theta) independent (Fuhrmann-Cooper for M/M/1, multiple Exp vacations)."""
    a = mu - lam
    return (theta * mpmath.exp(-a * t) - a * mpmath.exp(-theta * t)) / (theta - a)


def test_fixed_point_against_fuhrmann_cooper_at_30_digits():
    """M/M/1 (mu = 10) with multiple Exp(theta = 4) vacations, lambda_0 = 3, Timer B = 2 s (copies at 0, 0.5, 1.5 s;
    one fixed point, as 3 lambda_0 E B < 1): offered_rate and mean_copies at --digits 30 against the root of the closed-form map at 50 digits;
    tolerance 1e-28 relative (two digits below the 30 asked: the engine refines at 35)."""
    lam0, mu, theta = 3, 10, 4
    m = Sip(rate=lam0, service=Exponential(F(1, mu)), vacation=Exponential(F(1, theta)), timeout=2, scan_points=8)
    taus = [mpmath.mpf(t.numerator) / t.denominator for t in m.copy_times()]
    assert len(taus) == 3
    r = m.evaluate(30)
    with mpmath.workdps(50):
        def g(lam):
            return lam0 * (1 + mpmath.fsum(_fc_tail(lam, mu, theta, t) for t in taus[1:]))

        x = mpmath.mpf(lam0)
        for _ in range(20):  # g increases: the iteration from lambda_0 climbs to the smallest fixed point
            x = g(x)
        root = mpmath.findroot(lambda lam: g(lam) - lam, x)
        assert 3.8 < root < 4.1  # copies matter: about a quarter of the copies are retransmissions
        got = mpmath.mpf(r.offered_rate)
        assert abs(got - root) / root < mpmath.mpf(10) ** -28, (got, root)
        assert abs(mpmath.mpf(r.mean_copies) - root / lam0) < mpmath.mpf(10) ** -28
        # the vacations are seen: without them (M/M/1) the fixed point is much lower
        plain = mpmath.findroot(lambda lam: lam0 * (1 + mpmath.fsum(mpmath.exp(-(mu - lam) * t) for t in taus[1:]))
                                - lam, lam0)
        assert root - plain > 0.3, plain


def _assert_within_99(est, refs):
    for key, ref in refs.items():
        lo, hi = est[key].interval(0.99)
        assert lo <= ref <= hi, (key, ref, est[key].value, (lo, hi))


@pytest.mark.parametrize("fields, seed", [
    ({}, 11),  # infinite room, multiple vacations
    ({"capacity": 3, "vacation_policy": "single"}, 12),  # M/G/1/K, K - 1 = 2 waiting places also during a vacation
    ({"control": "ignore", "thresholds": (2, 3)}, 13),  # L = H - 1: M/G/1/H with the vacations
])
def test_one_copy_per_transaction_against_the_simulator(fields, seed):
    """Timer B = T1 = 0.5 s: one copy per transaction, the fixed point is exact (offered rate lambda_0), so the
    analytic goodput, timeout probability and utilization must lie within the simulator's 99 % intervals
    (6 x 2000 s). Erlang-2 service of mean 0.1 s and Erlang-2 vacations of mean 0.2 s at lambda_0 = 7: the timeout
    binds (about a third of the transactions time out), so a wrong vacation or room would show."""
    m = Sip(rate=7, service=Erlang(2, F(1, 10)), vacation=Erlang(2, F(1, 5)), timeout=F(1, 2), **fields)
    r = m.evaluate()
    assert r.offered_rate == 7 and 0.25 < r.timeout_probability < 0.45
    est = estimates(m, horizon=2000, warmup=50, replications=6, seed=seed)
    assert est["mean_copies"].value == 1
    _assert_within_99(est, {"goodput": r.goodput, "timeout_probability": r.timeout_probability,
                            "utilization": r.utilization})


def test_the_mode_is_invisible_in_the_simulator_with_vacations():
    """ignore with (L, H) = (2, 3) and the capacity K = 3 without control refuse the same copies (the same path from
    the same seed, copy by copy), with retransmissions and multiple vacations: both (3, normal) and (3, overload)
    refuse, and N leaves 3 only to 2 (a departure or a vacation's end), where ignore is back to normal."""
    base = dict(rate=8, service=Exponential(F(1, 10)), vacation=Exponential(F(1, 5)), t1=F(1, 5), timeout=F(3, 2))
    paths = []
    for fields in ({"capacity": 3}, {"control": "ignore", "thresholds": (2, 3)}):
        trace = []
        row, _ = replication(np.random.default_rng(7), setup_of(Sip(**base, **fields)), 0.0, 300.0, trace=trace)
        paths.append((trace, row))
    assert paths[0] == paths[1]
    assert paths[0][1][9] > 100  # transactions with a refused copy: the room binds


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_goodput_against_fuhrmann_cooper(capsys):
    """``qderive eval sip-retransmission --vacation exp:mean=0.25 --timeout 0.5 --json``: one copy, so goodput =
    lambda_0 P(R <= 0.5) with the closed-form tail (float64; tolerance 1e-8, the Euler inversion's absolute error)."""
    code, out, _ = _cli(["eval", "sip-retransmission", "--rate", "4", "--service", "exp:mean=0.1", "--vacation",
                         "exp:mean=0.25", "--vacation-policy", "multiple", "--timeout", "0.5", "--json"], capsys)
    assert code == 0
    res = json.loads(out)
    assert res["parameters"]["vacation"] == "exp:mean=0.25" and res["parameters"]["vacation_policy"] == "multiple"
    tail = float(_fc_tail(4, 10, 4, mpmath.mpf("0.5")))
    assert abs(res["measures"]["goodput"] - 4 * (1 - tail)) < 1e-8
    assert abs(res["measures"]["timeout_probability"] - tail) < 1e-8


@pytest.mark.parametrize("argv, option", [
    (["--vacation-policy", "single"], "--vacation-policy"),
    (["--vacation", "exp:mean=0.1", "--capacity", "1"], "--vacation"),
    (["--vacation", "exp:mean=0.1", "--control", "503", "--thresholds", "0,5"], "--thresholds"),  # L = 0, multiple
    (["--vacation", "exp:mean=0.1", "--control", "ignore", "--thresholds", "0,1"], "--vacation"),
    (["--vacation", "exp:mean=0.1", "--duplicate-cost", "0.5", "--control", "ignore", "--thresholds", "0,5"],
     "--thresholds"),  # L = 0 with multiple vacations, also with c < 1 (c < 1 is computed otherwise:
    # tests/test_sip_mixture_routes.py)
    (["--vacation", "exp:mean=1e-300"], "--vacation"),  # outside 1e-6..100 E[B]
    (["--vacation", "det:mean=0.05"], "--vacation"),  # a kinked vacation law: no tails fast enough for the scan
])
def test_bad_vacation_input_names_the_option(argv, option, capsys):
    code, out, err = _cli(["eval", "sip-retransmission", "--rate", "5", "--service", "exp:mean=0.1"] + argv, capsys)
    assert code == 2 and option in err and len(err.strip().splitlines()) == 1, err


def test_constant_service_with_vacations_in_the_infinite_room_is_refused():
    m = Sip(rate=5, service=Deterministic(F(1, 10)), vacation=Exponential(F(1, 20)))
    with pytest.raises(ParameterError, match="service"):
        m.evaluate()


def test_simulator_refuses_a_vacation_without_a_waiting_place():
    from types import SimpleNamespace

    from qderive.numeric.simulation.sip import simulate_sip

    model = SimpleNamespace(rate=1, service=Exponential(1), method="invite", t1=0.5, t2=4, timeout=None, capacity=1,
                            control="none", thresholds=None, duplicate_cost=1, vacation=Exponential(1),
                            vacation_policy="multiple")
    with pytest.raises(ParameterError, match="capacity"):
        simulate_sip(model, horizon=10, warmup=0, replications=2, seed=1)


def test_a_kinked_law_with_vacations_is_refused_by_the_declaration():
    """The infinite room with vacations and a law with kinks: the engine's declaration (asked before any work)
    refuses it, naming the law at fault; before, the refusal came after the response laws were built (9 s)."""
    from qderive.numeric.engines.sip import supports

    refusal = supports(Sip(rate=5, service=Exponential(F(1, 10)), vacation=Deterministic(F(1, 20))))
    assert refusal is not None and refusal.option == "--vacation" and "no smooth density" in refusal.reason
    refusal = supports(Sip(rate=5, service=Deterministic(F(1, 10)), vacation=Exponential(F(1, 20))))
    assert refusal is not None and refusal.option == "--service"
    assert supports(Sip(rate=5, service=Exponential(F(1, 10)), vacation=Exponential(F(1, 20)))) is None
