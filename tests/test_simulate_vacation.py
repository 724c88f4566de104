"""The vacation simulator against values computed another way, inside these tests.

Oracles (none shares code with the simulator):

* M/M/1/K: the textbook truncated-geometric law, written here;
* M[X]/G/1 with and without multiple vacations: the Pollaczek-Khinchine mean wait with
  batches and the vacation residual (``docs/theory/chapter2.md`` (6), (7)), written here with
  moments computed by hand; M/M/1's queue-length variance by hand;
* M[X]/M/1/r with exponential vacations -- multiple, single or none; partial and whole
  admission: the CTMC built here from the model definition (states: on vacation, idle,
  serving; with the number waiting) with the core's one CTMC builder, solved exactly (GTH in
  rationals); the embedded measures q0, qr from the flows of the epochs (service
  completions and vacation ends; an empty vacation end under single vacations is no epoch);
* single vacations with non-Markov laws: the analytic engines of ``vacation-finite`` and
  ``vacation-infinite`` (the cut recursion and the closed forms of their own derivations);
* the samplers: each law's exact mean and second moment;
* waiting and sojourn times (``wait_tail``, ``wait_quantile``, ``wait_moments``, ``sojourn_*``):
  M/M/1's exact laws (W: an atom 1 - rho at 0 and an exponential tail; T ~ Exp(mu - lambda));
  the README example (M[X]/G/1, multiple vacations) by Talbot inversion of the LST of W
  written here from its decomposition, and its mean by formula (6) (the engine); M[X]/M/1/r
  without vacations, partial and whole admission: Erlang mixtures over the exact stationary
  law of its chain (the j-th admitted customer of a batch that finds n waits n + j - 1
  services); Little's law of the same run; the per-run statistics against plain numpy.
  Tolerance: simultaneous 99.9 % intervals (a correct simulator fails such a test with
  probability at most 0.1 %).

Tolerance: the reference values must lie in the simulation's 99 % intervals (independent
replications, jackknife standard errors, Student t), taken simultaneous over the m
measures of one run (Bonferroni: each interval at level 1 - 0.01/m), so a correct
simulator fails a test with probability at most 1 %. The seeds are fixed, so the tests are
deterministic. The finite chains use 20 replications (19 degrees of freedom: the run-to-run
variance, and with it the interval, is then itself well estimated); the infinite queues use
10 longer runs, because a heavily loaded queue needs long runs to forget its empty start.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction as Fr

import mpmath
import numpy as np
import pytest
from conftest import cli

from qderive.numeric.oracles.ctmc import build
from qderive.numeric.simulation.stats import KernelSpec, SampleRequest, run_replications, sampler, student_t_quantile
from qderive.numeric.simulation.vacation import simulate
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models.vacation import (
    Admission,
    FiniteVacationMeasures,
    FiniteVacationQueue,
    VacationMeasures,
    VacationPolicy,
    VacationQueue,
)

LEVEL = 0.99
MULTIPLE, SINGLE = VacationPolicy.MULTIPLE, VacationPolicy.SINGLE


def assert_within(result, reference: dict):
    """Every reference value lies in the simulation's simultaneous 99 % intervals (Bonferroni)."""
    failures = []
    level = 1 - (1 - LEVEL) / len(reference)
    for name, ref in reference.items():
        lo, hi = result[name].interval(level)
        if not (lo <= float(ref) <= hi):
            failures.append(f"{name}: reference {float(ref):.6g} outside [{lo:.6g}, {hi:.6g}]")
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("p, dof", [(0.975, 1), (0.975, 4), (0.995, 9), (0.995, 29), (0.9, 200)])
def test_student_t_quantile_against_mpmath(p, dof):
    # the t CDF by mpmath's regularised incomplete beta, F(t) = 1 - I_{nu/(nu+t^2)}(nu/2, 1/2)/2,
    # inverted by a root finder at 30 digits: shares nothing with scipy's t.ppf
    with mpmath.workdps(30):
        nu = mpmath.mpf(dof)

        def cdf(t):
            return 1 - mpmath.betainc(nu / 2, mpmath.mpf(1) / 2, 0, nu / (nu + t * t), regularized=True) / 2

        ref = mpmath.findroot(lambda t: cdf(t) - mpmath.mpf(p), 2)
    assert student_t_quantile(p, dof) == pytest.approx(float(ref), rel=1e-9)


# --------------------------------------------------------------------------- samplers

