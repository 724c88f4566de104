"""The two-stage rule of ``verify --simulate`` (derivations/smoke.py): a miss at the first seed is followed
by one run at the declared second seed, and the check fails only if both miss.

The simulator here is a stand-in whose estimate depends on the seed, so each branch of the rule is
reached on purpose: the statistics of the real simulators are checked in their own test files.
"""

from types import SimpleNamespace

from qderive.derivations import smoke
from qderive.numeric.simulation.stats import Estimate


class _Record:
    def __init__(self, value):
        self.value = value

    def as_dict(self):
        return {"goodput": self.value}


def _model(analytic: float, simulated_by_seed: dict):
    """A model whose analytic goodput is ``analytic`` and whose simulator returns, for each seed, an
    estimate with standard error 0.01 (t(9) 99 % half-width 0.0325) centred on ``simulated_by_seed[seed]``."""
    calls = []

    def simulate(model, customers, replications, seed, quiet=True, **response):
        calls.append(seed)
        return SimpleNamespace(measures={"goodput": Estimate(simulated_by_seed[seed], 0.01, 9)})

    cls = type("Fake", (), {"name": "fake", "evaluate": lambda self, **kw: _Record(analytic),
                            "__str__": lambda self: "fake()"})
    return cls(), simulate, calls


def test_a_hit_at_the_first_seed_runs_once():
    model, simulate, calls = _model(1.0, {smoke.SEED: 1.001})
    passed, _, detail = smoke.simulation_check(model, simulator=simulate).run(50)
    assert passed and calls == [smoke.SEED] and "seed" in detail


def test_a_miss_then_a_hit_passes_and_names_both_runs():
    model, simulate, calls = _model(1.0, {smoke.SEED: 1.2, smoke.SEED2: 0.999})
    passed, _, detail = smoke.simulation_check(model, simulator=simulate).run(50)
    assert passed and calls == [smoke.SEED, smoke.SEED2]
    assert f"seed {smoke.SEED}:" in detail and f"second stage, seed {smoke.SEED2}" in detail


def test_a_defect_misses_twice_and_fails():
    model, simulate, calls = _model(1.0, {smoke.SEED: 1.2, smoke.SEED2: 1.2})
    passed, _, detail = smoke.simulation_check(model, simulator=simulate).run(50)
    assert not passed and calls == [smoke.SEED, smoke.SEED2] and detail.count("not in") == 2
