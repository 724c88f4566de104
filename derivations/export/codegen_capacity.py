"""Generated code of the capacity-planning models: ``qderive codegen erlang-b`` and ``redundant-cluster``.

* **erlang-b** -- a :class:`~.codegen.KernelModule`: the package's kernel
  :mod:`qderive.numeric.kernels.erlang` (the recursion (R), its continuation below the cut
  and the sum from the top for rho >= 2n, all in the ONE function ``erlang_b``) copied
  verbatim with the float64 context, plus the public function of the chosen measure::

      qderive codegen erlang-b --measure blocking_probability --out eb.py
      # eb.py: blocking_probability(load, servers); arguments broadcast (numpy arrays)

  A blocking below the float64 range is returned as 0 with a warning (``qderive eval`` would
  recompute it with mpmath); log10_blocking_probability stays finite.
* **redundant-cluster** -- :class:`~.codegen.ClosedForm` per measure (Python or ``--lang c``): the
  closed forms of :func:`qderive.symbolic.models.redundant_cluster.closed_form_expressions` (the
  expressions the engine compiles), with the derived parameters written in the user's
  parameters by :func:`~qderive.symbolic.models.redundant_cluster.derived_parameters`. The
  generated code checks every argument (finite, > 0 or >= 0, integer copies and nodes) and the
  model's validity: both levels stable, k Lambda v_i / n_i < 1.
"""

from __future__ import annotations

import functools

import sympy as sp

from ...symbolic.capabilities import declare
from ...symbolic.models.erlang_b import ErlangBMeasures
from ...symbolic.models.redundant_cluster import (
    MEASURE_KEYS,
    FailureModel,
    RedundantClusterMeasures,
    closed_form_expressions,
    cluster_loads,
    derived_parameters,
)
from ...symbolic.numbers import to_sympy
from .codegen import ClosedForm, KernelModule, generated_function

__all__ = ["erlang_b_forms", "cluster_forms", "CLUSTER_ARGS"]

ERLANG_SOURCE = ("Erlang B recursion B(k) = rho B(k-1)/(k + rho B(k-1)), Wang & Liao (seed 003) eqs. (1)-(4); "
                 "docs/theory/other-models.md section D")
CLUSTER_SOURCE = "Bogatyrev & Bogatyrev 2017 (seed 004); docs/theory/other-models.md section E"

_ERLANG_HELPERS = '''
_CTX = FLOAT64
_UNDERFLOWS = ("blocking_probability", "lost_load")


def _erlang_b_point(load, servers, measure):
    """One measure of the package's kernel at one (load, servers) point, arguments checked."""
    rho, n = float(load), float(servers)
    if not (numpy.isfinite(rho) and rho > 0):
        raise ValueError(f"load = {rho!r}: must be a finite number > 0 (Erlang)")
    if not (numpy.isfinite(n) and n == int(n) and n >= 1):
        raise ValueError(f"servers = {n!r}: must be an integer >= 1")
    value = float(erlang_b_measures(_CTX, rho, int(n))[measure])
    if measure in _UNDERFLOWS and value < _CTX.tiny:
        warnings.warn(f"{measure} at load {rho!r}, {int(n)} servers lies below the float64 range: "
                      f"{value!r} returned; see log10_blocking_probability or `qderive eval erlang-b --digits 20`",
                      RuntimeWarning, stacklevel=3)
    return value


def _erlang_b_broadcast(measure, load, servers):
    rho, n = numpy.broadcast_arrays(numpy.asarray(load, dtype=float), numpy.asarray(servers, dtype=float))
    out = numpy.empty(rho.shape)
    for idx in numpy.ndindex(rho.shape):
        out[idx] = _erlang_b_point(rho[idx], n[idx], measure)
    return float(out) if out.ndim == 0 else out
'''


@declare(independent={name: "an argument of the generated function" for name in ("servers", "load", "holding_time")})
def erlang_b_forms(request=None) -> dict:
    """``measure -> KernelModule`` for the measures of ``qderive eval erlang-b`` without a holding time."""
    docs = {f.name: m for f, m in ErlangBMeasures.measure_fields()}
    from ...numeric.kernels.erlang import ERLANG_B_KEYS

    args = (("load", "offered load rho = lambda / mu [Erlang], > 0; a float or a numpy array (broadcast)"),
            ("servers", "number of servers (windows) n, an integer >= 1; a number or an array (broadcast)"))
    out = {}
    for measure in ERLANG_B_KEYS:
        meta = docs[measure]
        notes = [f"M/M/n/n loss system (Erlang B); unit: {meta.units or meta.kind.value}.",
                 f"Source: {meta.source}; {ERLANG_SOURCE}.", "",
                 "Runs the package's kernel qderive.numeric.kernels.erlang (copied above, verbatim) in float64.",
                 "Cost: the recursion (R) per point, O(min(n, rho + sqrt(rho))) steps (O(min(n, 53)) for rho >= 2n),",
                 "in Python numbers; the points of an array run one by one (each stops at its own step).",
                 "Bad input raises ValueError naming the argument; a blocking below the float64 range is",
                 "returned as 0 with a RuntimeWarning (log10_blocking_probability stays finite)."]
        code = "\n".join([_ERLANG_HELPERS.strip("\n"), "", "",
                          generated_function(measure, args, f"{meta.help[0].upper()}{meta.help[1:]}.", notes,
                                             [f"return _erlang_b_broadcast({measure!r}, load, servers)"])])
        out[measure] = KernelModule(measure, f"{meta.help} of the M/M/n/n loss system.", ERLANG_SOURCE,
                                    ("context", "erlang"), "import warnings\n\n\n" + code)
    return out


