"""A vacation model's idle passage: [close-down] + its start rule + [setup] (:mod:`qderive.symbolic.blocks.base`)."""

from __future__ import annotations

from .base import Block, StartRule, start_rule
from .close_down import CloseDown
from .setup import Setup

__all__ = ["blocks_of"]


def blocks_of(model, rule: StartRule | None = None) -> tuple[Block, ...]:
    """The idle passage of ``model``: [CloseDown(C)] + the start rule (``rule`` or the model's) + [Setup(S)]."""
    out: list[Block] = []
    if model.close_down is not None:
        out.append(CloseDown(model.close_down))
    out.append(rule if rule is not None else start_rule(model))
    if model.setup is not None:
        out.append(Setup(model.setup))
    return tuple(out)
