"""The level-crossing ("cut") recursion (2b) for the embedded chain of the vacation queue.

Summing the balance equations (2) of ``spec/chapter2.md`` over levels 0..j gives
"flow up across the cut between j and j+1 = flow down across it"::

    a_0 q~_{j+1} = q~_0 cbar_j + sum_{i=1}^{j} q~_i abar_{j-i+1},   q~_0 = 1     (2b)

with ``abar_n = sum_{m>n} a_m``, ``cbar_n = sum_{m>n} c_m``. Every term is
positive, so float64 keeps full relative accuracy for every q~_j, however small
(the thesis form (2a) subtracts and loses it at light load: section 4 of the spec).
The unnormalised q~ is defined for every load; for rho_bar < 1, q_j = q_0 q~_j.
"""

from __future__ import annotations

import numpy as np

from .backend import Backend

__all__ = ["cut_recursion"]


def cut_recursion(a0, abar: np.ndarray, cbar: np.ndarray, n: int, bk: Backend, start: np.ndarray | None = None) -> np.ndarray:
    """q~_0..q~_n from (2b); ``abar[m]``, ``cbar[m]`` for m = 0..n-1 at least.

    ``start`` continues an earlier run (its q~ values are kept; the recursion is
    homogeneous, so a rescaled prefix with q~_0 != 1 is continued consistently), so a sweep over
    n costs no more than its largest n. Call inside ``with bk:``.
    """
    q = bk.zeros(n + 1)
    done = 0
    if start is not None and len(start):
        done = min(len(start), n + 1)
        q[:done] = start[:done]
    else:
        q[0] = bk.num(1)
        done = 1
    for j in range(done - 1, n):
        # q~_{j+1} = (cbar_j + sum_{i=1}^{j} q~_i abar_{j-i+1}) / a_0
        s = q[0] * cbar[j] + (bk.dot(q[1 : j + 1], abar[j:0:-1]) if j >= 1 else 0)
        q[j + 1] = s / a0
    return q
