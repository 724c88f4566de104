"""Generated code for the vacation queues: standalone (numpy only, qderive not importable), the
package's own kernels inside, and equal to ``qderive eval`` to 1e-12 relative (the same algorithm
on float64 inputs rounded in the same order; measured differences ~1e-15)."""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
import pytest

from conftest import cli, codegen, load_generated, run_generated_c, run_standalone

FAMILIES = [
    # (codegen options, eval laws, arguments of the generated function in order)
    (["--batch", "geometric", "--service", "erlang:k=4", "--vacation", "exp"],
     ["--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation", "exp:mean=0.075"],
     "8, 5, 0.015, 0.075"),
    (["--batch", "const:n=2", "--service", "det", "--vacation", "none"],
     ["--batch", "const:n=2", "--service", "det:mean=0.02", "--vacation", "none"], "20, 0.02"),
    (["--batch", "pmf:sizes=1/3", "--service", "hyperexp:n=2", "--vacation", "coxian:n=2", "--vacation-policy",
      "single"],
     ["--batch", "pmf:1=0.5,3=0.5", "--service", "hyperexp:p=0.25/0.75,mean=0.01/0.02", "--vacation",
      "coxian:rates=20/30,p=0.5", "--vacation-policy", "single"],
     "10, 0.5, 0.5, 0.25, 0.75, 0.01, 0.02, 20, 30, 0.5"),
    (["--batch", "poisson1", "--service", "gamma", "--vacation", "ph:n=2", "--admission", "whole"],
     ["--batch", "poisson1:mean=2.5", "--service", "gamma:shape=2.5,mean=0.01", "--vacation",
      "ph:alpha=0.5/0.5,T=-20/10/0/-30", "--admission", "whole"],
     "30, 2.5, 2.5, 0.01, 0.5, 0.5, -20, 10, 0, -30"),
]


@pytest.mark.parametrize("family, laws, args", FAMILIES, ids=["geo-erlang-exp", "const-det-none",
                                                             "pmf-hyperexp-coxian-single", "poisson-gamma-ph-whole"])
def test_generated_finite_queue_module_equals_eval(tmp_path, family, laws, args):
    out = tmp_path / "loss.py"
    code, err = codegen(out, "vacation-finite", "--measure", "loss_probability", *family)  # once per options
    assert code == 0, err
    text = out.read_text()
    assert "import qderive" not in text and "class FiniteVacation" in text  # the kernel itself, not a copy of it
    for r in (1, 20):
        code, js, err = cli(["eval", "vacation-finite", *laws, "--rate", args.split(",")[0], "--capacity", str(r),
                             "--json"])
        assert code == 0, err
        want = json.loads(js)["measures"]["loss_probability"]
        got = float(run_standalone(tmp_path, f"import loss\nprint(repr(loss.loss_probability({args}, {r})))"))
        assert got == pytest.approx(want, rel=1e-12, abs=0)


def test_generated_module_broadcasts_and_sweeps(tmp_path):
    out = tmp_path / "w.py"
    assert codegen(out, "vacation-finite", "--measure", "mean_wait", "--batch", "geometric",
                   "--service", "erlang:k=4", "--vacation", "exp")[0] == 0
    ns = load_generated(out)
    grid = ns["mean_wait"](np.array([4.0, 8.0]), 5, 0.015, 0.075, [10, 200])
    assert grid.shape == (2, 2)
    for i, lam in enumerate((4.0, 8.0)):
        for j, r in enumerate((10, 200)):
            # a sweep builds the sequences once up to max r, a single point to its own r: the same positive
            # terms summed in other blocks, so equal to rounding (a few ulps)
            assert grid[i, j] == pytest.approx(ns["mean_wait"](lam, 5, 0.015, 0.075, r), rel=1e-14, abs=0)
    with pytest.raises(ValueError, match="service_mean"):
        ns["mean_wait"](8, 5, -0.015, 0.075, 10)
    with pytest.raises(ValueError, match="r = 0"):
        ns["mean_wait"](8, 5, 0.015, 0.075, 0)


