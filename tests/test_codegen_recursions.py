"""Generated code for recursion-based and new closed-form measures agrees with `qderive eval`.

The oracle is the in-package engine behind `qderive eval` (itself verified against CTMCs at
50 digits and by simulation); the generated modules run with `python -S` where qderive is
not importable. Tolerance 1e-12 relative (issue 8): both sides are float64 transcriptions of
the same positive-term pipeline, so they differ only by rounding (~1e-15 measured); the
inputs differ in their last bit (the generated code forms p0 = k/(k + lam m) from floats, eval
from exact rationals), which the recursion (2b) can amplify by at most ~r.
"""

import json

import numpy
import pytest

from qderive.derivations.cli import main

from conftest import load_generated, run_generated_c, run_standalone

VACATION_MEASURES = ["loss_probability", "batch_blocking_probability", "idle_probability", "mean_queue_length",
                     "mean_wait", "mean_number_in_system", "throughput", "p0", "pr", "q0", "qr"]

# (codegen families, eval laws, generated-function arguments without r, eval --rate, capacities)
VACATION_CASES = {
    "geometric-erlang4-exp": (
        ("geometric", "erlang:k=4", "exp"),
        ("geometric:mean=5", "erlang:k=4,mean=0.015", "exp:mean=0.075"),
        (8.0, 5.0, 0.015, 0.075), "8", (1, 20, 64)),
    "const-det-erlang2-overload": (  # rho_bar = 1 * 3 * 0.5 = 1.5
        ("const", "det", "erlang:k=2"),
        ("const:n=3", "det:mean=0.5", "erlang:k=2,mean=0.2"),
        (1.0, 3, 0.5, 0.2), "1", (1, 12)),
    "pmf-gamma-hyperexp": (
        ("pmf", "gamma", "hyperexp:n=2"),
        ("pmf:1=0.5,2=0.3,4=0.2", "gamma:shape=2.5,mean=1", "hyperexp:p=0.3/0.7,mean=0.5/2"),
        (0.3, (0.5, 0.3, 0.0, 0.2), 2.5, 1.0, 0.3, 0.5, 2.0), "0.3", (1, 7)),
    "poisson1-exp-novacation": (
        ("poisson1", "exp", "none"),
        ("poisson1:mean=2.5", "exp:mean=1", "none"),
        (0.25, 2.5, 1.0), "0.25", (0, 9)),
    "geometric-heavy-overload": (  # rho_bar = 5: q~ grows like 5^j and is rescaled in float64
        ("geometric", "exp", "exp"),
        ("geometric:mean=2", "exp:mean=1", "exp:mean=1"),
        (2.5, 2.0, 1.0, 1.0), "2.5", (600,)),
    "geometric-light-load": (  # rho_bar = 0.1: losses down to ~1e-40, relative accuracy kept
        ("geometric", "exp", "det"),
        ("geometric:mean=2", "exp:mean=1", "det:mean=0.5"),
        (0.05, 2.0, 1.0, 0.5), "0.05", (200,)),
}


