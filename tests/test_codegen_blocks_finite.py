"""Generated code of the finite room with composed blocks (``qderive codegen vacation-finite --setup/--close-down/
--start-threshold``): standalone (numpy and math only), the package's idle-passage kernel inside, and equal to the
package's evaluation at 30 digits to 1e-12 relative (the same kernel in float64 against mpmath; the engine itself
is checked against the block chain at 50 digits in ``test_blocks_finite.py``; measured differences ~1e-15)."""

from __future__ import annotations

import ast
from fractions import Fraction as F

import numpy as np
import pytest

from conftest import cli, load_generated, run_standalone
from qderive.derivations.export.codegen_vacation import forms
from qderive.symbolic.batches import Constant, FinitePMF, Geometric, ShiftedPoisson
from qderive.symbolic.laws import Deterministic, Erlang, Exponential
from qderive.symbolic.models.vacation import Admission, CodegenFamilies, FiniteVacationQueue, VacationPolicy

MEASURES = ("loss_probability", "batch_blocking_probability", "idle_probability", "mean_queue_length", "mean_wait",
            "throughput", "p0", "pr", "q0", "qr")

# (codegen options, the model at the same numbers, the generated function's arguments before r, r)
CASES = {
    "setup-multiple-partial": (
        dict(batch="geometric", service="erlang:k=2", vacation="exp", setup="exp"),
        lambda r: FiniteVacationQueue(F(2), Geometric(2), Erlang(2, F(1, 5)), Exponential(F(1, 2)), r,
                                      setup=Exponential(F(3, 10))),
        (2.0, 2.0, 0.2, 0.5, 0.3), 6),
    "close-down-single-whole": (
        dict(batch="pmf:sizes=1/2", service="exp", vacation="exp", close_down="erlang:k=2",
             vacation_policy=VacationPolicy.SINGLE, admission=Admission.WHOLE),
        lambda r: FiniteVacationQueue(F(3), FinitePMF({1: F(3, 5), 2: F(2, 5)}), Exponential(F(1, 5)),
                                      Exponential(F(1, 4)), r, Admission.WHOLE, VacationPolicy.SINGLE,
                                      close_down=Erlang(2, F(1, 10))),
        (3.0, 0.6, 0.4, 0.2, 0.25, 0.1), 5),
    "threshold-3-no-vacation-partial": (
        dict(batch="poisson1", service="exp", vacation="none", start_threshold=3),
        lambda r: FiniteVacationQueue(F(3, 2), ShiftedPoisson(F(3, 2)), Exponential(F(2, 5)), None, r,
                                      start_threshold=3),
        (1.5, 1.5, 0.4), 7),
    # every block at once, overloaded (rho_bar = 6 * 2 * 0.125 = 1.5), whole admission
    "all-blocks-whole-overload": (
        dict(batch="geometric", service="exp", vacation="erlang:k=2", setup="det", close_down="exp",
             start_threshold=2, admission=Admission.WHOLE),
        lambda r: FiniteVacationQueue(F(6), Geometric(2), Exponential(F(1, 8)), Erlang(2, F(1, 3)), r,
                                      Admission.WHOLE, start_threshold=2, setup=Deterministic(F(1, 5)),
                                      close_down=Exponential(F(1, 10))),
        (6.0, 2.0, 0.125, 1 / 3, 0.2, 0.1), 6),
}


def _request(options):
    return CodegenFamilies(**options)


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_block_measures_equal_the_package_at_30_digits(case):
    options, model, args, r = CASES[case]
    want = model(r).evaluate(digits=30)
    modules = forms(_request(options))
    for measure in MEASURES:
        ns = {}
        exec(compile(modules[measure].python_module("vacation-finite"), measure, "exec"), ns)  # noqa: S102
        got = ns[measure](*args, r)
        # the same kernel in float64 against mpmath at 30 digits: rounding of O(r^2) positive sums, ~1e-15
        assert got == pytest.approx(float(want[measure]), rel=1e-12, abs=1e-300), measure


def test_the_cli_writes_a_standalone_module_with_only_numpy_and_math(tmp_path):
    out = tmp_path / "loss.py"
    code, _, err = cli(["codegen", "vacation-finite", "--measure", "loss_probability", "--out", str(out),
                        "--batch", "geometric", "--service", "erlang:k=2", "--vacation", "exp", "--setup", "exp",
                        "--start-threshold", "3"])
    assert code == 0, err
    text = out.read_text()
    tree = ast.parse(text)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"numpy", "math", "warnings"}, imported
    assert "class CountPassage" in text and "def block_finite_measures" in text  # the kernel itself
    want = FiniteVacationQueue(F(2), Geometric(2), Erlang(2, F(1, 5)), Exponential(F(1, 2)), 6, start_threshold=3,
                               setup=Exponential(F(3, 10))).evaluate(digits=30)["loss_probability"]
    got = float(run_standalone(tmp_path, "import loss\nprint(repr(loss.loss_probability(2.0, 2.0, 0.2, 0.5, 0.3, 6)))"))
    assert got == pytest.approx(float(want), rel=1e-12)


