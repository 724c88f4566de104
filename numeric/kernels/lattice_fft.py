"""Exact tails of the finite room for a service on a fine lattice: the powers ``b^{*j}`` by FFT, streamed (F10).

A measured service time recorded to 0.01 ms or 1 us (an empirical sample on the lattice g = 1e-5 or 1e-6 s) puts
the sums (F5) of :mod:`qderive.numeric.kernels.lattice_finite` on t / g = 5e4 ... 1e6 lattice columns for a tail
at t = 0.5 s: the dense (r + 2) x M matrices of the j services ahead S_j = B_1 + ... + B_j (and A = a S, C, Z = W A)
would take gigabytes, and their positive convolutions O(r M nnz(b)) hours. (F5) is linear in each power
s_j = ``b^{*j}`` (the pmf of S_j over the lattice), so the sum is taken one power at a time instead::

    N(W > t) = sum_j [ c0_j P(S_j >= J0 g) + c1_j P(S_j >= J1 g)                                (u = 0, idle)
                       + sum_{exp pieces} ce_j sum_{k < J0} s_j[k] e^{-theta u_k}                 (F3), d = oo
                       + sum_{matrix pieces} sum_p cm_{j,p} sum_{k < J0} s_j[k] beta_p(u_k)        (F4)
                       + sum_{cut pieces} sum_{u_k < d} s_j[k] (R Zc)[k, j]                        (F3), d < oo
                       + sum_{i < n} q_j[i] (R' Zc)[i, j] ]                                        (F5), (F8)  (F10)

with u_k = t - k g, J0 = ceil(t / g), J1 = floor(t / g) + 1, Zc = W a (the period's rows times the admission
columns: rows x (r + 1), small), c0_j = sum_periods full . a[:, j], c1_j = t_I a[I, j], ce_j = each . a[:, j]
(the profile of :func:`~qderive.numeric.kernels.lattice_finite.period_profile`), R the weights (F3) of a cut
piece at the columns it reaches, R' those of the service's own residual on the grid y_i = (i + 1) g - u_{J0-1}
(n the largest atom of b) and q_j[i] = sum_{k < J0} s_j[k] b[i + J0 - k] the part of s_j * b that the columns
below J0 send past t: the tail of the convolution that gives s_{j+1}, so it costs nothing more. Only s_j over
the window [0, L) is kept (L = J0 of the farthest point), two vectors at a time (memory O(L + n + rows n), never
r x M); P(S_j >= L g) and P(S_j >= (L + 1) g) (the idle row at a point on the lattice, J1 = L + 1) by positive
recursions, P(S_{j+1} >= L g) = P(S_j >= L g) + sum_{k < L} s_j[k] P(B >= (L - k) g) and
P(S_{j+1} >= (L + 1) g) = P(S_j >= (L + 1) g) + sum_{k < L} s_j[k] P(B >= (L + 1 - k) g) + P(S_j = L g) P(B >= g),
P(S_{j+1} = L g) = (s_j * b)[L] + P(S_j = L g) b_0 (a rounded-down law may have b_0 > 0), or 1 - the window's sum
where that bound is smaller; a batch of tail points shares one stream.

**The convolutions** s_{j+1} = (s_j * b)[0, L) by numpy's real FFT of a power-of-two length n_f >= L + n (no
wrap-around: exact in exact arithmetic), s_1 = b itself. *Rounding* (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed. 2002, Theorem 24.2: a computed FFT satisfies ||y^ - y||_2 <= kappa ||y||_2,
kappa = log2(n_f) eta / (1 - log2(n_f) eta), eta = mu + gamma_4 (sqrt 2 + mu), mu the twiddle factors' error,
taken as 4 u, u = 2^-53): with the unnormalised DFT F (||F a||_2 = sqrt(n_f) ||a||_2, ||F a||_oo <= ||a||_1),
b's transform computed once in long double (relative error kappa_b: kappa at u = 2^-64, plus u for its rounding
to complex128) and ||a * b||_2 <= min(||a||_1 ||b||_2, ||a||_2 ||b||_1) (Young), the transforms', the product's and
the inverse transform's errors add up to::

    ||fl(a * b) - a * b||_2 <= (1 + kappa)(1 + 3 u) d_1 + (kappa + 3 u (1 + kappa)) min(...),
    d_1 = kappa ||a||_2 ||b||_1 + kappa_b ||a||_1 ||b||_2 + kappa kappa_b sqrt(n_f) ||a||_2 ||b||_2              (F11)

(:func:`convolution_error`; the complex products' error sqrt 2 gamma_2 < 3 u). Errors carried from s_j are not
amplified (||e * b||_2 <= ||e||_2 ||b||_1 = ||e||_2), truncation and setting negative entries to 0 do not
increase them (the true entries are >= 0), and flushing entries below 1e-150 adds at most 1e-150 sqrt(L + n): the
bound E_j >= ||s_j^ - s_j||_2 is a running sum (:func:`lattice_powers`). A functional sum_k s_j[k] f[k] then errs by
at most E_j ||f||_2 (Cauchy-Schwarz) plus its own rounding, a pairwise sum of positive products
(``pairwise_depth`` roundings, relative). This bound is what the tail's note reports (a certified bracket
value -/+ bound); measured it is 2e-10 to 5e-10 of the tail at 8192 ... 2^20 levels, the true error far smaller
(the tests compare with exact Fractions and a 30-digit chain: 1e-15).

**Powers that cannot count.** P(S_j <= t) <= e^{theta t} (E e^{-theta B})^j for every theta > 0 (Chernoff), which
decreases in j; the stream stops at the first j where that bound times the weight of the powers left
(sum_{j' >= j} of their share of N(W > -1)) is below 1e-17 of N(W > -1), and the remaining powers count as
P(S_j >= t) = 1 with that bound added to the error (each power's terms lie between its u = 0 weight times
1 - P(S_j < t) and that weight). Cost: O(j_stop n_f log n_f) for the stream, O(j_stop (L + rows n)) for the
functionals; with 2000 atoms of a lognormal sample (mean 13.7 ms) at t = 0.5 s, j_stop is about 80.

**Points of one cell, and a search** (:class:`FineCell`). The points t of one lattice cell (the same J0, J1) share
the stream's terms: the u = 0 ones do not move, an exponential piece's scale by e^{-theta (t - t_ref)}, the
service's residual keeps Y = sum_j q_j Zc[:, j] and takes its weights at t (its FFT error bounded with the cell's
largest weights, R_K increasing in y). Where a stream's powers fit in KEEP floats they are kept, its window
reaching MARGIN beyond its farthest point, so that a quantile search's later cells replay them (each cell's
overflow past its J0 < L by a convolution of its own, (F11) again) instead of a new stream.
"""

