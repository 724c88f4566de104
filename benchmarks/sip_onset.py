"""The simulated collapse onset of a SIP server under retransmissions (issue 17; run by hand).

``python benchmarks/sip_onset.py --service-mean 1/100 --loads 0.8,0.82,0.84,0.86 [--runs 20]
[--horizon 1000] [--seed 17] [--method invite] [--control none|ignore|503] [--thresholds L,H] [--out FILE.jsonl]``

The model of :mod:`qderive.numeric.simulation.sip` without control and without a capacity limit,
exponential service of mean ``--service-mean`` seconds, SIP's default timers (T1 = 0.5 s, timeout
32 s). For each offered load lambda_0 E B in ``--loads``, ``--runs`` runs from empty
(:func:`~qderive.numeric.simulation.sip.collapse_times` with limit 2T, T = ``--horizon``; the same
seed at every load: common random numbers) give the fraction of runs collapsed by T and by 2T
(collapse: the first copy admitted with a wait above the timeout; with ``--control ignore|503``, whose queue
H E B stays below the timeout, the first entry into the overload state, ``criterion="overload"``; default
thresholds L,H = H/2, H with H E B = 8 T1 = 4 s, the figure's 20,40 at E B = 0.1 s), each with its 95 % Wilson
score interval. **The simulated onset at T** is the load at which half of the runs have collapsed by T::

    onset(T) = the load where the collapsed fraction f_T(load), linearly interpolated between the
               loads of the table, crosses 1/2 (the first crossing from below)

and its interval the loads where the upper and the lower Wilson bounds, interpolated the same way,
cross 1/2 (an interval from pointwise intervals, not a simultaneous band). The same for 2T (the drift
of the onset with the run length). Prints a Markdown table, then both onsets; ``--out`` appends one
JSON line per call (the table and the onsets).

``python benchmarks/sip_onset.py --report FILE.jsonl`` prints, from such lines, the comparison of
``docs/guides/sip-retransmission.md``: the analytic ends of the bistable range
(:func:`qderive.numeric.engines.sip.onset.collapse_onset`, ``qderive size sip-retransmission``), the simulated
onsets at T and 2T, the relative gap (analytic upper end - simulated) / simulated, and the onset at run length T
predicted by the quasi-static lifetime chain (:func:`~qderive.numeric.engines.sip.onset.run_length_onset`); then
per load the simulated median collapse time against the chain's median, lifetime ln 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qderive.numeric.simulation.sip import collapse_times
from sip_simulation import model  # the contract's fields with SIP's default timers (this folder)

#: the normal quantile of a 95 % two-sided interval
Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion k / n::

        (p + z^2/(2n) -+ z sqrt(p (1 - p)/n + z^2/(4 n^2))) / (1 + z^2/n),  p = k/n
    """
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def crossing(loads, fractions, level: float = 0.5):
    """The first load where the piecewise-linear interpolation of ``fractions`` (at increasing ``loads``) reaches
    ``level`` from below; None if it never does; ``-inf`` if it is already there at the first load (the crossing
    lies below the table)."""
    if fractions[0] >= level:
        return -math.inf
    for (x0, f0), (x1, f1) in zip(zip(loads, fractions), zip(loads[1:], fractions[1:])):
        if f0 < level <= f1:
            return x0 + (level - f0) * (x1 - x0) / (f1 - f0)
    return None


def onset(loads, counts, runs):
    """(the onset, its lower and upper end) from the collapsed counts per load (module docstring): the crossings
    of 1/2 by the fraction, by its upper Wilson bound (the lower end) and by its lower bound (the upper end)."""
    bounds = [wilson(k, runs) for k in counts]
    return (crossing(loads, [k / runs for k in counts]), crossing(loads, [b[1] for b in bounds]),
            crossing(loads, [b[0] for b in bounds]))


