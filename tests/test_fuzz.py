"""A seeded fuzz pass over every model and subcommand: the reliability contract.

For each registered model, command lines are built from its example (the generated options)
with one or two fields replaced by malformed or extreme values, laws replaced by broken
specifications, sizes by huge ones, and output paths by bad ones. Every run must:

* exit 0 or 2 (never a traceback, never another status), within 20 s (a hang fails);
* on exit 2, print exactly one line on stderr;
* on exit 0, give only finite numbers (JSON numbers, or decimal strings for values outside the
  float64 range) and probabilities in [0, 1];
* in float64, agree with ``--digits 30`` to 1e-9 relative, or carry a note.

Seeded (the same cases every run) and bounded: about a minute on the project machine.
"""

from __future__ import annotations

import json
import random
import re
import signal
import time

import mpmath
import pytest

from conftest import cli
from qderive.derivations.cli.options import option_of
from qderive.symbolic.models import registered_models
from qderive.symbolic.models.base import MeasureKind
from qderive.symbolic.params import Kind, params_of
from qderive.derivations.capabilities import has as _has

SEED = 20261201
BAD_NUMBERS = ["abc", "", "-1", "0", "1e400", "1e-400", "1e-100000000", "nan", "inf", "1/0", "0x10", "1,2",
               "9" * 500, "1e-300", "1e300", "0.9999999999999", "1.0000000000001", " 2 ", "+3", "1e-20", "7/3"]
BAD_LAWS = ["exp", "exp:mean", "exp:mean=0", "exp:mean=-1", "exp:mean=1,mean=2", "weibull:k=1", "erlang:k=0,mean=1",
            "erlang:k=1e9,mean=1", "det:mean=1e-17", "det:mean=1e17", "hyperexp:p=1,mean=1/2", "uniform:low=1,high=1",
            "gamma:shape=1e-9,mean=1", "lognormal:mean=1,scv=1e9", "ph:alpha=1,T=0", "coxian:rates=0",
            "empirical:file=/nonexistent", "geometric:mean=1e300", "pmf:1=0.3", "const:n=1e12", "poisson1:mean=0.5",
            "exp:mean=1e-300", "exp:mean=1e300"]


class _Timeout(BaseException):
    """Not an Exception: the CLI's last-resort handler (an internal error, one line) must not catch the limit."""


def _alarm(signum, frame):
    raise _Timeout()


def _base_argv(cls):
    """Options of the model's example, as text."""
    model = cls.example()
    out, shared = [], {}
    for f, meta in params_of(cls):
        if not meta.cli:
            continue
        value = getattr(model, f.name)
        text = model.parameters()[f.name]
        opt = option_of(f, meta)
        if meta.part is not None:
            shared.setdefault(opt, []).append((meta.part, str(text)))
            continue
        if value is None:
            if meta.none_text:
                out += [opt, meta.none_text]
            continue
        if meta.kind is Kind.FLAG:
            if value:
                out.append(opt)
            continue
        out += [opt, str(text)]
    for opt, parts in shared.items():
        out += [opt, ",".join(t for _, t in sorted(parts))]
    return out


def _mutations(cls, rng):
    base = _base_argv(cls)
    cases = [base]
    for _ in range(10):
        argv = list(base)
        idx = [i for i in range(0, len(argv) - 1) if argv[i].startswith("--") and not argv[i + 1].startswith("--")]
        if not idx:
            break
        i = rng.choice(idx)
        value = argv[i + 1]
        if ":" in value:
            argv[i + 1] = rng.choice(BAD_LAWS)
        elif "," in value:
            parts = value.split(",")
            j = rng.randrange(len(parts))
            parts[j] = rng.choice(BAD_NUMBERS + ["1e9", "100000000"])
            argv[i + 1] = ",".join(parts)
        else:
            argv[i + 1] = rng.choice(BAD_NUMBERS + ["1e9", "1000000000"])
        cases.append(argv)
    return cases


