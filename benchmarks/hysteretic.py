"""Benchmark of the hysteretic model (issue 4): the Figure-3 grid in float64 and at 50 digits,
the points below rho_0 = 1 at 30 digits, and a threshold-optimisation grid.

Run by hand: ``python benchmarks/hysteretic.py [--repeat N] [--skip-optimize]``; prints a
Markdown section for docs/performance.md (before/after: ``benchmarks/compare.py``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from fractions import Fraction

from qderive.derivations.figures.hysteretic import (
    LOADS_BELOW_1,
    LOADS_THESIS,
    _arrivals,
    figure3_model,
)
from qderive.numeric.engines import hysteretic as ho


def _grid(digits):
    for batch in _arrivals().values():
        for load in LOADS_THESIS:
            figure3_model(batch, load).evaluate(digits)


def _timed(fn, repeat):
    """(median wall time, median CPU time of this process) over ``repeat`` runs."""
    wall, cpu = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def _num(x, spec=".2g"):
    return "-" if x is None else format(float(x), spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-optimize", action="store_true")
    args = ap.parse_args()
    _grid(None)  # warm imports
    f64, f64_cpu = _timed(lambda: _grid(None), args.repeat)
    n50 = max(1, args.repeat // 2)
    d50, d50_cpu = _timed(lambda: _grid(50), n50)
    print("## Hysteretic overload control M[X]|G|1|(L,H)|(H,R) (`benchmarks/hysteretic.py`)")
    print()
    print("Figure-3 setting: L, H, R = 73, 84, 100, deterministic service 5 ms, lambda_1 = lambda_0/2;")
    print("grid = rho_0 in 1.00, 1.05, ..., 2.00 for geometric batches (mean 2) and single arrivals (2 x 21 points).")
    print()
    print("| task | wall time | CPU time | target |")
    print("|---|---|---|---|")
    print(f"| Figure-3 grid, float64 (42 points), median of {args.repeat} | {f64:.2f} s | {f64_cpu:.2f} s | < 1 s |")
    print(f"| Figure-3 grid, stable to 50 digits (42 points), median of {n50} | {d50:.1f} s | {d50_cpu:.1f} s "
          "| < 30 s |")
    rows = []
    for name, batch in _arrivals().items():
        for load in LOADS_BELOW_1:
            start = time.perf_counter()
            model = figure3_model(batch, load)
            res = model.evaluate(30)
            rows.append((name, load, time.perf_counter() - start, res, ho.diagnostics(model)["kappa"]))
    print()
    print("Points below rho_0 = 1, stable to 30 digits:")
    print()
    print("| arrivals | rho_0 | kappa_inf(I - P_0) | working digits | E tau_0 (s) | time |")
    print("|---|---|---|---|---|---|")
    for name, load, t, res, kappa in rows:
        print(f"| {name} | {float(load):.2f} | {_num(kappa)} | {res.working_digits} | "
              f"{_num(res.mean_normal_time, '.6g')} | {t:.2f} s |")
    start = time.perf_counter()
    for batch in _arrivals().values():
        for load in LOADS_BELOW_1:
            figure3_model(batch, load).evaluate()
    print()
    print(f"The same 10 points in float64 mode (the policy recomputes the ill-conditioned ones with mpmath): "
          f"{time.perf_counter() - start:.1f} s in total.")
    if not args.skip_optimize:
        model = figure3_model(_arrivals()["batch"], Fraction(6, 5))
        pairs = ho.threshold_pairs(100)
        start = time.perf_counter()
        best = ho.optimize_thresholds(model, Fraction(1, 1000), Fraction(1, 2), pairs=pairs)
        t1 = time.perf_counter() - start
        from concurrent.futures import ProcessPoolExecutor

        start = time.perf_counter()
        with ProcessPoolExecutor(2) as ex:
            ho.optimize_thresholds(model, Fraction(1, 1000), Fraction(1, 2), pairs=pairs, executor=ex)
        t2 = time.perf_counter() - start
        print()
        print(f"`optimize hysteretic`, batches, rho_0 = 1.2, R = 100, full grid of {len(pairs)} (L, H) pairs, "
              f"P(S2) <= 1e-3, E tau >= 0.5 s: {t1:.1f} s in one process, {t2:.1f} s with a 2-process pool "
              f"(optimum L = {best['L']}, H = {best['H']}, E tau_12 = {best['mean_return_time']:.4g} s, "
              f"{best['recomputed_points']} points recomputed with mpmath).")


if __name__ == "__main__":
    main()
