"""Waiting and sojourn time of a random customer in M[X]/G/1 with multiple, single or no vacations.

The Laplace-Stieltjes transform of the wait W (FIFO, infinite room) is a product of three
independent parts (the stochastic decomposition of Fuhrmann and Cooper 1985; for batch
arrivals Chaudhry and Templeton 1983, Takagi 1991 vol. 1 section 2.3), in the notation of
``docs/theory/chapter2.md`` section 0 (rho_bar = lambda l_1 b_1, c_0 = varphi(lambda)):

* the wait of the first customer of a batch in M[X]/G/1 without vacations (Pollaczek-Khinchine
  at the batch level, the batch work having LST L(beta(s))):
  ``W_b(s) = (1 - rho_bar) s / (s - lambda + lambda L(beta(s)))``;
* the delay behind the earlier members of the customer's own batch (a customer is at position
  i with probability P(X >= i) / l_1, customer-average):
  ``J(s) = (1 - L(beta(s))) / (l_1 (1 - beta(s)))``;
* the residual of the non-serving period seen by the arriving batch:
  multiple vacations ``(1 - varphi(s)) / (f_1 s)`` (the residual vacation); single vacations
  ``(lambda (1 - varphi(s)) / s + c_0) / (lambda f_1 + c_0)`` (a batch arrives during the
  vacation, or ends an idle period and waits nothing more); no vacations ``1``.

``W(s) = W_b(s) J(s) V_r(s)``, the sojourn time ``T(s) = W(s) beta(s)`` (the own service is
independent of the wait). P(W = 0) = lim_{s -> oo} W(s) = (1 - rho_bar)/l_1 times 0, the
single-vacation factor c_0 / (lambda f_1 + c_0), or 1. The moments E W^k = (-1)^k W^{(k)}(0)
come from the exact truncated series of :mod:`qderive.symbolic.pgf` (each factor is a 0/0 at
s = 0 that the series division cancels): polynomials in b_1..b_{k+1}, f_1..f_{k+1},
l_1..l_{k+1}, lambda and c_0 over powers of (1 - rho_bar) (and of lambda f_1 + c_0). The mean
is (6) of the thesis (a check of ``qderive verify vacation-infinite``).
"""

from __future__ import annotations

import functools

import sympy as sp

from ..cache import cached
from ..pgf import derivatives_at
from .vacation_infinite import BATCH, SERVICE, VACATION, c0, lam

__all__ = ["s", "POLICIES", "wait_factors", "wait_transform", "sojourn_transform", "p_wait_zero", "wait_moments",
           "sojourn_moments", "moment_symbols", "substitute_moments", "PARTS", "part_moments"]

s = sp.Symbol("s")
POLICIES = ("multiple", "single", "none")


def substitute_moments(expr):
    """Derivatives of the general beta, varphi at 0 and of L at 1 -> the moment symbols."""
    return VACATION.substitute_moments(SERVICE.substitute_moments(BATCH.substitute_moments(expr)))


def wait_factors(policy: str, service=SERVICE, vacation=VACATION, batch=BATCH, rate=lam, zero_count=c0) -> dict:
    """The three factors of W(s) (module docstring) for ``policy``, with the given laws.

    With the defaults the laws are general (undefined transforms, moment symbols); concrete
    laws (an Erlang service, a geometric batch) give their own transforms, the same formula.
    ``zero_count`` is c_0 = varphi(lambda) (single vacations only).
    """
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r}: one of {', '.join(POLICIES)}")
    beta = service.lst(s)
    G = batch.pgf(beta)
    l1 = batch.moment(1) if not hasattr(batch, "mean") else batch.mean
    rho_bar = rate * l1 * service.moment(1)
    batch_level = (1 - rho_bar) * s / (s - rate + rate * G)
    own = (1 - G) / (l1 * (1 - beta))
    if policy == "multiple":
        residual = (1 - vacation.lst(s)) / (vacation.moment(1) * s)
    elif policy == "single":
        residual = (rate * (1 - vacation.lst(s)) / s + zero_count) / (rate * vacation.moment(1) + zero_count)
    else:
        residual = sp.Integer(1)
    return {"batch": batch_level, "own": own, "residual": residual}


