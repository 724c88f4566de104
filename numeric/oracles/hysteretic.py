"""Oracles of the hysteretic models: chains built from the model definitions, never from (16)-(23).

* :func:`embedded` -- M[X]|G|1|(L,H)|(H,R), any service law: the chain at departure epochs
  built state by state from the definition (a service in mode s that starts with c customers
  ends with n^- = min(R, c + A^{(s)}); after an idle period the first batch brings min(X, R);
  the next state is :meth:`HystereticModel.next_state`), found by search from (0, 0). The
  customers arriving during one service, A^{(s)}, come from **Panjer's recursion** for the
  compound count (Poisson counts of deterministic or empirical times, negative-binomial counts
  of gamma-type times, mixtures of them: f_n = sum_{i=1}^{n} (a + b i/n) l_i f_{n-i}) or, for
  other laws, from the **series** beta_k = the count law's exact pmf (SymPy) with k-fold
  convolutions of the batch law -- not from the positive-sum kernels the engine uses. The
  chain is solved with the kernels' one GTH; first-passage times and exit laws by the one
  subtraction-free M-matrix solve.
* :func:`process` -- exponential service: the CTMC of the continuous-time process over
  (count, mode in force) (:mod:`.ctmc`): a batch arrives at rate lambda_s l_x (the count is
  capped at R), a departure at rate mu from (c, s) leads to ``next_state(c, s)``. No embedded
  chain, no (17): it checks the time-stationary law, both semantics and the cycle times.
* :func:`instant` -- exponential service under ``--policy instant``: the CTMC over (count, mode in
  force) with the mode following the count at once (an arrival bringing the count to H or beyond
  in normal mode -> overload, to R -> discard, also directly from normal; a departure leaving
  L - 1 in overload -> normal, H in discard -> overload), from the definition.
* :func:`mm1` -- M|M|1 with bi-level hysteresis: the CTMC of ``docs/theory/other-models.md`` B from
  the model's switching rules (:meth:`MM1HystereticModel.mode_after_arrival`, ``..._departure``).
* :func:`threshold_optimum` -- the brute force of the threshold optimisation (seed 002): every
  (L, H, R) of a grid evaluated by an oracle, compared exactly.

Each returns a :class:`HystereticOracle`: the measures (the keys of ``qderive eval``) and what
the derivations bind to the displayed relations (q, P, the counts, the stationary law).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from ...symbolic import counts as C
from ...symbolic.errors import ParameterError
from ...symbolic.numbers import to_sympy
from ..kernels.chains import gth_stationary, mmatrix_solve
from .ctmc import build

__all__ = ["HystereticOracle", "compound_counts", "level_times", "embedded", "process", "instant", "mm1",
           "threshold_optimum"]


@dataclass
class HystereticOracle:
    """``measures``: key -> value (context numbers); ``states``, ``index``; ``q`` (embedded) or ``pi``
    (time-stationary) by state; ``P`` (embedded transition matrix, context); ``a`` = (a^{(0)}, a^{(1)})
    over 0..R, ``extra`` anything else (thesis E tau_0, label measures, C)."""

    measures: dict
    states: list
    index: dict
    q: dict = field(default_factory=dict)
    pi: dict = field(default_factory=dict)
    P: object = None
    a: tuple = ()
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# Customers arriving during one service: Panjer or the series of the count law
# --------------------------------------------------------------------------------------


def _panjer(ctx, f0, a, b, pmf, n):
    """f_0..f_n of a compound (a, b, 0) count with batch pmf l_1..l_n: f_m = sum_{i<=m} (a + b i/m) l_i f_{m-i}."""
    f = [f0]
    for m in range(1, n + 1):
        f.append(ctx.fsum([(a + b * i / m) * pmf[i] * f[m - i] for i in range(1, m + 1) if pmf[i] != 0]))
    return f


def _count_pmf(ctx, law, n):
    """beta_0..beta_n: the exact pmf of a count law (SymPy), rounded once into ``ctx``."""
    import sympy as sp

    dps = mpmath.mp.dps
    return [ctx.num(v) if v.is_Rational else mpmath.mpf(sp.N(v, dps + 10))
            for v in (to_sympy(law.pmf(k)) for k in range(n + 1))]


def _mixed(ctx, weights, pmf, n):
    """sum_{k<=m} weights_k l^{(k)}_m for m = 0..n, the k-fold convolutions l^{(k)} formed directly."""
    conv = [ctx.num(1)] + [ctx.num(0)] * n  # l^{(0)}
    out = [weights[0] * conv[m] for m in range(n + 1)]
    for k in range(1, n + 1):
        conv = [ctx.fsum([conv[m - i] * pmf[i] for i in range(1, m + 1)]) for m in range(n + 1)]
        out = [out[m] + weights[k] * conv[m] for m in range(n + 1)]
    return out


def _series(ctx, law, pmf, n):
    """a_m = sum_{k<=m} beta_k l^{(k)}_m with beta_k = the exact pmf of the count law."""
    return _mixed(ctx, _count_pmf(ctx, law, n), pmf, n)


def level_times(model, ctx, s):
    """J^{(s)}(n), n = 0..R: the mean time of one mode-s service during which exactly n customers have arrived.

    ``docs/theory/chapter3.md`` section 4: J^{(s)}(n) = sum_k w_k l^{(k)}_n with w_k = (1/lambda_s)(1 -
    sum_{i<=k} beta_i), beta the count law's exact pmf; with lambda_s = 0 (discard, complete
    blocking) J(0) = b_1. Call inside ``with ctx:``.
    """
    R = model.R
    lam = (model.rate, model.rate1, 0)[s]
    b1 = ctx.num(model.service.moment(1))
    if lam == 0:
        return [b1] + [ctx.num(0)] * R
    beta = _count_pmf(ctx, model.service.count_law(lam), R)
    w = [(1 - ctx.fsum(beta[: k + 1])) / ctx.num(lam) for k in range(R + 1)]
    pmf = [ctx.num(0)] + [ctx.num(model.batch.pmf(i)) for i in range(1, R + 1)]
    return _mixed(ctx, w, pmf, R)


def compound_counts(ctx, count_law, pmf, n):
    """P(A = m), m = 0..n, for A = X_1 + ... + X_K with K ~ ``count_law`` and batch pmf ``pmf`` (list over 0..n)."""
    if isinstance(count_law, C.PoissonCount):
        out = [ctx.num(0)] * (n + 1)
        for mean, w in zip(count_law.means, count_law.weights):
            m = ctx.num(mean)
            part = _panjer(ctx, mpmath.exp(-m), 0, m, pmf, n)
            out = [x + ctx.num(w) * y for x, y in zip(out, part)]
        return out
    if isinstance(count_law, C.NegativeBinomialCount):
        a, p0, q = (ctx.num(v) for v in (count_law.shape, count_law.p0, count_law.q))
        return _panjer(ctx, p0**a, q, (a - 1) * q, pmf, n)
    if isinstance(count_law, C.MixtureCount):
        parts = [compound_counts(ctx, c, pmf, n) for c in count_law.components]
        return [ctx.fsum([ctx.num(w) * p[m] for w, p in zip(count_law.weights, parts)]) for m in range(n + 1)]
    if isinstance(count_law, C.QuadratureCount):
        raise ParameterError(f"the embedded oracle needs exact count probabilities; {type(count_law.law).__name__} "
                             "has none")
    return _series(ctx, count_law, pmf, n)


def _mode_counts(model, ctx, pmf):
    R = model.R
    out = []
    for lam in (model.rate, model.rate1):
        if lam == 0:
            out.append([ctx.num(1)] + [ctx.num(0)] * R)
        else:
            out.append(compound_counts(ctx, model.service.count_law(lam), pmf, R))
    return tuple(out)


# --------------------------------------------------------------------------------------
# The embedded chain from the definition
# --------------------------------------------------------------------------------------


def _hitting(ctx, P, targets, costs_list):
    """Mean accumulated costs until the chain enters ``targets``, for several cost vectors (full length)."""
    n = P.shape[0]
    tset = set(targets)
    rest = [i for i in range(n) if i not in tset]
    tl = sorted(tset)
    W = P[np.ix_(rest, rest)].copy()
    into = ctx.array([ctx.fsum(list(P[i, tl])) for i in rest])
    sols = mmatrix_solve(ctx, W, into, [ctx.array([c[i] for i in rest]) for c in costs_list])
    out = []
    for h in sols:
        full = ctx.zeros(n)
        for a_, i in enumerate(rest):
            full[i] = h[a_]
        out.append(full)
    return out


def embedded(model, ctx) -> HystereticOracle:
    """The embedded-chain oracle of a :class:`HystereticModel` (interval semantics); call inside ``with ctx:``.

    Measures: q by GTH; C = sum q_{i,s} m_{i,s} with m = b_1 (+ 1/lambda_0 from (0, 0)); P(S_s) =
    sum_{mode s} q m / C; E tau_0 = mean cost m until leaving mode 0 from (L - 1, 0) (``extra``:
    the thesis's form with cost b_1); E tau_12 = sum over the exit states x of P(exit at x) x (mean
    cost back to mode 0 from x); throughput 1/C; loss 1 - throughput / (lambda_0 l_1). ``extra["cycle"]``:
    C / (the flow into S_0 per departure), the renewal value of E tau from the chain's flows.
    """
    R = model.R
    pmf = [ctx.num(0)] + [ctx.num(model.batch.pmf(i)) for i in range(1, R + 1)]
    first = {c: pmf[c] for c in range(1, R) if pmf[c] != 0}
    first[R] = ctx.num(model.batch.tail(R - 1))  # P(X >= R): the first batch fills the system
    a = _mode_counts(model, ctx, pmf)
    ge = [[1 - ctx.fsum(a[s][:m]) for m in range(R + 1)] for s in (0, 1)]  # P(A >= m)

    def n_minus(state):
        i, s = state
        if s == 2:
            return {i: ctx.num(1)}
        starts = {i: ctx.num(1)} if i >= 1 else first
        law = {}
        for c0, w in starts.items():
            for m in range(R - c0):
                law[c0 + m] = law.get(c0 + m, 0) + w * a[s][m]
            law[R] = law.get(R, 0) + w * ge[s][R - c0]
        return law

    states, index, rows, todo = [(0, 0)], {(0, 0): 0}, {}, deque([(0, 0)])
    while todo:
        st = todo.popleft()
        row = {}
        for nm, p in n_minus(st).items():
            nxt = model.next_state(nm, st[1])
            row[nxt] = row.get(nxt, 0) + p
        rows[st] = row
        for nxt in row:
            if nxt not in index:
                index[nxt] = len(states)
                states.append(nxt)
                todo.append(nxt)
    n = len(states)
    P = ctx.zeros((n, n))
    for st, row in rows.items():
        for nxt, p in row.items():
            P[index[st], index[nxt]] = P[index[st], index[nxt]] + p
    q = gth_stationary(ctx, P)
    b1, lam0 = ctx.num(model.service.moment(1)), ctx.num(model.rate)
    hold = [b1 + (1 / lam0 if st == (0, 0) else 0) for st in states]
    Cm = ctx.fsum([x * m for x, m in zip(q, hold)])
    p = [ctx.fsum([q[k] * hold[k] for k, st in enumerate(states) if st[1] == x]) / Cm for x in range(3)]
    outside = [k for k, st in enumerate(states) if st[1] != 0]
    normal = [k for k, st in enumerate(states) if st[1] == 0]
    start = index[(model.L - 1, 0)]
    t0, t0_thesis = (h[start] for h in _hitting(ctx, P, outside, [hold, [b1] * n]))
    exits = _hitting(ctx, P, outside, [[P[k, x] for k in range(n)] for x in outside])
    (back,) = _hitting(ctx, P, normal, [hold])
    t12 = ctx.fsum([e[start] * back[x] for e, x in zip(exits, outside)])
    thr = 1 / Cm
    entries = ctx.fsum([q[k] * P[k, x] for k in outside for x in normal])  # entries into S_0 per departure
    measures = {"p_normal": p[0], "p_overload": p[1], "p_discard": p[2], "mean_normal_time": t0,
                "mean_return_time": t12, "mean_cycle_time": t0 + t12,
                "loss_probability": 1 - thr / (lam0 * ctx.num(model.batch.mean)), "throughput": thr}
    return HystereticOracle(measures, states, index, q=dict(zip(states, q)), P=P, a=a,
                            extra={"thesis_normal_time": t0_thesis, "C": Cm, "ge": ge, "pmf": pmf, "first": first,
                                   "cycle": Cm / entries, "p": p})


# --------------------------------------------------------------------------------------
# The continuous-time process for exponential service
# --------------------------------------------------------------------------------------


def _label(model, c, s) -> int:
    """The ideal-hysteresis label of count c in an interval of mode s (spec section 4)."""
    if s == 2 or c >= model.R:
        return 2
    return 0 if s == 0 and c < model.H else 1


def _ctmc_measures(chain, pi, ctx, rates, mu, l1, mode, entries_start, back_start):
    """Mode probabilities, cycle times (first passage), throughput and loss of a (count, mode) CTMC."""
    states = chain.states
    p = [ctx.fsum([pi[k] for k, st in enumerate(states) if mode(st) == x]) for x in range(3)]
    A = chain.matrix(ctx)
    zero = [k for k, st in enumerate(states) if mode(st) == 0]
    rest = [k for k, st in enumerate(states) if mode(st) != 0]
    ones = [ctx.num(1)] * len(states)
    start = chain.index[entries_start]
    t0 = _hitting(ctx, A, rest, [ones])[0][start]
    if back_start is not None:  # the mode is always left to one state
        t12 = _hitting(ctx, A, zero, [ones])[0][chain.index[back_start]]
    else:
        exits = _hitting(ctx, A, rest, [[A[k, x] for k in range(len(states))] for x in rest])
        (back,) = _hitting(ctx, A, zero, [ones])
        t12 = ctx.fsum([e[start] * back[x] for e, x in zip(exits, rest)])
    busy = ctx.fsum([pi[k] for k, st in enumerate(states) if st[0] >= 1])
    thr = mu * busy
    return {"p_normal": p[0], "p_overload": p[1], "p_discard": p[2], "mean_normal_time": t0,
            "mean_return_time": t12, "mean_cycle_time": t0 + t12,
            "loss_probability": 1 - thr / (rates[0] * l1), "throughput": thr}


def process(model, ctx) -> HystereticOracle:
    """The CTMC of M[X]|M|1|(L,H)|(H,R) over (count, mode in force); call inside ``with ctx:``.

    ``measures``: interval semantics, E tau_0 and E tau_12 by first passage; ``extra["label"]``:
    label semantics (P by the labels of the states, E tau_0 = P_lab(S_0) E tau by renewal
    reward); ``extra["cycle"]`` = 1 / (rate of entries into mode 0); ``pi`` by state.
    """
    from ...symbolic.laws.gamma import Exponential

    if not isinstance(model.service, Exponential):
        raise ParameterError("service", "the process CTMC needs exponential service", str(model.service))
    R = model.R
    mu = 1 / model.service.moment(1)
    rates = (model.rate, model.rate1, 0)
    pmf = {x: model.batch.pmf(x) for x in range(1, R + 1)}

    def moves(state):
        c, s = state
        if rates[s] and c < R:
            for x in range(1, R - c):
                if pmf[x]:
                    yield (c + x, s), rates[s] * pmf[x]
            over = model.batch.tail(R - c - 1)  # P(X >= R - c): the batch fills the system
            if over:
                yield (R, s), rates[s] * over
        if c >= 1:
            yield model.next_state(c, s), mu

    chain = build((0, 0), moves)
    pi = list(chain.stationary(ctx))
    l1 = ctx.num(model.batch.mean)
    rts = tuple(ctx.num(r) for r in rates)
    interval = _ctmc_measures(chain, pi, ctx, rts, ctx.num(mu), l1, lambda st: st[1], (model.L - 1, 0), None)
    entries = ctx.fsum([pi[k] * ctx.num(mu) for k, (c, s) in enumerate(chain.states)
                        if s != 0 and c >= 1 and model.next_state(c, s)[1] == 0])
    cycle = 1 / entries
    interval["mean_time_between_mode_changes"] = 1 / chain.flow([ctx.num(1) * x for x in pi],
                                                                  lambda a, b: a[1] != b[1])
    lab = [ctx.fsum([pi[k] for k, (c, s) in enumerate(chain.states) if _label(model, c, s) == x]) for x in range(3)]
    label = {**interval, "p_normal": lab[0], "p_overload": lab[1], "p_discard": lab[2],
             "mean_normal_time": lab[0] * cycle, "mean_return_time": (1 - lab[0]) * cycle, "mean_cycle_time": cycle}
    return HystereticOracle(interval, chain.states, chain.index, pi=dict(zip(chain.states, pi)),
                            extra={"label": label, "cycle": cycle})


def instant(model, ctx) -> HystereticOracle:
    """The CTMC of ``--policy instant`` with exponential service over (count, mode in force); inside ``with ctx:``.

    ``measures``: every key of ``qderive eval hysteretic`` (E tau_0 by first passage from (L - 1, 0),
    E tau = 1 / (rate of entries into mode 0), E tau_12 = E tau - E tau_0, the loss from the throughput,
    the time between mode changes = 1 / (stationary flow of the mode-changing transitions)); ``pi`` by state.
    """
    from ...symbolic.laws.gamma import Exponential

    if not isinstance(model.service, Exponential):
        raise ParameterError("service", "the instant-policy CTMC needs exponential service", str(model.service))
    R, H, L = model.R, model.H, model.L
    rates = (model.rate, model.rate1, 0)
    mu = 1 / model.service.moment(1)

    def moves(state):
        c, s = state
        if rates[s] and c < R:
            for x in range(1, R - c):
                n = c + x
                yield (n, max(s, 0 if n < H else 1)), rates[s] * model.batch.pmf(x)
            yield (R, 2), rates[s] * model.batch.tail(R - c - 1)
        if c >= 1:
            j = c - 1
            yield (j, 0 if s == 1 and j <= L - 1 else 1 if s == 2 and j <= H else s), mu

    chain = build((0, 0), moves)
    pi = list(chain.stationary(ctx))
    p = [ctx.fsum([pi[k] for k, st in enumerate(chain.states) if st[1] == x]) for x in range(3)]
    rest = [k for k, st in enumerate(chain.states) if st[1] != 0]
    t0 = _hitting(ctx, chain.matrix(ctx), rest, [[ctx.num(1)] * chain.size])[0][chain.index[(L - 1, 0)]]
    thr = ctx.num(mu) * ctx.fsum([pi[k] for k, st in enumerate(chain.states) if st[0] >= 1])
    cycle = 1 / chain.flow(pi, lambda a, b: a[1] != 0 and b[1] == 0)
    measures = {"p_normal": p[0], "p_overload": p[1], "p_discard": p[2], "mean_normal_time": t0,
                "mean_return_time": cycle - t0, "mean_cycle_time": cycle,
                "loss_probability": 1 - thr / ctx.num(model.rate * model.batch.mean), "throughput": thr,
                "mean_time_between_mode_changes": 1 / chain.flow(pi, lambda a, b: a[1] != b[1])}
    return HystereticOracle(measures, chain.states, chain.index, pi=dict(zip(chain.states, pi)))


# --------------------------------------------------------------------------------------
# M|M|1 with bi-level hysteresis
# --------------------------------------------------------------------------------------


def mm1(model, ctx) -> HystereticOracle:
    """The CTMC of ``docs/theory/other-models.md`` B (``model`` an :class:`MM1HystereticModel`); call inside ``with ctx:``.

    ``extra["renewal"]`` = 1 / (mu pi(L, 1)) (one cycle per departure from (L, 1)),
    ``extra["mean_time_between_mode_changes"]`` = 1 / (flow of the mode-changing transitions); E tau_0 by first
    passage from (L - 1, 0), E tau_12 from (H, 1) (normal mode is always left there).
    """
    rates = model.rates()
    mu = model.service_rate

    def moves(state):
        n, s = state
        if rates[s]:
            yield (n + 1, model.mode_after_arrival(s, n + 1)), rates[s]
        if n >= 1:
            yield (n - 1, model.mode_after_departure(s, n - 1)), mu

    chain = build((0, 0), moves)
    pi = list(chain.stationary(ctx))
    m = _ctmc_measures(chain, pi, ctx, tuple(ctx.num(r) for r in rates), ctx.num(mu), ctx.num(1),
                       lambda st: st[1], (model.L - 1, 0), (model.H, 1))
    renewal = 1 / (ctx.num(mu) * pi[chain.index[(model.L, 1)]])
    changes = 1 / chain.flow(pi, lambda a, b: a[1] != b[1])
    return HystereticOracle(m, chain.states, chain.index, pi=dict(zip(chain.states, pi)),
                            extra={"renewal": renewal, "mean_time_between_mode_changes": changes})
    return HystereticOracle(m, chain.states, chain.index, pi=dict(zip(chain.states, pi)), extra={"renewal": renewal})


# --------------------------------------------------------------------------------------
# The threshold optimisation by brute force (seed 002)
# --------------------------------------------------------------------------------------


def threshold_optimum(measures_at, r_values, discard_bound, min_cycle, discard_key="p_discard", tie=0):
    """(smallest E tau_12, every (L, H, R) attaining it sorted by R, L, H) over all 1 <= L < H < R, R in
    ``r_values``, with P(S_2) <= ``discard_bound`` and E tau >= ``min_cycle`` (None, [] if none is feasible).

    ``measures_at(L, H, R)`` returns an oracle's measures (exact Fractions or mpmath numbers); the bounds
    are compared exactly (mpmath values against the bounds at 80 digits); two return times are tied when
    they differ by at most ``tie`` times the smallest (0: equal).
    """
    def as_mp(x):
        x = Fraction(x) if isinstance(x, (int, Fraction)) else x
        return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else mpmath.mpf(x)

    rows = []
    with mpmath.workdps(80):
        eps, T = as_mp(discard_bound), as_mp(min_cycle)
        for R in r_values:
            for L in range(1, R - 1):
                for H in range(L + 1, R):
                    m = measures_at(L, H, R)
                    if as_mp(m[discard_key]) <= eps and as_mp(m["mean_cycle_time"]) >= T:
                        rows.append((m["mean_return_time"], (L, H, R)))
        if not rows:
            return None, []
        best = min(v for v, _ in rows)
        ties = [t for v, t in rows if (v == best if isinstance(v, Fraction) and isinstance(best, Fraction) and not tie
                                       else abs(as_mp(v) - as_mp(best)) <= tie * abs(as_mp(best)))]
    return best, sorted(ties, key=lambda t: (t[2], t[0], t[1]))