TIME_LAWS = [
    T.Deterministic(Fr(3, 2)),
    T.Exponential(Fr(1, 3)),
    T.Erlang(4, Fr(3, 200)),
    T.Gamma(Fr(1, 2), 2),
    T.HyperExponential((Fr(1, 4), Fr(3, 4)), (1, 3)),
    T.Uniform(1, 4),
    T.LogNormal(2, Fr(1, 2)),
    T.Coxian((2, 1), (Fr(1, 2),)),
    T.PhaseType((Fr(1, 2), Fr(1, 2)), (-3, 1, 0, -2)),
    T.Empirical((Fr(1, 2), 1, 4)),
]
BATCH_LAWS = [
    B.Geometric(5),
    B.Geometric(1),
    B.Constant(3),
    B.FinitePMF({1: Fr(1, 2), 4: Fr(1, 2)}),
    B.ShiftedPoisson(3),
]


@pytest.mark.parametrize("law", TIME_LAWS + BATCH_LAWS, ids=lambda law: type(law).__name__)
def test_sampler_moments(law):
    draw = sampler(law, "law")
    x = draw(np.random.default_rng(7), 400_000).astype(np.float64)
    # the law's exact mean and second moment; tolerance 5 standard errors of the sample mean and
    # of the sample second moment (estimated from the sample's 4th moment)
    m1, m2 = (float(law.moment(k)) for k in (1, 2))
    n = len(x)
    se1 = np.sqrt(max(m2 - m1 * m1, 0.0) / n)
    se2 = np.sqrt(max(np.mean(x**4) - m2 * m2, 0.0) / n)
    assert abs(x.mean() - m1) <= 5 * se1 + 1e-12 * m1
    assert abs(np.mean(x * x) - m2) <= 5 * se2 + 1e-12 * m2


def test_symbolic_laws_are_refused():
    with pytest.raises(ParameterError, match="numeric law|cannot be sampled"):
        simulate(FiniteVacationQueue(1, B.Constant(1), T.GeneralTime(), None, 3), 10, seed=1)
    with pytest.raises(ParameterError, match="numeric law|cannot be sampled"):
        simulate(FiniteVacationQueue(1, B.GeneralBatch(), T.Exponential(1), None, 3), 10, seed=1)


def test_bad_input_is_refused():
    m = FiniteVacationQueue(1, B.Constant(1), T.Exponential(2), None, 3)
    with pytest.raises(ParameterError, match="customers"):
        simulate(m, customers=0)
    with pytest.raises(ParameterError, match="seed"):
        simulate(m, customers=10, seed=-1)
    with pytest.raises(ParameterError, match="warmup"):
        simulate(m, customers=10, warmup=1.0)
    with pytest.raises(ParameterError, match="VacationQueue"):
        simulate(object(), customers=10)


def test_seeded_runs_are_reproducible_and_shaped_as_the_contract():
    m = FiniteVacationQueue(Fr(1, 2), B.Geometric(2), T.Erlang(2, Fr(1, 2)), None, 5)
    a = simulate(m, 5_000, 3, seed=11, quiet=True).as_dict()
    b = simulate(m, 5_000, 3, seed=11, quiet=True).as_dict()
    c = simulate(m, 5_000, 3, seed=12, quiet=True).as_dict()
    assert a == b and a != c
    # the keys of `qderive eval vacation-finite` (the queue-length law p is an optional extra)
    assert set(a) == set(FiniteVacationMeasures.keys()) - {"p"}
    for v in a.values():
        assert set(v) == {"estimate", "ci95"} and v["ci95"][0] <= v["estimate"] <= v["ci95"][1]
    inf = VacationQueue(Fr(1, 2), B.Geometric(2), T.Erlang(2, Fr(1, 2)), T.Exponential(1))
    assert set(simulate(inf, 5_000, 3, seed=11, quiet=True).as_dict()) == set(VacationMeasures.keys()) - {"p"}


# --------------------------------------------------------------------------- M/M/1/K


@pytest.mark.parametrize("rho", [Fr(1, 2), Fr(3, 2)])
def test_mm1k_against_the_truncated_geometric_law(rho):
    r = 4  # waiting room; K = r + 1 places in the system
    K = r + 1
    norm = sum(rho**n for n in range(K + 1))
    p = [rho**n / norm for n in range(K + 1)]  # p_n = rho^n / sum_{m<=K} rho^m
    lam, mu = rho, 1
    lq = sum((n - 1) * p[n] for n in range(1, K + 1))
    # a departure leaves n in the system (all waiting at that instant) with probability
    # p_n / (1 - p_K), n <= r (level crossing: departures see what entering arrivals see)
    reference = {
        "loss_probability": p[K],
        "batch_blocking_probability": p[K],
        "idle_probability": p[0],
        "mean_queue_length": lq,
        "mean_number_in_system": sum(n * p[n] for n in range(K + 1)),
        "throughput": lam * (1 - p[K]),
        "mean_wait": lq / (lam * (1 - p[K])),
        "p0": p[0] + p[1],
        "pr": p[K],
        "q0": p[0] / (1 - p[K]),
        "qr": p[r] / (1 - p[K]),
    }
    model = FiniteVacationQueue(lam, B.Constant(1), T.Exponential(Fr(1, mu)), None, r)
    assert_within(simulate(model, 75_000, 20, seed=2024, quiet=True), reference)


