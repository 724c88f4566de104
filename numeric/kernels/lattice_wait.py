"""Exact tails of the wait with a constant service time D: the generalised Erlang (Prabhu) sum on the lattice of D.

Every formula below holds for a service law on a lattice h (values m h with probabilities b_m, b_0 = 0) with D
replaced by h, L(z) by L(b(z)) (the batch work) and P_K(z) by P_K(b(z)) (the own batch ahead); the proof of (L2)
is word for word the same, the transform becoming (1 - rho) P_K(B(s)) / (s - lambda + lambda L(B(s))),
B(s) = b(e^{-s h}). The caller passes the composed vectors (:func:`lattice_table`'s ``pmf`` and ``start``,
from :func:`qderive.numeric.kernels.lattice_service.compose`); a constant D is b(z) = z, the same code.

With constant service D the wait W = V + J + R of a random customer (the decomposition of
``symbolic/closed_forms/vacation_wait.py``: V the batch-level workload of M[X]/D/1, J = D K the
services of the earlier members of the own batch, P(K = n) = P(X > n) / l_1, R the residual vacation)
has kinks and atoms on the lattice D N, so its transform cannot be inverted by contour methods to
many digits. Its distribution is a finite sum instead. With A(v) the number of customers arriving in
time v (compound Poisson: E z^{A(v)} = exp(lambda v (L(z) - 1))) and P_K(z) = (1 - L(z)) / (l_1 (1 - z)),

    c_m(v) = [z^m] P_K(z) exp(lambda v (L(z) - 1)) = e^{-lambda v} sum_{n=0}^{m} h_{n,m} (lambda v)^n / n!,
    h_{n,m} = [z^m] P_K(z) L(z)^n,                                                                  (L1)

    P(V + J <= y) = (1 - rho) sum_{m=0}^{floor(y/D)} c_m(m D - y)      (y >= 0),                    (L2)

analytically continued to the negative arguments m D - y <= 0 (Erlang's M/D/1 formula for X = 1,
Prabhu's for batches). Proof: the Laplace transform in y of the right side is, term by term,
(1 - rho) sum_m e^{-s m D} int_0^oo e^{-s u} c_m(-u) du and sum_m z^m c_m(-u) = P_K(z) e^{lambda u (1 - L(z))},
so it is (1 - rho) P_K(e^{-sD}) / (s - lambda + lambda L(e^{-sD})): the transform W_b(s) J(s) / s.

**The residual** R has an atom a_0 at 0 and the density w_c S(x), S the survival function of the vacation
(multiple vacations: a_0 = 0, w_c = 1 / f_1; single: a_0 = c_0 / (lambda f_1 + c_0),
w_c = lambda / (lambda f_1 + c_0); none: a_0 = 1, w_c = 0). Conditioning (L2) on R::

    P(W <= t) = (1 - rho) sum_{m=0}^{floor(t/D)} sum_{n=0}^{m} h_{n,m} (-lambda)^n omega_n(t - m D),          (L3)
    omega_n(u) = E[ e^{lambda (u - R)} (u - R)^n / n! ; R <= u ]
               = a_0 e^{lambda u} u^n / n! + w_c int_0^u e^{lambda y} y^n / n! S(u - y) dy.

For a survival function that is a mixture of exponential pieces cut at a point,
S(x) = sum_i w_i e^{-theta_i x} 1{x < d_i} (an exponential or hyperexponential law: d_i = oo; a
constant d: theta = 0; an empirical law: one constant per sample point), the integral is::

    sum_i w_i e^{-theta_i u} [ E_n(u; lambda + theta_i) - E_n((u - d_i)^+; lambda + theta_i) ],
    E_n(y; mu) = int_0^y e^{mu x} x^n / n! dx = y^{n+1} / n! sum_{k>=0} (mu y)^k / (k! (n + k + 1)),     (L4)

a series of positive terms (stopped when k > 2 mu y, where the ratio of terms is below 1/2, and the
next term is below eps of the sum: remainder below 2 eps relative), used for the top index; the others
by the recurrence E_n = a_n - E_{n-1} / mu run in its stable direction (:func:`incomplete_exponential_moments`).

**Matrix-exponential pieces.** A phase-type vacation (Erlang, Coxian, PH(alpha, T)) has the survival function
S(x) = alpha e^{T x} 1 = e^{-theta x} alpha e^{theta P x} 1, uniformized: theta = max_i |T_ii| and
P = I + T / theta >= 0 entrywise (substochastic), so no eigenvalue of T is needed and nothing is subtracted.
For such a piece (a weight w, theta, no cut and (alpha, P)) the integral is w e^{-theta u} I_n(u) with::

    I_n(u) = int_0^u e^{mu y} y^n / n! alpha e^{theta P (u - y)} 1 dy = (u^n / n!) sum_{k>=0} e_k Phi^(n + k),
    e_k = (mu u)^k / k!,   Phi^(p) = alpha phi^(p),                                                   (L5)
    phi^(p) = p! / u^p int_0^u y^p / p! e^{theta P (u - y)} 1 dy = sum_j (theta P)^j 1 u^{j+1} p! / (p + j + 1)!,
    phi^(p) = u / (p + 1) (1 + theta P phi^(p + 1))      (backward, positive terms only),

(expand e^{mu y} in powers of y and use the Beta integral int_0^u y^a (u - y)^j dy = a! j! u^{a+j+1} / (a+j+1)!).
The backward recurrence starts from phi^ = 0 at an index p_0 >= 2 theta u past the last one needed, where the
product of the factors theta u / (p + 1) <= 1/2 is below eps (the dropped part is then below eps relative); the
series in k stops when k > 2 mu u and e_k is below eps / 4 of the sum of the e's (Phi^ decreases in p, so
the remainder is below eps / 2 relative). Every step adds positive numbers: a step adds at most
(n_phases + 4) eps to the relative error of phi^, and for p >= 2 theta u (where theta P phi^(p + 1) <= 1/2)
it passes on at most a third of the error from above, so the relative rounding error of I_n is below
((min(p_max, 2 theta u) + 3) (n_phases + 4) + 2 k + n + n_phases + 5) eps; that count enters C below
(:func:`matrix_exponential_moments`). An Erlang-k law gives P the shift matrix (nilpotent).

**Cancellation.** (L3) alternates (the (-lambda)^n), and P(W > t) = 1 - P(W <= t) subtracts again: the
sum of the absolute values M = 1 + (1 - rho) sum |terms| grows like e^{lambda t} (M/D/1 at rho = 0.8,
t = 40.5 D: M = 4e13 for a tail of 2.3e-8). Every term is a product and positive sums of context
numbers, so the rounding error is at most C eps M with C = 4 (k_max + 2 m_max + 10) (k_max: the largest
term count of (L4) or (L5) used); the kernel returns
this bound with the tail, and the caller chooses the working precision from it (the tail to D digits
needs D + log10(C M / tail) digits), or, in float64, escalates when the bound exceeds the tolerance.

Cost: the table h is O(K^3) once (K = floor(t/D); the rows are convolutions with the batch pmf,
closed form p^{n+1} binom(m, n) q^{m-n} for geometric batches), a tail O(K^2 (mu t + digits)).

**Cell polynomials.** A quadrature against the lattice part (:func:`convolution_tail`) needs P(V + J > y) at
many points y of every cell; on cell j the sum (L2) is one polynomial in s = y - j D times e^{lambda s}, whose
coefficients follow from those of cell j - 1 by a shift (L6, :func:`lattice_cell_table`): O(K^3) once for all
cells (kept for a whole quantile search), then O(K) per point (:func:`lattice_cell_tails`) instead of O(K^2).
"""

