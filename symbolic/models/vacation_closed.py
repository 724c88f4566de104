"""M[X]/M/1/r with exponential multiple vacations and geometric batches: closed forms in symbolic r.

The thesis's simplest Markov case of the finite vacation queue (Sopin 2013, section 1.2;
``docs/theory/other-models.md`` section A): batches arrive as a Poisson process of rate lambda
with geometric sizes on {1, 2, ...} of mean 1/p; exponential service of mean b_1 = 1/mu,
exponential vacations of mean f_1 = 1/nu (multiple vacations), a waiting room of r
places and partial admission. Every transform is rational, so q~_j and p~_j are sums of
geometric sequences with ratios s_1 = q + lambda/mu and s_2 = (nu q + lambda)/(nu + lambda)
(q = 1 - p), and every measure is a closed form in r
(:mod:`qderive.symbolic.closed_forms.vacation_finite_r`). Which closed form applies is a
:class:`ClosedFormCase`: s_1 = 1 exactly when rho_bar = 1, and s_1 = s_2 (a double pole of
Q~(z)) exactly when mu p = lambda + nu; both cannot hold at once.

The same queue as a :class:`~qderive.symbolic.models.vacation.FiniteVacationQueue` (for
comparisons with the general engine, the oracle and the simulator) is :attr:`queue`.

>>> from fractions import Fraction as F
>>> m = ClosedFormVacationQueue.from_load(F(3, 5), 5, F(3, 200), F(3, 40), 50)
>>> m.rate, m.case
(Fraction(8, 1), <ClosedFormCase.GENERIC: 'generic'>)
>>> ClosedFormVacationQueue.from_load(1, 5, F(3, 200), F(3, 40), 50).case
<ClosedFormCase.LOAD_ONE: 'rho_bar = 1'>
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .. import limits as _limits
from ..errors import ParameterError
from ..numbers import is_symbolic, positive
from ..params import Kind, Param, param
from .base import Alternative, MeasureKind, Measures, Model, measure

__all__ = ["ClosedFormCase", "ClosedFormVacationQueue", "ClosedFormVacationMeasures"]


class ClosedFormCase(enum.Enum):
    """Which closed form in r applies (the partial fractions of Q~(z) and P~(z) differ)."""

    #: distinct ratios s_1 != s_2, s_1 != 1: sums of two geometric sequences
    GENERIC = "generic"
    #: rho_bar = 1 (lambda = mu p): s_1 = 1, a geometric sum becomes linear in r
    LOAD_ONE = "rho_bar = 1"
    #: mu p = lambda + nu: s_1 = s_2, a double pole, coefficients (c_0 + c_1 j) s_1^j
    DOUBLE_POLE = "double pole"


def _rate_from_load(values, load):
    load = positive(load, "load")
    mean, b1 = values.get("batch_mean"), values.get("service_mean")
    if mean is None or b1 is None:
        raise ParameterError("load needs the batch and service means")
    return load / (positive(mean, "batch_mean") * positive(b1, "service_mean"))


_LOAD = Alternative("load", "rate", Param("offered load rho_bar = lambda l1 b1 (> 0)", metavar="RHO"), _rate_from_load)


@dataclass(frozen=True)
class ClosedFormVacationMeasures(Measures):
    """Measures of M[X]/M/1/r with exponential vacations, from the closed forms in r (exact rationals)."""

    loss_probability: object = measure("probability that a customer is lost, 1 - (1 - P^r_e)/rho_bar",
                                       MeasureKind.PROBABILITY, source="Theorem 1.1 (12), (A.9)")
    idle_probability: object = measure("probability P^r_e that the server is not serving", MeasureKind.PROBABILITY,
                                       source="Statement 2 (11), (A.8)")
    mean_queue_length: object = measure("mean number waiting N^r = sum_j j p^r_j", MeasureKind.COUNT,
                                        units="customers", source="(9), (10), (A.12)")
    mean_wait: object = measure("mean wait of an admitted customer W^r = N^r b1 / (1 - P^r_e) (Little's law with the "
                                "throughput (1 - P^r_e)/b1)", MeasureKind.TIME, units="time", source="(A.13)")
    pr: object = measure("time-stationary probability p^r_r of a full waiting room, 1 - P^r_e sum_{j<r} p~_j",
                         MeasureKind.PROBABILITY, source="(14), (15), (A.11)")
    q0: object = measure("embedded probability q^r_0 = 1 / S~_r", MeasureKind.PROBABILITY, source="Statement 1, (A.7)")
    qr: object = measure("embedded probability q^r_r = q~_r / S~_r", MeasureKind.PROBABILITY,
                         source="Statement 1, (A.7)")


@dataclass(frozen=True)
class ClosedFormVacationQueue(Model):
    """``ClosedFormVacationQueue(batch_mean, service_mean, vacation_mean, rate, capacity)``: geometric batches of
    mean 1/p, exponential service and vacations, r waiting places, partial admission; any load."""

    batch_mean: object = param("mean of the geometric batch size (>= 1)", units="customers", metavar="M", check=">= 1")
    service_mean: object = param("mean exponential service time b1", units="time", metavar="B", check="> 0")
    vacation_mean: object = param("mean exponential vacation time f1", units="time", metavar="F", check="> 0")
    rate: object = param("batch arrival rate lambda", units="1/time", metavar="LAMBDA", check="> 0")
    capacity: int = param("waiting room r (>= 1), the customer in service not counted", kind=Kind.INTEGER,
                          metavar="R", check=">= 1")

    name = "vacation-finite-r"
    summary = ("M[X]/M/1/r, exponential vacations, geometric batches: closed forms in r evaluated exactly at "
               "--capacity (Sopin 2013, section 1.2)")
    measures = ClosedFormVacationMeasures
    alternatives = (_LOAD,)

    def _validate(self):
        for name in ("batch_mean", "service_mean", "vacation_mean", "rate"):
            if is_symbolic(getattr(self, name)):
                raise ParameterError(name, "must be a number (the symbolic closed forms are "
                                     "qderive.symbolic.closed_forms.vacation_finite_r)", getattr(self, name))
        _limits.check("capacity", self.capacity, "exact rational arithmetic with numbers of O(r) digits")

    @classmethod
    def from_load(cls, load, batch_mean, service_mean, vacation_mean, capacity):
        """The model with offered load rho_bar = ``load``: lambda = rho_bar / (l_1 b_1)."""
        rate = _rate_from_load({"batch_mean": batch_mean, "service_mean": service_mean}, load)
        return cls(batch_mean, service_mean, vacation_mean, rate, capacity)

    @property
    def p(self):
        """The geometric parameter p = 1 / l_1."""
        return 1 / self.batch_mean

    @property
    def mu(self):
        """The service rate mu = 1 / b_1."""
        return 1 / self.service_mean

    @property
    def nu(self):
        """The vacation rate nu = 1 / f_1."""
        return 1 / self.vacation_mean

    @property
    def rho_bar(self):
        """Offered load rho_bar = lambda l_1 b_1."""
        return self.rate * self.batch_mean * self.service_mean

    @property
    def case(self) -> ClosedFormCase:
        """The closed form that applies: rho_bar = 1, a double pole (mu p = lambda + nu), or generic."""
        if self.rho_bar == 1:
            return ClosedFormCase.LOAD_ONE
        if self.mu * self.p == self.rate + self.nu:
            return ClosedFormCase.DOUBLE_POLE
        return ClosedFormCase.GENERIC

    @property
    def queue(self):
        """The same queue as a :class:`~qderive.symbolic.models.vacation.FiniteVacationQueue` (general laws)."""
        from ..batches.geometric import Geometric
        from ..laws.gamma import Exponential
        from .vacation import FiniteVacationQueue

        return FiniteVacationQueue(self.rate, Geometric(self.batch_mean), Exponential(self.service_mean),
                                   Exponential(self.vacation_mean), self.capacity)

    def with_capacity(self, r: int) -> "ClosedFormVacationQueue":
        """The same model with r waiting places."""
        from dataclasses import replace

        return replace(self, capacity=r)

    @classmethod
    def example(cls):
        from fractions import Fraction as F

        return cls.from_load(F(3, 2), 5, F(3, 200), F(3, 40), 20)

