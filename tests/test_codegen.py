"""Generated code agrees with `qderive eval`: the Python module runs where qderive is NOT importable,
the C function is compiled with the system compiler and run."""

import json

import numpy
import pytest

from qderive.derivations.cli import main

from conftest import load_generated, run_generated_c, run_standalone

MODEL_ARGS = ["--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation", "exp:mean=0.075",
              "--load", "0.6"]
# moments of these laws: lambda = 8, b_k of Erlang-4 mean 3/200, f_k of Exp mean 3/40, l_k of geometric mean 5
B1 = 0.015
MOMENTS = {"lam": 8.0, "b1": B1, "b2": 1.25 * B1**2, "b3": 1.25 * 1.5 * B1**3, "f1": 0.075, "f2": 2 * 0.075**2,
           "f3": 6 * 0.075**3, "l1": 5.0, "l2": 45.0,
           # geometric on {1, 2, ...} with p = 1/5: E X^3 = (p^2 - 6p + 6)/p^3 = (1/25 - 6/5 + 6) * 125 = 605
           "l3": 605.0}


def _eval(capsys):
    assert main(["eval", "vacation-infinite", *MODEL_ARGS, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["measures"]


MEASURES = ["q0", "idle_probability", "mean_queue_length", "mean_wait", "queue_length_variance",
            "mean_number_in_system"]


@pytest.mark.parametrize("measure", MEASURES)
def test_generated_python_runs_without_qderive(tmp_path, capsys, measure):
    out = tmp_path / "gen.py"
    assert main(["codegen", "vacation-infinite", "--measure", measure, "--out", str(out)]) == 0
    expected = _eval(capsys)[measure]
    script = (
        "import inspect, json, gen\n"
        f"fn = gen.{measure}\n"
        f"moments = {MOMENTS!r}\n"
        "args = [moments[p] for p in inspect.signature(fn).parameters]\n"
        "print(json.dumps(float(fn(*args))))\n"
    )
    out = run_standalone(tmp_path, script)
    got = json.loads(out)
    assert abs(got - expected) <= 1e-12 * abs(expected)


def test_generated_python_is_vectorised(tmp_path):
    out = tmp_path / "w.py"
    assert main(["codegen", "vacation-infinite", "--measure", "mean_wait", "--out", str(out)]) == 0
    namespace = load_generated(out)
    lam = numpy.linspace(1, 10, 5)
    w = namespace["mean_wait"](lam, B1, MOMENTS["b2"], 0.075, MOMENTS["f2"], 5.0, 45.0)
    assert w.shape == (5,) and numpy.all(numpy.diff(w) > 0)  # waiting grows with the load


@pytest.mark.parametrize("measure", ["mean_wait", "queue_length_variance"])
def test_generated_c_compiles_and_agrees(tmp_path, capsys, measure):
    src = tmp_path / "m.c"
    assert main(["codegen", "vacation-infinite", "--measure", measure, "--out", str(src), "--lang", "c"]) == 0
    expected = _eval(capsys)[measure]
    (got,) = run_generated_c(tmp_path, src, tmp_path / "m.h", [MOMENTS])
    assert abs(got - expected) <= 1e-12 * abs(expected)


def test_unknown_measure_is_a_clear_error(capsys):
    assert main(["codegen", "vacation-infinite", "--measure", "nope", "--out", "/tmp/x.py"]) == 2
    assert "has generated code for" in capsys.readouterr().err


MM1_POINTS = [("1.2,0.6", "1", "3,6,9"), ("1,0.5", "1", "2,5,8"), ("2,1", "1", "3,6,9")]  # generic, lambda_0 = mu, lambda_1 = mu


@pytest.mark.parametrize("measure", ["p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time",
                                     "mean_cycle_time"])
def test_generated_mm1_hysteretic_closed_forms_agree_with_eval(tmp_path, capsys, measure):
    """Closed forms in symbolic L, H, R (Piecewise at lambda_s = mu) as standalone numpy code."""
    import inspect

    out = tmp_path / "h.py"
    assert main(["codegen", "mm1-hysteretic", "--measure", measure, "--out", str(out)]) == 0
    namespace = load_generated(out)
    fn = namespace[measure]
    for rates, mu, thresholds in MM1_POINTS:
        assert main(["eval", "mm1-hysteretic", "--rates", rates, "--service-rate", mu, "--thresholds", thresholds,
                     "--json"]) == 0
        expected = json.loads(capsys.readouterr().out)["measures"][measure]
        lam0, lam1 = (float(x) for x in rates.split(","))
        Lv, Hv, Rv = (int(x) for x in thresholds.split(","))
        values = {"lam0": lam0, "lam1": lam1, "mu": float(mu), "L": Lv, "H": Hv, "R": Rv}
        with numpy.errstate(all="ignore"):  # numpy.select evaluates the unused branch too
            got = float(fn(*[values[p] for p in inspect.signature(fn).parameters]))
        assert abs(got - expected) <= 1e-12 * abs(expected), (rates, thresholds)
