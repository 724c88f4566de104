"""Wait tails with a service law on a lattice (exact, the generalised Prabhu sum) and off a lattice (certified
bounds): against an independent Pollaczek-Khinchine/Irwin-Hall series at 80 digits, the bounds' containment and
shrinking, and a seeded simulation (issue 28 item 1)."""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

import qderive as qd
from qderive.numeric.engines.vacation_wait import response_laws
from qderive.numeric.response import tails
from qderive.numeric.simulation.vacation import simulate
from qderive.symbolic.errors import ParameterError

# three atoms on the lattice h = 0.01 (weights 1/4, 1/2, 1/4), mean 0.02
THREE = qd.Empirical((F(1, 100), F(2, 100), F(2, 100), F(3, 100)))


def _pk_reference(batch_pmf, service, lam, t, h, dps=60, n_max=110):
    """P(V + J > t) without vacations, by a different algorithm than the lattice sum: the Pollaczek-Khinchine
    (Benes) series V = H_1 + ... + H_N, P(N = n) = (1 - rho) rho^n, with ladder heights H = h (G + U) (U uniform,
    P(G = k) = P(S > k h) / E(S / h), S the batch work: exact for S on the lattice h), so that
    P(V <= y) = (1 - rho) sum_n rho^n sum_k P(G_1 + .. + G_n = k) P(IH_n <= y / h - k) with the Irwin-Hall cdf
    P(IH_n <= z) = sum_{i <= z} (-1)^i C(n, i) (z - i)^n / n!; J = the own batch ahead (P(K = k) = P(X > k) / l_1),
    independent. ``batch_pmf``, ``service``: {size: prob}, {multiple of h: prob} (Fractions); all in mpmath."""
    with mpmath.workdps(dps):
        k_max = int(F(t) / F(h)) + 2  # S, G and J matter up to t / h (every service is >= h)
        ES = sum(F(x) * p for x, p in batch_pmf.items()) * sum(m * w for m, w in service.items())  # E S / h, exact
        lam, t, h = (mpmath.mpf(x.numerator) / x.denominator for x in (F(lam), F(t), F(h)))
        ES = mpmath.mpf(ES.numerator) / ES.denominator

        def conv(a, b, n):
            out = [mpmath.mpf(0)] * (n + 1)
            for i, x in enumerate(a[: n + 1]):
                if x:
                    for j, y in enumerate(b[: n + 1 - i]):
                        out[i + j] += x * y
            return out

        b = [mpmath.mpf(0)] * (k_max + 1)
        for m, w in service.items():
            b[m] = mpmath.mpf(w.numerator) / w.denominator
        # S = sum over the batch of the services: sum_x P(X = x) b^{*x}
        S = [mpmath.mpf(0)] * (k_max + 1)
        power = [mpmath.mpf(1)] + [mpmath.mpf(0)] * k_max
        l1 = sum(F(x) * p for x, p in batch_pmf.items())
        ahead = [mpmath.mpf(0)] * (k_max + 1)
        tail_x = F(1)
        for x in range(0, min(max(batch_pmf), k_max) + 1):
            px = batch_pmf.get(x, F(0))
            if x:
                power = conv(power, b, k_max)
                S = [s + mpmath.mpf(px.numerator) / px.denominator * p for s, p in zip(S, power)]
            tail_x -= px  # P(X > x)
            if tail_x:  # the own batch ahead: K = x with P(X > x) / l_1
                w = tail_x / l1
                ahead = [a + mpmath.mpf(w.numerator) / w.denominator * p for a, p in zip(ahead, power)]
        rho = lam * ES * h
        cdf_S = mpmath.mpf(0)
        g = []
        for k in range(k_max + 1):
            cdf_S += S[k]
            g.append((1 - cdf_S) / ES)
        z_top = int(t / h) + 1

        known = {}

        def ih_cdf(n, z):  # z = t / h - an integer: about t / h distinct points per n, kept
            key = (n, round(float(z), 6))
            if key not in known:
                known[key] = _ih(n, z)
            return known[key]

        def _ih(n, z):
            if z <= 0:
                return mpmath.mpf(0)
            if z >= n:
                return mpmath.mpf(1)
            return sum((-1) ** i * mpmath.binomial(n, i) * (z - i) ** n for i in range(int(mpmath.floor(z)) + 1)) \
                / mpmath.factorial(n)

        powers = [[mpmath.mpf(1)] + [mpmath.mpf(0)] * z_top]  # the pmf of G_1 + ... + G_n
        for n in range(1, n_max + 1):
            powers.append(conv(powers[-1], g, z_top))

        def cdf_V(y):  # P(V <= y), y >= 0
            total = mpmath.mpf(1)  # n = 0
            for n in range(1, n_max + 1):
                inner = sum(powers[n][k] * ih_cdf(n, y / h - k) for k in range(z_top + 1) if k < y / h)
                total += rho**n * inner
            return (1 - rho) * total

        out = mpmath.mpf(0)
        for j, a in enumerate(ahead):
            if a and j * h <= t:
                out += a * cdf_V(t - j * h)
        return 1 - out


@pytest.mark.parametrize("batch, pmf", [(qd.Constant(2), {2: F(1)}),
                                        (qd.Geometric(2), {x: F(1, 2) ** x for x in range(1, 130)})])
