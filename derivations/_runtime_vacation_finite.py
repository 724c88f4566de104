"""Numpy-only runtime of the finite vacation queue M[X]/G/1/r, copied into generated code.

``qderive codegen vacation-finite`` pastes this file (without this docstring) after
:mod:`qderive.derivations._runtime_arrivals` (count laws, batch laws, arrival counts, whose
functions it uses) into a standalone module and appends the generated closed forms of the
model's inputs and the public function. It imports nothing but numpy and math. It is a float64
transcription of the in-package engine (``qderive.numeric.sequences``,
``qderive.numeric.cut``, ``qderive.numeric.vacation``, partial admission), following the
same stable pipeline (``spec/chapter2.md`` section 4): every tail is a sum of positive
terms, the embedded law comes from the cut recursion (2b), p^r_r from (10) and the loss
from the direct sum of Theorem 1.1 (12). Its results are compared with ``qderive eval``
by ``tests/test_codegen_recursions.py``.
"""

import math

import numpy

_RESCALE_AT = 2.0**600


# ---- the finite system (spec/chapter2.md section 2) ------------------------------------------


def finite_measures(lam, batch_law, service_counts, b1, vacation_counts, f1, capacities):
    """Every measure of M[X]/G/1/r with multiple vacations (partial admission) for each r in ``capacities``.

    ``batch_law(n)`` -> :class:`_Batch`; ``service_counts(n)`` / ``vacation_counts(n)`` ->
    (beta, tails, second tails) of the batches arriving during a service / vacation
    (``vacation_counts`` None: no vacations, the classic M[X]/G/1/r); ``b1`` / ``f1`` mean
    service / vacation time. Returns a dict measure -> list over ``capacities``; the sequences are
    computed once up to max r, so a sweep costs about as much as its largest capacity.
    """
    rs = [int(r) for r in capacities]
    lowest = 1 if vacation_counts is not None else 0
    for r in rs:
        _require(r >= lowest, "r", r, f"an integer >= {lowest}" + (" with vacations" if lowest else ""))
    n = max(max(rs) + 1, 16)
    batch = batch_law(n + 1)
    _, abar, u, ubar = sv = _arrival_counts(service_counts(n), batch, lam, n, b1)
    a0 = sv[0][0]
    if vacation_counts is not None:  # (2b) with the vacation counts, (9)/(10) with v_n, Vbar_n
        _, cbar, w, wbar = _arrival_counts(vacation_counts(n), batch, lam, n, f1)
        idle, not_serving, services = 0.0, f1, 0
    else:  # idle (mean 1/lambda), then one service starting with X - 1 waiting: C(z) = A(z) L(z) / z
        shifted = batch.pmf[1 : n + 2]
        cbar = _conv(shifted, abar, n) + batch.tail[1 : n + 2]
        w = _conv(shifted, u, n)
        wbar = numpy.zeros(n + 1)
        wbar[0] = b1
        wbar[1:] = _conv(shifted, ubar[1:], n - 1) + batch.tail[1 : n + 1] * b1
        idle = not_serving = 1 / lam
        services = 1
    # (2b): a_0 q~_{j+1} = q~_0 cbar_j + sum_{i=1}^{j} q~_i abar_{j-i+1}, rescaled by powers of two
    q = numpy.zeros(n + 1)
    q[0] = 1.0
    for j in range(n):
        s = q[0] * cbar[j] + (numpy.dot(q[1 : j + 1], abar[j:0:-1]) if j >= 1 else 0.0)
        q[j + 1] = s / a0
        if q[j + 1] > _RESCALE_AT:
            q[: j + 2] = numpy.ldexp(q[: j + 2], -int(numpy.frexp(q[j + 1])[1]))
    t = q[0] * w[:n] + _conv(q[1 : n + 1], u, n - 1)  # (13): level times, valid for j < r
    # every capacity at once; each sum below has positive terms only (convolutions, cumulative sums)
    R = numpy.array(rs)
    below = numpy.maximum(R - 1, 0)  # index of the convolution holding sum_{i=1}^{r} (empty for r = 0)
    some = R >= 1
    q0, e = q[0], batch.excess
    # (10): the top level without cancellation, with Vbar_r and Ubar_{r-i+1}
    top = q0 * wbar[R] + numpy.where(some, _conv(q[1 : n + 1], ubar[1 : n + 1], n - 1)[below], 0.0)
    s1 = numpy.concatenate([[0.0], numpy.cumsum(q[1:])])[R]  # sum_{i=1}^{r} q~_i
    t_busy = b1 * (q0 * services + s1)
    T = q0 * not_serving + t_busy  # mean cycle (renewal reward), common scale of every time below
    # Theorem 1.1 (12): pi = sum_j p^r_j E(X - (r - j))^+ / l_1, and an idle server takes one more
    lost = (numpy.where(some, _conv(t, e[1 : n + 1], n - 1)[below], 0.0) + top * e[0] + q0 * idle * e[R + 1]) / T
    nq = (numpy.concatenate([[0.0], numpy.cumsum(numpy.arange(n) * t)])[R] + R * top) / T
    busy = t_busy / T
    throughput = busy / b1
    p0 = (numpy.where(some, t[0], top) + q0 * idle) / T
    qsum = q0 + s1
    values = {
        "loss_probability": lost / batch.l1,
        "batch_blocking_probability": top / T,
        "idle_probability": q0 * not_serving / T,
        "mean_queue_length": nq,
        "mean_wait": nq / throughput,
        "mean_number_in_system": nq + busy,
        "throughput": throughput,
        "p0": p0,
        "pr": numpy.where(some, top / T, p0),
        "q0": q0 / qsum,
        "qr": q[R] / qsum,
    }
    return {key: [float(v) for v in numpy.broadcast_to(value, R.shape)] for key, value in values.items()}


def _capacities(r):
    """``r`` as a list of integers, and whether it was a single one."""
    single = numpy.ndim(r) == 0
    values = [r] if single else list(numpy.asarray(r).ravel())
    for v in values:
        _require(float(v) == int(v), "r", v, "an integer (waiting places, the customer in service not counted)")
    return [int(v) for v in values], single


def _broadcast(one, params, single):
    """``one(*point)`` (a list over the capacities) at every point of the broadcast ``params``.

    Returns a float (scalar parameters, one r), or an array of the broadcast shape with a last
    axis over the capacities when r is a sequence.
    """
    arrays = numpy.broadcast_arrays(*(numpy.asarray(p, dtype=float) for p in params))
    shape = arrays[0].shape
    if not shape:
        values = one(*(float(a) for a in arrays))
        return values[0] if single else numpy.array(values)
    out = numpy.array([one(*(float(a[i]) for a in arrays)) for i in numpy.ndindex(shape)])
    out = out.reshape(shape + out.shape[1:])
    return out[..., 0] if single else out