def _eval_vacation(capsys, laws, rate, r):
    batch, service, vacation = laws
    assert main(["eval", "vacation-finite", "--batch", batch, "--service", service, "--vacation", vacation,
                 "--rate", rate, "--capacity", str(r), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["measures"]


def _close(got, want, rtol=1e-12):
    return abs(got - want) <= rtol * abs(want)


def _codegen_vacation(directory, families, measure="loss_probability", stem=None):
    """Write the generated vacation-finite module ``stem.py`` (default: the measure's name) for ``families``."""
    batch, service, vacation = families
    out = directory / f"{stem or measure}.py"
    assert main(["codegen", "vacation-finite", "--measure", measure, "--batch", batch, "--service", service,
                 "--vacation", vacation, "--out", str(out)]) == 0


@pytest.mark.parametrize("case", sorted(VACATION_CASES))
def test_vacation_finite_generated_recursions_agree_with_eval(tmp_path, capsys, case):
    families, laws, args, rate, capacities = VACATION_CASES[case]
    for measure in VACATION_MEASURES:
        _codegen_vacation(tmp_path, families, measure)
    script = (
        "import json\n"
        f"args, rs = {args!r}, {list(capacities)!r}\n"
        "out = {}\n"
        f"for m in {VACATION_MEASURES!r}:\n"
        "    fn = getattr(__import__(m), m)\n"
        "    out[m] = {'each': [fn(*args, r) for r in rs], 'sweep': [float(v) for v in fn(*args, rs)]}\n"
        "print(json.dumps(out))\n"
    )
    got = json.loads(run_standalone(tmp_path, script))
    for i, r in enumerate(capacities):
        want = _eval_vacation(capsys, laws, rate, r)
        for measure in VACATION_MEASURES:
            assert _close(got[measure]["each"][i], want[measure]), (case, r, measure, got[measure]["each"][i])
            # a sweep runs the sequences up to max r: the same sums, rounded in another order
            assert _close(got[measure]["sweep"][i], got[measure]["each"][i], 1e-13)


def test_light_load_loss_is_tiny_and_accurate(tmp_path, capsys):
    """The light-load case probes cancellation: a loss of ~1e-52, checked against eval at 30 digits (mpmath)."""
    families, laws, args, rate, (r,) = VACATION_CASES["geometric-light-load"]
    _codegen_vacation(tmp_path, families, stem="light")
    got = float(run_standalone(tmp_path, f"import light\nprint(repr(light.loss_probability(*{args!r}, {r})))\n"))
    batch, service, vacation = laws
    assert main(["eval", "vacation-finite", "--batch", batch, "--service", service, "--vacation", vacation,
                 "--rate", rate, "--capacity", str(r), "--digits", "30", "--json"]) == 0
    want = float(json.loads(capsys.readouterr().out)["measures"]["loss_probability"])
    assert want < 1e-50 and _close(got, want)


def test_vacation_finite_r_codegen_agrees_with_its_closed_forms(tmp_path, capsys):
    """`vacation-finite-r` generates the recursion module; eval of that model uses the exact closed forms in r."""
    out = tmp_path / "vr.py"
    assert main(["codegen", "vacation-finite-r", "--measure", "loss_probability", "--out", str(out)]) == 0
    script = "import json, vr\nprint(json.dumps(vr.loss_probability(0.3, 2, 1, 0.5, [3, 30]).tolist()))\n"
    got = json.loads(run_standalone(tmp_path, script))
    for r, value in zip((3, 30), got):
        assert main(["eval", "vacation-finite-r", "--batch-mean", "2", "--service-mean", "1", "--vacation-mean", "0.5",
                     "--rate", "0.3", "--capacity", str(r), "--json"]) == 0
        want = json.loads(capsys.readouterr().out)["measures"]["loss_probability"]
        assert _close(value, want), (r, value, want)


def test_generated_vacation_code_rejects_bad_input(tmp_path):
    _codegen_vacation(tmp_path, ("geometric", "exp", "exp"), stem="g")
    script = (
        "import g\n"
        "for args in [(-1, 2, 1, 1, 5), (1, 0.5, 1, 1, 5), (1, 2, 0, 1, 5), (1, 2, 1, 1, 0), (1, 2, 1, 1, 2.5)]:\n"
        "    try:\n        g.loss_probability(*args)\n    except ValueError as e:\n        print(str(e).split(' =')[0])\n"
        "    else:\n        print('accepted', args)\n"
    )
    assert run_standalone(tmp_path, script).split() == ["lam", "batch_mean", "service_mean", "r", "r"]


@pytest.mark.parametrize("argv, message", [
    (["--batch", "geometric", "--service", "uniform", "--vacation", "exp"], "--service 'uniform'"),
    (["--batch", "zipf", "--service", "exp", "--vacation", "exp"], "--batch 'zipf'"),
    (["--batch", "geometric", "--service", "erlang", "--vacation", "exp"], "erlang takes k=N"),
    (["--batch", "geometric", "--service", "exp", "--vacation", "exp", "--lang", "c"], "needs a recursion"),
])
def test_codegen_vacation_bad_options_are_clear_errors(tmp_path, capsys, argv, message):
    assert main(["codegen", "vacation-finite", "--measure", "loss_probability", *argv,
                 "--out", str(tmp_path / "x.py")]) == 2
    assert message in capsys.readouterr().err


# -- Erlang B ---------------------------------------------------------------------------------

ERLANG_MEASURES = ["blocking_probability", "carried_load", "lost_load", "mean_busy_windows", "window_occupancy",
                   "log10_blocking_probability"]
ERLANG_POINTS = [("10", 12), ("100", 80), ("0.5", 1), ("3", 400)]  # the last underflows: B ~ 1e-700


def test_erlang_b_generated_recursion_agrees_with_eval(tmp_path, capsys):
    for measure in ERLANG_MEASURES:
        assert main(["codegen", "erlang-b", "--measure", measure, "--out", str(tmp_path / f"{measure}.py")]) == 0
    loads = [float(a) for a, _ in ERLANG_POINTS]
    servers = [n for _, n in ERLANG_POINTS]
    script = (
        "import json\n"
        "out = {}\n"
        f"for m in {ERLANG_MEASURES!r}:\n"
        "    fn = getattr(__import__(m), m)\n"
        f"    out[m] = {{'each': [fn(a, n) for a, n in zip({loads!r}, {servers!r})],\n"
        f"              'vector': fn({loads!r}, {servers!r}).tolist()}}\n"
        "print(json.dumps(out))\n"
    )
    got = json.loads(run_standalone(tmp_path, script))
    for i, (load, n) in enumerate(ERLANG_POINTS):
        assert main(["eval", "erlang-b", "--load", load, "--servers", str(n), "--json"]) == 0
        want = json.loads(capsys.readouterr().out)["measures"]
        for measure in ERLANG_MEASURES:
            value = got[measure]["each"][i]
            assert value == got[measure]["vector"][i]
            if want[measure] == 0:  # below the float64 range on both sides; the log10 measure carries it
                assert value == 0.0
            else:
                assert _close(value, want[measure]), (load, n, measure, value, want[measure])
    assert got["log10_blocking_probability"]["each"][-1] < -300


# -- redundant cluster: closed forms ------------------------------------------------------------

CLUSTER_MEASURES = ["timely_probability", "copy_timely_probability", "untimely_probability", "copy_late_probability",
                    "failure_free_probability", "load_lower", "load_upper", "mean_wait_lower", "mean_wait_upper",
                    "mean_sojourn_lower", "mean_sojourn_upper"]
# (rate, copies, nodes, service times, deadline, failure rates): generic, theta_1 = theta_2 (the paper's
# example n = m, v_1 = v_2), theta_1 close to theta_2, and faults
CLUSTER_POINTS = [
    ("3", 2, (10, 10), ("0.3", "0.2"), "0.6", ("0", "0")),
    ("2", 2, (4, 4), ("0.5", "0.5"), "1", ("0", "0")),
    ("3", 2, (10, 10), ("0.3", "0.3000001"), "0.6", ("0", "0")),
    ("3", 3, (10, 12), ("0.3", "0.2"), "0.6", ("0.01", "0.02")),
]


def _cluster_eval(capsys, point):
    rate, k, (n, m), (v1, v2), t0, (l1, l2) = point
    assert main(["eval", "redundant-cluster", "--rate", rate, "--copies", str(k), "--nodes", f"{n},{m}",
                 "--service-times", f"{v1},{v2}", "--deadline", t0, "--failure-rates", f"{l1},{l2}", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["measures"]


def _cluster_args(point):
    rate, k, (n, m), (v1, v2), t0, (l1, l2) = point
    return {"rate": float(rate), "copies": k, "nodes_lower": n, "nodes_upper": m, "service_time_lower": float(v1),
            "service_time_upper": float(v2), "deadline": float(t0), "failure_rate_lower": float(l1),
            "failure_rate_upper": float(l2)}


def test_redundant_cluster_generated_closed_forms_agree_with_eval(tmp_path, capsys):
    for measure in CLUSTER_MEASURES:
        assert main(["codegen", "redundant-cluster", "--measure", measure, "--out", str(tmp_path / f"{measure}.py")]) == 0
    script = (
        "import inspect, json\n"
        f"points = {[_cluster_args(p) for p in CLUSTER_POINTS]!r}\n"
        "out = {}\n"
        f"for m in {CLUSTER_MEASURES!r}:\n"
        "    fn = getattr(__import__(m), m)\n"
        "    names = list(inspect.signature(fn).parameters)\n"
        "    out[m] = [float(fn(*[p[a] for a in names])) for p in points]\n"
        "print(json.dumps(out))\n"
    )
    got = json.loads(run_standalone(tmp_path, script))
    for i, point in enumerate(CLUSTER_POINTS):
        want = _cluster_eval(capsys, point)
        for measure in CLUSTER_MEASURES:
            assert _close(got[measure][i], want[measure]), (point, measure, got[measure][i], want[measure])


@pytest.mark.parametrize("measure", ["timely_probability", "copy_late_probability"])
def test_redundant_cluster_generated_c_agrees_with_eval(tmp_path, capsys, measure):
    src = tmp_path / "rc.c"
    assert main(["codegen", "redundant-cluster", "--measure", measure, "--out", str(src), "--lang", "c"]) == 0
    got = run_generated_c(tmp_path, src, tmp_path / "rc.h", [_cluster_args(p) for p in CLUSTER_POINTS])
    for value, point in zip(got, CLUSTER_POINTS):
        assert _close(value, _cluster_eval(capsys, point)[measure]), (point, value)


def test_generated_cluster_code_is_vectorised(tmp_path):
    out = tmp_path / "t.py"
    assert main(["codegen", "redundant-cluster", "--measure", "copy_timely_probability", "--out", str(out)]) == 0
    namespace = load_generated(out)
    deadlines = numpy.linspace(0.1, 2, 7)
    r = namespace["copy_timely_probability"](3.0, 2, 10, 10, 0.3, 0.3, deadlines, 0.0, 0.0)
    assert r.shape == (7,) and numpy.all(numpy.diff(r) > 0)  # a later deadline is met more often


def test_codegen_list_names_the_measures(capsys):
    assert main(["codegen", "erlang-b", "--list"]) == 0
    assert capsys.readouterr().out.split() == sorted(ERLANG_MEASURES)
    assert main(["codegen", "erlang-b", "--out", "x.py"]) == 2  # neither --measure nor --list
    assert "needs --measure" in capsys.readouterr().err


def test_generated_vacation_code_broadcasts_parameters(tmp_path):
    """Arrays of parameters broadcast (last axis over r); each entry is the scalar call; loss grows with the load."""
    _codegen_vacation(tmp_path, ("geometric", "erlang:k=4", "exp"), stem="b")
    script = (
        "import json, numpy, b\n"
        "lam = numpy.array([[2.0], [4.0], [8.0]])\n"
        "grid = b.loss_probability(lam, numpy.array([3.0, 5.0]), 0.015, 0.075, [1, 20])\n"
        "each = [[[b.loss_probability(l, m, 0.015, 0.075, r) for r in (1, 20)] for m in (3.0, 5.0)]\n"
        "        for l in (2.0, 4.0, 8.0)]\n"
        "print(json.dumps({'shape': grid.shape, 'grid': grid.tolist(), 'each': each}))\n"
    )
    got = json.loads(run_standalone(tmp_path, script))
    assert got["shape"] == [3, 2, 2]
    grid = numpy.array(got["grid"])
    assert numpy.allclose(grid, got["each"], rtol=1e-13, atol=0)
    assert numpy.all(numpy.diff(grid, axis=0) > 0)  # more load, more loss
    assert numpy.all(numpy.diff(grid, axis=2) < 0)  # more room, less loss
