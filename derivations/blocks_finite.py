"""The finite room with blocks: Statement 1 and Theorem 1 of the thesis for composed start rules, derived and checked.

The steps (BF1)..(BF6) are appended to the ``vacation-finite`` derivation (``docs/theory/blocks.md`` section 5,
"The finite room: Statement 1 with blocks"). They generalise the thesis's finite-room relations
(``docs/theory/chapter2.md`` section 2: Statement 1, (9)-(15)) from the vacation rules to every idle passage
composed of the blocks (close-down, vacations, start threshold N <= r, setup), under partial admission, for the
chain at departures (the number left behind), which is the chain of the block engine
(:mod:`qderive.numeric.engines.blocks_finite`):

(BF1) Partial admission turns the number present k + (arrivals) into min(k + arrivals, cap), so the capped count
      is the uncapped one's min with the cap at every epoch; a threshold N <= r is met at the same epochs in both
      rooms. Hence the first-service count Y^r = min(Y, kappa), kappa = r + 1 when the passage ends in a stage
      where the batch's arrival starts service at once (a close-down; a wait that ends the passage), else r; and
      the idle period's mean E[I] and its times T_k at each level k < r are the infinite room's.
(BF2) The cuts between j and j + 1 of the departure chain: a_0 pi_{j+1} = pi_0 cbar_j + sum_i pi_i abar_{j-i+1},
      cbar_j = P(Y - 1 + A > j). For j <= r - 2 the capped Y gives the same cbar_j; at j = r - 1 they differ by
      a_0 eps_r, eps_r = P(Y > r, kappa = r) = P(Y^r = r) - P(Y = r).
(BF3) Statement 1 with blocks: pi^r_j = pi~_j / S for j < r and pi^r_r = (pi~_r - eps_r) / S,
      S = sum_{i<=r} pi~_i - eps_r: the renormalised truncation, with one correction at the top. It is exact
      truncation for j = 0..r when eps_r = 0 (no stage with r places can end the passage with more than r present:
      no vacation and no setup). The thesis's chain also counts vacation ends as epochs; at departures only, its own
      model has eps_r > 0 (the verify check shows it).
(BF4) Renewal reward (the thesis's (9)): the number waiting at a service start, s_l = pi_{l+1} + pi_0 P(Y^r = l+1),
      is the infinite room's for l < r (the top correction cancels: pi_r loses eps_r, P(Y^r = r) gains it), and
      so is the time at each level j < r: p^r_j = P^r_I p~_j, p~_j the infinite room's law per unit of idle time,
      P^r_I the fraction of time the server does not serve (Theorem 1.2 (13), (14)).
(BF5) The loss (Theorem 1.1 (12)) with the places of the blocks: a batch finds r - j places, or r + 1 - k when
      its arrival starts service at once (time fraction tau^r_k at level k): pi = sum_j p^r_j pi_j -
      sum_k tau^r_k (pi_k - pi_{k-1}), pi_j = E (X - (r - j))^+ / l_1.
(BF6) Corollary 1 (15) with blocks, from the load balance rho_bar (1 - pi) = 1 - P^r_I:
      P^r_I = 1 / (1 + rho_bar sum_{j<r} p~_j (1 - pi_j) + rho_bar sum_k tau~_k (pi_k - pi_{k-1})),
      tau~_k = tau^r_k / P^r_I the infinite room's at-once time per unit of idle time.

Whole admission: a refused batch changes the cuts below the top, and Statement 1 fails; :func:`_whole_fails`
exhibits it exactly (rational GTH of the block chain).

Every check compares computations made another way: the block chain (CTMC from the stages' definition,
:mod:`qderive.numeric.oracles.blocks`, at digits + 10 or in rationals) against the cut recursion written here from
the infinite room's first-service law (:class:`qderive.numeric.engines.blocks.VectorPassage`), the infinite room's
law (:func:`qderive.numeric.engines.blocks.waiting_law`) and the finite passage's times
(:class:`qderive.numeric.engines.blocks_finite.FinitePassage`).
"""

from __future__ import annotations

import contextlib
import functools
import math
from fractions import Fraction as F

import mpmath
import sympy as sp

from .framework import Check, Step, agreement_digits

