"""A small on-disk cache for results derived once (general-law closed forms).

Symbolic derivations with general laws are the same for every model, so they are
derived once and pickled under ``$QDERIVE_CACHE`` (default
``~/.cache/qderive``), keyed by the package version and the hash of the deriving
module's source: editing a derivation invalidates its entry. Set
``QDERIVE_CACHE=off`` to always derive afresh.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import pickle
from pathlib import Path
from typing import Callable

__all__ = ["cached", "cache_dir"]


def cache_dir() -> Path | None:
    setting = os.environ.get("QDERIVE_CACHE", "")
    if setting.lower() == "off":
        return None
    base = Path(setting) if setting else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "qderive"
    return base


def cached(key: str, derive: Callable[[], dict]) -> dict:
    """``derive()``, or its pickled result from an earlier run of the same source."""
    module = inspect.getmodule(derive)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except OSError:
        source = ""
    digest = hashlib.sha256((key + source).encode()).hexdigest()[:16]
    base = cache_dir()
    path = base / f"{key}-{digest}.pkl" if base is not None else None
    if path is not None and path.exists():
        try:
            with open(path, "rb") as fh:
                return pickle.load(fh)
        except Exception:  # a corrupt or incompatible entry is simply derived again
            pass
    result = derive()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp%d" % os.getpid())
            with open(tmp, "wb") as fh:
                pickle.dump(result, fh)
            os.replace(tmp, path)
        except OSError:
            pass
    return result


def cached_module(key: str, make_source: Callable[[], str]):
    """Import a generated Python module stored under the cache, writing it first if absent.

    Used for compiled numeric evaluators: generating code with SymPy's printers costs
    far more than importing it, and ``qderive eval`` must answer quickly. Returns None
    when the cache is disabled (``QDERIVE_CACHE=off``) or not writable.
    """
    import importlib.util

    base = cache_dir()
    if base is None:
        return None
    path = base / "modules" / f"m_{key}.py"
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp%d" % os.getpid())
            tmp.write_text(make_source(), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            return None
    spec = importlib.util.spec_from_file_location(f"qderive_generated_{key}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:  # a damaged entry: fall back to compiling afresh
        return None
    return module