def test_three_atom_lattice_service_against_the_pk_irwin_hall_series(batch, pmf):
    # load 0.6, no vacation: the exact lattice sum (L1)-(L3) with b(z) = z (1/4 + z / 2 + z^2 / 4) composed into the
    # batch law, against the independent series at 60 digits (truncated at n = 110 ladder heights: rho^110 ~ 4e-25);
    # 20 digits asked: agreement to 1e-18 relative
    model = qd.VacationQueue.from_load(F(3, 5), batch, THREE, None)
    for t in ("0.105", "0.2"):
        want = _pk_reference(pmf, {1: F(1, 4), 2: F(1, 2), 3: F(1, 4)}, model.rate, F(t), F(1, 100))
        got = model.evaluate(20, wait_tail=[t]).response["wait_tail"][t]
        with mpmath.workdps(40):
            assert abs(got - want) <= mpmath.mpf(10) ** -18 * want, (t, got, want)


def test_lattice_sojourn_is_the_mixture_of_shifted_waits():
    # the sojourn's start row P_K(b(z)) b(z) against sum_m b_m P(W > t - m h) from the wait's own tails
    model = qd.VacationQueue.from_load(F(3, 5), qd.Geometric(2), THREE, qd.Exponential(F(1, 20)))
    t = F(23, 100) + F(1, 300)
    r = model.evaluate(20, sojourn_tail=[str(t)],
                       wait_tail=[str(t - F(m, 100)) for m in (1, 2, 3)]).response
    with mpmath.workdps(40):
        want = sum(mpmath.mpf(w.numerator) / w.denominator * r["wait_tail"][str(t - F(m, 100))]
                   for m, w in ((1, F(1, 4)), (2, F(1, 2)), (3, F(1, 4))))
        assert abs(r["sojourn_tail"][str(t)] - want) <= mpmath.mpf(10) ** -18 * want


def test_bounds_contain_the_exact_lattice_value_and_shrink_as_h_halves():
    # the bounds of kernels.lattice_service (a different algorithm: the Benes series on a lattice, ladder heights
    # rounded) on the three-atom law with an exponential vacation: the service rounding is exact on every h = 0.01 /
    # 2^k, the ladder-height rounding is not; the exact value (lattice sum, 20 digits) must lie inside and the width
    # halve with h (first order: ratio 2 within 10 %)
    from qderive.numeric.engines.vacation_wait import _bracket_at, bounds_setup

    model = qd.VacationQueue.from_load(F(3, 5), qd.Geometric(2), THREE, qd.Exponential(F(1, 20)))
    exact = float(model.evaluate(20, wait_tail=["0.3"]).response["wait_tail"]["0.3"])
    setup, _ = bounds_setup(model)
    for cover in (F(1, 2), F(32, 25)):  # h = cover / N: binary (the atoms off the lattice), or dividing 0.01
        widths = []
        for N in (512, 1024, 2048):
            lo, hi, est = (v[0] for v in _bracket_at(model, setup, "wait", [F(3, 10)], N, cover))
            assert lo <= exact <= hi and lo <= est <= hi, (N, lo, exact, hi)
            widths.append(hi - lo)
        assert 1.8 < widths[0] / widths[1] < 2.2 and 1.8 < widths[1] / widths[2] < 2.2, widths
    # on a lattice dividing the atoms only the ladder heights are rounded: the midpoint is second order in h and
    # the Richardson estimate far inside (measured 2.4e-9 relative at N = 2048, with a bracket 3e-2 wide)
    assert abs(est - exact) < 1e-7 * exact


def _sample_law():
    import numpy as np

    values = np.random.default_rng(1).lognormal(np.log(0.01), 0.8, 400)
    return qd.Empirical(tuple(F(float(v)).limit_denominator(10**12) for v in values))


@pytest.mark.parametrize("service", [qd.Uniform(F(5, 1000), F(2, 100)), _sample_law()], ids=["uniform", "empirical"])
def test_bounds_overlap_a_seeded_simulation(service):
    # uniform service and a sample off any coarse lattice (values to 1e-12): the certified bracket must overlap the
    # 99.9 % interval of a seeded simulation (40 000 customers x 8 runs; a 0.1 % chance to miss)
    model = qd.VacationQueue.from_load(F(11, 20), qd.Geometric(4), service, qd.Exponential(F(6, 100)))
    law = response_laws(model)["wait"]
    values, _, _, notes = tails(law, [F(1, 10)], None)
    lo, hi, _ = law.bracket(F(1, 10))
    assert lo <= values[0] <= hi and "between" in notes[0]
    sim = simulate(model, 40_000, 8, seed=7, quiet=True, wait_tail=(0.1,))
    s_lo, s_hi = sim["wait_tail"][0.1].interval(0.999)
    assert s_lo <= hi and lo <= s_hi, (lo, hi, s_lo, s_hi)


def test_digits_refused_when_the_bracket_is_too_wide_and_answered_when_it_is_not():
    model = qd.VacationQueue.from_load(F(11, 20), qd.Geometric(4), qd.Uniform(F(5, 1000), F(2, 100)),
                                       qd.Exponential(F(6, 100)))
    with pytest.raises(ParameterError, match="--digits 6.*lattice-levels"):
        model.evaluate(6, wait_tail=["0.5"])
    got = model.evaluate(1, wait_tail=["0.5"]).response["wait_tail"]["0.5"]
    f64 = model.evaluate(wait_tail=["0.5"]).response["wait_tail"]["0.5"]
    assert abs(got - f64) < 0.05 * f64  # one digit: the bracket's midpoint, within the bracket of the estimate
