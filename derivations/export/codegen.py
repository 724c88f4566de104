"""Generated numeric code: closed forms as numpy or C, recursions as the package's own kernels.

``qderive codegen NAME --measure M --out FILE`` writes a module that does not import qderive.
Two kinds of generated measure:

* :class:`ClosedForm` -- one SymPy expression in named arguments, printed by SymPy's
  ``NumPyPrinter`` (Python, vectorised: arguments broadcast) or ``C99CodePrinter`` (a function
  and a header), common subexpressions eliminated, the arguments and the model's validity
  conditions checked (``ValueError`` naming the argument).
* :class:`KernelModule` -- a measure computed by an algorithm: the kernel modules of
  :mod:`qderive.numeric.kernels` that the package itself runs are copied **verbatim**
  (:func:`kernel_sources`; only their module docstrings and the relative imports between them
  are dropped, since the concatenated file defines every name), then the generated part:
  the kernel calls of the chosen law families with their parameters printed by SymPy from the
  package's own symbolic laws, and the public function. Python only.

Every generated function has a docstring with its arguments, units and source equations.
"""

from __future__ import annotations

import ast
import functools
import keyword
from dataclasses import dataclass
from importlib import resources

__all__ = ["CHECK_HELPER", "SWEEP_HELPERS", "ClosedForm", "KernelModule", "kernel_sources", "kernel_dependencies", "print_expr", "print_call",
           "generated_function", "module_header", "identifier"]

_KERNELS = "qderive.numeric.kernels"
_ALLOWED = {"numpy", "math", "warnings"}


CHECK_HELPER = '''_CHECKS = {
    "> 0": lambda v: v > 0,
    ">= 0": lambda v: v >= 0,
    ">= 1": lambda v: v >= 1,
    "[0, 1]": lambda v: (v >= 0) & (v <= 1),
    None: lambda v: v == v,
}


def _bound(constraint):
    """The test of a bound written '> a', '>= a', '< b', '<= b' or '[a, b]' ('(' and ')' exclude an end)."""
    def num(text):
        top, _, bottom = text.strip().partition("/")
        return float(top) / float(bottom) if bottom else float(top)

    t = constraint.strip()
    for op in (">=", ">", "<=", "<"):
        if t.startswith(op):
            a = num(t[len(op):])
            return {">=": lambda v: v >= a, ">": lambda v: v > a, "<=": lambda v: v <= a, "<": lambda v: v < a}[op]
    lo, hi = (num(x) for x in t[1:-1].split(","))
    return lambda v: ((v > lo) if t[0] == "(" else (v >= lo)) & ((v < hi) if t[-1] == ")" else (v <= hi))


def _check(name, value, constraint):
    """The argument as a float (or float array) that is finite and satisfies ``constraint``."""
    ok = _CHECKS[constraint] if constraint in _CHECKS else _bound(constraint)
    if type(value) is float or type(value) is int:  # the common one-point call: no arrays
        v = float(value)
        if math.isfinite(v) and ok(v):
            return v
    else:
        try:
            v = numpy.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} = {value!r}: must be a number") from None
        if numpy.all(numpy.isfinite(v) & ok(v)):
            return v
    raise ValueError(f"{name} = {value!r}: must be finite" + (f" and {constraint}" if constraint else ""))


def _holds(condition):
    """Whether a condition holds at every point (a bool at one point, an array of them otherwise)."""
    if type(condition) is bool or type(condition) is numpy.bool_:
        return bool(condition)
    return bool(numpy.all(condition))
'''


