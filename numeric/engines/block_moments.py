"""The interpreter of the blocks' primitives on factorial-moment series, :class:`MomentPassage`, and
:func:`passage_moments`, the first-service law Y of a model's blocks as such series (the moments of the number present
when the first service of a busy period starts; ``docs/theory/blocks.md`` section 3). The engines of the blocks
(:mod:`~qderive.numeric.engines.blocks`, :mod:`~qderive.numeric.engines.blocks_shifts`) build on it."""

from __future__ import annotations

from math import factorial

from ...symbolic.blocks import blocks_of, passage
from ..kernels.idle_moments import SeriesPassage, arrival_series, level_time_series
from ..sequences import arrival_counts, batch_vectors
from .block_laws import numeric_counts

__all__ = ["ORDER", "MomentPassage", "model_blocks", "largest_threshold", "passage_moments"]

#: the series are carried to w^3: the variance of the number waiting needs the third factorial moments
ORDER = 3
#: the laws' series and count vectors of the last models (:meth:`MomentPassage._kept`)
_KEPT: dict = {}


class MomentPassage(SeriesPassage):
    """The interpreter of the primitives on factorial-moment series (module docstring), in ``ctx``: the kernel's
    :class:`~qderive.numeric.kernels.idle_moments.SeriesPassage` with the hooks read from ``model``'s laws (kept
    per law, rate, batch and context: a sweep asks again)."""

    def __init__(self, model, ctx, top: int, order: int = ORDER):
        self.model, self.ctx, self.top, self.order = model, ctx, max(top, 1), order
        self.zero = ctx.num(0)
        self.lam = ctx.num(model.rate)
        batch = model.batch
        # X(1 + w) = sum_j E[(X)_j] / j! w^j; s(w) = lambda (1 - X(1 + w)) = -lambda xi(w)
        self.batch = [ctx.num(1)] + [ctx.num(batch.factorial_moment(j)) / factorial(j)
                                     for j in range(1, self.order + 1)]
        self.xi = [self.zero] + self.batch[1:]
        self.x = batch_vectors(batch, self.top, ctx).pmf[: self.top + 1]
        self._reset()

    # -- the laws' series and count vectors (kept per law, rate, batch and context: a sweep asks again) --------
    def _kept(self, kind, law, make):
        ctx = self.ctx
        key = (kind, law, self.model.rate, self.model.batch, self.top, self.order, ctx.is_float64,
               getattr(ctx, "dps", None))
        try:
            return _KEPT[key]
        except (KeyError, TypeError):  # TypeError: an unhashable (symbolic) law is not kept
            value = make()
            try:
                if len(_KEPT) > 256:
                    _KEPT.clear()
                _KEPT[key] = value
            except TypeError:
                pass
            return value

    def _moments(self, law, n):
        return [self.ctx.num(1)] + [self.ctx.num(law.moment(j)) for j in range(1, n + 1)]

    def arrivals(self, law):
        """A_L(1 + w) = L*(-lambda xi(w)) = sum_j m_j (lambda xi)^j / j!: the customers arriving during one period
        of L (m_j its moments)."""
        return self._kept("arrivals", law, lambda: arrival_series(self.ctx, self._moments(law, self.order),
                                                                  self.lam, self.xi, self.order))

    def level_times(self, law):
        """U_L(1 + w) = (1 - L*(s)) / s = sum_{j>=1} m_j (lambda xi)^{j-1} / j!: the expected time during one period
        of L spent with m customers arrived so far, as a series."""
        return self._kept("times", law, lambda: level_time_series(self.ctx, self._moments(law, self.order + 1),
                                                                  self.lam, self.xi, self.order))

    def counts(self, law):
        """(a_0..a_{top-1}, P(A > 0), u_0) of the customers A arriving during one period of ``law`` (in mpmath, a law
        with only a numeric transform, the lognormal, by :func:`~.block_laws.numeric_counts`: its derivatives at
        lambda, not its count sequences, a refined quadrature of tens of seconds at 30 digits)."""
        from ..backend import MPContext
        from .vacation_wait import numeric_transform

        def make():
            if isinstance(self.ctx, MPContext) and numeric_transform(law):
                a, busy, u0 = numeric_counts(law, self.model.batch, self.model.rate, self.top, self.ctx)
                return self.ctx.array(a), busy, u0
            c = arrival_counts(law, self.model.batch, self.model.rate, self.top, self.ctx)
            return c.a[: self.top], c.abar[0], c.u[0]
        return self._kept("counts", law, make)


def model_blocks(model, blocks):
    """``blocks`` as a tuple, or the model's own blocks where it is None."""
    return blocks_of(model) if blocks is None else tuple(blocks)


def largest_threshold(blocks) -> int:
    """The largest start threshold N among ``blocks`` (1 without a threshold)."""
    return max((getattr(b, "threshold", 1) for b in blocks), default=1)


def passage_moments(model, ctx, blocks=None, interpreter=None, order=ORDER):
    """(Y, op): the factorial-moment series of the first-service law Y of ``model``'s blocks (or of ``blocks``: a
    rule of one's own) and the interpreter that ran them (its ``times`` series, vacation ends). ``interpreter``: a
    subclass of :class:`MomentPassage` (the derivation's, over SymPy symbols; default the numeric one)."""
    blocks = model_blocks(model, blocks)
    op = (interpreter or MomentPassage)(model, ctx, largest_threshold(blocks), order)
    return passage(blocks, op), op
