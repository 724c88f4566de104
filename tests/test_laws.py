"""Every registered time law, by one generic checker (STYLE: hook == transform for every law).

For each law class of the registry and each of its ``examples()`` (a law without examples fails):
closed-form moments == derivatives of the LST (or, for a law whose LST is not a closed form, mpmath.quad
of its survival function); the count kernel's beta_k, P(K > k) and sum_{i>k} P(K > i) (float64
and 40 digits) == the exact count probabilities (SymPy) or an independent mpmath.quad; the
phase-type form reproduces the moments; ``parse(spec_text())`` gives the law back; the sampler's
mean lies in a 99.99 % interval around the exact mean. Tolerances: at 40 digits, what each law states of
itself (``TimeLaw.accuracy``, with its reason: 35 digits by default, the sums of the kernels carry O(n eps));
float64 needs 1e-12 relative. No check names a law class.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
import sympy as sp

from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.sequences import count_sequences
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import TimeLaw
from qderive.symbolic.numbers import to_sympy

LAWS = [law for cls in TimeLaw.registered().values() for law in cls.examples()]
IDS = [law.spec_text()[:40] for law in LAWS]
LAM = F(3, 2)
N = 12


def test_every_registered_law_has_examples():
    missing = [name for name, cls in TimeLaw.registered().items() if not cls.examples()]
    assert not missing, f"laws without examples(): {missing}"


def _mp(x):
    return mpmath.mpf(sp.N(to_sympy(x), 60)) if not isinstance(x, F) else mpmath.mpf(x.numerator) / x.denominator


def _closed_transform(law) -> bool:
    """Whether the law's LST is a closed form (else an integral: the references are quadratures)."""
    return not law.lst(sp.Symbol("s")).has(sp.Integral)


@functools.lru_cache(maxsize=8)
def _survival_grid(law):
    """(x_j, w_j) with int_0^oo g(x) P(T > x) dx ~ sum_j w_j g(x_j), at 40 digits: the trapezoidal rule in u = ln x
    (x = e^u, dx = e^u du) with step 1/40 on [ln E T - 75, the u where P(T > e^u) < 1e-45], the survival function
    evaluated once per node. The integrands here are analytic in a strip around the real u axis and negligible at
    both ends (below e^-75 relative at the left, 1e-45 at the right), where the rule converges geometrically; it
    is confirmed against the rule with step 1/20 (every other node) to 1e-32 for g = 1 (the mean). This shares no
    code with the law's closed-form moments or its count kernel."""
    assert law.survival(mpmath.mpf(1)) is not None, f"{law}: no closed-form LST and no survival function"
    with mpmath.workdps(40):
        centre = mpmath.log(_mp(law.moment(1)))
        top = centre + 1
        while law.survival(mpmath.exp(top)) > mpmath.mpf(10) ** -45:
            top = centre + 2 * (top - centre)
        h = mpmath.mpf(1) / 40
        count = int((top - centre + 75) / h) + 1
        xs = [mpmath.exp(centre - 75 + j * h) for j in range(count + 1)]
        ws = [h * x * law.survival(x) for x in xs]
        fine, coarse = mpmath.fsum(ws), 2 * mpmath.fsum(ws[::2])
        assert abs(fine - coarse) <= mpmath.mpf(10) ** -32 * fine, (fine, coarse)
        return xs, ws


def _survival_integral(law, g):
    """int_0^oo g(x) P(T > x) dx on :func:`_survival_grid` (a law whose transform is not a closed form must give
    ``survival``: else there is nothing to check it against)."""
    xs, ws = _survival_grid(law)
    with mpmath.workdps(40):
        return mpmath.fsum(w * g(x) for x, w in zip(xs, ws))


def _need(law):
    """The relative tolerance at 40 digits: what the law states of itself (``TimeLaw.accuracy``, with its reason)."""
    return mpmath.mpf(10) ** -law.accuracy.digits


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_moment_hook_equals_transform(law):
    with mpmath.workdps(40):
        for n in (1, 2, 3):
            hook = law.moment(n)
            if _closed_transform(law):
                assert sp.simplify(to_sympy(hook) - law._moment_from_lst(n)) == 0
            else:  # E T^n = n int_0^oo x^(n-1) P(T > x) dx
                ref = n * _survival_integral(law, lambda x: x ** (n - 1))
                assert abs(_mp(hook) - ref) <= _need(law) * ref, (n, hook, ref)


