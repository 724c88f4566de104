"""Command-line options generated from a model's fields (and a request's), and their parsing.

The options of ``qderive eval MODEL`` are the model's :class:`~qderive.symbolic.params.Param`
fields: ``--capacity`` for ``capacity``, a law specification for a law field, a choice for
an Enum, one comma-separated option for fields that share it (``--thresholds L,H,R``), a
mutually exclusive group for an :class:`~qderive.symbolic.models.base.Alternative`
(``--load | --rate``). Parsing goes through the same exact parsers as the Python API;
an error that names a field is reported with its option (``--capacity = 0: must be >= 1``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ...symbolic.errors import ParameterError
from ...symbolic.params import Kind, params_of, parse_value

__all__ = ["add_fields", "parse_fields", "option_of", "rename_error", "parse_grid", "column_of", "option_groups"]


def option_of(f, meta) -> str:
    return meta.option or "--" + f.name.replace("_", "-")


def _help(meta, default=dataclasses.MISSING) -> str:
    text = meta.help
    if meta.units:
        text += f" [{meta.units}]"
    if meta.kind is Kind.TIME_LAW:
        from ...symbolic.laws import TimeLaw

        text += ": " + TimeLaw.help_text() + (f" | {meta.none_text}" if meta.none_text else "")
    elif meta.kind is Kind.BATCH_LAW:
        from ...symbolic.batches import BatchLaw

        text += ": " + BatchLaw.help_text()
    if default is not dataclasses.MISSING and default is not None and meta.kind is not Kind.FLAG:
        from ...symbolic.params import show_value

        text += f" (default {show_value(default)})"
    return text.replace("%", "%%")


def add_fields(parser: argparse.ArgumentParser, cls, omit=(), alternatives=(), optional=(), lists: bool = False) -> None:
    """Add one option per Param field of ``cls`` (fields in ``omit`` left out, those in ``optional`` not
    required); ``lists``: a choice may be a list (``qderive sweep``), so argparse does not check it
    (:func:`parse_grid` does)."""
    shared: dict[str, list] = {}
    alt_for = {a.field: a for a in alternatives}
    for f, meta in params_of(cls):
        if not meta.cli or f.name in omit:
            continue
        opt = option_of(f, meta)
        if meta.part is not None:
            shared.setdefault(opt, []).append((f, meta))
            continue
        has_default = (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
                       or f.name in optional)
        kwargs = {"dest": f"field_{f.name}", "help": _help(meta, f.default), "metavar": meta.metavar}
        if meta.kind is Kind.FLAG:
            kwargs.pop("metavar")
            parser.add_argument(opt, action="store_true", **kwargs)
            continue
        if meta.kind is Kind.CHOICE:
            if lists:
                kwargs["metavar"] = "{" + ",".join(c.value for c in meta.choices) + "}[,...]"
            else:
                kwargs["choices"] = [c.value for c in meta.choices]
                kwargs.pop("metavar")
        if meta.kind in (Kind.TIME_LAW, Kind.BATCH_LAW):
            kwargs["metavar"] = "LAW"
        alt = alt_for.get(f.name)
        if alt is not None:
            group = parser.add_mutually_exclusive_group(required=not has_default)
            group.add_argument(opt, **kwargs)
            group.add_argument("--" + alt.name.replace("_", "-"), dest=f"alt_{alt.name}", help=_help(alt.param),
                               metavar=alt.param.metavar)
            continue
        parser.add_argument(opt, required=not has_default, **kwargs)
    for opt, members in shared.items():
        members.sort(key=lambda fm: fm[1].part)
        names = ",".join(m.metavar or f.name for f, m in members)
        required = any(f.default is dataclasses.MISSING and f.name not in optional for f, _ in members)
        helps = "; ".join(f"{m.metavar or f.name}: {m.help}" for f, m in members)
        parser.add_argument(opt, dest="shared_" + opt.lstrip("-").replace("-", "_"), required=required,
                            metavar=names, help=helps.replace("%", "%%"))


def rename_error(err: ParameterError, cls, alternatives=()) -> ParameterError:
    """An error that names a field (``capacity``) reported with its option (``--capacity``; a field of a
    shared option as ``--thresholds H``)."""
    if err.context or err.constraint is None:
        return err
    names = {f.name: option_of(f, m) + (f" {m.metavar or f.name}" if m.part is not None else "")
             for f, m in params_of(cls)}
    names.update({f.name.replace("_", "-"): option_of(f, m) for f, m in params_of(cls)})
    names.update({a.name: "--" + a.name.replace("_", "-") for a in alternatives})
    if err.name in names:
        return ParameterError(names[err.name], err.constraint, err.value)
    return err


def parse_fields(args: argparse.Namespace, cls, omit=(), alternatives=()) -> dict:
    """Field values from parsed options: numbers exact, laws parsed with their option as context."""
    values: dict = {}
    shared: dict[str, list] = {}
    chosen: dict[str, list] = {}  # members of a shared option that the action chooses (omitted)
    for f, meta in params_of(cls):
        if not meta.cli:
            continue
        opt = option_of(f, meta)
        if f.name in omit:
            if meta.part is not None:
                chosen.setdefault(opt, []).append((f, meta))
            continue
        if meta.part is not None:
            shared.setdefault(opt, []).append((f, meta))
            continue
        text = getattr(args, f"field_{f.name}", None)
        if text is None:
            continue
        values[f.name] = _parse_one(text, meta, opt)
    for opt, members in shared.items():
        text = getattr(args, "shared_" + opt.lstrip("-").replace("-", "_"), None)
        if text is None:
            continue
        parts = [p.strip() for p in text.split(",")]
        if chosen.get(opt) and len(parts) == len(members) + len(chosen[opt]):
            # the old spelling with every member (``optimize --thresholds L,H,R``): the chosen ones are not used
            every = sorted(members + chosen[opt], key=lambda fm: fm[1].part)
            kept = [(fm, part) for fm, part in zip(every, parts) if fm in members]
            names = ",".join(m.metavar or f.name for f, m in every)
            print(f"note: {opt} {names}: {', '.join(m.metavar or f.name for f, m in chosen[opt])} "
                  f"{'is' if len(chosen[opt]) == 1 else 'are'} chosen by this command; the given "
                  f"value{'' if len(chosen[opt]) == 1 else 's'} {'is' if len(chosen[opt]) == 1 else 'are'} not used "
                  f"(give {opt} {','.join(part for _, part in kept)})", file=sys.stderr)
            members, parts = [fm for fm, _ in kept], [part for _, part in kept]
        if len(parts) != len(members):
            raise ParameterError(opt, f"expects {len(members)} values separated by ',' "
                                 f"({','.join(m.metavar or f.name for f, m in members)})", text)
        for (f, meta), part in zip(sorted(members, key=lambda fm: fm[1].part), parts):
            values[f.name] = _parse_one(part, meta, f"{opt} {meta.metavar or f.name}")
    for alt in alternatives:
        text = getattr(args, f"alt_{alt.name}", None)
        if text is not None:
            values[alt.name] = _parse_one(text, alt.param, "--" + alt.name.replace("_", "-"))
    return values


def _parse_one(text, meta, opt):
    if meta.kind is Kind.FLAG:
        return bool(text)
    if meta.kind in (Kind.TIME_LAW, Kind.BATCH_LAW):
        if meta.none_text is not None and text.strip().lower() == meta.none_text:
            return None
        if meta.kind is Kind.TIME_LAW:
            from ...symbolic.laws import TimeLaw

            return TimeLaw.parse(text, opt)
        from ...symbolic.batches import BatchLaw

        return BatchLaw.parse(text, opt)
    return parse_value(text, meta, opt, list_sep=",")


# --------------------------------------------------------------------------------------
# Grids of `qderive sweep`: any option given as a list or a range
# --------------------------------------------------------------------------------------

#: the kinds whose list is separated by ',' and may contain ranges (their single values have neither ',' nor ':')
_SCALAR_KINDS = (Kind.NUMBER, Kind.INTEGER, Kind.CHOICE)


def column_of(opt: str) -> str:
    """The output column of an option: ``--vacation-policy`` -> ``vacation_policy``."""
    return opt.lstrip("-").replace("-", "_")


def _grid_items(text: str, metas, opt: str) -> tuple[bool, list]:
    """(swept?, the values of one option's text): a list/range of scalars, or a ';' list of laws or tuples."""
    from ...symbolic import grid

    if len(metas) == 1 and metas[0].kind in _SCALAR_KINDS:
        meta = metas[0]
        if meta.kind is Kind.CHOICE:
            items = grid.split_list(text, ",")
            return len(items) > 1, [_parse_one(t, meta, opt) for t in items]
        integer = meta.kind is Kind.INTEGER
        items = grid.expand_numbers(text, opt, integer)
        swept = len(items) > 1 or grid.is_range(text.strip())
        return swept, [_parse_one(t, meta, opt) if isinstance(t, str) else (int(t) if integer else t) for t in items]
    if len(metas) == 1 and metas[0].kind is Kind.FLAG:
        return False, [bool(text)]
    items = grid.split_list(text, ";")
    values = []
    for item in items:
        if len(metas) == 1 and metas[0].kind not in (Kind.NUMBERS, Kind.INTEGERS):
            values.append(_parse_one(item, metas[0], opt))  # a law, a text
            continue
        if len(metas) == 1:  # one field holding several numbers: each may be a range
            meta = metas[0]
            parts = grid.split_list(item, ",")
            choices = [grid.expand_numbers(p, opt, meta.kind is Kind.INTEGERS) for p in parts]
            import itertools

            for combo in itertools.product(*choices):
                values.append(_parse_one(",".join(grid.label_text(c) if not isinstance(c, str) else c
                                                  for c in combo), meta, opt))
            continue
        parts = grid.split_list(item, ",")
        if len(parts) != len(metas):
            names = ",".join(m.metavar or "?" for m in metas)
            raise ParameterError(opt, f"expects {len(metas)} values separated by ',' ({names}) in each ';'-separated "
                                 "item", item)
        choices = []
        for meta, part in zip(metas, parts):
            sub = f"{opt} {meta.metavar or ''}".strip()
            integer = meta.kind is Kind.INTEGER
            choices.append([_parse_one(t, meta, sub) if isinstance(t, str) else (int(t) if integer else t)
                            for t in grid.expand_numbers(part, sub, integer)])
        import itertools

        values += list(itertools.product(*choices))
    return len(items) > 1 or len(values) > 1, values


def option_groups(cls, alternatives=()) -> list[tuple]:
    """``(option, dest, fields, metas)`` for every command-line option of ``cls``, in field order: one field,
    an alternative (``--load``, right after its field) or the fields of a shared option (``--thresholds``,
    at its first part; ``fields`` and ``metas`` in part order); ``dest`` is its argparse destination."""
    alt_for = {a.field: a for a in alternatives}
    shared: dict = {}
    for f, meta in params_of(cls):
        if meta.part is not None:
            shared.setdefault(option_of(f, meta), []).append((f, meta))
    groups, seen = [], set()
    for f, meta in params_of(cls):
        if not meta.cli:
            continue
        opt = option_of(f, meta)
        if meta.part is not None:
            if opt not in seen:
                seen.add(opt)
                members = sorted(shared[opt], key=lambda fm: fm[1].part)
                groups.append((opt, "shared_" + opt.lstrip("-").replace("-", "_"), tuple(m[0].name for m in members),
                               tuple(m[1] for m in members)))
            continue
        groups.append((opt, f"field_{f.name}", (f.name,), (meta,)))
        alt = alt_for.get(f.name)
        if alt is not None:
            groups.append(("--" + alt.name.replace("_", "-"), f"alt_{alt.name}", (alt.name,), (alt.param,)))
    return groups


def parse_grid(args: argparse.Namespace, cls, alternatives=()) -> tuple[dict, list]:
    """(fixed field values, axes) of ``qderive sweep MODEL``: each option's text a single value (fixed) or a
    list/range (an :class:`~qderive.symbolic.grid.Axis`), in the model's option order (symbolic/grid.py)."""
    from ...symbolic import grid

    groups = option_groups(cls, alternatives)
    fixed, axes = {}, []
    for opt, dest, fields, metas in groups:
        text = getattr(args, dest, None)
        if text is None or text is False:
            continue
        swept, items = _grid_items(text if isinstance(text, str) else "", metas, opt) if not isinstance(text, bool) \
            else (False, [text])
        if not swept:
            item = items[0]
            fixed.update({fields[0]: item} if len(fields) == 1 else dict(zip(fields, item)))
            continue
        axes.append(grid.axis(column_of(opt), fields, metas, items))
    return fixed, axes
