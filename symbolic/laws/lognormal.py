"""A heavy-tailed time: the lognormal law, with exact moments and counts by quadrature."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

from ..counts import QuadratureCount
from ..params import param
from .base import Accuracy, TimeLaw, taylor_cells, taylor_coefficients, to_mpfr

try:
    import gmpy2 as _gmpy2
except ImportError:  # pragma: no cover - a dependency (mpmath's fast backend)
    _gmpy2 = None


def _erfc_cell(z):
    """The Taylor cell of z for erfc (:meth:`LogNormal.survival_many`): floor(8 z), None for |z| > 40."""
    import math

    f = float(z)  # the cell of the float: a point within 1e-15 of a boundary may go to the neighbour (still converges)
    return None if abs(f) > 40 else int(math.floor(8 * f))


@functools.lru_cache(maxsize=4096)
def _erfc_taylor(key: int, prec: int):
    """(erfc(c) / 2, [A_0, ..., A_N], c), c = (key + 1/2) / 8: erfc(c + h) / 2 = erfc(c) / 2 - sum_k A_k h^{k+1}
    for |h| <= 1/16, at ``prec`` bits (:meth:`LogNormal.survival_many`)."""
    import mpmath

    with mpmath.workprec(prec + 10):
        c, r = mpmath.mpf(2 * key + 1) / 16, mpmath.mpf(1) / 16
        value = mpmath.erfc(c) / 2
        lead = mpmath.exp(-c * c) / mpmath.sqrt(mpmath.pi)
        coef = taylor_coefficients(lead, lambda k, e, e1: (-2 * c * e - 2 * e1) / (k + 1), r,
                                   value * mpmath.ldexp(1, -(prec + 8)) / (1 + mpmath.exp((abs(c) + 1) / 8)))
    with mpmath.workprec(prec):
        return +value, [+v for v in coef], c


@functools.lru_cache(maxsize=4096)
def _erfc_taylor_mpfr(key: int, prec: int):
    """:func:`_erfc_taylor` as gmpy2 numbers at ``prec`` bits, converted once (for the Taylor cells' Horner)."""
    g = _gmpy2
    value, coef, centre = _erfc_taylor(key, prec)
    with g.context(g.get_context(), precision=prec):
        return to_mpfr(value), [to_mpfr(c) for c in coef], to_mpfr(centre)


__all__ = ["LogNormal"]


@functools.lru_cache(maxsize=16)
def _line_nodes(law, h: float, count: int, prec: int):
    """(X_j, G_j, t_j) for j = -count..count as gmpy2 numbers at ``prec`` bits: t_j = j h, X_j = e^{mu + sigma sqrt2
    t_j}, G_j = e^{-t_j^2} (:meth:`LogNormal._trapezoid_mp`; kept: every transform of a quantile search at one
    precision uses the same steps)."""
    import mpmath

    g = _gmpy2
    with mpmath.workprec(prec):
        mu, sigma = law._log_parameters()
        a = sigma * mpmath.sqrt(2)
    with g.context(g.get_context(), precision=prec):
        mu_g, a_g, hg = to_mpfr(mu), to_mpfr(a), g.mpfr(h)
        ts = [j * hg for j in range(-count, count + 1)]
        return [g.exp(mu_g + a_g * t) for t in ts], [g.exp(-t * t) for t in ts], ts


def _line_sum(X, G, T, centre, N, p, q, two_eta, tiny):
    """(Re, Im of sum_j G_j e^{-p X_j} e^{i (2 eta t_j - q X_j)}, the same over even j) for j = -N..N, stopped past the
    peak (j > 0) once a term's modulus is below ``tiny``: the inner loop of :meth:`LogNormal._trapezoid_mp`, on gmpy2
    numbers (call inside a gmpy2 context at the working precision). With q = 0 the phase e^{i 2 eta t_j} advances by a
    product with e^{i 2 eta h}, anchored by a sine-cosine every 16 nodes."""
    g = _gmpy2
    exp, sin_cos = g.exp, g.sin_cos
    fr = fi = cr = ci = g.mpfr(0)
    straight = not q
    if straight:
        ss, sc = sin_cos(two_eta * (T[centre + 1] - T[centre]))
    for m in range(-N, N + 1):
        k = centre + m
        x = X[k]
        mag = G[k] * exp(-p * x)
        if not straight:
            sn, cs = sin_cos(two_eta * T[k] - q * x)
        elif (m + N) % 16 == 0:
            sn, cs = sin_cos(two_eta * T[k])
        else:
            sn, cs = sn * sc + cs * ss, cs * sc - sn * ss
        re, im = mag * cs, mag * sn
        fr += re
        fi += im
        if m % 2 == 0:
            cr += re
            ci += im
        if m > 0 and mag < tiny:
            break  # past the peak, the terms only fall (e^{-s T} decays doubly exponentially)
    return fr, fi, cr, ci


@dataclass(frozen=True)
class LogNormal(TimeLaw):
    """Lognormal time with mean m and squared coefficient of variation c^2 = Var T / m^2.

    log T ~ Normal(mu, sigma^2) with sigma^2 = ln(1 + c^2), mu = ln m - sigma^2/2. Its
    moments are exact rationals, E T^n = m^n (1 + c^2)^{n(n-1)/2}, so every mean-value
    result stays exact; its tail P(T > x) decays slower than any exponential (no moment
    generating function). The LST and the count probabilities beta_k have no closed form:
    beta_k = E[Poisson(lambda T) = k] is computed by the trapezoidal rule in t = (log T - mu) /
    (sigma sqrt 2) at the working precision (:meth:`quadrature`; the rule converges
    geometrically for this analytic integrand and is refined until two levels agree).
    """

    spec = "lognormal"
    mean: object = param("mean time m", units="time", metavar="X", check="> 0")
    scv: object = param("squared coefficient of variation Var/mean^2 (> 0)", metavar="C2", check="> 0")
    accuracy = Accuracy(25, "the count probabilities are a quadrature (the trapezoidal rule below) and the "
                        "transform has no closed form, so its references are quadratures too: 25 of 40 digits")

    def lst(self, s):
        import sympy as sp

        from ..numbers import to_sympy

        x = sp.Symbol("x", positive=True)
        sigma2 = sp.log(1 + to_sympy(self.scv))
        mu = sp.log(to_sympy(self.mean)) - sigma2 / 2
        pdf = sp.exp(-(sp.log(x) - mu) ** 2 / (2 * sigma2)) / (x * sp.sqrt(2 * sp.pi * sigma2))
        return sp.Integral(sp.exp(-s * x) * pdf, (x, 0, sp.oo))

    def _moment(self, n):
        return self.mean**n * (1 + self.scv) ** (n * (n - 1) // 2)

    def count_law(self, lam):
        return QuadratureCount(self, lam)

    def quadrature(self, dps: int, level: int):
        """Nodes x_j > 0 and weights w_j > 0 with E g(T) ~ sum_j w_j g(x_j), at ``dps`` digits (mpmath).

        Trapezoidal rule in t with step h = h_0 / 2^level on |t| <= sqrt((dps + 5) ln 10) (the
        Gaussian weight is below 10^-(dps+5) beyond), x = exp(mu + sigma sqrt(2) t),
        w = h e^{-t^2} / sqrt(pi). Level L + 1 contains the nodes of level L.
        """
        import mpmath

        with mpmath.workdps(dps + 10):
            mu, sigma = self._log_parameters()  # log1p: sigma > 0 however small the scv (1e-300)
            width = mpmath.sqrt((dps + 5) * mpmath.log(10))
            # strip of analyticity of t -> exp(-lambda e^{mu + sigma sqrt2 t}) ~ pi / (2 sqrt2 sigma)
            h0 = min(mpmath.mpf(1) / 2, mpmath.pi**2 / (mpmath.sqrt(2) * sigma * (dps + 5) * mpmath.log(10)))
            h = h0 / 2**level
            count = int(mpmath.floor(width / h))
            scale = h / mpmath.sqrt(mpmath.pi)
            xs, ws = [], []
            for i in range(-count, count + 1):
                t = i * h
                xs.append(mpmath.exp(mu + sigma * mpmath.sqrt(2) * t))
                ws.append(scale * mpmath.exp(-t * t))
            return [+x for x in xs], [+w for w in ws]

    def transform_values(self, s, lam=None, digits=None):
        """beta(s) = E e^{-sT} and, with ``lam`` > 0, (beta(s) - beta(lam)) / (lam - s) at the complex points ``s``
        (:meth:`TimeLaw.transform_values`; Re s >= 0), by the trapezoidal rule in t = (ln T - mu) / (sigma sqrt 2)
        (the rule of :meth:`quadrature`) on a line turned towards the steepest descent of e^{-sT}:

            beta(s) = 1 / sqrt(pi) int e^{-(t - i eta)^2} exp(-s e^{mu + sigma sqrt2 (t - i eta)}) dt,

        the real line shifted by -i eta (the integrand is entire in t; on every line between, Re(s T) >= 0 since
        |arg s - sigma sqrt2 eta| <= pi / 2, so the ends vanish and Cauchy's theorem moves the line). With
        eta = arg(s) / (sigma sqrt2) the exponent s T is real and positive on the line (no oscillation: e^{-sT} on the
        real line oscillates about sigma sqrt2 |s| T times per unit of t); eta is capped at 2 (the factor
        e^{eta^2} <= 55 the shifted Gaussian's modulus gains), and the step follows the frequency that remains,
        omega = sigma sqrt2 |s| T_c |sin theta'| + 2 |eta| (theta' = arg s - sigma sqrt2 eta, T_c = L / (|s| cos theta')
        where e^{-sT} falls below e^{-L}): the trapezoidal error of e^{-t^2} e^{i omega t} is about
        e^{-(2 pi / h - omega)^2 / 4}, so h = pi / (omega + 2 sqrt L), at most the real-axis step
        pi^2 / (sigma sqrt2 L) of :meth:`quadrature` (the strip of analyticity). L = 40 in float64 (e^{-L} = 4e-18)
        and (D + 5) ln 10 at D digits; nodes |t| <= sqrt(L + eta^2) (the weight beyond is below e^{-L}). Each point is
        summed at step h / 2 and h (every other node): the rule converges geometrically, so |S_{h/2} - S_h| + e^{-L}
        (times e^{eta^2}, and in float64 the rounding of terms that large) bounds the error of S_h, and more than
        bounds that of S_{h/2}, which is returned. The
        quotient is the same rule on (e^{-sx} - e^{-lam x}) / (lam - s) = x e^{-lam x} expm1(w) / w, w = (lam - s) x
        (the second form for |w| <= 1: no cancellation).

        Returns (beta, quotient or None, bound): numpy arrays in float64, lists of mpc at ``digits`` digits."""
        import cmath
        import math

        import numpy

        raw = numpy.asarray(s, dtype=object).ravel()
        if lam is not None:  # beta(lam) on the real line: the quotient of the points far from lam
            raw = numpy.concatenate([raw, numpy.asarray([lam], dtype=object)])
        pts = [complex(z) for z in raw]
        L = 40.0 if digits is None else (digits + 5) * math.log(10)
        mu, sigma = (float(v) for v in self._log_parameters())
        a = sigma * math.sqrt(2)
        h0 = min(0.5, math.pi ** 2 / (a * L))
        plan: dict = {}
        for i, z in enumerate(pts):
            theta = cmath.phase(z) if z != 0 else 0.0
            eta = max(-2.0, min(2.0, theta / a))
            rest = theta - a * eta
            cap = L / (abs(z) * math.cos(rest)) if z != 0 and math.cos(rest) > 1e-3 else math.exp(mu + a * 8)
            omega = a * abs(z) * cap * abs(math.sin(rest)) + 2 * abs(eta)
            need = math.pi / (omega + 2 * math.sqrt(L))
            k = max(0, math.ceil(math.log2(h0 / need))) if need < h0 else 0
            near = lam is not None and abs(complex(lam) - z) <= abs(complex(lam)) / 4
            plan.setdefault((k, eta, near), []).append(i)
        n = len(pts)
        if digits is None:
            beta = numpy.zeros(n, dtype=complex)
            quot = numpy.zeros(n, dtype=complex) if lam is not None else None
            bound = numpy.zeros(n)
        else:
            beta, quot, bound = [None] * n, ([None] * n if lam is not None else None), [None] * n
        for (k, eta, near), idx in plan.items():
            h = h0 / 2 ** (k + 1)  # the sum at h is checked against the one at 2 h, the step the frequency asks
            N = int(math.sqrt(L + eta * eta) / h) + 1
            if digits is None:
                self._trapezoid_float(numpy.asarray([pts[i] for i in idx]), idx, lam if near else None, mu, a, h, N,
                                      eta, L, beta, quot, bound)
            else:
                self._trapezoid_mp([raw[i] for i in idx], idx, lam if near else None, h, N, eta, L, digits, beta,
                                   quot, bound)
        if lam is None:
            return beta, quot, bound
        n -= 1  # the last point is lam itself: the quotient elsewhere, where |lam - s| > lam / 4, is the difference
        bl, el = beta[n], bound[n]
        done = {i for (_, _, near), idx in plan.items() if near for i in idx}
        for i in range(n):
            if i not in done:
                d = raw[n] - raw[i] if digits is not None else complex(lam) - pts[i]
                quot[i] = (beta[i] - bl) / d
                bound[i] = (bound[i] + el) / abs(d)
        return beta[:n], quot[:n], bound[:n]

    def _trapezoid_float(self, z, idx, lam, mu, a, h, N, eta, L, beta, quot, bound):
        """:meth:`transform_values` in float64 for the points ``z`` on the line Im t = -eta at step h (and 2 h)."""
        import math

        import numpy

        i = numpy.arange(-N, N + 1)
        t = i * h - 1j * eta
        x = numpy.exp(mu + a * t)
        w = h * numpy.exp(-t * t) / math.sqrt(math.pi)
        even = (i % 2) == 0
        with numpy.errstate(all="ignore"):
            e = numpy.exp(-z[:, None] * x[None, :])
            fine = e @ w
            coarse = 2 * (e[:, even] @ w[even])
            scale = math.exp(eta * eta)
            beta[idx] = fine
            bound[idx] = numpy.abs(fine - coarse) + math.exp(-L) * scale + 1e-16 * scale * math.sqrt(2 * N + 1)
            if lam is not None:
                d = (lam - z)[:, None]
                wv = d * x[None, :]
                small = numpy.abs(wv) <= 1
                el = numpy.exp(-lam * x)[None, :]
                phi = numpy.expm1(numpy.where(small, wv, 0)) / numpy.where(small & (wv != 0), wv, 1)
                phi = numpy.where(small & (wv == 0), 1, phi)
                q = numpy.where(small, x[None, :] * el * phi, (e - el) / numpy.where(small, 1, d))
                q = numpy.where(numpy.isfinite(q), q, 0)
                qf = q @ w
                qc = 2 * (q[:, even] @ w[even])
                quot[idx] = qf
                bound[idx] = numpy.maximum(bound[idx], numpy.abs(qf - qc) + math.exp(-L) * scale * 10)

    def _trapezoid_mp(self, z, idx, lam, h, N, eta, L, digits, beta, quot, bound):
        """:meth:`transform_values` at ``digits`` digits (10 guard digits and log10 e^{eta^2} more) for the points
        ``z`` (their positions ``idx``) on the line Im t = -eta. Without the quotient, each term is written on the real
        nodes t_j = j h of the line's own parametrisation, so that the nodes are shared by every point and every line
        (:func:`_line_nodes`, kept per step and precision for the later transforms of a search)::

            w_j e^{-s x_j} = (h e^{eta^2} / sqrt(pi)) G_j e^{-p X_j} e^{i (2 eta t_j - q X_j)},

        X_j = e^{mu + sigma sqrt2 t_j}, G_j = e^{-t_j^2}, p + i q = s e^{-i sigma sqrt2 eta}. Where eta is not capped
        (|arg s| < 2 sigma sqrt2) it is taken as arg(s) / (sigma sqrt2) at the working precision (the float eta of the
        plan differs from it by a rounding: Cauchy's theorem gives the same integral on either line, and the step and
        the node count chosen for the float one hold for it), so that p = |s|, q = 0 and the phase 2 eta t_j advances
        by one complex product per node (anchored by a sine-cosine every 16 nodes: the products' rounding stays below
        20 units of the last place, far inside the 10 guard digits); a capped eta keeps q and one sine-cosine per node.
        One real exponential per term, on gmpy2 numbers (correctly rounded, as mpf, at the same precision). The
        quotient (points near ``lam``) runs on mpmath numbers (:meth:`_trapezoid_mp_quotient`)."""
        import math

        import mpmath

        if lam is not None or _gmpy2 is None:
            return self._trapezoid_mp_quotient(z, idx, lam, h, N, eta, L, digits, beta, quot, bound)
        g = _gmpy2
        with mpmath.workdps(digits + 10 + int(eta * eta / math.log(10)) + 1):
            prec = mpmath.mp.prec
            mu, sigma = self._log_parameters()
            a = sigma * mpmath.sqrt(2)
            X, G, T = _line_nodes(self, h, int(math.sqrt(L + 4.0) / h) + 1, prec)  # every line: |eta| <= 2
            centre = len(X) // 2
            rpi = mpmath.mpf(h) / mpmath.sqrt(mpmath.pi)
            tiny = mpmath.mpf(10) ** -(digits + 30)
            make, from_man_exp = mpmath.mp.make_mpf, mpmath.libmp.from_man_exp

            def back(v):
                man, exp = v.as_mantissa_exp()
                return make(from_man_exp(int(man), int(exp), prec, "n"))

            for j, zj in zip(idx, z):
                zj = mpmath.mpmathify(zj)
                if abs(eta) < 2:  # the line of steepest descent itself: s e^{-i a eta} = |s|
                    em = mpmath.arg(zj) / a if zj != 0 else mpmath.mpf(0)
                    p, q = abs(zj), mpmath.mpf(0)
                else:
                    em = mpmath.mpf(eta)
                    zt = zj * mpmath.exp(mpmath.mpc(0, -1) * a * em)
                    p, q = zt.real, zt.imag
                scale = rpi * mpmath.exp(em * em)
                with g.context(g.get_context(), precision=prec):
                    fr, fi, cr, ci = _line_sum(X, G, T, centre, N, to_mpfr(p), to_mpfr(q), 2 * to_mpfr(em),
                                               to_mpfr(tiny / scale))
                fb = mpmath.mpc(back(fr), back(fi)) * scale
                cb = mpmath.mpc(back(cr), back(ci)) * scale
                beta[j] = +fb
                bound[j] = abs(fb - 2 * cb) + mpmath.exp(-L) * math.exp(eta * eta)

    def _trapezoid_mp_quotient(self, z, idx, lam, h, N, eta, L, digits, beta, quot, bound):
        """:meth:`transform_values` at ``digits`` digits (mpmath, 10 guard digits and log10 e^{eta^2} more) for the
        points ``z`` (their positions ``idx``) on the line Im t = -eta, with the quotient when ``lam`` is given."""
        import math

        import mpmath

        with mpmath.workdps(digits + 10 + int(eta * eta / math.log(10)) + 1):
            mu, sigma = self._log_parameters()
            a = sigma * mpmath.sqrt(2)
            hm, em = mpmath.mpf(h), mpmath.mpf(eta)
            rpi = 1 / mpmath.sqrt(mpmath.pi)
            nodes = []
            for i in range(-N, N + 1):
                t = mpmath.mpc(i * hm, -em)
                nodes.append((i % 2 == 0, mpmath.exp(mu + a * t), hm * mpmath.exp(-t * t) * rpi))
            lamm = None if lam is None else mpmath.mpmathify(lam)
            el = None if lam is None else [mpmath.exp(-lamm * x) for _, x, _ in nodes]
            tiny = mpmath.mpf(10) ** -(digits + 30)
            for j, zj in zip(idx, z):
                zj = mpmath.mpmathify(zj)
                fb = cb = fq = cq = mpmath.mpc(0)
                for m, (is_even, x, w) in enumerate(nodes):
                    e = mpmath.exp(-zj * x)
                    we = w * e
                    fb += we
                    if is_even:
                        cb += we
                    if lamm is not None:
                        d = lamm - zj
                        wv = d * x
                        if abs(wv) <= 1:
                            q = x * el[m] * (mpmath.expm1(wv) / wv if wv != 0 else 1)
                        else:
                            q = (e - el[m]) / d
                        fq += w * q
                        if is_even:
                            cq += w * q
                    if abs(we) < tiny and m > N and (lamm is None or abs(w * el[m]) < tiny):
                        break  # past the peak, the terms only fall (e^{-s T} decays doubly exponentially)
                beta[j] = +fb
                err = abs(fb - 2 * cb)
                if lamm is not None:
                    quot[j] = +fq
                    err = max(err, abs(fq - 2 * cq))
                bound[j] = err + mpmath.exp(-L) * math.exp(eta * eta)

    def _log_parameters(self):
        import mpmath

        scv, mean = Fraction(self.scv), Fraction(self.mean)
        sigma = mpmath.sqrt(mpmath.log1p(mpmath.mpf(scv.numerator) / scv.denominator))
        return mpmath.log(mpmath.mpf(mean.numerator) / mean.denominator) - sigma**2 / 2, sigma

    def survival_kernel(self):
        """(kernel function, its law arguments) of the float64 survival function (the numeric layer's kernel
        ``survival``, which generated code ships): ``lognormal_survival`` (mean, scv)."""
        return "lognormal_survival", (self.mean, self.scv)

    def survival(self, x):
        """P(T > x) = erfc((ln x - mu) / (sigma sqrt 2)) / 2 (mpmath)."""
        import mpmath

        if x <= 0:
            return mpmath.mpf(1)
        mu, sigma = self._log_parameters()
        return mpmath.erfc((mpmath.log(x) - mu) / (sigma * mpmath.sqrt(2))) / 2

    def survival_many(self, xs, digits=None):
        """P(T > x) = erfc(z) / 2, z = (ln x - mu) / (sigma sqrt 2), at every point of ``xs`` at once
        (:meth:`TimeLaw.survival_many`; 1 for x <= 0): mu and sigma once per batch. float64: numpy's log and the C
        library's erfc (``math.erfc``, relative error of a few ulp for every z, also deep in the tail; z is
        computed to about (|ln x| + |mu|) eps / sigma, which moves erfc(z) by 2 |z| times that relative). ``digits``
        D: at D + 5 + log10(1 + 2 z^2) + |z| / (8 ln 10) digits for the largest |z| of the batch (the condition number:
        an error e in z changes erfc(z) by about 2 |z| e; and the cancellation in a Taylor cell), from Taylor cells of
        width 1/8 in z around fixed centres c (the scalar ``erfc`` for |z| > 40; :func:`~.base.taylor_cells`)::

            erfc(c + h) / 2 = erfc(c) / 2 - e^{-c^2} / sqrt(pi) sum_{k>=0} e_k h^{k+1} / (k + 1),
            sum_k e_k h^k = e^{-2 c h - h^2},   e_0 = 1,  (k + 1) e_{k+1} = -2 c e_k - 2 e_{k-1}

        (DLMF 7.2.2 differentiated), stopped when two consecutive terms at h = 1/16 are below 2^-(p + 8) of the
        value over e^{(|c| + 1) / 8} (p the bits of the working digits); erfc(c) and the coefficients are kept per cell
        and precision, shared by every later batch (the tails of a quantile search)."""
        import math

        import mpmath
        import numpy

        if digits is None:  # the registered kernel (:data:`~.base.FLOAT64_SURVIVAL`), else mpmath point by point
            from .base import float64_survival

            got = float64_survival(self, numpy.asarray(xs, dtype=float))
            if got is not None:
                return got[0]
            with mpmath.workdps(17):
                return numpy.array([float(self.survival(mpmath.mpf(float(x)))) if x > 0 else 1.0 for x in xs])
        if _gmpy2 is None:  # pragma: no cover - a dependency; mpf arithmetic is slower, not different
            return self._survival_many_mp(xs, digits)
        g = _gmpy2
        xs = [x if isinstance(x, mpmath.mpf) else mpmath.mpf(x) for x in xs]
        # the points as gmpy2 numbers, exactly (a precision that holds every mantissa)
        with g.context(g.get_context(), precision=max([53] + [x._mpf_[3] for x in xs])):
            xg = [to_mpfr(x) if x > 0 else None for x in xs]
        mu_f, sigma_f = (float(v) for v in self._log_parameters())  # the largest |z| for the guard digits: a float
        top = max((abs(((math.log(float(x)) if float(x) > 0 else float(g.log(x))) - mu_f) / sigma_f) / math.sqrt(2)
                   for x in xg if x is not None), default=0)  # estimate (one digit spare below)
        guard = 6 + int(math.ceil(math.log10(1 + 2 * float(top) ** 2) + min(float(top), 40) / 8 / math.log(10)))
        with mpmath.workdps(digits + guard):
            mu, sigma = self._log_parameters()
            scale = 1 / (sigma * mpmath.sqrt(2))
            prec = mpmath.mp.prec
            with g.context(g.get_context(), precision=prec):
                mu_g, scale_g = to_mpfr(mu), to_mpfr(scale)
                zero = g.mpfr(0)
                zs = [zero if x is None else (g.log(x) - mu_g) * scale_g for x in xg]
            out = taylor_cells(zs, _erfc_cell, lambda key: _erfc_taylor_mpfr(key, prec), prec)
            for i, (x, z) in enumerate(zip(xs, zs)):
                if x <= 0:
                    out[i] = mpmath.mpf(1)
                elif out[i] is None:
                    man, exp = z.as_mantissa_exp()
                    out[i] = mpmath.erfc(mpmath.mpf((int(man), int(exp)))) / 2
            return out

    def _survival_many_mp(self, xs, digits):
        """:meth:`survival_many` at ``digits`` digits on mpf numbers (without gmpy2)."""
        import math

        import mpmath

        with mpmath.workdps(15):  # the largest |z| for the guard digits: a float estimate (one digit spare below)
            mu, sigma = (float(v) for v in self._log_parameters())
            top = max((abs(((math.log(float(x)) if float(x) > 0 else float(mpmath.log(x))) - mu) / sigma) / math.sqrt(2)
                       for x in xs if x > 0), default=0)
        guard = 6 + int(math.ceil(math.log10(1 + 2 * float(top) ** 2) + min(float(top), 40) / 8 / math.log(10)))
        with mpmath.workdps(digits + guard):
            mu, sigma = self._log_parameters()
            scale = 1 / (sigma * mpmath.sqrt(2))
            zs = [mpmath.mpf(0) if x <= 0 else (mpmath.log(x) - mu) * scale for x in xs]
            prec = mpmath.mp.prec
            out = taylor_cells(zs, _erfc_cell, lambda key: _erfc_taylor(key, prec), prec)
            for i, (x, z) in enumerate(zip(xs, zs)):
                if x <= 0:
                    out[i] = mpmath.mpf(1)
                elif out[i] is None:
                    out[i] = mpmath.erfc(z) / 2
            return out

    def survival_analytic_at_zero(self) -> bool:
        """False: 1 - P(T > x) = erfc((mu - ln x) / (sigma sqrt 2)) / 2 vanishes faster than any power of x at 0."""
        return False

    def stop_loss(self, x):
        """E (T - x)^+ = m Phibar(z - sigma) - x Phibar(z), z = (ln x - mu) / sigma, Phibar(y) = erfc(y / sqrt 2) / 2;
        the difference loses about 2 log10(2 + |z|) digits, added as guard digits."""
        import mpmath

        mean = Fraction(self.mean)
        if x <= 0:
            return mpmath.mpf(mean.numerator) / mean.denominator - x
        with mpmath.extradps(10):
            mu, sigma = self._log_parameters()
            z = (mpmath.log(x) - mu) / sigma
        guard = 10 + 2 * int(mpmath.log10(2 + abs(z)))
        with mpmath.extradps(guard):
            mu, sigma = self._log_parameters()
            z = (mpmath.log(x) - mu) / sigma
            m = mpmath.mpf(mean.numerator) / mean.denominator
            r2 = mpmath.sqrt(2)
            value = m * mpmath.erfc((z - sigma) / r2) / 2 - x * mpmath.erfc(z / r2) / 2
        return +value

    def sample(self, rng, size):
        import math

        sigma2 = math.log1p(float(self.scv))
        mu = math.log(float(self.mean)) - sigma2 / 2
        return rng.lognormal(mu, math.sqrt(sigma2), size)

    # -- scipy.stats-style hooks (:mod:`qderive.symbolic.distribution`) --------------------------------------
    def _pdf(self, x):
        """f(x) = exp(-(ln x - mu)^2 / (2 sigma^2)) / (x sigma sqrt(2 pi)) (float64; 0 at x = 0)."""
        import math

        import numpy

        mu, sigma = (float(v) for v in self._log_parameters())
        out = numpy.zeros(x.shape)
        pos = x > 0
        z = (numpy.log(x[pos]) - mu) / sigma
        out[pos] = numpy.exp(-z * z / 2 - numpy.log(x[pos])) / (sigma * math.sqrt(2 * math.pi))
        return out

    def _to_scipy(self):
        import math

        from scipy import stats

        mu, sigma = (float(v) for v in self._log_parameters())
        return stats.lognorm(sigma, scale=math.exp(mu))

    @classmethod
    def _from_scipy(cls, frozen):
        """scipy's lognorm(s, scale): c^2 = e^{s^2} - 1, m = scale e^{s^2/2} (15 significant digits)."""
        import math

        from ..distribution import decimal_fraction, scipy_arguments
        from ..errors import ParameterError

        args = scipy_arguments(frozen, "lognorm")
        if args is None:
            return None
        (s,), loc, scale = args
        if loc != 0:
            raise ParameterError("loc", "must be 0 for a time law (a shifted lognormal law is not converted)", loc)
        return cls(decimal_fraction(float(scale) * math.exp(float(s) ** 2 / 2), 15),
                   decimal_fraction(math.expm1(float(s) ** 2), 15))

    @classmethod
    def examples(cls):
        return (cls(Fraction(1, 5), Fraction(1, 2)), cls(Fraction(1, 10), 2))
