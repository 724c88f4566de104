"""Erlang B: the M/M/n/n window model of an SCP front end (Wang & Liao, seed 003, eqs. (1)-(6)).

The derivation (``qderive derive erlang-b``) states the stationary law of the busy
windows (1), the carried rate (2), the mean number of busy windows (3), the response
time by Little's law (4), the stable recursion for B(n, rho), and the multi-service
normalisation (5), (6); ``qderive verify erlang-b`` checks them exactly (symbolic
identities for n = 1..10) and at ``digits`` against computations that share no code
with :mod:`qderive.numeric.erlang`: a direct sum over exact rationals, a GTH solve of
the birth-death chain, and the incomplete-gamma identity at n = 10^4.

Command line (a contract)::

    qderive eval erlang-b --servers 10 --load 5 [--holding-time 0.2] [--digits 50] --json
    qderive size erlang-b --load 8.108 --target-blocking 0.01 --json      # {"servers": 15, ...}
    qderive size erlang-b --servers 15 --target-blocking 0.01 --json      # {"load": 8.1080..., ...}

``python -m qderive.derivations.erlang_b`` prints the derivation and runs its checks.
"""

from __future__ import annotations

import argparse
import math

import mpmath
import sympy as sp

from qderive.numeric import erlang as E
from qderive.numeric.backend import backend_for, mp_backend
from qderive.symbolic._exact import ParameterError

from .cli_args import parse_number
from .command import Evaluation, ModelCommand
from .framework import Check, Derivation, Step, agreement_digits, exact_identity

__all__ = ["COMMAND", "ErlangBCommand", "derivation", "direct_blocking"]

SOURCE = (
    "Wang Yulong, Liao Jianxin, \"The study on the mobile intelligent network SCP overload control "
    "in multi-service environment\" (seed 003); spec/other-models.md section D"
)

# -- symbols --------------------------------------------------------------------------
rho, lam, mu = sp.symbols("rho lambda mu", positive=True)
n, k, l, i, m = sp.symbols("n k l i m", integer=True, positive=True)
p = sp.IndexedBase("p")
B = sp.Function("B")
lam_e, N_busy, w_s, R = sp.symbols("lambda_e N w_s R", positive=True)
S, ws, alpha = sp.IndexedBase("S"), sp.IndexedBase("w_s"), sp.IndexedBase("alpha")
S_star = sp.IndexedBase("S^*")
kk = sp.Symbol("k", integer=True, positive=True)  # reference service index in (6)


def _p_direct(kv: int, nv: int, r=rho):
    """p_k of (1) for concrete k, n (a rational function of rho)."""
    return (r**kv / sp.factorial(kv)) / sum(r**j / sp.factorial(j) for j in range(nv + 1))


def direct_blocking(nv: int, r: sp.Rational) -> sp.Rational:
    """B(n, rho) = 1 / sum_{j=0}^n n!/(j! rho^(n-j)) as an exact rational (eq. (1) at k = n).

    Independent of the recursion: a plain sum of exact terms (slow for large n).
    """
    term = sp.Integer(1)  # n!/(n! rho^0)
    total = sp.Integer(0)
    for j in range(nv, -1, -1):
        total += term
        # next term: n!/((j-1)! rho^(n-j+1)) = term * j / rho
        term = term * j / r
    return 1 / total


