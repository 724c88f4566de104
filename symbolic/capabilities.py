"""What a consumer of a model computes: refusals that name the field, declared where the consumer is written.

Every consumer of a model -- an engine, a response law, a simulator, an oracle, codegen, a derivation, an
action (``size``, ``optimize``) -- says in its own code which models it computes, through one hook:

``supports(model, asked=frozenset()) -> Refusal | None``
    None when it computes ``model`` (and the measures in ``asked``, e.g. ``{"wait_tail"}``); otherwise a
    :class:`Refusal` naming the field (and so the command-line option) and saying why.

Most consumers need no code for it: they list :class:`Rule` objects -- a predicate over one field's value and
the reason -- and :func:`supports` (or :func:`declare` on a function) turns them into the hook, the way scipy's
distribution infrastructure reads what a subclass can do from what it declares. A consumer may also declare
``independent``: ``{field: why}`` for the fields its result does not depend on, with the reason (a derivation
in a general service law G covers every service law; the analytic window model has no overload control, only
the simulator runs it). So each field is, for each consumer, read (its result changes with it), refused (by a
rule or the hook, naming it) or declared independent -- never silently ignored: ``tests/test_capabilities.py``
changes every field of every model's example and checks that one of the three holds.

The verbs ask every consumer they need *before any work* (``capabilities.ask`` of the derivation layer; the
numeric layer's ``evaluate`` asks its engine and response laws itself): a combination that is not computed is
refused at once, in one line::

    --wait-tail with --service empirical:values=1/2 in vacation-finite: the service time ... has no exact sum

A model's ``_validate`` keeps only domain rules (rates > 0, L < H); "not computed" is the consumer's word.

A consumer that reads a model through parts of its own (the SIP engine's server and transaction parts, the SIP
simulator's setup) refuses at the level of an option: :meth:`Refusal.of_option` (``--thresholds``, the reason, the
value), whose :meth:`~Refusal.error` is the one-line error of the command line (``--option = value: reason``) and
which :meth:`~Refusal.for_model` maps to the model field behind the option; :func:`limit_refusal` turns a size limit
(:mod:`.limits`) into such a refusal.

>>> from fractions import Fraction as F
>>> rule = Rule("capacity", lambda r: r > 10, "the toy engine stops at 10 places")
>>> class Toy:
...     name, capacity = "toy", 12
>>> refusal = rule.check(Toy())
>>> refusal.field, refusal.why
('capacity', 'the toy engine stops at 10 places')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import limits
from .errors import ParameterError

__all__ = ["Refusal", "Rule", "declare", "supports", "ask_consumer", "option_name", "field_of_option",
           "limit_refusal"]


@dataclass(frozen=True)
class Refusal:
    """A consumer does not compute a model: ``field`` the model field at fault (its option is named in the
    error), ``why`` the true reason (one sentence, no file paths).

    An option-level refusal (:meth:`of_option`) also keeps the ``option`` as its consumer named it (``--thresholds``,
    or the simulator's field name ``thresholds``) and the ``value`` shown in its message (None: not shown)."""

    field: str
    why: str
    #: the measure asked for that the refusal concerns (``wait_tail``), "" when it concerns the whole verb
    asked: str = ""
    #: the option named by an option-level refusal ("": a field refusal)
    option: str = ""
    #: the value shown by an option-level refusal's message (None: not shown)
    value: object = None

    @classmethod
    def of_option(cls, option: str, reason: str, value=None) -> "Refusal":
        """The refusal of ``option`` (``--duplicate-cost`` or ``duplicate_cost``) for ``reason``, showing ``value``;
        its field is the option's name (:meth:`for_model` maps it to the model's field)."""
        return cls(option.removeprefix("--").replace("-", "_"), reason, option=option, value=value)

    @property
    def reason(self) -> str:
        """The reason (``why``), the name option-level refusals use."""
        return self.why

    def for_model(self, model) -> "Refusal":
        """This option-level refusal as a field refusal of ``model``: the model field behind the option, the
        reason."""
        return Refusal(field_of_option(type(model), self.option), self.why)

    def error(self, model=None, asked: str = "") -> ParameterError:
        """The one-line error: ``{asked} with --field value in model-name: why``; without ``model`` (an option-level
        refusal) the command line's ``--option = value: reason``."""
        if model is None:
            return ParameterError(self.option or "--" + self.field.replace("_", "-"), self.why or None, self.value)
        cls = type(model)
        value = getattr(model, self.field, None)
        shown = _shown(value)
        where = f" in {cls.name}" if getattr(cls, "name", "") else ""
        err = ParameterError(f"{asked} with {option_name(cls, self.field)}{' ' + shown if shown else ''}{where}: "
                             f"{self.why}")
        err.refusal = self  # the field at fault, for callers (and the capability test)
        return err

    def __str__(self) -> str:
        return str(self.error()) if self.option else repr(self)


def _shown(value) -> str:
    from .params import show_value

    if value is None:
        return "none"
    try:
        return show_value(value)
    except Exception:  # pragma: no cover - a value without a spec
        return str(value)


def option_name(cls, name: str) -> str:
    """The command-line option of field ``name`` of model ``cls`` (``--service``; ``--thresholds`` for a part)."""
    from .params import params_of

    try:
        for f, meta in params_of(cls):
            if f.name == name:
                return meta.option or "--" + name.replace("_", "-")
    except TypeError:  # not a dataclass
        pass
    return "--" + name.replace("_", "-")


def field_of_option(cls, option: str) -> str:
    """The field of model ``cls`` behind ``option`` (``--duplicate-cost`` -> ``duplicate_cost``; an option shared
    by several fields, ``--thresholds``, names its first field; a field name is returned as it is)."""
    from .params import params_of

    name = option.removeprefix("--").replace("-", "_")
    try:
        fields = list(params_of(cls))
    except TypeError:  # not a dataclass
        return name
    if any(f.name == name for f, _ in fields):
        return name
    for f, _ in fields:
        if option_name(cls, f.name) == option:
            return f.name
    return name


@dataclass(frozen=True)
class Rule:
    """A declared predicate: the consumer does not compute a model whose ``field`` value satisfies ``refuses``
    (a callable on the value; on the whole model when ``whole`` is True), for ``why``. ``asked``: the rule
    applies only when one of these measures is asked (``{"wait_tail", "wait_quantile"}``); empty: always."""

    field: str
    refuses: Callable
    why: str | Callable
    asked: frozenset = field(default=frozenset())
    whole: bool = False

    def check(self, model, asked=frozenset()) -> Refusal | None:
        if self.asked and not (self.asked & frozenset(asked)):
            return None
        if not hasattr(model, self.field) and not self.whole:
            return None
        subject = model if self.whole else getattr(model, self.field)
        if not self.refuses(subject):
            return None
        why = self.why(subject) if callable(self.why) else self.why
        return Refusal(self.field, why, min(self.asked & frozenset(asked)) if self.asked else "")


def supports(rules, model, asked=frozenset()) -> Refusal | None:
    """The first refusal of ``rules`` for ``model`` (None: all pass)."""
    for rule in rules:
        refusal = rule.check(model, asked)
        if refusal is not None:
            return refusal
    return None


def declare(*rules: Rule, independent: dict | None = None, check: Callable | None = None, via_engine: bool = False):
    """Decorator: a function consumer (a simulator, a response-law function, an action, a derivation) declares
    its rules, the fields it is ``independent`` of (``{field: why}``) and, optionally, a ``check(model, asked)``
    hook for what rules cannot say; the function gets ``supports(model, asked)`` (rules first, then ``check``).
    ``via_engine``: an action that builds the model from every value given and evaluates it with the model's
    engine (whose declarations then cover the fields)."""

    def wrap(fn):
        def hook(model, asked=frozenset()):
            refusal = supports(rules, model, asked)
            if refusal is None and check is not None:
                refusal = check(model, asked)
            return refusal

        fn.supports = hook
        fn.rules = tuple(rules)
        fn.independent = dict(independent or {})
        fn.via_engine = via_engine
        return fn

    return wrap


def ask_consumer(consumer, model, asked=frozenset()) -> Refusal | None:
    """The consumer's refusal of ``model`` (None when it declares nothing or computes it)."""
    hook = getattr(consumer, "supports", None)
    return None if hook is None else hook(model, frozenset(asked))


def limit_refusal(option: str, limit: str, value, why: str) -> Refusal | None:
    """The size limit ``limit`` (:mod:`.limits`) asked as part of a declaration: None when ``value`` is within it.
    Past the limit :func:`limits.check` raises its :class:`~.errors.BudgetError` (the limit's own one-line message:
    the value, the limit and how to raise it), which the caller of ``supports`` lets through as the refusal; a
    :class:`~.errors.ParameterError` from the check (a value outside the limit's domain) becomes a refusal of
    ``option``."""
    try:
        limits.check(limit, value, why)
    except ParameterError as err:
        return Refusal.of_option(option, err.constraint, err.value)
    return None
