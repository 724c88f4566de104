"""The generated finite-room measures with blocks over an array of loads (issue 30 item 5, issue 26): under partial
admission the points with the same batch parameters run in ONE pass of the idle passage and the cut recursion (the
kernel's numbers over points, ``Float64Points``); the vectorised call equals the point-by-point call to 1e-14 relative
(the same positive sums in another order: measured 3e-16 to 1.1e-15), for count kernels that take numbers over points
and for a Coxian service whose count sequences are computed point by point and stacked; under whole admission the
points run one by one (the docstring says so) and equal the point-by-point call exactly. The values themselves are
checked against the package and the block chain in tests/test_codegen_blocks_finite.py.

Each module is generated once per test session (:func:`_module`).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from codegen_block_checks import generated_function
from qderive.derivations.export.codegen_vacation import forms
from qderive.symbolic.models.vacation import Admission, CodegenFamilies, VacationPolicy

# name: (codegen options, the arguments after lam without r)
CASES = {
    "n3-setup-close-down": (dict(batch="geometric", service="erlang:k=2", vacation="exp", setup="exp",
                                 close_down="exp", start_threshold=3), (2.0, 0.2, 0.5, 0.3, 0.1)),
    "single-coxian-pmf": (dict(batch="pmf:sizes=1/2", service="coxian:n=2", vacation="exp", setup="gamma",
                               vacation_policy=VacationPolicy.SINGLE), (0.5, 0.5, 10.0, 5.0, 0.5, 0.5, 2.5, 0.2)),
    "whole-n2": (dict(batch="pmf:sizes=1/2", service="exp", vacation="exp", close_down="exp", start_threshold=2,
                      admission=Admission.WHOLE), (0.5, 0.5, 0.2, 0.5, 0.1)),
}


@functools.lru_cache(maxsize=None)
def _module(case, measure):
    text = forms(CodegenFamilies(**CASES[case][0]))[measure].python_module("vacation-finite")
    return generated_function(text, f"{case}-{measure}", measure)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("measure", ["loss_probability", "mean_wait"])
def test_the_vectorised_call_equals_the_points_one_by_one(case, measure):
    f = _module(case, measure)
    args = CASES[case][1]
    lams = np.linspace(0.2, 6.0, 13)
    rs = [4, 9]
    vec = f(lams, *args, rs)
    one = np.array([f(float(lam), *args, rs) for lam in lams])
    assert vec.shape == (13, 2)
    # 1e-14: the same positive sums over points in another order (module docstring)
    assert np.all(np.abs(vec - one) <= 1e-14 * np.abs(one)), np.max(np.abs(vec - one) / np.abs(one))
    if case.startswith("whole"):
        assert np.array_equal(vec, one)  # whole admission: the points one by one, as the docstring says


def test_the_docstring_says_the_cost_per_point():
    assert "ONE pass of the idle passage" in _module("n3-setup-close-down", "mean_wait").__doc__
    assert "computed one" in _module("whole-n2", "mean_wait").__doc__


def test_points_with_other_batch_parameters_run_in_their_own_pass():
    """The batch law is shared within a pass: points with other batch means are grouped apart, and each equals its
    own call."""
    f = _module("n3-setup-close-down", "p0")
    args = CASES["n3-setup-close-down"][1]
    lams, means = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 3.0, 2.0, 3.0])
    vec = f(lams, means, *args[1:], 7)
    one = np.array([f(float(a), float(b), *args[1:], 7) for a, b in zip(lams, means)])
    assert np.all(np.abs(vec - one) <= 1e-14 * np.abs(one))