import math

import numpy


def lattice_table(ctx, pmf, start, K, geometric=None, support=None, twin_numbers=False):
    """h_{n,m} = [z^m] P_K(z) L(z)^n for 0 <= n, m <= K (L1): row 0 is ``start`` (P(X > m) / l_1), row n the
    convolution of row n - 1 with the batch ``pmf`` (pmf[0] = 0, so h_{n,m} = 0 for m < n; over the sizes of
    ``support`` only when the law has finitely many: O(K^2 |support|)). ``geometric`` = (p, q): the closed
    form h_{n,m} = p^{n+1} binom(m, n) q^{m-n} (P_K L^n = p^{n+1} z^n / (1 - q z)^{n+1}). A context with a
    ``twin()`` runs it there (``twin_numbers``: the table kept as the twin's numbers, which
    :func:`lattice_wait_tail` and :func:`lattice_cell_table` take as they are: converting K^2 entries back and forth
    costs more than the table, 2.6 s at K = 900)."""
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:
        with twin:
            h = lattice_table(twin, twin.from_mp(pmf[: K + 2]), twin.from_mp(start[: K + 1]), K,
                              None if geometric is None else tuple(twin.from_mp(numpy.array(geometric, dtype=object))),
                              support)
            return h if twin_numbers else twin.to_mp(h)
    h = ctx.zeros((K + 1, K + 1))
    if geometric is not None:
        p, q = geometric
        for m in range(K + 1):  # Pascal's rule: h_{n,m} = q h_{n,m-1} + p h_{n-1,m-1}, positive terms
            h[0, m] = p * q**m if m else p
            for n in range(1, m + 1):
                h[n, m] = q * h[n, m - 1] + p * h[n - 1, m - 1]
        return h
    h[0] = start[: K + 1]
    if support is not None:
        for n in range(1, K + 1):
            for size in support:
                if 1 <= size <= K:
                    h[n, size:] = h[n, size:] + h[n - 1, : K + 1 - size] * pmf[size]
        return h
    for n in range(1, K + 1):
        a = h[n - 1, n - 1:]
        b = pmf[1: K - n + 2]
        h[n, n:] = numpy.convolve(a, b)[: K - n + 1]
    return h