def test_vacation_infinite_closed_forms_in_python_and_c(tmp_path):
    py = tmp_path / "w.py"
    assert cli(["codegen", "vacation-infinite", "--measure", "mean_wait", "--out", str(py)])[0] == 0
    args = dict(lam=8.0, b1=0.015, b2=F(5, 4) * F(3, 200) ** 2, f1=0.075, f2=2 * F(3, 40) ** 2, l1=5.0, l2=45.0)
    call = ", ".join(f"{k}={float(v)!r}" for k, v in args.items())
    got = float(run_standalone(tmp_path, f"import w\nprint(repr(w.mean_wait({call})))"))
    assert got == pytest.approx(0.2390625, rel=1e-14)
    out = run_standalone(tmp_path, "import w\ntry:\n    w.mean_wait(lam=20.0, b1=0.015, b2=3e-4, f1=0.075, f2=0.01, "
                                   "l1=5.0, l2=45.0)\nexcept ValueError as e:\n    print(e)")
    assert "rho_bar" in out  # rho_bar = 1.5: no stationary regime, refused (it used to return -0.073)
    c = tmp_path / "w.c"
    assert cli(["codegen", "vacation-infinite", "--measure", "mean_wait", "--out", str(c), "--lang", "c"])[0] == 0
    vals = run_generated_c(tmp_path, c, tmp_path / "w.h", [args, {**args, "lam": 20.0}])
    assert vals[0] == pytest.approx(0.2390625, rel=1e-14) and np.isnan(vals[1])


@pytest.mark.parametrize("argv, fragment", [
    (["--out", "x.h", "--lang", "c"], "must be a file name ending in .c"),
    (["--out", 'a"b.c', "--lang", "c"], "letters, digits"),
    (["--out", "/nonexistent/dir/x.py"], "does not exist"),
    (["--out", "x.txt"], "must end in .py"),
])
def test_codegen_output_paths_are_checked_first(tmp_path, monkeypatch, argv, fragment):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(["codegen", "vacation-infinite", "--measure", "mean_wait", *argv])
    assert code == 2 and fragment in err


def test_generated_module_takes_the_load_instead_of_the_rate(tmp_path):
    """``load=`` (rho_bar = lam l1 b1): equal to ``qderive eval --load`` at loads below, near and above 1
    (the same kernel on the same float64 inputs up to the rounding of lam = load / (l1 b1): rel 1e-12), an
    array of loads equal to the points one by one (to 1e-12 relative: the array runs in one vectorised pass
    whose sums are numpy's, in another order than the scalar pass's), and the rate or the load, not both."""
    out = tmp_path / "loss.py"
    assert codegen(out, "vacation-finite", "--measure", "loss_probability", "--batch",
                   "geometric", "--service", "erlang:k=4", "--vacation", "exp")[0] == 0
    ns = load_generated(out)
    f = ns["loss_probability"]
    loads = [0.3, 0.95, 1.5]
    for load in loads:
        code, js, err = cli(["eval", "vacation-finite", "--batch", "geometric:mean=5", "--service",
                             "erlang:k=4,mean=0.015", "--vacation", "exp:mean=0.075", "--load", str(load),
                             "--capacity", "40", "--json"])
        assert code == 0, err
        want = json.loads(js)["measures"]["loss_probability"]
        assert f(batch_mean=5, service_mean=0.015, vacation_mean=0.075, r=40, load=load) == pytest.approx(
            want, rel=1e-12, abs=0)
    grid = f(batch_mean=5, service_mean=0.015, vacation_mean=0.075, r=40, load=np.array(loads))
    assert grid.shape == (3,)
    for g, load in zip(grid, loads):
        assert g == pytest.approx(f(load / (5 * 0.015), 5, 0.015, 0.075, 40), rel=1e-12, abs=0)
    with pytest.raises(TypeError, match="one of them"):
        f(8, 5, 0.015, 0.075, 40, load=0.6)
    with pytest.raises(TypeError, match="missing argument 'r'"):
        f(batch_mean=5, service_mean=0.015, vacation_mean=0.075, load=0.6)
    with pytest.raises(ValueError, match="load"):
        f(batch_mean=5, service_mean=0.015, vacation_mean=0.075, r=40, load=-1)
    assert "in ONE pass of the recursion (2b)" in f.__doc__


