"""The documentation site builds strictly and reads right in a real browser.

One build per test session (``sphinx -W --keep-going``: any warning is an error; the notebooks
are executed by myst-nb, and a failing cell fails the build). Then the site is read as a
reader meets it:

* every internal ``href``/``src`` of every built page points at a file of the site, and a
  ``#fragment`` at an element with that id on the target page;
* every public class and function of ``import qderive as qd`` has its entry in the API
  reference, one page per family (laws, models, results, functions; every page well under
  1 MB), and the result records list their measures;
* every notebook page of ``docs/notebooks/*.ipynb`` exists and holds cell outputs, no error
  output, no "font cache" message, and a figure (an image) for every cell that draws one;
* every page loads MathJax (its navigation holds titles with math even where its body has none);
* the front page says what qderive does, gives the install line and a short example (its
  commands and outputs are checked by ``tests/test_tutorial.py``), names no ``.md`` file;
* pages opened in headless Chromium (all of :data:`BROWSER_PAGES` in one browser, each in a window-sized frame,
  their DOM read once MathJax has run: :func:`_typeset_pages`):
  math typeset (MathJax containers, no MathJax error box), no raw TeX (``$$``, ``\\frac``, ``\\(``,
  any ``\\command``) in the visible text outside code blocks, the navigation included, and no
  element of the page's content wider than the content column (measured by a script added to a
  copy of the page: an element inside a scrolling box counts only through that box).

Without the ``docs`` extra or without Chromium the build test is skipped with the reason;
``QDERIVE_REQUIRE_DOCS=1`` (set by ``.ci/run``) turns the skip into a failure.

Also here, without a build: no citation in the repository names a file that is not in it, and
the package metadata files (LICENSE, CITATION.cff, CHANGELOG.md) agree with ``pyproject.toml``.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import qderive as qd
from conftest import cli
from qderive.symbolic.laws import Law
from qderive.symbolic.models.base import Measures, Model
from qderive.derivations.capabilities import has as _has

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REQUIRED = os.environ.get("QDERIVE_REQUIRE_DOCS") == "1"
BUILD_MODULES = ("sphinx", "myst_parser", "myst_nb", "furo", "sphinx-mathjax-offline", "ipykernel", "matplotlib")
BROWSERS = ("chromium", "chromium-browser")
# the pages read in the browser (one Chromium process for all: about 7 s, where one process per page took 7 x 3-7 s):
# the tutorial, a theory page, a formula page, the front
# page, the guide with the widest displays, a page without math in its body (math in its navigation
# only) and a notebook with a figure
BROWSER_PAGES = ("tutorial.html", "theory/chapter2.html", "formulas/vacation-infinite.html", "index.html",
                 "guides/vacation-finite.html", "changelog.html", "notebooks/buffer-sizing.html")
#: the browser window (furo shows the navigation, the content column and the page's contents)
WINDOW = "1280,1000"


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


def _dump_dom(browser: str, url: str, profile: Path, budget_ms: int, *flags: str) -> str:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", *flags,
           f"--window-size={WINDOW}", f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
           "--dump-dom", url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and "<html" in proc.stdout, f"{url}: chromium failed\n{proc.stderr[-2000:]}"
    return proc.stdout


# added to a copy of a page: once MathJax has typeset it, every element of the page's text (furo's
# ``article``) whose box reaches beyond the content column (furo's ``div.content``, padding included),
# unless an ancestor inside the column
# clips or scrolls it (that ancestor is measured itself), is written into ``body[data-measure]``
MEASURE = """<script>
window.addEventListener("load", function () {
  function measure() {
    var main = document.querySelector("article[role=main]") || document.querySelector("article");
    var box = (main.closest(".content") || main).getBoundingClientRect(), wide = [];
    main.querySelectorAll("*").forEach(function (el) {
      var r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || (r.right <= box.right + 1 && r.left >= box.left - 1)) return;
      for (var a = el.parentElement; a && a !== main; a = a.parentElement) {
        if (/auto|scroll|hidden|clip/.test(getComputedStyle(a).overflowX)) return;
      }
      wide.push(el.tagName.toLowerCase() + "." + (el.getAttribute("class") || "") + " " +
                Math.round(r.left) + ".." + Math.round(r.right) + ": " + (el.textContent || "").slice(0, 50));
    });
    document.body.setAttribute("data-measure", JSON.stringify({column: [box.left, box.right], wide: wide}));
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(measure);
  else measure();
});
</script>"""
MEASURED = re.compile(r'data-measure="([^"]*)"')


# the page that reads several pages in one browser: each in a frame of the window's size (stacked at the top left,
# so that none is an off-screen frame whose rendering Chromium may throttle), its DOM copied into ``pre#page-N`` once
# the measuring script has written ``body[data-measure]`` (``--allow-file-access-from-files`` and
# ``--disable-web-security``: a file:// frame's document is readable by the file:// page around it)
FRAMES = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>html, body {margin: 0; overflow: hidden}
iframe {position: absolute; top: 0; left: 0; border: 0; width: 100vw; height: 100vh} pre {display: none}</style>
</head><body>FRAMES<script>
function collect() {
  var left = 0;
  document.querySelectorAll("pre[id^=page-]").forEach(function (out) {
    if (out.hasAttribute("data-done")) return;
    var doc = null;
    try { doc = document.getElementById("frame-" + out.id.slice(5)).contentDocument; } catch (e) {}
    if (doc && doc.body && doc.body.hasAttribute("data-measure")) {
      out.textContent = doc.documentElement.outerHTML;
      out.setAttribute("data-done", "1");
    } else left++;
  });
  if (left) setTimeout(collect, 50);
}
window.addEventListener("load", collect);
</script></body></html>"""


