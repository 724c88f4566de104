"""Parameter sweeps: a model evaluated on a Cartesian grid of its parameters (``qderive sweep``, ``qd.sweep``).

One row per grid point, in grid order (:mod:`qderive.symbolic.grid`: the model's option order,
the last swept option varying fastest):

* ``point`` -- the point's index in the whole grid (0-based), so shards and resumed runs
  concatenate, after sorting by it, to the full run;
* a column per swept option, named as the option without its dashes (``load``, ``capacity``,
  ``vacation_policy``, ``thresholds``): a float for a number, an int for an integer, the input
  text otherwise (a law's specification, ``5,10,20`` for a tuple);
* a column per measure key of ``qderive eval --json``, with the values exactly as ``eval``
  prints them (float64 floats; decimal strings with ``digits``; a float64 value outside the
  double range as a decimal string). Nested measures are flattened as ``key.sub``: a
  distribution's entries by state, ``p.0``, ``p.1``, ...; tails and quantiles by the times and
  levels as given, ``wait_tail.0.5``; moments by their order from 1, ``wait_moments.1``;
* ``precision``, ``confirmed_digits``, ``working_digits``, ``notes`` (joined by `` | ``) as in
  ``eval --json``, and ``error``: empty, or the one-line error of a point that could not be
  evaluated (its measures are then empty).

Each point is :meth:`Model.evaluate` of its own model (:func:`qderive.numeric.sweep.evaluate_chunk`):
float64 first, recomputed with mpmath only where the precision policy flags it. The points
run in chunks on an executor (:mod:`qderive.numeric.parallel`); the result does not depend on
the executor, the number of workers or shards. With an output file, finished chunks are
appended to ``FILE.partial`` (JSON lines) as they complete and the file itself is written,
sorted, at the end; ``resume`` skips the points already in the file or its ``.partial``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

from ..symbolic.errors import ParameterError

__all__ = ["sweep", "run_grid", "flatten", "read_table", "write_table", "parse_shard", "SweepResult"]

#: the columns after the measures
TRAILER = ("precision", "confirmed_digits", "working_digits", "notes", "error")


def parse_shard(text) -> tuple[int, int]:
    """``"I/N"`` (or a pair) -> (I, N) with 0 <= I < N: the shard of the points with index % N == I."""
    if isinstance(text, (tuple, list)):
        parts = list(text)
    else:
        parts = str(text).split("/")
    try:
        i, n = (int(str(p).strip()) for p in parts)
    except ValueError:
        raise ParameterError("--shard", "must be I/N with integers 0 <= I < N (e.g. 0/4)", text) from None
    if n < 1 or not 0 <= i < n:
        raise ParameterError("--shard", "must be I/N with integers 0 <= I < N (e.g. 0/4)", text)
    return i, n


def flatten(key: str, value, out: dict) -> None:
    """``out[key] = value``, nested values as ``key.sub`` (module docstring: states from 0, moments from 1)."""
    if isinstance(value, dict):
        for sub, v in value.items():
            flatten(f"{key}.{sub}", v, out)
    elif isinstance(value, (list, tuple)):
        start = 1 if key.endswith("_moments") else 0
        for i, v in enumerate(value, start=start):
            flatten(f"{key}.{i}", v, out)
    else:
        out[key] = value


def _row(result, labels: dict, describe) -> dict:
    """The output row of one worker result (values formatted as ``eval --json`` prints them)."""
    from .cli.output import format_value

    index, measures, precision, confirmed, working, notes, error = result
    row = {"point": index, **labels}
    if error is not None:
        row.update({"precision": None, "confirmed_digits": None, "working_digits": None, "notes": "",
                    "error": describe(error)})
        return row
    fmt_digits = None if precision == "float64" else precision
    for key, value in measures.items():
        flatten(key, format_value(value, fmt_digits), row)
    if confirmed is not None:
        confirmed = "exact" if math.isinf(confirmed) else round(confirmed, 1)
    row.update({"precision": precision, "confirmed_digits": confirmed, "working_digits": working,
                "notes": " | ".join(notes), "error": ""})
    return row


def columns_of(rows, swept) -> list:
    """The columns: point, the swept options, the measures in order of first appearance, the trailer."""
    cols = ["point", *swept]
    seen = set(cols) | set(TRAILER)
    for row in rows:
        for key in row:
            if key not in seen:
                seen.add(key)
                cols.append(key)
    return cols + list(TRAILER)


# --------------------------------------------------------------------------------------
# Files: CSV (always), Parquet (with pyarrow)
# --------------------------------------------------------------------------------------


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ParameterError("--out", "a .parquet file needs pyarrow (pip install pyarrow); or write .csv",
                                 str(path)) from None
        return "parquet"
    raise ParameterError("--out", "must end in .csv or .parquet", str(path))


def _typed(text: str, float64: bool):
    """A CSV cell read back: None for empty, a float where the text is a float's repr (float64 rows), else text."""
    if text == "":
        return None
    if float64:
        try:
            f = float(text)
        except ValueError:
            return text
        if repr(f) == text and math.isfinite(f):
            return f
    return text


