"""Generated tails and quantiles of an admitted customer's wait in M[X]/G/1/r (``qderive codegen vacation-finite
--measure wait_tail``, ...): standalone (numpy and math only), the package's kernels inside verbatim, and equal
to what is computed another way:

* ``qderive eval vacation-finite --wait-tail ... --digits 20`` -- the engine's mpmath path: the customer-way
  recursion where stable (the generated code uses the batch way at every node), gmpy2 numbers, the Euler
  algorithm at two high precisions that must agree -- at r = 20 and r = 200, to 2e-10 relative: the float64
  self-check's tolerance (two Euler parameter sets must agree to 2e-10; measured errors 1e-11 to 1e-10);
* the quantile through the same 20-digit tail at the generated quantile (the level to 3e-10 relative: the
  tail's tolerance plus the root's 1e-13 in log t);
* a tail of ~4.5e-8, below the self-check's 1e-6 floor: the generated function raises the documented error
  and the command it names computes the tail;
* the hysteretic model (``qderive codegen hysteretic --measure wait_tail``, ``--policy departure``): against
  ``qderive eval hysteretic ... --digits 20`` likewise, with and without arrivals in overload.
"""

from __future__ import annotations

import ast
import collections
import inspect
import json

import numpy as np
import pytest

from conftest import cli, codegen, load_generated, run_standalone

# (codegen families, eval laws, arguments after t (or q) without r)
GEO = (["--batch", "geometric", "--service", "erlang:k=4", "--vacation", "exp"],
       ["--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation", "exp:mean=0.075"],
       [8.0, 5.0, 0.015, 0.075])
MIX = (["--batch", "pmf:sizes=1/3", "--service", "hyperexp:n=2", "--vacation", "coxian:n=2", "--vacation-policy",
        "single"],
       ["--batch", "pmf:1=0.5,3=0.5", "--service", "hyperexp:p=0.25/0.75,mean=0.01/0.02", "--vacation",
        "coxian:rates=20/30,p=0.5", "--vacation-policy", "single"],
       [10.0, 0.5, 0.5, 0.25, 0.75, 0.01, 0.02, 20.0, 30.0, 0.5])
WHOLE = (["--batch", "pmf:sizes=1/3", "--service", "hyperexp:n=2", "--vacation", "none", "--admission", "whole"],
         ["--batch", "pmf:1=0.5,3=0.5", "--service", "hyperexp:p=0.25/0.75,mean=0.01/0.02", "--vacation", "none",
          "--admission", "whole"],
         [10.0, 0.5, 0.5, 0.25, 0.75, 0.01, 0.02])


def _generate_model(tmp_path, model, measure, options, name):
    out = tmp_path / f"{name}.py"
    code, err = codegen(out, model, "--measure", measure, *options)  # once per options in a session
    assert code == 0, err
    return out


def _generate(tmp_path, measure, options, name):
    return _generate_model(tmp_path, "vacation-finite", measure, options, name)


#: the reference's precision: 20 correct digits (the package's --digits contract) are 10 digits beyond the 2e-10
#: tolerance of every comparison here; 30 digits cost 1.5x (2.8x cold) more at r = 200
def _eval(laws, rate, r, asks: dict, digits=20):
    """{option: {key: float}} of ``qderive eval vacation-finite`` at ``digits`` (the engine's mpmath path)."""
    argv = ["eval", "vacation-finite", *laws, "--rate", str(rate), "--capacity", str(r), "--digits", str(digits),
            "--json"]
    for option, points in asks.items():
        argv += [f"--{option}", ",".join(map(repr, points))]
    code, js, err = cli(argv)
    assert code == 0, err
    m = json.loads(js)["measures"]
    return {o: {k: float(v) for k, v in m[o.replace("-", "_")].items()} for o in asks}


