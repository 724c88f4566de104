"""The multi-service SCP window (seed 003): the allocation (5), (6) and the window model of each service.

The model :class:`~qderive.symbolic.models.scp_window.SCPWindowModel`: m services with Poisson rates
lambda_i and mean response (processing) times ws_i = h_i share R windows; the operator's ratios
s_1 : ... : s_m fix the admitted rates S_i = s_i R / sum_j s_j ws_j, which fill the resource, (5)
sum_i S_i ws_i = R; by Little's law service i holds n_i = S_i ws_i windows (integers by largest
remainders; exact at the example, where the shares are integral). Each service is then the M/M/n_i/n_i
window model of (1)-(3) (``qderive derive erlang-b``): its blocking B_i = p_{n_i} at load
rho_i = lambda_i ws_i and carried rate lambda_i (1 - B_i); fairness is Jain's index of the carried rates
normalised by the ratios; effectiveness the share of the R windows that is busy.

Every displayed relation is evaluated as displayed by ``qderive verify scp-window`` with the values of
``qderive eval scp-window`` at the model's example (the allocation of
:func:`qderive.numeric.simulation.scp.service_windows`, the engine's Erlang B) and exact rationals for
the rest; the check compares the allocation with (5) over R = 1..40.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import sympy as sp

from ..symbolic.capabilities import declare
from ..symbolic.models.scp_window import SCPWindowModel
from .erlang_b import REL_5, R, S, i, l, m, ws
from .framework import Check, Derivation, Step, relation_check

__all__ = ["derivation"]

j = sp.Symbol("j", integer=True, positive=True)
s, nw, Bs = sp.IndexedBase("s"), sp.IndexedBase("n"), sp.IndexedBase("B")
a, lam, lam_e = sp.IndexedBase("rho"), sp.IndexedBase("lambda"), sp.IndexedBase("lambda_e")
J, E = sp.symbols("J E", positive=True)

REL_S = sp.Eq(S[i], s[i] * R / sp.Sum(s[j] * ws[j], (j, 1, m)))
REL_N = sp.Eq(nw[i], S[i] * ws[i])
REL_B = sp.Eq(Bs[i], (a[i] ** nw[i] / sp.factorial(nw[i])) / sp.Sum(a[i] ** l / sp.factorial(l), (l, 0, nw[i])))
REL_L = sp.Eq(lam_e[i], lam[i] * (1 - Bs[i]))
REL_J = sp.Eq(J, sp.Sum(lam_e[i] / s[i], (i, 1, m)) ** 2 / (m * sp.Sum((lam_e[i] / s[i]) ** 2, (i, 1, m))))
REL_E = sp.Eq(E, sp.Sum(lam_e[i] * ws[i], (i, 1, m)) / R)


def _mp(q) -> mpmath.mpf:
    q = F(q)
    return mpmath.mpf(q.numerator) / q.denominator


def _indexed(values) -> dict:
    return {k: _mp(v) for k, v in enumerate(values, start=1)}


@functools.lru_cache(maxsize=4)
def _values(digits: int):
    """The example model, its allocation and the engine's measures at ``digits``."""
    model = SCPWindowModel.example()
    got = model.evaluate(digits)
    return model, got


def _env(digits):
    model, got = _values(digits)
    ratios = model.allocation
    total = sum(F(r) * F(h) for r, h in zip(ratios, model.holdings))
    rates = [F(r) * model.windows / total for r in ratios]  # (5') exactly, from the ratios
    return {
        m: len(model.rates), R: _mp(model.windows), s: _indexed(ratios), ws: _indexed(model.holdings),
        S: _indexed(rates), nw: {k: int(v) for k, v in enumerate(got["windows"], start=1)},
        a: _indexed([F(x) * F(h) for x, h in zip(model.rates, model.holdings)]), lam: _indexed(model.rates),
        Bs: {k: mpmath.mpf(v) for k, v in enumerate(got["blocking"], start=1)},
        lam_e: {k: mpmath.mpf(v) for k, v in enumerate(got["carried_rate"], start=1)},
        J: mpmath.mpf(got["fairness"]), E: mpmath.mpf(got["effectiveness"]),
    }


