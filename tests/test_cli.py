"""The command line: generated from the models; one clear line and exit 2 for every bad input;
output paths checked before any work; --version, --limit, list, derive (LaTeX that compiles)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import cli
from qderive.symbolic.models import registered_models
from qderive.derivations.capabilities import has as _has

FINITE = ["eval", "vacation-finite", "--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015",
          "--vacation", "exp:mean=0.075", "--load", "0.6"]


def test_every_model_has_an_eval_subcommand_with_its_record_keys():
    for name, cls in registered_models().items():
        code, out, err = cli(["eval", name, "--help"])
        assert code == 0 or "usage" in out + err
        assert cls.measures.keys(), name


def test_version_and_list():
    proc = subprocess.run([sys.executable, "-m", "qderive.derivations.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("qderive ")
    code, out, _ = cli(["list"])
    assert code == 0 and all(name in out for name in registered_models())
    code, out, _ = cli(["list", "--limits"])
    assert code == 0 and "capacity" in out


def test_distribution_and_parameters_echo():
    code, out, _ = cli(FINITE + ["--capacity", "8", "--distribution", "--json"])
    doc = json.loads(out)
    assert code == 0 and len(doc["measures"]["p"]) == 9 and abs(sum(doc["measures"]["p"]) - 1) < 1e-14
    assert doc["parameters"]["capacity"] == 8 and doc["parameters"]["service"] == "erlang:k=4,mean=0.015"


@pytest.mark.parametrize("extra, fragment", [
    (["--capacity", "0"], "--capacity = 0: must be >= 1"),
    (["--capacity", "1e9"], "--limit capacity="),
    (["--capacity", "2.5"], "--capacity"),
    (["--capacity", "8", "--vacation-policy", "sometimes"], "invalid choice"),
    (["--capacity", "8", "--digits", "0"], "digits"),
    (["--capacity", "8", "--digits", "100000"], "--limit digits="),
])
def test_bad_finite_queue_input(extra, fragment):
    code, out, err = cli(FINITE + extra)
    assert code == 2 and out == "" and fragment in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("law, fragment", [
    ("exp:mean=0", "--vacation exp:mean=0: mean must be > 0"),
    ("erlang:k=2,mean=0.01,mean=0.02", "mean is given twice"),
    ("erlang:k=2", "(missing: mean)"),
    ("weibull:shape=2", "unknown time law 'weibull'"),
])
def test_bad_laws_name_the_option(law, fragment):
    argv = ["eval", "vacation-finite", "--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015",
            "--vacation", law, "--load", "0.6", "--capacity", "8"]
    code, _, err = cli(argv)
    assert code == 2 and fragment in err


def test_a_limit_can_be_raised():
    code, out, err = cli(FINITE + ["--capacity", "200001", "--limit", "capacity=10", "--json"])
    assert code == 2 and "--limit capacity=200001" in err
    code, out, _ = cli(FINITE + ["--capacity", "20", "--limit", "capacity=20", "--json"])
    assert code == 0


def test_output_paths_are_checked_before_computing(tmp_path):
    code, _, err = cli(["derive", "vacation-infinite", "--latex", str(tmp_path / "missing" / "x.tex")])
    assert code == 2 and "does not exist" in err
    code, _, err = cli(["derive", "vacation-infinite", "--markdown", str(tmp_path)])
    assert code == 2 and "is a directory" in err
    code, _, err = cli(["figure", "fig1", "--csv", str(tmp_path / "nope" / "f.csv")])
    assert code == 2 and "does not exist" in err


def test_derive_exports_its_own_recursions_only(tmp_path):
    """The vacation model's export has its recursions; a fragment has no preamble. (That no other model's
    export carries the vacation recursions is checked on every model's full export by the compile test.)"""
    tex, md = tmp_path / "v.tex", tmp_path / "v.md"
    assert cli(["derive", "vacation-infinite", "--latex", str(tex), "--markdown", str(md)])[0] == 0
    assert "\\begin{algorithmic}" in tex.read_text() and "(6)" in md.read_text()
    out = tmp_path / "e.tex"  # erlang-b: a model with a recursion of its own (0.6 s; mm1-hysteretic's 1.0 s)
    assert cli(["derive", "erlang-b", "--latex", str(out), "--fragment"])[0] == 0
    assert "Cut recursion (2b)" not in out.read_text() and "\\documentclass" not in out.read_text()


def _require_tex() -> bool:
    return os.environ.get("QDERIVE_REQUIRE_TEX") == "1"


@pytest.mark.skipif(shutil.which("pdflatex") is None and not _require_tex(),
                    reason="pdflatex is not installed (.ci/run installs it and sets QDERIVE_REQUIRE_TEX=1)")
@pytest.mark.parametrize("name", sorted(n for n, c in registered_models().items() if _has(c, "derivation")))
def test_exported_tex_compiles_with_pdflatex(tmp_path, name):
    """Every model's export compiles (one pdflatex run) with no overfull box: long results are broken over
    rows, long words in the text may break (the issue-15 criterion, read from pdflatex's own log)."""
    assert shutil.which("pdflatex"), "pdflatex is required here (QDERIVE_REQUIRE_TEX=1)"
    tex = tmp_path / "d.tex"
    assert cli(["derive", name, "--latex", str(tex)])[0] == 0
    if not name.startswith("vacation"):  # each model exports its own recursions only
        assert "Cut recursion (2b)" not in tex.read_text()
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:]
    log = (tmp_path / "d.log").read_text(errors="replace")
    overfull = [line for line in log.splitlines() if line.startswith("Overfull")]
    assert not overfull, overfull


def test_console_script_in_a_subprocess():
    proc = subprocess.run([sys.executable, "-m", "qderive.derivations.cli", *FINITE, "--capacity", "20", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert 0 < json.loads(proc.stdout)["measures"]["loss_probability"] < 1


def test_derive_writes_to_the_standard_output_with_a_dash(tmp_path, monkeypatch):
    # "-" is the standard output (as Unix tools read it), not a file named "-"
    import contextlib
    import io

    from qderive.derivations.cli import main

    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["derive", "erlang-b", "--markdown", "-"]) == 0
    assert out.getvalue().startswith("#") and "$$" in out.getvalue()
    assert not (tmp_path / "-").exists()
