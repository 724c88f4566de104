"""``--distribution`` for every model (issue 14, item 5), each law against a computation made another way.

Oracles (none shares code with the engine that is checked, except the one GTH):

* hysteretic: the embedded chain built state by state from the model definition (Panjer counts) and,
  for exponential service, the CTMC over (count, mode) (``numeric/oracles/hysteretic.py``), 60 digits;
* mm1-hysteretic: the birth-death CTMC of ``docs/theory/other-models.md`` B (``oracles.hysteretic.mm1``);
* two-flow, two-flow-hysteretic: the chains restated on tuples of customers
  (``numeric/oracles/two_flow.py``), solved exactly in rationals;
* vacation-infinite: the CTMC of the finite queue (``numeric/oracles/vacation.py``) with a room far
  beyond the mass of the law, exactly; and the closed-form mean (7) against sum j p_j;
* vacation-finite-r: N^r and W^r exactly against the CTMC (W from Little with the CTMC's flow of service
  completions), and against the numeric engine of vacation-finite at several r (40 digits).

Tolerances: results asked at 30 digits must agree with 60-digit or exact oracles to 28 digits (two for the
last place); float64 sums to 1 within 1e-12 (a sum of ~100 positive terms: ~100 eps).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest

from conftest import cli
from qderive.numeric.backend import mp_context
from qderive.numeric.oracles import hysteretic as OH
from qderive.numeric.oracles import two_flow as OT
from qderive.numeric.oracles.vacation import solve as vacation_oracle
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws.gamma import Exponential
from qderive.symbolic.models.hysteretic import HystereticModel, MM1HystereticModel, Semantics
from qderive.symbolic.models.two_flow import TwoFlowHystereticModel, TwoFlowModel
from qderive.symbolic.models.vacation import FiniteVacationQueue, VacationQueue
from qderive.symbolic.models.vacation_closed import ClosedFormVacationQueue

DIGITS = 30
TIGHT = mpmath.mpf(10) ** -(DIGITS - 2)


@pytest.fixture(autouse=True)
def _precision():
    """Sums and ratios of the checks at 80 digits (scoped; conftest restores mpmath's precision anyway)."""
    with mpmath.workdps(80):
        yield


def num(x):
    """An mpf of a result or an exact oracle value (call at the working precision)."""
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, F) else mpmath.mpf(x)


def rel(a, b):
    a, b = num(a), num(b)
    if a == b:
        return 0
    return abs(a - b) / max(abs(a), abs(b))


def close(a, b, tol=TIGHT):
    """Relative agreement to ``tol``, or both below 1e-35 in absolute value (exact zeros of absent states)."""
    with mpmath.workdps(80):
        return rel(a, b) < tol or abs(num(a) - num(b)) < mpmath.mpf(10) ** -(DIGITS + 5)


def laws(record_cls):
    return tuple(f.name for f, m in record_cls.measure_fields() if m.optional)


# -- hysteretic M[X]|G|1|(L,H)|(H,R) -------------------------------------------------------------


def _hysteretic(**kw):
    return HystereticModel.from_load(F(3, 2), service=Exponential(F(1, 2)), batch=Geometric(2), L=2, H=4, R=7,
                                     **kw)


def test_hysteretic_embedded_and_time_laws_equal_the_oracles():
    model = _hysteretic()
    got = model.evaluate(DIGITS, include=laws(type(model).measures))
    with mp_context(60) as ctx:
        emb = OH.embedded(model, ctx)
        proc = OH.process(model, ctx)
    q, p, number = got["embedded_law"], got["time_law"], got["number_law"]
    assert [len(q), len(q[0]), len(p), len(p[0]), len(number)] == [3, model.R, 3, model.R + 1, model.R + 1]
    for s in range(3):
        for j in range(model.R):
            assert close(q[s][j], emb.q.get((j, s), 0)), (j, s)
        for j in range(model.R + 1):
            assert close(p[s][j], proc.pi.get((j, s), 0)), (j, s)
    for j in range(model.R + 1):
        assert close(number[j], sum(proc.pi.get((j, s), 0) for s in range(3)))
    # the mode probabilities (18), (19) are the column sums of (17)
    for s, key in enumerate(("p_normal", "p_overload", "p_discard")):
        assert close(mpmath.fsum(p[s]), got[key])