@pytest.mark.slow  # about 2 s of CPU: the engine's data at r = 200 and 20 digits
def test_r200_tails_and_quantile_equal_eval_at_20_digits(tmp_path):
    tail = load_generated(_generate(tmp_path, "wait_tail", GEO[0], "t200"))["wait_tail"]
    quantile = load_generated(_generate(tmp_path, "wait_quantile", GEO[0], "q200"))["wait_quantile"]
    args = GEO[2]
    ts = [0.05, 0.2]  # tails 0.91, 0.48
    # the 0.8 quantile (tail 0.2): near tail 0.1 the two float64 parameter sets disagree by 1.4e-10 to 2.5e-10 on
    # some numpy builds, at the self-check's 2e-10, and the generated function refuses (its documented error)
    t80 = quantile(0.8, *args, 200)
    want = _eval(GEO[1], args[0], 200, {"wait-tail": [*ts, t80]})["wait-tail"]
    got = tail(np.array(ts), *args, 200)
    assert got.shape == (2,)
    for t, g in zip(ts, got):
        assert g == pytest.approx(want[repr(t)], rel=2e-10, abs=0), t
    assert want[repr(t80)] == pytest.approx(0.2, rel=3e-10, abs=0)  # the quantile inverts the 20-digit tail


def test_mm1_r200_tails_and_quantiles_against_the_closed_form(tmp_path):
    # M/M/1/K, K = r + 1 = 201 places, rho = 0.9: an admitted customer finds n in the system with probability
    # rho^n / sum_{m<K} rho^m and waits Erlang(n, mu): P(W > t) = sum_n w_n P(Pois(mu t) < n), at 50 digits
    import mpmath

    options = ["--batch", "const:n=1", "--service", "exp", "--vacation", "none"]
    wait = load_generated(_generate(tmp_path, "wait_tail", options, "mm1"))["wait_tail"]
    quantile = load_generated(_generate(tmp_path, "sojourn_quantile", options, "mm1q"))["sojourn_quantile"]
    lam, mu, r = 0.9, 1.0, 200
    ts = [0.5, 5.0, 10.0, 20.0]  # tails 0.86 .. 0.12 (at 0.016 the float64 self-check refuses)
    with mpmath.workdps(50):
        rho = mpmath.mpf(lam) / mpmath.mpf(mu)
        w = [rho**n for n in range(r + 1)]
        z = mpmath.fsum(w)

        def tail(n0, t):  # sum_n w_n P(Erlang(n + n0, mu) > t), n = 0..r; P(Pois(x) < k) by running sums
            x = mpmath.mpf(mu) * mpmath.mpf(t)
            term, below = mpmath.exp(-x), [mpmath.mpf(0)]
            for i in range(r + 1):
                below.append(below[-1] + term)
                term = term * x / (i + 1)
            return mpmath.fsum(w[n] * below[n + n0] for n in range(r + 1)) / z

        want = [float(tail(0, t)) for t in ts]
        t50 = quantile(0.5, lam, 1 / mu, r)
        t50_tail = float(tail(1, t50))
    got = wait(np.array(ts), lam, 1 / mu, r)
    np.testing.assert_allclose(got, want, rtol=2e-10, atol=0)
    assert wait(0.0, lam, 1 / mu, r) == pytest.approx(1 - 1 / float(z), rel=1e-14)  # P(W > 0) = 1 - w_0
    assert t50_tail == pytest.approx(0.5, rel=3e-10)  # P(T > median) = 1/2 in the closed form


def _mix_deep_refusal(wait, args, deep):
    """The refusal of a tail below 1e-6 and the command it names (split into words)."""
    with pytest.raises(ValueError) as err:
        wait(np.array([0.05, deep]), *args)
    msg = str(err.value)
    assert msg.startswith(f"t = {deep!r}: a tail is below 1e-06") and "--digits 15" in msg
    command = msg.split("`")[1].split()
    assert command[:3] == ["qderive", "eval", "vacation-finite"] and command[command.index("--capacity") + 1] == "20"
    return command


