"""Size and time budgets: the documented limits of every model, and how to raise them.

A typo must not take gigabytes or hours (``--capacity 1e9``, ``--thresholds 5,10,1e9``,
``--load 1e-100000000``). Every size a user chooses is compared with a limit here before
any work starts; exceeding one raises :class:`~qderive.errors.BudgetError`, which names
the limit and how to raise it. Users who mean it raise a limit for one call,

>>> import qderive.symbolic.limits as lim
>>> with lim.limits(capacity=10**6):
...     lim.current().capacity
1000000
>>> lim.current().capacity
100000

or on the command line with ``--limit capacity=1000000`` (any subcommand).

=====================  ===========  ===========================================================
limit                  default      what it bounds (and why)
=====================  ===========  ===========================================================
capacity               100 000      waiting room r of the finite queue (O(r^2) time: ~6 s at 10^5)
mp_capacity            2 000        r up to which an underflowing float64 result is recomputed with mpmath
whole_capacity         2 000        r under whole-batch admission (dense (r+1)^2 room matrices)
threshold              3 000        discard threshold R of the hysteretic chain (dense ~2R states)
mm1_threshold          10 000 000   R of the M|M|1 hysteresis (O(R) recurrences)
two_flow_high          16           H of the two-flow chain over class sequences (priority; ~3 * 2^(H+1) states)
two_flow_states        2 000 000    states of the two-flow FIFO chain held as segments (~1 GB, ~15 s at the limit)
priority_high          30           H of sip-retransmission --discipline priority under control (~H^3/3 states)
dense_states           2 500        states of a chain solved densely at --digits (O(n^2) mpf)
batch_size             100 000      largest size of a finite batch law
servers                10 000 000   servers of the Erlang B recursion (O(n))
copies                 10 000       request copies of the redundant cluster
digits                 1 000        requested significant digits
working_digits         6 000        working precision the escalation may reach
inversion_digits       250          digits of a transform inversion (a tail of 1e-k at D digits needs D + k)
lattice_points         1 000        t / D of an exact constant-service tail (O(K^3) table, O(K^2) per tail)
lattice_work           20 000 000   K^3 / 3 of the cell polynomials of a quadrature tail (gamma, lognormal,
                                    uniform vacations with a constant service; 2e7 ~ 5 s in mpmath: K <= 391)
lattice_levels         8 192        lattice levels N of the certified bounds of a service law off a lattice (uniform,
                                    a fine empirical sample; O(N^2): ~0.5 s at 8192; the bracket's width is O(1/N));
                                    at the default, the finite room refines them by FFT sums to 2^17 levels
fine_lattice_levels    2 097 152    lattice levels N = span / g of the exact tails of a service on its own lattice g
                                    (a sample recorded to 0.01 ms or 1 us; FFT powers, O(N log N) a power: ~4 s at 2^20)
number_length          400          characters of one number on input
number_exponent        1 000        |decimal exponent| of one number on input (1e-1000)
sample_size            1 000 000    points of an empirical law
bootstrap_resamples    10 000       resamples B of ``eval --bootstrap B`` (each one evaluation of the model)
derive_moments         4            K of ``derive vacation-infinite --wait-moments K`` (the structured displays are
                                    proved before printing: cold, K = 4 about 16 s, K = 5 about 52 s, K = 6 minutes)
customers              1e9          customers x replications of one simulation
grid_points            1 000 000    points of one ``qderive sweep`` grid (each point is one evaluation)
birth_work             2e10         multiply-adds of one birth kernel (terms x (R+1)^3; x 100 in mpmath)
start_threshold        10 000       the start threshold N of the vacation queues (--start-threshold; the renewal sums
                                    of the overshoot over N cost O(N^2))
count_work             1.5e8        node-terms of the count sequences of a quadrature law (lognormal): nodes x
                                    terms, x 125 in mpmath (1.5e8 ~ 30 s in float64 and in mpmath: measured 0.19 us
                                    a float64 node-term, 25 us an mpmath one at 20-30 digits)
=====================  ===========  ===========================================================
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, fields, replace

from .errors import BudgetError, ParameterError

__all__ = ["Limits", "current", "limits", "check", "DEFAULT"]


@dataclass(frozen=True)
class Limits:
    """The current budget (see the module docstring for the meaning of each field)."""

    capacity: int = 100_000
    mp_capacity: int = 2_000
    whole_capacity: int = 2_000
    threshold: int = 3_000
    mm1_threshold: int = 10_000_000
    two_flow_high: int = 16
    two_flow_states: int = 2_000_000
    priority_high: int = 30
    dense_states: int = 2_500
    batch_size: int = 100_000
    servers: int = 10_000_000
    copies: int = 10_000
    digits: int = 1_000
    working_digits: int = 6_000
    inversion_digits: int = 250
    lattice_points: int = 1_000
    lattice_work: int = 20_000_000
    lattice_levels: int = 8_192
    fine_lattice_levels: int = 2_097_152
    number_length: int = 400
    number_exponent: int = 1_000
    sample_size: int = 1_000_000
    bootstrap_resamples: int = 10_000
    derive_moments: int = 4
    customers: int = 1_000_000_000
    grid_points: int = 1_000_000
    birth_work: int = 20_000_000_000
    count_work: int = 150_000_000
    start_threshold: int = 10_000


DEFAULT = Limits()
_CURRENT: contextvars.ContextVar[Limits] = contextvars.ContextVar("qderive_limits", default=DEFAULT)


def current() -> Limits:
    """The limits in force (the defaults unless raised by :func:`limits`)."""
    return _CURRENT.get()


def names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Limits))


@contextlib.contextmanager
def limits(**changes: int):
    """Raise (or lower) limits inside a ``with`` block: ``with limits(capacity=10**6): ...``."""
    unknown = sorted(set(changes) - set(names()))
    if unknown:
        raise ParameterError(f"unknown limit {unknown[0]!r}; the limits are: {', '.join(names())}")
    for key, value in changes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(f"limit {key}", "must be an integer >= 1", value)
    token = _CURRENT.set(replace(_CURRENT.get(), **changes))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def check(limit: str, value: int, why: str = "") -> int:
    """``value`` if it is within the limit named ``limit``, else :class:`BudgetError`."""
    allowed = getattr(current(), limit)
    if value > allowed:
        raise BudgetError(limit.replace("_", "-"), value, allowed, why)
    return value
