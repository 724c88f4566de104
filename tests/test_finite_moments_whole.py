"""The finite room's wait moments under whole admission with levels that no batch fits, and the note of a float64
moment escalation (issue 30, items 2 and 4).

Under whole admission a level n with P(X <= r - n) = 0 keeps its mass for ever (no batch fits), so the level rows
w L^K never vanish and the moments summed the count sequences to negligibility (a lognormal service: refused by
``count-work``). Nobody is admitted at such a level (A_n = 0), so the moments' rows now drop its mass
(:func:`qderive.numeric.kernels.finite_wait.wait_keep`) and stop where the others vanish or are negligible. Checked
against the summation to negligibility (a hyperexponential service whose count sequences are cheap closed forms) in
float64 and at 30 digits, and against a seeded simulation for the lognormal service.

Where float64 goes to mpmath the output now says so (the precision policy): the moments (a rounding bound above
1e-10), the SIP routes' own copy tails, the collapse onset's curve and the Erlang-B load search outside the double
range; each case with a note, and a case that stays in float64 without one.
"""

import math
import time
from fractions import Fraction as F

import mpmath
import pytest

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import vacation_finite_wait as FW
from qderive.numeric.simulation import vacation as SV


def _summed_to_negligibility(model, k, ctx):
    """E W^1..k by the previous summation: count sequences until every residual moment is negligible (the
    transform's data: the rows keep the mass of the levels that no batch fits), the remainders extrapolated
    geometrically (no totals)."""
    data = FW.build_data(model, ctx, k)
    data.btotals = data.vtotals = None
    with ctx:
        N = FW.admission_series(model, data, k)
        return [N[p] / data.N0 * math.factorial(p) for p in range(1, k + 1)]


#: a hyperexponential service with a slow branch (1 % of services with mean 1 at lambda = 12): the summation to
#: negligibility needs ~520 terms of cheap closed forms, while the rows of the moments stop after a few batches
SLOW = qd.HyperExponential((F(99, 100), F(1, 100)), (F(1, 100), F(1)))


def _model(batch, r, policy=qd.VacationPolicy.MULTIPLE):
    return qd.FiniteVacationQueue(F(12), batch, SLOW, qd.Exponential(F(1, 20)), r, qd.Admission.WHOLE, policy)


BATCHES = {
    "constant 5": qd.Constant(5),  # levels r - 4 .. r - 1 admit nobody; every other level leaves with each batch
    "sizes 3, 4": qd.FinitePMF((F(0), F(0), F(1, 2), F(1, 2))),  # level r - 3 keeps half its mass; r - 2, r - 1 all
}


