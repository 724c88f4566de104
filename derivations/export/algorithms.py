r"""A derivation's numeric recursions as pseudo-code: latexify-py's algorithmic codegen, reading as mathematics.

The recursions are small reference functions in plain Python (:attr:`Derivation.recursions`). latexify-py
(``latexify.parser``, ``latexify.transformers``, ``latexify.codegen.AlgorithmicCodegen``) typesets them; the
subclass :class:`PseudocodeCodegen` makes what reaches the page mathematics, not Python:

* ``for k in range(a, b)`` -> ``for k = a to b - 1``; ``range(a, b, -1)`` and ``reversed(range(...))`` ->
  ``for k = a down to b + 1`` (bounds simplified on the syntax tree: ``range(n + 1)`` -> ``to n``);
* ``d = [0] * m`` -> ``d_k <- 0, k = 0, ..., m - 1`` (the product of a list and a length is never lost);
  ``q = [1]`` -> ``q_0 <- 1``;
* identifiers through a name table (``abar`` -> ``\bar{a}``, ``r0`` -> ``\rho_0``; a function may add its own
  with a ``latex_names`` attribute) and latexify's math symbols (``pi`` -> ``\pi``);
* the docstring is not a statement: it is typeset above the block as prose (:mod:`.prose`);
* a Python idiom with no mathematical reading (``q.append(x)``, a method call) is refused, naming it: write the
  reference function with indices instead.
"""

from __future__ import annotations

import ast
import inspect
import re

from latexify import codegen, exceptions, parser, transformers
from latexify.codegen import identifier_converter

from .prose import latex_text

__all__ = ["PseudocodeCodegen", "pseudocode", "algorithm_block", "NAMES"]

#: identifiers -> LaTeX shared by the recursions
NAMES = {
    "abar": r"\bar{a}", "cbar": r"\bar{c}", "qbar": r"\bar{q}", "r0": r"\rho_0", "r1": r"\rho_1",
    "l_k": r"l^{(\cdot)}", "t0": r"t_0", "F2": r"F_2", "pi": r"\pi",
}


class _Names(identifier_converter.IdentifierConverter):
    """latexify's identifier conversion with a table of LaTeX names first."""

    def __init__(self, names: dict):
        super().__init__(use_math_symbols=True, use_mathrm=True)
        self._names = names

    def convert(self, name: str) -> tuple[str, bool]:
        if name in self._names:
            return self._names[name], True
        return super().convert(name)


def _const(node) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _const(node.operand)
        return None if inner is None else -inner
    return None


def _shift(node, delta: int):
    """``node + delta`` as a syntax tree, simplified: ``(n + 1) - 1 -> n``, ``(L - 2) + 1 -> L - 1``, ``-1 + 1 -> 0``."""
    if delta == 0:
        return node
    c = _const(node)
    if c is not None:
        return ast.Constant(c + delta)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        k = _const(node.right)
        if k is not None:
            total = (k if isinstance(node.op, ast.Add) else -k) + delta
            if total == 0:
                return node.left
            return ast.BinOp(node.left, ast.Add() if total > 0 else ast.Sub(), ast.Constant(abs(total)))
    return ast.BinOp(node, ast.Add() if delta > 0 else ast.Sub(), ast.Constant(abs(delta)))


def _range(call):
    """(first, last, descending) of ``range(...)`` / ``reversed(range(...))`` (inclusive bounds), or None."""
    reverse = False
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "reversed":
        call, reverse = call.args[0], True
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"):
        return None
    args = call.args
    if len(args) == 1:
        lo, hi, step = ast.Constant(0), args[0], 1
    elif len(args) == 2:
        lo, hi, step = args[0], args[1], 1
    else:
        lo, hi, step = args[0], args[1], _const(args[2])
        if step not in (1, -1):
            raise exceptions.LatexifyNotSupportedError("range with a step other than 1 or -1")
    first, last = (lo, _shift(hi, -1)) if step == 1 else (lo, _shift(hi, 1))
    descending = step == -1
    if reverse:
        first, last, descending = last, first, not descending
    return first, last, descending


class _Expressions(codegen.ExpressionCodegen):
    """latexify's expression codegen; an array named in ``superscripts`` takes its first index as a
    parenthesised superscript: ``l_k[k][n]`` -> ``l^{(k)}_{n}`` (the k-fold convolution)."""

    def __init__(self, superscripts: dict):
        super().__init__(use_math_symbols=True)
        self._superscripts = superscripts

    def visit_Subscript(self, node: ast.Subscript) -> str:
        value, indices = self._convert_nested_subscripts(node)
        root = node
        while isinstance(root, ast.Subscript):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self._superscripts and len(indices) >= 2:
            rest = ", ".join(indices[1:])
            return f"{self._superscripts[root.id]}^{{({indices[0]})}}_{{{rest}}}"
        return super().visit_Subscript(node)


