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
(:func:`instant_lattice_tails`).

``--policy instant`` (the rate changes within a service: the arrivals during a service are then a
state-dependent birth process, not the finite queue's) builds the same law object over the birth kernel's
data (below).

**``--policy instant``.** :func:`instant_wait_data` is what :func:`hysteretic_laws` uses for a
model whose mode follows the count at once (:class:`~qderive.symbolic.models.hysteretic.Policy`): the wait W
and the sojourn W + B of a random *admitted* customer (FIFO) as transforms, with the law object, the
moments and the node evaluation of the finite queue (:mod:`qderive.numeric.engines.vacation_finite_wait`,
kernel :mod:`qderive.numeric.kernels.finite_wait`) over data built from the state-dependent birth kernel
(:mod:`qderive.numeric.kernels.birth`). Notation of ``docs/theory/chapter3.md``: the count c includes the
customer in service, at most R; partial admission; levels n = c - 1 waiting, n = 0..R-2 (c = R admits nobody).

**Why the departure-policy algorithm does not apply.** Under instant control the rate in force during a
service that started in mode s is lambda_{max(s, level(c))} at count c (level 0 below H, 1 on H..R-1, 2 at
R): the arrival rate changes within a service, so the level process during a service is not that of the
finite queue at one rate. The tagged customer's wait is still, FIFO, the residual of the service in progress
plus the services of the customers ahead of it (those in the system and the earlier members of its batch);
mode changes after its arrival only affect the customers behind it. What changes is the joint law of (count,
elapsed service) at an admitted arrival.

**The state at a batch's arrival.** The embedded chain at departures (:class:`~.kernels.birth.BirthChain`,
the instant engine's :func:`~.hysteretic.instant_chain`) has states (j, s) and law q (per departure). The
service after (j, s), j >= 1, starts at count j in mode s; after (0, 0) an idle period (mean 1 / lambda_0,
count 0, mode 0) ends with a batch bringing min(X, R) (law ``first``) and a service from that count in mode
0. During a service started in mode s the count is the birth process N(x) of the kernel, uniformized at
Lambda = lambda_s with the matrix P_s (:func:`~.birth.threshold_matrix`). The service time B is independent
of the arrival stream, so batches arrive at age x of the service with the intensity lambda(N(x-)); by
renewal reward over the embedded intervals (17), the expected number per departure of batches that arrive
at count c while the residual service is in dy is lambda_{m(s, c)} times the time spent there. Its
transform in the residual is the birth kernel's :func:`~.kernels.birth.birth_rows` sum::

    Phi^(s)_c(s~) = sum_K g^(s)_K(s~) (Y_s P_s^K)_c,     g^(s)_K of finite_wait at the rate lambda_s,
    Y_s = sum_{(j, s), j >= 1} q_{j,s} e_j + [s = 0] q_{0,0} first      (services started in mode s),

(g_K(s~) = E int_0^B e^{-Lambda x} (Lambda x)^K / K! e^{-s~ (B - x)} dx: the expansion of exp(Q_s x) by
uniformization, nonnegative terms), and the services started in mode 2 have no arrivals (lambda_2 = 0, and
the mode only rises within a service).

**The admitted customers.** A batch finding c customers admits its member at position i iff c + i <= R; that
customer waits the residual plus c - 1 + i - 1 services (c >= 1), or i - 1 services at an idle server (an idle
period in (0, 0) receives q_{0,0} batches per departure: lambda_0 times the idle time q_{0,0} / lambda_0).
Summing over positions with the weights P(X >= i) (customer average, l_1 cancels)::

    N(s~) = sum_{s=0,1} sum_{c=1}^{R-1} lambda_{m(s,c)} Phi^(s)_c(s~) b^{c-1} P_{R-c}(b) + q_{0,0} P_R(b),
    W*(s~) = N(s~) / N(0),    b = beta(s~),   P_k(b) = sum_{i=1}^{k} P(X >= i) b^{i-1},

the finite queue's admission sum (item 3 of :mod:`~.vacation_finite_wait`) with the level vectors
W^(s)_K[c - 1] = lambda_{m(s,c)} (Y_s P_s^K)_c, one data part per mode s with lambda_s > 0. N(0) is the
number of admitted customers per departure, which is 1 (renewal reward: every admitted customer departs);
the computed N(0) is a sum of positive terms and is not replaced by 1. The sojourn is W*(s~) beta(s~),
P(W = 0) = q_{0,0} / N(0). Moments: the same sums as power series in -s~ (the finite queue's item 5).

**At the nodes** Phi is evaluated in two ways. *By batches* (Phi = G W, the finite queue's code over these
rows): at every node in float64, and in mpmath where the other way is not stable. *By counts*
(:func:`~.kernels.birth.birth_levels_by_customers`): summing (Lambda - s~) g_K = Lambda g_{K-1} - beta_K
against the rows turns the sum over K into the triangular system::

    (lambda(c) - s~) Phi~_c = (Lambda - s~) g_0 Y_c - Z'_c + sum_{c' < c} Phi~_{c'} Lambda P[c', c],
    Z' = sum_{K >= 1} beta_K Y P^K,

O(R^2) per node instead of O(top R) (the rows need not vanish: with f < 1 the count lingers in the
overload range, with f = 0 it stays there); errors are not amplified where |lambda(c) - s~| >= Lambda for
every rate lambda(c) in force (:func:`~.kernels.finite_wait.wait_customer_stable` on [min lambda, Lambda]),
which holds at most Euler nodes. The finite queue's recursion over levels with one rate does not apply
here (the rate depends on the count). Precision: the law object of :mod:`~.hysteretic_wait` (float64, or the
data at the digits asked plus a guard and a headroom; tails by the Euler inversion of
:mod:`qderive.numeric.response`, confirmed at two precisions). Exponential service reproduces the tagged customer's absorption time in the instant-policy CTMC
(:mod:`qderive.numeric.oracles.hysteretic_wait`).

**A constant service** D (kinks at t = j D: no inversion) has exact tails by the positive sums (F1) of
:mod:`qderive.numeric.kernels.lattice_finite`, whose level rows are these W^(s)_K (at the batch rate Lambda =
lambda_s, :func:`~.kernels.birth.birth_level_rows`): an admitted customer who arrives at the age x of the service
at count c (the law sum_K e^{-Lambda x} (Lambda x)^K / K! (Y_s P_s^K)_c, arrivals at the rate lambda(c)) in
position i waits (D - x) + (c - 1 + i - 1) D, so with m = c + i - 2 services ahead::

    N(W > t) = sum_s sum_c sum_{i <= R - c} P(X >= i) sum_K W^(s)_K[c - 1] int_0^{min(D, (m + 1) D - t)^+}
               e^{-Lambda x} (Lambda x)^K / K! dx  +  q_{0,0} sum_{(i - 1) D > t} P(X >= i),

int_0^y e^{-Lambda x} (Lambda x)^K / K! dx = P(Poisson(Lambda y) > K) / Lambda (positive terms), P(W > t) =
N(W > t) / N(W > -1), the sojourn P(W > t - D); W < (R - 1) D. :func:`instant_lattice_tails` runs the finite
queue's :func:`~.vacation_finite_wait.lattice_tails` (its precision policy: float64 where its bound is 1e-10, else
None and 15 digits with a note; D digits to 10^-(D+2)) over :class:`_InstantLatticeSums`, which extends the rows by
the birth kernel instead of the finite queue's batch steps.
"""

from __future__ import annotations

import functools
import json
import types
from fractions import Fraction

import numpy as np

from ...symbolic import limits as _limits
from ...symbolic.capabilities import declare
from ...symbolic.models.hysteretic import Policy
from ..backend import FLOAT64, mp_context
from ..kernels import birth as KB
from ..kernels import finite_wait as K
from ..response import ResponseLaw
from ..sequences import batch_vectors, digits_for
from . import vacation_finite_wait as FW
from .birth import threshold_matrix

__all__ = ["hysteretic_laws", "hysteretic_wait_data", "instant_lattice_tails", "instant_starts",
           "instant_wait_data"]


def _build(model, ctx, order, q=None):
    """The per-mode data (a list of :class:`~.vacation_finite_wait.WaitData`, one per mode with a positive rate)
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
            beta, btail, btail2 = FW.count_data(model.service, rate, ctx, order)
            d = K.wait_mode_start(ctx, q, mode, lam, pmf, beta, bv.support, bv.geometric)
            Ws, Zp = d["Ws"], d["Zp"]
            data = FW.WaitData(ctx, order, r, False, lam, pmf, tail, None, ctx.num(1), bv.support, bv.geometric, d["Y"],
                            None, Zp, d["t_idle"], d["t_idle"], Ws, ctx.zeros((0, r)), beta, btail, btail2,
                            None, None, None)
            data.N0 = FW.admission_series(model, data, 0)[0]
            data.q = q
            if ctx.is_float64 and not (np.all(np.isfinite(Ws)) and np.all(np.isfinite(Zp)) and np.isfinite(data.N0)):
                raise ArithmeticError("the level vectors over- or underflow float64")
            parts.append(data)
    return parts


