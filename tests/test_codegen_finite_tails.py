"""Generated tails and quantiles of the finite room with kinked laws (issue 28, item 4): ``qderive codegen
vacation-finite --measure wait_tail|sojourn_tail|wait_quantile|sojourn_quantile`` for a phase-type service with
constant, empirical (``empirical:n=N``) or uniform vacations, where the module ships the exact sums (K1)-(K2) of
:mod:`qderive.numeric.kernels.finite_kinked`, and for a constant service with no vacations or vacations of exact
survival pieces, where it ships the sums (F1)-(F4) of :mod:`qderive.numeric.kernels.lattice_finite` (no transform
is inverted).

The reference is ``qderive eval vacation-finite`` (the engine's ``kinked_tails``), whose sums are checked against
an independent 60-digit computation (the embedded chain at the period starts, exact polynomial-exponential
integrals over the vacation's age) in tests/test_wait_finite_kinked_vacation.py, and the constant service's against
an independent 50-digit computation in tests/test_wait_finite_lattice.py. The generated module runs the
same kernel over its own float64 data (the count sequences from the shipped count kernels, the service's
uniformization from its SymPy-printed PH(alpha, T) in floats, where the engine rounds exact rationals once), so
the two agree to roundings: 1e-12 relative (measured: below 1e-15). The quantiles to 1e-10 relative: both
searches stop at 1e-13 in log t, on tails that agree to 1e-12 (the root moves by the tail's error over the
slope of log P(W > t) in log t, at least 0.05 at these levels).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import cli, codegen, load_generated, run_standalone

# (codegen families, eval laws, arguments after t (or q) without r, r)
ERLANG = (["--batch", "geometric", "--service", "erlang:k=2", "--vacation", "det"],
          ["--batch", "geometric:mean=2", "--service", "erlang:k=2,mean=1", "--vacation", "det:mean=1.5"],
          [0.4, 2.0, 1.0, 1.5], 12)
HYPER = (["--batch", "pmf:sizes=1/3", "--service", "hyperexp:n=2", "--vacation", "det", "--vacation-policy", "single",
          "--admission", "whole"],
         ["--batch", "pmf:1=0.5,3=0.5", "--service", "hyperexp:p=0.25/0.75,mean=0.5/1.5", "--vacation",
          "det:mean=2.5", "--vacation-policy", "single", "--admission", "whole"],
         [0.45, 0.5, 0.5, 0.25, 0.75, 0.5, 1.5, 2.5], 9)
# an empirical vacation with a repeated value (the engine merges it into one atom of weight 1/2, the generated module
# keeps two steps of 1/4: the same survival function)
SAMPLE = (["--batch", "geometric", "--service", "exp", "--vacation", "empirical:n=4"],
          ["--batch", "geometric:mean=2", "--service", "exp:mean=0.8", "--vacation", "empirical:values=0.5/1.5/1.5/4"],
          [0.5, 2.0, 0.8, 0.5, 1.5, 1.5, 4.0], 10)
# a constant service: the sums (F1)-(F4) of lattice_finite (exponential pieces, a matrix piece (F4), steps)
DET_EXP = (["--batch", "geometric", "--service", "det", "--vacation", "exp"],
           ["--batch", "geometric:mean=2", "--service", "det:mean=1", "--vacation", "exp:mean=1.5"],
           [0.4, 2.0, 1.0, 1.5], 12)
DET_COXIAN = (["--batch", "pmf:sizes=1/3", "--service", "det", "--vacation", "coxian:n=2", "--admission", "whole"],
              ["--batch", "pmf:1=0.5,3=0.5", "--service", "det:mean=0.5", "--vacation", "coxian:rates=2/3,p=0.5",
               "--admission", "whole"],
              [0.6, 0.5, 0.5, 0.5, 2.0, 3.0, 0.5], 9)
DET_SAMPLE = (["--batch", "geometric", "--service", "det", "--vacation", "empirical:n=3", "--vacation-policy",
               "single"],
              ["--batch", "geometric:mean=2", "--service", "det:mean=1", "--vacation", "empirical:values=0.5/1.5/4",
               "--vacation-policy", "single"],
              [0.4, 2.0, 1.0, 0.5, 1.5, 4.0], 12)
# a uniform vacation: a mixture of constant ones (densities of the sums, Gauss-Legendre over d on each side of t)
UNIFORM = (["--batch", "geometric", "--service", "erlang:k=2", "--vacation", "uniform", "--vacation-policy", "single"],
           ["--batch", "geometric:mean=2", "--service", "erlang:k=2,mean=1", "--vacation", "uniform:low=0.5,high=2.5",
            "--vacation-policy", "single"],
           [0.4, 2.0, 1.0, 0.5, 2.5], 5)
COXIAN = (["--batch", "geometric", "--service", "coxian:n=2", "--vacation", "det"],
          ["--batch", "geometric:mean=3", "--service", "coxian:rates=2/3,p=0.5", "--vacation", "det:mean=0.75"],
          [0.3, 3.0, 2.0, 3.0, 0.5, 0.75], 6)


def _module(tmp_path, measure, options, name):
    out = tmp_path / f"{name}.py"
    code, err = codegen(out, "vacation-finite", "--measure", measure, *options)  # once per options in a session
    assert code == 0, err
    return out


def _eval(laws, rate, r, option, points):
    """{repr(point): float} of ``qderive eval vacation-finite`` in float64 (the engine's exact sums)."""
    code, js, err = cli(["eval", "vacation-finite", *laws, "--rate", str(rate), "--capacity", str(r),
                         f"--{option}", ",".join(map(repr, points)), "--json"])
    assert code == 0, err
    return {k: float(v) for k, v in json.loads(js)["measures"][option.replace("-", "_")].items()}


@pytest.mark.parametrize("case", [ERLANG, HYPER, COXIAN, SAMPLE, UNIFORM, DET_EXP, DET_COXIAN, DET_SAMPLE],
                         ids=["erlang-multiple", "hyperexp-single-whole", "coxian", "exp-empirical",
                              "erlang-uniform-single", "det-exp", "det-coxian-whole", "det-empirical-single"])
@pytest.mark.parametrize("kind", ["wait", "sojourn"])
def test_generated_tails_and_quantiles_equal_eval(tmp_path, case, kind):
    options, laws, args, r = case
    tail = load_generated(_module(tmp_path, f"{kind}_tail", options, "t"))[f"{kind}_tail"]
    quantile = load_generated(_module(tmp_path, f"{kind}_quantile", options, "q"))[f"{kind}_quantile"]
    scale = args[-1]  # the largest step d of a vacation (K2), or a time of the order of the wait
    ts = [0.0, 0.3 * scale, 0.8 * scale, 2.5 * scale]  # t < d, t > d (the two branches of (K2)), the atom
    want = _eval(laws, args[0], r, f"{kind}-tail", ts)
    got = tail(np.array(ts), *args, r)
    assert got.shape == (4,)
    for t, g in zip(ts, got):
        assert g == pytest.approx(want[repr(t)], rel=1e-12, abs=0), t  # roundings only (module docstring)
    assert tail(ts[2], *args, r) == got[2]  # a number gives a number, the same as in an array
    qs = [0.5, 0.9]
    want_q = _eval(laws, args[0], r, f"{kind}-quantile", qs)
    got_q = quantile(np.array(qs), *args, r)
    for q, g in zip(qs, got_q):
        assert g == pytest.approx(want_q[repr(q)], rel=1e-10, abs=0), q  # both searches stop at 1e-13 in log t
        assert tail(g, *args, r) == pytest.approx(1 - q, rel=1e-9)  # the level reached, from the tail itself


def test_generated_kinked_module_runs_standalone(tmp_path):
    path = _module(tmp_path, "wait_tail", ERLANG[0], "wait_tail")
    options, laws, args, r = ERLANG
    want = _eval(laws, args[0], r, "wait-tail", [2.0])["2.0"]
    out = run_standalone(tmp_path, f"import wait_tail\nprint(repr(wait_tail.wait_tail(2.0, {', '.join(map(repr, args))}, {r})))")
    assert float(out) == pytest.approx(want, rel=1e-12, abs=0)


def test_arrays_of_times_equal_point_by_point_and_parameters_stay_numbers(tmp_path):
    """t is the vectorised argument (each t is one sum of positive terms over the kept start vectors); a
    parameter is one point of the finite room's O(r^2) data, so an array of loads is refused, naming it, and a
    loop over the loads gives each its own data (checked against eval at two loads)."""
    options, laws, args, r = ERLANG
    tail = load_generated(_module(tmp_path, "wait_tail", options, "t"))["wait_tail"]
    ts = np.array([[0.3, 1.0], [2.0, 7.0]])
    grid = tail(ts, *args, r)
    assert grid.shape == (2, 2)
    assert [tail(float(t), *args, r) for t in ts.ravel()] == list(grid.ravel())
    with pytest.raises(ValueError, match="lam = .*must be a number"):
        tail(1.0, np.array([0.3, 0.4]), *args[1:], r)
    for lam in (0.3, 0.5):
        assert tail(1.0, lam, *args[1:], r) == pytest.approx(_eval(laws, lam, r, "wait-tail", [1.0])["1.0"],
                                                            rel=1e-12, abs=0)


def test_bad_arguments_name_themselves(tmp_path):
    options, _, args, r = HYPER
    tail = load_generated(_module(tmp_path, "wait_tail", options, "t"))["wait_tail"]
    with pytest.raises(ValueError, match="not a phase-type law"):
        tail(1.0, *args[:3], 0.5, 0.75, *args[5:], r)  # hyperexponential probabilities that sum to 1.25
    with pytest.raises(ValueError, match="r = 0"):
        tail(1.0, *args, 0)  # vacations need r >= 1
    with pytest.raises(ValueError, match="vacation_mean = -1"):
        tail(1.0, *args[:-1], -1.0, r)
    with pytest.raises(ValueError, match=r"^t = "):
        tail([0.1, -0.1], *args, r)
    options, _, args, r = SAMPLE
    tail = load_generated(_module(tmp_path, "wait_tail", options, "s"))["wait_tail"]
    with pytest.raises(ValueError, match="vacation_value2 = 0"):
        tail(1.0, *args[:4], 0.0, *args[5:], r)


@pytest.mark.parametrize("options, fragment", [
    (["--service", "gamma", "--vacation", "det"], "--service gamma: not phase-type"),
    # det with a uniform vacation is generated (the quadrature (F9) split at its kinks, branch dq28:
    # tests/test_codegen_finite_quadrature_uniform.py); with a sample's lattice it is not
    (["--service", "erlang:k=2", "--vacation", "empirical:values=1/2"],
     "--vacation empirical:values=1/2: an empirical family fixes only the number of its values, e.g. empirical:n=3"),
    (["--service", "erlang:k=2", "--vacation", "empirical:file=times.csv"],
     "--vacation empirical:file=times.csv: a sample read from a file is data"),
    (["--service", "empirical:n=2", "--vacation", "uniform"], "--vacation uniform: no exact survival pieces and "
                                                               "kinks that the lattice of a sample's sums would split"),
    (["--service", "empirical:file=times.csv", "--vacation", "det"], "--service empirical:file=times.csv: a sample "
                                                                      "read from a file is data"),
    (["--service", "erlang:k=2", "--vacation", "lognormal"], "--vacation lognormal:"),
    (["--service", "uniform", "--vacation", "exp"], "--service uniform: no generated tail or quantile in the finite "
                                                     "room: of the services with kinks only a constant (det) and a "
                                                     "sample on a lattice"),
    (["--service", "det", "--vacation", "lognormal"], "--vacation lognormal:"),
])
def test_laws_without_generated_sums_are_refused_with_the_reason(tmp_path, options, fragment):
    code, _, err = cli(["codegen", "vacation-finite", "--measure", "wait_tail", "--out", str(tmp_path / "x.py"),
                        "--batch", "geometric", *options])
    assert code == 2 and fragment in err, err
    assert not (tmp_path / "x.py").exists()


def test_empirical_vacation_family_in_the_other_measures_equals_eval_and_is_vectorised(tmp_path):
    """``--vacation empirical:n=N`` reaches every measure of ``codegen vacation-finite`` (the family is built once
    for all of them): the loss probability and the mean wait of the sample's law (its count law, a Poisson
    mixture, printed into the shipped kernel call) against eval at two loads, from an array of rates and point
    by point (1e-12: the same kernels in float64, roundings only)."""
    options, laws, args, r = SAMPLE
    for measure in ("loss_probability", "mean_wait"):
        fn = load_generated(_module(tmp_path, measure, options, measure))[measure]
        rates = [0.5, 0.7]
        together = fn(np.array(rates), *args[1:], r)
        for i, lam in enumerate(rates):
            code, js, err = cli(["eval", "vacation-finite", *laws, "--rate", str(lam), "--capacity", str(r), "--json"])
            assert code == 0, err
            want = float(json.loads(js)["measures"][measure])
            assert together[i] == pytest.approx(want, rel=1e-12, abs=0), (measure, lam)
            assert fn(lam, *args[1:], r) == pytest.approx(together[i], rel=1e-13, abs=0)


def test_a_point_beyond_the_sums_limits_raises_the_documented_error(tmp_path):
    """A constant vacation of about 20 000 uniformized service phases (Erlang-2 service of mean 0.001, theta =
    2000, vacation 10) needs more Horner steps than the kernel allows (KINKED_STEPS = 16384), as in eval: the
    generated function raises ValueError with the reason and the eval command, and computes nothing else."""
    tail = load_generated(_module(tmp_path, "wait_tail", ERLANG[0], "t"))["wait_tail"]
    with pytest.raises(ValueError, match=r"uniformized service phases.*compute it with `qderive eval vacation-finite "
                                         r"--rate 0\.05 .*--vacation det:mean=10\.0 --capacity 5"):
        tail(1.0, 0.05, 2.0, 0.001, 10.0, 5)