def read_table(path: Path, swept=()) -> list[dict]:
    """The rows of a sweep's output file (CSV or Parquet)."""
    path = Path(path)
    if _format_of(path) == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    import csv

    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for raw in csv.DictReader(fh):
            float64 = raw.get("precision") == "float64"
            row = {}
            for key, text in raw.items():
                if key == "point" or key == "working_digits":
                    row[key] = int(text) if text else None
                elif key in ("notes", "error", "precision"):
                    row[key] = text
                elif key == "confirmed_digits":
                    row[key] = None if text == "" else text if text == "exact" else float(text)
                else:
                    row[key] = _typed(text, float64 or key in swept)
            rows.append(row)
    return rows


def write_table(path: Path, rows: list[dict], columns: list) -> None:
    """Write ``rows`` to ``path`` (CSV or Parquet by its suffix), atomically (a temporary file renamed)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if _format_of(path) == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        data = {}
        for col in columns:
            values = [row.get(col) for row in rows]
            kinds = {type(v) for v in values if v is not None}
            if kinds == {int, float}:
                values = [None if v is None else float(v) for v in values]
            elif len(kinds) > 1:  # numbers and texts: a float64 value outside the double range, "exact" digits
                values = [None if v is None else v if isinstance(v, str) else repr(v) for v in values]
            data[col] = values
        pq.write_table(pa.table(data), tmp)
    else:
        import csv

        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="raise")
            writer.writeheader()
            for row in rows:
                writer.writerow({c: ("" if row.get(c) is None else row[c]) for c in columns})
    os.replace(tmp, path)


def _journal(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def _same(a, b) -> bool:
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


class SweepResult:
    """The rows (dicts, in grid order) and columns of a sweep, with counts of computed/resumed/failed points."""

    def __init__(self, rows, columns, computed, resumed, failed, seconds):
        self.rows, self.columns = rows, columns
        self.computed, self.resumed, self.failed, self.seconds = computed, resumed, failed, seconds

    def frame(self):
        """A pandas DataFrame of the rows when pandas is installed, else the list of rows."""
        try:
            import pandas
        except ImportError:
            return self.rows
        return pandas.DataFrame(self.rows, columns=self.columns)


def run_grid(cls, fixed: dict, axes: list, *, digits=None, include=(), options=None, executor="local",
             workers=None, scheduler=None, shard=None, out=None, resume=False, progress=False,
             describe=str, chunk_size=None) -> SweepResult:
    """Evaluate model class ``cls`` at every point of the grid ``axes`` (fields ``fixed`` in common).

    ``executor`` ``"local"``, ``"dask"`` or a :class:`concurrent.futures.Executor` instance;
    ``shard`` ``(I, N)``: only the points with index % N == I; ``out`` a .csv/.parquet path
    (with ``resume``: the points already in it, or in its ``.partial``, are not recomputed);
    ``describe(error)`` the text of a point's error. Returns a :class:`SweepResult`.
    """
    from ..numeric.engines.progress import Progress
    from ..numeric.sweep import evaluate_chunk
    from ..symbolic import grid
    from ..symbolic import limits as _limits

    started = time.perf_counter()
    options = dict(options or {})
    total = grid.grid_size(axes)
    first, step = shard if shard is not None else (0, 1)
    indices = range(first, total, step)
    swept = [a.name for a in axes]
    path = Path(out) if out is not None else None
    done: dict[int, dict] = {}
    journal = None
    if path is not None:
        _format_of(path)
        journal = _journal(path)
        if resume:
            if path.exists():
                done.update({row["point"]: row for row in read_table(path, swept)})
            if journal.exists():
                with open(journal, encoding="utf-8") as fh:
                    for line in fh:
                        if line.strip():
                            row = json.loads(line)
                            done[row["point"]] = row
            wanted = set(indices)
            for index, row in done.items():
                if index not in wanted:
                    raise ParameterError("--resume", f"{path} holds point {index}, which is not in this grid or shard "
                                         "(a different sweep?)", str(path))
                _, labels = grid.point_values(axes, index)
                for key, value in labels.items():
                    if not _same(row.get(key), value):
                        raise ParameterError("--resume", f"{path} has {key} = {row.get(key)} at point {index}, where "
                                             f"this grid has {value} (a different sweep?)", str(path))
        elif journal.exists():
            raise ParameterError("--out", f"an interrupted sweep left {journal}: continue it with --resume, or delete "
                                 "it", str(path))
    todo = [i for i in indices if i not in done]
    limits_now = _limits.current()
    from ..numeric import parallel

    pool_cm = parallel.executor(executor, workers, scheduler) if isinstance(executor, str) else None
    new: dict[int, dict] = {}
    labels_of = {}
    failed = 0
    with (pool_cm if pool_cm is not None else _given(executor)) as (pool, n_workers):
        size = chunk_size or max(1, min(256, math.ceil(len(todo) / max(1, 8 * n_workers)))) if pool is not None \
            else (chunk_size or 8)
        chunks = [todo[k:k + size] for k in range(0, len(todo), size)]

        def task(chunk):
            points = []
            for index in chunk:
                values, labels = grid.point_values(axes, index)
                labels_of[index] = labels
                points.append((index, values))
            return (cls, fixed, points, digits, tuple(include), options, limits_now)

        log = open(journal, "a", encoding="utf-8") if journal is not None and todo else None
        try:
            with Progress(len(todo), "points", quiet=not progress) as bar:
                def collect(results):
                    nonlocal failed
                    rows = []
                    for result in results:
                        row = _row(result, labels_of.pop(result[0]), describe)
                        failed += bool(row["error"])
                        new[row["point"]] = row
                        rows.append(row)
                    if log is not None:
                        log.write("".join(json.dumps(r) + "\n" for r in rows))
                        log.flush()
                    bar.update(len(new))

                if pool is None:
                    for chunk in chunks:
                        collect(evaluate_chunk(*task(chunk)))
                else:  # at most 4 chunks per worker in flight: bounded memory, and Ctrl-C stops at once
                    from concurrent.futures import FIRST_COMPLETED, wait

                    waiting, pending = iter(chunks), set()

                    def fill():
                        for chunk in waiting:
                            pending.add(pool.submit(evaluate_chunk, *task(chunk)))
                            if len(pending) >= 4 * n_workers:
                                return

                    fill()
                    while pending:
                        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for fut in finished:
                            pending.discard(fut)
                            collect(fut.result())
                        fill()
        finally:
            if log is not None:
                log.close()
    rows = [done[i] if i in done else new[i] for i in indices]
    columns = columns_of(rows, swept)
    if path is not None:
        write_table(path, rows, columns)
        if journal.exists():
            journal.unlink()
    return SweepResult(rows, columns, len(new), len(done), failed, time.perf_counter() - started)


class _given:
    """A caller's executor, used as is (not shut down)."""

    def __init__(self, ex):
        self.ex = ex

    def __enter__(self):
        return self.ex, getattr(self.ex, "_max_workers", 4)

    def __exit__(self, *exc):
        return False


