"""Blocks of the idle period of M[X]/G/1: close-down, start rules (vacations, N-policy), setup.

Every module of this package is imported here: a new block is one class in one new file
(:mod:`qderive.symbolic.blocks.base` explains the primitives it composes and the structure derived once).
"""

from __future__ import annotations

from ..laws.base import import_family
from .base import Block, StartRule, passage, start_rule
from .compose import blocks_of

__all__ = ["Block", "StartRule", "blocks_of", "passage", "start_rule"]
__all__ = sorted(set(__all__ + import_family(__name__, __path__, Block, globals())))
