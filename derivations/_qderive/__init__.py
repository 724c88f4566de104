"""qderive: derive, verify, export and evaluate closed forms of queueing models of SIP servers.

``import qderive as qd`` gives the public API:

* every time law and batch law (``qd.Erlang``, ``qd.Exponential``, ``qd.Deterministic``, ``qd.Gamma``,
  ``qd.HyperExponential``, ``qd.Uniform``, ``qd.PhaseType``, ``qd.Coxian``, ``qd.Empirical``,
  ``qd.LogNormal``, ``qd.Geometric``, ``qd.Constant``, ``qd.FinitePMF``, ``qd.ShiftedPoisson``, ...);
* every model and its result record (``qd.VacationQueue``, ``qd.FiniteVacationQueue``, ...; the
  enums ``qd.VacationPolicy``, ``qd.Admission``, ...), each with ``.evaluate(digits=None)`` and
  ``.derive()``;
* ``qd.errors`` (``ParameterError``, ``NumericalError``, ``BudgetError``), ``qd.limits(...)``
  (raise a size limit for a ``with`` block), ``qd.models()`` (name -> model class);
* ``qd.sweep(model, **lists)``: a model on a grid of parameters (a pandas DataFrame, or records);
* ``qd.bootstrap(model, B, seed=S, **measures)``: bootstrap intervals over the samples of its empirical laws;
* ``qd.__version__``.

Parameters accept int, float (exactly through its shortest decimal: 0.015 is 3/200),
Fraction, Decimal, numpy scalars and decimal strings ("0.015"; never evaluated).

>>> import qderive as qd
>>> q = qd.VacationQueue.from_load(0.6, qd.Geometric(5), qd.Erlang(4, 0.015), qd.Exponential(0.075))
>>> q.evaluate().mean_wait
0.2390625

This file is installed as ``qderive/__init__.py``; the code lives in the folders
``symbolic/``, ``numeric/`` and ``derivations/`` (``qderive.symbolic``, ...).
"""

from __future__ import annotations

if __name__ != "qderive":  # the folder derivations/_qderive is the installed package qderive, nothing else
    raise ImportError(f"{__name__} is the top-level package qderive: import qderive")

# The public names, one by one (tests/test_facade.py checks them against the registries of laws, batch laws and
# models: a new law or model that is not listed here fails that test, naming the line to add). Every module
# below is a model description or a law (no SymPy, numpy or mpmath at import: ``import qderive`` stays quick).
from qderive.symbolic import errors
from qderive.symbolic.batches.base import BatchLaw
from qderive.symbolic.batches.finite import Constant, FinitePMF
from qderive.symbolic.batches.general import GeneralBatch
from qderive.symbolic.batches.geometric import Geometric
from qderive.symbolic.batches.poisson import ShiftedPoisson
from qderive.symbolic.laws.base import Law, TimeLaw
from qderive.symbolic.laws.deterministic import Deterministic
from qderive.symbolic.laws.empirical import Empirical
from qderive.symbolic.laws.gamma import Erlang, Exponential, Gamma
from qderive.symbolic.laws.general import GeneralTime
from qderive.symbolic.laws.hyperexponential import HyperExponential
from qderive.symbolic.laws.lognormal import LogNormal
from qderive.symbolic.laws.mixture import LawMixture, Mixture
from qderive.symbolic.laws.phase_type import Coxian, PhaseType
from qderive.symbolic.laws.uniform import Uniform
from qderive.symbolic.limits import limits
from qderive.symbolic.models import registered_models as _registered_models
from qderive.symbolic.models.base import LAYER_HOOKS as _HOOKS
from qderive.symbolic.models.erlang_b import (
    ErlangB,
    ErlangBMeasures,
    ErlangBSizeRequest,
    ServiceMix,
)
from qderive.symbolic.models.hysteretic import (
    ControlOptimizeRequest,
    Convention,
    HystereticCodegenFamilies,
    HystereticMeasures,
    HystereticModel,
    HystereticOptimizeRequest,
    MM1HystereticMeasures,
    MM1HystereticModel,
    NormalTimeForm,
    Policy,
    Semantics,
    ThresholdSizeRequest,
)
from qderive.symbolic.models.redundant_cluster import (
    CodegenClusterOptions,
    FailureModel,
    OptimizeCopiesRequest,
    RedundantCluster,
    RedundantClusterMeasures,
)
from qderive.symbolic.models.scp_window import (
    SCPControl,
    SCPWindowMeasures,
    SCPWindowModel,
)
from qderive.symbolic.models.sip_retransmission import (
    Control,
    Discipline,
    Flow,
    Method,
    OnsetRequest,
    OnsetTarget,
    SipRetransmissionMeasures,
    SipRetransmissionModel,
    SipServer,
    SipTransactions,
)
from qderive.symbolic.models.two_flow import (
    Algorithm,
    InputMode,
    Mode,
    Solver,
    TwoFlowHystereticMeasures,
    TwoFlowHystereticModel,
    TwoFlowMeasures,
    TwoFlowModel,
)
from qderive.symbolic.models.vacation import (
    Admission,
    CodegenFamilies,
    CodegenPolicy,
    DelaySizeRequest,
    FiniteVacationMeasures,
    FiniteVacationQueue,
    SizeRequest,
    VacationMeasures,
    VacationPolicy,
    VacationQueue,
)
from qderive.symbolic.models.vacation_closed import (
    ClosedFormCase,
    ClosedFormVacationMeasures,
    ClosedFormVacationQueue,
)


