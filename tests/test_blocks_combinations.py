"""The blocks' combination audit (issue 26, "Done means"): every combination of the three new options
(--start-threshold, --setup, --close-down) with the existing ones either computes or is refused by the capabilities
with the reason.

The axes: the room (vacation-infinite; vacation-finite with r = 10 under partial and whole admission), the vacation
rule (none, multiple, single), the start threshold N (1, 3), the setup (none, exponential, constant, uniform,
lognormal, empirical), the close-down (none, exponential, constant), the service (exponential, Erlang-2, constant,
lognormal), the batch (geometric of mean 2, constant 2), the measure (the default ones, --distribution, the mean
wait, --wait-tail, --wait-quantile, --wait-moments 2, the sojourn) and the verb (eval, sweep, size with a target,
simulate with a small budget, codegen, derive, verify). Their product is about 10^5 command lines: the audit runs a
seeded covering design (:func:`pairwise`: every pair of values of two axes in at least one case) and, on the cheap
axes (room, rule, N, close-down: eval of the default measures), the full product. Each command line runs in-process
under a CPU guard (:func:`test_fuzz._run`) and must

* exit 0 with every number finite, every probability in [0, 1] and the contract's JSON keys (those of the same
  command without the blocks), or
* exit 2 with one line ``qderive: error: <verb or measure> with --<option> ...: <reason>`` naming an option the
  command line gave (a capabilities refusal; codegen's refusal of a family, ``qderive: error: --setup det: ...``,
  names its option the same way) -- never a traceback, a hang or another message.

``derive`` and ``verify`` take a model name only (their derivation is in general laws): for them the audit asks the
capabilities (:func:`qderive.derivations.capabilities.ask`) with the case's model, which must compute or refuse naming
one of its fields, and the command line must refuse a block option rather than ignore it.

Where a case computes, its numbers are checked against something computed another way: a seeded sample of eval cases
against the block chain of :mod:`qderive.numeric.oracles.blocks` (the CTMC built from the blocks' stages, solved by
GTH; the finite room's admitted customer's wait by its tagged-customer chain), three off the chain (constant,
uniform, empirical setups) against the simulator's intervals; sweep against eval at the same point; generated code
against eval; float64 against --digits 20; and each block must change the answer it is meant to change (no silently
ignored option).

Found and fixed by the audit: ``size --target-wait-quantile`` named ``--wait-tail`` (not given) in its refusal, after
the loss search; whole admission with a lognormal service and any block summed the count sequences to 16384 terms
(refused after 19 s of CPU, now 0.5 s); the start threshold's rule under whole admission refused a batch of
r - N + 2 that always fits when the server waits without a vacation and a setup. Kept refused, with the reason: the
wait under whole admission when a batch can be refused below N (the count below N then has a level-dependent
admission).

A combination that is refused today may compute after another branch lands (a constant setup in the finite room, a
uniform law in the blocks): the audit accepts either outcome; the comparisons run on what computes.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import random
import re
from fractions import Fraction as F

import mpmath
import pytest
from test_fuzz import _check_output, _run

from qderive.derivations.capabilities import ask
from qderive.derivations.cli.options import add_fields, parse_fields
from qderive.symbolic.errors import ParameterError
from qderive.symbolic.models import registered_models
from qderive.symbolic.models.base import MeasureKind

SEED = 2026_26

#: the axes of the audit and their values (the first value of each is the plain model's)
AXES = {
    "room": ("infinite", "partial", "whole"),  # vacation-infinite; vacation-finite r = 10 with that admission
    "rule": ("none", "multiple", "single"),
    "threshold": (1, 3),
    "setup": ("none", "exp", "det", "uniform", "lognormal", "empirical"),
    "close": ("none", "exp", "det"),
    "service": ("exp", "erlang", "det", "lognormal"),
    "batch": ("geometric", "const"),
    "measure": ("default", "distribution", "mean_wait", "wait_tail", "wait_quantile", "wait_moments", "sojourn"),
    "verb": ("eval", "sweep", "size", "simulate", "codegen", "derive", "verify"),
}
SERVICE = {"exp": "exp:mean=1", "erlang": "erlang:k=2,mean=1", "det": "det:mean=1",
           "lognormal": "lognormal:mean=1,scv=2"}
BLOCK_LAW = {"exp": "exp:mean=1/2", "det": "det:mean=1/2", "uniform": "uniform:low=1/4,high=3/4",
             "lognormal": "lognormal:mean=1/2,scv=2", "empirical": "empirical:values=0.25/0.5/0.75"}
BATCH = {"geometric": "geometric:mean=2", "const": "const:n=2"}
#: codegen takes families (the numbers are the generated function's arguments)
FAMILY = {"exp": "exp", "erlang": "erlang:k=2", "det": "det", "lognormal": "lognormal", "uniform": "uniform",
          "empirical": "empirical", "geometric": "geometric", "const": "const:n=2"}
MEASURE = {"default": [], "distribution": ["--distribution"], "mean_wait": ["--wait-moments", "1"],
           "wait_tail": ["--wait-tail", "1"], "wait_quantile": ["--wait-quantile", "0.9"],
           "wait_moments": ["--wait-moments", "2"], "sojourn": ["--sojourn-tail", "2", "--sojourn-moments", "1"]}
#: the codegen measure key standing for each measure (q0 is the infinite room's p0)
CODEGEN_KEY = {"default": "mean_wait", "distribution": "p0", "mean_wait": "mean_wait", "wait_tail": "wait_tail",
               "wait_quantile": "wait_quantile", "wait_moments": "mean_wait", "sojourn": "sojourn_tail"}
CAPACITY = "10"

#: a refusal by the capabilities: the verb (or the response measure) with the option at fault, then the reason
_REFUSAL = re.compile(r"^qderive: error: ([\w-]+) with (--[a-z-]+)( \S+)?( in [a-z-]+)?: \S")
#: a refusal of an option's own value (codegen's families: "--setup det: no generated code ...")
_VALUE_REFUSAL = re.compile(r"^qderive: error: (--[a-z-]+)( = | )?\S*: \S")
#: a progress line of a slow run (numeric/engines/progress.py): not an error line
_PROGRESS = re.compile(r"qderive: [\w-]+ [\w-]+: running, \d+ s(, done)?$")


# -- the covering design ---------------------------------------------------------------------------------------


def pairwise(axes: dict, seed) -> list[dict]:
    """A seeded covering design of strength 2: cases (one value per axis) such that every pair of values of two
    different axes appears in at least one case. Greedy (AETG, Cohen et al. 1997): start each case from an uncovered
    pair, fill the other axes in a random order with the value that covers most uncovered pairs (ties at random)."""
    rng = random.Random(seed)
    names = list(axes)
    uncovered = {((a, x), (b, y)) for a, b in itertools.combinations(names, 2) for x in axes[a] for y in axes[b]}
    cases = []
    while uncovered:
        (a, x), (b, y) = rng.choice(sorted(uncovered, key=repr))  # sorted: a set's order varies between runs
        case = {a: x, b: y}
        rest = [n for n in names if n not in case]
        rng.shuffle(rest)
        for n in rest:
            def gain(v):
                return sum(((m, case[m]), (n, v)) in uncovered or ((n, v), (m, case[m])) in uncovered
                           for m in case)
            best = max(gain(v) for v in axes[n])
            case[n] = rng.choice([v for v in axes[n] if gain(v) == best])
        for p, q in itertools.combinations(names, 2):
            uncovered.discard(((p, case[p]), (q, case[q])))
        cases.append({n: case[n] for n in names})
    return cases


def test_the_design_covers_every_pair():
    cases = pairwise(AXES, SEED)
    for a, b in itertools.combinations(AXES, 2):
        seen = {(c[a], c[b]) for c in cases}
        assert seen == set(itertools.product(AXES[a], AXES[b])), (a, b)
    assert len(cases) <= 70  # 49 pairs of measure x verb at least; the greedy design stays close


# -- command lines of a case -----------------------------------------------------------------------------------


def model_name(case) -> str:
    return "vacation-infinite" if case["room"] == "infinite" else "vacation-finite"


def model_options(case, load="0.5", capacity=True) -> list[str]:
    """The model's options of ``case`` (``load`` None: no --load; ``capacity`` False: no --capacity)."""
    out = ["--batch", BATCH[case["batch"]], "--service", SERVICE[case["service"]]]
    if load is not None:
        out += ["--load", load]
    if case["rule"] == "none":
        out += ["--vacation", "none"]
    else:
        out += ["--vacation", "exp:mean=1", "--vacation-policy", case["rule"]]
    if case["room"] != "infinite":
        out += ["--admission", case["room"]] + (["--capacity", CAPACITY] if capacity else [])
    if case["threshold"] != 1:
        out += ["--start-threshold", str(case["threshold"])]
    if case["setup"] != "none":
        out += ["--setup", BLOCK_LAW[case["setup"]]]
    if case["close"] != "none":
        out += ["--close-down", BLOCK_LAW[case["close"]]]
    return out


