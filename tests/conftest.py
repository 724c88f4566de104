"""Shared fixtures: mpmath precision is restored after every test."""

import mpmath
import pytest


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
    import os
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
    from pathlib import Path

    path = Path(path)
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - our own generated file
    return namespace
