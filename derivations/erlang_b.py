"""Erlang B: the M/M/n/n window model of an SCP front end (Wang & Liao, seed 003, eqs. (1)-(6)).

``qderive derive erlang-b`` states the stationary law of the busy windows (1), the blocking
(1'), the stable recursion (R) and its complement (R') (``docs/theory/other-models.md`` section D),
the carried rate (2), the busy windows (3), Little's law (4), the two continuations of
:mod:`qderive.numeric.kernels.erlang` (the pure product below the cut (P), the recursion
unrolled from the top for rho >= 2n (T)) and the multi-service normalisation (5), (6).

Every step is evaluated *as displayed* by ``qderive verify erlang-b`` with numbers of an
independent computation: the birth-death CTMC of the windows built from the model definition
(:mod:`qderive.numeric.oracles.ctmc`, solved by GTH at the working precision), exact rational
direct sums of eq. (1) (Fractions, no recursion), and the package's own results
(``ErlangB.evaluate(digits)``) where a relation says what the package computes. The checks add
exact identities (SymPy, n = 1..10), the incomplete-gamma identity at n = 10^4, the inverse
problems against exact brute force, and float64 against mpmath.

Command line (a contract)::

    qderive eval erlang-b --servers 10 --load 5 [--holding-time 0.2] [--digits 50] --json
    qderive size erlang-b --load 8.108 --target-blocking 0.01 --json      # {"servers": 15, ...}
    qderive size erlang-b --servers 15 --target-blocking 0.01 --json      # {"load": 8.1080..., ...}
    qderive codegen erlang-b --measure blocking_probability --out eb.py

``python -m qderive.derivations.erlang_b`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import sympy as sp

from ..symbolic.capabilities import declare
from ..symbolic.models.erlang_b import ErlangB, ServiceMix
from .framework import (
    Check,
    Derivation,
    Step,
    agreement_digits,
    exact_identity,
    relation_check,
)

__all__ = ["derivation", "direct_blocking", "birth_death_law", "RECURSIONS", "erlang_b_recursion"]

SOURCE = ("Wang Yulong, Liao Jianxin, \"The study on the mobile intelligent network SCP overload control in "
          "multi-service environment\" (seed 003); docs/theory/other-models.md section D")

# -- symbols --------------------------------------------------------------------------------------------
rho, lam, mu = sp.symbols("rho lambda mu", positive=True)
n, k, l, i, m, j = sp.symbols("n k l i m j", integer=True, nonnegative=True)
p = sp.IndexedBase("p")
B = sp.Function("B")
lam_e, N_busy, w_s, R = sp.symbols("lambda_e N w_s R", positive=True)
S, ws, alpha, S_star = sp.IndexedBase("S"), sp.IndexedBase("w_s"), sp.IndexedBase("alpha"), sp.IndexedBase("S^*")
k0 = sp.Symbol("k_0", integer=True, positive=True)  # where the cut is reached in (P)


# -- the reference recursion of the LaTeX export ----------------------------------------------------------


def erlang_b_recursion(rho, n):
    r"""(R): $B(0) = 1$, $B(k) = \rho B(k-1) / \bigl(k + \rho B(k-1)\bigr)$ for $k = 1, \dots, n$."""
    b = 1
    for k in range(1, n + 1):
        b = rho * b / (k + rho * b)
    return b


RECURSIONS = (("The recursion (R) of Erlang's B formula", erlang_b_recursion),)


# -- independent computations -----------------------------------------------------------------------------


def direct_blocking(nv: int, r: F) -> F:
    """B(n, rho) = (rho^n/n!) / sum_{j<=n} rho^j/j! as an exact Fraction: eq. (1) at k = n, summed
    term by term (no recursion)."""
    term, total = F(1), F(1)
    for jv in range(1, nv + 1):
        term = term * r / jv
        total += term
    return term / total


def birth_death_law(nv: int, r: F, ctx):
    """p_0..p_n from the CTMC of the busy windows built from the model definition (arrivals at rate
    rho take a free window, each busy window is released at rate 1), solved by GTH in ``ctx``."""
    from ..numeric.oracles.ctmc import build

    def moves(kv):
        if kv < nv:
            yield kv + 1, r          # a BEGIN message takes a window
        if kv > 0:
            yield kv - 1, F(kv)      # each busy window is released at rate mu = 1

    chain = build(0, moves)
    with ctx:
        pi = chain.stationary(ctx)
    return [pi[chain.index[s]] for s in range(nv + 1)]


def _mp(q: F):
    return mpmath.mpf(q.numerator) / q.denominator


@functools.lru_cache(maxsize=16)
def _chain(nv: int, r: F, digits: int):
    from ..numeric.backend import mp_context

    return birth_death_law(nv, r, mp_context(digits + 10))


#: the displayed relations are evaluated at this point (n, rho) and holding time 1/mu
_N, _RHO, _H = 12, F(7), F(1, 5)


@functools.lru_cache(maxsize=256)
def _engine(nv, r, digits, h=None):
    return ErlangB(nv, r, h).evaluate(digits)


# -- displayed relations ----------------------------------------------------------------------------------

REL_1 = sp.Eq(p[k], (rho**k / sp.factorial(k)) / sp.Sum(rho**l / sp.factorial(l), (l, 0, n)))
REL_1B = sp.Eq(B(n), p[n])
REL_R = sp.Eq(B(n), rho * B(n - 1) / (n + rho * B(n - 1)))
REL_RC = sp.Eq(1 - B(n), n / (n + rho * B(n - 1)))
REL_2 = sp.Eq(lam_e, lam * (1 - p[n]))
REL_3 = sp.Eq(N_busy, sp.Sum(k * p[k], (k, 1, n)))
REL_3B = sp.Eq(sp.Sum(k * p[k], (k, 1, n)), lam_e / mu)
REL_4 = sp.Eq(w_s, N_busy / lam_e)
REL_4B = sp.Eq(N_busy / lam_e, 1 / mu)
REL_P = sp.Eq(sp.log(B(n)), sp.log(B(k0 - 1)) + (n - k0 + 1) * sp.log(rho)
              - sp.log(sp.factorial(n) / sp.factorial(k0 - 1)))
REL_T = sp.Eq(1 / B(n), sp.Sum(sp.factorial(n) / (sp.factorial(n - m) * rho**m), (m, 0, n)))
REL_5 = sp.Eq(sp.Sum(S[i] * ws[i], (i, 1, m)), R)
REL_6 = sp.Eq(alpha[i, k], ws[i] / ws[k])
REL_6B = sp.Eq(S_star[k] * ws[k], R)


def _bind_1(digits):
    return {p: _chain(_N, _RHO, digits), rho: _mp(_RHO), n: _N}, {k: range(0, _N + 1)}


def _bind_1b(digits):
    return {B: lambda nv: _engine(nv, _RHO, digits).blocking_probability, p: _chain(_N, _RHO, digits), n: _N}, {}


def _exact_B(r):
    return lambda nv: direct_blocking(int(nv), r)


def _bind_R(digits):
    return {B: _exact_B(F(53, 2)), rho: _mp(F(53, 2))}, {n: range(1, 41)}


def _with_rates(digits):
    rec = _engine(_N, _RHO, digits, _H)
    pi = _chain(_N, _RHO, digits)
    lam_v = _mp(_RHO / _H)
    return rec, pi, lam_v


def _bind_2(digits):
    rec, pi, lam_v = _with_rates(digits)
    return {lam_e: rec.carried_rate, lam: lam_v, p: pi, n: _N}, {}


def _bind_3(digits):
    rec, pi, _ = _with_rates(digits)
    return {N_busy: rec.mean_busy_windows, p: pi, n: _N}, {}


def _bind_3b(digits):
    rec, pi, _ = _with_rates(digits)
    return {lam_e: rec.carried_rate, mu: 1 / _mp(_H), p: pi, n: _N}, {}


def _chain_rates(digits):
    _, pi, lam_v = _with_rates(digits)
    return mpmath.fsum(kv * pi[kv] for kv in range(_N + 1)), lam_v * (1 - pi[_N])


def _bind_4(digits):
    rec, _, _ = _with_rates(digits)
    N_v, le = _chain_rates(digits)
    return {w_s: rec.mean_response_time, N_busy: N_v, lam_e: le}, {}


def _bind_4b(digits):
    N_v, le = _chain_rates(digits)
    return {N_busy: N_v, lam_e: le, mu: 1 / _mp(_H)}, {}


def _bind_P(digits):
    """rho = 5, n = 60 + 2 digits; k_0 the first k with rho B(k-1) <= 10^-(digits+10) (k - rho) (the mpmath cut)."""
    r, nv = F(5), 60 + 2 * digits
    cut = F(1, 10 ** (digits + 10))
    kv0 = next(kv for kv in range(1, nv + 1) if r * direct_blocking(kv - 1, r) <= cut * (kv - r))
    return {B: lambda x: _engine(int(x), r, digits).blocking_probability if int(x) == nv else
            direct_blocking(int(x), r), rho: _mp(r), n: nv, k0: kv0}, {}


def _bind_T(digits):
    """rho >= 2n: the package's B (the recursion unrolled from the top) vs the displayed sum."""
    r = F(101, 2)
    return {B: lambda x: _engine(int(x), r, digits).blocking_probability, rho: _mp(r)}, {n: (1, 2, 7, 25)}