def codegen_options(case) -> list[str]:
    out = ["--batch", FAMILY[case["batch"]], "--service", FAMILY[case["service"]]]
    if case["rule"] == "none":  # the infinite room's codegen has the flag --no-vacation
        out += ["--no-vacation"] if case["room"] == "infinite" else ["--vacation", "none"]
    else:
        out += ["--vacation", "exp", "--vacation-policy", case["rule"]]
    if case["room"] != "infinite":
        out += ["--admission", case["room"]]
    if case["threshold"] != 1:
        out += ["--start-threshold", str(case["threshold"])]
    for axis, option in (("setup", "--setup"), ("close", "--close-down")):
        if case[axis] != "none":
            out += [option, FAMILY[case[axis]]]
    return out


def model_from(name, options):
    """The concrete model of ``qderive eval NAME OPTIONS`` (as the command line builds it)."""
    cls = registered_models()[name]
    parser = argparse.ArgumentParser()
    add_fields(parser, cls, alternatives=cls.alternatives)
    args = parser.parse_args(options)
    return cls.from_values(parse_fields(args, cls, alternatives=cls.alternatives))


def model_of(case):
    """The concrete model of ``case``."""
    return model_from(model_name(case), model_options(case))


def given_options(argv) -> set[str]:
    return {a for a in argv if a.startswith("--")}