def incomplete_exponential_moments(ctx, y, mu, N):
    """(E_0(y; mu), ..., E_N(y; mu)) of (L4) and the number of series terms used; y, mu >= 0 context numbers.

    With a_n = e^{mu y} y^n / (mu n!), integration by parts gives E_n = a_n - E_{n-1} / mu: run forward from
    E_0 = expm1(mu y) / mu for n <= mu y (the subtracted part is the smaller one there) and backward,
    E_{n-1} = mu (a_n - E_n), from E_N by the positive series (L4) for n > mu y (again the smaller part is
    subtracted). Measured in float64 against the series at 60 digits: 1.1e-15 relative at worst (mu y from
    0.5 to 80, n <= 60)."""
    out = ctx.zeros(N + 1)
    if y == 0:
        return out, 0
    x = mu * y
    a = ctx.zeros(N + 1)
    a[0] = ctx.exp(x) / mu
    for n in range(1, N + 1):
        a[n] = a[n - 1] * y / n
    n0 = min(N, int(math.floor(x)))
    out[0] = ctx.expm1(x) / mu
    for n in range(1, n0 + 1):
        out[n] = a[n] - out[n - 1] / mu
    k = 0
    if N > n0:
        one = ctx.num(1)
        term, total = one, ctx.num(0)
        while True:
            total = total + term / (N + k + 1)
            k += 1
            term = term * x / k
            if k > 2 * x and 2 * term / k <= ctx.eps * total:
                break
        lead = y
        for n in range(1, N + 1):
            lead = lead * y / n
        out[N] = lead * total
        for n in range(N, n0 + 1, -1):
            out[n - 1] = mu * (a[n] - out[n])
    return out, k


