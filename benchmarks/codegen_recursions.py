"""Benchmark: generated standalone code versus the in-package float64 path (issue 8).

Run by hand: python benchmarks/codegen_recursions.py  (prints a Markdown section for docs/performance.md;
old versus new generated code: ``benchmarks/compare.py``)

For each model the generated module is written by ``qderive codegen`` into a temporary
directory and imported there; the in-package path is timed from a pre-built model object
(the engine for vacation-finite, ``Model.evaluate()`` -- engine plus the precision policy's
tests -- for the others), so the comparison is of the numeric work.
"""

import statistics
import sys
import tempfile
import time
from fractions import Fraction as F
from pathlib import Path

import qderive as qd
from qderive.derivations.cli import main
from qderive.numeric.backend import FLOAT64
from qderive.numeric.engines.vacation import FiniteSweep


def per_call(fn, min_time=0.5):
    """Median over 5 rounds of the mean time per call (each round runs >= min_time / 5 seconds)."""
    fn()
    rounds = []
    for _ in range(5):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            el = time.perf_counter() - t0
            if el >= min_time / 5:
                break
        rounds.append(el / n)
    return statistics.median(rounds)


def generated(directory, argv, name):
    out = Path(directory) / f"{name}.py"
    assert main(["codegen", *argv, "--out", str(out)]) == 0
    sys.path.insert(0, str(directory))
    try:
        module = __import__(name)
    finally:
        sys.path.pop(0)
    return getattr(module, argv[2])


def fmt(t):
    return f"{t * 1e6:.0f} µs" if t < 1e-2 else f"{t * 1e3:.1f} ms"


def main_():
    rows = []
    with tempfile.TemporaryDirectory() as d:
        # vacation-finite: geometric batches (mean 5), Erlang-4 service, exponential vacations, rho_bar = 0.6
        loss = generated(d, ["vacation-finite", "--measure", "loss_probability", "--batch", "geometric",
                             "--service", "erlang:k=4", "--vacation", "exp"], "vf_loss")
        model = qd.FiniteVacationQueue(8, qd.Geometric(5), qd.Erlang(4, F(3, 200)), qd.Exponential(F(3, 40)), 20)
        for r in (20, 200, 2000):
            m = model.with_capacity(r)
            pkg = per_call(lambda: FiniteSweep(m, FLOAT64).at(r))
            gen = per_call(lambda: loss(8.0, 5.0, 0.015, 0.075, r))
            rows.append((f"vacation-finite loss, r = {r}", pkg, gen))
        rs = list(range(1, 201))
        big = model.with_capacity(200)

        def package_sweep():
            sweep = FiniteSweep(big, FLOAT64)  # fresh: the sequences are built once, then O(r) per r
            return [sweep.loss_at(r) for r in rs]

        pkg = per_call(package_sweep, 2)
        gen = per_call(lambda: loss(8.0, 5.0, 0.015, 0.075, rs), 2)
        rows.append(("vacation-finite loss, sweep r = 1..200", pkg, gen))

        eb = generated(d, ["erlang-b", "--measure", "blocking_probability"], "eb")
        for n, rho in ((100, 80), (10_000, 9_500)):
            em = qd.ErlangB(servers=n, load=rho)
            pkg = per_call(em.evaluate)
            gen = per_call(lambda: eb(float(rho), n))
            rows.append((f"Erlang B, n = {n}, rho = {rho}", pkg, gen))

        tau = generated(d, ["hysteretic", "--measure", "mean_cycle_time", "--batch", "geometric",
                            "--service", "det"], "hy")
        for (L, H, R) in ((73, 84, 100), (100, 200, 300)):
            hm = qd.HystereticModel(service=qd.Deterministic(F(1, 200)), batch=qd.Geometric(2), rate=150,
                                    overload_factor=F(1, 2), L=L, H=H, R=R)
            pkg = per_call(hm.evaluate)
            gen = per_call(lambda: tau(150.0, 0.5, 2.0, 0.005, L, H, R))
            rows.append((f"hysteretic, all measures / E tau, (L,H,R) = ({L},{H},{R})", pkg, gen))

        rc = generated(d, ["redundant-cluster", "--measure", "timely_probability"], "rc")
        cl = qd.RedundantCluster(rate=3, copies=2, nodes=(10, 10), service_times=(F(3, 10), F(1, 5)),
                                 deadline=F(3, 5))
        pkg = per_call(cl.evaluate)
        gen = per_call(lambda: rc(3.0, 2, 10, 10, 0.3, 0.2, 0.6, 0.0, 0.0))
        rows.append(("redundant cluster timely probability", pkg, gen))

    print("## Generated recursion and closed-form code (`benchmarks/codegen_recursions.py`)\n")
    print("| measure | in-package float64 | generated (numpy only) | speed-up |")
    print("|---|---|---|---|")
    for label, pkg, gen in rows:
        print(f"| {label} | {fmt(pkg)} | {fmt(gen)} | {pkg / gen:.1f}x |")
    print()


if __name__ == "__main__":
    main_()
