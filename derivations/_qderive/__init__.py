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

import inspect as _inspect

if __name__ != "qderive":  # the folder derivations/_qderive is the installed package qderive, nothing else
    raise ImportError(f"{__name__} is the top-level package qderive: import qderive")

from qderive.symbolic import batches as _batches
from qderive.symbolic import errors
from qderive.symbolic import laws as _laws
from qderive.symbolic.limits import limits
from qderive.symbolic.models import registered_models as _registered_models
from qderive.symbolic.models.base import LAYER_HOOKS as _HOOKS


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

__all__ = ["__version__", "errors", "limits", "models", "sweep"]

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


def _export(module, base):
    for name in module.__all__:
        obj = getattr(module, name)
        if _inspect.isclass(obj) and issubclass(obj, base):
            globals()[name] = obj
            __all__.append(name)


_export(_laws, _laws.Law)
_export(_batches, _batches.BatchLaw)

for _cls in _registered_models().values():
    _module = _inspect.getmodule(_cls)
    for _name in getattr(_module, "__all__", ()):
        _obj = getattr(_module, _name)
        if _inspect.isclass(_obj) and _name not in globals():
            globals()[_name] = _obj
            __all__.append(_name)
__all__ = sorted(set(__all__))
del _cls, _module, _name, _obj