def _check_output(cls, out):
    doc = json.loads(out)
    kinds = {f.name: m.kind for f, m in cls.measures.measure_fields()}
    def leaves(value):  # numbers inside lists and dicts (sip-retransmission's solutions and tails by time)
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            for v in value:
                yield from leaves(v)
        else:
            yield value

    for key, value in doc["measures"].items():
        for v in leaves(value):
            if v is None or isinstance(v, (bool, int)) and not isinstance(v, float):
                continue
            x = mpmath.mpf(v) if isinstance(v, str) else mpmath.mpf(float(v))
            assert mpmath.isfinite(x), (key, v)
            if kinds.get(key) in (MeasureKind.PROBABILITY, MeasureKind.DISTRIBUTION):
                assert -1e-15 <= x <= 1 + 1e-15, (key, v)
    return doc


def _run(argv):
    # a hang burns CPU: the limit is 20 s of this process's CPU time (ITIMER_PROF), not of wall time, so a
    # machine loaded by other jobs does not turn a 9 s case into a failure
    signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, 20)
    start = time.monotonic()
    try:
        code, out, err = cli(argv)
    except _Timeout:
        pytest.fail(f"no answer within 20 s of CPU time: qderive {' '.join(argv)}")
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2:  # one error line; the progress lines a slow (or loaded) run prints before it are not errors
        lines = [line for line in err.strip().splitlines() if not _PROGRESS.match(line)]
        assert len(lines) == 1, (argv, err)
    return code, out, err, time.monotonic() - start


#: a progress line of a run that took more than 2 s (numeric/engines/progress.py), e.g.
#: "qderive: eval two-flow: running, 3 s" or "..., 3 s, done"
_PROGRESS = re.compile(r"qderive: [\w-]+ [\w-]+: running, \d+ s(, done)?$")


@pytest.mark.parametrize("name", sorted(registered_models()))
def test_fuzz_eval(name):
    cls = registered_models()[name]
    if cls.example is None:
        pytest.fail(f"{name} has no example(): the fuzz pass (and verify --simulate) needs one")
    rng = random.Random(f"{SEED}-{name}")
    for argv in _mutations(cls, rng):
        code, out, err, _ = _run(["eval", name, *argv, "--json"])
        if code != 0:
            continue
        doc = _check_output(cls, out)
        if doc.get("notes"):
            continue
        code30, out30, _, _ = _run(["eval", name, *argv, "--json", "--digits", "30"])
        assert code30 == 0, argv
        d30 = json.loads(out30)["measures"]
        for key, value in doc["measures"].items():
            for a, b in zip(value if isinstance(value, list) else [value], d30[key] if isinstance(value, list)
                            else [d30[key]]):
                if isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(b, str):
                    ref = mpmath.mpf(b)
                    if ref != 0:
                        assert abs(mpmath.mpf(a) - ref) <= 1e-9 * abs(ref), (name, argv, key, a, b)


RESPONSE_OPTIONS = ["--wait-tail", "--wait-quantile", "--wait-moments", "--sojourn-tail", "--sojourn-quantile",
                    "--sojourn-moments"]
RESPONSE_VALUES = ["0", "0.5", "1/2", "0.999999", "1e-12", "3", "1e6", "1e400", "1e-400", "-0.1", "1", "2",
                   "0.5,0.5", "0.1,,0.2", "8", "9", "abc", "nan"]


# vacation-finite (4.4 s, nearly all of it one seeded draw: a sojourn quantile at level 1e-12) runs in the full suite.
# loop sibling: test_fuzz.py::test_fuzz_response_options[vacation-infinite] (the same generated response options
# and contract checks), and test_wait_finite.py's quantile and tail checks of the finite room's engine
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "vacation-finite" else n
                                  for n in sorted(n for n, c in registered_models().items() if _has(c, "response"))])
