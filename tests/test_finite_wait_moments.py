"""The finite room's wait moments from the rows that do not vanish (issue 30, item 2).

Under partial admission the level rows w L^K vanish for K >= r, so the count sequences are needed over 0..r - 1
only, and the residual moments' remainders beyond come from the law's own moments, E binom(K', m) =
lambda^m E B^m / m! (:func:`qderive.numeric.kernels.finite_wait.wait_residual_moments`). Checked against the
summation to negligibility (long count sequences, a law whose sequences are cheap), Little's law on the embedded
chain, and a seeded simulation of the lognormal case.
"""

import math
import time
from fractions import Fraction as F

import mpmath
import pytest

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import vacation_finite_wait as FW
from qderive.numeric.response import ResponseLaw, noted_moments
from qderive.numeric.simulation import vacation as SV


def _summed_to_negligibility(model, k, ctx):
    """E W^1..k by the previous summation: count sequences until every residual moment is negligible (the
    transform's data), the remainders extrapolated geometrically (no totals)."""
    data = FW.build_data(model, ctx, k)
    data.btotals = data.vtotals = None
    with ctx:
        N = FW.admission_series(model, data, k)
        return [N[p] / data.N0 * math.factorial(p) for p in range(1, k + 1)]


def _slow_service_model(admission=qd.Admission.PARTIAL):
    # a hyperexponential service with a slow branch (1 % of services with mean 1 at lambda = 12): the batch counts
    # decay like (12/13)^K, so the summation to negligibility needs ~700 terms (cheap: closed forms), while the
    # rows vanish after r = 25 batches; the remainders there are far from negligible
    service = qd.HyperExponential((F(99, 100), F(1, 100)), (F(1, 100), F(1)))
    return qd.FiniteVacationQueue(F(12), qd.Geometric(F(3, 2)), service, qd.Exponential(F(1, 20)), 25, admission)


def test_the_rows_moments_equal_the_summation_to_negligibility():
    model = _slow_service_model()
    law = FW.FiniteWait(model)
    got = law.moment_values("wait")(4, None)
    data = law.moment_data(FLOAT64, 4)
    assert len(data.btail) == model.capacity  # cut at the rows: the totals decide the remainders
    assert data.btail2[-1] > 1e-6 * data.btail2[0]
    want = _summed_to_negligibility(model, 4, FLOAT64)
    assert len(law.data(FLOAT64, 4).btail) > 500
    # float64: both are sums of positive terms but the remainder subtraction, which loses at most
    # log10((r + 2) E binom(K', p) / M[p, 0]) ~ 3 digits here: 1e-12
    for x, y in zip(got, want):
        assert abs(x - y) <= 1e-12 * y
    # 30 digits: the two ways agree to the working precision (4 digits of margin)
    ctx = mp_context(40)
    got30 = law.moment_values("wait")(4, 30)
    want30 = _summed_to_negligibility(model, 4, ctx)
    with ctx:
        for x, y in zip(got30, want30):
            assert abs(x - y) <= mpmath.mpf(10) ** -26 * y


def test_whole_admission_stops_where_the_rows_are_negligible():
    model = _slow_service_model(qd.Admission.WHOLE)
    law = FW.FiniteWait(model)
    got = law.moment_values("wait")(3, None)
    data = law.moment_data(FLOAT64, 3)
    assert model.capacity < len(data.btail) < len(law.data(FLOAT64, 3).btail)
    want = _summed_to_negligibility(model, 3, FLOAT64)
    for x, y in zip(got, want):  # as above; the rows dropped are below eps/256 of the first
        assert abs(x - y) <= 1e-12 * y


def _lognormal_case(capacity, load):
    return qd.FiniteVacationQueue.from_load(load, qd.Geometric(4), qd.LogNormal(F(12, 1000), F(2)),
                                            qd.Exponential(F(6, 100)), capacity)


