"""Generated tails of the finite room with a constant service and a smooth vacation (gamma) by the quadrature (F9)
(issue 28, item 4): ``qderive codegen vacation-finite --measure wait_tail --service det --vacation gamma`` ships the
sums (F1) of :mod:`qderive.numeric.kernels.lattice_finite` with the quadrature piece of
:mod:`qderive.numeric.kernels.vacation_quadrature` and the gamma survival function of
:mod:`qderive.numeric.kernels.survival` (numpy only), verbatim.

Three references:

* ``qderive eval vacation-finite`` (the engine's sums with the same quadrature piece): the same kernels and the same
  float64 operations on the vacation's weights, the engine's lattice form (F5) of the constant service (b = e_1)
  against the module's (F1) and its moments' data for the state at the arrival: roundings and the mesh adapted to
  rows of a slightly different length, 1e-12 relative (measured: 1e-13);
* an independent value: the infinite room's tail at r = 300 (loss 1e-17) from ``qderive eval vacation-infinite
  ... --digits 15`` (its transform inversion and lattice part, engines/vacation_wait.py; no code shared with the
  finite sums), to 1e-12 (the quadrature's estimate, about 1e-13, and the reference's 15 digits);
* the exact sums (F4) of an Erlang-2 vacation (its uniformized matrix piece, no quadrature) that ``eval`` computes
  for ``erlang:k=2``, against the generated module at shape 2: 1e-12 (the quadrature's stated error, 1e-13).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import cli, codegen, load_generated, run_standalone

FAMILIES = ["--batch", "geometric", "--service", "det", "--vacation", "gamma"]
# lam, batch_mean, service D, vacation shape, vacation mean (load lam * 2 * 0.01 = 0.6)
ARGS = [30.0, 2.0, 0.01, 2.5, 0.03]
LAWS = ["--batch", "geometric:mean=2", "--service", "det:mean=0.01", "--vacation", "gamma:shape=2.5,mean=0.03"]


def _module(tmp_path, measure, options=FAMILIES, name="m"):
    out = tmp_path / f"{name}.py"
    code, err = codegen(out, "vacation-finite", "--measure", measure, *options)  # once per options in a session
    assert code == 0, err
    return out


def _eval(laws, rate, r, option, points, model="vacation-finite", extra=()):
    """{repr(point): float} of ``qderive eval`` in float64."""
    code, js, err = cli(["eval", model, *laws, "--rate", str(rate), *(["--capacity", str(r)] if r else []),
                         f"--{option}", ",".join(map(repr, points)), "--json", *extra])
    assert code == 0, err
    return {k: float(v) for k, v in json.loads(js)["measures"][option.replace("-", "_")].items()}


@pytest.mark.parametrize("kind", ["wait", "sojourn"])
def test_generated_gamma_vacation_tails_equal_eval(tmp_path, kind):
    tail = load_generated(_module(tmp_path, f"{kind}_tail"))[f"{kind}_tail"]
    r = 20
    ts = [0.0, 0.012, 0.05, 0.2]  # the atom, within one service, the body, the tail (P about 2e-4)
    want = _eval(LAWS, ARGS[0], r, f"{kind}-tail", ts)
    got = tail(np.array(ts), *ARGS, r)
    assert got.shape == (4,)
    for t, g in zip(ts, got):
        assert g == pytest.approx(want[repr(t)], rel=1e-12, abs=0), t  # module docstring: the same kernels
    assert tail(ts[2], *ARGS, r) == got[2]  # a number gives a number, the same as in an array


def test_generated_gamma_vacation_quantile_equals_eval(tmp_path):
    quantile = load_generated(_module(tmp_path, "wait_quantile"))["wait_quantile"]
    tail = load_generated(_module(tmp_path, "wait_tail"))["wait_tail"]
    r = 20
    want = _eval(LAWS, ARGS[0], r, "wait-quantile", [0.9])["0.9"]
    got = float(quantile(0.9, *ARGS, r))
    # 1e-10: both searches stop at 1e-13 in log t on tails that agree to 1e-12 (tests/test_codegen_finite_tails.py)
    assert got == pytest.approx(want, rel=1e-10, abs=0)
    assert tail(got, *ARGS, r) == pytest.approx(0.1, rel=1e-9)


def test_generated_gamma_vacation_meets_the_infinite_room_at_a_large_room(tmp_path):
    # r = 300 at load 0.55: the loss is 1.1e-17, so the finite room's P(W > 0.5) is the infinite room's to ~1e-15.
    # 0.00748904029191064: `qderive eval vacation-infinite --batch geometric:mean=4 --service det:mean=0.012
    # --vacation gamma:shape=2.5,mean=0.06 --load 0.55 --wait-tail 0.5 --digits 15` (the infinite room's
    # inversion and lattice part, engines/vacation_wait.py; no code shared with the finite sums; the value
    # tests/test_vacation_quadrature.py checks the engine against)
    tail = load_generated(_module(tmp_path, "wait_tail"))["wait_tail"]
    lam = 0.55 / (4 * 0.012)
    got = float(tail(0.5, lam, 4.0, 0.012, 2.5, 0.06, 300))
    # 1e-12: the quadrature's estimate (~1e-13) and the reference's 15 digits
    assert abs(got - 0.00748904029191064) <= 1e-12 * 0.00748904029191064, got


@pytest.mark.parametrize("policy", ["multiple", "single"])
def test_generated_gamma_of_shape_two_meets_the_erlang_exact_sums(tmp_path, policy):
    """Shape 2 is the Erlang-2 law: eval's sums (F4) of its uniformized matrix piece (no quadrature)."""
    tail = load_generated(_module(tmp_path, "wait_tail", [*FAMILIES, "--vacation-policy", policy], policy))["wait_tail"]
    laws = ["--batch", "geometric:mean=2", "--service", "det:mean=0.01", "--vacation", "erlang:k=2,mean=0.03",
            "--vacation-policy", policy]
    # off the lattice j D: under the single policy the idle server's batches wait exactly (m - 1) D (atoms), and a
    # float t = j D falls on either side of its atom by the rounding of j D (eval's t is exact)
    ts = [0.035, 0.105, 0.255]
    want = _eval(laws, 30.0, 15, "wait-tail", ts)
    got = tail(np.array(ts), 30.0, 2.0, 0.01, 2.0, 0.03, 15)
    for t, g in zip(ts, got):
        assert g == pytest.approx(want[repr(t)], rel=1e-12, abs=0), t  # the quadrature's error, about 1e-13