# --------------------------------------------------------------------------- M[X]/G/1 (PK)


def _pk(lam, l1, l2, b1, b2, f1=None, f2=None):
    """M[X]/G/1 with multiple vacations (f1 None: none): W, N, idle, in system (spec (6), (7))."""
    rho = lam * l1 * b1
    w = lam * l1 * b2 / (2 * (1 - rho)) + (l2 - l1) * b1 / (2 * l1 * (1 - rho))
    if f1 is not None:
        w += f2 / (2 * f1)
    n = lam * l1 * w
    return {"mean_wait": w, "mean_queue_length": n, "idle_probability": 1 - rho, "mean_number_in_system": n + rho}


# rho = 4/5 (400 000 customers) runs in the full suite; the loop keeps rho = 3/10 (the same formula and simulator)
@pytest.mark.parametrize("rho", [Fr(3, 10), pytest.param(Fr(4, 5), marks=pytest.mark.slow)], ids=["rho0", "rho1"])
def test_batch_pk_with_vacations(rho):
    # geometric batches, mean 3: E X^2 = (2 - p)/p^2 with p = 1/3 -> 15
    l1, l2 = 3, 15
    # Erlang-4 service of mean 1/10: E B^2 = m^2 (1 + 1/4); Erlang-2 vacations of mean 1/4
    b1, b2 = Fr(1, 10), Fr(1, 100) * Fr(5, 4)
    f1, f2 = Fr(1, 4), Fr(1, 16) * Fr(3, 2)
    lam = rho / (l1 * b1)
    model = VacationQueue(lam, B.Geometric(3), T.Erlang(4, b1), T.Erlang(2, f1))
    n = 200_000 if rho < Fr(1, 2) else 400_000
    res = simulate(model, n, 10, seed=7, quiet=True)
    assert_within(res, _pk(lam, l1, l2, b1, b2, f1, f2))


# rho = 4/5 (400 000 customers) runs in the full suite; the loop keeps rho = 1/2 (the same measures and simulator)
@pytest.mark.parametrize("rho", [Fr(1, 2), pytest.param(Fr(4, 5), marks=pytest.mark.slow)], ids=["rho0", "rho1"])
def test_mm1_queue_length_variance_and_pk_without_vacations(rho):
    # M/M/1: P(Lq = k) = (1 - rho) rho^{k+1} (k >= 1), so E Lq = rho^2/(1-rho) and
    # Var Lq = rho^2 (1 + rho - rho^2) / (1 - rho)^2; a departure leaves the system empty with
    # probability P(N = 0) = 1 - rho (departures see the time-stationary law of N)
    model = VacationQueue(rho, B.Constant(1), T.Exponential(1), None)
    res = simulate(model, 400_000 if rho > Fr(1, 2) else 200_000, 10, seed=5, quiet=True)
    reference = _pk(rho, 1, 1, 1, 2)
    reference["queue_length_variance"] = rho**2 * (1 + rho - rho**2) / (1 - rho) ** 2
    reference["q0"] = 1 - rho
    assert_within(res, reference)


# --------------------------------------------------------------------------- finite chain with vacations


def _admit(x, room, partial):
    """Customers admitted from a batch of x into ``room`` places (the model's rule, restated)."""
    if x <= room:
        return x
    return room if partial else 0


