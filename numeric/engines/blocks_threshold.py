"""The wait of a random customer with composed blocks and a start threshold N > 1: its transform and moments.

With N > 1 a customer who arrives while the server is not serving waits for later batches (the threshold counts
them), so the decomposition W = W_none + R of :mod:`qderive.numeric.engines.blocks` (which assumes the wait depends
on the past only) does not hold. Here the wait is split by what the tagged customer's batch finds (PASTA):

* **the server serving** (time fraction rho_bar): FCFS, it waits for the work present U and its batchmates ahead J.
  Over a busy period started by Y customers the workload is the M[X]/G/1 one, so by the Kella-Whitt martingale of
  the workload process (rate -1 plus compound-Poisson jumps of exponent phi(s) = s - lambda (1 - X(B*(s)))),
  E[int_busy e^{-s U(t)} dt] = (1 - Y(B*(s))) / phi(s), and per unit time, the cycle lasting
  E[C] = E[Y] / (lambda l_1 (1 - rho_bar))::

      E[e^{-s U}; serving] = lambda l_1 (1 - rho_bar) (1 - Y(B*(s))) / (E[Y] phi(s));

* **the server idle** (close-down, vacation, waiting, setup): it waits for the rest of the idle passage, which
  depends on the later arrivals through the threshold, then for the services of the n present before it, then of
  its batchmates ahead: per batch of size k, sum_{i<k} B*(s)^i.

The idle passage is run once more through the blocks' primitives (:func:`qderive.symbolic.blocks.base.passage`), by
:class:`ThresholdTransform`, on power series in the count variable w truncated at w^N (the count-state matrices of
the primitives: upper-triangular Toeplitz matrices, which commute) together with each generating function's value at
w = 1 (the mass at N and beyond, for which only "threshold met" matters). Two sub-laws are carried:

* ``pre``: the count before the tagged customer's arrival, each customer weighted by B*(s) (its service is ahead);
  a period of law L multiplies it by L*(lambda - lambda X(B* w)) (coefficients a_k B*^k);
* ``post``: after the tagged arrival, weighted by e^{-s t} over the time t since then; a period multiplies it by
  L*(s + lambda - lambda X(w)) = E[w^{A(L)} e^{-s L}], the joint transform of the arrivals and the period's length.

The tagged batch arrives at rate lambda in the middle of a period; E[int_0^L e^{-p u} e^{-q (L - u)} du] =
(L*(p) - L*(q)) / (q - p) (the divided difference of L*, p and q the two exponents above) carries ``pre`` into
``post``, multiplied by kappa(w) = sum_k x_k w^k sum_{i<k} B*^i (the batch's size and the tagged customer's
position; kappa(1) = (1 - X(B*)) / (1 - B*) = l_1 J(s)). The primitives::

    during(L):       post <- post Apost_L + kappa pre DD_L,   pre <- pre Apre_L
    interrupt(L):    a batch in the close-down (probability 1 - c, c = L*(lambda)) starts service:
                     Y += pre X(B*) (1 - c); the tagged customer then waits only for those ahead:
                     idle += pre (1 - c) kappa(1) / lambda
    wait(N):         V = pre / (1 - X(B* w)), R = post + kappa V / lambda, U = R / (1 - theta X(w)), theta = lambda /
                     (lambda + s);  pre <- pre + V (X(B*) - 1),  post <- R - (1 - theta) U   (at w = 1: all >= N)
    repeat(L, N):    V = pre / (1 - Apre_L), E = kappa V DD_L, U = (post + E) / (1 - Apost_L);
                     pre <- pre + V (Apre_L - 1),  post <- post + E + U (L*(s) - 1)

(The low parts below N are the series, the values at w = 1 the masses; after a threshold stage everything is at
N or beyond). At the end, Y(B*(s)) = pre + the close-down's part and the idle part is post + the close-down's, and

    W(s) = lambda (1 - rho_bar) / E[Y] * [ kappa(1) (1 - Y(B*(s))) / phi(s) + idle(s) ],   T(s) = W(s) B*(s).

With N = 1 this is W_b(s) J(s) V_r(s) (the tests compare the two), the M[X]/G/1 wait being the case Y = X. The
moments E[W^j] are the Taylor coefficients of W(s) at 0, by formal power series in s (:func:`threshold_moments`:
the same interpreter over :mod:`qderive.numeric.kernels.formal_series`, a law entering by its moments and its Taylor
coefficients at lambda, so a lognormal too). P(W = 0) is W(s) at s -> oo (every transform vanishes there: the laws
have no atom at 0): only a batch that starts service at once (the close-down, a last ``wait`` met by the batch
itself) leaves its first member waiting 0.

Sources: the decomposition by what an arrival finds, Takagi 1991 (vol. 1, sec. 2.4-2.5: the N-policy's and the setup
time's waits); the workload over a busy period, Kella and Whitt 1992; the N-policy's mean wait for single arrivals,
Yadin and Naor 1963, E[W] = E[W_{M/G/1}] + (N - 1) / (2 lambda) (Takagi 1991, vol. 1, sec. 2.5, with no setup).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ...symbolic.blocks import blocks_of, passage
from ..kernels.formal_series import Formal
from ..kernels.threshold_passage import ThresholdSeries, threshold_wait
from ..sequences import arrival_counts, batch_vectors
from .block_laws import batch_values, lst_taylor, lst_values, numeric_counts

__all__ = ["ThresholdTransform", "threshold_transform", "threshold_atom", "threshold_moments",
           "threshold_refusal", "threshold_excess", "threshold_excess_moments", "shift_laurent"]


class ThresholdTransform(ThresholdSeries):
    """The interpreter of the primitives for the wait with a start threshold (module docstring) at the context array
    ``s`` of the inversion's nodes (``s`` None: the limit s -> oo, which gives P(W = 0); ``s`` a
    :class:`~qderive.numeric.kernels.formal_series.Formal`, the variable to O(s^p), in an mpmath context: the formal
    series at 0, :func:`threshold_moments`): the kernel
    :class:`~qderive.numeric.kernels.threshold_passage.ThresholdSeries` (shipped by the generated code) with the
    model's laws as its hooks.

    Over formal series the laws enter by their series at the point c = z(0) of each argument z: at c = 0 (B*(s),
    L*(s), L*(lambda (1 - X(B*(s))))) the exact moments, L*(z) = sum_j (-1)^j m_j z^j / j!; at c = lambda (the
    count-type factors) the Taylor coefficients L*^(j)(lambda) / j! (:func:`~.block_laws.lst_taylor`); X(B*(s)) from
    the batch's factorial moments. The constant terms B*(0) = X(1) = 1 are exact, so are the analytic zeros of
    1 - B*(s), phi(s) and the divided differences' denominators."""

    def __init__(self, model, ctx, s, top: int):
        self.model = model
        self._taylor: dict = {}
        lam = ctx.num(model.rate)
        batch = model.batch
        with ctx:  # x_0 = 0; an irrational pmf too (Poisson sizes), at the context's precision
            x = list(batch_vectors(batch, top, ctx).pmf[:top])
        if isinstance(s, Formal):
            from math import factorial

            self.ctx = ctx
            one = s * 0 + 1
            B = self.law_transform(model.service, s)
            # X(B) = sum_j E[(X)_j] / j! (B - 1)^j, B - 1 = O(s) with an exact zero constant term
            XB = _compose([ctx.num(1)] + [ctx.num(batch.factorial_moment(j)) / factorial(j)
                                          for j in range(1, s.p + 1)], B - 1)
            super().__init__(ctx, s, top, lam, x, B, XB, one)
            return
        shape = np.asarray(s if s is not None else [0]).shape
        one = np.ones(shape, dtype=complex if ctx.is_float64 else object)
        if not ctx.is_float64:
            one = one * ctx.num(1)
        zero = one * 0
        B = zero if s is None else lst_values(model.service, s, ctx)
        XB = zero if s is None else batch_values(batch, B, ctx)
        super().__init__(ctx, s, top, lam, x, B, XB, one)

    def law_counts(self, law):
        """a_0..a_{N-1}, the probabilities of k customers arriving during one period of ``law``: the count sequences
        (:func:`~qderive.numeric.sequences.arrival_counts`), or for a law with only a numeric transform (the
        lognormal) in mpmath :func:`~.block_laws.numeric_counts` (its derivatives at lambda: no count sequences)."""
        return self._counts(law, self.top)

    def _counts(self, law, n: int) -> list:
        from ..backend import MPContext
        from .vacation_wait import numeric_transform

        ctx = self.ctx
        if not (numeric_transform(law) and isinstance(ctx, MPContext)):
            return list(arrival_counts(law, self.model.batch, self.model.rate, n, ctx).a[:n])
        return numeric_counts(law, self.model.batch, self.model.rate, n, ctx)[0]

    def law_transform(self, law, z):
        """L*(z) at the context array z, or for a formal series z: sum_j L*^(j)(c) / j! (z - c)^j, c = z(0)
        (:meth:`_at`)."""
        if not isinstance(z, Formal):
            return lst_values(law, z, self.ctx)
        c = z.coefficient(0)
        return _compose(self._at(law, c, z.p + 1), z - c)

    def law_taylor(self, law, z, n):
        """[L*^(j)(z) / j! for j < n] at the context array z, or for a formal series z near c = z(0):
        sum_i binom(j + i, i) t_{j+i} (z - c)^i, t the Taylor coefficients at c (:meth:`_at`)."""
        if not isinstance(z, Formal):
            return lst_taylor(law, z, self.ctx, n)
        from math import comb

        c = z.coefficient(0)
        t = self._at(law, c, n + z.p + 1)
        d = z - c
        return [_compose([t[j + i] * comb(j + i, i) for i in range(z.p + 1)], d) for j in range(n)]

    def _at(self, law, c, n: int) -> list:
        """L*^(j)(c) / j!, j < n, as context numbers: the exact moments at c = 0 (Feller 1971, vol. 2, sec. XIII.2:
        L*^(j)(0+) = (-1)^j m_j for a law with a finite j-th moment), the law's Taylor coefficients at c = lambda
        (exactly for a phase-type law, :func:`~.block_laws.phase_type_taylor`; else :func:`~.block_laws.lst_taylor`:
        the atoms' sum, the size-biased lognormal, the compiled derivatives; kept per law)."""
        from math import factorial

        from .block_laws import phase_type_taylor

        ctx = self.ctx
        if c == 0:
            return [ctx.num(law.moment(j)) * (-1) ** j / factorial(j) if j else ctx.num(1) for j in range(n)]
        if c != self.lam:
            raise NotImplementedError("a law's series at a point other than 0 and lambda")
        kept = self._taylor.get(law)
        if kept is None or len(kept) < n:
            exact = phase_type_taylor(law, Fraction(self.model.rate), n)
            if exact is not None:
                kept = [ctx.num(v) for v in exact]
            else:
                kept = [v[0].real for v in lst_taylor(law, np.array([c], dtype=object), ctx, n)]
            self._taylor[law] = kept
        return kept[:n]


