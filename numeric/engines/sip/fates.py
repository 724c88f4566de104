"""The transaction fates: the copies a transaction sends, its timeout, its rejection, its response tail (copies,
timeouts, Retry-After).

From p = P(a copy is refused), q = 1 - p and F(t) = P(R_copy > t) of an admitted copy, the fates of one transaction
with copy instants tau_0 = 0 < tau_1 < ... < tau_{n-1} < timeout (the module docstring of
:mod:`qderive.numeric.engines.sip`, (S), (C), (T), (J)); and the transaction rates with Retry-After, (R). No
server here: the routes (:mod:`.routes`) give p, q and F.
"""

from __future__ import annotations

from ...backend import FLOAT64, mp_context

__all__ = ["needed_times", "copy_fates", "transaction_rates"]


def needed_times(rejects: bool, taus, timeout, tail_times=()):
    """The times t > 0 at which F(t) is needed by :func:`copy_fates` (``rejects``: the fates of ``503``, a refused
    copy 0 ends the transaction; else a refusal is silent)."""
    need = set()
    if rejects:
        need.update(taus[1:])
        need.add(timeout)
        need.update(t for t in tail_times if 0 < t < timeout)
        return sorted(need)
    for k in range(1, len(taus)):
        need.update(taus[k] - taus[j] for j in range(k))
    need.update(timeout - t for t in taus)
    for T in tail_times:
        if T < timeout:
            need.update(T - t for t in taus if t < T)
    return sorted(need)


def copy_fates(rejects: bool, taus, timeout, p, q, F, tail_times=()):
    """E[copies], P(timeout), P(reject), P(answered) and S(T) = P(R > T) for T in ``tail_times`` (module docstring,
    (S), (C), (T), (J)) from p = P(a copy is refused), q = 1 - p and F (a dict t -> P(R_copy > t) for the times of
    :func:`needed_times`), in the arithmetic of p. P(answered) is a sum of nonnegative terms (the goodput keeps its
    relative accuracy when almost every transaction times out)."""
    one = p * 0 + 1
    zero = 0 * one

    def f(t):
        return one if t <= 0 else F[t]

    n = len(taus)
    ends = list(taus[1:]) + [timeout]
    if rejects:
        # copy 0 refused: rejected; admitted: copy k sent iff R_0 > tau_k (a refused later copy is absorbed)
        sent = [one] + [q * f(taus[k]) for k in range(1, n)]
        mean = sum(sent[1:], one)
        reject = p
        timeout_p = q * f(timeout)
        # answered: R_0 in (tau_m, tau_{m+1}] (tau_n = timeout), a sum of nonnegative terms
        answered = sum((q * max(zero, f(taus[m]) - f(ends[m])) for m in range(n)), zero)

        def S(T):
            return p + q * f(min(T, timeout))
    else:
        def S_before(T, m):
            return p**m + sum((p**j * q * f(T - taus[j]) for j in range(m)), zero)

        sent = [one] + [S_before(taus[k], k) for k in range(1, n)]
        mean = sum(sent[1:], one)
        reject = zero
        timeout_p = S_before(timeout, n)
        answered = sum((p**j * q * (1 - f(timeout - taus[j])) for j in range(n)), zero)

        def S(T):
            if T >= timeout:
                return timeout_p
            return S_before(T, sum(1 for t in taus if t <= T))
    return {"mean_copies": mean, "timeout_probability": timeout_p, "reject_probability": reject,
            "answered": answered, "sent": sent, "tail": [S(T) for T in tail_times]}


def transaction_rates(requests, fates, retries: int, digits):
    """Lambda_0i of each flow: lambda_i (``requests``) without Retry-After (``retries`` 0), else (R)::

        Lambda_0i = lambda_i (1 + J_i + ... + J_i^m),   J_i = P_i(reject) of one transaction       (R)

    (a rejected request comes back as a new transaction, at most m times; a sum of positive terms, no
    1 - J subtraction). ``fates`` the flows' :func:`copy_fates`."""
    ctx = FLOAT64 if digits is None else mp_context(digits + 10)
    rates = [ctx.num(r) for r in requests]
    if not retries:
        return rates
    out = []
    for r, f in zip(rates, fates):
        J, term, total = f["reject_probability"], ctx.num(1), ctx.num(1)
        for _ in range(retries):
            term = term * J
            total = total + term
        out.append(r * total)
    return out