__all__ = ["finite_block_steps", "finite_block_checks", "departure_law", "unnormalised_departures"]

# -- symbols --------------------------------------------------------------------------------------------------
r, j, i, k = sp.symbols("r j i k", integer=True, nonnegative=True)
rho_bar = sp.Symbol(r"\bar{\rho}", positive=True)
Y, Yr, kappa, eps, A = sp.symbols(r"Y Y^{r} kappa \varepsilon_{r} A")
a, abar, cbar = sp.IndexedBase("a"), sp.IndexedBase(r"\bar{a}"), sp.IndexedBase(r"\bar{c}")
pit, pir = sp.IndexedBase(r"\tilde{\pi}"), sp.IndexedBase(r"\pi^{r}")
pt, pr = sp.IndexedBase(r"\tilde{p}"), sp.IndexedBase("p^{r}")
tau, taut = sp.IndexedBase(r"\tau^{r}"), sp.IndexedBase(r"\tilde{\tau}")
lossj = sp.IndexedBase(r"\pi")
loss, PI, theta = sp.symbols(r"\pi P^{r}_{I} \theta")
Prob = sp.Function("P")
Pz, z = sp.Function("P^{r}"), sp.Symbol("z")

_S = sp.Sum(pit[i], (i, 0, r)) - eps
REL = {
    "(BF1)": sp.And(sp.Eq(Yr, sp.Min(Y, kappa)), sp.Eq(eps, Prob(sp.Eq(Yr, r)) - Prob(sp.Eq(Y, r)))),
    "(BF2)": sp.And(sp.Eq(a[0] * pit[j + 1], pit[0] * cbar[j] + sp.Sum(pit[i] * abar[j - i + 1], (i, 1, j))),
                    sp.Eq(cbar[j], Prob(Y - 1 + A > j))),
    "(BF3)": sp.And(sp.Eq(pir[j], pit[j] / _S), sp.Eq(pir[r], (pit[r] - eps) / _S)),
    "(BF4)": sp.And(sp.Eq(pr[j], PI * pt[j]),
                    sp.Eq(Pz(z), PI * (sp.Sum(pt[j] * z**j, (j, 0, r - 1)) + theta * z**r)),
                    sp.Eq(theta, 1 / PI - sp.Sum(pt[j], (j, 0, r - 1)))),
    "(BF5)": sp.Eq(loss, sp.Sum(pr[j] * lossj[j], (j, 0, r))
                   - sp.Sum(tau[k] * (lossj[k] - lossj[k - 1]), (k, 0, r - 1))),
    "(BF6)": sp.Eq(PI, 1 / (1 + rho_bar * sp.Sum(pt[j] * (1 - lossj[j]), (j, 0, r - 1))
                           + rho_bar * sp.Sum(taut[k] * (lossj[k] - lossj[k - 1]), (k, 0, r - 1)))),
}

