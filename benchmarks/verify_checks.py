"""`qderive verify`, check by check (issue 16, item 4): CPU seconds of every derivation's build and checks.

Run by hand from the repository root, once per checkout (``QDERIVE_CACHE=off`` for a cold run; a second run with
the same cache directory for a warm one), then compare two runs::

    python benchmarks/verify_checks.py --out after.json [--digits 50] [MODEL ...]
    python benchmarks/verify_checks.py --compare before.json after.json [--min 0.3]

Each check runs in this process in the order of ``qderive verify --jobs 1`` and is timed with
``time.process_time`` (the build of a derivation is its own row, ``(build)``); the total is the CPU of the
whole loop, the package's import excluded. ``--compare`` prints the Markdown tables of
``docs/performance.md`` ("`qderive verify` check by check"): per model, and every check above ``--min``
seconds on either side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from qderive.derivations.capabilities import has as _has


def measure(names: list, digits: int) -> dict:
    from qderive.derivations.cli import _derivation, _models

    names = names or [n for n, c in sorted(_models().items()) if _has(c, "derivation")]
    rows, start = [], time.process_time()
    for name in names:
        t = time.process_time()
        d = _derivation(name)
        rows.append({"model": name, "check": "(build)", "cpu": time.process_time() - t, "passed": True})
        for check in d.all_checks():
            t = time.process_time()
            res = check(digits)
            rows.append({"model": name, "check": res.name, "cpu": time.process_time() - t, "passed": res.passed})
    return {"digits": digits, "total": time.process_time() - start, "rows": rows}


def compare(before: dict, after: dict, least: float) -> str:
    out = ["| model | checks | before (CPU s) | after (CPU s) |", "|---|---|---|---|"]
    per = [defaultdict(float), defaultdict(float)]
    count = defaultdict(int)
    for side, run in enumerate((before, after)):
        for r in run["rows"]:
            per[side][r["model"]] += r["cpu"]
            count[r["model"]] += side == 1 and r["check"] != "(build)"
    for model in per[1]:
        out.append(f"| {model} | {count[model]} | {per[0].get(model, 0):.2f} | {per[1][model]:.2f} |")
    out.append(f"| **all** | {sum(count.values())} | {before['total']:.1f} | {after['total']:.1f} |")
    out += ["", "| model | check | before (CPU s) | after (CPU s) |", "|---|---|---|---|"]
    old = {(r["model"], r["check"]): r["cpu"] for r in before["rows"]}
    for r in after["rows"]:
        b = old.get((r["model"], r["check"]))
        if r["cpu"] >= least or (b or 0) >= least:
            out.append(f"| {r['model']} | {r['check'][:70]} | {'-' if b is None else f'{b:.2f}'} | {r['cpu']:.2f} |")
    failed = [(r["model"], r["check"]) for run in (before, after) for r in run["rows"] if not r["passed"]]
    if failed:
        out.append(f"\nFAILED: {failed}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--digits", type=int, default=50)
    ap.add_argument("--out", help="write the measurement as JSON")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--min", type=float, default=0.3, help="with --compare: list checks above this many seconds")
    args = ap.parse_args(argv)
    if args.compare:
        runs = [json.load(open(p, encoding="utf-8")) for p in args.compare]
        print(compare(*runs, args.min))
        return 0
    run = measure(args.models, args.digits)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(run, fh)
    failed = [r["check"] for r in run["rows"] if not r["passed"]]
    print(f"total CPU {run['total']:.2f} s, {len(run['rows'])} rows, failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
