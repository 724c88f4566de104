"""Generated tails of the finite room with a constant service and a uniform vacation by the quadrature (F9) split at
the vacation's kinks (issue 28 item 4, dq28): ``qderive codegen vacation-finite --measure wait_tail --service det
--vacation uniform`` ships the sums (F1) of :mod:`qderive.numeric.kernels.lattice_finite` with the kinked quadrature
piece of :mod:`qderive.numeric.kernels.vacation_quadrature` (its remainder bound from the kernel
``uniform_survival_bound``) and the uniform survival function of :mod:`qderive.numeric.kernels.survival`, verbatim.

References: ``qderive eval`` in float64 (the same kernels; the brief's 1e-9, measured about 1e-16), and ``qderive eval
... --digits 20`` (the same quadrature at 20 digits in mpmath: the cells refined until two rules of 48 and 96 nodes
agree to 10^-23, every number and sum at 20 digits, the kinks' points exact), which the float64 module must meet
within its stated float64 policy (1e-10 of the tail).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import cli, codegen, load_generated, run_standalone

FAMILIES = ["--batch", "geometric", "--service", "det", "--vacation", "uniform"]
# lam, batch_mean, service D, vacation a, vacation b (load 30 * 2 * 0.01 = 0.6)
ARGS = [30.0, 2.0, 0.01, 0.01, 0.05]
LAWS = ["--batch", "geometric:mean=2", "--service", "det:mean=0.01", "--vacation", "uniform:low=0.01,high=0.05"]


def _module(tmp_path, measure, options=FAMILIES, name="m"):
    out = tmp_path / f"{name}.py"
    code, err = codegen(out, "vacation-finite", "--measure", measure, *options)
    assert code == 0, err
    return out


def _eval(option, points, r, extra=()):
    """{repr(point): str} of ``qderive eval`` (float64, or --digits D in ``extra``)."""
    code, js, err = cli(["eval", "vacation-finite", *LAWS, "--rate", str(ARGS[0]), "--capacity", str(r),
                         f"--{option}", ",".join(map(repr, points)), "--json", *extra])
    assert code == 0, err
    return json.loads(js)["measures"][option.replace("-", "_")]


@pytest.mark.parametrize("kind", ["wait", "sojourn"])
def test_generated_uniform_vacation_tails_equal_eval(tmp_path, kind):
    tail = load_generated(_module(tmp_path, f"{kind}_tail"))[f"{kind}_tail"]
    r = 20
    # t off the lattice j D (a float j D falls on either side of the wait's atoms by its rounding); the points
    # t - j D cross the vacation's kinks 0.01 and 0.05, so the cells split there
    ts = [0.0, 0.013, 0.047, 0.205]
    want = {k: float(v) for k, v in _eval(f"{kind}-tail", ts, r).items()}
    got = tail(np.array(ts), *ARGS, r)
    for t, g in zip(ts, got):
        assert g == pytest.approx(want[repr(t)], rel=1e-9, abs=0), t  # the brief's bound; the same kernels
    deep = _eval(f"{kind}-tail", ts[1:], r, ["--digits", "20"])
    for t, g in zip(ts[1:], got[1:]):
        # the float64 policy: a tail is trusted within 1e-10 of itself (the quadrature's bound is far below)
        assert abs(g - float(deep[repr(t)])) <= 1e-10 * float(deep[repr(t)]), (t, g, deep[repr(t)])


def test_generated_uniform_vacation_quantile_and_bad_input(tmp_path):
    quantile = load_generated(_module(tmp_path, "wait_quantile"))["wait_quantile"]
    tail = load_generated(_module(tmp_path, "wait_tail"))["wait_tail"]
    r = 20
    want = float(_eval("wait-quantile", [0.9], r)["0.9"])
    got = float(quantile(0.9, *ARGS, r))
    # 1e-9: both searches stop at 1e-13 in log t on tails that agree to 1e-12 (tests/test_codegen_finite_tails.py)
    assert got == pytest.approx(want, rel=1e-9, abs=0)
    assert tail(got, *ARGS, r) == pytest.approx(0.1, rel=1e-9)
    with pytest.raises(ValueError, match="vacation_high = 0.01 must exceed vacation_low = 0.05"):
        tail(0.05, 30.0, 2.0, 0.01, 0.05, 0.01, r)
    with pytest.raises(ValueError, match="vacation_low"):
        tail(0.05, 30.0, 2.0, 0.01, -0.01, 0.05, r)


def test_generated_uniform_vacation_module_runs_standalone(tmp_path):
    _module(tmp_path, "wait_tail", name="wait_tail")
    want = float(_eval("wait-tail", [0.047], 20)["0.047"])
    script = f"import wait_tail\nprint(repr(wait_tail.wait_tail(0.047, {', '.join(map(repr, ARGS))}, 20)))"
    out = run_standalone(tmp_path, script)
    assert float(out) == pytest.approx(want, rel=1e-9, abs=0)
