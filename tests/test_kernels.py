"""The kernels: import rules (they are shipped verbatim by codegen), and the eliminations against
exact rational arithmetic.

GTH and the M-matrix solve are checked against the exact solution of the same system (Python
Fractions, Gaussian elimination), on ill-conditioned cases where ordinary elimination loses
every digit: the relative accuracy must not depend on the condition number.
"""

from __future__ import annotations

import ast
import pkgutil
from fractions import Fraction as F
from importlib import resources

import mpmath
import numpy as np
import pytest

from qderive.numeric import kernels
from qderive.numeric.backend import FLOAT64, FractionContext, mp_context
from qderive.numeric.kernels.chains import gth_stationary, hitting_costs, mmatrix_solve
from qderive.symbolic.laws.phase_type import solve_exact

MODULES = [m.name for m in pkgutil.iter_modules(kernels.__path__)]


@pytest.mark.every_case  # each case is its own module or law: the loop sees them all
@pytest.mark.parametrize("name", MODULES)
def test_kernels_import_only_numpy_math_and_each_other_at_module_level(name):
    tree = ast.parse(resources.files("qderive.numeric.kernels").joinpath(f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(a.name.split(".")[0] in ("numpy", "math", "warnings") for a in node.names), name
            assert node in tree.body, f"{name}: imports belong at module level"
        elif isinstance(node, ast.ImportFrom):
            assert (node.level == 1 and node.module in MODULES) or node.module in ("math", "numpy", "warnings"), (
                name, node.module)
            assert node in tree.body, f"{name}: imports belong at module level"


def test_top_level_names_of_kernel_modules_do_not_collide():
    """codegen concatenates kernel modules into one file: a repeated top-level name would shadow another."""
    seen: dict = {}
    for name in MODULES:
        tree = ast.parse(resources.files("qderive.numeric.kernels").joinpath(f"{name}.py").read_text())
        for node in tree.body:
            names = []
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            for n in names:
                assert n not in seen, f"{n} is defined in kernels {seen[n]} and {name}"
                seen[n] = name


def _exact_stationary(P):
    """pi P = pi, sum 1, by exact elimination (one balance equation replaced by the normalisation)."""
    n = len(P)
    rows = [[(P[j][i] if i != j else -sum(P[j][k] for k in range(n) if k != j)) for j in range(n)] for i in range(n)]
    rows[0] = [F(1)] * n
    return solve_exact(rows, [F(1)] + [F(0)] * (n - 1))


def _nearly_decomposable(n, eps):
    """Two blocks linked by transitions of size eps: pi has entries of very different sizes."""
    P = [[F(0)] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j:
                same = (i < n // 2) == (j < n // 2)
                P[i][j] = F(1, n) if same else eps * F(i + 1, n * (j + 2))
    return P


@pytest.mark.parametrize("eps", [F(1, 10), F(1, 10**12), F(1, 10**40)])
def test_gth_is_exact_in_rationals_and_relatively_accurate_in_float64(eps):
    P = _nearly_decomposable(8, eps)
    exact = _exact_stationary(P)
    assert [F(v) for v in gth_stationary(FractionContext(), np.array(P, dtype=object))] == exact
    f64 = gth_stationary(FLOAT64, np.array([[float(v) for v in row] for row in P]))
    for got, want in zip(f64, exact):
        assert abs(got - float(want)) <= 1e-13 * float(want)
    ctx = mp_context(50)
    with ctx:
        mp = gth_stationary(ctx, _mp_matrix(ctx, P))
        for got, want in zip(mp, exact):
            assert abs(got - ctx.num(want)) <= mpmath.mpf(10) ** -47 * ctx.num(want)


def _mp_matrix(ctx, P):
    A = ctx.zeros((len(P), len(P)))
    for i, row in enumerate(P):
        for j, v in enumerate(row):
            A[i, j] = ctx.num(v)
    return A


@pytest.mark.parametrize("leak", [F(1, 2), F(1, 10**8), F(1, 10**30)])
def test_mmatrix_solve_keeps_relative_accuracy_whatever_the_condition(leak):
    """A birth-death chain that leaves only from state 0 at rate ``leak``: kappa ~ 1/leak."""
    n = 12
    W = [[F(0)] * n for _ in range(n)]
    for i in range(n):
        if i + 1 < n:
            W[i][i + 1] = F(2)
        if i:
            W[i][i - 1] = F(3)
    s = [leak] + [F(0)] * (n - 1)
    b = [F(1)] * n
    A = [[(s[i] + sum(W[i][k] for k in range(n) if k != i)) if i == j else -W[i][j] for j in range(n)] for i in range(n)]
    exact = solve_exact(A, b)
    got = mmatrix_solve(FractionContext(), np.array(W, dtype=object), np.array(s, dtype=object),
                        [np.array(b, dtype=object)])[0]
    assert [F(v) for v in got] == exact
    f64 = mmatrix_solve(FLOAT64, np.array(W, dtype=float), np.array([float(v) for v in s]), [np.ones(n)])[0]
    for g, w in zip(f64, exact):
        assert abs(g - float(w)) <= 1e-12 * float(w)  # about n eps, independent of kappa = O(1/leak)


def _sparse_chain(rng, n, density):
    """A random irreducible rate matrix: a cycle 0 -> 1 -> ... -> n-1 -> 0 plus random extra entries.

    Small densities give scattered nonzero patterns (many runs: the index path of the rank-one
    update), large ones nearly full rows (the slice path); the cycle keeps the chain irreducible.
    """
    P = [[F(0)] * n for _ in range(n)]
    for i in range(n):
        P[i][(i + 1) % n] = F(int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        for j in range(n):
            if j != i and rng.random() < density:
                P[i][j] = F(int(rng.integers(1, 9)), int(rng.integers(1, 9)))
    return P


# (5, 60, 0.05) (1.3 s, the largest) runs in the full suite. loop sibling: (2, 30, 0.15) and (1, 9, 0.1), the same
# scattered patterns (the index path of the rank-one update) on smaller chains
@pytest.mark.parametrize("seed, n, density", [(1, 9, 0.1), (2, 30, 0.15), (3, 40, 0.5), (4, 25, 0.9),
                                              pytest.param(5, 60, 0.05, marks=pytest.mark.slow)])
def test_gth_and_mmatrix_solve_on_scattered_sparsity_patterns(seed, n, density):
    """The eliminations update only the nonzero pattern (slices, runs or index pairs): every
    pattern must give the exact solution in Fractions and 1e-12 relative accuracy in float64
    (well-conditioned rates in [1/8, 8]: n eps growth, n <= 60)."""
    rng = np.random.default_rng(seed)
    P = _sparse_chain(rng, n, density)
    exact = _exact_stationary(P)
    assert [F(v) for v in gth_stationary(FractionContext(), np.array(P, dtype=object))] == exact
    f64 = gth_stationary(FLOAT64, np.array([[float(v) for v in row] for row in P]))
    assert max(abs(g - float(w)) / float(w) for g, w in zip(f64, exact)) <= 1e-12
    # the mean time to reach state 0: an M-matrix system over the other states (leak = rate into 0)
    W = [[P[i][j] for j in range(1, n)] for i in range(1, n)]
    s = [P[i][0] for i in range(1, n)]
    A = [[(s[i] + sum(W[i][k] for k in range(n - 1) if k != i)) if i == j else -W[i][j] for j in range(n - 1)]
         for i in range(n - 1)]
    want = solve_exact(A, [F(1)] * (n - 1))
    got = mmatrix_solve(FractionContext(), np.array(W, dtype=object), np.array(s, dtype=object),
                        [np.array([F(1)] * (n - 1), dtype=object)])[0]
    assert [F(v) for v in got] == want
    f64 = mmatrix_solve(FLOAT64, np.array([[float(v) for v in row] for row in W]), np.array([float(v) for v in s]),
                        [np.ones(n - 1)])[0]
    assert max(abs(g - float(w)) / float(w) for g, w in zip(f64, want)) <= 1e-12


def test_mmatrix_solve_refuses_a_singular_system():
    W = np.array([[0, 1.0], [1.0, 0]])
    with pytest.raises(ValueError, match="singular"):
        mmatrix_solve(FLOAT64, W, np.zeros(2), [np.ones(2)])


def test_hitting_costs_against_the_exact_first_step_equations():
    # DTMC on 0..3 with target {3}; h = c + P_RR h exactly
    P = [[F(1, 2), F(1, 2), 0, 0], [F(1, 3), 0, F(2, 3), 0], [0, F(1, 4), F(1, 4), F(1, 2)], [0, 0, 0, 1]]
    c = [F(1), F(2), F(3), F(0)]
    rows = [[(1 if i == j else 0) - P[i][j] for j in range(3)] for i in range(3)]
    exact = solve_exact(rows, c[:3])
    got = hitting_costs(FractionContext(), np.array(P, dtype=object), [3], c)
    assert [F(v) for v in got[:3]] == exact and got[3] == 0


def test_the_float64_context_flushes_subnormals():
    v = np.array([1.0, 5e-324, 1e-310, 2.3e-308])
    assert list(FLOAT64.flush(v)) == [1.0, 0.0, 0.0, 2.3e-308]
