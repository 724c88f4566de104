"""Before / after: every benchmark case with the old code and the new code, on one machine, in one run.

Run by hand (takes 20-40 minutes)::

    python benchmarks/compare.py [--reps N] [--only SUBSTRING] [--skip SUBSTRING] [--json FILE]
    python benchmarks/compare.py --check                       # every case once (a smoke test)
    python benchmarks/compare.py --side new --only "r = 1e+05" # more runs of one side
    python benchmarks/compare.py --from-json A.json --from-json B.json   # the table of earlier runs
    NEW_PYTHONPATH=/tmp/snap python benchmarks/compare.py      # "after" = a snapshot <dir>/qderive/
    BLAS_THREADS=default python benchmarks/compare.py          # OpenBLAS threads as numpy chooses
    python benchmarks/compare.py --snapshot 0396a83 /tmp/old   # make <dir>/qderive/ of a commit (git archive)
    OLD_PYTHONPATH=/tmp/old python benchmarks/compare.py       # same API: "before" = that snapshot (below)
    OLD_PYTHONPATH=/tmp/old python benchmarks/compare.py --only "issue 25" --budget 20   # its rows first, in time

**Same API** (``OLD_PYTHONPATH=<dir>``, or ``--same-api`` which insists on it): both sides run the NEW-API
statements with the same interpreter and dependencies (``NEW_PYTHON``); "before" imports ``qderive`` from the
snapshot ``<dir>/qderive/`` (made by ``--snapshot COMMIT DIR``: ``git archive COMMIT`` unpacked in ``DIR/src``,
``DIR/qderive/`` the facade ``derivations/_qderive`` with its three code folders linked in, as the package layout of
pyproject.toml maps them), "after" the working tree or ``NEW_PYTHONPATH``. A case whose statement fails on the old
side (an option, module or name that the old commit does not have) is listed as "n/a (not in the old code: <the
error>)", never dropped. The rows of a later issue (``issue 25: ...``) time CPU seconds (the process and its
children: ``resource.getrusage``), so that their absolute targets hold on a loaded machine; the others wall time.
``--budget MIN`` starts no measurement after MIN minutes and lists the cases left as "not run (time budget)".

Each case is a ``setup`` and a ``stmt`` for each side: the old implementation (the last
pre-redesign commit, in its own virtual environment, old API; or, with ``OLD_PYTHONPATH``, a later commit through
the new API) and the new one (this tree, ``import qderive as qd``). Every measurement is a fresh subprocess
(``OLD_PYTHON`` / ``NEW_PYTHON``, default /tmp/venv-base/bin/python and /tmp/venv/bin/python)
that runs ``setup`` (imports, model objects, a small warm-up call of the same code path),
then times ``stmt`` ``inner`` times (``number`` calls per timing for micro-benchmarks, chosen
so that one timing lasts >= 50 ms) and reports the median. The driver interleaves the sides
(old then new on even repetitions, new then old on odd ones) and repeats every case ``reps``
times; a case's time is the median over its repetitions of the per-process medians. Both
sides run with one BLAS thread (``OPENBLAS_NUM_THREADS=1``) and private caches. The load
average is sampled before every subprocess and printed with the table.

Derived rows: the overload cost (time at rho_bar = 1.2 over time at rho_bar = 0.6, same r)
and the distance from the hardware floor (engine time over :func:`floor` time at r = 10^5;
the floor is the unavoidable arithmetic of the algorithm timed with plain numpy, see
``benchmarks/finite.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

OLD_PYTHON = os.environ.get("OLD_PYTHON", "/tmp/venv-base/bin/python")
NEW_PYTHON = os.environ.get("NEW_PYTHON", sys.executable if "venv-base" not in sys.executable else "/tmp/venv/bin/python")
HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------------------
# The subprocess runner
# --------------------------------------------------------------------------------------

RUNNER = r'''
import json, os, sys, time, statistics
spec = json.loads(sys.argv[1])
ns = {"__name__": "__bench__"}
exec(compile(spec["setup"], "<setup>", "exec"), ns)
body = "def __bench():\n" + "".join("    " + line + "\n" for line in spec["stmt"].splitlines())
exec(compile(body, "<stmt>", "exec"), ns)
fn = ns["__bench"]
clock = time.perf_counter
if spec.get("clock") == "cpu":  # CPU seconds of this process and of the children it waited for
    import resource
    def clock():
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
if spec["warm"]:
    fn()
number = spec["number"]
if number == 0:  # calibrate: one timing >= 50 ms
    number = 1
    while True:
        t0 = clock()
        for _ in range(number):
            fn()
        if clock() - t0 >= 0.05:
            break
        number *= 2
times = []
for _ in range(spec["inner"]):
    t0 = clock()
    for _ in range(number):
        fn()
    times.append((clock() - t0) / number)
print("__RESULT__" + json.dumps({"times": times, "number": number, "info": str(ns.get("info", ""))}))
'''


@dataclass
class Side:
    setup: str
    stmt: str


@dataclass
class Case:
    name: str
    old: Side | None
    new: Side | None
    target: str = "not slower"
    inner: int = 3
    inner_old: int | None = None
    reps: int | None = None  # fewer repetitions for the very slow cases
    number: int = 1  # 0: calibrate (micro-benchmarks)
    warm: bool = False
    group: str = ""
    live: bool = False  # new side from the working tree even when NEW_PYTHONPATH names a snapshot
    clock: str = "wall"  # "cpu": CPU seconds of the process and its children (the rows of issue 25)
    results: dict = field(default_factory=lambda: {"old": [], "new": []})
    info: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# Preambles
# --------------------------------------------------------------------------------------

OLD_VAC = """
import sympy as sp
from fractions import Fraction as F
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.vacation import VacationQueue, finite_measures, FiniteSweep
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws import Erlang, Exponential
def vf(load, r):
    return VacationQueue.from_load(sp.Rational(load), Geometric(5), Erlang(4, sp.Rational(3, 200)),
                                   Exponential(sp.Rational(3, 40)), r)
