"""Generated code of erlang-b (the package's kernel, shipped verbatim) and redundant-cluster (closed forms).

Every generated module runs where qderive cannot be imported (``run_standalone``: python -S with
numpy only) and is compared with ``qderive eval`` at points that exercise each regime: for
Erlang B the recursion, the sum from the top (rho >= 2n) and a blocking below the float64 range;
for the cluster theta_1 = theta_2 (the paper's example), 1e-7-close, distinct, and faults.
Tolerance 1e-12 relative: the same algorithm in float64 (bit-identical for Erlang B, the same
kernel; the closed forms print with a different common-subexpression order).
"""

from __future__ import annotations

import ast
import functools
import json
import warnings

import numpy
import pytest

from conftest import cli, codegen, load_generated, run_generated_c, run_standalone
from qderive.derivations.export.codegen import kernel_sources


def _close(got, want, rtol=1e-12):
    return abs(got - want) <= rtol * abs(want)


# -- Erlang B ------------------------------------------------------------------------------------------

ERLANG_MEASURES = ["blocking_probability", "carried_load", "lost_load", "mean_busy_windows", "window_occupancy",
                   "log10_blocking_probability"]
# (load, servers): recursion; the top sum (rho >= 2n); light load; B ~ 1e-700 (below float64)
ERLANG_POINTS = [("10", 12), ("100", 80), ("0.5", 1), ("50", 3), ("1e6", 1000), ("3", 400)]


def test_erlang_b_generated_kernel_agrees_with_eval(tmp_path):
    for measure in ERLANG_MEASURES:
        assert cli(["codegen", "erlang-b", "--measure", measure, "--out", str(tmp_path / f"{measure}.py")])[0] == 0
    loads = [float(a) for a, _ in ERLANG_POINTS]
    servers = [n for _, n in ERLANG_POINTS]
    script = (
        "import json, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "out = {}\n"
        f"for m in {ERLANG_MEASURES!r}:\n"
        "    fn = getattr(__import__(m), m)\n"
        f"    out[m] = {{'each': [fn(a, n) for a, n in zip({loads!r}, {servers!r})],\n"
        f"              'vector': fn({loads!r}, {servers!r}).tolist()}}\n"
        "print(json.dumps(out))\n"
    )
    got = json.loads(run_standalone(tmp_path, script))
    for i, (load, n) in enumerate(ERLANG_POINTS):
        code, out, _ = cli(["eval", "erlang-b", "--load", load, "--servers", str(n), "--json"])
        want = json.loads(out)["measures"]
        for measure in ERLANG_MEASURES:
            value = got[measure]["each"][i]
            assert value == got[measure]["vector"][i]
            if isinstance(want[measure], str):  # below the float64 range: eval gives digits, the generated code 0
                assert value < 2.3e-308 and float(want[measure]) < 2.3e-308
            else:
                assert _close(value, want[measure]), (load, n, measure, value, want[measure])
    assert got["log10_blocking_probability"]["each"][-1] < -600


def test_erlang_b_generated_code_ships_the_kernel_verbatim(tmp_path):
    from importlib import resources

    out = tmp_path / "eb.py"
    assert cli(["codegen", "erlang-b", "--measure", "blocking_probability", "--out", str(out)])[0] == 0
    text = out.read_text()
    kernel = resources.files("qderive.numeric.kernels").joinpath("erlang.py").read_text()
    tree = ast.parse(kernel)
    for node in tree.body:  # every function of the kernel appears character for character
        if isinstance(node, ast.FunctionDef):
            assert ast.get_source_segment(kernel, node) in text, node.name
    assert "import qderive" not in text and "from qderive" not in text


def test_erlang_b_generated_code_refuses_bad_input_and_warns_on_underflow(tmp_path):
    out = tmp_path / "eb.py"
    assert cli(["codegen", "erlang-b", "--measure", "blocking_probability", "--out", str(out)])[0] == 0
    ns = load_generated(out)
    fn = ns["blocking_probability"]
    for load, n in ((-1, 3), (float("nan"), 3), (1, 2.5), (1, 0), (float("inf"), 3)):
        with pytest.raises(ValueError):
            fn(load, n)
    with pytest.warns(RuntimeWarning, match="below the float64 range"):
        assert fn(3, 400) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fn(1e300, 10**7) > 0.99  # the top sum: two terms, no warning
    assert fn(numpy.array([[5.0], [12.0]]), numpy.array([10, 20])).shape == (2, 2)


