"""Exact tails of the infinite room's wait for a service on a fine lattice: Benes' series with its uniform part (F12).

A service recorded to 0.1 ms, 0.01 ms or 1 us (an empirical sample on the lattice g) has the wait W = V + J + R of
the infinite room (``symbolic/closed_forms/vacation_wait.py``; spec chapter 2 section 0): R the residual vacation
(an atom a_0 at 0, P(R > y) = sum_p A_p e^{-theta_p y} for y >= 0: exponential and hyperexponential vacations), J
the own batch ahead (a sum of K services, P(K = k) = P(X > k) / l_1) and V the workload met by the batch, by Benes'
series (:mod:`qderive.numeric.kernels.lattice_service`, (B1)) V = H_1 + ... + H_N, P(N = n) = (1 - rho) rho^n,
H_i with the density P(S > x) / E S, S the work of one batch. For S on g N that density is constant on each cell:
H = g (G + U), U uniform on (0, 1) independent of G, P(G = m) = P(S > m g) / (E S / g). Hence, exactly,

    P(W > t) = sum_n (1 - rho) rho^n E Psi(t - g (L_n + I_n)),                                             (F12)

L_n = J / g + G_1 + ... + G_n (a lattice law: l_n = j * ``gamma^{*n}``), I_n = U_1 + ... + U_n (Irwin-Hall) and
Psi(y) = P(R > y) (1 for y < 0). With tau = t / g = M + phi (M = floor(tau), 0 <= phi < 1), u_k = t - k g and
i = M - k, the terms of power n are::

    P(L_n > M) + sum_{i < n} l_n[M - i] P(I_n > i + phi)                                   (the part beyond t)
    + sum_p A_p [ m_p^n sum_{k <= M - n} l_n[k] e^{-theta_p u_k} + sum_{i < n} l_n[M - i] K_{n,p}(i, phi) ]

with c_p = theta_p g, m_p = E e^{c_p U} = (e^{c_p} - 1) / c_p and K_{n,p}(i, phi) = E e^{-c_p (i + phi - I_n)}
1{I_n <= i + phi}: only the last n cells below t see the uniform part's own shape, the rest its transform. The
density of I_n on its cell c is a polynomial of degree n - 1 whose Bernstein coefficients beta_n[c, .] follow from
f_{n+1}(c + y) = int_y^1 f_n(c - 1 + s) ds + int_0^y f_n(c + s) ds by positive sums only (:func:`irwin_hall`:
beta_{n+1}[c, l] = (sum_{a >= l} beta_n[c - 1, a] + sum_{a < l} beta_n[c, a]) / n); its integrals over [0, phi] and
[phi, 1] against y^j are binomial tails, int_0^phi B_{a,d}(y) y^j dy = C(d, a) / C(d + j, a + j) P(Bin(d + j + 1,
phi) > a + j) / (d + j + 1), and e^{c y} = sum_{j <= q} (c y)^j / j! within c^{q+1} e^c / (q + 1)! (relative) on
[0, 1]: every term positive.

**The lattice parts** by the FFT powers of :mod:`qderive.numeric.kernels.lattice_fft` over the window [0, L) (L =
M_max + 1). A geometric batch (:func:`geometric_parts`): G = sum_x q^x ``b^{*x}`` by doubling, prod_k (delta + q^{2^k}
``b^{*2^k}``) (2 log2 of the powers' count convolutions), j = p G, and the ladder law from the positive renewal sum
P(S > m) = P(B > m) + ((G - delta) * P(B > .))[m] (no complement). Another batch law (:func:`lattice_parts`,
:func:`ladder_pmf`): one stream of b's powers gives s = sum_x P(X = x) ``b^{*x}`` and j = sum_k P(K = k) ``b^{*k}`` (the
sojourn: ``b^{*(k+1)}``; stopped where the Chernoff bound of the powers left times their weight is below 1e-17), and
gamma[m] = P(S > m) / (E S / g) from the reversed cumulative sums (long double) plus P(S >= L), the complement of the
window's mass. Then l_{n+1} = (l_n * gamma)[0, L) by FFT, the errors by (F11) carried (||l_n||_1, ||gamma||_1 <= 1:
not amplified; gamma's own by Young's inequality both ways), the powers kept for the points of a quantile search
(:class:`BenesSeries`). The series stops where rho^{n+1} times a Chernoff bound on P(G_1 + ... + G_{n+1} <= M) (the
ladder law in blocks rounded down) is below 1e-12 of the tail; each term left lies in [1 - that bound, 1] (counted
at its middle, half its width as error). A functional sum_k l_n[k] f[k] errs by at most E_n ||f||_2
(Cauchy-Schwarz) plus its own rounding: the bound returned with each tail.
"""