finite_measures(vf('3/5', 50), FLOAT64); finite_measures(vf('6/5', 50), FLOAT64)
"""

NEW_VAC = """
from fractions import Fraction as F
import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.vacation import FiniteSweep
def vf(load, r):
    return qd.FiniteVacationQueue.from_load(F(load), qd.Geometric(5), qd.Erlang(4, F(3, 200)),
                                            qd.Exponential(F(3, 40)), r)
FiniteSweep(vf('3/5', 50), FLOAT64).at(50); FiniteSweep(vf('6/5', 50), FLOAT64).at(50)
"""


def _gen(argv: list[str], name: str, fn: str) -> str:
    """Setup text: write a generated module with the side's own ``qderive codegen`` and import ``fn``."""
    return f"""
import os, sys, subprocess, tempfile, importlib
_d = tempfile.mkdtemp(prefix="qd-bench-gen-")
_exe = os.path.join(os.path.dirname(sys.executable), "qderive")
subprocess.run([_exe, "codegen", *{argv!r}, "--out", os.path.join(_d, "{name}.py")], check=True, capture_output=True)
sys.path.insert(0, _d)
{fn} = getattr(importlib.import_module("{name}"), "{fn}")
"""


VF_CODEGEN = ["vacation-finite", "--measure", "loss_probability", "--batch", "geometric", "--service", "erlang:k=4",
              "--vacation", "exp"]

OLD_FIG1 = """
from qderive.derivations.figures_vacation import FIG1_BATCH_MEANS, FIG1_LAWS, fig1_loads, fig1_model
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.vacation import finite_measures, FiniteSweep
pts = [fig1_model(m, law, load) for m in FIG1_BATCH_MEANS for law in FIG1_LAWS for load in fig1_loads(6)]
finite_measures(pts[0].with_capacity(20), FLOAT64)
"""

NEW_FIG1 = """
from qderive.derivations.figures.vacation import FIG1_BATCH_MEANS, FIG1_LAWS, fig1_loads, fig1_model
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.vacation import FiniteSweep
pts = [fig1_model(m, law, load) for m in FIG1_BATCH_MEANS for law in FIG1_LAWS for load in fig1_loads(6)]
pts[0].with_capacity(20).evaluate()
"""

CLI = """
import os, subprocess, sys
exe = os.path.join(os.path.dirname(sys.executable), "qderive")
"""

EVAL_ARGS = {
    "vacation-infinite": ["--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation",
                          "exp:mean=0.075", "--load", "0.6", "--json"],
    "vacation-finite": ["--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation",
                        "exp:mean=0.075", "--load", "0.6", "--capacity", "200", "--json"],
    "erlang-b": ["--servers", "10", "--load", "5", "--json"],
    "hysteretic": ["--batch", "geometric:mean=2", "--service", "det:mean=0.005", "--load", "1.5", "--thresholds",
                   "73,84,100", "--json"],
}

OLD_CAP = """
import sympy as sp
from fractions import Fraction as F
from qderive.numeric import cluster as C, erlang as E, scp_sim as S
from qderive.numeric.backend import FLOAT64, mp_backend
V = F(3, 10)
paper = C.RedundantCluster(rate=3, copies=2, nodes=(10, 10), service_times=(V, V), deadline=2 * V)
def mp(dps, fn):
    bk = mp_backend(dps)
    with bk:
        return fn(bk)
"""

NEW_CAP = """
from fractions import Fraction as F
import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.kernels import erlang as KE
from qderive.numeric.engines import erlang_b as E, cluster as C
from qderive.numeric.simulation import scp as S
V = F(3, 10)
paper = qd.RedundantCluster(rate=3, copies=2, nodes=(10, 10), service_times=(V, V), deadline=2 * V)
def mp(dps, fn):
    ctx = mp_context(dps)
    with ctx:
        return fn(ctx)
"""

OLD_TF = """
from fractions import Fraction as F
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.two_flow import Algorithm, Solver, TwoFlowModel, solve, state_space
def model(H, alg):
    return TwoFlowModel((F(3, 5), 2), (1, 5), H // 2, H, H + 1, Algorithm(alg))
solve(model(4, 'fifo'), FLOAT64, Solver.SPARSE).mean_return_time()
"""

NEW_TF = """
from fractions import Fraction as F
import qderive as qd
from qderive.numeric.backend import FLOAT64, mp_context
from qderive.numeric.engines.two_flow import solve, state_space
def model(H, alg):
    return qd.TwoFlowModel(F(3, 5), 2, 1, 5, H // 2, H, H + 1, qd.Algorithm(alg))
solve(model(4, 'fifo'), FLOAT64, qd.Solver.SPARSE).mean_return_time()
"""

OLD_HY = """
from qderive.derivations.figures_hysteretic import LOADS_THESIS, _arrivals, _model
from qderive.numeric import hysteretic as nh
def grid(digits):
    return [nh.evaluate(_model(b, load), digits) for b in _arrivals().values() for load in LOADS_THESIS]
nh.evaluate(_model(_arrivals()['batch'], LOADS_THESIS[0]))
"""

NEW_HY = """
from qderive.derivations.figures.hysteretic import LOADS_THESIS, _arrivals, figure3_model
def grid(digits):
    return [figure3_model(b, load).evaluate(digits) for b in _arrivals().values() for load in LOADS_THESIS]
figure3_model(_arrivals()['batch'], LOADS_THESIS[0]).evaluate()
"""

OLD_SIM = """
from fractions import Fraction as Fr
from qderive.numeric.simulate import (Algorithm, SimHysteresisModel, SimTwoFlowModel, SimVacationModel,
                                      SwitchingConvention, simulate)
from qderive.symbolic import batches as B, laws as T
B1, F1 = Fr(3, 200), Fr(3, 40)
def vac(law, capacity=200, load=Fr(3, 5)):
    return SimVacationModel(rate=load / (5 * B1), batch=B.Geometric(5), service=law(B1), vacation=law(F1),
                            capacity=capacity)
MODELS = {
    "E4": vac(lambda m: T.Erlang(4, m)), "D": vac(T.Deterministic),
    "M20": vac(T.Exponential, capacity=20, load=Fr(3, 2)), "inf": vac(lambda m: T.Erlang(4, m), capacity=None),
    "hyst": SimHysteresisModel(150, 75, B.Geometric(2), T.Deterministic(Fr(1, 200)), (73, 84, 100),
                               SwitchingConvention.EVENT),
    "tf": SimTwoFlowModel((Fr(3, 5), 2), (1, 5), (2, 4, 5), Algorithm.PRIORITY),
}
def run(key, k=0):
    return simulate(MODELS[key], 100_000, 10, seed=k, quiet=True)
simulate(MODELS[KEY], 2000, 2, seed=0, quiet=True)
"""