def text(x) -> str:
    if x is None:
        return "above the table"
    if x == -math.inf:
        return "below the table"
    return f"{x:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--service-mean", type=Fraction, default=Fraction(1, 10))
    parser.add_argument("--loads", default=None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--horizon", type=float, default=1000.0, metavar="T")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--method", default="invite", choices=("invite", "non-invite"))
    parser.add_argument("--out", default=None, metavar="FILE.jsonl")
    parser.add_argument("--report", default=None, metavar="FILE.jsonl")
    parser.add_argument("--control", default="none", choices=("none", "ignore", "503"))
    parser.add_argument("--thresholds", default=None, metavar="L,H")
    args = parser.parse_args()
    if args.report:
        report(args.report)
        return
    if not args.loads:
        parser.error("--loads is required (or --report FILE)")
    loads = sorted(float(x) for x in args.loads.split(","))
    mean, T = args.service_mean, args.horizon
    capacity = 1 / float(mean)
    thresholds = None
    if args.control != "none":
        H = round(4 / mean)
        thresholds = (tuple(int(x) for x in args.thresholds.split(",")) if args.thresholds else (H // 2, H))
    control = "no control" if thresholds is None else f"control {args.control} {thresholds[0]},{thresholds[1]}"
    print(f"service exp mean {float(mean)} s (T1 / E B = {0.5 / float(mean):g}), {args.method}, {control}, no "
          f"capacity limit; {args.runs} runs from empty per load, each until its collapse or 2T = {2 * T:g} s, "
          f"seed {args.seed}")
    print()
    print(f"| load | collapsed by T = {T:g} s | 95 % interval | collapsed by 2T | 95 % interval | median collapse s | CPU s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for load in loads:
        started = time.process_time()
        out = collapse_times(model(load * capacity, mean, args.control, thresholds, args.method), limit=2 * T,
                             replications=args.runs, seed=args.seed,
                             criterion="wait" if thresholds is None else "overload")
        cpu = time.process_time() - started
        times = np.array(out["times"])
        k1, k2 = int(np.sum(times <= T)), int(np.sum(times <= 2 * T))
        med = float(np.quantile(times, 0.5, method="inverted_cdf"))
        rows.append({"load": load, "by_T": k1, "by_2T": k2, "median": med, "cpu": cpu})
        (a1, b1), (a2, b2) = wilson(k1, args.runs), wilson(k2, args.runs)
        print(f"| {load:g} | {k1}/{args.runs} | {a1:.2f}-{b1:.2f} | {k2}/{args.runs} | {a2:.2f}-{b2:.2f} | "
              f"{'-' if not math.isfinite(med) else f'{med:.4g}'} | {cpu:.1f} |", flush=True)
    print()
    result = {"service_mean": float(mean), "T": T, "runs": args.runs, "seed": args.seed, "method": args.method,
              "control": args.control, "thresholds": thresholds, "rows": rows}
    for key, label in (("by_T", f"T = {T:g} s"), ("by_2T", f"2T = {2 * T:g} s")):
        o = onset(loads, [r[key] for r in rows], args.runs)
        result[f"onset_{key}"] = [None if x is None or not math.isfinite(x) else x for x in o]
        print(f"simulated onset at {label}: {text(o[0])} (95 % from pointwise intervals: {text(o[1])} - {text(o[2])})")
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(json.dumps(result) + "\n")


def _interval(o) -> str:
    x, a, b = o
    return "-" if x is None else f"{x:.4f} ({text(a)}-{text(b)})"


def report(path: str) -> None:
    """The comparison tables from the JSON lines of ``path`` (module docstring)."""
    from qderive.numeric.engines.sip.onset import (
        collapse_onset,
        metastable_lifetime,
        run_length_onset,
    )
    from qderive.symbolic.laws import Exponential
    from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel

    records = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    medians = []
    print("| E B s | T1 / E B | control | analytic upper (lower) | simulated onset at T (95 %) | at 2T (95 %) | "
          "gap at T | gap at 2T | quasi-static at T | vs simulated | at 2T | vs simulated |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in records:
        mean = Fraction(r["service_mean"]).limit_denominator(10**6)
        control, th = r.get("control", "none"), r.get("thresholds")
        m = SipRetransmissionModel(rate=1, service=Exponential(mean), method=r["method"], control=control,
                                   thresholds=None if th is None else tuple(th))
        a = collapse_onset(m)
        up, low = a["load_upper"], a["load_lower"]
        shown = control if th is None else f"{control} {th[0]},{th[1]}"
        cells = [f"{float(mean):g}", f"{0.5 / float(mean):g}", shown, f"{up:.4f} ({low:.4f})",
                 _interval(r["onset_by_T"]), _interval(r["onset_by_2T"])]
        sims = [r["onset_by_T"][0], r["onset_by_2T"][0]]
        cells += ["-" if x is None else f"{(up - x) / x:+.1%}" for x in sims]
        for T, x in ((r["T"], sims[0]), (2 * r["T"], sims[1])):
            rate = run_length_onset(m, T)
            q = None if rate is None else rate * float(mean)
            cells += ["-" if q is None else f"{q:.4f}", "-" if q is None or x is None else f"{(q - x) / x:+.1%}"]
        print("| " + " | ".join(cells) + " |")
        for row in r["rows"]:
            life = metastable_lifetime(m, row["load"] / float(mean))
            medians.append((float(mean), shown, row["load"], row["median"], life * math.log(2),
                            f"{row['by_2T']}/{r['runs']}"))
    print()
    print("| E B s | control | load | simulated median collapse s | collapsed by 2T | quasi-static median s "
          "(lifetime ln 2) | ratio |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for mean, shown, load, sim, qs, frac in medians:
        ratio = "-" if not math.isfinite(sim) else f"{qs / sim:.2f}"
        cell = "-" if not math.isfinite(sim) else f"{sim:.4g}"
        print(f"| {mean:g} | {shown} | {load:g} | {cell} | {frac} | {qs:.4g} | {ratio} |")


if __name__ == "__main__":
    main()
