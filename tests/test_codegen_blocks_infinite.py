"""Generated closed forms of the infinite room with a setup and a close-down (``qderive codegen vacation-infinite
--setup general --close-down general``): the engine's factorial-moment interpreter run over SymPy, printed as numpy
(and C), against the package's evaluation at 30 digits to 1e-12 relative (the engine's formulas evaluated in float64
from the laws' moments; the engine itself is checked against the block chain at 50 digits and the literature's
closed forms in ``test_blocks_engine.py``; measured differences ~1e-15)."""

from __future__ import annotations

import inspect
from fractions import Fraction as F

import pytest

from conftest import cli, run_generated_c
from qderive.symbolic.batches import FinitePMF, Geometric, ShiftedPoisson
from qderive.symbolic.laws import Deterministic, Erlang, Exponential, Gamma, HyperExponential
from qderive.symbolic.models.vacation import CodegenPolicy, VacationPolicy, VacationQueue

MEASURES = ("q0", "idle_probability", "mean_queue_length", "mean_wait", "queue_length_variance",
            "mean_number_in_system")

# (codegen options, the model)
CASES = {
    "setup-multiple": (dict(setup="general"),
                       VacationQueue(F(2), Geometric(2), Erlang(2, F(1, 8)), Exponential(F(1, 2)),
                                     setup=Exponential(F(3, 10)))),
    "close-down-single": (dict(close_down="general", vacation_policy=VacationPolicy.SINGLE),
                          VacationQueue(F(3), FinitePMF({1: F(3, 5), 2: F(2, 5)}), Exponential(F(1, 6)),
                                        Erlang(3, F(1, 4)), VacationPolicy.SINGLE, close_down=Erlang(2, F(1, 10)))),
    "both-no-vacation": (dict(setup="general", close_down="general", no_vacation=True),
                         VacationQueue(F(1), Geometric(F(3, 2)), HyperExponential((F(1, 4), F(3, 4)),
                                                                                  (F(1, 10), F(3, 10))), None,
                                       setup=Deterministic(F(1, 2)), close_down=Exponential(F(1, 5)))),
    "both-multiple": (dict(setup="general", close_down="general"),
                      VacationQueue(F(2), Geometric(2), Exponential(F(1, 5)), Erlang(2, F(1, 3)),
                                    setup=Erlang(3, F(1, 5)), close_down=Deterministic(F(1, 10)))),
}


def _arguments(model) -> dict:
    """The closed forms' arguments from the model's laws (exact): moments, c0 = varphi(lambda), s_k, d0 =
    delta(lambda) (the laws' LSTs at the batch rate)."""
    lam = model.rate
    out = {"lam": lam, **{f"b{k}": model.service.moment(k) for k in (1, 2, 3)},
           **{f"l{k}": model.batch.moment(k) for k in (1, 2, 3)}}
    if model.vacation is not None:
        out.update({f"f{k}": model.vacation.moment(k) for k in (1, 2, 3)}, c0=model.vacation.lst(lam))
    if model.setup is not None:
        out.update({f"s{k}": model.setup.moment(k) for k in (1, 2, 3)})
    if model.close_down is not None:
        out["d0"] = model.close_down.lst(lam)
    return {k: float(v) for k, v in out.items()}


def _call(fn, values):
    return fn(**{name: values[name] for name in inspect.signature(fn).parameters})


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_closed_forms_with_blocks_equal_the_package_at_30_digits(case):
    from qderive.derivations import capabilities

    options, model = CASES[case]
    want = model.evaluate(digits=30)
    values = _arguments(model)
    forms = capabilities.load(VacationQueue, "codegen")(CodegenPolicy(**options))
    for measure in MEASURES:
        text = forms[measure].python_module("vacation-infinite")
        assert "import qderive" not in text
        ns = {}
        exec(compile(text, measure, "exec"), ns)  # noqa: S102
        # the engine's formula in float64 from exact moments, against 30 digits: a few roundings, ~1e-15
        assert _call(ns[measure], values) == pytest.approx(float(want[measure]), rel=1e-12), measure


def test_generated_c_with_a_setup_and_a_close_down_equals_python(tmp_path):
    options, model = CASES["both-multiple"]
    src = tmp_path / "w.c"
    code, _, err = cli(["codegen", "vacation-infinite", "--measure", "mean_wait", "--lang", "c", "--out", str(src),
                        "--setup", "general", "--close-down", "general"])
    assert code == 0, err
    got = run_generated_c(tmp_path, src, src.with_suffix(".h"), [_arguments(model)])[0]
    assert got == pytest.approx(float(model.evaluate(digits=30)["mean_wait"]), rel=1e-12)