def _steps() -> tuple[Step, ...]:
    lsum = sp.Sum(rho**l / sp.factorial(l), (l, 0, n))
    return (
        Step("(1)", "stationary law of the number k of busy windows of M/M/n/n, rho = lambda/mu",
             sp.Eq(p[k], (rho**k / sp.factorial(k)) / lsum), "Wang & Liao, eq. (1)"),
        Step("(1')", "blocking: a BEGIN message is refused when all n windows are busy (Erlang B)",
             sp.Eq(B(n), p[n]), "Wang & Liao, text after eq. (1)"),
        Step("(R)", "stable recursion for Erlang B, B(0) = 1 (never from factorials)",
             sp.Eq(B(n), rho * B(n - 1) / (n + rho * B(n - 1))), "spec/other-models.md section D"),
        Step("(R')", "its complement without subtraction",
             sp.Eq(1 - B(n), n / (n + rho * B(n - 1))), "follows from (R)"),
        Step("(2)", "carried (admitted) rate", sp.Eq(lam_e, lam * (1 - p[n])), "Wang & Liao, eq. (2)"),
        Step("(3)", "mean number of busy windows",
             sp.Eq(N_busy, sp.Sum(k * p[k], (k, 1, n))), "Wang & Liao, eq. (3)"),
        Step("(3')", "... equals the carried rate over the service rate",
             sp.Eq(sp.Sum(k * p[k], (k, 1, n)), lam_e / mu), "Wang & Liao, eq. (3)"),
        Step("(4)", "response time by Little's law", sp.Eq(w_s, N_busy / lam_e), "Wang & Liao, eq. (4)"),
        Step("(4')", "... which is the mean holding time", sp.Eq(N_busy / lam_e, 1 / mu), "Wang & Liao, eq. (4)"),
        Step("(5)", "m services share the resource R; the operator fixes S_1 : ... : S_m",
             sp.Eq(sp.Sum(S[i] * ws[i], (i, 1, m)), R), "Wang & Liao, eq. (5)"),
        Step("(6)", "equivalence coefficient: one call of service i = alpha_ik calls of reference service k",
             sp.Eq(alpha[i, kk], ws[i] / ws[kk]), "Wang & Liao, eq. (6)"),
        Step("(6')", "largest rate of the reference service alone",
             sp.Eq(S_star[kk] * ws[kk], R), "Wang & Liao, text after eq. (6)"),
    )


# -- checks ---------------------------------------------------------------------------
_SMALL_N = range(1, 11)


def _check_recursion_exact(digits: int):
    """(R) == (1) at k = n as rational functions of rho, n = 1..10 (exact)."""
    b = sp.Integer(1)
    for nv in _SMALL_N:
        b = sp.cancel(rho * b / (nv + rho * b))
        if not exact_identity(b, _p_direct(nv, nv)):
            return False, None, f"recursion differs from eq. (1) at n = {nv}"
    return True, None, "B(n) by (R) equals p_n of (1) exactly, n = 1..10"


def _check_busy_windows_exact(digits: int):
    """(3'): sum_k k p_k = rho (1 - p_n), i.e. lambda_e/mu with lambda = rho mu (exact, n = 1..10)."""
    for nv in _SMALL_N:
        lhs = sum(kv * _p_direct(kv, nv) for kv in range(1, nv + 1))
        if not exact_identity(lhs, rho * (1 - _p_direct(nv, nv))):
            return False, None, f"eq. (3) fails at n = {nv}"
        # Little (4'): N / lambda_e = 1/mu with lambda = rho mu
        lam_e_v = rho * mu * (1 - _p_direct(nv, nv))
        if not exact_identity(lhs / lam_e_v, 1 / mu):
            return False, None, f"eq. (4) fails at n = {nv}"
    return True, None, "sum k p_k = rho (1 - p_n) and N/lambda_e = 1/mu exactly, n = 1..10"


def _check_complement_exact(digits: int):
    """(R'): 1 - B(n) = n/(n + rho B(n-1)) exactly, n = 1..10."""
    for nv in _SMALL_N:
        prev = _p_direct(nv - 1, nv - 1) if nv > 1 else sp.Integer(1)
        if not exact_identity(1 - _p_direct(nv, nv), nv / (nv + rho * prev)):
            return False, None, f"(R') fails at n = {nv}"
    return True, None, "1 - B(n) = n/(n + rho B(n-1)) exactly, n = 1..10"


_POINTS = ((10, sp.Integer(5)), (50, sp.Rational(81, 2)), (200, sp.Rational(1801, 10)), (30, sp.Rational(1, 7)))