def test_fuzz_response_options(name):
    """Response-time options with good, extreme and malformed values: the same contract, and the tails and
    quantile levels inside [0, 1]."""
    cls = registered_models()[name]
    rng = random.Random(f"{SEED}-response-{name}")
    base = _base_argv(cls)
    for _ in range(12):
        opt = rng.choice(RESPONSE_OPTIONS)
        code, out, err, _ = _run(["eval", name, *base, opt, rng.choice(RESPONSE_VALUES), "--json"])
        if code == 0:
            measures = json.loads(out)["measures"]
            for key in ("wait_tail", "sojourn_tail"):
                for v in measures.get(key, {}).values():
                    x = mpmath.mpf(v) if isinstance(v, str) else mpmath.mpf(float(v))
                    assert 0 <= x <= 1, (opt, key, v)
            for key in ("wait_quantile", "sojourn_quantile", "wait_moments", "sojourn_moments"):
                values = measures.get(key, {})
                for v in values.values() if isinstance(values, dict) else values:
                    x = mpmath.mpf(v) if isinstance(v, str) else mpmath.mpf(float(v))
                    assert mpmath.isfinite(x) and x >= 0, (opt, key, v)


@pytest.mark.parametrize("name", sorted(registered_models()))
def test_fuzz_other_subcommands(name, tmp_path):
    cls = registered_models()[name]
    base = _base_argv(cls)
    if _has(cls, "simulator"):
        _run(["simulate", name, *base, "--customers", "2000", "--replications", "3", "--seed", "1", "--json"])
        _run(["simulate", name, *base, "--customers", "0", "--json"])
        # many short replications (100 of 200 customers: the intervals of tiny runs stay in range; 300 cost 1.3 s a model)
        _run(["simulate", name, *base, "--replications", "100", "--customers", "200", "--seed", "2", "--json"])
        _run(["simulate", name, *base, "--warmup", "2"])
    if _has(cls, "codegen"):
        _run(["codegen", name, "--list"])
        _run(["codegen", name, "--measure", "nope", "--out", str(tmp_path / "x.py")])
        _run(["codegen", name, "--measure", "x", "--out", str(tmp_path / "no" / "x.py")])
    if _has(cls, "derivation"):
        _run(["derive", name, "--latex", str(tmp_path / "no" / "x.tex")])
    for act in cls.actions:
        _run([act.name, name, *base, "--json"])  # request options missing: exit 2 with one line


def test_fuzz_numbers_and_paths_anywhere():
    rng = random.Random(SEED)
    for _ in range(40):
        argv = rng.choice([["eval"], ["derive"], ["figure"], ["verify", "--digits"], ["codegen"], ["size"],
                           ["optimize"], ["simulate"], ["list"]])
        argv = argv + [rng.choice(BAD_NUMBERS + BAD_LAWS + ["--json", "--out", "vacation-finite", "fig1"])
                       for _ in range(rng.randrange(4))]
        code, out, err, _ = _run(argv)
        assert code in (0, 2)


def test_extreme_vacation_means_in_the_finite_room():
    """Vacations 1e-300 and 1e300 times the service (found by the SIP vacation fuzzing): the first is M/M/1/K in the
    limit, so the admitted customer's sojourn tail must be the M/M/1/K closed form (the float64 transform's exact
    coefficients overflow: mpmath takes over); the second needs a count sequence of ~5e299 terms: one clear line."""
    base = ["eval", "vacation-finite", "--rate", "0.5", "--batch", "const:n=1", "--service", "exp:mean=1",
            "--capacity", "5", "--json"]
    code, out, err, _ = _run(base + ["--vacation", "exp:mean=1e-300", "--sojourn-tail", "1"])
    assert code == 0, err
    got = json.loads(out)["measures"]["sojourn_tail"]["1"]
    # M/M/1/K, K = r + 1 = 6 in system, rho = 1/2: an admitted arrival finding n has the sojourn Erlang(n + 1, 1)
    p = [mpmath.mpf(1) / 2 ** n for n in range(7)]
    adm = sum(p[:6])
    want = sum(p[n] / adm * sum(mpmath.e ** -1 / mpmath.factorial(k) for k in range(n + 1)) for n in range(6))
    assert abs(got - want) <= 1e-13 * want
    code, out, err, _ = _run(base + ["--vacation", "exp:mean=1e300"])
    assert code == 2 and "--vacation" in err and "count sequence" in err, err