def _per_service(digits):
    env = _env(digits)
    return env, {i: range(1, env[m] + 1)}


def _whole(digits):
    return _env(digits), {}


def _check_allocation(digits):
    """The integer windows of the engine add up to R and lie within one window of S_i ws_i of (5), R = 1..40."""
    from ..numeric.simulation.scp import service_windows

    ratios, holdings = (2, 1, 5), (F(1, 7), F(3, 10), F(1, 20))
    total = sum(F(r) * h for r, h in zip(ratios, holdings))
    for Rv in range(1, 41):
        n = service_windows(Rv, ratios, holdings)
        exact = [F(r) * Rv / total * h for r, h in zip(ratios, holdings)]
        if sum(n) != Rv or any(abs(x - y) >= 1 for x, y in zip(n, exact)):
            return False, None, f"R = {Rv}: windows {n} against S_i ws_i = {exact}"
    return True, math.inf, "sum n_i = R and |n_i - S_i ws_i| < 1, R = 1..40, three services (exact)"


@functools.lru_cache(maxsize=1)
@declare(independent={
    **{name: "the allocation (5), (6) and the window model are stated in symbols" for name in
       ("rates", "holdings", "windows", "ratios")},
    **{name: "it configures the simulated SCP only; the derivation states the window model" for name in
       ("control", "servers", "w_max", "sources", "interval", "threshold", "timeout", "update", "smoothing",
        "rejection_cost")}})
def derivation() -> Derivation:
    """The registered derivation ``scp-window``."""
    cite = "[@wang_liao_scp, eq. ({})]".format
    steps = (
        Step("(5)", r"The $m$ services share the resource $R$; the operator fixes the ratios $S_1 : \dots : S_m$",
             REL_5, cite(5),
             check=relation_check(REL_5, _whole, describe=" with the rates of the ratios at the example")),
        Step("(5')", "The rates in the operator's ratios that fill $R$", REL_S, cite(5),
             check=relation_check(REL_S, _per_service, describe=" at the example")),
        Step("(W)", "The windows of service $i$ by Little's law (integers by largest remainders)", REL_N,
             "[@wang_liao_scp, eqs. (3), (5)]",
             check=relation_check(REL_N, _per_service, describe=": the engine's windows at the example")),
        Step("(1i)", r"Service $i$ is the window model $M/M/n_i/n_i$; its blocking, with $\rho_i = \lambda_i w_{s,i}$",
             REL_B,
             cite(1), check=relation_check(REL_B, _per_service, describe=": the engine's blocking")),
        Step("(2i)", "The carried rate of service $i$", REL_L, cite(2),
             check=relation_check(REL_L, _per_service, describe=": the engine's carried rates")),
        Step("(J)", "Fairness: Jain's index of the carried rates normalised by the ratios (it is 1 when the ratios "
             "are met)", REL_J, "[@jain1984]", check=relation_check(REL_J, _whole, describe=": the engine's fairness")),
        Step("(E)", "Effectiveness: the busy share of the $R$ windows", REL_E, "[@wang_liao_scp, eqs. (3), (5)]",
             check=relation_check(REL_E, _whole, describe=": the engine's effectiveness")),
    )
    return Derivation(
        name="scp-window",
        title="The multi-service SCP window: the allocation and the window model of each service",
        source="[@wang_liao_scp, eqs. (1)--(6)]", provenance=("docs/guides/scp-window.md", __name__),
        steps=steps,
        checks=(Check("the integer windows follow (5) within one window and add up to R", _check_allocation,
                      "(W)"),),
        notes=("The windows use $w_{s,i} = h_i$, the response time of the window model [@wang_liao_scp, eq. (4)]; "
               "with a queue at the "
               "processors the response times grow and the same windows no longer give the ratios.",),
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(40) else 1)