def refused(argv, code, err) -> str:
    """Assert a capabilities refusal: one line naming an option ``argv`` gave; return the option."""
    lines = [line for line in err.strip().splitlines() if not _PROGRESS.match(line)]
    assert code == 2 and len(lines) == 1, (argv, code, err)
    found = _REFUSAL.match(lines[0])
    option = found.group(2) if found else None
    if found is None and argv[0] == "codegen":
        found = _VALUE_REFUSAL.match(lines[0])
        option = found.group(1) if found else None
    assert found, (argv, lines[0])
    assert option in given_options(argv), (argv, lines[0])
    assert "nan" not in lines[0].lower().split() and "Traceback" not in err
    return option


def finite_number(value) -> bool:
    x = mpmath.mpf(value) if isinstance(value, str) else mpmath.mpf(float(value))
    return bool(mpmath.isfinite(x))


# -- one case: run its verb and check the contract -------------------------------------------------------------


def plain(case) -> dict:
    """The same case without the three new options."""
    return {**case, "threshold": 1, "setup": "none", "close": "none"}


def run_eval(case, measure=None):
    """(exit status, JSON or None, stderr) of ``eval`` of the case with its measure (or ``measure``)."""
    argv = ["eval", model_name(case), *model_options(case), *MEASURE[measure or case["measure"]], "--json"]
    code, out, err, _ = _run(argv)
    return argv, code, (json.loads(out) if code == 0 else None), err


def check_eval(case) -> str:
    argv, code, doc, err = run_eval(case)
    if code != 0:
        return refused(argv, code, err)
    cls = registered_models()[model_name(case)]
    _check_output(cls, json.dumps(doc))
    keys = set(doc["measures"])
    # the contract's keys: those of the plain model with the same measure (computed or not, the key set is fixed)
    _, code0, doc0, _ = run_eval(plain(case))
    if code0 == 0:
        assert keys == set(doc0["measures"]), (argv, keys ^ set(doc0["measures"]))
        assert set(doc) - {"notes"} == set(doc0) - {"notes"}, (argv, set(doc) ^ set(doc0))  # notes: when any
    for key in ("wait_tail", "sojourn_tail"):
        for v in doc["measures"].get(key, {}).values():
            assert 0 <= mpmath.mpf(v if isinstance(v, str) else float(v)) <= 1, (argv, key, v)
    for key in ("wait_quantile", "sojourn_quantile", "wait_moments", "sojourn_moments"):
        values = doc["measures"].get(key, {})
        for v in values.values() if isinstance(values, dict) else values:
            assert finite_number(v) and float(v) >= 0, (argv, key, v)
    if "--distribution" in argv:
        p = doc["measures"]["p"]
        assert all(0 <= x <= 1 for x in p) and abs(sum(p) - 1) <= 1e-9 or case["room"] == "infinite", (argv, p)
    return ""


def check_sweep(case, tmp_path) -> str:
    out = tmp_path / "sweep.csv"
    argv = ["sweep", model_name(case), *model_options(case, load="0.5"), *MEASURE[case["measure"]], "--out",
            str(out), "--quiet"]
    code, _, err, _ = _run(argv)
    if code != 0:
        return refused(argv, code, err)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 1, rows
    row = rows[0]
    if row.get("error"):  # a point the sweep could not compute carries its reason: eval refuses it the same way
        argv2, code2, _, err2 = run_eval(case)
        assert code2 == 2, (argv, row["error"])
        return refused(argv2, code2, err2)
    for key, value in row.items():
        if value and key not in ("point", "precision", "notes", "error", "confirmed_digits", "working_digits"):
            assert finite_number(value), (argv, key, value)
    # the sweep's point is eval's (the sweep does not drop an option): the mean wait to 1e-12 relative (the same
    # float64 computation; the CSV keeps 17 digits)
    _, code_e, doc, err_e = run_eval(case, "default")
    assert code_e == 0, (argv, err_e)
    want = doc["measures"]["mean_wait"]
    assert abs(float(row["mean_wait"]) - want) <= 1e-12 * want, (argv, row["mean_wait"], want)
    return ""


