"""Random variates for the simulator, drawn from the same law objects the formulas use.

One table keyed by the law class turns a time law of :mod:`qderive.symbolic.laws`
(service, vacation) or a batch law of :mod:`qderive.symbolic.batches` into a
vectorised sampler ``draw(rng, n) -> ndarray`` on a :class:`numpy.random.Generator`:

============================  ==================================================
law                           variates
============================  ==================================================
``Deterministic(d)``          the constant d
``Exponential(m)``            ``rng.exponential(m)``
``Erlang(k, m)``              ``rng.gamma(k, m / k)`` (sum of k phases of rate k/m)
``Gamma(a, m)``               ``rng.gamma(a, m / a)``
``HyperExponential(p, m)``    phase i with probability p_i, then Exp(mean m_i)
``Uniform(a, b)``             ``rng.uniform(a, b)``
``Geometric(m)``              ``rng.geometric(1 / m)`` on {1, 2, ...}
``Constant(n)``               the constant n
``FinitePMF({i: p_i})``       size i with probability p_i
``ShiftedPoisson(m)``         ``1 + rng.poisson(m - 1)``
============================  ==================================================

The exact parameters are rounded once to float64 (``FLOAT64.num``); the symbolic
laws ``GeneralTime`` and ``GeneralBatch`` cannot be sampled and are refused with a
:class:`ParameterError`. :func:`value_stream` turns a sampler into an endless
iterator of Python numbers, refilled in blocks, which the event loops consume with
``next()`` (drawing in blocks keeps the per-variate cost near that of a list
iteration).

>>> import numpy as np
>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Erlang
>>> draw = time_sampler(Erlang(4, Fraction(3, 200)))
>>> x = draw(np.random.default_rng(1), 100_000)
>>> bool(abs(x.mean() - 0.015) < 1e-4)
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain, repeat

import numpy as np

from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError

from .backend import FLOAT64

__all__ = ["Sampler", "time_sampler", "batch_sampler", "value_stream", "to_float", "DEFAULT_BLOCK"]

#: ``draw(rng, n)``: n independent variates as a numpy array
Sampler = Callable[[np.random.Generator, int], np.ndarray]

#: variates drawn per refill of a stream
DEFAULT_BLOCK = 1 << 15


def to_float(value, name: str) -> float:
    """An exact parameter as a float64 (rounded once); symbols are refused."""
    try:
        return float(FLOAT64.num(value))
    except ValueError as exc:
        raise ParameterError(f"{name} = {value}: the simulator needs a numeric value ({exc})") from None


def _deterministic(law: T.Deterministic) -> Sampler:
    d = to_float(law.mean, "mean")
    return lambda rng, n: np.full(n, d)


def _exponential(law: T.Exponential) -> Sampler:
    m = to_float(law.mean, "mean")
    return lambda rng, n: rng.exponential(m, n)


def _gamma_family(law) -> Sampler:
    # Erlang(k, m) and Gamma(a, m): shape a, scale m / a.
    a = to_float(law.shape, "shape")
    scale = to_float(law.mean / law.shape, "mean / shape")
    return lambda rng, n: rng.gamma(a, scale, n)


def _hyperexponential(law: T.HyperExponential) -> Sampler:
    probs = np.array([to_float(p, f"p{i + 1}") for i, p in enumerate(law.probs)])
    probs = probs / probs.sum()  # exact probabilities sum to 1; remove the float rounding
    means = np.array([to_float(m, f"mean{i + 1}") for i, m in enumerate(law.means)])

    def draw(rng, n):
        phase = rng.choice(len(means), size=n, p=probs)
        return rng.standard_exponential(n) * means[phase]

    return draw


def _uniform(law: T.Uniform) -> Sampler:
    a, b = to_float(law.low, "low"), to_float(law.high, "high")
    return lambda rng, n: rng.uniform(a, b, n)


def _geometric(law: B.Geometric) -> Sampler:
    if law.mean == 1:
        return lambda rng, n: np.ones(n, dtype=np.int64)
    p = to_float(1 / law.mean, "1 / mean")
    return lambda rng, n: rng.geometric(p, n)


def _constant(law: B.Constant) -> Sampler:
    c = int(law.n)
    return lambda rng, n: np.full(n, c, dtype=np.int64)


def _finite_pmf(law: B.FinitePMF) -> Sampler:
    sizes = np.array([size for size, _ in law.probs], dtype=np.int64)
    probs = np.array([to_float(p, f"P(X={size})") for size, p in law.probs])
    probs = probs / probs.sum()
    return lambda rng, n: sizes[rng.choice(len(sizes), size=n, p=probs)]


def _shifted_poisson(law: B.ShiftedPoisson) -> Sampler:
    nu = to_float(law.nu, "mean - 1")
    return lambda rng, n: 1 + rng.poisson(nu, n)


#: law class -> builder of its sampler (looked up along the class's MRO)
_TIME_SAMPLERS: dict[type, Callable[[object], Sampler]] = {
    T.Deterministic: _deterministic,
    T.Exponential: _exponential,
    T.Erlang: _gamma_family,
    T.Gamma: _gamma_family,
    T.HyperExponential: _hyperexponential,
    T.Uniform: _uniform,
}

_BATCH_SAMPLERS: dict[type, Callable[[object], Sampler]] = {
    B.Geometric: _geometric,
    B.Constant: _constant,
    B.FinitePMF: _finite_pmf,
    B.ShiftedPoisson: _shifted_poisson,
}


def _lookup(table: dict, law, what: str) -> Sampler:
    for cls in type(law).__mro__:
        if cls in table:
            return table[cls](law)
    known = ", ".join(c.__name__ for c in table)
    raise ParameterError(f"{what} {law!r} cannot be simulated: give a numeric law ({known})")


def time_sampler(law: T.TimeLaw, what: str = "time law") -> Sampler:
    """Vectorised sampler of a service or vacation time law (table in the module docstring)."""
    return _lookup(_TIME_SAMPLERS, law, what)


def batch_sampler(law: B.BatchLaw, what: str = "batch law") -> Sampler:
    """Vectorised sampler of a batch-size law on {1, 2, ...}; draws are int64."""
    return _lookup(_BATCH_SAMPLERS, law, what)


def value_stream(draw: Sampler, rng: np.random.Generator, block: int = DEFAULT_BLOCK) -> Iterator:
    """An endless iterator of Python floats / ints from ``draw``, refilled ``block`` at a time."""
    return chain.from_iterable(draw(rng, block).tolist() for _ in repeat(None))