@pytest.mark.parametrize("name", sorted(BATCHES))
@pytest.mark.parametrize("r", [7, 10, 27])
@pytest.mark.parametrize("policy", [qd.VacationPolicy.MULTIPLE, qd.VacationPolicy.SINGLE])
def test_float64_moments_equal_the_summation_to_negligibility(name, r, policy):
    model = _model(BATCHES[name], r, policy)
    law = FW.FiniteWait(model)
    got = law.moment_values("wait")(4, None)
    rows = len(law.moment_data(FLOAT64, 4).btail)
    assert rows < 80 < len(law.data(FLOAT64, 4).btail)  # a few batches, not ~520 terms
    if name == "constant 5":
        assert rows <= -(-r // 5) + 1  # every row vanishes once each batch of 5 has met a full room
    want = _summed_to_negligibility(model, 4, FLOAT64)
    # float64: sums of positive terms on both sides but the remainders' subtraction, whose bound (remainder_bound)
    # is below 1e-13 here; measured 2.6e-15: 1e-12
    for x, y in zip(got, want):
        assert abs(x - y) <= 1e-12 * y


def test_a_geometric_batch_is_unchanged():
    # no level is full (P(X = 1) > 0): the rows decay geometrically and are cut where negligible, as before
    model = _model(qd.Geometric(F(3, 2)), 10)
    law = FW.FiniteWait(model)
    got = law.moment_values("wait")(4, None)
    want = _summed_to_negligibility(model, 4, FLOAT64)
    for x, y in zip(got, want):
        assert abs(x - y) <= 1e-12 * y


@pytest.mark.slow  # 1.5 s a case; the loop keeps the same comparison in float64 (the test above)
@pytest.mark.parametrize("name", sorted(BATCHES))
def test_30_digit_moments_equal_the_summation_to_negligibility(name):
    model = _model(BATCHES[name], 7, qd.VacationPolicy.SINGLE)
    got = FW.FiniteWait(model).moment_values("wait")(4, 30)
    ctx = mp_context(40)
    want = _summed_to_negligibility(model, 4, ctx)
    # 30 digits asked: measured 5e-41 (the data carry 40 + guard digits); 1e-25 leaves 5 digits of margin
    with ctx:
        for x, y in zip(got, want):
            assert abs(x - y) <= mpmath.mpf(10) ** -25 * y


def test_the_dropped_levels_admit_nobody():
    # the rows on the levels where a batch fits are the level process's own (the full levels lie above them)
    from qderive.numeric.kernels import finite_wait as K

    model = _model(BATCHES["sizes 3, 4"], 10)
    kept, dropped = FW.build_data(model, FLOAT64, 2), FW.build_data(model, FLOAT64, 2, rows=True)
    fits = [n for n in range(10) if n <= 10 - 3]
    top = dropped.Ws.shape[0]
    assert abs(kept.Ws[:top][:, fits] - dropped.Ws[:, fits]).max() <= 1e-15 * abs(kept.Ws).max()
    keep = K.wait_keep(FLOAT64, kept.pmf, kept.tail, 10, True, drop_full=True)
    assert list(keep[8:]) == [0, 0] and keep[7] == 0.5 and list(keep[:7]) == [0] * 7


def _lognormal_model():
    # the laws (lognormal service mean 0.012, scv 2; exponential vacations mean 0.06), batches of 5, whole
    # admission, a small room at a high load (the room matters: loss about 0.1); levels 8..11 admit nobody
    return qd.FiniteVacationQueue.from_load(F(9, 10), qd.Constant(5), qd.LogNormal(F(12, 1000), F(2)),
                                            qd.Exponential(F(6, 100)), 12, qd.Admission.WHOLE)


@pytest.mark.slow
def test_the_lognormal_moments_within_a_seeded_simulations_intervals():
    # about 3 s of CPU: the finite engine's embedded law (whole admission, the lognormal's count sequences); the
    # moments' rows vanish after 3 batches (before: refused by count-work after 27 s of CPU for E W^4 at r = 10)
    model = _lognormal_model()
    law = FW.FiniteWait(model)
    start = time.process_time()
    got = law.moment_values("wait")(3, None)
    assert time.process_time() - start < 30
    assert len(law.moment_data(FLOAT64, 3).btail) <= 3
    # 10 replications of 200 000 customers (seed 1): 99.9 % Student-t intervals over the replications (half widths
    # about 0.7 %, 1.5 % and 4 % of the values)
    sim = SV.simulate(model, 200_000, 10, seed=1, quiet=True, wait_moments=3)
    for value, estimate in zip(got, sim["wait_moments"]):
        lo, hi = estimate.interval(0.999)
        assert lo <= value <= hi


# -- the note of a float64 moment escalation (issue 30 item 4, the precision policy) ------------------------------


def _escalating_model():
    # Poisson arrivals, exponential service and vacations (mean 0.1), r = 100, load 1/2: the remainders'
    # subtraction bound of E W^8 is 3.5e-9 of it (above 1e-10: mpmath), of E W^4 1.2e-11 (float64 kept)
    return qd.FiniteVacationQueue.from_load(F(1, 2), qd.Constant(1), qd.Exponential(F(1, 10)),
                                            qd.Exponential(F(1, 10)), 100)


def test_an_escalated_moment_says_so():
    model = _escalating_model()
    record = model.evaluate(wait_moments=8)
    notes = [n for n in record.notes if n.startswith("wait_moments:")]
    assert len(notes) == 1
    assert "rounding bound of E W^8" in notes[0] and "above 1e-10" in notes[0]
    assert "recomputed with mpmath to 16 digits" in notes[0]
    # the values are the 16-digit ones rounded: against a 30-digit computation (float64 rounding: 2e-16)
    got = record.as_dict()["wait_moments"]
    want = FW.FiniteWait(model).moment_values("wait")(8, 30)
    for x, y in zip(got, want):
        assert abs(x - float(y)) <= 4e-16 * float(y)


def test_a_moment_kept_in_float64_has_no_note():
    model = _escalating_model()
    record = model.evaluate(wait_moments=4, sojourn_moments=4)
    assert not [n for n in record.notes if "moments" in n]
    got = record.as_dict()["wait_moments"]
    want = FW.FiniteWait(model).moment_values("wait")(4, 30)
    for x, y in zip(got, want):  # the bound, 1.2e-11, holds (measured 3e-16)
        assert abs(x - float(y)) <= 1.3e-11 * float(y)


def test_the_cli_prints_the_note(capsys):
    from qderive.derivations.cli import main

    args = ["eval", "vacation-finite", "--batch", "const:n=1", "--service", "exp:mean=0.1", "--vacation",
            "exp:mean=0.1", "--load", "0.5", "--capacity", "100", "--wait-moments", "8", "--json"]
    assert main(args) in (0, None)
    import json

    out = json.loads(capsys.readouterr().out)
    assert any(n.startswith("wait_moments:") and "recomputed with mpmath" in n for n in out["notes"])


def test_the_sip_routes_copy_tails_say_when_float64_cancels():
    # a law whose own float64 sum fails its rounding bound at one point (None) is redone at 15 digits: the route's
    # tails now carry the response's note (before: silent); a law that does not fail carries none
    from qderive.numeric.engines.sip import routes
    from qderive.numeric.response import ResponseLaw

    def tails(ts, digits):  # P(T > t) = e^{-t}: float64 declines t >= 3 (as a cancelling sum would)
        if digits is None:
            return [math.exp(-t) if t < 3 else None for t in ts], None
        with mpmath.workdps(digits + 5):
            return [mpmath.exp(-mpmath.mpf(t.numerator) / t.denominator) for t in ts], digits + 5

    law = ResponseLaw("sojourn", None, None, None, tails=tails)
    values, notes = routes._own_tails(law, [F(1), F(5)], None, 1.0)
    assert abs(values[1] - math.exp(-5)) <= 1e-16 * math.exp(-5)
    assert len(notes) == 1 and notes[0].startswith("the copy sojourn tails P(R_copy > t): the float64 sum cancels")
    assert "recomputed with mpmath to 15 digits" in notes[0]
    assert routes._own_tails(law, [F(1), F(2)], None, 1.0)[1] == []


def test_the_collapse_onset_says_which_float64_points_went_to_mpmath(monkeypatch):
    # the onset's curve h(lambda) = lambda / E[copies] recomputes a rate at 15 digits where the float64 inversion
    # fails (Trouble); that was silent. Forced here at the grid point 7.3747 (the M/M/1 of test_sip_notes, whose
    # upper saddle-node lies at 7.46): a note naming the points, and the upper end still within the float64 note's
    # 1e-9 of the 30-digit saddle-node (an independent computation, test_sip_onset)
    from test_sip_onset import _mm1_saddle_node

    from qderive.numeric.engines.base import Trouble
    from qderive.numeric.engines.sip import onset
    from qderive.symbolic.laws import Exponential
    from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

    real = onset.FixedPointMap.mean_copies

    def failing(self, lam, digits, *args, **kw):
        if digits is None and 7.37 <= float(lam) <= 7.38:  # the grid point 7.3747
            raise Trouble("the float64 inversion of the sojourn transform overflowed")
        return real(self, lam, digits, *args, **kw)

    monkeypatch.setattr(onset.FixedPointMap, "mean_copies", failing)
    forced = onset.collapse_onset(Sip(rate=1, service=Exponential(F(1, 10)), scan_points=40))
    notes = [n for n in forced["notes"] if "recomputed with mpmath to 15 digits" in n]
    assert len(notes) == 1 and notes[0].startswith("collapse onset: h(lambda) = lambda / E[copies]: the float64")
    assert "offered rate(s) from 7" in notes[0]
    a, _ = _mm1_saddle_node(10, (0.57, 0.75))
    assert abs(forced["upper"] - a) / a < 1e-9


def test_the_erlang_b_size_says_when_float64_leaves_its_range(capsys):
    # the load for B(1, rho) = 1e-320 is rho = t / (1 - t) (B(1, rho) = rho / (1 + rho)), below the double range:
    # the float64 search goes to mpmath and the load is a decimal string; the output now says so, as eval does
    import json

    from qderive.derivations.cli import main

    assert main(["size", "erlang-b", "--servers", "1", "--target-blocking", "1e-320", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    t = F(1, 10**320)
    assert abs(F(out["load"]) - t / (1 - t)) <= F(1, 10**16) * t
    assert len(out["notes"]) == 1 and out["notes"][0].startswith("load, blocking_probability, carried_load lie "
                                                                 "outside the float64 range")
    assert main(["size", "erlang-b", "--servers", "10", "--target-blocking", "0.01", "--json"]) in (0, None)
    assert "notes" not in json.loads(capsys.readouterr().out)