def _measured_copy(path: Path) -> tuple[Path, int]:
    """A copy of a built page with :data:`MEASURE` added, next to it (its relative links still resolve), and the
    number of math elements of the built page."""
    html = path.read_text(encoding="utf-8")
    copy = path.with_name(f"{path.stem}-measured.html")
    copy.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    return copy, html.count('class="math notranslate nohighlight"')


def _read_page(dom: str, expected: int) -> _Page:
    """A dumped DOM as a :class:`_Page`, with ``expected_math`` and ``measure`` (what :data:`MEASURE` found)."""
    page = _Page()
    page.feed(dom)
    measured = MEASURED.search(dom)
    page.expected_math = expected
    page.measure = json.loads(unescape(measured.group(1))) if measured else None
    return page


def _complete(page: _Page) -> bool:
    """Every math element typeset, the measuring script run, no raw TeX left (MathJax done)."""
    return (page.measure is not None and page.tags.get("mjx-container", 0) >= page.expected_math
            and not RAW_TEX.search(" ".join(page.text)))


def _typeset_pages(browser: str, html: Path, names, profile: Path) -> dict:
    """name -> the page as Chromium shows it once MathJax has typeset it (:func:`_typeset_page`), for all ``names``
    in one browser process: a page of frames (:data:`FRAMES`), one per page, in a window of :data:`WINDOW`, so
    each page is laid out in the same viewport as on its own. A page that the one dump did not show complete (a
    loaded machine) is read again on its own by :func:`_typeset_page`, with its longer budgets."""
    copies = [_measured_copy(html / name) for name in names]
    frames = "".join(f'<iframe id="frame-{i}" src="{copy.relative_to(html).as_posix()}"></iframe><pre id="page-{i}">'
                     "</pre>" for i, (copy, _) in enumerate(copies))
    harness = html / "_browser-pages.html"
    harness.write_text(FRAMES.replace("FRAMES", frames), encoding="utf-8")
    dom = _dump_dom(browser, harness.as_uri(), profile, 20000, "--allow-file-access-from-files",
                    "--disable-web-security")
    pages = {}
    for i, (name, (copy, expected)) in enumerate(zip(names, copies)):
        found = re.search(rf'<pre id="page-{i}" data-done="1">(.*?)</pre>', dom, re.S)
        page = _read_page(unescape(found.group(1)), expected) if found else None
        copy.unlink()
        pages[name] = page if page is not None and _complete(page) else _typeset_page(
            browser, html / name, profile.with_name(f"{profile.name}-{i}"))
    harness.unlink()
    return pages


def _typeset_page(browser: str, path: Path, profile: Path) -> _Page:
    """The page as Chromium shows it once MathJax has typeset every math element of the built HTML.

    MathJax typesets asynchronously (the formulas of the text, then those of titles in the page's
    navigation): a dump taken before it is done (a loaded machine) is taken again with a longer
    budget, up to three times; the last dump is returned either way. The page read is a copy with
    :data:`MEASURE` added (next to the page, so that its relative links still resolve);
    ``page.measure`` is what that script found.
    """
    copy, expected = _measured_copy(path)
    for attempt, budget in enumerate((10000, 30000, 60000)):
        page = _read_page(_dump_dom(browser, copy.as_uri(), profile.with_name(f"{profile.name}-{attempt}"), budget),
                          expected)
        if _complete(page):
            break
    copy.unlink()
    return page


