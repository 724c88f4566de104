"""Simulated goodput collapse of a SIP server under retransmissions (issue 17; run by hand).

``python benchmarks/sip_simulation.py [--service-mean 0.1] [--horizon 1000] [--warmup 100]
[--replications 10] [--thresholds L,H] [--loads 0.5,0.75,...] [--method invite] [--seed 17]
[--duplicate-cost C] [--controls none,ignore,503] [--none-capacity K] [--collapse LIMIT]``

One FIFO server with exponential service of mean ``--service-mean`` seconds (capacity
1/mean copies per second), RFC 3261 timers with their defaults (T1 = 0.5 s, T2 = 4 s,
timeout 64 T1), no capacity limit (``--none-capacity K``: K for the control none), duplicate cost ``--duplicate-cost`` (default 1); for each offered load
lambda_0 E[B] in ``--loads`` (default 0.5 ... 3) and each control (none, ignore and 503 with
``--thresholds`` L,H; default the copies of 0.2 s and 0.4 s of work, L = round(0.2 / E B),
H = round(0.4 / E B), so that an admitted copy is answered in about H E B < T1) it runs :func:`qderive.numeric.simulation.sip.simulate_sip` and prints a Markdown
table of goodput, duplicate ratio, timeout and reject probabilities with their 95 %
half-widths, then the transactions simulated per CPU second. ``--collapse LIMIT`` prints instead,
for the control none, when the server collapses from empty (the first copy waiting longer than the
timeout, :func:`~qderive.numeric.simulation.sip.collapse_times`) in ``--replications`` runs of at
most LIMIT seconds: the fraction collapsed, the quartiles of the collapse epoch.
"""

from __future__ import annotations

import argparse
import time
import types
from fractions import Fraction

import numpy as np
from qderive.numeric.simulation.sip import collapse_times, simulate_sip
from qderive.symbolic.laws import Exponential

LOADS = (0.5, 0.75, 1.0, 1.25, 1.5, 2, 2.5, 3)
CONTROLS = ("none", "ignore", "503")


def model(rate: float, mean: Fraction, control: str, thresholds, method: str, cost: float = 1, capacity=None):
    """The contract's fields (``docs``: the sip-retransmission model) with SIP's default timers."""
    return types.SimpleNamespace(rate=rate, service=Exponential(mean), method=method, t1=0.5, t2=4, timeout=32,
                                 capacity=capacity if control == "none" else None, control=control,
                                 thresholds=None if control == "none" else thresholds, duplicate_cost=cost)


def cell(pair, digits: int) -> str:
    value, half = pair
    return "-" if value is None else f"{value:.{digits}f} ± {half:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--service-mean", type=Fraction, default=Fraction(1, 10))
    parser.add_argument("--horizon", type=float, default=1000.0)
    parser.add_argument("--warmup", type=float, default=100.0)
    parser.add_argument("--replications", type=int, default=10)
    parser.add_argument("--thresholds", default=None)
    parser.add_argument("--loads", default=",".join(f"{x:g}" for x in LOADS))
    parser.add_argument("--method", default="invite", choices=("invite", "non-invite"))
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--collapse", type=float, default=None, metavar="LIMIT")
    parser.add_argument("--duplicate-cost", type=float, default=1.0)
    parser.add_argument("--controls", default=",".join(CONTROLS))
    parser.add_argument("--none-capacity", type=int, default=None, metavar="K")
    args = parser.parse_args()
    if args.thresholds is None:
        args.thresholds = f"{round(Fraction(1, 5) / args.service_mean)},{round(Fraction(2, 5) / args.service_mean)}"
    thresholds = tuple(int(x) for x in args.thresholds.split(","))
    loads = [float(x) for x in args.loads.split(",")]
    capacity = 1 / float(args.service_mean)
    print(f"service exp mean {float(args.service_mean)} s (capacity {capacity:g} copies/s), {args.method}, "
          f"T1 0.5 s, T2 4 s, timeout 32 s, duplicate cost {args.duplicate_cost:g}, capacity "
          f"{args.none_capacity or 'unlimited'} (none)", end="")
    if args.collapse is not None:
        print(f", seed {args.seed}")
        collapse(args, loads, capacity)
        return
    print(f", thresholds L,H = {args.thresholds} (ignore, 503); "
          f"{args.replications} replications x {args.horizon:g} s after {args.warmup:g} s warm-up, seed {args.seed}")
    print()
    print("| load | control | goodput /s | goodput / capacity | duplicate ratio | timeout prob. | reject prob. |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    transactions, cpu = 0.0, 0.0
    for load in loads:
        rate = load * capacity
        for control in args.controls.split(","):
            started = time.process_time()
            m = model(rate, args.service_mean, control, thresholds, args.method, args.duplicate_cost, args.none_capacity)
            r = simulate_sip(m,
                             horizon=args.horizon,
                             warmup=args.warmup, replications=args.replications, seed=args.seed)
            cpu += time.process_time() - started
            transactions += rate * (args.warmup + args.horizon + 31.5) * args.replications  # expected, whole run
            g, h = r["goodput"]
            print(f"| {load:g} | {control} | {cell(r['goodput'], 2)} | {g / capacity:.3f} ± {h / capacity:.3f} | "
                  f"{cell(r['duplicate_ratio'], 3)} | {cell(r['timeout_probability'], 3)} | "
                  f"{cell(r['reject_probability'], 3)} |", flush=True)
    print()
    print(f"{transactions:.3g} transactions in {cpu:.1f} CPU s: {transactions / cpu:.3g} transactions per CPU second")


def collapse(args, loads, capacity) -> None:
    print()
    print(f"control none: {args.replications} runs from empty, each until its collapse or {args.collapse:g} s")
    print()
    print("| load | collapsed by the limit | first quartile s | median s | third quartile s |")
    print("|---:|---:|---:|---:|---:|")
    for load in loads:
        out = collapse_times(model(load * capacity, args.service_mean, "none", None, args.method, args.duplicate_cost,
                                   args.none_capacity),
                             limit=args.collapse, replications=args.replications, seed=args.seed)
        q = np.quantile(np.array(out["times"]), [0.25, 0.5, 0.75], method="inverted_cdf")
        shown = " | ".join("-" if not np.isfinite(x) else f"{x:.4g}" for x in q)
        print(f"| {load:g} | {cell(out['collapsed'], 3)} | {shown} |", flush=True)


if __name__ == "__main__":
    main()
