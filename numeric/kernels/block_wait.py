"""The wait of an admitted customer of M[X]/G/1/r with composed blocks (setup, close-down, start threshold N): the
period families of the idle passage.

The algorithm of items 6 and 7 of ``qderive.numeric.engines.vacation_finite_wait`` (whose docstring derives it),
written once over an arithmetic context so that the package's engine and the generated code of ``qderive codegen
vacation-finite --measure wait_tail`` with ``--setup``, ``--close-down`` or ``--start-threshold`` run the same source:

* :func:`recording_passage` -- a subclass of the idle passage's interpreter
  (:class:`~qderive.numeric.kernels.idle_passage.CountPassage` or ``WholeCountPassage``) that records, per stage i,
  ``("start", i, V)`` the start law V of the periods of a ``during`` or ``repeat`` stage (threshold 1: every
  period starts empty, their number the stage's time over the law's mean ``means[law]``; N > 1: the periods
  started at each level k < N, the kernel's own visits), and ``("flat", i, T)``, ``("once", i, T)`` the times at
  each level of a ``wait`` or ``interrupt`` stage where a batch finds r - k or r + 1 - k places;
* :func:`block_wait_parts` -- the s-independent data, one part per *suffix* (the laws of the stages a customer
  present at a period's end waits through in full): the services starting with n waiting
  Y_n = pi_{n+1} + pi_0 y_{n+1} (pi the departure chain, y the first service's law), each family's rows
  W^f_K = V^f L^K, the flat and at-once times, t_I, and Z' for the customers' way;

N(s) = sum over the parts of prod_{L in suffix} L*(s) [sum_{n<r} (Phi_n(s) + T_n) A_n(s) + t_I A_I(s)]
(:func:`~qderive.numeric.kernels.finite_wait.wait_levels_of_periods`,
:func:`~qderive.numeric.kernels.finite_wait.wait_admission_sum`), plus pi_0 Delta(s) with N > 1 (the excess of
:class:`~qderive.numeric.kernels.threshold_passage.ThresholdSeries`).
"""

import numpy

from .finite_wait import wait_batch_rows
from .idle_passage import WholeCountPassage, renewal


def recording_passage(base):
    """A subclass of the passage interpreter ``base`` that records what the period families need (module
    docstring); its instances need ``means`` (law key -> mean time) before they run a ``repeat`` with threshold 1."""

    class Recorder(base):
        def __init__(self, *args):
            super().__init__(*args)
            self.records = []
            self.means = None

        def _timed(self, run, i):
            times, once = self.times.copy(), self.at_once.copy()
            out = run()
            self.records.append(("flat", i, self.times - times))
            self.records.append(("once", i, self.at_once - once))
            return out

        def during(self, v, law, vacation=False):
            self.records.append(("start", self.i, v.copy()))
            return super().during(v, law, vacation)

        def repeat(self, v, law, threshold, most=None):
            i, times = self.i, self.times.copy()
            out = super().repeat(v, law, threshold, most)
            start = self.ctx.zeros(self.size)
            if threshold == 1:
                start[0] = self.ctx.fsum(list(self.times - times)) / self.means[law]
            elif isinstance(self, WholeCountPassage):  # N > 1, whole admission (item 7): the kernel's visits
                n = min(threshold, self.room)
                start[:n] = self.repeat_visits(v, self._rows(law, n, self.room)[0], n, threshold)
            else:  # N > 1, partial admission (item 7): the periods started at level k < N, the kernel's own visits
                c = self.counts(law)
                n = min(threshold, self.room)
                start[:n] = renewal(self.ctx, v[:n], c.pmf, c.geq[1])
            self.records.append(("start", i, start))
            return out

        def wait(self, v, threshold):
            return self._timed(lambda: super(Recorder, self).wait(v, threshold), self.i)

        def interrupt(self, v, law):
            return self._timed(lambda: super(Recorder, self).interrupt(v, law), self.i)

    return Recorder