import math

import numpy

from .lattice_finite import (LatticePiece, admission_matrix, lattice_atoms, lattice_residual_rows, matrix_residual_rows,
                             pairwise_depth, rows_kept)

#: the unit roundoff of float64
UNIT = 2.0**-53
#: entries of the powers below this are set to 0 (their squares in the 2-norms, and subnormal products, would be a
#: hundred times slower); each adds at most FLUSH to an entry's error
FLUSH = 1e-150
#: the powers left count as wholly beyond t once their Chernoff bound is below this share of N(W > -1)
POWER_CUT = 1e-17
#: powers whose overflow past t is gathered before the service's residual weights multiply them (one BLAS product)
CHUNK = 8
#: a stream's window reaches this share beyond its farthest point, so that a quantile search's later points reuse
#: its powers (kept while they fit in KEEP floats: 256 MB)
MARGIN = 0.02
KEEP = 1 << 25


def fft_error_factor(n: int, unit: float = UNIT) -> float:
    """kappa(n) of (F11): Higham's Theorem 24.2 for a transform of length n (a power of two) in the arithmetic of
    unit roundoff ``unit``, twiddles to 4 ``unit``."""
    mu = 4 * unit
    gamma4 = 4 * unit / (1 - 4 * unit)
    k = math.log2(n) * (mu + gamma4 * (math.sqrt(2) + mu))
    return k / (1 - k)


def transform_error(n: int) -> float:
    """The relative 2-norm error of b's transform: computed once in extended precision (numpy's long double FFT,
    unit roundoff ``finfo(longdouble).eps / 2``), then rounded to complex128 (u)."""
    return fft_error_factor(n, float(numpy.finfo(numpy.longdouble).eps) / 2) + UNIT


