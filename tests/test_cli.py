"""The command-line contract of the foundation issue: shapes, exact parsing, clear errors."""

import json
import subprocess
import sys
from fractions import Fraction

import mpmath
import pytest

from qderive.derivations.cli import main

EVAL = ["eval", "vacation-infinite", "--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015",
        "--vacation", "exp:mean=0.075"]


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _expected_wait(load):
    """(6) by hand with exact fractions for these laws: geometric mean 5 (l2 = 45), Erlang-4 mean 3/200
    (b2 = 5/4 * b1^2), exponential vacation mean 3/40 (f2 = 2 f1^2)."""
    l1, l2 = 5, 45
    b1 = Fraction(3, 200)
    b2 = Fraction(5, 4) * b1**2
    f1 = Fraction(3, 40)
    f2 = 2 * f1**2
    lam = load / (l1 * b1)
    return f2 / (2 * f1) + lam * l1 * b2 / (2 * (1 - load)) + (l2 - l1) * b1 / (2 * l1 * (1 - load)), lam


def test_eval_json_shape_and_values(capsys):
    code, out, _ = _run(capsys, EVAL + ["--load", "0.6", "--json"])
    assert code == 0
    doc = json.loads(out)
    assert doc["model"] == "vacation-infinite" and doc["precision"] == "float64"
    assert set(doc["measures"]) == {"q0", "idle_probability", "mean_queue_length", "mean_wait",
                                    "queue_length_variance", "mean_number_in_system"}
    W, lam = _expected_wait(Fraction(3, 5))
    assert abs(doc["measures"]["mean_wait"] - float(W)) <= 1e-13 * float(W)
    assert abs(doc["measures"]["mean_queue_length"] - float(lam * 5 * W)) <= 1e-13 * float(lam * 5 * W)
    assert abs(doc["measures"]["idle_probability"] - 0.4) < 1e-15


def test_eval_digits_gives_strings_with_40_correct_digits(capsys):
    code, out, _ = _run(capsys, EVAL + ["--rate", "8", "--digits", "50", "--json"])
    assert code == 0
    doc = json.loads(out)
    assert doc["precision"] == 50
    W, _ = _expected_wait(Fraction(3, 5))  # rate 8 = load 0.6 here
    with mpmath.workdps(60):
        got = mpmath.mpf(doc["measures"]["mean_wait"])
        ref = mpmath.mpf(W.numerator) / W.denominator
        assert abs(got - ref) <= mpmath.mpf(10) ** -45 * ref
        q0 = mpmath.mpf(doc["measures"]["q0"])
        # q0 = (1 - rho_bar)/(1 - rho_bar + alpha_bar), alpha_bar = 8 * 5 * 3/40 = 3
        assert abs(q0 - mpmath.mpf(2) / 5 / (mpmath.mpf(2) / 5 + 3)) < mpmath.mpf(10) ** -45


@pytest.mark.parametrize("extra, fragment", [
    (["--load", "1.2"], "rho_bar = 6/5 >= 1"),
    (["--load", "abc"], "--load = 'abc' is not a number"),
    (["--load", "-0.5"], "--load = -1/2: must be > 0"),
])
def test_bad_input_exits_2_with_one_clear_line(capsys, extra, fragment):
    code, out, err = _run(capsys, EVAL + extra)
    assert code == 2 and out == ""
    assert fragment in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_laws(capsys):
    for law, fragment in (("weibull:mean=1", "unknown law 'weibull'"), ("erlang:k=2", "expects erlang:k=...,mean=...")):
        code, _, err = _run(capsys, ["eval", "vacation-infinite", "--batch", "const:n=1", "--service", law,
                                     "--vacation", "exp:mean=1", "--load", "0.5"])
        assert code == 2 and fragment in err


def test_list_and_derive(capsys, tmp_path):
    code, out, _ = _run(capsys, ["list"])
    assert code == 0 and "vacation-infinite" in out
    md, tex = tmp_path / "vi.md", tmp_path / "vi.tex"
    code, _, _ = _run(capsys, ["derive", "vacation-infinite", "--markdown", str(md), "--latex", str(tex)])
    assert code == 0
    assert "(6)" in md.read_text() and "\\begin{document}" in tex.read_text()
    assert "\\begin{algorithmic}" in tex.read_text()  # the recursions, rendered by latexify-py


def test_verify_runs_and_reports(capsys):
    code, out, _ = _run(capsys, ["verify", "vacation-infinite", "--json"])
    doc = json.loads(out)
    assert code == 0 and doc["passed"] and len(doc["checks"]) >= 8


def test_console_script_runs_in_a_subprocess():
    proc = subprocess.run([sys.executable, "-m", "qderive.derivations.cli", "eval", *EVAL[1:], "--load", "0.3", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["measures"]["idle_probability"] == pytest.approx(0.7, rel=1e-15)


def test_exported_tex_compiles_with_pdflatex(tmp_path, capsys):
    """The standalone .tex compiles (pdflatex is installed by .ci/run where missing)."""
    import shutil

    assert shutil.which("pdflatex"), "pdflatex is required (Debian: texlive-latex-base texlive-latex-extra texlive-science)"
    tex = tmp_path / "vi.tex"
    assert main(["derive", "vacation-infinite", "--latex", str(tex)]) == 0
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp_path / "vi.pdf").stat().st_size > 1000
