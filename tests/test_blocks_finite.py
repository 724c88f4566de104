"""The finite room with composed blocks (numeric/engines/blocks_finite.py) against independent references: the
thesis's finite-room kernel for today's rules, the block chain (a CTMC built from the stages' definitions, solved
by GTH) for every composed variant, and its own 30-digit run for float64."""

import time
from fractions import Fraction as F

import mpmath
import pytest
from own_rules import AtMostJ
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.blocks_finite import finite_measures
from qderive.numeric.engines.vacation import FiniteEngine, FiniteSweep, size
from qderive.numeric.oracles.blocks import chain_measures
from qderive.symbolic.batches import Constant, FinitePMF
from qderive.symbolic.batches.geometric import Geometric
from qderive.symbolic.blocks import Setup
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws.gamma import Erlang, Exponential
from qderive.symbolic.models.vacation import (
    Admission,
    FiniteVacationQueue,
    SizeRequest,
    VacationPolicy,
)

KEYS = ("loss_probability", "batch_blocking_probability", "idle_probability", "mean_queue_length", "mean_wait",
        "mean_number_in_system", "throughput", "p0", "pr", "q0", "qr")
MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE


def _worst(got, want):
    """The largest absolute difference over the measures and the law p (every value is a probability or a
    moderate mean: absolute differences are the digits that matter)."""
    diffs = [abs(got[k] - want[k]) for k in KEYS]
    diffs += [abs(a - b) for a, b in zip(got["p"], want["p"], strict=True)]
    return max(diffs)


@pytest.mark.parametrize("admission", list(Admission))
@pytest.mark.parametrize("policy", ["none", "multiple", "single"])
@pytest.mark.parametrize("batch, r", [(Geometric(2), 1), (Geometric(2), 6), (FinitePMF({1: F(1, 2), 3: F(1, 2)}), 4)])
def test_todays_rules_are_the_finite_kernel(policy, batch, r, admission):
    # the blocks' departure chain with the built-in rules against the thesis's kernel (Statement 1, (9)-(12), and
    # the whole-admission room process: the start period written for today's rules, not from the blocks): 30
    # digits, agreement to 1e-25 (the sums are positive; the measured worst is 1e-30)
    model = FiniteVacationQueue.from_load(F(3, 4), batch, Erlang(2, F(1, 2)),
                                          None if policy == "none" else Exponential(2), r, admission,
                                          vacation_policy=SINGLE if policy == "single" else MULTIPLE)
    ctx = mp_context(30)
    with ctx:
        assert _worst(finite_measures(model, ctx), FiniteSweep(model, ctx).at(r)) <= mpmath.mpf(10) ** -25


BASE = dict(rate=F(3, 4), batch=Geometric(2), service=Exponential(1))
COMPOSED = [
    dict(vacation=Exponential(2), capacity=3, start_threshold=3),  # r = N
    dict(vacation=Exponential(2), capacity=4, setup=Exponential(F(1, 3)), close_down=Exponential(F(1, 4))),
    dict(vacation=Erlang(2, F(1, 3)), vacation_policy=SINGLE, capacity=2, start_threshold=2,
         setup=Erlang(2, F(1, 2)), close_down=Exponential(1)),  # r = N
    dict(vacation=Erlang(2, F(1, 3)), vacation_policy=SINGLE, capacity=4, start_threshold=3),
    dict(vacation=None, capacity=4, start_threshold=3, setup=Erlang(2, F(1, 2))),
    dict(vacation=None, capacity=1, close_down=Exponential(1)),
    dict(vacation=None, capacity=5, start_threshold=2, close_down=Erlang(2, F(1, 2)), rate=F(2)),  # overload
]


@pytest.mark.parametrize("admission", list(Admission))
@pytest.mark.parametrize("fields", COMPOSED, ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()
                                                                     if k in ("capacity", "start_threshold")))