def matrix_exponential_moments(ctx, us, mu, theta, alpha, P):
    """For each u_m of ``us``: (I_0(u_m), ..., I_m(u_m)) of (L5); and the largest term count entering the rounding
    bound. ``us``, ``mu``, ``theta`` >= 0 context numbers, ``alpha`` a context vector and ``P`` a context matrix
    (nonnegative, substochastic).

    I_n(u) = int_0^u e^{mu y} y^n / n! alpha e^{theta P (u - y)} 1 dy by the positive series and backward
    recurrence of the module docstring (L5): no subtraction anywhere. The recurrence runs once for all the u_m
    (a matrix of phi^ columns). A context with a ``twin()`` (mpmath: gmpy2 numbers at the same precision, the
    same correctly rounded operations) runs it there."""
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:
        with twin:
            values, count = matrix_exponential_moments(twin, list(twin.from_mp(numpy.array(us, dtype=object))),
                                                       *twin.from_mp(numpy.array([mu, theta], dtype=object)),
                                                       twin.from_mp(alpha), twin.from_mp(P))
            return [twin.to_mp(v) for v in values], count
    one, eps = ctx.num(1), ctx.eps
    n_ph, n_u = len(alpha), len(us)
    series, top, count = [], 0, 0
    for m, u in enumerate(us):
        if u == 0:
            series.append(None)
            continue
        x = mu * u
        e = [one]  # e_k = (mu u)^k / k!
        total, k = one, 0
        while True:
            k += 1
            e.append(e[-1] * x / k)
            total = total + e[-1]
            if k > 2 * x and 4 * e[-1] <= eps * total:
                break
        series.append(e)
        need, tu = m + k, float(theta * u)  # Phi^(p) for p = 0..need
        start, factor = max(need, int(math.ceil(2 * tu))), 1.0
        while factor > float(eps):
            start += 1
            factor *= tu / (start + 1)
        top = max(top, start)
        count = max(count, (min(need, int(math.ceil(2 * tu))) + 3) * (n_ph + 4) + 2 * k + m + n_ph + 5)
    needs = [m + len(e) - 1 for m, e in enumerate(series) if e is not None]
    p_max = max(needs, default=0)
    U = ctx.array(us).reshape(1, n_u)
    tP = P * theta
    phi = ctx.zeros((n_ph, n_u))
    phis = ctx.zeros((p_max + 1, n_u, n_ph))
    for p in range(top, -1, -1):  # phi^(p) = u / (p + 1) (1 + theta P phi^(p + 1)), every u at once
        phi = (numpy.dot(tP, phi) + one) * (U / (p + 1))
        if p <= p_max:
            phis[p] = phi.T
    Phis = ctx.matmul(phis.reshape((p_max + 1) * n_u, n_ph), alpha.reshape(n_ph, 1)).reshape(p_max + 1, n_u)
    out = []
    for m, (u, e) in enumerate(zip(us, series)):
        if e is None:
            out.append(ctx.zeros(m + 1))
            continue
        kmax = len(e) - 1
        window = numpy.lib.stride_tricks.sliding_window_view(Phis[: m + kmax + 1, m], kmax + 1)  # Phi^(n..n+kmax)
        sums = ctx.matmul(numpy.ascontiguousarray(window), ctx.array(e).reshape(kmax + 1, 1))[:, 0]
        g = ctx.zeros(m + 1) + one
        for n in range(1, m + 1):
            g[n] = g[n - 1] * u / n
        out.append(sums * g)
    return out, count


def lattice_wait_tail(ctx, h, us, lam, rho, atom, weight, pieces):
    """P(W > t) by (L3) with u_m = t - m D for m = 0..K (``us``, context numbers computed exactly by the
    caller), the table ``h`` of :func:`lattice_table`, the atom a_0 and weight w_c of R and its survival
    pieces ((w_i, theta_i, d_i or None for d_i = oo), ..., and matrix-exponential pieces
    (w_i, theta_i, None, (alpha_i, P_i)) of (L5)); weights w_i >= 0. Returns (tail, bound): the rounding error
    of the tail is below ``bound`` (module docstring: C eps M). A context with a ``twin()`` runs it there (about
    five times mpmath's speed: the M/D/1 tail near 1e-40 at t = 900 D sums 4e5 terms at 500 digits); ``h`` may
    be the twin's numbers already (:func:`lattice_table` with ``twin_numbers``)."""
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:
        with twin:
            def conv(*values):
                return list(twin.from_mp(numpy.array(values, dtype=object)))

            K = len(us) - 1
            parts = []
            for w, theta, d, *matrix in pieces:
                parts.append(tuple(conv(w, theta)) + (None if d is None else conv(d)[0],)
                             + tuple((twin.from_mp(a), twin.from_mp(P)) for a, P in matrix))
            tail, bound = lattice_wait_tail(twin, twin.from_mp(h[: K + 1, : K + 1]), conv(*us),
                                            *conv(lam, rho, atom, weight), parts)
            return tuple(twin.to_mp(numpy.array([tail, bound], dtype=object)))
    one = ctx.num(1)
    total, magnitude, k_max = ctx.num(0), ctx.num(0), 0
    K = len(us) - 1
    powers = ctx.zeros(K + 1)  # lambda^n
    powers[0] = one
    if K > 0:
        powers[1:] = numpy.multiply.accumulate(ctx.zeros(K) + lam)
    steps = ctx.zeros(K + 1)  # 1, 1/1, 1/2, ..., 1/K: u^n / n! = prod of u / j
    steps[0] = one
    if K > 0:
        steps[1:] = numpy.true_divide(one, ctx.array(range(1, K + 1)))  # never mpf (op) array
    batched = {}  # the (L5) moments of each matrix piece, for every u at once
    for j, (w, theta, d, *matrix) in enumerate(pieces):
        if matrix:
            batched[j], k1 = matrix_exponential_moments(ctx, us, lam + theta, theta, *matrix[0])
            k_max = max(k_max, k1)
    for m, u in enumerate(us):
        n = m + 1
        coef = h[:n, m] * powers[:n]  # h_{n,m} lambda^n (the sign (-1)^n below)
        omega = ctx.zeros(n)
        if atom != 0:
            g = steps[:n] * u
            g[0] = one
            g = numpy.multiply.accumulate(g)
            omega = omega + g * (atom * ctx.exp(lam * u))
        size = omega.copy()
        for j, (w, theta, d, *matrix) in enumerate(pieces):
            mu = lam + theta
            if matrix:  # (L5): positive, nothing to subtract
                value = batched[j][m]
                scale = weight * w * ctx.exp(-theta * u)
                omega = omega + value * scale
                size = size + value * scale
                continue
            upper, k1 = incomplete_exponential_moments(ctx, u, mu, m)
            rest = u - d if d is not None and u > d else ctx.num(0)
            lower, k2 = incomplete_exponential_moments(ctx, rest, mu, m)
            k_max = max(k_max, k1, k2)
            scale = weight * w * ctx.exp(-theta * u)
            omega = omega + (upper - lower) * scale
            size = size + (upper + lower) * scale
        signed = coef.copy()
        signed[1::2] = -signed[1::2]
        total = total + ctx.dot(signed, omega)
        magnitude = magnitude + ctx.dot(coef, size)
    cdf = (one - rho) * total
    M = one + (one - rho) * magnitude
    bound = 4 * (k_max + 2 * len(us) + 10) * ctx.eps * M
    return one - cdf, bound


