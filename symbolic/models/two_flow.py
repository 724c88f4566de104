"""Two message classes in a SIP server: the threshold model (seed 001) and hysteretic input control (seed 002).

**two-flow** (``docs/theory/other-models.md`` section C, seed 001). Class 1 = INVITE (Poisson
lambda_1), class 2 = non-INVITE (Poisson lambda_2); one server; exponential service with
rate mu_c in mode 0 and mu'_c in modes 1 and 2 (the rate of the message in service
follows the mode; harmless, service being memoryless). n counts the messages in the
system, the one in service included; an arrival finding n = R is rejected. Modes
(:class:`Mode`) and switching, instantaneous on the count:

* mode 0 (normal) accepts both classes; mode 1 (partial overload) accepts class 2 only
  and answers class 1 with 503; mode 2 (blocking) rejects everything;
* 0 -> 2 and 1 -> 2 when an accepted arrival makes n = H + 1 ("more than H");
* 2 -> 1 when a departure makes n = H;  1 -> 0 when a departure makes n = L - 1.

Algorithm 1 (:attr:`Algorithm.FIFO`) serves in arrival order; algorithm 2
(:attr:`Algorithm.PRIORITY`) serves in arrival order in mode 0 and, in modes 1 and 2,
the first class-2 message waiting, else the first class-1 message (non-preemptive);
the discipline at a departure is the one of the mode in force *after* it. Under these
rules n never exceeds H + 1, so R binds only when R <= H + 1 (:meth:`TwoFlowModel.notes`).

**two-flow-hysteretic** (seed 002; section B with two flows, section C last paragraph).
Two Poisson flows whose rates depend on the mode (:class:`InputMode`: normal, overload,
discard; ``lambda_c^(2) <= lambda_c^(1) <= lambda_c^(0)``), one exponential server (rate
mu_c for a flow-c customer), capacity R, relative (non-preemptive) priority to flow 1,
switching as in B: (H-1, 0) -> (H, 1) and (R-1, 1) -> (R, 2) on an arrival, (L, 1) ->
(L-1, 0) and (H+1, 2) -> (H, 1) on a departure (1 <= L < H < R). A service-time law for
both flows (``service``, instead of the rates) gives M2|G|1|R, e.g. M2|D|1|R.

>>> from fractions import Fraction as F
>>> m = TwoFlowModel(F(3, 5), 2, 1, 5, 2, 4, 9)
>>> m.effective_capacity, m.overload_service_rates, m.notes()[0][:22]
(5, (Fraction(1, 1), Fraction(5, 1)), 'R = 9 does not bind: u')
>>> TwoFlowHystereticModel(1, 1, F(1, 2), F(1, 2), 2, 4, 6, service_rates=1).service_rates
(Fraction(1, 1), Fraction(1, 1))
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction

from .. import limits as _limits
from ..errors import ParameterError
from ..laws.base import TimeLaw, is_concrete
from ..numbers import decimal_text
from ..params import Kind, param
from .base import Action, MeasureKind, Measures, Model, measure
from .hysteretic import CONTROL_OPTIMIZE, ControlOptimizeRequest

__all__ = ["Algorithm", "Mode", "Solver", "InputMode", "TwoFlowModel", "TwoFlowMeasures",
           "TwoFlowHystereticModel", "TwoFlowHystereticMeasures"]

_CITE_C = "docs/theory/other-models.md section C (seed 001)"
_CITE_B = "seed 002; docs/theory/other-models.md sections B, C"


class Algorithm(enum.Enum):
    """Service discipline of the two-flow model: algorithm 1 or 2 of seed 001."""

    #: algorithm 1: arrival order always
    FIFO = "fifo"
    #: algorithm 2: arrival order in mode 0; the first non-INVITE first in modes 1 and 2 (non-preemptive)
    PRIORITY = "priority"


class Mode(enum.IntEnum):
    """Mode of the two-flow server: what it accepts."""

    NORMAL = 0    #: accept both classes
    PARTIAL = 1   #: accept class 2 (non-INVITE) only; INVITE answered with 503
    BLOCKING = 2  #: reject everything

    def accepts(self, cls: int) -> bool:
        """True when this mode accepts an arriving message of class ``cls`` (1 = INVITE, 2 = non-INVITE)."""
        return self is Mode.NORMAL or (self is Mode.PARTIAL and cls == 2)


class Solver(enum.Enum):
    """How the two-flow engine computes the stationary law (an explicit strategy, as scipy's ``method=``)."""

    #: dense GTH for small chains, the sparse level solver for large float64 chains
    AUTO = "auto"
    #: dense Grassmann-Taksar-Heyman elimination (subtraction-free, any precision)
    GTH = "gth"
    #: level-ordered GMRES + Gauss-Seidel (scipy.sparse), float64 only; mpmath always uses GTH
    SPARSE = "sparse"


class InputMode(enum.IntEnum):
    """Mode of the hysteretic input control (seed 002): which rate pair the sources send at."""

    NORMAL = 0    #: the offered rates lambda_c^(0)
    OVERLOAD = 1  #: reduced rates lambda_c^(1)
    DISCARD = 2   #: lambda_c^(2) (default 0: everything discarded)


def _check_thresholds(L: int, H: int, R: int, strict_r: bool) -> None:
    """1 <= L < H, and R >= 1 (two-flow) or H < R (hysteretic); errors name the threshold."""
    if L < 1:
        raise ParameterError("L", "L must be >= 1", L)
    if H <= L:
        raise ParameterError("H", f"H must exceed L = {L} (L < H)", H)
    if strict_r and R <= H:
        raise ParameterError("R", f"R must exceed H = {H} (L < H < R)", R)
    if R < 1:
        raise ParameterError("R", "R must be >= 1", R)


def _threshold_field(what: str, part: int, name: str):
    return param(what, kind=Kind.INTEGER, option="--thresholds", part=part, metavar=name)


# --------------------------------------------------------------------------------------
# two-flow (seed 001)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TwoFlowMeasures(Measures):
    """Measures of the two-flow threshold model (``docs/theory/other-models.md`` C): PASTA and Little."""

    throughput_invite: object = measure("INVITE departures per unit time, mu_1 P(m=0, 1 in service) + mu'_1 "
                                        "P(m>0, 1 in service)", MeasureKind.RATE, units="messages/time",
                                        source="(C.2)")
    throughput_non_invite: object = measure("non-INVITE departures per unit time", MeasureKind.RATE,
                                            units="messages/time", source="(C.2)")
    rejection_invite: object = measure("probability that an arriving INVITE is rejected (modes 1, 2 or n = R; "
                                       "PASTA)", MeasureKind.PROBABILITY, source="(C.3)")
    rejection_non_invite: object = measure("probability that an arriving non-INVITE is rejected (mode 2 or n = R)",
                                           MeasureKind.PROBABILITY, source="(C.3)")
    mean_sojourn_invite: object = measure("mean sojourn of an accepted INVITE, N_1 / accepted rate (Little)",
                                          MeasureKind.TIME, units="time", source="(C.4)")
    mean_sojourn_non_invite: object = measure("mean sojourn of an accepted non-INVITE (Little)", MeasureKind.TIME,
                                              units="time", source="(C.4)")
    mean_sojourn: object = measure("mean sojourn of an accepted message, N / (sum of the accepted rates)",
                                   MeasureKind.TIME, units="time", source="(C.4)")
    p_mode0: object = measure("time-stationary probability of mode 0 (normal)", MeasureKind.PROBABILITY)
    p_mode1: object = measure("time-stationary probability of mode 1 (partial overload)", MeasureKind.PROBABILITY)
    p_mode2: object = measure("time-stationary probability of mode 2 (blocking)", MeasureKind.PROBABILITY)
    mean_return_time: object = measure("mean time from leaving mode 0 until re-entering it (first passage from "
                                       "the entry law); null when overload never occurs (R <= H)",
                                       MeasureKind.TIME, units="time", source="(C.5)")
    mean_number_invite: object = measure("mean number of INVITE messages in the system", MeasureKind.COUNT,
                                         units="messages")
    mean_number_non_invite: object = measure("mean number of non-INVITE messages in the system", MeasureKind.COUNT,
                                             units="messages")
    mean_number: object = measure("mean number of messages in the system", MeasureKind.COUNT, units="messages")
    accepted_rate_invite: object = measure("accepted INVITE rate lambda_1 P(accept); equals the throughput",
                                           MeasureKind.RATE, units="messages/time", source="(C.4)")
    accepted_rate_non_invite: object = measure("accepted non-INVITE rate lambda_2 P(accept)", MeasureKind.RATE,
                                               units="messages/time", source="(C.4)")
    states: object = measure("states of the chain solved: FIFO (mode, class in service, queue as runs of messages "
                             "admitted in mode 0 and in mode 1), priority (mode, class sequence)", MeasureKind.INTEGER)
    joint_law: object = measure("stationary joint law of (mode m, INVITE count i, non-INVITE count j) of the CTMC: "
                                "nested lists [m][i][j], m = 0, 1, 2, i, j = 0..N with N = min(R, H + 1) the largest "
                                "count reached, 0 where i + j > N (--distribution)", MeasureKind.DISTRIBUTION,
                                source="(C.1)", optional=True)
    number_law: object = measure("stationary law of the number of messages in the system: a list over n = 0..N "
                                 "(--distribution)", MeasureKind.DISTRIBUTION, source="(C.1)", optional=True)


def _rate(help_text: str, option: str, part: int, metavar: str, **kw):
    return param(help_text, option=option, part=part, metavar=metavar, units="1/time", check="> 0", **kw)


@dataclass(frozen=True)
class TwoFlowModel(Model):
    """INVITE / non-INVITE SIP server with threshold overload control (seed 001), see the module docstring.

    ``TwoFlowModel(lambda_invite, lambda_non_invite, mu_invite, mu_non_invite, L, H, R,
    algorithm=Algorithm.FIFO, mu_overload_invite=None, mu_overload_non_invite=None,
    solver=Solver.AUTO)``; the overload service rates default to the normal-mode ones.
    Rates exact and > 0; ``1 <= L < H``, ``R >= 1``. The model itself puts no bound on H: the
    analytic engine does (FIFO: the segment chain, limit ``two_flow_states``; priority and the
    response laws: the class-sequence chain, limit ``two_flow_high``), the simulator does not.
    """

    lambda_invite: object = _rate("Poisson rate of INVITE messages (class 1)", "--rates", 0, "LAMBDA1")
    lambda_non_invite: object = _rate("Poisson rate of non-INVITE messages (class 2)", "--rates", 1, "LAMBDA2")
    mu_invite: object = _rate("INVITE service rate in normal mode", "--service-rates", 0, "MU1")
    mu_non_invite: object = _rate("non-INVITE service rate in normal mode", "--service-rates", 1, "MU2")
    L: int = _threshold_field("1 <= L < H: partial overload ends when a departure leaves L - 1 messages", 0, "L")
    H: int = _threshold_field("an accepted arrival making n = H + 1 switches to blocking", 1, "H")
    R: int = _threshold_field("buffer, R >= 1: an arrival finding n = R is rejected (binds only when R <= H + 1)",
                              2, "R")
    algorithm: Algorithm = param("fifo: algorithm 1; priority: algorithm 2, non-INVITE first in modes 1 and 2",
                                 kind=Kind.CHOICE, choices=Algorithm, default=Algorithm.FIFO)
    mu_overload_invite: object = _rate("INVITE service rate in modes 1 and 2 (default: the normal-mode rates)",
                                       "--overload-service-rates", 0, "MU1", default=None)
    mu_overload_non_invite: object = _rate("non-INVITE service rate in modes 1 and 2", "--overload-service-rates", 1,
                                           "MU2", default=None)
    solver: Solver = param("stationary solver: auto (dense GTH for small chains and for --digits, the sparse level "
                           "solver for large float64 chains), gth, or sparse (float64 only; mpmath always uses GTH)",
                           kind=Kind.CHOICE, choices=Solver, default=Solver.AUTO)

    name = "two-flow"
    summary = ("INVITE / non-INVITE SIP server with threshold overload control, FIFO or priority (seed 001). "
               "L, H, R count the messages in the system, the one in service included; seed 001 counts the "
               "queue: its thresholds Lq, Hq, Rq are --thresholds Lq+1,Hq+1,Rq+1")
    measures = TwoFlowMeasures
    #: per-class response laws: measure keys ``wait_tail_invite``, ... (as ``mean_sojourn_invite``)
    response_flows = ("invite", "non_invite")

    def _validate(self):
        over = (self.mu_overload_invite, self.mu_overload_non_invite)
        if (over[0] is None) != (over[1] is None):
            missing = "mu_overload_invite" if over[0] is None else "mu_overload_non_invite"
            raise ParameterError(missing, "give both overload service rates or neither")
        if over[0] is None:
            object.__setattr__(self, "mu_overload_invite", self.mu_invite)
            object.__setattr__(self, "mu_overload_non_invite", self.mu_non_invite)
        _check_thresholds(self.L, self.H, self.R, strict_r=False)

    # -- the definition, as the engine, the oracle and the simulator read it -------------
    @property
    def arrival_rates(self) -> tuple:
        """(lambda_1, lambda_2): INVITE, non-INVITE."""
        return (self.lambda_invite, self.lambda_non_invite)

    @property
    def service_rates(self) -> tuple:
        """(mu_1, mu_2) in mode 0."""
        return (self.mu_invite, self.mu_non_invite)

    @property
    def overload_service_rates(self) -> tuple:
        """(mu'_1, mu'_2) in modes 1 and 2."""
        return (self.mu_overload_invite, self.mu_overload_non_invite)

    def service_rate(self, mode: Mode, cls: int):
        """Rate of the message in service: mu_c in mode 0, mu'_c in modes 1 and 2."""
        return (self.service_rates if mode is Mode.NORMAL else self.overload_service_rates)[cls - 1]

    @property
    def effective_capacity(self) -> int:
        """min(R, H + 1): the largest reachable count (the chain is the same for every R >= H + 1)."""
        return min(self.R, self.H + 1)

    @property
    def overload_reachable(self) -> bool:
        """False when R <= H: the buffer fills before n can exceed H, modes 1 and 2 never occur."""
        return self.R > self.H

    def notes(self) -> list[str]:
        """What R does: it does not bind when R > H + 1, and it pre-empts overload when R <= H."""
        H, R = self.H, self.R
        if R > H + 1:
            return [f"R = {R} does not bind: under the seed's rules an arrival that makes n = H + 1 = {H + 1} "
                    f"switches to blocking mode, so the count never exceeds H + 1 and the results are those of "
                    f"R = {H + 1} ({R - H - 1} buffer places are never used)"]
        if R <= H:
            return [f"R = {R} <= H = {H}: the buffer is full (arrivals rejected) before the count can exceed H, so "
                    f"the overload modes 1 and 2 are never entered; p_mode1 = p_mode2 = 0 exactly and the return "
                    f"time is not defined (reported as null)"]
        return []

    @classmethod
    def example(cls):
        """The seed-001 case of ``verify --simulate``: L,H,R = 3,7,10, algorithm 2."""
        return cls(Fraction(3, 5), 2, 1, 5, 3, 7, 10, Algorithm.PRIORITY)


# --------------------------------------------------------------------------------------
# two-flow-hysteretic (seed 002)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TwoFlowHystereticMeasures(Measures):
    """Measures of M2|M|1|R with hysteretic input control (seed 002)."""

    p_mode0: object = measure("time-stationary probability of the normal mode (S0)", MeasureKind.PROBABILITY)
    p_mode1: object = measure("time-stationary probability of the overload mode (S1)", MeasureKind.PROBABILITY)
    p_mode2: object = measure("time-stationary probability of the discard mode (S2)", MeasureKind.PROBABILITY)
    loss_flow1: object = measure("share of flow 1's offered traffic lambda_1^(0) not served: throttled, discarded "
                                 "or blocked", MeasureKind.PROBABILITY, source="(H.6)")
    loss_flow2: object = measure("share of flow 2's offered traffic not served", MeasureKind.PROBABILITY,
                                 source="(H.6)")
    throughput_flow1: object = measure("flow-1 departures per unit time, mu_1 P(flow 1 in service)",
                                       MeasureKind.RATE, units="customers/time", source="(H.7)")
    throughput_flow2: object = measure("flow-2 departures per unit time", MeasureKind.RATE, units="customers/time",
                                       source="(H.7)")
    mean_number_flow1: object = measure("mean number of flow-1 customers in the system", MeasureKind.COUNT,
                                        units="customers")
    mean_number_flow2: object = measure("mean number of flow-2 customers in the system", MeasureKind.COUNT,
                                        units="customers")
    mean_sojourn_flow1: object = measure("mean sojourn of an admitted flow-1 customer (Little)", MeasureKind.TIME,
                                         units="time")
    mean_sojourn_flow2: object = measure("mean sojourn of an admitted flow-2 customer (Little)", MeasureKind.TIME,
                                         units="time")
    mean_normal_time: object = measure("E tau_0: mean time in normal mode from its entry at (L-1, 0)",
                                       MeasureKind.TIME, units="time", source="(H.8)")
    mean_return_time: object = measure("E tau_12: mean time from entering overload at (H, 1) back to S0",
                                       MeasureKind.TIME, units="time", source="(H.9)")
    mean_cycle_time: object = measure("E tau = E tau_0 + E tau_12 (= 1 / rate of S0 -> S1 switches)",
                                      MeasureKind.TIME, units="time", source="(H.8)")
    states: object = measure("states of the chain (mode, flow-1 count, flow-2 count, flow in service)",
                             MeasureKind.INTEGER)
    joint_law: object = measure("stationary joint law of (mode s, flow-1 count i, flow-2 count j) of the CTMC (the "
                                "customer in service included, summed over the flow in service): nested lists "
                                "[s][i][j], s = 0, 1, 2, i, j = 0..R, 0 where i + j > R (--distribution)",
                                MeasureKind.DISTRIBUTION, optional=True)
    number_law: object = measure("stationary law of the number in system i + j: a list over n = 0..R "
                                 "(--distribution)", MeasureKind.DISTRIBUTION, optional=True)


def _flow_rate(help_text: str, mode: str, part: int, check: str, **kw):
    return param(help_text, option=f"--rates-{mode}", part=part, metavar=f"L{part + 1}", units="1/time",
                 check=check, **kw)


@dataclass(frozen=True)
class TwoFlowHystereticModel(Model):
    """M2|M|1|R with bi-level hysteretic input-rate control and relative priority to flow 1 (seed 002).

    ``TwoFlowHystereticModel(lambda1_normal, lambda2_normal, lambda1_overload,
    lambda2_overload, L, H, R, service_rates=(mu_1, mu_2) or mu, lambda1_discard=0,
    lambda2_discard=0)``. Per flow ``0 <= discard <= overload <= normal``, normal > 0;
    ``1 <= L < H < R``. The chain has about 2 R^2 states (:meth:`state_bound`); the engine
    solves it densely by GTH, within the limit ``dense_states``.

    ``service=LAW`` instead of ``service_rates``: one service-time law for both flows (M2|G|1|R;
    ``Deterministic(D)``: M2|D|1|R, seed 002 abstracts 5 and 7), solved by the embedded chain at
    departures over (flow-1 count, flow-2 count, mode) with the state-dependent birth kernel
    (``engines.two_flow_hysteretic.birth_measures`` of the numeric layer); the same measures, the
    state count then that of the embedded chain.
    """

    lambda1_normal: object = _flow_rate("rate of flow 1 in normal mode (the offered traffic)", "normal", 0, "> 0")
    lambda2_normal: object = _flow_rate("rate of flow 2 in normal mode", "normal", 1, "> 0")
    lambda1_overload: object = _flow_rate("reduced rate of flow 1 in overload mode (<= normal)", "overload", 0, ">= 0")
    lambda2_overload: object = _flow_rate("reduced rate of flow 2 in overload mode", "overload", 1, ">= 0")
    L: int = _threshold_field("1 <= L < H: overload ends when a departure leaves L - 1 customers", 0, "L")
    H: int = _threshold_field("an arrival making n = H in normal mode switches to overload", 1, "H")
    R: int = _threshold_field("capacity R > H: an arrival finding n = R is lost; n = R in overload switches to "
                              "discard", 2, "R")
    service_rates: tuple | None = param("exponential service rate: one for both flows, or MU1,MU2 (or --service)",
                                        kind=Kind.NUMBERS, option="--service-rate", metavar="MU[,MU2]",
                                        units="1/time", default=None)
    lambda1_discard: object = _flow_rate("rate of flow 1 in discard mode (<= overload; default 0)", "discard", 0,
                                         ">= 0", default=Fraction(0))
    lambda2_discard: object = _flow_rate("rate of flow 2 in discard mode", "discard", 1, ">= 0", default=Fraction(0))
    service: TimeLaw | None = param("service-time law of both flows (M2|G|1|R, e.g. det:mean=D for M2|D|1|R: the "
                                    "embedded chain at departures with the state-dependent birth kernel); instead "
                                    "of --service-rate", kind=Kind.TIME_LAW, default=None)

    name = "two-flow-hysteretic"
    summary = "M2|M|1|R, two flows with hysteretic input-rate control and priority to flow 1 (seed 002)"
    measures = TwoFlowHystereticMeasures
    actions = (Action("optimize", CONTROL_OPTIMIZE.replace("P(S_2)", "P(S_2) = p_mode2") + " (whole grid in "
                      "float64, the optimum confirmed at 30 digits)", ControlOptimizeRequest, omit=("L", "H"),
                      optional=("R",)),)
    #: per-flow response laws: measure keys ``wait_tail_flow1``, ... (as ``mean_sojourn_flow1``)
    response_flows = ("flow1", "flow2")

    def __post_init__(self):
        mus = self.service_rates
        if mus is not None and not isinstance(mus, (tuple, list)):
            object.__setattr__(self, "service_rates", (mus,))
        super().__post_init__()

    def _validate(self):
        mus = self.service_rates
        if self.service is not None:
            if mus is not None:
                raise ParameterError("service", "give either --service LAW (one law for both flows) or "
                                     "--service-rate MU (exponential), not both", str(self.service))
            if not is_concrete(self.service):
                raise ParameterError("service", "must be a concrete law (numbers, not symbols)", str(self.service))
        elif mus is None:
            raise ParameterError("service_rates", "give --service-rate MU[,MU2] (exponential) or --service LAW")
        self._validate_rates()
        _check_thresholds(self.L, self.H, self.R, strict_r=True)
        if self.service is not None:
            _limits.check("threshold", self.R, "the embedded chain at departures has about 3 R^2 / 2 states")
        else:  # every path (engine, response laws, optimize, simulator) at once: the chain has ~2 R^2 states
            _limits.check("threshold", self.R, "the chain on (mode, flow-1 count, flow-2 count, flow in service) "
                          "has about 2 R^2 states")

    def _validate_rates(self):
        for c in (1, 2):
            normal, over, discard = (self.rate(m, c) for m in InputMode)
            if over > normal:
                raise ParameterError(f"lambda{c}_overload", f"must be <= the normal rate {decimal_text(normal)} "
                                     "(discard <= overload <= normal: control only reduces the input)",
                                     decimal_text(over))
            if discard > over:
                raise ParameterError(f"lambda{c}_discard", f"must be <= the overload rate {decimal_text(over)} "
                                     "(discard <= overload <= normal)", decimal_text(discard))
        mus = self.service_rates
        if mus is None:
            return
        if len(mus) not in (1, 2):
            raise ParameterError("service_rates", "give one rate MU (both flows) or two, MU1,MU2",
                                 ",".join(decimal_text(v) for v in mus))
        for v in mus:
            if not v > 0:
                raise ParameterError("service_rates", "must be > 0", decimal_text(v))
        if len(mus) == 1:
            object.__setattr__(self, "service_rates", (mus[0], mus[0]))

    def rate(self, mode: InputMode, flow: int):
        """lambda_flow^(mode)."""
        return getattr(self, f"lambda{flow}_{('normal', 'overload', 'discard')[int(mode)]}")

    @property
    def rates(self) -> tuple:
        """((lambda_1^(0), lambda_2^(0)), (lambda_1^(1), lambda_2^(1)), (lambda_1^(2), lambda_2^(2)))."""
        return tuple((self.rate(m, 1), self.rate(m, 2)) for m in InputMode)

    def state_bound(self) -> int:
        """An upper bound on the number of states (s, i, j, k): mode sets S0 = {n < H}, S1 = {L <= n < R},
        S2 = {H < n <= R}, and 2n states of count n >= 1 (i of the n are flow 1; the flow k in service has a
        customer: i >= 1 for k = 1, j >= 1 for k = 2), one of count 0. Zero overload rates make fewer reachable.
        """
        def block(lo, hi):  # sum over n = lo..hi of (1 if n == 0 else 2 n), in closed form (R may be huge)
            a = max(lo, 1)
            return (1 if lo <= 0 <= hi else 0) + ((a + hi) * (hi - a + 1) if hi >= a else 0)

        return block(0, self.H - 1) + block(self.L, self.R - 1) + block(self.H + 1, self.R)

    @classmethod
    def example(cls):
        """Seed 002 with unequal service rates, L,H,R = 3,6,9."""
        return cls(Fraction(3, 2), 1, Fraction(1, 2), Fraction(1, 2), 3, 6, 9, service_rates=(1, 2),
                   lambda1_discard=Fraction(1, 4))