def vacation_chain_reference(lam, pmf, mu, theta, r, partial, policy):
    """M[X]/M/1/r with Exp(theta) vacations (``policy`` multiple, single or None: no vacations).

    States ("V", q) on vacation with q waiting, ("I", 0) idle (no vacations, or after an empty
    single vacation), ("B", q) serving with q waiting. Measures by PASTA from the exact
    stationary law; the embedded epochs from the flows of service completions and vacation ends.
    """
    single = policy is SINGLE

    def moves(st):
        kind, q = st
        for x, px in pmf.items():
            if kind == "I":
                a = _admit(x, r + 1, partial)  # idle server: the first customer starts service
                if a:
                    yield ("B", a - 1), lam * px
            else:
                yield (kind, q + _admit(x, r - q, partial)), lam * px
        if kind == "V":
            yield (("B", q - 1) if q >= 1 else ("I", 0) if single else ("V", 0)), theta
        if kind == "B":
            yield (("B", q - 1) if q >= 1 else ("V", 0) if policy is not None else ("I", 0)), mu

    chain = build(("B", 0), moves)
    pi = dict(zip(chain.states, chain.stationary_exact()))
    l1 = sum(x * p for x, p in pmf.items())

    def room(st):
        return r + 1 if st[0] == "I" else r - st[1]

    lost = sum(pi[st] * px * (x - _admit(x, room(st), partial)) for st in pi for x, px in pmf.items())
    blocked = sum(pi[st] * px for st in pi for x, px in pmf.items() if _admit(x, room(st), partial) == 0)
    loss = lost / l1
    busy = sum(p for st, p in pi.items() if st[0] == "B")
    queue = sum(p * st[1] for st, p in pi.items())
    # embedded epochs: a service completion from ("B", q) leaves q waiting; a vacation end from
    # ("V", q) finds q waiting (single vacations: only q >= 1 ends a step of the embedded chain)
    epochs = {}
    for st, p in pi.items():
        if st[0] == "B":
            epochs[st[1]] = epochs.get(st[1], 0) + p * mu
        elif st[0] == "V" and not (single and st[1] == 0):
            epochs[st[1]] = epochs.get(st[1], 0) + p * theta
    total = sum(epochs.values())
    return {
        "loss_probability": loss,
        "batch_blocking_probability": blocked,
        "idle_probability": 1 - busy,
        "mean_queue_length": queue,
        "mean_number_in_system": queue + busy,
        "throughput": mu * busy,
        "mean_wait": queue / (lam * l1 * (1 - loss)),
        "p0": sum(p for st, p in pi.items() if st[1] == 0),
        "pr": sum(p for st, p in pi.items() if st[1] == r and st[0] != "I"),
        "q0": epochs.get(0, 0) / total,
        "qr": epochs.get(r, 0) / total,
    }


#: the development loop (-m "not slow") keeps half of the 12 cases, a covering design: every (policy, admission)
#: pair once (the simulator's vacation and admission branches), each load with every policy and both admissions;
#: the other six (the same branches at the other load) run in the full suite
_LOOP_CTMC = {("load0", "multiple", "PARTIAL"), ("load0", "single", "WHOLE"), ("load0", "none", "PARTIAL"),
              ("load1", "multiple", "WHOLE"), ("load1", "single", "PARTIAL"), ("load1", "none", "WHOLE")}


@pytest.mark.parametrize("load, policy, admission", [
    pytest.param(load, policy, admission, id=f"{lid}-{pid}-{admission}",
                 marks=() if (lid, pid, admission.name) in _LOOP_CTMC else pytest.mark.slow)
    for lid, load in (("load0", Fr(1, 2)), ("load1", Fr(3, 2)))
    for pid, policy in (("multiple", MULTIPLE), ("single", SINGLE), ("none", None))
    for admission in (Admission.PARTIAL, Admission.WHOLE)])
def test_finite_vacation_model_against_its_ctmc(admission, policy, load):
    pmf = {1: Fr(1, 2), 3: Fr(1, 2)}  # mean 2
    mu, theta, r = 1, Fr(2, 1), 3
    lam = load / 2
    reference = vacation_chain_reference(lam, pmf, mu, theta, r, admission is Admission.PARTIAL, policy)
    model = FiniteVacationQueue(lam, B.FinitePMF(pmf), T.Exponential(1), T.Exponential(1 / theta) if policy else None,
                                r, admission, policy or MULTIPLE)
    assert_within(simulate(model, 40_000, 20, seed=99, quiet=True), reference)


def test_single_vacation_chain_reference_is_the_engines_model():
    """The chain above and the analytic engine describe the same single-vacation model (so the
    simulation test with SINGLE checks the simulator, not a private reading of the policy)."""
    pmf = {1: Fr(1, 2), 3: Fr(1, 2)}
    ref = vacation_chain_reference(Fr(1, 4), pmf, 1, 2, 3, True, SINGLE)
    got = FiniteVacationQueue(Fr(1, 4), B.FinitePMF(pmf), T.Exponential(1), T.Exponential(Fr(1, 2)), 3,
                              vacation_policy=SINGLE).evaluate(digits=30).as_dict()
    with mpmath.workdps(40):
        for key, value in ref.items():
            want = mpmath.mpf(value.numerator) / value.denominator
            assert abs(mpmath.mpf(got[key]) - want) <= mpmath.mpf(10) ** -28 * abs(want), key


# --------------------------------------------------------------------------- single vacations, general laws


@pytest.mark.parametrize("model", [
    FiniteVacationQueue.from_load(Fr(3, 5), B.Geometric(5), T.Erlang(4, Fr(3, 200)), T.Erlang(4, Fr(3, 40)), 30,
                                  vacation_policy=SINGLE),
    FiniteVacationQueue.from_load(Fr(3, 2), B.Geometric(3), T.Deterministic(Fr(1, 10)), T.Uniform(0, Fr(1, 2)), 8,
                                  Admission.WHOLE, SINGLE),
    FiniteVacationQueue.from_load(Fr(4, 5), B.ShiftedPoisson(2), T.Erlang(2, 1), T.Deterministic(3), 6,
                                  vacation_policy=SINGLE),
], ids=["E4-0.6-r30", "D-whole-1.5-r8", "E2-D-0.8-r6"])
def test_single_vacations_finite_against_the_engine(model):
    analytic = model.evaluate().as_dict()
    reference = {k: v for k, v in analytic.items() if k != "p"}
    assert_within(simulate(model, 60_000, 20, seed=7, quiet=True), reference)


