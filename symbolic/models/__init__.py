"""Model descriptions: one module per model, each registering its frozen dataclass by name.

:func:`registered_models` imports every module of this package (so a new model is one
new module here plus its engine and derivation) and returns ``name -> class``.
"""

from __future__ import annotations

from .base import (
    Action,
    Alternative,
    Measure,
    MeasureKind,
    Measures,
    Model,
    Request,
    measure,
    registered_models,
)

__all__ = ["Action", "Alternative", "Measure", "MeasureKind", "Measures", "Model", "Request", "measure",
           "registered_models", "model_class"]


def model_class(name: str):
    """The model class registered as ``name`` (a ParameterError listing the names otherwise)."""
    from ..errors import ParameterError

    models = registered_models()
    if name not in models:
        raise ParameterError(f"model {name!r} is unknown; choose one of: {', '.join(sorted(models))}")
    return models[name]
