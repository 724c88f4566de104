"""Generated code of the hysteretic models agrees with `qderive eval` and with an independent oracle.

`qderive codegen hysteretic` writes modules that are the package's kernel
(``numeric/kernels/hysteretic.py`` and what it imports) copied verbatim plus the law families'
printed kernel calls; they run with `python -S` where qderive is not importable
(conftest.run_standalone). Tolerance against `qderive eval hysteretic --json` (event convention,
interval semantics, corrected (21)): 1e-12 relative -- the same float64 kernels, fed with inputs
rounded differently (the generated code forms lambda_1 = f lambda_0 and the laws' parameters from
floats, eval from exact rationals). Every case keeps eval in float64 (checked). Because the
generated code *is* the engine's kernel, it is also compared with the embedded-chain oracle
(Panjer counts, built from the model definition) at 1e-12.

`qderive codegen mm1-hysteretic` prints the closed forms (Python and C); they are compared with
eval (1e-12 relative: a closed form and the positive recurrences, both float64) at points that
include the Piecewise branches lambda_s = mu, lambda_1 = 0 and R = H + 1.
"""

import json
from fractions import Fraction

import numpy
import pytest

from conftest import cli, codegen, load_generated, run_generated_c, run_standalone

MEASURES = ["p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time",
            "loss_probability", "throughput"]

# (codegen families, eval laws, generated-function arguments before L, H, R, eval --rate, --overload-factor, L/H/R)
CASES = {
    "example-geometric-det": (  # HystereticModel.example(): rho_0 = 150 * 2 * 0.005 = 1.5
        ("geometric", "det"), ("geometric:mean=2", "det:mean=0.005"), (150.0, 0.5, 2.0, 0.005), "150", "0.5",
        (73, 84, 100)),
    "single-exp-small-thresholds": (  # rho_0 = 1.2
        ("pmf:sizes=1", "exp"), ("pmf:1=1", "exp:mean=0.6"), (2.0, 0.5, 1.0, 0.6), "2", "0.5", (3, 6, 9)),
    "pmf-erlang3": (  # l_1 = 1.9, rho_0 = 1.14
        ("pmf:sizes=1/2/4", "erlang:k=3"), ("pmf:1=0.5,2=0.3,4=0.2", "erlang:k=3,mean=0.4"),
        (1.5, 0.4, 0.5, 0.3, 0.2, 0.4), "1.5", "0.4", (10, 20, 30)),
    "poisson1-gamma": (  # rho_0 = 1.6 * 2.5 * 0.3 = 1.2
        ("poisson1", "gamma"), ("poisson1:mean=2.5", "gamma:shape=2.5,mean=0.3"), (1.6, 0.3, 2.5, 2.5, 0.3),
        "1.6", "0.3", (8, 15, 25)),
    "geometric-hyperexp": (  # b_1 = 1.55, rho_0 = 0.25 * 3 * 1.55 = 1.1625
        ("geometric", "hyperexp:n=2"), ("geometric:mean=3", "hyperexp:p=0.3/0.7,mean=0.5/2"),
        (0.25, 0.5, 3.0, 0.3, 0.7, 0.5, 2.0), "0.25", "0.5", (6, 12, 20)),
    "light-load-figure3": (  # the example at rho_0 = 0.7: kappa_inf(I - P_0) = 5.6e8
        ("geometric", "det"), ("geometric:mean=2", "det:mean=0.005"), (70.0, 0.5, 2.0, 0.005), "70", "0.5",
        (73, 84, 100)),
    "complete-blocking": (  # overload factor 0: no arrivals in overload
        ("geometric", "exp"), ("geometric:mean=2", "exp:mean=0.005"), (150.0, 0.0, 2.0, 0.005), "150", "0",
        (10, 20, 30)),
    "pure-discard-hysteresis-R-is-H-plus-1": (  # overload factor 1, no discard state
        ("geometric", "det"), ("geometric:mean=2", "det:mean=0.005"), (150.0, 1.0, 2.0, 0.005), "150", "1",
        (10, 20, 21)),
}