_TITLES = {
    "(BF1)": (r"With blocks (a close-down, vacations, a start threshold $N \le r$, a setup) and partial admission, "
              r"the number present in the room is the unbounded one's minimum with the cap at every epoch, and a "
              r"threshold $N \le r$ is met at the same epochs: the first-service count $Y^{r}$ is $Y$ capped at "
              r"$\kappa = r + 1$ when the passage ends where an arrival starts service at once (a close-down; a "
              r"wait that ends the passage), else at $\kappa = r$; the idle period's mean and its times at the "
              r"levels $k < r$ are those of the unbounded room"),
    "(BF2)": (r"The cuts of the chain at departures ($\tilde\pi_0 = 1$, $A$ the arrivals during a service), the "
              r"recursion of [@sopin2013, eq. (2)] with the start law of the blocks: for $j \le r - 2$ the capped "
              r"count gives the same $\bar c_j$; at $j = r - 1$ it differs by $a_0 \varepsilon_r$"),
    "(BF3)": (r"Statement 1 with blocks: the law left behind by a departure with $r$ places is the renormalised "
              r"truncation of $\tilde\pi$ for $j = 0, \dots, r-1$ and every load, with the correction "
              r"$\varepsilon_r$ at the top; $\varepsilon_r = 0$ without vacation and setup, where the truncation "
              r"holds for $j = 0, \dots, r$"),
    "(BF4)": (r"Renewal reward [@sopin2013, eq. (9)]: the number waiting at a service start is the unbounded "
              r"room's below the top (the correction at the top cancels), so the time-stationary law below the top "
              r"is $P^{r}_{I}$, the fraction of time the server does not serve, times the unbounded room's law per "
              r"unit of idle time"),
    "(BF5)": (r"The loss per customer [@sopin2013, eq. (12)] with the places of the blocks: a batch finds "
              r"$r - j$ places, or $r + 1 - k$ when its arrival starts service at once (the fraction of time "
              r"$\tau^{r}_{k}$ at level $k$), with $\pi_j = E(X - (r - j))^{+}/l_1$"),
    "(BF6)": (r"Corollary 1 with blocks, from the load balance $\bar\rho (1 - \pi) = 1 - P^{r}_{I}$: "
              r"$\tilde\tau_k$ the unbounded room's time at level $k$ where an arrival starts service at once, per "
              r"unit of idle time"),
}
_CITE = {"(BF3)": "[@sopin2013, Statement 1]", "(BF4)": "[@sopin2013, Theorem 1.2, eqs. (13), (14)]",
         "(BF5)": "[@sopin2013, Theorem 1, eq. (12)]", "(BF6)": "[@sopin2013, Corollary 1, eq. (15)]"}


# -- model points (phase-type laws: the block chain solves them from the definition) ------------------------------

def _points() -> dict:
    from ..symbolic.batches import FinitePMF, Geometric
    from ..symbolic.laws import Erlang, Exponential
    from ..symbolic.models.vacation import FiniteVacationQueue, VacationPolicy

    return {
        "setup, N = 3, multiple vacations, r = 4": lambda: FiniteVacationQueue.from_load(
            F(3, 4), FinitePMF({1: F(1, 2), 2: F(1, 4), 4: F(1, 4)}), Erlang(2, F(1, 3)), Exponential(F(1, 2)), 4,
            start_threshold=3, setup=Erlang(2, F(1, 2))),
        "close-down, single vacation, r = 3": lambda: FiniteVacationQueue.from_load(
            F(1, 2), Geometric(2), Exponential(1), Exponential(F(1, 2)), 3, vacation_policy=VacationPolicy.SINGLE,
            close_down=Exponential(F(1, 3))),
        "close-down, N = 2, no vacation, r = 3": lambda: FiniteVacationQueue.from_load(
            F(3, 5), FinitePMF({1: F(1, 2), 3: F(1, 2)}), Erlang(2, 1), None, 3, start_threshold=2,
            close_down=Exponential(F(1, 3))),
    }


def _overload():
    from ..symbolic.batches import FinitePMF
    from ..symbolic.laws import Exponential
    from ..symbolic.models.vacation import FiniteVacationQueue

    return FiniteVacationQueue.from_load(2, FinitePMF({1: F(1, 2), 2: F(1, 2)}), Exponential(1), Exponential(F(1, 2)),
                                         3, start_threshold=2, setup=Exponential(F(1, 2)))


def _mpf(x):
    x = F(x)
    return mpmath.mpf(x.numerator) / x.denominator


# -- independent computations -------------------------------------------------------------------------------------

def departure_law(model, ctx=None):
    """(d, p, idle, once) of the block chain of ``model`` (a FiniteVacationQueue) from its definition: d_j the rate
    of departures leaving j waiting, p_j the time-stationary law of the number waiting, idle the fraction of time
    not serving, once_k the time at level k in a stage where an arrival starts service at once. ``ctx``: an mpmath
    context (:func:`~qderive.numeric.backend.mp_context`), or None: exact rationals (GTH over fractions)."""
    from ..numeric.oracles.blocks import block_ctmc
    from ..symbolic.blocks.machine import places

    chain, info = block_ctmc(model)
    rr = model.capacity
    if ctx is None:
        x, num = chain.stationary_exact(), F
    else:
        with ctx:
            x = list(chain.stationary(ctx))
        num = ctx.num
    zero = num(0)
    d, p, once, idle = [zero] * (rr + 1), [zero] * (rr + 1), [zero] * (rr + 1), zero
    with (ctx if ctx is not None else contextlib.nullcontext()):
        for v, state in zip(x, chain.states):
            n = state[-1]
            if state[0] == "S":
                d[n - 1] += v * num(info.service[2][state[1]])
                p[n - 1] += v
            else:
                p[n] += v
                idle += v
                if places(info.stages, state[1], n, rr) == rr + 1 - n:
                    once[n] += v
    return d, p, idle, once


