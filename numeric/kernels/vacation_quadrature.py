"""The residual weights (F2) of a smooth vacation law by piecewise Gauss-Legendre quadrature, with an error estimate.

(F9) of the finite room's lattice sums (:mod:`qderive.numeric.kernels.lattice_finite`, issue 28): a vacation law with
a smooth survival function S and no exact pieces (gamma of any shape, lognormal) enters the sums (F1)/(F5) only
through the residual weights of the vacation periods,

    omega_K(u) = int_0^oo Pois(K; lambda x) S(x + u) dx,   Pois(K; z) = z^K / K! e^{-z},                  (F2)

at the columns' offsets u_j = t - j h > 0 (h the services' lattice step; a constant service D: h = D) and at u = 0.
The bounds (F7) take S by steps on the lattice (first order in h). Here the integral is taken in the age x itself:
for every column the integrand x -> Pois(K; lambda x) S(x + u_j) is analytic on x > -u_j (S is analytic on
(0, oo) for these laws; its only singularity, a branch point x^a of a gamma law of shape a < 1 or the lognormal's
essential one, lies at x = -u_j <= 0), so *one* mesh of x serves every column and every row K, and the nodes' Poisson
weights are formed once: with the rows times the columns Z = W A (rows K x columns j, :func:`quadrature_columns`),

    sum_K sum_j Z[K, j] omega_K(u_j) = sum_i w_i sum_j S(x_i + u_j) Y[i, j],   Y = P Z,  P[i, K] = Pois(K; lambda x_i),

O(nodes (rows + 1) columns) per tail point, every term positive.

**The mesh** (:func:`adapt_mesh`, once per period's batch rate and rows) is refined by bisection from the cells
[0, 1 / lambda], [2^k / lambda, 2^{k+1} / lambda] up to X, each cell carrying Gauss-Legendre rules of ORDERS = (12, 24)
nodes, until on every cell the two orders agree, for the weighted sum sum_K z_K int Pois(K; lambda x) S(x + u) dx
(z_K the rows' masses), within REL_CELL of the cell's own share (or ABS_CELL of the whole). Bisection grades the
cells toward x = 0 where a singularity is near (a cell [a, 2 a] lies a from x = 0: the point -3 of the
reference interval, Bernstein ellipse parameter 3 + 2 sqrt 2 = 5.8, Gauss-Legendre error about 5.8^{-2n}), and
leaves them about sqrt(x / lambda) wide where the Poisson weights of the large rows dominate (the width of
Pois(K; lambda x) in x). The columns take the mesh of their *level* (:func:`column_level`): a column with
u >= 2^l / lambda uses the mesh adapted at u = 2^l / lambda, graded toward 0 only as far as that distance needs
(the mesh at u = 0, for the columns of customers surely waiting longer than t, grades down to EPSILON; for a gamma
law of shape 1/2 most of its nodes lie below 1e-3 / lambda and serve no other column). The cell [0, epsilon] at 0
(epsilon = EPSILON min(1 / lambda, E V), where bisection stops) is left out with its bound: its integrand lies in
[0, S(u)] (Pois <= 1), so it adds at most epsilon S(u_j) per unit of Z[., j]. Beyond X (the least 2^k / lambda
with P(Poisson(lambda X) <= top) S(X + u) below 1e-18 E V) the rest is bounded by S(X + u) int_X^oo Pois(K;
lambda x) dx = S(X + u) P(Poisson(lambda X) <= K) / lambda (S decreases).

**The error** of a tail point (:func:`quadrature_columns`): sum over the cells and columns of the two orders'
difference |Q_12 - Q_24| (the value is the higher order's: where Gauss-Legendre converges geometrically the
difference bounds the error of the lower order and the higher one is far closer, the infinite room's convention,
``engines.vacation_wait``), plus the two bounds above, plus the survival function's own float64 error
(``survival_many``: about 1e-14 relative, SURVIVAL_ERROR of each positive term). The row remainder
sum_{K > top} omega_K(0) (incomplete rows) is E V - sum_{K <= top} omega_K(0) (sum_K Pois(K; lambda x) = 1, so
sum_K omega_K(0) = int_0^oo S = E V) plus the quadrature's error and the subtraction's rounding.

**Measured** (tests/test_vacation_quadrature.py): the weights against mpmath's quadrature of (F2) at 20 digits
within 1e-14 relative for gamma laws of shape 1/2 and 5/2 and a lognormal of scv 2 (the estimate above them); the
finite room's tails with an Erlang-2 vacation taken as a law with only a survival function within 4e-15 of its exact
sums (F4), down to P(W > t) = 4e-12; a gamma vacation (shape 5/2) at r = 300 within 3e-15 of the infinite room's
transform inversion at 15 digits. Cost (r = 129, load 0.55, lognormal vacation): about 10^3 nodes per mesh, the
first tail 0.7 s of CPU with the model's solve from the command line, the 0.99 quantile 0.9 s (docs/performance.md).

**Kinks** (issue 28, branch uq28). A law whose survival function is analytic between known points k (a uniform law's
ends: ``survival_kinks``) has, for the column u_j, an integrand analytic between the points x = k - u_j. The mesh of a
column level is then split at every such point of the columns it serves (``breaks`` of :func:`adapt_mesh`; with a
service on a lattice g the columns are u_j = t - j g, so the points are k - t + j g, at most sum_k ceil(k / g)), and
its acceptance test takes the columns' mean of S(x + u_j) (each analytic on every cell) instead of S(x + u): the
convergence is geometric again (a uniform vacation, r = 129: 1 to 5 cells per mesh; without the split the bisection
finds the kinks itself with 25 to 90 cells per mesh, the same value at 2.5 times the CPU). One mesh serves the columns
of one tail point (the points move with t), so the meshes of a kinked law are kept per point set, at most
MAX_MESHES of them. The bounds (F7) of the engine remain only where the points would be too many (a service off every
lattice, rounded to up to 2^13 levels).

**The bound** (:func:`remainder_bound`). Where the law bounds |S| off the real axis (``survival_bound``: a uniform law,
a polynomial on each piece; a gamma law of integer shape, e^{-w} times a polynomial) the error of the Gauss-Legendre
rule of n nodes on a cell [c - h, c + h] is bounded by h (64/15) M rho^{-2n} / (rho^2 - 1) (Trefethen, *Approximation
Theory and Approximation Practice*, Theorem 19.3) with M a bound of the integrand on the Bernstein ellipse E_rho:
(lambda R)^K e^{-lambda lo} / K! for the Poisson weight (R the largest |z|, lo the least Re z on the ellipse's
rectangle) times the law's bound of S; the least over a few rho per cell and column. The kinks' points are rounded
(a few ulp): the sliver of that width where S is on the other piece adds at most 2 delta^2 (|p'| + |S'|) per unit
of Z (S continuous; the slopes by Cauchy's estimate from the same bounds). This replaces the two orders' difference:
an error BOUND, not an estimate (measured on the adapted meshes, lambda = 11.5, 41 rows: 1e-28 for a uniform law and
1e-26 for an Erlang-2 one against column sums of 0.01 to 0.04, where the two orders' difference is 1e-17, the float64
rounding; loose by up to 1e7 on deliberately wide cells, tests/test_vacation_quadrature_kinks.py). For gamma laws of
other shapes and the lognormal no bound of the incomplete gamma function or of erfc of a complex logarithm is at
hand here: their error stays the two orders' difference (an estimate; where Gauss-Legendre converges geometrically it
exceeds the higher order's error by orders of magnitude).

**One implementation over the context** (issue 28, dq28). The cell sums (:func:`_evaluate`,
:func:`quadrature_profile`, :func:`quadrature_columns`), the refinement (:func:`refine`), the rules
(:func:`gauss_rule`) and the Poisson weights (:func:`age_poisson_weights`) are written once over the arithmetic context
``ctx`` of the piece (:attr:`QuadraturePiece.ctx`: FLOAT64, or mpmath at D digits for the twin of
:meth:`QuadraturePiece.at`); the context chooses the rule (numpy's nodes, or polished by Newton's method at D digits),
the orders (:func:`orders`: 12 and 24 nodes, or m and 2 m with m = 12 2^k, 13 m / 12 >= D + 4, :func:`digits_orders`),
the cells (:func:`context_cells`), the rounds of bisection and how the Poisson weights avoid underflow.

**At D digits**. The same cells (the float64 mesh of the point), their ends exact (the kinks' points k - u_j snapped
to their exact values: no sliver), the grading at 0 continued down to 10^-(D+4) min(1 / lambda, E V) and the end X
doubled until the rest beyond it is below 10^-(D+4) E V, then every cell bisected until the rules of m and 2 m nodes
agree within 10^-(D+3) / 64 of the whole; the Poisson weights as products (no underflow: in the context's gmpy2 twin
at D + 10 digits where it has one, :func:`_fast`), the survival function the law's ``survival_many`` at D + 5
digits. The error is the bound above (for the rule of 2 m nodes) or the two orders' difference, plus the cell at 0,
the rest beyond X and 10^-(D+4) for the survival function (:func:`survival_error`). Float64 and D digits give the
same values as the two implementations they replace (measured, r = 129: every float64 tail and 0.99 quantile of a
gamma 5/2, lognormal and uniform vacation to the last bit, the 20-digit tails of these and of a gamma 1/2 one in all
20 digits; the CPU the same within the noise).

A plain module (kernels import numpy, math and each other only): the survival function is the law's float64
``survival_many``, passed in as a callable (at D digits the twin's, on object arrays of the context's numbers).
"""