def test_generated_gamma_vacation_module_runs_standalone(tmp_path):
    _module(tmp_path, "wait_tail", name="wait_tail")
    want = _eval(LAWS, ARGS[0], 20, "wait-tail", [0.05])["0.05"]
    script = f"import wait_tail\nprint(repr(wait_tail.wait_tail(0.05, {', '.join(map(repr, ARGS))}, 20)))"
    out = run_standalone(tmp_path, script)
    assert float(out) == pytest.approx(want, rel=1e-12, abs=0)


def test_a_shape_without_a_float64_survival_raises_with_the_command(tmp_path):
    """Shape below 1/20: the kernel's series has no float64 value there (eval takes mpmath), so the module raises
    ValueError with the eval command instead of answering."""
    tail = load_generated(_module(tmp_path, "wait_tail"))["wait_tail"]
    with pytest.raises(ValueError, match=r"compute it with `qderive eval vacation-finite .*--vacation "
                                         r"gamma:shape=0\.01,mean=0\.03"):
        tail(0.05, 30.0, 2.0, 0.01, 0.01, 0.03, 10)
    with pytest.raises(ValueError, match="vacation_shape = -1"):
        tail(0.05, 30.0, 2.0, 0.01, -1.0, 0.03, 10)


# -- an empirical service on its decimal lattice (F5): ``--service empirical:n=3``, the values arguments ---------------

SAMPLE = ["--batch", "geometric", "--service", "empirical:n=3", "--vacation", "exp"]
# lam, batch_mean, the three service values, vacation mean (load 20 * 2 * 0.01 = 0.4)
SAMPLE_ARGS = [20.0, 2.0, 0.004, 0.01, 0.016, 0.03]
SAMPLE_LAWS = ["--batch", "geometric:mean=2", "--service", "empirical:values=0.004/0.01/0.016", "--vacation",
               "exp:mean=0.03"]


@pytest.mark.parametrize("kind", ["wait", "sojourn"])
def test_generated_sample_service_tails_equal_eval(tmp_path, kind):
    """The same kernel (LatticeServiceSums, (F5)) over the module's float64 data and lattice h = 0.002 (a float;
    eval's h is the exact 1/500): roundings only, 1e-12 (measured 4e-16). t off the lattice (t = k h is on either
    side of the atoms of the sums by the rounding of k h)."""
    tail = load_generated(_module(tmp_path, f"{kind}_tail", SAMPLE, "s"))[f"{kind}_tail"]
    r = 15
    ts = [0.0, 0.0111, 0.0313, 0.0805]
    want = _eval(SAMPLE_LAWS, SAMPLE_ARGS[0], r, f"{kind}-tail", ts)
    got = tail(np.array(ts), *SAMPLE_ARGS, r)
    for t, g in zip(ts, got):
        assert g == pytest.approx(want[repr(t)], rel=1e-12, abs=0), t


