"""Exact infinite-room tails for a service on its own lattice (F12, :mod:`qderive.numeric.kernels.lattice_benes`):
against Benes' series summed exactly with Fractions (no vacation) and against the generalised Prabhu lattice sum
(an exponential vacation), the old certified bracket containing the new value, the finite room at a large r, and
a seeded simulation (issue 28 item 1, branch fi28)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import qderive as qd
from qderive.numeric.engines import vacation_wait as vw
from qderive.numeric.kernels.lattice_benes import irwin_hall

# two atoms on the lattice g = 0.01 (1 and 3 cells, weights 1/2), mean 0.02: coarse enough for the Prabhu sum
TWO = qd.Empirical((F(1, 100), F(3, 100)))


def _irwin_hall_cdf(n, x):
    """P(U_1 + ... + U_n <= x) exactly (Fractions): sum_{i <= x} (-1)^i C(n, i) (x - i)^n / n! (n = 0: the atom
    at 0)."""
    if n == 0:
        return F(int(x >= 0))
    if x <= 0:
        return F(0)
    if x >= n:
        return F(1)
    return sum((-1) ** i * math.comb(n, i) * (x - i) ** n for i in range(int(x) + 1)) / math.factorial(n)


def _exact_no_vacation(batch_p, atoms, rho, tau, n_max=60):
    """P(W > tau g) without vacations by Benes' series with Fractions, a different algorithm from the kernel's (no
    FFT, no Bernstein forms, the Irwin-Hall cdf by its alternating sum, exact): P(W > t) = sum_n (1 - rho) rho^n
    P(L_n + I_n > tau), L_n = J + G_1 + .. + G_n on the lattice, P(G = m) = P(S > m) / E S, S the batch work
    (geometric batch P(X = x) = p q^{x-1}), J the own batch ahead (P(K = k) = p q^k). The terms n > n_max count as
    rho^{n_max+1} times [1 - tau^n / n!, 1] (P(I_n <= tau) <= tau^n / n!): returned as (value, that width)."""
    p = F(batch_p)
    q = 1 - p
    top = int(tau) + 1  # the lattice values that matter: 0..top
    b = [F(0)] * (top + 1)
    for m, w in atoms:
        if m <= top:
            b[m] += w

    def conv(a, c):
        out = [F(0)] * (top + 1)
        for i, x in enumerate(a):
            if x:
                for j in range(top + 1 - i):
                    out[i + j] += x * c[j]
        return out

    # S and J over 0..top: sums of the powers of b (every value >= 1 cell: the powers x > top vanish there)
    power = [F(1)] + [F(0)] * top
    S, J = [F(0)] * (top + 1), [F(0)] * (top + 1)
    for x in range(top + 2):
        J = [a + p * q ** x * c for a, c in zip(J, power)]
        if x:
            S = [a + p * q ** (x - 1) * c for a, c in zip(S, power)]
        power = conv(power, b)
    mean = sum(m * w for m, w in atoms) / p  # E S / g
    cdf, acc = [], F(0)
    for v in S:
        acc += v
        cdf.append(acc)
    G = [(1 - c) / mean for c in cdf]  # P(S > m) / E S, m = 0..top (exact: S >= 1 below top is all in the window)
    total, ell = F(0), J
    for n in range(n_max + 1):
        term = 1 - sum(ell)  # P(L_n > top) ... plus the cells within reach of tau
        for k, v in enumerate(ell):
            if v:
                term += v * (1 - _irwin_hall_cdf(n, F(tau) - k))
        total += (1 - rho) * rho ** n * term
        ell = conv(ell, G)
    rest = rho ** (n_max + 1)
    return total + rest, rest * F(tau) ** (n_max + 1) / math.factorial(n_max + 1)


def test_irwin_hall_bernstein_against_the_alternating_sum():
    """The Bernstein coefficients of the positive recursion give the Irwin-Hall cdf: the cell masses summed against
    the exact alternating sum (Fractions), n = 1..12, to 1e-14 (rounding of the positive sums)."""
    betas = irwin_hall(12)
    for n in range(1, 13):
        mass = betas[n - 1].sum(axis=1) / n
        cdf = np.cumsum(mass)
        for c in range(n):
            assert abs(cdf[c] - float(_irwin_hall_cdf(n, F(c + 1)))) <= 1e-14


@pytest.mark.parametrize("t", [F(47, 1000), F(5, 100), F(123, 1000)])
def test_benes_against_exact_fractions(t):
    """No vacation, geometric batches of mean 2, load 3/5: the kernel's tail within its certified bound of the exact
    Fraction sum (whose own truncation is below 1e-20), and the bound below 1e-11 of the tail."""
    model = qd.VacationQueue.from_load(F(3, 5), qd.Geometric(2), TWO, None)
    exact, _ = vw.benes_values(vw.benes_setup(model), "wait")
    v, e, _ = exact([t])[t]
    ref, width = _exact_no_vacation(F(1, 2), [(1, F(1, 2)), (3, F(1, 2))], F(3, 5), t / F(1, 100))
    assert width < F(1, 10**20)
    assert abs(v - float(ref)) <= e + 1e-16, (v, float(ref), e)
    assert e <= 1e-11 * v


@pytest.mark.parametrize("t", [F(47, 1000), F(2, 10)])
def test_benes_against_the_prabhu_lattice_sum_with_vacations(t):
    """An exponential vacation (multiple): the series (F12) against the exact generalised Prabhu sum (L3)-(L4) of the
    coarse lattice route, a different algorithm (alternating sums with their own rounding bound, float64 accepted
    within 1e-10 of the tail): agreement within the series' bound plus that 1e-10."""
    model = qd.VacationQueue.from_load(F(3, 5), qd.Geometric(2), TWO, qd.Exponential(F(1, 20)))
    exact, _ = vw.benes_values(vw.benes_setup(model), "wait")
    v, e, _ = exact([t])[t]
    laws = vw.response_laws(model)
    ref = laws["wait"].tails([t], 30)[0][0]  # the Prabhu sum at 30 digits
    assert abs(v - float(ref)) <= e + 1e-14 * float(ref), (v, float(ref), e)
    soj = laws["sojourn"].tails([t], 30)[0][0]
    ex_s, _ = vw.benes_values(vw.benes_setup(model), "sojourn")
    vs, es, _ = ex_s([t])[t]
    assert abs(vs - float(soj)) <= es + 1e-14 * float(soj), (vs, float(soj), es)


