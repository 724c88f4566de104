"""M[X]/G/1 and M[X]/G/1/r with multiple, single or no vacations (Sopin 2013, chapter 2).

``docs/theory/chapter2.md`` section 0: batches arrive as a Poisson process of rate lambda with
sizes X (batch law); one server with service times B; vacation times F. **Multiple
vacations**: a server that finds the queue empty (after a service or a vacation) takes
a vacation. **Single vacations** (:attr:`VacationPolicy.SINGLE`, beside the thesis): after
a service that empties the queue the server takes one vacation; if the queue is still
empty when it ends, the server idles until the next batch, whose first customer is
served at once. **No vacations** (``vacation=None``): the classic M[X]/G/1(/r).

The waiting room has r places (the customer in service not counted); an arriving batch
that does not fit loses its excess (partial admission, the thesis) or is rejected
entirely (whole admission). The offered load is rho_bar = lambda l_1 b_1.

>>> from fractions import Fraction as F
>>> from qderive.symbolic.laws import Erlang, Exponential
>>> from qderive.symbolic.batches import Geometric
>>> q = VacationQueue.from_load(F(3, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)))
>>> q.rate, q.rho_bar
(Fraction(8, 1), Fraction(3, 5))
>>> FiniteVacationQueue.from_load(F(3, 2), Geometric(5), Erlang(4, F(3, 200)), None, 0).capacity
0
"""

from __future__ import annotations

import enum
from dataclasses import MISSING, dataclass, replace

from .. import limits as _limits
from ..batches.base import BatchLaw
from ..errors import ParameterError
from ..laws.base import TimeLaw
from ..numbers import decimal_text, is_symbolic, positive
from ..params import Kind, Param, param
from .base import (
    Action,
    Alternative,
    MeasureKind,
    Measures,
    Model,
    Request,
    measure,
)

__all__ = ["VacationPolicy", "Admission", "block_rules", "VacationQueue", "FiniteVacationQueue", "VacationMeasures",
           "FiniteVacationMeasures", "SizeRequest", "CodegenFamilies", "CodegenPolicy"]


class VacationPolicy(enum.Enum):
    """What the server does when it finds the queue empty."""

    #: take vacations until the queue is not empty at a vacation's end (the thesis)
    MULTIPLE = "multiple"
    #: take one vacation, then idle until the next batch
    SINGLE = "single"


class Admission(enum.Enum):
    """What happens to a batch that does not fit in the waiting room."""

    #: fill the waiting room, lose the rest of the batch (the thesis)
    PARTIAL = "partial"
    #: reject the whole batch
    WHOLE = "whole"


def _rate_from_load(values, load):
    load = positive(load, "load")
    batch, service = values.get("batch"), values.get("service")
    if batch is None or service is None:
        raise ParameterError("load needs the batch and service laws")
    return load / (batch.mean * service.moment(1))


def vacation_field(default=MISSING):
    """The vacation law's parameter (also the ``--vacation`` of ``sip-retransmission``, default there none)."""
    return param("vacation-time law, or none (no vacations)", kind=Kind.TIME_LAW, none_text="none", default=default)


def policy_field():
    return param("multiple: vacations until work arrives (the thesis); single: one vacation, then idle until the "
                 "next batch", kind=Kind.CHOICE, choices=VacationPolicy, default=VacationPolicy.MULTIPLE)


def threshold_field():
    """The N-policy's start threshold (issue "blocks"): 1 is today's rules."""
    return param("start threshold N (N-policy): after the system empties the server starts serving only once at "
                 "least N customers are present (multiple vacations: checked at vacation ends; single: after its one "
                 "vacation the server waits, available, for the count to reach N; none: it waits); 1: start at once",
                 kind=Kind.INTEGER, default=1, metavar="N")


def setup_field():
    """The setup time before the first service of a busy period (none: no setup)."""
    return param("setup-time law, or none: once the start condition holds a setup time elapses before the first "
                 "service; batches arriving during it join the queue", kind=Kind.TIME_LAW, none_text="none",
                 default=None)


