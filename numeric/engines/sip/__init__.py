r"""The retransmission fixed point of ``sip-retransmission``: every solution of lambda = lambda_0 E[copies](lambda).

**The server at a given copy rate.** Copies reach the server at rate lambda (new requests and
retransmissions together). THE approximation: *the copies form a Poisson process of rate lambda, and
the fates of the copies of one transaction (refused or admitted, and an admitted copy's sojourn time)
are independent, each with the stationary law of the server fed at rate lambda*. Retransmissions are not
Poisson (they follow their transaction's timers and cluster in overload), so this is a mean-field
model; the simulator :mod:`qderive.numeric.simulation.sip` runs the exact model (issue 17 measures the
difference). Given lambda the server is an existing qderive model:

* ``--control none`` without capacity: M/G/1, model ``vacation-infinite`` with ``--vacation none`` and
  batches of 1 (``docs/theory/chapter2.md`` section 1); the sojourn law of
  :mod:`qderive.numeric.engines.vacation_wait`. For lambda E[B] >= 1 there is no stationary regime:
  the waiting time grows without bound, so every copy is unanswered (the limit of P(R > t) -> 1 as
  lambda E[B] -> 1); the map is continuous there.
* ``--control none --capacity K``: M/G/1/K, model ``vacation-finite`` with r = K - 1 waiting places
  (``docs/theory/chapter2.md`` section 2); p = its loss probability (a copy finding K is refused), the
  sojourn of an admitted copy from :mod:`qderive.numeric.engines.vacation_finite_wait`.
* ``--control ignore|503``: the contract's rule (an arrival finding N >= H switches to overload and is
  refused; in overload every arrival is refused; a departure leaving L returns to normal) is *not* the
  rule of ``hysteretic`` (M[X]|G|1|(L,H)|(H,R): the mode changes at departures or when the count
  *reaches* H) nor of ``mm1-hysteretic`` (an admitted arrival reaching H switches at once): both have no
  state "normal mode with N = H", from which a departure returns to H - 1 without overload. So the
  control is the smallest exact chain: for exponential service (rate mu) the CTMC on (n, normal),
  n = 0..H, and (n, overload), n = L+1..H, with (n,0) -> (n+1,0) at lambda (n < H), (H,0) -> (H,1) at
  lambda, (n,s) -> (n-1,s) at mu, (L+1,1) -> (L,0) at mu, solved by the one GTH
  (:func:`qderive.numeric.kernels.chains.gth_stationary`; :mod:`.chains`). By PASTA a copy is admitted with probability
  1 - p = sum_{n<H} pi(n, 0), and (FIFO) an admitted copy finding n has the sojourn Erlang(n + 1, mu):
  the tagged chain of :mod:`qderive.numeric.engines.ctmc_wait` (uniformization tails). A general
  service law: for L = H - 1 and c = 1 the server is exactly M/G/1/H (the mode is invisible:
  :class:`~.routes.FiniteControl`, the ``vacation-finite`` route above with K = H); for L <= H - 2, or a
  duplicate cost c < 1, the departure-epoch chain of the rule (:mod:`.control`,
  :class:`~.routes.GeneralControl`: states (n, mode) after a departure, the arrivals during a service from the
  count sequences, the one GTH; p = R / (1 + R) with R the refusals per departure interval, by PASTA; the
  admitted copy's sojourn by the finite room's wait machinery over the normal-mode service starts: Euler
  inversion for a smooth law, the lattice sums for a constant one). It reduces to the M/G/1/H route at
  L = H - 1 and equals the exponential chain for exponential service (tests/test_sip_general_control.py).

* ``--vacation V`` (``--vacation-policy multiple|single``): the same ``vacation-infinite`` /
  ``vacation-finite`` servers with the vacations, and under control with L = H - 1 ``vacation-finite`` with
  r = H - 1 for every service law (:class:`~.routes.FiniteControl`: the mode stays invisible with vacations); with
  L <= H - 2 the departure-epoch chain extended to the period ends, a vacation as the service of a phantom copy
  (:mod:`.control` item 4, :class:`~.routes.GeneralControl`; L = 0 is refused with
  multiple vacations: N >= 1 always, the overload would never end).
* a duplicate cost c < 1 or a service law per flow: the same rooms with a mixture service (*The mixture server*
  below).

**The copies of one transaction** (copy instants tau_0 = 0 < tau_1 < ... < tau_{n-1} < timeout;
p = P(refused), F(t) = P(R_copy > t) for an admitted copy). FIFO: a later copy of a transaction queues
behind its first admitted copy, so the response is the completion of the first admitted copy.

* ``none``/``ignore`` (silent refusal), with m(t) = #{j : tau_j <= t}::

      S(t) = P(no response by t) = p^m(t) + sum_{j < m(t)} p^j (1 - p) F(t - tau_j)                (S)
      E[copies] = sum_k P(copy k sent) = 1 + sum_{k >= 1} [p^k + sum_{j<k} p^j (1-p) F(tau_k - tau_j)] (C)
      P(timeout) = S(timeout) (all n copies),  P(reject) = 0                                      (T)

* ``503``: copy 0 is refused with probability p and answered 503 (the transaction is rejected, no more
  copies). Once copy 0 is admitted the transaction exists at the server: copy k >= 1 is sent iff
  R_0 > tau_k, and a refused one is absorbed (dropped silently, as under ``ignore``), an admitted one
  queues behind copy 0 (FIFO), so the response is copy 0's completion whatever the later copies'
  fates::

      E[copies] = 1 + (1 - p) sum_{k >= 1} F(tau_k),  P(reject) = p,                             (C), (J)
      P(timeout) = (1 - p) F(timeout),
      S(t) = p + (1 - p) F(t)                                                                     (S)

* goodput = lambda_0 (1 - P(timeout) - P(reject)) (G); duplicate ratio 1 - 1/E[copies] (D);
  P(R > T) = S(T) for T < timeout and P(timeout) + P(reject) for T >= timeout (R = inf when unanswered).

(The product form prod_k [p + (1 - p) F(t - tau_k)] would let a later copy answer before the first
admitted one, which FIFO excludes; it is not used.)

**Duplicate cost** c < 1: a copy that is not its transaction's first admitted copy costs c B, so the server's
service is the mixture "B with probability 1 - delta, c B with probability delta"
(:class:`qderive.symbolic.laws.mixture.Mixture`) while the first admitted copy (the tagged one: its completion is
the response) has its own service B, where delta = 1 - f / (q E[copies]) is the fraction of admitted copies that
are duplicates (f = 1 - p^n under silent refusal, q under 503: the transactions whose copy 0 is admitted; the
admitted copies per transaction are q E[copies] = q + q^2 sum_k F(tau_k) under 503). delta is a second unknown: for
each lambda it is the root of D(lambda, delta) = delta (D decreases in delta), found by the Illinois method.

**The mixture server** (a duplicate cost c < 1, or a service law per flow below). FIFO with single Poisson
arrivals: the wait of an admitted copy depends only on the state it finds and the copies ahead, so the tagged
copy's sojourn is W_M + B_own, W_M the wait of the queue with the mixture service and B_own its own law,
independent (:mod:`.mixture`, (S1): one helper, :class:`MixtureServer`, over the
rooms; the mixture routes of :mod:`.routes`). The routes:

* ``--control none``: the infinite room (M/G/1 with the mixture and the vacations: the Pollaczek-Khinchine form
  compiled once with the mixture's weights as arguments), or with ``--capacity K`` the finite room (M/G/1/K with
  the mixture and the vacations, r = K - 1; p its loss probability);
* ``--control ignore|503`` without vacations: exponential laws, the control chain with a phase per law (rates
  1/E[B] and 1/(c E[B]), or one per flow; the tagged copy's first service at its own rate, ``tagged_chain``'s
  ``first_rate``; uniformization tails); other smooth laws, the departure-epoch chain of
  :mod:`.control` with the mixture service (any L < H);
* ``--control ignore|503`` with vacations (L = H - 1): the finite room with K = H (the mode is invisible:
  :class:`~.routes.FiniteControl`) with the mixture service.

Every route but the exponential chain inverts W_M(s) B_own(s) (Euler): the laws and the vacation must be smooth.
Refused with the reason (:func:`supports`, the model's validation): a constant service with c < 1 or with two
service laws (the mixture of constants has kinks at all their sums), another law or a vacation law with kinks in a
mixture route, c < 1 together with two service laws (two inner unknowns), L <= H - 2 with vacations.

**Two flows** (``--rate-non-invite`` lambda_2 > 0; the two-flow server of seed 001, INVITE and non-INVITE requests
in one FIFO server): flow 1 is ``--rate`` lambda_1 with ``--method``'s copy instants, flow 2 the other method's
(:meth:`~qderive.symbolic.models.sip_retransmission.SipRetransmissionModel.flow_copy_times`; Timer E capped at T2
when flow 1 is INVITE), both with the same timeout and service law. Under THE approximation both flows meet the same
server fed by Poisson copies at the total rate, so p and F are common and each flow's copies follow (C), (T), (J)
with its own instants; the fixed point is still one equation in lambda::

    lambda = lambda_1 E_1[copies](lambda) + lambda_2 E_2[copies](lambda)                          (F2)

(:meth:`~.fixed_point.FixedPointMap.offered`), solved by the scan and refinement below on [lambda_1 + lambda_2,
(lambda_1 + lambda_2) max n_i]. The top-level measures are the totals: goodput = sum_i lambda_i P_i(answered),
mean_copies, P(timeout), P(reject) and P(R > T) the transaction-weighted means sum_i lambda_i x_i / (lambda_1 +
lambda_2), duplicate ratio 1 - 1/mean_copies; ``flows`` gives each flow's goodput, mean_copies, duplicate_ratio,
timeout and reject probabilities. The server is FIFO unless ``--discipline priority`` (below).

**A service law per flow** (``--service-non-invite`` B_2; the INVITE flow's B_1 = ``--service``): the server sees the
mixture service "B_1 with probability w, B_2 with probability 1 - w"
(:class:`qderive.symbolic.laws.mixture.LawMixture`), w = lambda_1 E_1[copies] / sum_i lambda_i E_i[copies] the share
of flow 1 in the admitted copies (q cancels), an inner unknown solved for each lambda as delta is
(:meth:`~.fixed_point.FixedPointMap._delta` with ``kind="share"``). Each flow's admitted copy has its own sojourn
W_M + B_i (the mixture server above, every room and control), so each flow has its own F_i in (C), (T), (S).

**Priority to non-INVITE copies** (``--discipline priority``, seed 001's algorithm 2: non-preemptive, arrival order
within a flow, in every mode; :mod:`.priority`). The class rates w lambda and (1 - w) lambda matter even with one
service law, so the share w is the inner unknown (:attr:`~.fixed_point.FixedPointMap.inner`); p stays common (the
refusal counts every copy) and each flow has its own F_i (:class:`~.routes.PriorityQueue`,
:class:`~.routes.PriorityChain`): without control and capacity the M/G/1 non-preemptive priority queue's transforms
(Kesten-Runnenburg; (P1), (P2) there; a class without stationary regime -- the INVITE flow when rho >= 1, both when
the non-INVITE load alone reaches 1 -- has F = 1, the non-INVITE flow then sees the INVITE services as vacations);
under ``ignore``/``503`` with exponential laws the control chain on (n_H, n_L, class in service, mode) and one tagged
chain per class (uniformization). The outer fixed point (F2) is unchanged. Without control the inner equation w =
share(w) can have several roots (share increases with w; past saturation the non-INVITE flow is answered with few
copies or collapsed with all of them): :meth:`~.fixed_point.FixedPointMap._priority_share` brackets them on a grid and
:func:`~.fixed_point.solve` collects the fixed points on the largest and on the smallest root
(:meth:`~.fixed_point.FixedPointMap.branches`); under control the root is found by the secant method from the
transactions' share (:func:`~.roots.share_secant`, the Illinois method on [0, 1] if it fails). The rest (capacity,
vacation, duplicate cost, kinked laws, non-exponential laws under control) is refused by :func:`supports` naming the
option.

**Seed 001's threshold server** (``--control threshold``, two flows, exponential laws;
:class:`~.routes.ThresholdRoute`). At the class copy rates Lambda_INVITE, Lambda_NON_INVITE the server IS the model
``two-flow`` (:mod:`qderive.numeric.engines.two_flow`): ``TwoFlowModel(Lambda_I, Lambda_N, 1/E[B_I], 1/E[B_N], L, H,
R, algorithm)`` with R = ``--capacity`` (default H + 1, where R does not bind) and the algorithm of ``--discipline``
(priority: seed 001's algorithm 2, non-INVITE first in modes 1 and 2 only, arrival order in mode 0). The refusal is
class-dependent: by PASTA a copy of class c is refused with p_c = B_c (C.3) (mode 1 refuses INVITE, mode 2 and a full
buffer everything), and every refusal is a 503, so each flow's copies follow the ``503`` fates (C), (T), (J) with its
own (p_c, q_c) and its class's sojourn law F_c (the two-flow tagged chain restricted to class c,
:func:`qderive.numeric.engines.ctmc_wait.tagged_two_flow`; uniformization tails)::

    E_c[copies] = 1 + q_c sum_{k >= 1} F_c(tau_k),  P_c(reject) = p_c,  P_c(timeout) = q_c F_c(timeout)

The inner unknown is the *offered* share w = Lambda_1 / (Lambda_1 + Lambda_2) = lambda_1 E_1[copies] / sum_i lambda_i
E_i[copies] (flow 1 = ``--method``'s; q_c differs per class and does not cancel in an admitted share, so the share
is defined on the offered copies, which is what the two-flow server takes), solved per lambda by the secant method
from the transactions' share (the Illinois method on [2^-30, 1 - 2^-30] if it fails: both class rates stay > 0);
the outer fixed point (F2) is unchanged. ``copy_refusal_probability`` (in ``solutions``) is the copy-weighted mean
(Lambda_1 p_1 + Lambda_2 p_2) / lambda; the per-flow p_c are in a note. No new chain: the two-flow engine's solve
and tagged chains. The simulator runs this control too (:mod:`qderive.numeric.simulation.sip`, the same three
modes copy by copy).

**Retry-After** (``--retry-after T --retries m``, under ``503`` and ``threshold``): a request rejected by 503 is sent
again as a new transaction T later, at most m times. Under THE approximation a retry is one more Poisson
transaction of its flow with the same fates, so with J_i = P_i(reject) of one flow-i transaction at the fixed point
(the ``reject_probability`` of :func:`~.fates.copy_fates`) the flow's transaction rate and the fixed point are::

    Lambda_0i = lambda_i (1 + J_i + ... + J_i^m),   lambda = sum_i Lambda_0i(lambda) E_i[copies](lambda)        (R)

(:func:`~.fates.transaction_rates`; positive terms, no 1 - J subtraction; the scan runs on [lambda_0, lambda_0 n
(m + 1)]; the inner share of two flows weighs the flows by Lambda_0i). T does not enter the stationary rates. The
measures weigh the flows by Lambda_0i: goodput = sum_i Lambda_0i P_i(answered) (answered transactions = answered
requests per second), the per-transaction probabilities stay per transaction; ``request_reject_probability`` =
sum_i lambda_i J_i^(m+1) / sum_i lambda_i (the requests finally rejected) and ``retry_rate`` = sum_i (Lambda_0i -
lambda_i) (retried transactions per second).

**The fixed point** (F): r(lambda) = lambda_0 E[copies](lambda) - lambda on [lambda_0, n lambda_0]
(r(lambda_0) >= 0 >= r(n lambda_0)): scanned at ``scan_points`` points in float64 (tails by one Euler
parameter set or the law's own sum; the inversion's error is absolute and grows with t, measured up to 3e-10 at
t = 15.5 s for M/M/1), every sign
change refined by the Illinois method to 1e-13 relative, then, for ``--digits D``, by the secant
method on the residual evaluated at D + 5 digits until the step is below 10^-(D+3) lambda. Three
crossings (bistability) give three solutions; a crossing's stability is the slope g'(lambda*) of
g = lambda_0 E[copies] (stable iff g' < 1: the iteration lambda <- g(lambda) is attracted; g is
increasing in lambda). The measures at each solution use the sub-models' ``evaluate`` at the requested
digits and the same tails as the scan (:meth:`~.routes.Route.tails`: a phase-type law's own uniformization, with
relative accuracy, or one Euler inversion whose error is absolute -- said in a note).

**The package** (``docs/architecture-sip.md`` draws it): :mod:`.fixed_point` (the map and its roots, (F)),
:mod:`.fates` (the copies, timeouts and rejections of one transaction, Retry-After's rates: (S), (C), (T), (J),
(R)), :mod:`.routes` (the server at copy rate lambda, one class per sub-model, chosen by :func:`~.routes.select_route`
from the routes' declarations), :mod:`.capabilities` (:func:`supports`: the engine's one declaration of what it
computes), :mod:`.chains` (the exponential control chain), :mod:`.control` (the departure-epoch chain of a general
law), :mod:`.priority`, :mod:`.mixture` and :mod:`.sojourn` (the mixture server), :mod:`.onset` (``qderive size``:
the collapse onset), :mod:`.roots`, :mod:`.engine` (:class:`SipEngine`). The engine reads the model through its two
frozen parts, ``model.transactions`` and ``model.server``
(:class:`~qderive.symbolic.models.sip_retransmission.SipTransactions`,
:class:`~qderive.symbolic.models.sip_retransmission.SipServer`).
"""

from ....symbolic.capabilities import Refusal
from .capabilities import supports
from .engine import SipEngine
from .fates import copy_fates, needed_times, transaction_rates
from .fixed_point import FixedPointMap, scan_grid, solve
from .routes import ROUTES, Route, route_refusal, select_route, server

__all__ = ["SipEngine", "supports", "solve", "FixedPointMap", "scan_grid", "copy_fates", "needed_times",
           "transaction_rates", "Refusal", "Route", "ROUTES", "select_route", "route_refusal", "server"]