def _sample(decimals, n=2000):
    x = np.random.default_rng(1).lognormal(np.log(0.01), 0.8, n)
    return qd.Empirical(tuple(F(f"{v:.{decimals}f}") for v in x))


def test_old_bracket_contains_the_exact_value():
    """The brief's sample recorded to 0.1 ms: the certified bracket of the rounded services (the old route, its
    lattice of 8192 levels) contains the exact value, which the CLI route now gives with a bound below 1e-9."""
    model = qd.VacationQueue.from_load(F(11, 20), qd.Geometric(4), _sample(4), qd.Exponential(F(6, 100)))
    t = F(1, 2)
    setup, _ = vw.bounds_setup(model)
    lo, hi, _ = vw._bracket_at(model, setup, "wait", [t], 8192, vw.bracket_span(model, t))
    run, bracket, rough = vw.bound_tails(model, setup, "wait")
    value = run([t], None)[0][0]
    a, b, levels = bracket(t)
    assert lo[0] <= a <= value <= b <= hi[0]
    assert b - a <= 1e-9 * value
    assert "Benes" in bracket.how(levels)
    assert abs(rough(t) - value) <= 1e-4 * value  # the coarse guide of a quantile search (second order in its step)


def test_the_finite_room_at_a_large_capacity_equals_the_infinite_room():
    """The brief's check: the finite room's exact sums (F10) at r = 400, where the loss is 1.7e-21 (measured), give
    the infinite room's exact tail (F12) within both certified bounds plus the loss (two different algorithms: the
    embedded chain and the services ahead against Benes' series)."""
    from qderive.numeric.engines.vacation_finite_wait import response_laws as finite_laws

    service, t = _sample(4), F(1, 2)
    infinite = qd.VacationQueue.from_load(F(11, 20), qd.Geometric(4), service, qd.Exponential(F(6, 100)))
    exact, _ = vw.benes_values(vw.benes_setup(infinite), "wait")
    v, e, _ = exact([t])[t]
    finite = qd.FiniteVacationQueue.from_load(F(11, 20), qd.Geometric(4), service, qd.Exponential(F(6, 100)), 400)
    law = finite_laws(finite)["wait"]
    w = law.tails([t], None)[0][0]
    lo, hi, _ = law.bracket(t)
    assert abs(w - v) <= e + (hi - lo) + 1e-15, (v, w, e, hi - lo)


