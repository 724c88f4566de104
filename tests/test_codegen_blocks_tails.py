"""Generated waiting and sojourn time tails and quantiles of the finite room with blocks (``qderive codegen
vacation-finite --measure wait_tail`` with ``--setup``, ``--close-down``, ``--start-threshold N``), against what is
computed another way:

* the tagged-customer chain (``numeric/oracles/blocks.py``, :func:`tagged_wait`: the absorption time of a tagged
  customer in a chain built from the blocks' state machine, solved at 20 digits, no transform) -- P(W = 0), the wait's
  and the sojourn's tails to 1e-9 relative: the float64 inversion's policy (its two Euler parameter sets must agree to
  2e-10 and the engine trusts a float64 tail within 1e-10; measured 2e-11 to 5e-11);
* the engine behind ``qderive eval`` (``numeric/engines/vacation_finite_wait.py`` items 6 and 7 through
  ``numeric/response.py``, float64 with its escalation to mpmath where its self-check fails), to 1e-9 likewise
  (measured 7e-13 to 5e-12), for the quantiles too and for a gamma setup of non-integer shape (no chain for it);
* refusals naming the option (whole admission with unbounded batches and N > 1, a family with kinks) and the
  generated check of r.

Each module is generated once per test session (:func:`_module`).
"""

from __future__ import annotations

import ast
import functools
from fractions import Fraction as F

import pytest

from codegen_block_checks import check_generated_median, close, generated_function
from conftest import cli, run_standalone
from qderive.derivations.export.codegen_vacation import forms
from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.oracles.blocks import tagged_wait
from qderive.numeric.response import tails
from qderive.symbolic.batches import FinitePMF, Geometric
from qderive.symbolic.laws import Erlang, Exponential, Gamma, HyperExponential
from qderive.symbolic.models.vacation import Admission, CodegenFamilies, FiniteVacationQueue, VacationPolicy

# name: (codegen options, the model at the same numbers, the generated function's arguments after t, the times, chain)
CASES = {
    "threshold-3-multiple-partial": (
        dict(batch="geometric", service="exp", vacation="exp", start_threshold=3),
        FiniteVacationQueue(F(2), Geometric(2), Exponential(F(1, 5)), Exponential(F(1, 2)), 6, start_threshold=3),
        (2.0, 2.0, 0.2, 0.5, 6), [F(1, 2), F(1)], True),
    "setup-close-down-multiple-partial": (
        dict(batch="geometric", service="erlang:k=2", vacation="exp", setup="exp", close_down="exp"),
        FiniteVacationQueue(F(2), Geometric(2), Erlang(2, F(1, 5)), Exponential(F(1, 2)), 6,
                            setup=Exponential(F(3, 10)), close_down=Exponential(F(1, 10))),
        (2.0, 2.0, 0.2, 0.5, 0.3, 0.1, 6), [F(1, 2), F(1)], True),
    # whole admission, N = 2: batches of at most 2 <= r - N + 1 = 3 are never refused below N
    "all-blocks-whole-n2": (
        dict(batch="pmf:sizes=1/2", service="erlang:k=2", vacation="exp", setup="exp", close_down="exp",
             start_threshold=2, admission=Admission.WHOLE),
        FiniteVacationQueue(F(2), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(1, 4)), Exponential(F(1, 3)), 4,
                            Admission.WHOLE, start_threshold=2, setup=Exponential(F(1, 5)),
                            close_down=Exponential(F(1, 10))),
        (2.0, 0.5, 0.5, 0.25, 1 / 3, 0.2, 0.1, 4), [F(1, 2), F(1)], True),
    "close-down-no-vacation-n2": (
        dict(batch="geometric", service="exp", vacation="none", close_down="erlang:k=2", start_threshold=2),
        FiniteVacationQueue(F(3, 2), Geometric(F(3, 2)), Exponential(F(2, 5)), None, 5, start_threshold=2,
                            close_down=Erlang(2, F(1, 5))),
        (1.5, 1.5, 0.4, 0.2, 5), [F(1, 2), F(1)], True),
    # a gamma setup of non-integer shape (no phase-type chain): the engine only
    "single-hyperexp-gamma-setup-n3": (
        dict(batch="geometric", service="hyperexp:n=2", vacation="exp", vacation_policy=VacationPolicy.SINGLE,
             setup="gamma", start_threshold=3),
        FiniteVacationQueue(F(3, 2), Geometric(F(3, 2)), HyperExponential((F(1, 4), F(3, 4)), (F(1, 2), F(1, 10))),
                            Exponential(F(1, 3)), 5, vacation_policy=VacationPolicy.SINGLE, start_threshold=3,
                            setup=Gamma(F(5, 2), F(1, 5))),
        (1.5, 1.5, 0.25, 0.75, 0.5, 0.1, 1 / 3, 2.5, 0.2, 5), [F(1, 2), F(1)], False),
}