def _eval(laws, rate, factor, thresholds):
    batch, service = laws
    code, out, err = cli(["eval", "hysteretic", "--batch", batch, "--service", service, "--rate", rate,
                          "--overload-factor", factor, "--thresholds", ",".join(map(str, thresholds)), "--json"])
    assert code == 0, err
    return json.loads(out)


def _codegen(tmp_path, families, measures=MEASURES, stem=""):
    for measure in measures:  # (once per options in a session: conftest.codegen)
        code, err = codegen(tmp_path / f"{stem}{measure}.py", "hysteretic", "--measure", measure, "--batch",
                            families[0], "--service", families[1])
        assert code == 0, err


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
    return abs(got - want) / abs(want) if want else abs(got)


#: in the full suite only: the example (R = 100, the costliest case) runs the same generated (geometric, det) module
#: with the same thresholds as light-load-figure3, and the overload regime as the other cases with rho_0 > 1
_FULL_SUITE_ONLY = {"example-geometric-det"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow if c in _FULL_SUITE_ONLY else ())
                                  for c in CASES])
def test_generated_hysteretic_agrees_with_eval(tmp_path, case):
    families, laws, args, rate, factor, thresholds = CASES[case]
    _codegen(tmp_path, families)
    got = _run(tmp_path, args, thresholds)  # warnings are errors: no precision warning in these cases
    want = _eval(laws, rate, factor, thresholds)
    assert want["precision"] == "float64" and "confirmed_digits" not in want, want  # eval stayed in float64
    for measure in MEASURES:
        assert _rel(got[measure], want["measures"][measure]) <= 1e-12, (case, measure, got[measure],
                                                                        want["measures"][measure])


def test_generated_code_is_the_package_kernel_and_agrees_with_the_oracle(tmp_path):
    """The module holds numeric/kernels/hysteretic.py verbatim; its value = the embedded oracle (Panjer counts)."""
    from qderive.derivations.export.codegen import kernel_sources
    from qderive.numeric.backend import mp_context
    from qderive.numeric.oracles.hysteretic import embedded
    from qderive.symbolic.batches import Geometric
    from qderive.symbolic.laws import Erlang
    from qderive.symbolic.models.hysteretic import HystereticModel

    import ast
    import pathlib

    import qderive.numeric.kernels.hysteretic as kernel

    _codegen(tmp_path, ("geometric", "erlang:k=2"), MEASURES)
    text = (tmp_path / "mean_cycle_time.py").read_text()
    shipped = text.split("# ---- qderive.numeric.kernels.hysteretic ")[1].split("\n# ---- ")[0]
    source = pathlib.Path(kernel.__file__).read_text()
    tree = ast.parse(source)
    body_start = tree.body[1].lineno  # after the module docstring
    for node in tree.body[1:]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        block = "\n".join(source.splitlines()[node.lineno - 1: node.end_lineno])
        assert block in shipped, block.splitlines()[0]  # every definition, verbatim
    assert body_start > 1 and kernel_sources(("hysteretic",)).count("class HystereticSolution") == 1
    got = _run(tmp_path, (120.0, 0.25, 2.0, 0.005), (4, 8, 12))
    model = HystereticModel.from_load(Fraction(6, 5), service=Erlang(2, Fraction(1, 200)), batch=Geometric(2),
                                      L=4, H=8, R=12, overload_factor=Fraction(1, 4))
    with mp_context(60) as ctx:
        ref = embedded(model, ctx).measures
    for measure in MEASURES:
        assert _rel(got[measure], float(ref[measure])) <= 1e-12, measure


def test_ill_conditioned_case_warns_and_stays_accurate(tmp_path):
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
    want = _eval(("geometric:mean=2", "det:mean=0.005"), "60", "0.5", (73, 84, 100))
    assert "mpmath" in " ".join(want["notes"])
    assert _rel(got["t0"], want["measures"]["mean_normal_time"]) <= 1e-12
    assert _rel(got["p0"], want["measures"]["p_normal"]) <= 1e-12


