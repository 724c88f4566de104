"""Two-level cluster with k request copies: probability of timely service (Bogatyrev & Bogatyrev, seed 004).

A request (rate Lambda) is copied k times; each copy waits and is served at one of n
lower-level nodes, then at one of m upper-level nodes; every node is an M/M/1 queue
with arrival rates lambda_1 = k Lambda/n, lambda_2 = k Lambda/m and mean service
times v_1, v_2 (``spec/other-models.md`` section E). The waiting time at level i is

    W_i = 0 with probability 1 - rho_i,   W_i ~ Exp(theta_i) with probability rho_i,
    rho_i = lambda_i v_i,   theta_i = (1 - rho_i)/v_i,

so F_i(w) = P(W_i <= w) = 1 - rho_i e^{-theta_i w}. A copy is timely when
W_1 + W_2 <= t_0; the paper takes W_1, W_2 independent. This module evaluates

* the exact convolution r = P(W_1 + W_2 <= t_0) (atom x atom, atom x exponential,
  exponential x exponential), through its complement, a sum of positive terms,

      1 - r = (1-rho_1) rho_2 e^{-theta_2 t} + rho_1 (1-rho_2) e^{-theta_1 t} + rho_1 rho_2 S(t),

  with the hypoexponential survival function written without the removable
  singularity at theta_1 = theta_2 (theta_a = min, theta_b = max, x = (theta_b - theta_a) t):

      S(t) = e^{-theta_a t} (1 + theta_a t phi(x)),    phi(x) = (1 - e^{-x})/x = -expm1(-x)/x,  phi(0) = 1

  (phi is computed with expm1: full relative accuracy for every x >= 0, and the Erlang-2
  case S(t) = e^{-theta t}(1 + theta t) is x = 0, not a separate branch);
* R(k) = 1 - (1 - r)^k: at least one of the k copies is timely (the paper's R);
* the failure factors (copies must also meet no fault): the paper's forms
  e^{-Lambda_1 T_1 - Lambda_2 T_2}, T_i = v_i/(1 - rho_i), and
  e^{-lambda_11 w_1 - lambda_21 w_2 - lambda_10 v_1 - lambda_20 v_2}, w_i = rho_i v_i/(1 - rho_i)
  (:attr:`FailureModel.MEAN_TIMES`), or the exact pathwise factor
  E[1{W_1 + W_2 <= t_0} e^{-lambda_11 W_1 - lambda_21 W_2}] prod_i 1/(1 + lambda_i0 v_i)
  (:attr:`FailureModel.PATHWISE`, failures as Poisson events during the actual waiting and
  exponential service times);
* the paper's N-interval discretisation r_N (error O(1/N), with the limit
  N (r - r_N) -> (t_0^2/2) rho_1 rho_2 theta_1 theta_2 e^{-theta_a t_0} phi(x));
* the optimal number of copies among the stable k (rho_1, rho_2 < 1).

Every function takes a :class:`~qderive.numeric.backend.Backend`; call it inside ``with bk:``.

>>> from fractions import Fraction as F
>>> from qderive.numeric.backend import FLOAT64
>>> c = RedundantCluster(rate=3, copies=2, nodes=(10, 10), service_times=(F(3, 10), F(3, 10)), deadline=F(3, 5))
>>> round(float(copy_timely_probability(c, FLOAT64)), 12)
0.926144814618
>>> round(float(timely_probability(c, FLOAT64)), 12)
0.994545411592
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import Enum

import mpmath
import numpy as np
import sympy as sp

from qderive.symbolic._exact import ParameterError, exact, require_positive

from .backend import Backend

__all__ = [
    "FailureModel",
    "RedundantCluster",
    "WaitingLaw",
    "phi",
    "hypoexponential_survival",
    "copy_late_probability",
    "copy_timely_probability",
    "copy_untimely_probability",
    "timely_probability",
    "untimely_probability",
    "failure_free_probability",
    "paper_discretised",
    "discretisation_error_constant",
    "optimal_copies",
    "OptimalCopies",
]


class FailureModel(Enum):
    """How faults during a copy's stay are counted (seed 004 gives the two mean-time forms)."""

    #: e^{-lambda_11 w_1 - lambda_21 w_2 - lambda_10 v_1 - lambda_20 v_2} at the MEAN waiting and service
    #: times (the paper; equal waiting/service rates give e^{-Lambda_1 T_1 - Lambda_2 T_2})
    MEAN_TIMES = "mean"
    #: faults as Poisson events during the ACTUAL waiting times and exponential service times (exact)
    PATHWISE = "pathwise"


