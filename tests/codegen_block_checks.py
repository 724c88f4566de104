"""The comparisons the generated block modules' tests share (both rooms, and the vectorised measures): written once,
with their tolerances and why."""

from __future__ import annotations

from fractions import Fraction as F

from qderive.numeric.response import quantiles


def generated_function(text: str, label: str, measure: str):
    """The function ``measure`` of the generated module source ``text`` (executed under the name ``label``)."""
    ns = {}
    exec(compile(text, label, "exec"), ns)  # noqa: S102 - the generated module under test
    return ns[measure]


def close(got, want, rel=1e-9):
    """Each generated value within ``rel`` of the other computation's (1e-9: the float64 inversion's policy)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert abs(float(g) - float(w)) <= rel * abs(float(w)), (list(got), [float(v) for v in want])


def check_generated_median(quantile, law, args, tail=None):
    """The generated ``quantile`` at 1/2 against the engine's (``law``, a response law) within 1e-9; its bracket's
    start, the generated mean, against the engine's first moment within 1e-12 (float64 sums of positive terms against
    the Taylor coefficient at 20 digits); with the generated ``tail``, the tail at the quantile found is the level
    (the root's 1e-13 in log t, the tail's 1e-9)."""
    g = quantile.__globals__
    mean = g["_mean"](*g["_parameters"](*args))
    first = law.moment_values(1, None)[0]
    assert abs(mean - first) <= 1e-12 * mean
    got = quantile([0.5], *args)
    close(got, quantiles(law, [F(1, 2)], None, first)[0])
    if tail is not None:
        assert abs(tail(float(got[0]), *args) - 0.5) <= 1e-9
