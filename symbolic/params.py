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
from fractions import Fraction
from typing import Callable

from .errors import ParameterError
from .numbers import decimal_text, exact, exact_int, is_symbolic, parse_number

__all__ = ["Kind", "Param", "param", "params_of", "is_concrete", "split_spec", "parse_value", "show_value", "Check", "Bound",
           "Rule", "Positive", "NonNegative", "AtLeast", "AtMost", "GreaterThan", "LessThan", "Between", "as_check",
           "apply_check"]


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
    fields (``--thresholds L,H,R`` fills the fields L, H and R); ``check`` the rule the value (each value of a
    list) must satisfy, applied at construction: a :class:`Check` (:func:`Positive`, :func:`AtLeast`,
    :func:`Between`, ... or any :class:`Rule` with its message) or a bound written as text (``"> 0"``, ``">= 1"``,
    ``"< 1"``, ``"[0, 1]"``, ``"(0, 1]"``), turned into a :class:`Bound` here; anything else fails at once, at
    the class definition. A bound is also written into generated code (``qderive codegen``).
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
    check: Check | str | None = None

    def __post_init__(self):
        object.__setattr__(self, "check", as_check(self.check))


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


class Check:
    """A rule on one number: :meth:`holds` says whether a value satisfies it, :attr:`message` what it requires
    (``"must be > 0"``, the constraint of the :class:`~qderive.symbolic.errors.ParameterError` that names the
    parameter), :attr:`text` the rule as a bound written in help texts and generated code (``"> 0"``; None when
    it is not a bound, e.g. a :class:`Rule`)."""

    message: str = ""
    text: str | None = None

    def holds(self, value) -> bool:
        raise NotImplementedError

    def __call__(self, value) -> bool:
        return self.holds(value)


@dataclass(frozen=True)
class Bound(Check):
    """lo < v (or lo <= v) and v < hi (or v <= hi), either side may be absent: exact comparisons.

    >>> Bound(lo=0, lo_open=True).text, AtLeast(1).message, Between(0, 1).message
    ('> 0', 'must be >= 1', 'must lie in [0, 1]')
    >>> Bound.parse("(0, 1/2]").holds(Fraction(1, 2)), Bound.parse("> 1").holds(1)
    (True, False)
    """

    lo: Fraction | None = None
    hi: Fraction | None = None
    lo_open: bool = False
    hi_open: bool = False

    def __post_init__(self):
        for side in ("lo", "hi"):
            v = getattr(self, side)
            if v is not None:
                object.__setattr__(self, side, Fraction(v))
        if self.lo is None and self.hi is None:
            raise TypeError("Bound: give lo, hi or both")
        if self.lo is not None and self.hi is not None and not self.lo < self.hi:
            raise TypeError(f"Bound: lo = {self.lo} must be below hi = {self.hi}")

    def holds(self, value) -> bool:
        if self.lo is not None and not (value > self.lo if self.lo_open else value >= self.lo):
            return False
        return self.hi is None or (value < self.hi if self.hi_open else value <= self.hi)

    @property
    def text(self) -> str:
        lo, hi = (None if v is None else decimal_text(v) for v in (self.lo, self.hi))
        if lo is not None and hi is not None:
            return f"{'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"
        if lo is not None:
            return f"{'>' if self.lo_open else '>='} {lo}"
        return f"{'<' if self.hi_open else '<='} {hi}"

    @property
    def message(self) -> str:
        return f"must lie in {self.text}" if self.lo is not None and self.hi is not None else f"must be {self.text}"

    def condition(self, name: str, conjunction: str = "and") -> str:
        """The rule as an expression in the variable ``name`` (``conjunction`` "&&" for C)."""
        parts = []
        if self.lo is not None:
            parts.append(f"{name} {'>' if self.lo_open else '>='} {float(self.lo)!r}")
        if self.hi is not None:
            parts.append(f"{name} {'<' if self.hi_open else '<='} {float(self.hi)!r}")
        return f" {conjunction} ".join(parts)

    @classmethod
    def parse(cls, text: str) -> Bound:
        """``"> a"``, ``">= a"``, ``"< b"``, ``"<= b"`` or an interval ``"[a, b]"`` (``(``, ``)``: open ends);
        a, b exact numbers. TypeError otherwise (a check is written by the programmer, not the user)."""
        t = text.strip()
        try:
            for op, kw in ((">=", {}), (">", {"lo_open": True}), ("<=", {}), ("<", {"hi_open": True})):
                if t.startswith(op):
                    v = parse_number(t[len(op):].strip(), "bound")
                    return cls(lo=v, **kw) if op[0] == ">" else cls(hi=v, **kw)
            if t[:1] in "[(" and t[-1:] in "])" and t.count(",") == 1:
                a, b = t[1:-1].split(",")
                return cls(parse_number(a.strip(), "bound"), parse_number(b.strip(), "bound"), t[0] == "(",
                           t[-1] == ")")
        except (ParameterError, TypeError):
            pass
        raise TypeError(f"check {text!r} is not a rule: write a bound \"> 0\", \">= 1\", \"< 1\", \"<= 1\", \"[0, 1]\" or "
                        "\"(0, 1]\", or give a Check (Positive(), AtLeast(1), Between(0, 1), Rule(predicate, "
                        "\"must be ...\"))")