@pytest.mark.parametrize("model", [
    VacationQueue.from_load(Fr(3, 5), B.Geometric(3), T.Erlang(2, Fr(1, 10)), T.Exponential(Fr(1, 2)),
                            vacation_policy=SINGLE),
    VacationQueue.from_load(Fr(1, 2), B.Constant(2), T.Deterministic(1), T.Erlang(3, 4), vacation_policy=SINGLE),
], ids=["E2-M-0.6", "D-E3-0.5"])
def test_single_vacations_infinite_against_the_engine(model):
    assert_within(simulate(model, 200_000, 10, seed=13, quiet=True), model.evaluate().as_dict())


# --------------------------------------------------------------------------- progress bar


def test_progress_after_the_delay_only_unless_quiet(capsys):
    """The one progress mechanism (numeric/engines/progress.py): nothing for work shorter than its delay, a
    plain line in a log (capsys is not a terminal) once the delay has passed, nothing when quiet."""
    from qderive.numeric.engines import progress

    m = FiniteVacationQueue(Fr(1, 2), B.Constant(1), T.Exponential(1), None, 3)
    simulate(m, 1_000, 2, seed=1)  # well under the default 2 s delay: nothing
    assert capsys.readouterr().err == ""
    previous = progress.configure(delay=0.0)
    try:
        simulate(m, 100_000, 2, seed=1, quiet=True)
        assert capsys.readouterr().err == ""
        simulate(m, 100_000, 2, seed=1)
        err = capsys.readouterr().err
        assert "qderive: simulate vacation-finite: " in err and "200000/200000 customers (100 %)" in err, err
    finally:
        progress.configure(**previous)


