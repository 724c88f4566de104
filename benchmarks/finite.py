"""Benchmark of the finite vacation queue (issue 3): Figure-1 grid, r = 10^4, dense-solve baseline.

Run by hand: ``python benchmarks/finite.py [--runs N] [--mp-runs M]``. Prints a Markdown
section for docs/performance.md.

* the Figure-1 grid: 36 points (batch means 5 and 4; D, E4, M; rho_bar = 0.375..0.75 in 6
  steps; r = 200, b1 = 15 ms, f1 = 75 ms) with the engine in float64 and at 50 digits;
* one point at r = 10^4 in float64;
* the baseline a user would write: the same arrival sequences (qderive.numeric.sequences),
  the (r+1)-state embedded transition matrix filled densely and solved with numpy
  (``numpy.linalg.solve`` with one balance equation replaced by the normalisation), then
  the time-stationary law by (9)/(10) and the loss (a) by the direct sum (12) and (b) by
  the load balance 1 - (1 - P_e)/rho_bar; its time and its accuracy against 50 digits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

# one BLAS thread: on the shared 2-core machine a threaded LAPACK solve of a 201 x 201 system
# takes ~70 ms instead of ~0.2 ms (thread contention), which would flatter the engine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402

from qderive.derivations.figures_vacation import FIG1_BATCH_MEANS, FIG1_LAWS, fig1_loads, fig1_model
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.sequences import arrival_counts
from qderive.numeric.vacation import VacationQueue, batch_excess, finite_measures


def grid():
    return [fig1_model(mean, law, load) for mean in FIG1_BATCH_MEANS for law in FIG1_LAWS for load in fig1_loads(6)]


def timed(fn, runs):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def dense_baseline(model: VacationQueue):
    """Loss by a dense numpy solve of the embedded chain; returns (direct-sum loss, load-balance loss)."""
    bk = FLOAT64
    r = model.capacity
    with bk:
        sv = arrival_counts(model.service, model.batch, model.lam, r + 1, bk)
        vc = arrival_counts(model.vacation, model.batch, model.lam, r + 1, bk)
        e = batch_excess(model.batch, r + 1, bk)
    b1, f1 = float(model.service.moment(1)), float(model.vacation.moment(1))
    P = np.zeros((r + 1, r + 1))
    P[0, :r] = vc.a[:r]
    P[0, r] = vc.abar[r - 1]
    for i in range(1, r + 1):
        P[i, i - 1 : r] = sv.a[: r - i + 1]
        P[i, r] = sv.abar[r - i]
    A = P.T - np.eye(r + 1)
    A[-1, :] = 1.0
    rhs = np.zeros(r + 1)
    rhs[-1] = 1.0
    q = np.linalg.solve(A, rhs)
    C = q[0] * f1 + (1 - q[0]) * b1
    p = np.empty(r + 1)
    for j in range(r):
        p[j] = (q[0] * vc.u[j] + np.dot(q[1 : j + 2], sv.u[j::-1])) / C
    p[r] = (q[0] * vc.ubar[r] + np.dot(q[1 : r + 1], sv.ubar[r:0:-1])) / C
    direct = float(np.dot(p, e[r::-1])) / float(model.batch.mean)
    Pe = q[0] * f1 / C
    balance = 1 - (1 - Pe) / float(model.rho_bar)
    return direct, balance


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mp-runs", type=int, default=3)
    args = ap.parse_args()
    pts = grid()
    t64, f64 = timed(lambda: [finite_measures(m, FLOAT64).loss_probability for m in pts], args.runs)
    tmp, ref = timed(lambda: [finite_measures(m, mp_backend(50)).loss_probability for m in pts], args.mp_runs)
    worst = max(abs(a - float(b)) / float(b) for a, b in zip(f64, ref))
    tdense, dense = timed(lambda: [dense_baseline(m) for m in pts], args.runs)
    worst_dense = max(abs(d - float(b)) / float(b) for (d, _), b in zip(dense, ref))
    worst_bal = max(abs(lb - float(b)) / float(b) for (_, lb), b in zip(dense, ref))
    big = fig1_model(5, "M", sp.Rational(3, 4)).with_capacity(10**4)
    tbig, lbig = timed(lambda: finite_measures(big, FLOAT64).loss_probability, args.runs)
    mid = fig1_model(5, "M", sp.Rational(3, 4)).with_capacity(2000)
    tmid, _ = timed(lambda: finite_measures(mid, FLOAT64).loss_probability, args.runs)
    tmid_dense, _ = timed(lambda: dense_baseline(mid), args.runs)
    print("## Finite vacation queue M[X]/G/1/r (issue 3, `benchmarks/finite.py`)\n")
    print(f"Machine: 2 cores (shared with other jobs while measured), Python 3.11, mpmath without gmpy2, "
          f"one BLAS thread. Median of {args.runs} runs (float64) and {args.mp_runs} runs (50 digits).\n")
    print("| case | time | target | accuracy |")
    print("|---|---|---|---|")
    print(f"| Figure-1 grid, 36 points, float64 | {t64:.3f} s | < 0.2 s | worst loss rel. error vs 50 digits "
          f"{worst:.1e} (target 1e-12), smallest loss {min(float(x) for x in ref):.2e} |")
    print(f"| Figure-1 grid, 36 points, 50 digits | {tmp:.1f} s | < 20 s | reference |")
    print(f"| one point r = 10^4, float64 (M, batch 5, rho_bar 0.75) | {tbig:.3f} s | < 1 s | loss {lbig:.3e} |")
    print(f"| dense-solve baseline, Figure-1 grid, float64 | {tdense:.3f} s (ratio {tdense / t64:.2f}) | - | "
          f"direct sum: {worst_dense:.1e}; load balance: {worst_bal:.1e} |")
    print(f"| r = 2000: engine vs dense solve, float64 | {tmid:.3f} s vs {tmid_dense:.3f} s "
          f"(ratio {tmid_dense / tmid:.1f}) | - | - |")


if __name__ == "__main__":
    main()
