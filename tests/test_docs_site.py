"""The documentation site builds strictly and reads right in a real browser.

One build per test session (``sphinx -W --keep-going``: any warning is an error; the notebooks
are executed by myst-nb, and a failing cell fails the build). Then the site is read as a
reader meets it:

* every internal ``href``/``src`` of every built page points at a file of the site, and a
  ``#fragment`` at an element with that id on the target page;
* every public class and function of ``import qderive as qd`` has its entry in the API
  reference, and the result records list their measures;
* every notebook page of ``docs/notebooks/*.ipynb`` exists and holds cell outputs and no error
  output;
* pages opened in headless Chromium (``--dump-dom`` after MathJax has run): the tutorial, a theory
  page and a formula page have typeset math (MathJax containers, no MathJax
  error box) and their visible text outside code blocks contains no raw TeX (``$$``, ``\\frac``,
  ``\\(``, any ``\\command``).

Without the ``docs`` extra or without Chromium the build test is skipped with the reason;
``QDERIVE_REQUIRE_DOCS=1`` (set by ``.ci/run``) turns the skip into a failure.

Also here, without a build: no citation in the repository names a file that is not in it, and
the package metadata files (LICENSE, CITATION.cff, CHANGELOG.md) agree with ``pyproject.toml``.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import qderive as qd
from conftest import cli
from qderive.derivations.capabilities import has as _has

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REQUIRED = os.environ.get("QDERIVE_REQUIRE_DOCS") == "1"
BUILD_MODULES = ("sphinx", "myst_parser", "myst_nb", "furo", "sphinx-mathjax-offline", "ipykernel", "matplotlib")
BROWSERS = ("chromium", "chromium-browser")
# the pages read in the browser (about 3 s each): the tutorial, a theory page, a formula page
BROWSER_PAGES = ("tutorial.html", "theory/chapter2.html", "formulas/vacation-infinite.html")


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (QDERIVE_REQUIRE_DOCS=1: the docs test is mandatory here)")
    pytest.skip(reason)


def _browser() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


class _Page(HTMLParser):
    """The ids, the internal links and the visible text (outside code blocks) of one HTML page."""

    SKIP = {"head", "title", "script", "style", "noscript", "template", "svg"}
    CODE = {"pre", "code", "kbd", "samp"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.text: list[str] = []
        self.tags: dict[str, int] = {}
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for key in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) and tag in ("a", "link", "img", "script", "source", "iframe"):
                self.links.append(attrs[key])
        if tag not in self.VOID:
            self._stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self._stack:
            while self._stack and self._stack.pop() != tag:
                pass

    def handle_data(self, data):
        if not (self.SKIP | self.CODE).intersection(self._stack):
            self.text.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built once, strictly, into a temporary folder: (html folder, build seconds)."""
    missing = [name for name in BUILD_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        _unavailable(f"the docs extra is not installed (missing {', '.join(missing)}): pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, "the strict build failed:\n" + (proc.stderr + proc.stdout)[-6000:]
    return out / "html", seconds


def _dump_dom(browser: str, url: str, profile: Path, budget_ms: int) -> str:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom", url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and "<html" in proc.stdout, f"{url}: chromium failed\n{proc.stderr[-2000:]}"
    return proc.stdout


def _typeset_page(browser: str, path: Path, profile: Path) -> _Page:
    """The page as Chromium shows it once MathJax has typeset every math element of the built HTML.

    MathJax typesets asynchronously (the formulas of the text, then those of titles in the page's
    navigation): a dump taken before it is done (a loaded machine) is taken again with a longer
    budget, up to three times; the last dump is returned either way.
    """
    expected = path.read_text(encoding="utf-8").count('class="math notranslate nohighlight"')
    assert expected >= 3, f"{path.name}: only {expected} math elements in the built page"
    for attempt, budget in enumerate((10000, 30000, 60000)):
        page = _Page()
        page.feed(_dump_dom(browser, path.as_uri(), profile.with_name(f"{profile.name}-{attempt}"), budget))
        if page.tags.get("mjx-container", 0) >= expected and not RAW_TEX.search(" ".join(page.text)):
            break
    page.expected_math = expected
    return page


RAW_TEX = re.compile(r"\$\$|\\frac|\\\(|\\\[|\\[a-zA-Z]{2,}")


def test_site_builds_strictly_and_reads_right_in_a_browser(site, tmp_path):
    html, seconds = site
    pages = {path.relative_to(html).as_posix(): _parse(path) for path in html.rglob("*.html")}
    assert "index.html" in pages and len(pages) >= 30, sorted(pages)

    # 0. a formula page for every registered derivation, generated at build time: what
    #    ``qderive derive NAME --markdown`` writes (compared for one model; the build wrote them all)
    derived = sorted(n for n, cls in qd.models().items() if _has(cls, "derivation"))
    assert [n for n in derived if f"formulas/{n}.html" not in pages] == [], "formula pages missing"
    fresh = tmp_path / "erlang-b.md"
    code, _, err = cli(["derive", "erlang-b", "--markdown", str(fresh)])
    assert code == 0 and fresh.read_text(encoding="utf-8") == (DOCS / "formulas" / "erlang-b.md").read_text(
        encoding="utf-8"), err

    # 1. no broken internal link: files exist, fragments are ids of the target page
    broken = []
    for name, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue
            target = (html / name).parent / unquote(parts.path) if parts.path else html / name
            target = target.resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or html.resolve() not in target.parents:
                broken.append(f"{name}: {link} (no file)")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target.relative_to(html.resolve()).as_posix()].ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{name}: {link} (no id {parts.fragment!r})")
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(broken[:40])

    # 2. the public API is in the reference: every class and function of ``qd`` has its entry where
    #    it is defined, and a result record lists its measures (the keys of ``qderive eval --json``)
    api_ids = set().union(*(page.ids for name, page in pages.items() if name.startswith("api/")))
    public = [getattr(qd, name) for name in qd.__all__]
    public = [obj for obj in public if inspect.isclass(obj) or inspect.isfunction(obj)]
    undocumented = [f"{obj.__module__}.{obj.__qualname__}" for obj in public
                    if f"{obj.__module__}.{obj.__qualname__}" not in api_ids]
    assert len(public) >= 40 and not undocumented, f"not in the API reference: {undocumented}"
    symbolic = (html / "api" / "symbolic.html").read_text(encoding="utf-8")
    for key in ("loss_probability", "mean_wait", "p_discard", "mean_cycle_time"):
        assert f'<span class="pre">{key}</span></code></dt>' in symbolic, f"measure {key} not in the reference"

    # 3. every notebook was executed: a page with outputs and no error output
    notebooks = sorted(p.stem for p in (DOCS / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 4, notebooks
    for stem in notebooks:
        text = (html / "notebooks" / f"{stem}.html").read_text(encoding="utf-8")
        assert text.count("cell_output") >= 2, f"notebook {stem}: no outputs (not executed?)"
        assert "output error" not in text and "Traceback" not in text, f"notebook {stem}: an error output"

    # 4. in a real browser: math typeset by MathJax, no raw TeX in the visible text
    browser = _browser()
    if browser is None:
        _unavailable("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    for name in BROWSER_PAGES:
        page = _typeset_page(browser, html / name, tmp_path / f"profile-{name.replace('/', '-')}")
        visible = " ".join(page.text)
        typeset = page.tags.get("mjx-container", 0)
        assert typeset >= page.expected_math, f"{name}: MathJax typeset {typeset} of {page.expected_math} formulas"
        assert not page.tags.get("mjx-merror"), f"{name}: MathJax reports a TeX error"
        raw = [visible[max(0, m.start() - 60):m.end() + 40] for m in RAW_TEX.finditer(visible)]
        assert not raw, f"{name}: raw TeX in the visible text: {raw[:5]}"
    print(f"docs site: {len(pages)} pages built in {seconds:.1f} s")


# -- without a build ------------------------------------------------------------------------------

CITATION = re.compile(r"(?<![\w./-])((?:docs|spec|shared|seeds|tests|benchmarks|symbolic|numeric|derivations)"
                      r"/[\w./-]*[\w-]\.(?:md|ipynb|bib|cff|txt|py|csv|png|tex|toml))\b")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cff", ".bib", ".ipynb", ".txt", ".cfg", ".yml", ".yaml"}


def _tracked_text_files():
    try:
        listed = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
        files = [ROOT / line for line in listed.splitlines()]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file of the tree
        files = [p for p in ROOT.rglob("*") if ".git" not in p.parts]
    return [p for p in files if p.suffix in TEXT_SUFFIXES and p.is_file()]


def test_every_cited_file_is_in_the_repository():
    """A path such as ``docs/theory/chapter2.md`` named in a docstring, a page or a test exists.

    Placeholders (a component in capitals: ``docs/formulas/NAME.md``) are templates, not citations.
    """
    missing = []
    for path in _tracked_text_files():
        for match in CITATION.finditer(path.read_text(encoding="utf-8", errors="replace")):
            cited = match.group(1)
            if any(part.isupper() for part in re.split(r"[/.]", cited)):
                continue
            if not (ROOT / cited).exists():
                missing.append(f"{path.relative_to(ROOT)}: {cited}")
    assert not missing, f"{len(missing)} citations of files that are not in the repository:\n" + "\n".join(
        sorted(set(missing))[:40])


def test_metadata_files_agree_with_the_package():
    """LICENSE is the license pyproject declares, CITATION.cff and CHANGELOG.md name the version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"]["text"] == "MIT"
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License") and "qderive developers" in license_text
    for key in ("Homepage", "Documentation", "Source", "Issues", "Changelog"):
        assert project["urls"][key].startswith("https://"), key
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^cff-version: 1\.2\.0$", cff, re.M)
    assert re.search(rf"^version: {re.escape(project['version'])}$", cff, re.M)
    assert re.search(r"^license: MIT$", cff, re.M) and "family-names: Sopin" in cff and "year: 2013" in cff
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {project['version']}" in changelog and "## 0.1.0" in changelog
