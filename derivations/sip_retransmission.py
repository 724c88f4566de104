"""The retransmission fixed point of ``sip-retransmission`` (issue 17; seed 001, section 2), step by step.

``qderive derive sip-retransmission`` states the fixed point (F) lambda = lambda_0 E[copies](lambda), the
copies of one transaction under silent refusal (none, ignore: (C), (T)) and under 503 ((C'), (T'), (J)),
the goodput (G) and the duplicate ratio (D) -- the formulas of
:mod:`qderive.numeric.engines.sip`, whose package docstring states THE approximation (the
copies' fates independent, each with the stationary law of the server fed by Poisson copies at rate lambda).

Every step is evaluated *as displayed* by ``qderive verify sip-retransmission`` at the package's fixed point
(``SipRetransmissionModel.evaluate(digits)``) with p = P(a copy is refused) and F(t) = P(R_copy > t) of an
independent computation: the contract's hysteresis chain built from its rule by the CTMC oracle
(:mod:`qderive.numeric.oracles.ctmc`, GTH at the working precision) and the Erlang tails of an admitted
copy by mpmath's incomplete gamma function. A check compares the three fixed points of a bistable M/M/1
case with the roots of its closed-form residual (F(t) = exp(-(mu - lambda) t)).

``python -m qderive.derivations.sip_retransmission`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import functools
from fractions import Fraction as Fr

import mpmath
import sympy as sp

from ..symbolic.capabilities import Rule, declare
from .framework import Check, Derivation, Step, agreement_digits, relation_check

__all__ = ["derivation", "oracle_point"]

SOURCE = ("issue 17 and docs/guides/sip-retransmission.md (RFC 3261 section 17.1 timers; seed 001 section 2); "
          "numeric/engines/sip/fixed_point.py")

lam, lam0, C, p, T_B = sp.symbols("lambda lambda_0 C p T_B", positive=True)
lam1, lam2, C1, C2 = sp.symbols("lambda_1 lambda_2 C_1 C_2", positive=True)
P_T, P_J, gam, d = sp.symbols("P_T P_J gamma d", nonnegative=True)
n, k, j = sp.symbols("n k j", integer=True, nonnegative=True)
tau = sp.IndexedBase("tau")
Fs = sp.Function("F")

REL_F = sp.Eq(lam, lam0 * C)
REL_C = sp.Eq(C, 1 + sp.Sum(p**k + sp.Sum(p**j * (1 - p) * Fs(tau[k] - tau[j]), (j, 0, k - 1)), (k, 1, n - 1)))
REL_T = sp.Eq(P_T, p**n + sp.Sum(p**j * (1 - p) * Fs(T_B - tau[j]), (j, 0, n - 1)))
REL_C5 = sp.Eq(C, 1 + (1 - p) * sp.Sum(Fs(tau[k]), (k, 1, n - 1)))
REL_T5 = sp.Eq(P_T, (1 - p) * Fs(T_B))
REL_J = sp.Eq(P_J, p)
REL_G = sp.Eq(gam, lam0 * (1 - P_T - P_J))
REL_D = sp.Eq(d, 1 - 1 / C)
REL_F2 = sp.Eq(lam, lam1 * C1 + lam2 * C2)

#: the check point: E[B] = 0.1 s, lambda_0 = 9/s, thresholds (3, 6), Timer B = 8 s (copies at 0, 0.5, 1.5, 3.5, 7.5)
_RATE, _MEAN, _L, _H, _TIMEOUT = Fr(9), Fr(1, 10), 3, 6, Fr(8)
#: the two-flow check point (F2): the same with lambda_2 = 2/s non-INVITE and T2 = 1 s (copies at 0, 0.5, 1.5, ..., 7.5)
_RATE2, _T2 = Fr(2), Fr(1)


def _model(control, two_flows=False):
    from ..symbolic.laws import Exponential
    from ..symbolic.models.sip_retransmission import SipRetransmissionModel

    more = {"rate_non_invite": _RATE2, "t2": _T2} if two_flows else {}
    return SipRetransmissionModel(rate=_RATE, service=Exponential(_MEAN), control=control, thresholds=(_L, _H),
                                  timeout=_TIMEOUT, scan_points=24, **more)


def _mp(x: Fr):
    return mpmath.mpf(x.numerator) / x.denominator


@functools.lru_cache(maxsize=8)
def oracle_point(control: str, digits: int, two_flows: bool = False):
    """(record, p, F, taus) at the package's first fixed point: the chain of the contract's rule built by the CTMC
    oracle at rate lambda* (exact), p = 1 - sum_{n<H} pi(n, normal) (PASTA), F(t) = sum_n w_n Q(n + 1, mu t);
    ``two_flows``: at the two-flow check point (the second flow's instants from its model)."""
    from ..numeric.backend import mp_context
    from ..numeric.oracles.ctmc import build

    model = _model(control, two_flows)
    rec = model.evaluate(digits)
    man, ex = mpmath.mpf(rec.offered_rate).man_exp
    lam_x = Fr(int(man)) * Fr(2) ** int(ex)
    mu = 1 / _MEAN

    def moves(state):
        count, mode = state
        if mode == "normal":  # an arrival finding N >= H switches to overload (and is refused)
            yield ((count + 1, "normal") if count < _H else (count, "overload")), lam_x
        if count > 0:  # a departure leaving L returns to normal
            yield ((count - 1, "normal") if mode == "normal" or count - 1 == _L else (count - 1, "overload")), mu

    chain = build((0, "normal"), moves)
    ctx = mp_context(digits + 20)
    with ctx:
        pi = chain.stationary(ctx)
        admitted = [pi[chain.index[(m, "normal")]] for m in range(_H)]
        a = mpmath.fsum(admitted)

        def F(t):
            return mpmath.fsum(w / a * mpmath.gammainc(m + 1, _mp(mu) * t, mpmath.inf, regularized=True)
                               for m, w in enumerate(admitted))

        taus = [_mp(t) for t in model.copy_times()]
        return rec, 1 - a, F, (taus, [_mp(t) for t in model.flow_copy_times()]) if two_flows else taus


def _silent_copies(pv, F, taus):
    """C of (C) (silent refusal) from p and F, summed here: 1 + sum_k [p^k + sum_{j<k} p^j (1 - p) F(tau_k - tau_j)]."""
    return 1 + mpmath.fsum(pv**k + mpmath.fsum(pv**j * (1 - pv) * F(taus[k] - taus[j]) for j in range(k))
                           for k in range(1, len(taus)))


def _bind_two_flows(digits):
    """(F2) at the two-flow fixed point: C_1, C_2 from the oracle's p and F over each flow's own instants."""
    rec, pv, F, (taus1, taus2) = oracle_point("ignore", digits, True)
    return {lam: rec.offered_rate, lam1: _mp(_RATE), lam2: _mp(_RATE2), C1: _silent_copies(pv, F, taus1),
            C2: _silent_copies(pv, F, taus2)}, {}


def _bind(control, which):
    def bindings(digits):
        rec, pv, F, taus = oracle_point(control, digits)
        env = {lam: rec.offered_rate, lam0: _mp(_RATE), C: rec.mean_copies, p: pv, Fs: F, tau: taus, n: len(taus),
               T_B: _mp(_TIMEOUT), P_T: rec.timeout_probability, P_J: rec.reject_probability, gam: rec.goodput,
               d: rec.duplicate_ratio}
        return env, {}
    return bindings


def _check_bistable(digits):
    """M/M/1, lambda_0 = 90, mu = 100, INVITE timers: the package's three fixed points vs the roots of
    r(lambda) = lambda_0 (1 + sum_k exp(-(mu - lambda) tau_k)) - lambda (lambda < mu; lambda_0 n beyond), by
    bisection at digits + 10 digits from a 4000-point scan."""
    from ..symbolic.laws import Exponential
    from ..symbolic.models.sip_retransmission import SipRetransmissionModel

    model = SipRetransmissionModel(rate=90, service=Exponential(Fr(1, 100)))
    got = [s["offered_rate"] for s in model.evaluate().solutions]
    taus = [_mp(t) for t in model.copy_times()]
    with mpmath.workdps(digits + 10):
        def r(x):
            if x >= 100:
                return 90 * len(taus) - x
            return 90 * (1 + mpmath.fsum(mpmath.exp(-(100 - x) * t) for t in taus[1:])) - x

        grid = [90 + (90 * len(taus) - 90) * mpmath.mpf(i) / 4000 for i in range(4001)]
        vals = [r(x) for x in grid]
        roots = []
        for a, b, fa, fb in zip(grid, grid[1:], vals, vals[1:]):
            if fa * fb < 0:
                for _ in range(200):
                    c = (a + b) / 2
                    if (r(c) > 0) == (fa > 0):
                        a = c
                    else:
                        b = c
                roots.append((a + b) / 2)
        if vals[-1] == 0:
            roots.append(grid[-1])
        if len(roots) != len(got):
            return False, None, f"{len(got)} fixed points, the closed form has {len(roots)}"
        worst = min(agreement_digits(mpmath.mpf(x), y) for x, y in zip(got, roots))
    return worst >= 7, worst, "three fixed points (float64: tails by one Euler inversion) vs bisection of the closed form"


@functools.lru_cache(maxsize=1)
@declare(
    Rule("retry_after", lambda t: t is not None, "the displayed fixed point has no retries after a 503 with "
         "Retry-After (the engine computes them; the steps do not state them)"),
    independent={
        **{name: "the relations take the server through p = P(a copy is refused) and F(t) = P(R_copy > t), "
                 "whatever the server" for name in
           ("service", "capacity", "control", "thresholds", "duplicate_cost", "discipline", "vacation",
            "vacation_policy", "service_non_invite")},
        **{name: "the copy schedule tau_j and lambda_0 are symbols of the relations" for name in
           ("rate", "method", "t1", "t2", "timeout")},
        "rate_non_invite": "(F2) states the fixed point of two flows",
        "retries": "it counts retries after Retry-After, which the steps do not state (refused with --retry-after)",
        "response_tail": "it only lists the times of a measure",
        "scan_points": "it is the grid of the numeric scan, not part of the relations"})
def derivation() -> Derivation:
    """The registered derivation ``sip-retransmission``."""
    ign, rej = "ignore", "503"
    desc = " at the fixed point, p and F from the CTMC oracle and incomplete gamma"
    steps = (
        Step("(F)", "The offered copy rate is a fixed point: every transaction sends $C$ copies on average, and their "
             r"law depends on the copy rate $\lambda$ itself", REL_F, "[@rfc3261, sec. 17.1]",
             provenance="issue 17; docs/guides/sip-retransmission.md",
             check=relation_check(REL_F, _bind(ign, "F"), describe=" (ignore control)")),
        Step("(C)", "Silent refusal (no control, or an ignoring server): copy $k$ is sent if and only if no response "
             r"has come by $\tau_k$; the response is the completion of the first admitted copy (first in, first "
             "out), each copy being refused with probability $p$", REL_C, "",
             provenance="numeric/engines/sip/ (C)",
             check=relation_check(REL_C, _bind(ign, "C"), describe=desc)),
        Step("(T)", "Silent refusal: no response by the timeout $T_B$", REL_T, "",
             provenance="numeric/engines/sip/ (T)",
             check=relation_check(REL_T, _bind(ign, "T"), describe=desc)),
        Step("(C')", "With 503 responses: a refused copy 0 ends the transaction; once it is admitted, copy $k$ is "
             r"sent if and only if copy 0 has not completed by $\tau_k$ (a refused retransmission of an admitted "
             "transaction is absorbed)", REL_C5, "", provenance="numeric/engines/sip/ (C)",
             check=relation_check(REL_C5, _bind(rej, "C5"), describe=desc)),
        Step("(T')", "With 503 responses, a transaction times out when copy 0 is admitted and not completed by "
             "$T_B$ (the response is that of copy 0)", REL_T5, "",
             provenance="numeric/engines/sip/ (T)",
             check=relation_check(REL_T5, _bind(rej, "T5"), describe=desc)),
        Step("(J)", "With 503 responses, a transaction is rejected when copy 0 is refused (a transaction with an "
             "admitted copy is never rejected)", REL_J, "", provenance="numeric/engines/sip/ (J)",
             check=relation_check(REL_J, _bind(rej, "J"), describe=desc)),
        Step("(G)", "The goodput: the transactions answered before the timeout, per second", REL_G,
             "", provenance="numeric/engines/sip/ (G)",
             check=relation_check(REL_G, _bind(rej, "G"), describe=desc)),
        Step("(D)", "The duplicate ratio: the share of retransmitted copies among all copies", REL_D,
             "", provenance="numeric/engines/sip/ (D)",
             check=relation_check(REL_D, _bind(ign, "D"), describe=desc)),
        Step("(F2)", r"Two flows: INVITE ($\lambda_1$, $C_1$) and non-INVITE ($\lambda_2$, $C_2$) transactions "
             "meet the same server at the total copy rate, the mean number of copies $C_i$ of each flow following "
             "from (C) over its own copy instants", REL_F2, "",
             provenance="numeric/engines/sip/ (F2)",
             check=relation_check(REL_F2, _bind_two_flows, describe=" (ignore control, T2 = 1 s)" + desc)),
    )
    checks = (Check("bistable $M/M/1$: three fixed points vs the closed-form residual", _check_bistable, "(F)"),)
    return Derivation(
        name="sip-retransmission",
        title="SIP retransmissions: the offered-rate fixed point",
        source="[@rfc3261, sec. 17.1]",
        provenance=("issue 17; docs/guides/sip-retransmission.md; seed 001 section 2",
                    "numeric/engines/sip/", __name__),
        steps=steps,
        checks=checks,
        notes=(r"The approximation: the copies arrive as a Poisson process of rate $\lambda$, and the copies of one "
               "transaction meet independent server states, each with the stationary law at the rate $\\lambda$ "
               "(retransmissions are not Poisson; a simulation measures the error).",
               r"Every solution of (F) in $[\lambda_0, n \lambda_0]$ is reported; a solution where "
               r"$g(\lambda) = \lambda_0 C(\lambda)$ has slope $g' < 1$ is stable."),
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(30) else 1)
