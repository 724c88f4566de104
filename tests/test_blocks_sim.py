"""The simulator of the composed vacation variants (``numeric/simulation/blocks.py``) against the block chain.

References computed another way: the block chain (``numeric/oracles/blocks.py``, the CTMC of the stages over
phase-type laws, solved at 30 digits here; shares with the simulator only the stage description of
``symbolic/blocks/machine.py``), and, for general (non-phase-type) laws, Takagi's mean wait of M/G/1 with the
N-policy and a setup time, written here.

Tolerance (as ``tests/test_simulate_vacation.py``): every reference value lies in the simulation's 99 %
intervals taken simultaneous over the m measures of one run (Bonferroni: each interval at level 1 - 0.01/m;
independent replications, jackknife standard errors, Student t), so a correct simulator fails one of these
tests with probability at most 1 %; the seeds are fixed, so the tests are deterministic. The runs are short
(10 replications of 20 000 customers, under a second each); the intervals are a few per cent wide, which
still separates the variants (a setup, a threshold, a close-down each move these measures by far more).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction as F

import pytest
from conftest import cli

from qderive.numeric.oracles.blocks import chain_measures
from qderive.numeric.simulation import vacation as SV
from qderive.numeric.simulation.blocks import simulate_blocks
from qderive.numeric.simulation.stats import run_replications, student_t_quantile
from qderive.symbolic.batches import Constant, FinitePMF, Geometric
from qderive.symbolic.blocks import Setup, StartRule
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, HyperExponential, Uniform
from qderive.symbolic.models.vacation import (
    Admission,
    FiniteVacationQueue,
    VacationMeasures,
    VacationPolicy,
    VacationQueue,
)

LEVEL = 0.99
RUN = {"customers": 20_000, "replications": 10, "quiet": True}
MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE
PMF = FinitePMF({1: F(1, 2), 2: F(1, 2)})


def assert_within(result, reference: dict):
    """Every reference value lies in the simulation's simultaneous 99 % intervals (Bonferroni)."""
    failures = []
    level = 1 - (1 - LEVEL) / len(reference)
    for name, ref in reference.items():
        lo, hi = result[name].interval(level)
        if not (lo <= float(ref) <= hi):
            failures.append(f"{name}: reference {float(ref):.6g} outside [{lo:.6g}, {hi:.6g}]")
    assert not failures, "\n".join(failures)


def _measures(result, chain) -> dict:
    return {k: chain[k] for k in result.measures}


COMPOSED = [
    ("infinite, multiple, N=3, setup, close-down",
     lambda: VacationQueue(F(1, 2), PMF, Erlang(2, F(1, 2)), Exponential(1), MULTIPLE, 3, Exponential(F(1, 2)),
                           Exponential(F(1, 5)))),
    ("infinite, single, N=2, Erlang setup",
     lambda: VacationQueue(F(1, 2), PMF, Erlang(2, F(1, 2)), Erlang(2, 1), SINGLE, 2, Erlang(3, F(1, 2)))),
    ("infinite, none, N=4, close-down, hyperexponential service",
     lambda: VacationQueue(F(1, 2), Constant(1), HyperExponential((F(1, 3), F(2, 3)), (F(1, 2), F(1, 4))), None,
                           MULTIPLE, 4, None, Erlang(2, F(1, 2)))),
    ("finite, partial, multiple, N=3, setup, close-down",
     lambda: FiniteVacationQueue(F(1), Geometric(2), Erlang(2, F(1, 2)), Exponential(1), 6, Admission.PARTIAL,
                                 MULTIPLE, 3, Exponential(F(1, 2)), Exponential(F(1, 5)))),
    ("finite, whole, single, N=4, setup",
     lambda: FiniteVacationQueue(F(2), Geometric(3), Erlang(2, F(1, 4)), Exponential(1), 8, Admission.WHOLE,
                                 SINGLE, 4, Exponential(F(1, 3)), None)),
    ("finite, whole, none, N=5, close-down",
     lambda: FiniteVacationQueue(F(1, 2), FinitePMF({1: F(1, 2), 4: F(1, 2)}), Exponential(F(1, 2)), None, 5,
                                 Admission.WHOLE, MULTIPLE, 5, None, Erlang(3, F(1, 2)))),
]


@pytest.mark.parametrize("make", [c[1] for c in COMPOSED], ids=[c[0] for c in COMPOSED])
def test_composed_variants_against_the_chain(make):
    model = make()
    assert model.blocks
    chain = chain_measures(model, 30, tail=F(1, 10**12))
    result = SV.simulate(model, seed=11, **RUN)
    assert_within(result, _measures(result, chain))


def test_waits_and_sojourns_of_a_composed_variant():
    """The recorded waits: their mean is the chain's mean wait (Little's law there), the sojourn's mean adds b1."""
    model = FiniteVacationQueue(F(1), Geometric(2), Erlang(2, F(1, 2)), Exponential(1), 6, Admission.PARTIAL,
                                SINGLE, 3, Exponential(F(1, 2)), Exponential(F(1, 5)))
    chain = chain_measures(model, 30)
    result = SV.simulate(model, seed=5, wait_moments=1, sojourn_moments=1, wait_tail=(0,), **RUN)
    w = chain["mean_wait"]
    level = 1 - (1 - LEVEL) / 2
    lo, hi = result["wait_moments"][0].interval(level)
    assert lo <= float(w) <= hi
    lo, hi = result["sojourn_moments"][0].interval(level)
    assert lo <= float(w) + 0.5 <= hi
    # with N = 3 every customer of a busy period's first batches waits: P(W > 0) is large but below 1
    assert 0.5 < result["wait_tail"][0].value < 1