def test_generated_sample_service_quantile_equals_eval(tmp_path):
    quantile = load_generated(_module(tmp_path, "wait_quantile", SAMPLE, "sq"))["wait_quantile"]
    want = _eval(SAMPLE_LAWS, SAMPLE_ARGS[0], 15, "wait-quantile", [0.9])["0.9"]
    # 1e-10: both searches stop at 1e-13 in log t on tails that agree to 1e-12
    assert float(quantile(0.9, *SAMPLE_ARGS, 15)) == pytest.approx(want, rel=1e-10, abs=0)


def test_generated_sample_service_meets_the_infinite_room_at_a_large_room(tmp_path):
    # r = 150 at load 0.4: the loss is negligible (below 1e-30), so the finite room's tail is the infinite room's.
    # `qderive eval vacation-infinite --batch geometric:mean=2 --service empirical:values=0.004/0.01/0.016 --vacation
    # exp:mean=0.03 --rate 20 --wait-tail 0.03,0.08` (the infinite room's certified brackets of the services rounded
    # to 8192 levels, engines/vacation_wait.py; no code shared with the finite sums): P(W > 0.03) in
    # [0.6391377783, 0.6392241636], estimate 0.6391809741215416; P(W > 0.08) in [0.1926988314, 0.192781159],
    # estimate 0.1927399926351457. 1e-9: the estimate's stated convergence (about 1e-10, vacation_wait.py)
    tail = load_generated(_module(tmp_path, "wait_tail", SAMPLE, "s"))["wait_tail"]
    got = tail(np.array([0.03, 0.08]), *SAMPLE_ARGS, 150)
    for g, (lo, hi, est) in zip(got, [(0.6391377783, 0.6392241636, 0.6391809741215416),
                                      (0.1926988314, 0.192781159, 0.1927399926351457)]):
        assert lo <= g <= hi
        assert g == pytest.approx(est, rel=1e-9, abs=0)


@pytest.mark.parametrize("vacation, laws, args", [
    ("det", "det:mean=0.03", [0.03]),  # a step piece (F3)
    ("gamma", "gamma:shape=2.5,mean=0.03", [2.5, 0.03]),  # the quadrature (F9) with the lattice service
])
def test_generated_sample_service_with_other_vacations_equals_eval(tmp_path, vacation, laws, args):
    """1e-12: the same kernels (the quadrature's meshes adapted to the same rows), roundings only (measured 6e-15)."""
    options = [*SAMPLE[:-1], vacation]
    tail = load_generated(_module(tmp_path, "wait_tail", options, vacation))["wait_tail"]
    ts = [0.0313, 0.0805]
    want = _eval([*SAMPLE_LAWS[:-1], laws], 20.0, 15, "wait-tail", ts)
    got = tail(np.array(ts), *SAMPLE_ARGS[:-1], *args, 15)
    for t, g in zip(ts, got):
        assert g == pytest.approx(want[repr(t)], rel=1e-12, abs=0), t


def test_a_sample_off_a_short_decimal_lattice_raises_with_the_command(tmp_path):
    tail = load_generated(_module(tmp_path, "wait_tail", SAMPLE, "s"))["wait_tail"]
    with pytest.raises(ValueError, match=r"more than 9 decimals.*`qderive eval vacation-finite .*--service "
                                         r"empirical:values=0\.004/0\.01/0\.0161234567891"):
        tail(0.03, 20.0, 2.0, 0.004, 0.01, 0.0161234567891, 0.03, 15)
    with pytest.raises(ValueError, match=r"span 144016 lattice levels \(more than 8192\)"):  # 16 x 9001 levels
        tail(0.03, 20.0, 2.0, 0.001, 0.01, 9.001, 0.03, 15)
    with pytest.raises(ValueError, match="service_value1 = 0"):
        tail(0.03, 20.0, 2.0, 0.0, 0.01, 0.016, 0.03, 15)


def test_the_sample_service_family_reaches_the_other_measures(tmp_path):
    """``--service empirical:n=N`` is built once for every measure of ``codegen vacation-finite``: the loss
    probability and the mean wait of the sample's law (its count law, a Poisson mixture, printed into the shipped
    kernel call) against eval (1e-12: the same kernels in float64, roundings only)."""
    code, js, err = cli(["eval", "vacation-finite", *SAMPLE_LAWS, "--rate", "20", "--capacity", "15", "--json"])
    assert code == 0, err
    measures = json.loads(js)["measures"]
    for measure in ("loss_probability", "mean_wait"):
        fn = load_generated(_module(tmp_path, measure, SAMPLE, measure))[measure]
        assert fn(*SAMPLE_ARGS, 15) == pytest.approx(float(measures[measure]), rel=1e-12, abs=0), measure
