"""Waiting and sojourn time of an admitted customer of M[X]|G|1|(L,H)|(H,R) (mode changes at departures).

:func:`hysteretic_laws` (the ``response`` of :class:`~qderive.symbolic.models.hysteretic.HystereticModel`)
gives the wait W and the sojourn W + B of a random *admitted* customer (FIFO) as
:class:`~qderive.numeric.response.ResponseLaw` objects, by the algorithm of the finite vacation queue
without vacations (:mod:`qderive.numeric.engines.vacation_finite_wait`, kernel
:mod:`qderive.numeric.kernels.finite_wait`), whose docstring derives it. Notation of
``docs/theory/chapter3.md``: r = R - 1 waiting places (levels n = 0..r-1 waiting; a batch finding R in
the system admits nobody), partial admission.

**The state at a batch's arrival.** Under ``--policy departure`` the mode s changes only at departures,
so during the service that follows the embedded state (j, s) of (16) the batch rate lambda_s is constant
(lambda_2 = 0: the discard mode admits nobody) and the level process is that of M[X]/G/1/r at rate
lambda_s. By renewal reward over the embedded intervals (17) and PASTA *within each mode*, admitted
arrivals during a mode-s service at level n occur at rate lambda_s times the time spent there, so the
level-residual numerators of the finite queue are summed over the modes, each weighted by its rate::

    Y^(s)_n = lambda_s q_{n+1,s} + [s = 0] lambda_0 q_{0,0} l_{n+1}   (services in mode s starting with n
              waiting: a departure leaving n + 1, or the idle period (0, 0) ended by a batch of n + 1),
    t_I = q_{0,0}                                                      (lambda_0 times the idle time q_{0,0}/lambda_0),

    N(s) = sum_{s'=0,1} [ sum_{n<r} Phi^(s')_n(s) A_n(s) ] + t_I A_I(s),   W*(s) = N(s) / N(0),

with Phi^(s') of the finite queue's item 2 at rate lambda_{s'} (g_K from the count sequences of lambda_{s'})
and A_n(s) = b^n P_{r-n}(b), A_I = P_{r+1}(b) of its item 3 (partial admission; position in the batch
customer-averaged). The idle state is (0, 0) only: a departure leaving 0 <= L - 1 returns to normal mode.
N(0) is the admitted rate times C (17), a sum of positive terms. The sojourn is W*(s) beta(s).

**A constant service** D has kinks (exp(-s D)): under ``--policy departure`` its tails are the positive
sums of :mod:`qderive.numeric.kernels.lattice_finite` over the same per-mode parts (each period's residual
weights at its own rate lambda_s), through :func:`~.vacation_finite_wait.lattice_tails`, as for the finite
vacation queue; under ``--policy instant`` the same sums over the birth kernel's level rows
(:func:`~.hysteretic_instant_wait.instant_lattice_tails`).

``--policy instant`` (the rate changes within a service: the arrivals during a service are then a
state-dependent birth process, not the finite queue's) builds the same law object over the birth kernel's
data: :mod:`qderive.numeric.engines.hysteretic_instant_wait`.
"""

from __future__ import annotations

import functools
import json
import types

import numpy as np
from qderive.symbolic import limits as _limits
from qderive.symbolic.capabilities import declare
from qderive.symbolic.models.hysteretic import Policy

from ..backend import FLOAT64, mp_context
from ..kernels import finite_wait as K
from ..response import ResponseLaw
from ..sequences import batch_vectors, digits_for
from . import vacation_finite_wait as FW

__all__ = ["hysteretic_laws", "hysteretic_wait_data"]


