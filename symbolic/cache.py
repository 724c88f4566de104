"""A private on-disk cache for results derived once (general-law closed forms, generated evaluators).

Symbolic derivations with general laws are the same for every model, and generating
numpy code from them costs far more than importing it, so both are kept under
``$QDERIVE_CACHE`` (default ``$XDG_CACHE_HOME/qderive`` or ``~/.cache/qderive``;
``QDERIVE_CACHE=off`` disables it). Loading from a cache is code execution (pickle,
import), so the cache is trusted only when it is private:

* the key of an entry includes the package version, the SymPy version and a hash of the
  *whole* package source (editing any module of qderive invalidates every entry);
* the directory is created with mode 0700 and files with mode 0600 (whatever the umask);
* a directory or file that is not owned by the user, or that group or others can write,
  is ignored, with one warning per process (:class:`CacheWarning`); nothing is loaded
  from it and nothing is written to it;
* an entry that fails to load for any reason (empty, truncated, garbage, a pickle of another
  type or key, a module that does not import or lacks its completion marker) is discarded,
  derived again and rewritten;
* writes are atomic: a temporary file in the same directory, fsynced, then renamed;
* a missing entry is derived by one process at a time: the first takes an advisory lock (``fcntl.flock`` on a
  file ``.NAME.lock`` next to the entry, created 0600 in the private directory, removed when the entry is
  written), another process that needs the same entry waits for it and loads what the first wrote instead of
  deriving it again (two test workers, or two commands, started cold). The lock only saves work: where
  ``fcntl`` is missing, the lock file cannot be made, or the wait passes :data:`LOCK_WAIT` seconds, the process
  derives the entry itself, as without a lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pickle
import stat
import time
import warnings
from pathlib import Path
from typing import Callable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, each process derives what it misses
    fcntl = None

__all__ = ["CacheWarning", "cache_dir", "cached", "cached_module", "source_hash"]


class CacheWarning(UserWarning):
    """The cache directory is not private (or not usable): it is ignored."""


_WARNED: set = set()
_HASH: list = []


def source_hash() -> str:
    """SHA-256 over every .py file of the package (symbolic, numeric, derivations), computed once."""
    if not _HASH:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        for sub in ("symbolic", "numeric", "derivations"):
            for path in sorted((root / sub).rglob("*.py")):
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
        _HASH.append(h.hexdigest()[:20])
    return _HASH[0]


def _version_key() -> str:
    try:
        from importlib.metadata import version

        qd = version("qderive")
    except Exception:  # pragma: no cover - not installed (running from a checkout)
        qd = "0"
    try:
        from importlib.metadata import version

        sy = version("sympy")
    except Exception:  # pragma: no cover
        sy = "0"
    return f"{qd}-{sy}-{source_hash()}"


def _warn_once(path: Path, why: str) -> None:
    key = (str(path), why)
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(f"qderive cache {path} is ignored: {why}", CacheWarning, stacklevel=3)


def _private(path: Path) -> bool:
    """True when ``path`` exists, is owned by this user and is writable by nobody else."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        _warn_once(path, "it is a symbolic link")
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        _warn_once(path, "it is not owned by the current user")
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        _warn_once(path, "group or others can write it")
        return False
    return True


