"""The lattice sums' building blocks of :mod:`qderive.numeric.kernels.lattice_finite` (issue 28 item 1, the
finite room's service on a lattice (F5)), each against a computation written here another way:

* the powers b^{*j} by blocked Toeplitz products (:func:`~qderive.numeric.kernels.lattice_finite._blocked_powers`,
  a dense pmf) against ``numpy.convolve`` applied j times, and their mass beyond the lattice;
* the powers of a pmf whose sums leave the lattice against exact Fractions (all their mass beyond it);
* the tables V_J of (F8) (:class:`~qderive.numeric.kernels.lattice_finite.LatticeTables`), reached from a lower J
  by shifts, against the definition V_J[K, i] = sum_{k < J} Z[K, k] b[i + J - k] summed term by term.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np

from qderive.numeric.backend import FLOAT64
from qderive.numeric.kernels import lattice_finite as LF

EPS = 2.0**-52


def test_blocked_powers_match_repeated_numpy_convolutions():
    rng = np.random.default_rng(5)
    M, count = 1023, 7
    b = rng.random(M + 1) * np.exp(-np.arange(M + 1) / 150.0)  # dense, spanning 1e-3 of its largest entry
    b /= b.sum()
    S, beyond, slack, _ = LF.lattice_convolutions(FLOAT64, b, count, M)
    blocks = -(-(M + 1) // LF._POWER_BLOCK)
    assert len(b) >= LF._POWER_BLOCK + blocks + 1  # the blocked products' path
    ref = np.zeros(1)
    ref[0] = 1.0
    for j in range(count):
        # tolerance: the a-priori bounds of both, (j - 1)(L + blocks + 1) and j (M + 2) roundings, relative per entry
        tol = (max(j - 1, 0) * (LF._POWER_BLOCK + blocks + 1) + j * (M + 2) + 2) * EPS
        head = np.zeros(M + 1)
        head[: min(len(ref), M + 1)] = ref[: M + 1]
        assert np.all(np.abs(S[j] - head) <= tol * head), j
        far = ref[M + 1:].sum()  # P(S_j > M): the full convolution's entries beyond M, a sum of positive terms
        assert abs(beyond[j] - far) <= slack[j] + tol * far, (j, beyond[j], far, slack[j])
        ref = np.convolve(ref, b)


def test_powers_past_the_lattice_have_all_their_mass_beyond_it():
    # services of 2 or 3 lattice steps on a lattice of 8 levels: S_j > 7 for every j >= 4 (the powers once stopped at
    # the first zero one and left P(S_j > M h) = 0 for the later j)
    b = np.array([0.0, 0.0, 0.5, 0.5])
    M, count = 7, 7
    S, beyond, _, _ = LF.lattice_convolutions(FLOAT64, b, count, M)
    exact = [{0: F(1)}]
    for _ in range(count - 1):
        nxt: dict = {}
        for s, p in exact[-1].items():
            for d in (2, 3):
                nxt[s + d] = nxt.get(s + d, F(0)) + p / 2
        exact.append(nxt)
    for j in range(count):
        below = [float(exact[j].get(k, 0)) for k in range(M + 1)]
        assert list(S[j]) == below, j  # dyadic: exact in float64
        assert beyond[j] == float(sum(p for s, p in exact[j].items() if s > M)), j


def test_tables_reached_by_shifts_match_the_definition():
    rng = np.random.default_rng(7)
    rows, r, M, n = 6, 5, 700, 300  # n: the largest atom of b; J up to M + 1
    W = rng.random((rows, r + 1))
    A = rng.random((r + 1, M + 1))
    b = np.zeros(n + 1)
    b[1:] = rng.random(n) * np.exp(-np.arange(n) / 60.0)
    piece = LF.LatticePiece(b / b.sum(), 1.0 / M)
    Z = W[:, :r] @ A[:r]

    def definition(J):  # V_J[K, i] = sum_{k < J} Z[K, k] b[i + J - k], term by term
        out = np.zeros((rows, n))
        for i in range(n):
            for k in range(max(0, J - n - i), J):
                if i + J - k <= n:
                    out[:, i] += Z[:, k] * piece.b[i + J - k]
        return out

    tables = LF.LatticeTables(FLOAT64, W, A, r, piece, n, 2.0, 0.0)  # scale 0: no row cut
    assert tables.kept == rows and tables.dropped == 0
    for J in (400, 431, 650, 395, 700):  # up by shifts, then below the kept ones (new products), then up again
        got = tables.at(J).T
        ref = definition(J)
        # sums of at most J positive products each way: J + 2 roundings relative
        assert np.all(np.abs(got - ref) <= (J + 2) * 2 * EPS * ref), J
