"""``qderive sweep`` and ``qd.sweep``: grids, equality with direct evaluations, shards, resume, executors.

Every sweep value is compared with ``Model.evaluate`` of the same model built directly (not
through the grid code): the sweep must be *exactly* that evaluation (same float64 bits; the
precision policy runs per point), whatever the executor, the number of workers or shards.
Grid values are compared with exact rationals computed here by hand.
"""

from __future__ import annotations

import csv
import json
from fractions import Fraction as F

import pytest
from conftest import cli

import qderive as qd
from qderive.symbolic import grid
from qderive.symbolic.errors import BudgetError, ParameterError

LAWS = ["--batch", "geometric:mean=2", "--vacation", "exp:mean=0.5"]
BASE = ["sweep", "vacation-finite", *LAWS, "--load", "0.5:0.9:0.2", "--capacity", "2,5",
        "--service", "exp:mean=1;erlang:k=2,mean=1", "--quiet"]


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def run(tmp_path, name, *extra):
    out = tmp_path / name
    code, _, err = cli([*BASE, "--out", str(out), *extra])
    assert code == 0, err
    return read(out)


# ------------------------------------------------------------------------------------------
# grid parsing
# ------------------------------------------------------------------------------------------


def test_ranges_are_exact_and_include_a_stop_on_the_grid():
    assert grid.number_range("0.1:0.3:0.1", "--load") == [F(1, 10), F(2, 10), F(3, 10)]  # 0.1+0.2 != 0.3 in floats
    assert grid.number_range("0:1:0.3", "--load") == [0, F(3, 10), F(6, 10), F(9, 10)]  # 1 is not on the grid
    assert grid.number_range("1/3:1:1/3", "--load") == [F(1, 3), F(2, 3), 1]
    assert grid.number_range("10:1:-4", "--capacity", integer=True) == [10, 6, 2]
    assert grid.expand_numbers("1:3:1,7", "--capacity", True) == [1, 2, 3, "7"]


@pytest.mark.parametrize("text, message", [
    ("0:1:0", "--load = 0:1:0: the step of a range must not be 0"),
    ("1:0:0.5", "must point from start towards stop"),
    ("0:1", "a range is start:stop:step"),
    ("0:x:1", "is not a number"),
])
def test_bad_ranges_name_the_option(text, message):
    with pytest.raises(ParameterError, match=message) as info:
        grid.number_range(text, "--load")
    assert "--load" in str(info.value)


def test_grid_limits():
    with pytest.raises(BudgetError, match="grid-points = 2000001 exceeds the limit 1000000"):
        grid.number_range("0:2000000:1", "--capacity", integer=True)
    axes = [grid.Axis("a", tuple({} for _ in range(2000)), (0,) * 2000), grid.Axis("b", tuple({} for _ in range(1000)),
                                                                                    (0,) * 1000)]
    with pytest.raises(BudgetError, match=r"grid-points = 2000000 .*2000 a x 1000 b"):
        grid.grid_size(axes)
    with qd.limits(grid_points=3_000_000):
        assert grid.grid_size(axes) == 2_000_000


def test_point_decoding_is_the_product_order():
    import itertools

    a = grid.axis("x", ("x",), (None,), [1, 2, 3])
    b = grid.axis("y", ("y",), (None,), ["u", "v"])
    expected = list(itertools.product([1, 2, 3], ["u", "v"]))
    assert [tuple(grid.point_values([a, b], i)[0].values()) for i in range(6)] == expected


