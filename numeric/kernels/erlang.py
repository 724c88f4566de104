"""Erlang B for the M/M/n/n window model of an SCP front end, and its two inverse problems (seed 003).

``spec/other-models.md`` section D: n windows, Poisson BEGIN messages, exponential holding
times, offered load rho = lambda/mu; p_k = (rho^k/k!) / sum_{l<=n} rho^l/l! (Wang & Liao,
eq. (1)); the blocking is B(n, rho) = p_n. It is computed by the stable recursion

    B(0) = 1,    B(k) = rho B(k-1) / (k + rho B(k-1)),                           (R)

never from factorials: each step is a ratio of positive numbers and does not amplify a
relative error (d log B(k) / d log B(k-1) = k / (k + rho B(k-1)) <= 1), so n steps cost at
most log10(n) digits. The complement needs no subtraction, 1 - B(n) = n / (n + rho B(n-1))
(R'), hence the carried load rho (1 - B) = rho n / (n + rho B(n-1)) (eqs. (2), (3)) and
log B(n) = -log1p(n / (rho B(n-1))) to full relative accuracy even when B is close to 1.

Two continuations keep the cost and the range under control, both in :func:`erlang_b`:

* **Below the cut: the pure product, in logarithms.** Once rho B(k-1) <= cut (k - rho), the
  terms rho B(j-1) that (R) adds to j are negligible for every later j (they fall
  geometrically, by at most rho/k), so B(j) = (rho/j) B(j-1) and
  log B(n) = log B(k-1) + (n - k + 1) log rho - (log n! - log (k-1)!), by log-gamma.
  The cut (:func:`erlang_b_cut`) is the context's: ``ctx.eps`` with mpmath (the dropped
  terms are below the working precision; log-gamma loses log10(n (log n + |log rho|))
  digits, within the engine's guard of log10(n) + 5), ``ctx.tiny`` in float64, where the
  switch therefore happens only when B has left the double range: there B(n) is 0 (the
  precision policy recomputes it with mpmath) and log B(n) stays finite, while every B
  inside the double range comes from (R) itself, with its n eps accuracy. This is the
  ONE place where the logarithmic continuation is decided.
* **Heavy load rho >= 2n: (R) unrolled from the top.** 1/B(n) = 1 + (n/rho) / B(n-1) gives
  1/B(n) = 1 + e_n with e_n = sum_{m=1}^{n} T_m, T_m = T_{m-1} (n-m+1)/rho, T_0 = 1: the
  terms of eq. (1) read from l = n down, positive and falling at least by half, so the sum
  stops after min(n, ~bits) terms instead of n steps (rho = 10^300 with n = 10^7 costs two
  terms). B(n-1) = 1/(1 + e_{n-1}) with e_{n-1} = sum_m T_m (n-m)/n; log B(n) = -log1p(e_n).

Sizing: :func:`erlang_b_servers` (smallest n with B(n) <= target, one pass of (R); the
comparison is made on logarithms below the cut) and :func:`erlang_b_load` (the load n windows
carry at a given blocking: safeguarded Newton in log rho).

Every function takes the arithmetic context ``ctx`` (float64 or mpmath; call inside
``with ctx:``) and context numbers. ``qderive codegen erlang-b`` ships this file verbatim.

>>> from qderive.numeric.kernels.context import FLOAT64
>>> prev, b, log_b = erlang_b(FLOAT64, 5.0, 10)
>>> round(b, 12), round(erlang_b_measures(FLOAT64, 5.0, 10)["carried_load"], 12)
(0.018384570337, 4.908077148317)
>>> erlang_b_servers(FLOAT64, 8.108, 0.01, FLOAT64.log(0.01), 100)[0]
15
"""

#: the measure keys of ``qderive eval erlang-b``; with a holding time also :data:`ERLANG_B_RATE_KEYS`
ERLANG_B_KEYS = ("blocking_probability", "carried_load", "lost_load", "mean_busy_windows", "window_occupancy",
                 "log10_blocking_probability")
ERLANG_B_RATE_KEYS = ("arrival_rate", "carried_rate", "lost_rate", "mean_response_time")


def erlang_b_cut(ctx):
    """rho B(k-1) <= cut (k - rho) ends (R) (module docstring): ``ctx.eps`` (mpmath) or ``ctx.tiny`` (float64)."""
    return ctx.tiny if ctx.is_float64 else ctx.eps


def _erlang_b_tail(ctx, rho, b, k, n):
    """B(j) = (rho/j) B(j-1) for j = k..n from b = B(k-1): (B(n-1), B(n), log B(n)) by log-gamma."""
    log_rho = ctx.log(rho)
    log_b = ctx.log(b) + (n - k + 1) * log_rho - (ctx.lgamma(ctx.num(n + 1)) - ctx.lgamma(ctx.num(k)))
    if n == k:
        return b, ctx.exp(log_b), log_b
    log_prev = log_b - log_rho + ctx.log(ctx.num(n))
    return ctx.exp(log_prev), ctx.exp(log_b), log_b


def _erlang_b_top(ctx, rho, n):
    """rho >= 2n: 1/B(n) = 1 + e_n, 1/B(n-1) = 1 + e_{n-1}, from the falling terms T_m (module docstring)."""
    term = ctx.num(1)
    e_n, e_prev = ctx.num(0), ctx.num(0)
    for m in range(1, n + 1):
        term = term * (n - m + 1) / rho
        e_n = e_n + term
        e_prev = e_prev + term * (n - m) / n
        if term <= ctx.eps * e_n:  # the rest is below term (ratios <= 1/2): below the working precision
            break
    one = ctx.num(1)
    return one / (one + e_prev), one / (one + e_n), -ctx.log1p(e_n)


