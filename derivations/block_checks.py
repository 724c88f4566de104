"""``qderive verify`` checks of the composed vacation variants: the block chain against classical closed forms.

The block chain (:mod:`qderive.numeric.oracles.blocks`) is the CTMC built from the idle passage's stages, from
the definition of the blocks (close-down, vacations, start threshold N, setup), not from a PGF. These checks
compare it, at the working digits, with results of the literature written here (none shares code with the
chain):

* the M/M/1 N-policy, L = rho / (1 - rho) + (N - 1) / 2 (Yadin and Naor 1963);
* M/G/1 with the N-policy and a setup time, W = lambda b2 / (2 (1 - rho)) + [N (N - 1) / (2 lambda) + N s1 +
  lambda s2 / 2] / (N + lambda s1) (Takagi 1991, vol. 1, ch. 2);
* M/G/1 with a close-down and multiple vacations by Fuhrmann and Cooper's (1985) decomposition,
  L = L_{M/G/1} + E[Y (Y - 1)] / (2 E[Y]), Y the number present at the first service of a busy period;
* (finite room) M/M/1/r under the N-policy by level crossing, exactly in rationals;
* the tails of the wait and the sojourn with a close-down, multiple vacations and a setup (start threshold 1,
  smooth laws): the engine's transform inversion against the tagged customer's absorption time in the chain
  built from the stages (no transform), at 30 digits;
* the wait under the N-policy (its transform (WN), the tagged batch's serving and idle parts; the check of the step
  (WN) of :mod:`qderive.derivations.blocks`, :func:`n_policy_wait`): Yadin and Naor's
  E[W] = lambda b2 / (2 (1 - rho)) + (N - 1) / (2 lambda) (1963; Takagi 1991, vol. 1, sec. 2.5) exactly, and E[W^2]
  with multiple vacations against the tagged customer's chain that counts the later arrivals.

The infinite room is cut where the mass piled at the cut is below 10^-(digits + 5). :func:`checks` returns
them for the derivations of ``vacation-infinite`` and :func:`finite_checks` for ``vacation-finite``.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath

from .framework import Check, agreement_digits

__all__ = ["checks", "finite_checks", "n_policy_wait"]


def _compare(model, key, want, what):
    """A check run: the chain's ``key`` of ``model`` against ``want`` (a Fraction), agreement >= digits - 8."""

    def run(digits):
        from ..numeric.oracles.blocks import chain_solution

        sol = chain_solution(model(), digits, tail=F(1, 10 ** (digits + 5)))
        got = sol.measures[key]
        agreed = agreement_digits(got, want())
        need = digits - 8
        cut = "" if not sol.neglected else f", room cut at {sol.levels} (mass {mpmath.nstr(sol.neglected, 2)})"
        return agreed >= need, agreed, f"{key} of the block chain ({sol.states} states{cut}) vs {what}; need {need}"

    return run


def _n_policy():
    from ..symbolic.batches import Constant
    from ..symbolic.laws import Exponential
    from ..symbolic.models.vacation import VacationQueue

    return VacationQueue(F(1, 2), Constant(1), Exponential(1), None, start_threshold=3)


def _setup():
    from ..symbolic.batches import Constant
    from ..symbolic.laws import Erlang
    from ..symbolic.models.vacation import VacationQueue

    return VacationQueue(F(1, 2), Constant(1), Erlang(2, F(1)), None, start_threshold=2, setup=Erlang(3, F(1, 2)))


def _setup_wait():
    m = _setup()
    lam, n = m.rate, m.start_threshold
    b2, s1, s2 = m.service.moment(2), m.setup.moment(1), m.setup.moment(2)
    rho = m.rho_bar
    return lam * b2 / (2 * (1 - rho)) + (F(n * (n - 1)) / (2 * lam) + n * s1 + lam * s2 / 2) / (n + lam * s1)