def _compose(f, d):
    """sum_j f_j d^j for the formal series d with d(0) = 0 (its constant term exactly zero), to d's precision."""
    out = d * 0 + f[0]
    power = d * 0 + 1
    for j in range(1, min(len(f), d.p + 1)):
        power = power * d
        if power.v >= d.p:
            break
        out = out + power * f[j]
    return out


def _blocks(model, blocks):
    return blocks_of(model) if blocks is None else tuple(blocks)


def largest_threshold(blocks) -> int:
    return max([getattr(b, "threshold", 1) for b in blocks] + [1])


def threshold_transform(model, ctx, s, mean_y, sojourn: bool = False, blocks=None):
    """W(s) (``sojourn``: T(s) = W(s) B*(s)) at the context array ``s`` (module docstring) for ``model``'s blocks (or
    ``blocks``); ``mean_y(ctx)`` gives E[Y] (the moment interpreter of :mod:`qderive.numeric.engines.blocks`)."""
    blocks = _blocks(model, blocks)
    op = ThresholdTransform(model, ctx, s, largest_threshold(blocks))
    y, idle = passage(blocks, op)
    w = threshold_wait(op, y, idle, ctx.num(model.rate), ctx.num(1 - model.rho_bar), mean_y(ctx))
    return w * op.B if sojourn else w