def _check_direct_sum(digits: int):
    """Recursion in mpmath vs the exact rational direct sum, at several (n, rho)."""
    bk = mp_backend(digits + 10)
    worst = math.inf
    with bk:
        for nv, r in _POINTS:
            ref = direct_blocking(nv, r)
            got = E.erlang_b(nv, r, bk)
            refv = mpmath.mpf(ref.p) / ref.q
            worst = min(worst, agreement_digits(got, refv))
            car = E.carried_load(nv, r, bk)
            worst = min(worst, agreement_digits(car, bk.num(r * (1 - ref))))
    return worst >= digits, worst, f"B and carried load at {len(_POINTS)} points vs exact direct sums"


def _check_gth(digits: int):
    """p_n and the mean busy windows vs a GTH solve of the birth-death generator (n = 30, rho = 25)."""
    from qderive.numeric.chains import stationary_gth

    nv, lam_v, mu_v = 30, sp.Integer(25), sp.Integer(1)
    size = nv + 1
    Q = [[sp.Integer(0)] * size for _ in range(size)]
    for s in range(nv):
        Q[s][s + 1] = lam_v          # an arrival takes a window
        Q[s + 1][s] = (s + 1) * mu_v  # each busy window is released at rate mu
    bk = mp_backend(digits + 10)
    with bk:
        pi = stationary_gth(Q, bk)
        mean_busy = bk.dot(pi, bk.array(list(range(size))))
        d1 = agreement_digits(E.erlang_b(nv, lam_v / mu_v, bk), pi[nv])
        d2 = agreement_digits(E.carried_load(nv, lam_v / mu_v, bk), mean_busy)
    worst = min(d1, d2)
    return worst >= digits, worst, "B(30, 25) and N = sum k p_k vs GTH of the birth-death chain"


def _check_incomplete_gamma(digits: int):
    """n = 10^4: B = rho^n e^-rho / n! / Q(n+1, rho) (regularised upper incomplete gamma)."""
    work = digits + 10
    bk = mp_backend(work)
    worst = math.inf
    with bk:
        for nv, r in ((10**4, sp.Integer(9500)), (10**4, sp.Rational(20001, 2))):
            rr = bk.num(r)
            q = mpmath.gammainc(nv + 1, rr, regularized=True)
            ref = mpmath.exp(nv * mpmath.log(rr) - rr - mpmath.loggamma(nv + 1)) / q
            worst = min(worst, agreement_digits(E.erlang_b(nv, r, bk), ref))
    return worst >= digits, worst, "n = 10^4, rho = 9500 and 10000.5 vs the incomplete-gamma identity"


def _check_inverse(digits: int):
    """smallest_servers vs exact brute force; B(n, load_for_blocking(n, t)) = t."""
    for r, t in ((sp.Rational(8108, 1000), sp.Rational(1, 100)), (sp.Integer(3), sp.Rational(1, 1000)),
                 (sp.Rational(1, 2), sp.Rational(1, 10**6))):
        nv = 1
        while direct_blocking(nv, r) > t:
            nv += 1
        bk = mp_backend(digits + 10)
        with bk:
            got = E.smallest_servers(r, t, bk)
        if got != nv:
            return False, None, f"smallest_servers({r}, {t}) = {got}, brute force {nv}"
    worst = math.inf
    bk = mp_backend(digits + 10)
    with bk:
        for nv, t in ((10, sp.Rational(1, 100)), (100, sp.Rational(1, 1000)), (3, sp.Rational(1, 2))):
            load = E.load_for_blocking(nv, t, bk)
            # evaluate B at the returned load with the independent direct sum (exact rational of the mpf)
            man, ex = load.man_exp
            exact_load = sp.Integer(man) * sp.Integer(2) ** ex
            val = direct_blocking(nv, exact_load)
            worst = min(worst, agreement_digits(mpmath.mpf(val.p) / val.q, bk.num(t)))
    return worst >= digits - 3, worst, "sizing vs exact brute force; B(n, rho*) = target by the direct sum"