import math

import numpy

from .context import FLOAT64

#: Gauss-Legendre orders per cell: the value is the second's, their difference the error estimate
ORDERS = (12, 24)
#: a cell is accepted when its two orders agree within REL_CELL of its share or ABS_CELL of the whole integral
REL_CELL = 1e-13
ABS_CELL = 1e-17
#: the cell at x = 0 left out below EPSILON min(1 / lambda, E V) (bounded instead)
EPSILON = 1e-15
#: at most this many cells (a law whose quadrature does not settle keeps the error it has: the bracket shows it)
MAX_CELLS = 4096
#: the Bernstein ellipses tried for the error bound (:func:`remainder_bound`)
RHOS = (1.5, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0)
#: a kinked law: at most this many meshes kept (each serves the columns of one tail point; a search clears them)
MAX_MESHES = 256
#: the levels of the columns' meshes (:func:`column_level`): u from 2^-30 / lambda up to 2^4 / lambda
LEVEL_LOW, LEVEL_HIGH = -30, 4
#: relative float64 error of the law's ``survival_many`` (a few ulp for erfc and the incomplete gamma function)
SURVIVAL_ERROR = 1e-13

_RULES = {}


def _rule(n):
    """Gauss-Legendre nodes and weights on [-1, 1] (numpy's)."""
    if n not in _RULES:
        _RULES[n] = numpy.polynomial.legendre.leggauss(n)
    return _RULES[n]


