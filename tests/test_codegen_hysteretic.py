"""Generated code of the hysteretic overload control agrees with `qderive eval hysteretic`.

`qderive codegen hysteretic` writes numpy-only modules (the embedded chain (16), GTH, the
subtraction-free solve of (21), (17)-(23)); they run with `python -S` where qderive is not
importable (conftest.run_standalone) and are compared with the in-package engine behind
`qderive eval hysteretic --json` (event convention, interval semantics, corrected (21)).
Tolerance 1e-12 relative: both sides are float64 transcriptions of the same subtraction-free
pipeline; they differ only where the inputs are rounded differently (the generated code forms
lambda_1 = f lambda_0 and the count-law parameters from floats, eval from exact rationals).
Every case below keeps eval in float64 (no mpmath switch: checked); the light-load cases have
kappa_inf(I - P_0) up to ~6e8, where an ordinary LU solve of (21) would lose ~9 digits.
"""

import json

import pytest

from qderive.derivations.cli import main

from conftest import run_standalone

MEASURES = ["p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time",
            "loss_probability", "throughput"]

# (codegen families, eval laws, generated-function arguments before L, H, R, eval --rate, --overload-factor, L/H/R)
CASES = {
    "example-geometric-det": (  # COMMAND.example_args: rho_0 = 150 * 2 * 0.005 = 1.5
        ("geometric", "det"), ("geometric:mean=2", "det:mean=0.005"),
        (150.0, 0.5, 2.0, 0.005), "150", "0.5", (73, 84, 100)),
    "single-exp-small-thresholds": (  # rho_0 = 1.2
        ("const", "exp"), ("const:n=1", "exp:mean=0.6"),
        (2.0, 0.5, 1, 0.6), "2", "0.5", (3, 6, 9)),
    "pmf-erlang3": (  # l_1 = 1.9, rho_0 = 1.14
        ("pmf", "erlang:k=3"), ("pmf:1=0.5,2=0.3,4=0.2", "erlang:k=3,mean=0.4"),
        (1.5, 0.4, (0.5, 0.3, 0.0, 0.2), 0.4), "1.5", "0.4", (10, 20, 30)),
    "poisson1-gamma": (  # rho_0 = 1.6 * 2.5 * 0.3 = 1.2
        ("poisson1", "gamma"), ("poisson1:mean=2.5", "gamma:shape=2.5,mean=0.3"),
        (1.6, 0.3, 2.5, 2.5, 0.3), "1.6", "0.3", (8, 15, 25)),
    "geometric-hyperexp": (  # b_1 = 1.55, rho_0 = 0.25 * 3 * 1.55 = 1.1625
        ("geometric", "hyperexp:n=2"), ("geometric:mean=3", "hyperexp:p=0.3/0.7,mean=0.5/2"),
        (0.25, 0.5, 3.0, 0.3, 0.5, 2.0), "0.25", "0.5", (6, 12, 20)),
    "light-load-figure3": (  # the example at rho_0 = 0.7: kappa_inf(I - P_0) = 5.6e8
        ("geometric", "det"), ("geometric:mean=2", "det:mean=0.005"),
        (70.0, 0.5, 2.0, 0.005), "70", "0.5", (73, 84, 100)),
    "light-load-single-det": (  # single arrivals, rho_0 = 0.4: kappa_inf(I - P_0) = 5.5e7
        ("const", "det"), ("const:n=1", "det:mean=1"),
        (0.4, 0.5, 1, 1.0), "0.4", "0.5", (5, 12, 20)),
}


