"""Timings of the finite room's wait tails with a service law on or off a lattice (issue 28 item 1). Run by hand:

    python benchmarks/lattice_finite_service.py            # the engineer's question at r = 129 and r = 200
    python benchmarks/lattice_finite_service.py --sweep    # and P(W > 0.5) over 20 loads (about a minute)
    python benchmarks/lattice_finite_service.py --lognormal  # and the lognormal service (mean 12 ms, scv 2; inverted)

(The quantile searches on a coarse-lattice guide first and finds the note's roots one bound at a time, issue 28.)

The engineer's question: geometric batches of mean 4, exponential vacations of mean 60 ms (multiple), load 0.55,
capacity r, P(W > 0.5 s) with a lognormal sample of 2000 service times (median 10 ms, sigma 0.8; values to 18
digits: no coarse lattice, so the certified brackets of ``numeric/engines/vacation_finite_wait.py``
``service_lattice_tails``, 8192 levels and beyond by the FFT sums of ``kernels/lattice_fft.py`` up to 2^17). Each row: one cold evaluation of a new model in this process
(the engine's solve, the count sequences and the lattice sums), then the next point of the same law object
(``response_laws`` kept), then the 0.99 quantile (a new evaluation: solve, search, the note's roots of both
bounds); the bracket's relative width. Times are CPU seconds of this process (``time.process_time``: the
project's machine is shared, wall times there run 2 to 5 times longer).
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction as F

import qderive as qd
from fine_lattice import measure, model, sample  # the sibling script: the same sample, model and timings
from qderive.numeric.engines.vacation_finite_wait import response_laws


def main():
    service = sample(0)
    print("| r | P(W > 0.5) | bracket | relative width | first point | next point (0.4) | quantile 0.99 |")
    print("|---|---|---|---|---|---|---|")
    for r in (129, 200):
        value, (lo, hi, levels), first, second, _, quantile = measure(model(service, F(11, 20), r))
        print(f"| {r} | {value:.6g} | [{lo:.6g}, {hi:.6g}] ({levels} levels) | {(hi - lo) / value:.1e} "
              f"| {first:.2f} s | {second:.2f} s | {quantile:.2f} s |")
    if "--lognormal" in sys.argv:  # inverted since issue 28 (lg28): no bracket
        value, _, first, _, _, quantile = measure(model(qd.LogNormal(F(12, 1000), 2), F(11, 20), 129))
        print(f"| lognormal, 129 | {value:.6g} | | | {first:.2f} s | | {quantile:.2f} s |")
    if "--sweep" in sys.argv:
        t = time.process_time()
        loads = [F(k, 40) for k in range(2, 40, 2)] + [F(39, 40)]
        out = [response_laws(model(service, load, 129))["wait"].tails([F(1, 2)], None)[0][0] for load in loads]
        print(f"sweep of P(W > 0.5) over {len(loads)} loads (r = 129): {time.process_time() - t:.1f} s;",
              " ".join(f"{float(a):.3g}:{v:.4g}" for a, v in zip(loads, out)))


if __name__ == "__main__":
    main()