def orders(ctx):
    """The two Gauss-Legendre orders per cell in the context ``ctx``: ORDERS (12, 24) in float64, (m, 2 m) of
    :func:`digits_orders` at D digits (the value is the higher order's, their difference the error estimate)."""
    return ORDERS if ctx.is_float64 else digits_orders(ctx.dps)


def gauss_rule(ctx, n):
    """Gauss-Legendre nodes and weights on [-1, 1] in the context ``ctx``: numpy's in float64; at D digits numpy's
    float64 roots polished by Newton's method on the three-term recurrence until the step is below 4 eps
    (w = 2 / ((1 - x^2) P_n'(x)^2))."""
    if ctx.is_float64:
        return _rule(n)
    key = ("rule", n, ctx.dps)
    if key not in _RULES:
        t, _ = _rule(n)
        x = ctx.array([ctx.num(float(v)) for v in t])
        for _ in range(12):
            p, dp = _legendre(ctx, n, x)
            step = p / dp
            x = x - step
            if all(abs(v) <= 4 * ctx.eps for v in step):
                break
        _, dp = _legendre(ctx, n, x)
        _RULES[key] = (x, 2 / ((1 - x * x) * dp * dp))
    return _RULES[key]


def _legendre(ctx, n, x):
    """(P_n(x), P_n'(x)) elementwise (the three-term recurrence; ``x`` an array of ctx numbers)."""
    p0, p1 = x * 0 + 1, x
    for k in range(1, n):
        p0, p1 = p1, ((2 * k + 1) * x * p1 - k * p0) / (k + 1)
    return p1, n * (x * p1 - p0) / (x * x - 1)


def age_poisson_weights(ctx, lam, xs, ws, top, size=False):
    """P[i, K] w_i = Pois(K; lambda x_i) w_i = (lambda x_i)^K / K! e^{-lambda x_i} w_i for the points x_i > 0 of
    ``xs`` (weights ``ws``) and K = 0..top, in the context ``ctx``. A context that underflows (float64: ``tiny`` > 0)
    takes them from their logarithms K log(lambda x) - lambda x - log K! (no overflow or underflow of the factors,
    whatever lambda x and K); the relative error of an entry is about eps (K |log(lambda x)| + lambda x + log K! + 3),
    the exponent's rounding, and ``size`` also returns that count's largest value over the entries above e^-60 (a
    smaller entry's error is below 1e-26 e^-60 of anything the sums hold: it is taken into the rounding bound's
    constant). A context with no underflow (mpmath: ``tiny`` = 0) forms the same products directly, e^{-lambda x}
    times (lambda x / k) for k = 1..K (one exponential per node, positive factors: about K + 2 roundings), at D + 10
    digits and in the context's faster twin (gmpy2, :func:`_fast`) where it has one: 10^-(D+7) relative, under the
    survival function's 10^-(D+4)."""
    if ctx.tiny:
        z = xs * lam
        lz = ctx.log(z)
        ks = ctx.arange(top + 1)
        log_fact = numpy.concatenate([ctx.zeros(1), numpy.cumsum(ctx.log(ks[1:]))])
        lead = lz[:, None] * ks[None, :] - z[:, None] - log_fact[None, :]
        P = ctx.exp(lead) * ws[:, None]
        if not size:
            return P
        count = numpy.abs(lz)[:, None] * ks[None, :] + z[:, None] + log_fact[None, :] + 3
        return P, float(numpy.max(count[lead >= -60], initial=3.0))
    fast = _fast(ctx)
    hi, num = (ctx, ctx) if fast is None else fast
    with hi, num:
        z, ws = (xs * lam, ws) if num is hi else (num.from_mp(xs * lam), num.from_mp(ws))
        P = num.zeros((len(z), top + 1))
        col = num.exp(-z)
        for K in range(top + 1):
            if K:
                col = col * z / K
            P[:, K] = col * ws
    return P


def poisson_rows(lam, xs, top, size=False):
    """P[i, K] = Pois(K; lambda x_i) in float64 (:func:`age_poisson_weights` with unit weights)."""
    xs = numpy.asarray(xs, dtype=float)
    return age_poisson_weights(FLOAT64, lam, xs, numpy.ones(len(xs)), top, size)


def poisson_cdf(z, top):
    """P(Poisson(z) <= K), K = 0..top (positive cumulative sums of the pmf)."""
    return numpy.minimum(numpy.cumsum(poisson_rows(1.0, [z], top)[0]), 1.0) if z > 0 else numpy.ones(top + 1)


def cell_nodes(ctx, lam, a, b, n, top, size=False):
    """(nodes, P w[, count]) of the rule of n nodes (:func:`gauss_rule`) on the cells [a_c, b_c] (arrays of ctx
    numbers): the nodes flattened (cells x n) and the Poisson weights times the rule's (:func:`age_poisson_weights`)."""
    t, w = gauss_rule(ctx, n)
    x = ((a + b)[:, None] + (b - a)[:, None] * t[None, :]) / 2
    ws = (((b - a)[:, None] * w[None, :]) / 2).reshape(-1)
    got = age_poisson_weights(ctx, lam, x.reshape(-1), ws, top, size)
    return (x.reshape(-1), *got) if size else (x.reshape(-1), got)