def unnormalised_departures(model, digits: int) -> tuple[list, list]:
    """(pi~_0..pi~_r, y): the unbounded room's unnormalised departure law by the recursion (BF2) (pi~_0 = 1), from
    the first-service law y of the blocks in the unbounded room (:class:`~qderive.numeric.engines.blocks.
    VectorPassage`, exact over its levels) and the arrivals during a service; as mpf at ``digits`` + 10."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.blocks import VectorPassage
    from ..numeric.sequences import arrival_counts
    from ..symbolic.blocks import blocks_of, passage

    rr = model.capacity
    ctx = mp_context(digits + 10)
    with ctx:
        y = list(passage(blocks_of(model), VectorPassage(model, ctx, rr + 3)))
        av = list(arrival_counts(model.service, model.batch, model.rate, rr + 3, ctx).a)
        abar = [1 - mpmath.fsum(av[: m + 1]) for m in range(rr + 2)]
        # P(Y - 1 + A = m) = sum_{l=1}^{m+1} y_l a_{m+1-l}; cbar_j = 1 - sum_{m <= j} of it
        cb = [1 - mpmath.fsum(y[l] * av[m + 1 - l] for m in range(jj + 1) for l in range(1, m + 2))
              for jj in range(rr)]
        q = [mpmath.mpf(1)]
        for jj in range(rr):
            q.append((cb[jj] + mpmath.fsum(q[ii] * abar[jj - ii + 1] for ii in range(1, jj + 1))) / av[0])
    return q, y


def _finite_passage(model, digits):
    """(Y^r law over 0..r+1, times with r - k places, times with r + 1 - k places) of the finite room's passage."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.blocks_finite import FinitePassage, plan_of
    from ..numeric.kernels.idle_passage import run_passage
    from ..symbolic.blocks.machine import machine

    ctx = mp_context(digits + 10)
    with ctx:
        stages = machine(model)
        op = FinitePassage(model, ctx, stages, model.capacity)
        y = list(run_passage(op, plan_of(stages, model.service)[0]))
        return y, list(op.times), list(op.at_once)


def _unbounded_law(model, digits):
    """p~_0..p~_{r-1}: the unbounded room's law of the number waiting per unit of idle time, by renewal reward
    (BF4): (sum_{i<=j} s~_i u_{j-i} + T_j) / E[I], s~_i = pi~_{i+1} + y_{i+1} the number waiting at a service start
    (pi~ of (BF2), pi~_0 = 1), u_m the expected time during a service with m arrivals so far, T_j the unbounded
    passage's time at level j and E[I] its mean (room-independent by (BF1))."""
    from ..numeric.backend import mp_context
    from ..numeric.engines.blocks import VectorPassage
    from ..numeric.sequences import arrival_counts
    from ..symbolic.blocks import blocks_of, passage

    rr = model.capacity
    q, y = unnormalised_departures(model, digits)
    _, times, once = _finite_passage(model, digits)
    ctx = mp_context(digits + 10)
    with ctx:
        op = VectorPassage(model, ctx, rr + 3)
        passage(blocks_of(model), op)
        u = list(arrival_counts(model.service, model.batch, model.rate, rr + 3, ctx).u)
        mean_idle = mpmath.fsum(times) + mpmath.fsum(once)
        s = [q[ii + 1] + y[ii + 1] for ii in range(rr)]
        return [(mpmath.fsum(s[ii] * u[jj - ii] for ii in range(jj + 1)) + op.times[jj]) / mean_idle
                for jj in range(rr)]


# -- checks ---------------------------------------------------------------------------------------------------------