def close_down_field():
    """The close-down time after a departure that empties the system (none: no close-down)."""
    return param("close-down-time law, or none: a departure that empties the system starts a close-down; a batch "
                 "arriving during it is served at once (no vacation, no setup, whatever N is); if it ends with the "
                 "system empty, the vacation rule (or waiting) begins", kind=Kind.TIME_LAW, none_text="none",
                 default=None)


def block_rules(what: str, asked=frozenset()) -> tuple:
    """The refusals of a consumer that computes the start-of-busy-period rules of the thesis only (N = 1, no setup,
    no close-down): ``what`` names it in the reason ("the finite-room kernel"); ``asked``: only when one of these
    measures is asked (the waiting-time tails)."""
    from ..capabilities import Rule

    asked = frozenset(asked)
    return (Rule("start_threshold", lambda n: n != 1, f"{what} computes the start threshold N = 1 only", asked),
            Rule("setup", lambda law: law is not None, f"{what} has no setup time", asked),
            Rule("close_down", lambda law: law is not None, f"{what} has no close-down time", asked))


_LOAD = Alternative("load", "rate", Param("offered load rho_bar = lambda l1 b1 (> 0)", metavar="RHO"), _rate_from_load)


@dataclass(frozen=True)
class _VacationModel(Model):
    """Fields and validation shared by the infinite and the finite vacation queue."""

    rate: object = param("batch arrival rate lambda", units="1/time", metavar="LAMBDA")
    batch: BatchLaw = param("batch-size law", kind=Kind.BATCH_LAW)
    service: TimeLaw = param("service-time law", kind=Kind.TIME_LAW)
    vacation: TimeLaw | None = vacation_field()

    alternatives = (_LOAD,)

    def _validate(self):
        positive(self.rate, "rate")
        from ..counts import check_arrivals_per_period

        check_arrivals_per_period(self.rate, (("service", self.service), ("vacation", self.vacation),
                                              ("setup", self.setup), ("close-down", self.close_down)))
        policy = getattr(self, "vacation_policy", VacationPolicy.MULTIPLE)
        if self.vacation is None and policy is VacationPolicy.SINGLE:
            raise ParameterError("vacation-policy", "single needs a vacation law (not --vacation none)", "single")
        n = self.start_threshold
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ParameterError("start-threshold", "must be an integer >= 1", n)
        _limits.check("start_threshold", n, "the renewal sums of the overshoot over the start threshold cost O(N^2)")

    @property
    def blocks(self) -> bool:
        """True when a start threshold N > 1, a setup or a close-down is set (the composed variants)."""
        return self.start_threshold != 1 or self.setup is not None or self.close_down is not None

    def parameters(self) -> dict:
        out = super().parameters()
        if self.vacation is None and "vacation_policy" in out:
            out["vacation_policy"] = None  # no vacations: the policy does not apply
        return out

    @property
    def lam(self):
        """lambda, the batch arrival rate (the thesis's symbol)."""
        return self.rate

    @property
    def rho_bar(self):
        """Offered load rho_bar = lambda l_1 b_1 (``docs/theory/chapter2.md`` section 0)."""
        return self.rate * self.batch.mean * self.service.moment(1)

    @property
    def alpha_bar(self):
        """alpha_bar = lambda l_1 f_1 (0 without vacations)."""
        return 0 * self.rate if self.vacation is None else self.rate * self.batch.mean * self.vacation.moment(1)

    @classmethod
    def from_load(cls, load, batch, service, vacation, *args, **kwargs):
        """The model with offered load rho_bar = ``load``, i.e. lambda = rho_bar / (l_1 b_1)."""
        rate = _rate_from_load({"batch": batch, "service": service}, load)
        return cls(rate, batch, service, vacation, *args, **kwargs)


