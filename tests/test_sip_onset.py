"""The collapse onset of sip-retransmission (issue 17): the ends of the bistable range against independent computations.

M/M/1 without control has the fixed-point map in closed form: an admitted copy's sojourn is exponential,
P(R > t) = exp(-(mu - lambda) t), so g(lambda) = lambda_0 (1 + sum_{k>=1} exp(-(mu - lambda) tau_k)) and the
saddle-node solves g(lambda) = lambda, g'(lambda) = 1 (mpmath.findroot on the two equations at 30 digits,
sharing no code with the engine). The lower end is the saturated branch lambda = n lambda_0, which exists from
lambda_0 = mu / n on. Under ``ignore`` the reference map is the contract's chain solved by LU and the Erlang
tails by the incomplete gamma function (tests/test_sip_retransmission.py, written from the rule).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import mpmath
import pytest
from qderive.derivations.cli import main
from qderive.numeric.engines.sip.onset import (
    collapse_onset,
    metastable_lifetime,
    run_length_onset,
)
from qderive.symbolic.laws import Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip
from test_sip_retransmission import _ignore_mean_copies

_TAUS = [F(2**k - 1, 2) for k in range(7)]  # INVITE with T1 = 1/2: 0, 0.5, 1.5, ..., 31.5 (< Timer B = 32)


def _mm1_saddle_node(mu, guess):
    """(lambda_0*, lambda*) of g(lambda) = lambda, g'(lambda) = 1 for g = lambda_0 (1 + sum_k exp(-(mu - lambda) tau_k))."""
    with mpmath.workdps(30):
        mu = mpmath.mpf(mu)
        taus = [mpmath.mpf(t.numerator) / t.denominator for t in _TAUS[1:]]

        def equations(a, lam):
            return [a * (1 + mpmath.fsum(mpmath.exp(-(mu - lam) * t) for t in taus)) - lam,
                    a * mpmath.fsum(t * mpmath.exp(-(mu - lam) * t) for t in taus) - 1]

        a, lam = mpmath.findroot(equations, (guess[0] * mu, guess[1] * mu))
        return +a, +lam


@pytest.mark.parametrize("mean, guess", [(F(1, 10), (0.57, 0.75)), (F(1, 1000), (0.985, 0.987))])
def test_mm1_onset_against_the_closed_form_saddle_node(mean, guess):
    """float64: the upper end to 1e-8 relative (measured 5e-11 at E B = 0.1 s, 5e-9 at 1 ms: the Euler-inverted tails'
    absolute error, about 1e-9, enters h = lambda / m directly); the location lambda* only to ~1e-5 (h is flat there:
    its error enters the value squared); the lower end mu / n exactly (the saturation kink)."""
    mu = mean.denominator // mean.numerator
    a, lam = _mm1_saddle_node(mu, guess)
    r = collapse_onset(Sip(rate=1, service=Exponential(mean), scan_points=40))
    assert abs(r["upper"] - a) / a < 1e-8
    assert abs(r["load_upper"] - a / mu) / (a / mu) < 1e-8
    assert abs(r["offered_rate_upper"] - lam) / lam < 1e-5
    assert abs(r["lower"] - float(mu / 7)) <= 1e-15 * float(mu) and r["offered_rate_lower"] == float(mu)
    assert abs(r["mean_copies_lower"] - 7) < 1e-12 and [f["kind"] for f in r["folds"]] == ["upper", "lower"]


@pytest.mark.slow  # 22-digit Newton (2 s); the loop keeps the float64 onset against the same saddle-node
def test_mm1_onset_to_requested_digits():
    """--digits 12: Newton on h' = 0 at 22 digits; the ends agree with the 30-digit saddle-node to 1e-13 (measured
    2e-25: the working precision is D + 10) and the lower end is mu / 7 to the same."""
    a, lam = _mm1_saddle_node(10, (0.57, 0.75))
    r = collapse_onset(Sip(rate=1, service=Exponential(F(1, 10)), scan_points=40), digits=12)
    assert abs(r["upper"] - a) / a < 1e-13 and abs(r["offered_rate_upper"] - lam) / lam < 1e-7
    assert abs(r["lower"] - mpmath.mpf(10) / 7) < 1e-13


