"""The numeric layer's consumers of each model: a lazy table, keyed by the model's name.

A model (:mod:`qderive.symbolic.models`) is data and names none of the code that computes it. The numeric
code that does registers here, in its own layer, as ``"module:attribute"`` paths relative to
:mod:`qderive.numeric`, imported only when used (so ``qderive eval`` imports one engine):

* ``engine`` -- the :class:`~qderive.numeric.engines.base.Engine` class of the precision policy;
* ``response`` -- ``response_laws(model) -> {"wait": ResponseLaw, "sojourn": ResponseLaw, ...}``
  (:mod:`qderive.numeric.response`);
* ``simulator`` -- ``simulate(model, customers=..., replications=..., seed=..., warmup=..., quiet=...)``;
* ``size``, ``optimize`` -- the action functions ``run(values, request, digits, ...)`` of the model's
  :class:`~qderive.symbolic.models.base.Action` of that name.

Each of them declares what it computes with a ``supports(model, asked)`` hook
(:mod:`qderive.symbolic.capabilities`); :func:`refusal` asks it. The derivation layer keeps the same kind of
table for derivations and codegen (:mod:`qderive.derivations.capabilities`), which also asks everything a verb
needs. Adding a model: one line here per consumer it has.
"""

from __future__ import annotations

import importlib

from ..symbolic.capabilities import ask_consumer

__all__ = ["ROLES", "has", "load", "refusal"]

#: the roles of numeric consumers
ROLES = ("engine", "response", "simulator", "size", "optimize")

_TABLE: dict[str, dict[str, str]] = {
    "vacation-infinite": {
        "engine": "engines.vacation:InfiniteEngine",
        "response": "engines.blocks:infinite_response_laws",
        "simulator": "simulation.vacation:simulate",
        "size": "engines.vacation_wait:size_for_delay",
    },
    "vacation-finite": {
        "engine": "engines.vacation:FiniteEngine",
        "response": "engines.vacation_finite_wait:response_laws",
        "simulator": "simulation.vacation:simulate",
        "size": "engines.vacation:size",
    },
    "vacation-finite-r": {
        "engine": "engines.vacation_closed:ClosedFormEngine",
        "simulator": "simulation.vacation:simulate",
    },
    "erlang-b": {
        "engine": "engines.erlang_b:ErlangBEngine",
        "size": "engines.erlang_b:size",
    },
    "scp-window": {
        "engine": "engines.erlang_b:ServiceWindowEngine",
        "simulator": "simulation.scp:simulate_model",
    },
    "sip-retransmission": {
        "engine": "engines.sip:SipEngine",
        "simulator": "simulation.sip:simulate",
        "size": "engines.sip.onset:size",
    },
    "hysteretic": {
        "engine": "engines.hysteretic:HystereticEngine",
        "response": "engines.hysteretic_wait:hysteretic_laws",
        "simulator": "simulation.hysteretic:simulate",
        "optimize": "engines.hysteretic:optimize",
        "size": "engines.hysteretic:size_threshold",
    },
    "mm1-hysteretic": {
        "engine": "engines.hysteretic:MM1HystereticEngine",
        "response": "engines.ctmc_wait:mm1_hysteretic_laws",
        "simulator": "simulation.hysteretic:simulate",
        "optimize": "engines.threshold_search:mm1_optimize",
    },
    "redundant-cluster": {
        "engine": "engines.cluster:ClusterEngine",
        "optimize": "engines.cluster:optimize",
    },
    "two-flow": {
        "engine": "engines.two_flow:TwoFlowEngine",
        "response": "engines.ctmc_wait:two_flow_laws",
        "simulator": "simulation.two_flow:simulate",
    },
    "two-flow-hysteretic": {
        "engine": "engines.two_flow_hysteretic:TwoFlowHystereticEngine",
        "response": "engines.ctmc_wait:two_flow_hysteretic_laws",
        "simulator": "simulation.two_flow:simulate_hysteretic",
        "optimize": "engines.threshold_search:two_flow_optimize",
    },
}


def _name(model) -> str:
    return model if isinstance(model, str) else model.name


def has(model, role: str) -> bool:
    """True when ``model`` (an instance, a class or a name) has a numeric consumer in ``role`` (nothing imported)."""
    return role in _TABLE.get(_name(model), {})


def load(model, role: str):
    """The consumer of ``model`` in ``role`` (imported now), or None."""
    path = _TABLE.get(_name(model), {}).get(role)
    if path is None:
        return None
    module, _, attr = path.partition(":")
    obj = importlib.import_module(f"{__package__}.{module}")
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def refusal(model, role: str, asked=frozenset()):
    """The :class:`~qderive.symbolic.capabilities.Refusal` of ``model`` by its ``role`` consumer (None: computed
    or no such consumer)."""
    consumer = load(model, role)
    return None if consumer is None else ask_consumer(consumer, model, asked)
