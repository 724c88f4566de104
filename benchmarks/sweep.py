"""Benchmark of ``qderive sweep`` (issue 16): a 10^4-point finite-queue grid, locally and on Dask.

Run by hand: ``python benchmarks/sweep.py [--points N] [--workers W] [--skip-dask]``. The grid is
``vacation-finite`` with geometric batches (mean 5), Erlang-4 service (mean 15 ms), exponential
vacations (mean 75 ms), rho_bar = 0.05..5 (100 loads) x r = 1..100 (100 capacities): 10^4 points,
every measure in float64 (escalated only where the precision policy flags a point). It runs

1. ``qderive sweep ... --out local1.csv`` in one process (the progress bar on a terminal),
2. the same with ``--workers W`` (a process pool),
3. the same with ``--executor dask --workers W`` (a LocalCluster of W processes),
4. ``--shard I/3`` three times, concatenated,

checks that every file is byte-for-byte the same table (after sorting the shards by point) and
prints a Markdown table of the wall times and the points per second for docs/performance.md.
Also times ``size vacation-finite`` near saturation with the old one-by-one scan
(``SCAN_CAPACITY`` = infinity) and with the bounded search, side by side.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAWS = ["--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation", "exp:mean=0.075"]


def grid_args(points: int) -> list[str]:
    side = int(round(points ** 0.5))
    step = 5 / side
    return ["--load", f"{step:.6g}:5:{step:.6g}", "--capacity", f"1:{side}:1"]


def qderive(args, env) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "qderive.derivations.cli", *args], check=True, env=env)
    return time.perf_counter() - t


def rows(path: Path) -> list:
    with open(path, newline="") as fh:
        return sorted(csv.DictReader(fh), key=lambda r: int(r["point"]))


def size_side_by_side(runs: int = 3) -> list:
    """(case, old seconds, new seconds) for size vacation-finite at rho_bar = 0.9999 and 0.999, target 1e-6."""
    from fractions import Fraction as F

    import qderive as qd
    from qderive.numeric.engines import vacation as V
    from qderive.symbolic.models.vacation import SizeRequest

    values = {"batch": qd.Geometric(5), "service": qd.Erlang(4, F(3, 200)), "vacation": qd.Exponential(F(3, 40))}
    out = []
    for load in ("0.9999", "0.999"):
        times = {}
        for label, scan in (("old", 10**9), ("new", 2000)):
            V.SCAN_CAPACITY = scan
            ts = []
            for _ in range(runs):
                t = time.perf_counter()
                try:
                    answer = V.size({**values, "load": F(load)}, SizeRequest(F(1, 10**6)), progress=False)["capacity"]
                except qd.errors.ParameterError:
                    answer = "not met by 10^5"
                ts.append(time.perf_counter() - t)
            times[label] = (sorted(ts)[len(ts) // 2], answer)
        out.append((f"size, rho_bar = {load}, target loss 1e-6", times["old"], times["new"]))
    V.SCAN_CAPACITY = 2000
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--skip-size", action="store_true")
    ap.add_argument("--size-runs", type=int, default=3)
    opts = ap.parse_args()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    base = ["sweep", "vacation-finite", *LAWS, *grid_args(opts.points)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        w = str(opts.workers)
        runs = [("one process (local, --workers 1)", [], "local1.csv"),
                (f"process pool (local, --workers {w})", ["--workers", w], "local2.csv")]
        if not opts.skip_dask:
            runs.append((f"Dask LocalCluster (--executor dask --workers {w})", ["--executor", "dask", "--workers", w],
                         "dask.csv"))
        for label, extra, name in runs:
            seconds = qderive([*base, "--out", str(tmp / name), *extra], env)
            results.append((label, seconds, tmp / name))
        t = 0.0
        for i in range(3):
            t += qderive([*base, "--out", str(tmp / f"shard{i}.csv"), "--shard", f"{i}/3", "--quiet"], env)
        shards = sorted(sum((rows(tmp / f"shard{i}.csv") for i in range(3)), []), key=lambda r: int(r["point"]))
        reference = rows(results[0][2])
        n = len(reference)
        print(f"\n## Sweep: {n} points of vacation-finite (issue 16; `benchmarks/sweep.py`)\n")
        print("| run | wall | points/s | identical to one process |")
        print("|---|---|---|---|")
        for label, seconds, path in results:
            same = rows(path) == reference
            print(f"| {label} | {seconds:.1f} s | {n / seconds:.0f} | {'yes' if same else 'NO'} |")
        print(f"| 3 shards (--shard I/3, run one after the other), concatenated | {t:.1f} s | {n / t:.0f} | "
              f"{'yes' if shards == reference else 'NO'} |")
        escalated = sum(1 for r in reference if r["working_digits"])
        print(f"\n{escalated} of {n} points were recomputed with mpmath by the precision policy; "
              f"{sum(1 for r in reference if r['error'])} have an error.")
    if not opts.skip_size:
        print("\n| size vacation-finite near saturation | old scan | new bounded search |")
        print("|---|---|---|")
        for case, old, new in size_side_by_side(opts.size_runs):
            print(f"| {case} | {old[0]:.1f} s ({old[1]}) | {new[0]:.1f} s ({new[1]}) |")


if __name__ == "__main__":
    main()
