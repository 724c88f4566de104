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
* (finite room) M/M/1/r under the N-policy by level crossing, exactly in rationals.

The infinite room is cut where the mass piled at the cut is below 10^-(digits + 5). :func:`checks` returns
them for the derivations of ``vacation-infinite`` and :func:`finite_checks` for ``vacation-finite``.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath

from .framework import Check, agreement_digits

__all__ = ["checks", "finite_checks"]


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


def checks() -> tuple:
    """The checks of the infinite room (the derivation of ``vacation-infinite`` runs them)."""
    return (
        Check("blocks: chain vs Yadin-Naor, M/M/1 N-policy (N = 3) mean number",
              _compare(_n_policy, "mean_number_in_system", lambda: F(1) + F(3 - 1, 2), "rho/(1-rho) + (N-1)/2")),
        Check("blocks: chain vs Takagi, M/G/1 N-policy with setup (N = 2) mean wait",
              _compare(_setup, "mean_wait", _setup_wait, "Takagi's W")),
        Check("blocks: chain vs Fuhrmann-Cooper, close-down + multiple vacations mean number",
              _compare(_close_down, "mean_number_in_system", _close_down_number, "the decomposition")),
    )


def finite_checks() -> tuple:
    """The checks of the finite room (the derivation of ``vacation-finite`` runs them)."""
    return (Check("blocks: chain vs level crossing, M/M/1/r N-policy (N = 3, r = 5) mean number",
                  _compare(_mm1r, "mean_number_in_system", _mm1r_number, "the exact law")),)