def test_ignore_onset_is_the_extremum_of_the_independent_map():
    """ignore (10, 20), E B = 0.1 s: h_ref(lambda) = lambda / E[copies] from the contract's chain (LU, 20 digits) at
    lambda*(1 - d), lambda*, lambda*(1 + d), d = 1e-3; the vertex of the parabola through them is the extremum of h_ref,
    equal to the reported end to 1e-8 relative (the parabola's own error is O(d^2) of the location's, far below), and
    its curvature has the sign of a maximum (upper end) and of a minimum (lower end)."""
    r = collapse_onset(Sip(rate=1, service=Exponential(F(1, 10)), control="ignore", thresholds=(10, 20),
                           scan_points=40))
    with mpmath.workdps(20):
        for end, sign in (("upper", -1), ("lower", 1)):
            x, d = mpmath.mpf(r[f"offered_rate_{end}"]), mpmath.mpf(10) ** -3
            hm, h0, hp = (y / _ignore_mean_copies(y, mpmath.mpf(10), 10, 20, _TAUS)
                          for y in (x * (1 - d), x, x * (1 + d)))
            a, b = (hp + hm - 2 * h0) / 2, (hp - hm) / 2  # h_ref(x (1 + u d)) = h0 + b u + a u^2
            assert sign * a > 0
            vertex = h0 - b * b / (4 * a)
            assert abs(r[end] - vertex) / vertex < 1e-8, (end, r[end], vertex)


def _hitting_time(lam0, mu, taus, N):
    """E T_{0 -> N} of the birth-death chain b_n = lam0 (1 + sum_k P(Erlang(n + 1, mu) > tau_k)), d_n = mu, by LU on
    -Q h = 1 over the levels 0..N-1 (mpmath, the current precision; Erlang tails by the incomplete gamma function)."""
    b = [lam0 * (1 + mpmath.fsum(mpmath.gammainc(n + 1, mu * t, mpmath.inf, regularized=True) for t in taus))
         for n in range(N)]
    A = mpmath.zeros(N)
    for n in range(N):
        A[n, n] = b[n] + (mu if n else 0)
        if n + 1 < N:
            A[n, n + 1] = -b[n]
        if n:
            A[n, n - 1] = -mu
    return mpmath.lu_solve(A, mpmath.ones(N, 1))[0]


