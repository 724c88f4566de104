"""``qderive verify`` in several processes: the models' derivations built and their checks run by forked workers.

A check often reuses what an earlier check of the same model computed (the exact sequences of the model's
oracle points, a solved chain, the symbolic closed forms of a family): those are memoised per process. So the
unit handed to a worker is a *model*: the worker builds the derivation (import, steps, cached forms) and claims
that model's checks one at a time from a counter shared by all workers; a worker that finds no unstarted model
joins the model with the most unclaimed checks (building its derivation once more). The work is thus balanced
to within one check, every derivation is built in parallel instead of before the workers start, and a memo is
recomputed only by a worker that joins a model late. The results are reported in the order of the serial run.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import time

__all__ = ["run_parallel"]

_UNSTARTED, _BUILDING = -1, -2


def _claim(count, claimed, lock, current):
    """Under ``lock``: (model, index) of the next check this worker runs, (model, None) for a model to build,
    ("wait", None) while another worker builds the last models, (None, None) when everything is claimed."""
    with lock:
        m = current
        if m is not None and count[m] >= 0 and claimed[m] < count[m]:
            claimed[m] += 1
            return m, claimed[m] - 1
        for m in range(len(count)):
            if count[m] == _UNSTARTED:
                count[m] = _BUILDING
                return m, None
        left = [(count[m] - claimed[m], m) for m in range(len(count)) if count[m] >= 0]
        best = max(left, default=(0, None))
        if best[0] > 0:
            m = best[1]
            claimed[m] += 1
            return m, claimed[m] - 1
        if any(c == _BUILDING for c in count):
            return "wait", None
        return None, None


def _worker(names, model_checks, digits, count, claimed, lock, out):
    built, current = {}, None
    try:
        while True:
            m, index = _claim(count, claimed, lock, current)
            if m is None:
                return
            if m == "wait":
                time.sleep(0.02)
                continue
            if m not in built:
                built[m] = model_checks(names[m])
            if index is None:  # this worker builds the model: publish its number of checks
                with lock:
                    count[m] = len(built[m])
                out.put(("count", m, len(built[m])))
                current = m
                continue
            current = m
            out.put(("result", m, index, built[m][index](digits)))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        with lock:  # nobody waits for a model that will never be counted
            for k in range(len(count)):
                if count[k] == _BUILDING:
                    count[k] = 0
        try:
            out.put(("error", exc))
        except Exception:  # an exception that does not pickle: its text
            out.put(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


def run_parallel(names: list, model_checks, digits: int, jobs: int, bar) -> list:
    """(model name, CheckResult) for every check of every model in ``names`` (the order of the serial run),
    ``model_checks(name)`` the list of a model's checks (callables of the digits), computed by ``jobs`` forked
    workers as the module docstring says; ``bar`` (a :class:`Progress`) counts the
    checks done and learns the total once every derivation is built."""
    ctx = multiprocessing.get_context("fork")
    n = len(names)
    lock = ctx.Lock()
    count = ctx.Array("i", [_UNSTARTED] * n, lock=False)
    claimed = ctx.Array("i", [0] * n, lock=False)
    out = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(names, model_checks, digits, count, claimed, lock, out), daemon=True)
               for _ in range(jobs)]
    for w in workers:
        w.start()
    totals, results = {}, {}
    try:
        while len(totals) < n or len(results) < sum(totals.values()):
            try:
                message = out.get(timeout=1.0)
            except queue_module.Empty:
                if not any(w.is_alive() for w in workers) and out.empty():
                    codes = ", ".join(str(w.exitcode) for w in workers)
                    raise RuntimeError(f"the verify worker processes ended before every check was run (exit codes "
                                       f"{codes})") from None
                continue
            if message[0] == "error":
                raise message[1]
            if message[0] == "count":
                totals[message[1]] = message[2]
                if len(totals) == n:
                    bar.set_total(sum(totals.values()))
            else:
                results[message[1], message[2]] = message[3]
                bar.advance()
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join()
    return [(names[m], results[m, i]) for m in range(n) for i in range(totals[m])]
