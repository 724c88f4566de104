"""The sojourn of an admitted copy whose own service differs from the server's: T = W + B_own (S1).

The one helper of the mixture server (:mod:`.mixture`) and of the departure-epoch control chain (:mod:`.control`):
in a FIFO queue with single Poisson arrivals the wait W of a tagged copy depends only on the state it finds and the
copies ahead, so its sojourn is W + B_own with B_own its own service law, independent of W (``docs/guides/
sip-retransmission.md``, *The mixture server*; :mod:`.mixture` (S1)). :func:`smooth_laws` says whether the Euler
inversion of such a transform is allowed (no exp(-s D) factor).

Kept apart from :mod:`.mixture` so that :mod:`.control` (which the mixture's control room uses) needs no import of
:mod:`.mixture`: the two modules formed an import cycle before.
"""

from __future__ import annotations

import functools
import json
import math
import types
from fractions import Fraction

import numpy as np

from ...backend import FLOAT64, mp_context
from ...response import ResponseLaw

__all__ = ["plus_own", "smooth_laws"]


def smooth_laws(laws, vacation=None) -> tuple[bool, str]:
    """(True, "") when every time law of ``laws`` and the vacation (None: none) has a smooth transform (no exp(-s D)
    factor; :func:`~qderive.numeric.engines.vacation_wait.smooth_laws`), else (False, the reason). A mixture of smooth
    laws is smooth. Kept in the private cache under the laws' texts (never under a mixture's weights) and in the
    process (the servers of the inner unknowns ask it at every evaluation of the map)."""
    for law in laws:
        got = _smooth_law(law, vacation)
        if not got[0]:
            return got
    return True, ""


@functools.lru_cache(maxsize=64)
def _smooth_law(law, vacation):
    from ....symbolic.cache import cached
    from .. import vacation_wait as VW

    vtext = None if vacation is None else vacation.spec_text()
    key = "finite_wait_smooth_v3::" + json.dumps({"service": law.spec_text(), "vacation": vtext}, sort_keys=True)
    return cached(key, lambda: VW.smooth_laws(types.SimpleNamespace(service=law, vacation=vacation)))


def plus_own(wait: ResponseLaw, own, lam, smooth=None, why="") -> ResponseLaw:
    """The sojourn law T = W + B_own of (S1), W of law ``wait`` and B_own of law ``own`` independent (module
    docstring): transform W(s) beta_own(s) (the own law's compiled transform at the nodes,
    :func:`~qderive.numeric.engines.vacation_finite_wait.lst_at`), moments E T^j = sum_i C(j, i) E W^i E B_own^(j-i),
    P(T = 0) = 0 (a service time is a.s. positive). ``smooth``: default ``wait.smooth`` and ``own``'s own
    (:func:`smooth_laws`); ``why`` the reason when not smooth. ``lam`` the copy rate (an argument of the compiled
    pair of transforms; only beta_own(s) is used)."""
    from ..vacation_finite_wait import lst_at

    if smooth is None:
        smooth, why = smooth_laws((own,)) if wait.smooth else (False, wait.why_not_smooth)
    wait_transform, wait_moments = wait.transform, wait.moment_values

    def transform(ctx):
        f = wait_transform(ctx)

        def at(s):
            z = np.asarray(s).ravel()
            if ctx.is_float64:
                b = lst_at(own, FLOAT64, z.astype(complex), float(lam))[0]
                return (f(z) * b).reshape(np.shape(s))
            with ctx:
                b = lst_at(own, ctx, z, ctx.num(lam))[0]
                return (f(z) * b).reshape(np.shape(s))
        return at

    def moments(k, digits):
        """E (W + B_own)^j = sum_i C(j, i) E W^i E B_own^{j-i}, j = 1..k (W and B_own independent)."""
        mw = [1] + list(wait_moments(k, digits))
        mb = [Fraction(own.moment(i)) for i in range(k + 1)]
        num = float if digits is None else mp_context(digits + 10).num
        return [sum(math.comb(j, i) * mw[i] * num(mb[j - i]) for i in range(j + 1)) for j in range(1, k + 1)]

    def no_atom(ctx):
        return ctx.num(0)

    return ResponseLaw("sojourn", transform, no_atom, moments, smooth, why, None)
