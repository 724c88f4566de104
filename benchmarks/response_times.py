"""Timings of the response-time measures (issue 13 targets). Run by hand:

    python benchmarks/response_times.py

Targets: a tail point at 30 digits <= 50 ms; a quantile <= 0.5 s; a float64 tail of the README
model <= 5 ms per point, vectorised over many t. The model is ``VacationQueue.example()``
(geometric batches mean 5, Erlang-4 service mean 15 ms, exponential vacations mean 75 ms,
rho_bar = 0.6). Each row: the median of 5 runs after one warm-up call (compiled transforms in
the private cache), one process.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import qderive as qd
from qderive.derivations.capabilities import load as _load


def timed(fn, runs=5):
    fn()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main():
    from qderive.numeric.backend import FLOAT64
    from qderive.numeric.kernels.tails import float64_tails, tail_transform

    m = qd.VacationQueue.example()
    law = _load(m, "response")(m)["wait"]
    G = tail_transform(law.transform(FLOAT64))
    ts = np.linspace(0.05, 0.6, 1000)
    rows = [
        ("float64 tail, 1000 t in one call (kernel: both parameter sets)", lambda: float64_tails(FLOAT64, G, ts)),
        ("float64 tail, one point, evaluate(wait_tail=[0.5])", lambda: m.evaluate(wait_tail=["0.5"])),
        ("float64 quantile 0.9, evaluate", lambda: m.evaluate(wait_quantile=["0.9"])),
        ("30 digits: tail at 0.5 (9.2e-2)", lambda: m.evaluate(30, wait_tail=["0.5"])),
        ("30 digits: tail at 5 (4.8e-13)", lambda: m.evaluate(30, wait_tail=["5"])),
        ("30 digits: tail at 12 (1.3e-30)", lambda: m.evaluate(30, wait_tail=["12"])),
        ("30 digits: quantile 0.99", lambda: m.evaluate(30, wait_quantile=["0.99"])),
        ("50 digits: tail at 0.5", lambda: m.evaluate(50, wait_tail=["0.5"])),
        ("moments E W..E W^4, exact", lambda: m.evaluate(30, wait_moments=4)),
    ]
    print("| case | median |\n|---|---|")
    for name, fn in rows:
        s = timed(fn)
        shown = f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"
        print(f"| {name} | {shown} |")


if __name__ == "__main__":
    main()