def wait_transform(policy: str, **laws):
    """W(s) = W_b(s) J(s) V_r(s), the LST of the wait of a random customer (module docstring)."""
    f = wait_factors(policy, **laws)
    return f["batch"] * f["own"] * f["residual"]


def sojourn_transform(policy: str, **laws):
    """T(s) = W(s) beta(s): the wait plus the customer's own (independent) service."""
    service = laws.get("service", SERVICE)
    return wait_transform(policy, **laws) * service.lst(s)


def p_wait_zero(policy: str):
    """P(W = 0) = lim_{s -> oo} W(s) with general laws without an atom at 0 (beta(oo) = varphi(oo) = 0)."""
    rho_bar = lam * BATCH.moment(1) * SERVICE.moment(1)
    first = (1 - rho_bar) / BATCH.moment(1)  # the batch finds the server idle, the customer is first
    return {"multiple": sp.Integer(0), "single": first * c0 / (lam * VACATION.moment(1) + c0), "none": first}[policy]


def moment_symbols(k: int) -> tuple:
    """(lambda, b_1..b_{k+1}, f_1..f_{k+1}, l_1..l_{k+1}, c_0): the arguments of the moments up to order k."""
    n = k + 1
    return (lam, *(SERVICE.moment(i) for i in range(1, n + 1)), *(VACATION.moment(i) for i in range(1, n + 1)),
            *(BATCH.moment(i) for i in range(1, n + 1)), c0)


def _moments(expr, k: int) -> list:
    derivs = derivatives_at(expr, s, 0, k, substitute_moments)
    if sp.simplify(derivs[0] - 1) != 0:  # pragma: no cover - a transform is 1 at 0
        raise AssertionError("the transform is not 1 at s = 0")
    return [sp.factor(sp.cancel((-1) ** j * derivs[j])) for j in range(1, k + 1)]


@functools.lru_cache(maxsize=16)
def wait_moments(policy: str, k: int) -> tuple:
    """(E W, E W^2, ..., E W^k) with general laws, exactly (cached on disk)."""
    return tuple(cached(f"vacation_wait_moments::{policy}::{k}", lambda: _moments(wait_transform(policy), k)))


@functools.lru_cache(maxsize=16)
def sojourn_moments(policy: str, k: int) -> tuple:
    """(E T, ..., E T^k) of the sojourn time T = W + own service, exactly (cached on disk)."""
    return tuple(cached(f"vacation_sojourn_moments::{policy}::{k}", lambda: _moments(sojourn_transform(policy), k)))


#: the parts of the decomposition W = W_b + J + R (multiple vacations) whose moments the paper forms of E W^k
#: (k >= 3) name: the work S of a batch (LST L(beta(s))), W_b, J and the residual vacation R
PARTS = ("work", "batch", "own", "residual")


@functools.lru_cache(maxsize=32)
def part_moments(part: str, k: int) -> tuple:
    """(E Y, ..., E Y^k) of one part Y of the decomposition (:data:`PARTS`) with general laws, exactly (cached on
    disk): the batch work ``S`` (E S^n = sum_m l_[m] B_{n,m}(b_1, ...), a compound sum), the batch-level wait
    ``W_b``, the own batch ahead ``J`` and the residual vacation ``R`` (E R^n = f_{n+1} / ((n + 1) f_1))."""
    if part not in PARTS:
        raise ValueError(f"part {part!r}: one of {', '.join(PARTS)}")

    def compute():
        transform = BATCH.pgf(SERVICE.lst(s)) if part == "work" else wait_factors("multiple")[part]
        return _moments(transform, k)

    return tuple(cached(f"vacation_wait_part_moments::{part}::{k}", compute))