def check_size(case) -> str:
    if case["room"] == "infinite":  # the largest load meeting P(W > 10) <= 0.2
        argv = ["size", "vacation-infinite", *model_options(case, load=None), "--target-wait-tail", "10,0.2",
                "--json"]
    else:  # the smallest room meeting a loss of 5 %, and with a wait measure the 0.9-quantile 30 too
        wait = case["measure"] not in ("default", "distribution")
        argv = ["size", "vacation-finite", *model_options(case, capacity=False), "--target-loss", "0.05",
                *(["--target-wait-quantile", "0.9,30"] if wait else []), "--json"]
    code, out, err, _ = _run(argv)
    if code != 0:
        return refused(argv, code, err)
    doc = json.loads(out)
    for key, value in doc.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert math.isfinite(value), (argv, key, value)
            if "probability" in key:
                assert 0 <= value <= 1, (argv, key, value)
    if case["room"] != "infinite":  # the room found is eval's with the same blocks: loss <= 5 % there, not one fewer
        loss = {}
        for r in (doc["capacity"], doc["capacity"] - 1):
            if r < 1 or (r == doc["capacity"] - 1 and "loss_probability_one_fewer" not in doc):
                continue
            options = model_options(case, capacity=False) + ["--capacity", str(r)]
            code, out, err, _ = _run(["eval", "vacation-finite", *options, "--json"])
            assert code == 0, err
            loss[r] = json.loads(out)["measures"]["loss_probability"]
        assert abs(loss[doc["capacity"]] - doc["loss_probability"]) <= 1e-12 and loss[doc["capacity"]] <= 0.05
        if doc["capacity"] - 1 in loss:
            assert loss[doc["capacity"] - 1] > 0.05
    return ""


def check_simulate(case) -> str:
    measure = [] if case["measure"] == "distribution" else MEASURE[case["measure"]]
    argv = ["simulate", model_name(case), *model_options(case), *measure, "--customers", "2000",
            "--replications", "3", "--seed", "1", "--json"]
    code, out, err, _ = _run(argv)
    if code != 0:
        return refused(argv, code, err)
    doc = json.loads(out)
    cls = registered_models()[model_name(case)]
    kinds = {f.name: m.kind for f, m in cls.measures.measure_fields()}
    for key, value in doc["measures"].items():
        items = value if isinstance(value, list) else value.values() if "estimate" not in value else [value]
        for item in items:
            assert finite_number(item["estimate"]), (argv, key, item)
            if kinds.get(key) is MeasureKind.PROBABILITY or key.endswith("_tail"):
                assert 0 <= item["estimate"] <= 1, (argv, key, item)
    return ""


def check_codegen(case, tmp_path) -> str:
    out = tmp_path / "gen.py"
    argv = ["codegen", model_name(case), *codegen_options(case), "--measure", CODEGEN_KEY[case["measure"]],
            "--out", str(out)]
    if case["room"] == "infinite" and argv[argv.index("--measure") + 1] == "p0":
        argv[argv.index("--measure") + 1] = "q0"
    code, _, err, _ = _run(argv)
    if code != 0:
        return refused(argv, code, err)
    text = out.read_text()
    compile(text, str(out), "exec")  # a module Python reads
    # what was asked is in it: a block's arguments appear in the generated function's signature
    if case["setup"] != "none" or case["close"] != "none" or case["threshold"] != 1:
        assert "setup" in text or "close" in text or "threshold" in text, argv
    return ""


def check_model_verb(case, verb) -> str:
    """derive, verify: the capabilities with the case's model (their command lines take a model name only), and the
    command line refuses a block option instead of ignoring it."""
    try:
        model = model_of(case)
    except ParameterError as err:  # a domain rule (none expected on these axes)
        pytest.fail(f"{case}: {err}")
    try:
        ask(model, verb)
    except ParameterError as err:
        text = str(err)
        found = re.match(r"^([\w-]+) with (--[a-z-]+)", text)
        assert found and found.group(2) in given_options(model_options(case)), (case, text)
        return found.group(2)
    if case["setup"] != "none":
        code, _, err, _ = _run([verb, model_name(case), "--setup", BLOCK_LAW[case["setup"]]])
        assert code == 2 and "--setup" in err, (verb, err)  # not a derivation of another model
    return ""


def run_case(case, tmp_path) -> str:
    """Run the case's verb; return "" (computed) or the option a refusal named."""
    verb = case["verb"]
    if verb == "eval":
        return check_eval(case)
    if verb == "sweep":
        return check_sweep(case, tmp_path)
    if verb == "size":
        return check_size(case)
    if verb == "simulate":
        return check_simulate(case)
    if verb == "codegen":
        return check_codegen(case, tmp_path)
    return check_model_verb(case, verb)


def _id(case) -> str:
    return "-".join(str(case[a]) for a in AXES)


PAIRWISE = pairwise(AXES, SEED)


@pytest.mark.every_case
@pytest.mark.parametrize("case", PAIRWISE, ids=_id)
def test_pairwise_case_computes_or_is_refused(case, tmp_path):
    run_case(case, tmp_path)


# -- the full product on the cheap axes ------------------------------------------------------------------------


def _cheap_cases(setups) -> list[dict]:
    base = {"service": "erlang", "batch": "geometric", "measure": "default", "verb": "eval"}
    return [{"room": room, "rule": rule, "threshold": n, "setup": setup, "close": close, **base}
            for room, rule, n, setup, close in itertools.product(AXES["room"], AXES["rule"], AXES["threshold"],
                                                                   setups, AXES["close"])]


def test_every_room_rule_threshold_and_close_down_computes_or_is_refused(tmp_path):
    """eval's default measures over room x rule x N x close-down with an exponential setup and without (72 cases;
    about 6 s): each computes within the contract or is refused naming an option it gave."""
    for case in _cheap_cases(("none", "exp")):
        run_case(case, tmp_path)


