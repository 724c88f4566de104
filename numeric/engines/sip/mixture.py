r"""The sojourn of a tagged copy whose own service law differs from the server's: W_M + B_own (issue 17).

``sip-retransmission`` has two features that make the server's service a *mixture* M while the tagged copy (a
transaction's first admitted copy, whose completion is the response) has its *own* service law B_own:

* ``--duplicate-cost c < 1``: M = "B with probability 1 - delta, c B with probability delta"
  (:class:`~qderive.symbolic.laws.mixture.Mixture`, delta the fraction of admitted copies that are duplicates),
  B_own = B;
* ``--service-non-invite``: M = "B_1 with probability w, B_2 with probability 1 - w"
  (:class:`~qderive.symbolic.laws.mixture.LawMixture`, w the INVITE share of the admitted copies), B_own = B_i for
  a copy of flow i.

**The decomposition.** Copies arrive one at a time (Poisson, the engine's approximation) and every copy's service
is drawn independently from M. In a FIFO server the wait W of an admitted copy (the residual of the service or
vacation in progress plus the services of the copies ahead of it) is a function of the state it finds and of the
services of the copies *ahead*; whether it is admitted is a function of the state alone (PASTA: the state of a
time-stationary server). Its own service starts after W and is independent of it. So the tagged copy's wait has
the law W_M of a random admitted arrival of the queue with service M, and its sojourn is::

    T = W_M + B_own,   E e^{-sT} = W_M(s) beta_own(s),   E T^j = sum_i C(j, i) E W_M^i E B_own^(j-i),
    P(T = 0) = 0                                                                               (S1)

(:func:`plus_own`, the one implementation: also :class:`~qderive.numeric.engines.sip.control.ControlServer`'s).
W_M is the wait law of an existing sub-model with service M (:class:`MixtureServer`, one per :class:`Room`):

* :attr:`Room.INFINITE`, M/G/1 with the vacations (``vacation-infinite``, ``docs/theory/chapter2.md`` section 1):
  W_M(s) the one Pollaczek-Khinchine form with vacations
  (:func:`qderive.symbolic.closed_forms.vacation_wait.wait_transform`, batches of 1) with M's weights symbolic,
  compiled once per set of component laws, vacation law and policy (the weights, lambda and c_0 are arguments: a
  compiled form per weight would fill the cache, as the inner unknowns delta and w change at every evaluation);
  P(W = 0) and the moments from :mod:`~qderive.numeric.engines.vacation_wait` at M's moments; p = 0;
* :attr:`Room.FINITE`, M/G/1/K with the vacations, K - 1 = r waiting places (``vacation-finite``,
  ``docs/theory/chapter2.md`` section 2): W_M the finite room's renewal-reward wait law
  (:mod:`~qderive.numeric.engines.vacation_finite_wait`, whose transform of M at the nodes is the weighted sum of
  its components', one compiled form per scaled law), p its loss probability by PASTA (the finite engine);
  used for ``--capacity K`` without control and, with vacations, for the control at L = H - 1 (K = H: the mode is
  invisible, :class:`~qderive.numeric.engines.sip.routes.MixtureFinite`);
* :attr:`Room.CONTROL`, the contract's hysteresis at any L < H (with vacations: the chain of item 4, used for
  L <= H - 2): W_M the wait of the departure-epoch chain with service M (:class:`~qderive.numeric.engines.sip.control.ControlServer`, item 3), p
  from its refusals per departure interval.

Every law here is inverted (Euler): the component laws and the vacation law must be smooth (no exp(-s D) factor);
a constant or another kinked law is refused by the routes' declarations (:func:`qderive.numeric.engines.sip.supports`) naming the option.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import replace
from fractions import Fraction

import numpy as np

from ...backend import FLOAT64, mp_context
from ...response import ResponseLaw
from .control import ControlServer
from .sojourn import plus_own, smooth_laws

__all__ = ["Room", "MixtureServer"]


class Room(enum.Enum):
    """The sub-model that gives the mixture queue's wait W_M (module docstring)."""

    #: M/G/1 with the vacations (``vacation-infinite``)
    INFINITE = "infinite"
    #: M/G/1/K with the vacations (``vacation-finite``, r = K - 1 waiting places)
    FINITE = "finite"
    #: the contract's hysteresis, the departure-epoch chain (:mod:`~qderive.numeric.engines.sip.control`)
    CONTROL = "control"


# --------------------------------------------------------------------------------------
# The infinite room: the P-K form with vacations, compiled once per component laws
# --------------------------------------------------------------------------------------


def _template_key(mixture) -> str:
    """The mixture without its weights: its type, component laws and scales (the compiled form's cache key)."""
    from ....symbolic.numbers import decimal_text

    return type(mixture).__name__ + "(" + "; ".join(f"{law.spec_text()} x {decimal_text(c)}"
                                                    for _, law, c in mixture.parts()) + ")"


