"""Two-level cluster with k request copies: probability of timely service (Bogatyrev & Bogatyrev, seed 004).

``docs/theory/other-models.md`` section E. A request (rate Lambda) is copied k times; each copy waits
and is served at one of n lower-level nodes, then at one of m upper-level nodes; every node is
an M/M/1 queue with arrival rate lambda_1 = k Lambda / n (lambda_2 = k Lambda / m) and mean
service time v_1 (v_2). The FCFS waiting time at level i is

    W_i = 0 with probability 1 - rho_i,   W_i ~ Exp(theta_i) with probability rho_i,
    rho_i = lambda_i v_i,   theta_i = (1 - rho_i) / v_i,

and a copy is timely when W_1 + W_2 <= t_0 (W_1, W_2 independent, as in the paper). The
measures (:class:`RedundantClusterMeasures`): r = P(W_1 + W_2 <= t_0) for one copy, R(k) =
1 - (1 - r)^k for at least one of the k copies, with faults (:class:`FailureModel`): the
paper's factor at the mean times, e^{-lambda_11 w_1 - lambda_21 w_2 - lambda_10 v_1 - lambda_20 v_2}
(w_i = rho_i v_i / (1 - rho_i); equal rates give e^{-Lambda_1 T_1 - Lambda_2 T_2}, T_i = v_i/(1 - rho_i)),
or the exact pathwise form (Poisson faults during the actual waiting and exponential service times).

The closed forms are written once (:func:`closed_form_expressions`) in the quantities of
:func:`derived_parameters` -- the laws of the waiting times (atoms, weights and rates, tilted
by the faults in the pathwise model) and the fault factor -- which are computed from the
model's parameters by the same functions that define the model: exactly for the engine
(``engines.cluster`` of the numeric layer, which compiles the expressions), symbolically for
``qderive codegen redundant-cluster``. ``optimize`` chooses k (:class:`OptimizeCopiesRequest`).

>>> from fractions import Fraction as F
>>> c = RedundantCluster(rate=3, copies=2, nodes=(10, 10), service_times=(F(3, 10), F(3, 10)), deadline=F(3, 5))
>>> c.loads(), c.max_stable_copies()
((Fraction(9, 50), Fraction(9, 50)), 11)
>>> round(c.evaluate().timely_probability, 12)
0.994545411592
>>> RedundantCluster(rate=3, copies=12, nodes=(10, 10), service_times=(F(3, 10), F(3, 10)), deadline=1)
Traceback (most recent call last):
...
qderive.symbolic.errors.ParameterError: copies = 12: level 1 is unstable: rho_1 = k Lambda v_1 / n_1 = 1.08 >= 1; the largest stable number of copies is 11
"""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass, replace
from fractions import Fraction

from .. import limits as _limits
from ..errors import ParameterError
from ..numbers import decimal_text
from ..params import Kind, param
from .base import Action, MeasureKind, Measures, Model, Request, measure

__all__ = ["FailureModel", "RedundantCluster", "RedundantClusterMeasures", "OptimizeCopiesRequest",
           "CodegenClusterOptions", "cluster_loads", "derived_parameters", "closed_form_expressions",
           "MEASURE_KEYS", "SYMBOL_NAMES"]

_SOURCE = "seed 004; docs/theory/other-models.md section E"


class FailureModel(enum.Enum):
    """How faults during a copy's stay are counted (seed 004 gives the mean-time forms)."""

    #: e^{-lambda_11 w_1 - lambda_21 w_2 - lambda_10 v_1 - lambda_20 v_2} at the MEAN waiting and service times
    #: (the paper; equal waiting and service rates give e^{-Lambda_1 T_1 - Lambda_2 T_2})
    MEAN_TIMES = "mean"
    #: faults as Poisson events during the ACTUAL waiting times and exponential service times (exact)
    PATHWISE = "pathwise"


# --------------------------------------------------------------------------------------
# The model's definitions: exact for numbers, SymPy expressions for symbols
# --------------------------------------------------------------------------------------