def _check_bf1(digits):
    """(BF1): the finite passage's Y^r (room r) vs the unbounded passage's Y: equal below r, P(Y^r >= r) = P(Y >= r)
    (the mass at and above the cap), and eps_r = P(Y^r = r) - P(Y = r) >= 0."""
    worst = math.inf
    for make in _points().values():
        m = make()
        rr = m.capacity
        _, y = unnormalised_departures(m, digits)
        y_r = _finite_passage(m, digits)[0]
        with mpmath.workdps(digits + 10):
            pairs = [(y_r[jj], y[jj]) for jj in range(1, rr)]
            pairs.append((mpmath.fsum(y_r[rr:]), 1 - mpmath.fsum(y[:rr])))
            worst = min(worst, *(agreement_digits(x, w) for x, w in pairs))
            if y_r[rr] - y[rr] < -mpmath.mpf(10) ** (-digits):
                return False, None, "eps_r < 0"
    return worst >= digits - 2, worst, "Y^r of the finite passage vs Y of the unbounded one, 3 composed variants"


def _check_models():
    """The 3 composed variants of the checks and the overloaded point (rho_bar = 2)."""
    return [make() for make in _points().values()] + [_overload()]


def _departure_data(m, digits, ctx):
    """(r, pi~, Y, Y^r, d) of one checked model: the unbounded room's unnormalised departures and first-service law,
    the finite passage's first-service law and the block chain's departure law in ``ctx``."""
    q, y = unnormalised_departures(m, digits)
    return m.capacity, q, y, _finite_passage(m, digits)[0], departure_law(m, ctx)[0]


def _check_bf3(digits):
    """(BF3): the block chain's departure law (digits + 10) vs the recursion (BF2) from the unbounded room's Y with
    the top correction eps_r, at 3 composed variants and one in overload (rho_bar = 2)."""
    from ..numeric.backend import mp_context

    worst, corrections = math.inf, []
    for m in _check_models():
        rr, q, y, y_r, d = _departure_data(m, digits, mp_context(digits + 10))
        with mpmath.workdps(digits + 10):
            e = y_r[rr] - y[rr]
            want = q[:rr] + [q[rr] - e]
            total, tsum = mpmath.fsum(want), mpmath.fsum(d)
            worst = min(worst, *(agreement_digits(d[jj] / tsum, want[jj] / total) for jj in range(rr + 1)))
            corrections.append(mpmath.nstr(e, 3))
    return worst >= digits - 3, worst, (f"departure law of the block chain = the truncation with the top correction "
                                        f"(eps_r = {', '.join(corrections)}), rho_bar = 3/4, 1/2, 3/5, 2")


def _check_bf2(digits):
    """(BF2) evaluated on the block chain's departure law d (digits + 10): the cut between j and j + 1,
    a_0 d_{j+1} = d_0 cbar_j + sum_{i=1}^{j} d_i abar_{j-i+1}, with the unbounded room's cbar_j for j <= r - 2 and
    cbar_{r-1} - a_0 eps_r at j = r - 1, at 3 composed variants and rho_bar = 2."""
    from ..numeric.backend import mp_context
    from ..numeric.sequences import arrival_counts

    worst = math.inf
    for m in _check_models():
        ctx = mp_context(digits + 10)
        rr, _, y, y_r, d = _departure_data(m, digits, ctx)
        with ctx:
            av = list(arrival_counts(m.service, m.batch, m.rate, rr + 2, ctx).a)
        with mpmath.workdps(digits + 10):
            abar = [1 - mpmath.fsum(av[: n + 1]) for n in range(rr + 1)]
            for jj in range(rr):
                cb = 1 - mpmath.fsum(y[l] * av[n + 1 - l] for n in range(jj + 1) for l in range(1, n + 2))
                if jj == rr - 1:
                    cb -= av[0] * (y_r[rr] - y[rr])
                right = d[0] * cb + mpmath.fsum(d[ii] * abar[jj - ii + 1] for ii in range(1, jj + 1))
                worst = min(worst, agreement_digits(av[0] * d[jj + 1], right))
    return (worst >= digits - 3, worst,
            "the cuts of the block chain's departure law, 3 composed variants and rho_bar = 2")


