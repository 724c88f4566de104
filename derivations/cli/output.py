"""Formatting results for the command line: JSON numbers in float64, decimal strings with --digits."""

from __future__ import annotations

import math

__all__ = ["format_value", "format_record", "payload"]


def format_value(value, digits: int | None):
    """A measure for JSON: a float (float64), or a string of ``digits`` significant digits.

    A float64 result outside the double range arrives as an mpmath number (the precision
    policy keeps it) and is printed as a decimal string of 17 significant digits.
    """
    if isinstance(value, dict):
        return {k: format_value(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [format_value(v, digits) for v in value]
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    import mpmath

    if digits is None:
        if isinstance(value, float):
            if not math.isfinite(value):  # the policy never returns one; refuse rather than print it
                raise RuntimeError("internal error: a non-finite float64 measure reached the output")
            return value
        with mpmath.workdps(30):
            return mpmath.nstr(mpmath.mpf(value), 17, min_fixed=-4, max_fixed=17)
    with mpmath.workdps(digits + 10):
        return mpmath.nstr(mpmath.mpf(value), digits, min_fixed=-4, max_fixed=digits)


def payload(record, include=()) -> dict:
    """The JSON object of ``qderive eval``: model, parameters, precision, measures, notes."""
    digits = None if record.precision == "float64" else record.precision
    out = {
        "model": record.model.name,
        "parameters": record.model.parameters(),
        "precision": record.precision,
        "measures": {k: format_value(v, digits) for k, v in record.as_dict().items()
                     if k in include or not _optional(record, k)},
    }
    if record.confirmed_digits is not None:
        out["confirmed_digits"] = "exact" if math.isinf(record.confirmed_digits) else round(record.confirmed_digits, 1)
    if record.working_digits is not None:
        out["working_digits"] = record.working_digits
    if record.notes:
        out["notes"] = list(record.notes)
    return out


def _optional(record, key) -> bool:
    for f, m in record.measure_fields():
        if f.name == key:
            return m.optional
    return False


def format_record(doc: dict) -> str:
    """The text form of :func:`payload`."""
    prec = doc["precision"]
    lines = [f"{doc['model']}  ({'float64' if prec == 'float64' else f'{prec} digits'})"]
    for key, value in doc["parameters"].items():
        if value is not None:
            lines.append(f"  {key:>26} = {value}")
    lines.append("")
    intervals = doc.get("bootstrap", {})
    for key, value in doc["measures"].items():
        lines.append(f"  {key:>26} = {value}")
        if intervals.get(key) is not None:  # eval --bootstrap B: the interval beside the measure
            level = f"{doc['bootstrap_confidence']:.4g}"
            lines.append(f"  {'':>26}   {level} bootstrap interval {_interval_text(intervals[key])}")
    for note in doc.get("notes", ()):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _interval_text(interval) -> str:
    """``[lo, hi]`` (6 significant digits), or the measure's shape of them (``{0.5: [lo, hi]}``, ``[[..], ..]``)."""
    if isinstance(interval, dict):
        return "{" + ", ".join(f"{k}: {_interval_text(v)}" for k, v in interval.items()) + "}"
    if interval is None:
        return "-"
    if len(interval) == 2 and all(isinstance(x, float) for x in interval):
        return f"[{interval[0]:.6g}, {interval[1]:.6g}]"
    return "[" + ", ".join(_interval_text(v) for v in interval) + "]"
