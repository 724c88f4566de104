"""Exact tails of the finite room for a service on its own fine lattice (issue 28: times recorded to 0.01 ms or
1 us; :mod:`qderive.numeric.kernels.lattice_fft` (F10), (F11)), each against something computed another way:

* the FFT powers b^{*j} and their overflow against exact Fractions, within the certified bound (F11);
* the tails of a 1 us lattice law of three atoms against the independent 30-digit chain of
  ``tests/test_wait_lattice_finite_service.py`` (``_oracle``: no FFT, no admission matrix, no residual weights);
* Erlang and constant vacations (matrix and cut pieces) against the direct positive convolutions of the exact
  lattice path (:class:`~qderive.numeric.kernels.lattice_finite.LatticeServiceSums`), forced by the limits;
* a D = 4 sample against the same direct convolutions on its lattice (issue 28's 0.02901216321 .. 6);
* a seeded simulation's 99 % interval for a sample written to 1 us.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.kernels import lattice_fft as X
from qderive.numeric.simulation.vacation import simulate
from qderive.symbolic.laws.empirical import Empirical
from qderive.symbolic.limits import limits
from test_wait_lattice_finite_service import _oracle

PMF = qd.FinitePMF((F(1, 2), F(1, 4), F(1, 4)))
US = F(1, 10**6)
#: three atoms on the 1 us lattice (the gcd of 3, 7, 11 us is 1 us)
ATOMS = {3 * US: F(1, 2), 7 * US: F(1, 4), 11 * US: F(1, 4)}


def _service(atoms):
    values = []
    for d, p in atoms.items():  # an empirical law: each value repeated by its weight (all weights k / 4)
        values += [d] * int(p * 4)
    return Empirical(tuple(values))


def _fine(model, ts, kind="wait"):
    """(values, brackets) by the FFT path: the exact lattice path of few levels turned off (``lattice_levels``)."""
    with limits(lattice_levels=8):
        law = response_laws(model)[kind]
        values = law.tails(ts, None)[0]
        brackets = [law.bracket(t) for t in ts]
    assert all(lo < hi for lo, hi, _ in brackets) and all(hi - lo < 1e-9 * lo for lo, hi, _ in brackets)
    return values, brackets


def _exact_powers(b, j, L):
    """b^{*j} over [0, L) with Fractions (b's floats taken exactly)."""
    s = [F(1)] + [F(0)] * (L - 1)
    bf = [F(float(v)) for v in b]
    for _ in range(j):
        out = [F(0)] * L
        for k, v in enumerate(s):
            if v:
                for m, w in enumerate(bf):
                    if w and k + m < L:
                        out[k + m] += v * w
        s = out
    return s


def test_fft_powers_against_fractions_within_the_certified_bound():
    b = np.zeros(13)
    b[[2, 5, 12]] = [0.3, 0.45, 0.25]  # three atoms, the weights rounded once (the Fractions take the floats)
    L = 40
    exact = [_exact_powers(b, j, L + 12) for j in range(9)]
    for j, s, err, over, oerr in X.lattice_powers(b, L):
        if j > 7:
            break
        want = np.array([float(v) for v in exact[j][:L]])
        got_err = math.sqrt(float(sum((F(float(a)) - v) ** 2 for a, v in zip(s, exact[j][:L]))))
        # the certified 2-norm bound holds, and is not vacuous (below 1e-13 of the unit mass)
        assert got_err <= err + 1e-300 and err < 1e-13, (j, got_err, err)
        assert np.allclose(s, want, rtol=0, atol=1e-15)
        # the overflow: (s_j * b) past L, from the window [0, L)
        conv = [F(0)] * (L + 12)
        for k in range(L):
            for m in range(13):
                conv[k + m] += F(float(s[k])) * F(float(b[m]))  # of the computed s_j: its own error is in oerr
        over_err = math.sqrt(float(sum((F(float(a)) - v) ** 2 for a, v in zip(over, conv[L:]))))
        assert over_err <= oerr


def test_convolution_error_bounds_random_transforms():
    # (F11) against the exact convolution (Fractions) of random pmfs of a few hundred entries: the bound holds and
    # is within a factor 1e4 of the actual error (the worst case of Higham's theorem, not an estimate)
    rng = np.random.default_rng(5)
    for n in (50, 200):
        a = rng.random(n)
        a /= a.sum()
        b = rng.random(60)
        b /= b.sum()
        size = 1 << (n + 59 - 1).bit_length()
        got = np.fft.irfft(np.fft.rfft(a, size) * X.fft_transform(b, size), size)[: n + 59]
        fa, fb = [F(float(v)) for v in a], [F(float(v)) for v in b]
        exact = [F(0)] * (n + 59)
        for i, x in enumerate(fa):
            for k, y in enumerate(fb):
                exact[i + k] += x * y
        actual = math.sqrt(float(sum((F(float(g)) - e) ** 2 for g, e in zip(got, exact))))
        bound = X.convolution_error(size, *X.fft_norms(a), *X.fft_norms(b), X.transform_error(size))
        assert actual <= bound < 1e4 * max(actual, 1e-18), (n, actual, bound)


CASES = [  # (model, ts in us): exponential vacations (multiple), single with whole admission, none
    (qd.FiniteVacationQueue(F(75000), PMF, _service(ATOMS), qd.Exponential(20 * US), 4), (1, 17, 25, F(51, 2))),
    (qd.FiniteVacationQueue(F(50000), PMF, _service(ATOMS), qd.Exponential(15 * US), 5, qd.Admission.WHOLE,
                            qd.VacationPolicy.SINGLE), (2, 9, F(61, 2))),
    (qd.FiniteVacationQueue(F(120000), PMF, _service(ATOMS), None, 4), (F(1, 2), 12, 40)),
    # a light load: the idle server's batches count, at points on the lattice (P(S_j > t) past the window's end)
    (qd.FiniteVacationQueue(F(20000), PMF, _service(ATOMS), None, 4), (3, 14)),
]


@pytest.mark.parametrize("model,ts", CASES)
def test_fine_lattice_tails_against_the_independent_chain(model, ts):
    ts = [F(t) * US for t in ts]
    wait, sojourn = _oracle(model, ATOMS, ts)
    for kind, exact in (("wait", wait), ("sojourn", sojourn)):
        values, brackets = _fine(model, ts, kind)
        for t, v, (lo, hi, levels), e in zip(ts, values, brackets, exact):
            # the certified bracket (FFT rounding (F11), rows cut) holds the 30-digit value, and the float64 value
            # is within 1e-12 of it (the bound is a worst case: the FFTs of a few hundred levels err by ~1e-16)
            assert lo <= float(e) <= hi, (kind, t, lo, e, hi)
            assert abs(v - float(e)) <= 1e-12 * float(e), (kind, t, v, e)
            assert levels * US >= F(9, 8) * t  # the data's own lattice over the span


@pytest.mark.parametrize("vacation", [qd.Erlang(3, 20 * US), qd.Deterministic(12 * US)])
def test_matrix_and_cut_pieces_against_the_direct_convolutions(vacation):
    model = qd.FiniteVacationQueue(F(75000), PMF, _service(ATOMS), vacation, 4)
    ts = [F(t) * US for t in (5, 21, F(61, 2))]
    exact = response_laws(model)["wait"]
    assert exact.bracket is None  # the exact lattice path (direct positive convolutions, (F5))
    want = exact.tails(ts, 20)[0]
    values, brackets = _fine(model, ts)
    for t, v, (lo, hi, _), e in zip(ts, values, brackets, want):
        # 20 digits of the direct sums against the FFT path: inside its certified bracket, within 1e-12
        assert lo <= float(e) <= hi and abs(v - float(e)) <= 1e-12 * float(e), (t, lo, v, hi, e)


def _sample(n, digits, seed=1):
    values = np.random.default_rng(seed).lognormal(np.log(0.01), 0.8, n)
    return Empirical(tuple(F(f"{v:.{digits}f}") for v in values))


def _issue_model(service, r):
    return qd.FiniteVacationQueue.from_load(F(11, 20), qd.Geometric(4), service, qd.Exponential(F(6, 100)), r)


def test_a_coarse_sample_against_the_direct_convolutions_on_its_lattice():
    # 300 values to 0.1 ms: (F5)'s direct convolutions on its lattice (the old path, the FFT
    # limit set to 0) and (F10)'s FFT powers agree within both certified bounds
    model = _issue_model(_sample(300, 4), 20)
    t = F(3, 10)
    law = response_laws(model)["wait"]
    value = law.tails([t], None)[0][0]
    lo, hi, levels = law.bracket(t)
    with limits(fine_lattice_levels=1):
        old = response_laws(model)["wait"]
        o_value = old.tails([t], None)[0][0]
        o_lo, o_hi, o_levels = old.bracket(t)
    assert levels == 4096 and o_levels in (4096, 8192) and hi - lo < 1e-9 * lo  # 8192: h = g / 2, exact too
    assert o_lo <= value <= o_hi and lo <= o_value <= hi and abs(value - o_value) < 1e-11 * value


@pytest.mark.slow  # about 5 s: FFT brackets at 2^15 and 2^16 levels, the exact sums at 2^17
def test_the_limit_falls_back_to_the_brackets():
    model = _issue_model(_sample(200, 6), 10)
    t = F(1, 10)  # 9/8 * 0.1 s on the 1 us lattice: 2^17 levels
    with limits(fine_lattice_levels=1 << 16):
        lo, hi, levels = response_laws(model)["wait"].bracket(t)
    # beyond the limit: the certified brackets of the services rounded down and up (to the limit's 2^16 levels)
    assert levels == 1 << 16 and hi - lo > 1e-6 * lo
    e_lo, e_hi, e_levels = response_laws(model)["wait"].bracket(t)
    # within it, the exact sums on the data's own lattice: inside the rounded bracket, 1e-9 wide
    assert e_levels == 1 << 17 and lo <= e_lo <= e_hi <= hi and e_hi - e_lo < 1e-9 * e_lo, (lo, e_lo, e_hi, hi)


@pytest.mark.slow  # about 3 s: the FFT brackets at 2^13 ... 2^16 levels
def test_raw_floats_get_brackets_refined_by_the_fft_sums():
    # values to 17 significant digits share no lattice: the brackets of the rounded laws, refined beyond
    # lattice-levels by the FFT sums (F10) of the rounded laws; both brackets certified, so nested up to the FFT's
    # certified rounding (1e-9 of the value), and the width first order in h (4 times the levels: about 4 times
    # narrower)
    values = np.random.default_rng(1).lognormal(np.log(0.01), 0.8, 100)
    model = _issue_model(Empirical(tuple(F(repr(float(v))) for v in values)), 10)
    t = F(1, 10)
    with limits(fine_lattice_levels=1 << 14):
        lo1, hi1, n1 = response_laws(model)["wait"].bracket(t)
    with limits(fine_lattice_levels=1 << 16):
        lo2, hi2, n2 = response_laws(model)["wait"].bracket(t)
    assert (n1, n2) == (1 << 14, 1 << 16)
    assert lo1 - 1e-9 * lo1 <= lo2 <= hi2 <= hi1 + 1e-9 * hi1
    assert 2.5 < (hi1 - lo1) / (hi2 - lo2) < 6, (hi1 - lo1, hi2 - lo2)


def test_quantile_on_the_fine_lattice():
    model = _issue_model(_sample(100, 5), 10)
    q = model.evaluate(wait_quantile=["0.9"]).response["wait_quantile"]["0.9"]
    law = response_laws(model)["wait"]
    lo, hi, _ = law.bracket(F(q))
    # the tail at the quantile brackets 0.1 (the search's 1e-13 in log t: the tail moves by far less than 1e-9)
    assert lo * (1 - 1e-9) <= 0.1 <= hi * (1 + 1e-9), (lo, hi)


@pytest.mark.slow  # about 6 s: the issue's model at r = 129, both paths on the 0.1 ms lattice (8192 levels)
def test_issue_value_at_d4_against_the_direct_convolutions():
    model = _issue_model(_sample(2000, 4), 129)
    law = response_laws(model)["wait"]
    value = law.tails([F(1, 2)], None)[0][0]
    lo, hi, _ = law.bracket(F(1, 2))
    with limits(fine_lattice_levels=1):
        o_lo, o_hi, _ = response_laws(model)["wait"].bracket(F(1, 2))
    # issue 28: today "between 0.02901216321 and 0.02901216326" (the direct convolutions on the lattice)
    assert o_lo <= value <= o_hi and lo <= o_hi and o_lo <= hi and hi - lo < 1e-9 * lo
    assert 0.02901216321 <= value <= 0.02901216326


@pytest.mark.slow  # about 10 s: 8 replications of 40 000 customers
def test_fine_lattice_overlaps_the_simulation():
    model = qd.FiniteVacationQueue.from_load(F(3, 5), batch=qd.Geometric(2), service=_sample(200, 6),
                                             vacation=qd.Exponential(F(1, 20)), capacity=8)
    ts = ["1/20", "1/10"]
    law = response_laws(model)["wait"]
    got = law.tails([F(t) for t in ts], None)[0]
    sim = simulate(model, 40_000, 8, seed=11, quiet=True, wait_tail=ts)
    for t, v in zip(ts, got):
        lo, hi, levels = law.bracket(F(t))
        a, b = sim["wait_tail"][t].interval(0.99)
        # the exact value (a certified bracket 1e-9 wide on the 1 us lattice) inside the 99 % interval
        assert levels * US >= F(9, 8) * F(t) and lo <= v <= hi and a <= v <= b, (t, v, a, b)


def test_a_rounded_law_with_an_atom_at_zero_against_the_direct_convolutions():
    # the three atoms rounded down to h = 4 us (3 us -> 0: b_0 = 1/2): the FFT sums (F10) and (F5)'s direct
    # convolutions of the same lattice law, at points on the lattice (8, 12 us: P(S_j >= (L + 1) h) with b_0 > 0)
    # and off it
    from qderive.numeric.backend import FLOAT64
    from qderive.numeric.engines.vacation_finite_wait import (FineServiceSums, ServiceLatticeSums,
                                                              service_lattice_setup, wait_law_data)

    # no vacations (idle periods) and geometric batches: powers j >= 3 enter the idle server's row
    model = qd.FiniteVacationQueue(F(20000), qd.Geometric(3), _service(ATOMS), None, 6)
    _, vacation, _, _, _ = service_lattice_setup(model.service, model.vacation)[0]
    h = 4 * US
    down = np.array([0.5, 0.25, 0.25] + [0.0] * 30)
    parts = wait_law_data(model).parts(FLOAT64)
    mass = FLOAT64.fsum([d.N0 for d in parts])
    with FLOAT64, np.errstate(under="ignore"):
        direct = ServiceLatticeSums(parts, down, h, 32, vacation, 0, mass)
        fft = FineServiceSums(parts, down, h, vacation, 0, mass)
        for t in (8 * US, 10 * US, 12 * US, 30 * US):
            a, b = direct.bounds(t)
            c, d = fft.bounds(t)
            # both certified: the intervals overlap, and the two values agree within 1e-12
            assert a <= d and c <= b and abs((a + b) - (c + d)) <= 1e-12 * (a + b), (t, a, b, c, d)


def test_digits_within_the_certified_rounding_and_refused_beyond():
    from qderive.symbolic.errors import ParameterError

    model = qd.FiniteVacationQueue(F(75000), PMF, _service(ATOMS), qd.Exponential(20 * US), 4)
    ts = [F(25) * US]
    (exact,), _ = _oracle(model, ATOMS, ts)
    with limits(lattice_levels=8):  # the FFT path (F10)
        law = response_laws(model)["wait"]
        got = law.tails(ts, 8)[0][0]
        # 8 digits asked: the bracket's midpoint, within 1e-8 of the 30-digit chain
        assert abs(got - exact) <= mpmath.mpf(10) ** -8 * exact, (got, exact)
        with pytest.raises(ParameterError, match="--digits 14: .* own lattice .* certified to"):
            law.tails(ts, 14)