import math

import numpy

from .lattice_fft import (KEEP, POWER_CUT, UNIT, chernoff_below, convolution_error, fft_norms, fft_transform, lattice_powers,
                          transform_error)
from .lattice_finite import pairwise_depth

#: (the powers left count once their weight times their Chernoff bound is below lattice_fft's POWER_CUT)
#: Benes' series stops where rho^{n+1} times the Chernoff bound of the terms left is below this share of the tail
SERIES_CUT = 1e-12
#: Taylor terms of e^{c y} stop where c^{q+1} e^c / (q + 1)! is below this
TAYLOR_CUT = 1e-19
#: the largest c = theta g the Taylor sums take (a vacation far shorter than a lattice cell)
C_LIMIT = 4.0
#: the ladder law's blocks for the series' Chernoff stop
CHERNOFF_LEVELS = 4096
#: (the powers l_n are kept while they fit in lattice_fft's KEEP floats: 256 MB)


def irwin_hall(n_max):
    """[beta_1, ..., beta_{n_max}] (index n - 1): beta_n[c, a] the Bernstein coefficients (degree n - 1) of the
    Irwin-Hall density f_n on its cell [c, c + 1), by the positive recursion of the module docstring; relative
    error <= n (n + 1) u."""
    out = [numpy.ones((1, 1))]
    for n in range(1, n_max):
        prev = out[-1]  # n x n (cells x coefficients)
        nxt = numpy.zeros((n + 1, n + 1))
        lower = numpy.zeros((n + 1, n + 1))  # sum_{a < l} beta_n[c, a]
        lower[:n, 1:] = numpy.cumsum(prev, axis=1)
        upper = numpy.zeros((n + 1, n + 1))  # sum_{a >= l} beta_n[c - 1, a]
        upper[1:, :n] = numpy.cumsum(prev[:, ::-1], axis=1)[:, ::-1]
        nxt = (lower + upper) / n
        out.append(nxt)
    return out


_LOGFACT = numpy.zeros(1)


def _logfact(n):
    """log k! for k = 0..n (a kept table)."""
    global _LOGFACT
    if len(_LOGFACT) <= n:
        _LOGFACT = numpy.concatenate([[0.0], numpy.cumsum(numpy.log(numpy.arange(1, 2 * n + 2, dtype=float)))])
    return _LOGFACT


def _binomial_pmf(D, phi):
    """P(Bin(D, phi) = l), l = 0..D, 0 < phi < 1 (float64 logarithms: relative error a few hundred u)."""
    lf = _logfact(D)
    ls = numpy.arange(D + 1)
    return numpy.exp(lf[D] - lf[ls] - lf[D - ls] + ls * math.log(phi) + (D - ls) * math.log1p(-phi))


def _binomial_above(D, phi):
    """P(Bin(D, phi) > a) for a = 0..D - 1 (positive: the pmf's reversed cumulative sums)."""
    if phi <= 0:
        return numpy.zeros(D)
    if phi >= 1:
        return numpy.ones(D)
    return numpy.cumsum(_binomial_pmf(D, phi)[::-1])[::-1][1:]


def _binomial_at_most(D, phi):
    """P(Bin(D, phi) <= a) for a = 0..D - 1 (the pmf's cumulative sums)."""
    return numpy.cumsum(_binomial_pmf(D, phi))[:D]


def _taylor_terms(c):
    """q with c^{q+1} e^c / (q + 1)! <= TAYLOR_CUT."""
    q, term = 0, c * math.exp(c)
    while term > TAYLOR_CUT:
        q += 1
        term *= c / (q + 1)
    return q


