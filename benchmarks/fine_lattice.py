"""Timings of the finite room's exact tails for a service sample on its own fine lattice (issue 28, (F10) of
``numeric/kernels/lattice_fft.py``). Run by hand:

    python benchmarks/fine_lattice.py                 # D = 4, 5, 6 at r = 129 and r = 200
    python benchmarks/fine_lattice.py 6 200           # one case
    python benchmarks/fine_lattice.py --sweep         # and P(W > 0.5) over 20 loads, D = 5, r = 129
    python benchmarks/fine_lattice.py 0 129           # D = 0: the raw floats (no lattice: certified brackets)
    python benchmarks/fine_lattice.py --before ...    # the same with the FFT sums off (fine-lattice-levels = 1)

The engineer's question (issue 28): geometric batches of mean 4, exponential vacations of mean 60 ms (multiple),
load 0.55, capacity r, P(W > 0.5 s) with a lognormal sample of 2000 service times (median 10 ms, sigma 0.8) written
to D decimals (``numpy.savetxt(..., fmt=f"%.{D}f")``): on the lattice 10^-D s, t / g = 5e3, 5e4, 5e5 columns.
Each row: one cold evaluation of a new model in this process (the engine's solve, the count sequences and the
stream of powers), then the next point of the same law object (0.4 s), then the 0.99 quantile (a new
evaluation); the certified bracket's relative width. CPU seconds of this process (``time.process_time``: the
project's machine is shared). Run with ``OPENBLAS_NUM_THREADS=1`` there: on 2 cores shared by several processes
OpenBLAS's threads spin while they wait, and their spinning counts as this process's CPU time (a 2e5 x 74 product
measured 0.76 s instead of 0.05 s).
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction as F

import numpy as np

import qderive as qd
from qderive.symbolic.limits import limits
from qderive.numeric.engines.vacation_finite_wait import response_laws
from qderive.numeric.response import tails


def sample(digits):
    """The issue's 2000 lognormal draws, written to ``digits`` decimals and read back exactly (0: all 17 digits)."""
    values = np.random.default_rng(1).lognormal(np.log(0.01), 0.8, 2000)
    return qd.Empirical(tuple(F(f"{v:.{digits}f}" if digits else repr(float(v))) for v in values))


def model(service, load, r):
    return qd.FiniteVacationQueue.from_load(load, qd.Geometric(4), service, qd.Exponential(F(6, 100)), r)


def measure(m, t=F(1, 2), nxt=F(2, 5)):
    """CPU seconds and values of one model (shared with ``lattice_finite_service.py``): the first tail at ``t`` of a new
    law object (solve, data, sums), its bracket, the next point ``nxt`` of the same object, the 0.99 quantile of a new
    evaluation. Returns (value, (lo, hi, levels) or None, first, second, quantile value, quantile seconds)."""
    c = time.process_time()
    laws = response_laws(m)
    value = tails(laws["wait"], [t], None)[0][0]
    first = time.process_time() - c
    bracket = laws["wait"].bracket(t) if laws["wait"].bracket is not None else None  # None: an inverted law
    c = time.process_time()
    tails(laws["wait"], [nxt], None)
    second = time.process_time() - c
    c = time.process_time()
    q = m.evaluate(wait_quantile=["0.99"]).response["wait_quantile"]
    return value, bracket, first, second, list(q.values())[0], time.process_time() - c


def row(digits, r):
    value, (lo, hi, levels), first, second, q, quantile = measure(model(sample(digits), F(11, 20), r))
    print(f"| {digits} | {r} | {value:.12g} | {(hi - lo) / value:.1e} ({levels} levels) | {first:.2f} s "
          f"| {second:.2f} s | {q:.6g}: {quantile:.2f} s |", flush=True)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print("| D | r | P(W > 0.5) | relative width | first point | next point (0.4) | quantile 0.99 |")
    print("|---|---|---|---|---|---|---|")
    cases = [(int(args[0]), int(args[1]))] if args else [(d, r) for d in (4, 5, 6) for r in (129, 200)]
    for digits, r in cases:
        if "--before" in sys.argv:
            with limits(fine_lattice_levels=1):
                row(digits, r)
        else:
            row(digits, r)
    if "--sweep" in sys.argv:
        service = sample(5)
        t = time.process_time()
        loads = [F(k, 40) for k in range(2, 40, 2)] + [F(39, 40)]
        out = [response_laws(model(service, load, 129))["wait"].tails([F(1, 2)], None)[0][0] for load in loads]
        print(f"sweep of P(W > 0.5) over {len(loads)} loads (D = 5, r = 129): {time.process_time() - t:.1f} s;",
              " ".join(f"{float(a):.3g}:{v:.4g}" for a, v in zip(loads, out)))


if __name__ == "__main__":
    main()