def cluster_loads(rate, copies, nodes, service_times) -> tuple:
    """rho_i = k Lambda v_i / n_i (a node of level i receives lambda_i = k Lambda / n_i copies per second)."""
    return tuple(copies * rate * v / nv for nv, v in zip(nodes, service_times))


def derived_parameters(rate, copies, nodes, service_times, deadline, waiting_rates, serving_rates,
                       failure_model: FailureModel) -> dict:
    """The quantities the closed forms are written in (:data:`SYMBOL_NAMES`), from the parameters.

    Untilted laws: A_i = 1 - rho_i (the atom of W_i at 0), rho_i (its exponential weight),
    theta_i = (1 - rho_i)/v_i; mean waits w_i = rho_i v_i/(1 - rho_i) and sojourns
    T_i = v_i/(1 - rho_i). With faults at rate a_i while waiting (the pathwise model) the law
    E[. e^{-a_i W_i}] keeps the atom, has weight omega_i = rho_i theta_i/eta_i and rate
    eta_i = theta_i + a_i, and loses the mass x_i = rho_i a_i/eta_i: D = 1 - (1 - x_1)(1 - x_2)
    = x_1 + x_2 (1 - x_1). The fault factor outside the expectation: mean model e^{-c},
    c = a_1 w_1 + a_2 w_2 + s_1 v_1 + s_2 v_2 (s_i: the rates while served); pathwise
    K = E e^{-s_1 S_1 - s_2 S_2} = 1/((1 + s_1 v_1)(1 + s_2 v_2)) for exponential service and its
    complement K_c = (s_1 v_1 + s_2 v_2 + s_1 v_1 s_2 v_2) K (positive terms). Exact numbers in,
    exact numbers out; SymPy symbols in, SymPy expressions out.
    """
    v1, v2 = service_times
    rho = cluster_loads(rate, copies, nodes, service_times)
    A = tuple(1 - r for r in rho)
    theta = tuple(a / v for a, v in zip(A, service_times))
    wait = tuple(r * v / a for r, v, a in zip(rho, service_times, A))
    sojourn = tuple(v / a for v, a in zip(service_times, A))
    out = {"A1": A[0], "A2": A[1], "rho1": rho[0], "rho2": rho[1], "theta1": theta[0], "theta2": theta[1],
           "t0": deadline, "k": copies, "wait1": wait[0], "wait2": wait[1], "sojourn1": sojourn[0],
           "sojourn2": sojourn[1]}
    if failure_model is FailureModel.MEAN_TIMES:
        out.update({"omega1": rho[0], "omega2": rho[1], "eta1": theta[0], "eta2": theta[1], "D": 0 * rate,
                    "c": waiting_rates[0] * wait[0] + waiting_rates[1] * wait[1]
                    + serving_rates[0] * v1 + serving_rates[1] * v2})
        return out
    eta = tuple(th + a for th, a in zip(theta, waiting_rates))
    omega = tuple(r * th / e for r, th, e in zip(rho, theta, eta))
    x = tuple(r * a / e for r, a, e in zip(rho, waiting_rates, eta))
    sv = (serving_rates[0] * v1, serving_rates[1] * v2)
    K = 1 / ((1 + sv[0]) * (1 + sv[1]))
    out.update({"omega1": omega[0], "omega2": omega[1], "eta1": eta[0], "eta2": eta[1],
                "D": x[0] + x[1] * (1 - x[0]), "K": K, "Kc": (sv[0] + sv[1] + sv[0] * sv[1]) * K})
    return out


#: the measure keys computed by the closed forms (``max_stable_copies`` is an exact integer)
MEASURE_KEYS = ("timely_probability", "copy_timely_probability", "untimely_probability", "copy_late_probability",
                "failure_free_probability", "load_lower", "load_upper", "mean_wait_lower", "mean_wait_upper",
                "mean_sojourn_lower", "mean_sojourn_upper")
