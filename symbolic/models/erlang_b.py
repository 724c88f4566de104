"""Erlang B: the M/M/n/n window model of an SCP front end (Wang & Liao, seed 003), and its sizing.

``docs/theory/other-models.md`` section D: the SCP holds n windows; a first message (BEGIN) takes a
window until its response and is refused when all n are busy. With Poisson arrivals of rate
lambda and exponential holding times of mean 1/mu this is the loss system M/M/n/n with offered
load rho = lambda/mu:

* p_k = (rho^k/k!) / sum_{l<=n} rho^l/l!                       (eq. (1)); blocking B(n, rho) = p_n;
* carried rate lambda_e = lambda (1 - p_n)                     (eq. (2));
* mean busy windows N = sum_k k p_k = lambda_e/mu               (eq. (3));
* response time w_s = N/lambda_e = 1/mu (Little)                (eq. (4)).

:class:`ErlangB` is the model (``qderive eval erlang-b``); :class:`ErlangBSizeRequest` the
two inverse problems of ``qderive size erlang-b`` (servers for a target blocking, or the load
n servers carry); :class:`ServiceMix` the multi-service normalisation (5), (6). The numbers
come from ``kernels.erlang`` of the numeric layer through ``engines.erlang_b`` of the numeric layer.

>>> from fractions import Fraction as F
>>> m = ErlangB(10, 5)
>>> m.servers, m.load, m.holding_time
(10, Fraction(5, 1), None)
>>> round(m.evaluate().blocking_probability, 12)
0.018384570337
>>> ErlangB(0, 5)
Traceback (most recent call last):
...
qderive.symbolic.errors.ParameterError: servers = 0: must be >= 1
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import limits as _limits
from ..errors import ParameterError
from ..numbers import decimal_text, exact, is_symbolic
from ..params import Kind, param
from .base import Action, MeasureKind, Measures, Model, Request, measure

__all__ = ["ErlangB", "ErlangBMeasures", "ErlangBSizeRequest", "ServiceMix", "RATE_KEYS"]

_SOURCE = "Wang & Liao (seed 003), eq. ({}); docs/theory/other-models.md section D".format

#: the measures that need the holding time (present only when it is given)
RATE_KEYS = ("arrival_rate", "carried_rate", "lost_rate", "mean_response_time")


@dataclass(frozen=True)
class ErlangBMeasures(Measures):
    """Measures of M/M/n/n (eqs. (1)-(4)); the rates only with a holding time."""

    blocking_probability: object = measure("probability B(n, rho) = p_n that a BEGIN message finds every window "
                                           "busy (Erlang B)", MeasureKind.PROBABILITY, source=_SOURCE(1))
    carried_load: object = measure("carried load rho (1 - B) = rho n / (n + rho B(n-1))", MeasureKind.VALUE,
                                   units="Erlang", source=_SOURCE("2), (3"))
    lost_load: object = measure("lost load rho B", MeasureKind.VALUE, units="Erlang", source=_SOURCE(2))
    mean_busy_windows: object = measure("mean number of busy windows N = sum k p_k = lambda_e / mu",
                                        MeasureKind.COUNT, units="windows", source=_SOURCE(3))
    window_occupancy: object = measure("mean occupancy of one window, N / n", MeasureKind.VALUE, source=_SOURCE(3))
    log10_blocking_probability: object = measure("log10 B(n, rho), finite where B leaves the float64 range",
                                                 MeasureKind.LOG, source=_SOURCE(1))
    arrival_rate: object = measure("arrival rate lambda = rho mu of BEGIN messages (with --holding-time)",
                                   MeasureKind.RATE, units="1/s", source=_SOURCE(1))
    carried_rate: object = measure("carried rate lambda_e = lambda (1 - B) (with --holding-time)", MeasureKind.RATE,
                                   units="1/s", source=_SOURCE(2))
    lost_rate: object = measure("lost rate lambda B (with --holding-time)", MeasureKind.RATE, units="1/s",
                                source=_SOURCE(2))
    mean_response_time: object = measure("response time w_s = N / lambda_e = 1/mu (with --holding-time)",
                                         MeasureKind.TIME, units="s", source=_SOURCE(4))
    p: object = measure("the law p_0..p_n of the number of busy windows, p_k = (rho^k/k!) / sum_{l<=n} rho^l/l!: "
                        "a list (--distribution)", MeasureKind.DISTRIBUTION, source=_SOURCE(1), optional=True)

    def as_dict(self) -> dict:
        """Measure key -> value; the rates (:data:`RATE_KEYS`) only when a holding time was given."""
        return {k: v for k, v in super().as_dict().items() if not (k in RATE_KEYS and v is None)}


@dataclass(frozen=True)
class ErlangBSizeRequest(Request):
    """``qderive size erlang-b``: with ``load`` the smallest n with B(n, rho) <= target; with ``servers``
    the offered load rho* at which n servers block exactly the target."""

    target_blocking: object = param("target blocking probability in (0, 1); give --load to get the servers, or "
                                    "--servers to get the load they carry", metavar="P")
    load: object = param("offered load rho = lambda/mu: find the smallest number of servers", units="Erlang",
                         check="> 0", default=None, metavar="RHO")
    servers: int = param("number of servers n: find the load they carry at the target", kind=Kind.INTEGER,
                         check=">= 1", default=None, metavar="N")

    def _validate(self):
        t = self.target_blocking
        if not 0 < t < 1:
            raise ParameterError("target_blocking", "must lie strictly between 0 and 1", decimal_text(t))
        if (self.load is None) == (self.servers is None):
            raise ParameterError("size erlang-b: give exactly one of load (to find the servers) and servers "
                                 "(to find the load they carry)")
        if self.servers is not None:
            _limits.check("servers", self.servers, "the Erlang B recursion costs O(n) steps")


@dataclass(frozen=True)
class ErlangB(Model):
    """M/M/n/n with ``servers`` n windows at offered load ``load`` rho (Erlang); ``holding_time`` 1/mu
    (seconds, optional) adds the rates lambda, lambda_e, lambda B and w_s = 1/mu."""

    servers: int = param("number of windows / servers n", kind=Kind.INTEGER, check=">= 1", metavar="N")
    load: object = param("offered load rho = lambda/mu", units="Erlang", check="> 0", metavar="RHO")
    holding_time: object = param("mean holding (response) time 1/mu; adds the rates to the output", units="s",
                                 check="> 0", default=None, metavar="T")

    name = "erlang-b"
    summary = "M/M/n/n loss system (SCP window model): Erlang B, carried load, sizing"
    measures = ErlangBMeasures
    actions = (Action("size", "servers for a target blocking (--load), or the load n servers carry (--servers)",
                      ErlangBSizeRequest, omit=("servers", "load")),)

    def _validate(self):
        _limits.check("servers", self.servers, "the Erlang B recursion costs O(n) steps")

    def with_servers(self, n: int) -> "ErlangB":
        """The same load with n servers."""
        return replace(self, servers=n)

    @classmethod
    def example(cls):
        """A representative case: 10 windows at 5 Erlang (the old CLI example)."""
        return cls(10, 5)


def _nonnegative(value, name):
    v = exact(value, name)
    if not is_symbolic(v) and v < 0:
        raise ParameterError(name, "must be >= 0", decimal_text(v))
    return v


def _positive(value, name):
    v = exact(value, name)
    if not is_symbolic(v) and not v > 0:
        raise ParameterError(name, "must be > 0", decimal_text(v))
    return v


@dataclass(frozen=True)
class ServiceMix:
    """Multi-service normalisation of an SCP (Wang & Liao, eqs. (5), (6)); exact (or symbolic) numbers.

    ``ratios`` S_1 : ... : S_m fixed by the operator, ``response_times`` ws_i (mean response
    time of a call of service i), ``resource`` R (the load the SCP carries without overload),
    ``reference`` the reference service k (1-based, as in the paper).

    >>> from fractions import Fraction as F
    >>> mix = ServiceMix((1, 2), (F(1, 10), F(3, 10)), 14)
    >>> mix.admitted_rates(), mix.equivalence_coefficients(), mix.reference_capacity()
    ((Fraction(20, 1), Fraction(40, 1)), (Fraction(1, 1), Fraction(3, 1)), Fraction(140, 1))
    """

    ratios: tuple
    response_times: tuple
    resource: object
    reference: int = 1

    def __post_init__(self):
        ratios, times = tuple(self.ratios), tuple(self.response_times)
        if len(ratios) != len(times) or not ratios:
            raise ParameterError(f"ratios and response_times must have the same nonzero length, got {len(ratios)} "
                                 f"and {len(times)}")
        ratios = tuple(_nonnegative(s, f"ratios[{i + 1}]") for i, s in enumerate(ratios))
        if all(not is_symbolic(s) and s == 0 for s in ratios):
            raise ParameterError("ratios", "must have at least one value > 0", ratios)
        object.__setattr__(self, "ratios", ratios)
        object.__setattr__(self, "response_times",
                           tuple(_positive(w, f"response_times[{i + 1}]") for i, w in enumerate(times)))
        object.__setattr__(self, "resource", _positive(self.resource, "resource"))
        if isinstance(self.reference, bool) or not isinstance(self.reference, int) \
                or not 1 <= self.reference <= len(ratios):
            raise ParameterError("reference", f"must be an integer in 1..{len(ratios)}", self.reference)

    def admitted_rates(self) -> tuple:
        """S_i = s_i R / sum_j s_j ws_j: the rates in the fixed ratio that fill R (eq. (5))."""
        scale = self.resource / sum(s * w for s, w in zip(self.ratios, self.response_times))
        return tuple(s * scale for s in self.ratios)

    def equivalence_coefficients(self) -> tuple:
        """alpha_ik = ws_i / ws_k: a call of service i uses the resource of alpha_ik reference calls (eq. (6))."""
        wk = self.response_times[self.reference - 1]
        return tuple(w / wk for w in self.response_times)

    def reference_capacity(self):
        """S*_k = R / ws_k: the largest rate of the reference service alone (S*_k ws_k = R)."""
        return self.resource / self.response_times[self.reference - 1]

    def equivalent_reference_rate(self):
        """sum_i alpha_ik S_i: the admitted mix counted in reference calls (equals S*_k)."""
        return sum(a * s for a, s in zip(self.equivalence_coefficients(), self.admitted_rates()))
