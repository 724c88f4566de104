"""Timings of the wait tails with a service law on or off a lattice (issue 28 item 1). Run by hand:

    python benchmarks/lattice_service.py

The engineer's question: geometric batches of mean 4, exponential vacations of mean 60 ms (multiple), load 0.55,
P(W > 0.5 s) with (a) a lognormal sample of 2000 service times (median 10 ms, sigma 0.8; values to 18 digits:
no coarse lattice, the certified bounds of ``kernels.lattice_service``), (b) the same sample rounded to 1 ms (a
lattice finer than mean / 4: the bounds on a lattice dividing 1 ms, where only the ladder heights are rounded and
the estimate converges fast; the exact sum (L1)-(L3) is kept for coarse lattices), (c) uniform service on [5 ms, 20 ms] at loads 0.55
and 0.9 (bounds). Each row: one cold evaluation of a new model in this process (the first point pays the lattice
pmfs), then the next point of the same model; the bracket's relative width from the note.
"""

from __future__ import annotations

import time
from fractions import Fraction as F

import numpy as np

import qderive as qd


def _sample(rounded: bool):
    values = np.random.default_rng(1).lognormal(np.log(0.01), 0.8, 2000)
    if rounded:
        return qd.Empirical(tuple(F(max(1, round(v * 1000)), 1000) for v in values))
    return qd.Empirical(tuple(F(repr(float(v))) for v in values))


def _width(record) -> str:
    for note in record.notes:
        if "is between" in note:
            lo, hi = (float(x) for x in note.split("is between ")[1].split(" (")[0].split(" and "))
            return f"{(hi - lo) / ((hi + lo) / 2):.1e}"
    return "exact"


def main():
    cases = [
        ("lognormal sample (2000, off lattice), load 0.55", _sample(False), F(11, 20)),
        ("the sample rounded to 1 ms (bounds on a lattice dividing 1 ms), load 0.55", _sample(True), F(11, 20)),
        ("uniform 5..20 ms, load 0.55", qd.Uniform(F(5, 1000), F(2, 100)), F(11, 20)),
        ("uniform 5..20 ms, load 0.9", qd.Uniform(F(5, 1000), F(2, 100)), F(9, 10)),
    ]
    print("| case | P(W > 0.5) | relative width | first point | next point (0.4) | quantile 0.99 |\n|---|---|---|---|---|---|")
    for name, service, load in cases:
        model = qd.VacationQueue.from_load(load, qd.Geometric(4), service, qd.Exponential(F(6, 100)))
        t = time.perf_counter()
        r = model.evaluate(wait_tail=["0.5"])
        first = time.perf_counter() - t
        t = time.perf_counter()
        model.evaluate(wait_tail=["0.4"])
        second = time.perf_counter() - t
        t = time.perf_counter()
        model.evaluate(wait_quantile=["0.99"])
        quantile = time.perf_counter() - t
        print(f"| {name} | {r.response['wait_tail']['0.5']:.6g} | {_width(r)} | {first:.2f} s | {second:.2f} s "
              f"| {quantile:.2f} s |")


if __name__ == "__main__":
    main()