def test_lifetime_chain_against_a_direct_hitting_time_solve():
    """The quasi-static chain (Q) at E B = 0.1 s, timeout 4 s (N = 40 levels; copies at 0, 0.5, 1.5, 3.5 s), load 0.5,
    and with --control ignore 5,12 (N = H = 12: the first overload): the mean hitting time of N from 0 by LU at 30
    digits; the kernel's positive log-scale sum agrees to 1e-11 relative (float64: N eps growth). The onset at run
    length T has lifetime ln 2 = T there (to 1e-6: the root's tolerance, 1e-7 in the rate, times the slope)."""
    model = Sip(rate=5, service=Exponential(F(1, 10)), timeout=4)
    with mpmath.workdps(30):
        taus = [mpmath.mpf(1) / 2, mpmath.mpf(3) / 2, mpmath.mpf(7) / 2]
        h = _hitting_time(mpmath.mpf(5), mpmath.mpf(10), taus, 40)
        assert abs(metastable_lifetime(model) - h) / h < 1e-11
        h = _hitting_time(mpmath.mpf(5), mpmath.mpf(10), taus, 12)
        controlled = Sip(rate=5, service=Exponential(F(1, 10)), timeout=4, control="ignore", thresholds=(5, 12))
        assert abs(metastable_lifetime(controlled) - h) / h < 1e-11
    rate = run_length_onset(model, 100)
    assert abs(metastable_lifetime(model, rate) * mpmath.log(2) / 100 - 1) < 1e-6


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_size_collapse_onset_cli(capsys):
    code, out, _ = _cli(["size", "sip-retransmission", "--service", "exp:mean=0.1", "--target", "collapse-onset",
                         "--scan-points", "40", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["upper", "lower", "load_upper", "load_lower", "offered_rate_upper", "offered_rate_lower",
                         "mean_copies_upper", "mean_copies_lower", "folds", "note", "notes"]
    assert 0.5724 < doc["load_upper"] < 0.5725 and abs(doc["load_lower"] - 1 / 7) < 1e-12
    code, out, _ = _cli(["size", "sip-retransmission", "--service", "exp:mean=0.1", "--scan-points", "16",
                         "--run-length", "1000", "--json"], capsys)
    onset = json.loads(out)["run_length_onset"]
    assert code == 0 and list(onset) == ["run_length", "rate", "load", "lifetime_at_upper", "note"]
    assert 1 / 7 < onset["load"] < 0.5725 and onset["rate"] == 10 * onset["load"]
    # no saddle-node (ignore with H E B = T1): the ends are null, the note says why
    code, out, _ = _cli(["size", "sip-retransmission", "--service", "exp:mean=0.1", "--control", "ignore",
                         "--thresholds", "4,5", "--scan-points", "16", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["upper"] is None and doc["folds"] == [] and "no saddle-node" in doc["note"]


@pytest.mark.parametrize("argv, option", [(["--max-load", "0"], "--max-load"), (["--max-load", "1000"], "--max-load"),
                                          (["--duplicate-cost", "0.5", "--run-length", "100"], "--duplicate-cost"),
                                          (["--control", "ignore", "--thresholds", "4,5", "--duplicate-cost", "0.5",
                                            "--run-length", "100"], "--duplicate-cost"),
                                          (["--run-length", "0"], "--run-length"),
                                          (["--service", "det:mean=0.1"], "--service"),  # the last --service counts
                                          (["--capacity", "50", "--run-length", "100"], "--capacity")])
def test_size_bad_input_names_the_option(argv, option, capsys):
    code, _, err = _cli(["size", "sip-retransmission", "--service", "exp:mean=0.1", "--scan-points", "16"] + argv,
                        capsys)
    assert code == 2 and option in err and len(err.strip().splitlines()) == 1, err


def test_collapse_times_overload_criterion_against_the_mm1_first_overload():
    """criterion="overload" with thresholds (0, 1) and one copy per transaction (timeout <= T1): the first arrival
    that finds the server busy. From idle, E T_0 = 1/lambda + T_1 and E T_1 = 1/(lambda + mu) + mu/(lambda + mu) E T_0,
    so E T_0 = (2 lambda + mu) / lambda^2 = 0.3 s at lambda = mu = 10. 100 runs: the mean within 4 standard errors
    (the sample's own, about 0.03 s; thresholds (0, 2) give 0.58 s). 503 and ignore share the path up to the first refusal: the same epochs."""
    import types

    import numpy as np
    from qderive.numeric.simulation.sip import collapse_times

    def model(control):
        return types.SimpleNamespace(rate=10, service=Exponential(F(1, 10)), method="invite", t1=1, t2=4, timeout=1,
                                     capacity=None, control=control, thresholds=(0, 1), duplicate_cost=1)

    out = collapse_times(model("ignore"), limit=100, replications=100, seed=3, criterion="overload")
    times = np.array(out["times"])
    assert np.all(np.isfinite(times)) and abs(times.mean() - 0.3) < 4 * times.std(ddof=1) / 100**0.5
    first = collapse_times(model("503"), limit=100, replications=10, seed=3, criterion="overload")["times"]
    assert first == collapse_times(model("ignore"), limit=100, replications=10, seed=3, criterion="overload")["times"]
    with pytest.raises(Exception, match="criterion"):
        collapse_times(Sip(rate=5, service=Exponential(F(1, 10))), limit=10, replications=2, seed=1,
                       criterion="overload")