def _reference_counts(law, lam, n):
    """beta_0 .. beta_n exactly (SymPy, the family's pmf) or, when the transform is not a closed form, by the
    quadrature of the survival function: beta_k = [k = 0] + lam int_0^oo P(T > x) (p_{k-1}(x) - p_k(x)) dx,
    p_k(x) = e^{-lam x} (lam x)^k / k! (integration by parts of int p_k dF; the checks read k <= n only: the
    reference tails are 1 - sum_{i<=k} beta_i)."""
    if not _closed_transform(law):
        # the n + 1 integrals on the one grid in one pass: p_k(x) = p_{k-1}(x) lam x / k from p_0(x) = e^{-lam x}
        # (one exponential per node instead of 2 (n + 1); the same sums, each still an mpmath.fsum at 40 digits)
        xs, ws = _survival_grid(law)
        terms = [[] for _ in range(n + 1)]
        with mpmath.workdps(40):
            lamm = _mp(lam)
            for x, w in zip(xs, ws):
                before, p = mpmath.mpf(0), mpmath.exp(-lamm * x)
                for k in range(n + 1):
                    terms[k].append(w * (before - p))
                    before, p = p, p * lamm * x / (k + 1)
            return [(1 if k == 0 else 0) + lamm * mpmath.fsum(terms[k]) for k in range(n + 1)]
    c = law.count_law(lam)
    return [_mp(c.pmf(k)) for k in range(n + 1)]


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_count_kernels_against_exact_probabilities(law):
    ctx = mp_context(40)
    with ctx:
        beta, tail, tail2 = count_sequences(law.count_law(LAM), N, ctx)
    with mpmath.workdps(50):
        ref = _reference_counts(law, LAM, N)
        # tails of the reference: P(K > k) = 1 - sum_{i<=k} beta_i at 50 digits (they are all >= 1e-30 here)
        ref_tail = [1 - mpmath.fsum(ref[: k + 1]) for k in range(N + 1)]
        need = _need(law)
        for k in range(N + 1):
            if ref[k] > mpmath.mpf(10) ** -30:
                assert abs(beta[k] - ref[k]) <= need * ref[k], (k, beta[k], ref[k])
            if ref_tail[k] > mpmath.mpf(10) ** -20:
                assert abs(tail[k] - ref_tail[k]) <= need * ref_tail[k] * 1e5, (k, tail[k], ref_tail[k])
        # sum_{i>k} P(K > i) = E (K - k - 1)^+ ; E K = lambda E T exactly
        mean = _mp(LAM * law.moment(1))
        assert abs(tail2[0] + tail[0] - mean) <= mpmath.mpf(10) ** -30 * mean
    b64, t64, s64 = count_sequences(law.count_law(LAM), N, FLOAT64)
    for k in range(N + 1):
        for got, want in ((b64[k], beta[k]), (t64[k], tail[k]), (s64[k], tail2[k])):
            if want > 1e-280:
                assert abs(got - float(want)) <= 1e-12 * float(want), (k, got, want)


@pytest.mark.every_case  # each case is its own module or law: the loop sees them all
@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_phase_type_form_reproduces_the_moments(law):
    form = law.phase_type()
    if form is None:
        return
    from qderive.symbolic.laws import PhaseType

    ph = PhaseType(*form)
    assert [ph.moment(n) for n in (1, 2, 3)] == [law.moment(n) for n in (1, 2, 3)]


@pytest.mark.every_case  # each case is its own module or law: the loop sees them all
@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_specification_round_trip(law):
    assert TimeLaw.parse(law.spec_text()) == law


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_sampler_mean(law):
    rng = np.random.default_rng(20131115)
    x = law.sample(rng, 400_000)
    assert x.shape == (400_000,) and np.all(x >= 0)
    m, sd = float(law.moment(1)), math.sqrt(float(law.variance()))
    # a 99.99 % interval for the sample mean (CLT; the lognormal with scv 2 has a finite variance)
    assert abs(x.mean() - m) <= 3.9 * sd / math.sqrt(len(x)), (x.mean(), m)


def test_empirical_law_from_a_file(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("service_time\n0.010\n0.020, 0.030\n0.020\n")
    law = TimeLaw.parse(f"empirical:file={path}", "--service")
    assert law.moment(1) == F(1, 50) and law.moment(2) == (F(1, 10000) + 2 * F(4, 10000) + F(9, 10000)) / 4
    bad = tmp_path / "bad.csv"
    bad.write_text("0.1\nfoo\n")
    with pytest.raises(ParameterError, match="line 2"):
        TimeLaw.parse(f"empirical:file={bad}", "--service")
    with pytest.raises(ParameterError, match="cannot be read"):
        TimeLaw.parse(f"empirical:file={tmp_path / 'missing.csv'}", "--service")


@pytest.mark.parametrize("text, fragment", [
    ("erlang:k=2,mean=0.01,mean=0.02", "mean is given twice"),
    ("erlang:k=2", "expects erlang:k=K,mean=X (missing: mean)"),
    ("exp:mean=1,scale=2", "unknown: scale"),
    ("exp:mean=0", "--service exp:mean=0: mean must be > 0"),
    ("erlang:k=2.5,mean=1", "k must be an integer"),
    ("hyperexp:p=0.5/0.4,mean=1/2", "must sum to 1"),
    ("ph:alpha=1/0,T=-1/1/0/0", "T[1][1] must be < 0"),
    ("ph:alpha=1/0,T=-1/1/1/-1", "never lead to absorption"),
    ("uniform:low=2,high=1", "must exceed low"),
    ("weibull:shape=2", "unknown time law 'weibull'"),
    ("exp:mean=1e-100000000", "number-exponent"),
    ("exp:mean=abc", "is not a number"),
])
def test_bad_laws_are_refused_with_one_clear_message(text, fragment):
    with pytest.raises((ParameterError, ValueError)) as err:
        TimeLaw.parse(text, "--service")
    assert fragment in str(err.value)


def test_float_inputs_are_exact_through_their_shortest_decimal():
    from decimal import Decimal

    from qderive.symbolic.laws import Erlang

    ref = Erlang(4, F(3, 200))
    for mean in (0.015, "0.015", Decimal("0.015"), np.float64(0.015), F(3, 200), sp.Rational(3, 200)):
        assert Erlang(4, mean) == ref
