"""The private cache: keyed by the whole package source, created 0700/0600 whatever the umask,
ignored (with one warning) when it is not private, repaired when damaged; results are the same
with the cache on and off."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from qderive.symbolic import cache


@pytest.fixture
def private_dir(tmp_path, monkeypatch):
    d = tmp_path / "c"
    monkeypatch.setenv("QDERIVE_CACHE", str(d))
    cache.clear_warnings()
    return d


def test_entries_are_private_even_under_umask_000(private_dir):
    old = os.umask(0)
    try:
        assert cache.cached("k", lambda: {"x": 1}) == {"x": 1}
    finally:
        os.umask(old)
    sub = cache.cache_dir()
    assert stat.S_IMODE(os.stat(private_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(sub).st_mode) == 0o700
    files = list(sub.iterdir())
    assert files and all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)


def test_the_key_contains_the_versions_and_the_source_hash(private_dir):
    sub = cache.cache_dir()
    assert cache.source_hash() in sub.name


def test_a_directory_others_can_write_is_ignored_with_one_warning(private_dir):
    private_dir.mkdir(mode=0o700)
    os.chmod(private_dir, 0o777)
    calls = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            cache.cached("k", lambda: calls.append(1) or 5)
    assert calls == [1, 1, 1]  # never loaded from (or written to) the unsafe directory
    assert sum(issubclass(x.category, cache.CacheWarning) for x in w) == 1
    assert not any(private_dir.iterdir())


def test_a_planted_file_that_others_can_write_is_not_loaded(private_dir):
    assert cache.cached("key", lambda: "good") == "good"
    entry = next(cache.cache_dir().iterdir())
    entry.write_bytes(pickle.dumps("planted"))
    os.chmod(entry, 0o666)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cache.cached("key", lambda: "good") == "good"


def test_a_module_planted_in_the_cache_does_not_run(private_dir, tmp_path):
    mod = cache.cached_module("m", lambda: "VALUE = 1\n")
    assert mod.VALUE == 1
    path = next(p for p in cache.cache_dir().iterdir() if p.suffix == ".py")
    flag = tmp_path / "ran"
    path.write_text(f"open({str(flag)!r}, 'w').write('x')\nVALUE = 2\n")
    os.chmod(path, 0o664)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cache.cached_module("m", lambda: "VALUE = 1\n") is None
    assert not flag.exists()


def test_a_damaged_entry_is_derived_again_and_repaired(private_dir):
    cache.cached("k", lambda: [1, 2])
    entry = next(cache.cache_dir().iterdir())
    entry.write_bytes(b"not a pickle")
    assert cache.cached("k", lambda: [1, 2]) == [1, 2]
    assert pickle.loads(entry.read_bytes())[2] == [1, 2]


@pytest.mark.parametrize("content", [b"", b"\x80\x05garbage", pickle.dumps(7), pickle.dumps(("x", "k", 1)),
                                     pickle.dumps(("qderive-cache-entry-1", "other key", 1))])
def test_an_entry_that_fails_to_load_for_any_reason_is_discarded_and_rederived(private_dir, content):
    """Empty, garbage, a pickle of another type, another key's entry: derived again, never returned."""
    assert cache.cached("k", lambda: {"a": 1}) == {"a": 1}
    entry = next(cache.cache_dir().iterdir())
    entry.write_bytes(content)
    calls = []
    assert cache.cached("k", lambda: calls.append(1) or {"a": 1}) == {"a": 1}
    assert calls == [1]
    assert cache.cached("k", lambda: calls.append(1) or {"a": 1}) == {"a": 1}
    assert calls == [1]  # repaired: the second call loads it


@pytest.mark.parametrize("content", ["", "VALUE = 1\n", "VALUE = (\n", "raise RuntimeError('x')\n"])
def test_a_cached_module_emptied_or_cut_short_is_written_again(private_dir, content):
    """A 0-byte module imports fine and used to break every later run (no ``evaluate``): the completion
    marker tells it from a whole one."""
    assert cache.cached_module("m", lambda: "VALUE = 1\nOTHER = 2\n").OTHER == 2
    path = next(p for p in cache.cache_dir().iterdir() if p.suffix == ".py")
    path.write_text(content)
    assert cache.cached_module("m", lambda: "VALUE = 1\nOTHER = 2\n").OTHER == 2


