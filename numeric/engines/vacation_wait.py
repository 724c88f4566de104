"""Response-time laws of the infinite-room vacation queue: the transforms of
:mod:`qderive.symbolic.closed_forms.vacation_wait` with the model's own laws, compiled once.

:func:`response_laws` (the model's ``response`` reference) gives the wait and the sojourn time
of a random customer as :class:`~qderive.numeric.response.ResponseLaw` objects:

* the transform is ``wait_transform(policy, service=..., vacation=..., batch=..., rate=...)``
  with the concrete laws substituted (one SymPy expression in s), compiled by
  :func:`qderive.numeric.compile.cached_evaluator` and kept in the private cache under the
  model's parameters (a warm process imports no SymPy for float64 tails); numpy on complex
  arrays in float64, the same printed source on mpc in mpmath (rational transforms) or
  SymPy's mpmath printer (transcendental ones, e.g. a gamma law of non-integer shape);
* P(W = 0) is ``p_wait_zero(policy)`` at the model's moments; the moments E W^k, E T^k are the
  recursions of the structure W = W_b + J + R (:mod:`qderive.numeric.kernels.wait_moments`: the steps
  (MS), (MJ), (MB), (N8), (W3) the derivation displays, run over numbers; no symbolic series) at the
  model's moments b_1..b_{k+1}, f_1..f_{k+1}, l_[1]..l_[k+1] and c_0 = varphi(lambda): exact Fractions,
  or mpmath when a number is irrational (c_0 of a deterministic vacation).

A transform with an ``exp(-s D)`` factor (deterministic, uniform, empirical laws) is marked
not smooth. With a constant service D and no vacations, or vacations whose survival function is
given by pieces (``TimeLaw.survival_pieces``: exponential, hyperexponential, constant, empirical; and
every phase-type law -- Erlang, Coxian, PH -- as one uniformized matrix exponential, (L5)), the tails
are exact instead: the lattice sum (L3) of
:mod:`qderive.numeric.kernels.lattice_wait` (wait), and P(W > t - D) for the sojourn W + D, with the
working digits chosen from the sum's own rounding bound (:func:`_lattice_mp`); float64 returns None
where that bound exceeds 1e-10 of the tail (the response module recomputes it at 15 digits, with a
note). A vacation law with a density but no pieces (``TimeLaw.survival`` and ``stop_loss``: gamma of
non-integer shape, lognormal, uniform) is integrated against the lattice part instead, by the
decomposition W = (V + J) + R with R independent of V + J::

    P(W > t) = a_0 P(V + J > t) + w_c E (V_vac - t)^+ + w_c int_0^t P(V_vac > x) P(V + J > t - x) dx,

every term positive (:func:`~qderive.numeric.kernels.lattice_wait.convolution_tail`), the integral split at
the kinks t - m D of the lattice part and the law's own (uniform's ends; on the interval at 0 in the variable
x^{1/q} for a gamma law of shape p/q, where its survival function is analytic), the lattice part at all the
nodes of every interval at once from the cell polynomials (L6) of
:func:`~qderive.numeric.kernels.lattice_wait.lattice_cell_table` (O(K^3) once per model and precision, kept for a
quantile search; O(K) per node), the integral stopped where the vacation's stop-loss w_c E (V_vac - x)^+ bounds the
rest below 1e-14 (10^-(D+4)) of the tail (a uniform law: at its upper end; :func:`_truncated`), the limit
``lattice_work`` (K^3 / 3) refusing a table that would take more than a few seconds: float64 by
Gauss-Legendre with 12 and 24 nodes per interval, which must agree to 1e-11 (and the lattice part's rounding
bound, summed over the nodes, stay below 1e-10 of the tail; else 15 digits, with a note); D digits by Gauss-Legendre with n_i and 2 n_i nodes on
each interval i (doubled only where the two disagree) whose differences must sum to at most 10^-(D+3) of the
tail, at the working digits that give the lattice part's error, summed over the nodes, 10^-(D+3) of the tail
(:func:`_convolved_mp`; the lattice part at the nodes of whole cells and the orders are kept across the tails of a
search). The vacation's survival function is evaluated at every node of a pass at once by the law's
``survival_many`` (float64 numpy forms; D + 6 digits, enough for a sum of positive terms, from Taylor cells whose
centres the law keeps across the tails of a search). A quantile search first finds the root of the float64 values
taken without their acceptance tests (``rough_tails``: :func:`_rough_tails`; where the float64 lattice sum cancels,
the quadrature at a few more digits than it loses, :func:`_rough_mp`) and then refines it with the exact tails from
a narrow bracket (``response._near_root``). A smooth service with constant, uniform or empirical
vacations gets exact tails by smooth inversions at shifted times (:func:`shift_tails`, the last section).
A service on a coarse lattice h (values multiples of h >= b_1 / 4: a constant, a few atoms) takes the same lattice sums
with the service's pmf b(z) composed into the batch law (``kernels.lattice_wait``'s docstring; the sojourn with
P_K(b(z)) b(z) as the start row). Any other kinked service with a cdf and a bounded support (uniform, an empirical
sample off a coarse lattice) gets certified lower and upper bounds from its values rounded down and up to a lattice
(``kernels.lattice_service``; the section "a service law off a lattice" below): the value is an estimate inside the
bracket, with a note "between A and B" (``ResponseLaw.bracket``); ``--digits D`` only where the bracket has D digits.
A sample on its own fine lattice g (times written to 0.1 ms, 0.01 ms, 1 us) with no vacations or a residual
vacation of pieces e^{-theta y} (exponential, hyperexponential) gets exact tails instead (:func:`benes_setup`,
:func:`benes_values`): Benes' series with the ladder heights' uniform part in closed form (F12) of
:mod:`qderive.numeric.kernels.lattice_benes`, its bracket the certified rounding bound of its FFTs (about 1e-10).
Other kinked combinations are refused for tails and quantiles, with the reason, from the laws alone; the moments
work.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from fractions import Fraction

import numpy as np
import numpy

from ...symbolic.capabilities import Rule, declare
from ..response import ResponseLaw

__all__ = ["response_laws", "shift_setup", "shift_tails", "linear_pieces"]


def policy_key(model) -> str:
    return "none" if model.vacation is None else model.vacation_policy.value


def _key(model, kind: str) -> str:
    """The cache key of the compiled transform: the laws and the policy (lambda and c_0 are arguments)."""
    laws = {k: v for k, v in model.parameters().items() if k != "rate"}
    values = "".join(f"::{name}" for _, name in _numeric_laws(model))  # numeric laws: their values are arguments
    return (f"vacation_{kind}_lst::{policy_key(model)}{values}::" + json.dumps(laws, sort_keys=True)
            + ("_v3" if kind == "smooth" else ""))


def numeric_transform(law) -> bool:
    """True when ``law`` evaluates its own transform numerically (``TimeLaw.transform_values``: a law whose LST has
    no closed form, the lognormal): the closed forms then take its values at the nodes as an argument."""
    from ...symbolic.laws.base import TimeLaw

    return law is not None and type(law).transform_values is not TimeLaw.transform_values


class _ValueLaw:
    """A law whose transform enters a closed form as a symbol (its values at the nodes are an argument of the
    compiled expression: :func:`numeric_transform`); its moments are the law's own."""

    def __init__(self, law, name: str):
        import sympy as sp

        self.law, self.symbol = law, sp.Symbol(name)

    def lst(self, s):
        return self.symbol

    def moment(self, k):
        return self.law.moment(k)


#: the names of the transform values of the numeric laws, in the order of the compiled arguments
_VALUE_NAMES = (("service", "beta_s"), ("vacation", "varphi_s"))


def _numeric_laws(model) -> tuple:
    """The (field, symbol name) of the model's laws that evaluate their own transforms (:func:`numeric_transform`)."""
    return tuple((f, n) for f, n in _VALUE_NAMES if numeric_transform(getattr(model, f)))


def _expression(model, kind: str):
    """W(s) (or T(s)) with the model's laws, in the symbols s, lambda and c_0 = varphi(lambda) (and the transform
    values of the laws of :func:`_numeric_laws`, after them)."""
    import sympy as sp

    from ...symbolic.closed_forms import vacation_wait as VW
    from ...symbolic.closed_forms.vacation_infinite import c0, lam

    laws = {"service": model.service, "batch": model.batch, "rate": lam, "zero_count": c0}
    if model.vacation is not None:
        laws["vacation"] = model.vacation
    values = []
    for field, name in _numeric_laws(model):
        laws[field] = _ValueLaw(laws[field], name)
        values.append(laws[field].symbol)
    expr = (VW.wait_transform if kind == "wait" else VW.sojourn_transform)(policy_key(model), **laws)
    return sp.Integer(1) * expr, (VW.s, lam, c0, *values)  # built from SymPy objects (never text)


def smooth_laws(model) -> tuple[bool, str]:
    """False and the true reason when a law's transform cannot be inverted to the requested digits: an
    exp(-s D) factor (a constant, uniform or empirical law: its distribution has kinks), or no closed form at
    all (a transform that is an integral) -- except a law that evaluates its own transform
    (:func:`numeric_transform`: the lognormal, an integral of an analytic density), which is smooth (module
    docstring)."""
    import sympy as sp

    s = sp.Symbol("s")
    for what, law in (("service", model.service), ("vacation", model.vacation)):
        if law is None or numeric_transform(law):
            continue
        if service_atoms(law) is not None:  # a discrete law (constant, empirical): kinks, no SymPy needed
            return False, f"the {what} time {law} has no smooth density (its transform has exp(-s D) factors)"
        lst = law.lst(s)
        if lst.has(sp.Integral):  # first: the integrand's exp(-s x) is no exp(-s D) factor
            return False, (f"the {what} time {law} has no closed-form transform (its Laplace transform is an "
                           "integral)")
        if any(s in e.free_symbols for e in lst.atoms(sp.exp)):
            return False, f"the {what} time {law} has no smooth density (its transform has exp(-s D) factors)"
    return True, ""


def smooth_field(model) -> str:
    """The field (``service`` or ``vacation``) of the first law :func:`smooth_laws` finds not smooth ("" if none)."""
    for what in ("service", "vacation"):
        law = getattr(model, what, None)
        if law is not None and not smooth_law(law):
            return what
    return ""


class _Only:
    """A stand-in model with one law as its service (what :func:`smooth_laws` reads)."""

    vacation = None

    def __init__(self, law):
        self.service = law


def _key_law(law) -> str:
    return "law_smooth_v3::" + law.spec_text()


def smooth_law(law) -> bool:
    """Whether the inversion can use the transform of ``law`` as a service time (:func:`smooth_laws` of a model
    with this one law), kept in the disk cache by the law's text."""
    from ...symbolic.cache import cached

    return cached(_key_law(law), lambda: smooth_laws(_Only(law))[0])


def law_values(law, s, ctx, lam=None):
    """(beta(s), quotient) of a law with :func:`numeric_transform` at the context array ``s`` (any shape): float64
    complex arrays (NaN where the law's own error bound exceeds 1e-12: the float64 self-check then escalates), or
    object arrays of mpc at the context's digits."""
    shape = np.shape(s)
    flat = np.asarray(s, dtype=complex if ctx.is_float64 else object).ravel()
    b, q, bound = law.transform_values(flat, lam, None if ctx.is_float64 else ctx.dps)
    if ctx.is_float64:
        bad = ~(np.asarray(bound) <= 1e-12)
        b = np.where(bad, np.nan, b)
        q = None if q is None else np.where(bad, np.nan, q)
        return b.reshape(shape), (None if q is None else q.reshape(shape))
    b = np.array(b, dtype=object).reshape(shape)
    return b, (None if q is None else np.array(q, dtype=object).reshape(shape))


@functools.lru_cache(maxsize=64)
def _compiled(model, kind: str):
    from ..compile import cached_evaluator

    return cached_evaluator(_key(model, kind), lambda: _expression(model, kind))


def _transform(model, kind: str):
    def make(ctx):
        ev = _compiled(model, kind)
        c0 = zero_count(model, ctx)
        numeric = [getattr(model, field) for field, _ in _numeric_laws(model)]
        if ctx.is_float64:
            lam, c = float(model.rate), float(c0)
            if numeric:
                return lambda s: ev.numpy(np.asarray(s, dtype=complex), lam, c,
                                          *(law_values(law, s, ctx)[0] for law in numeric))
            return lambda s: ev.numpy(np.asarray(s, dtype=complex), lam, c)
        with ctx:
            lam, c = ctx.num(model.rate), (ctx.num(c0) if isinstance(c0, (int, Fraction)) else +c0)
        scalar = np.frompyfunc(lambda x, *v: ev.mpmath(x, lam, c, *v), 1 + len(numeric), 1)  # elementwise: mpc
        if numeric:
            def values(s):
                with ctx:
                    return scalar(s, *(law_values(law, s, ctx)[0] for law in numeric))
            return values
        return lambda s: scalar(s)

    return make


