"""The idle passage of a start threshold N > 1 on power series in the count, at the nodes of a transform.

The interpreter of the blocks' primitives behind the wait with a start threshold N > 1 (the derivation:
``qderive.numeric.engines.blocks_threshold``, whose docstring gives the formulas; Takagi 1991, vol. 1, sec. 2.4-2.5;
Kella and Whitt 1992), written once over an arithmetic context so that the same source runs in the package (float64
and mpmath) and in generated code (``qderive codegen vacation-infinite|vacation-finite --start-threshold N
--measure wait_tail``). It runs a *plan* of stages (:func:`qderive.numeric.kernels.idle_passage.run_passage`) or the
blocks' own passage, a stage naming its law by any key the hooks understand.

Two sub-laws over the count w below N (truncated series, with their value at w = 1) are carried per node:
``pre`` (the count before the tagged customer's arrival, each customer weighted by B*(s)) and ``post`` (after it,
weighted by e^{-s t}). A period of law L multiplies ``pre`` by L*(lambda - lambda X(B* w)) and ``post`` by
L*(s + lambda - lambda X(w)), and carries ``pre`` into ``post`` by the divided difference (L*(p) - L*(q)) / (q - p)
times kappa(w) = sum_k x_k w^k sum_{i<k} B*^i. At the end ``finish`` gives (Y(B*(s)), idle(s)), and ``excess`` the
part of the customers still below N where a threshold is checked (the finite room's Delta(s)).

The laws enter through three hooks of a subclass (or of the object given): ``law_counts(law)`` the probabilities
a_k, k < N, of k customers arriving during one period; ``law_transform(law, z)`` L*(z) at a context array z;
``law_taylor(law, z, n)`` the Taylor coefficients L*^(j)(z) / j!, j < n.
"""

from .series import add, compose, inverse, mul, scale


class ThresholdSum:
    """A sub-law over the count: ``low`` its (weighted) series below N, ``one`` its generating function at w = 1."""

    __slots__ = ("low", "one")

    def __init__(self, low, one):
        self.low, self.one = low, one

    def __add__(self, other):
        return ThresholdSum(add(self.low, other.low), self.one + other.one)

    def times(self, series, value):
        return ThresholdSum(mul(self.low, series), self.one * value)