def _close_down():
    from ..symbolic.batches import Constant
    from ..symbolic.laws import Erlang, Exponential
    from ..symbolic.models.vacation import VacationQueue

    return VacationQueue(F(1, 2), Constant(1), Erlang(2, F(1)), Exponential(F(1)), close_down=Exponential(F(1, 3)))


def _close_down_number():
    """L = rho + lambda^2 b2 / (2 (1 - rho)) + E[Y (Y - 1)] / (2 E[Y]): Y = 1 when a customer arrives during the
    close-down C (probability 1 - c0, c0 = C*(lambda) = 1 / (1 + lambda c1)), else the arrivals of the first
    vacation that has some (v_k / (1 - v0), exponential vacations of mean f1: v0 = 1 / (1 + lambda f1))."""
    m = _close_down()
    lam, rho, b2 = m.rate, m.rho_bar, m.service.moment(2)
    c0 = 1 / (1 + lam * m.close_down.moment(1))
    f1, f2 = m.vacation.moment(1), m.vacation.moment(2)
    v0 = 1 / (1 + lam * f1)
    ey = (1 - c0) + c0 * lam * f1 / (1 - v0)
    eyy = c0 * lam**2 * f2 / (1 - v0)
    return rho + lam**2 * b2 / (2 * (1 - rho)) + eyy / (2 * ey)


def _mm1r():
    from ..symbolic.batches import Constant
    from ..symbolic.laws import Exponential
    from ..symbolic.models.vacation import FiniteVacationQueue

    return FiniteVacationQueue(F(3, 2), Constant(1), Exponential(1), None, 5, start_threshold=3)


def _mm1r_number():
    """M/M/1/r, N-policy: the idle levels 0..N-1 carry equal mass c; across the cut between n and n + 1,
    mu P(busy, n + 1) = lambda (P(busy, n) + c [n < N]) (level crossing); mean number in the system."""
    m = _mm1r()
    lam, mu, n, r = m.rate, 1 / m.service.moment(1), m.start_threshold, m.capacity
    busy = [F(0)] * (r + 2)
    for k in range(r + 1):
        busy[k + 1] = lam * (busy[k] + (1 if k < n else 0)) / mu
    total = n + sum(busy)
    return sum(k * ((1 if k < n else 0) + busy[k]) for k in range(r + 2)) / total


def _tails_model():
    from ..symbolic.batches import FinitePMF
    from ..symbolic.laws import Erlang, Exponential
    from ..symbolic.models.vacation import VacationPolicy, VacationQueue

    return VacationQueue(F(1, 2), FinitePMF({1: F(1, 2), 2: F(1, 2)}), Erlang(2, F(2, 3)), Exponential(F(1, 2)),
                         VacationPolicy.MULTIPLE, 1, Erlang(2, F(1, 2)), Exponential(F(1, 2)))


#: the times of the tail check: P(W > t) at 1/2 and 2, P(W + B > t) at 1
_WAIT_TIMES, _SOJOURN_TIMES = (F(1, 2), F(2)), (F(1),)


def _tails(digits):
    """P(W = 0), P(W > t) and P(W + B > t) of :func:`_tails_model` from the engine's inversion of
    W(s) = W_b(s) J(s) V_r(s) (:func:`qderive.numeric.engines.blocks.response_laws`) against the tagged customer's
    absorption time (:func:`qderive.numeric.oracles.blocks.tagged_wait`), at min(digits, 30) digits; agreement
    >= digits - 3 (the truncation of the chain leaves < 10^-digits, the inversion's two confirmed parameter sets
    agree to the digits asked)."""
    from ..numeric.engines.blocks import response_laws
    from ..numeric.oracles.blocks import tagged_wait
    from ..numeric.response import tails

    d = min(digits, 30)
    model = _tails_model()
    oracle = tagged_wait(model, times=_WAIT_TIMES + _SOJOURN_TIMES, digits=d)
    laws = response_laws(model)
    wait = tails(laws["wait"], [F(0), *_WAIT_TIMES], d)[0]
    sojourn = tails(laws["sojourn"], list(_SOJOURN_TIMES), d)[0]
    n = len(_WAIT_TIMES)
    with mpmath.workdps(d + 10):
        pairs = [(1 - wait[0], oracle.p_zero)] + list(zip(wait[1:], oracle.tail[:n])) \
            + list(zip(sojourn, oracle.sojourn_tail[n:]))
        agreed = min(agreement_digits(got, want) for got, want in pairs)
    need = d - 3
    return agreed >= need, agreed, (f"P(W = 0), P(W > t) at t = 1/2, 2 and P(W + B > t) at t = 1: the inversion vs "
                                    f"the tagged customer's chain ({oracle.levels} places) at {d} digits; need {need}")


