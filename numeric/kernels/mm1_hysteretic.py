"""M|M|1 with bi-level hysteretic control: the stationary law by level cuts, as positive sums.

``docs/theory/other-models.md`` section B: Poisson arrivals of rate lambda_s in mode s (lambda_0 >=
lambda_1 >= 0, lambda_2 = 0), one exponential server of rate mu, thresholds 1 <= L < H < R,
switching at once on the count. With rho_s = lambda_s / mu and pi(L, 1) = 1, the level
cuts (flow up across a level = flow down across it) give each mode's law as a geometric
segment::

    pi(j,0) = sum_{k=1}^{H-j} rho_0^{-k}                        L-1 <= j <= H-1
    pi(j,0) = pi(L-1,0) rho_0^{j-L+1}                           0 <= j <= L-1
    pi(j,1) = sum_{k=0}^{j-L} rho_1^k                           L <= j <= H
    pi(j,1) = z sum_{k=1}^{R-j} rho_1^{-k}                      H <= j <= R-1
    pi(j,2) = z                                                 H+1 <= j <= R

with z fixed by the two expressions of pi(H, 1). Written with nonnegative powers of rho_1
when rho_1 < 1 (pi(j,1) = pi(H,1) sum_{m=j-H}^{R-H-1} rho_1^m / sum_{m=0}^{R-H-1} rho_1^m,
z = pi(H,1) rho_1^{R-H} / sum_{m=0}^{R-H-1} rho_1^m, so rho_1 = 0 -- complete blocking --
is the same formula) and with powers of 1/rho_1 otherwise: every value is a sum or product
of positive numbers (relative error O(R eps)). Masses M_s of S_s; E tau_0 = M_0 / mu,
E tau_12 = (M_1 + M_2) / mu, E tau = M / mu (one cycle per departure from (L, 1), whose
rate is mu pi(L, 1) / M).
"""

import numpy

#: the measure keys of ``qderive eval mm1-hysteretic``
MM1_HYSTERESIS_KEYS = ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time",
                       "mean_cycle_time", "loss_probability", "throughput")


def mm1_hysteresis_powers(ctx, x, n):
    """x^1, ..., x^n (running products of one positive number; n may be 0)."""
    v = ctx.zeros(n)
    if n:
        v[:] = x
        v = ctx.flush(numpy.cumprod(v))
    return v


def mm1_hysteresis_law(ctx, r0_inv, r1, r1_inv, r1_at_least_one, L, H, R):
    """Unnormalised stationary law with pi(L, 1) = 1: (normal over j = 0..H-1, overload over j = L..R-1, z).

    ``r0_inv`` = 1/rho_0, ``r1`` = rho_1 and ``r1_inv`` = 1/rho_1 (None when rho_1 = 0) as context
    numbers, each rounded once by the caller; ``r1_at_least_one`` says which form of the
    overload segment above H is used (module docstring).
    """
    normal = ctx.zeros(H)
    high = numpy.cumsum(mm1_hysteresis_powers(ctx, r0_inv, H - L + 1))  # pi(H-m, 0), m = 1..H-L+1
    normal[L - 1: H] = high[::-1]
    normal[: L - 1] = normal[L - 1] * mm1_hysteresis_powers(ctx, r0_inv, L - 1)[::-1]
    over = ctx.zeros(R - L)
    over[0] = ctx.num(1)
    over[1: H - L + 1] = 1 + numpy.cumsum(mm1_hysteresis_powers(ctx, r1, H - L))
    at_h = over[H - L]
    if r1_at_least_one:
        v = numpy.cumsum(mm1_hysteresis_powers(ctx, r1_inv, R - H))  # V(m) = sum_{k=1}^{m} rho_1^{-k}
        z = at_h / v[-1]
        over[H - L: R - L] = z * v[::-1]
    else:
        pw = ctx.zeros(R - H + 1)
        pw[0] = ctx.num(1)
        pw[1:] = mm1_hysteresis_powers(ctx, r1, R - H)
        tails = numpy.cumsum(pw[: R - H][::-1])[::-1]  # sum_{m=i}^{R-H-1} rho_1^m, i = 0..R-H-1
        y = at_h / tails[0]
        over[H - L: R - L] = y * tails
        z = y * pw[R - H]
    return ctx.flush(normal), ctx.flush(over), z


def mm1_hysteresis_joint(ctx, normal, over, z, L, H, R):
    """The stationary joint law [s][n] over n = 0..R from :func:`mm1_hysteresis_law`, normalised:
    pi(n, 0) on n = 0..H-1, pi(n, 1) on n = L..R-1, pi(n, 2) = z on n = H+1..R, 0 elsewhere
    (``docs/theory/other-models.md`` B; the total is a sum of positive terms)."""
    cols = [ctx.zeros(R + 1) for _ in range(3)]
    cols[0][:H] = normal
    cols[1][L:R] = over
    cols[2][H + 1:] = z
    total = ctx.fsum(list(normal)) + ctx.fsum(list(over)) + (R - H) * z
    return [c / total for c in cols]


def mm1_hysteresis_measures(ctx, r0_inv, r1, r1_inv, r1_at_least_one, mu, lam0, lam1, throttle, L, H, R):
    """The measures (keys :data:`MM1_HYSTERESIS_KEYS`) from the law of :func:`mm1_hysteresis_law`.

    P(S_s) = M_s / M; E tau_0 = M_0 / mu, E tau_12 = (M_1 + M_2) / mu, E tau = M / mu; loss =
    ``throttle`` P(S_1) + P(S_2) with ``throttle`` = 1 - lambda_1 / lambda_0 (throttled arrivals;
    no arrival meets a full system); throughput = lambda_0 P(S_0) + lambda_1 P(S_1).
    """
    normal, over, z = mm1_hysteresis_law(ctx, r0_inv, r1, r1_inv, r1_at_least_one, L, H, R)
    mass = (ctx.fsum(list(normal)), ctx.fsum(list(over)), (R - H) * z)
    total = mass[0] + mass[1] + mass[2]
    p = [m / total for m in mass]
    values = (p[0], p[1], p[2], mass[0] / mu, (mass[1] + mass[2]) / mu, total / mu, throttle * p[1] + p[2],
              lam0 * p[0] + lam1 * p[1])
    return dict(zip(MM1_HYSTERESIS_KEYS, values))