def _check_top_fails(digits):
    """Where the plain truncation does not hold at j = r: the thesis's own model (multiple vacations, N = 1) at
    departures only: pi^r_r / pi^r_0 of the block chain differs from pi~_r by eps_r > 0 (it holds with the thesis's
    chain, which also counts vacation ends: Statement 1 above)."""
    from ..numeric.backend import mp_context
    from ..symbolic.batches import Geometric
    from ..symbolic.laws import Erlang, Exponential
    from ..symbolic.models.vacation import FiniteVacationQueue

    m = FiniteVacationQueue.from_load(F(1, 2), Geometric(F(3, 2)), Exponential(F(1, 2)), Erlang(2, 1), 3)
    rr, q, y, y_r, d = _departure_data(m, digits, mp_context(digits + 10))
    with mpmath.workdps(digits + 10):
        e = y_r[rr] - y[rr]
        top = d[rr] / d[0]
        ok = e > mpmath.mpf("0.01") and agreement_digits(top, q[rr] - e) >= digits - 3 and abs(top - q[rr]) > 0.01
    return ok, None, (f"pi^r_r / pi^r_0 = {mpmath.nstr(top, 8)}, pi~_r = {mpmath.nstr(q[rr], 8)}, eps_r = "
                      f"{mpmath.nstr(e, 8)} (multiple vacations, r = 3, block chain at {digits + 10} digits)")


def _check_bf4(digits):
    """(BF4): p^r_j / P^r_I of the block chain (room r) vs the unbounded room's law per unit of idle time, j < r."""
    from ..numeric.backend import mp_context

    worst = math.inf
    for m in [make() for make in _points().values()] + [_overload()]:
        _, p, idle, _ = departure_law(m, mp_context(digits + 10))
        pt_ = _unbounded_law(m, digits)
        with mpmath.workdps(digits + 10):
            worst = min(worst, *(agreement_digits(p[jj] / idle, pt_[jj]) for jj in range(m.capacity)))
    return worst >= digits - 3, worst, "p^r_j / P^r_I (block chain) = p~_j (unbounded room), j < r, 3 variants"


def _loss_terms(m):
    bat, l1, rr = m.batch, m.batch.mean, m.capacity
    return lambda jj: _mpf(F(bat.excess(rr - jj)) / l1)


def _check_bf5(digits):
    """(BF5): the loss by the places of the blocks (the chain's law p^r and at-once times) vs the load balance
    1 - (1 - P^r_I) / rho_bar of the same chain (two different sums)."""
    from ..numeric.backend import mp_context

    worst = math.inf
    for make in _points().values():
        m = make()
        _, p, idle, once = departure_law(m, mp_context(digits + 10))
        lj = _loss_terms(m)
        with mpmath.workdps(digits + 10):
            direct = (mpmath.fsum(p[jj] * lj(jj) for jj in range(m.capacity + 1))
                      - mpmath.fsum(once[kk] * (lj(kk) - lj(kk - 1)) for kk in range(m.capacity)))
            balance = 1 - (1 - idle) / _mpf(m.rho_bar)
            worst = min(worst, agreement_digits(direct, balance))
    return worst >= digits - 3, worst, "(BF5) vs the load balance, 3 composed variants (block chain)"


def _check_bf6(digits):
    """(BF6): P^r_I from the unbounded room's p~ and the finite passage's at-once times per unit of idle time vs the
    block chain's fraction of time not serving."""
    from ..numeric.backend import mp_context

    worst = math.inf
    for m in [make() for make in _points().values()] + [_overload()]:
        rr = m.capacity
        idle = departure_law(m, mp_context(digits + 10))[2]
        pt_ = _unbounded_law(m, digits)
        _, times, once = _finite_passage(m, digits)
        lj = _loss_terms(m)
        with mpmath.workdps(digits + 10):
            mean_idle = mpmath.fsum(times) + mpmath.fsum(once)
            rb = _mpf(m.rho_bar)
            got = 1 / (1 + rb * mpmath.fsum(pt_[jj] * (1 - lj(jj)) for jj in range(rr))
                       + rb * mpmath.fsum(once[kk] / mean_idle * (lj(kk) - lj(kk - 1)) for kk in range(rr)))
            worst = min(worst, agreement_digits(got, idle))
    return worst >= digits - 3, worst, "P^r_I of (BF6) = the block chain's, 3 composed variants"