def test_a_simulation_interval_contains_the_exact_tails():
    """A seeded simulation (40 000 customers x 8 replications, 99 % interval) of the coarse two-atom service with
    an exponential vacation, where the tails are large enough for a cheap interval, contains the exact series."""
    from qderive.numeric.simulation.vacation import simulate

    model = qd.VacationQueue.from_load(F(3, 5), qd.Geometric(2), TWO, qd.Exponential(F(1, 20)))
    exact, _ = vw.benes_values(vw.benes_setup(model), "wait")
    ts = ["1/20", "3/20"]
    sim = simulate(model, 40_000, 8, seed=11, quiet=True, wait_tail=ts)
    for t in ts:
        v, e, _ = exact([F(t)])[F(t)]
        a, b = sim["wait_tail"][t].interval(0.99)
        assert a <= v <= b, (t, v, a, b)


@pytest.mark.parametrize("batch,vacation,policy", [
    (qd.FinitePMF((F(1, 2), F(1, 4), F(1, 4))), qd.Exponential(F(1, 20)), "multiple"),  # powers streamed
    (qd.Geometric(2), qd.HyperExponential((F(1, 3), F(2, 3)), (F(1, 100), F(1, 10))), "multiple"),
    (qd.Geometric(2), qd.Exponential(F(1, 20)), "single"),  # an atom a_0 > 0 of the residual vacation
])
def test_other_batches_vacations_and_policies_against_the_prabhu_sum(batch, vacation, policy):
    """A batch law of finite support (b's powers streamed, the ladder law from the window's complement), a
    hyperexponential vacation (two pieces) and single vacations (an atom of R at 0): the series (F12) against the
    generalised Prabhu sum at 30 digits, within the series' certified bound."""
    model = qd.VacationQueue.from_load(F(3, 5), batch, TWO, vacation, vacation_policy=policy)
    exact, _ = vw.benes_values(vw.benes_setup(model), "wait")
    laws = vw.response_laws(model)
    for t in (F(47, 1000), F(15, 100)):
        v, e, _ = exact([t])[t]
        ref = float(laws["wait"].tails([t], 30)[0][0])
        assert abs(v - ref) <= e + 1e-14 * ref, (t, v, ref, e)
        assert e <= 1e-10 * v


def test_digits_within_the_certified_bound_and_refused_beyond():
    """--digits D: answered where the series' certified bound has D digits (8: the midpoint, within the bound of the
    float64 value), refused naming --digits and the digits reached where it has not (14)."""
    from qderive.symbolic.errors import ParameterError

    model = qd.VacationQueue.from_load(F(11, 20), qd.Geometric(4), _sample(4), qd.Exponential(F(6, 100)))
    setup, _ = vw.bounds_setup(model)
    run, bracket, _ = vw.bound_tails(model, setup, "wait")
    t = F(1, 2)
    value = run([t], None)[0][0]
    got = run([t], 8)[0][0]
    lo, hi, _ = bracket(t)
    assert lo <= float(got) <= hi and abs(float(got) - value) <= 1e-8 * value
    with pytest.raises(ParameterError, match="--digits 14.*certified to 1[01]"):
        run([t], 14)