def _check_multiservice(digits: int):
    """(5), (6): sum_i alpha_ik S_i = S*_k for symbolic ratios and response times (m = 3)."""
    s1, s2, s3, w1, w2, w3, Rv = sp.symbols("s1 s2 s3 w1 w2 w3 R", positive=True)
    mix = E.ServiceMix((s1, s2, s3), (w1, w2, w3), Rv, reference=2)
    S_ = mix.admitted_rates()
    ok = exact_identity(sum(a * b for a, b in zip(S_, (w1, w2, w3))), Rv)  # (5)
    ok &= exact_identity(S_[0] / S_[2], s1 / s3)  # the operator's ratio is kept
    ok &= exact_identity(mix.equivalent_reference_rate(), mix.reference_capacity())
    ok &= exact_identity(mix.reference_capacity() * w2, Rv)  # (6')
    return ok, None, "sum S_i ws_i = R, ratios kept, sum alpha_ik S_i = S*_k (symbolic, m = 3)"


def derivation() -> Derivation:
    """The registered Erlang B derivation."""
    return Derivation(
        name="erlang-b",
        title="Erlang B window model of an SCP front end (M/M/n/n)",
        source=SOURCE,
        steps=_steps(),
        checks=(
            Check("(R) recursion = (1) at k = n, exact, n = 1..10", _check_recursion_exact, "(R)"),
            Check("(R') complement without subtraction, exact", _check_complement_exact, "(R')"),
            Check("(3), (4): busy windows and Little, exact", _check_busy_windows_exact, "(3)"),
            Check("B, carried load vs exact direct sum", _check_direct_sum, "(1)"),
            Check("B, N vs GTH of the birth-death chain", _check_gth, "(1)"),
            Check("n = 10^4 vs incomplete-gamma identity", _check_incomplete_gamma, "(R)"),
            Check("inverse problems vs brute force", _check_inverse, "(R)"),
            Check("(5), (6) multi-service normalisation", _check_multiservice, "(6)"),
        ),
        notes=(
            "Erlang B is computed by the recursion (R), whose steps are ratios of positive numbers: "
            "valid in float64 for n and rho up to 10^5 and beyond.",
        ),
    )


# -- command line ---------------------------------------------------------------------
def _working_backend(digits, n: int):
    """float64, or mpmath with guard digits: the recursion's rounding errors add up (never grow),
    so n steps cost at most log10(3n) digits; D printed digits need D + log10(n) + 5 working digits."""
    if digits is None:
        return backend_for(None)
    return mp_backend(digits + len(str(max(1, abs(n)))) + 5)


