"""Oracle of the wait and sojourn of an admitted customer of M[X]|M|1|(L,H)|(H,R) under ``--policy instant``.

Built from the model definition, never from a transform, an embedded chain or the birth kernel:

1. **The state seen by an arriving batch** is the time-stationary law pi of the CTMC over (count c, mode s in
   force) of :func:`.hysteretic.instant` (exponential service, the mode following the count at once), and
   batches arrive at the rate lambda_s of the mode in force (PASTA for the Poisson stream of that mode:
   the arrival intensity in state (c, s) is lambda_s).
2. **The tagged customer** is a random customer of the batch: position i with weight P(X >= i) (the
   customer average; E X cancels). It is admitted iff c + i <= R (partial admission).
3. **Customers ahead**: the one in service (its residual is exponential: memoryless), the c - 1 waiting and
   the i - 1 admitted before it in its batch: n = c + i - 1 exponential(mu) services, whatever the mode
   (the service rate does not depend on it, and FIFO: later arrivals do not overtake).
4. **The wait** is the absorption time of the pure death chain n -> n - 1 at rate mu from the entry law
   a_n = sum_{(c, s), i: c + i - 1 = n, c + i <= R} pi(c, s) lambda_s P(X >= i) / (its total): the tagged
   customer's position in the CTMC, a phase-type time. P(W > t) = sum_n a_n P(Poisson(mu t) <= n - 1) (the
   regularized upper incomplete gamma function Q(n, mu t), evaluated by mpmath), E W^k = sum_n a_n n (n + 1)
   ... (n + k - 1) / mu^k. **The sojourn** adds the tagged customer's own service: n + 1.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from ...symbolic.errors import ParameterError
from ...symbolic.models.hysteretic import Policy
from .hysteretic import instant

__all__ = ["instant_entry_law", "instant_wait"]


def instant_entry_law(model, ctx) -> dict:
    """{n: a_n}: the law of the number of exponential services ahead of an admitted customer (module docstring,
    items 1-3), in ``ctx`` (call inside ``with ctx:``)."""
    if model.policy is not Policy.INSTANT:
        raise ParameterError("policy", "this oracle is the instant-policy CTMC", model.policy.value)
    R = model.R
    rates = (model.rate, model.rate1, Fraction(0))
    pi = instant(model, ctx).pi
    weights: dict = {}
    for (c, s), p in pi.items():
        if not rates[s] or c >= R:
            continue
        for i in range(1, R - c + 1):
            w = p * ctx.num(rates[s] * model.batch.tail(i - 1))  # P(X >= i) = P(X > i - 1)
            weights[c + i - 1] = weights.get(c + i - 1, 0) + w
    total = ctx.fsum(list(weights.values()))
    return {n: w / total for n, w in sorted(weights.items())}


def instant_wait(model, dps: int, times=(), moments: int = 0, sojourn: bool = False):
    """(P(T > t) for t in ``times``, [E T^1..E T^moments]) at ``dps`` digits, T the wait (or the sojourn) of an
    admitted customer (module docstring); exponential service only."""
    from ..backend import mp_context

    ctx = mp_context(dps)
    with ctx:
        law = instant_entry_law(model, ctx)
        shift = 1 if sojourn else 0
        mu = 1 / ctx.num(model.service.moment(1))

        def at(t):
            x = mu * ctx.num(Fraction(t))
            return ctx.fsum([a * mpmath.gammainc(n + shift, a=x, regularized=True)
                             for n, a in law.items() if n + shift])

        tails = [at(t) for t in times]
        moms = [ctx.fsum([a * mpmath.rf(n + shift, k) for n, a in law.items()]) / mu ** k
                for k in range(1, moments + 1)]
    return tails, moms