class QuadratureMesh:
    """The cells [a_c, b_c] of x (``edges``, numbers of the context ``ctx``) and, per order of :func:`orders`, the
    nodes (cells x n, flattened) and P[i, K] w_i (the Poisson weights times the Gauss-Legendre weights,
    :func:`cell_nodes`) for one batch rate and rows 0..top; ``beyond`` the bound of the rest beyond X. A plain
    class."""

    __slots__ = ("edges", "lam", "top", "X", "epsilon", "nodes", "weights", "beyond", "size", "ctx")

    def __init__(self, edges, lam, top, epsilon, ctx=None):
        ctx = FLOAT64 if ctx is None else ctx
        self.ctx = ctx
        self.edges = ctx.array(edges) if ctx.is_float64 else edges
        self.lam, self.top, self.epsilon = lam, top, epsilon
        self.X = float(self.edges[-1]) if ctx.is_float64 else self.edges[-1]
        a, b = self.edges[:-1], self.edges[1:]
        self.nodes, self.weights, self.size = [], [], 0.0
        for n in orders(ctx):
            if ctx.is_float64:
                x, PW, count = cell_nodes(ctx, lam, a, b, n, top, size=True)
                self.size = max(self.size, count)
            else:
                x, PW = cell_nodes(ctx, lam, a, b, n, top)
            self.nodes.append(x)
            self.weights.append(PW)
        #: int_X^oo Pois(K; lambda x) dx = P(Poisson(lambda X) <= K) / lambda
        self.beyond = ctx.array(poisson_cdf(float(lam) * float(self.X), top)) / lam

    @property
    def cells(self):
        return len(self.edges) - 1


def _cell_values(lam, top, a, b, survival, u=0.0):
    """Per order: Q[c, K] = the rule's int_{a_c}^{b_c} Pois(K; lambda x) S(x + u) dx on the cells (a, b)."""
    out = []
    for n in ORDERS:
        t, w = _rule(n)
        x = ((a + b)[:, None] + (b - a)[:, None] * t[None, :]) / 2
        P = poisson_rows(lam, x.reshape(-1), top).reshape(len(a), n, top + 1)
        S = numpy.asarray(survival(x.reshape(-1) + u), dtype=float).reshape(len(a), n)
        out.append(numpy.einsum("cnk,cn,n->ck", P, S, w) * ((b - a) / 2)[:, None])
    return out


def upper_end(lam, top, survival, mean, u=0.0):
    """X = 2^k / lambda, the least with P(Poisson(lambda X) <= top) S(X + u) <= 1e-18 E V (or S(X + u) = 0)."""
    X = 1.0 / lam
    for _ in range(200):
        s = float(survival(numpy.array([X + u]))[0])
        if s <= 0 or poisson_cdf(lam * X, top)[top] * s / lam <= 1e-18 * mean:
            return X
        X *= 2
    return X


def adapt_mesh(lam, top, z, survival, mean, u=0.0, breaks=(), test=None):
    """The :class:`QuadratureMesh` for the batch rate ``lam``, rows 0..top with masses ``z`` (>= 0, the weights of
    the acceptance test) and the survival function ``survival`` (float64 arrays) of a law of mean ``mean``: cells
    bisected until the two orders agree (module docstring) for the integrand Pois(K; lambda x) S(x + u).

    A kinked law (module docstring, *Kinks*): the cells also split at the points ``breaks`` (x = k - u_j of every
    kink k and column u_j the mesh serves), and the acceptance test takes ``test`` (x -> the columns' mean of
    S(x + u_j), analytic on every cell) in place of S(x + u)."""
    z = numpy.asarray(z, dtype=float)
    X = upper_end(lam, top, survival, mean, u)
    epsilon = EPSILON * min(1.0 / lam, mean)
    edges = [0.0]
    e = 1.0 / lam
    while e < X:
        edges.append(e)
        e *= 2
    edges.append(X)
    edges = sorted(set(edges).union(b for b in breaks if 0 < b < X))
    if test is not None:
        survival, u = test, 0.0
    todo = list(zip(edges[:-1], edges[1:]))
    done = []
    whole = None
    while todo:
        a = numpy.array([c[0] for c in todo])
        b = numpy.array([c[1] for c in todo])
        q1, q2 = _cell_values(lam, top, a, b, survival, u)
        share = q2 @ z
        diff = numpy.abs(q1 - q2) @ z
        if whole is None:
            whole = float(numpy.sum(share))
        nxt = []
        for i, (lo, hi) in enumerate(todo):
            ok = diff[i] <= REL_CELL * share[i] or diff[i] <= ABS_CELL * whole
            if ok or len(done) + len(nxt) + len(todo) >= MAX_CELLS:
                done.append((lo, hi))
            elif lo == 0 and hi <= 2 * epsilon:  # the cell at 0: left out, bounded (module docstring)
                done.append((hi, hi))
            else:
                mid = (lo + hi) / 2
                nxt += [(lo, mid), (mid, hi)]
        todo = nxt
    done = sorted(c for c in done if c[1] > c[0])
    start = done[0][0]
    cut = [start] + [c[1] for c in done]
    return QuadratureMesh(cut, lam, top, start)


