"""Every registered derivation: each displayed step is computed by SymPy or evaluated by verify;
exports work; the vacation derivations' checks all pass."""

from __future__ import annotations

import pytest

from qderive.symbolic.models import registered_models
from qderive.derivations.capabilities import has as _has, load as _load

NAMES = sorted(n for n, c in registered_models().items() if _has(c, "derivation"))


def _derivation(name):
    return _load(name, "derivation")()


@pytest.mark.parametrize("name", NAMES)
def test_every_step_is_computed_or_evaluated(name):
    d = _derivation(name)
    unverified = [s.label for s in d.steps if not (s.computed or s.check)]
    assert not unverified, f"{name}: steps neither computed nor evaluated by verify: {unverified}"
    assert d.all_checks(), name


@pytest.mark.parametrize("name", NAMES)
def test_exports_and_notebook_rendering(name):
    d = _derivation(name)
    md, tex = d.markdown(), d.latex(fragment=True)
    from qderive.derivations.export.latex import tag

    assert all(tag(s.label) in md for s in d.steps) and tex.count("\\begin{equation}") == len(d.steps)
    assert d._repr_latex_().startswith("$")


#: the vacation derivations' checks run in this many parts (every PARTS-th check), one test each, so that xdist
#: can spread them over its workers: interleaved, because the waiting-time checks, the costly ones, come last.
#: In one process the parts still share what the checks derive (the step hooks' exact bindings are cached).
PARTS = 3


@pytest.mark.parametrize("name", ["vacation-infinite", "vacation-finite"])
def test_vacation_derivations_evaluate_their_displayed_steps(name):
    assert sum(c.name.endswith("as displayed, evaluated") for c in _derivation(name).all_checks()) >= 3


@pytest.mark.parametrize("part", range(PARTS))
@pytest.mark.parametrize("name", ["vacation-infinite", "vacation-finite"])
def test_vacation_derivations_verify(name, part):
    results = [check(40) for check in _derivation(name).all_checks()[part::PARTS]]
    failed = [(r.name, r.detail) for r in results if not r.passed]
    assert results and not failed


def test_verify_jobs_same_results_and_bad_jobs():
    """`qderive verify --jobs 2` (forked workers) reports the same checks, verdicts and digits as `--jobs 1`, in the
    same order; `--jobs 0` is refused naming the option."""
    import json

    from conftest import cli

    runs = []
    for jobs in ("1", "2"):
        code, out, _ = cli(["verify", "scp-window", "--json", "--digits", "30", "--jobs", jobs])
        assert code == 0
        runs.append([(r["model"], r["check"], r["passed"], r["digits_agreed"], r["detail"])
                     for r in json.loads(out)["checks"]])
    assert runs[0] == runs[1] and len(runs[0]) > 3
    code, _, err = cli(["verify", "scp-window", "--jobs", "0"])
    assert code == 2 and "--jobs" in err


def test_verify_workers_share_models_and_report_in_serial_order():
    """The scheduler of `verify --jobs N` (derivations/cli/verify.py): 3 workers on 2 models of 1 and 7 checks
    (a worker left without an unstarted model joins one in progress), every check run exactly once, results in the
    serial order; a model whose derivation cannot be built raises its error in the parent."""
    import os

    import pytest

    from qderive.derivations.cli.verify import run_parallel
    from qderive.numeric.engines.progress import Progress

    sizes = {"a": 1, "b": 7}

    def checks(name):
        if name == "bad":
            raise ValueError("no derivation here")
        return [lambda digits, name=name, i=i: (name, i, digits, os.getpid()) for i in range(sizes[name])]

    with Progress(None, "checks", quiet=True) as bar:
        out = run_parallel(["a", "b"], checks, 30, 3, bar)
        assert bar.total == 8 and bar._done == 8
    assert [(name, r[:3]) for name, r in out] == [(n, (n, i, 30)) for n in "ab" for i in range(sizes[n])]
    assert all(r[3] != os.getpid() for _, r in out)  # run in the workers
    with Progress(None, "checks", quiet=True) as bar, pytest.raises(ValueError, match="no derivation here"):
        run_parallel(["a", "bad"], checks, 30, 2, bar)