def cache_dir() -> Path | None:
    """The private cache directory (created 0700 if absent), or None when disabled or not private."""
    setting = os.environ.get("QDERIVE_CACHE", "")
    if setting.lower() == "off":
        return None
    base = Path(setting) if setting else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "qderive"
    if not base.exists():
        try:
            base.mkdir(parents=True, mode=0o700)
            os.chmod(base, 0o700)  # the umask may have removed bits; never more than 0700
        except FileExistsError:  # made meanwhile by another process started cold: its privacy is checked below
            pass
        except OSError:
            return None
    if not _private(base):
        return None
    sub = base / _version_key()
    if not sub.exists():
        try:
            sub.mkdir(mode=0o700)
            os.chmod(sub, 0o700)
        except FileExistsError:  # as above (two test workers started together: the second ran without its cache)
            pass
        except OSError:
            return None
    return sub if _private(sub) else None


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same private directory, written and
    fsynced, then renamed over ``path`` (a reader sees the old entry or the whole new one, never a part; a
    crash leaves at most a temporary file). Any failure leaves ``path`` as it was: the cache is an
    optimisation, never a reason to fail."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        try:  # the rename itself durable: fsync the directory (not possible everywhere)
            dfd = os.open(path.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


#: seconds a process waits for another one deriving the same entry before deriving it itself: the longest cold
#: derivation measured takes 7 s of CPU (the fourth wait moments), a minute on a loaded machine; past that the
#: wait costs at most what deriving it again would (and a lock held by mistake, say by a forked process that
#: inherited it, delays by this much, never hangs)
LOCK_WAIT = 120.0


@contextlib.contextmanager
def _entry_lock(path: Path):
    """Held while this process derives and writes the entry ``path``: an exclusive ``flock`` on
    ``.NAME.lock`` in the entry's (private) directory. Waits while another process holds it, polling, at most
    :data:`LOCK_WAIT` seconds; yields in any case (no lock: the caller derives as it would without one). The
    lock file is removed before it is released (the entry is written by then); a process that acquired a lock
    file already removed takes the new one, so that two processes never derive at once by mistake."""
    if fcntl is None:
        yield
        return
    lock = path.with_name(f".{path.name}.lock")
    deadline = time.monotonic() + LOCK_WAIT
    fd = None
    pause = 0.005
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError:
            break
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            fd = None
            if time.monotonic() > deadline:
                break
            time.sleep(pause)
            pause = min(2 * pause, 0.1)
            continue
        try:  # the file locked is still the lock file (not one its holder removed meanwhile)
            same = os.path.samestat(os.fstat(fd), os.stat(lock, follow_symlinks=False))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
        fd = None
    try:
        yield
    finally:
        if fd is not None:
            try:
                lock.unlink()
            except OSError:
                pass
            os.close(fd)  # releases the flock


def _load_entry(path: Path, key: str):
    """(True, result) from a whole entry of ``key`` at ``path``; (False, None) when there is none, or the entry
    failed to load in any way (then it is discarded)."""
    if not (path.exists() and _private(path)):
        return False, None
    try:
        with open(path, "rb") as fh:
            entry = pickle.load(fh)
        if isinstance(entry, tuple) and len(entry) == 3 and entry[0] == _TAG and entry[1] == key:
            return True, entry[2]
    except Exception:  # noqa: BLE001 - damaged in any way: derive again and rewrite
        pass
    _discard(path)
    return False, None


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _safe_name(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:32]


#: the first element of every pickled entry: with the key, it tells an entry of this cache from anything else
_TAG = "qderive-cache-entry-1"
#: the last line of every cached module: a module without it was cut short (an empty file imports fine)
_MODULE_END = "__qderive_cache_complete__ = True\n"


def cached(key: str, derive: Callable[[], object]):
    """``derive()``, or its pickled result from an earlier run of the same package source.

    An entry is pickled as ``(tag, key, result)``; one that fails to load for any reason (empty, truncated,
    garbage, a pickle of something else, another key's entry) is discarded, derived again and rewritten.
    """
    base = cache_dir()
    if base is None:
        return derive()
    path = base / f"r_{_safe_name(key)}.pkl"
    found, result = _load_entry(path, key)
    if found:
        return result
    with _entry_lock(path):
        found, result = _load_entry(path, key)  # written by the process that held the lock meanwhile
        if found:
            return result
        result = derive()
        try:
            data = pickle.dumps((_TAG, key, result), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - not picklable: simply not cached
            return result
        _write_private(path, data)
    return result


def cached_module(key: str, make_source: Callable[[], str]):
    """A generated Python module kept in the cache (written first if absent); None if there is no cache.

    The module's source ends with a completion marker; a file that lacks it (empty, cut short) or fails
    to import for any reason is discarded and written again once."""
    base = cache_dir()
    if base is None:
        return None
    name = f"m_{_safe_name(key)}"
    path = base / f"{name}.py"
    for attempt in range(2):
        if not path.exists():
            with _entry_lock(path):
                if not path.exists():  # or written by the process that held the lock meanwhile
                    _write_private(path, (make_source().rstrip("\n") + "\n\n" + _MODULE_END).encode("utf-8"))
        if not (path.exists() and _private(path)):
            return None
        spec = importlib.util.spec_from_file_location(f"qderive_generated_{name}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            if getattr(module, "__qderive_cache_complete__", False) is True:
                return module
        except Exception:  # noqa: BLE001 - damaged in any way: rewrite once
            pass
        _discard(path)
    return None  # pragma: no cover


def clear_warnings() -> None:
    """Forget which warnings were given (tests)."""
    _WARNED.clear()