class ThresholdSeries:
    """The primitives ``during``, ``interrupt``, ``wait``, ``repeat`` on (pre, post) at the nodes ``s`` (a context
    array; None: the limit s -> oo, which gives P(W = 0)), ``top`` = N, ``lam`` the batch rate, ``x`` the batch pmf
    x_0..x_{N-1}, ``B`` = B*(s) and ``XB`` = X(B*(s)) at the nodes (zero arrays at the limit), ``one`` the context's
    ones of the nodes' shape. The hooks ``law_counts``, ``law_transform``, ``law_taylor`` (module docstring) are
    methods of a subclass."""

    def __init__(self, ctx, s, top, lam, x, B, XB, one):
        self.ctx, self.s, self.top, self.lam = ctx, s, top, lam
        self.limit = s is None
        self.one_array = one
        self.zero = one * 0
        self.x = list(x[:top])
        self.B, self.XB = B, XB
        powers = [one]
        for _ in range(1, top):
            powers.append(powers[-1] * B)
        self.powers = powers
        # kappa_k = x_k sum_{i<k} B^i; kappa(1) = (1 - X(B)) / (1 - B) (B = 0 at the limit: X(0) = 0, kappa(1) = 1)
        partial = [self.zero]
        for k in range(1, top):
            partial.append(partial[-1] + powers[k - 1])
        self.kappa = [partial[k] * self.x[k] for k in range(top)]  # arrays first: mpf * ndarray converts slowly
        self.kappa1 = one * 1 if self.limit else (1 - XB) / (1 - B)
        self.XBw = [powers[k] * self.x[k] for k in range(top)]
        self.Xw = [one * self.x[k] for k in range(top)]
        self.theta = self.zero if self.limit else 1 / (s / lam + 1)
        self.served, self.direct = self.zero, self.zero
        #: the excess (the finite room's Delta(s)): sum over the threshold stages of what the customers still below N
        #: at the stage add to their wait, times the later stages' L*(s)
        self.excess = self.zero
        self._laws = {}

    # -- the hooks ------------------------------------------------------------------------------------------
    def law_counts(self, law):
        raise NotImplementedError

    def law_transform(self, law, z):
        raise NotImplementedError

    def law_taylor(self, law, z, n):
        raise NotImplementedError

    # -- the laws' series -----------------------------------------------------------------------------------
    def _law(self, law):
        """(Apre series, Apre(1), Apost series, Apost(1) = L*(s), DD series, DD(1)) of ``law`` at the nodes."""
        if law in self._laws:
            return self._laws[law]
        lam, top = self.lam, self.top
        a = self.law_counts(law)
        pre = [self.powers[k] * a[k] for k in range(top)]
        if self.limit:
            pre1 = self.one_array * a[0]
            post, post1 = [self.zero] * top, self.zero
            dd, dd1 = [self.zero] * top, self.zero
        else:
            pre1 = self.law_transform(law, (1 - self.XB) * lam)
            taylor = self.law_taylor(law, self.s + lam, top)
            post = compose(taylor, [x * (-lam) for x in self.Xw])
            post1 = self.law_transform(law, self.s)
            # q - p = s - lambda X(w) + lambda X(B w): constant s, invertible
            diff = [self.s] + [(self.XBw[k] - self.Xw[k]) * lam for k in range(1, top)]
            dd = mul(add(pre, scale(post, -1)), inverse(diff))
            dd1 = (pre1 - post1) / (self.s - lam + self.XB * lam)
        self._laws[law] = out = (pre, pre1, post, post1, dd, dd1)
        return out

    def _check(self, threshold, most=None):
        if threshold != self.top:
            raise NotImplementedError("a threshold below the largest one of the passage")
        if most is not None:
            raise NotImplementedError("a bounded repeat with a start threshold N > 1")

    # -- the primitives -------------------------------------------------------------------------------------
    def start(self):
        low = [self.one_array] + [self.zero] * (self.top - 1)
        return ThresholdSum(low, self.one_array), ThresholdSum([self.zero] * self.top, self.zero)

    def during(self, state, law, vacation=False):
        pre, post = state
        apre, apre1, apost, apost1, dd, dd1 = self._law(law)
        post = post.times(apost, apost1) + pre.times(mul(self.kappa, dd), self.kappa1 * dd1)
        self.excess = self.excess * apost1
        return pre.times(apre, apre1), post

    def interrupt(self, state, law):
        pre, post = state
        c = self.law_counts(law)[0]  # L*(lambda): no batch in the close-down
        self.served = self.served + pre.one * self.XB * (1 - c)
        self.direct = self.direct + pre.one * self.kappa1 * ((1 - c) / self.lam)
        return ThresholdSum(scale(pre.low, c), pre.one * c), post

    def wait(self, state, threshold):
        self._check(threshold)
        pre, post = state
        empty = [self.zero] * self.top
        V = mul(pre.low, inverse([1 - self.XBw[0]] + [-v for v in self.XBw[1:]]))
        v1 = sum(V[1:], V[0])
        new_pre = ThresholdSum(empty, pre.one + v1 * (self.XB - 1))
        R = ThresholdSum(add(post.low, scale(mul(self.kappa, V), 1 / self.lam)), post.one + self.kappa1 * v1 / self.lam)
        U = mul(R.low, inverse([1 - self.theta * self.Xw[0]] + [-self.theta * v for v in self.Xw[1:]]))
        u1 = sum(U[1:], U[0])
        self.excess = self.excess - (1 - self.theta) * u1
        return new_pre, ThresholdSum(list(empty), R.one - (1 - self.theta) * u1)

    def repeat(self, state, law, threshold, most=None):
        self._check(threshold, most)
        pre, post = state
        apre, apre1, apost, apost1, dd, dd1 = self._law(law)
        empty = [self.zero] * self.top
        V = mul(pre.low, inverse([1 - apre[0]] + [-v for v in apre[1:]]))
        v1 = sum(V[1:], V[0])
        new_pre = ThresholdSum(empty, pre.one + v1 * (apre1 - 1))
        E = ThresholdSum(mul(mul(self.kappa, V), dd), self.kappa1 * v1 * dd1)
        U = mul(add(post.low, E.low), inverse([1 - apost[0]] + [-v for v in apost[1:]]))
        u1 = sum(U[1:], U[0])
        self.excess = self.excess + u1 * (apost1 - 1)
        return new_pre, ThresholdSum(list(empty), post.one + E.one + u1 * (apost1 - 1))

    def finish(self, state):
        pre, post = state
        return pre.one + self.served, post.one + self.direct


def threshold_wait(op, y, idle, lam, gap, mean_y):
    """W(s) = lambda (1 - rho_bar) / E[Y] [kappa(1) (1 - Y(B*(s))) / phi(s) + idle(s)] of the infinite room
    (``qderive.numeric.engines.blocks_threshold``), phi(s) = s - lambda (1 - X(B*(s))), from the interpreter ``op``
    that ran the passage and its result (``y``, ``idle``); ``gap`` = 1 - rho_bar, ``mean_y`` = E[Y]."""
    phi = op.s - (1 - op.XB) * lam
    return (op.kappa1 * (1 - y) / phi + idle) * (lam * gap / mean_y)