@pytest.mark.parametrize("n", [1, 3])
def test_general_laws_against_takagis_setup_wait(n):
    """M/G/1 with the N-policy and a setup time, general laws (uniform service, constant setup): Takagi (1991),
    vol. 1, ch. 2, W = lambda b2 / (2 (1 - rho)) + [N (N - 1) / (2 lambda) + N s1 + lambda s2 / 2] / (N + lambda
    s1) (also checked against the chain in tests/test_blocks_chain.py)."""
    lam, service, setup = F(1, 2), Uniform(0, F(2)), Deterministic(F(1, 2))
    b1, b2, s1, s2 = service.moment(1), service.moment(2), setup.moment(1), setup.moment(2)
    rho = lam * b1
    want = lam * b2 / (2 * (1 - rho)) + (F(n * (n - 1)) / (2 * lam) + n * s1 + lam * s2 / 2) / (n + lam * s1)
    model = VacationQueue(lam, Constant(1), service, None, start_threshold=n, setup=setup)
    result = SV.simulate(model, seed=3, **RUN)
    assert_within(result, {"mean_wait": want, "idle_probability": 1 - rho})


@pytest.mark.parametrize("make", [
    lambda: VacationQueue(F(1, 2), PMF, Erlang(2, F(1, 2)), Exponential(1), SINGLE),
    lambda: FiniteVacationQueue(F(1), Geometric(2), Erlang(2, F(1, 2)), Exponential(1), 6, Admission.WHOLE,
                                MULTIPLE),
    lambda: FiniteVacationQueue(F(1), Geometric(2), Erlang(2, F(1, 2)), None, 3, Admission.PARTIAL),
], ids=["infinite-single", "finite-whole-multiple", "finite-partial-none"])
def test_todays_variants_keep_their_loop_and_the_stages_agree(make):
    """Today's variants (N = 1, no setup, no close-down) still run the vacation module's own loop (so their
    seeded numbers are those of before: the same results as its kernel run directly); the stage loop run on them
    agrees with the chain (which equals today's engine, tests/test_blocks_chain.py)."""
    model = make()
    assert not model.blocks
    spec = SV.kernel_spec(model)
    direct = run_replications(spec, 3000, 3, 9, 0.1, True)
    assert SV.simulate(model, 3000, 3, seed=9, quiet=True).as_dict() == direct.as_dict()
    assert spec.start.__module__ == SV.__name__
    chain = chain_measures(model, 30, tail=F(1, 10**12))
    result = simulate_blocks(model, seed=13, **RUN)
    assert_within(result, _measures(result, chain))


def test_cli_simulates_the_issues_example():
    """``qderive simulate vacation-infinite --start-threshold 3 --setup ... --close-down ...`` runs (the simulator
    no longer refuses the composed variants); its JSON intervals contain the chain's values (the same model as the
    first composed case, through the command line)."""
    code, out, err = cli(["simulate", "vacation-infinite", "--start-threshold", "3", "--setup", "exp:mean=0.5",
                          "--close-down", "exp:mean=0.2", "--batch", "pmf:1=0.5,2=0.5", "--service",
                          "erlang:k=2,mean=0.5", "--vacation", "exp:mean=1", "--rate", "0.5", "--customers", "20000",
                          "--replications", "10", "--seed", "11", "--json", "--quiet"])
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc["measures"]) == set(VacationMeasures.keys()) - {"p"}
    chain = chain_measures(COMPOSED[0][1](), 30, tail=F(1, 10**12))
    # the printed 95 % intervals, widened to simultaneous 99 % ones (Bonferroni over the m measures; Student t
    # with 9 degrees of freedom), as assert_within does
    m = len(doc["measures"])
    widen = student_t_quantile(1 - (1 - LEVEL) / (2 * m), 9) / student_t_quantile(0.975, 9)
    for key, entry in doc["measures"].items():
        lo, hi = entry["ci95"]
        mid, half = (lo + hi) / 2, (hi - lo) / 2 * widen
        assert mid - half <= float(chain[key]) <= mid + half, key


def test_cli_refuses_a_threshold_that_can_never_be_met():
    code, _, err = cli(["simulate", "vacation-finite", "--batch", "const:n=2", "--service", "exp:mean=1",
                        "--vacation", "none", "--capacity", "3", "--admission", "whole", "--start-threshold", "3",
                        "--setup", "exp:mean=1", "--rate", "1", "--customers", "1000"])
    assert code == 2 and "start-threshold = 3: can never be met under whole admission" in err
    assert len(err.strip().splitlines()) == 1


@dataclass(frozen=True)
class _AtMostTwoVacations(StartRule):
    """A rule of one's own, not built in: at most two vacations while fewer than N are present, then the server
    waits for N (one class composing repeat and wait; it gets the chain and the simulation with no other code)."""

    vacation: object = None

    def passage(self, op, state):
        return op.wait(op.repeat(state, self.vacation, self.threshold, 2), self.threshold)


@pytest.mark.parametrize("admission", list(Admission))
def test_a_rule_of_ones_own_simulated_and_chained(admission):
    vac, setup = Erlang(2, F(1, 2)), Exponential(F(1, 4))
    model = FiniteVacationQueue(F(1), Geometric(2), Exponential(F(1, 2)), vac, 5, admission, MULTIPLE, 3, setup)
    blocks = (_AtMostTwoVacations(3, vac), Setup(setup))
    chain = chain_measures(model, 30, blocks=blocks)
    built_in = chain_measures(model, 30)
    assert abs(chain["q0"] - built_in["q0"]) > 0.01  # a rule of its own, not the multiple-vacation one
    result = simulate_blocks(model, seed=17, blocks=blocks, **RUN)
    assert_within(result, _measures(result, chain))
