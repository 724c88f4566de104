"""``Param.check``: a rule object (a bound or any predicate with its message), checked at construction.

A law or model states any rule (``check="> 1"``, ``AtLeast(2)``, ``Rule(lambda k: k % 2 == 0, "must be even")``);
a wrong rule fails at the class definition with a one-line error; the existing messages are unchanged. The
references are exact comparisons written here, not the code's output.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction as F

import numpy as np
import pytest

import qderive as qd
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.laws.base import TimeLaw
from qderive.symbolic.params import (
    AtLeast,
    AtMost,
    Between,
    Bound,
    GreaterThan,
    LessThan,
    Positive,
    Rule,
    param,
    params_of,
)


@pytest.mark.parametrize("text, inside, outside, message", [
    ("> 0", [F(1, 10**30), 5], [0, -1], "must be > 0"),
    (">= 0", [0, 3], [F(-1, 10**30)], "must be >= 0"),
    (">= 1", [1, F(3, 2)], [F(99, 100)], "must be >= 1"),
    ("[0, 1]", [0, 1, F(1, 2)], [F(-1, 10**9), F(101, 100)], "must lie in [0, 1]"),
    ("> 1", [F(11, 10)], [1, 0], "must be > 1"),
    ("< 1", [F(99, 100), -5], [1], "must be < 1"),
    ("(0, 1/2]", [F(1, 2), F(1, 10)], [0, F(51, 100)], "must lie in (0, 0.5]"),  # exact bounds shown as decimals
    ("[0.25, 4)", [F(1, 4), F(399, 100)], [4, F(24, 100)], "must lie in [0.25, 4)"),
])
def test_a_bound_written_as_text(text, inside, outside, message):
    b = Bound.parse(text)
    assert all(b.holds(v) for v in inside) and not any(b.holds(v) for v in outside)
    assert b.message == message and Bound.parse(b.text) == b


def test_the_named_bounds():
    assert Positive() == Bound.parse("> 0") and AtLeast(1) == Bound.parse(">= 1")
    assert Between(0, 1) == Bound.parse("[0, 1]") and GreaterThan(2) == Bound.parse("> 2")
    assert AtMost(3) == Bound.parse("<= 3") and LessThan(F(1, 3)) == Bound.parse("< 1/3")
    assert Between(0, 1, lo_open=True).text == "(0, 1]"


@pytest.mark.parametrize("spec", ["positive", "> one", "=> 1", "[1, 0]", "", 3, (0, 1)])
def test_a_wrong_rule_fails_at_the_class_definition(spec):
    with pytest.raises(TypeError, match="is not a rule"):
        @dataclass(frozen=True)
        class Broken(TimeLaw):
            mean: object = param("mean", check=spec)


def test_a_bare_function_needs_its_message():
    with pytest.raises(TypeError, match="needs the message"):
        param("k", check=lambda k: k % 2 == 0)
    with pytest.raises(TypeError, match="give the message"):
        Rule(lambda k: k % 2 == 0, "")


@dataclass(frozen=True)
class _Laws:
    """Fields with the four historical rules and two new ones (what a new law would state)."""

    positive: object = param("p", check="> 0")
    ratio: object = param("r", check="[0, 1]")
    above_one: object = param("a", check="> 1")
    even: object = param("k", check=Rule(lambda k: k % 2 == 0, "must be even"))


def test_the_rules_apply_with_their_messages():
    from qderive.symbolic.params import apply_check

    metas = {f.name: m for f, m in params_of(_Laws)}
    for name, value, message in (("positive", F(-1, 2), "positive = -0.5: must be > 0"),
                                 ("ratio", F(3, 2), "ratio = 1.5: must lie in [0, 1]"),
                                 ("above_one", 1, "above_one = 1: must be > 1"),
                                 ("even", 3, "even = 3: must be even")):
        with pytest.raises(ParameterError) as err:
            apply_check(value, metas[name], name)
        assert str(err.value) == message
    for name, value in (("positive", F(1, 10**40)), ("ratio", 1), ("above_one", F(1001, 1000)), ("even", 4)):
        apply_check(value, metas[name], name)


def test_the_laws_keep_their_messages():
    """The messages of the registered laws and models are those of the former table."""
    for call, message in ((lambda: qd.Erlang(4, 0), "mean = 0: must be > 0"),
                          (lambda: qd.Geometric(F(1, 2)), "mean = 0.5: must be >= 1"),
                          (lambda: qd.HyperExponential((F(3, 2), F(-1, 2)), (1, 2)), "must lie in [0, 1]")):
        with pytest.raises(ParameterError, match=message.replace("[", r"\[").replace("]", r"\]")):
            call()


def test_generated_code_checks_any_bound():
    """The generated ``_check`` handles a bound outside the historical table (a law with ``check="> 1"``)."""
    import math

    from qderive.derivations.export.codegen import CHECK_HELPER

    namespace = {"math": math, "numpy": np}
    exec(CHECK_HELPER, namespace)  # the helper text that every generated module ships
    check = namespace["_check"]
    assert check("a", 1.5, "> 1") == 1.5 and check("p", 0.5, "(0, 1/2]") == 0.5
    for value, constraint in ((1.0, "> 1"), (0.0, "(0, 1/2]"), (0.75, "(0, 1/2]"), (float("nan"), "> 1")):
        with pytest.raises(ValueError, match="must be finite and"):
            check("x", value, constraint)
    assert list(check("v", np.array([2.0, 3.0]), "> 1")) == [2.0, 3.0]
    with pytest.raises(ValueError):
        check("v", np.array([2.0, 1.0]), "> 1")
