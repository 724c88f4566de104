r"""The collapse onset of ``sip-retransmission``: the two ends of the bistable range in lambda_0 (issue 17).

**The curve of all fixed points.** The fixed point (F) of
:mod:`qderive.numeric.engines.sip` is lambda = g(lambda) = lambda_0 m(lambda), with
m(lambda) = E[copies] (C) of the server fed by copies at rate lambda. m depends on lambda alone (the
server, the refusal probability p and the sojourn tail F are those of rate lambda; with a duplicate cost
c < 1 so is the duplicate fraction delta*(lambda)), not on lambda_0. So the fixed points at lambda_0 are
the solutions lambda of::

    h(lambda) = lambda / m(lambda) = lambda_0                                                     (O)

and the graph of h is the whole solution curve, parametrised by the offered rate lambda (the
continuation in lambda_0 needs no predictor: lambda_0 is explicit along it). At a fixed point
g'(lambda) = lambda_0 m'(lambda) = lambda m'(lambda) / m(lambda), and::

    h'(lambda) = (m - lambda m') / m^2 = (1 - g'(lambda)) / m(lambda)                          (O')

so a saddle-node (g'(lambda*) = 1, where a stable and an unstable fixed point meet) is a stationary point
of h, and the stable fixed points (g' < 1) are where h increases. The smallest fixed point follows the
first increasing stretch of h (from lambda = 0, where m = 1) up to its first local maximum lambda_up:
**the upper end** lambda_0^up = h(lambda_up) of the bistable range, the rate from which on the uncongested
branch no longer exists and the smallest fixed point jumps to the congested one (the collapse that no
run length avoids). **The lower end** lambda_0^low = h(lambda_low) is the local minimum of h that follows:
there the congested branch appears. For lambda_0 strictly between them there are (at least) three fixed
points, the smallest and the largest stable. Without control and without a capacity limit the server
saturates at lambda = 1/E[M] (M the server's service: B, or with ``--duplicate-cost`` c < 1 the mixture of B and
c B), where m = n (every copy sent) and h = lambda / n beyond: h has a kink there, and when h decreases up to it
(it does for every case of the guide) the lower end is exactly lambda_0^low = 1 / (n E[M]), load E[B] / (n E[M])
(1/n for c = 1: the congested branch lambda = n lambda_0 with lambda E[B] >= 1).

**The computation.** m is the engine's own map (:class:`~qderive.numeric.engines.sip.fixed_point.FixedPointMap`,
the same servers and tails as ``qderive eval``), evaluated on the engine's scan grid
(:func:`~qderive.numeric.engines.sip.fixed_point.scan_grid` on [lambda_c / 1000, 2 lambda_c] with
``scan_points`` points, dense near the service capacity lambda_c = 1/E[B], plus ``scan_points / 2`` uniform
points up to n X lambda_c, X = ``--max-load``: every fixed point at a load up to X has lambda <= n lambda_0,
so every saddle-node at such a load is inside), the local extrema of the sampled h bracketed by their
neighbours and refined by golden-section search (float64: to 1e-10 relative in lambda; the value of h at a
smooth extremum is quadratic in the error of its location, so it is then exact to the accuracy of m, about
1e-9 relative for the Euler-inverted tails of M/G/1). The kink 1/E[B] is a grid point and a candidate of the
lower end. With ``digits`` D: Newton's method on h'(lambda) = 0 from the float64 location, h' and h'' by
central differences at D + 10 working digits (step 10^-((D + 10)/3) lambda), until the step is below
10^-(D/2 + 3) lambda, then h at D + 5 digits (the map's tails to 10^-(D + 10) absolutely): D digits of the
ends (a kink is evaluated there directly). Two extrema closer than a grid step are missed; raise
``--scan-points``.

**The metastable lifetime** (``--run-length T``; exponential service of rate mu, duplicate cost 1; without
control a capacity above mu timeout). Started empty, a simulated server below the upper end stays uncongested for a random time and
then collapses (the first copy that waits longer than the timeout; ``collapse_times`` of the simulator), so
the onset seen in runs of length T lies below the upper end. A quasi-static estimate of that time: the
number n of copies in the server as a birth-death chain whose copy rate is that of a server held at n (a copy
finding n has the sojourn Erlang(n + 1, mu), so a transaction whose first copy finds n sends copy k with
probability P(Erlang(n + 1, mu) > tau_k))::

    b_n = lambda_0 (1 + sum_{k>=1} P(Erlang(n + 1, mu) > tau_k)),   d_n = mu,   n = 0..N-1,
    N = ceil(mu timeout)   (a copy finding N waits timeout on average; with --control ignore|503: N = H, the
                            collapse is the first entry into overload, and the path before it is the
                            uncontrolled one)                                                     (Q)
    lifetime(lambda_0) = E T_{0 -> N}   (the exact mean first-passage time of (Q),
                                         :func:`qderive.numeric.kernels.passage.passage_time_log`)

b_n / d_n rises with n from the load lambda_0 / mu < 1 to n lambda_0 / mu > 1 (past the lower end): the chain
drifts down near 0 and up for good past the level where b_n = mu, and the lifetime is the time to climb over
that barrier (then the drift carries it to N quickly). Treating the exit as memoryless (a metastable exit is
close to exponential), half of the runs have collapsed by T at the load where lifetime ln 2 = T: **the onset at
run length T**, found by the Illinois method on log lifetime in lambda_0 (to 1e-6 relative) between the lower
end and the service capacity. The chain ignores that the retransmissions at t follow the queue at t - tau_k, not
at t (docs/guides/sip-retransmission.md measures the result against the simulator).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from ....symbolic.capabilities import declare
from ....symbolic.errors import NumericalError, ParameterError
from ....symbolic.models.sip_retransmission import SipRetransmissionModel
from ....symbolic.numbers import decimal_text
from ...backend import FLOAT64, mp_context
from ...kernels.passage import passage_time_log, poisson_cdf_levels
from ..base import Trouble
from .capabilities import supports
from .fixed_point import FixedPointMap, scan_grid
from .roots import illinois, to_fraction

__all__ = ["FLOAT64_ONSET_NOTE", "collapse_onset", "metastable_lifetime", "onset_grid", "run_length_onset", "size"]

#: the accuracy of the float64 search (module docstring, *The computation*), measured against --digits 20 (M/M/1 and
#: Erlang-2 with ignore 20,40: the ends to 5e-11 and 3e-11 relative, the saddle-nodes' offered rates to 1.2e-6 and
#: 8.8e-7; ``tests/test_sip_onset.py``)
FLOAT64_ONSET_NOTE = (
    "float64: upper, lower and their loads are right to about 9 significant digits, offered_rate_* and "
    "mean_copies_* (where the saddle-node lies) to about 5: h = lambda / E[copies] is flat at its extremum, so its "
    "location is known only to the square root of the map's accuracy (about 1e-9 relative, the Euler-inverted "
    "tails); give --digits D for D correct digits of every value")

#: the golden ratio's conjugate (golden-section search)
_INVPHI = (math.sqrt(5) - 1) / 2


def onset_grid(model, max_load) -> np.ndarray:
    """The offered rates lambda at which h = lambda / m(lambda) (O) is sampled (module docstring): the engine's
    :func:`scan_grid` on [lambda_c / 1000, 2 lambda_c] (lambda_c = 1/E[B]) with ``model.scan_points`` points,
    lambda_c itself, and ``scan_points / 2`` uniform points on [2 lambda_c, n X lambda_c], X = ``max_load``."""
    c = 1 / float(model.service.moment(1))
    n = model.max_copies
    top = n * float(max_load) * c
    grid = scan_grid(c / 1000, min(2 * c, top), c, model.scan_points)
    if top > 2 * c:
        grid = np.concatenate([grid, np.linspace(2 * c, top, max(2, model.scan_points // 2))])
    return np.unique(np.concatenate([grid, [c]] if c < top else [grid]))


class _Curve:
    """h(lambda) = lambda / m(lambda) (O) over the engine's map, float64 (``digits`` None) or at ``digits``."""

    def __init__(self, model):
        self.fmap = FixedPointMap(model)
        self.escalated: dict = {}  # why float64 failed -> the rates recomputed at 15 digits (the search's note)

    def __call__(self, lam, digits=None):
        if digits is None:
            try:
                return float(lam) / float(self.fmap.mean_copies(float(lam), None))
            except Trouble as trouble:  # the float64 inversion overflowed at this rate: 15 digits, with a note
                self.escalated.setdefault(str(trouble), []).append(float(lam))
                return float(self.h(lam, 15))
        return self.h(lam, digits)

    def notes(self) -> list:
        """The notes of the float64 points recomputed at 15 digits (the response's
        :func:`~qderive.numeric.response.escalation_note`)."""
        from ...response import escalation_note

        return [escalation_note("collapse onset: h(lambda) = lambda / E[copies]", f"{why} at {len(rates)} offered "
                                f"rate(s) from {min(rates):.6g} to {max(rates):.6g}")
                for why, rates in self.escalated.items()]

    def h(self, lam, digits):
        ctx = mp_context(digits + 10)
        with ctx:
            x = ctx.num(to_fraction(lam))
            return x / self.fmap.mean_copies(x, digits)


