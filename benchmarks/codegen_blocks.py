"""Benchmark: generated finite-room code with blocks (issue 26, issue 30 item 5).

Run by hand: OPENBLAS_NUM_THREADS=1 python benchmarks/codegen_blocks.py [loads]   (prints the figures of the
docs/performance.md section "Generated blocks over an array of loads, and the generated tails with blocks")

* ``loss_probability`` of ``qderive codegen vacation-finite --batch geometric --service erlang:k=2 --vacation exp
  --setup exp --close-down exp --start-threshold 3`` at r = 129 over an array of loads: one vectorised call against
  100 separate calls (CPU seconds per load, ``time.process_time``: the machine is shared);
* ``wait_tail`` of the same options and of ``vacation-infinite`` with ``--start-threshold 3``: the first call (the
  data of a parameter point) and a call for 100 times t.
"""

import sys
import time

import numpy as np

from qderive.derivations.export.codegen_vacation import forms as finite_forms
from qderive.derivations import capabilities
from qderive.symbolic.models.vacation import CodegenFamilies, CodegenPolicy, VacationQueue

OPTIONS = dict(batch="geometric", service="erlang:k=2", vacation="exp", setup="exp", close_down="exp",
               start_threshold=3)
ARGS = (5.0, 0.015, 0.075, 0.03, 0.01)  # batch mean, service mean, vacation mean, setup mean, close-down mean


def load(forms, measure, model):
    ns = {}
    exec(compile(forms[measure].python_module(model), measure, "exec"), ns)  # noqa: S102 - generated code
    return ns[measure]


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def main(n_loads=10000):
    forms = finite_forms(CodegenFamilies(**OPTIONS))
    f = load(forms, "loss_probability", "vacation-finite")
    r = 129
    loads = np.linspace(0.2, 2.0, n_loads)
    vec, t_vec = cpu(lambda: f(None, *ARGS, r, load=loads))
    sub = loads[:: max(1, n_loads // 100)]
    one, t_one = cpu(lambda: np.array([f(None, *ARGS, r, load=float(x)) for x in sub]))
    step = max(1, n_loads // 100)
    diff = float(np.max(np.abs(vec[::step][: len(one)] - one) / one))
    print(f"| loss_probability, {n_loads} loads at r = {r}, one vectorised call | {t_vec:.2f} s | "
          f"{1e3 * t_vec / n_loads:.3f} ms |")
    print(f"| the same, {len(sub)} separate calls | {t_one:.2f} s | {1e3 * t_one / len(sub):.3f} ms |")
    print(f"max relative difference vectorised - separate: {diff:.1e}")

    tail = load(forms, "wait_tail", "vacation-finite")
    ts = np.linspace(0.01, 0.5, 100)
    _, first = cpu(lambda: tail(0.05, 2.0 / (5 * 0.015) * 0.8 / 2, *ARGS, r))
    _, many = cpu(lambda: tail(ts, 2.0 / (5 * 0.015) * 0.8 / 2, *ARGS, r))
    print(f"| finite wait_tail, N = 3, setup, close-down, r = {r}: first call (the data) | {first:.2f} s |")
    print(f"| the same, 100 times t (the data kept) | {many:.2f} s |")

    inf = capabilities.load(VacationQueue, "codegen")(CodegenPolicy(**dict(OPTIONS, vacation="exp")))
    itail = load(inf, "wait_tail", "vacation-infinite")
    lam = 0.5 / (5 * 0.015)
    ts = np.linspace(0.01, 0.2, 100)  # P(W > t) from 0.8 to 0.02 (beyond, the float64 self-check refuses some t)
    _, first = cpu(lambda: itail(0.05, lam, *ARGS))
    _, many = cpu(lambda: itail(ts, lam, *ARGS))
    print(f"| infinite wait_tail, N = 3, setup, close-down: first call | {first:.2f} s |")
    print(f"| the same, 100 times t | {many:.2f} s |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000)
