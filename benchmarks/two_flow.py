"""Benchmark: the two-flow (INVITE / non-INVITE) chain, state-space size and solve time for H = 8, 12, 16.

Run by hand: ``python benchmarks/two_flow.py`` (prints a Markdown table; median of
``REPEATS`` runs). Parameters: lambda = (3/5, 2), mu = mu' = (1, 5), L = H/2, R = H + 1;
float64 with the sparse level solver (GMRES + Gauss-Seidel), and the dense GTH and
the mpmath (50 digits) solve for the small chains.

``python benchmarks/two_flow.py segments``: FIFO at seed 001's scale, the chain held as segments
(:mod:`qderive.numeric.engines.two_flow_segments`): lambda = (30, 60), mu = (250/3, 1000/3),
(L, H) = (20, 40), (50, 100), (20, 200), (50, 200), (100, 200), R = H + 20; CPU seconds of one run
(build, stationary solve, measures), or the refusal of the limit ``two-flow-states``.
"""

from __future__ import annotations

import statistics
import time
from fractions import Fraction as F

import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.two_flow import solve, state_space

REPEATS = 3


def _median_time(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def model(H, alg):
    return qd.TwoFlowModel(F(3, 5), 2, 1, 5, H // 2, H, H + 1, alg)


def main() -> None:
    print("| H | algorithm | states | transitions | build (s) | solve pi (s) | return time (s) | solver |")
    print("|---|---|---|---|---|---|---|---|")
    for H in (8, 12, 16):
        for alg in qd.Algorithm:
            L = H // 2

            def build():
                state_space.cache_clear()
                return state_space(L, H, H + 1, alg)

            t_build, space = _median_time(build)
            m = model(H, alg)
            t_solve, sol = _median_time(lambda: solve(m, FLOAT64, qd.Solver.SPARSE))
            t_ret, _ = _median_time(sol.mean_return_time)
            print(f"| {H} | {alg.value} | {space.size} | {len(space.src)} | {t_build:.3f} | {t_solve:.3f} | "
                  f"{t_ret:.3f} | sparse |")
    print()
    print("| H | algorithm | states | float64 GTH (s) | mpmath 50 digits GTH + return time (s) |")
    print("|---|---|---|---|---|")
    for H in (4, 6):
        for alg in qd.Algorithm:
            m = model(H, alg)
            t_f, sol = _median_time(lambda: solve(m, FLOAT64, qd.Solver.GTH))
            t_m, _ = _median_time(lambda: solve(m, mp_context(50)).mean_return_time())
            print(f"| {H} | {alg.value} | {sol.space.size} | {t_f:.3f} | {t_m:.2f} |")


def segments() -> None:
    import resource

    from qderive.numeric.engines.two_flow_segments import segment_space
    from qderive.symbolic.errors import BudgetError

    print("| L | H | states | transitions | build (CPU s) | solve pi (CPU s) | measures (CPU s) | total (CPU s) | "
          "rejection_invite | mean_sojourn_invite |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for L, H in ((20, 40), (50, 100), (20, 200), (50, 200), (100, 200)):
        m = qd.TwoFlowModel(30, 60, F(250, 3), F(1000, 3), L, H, H + 20)
        segment_space.cache_clear()
        t0 = time.process_time()
        try:
            space = segment_space(L, H, H + 1)
        except BudgetError as exc:
            print(f"| {L} | {H} | > {exc.allowed} | | refused after {time.process_time() - t0:.1f} | | | | | |")
            continue
        t1 = time.process_time()
        sol = solve(m, FLOAT64)
        t2 = time.process_time()
        r = sol.measures()
        t3 = time.process_time()
        print(f"| {L} | {H} | {space.size} | {len(space.src)} | {t1 - t0:.2f} | {t2 - t1:.2f} | {t3 - t2:.2f} | "
              f"{t3 - t0:.2f} | {r['rejection_invite']:.6g} | {r['mean_sojourn_invite']:.10g} |", flush=True)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    import sys

    segments() if sys.argv[1:] == ["segments"] else main()