def _golden(f, a, b, sign, tol=1e-10):
    """The extremum of f on [a, b] by golden-section search (``sign`` +1: a maximum, -1: a minimum), to ``tol``
    relative in x; returns (x, f(x)) of the best point seen (f unimodal on [a, b])."""
    def F(x):
        return sign * f(x)

    c, d = b - _INVPHI * (b - a), a + _INVPHI * (b - a)
    fc, fd = F(c), F(d)
    best = max((fc, c), (fd, d))
    while b - a > tol * abs(b):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - _INVPHI * (b - a)
            fc = F(c)
        else:
            a, c, fc = c, d, fd
            d = a + _INVPHI * (b - a)
            fd = F(d)
        best = max(best, (fc, c), (fd, d))
    return best[1], sign * best[0]


def _newton(curve, lam, lo, hi, digits):
    """h'(lambda) = 0 near ``lam`` in [lo, hi] to 10^-(digits/2 + 3) relative (module docstring), at digits + 10."""
    w = digits + 10
    ctx = mp_context(w + 10)
    with ctx:
        x, lo, hi = (ctx.num(to_fraction(v)) for v in (lam, lo, hi))
        stop = mpmath.mpf(10) ** -(mpmath.mpf(digits) / 2 + 3)
        for _ in range(30):
            e = x * mpmath.mpf(10) ** (-mpmath.mpf(w) / 3)
            hm, h0, hp = (curve.h(x + k * e, w) for k in (-1, 0, 1))
            d1, d2 = (hp - hm) / (2 * e), (hp - 2 * h0 + hm) / (e * e)
            if d2 == 0:
                break
            step = d1 / d2
            new = x - step
            if not lo < new < hi:  # a step out of the float64 bracket: halve towards its side
                new = (x + (hi if new >= hi else lo)) / 2
            x = new
            if abs(step) <= stop * abs(x):
                return x
    raise NumericalError(f"sip-retransmission: the saddle-node near offered rate {float(lam):.6g} did not converge "
                         f"to {digits} digits (Newton's method on h' = 0)")