def _block_group():
    return {"periods": [], "flat": None, "once": None, "above": None}


def block_wait_parts(ctx, records, pi, y, r, whole, pmf, tail, support, geometric, beta, suffix_of, period_counts):
    """(parts, admit, low): the s-independent data of the wait with blocks (module docstring) from the passage's
    ``records`` (:func:`recording_passage`), the departure chain ``pi`` (unnormalised) and the first service's law
    ``y`` over 0..r+1; ``pmf``, ``tail`` the batch law over 0..r+1, ``beta`` the service's count sequence;
    ``suffix_of(i)`` the suffix (a tuple of law keys) of stage i, ``period_counts(i)`` (law key, counts, P(K > k),
    second tails) of stage i's law. Each part is a dict: ``suffix``, ``periods`` [(law key, rows, counts, tail,
    tail2)], ``flat`` (or None), ``once`` (the levels 1..r-1 of a batch starting service at once, or None),
    ``t_idle``, ``zero_weight``, ``Y``, ``Ws``, ``Zp``; ``admit`` F_n and ``low`` its smallest value (whole
    admission; None and 1 otherwise). The part of the empty suffix comes first."""
    pi0 = pi[0]
    keep = tail[r:0:-1].copy() if whole else None
    if whole and r:
        admit = numpy.cumsum(pmf[1: r + 1])[::-1].copy()
        low = admit[r - 1]
    else:
        admit, low = None, ctx.num(1)
    fit = ctx.fsum(list(pmf[1: r + 2])) if whole else ctx.num(1)
    groups = {(): _block_group()}
    for what, i, vector in records:
        if not any(vector != 0):
            continue
        # a batch starting service at once waits for no later stage (a close-down's: none is entered)
        suffix = () if what == "once" else suffix_of(i)
        group = groups.setdefault(suffix, _block_group())
        vector = vector * pi0
        if what == "start":
            law, counts, ctail, ctail2 = period_counts(i)
            rows = wait_batch_rows(ctx, vector[:r], pmf, keep, len(counts) - 1, support, geometric)
            group["periods"].append((law, rows, counts, ctail, ctail2))
        elif what == "flat":
            if any(vector[:r] != 0):
                group["flat"] = vector[:r] if group["flat"] is None else group["flat"] + vector[:r]
        else:
            if any(vector[r:] != 0):  # a wait's levels are below N <= r
                raise ValueError("a batch starting service at once with r waiting is not covered")
            group["once"] = vector[0] if group["once"] is None else group["once"] + vector[0]
            if any(vector[1:r] != 0):  # N > 1: with n waiting, r + 1 - n places (item 7)
                above = ctx.zeros(r)
                above[1:] = vector[1:r]
                group["above"] = above if group["above"] is None else group["above"] + above
    Y = pi[1: r + 1] + pi0 * y[1: r + 1]
    parts = []
    for suffix, group in groups.items():
        start = Y if not suffix else ctx.zeros(r)
        Ws = wait_batch_rows(ctx, start, pmf, keep, len(beta) - 1, support, geometric)
        Zp = ctx.zeros(r)  # Z' = sum_{K >= 1} (beta_K W^s_K + sum_f varphi^f_K W^f_K): the customers' way
        for counts, rows in [(beta, Ws)] + [(p[2], p[1]) for p in group["periods"]]:
            if rows.shape[0] > 1:
                Zp = Zp + numpy.dot(counts[1: rows.shape[0]], rows[1:])
        t_idle = ctx.num(0) if group["once"] is None else group["once"]
        parts.append({"suffix": suffix, "periods": group["periods"], "flat": group["flat"], "once": group["above"],
                      "t_idle": t_idle, "zero_weight": t_idle * fit, "Y": start, "Ws": Ws, "Zp": ctx.flush(Zp)})
    return parts, admit, low