def _build(model, ctx, order, q=None):
    """The per-mode data (a list of :class:`~.vacation_finite_wait._Data`, one per mode with a positive rate)
    of the module docstring in ``ctx`` (``q``: the embedded law [s][j] of (16), if known)."""
    from .hysteretic import solution

    r = model.R - 1
    with ctx:
        bv = batch_vectors(model.batch, r + 1, ctx)
        pmf, tail = bv.pmf, bv.tail
        q = solution(model, ctx).embedded_law() if q is None else q
        parts = []
        for mode, rate in enumerate((model.rate, model.rate1)):
            if rate == 0:
                continue  # no arrivals in this mode
            lam = ctx.num(rate)
            beta, btail, btail2 = FW._counts(model.service, rate, ctx, order)
            d = K.wait_mode_start(ctx, q, mode, lam, pmf, beta, bv.support, bv.geometric)
            Ws, Zp = d["Ws"], d["Zp"]
            data = FW._Data(ctx, order, r, False, lam, pmf, tail, None, ctx.num(1), bv.support, bv.geometric, d["Y"],
                            None, Zp, d["t_idle"], d["t_idle"], Ws, ctx.zeros((0, r)), beta, btail, btail2,
                            None, None, None)
            data.N0 = FW._admission_series(model, data, 0)[0]
            data.q = q
            if ctx.is_float64 and not (np.all(np.isfinite(Ws)) and np.all(np.isfinite(Zp)) and np.isfinite(data.N0)):
                raise ArithmeticError("the level vectors over- or underflow float64")
            parts.append(data)
    return parts


class _HystereticWait(FW._FiniteWait):
    """The finite queue's law object with one data part per mode (:meth:`parts`, built by :attr:`build`)."""

    build = staticmethod(_build)

    def _guard(self) -> int:
        m = self.model
        extra = 0
        for rate in (m.rate, m.rate1):
            lb = float(rate * m.service.moment(1))
            if 0 < lb < 1:
                extra = max(extra, int(np.ceil(-np.log10(lb))))
        return digits_for(m.R) + 4 + extra

    def parts(self, ctx, order=1):
        if ctx.is_float64:
            got = self._float.get("data")
            if got is None or got[0].order < order:
                got = self._float["data"] = self.build(self.model, FLOAT64, max(order, 1))
            return got
        want = ctx.dps + self.guard
        got = self._mp.get("data")
        if got is None or got[0].ctx.dps < want or got[0].order < order:
            R = self.model.R
            _limits.check("mp_capacity", R, f"the waiting time's data with mpmath cost about "
                          f"{max(1, round(4.5e-5 * R * R))} s at R = {R}")
            dps = max(want + FW._HEADROOM, got[0].ctx.dps if got is not None else 0)
            q = got[0].q if got is not None and got[0].ctx.dps == dps else None
            got = self._mp["data"] = self.build(self.model, mp_context(dps), max(order, 1, got[0].order if got else 1),
                                                q)
        return got

    def data(self, ctx, order=1):
        raise NotImplementedError("the hysteretic wait has one data part per mode: use parts()")


@functools.lru_cache(maxsize=4)
def hysteretic_wait_data(model) -> _HystereticWait:
    """The computation behind :func:`hysteretic_laws`, one per model (tests read intermediate quantities)."""
    return _HystereticWait(model)


@declare(independent={
    "thesis_form": "it selects the engine's formula for the mode measure E tau_0; the wait does not depend on it",
    "semantics": "it decides the mode a moment is counted in (the mode measures); a customer's wait does not depend "
                 "on the labelling"})
def hysteretic_laws(model) -> dict:
    """``{"wait": ResponseLaw, "sojourn": ResponseLaw}`` of a concrete :class:`HystereticModel` (module
    docstring: W*(s) = N(s) / N(0) summed over the modes; ``--policy instant``: :mod:`.hysteretic_instant_wait`)."""
    from qderive.symbolic.cache import cached

    from .vacation_wait import _smooth

    laws = {"service": model.parameters()["service"]}
    smooth, why = cached("finite_wait_smooth_v2::" + json.dumps(laws, sort_keys=True),
                         lambda: _smooth(types.SimpleNamespace(service=model.service, vacation=None)))
    if model.policy is Policy.INSTANT:  # the rate changes within a service: the birth kernel's data and rows
        from .hysteretic_instant_wait import instant_lattice_tails as lattice_tails
        from .hysteretic_instant_wait import instant_wait_data as data_of
    else:
        data_of, lattice_tails = hysteretic_wait_data, FW.lattice_tails
    setup, why_not = (None, "") if smooth else FW.lattice_setup(model.service, None)
    w = data_of(model)
    return {kind: ResponseLaw(kind, w.transform(kind), w.p_zero(kind), w.moment_values(kind), smooth, why_not or why,
                              None if setup is None else lattice_tails(w, setup, kind))
            for kind in ("wait", "sojourn")}
