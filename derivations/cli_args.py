"""Command-line vocabulary shared by every model: exact numbers and law specifications.

Numbers are parsed exactly (``0.015`` is 3/200, ``1e-6`` is 1/10^6) with
:class:`fractions.Fraction`, never through ``float``, ``eval`` or ``sympify``.
Laws are written ``kind:key=value,...``; the parser builds the law objects of
``qderive.symbolic`` through a table keyed by the kind (one entry per law class).

>>> parse_number("0.015")
3/200
>>> parse_time_law("erlang:k=4,mean=0.015")
Erlang(k=4, mean=3/200)
>>> parse_batch_law("pmf:1=0.5,3=0.5")
FinitePMF(probs=((1, 1/2), (3, 1/2)))
"""

from __future__ import annotations

import re
from fractions import Fraction

import sympy as sp

from qderive.symbolic import batches as B
from qderive.symbolic import laws as T
from qderive.symbolic._exact import ParameterError

__all__ = [
    "parse_number",
    "parse_positive_int",
    "parse_number_list",
    "parse_time_law",
    "parse_batch_law",
    "TIME_LAW_HELP",
    "BATCH_LAW_HELP",
]

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_number(text: str, name: str = "number") -> sp.Rational:
    """An exact rational from decimal or scientific notation; a clear error otherwise."""
    text = text.strip()
    if not _NUMBER.match(text):
        if "/" in text and all(_NUMBER.match(p.strip()) for p in text.split("/", 1)):
            num, den = (parse_number(p, name) for p in text.split("/", 1))
            if den == 0:
                raise ParameterError(f"{name} = {text!r}: division by zero")
            return num / den
        raise ParameterError(f"{name} = {text!r} is not a number (write e.g. 0.015, 3e-2 or 3/200)")
    f = Fraction(text)
    return sp.Rational(f.numerator, f.denominator)


def parse_positive_int(text: str, name: str) -> int:
    value = parse_number(text, name)
    if not (value.is_Integer and value >= 0):
        raise ParameterError(f"{name} = {text!r}: must be a nonnegative integer")
    return int(value)


def parse_number_list(text: str, name: str, count: int | None = None, sep: str = ",") -> list[sp.Rational]:
    parts = [p for p in text.split(sep)]
    values = [parse_number(p, name) for p in parts]
    if count is not None and len(values) != count:
        raise ParameterError(f"{name} = {text!r}: expected {count} values separated by {sep!r}")
    return values


def _split_spec(text: str, what: str) -> tuple[str, dict[str, str]]:
    kind, _, rest = text.partition(":")
    kind = kind.strip().lower()
    params: dict[str, str] = {}
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq:
                raise ParameterError(f"{what} {text!r}: parameter {item!r} is not of the form key=value")
            params[key.strip()] = value.strip()
    return kind, params


def _take(params: dict, keys: tuple[str, ...], what: str, kind: str) -> list[str]:
    missing = [k for k in keys if k not in params]
    extra = [k for k in params if k not in keys]
    if missing or extra:
        need = ",".join(f"{k}=..." for k in keys)
        raise ParameterError(f"{what} {kind}: expects {kind}:{need}" + (f" (unknown: {', '.join(extra)})" if extra else ""))
    return [params[k] for k in keys]



# Table keyed by the command-line kind; each entry builds one law class.
_TIME_BUILDERS = {
    "det": (("mean",), lambda v, w: T.Deterministic(parse_number(v[0], f"{w} mean"))),
    "exp": (("mean",), lambda v, w: T.Exponential(parse_number(v[0], f"{w} mean"))),
    "erlang": (("k", "mean"), lambda v, w: T.Erlang(parse_number(v[0], f"{w} k"), parse_number(v[1], f"{w} mean"))),
    "gamma": (("shape", "mean"), lambda v, w: T.Gamma(parse_number(v[0], f"{w} shape"), parse_number(v[1], f"{w} mean"))),
    "hyperexp": (
        ("p", "mean"),
        lambda v, w: T.HyperExponential(
            tuple(parse_number_list(v[0], f"{w} p", sep="/")), tuple(parse_number_list(v[1], f"{w} mean", sep="/"))
        ),
    ),
    "uniform": (("low", "high"), lambda v, w: T.Uniform(parse_number(v[0], f"{w} low"), parse_number(v[1], f"{w} high"))),
}

TIME_LAW_HELP = (
    "det:mean=X | exp:mean=X | erlang:k=K,mean=X | gamma:shape=A,mean=X | "
    "hyperexp:p=P1/P2/..,mean=M1/M2/.. | uniform:low=A,high=B"
)
BATCH_LAW_HELP = "geometric:mean=X | const:n=N | pmf:1=P1,2=P2,... | poisson1:mean=X"


def parse_time_law(text: str, what: str = "law") -> T.TimeLaw:
    """Build a time law from ``kind:key=value,...`` (see :data:`TIME_LAW_HELP`)."""
    kind, params = _split_spec(text, what)
    if kind not in _TIME_BUILDERS:
        raise ParameterError(f"{what} {text!r}: unknown law {kind!r}; choose one of {TIME_LAW_HELP}")
    keys, build = _TIME_BUILDERS[kind]
    return build(_take(params, keys, what, kind), what)


def _pmf_batch(params: dict[str, str], what: str) -> B.FinitePMF:
    probs = {}
    for size, prob in params.items():
        s = parse_number(size, f"{what} size")
        if not (s.is_Integer and s >= 1):
            raise ParameterError(f"{what} pmf: size {size!r} must be an integer >= 1")
        probs[int(s)] = parse_number(prob, f"{what} P(X={size})")
    return B.FinitePMF(probs)


_BATCH_BUILDERS = {
    "geometric": lambda p, w: B.Geometric(parse_number(_take(p, ("mean",), w, "geometric")[0], f"{w} mean")),
    "const": lambda p, w: B.Constant(parse_number(_take(p, ("n",), w, "const")[0], f"{w} n")),
    "poisson1": lambda p, w: B.ShiftedPoisson(parse_number(_take(p, ("mean",), w, "poisson1")[0], f"{w} mean")),
    "pmf": _pmf_batch,
}


def parse_batch_law(text: str, what: str = "batch") -> B.BatchLaw:
    """Build a batch-size law from ``kind:key=value,...`` (see :data:`BATCH_LAW_HELP`)."""
    kind, params = _split_spec(text, what)
    if kind not in _BATCH_BUILDERS:
        raise ParameterError(f"{what} {text!r}: unknown batch law {kind!r}; choose one of {BATCH_LAW_HELP}")
    return _BATCH_BUILDERS[kind](params, what)
