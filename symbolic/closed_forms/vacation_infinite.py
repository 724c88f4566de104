"""M[X]/G/1 with multiple, single or no vacations: Q(z), P(z), N, W, Var with general laws.

Sopin 2013, chapter 2, eqs. (2)-(7) (``docs/theory/chapter2.md`` section 1), for the three
policies of :class:`~qderive.symbolic.models.vacation.VacationPolicy` (and no vacation).
With A(z) = beta(lambda - lambda L(z)) (customers arriving during a service) and the
*start period* that follows an empty embedded epoch (epochs: service completions and
vacation ends), whose end count has PGF C_s(z) and whose level times have PGF V_s(z):

===========  ====================================  ======================================  ==================
policy       C_s(z)                                V_s(z)                                  not serving n_s
===========  ====================================  ======================================  ==================
multiple     C(z) = varphi(lambda - lambda L(z))    V(z) = (1 - C(z))/(lambda (1 - L(z)))   f_1
single       C(z) - c_0 + c_0 A(z) L(z)/z           V(z) + c_0 (1/lambda + L(z) U(z)/z)       f_1 + c_0/lambda
none         A(z) L(z)/z                            1/lambda + L(z) U(z)/z                    1/lambda
===========  ====================================  ======================================  ==================

where c_0 = varphi(lambda) is the probability that no batch arrives during a vacation and
U(z) = (1 - A(z))/(lambda (1 - L(z))). The balance equations (2) give
Q(z) = q_0 (z C_s(z) - A(z)) / (z - A(z)) with q_0 from Q(1) = 1 ((3)); the renewal-reward
relation (4) gives P(z) = [q_0 V_s(z) + (Q(z) - q_0) U(z)/z] / C with C the mean time
between embedded epochs; N = P'(1), W = N/(lambda l_1) ((6), (7)), Var = P''(1) + N - N^2
and P_e = q_0 n_s / C = 1 - rho_bar ((5)). Multiple vacations reproduce the thesis's
(3)-(7) exactly (a check of ``qderive verify vacation-infinite``).
"""

from __future__ import annotations

import functools

import sympy as sp

from ..batches.general import GeneralBatch
from ..cache import cached
from ..laws.general import GeneralTime
from ..models.vacation import VacationMeasures
from ..pgf import derivatives_at

__all__ = ["SYMBOLS", "z", "lam", "c0", "SERVICE", "VACATION", "BATCH", "general_results", "measure_expressions",
           "MEASURE_KEYS", "symbol_values"]

z = sp.Symbol("z")
lam = sp.Symbol("lambda", positive=True)
#: c_0 = varphi(lambda): the probability that no batch arrives during a vacation
c0 = sp.Symbol("c0", positive=True)
SERVICE = GeneralTime("beta", "b")
VACATION = GeneralTime("varphi", "f")
BATCH = GeneralBatch("L", "l")
b1, b2, b3 = (SERVICE.moment(k) for k in (1, 2, 3))
f1, f2, f3 = (VACATION.moment(k) for k in (1, 2, 3))
l1, l2, l3 = (BATCH.moment(k) for k in (1, 2, 3))
#: the arguments of every measure expression, in order
SYMBOLS = (lam, b1, b2, b3, f1, f2, f3, l1, l2, l3, c0)

#: the measures, in the order of the result record's fields
MEASURE_KEYS = tuple(f.name for f, m in VacationMeasures.measure_fields() if not m.optional)


def substitute_moments(expr):
    return VACATION.substitute_moments(SERVICE.substitute_moments(BATCH.substitute_moments(expr)))


def transforms(policy: str) -> dict:
    """A, C, U, V and the start period (C_s, V_s, n_s, E_s, services) of ``policy`` with general laws."""
    Lz = BATCH.pgf(z)
    arg = lam - lam * Lz
    A = SERVICE.lst(arg)
    C = VACATION.lst(arg)
    U = (1 - A) / (lam * (1 - Lz))
    V = (1 - C) / (lam * (1 - Lz))
    idle_C = A * Lz / z
    idle_V = 1 / lam + Lz * U / z
    if policy == "multiple":
        Cs, Vs, ns, Es = C, V, f1, f1
    elif policy == "single":
        Cs, Vs, ns, Es = C - c0 + c0 * idle_C, V + c0 * idle_V, f1 + c0 / lam, f1 + c0 * (1 / lam + b1)
    elif policy == "none":
        Cs, Vs, ns, Es = idle_C, idle_V, 1 / lam, 1 / lam + b1
    else:  # pragma: no cover - the policies are an Enum upstream
        raise ValueError(policy)
    return {"A": A, "C": C, "U": U, "V": V, "Cs": Cs, "Vs": Vs, "ns": ns, "Es": Es, "L": Lz}


def _derive(policy: str) -> dict:
    t = transforms(policy)
    A, Cs, Vs, U = t["A"], t["Cs"], t["Vs"], t["U"]
    rho_bar = lam * l1 * b1
    (ratio_at_1,) = derivatives_at((z * Cs - A) / (z - A), z, 1, 0, substitute_moments)
    q0 = sp.factor(sp.cancel(1 / ratio_at_1))
    Q = q0 * (z * Cs - A) / (z - A)
    Cm = sp.factor(sp.cancel(q0 * t["Es"] + (1 - q0) * b1))
    P = (q0 * Vs + (Q - q0) * U / z) / Cm
    P0, P1, P2 = derivatives_at(P, z, 1, 2, substitute_moments)
    (Q1,) = derivatives_at(Q, z, 1, 0, substitute_moments)
    N = sp.factor(sp.cancel(P1))
    W = sp.factor(sp.cancel(N / (lam * l1)))
    var = sp.factor(sp.cancel(P2 + P1 - P1**2))
    P_e = sp.factor(sp.cancel(q0 * t["ns"] / Cm))
    return {"q0": q0, "Q": Q, "P": P, "C_embedded": Cm, "P(1)": P0, "Q(1)": Q1, "N": N, "W": W,
            "variance": var, "P_e": P_e, "rho_bar": rho_bar, "second_factorial_moment": sp.factor(P2), **t}


@functools.lru_cache(maxsize=4)
def general_results(policy: str = "multiple") -> dict:
    """Every result of the module docstring for ``policy`` ("multiple", "single", "none"), cached on disk."""
    return cached(f"vacation_infinite_general::{policy}", lambda: _derive(policy))


@functools.lru_cache(maxsize=4)
def measure_expressions(policy: str = "multiple") -> tuple:
    """The measures of :data:`MEASURE_KEYS` as expressions in :data:`SYMBOLS`."""
    g = general_results(policy)
    return (g["q0"], g["P_e"], g["N"], g["W"], g["variance"], sp.factor(sp.cancel(g["N"] + g["rho_bar"])))


def symbol_values(model) -> dict:
    """The exact values of :data:`SYMBOLS` for a concrete model (:meth:`VacationQueue.moment_values`)."""
    return dict(zip(SYMBOLS, model.moment_values()))
