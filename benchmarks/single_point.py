"""Single-point speed (issue 16, item 4): the code before and after, side by side in one run.

Run by hand from the repository root::

    python benchmarks/single_point.py [--reps 3] [--before-ref REF] [--skip-verify]

The "before" side is ``REF`` (default: the merge base of HEAD and main) unpacked by ``git archive``
into a temporary directory laid out as the installed package (``<dir>/qderive/...``) and put first on
``PYTHONPATH``; the "after" side is the working tree (the editable install). Every measurement is a
fresh subprocess; the two sides alternate (before first on even repetitions); a row is the median
over the repetitions of each process's own median (micro-benchmarks repeat their statement
inside the process). Times are CPU seconds of the measuring process (``time.process_time``)
except the command-line rows, which are wall times of the whole command (the issue's targets).
OpenBLAS is restricted to one thread on both sides. Prints the Markdown table of
``docs/performance.md`` ("Single-point speed (issue 16)").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}

POINT = """
from fractions import Fraction as F
import qderive as qd
m = qd.FiniteVacationQueue.from_load(F(3, 5), qd.Geometric(5), qd.Erlang(4, F(3, 200)), qd.Exponential(F(3, 40)), 200)
m.evaluate()
"""
SWEEP = POINT + """
ms = iter([qd.FiniteVacationQueue.from_load(F(3, 5) + F(i + 1, 1000), qd.Geometric(5), qd.Erlang(4, F(3, 200)),
                                          qd.Exponential(F(3, 40)), 200) for i in range(50)])