def test_the_issues_lognormal_case_needs_no_long_count_sequence(monkeypatch):
    # the issue's corner (r = 129, load 0.55): E W^4 was refused by count-work after 60 s of CPU; now the count
    # sequences run over 0..r - 1 only
    model = _lognormal_case(129, F(55, 100))
    lengths = []
    real = FW.sum_count_sequences

    def spy(count, n, ctx, order, spent=None):
        lengths.append(n)
        return real(count, n, ctx, order, spent)

    monkeypatch.setattr(FW, "sum_count_sequences", spy)
    start = time.process_time()
    result = model.evaluate(wait_moments=4, sojourn_moments=2)
    assert time.process_time() - start < 10  # about 0.7 s on a quiet machine
    assert lengths and max(lengths) <= model.capacity - 1
    out = result.as_dict()
    w, t = out["wait_moments"], out["sojourn_moments"]
    # E W: Little's law on the embedded chain (the finite engine's mean queue / admitted rate), another computation
    assert abs(w[0] - out["mean_wait"]) <= 1e-13 * w[0]
    # the sojourn adds the customer's own service B, independent of W: E T = E W + b1, E T^2 = E W^2 + 2 E W b1 + b2
    b1, b2 = F(12, 1000), F(12, 1000) ** 2 * 3
    assert abs(t[0] - (w[0] + b1)) <= 1e-14 * t[0]
    assert abs(t[1] - (w[1] + 2 * w[0] * b1 + b2)) <= 1e-14 * t[1]
    assert 0 < w[3] and w[1] ** 2 <= w[0] * w[2] and w[2] ** 2 <= w[1] * w[3]  # log-convex moments


@pytest.mark.slow
def test_the_lognormal_moments_within_a_seeded_simulations_intervals():
    # a small room at a high load (loss 0.11: the room matters), E W^1..3 against 10 replications of 200 000
    # customers (seed 1): 99.9 % Student-t intervals over the replications (half widths 0.5 %, 1 % and 4 %)
    model = _lognormal_case(12, F(9, 10))
    law = FW.FiniteWait(model)
    got = law.moment_values("wait")(3, None)
    assert len(law.moment_data(FLOAT64, 3).btail) == 12
    sim = SV.simulate(model, 200_000, 10, seed=1, quiet=True, wait_moments=3)
    for value, estimate in zip(got, sim["wait_moments"]):
        lo, hi = estimate.interval(0.999)
        assert lo <= value <= hi


def test_the_remainder_bound_holds_and_a_large_one_goes_to_mpmath(monkeypatch):
    model = _slow_service_model()
    law = FW.FiniteWait(model)
    data = law.moment_data(FLOAT64, 3)
    with FLOAT64:
        N = FW.admission_series(model, data, 3)
        bound = FW.remainder_bound(model, data, 3)
    exact = FW.admission_series(model, law.moment_data(mp_context(30), 3), 3)
    for p in range(4):  # the float64 series is within the bound of the 30-digit one (plus its own rounding, 1e-15)
        assert abs(N[p] - float(exact[p])) <= float(bound[p]) + 1e-15 * N[p]
    # a bound above 1e-10 relative: the float64 moments come from mpmath (16 digits) instead, with a note
    built = []
    real = FW.build_data

    def spy(model, ctx, *args, **kw):
        built.append(ctx.is_float64)
        return real(model, ctx, *args, **kw)

    monkeypatch.setattr(FW, "build_data", spy)
    monkeypatch.setattr(FW.K, "wait_remainder_error", lambda ctx, totals, top, lam, order: totals * 1e-3)
    wait = FW.FiniteWait(model)
    law = ResponseLaw("wait", wait.transform("wait"), wait.p_zero("wait"), wait.moment_values("wait"))
    got, _, notes = noted_moments(law, 3, None)
    assert built == [True, False]
    assert len(notes) == 1 and "rounding bound of E W^" in notes[0] and "recomputed with mpmath" in notes[0]
    want = _summed_to_negligibility(model, 3, FLOAT64)
    for x, y in zip(got, want):
        assert abs(x - y) <= 1e-12 * y
