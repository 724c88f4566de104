"""Timings of the capacity-planning models (Erlang B, redundant cluster, SCP simulation). Run by hand:

    python benchmarks/capacity_planning.py

Prints the median of several runs of each case (a Markdown table for docs/performance.md).
"""

from __future__ import annotations

import statistics
import time
from fractions import Fraction as F

import sympy as sp

from qderive.numeric import cluster as C
from qderive.numeric import erlang as E
from qderive.numeric import scp_sim as S
from qderive.numeric.backend import FLOAT64, mp_backend


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def in_mp(dps, fn):
    bk = mp_backend(dps)

    def run():
        with bk:
            fn(bk)

    return run


def main():
    V = F(3, 10)
    paper = C.RedundantCluster(rate=3, copies=2, nodes=(10, 10), service_times=(V, V), deadline=2 * V)
    cases = [
        ("Erlang B, n = 10^3, rho = 900, float64", lambda: E.erlang_b(10**3, 900, FLOAT64), 21),
        ("Erlang B, n = 10^5, rho = 10^5, float64", lambda: E.erlang_b(10**5, 10**5, FLOAT64), 7),
        ("Erlang B, n = 10^4, rho = 9500, 50 digits", in_mp(50, lambda bk: E.erlang_b(10**4, 9500, bk)), 5),
        ("Erlang B, n = 10^5, rho = 10^5, 50 digits", in_mp(50, lambda bk: E.erlang_b(10**5, 10**5, bk)), 3),
        ("smallest n, rho = 10^4, B <= 0.01, float64",
         lambda: E.smallest_servers(10**4, sp.Rational(1, 100), FLOAT64), 5),
        ("load for n = 10^4 at B = 0.01, float64",
         lambda: E.load_for_blocking(10**4, sp.Rational(1, 100), FLOAT64), 5),
        ("load for n = 100 at B = 0.01, 50 digits",
         in_mp(50, lambda bk: E.load_for_blocking(100, sp.Rational(1, 100), bk)), 5),
        ("cluster R(k), one point, float64", lambda: C.timely_probability(paper, FLOAT64), 201),
        ("cluster R(k), one point, 50 digits", in_mp(50, lambda bk: C.timely_probability(paper, bk)), 51),
        ("cluster optimal k <= 10, float64", lambda: C.optimal_copies(paper, 10, FLOAT64), 21),
        ("paper's discretisation N = 10^4, float64", lambda: C.paper_discretised(paper, 10**4, FLOAT64), 21),
        ("SCP run, 120 s at 3x capacity (~36k calls), window",
         lambda: S.simulate_run(S.SCPConfig(), S.AdaptiveWindow(), 300, seed=1), 5),
        ("SCP run, 120 s at 3x capacity, call gapping",
         lambda: S.simulate_run(S.SCPConfig(), S.CallGapping(), 300, seed=1), 5),
    ]
    print("| case | median | runs |")
    print("|---|---|---|")
    for name, fn, repeat in cases:
        t = median_time(fn, repeat)
        shown = f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"
        print(f"| {name} | {shown} | {repeat} |")


if __name__ == "__main__":
    main()
