"""The comparison of the finite room's certified brackets with a seeded simulation, shared by the tests of the
rounded laws (``tests/test_wait_lattice_finite_service.py``: a service rounded to a lattice, (F5)/(F6);
``tests/test_wait_finite_vacation_laws.py``: a vacation bounded on the services' lattice, (F7)), written once."""

from __future__ import annotations

from fractions import Fraction as F

from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.simulation.vacation import simulate
from qderive.symbolic.limits import limits


def assert_brackets_overlap_the_simulation(model, levels: int):
    """P(W > 1/2), P(W > 2) and P(T > 2) of ``model`` with ``levels`` lattice levels: the estimate lies inside its
    certified bracket, and the bracket overlaps the simulation's 99 % interval (8 replications of 40 000 customers,
    seed 11): a bracket that missed the true tail would miss the interval with probability about 1 %."""
    assert response_laws.supports(model, frozenset({"wait_tail", "sojourn_tail"})) is None
    laws = response_laws(model)
    ts = ["1/2", "2"]
    with limits(lattice_levels=levels):
        got = laws["wait"].tails([F(t) for t in ts], None)[0]
        brackets = [laws["wait"].bracket(F(t)) for t in ts]
        soj = laws["sojourn"].tails([F(2)], None)[0][0]
        soj_bracket = laws["sojourn"].bracket(F(2))
    sim = simulate(model, 40_000, 8, seed=11, quiet=True, wait_tail=ts, sojourn_tail=["2"])
    pairs = [(sim["wait_tail"][t], v, b) for t, v, b in zip(ts, got, brackets)]
    for interval, v, (lo, hi, _) in pairs + [(sim["sojourn_tail"]["2"], soj, soj_bracket)]:
        a, b = interval.interval(0.99)
        assert lo <= v <= hi and a <= hi and lo <= b, (lo, v, hi, a, b)