NEW_SIM = """
from fractions import Fraction as Fr
import qderive as qd
from qderive.numeric.simulation import vacation as SV, hysteretic as SH, two_flow as ST
B1, F1 = Fr(3, 200), Fr(3, 40)
def vac(law, capacity=200, load=Fr(3, 5)):
    rate = load / (5 * B1)
    if capacity is None:
        return qd.VacationQueue(rate, qd.Geometric(5), law(B1), law(F1))
    return qd.FiniteVacationQueue(rate, qd.Geometric(5), law(B1), law(F1), capacity)
MODELS = {
    "E4": (SV, vac(lambda m: qd.Erlang(4, m))), "D": (SV, vac(qd.Deterministic)),
    "M20": (SV, vac(qd.Exponential, capacity=20, load=Fr(3, 2))),
    "inf": (SV, vac(lambda m: qd.Erlang(4, m), capacity=None)),
    "hyst": (SH, qd.HystereticModel(service=qd.Deterministic(Fr(1, 200)), batch=qd.Geometric(2), rate=150,
                                    overload_factor=Fr(1, 2), convention=qd.Convention.EVENT, L=73, H=84, R=100)),
    "tf": (ST, qd.TwoFlowModel(Fr(3, 5), 2, 1, 5, 2, 4, 5, qd.Algorithm.PRIORITY)),
}
def run(key, k=0):
    mod, model = MODELS[key]
    return mod.simulate(model, 100_000, 10, seed=k, quiet=True)
MODELS[KEY][0].simulate(MODELS[KEY][1], 2000, 2, seed=0, quiet=True)
"""


FLOOR = (HERE / "finite.py").read_text().split("# --- floor ---")[1] if (HERE / "finite.py").exists() else ""


# --------------------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------------------


#: issue 25's rows: the command, run by the side's ``qderive`` in a fresh process (CPU seconds)
EVAL_25 = {
    **{name: ["eval", name, *args] for name, args in EVAL_ARGS.items()},
    "mm1-hysteretic": ["eval", "mm1-hysteretic", "--rates", "1.2,0.6", "--service-rate", "1", "--thresholds", "3,6,9",
                       "--json"],
    "sip-retransmission": ["eval", "sip-retransmission", "--rate", "5", "--service", "exp:mean=0.1", "--timeout", "2",
                           "--control", "ignore", "--thresholds", "2,5", "--scan-points", "8", "--json"],
}
#: a route of the SIP engine per row (tests/test_sip_routes.py: the region of each), lambda_0 = 5, timeout 2 s
SIP_ROUTES = {
    "ThresholdRoute": "--rate-non-invite 3 --control threshold --thresholds 2,5",
    "PriorityQueue": "--rate-non-invite 3 --discipline priority",
    "PriorityChain": "--rate-non-invite 3 --discipline priority --control ignore --thresholds 2,5",
    "InfiniteRoom": "",
    "FiniteRoom": "--capacity 4",
    "MixtureInfinite": "--service erlang:k=2,mean=0.1 --duplicate-cost 0.5",
    "MixtureFinite": "--service erlang:k=2,mean=0.1 --duplicate-cost 0.5 --capacity 4",
    "ExponentialChain": "--control ignore --thresholds 2,5",
    "FiniteControl": "--service erlang:k=2,mean=0.1 --control ignore --thresholds 4,5",
    "GeneralControl": "--service erlang:k=2,mean=0.1 --control ignore --thresholds 2,5",
    "MixtureControl": "--service erlang:k=2,mean=0.1 --duplicate-cost 0.5 --control ignore --thresholds 2,5",
}
#: the SIP simulator's cases (its event loops), seeded
SIP_SIM = {
    "FIFO": "--rate 12",
    "priority": "--rate 8 --rate-non-invite 4 --control 503 --thresholds 10,20 --discipline priority",
    "threshold": "--rate 8 --rate-non-invite 4 --control threshold --thresholds 5,10",
    "Retry-After": "--rate 12 --control 503 --thresholds 10,20 --retry-after 1 --retries 2",
    "Retry-After + vacations": "--rate 10 --vacation exp:mean=0.05 --control 503 --thresholds 3,8 --retry-after 1",
}
#: refusals that depend only on the options (and laws): answered before any work
REFUSALS = {
    "--wait-tail with an empirical service, finite room r = 1e5 (the laws)":
        ["eval", "vacation-finite", "--batch", "geometric:mean=5", "--service", "empirical:file={emp}", "--vacation",
         "erlang:k=4,mean=0.075", "--load", "1.5", "--capacity", "100000", "--wait-tail", "0.1", "--json"],
    "simulate sip --retry-after without 503 (an option)":
        ["simulate", "sip-retransmission", "--rate", "5", "--service", "exp:mean=0.1", "--retry-after", "1", "--json"],
    "simulate sip --control threshold with --vacation (a combination)":
        ["simulate", "sip-retransmission", "--rate", "5", "--service", "exp:mean=0.1", "--control", "threshold",
         "--thresholds", "2,5", "--rate-non-invite", "3", "--vacation", "exp:mean=0.05", "--json"],
    "eval --digits 5000 (a limit)":
        ["eval", "vacation-infinite", "--batch", "geometric:mean=5", "--service", "erlang:k=4,mean=0.015", "--vacation",
         "exp:mean=0.075", "--load", "0.6", "--digits", "5000", "--json"],
}
CLI_25 = CLI + """import tempfile
emp = os.path.join(tempfile.mkdtemp(prefix="qd-bench-emp-"), "service.txt")
open(emp, "w").write("0.01\\n0.02\\n0.015\\n0.03\\n")
def refused(argv):
    p = subprocess.run([exe, *[a.format(emp=emp) for a in argv]], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith("qderive: error:"), (p.returncode, p.stderr[-300:])
"""