def _evaluate(model, digits=None, **options):
    from qderive.numeric.precision import evaluate

    return evaluate(model, digits, **options)


def _derive(model):
    from qderive.derivations.capabilities import load

    make = load(model, "derivation")
    return None if make is None else make()


def _action(model, name):
    """The function of the model's action ``name`` (``size``, ``optimize``), after its consumers were asked."""
    from qderive.derivations.capabilities import ask, load

    ask(model, name)
    return load(model, name)


# Model.evaluate, Model.derive and the actions: the layers above qderive.symbolic install them (it names none of
# them)
_HOOKS.update(evaluate=_evaluate, derive=_derive, action=_action)

__all__ = [
    "__version__", "bootstrap", "errors", "limits", "models", "sweep",
    # time laws
    "Law", "TimeLaw", "Coxian", "Deterministic", "Empirical", "Erlang", "Exponential", "Gamma", "GeneralTime",
    "HyperExponential", "LawMixture", "LogNormal", "Mixture", "PhaseType", "Uniform",
    # batch laws
    "BatchLaw", "Constant", "FinitePMF", "GeneralBatch", "Geometric", "ShiftedPoisson",
    # models, their result records, requests and enums
    "ErlangB", "ErlangBMeasures", "ErlangBSizeRequest", "ServiceMix",
    "ControlOptimizeRequest", "Convention", "HystereticCodegenFamilies", "HystereticMeasures", "HystereticModel",
    "HystereticOptimizeRequest", "MM1HystereticMeasures", "MM1HystereticModel", "NormalTimeForm", "Policy",
    "Semantics", "ThresholdSizeRequest",
    "CodegenClusterOptions", "FailureModel", "OptimizeCopiesRequest", "RedundantCluster", "RedundantClusterMeasures",
    "SCPControl", "SCPWindowMeasures", "SCPWindowModel",
    "Control", "Discipline", "Flow", "Method", "OnsetRequest", "OnsetTarget", "SipRetransmissionMeasures",
    "SipRetransmissionModel", "SipServer", "SipTransactions",
    "Algorithm", "InputMode", "Mode", "Solver", "TwoFlowHystereticMeasures", "TwoFlowHystereticModel",
    "TwoFlowMeasures", "TwoFlowModel",
    "Admission", "CodegenFamilies", "CodegenPolicy", "DelaySizeRequest", "FiniteVacationMeasures", "FiniteVacationQueue",
    "SizeRequest", "VacationMeasures", "VacationPolicy", "VacationQueue",
    "ClosedFormCase", "ClosedFormVacationMeasures", "ClosedFormVacationQueue",
]

try:
    from importlib.metadata import version as _version

    __version__ = _version("qderive")
except Exception:  # pragma: no cover - running from a checkout without installation
    __version__ = "0+unknown"


def models() -> dict:
    """Command-line name -> model class, for every registered model."""
    return _registered_models()


def sweep(model, **kwargs):
    """The model evaluated on the Cartesian grid of the parameter lists given (``qderive sweep``):
    see :func:`qderive.derivations.sweep.sweep`."""
    from qderive.derivations.sweep import sweep as _sweep

    return _sweep(model, **kwargs)


def bootstrap(model, resamples, **kwargs):
    """Percentile bootstrap intervals of the model's measures over the samples of its empirical laws, as the
    option ``--bootstrap B`` of ``qderive eval`` gives them: see :func:`qderive.numeric.bootstrap.bootstrap`."""
    from qderive.numeric.bootstrap import bootstrap as _bootstrap

    return _bootstrap(model, resamples, **kwargs)
