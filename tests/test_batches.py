"""Every registered batch law, by one generic checker: pmf, tails, excesses and moments against
direct sums; the kernels' vectors and convolution columns against exact convolutions; samplers."""

from __future__ import annotations


import mpmath
import numpy as np
import pytest
import sympy as sp

from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.sequences import batch_columns, batch_vectors
from qderive.symbolic.batches import BatchLaw
from qderive.symbolic.numbers import to_sympy

LAWS = [law for cls in BatchLaw.registered().values() for law in cls.examples()]
IDS = [law.spec_text() for law in LAWS]
N = 15


def _num(x):
    return mpmath.mpf(sp.N(to_sympy(x), 60))


def test_every_registered_batch_law_has_examples():
    assert not [n for n, c in BatchLaw.registered().items() if not c.examples()]


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_moments_tails_and_excess_against_direct_sums(law):
    z = sp.Symbol("z")
    pgf = law.pgf(z)
    with mpmath.workdps(40):
        pmf = [_num(law.pmf(i)) for i in range(0, 1500)]
        assert abs(mpmath.fsum(pmf) - 1) < mpmath.mpf(10) ** -30
        for i in range(6):
            assert abs(_num(sp.diff(pgf, z, i).subs(z, 0) / sp.factorial(i)) - pmf[i]) < mpmath.mpf(10) ** -35
            assert abs(_num(law.tail(i)) - (1 - mpmath.fsum(pmf[: i + 1]))) < mpmath.mpf(10) ** -30
            direct = mpmath.fsum((k - i) * pmf[k] for k in range(i + 1, 1500))
            assert abs(_num(law.excess(i)) - direct) < mpmath.mpf(10) ** -30
        for n in (1, 2, 3):
            direct = mpmath.fsum(k**n * pmf[k] for k in range(1500))
            assert abs(_num(law.moment(n)) - direct) <= mpmath.mpf(10) ** -30 * direct


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_kernel_vectors_and_columns(law):
    ctx = mp_context(40)
    with ctx:
        vec = batch_vectors(law, N, ctx)
        cols = list(batch_columns(law, N, ctx))
    with mpmath.workdps(45):
        pmf = [_num(law.pmf(i)) for i in range(N + 1)]
        for i in range(N + 1):
            assert abs(vec.pmf[i] - pmf[i]) <= mpmath.mpf(10) ** -35
            assert abs(vec.tail[i] - _num(law.tail(i))) <= mpmath.mpf(10) ** -35
            assert abs(vec.excess[i] - _num(law.excess(i))) <= mpmath.mpf(10) ** -35
        # k-fold convolutions by direct polynomial products
        conv = [mpmath.mpf(1)] + [mpmath.mpf(0)] * N
        for k, col, T in cols[:4]:
            conv = [mpmath.fsum(conv[m] * pmf[n - m] for m in range(n + 1)) for n in range(N + 1)]
            for n in range(N + 1):
                assert abs(col[n] - conv[n]) <= mpmath.mpf(10) ** -33
                assert abs(T[n] - (1 - mpmath.fsum(conv[: n + 1]))) <= mpmath.mpf(10) ** -33
    f64 = batch_vectors(law, N, FLOAT64)
    assert np.allclose(f64.excess, [float(x) for x in vec.excess], rtol=1e-13, atol=0)


@pytest.mark.parametrize("law", LAWS, ids=IDS)
def test_sampler(law):
    x = law.sample(np.random.default_rng(7), 200_000)
    assert x.dtype.kind == "i" and x.min() >= law.min_size
    var = float(law.moment(2) - law.moment(1) ** 2)
    assert abs(x.mean() - float(law.mean)) <= 3.9 * (var / len(x)) ** 0.5 + 1e-12


@pytest.mark.parametrize("text, fragment", [
    ("geometric:mean=0.5", "mean must be >= 1"),
    ("pmf:1=0.5,1=0.5", "1 is given twice"),
    ("pmf:1=0.5,2=0.4", "must sum to 1"),
    ("pmf:0=1", "must be an integer >= 1"),
    ("const:n=0", "n must be >= 1"),
    ("const:n=1e9", "batch-size"),
])
def test_bad_batch_laws(text, fragment):
    with pytest.raises(ValueError) as err:
        BatchLaw.parse(text, "--batch")
    assert fragment in str(err.value)