def collapse_onset(model, max_load=3, digits=None) -> dict:
    """The ends of the bistable range of lambda_0 (module docstring (O), (O')): ``{"upper", "lower"}`` the rates
    lambda_0^up = max h (the first local maximum: the uncongested branch ends, g'(lambda*) = 1) and
    lambda_0^low (the following local minimum: the congested branch appears), ``load_upper``/``load_lower``
    the same times E[B], ``offered_rate_upper``/``offered_rate_lower`` the copy rate lambda* at each saddle-node,
    ``mean_copies_upper``/``mean_copies_lower`` m(lambda*), ``folds`` every extremum of h found (dicts with
    ``kind`` "upper" or "lower", ``rate``, ``load``, ``offered_rate``, ``mean_copies``), and ``note``. The rate
    of ``model`` is not used. No local maximum at loads up to ``max_load``: every value None, with a note (the
    smallest fixed point then moves continuously with lambda_0)."""
    refusal = supports(model)
    if refusal is not None:
        raise refusal.error()
    if getattr(model, "rate_non_invite", 0):  # the search scales one flow's rate
        raise ParameterError("--rate-non-invite", "the collapse onset is searched for one flow (give 0)",
                             str(model.rate_non_invite))
    X = Fraction(max_load)
    if not 0 < X <= 100:
        raise ParameterError("max_load", "must lie in (0, 100]", str(max_load))
    EB = model.service.moment(1)
    keys = ("upper", "lower", "load_upper", "load_lower", "offered_rate_upper", "offered_rate_lower",
            "mean_copies_upper", "mean_copies_lower")
    if model.max_copies == 1:
        return {**dict.fromkeys(keys), "folds": [], "note": "one copy per transaction (no retransmission before the "
                "timeout): E[copies] = 1, the fixed point lambda = lambda_0 is unique"}
    curve = _Curve(model)
    law = getattr(curve.fmap.server(Fraction(1, 2) / EB), "law", None)
    if law is not None and not law.smooth:
        raise ParameterError("service", "has lattice (kinked) sojourn tails here, which cost 10-20 s per evaluation of "
                             "E[copies] at T1 = 5 E[B]; the search needs about 300 of them: use a smooth near-constant "
                             "law (erlang:k=20,mean=...) or qderive eval at chosen rates", model.service.spec_text())
    grid = onset_grid(model, X)
    hv = [curve(x) for x in grid]
    c = 1 / float(EB)
    folds = []
    for i in range(1, len(grid) - 1):
        if hv[i - 1] < hv[i] >= hv[i + 1]:
            kind = "upper"
        elif hv[i - 1] > hv[i] <= hv[i + 1] and any(f["kind"] == "upper" for f in folds):
            kind = "lower"
        else:
            continue
        if folds and folds[-1]["kind"] == kind:  # a flat stretch sampled twice: keep the first
            continue
        sign = 1 if kind == "upper" else -1
        x, hx = _golden(curve, float(grid[i - 1]), float(grid[i + 1]), sign)
        kink = grid[i - 1] < c < grid[i + 1] and sign * curve(c) >= sign * hx
        if kink:
            x, hx = c, curve(c)
        if digits is not None:
            x = (mp_context(digits + 20).num(to_fraction(Fraction(1) / EB)) if kink
                 else _newton(curve, x, grid[i - 1], grid[i + 1], digits))
            hx = curve.h(x, digits + 5)
        folds.append({"kind": kind, "rate": hx, "offered_rate": x, "kink": bool(kink)})
    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    with ctx:  # (E[B] rounded at the working precision, not at the default 53 bits)
        for f in folds:
            f["load"] = f["rate"] * ctx.num(EB)
            f["mean_copies"] = f["offered_rate"] / f["rate"]
            f["stable_below"] = f["kind"] == "upper"
    first = next((k for k, f in enumerate(folds) if f["kind"] == "upper"), None)
    if first is None or float(folds[first]["load"]) > X:
        out = {**dict.fromkeys(keys), "folds": folds, "note": f"no saddle-node at loads up to --max-load "
               f"{float(X):g}: h = lambda / E[copies] increases, the smallest fixed point moves continuously "
               "with the rate (no collapse onset)"}
        if curve.notes():
            out["notes"] = curve.notes()
        return out
    up = folds[first]
    low = folds[first + 1] if first + 1 < len(folds) else None
    out = {"upper": up["rate"], "lower": None if low is None else low["rate"],
           "load_upper": up["load"], "load_lower": None if low is None else low["load"],
           "offered_rate_upper": up["offered_rate"], "offered_rate_lower": None if low is None else low["offered_rate"],
           "mean_copies_upper": up["mean_copies"], "mean_copies_lower": None if low is None else low["mean_copies"],
           "folds": [{k: f[k] for k in ("kind", "rate", "load", "offered_rate", "mean_copies")} for f in folds]}
    note = (f"bistable for lambda_0 E[B] in ({float(out['load_lower']):.6g}, {float(out['load_upper']):.6g}): "
            if low is not None else f"the uncongested branch ends at lambda_0 E[B] = {float(up['load']):.6g}; ")
    note += ("above the upper end the smallest fixed point is the congested one; a simulated server collapses "
             "earlier, after a time that grows steeply as the load falls (docs/guides/sip-retransmission.md, "
             "'The collapse onset')")
    if low is not None and low["kink"]:
        note += f"; the lower end is the saturation kink lambda = 1/E[B] (load 1/n, n = {model.max_copies})"
    out["note"] = note
    if digits is None and not all(f["kink"] for f in folds[first:first + 2]):
        out["notes"] = [FLOAT64_ONSET_NOTE]
    if curve.notes():
        out["notes"] = out.get("notes", []) + curve.notes()
    return out