def test_generated_hysteretic_code_rejects_bad_input(tmp_path):
    _codegen(tmp_path, ("geometric", "det"), ["mean_cycle_time"])
    good = [150.0, 0.5, 2.0, 0.005, 73, 84, 100]
    bad = [(0, -1), (0, float("nan")), (1, 1.5), (1, -0.1), (1, "x"), (2, 0.5), (3, 0), (4, 84), (4, 0), (4, 2.5),
           (5, 101), (6, 84)]
    rows = []
    for pos, value in bad:
        row = list(good)
        row[pos] = value
        rows.append(row)
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
                     "service_mean", "L, H, R", "L, H, R", "L", "L, H, R", "L, H, R"], lines
    assert "must satisfy 1 <= L < H < R" in lines[7] and "must be an integer" in lines[9]


@pytest.mark.parametrize("argv, message", [
    (["--batch", "geometric", "--service", "lognormal"], "--service lognormal: the count probabilities"),
    (["--batch", "zipf", "--service", "exp"], "--batch zipf: unknown batch law 'zipf'"),
    (["--batch", "geometric", "--service", "erlang"], "erlang needs k=N"),
    (["--batch", "geometric", "--service", "exp", "--lang", "c"], "C is generated for closed-form measures only"),
])
def test_codegen_hysteretic_bad_options_are_clear_errors(tmp_path, argv, message):
    out = tmp_path / ("x.c" if "c" in argv else "x.py")
    code, _, err = cli(["codegen", "hysteretic", "--measure", "p_normal", *argv, "--out", str(out)])
    assert code == 2 and message in err, err


def test_codegen_hysteretic_unknown_measure_and_signature(tmp_path):
    code, _, err = cli(["codegen", "hysteretic", "--measure", "loss", "--batch", "geometric", "--service", "exp",
                        "--out", str(tmp_path / "x.py")])
    assert code == 2 and "throughput" in err  # the error lists the available measures
    out = tmp_path / "tp.py"
    code, _, err = cli(["codegen", "hysteretic", "--measure", "throughput", "--batch", "geometric", "--service", "exp",
                        "--out", str(out)])
    assert code == 0, err
    assert ("def throughput(lam0=None, overload_factor=None, batch_mean=None, service_mean=None, L=None, H=None, "
            "R=None, *, load=None):") in out.read_text()  # positional as before, or by keyword with load= for lam0


# ------------------------------------------------------------------------------------------
# M|M|1 hysteresis: closed forms, Python and C
# ------------------------------------------------------------------------------------------

MM1_POINTS = [  # (lam0, lam1, mu, L, H, R)
    (1.2, 0.6, 1.0, 3, 6, 9),
    (1.0, 0.5, 1.0, 2, 5, 8),  # lambda_0 = mu
    (1.5, 1.0, 1.0, 4, 7, 12),  # lambda_1 = mu
    (1.0, 1.0, 1.0, 2, 5, 8),  # --rates 1,1: pure discard hysteresis, both Piecewise branches
    (1.5, 0.0, 1.0, 4, 7, 12),  # lambda_1 = 0: complete blocking
    (2.5, 1.75, 1.5, 1, 2, 3),  # smallest thresholds, R = H + 1
]


def _eval_mm1(point):
    lam0, lam1, mu, L, H, R = point
    code, out, err = cli(["eval", "mm1-hysteretic", "--rates", f"{lam0!r},{lam1!r}", "--service-rate", repr(mu),
                          "--thresholds", f"{L},{H},{R}", "--json"])
    assert code == 0, err
    return json.loads(out)["measures"]