def test_writes_leave_no_temporary_file(private_dir):
    cache.cached("k", lambda: 1)
    cache.cached_module("m", lambda: "X = 1\n")
    # __pycache__: the bytecode Python writes when it imports the cached module (unless PYTHONDONTWRITEBYTECODE is
    # set), not a file of the cache; a temporary file would start with "."
    assert sorted(p.name[0] for p in cache.cache_dir().iterdir() if p.name != "__pycache__") == ["m", "r"]


def _derive_in_a_child(barrier, log, key):
    """A forked worker: wait for the other, then ask the cache for ``key``, whose derivation takes 0.4 s and
    leaves a line in ``log``; write the result."""
    barrier.wait(timeout=30)

    def derive():
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(0.4)
        return {"derived by": os.getpid()}

    result = cache.cached(key, derive)
    with open(f"{log}.{os.getpid()}", "w") as fh:
        fh.write(repr(result))
    os._exit(0)


def test_two_processes_started_cold_derive_an_entry_once(private_dir, tmp_path):
    """Two processes (two test workers) that miss the same entry at the same moment: one derives it, the other
    waits for its lock and loads what it wrote (without the lock both derived it, each 0.4 s here, and a minute
    for a cold symbolic derivation). The lock file is gone afterwards."""
    ctx = multiprocessing.get_context("fork")
    barrier, log = ctx.Barrier(2), tmp_path / "derivations"
    children = [ctx.Process(target=_derive_in_a_child, args=(barrier, str(log), "shared key")) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    derivers = log.read_text().split()
    assert len(derivers) == 1  # derived once
    results = {(tmp_path / f"derivations.{child.pid}").read_text() for child in children}
    assert results == {repr({"derived by": int(derivers[0])})}  # the other process loaded the same entry
    assert not [p.name for p in cache.cache_dir().iterdir() if p.name.endswith(".lock")]


def test_a_cache_directory_made_meanwhile_by_another_process_is_used(private_dir, monkeypatch):
    """Two processes started cold both see no cache directory; the second one's mkdir then fails with
    FileExistsError. That turned its cache off, so it derived without the lock (the test above failed once in CI
    with two derivers). Now the directory made meanwhile is used once its privacy is checked."""
    made = cache.cache_dir()  # the first process's directory (and its version subdirectory)
    real = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self, *a, **k: False if self in (private_dir, made) else real(self, *a, **k))
    assert cache.cache_dir() == made


def test_a_lock_held_too_long_is_not_waited_for_forever(private_dir, monkeypatch):
    """A lock that stays held (a stuck process) costs at most LOCK_WAIT: then the process derives the entry
    itself, as without a lock."""
    monkeypatch.setattr(cache, "LOCK_WAIT", 0.2)
    path = cache.cache_dir() / f"r_{cache._safe_name('k')}.pkl"
    with cache._entry_lock(path):  # another open file description: its flock conflicts, as another process's
        start = time.monotonic()
        assert cache.cached("k", lambda: 42) == 42
        assert 0.2 <= time.monotonic() - start < 5
    assert cache.cached("k", lambda: 0) == 42  # written


def test_off_disables_the_cache(monkeypatch):
    monkeypatch.setenv("QDERIVE_CACHE", "off")
    assert cache.cache_dir() is None and cache.cached_module("m", lambda: "X = 1\n") is None


def _eval_in_subprocess(env):
    # The redundant cluster's closed forms go through the same cached evaluator (numeric.compile.cached_evaluator:
    # compiled SymPy with the cache off, the generated module written on a miss and loaded when warm) as the
    # vacation queue's, at about half the cold derivation (1.1 s against 1.9 s of CPU per subprocess).
    code = ("import qderive as qd\nr = qd.RedundantCluster.example().evaluate()\n"
            "print(repr(r.timely_probability), repr(r.mean_wait_lower))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


def test_results_are_the_same_with_the_cache_on_off_and_warm(tmp_path):
    env = dict(os.environ)
    off = _eval_in_subprocess({**env, "QDERIVE_CACHE": "off"})
    cold = _eval_in_subprocess({**env, "QDERIVE_CACHE": str(tmp_path / "fresh")})
    assert any(f.suffix == ".py" for f in (tmp_path / "fresh").rglob("*"))  # the generated module the warm run loads
    warm = _eval_in_subprocess({**env, "QDERIVE_CACHE": str(tmp_path / "fresh")})
    assert off == cold == warm
    # the example's nodes are M/M/1 at rho = k Lambda v / n = 2 * 3 * 0.3 / 10 = 0.18: W_q = rho v / (1 - rho)
    timely, wait = map(float, off.split())
    assert wait == pytest.approx(0.18 * 0.3 / 0.82, rel=1e-14) and 0 < timely < 1