def _lifetime_levels(model):
    """(mu, N, the copies per transaction a_n = b_n / lambda_0 of (Q) for n = 0..N-1), checking the model."""
    from ....symbolic.laws.gamma import Exponential
    from ....symbolic.models.sip_retransmission import Control

    if not isinstance(model.service, Exponential):
        raise ParameterError("service", "the lifetime chain (Q) needs exponential service (a copy finding n then has "
                             "the sojourn Erlang(n + 1, mu))", model.service.spec_text())
    if model.duplicate_cost != 1:
        raise ParameterError("duplicate_cost", "below 1 is not in the lifetime chain (Q) (every copy costs B there)",
                             str(model.duplicate_cost))
    mu = 1 / float(model.service.mean)
    if model.control is Control.NONE:
        N = max(1, math.ceil(mu * float(model.timer)))
    else:  # the first entry into overload: the path before it is the uncontrolled one
        N = model.thresholds[1]
    if model.capacity is not None and model.capacity <= N and model.control is Control.NONE:
        raise ParameterError("capacity", f"K = {model.capacity} <= mu timeout = {N}: no copy can wait longer than the "
                             "timeout, so there is no collapse to wait for", model.capacity)
    from ....symbolic.limits import check

    check("capacity", N, "the lifetime chain (Q) has mu timeout (or H) levels")
    copies = np.ones(N)
    for tau in model.copy_times()[1:]:
        copies += poisson_cdf_levels(FLOAT64, mu * float(tau), N - 1)
    return mu, N, copies


