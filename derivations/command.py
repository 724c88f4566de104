"""How a model plugs into the command line and into ``qderive verify``.

Each model module defines one :class:`ModelCommand` subclass instance named
``COMMAND``. The registry :data:`MODELS` maps the model's command-line name to
its module; modules are imported only when that model is used, so
``qderive eval`` stays quick. Figures are registered the same way in
:data:`FIGURES` (``name -> (module, function)``).

A command implements what it supports; the CLI offers ``size``, ``optimize``,
``simulate`` and ``codegen`` only for commands that override those methods.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field

__all__ = ["ModelCommand", "Evaluation", "MODELS", "FIGURES", "load_command", "load_figure"]

#: command-line model name -> module defining ``COMMAND``
MODELS: dict[str, str] = {
    "vacation-infinite": "qderive.derivations.vacation_infinite",
    "vacation-finite": "qderive.derivations.vacation_finite",
    "vacation-finite-r": "qderive.derivations.vacation_finite_closed",
    "hysteretic": "qderive.derivations.hysteretic",
    "mm1-hysteretic": "qderive.derivations.mm1_hysteretic",
    "two-flow": "qderive.derivations.two_flow",
    "two-flow-hysteretic": "qderive.derivations.two_flow_hysteretic",
    "erlang-b": "qderive.derivations.erlang_b",
    "redundant-cluster": "qderive.derivations.redundant_cluster",
}

#: figure name -> (module, function(out_png: str | None, out_csv: str | None) -> None)
FIGURES: dict[str, tuple[str, str]] = {
    "fig1": ("qderive.derivations.figures_vacation", "figure1"),
    "fig3": ("qderive.derivations.figures_hysteretic", "figure3"),
    "cluster-fig1": ("qderive.derivations.redundant_cluster", "figure_cluster1"),
    "cluster-fig2": ("qderive.derivations.redundant_cluster", "figure_cluster2"),
    "two-flow-comparison": ("qderive.derivations.two_flow", "figure_comparison"),
    "scp-overload": ("qderive.derivations.scp_window", "figure_scp"),
}


def available_models() -> list[str]:
    """Names whose module exists in this installation (a registered-but-absent module is skipped)."""
    names = []
    for name, module in MODELS.items():
        if importlib.util.find_spec(module) is not None:
            names.append(name)
    return names


def load_command(name: str) -> "ModelCommand":
    if name not in MODELS:
        raise KeyError(name)
    return importlib.import_module(MODELS[name]).COMMAND


def load_figure(name: str):
    module, func = FIGURES[name]
    return getattr(importlib.import_module(module), func)


@dataclass
class Evaluation:
    """Measures of one evaluated model.

    ``measures`` maps the JSON measure key to a backend number (float or mpf), a list
    of them, or an int; ``parameters`` echoes the model's parameters (exact, as strings);
    ``notes`` carries messages for the user (e.g. a threshold that does not bind).
    """

    model: str
    parameters: dict
    measures: dict
    notes: list[str] = field(default_factory=list)


class ModelCommand:
    """Base class: a model's command-line face. Override what the model supports."""

    name: str = ""
    summary: str = ""
    #: command-line tokens of a representative case (used by ``qderive verify --simulate``)
    example_args: tuple[str, ...] = ()

    # -- required for eval -------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Model options shared by eval, size, optimize and simulate."""

    def build(self, args: argparse.Namespace):
        """A validated model object from parsed options (raise ParameterError on bad input)."""
        raise NotImplementedError

    def evaluate(self, model, digits: int | None, args: argparse.Namespace) -> Evaluation:
        """All measures in float64 (digits None) or at ``digits`` significant digits."""
        raise NotImplementedError

    # -- optional ----------------------------------------------------------------------
    def derivation(self):
        """The registered :class:`~qderive.derivations.framework.Derivation`, or None."""
        return None

    def add_size_arguments(self, parser) -> None:  # pragma: no cover - optional
        pass

    def size(self, args) -> dict:  # pragma: no cover - optional
        raise NotImplementedError

    def add_optimize_arguments(self, parser) -> None:  # pragma: no cover - optional
        pass

    def optimize(self, args) -> dict:  # pragma: no cover - optional
        raise NotImplementedError

    def add_simulate_arguments(self, parser) -> None:  # pragma: no cover - optional
        pass

    def simulate(self, model, args):  # pragma: no cover - optional
        """``(simulation model, options)`` for :func:`qderive.numeric.simulate.simulate`."""
        raise NotImplementedError

    def closed_forms(self) -> dict:
        """``measure -> ClosedForm`` for ``qderive codegen`` (empty: no closed forms)."""
        return {}

    def add_codegen_arguments(self, parser) -> None:
        """Options of ``qderive codegen NAME`` (e.g. the law families of a recursion-based measure)."""

    def codegen_forms(self, args) -> dict:
        """``measure -> form`` (:mod:`qderive.derivations.codegen`) for ``qderive codegen``.

        Default: the closed forms of :meth:`closed_forms`; models whose measures need a
        recursion override this (and :meth:`add_codegen_arguments`).
        """
        return self.closed_forms()

    def supports(self, action: str) -> bool:
        """True when this command overrides ``action`` (size, optimize, simulate, ...)."""
        return getattr(type(self), action, None) is not getattr(ModelCommand, action, None)
