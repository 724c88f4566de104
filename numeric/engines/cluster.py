"""Engine of the redundant cluster: the closed forms of seed 004, compiled once, under the precision policy.

The expressions are those of :func:`qderive.symbolic.models.redundant_cluster.closed_form_expressions`
(the same ones ``qderive codegen redundant-cluster`` prints), compiled by
:func:`qderive.numeric.compile.cached_evaluator` (a numpy module in the private cache: a warm
``qderive eval`` imports no SymPy). Their arguments are the model's derived parameters
(:func:`~qderive.symbolic.models.redundant_cluster.derived_parameters`: atoms, weights and rates
of the waiting-time laws, the fault factor), computed exactly from the model and rounded
once into the context.

Precision (a-priori, :meth:`ClusterEngine.guard_digits`): ``exp(-z)`` inherits the relative
error |z| eps of its rounded argument (z = eta_i t_0, theta_i t_0, c), so log10 of the largest
such |z| digits; the timely mass 1 - D - L_f >= A_1 A_2 loses at most log10(1/(A_1 A_2)) digits
to cancellation (heavy load); (1 - r_f)^k loses log10(k). Every other operation adds or
multiplies positive numbers. In float64 (:meth:`ClusterEngine.float64_trouble`) a loss of more
than 5 digits, or an argument outside the double range, is trouble: the policy recomputes with
mpmath.

:func:`optimize` -- ``qderive optimize redundant-cluster``: R(k) for every stable k <= --max-copies,
one table through the policy; :func:`paper_discretised` -- the paper's N-interval sum (figures, checks).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.capabilities import declare
from ...symbolic.errors import ParameterError
from ...symbolic.models.redundant_cluster import (
    MEASURE_KEYS,
    FailureModel,
    RedundantCluster,
    closed_form_expressions,
    derived_parameters,
)
from ..sequences import digits_for
from .base import Engine, Trouble

__all__ = ["ClusterEngine", "optimize", "paper_discretised", "evaluator", "a_priori_loss"]

_EVALUATORS: dict = {}
_MPMATH: dict = {}


def evaluator(failure_model: FailureModel):
    """The compiled closed forms of ``failure_model`` (cached on disk and in the process)."""
    if failure_model not in _EVALUATORS:
        from ..compile import cached_evaluator

        _EVALUATORS[failure_model] = cached_evaluator(f"redundant_cluster::{failure_model.value}",
                                                      lambda: closed_form_expressions(failure_model))
    return _EVALUATORS[failure_model]


def _mpmath_function(failure_model: FailureModel):
    """The mpmath path of the evaluator, lambdified once per process (Evaluator.mpmath lambdifies per call)."""
    if failure_model not in _MPMATH:
        import sympy as sp

        ev = evaluator(failure_model)
        _MPMATH[failure_model] = sp.lambdify([sp.Symbol(a) for a in ev.args], list(ev.exprs), modules="mpmath")
    return _MPMATH[failure_model]


def _shown(x: Fraction) -> str:
    """A short decimal of an exact number of any size (never through float)."""
    import mpmath

    with mpmath.workdps(20):
        return mpmath.nstr(mpmath.mpf(x.numerator) / x.denominator, 6)


@functools.lru_cache(maxsize=1024)
def _arguments(model: RedundantCluster, k=None) -> tuple:
    """The exact argument values of the compiled closed forms, in their order (with k copies if given).

    Computed once per (frozen) model and k: the exact parameters cost more than the closed forms.
    """
    if k is None or k == model.copies:
        values = model.closed_form_parameters
    else:
        values = derived_parameters(model.rate, k, model.nodes, model.service_times, model.deadline,
                                    model.waiting_failure_rates(), model.serving_failure_rates(), model.failure_model)
    return tuple(values[a] for a in evaluator(model.failure_model).args)


@functools.lru_cache(maxsize=256)
def a_priori_loss(model: RedundantCluster) -> tuple[int, int]:
    """(digits lost to exp arguments and cancellation, digits lost to the k-th power) -- module docstring.

    Bounds that hold for every k <= model.copies as well (theta_i <= 1/v_i; the cancellation and
    the fault exponent c grow with k), so a table over k <= copies is guarded by its largest k.
    """
    v = model.closed_form_parameters
    t0 = v["t0"]
    a = model.waiting_failure_rates()
    z = max([t0 / model.service_times[0] + a[0] * t0, t0 / model.service_times[1] + a[1] * t0,
             v.get("c", Fraction(0)), Fraction(1)])
    atoms = v["A1"] * v["A2"]
    cancel = math.ceil(math.log10(atoms.denominator) - math.log10(atoms.numerator)) if atoms < 1 else 0
    return digits_for(math.ceil(z)) + cancel, digits_for(model.copies)


@functools.lru_cache(maxsize=256)
def _max_stable_copies(model: RedundantCluster) -> int:
    return model.max_stable_copies()


class ClusterEngine(Engine):
    """The seed-004 closed forms (see the module docstring).

    ``compute(model, ctx, copies=(k1, k2, ...))`` evaluates every measure for several numbers of
    copies k <= model.copies at once (lists over the k; one vectorised call in float64): the table
    of :func:`optimize`, under the same policy (and the guard of the largest k) as one evaluation.
    """

    def compute(self, model, ctx, copies=None, **options):
        ev = evaluator(model.failure_model)
        ks = (model.copies,) if copies is None else tuple(copies)
        if any(k > model.copies for k in ks):
            raise ValueError("a table over k needs the model with its largest k (the guard digits hold for k <= copies)")
        exact = [_arguments(model, k) for k in ks]
        try:
            values = [[ctx.num(x) for x in row] for row in exact]
        except OverflowError:  # float(Fraction) beyond the double range
            raise Trouble("a parameter of the closed forms lies beyond the float64 range") from None
        if ctx.is_float64:
            for x, f in zip(exact[-1] + exact[0], values[-1] + values[0]):  # the extreme k
                if x != 0 and not ctx.tiny <= abs(f) <= ctx.huge:
                    raise Trouble(f"a parameter of the closed forms ({_shown(x)}) lies outside the float64 range")
            columns = [np.asarray(col, dtype=float) for col in zip(*values)]
            rows = [np.broadcast_to(np.asarray(x, dtype=float), (len(ks),)) for x in ev.numpy(*columns)]
            rows = [[float(x) for x in row] for row in rows]
        else:
            fn = _mpmath_function(model.failure_model)
            rows = [list(col) for col in zip(*[fn(*row) for row in values])]
        result = {key: row[0] if copies is None else row for key, row in zip(MEASURE_KEYS, rows)}
        result["max_stable_copies"] = _max_stable_copies(model)
        return result

    def guard_digits(self, model) -> int:
        loss, power = a_priori_loss(model)
        return loss + power + 2

    def float64_trouble(self, model, values):
        loss, _ = a_priori_loss(model)
        if loss > 5:
            return f"the closed forms lose about {loss} digits in float64 (large exp arguments or a heavy load)"
        return None


# --------------------------------------------------------------------------------------
# The optimal number of copies
# --------------------------------------------------------------------------------------


@declare(via_engine=True)
def optimize(values: dict, request, digits=None, progress: bool = False, executor=None) -> dict:
    """The k in 1..min(max_copies, largest stable k) that maximises R(k) (ties: the smallest k).

    ``executor`` (``--executor/--workers/--scheduler``, as every ``optimize``): the table over k is
    one vectorised evaluation (milliseconds even at the copies limit), so it runs as a single task
    on it; the answer is the same with or without one.

    R(k) for every stable k <= max_copies is one evaluation under the precision policy
    (``RedundantCluster.evaluate(digits, copies=...)``: a table over k). The comparison is made
    on (1 - r_k)^k, a product of positive terms, so it stays exact where R(k) rounds to 1.
    Returns copies, timely_probability, untimely_probability, max_stable_copies,
    timely_probability_by_copies and untimely_probability_by_copies (k = 1, 2, ...).
    """
    base = RedundantCluster.from_values({**values, "copies": 1})  # refused when even one copy is unstable
    kmax = base.max_stable_copies()
    ks = tuple(range(1, min(request.max_copies, kmax) + 1))
    model = base.with_copies(ks[-1])
    if executor is None:
        table = model.evaluate(digits, copies=ks)
    else:
        from ..parallel import with_limits

        table = executor.submit(with_limits, _limits.current(), _table, model, digits, ks).result()
    timely, untimely = table.timely_probability, table.untimely_probability
    best = min(range(len(ks)), key=lambda i: untimely[i])
    return {"copies": ks[best], "timely_probability": timely[best], "untimely_probability": untimely[best],
            "max_stable_copies": kmax, "timely_probability_by_copies": list(timely),
            "untimely_probability_by_copies": list(untimely)}


def _table(model, digits, ks):
    """R(k) for k in ``ks``: one evaluation under the precision policy (a task of :func:`optimize`)."""
    return model.evaluate(digits, copies=ks)


# --------------------------------------------------------------------------------------
# The paper's discretisation
# --------------------------------------------------------------------------------------


def paper_discretised(model: RedundantCluster, N: int, ctx):
    """The paper's r_N: t_0 split into N intervals of length d = t_0/N (seed 004, the sum over B_i).

    r_N = sum_{i=0}^{N} B_i P(W_2 <= t_0 - i d), B_0 = 1 - rho_1, B_i = F_1(i d) - F_1((i-1) d)
    = rho_1 e^{-theta_1 (i-1) d} (1 - e^{-theta_1 d}), times the mean-time fault factor e^{-c}.
    It under-estimates r by O(1/N). Vectorised in the context (call inside ``with ctx:``).
    """
    if isinstance(N, bool) or not isinstance(N, int) or N < 1:
        raise ParameterError("N", "must be an integer >= 1", N)
    v = derived = model.closed_form_parameters
    r1, r2, t1, t2, t0 = (ctx.num(derived[s]) for s in ("rho1", "rho2", "theta1", "theta2", "t0"))
    d = t0 / N
    i = ctx.arange(N + 1)[1:]
    step = -ctx.expm1(-t1 * d)
    B = r1 * ctx.exp(-t1 * (i - 1) * d) * step
    F2 = 1 - r2 * ctx.exp(-t2 * (t0 - i * d))
    total = (1 - r1) * (1 - r2 * ctx.exp(-t2 * t0)) + ctx.dot(B, F2)  # positive terms
    if model.failure_model is FailureModel.MEAN_TIMES:
        total = total * ctx.exp(-ctx.num(v["c"]))
    return total
