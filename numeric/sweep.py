"""The worker side of ``qderive sweep``: evaluate chunks of grid points under the precision policy.

:func:`evaluate_chunk` is what a worker process (or a Dask worker) runs: it imports only the
numeric code and the model classes, builds each point's model from its field values
(``Model.from_values``: the same validation as ``eval``) and evaluates it with
:meth:`~qderive.symbolic.models.base.Model.evaluate` -- float64 first, recomputed with mpmath
only where the precision policy flags the point (:mod:`qderive.numeric.precision`), or at
``digits`` correct digits. A point whose input is invalid or whose evaluation fails with a
qderive error gives that error instead of measures; any other exception is a bug and propagates.
"""

from __future__ import annotations

from ..symbolic.errors import QderiveError

__all__ = ["evaluate_chunk", "PointResult"]


class PointResult(tuple):
    """``(point, measures, precision, confirmed_digits, working_digits, notes, error)``: a picklable tuple
    (measures: the record's :meth:`~qderive.symbolic.models.base.Measures.as_dict`; error: a QderiveError or None)."""

    __slots__ = ()


def evaluate_chunk(cls, fixed: dict, points: list, digits, include, options: dict, limits) -> list:
    """Evaluate ``points`` (``[(index, field values), ...]``) of model class ``cls`` with the fields
    ``fixed`` in common; returns one :class:`PointResult` per point, in the order given.

    ``limits`` are the caller's :class:`~qderive.symbolic.limits.Limits` (a worker process does not
    inherit ``--limit``); ``include`` and ``options`` are passed to ``evaluate`` as by ``qderive eval``.
    """
    import dataclasses

    from ..symbolic.limits import limits as within

    out = []
    with within(**dataclasses.asdict(limits)):
        for index, values in points:
            try:
                model = cls.from_values({**fixed, **values})
                record = model.evaluate(digits, include=include, **options)
            except QderiveError as err:
                out.append(PointResult((index, None, None, None, None, (), err)))
                continue
            out.append(PointResult((index, record.as_dict(), record.precision, record.confirmed_digits,
                                    record.working_digits, tuple(record.notes), None)))
    return out
