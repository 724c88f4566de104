"""M2|M|1|R with hysteretic input-rate control and priority to flow 1 (seed 002) against independent computations.

Oracle: :mod:`qderive.numeric.oracles.two_flow` rebuilds the chain from the model's rules with
a different state, ``(mode, waiting flow-1 tags, waiting flow-2 tags, (flow, tag) in service)``,
by search, and computes the measures by definition: loss as ``1 - admitted / offered``
(harmless at 50 digits; the engine sums positive terms), throughput as the departure flow,
mean sojourns as tagged-customer first passages (not Little), the cycle times as first passages
from the stationary entry laws. Second oracle: with mu_1 = mu_2 the (mode, n) marginal is the
one-flow chain of ``docs/theory/other-models.md`` B with the summed rates (built here separately).
Third: a hand computation (E tau_0 = 9 for a symmetric walk).

Tolerances: 1e-45 relative at 50 digits (subtraction-free eliminations on both sides, plus the
oracle's one subtraction in the loss, harmless at 60 working digits); 1e-10 relative in float64
at L, H, R = 3, 7, 10.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest
from conftest import cli
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.two_flow_hysteretic import (
    exact_stationary,
    hysteretic_space,
    solve,
)
from qderive.numeric.oracles.two_flow import (
    hysteretic_chain,
    hysteretic_measures,
    one_flow_hysteretic_chain,
)
from qderive.symbolic.errors import BudgetError, ParameterError
from qderive.symbolic.models.two_flow import TwoFlowHystereticModel

KEYS = ("p_mode0", "p_mode1", "p_mode2", "loss_flow1", "loss_flow2", "throughput_flow1", "throughput_flow2",
        "mean_number_flow1", "mean_number_flow2", "mean_sojourn_flow1", "mean_sojourn_flow2",
        "mean_normal_time", "mean_return_time", "mean_cycle_time")


def make(rates, mus, L, H, R):
    (a1, a2), (b1, b2), (c1, c2) = rates
    return TwoFlowHystereticModel(a1, a2, b1, b2, L, H, R, service_rates=mus, lambda1_discard=c1, lambda2_discard=c2)


def assert_close(got, ref, rel, keys=KEYS):
    for k in keys:
        assert abs(mpmath.mpf(got[k]) - ref[k]) <= rel * abs(ref[k]), (k, got[k], ref[k])


MODELS = [
    (((F(3, 5), F(2, 5)), (F(3, 10), F(1, 5)), (0, 0)), (1, 1), 2, 4, 6),  # seed 002: one mu, discard 0
    (((F(3, 2), 1), (F(1, 2), F(1, 2)), (F(1, 4), 0)), (1, 2), 3, 6, 9),  # unequal mu, discard flow 1 only
    (((2, F(1, 3)), (1, F(1, 3)), (F(1, 2), F(1, 5))), (F(3, 2), F(3, 2)), 1, 2, 3),  # smallest thresholds
]


@pytest.mark.parametrize("spec", MODELS)
def test_every_measure_at_50_digits(spec):
    model = make(*spec)
    ref = hysteretic_measures(model, mp_context(60))
    got = model.evaluate(50)
    assert got.states == ref["states"]
    with mpmath.workdps(60):
        assert_close(got.as_dict(), ref, mpmath.mpf(10) ** -45)


def test_float64_at_3_7_10():
    model = make(((F(3, 5), F(1, 2)), (F(3, 10), F(1, 4)), (F(1, 10), 0)), (1, F(4, 5)), 3, 7, 10)
    ref = hysteretic_measures(model, FLOAT64)
    got = model.evaluate()
    assert got.confirmed_digits is None
    assert_close(got.as_dict(), ref, 1e-10)


def test_exact_law_by_the_one_gth_in_rationals():
    model = make(*MODELS[2])
    exact = exact_stationary(model)
    assert sum(exact) == 1 and all(isinstance(p, F) for p in exact)
    chain = hysteretic_chain(model)

    def key(s):  # oracle state -> (s, i, j, k)
        mode, w1, w2, srv = s
        return (mode, len(w1) + (srv is not None and srv[0] == 1), len(w2) + (srv is not None and srv[0] == 2),
                0 if srv is None else srv[0])

    ref = {key(s): p for s, p in zip(chain.states, chain.stationary_exact())}
    assert [ref[s] for s in hysteretic_space(model).states] == exact


def test_equal_service_lumps_to_the_one_flow_hysteretic_chain():
    rates, mus, L, H, R = MODELS[0]
    lumped = one_flow_hysteretic_chain([F(a) + F(b) for a, b in rates], mus[0], L, H, R)
    ctx = mp_context(60)
    with ctx:
        pi = lumped.stationary(ctx)
        got = make(*MODELS[0]).evaluate(50)
        for m in range(3):
            ref = mpmath.fsum(p for p, st in zip(pi, lumped.states) if st[0] == m)
            assert abs(mpmath.mpf(got[f"p_mode{m}"]) - ref) <= mpmath.mpf(10) ** -45 * ref


def test_hand_computed_normal_time():
    # Lambda_0 = mu = 1: the count in normal mode is a symmetric walk reflected at 0; climbing k -> k + 1 takes
    # (k + 1) / Lambda_0 on average, so from the entry L - 1 = 1 to H = 4: 2 + 3 + 4 = 9
    got = make(*MODELS[0]).evaluate(30)
    assert abs(mpmath.mpf(got.mean_normal_time) - 9) < mpmath.mpf(10) ** -28


def test_renewal_and_priority():
    ctx = mp_context(60)
    with ctx:
        sol = solve(make(*MODELS[1]), ctx)
        nu = sol.switch_rate()
        assert abs(sol.mean_cycle_time() * nu - 1) < mpmath.mpf(10) ** -55
        ratio = sol.mean_return_time() * nu / (sol.mode_probability(1) + sol.mode_probability(2))
        assert abs(ratio - 1) < mpmath.mpf(10) ** -55
        for c in (1, 2):  # throughput = admitted rate
            assert abs(sol.throughput(c) / sol.admitted_rate(c) - 1) < mpmath.mpf(10) ** -55
    # relative priority: with identical flows (same rates and service) flow 1 waits less; losses depend on n only
    g = make(((1, 1), (F(1, 2), F(1, 2)), (0, 0)), (F(5, 2), F(5, 2)), 2, 4, 7).evaluate()
    assert g.mean_sojourn_flow1 < g.mean_sojourn_flow2
    assert g.loss_flow1 == pytest.approx(g.loss_flow2, rel=1e-13)


def test_unreachable_discard_mode_is_an_exact_zero():
    # overload rates 0: the count never reaches R in overload, mode 2 does not exist (p_mode2 = 0, no escalation)
    rec = make(((F(3, 5), F(2, 5)), (0, 0), (0, 0)), (1, 1), 2, 4, 6).evaluate()
    assert rec.p_mode2 == 0 and isinstance(rec.p_mode2, int) and rec.confirmed_digits is None


def test_bad_parameters_are_refused():
    ok = ((1, 1), (F(1, 2), F(1, 2)), (0, 0))
    with pytest.raises(ParameterError, match="R must exceed H"):
        make(ok, 1, 1, 3, 3)
    with pytest.raises(ParameterError, match="lambda1_overload = 2: must be <= the normal rate"):
        make(((1, 1), (2, 1), (0, 0)), 1, 1, 3, 5)
    with pytest.raises(ParameterError, match="lambda2_normal = 0: must be > 0"):
        make(((1, 0), (0, 0), (0, 0)), 1, 1, 3, 5)
    with pytest.raises(ParameterError, match="lambda2_discard"):
        make(((1, 1), (1, F(1, 2)), (0, 1)), 1, 1, 3, 5)
    with pytest.raises(ParameterError, match="service_rates = 0: must be > 0"):
        make(ok, (1, 0), 1, 3, 5)
    with pytest.raises(ParameterError, match="give one rate"):
        make(ok, (1, 2, 3), 1, 3, 5)
    with pytest.raises(BudgetError, match="--limit dense-states="):
        make(ok, 1, 2, 4, 60).evaluate()


def test_extreme_rates_escalate_instead_of_failing():
    # rates below and above the float64 range: recomputed with mpmath, values kept outside the double range
    rec = make(((F(1, 10**320), 1), (F(1, 10**320), F(1, 2)), (0, 0)), 10**300, 2, 4, 6).evaluate()
    assert any("recomputed with mpmath" in n for n in rec.notes)
    for key in ("p_mode0", "p_mode1", "p_mode2", "loss_flow1", "loss_flow2"):
        assert 0 <= rec[key] <= 1


def test_derivation_verifies():
    d = TwoFlowHystereticModel.example().derive()
    assert all(s.computed or s.check for s in d.steps)
    results = d.verify(20)
    assert all(r.passed for r in results), [r.as_dict() for r in results if not r.passed]
    assert "\\Lambda" in d.markdown()


# --------------------------------------------------------------------------- command line


def run_eval(*args):
    return cli(["eval", "two-flow-hysteretic", *args])


def test_cli_values():
    code, out, _ = run_eval("--rates-normal", "1.5,1", "--rates-overload", "0.5,0.5", "--rates-discard", "0.25,0",
                            "--service-rate", "1,2", "--thresholds", "3,6,9", "--json")
    assert code == 0
    payload = json.loads(out)
    assert set(KEYS) <= set(payload["measures"])
    assert_close(payload["measures"], hysteretic_measures(make(*MODELS[1]), FLOAT64), 1e-11)


def test_cli_digits():
    code, out, _ = run_eval("--rates-normal", "0.6,0.4", "--rates-overload", "0.3,0.2", "--service-rate", "1",
                            "--thresholds", "2,4,6", "--digits", "40", "--json")
    assert code == 0
    measures = json.loads(out)["measures"]
    ref = hysteretic_measures(make(*MODELS[0]), mp_context(50))
    with mpmath.workdps(50):
        assert_close(measures, ref, mpmath.mpf(10) ** -38)


@pytest.mark.parametrize("args, message", [
    (["--rates-overload", "0.7,0.2", "--service-rate", "1", "--thresholds", "2,4,6"], "--rates-overload L1 = 0.7"),
    (["--rates-overload", "0.3,0.2", "--service-rate", "1", "--thresholds", "2,6,6"], "--thresholds = 6"),
    (["--rates-overload", "0.3", "--service-rate", "1", "--thresholds", "2,4,6"], "--rates-overload"),
    (["--rates-overload", "0.3,0.2", "--service-rate", "1,2,3", "--thresholds", "2,4,6"], "--service-rate"),
    (["--rates-overload", "0.3,0.2", "--service-rate", "0", "--thresholds", "2,4,6"], "--service-rate = 0"),
    (["--rates-overload", "0.3,0.2", "--thresholds", "2,4,6"], "--service-rate"),  # missing option
    (["--rates-overload", "0.3,0.2", "--service-rate", "1", "--thresholds", "2,4,60"], "--limit dense-states"),
])
def test_cli_bad_input_exits_2(args, message):
    code, out, err = run_eval("--rates-normal", "0.6,0.4", *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert message in err, err
