"""Benchmark of the simulators (run by hand: ``python benchmarks/simulate.py [--repeat N]``).

Times 10^6 served customers (10 replications of 10^5) for each simulated model, the
median of ``--repeat`` runs, and two baselines for context: a textbook heap-based
event loop (``heapq``) for the same vacation model, and Ciw (if installed) on
M[X]/M/1/r without vacations.
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import time
from fractions import Fraction as Fr

import numpy as np
import qderive as qd
from qderive.numeric.simulation import hysteretic as SH
from qderive.numeric.simulation import two_flow as ST
from qderive.numeric.simulation import vacation as SV

B1, F1 = Fr(3, 200), Fr(3, 40)  # Figure-1 setting: b1 = 15 ms, f1 = 75 ms


def fig1_model(law, capacity=200, load=Fr(3, 5)):
    rate = load / (5 * B1)
    if capacity is None:
        return qd.VacationQueue(rate, qd.Geometric(5), law(B1), law(F1))
    return qd.FiniteVacationQueue(rate, qd.Geometric(5), law(B1), law(F1), capacity)


CASES = {
    "vacation-finite, E4/E4, r=200, rho=0.6": (SV, fig1_model(lambda m: qd.Erlang(4, m))),
    "vacation-finite, D/D, r=200, rho=0.6": (SV, fig1_model(qd.Deterministic)),
    "vacation-finite, M/M, r=20, rho=1.5": (SV, fig1_model(qd.Exponential, capacity=20, load=Fr(3, 2))),
    "vacation-infinite, E4/E4, rho=0.6": (SV, fig1_model(lambda m: qd.Erlang(4, m), capacity=None)),
    "hysteretic, Fig.3 (D 5 ms, geometric mean 2), rho0=1.5, event": (SH, qd.HystereticModel(
        service=qd.Deterministic(Fr(1, 200)), batch=qd.Geometric(2), rate=150, overload_factor=Fr(1, 2),
        convention=qd.Convention.EVENT, L=73, H=84, R=100)),
    "two-flow, priority, L,H,R=2,4,5": (ST, qd.TwoFlowModel(Fr(3, 5), 2, 1, 5, 2, 4, 5, qd.Algorithm.PRIORITY)),
}


def heap_baseline(model, customers: int, seed: int) -> float:
    """A plain heap event loop (arrival / service-end / vacation-end events): seconds for ``customers``."""
    rng = np.random.default_rng(seed)
    lam = float(model.rate)
    p = 1 / float(model.batch.mean)
    b = float(model.service.moment(1))
    f = float(model.vacation.moment(1))
    r = model.capacity
    started = time.perf_counter()
    events = [(rng.exponential(1 / lam), 0), (rng.gamma(4, f / 4), 2)]
    q = served = 0
    serving = False
    while served < customers:
        t, kind = heapq.heappop(events)
        if kind == 0:  # batch arrival
            q = min(r, q + int(rng.geometric(p)))
            heapq.heappush(events, (t + rng.exponential(1 / lam), 0))
        elif kind == 1:  # service end
            served += 1
            serving = False
        if not serving and kind != 0 and q == 0:
            heapq.heappush(events, (t + rng.gamma(4, f / 4), 2))
        elif not serving and q > 0 and kind != 0:
            q -= 1
            serving = True
            heapq.heappush(events, (t + rng.gamma(4, b / 4), 1))
    return time.perf_counter() - started


def ciw_baseline(customers: int) -> float | None:
    try:
        import ciw
    except ImportError:
        return None
    ciw.seed(1)
    net = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(rate=0.3)],
        service_distributions=[ciw.dists.Exponential(rate=1)],
        number_of_servers=[1],
        queue_capacities=[5],
        batching_distributions=[ciw.dists.Geometric(prob=0.5)],
    )
    sim = ciw.Simulation(net)
    started = time.perf_counter()
    sim.simulate_until_max_time(customers / 0.6)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'case':<66} {'median s':>9} {'customers/s':>12}")
    for name, (module, model) in CASES.items():
        module.simulate(model, 2000, 2, seed=0, quiet=True)  # warm
        times = []
        for k in range(args.repeat):
            started = time.perf_counter()
            module.simulate(model, 100_000, 10, seed=k, quiet=True)
            times.append(time.perf_counter() - started)
        med = statistics.median(times)
        print(f"{name:<66} {med:>9.3f} {1e6 / med:>12.0f}")
    n = 100_000
    base = CASES["vacation-finite, E4/E4, r=200, rho=0.6"][1]
    med = statistics.median(heap_baseline(base, n, k) for k in range(args.repeat))
    print(f"{'baseline: heapq event loop, vacation-finite E4/E4 (1e5 customers)':<66} {med:>9.3f} {n / med:>12.0f}")
    t = ciw_baseline(30_000)
    if t is not None:
        print(f"{'baseline: Ciw, M[X]/M/1/5 no vacation (3e4 customers)':<66} {t:>9.3f} {30_000 / t:>12.0f}")


if __name__ == "__main__":
    main()