def test_shared_batch_tables_change_nothing(tmp_path):
    """The batch law's convolution tables are shared by the points of an array (keyed by the batch parameters
    and the size): a grid over loads x batch means (two groups of points, one per batch mean, each run in one
    vectorised pass) equals each point computed alone with the tables cleared (1e-12 relative: the vectorised
    pass sums in numpy's order, the scalar one in its own; the blocks are the same)."""
    out = tmp_path / "loss.py"
    assert codegen(out, "vacation-finite", "--measure", "loss_probability", "--batch",
                   "geometric", "--service", "erlang:k=4", "--vacation", "exp")[0] == 0
    ns = load_generated(out)
    f, tables = ns["loss_probability"], ns["_COLUMNS"]
    lams, means = np.array([[2.0], [9.0], [30.0]]), np.array([[1.5, 5.0]])
    grid = f(lams, means, 0.015, 0.075, 60)
    assert grid.shape == (3, 2) and len(tables) >= 1
    for i in range(3):
        for j in range(2):
            tables.clear()
            assert grid[i, j] == pytest.approx(f(float(lams[i, 0]), float(means[0, j]), 0.015, 0.075, 60),
                                               rel=1e-12, abs=0)


def _eval_measure(laws, load, capacity, measure, digits=None):
    code, js, err = cli(["eval", "vacation-finite", *laws, "--load", str(load), "--capacity", str(capacity), "--json",
                         *(["--digits", str(digits)] if digits else [])])
    assert code == 0, err
    return float(json.loads(js)["measures"][measure])


@pytest.mark.parametrize("family, laws, args", FAMILIES[:3], ids=["geo-erlang-exp", "const-det-none",
                                                                 "pmf-hyperexp-coxian-single"])
def test_array_of_loads_runs_in_one_pass_equal_to_points_and_mpmath(tmp_path, family, laws, args):
    """50 loads (light load to overload) in one vectorised pass of the recursion (2b) equal the same loads one by
    one (1e-12 relative: the same operations per point, sums in numpy's order over the points' axis), and
    ``qderive eval --digits 30`` (the mpmath path: other arithmetic, 30 digits) at three loads to 1e-9 (float64
    through an O(r^2) positive recursion: a few hundred roundings of 1e-16)."""
    out = tmp_path / "m.py"
    assert codegen(out, "vacation-finite", "--measure", "mean_queue_length", *family)[0] == 0
    ns = load_generated(out)
    f = ns["mean_queue_length"]
    values = [float(v) for v in args.split(", ")][1:]
    loads = np.geomspace(0.05, 4.0, 50)
    calls = []
    original = ns["_kernel_points"]
    ns["_kernel_points"] = lambda rows: calls.append(len(rows)) or original(rows)
    grid = f(**dict(zip(f.__code__.co_varnames[1: 1 + len(values)], values)), r=30, load=loads)
    assert calls == [50]  # one pass for the 50 points
    for g, load in zip(grid, loads):
        alone = f(**dict(zip(f.__code__.co_varnames[1: 1 + len(values)], values)), r=30, load=float(load))
        assert g == pytest.approx(alone, rel=1e-12, abs=0)
    for i in (0, 30, 49):
        want = _eval_measure(laws, repr(float(loads[i])), 30, "mean_queue_length", digits=30)
        assert grid[i] == pytest.approx(want, rel=1e-9, abs=0)


def test_a_point_that_underflows_is_named_and_poisons_no_other(tmp_path):
    """A constant service at lam b1 = 800 has P(nobody arrives during a service) = e^-800, below float64: the
    vectorised pass notices (for every point at once), the points are run one by one, and the call raises
    FloatingPointError naming that point; the same array without it is computed (equal to the points alone)."""
    out = tmp_path / "m.py"
    assert codegen(out, "vacation-finite", "--measure", "loss_probability", "--batch",
                   "geometric", "--service", "det", "--vacation", "exp")[0] == 0
    f = load_generated(out)["loss_probability"]
    with pytest.raises(FloatingPointError, match=r"at the point \(800\.0, 1\.0, 1\.0, 0\.5\).*underflows"):
        f(batch_mean=1.0, service_mean=1.0, vacation_mean=0.5, r=20, load=np.array([0.5, 800.0, 1.5]))
    good = f(batch_mean=1.0, service_mean=1.0, vacation_mean=0.5, r=20, load=np.array([0.5, 1.5]))
    for g, load in zip(good, (0.5, 1.5)):
        assert g == pytest.approx(f(batch_mean=1.0, service_mean=1.0, vacation_mean=0.5, r=20, load=load),
                                  rel=1e-12, abs=0)