def issue25_cases() -> list[Case]:
    """What issue 25 touched (its Performance section: nothing slower; cold eval < 0.35 s; a refusal from the options
    < 1 s): cold ``qderive eval`` of several models, refusals, one eval per route of the SIP engine, the SIP
    simulator's loops. One statement for both sides (the command line), CPU seconds of the process and its
    ``qderive`` child."""
    out = []
    for name, argv in EVAL_25.items():
        stmt = f"subprocess.run([exe, *{argv!r}], check=True, capture_output=True)"
        out.append(Case(f"issue 25: cold `qderive eval {name}` (warm disk cache; CPU)", None, Side(CLI, stmt),
                        target="not slower; < 0.35 s", inner=5, warm=True, clock="cpu"))
    for label, argv in REFUSALS.items():
        out.append(Case(f"issue 25: refusal, {label} (CPU)", None, Side(CLI_25, f"refused({argv!r})"),
                        target="not slower; < 1 s", inner=3, warm=True, clock="cpu"))
    for route, extra in SIP_ROUTES.items():
        argv = ["eval", "sip-retransmission", "--rate", "5", "--timeout", "2", *extra.split(), "--scan-points", "8",
                "--json"]
        if "--service" not in extra:
            argv[4:4] = ["--service", "exp:mean=0.1"]
        stmt = f"subprocess.run([exe, *{argv!r}], check=True, capture_output=True)"
        out.append(Case(f"issue 25: SIP engine route {route}: `eval sip-retransmission {extra}` (CPU)", None,
                        Side(CLI, stmt), inner=1, warm=True, clock="cpu"))  # (warm: a first run fills the cache)
    for label, extra in SIP_SIM.items():
        argv = ["simulate", "sip-retransmission", "--service", "exp:mean=0.1", *extra.split(), "--customers", "100000",
                "--replications", "2", "--seed", "7", "--json", "--quiet"]
        stmt = f"subprocess.run([exe, *{argv!r}], check=True, capture_output=True)"
        out.append(Case(f"issue 25: SIP simulator, {label}: `simulate sip-retransmission {extra}` (CPU)", None,
                        Side(CLI, stmt), inner=3, clock="cpu"))
    return out


