"""Erlang B for the M/M/n/n window model, its inverse problems, and multi-service normalisation.

The SCP front end of seed 003 holds ``n`` windows; a first message (BEGIN) takes a
window until its response (``spec/other-models.md`` section D). With Poisson
arrivals of rate lambda and exponential holding times of mean 1/mu this is the loss
system M/M/n/n with offered load rho = lambda/mu:

* p_k = (rho^k/k!) / sum_{l<=n} rho^l/l!                      (Wang & Liao, eq. (1))
* blocking p_n = B(n, rho), carried rate lambda_e = lambda (1 - p_n)       (eq. (2))
* mean busy windows N = sum_k k p_k = lambda_e/mu                           (eq. (3))
* response time ws = N/lambda_e = 1/mu (Little)                             (eq. (4))

B(n, rho) is computed by the stable recursion (``spec/other-models.md`` section D)

    B(0) = 1,    B(k) = rho B(k-1) / (k + rho B(k-1)),

never from factorials: every step is a ratio of positive numbers and shrinks a
relative error (d log B(k) / d log B(k-1) = k/(k + rho B(k-1)) <= 1), so n = 10^5
and rho = 10^5 Erlang run in float64 without overflow. The complement needs no
subtraction either: 1 - B(n) = n / (n + rho B(n-1)). In float64 a blocking below
~1e-280 is continued in logarithms (the recursion is then a pure product
rho/k, since rho B(k-1) is negligible beside k), so :func:`erlang_b_log` stays finite
where the probability itself underflows.

The same code runs in float64 and in mpmath (pass a :class:`~qderive.numeric.backend.Backend`
and call inside ``with bk:``).

>>> import sympy as sp
>>> from qderive.numeric.backend import FLOAT64
>>> round(erlang_b(10, sp.Integer(5), FLOAT64), 12)
0.018384570337
>>> smallest_servers(sp.Rational(8108, 1000), sp.Rational(1, 100), FLOAT64)
15
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import sympy as sp

from qderive.symbolic._exact import ParameterError, exact, require_positive

from .backend import Backend

__all__ = [
    "ErlangBRecursion",
    "erlang_b_recursion",
    "erlang_b",
    "erlang_b_log",
    "carried_load",
    "smallest_servers",
    "load_for_blocking",
    "ServiceMix",
]

# Below this value the float64 recursion switches to logarithms (rho <= 1e5 keeps
# rho * B(k-1) below 1e-270, negligible beside k >= 1, so B(k) = (rho/k) B(k-1) exactly).
_FLOAT64_TINY = 1e-280
_MAX_SERVERS = 10**7


def _check_servers(n, name: str = "servers") -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        value = exact(n, name)
        if not (value.is_Integer):
            raise ParameterError(f"{name} = {n}: must be an integer >= 1")
        n = int(value)
    if n < 1:
        raise ParameterError(f"{name} = {n}: must be an integer >= 1")
    if n > _MAX_SERVERS:
        raise ParameterError(f"{name} = {n}: must be <= {_MAX_SERVERS}")
    return n


def _check_load(rho, name: str = "load") -> sp.Expr:
    rho = require_positive(exact(rho, name), name)
    if rho.free_symbols:
        raise ParameterError(f"{name} = {rho}: must be a number")
    return rho


def _check_target(target, name: str = "target_blocking") -> sp.Expr:
    t = exact(target, name)
    if t.free_symbols or not (bool(t > 0) and bool(t < 1)):
        raise ParameterError(f"{name} = {target}: must lie strictly between 0 and 1")
    return t


@dataclass(frozen=True)
class ErlangBRecursion:
    """B(n-1) and B(n) of the recursion, and log B(n) (natural log).

    In float64 ``blocking`` is 0.0 when B(n) underflows (< ~1e-308); ``log_blocking``
    is always finite. ``previous`` is B(n-1) (or its underflowed value).
    """

    n: int
    load: object
    previous: object
    blocking: object
    log_blocking: object

    @property
    def carried_load(self):
        """rho (1 - B(n)) = rho n / (n + rho B(n-1)): eqs. (2), (3) without subtraction."""
        return self.load * self.n / (self.n + self.load * self.previous)


def _log1p(x, bk: Backend):
    """log(1 + x) to full relative accuracy (``mpmath.fp.log1p`` is not: it loses ~6 digits at 1e-5)."""
    return math.log1p(x) if bk.is_float64 else mpmath.log1p(x)


def _recursion(n: int, r, bk: Backend) -> ErlangBRecursion:
    """The recursion at a backend load ``r`` (no validation; see :func:`erlang_b_recursion`)."""
    ctx = bk.ctx
    b_prev, b = bk.num(1), bk.num(1)
    log_mode_from = None
    for k in range(1, n + 1):
        b_prev = b
        b = r * b / (k + r * b)
        if bk.is_float64 and b < _FLOAT64_TINY:
            log_mode_from = k
            break
    if log_mode_from is None:
        # log B(n) = -log(1 + n/(rho B(n-1))): no loss of digits when B(n) is close to 1
        return ErlangBRecursion(n, r, b_prev, b, -_log1p(n / (r * b_prev), bk))
    # float64 only: from k0 = log_mode_from on, rho*B(k-1) < 1e-270 << k, so B(k) = (rho/k) B(k-1):
    # log B(n) = log B(k0) + (n - k0) log rho - (lgamma(n+1) - lgamma(k0+1)).
    k0 = log_mode_from
    log_b = math.log(b) + (n - k0) * math.log(r) - (math.lgamma(n + 1) - math.lgamma(k0 + 1))
    log_prev = log_b - math.log(r) + math.log(n) if n > k0 else math.log(b_prev)
    return ErlangBRecursion(n, r, math.exp(log_prev), math.exp(log_b), log_b)


def erlang_b_recursion(n: int, rho, bk: Backend) -> ErlangBRecursion:
    """Run B(k) = rho B(k-1)/(k + rho B(k-1)), B(0) = 1, up to k = n (``spec/other-models.md`` D).

    ``rho`` is an exact positive number (converted once with ``bk.num``). Cost O(n):
    about 10 ms per 10^5 steps in float64, 0.4 s at 60 digits. Call inside ``with bk:``.
    """
    n = _check_servers(n)
    return _recursion(n, bk.num(_check_load(rho)), bk)


def erlang_b(n: int, rho, bk: Backend):
    """Erlang B(n, rho) = (rho^n/n!) / sum_{l=0}^n rho^l/l!  (Wang & Liao, eq. (1) at k = n).

    Computed by the stable recursion of :func:`erlang_b_recursion`.
    """
    return erlang_b_recursion(n, rho, bk).blocking


def erlang_b_log(n: int, rho, bk: Backend):
    """Natural logarithm of B(n, rho), finite even where B underflows float64."""
    return erlang_b_recursion(n, rho, bk).log_blocking


def carried_load(n: int, rho, bk: Backend):
    """Carried load rho (1 - B(n)) = mean number of busy windows N  (eqs. (2), (3)).

    Written without subtraction: 1 - B(n) = n / (n + rho B(n-1)), so
    N = rho n / (n + rho B(n-1)).
    """
    n = _check_servers(n)
    r = bk.num(_check_load(rho))
    return _recursion(n, r, bk).carried_load


def smallest_servers(rho, target, bk: Backend, max_servers: int = _MAX_SERVERS) -> int:
    """Smallest n with B(n, rho) <= target (the number of windows for a target blocking).

    B(n, rho) decreases strictly in n, so one pass of the recursion finds n; the
    comparison is made on logarithms once B is below ~1e-280 in float64. Cost O(n).
    """
    rho = _check_load(rho)
    target = _check_target(target)
    r = bk.num(rho)
    t = bk.num(target)
    log_t = bk.num(sp.log(target))
    b = bk.num(1)
    log_b = None
    for k in range(1, max_servers + 1):
        if log_b is None:
            b = r * b / (k + r * b)
            if bk.is_float64 and b < _FLOAT64_TINY:
                log_b = math.log(b)
                if log_b <= log_t:
                    return k
                continue
            if b <= t:
                return k
        else:
            log_b += math.log(r) - math.log(k)
            if log_b <= log_t:
                return k
    raise ParameterError(
        f"target_blocking = {target}: not reached with up to {max_servers} servers at load {rho}"
    )


def load_for_blocking(n: int, target, bk: Backend):
    """The offered load rho* that n windows carry at blocking B(n, rho*) = target.

    B(n, rho) increases strictly in rho, with d log B / d log rho = n - rho (1 - B(n))
    (n minus the carried load, > 0). Safeguarded Newton iteration in u = log rho
    inside the bracket

        rho_lo = (target n!)^(1/n)     (B <= rho^n/n! gives B(n, rho_lo) <= target),
        rho_hi = n / (1 - target)      (carried load < n gives B(n, rho_hi) > target),

    bisecting whenever a Newton step leaves the bracket or fails to halve the previous
    step (rounding noise near the root). Stops when the step or the bracket is below
    the backend's precision. Cost O(n) per iteration, about 6-12 iterations.
    """
    n = _check_servers(n)
    target = _check_target(target)
    ctx = bk.ctx
    log_t = bk.num(sp.log(target))
    u_lo = (log_t + ctx.loggamma(n + 1)) / n
    u_hi = ctx.log(n) - ctx.log(bk.num(1 - target))
    u = (u_lo + u_hi) / 2
    tol = 8 * bk.eps
    prev_step = None
    bits = 53 if bk.is_float64 else bk.ctx.prec
    for _ in range(8 * bits + 100):
        r = ctx.exp(u)
        rec = _recursion(n, r, bk)
        f = rec.log_blocking - log_t
        if f > 0:
            u_hi = u
        else:
            u_lo = u
        slope = n - rec.carried_load  # n - carried load > 0
        step = f / slope
        scale = max(1, abs(u))
        if abs(step) <= tol * scale:
            return ctx.exp(u - step)
        if (u_hi - u_lo) <= tol * scale:
            return ctx.exp(u)
        u_new = u - step
        if not (u_lo < u_new < u_hi) or (prev_step is not None and abs(step) > abs(prev_step) / 2):
            u_new = (u_lo + u_hi) / 2
        prev_step = u_new - u
        u = u_new
    raise ArithmeticError(f"load_for_blocking(n={n}, target={target}) did not converge")  # pragma: no cover


@dataclass(frozen=True)
class ServiceMix:
    """Multi-service normalisation of an SCP (Wang & Liao, eqs. (5), (6)).

    ``ratios`` S_1 : ... : S_m fixed by the operator, ``response_times`` ws_i (mean
    response time of a call of service i), ``resource`` R (the load the SCP carries
    without overload) and the reference service ``reference`` k (1-based, as in the
    paper). Exact numbers in, exact numbers out.

    >>> mix = ServiceMix((1, 2), (sp.Rational(1, 10), sp.Rational(3, 10)), 14)
    >>> mix.admitted_rates()
    (20, 40)
    >>> mix.equivalence_coefficients()
    (1, 3)
    >>> mix.reference_capacity()
    140
    """

    ratios: tuple
    response_times: tuple
    resource: object
    reference: int = 1

    def __post_init__(self):
        if len(self.ratios) != len(self.response_times) or not self.ratios:
            raise ParameterError(
                f"ratios and response_times must have the same nonzero length, got "
                f"{len(self.ratios)} and {len(self.response_times)}"
            )
        ratios = tuple(exact(s, f"ratios[{i + 1}]") for i, s in enumerate(self.ratios))
        for i, s in enumerate(ratios):
            if (s.free_symbols and not s.is_nonnegative) or (not s.free_symbols and not bool(s >= 0)):
                raise ParameterError(f"ratios[{i + 1}] = {s}: must be >= 0")
        if all(s == 0 for s in ratios):
            raise ParameterError("ratios: at least one must be > 0")
        ws = tuple(require_positive(exact(w, f"response_times[{i + 1}]"), f"response_times[{i + 1}]")
                   for i, w in enumerate(self.response_times))
        resource = require_positive(exact(self.resource, "resource"), "resource")
        if not (isinstance(self.reference, int) and 1 <= self.reference <= len(ratios)):
            raise ParameterError(f"reference = {self.reference}: must be an integer in 1..{len(ratios)}")
        object.__setattr__(self, "ratios", ratios)
        object.__setattr__(self, "response_times", ws)
        object.__setattr__(self, "resource", resource)

    def admitted_rates(self) -> tuple:
        """S_i = s_i R / sum_j s_j ws_j: the rates in the fixed ratio that fill R  (eq. (5))."""
        scale = self.resource / sum(s * w for s, w in zip(self.ratios, self.response_times))
        return tuple(s * scale for s in self.ratios)

    def equivalence_coefficients(self) -> tuple:
        """alpha_ik = ws_i / ws_k: one call of service i uses the resource of alpha_ik reference calls  (eq. (6))."""
        wk = self.response_times[self.reference - 1]
        return tuple(w / wk for w in self.response_times)

    def reference_capacity(self):
        """S*_k = R / ws_k: the largest rate of the reference service alone  (S*_k ws_k = R)."""
        return self.resource / self.response_times[self.reference - 1]

    def equivalent_reference_rate(self):
        """sum_i alpha_ik S_i: the admitted mix counted in reference calls (equals S*_k)."""
        return sum(a * s for a, s in zip(self.equivalence_coefficients(), self.admitted_rates()))