def test_composed_variants_equal_their_chain(fields, admission):
    # the chain is built from the stages' definitions (a CTMC over phase-type laws, GTH at 40 digits), not from the
    # departure chain: every measure and the law p to 1e-20 (measured: 1e-30)
    model = FiniteVacationQueue(**{**BASE, **fields}, admission=admission)
    want = chain_measures(model, digits=30)
    ctx = mp_context(30)
    with ctx:
        assert _worst(finite_measures(model, ctx), want) <= mpmath.mpf(10) ** -20



@pytest.mark.parametrize("fields", [
    dict(vacation=Exponential(2), capacity=4, start_threshold=4, setup=Exponential(F(1, 3))),
    dict(vacation=Erlang(2, F(1, 3)), vacation_policy=SINGLE, capacity=3, start_threshold=2,
         close_down=Exponential(1)),
    dict(vacation=None, capacity=5, start_threshold=5, close_down=Erlang(2, F(1, 2))),
], ids=["multiple-N4-setup", "single-N2-close-down", "none-N5-close-down"])
def test_whole_batches_that_do_not_fit_equal_the_chain(fields):
    # batches of 1 or 3 under whole admission: a batch of 3 is refused near the top (in a close-down it does not
    # end the period, in a wait it does not count towards N): the chain to 1e-20
    model = FiniteVacationQueue(**{**BASE, "batch": FinitePMF({1: F(1, 2), 3: F(1, 2)}), **fields},
                                admission=Admission.WHOLE)
    want = chain_measures(model, digits=30)
    ctx = mp_context(30)
    with ctx:
        assert _worst(finite_measures(model, ctx), want) <= mpmath.mpf(10) ** -20


def test_a_threshold_whole_admission_can_never_meet_is_refused():
    # batches of 2, N = 3, r = 3, no vacation, a setup: from 2 present no batch fits the r - 2 = 1 place
    model = FiniteVacationQueue(F(1), Constant(2), Exponential(1), None, 3, Admission.WHOLE, start_threshold=3,
                                setup=Exponential(1))
    with pytest.raises(ParameterError, match="start-threshold"):
        finite_measures(model, FLOAT64)


@pytest.mark.parametrize("admission", list(Admission))
def test_a_rule_of_ones_own_equals_its_chain(admission):
    # at most two vacations (a bounded ``repeat``: its last period's ends are epochs only when the server does not
    # then wait), then waiting for N = 3, and a setup, in a room of 4
    vac, setup = Erlang(2, F(1, 2)), Exponential(F(1, 4))
    model = FiniteVacationQueue(F(1), Geometric(2), Exponential(F(1, 2)), vac, 4, admission, MULTIPLE, 3, setup)
    blocks = (AtMostJ(3, vac, 2), Setup(setup))
    want = chain_measures(model, digits=30, blocks=blocks)
    ctx = mp_context(30)
    with ctx:
        mine = finite_measures(model, ctx, blocks)
        assert _worst(mine, want) <= mpmath.mpf(10) ** -20
        assert abs(mine["mean_wait"] - finite_measures(model, ctx)["mean_wait"]) > 1e-3  # it is another rule


@pytest.mark.parametrize("admission", list(Admission))
@pytest.mark.parametrize("load", [F(1, 2), F(2)])
def test_float64_agrees_with_30_digits(load, admission):
    # positive sums throughout: float64 to 1e-12 relative at r = 40 (whole: 12, its room matrices in mpmath are
    # dense) (measured: a few 1e-15), in overload too
    r = 40 if admission is Admission.PARTIAL else 12
    model = FiniteVacationQueue.from_load(load, Geometric(3), Erlang(2, F(1, 2)), Exponential(2), r, admission,
                                          vacation_policy=SINGLE, start_threshold=4, setup=Exponential(F(1, 2)),
                                          close_down=Exponential(F(1, 3)))
    ctx = mp_context(30)
    with ctx:
        want = finite_measures(model, ctx)
    with FLOAT64:
        got = finite_measures(model, FLOAT64)
    for key in KEYS:
        assert abs(got[key] - float(want[key])) <= 1e-12 * abs(float(want[key])), key


