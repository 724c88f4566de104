"""Hysteretic overload control: M[X]|G|1|(L,H)|(H,R) (Sopin 2013, chapter 3) and M|M|1 with bi-level hysteresis.

**M[X]|G|1|(L,H)|(H,R)** (:class:`HystereticModel`; ``docs/theory/chapter3.md`` sections 0-1):
batches arrive as a Poisson process whose rate depends on the control mode s: lambda_0
(normal), lambda_1 = f lambda_0 (overload, 0 <= f <= 1) and lambda_2 = 0 (discard); one
server with general service times B (mean b_1); at most R customers in the system, the
one in service included (a batch that does not fit is partially admitted, the excess is
lost). Thresholds 1 <= L < H < R: the count reaching H switches normal -> overload,
reaching R switches to discard, dropping to H returns discard -> overload, dropping to
L - 1 returns overload -> normal. The mode changes only at departure epochs t_n
(:class:`Convention`: by the count n^- just before the departure, or by the count left
behind), or, with ``policy=Policy.INSTANT`` (seed 002, abstract 2), at the moment the count
crosses a threshold (:class:`Policy`). f = 1 is the pure discard hysteresis (overload does
not throttle), f = 0 complete blocking in overload.

**M|M|1 with bi-level hysteresis** (:class:`MM1HystereticModel`; ``docs/theory/other-models.md``
section B): Poisson arrivals at rate lambda_s, exponential service at rate mu, the same
thresholds, and the mode follows the count at once: (H-1, 0) -> (H, 1) on an arrival,
(L, 1) -> (L-1, 0) on a departure, (R-1, 1) -> (R, 2) on an arrival, (H+1, 2) -> (H, 1) on
a departure.

Both models have the same measures (:class:`HystereticMeasures`, the keys of ``qderive eval``)
and the same threshold rule (:func:`ordered_thresholds`).

>>> from fractions import Fraction as F
>>> from qderive.symbolic.batches import Geometric
>>> from qderive.symbolic.laws import Deterministic
>>> m = HystereticModel.from_load(F(3, 2), service=Deterministic(F(1, 200)), batch=Geometric(2), L=73, H=84, R=100)
>>> m.rate, m.rate1
(Fraction(150, 1), Fraction(75, 1))
>>> m.next_state(84, 0), m.next_state(74, 1), m.next_state(100, 0)
((83, 1), (73, 1), (99, 2))
>>> MM1HystereticModel(F(6, 5), F(3, 5), 1, 3, 6, 9).rate1
Fraction(3, 5)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction

from .. import limits as _limits
from ..batches.base import BatchLaw
from ..batches.finite import Constant
from ..errors import ParameterError
from ..laws.base import TimeLaw, is_concrete
from ..numbers import decimal_text, positive
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

__all__ = ["Policy", "Convention", "Semantics", "NormalTimeForm", "ordered_thresholds", "HystereticMeasures",
           "MM1HystereticMeasures", "HystereticModel", "MM1HystereticModel", "HystereticOptimizeRequest",
           "ControlOptimizeRequest", "ThresholdSizeRequest", "HystereticCodegenFamilies"]


class Policy(enum.Enum):
    """When the control mode changes (seed 002, abstract 2: "two control policies defined by instants when
    it is decided to change the system's mode").

    DEPARTURE (default, the thesis's chapter 3): only at departure epochs t_n, by :class:`Convention`.
    INSTANT: at the moment the count crosses a threshold -- up at arrivals (reaching H: normal ->
    overload; reaching R: -> discard, directly from normal when one batch jumps from below H to R),
    down at departures (leaving L - 1 in overload: -> normal; leaving H in discard: -> overload); the
    rate of the new mode applies at once, also within a service (a state-dependent birth process,
    ``kernels.birth`` of the numeric layer).
    """

    DEPARTURE = "departure"
    INSTANT = "instant"


class Convention(enum.Enum):
    """When a mode switch is decided at a departure epoch (``docs/theory/chapter3.md`` section 1).

    EVENT (default): by the count n^- just before the departure (the largest count of the
    service), j = n^- - 1 left behind. Normal: n^- >= R -> discard, n^- >= H -> overload.
    Overload: n^- >= R -> discard, j <= L - 1 -> normal. Discard: j <= H -> overload.
    Reproduces the index ranges of (16) and (20): P_0 lives on j = 0..H-2.

    LEFT: by the left-behind count j only: normal: j >= R - 1 -> discard, j >= H -> overload;
    the other rules are the same. P_0 lives on j = 0..H-1 (inconsistent with (20); for comparison).
    """

    EVENT = "event"
    LEFT = "left"

    def onset(self, H: int) -> int:
        """The smallest n^- of a normal-mode service that switches to overload (H or H + 1)."""
        return H if self is Convention.EVENT else H + 1


class Semantics(enum.Enum):
    """Which mode a moment of time belongs to (``docs/theory/chapter3.md`` section 5).

    INTERVAL: the mode whose arrival rate is in force. LABEL: the ideal hysteresis applied to
    the count path (the count reaching H inside a normal-mode service is already overload).
    """

    INTERVAL = "interval"
    LABEL = "label"


class NormalTimeForm(enum.Enum):
    """E tau_0 (21): CORRECTED counts the idle periods in (0, 0) as normal mode; THESIS omits them."""

    CORRECTED = "corrected"
    THESIS = "thesis"


def ordered_thresholds(L, H, R) -> None:
    """The threshold rule of both hysteretic models: 1 <= L < H < R (a ParameterError naming the field).

    L >= 1 because overload returns to normal when a departure leaves L - 1 customers.
    """
    got = f"got L={L}, H={H}, R={R}"
    if L < 1:
        raise ParameterError("L", f"must be >= 1: overload returns to normal at L - 1 customers ({got})", L)
    if not L < H:
        raise ParameterError("L", f"must satisfy 1 <= L < H < R ({got})", L)
    if not H < R:
        raise ParameterError("H", f"must satisfy 1 <= L < H < R ({got})", H)


def _threshold(name: str, help: str, part: int):
    return param(help, kind=Kind.INTEGER, units="customers", option="--thresholds", part=part, metavar=name)


# --------------------------------------------------------------------------------------
# The result records
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ControlMeasures(Measures):
    """The measures of a hysteretic overload control (the keys of ``qderive eval``)."""

    p_normal: object = measure("probability P(S_0) of the normal mode", MeasureKind.PROBABILITY,
                               source="1 - (18) - (19)")
    p_overload: object = measure("probability P(S_1) of the overload mode", MeasureKind.PROBABILITY, source="(18)")
    p_discard: object = measure("probability P(S_2) of the discard mode", MeasureKind.PROBABILITY, source="(19)")
    mean_normal_time: object = measure("mean sojourn E tau_0 in the normal mode", MeasureKind.TIME, units="time",
                                       source="(21)")
    mean_return_time: object = measure("mean return time E tau_12 from leaving the normal mode back to it",
                                       MeasureKind.TIME, units="time", source="(22)")
    mean_cycle_time: object = measure("mean control cycle E tau = E tau_0 + E tau_12", MeasureKind.TIME,
                                      units="time", source="(23)")
    loss_probability: object = measure("fraction of the offered customers (rate lambda_0 l_1) that are not served: "
                                       "throttled in overload, discarded, or lost at the capacity R",
                                       MeasureKind.PROBABILITY)
    throughput: object = measure("customers served per unit time", MeasureKind.RATE, units="customers/time",
                                 source="1/C, (17)")
    time_law: object = measure("time-stationary joint law p_{j,s} of the count j (the customer in service included) "
                               "and the mode s (the label under --semantics label): nested lists [s][j], s = 0, 1, 2, "
                               "j = 0..R (--distribution)", MeasureKind.DISTRIBUTION, source="(17)", optional=True)
    number_law: object = measure("time-stationary law of the number in system, sum_s p_{j,s}: a list over j = 0..R "
                                 "(--distribution)", MeasureKind.DISTRIBUTION, source="(17)", optional=True)


@dataclass(frozen=True)
class HystereticMeasures(_ControlMeasures):
    """Measures of M[X]|G|1|(L,H)|(H,R) (Sopin 2013, (17)-(23)). The diagnostics kappa_inf(I - P_0) and
    the renewal value C / (q_{L,1} a_0^(1)) of E tau: ``engines.hysteretic.diagnostics`` of the numeric layer."""

    mean_time_between_mode_changes: object = measure(
        "1 / (long-run mode changes per unit time), every change of the mode in force counted once (a direct "
        "normal -> discard change is one)", MeasureKind.TIME, units="time", source="seed 002, abstract 2")
    embedded_law: object = measure("embedded law q_{j,s} at departure epochs (j left behind, mode s after the "
                                   "departure), (16): nested lists [s][j], s = 0, 1, 2, j = 0..R-1, 0 where (j, s) is "
                                   "not a state (--distribution)", MeasureKind.DISTRIBUTION, source="(16)",
                                   optional=True)


@dataclass(frozen=True)
class MM1HystereticMeasures(_ControlMeasures):
    """Measures of M|M|1 with bi-level hysteresis (``docs/theory/other-models.md`` section B): P(S_i) = M_i / M,
    E tau_0 = M_0 / mu, E tau_12 = (M_1 + M_2) / mu, E tau = M / mu (with pi(L, 1) = 1)."""


# --------------------------------------------------------------------------------------
# M[X]|G|1|(L,H)|(H,R)
# --------------------------------------------------------------------------------------


def _rate_from_load(values, load):
    load = positive(load, "load")
    batch = values.get("batch") or Constant(1)
    service = values.get("service")
    if service is None:
        raise ParameterError("load needs the service law")
    return load / (batch.mean * service.moment(1))


_LOAD = Alternative("load", "rate", Param("offered load rho_0 = lambda_0 l_1 b_1 in normal mode (> 0)",
                                          metavar="RHO0"), _rate_from_load)


@dataclass(frozen=True)
class HystereticOptimizeRequest(Request):
    """``qderive optimize hysteretic``: (L, H) minimising E tau_12 (22) subject to P(S_2) <= P (19)
    and E tau >= T (23), for the rates, laws and R of the model (seed 002)."""

    discard_bound: object = param("largest admissible P(S_2), the probability of the discard mode", metavar="P",
                                  check="[0, 1]")
    min_cycle: object = param("smallest admissible E tau (a short cycle means the control oscillates)",
                              default=Fraction(0), units="time", metavar="T", check=">= 0")
    l_range: tuple | None = param("search L in MIN..MAX (default 1..R-3)", kind=Kind.INTEGERS, count=2,
                                  default=None, metavar="MIN,MAX")
    h_range: tuple | None = param("search H in MIN..MAX (default 2..R-2; H = R - 1 leaves no discard state)",
                                  kind=Kind.INTEGERS, count=2, default=None, metavar="MIN,MAX")

    def _validate(self):
        for name, rng in (("l-range", self.l_range), ("h-range", self.h_range)):
            if rng is not None and not rng[0] <= rng[1]:
                raise ParameterError(name, "must be MIN,MAX with MIN <= MAX", f"{rng[0]},{rng[1]}")


@dataclass(frozen=True)
class ControlOptimizeRequest(Request):
    """``qderive optimize mm1-hysteretic`` / ``two-flow-hysteretic``: (L, H, R) minimising the mean return
    time E tau_12 subject to P(S_2) <= EPS and E tau >= T (seed 002); R is the R of ``--thresholds``
    unless ``--r-range`` searches it too."""

    discard_bound: object = param("largest admissible P(S_2), the probability of the discard mode", metavar="EPS",
                                  check="[0, 1]")
    min_cycle: object = param("smallest admissible mean control cycle E tau", default=Fraction(0), units="time",
                              metavar="T", check=">= 0")
    r_range: tuple | None = param("search the discard threshold R in MIN..MAX too (default: the R of --thresholds)",
                                  kind=Kind.INTEGERS, count=2, default=None, metavar="MIN,MAX")

    def _validate(self):
        if self.r_range is not None:
            lo, hi = self.r_range
            if not 3 <= lo <= hi:
                raise ParameterError("r-range", "must be MIN,MAX with 3 <= MIN <= MAX (1 <= L < H < R)", f"{lo},{hi}")


@dataclass(frozen=True)
class ThresholdSizeRequest(Request):
    """``qderive size hysteretic``: the smallest discard threshold R (the capacity) from which on
    P(S_2) <= P (19), for the L and H of ``--thresholds L,H``."""

    discard_bound: object = param("largest admissible P(S_2), the probability of the discard mode, in (0, 1)",
                                  metavar="P")
    max_threshold: int = param("give up beyond this R", kind=Kind.INTEGER, default=3000, metavar="R")

    def _validate(self):
        if not 0 < self.discard_bound < 1:
            raise ParameterError("discard-bound", "must lie strictly between 0 and 1", decimal_text(self.discard_bound))
        if self.max_threshold < 3:
            raise ParameterError("max-threshold", "must be >= 3", self.max_threshold)
        _limits.check("threshold", self.max_threshold, "the embedded chain has about 2R states")


#: the optimize action of the instantaneous hysteresis models (seed 002)
CONTROL_OPTIMIZE = ("(L, H) minimising the mean return time E tau_12 subject to P(S_2) <= --discard-bound and "
                    "E tau >= --min-cycle; L and H are chosen by the search, R is --thresholds R or searched with "
                    "--r-range (the old spelling --thresholds L,H,R is still read); every tied optimum is listed "
                    "(ties), the one with the smallest R, L, H returned")


@dataclass(frozen=True)
class HystereticCodegenFamilies(Request):
    """``qderive codegen hysteretic``: the law families fixed in the generated code (their numeric
    parameters become arguments, after lam0 and overload_factor, before L, H, R)."""

    service: str = param("service family: det | exp | erlang:k=K | gamma | hyperexp:n=N | ph:n=N | coxian:n=N",
                         kind=Kind.TEXT, metavar="FAMILY")
    batch: str = param("batch family: const:n=N | geometric | pmf:sizes=1/2/.. | poisson1", kind=Kind.TEXT,
                       default="const:n=1", metavar="FAMILY")


@dataclass(frozen=True, kw_only=True)
class HystereticModel(Model):
    """M[X]|G|1|(L,H)|(H,R): ``HystereticModel(service=..., L=.., H=.., R=.., rate=..)`` (keyword arguments).

    ``rate`` is lambda_0 (batches per unit time in normal mode); ``overload_factor`` f =
    lambda_1 / lambda_0 in [0, 1]; ``convention``, ``semantics`` and ``thesis_form`` select
    the variant of the thesis (module docstring; ``docs/theory/chapter3.md`` sections 1, 5, 6).
    """

    service: TimeLaw = param("service-time law", kind=Kind.TIME_LAW)
    batch: BatchLaw = param("batch-size law", kind=Kind.BATCH_LAW, default=Constant(1))
    L: int = _threshold("L", "abatement threshold: overload -> normal when a departure leaves L - 1", 0)
    H: int = _threshold("H", "onset threshold: normal -> overload when the count reaches H", 1)
    R: int = _threshold("R", "discard threshold = capacity (the customer in service included)", 2)
    rate: object = param("batch arrival rate lambda_0 in normal mode", units="batches/time", metavar="LAMBDA0",
                         check="> 0")
    overload_factor: object = param("f = lambda_1 / lambda_0 in [0, 1] (1: pure discard hysteresis, 0: complete "
                                    "blocking in overload)", default=Fraction(1, 2), metavar="F", check="[0, 1]")
    convention: Convention = param("mode switch by the count before the departure (event) or left behind (left)",
                                   kind=Kind.CHOICE, choices=Convention, default=Convention.EVENT)
    semantics: Semantics = param("mode of a moment: arrival rate in force (interval) or ideal hysteresis label "
                                 "(label)", kind=Kind.CHOICE, choices=Semantics, default=Semantics.INTERVAL)
    thesis_form: bool = param("E tau_0 by the thesis's (21), which omits the idle periods", kind=Kind.FLAG,
                              default=False)
    policy: Policy = param("when the mode changes: at departure epochs (departure, the thesis) or at the moment the "
                           "count crosses a threshold (instant: up at arrivals, down at departures)",
                           kind=Kind.CHOICE, choices=Policy, default=Policy.DEPARTURE)

    name = "hysteretic"
    summary = ("M[X]|G|1|(L,H)|(H,R) hysteretic overload control (Sopin 2013 ch. 3): P(S_i), E tau_0, E tau_12, "
               "E tau, loss, throughput")
    measures = HystereticMeasures
    codegen_options = HystereticCodegenFamilies
    alternatives = (_LOAD,)
    actions = (Action("optimize", "(L, H) minimising E tau_12 subject to P(S_2) <= --discard-bound and E tau >= "
                      "--min-cycle, for the model whose mode changes at departures (the M[X]|G|1 embedded chain "
                      "(16)); --thresholds R gives the discard threshold (L and H are chosen by the grid search; "
                      "the old spelling --thresholds L,H,R is still read). For the seed's M|M|1 model, whose "
                      "mode changes at once on the count, use `qderive optimize mm1-hysteretic`",
                      HystereticOptimizeRequest, omit=("L", "H")),
               Action("size", "the smallest discard threshold R (the capacity) from which on P(S_2) <= "
                      "--discard-bound, for the L and H of --thresholds L,H (R = H + 1 has no discard state and is "
                      "not counted; P(S_2) rises to a maximum and then falls as R grows)", ThresholdSizeRequest, omit=("R",)))

    def _validate(self):
        for name in ("service", "batch"):
            if not is_concrete(getattr(self, name)):
                raise ParameterError(name, "must be a concrete law (numbers, not symbols) for the numeric model",
                                     str(getattr(self, name)))
        ordered_thresholds(self.L, self.H, self.R)
        _limits.check("threshold", self.R, "the embedded chain has about 2R states")
        from ..counts import check_arrivals_per_period

        check_arrivals_per_period(self.rate, (("service", self.service),))
        if self.policy is Policy.INSTANT:
            if self.convention is not Convention.EVENT:
                raise ParameterError("convention", "applies to --policy departure only: under instant the mode "
                                     "follows the count at once", self.convention.value)
            if self.thesis_form:
                raise ParameterError("thesis_form", "applies to --policy departure only (the thesis's (21))", True)
        if self.semantics is Semantics.LABEL and self.convention is not Convention.EVENT:
            raise ParameterError("semantics", "label needs --convention event: under the left-behind convention the "
                                 "mode set at a departure is not the ideal hysteresis of the count path", "label")

    @classmethod
    def from_load(cls, load, **fields):
        """The model with lambda_0 = rho_0 / (l_1 b_1), rho_0 = ``load`` (the other fields by keyword)."""
        return cls(rate=_rate_from_load(fields, load), **fields)

    @property
    def rate1(self):
        """lambda_1 = f lambda_0, the batch rate in overload."""
        return self.rate * self.overload_factor

    @property
    def load(self):
        """rho_0 = lambda_0 l_1 b_1 (customers offered per mean service time in normal mode)."""
        return self.rate * self.batch.mean * self.service.moment(1)

    @property
    def normal_time_form(self) -> NormalTimeForm:
        return NormalTimeForm.THESIS if self.thesis_form else NormalTimeForm.CORRECTED

    @property
    def onset(self) -> int:
        """The smallest n^- of a normal-mode service that switches to overload."""
        return self.convention.onset(self.H)

    def next_state(self, n_minus: int, s: int) -> tuple[int, int]:
        """The definition of the switching rule: the state (j, s') after a departure in mode ``s`` whose
        count just before it was ``n_minus`` (j = n^- - 1 left behind; :class:`Convention`).

        Reaching R switches to discard; if the departure then leaves H or fewer behind (R = H + 1),
        the hysteresis returns to overload at the same epoch.
        """
        j = n_minus - 1
        if s == 2:
            return (j, 1) if j <= self.H else (j, 2)
        if n_minus >= self.R:
            return (j, 2) if j > self.H else (j, 1)
        if s == 0:
            return (j, 1) if n_minus >= self.onset else (j, 0)
        return (j, 0) if j <= self.L - 1 else (j, 1)

    @classmethod
    def example(cls):
        """Figure 3 of the thesis at rho_0 = 1.5: geometric batches of mean 2, 5 ms, (73, 84, 100)."""
        from ..batches.geometric import Geometric
        from ..laws.deterministic import Deterministic

        return cls.from_load(Fraction(3, 2), service=Deterministic(Fraction(1, 200)), batch=Geometric(2),
                             L=73, H=84, R=100)


# --------------------------------------------------------------------------------------
# M|M|1 with bi-level hysteresis
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MM1HystereticModel(Model):
    """M|M|1 with bi-level hysteresis: ``MM1HystereticModel(rate0, rate1, service_rate, L, H, R)``.

    0 <= lambda_1 <= lambda_0, lambda_0 > 0, mu > 0, 1 <= L < H < R (R the capacity, the
    customer in service included). lambda_1 = lambda_0 is the pure discard hysteresis,
    lambda_1 = 0 complete blocking in overload (the discard mode is then never reached).
    """

    rate0: object = param("arrival rate lambda_0 in normal mode", units="customers/time", option="--rates", part=0,
                          metavar="LAMBDA0", check="> 0")
    rate1: object = param("arrival rate lambda_1 in overload mode (0 <= lambda_1 <= lambda_0)",
                          units="customers/time", option="--rates", part=1, metavar="LAMBDA1", check=">= 0")
    service_rate: object = param("service rate mu", units="customers/time", metavar="MU", check="> 0")
    L: int = _threshold("L", "abatement threshold: (L, 1) -> (L-1, 0) on a departure", 0)
    H: int = _threshold("H", "onset threshold: (H-1, 0) -> (H, 1) on an arrival", 1)
    R: int = _threshold("R", "discard threshold = capacity: (R-1, 1) -> (R, 2) on an arrival", 2)

    name = "mm1-hysteretic"
    summary = "M|M|1 with bi-level hysteretic input control (closed forms): P(S_i), E tau_0, E tau_12, E tau"
    measures = MM1HystereticMeasures
    actions = (Action("optimize", CONTROL_OPTIMIZE + " (exact; monotone search, see "
                      "the threshold search of the numeric layer)", ControlOptimizeRequest, omit=("L", "H"),
                      optional=("R",)),)

    def _validate(self):
        if self.rate1 > self.rate0:
            raise ParameterError("rate1", f"must be <= lambda_0 = {decimal_text(self.rate0)}: the overload mode "
                                 "may only throttle the input (lambda_1 <= lambda_0)", decimal_text(self.rate1))
        ordered_thresholds(self.L, self.H, self.R)
        _limits.check("mm1_threshold", self.R, "the M|M|1 hysteresis costs O(R)")

    def rates(self) -> tuple:
        """(lambda_0, lambda_1, lambda_2 = 0)."""
        return (self.rate0, self.rate1, Fraction(0))

    def mode_after_arrival(self, s: int, n: int) -> int:
        """The definition (other-models.md B): an arrival that brings the count to n in mode s;
        (H-1, 0) -> (H, 1) and (R-1, 1) -> (R, 2)."""
        if s == 0 and n >= self.H:
            return 1
        if s == 1 and n >= self.R:
            return 2
        return s

    def mode_after_departure(self, s: int, n: int) -> int:
        """A departure that leaves n in mode s: (L, 1) -> (L-1, 0), (H+1, 2) -> (H, 1)."""
        if s == 1 and n <= self.L - 1:
            return 0
        if s == 2 and n <= self.H:
            return 1
        return s

    @classmethod
    def example(cls):
        return cls(Fraction(6, 5), Fraction(3, 5), 1, 3, 6, 9)