def lattice_part_tails(ctx, h, ys, j, D, lam, rho, exps=None):
    """P(V + J > y) for the context vector ``ys`` of points in one lattice cell (j D <= y < (j + 1) D), with their
    rounding bounds: (L2) written as (L3) with R = 0 (a_0 = 1, omega_n(u) = e^{lambda u} u^n / n!), the nodes of
    a quadrature interval at once. The bound is the kernel's C eps M with C = 4 (3 j + 10) (no series; the
    factors e^{lambda (y - m D)} as products of j + 1 rounded numbers). A context
    with a ``twin()`` (mpmath: gmpy2 numbers at the same precision) runs it there (``exps``: the factors
    e^{lambda (y - m D)}, row m, computed before). The direct sum, O(j^2) per point: the quadrature uses the cell
    polynomials of :func:`lattice_cell_table` instead (the tests compare the two)."""
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:
        rows, step = [ctx.exp(ys * lam)], ctx.exp(-lam * D)  # e^{lambda y} e^{-lambda D m}: positive products
        for m in range(j):
            rows.append(rows[-1] * step)
        exps = numpy.array(rows, dtype=object)
        with twin:
            args = twin.from_mp(numpy.array([D, lam, rho], dtype=object))
            tails, bounds = lattice_part_tails(twin, twin.from_mp(h[: j + 1, : j + 1]), twin.from_mp(ys), j, *args,
                                               exps=twin.from_mp(exps))
            return twin.to_mp(tails), twin.to_mp(bounds)
    one = ctx.num(1)
    total, magnitude = ctx.zeros(len(ys)), ctx.zeros(len(ys))
    for m in range(j + 1):
        u = ys - D * m
        g = ctx.zeros(len(ys)) + one  # u^n / n!
        signed, size = g * h[0, m], g * h[0, m]
        power = one
        for n in range(1, m + 1):
            g = g * u / n
            power = power * lam
            term = g * (h[n, m] * power)
            signed = signed + (term if n % 2 == 0 else -term)
            size = size + term
        e = ctx.exp(u * lam) if exps is None else exps[m]  # array (op) number: never mpf (op) array
        total, magnitude = total + e * signed, magnitude + e * size
    return -(total * (one - rho)) + one, (magnitude * (one - rho) + one) * (4 * (3 * j + 10) * ctx.eps)


