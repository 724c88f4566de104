"""M[X]/G/1 with composed start-of-busy-period blocks (close-down, vacations, N-policy, setup): the measures.

The structure is derived once (:mod:`qderive.symbolic.blocks.base`, (B1), (B2)); a model's blocks are run on
two interpreters of the primitives ``during``, ``interrupt``, ``wait``, ``repeat``:

* :class:`MomentPassage` -- the kernel :class:`~qderive.numeric.kernels.idle_moments.SeriesPassage` (shipped
  verbatim by codegen) with the hooks read from the model's laws: the factorial-moment series
  (:mod:`qderive.numeric.kernels.series`) of the number
  present at the first service start Y, of the expected time at each level of the idle period T(z), and the
  expected number of vacation ends (and of those that find the system empty) per idle period. Below the start
  threshold N it also carries the law itself (the renewal sums of ``wait`` and ``repeat`` need the probabilities
  of the levels 0..N-1, from the count sequences of :mod:`qderive.numeric.sequences`).
* the measures of :func:`measures` (:func:`~qderive.numeric.kernels.idle_moments.block_infinite_measures`): pi_0 = (1 - rho_bar) / E[Y] and Pi(z) by (B1); the number waiting
  P_q(z) = i(z) + b(z) / z with the idle part i(z) = (1 - rho_bar) T(z) / T(1) and the busy part
  b(z) = rho_bar S(z) E_B(z), S(z) = Pi(z) - pi_0 + pi_0 Y(z) the number present at a service start and
  E_B(z) = (1 - B*(s)) / (b_1 s), s = lambda (1 - X(z)), the customers arriving during the elapsed part of a
  service; q_0 of the thesis (the queue empty at a service completion or a vacation end) by counting both
  kinds of epochs per idle period.

* the response times (start threshold 1): :class:`GeneratingPassage`, the primitives on generating functions
  (shared with the derivation's PGF interpreter), run at the inversion's nodes by :class:`TransformPassage` gives
  Y(s) and the residual factor V_r(s) = lambda l_1 (1 - Y(s)) / (E[Y] s) of (WS), W(s) = W_b(s) J(s) V_r(s)
  (:func:`response_laws`); the moments W = W_none + R (:func:`wait_moments`, :func:`residual_moments`). With a
  start threshold N > 1 (a customer then waits for later batches) the transform (WN) and its moments of
  :mod:`qderive.numeric.engines.blocks_threshold` replace them.

Today's rules (N = 1, no setup, no close-down) are special cases: the tests compare them with the thesis's closed
forms (:class:`~qderive.numeric.engines.vacation.InfiniteEngine`) to 1e-30 at 40 digits.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import factorial

import numpy as np

from ...symbolic.blocks import blocks_of, passage
from ...symbolic.capabilities import declare
from ..kernels.idle_moments import block_infinite_measures
from ..kernels.idle_passage import renewal
from ..sequences import arrival_counts, batch_vectors
from .block_laws import bare_model, lst_at_rate, lst_values
from .block_moments import ORDER, MomentPassage, largest_threshold, model_blocks, passage_moments
from .generating_passage import GeneratingPassage

__all__ = ["MomentPassage", "VectorPassage", "GeneratingPassage", "TransformPassage", "renewal", "measures",
           "passage_moments", "waiting_law", "wait_moments", "residual_transform", "residual_atom", "response_laws",
           "tails_refusal", "infinite_response_laws", "ORDER"]

@dataclass(frozen=True)
class _Batches:
    """The queue seen batch by batch: the same batch rate and service, every batch of size 1 (what the moment
    interpreter reads: ``rate``, ``batch``)."""

    rate: object
    batch: object
    service: object


def residual_moments(model, ctx, k: int, blocks=None) -> list:
    """E[R], ..., E[R^k] of the residual R of the idle period, W = W_b + J + R (W(s) = W_b(s) J(s) V_r(s),
    V_r(s) = lambda l_1 (1 - Y(s)) / (E[Y] s), start threshold 1; Fuhrmann and Cooper 1985). Every block depends on
    z through X(z) only, Y(z) = Y_b(X(z)) with Y_b the number of *batches* present at the first service start, so
    V_r(s) = (1 - Y_b(u)) / (E[Y_b] (1 - u)), u = 1 - s / lambda: R is the sum of K exponential(lambda) times, K the
    stationary excess of Y_b (P(K = j) = P(Y_b > j) / E[Y_b]), and E[R^j] = E[(K)_j] / lambda^j
    = E[(Y_b)_{j+1}] / ((j + 1) E[Y_b] lambda^j). Y_b's factorial moments: the moment interpreter run on the blocks
    with batches of size 1 at the same batch rate."""
    from ...symbolic.batches import Constant

    Y, op = passage_moments(_Batches(model.rate, Constant(1), model.service), ctx, model_blocks(model, blocks),
                            order=k + 1)
    return [Y[j + 1] * factorial(j) / (Y[1] * op.lam**j) for j in range(1, k + 1)]


def wait_moments(model, ctx, k: int, blocks=None) -> list:
    """E[W], ..., E[W^k] of a random customer (FCFS, random order in its batch); start threshold 1:
    W = W_none + R with W_none (LST W_b(s) J(s)) the wait in the same queue without vacations, setup or close-down
    (the thesis's closed-form moments, :func:`qderive.numeric.engines.vacation_wait.wait_moment_values`) and R
    independent of it (:func:`residual_moments`): E[W^n] = sum_i binom(n, i) E[W_none^i] E[R^(n-i)].

    (The distributional form of Little's law with the batchmates behind as an independent factor,
    Pi(z) = W*(lambda (1 - X(z))) A(z) R(z), holds only for geometric batches: the number behind a customer and
    the services ahead of it in its batch are dependent otherwise, and E[W^2] came out 2.2778 instead of
    2.4753 = E[D^2] + 2 E[D] E[J] + E[J^2] for batches of 1 or 2.) Under the N-policy (a threshold N > 1 among
    the blocks) a customer waits for later batches and R is not independent of the rest: the moments are then the
    Taylor coefficients of the transform of :mod:`.blocks_threshold` (:func:`~.blocks_threshold.threshold_moments`,
    formal series at 0: a lognormal law too)."""
    from math import comb

    from .vacation_wait import wait_moment_values

    if largest_threshold(model_blocks(model, blocks)) > 1:
        from .blocks_threshold import threshold_moments

        return threshold_moments(model, ctx, k, _mean_of(model, blocks), blocks)
    bare = bare_model(model)
    none = wait_moment_values(bare, "wait")(k, None if ctx.is_float64 else ctx.dps)
    w = [ctx.num(1)] + [ctx.num(v) if isinstance(v, (int, Fraction)) else +v for v in none]
    r = [ctx.num(1)] + residual_moments(model, ctx, k, blocks)
    return [sum((comb(n, i) * w[i] * r[n - i] for i in range(n + 1)), ctx.num(0)) for n in range(1, k + 1)]


def measures(model, ctx, blocks=None, interpreter=None) -> dict:
    """The measures of the infinite room (the keys of ``qderive eval vacation-infinite``) from the blocks of
    ``model`` or from ``blocks`` (a rule of one's own composed of the primitives; module docstring); with a
    symbolic ``interpreter`` and context, the same formulas in symbols (the derivation's)."""
    Y, op = passage_moments(model, ctx, blocks, interpreter)
    return block_infinite_measures(ctx, op, Y, model.service, ctx.num(model.rho_bar), ctx.num(1 - model.rho_bar),
                                   ctx.num(model.service.moment(1)), ctx.num(model.batch.mean), ORDER)


class VectorPassage:
    """The interpreter of the primitives on count vectors over the levels 0..n-1 (the law itself): the first-service
    law y, the expected time T_j at each level j during one idle period, in ``ctx`` (context vectors; positive sums
    throughout; what lies beyond level n - 1 is dropped, the caller takes n large enough)."""

    def __init__(self, model, ctx, n: int):
        self.model, self.ctx, self.n = model, ctx, n
        self.lam = ctx.num(model.rate)
        self.x = batch_vectors(model.batch, n, ctx).pmf[:n]
        self.times = ctx.zeros(n)
        self.served = ctx.zeros(n)
        self._counts: dict = {}

    def counts(self, law):
        """(a, u, P(A > 0)) over 0..n-1 of the customers A arriving during one period of ``law``."""
        if law not in self._counts:
            c = arrival_counts(law, self.model.batch, self.model.rate, self.n, self.ctx)
            self._counts[law] = (c.a[: self.n], c.u[: self.n], c.abar[0])
        return self._counts[law]

    def conv(self, v, w):
        return np.convolve(v, w)[: self.n]

    def _exit(self, v, n, visits, jumps):
        """The law after the levels below ``n`` left: what stays at n.. plus the walk's arrivals there."""
        out = self.conv(np.concatenate([visits, self.ctx.zeros(self.n - n)]), jumps)
        out[:n] = self.ctx.zeros(n)
        out[n:] = out[n:] + v[n:]
        return out

    def start(self):
        v = self.ctx.zeros(self.n)
        v[0] = self.ctx.num(1)
        return v

    def during(self, v, law, vacation=False):
        a, u, _ = self.counts(law)
        self.times = self.times + self.conv(v, u)
        return self.conv(v, a)

    def interrupt(self, v, law):
        a, u, busy = self.counts(law)
        self.times = self.times + v * u[0]
        self.served = self.served + self.conv(v, self.x) * busy
        return v * a[0]

    def wait(self, v, threshold):
        n = min(threshold, self.n)
        visits = renewal(self.ctx, v[:n], self.x)
        self.times[:n] = self.times[:n] + visits / self.lam
        return self._exit(v, n, visits, self.x)

    def repeat(self, v, law, threshold, most=None):
        a, u, busy = self.counts(law)
        n = min(threshold, self.n)
        if most is None:
            visits = renewal(self.ctx, v[:n], a, busy)
            self.times = self.times + self.conv(np.concatenate([visits, self.ctx.zeros(self.n - n)]), u)
            return self._exit(v, n, visits, a)
        g = np.concatenate([v[:n], self.ctx.zeros(self.n - n)])
        rest = np.concatenate([self.ctx.zeros(n), v[n:]])
        for _ in range(most):
            self.times = self.times + self.conv(g, u)
            moved = self.conv(g, a)
            rest[n:] = rest[n:] + moved[n:]
            g = np.concatenate([moved[:n], self.ctx.zeros(self.n - n)])
        return g + rest

    def finish(self, v):
        return v + self.served


def waiting_law(model, ctx, n: int, mean_y=None, blocks=None) -> list:
    """p_0..p_{n-1}, the time-stationary law of the number waiting, from vectors over 2n + 2 levels (module
    docstring): the departure chain pi by the positive recursion of (B1),
    pi_{j+1} a_0 = pi_0 P(Y + A > j + 1) + sum_{i=1}^{j} pi_i P(A > j - i + 1), pi_0 = (1 - rho_bar) / E[Y]; the
    busy part b = rho_bar (s * e) with s_j = pi_j + pi_0 y_j (j >= 1), s_0 = pi_0 y_0, e_m = u^B_m / b_1; the idle
    part i_j = (1 - rho_bar) T_j / E[I], E[I] = E[Y] / (lambda l_1); p_j = i_j + b_{j+1} (the one in service not
    counted). ``mean_y``: E[Y] from the moment series (else from the moment passage)."""
    size = 2 * n + 2
    blocks = model_blocks(model, blocks)
    op = VectorPassage(model, ctx, size)
    y = passage(blocks, op)
    if mean_y is None:
        mean_y = passage_moments(model, ctx, blocks)[0][1]
    gap, rho = ctx.num(1 - model.rho_bar), ctx.num(model.rho_bar)
    c = arrival_counts(model.service, model.batch, model.rate, size, ctx)
    a, abar = c.a[:size], c.abar[:size]
    ybar = ctx.zeros(size)  # P(Y > j) by backward sums (the mass beyond the vectors is dropped)
    for j in range(size - 2, -1, -1):
        ybar[j] = ybar[j + 1] + y[j + 1]
    over = np.convolve(y, abar)[1: size + 1] + np.concatenate([ybar[1:], ctx.zeros(1)])  # P(Y + A > j + 1)
    pi = ctx.zeros(size)
    pi[0] = gap / mean_y
    for j in range(size - 1):
        rest = np.dot(pi[1: j + 1], abar[j: 0: -1]) if j else pi[0] * 0
        pi[j + 1] = (pi[0] * over[j] + rest) / a[0]
    s = pi + y * pi[0]
    s[0] = pi[0] * y[0]
    e = c.u[:size] / ctx.num(model.service.moment(1))
    busy = op.conv(s, e) * rho
    idle_time = mean_y / (op.lam * ctx.num(model.batch.mean))  # E[I] = E[Y] / (lambda l_1)
    return list(op.times[:n] * (gap / idle_time) + busy[1: n + 1])


class TransformPassage(GeneratingPassage):
    """The primitives on transforms: Y(s), the first-service law in the form W(s) needs, Y(z) with
    X(z) = 1 - s / lambda, at the context array ``s`` (``limit``: s -> oo, every law's transform 0 there (the
    laws have no atom at 0) and ``X`` given: the affine part of Y that gives P(R = 0), :func:`residual_atom`)."""

    def __init__(self, model, ctx, s=None, X=None):
        self.ctx, self.s = ctx, s
        self.lam = ctx.num(model.rate)
        self.X = 1 - s / self.lam if X is None else X
        self._values: dict = {}

    def arrivals(self, law):
        if self.s is None:
            return 0
        if law not in self._values:
            self._values[law] = lst_values(law, self.s, self.ctx)
        return self._values[law]

    def idle(self, law):
        key = ("rate", law)
        if key not in self._values:
            self._values[key] = lst_at_rate(law, self.lam, self.ctx)
        return self._values[key]


def _mean_y(model, ctx):
    return passage_moments(model, ctx, order=1)[0][1]


def _mean_of(model, blocks=None):
    """ctx -> E[Y] of ``model``'s blocks (or ``blocks``) by the moment interpreter."""
    return lambda ctx: passage_moments(model, ctx, blocks, order=1)[0][1]


def residual_transform(model, ctx, s):
    """V_r(s) = lambda l_1 (1 - Y(s)) / (E[Y] s) at the context array ``s`` (start threshold 1): the factor of the
    wait's transform that the idle period adds, W(s) = W_b(s) J(s) V_r(s) (Fuhrmann and Cooper's decomposition of
    (B1)-(B2), the step (WS) of the derivation), Y(s) by :class:`TransformPassage` from the model's blocks and E[Y]
    by the moment interpreter."""
    Y = passage(blocks_of(model), TransformPassage(model, ctx, s))
    scale = ctx.num(model.rate) * ctx.num(model.batch.mean) / _mean_y(model, ctx)
    return (1 - Y) / s * scale


def residual_atom(model, ctx):
    """P(R = 0) = V_r(oo) = l_1 b / E[Y], b the coefficient of X in Y(s) as s -> oo (the laws' transforms vanish,
    Y -> a + b X, X = 1 - s / lambda): Y run at X = 1 and X = 0 (single vacations: c_0 / (lambda f_1 + c_0), the
    thesis's atom of the residual vacation)."""
    blocks = blocks_of(model)
    one = passage(blocks, TransformPassage(model, ctx, X=ctx.num(1)))
    zero = passage(blocks, TransformPassage(model, ctx, X=ctx.num(0)))
    return ctx.num(model.batch.mean) * (one - zero) / _mean_y(model, ctx)


def kinked_law(model, infinite: bool = False):
    """(field, reason) of the first law among the service and the blocks' laws whose transform at s enters the wait
    (:func:`~.blocks_shifts.entering_laws`: not the close-down, which the first batch ends, so that nobody waits
    through it: it enters through its count probabilities alone, in either room) and that the inversion cannot use
    (an exp(-s D) factor: constant, uniform, empirical; or no closed form), else None. ``infinite`` (the infinite
    room's response laws): with start threshold 1 the shifted sums of :mod:`.blocks_shifts` cover a setup or
    vacation law that is a constant or a few atoms (a smooth service)."""
    from .vacation_wait import smooth_law

    if infinite:
        from .blocks_shifts import entering_laws, shift_plan, threshold_shift_plan

        plan, why = (shift_plan if model.start_threshold == 1 else threshold_shift_plan)(model)
        if plan is not None:
            return None
        if why is not None:
            return why
        for field, law in entering_laws(model):
            if smooth_law(law):
                continue
            name = field.replace("_", "-")
            if field != "service":
                return field, (f"the {name} time {law} has kinks but no atoms: transform inversion cannot give the "
                               "tails with it, and no shifted sum of the package covers it (the moments are computed)")
            return field, (f"the {name} time {law} has kinks or no closed-form transform: transform inversion cannot "
                           "give the tails to the requested digits with a setup, a close-down or a start threshold "
                           "N > 1 (the moments are computed)")
        return None
    from .blocks_shifts import entering_laws

    for field, law in entering_laws(model):
        if not smooth_law(law):
            name = field.replace("_", "-")
            return field, (f"the {name} time {law} has kinks or no closed-form transform: transform inversion cannot "
                           f"give the tails to the requested digits with a setup, a close-down or a start threshold "
                           f"N > 1 (the moments are computed)")
    return None


def tails_refusal(model, asked):
    """The refusal of the tails and quantiles of a model with blocks (any start threshold): a law with kinks among
    the service and the blocks' laws (:func:`kinked_law`)."""
    from ...symbolic.capabilities import Refusal
    from .vacation_wait import TAIL_MEASURES

    wanted = TAIL_MEASURES & frozenset(asked)
    if not wanted:
        return None
    kinked = kinked_law(model, infinite=True)
    return None if kinked is None else Refusal(kinked[0], kinked[1], min(wanted))


def threshold_check(model, asked, derivatives: bool = False):
    """The refusal of the response laws with a start threshold N > 1 (:mod:`.blocks_threshold`): the moments and the
    tails need the derivatives of every law's transform (a law with only a numeric transform, the lognormal, is
    refused, naming its field, unless ``derivatives``: the infinite room takes them by the law's own rule on its
    size-biased laws, :func:`~.block_laws.lst_taylor`)."""
    from ...symbolic.capabilities import Refusal
    from .blocks_threshold import threshold_refusal
    from .vacation_wait import TAIL_MEASURES

    wanted = (TAIL_MEASURES | {"wait_moments", "sojourn_moments"}) & frozenset(asked)
    if model.start_threshold == 1 or not wanted:
        return None
    refused = threshold_refusal(model, derivatives)
    return None if refused is None else Refusal(refused[0], refused[1], min(wanted))


def _infinite_check(model, asked):
    """The refusal of :func:`infinite_response_laws`: with blocks, the start threshold's (:func:`threshold_check`)
    then the tails' (:func:`tails_refusal`), else that of the queue's own response laws."""
    from .vacation_wait import response_laws as own

    if model.blocks:
        return threshold_check(model, asked, derivatives=True) or tails_refusal(model, asked)
    return own.supports(model, asked)


@declare(check=_infinite_check)
def infinite_response_laws(model) -> dict:
    """The response laws of ``vacation-infinite`` (the model's ``response`` consumer): :func:`response_laws` with a
    start threshold N > 1, a setup or a close-down, else
    :func:`qderive.numeric.engines.vacation_wait.response_laws`; asks the right one's refusal."""
    from .vacation_wait import response_laws as own

    return response_laws(model) if model.blocks else own(model)


def response_laws(model) -> dict:
    """``{"wait": ResponseLaw, "sojourn": ResponseLaw}`` of a model with blocks: their moments by
    :func:`wait_moments` (the sojourn T = W + B, B independent of W: E[T^k] = sum_i binom(k, i) E[W^i] b_{k-i}),
    computed at D + 20 digits (float64: 35) and rounded; the transforms (smooth laws), inverted under the precision
    policy of :mod:`qderive.numeric.response`: with start threshold 1, W(s) = W_b(s) J(s) V_r(s) and
    T(s) = W(s) B*(s), the model without blocks' transform (:mod:`~qderive.numeric.engines.vacation_wait`, compiled
    once) times :func:`residual_transform` from the blocks, P(W = 0) = P(W_b J = 0) P(R = 0) (:func:`residual_atom`);
    with N > 1 the transform of :mod:`.blocks_threshold` (the serving and idle parts of what the tagged batch finds)
    and its P(W = 0); P(T = 0) = 0."""
    from math import comb

    from ...symbolic.errors import ParameterError
    from ..backend import mp_context
    from ..response import ResponseLaw
    from . import vacation_wait as VW

    def values(kind):
        def moment_values(k, digits):
            ctx = mp_context((digits or 15) + 20)
            with ctx:
                w = [ctx.num(1)] + wait_moments(model, ctx, k)
                if kind == "sojourn":
                    b = [ctx.num(model.service.moment(j)) for j in range(k + 1)]
                    w = [sum((comb(n, i) * w[i] * b[n - i] for i in range(n + 1)), ctx.num(0)) for n in range(k + 1)]
                return [float(v) for v in w[1:]] if digits is None else [+v for v in w[1:]]
        return moment_values

    def no_transform(*_):
        raise ParameterError(kinked[1])

    kinked = kinked_law(model, infinite=True)
    if kinked is not None:
        return {kind: ResponseLaw(kind, no_transform, no_transform, values(kind), False, kinked[1])
                for kind in ("wait", "sojourn")}
    from .blocks_shifts import density_laws, density_shift_atom, density_shift_laws, shift_atom, shift_laws, shift_plan

    if shift_plan(model)[0] is not None:  # a constant or a few atoms: the shifted sums (SH) give the tails
        bare = bare_model(model)
        own = VW.response_laws(bare)
        why = "the wait's transform has exp(-s D) factors (a setup or vacation law with atoms)"
        if density_laws(model):  # a uniform law: its shifts have 1 / s coefficients, the Laurent parts (SU)
            why = "the wait's transform has exp(-s D) factors (a constant, empirical or uniform setup or vacation)"
            atom, shifted = (lambda ctx: density_shift_atom(model, ctx)), density_shift_laws
        else:
            atom, shifted = (lambda ctx: own["wait"].p_zero(ctx) * shift_atom(model, ctx)), shift_laws

        def shifted_transform(kind):
            def make(ctx):
                base = own[kind].transform(ctx)
                return lambda s: base(s) * residual_transform(model, ctx, s)
            return make

        return {"wait": ResponseLaw("wait", shifted_transform("wait"), atom, values("wait"), False, why,
                                    shifted(model, "wait")),
                "sojourn": ResponseLaw("sojourn", shifted_transform("sojourn"), own["sojourn"].p_zero,
                                       values("sojourn"), False, why, shifted(model, "sojourn"))}
    if model.start_threshold != 1:
        from .blocks_shifts import threshold_shift_laws, threshold_shift_plan
        from .blocks_threshold import threshold_atom, threshold_transform

        mean_y = _mean_of(model)

        def later(kind):
            def make(ctx):
                return lambda s: threshold_transform(model, ctx, s, mean_y, kind == "sojourn")
            return make

        # a constant or few-atom setup or single vacation: the shifted parts (SN) give the tails
        shifted = threshold_shift_plan(model)[0] is not None
        why = "the wait's transform has exp(-s D) factors (a setup or vacation law with atoms)" if shifted else ""

        def own(kind):
            return threshold_shift_laws(model, kind) if shifted else None

        return {"wait": ResponseLaw("wait", later("wait"), lambda ctx: threshold_atom(model, ctx, mean_y),
                                    values("wait"), not shifted, why, own("wait")),
                "sojourn": ResponseLaw("sojourn", later("sojourn"), lambda ctx: ctx.num(0), values("sojourn"),
                                       not shifted, why, own("sojourn"))}
    bare = bare_model(model)
    own = VW.response_laws(bare)

    def transform(kind):
        def make(ctx):
            base = own[kind].transform(ctx)

            def F(s):
                return base(s) * residual_transform(model, ctx, s)
            return F
        return make

    def wait_zero(ctx):
        return own["wait"].p_zero(ctx) * residual_atom(model, ctx)

    return {"wait": ResponseLaw("wait", transform("wait"), wait_zero, values("wait")),
            "sojourn": ResponseLaw("sojourn", transform("sojourn"), own["sojourn"].p_zero, values("sojourn"))}
