r"""The contract's hysteretic control with a general service law, any 0 <= L < H (issue 17).

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
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..backend import FLOAT64, mp_context
from ..kernels.chains import gth_stationary
from ..response import ResponseLaw
from ..sequences import count_sequences
from . import vacation_finite_wait as FW

__all__ = ["control_embedded_chain", "ControlServer", "ControlWait"]


def control_embedded_chain(ctx, L: int, H: int, beta, tail):
    """The transition probabilities (a context matrix; GTH reads only the off-diagonal) of the departure-epoch
    chain of item 1 of the module docstring: states (n, normal) at index n = 0..H-1, then (n, overload) at
    index H + n - L - 1 for n = L+1..H-1. ``beta`` = P(A = j) and ``tail`` = P(A > j), j = 0..H (the count
    sequences: the overflow is the tail itself, never 1 - a sum)."""
    size = H + max(0, H - 1 - L)
    P = ctx.zeros((size, size))

    def over(n):
        return H + n - L - 1 if n > L else n  # (L, overload) does not exist: a departure leaving L is normal

    for i in range(H):
        m = max(i, 1)
        for j in range(H - m + 1):
            P[i, m + j - 1] = P[i, m + j - 1] + beta[j]
        P[i, over(H - 1)] = P[i, over(H - 1)] + tail[H - m]  # an arrival found H: overload (item 1)
    for n in range(L + 1, H):
        P[over(n), over(n - 1)] = ctx.num(1)
    return P


class ControlWait(FW._FiniteWait):
    """The finite room's wait law object (``vacation-finite`` with r = H - 1, no vacations, batches of 1) with the
    embedded law replaced by the normal-mode part of the control chain (module docstring, item 3). ``start(ctx)``
    gives q_n = pi(n, normal), n = 0..H-1, in the context ``ctx``."""

    def __init__(self, base, start):
        self._start = start
        super().__init__(base)

    def data(self, ctx, order=1):
        """The s-independent data (:meth:`FW._FiniteWait.data`, the same precision rule) built from ``start``."""
        store = self._float if ctx.is_float64 else self._mp
        got = store.get("data")
        if ctx.is_float64:
            if got is None or got.order < order:
                got = store["data"] = FW._build(self.model, FLOAT64, max(order, 1), self._start(FLOAT64))
            return got
        want = ctx.dps + self.guard
        if got is None or got.ctx.dps < want or got.order < order:
            dctx = mp_context(max(want + FW._HEADROOM, got.ctx.dps if got is not None else 0))
            got = store["data"] = FW._build(self.model, dctx, max(order, 1, got.order if got else 1),
                                            self._start(dctx))
        return got


class ControlServer:
    """The server of the contract's control at copy rate ``lam`` (exact) with the service law ``service`` (the
    copies' law: B, or the mixture of first copies and duplicates) and the admitted first copy's own service
    ``own`` (default ``service``): :meth:`refused` (p, q, utilization) of item 2 and ``law`` (the sojourn
    :class:`~qderive.numeric.response.ResponseLaw` of an admitted first copy, item 3)."""

    def __init__(self, lam: Fraction, service, L: int, H: int, own=None):
        from qderive.symbolic.batches.finite import Constant
        from qderive.symbolic.models.vacation import FiniteVacationQueue

        self.lam, self.service, self.L, self.H = lam, service, L, H
        self.own = service if own is None else own
        self.base = FiniteVacationQueue(lam, Constant(1), service, None, H - 1)
        self._pi = {}
        self.wait = ControlWait(self.base, self._normal)
        self.law = self._sojourn()

    def counts(self, ctx):
        """(beta, T, T^(2)) of A over 0..H (:func:`~qderive.numeric.sequences.count_sequences`)."""
        with ctx:
            return count_sequences(self.service.count_law(self.lam), self.H, ctx)

    def pi(self, ctx):
        """The stationary law of the embedded chain (item 1) in ``ctx``, kept per precision."""
        key = "float64" if ctx.is_float64 else ctx.dps
        if key not in self._pi:
            beta, tail, _ = self.counts(ctx)
            with ctx:
                P = control_embedded_chain(ctx, self.L, self.H, beta, tail)
                # GTH scales pi by its first state: the empty one below capacity, a full one above it (pi(n) grows
                # like (lambda E[B])^n there: ratios to the empty state overflow float64 at H = 500, lambda E[B] = 6)
                order = np.arange(len(P))[:: -1 if self.lam * self.service.moment(1) >= 1 else 1]
                pi = ctx.zeros(len(P))
                pi[order] = gth_stationary(ctx, P[np.ix_(order, order)])
                self._pi[key] = pi
        return self._pi[key]

    def _normal(self, ctx):
        with ctx:
            return self.pi(ctx)[: self.H].copy()

    def refused(self, ctx):
        """(p, q, utilization) of item 2 (positive sums; q never formed as 1 - p)."""
        L, H = self.L, self.H
        pi = self.pi(ctx)
        beta, tail, tail2 = self.counts(ctx)
        with ctx:
            rho = ctx.num(self.lam * self.service.moment(1))
            terms = [pi[i] * (tail[H - max(i, 1)] + tail2[H - max(i, 1)]) for i in range(H)]
            terms += [pi[i] * rho for i in range(H, H + max(0, H - 1 - L))]
            R = float(np.sum(terms)) if ctx.is_float64 else ctx.fsum(terms)
            q = 1 / (1 + R)
            return R * q, q, rho * q

    def _sojourn(self) -> ResponseLaw:
        """The admitted first copy's sojourn W + B_own (item 3): the finite room's wait law with the injected
        start; its own tails (the lattice sums) for a constant service, else the transform (smooth laws); an own law
        other than the service by :func:`~qderive.numeric.engines.mixture_sojourn.plus_own`."""
        from .mixture_sojourn import plus_own, smooth_laws

        base, own = self.base, self.own
        # a mixture of scaled copies of B is smooth exactly when B is (the finite room's check, kept per process)
        smooth, why = smooth_laws((own,))
        w = self.wait
        if self.own is self.service:
            setup, why_not = (None, "") if smooth else FW.lattice_setup(base.service, None)
            return ResponseLaw("sojourn", w.transform("sojourn"), w.p_zero("sojourn"), w.moment_values("sojourn"),
                               smooth, why_not or why, None if setup is None else FW.lattice_tails(w, setup, "sojourn"))
        wait = ResponseLaw("wait", w.transform("wait"), w.p_zero("wait"), w.moment_values("wait"), smooth, why)
        return plus_own(wait, own, self.lam, smooth, why)

