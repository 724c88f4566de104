"""No consumer ignores a field in silence: the generic perturbation test, and the capabilities asked first.

For every registered model and every field, the field of the model's ``example()`` is changed to another valid
value (a law to another law family of the same mean, an enum to another member, a flag flipped, a number nudged
by 5 %, an integer by one, a list's first entry nudged) and every consumer of the model must then

* give a different result (the engine: ``evaluate()`` in float64; the response laws: the first two moments of
  the wait and the first of the sojourn; the simulator: a short run, 2 x 1500 customers with a fixed seed, so a
  changed field changes the sample path), or
* refuse the model naming that field (its ``supports`` hook, :mod:`qderive.symbolic.capabilities`), or
* declare that its result does not depend on the field, and why (``independent``: a derivation in a general law
  covers every law of that field; the ``derivation`` and ``codegen`` consumers and the actions are checked by their
  declarations only: a derivation is displayed in general symbols and checked at its own points, codegen takes
  families and numbers as arguments, an action that evaluates the model it builds from every value given
  (``via_engine``) is covered by the engine's result).

A field that some consumer ignores without saying so fails the test; :func:`test_a_field_nobody_reads_is_caught`
shows it with a throwaway model that adds a field (the ``setup_time`` of issue 25) nobody computes.
"""

from __future__ import annotations

import dataclasses
import enum
import time
from fractions import Fraction

import pytest
from qderive.derivations import capabilities as C
from qderive.symbolic.capabilities import ask_consumer, option_name
from qderive.symbolic.errors import BudgetError, ParameterError, QderiveError
from qderive.symbolic.models import registered_models
from qderive.symbolic.models.vacation import VacationQueue
from qderive.symbolic.params import Kind, param, params_of

#: the simulators' short run: enough events that every field of the examples enters the sample path
SIM = {"customers": 1500, "replications": 2, "seed": 20251207, "quiet": True}