# --------------------------------------------------------------------------------------
# Infinite waiting room
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VacationMeasures(Measures):
    """Measures of M[X]/G/1 with vacations (``docs/theory/chapter2.md`` section 1)."""

    q0: object = measure("probability that the queue is empty at an embedded epoch (service completion "
                         "or vacation end)", MeasureKind.PROBABILITY, source="(3)")
    idle_probability: object = measure("probability that the server is not serving (on vacation or idle), "
                                       "1 - rho_bar", MeasureKind.PROBABILITY, source="(5)")
    mean_queue_length: object = measure("mean number waiting N = lambda l1 W", MeasureKind.COUNT,
                                        units="customers", source="(7)")
    mean_wait: object = measure("mean waiting time W", MeasureKind.TIME, units="time", source="(6)")
    queue_length_variance: object = measure("variance of the number waiting, P''(1) + N - N^2",
                                            MeasureKind.VALUE, units="customers^2", source="from (5)")
    mean_number_in_system: object = measure("mean number in the system N + rho_bar", MeasureKind.COUNT,
                                            units="customers", source="(7)")
    p: object = measure("the first terms p_0..p_{n-1} of the time-stationary law of the number waiting, p_j = "
                        "(1 - rho_bar) p~_j (Theorem 1.2): a list; n the smallest power of two >= 16 with "
                        "1 - sum_j p_j <= 2.2e-10 (float64) or 10^-D (--digits D), said in a note (--distribution)", MeasureKind.DISTRIBUTION, source="(9), (10), (13)", optional=True)


@dataclass(frozen=True)
class CodegenPolicy(Request):
    """``qderive codegen vacation-infinite``: the vacation policy of the generated code and, for the
    waiting and sojourn time's tails and quantiles (``--measure wait_tail``, ...), the law *families*
    fixed in it (as for ``codegen vacation-finite``: ``--service erlang:k=4``; the closed-form
    measures take the laws' moments as arguments and need no family)."""

    vacation_policy: VacationPolicy = policy_field()
    no_vacation: bool = param("generate the classic M[X]/G/1 without vacations", kind=Kind.FLAG, default=False)
    batch: str | None = param("batch family of the wait measures: geometric | const:n=N | pmf:sizes=1/2/.. | "
                              "poisson1", kind=Kind.TEXT, default=None, metavar="FAMILY")
    service: str | None = param("service family of the wait measures: exp | erlang:k=K | gamma | hyperexp:n=N | "
                                "ph:n=N | coxian:n=N", kind=Kind.TEXT, default=None, metavar="FAMILY")
    vacation: str | None = param("vacation family of the wait measures (as --service), or none", kind=Kind.TEXT,
                                 default=None, metavar="FAMILY")
    start_threshold: int = param("start threshold N fixed in the code (N-policy; 1: start at once); N > 1 needs the "
                                 "law families (--batch, --service, --vacation, --setup FAMILY, ...)",
                                 kind=Kind.INTEGER, default=1, metavar="N")
    setup: str | None = param("general: a setup time, its moments s1, s2, s3 arguments of the closed forms; a "
                              "family (as --service): its numbers arguments of the generated kernel; or none",
                              kind=Kind.TEXT, default=None, metavar="LAW")
    close_down: str | None = param("general: a close-down time, the probability d0 that no batch arrives during it "
                                   "an argument of the closed forms; a family (as --service); or none",
                                   kind=Kind.TEXT, default=None, metavar="LAW")


@dataclass(frozen=True)
class DelaySizeRequest(Request):
    """``qderive size vacation-infinite``: the largest load rho_bar with P(W > T) <= P (a delay target)."""

    wait_time: object = param("the delay T of the target P(W > T) <= P [time]", option="--target-wait-tail", part=0,
                              metavar="T")
    wait_probability: object = param("the largest acceptable P(W > T), in (0, 1)", option="--target-wait-tail", part=1,
                                     metavar="P")

    def _validate(self):
        if not self.wait_time > 0:
            raise ParameterError("target-wait-tail T", "must be > 0", decimal_text(self.wait_time))
        if not 0 < self.wait_probability < 1:
            raise ParameterError("target-wait-tail P", "must lie strictly between 0 and 1",
                                 decimal_text(self.wait_probability))