def test_r20_wait_and_sojourn_tails_equal_eval_and_a_deep_tail_is_refused(tmp_path):
    wait = load_generated(_generate(tmp_path, "wait_tail", MIX[0], "w20"))["wait_tail"]
    sojourn = load_generated(_generate(tmp_path, "sojourn_tail", MIX[0], "s20"))["sojourn_tail"]
    args = [*MIX[2], 20]
    tw, ts = [0.005, 0.05, 0.1], [0.05, 0.2]  # wait tails 0.80 .. 0.22
    want = _eval(MIX[1], args[0], 20, {"wait-tail": tw, "sojourn-tail": ts})
    for kind, fn, points in (("wait-tail", wait, tw), ("sojourn-tail", sojourn, ts)):
        got = fn(points, *args)
        for t, g in zip(points, got):
            assert g == pytest.approx(want[kind][repr(t)], rel=2e-10, abs=0), (kind, t)
    assert wait(0.0, *args) < 1 and sojourn(0.0, *args) == 1.0  # an atom P(W = 0) > 0; none for T
    _mix_deep_refusal(wait, args, 0.9)  # P(W > 0.9) = 4.5e-8


@pytest.mark.slow  # about 0.5 s of CPU: two mpmath evaluations of a tail of 4.5e-8 (keeps the fast set near 5 s)
def test_the_command_of_a_refused_deep_tail_computes_it(tmp_path):
    wait = load_generated(_generate(tmp_path, "wait_tail", MIX[0], "deep"))["wait_tail"]
    deep = 0.9
    command = _mix_deep_refusal(wait, [*MIX[2], 20], deep)
    code, js, stderr = cli([*command[1:], "--json"])  # the command the message names works
    assert code == 0, stderr
    got = float(json.loads(js)["measures"]["wait_tail"][repr(deep)])
    want = _eval(MIX[1], MIX[2][0], 20, {"wait-tail": [deep]})["wait-tail"][repr(deep)]
    assert 1e-9 < want < 1e-6 and got == pytest.approx(want, rel=1e-13)


def test_whole_admission_without_vacations_equals_eval(tmp_path):
    tail = load_generated(_generate(tmp_path, "wait_tail", WHOLE[0], "whole"))["wait_tail"]
    args = [*WHOLE[2], 6]
    ts = [0.02, 0.1]  # tails 0.41, 0.044
    want = _eval(WHOLE[1], args[0], 6, {"wait-tail": ts})["wait-tail"]
    for t, g in zip(ts, tail(ts, *args)):
        assert g == pytest.approx(want[repr(t)], rel=2e-10, abs=0), t


def test_generated_module_is_standalone_ships_the_kernels_and_defines_each_name_once(tmp_path):
    from qderive.numeric.kernels import finite_wait, inversion, tails, vacation

    path = _generate(tmp_path, "sojourn_quantile", MIX[0], "sojourn_quantile")
    text = path.read_text()
    tree = ast.parse(text)
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    modules = {a.name for n in imports for a in n.names} if all(isinstance(n, ast.Import) for n in imports) else None
    assert modules is not None and modules <= {"numpy", "math", "warnings"}, modules  # no `from` imports at all
    for fn in (finite_wait.wait_finite_start, finite_wait.wait_levels_at, finite_wait.wait_admission_sum,
               finite_wait.wait_count_sequences, vacation.FiniteVacation, inversion.euler_inversion,
               tails.float64_tails, tails.float64_quantile):
        assert inspect.getsource(fn) in text, fn.__name__  # the package's source, verbatim
    defined = collections.Counter(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
    defined.update(t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name))
    assert not [k for k, v in defined.items() if v > 1]  # no generated helper shadows a kernel's name
    args = ", ".join(map(repr, [*MIX[2], 20]))
    out = run_standalone(tmp_path, "import sys\nsys.modules.update(sympy=None, mpmath=None, gmpy2=None)  # blocked\n"
                         f"import sojourn_quantile\nprint(repr(sojourn_quantile.sojourn_quantile(0.5, {args})))")
    median = float(out)
    tail = load_generated(_generate(tmp_path, "sojourn_tail", MIX[0], "sojourn_tail"))["sojourn_tail"]
    assert tail(median, *MIX[2], 20) == pytest.approx(0.5, rel=1e-9)  # the quantile inverts the tail


