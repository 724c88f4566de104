"""Arrival-count sequences without subtraction: a_n, tails, and level times.

For Poisson batch arrivals of rate lambda, batch law {l_i} and a random time T
(service B or vacation F) this module computes, for n = 0..N (``spec/chapter2.md``
section 0, ``spec/chapter3.md`` section 2):

* the Poisson-mixing probabilities ``beta_k`` and their tails
  ``tau_k = sum_{i>k} beta_i`` (count law of the time law);
* ``a_n = sum_k beta_k l^{(k)}_n``: n customers arrive during T;
* ``abar_n = sum_{m>n} a_m = sum_{k<=n} beta_k P(S_k > n) + tau_n``;
* ``u_n = sum_k l^{(k)}_n tau_k / lambda``: expected time during T with exactly n
  arrivals so far, and ``Ubar_m = sum_{n>=m} u_n``.

Every quantity is a sum of positive terms: tails are never formed as
``1 - cumulative sum`` (that destroys the stability of the cut recursion (2b),
``spec/chapter2.md`` section 4). Infinite tails are summed backwards after
extending the sequence until the remainder is below the working precision.
The k-fold convolutions ``l^{(k)}`` and ``P(S_k > n)`` come from recurrences
specific to the batch family (Pascal's rule for geometric batches, shifts for
constant and finite batches, Poisson columns for 1 + Poisson).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch

import mpmath
import numpy as np

from qderive.symbolic import batches as _b
from qderive.symbolic import counts as _c
from qderive.symbolic._exact import ParameterError

from .backend import Backend

__all__ = ["CountSequence", "count_sequence", "ArrivalCounts", "arrival_counts", "batch_pmf_tail"]


_TINY = float(np.finfo(np.float64).tiny)


@dataclass(frozen=True)
class CountSequence:
    """beta_k, tau_k = P(K > k) and tau2_k = sum_{i>k} tau_i for k = 0..N (backend vectors)."""

    beta: np.ndarray
    tail: np.ndarray
    tail2: np.ndarray


def _extend_and_tail(bk: Backend, first_terms, next_term, n: int, ratio_bound):
    """Terms t_0..t_n, their tails sum_{i>k} t_i and second tails, all by backward sums.

    ``next_term(i, t_prev)`` gives t_i from t_{i-1}; the sequence is extended beyond n
    until the next term is negligible against the smallest tail we need
    (``ratio_bound(i)`` bounds t_{i+1}/t_i for all later i, so the remainder is at
    most t_K * rho / (1 - rho)).
    """
    ctx = bk.ctx
    terms = list(first_terms)
    i = len(terms)
    while i <= n:
        terms.append(next_term(i, terms[-1]))
        i += 1
    eps = bk.eps * mpmath.mpf(2) ** -8 if not bk.is_float64 else bk.eps / 256
    partial = ctx.mpf(0)
    limit = 10 * n + 100000
    while True:
        t = next_term(i, terms[-1])
        terms.append(t)
        partial += t
        rho = ratio_bound(i)
        # float64: a subnormal term can stall (5e-324 * ratio rounds back to 5e-324), so a term
        # below the smallest normal number counts as zero
        negligible = t == 0 or (bk.is_float64 and t < _TINY)
        if rho < 1 and (negligible or t * rho / (1 - rho) <= eps * partial):
            break
        i += 1
        if i > limit:
            raise ParameterError("the arrival-count sequence decays too slowly to sum its tail")
    rho = ratio_bound(i)
    remainder = terms[-1] * rho / (1 - rho) if rho < 1 else ctx.mpf(0)
    # backward sums: tail_k = sum_{i>k} t_i, tail2_k = sum_{i>k} tail_i (remainders bounded the same way)
    size = len(terms)
    tail = [ctx.mpf(0)] * size
    tail2 = [ctx.mpf(0)] * size
    acc = remainder
    acc2 = remainder * rho / (1 - rho) if rho < 1 else ctx.mpf(0)
    for k in range(size - 1, -1, -1):
        tail[k] = acc
        tail2[k] = acc2
        acc += terms[k]
        acc2 += tail[k]
    return terms[: n + 1], tail[: n + 1], tail2[: n + 1]


@singledispatch
def _count_terms(law, n: int, bk: Backend):
    raise ParameterError(
        f"no numeric values for the law {law!r}: a general law has only symbolic moments; "
        "choose a concrete service / vacation law to evaluate numerically"
    )


@_count_terms.register
def _(law: _c.PoissonCount, n, bk):
    ctx = bk.ctx
    x = bk.num(law.mean)
    if bk.is_float64 and x > 600:
        raise ParameterError(
            f"lambda * d = {x:.4g}: a deterministic time with this many arrivals underflows in float64; "
            "use --digits"
        )
    first = [ctx.exp(-x)]
    return _extend_and_tail(bk, first, lambda i, prev: prev * x / i, n, lambda i: x / (i + 1))


@_count_terms.register
def _(law: _c.NegativeBinomialCount, n, bk):
    ctx = bk.ctx
    a, p0 = bk.num(law.shape), bk.num(law.p0)
    q = 1 - p0 if bk.is_float64 else bk.num(law.q)
    first = [p0**a]

    def ratio(i):
        # t_{i+1}/t_i = q (i + a)/(i + 1): tends to q, monotone; bound it by its sup over j >= i
        r_now = q * (i + a) / (i + 1)
        return max(r_now, q)

    return _extend_and_tail(bk, first, lambda i, prev: prev * q * (i - 1 + a) / i, n, ratio)


@_count_terms.register
def _(law: _c.MixtureCount, n, bk):
    parts = [_count_terms(c, n, bk) for c in law.components]
    weights = [bk.num(w) for w in law.weights]
    out = []
    for idx in range(3):
        out.append([sum(w * p[idx][k] for w, p in zip(weights, parts)) for k in range(n + 1)])
    return tuple(out)


@_count_terms.register
def _(law: _c.UniformMixedPoissonCount, n, bk):
    # beta_k = (P(Pois(xb) > k) - P(Pois(xa) > k)) / (xb - xa): a difference of positive
    # numbers, evaluated with extra working precision, then terms and tails as usual.
    with mpmath.workdps((bk.dps if not bk.is_float64 else 15) + 30):
        xa, xb = (mpmath.mpf(bk.num(v)) if bk.is_float64 else bk.num(v) for v in (law.lam_low, law.lam_high))
        if bk.is_float64:
            xa, xb = mpmath.mpf(float(xa)), mpmath.mpf(float(xb))

        def beta(k):
            upper = mpmath.gammainc(k + 1, 0, xb, regularized=True)
            lower = mpmath.gammainc(k + 1, 0, xa, regularized=True) if xa > 0 else 0
            return (upper - lower) / (xb - xa)

        terms = _extend_and_tail(
            Backend("mp-uniform", mpmath.mp.dps, mpmath.mp, object),
            [beta(0)],
            lambda i, prev: beta(i),
            n,
            lambda i: xb / (i + 1),
        )
    if bk.is_float64:
        return tuple([float(v) for v in seq] for seq in terms)
    return tuple([+v for v in seq] for seq in terms)


def count_sequence(time_law, lam, n: int, bk: Backend) -> CountSequence:
    """beta_k, P(K > k), sum_{i>k} P(K > i) for k = 0..n, K the batches arriving during one time.

    ``lam`` is the batch rate (an exact SymPy number); evaluate inside ``with bk:``.
    """
    beta, tail, tail2 = _count_terms(time_law.count_law(lam), n, bk)
    return CountSequence(bk.array(beta), bk.array(tail), bk.array(tail2))


# --------------------------------------------------------------------------------------
# Batch-law columns: l^{(k)}_n and P(S_k > n) for n = 0..N, one k at a time.
# --------------------------------------------------------------------------------------


def batch_pmf_tail(batch, n: int, bk: Backend):
    """l_0..l_n (l_0 = 0) and lbar_0..lbar_n, lbar_i = P(X > i), as positive backend vectors."""
    return _pmf_tail(batch, n, bk)


@singledispatch
def _pmf_tail(batch, n, bk):
    raise ParameterError(f"no numeric values for the batch law {batch!r}: choose a concrete batch law")


@_pmf_tail.register
def _(batch: _b.Geometric, n, bk):
    p = bk.num(batch.p)
    q = bk.num(1 - batch.p)
    pmf = [bk.num(0)] + [p * q ** (i - 1) for i in range(1, n + 1)]
    tail = [q**i for i in range(n + 1)]
    return bk.array(pmf), bk.array(tail)


@_pmf_tail.register(_b.Constant)
@_pmf_tail.register(_b.FinitePMF)
def _(batch, n, bk):
    sizes = dict(batch.probs) if isinstance(batch, _b.FinitePMF) else {batch.n: 1}
    pmf = [bk.num(sizes.get(i, 0)) for i in range(n + 1)]
    tail = [bk.num(sum((p for s, p in sizes.items() if s > i), 0)) for i in range(n + 1)]
    return bk.array(pmf), bk.array(tail)


@_pmf_tail.register
def _(batch: _b.ShiftedPoisson, n, bk):
    terms, tail, _ = _count_terms(_c.PoissonCount(batch.nu), max(n - 1, 0), bk)
    # X = 1 + Y: P(X = i) = P(Y = i - 1), P(X > i) = P(Y > i - 1)
    pmf = [bk.num(0)] + list(terms[: n])
    lbar = [bk.num(1)] + list(tail[: n])
    return bk.array(pmf), bk.array(lbar)


def _shift(bk, v, by):
    out = bk.zeros(len(v))
    if by < len(v):
        out[by:] = v[: len(v) - by]
    return out


def _convolution_columns(batch, n, bk):
    """Yield (k, l^{(k)}, T_k) for k = 1, 2, ... with vectors over 0..n (T_k(n) = P(S_k > n)).

    Generic recurrences with positive terms only:
    l^{(k)} = l * l^{(k-1)},  T_k = T_{k-1} + l^{(k-1)} * lbar  (the k-th batch crosses n).
    Geometric batches use the closed Pascal form, O(n) per k.
    """
    if isinstance(batch, _b.Geometric):
        p, q = bk.num(batch.p), bk.num(1 - batch.p)
        idx = np.arange(n + 2)
        col = bk.zeros(n + 2)  # l^{(k)}_m for m = 0..n+1
        # k = 1: l_m = p q^{m-1}
        for m in range(1, n + 2):
            col[m] = p * q ** (m - 1)
        T = bk.zeros(n + 1)
        k = 1
        while True:
            # T_k(m) = T_{k-1}(m) + P(Bin(m, p) = k - 1) = T_{k-1}(m) + l^{(k)}_{m+1} / p
            T = T + col[1 : n + 2] / p
            yield k, col[: n + 1], T
            if k >= n:
                return
            # l^{(k+1)}_m = l^{(k)}_{m-1} * p (m - 1) / k
            new = bk.zeros(n + 2)
            factors = (idx[k + 1 :] - 1) if bk.is_float64 else [mpmath.mpf(int(v) - 1) for v in idx[k + 1 :]]
            new[k + 1 :] = col[k : n + 1] * p * np.asarray(factors, dtype=col.dtype) / k
            col = new
            k += 1
    pmf, lbar = _pmf_tail(batch, n, bk)
    support = [i for i in range(1, n + 1) if pmf[i] != 0]
    tail_support = [j for j in range(n + 1) if lbar[j] != 0]
    prev = bk.zeros(n + 1)
    prev[0] = bk.num(1)
    T = bk.zeros(n + 1)
    k = 0
    while True:
        k += 1
        cross = bk.zeros(n + 1)
        for j in tail_support:
            cross = cross + _shift(bk, prev, j) * lbar[j]
        T = T + cross
        col = bk.zeros(n + 1)
        for i in support:
            col = col + _shift(bk, prev, i) * pmf[i]
        yield k, col, T
        if k >= n or not any(v != 0 for v in col):
            return
        prev = col


#: columns are reused across calls in mpmath mode, where building them dominates (a figure grid
#: evaluates the same batch law at many loads and for both service and vacation); bounded so
#: the cache stays small: n <= 400 and at most 4 (batch law, n, precision) entries
_COLUMN_CACHE: dict = {}
_COLUMN_CACHE_MAX_N = 400
_COLUMN_CACHE_SIZE = 4


def _columns(batch, n: int, bk: Backend):
    """The (k, l^{(k)}, T_k) columns of :func:`_convolution_columns`, cached in mpmath mode."""
    if bk.is_float64 or n > _COLUMN_CACHE_MAX_N:
        return _convolution_columns(batch, n, bk)
    key = (batch, n, bk.dps)
    cols = _COLUMN_CACHE.get(key)
    if cols is None:
        cols = list(_convolution_columns(batch, n, bk))
        if len(_COLUMN_CACHE) >= _COLUMN_CACHE_SIZE:
            _COLUMN_CACHE.pop(next(iter(_COLUMN_CACHE)))
        _COLUMN_CACHE[key] = cols
    return cols


@dataclass(frozen=True)
class ArrivalCounts:
    """Customers arriving during one random time (``spec/chapter2.md`` section 0), n = 0..N.

    ``a[n] = P(n arrive)``, ``abar[n] = P(more than n arrive)``,
    ``u[n]`` = expected time with exactly n arrivals so far, ``ubar[n] = sum_{m>=n} u[m]``,
    ``beta`` the count sequence of batches (beta_k and tails).
    """

    a: np.ndarray
    abar: np.ndarray
    u: np.ndarray
    ubar: np.ndarray
    counts: CountSequence


def arrival_counts(time_law, batch, lam, n: int, bk: Backend) -> ArrivalCounts:
    """a_n, abar_n, u_n, Ubar_n for n = 0..N, as sums of positive terms.

    a_n    = sum_{k<=n} beta_k l^{(k)}_n
    abar_n = sum_{1<=k<=n} beta_k P(S_k > n) + tau_n
    u_n    = (1/lam) sum_{k<=n} tau_k l^{(k)}_n
    Ubar_m = (1/lam) [ sum_{1<=k<m} tau_k P(S_k > m-1) + sum_{k>=m} tau_k ]   (m >= 1), Ubar_0 = E T.

    Call inside ``with bk:``. ``lam`` is exact (SymPy number).
    """
    if n < 0:
        raise ValueError(f"n = {n}: must be >= 0")
    cs = count_sequence(time_law, lam, n, bk)
    lam_n = bk.num(lam)
    beta, tau, tau2 = cs.beta, cs.tail, cs.tail2
    a = bk.zeros(n + 1)
    abar = bk.zeros(n + 1)
    u = bk.zeros(n + 1)
    ubar = bk.zeros(n + 1)
    a[0] = beta[0]
    u[0] = tau[0]
    last_k = 0
    for k, col, T in _columns(batch, n, bk):
        last_k = k
        if beta[k] == 0 and tau[k] == 0:
            break
        a = a + col * beta[k]
        abar = abar + T * beta[k]
        u = u + col * tau[k]
        # Ubar_m gets tau_k P(S_k > m - 1) for m = 1..n
        ubar[1:] = ubar[1:] + T[:-1] * tau[k]
    # every k > last_k has P(S_k > m) = 1 for all m <= n (S_k >= k > n, or the column
    # vanished): they add sum_{k>last_k} beta_k to abar and sum_{k>last_k} tau_k to Ubar.
    abar = abar + tau[last_k]
    ubar[1:] = ubar[1:] + tau2[last_k]
    u = u / lam_n
    ubar = ubar / lam_n
    ubar[0] = bk.num(time_law.moment(1))  # sum_n u_n = E T
    return ArrivalCounts(a, abar, u, ubar, cs)