def cases() -> list[Case]:
    out: list[Case] = issue25_cases()  # first: a run cut by --budget measures them
    add = out.append
    # -- the finite vacation queue at large r: light load and overload -------------------------
    for r in (30_000, 100_000):
        for load in ("3/5", "6/5"):
            slow_old = r == 100_000 and load == "6/5"
            add(Case(f"vacation-finite r = {r:.0e}, rho_bar = {float(eval(load)):.1f}, float64 (engine)",
                     Side(OLD_VAC, f"finite_measures(vf('{load}', {r}), FLOAT64)"),
                     Side(NEW_VAC, f"FiniteSweep(vf('{load}', {r}), FLOAT64).at({r})"),
                     target="see the derived rows", inner=3, inner_old=1, reps=2 if slow_old else 3,
                     group=f"engine:{r}:{load}"))
    for r in (30_000, 100_000):
        for load in ("3/5", "6/5"):
            lam = float(eval(load)) / (5 * 0.015)
            slow_old = r == 100_000 and load == "6/5"
            add(Case(f"generated vacation-finite loss, r = {r:.0e}, rho_bar = {float(eval(load)):.1f}",
                     Side(_gen(VF_CODEGEN, "vf_old", "loss_probability") + "loss_probability(8.0, 5.0, 0.015, 0.075, 50)",
                          f"loss_probability({lam!r}, 5.0, 0.015, 0.075, {r})"),
                     Side(_gen(VF_CODEGEN, "vf_new", "loss_probability") + "loss_probability(8.0, 5.0, 0.015, 0.075, 50)",
                          f"loss_probability({lam!r}, 5.0, 0.015, 0.075, {r})"),
                     target="see the derived rows", inner=3, inner_old=1, reps=2 if slow_old else 3,
                     group=f"codegen:{r}:{load}"))
    add(Case("hardware floor, r = 1e5 (plain numpy; same numpy in both environments)",
             Side(FLOOR, "floor(100_000)"), Side(FLOOR, "floor(100_000)"), target="-", inner=3, group="floor"))
    # -- Figure 1 and r = 10^4 ---------------------------------------------------------------
    add(Case("Figure-1 grid, 36 points, r = 200, float64 (old finite_measures, new evaluate())",
             Side(OLD_FIG1, "[finite_measures(m, FLOAT64).loss_probability for m in pts]"),
             Side(NEW_FIG1, "[m.evaluate().loss_probability for m in pts]"), inner=5))
    add(Case("Figure-1 grid, 36 points, float64, engine only (FiniteSweep.at)",
             Side(OLD_FIG1, "[FiniteSweep(m, FLOAT64).at(200) for m in pts]"),
             Side(NEW_FIG1, "[FiniteSweep(m, FLOAT64).at(200) for m in pts]"), inner=5))
    add(Case("Figure-1 grid, 36 points, 50 digits (engine at 50 digits)",
             Side(OLD_FIG1, "[finite_measures(m, mp_backend(50)).loss_probability for m in pts]"),
             Side(NEW_FIG1, "[FiniteSweep(m, mp_context(50)).at(200)['loss_probability'] for m in pts]"),
             inner=1, reps=3))
    big_old = ("m = fig1_model(5, 'M', __import__('sympy').Rational(3, 4)).with_capacity(10**4)\n")
    big_new = ("from fractions import Fraction\nm = fig1_model(5, 'M', Fraction(3, 4)).with_capacity(10**4)\n")
    add(Case("one point r = 1e4 (M laws, batch mean 5, rho_bar = 0.75), float64 (old finite_measures, new evaluate())",
             Side(OLD_FIG1 + big_old, "finite_measures(m, FLOAT64)"), Side(NEW_FIG1 + big_new, "m.evaluate()"), inner=5))
    # -- command line ------------------------------------------------------------------------
    for name in ("vacation-infinite", "vacation-finite", "erlang-b"):
        argv = ["eval", name, *EVAL_ARGS[name]]
        stmt = f"subprocess.run([exe, *{argv!r}], check=True, capture_output=True)"
        add(Case(f"cold `qderive eval {name}` (warm disk cache)", Side(CLI + stmt, stmt), Side(CLI + stmt, stmt),
                 target="not slower (< 1 s)", inner=5))
    verify = ("p = subprocess.run([exe, 'verify'], capture_output=True, text=True, "
              "env={**os.environ, 'QDERIVE_CACHE': 'off'})\n"
              "info = f'rc={p.returncode} ' + (p.stdout.strip().splitlines() or [''])[-1][:120]")
    add(Case("`qderive verify`, all derivations, QDERIVE_CACHE=off", Side(CLI, verify), Side(CLI, verify),
             target="not slower (< 2 min)", inner=1, reps=3))
    # -- generated code (codegen_recursions.py, eval_codegen.py) -----------------------------
    for r in (20, 200, 2000):
        stmt = f"loss_probability(8.0, 5.0, 0.015, 0.075, {r})"
        add(Case(f"generated vacation-finite loss, r = {r}",
                 Side(_gen(VF_CODEGEN, "vf_old", "loss_probability"), stmt),
                 Side(_gen(VF_CODEGEN, "vf_new", "loss_probability"), stmt), number=0, warm=True, inner=5))
    stmt = "loss_probability(8.0, 5.0, 0.015, 0.075, list(range(1, 201)))"
    add(Case("generated vacation-finite loss, sweep r = 1..200",
             Side(_gen(VF_CODEGEN, "vf_old", "loss_probability"), stmt),
             Side(_gen(VF_CODEGEN, "vf_new", "loss_probability"), stmt), number=0, warm=True, inner=5))
    eb = ["erlang-b", "--measure", "blocking_probability"]
    for n, rho in ((100, 80), (10_000, 9_500)):
        stmt = f"blocking_probability({float(rho)!r}, {n})"
        add(Case(f"generated Erlang B, n = {n}, rho = {rho}", Side(_gen(eb, "eb_old", "blocking_probability"), stmt),
                 Side(_gen(eb, "eb_new", "blocking_probability"), stmt), number=0, warm=True, inner=5))
    rc = ["redundant-cluster", "--measure", "timely_probability"]
    stmt = "timely_probability(3.0, 2, 10, 10, 0.3, 0.2, 0.6, 0.0, 0.0)"
    add(Case("generated redundant cluster timely probability", Side(_gen(rc, "rc_old", "timely_probability"), stmt),
             Side(_gen(rc, "rc_new", "timely_probability"), stmt), number=0, warm=True, inner=5))
    vi = ["vacation-infinite", "--measure", "mean_wait"]
    stmt = "mean_wait(8.0, 0.015, 1.25 * 0.015**2, 0.075, 2 * 0.075**2, 5.0, 45.0)"
    add(Case("generated vacation-infinite mean_wait, one call", Side(_gen(vi, "vi_old", "mean_wait"), stmt),
             Side(_gen(vi, "vi_new", "mean_wait"), stmt), number=0, warm=True, inner=5))
    vec = "import numpy as np\nlam = np.linspace(0.5, 10, 10**6)\n"
    stmt = "mean_wait(lam, 0.015, 1.25 * 0.015**2, 0.075, 2 * 0.075**2, 5.0, 45.0)"
    add(Case("generated vacation-infinite mean_wait, 10^6 arrival rates (vectorised)",
             Side(_gen(vi, "vi_old", "mean_wait") + vec, stmt), Side(_gen(vi, "vi_new", "mean_wait") + vec, stmt),
             warm=True, inner=5))
    # in-package paths the generated code was compared with
    add(Case("in-package vacation-finite, r = 200 (old finite_measures, new FiniteSweep.at)",
             Side(OLD_VAC, "finite_measures(vf('3/5', 200), FLOAT64)"),
             Side(NEW_VAC, "FiniteSweep(vf('3/5', 200), FLOAT64).at(200)"), number=0, inner=5))
    add(Case("in-package vacation-finite loss sweep r = 1..200 (fresh FiniteSweep)",
             Side(OLD_VAC + "m = vf('3/5', 200)\n", "s = FiniteSweep(m, FLOAT64)\n[s.loss_at(r) for r in range(1, 201)]"),
             Side(NEW_VAC + "m = vf('3/5', 200)\n", "s = FiniteSweep(m, FLOAT64)\n[s.loss_at(r) for r in range(1, 201)]"),
             number=0, inner=5))
    add(Case("in-package vacation-infinite, all measures (old measures(model), new evaluate())",
             Side("from fractions import Fraction as F\nfrom qderive.derivations import vacation_infinite as vi\n"
                  "from qderive.symbolic.batches import Geometric\nfrom qderive.symbolic.laws import Erlang, Exponential\n"
                  "m = vi.VacationQueue.from_load(F(3, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)))\n"
                  "vi.measures(m)\n", "vi.measures(m)"),
             Side("from fractions import Fraction as F\nimport qderive as qd\n"
                  "m = qd.VacationQueue.from_load(F(3, 5), qd.Geometric(5), qd.Erlang(4, F(3, 200)), "
                  "qd.Exponential(F(3, 40)))\nm.evaluate()\n", "m.evaluate()"), number=0, inner=5))
    # -- capacity planning -------------------------------------------------------------------
    cap = [
        ("Erlang B, n = 10^3, rho = 900, float64", "E.erlang_b(10**3, 900, FLOAT64)",
         "qd.ErlangB(servers=10**3, load=900).evaluate()", 0),
        ("Erlang B, n = 10^5, rho = 10^5, float64", "E.erlang_b(10**5, 10**5, FLOAT64)",
         "qd.ErlangB(servers=10**5, load=10**5).evaluate()", 1),
        ("Erlang B, n = 10^4, rho = 9500, 50 digits (kernel at 50 digits)", "mp(50, lambda bk: E.erlang_b(10**4, 9500, bk))",
         "mp(50, lambda c: KE.erlang_b(c, c.num(9500), 10**4))", 1),
        ("Erlang B, n = 10^5, rho = 10^5, 50 digits (kernel at 50 digits)",
         "mp(50, lambda bk: E.erlang_b(10**5, 10**5, bk))", "mp(50, lambda c: KE.erlang_b(c, c.num(10**5), 10**5))", 1),
        ("smallest n, rho = 10^4, B <= 0.01, float64", "E.smallest_servers(10**4, sp.Rational(1, 100), FLOAT64)",
         "E.smallest_servers(10**4, F(1, 100))", 1),
        ("load for n = 10^4 at B = 0.01, float64", "E.load_for_blocking(10**4, sp.Rational(1, 100), FLOAT64)",
         "E.load_for_blocking(10**4, F(1, 100))", 1),
        ("load for n = 100 at B = 0.01, 50 digits", "mp(50, lambda bk: E.load_for_blocking(100, sp.Rational(1, 100), bk))",
         "E.load_for_blocking(100, F(1, 100), digits=50)", 1),
        ("cluster R(k), one point, float64 (new evaluate())", "C.timely_probability(paper, FLOAT64)", "paper.evaluate()", 0),
        ("cluster R(k), one point, 50 digits (engine at 50 digits)", "mp(50, lambda bk: C.timely_probability(paper, bk))",
         "mp(50, lambda c: C.ClusterEngine().compute(paper, c))", 0),
        ("cluster optimal k <= 10, float64", "C.optimal_copies(paper, 10, FLOAT64)",
         "C.optimize(dict(rate=F(3), nodes=(10, 10), service_times=(V, V), deadline=2 * V), qd.OptimizeCopiesRequest(max_copies=10))", 0),
        ("paper's discretisation N = 10^4, float64", "C.paper_discretised(paper, 10**4, FLOAT64)",
         "with FLOAT64:\n    C.paper_discretised(paper, 10**4, FLOAT64)", 0),
        ("SCP run, 120 s at 3x capacity (~36k calls), window", "S.simulate_run(S.SCPConfig(), S.AdaptiveWindow(), 300, seed=1)",
         "S.simulate_run(S.SCPConfig(), S.AdaptiveWindow(), 300, seed=1)", 1),
        ("SCP run, 120 s at 3x capacity, call gapping", "S.simulate_run(S.SCPConfig(), S.CallGapping(), 300, seed=1)",
         "S.simulate_run(S.SCPConfig(), S.CallGapping(), 300, seed=1)", 1),
    ]
    for label, old, new, _ in cap:
        add(Case(label, Side(OLD_CAP + old + "\n", old), Side(NEW_CAP + new + "\n", new), number=0, inner=5))
    # -- two-flow ----------------------------------------------------------------------------
    for H in (8, 12, 16):
        for alg in ("fifo", "priority"):
            stmt = (f"state_space.cache_clear()\nsol = solve(model({H}, '{alg}'), FLOAT64, {{}}.SPARSE)\n"
                    "sol.mean_return_time()")
            add(Case(f"two-flow H = {H}, {alg}: build + sparse solve + return time, float64",
                     Side(OLD_TF, stmt.format("Solver")), Side(NEW_TF, stmt.format("qd.Solver")), inner=3))
    for H in (6,):
        for alg in ("fifo", "priority"):
            add(Case(f"two-flow H = {H}, {alg}: GTH + return time, 50 digits",
                     Side(OLD_TF, f"solve(model({H}, '{alg}'), mp_backend(50)).mean_return_time()"),
                     Side(NEW_TF, f"solve(model({H}, '{alg}'), mp_context(50)).mean_return_time()"), inner=3))
    # -- simulation --------------------------------------------------------------------------
    sims = [("vacation-finite, E4/E4, r = 200, rho_bar = 0.6", "E4"), ("vacation-finite, D/D, r = 200, rho_bar = 0.6", "D"),
            ("vacation-finite, M/M, r = 20, rho_bar = 1.5", "M20"), ("vacation-infinite, E4/E4, rho_bar = 0.6", "inf"),
            ("two-flow, priority, L,H,R = 2,4,5", "tf")]
    for label, key in sims:
        add(Case(f"simulate 10^6 customers: {label}", Side(f"KEY = {key!r}\n" + OLD_SIM, f"run({key!r})"),
                 Side(f"KEY = {key!r}\n" + NEW_SIM, f"run({key!r})"), inner=3))
    # -- hysteretic (last: being finished by another session) --------------------------------
    add(Case("hysteretic Figure-3 grid (42 points), float64", Side(OLD_HY, "grid(None)"), Side(NEW_HY, "grid(None)"),
             target="not slower (< 1 s)", inner=3, live=True))
    add(Case("hysteretic Figure-3 grid (42 points), stable to 50 digits", Side(OLD_HY, "grid(50)"),
             Side(NEW_HY, "grid(50)"), target="not slower (< 30 s)", inner=1, reps=3, live=True))
    hy = ["hysteretic", "--measure", "mean_cycle_time", "--batch", "geometric", "--service", "det"]
    for (L, H, R) in ((73, 84, 100), (100, 200, 300)):
        stmt = f"mean_cycle_time(150.0, 0.5, 2.0, 0.005, {L}, {H}, {R})"
        add(Case(f"generated hysteretic mean_cycle_time, (L,H,R) = ({L},{H},{R})",
                 Side(_gen(hy, "hy_old", "mean_cycle_time"), stmt), Side(_gen(hy, "hy_new", "mean_cycle_time"), stmt),
                 number=0, warm=True, inner=5, live=True))
    add(Case("simulate 10^6 customers: hysteretic, Figure-3 setting, rho_0 = 1.5, event convention (live tree)",
             Side("KEY = 'hyst'\n" + OLD_SIM, "run('hyst')"), Side("KEY = 'hyst'\n" + NEW_SIM, "run('hyst')"),
             inner=3, live=True))
    add(Case("cold `qderive eval hysteretic` (Figure-3 point, warm disk cache)",
             Side(CLI, f"subprocess.run([exe, 'eval', 'hysteretic', *{EVAL_ARGS['hysteretic']!r}], check=True, "
                       "capture_output=True)"),
             Side(CLI, f"subprocess.run([exe, 'eval', 'hysteretic', *{EVAL_ARGS['hysteretic']!r}], check=True, "
                       "capture_output=True)"), target="not slower (< 1 s)", inner=5, live=True))
    return out


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------