@pytest.mark.slow
def test_the_cheap_product_with_every_setup(tmp_path):
    """The same product with the other setup laws (144 cases, about 30 s)."""
    for case in _cheap_cases(AXES["setup"][2:]):
        run_case(case, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", pairwise({**AXES, "rule": ("multiple", "single"), "threshold": (2, 3)}, SEED + 1),
                         ids=_id)
def test_a_second_design_with_other_thresholds(case, tmp_path):
    """A second seeded design (the rules with vacations and N = 2, 3): more triples of the axes seen."""
    run_case(case, tmp_path)


# -- the numbers: the chain, the simulator, and no option ignored ------------------------------------------------


#: the phase-type axes on which the block chain is built (a constant law has no finite chain)
PH_AXES = {**AXES, "setup": ("none", "exp"), "close": ("none", "exp"), "service": ("exp", "erlang")}


def _chain_sample() -> list[dict]:
    rng = random.Random(SEED)
    product = list(itertools.product(*(PH_AXES[a] for a in ("room", "rule", "threshold", "setup", "close",
                                                             "service", "batch"))))
    # N = 3 and at least one block in most of them: the new options are what is checked
    product = [p for p in product if p[2] != 1 or p[3] != "none" or p[4] != "none"]
    picked = rng.sample(product, 10)
    keys = ("room", "rule", "threshold", "setup", "close", "service", "batch")
    return [{**dict(zip(keys, p)), "measure": "wait_moments", "verb": "eval"} for p in picked]


#: the eval keys the chain gives too (``queue_length_variance``: the infinite room's; ``p``: with --distribution)
CHAIN_KEYS = ("loss_probability", "batch_blocking_probability", "idle_probability", "mean_queue_length", "mean_wait",
              "mean_number_in_system", "throughput", "p0", "pr", "q0", "qr", "queue_length_variance")


@pytest.mark.every_case
@pytest.mark.parametrize("case", _chain_sample(), ids=_id)
def test_eval_equals_the_block_chain(case):
    """eval --distribution --wait-moments 2 (float64) against the block chain (the CTMC from the blocks' stages,
    solved by GTH; :func:`~qderive.numeric.oracles.blocks.chain_measures`): finite room at 50 digits, with the
    admitted customer's wait moments from its tagged-customer chain (:func:`~qderive.numeric.oracles.blocks.
    tagged_wait`); infinite room at 20 digits (its truncation at 1e-20 of neglected mass: the 50-digit chain costs
    9 s here), its mean wait by Little's law. Tolerance 1e-9 relative (1e-12 absolute for probabilities near 0): the
    float64 policy's promise (the engines measure 1e-13 to 1e-15 here); a measure refused by the case is skipped
    only when the refusal names one of the case's options (checked by :func:`run_case`'s rules)."""
    from qderive.numeric.oracles.blocks import chain_measures, tagged_wait

    model = model_of(case)
    argv = ["eval", model_name(case), *model_options(case), "--distribution", "--wait-moments", "2", "--json"]
    code, out, err, _ = _run(argv)
    moments = code == 0
    if code != 0:  # the wait's moments refused (item 3 of the audit: whole admission, N > 1): the state law alone
        refused(argv, code, err)
        argv = argv[:-3] + ["--json"]
        code, out, err, _ = _run(argv)
    assert code == 0, (argv, err)
    got = json.loads(out)["measures"]
    finite = case["room"] != "infinite"
    want = chain_measures(model, digits=50 if finite else 20)
    compared = 0
    for key in CHAIN_KEYS:
        if key in got and key in want:
            w = float(want[key])
            assert abs(got[key] - w) <= 1e-9 * abs(w) + 1e-12, (key, got[key], w)
            compared += 1
    assert compared >= 6, (sorted(got), sorted(want))
    if finite:
        law = [float(x) for x in want["p"]] if "p" in want else None
        if law is not None:
            assert all(abs(a - b) <= 1e-9 * b + 1e-12 for a, b in zip(got["p"], law))
    if moments:
        if finite:
            oracle = tagged_wait(model, digits=50, moments=2).moments
        else:
            oracle = [want["mean_wait"]]
        for a, b in zip(got["wait_moments"], oracle):
            assert abs(a - float(b)) <= 1e-9 * float(b), (got["wait_moments"], oracle)


#: cases off the chain (constant and uniform laws) checked by the simulator
SIM_CASES = [
    {"room": "partial", "rule": "single", "threshold": 3, "setup": "det", "close": "exp", "service": "erlang",
     "batch": "geometric", "measure": "wait_moments", "verb": "eval"},
    {"room": "infinite", "rule": "multiple", "threshold": 1, "setup": "uniform", "close": "det", "service": "exp",
     "batch": "const", "measure": "wait_moments", "verb": "eval"},
    {"room": "whole", "rule": "none", "threshold": 3, "setup": "empirical", "close": "none", "service": "exp",
     "batch": "const", "measure": "wait_moments", "verb": "eval"},
]