def threshold_atom(model, ctx, mean_y, blocks=None):
    """P(W = 0) = W(oo) (module docstring): the idle part of the interpreter at the limit."""
    blocks = _blocks(model, blocks)
    op = ThresholdTransform(model, ctx, None, largest_threshold(blocks))
    _, idle = passage(blocks, op)
    value = idle * (ctx.num(model.rate) * ctx.num(1 - model.rho_bar) / mean_y(ctx))
    return value[0].real


def singularity_scale(model, blocks) -> Fraction:
    """A lower bound, heuristic but generous, of the distance from 0 to the nearest singularity of W(s): the tail's
    decay rate is about 2 (1 - rho_bar) / (lambda E[S^2]) for S a batch's work (Kingman's heavy-traffic rate), the
    laws' poles are at least 1 / (their mean) away; (1 - rho_bar)^2 / (u (1 + l_2 / l_1)) with u the largest mean
    time (service, blocks' laws, 1 / lambda) lies below both."""
    means = [Fraction(model.service.moment(1)), 1 / Fraction(model.rate)]
    means += [Fraction(law.moment(1)) for b in blocks for _, law in b.laws()]
    batch = model.batch
    spread = 1 + Fraction(batch.factorial_moment(2) + batch.mean) / Fraction(batch.mean)
    return (1 - Fraction(model.rho_bar)) ** 2 / (max(means) * spread)


