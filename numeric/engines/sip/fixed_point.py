r"""The fixed point lambda = sum_i Lambda_0i E_i[copies](lambda) of ``sip-retransmission``: every solution.

The map g(lambda) (:class:`FixedPointMap`) composes the server at copy rate lambda (a route of :mod:`.routes`,
chosen once from the model's server part) with the transaction fates (:mod:`.fates`) of each flow; the inner unknown
(the duplicate fraction delta, or the share w of flow 1) is solved per lambda. :func:`solve` scans the residual
r(lambda) = g(lambda) - lambda, refines every sign change and gives the measures at each root (the package
docstring, *The fixed point* (F), (F2), (R)).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

from ....symbolic.errors import NumericalError
from ....symbolic.models.sip_retransmission import Control
from ....symbolic.numbers import decimal_text
from ...backend import FLOAT64, mp_context
from .capabilities import supports
from .fates import copy_fates, needed_times, transaction_rates
from .roots import illinois, share_secant, to_fraction
from .routes import Route, select_route

__all__ = ["FixedPointMap", "Inner", "scan_grid", "solve", "MEAN_FIELD_NOTE"]


class Inner:
    """The inner unknown solved per lambda (:attr:`FixedPointMap.inner`)."""

    #: the duplicate fraction delta of the admitted copies (a duplicate cost c < 1)
    DELTA = "delta"
    #: the share w of flow 1 (a service law per flow, ``--discipline priority``, ``--control threshold``)
    SHARE = "share"


class FixedPointMap:
    """g(lambda) = lambda_0 E[copies](lambda), or sum_i Lambda_0i E_i[copies](lambda) over the flows (F2), with the
    servers kept per lambda. ``route``: force a route class (a test's cross-check); default the selected one."""

    def __init__(self, model, route: type[Route] | None = None):
        self.model = model
        self.transactions = tx = model.transactions
        self.part = model.server
        self.taus = tx.flows[0].copy_times
        self.timeout = tx.timeout
        #: the fates follow the 503 semantics (copy 0 refused: rejected) under ``503`` and ``threshold``
        self.rejects = tx.rejects
        self.need = needed_times(self.rejects, self.taus, self.timeout)
        self.servers = {}
        #: (name, lambda_i, copy instants) of each flow (module docstring of the package, (F2))
        self.flows = tuple((f.name, f.rate, f.copy_times) for f in tx.flows)
        self.max_copies = tx.max_copies
        self.total_rate = tx.total_rate
        #: m, the retries of a request rejected by 503 (``--retry-after``; 0: none), (R)
        self.retries = tx.retries
        #: ``--discipline priority`` without control: which root of the inner share equation (it may have several:
        #: share(w) increases with w) -- "high" the largest w (the fewest non-INVITE copies), "low" the smallest
        self.branch = None
        self.forced = route
        self._routes = {}

    @property
    def inner(self):
        """The inner unknown solved per lambda: :attr:`Inner.DELTA` (duplicate cost c < 1), :attr:`Inner.SHARE` (a
        service law per flow, ``--discipline priority``, ``--control threshold``) or None."""
        part = self.part
        if part.duplicate_cost != 1:
            return Inner.DELTA
        if part.control is Control.THRESHOLD:
            return Inner.SHARE  # the class rates w lambda, (1 - w) lambda: class-dependent refusal (and priority)
        if part.two_flows and (part.priority or part.law_per_flow):
            return Inner.SHARE  # priority: the class rates w lambda, (1 - w) lambda matter even with one law
        return None

    def branches(self):
        """The inner-root branches whose fixed points :func:`solve` collects: ("high", "low") for priority without
        control (:meth:`_priority_share`), else (None,)."""
        if self.inner == Inner.SHARE and self._priority_none():
            return ("high", "low")
        return (None,)

    def _priority_none(self) -> bool:
        return self.part.priority and self.part.control is Control.NONE

    def route(self, mixture: bool) -> type[Route]:
        """The route class of the server (chosen once per kind of service: plain or a mixture)."""
        if self.forced is not None:
            return self.forced
        if mixture not in self._routes:
            self._routes[mixture] = select_route(self.part, mixture)
        return self._routes[mixture]

    def server(self, lam, digits=None) -> Route:
        """The server at copy rate ``lam``; with duplicate cost c < 1 at the duplicate fraction delta*(lam); with a
        service law per flow (``service_non_invite``) at the INVITE share w*(lam) of the admitted copies."""
        lam = to_fraction(lam)
        kind = self.inner
        if kind is None:
            x = Fraction(0)
        else:
            key = (kind, lam, digits, self.branch)
            if key not in self.servers:
                self.servers[key] = self._delta(lam, digits, kind)
            x = self.servers[key]
        if (kind, lam, x) not in self.servers:
            if len(self.servers) > 256:
                self.servers.clear()
            self.servers[(kind, lam, x)] = self._make(lam, kind, x)
        return self.servers[(kind, lam, x)]

    def _make(self, lam, kind, x):
        if kind == Inner.SHARE:
            return self.route(True)(self.part, lam, Fraction(0), x)
        return self.route(x != 0)(self.part, lam, x)

    def fates(self, s: Route, digits, tail_times=()):
        """(p, q, utilization, copy_fates(...), notes) of the server ``s`` (the first flow)."""
        p, q, util = s.refused(digits)
        if digits is None:
            p, q = float(p), float(q)
        need = self.need if not tail_times else needed_times(self.rejects, self.taus, self.timeout, tail_times)
        values, notes = s.tails(need, digits)
        fates = copy_fates(self.rejects, self.taus, self.timeout, p, q, dict(zip(need, values)), tail_times)
        return p, q, util, fates, notes

    def flow_fates(self, s: Route, digits, tail_times=()):
        """(p, q, utilization, [copy_fates(...) of each flow], notes): every flow meets the same server (the same
        p and F at the total copy rate), each with its own copy instants. ``--control threshold``: each flow its own
        (p_i, q_i) (:meth:`~.routes.ThresholdRoute.refused_flows`) and F_i, p the copy-weighted mean."""
        if len(self.flows) == 1:
            p, q, util, fates, notes = self.fates(s, digits, tail_times)
            return p, q, util, [fates], notes
        p, q, util = s.refused(digits)
        if digits is None:
            p, q = float(p), float(q)
        per_flow = s.refused_flows(digits)
        pqs = [(p, q)] * len(self.flows) if per_flow is None else per_flow[0]
        need = sorted({t for _, _, taus in self.flows for t in needed_times(self.rejects, taus, self.timeout,
                                                                           tail_times)})
        if s.flow_laws is None or s.saturated:
            values, notes = s.tails(need, digits)
            Fs = [dict(zip(need, values))] * len(self.flows)
        else:  # a service law per flow: each flow's admitted copy has its own sojourn law
            Fs, notes = [], []
            for law in s.flow_laws:
                values, more = s.tails(need, digits, law=law)
                Fs.append(dict(zip(need, values)))
                notes += [m for m in more if m not in notes]
        return p, q, util, [copy_fates(self.rejects, taus, self.timeout, pi, qi, F, tail_times)
                            for (_, _, taus), F, (pi, qi) in zip(self.flows, Fs, pqs)], notes

    def transaction_rates(self, fates, digits):
        """Lambda_0i of each flow (:func:`.fates.transaction_rates`, (R))."""
        return transaction_rates([r for _, r, _ in self.flows], fates, self.retries, digits)

    def invite_share(self, s: Route, digits):
        """w = the share of flow 1 (``--method``'s flow; the INVITE flow by default) in the admitted copies:
        lambda_1 E_1[copies] / sum_i lambda_i E_i[copies] (the admission probability q is common to the flows and
        cancels; under 503 the admitted copies per transaction are q E_i[copies], as in :meth:`duplicate_fraction`).
        ``--control threshold``: q_i differs per flow and does not cancel in an admitted share; w is then defined as
        the *offered* share Lambda_1 / (Lambda_1 + Lambda_2), the same expression (the two-flow server takes the
        offered class rates)."""
        flows = self.flow_fates(s, digits)[3]
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        parts = [r * f["mean_copies"] for r, f in zip(self.transaction_rates(flows, digits), flows)]
        return parts[0] / sum(parts, ctx.num(0))

    def offered(self, lam, digits):
        """g(lambda) = sum_i Lambda_0i E_i[copies](lambda) (F2): the copies offered by every flow at copy rate lambda
        (Lambda_0i = lambda_i without ``--retry-after``, (R) with it: :meth:`transaction_rates`)."""
        ctx = FLOAT64 if digits is None else mp_context(digits + 10)
        fates = self.flow_fates(self.server(lam, digits), digits)[3]
        return sum((r * f["mean_copies"] for r, f in zip(self.transaction_rates(fates, digits), fates)), ctx.num(0))

    def duplicate_fraction(self, s: Route, digits):
        """D = 1 - f / (q E[copies]): the fraction of admitted copies that are not their transaction's first admitted
        one; f = P(some copy admitted) = 1 - p^n (silent refusal) or q (503: only copy 0 can be first, and the
        admitted copies per transaction are q E[copies] = q (1 + q sum_k F(tau_k))). Two flows: the first admitted and
        all admitted copies summed over the flows, D = 1 - sum_i lambda_i f_i / (q sum_i lambda_i E_i[copies])."""
        reject = self.part.control is Control.REJECT
        if len(self.flows) == 1:
            p, q, _, fates, _ = self.fates(s, digits)
            first = q if reject else 1 - p ** len(self.taus)
            admitted = q * fates["mean_copies"]
            return 1 - first / admitted if admitted > 0 else 0 * q
        p, q, _, flows, _ = self.flow_fates(s, digits)
        rates = self.transaction_rates(flows, digits)
        first = sum(r * (q if reject else 1 - p ** len(taus)) for r, (_, _, taus) in zip(rates, self.flows))
        admitted = q * sum(r * f["mean_copies"] for r, f in zip(rates, flows))
        return 1 - first / admitted if admitted > 0 else 0 * q

    def _h(self, lam, digits, kind):
        """h(x) = D(lam, x) - x (delta) or share(x) - x (share), the servers kept."""
        fraction = self.duplicate_fraction if kind == Inner.DELTA else self.invite_share

        def h(d):
            d = to_fraction(d)
            if (kind, lam, d) not in self.servers:
                self.servers[(kind, lam, d)] = self._make(lam, kind, d)
            return fraction(self.servers[(kind, lam, d)], digits) - d
        return h

    def _delta(self, lam: Fraction, digits, kind=Inner.DELTA):
        """delta*(lam): the root of h(delta) = D(lam, delta) - delta on [0, 1) (D decreases in delta: cheaper
        duplicates, shorter sojourns, fewer copies), by the Illinois method to 1e-13 or 10^-(digits + 3).
        ``kind`` "share": the same for the INVITE share w*(lam) = :meth:`invite_share` on [0, 1] (h(0) > 0 > h(1):
        each flow has copies); under priority and threshold first by the secant method from the transactions'
        share."""
        h = self._h(lam, digits, kind)
        end = 2.0**-30 if kind == Inner.DELTA else 0
        ctx = None if digits is None else mp_context(digits + 10)
        if digits is None:
            a, b, tol = 0.0, 1.0 - end, 1e-13
        else:
            a, b, tol = ctx.num(0), ctx.num(1) - mpmath.mpf(end), mpmath.mpf(10) ** -(digits + 3)
        if kind == Inner.SHARE and self._priority_none():
            return self._priority_share(lam, digits, h, tol)
        threshold = self.part.control is Control.THRESHOLD
        if kind == Inner.SHARE and threshold:
            end = 2.0**-30  # the two-flow server needs both class rates > 0
            a, b = (end, 1 - end) if digits is None else (ctx.num(end), 1 - ctx.num(end))
        if kind == Inner.SHARE and (self.part.priority or threshold):
            start = self.flows[0][1] / self.total_rate  # flow 1's share of the transactions
            w = share_secant(h, float(start) if digits is None else ctx.num(start), tol)
            if w is not None:
                return to_fraction(w)
        return _bracketed(h, a, b, tol)

    def _priority_share(self, lam, digits, h, tol):
        """The inner share w*(lam) of ``--discipline priority`` without control, on the branch :attr:`branch`.

        share(w) increases with w (a larger INVITE share leaves fewer non-INVITE copies in the server, so fewer
        retransmissions), so h(w) = share(w) - w can have several roots: past the server's saturation the
        non-INVITE flow is self-consistently answered (few copies, w near 1) and also self-consistently collapsed
        (its own load of all its copies >= 1). The roots are bracketed on the grid w = 0, 1/10, ..., 1 (in float64;
        two roots closer than 1/10 can be missed) and refined by the Illinois method (at ``digits`` inside the
        float64 bracket); "high" (and None) takes the largest, "low" the smallest. The middle root of three is an
        unstable equilibrium of w <- share(w) and is not used."""
        def h64(w):
            return float(h(w)) if digits is None else float(self._delta_h64(lam, w))

        grid = [k / 10 for k in range(11)]
        values = [h64(w) for w in grid]
        brackets = [(grid[i], grid[i + 1], values[i], values[i + 1]) for i in range(10)
                    if values[i] != 0 and values[i + 1] != 0 and (values[i] > 0) != (values[i + 1] > 0)]
        zeros = [w for w, v in zip(grid, values) if v == 0]
        if not brackets and not zeros:  # h keeps one sign: the end where it points
            return Fraction(1) if values[-1] > 0 else Fraction(0)
        found = [(w, w, 0.0, 0.0) for w in zeros] + brackets
        a, b, _, _ = max(found) if self.branch != "low" else min(found)
        if a == b:
            return to_fraction(a)
        if digits is None:
            return to_fraction(illinois(h, a, b, h(a), h(b), tol))
        ctx = mp_context(digits + 10)
        a, b = ctx.num(to_fraction(a)), ctx.num(to_fraction(b))
        return to_fraction(illinois(h, a, b, h(a), h(b), tol))

    def _delta_h64(self, lam, w):
        """h(w) = share(w) - w in float64 (the bracketing of :meth:`_priority_share` at ``digits``)."""
        w = to_fraction(w)
        if (Inner.SHARE, lam, w) not in self.servers:
            self.servers[(Inner.SHARE, lam, w)] = self._make(lam, Inner.SHARE, w)
        return self.invite_share(self.servers[(Inner.SHARE, lam, w)], None) - float(w)

    def mean_copies(self, lam, digits, fast=False):
        return self.fates(self.server(lam, digits), digits)[3]["mean_copies"]

    def residual(self, lam, digits=None, fast=False):
        if len(self.flows) > 1 or self.retries:
            return self.offered(lam, digits) - lam
        rate = float(self.model.rate) if digits is None else mp_context(digits + 10).num(self.model.rate)
        return rate * self.mean_copies(lam, digits, fast) - lam


def _bracketed(h, a, b, tol):
    """The root of the decreasing h on [a, b] by the Illinois method (an end when h keeps its sign there)."""
    ha = h(a)
    if ha <= 0:
        return Fraction(0)
    hb = h(b)
    if hb >= 0:
        return to_fraction(b)
    return to_fraction(illinois(h, a, b, ha, hb, tol))


def scan_grid(lo, hi, capacity, points):
    """The scan's grid on [lo, hi]: ``points // 2`` uniform points, and ``points // 4`` on each side of the service
    capacity c = 1/E[B] at c (1 -+ 10^-x), x from 0.3 to 8 (the residual changes fastest where the server's load
    crosses 1), restricted to [lo, hi]."""
    x = np.linspace(0.3, 8.0, max(2, points // 4))
    near = np.concatenate([capacity * (1 - 10.0**-x), capacity * (1 + 10.0**-x)])
    grid = np.concatenate([np.linspace(lo, hi, max(2, points - 2 * len(x))), near[(near > lo) & (near < hi)]])
    grid = np.unique(grid)
    grid[0], grid[-1] = lo, hi
    return grid


def _scan(fmap, lo, hi, points, fallback=True):
    """Float64 roots of the residual on [lo, hi] (every sign change on :func:`scan_grid`, refined); none found: the
    point of smallest |r| (``fallback``) or nothing."""
    grid = scan_grid(lo, hi, 1 / float(fmap.model.service.moment(1)), points)
    points = len(grid)
    r = [fmap.residual(x, None, fast=True) for x in grid]

    def f(x):
        return fmap.residual(x, None, fast=True)

    roots = []
    for i in range(points):
        if r[i] == 0:
            roots.append(float(grid[i]))
        elif i + 1 < points and r[i + 1] != 0 and (r[i] > 0) != (r[i + 1] > 0):
            roots.append(float(illinois(f, float(grid[i]), float(grid[i + 1]), r[i], r[i + 1], 1e-13)))
    if not roots and fallback:  # |r| below the scan's resolution everywhere: the smallest |r|
        roots.append(float(grid[int(np.argmin(np.abs(r)))]))
    return roots


def _slope(fmap, lam, lo, hi):
    """g'(lambda) by a central difference in float64 (one-sided at an end of the interval)."""
    h = 1e-6 * lam
    a, b = max(lo, lam - h), min(hi, lam + h)
    if b <= a:
        return 0.0
    ga = fmap.residual(a, None, fast=True) + a
    gb = fmap.residual(b, None, fast=True) + b
    return float((gb - ga) / (b - a))


def _refine(fmap, lam, digits, lo, hi):
    """The root near the float64 root ``lam`` to ``digits`` digits (secant on the residual at digits + 5)."""
    w = digits + 5
    ctx = mp_context(w + 10)
    with ctx:
        lo_, hi_ = ctx.num(to_fraction(lo)), ctx.num(to_fraction(hi))
        x0 = ctx.num(to_fraction(lam))
        if x0 in (lo_, hi_) and fmap.residual(x0, w) == 0:
            return x0
        x1 = x0 * (1 + mpmath.mpf(10) ** -9)
        x1 = min(max(x1, lo_), hi_)
        if x1 == x0:
            x1 = x0 * (1 - mpmath.mpf(10) ** -9)
        f0, f1 = fmap.residual(x0, w), fmap.residual(x1, w)
        for _ in range(60):
            if f1 == f0:
                return x1
            x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
            x2 = min(max(x2, lo_), hi_)
            if abs(x2 - x1) <= abs(x2) * mpmath.mpf(10) ** -(digits + 3):
                return x2
            x0, f0, x1, f1 = x1, f1, x2, fmap.residual(x2, w)
    raise NumericalError(f"sip-retransmission: the fixed point near offered rate {lam:.6g} did not converge to "
                         f"{digits} digits")


def _measures(fmap, lam, digits):
    """The contract's measures at offered rate ``lam`` (a float or an mpf), under the precision policy."""
    model = fmap.model
    s = fmap.server(lam, digits)
    tail_times = tuple(model.response_tail or ())
    p, q, util, flows, notes = fmap.flow_fates(s, digits, tail_times)
    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    rates = fmap.transaction_rates(flows, digits)  # Lambda_0i: lambda_i, or (R) with --retry-after
    rate = sum(rates[1:], rates[0])

    def total(key):  # the transaction-weighted mean over the flows (the value itself for one flow)
        if len(flows) == 1:
            return flows[0][key]
        return sum((r * f[key] for r, f in zip(rates, flows)), ctx.num(0)) / rate

    mean = total("mean_copies")
    out = {
        "offered_rate": float(lam) if digits is None else ctx.num(to_fraction(lam)),
        "mean_copies": mean,
        "duplicate_ratio": 1 - 1 / mean,
        "goodput": rate * total("answered"),
        "timeout_probability": total("timeout_probability"),
        "reject_probability": total("reject_probability"),
        "utilization": util,
        "response_tail": {decimal_text(T): (v if len(flows) == 1 else
                                            sum((r * f["tail"][i] for r, f in zip(rates, flows)), ctx.num(0)) / rate)
                          for i, (T, v) in enumerate(zip(tail_times, flows[0]["tail"]))},
    }
    out.update(_request_measures(fmap, flows, rates, ctx))
    out["flows"] = {name: {"goodput": r * f["answered"], "mean_copies": f["mean_copies"],
                           "duplicate_ratio": 1 - 1 / f["mean_copies"],
                           "timeout_probability": f["timeout_probability"],
                           "reject_probability": f["reject_probability"]}
                    for (name, _, _), r, f in zip(fmap.flows, rates, flows)}
    out["residual"] = abs(out["offered_rate"] - rate * mean) / out["offered_rate"]
    out["copy_refusal_probability"] = p
    out["admitted_duplicate_fraction"] = (float(s.delta) if digits is None else ctx.num(s.delta))
    return out, list(notes) + _server_notes(fmap, s, lam)


def _request_measures(fmap, flows, rates, ctx) -> dict:
    """(R): a request is finally rejected when its m + 1 transactions are; the retries are the transactions beyond the
    requests (m = 0 without --retry-after: reject_probability and 0)."""
    requests = [ctx.num(r) for _, r, _ in fmap.flows]
    m = fmap.retries
    final = (sum((r * f["reject_probability"] ** (m + 1) for r, f in zip(requests, flows)), ctx.num(0))
             / ctx.num(fmap.total_rate) if len(flows) > 1 else flows[0]["reject_probability"] ** (m + 1))
    return {"request_reject_probability": final,
            "retry_rate": sum((R - r for R, r in zip(rates, requests)), ctx.num(0))}


def _server_notes(fmap, s, lam) -> list[str]:
    """The notes of the server at the solution: the per-flow refusal of ``--control threshold``, the inner share of
    ``--discipline priority`` and its saturation."""
    notes = []
    if s.two_flow is not None:  # --control threshold: the class-dependent refusal
        pqs = s.refused_flows(None)[0]
        notes.append(f"--control threshold: at offered rate {float(lam):.6g} the copies are refused with "
                     + ", ".join(f"p_{name} = {pq[0]:.6g}" for (name, _, _), pq in zip(fmap.flows, pqs))
                     + " (copy_refusal_probability: their copy-weighted mean); the "
                     f"{fmap.flows[0][0]} flow's offered share w = {float(s.share):.6g}")
    if fmap.part.priority and s.share is not None:
        name = fmap.flows[0][0]
        notes.append(f"--discipline priority: at offered rate {float(lam):.6g} the {name} flow's share of "
                     f"the admitted copies is w = {float(s.share):.6g} (the inner unknown)")
        if s.saturated or (s.utilization == 1 and fmap.part.control is Control.NONE):
            who = "no flow" if s.saturated else "only the non-invite flow"
            notes.append(f"--discipline priority: at offered rate {float(lam):.6g} the server is saturated and "
                         f"{who} has a stationary regime (the other's copies are never answered)")
    return notes


def solve(model, digits=None, route: type[Route] | None = None):
    """Every fixed point (package docstring, (F)): a list of dicts of the measures plus ``stable``, ``slope`` and
    ``residual``, by increasing offered rate; and the notes. The model is refused first when the engine does not
    compute it (:func:`.capabilities.supports`). ``route``: force a route class (a test's
    cross-check of two routes; it must compute the model)."""
    refusal = supports(model) if route is None else route.supports(model.server, model.duplicate_cost != 1)
    if refusal is not None:
        raise refusal.error()
    fmap = FixedPointMap(model, route)
    found, lo, hi, one = _roots(fmap, model.scan_points)
    out, notes = [], []
    for lam, branch in found:
        fmap.branch = branch
        slope = 0.0 if one else _slope(fmap, lam, lo, hi)
        x = lam if digits is None else (mp_context(digits + 15).num(fmap.total_rate) if one
                                         else _refine(fmap, lam, digits, lo, hi))
        values, more = _measures(fmap, x, digits)
        values["stable"] = bool(slope < 1)
        values["slope"] = slope
        out.append(values)
        notes += [m for m in more if m not in notes]
    kept = [v for v in out if float(v["residual"]) <= _residual_tolerance(digits)]
    if out and len(kept) < len(out):  # a sign change of the residual across a jump of the map is no fixed point
        dropped = [v for v in out if v not in kept]
        notes.append(f"{len(dropped)} sign change(s) of the residual not listed as fixed points (offered rates "
                     + ", ".join(f"{float(v['offered_rate']):.6g}" for v in dropped)
                     + f": relative residual above {_residual_tolerance(digits):.0e}, a jump of the map)")
        out = kept or out[:1]  # nothing within the tolerance: the smallest, with the note saying why
    if len(out) > 1:
        notes.append(f"{len(out)} fixed points (offered rates "
                     + ", ".join(f"{float(v['offered_rate']):.6g}" for v in out)
                     + "): the top-level measures are those of the smallest")
    if not one:  # one copy per transaction and no retry: the copies are the Poisson transactions, nothing approximated
        notes.append(MEAN_FIELD_NOTE)
    return out, notes


#: the known bias of the approximation (F) (package docstring), measured against the simulator at the settings of the
#: guide's table "Analytic against simulated" (E[B] = 0.1 s, INVITE timers, 5 x 1000 s, ``tests/test_sip_notes.py``)
MEAN_FIELD_NOTE = (
    "mean-field approximation: the fixed point treats the copies as a Poisson stream whose fates are drawn "
    "independently from the stationary server at that rate (exact only with one copy per transaction and no retry). "
    "Against the simulator (qderive simulate sip-retransmission, no such assumption) it is within about 1 % of the "
    "service capacity below the collapse onset and under ignore with H E[B] = T1; past the onset, where a queue of "
    "several T1 of work builds up, it underestimates the goodput by 1 to 5 % of capacity (503 with L,H = 4,5 at 1.5 "
    "times capacity: 0.836 against 0.887 +- 0.007), up to 10 % (503 with H E[B] = 4 T1 at 3 times capacity): a "
    "transaction's retransmissions are correlated with its first copy's wait")


def _residual_tolerance(digits) -> float:
    """The largest relative residual |lambda - lambda_0 E[copies]| / lambda of a listed fixed point: 1e-6 in float64
    (the map's tails are right to about 1e-9), 10^-(D/2) at D digits (the roots are refined to D digits)."""
    return 1e-6 if digits is None else 10.0 ** (-digits / 2)


def _roots(fmap, points):
    """The float64 roots (lambda, branch) by increasing lambda on [lambda_0, lambda_0 n (m + 1)], the interval and
    whether lambda = lambda_0 exactly (one copy per transaction, no retry)."""
    lam0 = float(fmap.total_rate)
    lo, hi = lam0, lam0 * fmap.max_copies * (1 + fmap.retries)  # (R): at most m + 1 transactions per request
    one = fmap.max_copies == 1 and not fmap.retries  # one copy per transaction and no retry: lambda = lambda_0
    found = []
    for i, branch in enumerate(fmap.branches()):  # priority without control: both ends of the inner share's roots
        fmap.branch = branch
        for lam in ([lam0] if one else _scan(fmap, lo, hi, points, fallback=i == 0)):
            if not any(abs(lam - x) <= 1e-9 * lam for x, _ in found):
                found.append((lam, branch))
    found.sort(key=lambda x: x[0])
    return found, lo, hi, one