def _nudged(value):
    """Numbers 5 % up and down, then halved, doubled and times 20 (an integer one up and down, then halved; a
    list's first entry), in that order: the far values reach a field that does not bind near the example (a buffer
    R above H + 1 in two-flow binds at R / 2; SIP's cap T2 on the retransmission interval needs a timeout of
    several T1)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, value // 2]
    if isinstance(value, tuple):
        if not value:
            return []
        return [(v, *value[1:]) for v in _nudged(value[0])]
    try:
        if value == 0:
            return [Fraction(1, 10), Fraction(1, 2), 1]
        return [value * Fraction(21, 20), value * Fraction(19, 20), value / 2, value * 2, value * 20]
    except TypeError:
        return []


def candidates(cls, name: str, meta, value) -> list:
    """Other valid values of field ``name`` to try, in order (see the module docstring); None last for a field
    that may be left out."""
    default = {f.name: f.default for f in dataclasses.fields(cls)}.get(name)
    out = _candidates(cls, name, meta, value)
    return out + [None] if default is None and value is not None and None not in out else out


def _candidates(cls, name: str, meta, value) -> list:
    if meta.kind in (Kind.TIME_LAW, Kind.BATCH_LAW):
        current = value if meta.kind is Kind.TIME_LAW else None
        if current is None and meta.kind is Kind.TIME_LAW:  # none -> a law of the service's scale
            current = getattr(cls.example(), "service", None)
        laws = [law for _, law in C._law_examples(meta.kind, current) if type(law) is not type(value)]
        return laws + ([None] if value is not None and (meta.none_text is not None) else [])
    if meta.kind is Kind.CHOICE and isinstance(meta.choices, type) and issubclass(meta.choices, enum.Enum):
        return [m for m in meta.choices if m is not value]
    if meta.kind is Kind.FLAG:
        return [not value]
    if value is None:
        numbers = [Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(2), 10]
        if meta.kind is Kind.NUMBERS:
            return [(v,) * (meta.count or 2) for v in numbers]
        return [*numbers, 1, 2]
    return _nudged(value)


_PERTURBED: dict = {}


def perturbed(cls, base, name: str, meta):
    """The valid models with field ``name`` changed (the model's own domain rules refuse some candidates); when
    none is valid, each candidate with one other field left out (None), for two fields given one or the other
    (``--service LAW`` or ``--service-rates MU1,MU2``). Kept per (model class, base, field): the companions'
    search asks for the same ones many times, and each model is validated on construction (frozen models hash)."""
    try:
        key = (cls, base, name)
        return list(_PERTURBED[key]) if key in _PERTURBED else list(_PERTURBED.setdefault(
            key, _perturbed(cls, base, name, meta)))
    except TypeError:  # a field value that does not hash
        return _perturbed(cls, base, name, meta)


def _perturbed(cls, base, name: str, meta):
    out = []
    values = candidates(cls, name, meta, getattr(base, name))
    for value in values:
        try:
            out.append(dataclasses.replace(base, **{name: value}))
        except (ParameterError, ValueError, TypeError):
            continue
    if out:
        return out
    optional = [f.name for f in dataclasses.fields(cls) if f.default is None and f.name != name
                and getattr(base, f.name) is not None]
    for other in optional:
        for value in values:
            try:
                out.append(dataclasses.replace(base, **{name: value, other: None}))
            except (ParameterError, ValueError, TypeError):
                continue
    return out


def _result(role, consumer, model):
    """What the consumer computes for the model (compared as text: lists, dicts and numbers alike)."""
    if role == "engine":
        return repr(model.evaluate().as_dict())
    if role == "response":
        return repr(model.evaluate(wait_moments=2, sojourn_moments=1).response)
    if role == "simulator":
        return repr(consumer(model, **SIM).summary()["measures"])
    raise AssertionError(role)


def companions(cls, base, name: str, meta) -> list:
    """The example with one *other* field changed (each valid candidate) -- or, when the field has no valid other
    value on any of those, with two: the bases on which a field that does not apply to the example (a retry count
    without Retry-After, a second service law without a second flow) or does not bind there is changed. Generic:
    no list of field dependencies."""
    fields = [(f.name, m) for f, m in params_of(cls) if f.name != name]
    optional = [f.name for f in dataclasses.fields(cls) if f.default is None and f.name != name]
    # choices first (a control, a policy, a law family), then a choice with an option left out (--control none
    # without --thresholds), then numbers, the far values first: a field that does not bind near the example
    # binds far from it
    structural = {Kind.CHOICE, Kind.FLAG, Kind.TIME_LAW, Kind.BATCH_LAW}
    choices = [m for other, fm in fields if fm.kind in structural for m in perturbed(cls, base, other, fm)]
    numbers = [m for other, fm in fields if fm.kind not in structural
               for m in reversed(perturbed(cls, base, other, fm))]
    combos = []
    for other, fm in fields:
        for value in candidates(cls, other, fm, getattr(base, other)):
            for gone in optional:
                if gone != other and getattr(base, gone) is not None:
                    try:
                        combos.append(dataclasses.replace(base, **{other: value, gone: None}))
                    except (ParameterError, ValueError, TypeError):
                        continue
    one = _hinted(choices + combos + numbers, base, _hints(cls, base, name, meta))
    usable = [m for m in one if perturbed(cls, m, name, meta)]
    if usable:
        return usable
    return [m2 for m in one for m2 in _hinted([m2 for other, fm in fields for m2 in perturbed(cls, m, other, fm)], m,
                                               _hints(cls, m, name, meta))
            if perturbed(cls, m2, name, meta)]


def _hints(cls, base, name, meta) -> set:
    """The other fields that the model's own errors name when ``name`` is changed on ``base`` (``--retries`` needs
    ``--retry-after``): the companions that change them are tried first."""
    named = set()
    for value in candidates(cls, name, meta, getattr(base, name)):
        try:
            dataclasses.replace(base, **{name: value})
        except (ParameterError, ValueError, TypeError) as err:
            text = str(err)
            named |= {f.name for f in dataclasses.fields(cls) if f.name != name
                      and (option_name(cls, f.name) in text or f.name.replace("_", "-") in text)}
    return named


def _hinted(models, base, hints) -> list:
    if not hints:
        return models
    first = [m for m in models if any(getattr(m, h) != getattr(base, h) for h in hints)]
    return first + [m for m in models if all(getattr(m, h) == getattr(base, h) for h in hints)]


def verdict(cls, role: str, consumer, base, name: str, meta, cache: dict, search: bool = True) -> str | None:
    """None when ``consumer`` reads, refuses or declares independence of field ``name`` (on the example, or, if
    the field does not apply or bind there, on the example with one or two other fields changed); else what
    went wrong."""
    declared = getattr(consumer, "independent", {}) or {}
    if name in declared:
        return None
    if role in ("size", "optimize") and getattr(consumer, "via_engine", False):
        return None  # the engine's verdict covers it (the action evaluates the model it builds)
    if _reads(cls, role, consumer, base, name, meta, cache):
        return None
    for other in companions(cls, base, name, meta) if search else ():
        if _reads(cls, role, consumer, other, name, meta, cache, near=2):
            return None
    return f"{role} of {cls.name} ignores {name} (neither reads, refuses nor declares it)"


def _reads(cls, role, consumer, base, name, meta, cache, near=None) -> bool:
    """True when changing ``name`` on ``base`` changes the consumer's result or is refused naming ``name`` (``near``:
    only the first values tried; ``cache``: results by model, for this consumer)."""
    computed = role in ("engine", "response", "simulator")
    for model in perturbed(cls, base, name, meta)[:near]:
        refusal = ask_consumer(consumer, model, frozenset({"wait_moments"}) if role == "response" else frozenset())
        if refusal is not None:
            if refusal.field == name:
                return True
            continue  # refused for another field: try the next value
        if not computed:
            continue
        key = repr(base)
        if key not in cache:
            try:
                refused = ask_consumer(consumer, base) is not None
                cache[key] = None if refused else _result(role, consumer, base)
            except (QderiveError, ValueError, ArithmeticError):
                cache[key] = None  # the base is not computed: nothing to compare with
        if cache[key] is None:
            return False
        try:
            got = _result(role, consumer, model)
        except ParameterError as err:
            if name in str(err) or option_name(cls, name) in str(err):
                return True  # refused while computing (late, but named)
            continue
        except (QderiveError, ValueError, ArithmeticError):  # a far value beyond a size limit, ...: the next one
            continue
        if got != cache[key]:
            return True
    return False


#: cheaper bases: where a field is only a cost (the fixed-point scan's grid: its least allowed value; the field is
#: still changed from there), and where more fields bind at the base, so that fewer need the companions' search
#: (sip-retransmission without a timeout and with a second, non-INVITE flow: t2, the second flow's service and the
#: discipline bind there; every field is still changed from that base, timeout and rate_non_invite included:
#: 26 -> 11 CPU s)
CHEAPER = {"sip-retransmission": {"scan_points": 8, "timeout": None, "rate_non_invite": Fraction(1, 10)}}


def silent_fields(cls) -> list[str]:
    """Every (consumer, field) pair of model ``cls`` that fails (see the module docstring)."""
    base = dataclasses.replace(cls.example(), **CHEAPER.get(cls.name, {}))
    failures = []
    for role in C.roles_of(cls):
        consumer = C.load(cls, role)
        cache: dict = {}
        for f, meta in params_of(cls):
            why = verdict(cls, role, consumer, base, f.name, meta, cache)
            if why is not None:
                failures.append(why)
    return failures


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "sip-retransmission" else n
                                  for n in sorted(registered_models())])  # sip-retransmission: about 11 s
def test_every_consumer_reads_refuses_or_declares_every_field(name):
    assert silent_fields(registered_models()[name]) == []


def test_a_field_nobody_reads_is_caught():
    """The issue's experiment: ``setup_time`` added to the vacation queue, which no consumer computes. Every
    numeric consumer returns the unchanged answer; the test names each of them."""

    @dataclasses.dataclass(frozen=True)
    class WithSetup(VacationQueue):  # no ``name``: not registered; its consumers are vacation-infinite's
        setup_time: object = param("setup time before each busy period", default=0)

    failures = []
    meta = dict((f.name, m) for f, m in params_of(WithSetup))["setup_time"]
    base = WithSetup.example()
    for role in ("engine", "simulator", "derivation"):
        # on the example only (the search through other fields' values would find nothing either, at length)
        why = verdict(WithSetup, role, C.load(WithSetup, role), base, "setup_time", meta, {}, search=False)
        if why is not None:
            failures.append(role)
    assert failures == ["engine", "simulator", "derivation"]


def test_support_matrix_names_the_refused_field():
    cls = registered_models()["vacation-finite"]
    columns, rows = C.support_matrix(cls)
    assert {"eval", "simulate", "wait_tail", "wait_moments"} <= set(columns)
    cells = {(field, label): dict(zip(columns, cells)) for field, label, cells in rows}
    assert cells[("service", "lognormal")]["wait_tail"] == "yes"  # the transform inverted (branch lg28)
    assert cells[("vacation", "lognormal")]["wait_tail"] == "yes"
    assert cells[("setup", "lognormal")]["wait_tail"] == "yes"  # its counts from its size-biased laws (branch lb26)
    # (a constant setup computes since branch sh26, by the shifted sums (SF); a uniform one does not)
    assert cells[("setup", "uniform")]["wait_tail"].startswith("refused (setup)")
    assert cells[("service", "empirical")]["wait_tail"] == "yes"  # exact sums or certified brackets (issue 28)
    assert cells[("service", "empirical")]["wait_moments"] == "yes"


def test_support_page_is_current():
    """``docs/reference/support.md`` is generated from the declarations (``python tools/support_page.py``)."""
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "reference" / "support.md"
    assert page.read_text(encoding="utf-8") == C.support_page(), "run python tools/support_page.py"


def test_a_refusal_that_depends_on_the_laws_comes_before_any_work():
    """Issue 25: ``--wait-tail`` with an empirical service in the finite room (a service with kinks that no exact
    sum covers with a phase-type vacation) was refused after the model was solved (71 s at a large room); the
    response law's declaration refuses it from the laws alone, before the engine runs: at r = 10^5, whose solve
    alone takes minutes, the refusal takes well under a second."""
    from qderive.symbolic.batches import Geometric
    from qderive.symbolic.laws import Empirical, Gamma, Uniform
    from qderive.symbolic.models.vacation import FiniteVacationQueue

    # (an empirical service with Erlang vacations has tails since issue 28, with a gamma vacation certified bounds
    # (F7), refused here by the budget lattice-work before any work; a gamma service of non-integer shape with a
    # constant vacation has no exact sum)
    # (a constant vacation computes since branch sh26, the sums (SF): a uniform one stays refused)
    model = FiniteVacationQueue.from_load(Fraction(3, 2), Geometric(5), Gamma(Fraction(5, 2), Fraction(1, 100)),
                                          Uniform(Fraction(1, 40), Fraction(1, 8)), 100_000)
    started = time.process_time()  # CPU: a loaded machine does not move it
    with pytest.raises(ParameterError) as err:
        model.evaluate(wait_tail=["0.1"])
    assert time.process_time() - started < 1.0  # solving r = 100000 first would take minutes
    text = str(err.value)
    # the option named is the law with kinks (the constant vacation), the reason the service's
    assert text.startswith("--wait-tail with --vacation uniform:") and "in vacation-finite:" in text
    assert err.value.refusal.field == "vacation" and "service time gamma:shape=2.5" in text and "not phase-type" in text
    model = FiniteVacationQueue.from_load(Fraction(3, 2), Geometric(5), Empirical((Fraction(1, 100), Fraction(1, 50))),
                                          Gamma(Fraction(5, 2), Fraction(3, 40)), 100_000)
    started = time.process_time()
    with pytest.raises(BudgetError, match="lattice-work"):
        model.evaluate(wait_tail=["0.1"])
    assert time.process_time() - started < 1.0


def test_list_model_prints_the_support_matrix(capsys):
    from qderive.derivations.cli import main

    assert main(["list", "vacation-finite"]) == 0
    out = capsys.readouterr().out
    # (every vacation law's tails are computed since branch lg28: a constant setup's are refused)
    assert "--service empirical" in out and "wait_tail, wait_quantile, sojourn_tail, sojourn_quantile: refused (setup)" in out
    assert main(["list", "no-such-model"]) == 2


def test_an_option_level_refusal_is_the_one_refusal_type():
    """The SIP engine's and simulator's option-level refusals are the protocol's one Refusal: the command line's
    one-line text (``--option = value: reason``, written out here), and the model field behind the option (an option
    shared by two fields names its first) with the protocol's own text."""
    from qderive.numeric.engines import sip as engine
    from qderive.numeric.simulation import sip as simulator
    from qderive.symbolic.capabilities import Refusal

    model = registered_models()["sip-retransmission"].example()
    refusal = Refusal.of_option("--duplicate-cost", "must be 1 here", "1/2")
    assert (refusal.option, refusal.reason, refusal.value) == ("--duplicate-cost", "must be 1 here", "1/2")
    assert str(refusal.error()) == "--duplicate-cost = 1/2: must be 1 here" == str(refusal)
    field = refusal.for_model(model)
    assert (field.field, field.why, field.option) == ("duplicate_cost", "must be 1 here", "")
    assert str(field.error(model, "eval")).startswith("eval with --duplicate-cost ")
    # both SIP consumers answer with it (a combination each refuses: vacations under threshold, a capacity under
    # priority)
    threshold = dataclasses.replace(model, control="threshold", thresholds=(2, 5), rate_non_invite=Fraction(1),
                                    vacation=model.service)
    assert isinstance(simulator.supports(threshold), Refusal) and simulator.supports(threshold).option == "vacation"
    assert isinstance(engine.supports(threshold), Refusal)