class QuadraturePiece:
    """A vacation's survival function integrated by the quadrature of this module in the sums (F1)/(F5):
    ``survival`` the law's float64 ``survival_many`` (a callable on arrays), ``mean`` E V (a float); the meshes are
    kept per (batch rate, rows) (a quantile search's points share them). A plain class."""

    __slots__ = ("survival", "mean", "meshes", "kinks", "bound", "ctx", "exact")
    #: what :mod:`~qderive.numeric.kernels.lattice_finite` asks (it does not import this module: generated code
    #: ships that kernel without this one)
    quadrature = True

    def __init__(self, survival, mean, kinks=(), bound=None):
        self.survival = survival
        self.mean = float(mean)
        self.meshes = {}
        #: the points y > 0 where S is not analytic (a uniform law's ends; module docstring, *Kinks*)
        self.kinks = tuple(sorted(float(k) for k in kinks if k > 0))
        #: (center, lo, hi, height) -> a bound of |S| on the complex rectangles, or None (the law's
        #: ``survival_bound``; module docstring, *The bound*); None: the two orders' difference estimates the error
        self.bound = bound
        #: the context of the sums (FLOAT64, or mpmath at D digits for a twin: :meth:`at`) and the law's data in it:
        #: (the survival function on arrays of its numbers, E V, the kinks)
        self.ctx = FLOAT64
        self.exact = (lambda xs: numpy.asarray(survival(xs), dtype=float), self.mean, self.kinks)

    def at(self, ctx, survival, mean, kinks):
        """The twin of this piece in the context ``ctx`` (mpmath at D digits; module docstring, *At D digits*):
        ``survival`` maps an object array of ctx numbers to P(V > x) at the context's precision, ``mean`` E V and
        ``kinks`` the kinks as ctx numbers; the float64 meshes are shared (adapted once)."""
        twin = QuadraturePiece(self.survival, self.mean, self.kinks, self.bound)
        twin.meshes, twin.ctx, twin.exact = self.meshes, ctx, (survival, mean, tuple(kinks))
        return twin

    def mesh(self, lam, W, level=None, us=None, masses=None):
        """The mesh for the batch rate ``lam``, the rows ``W`` (K x levels; masses z_K its row sums) and the columns
        u >= 2^level / lambda (None: u = 0), adapted at u = 2^level / lambda (:func:`column_level`). A kinked law:
        the mesh of the columns ``us`` (their ``masses`` weighting the test), split at every k - u_j > 0."""
        z = None
        if self.kinks:
            us = numpy.zeros(1) if us is None else numpy.asarray(us, dtype=float)
            breaks = tuple(sorted({k - u for k in self.kinks for u in us.tolist() if k - u > 0}))
            key = (float(lam), W.shape[0], level, breaks)
        else:
            key = (float(lam), W.shape[0], level)
        if key not in self.meshes:
            z = numpy.asarray(W, dtype=float).sum(axis=1)
            if not z.any():
                z = numpy.ones(W.shape[0])
            u = 0.0 if level is None else 2.0**level / float(lam)
            test = None
            if self.kinks:
                if len(self.meshes) >= MAX_MESHES:  # a quantile search's points: each its own columns' mesh
                    self.meshes.clear()
                m = numpy.ones(len(us)) if masses is None else numpy.maximum(numpy.asarray(masses, dtype=float), 0)
                m = m / m.sum() if m.sum() > 0 else numpy.ones(len(us)) / len(us)
                u = float(numpy.min(us))

                def test(x, us=us, m=m):
                    x = numpy.asarray(x, dtype=float)
                    S = numpy.asarray(self.survival((x[:, None] + us[None, :]).reshape(-1)), dtype=float)
                    return S.reshape(len(x), len(us)) @ m
            else:
                breaks = ()
            self.meshes[key] = adapt_mesh(float(lam), W.shape[0] - 1, z, self.survival, self.mean, u, breaks, test)
        return self.meshes[key]


    def profile(self, lam, W):
        """:func:`quadrature_profile` of this piece (in its context)."""
        return quadrature_profile(self, lam, W)

    def columns(self, ctx, lam, W, A, us, J):
        """:func:`quadrature_columns` of this piece."""
        return quadrature_columns(ctx, lam, self, W, A, us, J)


def column_level(lam, us):
    """The mesh level of each column u > 0: floor(log2(lambda u)) within [LEVEL_LOW, LEVEL_HIGH] (LEVEL_LOW also for
    a smaller u): the singularity x = -u lies at least 2^level / lambda from the cells, so a column takes the mesh
    adapted at u = 2^level / lambda, graded toward 0 only down to about that distance (the mesh at u = 0 grades to
    EPSILON: 1800 of its 2500 nodes for a gamma law of shape 1/2 serve only the columns near u = 0)."""
    with numpy.errstate(divide="ignore"):
        got = numpy.floor(numpy.log2(lam * numpy.asarray(us, dtype=float)))
    return numpy.clip(got, LEVEL_LOW, LEVEL_HIGH).astype(int)