#: the helpers of the generated vacation modules (capacities, sweeps over capacities, broadcasting over points),
#: written once for the modules of :mod:`.codegen_vacation` and :mod:`.codegen_blocks`
SWEEP_HELPERS = '''
_CTX = FLOAT64

''' + CHECK_HELPER + '''


def _capacities(r, lowest):
    single = numpy.ndim(r) == 0
    rs = [int(v) for v in numpy.atleast_1d(r)]
    for v, given in zip(rs, numpy.atleast_1d(r).tolist()):
        if v != given or v < lowest:
            raise ValueError(f"r = {given!r}: capacities must be integers >= {lowest}")
    return rs, single


def _sweep(kernel, measure, rs):
    try:
        kernel.reserve(max(rs))
        if measure == "loss_probability":  # O(r) per capacity once the sequences reach max r
            out = [float(kernel.loss_at(r)) for r in rs]
        else:
            out = [float(kernel.at(r)[measure]) for r in rs]
    except ArithmeticError as exc:
        raise FloatingPointError(f"{exc}; evaluate this point with `qderive eval --digits 20`") from None
    if not all(numpy.isfinite(out)):
        raise FloatingPointError(f"{measure} is not finite in float64; use `qderive eval --digits 20`")
    return out


_COLUMNS = {}


def _columns(key, make, n):
    """The batch law's convolution blocks up to n (the kernel's convolution_blocks), kept for the next parameter
    point with the same batch parameters (``key``) when (n + 2)^2 <= 2^20 numbers: they depend on neither the
    rate nor the times, so the points of an array of loads build them once (read only, never written; about
    half the cost of a point at r = 129). Larger tables are built per point, as the kernel does."""
    if (n + 2) ** 2 > 1 << 20:
        return make()
    got = _COLUMNS.get(key)
    if got is None:
        if len(_COLUMNS) >= 4:
            _COLUMNS.clear()
        got = _COLUMNS[key] = list(make())
    return got


def _sweep_points(kernel, measure, rs):
    """:func:`_sweep` of a kernel over points: an array (points, len(rs))."""
    kernel.reserve(max(rs))
    if measure == "loss_probability":
        cols = [kernel.loss_at(r) for r in rs]
    else:
        cols = [kernel.at(r)[measure] for r in rs]
    return numpy.stack([numpy.broadcast_to(numpy.asarray(c, dtype=float), (kernel.ctx.points,)) for c in cols],
                       axis=-1)


def _chunk(rs):
    """Points per vectorised pass: vectors of (max r + 3) x points doubles stay near 2^18 (2 MB)."""
    return max(16, min(1024, (1 << 18) // (max(rs) + 3)))


def _broadcast(one, params, single, many=None, shared=(), chunk=1024, width=1):
    """``one(*point)`` (a list over r) at every point of the broadcast parameters; with ``many``, the points
    with the same values of the parameters at indices ``shared`` (the batch law's) run ``chunk`` at a time in
    one vectorised pass, ``many(rows)`` -> (len(rows), len(r)), in the order of the first parameter (the rate: the
    points of a pass then need count tables of similar lengths). A pass that raises ArithmeticError or
    FloatingPointError, and each point whose vectorised value is not finite, is run again alone: the
    point's own value, or its FloatingPointError naming the point. ``width``: how many capacities (an empty
    array gives an empty result of its shape)."""
    if all(type(p) is float or type(p) is int for p in params):  # one point: no arrays to build
        out = one(*[float(p) for p in params])
        return out[0] if single else numpy.array(out)
    arrays = numpy.broadcast_arrays(*[numpy.asarray(p, dtype=float) for p in params])
    shape = arrays[0].shape
    flat = numpy.stack([a.reshape(-1) for a in arrays], axis=-1)
    if not len(flat):
        return numpy.zeros(shape if single else shape + (width,))
    if many is None or len(flat) < 2:
        rows = numpy.array([_alone(one, row) for row in flat.tolist()])
    else:
        rows = None
        keys, group = (numpy.unique(flat[:, list(shared)], axis=0, return_inverse=True) if shared
                       else (None, numpy.zeros(len(flat), dtype=int)))
        for g in range(int(group.max()) + 1):
            where = numpy.flatnonzero(group.reshape(-1) == g)
            where = where[numpy.argsort(flat[where, 0], kind="stable")]  # similar rates: similar table lengths
            for s in range(0, len(where), chunk):
                idx = where[s: s + chunk]
                try:
                    with numpy.errstate(all="ignore"):
                        vals = many(flat[idx]) if len(idx) > 1 else None
                except (ArithmeticError, FloatingPointError):
                    vals = None
                if vals is None:
                    vals = numpy.array([_alone(one, row) for row in flat[idx].tolist()])
                else:
                    for i in numpy.flatnonzero(~numpy.all(numpy.isfinite(vals), axis=-1)):
                        vals[i] = _alone(one, flat[idx[i]].tolist())
                if rows is None:
                    rows = numpy.empty((len(flat), vals.shape[-1]))
                rows[idx] = vals
    out = rows.reshape(shape + (rows.shape[-1],))
    if single:
        out = out[..., 0]
    return float(out) if out.ndim == 0 else out


def _alone(one, row):
    """``one`` at one point; its FloatingPointError names the point."""
    try:
        return one(*row)
    except FloatingPointError as exc:
        raise FloatingPointError(f"at the point {tuple(row)!r}: {exc}") from None
'''


def identifier(name: str) -> str:
    ident = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    return ident + "_" if keyword.iskeyword(ident) else ident


def _kernel_text(name: str) -> str:
    return resources.files(_KERNELS).joinpath(f"{name}.py").read_text(encoding="utf-8")


