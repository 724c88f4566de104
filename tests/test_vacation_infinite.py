"""The infinite-buffer vacation queue: general-law results against the spec, and concrete models
at 50 digits against independent chains (a CTMC built from the model definition for phase-type
laws; the embedded chain built from exact series coefficients for the others)."""

import mpmath
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from qderive.derivations import vacation_infinite as vi
from qderive.numeric.backend import mp_backend
from qderive.numeric.chains import stationary_gth
from qderive.numeric.phase_oracle import phase_queue_distribution
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError
from qderive.symbolic.pgf import series

R = sp.Rational
G = vi.general_results()


def test_general_W_and_N_equal_the_spec():
    lam, b1, b2, f1, f2, l1, l2 = vi.lam, vi.b1, vi.b2, vi.f1, vi.f2, vi.l1, vi.l2
    rb = lam * l1 * b1
    W_spec = f2 / (2 * f1) + lam * l1 * b2 / (2 * (1 - rb)) + (l2 - l1) * b1 / (2 * l1 * (1 - rb))
    assert sp.cancel(G["W"] - W_spec) == 0
    # N derived from P'(1) of (5), not restated: equals lambda l1 W of (6), (7)
    assert sp.cancel(G["N_derived"] - lam * l1 * W_spec) == 0
    assert sp.cancel(G["P(1)"] - 1) == 0 and sp.cancel(G["Q(1)"] - 1) == 0


def test_mg1_reduces_to_pollaczek_khinchine_with_residual_vacation():
    lam, b1, b2, f1, f2 = vi.lam, vi.b1, vi.b2, vi.f1, vi.f2
    W = G["W"].subs({vi.l1: 1, vi.l2: 1})
    assert sp.cancel(W - (lam * b2 / (2 * (1 - lam * b1)) + f2 / (2 * f1))) == 0
    # and M/M/1 without vacation effect (f -> 0 limit of residual is f2/(2 f1)); exponential service: W = rho/(mu - lam)
    mu = sp.Symbol("mu", positive=True)
    Wmm1 = (lam * b2 / (2 * (1 - lam * b1))).subs({b1: 1 / mu, b2: 2 / mu**2})
    assert sp.cancel(Wmm1 - lam / (mu * (mu - lam))) == 0


def _ph_models():
    # three parameter sets per phase-type family, light enough for a truncation far below 1e-50
    g = B.Geometric(R(3, 2))
    pmf = B.FinitePMF({1: R(1, 2), 2: R(1, 2)})
    return {
        "exp": [vi.VacationQueue(R(1, 5), g, T.Exponential(R(1, 2)), T.Exponential(1)),
                vi.VacationQueue(R(1, 10), pmf, T.Exponential(1), T.Exponential(R(1, 3))),
                vi.VacationQueue(R(1, 4), B.Constant(1), T.Exponential(R(2, 3)), T.Exponential(R(1, 2)))],
        "erlang": [vi.VacationQueue(R(1, 5), g, T.Erlang(2, R(1, 2)), T.Erlang(2, 1)),
                   vi.VacationQueue(R(1, 10), pmf, T.Erlang(3, 1), T.Exponential(R(1, 3))),
                   vi.VacationQueue(R(1, 4), B.Constant(1), T.Gamma(2, R(2, 3)), T.Erlang(3, R(1, 2)))],
        "hyperexp": [vi.VacationQueue(R(1, 5), g, T.HyperExponential((R(1, 2), R(1, 2)), (R(1, 4), R(3, 4))), T.Exponential(1)),
                     vi.VacationQueue(R(1, 10), pmf, T.Exponential(1), T.HyperExponential((R(1, 3), R(2, 3)), (R(1, 2), 1))),
                     vi.VacationQueue(R(1, 4), B.Constant(1), T.HyperExponential((R(1, 4), R(3, 4)), (1, R(1, 2))),
                                      T.Erlang(2, R(1, 2)))],
    }