class _HystereticWait(FW.FiniteWait):
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
            dps = max(want + FW.HEADROOM, got[0].ctx.dps if got is not None else 0)
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
    docstring: W*(s) = N(s) / N(0) summed over the modes; ``--policy instant``: :func:`instant_wait_data`)."""
    from ...symbolic.cache import cached
    from .vacation_wait import smooth_laws

    laws = {"service": model.parameters()["service"]}
    smooth, why = cached("finite_wait_smooth_v3::" + json.dumps(laws, sort_keys=True),
                         lambda: smooth_laws(types.SimpleNamespace(service=model.service, vacation=None)))
    if model.policy is Policy.INSTANT:  # the rate changes within a service: the birth kernel's data and rows
        data_of, lattice_tails = instant_wait_data, instant_lattice_tails
    else:
        data_of, lattice_tails = hysteretic_wait_data, FW.lattice_tails
    setup, why_not = (None, "") if smooth else FW.lattice_setup(model.service, None)
    w = data_of(model)
    return {kind: ResponseLaw(kind, w.transform(kind), w.p_zero(kind), w.moment_values(kind), smooth, why_not or why,
                              None if setup is None else lattice_tails(w, setup, kind))
            for kind in ("wait", "sojourn")}


# -- --policy instant: the birth kernel's data (module docstring, ``--policy instant``) ------------------------


def instant_starts(chain, ctx):
    """((Y_0, Y_1), q_{0,0}): the start laws (over the counts 0..R) of the services started in modes 0 and 1, per
    departure, and the idle weight (module docstring, ``--policy instant``), from a solved :class:`~.kernels.birth.BirthChain`."""
    R = chain.R
    starts = [ctx.zeros(R + 1), ctx.zeros(R + 1)]
    idle = ctx.num(0)
    for k, (j, s) in enumerate(chain.states):
        if j == 0:  # the idle state (0, 0): its service starts after the first batch, in mode 0
            idle = idle + chain.q[k]
            starts[0] = starts[0] + chain.first * chain.q[k]
        elif s < 2:  # a service started in the discard mode has no arrivals
            starts[s][j] = starts[s][j] + chain.q[k]
    return tuple(starts), idle


def _build_instant(model, ctx, order, q=None):
    """The per-mode data (:class:`~.vacation_finite_wait.WaitData`, one per mode with a positive rate) of the module
    docstring (``--policy instant``) in ``ctx`` (``q``: the start laws of :func:`instant_starts`, if known)."""
    from .hysteretic import instant_chain

    R, H = model.R, model.H
    r = R - 1
    rates = (model.rate, model.rate1, Fraction(0))
    with ctx:
        bv = batch_vectors(model.batch, R, ctx)
        pmf, tail = bv.pmf, bv.tail
        q = instant_starts(instant_chain(model, ctx), ctx) if q is None else q
        starts, idle = q
        parts = []
        for mode in (0, 1):
            if rates[mode] == 0:
                continue  # no arrivals in services started in this mode
            beta, btail, btail2 = FW.count_data(model.service, rates[mode], ctx, order)
            P = threshold_matrix(rates, mode, pmf, tail, H, R, ctx)
            rows = KB.birth_rows(ctx, starts[mode], P, len(beta) - 1)
            rate_at = [rates[KB.birth_mode(mode, c, H, R)] for c in range(1, R)]  # lambda(c), exact
            weight = ctx.array(rate_at)
            Ws = KB.birth_level_rows(ctx, rows, weight)
            if ctx.is_float64 and Ws.size:
                K.fw_drop_negligible(Ws, float(np.max(np.abs(Ws))))
            t_idle = +idle if mode == 0 else ctx.num(0)
            lam = ctx.num(rates[mode])
            Zp = ctx.zeros(r)
            if rows.shape[0] > 1:
                Zp = Zp + np.dot(beta[1: rows.shape[0]], rows[1:, 1:R])
            data = FW.WaitData(ctx, order, r, False, lam, pmf, tail, None, ctx.num(min(rate_at) / rates[mode]), None,
                            None, starts[mode][1:R].copy(), None, ctx.flush(Zp), t_idle, t_idle, Ws, ctx.zeros((0, r)),
                            beta, btail, btail2, None, None, None)
            data.rate_at, data.jump = weight, P[1:R, 1:R] * lam  # the recursion over the counts (item "At the nodes")
            data.N0 = FW.admission_series(model, data, 0)[0]
            data.q = q
            data.birth = (P, rows[-1].copy(), rows.shape[0] < len(beta))  # to extend the rows (lattice sums)
            if ctx.is_float64 and not (np.all(np.isfinite(Ws)) and np.isfinite(data.N0)):
                raise ArithmeticError("the level vectors over- or underflow float64")
            parts.append(data)
    return parts


class _InstantWait(_HystereticWait):
    """The hysteretic law object over the birth kernel's data (module docstring, "At the nodes")."""

    build = staticmethod(_build_instant)

    def _levels(self, data, ectx, values, z, b, g0, h0, strategy):
        """Phi at the nodes z: by the recursion over the counts where it is stable (mpmath; ``strategy`` CUSTOMERS
        also in float64), by batches elsewhere (the finite queue's code with the birth kernel's rows)."""
        nodes = len(z)
        if strategy == FW.Strategy.BATCHES or (strategy == FW.Strategy.AUTO and ectx.is_float64) or not data.r:
            by_counts = np.zeros(nodes, dtype=bool)
        else:
            by_counts = K.wait_customer_stable(data.lam, data.low, z)
        Phi = K.fw_complex_zeros(ectx, (nodes, data.r))
        c = np.flatnonzero(by_counts)
        if len(c):
            get = values.__getitem__ if FW.gmpy_values(values) else functools.partial(getattr, data)
            Phi[c] = KB.birth_levels_by_customers(ectx, z[c], get("lam"), get("rate_at"), get("jump"), get("Y"),
                                                  get("Zp"), g0[c])
        rest = np.flatnonzero(~by_counts)
        if len(rest):
            Phi[rest] = super()._levels(data, ectx, values, z[rest], b[rest], g0[rest], None, FW.Strategy.BATCHES)
        return Phi


