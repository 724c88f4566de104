"""M|M|1 with bi-level hysteretic control: closed forms in lambda_0, lambda_1, mu and symbolic L, H, R.

``docs/theory/other-models.md`` section B. The CTMC is piecewise birth-death; the level cuts (flow
up across a level = flow down across it) give each mode's stationary law as a geometric
segment (rho_s = lambda_s / mu, unnormalised with pi(L, 1) = 1)::

    pi(j,0) = sum_{k=1}^{H-j} rho_0^{-k}                                   L-1 <= j <= H-1
    pi(j,0) = rho_0^{j-L+1} sum_{k=1}^{H-L+1} rho_0^{-k}                   0 <= j <= L-1
    pi(j,1) = sum_{k=0}^{j-L} rho_1^k                                      L <= j <= H
    pi(j,1) = pi(H,1) sum_{k=j-H}^{R-H-1} rho_1^k / sum_{k=0}^{R-H-1} rho_1^k     H <= j <= R-1
    pi(j,2) = pi(H,1) rho_1^{R-H} / sum_{k=0}^{R-H-1} rho_1^k              H+1 <= j <= R

(the overload segment above H written with nonnegative powers of rho_1, so lambda_1 = 0,
complete blocking, is the same formula). The masses M_0, M_1, M_2 of S_0, S_1, S_2 are
(double) geometric sums that SymPy evaluates for symbolic thresholds, once with rho_s
symbolic (the generic branch) and once with rho_s = 1; the results are ``Piecewise`` in
lambda_s = mu. With them: P(S_s) = M_s / M, E tau_0 = M_0 / mu, E tau_12 = (M_1 + M_2) / mu,
E tau = M / mu (one cycle per departure from (L, 1)), loss = (1 - lambda_1/lambda_0) P(S_1) +
P(S_2), throughput = lambda_0 P(S_0) + lambda_1 P(S_1). Derived once and kept in the cache.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..cache import cached

__all__ = ["lam0", "lam1", "mu", "rho0", "rho1", "L", "H", "R", "j", "k", "m", "i", "SYMBOLS", "MEASURE_KEYS",
           "segments", "masses", "closed_forms", "substitute"]

lam0, lam1, mu = sp.symbols("lambda_0 lambda_1 mu", positive=True)
rho0, rho1 = sp.symbols("rho_0 rho_1", positive=True)
L, H, R = sp.symbols("L H R", integer=True, positive=True)
j, k, m, i = sp.symbols("j k m i", integer=True)
#: the arguments of every closed form, in order
SYMBOLS = (lam0, lam1, mu, L, H, R)
MEASURE_KEYS = ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time",
                "loss_probability", "throughput")


def segments(r0, r1) -> dict:
    """The unnormalised stationary law (pi(L, 1) = 1) on each segment, as SymPy Sums in j (module docstring)."""
    at_h = sp.Sum(r1**k, (k, 0, H - L))
    denom = sp.Sum(r1**k, (k, 0, R - H - 1))
    return {
        "normal_low": r0 ** (j - L + 1) * sp.Sum(r0 ** (-k), (k, 1, H - L + 1)),  # 0 <= j <= L-1
        "normal_high": sp.Sum(r0 ** (-k), (k, 1, H - j)),  # L-1 <= j <= H-1
        "overload_low": sp.Sum(r1**k, (k, 0, j - L)),  # L <= j <= H
        "overload_high": at_h * sp.Sum(r1**k, (k, j - H, R - H - 1)) / denom,  # H <= j <= R-1
        "discard": at_h * r1 ** (R - H) / denom,  # H+1 <= j <= R
    }


def masses(r0, r1) -> tuple:
    """(M_0, M_1, M_2) as double Sums over the segments: the normal mode over j, the overload mode over
    m = j - L + 1 and i = j - H (every power of rho_1 nonnegative: lambda_1 = 0 needs no limit). Each
    inner sum is written as a term of the outer summand (a factor or an addend), as displayed."""
    seg = segments(r0, r1)
    M0 = (sp.Sum(seg["normal_low"], (j, 0, L - 2))
          + sp.Sum(r0 ** (-1) * sp.Sum(r0 ** (-k), (k, 0, H - j - 1)), (j, L - 1, H - 1)))
    at_h = sp.Sum(r1**k, (k, 0, H - L))
    denom = sp.Sum(r1**k, (k, 0, R - H - 1))
    M1 = (sp.Sum(1 + sp.Sum(r1**k, (k, 1, m - 1)), (m, 1, H - L))
          + at_h * sp.Sum(r1**i * sp.Sum(r1**k, (k, 0, R - H - 1 - i)), (i, 0, R - H - 1)) / denom)
    return M0, M1, (R - H) * seg["discard"]


def _generic_branch(expr):
    """Each Piecewise of a geometric summation replaced by its rho != 1 branch."""
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[-1].expr)


def _evaluate_sums(expr):
    """doit() from the innermost Sum outwards, keeping the generic branch at every level."""
    while expr.has(sp.Sum):
        inner = [s for s in expr.atoms(sp.Sum) if not s.function.has(sp.Sum)]
        expr = expr.xreplace({s: _generic_branch(s.doit()) for s in inner})
    return expr


#: positive integers standing for H - L, R - H, and j - L >= 0, j - H >= 0 while the rho_1 sums are
#: evaluated: SymPy then keeps every power of rho_1 nonnegative (rho_1^{R-H}, never rho_1^R / rho_1^H),
#: so the closed forms hold at lambda_1 = 0 as written
_n1, _N, _c = sp.symbols("n_1 N c", integer=True, positive=True)
_a, _b, _d, _l1 = sp.symbols("a b d l_1", integer=True, nonnegative=True)
#: 1 / rho_0 = mu / lambda_0: the normal-mode law in its nonnegative powers (no huge intermediate powers)
_s = sp.Symbol("sigma_0", positive=True)


def _normal(s0) -> dict:
    G0 = sp.Sum(s0**k, (k, 1, _n1 + 1))
    return {
        "normal_low": s0**_d * G0,  # d = L - 1 - j
        "normal_high": sp.Sum(s0**k, (k, 1, _c)),  # c = H - j
        "M0": sp.Sum(s0**m * G0, (m, 1, _l1)) + sp.Sum(sp.Sum(s0**k, (k, 1, m)), (m, 1, _n1 + 1)),
    }


def _overload(r1) -> dict:
    at_h = sp.Sum(r1**k, (k, 0, _n1))
    denom = sp.Sum(r1**k, (k, 0, _N - 1))
    return {
        "overload_low": sp.Sum(r1**k, (k, 0, _a)),
        "overload_high": at_h * sp.Sum(r1**k, (k, _b, _N - 1)) / denom,
        "discard": at_h * r1**_N / denom,
        "M1": (sp.Sum(sp.Sum(r1**k, (k, 0, m - 1)), (m, 1, _n1))
               + at_h * sp.Sum(sp.Sum(r1**k, (k, i, _N - 1)), (i, 0, _N - 1)) / denom),
        "M2": _N * at_h * r1**_N / denom,
    }


_BACK = {_n1: H - L, _N: R - H, _a: j - L, _b: j - H, _c: H - j, _d: L - 1 - j, _l1: L - 1}


def _derive() -> dict:
    eq0, eq1 = sp.Eq(lam0, mu), sp.Eq(lam1, mu)
    out = {}
    for parts, var, value, cond in ((_normal, _s, mu / lam0, eq0), (_overload, rho1, lam1 / mu, eq1)):
        generic, at_one = parts(var), parts(sp.Integer(1))
        for name in generic:
            g = sp.factor(_evaluate_sums(generic[name])).xreplace(_BACK)
            u = sp.factor(sp.simplify(_evaluate_sums(at_one[name])).xreplace(_BACK))
            out[name if name.startswith("M") else f"pi_{name}"] = sp.Piecewise((u, cond), (g.subs(var, value), True))
    M0, M1, M2 = out["M0"], out["M1"], out["M2"]
    M = M0 + M1 + M2
    out.update({
        "p_normal": M0 / M, "p_overload": M1 / M, "p_discard": M2 / M,
        "mean_normal_time": M0 / mu, "mean_return_time": (M1 + M2) / mu, "mean_cycle_time": M / mu,
        "loss_probability": ((lam0 - lam1) * M1 / lam0 + M2) / M,
        "throughput": (lam0 * M0 + lam1 * M1) / M,
    })
    return out


@functools.lru_cache(maxsize=1)
def closed_forms() -> dict:
    """Closed forms in lambda_0, lambda_1, mu and symbolic L, H, R (``Piecewise`` for lambda_s = mu).

    Keys: ``pi_normal_low``, ``pi_normal_high``, ``pi_overload_low``, ``pi_overload_high``,
    ``pi_discard`` (the segments in the symbol j, pi(L, 1) = 1), ``M0``, ``M1``, ``M2`` and the
    measures of :data:`MEASURE_KEYS`. Derived once, kept in the private cache.
    """
    return cached("mm1_hysteretic_closed_forms", _derive)


def substitute(expr, model):
    """``expr`` at the model's exact rates and thresholds (a SymPy number; rational for rational rates)."""
    from ..numbers import to_sympy

    values = {lam0: to_sympy(model.rate0), lam1: to_sympy(model.rate1), mu: to_sympy(model.service_rate),
              L: model.L, H: model.H, R: model.R}
    value = to_sympy(expr).subs(values)
    value = value.doit() if value.has(sp.Sum) else value
    return value if value.is_Rational else sp.cancel(value)
