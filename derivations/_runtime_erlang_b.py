"""Numpy-only runtime of the Erlang B recursion, copied into generated code.

``qderive codegen erlang-b`` pastes this file (without this docstring) into a standalone
module with the public function of the chosen measure. It is a float64 transcription of
``qderive.numeric.erlang`` (``spec/other-models.md`` D): the recursion
B(k) = rho B(k-1) / (k + rho B(k-1)), B(0) = 1 has only positive terms; the carried load
is rho n / (n + rho B(n-1)) (no 1 - B); when B underflows float64 the logarithm
continues exactly with B(k) = (rho / k) B(k-1). Compared with ``qderive eval`` by
``tests/test_codegen_recursions.py``.
"""

import math

import numpy

_TINY = float(numpy.finfo(numpy.float64).tiny)


def _require(ok, name, value, constraint):
    """Raise ValueError naming the parameter and its constraint unless ``ok``."""
    if not ok:
        raise ValueError(f"{name} = {value!r}: must be {constraint}")


def _erlang_b(rho, n):
    """(B(n-1), B(n), log B(n)) for one load rho > 0 and n >= 1 servers."""
    _require(math.isfinite(rho) and rho > 0, "load", rho, "a finite number > 0 (Erlang)")
    _require(float(n) == int(n) and int(n) >= 1, "servers", n, "an integer >= 1")
    n = int(n)
    b_prev = b = 1.0
    for k in range(1, n + 1):
        b_prev = b
        b = rho * b / (k + rho * b)
        if b < _TINY:  # from here on rho B(k-1) << k: B(k) = (rho / k) B(k-1), in logarithms
            log_b = math.log(b) + (n - k) * math.log(rho) - (math.lgamma(n + 1) - math.lgamma(k + 1))
            log_prev = log_b - math.log(rho) + math.log(n) if n > k else math.log(b_prev)
            return math.exp(log_prev), math.exp(log_b), log_b
    return b_prev, b, -math.log1p(n / (rho * b_prev))


def erlang_b_measures(load, servers):
    """Measures of M/M/n/n at offered load ``load`` (Erlang) with ``servers`` servers; arguments broadcast.

    Returns a dict of floats (scalar arguments) or numpy arrays: blocking_probability B(n, rho),
    carried_load = mean_busy_windows = rho n / (n + rho B(n-1)), lost_load rho B(n),
    window_occupancy carried / n, log10_blocking_probability (finite where B underflows).
    """
    rho, n = numpy.broadcast_arrays(numpy.asarray(load, dtype=float), numpy.asarray(servers, dtype=float))
    keys = ("blocking_probability", "carried_load", "lost_load", "mean_busy_windows", "window_occupancy",
            "log10_blocking_probability")
    out = {key: numpy.empty(rho.shape) for key in keys}
    for idx in numpy.ndindex(rho.shape):
        r, m = float(rho[idx]), n[idx]
        b_prev, b, log_b = _erlang_b(r, m)
        carried = r * m / (m + r * b_prev)
        values = (b, carried, r * b, carried, carried / m, log_b / math.log(10))
        for key, value in zip(keys, values):
            out[key][idx] = value
    if rho.ndim == 0:
        return {key: float(value) for key, value in out.items()}
    return out