"""
FIG1 = """
from qderive.derivations.figures.vacation import FIG1_BATCH_MEANS, FIG1_LAWS, fig1_loads, fig1_model
pts = [fig1_model(mean, law, load) for mean in FIG1_BATCH_MEANS for law in FIG1_LAWS for load in fig1_loads(6)]
"""
FIG3 = """
from qderive.derivations.figures.hysteretic import LOADS_THESIS, _arrivals, figure3_model
pts = [figure3_model(batch, load) for batch in _arrivals().values() for load in LOADS_THESIS]
"""

#: (label, setup, statement, inner repetitions (0: once, cold), target seconds, target text)
CASES = [
    ("vacation-finite r = 200, all measures, float64 (`evaluate()`, one point)", POINT, "m.evaluate()", 50,
     1e-3, "<= 1 ms"),
    ("vacation-finite r = 200, float64, 50 points of different loads (`evaluate()` each once: a load sweep, "
     "nothing reused but the batch law's tables)", SWEEP, "next(ms).evaluate()", 50, 1e-3, "<= 1 ms"),
    ("Figure-1 grid, 36 points, float64 (`evaluate()`)", FIG1 + "[p.evaluate() for p in pts]\n",
     "[p.evaluate() for p in pts]", 5, 0.05, "<= 50 ms"),
    ("Figure-1 grid, 36 points, 50 digits (`evaluate(50)`, CPU)", FIG1, "[p.evaluate(50) for p in pts]", 0,
     5.0, "<= 5 s"),
    ("Figure-3 grid, 42 points (hysteretic), 50 digits (`evaluate(50)`, CPU)", FIG3,
     "[p.evaluate(50) for p in pts]", 0, 8.0, "<= 8 s"),
]

EVAL = ["eval", "vacation-finite", "--load", "0.6", "--batch", "geometric:mean=5", "--service",
        "erlang:k=4,mean=0.015", "--vacation", "exp:mean=0.075", "--capacity", "200"]


def _snapshot(ref: str) -> str:
    """``git archive REF`` laid out as the installed package: <dir>/qderive/{symbolic,numeric,derivations}."""
    root = tempfile.mkdtemp(prefix="qd-before-")
    src = os.path.join(root, "src")
    os.makedirs(src)
    tar = subprocess.run(["git", "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=tar, check=True)
    pkg = os.path.join(root, "qderive")
    shutil.copytree(os.path.join(src, "derivations", "_qderive"), pkg)
    for part in ("symbolic", "numeric", "derivations"):
        shutil.copytree(os.path.join(src, part), os.path.join(pkg, part))
    shutil.rmtree(os.path.join(pkg, "derivations", "_qderive"))
    return root


def _env(path: str | None, cache: str) -> dict:
    env = {**ENV, "QDERIVE_CACHE": cache}
    if path:
        env["PYTHONPATH"] = path
    return env


def _measure(path, setup, stmt, inner, cache) -> float:
    body = setup + (
        "import time, statistics, json\n"
        f"xs = []\nfor _ in range({max(inner, 1)}):\n"
        f"    c = time.process_time()\n    {stmt}\n    xs.append(time.process_time() - c)\n"
        "print(json.dumps(statistics.median(xs)))\n")
    out = subprocess.run([sys.executable, "-c", body], env=_env(path, cache), capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _command(path, args, cache) -> tuple[float, float]:
    """(wall, CPU of the children) of ``python -m qderive.derivations.cli ARGS``."""
    t0, c0 = time.perf_counter(), os.times()
    subprocess.run([sys.executable, "-m", "qderive.derivations.cli", *args], env=_env(path, cache),
                   capture_output=True, check=True, cwd=tempfile.gettempdir())
    c1 = os.times()
    return time.perf_counter() - t0, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def _fmt(x: float) -> str:
    if x >= 1:
        return f"{x:.3g} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3g} ms"
    return f"{x * 1e6:.3g} us"


def _row(label, before, after, target, text):
    b, a = statistics.median(before), statistics.median(after)
    ratio = a / b if b else float("nan")
    verdict = "met" if a <= target else f"NOT met ({a / target:.2g}x the target)"
    n = f" ({len(before)}+{len(after)} runs)"
    print(f"| {label}{n} | {text} | {_fmt(b)} | {_fmt(a)} | {ratio:.2f} | {verdict} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--before-ref", default=None, help="git ref of the 'before' code (default: merge base with main)")
    ap.add_argument("--verify-reps", type=int, default=1, help="repetitions of the (long) verify rows")
    ap.add_argument("--skip-verify", action="store_true")
    ap.add_argument("--only", default="", help="run only the cases whose label contains this text (no CLI rows)")
    args = ap.parse_args()
    ref = args.before_ref or subprocess.run(["git", "merge-base", "HEAD", "main"], check=True, capture_output=True,
                                            text=True).stdout.strip()
    before_path = _snapshot(ref)
    caches = {side: tempfile.mkdtemp(prefix=f"qd-cache-{side}-") for side in ("before", "after")}
    for c in caches.values():
        os.chmod(c, 0o700)
    sides = {"before": before_path, "after": None}
    print(f"before = {ref[:10]} (snapshot {before_path}), after = the working tree; load average "
          f"{os.getloadavg()[0]:.2f} at the start, {args.reps} repetitions")
    print()
    print("| case | target | before | after | after / before | |")
    print("|---|---|---|---|---|---|")

    def alternate(fn, reps=None):
        out = {"before": [], "after": []}
        for rep in range(reps or args.reps):
            for side in (("before", "after") if rep % 2 == 0 else ("after", "before")):
                out[side].append(fn(side))
        return out

    for label, setup, stmt, inner, target, text in CASES:
        if args.only not in label:
            continue
        r = alternate(lambda side: _measure(sides[side], setup, stmt, inner, caches[side]))
        _row(label, r["before"], r["after"], target, text)
    if args.only:
        return
    for side in sides:  # fill each side's disk cache (compiled evaluators) before the cold-process rows
        _command(sides[side], EVAL, caches[side])
    r = alternate(lambda side: _command(sides[side], EVAL, caches[side])[0])
    _row("cold `qderive eval vacation-finite` r = 200, float64, wall (warm disk cache)", r["before"], r["after"],
         0.5, "<= 0.5 s")
    if not args.skip_verify:
        r = alternate(lambda side: _command(sides[side], ["verify"], "off")[0], args.verify_reps)
        _row("`qderive verify`, all derivations, QDERIVE_CACHE=off, wall", r["before"], r["after"], 10.0, "<= 10 s")
        for side in sides:
            _command(sides[side], ["verify"], caches[side])
        r = alternate(lambda side: _command(sides[side], ["verify"], caches[side])[0], args.verify_reps)
        _row("`qderive verify`, warm cache, wall", r["before"], r["after"], 10.0, "<= 10 s")
    print()
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    shutil.rmtree(before_path, ignore_errors=True)
    for c in caches.values():
        shutil.rmtree(c, ignore_errors=True)


if __name__ == "__main__":
    main()