@pytest.mark.parametrize("args, message", [
    (["--capacity", "1:5:0.5"], "--capacity = 1:5:0.5: takes integers, but the range 1:5:0.5 contains 1.5"),
    (["--capacity", "2,,5"], "an empty value in the list"),
    (["--load", "0.5:0.9:0"], "--load = 0.5:0.9:0: the step of a range must not be 0"),
    (["--capacity", "1:2000000:1"], "grid-points = 2000000 exceeds the limit"),
    (["--service", "exp:mean=1;;exp:mean=2"], "an empty value in the list"),
    (["--service", "exp:mean=1;bogus:x=1"], "--service"),
    (["--admission", "partial,total"], "--admission = total: must be one of partial, whole"),
    (["--shard", "2/2"], "--shard = 2/2: must be I/N with integers 0 <= I < N"),
    (["--scheduler", "tcp://localhost:1"], "--scheduler = tcp://localhost:1: needs --executor dask"),
    (["--workers", "0"], "--workers = 0: must be an integer >= 1"),
])
def test_cli_errors_are_one_line(tmp_path, args, message):
    argv = [*BASE, "--out", str(tmp_path / "x.csv")]
    for opt, value in zip(args[::2], args[1::2]):  # replace the option if BASE has it
        if opt in argv:
            argv[argv.index(opt) + 1] = value
        else:
            argv += [opt, value]
    code, out, err = cli(argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x.csv").exists()


def test_output_suffix_and_missing_pyarrow_message(tmp_path, monkeypatch):
    import sys

    code, _, err = cli([*BASE, "--out", str(tmp_path / "x.txt")])
    assert code == 2 and "--out" in err and ".csv or .parquet" in err
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if pyarrow were not installed
    code, _, err = cli([*BASE, "--out", str(tmp_path / "x.parquet")])
    assert code == 2 and "needs pyarrow" in err and len(err.strip().splitlines()) == 1


def test_parquet_has_the_csv_values_and_resumes(tmp_path):
    import pyarrow  # noqa: F401  (the test extra installs it: a missing pyarrow fails here)
    from qderive.derivations.sweep import read_table

    full = run(tmp_path, "a.csv")
    code, _, err = cli([*BASE, "--out", str(tmp_path / "a.parquet"), "--shard", "0/2"])
    assert code == 0, err
    code, _, err = cli([*BASE, "--out", str(tmp_path / "a.parquet"), "--resume"])
    assert code == 0, err
    rows = read_table(tmp_path / "a.parquet")
    assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in rows] == full


# ------------------------------------------------------------------------------------------
# the values: exactly the direct evaluations
# ------------------------------------------------------------------------------------------


def direct(load, service, capacity, **options):
    model = qd.FiniteVacationQueue.from_load(load, qd.Geometric(2), service, qd.Exponential(F(1, 2)), capacity)
    return model.evaluate(**options)


def test_sweep_equals_direct_evaluations(tmp_path):
    rows = run(tmp_path, "a.csv", "--wait-tail", "0.5", "--wait-moments", "2")
    services = [qd.Exponential(1), qd.Erlang(2, 1)]
    expected = [(load, s, r) for load in (F(1, 2), F(7, 10), F(9, 10)) for s in services for r in (2, 5)]
    assert [int(r["point"]) for r in rows] == list(range(12))
    for row, (load, service, r) in zip(rows, expected):
        assert float(row["load"]) == float(load) and row["service"] == service.spec_text() and int(row["capacity"]) == r
        rec = direct(load, service, r, wait_tail=["0.5"], wait_moments=2)
        for key, value in rec.as_dict().items():
            if key == "wait_tail":
                assert float(row["wait_tail.0.5"]) == value["0.5"]
            elif key == "wait_moments":
                assert [float(row["wait_moments.1"]), float(row["wait_moments.2"])] == value
            else:
                assert float(row[key]) == value, key  # repr round trip: the same float64
        assert row["precision"] == "float64" and row["error"] == ""