@pytest.mark.parametrize("argv, option", [(["--setup", "exp"], "--batch"),  # a family needs the others' families
                                          (["--close-down", "general", "--measure", "wait_tail"], "--close-down")])
def test_what_is_not_generated_is_refused_naming_the_option(tmp_path, argv, option):
    measure = [] if "--measure" in argv else ["--measure", "mean_wait"]
    code, _, err = cli(["codegen", "vacation-infinite", *measure, "--out", str(tmp_path / "f.py"), *argv])
    assert code != 0 and option in err and "Traceback" not in err


def test_the_capabilities_declare_the_blocks_computed():
    from qderive.derivations import capabilities

    for fields in (dict(start_threshold=3), dict(setup=Exponential(1)), dict(close_down=Exponential(1))):
        model = VacationQueue(F(2), Geometric(2), Exponential(F(1, 5)), Exponential(F(1, 2)), **fields)
        assert capabilities.refusal(model, "codegen") is None
        assert capabilities.refusal(model, "codegen", {"wait_tail"}) is None  # N > 1 too (issue 26)


# the generated kernel for law families (any start threshold): (codegen options, the model, the arguments)
KERNEL_CASES = {
    "threshold-3-multiple-setup": (
        dict(start_threshold=3, batch="geometric", service="erlang:k=2", vacation="exp", setup="exp"),
        VacationQueue(F(2), Geometric(2), Erlang(2, F(1, 8)), Exponential(F(1, 2)), start_threshold=3,
                      setup=Exponential(F(3, 10))),
        (2.0, 2.0, 0.125, 0.5, 0.3)),
    "threshold-2-single-close-down": (
        dict(start_threshold=2, batch="pmf:sizes=1/2", service="exp", vacation="erlang:k=2", close_down="exp",
             vacation_policy=VacationPolicy.SINGLE),
        VacationQueue(F(3), FinitePMF({1: F(3, 5), 2: F(2, 5)}), Exponential(F(1, 6)), Erlang(2, F(1, 4)),
                      VacationPolicy.SINGLE, start_threshold=2, close_down=Exponential(F(1, 10))),
        (3.0, 0.6, 0.4, 1 / 6, 0.25, 0.1)),
    "threshold-4-no-vacation": (
        dict(start_threshold=4, batch="poisson1", service="gamma", no_vacation=True),
        VacationQueue(F(1), ShiftedPoisson(F(3, 2)), Gamma(F(5, 2), F(1, 4)), None, start_threshold=4),
        (1.0, 1.5, 2.5, 0.25)),
    "families-threshold-1": (
        dict(batch="geometric", service="exp", vacation="exp", setup="erlang:k=3", close_down="det"),
        VacationQueue(F(2), Geometric(2), Exponential(F(1, 5)), Exponential(F(1, 3)), setup=Erlang(3, F(1, 5)),
                      close_down=Deterministic(F(1, 10))),
        (2.0, 2.0, 0.2, 1 / 3, 0.2, 0.1)),
}


@pytest.mark.parametrize("case", sorted(KERNEL_CASES))
def test_generated_kernel_with_blocks_equals_the_package_at_30_digits(case):
    from qderive.derivations import capabilities

    options, model, args = KERNEL_CASES[case]
    want = model.evaluate(digits=30)
    forms = capabilities.load(VacationQueue, "codegen")(CodegenPolicy(**options))
    for measure in MEASURES:
        text = forms[measure].python_module("vacation-infinite")
        assert "class SeriesPassage" in text and "import qderive" not in text  # the kernel itself
        ns = {}
        exec(compile(text, measure, "exec"), ns)  # noqa: S102
        # the engine's kernel in float64 against mpmath at 30 digits (renewal sums below N: log10(N) digits lost)
        assert ns[measure](*args) == pytest.approx(float(want[measure]), rel=1e-12), measure


