"""Our simulator against Ciw, an independent, maintained discrete-event simulation library.

Ciw can express M[X]/G/1/r without vacations: Poisson batch arrivals
(``batching_distributions``), a waiting room of r places
(``queue_capacities``: Ciw's node holds r waiting + 1 in service, like our r), and
customer-by-customer rejection when the node is full, which is our *partial* batch
admission (fill the room, lose the rest); the first customer of a batch that finds
the server idle starts service at once, as in our no-vacation model.

Both simulators estimate the loss probability, the mean wait of an accepted customer
and the throughput with independent replications. Ciw measures the wait customer by
customer (service start minus arrival), ours by Little's law (queue area / accepted),
so the two estimates share neither code nor method. Tolerance: the difference of the
two estimates must lie within the simultaneous 99 % interval of the difference
(Bonferroni over the three measures; standard error sqrt(se_ours^2 + se_ciw^2);
Student t with the smaller of the two degrees of freedom, which is conservative).
"""

from __future__ import annotations

import math
from fractions import Fraction as Fr

import ciw
import numpy as np
import pytest

from qderive.numeric.simulation.stats import student_t_quantile
from qderive.numeric.simulation.vacation import simulate
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic.models.vacation import FiniteVacationQueue

REPLICATIONS = 8
LEVEL = 0.99


def ciw_estimates(lam, batch_p, service, r, horizon, warmup_time, seeds):
    """Loss, mean wait and throughput from Ciw runs: per-run values, then mean and standard error."""
    rows = []
    for seed in seeds:
        ciw.seed(seed)
        network = ciw.create_network(
            arrival_distributions=[ciw.dists.Exponential(rate=lam)],
            service_distributions=[service],
            number_of_servers=[1],
            queue_capacities=[r],
            batching_distributions=[ciw.dists.Geometric(prob=batch_p)],
        )
        sim = ciw.Simulation(network)
        sim.simulate_until_max_time(horizon)
        records = sim.get_all_records()
        arrived = [rec for rec in records if rec.arrival_date > warmup_time]
        rejected = sum(rec.record_type == "rejection" for rec in arrived)
        waits = [rec.waiting_time for rec in arrived if rec.record_type == "service"]
        done = sum(rec.record_type == "service" and rec.exit_date > warmup_time for rec in records)
        rows.append((rejected / len(arrived), float(np.mean(waits)), done / (horizon - warmup_time)))
    rows = np.array(rows)
    k = len(rows)
    return {
        name: (float(rows[:, i].mean()), float(rows[:, i].std(ddof=1) / math.sqrt(k)))
        for i, name in enumerate(("loss_probability", "mean_wait", "throughput"))
    }


# the full suite only (an external simulator's long runs, 2 s of CPU a case); the loop keeps our own simulator
# against the engine: test_simulate_vacation.py's test_single_vacations_finite_against_the_engine
@pytest.mark.slow
@pytest.mark.parametrize(
    "load, service_kind",
    [(Fr(3, 5), "exponential"), pytest.param(Fr(6, 5), "deterministic", marks=pytest.mark.slow)],
    ids=["light-M", "heavy-D"],
)
def test_ciw_and_qderive_agree(load, service_kind):
    r, batch_mean = 5, 2
    lam = load / batch_mean  # service mean 1
    law = T.Exponential(1) if service_kind == "exponential" else T.Deterministic(1)
    ciw_service = ciw.dists.Exponential(rate=1) if service_kind == "exponential" else ciw.dists.Deterministic(value=1)
    # about 12 000 customers per Ciw run (Ciw serves ~40 000 customers per second here)
    horizon = 12_000 / float(min(load, 1))
    theirs = ciw_estimates(float(lam), 1 / batch_mean, ciw_service, r, horizon, horizon / 10, range(REPLICATIONS))
    model = FiniteVacationQueue(lam, B.Geometric(batch_mean), law, None, r)  # partial admission, no vacations
    ours = simulate(model, 100_000, REPLICATIONS, seed=4242, quiet=True)
    q = student_t_quantile(1 - (1 - LEVEL) / (2 * len(theirs)), REPLICATIONS - 1)
    for name, (value, se) in theirs.items():
        mine = ours[name]
        half = q * math.hypot(se, mine.std_error)
        assert abs(mine.value - value) <= half, f"{name}: qderive {mine.value:.6g}, Ciw {value:.6g}, allowed {half:.3g}"
