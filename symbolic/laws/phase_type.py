"""Phase-type times: the general PH(alpha, T) law and the Coxian law, its special case.

A phase-type time is the absorption time of a CTMC with sub-generator T (off-diagonal
rates >= 0, diagonal < 0, row sums <= 0, exit rates t = -T 1) started in phase i with
probability alpha_i. Exponential, Erlang, hyperexponential and Coxian laws are special
cases (they give their ``phase_type()`` form too, which the CTMC oracle uses).

LST alpha (s I - T)^{-1} t; E T^n = n! alpha (-T)^{-n} 1; arrivals during one such time:
:class:`~qderive.symbolic.counts.PhaseTypeCount` (subtraction-free matrix products).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import isqrt

from ..counts import PhaseTypeCount
from ..errors import ParameterError
from ..numbers import is_symbolic, probability, to_sympy
from ..params import Kind, param
from .base import TimeLaw

__all__ = ["PhaseType", "Coxian", "solve_exact"]


def solve_exact(A, b):
    """x with A x = b for a small exact (Fraction) matrix, by Gaussian elimination with pivoting."""
    n = len(A)
    M = [list(map(Fraction, row)) + [Fraction(v)] for row, v in zip(A, b)]
    for c in range(n):
        piv = next((r for r in range(c, n) if M[r][c] != 0), None)
        if piv is None:
            raise ParameterError("phase-type T", "must be nonsingular (every phase must lead to absorption)")
        M[c], M[piv] = M[piv], M[c]
        for r in range(n):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [x - f * y for x, y in zip(M[r], M[c])]
    return [M[i][n] / M[i][i] for i in range(n)]


class _PhaseTypeMethods(TimeLaw):
    """Everything a PH law computes from ``phase_type()``."""

    def _ph(self):
        return self.phase_type()

    @property
    def mean(self):
        """E T."""
        return self.moment(1)

    def lst(self, s):
        import sympy as sp

        alpha, T = self._ph()
        n = len(alpha)
        Tm = sp.Matrix([[to_sympy(v) for v in row] for row in T])
        t = -Tm * sp.ones(n, 1)
        a = sp.Matrix([[to_sympy(v) for v in alpha]])
        return sp.simplify((a * (s * sp.eye(n) - Tm).inv() * t)[0, 0])

    def _moment(self, n):
        alpha, T = self._ph()
        if any(is_symbolic(v) for row in T for v in row) or any(is_symbolic(v) for v in alpha):
            return None
        negT = [[-v for v in row] for row in T]
        x = [Fraction(1)] * len(alpha)
        fact = 1
        for i in range(1, n + 1):
            x = solve_exact(negT, x)  # (-T)^{-i} 1
            fact *= i
        return fact * sum(a * v for a, v in zip(alpha, x))

    def count_law(self, lam):
        alpha, T = self._ph()
        return PhaseTypeCount(tuple(alpha), tuple(tuple(r) for r in T), lam)

    def sample(self, rng, size):
        import numpy as np

        alpha, T = self._ph()
        n = len(alpha)
        Tf = np.array([[float(v) for v in row] for row in T])
        rates = -np.diag(Tf)
        exit_rates = -Tf.sum(axis=1)
        # jump probabilities: to phase j (j != i) or to absorption (column n)
        jump = np.zeros((n, n + 1))
        for i in range(n):
            jump[i, :n] = Tf[i] / rates[i]
            jump[i, i] = 0.0
            jump[i, n] = exit_rates[i] / rates[i]
        a = np.array([float(v) for v in alpha])
        phase = rng.choice(n, size=size, p=a / a.sum())
        out = np.zeros(size)
        alive = np.ones(size, dtype=bool)
        cum = np.cumsum(jump, axis=1)
        while alive.any():
            idx = np.flatnonzero(alive)
            ph = phase[idx]
            out[idx] += rng.exponential(1.0, idx.size) / rates[ph]
            u = rng.random(idx.size)
            nxt = (u[:, None] > cum[ph]).sum(axis=1)
            done = nxt >= n
            alive[idx[done]] = False
            phase[idx[~done]] = nxt[~done]
        return out


@dataclass(frozen=True)
class PhaseType(_PhaseTypeMethods):
    """PH(alpha, T): ``ph:alpha=0.5/0.5,T=-2/1/0/-3`` (T row by row, ``/``-separated).

    alpha: initial probabilities (sum 1); T: sub-generator (rates per unit time).
    """

    spec = "ph"
    alpha: tuple = param("initial phase probabilities (sum 1)", kind=Kind.NUMBERS, metavar="A1/A2/..")
    T: tuple = param("sub-generator, row by row (n x n values)", kind=Kind.NUMBERS, metavar="T11/T12/..",
                     units="1/time")

    def __post_init__(self):
        T = self.T
        if T and not isinstance(T[0], (tuple, list)):  # flat row-major list
            n = isqrt(len(T))
            if n * n != len(T):
                raise ParameterError("T", f"must have n x n entries (got {len(T)})")
            T = tuple(tuple(T[i * n:(i + 1) * n]) for i in range(n))
        from ..numbers import exact

        object.__setattr__(self, "T", tuple(tuple(exact(v, f"T[{i}][{j}]") for j, v in enumerate(row))
                                            for i, row in enumerate(T)))
        object.__setattr__(self, "alpha", tuple(exact(v, f"alpha[{i}]") for i, v in enumerate(self.alpha)))
        self._validate()

    def _validate(self):
        n = len(self.alpha)
        if n == 0 or len(self.T) != n or any(len(row) != n for row in self.T):
            raise ParameterError(f"ph: alpha has {n} entries and T is {len(self.T)} x "
                                 f"{len(self.T[0]) if self.T else 0}: give an n x n T for n phases")
        for i, a in enumerate(self.alpha):
            probability(a, f"alpha[{i}]")
        if not is_symbolic(sum(self.alpha)) and sum(self.alpha) != 1:
            raise ParameterError("alpha", "must sum to 1", sum(self.alpha))
        for i, row in enumerate(self.T):
            for j, v in enumerate(row):
                if is_symbolic(v):
                    continue
                if i == j and not v < 0:
                    raise ParameterError(f"T[{i}][{i}]", "must be < 0 (a phase is left at a positive rate)", v)
                if i != j and v < 0:
                    raise ParameterError(f"T[{i}][{j}]", "must be >= 0 (a rate)", v)
            if all(not is_symbolic(v) for v in row) and sum(row) > 0:
                raise ParameterError(f"row {i} of T", "must sum to <= 0 (its exit rate is -sum)", sum(row))
        if is_concrete_T(self.T):
            self._check_absorbing()

    def _check_absorbing(self):
        n = len(self.T)
        exits = {i for i in range(n) if sum(self.T[i]) < 0}
        reach = set(exits)
        changed = True
        while changed:
            changed = False
            for i in range(n):
                if i not in reach and any(self.T[i][j] > 0 and j in reach for j in range(n) if j != i):
                    reach.add(i)
                    changed = True
        if len(reach) != n:
            stuck = sorted(set(range(n)) - reach)
            raise ParameterError(f"T: phases {stuck} never lead to absorption (the time would be infinite)")

    def phase_type(self):
        return self.alpha, self.T

    def spec_text(self):
        from ..params import show_value

        flat = tuple(v for row in self.T for v in row)
        return f"ph:alpha={show_value(self.alpha)},T={show_value(flat)}"

    @classmethod
    def examples(cls):
        return (cls((Fraction(1, 2), Fraction(1, 2)), (-2, 1, 0, -3)),)


def is_concrete_T(T) -> bool:
    return all(not is_symbolic(v) for row in T for v in row)


@dataclass(frozen=True)
class Coxian(_PhaseTypeMethods):
    """Coxian law: phases 1..n with rates mu_i; after phase i the time continues with phase i+1
    with probability p_i, else ends (p has n - 1 entries). ``coxian:rates=2/3,p=0.5``."""

    spec = "coxian"
    rates: tuple = param("phase rates mu_1/../mu_n", kind=Kind.NUMBERS, units="1/time", metavar="MU1/MU2/..",
                         check="> 0")
    probs: tuple = param("continuation probabilities p_1/../p_{n-1}", kind=Kind.NUMBERS, key="p", metavar="P1/..",
                         default=(), check="[0, 1]")

    def _validate(self):
        if not self.rates:
            raise ParameterError("coxian: give at least one phase rate")
        if len(self.probs) != len(self.rates) - 1:
            raise ParameterError(f"coxian: {len(self.rates)} phases need {len(self.rates) - 1} continuation "
                                 f"probabilities, got {len(self.probs)}")

    def phase_type(self):
        n = len(self.rates)
        T = [[0] * n for _ in range(n)]
        for i, mu in enumerate(self.rates):
            T[i][i] = -mu
            if i + 1 < n:
                T[i][i + 1] = mu * self.probs[i]
        return (1,) + (0,) * (n - 1), tuple(tuple(r) for r in T)

    @classmethod
    def examples(cls):
        return (cls((2, 3), (Fraction(1, 2),)), cls((Fraction(5, 2),)))
