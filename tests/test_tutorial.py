"""The tutorial works as written: each `$ qderive ...` command runs and prints (at least) the
numbers shown, and each `>>>` example runs (doctest), in a scratch folder."""

import doctest
import json
import os
import re
import shlex
from pathlib import Path

import pytest

from qderive.derivations.cli import main

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
TEXT = TUTORIAL.read_text(encoding="utf-8")
CONSOLE = re.findall(r"```console\n(.*?)```", TEXT, flags=re.S)


def _steps():
    for block in CONSOLE:
        lines = block.strip("\n").splitlines()
        cmd = lines[0]
        assert cmd.startswith("$ qderive ")
        yield cmd[2:], "\n".join(lines[1:]).strip()


def _close(shown, got):
    if isinstance(shown, dict):
        return all(k in got and _close(v, got[k]) for k, v in shown.items())
    if isinstance(shown, str):  # high-precision strings: equal to the digits shown
        return got == shown
    # float64 values: as printed, up to the last-bit differences of another platform
    return abs(got - shown) <= 1e-13 * abs(shown)


@pytest.mark.parametrize("command, shown", list(_steps()), ids=lambda v: v[:60] if isinstance(v, str) else "")
def test_console_steps(command, shown, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    assert main(argv) == 0
    out = capsys.readouterr().out
    if shown:
        assert _close(json.loads(shown), json.loads(out))


def test_python_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command, _ in _steps():  # the files the examples import
        if command.startswith("qderive codegen"):
            assert main(shlex.split(command)[1:]) == 0
    parser = doctest.DocTestParser()
    test = parser.get_doctest(TEXT, {}, "tutorial", str(TUTORIAL), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 12
