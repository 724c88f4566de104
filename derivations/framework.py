"""Derivations: numbered steps tied to the source's equations, each one computed or checked.

A :class:`Derivation` reads like the proof: an ordered tuple of :class:`Step` objects,
each a SymPy relation with the source's label (``"(3)"``, ``"Theorem 1.1"``), a citation
and one sentence, plus a tuple of :class:`Check` objects (independent verifications: an
exact identity, a comparison with a chain solve, a direct sum, ``mpmath.quad``).

**What is exported is what was verified.** Every step is one of two kinds:

* ``computed`` -- the displayed right-hand side *is* the SymPy result of the derivation
  (Q(z), W, ...); the derivation's checks verify it (exact identities, oracles);
* ``executed`` -- a relation typeset in index form (the balance equations (2), the cut
  form (2b), (9), (10), (16)-(21), ...) carries an evaluation hook: ``verify`` evaluates
  *the displayed relation itself* (:func:`evaluate`) with the sequences and numbers of an
  independent computation bound to its symbols, at every index of a range, and compares
  its two sides to the working precision.

``tests/test_derivations.py`` refuses a step that is neither. ``verify(digits)`` runs the
step hooks and the checks; export lives in :mod:`qderive.derivations.export`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import mpmath
import sympy as sp

from ..symbolic.identities import exact_identity  # noqa: F401 (the derivations import it from here)

__all__ = ["Step", "Check", "CheckResult", "Derivation", "agreement_digits", "exact_identity", "evaluate",
           "relation_check"]


# --------------------------------------------------------------------------------------
# Evaluating a displayed relation
# --------------------------------------------------------------------------------------


def evaluate(expr, env: dict):
    """The value of a SymPy expression at mpmath precision, with ``env`` binding its symbols.

    ``env`` maps Symbols to numbers, IndexedBases to sequences (lists, arrays, dicts keyed
    by index tuples) or callables, undefined functions (``sp.Function('A')``) to callables,
    and MatrixSymbols to mpmath matrices. Handles sums with symbolic limits (evaluated),
    Piecewise, KroneckerDelta, Min/Max, relations, and the matrix algebra of (21).
    """
    e = expr
    if isinstance(e, (int, float)):
        return mpmath.mpf(e)
    if e in env:
        return _as_mp(env[e])
    if isinstance(e, sp.MatrixExpr):
        return _matrix(e, env)
    if e.is_Integer:
        return int(e)
    if e.is_Rational:
        return mpmath.mpf(int(e.p)) / int(e.q)
    if e is sp.pi:
        return +mpmath.pi
    if isinstance(e, sp.Indexed):
        return _indexed(e, env)
    if e.is_Add:
        return mpmath.fsum(evaluate(a, env) for a in e.args)
    if e.is_Mul:
        out = mpmath.mpf(1)
        for a in e.args:
            out *= evaluate(a, env)
        return out
    if e.is_Pow:
        base, ex = evaluate(e.base, env), evaluate(e.exp, env)
        return base**ex
    if isinstance(e, sp.Sum):
        return _sum(e, env)
    if isinstance(e, sp.KroneckerDelta):
        return mpmath.mpf(1 if evaluate(e.args[0], env) == evaluate(e.args[1], env) else 0)
    if isinstance(e, sp.Piecewise):
        return _piecewise(e, env)
    if isinstance(e, (sp.Min, sp.Max)):
        vals = [evaluate(a, env) for a in e.args]
        return min(vals) if isinstance(e, sp.Min) else max(vals)
    if isinstance(e, sp.core.relational.Relational):
        lhs, rhs = evaluate(e.lhs, env), evaluate(e.rhs, env)
        return {"==": lhs == rhs, ">=": lhs >= rhs, "<=": lhs <= rhs, ">": lhs > rhs, "<": lhs < rhs,
                "!=": lhs != rhs}[e.rel_op]
    if isinstance(e, sp.And):
        return all(evaluate(a, env) for a in e.args)
    if isinstance(e, sp.core.function.AppliedUndef):
        fn = env[e.func]
        return _as_mp(fn(*[evaluate(a, env) for a in e.args]))
    if isinstance(e, sp.exp):
        return mpmath.exp(evaluate(e.args[0], env))
    if isinstance(e, sp.log):
        return mpmath.log(evaluate(e.args[0], env))
    if isinstance(e, sp.factorial):
        return mpmath.factorial(int(evaluate(e.args[0], env)))
    if e.is_Symbol and e not in env:
        raise KeyError(f"no value bound to the symbol {e}")
    raise TypeError(f"cannot evaluate {type(e).__name__}: {e}")


def _indexed(e, env):
    """An IndexedBase entry: a callable, a dict keyed by index tuples, or nested sequences (0 outside them)."""
    base = env[e.base]
    idx = tuple(int(evaluate(i, env)) for i in e.indices)
    if callable(base):
        return _as_mp(base(*idx))
    if isinstance(base, dict):
        return _as_mp(base.get(idx if len(idx) > 1 else idx[0], 0))
    value = base
    for i in idx:
        if i < 0 or i >= len(value):
            return mpmath.mpf(0)
        value = value[i]
    return _as_mp(value)


def _sum(e, env):
    """A Sum with evaluated limits; SymPy lists the innermost limit first: iterate over the outermost, evaluate the
    rest inside (an infinite upper limit: :func:`_infinite_sum`)."""
    (var, lo, hi), body = e.limits[-1], e.function
    inner = sp.Sum(body, *e.limits[:-1]) if len(e.limits) > 1 else body
    lo_v = evaluate(lo, env)
    if hi is sp.oo:
        return _infinite_sum(inner, var, int(lo_v), env)
    hi_v = evaluate(hi, env)
    total = mpmath.mpf(0)
    for i in range(int(lo_v), int(hi_v) + 1):
        total += evaluate(inner, {**env, var: i})
    return total


def _piecewise(e, env):
    for value, cond in e.args:
        if cond is sp.true or bool(evaluate(cond, env)):
            return evaluate(value, env)
    raise ValueError("no branch of the Piecewise applies")


def _infinite_sum(body, var, start, env):
    """sum_{var >= start} body for nonnegative terms that eventually decrease: summed until 40 terms in a
    row are below eps of the partial sum (at most 10^6 terms)."""
    total, small = mpmath.mpf(0), 0
    eps = mpmath.mpf(2) ** (-mpmath.mp.prec)
    for i in range(start, start + 1_000_000):
        term = evaluate(body, {**env, var: i})
        total += term
        small = small + 1 if abs(term) <= eps * abs(total) else 0
        if small >= 40:
            return total
    raise ValueError("an infinite sum did not converge within 10^6 terms")


def _as_mp(v):
    if isinstance(v, (mpmath.mpf, mpmath.matrix)):
        return v
    if isinstance(v, int):
        return v
    if hasattr(v, "numerator") and hasattr(v, "denominator"):
        return mpmath.mpf(int(v.numerator)) / int(v.denominator)
    return mpmath.mpf(v)


def _matrix(e, env):
    if e in env:
        return env[e]
    if isinstance(e, sp.MatMul):
        out = None
        for a in e.args:
            v = _matrix(a, env) if isinstance(a, sp.MatrixExpr) else evaluate(a, env)
            out = v if out is None else out * v
        return out
    if isinstance(e, sp.MatAdd):
        parts = [_matrix(a, env) for a in e.args]
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out
    if isinstance(e, sp.Inverse):
        return mpmath.inverse(_matrix(e.arg, env))
    if isinstance(e, sp.Transpose):
        return _matrix(e.arg, env).T
    if isinstance(e, sp.Identity):
        return mpmath.eye(int(evaluate(e.shape[0], env)))
    raise TypeError(f"cannot evaluate the matrix expression {e}")


def _sides(relation):
    rels = relation.args if isinstance(relation, sp.And) else (relation,)
    return [(r.lhs, r.rhs) for r in rels]


def relation_check(relation, bindings: Callable[[int], tuple], *, need: Callable[[int], float] | None = None,
                   describe: str = ""):
    """An evaluation hook for a displayed relation.

    ``bindings(digits)`` returns ``(env, ranges)``: values for the relation's symbols from an
    independent computation at ``digits`` working digits, and ``{index symbol: iterable}``
    (several symbols: every combination). The hook evaluates both sides of the relation at
    each index and passes when they agree to ``need(digits)`` digits (default digits - 5).
    """

    def run(digits):
        with mpmath.workdps(digits + 10):
            env, ranges = bindings(digits)
            symbols = list(ranges)
            worst, count = math.inf, 0
            for values in itertools.product(*(list(ranges[s]) for s in symbols)):
                local = {**env, **dict(zip(symbols, values))}
                for lhs, rhs in _sides(relation):
                    a, b = evaluate(lhs, local), evaluate(rhs, local)
                    if isinstance(a, mpmath.matrix):
                        a, b = a[0, 0], b[0, 0]
                    worst = min(worst, agreement_digits(a, b))
                    count += 1
            target = need(digits) if need is not None else digits - 5
            return worst >= target, worst, f"displayed relation evaluated at {count} points{describe}"

    return run


# --------------------------------------------------------------------------------------
# Steps, checks, derivations
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One relation of a derivation: ``label`` (the source's number), a sentence, a SymPy relation.

    ``computed=True``: the right-hand side is a result the derivation computed with SymPy.
    ``check``: an evaluation hook ``check(digits) -> (passed, digits_agreed, detail)``
    (usually :func:`relation_check`) that ``verify`` runs. Every step has one or the other.
    """

    label: str
    title: str
    relation: sp.Basic
    citation: str = ""
    computed: bool = False
    check: Callable | None = None
    #: the relation as the literature writes it; exported only once proved equal (:mod:`.export.forms`)
    paper: sp.Basic | None = None
    #: where the step is reconstructed or computed (a theory page, a module): LaTeX comments, never the text
    provenance: str = ""
    #: the derivation's abbreviations, set by :class:`Derivation` (a step displays as in the export)
    notation: tuple = ()

    @property
    def verified_by(self) -> str:
        return "computed by SymPy" if self.computed else ("evaluated by verify" if self.check else "not checked")

    def latex(self, notation=None) -> str:
        """The relation in LaTeX (one line; :mod:`.export.latex` breaks long ones), in ``notation``."""
        from .export.forms import shown
        from .export.printing import latex, present

        if self.paper is not None:  # the literature's form, printed as written
            return latex(shown(self))
        return latex(present(shown(self), self.notation if notation is None else notation))

    def _repr_latex_(self) -> str:
        """Jupyter: the display as in the export (the derivation's notation, paper form, source tag)."""
        from .export.latex import display_math

        return display_math(self, self.notation)

    def _repr_markdown_(self) -> str:
        """Jupyter: the step's sentence and its display, as on the Markdown page."""
        from .export.markdown import step_markdown

        return step_markdown(self)

    def __str__(self) -> str:
        from .export.forms import shown
        from .export.latex import step_text
        from .export.printing import present, pretty
        from .export.prose import unicode_text

        relation = shown(self) if self.paper is not None else present(self.relation, self.notation)
        return f"{self.label} {unicode_text(step_text(self))}\n{pretty(relation)}"


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: pass/fail, digits agreed (None: not a digit comparison), what was compared."""

    name: str
    passed: bool
    digits: float | None
    detail: str
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {
            "check": self.name,
            "passed": self.passed,
            "digits_agreed": (None if self.digits is None else
                              "exact" if math.isinf(self.digits) else round(self.digits, 1)),
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Check:
    """A named verification: ``run(digits)`` returns ``(passed, digits_agreed, detail)``.

    ``name`` is prose in the derivation's markup (:mod:`.export.prose`: math in ``$...$``), listed by the
    exports as typeset text and by ``verify`` in unicode.

    ``digits_agreed`` is ``math.inf`` for an exact identity and None where digits do not apply.
    """

    name: str
    run: Callable[[int], tuple]
    label: str = ""

    def __call__(self, digits: int) -> CheckResult:
        start = time.perf_counter()
        try:
            passed, agreed, detail = self.run(digits)
        except Exception as exc:  # a crashing check is a failed check, reported, not raised
            passed, agreed, detail = False, None, f"{type(exc).__name__}: {exc}"
        from .export.prose import unicode_text

        return CheckResult(unicode_text(self.name), bool(passed), agreed, detail, time.perf_counter() - start)


def agreement_digits(value, reference) -> float:
    """Significant decimal digits on which ``value`` agrees with ``reference`` (inf when identical)."""
    with mpmath.workprec(20000):
        value, reference = _as_mp(value), _as_mp(reference)
        diff = abs(value - reference)
        if diff == 0:
            return math.inf
        ratio = diff / (abs(reference) if reference != 0 else mpmath.mpf(1))
    with mpmath.workprec(53):
        return float(-mpmath.log10(+ratio))


@dataclass(frozen=True)
class Derivation:
    """An ordered list of steps with their checks, registered under a model name.

    ``recursions``: (title, function) pairs rendered as algorithms in the LaTeX export
    (plain Python reference functions that latexify-py can typeset); each derivation
    declares its own.
    """

    name: str
    title: str
    source: str
    steps: tuple
    checks: tuple = ()
    results: dict = field(default_factory=dict)
    notes: tuple = ()
    recursions: tuple = ()
    #: abbreviations of the source written in the exports where they apply: (symbol, definition) pairs,
    #: e.g. rho-bar = lambda l_1 b_1 (:func:`.export.printing.present`)
    notation: tuple = ()
    #: where the derivation is reconstructed (theory pages, modules): LaTeX comments and ``--provenance``
    provenance: tuple = ()

    def __post_init__(self):
        if self.notation:
            steps = tuple(s if s.notation else dataclasses.replace(s, notation=self.notation) for s in self.steps)
            object.__setattr__(self, "steps", steps)

    def step(self, label: str) -> Step:
        for s in self.steps:
            if s.label == label:
                return s
        raise KeyError(f"{self.name} has no step {label!r}")

    def all_checks(self) -> tuple:
        """The step hooks (as checks named after their steps), then the derivation's checks."""
        hooks = tuple(Check(f"{s.label} as displayed, evaluated", s.check, s.label) for s in self.steps if s.check)
        return hooks + tuple(self.checks)

    def verify(self, digits: int = 50) -> list[CheckResult]:
        """Run every step hook and every check at ``digits`` working digits."""
        return [check(digits) for check in self.all_checks()]

    def report(self, digits: int = 50) -> bool:
        """Print the steps, run every check, print one line per result; True if all pass
        (``python -m qderive.derivations.<model>``)."""
        print(self)
        ok = True
        for res in self.verify(digits):
            ok &= res.passed
            agreed = "-" if res.digits is None else ("exact" if math.isinf(res.digits) else f"{res.digits:.1f} digits")
            print(f"{'ok  ' if res.passed else 'FAIL'} {res.name}: {res.detail} ({agreed})")
        return ok

    def latex(self, **options) -> str:
        from .export.latex import document

        return document(self, **options)

    def markdown(self) -> str:
        from .export.markdown import page

        return page(self)

    def _repr_latex_(self) -> str:
        """Jupyter: every step as display math with its label as the tag."""
        from .export.latex import display_math

        return "\n".join(display_math(s, self.notation) for s in self.steps)

    def _repr_markdown_(self) -> str:
        """Jupyter: the Markdown page (title, notation, each step's sentence and display math)."""
        return self.markdown()

    def __str__(self) -> str:
        from .export.printing import pretty
        from .export.prose import unicode_text

        title = unicode_text(self.title)
        out = [title, "=" * len(title), f"Source: {unicode_text(self.source)}", ""]
        out += [unicode_text(n) for n in self.notes] + ([""] if self.notes else [])
        if self.notation:
            out += ["Notation: " + ", ".join(f"{pretty(a)} = {pretty(b, order='none')}" for a, b in self.notation), ""]
        out += [f"{s}\n" for s in self.steps]
        return "\n".join(out)