def test_kernel_names_do_not_collide_and_imports_are_clean():
    """The erlang kernel is concatenated with others in generated code: no top-level name in common."""
    from importlib import resources

    kernel_sources(("context", "erlang"))  # raises on an import other than numpy / math / siblings
    folder = resources.files("qderive.numeric.kernels")
    names = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".py") and entry.name != "__init__.py":
            tree = ast.parse(entry.read_text())
            names[entry.name] = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
                t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    mine = names.pop("erlang.py")
    for other, theirs in names.items():
        assert not mine & theirs, (other, mine & theirs)


def test_codegen_lists_the_measures():
    code, out, _ = cli(["codegen", "erlang-b", "--list"])
    assert code == 0 and out.split() == sorted(ERLANG_MEASURES)
    code, _, err = cli(["codegen", "erlang-b", "--out", "x.py"])  # neither --measure nor --list
    assert code == 2 and "needs --measure" in err
    assert cli(["codegen", "erlang-b", "--measure", "blocking_probability", "--out", "x.c", "--lang", "c"])[0] == 2


# -- the redundant cluster -------------------------------------------------------------------------------

CLUSTER_MEASURES = ["timely_probability", "copy_timely_probability", "untimely_probability", "copy_late_probability",
                    "failure_free_probability", "load_lower", "load_upper", "mean_wait_lower", "mean_wait_upper",
                    "mean_sojourn_lower", "mean_sojourn_upper"]
# (rate, copies, nodes, service times, deadline, failure rates)
CLUSTER_POINTS = [
    ("3", 2, (10, 10), ("0.3", "0.2"), "0.6", ("0", "0")),
    ("2", 2, (4, 4), ("0.5", "0.5"), "1", ("0", "0")),
    ("3", 2, (10, 10), ("0.3", "0.3000001"), "0.6", ("0", "0")),
    ("3", 3, (10, 12), ("0.3", "0.2"), "0.6", ("0.01", "0.02")),
]


@functools.cache
def _cluster_eval(point, extra=()):
    """`qderive eval redundant-cluster` at POINT (with the options EXTRA, a tuple) as JSON measures: run once per
    point and options in a session (the C tests ask for the same points once per measure)."""
    rate, k, (n, m), (v1, v2), t0, (l1, l2) = point
    code, out, err = cli(["eval", "redundant-cluster", "--rate", rate, "--copies", str(k), "--nodes", f"{n},{m}",
                          "--service-times", f"{v1},{v2}", "--deadline", t0, "--failure-rates", f"{l1},{l2}",
                          *extra, "--json"])
    assert code == 0, err
    return json.loads(out)["measures"]


def _cluster_args(point, split=None):
    rate, k, (n, m), (v1, v2), t0, (l1, l2) = point
    out = {"rate": float(rate), "copies": k, "nodes_lower": n, "nodes_upper": m, "service_time_lower": float(v1),
           "service_time_upper": float(v2), "deadline": float(t0), "failure_rate_lower": float(l1),
           "failure_rate_upper": float(l2)}
    if split:
        out.update({"service_failure_rate_lower": split[0], "service_failure_rate_upper": split[1]})
    return out


def _run_python(tmp_path, options, points, split=None, measures=CLUSTER_MEASURES):
    for measure in measures:  # conftest's codegen: a module once per set of options in a session
        assert codegen(tmp_path / f"{measure}.py", "redundant-cluster", "--measure", measure, *options)[0] == 0
    script = (
        "import inspect, json\n"
        f"points = {[_cluster_args(p, split) for p in points]!r}\n"
        "out = {}\n"
        f"for m in {list(measures)!r}:\n"
        "    fn = getattr(__import__(m), m)\n"
        "    names = list(inspect.signature(fn).parameters)\n"
        "    out[m] = [float(fn(*[p[a] for a in names])) for p in points]\n"
        "print(json.dumps(out))\n"
    )
    return json.loads(run_standalone(tmp_path, script))


#: the measures in two groups: the loop (``-m "not slow"``, see tests/conftest.py) generates and checks the first
#: (R(k), a copy's late probability, the fault-free factor and a mean: each kind of closed form the module emits, about
#: 0.3 s of SymPy per generated module), the full suite both
_CLUSTER_GROUPS = [
    pytest.param(["timely_probability", "copy_late_probability", "failure_free_probability", "mean_sojourn_upper"],
                 id="loop-group"),
    pytest.param(["copy_timely_probability", "untimely_probability", "load_lower", "load_upper", "mean_wait_lower",
                  "mean_wait_upper", "mean_sojourn_lower"], id="the-rest"),
]
assert sorted(sum((g.values[0] for g in _CLUSTER_GROUPS), [])) == sorted(CLUSTER_MEASURES)