def test_count_sequences_over_points_equal_each_point():
    """The negative-binomial and Poisson count kernels over points (Float64Points: one pass for 40 points, the
    table as long as the longest point needs, the median split at the first point's) equal the scalar kernels at
    each point to 1e-13 relative (positive sums in another order and of other lengths; the scalar path itself is
    unchanged); Poisson means on both sides of the far-regime limit are declined (ArithmeticError)."""
    from qderive.numeric.kernels.context import FLOAT64
    from qderive.numeric.kernels.counts import negative_binomial_sequences, poisson_sequences
    from qderive.numeric.kernels.points import Float64Points

    x = np.geomspace(0.01, 300.0, 40)  # lambda E[T]: from almost no arrivals to many
    for shape in (1, 4):
        p0, q = shape / (x + shape), x / (x + shape)
        together = negative_binomial_sequences(Float64Points(len(x)), shape, p0, q, 150)
        for i in range(len(x)):
            alone = negative_binomial_sequences(FLOAT64, shape, float(p0[i]), float(q[i]), 150)
            for v, w in zip(together, alone):
                np.testing.assert_allclose(v[:, i], w, rtol=1e-13, atol=0)
    x = np.geomspace(0.01, 400.0, 40)  # below the far regime of n = 150 (about 740)
    together = poisson_sequences(Float64Points(len(x)), [x], [1.0], 150)
    for i in range(len(x)):
        for v, w in zip(together, poisson_sequences(FLOAT64, [float(x[i])], [1.0], 150)):
            np.testing.assert_allclose(v[:, i], w, rtol=1e-13, atol=0)
    with pytest.raises(ArithmeticError, match="one by one"):
        poisson_sequences(Float64Points(2), [np.array([1.0, 400.0])], [1.0], 5)


def test_passes_of_a_chunk_each_and_a_declined_pass(tmp_path):
    """Loads given in any order run in passes of ``_chunk`` points sorted by rate (here 16: three passes for 40
    loads), each value in its place (1e-12 relative to the points alone: sums in another order); a pass whose
    count tables would be too long together (a load of 5e4 next to light loads: about 10^5 terms for every point)
    is declined by the count kernel and its points run one by one; an empty array gives an empty result."""
    out = tmp_path / "loss.py"
    assert codegen(out, "vacation-finite", "--measure", "loss_probability", "--batch",
                   "geometric", "--service", "erlang:k=4", "--vacation", "exp")[0] == 0
    ns = load_generated(out)
    f = ns["loss_probability"]
    ns["_chunk"] = lambda rs: 16
    calls, original = [], ns["_kernel_points"]
    ns["_kernel_points"] = lambda rows: calls.append(len(rows)) or original(rows)
    kw = {"batch_mean": 2.0, "service_mean": 1.0, "vacation_mean": 0.5, "r": 25}
    loads = np.random.default_rng(7).permutation(np.geomspace(0.05, 5.0, 40))
    got = f(load=loads, **kw)
    assert calls == [16, 16, 8]
    for g, load in zip(got, loads):
        assert g == pytest.approx(f(load=float(load), **kw), rel=1e-12, abs=0)
    calls.clear()
    mixed = np.array([0.5, 5e4, 0.7])
    got = f(load=mixed, **kw)
    assert calls == [3]  # tried, declined inside (ArithmeticError), then point by point
    for g, load in zip(got, mixed):
        assert g == f(load=float(load), **kw)  # the scalar path itself: equal
    assert f(load=np.array([]), **kw).shape == (0,)  # an empty array: an empty result, with the axis over r
    assert f(load=np.ones((0, 3)), **{**kw, "r": [5, 25]}).shape == (0, 3, 2)