def erlang_b(ctx, rho, n):
    """(B(n-1), B(n), log B(n)) of (R) for n >= 1 servers at offered load rho > 0 (module docstring).

    Costs O(n) steps of (R), O(rho + sqrt(rho)) when B falls below the cut first, and
    O(min(n, bits)) for rho >= 2n. In float64 a B(n) below the double range is returned
    as 0 (or a subnormal) with a finite log B(n).
    """
    if rho >= 2 * n:
        return _erlang_b_top(ctx, rho, n)
    cut = erlang_b_cut(ctx)
    prev = b = ctx.num(1)
    start = min(n, int(rho))  # while k <= rho, rho B(k-1) is never small beside k - rho
    for k in range(1, start + 1):
        prev = b
        x = rho * b
        b = x / (k + x)
    for k in range(start + 1, n + 1):
        x = rho * b
        if x <= cut * (k - rho):
            return _erlang_b_tail(ctx, rho, b, k, n)
        prev = b
        b = x / (k + x)
    return prev, b, -ctx.log1p(n / (rho * prev))


def erlang_b_measures(ctx, rho, n, holding=None):
    """The measures of ``qderive eval erlang-b`` (eqs. (1)-(4)) as a dict of context numbers.

    blocking B(n, rho); carried load = mean busy windows N = rho (1 - B) = rho n / (n + rho B(n-1))
    (written n / (n/rho + B(n-1)) for rho > n, so that neither form overflows); lost load rho B;
    window occupancy N/n; log10 B. With the mean holding time ``holding`` = 1/mu also the
    arrival rate lambda = rho mu, the carried rate lambda_e = lambda (1 - B) (2), the lost rate
    and the response time w_s = N / lambda_e = 1/mu (4).
    """
    prev, b, log_b = erlang_b(ctx, rho, n)
    carried = rho * n / (n + rho * prev) if rho <= n else n / (n / rho + prev)
    lost = rho * b
    out = dict(zip(ERLANG_B_KEYS, (b, carried, lost, carried, carried / n, log_b / ctx.log(ctx.num(10)))))
    if holding is not None:
        out.update(zip(ERLANG_B_RATE_KEYS, (rho / holding, carried / holding, lost / holding, holding)))
    return out


def erlang_b_law(ctx, rho, n, b):
    """p_0..p_n of M/M/n/n (1), p_k = (rho^k/k!) / sum_{l=0}^{n} rho^l/l!, from p_n = B(n, rho) = ``b``
    downwards: p_{k-1} = p_k k / rho (products of positive numbers, no sum to overflow)."""
    p = ctx.zeros(n + 1)
    p[n] = b
    for k in range(n, 0, -1):
        p[k - 1] = p[k] * k / rho
    return p


def erlang_b_servers(ctx, rho, target, log_target, limit):
    """The smallest n <= ``limit`` with B(n, rho) <= target: (n, B(n-1), B(n), in_logs), or None.

    B(n, rho) falls strictly in n, so one pass of (R) finds n; below the cut the comparison
    is log B(n) <= log target with log B(j) = log B(j-1) + log(rho/j) (``log_target`` is
    given by the caller: a float64 target may underflow), and B(n-1), B(n) are returned as
    logarithms (``in_logs`` True).
    """
    cut = erlang_b_cut(ctx)
    b = ctx.num(1)
    log_b = None
    log_rho = ctx.log(rho)
    for k in range(1, limit + 1):
        if log_b is None:
            x = rho * b
            if x > cut * (k - rho):
                prev, b = b, x / (k + x)
                if b <= target:
                    return k, prev, b, False
                continue
            log_b = ctx.log(b)
        prev, log_b = log_b, log_b + log_rho - ctx.log(ctx.num(k))
        if log_b <= log_target:
            return k, prev, log_b, True
    return None


def erlang_b_load(ctx, n, log_target, log_complement):
    """The offered load rho* that n windows carry at blocking B(n, rho*) = target.

    ``log_target`` = log t and ``log_complement`` = log(1 - t) (context numbers from the caller).
    B(n, rho) rises strictly in rho with d log B / d log rho = n - rho (1 - B(n)) > 0 (n minus
    the carried load). Safeguarded Newton iteration in u = log rho inside the bracket
    rho_lo = (t n!)^(1/n) (B <= rho^n/n!) and rho_hi = n / (1 - t) (carried load < n),
    bisecting when a step leaves the bracket or fails to halve the previous one; stops when
    the step or the bracket is below the working precision. Raises ArithmeticError when a
    load leaves the float64 range (the caller recomputes with mpmath).
    """
    u_lo = (log_target + ctx.lgamma(ctx.num(n + 1))) / n
    u_hi = ctx.log(ctx.num(n)) - log_complement
    u = (u_lo + u_hi) / 2
    tol = 8 * ctx.eps
    prev_step = None
    for _ in range(5000):
        rho = ctx.exp(u)
        if not ctx.tiny <= rho <= ctx.huge:
            raise ArithmeticError(f"the load exp({float(u):.6g}) leaves the float64 range")
        prev, b, log_b = erlang_b(ctx, rho, n)
        f = log_b - log_target
        if f > 0:
            u_hi = u
        else:
            u_lo = u
        carried = rho * n / (n + rho * prev) if rho <= n else n / (n / rho + prev)
        step = f / (n - carried)
        scale = max(1, abs(u))
        if abs(step) <= tol * scale:
            return ctx.exp(u - step)
        if u_hi - u_lo <= tol * scale:
            return ctx.exp(u)
        u_new = u - step
        if not (u_lo < u_new < u_hi) or (prev_step is not None and abs(step) > abs(prev_step) / 2):
            u_new = (u_lo + u_hi) / 2
        prev_step = u_new - u
        u = u_new
    raise ArithmeticError(f"the Erlang B load for n = {n} did not converge")
