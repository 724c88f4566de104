"""The finite room's wait with blocks when a setup or vacation law is a constant or a few atoms (issue 26 item 2):
tails from smooth inversions at shifted times and over the elapsed time of the constant periods.

The admitted customer's wait of :mod:`~qderive.numeric.engines.vacation_finite_wait` (items 1-3, 6) has the
transform N(s) / N(0) with, per part (a suffix group S of full periods after the residual),

    N_S(s) = prod_{L in S} L*(s) [ sum_n (Phi^S_n(s) + T^S_n) A_n(s) + t^S_I A_I(s) ],
    Phi^S_n(s) = [S = ()] Phi^s_n(s) + sum_{f in S} sum_K h^f_K(s) (W^f_K)_n,

W^f_K = V^f L^K the level rows of family f after K batches and h^f_K(s) = E int_0^F Pois(K; lambda x)
e^{-s (F - x)} dx its residual weights. A law with atoms enters in two places:

* **in a suffix** (a constant setup after a vacation): L*(s) = sum_i w_i e^{-s d_i}, pure shifts of the rest of the
  part, which is smooth;
* **as a family's period** F = d (the setup's own customers): its residual weights are the divided difference
  sum_K h_K(s) M^K = (e^{-s d} I - e^{-Lambda d}) (Lambda - s I)^{-1}, Lambda = lambda (I - M), whose two shifted
  pieces each carry the pole of the resolvent at s = lambda (in the right half-plane; only their sum is entire): the
  residual of a constant period in the finite room has the density Pois(K; lambda (d - r)) on [0, d], growing like
  e^{lambda r}, so it does not split into decaying shifted smooth parts as the infinite room's (SH) does (there the
  residual R is independent of the rest, W = W_none + R). It is integrated over the elapsed time x instead:

    N_f(s) = int_0^d e^{-s (d - x)} Q_x(s) dx,     Q_x(s) = sum_n w_n(x) A_n(s) prod_{L in S} L*(s),
    w(x) = sum_K Pois(K; lambda x) W^f_K   (the level vector at the elapsed time x),

so the family's part of N(0) P(W > t) is int_0^d G_x(t - d + x) dx, G_x(u) the tail of the smooth measure Q_x
(its mass Q_x(0) for u < 0, its atom at 0 the customers with no service ahead), a smooth inversion at every node.

Hence, with T_S(u) the tail of the part's smooth rest (the atoms' families removed, its atoms' suffix laws as shifts
(D, w)),

    N(0) P(W > t) = sum_S sum_(D, w) w [ T_S(t - D) + sum_f sum_i w_fi int_0^{d_fi} G^f_x(t - D - d_fi + x) dx ]    (SF)

every term positive (no cancellation), the integral by Gauss-Legendre split at the kink x = d - (t - D) (the atom
of G_x at 0), each side analytic in x for a service whose sums S_j have analytic densities on [0, oo) (phase-type,
gamma of integer shape). Every inversion is of a positive measure normalised by its mass, its error taken absolute
(relative to the mass: float64 the two Euler parameter sets' difference, unclamped; D digits the Euler inversion at
two precisions that agree to 10^-(w+1), w = D + 3 + log10(N(0) / (N(0) P(W > t)))). float64: two quadrature orders
(12 and 24 nodes per piece) whose difference plus the inversions' errors is within 1e-9 of the tail (the precision
policy's float64 criterion), else escalated with a note. A part far in its tail (float64 value v < 1/2 of its mass)
is also inverted damped, h(t) = e^{eta t} P(Z > t) of transform G(s - eta), eta -log(v) / u or half of it, below
half the decay rate of the wait's smooth laws (:func:`decay_rate`) and with the contour in Re s >= 0 (left of it the
level sums cancel alike in both parameter sets), kept when its two parameter sets agree better:
Euler's rounding noise (about 1e-11 of the inverted function's scale) is then relative to e^{eta u} P(Z > u), not to
the part's mass, so tails near 1e-2 pass in float64 (the 0.99 quantile of the issue-28 example at r = 200 in about
2 s instead of minutes of 15-digit search points; docs/performance.md "(SF) in float64"); D digits
double the nodes (from D / 3 + 4) until two orders agree to 10^-(D+2). The sojourn adds
B*(s) to every smooth factor. Start threshold 1 (N > 1's excess Delta(s) has shifts too: refused).

Checked (tests/test_blocks_finite_shifts.py): the Laplace transform of the float64 tails, int e^{-7 t} P(W > t) dt
by Gauss-Legendre between the kinks, against (1 - W*(7)) / 7 of the finite room's own transform (the residual
weights' divided differences: no split, no quadrature over the elapsed time, no inversion) to 1e-9, a constant setup,
a constant vacation under whole admission and an empirical vacation with a constant setup; seeded simulations;
P(W > 0+) + P(W = 0) = 1; float64 within 1e-9 of 15 digits. Measured also: Erlang-k setups of mean 1 (k = 8, 16, 32,
transform inversion) Richardson-extrapolated in 1/k to 1.1e-7 of (SF) at t = 6 (r = 20, both admissions).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import mpmath
import numpy as np

__all__ = ["finite_shift_plan", "finite_shift_tails", "ShiftSetup", "shift_setup", "root_order"]


def finite_shift_plan(model):
    """(True, "") when (SF) computes the finite room's tails of ``model`` (blocks, start threshold 1, a smooth
    service, every law entering the wait smooth or a few atoms, at least one with atoms); (None, None) when no law
    entering the wait has atoms; else (None, (field, reason))."""
    from .blocks_shifts import discrete_atoms, entering_laws, shift_pieces
    from .vacation_wait import numeric_transform, smooth_law

    laws = entering_laws(model)
    atoms = [(f, law) for f, law in laws[1:] if discrete_atoms(law) is not None]
    if not atoms:
        return None, None
    field = atoms[0][0].replace("_", "-")
    if model.start_threshold != 1:
        return None, (atoms[0][0], f"the {field} time {atoms[0][1]} has atoms: with a start threshold N > 1 the "
                      "finite room's excess of the customers still below N has shifts too, not summed here (start "
                      "threshold 1 is computed; the moments are)")
    if not smooth_law(model.service) or numeric_transform(model.service):
        return None, ("service", f"the service time {model.service} has kinks or no closed-form transform: with a "
                      f"constant or empirical {field} the finite room's tails are smooth inversions at shifted times, "
                      "which need a smooth service with a closed-form transform")
    for f, law in laws[1:]:
        if discrete_atoms(law) is None and not smooth_law(law):
            why = ("a uniform law next to the atoms is not summed in the finite room" if shift_pieces(law) is not None
                   else "its transform is no finite sum of exp(-s D) factors")
            return None, (f, f"the {f.replace('_', '-')} time {law} has kinks but no atoms ({why}): the finite "
                          "room's tails are not computed with it (the moments are)")
    return True, ""


def _poisson(lam_x, n, ctx):
    """Pois(K; lambda x), K = 0..n-1, in ``ctx`` (float64 from the logarithms)."""
    if ctx.is_float64:
        z = float(lam_x)
        if z == 0:
            out = np.zeros(n)
            out[0] = 1.0
            return out
        k = np.arange(n, dtype=float)
        return np.exp(k * math.log(z) - z - np.array([math.lgamma(v + 1) for v in k]))
    out = [mpmath.exp(-lam_x)]
    for k in range(1, n):
        out.append(out[-1] * lam_x / k)
    return np.array(out, dtype=object)


def _suffix_split(suffix):
    """(the shifts [(D, w)] of the suffix's laws with atoms, convolved; its smooth laws)."""
    from .blocks_shifts import discrete_atoms

    shifts = [(Fraction(0), Fraction(1))]
    smooth = []
    for law in suffix:
        atoms = discrete_atoms(law)
        if atoms is None:
            smooth.append(law)
            continue
        out: dict = {}
        for D, w in shifts:
            for d, v in atoms:
                out[D + d] = out.get(D + d, 0) + w * v
        shifts = sorted(out.items())
    return shifts, tuple(smooth)


class _Split:
    """One part of the finite room's wait (a suffix group) split by (SF): the smooth rest (``smooth``: its data with
    the atoms' families removed and its atoms' suffix laws taken out) and the atoms' families."""

    def __init__(self, data):
        from .blocks_shifts import discrete_atoms

        self.shifts, smooth_suffix = _suffix_split(data.suffix)
        keep = tuple(p for p in data.periods if discrete_atoms(p.law) is None)
        self.families = [(p, discrete_atoms(p.law)) for p in data.periods if discrete_atoms(p.law) is not None]
        # the batch way at every node (Zp, the customers' way's source, sums every family: dropped)
        self.smooth = dataclasses.replace(data, periods=keep, suffix=smooth_suffix, Zp=None, converted=None,
                                          lattice=None, kinked=None, service_lattice=None)
        self.data = data


def finite_shift_tails(wait, kind: str):
    """``tails(ts, digits)`` of the finite room's wait (``kind`` "wait") or sojourn by (SF) (module docstring), for
    ``wait`` a :class:`~qderive.numeric.engines.vacation_finite_wait.BlockFiniteWait`: float64 values whose two
    quadrature orders and inversions agree within 1e-10 of the tail, else None (recomputed at 15 digits with a
    note); D digits by inversions to D + 3 digits and quadrature orders doubled until they agree to 10^-(D+2)."""
    from ..backend import FLOAT64, mp_context
    from ..kernels import finite_wait as K
    from ..response import ResponseLaw
    from ..kernels.tails import TAIL_FLOAT64_SETS
    from .finite_laws import lst_at, suffix_at
    from .vacation_wait import gauss_legendre

    model = wait.model
    sojourn = kind == "sojourn"
    kept: dict = {}
    root = root_order(model.service)
    rate = decay_rate(model)

    def splits(ctx):
        key = None if ctx.is_float64 else ctx.dps
        if key not in kept:
            kept[key] = [_Split(d) for d in wait.parts(ctx)]
        return kept[key]

    def measure_law(name, values, mass, atom):
        """A ResponseLaw of the positive measure of transform ``values(ctx, s)`` (mass, atom at 0 given) normalised."""
        def make(ctx):
            def F(s):
                return values(ctx, s) / (float(mass) if ctx.is_float64 else ctx.num(mass))
            return F

        def p_zero(ctx):
            return float(atom / mass) if ctx.is_float64 else ctx.num(atom) / ctx.num(mass)

        def no_moments(*_):  # pragma: no cover - only its tails are asked
            raise NotImplementedError("the moments of a part of the wait")

        return ResponseLaw(name, make, p_zero, no_moments)

    def at_nodes(ctx, s, compute):
        """``compute(work, z)`` at the nodes s (float64, or mpmath at the data's digits), in ``ctx``."""
        shape = np.shape(s)
        if ctx.is_float64:
            z = np.asarray(s, dtype=complex).ravel()
            with np.errstate(under="ignore"):
                return compute(FLOAT64, z).reshape(shape)
        work = mp_context(ctx.dps + wait.guard)
        with work:
            z = np.array([mpmath.mpc(v) for v in np.asarray(s, dtype=object).ravel()], dtype=object)
            out = compute(work, z)
        with ctx:
            return np.array([+v for v in out], dtype=object).reshape(shape)

    def rest_values(split_index, dctx):
        """s -> the smooth rest of part ``split_index`` (its atoms' families and suffix shifts out)."""
        def values(ctx, s):
            def compute(work, z):
                data = splits(dctx)[split_index].smooth
                N, b = wait._node_sum(data, z, work, _batches(), True)
                return N * b if sojourn else N
            return at_nodes(ctx, s, compute)
        return values

    def family_values(split_index, f, x, dctx):
        """s -> Q_x(s) of family f of part ``split_index`` at the elapsed time x (module docstring)."""
        def values(ctx, s):
            def compute(work, z):
                sp = splits(dctx)[split_index]
                data = sp.smooth
                w = level_vector(sp, f, x, work)
                b = lst_at(model.service, work, z, data.lam if work.is_float64 else +data.lam)[0]
                Phi = np.broadcast_to(w, (len(z), data.r)) if data.r else K.fw_complex_zeros(work, (len(z), 0))
                N = K.wait_admission_sum(work, np.array(Phi), b, data.tail, data.pmf, 0, data.whole, None)
                N = N * suffix_at(data, work, z, data.lam if work.is_float64 else +data.lam)
                return N * b if sojourn else N
            return at_nodes(ctx, s, compute)
        return values

    def level_vector(sp, f, x, work):
        period = sp.families[f][0]
        rows = period.rows
        with work:
            lam = sp.smooth.lam
            lx = float(lam) * float(x) if work.is_float64 else +lam * x
            p = _poisson(lx, rows.shape[0], work)
            return np.dot(p, rows)

    def mass_and_atom(sp, f, x, work):
        """(Q_x(0), Q_x(oo)) in ``work``: the level vector against A_n(1), and its level 0 (A_0(oo) = P(X >= 1)
        with no smooth suffix and no service of one's own)."""
        data = sp.smooth
        w = level_vector(sp, f, x, work)
        one = np.array([1.0 + 0j]) if work.is_float64 else np.array([mpmath.mpc(1)], dtype=object)
        mass = K.wait_admission_sum(work, np.array([w]), one, data.tail, data.pmf, 0, data.whole, None)[0]
        atom = 0
        if not sojourn and not data.suffix and data.r:
            zero = np.array([0j]) if work.is_float64 else np.array([mpmath.mpc(0)], dtype=object)
            atom = K.wait_admission_sum(work, np.array([w]), zero, data.tail, data.pmf, 0, data.whole, None)[0]
        return (mass.real, atom.real if hasattr(atom, "real") else atom)

    def tail_of(law, mass, atom, u, digits):
        """(mass P(Z > u), its error) of a positive measure (its law ``law``): the mass below 0, mass - atom at 0;
        above 0 an inversion to an absolute accuracy relative to the mass (float64: the two parameter sets'
        difference; ``digits``: 10^-(digits + 1) of the mass), (None, None) where float64 fails."""
        if mass == 0:  # an empty part (no customer admitted there)
            return 0.0, 0.0
        if u < 0:
            return mass, 0.0
        if u == 0:
            return mass - atom, 0.0
        if digits is None:
            value, error = float64_signed_tail(law, u)
            if value is None:
                return None, None
            if rate is not None and value < 0.5 and error > 1e-13 * abs(value):
                # far in the tail: damp by eta (Euler's noise then relative to e^{eta u} P(Z > u), not the mass):
                # the tail's mean log-slope (h nearly flat) or half of it, below half the transform's nearest
                # singularity (that alone where the value is lost in the noise); the damping whose two parameter
                # sets agree best is kept
                # the contour Re s = A / (2u) - eta stays in Re s >= 0 (A = 23, the smaller set's): there every
                # factor is the transform of a positive measure, bounded by its mass, and the sums over the levels
                # do not cancel (left of it b*(s)^n grows with n: the float64 values lose their digits, and both
                # sets lose them alike, unseen by their difference)
                top = min(0.5 * rate, min(A for A, _, _ in TAIL_FLOAT64_SETS) / (2 * float(u)))
                shares = (1.0, 0.5, None) if value > error else (None,)
                for share in shares:
                    eta = top if share is None else min(-share * math.log(value) / float(u), top)
                    damped, d_error = float64_signed_tail(law, u, eta)
                    if damped is not None and d_error < error:
                        value, error = damped, d_error
                    if error <= 1e-12 * abs(value):
                        break
            return mass * value, abs(mass) * error
        return mass * absolute_tail(law, u, digits, kind), abs(mass) * mpmath.mpf(10) ** -(digits + 1)

    def one(t, digits, nodes):
        """(N(0) P(W > t) by (SF) with Gauss-Legendre of ``nodes`` per piece, N(0), the parts' error bound), or
        (None, None, None); ``digits``: each part to 10^-(digits + 1) of its mass."""
        dctx = FLOAT64 if digits is None else mp_context(digits + 5)
        work = FLOAT64 if digits is None else mp_context(digits + 10)
        total, N0, errors = [], [], []
        X, Wt = gauss_legendre(nodes, work)
        for i, sp in enumerate(splits(dctx)):
            data, smooth = sp.data, sp.smooth
            N0.append(data.N0)
            with work:
                mass = smooth_mass(i, dctx, work)
                atom = (smooth.zero_weight if not smooth.suffix and not sojourn else 0)
            law = measure_law(f"{kind} part", rest_values(i, dctx), mass, atom) if mass != 0 else None
            for D, w in sp.shifts:
                value, error = tail_of(law, mass, atom, t - D, digits)
                if value is None:
                    return None, None, None
                total.append(_num(w, work) * value)
                errors.append(_num(w, work) * error)
                for f, (_, atoms) in enumerate(sp.families):
                    for d, v in atoms:
                        got = family_integral(i, f, d, t - D, digits, X, Wt, dctx, work)
                        if got is None:
                            return None, None, None
                        total.append(_num(w * v, work) * got[0])
                        errors.append(_num(w * v, work) * got[1])
        with work:
            return _sum(total, work), _sum(N0, work), _sum(errors, work)

    def smooth_mass(i, dctx, work):
        sp = splits(dctx)[i]
        if work.is_float64:
            N, _ = wait._node_sum(sp.smooth, np.array([0j]), FLOAT64, _batches(), False)
        else:
            with work:
                N, _ = wait._node_sum(sp.smooth, np.array([mpmath.mpc(0)], dtype=object), work, _batches(), False)
        return N[0].real

    def family_integral(i, f, d, c, digits, X, Wt, dctx, work):
        """(int_0^d G_x(c - d + x) dx, its error from the inversions) (module docstring), split at x* = d - c;
        None where float64 fails."""
        sp = splits(dctx)[i]
        d = Fraction(d)
        cut = d - c
        pieces = [(Fraction(0), d)] if not 0 < cut < d else [(Fraction(0), cut), (cut, d)]
        out, errors = [], []
        for a, b in pieces:
            below = b <= cut  # every x here has u = c - d + x <= 0: the mass
            # from u = 0 the tails behave as 1 - c u^{j a} (a service's density ~ u^{a - 1} at 0, a = p / q):
            # x = a + (b - a) v^q, v in [0, 1], makes them analytic in v (the gamma of shape 1/2: q = 2)
            q = root if (not below and a == max(cut, Fraction(0))) else 1
            with work:
                half, mid = _num(b - a, work) / 2, _num(a + b, work) / 2
                for xk, wk in zip(X, Wt):
                    if q == 1:
                        x, jac = mid + half * xk, half
                    else:
                        v = (1 + xk) / 2
                        x = _num(a, work) + 2 * half * v**q
                        jac = 2 * half * q * v ** (q - 1) / 2
                    mass, atom = mass_and_atom(sp, f, x, work)
                    if below:
                        out.append(wk * jac * mass)
                        continue
                    u = Fraction(c) - d + _fraction(x)
                    law = measure_law(f"{kind} family", family_values(i, f, x, dctx), mass, atom) if mass else None
                    value, error = tail_of(law, mass, atom, u if u > 0 else Fraction(0), digits)
                    if value is None:
                        return None
                    out.append(wk * jac * value)
                    errors.append(wk * jac * error)
        with work:
            return _sum(out, work), _sum(errors, work)

    def tails(ts, digits):
        ts = [Fraction(t) for t in ts]
        out, working = [], None
        for t in ts:
            a, n0, ea = one(t, None, 12)
            b, _, eb = one(t, None, 24) if a is not None else (None, None, None)
            fine = a is not None and b is not None and b > 0 and abs(a - b) + eb <= 1e-9 * b  # the float64 policy
            if digits is None:
                out.append(min(1.0, float(b / n0)) if fine else None)
                continue
            # D digits: each part to 10^-(w + 1) of its mass, w = D + 3 + log10(N(0) / (N(0) P(W > t))) from an
            # estimate (the float64 sums, or a first pass at D + 3), raised while the bound misses 10^-(D + 2)
            est = b if (b is not None and b > 0) else None
            w = digits + 3
            nodes = digits // 3 + 4
            while True:
                if est is not None:
                    w = digits + 3 + max(0, math.ceil(math.log10(float(n0) / float(est))))
                a, n0, ea = one(t, w, nodes)
                b, n0, eb = one(t, w, 2 * nodes)
                if b > 0 and abs(a - b) + eb <= mpmath.mpf(10) ** -(digits + 2) * b:
                    break
                if abs(a - b) > mpmath.mpf(10) ** -(digits + 2) * abs(b):
                    nodes *= 2
                if est is not None and b > 0 and eb > mpmath.mpf(10) ** -(digits + 2) * b and b >= est:
                    est = b / 10  # the estimate was too large: the parts need more digits
                elif b > 0:
                    est = b
                if nodes > 400 or w > 250:
                    from ...symbolic.errors import NumericalError

                    raise NumericalError(f"P({kind} > {float(t):.6g}): the sums over the constant periods did not "
                                         f"settle to {digits} digits ({nodes} quadrature nodes, {w} digits)")
            out.append(+(b / n0))
            working = max(working or 0, w + 10)
        return out, working

    def rough(t):
        """The float64 sums of (SF) without their acceptance test (the quantile search's guide: its bracket is then
        checked with ``tails``), or None."""
        a, n0, _ = one(Fraction(t), None, 12)
        return None if a is None or not a > 0 else min(1.0, float(a / n0))

    tails.rough = rough
    return tails


class ShiftSetup:
    """The ``setup`` of :func:`~.vacation_finite_wait.kinked_setup` for a smooth service that is not phase-type with
    constant or empirical vacations (no blocks): its tails are (SF) (issue 28 item 1)."""

    def __init__(self, service, vacation):
        self.service, self.vacation = service, vacation


def shift_setup(service, vacation):
    """A :class:`ShiftSetup` when (SF) computes the tails of the queue without blocks: a smooth service with a
    closed-form transform (gamma of any shape, ...) and a vacation with atoms (constant, empirical), else None."""
    from .blocks_shifts import discrete_atoms
    from .vacation_wait import numeric_transform, smooth_law

    if vacation is None or discrete_atoms(vacation) is None:
        return None
    if numeric_transform(service) or not smooth_law(service):
        return None
    return ShiftSetup(service, vacation)


def decay_rate(model):
    """A rate c > 0 with every part's transform analytic for Re s > -c: the smallest
    :meth:`~qderive.symbolic.laws.base.TimeLaw.decay_rate` of the smooth laws entering the wait (a gamma law of shape
    a and mean m: a / m; a phase-type law: right of T's eigenvalues), or None when a smooth law's rate is not known
    (then the float64 tails are not damped)."""
    from .blocks_shifts import discrete_atoms, entering_laws

    rates = []
    for _, law in entering_laws(model):
        if discrete_atoms(law) is not None:
            continue
        c = law.decay_rate()
        if c is None:
            return None
        rates.append(c)
    rates = [c for c in rates if math.isfinite(c)]
    return min(rates) if rates and min(rates) > 0 else None


def root_order(law) -> int:
    """q with the density of ``law`` ~ x^{p/q - 1} at 0 (a gamma of shape p / q), 1 for the other laws (phase-type:
    analytic at 0); at most 12 (beyond, 1: the quadrature's two orders then say whether it settled)."""
    shape = getattr(law, "shape", None)
    if shape is None:
        return 1
    try:
        q = Fraction(shape).limit_denominator(10**6).denominator
    except (TypeError, ValueError):
        return 1
    return q if q <= 12 else 1


def float64_signed_tail(law, u, tilt=0.0):
    from .blocks_shifts import float64_signed_tail as tail

    return tail(law, u, tilt)


def absolute_tail(law, u, digits, kind):
    from .blocks_shifts import absolute_tail as tail

    return tail(law, u, digits, kind)


def _batches():
    from .finite_laws import Strategy

    return Strategy.BATCHES


def _num(q, ctx):
    q = Fraction(q)
    return q.numerator / q.denominator if ctx.is_float64 else mpmath.mpf(q.numerator) / q.denominator


def _fraction(x):
    """An exact Fraction of a float or mpf node (its binary value)."""
    if isinstance(x, float):
        return Fraction(x)
    m, e = mpmath.mpf(x).man_exp
    return Fraction(int(m)) * (Fraction(2) ** int(e))


def _sum(values, ctx):
    if ctx.is_float64:
        return float(math.fsum(float(np.real(v)) for v in values))
    return mpmath.fsum(values)
