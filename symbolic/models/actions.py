"""A model's extra subcommands as Python methods: ``model.size(...)``, ``model.largest_load(...)``,
``model.optimize(...)``, each returning an :class:`ActionResult` record.

They run the same :class:`~qderive.symbolic.models.base.Action` functions as ``qderive size`` / ``qderive
optimize`` (one implementation), with the model's own field values as the command line's options and the
action's options as keyword arguments (``target_loss=1e-4``: the request dataclass's field names, which the
command line spells ``--target-loss``). The fields the action chooses (``vary``) are taken out of the model's
values: the model's own value of such a field is only a placeholder, and the result says what was chosen.
A request field named like a model field the action does not choose is filled from the model
(``ErlangB(servers=10, load=5).largest_load(target_blocking=0.01)`` asks for the load 10 servers carry).

    >>> from qderive.symbolic.models.erlang_b import ErlangB
    >>> res = ErlangB(servers=10, load=5).size(target_blocking=0.01)
    >>> res.servers, res["servers"] == res.as_dict()["servers"]
    (11, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ParameterError
from ..params import params_of

__all__ = ["ActionResult", "run_action", "load_field"]


@dataclass(frozen=True)
class ActionResult(Mapping):
    """The result of ``size``, ``largest_load`` or ``optimize``: its keys are the JSON keys of ``qderive size``
    / ``qderive optimize --json``, read as attributes (``res.capacity``) or items (``res["capacity"]``);
    ``as_dict()`` gives them all. ``action`` the action run, ``model`` the model it was asked of, ``varied``
    the model fields the action chose."""

    action: str
    model: object = field(repr=False)
    varied: tuple
    results: dict

    def __getattr__(self, name):
        results = object.__getattribute__(self, "results")
        if name in results:
            return results[name]
        raise AttributeError(f"{type(self).__name__} of {self.action} has no {name!r}; it has "
                             f"{', '.join(results)}")

    def __getitem__(self, key):
        return self.results[key]

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)

    def as_dict(self) -> dict:
        """Result key -> value, as ``--json`` prints them (before formatting)."""
        return dict(self.results)


def load_field(cls) -> str | None:
    """The model field that is the offered load: the field the ``load`` alternative gives (``rate``), or a
    field named ``load``; None if the model has neither."""
    for alt in cls.alternatives:
        if alt.name == "load":
            return alt.field
    return "load" if any(f.name == "load" for f, _ in params_of(cls)) else None


def _action_of(model, name: str):
    cls = type(model)
    for act in cls.actions:
        if act.name == name:
            return act
    offered = ", ".join(a.name for a in cls.actions) or "none"
    raise ParameterError(f"{cls.name} has no {name} (its actions: {offered})")


def default_vary(model, name: str) -> tuple:
    """The fields an action chooses by default. ``size``: the action's omitted fields and its first optional
    one, without the load field when something else is left (``size erlang-b``: the servers for the model's
    load; ``size vacation-finite``: the capacity for the model's load). ``optimize``: the omitted fields (the
    thresholds L and H); an optional field (R, searched with ``r_range=``) keeps the model's value unless
    ``vary`` names it."""
    act = _action_of(model, name)
    if name != "size":  # optimize: the omitted fields (L and H); an optional one (R) is the model's own
        return tuple(act.omit)
    chosen = tuple(act.omit) + tuple(act.optional[:1])
    load = load_field(type(model))
    rest = tuple(f for f in chosen if f != load)
    return rest or chosen


def run_action(model, name: str, vary=None, digits: int | None = None, *, progress: bool = False, executor=None,
               **request) -> ActionResult:
    """Run the model's action ``name`` (``size``, ``optimize``) with ``vary`` the fields it chooses (default
    :func:`default_vary`) and ``request`` its options (the request dataclass's field names)."""
    cls = type(model)
    act = _action_of(model, name)
    vary = default_vary(model, name) if vary is None else ((vary,) if isinstance(vary, str) else tuple(vary))
    choosable = set(act.omit) | set(act.optional)
    wrong = [v for v in vary if v not in choosable]
    if wrong:
        raise ParameterError("vary", f"{name} {cls.name} chooses {', '.join(sorted(choosable)) or 'nothing'}",
                             ", ".join(wrong))
    values = {f.name: getattr(model, f.name) for f, meta in params_of(cls)
              if meta.cli and f.name not in act.omit and f.name not in vary and getattr(model, f.name) is not None}
    request_fields = {f.name for f, _ in params_of(act.request)}
    unknown = [k for k in request if k not in request_fields]
    if unknown:
        raise ParameterError(f"{name} {cls.name}: unknown option {', '.join(unknown)} (it takes "
                             f"{', '.join(sorted(request_fields))})")
    for f in act.omit:  # a request field named like a model field not chosen: the model's value
        if f in request_fields and f not in vary and f not in request and getattr(model, f, None) is not None:
            request[f] = getattr(model, f)
    req = act.request(**request)
    if digits is not None:
        from .. import limits

        limits.check("digits", digits, "mpmath cost grows with the precision")
    import inspect

    from .hooks import LAYER_HOOKS

    run = LAYER_HOOKS["action"](model, name)
    accepted = inspect.signature(run).parameters
    extra = {}
    if "progress" in accepted:
        extra["progress"] = progress
    if executor is not None:
        if "executor" not in accepted:
            raise ParameterError("executor", f"{name} {cls.name} runs in one process")
        extra["executor"] = executor
    return ActionResult(name, model, vary, dict(run(values, req, digits, **extra)))