_MIX = ServiceMix((1, 2, F(1, 2)), (F(1, 10), F(3, 10), F(1, 4)), 14, reference=2)


def _bind_5(digits):
    S_ = dict(enumerate(_MIX.admitted_rates(), start=1))
    return {S: S_, ws: dict(enumerate(_MIX.response_times, start=1)), R: _mp(F(_MIX.resource)), m: 3}, {}


def _bind_6(digits):
    a = {(iv, 2): c for iv, c in enumerate(_MIX.equivalence_coefficients(), start=1)}
    return {alpha: a, ws: dict(enumerate(_MIX.response_times, start=1)), k: 2}, {i: range(1, 4)}


def _bind_6b(digits):
    return {S_star: {2: _MIX.reference_capacity()}, ws: dict(enumerate(_MIX.response_times, start=1)),
            R: _mp(F(_MIX.resource)), k: 2}, {}


# -- checks -----------------------------------------------------------------------------------------------
_SMALL_N = range(1, 11)


def _p_direct(kv: int, nv: int, r=rho):
    """p_k of (1) for concrete k, n as a rational function of rho."""
    return (r**kv / sp.factorial(kv)) / sum(r**jv / sp.factorial(jv) for jv in range(nv + 1))


def _check_recursion_exact(digits):
    b = sp.Integer(1)
    for nv in _SMALL_N:
        b = sp.cancel(rho * b / (nv + rho * b))
        if not exact_identity(b, _p_direct(nv, nv)):
            return False, None, f"(R) differs from eq. (1) at n = {nv}"
    return True, math.inf, "B(n) by (R) equals p_n of (1) as rational functions of rho, n = 1..10"