# --------------------------------------------------------------------------------------
# The Python API
# --------------------------------------------------------------------------------------


def _python_axes(cls, fields: dict) -> tuple[dict, list]:
    """(fixed values, axes) from keyword arguments: a list (tuple, range, array) of values is swept, a range
    text ``"start:stop:step"`` for a number too; a field of several numbers and a shared option
    (``thresholds=(L, H, R)``) are swept when given as a *list* of tuples."""
    from ..symbolic import grid
    from ..symbolic.params import Kind
    from .cli.options import column_of, option_groups

    entries = []  # (name, fields, metas): a field, an alternative, a shared option (and each of its fields)
    for opt, _, fnames, metas in option_groups(cls, cls.alternatives):
        if len(fnames) == 1:
            entries.append((fnames[0], fnames, metas))
        else:
            entries.append((column_of(opt), fnames, metas))
            entries += [(name, (name,), (meta,)) for name, meta in zip(fnames, metas)]
    known = {e[0]: e for e in entries}
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ParameterError(unknown[0], f"is not a parameter of {cls.name!r}; its parameters are: "
                             f"{', '.join(known)}")
    fixed, axes = {}, []
    for name, fnames, metas in entries:
        if name not in fields:
            continue
        value = fields[name]
        many = len(fnames) > 1 or metas[0].kind in (Kind.NUMBERS, Kind.INTEGERS)
        if isinstance(value, str) and not many and metas[0].kind in (Kind.NUMBER, Kind.INTEGER) \
                and grid.is_range(value):
            items = grid.number_range(value, name, metas[0].kind is Kind.INTEGER)
        elif many:
            items = list(value) if isinstance(value, list) else None
        elif isinstance(value, (list, tuple, range)) or (hasattr(value, "ndim") and getattr(value, "ndim") == 1):
            items = [v.item() if hasattr(v, "item") else v for v in value]
        else:
            items = None
        if items is None:
            fixed.update({fnames[0]: value} if len(fnames) == 1 else dict(zip(fnames, value)))
            continue
        axes.append(grid.axis(name, fnames, metas, items))
    return fixed, axes