def zero_count(model, ctx):
    """c_0 = varphi(lambda) (single vacations only; 0 otherwise, unused): exact, or the count kernel's beta_0."""
    if model.vacation is None or model.vacation_policy.value != "single":
        return Fraction(0)
    c0 = model.moment_values()[-1]
    if c0 is not None:
        return c0
    return _zero_count(model, None if ctx.is_float64 else ctx.dps)


@functools.lru_cache(maxsize=32)
def _zero_count(model, dps):
    """c_0 = beta_0 = varphi(lambda) of the vacation in float64 (``dps`` None) or at ``dps`` digits, kept per model and
    precision (every tail of a quantile search builds the transform again): the count law's beta_0; at ``dps`` digits
    a law that evaluates its own transform (:func:`numeric_transform`: the lognormal, whose count sequences are a
    refined quadrature of seconds at 50 digits) gives varphi(lambda) by its rule, a few milliseconds, to more than
    ``dps`` digits."""
    from ..backend import FLOAT64, mp_context
    from ..sequences import count_sequences

    ctx = FLOAT64 if dps is None else mp_context(dps)
    with ctx:
        if dps is not None and numeric_transform(model.vacation):
            return +model.vacation.transform_values([ctx.num(model.rate)], digits=dps)[0][0].real
        return count_sequences(model.vacation.count_law(model.rate), 0, ctx)[0][0]


def _evaluate(ev, args, digits):
    """Exact when the expressions are rational and the arguments are; else mpmath at digits + 10."""
    if ev.rational and all(isinstance(a, (int, Fraction)) for a in args):
        return list(ev.exact(*args))
    from ..backend import mp_context

    ctx = mp_context((digits or 15) + 10)
    with ctx:
        return list(ev.mpmath(*[ctx.num(a) if isinstance(a, (int, Fraction)) else +a for a in args]))


def wait_moment_values(model, kind: str):
    """``values(k, digits)`` -> [E W, ..., E W^k] (``kind`` "wait") or of the sojourn T = W + B ("sojourn"), by the
    structure W = W_b + J + R of :mod:`qderive.numeric.kernels.wait_moments` ((MS), (MJ), (MB), (N8), (W3) of the
    derivation; no symbolic series): exact Fractions when the model's moments and c_0 are rational, else mpmath
    numbers at ``digits`` + 10 digits (25 for float64's ``None``)."""
    def values(k: int, digits):
        from ..backend import mp_context
        from ..kernels.wait_moments import wait_moments

        ctx = mp_context((digits or 15) + 10)
        n = k + 1
        lam = model.rate
        b = [model.service.moment(i) for i in range(1, n + 1)]
        l_fact = [model.batch.factorial_moment(i) for i in range(1, n + 1)]
        policy = policy_key(model)
        f = [model.vacation.moment(i) for i in range(1, n + 1)] if policy != "none" else []
        c0 = zero_count(model, ctx) if policy == "single" else Fraction(0)
        with ctx:
            if not all(isinstance(x, (int, Fraction)) for x in [lam, *b, *f, *l_fact, c0]):
                lam, b, f, l_fact, c0 = _mp(lam), [_mp(x) for x in b], [_mp(x) for x in f], [_mp(x) for x in l_fact], \
                    _mp(c0)
            # the residual's weight: single vacations, a batch meets a vacation w.p. lambda f_1 / (lambda f_1 + c_0)
            weight = {"none": 0, "multiple": 1}.get(policy)
            weight = lam * f[0] / (lam * f[0] + c0) if weight is None else weight
            out = wait_moments(k, lam, b, f, l_fact, weight, sojourn=kind == "sojourn")
            return [x if isinstance(x, (int, Fraction)) else +x for x in out]

    return values


def _mp(x):
    """A model number as an mpf at the current precision: exact ones rounded once, SymPy ones evaluated."""
    import mpmath

    if isinstance(x, (int, Fraction)):
        return mpmath.mpf(x.numerator) / x.denominator
    if isinstance(x, mpmath.mpf):
        return +x
    if hasattr(x, "evalf"):  # a SymPy number (an irrational moment)
        return mpmath.mpf(str(x.evalf(mpmath.mp.dps + 5)))
    return mpmath.mpf(x)


def _p_zero_expression(policy: str):
    from ...symbolic.closed_forms import vacation_wait as VW

    return (VW.p_wait_zero(policy),), VW.moment_symbols(0)  # lambda, b_1, f_1, l_1, c_0


def p_zero_of(model):
    def p0(ctx):
        from ..compile import cached_evaluator

        policy = policy_key(model)
        ev = cached_evaluator(f"vacation_wait_p0::{policy}", lambda: _p_zero_expression(policy))
        f1 = model.vacation.moment(1) if model.vacation is not None else Fraction(1)
        args = [model.rate, model.service.moment(1), f1, model.batch.moment(1), zero_count(model, ctx)]
        value = _evaluate(ev, args, ctx.dps)[0]
        with ctx:
            return ctx.num(value) if isinstance(value, (int, Fraction)) else (float(value) if ctx.is_float64 else +value)

    return p0


# -- constant service: exact lattice tails ------------------------------------------------------------------


def service_atoms(law):
    """((value, weight), ...) exactly when the service law is discrete (survival pieces that are all steps
    w 1{x < d}: a constant, an empirical sample), the weight of a value 0 included; else None."""
    pieces = law.survival_pieces()
    if not pieces or not all(len(p) == 3 and p[1] == 0 and p[2] is not None for p in pieces):
        return None
    atoms = [(Fraction(d), Fraction(w)) for w, _, d in pieces]
    rest = 1 - sum(w for _, w in atoms)
    return tuple(sorted(atoms + ([(Fraction(0), rest)] if rest else [])))


