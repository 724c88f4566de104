"""Ready to publish: the package metadata, the README as PyPI shows it, the version, and the built distributions.

* pyproject: an SPDX license expression (PEP 639) with its license file, classifiers and keywords, no
  "License ::" classifier (setuptools >= 77 refuses both);
* README links are absolute (PyPI renders the README without the repository: a relative link is dead there);
* the newest released CHANGELOG section is the version the code reports (``qderive --version`` reads the
  installed distribution's metadata, which setuptools takes from pyproject's ``version``);
* ``python -m build`` makes an sdist and a wheel that ``twine check --strict`` accepts, whose metadata carry the
  license expression, and whose wheel holds the three code folders (as CI does before a release).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
REPO = "https://github.com/qderive/qderive"


def test_license_is_an_spdx_expression_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert not any(c.startswith("License ::") for c in project["classifiers"])
    assert any(c.startswith("Intended Audience :: Science/Research") for c in project["classifiers"])
    assert "queueing theory" in project["keywords"]
    requires = PYPROJECT["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in requires)
    assert project["urls"]["Source"] == REPO


def test_readme_links_work_on_pypi():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links, "the README links to its documentation"
    relative = [link for link in links if not re.match(r"https?://", link)]
    assert not relative, f"relative links are dead on PyPI: {relative}"
    for link in links:
        if link.startswith(REPO + "/blob/main/") or link.startswith(REPO + "/tree/main/"):
            path = link.split("/main/", 1)[1]
            assert (ROOT / path).exists(), f"{link}: no {path} in the repository"


def test_newest_released_changelog_section_is_the_version():
    reported = version("qderive")
    assert reported == PYPROJECT["project"]["version"]
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## (\d+\.\d+\.\d+(?:\S*)) — \d{4}-\d{2}-\d{2}$", text, re.M)
    assert released and released[0] == reported, (f"qderive --version says {reported}; the newest released "
                                                  f"CHANGELOG section is {released[:1]}")


@pytest.mark.slow
def test_build_and_twine_check(tmp_path):
    """sdist + wheel (the wheel built from the sdist, as ``python -m build`` does), ``twine check --strict``;
    without build isolation (setuptools >= 77, build and twine come with the test extra): about 10 s."""
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    dists = sorted(tmp_path.iterdir(), key=lambda p: p.suffix)  # the sdist (.gz), then the wheel
    assert [p.suffix for p in dists] == [".gz", ".whl"], dists
    check = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    with zipfile.ZipFile(dists[1]) as wheel:
        names = wheel.namelist()
        meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    assert f"Version: {PYPROJECT['project']['version']}" in meta
    for module in ("qderive/__init__.py", "qderive/symbolic/distribution.py", "qderive/numeric/kernels/vacation.py",
                   "qderive/derivations/cli/__init__.py"):
        assert module in names, module