@pytest.mark.parametrize("measures", _CLUSTER_GROUPS)
def test_cluster_generated_closed_forms_agree_with_eval(tmp_path, measures):
    got = _run_python(tmp_path, [], CLUSTER_POINTS, measures=measures)
    for i, point in enumerate(CLUSTER_POINTS):
        want = _cluster_eval(point)
        for measure in measures:
            assert _close(got[measure][i], want[measure]), (point, measure, got[measure][i], want[measure])


@pytest.mark.parametrize("measures", _CLUSTER_GROUPS)
def test_cluster_generated_pathwise_with_split_rates_agrees_with_eval(tmp_path, measures):
    split = (0.05, 0.03)
    got = _run_python(tmp_path, ["--failure-model", "pathwise", "--split-failure-rates"], CLUSTER_POINTS, split,
                      measures=measures)
    for i, point in enumerate(CLUSTER_POINTS):
        want = _cluster_eval(point, ("--failure-model", "pathwise", "--service-failure-rates", "0.05,0.03"))
        for measure in measures:
            assert _close(got[measure][i], want[measure]), (point, measure, got[measure][i], want[measure])


@pytest.mark.parametrize("measure", ["timely_probability", "copy_late_probability", "untimely_probability"])
def test_cluster_generated_c_agrees_with_eval(tmp_path, measure):
    src = tmp_path / "rc.c"
    assert cli(["codegen", "redundant-cluster", "--measure", measure, "--out", str(src), "--lang", "c"])[0] == 0
    got = run_generated_c(tmp_path, src, tmp_path / "rc.h", [_cluster_args(p) for p in CLUSTER_POINTS])
    for value, point in zip(got, CLUSTER_POINTS):
        assert _close(value, _cluster_eval(point)[measure]), (point, value)


def test_cluster_generated_code_refuses_invalid_input(tmp_path):
    out = tmp_path / "t.py"
    assert codegen(out, "redundant-cluster", "--measure", "timely_probability")[0] == 0
    fn = load_generated(out)["timely_probability"]
    good = dict(rate=3.0, copies=2, nodes_lower=10, nodes_upper=10, service_time_lower=0.3, service_time_upper=0.3,
                deadline=0.6, failure_rate_lower=0.0, failure_rate_upper=0.0)
    assert _close(fn(**good), 0.9945454115922399)
    for change, message in ((dict(copies=12), "unstable"), (dict(rate=40.0), "unstable"), (dict(copies=2.5), "integer"),
                            (dict(nodes_lower=9.5), "integer"), (dict(deadline=0.0), "deadline"),
                            (dict(failure_rate_lower=-1.0), "failure_rate_lower"), (dict(rate=float("nan")), "rate")):
        with pytest.raises(ValueError, match=message):
            fn(**{**good, **change})
    # C: NaN for the same invalid input
    src = tmp_path / "rc.c"
    assert cli(["codegen", "redundant-cluster", "--measure", "timely_probability", "--out", str(src), "--lang",
                "c"])[0] == 0
    rows = [good, {**good, "copies": 12}, {**good, "copies": 2.5}, {**good, "deadline": -1.0}]
    values = run_generated_c(tmp_path, src, tmp_path / "rc.h", rows)
    assert _close(values[0], 0.9945454115922399) and all(numpy.isnan(v) for v in values[1:])


def test_generated_cluster_code_is_vectorised(tmp_path):
    out = tmp_path / "t.py"
    assert codegen(out, "redundant-cluster", "--measure", "copy_timely_probability")[0] == 0
    fn = load_generated(out)["copy_timely_probability"]
    deadlines = numpy.linspace(0.1, 2, 7)
    r = fn(3.0, 2, 10, 10, 0.3, 0.3, deadlines, 0.0, 0.0)
    assert r.shape == (7,) and numpy.all(numpy.diff(r) > 0)  # a later deadline is met more often
    each = [fn(3.0, 2, 10, 10, 0.3, 0.3, t, 0.0, 0.0) for t in deadlines]
    assert numpy.allclose(r, each, rtol=0, atol=0)