def threshold_moments(model, ctx, k: int, mean_y, blocks=None, sojourn: bool = False) -> list:
    """E[W], ..., E[W^k] (``sojourn``: E[T^j], T(s) = W(s) B*(s)) with a start threshold N > 1, by formal power
    series at s = 0: (-1)^j j! [s^j] W(s), the interpreter of the transform run once on truncated series in s
    (:class:`ThresholdTransform` at the formal variable s) instead of at the nodes of a contour.

    The moments need only finitely many right-derivatives of each factor at 0 (Feller 1971, vol. 2, sec. XIII.2:
    E[T^j] = (-1)^j T*^(j)(0+) for every law with a finite j-th moment, analytic at 0 or not): a law's transform
    enters as its formal series L*(s) = sum_j (-1)^j m_j s^j / j! (m_j its exact moments: the lognormal's
    m_j = e^{j mu + j^2 sigma^2 / 2}, Johnson, Kotz and Balakrishnan 1994, eq. (14.9), although its transform has no
    Taylor expansion at 0), and the count-type factors damped by e^{-lambda x} -- L*(s + lambda - lambda X(w)) and the
    probabilities of k arrivals -- as their convergent Taylor series at lambda, L*^(j)(lambda) / j!
    (:func:`~.block_laws.lst_taylor`: (-1)^j m_j / j! L_j*(lambda) for the lognormal, L_j its size-biased law). The
    divisions by series vanishing at 0 (1 - B*(s), phi(s), the divided differences' s - lambda + lambda X(B*)) are
    exact Laurent divisions with their precision carried (:mod:`qderive.numeric.kernels.formal_series`); the
    structural zeros are exact, the poles that cancel leave rounding, checked and dropped.

    Computed at the digits of ``ctx`` (float64: 20) plus guard digits (:func:`_formal_digits`) and returned in
    ``ctx``; E[Y], a constant factor of W(s), once at those digits (``mean_y``)."""
    blocks = _blocks(model, blocks)

    def read(op, work):
        y, idle = passage(blocks, op)
        w = threshold_wait(op, y, idle, work.num(model.rate), work.num(1 - model.rho_bar), ey[0])
        return w * op.B if sojourn else w

    ey = []

    def first(work):
        ey.append(mean_y(work))

    return _formal_coefficients(model, ctx, k, largest_threshold(blocks), read, first)


