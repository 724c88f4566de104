"""Numpy-only runtime shared by generated modules: count laws, batch laws, arrival counts.

Copied first into the modules written by ``qderive codegen vacation-finite`` and
``qderive codegen hysteretic`` (then :mod:`qderive.derivations._runtime_vacation_finite` or
:mod:`qderive.derivations._runtime_hysteretic`, which use these functions). It imports
nothing but numpy and math. A float64 transcription of ``qderive.numeric.sequences``
(``spec/chapter2.md`` sections 0, 3, 4): the Poisson-mixing probabilities beta_k of the count
law of a time, their tails with a certified remainder, the k-fold batch convolutions by
positive recurrences (Pascal's rule for geometric batches), and a_n, abar_n, u_n, Ubar_n as
sums of positive terms -- never ``1 - cumulative sum``.
"""

import math

import numpy

_EPS = float(numpy.finfo(numpy.float64).eps) / 256
_TINY = float(numpy.finfo(numpy.float64).tiny)


def _require(ok, name, value, constraint):
    """Raise ValueError naming the parameter and its constraint unless ``ok``."""
    if not ok:
        raise ValueError(f"{name} = {value!r}: must be {constraint}")


def _positive(name, value):
    value = float(value)
    _require(math.isfinite(value) and value > 0, name, value, "a finite number > 0")
    return value


# ---- counts of batches arriving during one time (spec/chapter2.md section 3) --------------


def _terms_and_tails(first, next_term, n, ratio_bound):
    """Terms t_0..t_n, tails sum_{i>k} t_i and second tails sum_{i>k} tail_i (backward sums).

    The sequence is extended beyond n until the remainder, bounded by t_K rho / (1 - rho)
    with rho >= t_{i+1}/t_i for all later i, is negligible.
    """
    terms = list(first)
    i = len(terms)
    while i <= n:
        terms.append(next_term(i, terms[-1]))
        i += 1
    partial = 0.0
    limit = 10 * n + 100000
    while True:
        t = next_term(i, terms[-1])
        terms.append(t)
        partial += t
        rho = ratio_bound(i)
        if rho < 1 and (t == 0 or t < _TINY or t * rho / (1 - rho) <= _EPS * partial):
            break
        i += 1
        if i > limit:
            raise ValueError("the arrival-count sequence decays too slowly to sum its tail")
    rho = ratio_bound(i)
    remainder = terms[-1] * rho / (1 - rho) if rho < 1 else 0.0
    size = len(terms)
    tail = [0.0] * size
    tail2 = [0.0] * size
    acc = remainder
    acc2 = remainder * rho / (1 - rho) if rho < 1 else 0.0
    for k in range(size - 1, -1, -1):
        tail[k] = acc
        tail2[k] = acc2
        acc += terms[k]
        acc2 += tail[k]
    return (numpy.array(terms[: n + 1]), numpy.array(tail[: n + 1]), numpy.array(tail2[: n + 1]))


def _poisson_counts(x, n):
    """K ~ Poisson(x): beta_k = e^{-x} x^k / k! (a deterministic time, x = lambda d)."""
    if x > 600:
        raise ValueError(f"lambda * d = {x:.4g}: a deterministic time with this many arrivals underflows float64")
    return _terms_and_tails([math.exp(-x)], lambda i, prev: prev * x / i, n, lambda i: x / (i + 1))


def _negbin_counts(a, p0, q, n):
    """K ~ NegBin(a, p0): beta_k = Gamma(k + a)/(Gamma(a) k!) p0^a q^k, q = 1 - p0 (gamma times)."""
    return _terms_and_tails([p0**a], lambda i, prev: prev * q * (i - 1 + a) / i, n,
                            lambda i: max(q * (i + a) / (i + 1), q))


def _mixture_counts(weights, parts):
    """A finite mixture of count laws (hyperexponential times): weighted sums of terms and tails."""
    return tuple(sum(w * p[j] for w, p in zip(weights, parts)) for j in range(3))


# ---- batch laws: pmf l_i, tail P(X > i), excess E(X - m)^+ over 0..n ------------------------


class _Batch:
    """Batch-size law over 0..n: ``pmf``, ``tail`` P(X > i), ``excess`` e_m = E (X - m)^+, mean ``l1``;
    ``geometric`` = (p, q) for geometric batches (Pascal columns)."""

    def __init__(self, pmf, tail, excess, l1, geometric=None):
        self.pmf, self.tail, self.excess, self.l1, self.geometric = pmf, tail, excess, l1, geometric


def geometric_batch(mean, n):
    """Geometric batches on {1, 2, ...} with mean l1: l_i = p q^{i-1}, p = 1/l1; e_m = l1 q^m."""
    mean = float(mean)
    _require(math.isfinite(mean) and mean >= 1, "batch_mean", mean, "a finite number >= 1")
    p, q = 1 / mean, (mean - 1) / mean
    i = numpy.arange(n + 1)
    pmf = numpy.where(i >= 1, p * q ** numpy.maximum(i - 1, 0), 0.0)
    return _Batch(pmf, q**i, mean * q**i, mean, (p, q))