def cell_integrals(beta, phi, c):
    """For the Irwin-Hall density f_n (``beta`` = beta_n, n cells) and 0 <= phi < 1: (mass, above, part, full):
    mass[i] = int_0^1 f_n(i + y) dy, above[i] = int_phi^1 f_n(i + y) dy, part[i] = int_0^phi f_n(i + y) e^{c y} dy
    and full[i] = int_0^1 f_n(i + y) e^{c y} dy (``c`` None: no exponential, part and full None)."""
    n = beta.shape[0]
    d = n - 1
    mass = beta.sum(axis=1) / n
    above = beta @ _binomial_at_most(n, phi) / n if phi > 0 else mass.copy()  # P(Bin(n, phi) <= a)
    if c is None:
        return mass, above, None, None
    q = _taylor_terms(c)
    a = numpy.arange(n)
    lf = _logfact(d + q + 1)
    part, full = numpy.zeros(n), numpy.zeros(n)
    coef = 1.0
    logc_d = lf[d] - lf[a] - lf[d - a]
    for j in range(q + 1):
        # C(d, a) / C(d + j, a + j) / (d + j + 1)
        ratio = numpy.exp(logc_d - (lf[d + j] - lf[a + j] - lf[d - a])) / (d + j + 1)
        tails = _binomial_above(d + j + 1, phi)[j:j + n] if phi > 0 else numpy.zeros(n)
        part += coef * (beta @ (ratio * tails))
        full += coef * (beta @ ratio)
        coef *= c / (j + 1)
    return mass, above, part, full


def lattice_parts(b, weights_s, weights_j, L):
    """(s, j, error_s, error_j): the window [0, L) of the pmfs sum_x weights_s[x] b^{*x} and sum_x weights_j[x]
    b^{*x} from one stream of powers (``lattice_powers``), with 2-norm error bounds (the FFT's (F11), and the
    powers left: their weight times their Chernoff bound P(S_x < L))."""
    below = chernoff_below(b, 1.0, L)
    count = max(len(weights_s), len(weights_j))
    ws = numpy.zeros(count)
    ws[: len(weights_s)] = weights_s
    wj = numpy.zeros(count)
    wj[: len(weights_j)] = weights_j
    rest_s = numpy.cumsum(ws[::-1])[::-1]
    rest_j = numpy.cumsum(wj[::-1])[::-1]
    s, j = numpy.zeros(L), numpy.zeros(L)
    es, ej, used = 0.0, 0.0, 0
    for x, power, err, _, _ in lattice_powers(b, L):
        used = x + 1
        if x >= count:
            break
        left = below(x)
        if left * (rest_s[x] + rest_j[x]) <= POWER_CUT:
            es += left * rest_s[x]
            ej += left * rest_j[x]
            break
        if ws[x]:
            s += ws[x] * power
            es += ws[x] * err
        if wj[x]:
            j += wj[x] * power
            ej += wj[x] * err
    # the sums' own rounding (count additions of nonnegative terms, relative)
    es += 2 * used * UNIT * fft_norms(s)[1]
    ej += 2 * used * UNIT * fft_norms(j)[1]
    return s, j, es, ej


def _convolve(a, b, L, size):
    """(a * b)[0, L) of two nonnegative vectors by a real FFT of length ``size`` (>= len(a) + len(b) - 1, no
    wrap-around), negative rounding set to 0, with the bound (F11) of its 2-norm error (both transforms float64)."""
    a1, a2 = fft_norms(a)
    b1, b2 = fft_norms(b)
    c = numpy.fft.irfft(numpy.fft.rfft(a, size) * numpy.fft.rfft(b, size), size)[:L]
    numpy.maximum(c, 0.0, out=c)
    return c, convolution_error(size, a1, a2, b1, b2)