def _check_moments_exact(digits):
    for nv in _SMALL_N:
        lhs = sum(kv * _p_direct(kv, nv) for kv in range(1, nv + 1))
        if not exact_identity(lhs, rho * (1 - _p_direct(nv, nv))):
            return False, None, f"eq. (3) fails at n = {nv}"
        prev = _p_direct(nv - 1, nv - 1) if nv > 1 else sp.Integer(1)
        if not exact_identity(1 - _p_direct(nv, nv), nv / (nv + rho * prev)):
            return False, None, f"(R') fails at n = {nv}"
    return True, math.inf, "sum k p_k = rho (1 - p_n) and 1 - B(n) = n/(n + rho B(n-1)) exactly, n = 1..10"


#: (n, rho): moderate; heavy load (the top sum, rho >= 2n); light load (the cut and log-gamma); rho << 1
_POINTS = ((10, F(5)), (50, F(81, 2)), (200, F(1801, 10)), (30, F(1, 7)), (20, F(101, 2)), (300, F(7)),
           (40, F(1, 10**30)))


def _check_direct_sum(digits):
    worst = math.inf
    for nv, r in _POINTS:
        ref = direct_blocking(nv, r)
        rec = _engine(nv, r, digits)
        with mpmath.workdps(digits + 20):
            worst = min(worst, agreement_digits(rec.blocking_probability, _mp(ref)),
                        agreement_digits(rec.carried_load, _mp(r * (1 - ref))),
                        agreement_digits(rec.log10_blocking_probability, mpmath.log10(_mp(ref))))
    return worst >= digits, worst, f"B, carried load, log10 B at {len(_POINTS)} points (all three regimes) vs " \
                                   "exact direct sums of (1)"