def _imports(name: str) -> tuple[list[str], list[tuple[int, int]]]:
    """(kernel modules imported relatively, line spans to drop) of kernel ``name``; refuses other imports."""
    deps, drop = _parsed_imports(name, _kernel_text(name))
    return list(deps), list(drop)


@functools.lru_cache(maxsize=None)
def _parsed_imports(name: str, text: str) -> tuple[tuple, tuple]:
    """:func:`_imports` of the kernel's ``text``, parsed once per process and text (every generated module ships
    kernels: parsing them again for each one cost about half of a ``qderive codegen`` run)."""
    tree = ast.parse(text)
    deps, drop = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad = [a.name for a in node.names if a.name.split(".")[0] not in _ALLOWED]
            if bad:
                raise RuntimeError(f"kernel {name} imports {bad}: kernels import numpy, math and each other only")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                if node not in tree.body:
                    raise RuntimeError(f"kernel {name}: relative imports must be at module level")
                deps.append(node.module)
                drop.append((node.lineno, node.end_lineno))
            elif (node.module or "").split(".")[0] not in _ALLOWED or node.level:
                raise RuntimeError(f"kernel {name} imports {node.module!r}: kernels import numpy, math and each other")
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        drop.append((body[0].lineno, body[0].end_lineno))
    return tuple(deps), tuple(drop)


def kernel_dependencies(names) -> list[str]:
    """The kernel modules ``names`` need, in an order where each follows what it imports."""
    order: list[str] = []

    def visit(name, stack=()):
        if name in order:
            return
        if name in stack:
            raise RuntimeError(f"kernel import cycle: {' -> '.join((*stack, name))}")
        for dep in _imports(name)[0]:
            visit(dep, (*stack, name))
        order.append(name)

    for n in names:
        visit(n)
    return order


def called_kernels(code: str) -> list[str]:
    """The kernel modules whose public top-level functions the generated ``code`` calls and does not define (a law's
    count kernel printed by :func:`print_call`, e.g. ``uniform_mixed_sequences(ctx, ...)``): a module ships every
    kernel its calls name, not only those its builder lists."""
    import pkgutil
    import re

    from ...numeric import kernels

    # a name f is called where the word f (not after a letter, digit, _ or .) is followed by "(", and defined where
    # "def f(" stands: the words of the code in each position, found once
    called = set(re.findall(r"(?<![\w.])(\w+)\(", code))
    defined = set(re.findall(r"\bdef (\w+)\(", code))
    out = []
    for info in pkgutil.iter_modules(kernels.__path__):
        if any(f in called and f not in defined for f in _public_functions(_kernel_text(info.name))):
            out.append(info.name)
    return out


