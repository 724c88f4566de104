"""Parameter grids of ``qderive sweep``: lists and ranges of option values, parsed exactly.

A swept option is an :class:`Axis`: a column name (the option without its leading dashes,
``-`` written ``_``: ``load``, ``capacity``, ``thresholds``) and its values, each a dict of
model field values (one field, or several for a shared option such as ``--thresholds L,H,R``),
with the label written in the output column. The grid is the Cartesian product of the axes in
the model's option order, the last axis varying fastest (as :func:`itertools.product`); point
``i`` of the grid is found by mixed-radix decoding, so a shard (every N-th point) never
materialises the whole product.

The list syntax (unambiguous although laws and thresholds contain commas):

* a number, an integer or a choice: ``a,b,c``, or a range ``start:stop:step`` (exact
  decimals, :func:`~qderive.symbolic.numbers.parse_number`, never evaluated; the stop is
  included when it lands on the grid), and lists of ranges: ``0.1:0.5:0.1,0.9``;
* anything whose single value has commas or colons itself -- laws, ``--thresholds L,H,R``,
  options of several numbers -- a list separated by ``;`` (``erlang:k=4,mean=0.015;exp:mean=0.015``,
  ``5,10,20;6,10,20``); inside one tuple each number may be a range (``5,6:12:1,20`` sweeps H).

>>> [str(v) for v in number_range("0.1:0.5:0.1", "--load")]
['1/10', '1/5', '3/10', '2/5', '1/2']
>>> [int(v) for v in number_range("10:1:-4", "--capacity", integer=True)]
[10, 6, 2]
>>> split_list("erlang:k=4,mean=0.015;exp:mean=0.015", ";")
['erlang:k=4,mean=0.015', 'exp:mean=0.015']
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from . import limits as _limits
from .errors import BudgetError, ParameterError
from .numbers import decimal_text, parse_number

__all__ = ["Axis", "number_range", "expand_numbers", "split_list", "grid_size", "point_values", "is_range", "label",
           "label_text", "axis"]


@dataclass(frozen=True)
class Axis:
    """One swept option: ``name`` (the column), ``values`` (dicts of field values), ``labels`` (column values)."""

    name: str
    values: tuple
    labels: tuple

    def __len__(self) -> int:
        return len(self.values)


def is_range(text: str) -> bool:
    """True for ``start:stop:step`` (two colons, no law specification)."""
    return text.count(":") == 2 and "=" not in text


def number_range(text: str, option: str, integer: bool = False) -> list[Fraction]:
    """The exact values start, start + step, ... of ``start:stop:step`` up to ``stop`` (included when on the grid).

    The step may be negative (a descending range); a step of 0, a step pointing away from
    ``stop`` and a range longer than the limit ``grid_points`` are errors naming ``option``.
    ``integer``: every value must be an integer.
    """
    parts = [p.strip() for p in text.split(":")]
    if len(parts) != 3 or not all(parts):
        raise ParameterError(option, "a range is start:stop:step (three numbers)", text)
    start, stop, step = (parse_number(p, option) for p in parts)
    if step == 0:
        raise ParameterError(option, "the step of a range must not be 0", text)
    if (stop - start) * step < 0:
        raise ParameterError(option, "the step of a range must point from start towards stop", text)
    count = int((stop - start) // step) + 1  # exact: Fractions
    allowed = _limits.current().grid_points
    if count > allowed:
        raise BudgetError("grid-points", count, allowed, f"{option} {text} has {count} values")
    values = [start + k * step for k in range(count)]
    if integer:
        bad = next((v for v in values if v.denominator != 1), None)
        if bad is not None:
            raise ParameterError(option, f"takes integers, but the range {text} contains {decimal_text(bad)}", text)
    return values


def split_list(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` (stripped); an empty item is an error."""
    items = [t.strip() for t in text.split(sep)]
    if not all(items):
        raise ParameterError(f"{text!r}: an empty value in the list (separate the values by {sep!r})")
    return items


def expand_numbers(text: str, option: str, integer: bool = False) -> list[str | Fraction]:
    """The items of a ``,``-separated list in which each item may be a range: texts, and Fractions from ranges."""
    out: list = []
    for item in split_list(text, ","):
        out += number_range(item, option, integer) if is_range(item) else [item]
    return out


def grid_size(axes) -> int:
    """The number of grid points (the product of the axes' lengths), within the limit ``grid_points``."""
    size = 1
    for axis in axes:
        if len(axis) == 0:
            raise ParameterError(axis.name, "has no values to sweep")
        size *= len(axis)
    allowed = _limits.current().grid_points
    if size > allowed:
        shape = " x ".join(f"{len(a)} {a.name}" for a in axes)
        raise BudgetError("grid-points", size, allowed, f"the grid is {shape}")
    return size


def point_values(axes, index: int) -> tuple[dict, dict]:
    """Point ``index`` of the grid (the last axis fastest): (field values, {column: label})."""
    values, labels = {}, {}
    sizes = [len(a) for a in axes]
    digits = []
    for n in reversed(sizes):
        index, k = divmod(index, n)
        digits.append(k)
    for axis, k in zip(axes, reversed(digits)):
        values.update(axis.values[k])
        labels[axis.name] = axis.labels[k]
    return values, labels


def label(meta, value):
    """The output column's value of one swept value: a float for a number, an int for an integer, the
    input text for anything else (a law's specification, a choice, ``5,10,20`` for a tuple)."""
    import enum

    from .params import Kind, show_value

    if value is None:
        return (meta.none_text if meta is not None else None) or "none"
    if meta is None:  # a value given without metadata: numbers as floats, anything else as its text
        return value if isinstance(value, (int, float, str)) else float(value) if isinstance(value, Fraction) \
            else show_value(value)
    if meta.kind in (Kind.NUMBER, Kind.INTEGER) and not isinstance(value, (bool, tuple, list)):
        from .numbers import exact, is_symbolic

        v = exact(value, "value")
        if not is_symbolic(v):
            return int(v) if meta.kind is Kind.INTEGER and v.denominator == 1 else float(v)
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (tuple, list)):
        return ",".join(label_text(v) for v in value)
    return show_value(value)


def label_text(value) -> str:
    """One number of a tuple label: exact decimal text (``0.015``, ``1/3``), an integer as such."""
    from .params import show_value

    return str(value) if isinstance(value, int) else show_value(value)


def axis(name: str, fields: tuple, metas: tuple, items: list) -> Axis:
    """The axis of option ``name`` setting ``fields`` (one, or the parts of a shared option) to each of
    ``items`` (a value per item; a tuple of part values for a shared option)."""
    values, labels = [], []
    for item in items:
        if len(fields) == 1:
            values.append({fields[0]: item})
            labels.append(label(metas[0], item))
        else:
            values.append(dict(zip(fields, item)))
            labels.append(",".join(label_text(v) for v in item))
    return Axis(name, tuple(values), tuple(labels))
