"""``compile(expr, args)``: one SymPy expression, two evaluators (numpy and mpmath).

The numpy path is vectorised (arrays broadcast); the mpmath path evaluates at any
precision from exact inputs. Expressions holding a ``Float`` are refused: a
decimal constant inside a closed form would silently cap the mpmath path at 53
bits. Each evaluator carries a generated docstring with its argument order and
the source equation.

>>> import sympy as sp
>>> x, y = sp.symbols("x y")
>>> f = compile(x / (1 - y), (x, y), source="test")
>>> float(f.numpy(1.0, 0.5))
2.0
>>> print(f.mpmath(1, sp.Rational(2, 3), digits=20))
3.0
>>> compile(x * sp.Float(0.1), (x,))
Traceback (most recent call last):
...
ValueError: the expression contains Float constants [0.100000000000000]: build it from exact numbers
"""

from __future__ import annotations

import functools
import hashlib
import keyword
from dataclasses import dataclass
from typing import Callable, Sequence

import mpmath
import sympy as sp

from . import _cache
from .backend import mp_backend

__all__ = ["Evaluator", "compile", "numpy_source"]


def numpy_source(expr, args: Sequence[sp.Symbol], name: str, docstring: str = "") -> str:
    """Python source of ``def name(*args)`` evaluating ``expr`` (or a list of them) with numpy.

    Common subexpressions are eliminated; arguments broadcast; the module imports numpy only.
    """
    from sympy.printing.numpy import NumPyPrinter

    printer = NumPyPrinter({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False})
    exprs = list(expr) if isinstance(expr, (list, tuple)) else [expr]
    names = [_py_name(a) for a in args]
    exprs = [e.xreplace({a: sp.Symbol(n) for a, n in zip(args, names)}) for e in exprs]
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_t"), optimizations="basic")
    lines = ["import numpy", "", "", f"def {name}({', '.join(names)}):"]
    if docstring:
        lines.append(f'    """{docstring}"""')
    indent = "    "
    if any(e.has(sp.Piecewise) for e in exprs):
        # numpy.select evaluates every branch: the branch not taken may divide by zero
        # (e.g. a geometric sum at rho = 1), which must neither raise nor warn
        lines += [f"    {n} = numpy.asarray({n}, dtype=float)" for n in names]
        lines.append('    with numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):')
        indent = "        "
    for sym, sub in replacements:
        lines.append(f"{indent}{sym} = {printer.doprint(sub)}")
    body = [printer.doprint(e) for e in reduced]
    lines.append(f"{indent}return [{', '.join(body)}]" if isinstance(expr, (list, tuple)) else f"{indent}return {body[0]}")
    if any("functools." in line for line in lines[4:]):  # Min / Max print as functools.reduce(numpy.minimum, ...)
        lines.insert(0, "import functools")
    return "\n".join(lines) + "\n"


def _py_name(symbol: sp.Symbol) -> str:
    text = "".join(ch if ch.isalnum() else "_" for ch in str(symbol))
    return text if text.isidentifier() and not keyword.iskeyword(text) else f"a_{text}"


@dataclass(frozen=True, eq=False)
class Evaluator:
    """A compiled expression: ``numpy(*arrays)`` (float64, vectorised) and ``mpmath(*exact, digits)``."""

    expr: sp.Expr | tuple
    args: tuple
    source: str

    @functools.cached_property
    def _np(self) -> Callable:
        # generated numpy source is cached on disk (keyed by the expression), so a fresh
        # process imports it instead of running SymPy's printers again
        key = hashlib.sha256((sp.srepr(self._lambdify_expr) + repr(self.args)).encode()).hexdigest()[:24]
        module = _cache.cached_module(key, lambda: numpy_source(self._lambdify_expr, self.args, "evaluate"))
        if module is not None:
            return module.evaluate
        return sp.lambdify(self.args, self._lambdify_expr, modules="numpy", cse=True)

    @functools.cached_property
    def _mp(self) -> Callable:
        return sp.lambdify(self.args, self._lambdify_expr, modules="mpmath")

    @property
    def _lambdify_expr(self):
        return list(self.expr) if isinstance(self.expr, tuple) else self.expr

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        names = ", ".join(str(a) for a in self.args)
        return (
            f"Evaluate {self.expr} ({self.source}).\n\nArguments, in order: {names}.\n"
            "numpy(...): float64 arrays, broadcast; mpmath(..., digits=D): exact inputs, D digits."
        )

    def numpy(self, *values):
        """Evaluate in float64; array arguments broadcast."""
        if len(values) != len(self.args):
            raise TypeError(f"expected {len(self.args)} arguments ({', '.join(map(str, self.args))})")
        return self._np(*values)

    def mpmath(self, *values, digits: int = 50):
        """Evaluate at ``digits`` significant digits; inputs are exact (int, Rational) or mpf."""
        if len(values) != len(self.args):
            raise TypeError(f"expected {len(self.args)} arguments ({', '.join(map(str, self.args))})")
        bk = mp_backend(digits + 5)
        with bk:
            converted = [v if isinstance(v, mpmath.mpf) else bk.num(v) for v in values]
            out = self._mp(*converted)
        return out


def compile(expr: sp.Expr, args: Sequence[sp.Symbol], source: str = "") -> Evaluator:  # noqa: A001
    """Compile ``expr`` in the symbols ``args`` into numpy and mpmath evaluators.

    ``expr`` may be one expression or a sequence of them (evaluated together, common
    subexpressions shared; the evaluators then return lists). Refuses ``Float``
    constants and free symbols not listed in ``args``. The code is generated on
    first use of each path.
    """
    if isinstance(expr, (list, tuple)):
        expr = tuple(sp.Integer(e) if isinstance(e, int) else e for e in expr)
        atoms = sp.Tuple(*expr)
    else:
        expr = sp.Integer(expr) if isinstance(expr, int) else expr
        atoms = expr
    floats = sorted(atoms.atoms(sp.Float), key=str)
    if floats:
        raise ValueError(f"the expression contains Float constants {floats}: build it from exact numbers")
    missing = atoms.free_symbols - set(args)
    if missing:
        raise ValueError(f"free symbols {sorted(map(str, missing))} are not among the arguments")
    return Evaluator(expr, tuple(args), source)