def geometric_parts(b, p, q, L, mean=None):
    """(s, j, error_s, error_j) of :func:`lattice_parts` for a geometric batch P(X = x) = p q^{x-1} (the own batch
    ahead P(K = k) = p q^k), by doubling: G = sum_{x >= 0} q^x b^{*x} = prod_{k >= 0} (delta + q^{2^k} b^{*2^k})
    over the window [0, L) (every factor nonnegative: truncating each product to the window is exact there),
    2 log2(powers) convolutions instead of one per power; s = p (b * G), j = p G. The factors stop where the powers
    left, sum_{x >= 2^K} q^x P(S_x < L) <= q^{2^K} / (1 - q) times the Chernoff bound at 2^K, are below 1e-17;
    errors by (F11), carried (every 1-norm <= 1 / (1 - q)). With ``mean`` = E S / g: (j, its error, gamma, its 2-norm
    and 1-norm errors) instead, the ladder law gamma[m] = P(S > m) / mean from the positive renewal sum
    P(S > m) = P(B > m) + sum_{k <= m} (G - delta)[k] P(B > m - k) (S = B_1 + 1{X > 1} S', S' ~ S): no complement, its
    error ||e_G||_2 ||P(B > .)||_1 + (F11)."""
    below = chernoff_below(b, 1.0, L)
    size = 1 << max(1, (2 * L - 2).bit_length())
    power = numpy.zeros(L)
    power[: min(L, len(b))] = b[:L]
    prod = numpy.zeros(L)  # G - delta (its atom at 0 kept out of the FFTs: (F11) grows with the 2-norms)
    e_prod, e_pow, w, x = 0.0, 0.0, float(q), 1
    while True:
        # G <- G * (delta + w power): G' <- G' + w (power + G' * power)
        c, ce = _convolve(prod, power, L, size) if x > 1 else (numpy.zeros(L), 0.0)
        p1 = fft_norms(prod)[0]
        prod = prod + w * (power + c)
        e_prod = e_prod * (1 + w) + w * ((1 + p1) * e_pow + ce) + 3 * UNIT * fft_norms(prod)[1]
        x *= 2
        w *= w
        left = w / (1 - q) * below(x)
        if left <= POWER_CUT:
            e_prod += left
            break
        power, pe = _convolve(power, power, L, size)
        e_pow = 2 * e_pow + pe
    if mean is not None:  # the ladder law from the tail of B: P(S > m) = sum_{k <= m} G[k] P(B > m - k) (positive)
        ld = numpy.asarray(b, dtype=numpy.longdouble)
        tb_ld = numpy.cumsum(ld[::-1])[::-1][1:]  # P(B > m), m = 0..len(b) - 2 (relative error len(b) u_ld)
        tb = numpy.zeros(min(L, len(tb_ld)))
        tb[:] = numpy.asarray(tb_ld[: len(tb)], dtype=float)
        tsize = 1 << max(1, (L + len(tb) - 2).bit_length())
        c, ce = _convolve(prod, tb, L, tsize)
        T = c
        T[: len(tb)] += tb
        t1, t2 = fft_norms(tb)
        rel = len(b) * float(numpy.finfo(numpy.longdouble).eps) + UNIT  # tb's own rounding, relative
        g1 = fft_norms(prod)[0]
        eT = e_prod * t1 + ce + rel * (1 + g1) * t2 + 2 * UNIT * fft_norms(T)[1]
        j = p * prod
        j[0] += p
        gamma = T / mean
        eg = eT / mean * (1 + 4 * UNIT)
        return j, p * e_prod * (1 + 4 * UNIT) + 2 * UNIT * fft_norms(j)[1], gamma, eg, eg * math.sqrt(L)
    # s = p (b * G) = p (b + b * G'): b's transform in long double (transform_error)
    bsize = 1 << max(1, (L + len(b) - 2).bit_length())
    c = numpy.fft.irfft(numpy.fft.rfft(prod, bsize) * fft_transform(b, bsize), bsize)[:L]
    numpy.maximum(c, 0.0, out=c)
    g1, g2 = fft_norms(prod)
    b1, b2 = fft_norms(numpy.asarray(b, dtype=float))
    bw = numpy.zeros(L)
    bw[: min(L, len(b))] = b[:L]
    es = p * (e_prod * b1 + convolution_error(bsize, g1, g2, b1, b2, transform_error(bsize))
              + 2 * UNIT * (b2 + fft_norms(c)[1])) * (1 + 4 * UNIT)
    j = p * prod
    j[0] += p
    return p * (bw + c), j, es, p * e_prod * (1 + 4 * UNIT) + 2 * UNIT * fft_norms(j)[1]


