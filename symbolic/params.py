"""Parameter metadata: how a field of a law, a model or a request is named, parsed, shown and documented.

A law, a model and an action request are frozen dataclasses whose fields carry a
:class:`Param` in their metadata (``field(metadata={"param": Param(...)})``, written
``param(...)``). Everything user-facing is generated from it: the command-line
options of a model (``--capacity``), the keys of a law specification
(``erlang:k=4,mean=0.015``), the help texts with units, and the echo of the
parameters in JSON. Nothing here parses with ``eval``: numbers go through
:func:`qderive.symbolic.numbers.parse_number`.

The law specification language is ``kind:key=value,key=value``; a list value is
written with ``/`` (``hyperexp:p=0.3/0.7,mean=1/2``). A key given twice, an unknown
key and a missing key are errors that name the key.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import MISSING, dataclass, field

from .errors import ParameterError
from .numbers import decimal_text, exact, exact_int, parse_number

__all__ = ["Kind", "Param", "param", "params_of", "split_spec", "parse_value", "show_value"]


class Kind(enum.Enum):
    """How a parameter's text is parsed."""

    NUMBER = "number"        #: one exact number
    INTEGER = "integer"      #: one integer
    NUMBERS = "numbers"      #: a list of exact numbers (``/`` inside a law spec, ``,`` as an option)
    INTEGERS = "integers"    #: a list of integers
    TIME_LAW = "time-law"    #: a time-law specification
    BATCH_LAW = "batch-law"  #: a batch-law specification
    CHOICE = "choice"        #: one value of an Enum
    FLAG = "flag"            #: a switch (no value)
    TEXT = "text"            #: free text (a file name)


@dataclass(frozen=True)
class Param:
    """Metadata of one parameter.

    ``help`` says what it is, ``units`` its unit (``"s"``, ``"customers"``, ``""``);
    ``kind`` how to parse it; ``key`` its name in a law spec or on the command line
    (default: the field name, ``_`` written ``-`` on the command line); ``choices`` the
    Enum of a CHOICE; ``structural`` marks a law parameter that fixes the *family* in
    generated code (Erlang's k) rather than being a numeric argument; ``none_text`` the
    word that means None (``--vacation none``); ``option`` an explicit option name;
    ``cli`` False hides it from the command line; ``count`` the number of values of a list;
    ``part`` the position of this field in a comma-separated option shared by several
    fields (``--thresholds L,H,R`` fills the fields L, H and R); ``check`` a constraint applied at
    construction and written into generated code: ``"> 0"``, ``">= 0"``, ``">= 1"`` or ``"[0, 1]"``.
    """

    help: str
    kind: Kind = Kind.NUMBER
    units: str = ""
    key: str | None = None
    choices: type | None = None
    structural: bool = False
    none_text: str | None = None
    option: str | None = None
    cli: bool = True
    count: int | None = None
    metavar: str | None = None
    part: int | None = None
    check: str | None = None


def param(help: str, *, default=MISSING, kind: Kind = Kind.NUMBER, **meta):
    """A dataclass field with :class:`Param` metadata (``default`` as in :func:`dataclasses.field`)."""
    return field(default=default, metadata={"param": Param(help, kind, **meta)})


def params_of(cls) -> list[tuple[dataclasses.Field, Param]]:
    """The fields of a dataclass that carry a :class:`Param`, in declaration order."""
    return [(f, f.metadata["param"]) for f in dataclasses.fields(cls) if "param" in f.metadata]


def split_spec(text: str, what: str) -> tuple[str, dict[str, str]]:
    """``"kind:key=value,..."`` -> (kind, {key: value}); a repeated or malformed key is an error."""
    if not isinstance(text, str) or not text.strip():
        raise ParameterError(f"{what}: give a law, e.g. exp:mean=1")
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower()
    values: dict[str, str] = {}
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key:
                raise ParameterError(f"{what} {text}: parameter {item.strip()!r} is not of the form key=value")
            if key in values:
                raise ParameterError(f"{what} {text}: {key} is given twice")
            values[key] = value.strip()
    return kind, values