def n_policy_wait(digits):
    """E[W] of (WN) for M/G/1 (Erlang-3 service, N = 3) against Yadin and Naor's exact value, and E[W], E[W^2] of
    M/M/1 with multiple exponential vacations and N = 3 (rate 1/4; docs: simulated E[W^2] = 45.4 +- 0.3) against the
    tagged customer's chain, at min(digits, 30) digits; agreement >= digits - 5 (the chain's truncation leaves
    < 10^-digits)."""
    from ..numeric.engines.blocks import response_laws
    from ..numeric.oracles.blocks import tagged_wait
    from ..symbolic.batches import Constant
    from ..symbolic.laws import Erlang, Exponential
    from ..symbolic.models.vacation import VacationPolicy, VacationQueue

    d = min(digits, 30)
    lam, service, n = F(2, 5), Erlang(3, F(3, 2)), 3
    mg1 = VacationQueue(lam, Constant(1), service, None, VacationPolicy.MULTIPLE, n)
    rho = lam * service.moment(1)
    want = lam * service.moment(2) / (2 * (1 - rho)) + F(n - 1) / (2 * lam)
    agreed = [agreement_digits(response_laws(mg1)["wait"].moment_values(1, d)[0], want)]
    vac = VacationQueue(F(1, 4), Constant(1), Exponential(F(1)), Exponential(F(1)), VacationPolicy.MULTIPLE, 3)
    got = response_laws(vac)["wait"].moment_values(2, d)
    chain = tagged_wait(vac, digits=d, moments=2).moments
    agreed += [agreement_digits(g, w) for g, w in zip(got, chain)]
    need = d - 5
    return min(agreed) >= need, min(agreed), (f"Yadin-Naor's E[W] (N = {n}) and E[W], E[W^2] = "
                                              f"{mpmath.nstr(chain[1], 8)} with vacations vs the tagged chain; "
                                              f"need {need}")


def checks() -> tuple:
    """The checks of the infinite room (the derivation of ``vacation-infinite`` runs them)."""
    return (
        Check("blocks: chain vs Yadin and Naor, $M/M/1$ under the $N$-policy ($N = 3$), mean number",
              _compare(_n_policy, "mean_number_in_system", lambda: F(1) + F(3 - 1, 2), "rho/(1-rho) + (N-1)/2")),
        Check("blocks: chain vs Takagi, $M/G/1$ under the $N$-policy with a setup time ($N = 2$), mean wait",
              _compare(_setup, "mean_wait", _setup_wait, "Takagi's W")),
        Check("blocks: chain vs Fuhrmann and Cooper, a close-down time and multiple vacations, mean number",
              _compare(_close_down, "mean_number_in_system", _close_down_number, "the decomposition")),
        Check("blocks: wait and sojourn tails (close-down, multiple vacations, setup) vs the tagged customer's chain",
              _tails),
    )


def finite_checks() -> tuple:
    """The checks of the finite room (the derivation of ``vacation-finite`` runs them)."""
    return (Check("blocks: chain vs level crossing, $M/M/1/r$ under the $N$-policy ($N = 3$, $r = 5$), mean number",
                  _compare(_mm1r, "mean_number_in_system", _mm1r_number, "the exact law")),)