class PseudocodeCodegen(codegen.AlgorithmicCodegen):
    """latexify's algorithmic codegen with loops, arrays and names written as mathematics."""

    def __init__(self, names: dict | None = None, superscripts: dict | None = None):
        super().__init__(use_math_symbols=True)
        conv = _Names({**NAMES, **(names or {})})
        self._identifier_converter = conv
        self._expression_codegen = _Expressions(superscripts or {})
        self._expression_codegen._identifier_converter = conv

    def _expr(self, node) -> str:
        return self._expression_codegen.visit(node)

    def _free_index(self, node) -> str:
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        return next(c for c in ("k", "i", "j", "l", "m", "t") if c not in used)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> str:
        body = list(node.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring is typeset as prose above the block
        self._root = node
        name = "-".join(w.capitalize() for w in node.name.split("_"))
        args = ", ".join(self._identifier_converter.convert(a.arg)[0] for a in node.args.args)
        lines = [self._add_indent("\\begin{algorithmic}"),
                 self._add_indent(f"    \\Function{{{name}}}{{${args}$}}")]
        with self._increment_level(), self._increment_level():
            lines += [self.visit(stmt) for stmt in body]
        lines += [self._add_indent("    \\EndFunction"), self._add_indent("\\end{algorithmic}")]
        return "\n".join(lines)

    def visit_For(self, node: ast.For) -> str:
        bounds = _range(node.iter)
        if bounds is None:
            return super().visit_For(node)
        first, last, descending = bounds
        target = self._expr(node.target)
        word = "down to" if descending else "to"
        with self._increment_level():
            body = "\n".join(self.visit(stmt) for stmt in node.body)
        head = f"\\For{{${target} = {self._expr(first)}$ \\textbf{{{word}}} ${self._expr(last)}$}}"
        return self._add_indent(head) + "\n" + body + "\n" + self._add_indent("\\EndFor")

    def visit_Assign(self, node: ast.Assign) -> str:
        value = node.value
        if len(node.targets) == 1 and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult) \
                and isinstance(value.left, ast.List) and len(value.left.elts) == 1:
            # d = [c] * m: m copies of c
            target = self._expr(node.targets[0])
            k = self._free_index(self._root)
            last = self._expr(_shift(value.right, -1))
            return self._add_indent(f"\\State ${target}_{{{k}}} \\gets {self._expr(value.left.elts[0])}$, "
                                    f"${k} = 0, \\dots, {last}$")
        if len(node.targets) == 1 and isinstance(value, ast.List):
            target = self._expr(node.targets[0])
            parts = [f"{target}_{{{i}}} \\gets {self._expr(e)}" for i, e in enumerate(value.elts)]
            return self._add_indent("\\State $" + "$, $".join(parts) + "$")
        return super().visit_Assign(node)

    def visit_Expr(self, node: ast.Expr) -> str:
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
            raise exceptions.LatexifyNotSupportedError(
                f"the method call .{node.value.func.attr}(...) has no mathematical reading: write the reference "
                "function with indices")
        return super().visit_Expr(node)


_SUM_BODY = re.compile(r"(\\sum_\{[^{}]*\}\^\{[^{}]*\}) \\mathopen\{\}\\left\(\{(.*?)\}\\mathclose\{\}\\right\)")


def _bare_sum_body(m) -> str:
    """``\\sum_{..}^{..} (x_j y_j)`` -> ``\\sum_{..}^{..} x_j y_j`` where the body is a product (no + or - outside
    braces): a sum's body needs no parentheses unless it is itself a sum."""
    body = m.group(2)
    flat = re.sub(r"\{[^{}]*\}", "", re.sub(r"\{[^{}]*\}", "", body))
    return f"{m.group(1)} {body}" if not re.search(r"[+-]", flat) else m.group(0)


def pseudocode(fn) -> str:
    """The ``algorithmic`` block of a reference function (latexify-py's parser and transformers, then
    :class:`PseudocodeCodegen`)."""
    tree = parser.parse_function(fn)
    tree = transformers.AugAssignReplacer().visit(tree)
    code = PseudocodeCodegen(getattr(fn, "latex_names", None), getattr(fn, "latex_superscripts", None)).visit(tree)
    return _SUM_BODY.sub(_bare_sum_body, code)


def algorithm_block(title: str, fn, refs: dict | None = None) -> str:
    """An ``algorithm`` float (placed here, ``[H]``): the caption, the docstring as prose, the pseudo-code
    (``refs``: the derivation's steps, referred to by ``\\eqref``)."""
    doc = " ".join((inspect.getdoc(fn) or "").split())
    parts = ["\\begin{algorithm}[H]", f"\\caption{{{latex_text(title, refs)}}}"]
    if doc:
        parts.append(f"\\begin{{minipage}}{{\\linewidth}}\\small {latex_text(doc, refs)}\\end{{minipage}}"
                     "\\smallskip")
    parts += [pseudocode(fn), "\\end{algorithm}"]
    return "\n".join(parts)