def _nonneg(value, name):
    v = exact(value, name)
    if v.free_symbols or not bool(v >= 0):
        raise ParameterError(f"{name} = {value}: must be a number >= 0")
    return v


def _pos(value, name):
    v = require_positive(exact(value, name), name)
    if v.free_symbols:
        raise ParameterError(f"{name} = {value}: must be a number")
    return v


def _posint(value, name):
    v = exact(value, name)
    if not (v.is_Integer and v >= 1):
        raise ParameterError(f"{name} = {value}: must be an integer >= 1")
    return int(v)


@dataclass(frozen=True)
class RedundantCluster:
    """Two-level cluster with ``copies`` copies of each request (seed 004; spec/other-models.md E).

    ``rate`` Lambda (requests/s), ``nodes`` (n, m), ``service_times`` (v_1, v_2), ``deadline`` t_0
    (bound on the total waiting time W_1 + W_2), ``failure_rates`` (Lambda_1, Lambda_2): fault rate
    of a lower / upper node while a copy waits there, and, unless ``service_failure_rates``
    (lambda_10, lambda_20) are given, also while it is served. Exact numbers; refused when a
    level is unstable (rho_i = k Lambda v_i / n_i >= 1).
    """

    rate: object
    copies: int
    nodes: tuple
    service_times: tuple
    deadline: object
    failure_rates: tuple = (0, 0)
    service_failure_rates: tuple | None = None
    failure_model: FailureModel = FailureModel.MEAN_TIMES

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        set_("rate", _pos(self.rate, "rate"))
        set_("copies", _posint(self.copies, "copies"))
        for name in ("nodes", "service_times", "failure_rates"):
            if len(tuple(getattr(self, name))) != 2:
                raise ParameterError(f"{name} = {getattr(self, name)}: give two values (lower level, upper level)")
        set_("nodes", tuple(_posint(x, f"nodes[{j}]") for j, x in enumerate(self.nodes)))
        set_("service_times", tuple(_pos(x, f"service_times[{j}]") for j, x in enumerate(self.service_times)))
        set_("deadline", _pos(self.deadline, "deadline"))
        set_("failure_rates", tuple(_nonneg(x, f"failure_rates[{j}]") for j, x in enumerate(self.failure_rates)))
        if self.service_failure_rates is not None:
            if len(tuple(self.service_failure_rates)) != 2:
                raise ParameterError("service_failure_rates: give two values (lower level, upper level)")
            set_("service_failure_rates", tuple(
                _nonneg(x, f"service_failure_rates[{j}]") for j, x in enumerate(self.service_failure_rates)))
        if not isinstance(self.failure_model, FailureModel):
            raise ParameterError(f"failure_model = {self.failure_model!r}: must be a FailureModel")
        for level, (rho, nv, v) in enumerate(zip(self.loads(), self.nodes, self.service_times), start=1):
            if not rho < 1:
                raise ParameterError(
                    f"copies = {self.copies}: level {level} is unstable, rho_{level} = k Lambda v_{level} / "
                    f"n_{level} = {self.copies}*{self.rate}*{v}/{nv} = {rho} >= 1; the largest stable "
                    f"number of copies is {self.max_stable_copies()}"
                )

    # -- exact parameters ------------------------------------------------------------------
    def arrival_rates(self) -> tuple:
        """lambda_i = k Lambda / n_i: copies per second at one node of level i."""
        return tuple(self.copies * self.rate / nv for nv in self.nodes)

    def loads(self) -> tuple:
        """rho_i = k Lambda v_i / n_i."""
        return tuple(lv * v for lv, v in zip(self.arrival_rates(), self.service_times))

    def decay_rates(self) -> tuple:
        """theta_i = (1 - rho_i)/v_i: rate of the exponential part of W_i."""
        return tuple((1 - r) / v for r, v in zip(self.loads(), self.service_times))

    def mean_waits(self) -> tuple:
        """w_i = rho_i v_i / (1 - rho_i) (M/M/1 mean waiting time)."""
        return tuple(r * v / (1 - r) for r, v in zip(self.loads(), self.service_times))

    def mean_sojourns(self) -> tuple:
        """T_i = v_i / (1 - rho_i) (M/M/1 mean sojourn time)."""
        return tuple(v / (1 - r) for r, v in zip(self.loads(), self.service_times))

    def max_stable_copies(self) -> int:
        """The largest k with k Lambda v_i / n_i < 1 at both levels (0 if none)."""
        bound = min(sp.Rational(nv) / (self.rate * v) for nv, v in zip(self.nodes, self.service_times))
        return int(sp.ceiling(bound)) - 1

    def with_copies(self, k: int) -> "RedundantCluster":
        return dataclasses.replace(self, copies=k)

    def waiting_failure_rates(self) -> tuple:
        return self.failure_rates

    def serving_failure_rates(self) -> tuple:
        return self.failure_rates if self.service_failure_rates is None else self.service_failure_rates