@pytest.mark.every_case
@pytest.mark.parametrize("case", SIM_CASES, ids=_id)
def test_eval_lies_in_the_simulators_interval(case):
    """eval's mean wait and idle probability against a seeded simulation of the stages (8 x 20 000 customers, seed
    26): each inside its 99 % interval (Bonferroni over the two: 99.5 % each); the plain model's mean wait (no
    blocks) outside, so the interval does see what the blocks do."""
    from qderive.numeric.simulation.blocks import simulate_blocks

    argv = ["eval", model_name(case), *model_options(case), "--json"]
    code, out, err, _ = _run(argv)
    assert code == 0, err
    got = json.loads(out)["measures"]
    sim = simulate_blocks(model_of(case), customers=20_000, replications=8, seed=26, quiet=True)
    for key in ("mean_wait", "idle_probability"):
        lo, hi = sim[key].interval(0.995)
        assert lo <= got[key] <= hi, (key, got[key], lo, hi)
    code, out, err, _ = _run(["eval", model_name(case), *model_options(plain(case)), "--json"])
    lo, hi = sim["mean_wait"].interval(0.995)
    assert not lo <= json.loads(out)["measures"]["mean_wait"] <= hi


IGNORE_BASE = {"rule": "single", "service": "erlang", "batch": "const", "measure": "wait_moments",
               "verb": "eval", "threshold": 1, "setup": "none", "close": "none"}


@pytest.mark.every_case
@pytest.mark.parametrize("room", AXES["room"])
def test_no_block_option_is_ignored(room):
    """Each of the three options changes what it must: eval's mean wait and the wait's second moment, and the
    simulator's mean wait (2000 customers: the changes here are several times its noise), with each block alone
    against the plain model (a block that did nothing would give the plain numbers); in the finite room the idle
    probability too (the infinite room's is 1 - rho_bar whatever the blocks, issue 26)."""
    plain_case = {**IGNORE_BASE, "room": room}
    _, code, doc, err = run_eval(plain_case)
    assert code == 0, err
    for change in ({"threshold": 3}, {"setup": "exp"}, {"setup": "det"}, {"close": "exp"}):
        case = {**plain_case, **change}
        _, code, other, err = run_eval(case)
        assert code == 0, err
        for key in ("mean_wait",) + (("idle_probability",) if room != "infinite" else ()):
            a, b = doc["measures"][key], other["measures"][key]
            assert abs(a - b) > 1e-6 * abs(a), (change, key, a, b)
        a, b = doc["measures"]["wait_moments"][1], other["measures"]["wait_moments"][1]
        assert abs(a - b) > 1e-6 * a, (change, a, b)
    # the close-down changes the idle probability's split only: the simulator's waits with and without it differ
    for change in ({"threshold": 3}, {"setup": "exp"}):
        argvs = [["simulate", model_name(c), *model_options(c), "--customers", "4000", "--replications", "4",
                  "--seed", "3", "--json"] for c in (plain_case, {**plain_case, **change})]
        means = []
        for argv in argvs:
            code, out, err, _ = _run(argv)
            assert code == 0, err
            means.append(json.loads(out)["measures"]["mean_wait"])
        lo0, hi0 = means[0]["ci95"]
        assert not lo0 <= means[1]["estimate"] <= hi0, (change, means)


def test_size_refuses_the_quantiles_laws_before_the_search_naming_its_option():
    """size --target-wait-quantile with a constant service and a setup (the tails are refused): refused naming
    --target-wait-quantile (not --wait-tail, which was not given), before the loss search (well under 2 s of CPU)."""
    import time

    argv = ["size", "vacation-finite", "--batch", "const:n=2", "--service", "det:mean=1", "--load", "0.5",
            "--vacation", "exp:mean=1", "--setup", "exp:mean=1/2", "--target-loss", "1e-9", "--target-wait-quantile",
            "0.9,30"]
    start = time.process_time()
    code, _, err, _ = _run(argv)
    assert refused(argv, code, err) == "--service" and err.startswith("qderive: error: --target-wait-quantile with")
    assert time.process_time() - start < 2


# -- whole admission with a start threshold: what a batch refused below N does ---------------------------------

ISSUE_CASE = ["vacation-finite", "--batch", "geometric:mean=2", "--load", "0.5", "--capacity", "20", "--service",
              "exp:mean=1", "--vacation", "exp:mean=1", "--start-threshold", "18", "--admission", "whole"]


def test_whole_admission_refused_below_the_threshold_the_wait_is_refused_exactly_and_the_queue_computes():
    """The audit's case (geometric batches, r = 20, N = 18, whole admission): a batch of more than r - N + 1 = 3
    can arrive at level 17 during a vacation and is refused, so the count below N is not the infinite room's. The
    wait's measures are refused naming --start-threshold with that bound; the queue-length measures compute and
    equal the block chain at 50 digits (to 1e-9 relative: the float64 policy's promise)."""
    from qderive.numeric.oracles.blocks import chain_measures

    for measure in (["--wait-tail", "2"], ["--wait-moments", "1"], ["--sojourn-quantile", "0.9"]):
        argv = ["eval", *ISSUE_CASE, *measure]
        code, _, err, _ = _run(argv)
        assert refused(argv, code, err) == "--start-threshold" and "r - N + 1 = 3" in err, err
    code, out, err, _ = _run(["eval", *ISSUE_CASE, "--distribution", "--json"])
    assert code == 0, err
    got = json.loads(out)["measures"]
    model = model_from(ISSUE_CASE[0], ISSUE_CASE[1:])
    want = chain_measures(model, digits=50)
    for key in ("loss_probability", "idle_probability", "mean_queue_length", "mean_wait", "p0", "pr"):
        assert abs(got[key] - float(want[key])) <= 1e-9 * float(want[key]), (key, got[key], want[key])
    assert all(abs(a - float(b)) <= 1e-9 * float(b) + 1e-15 for a, b in zip(got["p"], want["p"]))