def test_python_api_and_digits_and_distribution(tmp_path):
    rows = qd.sweep("vacation-finite", load=["0.7", "1.5"], capacity=[1, 3], batch=qd.Geometric(2),
                    service=qd.Exponential(1), vacation=qd.Exponential(F(1, 2)), include=("p",), digits=20)
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert [(r["load"], r["capacity"]) for r in rows] == [(0.7, 1), (0.7, 3), (1.5, 1), (1.5, 3)]
    for row in rows:
        rec = direct(F(str(row["load"])), qd.Exponential(1), row["capacity"], digits=20, include=("p",))
        assert row["loss_probability"] == qd_text(rec.loss_probability, 20)  # decimal strings, as eval prints them
        assert [row[f"p.{j}"] for j in range(row["capacity"] + 1)] == [qd_text(v, 20) for v in rec.p]
    assert rows[0].get("p.3") in (None, "") or rows[0]["p.3"] != rows[0]["p.3"]  # r = 1 has no p.3 (empty / NaN)
    assert any("overload" in r["notes"] for r in rows)  # load 1.5: the note of eval


def qd_text(value, digits):
    from qderive.derivations.cli.output import format_value

    return format_value(value, digits)


def test_thresholds_as_tuples_and_ranges_inside_them(tmp_path):
    out = tmp_path / "h.csv"
    code, _, err = cli(["sweep", "hysteretic", "--service", "exp:mean=1", "--load", "0.8", "--thresholds",
                        "2,3:4:1,8;1,2,6", "--out", str(out), "--quiet"])
    assert code == 0, err
    rows = read(out)
    assert [r["thresholds"] for r in rows] == ["2,3,8", "2,4,8", "1,2,6"]
    for row in rows:
        L, H, R = map(int, row["thresholds"].split(","))
        rec = qd.HystereticModel(service=qd.Exponential(1), L=L, H=H, R=R, rate=F(4, 5)).evaluate()
        assert float(row["p_discard"]) == rec.p_discard
    # Python: a list of tuples is swept; a bad tuple is an error naming the option
    same = qd.sweep("hysteretic", service=qd.Exponential(1), rate=0.8, thresholds=[(2, 3, 8), (2, 4, 8), (1, 2, 6)])
    same = same.to_dict("records") if hasattr(same, "to_dict") else same
    assert [float(r["p_discard"]) for r in same] == [float(r["p_discard"]) for r in rows]
    code, _, err = cli(["sweep", "hysteretic", "--service", "exp:mean=1", "--load", "0.8", "--thresholds", "2,3;1,2,6",
                        "--out", str(out)])
    assert code == 2 and "--thresholds" in err and "expects 3 values" in err


def test_invalid_points_are_reported_in_the_error_column(tmp_path):
    out = tmp_path / "i.csv"
    args = ["sweep", "vacation-finite", "--batch", "geometric:mean=2", "--service", "exp:mean=1", "--vacation",
            "exp:mean=0.5", "--load", "0.5", "--out", str(out)]
    code, _, err = cli([*args, "--capacity", "2,0"])
    assert code == 0 and "1 with an error" in err
    rows = read(out)
    assert rows[0]["error"] == "" and rows[1]["mean_wait"] == ""
    assert rows[1]["error"] == "--capacity = 0: must be >= 1 with vacations (nobody could wait during a vacation)"
    code, _, err = cli([*args, "--capacity", "0,0", "--quiet"])
    assert code == 2 and "every point failed" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------
# shards, resume, workers, Dask
# ------------------------------------------------------------------------------------------