def constant_batch(size, n):
    """Batches of exactly ``size`` customers."""
    _require(float(size) == int(size) and int(size) >= 1, "batch_size", size, "an integer >= 1")
    return pmf_batch([0.0] * (int(size) - 1) + [1.0], n)


def pmf_batch(probs, n):
    """Batch sizes 1..M with probabilities ``probs`` = (l_1, ..., l_M), summing to 1."""
    probs = numpy.asarray(probs, dtype=float).ravel()
    _require(probs.size >= 1 and numpy.all(numpy.isfinite(probs)) and numpy.all(probs >= 0), "batch_pmf",
             probs.tolist(), "a non-empty sequence of probabilities >= 0")
    _require(abs(math.fsum(probs) - 1) <= 1e-12, "batch_pmf", probs.tolist(), "probabilities summing to 1")
    top = probs.size
    full = numpy.zeros(max(n, top) + 2)
    full[1 : top + 1] = probs
    tail = numpy.zeros_like(full)
    excess = numpy.zeros_like(full)
    for m in range(min(n, top) + 1):  # positive sums over the sizes above m
        tail[m] = math.fsum(full[m + 1 :])
        excess[m] = math.fsum((numpy.arange(m + 1, full.size) - m) * full[m + 1 :])
    return _Batch(full[: n + 1], tail[: n + 1], excess[: n + 1], math.fsum(numpy.arange(full.size) * full))


def poisson1_batch(mean, n):
    """X = 1 + Poisson(nu), nu = mean - 1: l_i = P(Y = i - 1); e_0 = mean, e_m = P(Y > m-1) + sum_{i>m-1} P(Y > i)."""
    mean = float(mean)
    _require(math.isfinite(mean) and mean >= 1, "batch_mean", mean, "a finite number >= 1")
    terms, tail, tail2 = _poisson_counts(mean - 1, max(n - 1, 0))
    pmf = numpy.concatenate([[0.0], terms[:n]])
    lbar = numpy.concatenate([[1.0], tail[:n]])
    excess = numpy.zeros(n + 1)
    excess[0] = mean
    excess[1:] = tail[:n] + tail2[:n]
    return _Batch(pmf, lbar, excess, mean)


def _columns(batch, n):
    """(k, l^{(k)}, T_k) for k = 1, 2, ... over 0..n, T_k(m) = P(S_k > m), by positive recurrences."""
    if batch.geometric is not None:
        p, q = batch.geometric
        idx = numpy.arange(n + 2)
        col = numpy.zeros(n + 2)
        col[1:] = p * q ** (idx[1:] - 1)
        T = numpy.zeros(n + 1)
        k = 1
        while True:
            T = T + col[1 : n + 2] / p  # T_k(m) = T_{k-1}(m) + P(Bin(m, p) = k - 1)
            yield k, col[: n + 1], T
            if k >= n:
                return
            new = numpy.zeros(n + 2)  # l^{(k+1)}_m = l^{(k)}_{m-1} p (m - 1) / k  (Pascal)
            new[k + 1 :] = col[k : n + 1] * p * (idx[k + 1 :] - 1) / k
            col = new
            k += 1
    pmf, lbar = batch.pmf[: n + 1], batch.tail[: n + 1]
    support = [i for i in range(1, n + 1) if pmf[i] != 0]
    tail_support = [j for j in range(n + 1) if lbar[j] != 0]
    prev = numpy.zeros(n + 1)
    prev[0] = 1.0
    T = numpy.zeros(n + 1)
    k = 0
    while True:
        k += 1
        cross = numpy.zeros(n + 1)  # the k-th batch crosses m: T_k = T_{k-1} + l^{(k-1)} * lbar
        for j in tail_support:
            cross[j:] += prev[: n + 1 - j] * lbar[j]
        T = T + cross
        col = numpy.zeros(n + 1)
        for i in support:
            col[i:] += prev[: n + 1 - i] * pmf[i]
        yield k, col, T
        if k >= n or not col.any():
            return
        prev = col


def _arrival_counts(counts, batch, lam, n, mean_time):
    """a_n, abar_n, u_n, Ubar_n for customers arriving during one time (spec/chapter2.md section 0).

    a_n = sum_k beta_k l^{(k)}_n; abar_n = sum_k beta_k P(S_k > n) + tau_n;
    u_n = (1/lambda) sum_k tau_k l^{(k)}_n; Ubar_m = sum_{i >= m} u_i, Ubar_0 = E T.
    """
    beta, tau, tau2 = counts
    a, abar, u, ubar = (numpy.zeros(n + 1) for _ in range(4))
    a[0] = beta[0]
    u[0] = tau[0]
    last_k = 0
    for k, col, T in _columns(batch, n):
        last_k = k
        if beta[k] == 0 and tau[k] == 0:
            break
        a += col * beta[k]
        abar += T * beta[k]
        u += col * tau[k]
        ubar[1:] += T[:-1] * tau[k]
    abar += tau[last_k]
    ubar[1:] += tau2[last_k]
    u /= lam
    ubar /= lam
    ubar[0] = mean_time
    return a, abar, u, ubar


def _conv(x, y, n):
    return numpy.convolve(x[: n + 1], y[: n + 1])[: n + 1]