def test_hysteretic_label_law_and_float64():
    """Label semantics: the columns of (17) are the label probabilities of the CTMC oracle; float64 sums to 1."""
    model = _hysteretic(semantics=Semantics.LABEL)
    got = model.evaluate(DIGITS, include=("time_law",))
    with mp_context(60) as ctx:
        lab = OH.process(model, ctx).extra["label"]
    for s, key in enumerate(("p_normal", "p_overload", "p_discard")):
        assert close(mpmath.fsum(got["time_law"][s]), lab[key])
    plain = _hysteretic().evaluate(include=("number_law", "embedded_law"))
    assert abs(sum(plain["number_law"]) - 1) < 1e-12
    assert abs(sum(map(sum, plain["embedded_law"])) - 1) < 1e-12
    assert "number_law" not in _hysteretic().evaluate().as_dict()  # optional: only on request


def test_mm1_hysteretic_joint_law_equals_the_ctmc():
    model = MM1HystereticModel(F(6, 5), F(3, 5), 1, 3, 6, 9)
    got = model.evaluate(DIGITS, include=("time_law", "number_law"))
    with mp_context(60) as ctx:
        pi = OH.mm1(model, ctx).pi
    for s in range(3):
        for n in range(model.R + 1):
            assert close(got["time_law"][s][n], pi.get((n, s), 0)), (n, s)
    assert close(mpmath.fsum(got["number_law"]), 1)


# -- two-class chains ---------------------------------------------------------------------------------


def _aggregate(chain, pi, key):
    out = {}
    for state, x in zip(chain.states, pi):
        k = key(state)
        out[k] = out.get(k, 0) + x
    return out


def test_two_flow_hysteretic_joint_law_equals_the_oracle_chain():
    model = TwoFlowHystereticModel(F(1, 2), F(1, 4), F(1, 4), F(1, 8), 2, 4, 6, service_rates=1)
    got = model.evaluate(DIGITS, include=("joint_law", "number_law"))
    chain = OT.hysteretic_chain(model)
    pi = chain.stationary_exact()

    def key(state):
        s, w1, w2, srv = state
        return s, len(w1) + (srv is not None and srv[0] == 1), len(w2) + (srv is not None and srv[0] == 2)

    ref = _aggregate(chain, pi, key)
    joint = got["joint_law"]
    assert len(joint) == 3 and all(len(b) == model.R + 1 and len(b[0]) == model.R + 1 for b in joint)
    for s in range(3):
        for i in range(model.R + 1):
            for j in range(model.R + 1):
                assert close(joint[s][i][j], ref.get((s, i, j), 0)), (s, i, j)
    # the mean numbers of the record from the law
    assert close(sum(i * joint[s][i][j] for s in range(3) for i in range(7) for j in range(7)),
                 got["mean_number_flow1"])
    assert close(mpmath.fsum(got["number_law"]), 1)


def test_two_flow_joint_law_equals_the_oracle_chain():
    model = TwoFlowModel(F(3, 5), 2, 1, 5, 2, 4, 5)
    got = model.evaluate(DIGITS, include=("joint_law", "number_law"))
    chain = OT.two_flow_chain(model)
    pi = chain.stationary_exact()
    ref = _aggregate(chain, pi, lambda st: (st[0], sum(c == 1 for c, _ in st[1]), sum(c == 2 for c, _ in st[1])))
    joint = got["joint_law"]
    top = len(joint[0]) - 1
    assert top == min(model.R, model.H + 1)
    for (m, i, j), x in ref.items():
        assert close(joint[m][i][j], x), (m, i, j)
    assert close(mpmath.fsum(x for b in joint for row in b for x in row), 1)
    assert close(sum(n * x for n, x in enumerate(got["number_law"])), got["mean_number"])


# -- vacation-infinite ------------------------------------------------------------------------------