@functools.lru_cache(maxsize=1)
def whole_counterexample() -> dict:
    """Whole admission with a setup and N = 2, r = 3 (batches of 1 or 3): the departure law's ratios
    pi^r_j / pi^r_0 of the block chain, exactly (rational GTH), under whole and under partial admission; the
    partial ones are the truncation pi~_j (Statement 1 with blocks, j < r), the whole ones are not."""
    from ..symbolic.batches import FinitePMF
    from ..symbolic.laws import Exponential
    from ..symbolic.models.vacation import Admission, FiniteVacationQueue

    out = {}
    for adm in (Admission.WHOLE, Admission.PARTIAL):
        m = FiniteVacationQueue.from_load(F(1, 2), FinitePMF({1: F(1, 2), 3: F(1, 2)}), Exponential(1),
                                          Exponential(F(1, 2)), 3, adm, start_threshold=2, setup=Exponential(1))
        d = departure_law(m)[0]
        out[adm.value] = [x / d[0] for x in d]
    return out


def _whole_fails(digits):
    """Statement 1 does not hold under whole admission: an exact ratio pi^r_j / pi^r_0 with j < r differs from the
    partial one (= pi~_j) by more than 10^-3."""
    ce = whole_counterexample()
    whole, partial = ce["whole"], ce["partial"]
    rr = len(whole) - 1
    differ = [jj for jj in range(rr) if whole[jj] != partial[jj]]
    first = differ[0] if differ else None
    ok = first is not None and abs(float(whole[first] - partial[first])) > 1e-3
    shown = "none" if first is None else (f"pi^r_{first} / pi^r_0 = {whole[first]} (whole) vs {partial[first]} "
                                          f"(partial, = pi~_{first})")
    return ok, None, f"exact ratios below the top that differ: {differ}; {shown}"


def _check_bf3_symbolic(digits):
    """(BF3) from the chain's definition, in symbols: the departure chain on 0..r with a_0..a_r, the first-service
    law y_1..y_r of the unbounded room and P(Y^r = r) = y_r + eps_r (BF1); x P = x solved with x_0 = 1 equals
    pi~_j of the recursion (BF2) for j < r and pi~_r - eps_r at the top, r = 1, 2, 3 (SymPy, exact)."""
    from .framework import exact_identity

    for rr in (1, 2, 3):
        a_ = sp.symbols(f"a0:{rr + 1}", positive=True)
        y_ = (sp.Integer(0),) + sp.symbols(f"y1:{rr + 1}", positive=True)
        e = sp.Symbol("e", positive=True)
        y_r = list(y_[: rr]) + [y_[rr] + e]  # P(Y^r = l), l = 0..r (the rest is at r + 1)
        P = sp.zeros(rr + 1, rr + 1)
        for m in range(rr):  # from 0: the first departure leaves min(Y^r - 1 + A, r)
            P[0, m] = sum(y_r[l] * a_[m + 1 - l] for l in range(1, m + 2))
        P[0, rr] = 1 - sum(P[0, m] for m in range(rr))
        for ii in range(1, rr + 1):
            for m in range(ii - 1, rr):
                P[ii, m] = a_[m - ii + 1]
            P[ii, rr] = 1 - sum(P[ii, m] for m in range(rr))
        xs = sp.symbols(f"x1:{rr + 1}")
        x = sp.Matrix([[1, *xs]])
        eqs = list(x * P - x)
        sol = sp.solve(eqs[1:], xs, dict=True)[0]
        if not exact_identity(eqs[0].subs(sol), 0):
            return False, None, f"the balance at 0 is not redundant at r = {rr}"
        abar_ = [1 - sum(a_[: m + 1]) for m in range(rr + 1)]
        q = [sp.Integer(1)]
        for jj in range(rr):  # (BF2) with the unbounded room's cbar_j = 1 - P(Y - 1 + A <= j)
            cb = 1 - sum(y_[l] * a_[m + 1 - l] for m in range(jj + 1) for l in range(1, m + 2))
            q.append((cb + sum(q[ii] * abar_[jj - ii + 1] for ii in range(1, jj + 1))) / a_[0])
        for jj, xv in enumerate(xs, start=1):
            want = q[jj] - (e if jj == rr else 0)
            if not exact_identity(sol[xv], want):
                return False, None, f"pi^r_{jj} / pi^r_0 differs from (BF3) at r = {rr}"
    return True, math.inf, "pi^r_j / pi^r_0 = pi~_j (j < r), pi~_r - eps_r (j = r), symbolic a_n, y_n, r = 1, 2, 3"


