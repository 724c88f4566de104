"""The server routes: the server fed by Poisson copies at rate lambda, one small class per sub-model.

Each route computes, for the server part of the model (:class:`~qderive.symbolic.models.sip_retransmission.SipServer`)
at copy rate lambda (with the inner unknown: the duplicate fraction delta or the flow share w), the refusal
probability p (:meth:`Route.refused`) and the tails F(t) = P(R_copy > t) of an admitted copy's sojourn
(:meth:`Route.tails`); the module docstring of :mod:`qderive.numeric.engines.sip` states each sub-model.

**Declarations.** A route declares the region of server parts it covers (:meth:`Route.covers`: the control, the
room, whether the service is a mixture) and, inside it, what it does not compute (:meth:`Route.refuses`: a
:class:`Refusal` naming the option and the reason). :func:`select_route` takes the first route of :data:`ROUTES`
that covers the server part and computes it; when only routes that refuse it cover it, the first one's refusal is
raised. Nothing else chooses a route: no flags. A test that cross-checks two routes constructs the route class
directly (``GeneralControl(server, lam)``) or forces it with ``solve(model, route=...)``.

The mixture flag of the selection: the server's service is a mixture (:class:`~qderive.symbolic.laws.mixture.Mixture`
of B and c B at a duplicate fraction delta > 0, or :class:`~qderive.symbolic.laws.mixture.LawMixture` of the flows'
laws at the share w) and the tagged copy has its own law (``owns``).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

from ....symbolic.capabilities import Refusal, limit_refusal
from ....symbolic.errors import ParameterError
from ....symbolic.models.sip_retransmission import Control
from ....symbolic.numbers import decimal_text
from ...backend import FLOAT64, mp_context
from ...kernels.inversion import euler_inversion, euler_parameters
from ...kernels.tails import TAIL_FLOAT64_SETS, tail_transform
from ..base import Trouble
from .chains import control_chain, phase_type_laws_of, stationary, tagged_chain
from .mixture import MixtureServer, Room
from .sojourn import smooth_laws

__all__ = ["Route", "ROUTES", "select_route", "route_refusal", "server", "ThresholdRoute",
           "PriorityQueue", "PriorityChain", "InfiniteRoom", "FiniteRoom", "MixtureInfinite", "MixtureFinite",
           "ExponentialChain", "MixtureControl", "FiniteControl", "GeneralControl"]

_CONTROLLED = (Control.IGNORE, Control.REJECT)


def _exponential(law) -> bool:
    from ....symbolic.laws.gamma import Exponential

    return isinstance(law, Exponential)


def _fifo(server) -> bool:
    """The FIFO server of the controls none/ignore/503 (not priority, not seed 001's threshold server)."""
    return server.control is not Control.THRESHOLD and not server.priority


def _spec(law) -> str:
    return law.spec_text()


# --------------------------------------------------------------------------------------
# The base: shared state, the refusal probability, the tails
# --------------------------------------------------------------------------------------


class Route:
    """The server at copy rate ``lam`` (exact) of the server part ``server``: :meth:`refused` (p, q, utilization),
    :meth:`tails` P(R_copy > t) of an admitted copy, :attr:`flow_laws` each flow's sojourn law when the flows differ.

    A subclass declares :meth:`covers` and :meth:`refuses` and builds itself in :meth:`build`."""

    #: the route's name in notes and in the architecture page
    name = "route"
    saturated = False
    #: sub-servers some tests read: the departure-epoch control chain (:class:`.control.ControlServer`), the mixture
    #: server (:class:`.mixture.MixtureServer`), the two-flow model of ``--control threshold``
    general = mixed = two_flow = base = None
    #: priority without control: the M/G/1 priority queue's utilization min(rho, 1)
    utilization = None
    law = flow_laws = None

    @classmethod
    def covers(cls, server, mixture: bool) -> bool:  # pragma: no cover - abstract
        """True when ``server`` (with a mixture service when ``mixture``) lies in the route's region."""
        raise NotImplementedError

    @classmethod
    def refuses(cls, server) -> Refusal | None:
        """Inside the region: what the route does not compute (a :class:`Refusal`), or None."""
        return None

    @classmethod
    def supports(cls, server, mixture: bool = False) -> Refusal | None:
        """None when the route computes ``server``, else the refusal (outside the region: a refusal naming the
        control the route covers)."""
        if not cls.covers(server, mixture):
            return Refusal.of_option("--control", f"is not computed by the {cls.name} route")
        return cls.refuses(server)

    def __init__(self, server, lam: Fraction, delta: Fraction = Fraction(0), share=None):
        self.server, self.lam, self.delta, self.share = server, lam, delta, share
        #: a service law per flow (or priority, threshold): the flows' laws; the server's service their mixture
        self.flow_services = server.flow_services if share is not None else None
        self.service = server.service
        #: the admitted first copy's own service law(s) when the server's service is a mixture, else None
        self.owns = None
        if share is not None:
            from ....symbolic.laws.mixture import LawMixture

            self.service = LawMixture.of(*self.flow_services, share)
            self.owns = self.flow_services
        elif delta != 0:
            from ....symbolic.laws.mixture import Mixture

            self.service = Mixture.of(server.service, server.duplicate_cost, delta)
            self.owns = (server.service,)
        self.build()

    def build(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def refused_flows(self, digits):
        """Per-flow refusal (``--control threshold`` only); None: p is common to the flows."""
        return None

    def refused(self, digits):
        """(p, q = 1 - p, utilization) as context numbers (floats for ``digits`` None); q is computed directly (the
        admitted mass, or throughput / lambda), never as 1 - p, so that an almost sure refusal keeps the relative
        accuracy of q."""
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        if self.saturated:
            return ctx.num(0), ctx.num(1), ctx.num(1)
        return self._refused(ctx, digits)

    def _refused(self, ctx, digits):  # pragma: no cover - abstract
        raise NotImplementedError

    def tails(self, ts, digits, fast=False, law=None):
        """(P(R_copy > t) for t in ``ts`` (exact, > 0), notes), clipped to [0, 1]. A law with its own tails
        (phase-type by uniformization, the lattice sum of a constant service) gives them to its relative
        accuracy; otherwise the Euler inversion of the sojourn transform with one parameter set, whose error
        is absolute: up to about 1e-9 in float64 (it grows with t: 3e-10 at t = 15.5 s measured for M/M/1),
        10^-(digits + 5) at ``digits`` (``fast`` is accepted for symmetry: the scan and the reported measures
        use the same tails). ``law``: another sojourn law of this server (a flow's own, :attr:`flow_laws`)."""
        one = 1.0 if digits is None else mpmath.mpf(1)
        law = self.law if law is None else law
        if self.saturated or not ts:
            return [one for _ in ts], []
        ts = list(ts)
        if law.tails is not None:
            return _own_tails(law, ts, digits, one)
        if digits is None:
            return _euler_float64(law, ts, one)
        return _euler_mp(law, ts, digits, one)


def _own_tails(law, ts, digits, one):
    """(A law's own tails (uniformization, lattice sums), notes); a float64 sum that cancels is redone at 15 digits,
    with the response's note (:func:`~qderive.numeric.response.escalation_note`)."""
    from ...response import CANCELS, escalation_note

    try:
        with np.errstate(all="ignore"):  # a float64 sum that overflows returns None (recomputed below)
            values, _ = law.tails(ts, digits)
    except ParameterError as err:  # the uniformization budget: name what the user controls
        raise ParameterError("--timeout", f"the copy instants are too long for the service rate: {err.constraint}"
                             " (a smaller --timeout or --t1, a larger --duplicate-cost: duplicates are served at rate "
                             "1/(c E[B]))") from None
    notes = []
    if any(v is None for v in values):  # the float64 lattice sum cancels there: 15 digits
        redo = [t for t, v in zip(ts, values) if v is None]
        got = dict(zip(redo, law.tails(redo, 15)[0]))
        values = [float(got[t]) if v is None else v for t, v in zip(ts, values)]
        notes.append(escalation_note("the copy sojourn tails P(R_copy > t)", CANCELS))
    return [_clip(v, one) for v in values], notes


def _euler_float64(law, ts, one):
    G = tail_transform(law.transform(FLOAT64))
    A, n, m = TAIL_FLOAT64_SETS[0]
    with np.errstate(all="ignore"):
        a = euler_inversion(FLOAT64, G, np.array([float(t) for t in ts]), A, n, m)
    if not np.all(np.isfinite(a)):
        raise Trouble("the float64 inversion of the sojourn transform overflowed")
    return [_clip(float(v), one) for v in a], [_ABSOLUTE_NOTE.format("up to about 1e-9 (it grows with t)")]


def _euler_mp(law, ts, digits, one):
    want = digits + 5
    ctx = mp_context(int(1.5 * want) + 10)
    A, n, m = euler_parameters(want)
    with ctx:
        G = tail_transform(law.transform(ctx))
        a = euler_inversion(ctx, G, ctx.array(ts), ctx.num(Fraction(A).limit_denominator(10**12)), n, m)
        return [_clip(+v, one) for v in a], [_ABSOLUTE_NOTE.format(f"below 1e-{want}")]


_ABSOLUTE_NOTE = ("the copy sojourn tails P(R_copy > t) come from one Euler inversion of its transform, absolute "
                  "error {}: probabilities smaller than that (timeout_probability, response_tail) carry no "
                  "relative digits")


def _clip(v, one):
    return one * 0 if v < 0 else (one if v > 1 else v)


class _ChainRoute(Route):
    """A route whose server is a CTMC solved by the one GTH (:attr:`states`, :attr:`moves`, :attr:`admitted`)."""

    def pi(self, ctx):
        key = "float64" if ctx.is_float64 else ctx.dps
        if key not in self._pi:
            with ctx:
                self._pi[key] = stationary(self.size, self.moves, ctx)
        return self._pi[key]

    def _refused(self, ctx, digits):
        pi = self.pi(ctx)
        with ctx:
            adm = pi[self.admitted]
            q = float(np.sum(adm)) if ctx.is_float64 else ctx.fsum(adm.tolist())
            busy = float(np.sum(pi[1:])) if ctx.is_float64 else ctx.fsum(pi[1:].tolist())
            return 1 - q, q, busy


# --------------------------------------------------------------------------------------
# Seed 001's threshold server and the priority servers
# --------------------------------------------------------------------------------------


class ThresholdRoute(Route):
    """``--control threshold``: seed 001's two-flow server (model ``two-flow``,
    :mod:`qderive.numeric.engines.two_flow`) at the class copy rates Lambda_1 = w lambda (``--method``'s flow)
    and Lambda_2 = (1 - w) lambda (w = ``share``, the offered share)::

        TwoFlowModel(Lambda_INVITE, Lambda_NON_INVITE, 1/E[B_INVITE], 1/E[B_NON_INVITE], L, H, R, algorithm)

    R = ``capacity`` (default H + 1), algorithm FIFO or PRIORITY (seed 001's algorithm 2: non-INVITE first in
    modes 1 and 2 only) from ``--discipline``. Each flow's admitted copy has the sojourn law of its class
    (:func:`qderive.numeric.engines.ctmc_wait.tagged_two_flow` with ``flow``: uniformization tails), each flow
    its own refusal probability p_c = B_c (:meth:`refused_flows`, PASTA, (C.3) of
    ``docs/theory/other-models.md`` section C)."""

    name = "threshold (two-flow chain)"

    @classmethod
    def covers(cls, server, mixture):
        return server.control is Control.THRESHOLD

    @classmethod
    def refuses(cls, server):
        for law in server.flow_services:
            if not _exponential(law):
                return Refusal.of_option(
                    server.option_of(law), "must be exponential with --control threshold (the two-flow "
                    "chain of seed 001 has exponential services); the simulator runs it", _spec(law))
        if server.duplicate_cost != 1:
            return Refusal.of_option(
                "--duplicate-cost", "must be 1 with --control threshold (the two-flow chain serves every "
                "copy at its flow's rate); the simulator runs it", decimal_text(server.duplicate_cost))
        if server.vacation is not None:
            return Refusal.of_option(
                "--vacation", "is not computed with --control threshold (the two-flow chain has no "
                "vacations); give --vacation none", _spec(server.vacation))
        return limit_refusal("--thresholds", "two_flow_high", server.thresholds[1], "the two-flow chain of --control "
                             "threshold carries the class sequence: about 3 * 2^(H+1) states")

    def build(self):
        from ....symbolic.models.two_flow import Algorithm, TwoFlowModel
        from ..ctmc_wait import tagged_two_flow

        sv = self.server
        inv = sv.flow_methods.index("invite")
        non = 1 - inv
        w = self.share if self.share is not None else sv.flow_rates[0] / sum(sv.flow_rates)
        rates = (self.lam * w, self.lam * (1 - w))
        laws = sv.flow_services
        L, H = sv.thresholds
        algorithm = Algorithm.PRIORITY if sv.discipline.value == "priority" else Algorithm.FIFO
        self.two_flow = TwoFlowModel(rates[inv], rates[non], 1 / laws[inv].mean, 1 / laws[non].mean, L, H,
                                     sv.threshold_capacity, algorithm)
        #: the two-flow class (1 = INVITE, 2 = non-INVITE) of each flow
        self.classes = (1, 2) if inv == 0 else (2, 1)
        self._solutions = {}
        self.flow_laws = tuple(phase_type_laws_of(tagged_two_flow(self.two_flow, c, self._two_flow_solution))
                               for c in self.classes)
        self.law = self.flow_laws[0]

    def _two_flow_solution(self, ctx):
        """The two-flow chain's stationary solution in ``ctx`` (:func:`qderive.numeric.engines.two_flow.solve`),
        kept per context; when the sparse float64 solver (chains above ``DENSE_FLOAT64`` states) does not converge,
        as past the server's capacity, the dense GTH in float64 (within the limit ``dense_states``)."""
        from ....symbolic.models.two_flow import Solver
        from .. import two_flow as TF
        from ..level_solver import ConvergenceError

        key = "float64" if ctx.is_float64 else ctx.dps
        if key not in self._solutions:
            with ctx:
                space = TF.sequence_space(self.two_flow)  # the tagged copies need the class-sequence chain
                try:
                    self._solutions[key] = TF.solve(self.two_flow, ctx, space=space)
                except ConvergenceError:
                    self._solutions[key] = TF.solve(self.two_flow, ctx, Solver.GTH, space=space)
        return self._solutions[key]

    def refused_flows(self, digits):
        """((p_i, q_i) of each flow, p = the copy-weighted refusal probability (Lambda_1 p_1 + Lambda_2 p_2) /
        lambda, q = 1 - p, utilization); p_c = B_c of the two-flow server (PASTA: the states refusing class c,
        (C.3)), q_c the states admitting it (each a sum of positive terms, never 1 - p_c); utilization P(n > 0)."""
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        sol = self._two_flow_solution(ctx)
        with ctx:
            pq = [(sol.rejection_probability(c), sol._sum(sol.space.accepts(c))) for c in self.classes]
            if digits is None:
                pq = [(float(p), float(q)) for p, q in pq]
            rates = [ctx.num(r) for r in (self.two_flow.arrival_rates[c - 1] for c in self.classes)]
            total = rates[0] + rates[1]
            p = (rates[0] * pq[0][0] + rates[1] * pq[1][0]) / total
            q = (rates[0] * pq[0][1] + rates[1] * pq[1][1]) / total
            busy = sol._sum(sol.space.length > 0)
            return pq, p, q, (float(busy) if digits is None else busy)

    def _refused(self, ctx, digits):  # the copy-weighted mean of the flows' p_c
        _, p, q, busy = self.refused_flows(digits)
        return p, q, busy


_PRIORITY_COMPUTED = ("priority is computed without --capacity, --vacation or a --duplicate-cost below 1, for "
                      "--control none (smooth laws: the M/G/1 priority queue) and --control ignore/503 (exponential "
                      "laws: the control chain with priority); --discipline fifo computes the rest")


def _priority_refusal(server) -> Refusal | None:
    """What neither priority server computes: a duplicate cost below 1, a capacity, a vacation."""
    if server.duplicate_cost != 1:
        return Refusal.of_option("--duplicate-cost", f"below 1 with --discipline priority is not computed "
                                 f"({_PRIORITY_COMPUTED})", decimal_text(server.duplicate_cost))
    for option, value in (("--capacity", server.capacity), ("--vacation", server.vacation)):
        if value is not None:
            return Refusal.of_option("--discipline", f"priority with {option} is not computed ({_PRIORITY_COMPUTED})",
                                     "priority")
    return None


class _PriorityRoute(Route):
    """``--discipline priority`` (non-INVITE copies first, :mod:`.priority`): each flow's sojourn law
    (:attr:`flow_laws`) at the class rates Lambda_1 = w lambda, Lambda_2 = (1 - w) lambda (w = ``share``)."""

    def _classes(self):
        hi = self.server.flow_methods.index("non-invite")
        laws = self.flow_services
        rates = (self.lam * self.share, self.lam * (1 - self.share))
        return hi, 1 - hi, laws, rates


class PriorityQueue(_PriorityRoute):
    """``--discipline priority --control none``: the M/G/1 non-preemptive priority queue's transforms (route (a) of
    :mod:`.priority`: (P1), (P2); a class without stationary regime answers nothing)."""

    name = "M/G/1 priority queue"

    @classmethod
    def covers(cls, server, mixture):
        return server.priority and server.control is Control.NONE

    @classmethod
    def refuses(cls, server):
        refusal = _priority_refusal(server)
        if refusal is not None:
            return refusal
        for law in server.flow_services:
            smooth, why = smooth_laws((law,))
            if not smooth:
                return Refusal.of_option(
                    server.option_of(law), f"has no smooth density ({why}): the priority queue's sojourn "
                    "is computed by inversion, for smooth laws only (exp, erlang, hyperexp, gamma, ph)",
                    _spec(law))
        return None

    def build(self):
        from . import priority as SP

        hi, lo, laws, rates = self._classes()
        law_hi, law_lo, self.utilization = SP.mg1_priority_laws(laws[hi], laws[lo], rates[hi], rates[lo])
        if law_hi is None:
            self.saturated = True
            return
        out = [None, None]
        out[hi], out[lo] = law_hi, (law_lo or SP.never_law())
        self.flow_laws = tuple(out)

    def _refused(self, ctx, digits):  # the M/G/1 queue refuses nothing (utilization min(rho, 1))
        return ctx.num(0), ctx.num(1), ctx.num(self.utilization)


class PriorityChain(_PriorityRoute, _ChainRoute):
    """``--discipline priority --control ignore|503``, exponential laws: the control chain on (n_H, n_L, class in
    service, mode) and one tagged chain per class (route (b) of :mod:`.priority`, uniformization)."""

    name = "control chain with priority"

    @classmethod
    def covers(cls, server, mixture):
        return server.priority and server.control in _CONTROLLED

    @classmethod
    def refuses(cls, server):
        refusal = _priority_refusal(server)
        if refusal is not None:
            return refusal
        for law in server.flow_services:
            if not _exponential(law):
                return Refusal.of_option(
                    server.option_of(law), f"with --discipline priority and --control "
                    f"{server.control.value} must be exponential (the control chain with priority has a "
                    f"phase per class; {_PRIORITY_COMPUTED})", _spec(law))
        return limit_refusal("--thresholds", "priority_high", server.thresholds[1], "the tagged INVITE copy's chain "
                             "of --discipline priority has about H^3/3 states")

    def build(self):
        from . import priority as SP

        hi, lo, laws, rates = self._classes()
        L, H = self.server.thresholds
        values = SP.chain_rates(rates[hi], rates[lo], 1 / laws[hi].mean, 1 / laws[lo].mean)
        self.states, labelled = SP.priority_chain(L, H)
        self.moves = [(i, j, values[k]) for i, j, k in labelled]
        self.size = len(self.states)
        self.admitted = [i for i, (nh, nl, _, s) in enumerate(self.states) if s == 0 and nh + nl < H]
        self._pi = {}
        out = [None, None]
        out[hi] = phase_type_laws_of(SP.tagged_high(L, H, values, self.pi))
        out[lo] = phase_type_laws_of(SP.tagged_low(L, H, values, self.pi))
        self.flow_laws = tuple(out)


# --------------------------------------------------------------------------------------
# FIFO without control: the rooms of vacation-infinite / vacation-finite
# --------------------------------------------------------------------------------------


class _RoomRoute(Route):
    """A route through ``vacation-infinite`` or ``vacation-finite`` (:attr:`base`) with the sojourn law of its
    response laws."""

    def _room(self, places):
        from ....symbolic.batches.finite import Constant
        from ....symbolic.models.vacation import Admission, FiniteVacationQueue
        from ..vacation_finite_wait import response_laws

        sv = self.server
        self.base = FiniteVacationQueue(self.lam, Constant(1), sv.service, sv.vacation, places - 1,
                                        Admission.PARTIAL, sv.vacation_policy)
        self.law = response_laws(self.base)["sojourn"]
        self._check_tails()

    def _check_tails(self):
        """Refuse a sojourn law with neither a smooth transform nor tails of its own, naming the option at fault (the
        vacation's when a vacation law is given and the service alone would do)."""
        sv, law = self.server, self.law
        vacation = sv.vacation
        _refuse_bounds(law, sv)
        if vacation is not None and not law.smooth and law.tails is not None and self.base.name == "vacation-infinite":
            # the infinite room's exact tails of a kinked law with vacations (shifted inversions, the lattice sum with
            # the vacation's pieces) take seconds per evaluation, and the scan of the fixed point needs hundreds
            at_fault = "--vacation" if "vacation" in law.why_not_smooth else "--service"
            raise ParameterError(at_fault, f"has no smooth density with --vacation in this server "
                                 f"({law.why_not_smooth}): its exact sojourn tails take seconds each and the "
                                 "fixed point needs hundreds of them; use smooth laws (exp, erlang, hyperexp, gamma, "
                                 "ph), or the simulator (qderive simulate sip-retransmission)",
                                 _spec(vacation if at_fault == "--vacation" else sv.service))
        if law.smooth or law.tails is not None:
            return
        at_fault = "--service" if vacation is None or "vacation" not in law.why_not_smooth else "--vacation"
        raise ParameterError(at_fault, f"has no exact response-time tails in this server: {law.why_not_smooth} "
                             "(use a smooth law: exp, erlang, hyperexp, gamma, ph)",
                             _spec(sv.service if at_fault == "--service" else vacation))

    def _refused(self, ctx, digits):
        rec = self.base.evaluate(digits)
        with ctx:
            q = rec.throughput / ctx.num(self.lam)
            return rec.loss_probability, q, rec.throughput * ctx.num(self.server.service.moment(1))


def _refuse_bounds(law, server):
    """Refuse a sojourn law whose tails are certified bounds only (``ResponseLaw.bracket``: a uniform, measured or
    lognormal service in the finite room, issue 28): each bracket costs seconds, the fixed point's scan needs hundreds
    of tails, and an estimate inside a bracket has no place in it; exact lattice sums (a constant service) stay."""
    if law.smooth or law.tails is None or law.bracket is None:
        return
    vacation = server.vacation
    at_fault = "--vacation" if vacation is not None and "vacation" in (law.why_not_smooth or "") else "--service"
    # a vacation without exact survival pieces (gamma, lognormal, uniform) with a kinked service: a vacation law
    # given by such pieces keeps the exact sums; otherwise the service is at fault and a smooth one is exact
    instead = ("a vacation given by exact survival pieces (exp, erlang, hyperexp, coxian, ph, det, empirical)"
               if at_fault == "--vacation" else "smooth laws (exp, erlang, hyperexp, gamma, ph)")
    raise ParameterError(at_fault, "has only certified bounds for its response-time tails in this server (a law with "
                         "kinks or a heavy tail off every lattice): each costs seconds and the fixed point needs "
                         f"hundreds of them; use {instead}, or the simulator (qderive simulate sip-retransmission)",
                         _spec(vacation if at_fault == "--vacation" else server.service))


class InfiniteRoom(_RoomRoute):
    """``--control none`` without capacity: M/G/1 with the vacations (``vacation-infinite``, batches of 1); no
    stationary regime for lambda E[B] >= 1: every copy unanswered (:attr:`saturated`)."""

    name = "M/G/1 (vacation-infinite)"

    @classmethod
    def covers(cls, server, mixture):
        return _fifo(server) and server.control is Control.NONE and server.capacity is None and not mixture

    @classmethod
    def refuses(cls, server):
        """With vacations, a service or vacation law with kinks, from the laws alone (before any work; the check
        :meth:`_check_tails` makes once the response laws are built, which takes seconds): its exact tails (a lattice
        sum, shifted inversions: ``vacation-infinite``'s declaration) cost seconds each, or it has none."""
        if server.vacation is None:
            return None
        smooth, why = smooth_laws((server.service,), server.vacation)
        if smooth:
            return None
        from ....symbolic.batches.finite import Constant
        from ....symbolic.capabilities import ask_consumer
        from ....symbolic.models.vacation import VacationQueue
        from ..vacation_wait import response_laws

        at_fault = "--vacation" if "vacation" in why else "--service"
        law = server.vacation if at_fault == "--vacation" else server.service
        base = VacationQueue(1 / (2 * server.service.moment(1)), Constant(1), server.service, server.vacation,
                             server.vacation_policy)
        if ask_consumer(response_laws, base, {"sojourn_tail"}) is None:  # exact tails, seconds per evaluation
            return Refusal.of_option(
                at_fault, f"has no smooth density with --vacation in this server ({why}): its exact "
                "sojourn tails take seconds each and the fixed point needs hundreds of them; use smooth "
                "laws (exp, erlang, hyperexp, gamma, ph), or the simulator (qderive simulate "
                "sip-retransmission)", _spec(law))
        return Refusal.of_option(
            at_fault, f"has no exact response-time tails in this server: {why} (use a smooth law: exp, "
            "erlang, hyperexp, gamma, ph)", _spec(law))

    def build(self):
        from ....symbolic.batches.finite import Constant
        from ....symbolic.models.vacation import VacationQueue
        from ..vacation_wait import response_laws

        if self.lam * self.service.moment(1) >= 1:
            self.saturated = True
            return
        self.base = VacationQueue(self.lam, Constant(1), self.service, self.server.vacation,
                                  self.server.vacation_policy)
        self.law = response_laws(self.base)["sojourn"]
        self._check_tails()

    def _refused(self, ctx, digits):
        return ctx.num(0), ctx.num(1), ctx.num(self.lam * self.service.moment(1))


class FiniteRoom(_RoomRoute):
    """``--control none --capacity K``: M/G/1/K with the vacations (``vacation-finite``, r = K - 1); p its loss
    probability (PASTA)."""

    name = "M/G/1/K (vacation-finite)"

    @classmethod
    def covers(cls, server, mixture):
        return _fifo(server) and server.control is Control.NONE and server.capacity is not None and not mixture

    def build(self):
        self._room(self.server.capacity)


class FiniteControl(_RoomRoute):
    """``--control ignore|503`` with L = H - 1 and one service law (c = 1): exactly M/G/1/H (with the vacations):
    the mode is invisible (``docs/guides/sip-retransmission.md``; the engine's module docstring). With L = H - 1
    the overload states are (H, overload) alone, and both (H, normal) and (H, overload) refuse every arrival and
    return to (H - 1, normal) at the departure (or a vacation's end: a vacation never starts with N = H), so the count
    is that of ``vacation-finite`` with r = H - 1 waiting places (``docs/theory/chapter2.md`` section 2)."""

    name = "M/G/1/H (vacation-finite, L = H - 1)"

    @classmethod
    def covers(cls, server, mixture):
        return (_fifo(server) and server.control in _CONTROLLED and not mixture
                and server.thresholds[0] == server.thresholds[1] - 1)

    def build(self):
        self._room(self.server.thresholds[1])


# --------------------------------------------------------------------------------------
# The control: the exponential chain, the departure-epoch chain
# --------------------------------------------------------------------------------------


class ExponentialChain(_ChainRoute):
    """``--control ignore|503`` without vacations, exponential laws: the contract's CTMC on (n, phase, mode) with a
    phase per service rate (1/E[B] and 1/(c E[B]) at the duplicate fraction delta, or one per flow at the share w;
    :func:`.chains.control_chain`), the admitted copy's sojourn by the tagged chain (the tagged copy's first service
    at its own rate; uniformization tails)."""

    name = "exponential control chain"

    @classmethod
    def covers(cls, server, mixture):
        return (_fifo(server) and server.control in _CONTROLLED and server.vacation is None
                and all(_exponential(B) for B in server.flow_services))

    def build(self):
        sv = self.server
        L, H = sv.thresholds
        mu = 1 / sv.service.mean
        d = self.delta
        if self.share is not None:  # a service law per flow: the phases are the flows' rates, w the INVITE share
            phases = [(1 / B.mean, w) for B, w in zip(self.flow_services, (self.share, 1 - self.share))]
        else:
            phases = [(mu, 1 - d), (mu / sv.duplicate_cost, d)]
        phases = [(r, w) for r, w in phases if w > 0]
        rates, weights = tuple(r for r, _ in phases), tuple(w for _, w in phases)
        self.states, self.moves = control_chain(L, H, self.lam, rates, weights)
        self.size = len(self.states)
        self.admitted = [i for i, (n, _, s) in enumerate(self.states) if s == 0 and n < H]
        self._pi = {}
        self.law = phase_type_laws_of(tagged_chain(self.states, H, rates, weights, mu, self.pi))
        if self.share is not None:  # each flow's admitted copy: its own first service rate (tagged_chain's first_rate)
            self.flow_laws = tuple(phase_type_laws_of(tagged_chain(self.states, H, rates, weights, 1 / B.mean,
                                                                   self.pi)) for B in self.flow_services)


class GeneralControl(Route):
    """``--control ignore|503`` with a general service law and any L < H (one law, c = 1): the departure-epoch chain
    of :mod:`.control` (p by PASTA from the refusals per departure interval, the admitted copy's sojourn by the
    finite room's wait machinery over the normal-mode service starts; with vacations the chain extended to the
    period ends). It reduces to :class:`FiniteControl` at L = H - 1 and equals :class:`ExponentialChain` for
    exponential service (the tests construct the routes directly)."""

    name = "departure-epoch control chain"

    @classmethod
    def covers(cls, server, mixture):
        return _fifo(server) and server.control in _CONTROLLED and not mixture

    def build(self):
        from .control import ControlServer

        sv = self.server
        L, H = sv.thresholds
        self.general = ControlServer(self.lam, sv.service, L, H, vacation=sv.vacation, policy=sv.vacation_policy)
        self.law = self.general.law
        _refuse_bounds(self.law, sv)
        if not self.law.smooth and self.law.tails is None:
            at_fault = "--vacation" if sv.vacation is not None and "vacation" in self.law.why_not_smooth else \
                "--service"
            raise ParameterError(at_fault, f"has no exact response-time tails in this server: "
                                 f"{self.law.why_not_smooth} (use a smooth law: exp, erlang, hyperexp, gamma, ph)",
                                 _spec(sv.vacation if at_fault == "--vacation" else sv.service))

    def _refused(self, ctx, digits):
        return self.general.refused(ctx)


# --------------------------------------------------------------------------------------
# The mixture server (a duplicate cost c < 1, a service law per flow) in each room
# --------------------------------------------------------------------------------------


class _MixtureRoute(Route):
    """The server whose service is the mixture :attr:`service` and whose tagged copy has its own law(s)
    :attr:`owns`: the sojourn W_M + B_own in a room (:class:`.mixture.MixtureServer`; the control room keeps its
    :class:`.control.ControlServer` as :attr:`general`). Every mixture route inverts W_M(s) B_own(s) (Euler): the
    laws and the vacation must be smooth."""

    @classmethod
    def refuses(cls, server):
        from ....symbolic.laws.deterministic import Deterministic

        what = "--duplicate-cost below 1" if server.duplicate_cost != 1 else "two service laws (--service-non-invite)"
        laws = server.flow_services if server.law_per_flow else (server.service,)
        # a constant law: the mixture of constants has kinks at all their sums (no smooth density, no exact tails)
        if server.duplicate_cost != 1 and isinstance(server.service, Deterministic):
            return Refusal.of_option(
                "--duplicate-cost", "below 1 with a constant --service is not computed (the service is "
                "then the mixture of the constants D and c D: kinks at all their sums, no exact tails; a "
                "smooth law such as erlang works); the simulator runs it",
                decimal_text(server.duplicate_cost))
        for law in laws if server.law_per_flow else ():
            if isinstance(law, Deterministic):
                return Refusal.of_option(
                    server.option_of(law), "a constant law with a second service law "
                    "(--service-non-invite) is not computed: the server's service is then a mixture of the "
                    "two laws, whose waiting time has kinks at all their sums and no exact tails (a smooth "
                    "law such as erlang works; the simulator runs it)", _spec(law))
        for law in laws + ((server.vacation,) if server.vacation is not None else ()):
            smooth, _ = smooth_laws((law,))
            if not smooth:
                return Refusal.of_option(
                    server.option_of(law), f"has no smooth density (its transform has exp(-s D) factors): "
                    f"with {what} the server's service is a mixture whose queue's wait is computed by "
                    "inversion, for smooth laws only (exp, erlang, hyperexp, gamma, ph); the simulator "
                    "runs it", _spec(law))
        return None

    def _mixture(self, room, **where):
        sv = self.server
        self.mixed = MixtureServer(room, self.lam, self.service, self.owns, vacation=sv.vacation,
                                   policy=sv.vacation_policy, **where)
        self.general = self.mixed.control
        self.law = self.mixed.laws[0]
        if self.share is not None:
            self.flow_laws = self.mixed.laws
        if not self.law.smooth:  # refused earlier by refuses, which names the option
            raise ParameterError("--service", f"has no smooth density here ({self.law.why_not_smooth}): the mixture "
                                 "queue's wait is inverted, for smooth laws only", _spec(sv.service))

    def _refused(self, ctx, digits):
        return self.mixed.refused(digits)


class MixtureInfinite(_MixtureRoute):
    """``--control none`` without capacity, a mixture service: M/G/1 with the mixture and the vacations (the
    Pollaczek-Khinchine form compiled once with the mixture's weights as arguments)."""

    name = "mixture M/G/1"

    @classmethod
    def covers(cls, server, mixture):
        return _fifo(server) and server.control is Control.NONE and server.capacity is None and mixture

    def build(self):
        if self.lam * self.service.moment(1) >= 1:
            self.saturated = True
            return
        self._mixture(Room.INFINITE)


class MixtureFinite(_MixtureRoute):
    """A mixture service in the finite room: ``--control none --capacity K`` (r = K - 1), or ``--control
    ignore|503`` with vacations and L = H - 1 (the mode is invisible: K = H, :class:`FiniteControl`)."""

    name = "mixture M/G/1/K"

    @classmethod
    def covers(cls, server, mixture):
        if not (_fifo(server) and mixture):
            return False
        if server.control is Control.NONE:
            return server.capacity is not None
        L, H = server.thresholds
        return server.vacation is not None and L == H - 1

    def build(self):
        sv = self.server
        self._mixture(Room.FINITE, places=sv.capacity if sv.control is Control.NONE else sv.thresholds[1])


class MixtureControl(_MixtureRoute):
    """``--control ignore|503`` with a mixture service: the departure-epoch chain of :mod:`.control` with the
    mixture (any L < H without vacations, L <= H - 2 with them)."""

    name = "mixture control chain"

    @classmethod
    def covers(cls, server, mixture):
        return _fifo(server) and server.control in _CONTROLLED and mixture

    def build(self):
        sv = self.server
        self._mixture(Room.CONTROL, thresholds=sv.thresholds)


#: the routes in the order of selection (the first that covers and computes a server part is taken)
ROUTES = (ThresholdRoute, PriorityQueue, PriorityChain, InfiniteRoom, FiniteRoom, MixtureInfinite, MixtureFinite,
          ExponentialChain, FiniteControl, GeneralControl, MixtureControl)


def select_route(server, mixture: bool = False) -> type[Route]:
    """The route class of the server part ``server`` (with a mixture service when ``mixture``): the first of
    :data:`ROUTES` that covers it and computes it; raises the refusal of the first that covers it otherwise."""
    refusal = route_refusal(server, mixture)
    if refusal is not None:
        raise refusal.error()
    return next(route for route in ROUTES if route.covers(server, mixture) and route.refuses(server) is None)


def route_refusal(server, mixture: bool = False) -> Refusal | None:
    """None when a route computes ``server``, else the refusal of the first route that covers it."""
    first = None
    for route in ROUTES:
        if route.covers(server, mixture):
            refusal = route.refuses(server)
            if refusal is None:
                return None
            first = first or refusal
    return first or Refusal.of_option("--control", f"{server.control.value} is not computed by any route of the server")


def server(model, lam, delta: Fraction = Fraction(0), share=None, route: type[Route] | None = None) -> Route:
    """The server of ``model`` (a model or its server part) at copy rate ``lam``: the selected route (or ``route``,
    forced: a test's cross-check of two routes) at the duplicate fraction ``delta`` or the flow share ``share``."""
    part = getattr(model, "server", model)
    if route is None:
        route = select_route(part, mixture=share is not None or delta != 0)
    return route(part, Fraction(lam), delta, share)
