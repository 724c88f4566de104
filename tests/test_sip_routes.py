"""The SIP engine's routes and the two declarations of what the engine and the simulator compute.

The route of each server part is chosen in one place (``select_route``) from the routes' own declarations; these
tests pin the choice for one model of every region (the sub-model each route computes is checked against its
oracle in the other test_sip_*.py files) and check that a refusal names the option before any server is built.
"""

from __future__ import annotations

import time
from fractions import Fraction as F

import pytest

from qderive.numeric.engines.sip import ROUTES, routes as R, select_route, solve, supports
from qderive.numeric.simulation import sip as simulator
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, Uniform
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

EXP, ERL = Exponential(F(1, 10)), Erlang(2, F(1, 10))
CTL = dict(control="ignore", thresholds=(2, 5))


@pytest.mark.parametrize("kw, mixture, route", [
    (dict(control="threshold", thresholds=(2, 5), rate_non_invite=3), True, R.ThresholdRoute),
    (dict(rate_non_invite=3, discipline="priority"), True, R.PriorityQueue),
    (dict(rate_non_invite=3, discipline="priority", **CTL), True, R.PriorityChain),
    (dict(), False, R.InfiniteRoom),
    (dict(capacity=4), False, R.FiniteRoom),
    (dict(service=ERL, duplicate_cost=F(1, 2)), True, R.MixtureInfinite),
    (dict(service=ERL, duplicate_cost=F(1, 2), capacity=4), True, R.MixtureFinite),
    (dict(service=ERL, duplicate_cost=F(1, 2), control="503", thresholds=(3, 4), vacation=EXP), True,
     R.MixtureFinite),
    (dict(**CTL), False, R.ExponentialChain),
    (dict(duplicate_cost=F(1, 2), **CTL), True, R.ExponentialChain),
    (dict(service=ERL, control="ignore", thresholds=(4, 5)), False, R.FiniteControl),
    (dict(service=ERL, **CTL), False, R.GeneralControl),
    (dict(control="ignore", thresholds=(2, 5), vacation=EXP), False, R.GeneralControl),
    (dict(service=ERL, duplicate_cost=F(1, 2), **CTL), True, R.MixtureControl),
    (dict(rate_non_invite=3, service=ERL, service_non_invite=EXP, control="ignore", thresholds=(4, 5)), True,
     R.MixtureControl),
])
def test_one_route_per_region(kw, mixture, route):
    """The selection takes the first route that covers the server part and computes it; every route is some
    region's."""
    m = Sip(rate=5, service=kw.pop("service", EXP), timeout=F(2), **kw)
    assert select_route(m.server, mixture) is route
    assert route.supports(m.server, mixture) is None and supports(m) is None


def test_every_route_is_selected_somewhere():
    """The table above names every route of ROUTES (a route no region reaches would be dead code)."""
    named = {R.ThresholdRoute, R.PriorityQueue, R.PriorityChain, R.InfiniteRoom, R.FiniteRoom, R.MixtureInfinite,
             R.MixtureFinite, R.ExponentialChain, R.FiniteControl, R.GeneralControl, R.MixtureControl}
    assert named == set(ROUTES)


@pytest.mark.parametrize("kw, option, words", [
    (dict(control="threshold", thresholds=(2, 5), rate_non_invite=3, service=ERL), "--service", "exponential"),
    (dict(rate_non_invite=3, discipline="priority", capacity=6), "--discipline", "--capacity"),
    (dict(rate_non_invite=3, discipline="priority", service=ERL, **CTL), "--service", "exponential"),
    (dict(duplicate_cost=F(1, 2), vacation=Deterministic(F(1, 20))), "--vacation", "smooth"),
    (dict(vacation=Exponential(F(1, 10**8))), "--vacation", "1e-6"),
    (dict(rate=F(10) ** 301), "--rate", "1e300"),
])
def test_refusals_name_the_option_before_any_work(kw, option, words):
    """Each refusal is a declaration read from the options (no server is built: well under a second), names the
    option, and is what solve raises; the simulator's own declaration is separate (it runs several of these)."""
    kw.setdefault("rate", 5)
    m = Sip(service=kw.pop("service", EXP), timeout=F(2), **kw)
    started = time.process_time()  # CPU: a loaded machine does not move it
    refusal = supports(m)
    assert time.process_time() - started < 1.0  # building a server would take seconds
    assert refusal is not None and refusal.option == option and words in refusal.reason, refusal
    with pytest.raises(ParameterError) as err:
        solve(m)
    assert err.value.name == option


def test_the_simulator_declares_its_own_region():
    """The simulator refuses what it does not simulate (vacations under seed 001's threshold server), naming the
    option, and runs what the engine refuses (a constant service with a duplicate cost below 1)."""
    m = Sip(rate=5, rate_non_invite=3, service=EXP, control="threshold", thresholds=(2, 5), vacation=EXP)
    refusal = simulator.supports(m)
    assert refusal is not None and refusal.option == "vacation"
    assert supports(m).option == "--vacation"
    constant = Sip(rate=5, service=Deterministic(F(1, 10)), duplicate_cost=F(1, 2), timeout=F(2))
    assert simulator.supports(constant) is None and supports(constant).option == "--duplicate-cost"


def test_a_sign_change_across_a_jump_is_not_listed_as_a_fixed_point(monkeypatch):
    """Issue 30 item 4: a root of the scan whose relative residual |lambda - lambda_0 E[copies]| / lambda exceeds the
    tolerance (a jump of the map, not a crossing) is dropped with a note; the genuine roots stay."""
    from qderive.numeric.engines.sip import fixed_point as FP

    m = Sip(rate=9, service=EXP, t1=F(100), timeout=F(150))
    honest, _ = FP.solve(m)
    assert len(honest) == 3 and all(float(v["residual"]) <= 1e-6 for v in honest)  # the bistable M/M/1 case
    real = FP._measures
    calls = []

    def jumpy(fmap, x, digits):  # the middle root made to look like a jump of the map
        values, notes = real(fmap, x, digits)
        calls.append(x)
        if len(calls) == 2:
            values = dict(values, residual=0.334)
        return values, notes

    monkeypatch.setattr(FP, "_measures", jumpy)
    listed, notes = FP.solve(m)
    assert [v["offered_rate"] for v in listed] == [honest[0]["offered_rate"], honest[2]["offered_rate"]]
    assert any("not listed as fixed points" in n and "1e-06" in n for n in notes), notes


@pytest.mark.parametrize("service", [Uniform(F(1, 20), F(3, 20))])
def test_a_service_with_bracketed_tails_only_is_refused_at_once(service):
    """The finite room gives a uniform service certified brackets only (issue 28; a lognormal one is inverted since
    branch lg28, checked against the simulator in tests/test_finite_lognormal_inversion.py); the fixed point's
    scan would need hundreds of them at seconds each (169 s for one perturbation pass, a lognormal past 200 s), so the
    controlled routes refuse such a law, naming --service, as soon as the response law is built (before: at once by
    the finite room's own refusal). A constant service keeps its exact lattice sums (the other tests)."""
    m = Sip(rate=9, service=service, timeout=F(1, 2), control="ignore", thresholds=(4, 5))
    started = time.process_time()
    with pytest.raises(ParameterError) as err:
        solve(m)
    assert time.process_time() - started < 5.0  # the brackets of the scan took 24 s (uniform) and > 200 s (lognormal)
    assert err.value.name == "--service" and "certified bounds" in str(err.value)