def ladder_pmf(s, es, mean):
    """(gamma, its 2-norm and 1-norm error bounds): gamma[m] = P(S > m) / mean over the window, from the reversed
    cumulative sums of ``s`` in long double and P(S >= L) = 1 - the window's mass (``mean`` = E S / g exactly)."""
    L = len(s)
    ld = numpy.asarray(s, dtype=numpy.longdouble)
    total = float(ld.sum())
    beyond = max(1.0 - total, 0.0)  # P(S >= L): error es sqrt(L) + the sum's rounding
    beyond_err = es * math.sqrt(L) + L * float(numpy.finfo(numpy.longdouble).eps) + UNIT
    tail = numpy.zeros(L)
    rev = numpy.cumsum(ld[::-1])[::-1]  # rev[m] = P(m <= S < L)
    tail[: L - 1] = numpy.asarray(rev[1:], dtype=float)
    tail += beyond
    gamma = tail / mean
    # errors: each entry's window part by Cauchy-Schwarz (|sum_{k > m} e_k| <= es sqrt(L - m - 1)), the long double
    # sums' rounding relative L u_ld (+ u to float64), the beyond term's error on every entry
    steps = numpy.sqrt(numpy.arange(L - 1, -1, -1, dtype=float))
    err_vec = es * steps + (L * float(numpy.finfo(numpy.longdouble).eps) + 2 * UNIT) * tail + beyond_err
    return (gamma, float(math.sqrt(float(numpy.square(err_vec).sum()))) / mean * (1 + 1e-6),
            float(err_vec.sum()) / mean * (1 + 1e-6))


