"""Every consumer of a model, and the one question each verb asks them before any work.

The derivation layer's own consumers -- the ``derivation`` (numbered steps with their checks) and ``codegen``
(the generated functions) -- register here by model name (paths relative to :mod:`qderive.derivations`,
imported only when used); the numeric ones (engine, response laws, simulator, actions) in
:mod:`qderive.numeric.consumers`. :func:`load` finds either.

:func:`ask` is the one function that asks, for a verb, every consumer the verb needs
(:data:`VERBS`), each through its ``supports(model, asked)`` hook (:mod:`qderive.symbolic.capabilities`), and
raises the first refusal as one line naming the option::

    qderive: error: --wait-tail with --service empirical:values=1/2 in vacation-finite: ...

:func:`support_matrix` asks the same hooks for the model's example with each field changed to each kind of
value (every law family, every enum member, none), which is what ``qderive list MODEL`` prints and
``docs/reference/support.md`` shows (``tools/support_page.py``).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib

from ..numeric import consumers as _numeric
from ..symbolic.capabilities import Refusal, ask_consumer
from ..symbolic.errors import ParameterError

__all__ = ["ROLES", "VERBS", "RESPONSE_MEASURES", "has", "load", "ask", "refusal", "roles_of", "support_matrix",
           "variants", "rescaled"]

_TABLE: dict[str, dict[str, str]] = {
    "vacation-infinite": {"derivation": "vacation_infinite:derivation",
                          "codegen": "vacation_infinite:codegen_forms"},
    "vacation-finite": {"derivation": "vacation_finite:derivation", "codegen": "export.codegen_vacation:forms"},
    "vacation-finite-r": {"derivation": "vacation_finite_closed:derivation",
                          "codegen": "vacation_finite_closed:codegen_forms"},
    "erlang-b": {"derivation": "erlang_b:derivation", "codegen": "export.codegen_capacity:erlang_b_forms"},
    "scp-window": {"derivation": "scp_window:derivation"},
    "sip-retransmission": {"derivation": "sip_retransmission:derivation"},
    "hysteretic": {"derivation": "hysteretic:derivation", "codegen": "export.codegen_hysteretic:forms"},
    "mm1-hysteretic": {"derivation": "mm1_hysteretic:derivation", "codegen": "mm1_hysteretic:codegen_forms"},
    "redundant-cluster": {"derivation": "redundant_cluster:derivation",
                          "codegen": "export.codegen_capacity:cluster_forms"},
    "two-flow": {"derivation": "two_flow:derivation"},
    "two-flow-hysteretic": {"derivation": "two_flow_hysteretic:derivation"},
}

#: every role of a consumer
ROLES = (*_numeric.ROLES, "derivation", "codegen")
#: the consumers each verb asks (``eval`` and ``sweep`` also ask ``response`` when a response measure is asked)
VERBS = {"eval": ("engine",), "sweep": ("engine",), "simulate": ("simulator",), "derive": ("derivation",),
         "verify": ("derivation",), "codegen": ("codegen",), "size": ("size", "engine"),
         "optimize": ("optimize", "engine")}
#: the response measures (``--wait-tail``, ...) asked of the ``response`` consumer
RESPONSE_MEASURES = tuple(f"{kind}_{what}" for kind in ("wait", "sojourn") for what in ("tail", "quantile", "moments"))


def _name(model) -> str:
    return model if isinstance(model, str) else model.name


def has(model, role: str) -> bool:
    """True when ``model`` (an instance, a class or a name) has a consumer in ``role`` (nothing imported)."""
    return role in _TABLE.get(_name(model), {}) or _numeric.has(model, role)


def load(model, role: str):
    """The consumer of ``model`` in ``role`` (imported now), or None."""
    path = _TABLE.get(_name(model), {}).get(role)
    if path is None:
        return _numeric.load(model, role)
    module, _, attr = path.partition(":")
    obj = importlib.import_module(f"{__package__}.{module}")
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def roles_of(model) -> tuple:
    """The roles ``model`` has a consumer in."""
    return tuple(r for r in ROLES if has(model, r))


def refusal(model, role: str, asked=frozenset()) -> Refusal | None:
    """The refusal of ``model`` by its ``role`` consumer (None: computed)."""
    consumer = load(model, role)
    return None if consumer is None else ask_consumer(consumer, model, asked)


def ask(model, verb: str, asked=()) -> None:
    """Ask every consumer ``verb`` needs (and ``response`` when ``asked`` holds response measures) whether it
    computes ``model``; raise the first refusal as a ParameterError naming the option, before any work.

    ``model`` an instance (a class or a name: only whether the consumers exist is asked).
    """
    asked = frozenset(asked)
    roles = list(VERBS[verb])
    if verb in ("eval", "sweep") and any(a.startswith(("wait_", "sojourn_")) for a in asked):
        roles.append("response")
    for role in roles:
        if not has(model, role):
            if role == "response":
                first = sorted(asked)[0]
                raise ParameterError("--" + first.replace("_", "-"),
                                     f"is not available for model {_name(model)!r} (no response-time law yet)")
            raise ParameterError(f"model {_name(model)!r} has no {role} ({verb} is not offered for it)")
        if isinstance(model, (str, type)):
            continue
        found = refusal(model, role, asked)
        if found is not None:
            raise found.error(model, _asked_label(found, verb, role, asked))


def _asked_label(found: Refusal, verb: str, role: str, asked) -> str:
    if role == "response":
        key = found.asked or sorted(asked)[0]
        return "--" + key.replace("_", "-")
    return verb


# --------------------------------------------------------------------------------------
# The support matrix
# --------------------------------------------------------------------------------------


def variants(cls) -> list[tuple[str, str, object]]:
    """(field, value label, model) for the model's example with one field changed to each kind of value it
    may take: every registered law family of a law field (its own ``example()``), every member of an enum,
    ``none`` where allowed, True/False. Numbers are not varied (a consumer's rules are about families and
    choices; numbers are the perturbation test's)."""
    from ..symbolic.params import Kind, params_of

    base = cls.example()
    out = []
    for f, meta in params_of(cls):
        current = getattr(base, f.name)
        values = []
        if meta.kind in (Kind.TIME_LAW, Kind.BATCH_LAW):
            values = _law_examples(meta.kind, current if meta.kind is Kind.TIME_LAW else None)
            if meta.none_text is not None or f.default is None:
                values.append(("none", None))
        elif meta.kind is Kind.CHOICE and isinstance(meta.choices, type) and issubclass(meta.choices, enum.Enum):
            values = [(m.value, m) for m in meta.choices]
        elif meta.kind is Kind.FLAG:
            values = [("true", True), ("false", False)]
        for label, value in values:
            if value is current or (value is not None and type(value) is type(current) and meta.kind is not Kind.FLAG
                                    and meta.kind not in (Kind.TIME_LAW, Kind.BATCH_LAW) and value == current):
                out.append((f.name, label, base))
                continue
            try:
                model = dataclasses.replace(base, **{f.name: value})
            except (ParameterError, ValueError, TypeError) as err:
                out.append((f.name, label, err))
                continue
            out.append((f.name, label, model))
    return out


def _law_examples(kind, current=None):
    """(spec name, example law) of every registered law family, a time law rescaled to the mean of ``current``
    (so that the model's load, and so its validity, is kept)."""
    from ..symbolic.params import Kind

    if kind is Kind.TIME_LAW:
        from ..symbolic.laws import TimeLaw as base
    else:
        from ..symbolic.batches import BatchLaw as base
    out = []
    for spec, law_cls in sorted(base.registered().items()):
        examples = getattr(law_cls, "examples", None)
        if examples is None:
            continue
        try:
            law = examples()[0]
        except Exception:  # pragma: no cover - a family without a usable example
            continue
        if kind is Kind.TIME_LAW and current is not None:
            try:
                law = rescaled(law, current.moment(1) / law.moment(1))
            except (TypeError, ValueError, ParameterError):  # a symbolic law (GeneralTime): kept as it is
                pass
        out.append((spec, law))
    return out


def rescaled(law, factor):
    """The time law with every time multiplied by ``factor`` (fields whose Param units are ``time`` times it,
    ``1/time`` divided by it, nested laws rescaled): the same shape, the mean times ``factor``."""
    from ..symbolic.params import Kind, params_of

    changes = {}
    for f, meta in params_of(type(law)):
        value = getattr(law, f.name)
        if value is None:
            continue
        if meta.kind is Kind.TIME_LAW or _has_laws(value):
            changes[f.name] = _scale(value, factor, None)
        elif meta.units in ("time", "1/time"):
            changes[f.name] = _scale(value, factor if meta.units == "time" else 1 / factor, None)
    return dataclasses.replace(law, **changes) if changes else law


def _has_laws(value) -> bool:
    from ..symbolic.laws import TimeLaw

    return isinstance(value, TimeLaw) or isinstance(value, tuple) and any(_has_laws(v) for v in value)


def _scale(value, k, _):
    from ..symbolic.laws import TimeLaw

    if isinstance(value, TimeLaw):
        return rescaled(value, k)
    if isinstance(value, tuple):
        return tuple(_scale(v, k, None) for v in value)
    return value * k


def support_matrix(cls) -> tuple[list[str], list[tuple[str, str, list]]]:
    """(columns, rows): columns the verbs and response measures the model offers; each row (field, value,
    cells) with a cell per column: ``"yes"``, ``"refused: why"`` or ``"invalid: why"`` (the model's own
    domain rule refuses the value for this example)."""
    columns = [v for v in VERBS if all(has(cls, r) for r in VERBS[v])]
    response = has(cls, "response")
    if response:
        columns += list(RESPONSE_MEASURES)
    rows = []
    for field, label, model in variants(cls):
        if isinstance(model, Exception):
            rows.append((field, label, ["invalid: " + str(model)] * len(columns)))
            continue
        cells = []
        for col in columns:
            roles = ("response",) if col in RESPONSE_MEASURES else VERBS[col]
            asked = frozenset({col}) if col in RESPONSE_MEASURES else frozenset()
            found = None
            for role in roles:
                found = refusal(model, role, asked)
                if found is not None:
                    break
            cells.append("yes" if found is None else f"refused ({found.field}): {found.why}")
        rows.append((field, label, cells))
    return columns, rows


def independence(cls) -> list[tuple[str, str, str]]:
    """(consumer role, field, why) for every field a consumer of ``cls`` declares it does not depend on."""
    out = []
    for role in roles_of(cls):
        consumer = load(cls, role)
        for field, why in (getattr(consumer, "independent", None) or {}).items():
            out.append((role, field, why))
    return out


def support_page() -> str:
    """The Markdown page of every model's support matrix (``docs/reference/support.md``)."""
    from ..symbolic.models import registered_models

    lines = ["# What each model computes", "",
             "Generated by `python tools/support_page.py` from the declarations of the consumers (engines, response",
             "laws, simulators, derivations, codegen, actions; `qderive.symbolic.capabilities`); `qderive list MODEL`",
             "prints the same. Each option of the model's example is changed to each kind of value it may take (every",
             "law family, every choice, `none`); a row lists what is not computed, and why. The command line asks the",
             "same declarations before any work, so a refused combination is an error at once, naming the option.",
             ""]
    for name, cls in sorted(registered_models().items()):
        columns, rows = support_matrix(cls)
        lines += [f"## {name}", "", _md(cls.summary), "", "Subcommands and measures: " + ", ".join(f"`{c}`" for c in columns)
                  + ".", ""]
        refused, invalid = [], {}
        for field, label, cells in rows:
            if cells and all(c.startswith("invalid: ") for c in cells):
                reason = cells[0].removeprefix("invalid: ")
                if reason.startswith(f"{field} = ") and ": " in reason:  # the value is in the row's label
                    reason = reason.split(": ", 1)[1]
                invalid.setdefault((field, reason), []).append(label)
                continue
            grouped: dict = {}
            for c, cell in zip(columns, cells):
                if cell != "yes":
                    grouped.setdefault(cell, []).append(c)
            for cell, cols in grouped.items():
                what = "all" if len(cols) == len(columns) else ", ".join(f"`{c}`" for c in cols)
                refused.append(f"| `{option_label(cls, field)} {label}` | {what} | {_cell(cell)} |")
        if refused:
            lines += ["| option | not computed by | why |", "|---|---|---|", *refused, ""]
        else:
            lines += ["Every value of every option is computed by every subcommand.", ""]
        if invalid:
            lines += ["Values the example's other options do not allow (the model's own rules, not a refusal):", ""]
            for (field, reason), labels in invalid.items():
                lines.append(f"- `{option_label(cls, field)}` {', '.join(labels)}: {_md(reason)}")
            lines.append("")
        declared = independence(cls)
        if declared:
            lines += ["Declared independent (the result does not depend on the option):", ""]
            grouped = {}
            for role, field, why in declared:
                grouped.setdefault((role, why), []).append(f"`{option_label(cls, field)}`")
            for (role, why), fields in grouped.items():
                lines.append(f"- {role}, {', '.join(fields)}: {_md(why)}")
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def option_label(cls, field: str) -> str:
    """The option of a field as a user writes it: ``--service``; a part of a shared option as ``--thresholds L``."""
    from ..symbolic.capabilities import option_name
    from ..symbolic.params import params_of

    meta = next((m for f, m in params_of(cls) if f.name == field), None)
    option = option_name(cls, field)
    return f"{option} {meta.metavar or field}" if meta is not None and meta.part is not None else option


def _cell(cell: str) -> str:
    return _md(cell.split(": ", 1)[1] if ": " in cell else cell)


def _md(text: str) -> str:
    """Plain text as Markdown text: no link, emphasis, math or table syntax."""
    for ch in "\\[]*|$<>`":
        text = text.replace(ch, "\\" + ch)
    return text
