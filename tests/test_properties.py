"""Property-based tests (hypothesis) over random valid models: probabilities in [0, 1] summing to
1, float64 versus mpmath agreement where the problem is well conditioned, Little's law and the load
balance of Theorem 1.1, monotonicity of the loss in the capacity, the hysteretic renewal identity."""

from fractions import Fraction as F

import mpmath
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qderive as qd

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_times = st.sampled_from([qd.Deterministic(F(1, 100)), qd.Exponential(F(1, 100)), qd.Erlang(3, F(1, 100)),
                          qd.Uniform(F(1, 200), F(3, 200)), qd.Coxian((150, 200), (F(1, 2),)),
                          qd.HyperExponential((F(1, 4), F(3, 4)), (F(1, 50), F(1, 150)))])
_batches = st.sampled_from([qd.Constant(1), qd.Geometric(2), qd.FinitePMF({1: F(1, 2), 3: F(1, 2)}),
                            qd.ShiftedPoisson(F(3, 2))])
_loads = st.fractions(min_value=F(1, 20), max_value=F(3), max_denominator=20)


@st.composite
def finite_queues(draw):
    policy = draw(st.sampled_from(list(qd.VacationPolicy)))
    vacation = draw(st.one_of(st.none(), _times)) if policy is qd.VacationPolicy.MULTIPLE else draw(_times)
    admission = draw(st.sampled_from(list(qd.Admission)))
    batch = draw(_batches)
    r = draw(st.integers(max(1, batch.min_size), 30))
    return qd.FiniteVacationQueue.from_load(draw(_loads), batch, draw(_times), vacation, r, admission, policy)


@SETTINGS
@given(finite_queues())
def test_finite_queue_invariants(model):
    m = model.evaluate(include=("p",))
    assert all(0 <= p <= 1 for p in m.p) and abs(sum(m.p) - 1) < 1e-12
    for key in ("loss_probability", "batch_blocking_probability", "idle_probability", "p0", "pr", "q0", "qr"):
        assert 0 <= getattr(m, key) <= 1, key
    # Little: N = throughput x W; load balance: offered (1 - loss) = carried
    assert abs(m.mean_queue_length - m.throughput * m.mean_wait) <= 1e-12 * max(m.mean_queue_length, 1e-300)
    carried = float(model.rate * model.batch.mean) * (1 - m.loss_probability)
    assert abs(carried - m.throughput) <= 1e-11 * m.throughput
    hi = model.evaluate(25)
    for key in ("loss_probability", "mean_wait", "idle_probability", "throughput"):
        ref = mpmath.mpf(getattr(hi, key))
        assert abs(getattr(m, key) - ref) <= 1e-10 * abs(ref), key


@SETTINGS
@given(finite_queues())
def test_loss_falls_with_the_capacity(model):
    losses = [model.with_capacity(r).evaluate().loss_probability for r in range(model.capacity, model.capacity + 4)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(losses, losses[1:]))


@SETTINGS
@given(n=st.integers(1, 400), load=st.fractions(min_value=F(1, 10), max_value=500, max_denominator=100))
def test_erlang_b_is_a_probability_monotone_in_servers(n, load):
    b_n = qd.ErlangB(n, load).evaluate()
    b_next = qd.ErlangB(n + 1, load).evaluate()
    assert 0 <= b_n.blocking_probability <= 1 and b_next.blocking_probability <= b_n.blocking_probability
    assert b_next.log10_blocking_probability < b_n.log10_blocking_probability <= 0
    ref = qd.ErlangB(n, load).evaluate(40).carried_load
    assert abs(b_n.carried_load - ref) <= 1e-12 * ref