@functools.lru_cache(maxsize=None)
def _public_functions(text: str) -> tuple:
    """The public top-level functions of a kernel's source ``text`` (parsed once per process and text)."""
    tree = ast.parse(text)
    return tuple(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_"))


def kernel_sources(names) -> str:
    """The source of the kernel modules ``names`` and their dependencies, verbatim, concatenated."""
    parts, seen_imports = [], set()
    for name in kernel_dependencies(names):
        lines = _kernel_text(name).splitlines()
        _, drop = _imports(name)
        dropped = {i for a, b in drop for i in range(a, b + 1)}
        kept = []
        for i, line in enumerate(lines, start=1):
            if i in dropped:
                continue
            if line.startswith(("import ", "from ")) and line in seen_imports:
                continue
            if line.startswith(("import ", "from ")):
                seen_imports.add(line)
            kept.append(line)
        text = "\n".join(kept).strip("\n")
        parts.append(f"# ---- {_KERNELS}.{name} (the package's source, copied verbatim) " + "-" * 20 + "\n\n" + text)
    return "\n\n\n".join(parts) + "\n"


def _printer():
    from sympy.printing.numpy import NumPyPrinter

    return NumPyPrinter({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False})


def print_expr(expr, names: dict) -> str:
    """Python (numpy) source of an exact or symbolic value, symbols renamed by ``names``."""
    import sympy as sp

    from ...symbolic.numbers import to_sympy

    e = to_sympy(expr) if not isinstance(expr, sp.Basic) else expr
    e = to_sympy(e).xreplace({s: sp.Symbol(n) for s, n in names.items()})
    if e.is_Integer:
        return str(int(e))
    if e.is_Rational:
        return f"{int(e.p)} / {int(e.q)}"
    return _printer().doprint(e)


def condition_source(cond, names: dict) -> str:
    """Python source of a validity condition: a relation with its own operator (a plain ``bool`` at
    one point, an array when the arguments are), anything else as :func:`print_expr` prints it."""
    import sympy as sp

    if isinstance(cond, sp.core.relational.Relational):
        return f"({print_expr(cond.lhs, names)}) {cond.rel_op} ({print_expr(cond.rhs, names)})"
    return print_expr(cond, names)


def print_call(call, names: dict, ctx: str = "ctx", n: str = "n") -> str:
    """Python source of a :class:`~qderive.numeric.sequences.KernelCall` with symbolic arguments."""
    from ...numeric.sequences import KernelCall

    def arg(a):
        if isinstance(a, KernelCall):
            return print_call(a, names, ctx, n)
        if isinstance(a, tuple):
            return "[" + ", ".join(arg(x) for x in a) + "]"
        if isinstance(a, int):
            return str(a)
        return print_expr(a, names)

    fn = call.function
    if not fn.__module__.startswith(_KERNELS):
        raise ValueError(f"{fn.__module__}.{fn.__name__} is not a kernel: this law has no generated code")
    return f"{fn.__name__}({ctx}, " + ", ".join(arg(a) for a in call.args) + f", {n})"


def generated_function(name: str, arg_lines, description: str, notes, statements, load=None) -> str:
    """Source of a generated public function: signature, docstring (arguments with units), body.

    ``load`` = (rate argument, load expression of the rate's factor, checks): the function also takes the
    offered load as a keyword, ``load=`` instead of the rate (the first argument): every argument then
    defaults to None, the other arguments are checked (``checks``: (name, constraint) pairs), and the rate is
    load / factor (rho_bar = lam l1 b1: the factor is l1 b1, printed in the arguments)."""
    arg_doc = [f"        {a}: {d}" for a, d in arg_lines]
    if load is None:
        signature = ", ".join(a for a, _ in arg_lines)
    else:
        signature = ", ".join(f"{a}=None" for a, _ in arg_lines) + ", *, load=None"
        rate, factor, checks = load
        arg_doc.append(f"        load: offered load rho_bar = {rate} l1 b1 (keyword), instead of {rate}; "
                       "a float or an array (broadcast)")
        others = [a for a, _ in arg_lines if a != rate]
        statements = [
            f"for _name, _value in (({', '.join(f'({a!r}, {a})' for a in others)},)):",
            "    if _value is None:",
            f"        raise TypeError(f'{name}() missing argument {{_name!r}}')",
            f"if ({rate} is None) == (load is None):",
            f"    raise TypeError('{name}() takes the rate {rate} or the offered load load=, one of them')",
            "if load is not None:",
            "    load = _check('load', load, '> 0')",
            *(f"    {a} = _check({a!r}, {a}, {c!r})" for a, c in checks),
            f"    {rate} = load / ({factor})",
            *statements,
        ]
    lines = [f"def {name}({signature}):", f'    """{description}', ""]
    lines += [f"    {line}" if line else "" for line in notes]
    lines += ["", "    Arguments:", *arg_doc, '    """']
    lines += [f"    {line}" if line else "" for line in statements]
    return "\n".join(lines) + "\n"


def module_header(model: str, measure: str, description: str, source: str, fname: str) -> str:
    """The docstring and ``__all__`` that open every generated Python module."""
    return "\n".join([
        f'"""{measure} of the {model} model, generated by `qderive codegen {model} --measure {measure}`.',
        "",
        description,
        f"Source: {source}.",
        "",
        "Standalone: needs numpy only. Do not edit; regenerate instead.",
        '"""',
        "",
        f'__all__ = ["{fname}"]',
        "",
    ])


@dataclass(frozen=True)
class ClosedForm:
    """One measure as an expression in named arguments.

    ``args``: (symbol, python name, description with units, check) in the generated order
    (``check`` as in :class:`~qderive.symbolic.params.Param`: ``"> 0"``, ...; only the symbols the
    expression uses are kept); ``conditions``: (SymPy relation in the symbols, message) that
    the generated code enforces (the model's validity, e.g. rho_bar < 1).
    """

    measure: str
    expr: object
    args: tuple
    description: str
    source: str
    conditions: tuple = ()

    def used_args(self):
        free = self.expr.free_symbols | set().union(*(c.free_symbols for c, _ in self.conditions))
        return tuple(a for a in self.args if a[0] in free)

    def python_module(self, model: str) -> str:
        """A standalone numpy module computing the measure; arguments broadcast."""
        import sympy as sp

        from ...numeric.compile import numpy_source

        used = self.used_args()
        names = {a[0]: a[1] for a in used}
        renamed = self.expr.xreplace({s: sp.Symbol(n) for s, n in names.items()})
        arg_doc = "\n".join(f"        {a[1]}: {a[2]}" for a in used)
        doc = (f"{self.description}\n\n    Source: {self.source}.\n\n"
               f"    Arguments (floats or numpy arrays, broadcast together):\n{arg_doc}\n\n"
               "    Bad input (a violated constraint) raises ValueError naming the argument.\n    ")
        fname = identifier(self.measure)
        header = module_header(model, self.measure, self.description, self.source, fname)
        inner = numpy_source(renamed, [sp.Symbol(a[1]) for a in used], "_value")
        checks = [f"def {fname}({', '.join(a[1] for a in used)}):", f'    """{doc}"""']
        for a in used:
            if len(a) > 3 and a[3]:
                checks.append(f"    {a[1]} = _check({a[1]!r}, {a[1]}, {a[3]!r})")
        for cond, message in self.conditions:
            checks.append(f"    if not _holds({condition_source(cond, names)}):")
            checks.append(f"        raise ValueError({message!r})")
        checks.append(f"    return _value({', '.join(a[1] for a in used)})")
        helper = ["", "", CHECK_HELPER, ""]
        return header + "\nimport math\n" \
            + inner.replace("RATIONAL = ", "_RATIONAL = ").replace("ARGS = ", "_ARGS = ") \
            + "\n".join(helper) + "\n".join(checks) + "\n"

    def c_sources(self, model: str, header_name: str) -> tuple[str, str]:
        """(header, source) of a C99 function ``double model_measure(double ...)`` (NaN on invalid input)."""
        import sympy as sp
        from sympy.printing.c import C99CodePrinter

        from ...symbolic.params import Bound

        printer = C99CodePrinter()
        used = self.used_args()
        mapping = {a[0]: sp.Symbol(a[1]) for a in used}
        expr = self.expr.xreplace(mapping)
        replacements, (reduced,) = sp.cse([expr], symbols=sp.numbered_symbols("t"), optimizations="basic")
        fname = identifier(f"{model}_{self.measure}")
        params = ", ".join(f"double {a[1]}" for a in used)
        arg_doc = "\n".join(f" *   {a[1]}: {a[2]}" for a in used)
        comment = (f"/* {self.measure} of the {model} model (generated by qderive codegen; do not edit).\n"
                   f" * {self.description}\n * Source: {self.source}.\n * Arguments:\n{arg_doc}\n"
                   " * Returns NaN when an argument violates its constraint or the model's validity condition.\n */\n")
        guard = identifier(header_name).upper()
        header = f"{comment}#ifndef {guard}\n#define {guard}\n\ndouble {fname}({params});\n\n#endif\n"
        body = [f'#include <math.h>\n#include "{header_name}"\n', comment, f"double {fname}({params})\n{{"]
        tests = {"> 0": "{0} > 0", ">= 0": "{0} >= 0", ">= 1": "{0} >= 1", "[0, 1]": "{0} >= 0 && {0} <= 1"}
        for a in used:
            if len(a) > 3 and a[3]:
                test = tests[a[3]].format(a[1]) if a[3] in tests else Bound.parse(a[3]).condition(a[1], "&&")
                body.append(f"    if (!(isfinite({a[1]}) && {test})) return NAN;")
        for cond, _ in self.conditions:
            body.append(f"    if (!({printer.doprint(cond.xreplace(mapping))})) return NAN;")
        for sym, sub in replacements:
            body.append(f"    const double {sym} = {printer.doprint(sub)};")
        body.append(f"    return {printer.doprint(reduced)};\n}}\n")
        return header, "\n".join(body)


@dataclass(frozen=True)
class KernelModule:
    """A measure computed by kernels: their verbatim source plus the generated ``code``.

    ``kernels``: kernel module names (their dependencies are added in order); ``code``: the
    generated part (the law families' kernel calls and the public function).
    """

    measure: str
    description: str
    source: str
    kernels: tuple
    code: str

    def python_module(self, model: str) -> str:
        fname = identifier(self.measure)
        header = module_header(model, self.measure, self.description, self.source, fname)
        return (header + "\n" + kernel_sources((*self.kernels, *called_kernels(self.code)))
                + "\n\n# ---- generated for this model "
                + "-" * 56 + "\n\n" + self.code)

    def c_sources(self, model: str, header_name: str):
        from ...symbolic.errors import ParameterError

        raise ParameterError(f"--lang c: {model} {self.measure} runs an algorithm; C is generated for closed-form "
                             "measures only (use --lang python)")
