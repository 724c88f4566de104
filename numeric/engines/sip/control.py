r"""The contract's hysteretic control with a general service law, any 0 <= L < H, also with vacations (issue 17).

The rule (issue 17, ``docs/guides/sip-retransmission.md``; control ``ignore``/``503``): with N the copies in the server, in
normal mode an arrival finding N < H is admitted and one finding N = H switches the server to overload and is
refused; in overload every arrival is refused; a departure leaving N = L returns to normal. The state
(H, normal) exists (entered by an admission from H - 1) and is left either to overload (an arrival) or to
H - 1 (a departure): with a general service law the mode is a race between the Poisson arrivals and the
residual service, so the server is solved at departure epochs, the M/G/1/K method of
``docs/theory/chapter2.md`` section 2.

**1. The embedded chain.** The state just after a departure is (n, mode): (n, normal) for n = 0..H-1 and
(n, overload) for n = L+1..H-1 (a departure leaving L is in normal mode). The next service starts with
m = max(n, 1) copies (from (0, normal) after an idle period: the arrival finding 0 < H is admitted) in the same
mode, and A ~ Poisson(lambda B) arrivals occur during it, beta_j = P(A = j), T_j = P(A > j) (the count
sequences of :mod:`qderive.numeric.kernels.counts`). The mode cannot change during a service (only a departure
or an arrival finding H changes it, and the latter only to overload), so::

    (n, normal)   -> (m + j - 1, normal)                     with beta_j,  j = 0..H-m   (count m + j <= H)
                  -> (H - 1, overload) [(H - 1, normal) if L = H - 1]  with T_{H-m}  (an arrival found H)
    (n, overload) -> (n - 1, overload) [(L, normal) if n - 1 = L]      with 1        (nothing admitted)

solved by the one GTH (:func:`qderive.numeric.kernels.chains.gth_stationary`): pi. For L = H - 1 no overload
state is left and this is the departure chain of M/G/1/H (``vacation-finite`` with r = H - 1).

**2. Refusals and utilization.** Per departure interval one copy is admitted and R copies are refused: a service
starting from (n, normal) refuses the arrivals that find H, (m + A - H)^+, one from (n, overload) all of its A::

    R = sum_{n<H} pi(n, normal) E(A - (H - m))^+ + sum_n pi(n, overload) lambda E[B],
    E(A - k)^+ = sum_{i >= k} T_i = T_k + T^(2)_k,       T^(2)_k = sum_{i>k} T_i,

so by PASTA the copy refusal probability is p = R / (1 + R) and q = 1 - p = 1 / (1 + R) (both sums of positive
terms); the throughput is lambda q and the utilization lambda q E[B]. (The mean interval E[B] + pi(0, normal) /
lambda gives the same rate: 1 + R = lambda E[B] + pi(0, normal), which the tests check.)

**3. The admitted copy's sojourn.** An arrival is admitted only during an idle period or a service that started
in normal mode, at a count n < H; the level process inside such a service (arrivals up to H, the arrival finding
H and all later ones refused) is that of M/G/1/H, and an admitted copy finding n waits the residual service and
n - 1 services (FIFO) whatever the mode does later. So its wait is the finite room's renewal-reward law
(:mod:`qderive.numeric.engines.vacation_finite_wait`, items 1-3: rows w_K = Y L^K, residual weights g_K) over the
*normal-mode* service starts: the embedded law injected there is q_n = pi(n, normal), n = 0..H-1 (Y_0 = q_0 + q_1,
Y_n = q_{n+1}, t_I = q_0 / lambda; services that start in overload admit nobody and drop out of N(s) and N(0)
alike, so no normalisation is needed). The same rows give the constant service's exact lattice sums
(:func:`~.vacation_finite_wait.lattice_tails`). The sojourn of the copy is W + B_own: B_own = B for the first
admitted copy of a transaction (the copy whose completion is the response), also when the server's service is
the mixture of first copies and duplicates of ``--duplicate-cost`` c < 1 (:class:`ControlServer` ``own``).

**4. With vacations** (``--vacation V``, ``--vacation-policy multiple|single``; the model's module docstring,
*Vacations*): N counts the waiting copies plus one while the server serves *or is on vacation*, and the mode is
normal again whenever N falls to L. A departure leaving nobody starts a vacation (N stays 1); a vacation that ends
with copies waiting moves one to the server (N - 1); one that ends with nobody starts another (multiple: N stays
1) or leaves the server idle (single: N = 0, the only way N reaches 0). So a vacation is the "service" of a
phantom copy of law V, its arrivals A_V ~ Poisson(lambda V) with the count sequences phi_j = P(A_V = j),
T^V_j = P(A_V > j), and the chain is embedded at the *period ends* (departures and vacation ends): (0, normal) is
now the start of a vacation with nobody waiting (N = 1), single vacations add the idle state I, and L = 0 adds the
vacation in overload Vo (under multiple vacations N >= 1 always, so L = 0 would never end the overload: refused)::

    (0, normal) -> (j, normal)                 with phi_j,  j = 1..H-1            (N = 1 + j <= H)
                -> (0, normal) | I             with phi_0   (multiple | single)
                -> (H - 1, overload) [normal if L = H - 1]   with T^V_{H-1}        (an arrival found N = H)
    I           -> the rows of a service from m = 1 (beta), as (0, normal) of item 1
    (n, normal), n >= 1, and (n, overload): item 1, except (1, overload) -> Vo when L = 0 (N stays 1)
    Vo          -> I                           with 1   (it ends with nobody waiting: N falls to 0 = L)

(:func:`control_embedded_chain` with ``vacation``; one GTH). Per period one copy departs only if the period is a
service, so with D = sum of pi over the service periods ((n, .) for n >= 1 and I) and the refusals per period::

    R = pi(0, normal) E(A_V - (H - 1))^+ + sum_{n>=1} pi(n, normal) E(A - (H - n))^+ + pi(I) E(A - (H - 1))^+
        + sum_n pi(n, overload) lambda E[B] + pi(Vo) lambda E[V],

PASTA gives p = R / (D + R), q = D / (D + R) and the utilization lambda q E[B] (positive sums; without vacations
D = 1, item 2). The admitted copy's wait is the residual of the period in progress (service or vacation) plus the
copies ahead, whatever the mode does later: the finite room's renewal-reward form with vacations
(:mod:`~qderive.numeric.engines.vacation_finite_wait`, items 1-3, r = H - 1, the same policy) over the normal-mode
period starts, q_n = pi(n, normal): Y_n = q_{n+1} + [single] q_0 phi_0 [n = 0], V = q_0 at level 0, t_I = [single]
q_0 phi_0 / lambda, plus the idle periods after Vo (weight pi(Vo): Y_0 and lambda t_I, the ``idle`` term of
:func:`~qderive.numeric.kernels.finite_wait.wait_finite_start`); periods that start in overload admit nobody. The
tails are the finite room's (:func:`~.vacation_finite_wait.response_laws` over this wait law: Euler inversion for
smooth laws, the lattice sums for a constant service, the phase-type service's sums with constant vacations). For
L = H - 1 this is M/G/1/H with the vacations (``vacation-finite``, r = H - 1); measured in
tests/test_sip_vacation_control.py: against a CTMC of the rule (exponential service and vacations, 40 digits) within
1e-40 (p, q, utilization) and 1e-36 (tails, 30 digits), and against the M/G/1/H route at L = H - 1 (Erlang-2
service, constant vacation) within 2e-41 and 1e-61.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ...backend import FLOAT64, mp_context
from ...kernels.chains import gth_stationary
from ...response import ResponseLaw
from ...sequences import count_sequences
from .. import vacation_finite_wait as FW
from .sojourn import plus_own, smooth_laws

__all__ = ["control_embedded_chain", "ControlServer", "ControlWait"]


def control_embedded_chain(ctx, L: int, H: int, beta, tail, vacation=None):
    """The transition probabilities (a context matrix; GTH reads only the off-diagonal) of the embedded chain of
    item 1 of the module docstring: states (n, normal) at index n = 0..H-1, then (n, overload) at index
    H + n - L - 1 for n = L+1..H-1. ``beta`` = P(A = j) and ``tail`` = P(A > j), j = 0..H (the count
    sequences: the overflow is the tail itself, never 1 - a sum).

    ``vacation`` = (phi, vtail, single) with the vacation's count sequences over 0..H: the chain of item 4 at the
    period ends (departures and vacation ends); (0, normal) is then the start of a vacation, and single vacations
    add the idle state I (index ``size - 1``, or ``size - 2`` when L = 0 adds the vacation in overload Vo last)."""
    extra = 0 if vacation is None else (int(vacation[2]) + int(vacation[2] and L == 0))
    size = H + max(0, H - 1 - L) + extra
    P = ctx.zeros((size, size))

    def over(n):
        return H + n - L - 1 if n > L else n  # (L, overload) does not exist: a departure leaving L is normal

    def service(i, m, counts, tails, empty):  # a period from the row i with the count m, nobody waiting: ``empty``
        for j in range(H - m + 1):
            P[i, m + j - 1 if m + j > 1 else empty] += counts[j]
        P[i, over(H - 1)] = P[i, over(H - 1)] + tails[H - m]  # an arrival found H: overload (item 1)

    if vacation is None:
        service(0, 1, beta, tail, 0)
    else:
        phi, vtail, single = vacation
        idle = H + max(0, H - 1 - L) if single else None
        service(0, 1, phi, vtail, idle if single else 0)  # the vacation: a "service" of a phantom copy (item 4)
        if single:
            service(idle, 1, beta, tail, 0)  # the idle server: the next copy is served at once
    for i in range(1, H):
        service(i, i, beta, tail, 0)
    for n in range(L + 1, H):
        P[over(n), over(n - 1)] = ctx.num(1)
    if vacation is not None and L == 0:
        if not vacation[2]:
            raise ValueError("L = 0 with multiple vacations: overload never ends (N >= 1 always; item 4)")
        # (1, overload): the departure starts a vacation in overload (N stays 1)
        P[over(1), 0] = ctx.num(0)
        P[over(1), size - 1] = ctx.num(1)
        P[size - 1, idle] = ctx.num(1)  # single (multiple is refused): it ends with nobody waiting, N falls to L = 0
    return P


class ControlWait(FW.FiniteWait):
    """The finite room's wait law object (``vacation-finite`` with r = H - 1, batches of 1, the vacations of the
    base model if any) with the embedded law replaced by the normal-mode part of the control chain (module
    docstring, items 3 and 4). ``start(ctx)`` gives q_n = pi(n, normal), n = 0..H-1, in the context ``ctx``;
    ``idle(ctx)`` (None: no such term) the extra idle weight pi(Vo) of item 4."""

    def __init__(self, base, start, idle=None):
        self._start, self._idle = start, idle
        super().__init__(base)

    def _make(self, ctx, order):
        return FW.build_data(self.model, ctx, order, self._start(ctx), None if self._idle is None else self._idle(ctx))

    def data(self, ctx, order=1):
        """The s-independent data (:meth:`FW.FiniteWait.data`, the same precision rule) built from ``start``."""
        store = self._float if ctx.is_float64 else self._mp
        got = store.get("data")
        if ctx.is_float64:
            if got is None or got.order < order:
                got = store["data"] = self._make(FLOAT64, max(order, 1))
            return got
        want = ctx.dps + self.guard
        if got is None or got.ctx.dps < want or got.order < order:
            dctx = mp_context(max(want + FW.HEADROOM, got.ctx.dps if got is not None else 0))
            got = store["data"] = self._make(dctx, max(order, 1, got.order if got else 1))
        return got


class ControlServer:
    """The server of the contract's control at copy rate ``lam`` (exact) with the service law ``service`` (the
    copies' law: B, or the mixture of first copies and duplicates) and the admitted first copy's own service
    ``own`` (default ``service``): :meth:`refused` (p, q, utilization) of item 2 and ``law`` (the sojourn
    :class:`~qderive.numeric.response.ResponseLaw` of an admitted first copy, item 3). ``vacation`` (a time law,
    default none) and ``policy`` (a :class:`~qderive.symbolic.models.vacation.VacationPolicy`): the server with
    vacations of item 4 (``own`` must then be ``service``: c = 1)."""

    def __init__(self, lam: Fraction, service, L: int, H: int, own=None, vacation=None, policy=None):
        from ....symbolic.batches.finite import Constant
        from ....symbolic.models.vacation import (
            Admission,
            FiniteVacationQueue,
            VacationPolicy,
        )

        self.lam, self.service, self.L, self.H = lam, service, L, H
        self.own = service if own is None else own
        self.vacation = vacation
        self.single = vacation is not None and policy is VacationPolicy.SINGLE
        if vacation is not None and (self.own is not service or (L == 0 and not self.single)):
            raise ValueError("the control with vacations needs own = service (c = 1) and L >= 1 under multiple "
                             "vacations (item 4)")
        if vacation is None:
            self.base = FiniteVacationQueue(lam, Constant(1), service, None, H - 1)
        else:
            self.base = FiniteVacationQueue(lam, Constant(1), service, vacation, H - 1, Admission.PARTIAL,
                                            policy or VacationPolicy.MULTIPLE)
        self._pi = {}
        idle = self._idle if self.single and L == 0 else None
        self.wait = ControlWait(self.base, self._normal, idle)
        self.law = self._sojourn()

    def counts(self, ctx):
        """(beta, T, T^(2)) of A over 0..H (:func:`~qderive.numeric.sequences.count_sequences`)."""
        with ctx:
            return count_sequences(self.service.count_law(self.lam), self.H, ctx)

    def vacation_counts(self, ctx):
        """(phi, T, T^(2)) of the arrivals during a vacation over 0..H (item 4)."""
        with ctx:
            return count_sequences(self.vacation.count_law(self.lam), self.H, ctx)

    def pi(self, ctx):
        """The stationary law of the embedded chain (items 1 and 4) in ``ctx``, kept per precision."""
        key = "float64" if ctx.is_float64 else ctx.dps
        if key not in self._pi:
            beta, tail, _ = self.counts(ctx)
            vac = None
            if self.vacation is not None:
                phi, vtail, _ = self.vacation_counts(ctx)
                vac = (phi, vtail, self.single)
            with ctx:
                P = control_embedded_chain(ctx, self.L, self.H, beta, tail, vac)
                # GTH scales pi by its first state: the empty one below capacity, a full one above it (pi(n) grows
                # like (lambda E[B])^n there: ratios to the empty state overflow float64 at H = 500, lambda E[B] = 6);
                # the idle states of item 4 (I, Vo: last) stay last
                main = self.H + max(0, self.H - 1 - self.L)
                order = np.arange(len(P))
                if self.lam * self.service.moment(1) >= 1:
                    order[:main] = order[:main][::-1]
                pi = ctx.zeros(len(P))
                pi[order] = gth_stationary(ctx, P[np.ix_(order, order)])
                self._pi[key] = pi
        return self._pi[key]

    def _normal(self, ctx):
        with ctx:
            return self.pi(ctx)[: self.H].copy()

    def _idle(self, ctx):
        """pi(Vo), the vacation in overload (L = 0, single vacations; item 4): the idle period after it."""
        with ctx:
            return +self.pi(ctx)[-1] if not ctx.is_float64 else self.pi(ctx)[-1]

    def refused(self, ctx):
        """(p, q, utilization) of items 2 and 4 (positive sums; q never formed as 1 - p)."""
        L, H = self.L, self.H
        pi = self.pi(ctx)
        beta, tail, tail2 = self.counts(ctx)
        over = range(H, H + max(0, H - 1 - L))
        with ctx:
            rho = ctx.num(self.lam * self.service.moment(1))

            def total(terms):
                return float(np.sum(terms)) if ctx.is_float64 else ctx.fsum(terms)

            if self.vacation is None:
                terms = [pi[i] * (tail[H - max(i, 1)] + tail2[H - max(i, 1)]) for i in range(H)]
                terms += [pi[i] * rho for i in over]
                R = total(terms)
                q = 1 / (1 + R)
                return R * q, q, rho * q
            phi, vtail, vtail2 = self.vacation_counts(ctx)
            services = list(range(1, H)) + list(over)  # the periods that end with a departure (D per period)
            terms = [pi[0] * (vtail[H - 1] + vtail2[H - 1])]  # the vacation in normal mode, nobody waiting
            terms += [pi[i] * (tail[H - i] + tail2[H - i]) for i in range(1, H)]
            terms += [pi[i] * rho for i in over]
            if self.single:
                idle = H + max(0, H - 1 - L)
                services.append(idle)
                terms.append(pi[idle] * (tail[H - 1] + tail2[H - 1]))
                if L == 0:
                    terms.append(pi[idle + 1] * ctx.num(self.lam * self.vacation.moment(1)))
            R, D = total(terms), total([pi[i] for i in services])
            q = D / (D + R)
            return R / (D + R), q, rho * q

    def _sojourn(self) -> ResponseLaw:
        """The admitted first copy's sojourn W + B_own (item 3): the finite room's wait law with the injected
        start; its own tails (the lattice sums) for a constant service, else the transform (smooth laws); an own law
        other than the service by :func:`~qderive.numeric.engines.sip.sojourn.plus_own`. With vacations
        (own = service): the finite room's own choice of tails (:func:`~.vacation_finite_wait.response_laws` over the
        injected wait law: lattice sums, the phase-type service's sums with constant vacations, or the transform)."""
        base, own = self.base, self.own
        if self.vacation is not None:
            return FW.response_laws(base, self.wait)["sojourn"]
        # a mixture of scaled copies of B is smooth exactly when B is (the finite room's check, kept per process)
        smooth, why = smooth_laws((own,))
        w = self.wait
        if self.own is self.service:
            setup, why_not = (None, "") if smooth else FW.lattice_setup(base.service, None)
            return ResponseLaw("sojourn", w.transform("sojourn"), w.p_zero("sojourn"), w.moment_values("sojourn"),
                               smooth, why_not or why, None if setup is None else FW.lattice_tails(w, setup, "sojourn"))
        wait = ResponseLaw("wait", w.transform("wait"), w.p_zero("wait"), w.moment_values("wait"), smooth, why)
        return plus_own(wait, own, self.lam, smooth, why)