#: the arguments of the closed forms (``c`` for the mean-time model, ``K``, ``Kc`` for the pathwise one)
SYMBOL_NAMES = ("A1", "A2", "rho1", "rho2", "theta1", "theta2", "omega1", "omega2", "eta1", "eta2", "D", "t0", "k",
                "wait1", "wait2", "sojourn1", "sojourn2")


def closed_form_expressions(failure_model: FailureModel) -> tuple:
    """(expressions of :data:`MEASURE_KEYS`, their argument symbols): the one statement of the closed forms.

    With a (possibly defective) waiting law at each level -- atom A_i at 0, weight w_i on
    Exp(e_i) -- the late mass is a sum of positive terms,

        L = A_1 w_2 e^{-e_2 t} + w_1 A_2 e^{-e_1 t} + w_1 w_2 S(t),
        S(t) = e^{-e_a t} (1 + e_a t phi((e_b - e_a) t)),   e_a = min, e_b = max,
        phi(x) = -expm1(-x)/x, phi(0) = 1,

    the hypoexponential survival without the removable singularity at e_1 = e_2 (the paper's
    example n = m, v_1 = v_2 is exactly that case, Erlang-2). Then, with the fault factor K
    (and K_c = 1 - K, D the mass the faults remove while waiting):

        copy_late = L(A, rho, theta)  (no faults),     L_f = L(A, omega, eta),
        r_f = K (1 - D - L_f),   1 - r_f = K_c + K (D + L_f)   (both without cancelling 1 - ...),
        (1 - r_f)^k,   R = 1 - (1 - r_f)^k = -expm1(k log(1 - r_f)) (log1p(-r_f) when r_f < 1/2).

    1 - D - L_f is at least A_1 A_2 (both copies' waits 0), so it loses at most
    log10(1/(A_1 A_2)) digits; everything else is a sum or product of positive terms.
    """
    import sympy as sp
    from sympy.codegen.cfunctions import expm1, log1p

    sym = {name: sp.Symbol(name, real=True) for name in SYMBOL_NAMES + ("c", "K", "Kc")}
    g = sym.__getitem__
    t = g("t0")

    def survival(e1, e2):
        ea, eb = sp.Min(e1, e2), sp.Max(e1, e2)
        x = (eb - ea) * t
        phi = sp.Piecewise((sp.Integer(1), sp.Eq(x, 0)), (-expm1(-x) / x, True))
        return sp.exp(-ea * t) * (1 + ea * t * phi)

    def late(w1, w2, e1, e2):
        return (g("A1") * w2 * sp.exp(-e2 * t) + w1 * g("A2") * sp.exp(-e1 * t)
                + w1 * w2 * survival(e1, e2))

    if failure_model is FailureModel.MEAN_TIMES:
        K, Kc = sp.exp(-g("c")), -expm1(-g("c"))
        args = tuple(sym[s] for s in SYMBOL_NAMES) + (sym["c"],)
    else:
        K, Kc = g("K"), g("Kc")
        args = tuple(sym[s] for s in SYMBOL_NAMES) + (sym["K"], sym["Kc"])
    lf = late(g("omega1"), g("omega2"), g("eta1"), g("eta2"))
    r = K * (1 - g("D") - lf)
    u = Kc + K * (g("D") + lf)
    k = g("k")
    timely = sp.Piecewise((-expm1(k * sp.log(u)), u < sp.Rational(1, 2)), (-expm1(k * log1p(-r)), True))
    exprs = (timely, r, u**k, late(g("rho1"), g("rho2"), g("theta1"), g("theta2")), K, g("rho1"), g("rho2"),
             g("wait1"), g("wait2"), g("sojourn1"), g("sojourn2"))
    return exprs, args


