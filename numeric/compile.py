"""``compile(expr, args)``: SymPy expressions as numpy, exact and mpmath evaluators.

One expression (or a tuple evaluated together, common subexpressions shared) becomes
Python source printed by SymPy's ``NumPyPrinter``, in which every rational constant is
written ``_ratio(p, q)``. Called with floats or arrays (``_ratio`` = float division) it is the
vectorised float64 path; called with :class:`fractions.Fraction` arguments
(``_ratio = Fraction``) a rational expression evaluates *exactly*; with mpf arguments
(mpf division) at any precision. Expressions holding a ``Float`` are refused (a
decimal constant would cap the precise paths at 53 bits).

The generated source is kept in the private cache under a caller's key
(:func:`cached_evaluator`), so a fresh process imports it without importing SymPy.

>>> import sympy as sp
>>> from fractions import Fraction
>>> x, y = sp.symbols("x y")
>>> f = compile(x / (1 - y) + sp.Rational(1, 3), (x, y))
>>> float(f.numpy(1.0, 0.5))
2.3333333333333335
>>> f.exact(Fraction(1), Fraction(1, 2))
Fraction(7, 3)
"""

from __future__ import annotations

import builtins
import keyword
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from ..symbolic.cache import cached_module
from ..symbolic.numbers import to_sympy

__all__ = ["Evaluator", "compile", "cached_evaluator", "numpy_source", "py_name"]


def py_name(symbol) -> str:
    """A Python identifier for a SymPy symbol (``lambda`` -> ``a_lambda``, ``b_1`` -> ``b_1``)."""
    text = "".join(ch if ch.isalnum() else "_" for ch in str(symbol))
    return text if text.isidentifier() and not keyword.iskeyword(text) else f"a_{text}"


def _printer():
    from sympy.printing.numpy import NumPyPrinter
    from sympy.printing.precedence import precedence

    class _Printer(NumPyPrinter):
        def _print_Pow(self, expr, rational=False):
            # integer powers stay integer powers (NumPyPrinter writes x**(-1.0), which is not exact)
            if expr.exp.is_Integer:
                base = self.parenthesize(expr.base, precedence(expr), strict=False)
                return f"{base}**({int(expr.exp)})" if expr.exp < 0 else f"{base}**{int(expr.exp)}"
            return super()._print_Pow(expr, rational=rational)

        def _print_Rational(self, expr):
            return f"_ratio({expr.p}, {expr.q})"

        def _print_Half(self, expr):
            return "_ratio(1, 2)"

    return _Printer({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False})


def numpy_source(expr, args: Sequence, name: str, docstring: str = "") -> str:
    """Source of ``def name(*args, _ratio=...)`` evaluating ``expr`` (or a list of them); imports numpy only.

    ``_ratio(p, q)`` builds rational constants: float division by default (numpy path).
    """
    import sympy as sp

    printer = _printer()
    exprs = list(expr) if isinstance(expr, (list, tuple)) else [expr]
    names = [py_name(a) for a in args]
    exprs = [to_sympy(e).xreplace({a: sp.Symbol(n) for a, n in zip(args, names)}) for e in exprs]
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_t"), optimizations="basic")
    lines = ["import numpy", "", "", "def _float_ratio(p, q):", "    return p / q", "", "",
             f"def {name}({', '.join(names + ['_ratio=_float_ratio'])}):"]
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
    many = isinstance(expr, (list, tuple))
    lines.append(f"{indent}return [{', '.join(body)}]" if many else f"{indent}return {body[0]}")
    text = "\n".join(lines) + "\n"
    if "functools." in text:  # Min / Max print as functools.reduce(numpy.minimum, ...)
        text = "import functools\n" + text
    rational = all(_is_rational_expr(e) for e in exprs)
    return text + f"\n\nRATIONAL = {rational!r}\nARGS = {tuple(names)!r}\n"


def _is_rational_expr(e) -> bool:
    """True when only +, *, integer powers, rationals and symbols occur (exact with Fractions)."""
    import sympy as sp

    for node in sp.preorder_traversal(e):
        if node.is_Symbol or node.is_Rational or node.is_Add or node.is_Mul:
            continue
        if node.is_Pow and (node.exp.is_Integer or node.exp.is_Symbol and node.exp.is_integer):
            continue
        return False
    return True


