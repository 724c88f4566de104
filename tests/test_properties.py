"""Property-based tests (hypothesis) over random valid models of every kind.

Invariants checked: probabilities in [0, 1] summing to 1, the renewal identity of the
hysteretic model, monotonicity of Erlang B, float64 versus mpmath agreement where the
problem is well conditioned. (The vacation queues have their own property tests in
tests/test_vacation_infinite.py and tests/test_vacation_finite.py.)
"""

from fractions import Fraction as F

import mpmath
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qderive.numeric import hysteretic as nh
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.erlang import carried_load, erlang_b, erlang_b_log
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_services = st.sampled_from([T.Deterministic(F(1, 100)), T.Exponential(F(1, 100)), T.Erlang(3, F(1, 100)),
                             T.Uniform(F(1, 200), F(3, 200))])
_batches = st.sampled_from([B.Constant(1), B.Geometric(2), B.FinitePMF({1: F(1, 2), 3: F(1, 2)})])


@st.composite
def hysteretic_models(draw):
    L = draw(st.integers(1, 6))
    H = draw(st.integers(L + 1, L + 6))
    R = draw(st.integers(H + 2, H + 8))
    load = draw(st.fractions(min_value=F(11, 10), max_value=F(5, 2), max_denominator=20))
    factor = draw(st.fractions(min_value=F(1, 10), max_value=F(9, 10), max_denominator=10))
    batch = draw(_batches)
    if not batch.mean < R:
        batch = B.Constant(1)
    return nh.HystereticModel.from_load(batch, draw(_services), load, factor, L, H, R)


@SETTINGS
@given(hysteretic_models())
def test_hysteretic_probabilities_and_renewal_identity(model):
    m = nh.evaluate(model)
    probs = (m.p_normal, m.p_overload, m.p_discard)
    assert all(-1e-15 <= p <= 1 + 1e-15 for p in probs)
    assert abs(sum(probs) - 1) < 1e-12
    # E tau = E tau_0 + E tau_12 = C / (q_{L,1} a_0^{(1)}): two different computations
    assert abs(m.mean_cycle_time - m.renewal_cycle_time) <= 1e-10 * m.renewal_cycle_time
    assert abs(m.mean_normal_time + m.mean_return_time - m.mean_cycle_time) <= 1e-12 * m.mean_cycle_time
    assert 0 <= m.loss_probability <= 1


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hysteretic_models())
def test_hysteretic_float64_agrees_with_mpmath_when_well_conditioned(model):
    f64 = nh.evaluate(model)
    mp = nh.evaluate(model, 30)
    for key in ("p_normal", "p_overload", "mean_normal_time", "mean_return_time", "mean_cycle_time"):
        ref = mpmath.mpf(getattr(mp, key))
        # loads >= 1.1 keep kappa(I - P0) small (spec/chapter3.md section 9): 1e-10 relative
        assert abs(getattr(f64, key) - ref) <= 1e-10 * abs(ref)


@SETTINGS
@given(n=st.integers(1, 400), load=st.fractions(min_value=F(1, 10), max_value=500, max_denominator=100))
def test_erlang_b_is_a_probability_monotone_in_servers(n, load):
    rho = sp.Rational(load.numerator, load.denominator)
    b_n = erlang_b(n, rho, FLOAT64)
    b_next = erlang_b(n + 1, rho, FLOAT64)
    assert 0 <= b_n <= 1 and b_next <= b_n  # may underflow to 0 below ~1e-308 ...
    # ... but its logarithm stays finite and strictly decreasing in n
    assert erlang_b_log(n + 1, rho, FLOAT64) < erlang_b_log(n, rho, FLOAT64) <= 0
    # carried load = rho (1 - B) without subtraction; float64 vs 40 digits
    bk = mp_backend(40)
    with bk:
        ref = carried_load(n, rho, bk)
        assert abs(carried_load(n, rho, FLOAT64) - ref) <= 1e-12 * ref