def metastable_lifetime(model, rate=None) -> float:
    """The mean time to collapse from empty of the quasi-static chain (Q) (module docstring), in seconds, at
    ``rate`` lambda_0 (default the model's): E T_{0 -> N} for b_n = lambda_0 a_n, d_n = mu (float64; inf beyond the
    double range)."""
    mu, N, copies = _lifetime_levels(model)
    lam0 = float(model.rate if rate is None else rate)
    log_t = passage_time_log(FLOAT64, lam0 * copies, np.full(N, mu))
    return math.exp(log_t) if log_t < 709 else math.inf


def run_length_onset(model, run_length, lower=None):
    """The rate lambda_0 at which half of the runs of length T = ``run_length`` have collapsed, by (Q): the root of
    log lifetime(lambda_0) + log log 2 - log T on (``lower``, 1/E[B]) (default ``lower`` 1 / (n E[B]), the lower
    end without control), to 1e-6 relative; None when T is too short (the lifetime at the service capacity
    exceeds T / ln 2) or too long (the lifetime at ``lower`` is below it)."""
    mu, N, copies = _lifetime_levels(model)
    target = math.log(float(run_length) / math.log(2))
    mus = np.full(N, mu)

    def f(lam0):
        return passage_time_log(FLOAT64, lam0 * copies, mus) - target

    lo = (mu / model.max_copies if lower is None else float(lower)) * (1 + 1e-9)
    hi = mu
    flo, fhi = f(lo), f(hi)
    if not (flo > 0 > fhi):
        return None
    return float(illinois(f, lo, hi, flo, fhi, 1e-7))


@declare(via_engine=True)
def size(values: dict, request, digits=None) -> dict:
    """``qderive size sip-retransmission --target collapse-onset`` (the model's Action): :func:`collapse_onset` of
    the model given by ``values`` (every field but the rate, which the search chooses)."""
    model = SipRetransmissionModel.from_values({**values, "rate": 1})
    if model.retry_after is not None:  # lambda_0 = lambda / m(lambda) no longer holds: (R) adds 1 + J + ... + J^m
        raise ParameterError("retry_after", "is not computed by the collapse-onset search (its lambda_0 = lambda / "
                             "E[copies](lambda) has no retry factor); evaluate the rates with qderive eval",
                             decimal_text(model.retry_after))
    if request.run_length is not None:
        _lifetime_levels(model)  # refuses a model the lifetime chain does not cover before the search
    out = collapse_onset(model, request.max_load, digits)
    if request.run_length is not None:
        rate = run_length_onset(model, request.run_length)
        EB = float(model.service.moment(1))
        out["run_length_onset"] = {
            "run_length": float(request.run_length), "rate": rate, "load": None if rate is None else rate * EB,
            "lifetime_at_upper": None if out["upper"] is None else metastable_lifetime(model, out["upper"]),
            "note": "the load at which half of the runs of this length from empty have collapsed, by the quasi-static "
                    "lifetime chain (Q) (a memoryless exit: lifetime ln 2 = run length)"
                    + ("" if rate is not None else "; none: the run length is outside the lifetimes between the lower "
                       "end and the service capacity")}
    return out
