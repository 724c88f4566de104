"""The reliability contract, case by case (issue 30, item 1), and a seeded random pass over every subcommand.

Each case of the issue's fuzz campaign has one test here: bad input is refused with one line naming the option
and the constraint, before the work the limit exists to prevent; no traceback, no hang, no Python text as the
message; an exit 0 gives values in range, checked against something computed another way (Erlang's formula for
M/D/1, the deterministic law for a lognormal of vanishing variance). Every case is cheap (well under a few
seconds) except the one marked slow.
"""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time

import mpmath
import pytest
from conftest import cli
from qderive.derivations.capabilities import has
from qderive.symbolic.models import registered_models
from test_fuzz import _PROGRESS, _base_argv, _check_output, _run


def _refused(argv, *words, seconds=None):
    """``qderive ARGV`` exits 2 with exactly one line on stderr holding every one of ``words``; returns that line.
    ``seconds``: the run must also end within that wall time (a blocked ``open()`` uses no CPU, so the CPU-time
    guard of :func:`test_fuzz._run` would not see it)."""
    if seconds is not None:
        def _late(signum, frame):
            raise TimeoutError(f"qderive {' '.join(argv)} blocked for {seconds} s")

        old = signal.signal(signal.SIGALRM, _late)
        signal.alarm(seconds)
        try:
            code, out, err = cli(argv)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    else:
        code, out, err, _ = _run(argv)
    assert code == 2, (argv, code, out, err)
    # one error line; the progress lines a slow (or loaded) run prints before it are not errors
    lines = [line for line in err.strip().splitlines() if not _PROGRESS.match(line)]
    assert "Traceback" not in err and len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, err)
    return lines[0]


VACATION = ["eval", "vacation-finite", "--rate", "10", "--batch", "const:n=1", "--vacation", "exp:mean=0.1",
            "--capacity", "5", "--json"]
MD1 = ["eval", "vacation-infinite", "--batch", "const:n=1", "--service", "det:mean=1", "--vacation", "none"]


def _md1_cdf(rho, t):
    """P(W <= t) of M/D/1 with D = 1 by Erlang's formula (Erlang 1909; Crommelin 1932):
    (1 - rho) sum_{k=0}^{floor t} (rho (k - t))^k / k! e^{-rho (k - t)}. An alternating sum whose terms reach
    e^{rho t}: evaluated at 600 digits, enough for t <= 900 (terms <= 1e372)."""
    with mpmath.workdps(600):
        t = mpmath.mpf(t)
        rho = mpmath.mpf(rho)
        s = mpmath.fsum((rho * (k - t)) ** k / mpmath.factorial(k) * mpmath.exp(-rho * (k - t))
                        for k in range(int(mpmath.floor(t)) + 1))
        return (1 - rho) * s


# -- silent wrong numbers ----------------------------------------------------------------------------------


def test_a_fraction_has_one_slash():
    _refused(["eval", "erlang-b", "--servers", "10", "--load", "1/2/3"], "--load", "one '/'")
    code, out, _, _ = _run(["eval", "erlang-b", "--servers", "1", "--load", "1/2", "--json"])
    # M/M/1/1: B = a / (1 + a) = 1/3 at a = 1/2
    assert code == 0 and abs(json.loads(out)["measures"]["blocking_probability"] - 1 / 3) <= 1e-15


