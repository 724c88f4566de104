"""Models as data: one frozen dataclass per model, validated once, and its typed result record.

A model class lists its parameters as dataclass fields with
:class:`~qderive.symbolic.params.Param` metadata (meaning, units, command-line option,
help); ``_validate`` checks the constraints once, at construction, with errors that name
the parameter. Subclassing with ``name = "..."`` registers the model; the command line
(``eval``, ``size``, ``optimize``, ``simulate``, ``codegen``), ``verify --simulate``, the
engines, the oracles, the simulator and codegen all take the model object itself.

A model names none of the code that computes it: the engines, response laws, simulators,
actions, derivations and codegen register for a model by its name in their own layer (lazy
tables, so ``qderive eval`` imports one engine), and each declares what it computes
(:mod:`qderive.symbolic.capabilities`). ``actions`` are the extra subcommands a model offers
(``size``, ``optimize``), each with its own request dataclass. Its result record is a
:class:`Measures` subclass whose fields are the JSON measure keys of ``qderive eval``, with
units, kinds and the source equation. :meth:`Model.evaluate` and :meth:`Model.derive` call
the functions the upper layers install in :data:`LAYER_HOOKS` (the package ``qderive`` does,
on import, before any of its subpackages is imported).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from ..errors import ParameterError
from ..params import Kind, Param, apply_check, exact_value, params_of, show_value

__all__ = ["LAYER_HOOKS", "Alternative", "Action", "Model", "Request", "Measures", "Measure", "MeasureKind", "measure",
           "registered_models"]


@dataclass(frozen=True)
class Alternative:
    """Another way to give a field: ``--load`` instead of ``--rate``.

    ``convert(values, given)`` returns the field's value from the other fields' values and the
    alternative's exact value (e.g. lambda = rho_bar / (l_1 b_1)).
    """

    name: str
    field: str
    param: Param
    convert: Callable


@dataclass(frozen=True)
class Action:
    """An extra subcommand of a model (``size``, ``optimize``): its request class (the function that runs it is
    registered under the action's name in the numeric layer's table).

    The function ``run(values, request, digits)`` receives the parsed model values (a dict; the fields in
    ``omit`` are chosen by the action itself and not asked for; those in ``optional`` may be
    left out, and the action then chooses them: ``size vacation-finite`` finds the capacity
    without ``--capacity`` and the load without ``--load``) and returns a dict of results.
    """

    name: str
    summary: str
    request: type
    omit: tuple = ()
    optional: tuple = ()


class MeasureKind(enum.Enum):
    """What a measure is (for validation of results and for units)."""

    PROBABILITY = "probability"
    TIME = "time"
    COUNT = "count"          # a mean number of customers
    RATE = "rate"            # per unit time
    VALUE = "value"          # any other real number (a variance, a load)
    INTEGER = "integer"
    DISTRIBUTION = "distribution"  # a list of probabilities
    LOG = "log"              # a logarithm (may be negative)


@dataclass(frozen=True)
class Measure:
    help: str
    kind: MeasureKind = MeasureKind.VALUE
    units: str = ""
    source: str = ""
    optional: bool = False  # computed only on request (e.g. the queue-length law, --distribution)


def measure(help: str, kind: MeasureKind = MeasureKind.VALUE, *, units: str = "", source: str = "",
            optional: bool = False):
    """A measure field of a result record."""
    return field(default=None, metadata={"measure": Measure(help, kind, units, source, optional)})


@dataclass(frozen=True)
class Measures:
    """Base of every result record: the measures (subclass fields), then how they were computed.

    ``model`` the model evaluated; ``precision`` ``"float64"`` or the requested digits;
    ``confirmed_digits`` how many significant digits the precision policy established
    (None in float64 without escalation); ``working_digits`` the mpmath precision used
    (None in float64); ``notes`` messages for the user (an escalation, a threshold that
    does not bind, a value below the float64 range).
    """

    model: object = field(default=None, kw_only=True, repr=False)
    precision: object = field(default="float64", kw_only=True)
    confirmed_digits: float | None = field(default=None, kw_only=True)
    working_digits: int | None = field(default=None, kw_only=True)
    notes: tuple = field(default=(), kw_only=True)
    #: the response-time measures asked for (``wait_tail``, ``wait_quantile``, ``wait_moments``, ``sojourn_...``;
    #: ``response`` of the numeric layer), after the model's own measures in :meth:`as_dict`
    response: dict | None = field(default=None, kw_only=True, repr=False)

    @classmethod
    def measure_fields(cls) -> list[tuple[dataclasses.Field, Measure]]:
        return [(f, f.metadata["measure"]) for f in dataclasses.fields(cls) if "measure" in f.metadata]

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The JSON measure keys, in order."""
        return tuple(f.name for f, _ in cls.measure_fields())

    def as_dict(self) -> dict:
        """Measure key -> value (optional measures only when computed)."""
        out = {}
        for f, m in self.measure_fields():
            value = getattr(self, f.name)
            if value is None and m.optional:
                continue
            out[f.name] = value
        out.update(self.response or {})
        return out

    def __getitem__(self, key):
        return self.as_dict()[key]

    def _repr_markdown_(self) -> str:
        lines = ["| measure | value | units |", "|---|---|---|"]
        units = {f.name: m.units for f, m in self.measure_fields()}
        for name, value in self.as_dict().items():
            shown = f"[{len(value)} values]" if isinstance(value, (list, tuple)) else f"{value}"
            lines.append(f"| `{name}` | {shown} | {units.get(name, '')} |")
        if self.notes:
            lines += ["", *[f"*note:* {n}" for n in self.notes]]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter: the measures as an HTML table (measure, value, units), then the notes."""
        from html import escape

        units = {f.name: m.units for f, m in self.measure_fields()}
        rows = []
        for name, value in self.as_dict().items():
            shown = f"[{len(value)} values]" if isinstance(value, (list, tuple)) else f"{value}"
            rows.append(f"<tr><td><code>{escape(name)}</code></td><td>{escape(shown)}</td>"
                        f"<td>{escape(str(units.get(name, '') or ''))}</td></tr>")
        notes = "".join(f"<p><em>note:</em> {escape(str(n))}</p>" for n in self.notes)
        return ("<table><thead><tr><th>measure</th><th>value</th><th>units</th></tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>" + notes)


_MODELS: dict[str, type] = {}

#: ``"evaluate"`` -> ``evaluate(model, digits, **options)``, ``"derive"`` -> ``derive(model)``: installed by the
#: upper layers (the package ``qderive``), so that this layer names none of them
LAYER_HOOKS: dict[str, Callable] = {}


def registered_models() -> dict[str, type]:
    """Command-line name -> model class, for every model module of :mod:`qderive.symbolic.models`."""
    from . import _discover

    _discover()
    return dict(_MODELS)


class _Validated:
    """Normalisation of Param fields (exact numbers, enums, laws) and ``_validate`` after it."""

    def __post_init__(self):
        for f, meta in params_of(type(self)):
            value = getattr(self, f.name)
            if value is None and (meta.none_text is not None or f.default is None):
                continue
            if meta.kind is Kind.TIME_LAW or meta.kind is Kind.BATCH_LAW:
                _check_law(value, meta, f.name)
                continue
            if meta.kind is Kind.FLAG:
                if not isinstance(value, bool):
                    raise ParameterError(f.name, "must be True or False", value)
                continue
            value = exact_value(value, meta, f.name)
            apply_check(value, meta, f.name)
            object.__setattr__(self, f.name, value)
        self._validate()

    def _validate(self) -> None:
        """Check the constraints across fields (raise ParameterError naming the parameters)."""

    def parameters(self) -> dict:
        """The parameters as they would be written on input, JSON-ready: integers and booleans as such,
        exact numbers as decimal strings (``"0.015"``, ``"1/3"``), laws as specifications, lists of an
        option joined by commas."""
        out = {}
        for f, meta in params_of(type(self)):
            value = getattr(self, f.name)
            if value is None or isinstance(value, (bool, int)) and not isinstance(value, enum.Enum):
                out[f.name] = value
            else:
                out[f.name] = show_value(value, list_sep=",")
        return out


def _check_law(value, meta: Param, name: str) -> None:
    from ..batches.base import BatchLaw
    from ..laws.base import TimeLaw

    cls = TimeLaw if meta.kind is Kind.TIME_LAW else BatchLaw
    if not isinstance(value, cls):
        what = "a time law (qderive.Exponential, ...)" if cls is TimeLaw else "a batch law (qderive.Geometric, ...)"
        raise ParameterError(name, f"must be {what}", type(value).__name__)


@dataclass(frozen=True)
class Request(_Validated):
    """Options of an action (``size``, ``optimize``, ``codegen``): Param fields, validated once."""


@dataclass(frozen=True)
class Model(_Validated):
    """Base of every model (see the module docstring)."""

    #: command-line name (``vacation-finite``); registers the class
    name: ClassVar[str] = ""
    #: one line for ``qderive list`` and the help
    summary: ClassVar[str] = ""
    #: the result record class
    measures: ClassVar[type] = Measures
    #: names of per-flow response laws (``{"wait_<flow>": ..., "sojourn_<flow>": ...}`` in the response dict):
    #: they add the measures ``wait_tail_<flow>``, ... and the options ``--wait-tail-<flow>``, ...
    response_flows: ClassVar[tuple] = ()
    #: the Request class of ``qderive codegen NAME`` options (None: no options)
    codegen_options: ClassVar[type | None] = None
    #: other ways to give a field (``--load`` for ``--rate``)
    alternatives: ClassVar[tuple] = ()
    #: extra subcommands
    actions: ClassVar[tuple] = ()
    #: a representative case (field values) for ``qderive verify --simulate``
    example: ClassVar[Callable | None] = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name:
            if name in _MODELS and _MODELS[name].__qualname__ != cls.__qualname__:
                raise TypeError(f"two models are registered as {name!r}")
            _MODELS[name] = cls

    @classmethod
    def from_values(cls, values: dict):
        """The model from field values, resolving :class:`Alternative` inputs (``load`` -> ``rate``)."""
        values = dict(values)
        for alt in cls.alternatives:
            given = values.pop(alt.name, None)
            if given is not None:
                if values.get(alt.field) is not None:
                    raise ParameterError(f"give {alt.field} or {alt.name}, not both")
                values[alt.field] = alt.convert(values, given)
        return cls(**values)

    def evaluate(self, digits: int | None = None, **options):
        """All measures: float64 (``digits=None``) or correct to ``digits`` significant digits.

        The one precision policy (installed in :data:`LAYER_HOOKS` by the numeric layer's user, the
        package ``qderive``): float64 checks its own trouble and escalates to mpmath with a note;
        ``digits=D`` evaluates with guard digits and confirms the result. A combination that no consumer
        computes is refused before any work. Returns the model's :class:`Measures` record.
        """
        return LAYER_HOOKS["evaluate"](self, digits, **options)

    def derive(self):
        """The model's derivation (numbered steps with their checks; None if it has none)."""
        return LAYER_HOOKS["derive"](self)

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.parameters().items() if v is not None)
        return f"{self.name}({params})"

    def _repr_latex_(self) -> str:
        def text(t):
            return "\\text{" + "".join("\\" + c if c in "_&%#$" else c for c in str(t)) + "}"

        rows = " \\\\ ".join(f"{text(k)} & {text(v)}" for k, v in self.parameters().items() if v is not None)
        return f"${text(self.summary)}\\quad\\begin{{array}}{{ll}}{rows}\\end{{array}}$"