#: the guard digits of the formal series beyond the target's, and per order and threshold level (the divided
#: differences' poles of order up to N cancel)
FORMAL_GUARD, FORMAL_GUARD_PER_ORDER = 12, 2


def _formal_digits(ctx, k: int, top: int) -> tuple:
    """(the target digits, the working digits) of :func:`_formal_coefficients`: the digits of ``ctx`` (float64: 20)
    plus FORMAL_GUARD + FORMAL_GUARD_PER_ORDER (k + N)."""
    digits = 20 if ctx.is_float64 else ctx.dps
    return digits, digits + FORMAL_GUARD + FORMAL_GUARD_PER_ORDER * (k + top)


def _formal_coefficients(model, ctx, k: int, top: int, read, first=None) -> list:
    """(-1)^j j! [s^j] F(s), j = 1..k, F = ``read(op, work)`` a quantity analytic at 0 computed by the formal
    interpreter ``op`` (:class:`ThresholdTransform` over formal series) in the mpmath context ``work``
    (:func:`_formal_digits`); the series carried to O(s^(k + 2 + 2 N)), longer while the divisions left fewer than
    k + 1 known terms; in ``ctx``. ``first(work)`` runs once before (E[Y] at the working digits)."""
    import mpmath

    from ..backend import mp_context

    digits, working = _formal_digits(ctx, k, top)
    work = mp_context(working)
    precision = k + 2 + 2 * top
    with work:
        if first is not None:
            first(work)
        for _ in range(4):  # the divisions' losses grow with N, not with the length: a longer series settles it
            try:
                value = read(ThresholdTransform(model, work, Formal.variable(work.num(1), precision), top), work)
            except (ArithmeticError, IndexError):  # a division whose known coefficients all vanished
                value = None
            if value is not None and value.p > k:
                break
            precision += k + 1 + 2 * top
        else:
            raise ArithmeticError(f"the formal series of the wait lost every coefficient (carried to O(s^{precision}))")
        coef = value.analytic(k + 1, mpmath.mpf(10) ** -(digits + 5))
        out = [(-1) ** j * mpmath.factorial(j) * coef[j] for j in range(1, k + 1)]
    return [ctx.num(float(v)) if ctx.is_float64 else ctx.num(v) for v in out]


def shift_laurent(parts, work, order: int = 1) -> tuple:
    """({D: [alpha_D1, ..., alpha_DJ]}, {D: W~_D(0)}): the coefficients of s^-1 .. s^-J (J = ``order``) and s^0 of
    the shifted parts W_D(s) = sum_j alpha_Dj / s^j + W~_D(s) of (SN) (:mod:`~.blocks_shifts`), ``parts(s)`` =
    {D: W_D(s)} computed by the interpreter at the formal variable s (:class:`ThresholdTransform`), in the mpmath
    context ``work``: the principal parts at 0 need finitely many right-derivatives of each law, as the moments do
    (:func:`threshold_moments`), so a lognormal law too (its transform has no Laurent expansion around 0 to put a
    circle on). The series start at O(s^3) and are carried further while a division left s^0 unknown; a pole of
    order above J (cancelled poles: rounding) above 10^-(digits - 10) of the coefficients read is an
    ArithmeticError."""
    import mpmath

    precision = 3
    for _ in range(4):
        got = parts(Formal.variable(work.num(1), precision))
        got = {D: v if isinstance(v, Formal) else Formal.constant(v, 1) for D, v in got.items()}
        if all(v.p > 0 for v in got.values()):
            break
        precision += max(1 - min(v.p for v in got.values()), 3)
    else:
        raise ArithmeticError(f"the shifted parts' series lost their s^0 (carried to O(s^{precision}))")
    tiny = mpmath.mpf(10) ** -(work.dps - 10)
    for D, v in got.items():
        size = max([abs(v.coefficient(-j)) for j in range(order + 1)] + [1])
        if any(abs(v.coefficient(j)) > tiny * size for j in range(v.v, -order)):
            raise ArithmeticError(f"a pole of order above {order} in the shifted part D = {D} of the wait: {v}")
    return ({D: [v.coefficient(-j).real for j in range(1, order + 1)] for D, v in got.items()},
            {D: v.coefficient(0).real for D, v in got.items()})