class BenesSeries:
    """The series (F12) over the window [0, L) of the points up to ``cover`` (floats): the lattice parts j and gamma
    once, the powers l_n = j * gamma^{*n} kept (while they fit in KEEP floats) so that the tails at any points
    t <= cover (a quantile search's) cost O(n L) each, not a new stream. ``b`` the pmf of B / g (float64),
    ``batch_pmf[x]`` = P(X = x), ``batch_ahead[k]`` = P(K = k) (long enough for the powers that count), ``rho`` < 1,
    ``mean_s`` = E S / g, ``atom`` = a_0 = P(R = 0), ``pieces`` [(A_p, theta_p)] with P(R > y) = sum A_p e^{-theta_p
    y} (y >= 0); ``sojourn``: W + B (the own service added to the lattice part); ``geometric`` (p, q) for a geometric
    batch (its parts by doubling)."""

    def __init__(self, b, g, batch_pmf, batch_ahead, rho, mean_s, atom, pieces, cover, sojourn=False,
                 geometric=None):
        self.g, self.rho, self.atom, self.pieces = g, rho, atom, list(pieces)
        self.cover = cover
        L = self.L = int(math.floor(cover / g)) + 1
        if geometric is not None and not sojourn:  # doubling and the renewal sum (:func:`geometric_parts`)
            j, ej, gamma, eg, eg1 = geometric_parts(b, geometric[0], geometric[1], L, mean_s)
        elif geometric is not None:  # the sojourn's J + B has p q^k b^{*(k+1)}: the batch work s itself
            j, _, ej, _ = geometric_parts(b, geometric[0], geometric[1], L)
            _, _, gamma, eg, eg1 = geometric_parts(b, geometric[0], geometric[1], L, mean_s)
        else:
            ahead = numpy.asarray(batch_ahead, dtype=float)
            if sojourn:
                ahead = numpy.concatenate([[0.0], ahead])
            s, j, es, ej = lattice_parts(b, batch_pmf, ahead, L)
            gamma, eg, eg1 = ladder_pmf(s, es, mean_s)
        self.cs = [float(theta) * g for _, theta in pieces]
        if any(c > C_LIMIT for c in self.cs):
            raise ValueError("a vacation far shorter than the lattice step: no Taylor sum of its factor")
        self.eg, self.eg1 = eg, eg1
        self.size = 1 << max(1, (2 * L - 2).bit_length())
        self.ghat = fft_transform(gamma, self.size)
        self.kg = transform_error(self.size)
        self.gnorms = fft_norms(gamma)
        # the Chernoff bound of the ladder sums (the series' stop): gamma in blocks of CHERNOFF_BLOCK levels rounded
        # down (a stochastically smaller G: P(Y_n <= M) can only grow), the mass beyond the window at its end, the
        # 1-norm error eg1 added at 0 (E e^{-theta G} can only grow)
        block = max(1, -(-L // CHERNOFF_LEVELS))
        pad = numpy.zeros(-(-L // block) * block)
        pad[:L] = gamma
        coarse = pad.reshape(-1, block).sum(axis=1)
        coarse = numpy.append(coarse, max(1.0 - float(gamma.sum()), 0.0) + eg1)
        coarse[0] += eg1
        self.chernoff = (coarse, block)
        self.bounds = {}
        self.powers = [(j, ej)]
        self.keep = True
        self.betas = irwin_hall(1)
        self.integrals = {}

    def _next(self, ell, err):
        """l_{n+1} = (l_n * gamma)[0, L) by FFT (F11) and its error: the errors carried (||l_n||_1, ||gamma||_1 <= 1
        + rounding); gamma's own error by Young's inequality both ways, ||l * e||_2 <= min(||l||_1 ||e||_2,
        ||l||_2 ||e||_1)."""
        a1, a2 = fft_norms(ell)
        g1, g2 = self.gnorms
        c = numpy.fft.irfft(numpy.fft.rfft(ell, self.size) * self.ghat, self.size)[: self.L]
        numpy.maximum(c, 0.0, out=c)
        err = (err * max(g1, 1.0) + min(self.eg * max(a1, 1.0), self.eg1 * (a2 + err))
               + convolution_error(self.size, a1, a2, g1, g2, self.kg))
        return c, err

    def _stream(self):
        """(n, l_n, E_n) for n = 0, 1, ...: the kept powers, then new ones (kept while they fit in KEEP floats)."""
        n = 0
        ell, err = self.powers[0]
        while True:
            yield n, ell, err
            if n + 1 < len(self.powers) and self.keep:
                ell, err = self.powers[n + 1]
            else:
                ell, err = self._next(ell, err)
                if self.keep:
                    if (len(self.powers) + 1) * self.L > KEEP:
                        self.keep = False
                        self.powers = self.powers[:1]
                    else:
                        self.powers.append((ell, err))
            n += 1

    def _cells(self, n, phi, c):
        """:func:`cell_integrals` of I_n at phi, kept (a point's cell data; the points of a search share few)."""
        key = (n, phi, c)
        got = self.integrals.get(key)
        if got is None:
            if n > len(self.betas):
                self.betas = irwin_hall(2 * n)
            if len(self.integrals) > 4096:
                self.integrals.clear()
            got = self.integrals[key] = cell_integrals(self.betas[n - 1], phi, c)
        return got

    def tails(self, ts):
        """[(P(W > t), its certified error bound)] for the points ``ts`` (floats, 0 < t <= cover) and the last n of
        the series."""
        g, rho, pieces, cs = self.g, self.rho, self.pieces, self.cs
        taus = [t / g for t in ts]
        Ms = [int(math.floor(tau)) for tau in taus]
        if max(Ms) >= self.L:
            raise ValueError("a point beyond the series' window")
        exps = []
        for t, M in zip(ts, Ms):  # e^{-theta u_k}, u_k = t - k g (k <= M)
            u = t - numpy.arange(M + 1) * g
            exps.append([(e, fft_norms(e)[1]) for e in (numpy.exp(-float(theta) * u) for _, theta in pieces)])
        values, errors = [0.0] * len(ts), [0.0] * len(ts)
        weight = 1.0 - rho
        for n, ell, err in self._stream():
            done = True
            for p_i, (t, tau, M) in enumerate(zip(ts, taus, Ms)):
                phi = tau - M
                window = ell[: M + 1]
                below = float(window.sum())
                v = max(1.0 - below, 0.0)  # P(L_n > M)
                e = err * math.sqrt(M + 1) + 4 * UNIT * (pairwise_depth(M + 1) + 2) * below + UNIT
                if n == 0:
                    for (A, theta), (ex, enorm) in zip(pieces, exps[p_i]):
                        v += A * float(numpy.sum(window * ex))  # not a BLAS dot: its threads may spin
                        e += A * err * enorm
                else:
                    top = min(n, M + 1)
                    cells = window[M::-1][:top]  # l_n[M - i], i < n
                    # the binomial weights by float64 logarithms: relative error <= 8 u (log D! + D |log phi|
                    # + D |log(1 - phi)|), D <= n + the Taylor terms + 1
                    D = n + max([_taylor_terms(c) for c in cs], default=0) + 1
                    logs = 8 * UNIT * (float(_logfact(D)[D]) + D * (abs(math.log(phi)) + abs(math.log1p(-phi)))
                                       if phi > 0 else 0.0)
                    mass, above, _, _ = self._cells(n, phi, None)
                    over = above + (numpy.cumsum(mass[::-1])[::-1] - mass)  # P(I_n > i + phi)
                    got = float(numpy.dot(cells, over[:top]))
                    v += got
                    e += err * fft_norms(over[:top])[1] + (4 * UNIT * (n * (n + 1) + n + 4) + logs) * got
                    for (A, theta), c, (ex, enorm) in zip(pieces, cs, exps[p_i]):
                        _, _, part, full = self._cells(n, phi, c)
                        m = math.expm1(c) / c
                        cut = max(M + 1 - n, 0)
                        bulk = float(numpy.sum(window[:cut] * ex[:cut])) * m ** n
                        H = numpy.zeros(n)  # H[i] = sum_{c' < i} e^{-c (i - c')} full[c']
                        decay = math.exp(-c)
                        for i in range(1, n):
                            H[i] = decay * (H[i - 1] + full[i - 1])
                        K = math.exp(-c * phi) * (part + H)
                        near = float(numpy.dot(cells, K[:top]))
                        q = _taylor_terms(c)
                        taylor = c ** (q + 1) * math.exp(c) / math.factorial(q + 1)
                        v += A * (bulk + near)
                        e += A * (err * (enorm * m ** n + fft_norms(K[:top])[1])
                                  + (4 * UNIT * (n * (n + 1) + n + 10) + logs + 2 * taylor) * (bulk + near))
                values[p_i] += weight * v
                errors[p_i] += weight * (e + 4 * UNIT * (pairwise_depth(M + 1) + 4) * v)
                if rho ** (n + 1) * self._below(M, n + 1) > SERIES_CUT * values[p_i]:
                    done = False
            if done:
                break
            weight *= rho
        # the terms left: each P(W > t | N = n') in [1 - P(Y_n' <= M), 1], P(Y_n' <= M) <= its Chernoff bound, which
        # decreases in n' (Y_n = G_1 + .. + G_n <= L_n + I_n)
        rest = rho ** (n + 1)
        out = []
        for v, e, M in zip(values, errors, Ms):
            ch = self._below(M, n + 1)
            out.append((v + rest * (1 - ch / 2), e + rest * ch / 2))
        return out, n

    def _below(self, M, n):
        """A bound on P(G_1 + ... + G_n <= M) (Chernoff, :func:`~.lattice_fft.chernoff_below`, on the blocks of the
        ladder law rounded down)."""
        got = self.bounds.get(M)
        if got is None:
            coarse, block = self.chernoff
            got = self.bounds[M] = chernoff_below(coarse, float(block), float(M))
        return got(n)


def benes_tails(b, g, batch_pmf, batch_ahead, rho, mean_s, atom, pieces, ts, sojourn=False, geometric=None):
    """[(P(W > t), error bound)], n: the tails (F12) at the points ``ts`` by one :class:`BenesSeries` covering
    them (its arguments)."""
    return BenesSeries(b, g, batch_pmf, batch_ahead, rho, mean_s, atom, pieces, max(ts), sojourn,
                       geometric).tails(ts)