# --------------------------------------------------------------------------------------
# Model, result record, requests
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RedundantClusterMeasures(Measures):
    """Measures of the two-level cluster with k copies (seed 004)."""

    timely_probability: object = measure("probability R(k) = 1 - (1 - r_f)^k that at least one copy is timely "
                                         "(W_1 + W_2 <= t_0) and fault-free", MeasureKind.PROBABILITY, source=_SOURCE)
    copy_timely_probability: object = measure("probability r_f that one copy is timely and fault-free",
                                              MeasureKind.PROBABILITY, source=_SOURCE)
    untimely_probability: object = measure("probability (1 - r_f)^k that no copy is timely and fault-free",
                                           MeasureKind.PROBABILITY, source=_SOURCE)
    copy_late_probability: object = measure("probability 1 - r = P(W_1 + W_2 > t_0) that one copy is late (no "
                                            "faults)", MeasureKind.PROBABILITY, source=_SOURCE)
    failure_free_probability: object = measure("fault factor outside the waiting-time expectation (mean model: "
                                               "e^{-Lambda_1 T_1 - Lambda_2 T_2} with equal rates)",
                                               MeasureKind.PROBABILITY, source=_SOURCE)
    load_lower: object = measure("load rho_1 = k Lambda v_1 / n of a lower node", MeasureKind.VALUE, source=_SOURCE)
    load_upper: object = measure("load rho_2 = k Lambda v_2 / m of an upper node", MeasureKind.VALUE, source=_SOURCE)
    mean_wait_lower: object = measure("mean wait w_1 = rho_1 v_1 / (1 - rho_1) at a lower node", MeasureKind.TIME,
                                      units="s", source="M/M/1")
    mean_wait_upper: object = measure("mean wait w_2 = rho_2 v_2 / (1 - rho_2) at an upper node", MeasureKind.TIME,
                                      units="s", source="M/M/1")
    mean_sojourn_lower: object = measure("mean sojourn T_1 = v_1 / (1 - rho_1) at a lower node", MeasureKind.TIME,
                                         units="s", source="M/M/1")
    mean_sojourn_upper: object = measure("mean sojourn T_2 = v_2 / (1 - rho_2) at an upper node", MeasureKind.TIME,
                                         units="s", source="M/M/1")
    max_stable_copies: object = measure("largest k with k Lambda v_i / n_i < 1 at both levels", MeasureKind.INTEGER,
                                        source=_SOURCE)


@dataclass(frozen=True)
class OptimizeCopiesRequest(Request):
    """``qderive optimize redundant-cluster``: the k in 1..min(max_copies, largest stable k) maximising R(k)."""

    max_copies: int = param("largest number of copies to consider", kind=Kind.INTEGER, check=">= 1", metavar="K")

    def _validate(self):
        _limits.check("copies", self.max_copies, "optimize evaluates R(k) for every k up to it")


@dataclass(frozen=True)
class CodegenClusterOptions(Request):
    """``qderive codegen redundant-cluster``: the fault model fixed in the generated code."""

    failure_model: FailureModel = param("mean: faults at the mean times (seed 004); pathwise: during the actual "
                                        "times", kind=Kind.CHOICE, choices=FailureModel,
                                        default=FailureModel.MEAN_TIMES)
    split_failure_rates: bool = param("separate fault rates while served (arguments service_failure_rate_lower, "
                                      "_upper); default: the same rates while waiting and served",
                                      kind=Kind.FLAG, default=False)


