"""Simulated intervals stay inside each measure's range (numeric/simulation/stats.py, issue 30 item 4).

Short runs (a few customers per replication) give jackknife intervals wide enough to cross 0 or 1 when
left uncut; the cut loses no coverage because the true value lies in the range.
"""

import importlib
import math
from fractions import Fraction as Fr

import pytest

from qderive.numeric.simulation.stats import Estimate, measure_bounds
from qderive.symbolic.models.base import MeasureKind, registered_models


def test_estimate_interval_is_cut_to_its_bounds():
    e = Estimate(0.1, 0.2, 3, (0.0, 1.0))
    lo, hi = e.interval()
    assert lo == 0.0 and hi < 1.0
    # t_{3, 0.975} = 3.182446305284263 (Student t quantile, scipy.stats.t.ppf(0.975, 3))
    assert hi == pytest.approx(0.1 + 3.182446305284263 * 0.2, rel=1e-12)
    assert Estimate(0.9, 0.2, 3, (0.0, 1.0)).interval()[1] == 1.0
    assert Estimate(-0.5, 0.1, 3).interval()[0] < -0.5  # unbounded measures are not cut


def test_bounds_follow_the_declared_kinds():
    for name, cls in registered_models().items():
        bounds = measure_bounds(name)
        for f, m in cls.measures.measure_fields():
            if m.kind is MeasureKind.PROBABILITY:
                assert bounds[f.name] == (0.0, 1.0), (name, f.name)
            elif m.kind in (MeasureKind.TIME, MeasureKind.COUNT, MeasureKind.RATE):
                assert bounds[f.name] == (0.0, math.inf), (name, f.name)
            else:
                assert f.name not in bounds, (name, f.name)


_SIMULATORS = {
    "vacation-finite": "qderive.numeric.simulation.vacation:simulate",
    "mm1-hysteretic": "qderive.numeric.simulation.hysteretic:simulate",
    "hysteretic": "qderive.numeric.simulation.hysteretic:simulate",
    "two-flow": "qderive.numeric.simulation.two_flow:simulate",
}


@pytest.mark.parametrize("model", sorted(_SIMULATORS))
def test_short_runs_give_intervals_inside_the_range(model):
    module, _, attr = _SIMULATORS[model].partition(":")
    simulate = getattr(importlib.import_module(module), attr)
    m = registered_models()[model].example()
    result = simulate(m, 20, 3, 5, warmup=0, quiet=True, wait_tail=[Fr(1, 100)], wait_moments=2)
    bounds = measure_bounds(model)
    checked = 0
    for name, est in result.measures.items():
        ci = est.interval()
        if ci is None or name not in bounds:
            continue
        lo, hi = bounds[name]
        assert lo <= ci[0] <= ci[1] <= hi, (name, ci)
        checked += 1
    for group in result.sample_measures.values():
        for est in (group.values() if isinstance(group, dict) else group):
            ci = est.interval()
            if ci is not None:
                assert ci[0] >= 0.0, ci
                checked += 1
    assert checked > 0