LOADS: list[float] = []


#: a snapshot of the new code to measure instead of the working tree (a directory holding ``qderive/``),
#: so that edits made by others during a long run do not change the "after" code half-way
NEW_PYTHONPATH = os.environ.get("NEW_PYTHONPATH")
#: same API: the old side is this snapshot of a later commit (a directory holding ``qderive/``), run through the new
#: API by ``NEW_PYTHON`` (module docstring); None: the pre-redesign code in its own environment
OLD_PYTHONPATH = os.environ.get("OLD_PYTHONPATH")
#: BLAS threads of both sides: "1" (default: stable timings on a shared machine) or "default" (numpy's own)
BLAS_THREADS = os.environ.get("BLAS_THREADS", "1")


def _code(side: str, live: bool = False) -> str | None:
    """The PYTHONPATH that gives ``side`` its code (None: the interpreter's own install)."""
    if side == "old":
        return OLD_PYTHONPATH
    return NEW_PYTHONPATH if not live else None


def _env(side: str, live: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    code = _code(side, live)
    if code:
        env["PYTHONPATH"] = code
    # a private derivation cache per side and per code (never one written by other code)
    tag = hashlib.sha1(f"{_python(side)}:{code}:{HERE}".encode()).hexdigest()[:10]
    cache = Path(tempfile.gettempdir()) / f"qd-cache-bench-{side}-{tag}"
    cache.mkdir(mode=0o700, exist_ok=True)
    env["QDERIVE_CACHE"] = str(cache)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if BLAS_THREADS == "default":
            env.pop(var, None)
        else:
            env[var] = BLAS_THREADS
    return env


def _python(side: str) -> str:
    return OLD_PYTHON if side == "old" and not OLD_PYTHONPATH else NEW_PYTHON


def _statement(case: Case, side: str) -> Side | None:
    """The side's setup and statement: same API (OLD_PYTHONPATH), both sides the new one."""
    return case.new if OLD_PYTHONPATH else getattr(case, side)


#: same API: the reason a case's statement does not run on the old code ("not in the old code")
NOT_IN_OLD = "n/a (not in the old code: "


def run_one(case: Case, side: str, check: bool) -> float | None:
    spec = _statement(case, side)
    if spec is None or case.info.get(side, "").startswith(NOT_IN_OLD):
        return None
    inner = 1 if check else (case.inner_old if side == "old" and case.inner_old else case.inner)
    payload = json.dumps({"setup": spec.setup, "stmt": spec.stmt, "inner": inner, "number": case.number,
                          "warm": case.warm, "clock": case.clock})
    LOADS.append(os.getloadavg()[0])
    live = case.live and not OLD_PYTHONPATH  # same API: both sides snapshots when given
    try:
        p = subprocess.run([_python(side), "-c", RUNNER, payload], capture_output=True, text=True,
                           cwd=tempfile.gettempdir(), env=_env(side, live))
    except FileNotFoundError:  # no such interpreter (OLD_PYTHON / NEW_PYTHON)
        p = subprocess.CompletedProcess([], 1, "", f"no interpreter {_python(side)} (OLD_PYTHON / NEW_PYTHON)")
    line = [x for x in p.stdout.splitlines() if x.startswith("__RESULT__")]
    if p.returncode or not line:
        err = (p.stderr.strip().splitlines() or ["?"])[-1]
        if side == "old" and OLD_PYTHONPATH:  # the statement does not exist at the old commit: said, not dropped
            case.info[side] = f"{NOT_IN_OLD}{err[:200]})"
            print(f"   old: {case.info[side]}", file=sys.stderr, flush=True)
            return None
        case.info[side] = f"FAILED: {err[:200]}"
        print(f"   {side}: FAILED {err[:300]}", file=sys.stderr, flush=True)
        return None
    res = json.loads(line[0][len("__RESULT__"):])
    t = statistics.median(res["times"])
    if res["info"]:
        case.info[side] = res["info"]
    case.results[side].append(t)
    return t


def fmt(t: float | None) -> str:
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.3g} µs"
    if t < 1:
        return f"{t * 1e3:.3g} ms"
    return f"{t:.3g} s"