def test_an_empirical_first_line_with_a_mistyped_number_is_an_error_not_a_header(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0.01,O.02\n0.03\n")  # a letter O
    _refused(VACATION + ["--service", f"empirical:file={bad}"], "--service", "line 1", "'O.02'")
    # a header (no number-like token) is skipped: the same answer as the values given inline
    good = tmp_path / "good.csv"
    good.write_text("time (s); comment\n0.01, 0.02\n\n0.03\n")
    code, out, err, _ = _run(VACATION + ["--service", f"empirical:file={good}"])
    code2, out2, err2, _ = _run(VACATION + ["--service", "empirical:values=0.01/0.02/0.03"])
    assert code == code2 == 0, (err, err2)
    assert json.loads(out)["measures"] == json.loads(out2)["measures"]


@pytest.mark.parametrize("option", ["--wait-moments", "--sojourn-moments"])
def test_zero_moments_are_refused_not_ignored(option):
    _refused(MD1 + ["--load", "0.5", option, "0"], option, "1 to 8")


def test_derive_refuses_zero_wait_moments():
    _refused(["derive", "vacation-infinite", "--wait-moments", "0"], "--wait-moments", ">= 1")


# -- work before the limit is checked ----------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no fifos on this platform")
def test_an_empirical_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "times.fifo"
    os.mkfifo(fifo)
    _refused(VACATION + ["--service", f"empirical:file={fifo}"], "--service", "fifo", seconds=10)


def test_an_empirical_device_or_directory_is_not_read(tmp_path):
    if os.path.exists("/dev/zero") and stat.S_ISCHR(os.stat("/dev/zero").st_mode):
        _refused(VACATION + ["--service", "empirical:file=/dev/zero"], "--service", "device", seconds=10)
    _refused(VACATION + ["--service", f"empirical:file={tmp_path}"], "--service", "directory")


def test_an_empirical_sample_over_the_limit_is_refused_before_it_is_parsed(tmp_path):
    """11 values then a token that is not a number, under --limit sample-size=10: the limit answers (reading
    stopped at value 11), not the parse error further on; the same file within the limit reports the token."""
    path = tmp_path / "many.csv"
    path.write_text("\n".join(["0.01"] * 11 + ["junk"]) + "\n")
    _refused(VACATION + ["--service", f"empirical:file={path}", "--limit", "sample-size=10"],
             "sample-size", "--limit sample-size=11")
    _refused(VACATION + ["--service", f"empirical:file={path}"], "line 12", "'junk'")


def test_the_two_flow_state_space_is_limited_at_once_on_every_path():
    base = ["two-flow-hysteretic", "--rates-normal", "1.5,1", "--rates-overload", "0.5,0.5", "--service-rate", "1",
            "--thresholds", "5,10,1000000000"]
    for verb in (["eval"], ["simulate"]):
        start = time.process_time()
        _refused(verb + base, "threshold", "--limit threshold=")
        assert time.process_time() - start < 2
    # the threshold limit raised: the dense-states limit still answers at once (the bound is a closed form)
    start = time.process_time()
    _refused(["eval"] + base + ["--limit", "threshold=1000000000"], "dense-states")
    assert time.process_time() - start < 2


def test_an_unknown_image_format_is_refused_before_the_figure_is_computed(tmp_path):
    start = time.process_time()
    _refused(["figure", "sip-timers", "--out", str(tmp_path / "f.jpgx")], "--out", "f.jpgx", ".png, .pdf, .svg")
    assert time.process_time() - start < 5  # the figure itself costs ~20 s


@pytest.mark.parametrize("argv,option", [
    (["codegen", "erlang-b", "--measure", "blocking_probability", "--out", "/proc/x.py"], "--out"),
    (["codegen", "erlang-b", "--measure", "blocking_probability", "--out", "/tmp/" + "a" * 300 + ".py"], "--out"),
    (["sweep", "erlang-b", "--servers", "10", "--load", "0.5", "--out", "/proc/s.csv"], "--out"),
    (["derive", "erlang-b", "--markdown", ""], "--markdown"),
    (["derive", "erlang-b", "--latex", "/tmp/" + "b" * 300 + "/x.tex"], "--latex"),
    (["figure", "sip-timers", "--csv", "/proc/x.csv"], "--csv"),
])
def test_an_output_that_cannot_be_opened_is_one_line_before_the_work(argv, option):
    _refused(argv, option)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_write_error_at_the_end_is_one_line():
    _refused(["derive", "erlang-b", "--markdown", "/dev/full"], "--markdown", "could not be written")


def test_checking_an_output_leaves_no_file_and_keeps_an_existing_one(tmp_path):
    missing = tmp_path / "x.py"
    _refused(["codegen", "erlang-b", "--measure", "nope", "--out", str(missing)], "--measure")
    assert not missing.exists()  # the check opened it for writing, then removed what it created
    kept = tmp_path / "kept.py"
    kept.write_text("old")
    _refused(["codegen", "erlang-b", "--measure", "nope", "--out", str(kept)], "--measure")
    assert kept.read_text() == "old"  # opened for appending: not truncated by a run that failed


# -- tracebacks left ---------------------------------------------------------------------------------------


def test_the_lattice_size_bound_is_a_logarithm():
    """C M / tail ~ 1e400 at t = 900 D (M/D/1 at load 0.95) overflowed a float: kept as log10 now."""
    from qderive.numeric.engines.vacation_wait import _size

    with mpmath.workdps(30):
        # a bound that swamps the tail: log10(bound / eps) = 300 + 52 log10 2 (the ratio is beyond the double range)
        assert abs(_size(mpmath.mpf("1e-40"), mpmath.mpf("1e300"), 2.0**-52) - (300 + 52 * mpmath.log10(2))) < 1e-9
        # a tail the pass can size: log10(bound / eps / tail) = -10 + 52 log10 2
        assert abs(_size(mpmath.mpf("1e-40"), mpmath.mpf("1e-50"), 2.0**-52) - (-10 + 52 * mpmath.log10(2))) < 1e-9
    assert _size(1e-30, 1e-200, 2.0**-52) == 0.0  # no digits lost


@pytest.mark.slow
def test_an_md1_tail_near_1e_minus_40():
    """The issue's case (about 15 s of CPU): P(W > 900) of M/D/1 at load 0.95 against Erlang's formula."""
    code, out, err, _ = _run(MD1 + ["--load", "0.95", "--wait-tail", "900", "--json"])
    assert code == 0, err
    got = json.loads(out)["measures"]["wait_tail"]["900"]
    want = 1 - _md1_cdf(mpmath.mpf("0.95"), 900)
    assert abs(got - want) <= 1e-13 * want  # the float64 value is the 15-digit mpmath one, rounded


def test_md1_quantiles_at_40_digits_and_the_sojourn_atom():
    """M/D/1 at load 1/2, 40 digits: the wait quantile 0.9 is the root of Erlang's formula; the sojourn T = W + 1
    has P(T <= 1) = P(W = 0) = 1/2 exactly, so its 1/2-quantile is 1 (the search used to stall on that jump)."""
    code, out, err, _ = _run(MD1 + ["--load", "1/2", "--digits", "40", "--wait-quantile", "0.9", "--sojourn-quantile",
                                    "1/2", "--json"])
    assert code == 0, err
    m = json.loads(out)["measures"]
    with mpmath.workdps(60):
        root = mpmath.findroot(lambda t: _md1_cdf(mpmath.mpf(1) / 2, t) - mpmath.mpf("0.9"), (1.2, 1.8),
                               solver="anderson")
        assert abs(mpmath.mpf(m["wait_quantile"]["0.9"]) - root) <= mpmath.mpf(10) ** -39 * root
    assert mpmath.mpf(m["sojourn_quantile"]["1/2"]) == 1


def test_sip_timers_far_below_the_service_time_are_refused():
    _refused(["eval", "sip-retransmission", "--rate", "100", "--service", "exp:mean=0.005", "--t1", "1e-300"],
             "--t1", "mean service time")


def test_an_internal_error_is_one_line_and_debug_shows_the_traceback(monkeypatch):
    from qderive.derivations import cli as C

    def boom(args):
        raise RuntimeError("internal detail")

    monkeypatch.setitem(C._HANDLERS, "list", boom)
    code, out, err = cli(["list"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "internal error" in err and "--debug" in err and "internal detail" not in err
    code, out, err = cli(["list", "--debug"])
    assert code == 2 and "Traceback" in err and "RuntimeError: internal detail" in err


def test_every_damaged_cache_entry_is_repaired(tmp_path):
    """Empty every entry of a warm private cache: the next run derives them again and answers the same."""
    env = {**os.environ, "QDERIVE_CACHE": str(tmp_path / "c")}
    argv = [sys.executable, "-m", "qderive.derivations.cli", "eval", "vacation-finite", "--rate", "10", "--batch",
            "geometric:mean=2", "--service", "exp:mean=0.02", "--vacation", "exp:mean=0.05", "--capacity", "5",
            "--wait-moments", "2", "--json"]
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    entries = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    for p in entries:
        p.write_bytes(b"")
    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert json.loads(again.stdout)["measures"] == json.loads(first.stdout)["measures"]


# -- Python's text as the message --------------------------------------------------------------------------


@pytest.mark.parametrize("rate", ["1e400", "1e17"])
def test_an_arrival_rate_beyond_any_count_sequence_is_refused_naming_it(rate):
    err = _refused(["eval", "vacation-finite", "--rate", rate, "--batch", "geometric:mean=5", "--service",
                    "erlang:k=4,mean=0.015", "--vacation", "erlang:k=4,mean=0.075", "--capacity", "20"],
                   "--rate", "arrivals during one service")
    assert "division" not in err and "Python" not in err


def test_a_hysteretic_chain_at_a_huge_load_is_computed():
    """rho_0 = 1e5 (about 1e5 arrivals per service, R = 100): the room fills at every service, so the chain
    alternates between overload and discard: p_discard -> the share of departures at R. The float64 chain was
    reducible (e^{-1e5} underflows): mpmath now takes over; values in range and the three modes sum to 1."""
    code, out, err, _ = _run(["eval", "hysteretic", "--service", "det:mean=0.005", "--batch", "geometric:mean=2",
                              "--overload-factor", "0.5", "--thresholds", "73,84,100", "--rate", "1e7", "--json"])
    assert code == 0, err
    doc = _check_output(registered_models()["hysteretic"], out)
    m = {k: mpmath.mpf(v) if isinstance(v, str) else mpmath.mpf(float(v)) for k, v in doc["measures"].items()
         if k.startswith("p_")}
    assert abs(m["p_normal"] + m["p_overload"] + m["p_discard"] - 1) <= 1e-14


def test_a_lognormal_of_vanishing_variance_is_the_constant():
    """scv = 1e-300 (the message used to be empty: log(1 + scv) rounded to 0): the deterministic law's answer."""
    base = ["eval", "vacation-finite", "--rate", "20", "--batch", "geometric:mean=5", "--vacation",
            "erlang:k=4,mean=0.075", "--capacity", "20", "--json"]
    code, out, err, _ = _run(base + ["--service", "lognormal:mean=0.02,scv=1e-300"])
    code2, out2, err2, _ = _run(base + ["--service", "det:mean=0.02"])
    assert code == code2 == 0, (err, err2)
    a, b = json.loads(out)["measures"], json.loads(out2)["measures"]
    for key, value in b.items():
        if isinstance(value, float) and value:
            assert abs(a[key] - value) <= 1e-12 * abs(value), key  # Var = 4e-304: below float64's resolution


def test_a_tail_time_beyond_the_inversion_says_what_to_change():
    _refused(["eval", "vacation-infinite", "--rate", "20", "--batch", "geometric:mean=5", "--service",
              "erlang:k=4,mean=0.005", "--vacation", "erlang:k=4,mean=0.075", "--wait-tail", "1e100"],
             "--wait-tail", "too large")


def test_numbers_outside_the_double_range_are_json_strings():
    code, out, err, _ = _run(["eval", "erlang-b", "--servers", "10", "--load", "1e400", "--json"])
    assert code == 0, err
    m = json.loads(out)["measures"]
    assert isinstance(m["lost_load"], str)
    # lost load = a B(n, a), B -> 1 as a -> oo: 1e400 to 17 digits
    assert abs(mpmath.mpf(m["lost_load"]) / mpmath.mpf("1e400") - 1) < 1e-15
    assert "e+399" not in out.replace('"', "'") or isinstance(m["lost_load"], str)


# -- a seeded random pass over every subcommand ------------------------------------------------------------

SEED = 20261207
VALUES = ["0", "-1", "1e400", "1/2/3", "", "nan", "abc", "1e-300", "3", "0.5", "1e9", "--json", "/proc/x",
          "exp:mean=1", "lognormal:mean=0.02,scv=1e-300", "1,2", "7/3"]


def _subcommand_argvs(rng):
    models = registered_models()
    names = sorted(models)
    out = [["list", "--limits"], ["verify", "nope"], ["verify", "--digits", "abc"], ["verify", "--jobs", "0", "nope"],
           ["figure", "nope", "--out", "x.png"], ["figure", "fig3"], ["eval"], ["derive"]]
    for _ in range(24):
        name = rng.choice(names)
        cls = models[name]
        verbs = ["eval", "derive"] + [v for v, role in (("simulate", "simulator"), ("codegen", "codegen"),
                                                        ("sweep", "engine")) if has(name, role)]
        verbs += [a.name for a in cls.actions]
        verb = rng.choice(verbs)
        argv = [verb, name]
        if verb in ("eval", "simulate", "sweep", "size", "optimize"):
            argv += _base_argv(cls)
            opts = [i for i in range(2, len(argv) - 1) if argv[i].startswith("--")]
            i = rng.choice(opts)
            argv[i + 1] = rng.choice(VALUES)
        if verb == "simulate":
            argv += ["--customers", "500", "--replications", "2", "--seed", "1"]
        if verb == "sweep":
            argv += ["--out", rng.choice(["/proc/s.csv", "", "s.txt"])]
        if verb == "codegen":
            argv += ["--measure", rng.choice(["nope", ""]), "--out", rng.choice(["/proc/x.py", "x.txt", ""])]
        if verb == "derive":
            argv += rng.choice([["--markdown", ""], ["--latex", "/proc/x.tex"], ["--wait-moments", "0"],
                                ["--print-latex", "--wait-moments", "-3"]])
        argv.append("--json") if verb in ("eval", "simulate", "size", "optimize") else None
        out.append(argv)
    return out


def test_a_seeded_random_pass_over_every_subcommand(tmp_path, monkeypatch):
    """Random bad values in every subcommand's options: exit 0, 1 (verify: a failed check) or 2, one line on
    error, no traceback, within 20 s of CPU each; an exit 0 of eval gives finite values, probabilities in
    [0, 1]."""
    monkeypatch.chdir(tmp_path)
    rng = random.Random(SEED)
    models = registered_models()
    for argv in _subcommand_argvs(rng):
        code, out, err, _ = _run(argv)
        if code == 0 and argv[0] == "eval" and len(argv) > 1:
            _check_output(models[argv[1]], out)


@pytest.mark.slow
def test_finite_room_wait_moments_of_a_lognormal_service_answer_within_budget():
    """The issue's slow corner (> 10 min before; about 9 s of CPU now): E W from the residual-moment sums agrees
    with mean_wait from the embedded chain and Little's law (another computation) to 1e-12 relative."""
    code, out, err, _ = _run(["eval", "vacation-finite", "--service", "lognormal:mean=0.012,scv=2", "--vacation",
                              "exp:mean=0.06", "--load", "0.55", "--capacity", "129", "--batch", "geometric:mean=5",
                              "--wait-moments", "2", "--json"])
    assert code == 0, err
    m = json.loads(out)["measures"]
    assert abs(m["wait_moments"][0] - m["mean_wait"]) <= 1e-12 * m["mean_wait"]
    assert m["wait_moments"][1] >= m["mean_wait"] ** 2


@pytest.mark.slow
def test_the_instant_policy_at_40_digits_and_r_100_answers_within_budget():
    """The issue's slow corner (needed --limit birth-work=4.3e10): the birth kernel now runs in gmpy2 (about 6 s
    of CPU); the 40-digit values agree with the float64 ones (an independent run of the precision policy) to
    1e-13 relative."""
    base = ["eval", "hysteretic", "--service", "det:mean=0.005", "--batch", "geometric:mean=2", "--load", "1.5",
            "--policy", "instant", "--thresholds", "73,84,100", "--json"]
    code, out, err, _ = _run(base + ["--digits", "40"])
    assert code == 0, err
    code64, out64, err64, _ = _run(base)
    assert code64 == 0, err64
    hi, lo = json.loads(out)["measures"], json.loads(out64)["measures"]
    for key, value in lo.items():
        if isinstance(value, float) and value:
            assert abs(mpmath.mpf(hi[key]) - value) <= 1e-13 * abs(value), key


@pytest.mark.parametrize("room", [["vacation-infinite"], ["vacation-finite", "--capacity", "129"]])
@pytest.mark.parametrize("service", ["uniform:low=0.005,high=0.02", "empirical:values=0.005/0.0123/0.02"])
def test_a_tail_point_far_below_the_service_times_is_refused_before_its_lattice(room, service):
    """--wait-tail 1e-12 with a service rounded to a lattice (certified bounds): the lattice's step about t / N over
    the whole support of the service asked for 1.6e14 levels and ended in "out of memory" (41 TiB); it is refused by
    ``lattice-work`` before any array is made (under a second of CPU, the solve included)."""
    started = time.process_time()
    code, out, err = cli(["eval", *room[:1], "--batch", "geometric:mean=4", "--service", service, "--vacation",
                          "exp:mean=0.06", "--load", "0.55", *room[1:], "--wait-tail", "1e-12"])
    if room == ["vacation-infinite"] and service.startswith("empirical"):
        # since fi28 the sample's own lattice (1e-4) gives the exact series (F12), whose window is t / g: answered;
        # P(W <= t) ~ (1 - rho) P(K = 0) t / E V_vac = 0.45 * 1/4 * 1e-12 / 0.06 = 1.875e-12 (W = V + J + R, R with
        # the density P(V_vac > x) / E V_vac, 16.7 at 0; the next order t^2 terms are below 1e-22), within the
        # series' certified rounding bound at a tail near 1 (4.1e-14 measured: some 40 terms near 1 summed)
        assert code == 0, err
        value = float(out.split("wait_tail = {'1e-12': ")[1].split("}")[0])
        assert abs(1 - value - 1.875e-12) <= 1e-13, value
        return
    assert code == 2 and "lattice-work" in err and "far below the service times" in err, err
    assert "out of memory" not in err and "Traceback" not in err
    assert time.process_time() - started < 5.0


def test_the_finite_rooms_rows_count_in_the_lattice_budget():
    """--wait-tail 1e-4 at r = 129 with a uniform service: a pmf of about 7e5 levels fits the limit alone, but the
    finite room's sums hold r + 3 rows of it (it took 37 s of CPU and 3 GB); refused by ``lattice-work`` at once,
    naming the rows (1e-3, 1.9e7 numbers, stays within the limit: 4 s)."""
    laws = ["eval", "vacation-finite", "--batch", "geometric:mean=4", "--service", "uniform:low=0.005,high=0.02",
            "--vacation", "exp:mean=0.06", "--load", "0.55", "--capacity", "129"]
    started = time.process_time()
    code, _, err = cli([*laws, "--wait-tail", "1e-4"])
    assert code == 2 and "lattice-work" in err and "132 rows" in err, err
    assert time.process_time() - started < 5.0


# -- the fuzz pass by hand over every subcommand (issue 30 item 4, helper lw30): each finding, one case -------------


@pytest.mark.parametrize("digits,words", [("0", ["--digits", "positive integer"]),
                                          ("-5", ["--digits", "positive integer"]),
                                          ("100000", ["digits = 100000", "limit 1000", "--limit digits="])])
def test_verify_digits_out_of_range_are_refused(digits, words):
    """verify --digits 0 (or negative) ran every check at no precision and reported 11 of 21 failed (exit 1);
    --digits 100000 ran past 150 s. Refused at once, the second by the limit ``digits`` (which verify now takes)."""
    started = time.process_time()
    _refused(["verify", "--digits", digits, "erlang-b"], *words)
    assert time.process_time() - started < 1.0


def test_a_sweep_whose_every_point_fails_is_one_line(tmp_path):
    """A sweep whose every point failed printed its summary line and then the error: two lines on stderr."""
    err = _refused(["sweep", "mm1-hysteretic", "--service-rate", "1", "--rates", "1.2,0.6", "--thresholds", "3,6,9",
                    "--wait-quantile", "1_000", "--out", str(tmp_path / "s.csv")], "every point failed",
                   "--wait-quantile")
    assert "points in" not in err


def test_hysteretic_quantiles_below_the_atom_and_the_tail_at_zero():
    """eval hysteretic --wait-quantile 1e-9 ended in an internal error (AttributeError: the finite room's atom asked
    the model for a vacation). The level 1e-9 is above P(W = 0) = 1 - P(W > 0): its quantile is positive, and the
    tail there is 1 - 1e-9 (the search's root, checked by the tail: 1e-12 absolute, the float64 inversion's)."""
    base = ["eval", "hysteretic", "--service", "det:mean=0.005", "--batch", "geometric:mean=2", "--rate", "150",
            "--overload-factor", "0.5", "--thresholds", "73,84,100", "--json"]
    code, out, err, _ = _run(base + ["--wait-quantile", "1e-9", "--wait-tail", "0"])
    assert code == 0, err
    m = json.loads(out)["measures"]
    q = m["wait_quantile"]["1e-9"]
    assert q > 0 and 1 - m["wait_tail"]["0"] < 1e-9
    code, out, err, _ = _run(base + ["--wait-tail", repr(q)])
    assert code == 0, err
    assert abs(json.loads(out)["measures"]["wait_tail"][repr(q)] - (1 - 1e-9)) <= 1e-12


def test_finite_room_times_near_the_double_range_scale():
    """Service and vacation means of 1e-300 (a batch rate of 5e299): the quantile ended in an internal error
    (OverflowError: lambda^2 of the moments' series and the transform's exact coefficients beyond the double range).
    Now the float64 values escalate with notes, and the laws scale: the quantile and the mean are 1e-300 times
    those of the same queue with means 1 (computed separately), E W^2 1e-600 times (a JSON string: beyond doubles)."""
    def measures(mean):
        code, out, err, _ = _run(["eval", "vacation-finite", "--batch", "const:n=1", "--service", f"exp:mean={mean}",
                                  "--vacation", f"exp:mean={mean}", "--load", "0.5", "--capacity", "10",
                                  "--wait-quantile", "0.9", "--wait-moments", "2", "--json"])
        assert code == 0, err
        return json.loads(out)

    tiny, unit = measures("1e-300"), measures("1")
    assert any(n.startswith("wait_moments:") and "over- or underflow" in n for n in tiny["notes"])
    for key in ("0.9",):
        a, b = mpmath.mpf(tiny["measures"]["wait_quantile"][key]), unit["measures"]["wait_quantile"][key]
        assert abs(a / mpmath.mpf("1e-300") - b) <= 1e-12 * b  # two inversions to 15 digits each
    for k, scale in ((0, "1e-300"), (1, "1e-600")):
        a, b = mpmath.mpf(tiny["measures"]["wait_moments"][k]), unit["measures"]["wait_moments"][k]
        assert abs(a / mpmath.mpf(scale) - b) <= 1e-13 * b
