"""The multi-service adaptive window of an SCP (seed 003, Wang & Liao; ``docs/theory/other-models.md`` section D).

m services share the SCP: service i has Poisson arrivals of rate lambda_i and mean processing
(response) time h_i = ws_i. The operator fixes the allocation ratios S_1 : ... : S_m of the
admitted rates; a total window R (the resource) is shared so that (5) sum_i S_i ws_i = R, i.e.
service i holds n_i = S_i ws_i windows (integers adding up to R: largest remainders;
``simulation.scp.service_windows`` of the numeric layer), and (6) alpha_ik = ws_i / ws_k
counts a call of service i as alpha_ik reference calls.

* ``qderive eval scp-window`` -- the window model with the allocation at R = ``--windows``: each
  service is an M/M/n_i/n_i loss system ((1)-(4) per service, Erlang B), the fairness
  (Jain's index of the carried rates against the ratios) and the effectiveness (busy windows / R).
* ``qderive simulate scp-window`` -- the simulated SCP (``simulation.scp`` of the numeric layer):
  the multi-service adaptive window (R adapts to the response-time detector, one step per
  interval, starting at ``--windows``) or, for comparison, one shared adaptive window, call
  gapping, percentage throttling or no control; ``adaptive-windows`` also measures the response times
  ws_i per service every ``--update`` seconds (smoothed by ``--smoothing``) and reallocates R from them;
  per-service throughput, goodput, response time
  and blocking, fairness and effectiveness (processor time spent on timely calls / capacity).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction

from ..errors import ParameterError
from ..params import Kind, param
from .base import MeasureKind, Measures, Model, measure

__all__ = ["SCPControl", "SCPWindowMeasures", "SCPWindowModel"]


class SCPControl(enum.Enum):
    """The admission control of ``qderive simulate scp-window``."""

    SERVICE_WINDOWS = "service-windows"  #: seed 003: adaptive total window shared by (5), (6)
    ADAPTIVE_WINDOWS = "adaptive-windows"  #: the same with the ws_i of (5) measured and smoothed
    FIXED_WINDOWS = "fixed-windows"      #: the same allocation at R = --windows, not adapted
    WINDOW = "window"                    #: one adaptive window for all calls (no allocation)
    GAPPING = "gapping"                  #: ITU-T call gapping at the SSPs
    PERCENTAGE = "percentage"            #: ITU-T percentage throttling at the SSPs
    NONE = "none"                        #: no control


@dataclass(frozen=True)
class SCPWindowMeasures(Measures):
    """The window model of the multi-service SCP at R = --windows (seed 003, eqs. (1)-(6) per service)."""

    windows: object = measure("windows n_i of each service, n_i = S_i ws_i with sum_i S_i ws_i = R (5); a list",
                              MeasureKind.INTEGER, source="(5)")
    blocking: object = measure("blocking of each service, Erlang B(n_i, lambda_i h_i); a list",
                               MeasureKind.PROBABILITY, source="(1)")
    carried_rate: object = measure("carried rate of each service lambda_i (1 - B_i); a list", MeasureKind.RATE,
                                   units="calls/s", source="(2)")
    busy_windows: object = measure("mean busy windows of each service lambda_i (1 - B_i) h_i; a list",
                                   MeasureKind.COUNT, units="windows", source="(3)")
    fairness: object = measure("Jain's index of the carried rates normalised by the ratios, (sum y)^2 / (m sum y^2), "
                               "y_i = carried_i / S_i: 1 when the operator's ratios are met", MeasureKind.PROBABILITY)
    effectiveness: object = measure("busy windows / R: the share of the resource R carrying calls",
                                    MeasureKind.PROBABILITY, source="(3), (5)")


def _list(help_text: str, option: str, metavar: str, **kw):
    return param(help_text, kind=Kind.NUMBERS, option=option, metavar=metavar, **kw)


@dataclass(frozen=True)
class SCPWindowModel(Model):
    """``SCPWindowModel(rates, holdings, windows, ratios=None, ...)``: m services of the SCP of seed 003.

    ``rates`` lambda_i (calls/s), ``holdings`` h_i (s), ``ratios`` S_1 : ... : S_m (default all 1),
    ``windows`` the total window R (eval: the allocation of the window model; simulate: the adaptive
    window's start, at most ``w_max``). The other fields configure ``simulate`` (the detector, the
    back end, the control; ``simulation.scp.SCPConfig`` of the numeric layer).
    """

    rates: tuple = _list("arrival rate lambda_i of each service (calls/s)", "--rates", "L1,L2,..")
    holdings: tuple = _list("mean processing time h_i = ws_i of each service (s)", "--holdings", "H1,H2,..")
    windows: int = param("total window R (resource, in windows): eval allocates it, simulate starts there",
                         kind=Kind.INTEGER, metavar="R", check=">= 1")
    ratios: tuple | None = _list("allocation ratios S_1:...:S_m of the admitted rates (default: all 1)",
                                 "--ratios", "S1,S2,..", default=None)
    control: SCPControl = param("simulate: the admission control", kind=Kind.CHOICE, choices=SCPControl,
                                default=SCPControl.SERVICE_WINDOWS)
    servers: int = param("simulate: processors of the back end; 0: infinitely many (the window model)",
                         kind=Kind.INTEGER, check=">= 0", default=4)
    w_max: int = param("simulate: largest total window of the adaptive controls", kind=Kind.INTEGER, check=">= 1",
                       default=100)
    sources: int = param("simulate: SSPs (independent Poisson streams)", kind=Kind.INTEGER, check=">= 1", default=10)
    interval: object = param("simulate: detector interval", units="s", check="> 0", default=Fraction(1, 2))
    threshold: object = param("simulate: mean response time above which an interval counts as overload",
                              units="s", check="> 0", default=Fraction(1, 10))
    timeout: object = param("simulate: SSP timeout (a later response is not goodput)", units="s", check="> 0",
                            default=Fraction(1, 2))
    update: object = param("simulate, adaptive-windows: period of the re-measurement of the response times ws_i",
                           units="s", check="> 0", default=1)
    smoothing: object = param("simulate, adaptive-windows: weight beta of the new measurement, "
                              "ws_i <- (1 - beta) ws_i + beta * measured (in (0, 1])", check="> 0",
                              default=Fraction(1, 2))
    rejection_cost: object = param("simulate: a refusal at the SCP costs this fraction of a call's processing",
                                   check=">= 0", default=0)

    name = "scp-window"
    summary = ("multi-service SCP with the adaptive window of seed 003: per-service Erlang B windows shared by the "
               "ratios S_i (eval), simulation against call gapping and percentage (simulate)")
    measures = SCPWindowMeasures

    def _validate(self):
        m = len(self.rates)
        if m == 0:
            raise ParameterError("rates", "needs at least one service", "")
        if len(self.holdings) != m:
            raise ParameterError("holdings", f"must give one value per service ({m} rates)", len(self.holdings))
        for name, values in (("rates", self.rates), ("holdings", self.holdings)):
            for i, v in enumerate(values):
                if not v > 0:
                    raise ParameterError(f"{name}[{i + 1}]", "must be > 0", str(v))
        if self.ratios is not None:
            if len(self.ratios) != m:
                raise ParameterError("ratios", f"must give one value per service ({m} rates)", len(self.ratios))
            if any(s < 0 for s in self.ratios) or not any(s > 0 for s in self.ratios):
                raise ParameterError("ratios", "must be >= 0 with at least one > 0", ",".join(map(str, self.ratios)))
        if self.smoothing > 1:
            raise ParameterError("smoothing", "must be <= 1", str(self.smoothing))
        if self.windows > self.w_max:
            raise ParameterError("windows", f"must be <= w-max = {self.w_max}", self.windows)
        from .. import limits as _limits

        _limits.check("servers", self.w_max, "the window table has w_max + 1 rows")

    @property
    def allocation(self) -> tuple:
        """The ratios S_1 : ... : S_m (all 1 when not given)."""
        return self.ratios if self.ratios is not None else (1,) * len(self.rates)

    @classmethod
    def example(cls):
        """Two services (100 ms and 300 ms processing), ratios 3 : 1, 20 windows."""
        return cls((60, 30), (Fraction(1, 10), Fraction(3, 10)), 20, ratios=(3, 1))