def fraction_gcd(values) -> Fraction | None:
    """The largest h with every value an integer multiple of h (positive Fractions); None when the common
    denominator exceeds 10^40 (no lattice worth the name: a sample given to 18 digits)."""
    num, den = 0, 1
    for v in values:
        den = den * v.denominator // math.gcd(den, v.denominator)
        if den > 10**40:
            return None
    for v in values:
        num = math.gcd(num, v.numerator * (den // v.denominator))
    return Fraction(num, den)


#: the exact lattice sum is used when the lattice step h of a discrete service law is at least its mean / this (a
#: constant, a law of a few coarse atoms): its float64 sum overflows and cancels beyond K ~ 100 lattice points and
#: the mpmath table costs O(K^3) (a sample recorded to 1 ms at t = 0.5 s: K = 500, minutes); finer lattices get
#: the bounds, on a lattice dividing h (the service then rounds exactly: only the ladder heights do, and the
#: extrapolated estimate converges to about 1e-10; :func:`bracket_span`)
LATTICE_FINENESS = 4


def _lattice(model):
    """((h, vacation pieces, b), "") when the service is on a lattice h (a constant, h = D; an empirical sample
    whose values are multiples of a step h >= its mean / :data:`LATTICE_FINENESS`, no value 0) and the residual
    vacation is covered by (L4) or (L5) of :mod:`qderive.numeric.kernels.lattice_wait` (no vacations, or a
    vacation law with survival pieces: exponential, hyperexponential, constant, empirical, phase-type) or by the
    quadrature (pieces None); ``b`` the lattice pmf ((m, b_m), ...) of B / h. Else (None, why not)."""
    atoms = service_atoms(model.service)
    if atoms is None or atoms[0][0] == 0:
        return None, ""  # not a lattice service: the refusal (or the bounds) name the law
    h = fraction_gcd([d for d, _ in atoms])
    if h is None or len(atoms) > 1 and h * LATTICE_FINENESS < model.service.mean:
        return None, ""  # a fine lattice: the bounds of kernels.lattice_service
    b = tuple((int(d / h), w) for d, w in atoms)
    if model.vacation is None:
        return (h, (), b), ""
    vac = model.vacation.survival_pieces()
    if vac is None:
        import mpmath

        with mpmath.workdps(15):
            if model.vacation.survival(mpmath.mpf(1)) is not None:  # a density: quadrature (pieces None)
                return (h, None, b), ""
        return None, f"the vacation time {model.vacation} has no exact sum with the service {model.service}"
    return (h, tuple(vac), b), ""


def _constant(setup) -> bool:
    """b(z) = z: a constant service (the sojourn is the wait shifted by D)."""
    return setup[2] == ((1, 1),)


#: the lattice table h of the last model per context (float64, or the highest mpmath precision so far): a
#: quantile search evaluates one model at many t
_TABLES: dict = {}


def _work_vectors(model, ctx, K, b, sojourn=False):
    """(pmf, start, geometric, support) of (L1) for the lattice pmf ``b`` of B / h: the batch work L(b(z)) and the
    own batch ahead P_K(b(z)) (times b(z) for the ``sojourn``), by :func:`~qderive.numeric.kernels.lattice_service.compose_pgf`;
    b(z) = z gives the batch law's own vectors (and its geometric closed form or finite support) unchanged."""
    from ..kernels.lattice_service import compose_pgf
    from ..sequences import batch_vectors

    vec = batch_vectors(model.batch, K, ctx)
    start = vec.tail / vec.l1
    if b == ((1, 1),) and not sojourn:
        return vec.pmf, start, vec.geometric, vec.support
    bv = ctx.zeros(max(m for m, _ in b) + 1)
    for m, w in b:
        bv[m] = ctx.num(w)
    pmf = compose_pgf(ctx, vec.pmf[: K + 1], bv, K)
    start = compose_pgf(ctx, start[: K + 1], bv, K)
    if sojourn:
        start = numpy.convolve(start, bv)[: K + 1]
    return pmf, start, None, None


@functools.lru_cache(maxsize=32)
def _lattice_pmf(model):
    """The lattice pmf b of B / h of :func:`_lattice` (kept per model)."""
    return _lattice(model)[0][2]


def _rho(model):
    """rho = lambda l_1 b_1 (exact)."""
    return model.rate * model.batch.mean * model.service.mean


def _table(model, ctx, K, sojourn=False):
    """h_{n,m} of (L1) with the model's lattice service (``sojourn``: the own service included in the start row),
    kept per model, kind and context."""
    from ..kernels.lattice_wait import lattice_table

    b = _lattice_pmf(model)

    key = (model, ctx.is_float64, sojourn)
    hit = _TABLES.get(key)
    if hit is not None and hit[1] >= K and (ctx.is_float64 or hit[0] >= ctx.dps):
        return hit[2]
    if hit is not None and K > hit[1] and (ctx.is_float64 or hit[0] >= ctx.dps):
        # a search growing at the same digits: by a quarter at least, so that the cost stays O(K^3) overall (a
        # table rebuilt for more digits anyway is made for the K asked: doubled, the table of a search that stepped
        # past its last K by a few cells, at the few more digits that K loses, cost up to 8 times that of the K)
        K = max(K, -(-5 * hit[1] // 4))
    K = max(K, 16)
    pmf, start, geometric, support = _work_vectors(model, ctx, K, b, sojourn)
    h = lattice_table(ctx, pmf, start, K, geometric, support, twin_numbers=True)
    if len(_TABLES) > 8:
        _TABLES.clear()
    _TABLES[key] = (ctx.dps, K, h)
    return h


#: the cell polynomials (L6) of the last models per context, as :data:`_TABLES`
_CELLS: dict = {}


def _cell_table(model, ctx, K, D, sojourn=False):
    """(C, Cabs) of :func:`~qderive.numeric.kernels.lattice_wait.lattice_cell_table` for cells 0..K or more (the
    size of the lattice table :func:`_table` makes for K), kept per model and context: a quantile search reuses the
    largest."""
    from ..kernels.lattice_wait import lattice_cell_table

    key = (model, ctx.is_float64, sojourn)
    hit = _CELLS.get(key)
    if hit is not None and hit[1] >= K and (ctx.is_float64 or hit[0] >= ctx.dps):
        return hit[2]
    if ctx.is_float64:
        h = _table(model, ctx, K, sojourn)
        n = len(h) - 1
        tables = lattice_cell_table(ctx, h, n, ctx.num(D), ctx.num(model.rate))
    else:
        from ..backend import mp_context

        # a kept table with the digits is extended by the rows K' + 1..K (its rows kept: the cost of the new cells);
        # else a new one with 40 digits to spare: the next tails of a search (a few more working digits) and the
        # D-digit tails after a rough search (at most D + 9 + 10 digits more than its 20 + C M digits: 104 against
        # 80 for 30 digits at t = 1.68, 168 cells) reuse it (the table costs about the same at 20 more digits)
        before = hit[2] if hit is not None and hit[0] >= ctx.dps else None
        wider = mp_context(hit[0] if before is not None else ctx.dps + 40)
        n = K
        with wider:
            h = _table(model, wider, n, sojourn)
            tables = lattice_cell_table(wider, h, n, wider.num(D), wider.num(model.rate), twin_numbers=True,
                                        before=before)
    if len(_CELLS) > 8:
        _CELLS.clear()
    _CELLS[key] = (None if ctx.is_float64 else wider.dps, n, tables)
    return tables


def _residual(model, ctx):
    """(a_0, w_c) of the residual vacation R in ``ctx``: P(R = 0) and the factor of its density w_c P(V > x)
    (none: (1, 0); multiple: (0, 1 / f_1); single: (c_0, lambda) / (lambda f_1 + c_0))."""
    policy = policy_key(model)
    if policy == "none":
        return ctx.num(1), ctx.num(0)
    f1 = model.vacation.moment(1)
    if policy == "multiple":
        return ctx.num(0), ctx.num(1 / f1)
    lam = ctx.num(model.rate)
    c0 = zero_count(model, ctx)
    c0 = ctx.num(c0) if isinstance(c0, (int, Fraction)) else c0
    return c0 / (lam * ctx.num(f1) + c0), lam / (lam * ctx.num(f1) + c0)


def _lattice_tail(model, setup, t: Fraction, ctx, bare: bool = False, sojourn: bool = False):
    """(P(W > t), its rounding-error bound) in ``ctx`` by (L3) (call inside ``with ctx:``); ``bare``: of the
    lattice part V + J alone (no residual vacation)."""
    from ...symbolic import limits as _limits
    from ..kernels.lattice_wait import lattice_wait_tail

    D, pieces, _ = setup
    K = _limits.check("lattice_points", int(t // D), f"the tail at t = {float(t):.6g} with the service "
                      f"{model.service} on the lattice {float(D):.6g} sums over t / h lattice points")
    lam = ctx.num(model.rate)
    rho = ctx.num(_rho(model))
    atom, weight = (ctx.num(1), ctx.num(0)) if bare else _residual(model, ctx)
    parts = () if bare else tuple(survival_piece(ctx, piece) for piece in pieces)
    us = [ctx.num(t - m * D) for m in range(K + 1)]
    return lattice_wait_tail(ctx, _table(model, ctx, K, sojourn), us, lam, rho, atom, weight, parts)


def survival_piece(ctx, piece):
    """One survival piece of ``TimeLaw.survival_pieces`` in ``ctx``: (w, theta, d) or (w, theta, None, (alpha, P))."""
    w, theta, d, *matrix = piece
    out = (ctx.num(w), ctx.num(theta), None if d is None else ctx.num(d))
    if not matrix:
        return out
    alpha, P = matrix[0]
    Pc = ctx.zeros((len(P), len(P)))
    for i, row in enumerate(P):
        for j, v in enumerate(row):
            Pc[i, j] = ctx.num(v)
    return out + ((ctx.array([ctx.num(a) for a in alpha]), Pc),)


def _lattice_float64(model, setup, t: Fraction, bare: bool = False, sojourn: bool = False):
    """P(W > t) in float64, or None when the cancellation bound exceeds 1e-10 of the tail (or it overflows)."""
    from ..backend import FLOAT64

    try:
        tail, bound = _lattice_tail(model, setup, t, FLOAT64, bare, sojourn)
    except OverflowError:
        return None, None
    if not (np.isfinite(tail) and np.isfinite(bound)):
        return None, None
    return (float(tail) if tail > 0 and bound <= 1e-10 * tail else None), _size(tail, bound, FLOAT64.eps)


def _size(tail, bound, eps) -> float:
    """log10(C M / tail) from one pass (the digits the sum loses; 0 when it loses none), or log10(C M) where that
    pass cannot size the tail. Kept as a logarithm: the ratio itself overflows a float (an M/D/1 tail near 1e-40
    at t = 900 D has C M / tail ~ 1e400)."""
    import mpmath

    bound, tail = mpmath.mpf(bound), mpmath.mpf(tail)
    ratio = bound / mpmath.mpf(eps) / (tail if tail > 2 * bound else 1)
    return float(mpmath.log10(ratio)) if ratio > 1 else 0.0


def _lattice_mp(model, setup, t: Fraction, digits: int, size=None, bare: bool = False, sojourn: bool = False):
    """P(W > t) to ``digits`` relative digits: working digits D + 6 + log10(C M / tail) (``size``, that logarithm from float64,
    else from a 20-digit pass; C M alone where that pass cannot size the tail), raised by log10(bound / tail)
    until the rounding bound is below 10^-(D+2) of the tail. Returns (tail, working digits)."""
    import math

    import mpmath

    from ...symbolic import limits as _limits
    from ..backend import mp_context

    if size is None or not math.isfinite(size):
        with mp_context(20) as ctx:
            tail, bound = _lattice_tail(model, setup, t, ctx, bare, sojourn)
            size = _size(tail, bound, ctx.eps)
    w = digits + 6 + int(math.ceil(size))
    while True:
        _limits.check("working_digits", w, f"the tail at t = {float(t):.6g} of the constant-service sum cancels: "
                      f"{digits} digits of it need {w} working digits")
        ctx = mp_context(w)
        with ctx:
            tail, bound = _lattice_tail(model, setup, t, ctx, bare, sojourn)
            goal = mpmath.mpf(10) ** (-(digits + 2))
            if tail > 0 and bound <= goal * tail:
                return +tail, w
            if tail > 2 * bound:
                w += int(math.ceil(float(mpmath.log10(bound / (goal * tail))))) + 3
            else:
                w += max(20, w - digits)


# -- constant service, vacations with a density but no pieces: quadrature against the lattice part ------------


def _exact(x) -> Fraction:
    """A float or an mpf as the Fraction it equals."""
    import mpmath

    if isinstance(x, float):
        return Fraction(x)
    man, exp = mpmath.mpf(x).man_exp
    return Fraction(man) * Fraction(2) ** exp


def _cuts(model, D, t: Fraction, drop=None) -> list:
    """0, t, the kinks t - m D of x -> P(V + J > t - x) in (0, t) and the vacation law's own kinks: exact, sorted.
    A law whose survival function is smooth but not analytic at 0 (``survival_analytic_at_zero()`` False: the
    lognormal, 1 - S(x) = exp(-O(ln^2 x))) also gets the geometric cuts c_1 / 2^j, j = 1, 2, ..., inside the first
    interval (0, c_1) until 1 - S(c_1 / 2^j) <= ``drop``: on each graded piece the nearest singularity (x = 0) is
    as far as the piece is long, so Gauss-Legendre converges geometrically there (about 5.8^-2n), and on the last
    piece (0, c_1 / 2^j) S differs from the analytic constant 1 by at most ``drop``."""
    inner = {t - m * D for m in range(int(t // D) + 1)} | set(model.vacation.survival_kinks())
    cuts = sorted({Fraction(0), t} | {x for x in inner if 0 < x < t})
    law = model.vacation
    if drop is not None and law.survival_root() != 1 and len(cuts) > 2:
        # S analytic in x^{1/q} only (a gamma law of shape p/q): the interval at 0 is taken in x^{1/q}, and the next
        # one (c_1, c_2) is cut at c_1 2^j, so that no piece is longer than its distance to the branch point x = 0
        # (measured: Gauss-Legendre of 25 nodes on (c_1, c_2) with c_2 - c_1 = 5.4 c_1 erred by 1e-26 relative)
        more, c = [], cuts[1] * 2
        while c < cuts[2]:
            more.append(c)
            c = c * 2
        cuts = sorted(set(cuts) | set(more))
    if drop is None or law.survival_analytic_at_zero() or len(cuts) < 2:
        return cuts
    import mpmath

    graded, c = [], cuts[1]
    with mpmath.workdps(15):
        for _ in range(200):
            c = c / 2
            graded.append(c)
            if 1 - law.survival(mpmath.mpf(c.numerator) / c.denominator) <= float(drop):
                break
    return [cuts[0]] + graded[::-1] + cuts[1:]


def _convolution(model, D, t: Fraction, ctx, orders, drop, sojourn=False):
    """P(W > t) in ``ctx`` by :func:`~qderive.numeric.kernels.lattice_wait.convolution_tail` with Gauss-Legendre of
    each of the ``orders`` (nodes per interval, the same on every interval): the values and the largest relative
    rounding bound of the lattice part (call inside ``with ctx:``). The integral stops at the first cut x_c past
    which the rest is below ``drop`` of the tail (:func:`_truncated`)."""
    run, count, _ = _problem(model, D, t, ctx, drop, sojourn)
    out, worst = [], 0
    for n in orders:
        base, base_bound, pieces, bounds = run([gauss_legendre(n, ctx)] * count)
        value = ctx.fsum([base, *pieces])
        out.append(value)
        worst = max(worst, ctx.fsum([base_bound, *bounds]) / value if value > 0 else ctx.num(1))
    return out, worst


def _problem(model, D, t: Fraction, ctx, drop, sojourn=False):
    """The integral of P(W > t) (module docstring) set up once in ``ctx``: (run, number of intervals, interval keys)
    with ``run(rules)`` the terms of :func:`~qderive.numeric.kernels.lattice_wait.convolution_pieces` for one rule
    (nodes, weights) per interval (None: skipped); the keys name the intervals for the orders kept between tails
    (a whole cell [j D, (j + 1) D] by its ends in y = t - x, another interval by its place)."""
    import mpmath

    from ...symbolic import limits as _limits
    from ..kernels.lattice_wait import convolution_pieces, lattice_cell_tails

    law = model.vacation
    cuts = _cuts(model, D, t, drop)
    K = _limits.check("lattice_points", int(t // D), f"the tail at t = {float(t):.6g} with the constant service "
                      f"{float(D):.6g} sums over t / D lattice points")
    _limits.check("lattice_work", (K + 1) ** 3 // 3, f"the tail at t = {float(t):.6g} with the constant service "
                  f"{float(D):.6g} and the vacation {law} integrates over t / D = {K} lattice cells, whose "
                  "polynomials (L6) cost K^3 / 3 operations (float64 escalates to mpmath there)")
    cells = [int((t - b) // D) for b in cuts[1:]] + [int(t // D)]  # t - x in [j D, (j + 1) D) on (a, b); t
    lam, rho, Dc = ctx.num(model.rate), ctx.num(_rho(model)), ctx.num(D)
    atom, weight = _residual(model, ctx)

    C, Cabs = _cell_table(model, ctx, K, D, sojourn)

    def lattice(ys, j):
        return lattice_cell_tails(ctx, C, Cabs, ys, np.broadcast_to(j, (len(ys),)), Dc, lam, rho)

    dps = 17 if ctx.is_float64 else ctx.dps
    # the survival function enters a sum of positive terms: D + 6 correct digits of it (float64: its ~1e-14) give
    # the tail 10^-(D+6) relative, below the orders' agreement 10^-(D+3) (drop = 10^-(D+4))
    sdigits = None if ctx.is_float64 else int(math.ceil(-math.log10(float(drop)))) + 2

    def survival(xs):
        return _survivals(law, xs, sdigits, ctx)

    with mpmath.workdps(dps):
        rest = ctx.num(law.stop_loss(mpmath.mpf(t.numerator) / t.denominator))
        cuts, cells = _truncated(model, law, ctx, lattice, cuts, cells, t, atom, weight, rest, drop)
    spans = list(zip(cuts, cuts[1:]))
    whole = [(t - b, t - a) if (t - a) % D == 0 and (t - b) % D == 0 else None for a, b in spans]
    ycuts, keys, memo = None, None, None
    if not ctx.is_float64:  # whole lattice cells recur at every t of a search: their lattice values are kept
        ycuts, keys, memo = [ctx.num(t - c) for c in cuts], whole, _cell_memo(model, ctx.dps, sojourn)
    xcuts, tc, root = [ctx.num(c) for c in cuts], ctx.num(t), law.survival_root()

    def run(rules):
        with mpmath.workdps(dps):
            return convolution_pieces(ctx, lattice, survival, xcuts, cells, rules, atom, weight, rest, root, tc,
                                      ycuts, keys, memo)

    return run, len(spans), [w if w is not None else ("place", i) for i, w in enumerate(whole)]


#: the lattice part's values and bounds at the Gauss-Legendre nodes of whole cells [j D, (j + 1) D], per model, working
#: digits and kind (:func:`_cell_memo`)
_CELL_VALUES: dict = {}


def _cell_memo(model, dps: int, sojourn: bool) -> dict:
    """The dict in which :func:`~qderive.numeric.kernels.lattice_wait.convolution_tail` keeps the lattice part at the
    nodes of whole cells for ``model`` at ``dps`` working digits: the tails of a quantile search (t within 1e-9 of
    each other, the same cells) evaluate the cell polynomials only on the partial cell [K D, t]. At most 8 kept."""
    key = (model, dps, sojourn)
    if key not in _CELL_VALUES:
        if len(_CELL_VALUES) >= 8:
            _CELL_VALUES.clear()
        _CELL_VALUES[key] = {}
    return _CELL_VALUES[key]


def _survivals(law, xs, digits, ctx):
    """P(V_vac > x) at the context vector ``xs`` by the law's ``survival_many`` (float64, or ``digits`` digits: its
    Taylor centres are kept by the law, so the tails of a quantile search share them)."""
    if ctx.is_float64:
        return law.survival_many(np.asarray(xs, dtype=float))
    return ctx.array(law.survival_many(list(xs), digits))


def _truncated(model, law, ctx, lattice, cuts, cells, t, atom, weight, rest, drop):
    """The cuts (and cells) of the integral up to the first cut x_c with w_c E (V_vac - x_c)^+ <= ``drop`` L, L a
    lower bound of the tail: since P(V + J > y) <= 1, the dropped part w_c int_{x_c}^t P(V_vac > x) P(V + J > t - x)
    dx is at most w_c E (V_vac - x_c)^+, so the tail loses at most ``drop`` of itself (a uniform law: nothing past
    its upper end, where the stop-loss is 0). L = a_0 G(t) + w_c (E (V_vac - t)^+ + x_1 P(V_vac > x_1) G(t)),
    G(t) = P(V + J > t) <= P(V + J > t - x) (the integral over [0, x_1], x_1 = min(f_1, t))."""
    import mpmath

    top, _ = lattice(ctx.array([ctx.num(t)]), cells[-1])
    x1 = min(Fraction(model.vacation.moment(1)), t)
    x1m = mpmath.mpf(x1.numerator) / x1.denominator
    lower = atom * top[0] + weight * (rest + top[0] * ctx.num(law.survival(x1m)) * ctx.num(x1))
    if not lower > 0:
        return cuts, cells

    def small(c):
        return weight * ctx.num(law.stop_loss(mpmath.mpf(c.numerator) / c.denominator)) <= drop * lower

    lo, hi = 1, len(cuts) - 1  # the first index with small(cuts[i]), by bisection (the stop-loss decreases)
    if not small(cuts[hi - 1]) or hi <= 1:
        return cuts, cells
    while lo < hi:
        mid = (lo + hi) // 2
        if small(cuts[mid]):
            hi = mid
        else:
            lo = mid + 1
    return cuts[: lo + 1], cells[:lo] + [cells[-1]]


_NODES: dict = {}


def gauss_legendre(n: int, ctx):
    """Gauss-Legendre nodes and weights on [-1, 1]: numpy's in float64, mpmath's at the context's digits."""
    if ctx.is_float64:
        key = (n, 0)
        if key not in _NODES:
            _NODES[key] = (0, tuple(np.polynomial.legendre.leggauss(n)))
        return _NODES[key][1]
    key = (n, 1)
    if key not in _NODES or _NODES[key][0] < ctx.dps:  # computed with 20 digits to spare, reused below that
        _NODES[key] = (ctx.dps + 20, _legendre_newton(n, ctx.dps + 20))
    rounded = (n, ctx.dps)  # rounded to the context once (a D-digit tail asks for them on every interval)
    if rounded not in _ROUNDED:
        if len(_ROUNDED) > 64:
            _ROUNDED.clear()
        X, W = _NODES[key][1]
        _ROUNDED[rounded] = (ctx.array([+x for x in X]), ctx.array([+w for w in W]))
    X, W = _ROUNDED[rounded]
    return X.copy(), W.copy()


#: Gauss-Legendre nodes and weights rounded to a context's digits (context arrays), per (n, digits)
_ROUNDED: dict = {}


def _legendre_newton(n: int, dps: int):
    """Gauss-Legendre nodes (ascending) and weights on [-1, 1] at ``dps`` digits: Newton's iteration on P_n from
    numpy's float64 zeros (n <= 100: three quadratic steps reach 60 digits) or from x = cos(pi (i - 1/4) / (n + 1/2))
    (DLMF 18.16.6 bounds the zeros; the start is within O(n^-2) of one), P_n and
    P_n' by the three-term recurrence (DLMF 18.9.1, 18.9.17), w = 2 / ((1 - x^2) P_n'(x)^2) (DLMF 3.5.19); the
    symmetric half mirrored. Milliseconds where mpmath's ``gauss_quadrature`` (the eigenvalues of the Jacobi
    matrix) took a second at 75 digits."""
    import mpmath

    start = np.polynomial.legendre.leggauss(n)[0][::-1] if n <= 100 else None  # float64 zeros, descending
    with mpmath.workdps(dps + 10):
        eps = mpmath.mpf(10) ** -(dps + 5)
        xs, ws = [], []
        for i in range(1, n // 2 + 1):
            x = (mpmath.cos(mpmath.pi * (i - mpmath.mpf(1) / 4) / (n + mpmath.mpf(1) / 2)) if start is None
                 else mpmath.mpf(float(start[i - 1])))
            for _ in range(100):
                p0, p1 = mpmath.mpf(1), x
                for k in range(2, n + 1):
                    p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
                dp = n * (x * p1 - p0) / (x * x - 1)
                dx = p1 / dp
                x -= dx
                if abs(dx) <= eps:
                    break
            p0, p1 = mpmath.mpf(1), x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            xs.append(x)
            ws.append(2 / ((1 - x * x) * dp * dp))
        middle = []
        if n % 2:  # the zero at 0: P_n'(0) from the recurrence
            p0, p1 = mpmath.mpf(1), mpmath.mpf(0)
            for k in range(2, n + 1):
                p0, p1 = p1, -(k - 1) * p0 / k
            middle = [(mpmath.mpf(0), 2 / (n * p0) ** 2)]
        pairs = [(-x, w) for x, w in zip(xs, ws)] + middle + [(x, w) for x, w in zip(xs[::-1], ws[::-1])]
    with mpmath.workdps(dps):
        return [+x for x, _ in pairs], [+w for _, w in pairs]


def _convolved_float64(model, D, t: Fraction, sojourn=False):
    """P(W > t) in float64 (Gauss-Legendre of 12 and 24 nodes per interval), or None (escalate) when the two
    differ by more than 1e-11 of the tail or the lattice part's rounding bound (summed over the nodes) exceeds
    1e-10 of the tail (the float64 criterion of the lattice sums)."""
    from ..backend import FLOAT64

    try:
        with FLOAT64, np.errstate(all="ignore"):
            (a, b), worst = _convolution(model, D, t, FLOAT64, (12, 24), 1e-14, sojourn)
    except (ArithmeticError, OverflowError):
        return None
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(worst)) or worst > 1e-10:
        return None
    return float(b) if b > 0 and abs(a - b) <= 1e-11 * b else None


def _lattice_size(model, D, t: Fraction, sojourn=False) -> float:
    """log10 of C M / P(V + J > t) of the cell polynomials (L6) at t, as a 20-digit pass gives it (the digits the
    lattice part loses; C M alone where that pass cannot size the tail). A float64 pass first (its tables cost
    O(K^3) flops, the 20-digit ones O(K^3) multiprecision operations, and kept in the slot of the working digits'
    tables they evicted): where it resolves the tail (tail > 2 bound) its size is the 20-digit one's; where its bound
    shows C M >= 1 / (2 eps_20) no tail <= 1 is resolved at 20 digits either, and the 20-digit pass would give
    log10 C M, which the float64 bound holds (C M is a sum of positive terms: no cancellation; the same factor
    C = 4 (2 K^2 + 3 K + 10) in both). The 20-digit pass runs only in between, or where float64 overflows."""
    from ..backend import FLOAT64, mp_context
    from ..kernels.lattice_wait import lattice_cell_tails

    K = int(t // D)
    with FLOAT64, np.errstate(all="ignore"):
        C, Cabs = _cell_table(model, FLOAT64, K, D, sojourn)
        tails, bounds = lattice_cell_tails(FLOAT64, C, Cabs, np.array([float(t)]), [K], float(D),
                                           float(model.rate), float(_rho(model)))
    tail, bound = float(tails[0]), float(bounds[0])
    if math.isfinite(tail) and math.isfinite(bound) and bound > 0:
        if tail > 2 * bound:
            return _size(tail, bound, FLOAT64.eps)
        with mp_context(20) as ctx:
            if 2 * (bound / FLOAT64.eps) * float(ctx.eps) >= 1:
                return math.log10(bound / FLOAT64.eps)
    with mp_context(20) as ctx:
        K = int(t // D)
        C, Cabs = _cell_table(model, ctx, K, D, sojourn)
        tails, bounds = lattice_cell_tails(ctx, C, Cabs, ctx.array([ctx.num(t)]), [K], ctx.num(D),
                                           ctx.num(model.rate), ctx.num(_rho(model)))
        return _size(tails[0], bounds[0], ctx.eps)


#: the Gauss-Legendre orders n_i that settled the intervals of the last D-digit tail of a model (per digits): the next
#: tail of a quantile search starts there (the integrands of nearby t need the same orders)
_ORDERS: dict = {}


def _convolved_mp(model, D, t: Fraction, digits: int, sojourn=False):
    """P(W > t) to ``digits`` digits: Gauss-Legendre of n_i and 2 n_i nodes on each interval i (n_i = 8 at first)
    at working digits sized by :func:`_lattice_size` so that the lattice part's rounding bound, summed over the
    nodes, is below 10^-(D+3) of the tail (10 more digits where it is not); accepted when the differences of the two
    orders, summed over the intervals, are at most 10^-(D+3) of the tail (the 2 n_i values kept), else n_i doubles on
    every interval whose difference exceeds its share 10^-(D+3) / (2 m) of the tail (m intervals; only the order
    4 n_i is new; within the limit ``working_digits`` on the digits and 512 nodes): the intervals far from the
    vacation's singular point x = 0 settle with a few nodes, those near it take more. The next tail of the model at
    D digits starts every interval from the order that settled it (whole cells by their place in y = t - x, the
    others by their index). Returns (tail, working digits)."""
    import math

    import mpmath

    from ...symbolic import limits as _limits
    from ...symbolic.errors import NumericalError
    from ..backend import mp_context

    w = digits + 3 + 6 + int(math.ceil(_lattice_size(model, D, t, sojourn)))
    goal = mpmath.mpf(10) ** (-(digits + 3))
    settled = _ORDERS.get((model, digits, sojourn), {})
    while True:
        _limits.check("working_digits", w, f"the tail at t = {float(t):.6g} of the constant-service sum cancels: "
                      f"{digits} digits of it need {w} working digits")
        ctx = mp_context(w)
        with ctx:
            run, count, names = _problem(model, D, t, ctx, goal / 10, sojourn)
            orders = [max(8, settled.get(name, 8)) for name in names]
            known = [{} for _ in range(count)]  # interval -> {order: (piece, bound)}
            if not count:  # t = 0: no integral, the atom's and the rest's terms only
                base, base_bound, _, _ = run([])
            try:
                while True:
                    need = [[k for k in (n, 2 * n) if k not in known[i]] for i, n in enumerate(orders)]
                    for k in (0, 1):  # at most two new orders an interval: two passes of one rule each
                        rules = [gauss_legendre(ks[k], ctx) if len(ks) > k else None for ks in need]
                        if any(r is not None for r in rules):
                            base, base_bound, pieces, bounds = run(rules)
                            for i, ks in enumerate(need):
                                if len(ks) > k:
                                    known[i][ks[k]] = (pieces[i], bounds[i])
                    fine = [known[i][2 * n] for i, n in enumerate(orders)]
                    total = ctx.fsum([base, *(p for p, _ in fine)])
                    worst = ctx.fsum([base_bound, *(b for _, b in fine)]) / total if total > 0 else mpmath.inf
                    if not worst <= goal:
                        break
                    errors = [abs(known[i][n][0] - known[i][2 * n][0]) for i, n in enumerate(orders)]
                    if ctx.fsum(errors) <= goal * total:
                        if len(_ORDERS) > 64:
                            _ORDERS.clear()
                        _ORDERS[(model, digits, sojourn)] = dict(zip(names, orders))
                        return +total, w
                    share = goal * total / (2 * count)
                    orders = [2 * n if e > share else n for n, e in zip(orders, errors)]
                    if max(orders) > 256:
                        raise NumericalError(
                            f"P(W > {float(t):.6g}): Gauss-Legendre of the residual vacation against the lattice part "
                            f"does not settle to {digits} digits with 512 nodes per interval (the vacation "
                            f"{model.vacation} has a density too irregular)")
            except ZeroDivisionError:
                pass
        w += 10


def _sojourn_shift(setup, kind):
    """(the shift of t, the start row with the own service): (D, False) for the sojourn of a constant service D,
    (0, True) for that of another lattice service, (0, False) for the wait."""
    if kind != "sojourn":
        return 0, False
    return (setup[0], False) if _constant(setup) else (0, True)


def _lattice_tails(model, setup, kind: str):
    """The law's own ``tails`` (:class:`~qderive.numeric.response.ResponseLaw`): P(W > t) by (L3); the sojourn
    W + D of a constant service has P(W + D > t) = P(W > t - D) (1 for t < D), that of another lattice service
    the same sum with the start row P_K(b(z)) b(z) (the own service joins the own batch ahead). float64 gives None
    where it must escalate."""
    import mpmath

    shift, soj = _sojourn_shift(setup, kind)

    def tails(ts, digits):
        out, working = [], 0
        for t in ts:
            t = Fraction(t) - shift
            if t < 0:
                out.append(1.0 if digits is None else mpmath.mpf(1))
                continue
            if setup[1] is None:  # a vacation with a density and no pieces: quadrature
                if digits is None:
                    out.append(_convolved_float64(model, setup[0], t, soj))
                    continue
                value, w = _convolved_mp(model, setup[0], t, digits, soj)
                out.append(value)
                working = max(working, w)
                continue
            value, size = _lattice_float64(model, setup, t, sojourn=soj)
            if digits is None:
                out.append(value)
                continue
            value, w = _lattice_mp(model, setup, t, digits, size, sojourn=soj)
            out.append(value)
            working = max(working, w)
        return out, (working or None)

    return tails


def _rough_tails(model, setup, kind: str):
    """float64 P(W > t) without the acceptance tests of :func:`_lattice_tails` (the rounding bound of the alternating
    lattice sum, the agreement of the two Gauss-Legendre orders): the ``rough_tails`` that guide a quantile search
    to a narrow bracket, which the exact tails then check (``response._near_root``). None where float64 fails or its
    rounding bound exceeds 1e-3 of the tail (deep tails: the alternating sum is noise there)."""
    from ..backend import FLOAT64

    shift, soj = _sojourn_shift(setup, kind)

    def rough(t):
        t = Fraction(t) - shift
        if t < 0:
            return 1.0
        try:
            with FLOAT64, np.errstate(all="ignore"):
                if setup[1] is None:
                    (value,), bound = _convolution(model, setup[0], t, FLOAT64, (24,), 1e-14, soj)
                else:
                    value, bound = _lattice_tail(model, setup, t, FLOAT64, sojourn=soj)
                    bound = bound / value
        except (ArithmeticError, OverflowError, ValueError, ZeroDivisionError):
            value, bound = math.nan, math.inf
        value, bound = float(value), float(bound)
        # a guide needs a few digits: beyond a rounding bound of 1e-3 of the tail the float64 sum may be noise
        if math.isfinite(value) and 0 < value <= 1 and bound <= 1e-3:
            return value
        return _rough_mp(model, setup[0], t, soj) if setup[1] is None else None

    return rough


def _rough_mp(model, D, t: Fraction, sojourn: bool):
    """The rough tail of a density vacation where float64 cancels (the lattice part of a long t): the quadrature of
    12 nodes an interval (the D-digit tails settle with 8 on most intervals; 24 gave the same guide to 13 digits at
    twice the cost) at the digits the lattice part loses plus 20 to 29 (:func:`_lattice_size`), without the
    acceptance tests, as a float (None where it fails): a guide of about 13 digits that costs a fraction of a D-digit
    tail, so that the D-digit search starts from a narrow bracket instead of bracketing by factors of 4 from the
    mean (a step past the quantile there costs a tail of up to four times the lattice cells and twice the working
    digits, or a refusal by the limit ``lattice-work``)."""
    from ..backend import mp_context

    try:
        # the digits rounded up to a multiple of 10: the tails of a search (t within a few cells) then share their
        # working digits, so the lattice values at the nodes of whole cells kept at those digits serve them all
        w = 10 * math.ceil((20 + max(_lattice_size(model, D, t, sojourn), 0)) / 10)
        with mp_context(w) as ctx:
            (value,), bound = _convolution(model, D, t, ctx, (12,), 1e-14, sojourn)
            value, bound = float(value), float(bound)
    except (ArithmeticError, OverflowError, ValueError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) and 0 < value <= 1 and bound <= 1e-3 else None


# -- a service law off a lattice: certified monotone bounds (kernels.lattice_service) -------------------------
#
# Uniform service, an empirical sample whose values share no coarse lattice step (any other law with a cdf and a
# bounded support; a sample on its own fine lattice with an exponential-type residual vacation takes the exact
# series (F12) of kernels.lattice_benes first, :func:`bound_tails`): every service rounded down and up to the
# lattice h, B_down <= B <= B_up, bounds the wait from
# below and above (the wait of the infinite room is stochastically increasing in the service law; the proof, the
# lattice forms (B1)-(B3) of V, J and R and the cost are in :mod:`qderive.numeric.kernels.lattice_service`).
# The lattice: N levels (the limit ``lattice_levels``) over [0, 9/8 t_max], refined (h halved, N doubled) while
# the bracket is wider than the tolerance (1e-9 relative; 10^-D for --digits D) and N within the limit. The value
# given is the Richardson extrapolation of the bracket's midpoints at h and 2 h (each bound is first order in h,
# their midpoint second order: measured ratio 4 between successive differences), clipped into the bracket; the
# output says "between A and B" (a note). --digits D is answered only when the bracket itself has D digits.


def bounds_setup(model):
    """(lattice pmfs of the service at a step h: ``pmfs(h)`` -> (b_down, b_up) float64 arrays of B / h, the support's
    end, the residual survival ``residual(xs)`` = P(R > x) for float64 x >= 0) when the bounds cover the model;
    else (None, why not). Covered: a service law with a cdf and a bounded support (exact atoms, or ``survival`` with
    its last kink the end of the support: uniform), a residual vacation whose stop-loss E (V_vac - x)^+ is known
    (survival pieces without matrices, or the law's ``stop_loss``)."""
    got, why = service_rounding(model.service)
    if got is None:
        return None, why
    pmfs, end = got
    residual = _residual_survival(model)
    if residual is None:
        return None, (f"the vacation time {model.vacation} gives no stop-loss E (V - x)^+ for the residual vacation "
                      "of the certified lattice bounds")
    return (pmfs, end, residual), ""


def _support_levels(law, end, h, rows: int = 1) -> int:
    """M = end / h + 2, the levels of the service's rounded pmf over its support, with ``rows`` x M (the finite room's
    sums hold r + 3 rows of them) within the limit ``lattice_work`` before the arrays are made: a tail point t far
    below the service times asks for a lattice of step about t / N over the whole support (t = 1e-12 with a uniform
    service on [0.005, 0.02]: 1.6e14 levels, 41 TiB; t = 1e-4 at r = 129: 1.9e8 numbers, 37 s and 3 GB)."""
    from ...symbolic import limits as _limits

    M = int(Fraction(end) / Fraction(h)) + 2
    _limits.check("lattice_work", rows * M, f"the service time {law} rounded to the lattice of the tail's point "
                  f"(step {float(h):.3g} over its support up to {float(end):.6g}: {M} levels"
                  f"{f' x {rows} rows' if rows > 1 else ''}): the point is far below the service times; ask for a "
                  "larger t")
    return M


def service_rounding(law, atoms=False):
    """((pmfs, end), "") with ``pmfs(h)`` -> (b_down, b_up), the float64 pmfs of B / h of the service rounded down
    and up to the lattice h (h floor(B / h) <= B <= h ceil(B / h)), and ``end`` the end of its support, for a law
    with a cdf and a bounded support (exact atoms, or ``survival`` with its last kink the end of the support:
    uniform); else (None, why not). Shared by the certified bounds of both rooms (``atoms``: the law's
    :func:`service_atoms`, when the caller has them)."""
    import mpmath

    atoms = service_atoms(law) if atoms is False else atoms
    if atoms is not None:
        end = atoms[-1][0]
        # d / h = (p b) / (q a) for d = p / q, h = a / b: exact integer floors and ceilings (no Fraction per atom)
        nums = [Fraction(d).numerator for d, _ in atoms]
        dens = [Fraction(d).denominator for d, _ in atoms]
        weights = np.array([float(w) for _, w in atoms])

        def pmfs(h, rows=1):
            h = Fraction(h)
            M = _support_levels(law, end, h, rows)
            a, b = h.numerator, h.denominator
            down, up = np.zeros(M + 1), np.zeros(M + 1)
            lo = np.array([p * b // (q * a) for p, q in zip(nums, dens)], dtype=np.int64)
            hi = np.array([-(-p * b // (q * a)) for p, q in zip(nums, dens)], dtype=np.int64)
            np.add.at(down, lo, weights)
            np.add.at(up, hi, weights)
            return down, up
    else:
        with mpmath.workdps(17):
            kinks = law.survival_kinks()
            if law.survival(mpmath.mpf(1)) is None or not kinks or law.survival(
                    mpmath.mpf(Fraction(max(kinks)).numerator) / Fraction(max(kinks)).denominator) != 0:
                return None, (f"the service time {law} has no cdf with a bounded support to round to a lattice "
                              "(the certified lattice bounds need one)")
        end = Fraction(max(kinks))

        def pmfs(h, rows=1):
            M = _support_levels(law, end, h, rows)
            S = law.survival_many(np.arange(M + 2) * float(h))
            S = np.minimum(np.maximum(S, 0.0), 1.0)
            down = S[: M + 1] - S[1: M + 2]  # P(k h <= B < (k + 1) h) (a continuous law: S(x-) = S(x))
            up = np.zeros(M + 1)
            up[1:] = S[:M] - S[1: M + 1]  # P((k - 1) h < B <= k h)
            return np.maximum(down, 0.0), np.maximum(up, 0.0)
    return (pmfs, end), ""


def _residual_survival(model):
    """P(R > x) = w_c E (V_vac - x)^+ (x >= 0) as a float64 function of an array, or None: from the vacation's
    survival pieces w e^{-theta x} 1{x < d} (int_x^d w e^{-theta u} du), else its ``stop_loss`` point by point."""
    from ..backend import FLOAT64

    if model.vacation is None:
        return lambda xs: np.zeros(len(xs))
    with FLOAT64:
        _, weight = _residual(model, FLOAT64)
    weight = float(weight)
    pieces = model.vacation.survival_pieces()
    if pieces is not None and all(len(p) == 3 for p in pieces):
        parts = [(float(w), float(theta), None if d is None else float(d)) for w, theta, d in pieces]

        def residual(xs):
            xs = np.asarray(xs, dtype=float)
            out = np.zeros(len(xs))
            for w, theta, d in parts:
                if theta == 0:
                    out += w * np.maximum(d - xs, 0.0)
                elif d is None:
                    out += w * np.exp(-theta * xs) / theta
                else:
                    out += w * np.where(xs < d, -np.expm1(-theta * (d - xs)) * np.exp(-theta * xs), 0.0) / theta
            return weight * out
        return residual
    import mpmath

    with mpmath.workdps(17):
        if model.vacation.stop_loss(mpmath.mpf(1)) is None:
            return None

    def residual(xs):
        with mpmath.workdps(17):
            return weight * np.array([float(model.vacation.stop_loss(mpmath.mpf(float(x)))) for x in xs])
    return residual


def _bound_pmfs(model, setup, kind, h: Fraction, N: int, store: dict):
    """(p_down, p_up): the pmfs over 0..N of the lattice part L of the lower and the upper law (service and ladder
    heights rounded down / up; (B1)-(B2) of :mod:`qderive.numeric.kernels.lattice_service`), the own service
    included for the ``kind`` sojourn; kept in ``store`` (one law's: keyed by (h, N), since hashing a model of a
    large sample costs more than a tail)."""
    from ..backend import FLOAT64
    from ..kernels.lattice_service import compose_pgf, compound_geometric, ladder
    from ..sequences import batch_vectors

    key = (h, N)
    if key in store:
        return store[key]
    pmfs, _, _ = setup
    out = []
    with FLOAT64:
        vec = batch_vectors(model.batch, N, FLOAT64)
        for b, up in zip(pmfs(h), (False, True)):
            mean_b = float(np.dot(np.arange(len(b)), b))
            geo = None if vec.geometric is None else tuple(float(v) for v in vec.geometric)
            work = compose_pgf(FLOAT64, vec.pmf[: N + 1], b, N, None if geo is None else (*geo, False))
            ahead = compose_pgf(FLOAT64, (vec.tail / vec.l1)[: N + 1], b, N, None if geo is None else (*geo, True))
            mean = float(vec.l1) * mean_b  # E S / h of the rounded law (exact moments, not the truncated sums)
            rho = float(model.rate) * mean * float(h)
            if not rho < 1:  # the upper law overloads at this h: its wait is infinite, P(W_up > t) = 1 (p = 0)
                out.append(np.zeros(N + 1))
                continue
            if mean == 0:  # every service rounds down to 0: no work, V = 0
                y = np.zeros(N + 1)
                y[0] = 1.0
            else:
                y = compound_geometric(FLOAT64, rho, ladder(FLOAT64, work, mean, N, up), N)
            p = np.convolve(y, ahead)[: N + 1]
            if kind == "sojourn":
                p = np.convolve(p, b)[: N + 1]
            out.append(p)
    if len(store) > 16:
        store.clear()
    store[key] = tuple(out)
    return store[key]


def _bracket_at(model, setup, kind, ts, N, cover, store=None):
    """For the points ``ts`` (Fractions, 0 < t <= ``cover``): (lower, upper, estimate) lists at N levels over
    [0, cover] (h = cover / N, an exact binary fraction), the estimate the Richardson extrapolation of the midpoints
    at h and 2 h clipped into the bracket; None when an upper law is unstable at this h."""
    from ..backend import FLOAT64
    from ..kernels.lattice_service import lattice_bound_tails

    _, _, residual = setup
    h = Fraction(cover) / N  # cover = g 2^e (:func:`bracket_span`): h divides the service's lattice g when N >= 2^e
    got = []
    for step, levels in ((h, N), (2 * h, N // 2)):
        pm = _bound_pmfs(model, setup, kind, step, levels, {} if store is None else store)
        if pm is None:
            return None
        with FLOAT64:
            got.append([lattice_bound_tails(FLOAT64, p, float(step), [float(t) for t in ts], residual) for p in pm])
    (lo, hi), (lo2, hi2) = got
    est = []
    for a, b, a2, b2 in zip(lo, hi, lo2, hi2):
        mid, mid2 = (a + b) / 2, (a2 + b2) / 2
        est.append(min(max(mid + (mid - mid2) / 3, a), b))
    return [float(x) for x in lo], [float(x) for x in hi], [float(x) for x in est]


def bracket_span(model, t: Fraction, atoms=False) -> Fraction:
    """The span [0, g 2^e] of the bound lattices, the least such span >= 9/8 t, g the lattice step of a discrete
    service law (the gcd of its values; 1 for a law with a density): with N = 2^n levels, h = g 2^(e - n) divides g
    whenever e <= n, so a lattice law (a sample recorded to 1 ms) rounds exactly."""
    atoms = service_atoms(model.service) if atoms is False else atoms  # ``atoms``: the caller's, when known
    g = (fraction_gcd([d for d, _ in atoms if d > 0]) if atoms else None) or Fraction(1)
    x = Fraction(9, 8) * t / g
    e = math.ceil(math.log2(x.numerator) - math.log2(x.denominator))
    cover = g * Fraction(2) ** e
    return cover if cover >= Fraction(9, 8) * t else 2 * cover


def tail_at_zero(p_zero, digits):
    """P(T > 0) = 1 - P(T = 0) from the exact atom ``p_zero(ctx)`` (a closed form), in float64 (``digits`` None) or
    at digits + 10 working digits: the point t = 0 of the bracketed tails of both rooms, which no lattice bounds."""
    from ..backend import FLOAT64, mp_context

    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    with ctx:
        zero = 1 - p_zero(ctx)
    return float(zero) if digits is None else zero


def bracket_value(a, b, estimate, t, kind: str, digits, tol, levels,
                  why="the service law has kinks and no exact lattice"):
    """The answer of a certified bracket a <= P(kind > t) <= b (the lattice bounds of both rooms): the ``estimate``
    inside it in float64 (``digits`` None); at D digits the bracket's midpoint, only when the bracket itself has D
    digits (b - a <= ``tol`` a), else the refusal naming --digits and the digits the bracket reaches with
    ``levels`` lattice levels."""
    import mpmath

    from ...symbolic.errors import ParameterError

    if digits is None:
        return estimate
    if not b - a <= tol * a:
        reached = math.log10(2 * b / (b - a)) if b > a else math.inf
        raise ParameterError(
            f"--digits {digits}: the certified lattice bounds of P({kind} > {float(t):.6g}) reach "
            f"{reached:.1f} digits ({a:.6g} <= P <= {b:.6g} with {levels} levels, the limit lattice-levels); "
            f"{why}, so no D-digit algorithm covers it (raise "
            "--limit lattice-levels=... or drop --digits for the estimate inside the bounds)")
    with mpmath.workdps(digits + 5):
        return (mpmath.mpf(a) + mpmath.mpf(b)) / 2


def benes_setup(model):
    """The inputs of the exact Benes series (F12) of :mod:`qderive.numeric.kernels.lattice_benes` for a service on
    its own (fine) lattice g: ``{"b", "g", "pmf", "ahead", "rho", "mean", "atom", "pieces"}`` (float64, exact
    Fractions where given), or None where (F12) does not cover the model (a service off a lattice, a residual
    vacation with pieces other than e^{-theta y} without a cut: those keep the certified bracket)."""
    from ..backend import FLOAT64
    from ..sequences import batch_vectors

    atoms = service_atoms(model.service)
    if atoms is None:
        return None
    g = fraction_gcd([d for d, _ in atoms if d > 0])
    if g is None:
        return None
    pieces = []
    if model.vacation is not None:
        vac = model.vacation.survival_pieces()
        if vac is None or not all(len(p) == 3 and p[2] is None and p[1] > 0 for p in vac):
            return None
        with FLOAT64:
            atom, weight = _residual(model, FLOAT64)
        pieces = [(float(weight) * float(w) / float(theta), float(theta)) for w, theta, _ in vac]
        atom = float(atom)
    else:
        atom = 1.0
    n = int(atoms[-1][0] / g)
    b = np.zeros(n + 1)
    for d, w in atoms:
        b[int(d / g)] += float(w)
    with FLOAT64:
        vec = batch_vectors(model.batch, 4000, FLOAT64)
        pmf = np.asarray(vec.pmf, dtype=float)
        ahead = np.asarray(vec.tail, dtype=float) / float(vec.l1)
        geometric = None if vec.geometric is None else tuple(float(v) for v in vec.geometric)
    mean = Fraction(model.batch.mean) * model.service.mean / g  # E S / g, exact
    return {"b": b, "g": g, "pmf": pmf, "ahead": ahead, "rho": float(_rho(model)), "mean": float(mean),
            "atom": atom, "pieces": pieces, "geometric": geometric}


#: a series' window reaches this share beyond its farthest point (a quantile search's later points replay its powers)
BENES_MARGIN = 0.02
#: the rough guide of a quantile search: the service rounded to the nearest point of a lattice of at most this many
#: levels below the point
BENES_GUIDE_LEVELS = 16384


def _benes_series(setup, b, g, mean, rho, cover, kind):
    from ..kernels.lattice_benes import BenesSeries

    with np.errstate(under="ignore"):
        return BenesSeries(b, float(g), setup["pmf"], setup["ahead"], rho, mean, setup["atom"], setup["pieces"],
                           cover, sojourn=kind == "sojourn", geometric=setup["geometric"])


def benes_values(setup, kind: str):
    """``(exact, rough)``: ``exact(ts)`` -> {t: (P(kind > t), certified error bound, levels)} for Fractions t > 0 by
    (F12) (None where t / g exceeds the limit ``fine_lattice_levels``), from one kept
    :class:`~qderive.numeric.kernels.lattice_benes.BenesSeries` whose window reaches BENES_MARGIN beyond the
    farthest point asked so far; ``rough(t)`` the same series for the service rounded to the nearest point of a
    lattice g 2^k of at most BENES_GUIDE_LEVELS levels below t (a quantile search's guide, no bound)."""
    from ...symbolic import limits as _limits

    g = setup["g"]
    kept = {}

    def exact(ts):
        limit = _limits.current().fine_lattice_levels
        tmax = max(ts)
        if int(tmax / g) + 1 > limit:
            return None
        series = kept.get("exact")
        if series is None or series.cover < float(tmax):
            cover = min(float(tmax) * (1 + BENES_MARGIN), float((limit - 1) * g))
            series = kept["exact"] = _benes_series(setup, setup["b"], g, setup["mean"], setup["rho"], cover, kind)
        with np.errstate(under="ignore"):
            got, _ = series.tails([float(t) for t in ts])
        return {t: (v, e, series.L) for t, (v, e) in zip(ts, got)}

    def rough(t):
        t = Fraction(t)
        if not t > 0:
            return None
        k = max(0, math.ceil(math.log2(max(float(t / g) / BENES_GUIDE_LEVELS, 1.0))))
        key = ("rough", k)
        series = kept.get(key)
        if series is None or series.cover < float(t):
            step = g * 2 ** k
            b = setup["b"]
            coarse = np.zeros(int(round((len(b) - 1) / 2 ** k)) + 1)
            np.add.at(coarse, np.rint(np.flatnonzero(b) / 2 ** k).astype(np.int64), b[np.flatnonzero(b)])
            mean_b = float(np.dot(np.arange(len(coarse)), coarse))
            if not mean_b > 0:
                return None
            scale = mean_b * 2 ** k / float(np.dot(np.arange(len(b)), b))
            rho = setup["rho"] * scale
            if not rho < 1:
                return None
            series = kept[key] = _benes_series(setup, coarse, step, setup["mean"] * scale / 2 ** k, rho,
                                               2 * float(t), kind)
        with np.errstate(under="ignore"):
            return series.tails([float(t)])[0][0][0]

    return exact, rough


def bound_tails(model, setup, kind: str):
    """The law's own ``tails``, ``bracket`` and ``rough_tails`` (:class:`~qderive.numeric.response.ResponseLaw`):
    where :func:`benes_setup` covers the model, the exact series (F12) on the service's own lattice (its bracket the
    certified rounding bound; ``--digits D`` answered where that bound has D digits, else refused with the digits it
    has; ``rough_tails`` the series of the service rounded to a coarser lattice); else P(W > t) (``kind``
    "wait") or P(W + B > t) ("sojourn") by the certified lattice bounds (section comment above): the lattice is
    refined until the bracket's relative width is within 1e-9 (float64) or 10^-D (``digits`` D) or the levels reach
    the limit ``lattice_levels``; float64 gives the estimate inside the bracket, D digits only a bracket of D
    digits (else refused naming --digits and the digits reached)."""
    import mpmath

    from ...symbolic import limits as _limits
    from ...symbolic.errors import ParameterError

    brackets: dict = {}
    store: dict = {}
    span = [Fraction(0)]  # the lattice covers [0, span]: a power of 2 above the points (kept for a quantile search)
    benes = benes_setup(model)
    exact, rough = benes_values(benes, kind) if benes is not None else (None, None)
    exact_levels = set()

    def run(ts, digits):
        ts = [Fraction(t) for t in ts]
        positive = [t for t in ts if t > 0]
        got = exact(positive) if exact is not None and positive else None
        if got is not None:  # (F12): the exact series on the service's own lattice, its certified rounding bound
            out = []
            tol = 1e-9 if digits is None else 10.0 ** -digits
            for t in ts:
                if t <= 0:
                    out.append((1.0 if digits is None else mpmath.mpf(1)) if kind == "sojourn" else
                               tail_at_zero(p_zero_of(model), digits))
                    continue
                v, e, levels = got[t]
                exact_levels.add(levels)
                brackets[t] = (max(v - e, 0.0), min(v + e, 1.0), levels)
                if digits is not None and not 2 * e <= tol * (v - e):
                    reached = math.log10(v / e) if e > 0 else math.inf
                    raise ParameterError(
                        f"--digits {digits}: the exact series of P({kind} > {float(t):.6g}) on the service times' "
                        f"own lattice ({levels} levels) is certified to {reached:.1f} digits (its float64 FFTs' "
                        f"rounding bound: {v - e:.12g} <= P <= {v + e:.12g}); drop --digits for that value")
                out.append(bracket_value(max(v - e, 0.0), min(v + e, 1.0), v, t, kind, digits, tol, levels,
                                         why="the exact series' rounding bound is wider"))
            return out, (None if digits is None else digits)
        if positive and max(positive) > span[0]:
            span[0] = bracket_span(model, max(positive))
        tol = 1e-9 if digits is None else 10.0 ** -digits
        limit = _limits.current().lattice_levels
        N, result = min(1024, limit), None
        while positive:
            got = _bracket_at(model, setup, kind, positive, N, span[0], store)
            if got is not None:
                result = got
                if all(b - a <= tol * a for a, b in zip(got[0], got[1])):
                    break
            if 2 * N > limit:
                if result is None:
                    raise ParameterError(f"the certified lattice bounds of the {kind} need a finer lattice than "
                                         f"lattice-levels = {limit} allows (the service rounded up to it overloads "
                                         "the queue); raise it with --limit lattice-levels=...")
                break
            N *= 2
        values = {}
        if positive:
            for t, a, b, e in zip(positive, *result):
                brackets[t] = (a, b, N)
                values[t] = (a, b, e)
        out = []
        for t in ts:
            if t <= 0:  # P(T > 0) = 1 - P(T = 0): the sojourn 1, the wait 1 - p_wait_zero (exact closed form)
                if kind == "sojourn":
                    out.append(1.0 if digits is None else mpmath.mpf(1))
                    continue
                out.append(tail_at_zero(p_zero_of(model), digits))
                continue
            out.append(bracket_value(*values[t], t, kind, digits, tol, N))
        return out, (None if digits is None else digits)

    def bracket(t):
        t = Fraction(t)
        if t not in brackets:
            run([t], None)
        return brackets[t]

    def how(levels):
        if levels in exact_levels:
            return (f"exact: Benes' series over the service times' own lattice of {levels} levels, the ladder heights' "
                    "uniform part in closed form (Irwin-Hall), the convolutions by FFT; the bounds are their certified "
                    "rounding error")
        return (f"certified bounds: the service times rounded down and up to a lattice of {levels} levels; the value "
                "is an estimate inside them")

    bracket.how = how
    return run, bracket, rough


#: the response measures that need the tails (the moments work for every law)
TAIL_MEASURES = frozenset({"wait_tail", "wait_quantile", "sojourn_tail", "sojourn_quantile"})


def _tails_refusal(model, asked):
    """Refuse tails and quantiles for laws with kinks that no exact sum covers (module docstring), from the laws
    alone: before any work."""
    from ...symbolic.cache import cached
    from ...symbolic.capabilities import Refusal

    wanted = TAIL_MEASURES & asked
    if not wanted:
        return None
    smooth, why = cached(_key(model, "smooth"), lambda: smooth_laws(model))
    if smooth:
        return None
    setup, why_not = _lattice(model)
    if setup is not None:
        return None

    if shift_setup(model) is not None:  # as response_laws: a smooth service with a kinked vacation
        return None
    if why_not == "" and not _service_smooth_cached(model):  # a kinked service off a lattice: the bounds
        bounds, why_bounds = bounds_setup(model)
        if bounds is not None:
            return None
        why_not = why_bounds
    field = smooth_field(model) or "service"
    return Refusal(field, (why_not or why) + ": transform inversion cannot give its tails to the requested digits "
                   "and no exact sum of the package covers these laws; the moments work for every law", min(wanted))


def _service_smooth_cached(model) -> bool:
    from ...symbolic.cache import cached

    return cached(_key(model, "service_smooth"), lambda: service_smooth(model))


#: the N-policy: no response law (the composed response laws of :mod:`.blocks` declare it too)
N_POLICY = Rule("start_threshold", lambda n: n != 1, "under the N-policy a customer's wait depends on the batches "
                "that arrive after it (it waits for the count to reach N), so neither the distributional form of "
                "Little's law that gives the moments nor the waiting-time transform holds; the mean wait is the "
                "measure mean_wait", frozenset({"wait_moments", "sojourn_moments"}) | TAIL_MEASURES)


def _no_blocks(field):
    return Rule(field, lambda law: law is not None, "the setup and the close-down change the wait: their response "
                "laws are the composed ones (qderive.numeric.engines.blocks.infinite_response_laws), which call "
                "this one for the queue without them")


@declare(N_POLICY, _no_blocks("setup"), _no_blocks("close_down"), check=_tails_refusal)
def response_laws(model) -> dict:
    """``{"wait": ResponseLaw, "sojourn": ResponseLaw}`` of a concrete :class:`VacationQueue` (module docstring).

    A constant service (with no vacations or vacations covered by (L4)) gets exact tails by the lattice sum
    of :mod:`qderive.numeric.kernels.lattice_wait`; other laws with kinks are refused for tails. A setup or a
    close-down is refused (its declaration): the model's response consumer,
    :func:`qderive.numeric.engines.blocks.infinite_response_laws`, calls this function for the queue without them
    and multiplies by their residual factor."""
    from ...symbolic.cache import cached

    if model.blocks:  # a direct call must not compute the queue without them (its declaration refuses them too)
        from ...symbolic.errors import ParameterError

        raise ParameterError("the wait with a start threshold, a setup or a close-down is the composed response law's "
                             "(qderive.numeric.engines.blocks.infinite_response_laws), not this one's")

    smooth, why = cached(_key(model, "smooth"), lambda: smooth_laws(model))
    setup, why_not = (None, "") if smooth else _lattice(model)
    why = why_not or why

    def no_atom(ctx):  # P(T = 0) = P(W = 0) P(B = 0) = 0: every service law is a.s. positive (alpha sums to 1)
        return ctx.num(0)

    shifted = bounds = None
    if not smooth and setup is None:  # a smooth service with a kinked vacation law: shift_tails
        shifted = shift_setup(model)
        if shifted is None and not why_not and not _service_smooth_cached(model):  # off a lattice: the bounds
            bounds = bounds_setup(model)[0]
    made = {kind: bound_tails(model, bounds, kind) for kind in ("wait", "sojourn")} if bounds is not None else {}

    def own(kind):
        if kind in made:
            return made[kind][0]
        if setup is None:
            return None if shifted is None else shift_tails(model, shifted, kind)
        return _lattice_tails(model, setup, kind)

    def bracket(kind):
        return made[kind][1] if kind in made else None

    def bound(kind):  # the exact series (F12): one side of its certified bound (a quantile search's Newton steps)
        if kind not in made or made[kind][2] is None:
            return None
        return lambda t, which: made[kind][1](t)[which]

    def rough(kind):
        if kind in made:
            return made[kind][2]
        return None if setup is None else _rough_tails(model, setup, kind)

    return {"wait": ResponseLaw("wait", _transform(model, "wait"), p_zero_of(model), wait_moment_values(model, "wait"),
                                smooth, why, own("wait"), rough("wait"), bracket("wait"), bound("wait")),
            "sojourn": ResponseLaw("sojourn", _transform(model, "sojourn"), no_atom, wait_moment_values(model, "sojourn"),
                                   smooth, why, own("sojourn"), rough("sojourn"), bracket("sojourn"), bound("sojourn"))}


@declare(Rule("start_threshold", lambda n: n != 1, "P(W > T) does not grow with the load under the N-policy (at "
              "light load a customer waits for N - 1 later arrivals), so bisection on the load cannot find the "
              "largest one that meets the target"), via_engine=True)
def size_for_delay(values: dict, request, digits=None) -> dict:
    """max { rho_bar < 1 : P(W > T) <= P } (``qderive size vacation-infinite --target-wait-tail T,P``).

    P(W > T) grows with the load (a larger arrival rate with the same laws gives a stochastically
    larger wait), from its light-load limit -- P(V_r > T), the residual vacation's tail, with multiple
    vacations; 0 otherwise -- to 1 as rho_bar -> 1. A target at or below the light-load limit is refused
    with that limit named. Otherwise bisection on rho_bar in (0, 1), each step one tail under the
    precision policy (float64 with its self-check, or D digits), to 10 significant digits of rho_bar
    (D with ``--digits``); the load returned meets the target, the next one up (one step of the last
    bracket) does not.
    """
    from fractions import Fraction as F

    import mpmath

    from ...symbolic.errors import ParameterError
    from ...symbolic.models.vacation import VacationQueue
    from ...symbolic.numbers import decimal_text
    from ..response import tails

    T, P = request.wait_time, request.wait_probability

    def model_at(load):
        return VacationQueue.from_values({**values, "load": load})

    from ..consumers import load as consumer

    def tail(load):
        return tails(consumer(model_at(load), "response")(model_at(load))["wait"], [T], digits,
                     option="target-wait-tail")[0][0]

    def meets(load) -> bool:
        with mpmath.workdps((digits or 17) + 10):
            return mpmath.mpf(tail(load)) <= mpmath.mpf(P.numerator) / P.denominator

    lo, hi = F(1, 10**6), F(1) - F(1, 10**9)
    refusal = size_for_delay.supports(model_at(lo)) or consumer(model_at(lo), "response").supports(
        model_at(lo), frozenset({"wait_tail"}))  # before any work (the model is built here: the load is chosen)
    if refusal is not None:
        raise refusal.error(model_at(lo), "--target-wait-tail")
    if not meets(lo):
        lo_model = model_at(lo)
        remains = "the customers ahead in the own batch" + (
            " and the residual vacation" if lo_model.vacation is not None and
            lo_model.vacation_policy.value == "multiple" else "") + (
            " and the setup" if getattr(lo_model, "setup", None) is not None else "")
        raise ParameterError(f"target-wait-tail P = {decimal_text(P)} is unreachable: even at rho_bar = 1e-6, "
                             f"P(W > {decimal_text(T)}) = {float(tail(lo)):.6g} ({remains} remain at any load)")
    if meets(hi):
        raise ParameterError(f"target-wait-tail is met at every load below rho_bar = {float(hi):.12g} (the queue is "
                             "stable only for rho_bar < 1)")
    tol = F(1, 10 ** (10 if digits is None else digits + 2))
    while hi - lo > tol * hi:
        mid = (lo + hi) / 2
        mid = F(mpmath.nstr(mpmath.mpf(mid.numerator) / mid.denominator, 40)) if mid.denominator > 10**60 else mid
        if meets(mid):
            lo = mid
        else:
            hi = mid
    found = model_at(lo)
    record = found.evaluate(digits, wait_tail=[decimal_text(T)])

    def shown(x):
        return float(x) if digits is None else mpmath.mpf(x.numerator) / x.denominator

    with mpmath.workdps((digits or 17) + 10):
        return {"load": shown(lo), "rate": shown(found.rate), "wait_tail": record.response["wait_tail"][decimal_text(T)],
                "mean_wait": record.mean_wait, "next_load": shown(hi)}


# -- a smooth service with a kinked vacation law: smooth inversions at shifted times ------------------------
#
# Tails of the wait with a smooth service and a kinked vacation law (constant, uniform, empirical): smooth
# inversions at the shifted times t - (the vacation law's breakpoints).
#
# The transform of the wait factors as W(s) = W_b(s) J(s) V_r(s) (:mod:`qderive.symbolic.closed_forms.vacation_wait`):
# W = W_0 + R with W_0 (LST W_b J: the wait in the same queue without vacations) independent of the residual R of the
# non-serving period (LST V_r). With a smooth service (exponential, Erlang, gamma, hyperexponential, phase-type) W_0's
# transform has no ``exp(-s D)`` factor; the kinks of a constant, uniform or empirical vacation V sit in R alone,
# whose law is explicit: an atom a_0 at 0 and the density w_c S(x), S(x) = P(V > x) (multiple vacations a_0 = 0,
# w_c = 1 / f_1; single vacations a_0 = c_0 / (lambda f_1 + c_0), w_c = lambda / (lambda f_1 + c_0),
# c_0 = varphi(lambda); ``docs/theory/chapter2.md`` section 0). With P(W_0 > u) = 1 for u < 0::
#
#     P(W > t) = a_0 P(W_0 > t) + w_c int_0^oo S(x) P(W_0 > t - x) dx.
#
# S is linear on each piece [x_0, x_1] between its breakpoints (a constant d: 1 on [0, d); uniform [a, b]: 1, then
# (b - x) / (b - a); empirical: the weight of the points above x), S = alpha + beta x there. With the iterated tails
# Pi_1(u) = int_u^oo P(W_0 > y) dy and Pi_2(u) = int_u^oo Pi_1(y) dy, integration by parts in u = t - x gives each
# piece exactly::
#
#     int_{x_0}^{x_1} S(x) P(W_0 > t - x) dx = S(x_1) Pi_1(t - x_1) - S(x_0) Pi_1(t - x_0)
#                                              + beta (Pi_2(t - x_0) - Pi_2(t - x_1)),
#
# where for u <= 0 (known exactly) Pi_1(u) = m_1 - u, Pi_2(u) = m_2 / 2 - m_1 u + u^2 / 2 (m_k = E W_0^k), and for
# u > 0 each is a tail of a smooth law, inverted by the Euler algorithm under the policy of
# :mod:`qderive.numeric.response`: Pi_1(u) = m_1 P(E_1 > u), E_1 the stationary excess of W_0 (LST
# (1 - W_0(s)) / (m_1 s)), and Pi_2(u) = m_1 e_1 P(E_2 > u), E_2 that of E_1 (LST (1 - E_1(s)) / (e_1 s),
# e_1 = E E_1 = m_2 / (2 m_1)). No transform with an ``exp(-s D)`` factor is inverted.
#
# The terms have both signs (a short piece is a difference of nearly equal iterated tails): the sum's relative
# rounding is at most kappa times that of the inverted values, kappa = sum |coefficient x inverted value| / P(W > t),
# computed with the values themselves (an a-priori bound). D digits: the values to D + 3 digits (two inversion
# precisions that agree), accepted when kappa <= 10, else recomputed to D + 2 + log10 kappa digits. float64: the
# values by the float64 inversion with its self-check, accepted when no value escalated and kappa <= 10 (the values
# are within about 1e-10; the sum within 1e-9), else None (recomputed at 15 digits by the response module, with a
# note). The sojourn W + B is the same with W_0 + B (LST W_b J beta) in place of W_0.


def service_smooth(model) -> bool:
    import sympy as sp

    if numeric_transform(model.service):  # the lognormal: an integral of an analytic density, evaluated by its rule
        return True
    if service_atoms(model.service) is not None:  # a discrete law: kinks (no SymPy sum of 2000 exponentials)
        return False
    s = sp.Symbol("s")
    lst = model.service.lst(s)
    return not (any(s in e.free_symbols for e in lst.atoms(sp.exp)) or lst.has(sp.Integral))


def linear_pieces(law):
    """((x_0, x_1, S(x_0+), S(x_1-)), ...) exactly (Fractions) covering the support of S(x) = P(V > x), or None when
    S is not piecewise linear between its breakpoints: steps from ``survival_pieces`` (w 1{x < d}: constant,
    empirical), else ``survival`` checked linear at three interior points of each piece (uniform)."""
    import mpmath

    pieces = law.survival_pieces()
    if pieces and all(len(p) == 3 and p[1] == 0 and p[2] is not None for p in pieces):
        steps = [(Fraction(w), Fraction(d)) for w, _, d in pieces]
        ends = [Fraction(0)] + sorted({d for _, d in steps})
        out = []
        for x0, x1 in zip(ends[:-1], ends[1:]):
            level = sum((w for w, d in steps if d > x0), Fraction(0))
            out.append((x0, x1, level, level))
        return tuple(out)
    with mpmath.workdps(40):
        if law.survival(mpmath.mpf(1)) is None:
            return None
        ends = [Fraction(0)] + sorted(Fraction(k) for k in law.survival_kinks())
        out = []
        for x0, x1 in zip(ends[:-1], ends[1:]):
            xs = [x0 + (x1 - x0) * Fraction(i, 4) for i in (1, 2, 3)]
            v = [law.survival(mpmath.mpf(x.numerator) / x.denominator) for x in xs]
            if abs(v[0] - 2 * v[1] + v[2]) > mpmath.mpf(10) ** -30:
                return None
            s0, s1 = (_exact_rational(2 * v[0] - v[1]), _exact_rational(2 * v[2] - v[1]))  # at x_0 and x_1
            if abs(mpmath.mpf(s0.numerator) / s0.denominator + mpmath.mpf(s1.numerator) / s1.denominator
                   - 2 * v[1]) > mpmath.mpf(10) ** -30:
                return None
            out.append((x0, x1, s0, s1))
        if law.survival(mpmath.mpf(ends[-1].numerator) / ends[-1].denominator) != 0:  # the support ends there
            return None
    return tuple(out)


def _exact_rational(x) -> Fraction:
    """An mpf that is a rational number of small height (the value of a linear survival function at a rational
    point) as that Fraction."""
    return Fraction(str(x)).limit_denominator(10**12)


def shift_setup(model):
    """(the model without vacations, the linear pieces of P(V > x)) for a smooth service with a vacation law whose
    survival function is linear between breakpoints (constant, uniform, empirical); None otherwise."""
    from ...symbolic.cache import cached

    law = model.vacation
    if law is None or not cached(_key(model, "service_smooth"), lambda: service_smooth(model)):
        return None  # (cached: a warm process imports no SymPy)
    pieces = linear_pieces(law)
    if pieces is None:
        return None
    bare = dataclasses.replace(model, vacation=None, vacation_policy=type(model.vacation_policy)("multiple"))
    return bare, pieces


@functools.lru_cache(maxsize=16)
def excess_laws(bare, kind: str):
    """(the law of W_0 (or W_0 + B), its stationary excess E_1, E_1's stationary excess E_2, m_1, m_2)."""
    from ..response import ResponseLaw

    base = response_laws(bare)[kind]
    m1, m2 = base.moment_values(2, None)
    m1, m2 = Fraction(m1), Fraction(m2)
    e1 = m2 / (2 * m1)

    def excess(parent, mean):
        def make(ctx):
            F = parent.transform(ctx)
            m = ctx.num(mean)
            return lambda s: (1 - F(s)) / (m * s)

        return ResponseLaw(f"{base.name} excess", make, lambda ctx: ctx.num(0), base.moment_values)

    first = excess(base, m1)
    return base, first, excess(first, e1), m1, m2


def _terms(model, setup, kind: str, t: Fraction):
    """P(W > t) as a_0 P(W_0 > t) + w_c sum(coefficient x value): the list of (coefficient, law index, point) of the
    inverted terms (law 0: P(W_0 > u), 1: Pi_1(u) / m_1, 2: Pi_2(u) / (m_1 e_1)) and the exact part (Fractions)."""
    bare, pieces = setup
    _, _, _, m1, m2 = excess_laws(bare, kind)
    e1m1 = m2 / 2
    inverted, exact = {}, Fraction(0)

    def pi(order, u, coefficient):
        nonlocal exact
        if u <= 0:
            exact += coefficient * ((m1 - u) if order == 1 else (m2 / 2 - m1 * u + u * u / 2))
        else:  # equal points merged: a continuous S telescopes (uniform: S(a) Pi_1(t - a) cancels)
            key = (order, u)
            inverted[key] = inverted.get(key, 0) + coefficient * (m1 if order == 1 else e1m1)

    for x0, x1, s0, s1 in pieces:
        beta = (s1 - s0) / (x1 - x0)
        if s1:
            pi(1, t - x1, s1)
        if s0:
            pi(1, t - x0, -s0)
        if beta:
            pi(2, t - x0, beta)
            pi(2, t - x1, -beta)
    return [(c, order, u) for (order, u), c in inverted.items() if c], exact


def _plan(model, setup, kind, t, ctx):
    """(the inverted terms (coefficient, law index, point), the exact part, a_0, w_c) of P(W > t) (:func:`_terms`,
    a_0 P(W_0 > t) as law 0 at t when a_0 != 0)."""
    inverted, exact = _terms(model, setup, kind, t)
    with ctx:
        atom, weight = _residual(model, ctx)
    return inverted, exact, atom, weight


def _values(laws, keys, digits, kind):
    """{(law index, point): P(E > point)} for the ``keys``: float64 by the kernel's self-check without escalation
    (None when it fails), else to ``digits`` confirmed digits (:func:`qderive.numeric.response.tails`)."""
    from ..response import law_float64_tails, tails

    values = {}
    for order in (0, 1, 2):
        pts = sorted({u for o, u in keys if o == order})
        if not pts:
            continue
        if digits is None:
            got, why = law_float64_tails(laws[order], pts)
            if why is not None:
                return None
        else:
            got = tails(laws[order], pts, digits, option=f"{kind}_tail")[0]
        values.update({(order, u): v for u, v in zip(pts, got)})
    return values


def _combine(plan, t, values, digits):
    """(P(W > t), kappa) from the inverted values (module docstring)."""
    import mpmath

    inverted, exact, atom, weight = plan
    with mpmath.workdps((digits or 15) + 10):

        def num(q):
            return mpmath.mpf(q.numerator) / q.denominator

        a0, wc = mpmath.mpf(atom), mpmath.mpf(weight)
        parts = [(a0 * mpmath.mpf(values[(0, t)]))] if atom != 0 else []
        parts += [wc * num(c) * mpmath.mpf(values[(o, u)]) for c, o, u in inverted]
        total = mpmath.fsum(parts) + wc * num(exact)
        if not total > 0:
            return total, math.inf
        kappa = float(mpmath.fsum(abs(p) for p in parts) / total)
        return +total, kappa


def _keys(plan, t):
    return ([(0, t)] if plan[2] != 0 else []) + [(o, u) for _, o, u in plan[0]]


def shift_tails(model, setup, kind: str):
    """The law's own ``tails`` (:class:`~qderive.numeric.response.ResponseLaw`): P(W > t) (``kind`` "wait") or
    P(W + B > t) ("sojourn") by the shifted inversions of the module docstring; float64 gives None where it must
    escalate (all points' values by one vectorised inversion per law; per point when that fails)."""
    from ...symbolic import limits as _limits
    from ..backend import FLOAT64, mp_context

    laws = excess_laws(setup[0], kind)

    def float64(ts):
        plans = {t: _plan(model, setup, kind, t, FLOAT64) for t in ts}
        values = _values(laws, [k for t in ts for k in _keys(plans[t], t)], None, kind)
        out = {}
        for t in ts:
            got = values if values is not None else _values(laws, _keys(plans[t], t), None, kind)
            if got is None:
                out[t] = None
                continue
            total, kappa = _combine(plans[t], t, got, None)
            out[t] = min(1.0, float(total)) if kappa <= 10 else None
        return out

    def one_mp(t, digits):
        work = digits + 3
        plan = _plan(model, setup, kind, t, mp_context(digits + 10))
        while True:
            total, kappa = _combine(plan, t, _values(laws, _keys(plan, t), work, kind), work)
            need = digits + 2 + max(0, math.ceil(math.log10(kappa))) if math.isfinite(kappa) else work + 10
            if need <= work:
                return total, work
            work = _limits.check("inversion_digits", need, f"P({kind} > {float(t):.6g}) is a difference of nearly "
                                 f"equal iterated tails: {digits} digits of it need {need} digits of each")

    def tails(ts, digits):
        ts = [Fraction(t) for t in ts]
        positive = [t for t in ts if t > 0]
        if digits is None:
            got = float64(positive) if positive else {}
            return [got[t] if t > 0 else _at_zero(model, setup, kind, None) for t in ts], None
        out, working = [], 0
        for t in ts:
            if t <= 0:
                out.append(_at_zero(model, setup, kind, digits))
                continue
            value, w = one_mp(t, digits)
            out.append(value)
            working = max(working, w)
        return out, (working or None)

    return tails


def _at_zero(model, setup, kind, digits):
    """P(W > 0) = 1 - a_0 P(W_0 = 0) (the residual's atom times W_0's); the sojourn: 1."""
    from ..backend import FLOAT64, mp_context
    if kind == "sojourn":
        return 1.0 if digits is None else mp_context(digits + 10).num(1)
    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    with ctx:
        atom, _ = _residual(model, ctx)
        value = 1 - atom * excess_laws(setup[0], "wait")[0].p_zero(ctx)
        return float(value) if digits is None else +value
