"""The composed start-of-busy-period rules (issue "blocks"): the targets of its performance section.

Run by hand::

    python benchmarks/blocks.py

* float64 evaluation of a composed variant against today's closed forms (target: within 1.2x), median of 50
  calls after a warm-up, in one process;
* deriving the composed structure symbolically (the steps (B1)..(WB); target: under 5 s), a fresh process;
* the new ``verify`` checks (the block chain against the literature, the symbolic identities; target: under 5 s
  in total).
The results go to ``docs/performance.md`` (section "Composed start rules").
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import replace
from fractions import Fraction as F


def _median(fn, n=50):
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    import qderive as qd
    from qderive.numeric.precision import evaluate

    base = qd.VacationQueue.example()
    variants = {
        "today's multiple vacations": base,
        "N = 3": replace(base, start_threshold=3),
        "N = 3, setup, close-down": replace(base, start_threshold=3, setup=qd.Exponential(F(1, 100)),
                                            close_down=qd.Exponential(F(1, 200))),
        "single vacation, N = 5, setup": replace(base, vacation_policy=qd.VacationPolicy.SINGLE, start_threshold=5,
                                                 setup=qd.Erlang(2, F(1, 50))),
    }
    for name, model in variants.items():
        print(f"eval float64, {name}: {_median(lambda: evaluate(model)) * 1e3:.2f} ms")
    code = "import time; t = time.perf_counter(); from qderive.derivations.blocks import block_steps; " \
           "block_steps(); print(f'{time.perf_counter() - t:.2f}')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    print(f"derive the composed steps (fresh process, imports included): {out.strip()} s")
    from qderive.derivations.block_checks import checks as chain_checks
    from qderive.derivations.blocks import block_checks

    for title, checks in (("chain checks", chain_checks()), ("symbolic checks", block_checks())):
        t = time.perf_counter()
        results = [c(50) for c in checks]
        assert all(r.passed for r in results), [r for r in results if not r.passed]
        print(f"verify, {title} ({len(results)}): {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