class ErlangBCommand(ModelCommand):
    name = "erlang-b"
    summary = "M/M/n/n loss system (SCP window model): Erlang B, carried load, sizing"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--servers", metavar="N", help="number of windows / servers n (integer >= 1)")
        parser.add_argument("--load", metavar="RHO", help="offered load rho = lambda/mu in Erlang (> 0)")
        parser.add_argument("--holding-time", metavar="T",
                            help="mean holding (response) time 1/mu in seconds; adds rates to the output")

    def add_size_arguments(self, parser) -> None:
        parser.add_argument("--target-blocking", metavar="P", required=True,
                            help="target blocking probability in (0, 1); give --load to get the servers, "
                                 "or --servers to get the load they carry")

    @staticmethod
    def _servers(args) -> int:
        value = parse_number(args.servers, "servers")
        if not value.is_Integer or value < 1:
            raise ParameterError(f"servers = {args.servers}: must be an integer >= 1")
        return int(value)

    @staticmethod
    def _holding(args):
        if args.holding_time is None:
            return None
        h = parse_number(args.holding_time, "holding-time")
        if not h > 0:
            raise ParameterError(f"holding-time = {args.holding_time}: must be > 0")
        return h

    @staticmethod
    def _load(args):
        r = parse_number(args.load, "load")
        if not r > 0:
            raise ParameterError(f"load = {args.load}: must be > 0")
        return r

    def build(self, args):
        if args.servers is None or args.load is None:
            raise ParameterError("eval erlang-b needs both --servers and --load")
        return (self._servers(args), self._load(args), self._holding(args))

    def evaluate(self, model, digits, args) -> Evaluation:
        nv, r, h = model
        bk = _working_backend(digits, nv)
        with bk:
            rec = E.erlang_b_recursion(nv, r, bk)
            rr = bk.num(r)
            carried = rec.carried_load
            measures = {
                "blocking_probability": rec.blocking,
                "carried_load": carried,
                "lost_load": rr * rec.blocking,
                "mean_busy_windows": carried,
                "window_occupancy": carried / nv,
                "log10_blocking_probability": rec.log_blocking / bk.ctx.ln10,
            }
            notes = []
            if h is not None:
                hh = bk.num(h)
                measures.update({
                    "arrival_rate": rr / hh,
                    "carried_rate": carried / hh,
                    "lost_rate": rr * rec.blocking / hh,
                    "mean_response_time": hh,
                })
            if bk.is_float64 and rec.blocking == 0:
                notes.append("the blocking probability is below the float64 range (see log10_blocking_probability); "
                             "use --digits D for its digits")
        params = {"servers": nv, "load": r}
        if h is not None:
            params["holding_time"] = h
        return Evaluation(self.name, params, measures, notes)

    def size(self, args) -> dict:
        target = parse_number(args.target_blocking, "target-blocking")
        if not (0 < target < 1):
            raise ParameterError(f"target-blocking = {args.target_blocking}: must lie strictly between 0 and 1")
        if (args.servers is None) == (args.load is None):
            raise ParameterError("size erlang-b: give exactly one of --load (to find the servers) "
                                 "or --servers (to find the load they carry)")
        h = self._holding(args)
        n_hint = int(parse_number(args.servers, "servers")) if args.servers is not None else 10**5
        bk = _working_backend(args.digits, n_hint)
        with bk:
            if args.load is not None:
                r = self._load(args)
                nv = E.smallest_servers(r, target, bk)
                rec = E.erlang_b_recursion(nv, r, bk)
                out = {
                    "servers": nv,
                    "load": bk.num(r),
                    "blocking_probability": rec.blocking,
                    "blocking_with_one_fewer": rec.previous,
                    "carried_load": rec.carried_load,
                }
            else:
                nv = self._servers(args)
                load = E.load_for_blocking(nv, target, bk)
                out = {
                    "servers": nv,
                    "load": load,
                    "blocking_probability": bk.num(target),
                    "carried_load": load * (1 - bk.num(target)),
                }
            if h is not None:
                out["arrival_rate"] = out["load"] / bk.num(h)
        return out

    def derivation(self):
        return derivation()

    def codegen_forms(self, args) -> dict:
        """The measures of ``eval`` (without --holding-time) as standalone numpy code with the recursion."""
        from .codegen import RecursionModule, generated_function

        docs = {
            "blocking_probability": "Erlang B blocking probability B(n, rho) (eq. (1) at k = n).",
            "carried_load": "Carried load rho (1 - B) = rho n / (n + rho B(n-1)) (eqs. (2), (3)), in Erlang.",
            "lost_load": "Lost load rho B(n, rho), in Erlang.",
            "mean_busy_windows": "Mean number of busy windows (servers) = carried load.",
            "window_occupancy": "Mean occupancy of one window (server): carried load / n.",
            "log10_blocking_probability": "log10 B(n, rho), finite where B underflows float64.",
        }
        source = "Erlang B recursion B(k) = rho B(k-1)/(k + rho B(k-1)); Wang & Liao (seed 003), spec/other-models.md D"
        forms = {}
        args = (("load", "offered load rho = lambda / mu (Erlang, > 0); floats or numpy arrays, broadcast"),
                ("servers", "number of servers n (integer >= 1)"))
        for measure, text in docs.items():
            notes = [f"M/M/n/n loss system. Source: {source}.", "",
                     "Bad input raises ValueError naming the parameter."]
            code = generated_function(measure, args, text, notes,
                                      [f"return erlang_b_measures(load, servers)[{measure!r}]"])
            forms[measure] = RecursionModule(measure, text, source, "_runtime_erlang_b", code)
        return forms


COMMAND = ErlangBCommand()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(0 if derivation().report(50) else 1)