@pytest.mark.slow  # a deep chain (2 s of CPU); the loop keeps the other models' laws against their chains
def test_vacation_infinite_first_terms_equal_a_deep_ctmc():
    """p_j of the infinite room vs the CTMC (60 digits) with a room of 130 places, whose mass at the top is
    below 1e-35 (checked), so its law differs from the infinite room's by less than that; sum j p_j vs (7)."""
    model = VacationQueue.from_load(F(1, 4), Geometric(F(3, 2)), Exponential(F(1, 10)), Exponential(F(1, 5)))
    got = model.evaluate(DIGITS, include=("p",))
    p = got["p"]
    assert len(p) >= 16 and (len(p) & (len(p) - 1)) == 0  # a power of two
    assert any(n.startswith(f"p: the first {len(p)} terms") for n in got.notes)
    deep = FiniteVacationQueue(model.rate, model.batch, model.service, model.vacation, 130)
    o = vacation_oracle(deep, mp_context(60))
    assert o.truncation < mpmath.mpf(10) ** -35
    with mpmath.workdps(60):
        for j in range(20):
            assert close(p[j], o.p[j]), j
        assert 1 - mpmath.fsum(p) < mpmath.mpf(10) ** -DIGITS
        assert rel(mpmath.fsum(j * x for j, x in enumerate(p)), got["mean_queue_length"]) < mpmath.mpf(10) ** -25
    plain = model.evaluate(include=("p",))
    assert 0 <= 1 - sum(plain["p"]) <= 2.3e-10


# -- vacation-finite-r: N^r, W^r ----------------------------------------------------------------------


@pytest.mark.parametrize("load", [F(3, 5), F(1), F(5, 2)])
def test_vacation_finite_r_mean_queue_and_wait(load):
    for cap in (1, 2, 3):
        model = ClosedFormVacationQueue.from_load(load, 3, F(1, 10), F(1, 3), cap)
        got = model.evaluate(DIGITS)
        o = vacation_oracle(model.queue)  # exact rationals
        assert close(got["mean_queue_length"], o.mean_queue)
        w = o.mean_queue / o.throughput  # Little with the CTMC's service-completion flow
        assert close(got["mean_wait"], w), cap
        # Little with the admitted rate lambda l_1 (1 - loss)
        with mpmath.workdps(60):
            admitted = num(model.rate * model.batch_mean) * (1 - num(got["loss_probability"]))
            assert close(got["mean_wait"], num(got["mean_queue_length"]) / admitted)
    for cap in (5, 40):
        model = ClosedFormVacationQueue.from_load(load, 3, F(1, 10), F(1, 3), cap)
        general = model.queue.evaluate(DIGITS)
        got = model.evaluate(DIGITS)
        for key in ("mean_queue_length", "mean_wait"):
            assert close(got[key], general[key]), (cap, key)


def test_cli_distribution_shapes():
    code, out, err = cli(["eval", "hysteretic", "--service", "exp:mean=0.5", "--batch", "geometric:mean=2",
                          "--thresholds", "2,4,7", "--load", "1.5", "--distribution", "--json"])
    assert code == 0, err
    m = json.loads(out)["measures"]
    assert [len(m["embedded_law"]), len(m["embedded_law"][0]), len(m["time_law"][0]), len(m["number_law"])] == \
        [3, 7, 8, 8]
    code, out, err = cli(["eval", "vacation-finite-r", "--batch-mean", "3", "--service-mean", "0.1",
                          "--vacation-mean", "1/3", "--load", "0.6", "--capacity", "4", "--json"])
    assert code == 0, err
    m = json.loads(out)["measures"]
    assert m["mean_wait"] > 0 and m["mean_queue_length"] > 0
    code, out, _ = cli(["eval", "two-flow", "--help"])
    assert "--distribution" in out and "joint_law" in out


# -- erlang-b: the M/M/n/n law (1) ------------------------------------------------------------------


@pytest.mark.parametrize("n, load", [(10, F(6)), (4, F(1000)), (30, F(1, 2))])
def test_erlang_b_law_equals_the_direct_sum(n, load):
    from qderive.symbolic.models.erlang_b import ErlangB

    got = ErlangB(n, load).evaluate(DIGITS, include=("p",))
    terms = [F(1)]
    for k in range(1, n + 1):
        terms.append(terms[-1] * load / k)
    total = sum(terms)
    assert len(got["p"]) == n + 1
    for k in range(n + 1):
        assert close(got["p"][k], terms[k] / total), k
    assert close(sum(k * num(x) for k, x in enumerate(got["p"])), got["mean_busy_windows"])