def convolution_error(n: int, a1: float, a2: float, b1: float, b2: float, kb: float | None = None) -> float:
    """The bound (F11) on ||fl(a * b) - a * b||_2 of a convolution by FFTs of length ``n`` (a power of two), from
    the 1- and 2-norms of a and b; ``kb`` the relative error of b's transform (default: float64's kappa)."""
    k = fft_error_factor(n)
    kb = k if kb is None else kb
    d1 = k * a2 * b1 + kb * a1 * b2 + k * kb * math.sqrt(n) * a2 * b2
    p = min(a1 * b2, a2 * b1)  # ||a * b||_2 (Young's inequality, both ways)
    return ((1 + k) * (1 + 3 * UNIT) * d1 + (k + 3 * UNIT * (1 + k)) * p) * (1 + 1e-6)


def fft_norms(v):
    """(||v||_1, ||v||_2) of a nonnegative vector (numpy's pairwise sums: a BLAS dot may wait on its threads)."""
    return float(v.sum()), float(math.sqrt(float(numpy.square(v).sum())))


_TRANSFORMS: dict = {}


def fft_transform(b, size):
    """b's real transform of length ``size`` computed in long double and rounded to complex128
    (:func:`transform_error`); the last few kept (a cell's own convolutions reuse them)."""
    key = (id(b), len(b), size)
    got = _TRANSFORMS.get(key)
    if got is None or got[0] is not b:
        if len(_TRANSFORMS) > 4:
            _TRANSFORMS.clear()
        got = (b, numpy.fft.rfft(numpy.asarray(b, dtype=numpy.longdouble), size).astype(numpy.complex128))
        _TRANSFORMS[key] = got
    return got[1]


def lattice_powers(b, L):
    """Yield (j, s, error, overflow, overflow_error) for j = 0, 1, ...: ``s`` the computed s_j = b^{*j} over
    [0, L) (float64, entries >= 0), ``error`` >= ||s - b^{*j}[0, L)||_2 (F11), ``overflow`` the computed
    (s * b)[L, L + n) (n = len(b) - 1: the mass of S_j + B past the window from S_j inside it) and
    ``overflow_error`` >= the 2-norm error of the whole computed s * b (of which the next power and the overflow
    are parts). s_0 * b = b exactly (no transform). The caller stops when the powers cannot count any more."""
    b = numpy.asarray(b, dtype=float)
    nb = len(b)
    size = 1 << max(1, (L + nb - 1 - 1).bit_length())
    bhat = fft_transform(b, size)
    kb = transform_error(size)
    b1, b2 = fft_norms(b)
    s = numpy.zeros(L)
    s[0] = 1.0
    error, j = 0.0, 0
    while True:
        if j == 0:
            c, cerr = numpy.zeros(L + nb - 1), 0.0
            c[:nb] = b
        else:
            a1, a2 = fft_norms(s)
            c = numpy.fft.irfft(numpy.fft.rfft(s, size) * bhat, size)[: L + nb - 1]
            numpy.maximum(c, 0.0, out=c)
            c[c < FLUSH] = 0.0
            cerr = error + convolution_error(size, a1, a2, b1, b2, kb) + FLUSH * math.sqrt(L + nb)
        yield j, s, error, c[L:], cerr
        s, error, j = c[:L], cerr, j + 1


def chernoff_below(b, h, t):
    """``bound(j)``: an upper bound on P(S_j <= t) for S_j a sum of j services with the lattice pmf ``b`` (step
    ``h``): min over theta of e^{theta t} (sum_m b_m e^{-theta m h})^j, over a geometric grid of theta (float64,
    with a relative safety of 1e-9 for the rounding of the logarithms and exponentials)."""
    b = numpy.asarray(b, dtype=float)
    m = numpy.flatnonzero(b)
    if not len(m):
        return lambda j: 1.0
    mean = float(numpy.dot(b[m], m)) * h
    thetas = numpy.geomspace(0.01, 1e4, 200) / mean
    logb = numpy.log(b[m])
    # log sum_m b_m e^{-theta m h}, its largest term factored out (no underflow at a large theta)
    logs = numpy.array([-theta * h * m[0] + math.log(float(numpy.sum(numpy.exp(logb - theta * h * (m - m[0])))))
                        for theta in thetas])

    def bound(j):
        if j == 0:
            return 1.0
        if m[0] * h * j > t:  # every sum of j services exceeds t
            return 0.0
        return min(1.0, math.exp(float(numpy.min(thetas * t + j * logs))) * (1 + 1e-9))

    return bound