class _InstantLatticeSums(FW.LatticeSums):
    """The constant-service sums (F1) of :mod:`~qderive.numeric.kernels.lattice_finite` over the birth kernel's level
    rows (module docstring, "A constant service"): the finite queue's sums, whose rows are extended by the birth
    kernel (:func:`~.kernels.birth.birth_rows` from the last raw row) instead of the finite queue's batch steps."""

    def __init__(self, parts, setup):
        self._last = {id(data): data.birth[1] for data in parts}
        super().__init__(parts, setup)

    def tail(self, t, tolerance):
        """(P(W > t), relative error bound) of the finite queue's sums; 0 exactly for t >= (R - 1) D (the residual
        plus at most R - 2 services: W < (R - 1) D), where the entry-error bound cannot fall by extending rows."""
        if t >= self.r * self.D:
            return self.ctx.num(0), 0
        return super().tail(t, tolerance)

    def _extend(self):
        grown = False
        for i, (W, data, pieces, _, complete) in enumerate(self.periods):
            if complete or W.shape[0] >= FW.LATTICE_ROWS:
                continue
            P = data.birth[0]
            raw = KB.birth_rows(self.ctx, self._last[id(data)], P, W.shape[0])
            more = KB.birth_level_rows(self.ctx, raw[1:], data.rate_at)
            if self.ctx.is_float64 and more.size:
                K.fw_drop_negligible(more, float(np.max(np.abs(W))))
            self._last[id(data)] = raw[-1].copy()
            self.periods[i] = self._period(data, np.concatenate([W, more]), pieces, raw.shape[0] <= W.shape[0])
            grown = True
        if grown:
            self.mass = self._sum(-1)[0]
        return grown


def instant_lattice_tails(law, setup, kind):
    """The law's own ``tails`` for a constant service D under ``--policy instant``: those of
    :func:`~.vacation_finite_wait.lattice_tails` (P(W > t) = N(W > t) / N(W > -1) by (F1), the sojourn
    P(W > t - D); the precision policy there) over :class:`_InstantLatticeSums` of the birth kernel's rows."""
    inner = FW.lattice_tails(law, setup, kind)

    def tails(ts, digits):
        try:
            parts = law.parts(FLOAT64 if digits is None else mp_context(digits))
        except ArithmeticError:  # float64 over- or underflow: lattice_tails escalates every point
            parts = None
        if parts is not None and parts[0].lattice is None:
            parts[0].lattice = _InstantLatticeSums(parts, setup)
        return inner(ts, digits)

    return tails


@functools.lru_cache(maxsize=4)
def instant_wait_data(model) -> _InstantWait:
    """The computation behind the response laws of a ``--policy instant`` model, one per model (tests read
    intermediate quantities: ``parts(ctx)``, each part's N(0))."""
    return _InstantWait(model)