@dataclass(frozen=True)
class Rule(Check):
    """Any rule: ``predicate(value)`` true when the value is allowed, ``message`` what it requires
    (``Rule(lambda k: k % 2 == 0, "must be even")``); generated code cannot check it (:attr:`text` None)."""

    predicate: Callable = None
    message: str = ""

    def __post_init__(self):
        if not callable(self.predicate):
            raise TypeError(f"Rule: the predicate must be callable, got {self.predicate!r}")
        if not isinstance(self.message, str) or not self.message.strip():
            raise TypeError("Rule: give the message that says what the rule requires (\"must be even\")")

    def holds(self, value) -> bool:
        return bool(self.predicate(value))


def Positive() -> Bound:
    """v > 0."""
    return Bound(lo=0, lo_open=True)


def NonNegative() -> Bound:
    """v >= 0."""
    return Bound(lo=0)


def AtLeast(x) -> Bound:
    """v >= x."""
    return Bound(lo=x)


def GreaterThan(x) -> Bound:
    """v > x."""
    return Bound(lo=x, lo_open=True)


def AtMost(x) -> Bound:
    """v <= x."""
    return Bound(hi=x)


def LessThan(x) -> Bound:
    """v < x."""
    return Bound(hi=x, hi_open=True)


def Between(lo, hi, *, lo_open: bool = False, hi_open: bool = False) -> Bound:
    """lo <= v <= hi (an end excluded with ``lo_open`` / ``hi_open``)."""
    return Bound(lo, hi, lo_open, hi_open)


def as_check(spec) -> Check | None:
    """A :class:`Param`'s ``check`` as a :class:`Check`: None, a Check, or a bound written as text
    (:meth:`Bound.parse`); TypeError, naming what was given, for anything else (a bare callable needs its message:
    ``Rule(predicate, "must be ...")``)."""
    if spec is None or isinstance(spec, Check):
        return spec
    if isinstance(spec, str):
        return Bound.parse(spec)
    if callable(spec):
        raise TypeError(f"check {spec!r}: a function needs the message that says what it requires: "
                        "Rule(predicate, \"must be ...\")")
    raise TypeError(f"check {spec!r} is not a rule: give a Check (Positive(), AtLeast(1), Between(0, 1), "
                    "Rule(predicate, \"must be ...\")) or a bound written \"> 0\", \">= 1\", \"[0, 1]\"")


def apply_check(value, meta: Param, name: str) -> None:
    """Raise ParameterError when ``value`` (or an element of it) violates ``meta.check``."""
    if meta.check is None:
        return
    from .numbers import is_symbolic

    items = value if isinstance(value, tuple) else (value,)
    for i, v in enumerate(items):
        if v is None or is_symbolic(v):
            continue
        if not meta.check.holds(v):
            label = name if len(items) == 1 and not isinstance(value, tuple) else f"{name}[{i}]"
            raise ParameterError(label, meta.check.message, decimal_text(v) if not isinstance(v, int) else v)


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


def is_concrete(value) -> bool:
    """True when ``value`` (a number, a tuple of them, or a law: a dataclass of :class:`Param` fields) has no free
    symbols."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(is_concrete(getattr(value, f.name)) for f, _ in params_of(type(value)))
    if isinstance(value, (tuple, list)):
        return all(is_concrete(v) for v in value)
    return not is_symbolic(value)
