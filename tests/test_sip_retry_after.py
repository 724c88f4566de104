"""sip-retransmission --retry-after / --retries (issue 17, item 2: a 503 with Retry-After): the transaction-rate fixed
point (R) Lambda_0 = lambda_0 (1 + J + ... + J^m) against a direct solve written here, the simulator against the
engine, the model without --retry-after unchanged, bad input.

The reference of (1) shares no code with the engine: the contract's hysteresis CTMC on (n, mode) is written from the
rule and solved by mpmath's LU at 30 digits, and the fixed point Lambda = lambda_0 (1 + J(Lambda)) by mpmath's
bisection-safe findroot (anderson) at 30 digits.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

from test_sip_retransmission import _contract_chain

from qderive.derivations.cli import main
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws import Exponential
from qderive.symbolic.models.sip_retransmission import SipRetransmissionModel as Sip

NEW = ("request_reject_probability", "retry_rate")  # optional measures (CLI: --request-reject-probability, --retry-rate)
MU, L, H, TB = 10, 2, 4, mpmath.mpf(1) / 2  # E[B] = 0.1 s, thresholds (2, 4), Timer B = T1 = 0.5 s


def _chain(lam, mu, low, high):
    """(J, P(timeout at TB)) of the contract's 503 hysteresis fed at Poisson rate lambda, one copy per transaction.
    J = P(a copy is refused), by PASTA the probability of the states that refuse: normal mode with n = H (the arrival
    switches to overload) and every overload state; an admitted copy finding n waits for n + 1 exponential services
    (FIFO): P(timeout) = sum_{n < H} pi(n, 0) P(Erlang(n + 1, mu) > TB). The CTMC written from the rule: (n, 0)
    n = 0..H normal, (n, 1) n = L+1..H overload; (n,0) -> (n+1,0) at lambda (n < H), (H,0) -> (H,1) at lambda;
    departures at mu, (L+1,1) -> (L,0). Solved by LU (Q^T x = 0 with sum x = 1) at the current precision."""
    pi = _contract_chain(lam, mu, low, high)  # the CTMC of tests/test_sip_retransmission.py, written from the rule
    admitted = [pi[("n", n)] for n in range(high)]
    timeout = mpmath.fsum(w * mpmath.gammainc(n + 1, mu * TB, mpmath.inf, regularized=True)
                          for n, w in enumerate(admitted))
    return 1 - mpmath.fsum(admitted), timeout


def _reject(lam, mu, low, high):
    return _chain(lam, mu, low, high)[0]


@pytest.fixture(scope="module")
def retried():
    """One copy per transaction (Timer B = T1 = 0.5 s: no retransmission), control 503, lambda_0 = 12 (load 1.2:
    many rejections), Retry-After 1 s, one retry."""
    m = Sip(rate=12, service=Exponential(F(1, MU)), control="503", thresholds=(L, H), timeout=F(1, 2),
            retry_after=F(1), retries=1, scan_points=24)
    return m, m.evaluate(include=NEW)


def test_transaction_rate_fixed_point_against_the_contract_chain(retried):
    """(R) with m = 1 and one copy per transaction: the offered rate is the transaction rate Lambda, the root of
    Lambda = lambda_0 (1 + J(Lambda)) (J from the chain above), found by mpmath at 30 digits; at the root the chain
    gives P(timeout) (the Erlang sojourn of an admitted copy beyond Timer B), so goodput = Lambda (1 - J - P(timeout))
    and request_reject_probability = J^2, retry_rate = lambda_0 J. Tolerance 1e-9 relative: the float64 fixed point
    (Illinois to 1e-13 on the scan) and the engine's uniformization tails; the reference is exact to 30 digits."""
    m, r = retried
    with mpmath.workdps(30):
        lam0 = mpmath.mpf(12)
        Lam = mpmath.findroot(lambda x: lam0 * (1 + _reject(x, MU, L, H)) - x, (lam0, 2 * lam0), solver="anderson")
        J, timeout = _chain(Lam, MU, L, H)
    assert 0.1 < J < 0.9 and timeout > 1e-3  # the case exercises the retries and the timeouts
    assert abs(r.offered_rate - Lam) <= 1e-9 * Lam
    assert abs(r.reject_probability - J) <= 1e-9
    assert abs(r.timeout_probability - timeout) <= 1e-9
    assert abs(r.goodput - Lam * (1 - J - timeout)) <= 1e-9 * Lam
    assert abs(r.request_reject_probability - J**2) <= 1e-9
    assert abs(r.retry_rate - lam0 * J) <= 1e-9 * lam0
    # the rule without the retries' return (Lambda = lambda_0) would be far off
    assert Lam > 1.1 * lam0


def test_without_retry_after_unchanged():
    """No --retry-after: the model is the one of before (offered rate lambda_0 with one copy, no new keys); against
    the chain at lambda_0 directly (the old fixed point lambda = lambda_0, one copy)."""
    m = Sip(rate=12, service=Exponential(F(1, MU)), control="503", thresholds=(L, H), timeout=F(1, 2), scan_points=24)
    r = m.evaluate()
    with mpmath.workdps(30):
        J = _reject(mpmath.mpf(12), MU, L, H)
    assert r.offered_rate == 12
    assert abs(r.reject_probability - J) <= 1e-12  # float64 chain against the 30-digit LU
    assert r.request_reject_probability is None and r.retry_rate is None  # not asked for: not in the record
    assert "retry_rate" not in r.solutions[0] and "request_reject_probability" not in r.as_dict()
    asked = m.evaluate(include=NEW)  # m = 0: every request is one transaction
    assert asked.request_reject_probability == asked.reject_probability and asked.retry_rate == 0


