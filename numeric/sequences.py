"""From laws to kernel inputs: count sequences, batch vectors and arrival counts of a model's laws.

The symbolic laws describe themselves (a time law names its count family, a batch law
its support or family); this module evaluates those descriptions with the kernels of
:mod:`qderive.numeric.kernels` in a given context. It is the only place that maps a
family to its kernel (``functools.singledispatch`` on the family class), so a new law
that uses an existing family needs nothing here, and a new family is one registration.

>>> from fractions import Fraction
>>> from qderive.symbolic.laws import Erlang
>>> from qderive.symbolic.batches import Geometric
>>> from qderive.numeric.backend import FLOAT64
>>> c = arrival_counts(Erlang(4, Fraction(3, 200)), Geometric(5), Fraction(8), 10, FLOAT64)
>>> round(float(c.a[0] + c.abar[0]), 15)
1.0
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import singledispatch

import mpmath
import numpy as np

from ..symbolic import counts as C
from ..symbolic import limits as _limits
from ..symbolic.batches.base import BatchLaw
from ..symbolic.batches.geometric import Geometric
from ..symbolic.batches.poisson import ShiftedPoisson
from ..symbolic.errors import NumericalError, ParameterError
from ..symbolic.laws.base import is_concrete
from . import size_biased as _size_biased
from .backend import mp_context
from .kernels import arrivals as _arrivals
from .kernels import batches as _batches
from .kernels import counts as _counts

__all__ = ["KernelCall", "run", "count_kernel", "batch_kernel", "count_sequences", "batch_vectors", "batch_columns",
           "batch_blocks", "ArrivalCounts", "arrival_counts", "BatchVectors", "check_count_work", "sum_count_sequences"]


def _nums(ctx, values):
    return [ctx.num(v) for v in values]


@dataclass(frozen=True)
class KernelCall:
    """A kernel function and its exact (or symbolic) arguments: ``function(ctx, *args, n)``.

    Arguments are numbers, tuples of numbers (lists in the call), tuples of tuples (matrices)
    or other KernelCalls (evaluated first: the parts of a mixture). :func:`run` evaluates a
    call in a context; ``qderive codegen`` prints the same call with symbolic arguments.
    """

    function: object
    args: tuple


def run(call: KernelCall, ctx, n: int):
    """Evaluate a :class:`KernelCall` in ``ctx`` (call inside ``with ctx:``)."""

    def conv(a):
        if isinstance(a, KernelCall):
            return run(a, ctx, n)
        if isinstance(a, tuple):
            return [conv(x) for x in a]
        return a if isinstance(a, int) else ctx.num(a)  # integers (sizes, shapes) stay integers

    return call.function(ctx, *[conv(a) for a in call.args], n)


@singledispatch
def count_kernel(law) -> KernelCall:
    """The kernel call that evaluates a count family (:mod:`qderive.symbolic.counts`)."""
    raise ParameterError(f"no numeric values for the count law {type(law).__name__}: a general law has only "
                         "symbolic moments; choose a concrete service / vacation law to evaluate numerically")


@count_kernel.register
def _(law: C.PoissonCount):
    return KernelCall(_counts.poisson_sequences, (tuple(law.means), tuple(law.weights)))


@count_kernel.register
def _(law: C.NegativeBinomialCount):
    return KernelCall(_counts.negative_binomial_sequences, (law.shape, law.p0, law.q))


@count_kernel.register
def _(law: C.MixtureCount):
    return KernelCall(_counts.mixture_sequences, (tuple(law.weights), tuple(count_kernel(c) for c in law.components)))


@count_kernel.register
def _(law: C.PhaseTypeCount):
    return KernelCall(_counts.phase_type_sequences, (tuple(law.alpha), tuple(tuple(r) for r in law.T), law.lam))


@count_kernel.register
def _(law: C.UniformMixedPoissonCount):
    # the positive sums (U1) of kernels/uniform_counts.py, in the package and in generated code alike (the difference
    # of two Poisson tails cancels: at 30 extra digits it gave exactly 0 for P(K = 0) = 8.7e-88 at lambda a = 200)
    from .kernels.uniform_counts import uniform_mixed_sequences

    return KernelCall(uniform_mixed_sequences, (law.lam_low, law.lam_high))


@count_kernel.register(C.QuadratureCount)
def _(law):
    # evaluated in the package by a refined quadrature: there is no shippable kernel call for this law
    raise ParameterError("the count probabilities of this law are computed in the package (extra precision or "
                         "a refined quadrature), not by a kernel: no generated code; evaluate with qderive eval")


@singledispatch
def count_sequences(law, n: int, ctx):
    """(beta, P(K > k), sum_{i>k} P(K > i)) for k = 0..n of a count law; call inside ``with ctx:``."""
    return run(count_kernel(law), ctx, n)


@functools.lru_cache(maxsize=64)
def _quadrature(law, dps: int, level: int):
    """The law's quadrature nodes and weights (:meth:`~qderive.symbolic.laws.lognormal.LogNormal.quadrature`), kept:
    a wait computation asks for the count sequences of one law at growing lengths, each from level 0."""
    return law.quadrature(dps, level)


@count_sequences.register
def _(law: C.QuadratureCount, n, ctx):
    # kept per (law, n, precision): the finite engine asks the same sequences several times (whole admission: its
    # room matrices at several lengths; the wait's embedded law again), each a quadrature of seconds. Copies out.
    key = (law, n, type(ctx), None if ctx.is_float64 else ctx.dps)
    hit = _QUADRATURE_COUNTS.get(key)
    if hit is None and _by_size_bias(law, ctx):
        hit = _QUADRATURE_COUNTS[key] = _size_biased.size_biased_sequences(law.law, law.lam, n, ctx)
    if hit is None and not ctx.is_float64:  # a finer one serves, rounded to this precision
        finer = [v for (lw, m, kind, dps), v in _QUADRATURE_COUNTS.items()
                 if lw == law and m == n and kind is type(ctx) and dps is not None and dps > ctx.dps]
        if finer:
            with ctx:
                return tuple(ctx.array([+x for x in seq]) for seq in finer[0])
    if hit is None:
        hit = _quadrature_sequences(law, n, ctx, None)
        if len(_QUADRATURE_COUNTS) >= 16:
            _QUADRATURE_COUNTS.pop(next(iter(_QUADRATURE_COUNTS)))
        _QUADRATURE_COUNTS[key] = hit
    return tuple(seq.copy() for seq in hit)


#: the count sequences of quadrature laws by (law, n, context class, digits): 16 entries
_QUADRATURE_COUNTS: dict = {}


def sum_count_sequences(count: C.CountLaw, n: int, ctx, order: int, spent: list | None = None):
    """:func:`count_sequences` for sums against powers k^p, p <= ``order`` + 1 (the residual moments of the
    finite-room waiting time): an entry then matters to its sequence's largest s relative 10^-13 (float64) only
    down to about s / (n + 1)^(order + 1), so a quadrature law's levels are compared to that absolute floor below
    it. With relative agreement in the far tail of a heavy-tailed law (lognormal, n = 512) the levels ran to 10
    (150 000 nodes): that tail is the quadrature's truncation, no level refines it. Other laws: unchanged.

    ``spent``: a list whose first element accumulates the quadrature's node-terms over the calls of one computation
    (the doubling lengths of :func:`~qderive.numeric.kernels.finite_wait.wait_count_sequences`), so that the
    ``count-work`` limit bounds their total: each call alone restarts its levels, and a fourth moment of a
    lognormal service spent 86 s of CPU over ten calls below the limit before one of them reached it. A second
    element, if any, keeps the deepest level of the rule a call needed (:func:`check_count_work`)."""
    if isinstance(count, C.QuadratureCount) and not _by_size_bias(count, ctx):
        return _quadrature_sequences(count, n, ctx, mpmath.mpf(n + 1) ** -(order + 1), spent)
    return count_sequences(count, n, ctx)


def _by_size_bias(count: C.QuadratureCount, ctx) -> bool:
    """Whether the count sequences of a quadrature law in ``ctx`` come from its size-biased laws
    (:func:`~qderive.numeric.size_biased.size_biased_sequences`: every beta_K to the context's digits relative to
    itself by a rule centred at its own integrand's peak, about 20 times fewer terms than the refined Poisson mixture
    over the law's nodes, 0.5 s against 5.6 s over 0..128 at 40 digits for a lognormal of scv 2): in mpmath, for a
    law whose size-biased laws are of its own family (the lognormal). float64 keeps the mixture (its tails are sums
    of positive terms; the size-biased tails subtract from the law's totals, which needs more than 16 digits)."""
    return not ctx.is_float64 and _size_biased.has_size_biased_counts(count.law)


#: an mpmath node-term of a quadrature law's count sequences weighs this many float64 ones in ``count-work`` (25 us
#: against 0.19 us, measured at n = 512, 20 and 30 digits)
MP_NODE_TERM = 125


def _quadrature_rule(ctx, floor):
    """(digits, tolerance, edge) of :func:`_quadrature_sequences` in ``ctx`` with the ``floor`` (None: the rule's
    own)."""
    dps = 17 if ctx.is_float64 else ctx.dps
    tol = 1e-13 if ctx.is_float64 else mpmath.mpf(10) ** (-dps + 3)
    # the rule is truncated where the Gaussian weight is below 10^-(dps+10) (the nodes of ``quadrature(dps + 5)``):
    # an entry below 10^-(dps+8) of its sequence's largest is that truncation's, no level refines it
    if floor is None:
        floor = mpmath.mpf(10) ** (-(dps + 8))
    # the rule's truncation (weights below 10^-(d+5) for quadrature(d)) is put below tol x floor with 5 digits to
    # spare: an entry near the floor whose integrand peaks near the edge of the rule is otherwise decided by the
    # edge's nodes, which move with the level (no two levels agree: the finite engine's sequences over 0..r for
    # r >= 100 ran to the count-work limit)
    return dps, tol, max(dps + 5, int(mpmath.ceil(-mpmath.log10(floor * tol))))


def check_count_work(count: C.CountLaw, ctx, order: int, lengths, negligible, most: int, spent=None,
                     done: int | None = None) -> None:
    """Refuse, before they are made, count sequences of a summation to negligibility that the limit ``count-work``
    (or the ``most`` terms of the caller) would stop: ``lengths`` the doubling lengths n the caller may still try
    (:func:`~qderive.numeric.kernels.finite_wait.wait_count_sequences`), each :func:`sum_count_sequences` of ``order``;
    the caller stops at the first n whose tail P(K > n) is at most ``negligible`` (at least). ``spent``: the list
    [work spent, deepest level of the rule] that :func:`sum_count_sequences` updates (None: nothing yet, level 1);
    ``done`` the length made last (None: none).
    Only a quadrature law (lognormal) spends count work; other laws pass.

    The stop, bounded below: given the time B, K is Poisson(lambda B), and P(Poisson(m) > n) >= 1/2 for m >= n + 1
    (the median of a Poisson law of integer mean m is m), so P(K > n) >= P(B > (n + 1) / lambda) / 2 (the law's
    :meth:`survival`), and by Jensen's inequality E (K - n - 1)^+ >= lambda E (B - (n + 1) / lambda)^+ (its
    :meth:`stop_loss`) against E (K - 1)^+ <= lambda E B; a length where either exceeds 10 times ``negligible`` (the
    second relative to lambda E B) is passed (the caller's first two residual moments are not yet negligible). The
    work of each length: the nodes of the deepest level reached so far (at least level 1: each level is compared
    with the one before, and level 1 holds level 0's nodes) times n + 2 terms (:data:`MP_NODE_TERM` each in mpmath);
    before any is made a lower bound (measured 19 to 65 times below the work spent), after the first lengths an
    estimate from their level. The finite room's transform data at 62 digits for a lognormal service of scv 2 (what
    the atom of its 20-digit quantile asked for) need n near 2 x 10^6: refused by the limit after 72 s of CPU, now
    in 0.01 s."""
    if not isinstance(count, C.QuadratureCount):
        return
    lam = mpmath.mpf(count.lam.numerator) / count.lam.denominator
    work, level = (0, 1) if spent is None else (spent[0], max(spent[1], 1))
    weight = 1 if ctx.is_float64 else MP_NODE_TERM
    with mpmath.workdps(20):
        margin = 10 * mpmath.mpf(negligible)
        mean = mpmath.mpf(Fraction(count.law.moment(1)).numerator) / Fraction(count.law.moment(1)).denominator

    def may_stop(n):
        with mpmath.workdps(20):
            x = (n + 1) / lam
            return count.law.survival(x) / 2 <= margin and count.law.stop_loss(x) <= margin * mean

    if done is not None and may_stop(done):
        return
    for n in lengths:
        if n > most:
            raise NumericalError(f"the {count.law} time holds too many batch arrivals to sum the residual moments "
                                 f"(more than {most} terms: P(K > {most}) is above {mpmath.nstr(margin, 3)})")
        edge = _quadrature_rule(ctx, mpmath.mpf(n + 1) ** -(order + 1))[2]
        nodes = len(_quadrature(count.law, edge, level)[0])
        work += nodes * (n + 2) * weight
        _limits.check("count_work", work, f"the count sequences of the {count.law} time to a tail below "
                      f"{mpmath.nstr(negligible, 3)}: {nodes} quadrature nodes x {n + 2} terms"
                      f"{'' if ctx.is_float64 else ' in mpmath'} and the shorter lengths, estimated before they "
                      "are made")
        if may_stop(n):
            return


def _quadrature_sequences(law: C.QuadratureCount, n, ctx, floor, spent=None):
    # a Poisson mixture over quadrature nodes at the working precision, refined until two levels agree (above
    # ``floor`` times each sequence's largest entry, absolutely below it). The trapezoidal rule of level L + 1
    # holds the nodes of level L (the even ones) at half their weights, so each level adds only its new (odd)
    # nodes to half the previous sum: every node's Poisson sequences once.
    dps, tol, edge = _quadrature_rule(ctx, floor)
    lam = mpmath.mpf(law.lam.numerator) / law.lam.denominator
    previous, work = None, (0 if spent is None else spent[0])
    for level in range(12):
        xs, ws = _quadrature(law.law, edge, level)
        middle = (len(xs) - 1) // 2  # node j is t = (j - middle) h
        pick = range(len(xs)) if previous is None else range((middle + 1) % 2, len(xs), 2)
        # the cost of this level before it is paid: a Poisson sequence of about n terms per new node
        work += len(pick) * (n + 2) * (1 if ctx.is_float64 else MP_NODE_TERM)
        if spent is not None:
            spent[0] = work
        _limits.check("count_work", work, f"the count sequences of the {law.law} time over 0..{n}: "
                      f"{len(xs)} quadrature nodes x {n + 1} terms{'' if ctx.is_float64 else ' in mpmath'}"
                      f"{'' if spent is None else ', with the shorter lengths tried before'}")
        with mpmath.workdps(dps + 10):
            means = [float(lam * xs[j]) if ctx.is_float64 else +(lam * xs[j]) for j in pick]
        weights = [float(ws[j]) if ctx.is_float64 else +ws[j] for j in pick]
        seqs = _poisson_mixture(ctx, means, weights, n)
        if previous is not None:
            with ctx:
                seqs = tuple(ctx.flush(old / 2 + new) for old, new in zip(previous, seqs))
            if _agree(previous, seqs, tol, ctx, floor):
                if spent is not None and len(spent) > 1:
                    spent[1] = max(spent[1], level)
                return seqs
        previous = seqs
    raise NumericalError(f"{type(law.law).__name__}: the quadrature of the count probabilities did not converge")


#: float64 nodes of a quadrature mixture whose Poisson means lie in one octave [2^e, 2^(e+1)) share one table (the
#: kernel's numbers over points): at most this many nodes a table
_NODES_PER_TABLE = 256


def _poisson_mixture(ctx, means, weights, n):
    """(beta, tail, tail2) over 0..n of the Poisson mixture sum_j w_j Poisson(m_j) (:func:`~.kernels.counts.
    poisson_sequences`). float64: the nodes whose means lie in one octave of (0, 500] go through the kernel together
    as numbers over points (:class:`~.kernels.points.Float64Points`: the same terms e^{-m} m^k / k! per node, one
    table as long as the octave's largest mean needs, so each node's sequences agree with its own to rounding,
    about 1e-15 relative: sums of positive terms), then the weighted sum over the points; a mean above 500 (the
    kernel's far regime, by logarithms) or a table the kernel declines (ArithmeticError) node by node. The Poisson
    sequences of thousands of lognormal nodes one by one cost 5 s of CPU at r = 129. mpmath: node by node."""
    if not ctx.is_float64 or len(means) < 2:
        return _counts.poisson_sequences(ctx, means, weights, n)
    from .kernels.points import Float64Points

    x = np.asarray(means, dtype=float)
    w = np.asarray(weights, dtype=float)
    sums = [np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1)]
    alone = []
    inside = np.flatnonzero((x > 0) & (x <= 500))
    alone.extend(np.flatnonzero(~((x > 0) & (x <= 500))).tolist())
    octave = np.floor(np.log2(x[inside])).astype(int) if len(inside) else np.zeros(0, dtype=int)
    for e in np.unique(octave):
        members = inside[octave == e]
        for start in range(0, len(members), _NODES_PER_TABLE):
            group = members[start: start + _NODES_PER_TABLE]
            if len(group) == 1:
                alone.append(int(group[0]))
                continue
            try:
                got = _counts.poisson_sequences(Float64Points(len(group)), [x[group]], [w[group]], n)
            except ArithmeticError:  # the kernel declines this table (regimes, length): node by node
                alone.extend(group.tolist())
                continue
            for total, part in zip(sums, got):
                total += part.sum(axis=1)
    if alone:
        got = _counts.poisson_sequences(ctx, [float(x[j]) for j in alone], [float(w[j]) for j in alone], n)
        for total, part in zip(sums, got):
            total += part
    return tuple(ctx.flush(v) for v in sums)


def _agree(a, b, tol, ctx, floor=0) -> bool:
    """Every entry of the sequences ``a`` and ``b`` agrees to ``tol`` relative, or, below ``floor`` times the largest
    entry of its sequence, to ``tol`` times that (float64 subnormals are not compared)."""
    if ctx.is_float64:  # the same test on whole arrays
        for x, y in zip(a, b):
            x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
            scale = np.maximum(np.abs(x), np.abs(y))
            least = float(floor) * float(np.max(scale, initial=0.0)) if floor else 0.0
            if np.any((x != y) & (scale > 1e-290) & (np.abs(x - y) > tol * np.maximum(scale, least))):
                return False
        return True
    for x, y in zip(a, b):
        least = floor * max(max(abs(u) for u in x), max(abs(v) for v in y)) if floor else 0
        for u, v in zip(x, y):
            if u == v:
                continue
            scale = max(abs(u), abs(v))
            if ctx.is_float64 and scale <= 1e-290:
                continue
            if abs(u - v) > tol * max(scale, least):
                return False
    return True


# --------------------------------------------------------------------------------------
# Batch laws
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchVectors:
    """pmf, tail P(X > i), excess E (X - m)^+ over 0..n, l_1, and the structure the kernels exploit:
    ``geometric`` = (p, q) for geometric batches, ``support`` the sizes of a finite law."""

    pmf: np.ndarray
    tail: np.ndarray
    excess: np.ndarray
    l1: object
    geometric: tuple | None
    support: tuple | None

    def finish_tuple(self):
        return self.pmf, self.tail, self.excess, self.l1


@singledispatch
def batch_kernel(batch):
    """(kernel call giving (pmf, tail, excess), geometric (p, q) or None, support or None) of a batch law.

    A law with finitely many sizes (``support()``) needs nothing else; geometric and 1 + Poisson
    batches have their own vectors (closed-form tails and excesses).
    """
    support = batch.support() if isinstance(batch, BatchLaw) else None
    if support is None:
        raise ParameterError(f"no numeric values for the batch law {batch!r}: choose a concrete batch law")
    sizes = tuple(sorted(support))
    return KernelCall(_batches.finite_vectors, (sizes, tuple(support[s] for s in sizes))), None, sizes


@batch_kernel.register
def _(batch: Geometric):
    return KernelCall(_batches.geometric_vectors, (batch.p, batch.q)), (batch.p, batch.q), None


@batch_kernel.register
def _(batch: ShiftedPoisson):
    return KernelCall(_batches.shifted_poisson_vectors, (batch.nu, batch.mean)), None, None


def batch_vectors(batch, n: int, ctx, keep: bool = False) -> BatchVectors:
    """The :class:`BatchVectors` of a batch law over 0..n (call inside ``with ctx:``).

    ``keep``: the vectors are kept for the next call with the same law, n and context (read-only arrays:
    a point evaluated again, a load sweep or a figure grid build them once per law), as
    :func:`batch_blocks` keeps the columns."""
    if keep:
        return _kept(_VECTOR_CACHE, (batch, n, type(ctx), ctx.dps), lambda: _read_only(batch_vectors(batch, n, ctx)))
    call, geometric, support = batch_kernel(batch)
    if not is_concrete(batch):
        raise ParameterError(f"no numeric values for the batch law {batch!r}: choose a concrete batch law")
    pmf, tail, excess = run(call, ctx, n)
    geometric = None if geometric is None else tuple(ctx.num(v) for v in geometric)
    support = None if support is None else tuple(s for s in support if s <= n)
    return BatchVectors(pmf, tail, excess, ctx.num(batch.mean), geometric, support)


def _read_only(vectors: BatchVectors) -> BatchVectors:
    for v in (vectors.pmf, vectors.tail, vectors.excess):
        v.flags.writeable = False
    return vectors


def _kept(cache: dict, key, make, size: int = 8):
    """``cache[key]``, made by ``make()`` on a miss; the oldest of ``size`` entries goes first."""
    hit = cache.get(key)
    if hit is None:
        hit = make()
        if len(cache) >= size:
            cache.pop(next(iter(cache)))
        cache[key] = hit
    return hit


#: blocks of columns are reused across calls (a figure grid or a sweep evaluates one batch law at many loads,
#: for service and vacation alike; in mpmath building them dominates): n <= 400, 8 entries (float64: at most
#: 2.6 MB each); the blocks are read-only. The key names the context's class as well as its digits (a
#: Fraction context has no digits either, as float64)
_COLUMN_CACHE: dict = {}
#: batch vectors kept by ``batch_vectors(..., keep=True)`` (8 entries, read-only)
_VECTOR_CACHE: dict = {}


def batch_blocks(batch, n: int, ctx, vectors: BatchVectors | None = None, twin_numbers: bool = False):
    """The (k0, l^{(k)}, P(S_{k-1} <= . < S_k)) blocks of rows over 0..n
    (:func:`~qderive.numeric.kernels.batches.convolution_blocks`; ``twin_numbers``: as the context's twin's numbers
    where the kernel can, for a consumer that multiplies them there)."""
    twin_numbers = twin_numbers and hasattr(ctx, "twin")  # a context without a twin: one cache entry, as before

    def make():
        vec = vectors if vectors is not None and len(vectors.pmf) == n + 1 else batch_vectors(batch, n, ctx)
        return _batches.convolution_blocks(ctx, vec.pmf, vec.tail, n, vec.geometric, twin_numbers=twin_numbers)

    if n > 400:
        return make()
    return _kept(_COLUMN_CACHE, (batch, n, type(ctx), ctx.dps, twin_numbers), lambda: list(make()))


def batch_columns(batch, n: int, ctx, vectors: BatchVectors | None = None):
    """The (k, l^{(k)}, P(S_k > .)) columns over 0..n, one k at a time (the rows of :func:`batch_blocks`)."""
    return _batches.block_columns(ctx, batch_blocks(batch, n, ctx, vectors), n)


@dataclass(frozen=True)
class ArrivalCounts:
    """Customers arriving during one random time (``docs/theory/chapter2.md`` section 0), n = 0..N:
    ``a``, ``abar`` (P(more than n)), ``u`` (level times), ``ubar``, and the batch counts ``counts``."""

    a: np.ndarray
    abar: np.ndarray
    u: np.ndarray
    ubar: np.ndarray
    counts: tuple

    def as_tuple(self):
        return self.a, self.abar, self.u, self.ubar


def arrival_counts(time_law, batch, lam, n: int, ctx) -> ArrivalCounts:
    """a_n, abar_n, u_n, Ubar_n for n = 0..N of ``time_law`` with batches ``batch`` at batch rate ``lam``
    (exact); call inside ``with ctx:``. :func:`qderive.numeric.kernels.arrivals.arrival_counts`."""
    if n < 0:
        raise ValueError(f"n = {n}: must be >= 0")
    beta, tail, tail2 = count_sequences(time_law.count_law(lam), n, ctx)
    cols = batch_blocks(batch, n, ctx)
    a, abar, u, ubar = _arrivals.arrival_counts(ctx, beta, tail, tail2, cols, ctx.num(lam),
                                                ctx.num(time_law.moment(1)), n)
    return ArrivalCounts(a, abar, u, ubar, (beta, tail, tail2))


def digits_for(n: int) -> int:
    """Guard digits for recursions of length n: rounding errors add up to O(n eps), log10(n) digits."""
    return int(math.log10(max(n, 1))) + 1
