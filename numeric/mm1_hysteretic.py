"""M|M|1 with bi-level hysteretic input-rate control: the CTMC and its product-free stationary law.

``spec/other-models.md`` section B (seed 002; the exponential case of Sopin 2013, chapter 3,
with instantaneous switching). One server of rate mu, Poisson arrivals of rate lambda_s in
mode s: lambda_0 (normal) > lambda_1 (overload) > lambda_2 = 0 (discard); thresholds
L < H < R (R = capacity, counting the customer in service). Switching on the count:
(H-1, 0) -> (H, 1) on an arrival, (L, 1) -> (L-1, 0) on a departure, (R-1, 1) -> (R, 2)
on an arrival, (H+1, 2) -> (H, 1) on a departure. State sets S_0 = {(j,0): 0 <= j <= H-1},
S_1 = {(j,1): L <= j <= R-1}, S_2 = {(j,2): H+1 <= j <= R}.

Stationary law (level cuts; x = pi(L,1), z = pi(R,2), rho_s = lambda_s / mu):

    pi(j,0) = x sum_{k=1}^{H-j} rho_0^{-k}                       L-1 <= j <= H-1
    pi(j,0) = pi(L-1,0) rho_0^{j-L+1}                            0 <= j <= L-1
    pi(j,1) = x sum_{k=0}^{j-L} rho_1^k                          L <= j <= H
    pi(j,1) = z sum_{k=1}^{R-j} rho_1^{-k}                       H <= j <= R-1
    pi(j,2) = z                                                  H+1 <= j <= R

with z fixed by the two expressions of pi(H,1). Every value is a sum of positive terms, so
the backend recurrences below keep full relative accuracy in float64. Measures: P(S_i);
E tau_0 = M_0 / (mu x), E tau_12 = (M_1 + M_2) / (mu x), E tau = 1 / (mu pi(L,1)) (renewal:
one cycle per departure from (L,1)), with M_i the (unnormalised) mass of S_i.

>>> from fractions import Fraction
>>> m = MM1HystereticModel(Fraction(6, 5), Fraction(3, 5), 1, 3, 6, 9)
>>> r = measures(m, FLOAT64)
>>> round(float(r["p_normal"] + r["p_overload"] + r["p_discard"]), 12)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from qderive.symbolic._exact import ParameterError, exact, require_positive

from .backend import FLOAT64, Backend

__all__ = ["MM1HystereticModel", "ctmc_rates", "stationary", "measures", "MEASURE_KEYS"]

# the same measure keys as the general hysteretic model (the command-line contract of issue 4)
from .hysteretic import MEASURE_KEYS  # noqa: E402
from .hysteretic import ordered_thresholds  # noqa: E402  (one threshold validator for both models)


@dataclass(frozen=True)
class MM1HystereticModel:
    """M|M|1 with bi-level hysteresis: rates lambda_0 > lambda_1 > 0, service rate mu, L < H < R, L >= 1."""

    rate0: sp.Expr
    rate1: sp.Expr
    service_rate: sp.Expr
    L: int
    H: int
    R: int

    def __post_init__(self):
        r0 = require_positive(exact(self.rate0, "lambda_0"), "lambda_0")
        r1 = require_positive(exact(self.rate1, "lambda_1"), "lambda_1")
        mu = require_positive(exact(self.service_rate, "service rate mu"), "service rate mu")
        if any(v.free_symbols for v in (r0, r1, mu)):
            raise ParameterError("rates must be numbers for the numeric model (use the derivation for symbols)")
        if not r1 < r0:
            raise ParameterError(f"rates: need lambda_1 < lambda_0 (overload throttles the input), got {r0},{r1}")
        L, H, R = ordered_thresholds(self.L, self.H, self.R)
        for name, v in (("rate0", r0), ("rate1", r1), ("service_rate", mu), ("L", L), ("H", H), ("R", R)):
            object.__setattr__(self, name, v)

    def states(self) -> tuple:
        """(j, s) of S_0, S_1, S_2 in this order."""
        return (
            tuple((j, 0) for j in range(self.H))
            + tuple((j, 1) for j in range(self.L, self.R))
            + tuple((j, 2) for j in range(self.H + 1, self.R + 1))
        )


def ctmc_rates(model: MM1HystereticModel) -> tuple:
    """(states, Q) with Q[a][b] the exact transition rate from states[a] to states[b] (other-models.md B)."""
    states = model.states()
    idx = {s: k for k, s in enumerate(states)}
    n = len(states)
    Q = [[sp.Integer(0)] * n for _ in range(n)]
    lam = {0: model.rate0, 1: model.rate1}
    L, H, R, mu = model.L, model.H, model.R, model.service_rate
    for (j, s), a in idx.items():
        if s == 0:
            Q[a][idx[(j + 1, 0) if j + 1 <= H - 1 else (H, 1)]] += lam[0]
            if j >= 1:
                Q[a][idx[(j - 1, 0)]] += mu
        elif s == 1:
            Q[a][idx[(j + 1, 1) if j + 1 <= R - 1 else (R, 2)]] += lam[1]
            Q[a][idx[(j - 1, 1) if j - 1 >= L else (L - 1, 0)]] += mu
        else:
            Q[a][idx[(j - 1, 2) if j - 1 >= H + 1 else (H, 1)]] += mu
    return states, Q


def stationary(model: MM1HystereticModel, bk: Backend) -> tuple:
    """(states, unnormalised pi with pi(L,1) = 1) by the positive recurrences of the module docstring.

    pi(j,0): y_{H-1} = 1/rho_0, y_j = (y_{j+1} + 1)/rho_0 down to L-1, then y_j = y_{j+1}/rho_0;
    pi(j,1): w_L = 1, w_{j+1} = rho_1 w_j + 1 up to H; v_{R-1} = 1/rho_1, v_j = (v_{j+1} + 1)/rho_1
    down to H, z = w_H / v_H, pi(j,1) = z v_j (j >= H); pi(j,2) = z. Call inside ``with bk:``.
    """
    L, H, R = model.L, model.H, model.R
    r0 = bk.num(model.rate0 / model.service_rate)
    r1 = bk.num(model.rate1 / model.service_rate)
    one = bk.num(1)
    pi = {}
    y = one / r0
    pi[(H - 1, 0)] = y
    for j in range(H - 2, L - 2, -1):
        y = (y + one) / r0
        pi[(j, 0)] = y
    for j in range(L - 2, -1, -1):
        y = y / r0
        pi[(j, 0)] = y
    w = one
    pi[(L, 1)] = w
    for j in range(L, H):
        w = r1 * w + one
        pi[(j + 1, 1)] = w
    v = one / r1
    upper = {R - 1: v}
    for j in range(R - 2, H - 1, -1):
        v = (v + one) / r1
        upper[j] = v
    z = pi[(H, 1)] / upper[H]
    for j in range(H + 1, R):
        pi[(j, 1)] = z * upper[j]
    for j in range(H + 1, R + 1):
        pi[(j, 2)] = z
    states = model.states()
    return states, bk.array([pi[s] for s in states])


def measures(model: MM1HystereticModel, bk: Backend = FLOAT64) -> dict:
    """The measures of the command-line contract (backend numbers). Call inside ``with bk:`` for mpmath.

    P(S_i) = M_i / M; E tau_0 = M_0 / mu, E tau_12 = (M_1 + M_2) / mu, E tau = M / mu (pi(L,1) = 1);
    loss = ((lambda_0 - lambda_1) P(S_1) + lambda_0 P(S_2)) / lambda_0 (throttled arrivals; no
    arrival meets a full system); throughput = lambda_0 P(S_0) + lambda_1 P(S_1).
    """
    states, pi = stationary(model, bk)
    mass = [bk.fsum([p for (j, s), p in zip(states, pi) if s == x]) for x in range(3)]
    total = bk.fsum(mass)
    mu = bk.num(model.service_rate)
    probs = [m / total for m in mass]
    lam0, lam1 = bk.num(model.rate0), bk.num(model.rate1)
    return {
        "p_normal": probs[0],
        "p_overload": probs[1],
        "p_discard": probs[2],
        "mean_normal_time": mass[0] / mu,
        "mean_return_time": (mass[1] + mass[2]) / mu,
        "mean_cycle_time": total / mu,
        "loss_probability": (bk.num(1 - model.rate1 / model.rate0) * probs[1] + probs[2]),
        "throughput": lam0 * probs[0] + lam1 * probs[1],
    }