def lattice_cell_table(ctx, h, K, D, lam, grow=None, twin_numbers=False, before=None):
    """The lattice part on every cell j <= K as one polynomial: (C, Cabs), (K + 1) x (K + 1) context matrices with::

        sum_{m<=j} e^{lambda (j - m) D} sum_n h_{n,m} (-lambda)^n ((j - m) D + s)^n / n! = sum_k C[j, k] s^k / k!,
        C[j, k] = e^{lambda D} sum_{i>=0} C[j - 1, k + i] D^i / i! + h_{k,j} (-lambda)^k               (L6)

    (the cell j's sum is the cell j - 1's sum shifted by D, times e^{lambda D}, plus the term m = j), so that
    P(V + J <= j D + s) = (1 - rho) e^{lambda s} sum_k C[j, k] s^k / k! (0 <= s <= D) costs O(j) per point
    instead of the O(j^2) of (L2). ``Cabs`` is the same recurrence on |h_{k,j}| lambda^k: the magnitude M of
    (L3) (the binomial expansion of ((j - m) D + s)^n has positive terms). O(K^3) once (a correlation per row);
    the table for the largest K serves every smaller t of a quantile search (``twin_numbers``: kept as the
    twin's numbers, which :func:`lattice_cell_tails` takes as they are). Rounding: a row adds at most
    (3 j + 4) eps relative to Cabs (a correlation of length <= j with weights D^i / i! of relative error <= 2 i eps,
    the factor, the sum), so the entries err by at most (3 K^2 / 2 + 4 K) eps Cabs. ``before``: (C, Cabs) of the
    same table for cells 0..K' (K' < K; the same numbers and precision): its rows are kept and only the rows
    K' + 1..K are computed (row j needs row j - 1 alone: the same values as the whole table, at the cost of the
    new rows; a search whose t grows by a few cells pays for those cells only)."""
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:
        grow = ctx.exp(lam * D)
        with twin:
            if before is not None and not isinstance(before[0].flat[0], type(twin.num(0))):
                before = tuple(twin.from_mp(b) for b in before)
            C, Cabs = lattice_cell_table(twin, twin.from_mp(h[: K + 1, : K + 1]), K,
                                         *twin.from_mp(numpy.array([D, lam, grow], dtype=object)), before=before)
            return (C, Cabs) if twin_numbers else (twin.to_mp(C), twin.to_mp(Cabs))
    one = ctx.num(1)
    C, Cabs = ctx.zeros((K + 1, K + 1)), ctx.zeros((K + 1, K + 1))
    first = 0
    if before is not None:
        first = len(before[0])
        C[:first, :first], Cabs[:first, :first] = before
    w = ctx.zeros(K + 1) + one  # D^i / i!
    for i in range(1, K + 1):
        w[i] = w[i - 1] * D / i
    grow = ctx.exp(lam * D) if grow is None else grow
    power = ctx.zeros(K + 1) + one  # lambda^k
    for k in range(1, K + 1):
        power[k] = power[k - 1] * lam
    for j in range(first, K + 1):
        a = h[: j + 1, j] * power[: j + 1]
        signed = a.copy()
        signed[1::2] = -signed[1::2]
        if j:
            for row, out in ((C, signed), (Cabs, a)):  # sum_i row[j-1, k+i] w_i = correlate, by convolving the reverse
                r = row[j - 1, :j][::-1]
                out[:j] = out[:j] + numpy.convolve(r, w[:j])[:j][::-1] * grow
        C[j, : j + 1], Cabs[j, : j + 1] = signed, a
    return C, Cabs


