"""The count probabilities of a law with only a numeric transform (the lognormal) from its size-biased laws.

The probability of K Poisson(lambda) arrivals during a time T of law L (``docs/theory/chapter2.md`` section 0) is

    beta_K = E[(lambda T)^K e^{-lambda T}] / K! = lambda^K m_K / K! * L_K*(lambda),

L_K the size-biased law of order K, density x^K f(x) / m_K (m_K = E T^K): the derivative (-1)^K L*^(K)(lambda) / K!
written as a transform (:func:`size_biased`). For the lognormal, L_K is the lognormal of the same sigma^2 and the
normal's mean shifted to mu + K sigma^2 (Johnson, Kotz and Balakrishnan 1994, vol. 1, ch. 14, eq. (14.9)), and in
t = (ln x - mu) / (sigma sqrt 2), x(t) = e^{mu + a t}, a = sigma sqrt 2, the product above is one integral:

    beta_K = (1 / sqrt(pi)) int exp(phi_K(t)) dt,                                                            (S1)
    phi_K(t) = -t^2 + K (mu + a t + ln lambda) - lambda x(t) - ln K!

(the factor m_K e^{-(t - K sigma^2 / a)^2} of the shifted Gaussian is e^{-t^2 + K (mu + a t)}). phi_K is strictly
concave (phi_K'' = -2 - lambda a^2 x(t) <= -2): one peak t*_K, the root of phi_K'(t) = -2 t + K a - lambda a x(t),
with curvature kappa = 2 + lambda a^2 x(t*). The trapezoidal rule on a grid *centred at the peak* (:func:`count_terms`)
is therefore accurate relative to beta_K for every K, however small (the law's own rule, centred at the size-biased
law's Gaussian, misses the peak once K sigma^2 / a exceeds its window: its error bound is absolute): the nodes cover
phi_K >= phi_K(t*) - L, L = (D + 5) ln 10 (phi_K below its peak by at least (t - t*)^2, so the rest is below e^{-L}
of the peak); the step h balances the growth of the integrand off the real line against the rule's error
(:func:`_step`: h = pi sqrt(2 / (kappa L)) from the curvature kappa at the peak, within the strip |Im t| < pi / (2 a)
where Re(lambda x(t)) stays positive, the law's own rule's strip, :meth:`~qderive.symbolic.laws.lognormal.LogNormal.
quadrature`); the sum at h is compared with the one at 2 h (every other node): the rule's error falls like
e^{-c / h}, so the finer sum's is about the square of the coarser one's, which their difference estimates; h is
halved until that difference is below 10^-(D + 5) / 2 of the sum. Cost: 120 to 530 nodes at 76 digits
(K = 1500 to 0), one gmpy2 exponential each (lambda x(t) by one product per node: its rounding grows by an ulp a
node, far inside the 10 guard digits).

The tails P(K > k) and sum_{i > k} P(K > i) over k = 0..n (:func:`size_biased_sequences`) come from the law's totals,
P(K > k) = 1 - sum_{j <= k} beta_j and sum_{i > k} P(K > i) = lambda E T - sum_{i <= k} P(K > i), with as many extra
digits as the subtractions cancel: log10 of 1 / P(K > n) and of lambda E T / sum_{i > n} P(K > i), bounded by the law's
own survival function and stop-loss transform (P(K > n) >= P(T > (n + 1) / lambda) / 2: the median of a Poisson law of
integer mean m is m; E (K - n - 1)^+ >= lambda E (T - (n + 1) / lambda)^+ by Jensen's inequality).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

__all__ = ["size_biased", "has_size_biased_counts", "count_terms", "count_terms_float64", "size_biased_sequences"]


def size_biased(law, j: int):
    """The size-biased law of order j of a law with only a numeric transform, density x^j f(x) / m_j (m_j = E T^j),
    as a law of the same family, or None when the family has no such form. The lognormal: x^j f(x; mu, sigma^2) =
    e^{j mu + j^2 sigma^2 / 2} f(x; mu + j sigma^2, sigma^2), the lognormal of mean m (1 + c^2)^j and the same scv
    c^2 (Johnson, Kotz and Balakrishnan 1994, vol. 1, ch. 14, eq. (14.9): the moments
    E T^r = e^{r mu + r^2 sigma^2 / 2} of which this is the shift of the normal's mean)."""
    import dataclasses

    from ..symbolic.laws.lognormal import LogNormal

    if not isinstance(law, LogNormal):
        return None
    return law if j == 0 else dataclasses.replace(law, mean=law.mean * (1 + law.scv) ** j)


def has_size_biased_counts(law) -> bool:
    """Whether :func:`count_terms` computes the counts of ``law`` (its size-biased laws are of its own family with a
    Gaussian parametrisation: the lognormal)."""
    return size_biased(law, 1) is not None


def _peak(K: int, mu: float, a: float, lam: float) -> tuple[float, float]:
    """(t*, kappa) of (S1): the root of phi_K'(t) = -2 t + K a - lambda a e^{mu + a t} (decreasing) by bisection
    refined by Newton's steps in float64 (the centre needs no more: the rule's nodes cover the peak's neighbourhood
    whatever the rounding of its centre), and kappa = -phi_K''(t*)."""
    def d1(t):
        return -2 * t + K * a - lam * a * math.exp(min(mu + a * t, 700.0))

    lo, hi = -1.0, 1.0
    while d1(lo) < 0:
        lo *= 2
    while d1(hi) > 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if d1(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, abs(mid)):
            break
    t = (lo + hi) / 2
    return t, 2 + lam * a * a * math.exp(mu + a * t)


def _reach(phi, t0: float, direction: float, L: float) -> float:
    """The distance u >= 0 from the peak t0 at which the concave phi (float64) has fallen by L (at most sqrt(L): it
    falls by at least u^2), by bisection."""
    lo, hi = 0.0, math.sqrt(L) * 1.001 + 1e-9
    top = phi(t0)
    for _ in range(60):
        mid = (lo + hi) / 2
        if top - phi(t0 + direction * mid) < L:
            lo = mid
        else:
            hi = mid
    return hi


def _step(kappa: float, a: float, L: float) -> float:
    """The trapezoidal step h of (S1) for an error e^{-L} relative: on the line Im t = d the integrand's modulus is
    at most e^{kappa d^2 / 2} times its peak's scale (Re phi_K(t + i d) = phi_K(t) + d^2 + lambda x(t) (1 - cos(a d)),
    1 - cos(a d) <= a^2 d^2 / 2, lambda a^2 x(t*) = kappa - 2) while the rule's error is e^{-2 pi d / h} of it:
    d = 2 pi / (kappa h) balances the two, h = pi sqrt(2 / (kappa L)), within the strip d <= pi / (2 a) where
    Re(lambda x(t)) >= 0 (else h = 2 pi d / (L + kappa d^2 / 2) at d = pi / (2 a))."""
    h = math.pi * math.sqrt(2 / (kappa * L))
    d = 2 * math.pi / (kappa * h)
    edge = math.pi / (2 * a)
    if d > edge:
        h = 2 * math.pi * edge / (L + kappa * edge * edge / 2)
    return h


def count_terms(law, lam, ks, digits: int) -> list:
    """[beta_K for K in ``ks``] of ``law`` (a lognormal) at the batch rate ``lam`` (exact), each to ``digits`` relative
    digits, as mpmath numbers at the current precision: the trapezoidal rule of (S1) on a grid centred at the peak of
    each integrand (module docstring), in gmpy2 numbers (a correctly rounded exponential per node)."""
    import gmpy2

    work = digits + 10
    L = (digits + 5) * math.log(10)
    lam_q = Fraction(lam)
    with mpmath.workdps(work + 10):
        mu_m, sigma_m = law._log_parameters()
        a_m = sigma_m * mpmath.sqrt(2)
        lnlam_m = mpmath.log(mpmath.mpf(lam_q.numerator) / lam_q.denominator)
        mu, a, lnlam, lamf = float(mu_m), float(a_m), float(lnlam_m), float(lam_q)
        rpi_m = 1 / mpmath.sqrt(mpmath.pi)
    prec = mpmath.libmp.dps_to_prec(work + 5)
    out = []
    with gmpy2.context(gmpy2.get_context(), precision=prec):
        def g(x):  # an mpf at the working digits as an mpfr, exactly
            sign, man, exp, _ = x._mpf_
            return gmpy2.mul_2exp(gmpy2.mpfr(-int(man) if sign else int(man)), int(exp))

        mu_g, a_g, lnlam_g, rpi = g(mu_m), g(a_m), g(lnlam_m), g(rpi_m)
        lam_g = gmpy2.mpfr(gmpy2.mpq(lam_q.numerator, lam_q.denominator))
        for K in ks:
            K = int(K)
            t0, kappa = _peak(K, mu, a, lamf)
            lgam = gmpy2.lgamma(K + 1)[0]
            base = K * (mu_g + lnlam_g) - lgam

            def phi_f(t, K=K):
                x = mu + a * t
                return -t * t + K * (x + lnlam) - lamf * math.exp(min(x, 700.0))

            left, right = _reach(phi_f, t0, -1.0, L), _reach(phi_f, t0, 1.0, L)
            h = _step(kappa, a, L)
            tol = gmpy2.mpfr(10) ** -((digits + 5) / 2)
            centre = gmpy2.mpfr(t0)
            for _ in range(8):
                lo, hi = -math.ceil(left / h), math.ceil(right / h)
                hg = gmpy2.mpfr(h)
                fine = coarse = gmpy2.mpfr(0)
                Ka = K * a_g
                lx = lam_g * gmpy2.exp(mu_g + a_g * (centre + lo * hg))  # lambda x(t_j), by one product per node
                step = gmpy2.exp(a_g * hg)
                for j in range(lo, hi + 1):
                    t = centre + j * hg
                    v = gmpy2.exp(base + t * (Ka - t) - lx)
                    lx *= step
                    fine += v
                    if j % 2 == 0:
                        coarse += v
                fine, coarse = fine * hg, 2 * coarse * hg
                if abs(fine - coarse) <= tol * fine:
                    break
                h /= 2
            else:  # pragma: no cover - the step's analysis makes the first or second pass converge
                from ..symbolic.errors import NumericalError

                raise NumericalError(f"the count probability beta_{K} of the {law} time did not converge")
            man, exp = (fine * rpi).as_mantissa_exp()
            out.append(mpmath.mpf((int(man), int(exp))))
    return out


#: :func:`count_terms` asked for at most this many digits evaluates (S1) in float64 (:func:`count_terms_float64`)
FLOAT64_DIGITS = 11


def count_terms_float64(law, lam, ks) -> list:
    """[beta_K for K in ``ks``] as :func:`count_terms` in float64 (numpy over each rule's nodes), to about 1e-11
    relative: the exponent phi_K(t) of (S1) is a sum of terms up to |K ln K| in size, rounded to about 1e-16 of that
    (1e-12 at K = 10^4), and the rule's error is set below e^{-L}, L = 16 ln 10, with its check on the squared error.
    For the counts that need no more (:meth:`~qderive.numeric.engines.vacation_finite_wait.FiniteWait._sweep_counts`:
    the backward sweep's far counts, damped by c_max^(T - k))."""
    import numpy as np

    L = 16 * math.log(10)
    with mpmath.workdps(30):
        mu_m, sigma_m = law._log_parameters()
        mu, a = float(mu_m), float(sigma_m * mpmath.sqrt(2))
    lamf = float(Fraction(lam))
    lnlam = math.log(lamf)
    out = []
    for K in ks:
        K = int(K)
        t0, kappa = _peak(K, mu, a, lamf)
        base = K * (mu + lnlam) - math.lgamma(K + 1)

        def phi_f(t, K=K):
            x = mu + a * t
            return -t * t + K * (x + lnlam) - lamf * math.exp(min(x, 700.0))

        left, right = _reach(phi_f, t0, -1.0, L), _reach(phi_f, t0, 1.0, L)
        h = _step(kappa, a, L)
        for _ in range(8):
            j = np.arange(-math.ceil(left / h), math.ceil(right / h) + 1)
            t = t0 + j * h
            v = np.exp(base + t * (K * a - t) - lamf * np.exp(np.minimum(mu + a * t, 700.0)))
            fine, coarse = h * v.sum(), 2 * h * v[j % 2 == 0].sum()
            if abs(fine - coarse) <= 1e-8 * fine:
                break
            h /= 2
        out.append(fine / math.sqrt(math.pi))
    return out


def size_biased_sequences(law, lam, n: int, ctx):
    """(beta, P(K > k), sum_{i>k} P(K > i)) for k = 0..n of the arrivals K during a time of ``law`` (a lognormal) at
    the batch rate ``lam``, as arrays of the mpmath context ``ctx`` (module docstring): beta by :func:`count_terms`,
    the tails from the law's totals 1 and lambda E T at the extra digits their subtractions cancel."""
    lam_q = Fraction(lam)
    with mpmath.workdps(20):
        lm = mpmath.mpf(lam_q.numerator) / lam_q.denominator
        mean = Fraction(law.moment(1))
        lmean = lm * mean.numerator / mean.denominator
        x = (n + 1) / lm
        tail_low = law.survival(x) / 2
        tail2_low = lm * law.stop_loss(x)
        lost = max(0.0, -float(mpmath.log10(tail_low)) if tail_low > 0 else math.inf,
                   float(mpmath.log10(lmean / tail2_low)) if tail2_low > 0 else math.inf)
    if not math.isfinite(lost):
        from ..symbolic.errors import NumericalError

        raise NumericalError(f"the tails of the arrivals during the {law} time beyond {n} lie below the working range")
    digits = ctx.dps + int(math.ceil(lost)) + 3 + len(str(n + 1))
    key = (law, lam_q, ctx.dps)
    kept = _KEPT.get(key)
    if kept is not None and kept[0] >= n and kept[1] >= digits:  # a longer run's prefix, made with at least the digits
        with ctx:
            return tuple(ctx.array([+v for v in seq[: n + 1]]) for seq in kept[2])
    with mpmath.workdps(digits + 5):
        beta = count_terms(law, lam_q, range(n + 1), digits)
        tail, tail2 = [], []
        left = mpmath.mpf(1)  # P(K > k) = 1 - sum_{j <= k} beta_j
        left2 = mpmath.mpf(lam_q.numerator) / lam_q.denominator * mean.numerator / mean.denominator  # E K = lambda E T
        for b in beta:
            left -= b
            tail.append(left)
            left2 -= left  # sum_{i > k} P(K > i) = E K - sum_{i <= k} P(K > i)
            tail2.append(left2)
    if len(_KEPT) >= 8:
        _KEPT.pop(next(iter(_KEPT)))
    _KEPT[key] = (n, digits, (beta, tail, tail2))
    with ctx:
        return ctx.array([+v for v in beta]), ctx.array([+v for v in tail]), ctx.array([+v for v in tail2])


#: the last runs of :func:`size_biased_sequences` by (law, lambda, the context's digits): (n, working digits, the
#: three sequences as mpf lists). Each term and tail at index k does not depend on n, and the working digits only grow
#: with n (the subtractions' loss at the last index), so a run over 0..n serves every shorter one at the same digits:
#: the finite room asks 0..r + 1 for its embedded law and 0..r - 1 for the wait's rows (0.4 s each at r = 200)
_KEPT: dict = {}