@functools.lru_cache(maxsize=None)
def _module(case, measure):
    """The generated function ``measure`` of ``case`` (generated and executed once per session)."""
    text = forms(CodegenFamilies(**CASES[case][0]))[measure].python_module("vacation-finite")
    return generated_function(text, f"{case}-{measure}", measure)


@functools.lru_cache(maxsize=None)
def _laws(case):
    return response_laws(CASES[case][1])


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_tails_equal_the_engine_and_the_tagged_customer(case):
    _, model, args, times, chain = CASES[case]
    ts = [float(t) for t in times]
    wait = _module(case, "wait_tail")([0.0, *ts], *args)
    sojourn = _module(case, "sojourn_tail")(ts, *args)
    laws = _laws(case)
    close(wait, tails(laws["wait"], [F(0), *times], None)[0])
    close(sojourn, tails(laws["sojourn"], times, None)[0])
    if chain:
        oracle = tagged_wait(model, times=times, digits=20)
        close(wait, [1 - oracle.p_zero, *oracle.tail])
        close(sojourn, oracle.sojourn_tail)


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_quantiles_equal_the_engines(case):
    _, _, args, _, _ = CASES[case]
    laws = _laws(case)
    for kind in ("wait", "sojourn"):  # the bracket's start: E W = [s^1] N(-s) / N(0) (N > 1: Little's)
        check_generated_median(_module(case, f"{kind}_quantile"), laws[kind], args, _module(case, f"{kind}_tail"))


def test_the_cli_writes_a_standalone_module_with_only_numpy_and_math(tmp_path):
    """The command of the issue: a start threshold N = 3, multiple exponential vacations."""
    out = tmp_path / "g.py"
    code, _, err = cli(["codegen", "vacation-finite", "--batch", "geometric", "--service", "exp", "--vacation", "exp",
                        "--start-threshold", "3", "--measure", "wait_tail", "--out", str(out)])
    assert code == 0, err
    text = out.read_text()
    tree = ast.parse(text)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"numpy", "math", "warnings"}, imported
    assert "class ThresholdSeries" in text and "def block_wait_parts" in text  # the kernels themselves
    got = run_standalone(tmp_path, "import g\nprint(repr(g.wait_tail(0.5, 2.0, 2.0, 0.2, 0.5, 6)))")
    oracle = tagged_wait(CASES["threshold-3-multiple-partial"][1], times=[F(1, 2)], digits=20)
    close([float(got)], oracle.tail)


@pytest.mark.parametrize("argv, option", [
    (["--admission", "whole", "--start-threshold", "2"], "--start-threshold"),  # geometric batches: unbounded
    (["--setup", "det"], "--setup"),  # a family with kinks
])
def test_refusals_name_the_option(tmp_path, argv, option):
    code, _, err = cli(["codegen", "vacation-finite", "--measure", "wait_tail", "--out", str(tmp_path / "t.py"),
                        "--batch", "geometric", "--service", "exp", "--vacation", "exp", *argv])
    assert code != 0 and option in err and "Traceback" not in err, err


def test_whole_admission_checks_that_no_batch_is_refused_below_the_threshold():
    """Batches of at most 2, N = 2: r >= 2 + N - 1 = 3 (at r = 2 a batch of 2 at level 1 would be refused)."""
    f = _module("all-blocks-whole-n2", "wait_tail")
    args = CASES["all-blocks-whole-n2"][2][:-1]
    with pytest.raises(ValueError, match="r = 2"):
        f(0.5, *args, 2)
    assert 0 < f(0.5, *args, 3) < 1
