"""The one progress mechanism (numeric/engines/progress.py): bar on a terminal, lines in a log, nothing quiet."""

import io

import pytest

from qderive.numeric.engines import progress
from qderive.numeric.engines.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_log_lines_off_a_terminal_with_counts_and_a_last_line():
    out = io.StringIO()
    with Progress(4, "checks", desc="verify", delay=0.0, interval=0.0, stream=out) as bar:
        for _ in range(4):
            bar.advance()
    lines = out.getvalue().splitlines()
    # one line per update (interval 0) and the closing line
    assert lines[0].startswith("qderive: verify: 1/4 checks (25 %), ")
    assert lines[3].startswith("qderive: verify: 4/4 checks (100 %), ")
    assert lines[-1].endswith(", done") and len(lines) == 5
    assert "\r" not in out.getvalue()  # a log gets no carriage returns


def test_a_total_learned_later_counts_what_was_done_before():
    """`verify --jobs N` learns the number of checks once every derivation is built: the count goes on."""
    out = io.StringIO()
    with Progress(None, "checks", desc="verify", delay=0.0, interval=0.0, stream=out) as bar:
        bar.advance()
        bar.set_total(3)
        bar.advance()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("qderive: verify: 1 checks, ")
    assert lines[1].startswith("qderive: verify: 2/3 checks (67 %)")


def test_log_lines_are_spaced_by_the_interval():
    out = io.StringIO()
    with Progress(1000, "points", delay=0.0, interval=3600.0, stream=out) as bar:
        for k in range(1000):
            bar.update(k + 1)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("qderive: 1/1000 points") and lines[1].endswith(", done")


def test_terminal_gets_a_tqdm_bar():
    out = _Terminal()
    with Progress(3, "points", desc="sweep", delay=0.0, stream=out) as bar:
        bar.update(3)
    text = out.getvalue()
    assert "sweep" in text and "\r" in text and "qderive:" not in text  # tqdm's bar, not log lines


@pytest.mark.parametrize("kwargs", [{"quiet": True}, {"delay": 3600.0}])
def test_quiet_or_short_work_prints_nothing(kwargs):
    out = io.StringIO()
    with Progress(5, "points", stream=out, interval=0.0, **({"delay": 0.0} | kwargs)) as bar:
        bar.update(5)
    assert out.getvalue() == ""


def test_unknown_total_reports_the_elapsed_time():
    out = io.StringIO()
    with Progress(None, "evaluations", desc="eval two-flow", delay=0.0, interval=0.0, stream=out) as bar:
        bar.advance(7)
    assert out.getvalue().splitlines()[0].startswith("qderive: eval two-flow: 7 evaluations, ")


def test_configure_sets_the_defaults_and_rejects_unknown_names():
    previous = progress.configure(quiet=True)
    try:
        out = io.StringIO()
        with Progress(2, "points", delay=0.0, interval=0.0, stream=out) as bar:
            bar.update(2)
        assert out.getvalue() == ""
    finally:
        progress.configure(**previous)
    with pytest.raises(TypeError, match="colour"):
        progress.configure(colour="red")


def test_verify_reports_progress_in_a_log_and_prints_full_check_names():
    """`qderive verify NAME`: the checks counted through the one mechanism (a log here: not a terminal) and
    every check name printed whole (they were cut at 58 characters). scp-window: its 8 checks take 0.5 s (erlang-b's
    21, verified in full by test_erlang_b.py, 1.7 s), and one of its names is longer than 58 characters."""
    from conftest import cli

    from qderive.derivations.cli import _derivation

    previous = progress.configure(delay=0.0, interval=0.0)
    try:
        code, out, err = cli(["verify", "scp-window", "--jobs", "1"])
    finally:
        progress.configure(**previous)
    assert code == 0, err
    total = len(_derivation("scp-window").all_checks())
    assert f"qderive: verify scp-window: {total}/{total} checks (100 %)" in err, err
    from qderive.derivations.export.prose import unicode_text

    assert max(len(unicode_text(check.name)) for check in _derivation("scp-window").all_checks()) > 58
    for check in _derivation("scp-window").all_checks():  # in full, as the terminal writes the prose (math in unicode)
        assert unicode_text(check.name) in out, check.name
    code, out, err = cli(["verify", "scp-window", "--jobs", "1", "--quiet"])
    assert code == 0 and err == ""


def test_ticker_reports_work_that_counts_nothing():
    """One long computation (an eval, a figure) is reported by the ticker thread, once a second at most."""
    import time

    out = io.StringIO()
    with Progress(None, "", desc="eval vacation-finite", delay=0.0, interval=0.0, stream=out, ticker=True):
        time.sleep(1.3)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("qderive: eval vacation-finite: running, ") and lines[-1].endswith(", done")
