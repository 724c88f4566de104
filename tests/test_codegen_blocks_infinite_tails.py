"""Generated waiting and sojourn time tails and quantiles of the infinite room with a start threshold N > 1
(``qderive codegen vacation-infinite --start-threshold N --measure wait_tail``, with or without vacations, a setup
and a close-down), against what is computed another way:

* the tagged-customer chain (``numeric/oracles/blocks.py``, :func:`tagged_wait`: the block CTMC's stationary law
  seen by the batch, then the tagged customer's absorption time by uniformization; no transform), at 20 digits:
  P(W = 0), the wait's and the sojourn's tails to 1e-9 relative -- the float64 inversion's policy (two Euler
  parameter sets must agree to 2e-10; the engine trusts a float64 tail within 1e-10); measured 5e-11 to 8e-11;
* the engine behind ``qderive eval`` (``numeric/engines/blocks.py`` with ``blocks_threshold.py``, float64 with its
  escalation to mpmath) to 1e-9 likewise (measured: equal, the same kernel in float64), the quantiles too.

Each module is generated once per test session (:func:`_module`).
"""

from __future__ import annotations

import functools
from fractions import Fraction as F

import pytest

from codegen_block_checks import check_generated_median, close, generated_function
from conftest import cli, run_standalone
from qderive.derivations import capabilities
from qderive.numeric.engines import blocks as B
from qderive.numeric.oracles.blocks import tagged_wait
from qderive.numeric.response import quantiles, tails
from qderive.symbolic.batches import FinitePMF, Geometric
from qderive.symbolic.laws import Erlang, Exponential
from qderive.symbolic.models.vacation import CodegenPolicy, VacationPolicy, VacationQueue

MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE
PMF = FinitePMF({1: F(1, 2), 2: F(1, 2)})
BLOCKS = dict(batch="pmf:sizes=1/2", service="erlang:k=2", setup="exp", close_down="erlang:k=2", start_threshold=3)


def _blocks(policy):
    """A close-down, the rule, N = 3 and a setup together (rho_bar = 1/2), as tests/test_blocks_threshold.py."""
    vac = None if policy is None else Exponential(F(1, 2))
    return VacationQueue(F(1, 2), PMF, Erlang(2, F(2, 3)), vac, policy or MULTIPLE, 3, setup=Exponential(F(1, 2)),
                         close_down=Erlang(2, F(1, 2)))


# name: (codegen options, the model, the generated function's arguments after t, the times)
CASES = {
    "n2-multiple": (dict(batch="pmf:sizes=1/2", service="exp", vacation="exp", start_threshold=2),
                    VacationQueue(F(1, 2), PMF, Exponential(F(2, 3)), Exponential(F(1, 2)), start_threshold=2),
                    (0.5, 0.5, 0.5, 2 / 3, 0.5), [F(1, 2), F(2)]),
    "n3-no-vacation-blocks": (dict(BLOCKS, no_vacation=True), _blocks(None),
                              (0.5, 0.5, 0.5, 2 / 3, 0.5, 0.5), [F(1), F(4)]),
    "n3-multiple-blocks": (dict(BLOCKS, vacation="exp"), _blocks(MULTIPLE),
                           (0.5, 0.5, 0.5, 2 / 3, 0.5, 0.5, 0.5), [F(1), F(4)]),
    "n3-single-blocks": (dict(BLOCKS, vacation="exp", vacation_policy=SINGLE), _blocks(SINGLE),
                         (0.5, 0.5, 0.5, 2 / 3, 0.5, 0.5, 0.5), [F(1), F(4)]),
}


@functools.lru_cache(maxsize=None)
def _module(case, measure):
    """The generated function ``measure`` of ``case`` (generated and executed once per session)."""
    forms = capabilities.load(VacationQueue, "codegen")(CodegenPolicy(**CASES[case][0]))
    return generated_function(forms[measure].python_module("vacation-infinite"), f"{case}-{measure}", measure)


@functools.lru_cache(maxsize=None)
def _laws(case):
    return B.response_laws(CASES[case][1])


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_tails_equal_the_tagged_customer_and_the_engine(case):
    _, model, args, times = CASES[case]
    ts = [float(t) for t in times]
    wait = _module(case, "wait_tail")([0.0, *ts], *args)
    sojourn = _module(case, "sojourn_tail")(ts, *args)
    oracle = tagged_wait(model, times=times, digits=20)
    close(wait, [1 - oracle.p_zero, *oracle.tail])
    close(sojourn, oracle.sojourn_tail)
    laws = _laws(case)
    close(wait, tails(laws["wait"], [F(0), *times], None)[0])
    close(sojourn, tails(laws["sojourn"], times, None)[0])


@pytest.mark.parametrize("case", ["n2-multiple", "n3-single-blocks"])
def test_generated_quantiles_equal_the_engines(case):
    args = CASES[case][2]
    laws = _laws(case)
    for kind in ("wait", "sojourn"):  # the bracket's start: Little's mean (the factorial-moment passage)
        check_generated_median(_module(case, f"{kind}_quantile"), laws[kind], args)


def test_the_cli_writes_a_standalone_module(tmp_path):
    """The command of the issue for the infinite room: N = 3, multiple exponential vacations."""
    out = tmp_path / "g.py"
    code, _, err = cli(["codegen", "vacation-infinite", "--batch", "geometric", "--service", "exp", "--vacation", "exp",
                        "--start-threshold", "3", "--measure", "wait_quantile", "--out", str(out)])
    assert code == 0, err
    assert "class ThresholdSeries" in out.read_text()
    got = float(run_standalone(tmp_path, "import g\nprint(repr(g.wait_quantile(0.5, 1.0, 2.0, 0.2, 0.5)))"))
    model = VacationQueue(F(1), Geometric(2), Exponential(F(1, 5)), Exponential(F(1, 2)), start_threshold=3)
    wait = B.response_laws(model)["wait"]
    close([got], quantiles(wait, [F(1, 2)], None, wait.moment_values(1, None)[0])[0])


@pytest.mark.parametrize("argv, option", [(["--setup", "det"], "--setup"), (["--service", "det"], "--service")])
def test_families_with_kinks_are_refused_naming_the_option(tmp_path, argv, option):
    base = {"--batch": "geometric", "--service": "exp", "--vacation": "exp"}
    base.update(dict(zip(argv[::2], argv[1::2])))
    code, _, err = cli(["codegen", "vacation-infinite", "--start-threshold", "2", "--measure", "wait_tail", "--out",
                        str(tmp_path / "t.py"), *[x for kv in base.items() for x in kv]])
    assert code != 0 and option in err and "Traceback" not in err, err