def threshold_excess(model, ctx, s, blocks=None):
    """Delta(s), per idle period, of the finite room with a start threshold N > 1 under partial admission (the
    engine :mod:`~qderive.numeric.engines.vacation_finite_wait`, item 7), at the context array ``s`` (None: the
    limit s -> oo).

    A customer admitted during the idle passage whose count (the customers present after its batch, later arrivals
    included) is still below N where a threshold is checked -- at the end of its vacation before a ``wait`` or in a
    ``repeat``, at its arrival in a ``wait`` -- waits beyond the rest of its period: for the later batches that
    bring the count to N (``wait``), or for more vacations (``repeat``). Below N nobody is refused under partial
    admission (N <= r), so these customers, their positions and the count's law below N are the infinite room's:
    the low series of :class:`ThresholdTransform` (``pre``, ``post``). What they add, e^{-s (extra)} - 1 summed
    over them, is, per stage::

        wait(N):       - (1 - theta) U(1),          U = R / (1 - theta X(w)) (the low part of R)
        repeat(L, N):  U(1) (L*(s) - 1),            U = (post + E) / (1 - Apost_L)

    each carried through the later ``during`` stages (times their L*(s)); at s -> oo it removes the zero wait of
    the first member of a batch arriving at level 0 in a last ``wait`` that it does not end."""
    blocks = _blocks(model, blocks)
    op = ThresholdTransform(model, ctx, s, largest_threshold(blocks))
    passage(blocks, op)
    return op.excess


def threshold_excess_moments(model, ctx, k: int, blocks=None) -> list:
    """(-1)^j j! [s^j] Delta(s), j = 1..k, of :func:`threshold_excess` (its part of j! [s^j] N(-s) in the finite
    room's moments), by the formal series of :func:`threshold_moments`."""
    blocks = _blocks(model, blocks)

    def read(op, work):
        passage(blocks, op)
        return op.excess

    return _formal_coefficients(model, ctx, k, largest_threshold(blocks), read)


def numeric_law(model, blocks=None):
    """(field, law) of the first law with only a numeric transform (the lognormal) among the service and the blocks'
    laws, else None."""
    from .vacation_wait import numeric_transform

    blocks = _blocks(model, blocks)
    laws = (("service", model.service),) + tuple(fl for b in blocks for fl in b.laws())
    return next(((f, law) for f, law in laws if numeric_transform(law)), None)


def threshold_refusal(model, derivatives: bool = False):
    """(field, reason) when the transform cannot be used with N > 1, else None: a law without a closed-form transform
    (the derivatives of its transform are needed); with ``derivatives`` (the infinite room) only such a law whose
    derivatives E[(-T)^j e^{-sT}] have no form by the law's own rule (:func:`~.block_laws.size_biased`: the
    lognormal has one, so it computes)."""
    from .block_laws import size_biased
    from .vacation_wait import numeric_transform

    laws = (("service", model.service),) + tuple(fl for b in blocks_of(model) for fl in b.laws())
    for field, law in laws:
        if numeric_transform(law) and not (derivatives and (field == "service" or size_biased(law, 1) is not None)):
            name = field.replace("_", "-")
            return field, (f"the {name} time {law} has no closed-form transform: the wait with a start threshold "
                           f"N > 1 needs its derivatives")
    return None