def test_mm1_generated_python_agrees_with_eval_and_broadcasts(tmp_path):
    for measure in MEASURES:
        out = tmp_path / f"{measure}.py"
        code, _, err = cli(["codegen", "mm1-hysteretic", "--measure", measure, "--out", str(out)])
        assert code == 0, err
    script = (
        "import json, warnings\nwarnings.simplefilter('error')\n"
        f"points = {MM1_POINTS!r}\nout = []\n"
        "for p in points:\n"
        f"    out.append({{m: float(getattr(__import__(m), m)(*p)) for m in {MEASURES!r}}})\n"
        "print(json.dumps(out))\n"
    )
    got = json.loads(run_standalone(tmp_path, script))
    for point, values in zip(MM1_POINTS, got):
        want = _eval_mm1(point)
        for measure in MEASURES:
            assert _rel(values[measure], want[measure]) <= 1e-12, (point, measure)
    ns = load_generated(tmp_path / "mean_cycle_time.py")
    lam0 = numpy.array([1.2, 1.0, 1.5])
    vec = ns["mean_cycle_time"](lam0, 0.6, 1.0, 3, 6, 9)
    assert vec.shape == (3,) and all(_rel(v, ns["mean_cycle_time"](x, 0.6, 1.0, 3, 6, 9)) < 1e-15
                                     for v, x in zip(vec, lam0))
    for bad, name in (((1.2, 1.6, 1.0, 3, 6, 9), "lam1 must be <= lam0"), ((1.2, 0.6, 1.0, 3, 6, 9.5), "integers"),
                      ((1.2, 0.6, 1.0, 6, 6, 9), "1 <= L < H < R"), ((1.2, 0.6, 0.0, 3, 6, 9), "mu")):
        with pytest.raises(ValueError, match=name):
            ns["mean_cycle_time"](*bad)


def test_mm1_generated_c_agrees_with_eval(tmp_path):
    rows = [dict(zip(("lam0", "lam1", "mu", "L", "H", "R"), p)) for p in MM1_POINTS]
    bad = [dict(lam0=1.2, lam1=1.6, mu=1.0, L=3, H=6, R=9), dict(lam0=1.2, lam1=0.6, mu=1.0, L=3, H=6, R=9.5)]
    for measure in ("p_normal", "mean_return_time", "loss_probability", "throughput"):
        src = tmp_path / f"{measure}.c"
        code, _, err = cli(["codegen", "mm1-hysteretic", "--measure", measure, "--lang", "c", "--out", str(src)])
        assert code == 0, err
        values = run_generated_c(tmp_path, src, src.with_suffix(".h"), rows + bad)
        for point, value in zip(MM1_POINTS, values):
            assert _rel(value, _eval_mm1(point)[measure]) <= 1e-12, (point, measure)
        assert all(numpy.isnan(v) for v in values[len(rows):])  # invalid input: NaN


def test_generated_hysteretic_takes_the_load_instead_of_the_rate(tmp_path):
    """``load=`` rho_0 = lam0 l1 b1 (the model's --load): equal to `qderive eval hysteretic --load` at rho_0 = 1.5
    and 0.9 (the same kernel; the rate rounded once as load / (l1 b1): 1e-12 relative), the rate or the load."""
    out = tmp_path / "pd.py"
    code, err = codegen(out, "hysteretic", "--measure", "p_discard", "--batch", "geometric", "--service", "det")
    assert code == 0, err
    f = load_generated(out)["p_discard"]
    for load in (1.5, 0.9):
        code, js, err = cli(["eval", "hysteretic", "--batch", "geometric:mean=2", "--service", "det:mean=0.005",
                             "--load", str(load), "--overload-factor", "0.5", "--thresholds", "10,20,30", "--json"])
        assert code == 0, err
        want = json.loads(js)["measures"]["p_discard"]
        got = f(overload_factor=0.5, batch_mean=2.0, service_mean=0.005, L=10, H=20, R=30, load=load)
        assert got == pytest.approx(want, rel=1e-12, abs=0)
    # an array of loads (with an axis of overload factors) is solved point by point: the shape of the broadcast
    # arguments, each entry the point's own value (eval's, to 1e-12 relative as above, for the loads checked)
    grid = f(overload_factor=numpy.array([[0.5], [1.0]]), batch_mean=2.0, service_mean=0.005, L=10, H=20, R=30,
             load=numpy.array([1.5, 0.9]))
    assert grid.shape == (2, 2)
    for i, factor in enumerate((0.5, 1.0)):
        for j, load in enumerate((1.5, 0.9)):
            assert grid[i, j] == f(overload_factor=factor, batch_mean=2.0, service_mean=0.005, L=10, H=20, R=30,
                                   load=load)
    assert f(overload_factor=0.5, batch_mean=2.0, service_mean=0.005, L=10, H=20, R=30, load=numpy.array([])).shape == (0,)
    assert "solved one by one" in f.__doc__
    with pytest.raises(TypeError, match="one of them"):
        f(150.0, 0.5, 2.0, 0.005, 10, 20, 30, load=1.5)
