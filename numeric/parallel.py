"""Executors for grids of independent evaluations (``qderive sweep``, ``qderive optimize``).

:func:`executor` opens a :class:`concurrent.futures.Executor` for the duration of a ``with`` block:

* ``"local"`` -- a :class:`~concurrent.futures.ProcessPoolExecutor` of ``workers`` processes
  (``workers`` None or 1: no pool, the work runs in this process), with the platform's start
  method: fork on Linux (a worker starts in milliseconds and imports nothing), spawn on macOS and
  Windows (a script then needs the usual ``if __name__ == "__main__":`` guard). The task
  functions live in :mod:`qderive.numeric` (:func:`qderive.numeric.sweep.evaluate_chunk`), so a
  spawned or Dask worker that unpickles one imports the numeric code and the model classes
  only, never SymPy or the command line.
* ``"dask"`` -- ``Client.get_executor()`` of a Dask cluster: the scheduler at ``scheduler``
  (an address, ``tcp://host:8786``) or, without one, a ``LocalCluster`` of ``workers``
  processes with one thread each (mpmath's working precision is process-wide, so evaluations
  never share a process's threads). Dask is the optional extra ``pip install 'qderive[dask]'``.

Every task is a pure function of its arguments, so results do not depend on the executor,
the number of workers or the order in which tasks finish.
"""

from __future__ import annotations

import contextlib
import os

from ..symbolic.errors import ParameterError

__all__ = ["executor", "EXECUTORS", "worker_count", "with_limits"]

#: the executor kinds of ``--executor``
EXECUTORS = ("local", "dask")


def worker_count(workers: int | None) -> int:
    """``workers``, or the CPUs this process may use when None."""
    if workers is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):  # pragma: no cover - not Linux
            return max(1, os.cpu_count() or 1)
    return workers


def _check(kind, workers, scheduler):
    if kind not in EXECUTORS:
        raise ParameterError("--executor", f"must be one of {', '.join(EXECUTORS)}", kind)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ParameterError("--workers", "must be an integer >= 1", workers)
    if scheduler is not None and kind != "dask":
        raise ParameterError("--scheduler", "needs --executor dask", scheduler)


@contextlib.contextmanager
def executor(kind: str = "local", workers: int | None = None, scheduler: str | None = None):
    """A ``with`` block yielding ``(executor, n)``: a concurrent.futures executor (None: run in this
    process) and the number of workers it has (module docstring)."""
    _check(kind, workers, scheduler)
    if kind == "local":
        n = 1 if workers is None else workers
        if n == 1:
            yield None, 1
            return
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(n)  # the platform's start method: fork on Linux, spawn elsewhere
        try:
            yield pool, n
        except BaseException:  # an error or Ctrl-C: do not wait for the chunks still queued
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ParameterError("--executor dask", "needs Dask: pip install 'qderive[dask]' (dask[distributed])") from None
    with contextlib.ExitStack() as stack:
        if scheduler is not None:
            client = stack.enter_context(Client(scheduler))
        else:
            n = worker_count(workers)
            cluster = stack.enter_context(LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                       dashboard_address=None))
            client = stack.enter_context(Client(cluster))
        n = max(1, sum(client.nthreads().values()))
        yield client.get_executor(), n


def with_limits(limits, function, *args):
    """``function(*args)`` under the size limits ``limits`` (a :class:`~qderive.symbolic.limits.Limits`):
    a worker process does not inherit the caller's ``--limit`` otherwise."""
    import dataclasses

    from ..symbolic.limits import limits as _within

    with _within(**dataclasses.asdict(limits)):
        return function(*args)