# -- elementary functions with full relative accuracy ------------------------------------------
def _expm1(x, bk: Backend):
    # mpmath.fp.expm1 is not accurate to full precision near 0; math.expm1 is.
    return math.expm1(x) if bk.is_float64 else mpmath.expm1(x)


def _log1p(x, bk: Backend):
    return math.log1p(x) if bk.is_float64 else mpmath.log1p(x)


def phi(x, bk: Backend):
    """phi(x) = (1 - e^{-x})/x = -expm1(-x)/x, phi(0) = 1: an exprel-type function, accurate for all x >= 0."""
    if x == 0:
        return bk.num(1)
    return -_expm1(-x, bk) / x


def hypoexponential_survival(theta1, theta2, t, bk: Backend):
    """S(t) = P(E_1 + E_2 > t) for independent E_i ~ Exp(theta_i) (backend numbers).

    Closed form (theta_2 e^{-theta_1 t} - theta_1 e^{-theta_2 t})/(theta_2 - theta_1), written as
    e^{-theta_a t}(1 + theta_a t phi((theta_b - theta_a) t)) with theta_a <= theta_b: no division
    by theta_2 - theta_1, and theta_1 = theta_2 gives the Erlang-2 law e^{-theta t}(1 + theta t).
    """
    ta, tb = (theta1, theta2) if theta1 <= theta2 else (theta2, theta1)
    return bk.ctx.exp(-ta * t) * (1 + ta * t * phi((tb - ta) * t, bk))


@dataclass(frozen=True)
class WaitingLaw:
    """A (possibly defective) law: atom ``atom`` at 0 plus ``weight`` x Exp(``theta``) (backend numbers).

    Without faults atom = 1 - rho, weight = rho, theta = (1 - rho)/v. Tilting by e^{-a W}
    (faults at rate a while waiting) keeps the atom and gives weight rho theta/(theta + a),
    rate theta + a; its mass deficit is ``deficit`` = rho a/(theta + a).
    """

    atom: object
    weight: object
    theta: object
    deficit: object


def _waiting_laws(c: RedundantCluster, bk: Backend, tilt: bool) -> tuple[WaitingLaw, WaitingLaw]:
    laws = []
    for rho, theta, a in zip(c.loads(), c.decay_rates(), c.waiting_failure_rates()):
        r_, th = bk.num(rho), bk.num(theta)
        if tilt and a != 0:
            av = bk.num(a)
            laws.append(WaitingLaw(bk.num(1 - rho), r_ * th / (th + av), th + av, r_ * av / (th + av)))
        else:
            laws.append(WaitingLaw(bk.num(1 - rho), r_, th, bk.num(0)))
    return laws[0], laws[1]


