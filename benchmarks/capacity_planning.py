"""Timings of the capacity-planning models (Erlang B, redundant cluster, SCP simulation). Run by hand:

    python benchmarks/capacity_planning.py

Prints the median of several runs of each case (a Markdown table for docs/performance.md; the
before/after comparison with the old implementation is ``benchmarks/compare.py``). float64 cases
go through the public API (``Model.evaluate()``: the engine plus the precision policy's tests);
the "50 digits" cases run the kernel or engine in an mpmath context of 50 digits (the same work
as the old ``mp_backend(50)`` runs), except the load search, which takes ``digits=50``.
"""

from __future__ import annotations

import statistics
import time
from fractions import Fraction as F

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines import cluster as C
from qderive.numeric.engines import erlang_b as E
from qderive.numeric.kernels import erlang as KE
from qderive.numeric.simulation import scp as S


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def in_mp(dps, fn):
    ctx = mp_context(dps)

    def run():
        with ctx:
            fn(ctx)

    return run


def in_float64(fn):
    def run():
        with FLOAT64:
            fn()

    return run


def main():
    V = F(3, 10)
    paper = qd.RedundantCluster(rate=3, copies=2, nodes=(10, 10), service_times=(V, V), deadline=2 * V)
    values = dict(rate=F(3), nodes=(10, 10), service_times=(V, V), deadline=2 * V)
    cases = [
        ("Erlang B, n = 10^3, rho = 900, float64", lambda: qd.ErlangB(servers=10**3, load=900).evaluate(), 21),
        ("Erlang B, n = 10^5, rho = 10^5, float64", lambda: qd.ErlangB(servers=10**5, load=10**5).evaluate(), 7),
        ("Erlang B, n = 10^4, rho = 9500, 50 digits", in_mp(50, lambda c: KE.erlang_b(c, c.num(9500), 10**4)), 5),
        ("Erlang B, n = 10^5, rho = 10^5, 50 digits", in_mp(50, lambda c: KE.erlang_b(c, c.num(10**5), 10**5)), 3),
        ("smallest n, rho = 10^4, B <= 0.01, float64", lambda: E.smallest_servers(10**4, F(1, 100)), 5),
        ("load for n = 10^4 at B = 0.01, float64", lambda: E.load_for_blocking(10**4, F(1, 100)), 5),
        ("load for n = 100 at B = 0.01, 50 digits", lambda: E.load_for_blocking(100, F(1, 100), digits=50), 5),
        ("cluster R(k), one point, float64", paper.evaluate, 201),
        ("cluster R(k), one point, 50 digits", in_mp(50, lambda c: C.ClusterEngine().compute(paper, c)), 51),
        ("cluster optimal k <= 10, float64", lambda: C.optimize(values, qd.OptimizeCopiesRequest(max_copies=10)), 21),
        ("paper's discretisation N = 10^4, float64", in_float64(lambda: C.paper_discretised(paper, 10**4, FLOAT64)), 21),
        ("SCP run, 120 s at 3x capacity (~36k calls), window",
         lambda: S.simulate_run(S.SCPConfig(), S.AdaptiveWindow(), 300, seed=1), 5),
        ("SCP run, 120 s at 3x capacity, call gapping",
         lambda: S.simulate_run(S.SCPConfig(), S.CallGapping(), 300, seed=1), 5),
    ]
    print("| case | median | runs |")
    print("|---|---|---|")
    for name, fn, repeat in cases:
        fn()  # warm (imports, compiled evaluators)
        t = median_time(fn, repeat)
        shown = f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"
        print(f"| {name} | {shown} | {repeat} |")


if __name__ == "__main__":
    main()