def _eval(capsys, laws, rate, factor, thresholds):
    batch, service = laws
    assert main(["eval", "hysteretic", "--batch", batch, "--service", service, "--rate", rate,
                 "--overload-factor", factor, "--thresholds", ",".join(map(str, thresholds)), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _codegen(tmp_path, families, measures=MEASURES, stem=""):
    for measure in measures:
        assert main(["codegen", "hysteretic", "--measure", measure, "--batch", families[0], "--service", families[1],
                     "--out", str(tmp_path / f"{stem}{measure}.py")]) == 0


def _run(tmp_path, args, thresholds, measures=MEASURES, stem="", strict=True):
    script = (
        "import json, warnings\n"
        + ("warnings.simplefilter('error')\n" if strict else "")
        + f"args = {tuple(args) + tuple(thresholds)!r}\n"
        "out = {}\n"
        f"for m in {measures!r}:\n"
        f"    out[m] = getattr(__import__({stem!r} + m), m)(*args)\n"
        "print(json.dumps(out))\n"
    )
    return json.loads(run_standalone(tmp_path, script))


def _rel(got, want):
    return abs(got - want) / abs(want)


@pytest.mark.parametrize("case", list(CASES))
def test_generated_hysteretic_agrees_with_eval(tmp_path, capsys, case):
    families, laws, args, rate, factor, thresholds = CASES[case]
    _codegen(tmp_path, families)
    got = _run(tmp_path, args, thresholds)  # warnings are errors: no precision warning in these cases
    want = _eval(capsys, laws, rate, factor, thresholds)
    assert want["precision"] == "float64" and not want.get("notes"), want  # eval stayed in float64
    for measure in MEASURES:
        assert _rel(got[measure], want["measures"][measure]) <= 1e-12, (case, measure, got[measure],
                                                                        want["measures"][measure])


def test_ill_conditioned_case_warns_and_stays_accurate(tmp_path, capsys):
    """rho_0 = 0.6 in the Figure-3 setting: kappa_inf(I - P_0) = 9e10, so eval switches to mpmath.

    The generated code warns (it cannot switch); its subtraction-free solve of (21) is still
    accurate: measured 1.5e-15 against eval's mpmath result, asserted to 1e-12.
    """
    _codegen(tmp_path, ("geometric", "det"), ["mean_normal_time", "p_normal"])
    script = (
        "import json, warnings, mean_normal_time, p_normal\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    t0 = mean_normal_time.mean_normal_time(60.0, 0.5, 2.0, 0.005, 73, 84, 100)\n"
        "    p0 = p_normal.p_normal(60.0, 0.5, 2.0, 0.005, 73, 84, 100)\n"
        "print(json.dumps({'t0': t0, 'p0': p0, 'warnings': [str(w.message) for w in caught],\n"
        "                  'categories': [w.category.__name__ for w in caught]}))\n"
    )
    got = json.loads(run_standalone(tmp_path, script))
    assert got["categories"] == ["RuntimeWarning", "RuntimeWarning"]
    assert all("ill-conditioned" in w and "mpmath" in w for w in got["warnings"])
    want = _eval(capsys, ("geometric:mean=2", "det:mean=0.005"), "60", "0.5", (73, 84, 100))
    assert "mpmath" in " ".join(want["notes"])
    assert _rel(got["t0"], want["measures"]["mean_normal_time"]) <= 1e-12
    assert _rel(got["p0"], want["measures"]["p_normal"]) <= 1e-12


def test_generated_hysteretic_code_rejects_bad_input(tmp_path):
    _codegen(tmp_path, ("geometric", "det"), ["mean_cycle_time"])
    good = [150.0, 0.5, 2.0, 0.005, 73, 84, 100]
    bad = [(0, -1), (0, float("nan")), (1, 1.0), (1, 0), (1, "x"), (2, 0.5), (3, 0), (4, 84), (4, 0), (4, 2.5),
           (5, 101), (5, 99), (6, -3)]
    rows = []
    for pos, value in bad:
        row = list(good)
        row[pos] = value
        if (pos, value) == (4, 0):
            row[5], row[6] = 5, 10  # L = 0 with otherwise valid thresholds
        rows.append(row)
    rows.append([150.0, 0.5, 12.0, 0.005, 3, 6, 9])  # mean batch size 12 >= R = 9
    script = (
        "import mean_cycle_time as g\nnan = float('nan')\n"
        f"for args in {rows!r}:\n"
        "    try:\n        g.mean_cycle_time(*args)\n    except ValueError as e:\n"
        "        print(str(e).split(' =')[0], '|', str(e))\n"
        "    else:\n        print('accepted', args)\n"
    )
    lines = run_standalone(tmp_path, script).splitlines()
    names = [line.split(" |")[0] for line in lines]
    assert names == ["lam0", "lam0", "overload_factor", "overload_factor", "overload_factor", "batch_mean",
                     "service_mean", "L", "L", "L", "H", "R", "R", "R"], lines
    assert all(": must be " in line for line in lines), lines
    assert "L = 84: must be < H = 84" in lines[7] and "R = 100: must be >= H + 2 = 101" in lines[11]


@pytest.mark.parametrize("argv, message", [
    (["--batch", "geometric", "--service", "uniform"], "--service 'uniform'"),
    (["--batch", "zipf", "--service", "exp"], "--batch 'zipf'"),
    (["--batch", "geometric", "--service", "erlang"], "erlang takes k=N"),
    (["--service", "exp", "--lang", "c"], "needs a recursion"),
])
def test_codegen_hysteretic_bad_options_are_clear_errors(tmp_path, capsys, argv, message):
    assert main(["codegen", "hysteretic", "--measure", "p_normal", *argv, "--out", str(tmp_path / "x.py")]) == 2
    assert message in capsys.readouterr().err


def test_codegen_hysteretic_unknown_measure_and_default_batch(tmp_path, capsys):
    assert main(["codegen", "hysteretic", "--measure", "loss", "--service", "exp", "--out", str(tmp_path / "x.py")]) == 2
    assert "throughput" in capsys.readouterr().err  # the error lists the available measures
    out = tmp_path / "tp.py"
    assert main(["codegen", "hysteretic", "--measure", "throughput", "--service", "exp", "--out", str(out)]) == 0
    assert "def throughput(lam0, overload_factor, batch_size, service_mean, L, H, R):" in out.read_text()