def test_cli_simulate_json_keys():

    code, out, err = cli(["simulate", "vacation-finite", "--batch", "geometric:mean=5", "--service",
                          "erlang:k=4,mean=0.015", "--vacation", "erlang:k=4,mean=0.075", "--load", "1.5",
                          "--capacity", "20", "--vacation-policy", "single", "--customers", "20000",
                          "--replications", "4", "--seed", "3", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc["measures"]) == set(FiniteVacationMeasures.keys()) - {"p"} and doc["seed"] == 3


# --------------------------------------------------------------------------- waiting and sojourn times

#: the reference values of a waiting-time test must lie in these simultaneous intervals (Bonferroni
#: over the estimates of one run): a correct simulator fails such a test with probability <= 0.1 %
SAMPLE_LEVEL = 0.999


def assert_samples_within(result, reference: dict):
    """Every reference value lies in the run's simultaneous 99.9 % intervals.

    ``reference`` has the shape of the result: ``{"wait_tail": {t: P(W > t)}, "wait_moments": [E W, ...], ...}``.
    """
    checks = []
    for name, refs in reference.items():
        got = result[name]
        assert len(got) == len(refs), name
        if isinstance(refs, dict):
            checks += [(f"{name}[{key}]", got[key], float(ref)) for key, ref in refs.items()]
        else:  # moments k = 1..K
            checks += [(f"{name}[{k + 1}]", got[k], float(ref)) for k, ref in enumerate(refs)]
    level = 1 - (1 - SAMPLE_LEVEL) / len(checks)
    failures = []
    for label, est, ref in checks:
        lo, hi = est.interval(level)
        if not (lo <= ref <= hi):
            failures.append(f"{label}: reference {ref:.6g} outside [{lo:.6g}, {hi:.6g}] (estimate {est.value:.6g})")
    assert not failures, "\n".join(failures)


def test_sample_statistics_against_numpy():
    """The per-run row (counts, empirical quantiles, power sums), both tail paths, against plain numpy."""
    x = np.random.default_rng(3).exponential(size=10_001)
    x[::7] = 0.0  # an atom at 0, as the waits of customers served at once
    qs = (0.1, 0.142, 0.5, 0.9, 0.999)
    for ts in ((0, 0.5, 2), tuple(np.linspace(0, 5, 12))):  # few t: counts; many: sort + binary search
        r = SampleRequest.parse("wait", tail=ts, quantile=qs, moments=3)
        row = r.statistics(x)
        assert row[0] == len(x)
        assert list(row[1:1 + len(ts)]) == [np.count_nonzero(x > t) for t in ts]
        # the inverse of the empirical distribution function: numpy's "inverted_cdf" quantile
        assert list(row[1 + len(ts):1 + len(ts) + len(qs)]) == [np.quantile(x, q, method="inverted_cdf") for q in qs]
        for k in (1, 2, 3):
            assert row[len(ts) + len(qs) + k] == pytest.approx(math.fsum(x**k), rel=1e-12)


def test_mm1_waiting_and_sojourn_times():
    # M/M/1, rho = lambda / mu = 3/5: W = 0 with probability 1 - rho, else Exp(mu (1 - rho)), so
    # P(W > t) = rho e^{-mu (1 - rho) t}, the q-quantile is ln(rho / (1 - q)) / (mu (1 - rho)) for
    # q > 1 - rho (0 below: the atom), E W^k = rho k! / (mu (1 - rho))^k; the sojourn T is Exp(mu - lambda)
    lam, mu = 0.6, 1.0
    rho, theta, eta = lam / mu, mu * (1 - lam / mu), mu - lam
    model = VacationQueue(Fr(3, 5), B.Constant(1), T.Exponential(1), None)
    ts, qs = (0, "1", 2.5, 8), (0.3, 0.5, 0.9, 0.99)
    res = simulate(model, 100_000, 20, seed=1961, quiet=True, wait_tail=ts, wait_quantile=qs, wait_moments=2,
                   sojourn_tail=("0.5", 4), sojourn_quantile=(0.5, 0.95), sojourn_moments=2)
    assert_samples_within(res, {
        "wait_tail": {t: rho * math.exp(-theta * float(t)) for t in ts},
        "wait_quantile": {q: max(0.0, math.log(rho / (1 - q)) / theta) for q in qs},
        "wait_moments": [rho / theta, 2 * rho / theta**2],
        "sojourn_tail": {"0.5": math.exp(-eta * 0.5), 4: math.exp(-eta * 4)},
        "sojourn_quantile": {q: -math.log(1 - q) / eta for q in (0.5, 0.95)},
        "sojourn_moments": [1 / eta, 2 / eta**2],
    })
    # the waits of customers served on arrival are exactly 0 (the atom is not smeared by rounding)
    assert res["wait_quantile"][0.3].value == 0 and res["wait_quantile"][0.3].std_error == 0
    assert any("wait_quantile[0.3]: the same in every replication" in note for note in res.notes)


def readme_wait_transform(s):
    """W*(s) of M[X]/G/1 with multiple vacations, FIFO (the README example), written here from the
    decomposition W = W_batch + W_own + F_e (independent): the batch's first customer waits as in
    M[X]/G/1, (1 - rho) s / (s - lam + lam X(B(s))); the customers ahead in its own batch,
    (1 - X(B(s))) / (E X (1 - B(s))); the residual vacation, (1 - F(s)) / (s E F). Geometric batches
    of mean 5, Erlang-4 service of mean 15 ms, exponential vacations of mean 75 ms, lam = 8 (rho = 0.6)."""
    p, b, f, lam = mpmath.mpf(1) / 5, mpmath.mpf(3) / 200, mpmath.mpf(3) / 40, mpmath.mpf(8)
    rho = lam * b / p
    beta = (4 / (4 + b * s)) ** 4
    xb = p * beta / (1 - (1 - p) * beta)
    return (1 - rho) * s / (s - lam + lam * xb) * p * (1 - xb) / (1 - beta) * (1 - 1 / (1 + f * s)) / (s * f)


def _readme_tails():
    """P(W > t) for t in 0.1, 0.5, 1 and P(T > 0.5) (T = W + B) of the README's example by Talbot inversion of
    (1 - W*(s)) / s and (1 - W*(s) B*(s)) / s at 30 digits."""
    with mpmath.workdps(30):
        def tail(lst, t):
            return float(mpmath.invertlaplace(lambda s: (1 - lst(s)) / s, t, method="talbot"))

        def service(s):  # B*(s) of the Erlang-4 service of mean 15 ms
            return (4 / (4 + mpmath.mpf(3) / 200 * s)) ** 4

        w_tail = {t: tail(readme_wait_transform, float(t)) for t in ("0.1", "0.5", "1")}
        t_tail = tail(lambda s: readme_wait_transform(s) * service(s), 0.5)
    return w_tail, t_tail


def test_readme_example_waiting_time_tail_by_talbot():
    """The transform inverted: P(W > 0.5) = 0.09233 (a published simulation: 0.0925 +- 0.0007)."""
    w_tail, t_tail = _readme_tails()
    assert w_tail["0.5"] == pytest.approx(0.0923, abs=5e-5)
    assert w_tail["0.1"] > w_tail["0.5"] > w_tail["1"] > 0 and w_tail["0.5"] < t_tail < 1


# 8 million simulated customers (3 s): the 99.9 % interval of P(W > 0.5) is +-0.003; 2 million would widen it to
# +-0.009, too wide to tell a wrong tail, so this runs in the full suite. The loop keeps the same simulator paths
# against exact laws: batches with vacations in test_wait_kinked_vacation.py::test_against_the_simulation (wait and
# sojourn tails), waits of batches in test_finite_batch_queue_waits_against_its_chain, tails, quantiles and moments
# in test_mm1_waiting_and_sojourn_times; and this transform in test_readme_example_waiting_time_tail_by_talbot.
@pytest.mark.slow
def test_readme_example_waiting_time_tail():
    model = VacationQueue.from_load(Fr(3, 5), B.Geometric(5), T.Erlang(4, Fr(3, 200)), T.Exponential(Fr(3, 40)))
    w_tail, t_tail = _readme_tails()
    res = simulate(model, 400_000, 20, seed=2013, quiet=True, wait_tail=tuple(w_tail), wait_moments=1,
                   sojourn_tail=("0.5",))
    mean_wait = model.evaluate().mean_wait  # formula (6): 0.2390625
    assert_samples_within(res, {"wait_tail": w_tail, "sojourn_tail": {"0.5": t_tail}, "wait_moments": [mean_wait]})
    assert_within(res, {"mean_wait": mean_wait})
    # the sample mean of the waits and Little's law (queue area / admitted) on the same customers differ
    # only by the customers present at the two ends of the measurement window (~ queue length / 360 000)
    sample, little = res["wait_moments"][0].value, res["mean_wait"].value
    assert abs(sample - little) <= 1e-3 * little


def batch_queue_wait_reference(lam, pmf, mu, r, partial, ts):
    """P(W > t), E W, E W^2 and P(T > t) of an admitted customer of M[X]/M/1/r without vacations.

    The chain of the number n in the system (exact GTH); a batch sees the stationary law (PASTA) and
    admits a of its x customers (room r + 1 - n); its j-th admitted customer waits for the n + j - 1
    exponential services ahead of it (the one in service is memoryless): W ~ Erlang(n + j - 1, mu),
    T ~ Erlang(n + j, mu), weighted by the admitted customers.
    """

    def moves(n):
        for x, px in pmf.items():
            a = _admit(x, r + 1 - n, partial)
            if a:
                yield n + a, lam * px
        if n:
            yield n - 1, mu

    chain = build(0, moves)
    pi = dict(zip(chain.states, chain.stationary_exact()))
    weights = {}  # number of exponential services ahead -> admitted customers per unit time / lam
    for n, p in pi.items():
        for x, px in pmf.items():
            for j in range(1, _admit(x, r + 1 - n, partial) + 1):
                weights[n + j - 1] = weights.get(n + j - 1, 0) + p * px
    total = sum(weights.values())
    with mpmath.workdps(30):
        def erlang_tail(k, t):  # P(Erlang(k, mu) > t); Erlang(0) = 0
            x = mpmath.mpf(mu) * t
            return mpmath.fsum(mpmath.exp(-x) * x**i / mpmath.factorial(i) for i in range(k))

        def mix(f):
            return float(mpmath.fsum(mpmath.mpf(w.numerator) / w.denominator * f(k) for k, w in weights.items())
                         / (mpmath.mpf(total.numerator) / total.denominator))

        return {
            "wait_tail": {t: mix(lambda k, t=t: erlang_tail(k, mpmath.mpf(t))) for t in ts},
            "wait_moments": [mix(lambda k: mpmath.mpf(k) / mu), mix(lambda k: mpmath.mpf(k * (k + 1)) / mu**2)],
            "sojourn_tail": {t: mix(lambda k, t=t: erlang_tail(k + 1, mpmath.mpf(t))) for t in ts},
        }


@pytest.mark.parametrize("admission", [Admission.PARTIAL, Admission.WHOLE])
@pytest.mark.parametrize("load", [Fr(1, 2), Fr(3, 2)])
def test_finite_batch_queue_waits_against_its_chain(admission, load):
    """Batches cut by the finite room (partial: the first ``room`` admitted; whole: none) give the right waits."""
    pmf = {1: Fr(1, 2), 3: Fr(1, 2)}  # mean 2
    lam, r, ts = load / 2, 3, (0, "0.5", 2, 5)
    model = FiniteVacationQueue(lam, B.FinitePMF(pmf), T.Exponential(1), None, r, admission)
    res = simulate(model, 40_000, 20, seed=77, quiet=True, wait_tail=ts, wait_moments=2, sojourn_tail=ts)
    assert_samples_within(res, batch_queue_wait_reference(lam, pmf, 1, r, admission is Admission.PARTIAL, ts))
    sample, little = res["wait_moments"][0].value, res["mean_wait"].value
    assert abs(sample - little) <= 2e-3 * little  # Little's law on the same run, up to the window's ends


@pytest.mark.parametrize("model", [
    FiniteVacationQueue.from_load(Fr(3, 2), B.Geometric(3), T.Deterministic(Fr(1, 10)), T.Uniform(0, Fr(1, 2)), 8,
                                  Admission.WHOLE, SINGLE),
    VacationQueue.from_load(Fr(1, 2), B.Constant(2), T.Deterministic(1), T.Erlang(3, 4), vacation_policy=SINGLE),
], ids=["whole-single-r8", "infinite-single"])
def test_recording_draws_the_same_numbers(model):
    """The same seed gives the same measures with or without recorded waits; the sojourn is the wait
    plus a service (deterministic here) and the sample mean wait agrees with Little's law."""
    plain = simulate(model, 20_000, 3, seed=5, quiet=True)
    rec = simulate(model, 20_000, 3, seed=5, quiet=True, wait_tail=(0, 1), wait_quantile=(0.5,), wait_moments=1,
                   sojourn_moments=1)
    again = simulate(model, 20_000, 3, seed=5, quiet=True, wait_tail=(0, 1), wait_quantile=(0.5,), wait_moments=1,
                     sojourn_moments=1)
    assert rec.as_dict() == again.as_dict()
    assert plain.as_dict() == {k: v for k, v in rec.as_dict().items() if k in plain.measures}
    assert set(rec.as_dict()) - set(plain.as_dict()) == {"wait_tail", "wait_quantile", "wait_moments",
                                                         "sojourn_moments"}
    service = float(model.service.moment(1))
    assert rec["sojourn_moments"][0].value - rec["wait_moments"][0].value == pytest.approx(service, rel=1e-9)
    assert rec["wait_moments"][0].value == pytest.approx(rec["mean_wait"].value, rel=2e-3)
    doc = json.loads(json.dumps(rec.summary()))
    assert doc["measures"]["wait_tail"]["1"]["ci95"][0] <= doc["measures"]["wait_tail"]["1"]["estimate"]
    assert len(doc["measures"]["sojourn_moments"]) == 1


@pytest.mark.parametrize("options, match", [
    ({"wait_tail": (-1,)}, r"wait_tail = -1: each t must be a finite number >= 0"),
    ({"wait_tail": ("inf",)}, r"wait_tail = 'inf' is not a number"),
    ({"wait_tail": (float("nan"),)}, r"wait_tail = nan: must be a finite number"),
    ({"sojourn_tail": ("1e400",)}, r"sojourn_tail = 1e400: each t must be a finite number >= 0"),
    ({"sojourn_tail": ("abc",)}, r"sojourn_tail = 'abc' is not a number"),
    ({"wait_tail": object()}, r"wait_tail = object: must be a sequence of time ts"),
    ({"wait_tail": ([1],)}, r"wait_tail = list: each time t must be a number"),
    ({"wait_quantile": (0,)}, r"wait_quantile = 0: each q must lie in 0 < q < 1"),
    ({"wait_quantile": (1,)}, r"wait_quantile = 1: each q must lie in 0 < q < 1"),
    ({"sojourn_quantile": ("1.5",)}, r"sojourn_quantile = 1.5: each q must lie in 0 < q < 1"),
    ({"wait_quantile": (0.9, 0.5, 0.9)}, r"wait_quantile = 0.9: repeats the probability q"),
    ({"wait_moments": -1}, r"wait_moments = -1: must be an integer from 0 to 8"),
    ({"wait_moments": 9}, r"wait_moments = 9: must be an integer from 0 to 8"),
    ({"sojourn_moments": 2.5}, r"sojourn_moments = 2.5: must be an integer from 0 to 8"),
    ({"sojourn_moments": True}, r"sojourn_moments = True: must be an integer"),
])
def test_bad_sample_options_are_refused(options, match):
    m = FiniteVacationQueue(1, B.Constant(1), T.Exponential(2), None, 3)
    with pytest.raises(ParameterError, match=match):
        simulate(m, 10, 2, seed=1, **options)


def test_a_single_value_and_keys_as_given():
    m = FiniteVacationQueue(Fr(1, 2), B.Constant(1), T.Exponential(1), None, 3)
    res = simulate(m, 5_000, 2, seed=1, quiet=True, wait_tail="0.5", wait_quantile=(0.9, "0.9", "9/10"))
    assert list(res["wait_tail"]) == ["0.5"]
    assert list(res["wait_quantile"]) == [0.9, "0.9", "9/10"]  # the keys as given, each estimated
    assert res["wait_quantile"][0.9] == res["wait_quantile"]["0.9"] == res["wait_quantile"]["9/10"]


def test_samples_are_refused_by_a_simulator_that_does_not_record_them():
    spec = KernelSpec("toy", ("time",), lambda rng: iter(()), {})
    with pytest.raises(ParameterError, match="wait: the toy simulator records no such per-customer sample"):
        run_replications(spec, 10, 2, 1, 0.1, True, samples=(SampleRequest.parse("wait", tail=(1,)),))
