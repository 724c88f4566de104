"""Benchmark of the finite vacation queue: Figure-1 grid, r = 10^4, large r at light load and overload,
the hardware floor, and a dense-solve baseline.

Run by hand: ``python benchmarks/finite.py [--runs N] [--mp-runs M] [--skip-large]``. Prints a
Markdown section for docs/performance.md (before/after numbers: ``benchmarks/compare.py``).

* the Figure-1 grid: 36 points (batch means 5 and 4; D, E4, M; rho_bar = 0.375..0.75 in 6
  steps; r = 200, b1 = 15 ms, f1 = 75 ms) by ``FiniteVacationQueue.evaluate()`` in float64 and
  by the engine at 50 digits;
* one point at r = 10^4 in float64;
* geometric batches (mean 5), Erlang-4 service (mean 15 ms), exponential vacations (mean 75 ms),
  partial admission, r = 3*10^4 and 10^5, rho_bar = 0.6 and 1.2: the float64 engine
  (``FiniteSweep(model, FLOAT64).at(r)``); its distance from the hardware floor (:func:`floor`);
* the baseline a user would write: the same arrival sequences, the (r+1)-state embedded
  transition matrix filled densely and solved with numpy (one balance equation replaced by
  the normalisation), then (9)/(10) and the loss by the direct sum (12) and by the load
  balance 1 - (1 - P_e)/rho_bar; its time and its accuracy against 50 digits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from fractions import Fraction

# one BLAS thread: on the shared 2-core machine a threaded LAPACK solve of a 201 x 201 system
# takes ~70 ms instead of ~0.2 ms (thread contention), which would flatter the engine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

# --- floor ---
# (this block is also run on its own by benchmarks/compare.py: numpy only)
import numpy as np  # noqa: E402,F811


def floor(r, block=512):
    """The unavoidable arithmetic of the float64 finite-queue path for r waiting places, in plain numpy.

    (1) the cut recursion (2b): for j = 1..r-1 one contiguous BLAS dot product of length j,
        ``numpy.dot(q[1:j+1], rev[N-j:N])`` (r^2/2 multiply-adds; the j-loop is inherently
        sequential: q_{j+1} needs the dot of step j);
    (2) the time numerators T_j = sum_{i<=j+1} q~_i u_{j-i+1}: the truncated convolution of two
        vectors of length r (r^2/2 multiply-adds, no FFT: FFT errors are absolute, the tiny
        terms need relative accuracy), as ``numpy.convolve`` over blocks of 512 of the first
        vector, each truncated at r.
    Data: positive normal floats (no zeros, no subnormals). Returns the two times (seconds).
    """
    rng = np.random.default_rng(1)
    N = r + 1
    q, rev, u = rng.random(N) + 0.5, rng.random(N) + 0.5, rng.random(N) + 0.5
    dot = np.dot
    t0 = time.perf_counter()
    acc = 0.0
    for j in range(1, r):
        acc += dot(q[1: j + 1], rev[N - j: N])
    t1 = time.perf_counter()
    n = r - 1
    out = np.zeros(n + 1)
    x = q[1:]
    for s in range(0, n + 1, block):
        m = n + 1 - s
        out[s:] += np.convolve(x[s: min(s + block, n + 1)], u[:m])[:m]
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


import time  # noqa: E402,F811
# --- floor ---


def grid():
    from qderive.derivations.figures.vacation import FIG1_BATCH_MEANS, FIG1_LAWS, fig1_loads, fig1_model

    return [fig1_model(mean, law, load) for mean in FIG1_BATCH_MEANS for law in FIG1_LAWS for load in fig1_loads(6)]


def timed(fn, runs):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def large_model(load, r):
    import qderive as qd

    return qd.FiniteVacationQueue.from_load(Fraction(load), qd.Geometric(5), qd.Erlang(4, Fraction(3, 200)),
                                            qd.Exponential(Fraction(3, 40)), r)


def dense_baseline(model):
    """Loss by a dense numpy solve of the embedded chain; returns (direct-sum loss, load-balance loss)."""
    from qderive.numeric.backend import FLOAT64
    from qderive.numeric.sequences import arrival_counts, batch_vectors

    r = model.capacity
    with FLOAT64:
        sv = arrival_counts(model.service, model.batch, model.rate, r + 1, FLOAT64)
        vc = arrival_counts(model.vacation, model.batch, model.rate, r + 1, FLOAT64)
        e = batch_vectors(model.batch, r + 1, FLOAT64).excess
    b1, f1 = float(model.service.moment(1)), float(model.vacation.moment(1))
    P = np.zeros((r + 1, r + 1))
    P[0, :r] = vc.a[:r]
    P[0, r] = vc.abar[r - 1]
    for i in range(1, r + 1):
        P[i, i - 1: r] = sv.a[: r - i + 1]
        P[i, r] = sv.abar[r - i]
    A = P.T - np.eye(r + 1)
    A[-1, :] = 1.0
    rhs = np.zeros(r + 1)
    rhs[-1] = 1.0
    q = np.linalg.solve(A, rhs)
    C = q[0] * f1 + (1 - q[0]) * b1
    p = np.empty(r + 1)
    for j in range(r):
        p[j] = (q[0] * vc.u[j] + np.dot(q[1: j + 2], sv.u[j::-1])) / C
    p[r] = (q[0] * vc.ubar[r] + np.dot(q[1: r + 1], sv.ubar[r:0:-1])) / C
    direct = float(np.dot(p, e[r::-1])) / float(model.batch.mean)
    Pe = q[0] * f1 / C
    balance = 1 - (1 - Pe) / float(model.rho_bar)
    return direct, balance


def main():
    from qderive.derivations.figures.vacation import fig1_model
    from qderive.numeric.backend import FLOAT64, mp_context
    from qderive.numeric.engines.vacation import FiniteSweep

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mp-runs", type=int, default=3)
    ap.add_argument("--skip-large", action="store_true", help="skip r = 3e4 and 1e5 (a minute)")
    args = ap.parse_args()
    pts = grid()
    pts[0].with_capacity(20).evaluate()  # warm imports
    t64, f64 = timed(lambda: [m.evaluate().loss_probability for m in pts], args.runs)
    tmp, ref = timed(lambda: [FiniteSweep(m, mp_context(50)).at(200)["loss_probability"] for m in pts], args.mp_runs)
    worst = max(abs(a - float(b)) / float(b) for a, b in zip(f64, ref))
    tdense, dense = timed(lambda: [dense_baseline(m) for m in pts], args.runs)
    worst_dense = max(abs(d - float(b)) / float(b) for (d, _), b in zip(dense, ref))
    worst_bal = max(abs(lb - float(b)) / float(b) for (_, lb), b in zip(dense, ref))
    big = fig1_model(5, "M", Fraction(3, 4)).with_capacity(10**4)
    tbig, lbig = timed(lambda: big.evaluate().loss_probability, args.runs)
    mid = fig1_model(5, "M", Fraction(3, 4)).with_capacity(2000)
    tmid, _ = timed(lambda: mid.evaluate(), args.runs)
    tmid_dense, _ = timed(lambda: dense_baseline(mid), args.runs)
    print("## Finite vacation queue M[X]/G/1/r (`benchmarks/finite.py`)\n")
    print(f"Load average at the end {os.getloadavg()[0]:.2f} (2 cores); one BLAS thread. Median of {args.runs} runs "
          f"(float64) and {args.mp_runs} runs (50 digits).\n")
    print("| case | time | accuracy |")
    print("|---|---|---|")
    print(f"| Figure-1 grid, 36 points, float64 (`evaluate()`) | {t64:.3f} s | worst loss rel. error vs 50 digits "
          f"{worst:.1e}, smallest loss {min(float(x) for x in ref):.2e} |")
    print(f"| Figure-1 grid, 36 points, engine at 50 digits | {tmp:.1f} s | reference |")
    print(f"| one point r = 10^4, float64 (M, batch 5, rho_bar 0.75) | {tbig:.3f} s | loss {float(lbig):.3e} |")
    print(f"| dense-solve baseline, Figure-1 grid, float64 | {tdense:.3f} s (ratio {tdense / t64:.2f}) | "
          f"direct sum: {worst_dense:.1e}; load balance: {worst_bal:.1e} |")
    print(f"| r = 2000: engine vs dense solve, float64 | {tmid:.3f} s vs {tmid_dense:.3f} s "
          f"(ratio {tmid_dense / tmid:.1f}) | - |")
    if args.skip_large:
        return
    print()
    print("| r | rho_bar | float64 engine | loss |")
    print("|---|---|---|---|")
    engine = {}
    for r in (30_000, 100_000):
        for load in ("3/5", "6/5"):
            m = large_model(load, r)
            t, out = timed(lambda: FiniteSweep(m, FLOAT64).at(r), 3)
            engine[r, load] = t
            print(f"| {r} | {float(Fraction(load)):.1f} | {t:.2f} s | {float(out['loss_probability']):.6g} |")
    cut, conv = (statistics.median(x) for x in zip(*[floor(100_000) for _ in range(3)]))
    print()
    print(f"Hardware floor at r = 10^5 (plain numpy, median of 3): cut-recursion dots {cut:.2f} s + truncated "
          f"convolution {conv:.2f} s = {cut + conv:.2f} s; engine / floor: "
          f"{engine[100_000, '3/5'] / (cut + conv):.2f}x (rho_bar 0.6), {engine[100_000, '6/5'] / (cut + conv):.2f}x "
          f"(rho_bar 1.2). Overload / light load: {engine[30_000, '6/5'] / engine[30_000, '3/5']:.2f}x (r = 3e4), "
          f"{engine[100_000, '6/5'] / engine[100_000, '3/5']:.2f}x (r = 1e5).")


if __name__ == "__main__":
    main()
