"""Coverage of the simulator's 95 % intervals, measured: how often the interval holds the exact value.

Run by hand (minutes; results go to ``docs/performance.md``)::

    python benchmarks/coverage.py [--seeds 200] [--customers 20000] [--replications 10] [--workers 2]
                                  [--only MODEL] [--json FILE]

For every model whose simulator the command line offers and whose engine gives the exact value, each measure
that both the simulation and the engine report is simulated with seeds 0 .. seeds-1 (independent
replications, jackknife errors, Student-t intervals: ``numeric/simulation/stats.py``) and the fraction of
intervals holding the engine's float64 value is printed with its own 95 % binomial interval (Wilson). A 95 %
interval method is adequate where the coverage is >= 93 % (the issue's criterion); the short-run bias (runs
start empty; the warm-up fraction is discarded) shows as a coverage that falls with ``--customers``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction

#: model -> simulator function ("module:function"); the engine's values are the exact reference
SIMULATORS = {
    "vacation-finite": "qderive.numeric.simulation.vacation:simulate",
    "vacation-infinite": "qderive.numeric.simulation.vacation:simulate",
    "hysteretic": "qderive.numeric.simulation.hysteretic:simulate",
    "mm1-hysteretic": "qderive.numeric.simulation.hysteretic:simulate",
    "two-flow": "qderive.numeric.simulation.two_flow:simulate",
    "two-flow-hysteretic": "qderive.numeric.simulation.two_flow:simulate_hysteretic",
}


def _model(name):
    from qderive.symbolic.models.base import registered_models

    cls = registered_models()[name]
    if name == "hysteretic":  # the example (thesis figure 3, R = 100) has cycles too long for short runs
        from qderive.symbolic.batches.geometric import Geometric
        from qderive.symbolic.laws.gamma import Exponential

        return cls.from_load(Fraction(6, 5), service=Exponential(1), batch=Geometric(2), L=3, H=6, R=9)
    return cls.example()


def _one(task):
    name, seed, customers, replications = task
    import importlib

    module, _, attr = SIMULATORS[name].partition(":")
    simulate = getattr(importlib.import_module(module), attr)
    result = simulate(_model(name), customers, replications, seed, quiet=True)
    return {k: e.interval() for k, e in result.measures.items()}


def wilson(hits: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (z = Phi^-1(0.975))."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--customers", type=int, default=20_000)
    ap.add_argument("--replications", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", action="append")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows = []
    names = args.only or list(SIMULATORS)
    with ProcessPoolExecutor(args.workers) as pool:
        for name in names:
            exact = _model(name).evaluate().as_dict()
            tasks = [(name, seed, args.customers, args.replications) for seed in range(args.seeds)]
            intervals = list(pool.map(_one, tasks, chunksize=4))
            for key in intervals[0]:
                value = exact.get(key)
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    continue
                held = [ci is not None and ci[0] <= value <= ci[1] for ci in (run[key] for run in intervals)]
                formed = sum(ci is not None for ci in (run[key] for run in intervals))
                if formed == 0:
                    continue
                hits = sum(held)
                lo, hi = wilson(hits, formed)
                rows.append({"model": name, "measure": key, "exact": value, "intervals": formed,
                             "coverage": hits / formed, "coverage_lo": lo, "coverage_hi": hi})
                print(f"{name:22s} {key:28s} {hits / formed:6.3f}  [{lo:.3f}, {hi:.3f}]  of {formed}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"seeds": args.seeds, "customers": args.customers, "replications": args.replications,
                       "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