# --------------------------------------------------------------------------------------
# The redundant cluster
# --------------------------------------------------------------------------------------

_P = {name: sp.Symbol(name, real=True) for name in (
    "rate", "copies", "nodes_lower", "nodes_upper", "service_time_lower", "service_time_upper", "deadline",
    "failure_rate_lower", "failure_rate_upper", "service_failure_rate_lower", "service_failure_rate_upper")}

#: (symbol, python name, description with units, check) of every argument the generated code may take
CLUSTER_ARGS = (
    (_P["rate"], "rate", "request rate Lambda [1/s]", "> 0"),
    (_P["copies"], "copies", "copies k of each request (an integer >= 1)", ">= 1"),
    (_P["nodes_lower"], "nodes_lower", "nodes n of the lower level (an integer >= 1)", ">= 1"),
    (_P["nodes_upper"], "nodes_upper", "nodes m of the upper level (an integer >= 1)", ">= 1"),
    (_P["service_time_lower"], "service_time_lower", "mean service time v_1 at a lower node [s]", "> 0"),
    (_P["service_time_upper"], "service_time_upper", "mean service time v_2 at an upper node [s]", "> 0"),
    (_P["deadline"], "deadline", "bound t_0 on the total waiting time W_1 + W_2 [s]", "> 0"),
    (_P["failure_rate_lower"], "failure_rate_lower", "fault rate of a lower node while a copy waits there "
     "(and, unless split, while it is served) [1/s]", ">= 0"),
    (_P["failure_rate_upper"], "failure_rate_upper", "fault rate of an upper node while a copy waits there "
     "(and, unless split, while it is served) [1/s]", ">= 0"),
    (_P["service_failure_rate_lower"], "service_failure_rate_lower", "fault rate of a lower node while a copy "
     "is served [1/s]", ">= 0"),
    (_P["service_failure_rate_upper"], "service_failure_rate_upper", "fault rate of an upper node while a copy "
     "is served [1/s]", ">= 0"),
)


@functools.lru_cache(maxsize=None)
def _user_expressions(failure_model: FailureModel, split: bool) -> tuple:
    """The closed forms with their derived parameters written in the user's parameters (one substitution); once
    per process for each failure model and split (about 0.5 s of SymPy; every measure's module asks for them)."""
    exprs, args = closed_form_expressions(failure_model)
    nodes = (_P["nodes_lower"], _P["nodes_upper"])
    times = (_P["service_time_lower"], _P["service_time_upper"])
    waiting = (_P["failure_rate_lower"], _P["failure_rate_upper"])
    serving = (_P["service_failure_rate_lower"], _P["service_failure_rate_upper"]) if split else waiting
    derived = derived_parameters(_P["rate"], _P["copies"], nodes, times, _P["deadline"], waiting, serving,
                                 failure_model)
    mapping = {a: to_sympy(derived[str(a)]) for a in args}
    return tuple(e.xreplace(mapping) for e in exprs)


@declare(independent={**{name: "an argument of the generated function" for name in ("rate", "nodes", "service_times", "deadline", "copies",
                                                      "failure_rates", "service_failure_rates")},
                      "failure_model": "fixed by codegen --failure-model"})
def cluster_forms(request=None) -> dict:
    """``measure -> ClosedForm`` of every measure of ``qderive eval redundant-cluster`` (Python or C)."""
    failure_model = FailureModel.MEAN_TIMES if request is None else request.failure_model
    split = False if request is None else request.split_failure_rates
    exprs = _user_expressions(failure_model, split)
    rho = cluster_loads(_P["rate"], _P["copies"], (_P["nodes_lower"], _P["nodes_upper"]),
                        (_P["service_time_lower"], _P["service_time_upper"]))
    conditions = tuple((rho[i] < 1, f"level {i + 1} is unstable: copies * rate * service_time_{lvl} / nodes_{lvl} "
                                    "must be < 1") for i, lvl in enumerate(("lower", "upper")))
    conditions += tuple((sp.Eq(sp.floor(_P[name]), _P[name]), f"{name} must be an integer")
                        for name in ("copies", "nodes_lower", "nodes_upper"))
    docs = {f.name: m for f, m in RedundantClusterMeasures.measure_fields()}
    faults = {FailureModel.MEAN_TIMES: "faults at the mean times (seed 004)",
              FailureModel.PATHWISE: "faults during the actual waiting and service times"}[failure_model]
    out = {}
    for key, expr in zip(MEASURE_KEYS, exprs):
        meta = docs[key]
        description = (f"{meta.help[0].upper()}{meta.help[1:]} ({faults}"
                       f"{', separate rates while served' if split else ''}).")
        out[key] = ClosedForm(key, expr, CLUSTER_ARGS, description, CLUSTER_SOURCE, conditions)
    return out