def remainder_bound(piece, mesh, Z, us, n=ORDERS[1], eps=2.0**-52):
    """cells x columns: a bound of the error of the rule of n nodes (the value's: ORDERS[1]) on each cell for the
    integrand f_j(x) = sum_K Z[K, j] Pois(K; lambda x) S(x + u_j), or None when the law gives no ``bound``.
    Gauss-Legendre on [c - h, c + h] for f analytic in the Bernstein ellipse E_rho (foci c -+ h, semi-axes
    h (rho +- 1/rho) / 2) with |f| <= M there errs by at most h (64/15) M rho^{-2n} / (rho^2 - 1) (Trefethen,
    *Approximation Theory and Approximation Practice*, Theorem 19.3). On E_rho, inside the rectangle
    lo <= Re z <= hi, |Im z| <= b:
    |Pois(K; lambda z)| = (lambda |z|)^K e^{-lambda Re z} / K! <= (lambda R)^K e^{-lambda lo} / K! (R the largest
    |z|) and |S(z + u_j)| <= the law's bound on the piece of S at c + u_j (every cell lies between the kinks of the
    columns it serves). The least over RHOS per cell and column."""
    if piece.bound is None:
        return None
    us = numpy.asarray(us, dtype=float)
    a, b = mesh.edges[:-1], mesh.edges[1:]
    c, h = (a + b) / 2, (b - a) / 2
    top = Z.shape[0] - 1
    ks = numpy.arange(top + 1, dtype=float)
    log_fact = numpy.concatenate([[0.0], numpy.cumsum(numpy.log(numpy.arange(1, top + 1, dtype=float)))])
    best = None
    for rho in RHOS:
        major, minor = h * (rho + 1 / rho) / 2, h * (rho - 1 / rho) / 2
        lo, hi = c - major, c + major
        R = numpy.hypot(numpy.maximum(numpy.abs(lo), numpy.abs(hi)), minor)
        lead = numpy.log(h * 64 / 15 / (rho * rho - 1)) - 2 * n * math.log(rho) - mesh.lam * lo  # per cell
        logs = numpy.log(mesh.lam * R)[:, None] * ks[None, :] - log_fact[None, :] + lead[:, None]
        with numpy.errstate(over="ignore"):
            P = numpy.exp(numpy.minimum(logs, 700.0))  # cells x rows
            Sb = piece.bound((c[:, None] + us[None, :]).reshape(-1), (lo[:, None] + us[None, :]).reshape(-1),
                             (hi[:, None] + us[None, :]).reshape(-1), numpy.repeat(minor, len(us)))
            got = (P @ Z) * numpy.asarray(Sb, dtype=float).reshape(len(c), len(us))
        got = numpy.where(numpy.isfinite(got), got, numpy.inf) * (1 + 1e-12)
        best = got if best is None else numpy.minimum(best, got)
    if piece.kinks:  # a cell's ends k - u_j are rounded: a sliver of width delta <= 4 eps (x + u_j) may hold the kink
        # (``eps`` the unit roundoff of the ends' numbers: at D digits they are snapped exact and the term is nil)
        # on the wrong side, where S (continuous: no atoms) differs from the piece's continuation p_c by at most
        # delta (|p_c'| + |S'|) (Pois <= 1); |p'| <= max |p| / h on the disk of radius h (Cauchy), max over the cells
        delta = 4 * eps * (numpy.abs(b)[:, None] + us[None, :])
        Sb = piece.bound((c[:, None] + us[None, :]).reshape(-1), (a[:, None] - h[:, None] + us[None, :]).reshape(-1),
                         (b[:, None] + h[:, None] + us[None, :]).reshape(-1), numpy.repeat(h, len(us)))
        slope = numpy.asarray(Sb, dtype=float).reshape(len(c), len(us)) / h[:, None]
        best = best + 2 * delta**2 * (slope + slope.max(axis=0)[None, :]) * Z.sum(axis=0)[None, :]
    return best


def _size(mesh):
    """The rounding count of a weight: the logarithms of the Poisson weights and the positive sums over the nodes."""
    return mesh.size + math.log2(len(mesh.nodes[1]) + 1) + 8


class _Cells:
    """The float64 ends of the cells (what :func:`remainder_bound` reads of a mesh). A plain class."""

    __slots__ = ("edges", "lam", "cells")

    def __init__(self, edges, lam):
        self.edges = numpy.asarray(edges, dtype=float)
        self.lam, self.cells = float(lam), len(self.edges) - 1


def context_cells(piece, lam, mesh, us):
    """The :class:`QuadratureMesh` of the sums in the piece's context for the float64 ``mesh`` of the columns ``us``:
    in float64 the mesh itself (adapted to 1e-13 per cell, cut at EPSILON and at 1e-18 beyond X: module docstring);
    at D digits its cells in the context, the float64 ends exact, the kinks' points k - u_j snapped to their exact
    values (no sliver), the grading at 0 continued down to 10^-(D+4) min(1 / lambda, E V) and the end X doubled until
    the rest beyond it is below 10^-(D+4) E V, with the rules of :func:`orders` (the cells are then refined,
    :func:`refine`)."""
    ctx = piece.ctx
    if ctx.is_float64:
        return mesh
    _, mean, kinks = piece.exact
    tiny = 10.0 ** -(ctx.dps + 4)
    edges = [ctx.num(float(e)) for e in mesh.edges]
    if kinks:
        floats = numpy.asarray(mesh.edges, dtype=float)
        for k in kinks:
            for u in us:
                exact = k - u
                if exact > 0:
                    i = int(numpy.argmin(numpy.abs(floats - float(exact))))
                    if abs(floats[i] - float(exact)) <= 1e-12 * max(1.0, abs(float(exact))):
                        edges[i] = exact
    lamf, top = float(lam), mesh.top
    start = float(mesh.edges[0])
    floor = tiny * min(1.0 / lamf, piece.mean)
    low = []
    while start > floor:  # below the float64 mesh's first end: cells [a / 2, a]
        start /= 2
        low.append(ctx.num(start))
    edges = low[::-1] + edges
    X = float(mesh.edges[-1])
    u0 = min((float(u) for u in us), default=0.0)
    for _ in range(200):
        s = float(piece.survival(numpy.array([X + u0]))[0])
        if s <= 0 or poisson_cdf(lamf * X, top)[top] * s / lamf <= tiny * piece.mean:
            break
        X *= 2
        edges.append(ctx.num(X))
    edges = ctx.array(edges)
    return QuadratureMesh(edges, lam, top, edges[0], ctx)