@pytest.mark.parametrize("family", ["exp", "erlang", "hyperexp"])
def test_measures_at_50_digits_against_ctmc(family):
    from qderive.numeric.backend import FLOAT64

    for model in _ph_models()[family]:
        # smallest truncation (step 20) whose float64 tail mass is below 1e-57
        K = 40
        while phase_queue_distribution(model.lam, model.batch, model.service, model.vacation, K, FLOAT64).queue[-1] > 1e-57:
            K += 20
        bk = mp_backend(60)
        with bk:
            law = phase_queue_distribution(model.lam, model.batch, model.service, model.vacation, K, bk)
            p = law.queue
            assert p[-1] < mpmath.mpf(10) ** -55, "truncation must be negligible"
            N = mpmath.fsum(n * p[n] for n in range(len(p)))
            var = mpmath.fsum(n * n * p[n] for n in range(len(p))) - N * N
            got = vi.measures(model, 50)
            for value, ref in ((got["mean_queue_length"], N), (got["queue_length_variance"], var),
                               (got["idle_probability"], law.vacation)):
                # 50 requested digits; the oracle is truncated below 1e-55: demand 48
                assert abs(value - ref) <= mpmath.mpf(10) ** -48 * abs(ref)
        f64 = vi.measures(model)
        for key, value in f64.items():
            assert abs(value - float(got[key])) <= 1e-12 * abs(float(got[key])), key


def _embedded_chain_q(model, K, J, bk):
    z = vi.z
    s = sp.Symbol("s")
    A = model.service.lst(s).subs(s, model.lam - model.lam * model.batch.pgf(z))
    C = model.vacation.lst(s).subs(s, model.lam - model.lam * model.batch.pgf(z))
    a = [bk.num(c) for c in series(A, z, 0, K + 1).coeffs]
    c = [bk.num(c) for c in series(C, z, 0, K + 1).coeffs]
    P = [[0] * (K + 1) for _ in range(K + 1)]
    for j in range(K):
        P[0][j] = c[j]
    P[0][K] = 1 - mpmath.fsum(c[:K])
    for i in range(1, K + 1):
        for j in range(i - 1, K):
            P[i][j] = a[j - i + 1]
        P[i][K] = 1 - mpmath.fsum(a[: K - i + 1])
    return stationary_gth(P, bk)[:J]


@pytest.mark.parametrize("service", [T.Deterministic(R(1, 5)), T.Uniform(R(1, 10), R(3, 10)), T.Gamma(R(3, 2), R(1, 5))],
                         ids=["det", "uniform", "gamma"])
def test_q0_of_3_against_embedded_chain_for_non_phase_type_laws(service):
    """(3): q0 = (1 - rho_bar)/(1 - rho_bar + alpha_bar) against the embedded chain at 50 digits."""
    for lam, batch, vac in ((R(1, 2), B.Geometric(R(5, 4)), T.Exponential(R(1, 10))),
                            (R(1, 3), B.Constant(1), T.Deterministic(R(1, 5))),
                            (R(1, 4), B.FinitePMF({1: R(1, 2), 2: R(1, 2)}), T.Uniform(0, R(1, 5)))):
        model = vi.VacationQueue(lam, batch, service, vac)
        bk = mp_backend(55)
        with bk:
            q = _embedded_chain_q(model, 90, 1, bk)
            q0 = bk.num(vi.model_results(model)["q0"])
            assert abs(q[0] / q0 - 1) < mpmath.mpf(10) ** -45


def test_overload_is_refused_with_the_parameter_named():
    with pytest.raises(ParameterError, match="rho_bar = 6/5 >= 1"):
        vi.VacationQueue.from_load(R(6, 5), B.Geometric(5), T.Erlang(4, R(3, 200)), T.Exponential(R(3, 40)))


def test_every_registered_check_passes():
    results = vi.derivation().verify(50)
    failed = [r for r in results if not r.passed]
    assert not failed, [(r.name, r.detail) for r in failed]


_rationals = st.fractions(min_value=R(1, 50), max_value=3, max_denominator=50)


@settings(max_examples=25, deadline=None)
@given(load=st.fractions(min_value=R(1, 100), max_value=R(97, 100), max_denominator=100),
       bmean=st.fractions(min_value=1, max_value=10, max_denominator=10),
       smean=_rationals, vmean=_rationals, k=st.integers(1, 5))
def test_properties_over_random_laws(load, bmean, smean, vmean, k):
    model = vi.VacationQueue.from_load(load, B.Geometric(bmean), T.Erlang(k, smean), T.Exponential(vmean))
    m = vi.measures(model)
    # P_e = 1 - rho_bar; N = lambda l1 W; variance >= 0
    assert abs(m["idle_probability"] - (1 - float(load))) < 1e-12
    lam_l1 = float(model.lam * model.batch.moment(1))
    assert abs(m["mean_queue_length"] - lam_l1 * m["mean_wait"]) <= 1e-12 * m["mean_queue_length"]
    assert m["queue_length_variance"] >= 0
    assert 0 < m["q0"] <= 1