def parse_value(text: str, meta: Param, name: str, list_sep: str = "/"):
    """Parse one parameter's text by its :class:`Kind` (numbers exactly, never evaluated)."""
    kind = meta.kind
    if kind is Kind.NUMBER:
        return parse_number(text, name)
    if kind is Kind.INTEGER:
        return exact_int(parse_number(text, name), name)
    if kind in (Kind.NUMBERS, Kind.INTEGERS):
        parts = [p.strip() for p in _split_list(text, list_sep)]
        if not all(parts):
            raise ParameterError(f"{name} = {text!r}: an empty value in the list")
        if meta.count is not None and len(parts) != meta.count:
            raise ParameterError(name, f"expects {meta.count} values separated by {list_sep!r}", text)
        values = [parse_number(p, name) for p in parts]
        if kind is Kind.INTEGERS:
            values = [exact_int(v, name) for v in values]
        return tuple(values)
    if kind is Kind.CHOICE:
        try:
            return meta.choices(text.strip().lower())
        except ValueError:
            allowed = ", ".join(c.value for c in meta.choices)
            raise ParameterError(name, f"must be one of {allowed}", text) from None
    if kind is Kind.TEXT:
        return text
    raise TypeError(f"parse_value: kind {kind} is parsed by its owner")  # laws and flags


def _split_list(text: str, sep: str) -> list[str]:
    """Split at ``sep`` outside parentheses: ``(1/3)/(2/3)`` is the list 1/3, 2/3 (exact fractions in lists)."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip()[1:-1] if p.strip().startswith("(") and p.strip().endswith(")") else p for p in parts]


def show_value(value, list_sep: str = "/") -> str:
    """The text of a parameter value as it would be written on input (exact decimals; lists joined by
    ``list_sep``, a fraction without a terminating decimal in parentheses: ``(1/3)/(2/3)``)."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (tuple, list)):
        items = [show_value(v) for v in value]
        return list_sep.join(f"({t})" if "/" in t else t for t in items)
    if hasattr(value, "spec_text"):
        return value.spec_text()
    return decimal_text(value) if not isinstance(value, (int, str)) or isinstance(value, bool) else str(value)


CHECKS = {
    "> 0": (lambda v: v > 0, "must be > 0"),
    ">= 0": (lambda v: v >= 0, "must be >= 0"),
    ">= 1": (lambda v: v >= 1, "must be >= 1"),
    "[0, 1]": (lambda v: 0 <= v <= 1, "must lie in [0, 1]"),
}


def apply_check(value, meta: Param, name: str) -> None:
    """Raise ParameterError when ``value`` (or an element of it) violates ``meta.check``."""
    if meta.check is None:
        return
    from .numbers import is_symbolic

    ok, constraint = CHECKS[meta.check]
    items = value if isinstance(value, tuple) else (value,)
    for i, v in enumerate(items):
        if v is None or is_symbolic(v):
            continue
        if not ok(v):
            label = name if len(items) == 1 and not isinstance(value, tuple) else f"{name}[{i}]"
            raise ParameterError(label, constraint, decimal_text(v) if not isinstance(v, int) else v)


def exact_value(value, meta: Param, name: str):
    """Normalise a Python-API value by its kind (numbers exact; lists to tuples)."""
    if meta.kind is Kind.NUMBER:
        return exact(value, name)
    if meta.kind is Kind.INTEGER:
        return exact_int(value, name)
    if meta.kind in (Kind.NUMBERS, Kind.INTEGERS):
        try:
            items = tuple(value)
        except TypeError:
            raise ParameterError(name, "must be a sequence of numbers", value) from None
        if meta.count is not None and len(items) != meta.count:
            raise ParameterError(name, f"must have {meta.count} values", len(items))
        conv = exact_int if meta.kind is Kind.INTEGERS else exact
        return tuple(conv(v, f"{name}[{i}]") for i, v in enumerate(items))
    if meta.kind is Kind.CHOICE and not isinstance(value, meta.choices):
        try:
            return meta.choices(value)
        except ValueError:
            allowed = ", ".join(c.value for c in meta.choices)
            raise ParameterError(name, f"must be one of {allowed}", value) from None
    return value