@functools.lru_cache(maxsize=16)
def _wait_evaluator(template, key, vacation, policy):
    """W_M(s) of the FIFO M/G/1 queue with the vacation law ``vacation`` (None: none) under ``policy`` and the service
    ``template`` (a mixture; ``key`` its :func:`_template_key`) with its weights symbolic: compiled once in (s,
    lambda, c_0, w_1..w_{k-1}), w_k = 1 - w_1 - ... - w_{k-1}; the one Pollaczek-Khinchine form of
    :func:`qderive.symbolic.closed_forms.vacation_wait.wait_transform` (batches of 1)."""
    from ...compile import cached_evaluator

    k = len(template.weights)
    vtext = "none" if vacation is None else vacation.spec_text()

    def make():
        import sympy as sp

        from ....symbolic.batches.finite import Constant
        from ....symbolic.closed_forms import vacation_wait as VW
        from ....symbolic.closed_forms.vacation_infinite import c0, lam

        ws = sp.symbols(f"w1:{k}", positive=True)
        mix = replace(template, weights=(*ws, 1 - sp.Add(*ws)))
        laws = {"service": mix, "batch": Constant(1), "rate": lam, "zero_count": c0}
        if vacation is not None:
            laws["vacation"] = vacation
        return sp.Integer(1) * VW.wait_transform(policy, **laws), (VW.s, lam, c0, *ws)

    return cached_evaluator(f"sip_mixture_wait::{policy}::{key}::{vtext}", make)


def _infinite_wait(queue, smooth, why) -> ResponseLaw:
    """W_M of the concrete :class:`~qderive.symbolic.models.vacation.VacationQueue` ``queue`` (batches of 1, the
    mixture service): the compiled transform of :func:`_wait_evaluator` at its weights, P(W = 0) and the moments of
    :mod:`~qderive.numeric.engines.vacation_wait` at its moments (evaluators keyed by the policy only)."""
    from .. import vacation_wait as VW

    mixture = queue.service
    policy = VW.policy_key(queue)
    ev = _wait_evaluator(replace(mixture, weights=tuple(Fraction(1, len(mixture.weights))
                                                        for _ in mixture.weights)),
                         _template_key(mixture), queue.vacation, policy)
    weights = [Fraction(w) for w in mixture.weights[:-1]]

    def transform(ctx):
        c0 = VW.zero_count(queue, ctx)
        if ctx.is_float64:
            args = (float(queue.rate), float(c0), *map(float, weights))
            return lambda s: ev.numpy(np.asarray(s, dtype=complex), *args)
        with ctx:
            args = (ctx.num(queue.rate), ctx.num(c0) if isinstance(c0, (int, Fraction)) else +c0,
                    *map(ctx.num, weights))
        scalar = np.frompyfunc(lambda x: ev.mpmath(x, *args), 1, 1)
        return lambda s: scalar(s)

    return ResponseLaw("wait", transform, VW.p_zero_of(queue), VW.wait_moment_values(queue, "wait"), smooth, why)


# --------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------


class MixtureServer:
    """The FIFO server with the mixture service ``mixture`` at copy rate ``lam`` (exact) in the room ``room``
    (:class:`Room`; ``places`` K for :attr:`Room.FINITE`, ``thresholds`` (L, H) for :attr:`Room.CONTROL`;
    ``vacation``, ``policy`` for the infinite and finite rooms): ``wait`` the law W_M of an admitted copy, ``laws``
    the sojourn (S1) of an admitted copy of each own law of ``owns`` (:func:`plus_own`), :meth:`refused`
    (p, q, utilization). ``control``: the :class:`~qderive.numeric.engines.sip.control.ControlServer` of the
    control room (None otherwise)."""

    def __init__(self, room: Room, lam: Fraction, mixture, owns, *, places=None, thresholds=None, vacation=None,
                 policy=None):
        from ....symbolic.batches.finite import Constant
        from ....symbolic.models.vacation import (
            Admission,
            FiniteVacationQueue,
            VacationPolicy,
            VacationQueue,
        )

        self.room, self.lam, self.service, self.owns = room, lam, mixture, tuple(owns)
        self.control = self.base = None
        policy = policy or VacationPolicy.MULTIPLE
        smooth, why = smooth_laws([law for _, law, _ in mixture.parts()], vacation)
        if room is Room.INFINITE:
            self.base = VacationQueue(lam, Constant(1), mixture, vacation, policy)
            self.wait = _infinite_wait(self.base, smooth, why)
        elif room is Room.FINITE:
            from ..vacation_finite_wait import wait_law_data

            self.base = FiniteVacationQueue(lam, Constant(1), mixture, vacation, places - 1, Admission.PARTIAL, policy)
            w = wait_law_data(self.base)
            self.wait = ResponseLaw("wait", w.transform("wait"), w.p_zero("wait"), w.moment_values("wait"), smooth,
                                    why)
        else:
            L, H = thresholds
            # with vacations the chain of item 4 (its own sojourn is the mixture's: own = service; the tagged
            # copies' sojourns are built below from its wait, (S1))
            self.control = ControlServer(lam, mixture, L, H, own=self.owns[0] if vacation is None else None,
                                         vacation=vacation, policy=policy)
            w = self.control.wait
            self.wait = ResponseLaw("wait", w.transform("wait"), w.p_zero("wait"), w.moment_values("wait"), smooth,
                                    why)
        self.laws = tuple(plus_own(self.wait, own, lam) for own in self.owns)

    def refused(self, digits):
        """(p, q = 1 - p, utilization) as context numbers (floats for ``digits`` None): the infinite room refuses
        nothing (utilization lambda E[M]); the finite room's loss probability and q = throughput / lambda (never
        1 - p); the control room's item 2 (:meth:`~qderive.numeric.engines.sip.control.ControlServer.refused`)."""
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        mean = self.service.moment(1)
        if self.room is Room.INFINITE:
            return ctx.num(0), ctx.num(1), ctx.num(self.lam * mean)
        if self.room is Room.CONTROL:
            return self.control.refused(ctx)
        rec = self.base.evaluate(digits)
        with ctx:
            return rec.loss_probability, rec.throughput / ctx.num(self.lam), rec.throughput * ctx.num(mean)