@pytest.mark.every_case
@pytest.mark.parametrize("close", [None, "exp:mean=1/2"])
def test_no_vacation_no_setup_batches_up_to_r_minus_n_plus_2_are_never_refused_below_the_threshold(close):
    """No vacation, no setup, N = 3, r = 10, batches of 1 or 9: the server waits, available, and the batch that
    brings the count to N starts service at once with r + 1 - j places, so a batch of 9 = r - N + 2 fits at level
    2 and none is refused below N: the wait computes (the rule asked r - N + 1 = 8 and refused it) and equals the
    tagged customer's chain (float64 to 1e-12 for the moments, 1e-9 for the tails; 30 digits to 1e-20:
    tests/finite_blocks_oracle.py). Batches of 1 or 10 are refused, naming r - N + 2 = 9."""
    from finite_blocks_oracle import assert_equals_the_oracle, assert_float64_equals_the_oracle

    from qderive.numeric.engines.vacation_finite_wait import response_laws
    from qderive.symbolic.batches import FinitePMF
    from qderive.symbolic.laws import Erlang, Exponential
    from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue

    def model(big):
        return FiniteVacationQueue(F(1, 3), FinitePMF({1: F(1, 2), big: F(1, 2)}), Erlang(2, F(1, 2)), None, 10,
                                   Admission.WHOLE, start_threshold=3,
                                   close_down=None if close is None else Exponential(F(1, 2)))

    assert response_laws.supports(model(9), frozenset({"wait_moments", "wait_tail"})) is None
    assert_float64_equals_the_oracle(model(9))
    assert_equals_the_oracle(model(9))
    refusal = response_laws.supports(model(10), frozenset({"wait_moments"}))
    assert refusal is not None and refusal.field == "start_threshold" and "r - N + 2 = 9" in refusal.why


@pytest.mark.every_case
@pytest.mark.parametrize("room", ["infinite", "whole"])
def test_float64_agrees_with_digits_20_with_every_block(room):
    """The three options together (N = 3, an exponential setup, a constant close-down, single vacations): float64
    within 1e-9 relative of --digits 20 for every measure, the wait's tail and two moments (the precision policy's
    promise: float64 either agrees or carries a note)."""
    case = {"room": room, "rule": "single", "threshold": 3, "setup": "exp", "close": "det", "service": "erlang",
            "batch": "const"}
    argv = ["eval", model_name(case), *model_options(case), "--wait-moments", "2", "--wait-tail", "1", "--json"]
    code, out, err, _ = _run(argv)
    code20, out20, err20, _ = _run(argv + ["--digits", "20"])
    assert code == code20 == 0, (err, err20)
    doc, doc20 = json.loads(out), json.loads(out20)
    assert not doc.get("notes"), doc["notes"]

    def leaves(value):
        if isinstance(value, dict):
            value = list(value.values())
        return [x for v in value for x in leaves(v)] if isinstance(value, list) else [value]

    for key, value in doc["measures"].items():
        for a, b in zip(leaves(value), leaves(doc20["measures"][key])):
            ref = mpmath.mpf(b)
            assert abs(mpmath.mpf(a) - ref) <= 1e-9 * abs(ref), (key, a, b)


CODEGEN_CASES = [
    ({"room": "partial", "rule": "single", "threshold": 3, "setup": "exp", "close": "exp", "service": "erlang",
      "batch": "geometric"}, "mean_wait"),
    ({"room": "infinite", "rule": "single", "threshold": 3, "setup": "exp", "close": "exp", "service": "erlang",
      "batch": "geometric"}, "wait_tail"),
    ({"room": "whole", "rule": "multiple", "threshold": 3, "setup": "exp", "close": "none", "service": "exp",
      "batch": "const"}, "wait_tail"),
]


@pytest.mark.every_case
@pytest.mark.parametrize("case, measure", CODEGEN_CASES, ids=[_id({**c, "measure": m, "verb": "codegen"})
                                                               for c, m in CODEGEN_CASES])