def test_a_large_room_is_quick_in_float64():
    # r = 200 with every block: well under a second (measured: a few ms), and today's rules at r = 200 through the
    # blocks' departure chain equal the thesis's kernel to 1e-12 relative (two float64 routes)
    model = FiniteVacationQueue.from_load(F(9, 10), Geometric(5), Erlang(4, F(3, 200)), Erlang(4, F(3, 40)), 200,
                                          start_threshold=10, setup=Exponential(F(1, 100)),
                                          close_down=Exponential(F(1, 200)))
    start = time.perf_counter()
    with FLOAT64:
        got = finite_measures(model, FLOAT64)
    assert time.perf_counter() - start < 2
    assert abs(sum(got["p"]) - 1) < 1e-12 and 0 < got["loss_probability"] < 1
    plain = FiniteVacationQueue.from_load(F(9, 10), Geometric(5), Erlang(4, F(3, 200)), Erlang(4, F(3, 40)), 200)
    with FLOAT64:
        mine, kernel = finite_measures(plain, FLOAT64), FiniteSweep(plain, FLOAT64).at(200)
    for key in KEYS:
        assert abs(mine[key] - kernel[key]) <= 1e-12 * abs(kernel[key]), key


# -- the engine, the command line's shapes and the refusals ---------------------------------------------------


@pytest.mark.parametrize("admission", list(Admission))
def test_the_engine_evaluates_the_blocks(admission):
    # through the precision policy (30 digits, guard digits, confirmed), against the chain
    model = FiniteVacationQueue(**dict(BASE, vacation=Exponential(2), capacity=4, start_threshold=2,
                                       setup=Exponential(F(1, 3))), admission=admission)
    assert FiniteEngine.supports(model) is None
    got = model.evaluate(30, include=("p",))
    want = chain_measures(model, digits=30)
    for key in KEYS:
        assert abs(getattr(got, key) - want[key]) <= mpmath.mpf(10) ** -20, key
    assert max(abs(a - b) for a, b in zip(got.p, want["p"], strict=True)) <= mpmath.mpf(10) ** -20


def test_a_room_without_a_place_for_the_threshold_batch_is_refused():
    # no vacation, a setup, r = 0: the batch that meets N = 1 finds r - 0 = 0 places (it does not start service)
    model = FiniteVacationQueue(F(1), Constant(1), Exponential(1), None, 0, setup=Exponential(1))
    with pytest.raises(ParameterError, match="capacity"):
        finite_measures(model, FLOAT64)


def test_size_finds_the_smallest_room_with_blocks():
    values = dict(rate=F(1, 4), batch=Geometric(2), service=Exponential(1), vacation=Exponential(2),
                  start_threshold=3, setup=Exponential(F(1, 2)))
    out = size(values, SizeRequest(F(1, 1000)), progress=False)
    r = out["capacity"]

    def loss(c):
        return FiniteVacationQueue(**values, capacity=c).evaluate().loss_probability

    assert r >= 3 and loss(r) <= 1e-3 < loss(r - 1)
    with pytest.raises(ParameterError, match="start-threshold"):
        size({**values, "rate": None, "capacity": 5}, SizeRequest(F(1, 1000)), progress=False)


def test_size_under_whole_admission_starts_where_the_threshold_can_be_met():
    # batches of 2, N = 3, multiple vacations: with r = 3 a vacation that ends with 2 present leaves 1 place, no
    # batch fits and N is never met (refused); the search starts at r = 4 instead of failing, and a loose target is
    # met there
    values = dict(rate=F(1, 4), batch=Constant(2), service=Exponential(1), vacation=Exponential(2),
                  start_threshold=3, admission=Admission.WHOLE)
    with pytest.raises(ParameterError, match="start-threshold"):
        FiniteVacationQueue(**values, capacity=3).evaluate()
    out = size(values, SizeRequest(F(9, 10)), progress=False)
    assert out["capacity"] == 4 and out["loss_probability"] <= 0.9