def test_simulator_with_retry_after_against_the_engine(retried):
    """The simulator (a rejected transaction with retries left starts a new one T later, from the retries' own
    time-ordered stream) against (R) at one copy per transaction, where the only approximation is the Poisson
    retries. 8 x 400 s (about 0.1 s of CPU); each measure within its 99 % Student-t interval plus the measured gap
    of that approximation: at 10 x 4000 s (docs/guides/sip-retransmission.md) the simulated offered rate is 1.4 %,
    goodput 1.1 % and retry_rate 4.6 % below (R) (a retry 1 s after a rejection often meets the same overload
    period) and request_reject_probability 0.0135 above, so the margins are 6 % of the rates and 0.02 of the
    probabilities. The rule without the retries' return (offered rate 12) fails by 30 %."""
    from qderive.numeric.simulation.sip import estimates

    m, r = retried
    est = estimates(m, horizon=400.0, warmup=20.0, replications=8, seed=4242)

    def half(key):
        lo, hi = est[key].interval(0.99)
        return est[key].value, (hi - lo) / 2

    for key, value in (("offered_rate", r.offered_rate), ("goodput", r.goodput), ("retry_rate", r.retry_rate)):
        x, h = half(key)
        assert abs(x - value) <= h + 0.06 * value, (key, x, h, value)
    for key, value in (("reject_probability", r.reject_probability),
                       ("request_reject_probability", r.request_reject_probability)):
        x, h = half(key)
        assert abs(x - value) <= h + 0.02, (key, x, h, value)


def test_simulator_without_retry_after_draws_the_same_path():
    """The retry machinery is off without retry_after: the same seed gives the same accumulators as a model whose
    retry_after is absent from the setup (the path of before), and no retried transaction."""
    import numpy as np

    from qderive.numeric.simulation.sip import ACCUMULATORS, replication, setup_of

    m = Sip(rate=12, service=Exponential(F(1, MU)), control="503", thresholds=(L, H), timeout=F(1, 2))
    setup = setup_of(m)
    assert setup.retry is None
    row, _ = replication(np.random.default_rng(9), setup, 5.0, 40.0)
    acc = dict(zip(ACCUMULATORS, row))
    assert acc["retried"] == 0 and acc["requests"] == 0 and acc["rejected"] > 0


@pytest.mark.parametrize("kw, option", [
    (dict(control="ignore", thresholds=(2, 4), retry_after=F(1)), "retry_after"),
    (dict(retry_after=F(1)), "retry_after"),
    (dict(control="503", thresholds=(2, 4), retry_after=F(1), retries=0), "retries"),
    (dict(control="503", thresholds=(2, 4), retry_after=F(1), retries=101), "retries"),
    (dict(control="503", thresholds=(2, 4), retry_after=F(-1)), "retry_after"),
    (dict(control="503", thresholds=(2, 4), retries=3), "retries"),
])
def test_bad_input_names_the_option(kw, option):
    with pytest.raises(ParameterError) as e:
        Sip(rate=12, service=Exponential(F(1, MU)), timeout=F(1, 2), **kw)
    assert option.replace("_", "-") in str(e.value) or option in str(e.value)


def test_cli_retry_after_option(capsys):
    """The CLI option is generated from the field (--retry-after, --retries) and the keys are in the JSON."""
    import json

    code = main(["eval", "sip-retransmission", "--rate", "12", "--service", "exp:mean=0.1", "--control", "503",
                 "--thresholds", "2,4", "--timeout", "0.5", "--retry-after", "1", "--retries", "2",
                 "--scan-points", "16", "--request-reject-probability", "--json"])
    out = json.loads(capsys.readouterr().out)["measures"]
    assert code == 0
    J = out["reject_probability"]
    assert abs(out["request_reject_probability"] - J**3) <= 1e-12  # (R) with m = 2, identical arithmetic up to rounding
    code = main(["eval", "sip-retransmission", "--rate", "12", "--service", "exp:mean=0.1", "--retry-after", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "--retry-after" in err
    code = main(["size", "sip-retransmission", "--target", "collapse-onset", "--service", "exp:mean=0.1",
                 "--control", "503", "--thresholds", "3,6", "--retry-after", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "--retry-after" in err and len(err.strip().splitlines()) == 1  # the onset has no (R) factor


def test_two_flows_with_one_copy_are_the_one_flow_fixed_point(retried):
    """Two flows of 8/s and 4/s with one copy per transaction meet one server with one J: (R) summed over the flows
    is the one-flow fixed point of 12/s (the test above, against the chain), split 2 : 1 in each flow's goodput and
    retries. Tolerance 1e-9 relative: two float64 scans of the same equation."""
    m, r = retried
    two = Sip(rate=8, rate_non_invite=4, service=Exponential(F(1, MU)), control="503", thresholds=(L, H),
              timeout=F(1, 2), retry_after=F(1), retries=1, scan_points=24).evaluate(include=NEW)
    for key in ("offered_rate", "goodput", "reject_probability", "request_reject_probability", "retry_rate"):
        assert abs(getattr(two, key) - getattr(r, key)) <= 1e-9 * getattr(r, key), key
    flows = two.flows
    assert abs(flows["invite"]["goodput"] - 2 * flows["non-invite"]["goodput"]) <= 1e-9 * r.goodput