def _check_bf6_symbolic(digits):
    """(BF6) from (BF4), (BF5) and the load balance, in symbols (r = 1, 2, 3): substituting p^r_j = P_I p~_j (j < r),
    p^r_r = P_I theta, theta = 1/P_I - sum p~_j and tau^r_k = P_I tau~_k into rho_bar (1 - pi) = 1 - P_I and solving
    for P_I gives (BF6) (SymPy, exact)."""
    from .framework import exact_identity

    for rr in (1, 2, 3):
        pts = sp.symbols(f"p0:{rr}", positive=True)
        tts = sp.symbols(f"t0:{rr}", positive=True)
        ls = sp.symbols(f"l0:{rr}", positive=True)  # pi_0..pi_{r-1}; pi_r = 1 (every member of a batch beyond r)
        lm1 = sp.Symbol("lm1", positive=True)  # pi_{-1}
        pi_ = lambda jj: 1 if jj == rr else (lm1 if jj == -1 else ls[jj])  # noqa: E731
        P_ = sp.Symbol("P", positive=True)
        th = 1 / P_ - sum(pts)
        law = [P_ * pts[jj] for jj in range(rr)] + [P_ * th]
        lost = sum(law[jj] * pi_(jj) for jj in range(rr + 1)) - sum(P_ * tts[kk] * (pi_(kk) - pi_(kk - 1))
                                                                    for kk in range(rr))
        f = sp.expand(rho_bar * (1 - lost) - (1 - P_))  # linear in P_ (theta carries 1/P_ times P_)
        if sp.degree(f, P_) != 1:
            return False, None, f"r = {rr}: the load balance is not linear in P^r_I"
        sol = -f.subs(P_, 0) / f.coeff(P_, 1)
        want = 1 / (1 + rho_bar * sum(pts[jj] * (1 - pi_(jj)) for jj in range(rr))
                    + rho_bar * sum(tts[kk] * (pi_(kk) - pi_(kk - 1)) for kk in range(rr)))
        if not exact_identity(sol, want):
            return False, None, f"r = {rr}: P^r_I = {sol}"
    return True, math.inf, "(BF6) = the solution of the load balance with (BF4), (BF5), symbolic, r = 1, 2, 3"


_HOOKS = {"(BF1)": _check_bf1, "(BF2)": _check_bf2, "(BF3)": _check_bf3, "(BF4)": _check_bf4, "(BF5)": _check_bf5,
          "(BF6)": _check_bf6}


def finite_block_steps() -> tuple:
    """The steps (BF1)..(BF6) (module docstring), each evaluated by its check."""
    return tuple(Step(label, _TITLES[label], REL[label], _CITE.get(label, ""),
                      check=_HOOKS[label],
                      provenance="docs/theory/blocks.md section 5") for label in REL)


def finite_block_checks() -> tuple:
    """The checks beside the steps: where the truncation fails (the top at departures, whole admission)."""
    return (
        Check(r"Statement 1 with blocks from the departure chain's definition, symbolic $a_n$, $y_n$, "
              r"$\varepsilon_r$, $r = 1, 2, 3$", _check_bf3_symbolic, "(BF3)"),
        Check(r"Corollary 1 with blocks from the load balance, (BF4) and (BF5), symbolic, $r = 1, 2, 3$",
              _check_bf6_symbolic, "(BF6)"),
        Check(r"Statement 1 at departures fails at $j = r$ with vacations: $\tilde\pi_r - \pi^{r}_{r}/\pi^{r}_{0} = "
              r"\varepsilon_r > 0$ (multiple vacations, $r = 3$)", _check_top_fails, "(BF3)"),
        Check("Statement 1 fails under whole admission: exact departure ratios, setup, $N = 2$, $r = 3$",
              _whole_fails, "(BF3)"),
    )
