"""Shared fixtures and helpers.

* mpmath precision is restored after every test;
* the cache is a private temporary directory for the whole session (the default path, cache on,
  is what runs here; ``tests/test_cache.py`` runs with it off, and with unsafe directories);
* helpers to run generated modules where qderive is not importable, and generated C;
* :func:`codegen`: a generated Python module once per set of options in a session;
* bytecode is written even where PYTHONDONTWRITEBYTECODE is set (as on the project's machines): otherwise every
  xdist worker rewrites the asserts of every test module and compiles every qderive module again, in every run
  (about 4 s of CPU per process, and each `python -m qderive` subprocess of a test compiles the package again).
"""

import os
import sys
import tempfile

sys.dont_write_bytecode = False  # the rewritten test modules and the package's .pyc land in __pycache__ (ignored by git)

import mpmath
import pytest

_CACHE = tempfile.mkdtemp(prefix="qderive-test-cache-")
os.chmod(_CACHE, 0o700)
os.environ.setdefault("QDERIVE_CACHE", _CACHE)


@pytest.hookimpl(tryfirst=True)  # before the mark plugin deselects by -m
def pytest_collection_modifyitems(config, items):
    """The development loop (``-m "not slow"``) runs every test function once: of a parametrised test, its first
    case that is not ``slow`` already; the other cases are marked ``slow`` here, so the full suite (CI) runs them
    all. The cases of a parametrisation are the same check at other laws, loads, seeds or precisions, and the loop
    is for fast feedback on a change (it reaches every test function, hence every code path a test names). A test
    whose cases are different code paths that the loop must see, and cheap, carries ``@pytest.mark.every_case``."""
    kept = set()
    for item in items:
        if getattr(item, "callspec", None) is None or item.get_closest_marker("every_case"):
            continue
        if item.get_closest_marker("slow"):
            continue
        function = item.nodeid.split("[", 1)[0]
        if function in kept:
            item.add_marker(pytest.mark.slow)
        else:
            kept.add(function)


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    prec = mpmath.mp.prec
    yield
    mpmath.mp.prec = prec


def run_standalone(directory, script: str, timeout: int = 120) -> str:
    """Run ``script`` with ``python -S`` in ``directory``, where only numpy (and ``directory``) is importable.

    -S skips site processing, so the editable install of qderive is invisible; the script fails
    if qderive can be imported. Returns stdout; a failed run fails the test with its stderr.
    """
    import subprocess
    import sys
    from pathlib import Path

    import numpy

    site = str(Path(numpy.__file__).resolve().parent.parent)
    prologue = (
        "import sys\n"
        f"sys.path[:0] = [{str(directory)!r}, {site!r}]\n"
        "try:\n    import qderive\nexcept ImportError:\n    pass\nelse:\n    raise SystemExit('qderive importable')\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", prologue + script], capture_output=True, text=True,
                          timeout=timeout, cwd=directory,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc.stdout


def run_generated_c(directory, source, header, arguments):
    """Compile the generated C ``source`` (with ``header``) and call its function once per row of
    ``arguments`` (dicts parameter name -> value, the names read from the header); return the results."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is required"
    decl = next(line for line in header.read_text().splitlines() if line.startswith("double "))
    fname = decl.split()[1].split("(")[0]
    names = [p.split()[-1] for p in decl.split("(", 1)[1].split(")")[0].split(",")]
    calls = "\n".join(f'    printf("%.17g\\n", {fname}({", ".join(repr(float(row[n])) for n in names)}));'
                      for row in arguments)
    main_c = directory / "main.c"
    main_c.write_text(f'#include <stdio.h>\n#include "{header.name}"\nint main(void) {{\n{calls}\n    return 0;\n}}\n')
    exe = directory / "prog"
    subprocess.run([cc, "-O2", "-o", str(exe), str(source), str(main_c), "-lm"], check=True, cwd=directory)
    return [float(v) for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]


def load_generated(path) -> dict:
    """The namespace of a generated Python module, executed in this process (for vectorisation checks)."""
    import importlib.util
    from pathlib import Path

    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"generated_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def cli(argv):
    """Run the command line in-process: (exit status, stdout, stderr)."""
    import contextlib
    import io

    from qderive.derivations.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


_GENERATED: dict = {}


def codegen(out, *argv):
    """``qderive codegen ARGV --out OUT`` (a Python module) in-process, run once per ARGV in a session: the text
    does not depend on the output path (checked: two runs with different paths are byte-identical), so a later
    call writes the first run's text to its OUT (each run costs 0.1-0.7 s, and several tests generate the same
    module). Returns (exit status, stderr) of the run."""
    from pathlib import Path

    out = Path(out)
    assert out.suffix == ".py" and "--lang" not in argv, "Python modules only (C writes a header too)"
    if argv in _GENERATED:
        out.write_text(_GENERATED[argv], encoding="utf-8")
        return 0, ""
    code, _, err = cli(["codegen", *argv, "--out", str(out)])
    if code == 0:
        _GENERATED[argv] = out.read_text(encoding="utf-8")
    return code, err
