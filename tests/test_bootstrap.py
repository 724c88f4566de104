"""``qderive eval ... --bootstrap B`` and ``qd.bootstrap``: percentile intervals over resamples of empirical laws.

The reference values share no code with the engines: the mean wait of M[X]/G/1 with multiple vacations written
here from the Pollaczek-Khinchine and Fuhrmann-Cooper decomposition (``docs/theory/chapter2.md``; Takagi 1991,
vol. 1, section 2.4), in exact rationals from the sample's moments,

    E W = lambda g1 b2 / (2 (1 - rho)) + g2 b1 / (2 g1 (1 - rho)) + v2 / (2 v1),    rho = lambda g1 b1,

with g1 = E X, g2 = E X(X - 1) of the batch, b_k = E B^k of the service, v_k = E V^k of the vacation.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
import pytest

import qderive as qd
from conftest import cli


def _mean_wait(lam, batch_mean, service_moments, vacation_moments=None):
    """E W of M[X]/G/1 (geometric batches of mean g1 on {1, 2, ...}: g2 = 2 g1 (g1 - 1)), exact."""
    g1 = F(batch_mean)
    g2 = 2 * g1 * (g1 - 1)
    b1, b2 = service_moments
    rho = lam * g1 * b1
    w = lam * g1 * b2 / (2 * (1 - rho)) + g2 * b1 / (2 * g1 * (1 - rho))
    if vacation_moments is not None:
        v1, v2 = vacation_moments
        w += v2 / (2 * v1)
    return w


SAMPLE = tuple(F(k, 1000) for k in (3, 7, 12, 12, 25, 9, 4, 31, 6, 11, 2, 17, 8, 14, 5, 9, 10, 21, 3, 13))


def _sample_moments(values):
    n = len(values)
    return sum(values) / n, sum(v * v for v in values) / n


def _model(values=SAMPLE):
    return qd.VacationQueue(F(10), qd.Geometric(3), qd.Empirical(values), qd.Exponential(F(1, 20)))


def test_interval_contains_the_full_sample_value():
    """The full-sample mean wait equals the hand formula on the sample's moments (1e-13 relative: one float64
    rounding of a few exact terms) and lies inside its 95 % interval (B = 40; the percentile interval of a smooth
    statistic holds its plug-in value unless the resampling is broken)."""
    b = qd.bootstrap(_model(), 40, seed=7, quiet=True, wait_moments=2)
    exact = float(_mean_wait(F(10), 3, _sample_moments(SAMPLE), (F(1, 20), 2 * F(1, 20) ** 2)))
    assert b.record.mean_wait == pytest.approx(exact, rel=1e-13)
    lo, hi = b.intervals["mean_wait"]
    assert lo < exact < hi and hi - lo > 0.05 * exact  # 20 values: an interval of real width
    assert b.intervals["wait_moments"][0] == [lo, hi]  # the same measure under its two keys
    # E W^2 (the response law's moments, whose engine caches by structural keys) moves with each resample too
    lo2, hi2 = b.intervals["wait_moments"][1]
    assert lo2 < b.record.response["wait_moments"][1] < hi2 and hi2 - lo2 > 0.05 * hi2
    assert b.resamples == 40 and b.seed == 7 and b.confidence == 0.95 and b.laws == ("service",)
    # the same seed gives the same intervals; another seed other ones
    assert qd.bootstrap(_model(), 40, seed=7, quiet=True).intervals["mean_wait"] == [lo, hi]
    assert qd.bootstrap(_model(), 40, seed=8, quiet=True).intervals["mean_wait"] != [lo, hi]


def test_resamples_are_draws_with_replacement_of_the_sample():
    """Each replicate's mean service is the mean of N draws with replacement: the interval of the idle
    probability 1 - rho (rate held) matches the normal approximation of the resampled mean, 1 - lambda g1 (b1 +-
    1.96 s / sqrt(N)), within 30 % of its half-width (B = 200 replicates of a mean of 20 values)."""
    b = qd.bootstrap(_model(), 200, seed=3, quiet=True)
    b1 = float(_sample_moments(SAMPLE)[0])
    s = float(np.std([float(v) for v in SAMPLE]))  # the plug-in (1/N) standard deviation the bootstrap resamples
    half = 30 * 1.96 * s / np.sqrt(len(SAMPLE))
    lo, hi = b.intervals["idle_probability"]
    centre = 1 - 30 * b1
    assert abs((hi - lo) / 2 - half) < 0.3 * half
    assert abs((hi + lo) / 2 - centre) < 0.3 * half


def test_constant_sample_gives_a_zero_width_interval():
    """Every resample of a constant sample is the sample: each interval is [v, v] with v the full-sample value,
    which equals the constant service's (det:mean=0.01) mean wait computed by the engine's other law (1e-13)."""
    values = (F(1, 100),) * 30
    b = qd.bootstrap(_model(values), 5, seed=1, quiet=True, wait_moments=2)
    full = b.record.as_dict()
    for key in ("mean_wait", "mean_queue_length", "q0"):
        assert b.intervals[key] == [full[key], full[key]]
    assert b.intervals["wait_moments"] == [[v, v] for v in full["wait_moments"]]
    det = qd.VacationQueue(F(10), qd.Geometric(3), qd.Deterministic(F(1, 100)), qd.Exponential(F(1, 20)))
    assert full["mean_wait"] == pytest.approx(det.evaluate().mean_wait, rel=1e-13)
    assert full["mean_wait"] == pytest.approx(float(_mean_wait(F(10), 3, (F(1, 100), F(1, 10**4)),
                                                               (F(1, 20), 2 * F(1, 20) ** 2))), rel=1e-13)


@pytest.mark.slow
def test_coverage_of_the_true_law_for_exponential_samples():
    """500 exponential service times (mean 0.01; M[X]/M/1, geometric batches of mean 2, rate 20: rho = 0.4), 20
    samples (seeds 100..119), B = 20 each: the 95 % interval covers the exponential law's exact mean wait
    (b2 = 2 m^2 in the hand formula) in at least 14 of the 20 samples. Tolerance: a percentile interval from 20
    replicates covers about 85-90 % here (19 of 20 measured); below 14 of 20 has probability about 1 % for a
    working bootstrap, while a broken one (no resampling: zero width) covers none."""
    m, lam = F(1, 100), F(20)
    true = float(_mean_wait(lam, 2, (m, 2 * m * m)))
    covered = 0
    for seed in range(20):
        x = np.round(np.random.default_rng(100 + seed).exponential(float(m), 500), 6)
        q = qd.VacationQueue(lam, qd.Geometric(2), qd.Empirical(tuple(x)), None)
        lo, hi = qd.bootstrap(q, 20, seed=seed, quiet=True).intervals["mean_wait"]
        covered += lo <= true <= hi
    assert covered >= 14, covered


def test_load_held_when_given():
    """``hold={"load": ...}``: each resample's rate follows its mean service, so the idle probability 1 - rho
    stays exactly 1 - load; with the rate held (default) it moves."""
    q = qd.VacationQueue.from_load(F(1, 2), qd.Geometric(3), qd.Empirical(SAMPLE), qd.Exponential(F(1, 20)))
    held = qd.bootstrap(q, 10, seed=1, quiet=True, hold={"load": F(1, 2)})
    assert held.intervals["idle_probability"] == [0.5, 0.5]
    lo, hi = qd.bootstrap(q, 10, seed=1, quiet=True).intervals["idle_probability"]
    assert lo < 0.5 < hi


def test_empirical_vacation_tails():
    """An empirical vacation with a constant service has exact lattice tails today: the tail gets its interval
    (the key as given), and the interval holds the full-sample tail."""
    q = qd.VacationQueue(F(10), qd.Geometric(3), qd.Deterministic(F(1, 100)),
                         qd.Empirical((F(1, 20), F(1, 10), F(3, 40), F(1, 20))))
    b = qd.bootstrap(q, 6, seed=2, quiet=True, wait_tail=["0.3"])
    assert b.laws == ("vacation",)
    lo, hi = b.intervals["wait_tail"]["0.3"]
    assert 0 < lo <= b.record.response["wait_tail"]["0.3"] <= hi < 1


# ------------------------------------------------------------------------------------------------ command line

BASE = ["eval", "vacation-infinite", "--batch", "geometric:mean=3", "--vacation", "exp:mean=0.05", "--rate", "10"]
SERVICE = ["--service", "empirical:values=" + "/".join(str(float(v)) for v in SAMPLE)]


def test_json_keys_kept_and_added():
    code, plain, err = cli([*BASE, *SERVICE, "--wait-moments", "2", "--json"])
    assert code == 0, err
    code, out, err = cli([*BASE, *SERVICE, "--wait-moments", "2", "--json", "--bootstrap", "5", "--seed", "4",
                          "--confidence", "0.9"])
    assert code == 0, err
    plain, doc = json.loads(plain), json.loads(out)
    for key, value in plain.items():  # every existing key, unchanged (notes: the bootstrap's appended)
        assert doc[key] == value if key != "notes" else doc[key][:len(value)] == value
    assert doc["bootstrap_resamples"] == 5 and doc["bootstrap_seed"] == 4 and doc["bootstrap_confidence"] == 0.9
    assert doc["bootstrap_laws"] == ["service"]
    assert set(doc["bootstrap"]) == set(plain["measures"])
    lo, hi = doc["bootstrap"]["mean_wait"]
    assert lo <= hi and len(doc["bootstrap"]["wait_moments"]) == 2
    assert any("5 resamples" in n and "--service (20 values)" in n for n in doc["notes"])
    code, text, err = cli([*BASE, *SERVICE, "--bootstrap", "5", "--seed", "4", "--confidence", "0.9"])
    assert code == 0, err
    assert f"0.9 bootstrap interval [{lo:.6g}, {hi:.6g}]" in text


@pytest.mark.parametrize("extra, message", [
    (["--bootstrap", "1"], "--bootstrap = 1: must be an integer >= 2"),
    (["--bootstrap", "0"], "--bootstrap = 0: must be an integer >= 2"),
    (["--bootstrap", "4", "--limit", "bootstrap-resamples=3"], "bootstrap-resamples = 4 exceeds the limit 3"),
    (["--bootstrap", "20000"], "bootstrap-resamples = 20000 exceeds the limit 10000"),
    (["--bootstrap", "5", "--confidence", "1"], "--confidence = 1: must lie strictly between 0 and 1"),
    (["--bootstrap", "5", "--confidence", "abc"], "--confidence = abc: must lie strictly between 0 and 1"),
    (["--bootstrap", "5", "--seed", "-2"], "--seed = -2: must be an integer >= 0"),
    (["--seed", "3"], "--seed = 3: is an option of --bootstrap B"),
    (["--confidence", "0.9"], "--confidence = 0.9: is an option of --bootstrap B"),
])
def test_refusals_name_the_option(extra, message):
    code, out, err = cli([*BASE, *SERVICE, *extra])
    assert code == 2 and message in err and not out, err


def test_raised_limit_runs():
    code, out, err = cli([*BASE, *SERVICE, "--bootstrap", "4", "--limit", "bootstrap-resamples=4", "--json"])
    assert code == 0, err
    assert json.loads(out)["bootstrap_resamples"] == 4


def test_no_empirical_law_is_refused():
    code, out, err = cli([*BASE, "--service", "exp:mean=0.01", "--bootstrap", "5"])
    assert code == 2 and err.startswith("qderive: error: --bootstrap: no empirical law among --service exp:mean=0.01, "
                                        "--vacation exp:mean=0.05"), err


def test_an_unstable_resample_is_refused_with_the_reason():
    """Rate held at 25 with a sample mean of 0.0111 (rho = 0.83): some resample of 20 values passes rho = 1."""
    code, out, err = cli([*BASE[:-1], "25", *SERVICE, "--bootstrap", "200", "--seed", "1"])
    assert code == 2 and "--bootstrap: resample" in err and ">= 1" in err and "--rate" not in err.split(";")[0], err


@pytest.mark.parametrize("room", [["vacation-infinite"], ["vacation-finite", "--capacity", "20"]])
def test_a_measure_refused_or_answered_as_without_bootstrap(room):
    """Tails of an empirical service: whatever ``eval`` does without ``--bootstrap`` (today a refusal in both
    rooms; once computed, an answer), ``--bootstrap`` does the same: the same refusal, or the same answer with an
    interval for each tail point."""
    args = ["eval", *room, "--batch", "geometric:mean=3", "--vacation", "exp:mean=0.05", "--rate", "10",
            "--service", "empirical:values=0.003/0.007/0.012/0.025", "--wait-tail", "0.2", "--json"]
    code, plain, err_plain = cli(args)
    code_b, out, err = cli([*args, "--bootstrap", "3", "--seed", "1"])
    assert code_b == code
    if code != 0:
        assert err == err_plain and "--wait-tail" in err
    else:
        doc, plain = json.loads(out), json.loads(plain)
        assert doc["measures"] == plain["measures"]
        lo, hi = doc["bootstrap"]["wait_tail"]["0.2"]
        assert 0 <= lo <= hi <= 1


def test_models_without_a_time_law_have_no_option():
    code, out, err = cli(["eval", "erlang-b", "--help"])
    assert code == 0 and "--bootstrap" not in out
    code, out, err = cli(["eval", "vacation-finite", "--help"])
    assert code == 0 and "--bootstrap B" in out


def test_every_empirical_law_is_resampled():
    """Service and vacation both measured: both are resampled; the mean wait's interval holds the full-sample
    value, which is the hand formula on both samples' moments (1e-13)."""
    vac = (F(1, 20), F(1, 10), F(3, 40), F(1, 20), F(1, 8), F(1, 25))
    q = qd.VacationQueue(F(10), qd.Geometric(3), qd.Empirical(SAMPLE), qd.Empirical(vac))
    b = qd.bootstrap(q, 30, seed=5, quiet=True)
    assert b.laws == ("service", "vacation") and b.sizes == (20, 6)
    exact = float(_mean_wait(F(10), 3, _sample_moments(SAMPLE), _sample_moments(vac)))
    assert b.record.mean_wait == pytest.approx(exact, rel=1e-13)
    lo, hi = b.intervals["mean_wait"]
    assert lo < exact < hi