def _fast(ctx):
    """(the context at D + 10 digits, its twin of faster numbers) when the context has one (``twin``: gmpy2's mpfr,
    about ten times mpmath's speed, correctly rounded), else None (float64 has none)."""
    make = getattr(ctx, "twin", None)
    if make is None:
        return None
    hi = type(ctx)(ctx.dps + 10)
    with hi:
        twin = hi.twin()
    return None if twin is None else (hi, twin)


def _rows_times(ctx, PW, S, cells, n):
    """cells x rows: sum over each cell's n nodes of PW[i, K] S[i] (PW of :func:`age_poisson_weights`, maybe the twin's
    numbers; the result the context's)."""
    fast = _fast(ctx) if len(PW) and not ctx.is_float64 and not hasattr(PW.flat[0], "_mpf_") else None
    if fast is None:
        return (PW * S[:, None]).reshape(cells, n, -1).sum(axis=1)
    hi, twin = fast
    with hi, twin:
        got = (PW * twin.from_mp(S)[:, None]).reshape(cells, n, -1).sum(axis=1)
        return twin.to_mp(got)


#: at D digits, the cells are bisected at most this many rounds (:func:`refine`; float64: none, the mesh is adapted)
DIGITS_ROUNDS = 24


def refine(piece, lam, mesh, apply, weights):
    """(edges, (Q_lo, Q_hi)) in the piece's context: the rule's values per cell (cells x columns, given by
    ``apply(nodes, P w, cells, n)``) for the two orders of :func:`orders` on the cells of ``mesh`` (their nodes as
    the mesh holds them). In float64 the mesh is the adapted one (:func:`adapt_mesh`): no cell is bisected. At D
    digits every cell is bisected until its two orders differ by at most 10^-(D+3) 2^-6 of the whole (the columns
    weighted by ``weights``), at most DIGITS_ROUNDS rounds: the float64 mesh accepted cells whose share is below
    1e-17 of the whole whatever their orders' agreement, and its 1e-13 is not D digits."""
    ctx = piece.ctx
    rounds = 0 if ctx.is_float64 else DIGITS_ROUNDS
    q = [apply(x, PW, mesh.cells, len(x) // mesh.cells) for x, PW in zip(mesh.nodes, mesh.weights)]
    if not rounds:
        return mesh.edges, tuple(q)
    pairs = orders(ctx)
    tol = ctx.num(10.0 ** -(ctx.dps + 3) / 64)
    todo = list(zip(mesh.edges[:-1], mesh.edges[1:]))
    done, whole = [], None
    for round_ in range(rounds + 1):
        if not todo:
            break
        if round_:
            a, b = ctx.array([c[0] for c in todo]), ctx.array([c[1] for c in todo])
            q = []
            for n in pairs:
                x, PW = cell_nodes(ctx, lam, a, b, n, mesh.top)
                q.append(apply(x, PW, len(todo), n))  # cells x columns
        diff = numpy.abs(q[1] - q[0]) @ weights
        if whole is None:
            whole = abs(ctx.fsum(list(q[1] @ weights)))
        nxt = []
        for i, (lo, hi) in enumerate(todo):
            if diff[i] <= tol * whole or round_ == rounds or hi - lo <= 4 * ctx.eps * hi:
                done.append((lo, hi, q[0][i], q[1][i]))
            else:
                mid = (lo + hi) / 2
                nxt += [(lo, mid), (mid, hi)]
        todo = nxt
    done.sort(key=lambda c: c[0])
    cut = ctx.array([done[0][0]] + [c[1] for c in done])
    return cut, (numpy.array([c[2] for c in done]), numpy.array([c[3] for c in done]))


def survival_error(ctx):
    """The relative error of the law's survival function in the context: SURVIVAL_ERROR in float64 (a few ulp of
    erfc and the incomplete gamma function), 10^-(D+4) at D digits (``survival_many`` at D + 5 digits; the sums run
    at the working precision, whose eps is far smaller)."""
    return SURVIVAL_ERROR if ctx.is_float64 else 10.0 ** -(ctx.dps + 4)


def _evaluate(piece, lam, mesh, Z, us):
    """(value, error) of sum_K sum_j Z[K, j] omega_K(u_j) (module docstring) on the float64 ``mesh`` of the columns
    ``us`` > 0 (context numbers), Z rows x columns, in the piece's context: the cells :func:`context_cells`, refined
    (:func:`refine`); the value the higher order's, the error the remainder bound (:func:`remainder_bound`, a law with
    ``survival_bound``) or the two orders' difference, plus the cell [0, epsilon] (its integrand in [0, S(u)]), the
    rest beyond X (S(X + u) P(Poisson(lambda X) <= K) / lambda) and the survival function's relative error."""
    ctx = piece.ctx
    survival, _, _ = piece.exact
    J = len(us)

    def apply(x, PW, cells, n):
        S = survival((x[:, None] + us[None, :]).reshape(-1)).reshape(len(x), J)
        return (ctx.matmul(PW, Z) * S).reshape(cells, n, J).sum(axis=1)  # cells x columns

    cells = context_cells(piece, lam, mesh, us)
    edges, parts = refine(piece, lam, cells, apply, ctx.array([1] * J))
    value = ctx.fsum(list(parts[1].reshape(-1)))
    bound = remainder_bound(piece, _Cells(edges, lam), numpy.asarray(Z, dtype=float), numpy.asarray(us, dtype=float),
                            orders(ctx)[1], float(ctx.eps))
    error = (ctx.fsum([abs(v) for v in (parts[1] - parts[0]).reshape(-1)]) if bound is None else
             ctx.num(float(numpy.sum(bound))))
    mass = Z.sum(axis=0)  # sum_K Z[K, j]
    error = error + cells.epsilon * ctx.fsum(list(survival(us) * mass))  # the cell [0, epsilon]
    error = error + ctx.fsum(list(survival(us + cells.X) * ctx.matmul(cells.beyond.reshape(1, -1), Z)[0]))  # beyond X
    return value, error + survival_error(ctx) * abs(value)


def quadrature_profile(piece, lam, W):
    """(omega, remainder, error, size) at u = 0 for the rows ``W`` (K x levels), in the piece's context: omega_K(0),
    K = 0..top, the remainder bound of the rows beyond (module docstring), the error vector over K (the remainder
    bound or the two orders' difference per row plus the cell at 0, X and the survival function's error) and the
    rounding count; the cells as :func:`_evaluate`'s (the rows as columns, weighted by their masses)."""
    ctx = piece.ctx
    survival, mean, _ = piece.exact
    mesh = piece.mesh(lam, W)
    top = W.shape[0] - 1

    def apply(x, PW, cells, n):
        return _rows_times(ctx, PW, survival(x), cells, n)

    cells = context_cells(piece, lam, mesh, ctx.array([0]))
    edges, q = refine(piece, lam, cells, apply, W.sum(axis=1))
    omega = q[1].sum(axis=0)
    bound = remainder_bound(piece, _Cells(edges, lam), numpy.eye(top + 1), numpy.zeros(1), orders(ctx)[1],
                            float(ctx.eps))
    error = (numpy.abs(q[1] - q[0]).sum(axis=0) if bound is None else ctx.array(list(bound.sum(axis=0)))) + (
        cells.epsilon + cells.beyond * survival(ctx.array([cells.X]))[0] + survival_error(ctx) * omega)
    size = _size(mesh)
    rest = mean - ctx.fsum(list(omega))
    rest = (rest if rest > 0 else 0 * rest) + ctx.fsum(list(error)) + 4 * ctx.eps * size * mean
    return omega, rest, error, size


def quadrature_columns(ctx, lam, piece, W, A, us, J):
    """(sum_K sum_n W[K, n] sum_{j < J} A[n, j] omega_K(u_j), its error, size, per-level reach) for the columns
    j < J of (F1)/(F5) with u_j = ``us``[j] > 0, in the piece's context ``ctx``: the rows times the columns Z = W A
    once (the columns with no admitted customer dropped), then :func:`_evaluate` per column level on its mesh;
    reach[n] = sum_{j < J} A[n, j] bounds the columns' share of a row beyond the last (omega_K(u) <= omega_K(0))."""
    r = A.shape[0] - 1
    cols = A[:r, :J]
    keep = numpy.flatnonzero(cols.any(axis=0))
    if not len(keep):
        return ctx.num(0), ctx.num(0), _size(piece.mesh(lam, W)), cols.sum(axis=1)
    Z = ctx.matmul(W[:, :r], cols[:, keep])
    uc = ctx.array(list(us[:J]))[keep]
    u = numpy.asarray(uc, dtype=float)
    levels = column_level(float(lam), u)
    value = error = ctx.num(0)
    size = 0.0
    for level in numpy.unique(levels):  # the columns of one level on their mesh
        sel = levels == level
        mesh = piece.mesh(lam, W, int(level), u[sel], numpy.asarray(Z[:, sel], dtype=float).sum(axis=0))
        v, e = _evaluate(piece, lam, mesh, Z[:, sel], uc[sel])
        value, error, size = value + v, error + e, max(size, _size(mesh))
    return value, error, size + r + J, cols.sum(axis=1)


def digits_orders(dps):
    """(m, 2 m) Gauss-Legendre nodes per cell at ``dps`` working digits: m = 12 2^k, the least with 13 m / 12 >= dps + 4
    (a cell of the float64 mesh was accepted where 12 nodes reach 13 digits: the error falls geometrically in n)."""
    m = 12
    while 13 * m / 12 < dps + 4:
        m *= 2
    return m, 2 * m