def sweep(model, *, digits=None, include=(), response=None, executor="local", workers=None, scheduler=None,
          shard=None, out=None, resume=False, progress=False, **fields):
    """Evaluate a model on the Cartesian grid of the given parameter lists; one record per point.

    ``model`` is a model class or its name (``"vacation-finite"``); ``fields`` its parameters
    (field names, or an alternative such as ``load``, or a shared option such as
    ``thresholds=(L, H, R)``): a list, tuple, range or 1-d array is swept, a ``"start:stop:step"``
    text of a number is an exact range, anything else is fixed; fields of several numbers and
    shared options are swept as a *list* of tuples. ``digits``, ``include`` (optional measures,
    ``("p",)``) and ``response`` (``{"wait_tail": ["0.5"]}``) are those of ``evaluate``;
    ``executor`` ``"local"`` (``workers`` processes), ``"dask"`` (``scheduler`` or a LocalCluster)
    or any :class:`concurrent.futures.Executor`; ``shard=(I, N)``; ``out`` a .csv/.parquet file
    (``resume=True`` skips the points already in it). The columns and values are those of
    ``qderive sweep`` (module docstring). Returns a pandas DataFrame when pandas is installed, else
    a list of dicts.

    >>> import qderive as qd
    >>> rows = qd.sweep("vacation-finite", load=[0.5, 0.9], capacity="2:4:2", batch=qd.Geometric(2),
    ...                 service=qd.Exponential(1), vacation=None)
    >>> [(r["load"], r["capacity"]) for r in (rows.to_dict("records") if hasattr(rows, "to_dict") else rows)]
    [(0.5, 2), (0.5, 4), (0.9, 2), (0.9, 4)]
    """
    from ..symbolic.models import model_class

    cls = model_class(model) if isinstance(model, str) else model
    from .capabilities import has

    if not has(cls, "engine"):
        raise ParameterError(f"model {cls.name!r} has no numeric engine to sweep")
    fixed, axes = _python_axes(cls, fields)
    result = run_grid(cls, fixed, axes, digits=digits, include=include, options=response or {}, executor=executor,
                      workers=workers, scheduler=scheduler, shard=None if shard is None else parse_shard(shard),
                      out=out, resume=resume, progress=progress)
    return result.frame()


def report(result: SweepResult, out, stream=None) -> None:
    """One line on stderr: what was written, computed, resumed, failed and how long it took."""
    stream = sys.stderr if stream is None else stream
    failed = f", {result.failed} with an error (see the column error)" if result.failed else ""
    print(f"qderive sweep: {len(result.rows)} points in {out} ({result.computed} computed, {result.resumed} resumed"
          f"{failed}) in {result.seconds:.1f} s", file=stream)