def test_bad_arguments_raise_value_errors_naming_them(tmp_path):
    tail = load_generated(_generate(tmp_path, "wait_tail", GEO[0], "bad"))["wait_tail"]
    for args, fragment in (([8.0, 5.0, 0.015, 0.075, 2.5], "r = 2.5: must be an integer >= 1"),
                           ([8.0, 5.0, 0.015, 0.075, 0], "r = 0: must be an integer >= 1"),
                           ([8.0, 5.0, -0.015, 0.075, 5], "service_mean = -0.015"),
                           ([8.0, 0.5, 0.015, 0.075, 5], "batch_mean = 0.5")):
        with pytest.raises(ValueError, match=fragment):
            tail(0.1, *args)
    with pytest.raises(ValueError, match=r"^t = "):
        tail([0.1, -0.1], *GEO[2], 5)


@pytest.mark.parametrize("options, fragment", [
    # a uniform vacation with a sample's lattice: no exact pieces and kinks at every step (with det it is generated by
    # the quadrature (F9) split at its kinks, branch dq28: tests/test_codegen_finite_quadrature_uniform.py)
    (["--batch", "geometric", "--service", "empirical:n=2", "--vacation", "uniform"],
     "--vacation uniform: no exact survival pieces"),
    (["--batch", "geometric", "--service", "gamma", "--vacation", "uniform"], "--service gamma: not phase-type"),
    (["--batch", "geometric", "--service", "exp", "--vacation", "none", "--vacation-policy", "single"],
     "single needs a vacation family"),
])
def test_kinked_laws_are_refused_for_tails_but_not_for_the_other_measures(tmp_path, options, fragment):
    code, _, err = cli(["codegen", "vacation-finite", "--measure", "wait_quantile", "--out", str(tmp_path / "x.py"),
                        *options])
    assert code == 2 and fragment in err, err
    assert not (tmp_path / "x.py").exists()
    if "det" in options:
        code, _, err = cli(["codegen", "vacation-finite", "--measure", "loss_probability", "--out",
                            str(tmp_path / "loss.py"), *options])
        assert code == 0, err


@pytest.mark.parametrize("factor, kind", [(0.5, "wait"), (0.0, "sojourn")])  # f = 0: one data part, not two
def test_hysteretic_tails_equal_eval_at_20_digits(tmp_path, factor, kind):
    options = ["--batch", "geometric", "--service", "erlang:k=2"]
    fn = load_generated(_generate_model(tmp_path, "hysteretic", f"{kind}_tail", options, kind))[f"{kind}_tail"]
    args = (10.0, factor, 3.0, 0.02, 4, 8, 12)  # lambda_0, f, batch mean, service mean, L, H, R
    ts = [0.0, 0.01, 0.05, 0.1]  # tails 1 (0.82 for W) .. 0.25
    code, js, err = cli(["eval", "hysteretic", "--rate", "10", "--overload-factor", str(factor), "--batch",
                         "geometric:mean=3", "--service", "erlang:k=2,mean=0.02", "--thresholds", "4,8,12", "--policy",
                         "departure", f"--{kind}-tail", ",".join(map(repr, ts)), "--digits", "20", "--json"])
    assert code == 0, err
    want = json.loads(js)["measures"][f"{kind}_tail"]
    for t, g in zip(ts, fn(np.array(ts), *args)):
        assert g == pytest.approx(float(want[repr(t)]), rel=2e-10, abs=0), t  # t = 0: the atom, to rounding
    with pytest.raises(ValueError, match="must satisfy 1 <= L < H < R"):
        fn(0.05, *args[:4], 8, 4, 12)


def test_hysteretic_kinked_service_is_refused_for_tails_only(tmp_path):
    options = ["--batch", "geometric", "--service", "det"]
    code, _, err = cli(["codegen", "hysteretic", "--measure", "wait_tail", "--out", str(tmp_path / "x.py"), *options])
    assert code == 2 and "--service det: no generated tail" in err, err
    code, _, err = cli(["codegen", "hysteretic", "--measure", "mean_cycle_time", "--out", str(tmp_path / "c.py"),
                        *options])
    assert code == 0, err