def _late_mass(w1: WaitingLaw, w2: WaitingLaw, t, bk: Backend):
    """E[1{W_1 + W_2 > t} ...] over the (defective) laws: a sum of positive terms."""
    exp = bk.ctx.exp
    return (w1.atom * w2.weight * exp(-w2.theta * t)
            + w1.weight * w2.atom * exp(-w1.theta * t)
            + w1.weight * w2.weight * hypoexponential_survival(w1.theta, w2.theta, t, bk))


def copy_late_probability(c: RedundantCluster, bk: Backend):
    """1 - r = P(W_1 + W_2 > t_0) without faults (spec/other-models.md E; positive terms)."""
    w1, w2 = _waiting_laws(c, bk, tilt=False)
    return _late_mass(w1, w2, bk.num(c.deadline), bk)


def _fault_exponent(c: RedundantCluster, bk: Backend):
    """c such that the fault factor outside the waiting-time expectation is e^{-c}."""
    v = [bk.num(x) for x in c.service_times]
    lam_s = [bk.num(x) for x in c.serving_failure_rates()]
    if c.failure_model is FailureModel.MEAN_TIMES:
        # seed 004: e^{-lambda_11 w_1 - lambda_21 w_2 - lambda_10 v_1 - lambda_20 v_2}
        w = [bk.num(x) for x in c.mean_waits()]
        lam_w = [bk.num(x) for x in c.waiting_failure_rates()]
        return lam_w[0] * w[0] + lam_w[1] * w[1] + lam_s[0] * v[0] + lam_s[1] * v[1]
    # PATHWISE: E e^{-lambda S_i} = 1/(1 + lambda v_i) for exponential service S_i
    return _log1p(lam_s[0] * v[0], bk) + _log1p(lam_s[1] * v[1], bk)


def failure_free_probability(c: RedundantCluster, bk: Backend):
    """The fault factor outside the waiting-time expectation: e^{-Lambda_1 T_1 - Lambda_2 T_2} (seed 004) etc."""
    return bk.ctx.exp(-_fault_exponent(c, bk))


def copy_untimely_probability(c: RedundantCluster, bk: Backend):
    """1 - r_f: a copy is late or meets a fault, as a sum of positive terms.

    r_f = e^{-c} (M - L) with M = prod_i (1 - x_i) the mass of the tilted waiting laws
    (x_i their deficits, 0 for MEAN_TIMES) and L their late mass, so
    1 - r_f = (1 - e^{-c}) + e^{-c} (x_1 + x_2 (1 - x_1)) + e^{-c} L.
    """
    tilt = c.failure_model is FailureModel.PATHWISE
    w1, w2 = _waiting_laws(c, bk, tilt)
    late = _late_mass(w1, w2, bk.num(c.deadline), bk)
    expo = _fault_exponent(c, bk)
    keep = bk.ctx.exp(-expo)
    return -_expm1(-expo, bk) + keep * (w1.deficit + w2.deficit * (1 - w1.deficit)) + keep * late


def copy_timely_probability(c: RedundantCluster, bk: Backend):
    """r (no faults) or r_f: one copy is timely (and fault-free). Seed 004, r and its fault forms."""
    return 1 - copy_untimely_probability(c, bk)


def untimely_probability(c: RedundantCluster, bk: Backend):
    """(1 - r_f)^k: no copy is timely (accurate however small)."""
    return copy_untimely_probability(c, bk) ** c.copies


def timely_probability(c: RedundantCluster, bk: Backend):
    """R(k) = 1 - (1 - r)^k: at least one of the k copies is timely (seed 004)."""
    return 1 - untimely_probability(c, bk)