@dataclass(frozen=True)
class RedundantCluster(Model):
    """The two-level cluster: ``rate`` Lambda, ``nodes`` (n, m), ``service_times`` (v_1, v_2), ``deadline``
    t_0, ``copies`` k; faults: ``failure_rates`` (Lambda_1, Lambda_2) of a lower / upper node while a copy
    waits there and, unless ``service_failure_rates`` (lambda_10, lambda_20) are given, while it is served.
    Refused when a level is unstable (rho_i = k Lambda v_i / n_i >= 1)."""

    rate: object = param("request rate Lambda", units="1/s", check="> 0", metavar="LAMBDA")
    nodes: tuple = param("nodes n, m of the lower and upper level", kind=Kind.INTEGERS, count=2, check=">= 1",
                         metavar="N,M")
    service_times: tuple = param("mean service times v_1, v_2 at a lower / upper node", kind=Kind.NUMBERS, count=2,
                                 units="s", check="> 0", metavar="V1,V2")
    deadline: object = param("bound t_0 on the total waiting time W_1 + W_2", units="s", check="> 0", metavar="T0")
    copies: int = param("copies k of each request", kind=Kind.INTEGER, check=">= 1", default=1, metavar="K")
    failure_rates: tuple | None = param("fault rates of a lower / upper node while a copy waits there and, without "
                                        "--service-failure-rates, while it is served (seed 004: exp(-L1 T1 - L2 T2)); "
                                        "default: no faults", kind=Kind.NUMBERS, count=2, units="1/s", check=">= 0",
                                        default=None, metavar="L1,L2")
    service_failure_rates: tuple | None = param("separate fault rates while a copy is served; --failure-rates then "
                                                "apply to waiting only", kind=Kind.NUMBERS, count=2, units="1/s",
                                                check=">= 0", default=None, metavar="L10,L20")
    failure_model: FailureModel = param("mean: faults at the mean times (seed 004); pathwise: during the actual "
                                        "times", kind=Kind.CHOICE, choices=FailureModel,
                                        default=FailureModel.MEAN_TIMES)

    name = "redundant-cluster"
    summary = "two-level cluster, k request copies: probability that a copy's total wait <= deadline"
    measures = RedundantClusterMeasures
    codegen_options = CodegenClusterOptions
    actions = (Action("optimize", "the number of copies k <= --max-copies that maximises R(k)", OptimizeCopiesRequest, omit=("copies",)),)

    def _validate(self):
        _limits.check("copies", self.copies, "R(k) is evaluated for k copies")
        for level, rho in enumerate(self.loads(), start=1):
            if not rho < 1:
                kmax = self.max_stable_copies()
                if kmax < 1:
                    raise ParameterError("rate", f"makes level {level} unstable with even one copy: rho_{level} = "
                                         f"Lambda v_{level} / n_{level} = {decimal_text(rho / self.copies)} >= 1",
                                         decimal_text(self.rate))
                raise ParameterError("copies", f"level {level} is unstable: rho_{level} = k Lambda v_{level} / "
                                     f"n_{level} = {decimal_text(rho)} >= 1; the largest stable number of copies is "
                                     f"{kmax}", self.copies)

    # -- exact parameters ------------------------------------------------------------------
    def loads(self) -> tuple:
        """(rho_1, rho_2), rho_i = k Lambda v_i / n_i."""
        return cluster_loads(self.rate, self.copies, self.nodes, self.service_times)

    def waiting_failure_rates(self) -> tuple:
        """(lambda_11, lambda_21): fault rates while a copy waits (0 without faults)."""
        return self.failure_rates if self.failure_rates is not None else (Fraction(0), Fraction(0))

    def serving_failure_rates(self) -> tuple:
        """(lambda_10, lambda_20): fault rates while a copy is served."""
        return self.waiting_failure_rates() if self.service_failure_rates is None else self.service_failure_rates

    @functools.cached_property
    def closed_form_parameters(self) -> dict:
        """:func:`derived_parameters` of this model (exact; computed once per model object)."""
        return derived_parameters(self.rate, self.copies, self.nodes, self.service_times, self.deadline,
                                  self.waiting_failure_rates(), self.serving_failure_rates(), self.failure_model)

    def max_stable_copies(self) -> int:
        """The largest k with k Lambda v_i / n_i < 1 at both levels (0 if none)."""
        bound = min(Fraction(nv) / (self.rate * v) for nv, v in zip(self.nodes, self.service_times))
        return math.ceil(bound) - 1

    def with_copies(self, k: int) -> "RedundantCluster":
        """The same cluster with k copies."""
        return replace(self, copies=k)

    @classmethod
    def example(cls):
        return cls(rate=3, nodes=(10, 10), service_times=(Fraction(3, 10), Fraction(3, 10)), deadline=Fraction(3, 5),
                   copies=2)
