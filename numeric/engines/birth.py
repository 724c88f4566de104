"""From a model's laws to the state-dependent birth kernel (:mod:`qderive.numeric.kernels.birth`).

The arrivals during one service when the arrival rate follows the count (the instantaneous
mode changes of ``qderive eval hysteretic --policy instant`` and of the two-flow hysteretic
model with a general service law): the kernel needs, per starting mode s, the uniformized
matrix at lambda_s (its exact ratios lambda_m / lambda_s and (lambda_s - lambda_m) / lambda_s,
computed here in rationals) and the count sequences (beta_k, P(K > k)) of the service law at
the rate lambda_s (:func:`qderive.numeric.sequences.count_sequences`: every count family of
the laws), truncated at the first k >= R with P(K > k) <= eps^2 (:func:`uniformization_counts`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.errors import NumericalError
from ..kernels import birth as B
from ..sequences import count_sequences

__all__ = ["uniformization_counts", "birth_matrices", "threshold_matrix", "threshold_matrices", "MAX_TERMS"]

#: the most uniformization terms (products of (R + 1)-square matrices) one service may take
MAX_TERMS = 20_000


def uniformization_counts(law, lam, ctx, start: int, floor=None):
    """(beta_k, P(K > k), sum_{i>k} P(K > i)) for k = 0..n of the Poisson(``lam``) events during one time of
    ``law``, n >= ``start`` the first index with P(K > n) <= ``floor`` (default eps^2); call inside ``with ctx:``.

    A NumericalError when more than :data:`MAX_TERMS` terms would be needed (a service law whose count
    tail decays too slowly for uniformization).
    """
    floor = ctx.eps ** 2 if floor is None else floor
    count = law.count_law(lam)
    mean = float(lam * law.moment(1))
    n = max(start, int(mean + 12 * mean ** 0.5) + 30)
    while True:
        beta, tail, tail2 = count_sequences(count, n, ctx)
        small = np.flatnonzero(np.array([t <= floor for t in tail[start:]], dtype=bool))
        if small.size:
            cut = start + int(small[0])
            return beta[: cut + 1], tail[: cut + 1], tail2[: cut + 1]
        if n >= MAX_TERMS:
            raise NumericalError(f"the service law {law} needs more than {MAX_TERMS} uniformization terms at the "
                                 f"rate {float(lam):g} (its count tail decays too slowly)")
        n = min(2 * n, MAX_TERMS)


def birth_matrices(service, lam, P, ctx, start: int):
    """(M, T) of :func:`qderive.numeric.kernels.birth.birth_mixture` for ``P`` uniformized at ``lam``, with at
    least ``start`` terms (the jumps to the farthest reachable count) and as many as its remainder bound asks
    (the floor of the count tail lowered until it is <= eps); the limit ``birth_work`` bounds the products."""
    floor = ctx.eps ** 2
    size = P.shape[0]
    while True:
        beta, tail, tail2 = uniformization_counts(service, lam, ctx, start, floor)
        work = len(beta) * size ** 3 * (1 if ctx.is_float64 else 100)
        _limits.check("birth_work", work, f"the birth kernel needs {len(beta)} products of {size}-square matrices"
                      f"{'' if ctx.is_float64 else ' in mpmath'} (the service law's count tail at rate "
                      f"{float(lam):g}; the thresholds)")
        M, T, rel = B.birth_mixture(ctx, P, beta, tail, tail2, ctx.num(lam))
        if rel <= ctx.eps or tail[-1] == 0:
            return M, T
        floor = floor * floor


def threshold_matrix(rates, s: int, pmf, tail, H: int, R: int, ctx):
    """The uniformized matrix P of a service started in mode s (lambda_s > 0), at the rate lambda_s
    (:func:`qderive.numeric.kernels.birth.birth_threshold_matrix`): the ratios lambda_m / lambda_s and
    (lambda_s - lambda_m) / lambda_s of the modes m >= s computed exactly (``rates`` exact)."""
    lam_s = Fraction(rates[s])
    up = [ctx.num(Fraction(rates[m]) / lam_s) if m >= s else None for m in range(3)]
    stay = [ctx.num((lam_s - Fraction(rates[m])) / lam_s) if m >= s else None for m in range(3)]
    return B.birth_threshold_matrix(ctx, s, up, stay, pmf, tail, H, R)


def threshold_matrices(service, rates, pmf, tail, L: int, H: int, R: int, ctx):
    """((M_s, T_s), reach_s) for s = 0, 1, 2: the birth kernel of a service started in mode s (call inside ``with ctx:``).

    ``rates`` = (lambda_0, lambda_1, lambda_2) exact (lambda_0 >= lambda_1 >= lambda_2 >= 0), ``pmf``,
    ``tail`` the batch law over 0..R (context vectors). A mode without arrivals (lambda_s = 0) has
    M = I, T = b_1 I; equal rate functions share one computation. A service in mode s starts from a
    count of at least 1, L, H + 1 (s = 0, 1, 2): the counts below cannot be reached, so the kernel
    runs on the trailing block of P from there (the matrices are (R + 1)-square, 0 above it).
    """
    b1 = ctx.num(service.moment(1))
    out, done = [], {}
    for s in range(3):
        lam_s = Fraction(rates[s])
        key = tuple(rates[max(s, m)] for m in range(3))  # the rate at each level for this start
        lo = (1, L, H + 1)[s]
        if key in done and done[key][2] <= lo:
            out.append(done[key])
            continue
        if lam_s == 0:
            mats = B.birth_idle(ctx, b1, R)
            item = (mats, np.eye(R + 1, dtype=bool), 0)
        else:
            P = threshold_matrix(rates, s, pmf, tail, H, R, ctx)
            reach, steps = B.birth_support(P[lo:, lo:])
            full_reach = np.zeros((R + 1, R + 1), dtype=bool)
            full_reach[lo:, lo:] = reach
            sub = birth_matrices(service, lam_s, P[lo:, lo:], ctx, steps)
            mats = []
            for part in sub:
                full = ctx.zeros((R + 1, R + 1))
                full[lo:, lo:] = part
                mats.append(full)
            item = (tuple(mats), full_reach, lo)
        done[key] = item
        out.append(item)
    return [m for m, _, _ in out], [r for _, r, _ in out]
