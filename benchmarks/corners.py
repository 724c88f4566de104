"""The slow corners and early refusals of issue 30, each timed from the command line.

Run by hand (about 3 minutes on a quiet machine)::

    python benchmarks/corners.py [--only SUBSTRING] [--markdown]

Each case is one ``qderive`` command of the issue's list, run in a fresh process with the user's cache (warm: the
commands are run once before timing unless ``--cold``); it reports the wall time, the CPU time of the process
(``resource.getrusage(RUSAGE_CHILDREN)``, which a loaded machine inflates much less than the wall time), the exit
code and the first line of stderr (a refusal's text). "before" is the figure the issue measured on the code of
its time; "budget" is the issue's target (item 2: at most 30 s on a quiet machine with the default limits, the
named targets where it gives one; a refusal that depends on the options only: under 1 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

QDERIVE = [sys.executable, "-m", "qderive.derivations.cli"]
VF = ["vacation-finite", "--batch", "geometric:mean=4", "--vacation", "exp:mean=0.06", "--load", "0.55",
      "--capacity", "129"]
CONST15 = ["vacation-infinite", "--batch", "geometric:mean=5", "--service", "det:mean=0.015", "--load", "0.6"]
MD1_LN = ["vacation-infinite", "--batch", "const:n=1", "--service", "det:mean=0.01", "--vacation",
          "lognormal:mean=0.06,scv=2", "--load", "0.5"]
HY = ["hysteretic", "--service", "det:mean=0.005", "--batch", "geometric:mean=2", "--load", "1.5",
      "--policy", "instant", "--thresholds", "73,84,100"]

#: (label, argv after ``qderive``, before (the issue's figure), budget in seconds)
CASES = [
    ("finite room, lognormal service, --wait-moments 2",
     ["eval", *VF, "--service", "lognormal:mean=0.012,scv=2", "--wait-moments", "2"], "> 600 s", 30),
    ("the same, --wait-moments 3",
     ["eval", *VF, "--service", "lognormal:mean=0.012,scv=2", "--wait-moments", "3"],
     "refused (count-work) after 27 s CPU", 30),
    ("the same, --wait-moments 4 --sojourn-moments 4",
     ["eval", *VF, "--service", "lognormal:mean=0.012,scv=2", "--wait-moments", "4", "--sojourn-moments", "4"],
     "refused (count-work) after 55-60 s CPU", 30),
    ("the same, --wait-moments 2 --digits 20",
     ["eval", *VF, "--service", "lognormal:mean=0.012,scv=2", "--wait-moments", "2", "--digits", "20"],
     "eval alone 53.6 s CPU; --wait-moments 4 refused (count-work) after 244 s CPU", 30),
    ("the same, --wait-moments 4 --admission whole",
     ["eval", *VF, "--service", "lognormal:mean=0.012,scv=2", "--wait-moments", "4", "--admission", "whole"],
     "refused (count-work) after 59 s CPU", 30),
    ("sip-retransmission --t1 1000 --timeout 1500",
     ["eval", "sip-retransmission", "--rate", "9", "--service", "exp:mean=0.1", "--t1", "1000", "--timeout", "1500"],
     "> 600 s", 30),
    ("hysteretic --policy instant --digits 40, R = 100", ["eval", *HY, "--digits", "40"],
     "refused: needed --limit birth-work=4.3e10", 30),
    ("constant service, gamma vacation, quantiles 0.9, 0.99",
     ["eval", *CONST15, "--vacation", "gamma:shape=5/2,mean=0.075", "--wait-quantile", "0.9,0.99"], "12-58 s", 5),
    ("constant service, lognormal vacation, quantiles 0.9, 0.99",
     ["eval", *CONST15, "--vacation", "lognormal:mean=0.075,scv=1", "--wait-quantile", "0.9,0.99"], "12-58 s", 5),
    ("the same, --digits 30",
     ["eval", *CONST15, "--vacation", "lognormal:mean=0.075,scv=1", "--wait-quantile", "0.9,0.99", "--digits", "30"],
     "9.6-10.6 s (issue 13's code)", 5),
    ("M/D/1, lognormal vacation scv 2, quantile 0.999",
     ["eval", *MD1_LN, "--wait-quantile", "0.999"], "15.5 s (branch perf30)", 5),
    ("the same, quantiles 0.99, 0.999, --digits 30",
     ["eval", *MD1_LN, "--wait-quantile", "0.99,0.999", "--digits", "30"], "17.1 s (branch perf30)", 5),
    ("finite room --capacity 2000 --digits 50",
     ["eval", "vacation-finite", "--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation",
      "exp:mean=0.075", "--load", "0.75", "--capacity", "2000", "--digits", "50"], "99 s", 30),
    ("figure goodput-collapse", ["figure", "goodput-collapse", "--out", "{tmp}/g.png"], "111 s", 30),
    ("qderive verify (warm)", ["verify"], "25 s warm, 42 s cold", 15),
    ("refusal: two-flow-hysteretic --thresholds 5,10,1e9",
     ["eval", "two-flow-hysteretic", "--rates-normal", "1.5,1", "--rates-overload", "0.5,0.5", "--service-rate", "1",
      "--thresholds", "5,10,1e9"], "minutes, silent", 1),
    ("refusal: figure sip-timers --out f.jpgx", ["figure", "sip-timers", "--out", "{tmp}/f.jpgx"], "20 s", 1),
    ("refusal: empirical:file=/dev/zero",
     ["eval", "vacation-finite", "--rate", "10", "--batch", "const:n=1", "--vacation", "exp:mean=0.1", "--capacity",
      "5", "--service", "empirical:file=/dev/zero"], "5.4 GB read, MemoryError", 1),
    ("M/D/1 --wait-tail 900 (a tail near 1e-40)",
     ["eval", "vacation-infinite", "--batch", "const:n=1", "--service", "det:mean=1", "--vacation", "none", "--load",
      "0.95", "--wait-tail", "900"], "OverflowError traceback", 30),
    ("cold eval erlang-b", ["eval", "erlang-b", "--servers", "10", "--load", "5"], "-", 0.35),
]


def run(argv, tmp):
    """(wall s, CPU s, exit code, first stderr line) of one ``qderive`` run."""
    argv = [a.replace("{tmp}", tmp) for a in argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(QDERIVE + argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = (proc.stderr.strip().splitlines() or [""])[-1][:90]
    return wall, cpu, proc.returncode, line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--cold", action="store_true", help="no warm-up run (the cache as it is)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="qd-corners-")
    rows = []
    try:
        for label, argv, before, budget in CASES:
            if args.only and not any(o in label for o in args.only):
                continue
            if not args.cold:
                run(argv, tmp)
            wall, cpu, code, line = run(argv, tmp)
            verdict = "met" if wall <= budget else f"not met ({wall / budget:.1f}x)"
            rows.append((label, before, f"{wall:.2f} s", f"{cpu:.2f} s", code, f"{budget:g} s", verdict, line))
            print(f"{label}: wall {wall:.2f} s, CPU {cpu:.2f} s, exit {code}: {line}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.markdown:
        print("| case | before (issue 30) | wall | CPU | exit | budget | |\n|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} |")


if __name__ == "__main__":
    main()