@dataclass(frozen=True)
class VacationQueue(_VacationModel):
    """M[X]/G/1 with an infinite waiting room: ``VacationQueue(rate, batch, service, vacation)``.

    Requires rho_bar < 1 (there is no stationary regime otherwise).
    """

    vacation_policy: VacationPolicy = policy_field()
    start_threshold: int = threshold_field()
    setup: TimeLaw | None = setup_field()
    close_down: TimeLaw | None = close_down_field()

    name = "vacation-infinite"
    summary = ("M[X]/G/1 with multiple or single vacations (or none), infinite waiting room (Sopin 2013, eqs. "
               "(2)-(7); the OCR leaves open which of (6), (7) is W and which N: qderive uses (6) = W, (7) = N)")
    measures = VacationMeasures
    codegen_options = CodegenPolicy
    actions = (Action("size", "largest load rho_bar with P(W > T) <= P (--target-wait-tail T,P)", DelaySizeRequest, omit=("rate",)),)

    def _validate(self):
        super()._validate()
        rb = self.rho_bar
        if not is_symbolic(rb) and not rb < 1:
            raise ParameterError(f"rho_bar = {decimal_text(rb)} >= 1: the infinite-buffer model has no stationary "
                                 "regime; use a finite capacity r (model vacation-finite)")

    @classmethod
    def example(cls):
        from fractions import Fraction as F

        from ..batches.geometric import Geometric
        from ..laws.gamma import Erlang, Exponential

        return cls.from_load(F(3, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)))

    def moment_values(self) -> list:
        """lambda, b1..b3, f1..f3, l1..l3 and c0 = varphi(lambda) exactly: the arguments of the closed forms
        of :mod:`qderive.symbolic.closed_forms.vacation_infinite` (their ``SYMBOLS``, in order).

        c0 = P(no batch arrives during a vacation) is rational for phase-type and integer-shape gamma
        laws and None otherwise (the engine then takes it from the count kernel); without vacations the
        vacation moments are placeholders that no expression uses.
        """
        from fractions import Fraction

        vac = self.vacation
        values = [self.rate, *(self.service.moment(k) for k in (1, 2, 3))]
        values += [*(vac.moment(k) for k in (1, 2, 3))] if vac is not None else [Fraction(1)] * 3
        values += [self.batch.moment(k) for k in (1, 2, 3)]
        values.append(_zero_count(vac.count_law(self.rate)) if vac is not None else Fraction(0))
        return values


def _zero_count(c):
    """P(K = 0) of a count law exactly when it is rational (negative binomial of integer shape, mixtures of
    them, phase-type), else None."""
    from ..counts import MixtureCount, NegativeBinomialCount, PhaseTypeCount

    if isinstance(c, NegativeBinomialCount):
        a = c.shape
        return c.p0 ** int(a) if a == int(a) else None
    if isinstance(c, MixtureCount):
        parts = [_zero_count(p) for p in c.components]
        return None if any(p is None for p in parts) else sum(w * p for w, p in zip(c.weights, parts))
    if isinstance(c, PhaseTypeCount):
        from ..laws.phase_type import solve_exact

        n = len(c.alpha)
        A = [[(c.lam if i == j else 0) - c.T[i][j] for j in range(n)] for i in range(n)]
        x = solve_exact(A, [-sum(row) for row in c.T])
        return sum(a * v for a, v in zip(c.alpha, x))
    return None