def paper_discretised(c: RedundantCluster, N: int, bk: Backend):
    """The paper's r_N: t_0 split into N intervals of length d = t_0/N (seed 004, the sum over B_i).

    r_N = sum_{i=0}^N B_i P(W_2 <= t_0 - i d), B_0 = 1 - rho_1, B_i = F_1(i d) - F_1((i-1) d),
    times the MEAN_TIMES fault factor. It under-estimates r by O(1/N)
    (see :func:`discretisation_error_constant`). Returns r_N (fault factor included).
    """
    if not (isinstance(N, int) and N >= 1):
        raise ParameterError(f"N = {N}: must be an integer >= 1")
    (rho1, rho2), (th1, th2) = c.loads(), c.decay_rates()
    r1, r2, t1, t2 = (bk.num(x) for x in (rho1, rho2, th1, th2))
    t0 = bk.num(c.deadline)
    d = t0 / N
    exp = bk.ctx.exp
    if bk.is_float64:
        i = np.arange(1, N + 1, dtype=np.float64)
        B = r1 * np.exp(-t1 * (i - 1) * d) * -np.expm1(-t1 * d)
        F2 = 1 - r2 * np.exp(-t2 * (t0 - i * d))
        total = (1 - r1) * (1 - r2 * math.exp(-t2 * t0)) + float(np.dot(B, F2))
    else:
        step = -_expm1(-t1 * d, bk)
        terms = [(1 - r1) * (1 - r2 * exp(-t2 * t0))]
        for i in range(1, N + 1):
            terms.append(r1 * exp(-t1 * (i - 1) * d) * step * (1 - r2 * exp(-t2 * (t0 - i * d))))
        total = mpmath.fsum(terms)
    if c.failure_model is FailureModel.MEAN_TIMES:
        total = total * failure_free_probability(c, bk)
    return total


def discretisation_error_constant(c: RedundantCluster, bk: Backend):
    """lim_{N->oo} N (r - r_N) = (t_0/2) int_0^{t_0} f_1(w) f_2(t_0 - w) dw  (no faults).

    With f_i(w) = rho_i theta_i e^{-theta_i w} the continuous parts of the waiting-time densities,
    the integral is rho_1 rho_2 theta_1 theta_2 t_0 e^{-theta_a t_0} phi((theta_b - theta_a) t_0).
    Each interval of the paper's sum loses about (d^2/2) f_1 f_2, hence O(1/N).
    """
    (rho1, rho2), (th1, th2) = c.loads(), c.decay_rates()
    r1, r2, t1, t2 = (bk.num(x) for x in (rho1, rho2, th1, th2))
    t0 = bk.num(c.deadline)
    ta, tb = (t1, t2) if t1 <= t2 else (t2, t1)
    return t0 * t0 / 2 * r1 * r2 * t1 * t2 * bk.ctx.exp(-ta * t0) * phi((tb - ta) * t0, bk)


@dataclass(frozen=True)
class OptimalCopies:
    """Best k among the stable k <= max_copies, with R(k) and (1-r)^k for every k tried."""

    copies: int
    timely_probability: object
    untimely_probability: object
    table: tuple  # ((k, R(k), (1 - r_k)^k), ...)


def optimal_copies(c: RedundantCluster, max_copies: int, bk: Backend) -> OptimalCopies:
    """The k in 1..min(max_copies, largest stable k) maximising R(k) (seed 004; ties: the smallest k).

    The comparison is made on (1 - r_k)^k, computed from positive terms, so it stays exact
    when R(k) rounds to 1 in float64.
    """
    if not (isinstance(max_copies, int) and max_copies >= 1):
        raise ParameterError(f"max_copies = {max_copies}: must be an integer >= 1")
    k_max = min(max_copies, c.max_stable_copies())
    if k_max < 1:
        raise ParameterError(
            f"rate = {c.rate}: even one copy is unstable (k Lambda v_i / n_i >= 1 at k = 1)")
    rows = []
    for k in range(1, k_max + 1):
        u = untimely_probability(c.with_copies(k), bk)
        rows.append((k, 1 - u, u))
    best = min(rows, key=lambda row: row[2])
    return OptimalCopies(best[0], best[1], best[2], tuple(rows))
