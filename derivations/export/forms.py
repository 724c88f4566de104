"""Paper forms: a main result written once as the literature writes it, proved equal to the derived result
before it is printed.

A :class:`~qderive.derivations.framework.Step` may carry ``paper``: the relation as the source (or a paper)
writes it, in the derivation's notation (rho-bar, alpha-bar). :func:`shown` returns it only after
:func:`prove` has shown, exactly, that each side equals the derived relation's side: the difference, with the
notation's symbols replaced by their definitions, cancels to 0 (SymPy), or -- where cancellation is too slow --
it is 0 at 8 random rational points (exact arithmetic: a nonzero rational function of bounded degree vanishes
at 8 random points with probability 0). A paper form that is not proved equal is refused (``ValueError``).
"""

from __future__ import annotations

import functools
import random

import sympy as sp

from ...symbolic.identities import exact_identity
from .printing import restore

__all__ = ["shown", "prove", "PaperFormError"]


class PaperFormError(ValueError):
    """A stated paper form is not equal to the derived result."""


def _sides(rel):
    """The sides of a relation; a conjunction's relations in the order of their left-hand sides (as displayed:
    SymPy orders an ``And`` by whole relations, so a stated form and the derived one may list them apart)."""
    if isinstance(rel, sp.And):
        parts = sorted(rel.args, key=lambda r: sp.default_sort_key(getattr(r, "lhs", r)))
        return [s for a in parts for s in _sides(a)]
    if isinstance(rel, sp.core.relational.Relational):
        return [rel.lhs, rel.rhs]
    return [rel]


def _random_zero(diff, points: int = 8, seed: int = 20131) -> bool:
    """``diff`` is 0 at ``points`` random points: rationals in (0, 1) for real symbols, distinct integers in
    [2, 60] for integer symbols (exponents, thresholds)."""
    rng = random.Random(seed)
    symbols = sorted(diff.free_symbols, key=sp.default_sort_key)
    for _ in range(points):
        ints = iter(rng.sample(range(2, 61), len(symbols)))
        values = {s: sp.Integer(next(ints)) if s.is_integer else sp.Rational(rng.randint(1, 97), rng.randint(98, 211))
                  for s in symbols}
        value = sp.nsimplify(diff.xreplace(values).doit()) if diff.has(sp.Sum) else diff.xreplace(values)
        if sp.cancel(sp.together(value)) != 0:
            return False
    return True


def _plain(expr):
    """``expm1(a)`` as ``e^a - 1`` and ``log1p(a)`` as ``log(1 + a)``: an implementation's names for the same values
    (a paper form writes the mathematics; the evaluated form may use the accurate functions)."""
    from sympy.codegen.cfunctions import expm1, log1p

    if not isinstance(expr, sp.Basic) or not expr.has(expm1, log1p):
        return expr
    return expr.replace(expm1, lambda a: sp.exp(a) - 1).replace(log1p, lambda a: sp.log(1 + a))


@functools.lru_cache(maxsize=256)
def prove(paper, derived, notation=()) -> str:
    """How ``paper`` was proved equal to ``derived`` ("cancellation" or "8 random rational points"); raises
    :class:`PaperFormError` when it is not equal."""
    a, b = _sides(paper), _sides(derived)
    if len(a) != len(b):
        raise PaperFormError(f"the paper form {paper} has {len(a)} sides, the derived relation {len(b)}")
    how = "cancellation"
    for x, y in zip(a, b):
        x, y = _plain(restore(x, notation)), _plain(restore(y, notation))
        if isinstance(x, sp.Piecewise) and isinstance(y, sp.Piecewise):
            # branch by branch: the same conditions, each value proved equal
            if [c for _, c in x.args] != [c for _, c in y.args]:
                raise PaperFormError(f"the paper form's cases {x} differ from the derived cases {y}")
            for (u, _), (v, _) in zip(x.args, y.args):
                how = prove(sp.Eq(sp.Symbol("_"), u), sp.Eq(sp.Symbol("_"), v)) if u != v else how
            continue
        diff = x - y
        if diff == 0:
            continue
        try:
            if exact_identity(diff, 0):
                continue
        except (TypeError, ValueError, NotImplementedError):
            pass
        if not _random_zero(diff):
            raise PaperFormError(f"the paper form {x} differs from the derived {y}")
        how = "8 random rational points"
    return how


def shown(step):
    """The relation a step displays: its paper form once proved equal to the derived relation, else the
    derived relation itself."""
    paper = getattr(step, "paper", None)
    if paper is None:
        return step.relation
    prove(paper, step.relation, tuple(getattr(step, "notation", ())))
    return paper