def test_generated_code_takes_the_blocks_and_equals_eval(case, measure, tmp_path):
    """codegen with the three options: the generated function's arguments name every block's law (none ignored;
    each is bound here from the case's numbers, and an argument this test does not know fails it) and its value
    equals eval's to 1e-9 relative (the generated code runs the engine's kernels in float64; wait_tail through the
    inversion's 2e-10 self-check)."""
    import inspect

    from conftest import load_generated

    out = tmp_path / "gen.py"
    code, _, err, _ = _run(["codegen", model_name(case), *codegen_options(case), "--measure", measure, "--out",
                            str(out)])
    assert code == 0, err
    f = load_generated(out)[measure]
    values = {"t": 1.0, "lam": 0.25, "batch_mean": 2.0, "service_mean": 1.0, "vacation_mean": 1.0,
              "setup_mean": 0.5, "close_down_mean": 0.5, "r": int(CAPACITY)}
    names = [p.name for p in inspect.signature(f).parameters.values() if p.kind is not p.KEYWORD_ONLY]
    assert ("setup_mean" in names) == (case["setup"] != "none")
    assert ("close_down_mean" in names) == (case["close"] != "none")
    got = float(f(**{n: values[n] for n in names}))
    argv = ["eval", model_name(case), *model_options(case), "--json"]
    if measure == "wait_tail":
        argv += ["--wait-tail", "1"]
    code, out_, err, _ = _run(argv)
    assert code == 0, err
    want = json.loads(out_)["measures"][measure]
    want = want["1"] if measure == "wait_tail" else want
    assert abs(got - want) <= 1e-9 * want, (got, want)


def test_whole_admission_with_a_lognormal_service_and_blocks_is_quick():
    """Found by the audit: whole admission, a lognormal service and any block (an exponential setup), in overload
    (rho_bar = 3, r = 2): the blocks' room process summed the service's batches until the count itself was
    negligible (the rooms below the smallest batch keep their mass), 16384 terms of the lognormal's count
    sequences, and was refused by count-work after 19 s of CPU; the closed sums of the room kernel (as the plain
    model's engine) stop once the other rooms are empty: well under 3 s here. The blocks' engine on the plain
    model equals the plain model's engine (the thesis's whole-admission kernel) to 1e-12 relative (both float64,
    positive sums)."""
    import time

    from qderive.numeric.backend import FLOAT64
    from qderive.numeric.engines.blocks_finite import finite_measures

    options = ["--batch", "geometric:mean=2", "--service", "lognormal:mean=1,scv=2", "--load", "3", "--vacation",
               "exp:mean=1", "--capacity", "2", "--admission", "whole"]
    start = time.process_time()
    code, out, err, _ = _run(["eval", "vacation-finite", *options, "--setup", "exp:mean=1/2", "--json"])
    assert code == 0, err
    assert time.process_time() - start < 3
    _check_output(registered_models()["vacation-finite"], out)
    model = model_from("vacation-finite", options)
    with FLOAT64:
        got = finite_measures(model, FLOAT64)
    want = model.evaluate()
    for key in ("loss_probability", "idle_probability", "mean_queue_length", "throughput", "p0", "pr"):
        w = getattr(want, key)
        assert abs(got[key] - w) <= 1e-12 * w, (key, got[key], w)


@pytest.mark.parametrize("digits", [None, 30])
@pytest.mark.every_case
def test_whole_admission_blocks_closed_rooms_agree_with_the_summation(monkeypatch, digits):
    """The closed sums of the blocks' room process (the fix above) against the summation until the count is
    negligible (tests/test_finite_corners.py's check of the plain engine, with blocks): batches of 5 (rooms 0..4
    absorbing), a hyperexponential service, N = 2 with single vacations, an exponential setup and close-down,
    r = 12: every measure within 1e-13 in float64 (two orders of summation of positive terms) and 1e-28 at 30
    digits."""
    from qderive.numeric.backend import FLOAT64, mp_context
    from qderive.numeric.engines.blocks_finite import finite_measures
    from qderive.numeric.kernels import vacation as V
    from qderive.symbolic.batches import Constant
    from qderive.symbolic.laws import Exponential, HyperExponential
    from qderive.symbolic.models.vacation import Admission, FiniteVacationQueue, VacationPolicy

    model = FiniteVacationQueue(F(7, 50), Constant(5), HyperExponential((F(9, 10), F(1, 10)), (F(1, 20), F(1, 2))),
                                Exponential(F(1, 10)), 12, Admission.WHOLE, VacationPolicy.SINGLE, start_threshold=2,
                                setup=Exponential(F(1, 5)), close_down=Exponential(F(1, 10)))
    ctx = FLOAT64 if digits is None else mp_context(digits + 5)
    real = V._mix_powers

    def summed(ctx, start, H, counts, pmf, tail, geometric, support, closed=False):
        return real(ctx, start, H, counts, pmf, tail, geometric, support, False)

    with ctx:
        closed = finite_measures(model, ctx)
    monkeypatch.setattr(V, "_mix_powers", summed)
    with ctx:
        plain = finite_measures(model, ctx)
    tol = 1e-13 if digits is None else mpmath.mpf(10) ** -28
    for key in ("loss_probability", "mean_wait", "q0", "qr", "pr", "idle_probability", "throughput"):
        a, b = mpmath.mpf(closed[key]), mpmath.mpf(plain[key])
        assert abs(a - b) <= tol * abs(b), (key, a, b)
