"""Sizing in the other direction: the largest load for a capacity, the smallest discard threshold R.

* ``size vacation-finite --capacity R --target-loss EPS`` (no ``--load``): the answer is checked
  with the CTMC oracle built from the model definition (:mod:`qderive.numeric.oracles.vacation`)
  at 50 digits -- the loss at the returned load meets the target, the loss at ``load_above``
  (2^-40 higher) does not; the load -> 0 floor against the oracle at a load of 1e-9 and, for
  geometric batches, against the closed form P(X > m) = q^m (memoryless: E (X - m)^+ = P(X > m) l_1).
* ``size hysteretic --thresholds L,H --discard-bound P``: against a brute-force scan over R of
  the CTMC oracle of the process (exponential service, :func:`qderive.numeric.oracles.hysteretic.process`)
  at 50 digits: the answer is the smallest R >= H + 2 from which every scanned R meets the bound.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction as F
from functools import lru_cache

import mpmath
import pytest

from qderive.numeric.backend import mp_context
from qderive.numeric.engines import hysteretic as EH
from qderive.numeric.engines import vacation as EV
from qderive.numeric.oracles import hysteretic as OH
from qderive.numeric.oracles import vacation as OV
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws import Exponential
from qderive.symbolic.models.hysteretic import HystereticModel
from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy

from conftest import cli

# ------------------------------------------------------------------------------------------
# the largest load for a capacity
# ------------------------------------------------------------------------------------------

LAWS = {"batch": Geometric(2), "service": Exponential(1), "vacation": Exponential(2)}
VAC = ["--batch", "geometric:mean=2", "--service", "exp:mean=1", "--vacation", "exp:mean=2", "--capacity", "3"]


def _oracle_loss(load, capacity=3, vacation=LAWS["vacation"], admission=Admission.PARTIAL,
                 policy=VacationPolicy.MULTIPLE):
    model = FiniteVacationQueue.from_load(F(load), LAWS["batch"], LAWS["service"], vacation, capacity, admission,
                                          policy)
    return OV.solve(model, mp_context(50)).loss


@pytest.mark.parametrize("target", [F(3, 10), F(13, 100)])
def test_largest_load_against_the_oracle(target):
    """The loss at ``load`` meets the target and the loss at ``load_above`` does not (oracle, 50 digits); the
    bracket is at most 1e-6 wide (relative: bisection to 2^-40, or until float64 cannot decide the midpoint).
    0.13 is just above the floor 1/8: a load near 0."""
    out = EV.largest_load({**LAWS, "capacity": 3}, target)
    assert _oracle_loss(out["load"]) <= mpmath.mpf(target.numerator) / target.denominator
    assert _oracle_loss(out["load_above"]) > mpmath.mpf(target.numerator) / target.denominator
    assert 0 < out["load_above"] - out["load"] <= 1e-6 * out["load"]
    assert out["loss_floor"] == 1 / 8


@pytest.mark.parametrize("vacation, policy, admission, m", [
    (LAWS["vacation"], VacationPolicy.MULTIPLE, Admission.PARTIAL, 3),  # on vacation: the batch finds r places
    (LAWS["vacation"], VacationPolicy.SINGLE, Admission.PARTIAL, 4),    # idle: one served at once, r + 1
    (None, VacationPolicy.MULTIPLE, Admission.PARTIAL, 4),
    (LAWS["vacation"], VacationPolicy.MULTIPLE, Admission.WHOLE, 3),
])
def test_loss_floor_is_the_small_load_limit(vacation, policy, admission, m):
    """The exact floor against the oracle at load 1e-9 (the loss is floor + O(load): tolerance 1e-7) and
    against the geometric closed forms: (1/2)^m partial, E X 1{X > m} / l_1 = (1/2)^m (m + 2) / 2 whole."""
    model = FiniteVacationQueue.from_load(1, LAWS["batch"], LAWS["service"], vacation, 3, admission, policy)
    floor = EV.loss_floor(model)
    closed = F(1, 2**m) if admission is Admission.PARTIAL else F(1, 2**m) * (m + 2) / 2
    assert floor == closed
    small = _oracle_loss(F(1, 10**9), vacation=vacation, admission=admission, policy=policy)
    assert abs(small - mpmath.mpf(floor.numerator) / floor.denominator) <= 1e-7


def test_cli_largest_load_and_the_floor():
    code, out, _ = cli(["size", "vacation-finite", *VAC, "--target-loss", "0.3", "--json"])
    got = json.loads(out)
    assert code == 0 and set(got) >= {"load", "loss_probability", "load_above", "loss_floor"}
    assert got["loss_probability"] <= 0.3 < got["loss_probability_above"]
    # below the floor: exit 2, one line naming the floor
    code, _, err = cli(["size", "vacation-finite", *VAC, "--target-loss", "0.1", "--json"])
    assert code == 2 and err.count("\n") == 1 and "floor 0.125" in err
    # both directions at once, or neither: one line
    code, _, err = cli(["size", "vacation-finite", *VAC, "--load", "0.5", "--target-loss", "0.3"])
    assert code == 2 and "not both" in err and err.count("\n") == 1
    code, _, err = cli(["size", "vacation-finite", *VAC[:-2], "--target-loss", "0.3"])
    assert code == 2 and "--capacity" in err and err.count("\n") == 1
    # the capacity direction is unchanged: smallest r at load 0.5 meets the target, r - 1 does not (oracle)
    code, out, _ = cli(["size", "vacation-finite", *VAC[:-2], "--load", "0.5", "--target-loss", "0.2", "--json"])
    r = json.loads(out)["capacity"]
    assert _oracle_loss(F(1, 2), r) <= 0.2 < _oracle_loss(F(1, 2), r - 1)


# ------------------------------------------------------------------------------------------
# the smallest discard threshold
# ------------------------------------------------------------------------------------------

HYST = HystereticModel.from_load(F(6, 5), service=Exponential(1), batch=Geometric(2), L=2, H=4, R=6,
                                 overload_factor=F(1, 2))
SCAN = range(6, 26)


@lru_cache(maxsize=None)
def _oracle_discard(R):
    ctx = mp_context(50)
    with ctx:
        return OH.process(replace(HYST, R=R), ctx).measures["p_discard"]


@pytest.mark.parametrize("bound", [F(8, 100), F(2, 100), F(11, 100)])
def test_smallest_threshold_against_an_oracle_scan(bound):
    """0.08 is met at R = 6 on the rising side, then not until past the maximum (R = 8): the answer is the first R
    from which every scanned R meets it; 0.11 lies above the maximum: R = H + 2."""
    got = EH.smallest_threshold(HYST, bound)
    eps = mpmath.mpf(bound.numerator) / bound.denominator
    expected = min(R for R in SCAN if all(_oracle_discard(x) <= eps for x in SCAN if x >= R))
    assert got["R"] == expected
    if expected > 6:
        assert got["p_discard_one_fewer"] == pytest.approx(float(_oracle_discard(expected - 1)), rel=1e-12)
    assert got["p_discard"] == pytest.approx(float(_oracle_discard(expected)), rel=1e-12)
    assert got["peak_R"] == max(SCAN, key=_oracle_discard)


def test_cli_size_hysteretic():
    args = ["size", "hysteretic", "--service", "exp:mean=1", "--batch", "geometric:mean=2", "--load", "1.2",
            "--thresholds", "2,4", "--discard-bound", "0.08", "--json"]
    code, out, _ = cli(args)
    assert code == 0 and json.loads(out)["R"] == 12 and "no discard state" in json.loads(out)["note"]
    # rho_1 >= 1: P(S_2) does not fall; exit 2 with one line that says why
    code, _, err = cli(args[:-3] + ["--overload-factor", "1", "--discard-bound", "0.01", "--max-threshold", "40"])
    assert code == 2 and err.count("\n") == 1 and "rho_1" in err and "--max-threshold" in err