def _check_incomplete_gamma(digits):
    worst = math.inf
    with mpmath.workdps(digits + 20):
        for nv, r in ((10**4, F(9500)), (10**4, F(20001, 2))):
            rr = _mp(r)
            q = mpmath.gammainc(nv + 1, rr, regularized=True)
            ref = mpmath.exp(nv * mpmath.log(rr) - rr - mpmath.loggamma(nv + 1)) / q
            worst = min(worst, agreement_digits(_engine(nv, r, digits).blocking_probability, ref))
    return worst >= digits, worst, "n = 10^4, rho = 9500 and 10000.5 vs B = rho^n e^-rho / n! / Q(n+1, rho)"


def _check_inverse(digits):
    from ..numeric.engines.erlang_b import load_for_blocking, smallest_servers

    for r, t in ((F(8108, 1000), F(1, 100)), (F(3), F(1, 1000)), (F(1, 2), F(1, 10**6)), (F(2), F(1, 10**400))):
        nv = 1
        while direct_blocking(nv, r) > t:
            nv += 1
        got = smallest_servers(r, t, digits)
        if got != nv:
            return False, None, f"smallest servers at rho = {r}, target {t}: {got}, brute force {nv}"
    worst = math.inf
    for nv, t in ((10, F(1, 100)), (100, F(1, 1000)), (3, F(1, 2))):
        load = load_for_blocking(nv, t, digits)
        man, ex = load.man_exp
        exact_load = F(man) * F(2) ** ex
        with mpmath.workdps(digits + 20):
            worst = min(worst, agreement_digits(_mp(direct_blocking(nv, exact_load)), _mp(t)))
    return worst >= digits - 3, worst, "smallest servers vs exact brute force; B(n, rho*) = target by the direct sum"


def _check_multiservice(digits):
    s1, s2, s3, w1, w2, w3, Rv = sp.symbols("s1 s2 s3 w1 w2 w3 R", positive=True)
    mix = ServiceMix((s1, s2, s3), (w1, w2, w3), Rv, reference=2)
    S_ = mix.admitted_rates()
    ok = exact_identity(sum(a * b for a, b in zip(S_, (w1, w2, w3))), Rv)
    ok &= exact_identity(S_[0] / S_[2], s1 / s3)
    ok &= exact_identity(mix.equivalent_reference_rate(), mix.reference_capacity())
    ok &= exact_identity(mix.reference_capacity() * w2, Rv)
    return ok, math.inf, "sum S_i ws_i = R, the ratios kept, sum alpha_ik S_i = S*_k (symbolic, m = 3)"


def _check_float64(digits):
    """float64 vs the policy at ``digits``: relative error at most a few n eps, also for n = 10^5."""
    worst = math.inf
    for nv, r in ((100, F(84)), (10**5, F(10**5)), (10**5, F(1)), (1, F(10**5)), (10**4, F(3 * 10**4))):
        f64, ref = _engine(nv, r, None), _engine(nv, r, digits)
        worst = min(worst, agreement_digits(mpmath.mpf(f64.carried_load), ref.carried_load),
                    agreement_digits(mpmath.mpf(f64.log10_blocking_probability), ref.log10_blocking_probability))
        worst = min(worst, agreement_digits(mpmath.mpf(f64.blocking_probability), ref.blocking_probability))
    return worst >= 10, worst, "float64 (escalated by the policy where B underflows) vs mpmath, up to n = 10^5"