def test_the_generated_kernel_runs_standalone_and_broadcasts(tmp_path):
    import numpy as np

    from conftest import load_generated, run_standalone

    out = tmp_path / "w.py"
    code, _, err = cli(["codegen", "vacation-infinite", "--measure", "mean_wait", "--out", str(out),
                        "--start-threshold", "3", "--batch", "geometric", "--service", "erlang:k=2",
                        "--vacation", "exp", "--setup", "exp"])
    assert code == 0, err
    _, model, args = KERNEL_CASES["threshold-3-multiple-setup"]
    got = float(run_standalone(tmp_path, f"import w\nprint(repr(w.mean_wait{args!r}))"))
    assert got == pytest.approx(float(model.evaluate(digits=30)["mean_wait"]), rel=1e-12)
    f = load_generated(out)["mean_wait"]
    grid = f(np.array([1.0, 2.0]), *args[1:])
    assert grid.shape == (2,) and grid[1] == f(*args)
    with pytest.raises(ValueError, match="rho_bar"):
        f(5.0, *args[1:])


def test_general_blocks_with_a_threshold_are_refused_naming_the_option(tmp_path):
    code, _, err = cli(["codegen", "vacation-infinite", "--measure", "mean_wait", "--out", str(tmp_path / "f.py"),
                        "--start-threshold", "2", "--setup", "general"])
    assert code != 0 and "--setup" in err and "Traceback" not in err


# the tails with a setup and a close-down (start threshold 1, smooth families): (codegen options, model, arguments)
TAIL_CASES = {
    "multiple-setup-close-down": (
        dict(batch="geometric", service="erlang:k=2", vacation="exp", setup="exp", close_down="erlang:k=2"),
        VacationQueue(F(2), Geometric(2), Erlang(2, F(1, 8)), Exponential(F(1, 2)), setup=Exponential(F(3, 10)),
                      close_down=Erlang(2, F(1, 10))),
        (2.0, 2.0, 0.125, 0.5, 0.3, 0.1)),
    "single-setup": (
        dict(batch="pmf:sizes=1/2", service="exp", vacation="erlang:k=2", setup="erlang:k=3",
             vacation_policy=VacationPolicy.SINGLE),
        VacationQueue(F(3), FinitePMF({1: F(3, 5), 2: F(2, 5)}), Exponential(F(1, 6)), Erlang(2, F(1, 4)),
                      VacationPolicy.SINGLE, setup=Erlang(3, F(1, 5))),
        (3.0, 0.6, 0.4, 1 / 6, 0.25, 0.2)),
    "no-vacation-close-down": (
        dict(batch="geometric", service="exp", close_down="exp", no_vacation=True),
        VacationQueue(F(1), Geometric(F(3, 2)), Exponential(F(1, 2)), None, close_down=Exponential(F(1, 5))),
        (1.0, 1.5, 0.5, 0.2)),
}
TIMES = (0.0, 0.5, 2.0)


@pytest.mark.parametrize("case", sorted(TAIL_CASES))
def test_generated_tails_with_blocks_equal_the_package(case):
    from qderive.derivations import capabilities

    options, model, args = TAIL_CASES[case]
    want = model.evaluate(digits=20, wait_tail=list(TIMES), sojourn_tail=list(TIMES)).as_dict()
    forms = capabilities.load(VacationQueue, "codegen")(CodegenPolicy(**options))
    for measure in ("wait_tail", "sojourn_tail"):
        ns = {}
        exec(compile(forms[measure].python_module("vacation-infinite"), measure, "exec"), ns)  # noqa: S102
        got = ns[measure](list(TIMES), *args)
        for t, g in zip(TIMES, got):
            # the mpmath inversion at 20 digits against the float64 Euler inversion (~1e-11 absolute): 1e-9
            assert g == pytest.approx(float(want[measure][str(t)]), rel=1e-9), (measure, t)
    ns = {}
    exec(compile(forms["wait_quantile"].python_module("vacation-infinite"), "q", "exec"), ns)  # noqa: S102
    q = ns["wait_quantile"](0.9, *args)
    # the 0.9-quantile read back on the package's tail, computed another way (its own inversion at q)
    back = model.evaluate(digits=20, wait_tail=[q]).as_dict()["wait_tail"]
    assert float(next(iter(back.values()))) == pytest.approx(0.1, rel=1e-8)


def test_tails_with_general_blocks_are_refused_naming_the_option(tmp_path):
    """(With a start threshold N > 1 they are generated: tests/test_codegen_blocks_infinite_tails.py.)"""
    for argv, option in ((["--setup", "general"], "--setup"), (["--close-down", "general"], "--close-down")):
        code, _, err = cli(["codegen", "vacation-infinite", "--measure", "wait_tail", "--out", str(tmp_path / "t.py"),
                            "--batch", "geometric", "--service", "exp", "--vacation", "exp", *argv])
        assert code != 0 and option in err and "Traceback" not in err, (argv, err)