def _mp_ratio(p, q):
    import mpmath

    return mpmath.mpf(p) / q


class Evaluator:
    """A compiled expression (or tuple of them): ``numpy``, ``exact`` and ``mpmath`` paths."""

    def __init__(self, function: Callable, args: tuple, rational: bool, source: str = "", exprs=None):
        self._fn, self.args, self.rational, self.source, self.exprs = function, tuple(args), rational, source, exprs

    def _check(self, values):
        if len(values) != len(self.args):
            raise TypeError(f"expected {len(self.args)} arguments ({', '.join(self.args)})")

    def numpy(self, *values):
        """Evaluate in float64; array arguments broadcast."""
        self._check(values)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._fn(*values)

    def exact(self, *values):
        """Evaluate a rational expression exactly from Fraction arguments."""
        self._check(values)
        if not self.rational:
            raise TypeError("the expression is not rational: use mpmath()")
        return self._fn(*[Fraction(v) for v in values], _ratio=Fraction)

    def mpmath(self, *values):
        """Evaluate from mpf (or exact) arguments at the current mpmath precision (inside ``with ctx:``)."""
        self._check(values)
        if self.rational:
            return self._fn(*values, _ratio=_mp_ratio)
        if getattr(self, "_mp_fn", None) is None:
            import sympy as sp

            args = [sp.Symbol(a) for a in self.args]
            exprs = self.exprs
            self._mp_fn = sp.lambdify(args, list(exprs) if isinstance(exprs, tuple) else exprs, modules="mpmath")
        return self._mp_fn(*values)


def compile(expr, args: Sequence, source: str = "") -> Evaluator:  # noqa: A001
    """Compile ``expr`` (or a tuple) in the symbols ``args`` (refuses Floats and unlisted free symbols)."""
    import sympy as sp

    many = isinstance(expr, (list, tuple))
    exprs = tuple(to_sympy(e) for e in expr) if many else to_sympy(expr)
    atoms = sp.Tuple(*exprs) if many else exprs
    floats = sorted(atoms.atoms(sp.Float), key=str)
    if floats:
        raise ValueError(f"the expression contains Float constants {floats}: build it from exact numbers")
    missing = atoms.free_symbols - set(args)
    if missing:
        raise ValueError(f"free symbols {sorted(map(str, missing))} are not among the arguments")
    src = numpy_source(exprs, args, "evaluate")
    namespace: dict = {}
    _run(builtins.compile(src, f"<qderive compiled {source or 'expression'}>", "exec"), namespace)
    renamed = _renamed(exprs, args)
    return Evaluator(namespace["evaluate"], namespace["ARGS"], namespace["RATIONAL"], src, renamed)


def _renamed(exprs, args):
    import sympy as sp

    mapping = {a: sp.Symbol(py_name(a)) for a in args}
    return tuple(e.xreplace(mapping) for e in exprs) if isinstance(exprs, tuple) else exprs.xreplace(mapping)


def _run(code, namespace):
    """Run generated code in ``namespace``: SymPy's printer applied to our own expressions, never user text."""
    exec(code, namespace)  # noqa: S102


def cached_evaluator(key: str, make: Callable[[], tuple]) -> Evaluator:
    """An evaluator kept in the private cache: ``make()`` returns (exprs, args) and runs only on a miss.

    With a warm cache no SymPy is imported (the generated module needs numpy only).
    """
    state: dict = {}

    def source():
        exprs, args = make()
        state["made"] = (exprs, args)
        return numpy_source(exprs, args, "evaluate")

    module = cached_module(key, source)
    if module is not None:
        return _LazyEvaluator(module.evaluate, module.ARGS, module.RATIONAL, make, state)
    exprs, args = state.get("made") or make()
    return compile(exprs, args, source=key)


class _LazyEvaluator(Evaluator):
    """An evaluator from the cache: the SymPy expressions are rebuilt only if the mpmath path needs them."""

    def __init__(self, fn, args, rational, make, state):
        super().__init__(fn, args, rational)
        self._make, self._state = make, state

    @property
    def exprs(self):
        exprs, args = self._state.get("made") or self._make()
        return _renamed(exprs, args)

    @exprs.setter
    def exprs(self, value):
        pass