@functools.lru_cache(maxsize=1)
@declare(independent={name: "the steps are in symbols (n, rho, h)" for name in ("servers", "load", "holding_time")})
def derivation() -> Derivation:
    """The registered derivation ``erlang-b``."""
    cite = "[@wang_liao_scp, eq. ({})]".format
    steps = (
        Step("(1)", r"The stationary law of the number $k$ of busy windows of $M/M/n/n$, with $\rho = \lambda/\mu$",
             REL_1, cite(1),
             check=relation_check(REL_1, _bind_1, describe=" with the GTH law of the birth-death CTMC")),
        Step("(1')", "The blocking probability: a BEGIN message is refused when all $n$ windows are busy (Erlang's "
             "B formula)", REL_1B, "[@wang_liao_scp, text after eq. (1)]",
             check=relation_check(REL_1B, _bind_1b, describe=": the package's B vs the CTMC")),
        Step("(R)", "The stable recursion, started at $B(0) = 1$ (never from factorials)", REL_R, "",
             provenance="docs/theory/other-models.md section D",
             check=relation_check(REL_R, _bind_R, describe=" with exact direct sums of (1)")),
        Step("(R')", "Its complement, without subtraction (from (R))", REL_RC, "",
             check=relation_check(REL_RC, _bind_R, describe=" with exact direct sums of (1)")),
        Step("(P)", r"Below the cut $\rho B(k_0 - 1) \le \varepsilon (k_0 - \rho)$ the recursion is the pure "
             r"product of the ratios $\rho/j$, evaluated with logarithms and the log-gamma function (in double "
             r"precision $\varepsilon$ is the smallest normal number)", REL_P, "",
             provenance="numeric/kernels/erlang.py",
             check=relation_check(REL_P, _bind_P, describe=": the package's B(n, 5) vs exact direct sums")),
        Step("(T)", r"For $\rho \ge 2n$, (R) unrolled from the top, $1/B(n) = 1 + (n/\rho)/B(n-1)$: the terms fall "
             "at least by half", REL_T, "",
             check=relation_check(REL_T, _bind_T, describe=": the package's B at rho = 50.5")),
        Step("(2)", "The carried (admitted) rate", REL_2, cite(2),
             check=relation_check(REL_2, _bind_2, describe=": the package's lambda_e vs the CTMC")),
        Step("(3)", "The mean number of busy windows", REL_3, cite(3),
             check=relation_check(REL_3, _bind_3, describe=": the package's N vs the CTMC")),
        Step("(3')", "It equals the carried rate over the service rate", REL_3B, cite(3),
             check=relation_check(REL_3B, _bind_3b)),
        Step("(4)", "The response time, by Little's law", REL_4, cite(4),
             check=relation_check(REL_4, _bind_4, describe=": the package's w_s vs the CTMC's N / lambda_e")),
        Step("(4')", "It is the mean holding time", REL_4B, cite(4), check=relation_check(REL_4B, _bind_4b)),
        Step("(5)", r"The $m$ services share the resource $R$; the operator fixes the ratios $S_1 : \dots : S_m$",
             REL_5, cite(5),
             check=relation_check(REL_5, _bind_5, describe=" with ServiceMix.admitted_rates")),
        Step("(6)", r"The equivalence coefficient: a call of service $i$ counts as $\alpha_{i,k}$ calls of the "
             "reference service $k$", REL_6, cite(6), check=relation_check(REL_6, _bind_6)),
        Step("(6')", "The largest rate of the reference service alone", REL_6B, "[@wang_liao_scp, text after eq. (6)]",
             check=relation_check(REL_6B, _bind_6b)),
    )
    checks = (
        Check("(R) = (1) at $k = n$, exact, $n = 1, \\dots, 10$", _check_recursion_exact, "(R)"),
        Check("(3), (R'): busy windows and complement, exact", _check_moments_exact, "(3)"),
        Check("$B$, carried load, $\\log_{10} B$ vs exact direct sums (three regimes)", _check_direct_sum, "(1)"),
        Check("$n = 10^4$ vs the incomplete-gamma identity", _check_incomplete_gamma, "(R)"),
        Check("inverse problems vs exact brute force", _check_inverse, "(R)"),
        Check("(5), (6) multi-service normalisation, symbolic", _check_multiservice, "(6)"),
        Check("float64 vs mpmath up to $n = 10^5$", _check_float64, "(R)"),
    )
    return Derivation(
        name="erlang-b",
        title="The Erlang B window model of an SCP front end ($M/M/n/n$)",
        source="[@wang_liao_scp, eqs. (1)--(6)]",
        provenance=("docs/theory/other-models.md section D", __name__),
        steps=steps,
        checks=checks,
        notes=("Erlang's B formula is computed by the recursion (R), whose steps are ratios of positive numbers; "
               r"below the cut it continues as the pure product (P) in logarithms, and for $\rho \ge 2n$ as the "
               "sum (T).",),
        recursions=RECURSIONS,
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