# --------------------------------------------------------------------------------------
# Finite waiting room
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FiniteVacationMeasures(Measures):
    """Measures of M[X]/G/1/r with vacations (``docs/theory/chapter2.md`` section 2)."""

    loss_probability: object = measure("probability that a customer is lost", MeasureKind.PROBABILITY,
                                       source="Theorem 1.1 (12)")
    batch_blocking_probability: object = measure("probability that an arriving batch loses all its customers",
                                                 MeasureKind.PROBABILITY, source="(10)")
    idle_probability: object = measure("probability P^r_e that the server is not serving", MeasureKind.PROBABILITY,
                                       source="Statement 2 (11)")
    mean_queue_length: object = measure("mean number waiting N^r = sum_j j p^r_j", MeasureKind.COUNT,
                                        units="customers", source="(9), (10)")
    mean_wait: object = measure("mean wait of an admitted customer W^r = N^r / throughput", MeasureKind.TIME,
                                units="time", source="Little")
    mean_number_in_system: object = measure("mean number in the system N^r + 1 - P^r_e", MeasureKind.COUNT,
                                            units="customers")
    throughput: object = measure("served customers per unit time (1 - P^r_e) / b1", MeasureKind.RATE,
                                 units="customers/time")
    p0: object = measure("time-stationary probability p^r_0 of an empty waiting room", MeasureKind.PROBABILITY,
                         source="Theorem 1.2 (13)")
    pr: object = measure("time-stationary probability p^r_r of a full waiting room", MeasureKind.PROBABILITY,
                         source="(10)")
    q0: object = measure("embedded probability q^r_0", MeasureKind.PROBABILITY, source="Statement 1")
    qr: object = measure("embedded probability q^r_r", MeasureKind.PROBABILITY, source="Statement 1")
    p: object = measure("time-stationary queue-length law p^r_0..p^r_r (--distribution)",
                        MeasureKind.DISTRIBUTION, source="(9), (10)", optional=True)


@dataclass(frozen=True)
class SizeRequest(Request):
    """``qderive size vacation-finite``: the smallest waiting room r with loss <= the target (and, with
    ``--target-wait-quantile Q,T``, the largest r whose admitted customers' Q-quantile of the wait is <= T)."""

    target_loss: object = param("largest acceptable loss probability, in (0, 1)", metavar="P")
    max_capacity: int = param("give up beyond this capacity", kind=Kind.INTEGER, default=100_000, metavar="R")
    wait_level: object = param("with --target-wait-quantile Q,T: the level Q of the quantile of an admitted "
                               "customer's wait", option="--target-wait-quantile", part=0, metavar="Q", default=None)
    wait_bound: object = param("the largest acceptable Q-quantile T [time]", option="--target-wait-quantile", part=1,
                               metavar="T", default=None)

    def _validate(self):
        if not 0 < self.target_loss < 1:
            raise ParameterError("target-loss", "must lie strictly between 0 and 1", decimal_text(self.target_loss))
        if (self.wait_level is None) != (self.wait_bound is None):
            raise ParameterError("target-wait-quantile", "expects two values Q,T")
        if self.wait_level is not None:
            if not 0 < self.wait_level < 1:
                raise ParameterError("target-wait-quantile Q", "must lie strictly between 0 and 1",
                                     decimal_text(self.wait_level))
            if not self.wait_bound > 0:
                raise ParameterError("target-wait-quantile T", "must be > 0", decimal_text(self.wait_bound))
        if self.max_capacity < 1:
            raise ParameterError("max-capacity", "must be >= 1", self.max_capacity)
        _limits.check("capacity", self.max_capacity, "the sizing scan costs O(r^2)")