def test_generated_block_module_broadcasts_sweeps_r_and_takes_the_load(tmp_path):
    options, model, args, _ = CASES["setup-multiple-partial"]
    ns = {}
    exec(compile(forms(_request(options))["mean_wait"].python_module("vacation-finite"), "w", "exec"), ns)  # noqa: S102
    f = ns["mean_wait"]
    grid = f(np.array([1.0, 2.0]), *args[1:], [3, 6])
    assert grid.shape == (2, 2)
    # the two rates run in one vectorised pass (partial admission): sums in another order, ~1e-16 relative
    assert grid[1, 1] == pytest.approx(f(*args, 6), rel=1e-14)
    assert grid[0, 0] == pytest.approx(f(1.0, *args[1:], 3), rel=1e-14)
    rho = args[0] * args[1] * args[2]  # rho_bar = lam l1 b1
    assert f(None, *args[1:], 6, load=rho) == pytest.approx(f(*args, 6), rel=1e-14)


@pytest.mark.parametrize("argv, option", [
    (["--start-threshold", "3"], "r"),  # r = 2 < N = 3
    (["--start-threshold", "0"], "--start-threshold"),
])
def test_bad_threshold_and_capacity_are_refused_naming_them(tmp_path, argv, option):
    out = tmp_path / "f.py"
    code, _, err = cli(["codegen", "vacation-finite", "--measure", "p0", "--out", str(out), "--batch", "geometric",
                        "--service", "exp", "--vacation", "exp", *argv])
    if option != "r":
        assert code != 0 and option in err and "Traceback" not in err
        return
    assert code == 0, err
    with pytest.raises(ValueError, match="r = 2"):
        load_generated(out)["p0"](2.0, 2.0, 0.2, 0.5, 2)


def test_a_threshold_whole_admission_never_meets_is_a_value_error():
    """Batches of exactly 2 in r = 3 places, whole admission, N = 3, multiple vacations: the first batch brings
    the count to 2 < N and no later batch fits the r - 2 = 1 place left: the server would take vacations for
    ever. The package refuses the model naming --start-threshold; the generated code raises ValueError."""
    from qderive.symbolic.errors import ParameterError

    options = dict(batch="const:n=2", service="exp", vacation="exp", start_threshold=3, admission=Admission.WHOLE)
    ns = {}
    exec(compile(forms(_request(options))["p0"].python_module("vacation-finite"), "p", "exec"), ns)  # noqa: S102
    model = FiniteVacationQueue(F(1), Constant(2), Exponential(F(1, 5)), Exponential(F(1, 2)), 3, Admission.WHOLE,
                                start_threshold=3)
    with pytest.raises(ParameterError, match="start-threshold"):
        model.evaluate(digits=20)
    with pytest.raises(ValueError, match="can never be met"):
        ns["p0"](1.0, 0.2, 0.5, 3)
    assert 0 < ns["p0"](1.0, 0.2, 0.5, 4) < 1  # r = 4: the second batch fits


def test_tails_with_a_block_family_with_kinks_are_refused_naming_the_option(tmp_path):
    """(Smooth families are generated: tests/test_codegen_blocks_tails.py.)"""
    code, _, err = cli(["codegen", "vacation-finite", "--measure", "wait_tail", "--out", str(tmp_path / "t.py"),
                        "--batch", "geometric", "--service", "exp", "--vacation", "exp", "--close-down", "det"])
    assert code != 0 and "--close-down" in err and "Traceback" not in err, err


def test_generated_block_module_against_the_block_chain():
    """Computed another way: the CTMC built from the blocks' state machine over phase-type laws
    (:mod:`qderive.numeric.oracles.blocks`), solved at 30 digits; every block at once, whole admission, r = 4.
    The chain and the kernel share no code; float64 rounding of O(r^2) positive sums: 1e-12."""
    from qderive.numeric.oracles.blocks import chain_measures

    options = dict(batch="pmf:sizes=1/2", service="erlang:k=2", vacation="exp", setup="exp", close_down="exp",
                   start_threshold=2, admission=Admission.WHOLE)
    model = FiniteVacationQueue(F(2), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(1, 4)), Exponential(F(1, 3)), 4,
                                Admission.WHOLE, start_threshold=2, setup=Exponential(F(1, 5)),
                                close_down=Exponential(F(1, 10)))
    want = chain_measures(model, digits=30)
    modules = forms(_request(options))
    for measure in ("loss_probability", "idle_probability", "mean_queue_length", "p0", "pr"):
        ns = {}
        exec(compile(modules[measure].python_module("vacation-finite"), measure, "exec"), ns)  # noqa: S102
        got = ns[measure](2.0, 0.5, 0.5, 0.25, 1 / 3, 0.2, 0.1, 4)
        assert got == pytest.approx(float(want[measure]), rel=1e-12), measure
