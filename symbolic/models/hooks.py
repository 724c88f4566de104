"""The functions the layers above :mod:`qderive.symbolic` install for :class:`~.base.Model` (its ``evaluate``,
``derive`` and actions), so that this layer names none of them: ``"evaluate"`` -> ``evaluate(model, digits,
**options)``, ``"derive"`` -> ``derive(model)``, ``"action"`` -> ``action(model, name)`` (the package
``qderive`` installs them at import)."""

from __future__ import annotations

from typing import Callable

__all__ = ["LAYER_HOOKS"]

LAYER_HOOKS: dict[str, Callable] = {}
