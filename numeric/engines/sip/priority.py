r"""Priority to non-INVITE copies in the ``sip-retransmission`` server (``--discipline priority``).

Seed 001's algorithm 2 (``docs/guides/sip-retransmission.md``, "Priority to non-INVITE"): the server takes the
waiting non-INVITE copies first (non-preemptive: a copy in service finishes; arrival order within a flow), in every
mode. Under THE approximation of :mod:`qderive.numeric.engines.sip` each flow's copies are Poisson,
rates Lambda_1 = w lambda (the ``--method`` flow) and Lambda_2 = (1 - w) lambda, w the share of flow 1 in the
admitted copies (the engine's inner unknown "share"); the refusal is class-blind (the control counts N, every copy
in the server), so p is common and only each flow's sojourn law F_i differs. Below H is the high class (non-INVITE),
L the low one (INVITE), B_c the service laws (transforms B_c(s)), rho_c = Lambda_c E[B_c], rho = rho_H + rho_L.

**Route (a): no control, no capacity** -- the M/G/1 queue with two classes and non-preemptive priority
(Kesten and Runnenburg 1957; Kleinrock, Queueing Systems vol. 2, chapter 3, head-of-the-line priorities; Takagi,
Queueing Analysis vol. 1, chapter 3). The waiting-time transforms::

    W_H(s) = [(1 - rho) s + Lambda_L (1 - B_L(s))] / [s - Lambda_H + Lambda_H B_H(s)]                   (P1)
    W_L(s) = (1 - rho) sigma(s) / [s - Lambda_L + Lambda_L B_L(sigma(s))],
             sigma(s) = s + Lambda_H (1 - G_H(s)),   G_H(s) = B_H(s + Lambda_H - Lambda_H G_H(s))         (P2)

G_H is the transform of the busy period of the high class alone (Takacs' equation), solved at each node by
Newton's method (:func:`busy_period_lst`). (P2) in one line: a tagged low copy waits for the work V found in the
system (every copy present is served before it: V has the discipline-free M/G/1 workload law, the
Pollaczek-Khinchine transform (1 - rho) s / (s - Lambda_H + Lambda_H B_H(s) - Lambda_L + Lambda_L B_L(s))) and for
every high copy arriving before its service starts, so W_L is a delay busy period of the high class started by V:
W_L(s) = V(sigma(s)), and B_H(sigma(s)) = G_H(s) turns it into (P2). Each flow's admitted copy has the sojourn
W_c + B_c (independent: transform W_c(s) B_c(s)); its tails by the engine's Euler inversion
(:meth:`~qderive.numeric.engines.sip.routes.Route.tails` with ``law=``). The means are Cobham's (1954),
W_H = R0 / (1 - rho_H), W_L = R0 / ((1 - rho_H)(1 - rho)), R0 = sum_c Lambda_c E[B_c^2] / 2
(tests/test_sip_priority.py checks them against the transforms' derivatives at 30 digits).

*Saturation.* rho_H >= 1: no class has a stationary regime (every copy unanswered, as the FIFO server's
lambda E[B] >= 1). rho_H < 1 <= rho: the low class's queue grows without bound (its F = 1), while the server,
whenever no high copy waits, starts a low service (a low copy is always waiting): the high class sees the M/G/1
queue with multiple vacations of law B_L (Fuhrmann-Cooper), W_H(s) = (1 - rho_H) s / (s - Lambda_H + Lambda_H
B_H(s)) * (1 - B_L(s)) / (s E[B_L]); that is (P1) with Lambda_L replaced by the low class's throughput
(1 - rho_H) / E[B_L] (rho = 1): the limit of (P1) as rho -> 1, so F_H is continuous in lambda.

**Route (b): ``--control ignore|503``, exponential laws** (rates mu_H, mu_L; c = 1, no capacity, no vacation):
the exact CTMC of the contract's rule (:func:`~qderive.numeric.engines.sip.chains.control_chain`: an
arrival finding N >= H switches to overload and is refused; every arrival is refused in overload; a departure
leaving L returns to normal) on (n_H, n_L, class in service, mode) with N = n_H + n_L, the next copy a high one
when one waits (:func:`priority_chain`); p = 1 - sum of pi over the normal states with N < H (PASTA, class-blind).
Tagged chains (:func:`tagged_high`, :func:`tagged_low`; the tails by uniformization,
:func:`~qderive.numeric.engines.ctmc_wait.phase_type_laws`):

* a tagged high copy waits for the copy in service and the k high copies waiting ahead of it; nothing that arrives
  later passes it: states (k, class in service), k -> k - 1 at each departure, then its own service at mu_H;
* a tagged low copy waits for the copy in service, the a low copies ahead and every high copy present at a service
  completion: high copies arriving later overtake it, and their admission depends on N (counting the b low copies
  behind it) and the mode: states (h, a, b, class in service, mode), N = h + a + b + 2 (the tagged copy and the one
  in service), then its own service at mu_L.

The chains have about 2 H^2 (system) and H^3 / 3 (tagged low copy) states: H is limited by ``priority_high``
(:mod:`qderive.symbolic.limits`).
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import numpy as np

from ....symbolic.errors import NumericalError
from ...backend import FLOAT64
from ...response import ResponseLaw

__all__ = ["busy_period_lst", "mg1_priority_laws", "never_law", "priority_chain", "tagged_high", "tagged_low",
           "chain_rates"]


# --------------------------------------------------------------------------------------
# Route (a): the M/G/1 non-preemptive priority queue
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _lst_pair(law):
    """(B(s), B'(s)) of a law, compiled once (cached evaluator keyed by the law's text)."""
    from ...compile import cached_evaluator

    def make():
        import sympy as sp

        s = sp.Symbol("s")
        beta = sp.Integer(1) * law.lst(s)  # a SymPy expression of the law's transform
        return (beta, sp.diff(beta, s)), (s,)

    return cached_evaluator(f"sip_priority_lst::{type(law).__name__}::{law.spec_text()}", make)


def _at(law, ctx, z):
    """(B(z), B'(z)) at a 1-d array of complex nodes z (complex128, or mpc objects inside ``with ctx``)."""
    ev = _lst_pair(law)
    if ctx.is_float64:
        b, d = ev.numpy(np.asarray(z, dtype=complex))
        ones = np.ones(len(z))
        return np.asarray(b, dtype=complex) * ones, np.asarray(d, dtype=complex) * ones
    pair = np.frompyfunc(lambda x: tuple(ev.mpmath(x)), 1, 2)
    return pair(z)


def _num(ctx, x):
    return float(x) if ctx.is_float64 else ctx.num(x)


def busy_period_lst(law, rate, ctx, s):
    """G(s), the transform of the M/G/1 busy period with arrival rate ``rate`` and service ``law``, at the nodes
    ``s`` (1-d array, Re s > 0): the root of G = B(s + Lambda - Lambda G) with |G| <= 1 (Takacs' equation; Kleinrock,
    Queueing Systems vol. 1, section 5.8), by two fixed-point steps from G = 0 (in mpmath: from the float64 root) and
    Newton's method on G - B(s + Lambda (1 - G)), whose derivative 1 + Lambda B'(sigma) stays away from 0
    (|Lambda B'(sigma)| <= Lambda E[B] < 1 for Re sigma >= 0), to 1e-15 (float64) or 10^-(dps - 5) absolute. Inside
    ``with ctx`` for mpmath."""
    lam = _num(ctx, rate)
    s = np.asarray(s)
    if ctx.is_float64:
        G = s * 0
        for _ in range(2):
            G = _at(law, ctx, s + lam * (1 - G))[0]
    else:  # Newton from the float64 root: two or three steps to the working precision
        start = busy_period_lst(law, rate, FLOAT64, np.array([complex(x) for x in s.tolist()], dtype=complex))
        G = np.array([mpmath.mpc(complex(x)) for x in start.tolist()] if len(s) else [], dtype=object)
    tol = 1e-15 if ctx.is_float64 else ctx.num(10) ** -(ctx.dps - 5)
    for _ in range(60):
        b, d = _at(law, ctx, s + lam * (1 - G))
        step = (G - b) / (1 + lam * d)
        G = G - step
        if len(s) == 0 or max(abs(x) for x in step.tolist()) <= tol:
            return G
    raise NumericalError("sip-retransmission --discipline priority: the busy-period transform did not converge")


def _no_moments(k, digits=None):
    raise NotImplementedError("the priority queue's sojourn moments are not used")


def never_law():
    """The sojourn of a copy that is never served (a class without stationary regime): P(R_copy > t) = 1."""
    def tails(ts, digits):
        one = 1.0 if digits is None else mpmath.mpf(1)
        return [one for _ in ts], None

    return ResponseLaw("sojourn", None, lambda ctx: ctx.num(0), _no_moments, True, "", tails)


def mg1_priority_laws(B_hi, B_lo, rate_hi, rate_lo):
    """(sojourn law of a high copy or None, of a low copy or None, utilization) of the M/G/1 non-preemptive priority
    queue (module docstring, (P1), (P2)); None: the class has no stationary regime (saturation: rho_H >= 1 for both,
    rho >= 1 for the low class, the high class then with the vacation form of (P1)). Rates exact (Fractions)."""
    m_hi, m_lo = Fraction(B_hi.moment(1)), Fraction(B_lo.moment(1))
    rho_hi = rate_hi * m_hi
    if rho_hi >= 1:
        return None, None, Fraction(1)
    eff_lo = rate_lo if rho_hi + rate_lo * m_lo < 1 else (1 - rho_hi) / m_lo  # the low class's throughput
    rest = 1 - rho_hi - eff_lo * m_lo  # 1 - rho, 0 in saturation

    def high(ctx):
        with ctx:
            a_h, a_l, omr = _num(ctx, rate_hi), _num(ctx, eff_lo), _num(ctx, rest)

        def value(s):
            z = np.asarray(s)
            x = z.ravel()
            bh, bl = _at(B_hi, ctx, x)[0], _at(B_lo, ctx, x)[0]
            W = (omr * x + a_l * (1 - bl)) / (x - a_h + a_h * bh)  # (P1)
            return np.reshape(W * bh, z.shape)
        return value

    def low(ctx):
        with ctx:
            a_h, a_l, omr = _num(ctx, rate_hi), _num(ctx, rate_lo), _num(ctx, rest)

        def value(s):
            z = np.asarray(s)
            x = z.ravel()
            sigma = x + a_h * (1 - busy_period_lst(B_hi, rate_hi, ctx, x))
            W = omr * sigma / (x - a_l + a_l * _at(B_lo, ctx, sigma)[0])  # (P2)
            return np.reshape(W * _at(B_lo, ctx, x)[0], z.shape)
        return value

    def law(transform):
        return ResponseLaw("sojourn", transform, lambda ctx: ctx.num(0), _no_moments, True, "")

    return law(high), (law(low) if rest > 0 else None), min(Fraction(1), rho_hi + rate_lo * m_lo)


# --------------------------------------------------------------------------------------
# Route (b): the control chain with priority (exponential laws)
# --------------------------------------------------------------------------------------

#: the rate labels of the chains: arrivals of the high / low class, both (an arrival that switches to overload),
#: the service rates of the high / low class
LABELS = ("ah", "al", "a", "mh", "ml")


def chain_rates(rate_hi, rate_lo, mu_hi, mu_lo) -> dict:
    """The exact value of each label of :data:`LABELS`."""
    return {"ah": rate_hi, "al": rate_lo, "a": rate_hi + rate_lo, "mh": mu_hi, "ml": mu_lo}


@functools.lru_cache(maxsize=8)
def priority_chain(L: int, H: int):
    """(states, moves): the contract's control (module docstring) with priority to the high class; states
    (0, 0, -1, 0) (empty, first) and (n_H, n_L, c, mode), N = n_H + n_L in 1..H (normal, mode 0) or L+1..H
    (overload, mode 1), c the class in service (0 high, 1 low), ordered by N (so the GTH elimination is banded);
    moves (i, j, label) with the labels of :data:`LABELS`."""
    states = [(0, 0, -1, 0)]
    for N in range(1, H + 1):
        for s in (0, 1):
            if s == 1 and N <= L:
                continue
            for nh in range(N + 1):
                for c in (0, 1):
                    if (c == 0 and nh >= 1) or (c == 1 and N - nh >= 1):
                        states.append((nh, N - nh, c, s))
    index = {x: i for i, x in enumerate(states)}
    moves = []
    for (nh, nl, c, s) in states:
        i = index[(nh, nl, c, s)]
        N = nh + nl
        if N == 0:
            moves += [(i, index[(1, 0, 0, 0)], "ah"), (i, index[(0, 1, 1, 0)], "al")]
            continue
        if s == 0 and N < H:
            moves += [(i, index[(nh + 1, nl, c, 0)], "ah"), (i, index[(nh, nl + 1, c, 0)], "al")]
        elif s == 0:  # an arrival finding N >= H switches to overload (and is refused)
            moves.append((i, index[(nh, nl, c, 1)], "a"))
        rh, rl = nh - (c == 0), nl - (c == 1)
        after = 0 if s == 0 or N - 1 == L else 1  # a departure leaving L returns to normal
        if N == 1:
            j = 0
        else:
            j = index[(rh, rl, 0 if rh >= 1 else 1, after)]
        moves.append((i, j, "mh" if c == 0 else "ml"))
    return tuple(states), tuple(moves)


def _arrays(levels, moves, totals, entries, system_states):
    """The label structure as arrays (built once per (L, H)): levels, rows, cols (-1: absorption), label indices,
    the distinct total-rate label tuples and each state's index among them, the entries (tagged, system state)."""
    pos = {k: i for i, k in enumerate(LABELS)}
    types = sorted(set(totals))
    tpos = {t: i for i, t in enumerate(types)}
    return (np.asarray(levels, dtype=np.int64), np.array([i for i, _, _ in moves], dtype=np.int64),
            np.array([j for _, j, _ in moves], dtype=np.int64), np.array([pos[k] for _, _, k in moves], dtype=np.int64),
            tuple(types), np.array([tpos[t] for t in totals], dtype=np.int64),
            np.array([t for t, _ in entries], dtype=np.int64), np.array([s for _, s in entries], dtype=np.int64),
            system_states)


def _tagged(structure, values, pi_of):
    """A :class:`~qderive.numeric.engines.ctmc_wait.TaggedChain` from a structure of :func:`_arrays` and the exact
    label values (:func:`chain_rates`); ``pi_of(ctx)`` the system's stationary vector."""
    from ..ctmc_wait import TaggedChain

    levels, rows, cols, kinds, types, tindex, ti, si, system_states = structure
    sums = [sum((values[k] for k in t), Fraction(0)) for t in types]
    size = len(levels)

    def entry(ctx):
        pi = pi_of(ctx)
        w = ctx.zeros(size)
        if ctx.is_float64:
            np.add.at(w, ti, pi[si])
            return w / float(np.sum(w))
        for t, s in zip(ti.tolist(), si.tolist()):
            w[t] = w[t] + pi[s]
        return w / ctx.fsum(w.tolist())

    return TaggedChain(levels, rows, cols, kinds, tuple(values[k] for k in LABELS),
                       tuple(sums[i] for i in tindex.tolist()), entry, system_states)


@functools.lru_cache(maxsize=8)
def _high_structure(L, H):
    states, _ = priority_chain(L, H)
    tag = [None] + [(k, c) for k in range(H - 1) for c in (0, 1)]  # None: the tagged copy in service
    where = {x: i for i, x in enumerate(tag)}
    moves, totals = [(0, -1, "mh")], [("mh",)]
    for (k, c) in tag[1:]:
        moves.append((where[(k, c)], where[(k - 1, 0)] if k >= 1 else 0, "mh" if c == 0 else "ml"))
        totals.append(("mh" if c == 0 else "ml",))
    entries = []
    for si, (nh, nl, c, s) in enumerate(states):
        if s == 0 and nh + nl < H:
            entries.append((0 if nh + nl == 0 else where[(nh - (c == 0), c)], si))
    levels = [0] + [k + 1 for k, _ in tag[1:]]
    return _arrays(levels, moves, totals, entries, len(states))


def tagged_high(L, H, values, pi_of):
    """The sojourn chain of an admitted high copy (module docstring); ``values`` of :func:`chain_rates`,
    ``pi_of(ctx)`` the stationary vector of :func:`priority_chain`."""
    return _tagged(_high_structure(L, H), values, pi_of)


@functools.lru_cache(maxsize=8)
def _low_structure(L, H):
    states, _ = priority_chain(L, H)
    tag = [None]
    for N in range(2, H + 1):
        for s in (0, 1):
            if s == 1 and N <= L:
                continue
            for h in range(N - 1):
                for a in range(N - 1 - h):
                    for c in (0, 1):
                        tag.append((h, a, N - 2 - h - a, c, s))
    where = {x: i for i, x in enumerate(tag)}
    moves, totals = [(0, -1, "ml")], [("ml",)]
    for x in tag[1:]:
        h, a, b, c, s = x
        i, N, m = where[x], h + a + b + 2, ("mh" if c == 0 else "ml")
        if s == 0 and N < H:
            moves += [(i, where[(h + 1, a, b, c, 0)], "ah"), (i, where[(h, a, b + 1, c, 0)], "al")]
        elif s == 0:
            moves.append((i, where[(h, a, b, c, 1)], "a"))
        after = 0 if s == 0 or N - 1 == L else 1
        if h >= 1:
            j = where[(h - 1, a, b, 0, after)]
        elif a >= 1:
            j = where[(0, a - 1, b, 1, after)]
        else:
            j = 0  # the tagged copy's own service starts
        moves.append((i, j, m))
        totals.append(("a", m) if s == 0 else (m,))
    entries = []
    for si, (nh, nl, c, s) in enumerate(states):
        if s == 0 and nh + nl < H:
            entries.append((0 if nh + nl == 0 else where[(nh - (c == 0), nl - (c == 1), 0, c, 0)], si))
    # every waiting state on level 1: the position h + a + 1 grows with the high arrivals, so the chain is not
    # level-triangular (the moments are not used; the tails are uniformized)
    levels = [0] + [1] * (len(tag) - 1)
    return _arrays(levels, moves, totals, entries, len(states))


def tagged_low(L, H, values, pi_of):
    """The sojourn chain of an admitted low copy (module docstring)."""
    return _tagged(_low_structure(L, H), values, pi_of)