def tail_window(b, L):
    """tb[k] = P(B >= (L - k) h) for k = 0..L-1 (0 where L - k > n): the weights of the recursion for
    P(S_{j+1} >= L h), positive sums from the top."""
    b = numpy.asarray(b, dtype=float)
    above = numpy.cumsum(b[::-1])[::-1]  # above[m] = P(B >= m h)
    tb = numpy.zeros(L)
    m = L - numpy.arange(L)
    ok = m < len(b)
    tb[ok] = above[m[ok]]
    return tb


def _psum(a, f):
    """sum a f of two nonnegative vectors by numpy's pairwise sum, with its relative rounding count."""
    return float(numpy.sum(a * f)), pairwise_depth(len(a)) + 1


class FineCell:
    """The data of (F10) on one lattice cell, for every tail point t with the same columns (J0, J1): its terms are
    accumulated power by power at the first point t_ref, then read at any t of the cell (:meth:`at`): the u = 0
    terms do not depend on t there; an exponential piece's terms scale by e^{-theta (t - t_ref)} (its u_k all move
    by t - t_ref); the service's residual keeps Y[i, K] = sum_j q_j[i] Zc[K, j] (n x rows kept) and takes the weights
    R_K((i + 1) h - u_{J0-1}) of t, its FFT error bounded once with the largest weights of the cell (u_{J0-1} -> 0:
    R_K increases in y). A matrix or a cut piece makes the cell one point (``shared`` False)."""

    def __init__(self, sums, t):
        ctx, h = sums.ctx, sums.h
        self.t_ref = t
        self.J0, self.J1 = int(-((-t) // h)), int(t // h + 1)
        J0 = self.J0
        us = numpy.zeros(0)
        if J0:  # u_k = u_{J0-1} + (J0 - 1 - k) h: the last exact (t and h Fractions), then positive sums
            us = float(t - (J0 - 1) * h) + numpy.arange(J0)[::-1] * float(h)
        self.shared = True
        self.terms = []  # [kind, period, piece, data]
        self.u0 = [0.0, 0.0]  # the u = 0 terms and their error bound
        self.count = 0.0  # the rounding count of the terms (relative, module docstring)
        size = 0.0
        for p, (W, data, pieces, profile, _) in enumerate(sums.periods):
            lam = float(data.lam)
            Zc = sums.Zc[p]
            top = W.shape[0] - 1
            for i, piece in enumerate(pieces):
                if isinstance(piece, LatticePiece):
                    n = sums.n
                    if not J0 or not n:
                        continue
                    kept = sums.kept[p]
                    R0, sz = lattice_residual_rows(ctx, lam, numpy.arange(1, n + 1, dtype=float) * float(h), top,
                                                   rows=kept)
                    size = max(size, sz)
                    self.terms.append(["lattice", p, i, {"R0": R0, "Zk": numpy.ascontiguousarray(Zc[:kept]),
                                                         "Y": numpy.zeros((n, kept)), "err": 0.0, "lam": lam,
                                                         "top": top, "kept": kept, "powers": 0}])
                elif len(piece) == 4:  # (F4): beta(u_k), J0 x phases
                    if not J0:
                        continue
                    self.shared = False
                    B, sz = matrix_residual_rows(ctx, piece, us, profile[2][i][1])
                    size = max(size, sz)
                    self.terms.append(["matrix", p, i, {"B": numpy.ascontiguousarray(B), "value": 0.0, "err": 0.0,
                                                        "norms": numpy.sqrt((B * B).sum(axis=0))}])
                else:
                    w, theta, d = piece
                    if d is None:
                        if not J0:
                            continue
                        e = numpy.exp(-float(theta) * us)
                        size = max(size, float(theta) * float(us[0]) + 4)  # each exp: its argument's rounding
                        self.terms.append(["exp", p, i, {"e": e, "norm": fft_norms(e)[1],
                                                         "theta": float(theta), "value": 0.0, "err": 0.0}])
                    else:
                        idx = numpy.flatnonzero(us < float(d))
                        if not len(idx):
                            continue
                        self.shared = False
                        uu = us[idx]
                        R, sz = lattice_residual_rows(ctx, lam, float(d) - uu, top,
                                                      uu * (-float(theta)) + math.log(float(w)))
                        size = max(size, sz + abs(math.log(float(w))) + float(theta) * float(uu[0]))
                        Q = R @ Zc  # columns x (r + 1): the weight of s_j[k] for power j
                        self.terms.append(["cut", p, i, {"lo": int(idx[0]), "hi": int(idx[-1]) + 1, "Q": Q,
                                                         "norms": numpy.sqrt((Q * Q).sum(axis=0)), "value": 0.0,
                                                         "err": 0.0}])
        self.size = size

    def at(self, sums, t):
        """(the sum, its FFT error bound, its rounding count) of (F10) at t, a point of this cell."""
        value, err, count = self.u0[0], self.u0[1], self.count + self.size
        h = sums.h
        for kind, _, _, d in self.terms:
            if kind == "exp":
                f = math.exp(-d["theta"] * float(t - self.t_ref))
                value, err = value + d["value"] * f, err + d["err"] * f
                count = max(count, self.count + self.size + d["theta"] * abs(float(t - self.t_ref)) + 2)
            elif kind == "lattice":
                grid = numpy.arange(1, sums.n + 1, dtype=float) * float(h) - float(t - (self.J0 - 1) * h)
                R, sz = lattice_residual_rows(sums.ctx, d["lam"], grid, d["top"], rows=d["kept"])
                value += float(numpy.sum(R * d["Y"]))  # n x rows kept, both contiguous: one pairwise sum
                err += d["err"]
                # Y's entries: sums of positive products over the powers (BLAS, in chunks); the pairwise sum
                count = max(count, self.count + sz + d["powers"] + pairwise_depth(R.size) + 4)
            else:
                value, err = value + d["value"], err + d["err"]
        return value, err, count


class FineLatticeSums:
    """Mixin of the sums (F1), (F5) with the services on a fine lattice, by (F10): ``b`` the pmf of B / h (floats,
    an exact lattice law), ``h`` the step (the engine: a Fraction), ``extra`` 1 for the sojourn, ``mass`` the
    exact N(W > -1). Used with a :class:`~qderive.numeric.kernels.lattice_finite.ConstantSums` (its periods,
    profiles and row extension), float64 only. :meth:`bounds` gives (lower, upper) of N(W > t), as the bracketed
    sums do; :meth:`prefetch` computes a batch of points in one stream of powers."""

    def _fine_init(self, parts, b, h, vacation, extra, mass):

        first = parts[0]
        self.ctx, self.r, self.h, self.given, self.extra = first.ctx, first.r, h, mass, extra
        ctx, r = self.ctx, self.r
        if not ctx.is_float64:
            raise ValueError("the fine lattice sums (F10) run in float64")
        self.b = numpy.asarray([float(v) for v in b], dtype=float)
        ms = lattice_atoms(self.b)
        self.n = int(ms[-1]) if len(ms) else 0
        self.bnorms = fft_norms(self.b)
        with ctx:
            self.keep = first.tail[r:0:-1].copy() if first.whole else None
            self.A0, _ = admission_matrix(ctx, first.pmf, first.tail, r, first.whole)
            self.A0 = numpy.asarray(self.A0, dtype=float)
            self.idle = ctx.fsum([d.t_idle for d in parts])
            self._periods(parts, (LatticePiece(self.b, ctx.num(float(h))),), vacation)
        self.memo, self.cells, self.kept_powers = {}, {}, None

    def _period(self, data, W, pieces, complete):
        out = super()._period(data, W, pieces, complete)
        self.memo, self.cells = {}, {}  # new rows: new weights
        return out

    def _prepare(self):
        """The rows-dependent, t-free data: Zc = W a per period, the per-power weights c0, c1 (and their sum, the
        share of N(W > -1)), the rows kept for the service's residual and the bound of those dropped."""
        r, A0 = self.r, self.A0
        self.Zc, self.kept, self.dropped = [], [], 0.0
        c0 = numpy.zeros(r + 1)
        for W, data, pieces, profile, _ in self.periods:
            Z = numpy.asarray(W[:, :r], dtype=float) @ A0[:r]
            self.Zc.append(Z)
            c0 += numpy.asarray(profile[0], dtype=float) @ A0[:r]
            if any(isinstance(p, LatticePiece) for p in pieces) and self.n:
                scale = float(numpy.dot(profile[0], A0[:r].sum(axis=1)))
                kept, dropped = rows_kept(self.ctx, W, A0[:r].sum(axis=1), r, self.b, self.n, float(data.lam),
                                          float(self.h), scale)
                self.kept.append(kept)
                self.dropped += dropped
            else:
                self.kept.append(0)
        self.c0 = c0
        self.c1 = float(self.idle) * A0[r]
        self.share = c0 + self.c1  # power j's weight in N(W > -1) (u = 0 everywhere)

    def _mass(self):
        r = self.r
        return float(numpy.dot(self.c0, numpy.ones(r + 1))) + float(self.c1.sum())

    def _sum(self, t):
        if t < 0 and self.given is not None:
            return self.given, 0 * self.given, 0 * self.given
        if t < 0:
            self._prepare()
            return self._mass(), 0.0, 0.0
        if t not in self.memo:
            self.memo.update(self._stream([t]))
        return self.memo[t]

    def bounds(self, t):
        """(N(W > t) - error, N(W > t) + error + rows cut) of this lattice law (as the bracketed sums'
        ``bounds``), the rows extended while what they cut exceeds 1e-12 of the value."""
        while True:
            value, rounding, trunc = self._sum(t)
            if trunc <= 1e-12 * value or not self._extend():
                break
        return value - rounding, value + rounding + trunc

    def prefetch(self, ts):
        """Compute the sums of every t of ``ts`` (t > 0) not yet known in one stream of powers."""
        new = [t for t in ts if t > 0 and t not in self.memo]
        if new:
            self.memo.update(self._stream(new))

    def _truncation(self):
        """The bound of the rows beyond each period's last (t-free: every column's reach <= the admission row sums,
        e^{-theta u} <= 1, beta_p(u) <= 1)."""
        reach = float(numpy.max(self.A0[: self.r].sum(axis=1), initial=0))
        trunc = self.dropped
        for W, data, pieces, (full, each, remainders, size, mass, drop), _ in self.periods:
            trunc += float(drop) * reach
            if not mass:
                continue
            for i, piece in enumerate(pieces):
                rem = remainders[i]
                if not isinstance(piece, LatticePiece) and len(piece) == 4:
                    trunc += float(mass) * float(rem[0]) * len(piece[3][0]) * reach
                else:
                    trunc += float(mass) * float(rem) * reach
        return trunc

    def _stream(self, ts):
        """{t: (N(W > t), rounding bound, truncation bound)} for the points ``ts`` (t > 0): those of a cell already
        computed from it (:class:`FineCell`), the others by one stream of powers (F10) that fills their cells."""
        self._prepare()
        cells, new = {}, []
        for t in ts:
            J0, J1 = int(-((-t) // self.h)), int(t // self.h + 1)
            cell = self.cells.get((J0, J1))
            if cell is None:
                cell = FineCell(self, t)
                new.append(cell)
                if cell.shared:
                    self.cells[(J0, J1)] = cell
            cells[t] = cell
        if new:
            self._fill(new, max(float(t) for t in ts))
        out = {}
        trunc = self._truncation()
        for t, cell in cells.items():
            v, err, count = cell.at(self, t)
            out[t] = (v, err + 4 * UNIT * (count + 2 * self.r + 20) * v, trunc)
        return out

    def _rest(self):
        """rest[c] = the weight of the powers j' >= c + extra in N(W > -1) (A0 columns c' >= c)."""
        return numpy.cumsum(self.share[::-1])[::-1]

    def _source(self, L, tmax):
        """(window L', t_cover, the powers (j, s_j, error, overflow, its error)) for cells up to column L and points up
        to ``tmax``: the kept powers of an earlier stream when they cover both, else a new stream over a window
        MARGIN longer (a quantile search's later points lie within a few per mille of its first), kept while they
        fit in KEEP floats (a stream lives once per sums object: the powers do not depend on the rows)."""
        kept = self.kept_powers
        if kept is not None and kept[0] >= L and kept[1] >= tmax:
            return kept[0], kept[1], iter(kept[2])
        # the powers the stream will hold (their Chernoff stop at the wider window) must fit in KEEP floats; else
        # the window ends at L (each point's overflow is then the stream's own, no convolution of its own)
        wide = int(L * (1 + MARGIN)) + 1
        below, rest = chernoff_below(self.b, float(self.h), wide * float(self.h)), self._rest()
        count = next((j for j in range(self.r + self.extra + 1) if j >= self.extra and
                      below(j) * float(rest[j - self.extra]) <= POWER_CUT * float(rest[0])), self.r + self.extra + 1)
        if (count + 1) * (wide + len(self.b)) > KEEP:
            self.kept_powers = None
            return L, tmax, lattice_powers(self.b, L)
        L = wide
        cover = L * float(self.h)
        store = []
        self.kept_powers = (L, cover, store)

        def powers():
            size = 0
            for item in lattice_powers(self.b, L):
                if self.kept_powers is not None:
                    size += L + len(item[3])
                    if size <= KEEP:
                        store.append(item)
                    else:
                        self.kept_powers = None
                yield item

        return L, cover, powers()

    def _fill(self, cells, tmax):
        """Accumulate the terms of ``cells`` over the powers, one stream truncated at the largest J0 (or the powers
        kept from an earlier one, :meth:`_source`)."""
        r, extra, h, b = self.r, self.extra, self.h, self.b
        # the window [0, L): the columns u > 0 of the farthest point; t_cover >= every point (the powers' stop)
        L, tmax, source = self._source(max(cell.J0 for cell in cells), tmax)
        tb, tb1 = tail_window(b, L), tail_window(b, L + 1)[:L]  # P(B >= (L - k) h), P(B >= (L + 1 - k) h)
        tb_norm = fft_norms(tb)[1]
        tb1_norm = fft_norms(tb1)[1]
        b_pos, b0 = float(b[1:].sum()), float(b[0])  # P(B >= h), P(B = 0)
        rest = self._rest()
        total_mass = float(rest[0])
        beyond, beyond_err = 0.0, 0.0  # P(S_j >= L h) and its absolute error
        beyond1, beyond1_err = 0.0, 0.0  # P(S_j >= (L + 1) h) and its error (the idle row of a point with J1 = L + 1)
        edge, edge_err = 0.0, 0.0  # P(S_j = L h): the first overflow of the power before
        pending = []  # (column j, overflow, its error, s_j, its error) for the service's residual, by CHUNK
        below = chernoff_below(b, float(h), tmax)
        for jj, s, err, over, oerr in source:
            col = jj - extra
            if col >= 0:
                left = below(jj) * float(rest[col])
                if left <= POWER_CUT * total_mass:  # the powers left: all beyond t, within their Chernoff bound
                    for cell in cells:
                        cell.u0[0] += float(self.c0[col:].sum()) + float(self.c1[col:].sum())
                        cell.u0[1] += left
                    break
                for cell in cells:
                    self._power_terms(cell, col, s, err, (beyond, beyond_err, beyond1, beyond1_err), L)
                pending.append((col, over, oerr, s, err))
                if len(pending) >= CHUNK:
                    self._flush(cells, pending, L)
                    pending = []
            if jj >= r + extra:
                break
            step, c = _psum(s, tb)
            beyond = min(beyond + step, 1.0)
            beyond_err = beyond_err + err * tb_norm + 4 * UNIT * (c + 2) * beyond
            # P(S_{j+1} >= (L + 1) h) = P(S_j >= (L + 1) h) + sum_{k < L} s_j[k] P(B >= (L + 1 - k) h)
            #                          + P(S_j = L h) P(B >= h): positive terms
            step, c = _psum(s, tb1)
            beyond1 = min(beyond1 + step + edge * b_pos, 1.0)
            beyond1_err = beyond1_err + err * tb1_norm + edge_err * b_pos + 4 * UNIT * (c + 4) * beyond1
            # P(S_{j+1} = L h) = sum_{k < L} s_j[k] b[L - k] + P(S_j = L h) b_0 (a rounded-down law may hold 0)
            edge, edge_err = (float(over[0]) if len(over) else 0.0) + edge * b0, oerr + edge_err * b0
        if pending:
            self._flush(cells, pending, L)

    def _power_terms(self, cell, col, s, err, beyonds, L):
        """Add the terms of power ``col`` + extra to ``cell`` but the service's residual (:meth:`_flush`);
        ``beyonds`` = (P(S_j >= L h), its error, P(S_j >= (L + 1) h), its error)."""
        J0, J1 = cell.J0, cell.J1
        beyond, beyond_err, beyond1, beyond1_err = beyonds
        # P(S_j >= J h) for J <= L: the recursion's P(S_j >= L h) plus the entries in [J, L); J = L + 1: its own
        t0 = beyond + (float(s[J0:L].sum()) if J0 < L else 0.0)
        e0 = beyond_err + err * math.sqrt(L - J0) + 4 * UNIT * (pairwise_depth(L) + 2) * t0
        if J1 > L:
            t1, e1 = beyond1, beyond1_err
        else:
            t1 = beyond + (float(s[J1:L].sum()) if J1 < L else 0.0)
            e1 = beyond_err + err * math.sqrt(L - J1) + 4 * UNIT * (pairwise_depth(L) + 2) * t1
        # or 1 - P(S_j < J h) from the window's entries (one subtraction, error E_j sqrt(J)): the recursion's error
        # grows with j, this one does not; the smaller bound is taken
        t0, e0 = _complement(s, J0, err, t0, e0)
        t1, e1 = _complement(s, J1, err, t1, e1)
        cell.u0[0] += self.c0[col] * t0 + self.c1[col] * t1
        cell.u0[1] += self.c0[col] * e0 + self.c1[col] * e1
        c = 0.0
        for kind, p, i, d in cell.terms:
            if kind == "exp":
                weight = float(numpy.dot(self.periods[p][3][1][i], self.A0[: self.r, col]))
                got, cc = _psum(s[:J0], d["e"])
                d["value"] += weight * got
                d["err"] += weight * err * d["norm"]
                c = max(c, cc)
            elif kind == "matrix":
                E = self.periods[p][3][1][i]  # phases x levels
                weights = numpy.asarray(E, dtype=float) @ self.A0[: self.r, col]
                got = (s[:J0, None] * d["B"]).sum(axis=0)
                d["value"] += float(numpy.dot(weights, got))
                d["err"] += float(numpy.dot(weights, d["norms"])) * err
                c = max(c, pairwise_depth(J0) + 2 + len(weights))
            elif kind == "cut":
                got, cc = _psum(s[d["lo"]: d["hi"]], d["Q"][:, col])
                d["value"] += got
                d["err"] += err * float(d["norms"][col])
                c = max(c, cc)
        cell.count = max(cell.count, c)

    def _flush(self, cells, pending, L):
        """The service's residual (F5) for the gathered powers: Y += sum_j q_j Zc[:, j] at every cell, the overflow
        q_j of the window [0, J0) past J0 (the stream's own when J0 = L, else its own convolution), and the FFT
        error sum_j E(q_j) ||R0 Zc[:, j]||_2 with the cell's largest weights R0."""
        cols = [item[0] for item in pending]
        for cell in cells:
            for kind, p, i, d in cell.terms:
                if kind != "lattice":
                    continue
                Zk = d["Zk"][:, cols]  # rows kept x chunk
                norms = numpy.sqrt(((d["R0"] @ Zk) ** 2).sum(axis=0))
                Q = numpy.empty((self.n, len(pending)))
                for c_i, (col, over, oerr, s, err) in enumerate(pending):
                    q, qerr = _overflow(self.b, self.n, s, err, over, oerr, cell.J0, L, self.bnorms)
                    Q[: len(q), c_i] = q
                    Q[len(q):, c_i] = 0.0
                    d["err"] += qerr * float(norms[c_i])
                d["Y"] += Q @ Zk.T
                d["powers"] += len(pending)


def _complement(s, J, err, value, error):
    """(P(S_j >= J h), its bound): (``value``, ``error``) or 1 - sum s[:J] with its own bound E_j sqrt(J) (Cauchy-
    Schwarz) and the sum's rounding, whichever bound is smaller; J = L + 1 needs s_j[L], outside the window: the
    given pair."""
    if J > len(s):
        return value, error
    below = float(s[:J].sum())
    other = err * math.sqrt(J) + 4 * UNIT * (pairwise_depth(J) + 2) * below + UNIT
    return (max(1.0 - below, 0.0), other) if other < error else (value, error)


def _overflow(b, n, s, err, over, oerr, J0, L, bnorms):
    """(q, error bound): q[i] = sum_{k < J0} s[k] b[i + J0 - k], i < n, the overflow past J0 of the window below it:
    the stream's overflow when J0 = L; else by its own FFT convolution of s[max(0, J0 - n):J0] (F11)."""
    if J0 == L:
        return over[:n], oerr
    lo = max(0, J0 - n)
    a = s[lo:J0]
    size = 1 << max(1, (len(a) + len(b) - 2).bit_length())
    c = numpy.fft.irfft(numpy.fft.rfft(a, size) * fft_transform(b, size), size)
    q = numpy.maximum(c[J0 - lo: J0 - lo + n], 0.0)
    a1, a2 = fft_norms(a)
    return q, err + convolution_error(size, a1, a2, *bnorms, transform_error(size))