def med(xs):
    return statistics.median(xs) if xs else None


def derived_rows(all_cases: list[Case]) -> list[tuple]:
    by = {c.group: c for c in all_cases if c.group}
    rows = []
    for kind, label in (("engine", "float64 engine"), ("codegen", "generated code")):
        for r in (30_000, 100_000):
            light, heavy = by.get(f"{kind}:{r}:3/5"), by.get(f"{kind}:{r}:6/5")
            if not light or not heavy:
                continue
            vals = []
            for side in ("old", "new"):
                a, b = med(light.results[side]), med(heavy.results[side])
                vals.append(None if a is None or b is None else b / a)
            rows.append((f"overload cost, {label}, r = {r:.0e}: time(rho_bar 1.2) / time(rho_bar 0.6)",
                         *[f"{v:.2f}x" if v else "-" for v in vals], "-", "<= 1.5x",
                         "met" if vals[1] and vals[1] <= 1.5 else "NOT met"))
    floor = by.get("floor")
    if floor:
        f_new = med(floor.results["new"] + floor.results["old"])  # the same numpy: pool both sides' runs
        for load, lname in (("3/5", "0.6"), ("6/5", "1.2")):
            eng = by.get(f"engine:100000:{load}")
            if not eng or not f_new:
                continue
            vals = [None if med(eng.results[s]) is None else med(eng.results[s]) / f_new for s in ("old", "new")]
            rows.append((f"float64 engine / hardware floor, r = 1e5, rho_bar = {lname}",
                         *[f"{v:.2f}x" if v else "-" for v in vals], "-", "<= 2x",
                         "met" if vals[1] and vals[1] <= 2 else "NOT met"))
    return rows