RAW_TEX = re.compile(r"\$\$|\\frac|\\\(|\\\[|\\[a-zA-Z]{2,}")


@pytest.mark.slow  # the strict site build and Chromium: about a minute
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
    families = ("laws", "models", "results", "functions")
    family_ids = {f: pages[f"api/{f}.html"].ids for f in families}
    for obj in public:
        target = f"{obj.__module__}.{obj.__qualname__}"
        family = "functions"
        if inspect.isclass(obj):
            for family, base in (("laws", (Law, qd.BatchLaw)), ("models", Model), ("results", Measures),
                                 ("functions", object)):
                if issubclass(obj, base):
                    break
        assert target in family_ids[family], f"{target} is not on api/{family}.html"
    results = (html / "api" / "results.html").read_text(encoding="utf-8")
    for key in ("loss_probability", "mean_wait", "p_discard", "mean_cycle_time"):
        assert f'<span class="pre">{key}</span></code></dt>' in results, f"measure {key} not in the reference"
    sizes = {name: (html / name).stat().st_size for name in pages if name.startswith("api/")}
    assert max(sizes.values()) < 400_000, f"an API page of {max(sizes.values())} bytes: {max(sizes, key=sizes.get)}"

    # 3. every notebook was executed: a page with outputs, no error output, a figure for every cell that draws one
    notebooks = sorted((DOCS / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 4, notebooks
    drawn = 0
    for path in notebooks:
        text = (html / "notebooks" / f"{path.stem}.html").read_text(encoding="utf-8")
        assert text.count("cell_output") >= 2, f"notebook {path.stem}: no outputs (not executed?)"
        assert "output error" not in text and "Traceback" not in text, f"notebook {path.stem}: an error output"
        assert "font cache" not in text, f"notebook {path.stem}: matplotlib's font-cache message in an output"
        assert not re.search(r"&lt;matplotlib\.[\w.]+ (object )?at 0x", text), (
            f"notebook {path.stem}: a matplotlib object's repr shown as output")
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        figures = sum("plt." in "".join(c["source"]) for c in cells if c["cell_type"] == "code")
        images = len(re.findall(r'<div class="cell_output[^"]*">(?:(?!<div class="cell[ "]).)*?<img ', text, re.S))
        assert images >= figures, f"notebook {path.stem}: {figures} cells draw a figure, {images} images shown"
        drawn += figures
    assert drawn >= 3, "the notebooks draw fewer than three figures"

    # 4. MathJax on every page (the navigation of every page holds titles with math); the front page
    without = [name for name, page in pages.items() if not any("mathjax" in link.lower() for link in page.links)]
    assert not without, f"pages without MathJax: {without[:10]}"
    front = pages["index.html"]
    front_text = " ".join(front.text)
    front_html = (html / "index.html").read_text(encoding="utf-8")
    front_all = unescape(re.sub(r"<[^>]+>", "", front_html))  # code blocks included, highlighting removed
    assert "pip install" in front_all and "qd.VacationQueue.from_load(" in front_all and "qderive eval" in front_all, (
        "front page: no install line or example")
    assert "derives, verifies, exports and evaluates" in front_text
    assert "Building this site" not in front_text
    md_names = re.findall(r">([^<>]*\.md)</", front_html)
    assert not md_names, f"front page: links named after files: {md_names}"

    # 5. in a real browser: math typeset by MathJax, no raw TeX in the visible text (navigation included),
    #    nothing wider than the content column
    browser = _browser()
    if browser is None:
        _unavailable("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    for name, page in _typeset_pages(browser, html, BROWSER_PAGES, tmp_path / "profile").items():
        visible = " ".join(page.text)
        typeset = page.tags.get("mjx-container", 0)
        assert typeset >= max(1, page.expected_math), (
            f"{name}: MathJax typeset {typeset} of {page.expected_math} formulas (and the navigation's)")
        assert not page.tags.get("mjx-merror"), f"{name}: MathJax reports a TeX error"
        raw = [visible[max(0, m.start() - 60):m.end() + 40] for m in RAW_TEX.finditer(visible)]
        assert not raw, f"{name}: raw TeX in the visible text: {raw[:5]}"
        assert page.measure is not None, f"{name}: the measuring script did not run"
        assert not page.measure["wide"], (f"{name}: wider than the content column {page.measure['column']}: "
                                          f"{page.measure['wide'][:5]}")
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
    assert project["license"] == "MIT"  # an SPDX expression (PEP 639)
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