def lattice_cell_tails(ctx, C, Cabs, ys, js, D, lam, rho, exps=None):
    """P(V + J > y) for points ``ys`` of cells ``js`` (vectors: any cells at once) from the table of
    :func:`lattice_cell_table`, by Horner in s = y - j D, with their rounding bounds C eps M, C = 4 (2 K^2 + 3 K + 10)
    (the table's error and Horner's three operations a step). A context with a ``twin()`` runs Horner there
    (``exps``: the factors e^{lambda s}, computed before)."""
    js = numpy.asarray(js, dtype=int)
    K = int(js.max()) if len(js) else 0
    S = ys - D * js if ctx.is_float64 else ys - ctx.array([D * int(j) for j in js])
    twin = ctx.twin() if hasattr(ctx, "twin") else None
    if twin is not None:
        exps = ctx.exp(S * lam)
        with twin:
            args = twin.from_mp(numpy.array([D, lam, rho], dtype=object))
            if isinstance(C.flat[0], type(ctx.num(0))):  # mpf: convert (else the twin's numbers already)
                C, Cabs = twin.from_mp(C[: K + 1, : K + 1]), twin.from_mp(Cabs[: K + 1, : K + 1])
            tails, bounds = lattice_cell_tails(twin, C, Cabs, twin.from_mp(ys), js, *args, exps=twin.from_mp(exps))
            return twin.to_mp(tails), twin.to_mp(bounds)
    one = ctx.num(1)
    # row j of the table is 0 beyond column j: a point of cell j joins Horner at k = j (before it, its value is
    # 0 * step + 0 = 0 exactly), so the points run from the largest cell and step k updates the first count(j >= k)
    # of them (the same operations on every point that has a term: the same values; half the work of all K steps)
    order = numpy.argsort(-js, kind="stable")
    jo, So = js[order], S[order]
    active = numpy.searchsorted(-jo, -numpy.arange(K + 1), side="right")  # active[k] = count(j >= k)
    signed, size = ctx.zeros(len(jo)), ctx.zeros(len(jo))
    n = active[K]
    signed[:n], size[:n] = C[jo[:n], K], Cabs[jo[:n], K]
    for k in range(K - 1, -1, -1):
        n = active[k]
        step = So[:n] / (k + 1)
        signed[:n] = signed[:n] * step + C[jo[:n], k]
        size[:n] = size[:n] * step + Cabs[jo[:n], k]
    back = numpy.empty_like(order)
    back[order] = numpy.arange(len(order))
    signed, size = signed[back], size[back]
    e = ctx.exp(S * lam) if exps is None else exps
    total, magnitude = e * signed, e * size
    return -(total * (one - rho)) + one, (magnitude * (one - rho) + one) * (4 * (2 * K * K + 3 * K + 10) * ctx.eps)


def convolution_tail(ctx, lattice, survival, cuts, cells, nodes, weights, atom, weight, rest, root=1, t=None,
                     ycuts=None, keys=None, memo=None):
    """P(W > t) = a_0 P(V + J > t) + w_c E (V_vac - t)^+ + w_c int_0^t P(V_vac > x) P(V + J > t - x) dx by
    Gauss-Legendre on each interval between consecutive ``cuts`` (0 = cuts[0] < ... < cuts[-1] = t, context
    numbers: the kinks t - m D of the lattice part and the vacation's own; or 0 < ... < x_c <= ``t`` where the
    integral stops at x_c, the rest being negligible), ``nodes``/``weights`` on [-1, 1];
    ``cells[i]`` is the lattice cell of t - x on interval i, ``cells[-1]`` (one more) that of t. Returns (tail,
    relative bound of the lattice values' rounding in it: a_0 bound(t) + w_c sum_i weight_i S(x_i) bound(t - x_i),
    over the tail). In float64 ``lattice`` gets every node of every interval at once (a vector of cells).

    The decomposition W = (V + J) + R with R independent of V + J (module docstring): R has the atom a_0 and the
    density w_c P(V_vac > x), so P(R > t) = w_c int_t^oo P(V_vac > x) dx = w_c ``rest``. ``lattice(ys, j)`` gives
    (P(V + J > y), bounds) for a vector of points of cell j (:func:`lattice_part_tails`), ``survival(xs)``
    P(V_vac > x) at a context vector of points (every node of every interval in one call: the law's batched
    ``survival_many``). On the interval at 0 the substitution x = b v^root (v in [0, 1]) makes a survival function
    1 - x^{p/root} (analytic) analytic (a gamma law of shape p/root). Every term is positive: the quadrature's
    error is relative to the tail.

    ``ycuts`` (optional): the t - cuts[i], each rounded once from its exact value; the nodes of every interval
    but a ``root`` one are then placed in y = t - x (the same Gauss-Legendre rule: its nodes are symmetric),
    y_k = mid + half nu_k and x_k = t - y_k, so that an interval whose y-ends recur -- a whole lattice cell
    [j D, (j + 1) D], at every t of a quantile search -- has the same lattice points each time: ``memo`` (a dict)
    keeps the lattice part's values and bounds there under (``keys[i]``, number of nodes), ``keys[i]`` an exact key
    of the interval or None (not kept). A value computed in a call whose largest cell is K' >= j keeps that call's
    bound, which holds for every cell j <= K' (it grows with K')."""
    rules = [(nodes, weights)] * (len(cuts) - 1)
    base, base_bound, pieces, bounds = convolution_pieces(ctx, lattice, survival, cuts, cells, rules, atom, weight,
                                                          rest, root, t, ycuts, keys, memo)
    total = ctx.fsum([base, *pieces])
    error = ctx.fsum([base_bound, *bounds])
    return total, (error / total if total > 0 else ctx.num(1))


