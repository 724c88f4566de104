"""D-digit tails of a constant service with a density vacation (issue 30 item 2): Gauss-Legendre orders chosen per
interval, the lattice part kept on whole cells across the tails of a search.

:func:`qderive.numeric.engines.vacation_wait._convolved_mp` doubles the order only on the intervals whose two orders
disagree, and keeps the lattice part at the nodes of whole cells [j D, (j + 1) D] between tails. Here

* a 30-digit tail with a lognormal vacation (smooth but not analytic at 0: the graded intervals there need more nodes
  than the cells far from it) against the convolution written in ``test_lattice_vacations`` (Erlang's M/D/1 sum,
  the lognormal's survival function erfc written here, mpmath.quad at 40 digits): shares nothing with the engine;
* the same tail computed first, after a tail at another t (the whole cells' lattice values and the orders then come
  from the memo) and with the memo and the orders cleared: the same value to the working precision;
* the orders that settled differ from interval to interval (the point of the scheme).

Tolerances: 30 digits promise 30 correct digits; the tests ask 1e-29 relative (the reference's own quadrature is at
40 digits).
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath

import qderive as qd
from qderive.numeric.engines import vacation_wait as VW
from test_lattice_vacations import _reference, _rel

LAM, MEAN, SCV = F(1, 2), F(3, 4), F(1)


def _model():
    return qd.VacationQueue(LAM, qd.Constant(1), qd.Deterministic(1), qd.LogNormal(MEAN, SCV))


def _survival():
    """P(V > x) of the lognormal law of mean MEAN and scv SCV, from its definition: sigma^2 = ln(1 + scv),
    mu = ln(mean) - sigma^2 / 2, S(x) = erfc((ln x - mu) / (sigma sqrt 2)) / 2."""
    sigma2 = mpmath.log(1 + mpmath.mpf(SCV.numerator) / SCV.denominator)
    mu = mpmath.log(mpmath.mpf(MEAN.numerator) / MEAN.denominator) - sigma2 / 2
    sigma = mpmath.sqrt(sigma2)

    def S(x):
        return mpmath.mpf(1) if x <= 0 else mpmath.erfc((mpmath.log(x) - mu) / (sigma * mpmath.sqrt(2))) / 2

    return S


def _clear():
    VW._ORDERS.clear()
    VW._CELL_VALUES.clear()


def test_a_30_digit_lognormal_tail_against_the_independent_convolution():
    _clear()
    t = F(7, 2)
    got, _ = VW._convolved_mp(_model(), F(1), t, 30)
    with mpmath.workdps(40):
        want = _reference(LAM, t, _survival(), mpmath.mpf(MEAN.numerator) / MEAN.denominator, None, "multiple",
                          dps=40)
    assert _rel(got, want) < mpmath.mpf(10) ** -29


def test_the_kept_cells_and_orders_give_the_same_tail():
    """A tail alone, after a tail at a nearby t (three whole cells shared, their lattice values and the orders from
    the memo), and again: equal to 1e-45 relative (the working digits are about 45: rounding only); and the
    intervals settle with different orders (here the graded pieces towards the lognormal's non-analytic point 0,
    each as long as its distance to it, with 8-16 nodes; the whole cells of length 1, as close as 0.5 to it, 32)."""
    model, t, near = _model(), F(7, 2), F(7, 2) + F(1, 10**9)
    _clear()
    alone, w = VW._convolved_mp(model, F(1), t, 30)
    orders = dict(VW._ORDERS[(model, 30, False)])
    _clear()
    VW._convolved_mp(model, F(1), near, 30)
    assert VW._CELL_VALUES
    after, _ = VW._convolved_mp(model, F(1), t, 30)
    again, _ = VW._convolved_mp(model, F(1), t, 30)
    with mpmath.workdps(w):
        assert _rel(after, alone) < mpmath.mpf(10) ** -45 and _rel(again, alone) < mpmath.mpf(10) ** -45
    assert any(name[0] == "place" for name in orders) and any(name[0] != "place" for name in orders)
    assert len(set(orders.values())) > 1, orders  # the orders differ between intervals


def test_the_rough_guide_where_the_float64_lattice_sum_cancels():
    """M/D/1 at load 1/2 (D = 1/100) with lognormal vacations (mean 0.06, scv 2): at t = 0.7 (70 cells) the float64
    lattice sum cancels (its bound exceeds 1e-3 of the tail), so the rough tail that guides a quantile search comes
    from the quadrature at a few digits more than the sum loses: within 1e-10 of the 20-digit tail (it promises
    about 13 digits, unchecked; a guide only places the first bracket of width 2e-9, which the exact tails check)."""
    model = qd.VacationQueue(F(50), qd.Constant(1), qd.Deterministic(F(1, 100)), qd.LogNormal(F(6, 100), F(2)))
    t = F(7, 10)
    assert VW._convolved_float64(model, F(1, 100), t) is None  # float64 escalates here
    rough = VW.response_laws(model)["wait"].rough_tails(t)
    exact, _ = VW._convolved_mp(model, F(1, 100), t, 20)
    assert rough is not None and _rel(rough, exact) < 1e-10
