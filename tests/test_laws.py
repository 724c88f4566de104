"""Time and batch laws: every closed-form hook equals the generic path from the transform,
and the Poisson-mixing probabilities equal a direct numerical integral of their definition."""

from fractions import Fraction as F

import mpmath
import pytest
import sympy as sp

from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError

TIME_LAWS = [
    T.Deterministic(F(1, 2)),
    T.Exponential(F(3, 2)),
    T.Erlang(4, F(3, 200)),
    T.Gamma(F(5, 2), F(2, 3)),
    T.HyperExponential((F(1, 4), F(1, 4), F(1, 2)), (F(1, 3), 1, 2)),
    T.Uniform(F(1, 4), F(3, 2)),
]
BATCH_LAWS = [B.Geometric(F(5, 2)), B.Constant(3), B.FinitePMF({1: F(1, 3), 4: F(2, 3)}), B.ShiftedPoisson(F(7, 4))]


@pytest.mark.parametrize("law", TIME_LAWS, ids=lambda l: type(l).__name__)
def test_moment_hook_equals_lst_derivative(law):
    for n in (1, 2, 3):
        assert sp.simplify(law.moment(n) - law.moment_from_lst(n)) == 0


@pytest.mark.parametrize("law", TIME_LAWS, ids=lambda l: type(l).__name__)
def test_poisson_mixing_hook_equals_lst_path(law):
    lam = sp.Rational(7, 3)
    for k in range(4):
        hook, generic = law.poisson_mixing(k, lam), law.poisson_mixing_from_lst(k, lam)
        # exact where sympy can decide, else 45 digits (the uniform row holds incomplete gammas)
        assert abs(sp.N(hook - generic, 50)) < sp.Rational(1, 10**45)


def _density_integral(law, k, lam):
    """beta_k = int (lam x)^k/k! e^{-lam x} dB(x), by mpmath.quad of the density (definition)."""
    lam = mpmath.mpf(lam.p) / lam.q
    pois = lambda x: (lam * x) ** k / mpmath.factorial(k) * mpmath.exp(-lam * x)  # noqa: E731
    if isinstance(law, T.Deterministic):
        d = mpmath.mpf(law.mean.p) / law.mean.q
        return pois(d)
    if isinstance(law, T.Uniform):
        a, b = (mpmath.mpf(v.p) / v.q for v in (law.low, law.high))
        return mpmath.quad(pois, [a, b]) / (b - a)
    if isinstance(law, T.HyperExponential):
        total = mpmath.mpf(0)
        for p, m in zip(law.probs, law.means):
            mean = mpmath.mpf(m.p) / m.q
            dens = lambda x, mean=mean: mpmath.exp(-x / mean) / mean  # noqa: E731
            total += mpmath.mpf(p.p) / p.q * mpmath.quad(lambda x, d=dens: pois(x) * d(x), [0, mpmath.inf])
        return total
    a = mpmath.mpf(law.shape.p) / law.shape.q
    m = mpmath.mpf(law.mean.p) / law.mean.q
    rate = a / m
    dens = lambda x: rate**a * x ** (a - 1) * mpmath.exp(-rate * x) / mpmath.gamma(a)  # noqa: E731
    return mpmath.quad(lambda x: pois(x) * dens(x), [0, mpmath.inf])


@pytest.mark.parametrize("law", TIME_LAWS, ids=lambda l: type(l).__name__)
def test_poisson_mixing_equals_integral_of_definition(law):
    lam = sp.Rational(7, 3)
    with mpmath.workdps(40):
        for k in (0, 1, 5):
            expected = _density_integral(law, k, lam)
            got = mpmath.mpf(sp.N(law.poisson_mixing(k, lam), 45))
            # quadrature of smooth integrands at 40 digits: agreement to 1e-35 relative
            assert abs(got - expected) <= mpmath.mpf(10) ** -35 * abs(expected)


@pytest.mark.parametrize("law", BATCH_LAWS, ids=lambda l: type(l).__name__)
def test_batch_law_hooks_equal_pgf(law):
    z = sp.Symbol("z")
    L = law.pgf(z)
    assert sp.simplify(L.subs(z, 1) - 1) == 0
    for n in (1, 2, 3):
        generic = sp.diff(L, z, n).subs(z, 1)
        assert sp.simplify(law.factorial_moment(n) - generic) == 0
    taylor = sp.series(L, z, 0, 7).removeO()
    for i in range(1, 7):
        assert sp.simplify(law.pmf(i) - taylor.coeff(z, i)) == 0
        assert sp.simplify(law.tail(i) - (1 - sum(law.pmf(m) for m in range(1, i + 1)))) == 0
    # raw moment 2 from the pmf directly (finite or rapidly convergent sum)
    with mpmath.workdps(30):
        direct = mpmath.nsum(lambda i: i**2 * mpmath.mpf(sp.N(law.pmf(int(i)), 40)), [1, mpmath.inf])
        assert abs(direct - mpmath.mpf(sp.N(law.moment(2), 40))) < mpmath.mpf(10) ** -20


def test_general_laws_give_moment_symbols():
    b = T.GeneralTime("beta", "b")
    l = B.GeneralBatch("L", "l")
    assert str(b.moment(2)) == "b2"
    assert sp.expand(l.factorial_moment(2)) == sp.Symbol("l2", positive=True) - sp.Symbol("l1", positive=True)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: T.Exponential(-1), "mean = -1: must be > 0"),
        (lambda: T.Erlang(F(5, 2), 1), "k = 5/2"),
        (lambda: T.Uniform(2, 1), "must exceed low"),
        (lambda: T.HyperExponential((F(1, 2), F(1, 3)), (1, 2)), "sum to 5/6"),
        (lambda: T.Exponential(0.5), "is a float"),
        (lambda: B.Geometric(F(1, 2)), "must be >= 1"),
        (lambda: B.FinitePMF({1: F(1, 2), 2: F(1, 3)}), "must sum to 1"),
        (lambda: B.Constant(0), "integer >= 1"),
    ],
)
def test_invalid_parameters_are_refused_with_a_clear_message(build, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(")):
        build()