def convolution_pieces(ctx, lattice, survival, cuts, cells, rules, atom, weight, rest, root=1, t=None, ycuts=None,
                       keys=None, memo=None):
    """The terms of :func:`convolution_tail`, an interval at a time, each interval i with its own rule ``rules[i]``
    = (nodes, weights) on [-1, 1] (None: the interval is skipped): (base, base bound, pieces, piece bounds) with
    base = a_0 P(V + J > t) + w_c ``rest``, its rounding bound a_0 bound(t), pieces[i] = w_c sum_k jac_k weight_k
    S(x_k) P(V + J > t - x_k) over interval i (None where skipped) and piece_bounds[i] the same sum of the lattice
    part's bounds; the other arguments as for :func:`convolution_tail`. The survival function is evaluated at every
    node of every interval in one call, the lattice part at every node not in ``memo`` in one call; an interval
    of ``memo`` is keyed by (``keys[i]``, its number of nodes). A caller choosing the order of each interval
    (the engine's D-digit tails: more nodes only where two orders disagree) sums the pieces itself."""
    t = cuts[-1] if t is None else t
    one = ctx.num(1)
    top, top_bound = lattice(ctx.array([t]), cells[-1])
    base = atom * top[0] + weight * rest
    base_bound = atom * top_bound[0]
    active, points, lattice_points, factors, kept = [], [], [], [], []
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        if rules[i] is None:
            continue
        nodes, weights = (r if isinstance(r, numpy.ndarray) else ctx.array(r) for r in rules[i])
        key = None
        if i == 0 and root != 1:
            v = (nodes + one) / 2
            xs = v**root * b
            jac = v ** (root - 1) * (b * root / 2)
            ys = -xs + t
        elif ycuts is not None:  # in y = t - x: the interval (a, b) is (ycuts[i + 1], ycuts[i])
            half, mid = (ycuts[i] - ycuts[i + 1]) / 2, (ycuts[i] + ycuts[i + 1]) / 2
            ys = nodes * half + mid
            xs = -ys + t
            jac = half
            key = None if memo is None or keys is None or keys[i] is None else (keys[i], len(nodes))
        else:
            half, mid = (b - a) / 2, (a + b) / 2
            xs = nodes * half + mid
            jac = half
            ys = -xs + t
        active.append(i)
        points.append(xs)
        lattice_points.append(ys)
        factors.append(weights * jac)
        kept.append(key)
    pieces, bounds = [None] * (len(cuts) - 1), [None] * (len(cuts) - 1)
    if not active:
        return base, base_bound, pieces, bounds
    values = [None if key is None else memo.get(key) for key in kept]
    new = [c for c, value in enumerate(values) if value is None]
    if new:
        sizes = [len(lattice_points[c]) for c in new]
        got, got_bounds = lattice(numpy.concatenate([lattice_points[c] for c in new]),
                                  numpy.repeat([cells[active[c]] for c in new], sizes))
        offset = 0
        for c, size in zip(new, sizes):
            values[c] = (got[offset: offset + size], got_bounds[offset: offset + size])
            offset += size
            if kept[c] is not None:
                memo[kept[c]] = values[c]
    s_all = survival(numpy.concatenate(points))
    offset = 0
    for c, i in enumerate(active):
        size = len(points[c])
        f = factors[c] * s_all[offset: offset + size]
        offset += size
        pieces[i] = weight * ctx.dot(f, values[c][0])
        bounds[i] = weight * ctx.dot(f, values[c][1])
    return base, base_bound, pieces, bounds