def test_shards_concatenate_to_the_full_run_and_resume_skips_points(tmp_path):
    full = run(tmp_path, "full.csv")
    parts = run(tmp_path, "s0.csv", "--shard", "0/3") + run(tmp_path, "s1.csv", "--shard", "1/3") + \
        run(tmp_path, "s2.csv", "--shard", "2/3")
    assert sorted(parts, key=lambda r: int(r["point"])) == full
    assert [int(r["point"]) for r in read(tmp_path / "s1.csv")] == [1, 4, 7, 10]
    # resume a shard into the full run: the shard's rows are kept (marked here), the others computed
    marked = read(tmp_path / "s1.csv")
    for r in marked:
        r["notes"] = "from the shard"
    with open(tmp_path / "s1.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(marked[0]))
        w.writeheader()
        w.writerows(marked)
    code, _, err = cli([*BASE, "--out", str(tmp_path / "s1.csv"), "--resume"])
    assert code == 0, err
    resumed = read(tmp_path / "s1.csv")
    assert [r["notes"] == "from the shard" for r in resumed] == [i % 3 == 1 for i in range(12)]
    assert [{**r, "notes": ""} for r in resumed] == full
    # an interrupted run leaves FILE.partial: without --resume it is refused, with it the rows are used
    rows = read(tmp_path / "full.csv")[:5]
    partial = tmp_path / "p.csv.partial"
    partial.write_text("".join(json.dumps({**r, "point": int(r["point"]), "notes": "journal"}) + "\n" for r in rows))
    code, _, err = cli([*BASE, "--out", str(tmp_path / "p.csv")])
    assert code == 2 and "--resume" in err
    code, _, err = cli([*BASE, "--out", str(tmp_path / "p.csv"), "--resume"])
    assert code == 0 and not partial.exists()
    assert [r["notes"] for r in read(tmp_path / "p.csv")] == ["journal"] * 5 + [""] * 7
    # a file of another sweep is refused
    code, _, err = cli([*BASE, "--out", str(tmp_path / "full.csv"), "--resume", "--capacity", "3,5"])
    assert code == 2 and "capacity = 2 at point 0, where this grid has 3" in err


def test_one_and_two_workers_are_identical(tmp_path):
    one = run(tmp_path, "w1.csv")
    two = run(tmp_path, "w2.csv", "--workers", "2")
    assert one == two


def test_dask_local_cluster_matches_the_local_run(tmp_path):
    import distributed  # the test extra installs dask[distributed]: a missing one fails here
    from qderive.derivations.sweep import run_grid
    from qderive.symbolic.models.vacation import FiniteVacationQueue

    axes = [grid.axis("load", ("load",), (None,), [F(1, 2), F(9, 10)]), grid.axis("capacity", ("capacity",), (None,),
                                                                               [2, 5, 9])]
    fixed = {"batch": qd.Geometric(2), "service": qd.Erlang(2, 1), "vacation": qd.Exponential(F(1, 2))}
    local = run_grid(FiniteVacationQueue, fixed, axes)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        remote = run_grid(FiniteVacationQueue, fixed, axes, executor=client.get_executor(), chunk_size=2)
    assert remote.rows == local.rows and len(local.rows) == 6


def test_optimize_takes_the_executor_options():
    args = ["optimize", "redundant-cluster", "--help"]
    code, out, _ = cli(args)
    assert code == 0 and "--executor {local,dask}" in out and "--scheduler ADDRESS" in out
    code, out, _ = cli(["optimize", "hysteretic", "--help"])
    assert code == 0 and "--workers N" in out and "--executor {local,dask}" in out


# ------------------------------------------------------------------------------------------
# size near saturation: bounded work (issue 16, item 5)
# ------------------------------------------------------------------------------------------


def _size(load, target, top, scan, monkeypatch, **limits):
    from qderive.numeric.engines import vacation as V
    from qderive.symbolic.models.vacation import SizeRequest

    monkeypatch.setattr(V, "SCAN_CAPACITY", scan)
    values = {"load": F(load), "batch": qd.Geometric(5), "service": qd.Erlang(4, F(3, 200)),
              "vacation": qd.Exponential(F(3, 40))}
    with qd.limits(**limits):
        return V.size(values, SizeRequest(F(target), max_capacity=top), progress=False)


@pytest.mark.parametrize("load, target", [("0.95", "1e-6"), ("1.05", "0.0477")])
def test_size_bracketing_finds_what_the_scan_finds(monkeypatch, load, target):
    # the capacity found by the decay-rate prediction + bisection beyond r0 = 40 equals the one-by-one scan
    scanned = _size(load, target, 5000, 10**9, monkeypatch)
    bracketed = _size(load, target, 5000, 40, monkeypatch)
    assert bracketed == scanned and scanned["capacity"] > 80
    assert scanned["loss_probability"] <= float(F(target)) < scanned["loss_probability_one_fewer"]


def test_size_refuses_early_when_the_prediction_exceeds_the_limits(monkeypatch):
    import time

    t = time.perf_counter()
    with pytest.raises(BudgetError, match=r"capacity = \d+ exceeds the limit 3000 .*target-loss needs about r = "):
        _size("0.999", "1e-200", 3000, 200, monkeypatch, capacity=3000)
    with pytest.raises(ParameterError, match=r"not met with capacity up to 1000 .*about r = \d+ would be needed"):
        _size("0.999", "1e-30", 1000, 200, monkeypatch)
    assert time.perf_counter() - t < 5  # neither builds the sequences beyond r0 = 200


def test_optimize_recomputes_flagged_points_on_the_executor():
    # the recomputation of untrusted float64 grid points (hysteretic optimize) runs on any executor and
    # gives each point's own Model.evaluate
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import replace

    from qderive.numeric.engines.hysteretic import _recompute

    model = qd.HystereticModel(service=qd.Exponential(1), L=1, H=2, R=8, rate=F(3, 5))
    pairs = [(1, 2), (2, 5), (3, 6)]
    with ThreadPoolExecutor(2) as ex:
        got = _recompute(model, pairs, ex, False)
    assert got == _recompute(model, pairs, None, False)
    for L, H in pairs:
        assert got[(L, H)] == {k: float(v) for k, v in replace(model, L=L, H=H).evaluate().as_dict().items()}


def _loaded_modules():
    import sys

    return {name for name in sys.modules if name.startswith(("sympy", "qderive.derivations", "pandas"))}


def test_a_spawned_worker_imports_only_the_numeric_code():
    # what a macOS/Windows pool worker or a Dask worker imports to run a chunk: no SymPy, no command line
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from qderive.numeric.sweep import evaluate_chunk
    from qderive.symbolic.limits import current

    m = qd.FiniteVacationQueue.from_load(F(1, 2), qd.Geometric(2), qd.Exponential(1), qd.Exponential(F(1, 2)), 5)
    fixed = {"batch": m.batch, "service": m.service, "vacation": m.vacation, "capacity": 5}
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        result = ex.submit(evaluate_chunk, type(m), fixed, [(0, {"rate": m.rate})], None, (), {}, current()).result()
        loaded = ex.submit(_loaded_modules).result()
    assert result[0][1]["loss_probability"] == m.evaluate().loss_probability
    assert loaded == set()


@pytest.mark.slow
def test_cli_dask_local_cluster_of_processes(tmp_path):
    # the command line's own LocalCluster (2 worker processes, one thread each): ~10 s, mostly the cluster's start
    import distributed  # noqa: F401  (the test extra installs it: a missing one is a failure, not a skip)
    local = run(tmp_path, "l.csv")
    assert run(tmp_path, "d.csv", "--executor", "dask", "--workers", "2") == local


def test_size_with_digits_decides_where_float64_points(monkeypatch):
    import time

    from qderive.numeric.engines import vacation as V
    from qderive.symbolic.models.vacation import SizeRequest

    values = {"load": F(3, 5), "batch": qd.Geometric(5), "service": qd.Erlang(4, F(3, 200)),
              "vacation": qd.Exponential(F(3, 40))}
    plain = V.size(values, SizeRequest(F(1, 10**3)), progress=False)
    exact = V.size(values, SizeRequest(F(1, 10**3)), digits=15, progress=False)
    assert exact["capacity"] == plain["capacity"]
    import mpmath

    target = mpmath.mpf(1) / 10**3
    assert exact["loss_probability"] <= target < exact["loss_probability_one_fewer"]  # mpmath numbers
    t = time.perf_counter()
    with qd.limits(mp_capacity=plain["capacity"] - 1), pytest.raises(BudgetError, match="mp-capacity"):
        V.size(values, SizeRequest(F(1, 10**3)), digits=15, progress=False)
    assert time.perf_counter() - t < 3  # refused after the float64 search, before any mpmath work