def table(all_cases: list[Case]) -> str:
    lines = ["| case | before | after | after / before | target | |", "|---|---|---|---|---|---|"]
    for c in all_cases:
        b, a = med(c.results["old"]), med(c.results["new"])
        ratio = f"{a / b:.2f}" if a and b else "-"
        if c.info.get("old", "").startswith(NOT_IN_OLD):
            ratio = c.info["old"]
        elif not c.results["old"] and _statement(c, "old") is None:
            ratio = "n/a (no old-API statement: a same-API row, OLD_PYTHONPATH)"
        elif not c.results["old"] and not c.results["new"] and not c.info:
            ratio = "not run (time budget)"
        verdict = ""
        if a and b and c.target.startswith("not slower"):
            verdict = "ok" if a <= 1.1 * b else ("noise?" if a <= 1.25 * b else "SLOWER")
        bound = re.search(r"< ([0-9.]+) s", c.target)
        if a and bound:  # an absolute target of the after side
            verdict += f" ({'met' if a < float(bound.group(1)) else 'NOT met'})"
        note = "; ".join(f"{s}: {v}" for s, v in c.info.items() if "FAILED" in v or s == "new" and "rc=" in v)
        runs = f" ({len(c.results['old'])}+{len(c.results['new'])} runs)"
        lines.append(f"| {c.name}{runs} | {fmt(b)} | {fmt(a)} | {ratio} | {c.target} | {verdict} {note} |")
    for row in derived_rows(all_cases):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", action="append", default=[], help="run the cases whose name contains this (repeatable)")
    ap.add_argument("--skip", action="append", default=[], help="skip the cases whose name contains this")
    ap.add_argument("--side", choices=("old", "new"), help="measure one side only (e.g. more runs of the new code)")
    ap.add_argument("--check", action="store_true", help="run every case once, one timing (a smoke test)")
    ap.add_argument("--json", help="write the raw timings here")
    ap.add_argument("--from-json", action="append", default=[],
                    help="print the table of earlier runs (raw timings written by --json; repeatable, merged)")
    ap.add_argument("--same-api", action="store_true",
                    help="both sides through the new API, the old code from OLD_PYTHONPATH (required then)")
    ap.add_argument("--snapshot", nargs=2, metavar=("COMMIT", "DIR"),
                    help="make DIR/qderive/ of COMMIT for OLD_PYTHONPATH or NEW_PYTHONPATH, and stop")
    ap.add_argument("--budget", type=float, metavar="MIN",
                    help="start no measurement after MIN minutes (the cases left: 'not run (time budget)')")
    args = ap.parse_args()
    if args.snapshot:
        print(snapshot(*args.snapshot))
        return
    if args.same_api and not OLD_PYTHONPATH:
        ap.error("--same-api needs OLD_PYTHONPATH=<dir> (a snapshot: --snapshot COMMIT DIR)")
    if args.from_json:
        known = {c.name: c for c in cases()}
        shown = []
        for path in args.from_json:
            data = json.loads(Path(path).read_text())
            LOADS.extend(data["loads"])
            for row in data["cases"]:
                c = known.get(row["name"]) or Case(row["name"], None, None, target=row["target"])
                c.results = {"old": row["old"], "new": row["new"]}
                c.info = row["info"]
                shown.append(c)
        print(f"1-minute load average over the runs: min {min(LOADS):.2f}, median {statistics.median(LOADS):.2f}, "
              f"max {max(LOADS):.2f} (2 cores).\n")
        print(table(shown))
        return
    todo = [c for c in cases() if (not args.only or any(s in c.name for s in args.only))
            and not any(s in c.name for s in args.skip)]
    reps = 1 if args.check else args.reps
    started = time.time()
    old = f"{NEW_PYTHON} with {OLD_PYTHONPATH} (same API)" if OLD_PYTHONPATH else OLD_PYTHON
    print(f"{len(todo)} cases, {reps} repetitions; old = {old}, new = {NEW_PYTHON} "
          f"(code: {NEW_PYTHONPATH or 'the working tree'}; BLAS threads: {BLAS_THREADS}); "
          f"load average at start {os.getloadavg()}", file=sys.stderr, flush=True)
    for rep in range(reps):
        for c in todo:
            if c.reps is not None and rep >= min(c.reps, reps):
                continue
            if args.budget is not None and time.time() - started > 60 * args.budget:
                continue  # (a case never measured shows as "not run (time budget)")
            order = ("old", "new") if rep % 2 == 0 else ("new", "old")
            got = {s: run_one(c, s, args.check) if args.side in (None, s) else None for s in order}
            print(f"[{rep}] {c.name}: old {fmt(got['old'])}  new {fmt(got['new'])}  "
                  f"(load {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)
    elapsed = time.time() - started
    mode = f"same API, before = {OLD_PYTHONPATH}, after = {NEW_PYTHONPATH or 'the working tree'}; " \
        if OLD_PYTHONPATH else ""
    print(f"\nMeasured {time.strftime('%Y-%m-%d %H:%M')} in {elapsed / 60:.0f} min; {mode}"
          f"1-minute load average over the run: min {min(LOADS):.2f}, median {statistics.median(LOADS):.2f}, "
          f"max {max(LOADS):.2f} (2 cores).\n")
    print(table(todo))
    if args.json:
        Path(args.json).write_text(json.dumps({"loads": LOADS, "elapsed": elapsed, "cases": [
            {"name": c.name, "old": c.results["old"], "new": c.results["new"], "info": c.info, "target": c.target}
            for c in todo]}, indent=1))


def snapshot(commit: str, directory: str) -> str:
    """``DIR/qderive/`` importing as ``qderive`` the tree of ``commit``: ``git archive`` unpacked in ``DIR/src``, the
    facade ``derivations/_qderive`` copied to ``DIR/qderive`` and the three code folders linked into it (the
    package-dir mapping of pyproject.toml; the links keep each module's resolved path inside ``DIR/src``)."""
    import shutil

    root = Path(directory).resolve()
    src, pkg = root / "src", root / "qderive"
    if src.exists() or pkg.exists():
        raise SystemExit(f"{root}: already holds src/ or qderive/ (remove them first)")
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", commit], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    shutil.copytree(src / "derivations" / "_qderive", pkg)
    for folder in ("symbolic", "numeric", "derivations"):
        (pkg / folder).symlink_to(src / folder, target_is_directory=True)
    return f"OLD_PYTHONPATH={root}  (or NEW_PYTHONPATH): qderive of {commit}"


if __name__ == "__main__":
    main()
