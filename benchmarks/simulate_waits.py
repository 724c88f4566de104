"""Benchmark of the vacation simulator with and without recorded waits (run by hand).

``python benchmarks/simulate_waits.py [--repeat N] [--plain-only]``

Times 10^6 served customers (10 replications of 10^5) per case, the median of
``--repeat`` runs, first without the per-customer options (the Little's-law measures
only), then with all of them (``wait_tail``/``sojourn_tail`` at five t, ``wait_quantile``/
``sojourn_quantile`` at three q, two moments each), and prints the ratio.
``--plain-only`` times only the first (for a tree without the options: run it with
``PYTHONPATH`` pointing at a snapshot of the old package to get the "before" column).
"""

from __future__ import annotations

import argparse
import statistics
import time
from fractions import Fraction as Fr

import qderive as qd
from qderive.numeric.simulation import vacation as SV

B1, F1 = Fr(3, 200), Fr(3, 40)  # the README / Figure-1 setting: b1 = 15 ms, f1 = 75 ms

CASES = {
    "vacation-infinite, README (geom 5, E4 15 ms, exp 75 ms), rho=0.6": qd.VacationQueue.from_load(
        Fr(3, 5), qd.Geometric(5), qd.Erlang(4, B1), qd.Exponential(F1)),
    "vacation-finite, E4/E4, r=200, rho=0.6": qd.FiniteVacationQueue.from_load(
        Fr(3, 5), qd.Geometric(5), qd.Erlang(4, B1), qd.Erlang(4, F1), 200),
    "vacation-finite, M/M, r=20, rho=1.5 (losses)": qd.FiniteVacationQueue.from_load(
        Fr(3, 2), qd.Geometric(5), qd.Exponential(B1), qd.Exponential(F1), 20),
    "M/M/1, no vacations, rho=0.8": qd.VacationQueue(Fr(4, 5), qd.Constant(1), qd.Exponential(1), None),
}

OPTIONS = {
    "wait_tail": ("0", "0.05", "0.1", "0.5", "1"),
    "wait_quantile": (0.5, 0.9, 0.99),
    "wait_moments": 2,
    "sojourn_tail": ("0.05", "0.1", "0.5", "1", "2"),
    "sojourn_quantile": (0.5, 0.9, 0.99),
    "sojourn_moments": 2,
}


def timed(model, seed: int, options: dict) -> float:
    started = time.perf_counter()
    SV.simulate(model, 100_000, 10, seed=seed, quiet=True, **options)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--plain-only", action="store_true")
    args = parser.parse_args()
    print(f"{'case (10 x 1e5 customers)':<66} {'plain s':>8} {'waits s':>8} {'ratio':>6}")
    for name, model in CASES.items():
        SV.simulate(model, 2000, 2, seed=0, quiet=True)  # warm
        plain, waits = [], []
        for k in range(args.repeat):  # interleaved, so that a change of machine load hits both
            plain.append(timed(model, k, {}))
            if not args.plain_only:
                waits.append(timed(model, k, OPTIONS))
        p = statistics.median(plain)
        if args.plain_only:
            print(f"{name:<66} {p:>8.3f}")
        else:
            w = statistics.median(waits)
            print(f"{name:<66} {p:>8.3f} {w:>8.3f} {w / p:>6.2f}")


if __name__ == "__main__":
    main()
