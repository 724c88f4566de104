"""Numpy-only runtime of the finite vacation queue M[X]/G/1/r, copied into generated code.

``qderive codegen vacation-finite`` pastes this file (without this docstring) into a
standalone module and appends the generated closed forms of the model's inputs and the
public function. It therefore imports nothing but numpy and math. It is a float64
transcription of the in-package engine (``qderive.numeric.sequences``,
``qderive.numeric.cut``, ``qderive.numeric.vacation``, partial admission), following the
same stable pipeline (``spec/chapter2.md`` section 4): every tail is a sum of positive
terms, the embedded law comes from the cut recursion (2b), p^r_r from (10) and the loss
from the direct sum of Theorem 1.1 (12). Its results are compared with ``qderive eval``
by ``tests/test_codegen_recursions.py``.
"""

import math

import numpy

_EPS = float(numpy.finfo(numpy.float64).eps) / 256
_TINY = float(numpy.finfo(numpy.float64).tiny)
_RESCALE_AT = 2.0**600


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


# ---- the finite system (spec/chapter2.md section 2) ------------------------------------------


def finite_measures(lam, batch_law, service_counts, b1, vacation_counts, f1, capacities):
    """Every measure of M[X]/G/1/r with multiple vacations (partial admission) for each r in ``capacities``.

    ``batch_law(n)`` -> :class:`_Batch`; ``service_counts(n)`` / ``vacation_counts(n)`` ->
    (beta, tails, second tails) of the batches arriving during a service / vacation
    (``vacation_counts`` None: no vacations, the classic M[X]/G/1/r); ``b1`` / ``f1`` mean
    service / vacation time. Returns a dict measure -> list over ``capacities``; the sequences are
    computed once up to max r, so a sweep costs about as much as its largest capacity.
    """
    rs = [int(r) for r in capacities]
    lowest = 1 if vacation_counts is not None else 0
    for r in rs:
        _require(r >= lowest, "r", r, f"an integer >= {lowest}" + (" with vacations" if lowest else ""))
    n = max(max(rs) + 1, 16)
    batch = batch_law(n + 1)
    _, abar, u, ubar = sv = _arrival_counts(service_counts(n), batch, lam, n, b1)
    a0 = sv[0][0]
    if vacation_counts is not None:  # (2b) with the vacation counts, (9)/(10) with v_n, Vbar_n
        _, cbar, w, wbar = _arrival_counts(vacation_counts(n), batch, lam, n, f1)
        idle, not_serving, services = 0.0, f1, 0
    else:  # idle (mean 1/lambda), then one service starting with X - 1 waiting: C(z) = A(z) L(z) / z
        shifted = batch.pmf[1 : n + 2]
        cbar = _conv(shifted, abar, n) + batch.tail[1 : n + 2]
        w = _conv(shifted, u, n)
        wbar = numpy.zeros(n + 1)
        wbar[0] = b1
        wbar[1:] = _conv(shifted, ubar[1:], n - 1) + batch.tail[1 : n + 1] * b1
        idle = not_serving = 1 / lam
        services = 1
    # (2b): a_0 q~_{j+1} = q~_0 cbar_j + sum_{i=1}^{j} q~_i abar_{j-i+1}, rescaled by powers of two
    q = numpy.zeros(n + 1)
    q[0] = 1.0
    for j in range(n):
        s = q[0] * cbar[j] + (numpy.dot(q[1 : j + 1], abar[j:0:-1]) if j >= 1 else 0.0)
        q[j + 1] = s / a0
        if q[j + 1] > _RESCALE_AT:
            q[: j + 2] = numpy.ldexp(q[: j + 2], -int(numpy.frexp(q[j + 1])[1]))
    t = q[0] * w[:n] + _conv(q[1 : n + 1], u, n - 1)  # (13): level times, valid for j < r
    # every capacity at once; each sum below has positive terms only (convolutions, cumulative sums)
    R = numpy.array(rs)
    below = numpy.maximum(R - 1, 0)  # index of the convolution holding sum_{i=1}^{r} (empty for r = 0)
    some = R >= 1
    q0, e = q[0], batch.excess
    # (10): the top level without cancellation, with Vbar_r and Ubar_{r-i+1}
    top = q0 * wbar[R] + numpy.where(some, _conv(q[1 : n + 1], ubar[1 : n + 1], n - 1)[below], 0.0)
    s1 = numpy.concatenate([[0.0], numpy.cumsum(q[1:])])[R]  # sum_{i=1}^{r} q~_i
    t_busy = b1 * (q0 * services + s1)
    T = q0 * not_serving + t_busy  # mean cycle (renewal reward), common scale of every time below
    # Theorem 1.1 (12): pi = sum_j p^r_j E(X - (r - j))^+ / l_1, and an idle server takes one more
    lost = (numpy.where(some, _conv(t, e[1 : n + 1], n - 1)[below], 0.0) + top * e[0] + q0 * idle * e[R + 1]) / T
    nq = (numpy.concatenate([[0.0], numpy.cumsum(numpy.arange(n) * t)])[R] + R * top) / T
    busy = t_busy / T
    throughput = busy / b1
    p0 = (numpy.where(some, t[0], top) + q0 * idle) / T
    qsum = q0 + s1
    values = {
        "loss_probability": lost / batch.l1,
        "batch_blocking_probability": top / T,
        "idle_probability": q0 * not_serving / T,
        "mean_queue_length": nq,
        "mean_wait": nq / throughput,
        "mean_number_in_system": nq + busy,
        "throughput": throughput,
        "p0": p0,
        "pr": numpy.where(some, top / T, p0),
        "q0": q0 / qsum,
        "qr": q[R] / qsum,
    }
    return {key: [float(v) for v in numpy.broadcast_to(value, R.shape)] for key, value in values.items()}


def _capacities(r):
    """``r`` as a list of integers, and whether it was a single one."""
    single = numpy.ndim(r) == 0
    values = [r] if single else list(numpy.asarray(r).ravel())
    for v in values:
        _require(float(v) == int(v), "r", v, "an integer (waiting places, the customer in service not counted)")
    return [int(v) for v in values], single
