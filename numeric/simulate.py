"""Seeded discrete-event simulation of the single-server models, with confidence intervals.

The simulator is the independent empirical check of the analytic engines and the tool
for variants no closed form covers. It shares nothing with the formulas but the law
objects it samples from (:mod:`qderive.numeric.sim_sampling`).

=========================  =================================  ==============================
model object               what                               function
=========================  =================================  ==============================
:class:`SimVacationModel`  M[X]/G/1/r, multiple vacations or  :func:`simulate_vacation`
                           none, partial / whole admission
:class:`SimHysteresisModel` M[X]|G|1|(L,H)|(H,R), conventions :func:`simulate_hysteretic`
                           event / left / instant
:class:`SimTwoFlowModel`   INVITE / non-INVITE, FIFO or       :func:`simulate_two_flow`
                           priority
=========================  =================================  ==============================

:func:`simulate` dispatches on the model's class. Every function returns a
:class:`SimulationResult`; ``result.as_dict()`` is
``{measure: {"estimate": x, "ci95": [lo, hi]}}`` with the measure keys of
``qderive eval``. Method: independent replications from an empty system, warm-up by
discarding an initial fraction of the served customers, jackknife standard errors and
Student-t intervals (:mod:`qderive.numeric.sim_stats`). A progress bar (tqdm, if
installed) appears on runs of at least 200 000 customers unless ``quiet=True``.

>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Exponential
>>> from qderive.symbolic.batches import Constant
>>> m = SimVacationModel(rate=Fraction(1, 2), batch=Constant(1), service=Exponential(1))
>>> r = simulate(m, customers=20_000, replications=5, seed=3, quiet=True)
>>> lo, hi = r["mean_wait"].interval(0.99)
>>> lo < 1 < hi          # M/M/1, rho = 1/2: W = rho / (mu - lambda) = 1
True
"""

from __future__ import annotations

from collections.abc import Callable

from qderive.symbolic._exact import ParameterError

from .sim_hysteretic import ModeSemantics, SimHysteresisModel, SwitchingConvention, simulate_hysteretic
from .sim_stats import Estimate, SimulationResult, student_t_quantile
from .sim_two_flow import Algorithm, SimTwoFlowModel, simulate_two_flow
from .sim_vacation import Admission, SimVacationModel, simulate_vacation

__all__ = [
    "simulate",
    "simulate_vacation",
    "simulate_hysteretic",
    "simulate_two_flow",
    "SimVacationModel",
    "SimHysteresisModel",
    "SimTwoFlowModel",
    "Admission",
    "SwitchingConvention",
    "ModeSemantics",
    "Algorithm",
    "Estimate",
    "SimulationResult",
    "student_t_quantile",
]

#: model class -> its simulation function
_SIMULATORS: dict[type, Callable[..., SimulationResult]] = {
    SimVacationModel: simulate_vacation,
    SimHysteresisModel: simulate_hysteretic,
    SimTwoFlowModel: simulate_two_flow,
}


def simulate(
    model,
    customers: int,
    replications: int = 10,
    seed: int | None = None,
    *,
    warmup: float = 0.1,
    quiet: bool = False,
    **options,
) -> SimulationResult:
    """Simulate ``model`` (a ``Sim*Model``): ``customers`` served per replication, 95 % intervals.

    ``options`` go to the model's function (``semantics=`` for the hysteretic model).
    """
    fn = _SIMULATORS.get(type(model))
    if fn is None:
        known = ", ".join(c.__name__ for c in _SIMULATORS)
        raise ParameterError(f"cannot simulate {type(model).__name__}: give one of {known}")
    return fn(model, customers, replications, seed, warmup=warmup, quiet=quiet, **options)