@dataclass(frozen=True)
class CodegenFamilies(Request):
    """``qderive codegen vacation-finite``: the law *families* fixed in the generated code.

    The numeric parameters (means, rates, probabilities) become arguments of the generated
    function; structural ones (Erlang's k, the sizes of a pmf) are fixed: ``--service erlang:k=4``.
    """

    batch: str = param("batch family: geometric | const:n=N | pmf:sizes=1/2/.. | poisson1", kind=Kind.TEXT)
    service: str = param("service family: det | exp | erlang:k=K | gamma | hyperexp:n=N | ph:n=N | coxian:n=N",
                         kind=Kind.TEXT)
    vacation: str = param("vacation family (as --service), or none", kind=Kind.TEXT)
    admission: Admission = param("partial or whole admission (fixed in the code)", kind=Kind.CHOICE,
                                 choices=Admission, default=Admission.PARTIAL)
    vacation_policy: VacationPolicy = policy_field()
    start_threshold: int = param("start threshold N fixed in the code (N-policy; 1: start at once); r >= N",
                                 kind=Kind.INTEGER, default=1, metavar="N")
    setup: str | None = param("setup-time family (as --service), or none", kind=Kind.TEXT, default=None,
                              metavar="FAMILY")
    close_down: str | None = param("close-down-time family (as --service), or none", kind=Kind.TEXT, default=None,
                                   metavar="FAMILY")


@dataclass(frozen=True)
class FiniteVacationQueue(_VacationModel):
    """M[X]/G/1/r: ``FiniteVacationQueue(rate, batch, service, vacation, capacity, admission, vacation_policy)``.

    Any load (also rho_bar >= 1). ``capacity`` r >= 1 with vacations (nobody could wait
    during a vacation otherwise), >= 0 without.
    """

    capacity: int = param("waiting room r, the customer in service not counted", kind=Kind.INTEGER, metavar="R")
    admission: Admission = param("partial: fill the room, lose the rest (the thesis); whole: a batch that does "
                                 "not fit is rejected entirely", kind=Kind.CHOICE, choices=Admission,
                                 default=Admission.PARTIAL)
    vacation_policy: VacationPolicy = policy_field()
    start_threshold: int = threshold_field()
    setup: TimeLaw | None = setup_field()
    close_down: TimeLaw | None = close_down_field()

    name = "vacation-finite"
    summary = "M[X]/G/1/r with multiple or single vacations (or none): loss, blocking, queue, wait; buffer sizing"
    measures = FiniteVacationMeasures
    codegen_options = CodegenFamilies
    actions = (Action("size", "smallest waiting room r with loss <= --target-loss (give --load or --rate, not "
                      "--capacity); or, with --capacity R and without --load/--rate, the largest offered load "
                      "rho_bar with loss <= --target-loss (the loss has a positive floor as the load goes to 0)",
                      SizeRequest, optional=("capacity", "rate")),)

    def _validate(self):
        super()._validate()
        r = self.capacity
        lowest = 0 if self.vacation is None else 1
        if r < lowest:
            why = "" if self.vacation is None else " with vacations (nobody could wait during a vacation)"
            raise ParameterError("capacity", f"must be >= {lowest}{why}", r)
        if self.start_threshold > max(r, 1):
            raise ParameterError("start-threshold", f"must be <= the waiting room r = {r} (a larger threshold could "
                                 "never be met)", self.start_threshold)
        if self.admission is Admission.WHOLE:
            _limits.check("whole_capacity", r, "whole admission keeps dense (r+1) x (r+1) room matrices")
            room = r if self.vacation is not None else r + 1
            if self.batch.min_size > room:
                raise ParameterError(f"capacity = {r}: under whole admission no batch ever fits (smallest batch "
                                     f"{self.batch.min_size} > {room} places); increase the capacity")
        else:
            _limits.check("capacity", r, "the finite-queue recursion costs O(r^2) time")

    def with_capacity(self, r: int) -> "FiniteVacationQueue":
        """The same model with r waiting places."""
        return replace(self, capacity=r)

    @classmethod
    def example(cls):
        from fractions import Fraction as F

        from ..batches.geometric import Geometric
        from ..laws.gamma import Erlang

        return cls.from_load(F(3, 2), Geometric(5), Erlang(4, F(3, 200)), Erlang(4, F(3, 40)), 20)
