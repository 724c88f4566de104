"""The last corners of the finite room (issue 30): the count work of a quadrature law refused before it is paid,
whole admission's room matrices closed with the absorbing rooms' exact remainder, and the float64 atom P(W = 0) that
escalates with a note.

Each comparison is with a computation made another way: the count work actually spent by the doubling lengths, the
summation of the room matrices until the count is negligible (the engine before the closure), the 30-digit
evaluation of the same model.
"""

from __future__ import annotations

import functools
import time
from fractions import Fraction as F

import mpmath
import pytest

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import vacation_finite_wait as FW
from qderive.numeric.kernels import finite_wait as KW
from qderive.numeric.kernels import vacation as V
from qderive.numeric.sequences import check_count_work, sum_count_sequences
from qderive.symbolic.errors import BudgetError
from qderive.symbolic.laws import LogNormal
from qderive.symbolic.limits import limits

# -- item 1: the count work of the summation to negligibility, bounded below before it is paid --------------------

LAW = LogNormal(F(12, 1000), 2)  # issue 28's service at load 0.55: the doubling stops at 4096 in float64 (1.5 s)
RATE = F(275, 24)


def _lengths():
    return [FW.COUNT_START << i for i in range((FW.COUNT_TERMS // FW.COUNT_START).bit_length() + 1)]


@functools.lru_cache(maxsize=1)
def _summation() -> dict:
    """The work spent by the summation to negligibility after each of its lengths (``sum_count_sequences`` counts it
    itself), once per session."""
    count = LAW.count_law(RATE)
    after = {}
    spent = [0, 1]

    def record(n):
        got = sum_count_sequences(count, n, FLOAT64, 1, spent)
        after[n] = spent[0]
        return got

    with FLOAT64:
        got = KW.wait_count_sequences(FLOAT64, record, 1, start=FW.COUNT_START, limit=FW.COUNT_TERMS)
    assert got is not None and len(got[0]) > 1024
    return after


def test_the_count_work_estimate_before_any_length_is_a_lower_bound():
    """The estimate before any length is made (the survival and stop-loss bounds of the stop, level 1's nodes) passes
    a limit of the work the summation really spends (9.3e6), and is not vacuous (measured 65 times below)."""
    count = LAW.count_law(RATE)
    total = max(_summation().values())
    with FLOAT64:
        with limits(count_work=total):
            check_count_work(count, FLOAT64, 1, _lengths(), FLOAT64.eps / 256, FW.COUNT_TERMS)
        with limits(count_work=total // 100), pytest.raises(BudgetError, match="before they are made"):
            check_count_work(count, FLOAT64, 1, _lengths(), FLOAT64.eps / 256, FW.COUNT_TERMS)


def test_a_length_beyond_the_limit_is_refused_before_it_is_made(monkeypatch):
    """After each length the work of those still to come (until the survival and stop-loss bounds allow a stop) is
    estimated from the deepest level the shorter ones needed: with a limit between the work spent up to 0..512 and
    up to 0..1024, the summation is refused before 0..1024 is made (here already after 0..64: the lengths to 1024
    add up beyond the limit; before, it was refused inside 0..1024, in its third level)."""
    after = _summation()
    made = []
    real = FW.sum_count_sequences

    def spy(count, n, ctx, order, spent=None):
        made.append(n)
        return real(count, n, ctx, order, spent)

    monkeypatch.setattr(FW, "sum_count_sequences", spy)
    with FLOAT64, limits(count_work=(after[512] + after[1024]) // 2), \
            pytest.raises(BudgetError, match="before they are made"):
        FW.count_data(LAW, RATE, FLOAT64, 1)
    assert max(made) < 1024


def test_a_summation_beyond_the_count_work_limit_is_refused_at_once():
    """The issue's corner: the transform's data at 62 digits of a lognormal service of scv 2 need its count tail below
    1e-66 (about 2 x 10^6 terms); before, refused by ``count-work`` after 72 s of CPU (its last length, 0..256); now
    at once, and the float64 data of the same law still answer."""
    model = qd.FiniteVacationQueue.from_load(F(55, 100), qd.Geometric(4), LogNormal(F(12, 1000), 2),
                                             qd.Exponential(F(6, 100)), 129)
    ctx = mp_context(62)
    started = time.process_time()
    with ctx, pytest.raises(BudgetError, match="before they are made"):
        FW.count_data(model.service, model.rate, ctx, 1)
    assert time.process_time() - started < 2.0


# -- item 2: whole admission's room matrices, closed with the absorbing rooms' remainder -------------------------

H2 = qd.HyperExponential((F(9, 10), F(1, 10)), (F(1, 20), F(1, 2)))


def _summed(ctx, start, H, counts, pmf, tail, geometric, support, closed=False):
    return _MIX(ctx, start, H, counts, pmf, tail, geometric, support, False)


_MIX = V._mix_powers


@pytest.mark.parametrize("batch", [qd.Constant(5), qd.Geometric(4), qd.FinitePMF({3: F(1, 2), 4: F(1, 2)})],
                         ids=["const5", "geometric4", "pmf34"])
@pytest.mark.parametrize("digits", [None, 30])
def test_whole_admission_closed_rooms_agree_with_the_summation(monkeypatch, batch, digits):
    """The rooms below the smallest batch keep their mass (room 0 for geometric batches, rooms 0..4 for batches of 5);
    their tail closed exactly against the summation until the count is negligible: float64 within 1e-13 (rounding
    over two different orders of summation of positive terms; measured <= 2.3e-15), 30 digits within 1e-28."""
    model = qd.FiniteVacationQueue.from_load(F(7, 10), batch, H2, qd.Exponential(F(1, 10)), 12, admission="whole")
    keys = ("loss_probability", "mean_wait", "q0", "qr", "pr", "idle_probability")
    closed = model.evaluate(digits).as_dict()
    monkeypatch.setattr(V, "_mix_powers", _summed)
    summed = model.evaluate(digits).as_dict()
    tol = 1e-13 if digits is None else mpmath.mpf(10) ** -28
    for key in keys:
        a, b = mpmath.mpf(closed[key]), mpmath.mpf(summed[key])
        assert abs(a - b) <= tol * abs(b), (key, a, b)


@pytest.mark.slow  # 8.7 s (the summation's 8192 terms); the loop keeps the closure against the summation above
def test_whole_admission_with_a_lognormal_service_stops_at_the_closure(monkeypatch):
    """r = 40, batches of 5, a lognormal service: the room matrices stop after the rows' transient mass vanishes
    (at most r / 5 + 1 batches, then the closure after more batches than rooms) instead of summing the count
    sequences to 8192 terms; the loss and the mean wait equal the summation's to 1e-12 (the quadrature sequences'
    own accuracy, 1e-13, times the sums)."""
    model = qd.FiniteVacationQueue.from_load(F(55, 100), qd.Constant(5), LogNormal(F(12, 1000), 2),
                                             qd.Exponential(F(6, 100)), 40, admission="whole")
    asked = []
    real = V._mix_powers

    def spy(ctx, start, H, counts, *rest):
        def counted(size):
            asked.append(size)
            return counts(size)
        return real(ctx, start, H, counted, *rest)

    monkeypatch.setattr(V, "_mix_powers", spy)
    closed = model.evaluate().as_dict()
    assert max(asked) <= 64
    monkeypatch.setattr(V, "_mix_powers", _summed)
    summed = model.evaluate().as_dict()
    for key in ("loss_probability", "mean_wait", "pr"):
        assert abs(closed[key] - summed[key]) <= 1e-12 * summed[key], key


# -- item 3: the float64 atom escalates with a note --------------------------------------------------------------


def _overflowing():
    # means of 1e-310: the batch rate 5e309 is beyond the double range, so the float64 data of P(W = 0) fail
    law = qd.Exponential(F(1, 10**310))
    return qd.FiniteVacationQueue.from_load(F(1, 2), qd.Constant(1), law, law, 10, vacation_policy="single")


def test_the_atom_that_leaves_float64_says_so():
    model = _overflowing()
    with pytest.raises(ArithmeticError):
        FW.FiniteWait(model).data(FLOAT64)
    record = model.evaluate(wait_tail=[0], wait_quantile=[F(1, 10)])
    notes = [n for n in record.notes if "P(W = 0)" in n]
    assert len(notes) == 2 and all("recomputed with mpmath to 15 digits" in n for n in notes), record.notes
    assert {n.split(":")[0] for n in notes} == {"wait_tail", "wait_quantile"}
    values = record.as_dict()
    want = model.evaluate(30, wait_tail=[0]).as_dict()["wait_tail"]["0"]
    # 1 - P(W = 0) from the 15-digit atom, rounded to float64: within 1e-15 of the 30-digit one
    assert abs(values["wait_tail"]["0"] - want) <= 1e-15 * want
    assert values["wait_quantile"]["1/10"] == 0.0  # 1/10 is below P(W = 0) = 0.2859...: the atom reaches it
    assert 0.1 < 1 - float(want) < 0.5


def test_an_atom_kept_in_float64_has_no_note():
    model = qd.FiniteVacationQueue.from_load(F(1, 2), qd.Constant(1), qd.Exponential(F(1, 10)),
                                             qd.Exponential(F(1, 10)), 10, vacation_policy="single")
    record = model.evaluate(wait_tail=[0])
    assert not [n for n in record.notes if "P(W = 0)" in n]
    want = model.evaluate(30, wait_tail=[0]).as_dict()["wait_tail"]["0"]
    assert abs(record.as_dict()["wait_tail"]["0"] - want) <= 1e-14 * want


@pytest.mark.parametrize("admission", ["partial", "whole"])
def test_the_heavy_tailed_atom_from_the_moments_data_equals_the_transforms(admission):
    """P(W = 0) of a lognormal service is read from the moments' data (count sequences over the rows only); the
    transform's data sum the count sequences to negligibility (2247 terms here): the two atoms agree to 1e-15
    (float64 rounding of sums of positive terms; measured 1.3e-16 and 0)."""
    model = qd.FiniteVacationQueue.from_load(F(55, 100), qd.Geometric(4), LogNormal(F(12, 1000), 2),
                                             qd.Exponential(F(6, 100)), 60, admission=admission,
                                             vacation_policy="single")
    law = FW.FiniteWait(model)
    with FLOAT64:
        atom = law.p_zero("wait")(FLOAT64)
    data = law.data(FLOAT64)
    summed = data.zero_weight / data.N0
    assert 0.01 < summed < 0.5 and abs(atom - summed) <= 1e-15 * summed


# -- a closed-form count law whose D-digit summation 2^18 terms cannot reach: refused by a float64 pilot ------------

def test_a_count_beyond_2_to_18_terms_at_60_digits_is_refused_by_the_float64_pilot():
    """An Erlang-4 vacation of mean 0.075 at batch rate 10^5 (mean count 7500, a negative binomial count of shape 4:
    its tail decays by about (1 - 1/1876) a term) has residual moments at 2^18 terms of 9.2e-56 of the first: enough
    in float64 and at 20 digits, not at the 60 working digits of a tail far below float64 (eps / 256 ~ 4e-63).
    Before the pilot the mpmath lengths ran to 2^18 (58 s of CPU) and then refused; the pilot refuses in well under
    5 s of CPU. The same law at batch rate 10^4 (mean count 750) is summed at 20 digits, and its sequences agree
    with float64's (the same sums at another precision) where float64 resolves them."""
    from qderive.symbolic.errors import NumericalError
    from qderive.symbolic.laws import parse_time_law

    law = parse_time_law("erlang:k=4,mean=0.075")
    start = time.process_time()
    with mp_context(60) as ctx, pytest.raises(NumericalError, match=r"more than 2\^18 terms"):
        FW.count_data(law, F(10**5), ctx, 1)
    assert time.process_time() - start < 5
    with mp_context(20) as ctx:
        beta, tail, _ = FW.count_data(law, F(10**4), ctx, 1)
    beta64, tail64, _ = FW.count_data(law, F(10**4), FLOAT64, 1)
    assert len(beta) >= len(beta64)
    for k in range(0, len(beta64), 97):  # float64's sums of positive terms: 1e-12 relative where above 1e-250
        if tail64[k] > 1e-250:
            assert abs(float(tail[k]) - tail64[k]) <= 1e-12 * tail64[k]
