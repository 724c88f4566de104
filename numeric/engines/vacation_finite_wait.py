"""Waiting and sojourn time of an admitted customer of M[X]/G/1/r with vacations, for general laws.

:func:`response_laws` (the ``response`` of :class:`~qderive.symbolic.models.vacation.FiniteVacationQueue`)
gives the wait W and the sojourn W + B of a random *admitted* customer as
:class:`~qderive.numeric.response.ResponseLaw` objects; the algorithms are the kernel
:mod:`qderive.numeric.kernels.finite_wait`. Notation of ``docs/theory/chapter2.md`` section 0; levels n are
numbers waiting, n = 0..r-1 (a batch that finds r waiting admits nobody).

**1. The state an arriving batch sees** (PASTA) is the time-stationary one, and by renewal reward over
the embedded intervals ((4), (9) of the spec) the time-stationary expectation of a functional is the
sum over embedded states of q^r_i times the expected integral of that functional over the interval that
follows, divided by C^r. The embedded law q^r (Statement 1 for partial admission, level crossing for
whole admission) is the finite engine's (:mod:`qderive.numeric.kernels.vacation`). From state i >= 1 one
service starts with i - 1 waiting; from state 0 a vacation starts with nobody waiting (multiple and
single vacations) and, with single vacations if no batch was admitted during it (probability c_0, for
partial admission varphi_0) or always without vacations, an idle period follows (mean 1 / lambda, or
1 / (lambda P(X <= r + 1)) under whole admission: rejected batches do not end it), then a service that
starts with X - 1 waiting. So, with q normalised (C^r cancels below):

    Y_n = q_{n+1} + q_0 c_I l_{n+1} / f_I    (services starting with n waiting),  V = q_0 at level 0,
    t_I = q_0 c_I / (lambda f_I)               (idle time),

c_I = 0, c_0, 1 for multiple, single, no vacations; f_I = 1 (partial) or P(X <= r + 1) (whole).

**2. Levels and residuals.** During a service that started with the level vector w, after K batches the
level vector is w L^K, L one batch: (w L)_n = sum_{k=1}^{n} l_k w_{n-k} (partial admission; mass at
level r or above is dropped, it admits nobody), plus keep_n w_n with keep_n = P(X > r - n) under whole
admission (a batch that does not fit is rejected and the level stays). With N(x) Poisson(lambda x)
batches by age x and the residual B - x, the joint transform of (level, residual) over the service is

    Phi^s_n(s) = E int_0^B 1{level(x) = n} e^{-s (B - x)} dx = sum_K g_K(s) (Y L^K)_n,
    g_K(s) = E int_0^B (lambda x)^K / K! e^{-(lambda - s) x} e^{-s B} dx,
    sum_K g_K(s) w^K = (beta(s) - beta(lambda (1 - w))) / (lambda (1 - w) - s),

so that (lambda - s) g_0 = beta(s) - beta_0 and (lambda - s) g_K = lambda g_{K-1} - beta_K (integration by
parts; beta_K the batch counts of the spec). Likewise Phi^v with h_K (varphi_K) and V for the vacations,
and Phi = Phi^s + Phi^v. At s = 0, g_K(0) = P(K' > K) / lambda and Phi(0) is the level-time numerator of
(9). *Correction to the sketch:* for partial admission (Y L^K)_n = (Y * l^{(K)})_n for n < r, so that
Phi^s_n = sum_i Y_i u_{n-i}(s) with u_n(s) = sum_K g_K(s) l^{(K)}_n, as sketched; under whole
admission the level is *not* the start level plus the customers arrived (a rejected batch can be
followed by an admitted smaller one), and the batch-by-batch level process above replaces u_n.

**3. The admitted customers.** A batch arriving at level n admits its customer at position m iff
n + m <= r (partial) or n + X <= r (whole; customer-average P(position = m) = P(X >= m) / l_1, jointly
with X), and that customer waits the residual of the current service or vacation plus n + m - 1
services. Summing over positions (FIFO; every admitted customer counted once):

    N(s) = sum_{n<r} Phi_n(s) A_n(s) + t_I A_I(s),   W*(s) = E e^{-s W} = N(s) / N(0),
    partial: A_n = b^n P_{r-n}(b), A_I = P_{r+1}(b), P_k(b) = sum_{m=1}^{k} P(X >= m) b^{m-1},
    whole:   A_n = b^n D_{r-n}(b), A_I = D_{r+1}(b), D_k(b) = sum_{j=1}^{k} l_j (1 + b + ... + b^{j-1}),

with b = beta(s). At an idle server the first customer starts at once and the m-th waits m - 1
services. N(0) lambda / C^r is the admitted rate lambda l_1 (1 - pi) of Theorem 1.1 (12), here a sum of
positive terms (no 1 - loss). The sojourn is W*(s) beta(s); P(W = 0) = t_I A_I(oo) / N(0) with
A_I(oo) = 1 (partial) or P(X <= r + 1) (whole): every residual is a.s. positive.

**4. Phi(s) at a complex node, stably.** Two ways, both in the kernel:

* *by batches*, Phi = G W with W the rows Y L^K, V L^K (K up to where P(K' > K) is negligible; under
  partial admission the rows vanish for K >= r) and G = (g_K(s)): the recursion (lambda - s) g_K =
  lambda g_{K-1} - beta_K multiplies errors by lambda / |lambda - s| per step forward and by its inverse
  backward, so it runs forward where |lambda - s| >= lambda (from g_0, with the difference quotient
  (beta(s) - beta(lambda)) / (lambda - s) cancelled symbolically for rational transforms: no cancellation
  at small s) and backward from g_top = 0 elsewhere (its error there, P(K' > top) / lambda, only shrinks).
  Measured at 30 digits (r = 200, rho_bar = 0.3): the backward sweep gives 1e-30 relative at every node;
  the forward one, used at |lambda - s| < lambda, 1e-20 at s = lambda / 2 and 1e+36 at s = 1.1 lambda.
  O(top r) per node.
* *by customers*: summing (lambda - s) g_K = lambda g_{K-1} - beta_K against the rows gives, with
  F_n = 1 (partial) or P(X <= r - n) (whole), Z' = sum_{K>=1} (beta_K Y L^K + varphi_K V L^K),

      (lambda F_n - s) Phi_n = lambda sum_{k=1}^{n} l_k Phi_{n-k} + (lambda - s)(g_0 Y_n + h_0 V_n) - Z'_n,

  O(r) per node (O(1) per level for geometric batches). An error at level m reaches level n with a
  factor that is a sum over batch paths of products of lambda / (lambda F - s) times batch
  probabilities: at most 1 in modulus where lambda / |lambda F_n - s| <= 1 for all n; for geometric
  batches under partial admission it is exactly theta p zeta^{n-m-1}, theta = lambda / (lambda - s),
  zeta = theta p + q, so the condition is |zeta| <= 1 (a larger region). Outside, errors grow like
  |zeta|^r: measured 1e-23 to 1e-18 relative at |zeta| = 1.2 and 1e+52 at |zeta| = 2.8 (geometric, r = 200), 1e-1
  at |theta| = 2 and 1e+85 at |theta| = 10 (pmf batches); inside, 1e-30 at 30 digits.

float64 uses the batch way at every node (one matrix product; entries below 1e-150 of their scale are
dropped, since subnormal products slow the arithmetic a hundredfold). mpmath uses the customer way
where it is stable and the batch way elsewhere, at ctx.dps + guard digits, in gmpy2 numbers (8 times
faster than mpmath's here; the inputs and results are converted exactly). The s-independent data are
built once per law object at the precision asked plus a headroom.

**5. Moments** come from the same sums as power series in -s, every coefficient a sum of positive
terms: the residual moments M[p, K] = E int_0^B (lambda x)^K / K! e^{-lambda x} (B - x)^p / p! dx =
T^{(p+1)}_K / lambda^{p+1} are higher-order tails of the batch counts (T^{(1)} = P(K' > K), T^{(j)}_K =
sum_{i > K} T^{(j-1)}_i; the derivatives of g_K(s) at 0 by the *backward* recursion m^p_{K-1} = m^p_K +
m^{p-1}_K / lambda, whereas the forward one subtracts), and the powers of beta's series (b_p / p!) by
positive recursions; E W^k = k! [s^k] N(-s) / N(0). They are evaluated in float64 or in mpmath at D + 10
+ guard digits (not exact rationals: the count sequences are infinite sums).

*Only the rows that do not vanish* (issue 30): under partial admission the rows Y L^K, V L^K vanish for K >= r
(every batch adds at least one customer), so M[p, K] is needed for K < r only, and the higher tails there follow
from the law's own moments instead of sums to where the count is negligible: T^{(j)}_K = E binom(K' - K - 1,
j - 1) 1{K' > K} (hockey stick), so T^{(j)}_{-1} = E binom(K', j - 1) = lambda^{j-1} E B^{j-1} / (j - 1)! (the
factorial moments of the Poisson count during B: the definition of beta_k, ``docs/theory/chapter2.md`` section 0),
and T^{(j)}_{r-1} = E binom(K', j - 1) - sum_{i<r} T^{(j-1)}_i, one subtraction per order whose absolute error
(r + 1) eps E binom(K', j - 1) is the same for every K (the sums above it are positive): it costs at most log10(r E
binom(K', p) / M[p, 0]) digits, covered by the guard digits; float64 sums the same bound through the moments
(:func:`remainder_bound`) and goes to mpmath (16 digits, with a note) where it exceeds 1e-10 relative (measured:
within 1e-12 of the summation to negligibility for a hyperexponential service with a slow branch, 30 digits within
1e-26; tests/test_finite_wait_moments.py). A heavy-tailed law gains most: the count sequences of a lognormal service
needed ~10^3 terms converged to (n + 1)^{-(k+1)} for E W^k (k = 4: refused by ``count-work`` after 60 s of CPU);
now 0..r - 1 at 0.1 s. Whole admission keeps a level's mass when a batch does not fit, so the rows do not vanish:
they are cut where |1 L^K| <= eps/256 (:func:`~qderive.numeric.kernels.finite_wait.wait_rows_needed`; |w L^K| <=
|w| |1 L^K| for w >= 0), the same totals giving the remainders. A level that no batch fits (P(X <= r - n) = 0, e.g.
n > r - 5 for batches of 5) would keep its mass for ever, but nobody is admitted there (A_n = 0 below) and levels
only rise, so the moments' rows drop its mass (:func:`~qderive.numeric.kernels.finite_wait.wait_keep`): the rows on
the other levels, hence N(s), are unchanged, and a constant batch's rows vanish after at most ceil(r / X) + 1
batches (r = 129, batches of 5, a lognormal service: E W^2 was refused by ``count-work`` after ~27 s of CPU; now
the moments cost under 1 s beside the finite engine's 15 s; float64 within 2.6e-15 and 30 digits within 5e-41 of
the summation to negligibility for a hyperexponential service, tests/test_finite_moments_whole.py). Rows that decay
slowly (a batch mean of 200: level r - 1 keeps 199/200 of its mass per batch, ~9 x 10^3 batches) are followed up to
:data:`ROWS_LIMIT` batches (float64: more while cheap); beyond, the count sequences run to negligibility.
float64 moments that fail their bound, or whose data over- or underflow, raise
:class:`~qderive.numeric.engines.base.Trouble`: the response's policy recomputes them at 16 digits with a note
(:func:`~qderive.numeric.response.noted_moments`). These data (:meth:`FiniteWait.moment_data`) are the moments'
own; the transform's backward sweep from g_top = 0 still needs the counts up to where they are negligible
(:meth:`FiniteWait.data`).

**6. The period families: a setup and a close-down** (start threshold N = 1; the blocks of
:mod:`qderive.symbolic.blocks`, their stages :func:`~qderive.symbolic.blocks.machine.machine`). The non-serving
time is a list of families of periods, each with the law of the number present at its starts V^f (weighted like
Y, per unit of the departure chain), its law F (count sequences varphi^f) and the *suffix*: the laws of the
stages a customer present at its end waits through in full before the first service (N = 1: the later ``during``
stages really entered, i.e. the setup after a vacation or a wait). A customer admitted at level n, position m,
during a period of family f waits its residual, the suffix and n + m - 1 services; so, grouping the families by
suffix S,

    N(s) = sum_S prod_{L in S} L*(s) [ sum_{n<r} (Phi^S_n(s) + T^S_n) A_n(s) + t^S_I A_I(s) ],
    Phi^S_n(s) = [S = ()] Phi^s_n(s) + sum_{f in S} sum_K h^f_K(s) (V^f L^K)_n,

T^S_n the time at level n without a residual (waiting for the start before a setup: a batch finds r - n places)
and t^S_I the time where a batch's arrival starts service at once (a close-down, a wait that is the last stage:
r + 1 places, the first member served at once; S = ()). Today's rules are the case of one family, the
vacation (V = q_0 at level 0, no suffix), and t_I. The data come from the finite blocks' departure chain
(:mod:`~qderive.numeric.engines.blocks_finite`): Y_n = pi_{n+1} + pi_0 y_{n+1} (y the first service's law) and
pi_0 times what its passage interpreter computes per idle period (:func:`_recording`: a ``during`` stage's start
law, a ``repeat`` stage's periods -- all starting empty when N = 1 -- from its time over the law's mean, the level
times of a ``wait`` or ``interrupt``). The families' Phi by the two ways of item 4: by batches, each family's
residual weights h^f_K times its rows; by customers, the recursion being linear in its source, the services'
source (Z' summed over every family) plus one (lambda - s) h^f_0 V^f per family (measured at r = 200, 30 digits,
a gamma setup and a close-down: a tail point 5 s with the data, 1.3 s after; without blocks 3.4 s and 0.4 s).
The moments by item 5 per family, times the suffix laws' series. Checked against the tagged-customer chain of
:func:`qderive.numeric.oracles.blocks.tagged_wait` (tests/test_blocks_finite_wait.py: 1e-40 at 30 digits for the
three rules, both admissions, setup, close-down and both).

**7. A start threshold N > 1** (N <= r; partial admission, and whole admission when no batch can be refused
below N). The idle passage checks the count (admitted customers, later arrivals included) against N at the end of
a vacation before a ``wait``, at every vacation's end of a ``repeat``, and at each batch's arrival in a ``wait``.
Write every admitted customer's wait as item 6's with the thresholds *met* -- the residual of its period, the
later ``during`` stages really entered when the count is at least N (the setup), the n + m - 1 services ahead --
plus what it waits beyond that when the count is still below N where the threshold is checked: the later batches
that bring the count to N (``wait``), more vacations (``repeat``). Item 6 with the thresholds met needs the
``repeat``'s periods starting at the levels k < N (the stage's start law V: the kernel's own visits U_k,
U_k (1 - a_0) = v_k + sum_{i>=1} U_{k-i} a_i, or its room process's under whole admission) and the ``wait``'s
levels 0..N-1 (``flat``: r - n places, a setup follows; ``once``: service at once, r + 1 - n places, the customer
at position m waiting n + m - 1 services, A^+_n = b^n P_{r+1-n}(b), whole admission b^n D_{r+1-n}(b)). The rest,
summed over the customers still below N where the threshold is checked,

    Delta(s) = E sum (e^{-s (extra)} - 1) e^{-s (residual + later full periods)} beta(s)^{ahead}   (per idle period),

involves only customers whose count stayed below N <= r: their batch was admitted whole and no batch was cut
before them, so under partial admission the count's law below N, their positions and the customers ahead are
those of the infinite room; under whole admission too when every batch that can arrive below N fits,
X <= m (:func:`places_below_threshold`: at level j < N a batch of k fits when k <= r - j in a vacation, a
``repeat`` or a ``wait`` a setup follows, so m = r - N + 1; when the only stage holding customers below N is a
``wait`` ending the passage -- no vacation, no setup -- the batch that meets N starts service at once and finds
r + 1 - j places, and a smaller batch always fits, so m = r - N + 2). It is the low part of the infinite room's
later-arrival recursion, :func:`~qderive.numeric.engines.blocks_threshold.threshold_excess` (its ``pre`` and
``post`` series truncated at w^N: - (1 - theta) U(1) at a ``wait``, U(1) (L*(s) - 1) at a ``repeat``, times the
later stages' L*(s)), and

    N(s) = (item 6 with the thresholds met) + pi_0 Delta(s),   N(0) unchanged (Delta(0) = 0),

P(W = 0) with pi_0 Delta(oo) (a first member arriving at level 0 whose batch does not reach N waits), the moments
with the Taylor coefficients of Delta at 0
(:func:`~qderive.numeric.engines.blocks_threshold.threshold_excess_moments`, the trapezoidal rule on a small
circle). Under whole admission with P(X > m) > 0 a batch refused below N does not count and the count
below N depends on the room: the low part would need functions of triangular, non-Toeplitz count matrices (the
exit rate lambda P(X <= r - j) depends on the level j; the ``pre`` -> ``post`` divided difference becomes a
Sylvester-type integral of two such matrix exponentials, and the tagged batch's admission depends on its level);
refused for the wait and the sojourn (:func:`refused_below_threshold`; without the rule, measured, E[W] = 2.0246
against the chain's 2.1070); the queue-length measures (the finite blocks' departure chain) are computed.
Checked against
:func:`~qderive.numeric.oracles.blocks.tagged_wait` (the true count while idle;
tests/test_blocks_finite_wait_threshold.py: 1e-39 at 30 digits, N = 2, 3 and N = r, the three rules, both
admissions, with and without a setup and a close-down), and in a large room at a low load against the infinite
room's (WN).

**8. A heavy-tailed law: the lognormal** (service or vacation, with a smooth other law; issue 28, branch lg28). Its
transform is the law's own numeric one (``LogNormal.transform_values``, with its error bound), and items 1-4 need of
its counts beta_K only those the rows reach (partial admission: K < r) and, at a node where the backward sweep runs
(|c| < 1, c = (lambda - s) / lambda), as many more as its damping c_max^(T - k) asks (:meth:`FiniteWait.
_sweep_counts`); the summation to negligibility of item 5 would need 2247 terms in float64 and 10^4 to 10^6 at 40 to
80 digits. They come from the law's size-biased laws (:mod:`qderive.numeric.size_biased`: beta_K = lambda^K m_K / K!
L_K*(lambda), each by a trapezoidal rule centred at its own integrand's peak, to the digits asked relative to
itself), N(0) from the law's totals (item 5). float64: the self-check of two parameter sets passes for a lognormal
service's tails above about 0.1 (the Euler sums' rounding, about 1e-11 absolute with its transform) and escalates
below (a note). Measured (r = 129, load 0.55, geometric batches of mean 4, a lognormal service of mean 0.012 and scv
2, exponential vacations of mean 0.06; CPU of the whole command on a machine with a load average of 5):
P(W > 0.5) = 0.028312031537855973 (15 digits, inside the capped lattice bracket [0.027767, 0.028851] it replaces) in
2.1 s, at r = 200 2.8 s, the 0.99 quantile 4.1 s (5.7 s at r = 200), --digits 20 2.5 s; an Erlang-2 service with
lognormal vacations (mean 0.06, scv 2): 0.04688006144770562 in float64, 0.5 s (docs/performance.md, "Lognormal laws
in the finite room by inversion"). Checked against mpmath's quadrature of the counts, the bracket, the infinite room
at r = 300, seeded simulations (tests/test_finite_lognormal_inversion.py). With a kinked other law the lognormal keeps
the lattice brackets ((F6) service, (F7) vacation, below); with a gamma or lognormal vacation a lognormal service is
inverted (:func:`_rounded`). *With blocks* (item 6, N = 1; branch lb26) a lognormal service, vacation, setup or
close-down is the same: :func:`block_parts` cuts its counts at the rows, gives its totals for N(0) and the moments'
remainders, and the nodes lengthen them (:meth:`FiniteWait._sweep_counts` reads every family's law); the setup as a
suffix by its own transform. Measured (r = 20, load 0.5, geometric batches of mean 2, a lognormal setup of mean 1 and
scv 2): P(W > 2) in 1.0 s of CPU from the CLI (refused before), E[W^2] 0.8 s (10 s before: the counts summed to
negligibility); checked against Little's mean wait of the departure chain, the infinite room in a large room, a seeded
simulation (tests/test_blocks_finite_lognormal.py). N > 1 too: the excess of item 7 takes the lognormal's derivatives
by its own rule on its size-biased laws, as the infinite room does (:func:`~.blocks.threshold_check` with
``derivatives``; E[W] equal to Little's to 5e-41 at 30 digits, the infinite room's (WN) in a large room).

A law whose transform has an exp(-s D) factor (deterministic, uniform, empirical) is marked not smooth,
as for the infinite room, and transform inversion is not used for it. **A constant service D** has exact
tails instead (:func:`lattice_tails`): given the state at the batch's arrival the wait is the residual of the
period in progress plus j D, so P(W > t) is the finite sum of positive terms (F1) of
:mod:`qderive.numeric.kernels.lattice_finite` over the rows w_K of item 4 and the residual weights omega_K
(regularized incomplete gamma functions; (F4) for matrix-exponential pieces), with no vacations or with
vacations whose survival function is given by exact pieces (exponential, hyperexponential, constant,
empirical, Erlang, Coxian, phase-type; ``TimeLaw.survival_pieces``); both admission rules, the three
policies, and the hysteretic modes by the same code. **A phase-type service with constant, empirical or uniform
vacations** (exponential, Erlang, integer gamma, hyperexponential, Coxian or PH service; :func:`kinked_setup`,
:func:`kinked_tails`) has exact tails as well: given the state at the batch's arrival the wait is the residual of
the period in progress plus j services, so P(W > t) is the positive sum (K1)-(K2) of
:mod:`qderive.numeric.kernels.finite_kinked` over the same rows w_K: the service uniformized (a block chain of
step counts, Poisson weights at theta t), the constant vacation's residual d - x by the overlap weights
int_0^d Pois(K; lambda x) Pois(i; theta x) dx folded into one start by Horner (Poisson weights at theta (t - d));
both admission rules, the three policies, wait and sojourn, P(W > 0) = 1 - P(W = 0). A uniform vacation is a
mixture of constants: its density part by Gauss-Legendre over d of the constant-d sums, split at d = t (analytic on
each side), two orders that must agree (12 and 24 nodes in float64; about D / 3 and twice that at D digits,
doubled until they agree). **A service on a lattice or rounded to one** (empirical, uniform, any discrete law;
:func:`service_lattice_setup`, :func:`service_lattice_tails`; issue 28) with no vacations or vacations given by exact
pieces: the state at the arrival (rows w_K, admission weights, idle time) is the true law's, exactly as above, and
only the work ahead changes, W = (residual of the period) + S_j with j fresh services, so (F1) becomes the sum (F5)
of :mod:`qderive.numeric.kernels.lattice_finite` over the j-fold convolutions of the service's lattice pmf. A law
on a lattice g whose sums S_{r+1} span at most ``lattice_levels`` levels (a few coarse atoms) has exact tails under
the policy of the constant service (float64 within 1e-10, D digits in mpmath); any other law with a bounded cdf
(a sample off every coarse lattice, a uniform law) has certified brackets: every service rounded down and up to the
lattice h (both the services ahead and the period's residual: each term of (F5) is increasing in them), refined
to ``lattice_levels`` levels, the value the Richardson extrapolation of the midpoints inside the bracket, the
output's note "between A and B", --digits D only where the bracket has D digits (the infinite room's conventions,
:func:`~.vacation_wait.bound_tails`). The sojourn adds the customer's own service as one more convolution. Measured
(benchmarks/lattice_finite_service.py): 2000 lognormal service times, r = 129, load 0.55, P(W > 0.5) =
0.02901 in [0.02850, 0.02954] (3.5 % wide at 8192 levels); CPU: the first point 1.0 s with the solve (1.5 s at
r = 200), the next 0.02 s, the 0.99 quantile 2.2 s (search and the note's roots of both bounds), 20 loads 40 s
(measured before the tables below). The lognormal itself (mean 0.012, scv 2, capped (F6), r = 129, load 0.55;
issue 28; with a smooth vacation inverted since, item 8, with a constant one still so): P(W > 0.5) in
[0.027767, 0.028851], the first tail 3.0 s of CPU from the CLI and the 0.99 quantile 3.7 s
(4.6 s with r = 200) under a load average of 5 (before the kernel's t-free tables (F8), which let the search's
points share one product, and its blocked powers: 4.7 s and 13.3 s; before the octave tables of the count
sequences and the blocked sums of (F5): 10.9 s and 26.9 s). **A vacation with no exact pieces** (gamma of any
shape, lognormal, uniform; :class:`VacationRounding`, :func:`rounded_vacation_setup`; issue 28) with any of these
services (constant, empirical, uniform, lognormal), over the state at the arrival of the true law (its count
sequences as far as the rows reach, item 5: 0.3 s for a lognormal vacation at r = 129 where the transform's data take
10 s; P(W = 0) from the same data, ``rows_atom``). A law analytic on (0, oo) (gamma, lognormal), and a law analytic
between known kinks (uniform) with a service on a lattice g (a constant, a sample on a lattice): the residual weights
(F2) of its vacation periods by piecewise Gauss-Legendre quadrature in the age (F9) of
:mod:`qderive.numeric.kernels.vacation_quadrature` (12 and 24 nodes per cell, the cells split at every kink's point
k - u_j of the columns; the error BOUNDED by the Gauss-Legendre remainder on Bernstein ellipses where the law bounds its
survival function off the real axis -- uniform, gamma of integer shape -- else estimated by the two orders'
difference; bounds for the cell at 0 and the rest beyond the mesh), the same piece in the lower and the upper sum: with
a service on its lattice (a constant) the bracket is the quadrature's error, about 1e-12 relative, the note says so
(``bracket.how``: "bounded" or "estimated"), and --digits D is answered from the float64 bracket where it has D digits
and otherwise by the same quadrature at D digits in mpmath (:func:`_quadrature_digits`; a service on an exact lattice,
D <= :data:`QUADRATURE_DIGITS`, refused beyond with the reason); with a rounded service (uniform, an empirical sample
off a coarse lattice, a capped lognormal) the services' certified rounding gives the bracket. A kinked law with a
service off every lattice (the kinks' points would be k / h for the rounding's lattice h of up to 2^13 levels): the
certified brackets (F7) of :mod:`qderive.numeric.kernels.lattice_finite` remain (their width is then of the order of
the services' own rounding): the vacation's survival function bounded below and above on the
services' lattice (extended past the span until P(V > c_v) <= 2^-10, at most 4 c) plus steps beyond it. Neither
rests on a monotonicity of the finite queue in the vacation law (there is none in general: the state seen by
arrivals changes too) but on the linearity of (F2) in the survival function (:class:`VacationRounding`).
:class:`VacationBounds` forces the steps for a smooth law (tests compare the two). Measured (r = 129, load 0.55,
geometric batches of mean 4, constant service 0.012, P(W > 0.5), float64, CPU of the whole command with the model's
solve; docs/performance.md "A smooth vacation by quadrature"): lognormal vacation (mean 0.06, scv 2) 0.0434792515 (a
bracket 1.3e-11 wide), 0.7 s (the steps (F7) at 8192 levels: 0.0434794 in [0.0434645, 0.0434943], 4.5 s), r = 200
0.8 s, the 0.99 quantile 0.9 s (20 s), a seeded simulation's 99 % interval (20 x 2 million customers) [0.04302,
0.04483]; gamma (shape 5/2) 0.007488944874, 0.7 s; at r = 300 0.007489040291911, the infinite room's transform
inversion (vacation-infinite --digits 15) 0.00748904029191064; gamma of shape 1/2 0.031009641589, 0.5 s, its 0.99
quantile 1.0 s; uniform vacation (low 0.02, high 0.1; issue 28, branch uq28) 0.006521174686421 (a bracket 1.5e-11 wide;
the steps (F7) gave 0.0065211746862229 in [0.006520976142, 0.006521373769], 6e-5 wide), 0.5 s (0.8 s), at r = 300
within 3e-15 of the infinite room's exact sums, --digits 20 1.7 s, 40 and 60 digits 4.5 s; gamma (shape 5/2)
--digits 20 3.1 s, 40 digits 12.6 s, shape 1/2 at 20 digits 10.2 s, lognormal 20 digits 31 s (mostly its count
sequences at D digits, the state at the arrival). Checked against the exact sums (F4) of an Erlang-2 vacation taken
as a law with only a survival function (the
quadrature within 4e-15, tests/test_vacation_quadrature.py; the steps' brackets hold them and shrink,
tests/test_wait_finite_vacation_laws.py), mpmath's quadrature of (F2), and seeded simulations. A smooth
service that is not phase-type (gamma of non-integer shape) with constant or empirical vacations has exact tails by
the sums (SF) of :mod:`~qderive.numeric.engines.blocks_finite_shifts` (:func:`kinked_setup` returns its
``ShiftSetup``; branch sh26). Other kinked laws (such a service with uniform vacations) are refused for tails and
quantiles with the reason (a phase-type service with a lognormal vacation is inverted, item 8); the moments work for
every law.
Measured for the phase-type service (tests/test_wait_finite_kinked_vacation.py and docs/performance.md, "finite
room, smooth service with kinked vacations"): against an independent 60-digit computation (the embedded chain at
the period starts, exact polynomial-exponential integrals over the vacation's age) at r = 30, Erlang-2 service,
a constant vacation 1.5, rho_bar = 0.85, float64 within 1.7e-14 and 30 digits within 1.6e-60 for tails from 0.96
down to 1.1e-22. Measured for the constant service at r = 200 (batches
of 1, 2, 3, rho_bar = 1.575, exponential vacations; tests/test_wait_finite_lattice.py): against an independent
50-digit computation from the embedded chain at the period starts, float64 within 2.2e-16 relative and 30 digits
within 1.3e-49 (P(W > 150) = 1 - 2.9e-11, P(W > 199.5) = 0.2155); one float64 point 1.4 ms once the law is
built (the first with the finite engine: 40 ms), one 30-digit point 50 ms after 1.5 s of data. Erlang-2
vacations (mean 2) at r = 200 and rho_bar = 0.9 (the matrix pieces (F4)): float64 within 2.3e-15 and 30 digits
within 2.9e-39 of the 40-digit reference (P(W > 5) = 0.7033, P(W > 50) = 0.009527); a float64 point 11 ms
(the first 0.1 s), a 30-digit point 0.23 s (the first 2.9 s). A Coxian vacation (P not nilpotent: the series of
(F4) are truncated by their bounds) costs more at r = 200 (rho_bar = 1.575, t = 210): float64 0.06 s a point,
30 digits 0.7 s.

Measured costs (one tail point with a fresh law object, on the project's 2-core machine;
``FiniteVacationQueue.example()`` at capacity r): float64 r = 20: 3 ms, r = 200: 8 to 20 ms, r = 2000:
0.14 s; 30 digits r = 20: 0.2 s, r = 200: 1.3 s (0.8 s of it the s-independent data, 0.35 s of that the
finite engine's embedded law at 93 digits), r = 2000 (rho_bar = 0.6): 70 s, nearly all of it the data.
Later points reuse the data (0.1 to 0.4 s each at r = 200 and 30 digits). Whole admission is dominated
by the finite engine's room matrices at high precision (2 to 5 s at r = 20 and 30 digits). mpmath data
count against the limit ``mp_capacity``, as the finite engine's escalation does.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from ...symbolic import counts as C
from ...symbolic import limits as _limits
from ...symbolic.capabilities import Rule, declare
from ...symbolic.errors import NumericalError, ParameterError
from ...symbolic.models.vacation import Admission
from ..backend import FLOAT64, Scoped, mp_context
from ..kernels import finite_kinked as FK
from ..kernels import finite_wait as K
from ..kernels import lattice_finite as LF
from ..kernels import lattice_fft as LFF
from ..kernels import vacation_quadrature as VQ
from ..response import ResponseLaw
from ..sequences import batch_vectors, check_count_work, digits_for, sum_count_sequences
from .base import Trouble
from ..size_biased import FLOAT64_DIGITS, count_terms, count_terms_float64, has_size_biased_counts
from .finite_laws import Strategy, linear_parts, lst_at, lst_expressions, suffix_at  # noqa: F401 - re-exported
from .vacation_wait import numeric_transform

__all__ = ["Strategy", "kinked_setup", "kinked_tails", "lattice_setup", "lattice_tails", "response_laws",
           "service_lattice_setup", "service_lattice_tails", "wait_law_data"]


def _policy(model) -> str:
    return "none" if model.vacation is None else model.vacation_policy.value


# --------------------------------------------------------------------------------------
# Count sequences long enough for the residual moments
# --------------------------------------------------------------------------------------


def count_data(law, rate, ctx, order, rows=None):
    """(beta, tail, tail2) over 0..top with every residual moment M[p, top] <= eps/256 M[p, 0], p <= order
    (:func:`~qderive.numeric.kernels.finite_wait.wait_count_sequences`), or, with ``rows`` (the rows vanish for
    K >= rows: partial admission), top <= rows - 1 (the moments' data, summed with the law's totals)."""
    count = law.count_law(rate)
    # the count-work limit bounds the doubling lengths' total, not each one (sum_count_sequences): [work, level]
    spent = [0, 1]
    # the lengths to negligibility, one beyond the last: their work estimated before each is paid (check_count_work)
    lengths = [] if rows is not None else [COUNT_START << i for i in
                                           range((COUNT_TERMS // COUNT_START).bit_length() + 1)]
    negligible = ctx.eps / 256
    check_count_work(count, ctx, order, lengths, negligible, COUNT_TERMS)
    if lengths and not ctx.is_float64:
        _pilot_count_terms(law, count, order, negligible)

    def counts(n):
        got = sum_count_sequences(count, n, ctx, order, spent)
        check_count_work(count, ctx, order, [m for m in lengths if m > n], negligible, COUNT_TERMS, spent, n)
        return got

    got = K.wait_count_sequences(ctx, counts, order, start=COUNT_START, limit=COUNT_TERMS, rows=rows)
    if got is None:
        raise NumericalError(f"the {law} time holds too many batch arrivals to sum the residual moments "
                             "(more than 2^18 terms)")
    return got


#: :func:`count_data`'s doubling lengths to negligibility: from this length to at most :data:`COUNT_TERMS` terms
COUNT_START = 32
COUNT_TERMS = 1 << 18


def _pilot_count_terms(law, count, order, negligible) -> None:
    """Refuse at once a D-digit summation to negligibility that :data:`COUNT_TERMS` terms cannot reach: the float64
    count sequences over 0..COUNT_TERMS (a few hundredths of a second; their tails and residual moments are sums of
    positive terms, relative accuracy down to the double range) give M[p, COUNT_TERMS] / M[p, 0]; above 10^3 times
    ``negligible`` (a margin far beyond float64's rounding) the mpmath lengths could never stop, and each of them
    costs seconds (an Erlang-4 vacation of mean 0.075 at batch rate 10^5, the mean count 7500: 58 s of CPU in
    mpmath lengths before the refusal). Not for quadrature laws (:func:`check_count_work` estimates their work),
    nor where float64 over- or underflows (the lengths decide, as before), nor below the double range."""
    if isinstance(count, C.QuadratureCount) or not negligible > 1e-290:
        return
    try:
        with np.errstate(all="raise"):
            _, tail, tail2 = sum_count_sequences(count, COUNT_TERMS, FLOAT64, order)
            M = K.wait_residual_moments(FLOAT64, tail, tail2, FLOAT64.num(1), max(order, 1))
    except (ArithmeticError, FloatingPointError, ValueError):
        return
    ratio = max(float(M[p, -1] / M[p, 0]) for p in range(M.shape[0]) if M[p, 0] > 0)
    if ratio > 1e3 * float(negligible):
        raise NumericalError(f"the {law} time holds too many batch arrivals to sum the residual moments "
                             f"(more than 2^18 terms: the residual moments at 2^18 are {ratio:.1e} of the first, "
                             f"above the {float(negligible):.1e} the digits need)")


def count_totals(law, rate, ctx, order):
    """(E binom(K', m), m = 0..order) = lambda^m E B^m / m! from the law's exact moments
    (:func:`~qderive.numeric.kernels.finite_wait.wait_count_totals`): the remainders of the residual moments."""
    moments = [ctx.num(Fraction(law.moment(m))) if m else ctx.num(1) for m in range(order + 1)]
    return K.wait_count_totals(ctx, moments, ctx.num(rate), order)


# --------------------------------------------------------------------------------------
# The s-independent data in one context
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Period:
    """One family of non-serving periods (item 6 of the module docstring): its time ``law``, the level rows
    ``rows`` W_K = V L^K of its starts V (weighted like Y), and the count sequences of its law (``counts``
    varphi_K, ``tail`` P(K > k), ``tail2``) over 0..top, and its ``totals`` where known."""

    law: object
    rows: object
    counts: object
    tail: object
    tail2: object
    #: its law's totals E binom(K', m) (:func:`~qderive.numeric.kernels.finite_wait.wait_count_totals`), or None:
    #: the residual moments' remainders are then extrapolated from the count sequences (item 5)
    totals: object = None

    @property
    def start(self):
        """V: the level law of its starts (the first row)."""
        return self.rows[0]


@dataclass
class WaitData:
    """The s-independent quantities of items 1-4 of the module docstring, in one context (``ctx``): the batch
    vectors, F_n (``admit``, whole admission) and its smallest value (``low``), Y, V = ``v0`` at level 0, Z',
    t_I and t_I A_I(oo) (``zero_weight``), the level rows W (service, vacation), the count sequences of
    service and vacation over 0..top (``order``: the highest moment their length suffices for), N(0)."""

    ctx: object
    order: int
    r: int
    whole: bool
    lam: object
    pmf: object
    tail: object
    admit: object
    low: object
    support: object
    geometric: object
    Y: object
    v0: object
    Zp: object
    t_idle: object
    zero_weight: object
    Ws: object
    Wv: object
    beta: object
    btail: object
    btail2: object
    phi: object
    vtail: object
    vtail2: object
    N0: object = None
    q: object = None  # the embedded law it was built from
    converted: object = None  # the same as gmpy2 numbers (:class:`Converted`), made on first use
    lattice: object = None  # the constant-service tail sums' data (:class:`LatticeSums`), made on first use
    kinked: dict = None  # the phase-type service's sums with constant vacations per kind (FK.KinkedSums)
    service_lattice: dict = None  # the exact lattice service's sums per kind (:class:`ServiceLatticeSums`)
    #: the families of non-serving periods (item 6): today's vacations are the one member (the rows Wv, counts phi)
    periods: tuple = ()
    #: the time at each level spent without a residual (item 6: waiting for the start before a setup), or None
    flat: object = None
    #: the laws of the periods every customer of this part waits through in full after its residual (item 6)
    suffix: tuple = ()
    btotals: object = None  # the service's and the vacation's totals E binom(K', m), m <= order (count_totals), or
    vtotals: object = None  # None: the residual moments' remainders are then extrapolated (item 5)
    #: the time at each level n = 1..r-1 (entry 0 unused: ``t_idle``) where a batch's arrival starts service at once
    #: with n waiting (item 7: a last ``wait`` with N > 1), or None
    once: object = None
    #: pi_0, the weight of the idle periods of the excess Delta(s) (item 7: start threshold N > 1), or None
    excess: object = None


def _embedded(model, ctx):
    """The embedded law q^r_0..q^r_r of the finite engine (Statement 1, or level crossing for whole admission)."""
    from .vacation import FiniteSweep

    with ctx:
        return FiniteSweep(model, ctx)._kernel.engine.at(model.capacity)["q"]


#: whole admission, the moments' data: at most this many batches until the rows are negligible (else the count
#: sequences run until the residual moments are); float64 goes on to :data:`ROWS_LIMIT_FLOAT64` batches while the
#: steps cost at most ``ROWS_WORK`` multiply-adds in all (a batch of mean 200 leaves level r - 1 with probability
#: 1/200: 9 x 10^3 batches, 0.2 s at r = 129; the count sequences of a lognormal service over them 9 s, where the
#: summation to negligibility was refused by ``count-work``)
ROWS_LIMIT = 4096
ROWS_LIMIT_FLOAT64 = 1 << 16
ROWS_WORK = 1 << 28


def _rows_limit(ctx, r, pmf) -> int:
    """The number of batches :func:`~qderive.numeric.kernels.finite_wait.wait_rows_needed` may try (see
    :data:`ROWS_LIMIT`): a float64 step costs r times the batch sizes below r (a convolution)."""
    if not ctx.is_float64:
        return ROWS_LIMIT
    sizes = np.flatnonzero(np.asarray(pmf[1: r + 1], dtype=float))
    width = int(sizes[-1]) + 1 if len(sizes) else 1
    return max(ROWS_LIMIT, min(ROWS_LIMIT_FLOAT64, ROWS_WORK // (max(r, 1) * width)))


def build_data(model, ctx, order, q=None, idle=None, rows=False):
    """The s-independent data of items 1-3 of the module docstring in ``ctx`` (``q``: the embedded law, if known;
    ``idle``: an extra idle weight, :func:`~qderive.numeric.kernels.finite_wait.wait_finite_start`).

    ``rows``: data for the moments only: the count sequences stop where the rows vanish (partial admission: at
    r - 1) or are negligible (whole admission, :func:`~qderive.numeric.kernels.finite_wait.wait_rows_needed`;
    unlimited if a level keeps its mass), item 5; the transform's backward sweep needs the longer ones."""
    r = model.capacity
    whole = model.admission is Admission.WHOLE
    policy = _policy(model)
    with ctx:
        lam = ctx.num(model.rate)
        bv = batch_vectors(model.batch, r + 1, ctx)
        pmf, tail = bv.pmf, bv.tail
        cap = None
        # a law with only a numeric transform (the lognormal) in mpmath: its counts as far as the rows reach, as for
        # the moments, and further only as the backward sweep's nodes ask (:meth:`FiniteWait._sweep_counts`)
        heavy = not rows and _heavy(model)
        if (rows or heavy) and not whole:
            cap = r
        elif (rows or heavy) and r:  # the levels that no batch fits admit nobody: their mass leaves the rows (item 5)
            keep = K.wait_keep(ctx, pmf, tail, r, whole, drop_full=True)
            cap = K.wait_rows_needed(ctx, r, pmf, keep, _rows_limit(ctx, r, pmf), bv.support, bv.geometric)
        q = _embedded(model, ctx) if q is None else q
        beta, btail, btail2 = count_data(model.service, model.rate, ctx, order, _law_cap(model.service, cap, rows))
        if model.vacation is not None:
            phi, vtail, vtail2 = count_data(model.vacation, model.rate, ctx, order,
                                            _law_cap(model.vacation, cap, rows))
        else:
            phi = vtail = vtail2 = None
        d = K.wait_finite_start(ctx, q, lam, pmf, tail, beta, phi, policy, whole, bv.support, bv.geometric, idle,
                                drop_full=rows or heavy)
        data = WaitData(ctx, order, r, whole, lam, pmf, tail, d["admit"], d["low"], bv.support, bv.geometric, d["Y"],
                     d["v0"], d["Zp"], d["t_idle"], d["zero_weight"], d["Ws"], d["Wv"], beta, btail, btail2, phi,
                     vtail, vtail2)
        data.btotals = count_totals(model.service, model.rate, ctx, order)
        if model.vacation is not None:
            data.vtotals = count_totals(model.vacation, model.rate, ctx, order)
        if phi is not None:
            data.periods = (Period(model.vacation, data.Wv, phi, vtail, vtail2, data.vtotals),)
        data.N0 = admission_series(model, data, 0)[0]
        data.q = q
        if ctx.is_float64 and not (np.all(np.isfinite(data.Ws)) and np.all(np.isfinite(data.Wv))
                                   and np.all(np.isfinite(data.Zp)) and math.isfinite(data.N0) and data.N0 > 0):
            raise ArithmeticError("the level vectors over- or underflow float64")
        if ctx.is_float64 and heavy and not remainder_bound(model, data, 0)[0] <= 1e-13 * data.N0:
            # N(0) from the law's totals (the counts stop at the rows): its subtraction's bound (item 5) above
            # 1e-13 relative goes to mpmath (the transform's self-check escalates)
            raise ArithmeticError("the float64 remainders of N(0) exceed 1e-13 of it")
    return data


def _heavy(model) -> bool:
    """Whether the service, the vacation, the setup or the close-down has only a numeric transform and counts from its
    size-biased laws (the lognormal: :func:`~qderive.numeric.size_biased.has_size_biased_counts`)."""
    laws = (model.service, model.vacation, getattr(model, "setup", None), getattr(model, "close_down", None))
    return any(_capped_law(law) for law in laws)


def _capped_law(law) -> bool:
    """Whether ``law`` has only a numeric transform and counts from its size-biased laws (:func:`_heavy`): its count
    sequences stop where the rows do (:func:`_law_cap`)."""
    return law is not None and numeric_transform(law) and has_size_biased_counts(law)


def _law_cap(law, cap, rows):
    """The rows cap of :func:`count_data` for ``law``: ``cap`` for the moments' data (``rows``) and, in the
    transform's mpmath data, for a law of :func:`_heavy` (its sequences to negligibility would need 10^4 to 10^6
    terms at 40 to 80 digits; the backward sweep's longer counts come later, :meth:`FiniteWait._sweep_counts`);
    None (to negligibility) for the others."""
    if rows or (numeric_transform(law) and has_size_biased_counts(law)):
        return cap
    return None


#: at most this many counts beyond the rows for the backward sweep of a heavy-tailed law (:meth:`FiniteWait.
#: _sweep_counts`): a node nearer the circle |lambda - s| = lambda would need more
BACKWARD_TERMS = 1 << 13


def _level_series(data, order):
    """Phi_n as power series in -s: levels x orders (coefficients E[.; residual^p] / p!): the services' and every
    period family's (item 6), each with its law's totals where known (item 5), plus the flat times at order 0."""
    ctx = data.ctx
    Phis = K.wait_level_series(ctx, data.lam, data.btail, data.btail2, data.Ws, order=order, btotals=data.btotals)
    for period in data.periods:
        Phis = Phis + K.wait_level_series(ctx, data.lam, period.tail, period.tail2, period.rows, order=order,
                                          btotals=period.totals)
    if data.flat is not None:
        Phis[:, 0] = Phis[:, 0] + data.flat
    return Phis


def _service_series(model, ctx, order):
    return _law_series(model.service, ctx, order)


def _law_series(law, ctx, order):
    """E e^{-s L} as a power series in -s: the coefficients E[L^p] / p!, p = 0..order."""
    return ctx.array([Fraction(law.moment(p)) / math.factorial(p) if p else 1 for p in range(order + 1)])


def admission_series(model, data, order):
    ctx = data.ctx
    Phis = _level_series(data, order)
    if data.r == 0:
        Phis = ctx.zeros((0, order + 1))
    N = K.wait_admission_series(ctx, Phis, _service_series(model, ctx, order), data.tail, data.pmf,
                                data.t_idle, data.whole, data.once)
    for law in data.suffix:  # the periods waited through in full (item 6)
        N = K.fw_series_mul(N, _law_series(law, ctx, order))
    return N


def remainder_bound(model, data, order):
    """An upper bound of the absolute error that the remainders' subtraction (item 5) leaves in
    :func:`admission_series`: the error of M[p, K] is at most the same e_p for every K
    (:func:`~qderive.numeric.kernels.finite_wait.wait_remainder_error`), so the same positive sums over e_p in
    place of M[p, K] bound it. Zero without the laws' totals."""
    ctx = data.ctx
    if data.btotals is None or not data.r:
        return ctx.zeros(order + 1)
    es = K.wait_remainder_error(ctx, data.btotals, len(data.btail) - 1, data.lam, order)
    Phis = np.outer(np.sum(data.Ws, axis=0), es)
    for period in data.periods:  # every family with its law's totals (today's vacation: the one member)
        if period.rows.shape[0] and period.totals is not None:
            ev = K.wait_remainder_error(ctx, period.totals, len(period.tail) - 1, data.lam, order)
            Phis = Phis + np.outer(np.sum(period.rows, axis=0), ev)
    return K.wait_admission_series(ctx, Phis, _service_series(model, ctx, order), data.tail, data.pmf, ctx.num(0),
                                   data.whole)


# --------------------------------------------------------------------------------------
# The laws' transforms at complex nodes
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Arbitrary precision at the nodes: gmpy2 numbers (the kernels' arithmetic, about 8x mpmath's speed)
# --------------------------------------------------------------------------------------


class _GmpyContext(Scoped):
    """The part of the context interface the node kernels use, with gmpy2 mpfr/mpc elements.

    Evaluating a transform costs O(r) complex operations per node and the Euler algorithm asks for
    3.5 D + 11 nodes per time at each of two precisions: with mpmath's numbers (2.5 us per mpc
    operation here) r = 200 at D = 30 takes about 2 s, with gmpy2's (0.15 to 0.4 us) 0.25 s. Inputs
    and results are converted exactly (mantissa, exponent); precision is scoped like
    :class:`~qderive.numeric.backend.MPContext` (``with ctx:``, never set globally).
    """

    is_float64 = False
    tiny = 0
    dtype = object

    def __init__(self, dps: int):
        import gmpy2

        self.gmpy2 = gmpy2
        self.dps = int(dps)
        self.prec = mpmath.libmp.dps_to_prec(self.dps)
        self._stack: list = []
        self._zero = gmpy2.mpfr(0)

    def _scope(self):  # ``with ctx:`` (numeric.backend.Scoped): gmpy2's precision, nothing set globally
        return self.gmpy2.context(self.gmpy2.get_context(), precision=self.prec)

    def zeros(self, shape):
        z = np.empty(shape, dtype=object)
        z.fill(self._zero)
        return z

    def flush(self, v):
        return v

    def real(self, x):
        """An mpmath mpf (or exact number) as an mpfr, rounded once to the context's precision."""
        g = self.gmpy2
        if isinstance(x, mpmath.mpf):
            if not x:
                return self._zero
            sign, man, exp, _ = x._mpf_
            return g.mul_2exp(g.mpfr(-int(man) if sign else int(man)), int(exp))
        if isinstance(x, Fraction):
            return g.mpfr(g.mpq(x.numerator, x.denominator))
        return g.mpfr(x)

    def complex(self, z):
        z = mpmath.mpc(z)
        return self.gmpy2.mpc(self.real(z.real), self.real(z.imag))

    def reals(self, a):
        out = np.empty(np.shape(a), dtype=object)
        flat, src = out.reshape(-1), np.asarray(a, dtype=object).reshape(-1)
        for i, x in enumerate(src):
            flat[i] = self.real(x)
        return out

    def complexes(self, a):
        out = np.empty(np.shape(a), dtype=object)
        flat, src = out.reshape(-1), np.asarray(a, dtype=object).reshape(-1)
        for i, x in enumerate(src):
            flat[i] = self.complex(x)
        return out

    @staticmethod
    def to_mpmath(z):
        """A gmpy2 mpc as an mpmath mpc (rounded to mpmath's current precision)."""
        def real(x):
            if not x:
                return mpmath.mpf(0)
            man, exp = x.as_mantissa_exp()
            return mpmath.mpf((int(man), int(exp)))

        return mpmath.mpc(real(z.real), real(z.imag))


def _gmpy_available() -> bool:
    try:
        import gmpy2  # noqa: F401
    except ImportError:  # pragma: no cover - gmpy2 is a dependency; mpmath then works alone
        return False
    return True


class _Cut(dict):
    """The node kernels' data by name (``values``: :func:`_values` or :class:`Converted`) with some counts cut to what
    the nodes need (``cuts``: :meth:`FiniteWait._sweep_counts`; ``exact``: the same cuts, made here from the gmpy2
    numbers of ``values``)."""

    def __init__(self, values, cuts, exact=None):
        super().__init__()
        self.values = values
        self.update(cuts)
        for key, counts in (exact or {}).items():
            self[key] = values[key][: len(counts)]

    def __missing__(self, key):
        return self.values[key]


class Converted(dict):
    """The fields of a :class:`WaitData` as gmpy2 numbers at the data's own precision, converted on first use
    (the matrices of the batch method only when a node needs them); evaluations at lower precision reuse
    them (gmpy2 rounds every result to the current context's precision)."""

    def __init__(self, data):
        super().__init__()
        self.data, self.ectx = data, _GmpyContext(data.ctx.dps)

    def __missing__(self, name):
        ectx, data = self.ectx, self.data
        with ectx:
            if name == "geometric":
                v = None if data.geometric is None else tuple(ectx.real(x) for x in data.geometric)
            else:
                v = getattr(data.periods[name[1]], name[2]) if isinstance(name, tuple) else getattr(data, name)
                v = v if v is None else (ectx.reals(v) if isinstance(v, np.ndarray) else ectx.real(v))
        self[name] = v
        return v


def gmpy_values(values) -> bool:
    """Whether the node kernels' ``values`` hold the data as gmpy2 numbers (:class:`Converted`, possibly cut by
    :class:`_Cut`): every field is then read from them by name, not from the mpmath data."""
    return isinstance(values, Converted) or (isinstance(values, _Cut) and isinstance(values.values, Converted))


# --------------------------------------------------------------------------------------
# The law object: data cached per precision
# --------------------------------------------------------------------------------------


#: digits beyond what the first request needs with which the mpmath data are built (the tails' confirmation
#: passes ask 7 to 8 digits more each)
HEADROOM = 24
#: the headroom for a model with a heavy-tailed law (:func:`_heavy`): the confirmation of a 15-digit tail asks 7 to 8
#: digits more (1.5 (D + 5) + 10 against 1.5 D + 10 at D + 3), within it
HEADROOM_HEAVY = 10
_DATA_FIELDS = ("lam", "pmf", "tail", "admit", "low", "Y", "v0", "Zp", "t_idle", "Ws", "Wv", "beta", "phi")


def _values(data) -> dict:
    """The data's fields by name for the node kernels (the period families' as ("period", j, field))."""
    values = {name: getattr(data, name) for name in _DATA_FIELDS}
    values["geometric"] = data.geometric
    values["flat"] = data.flat
    values["once"] = data.once
    for j, period in enumerate(data.periods):
        values["period", j, "counts"] = period.counts
        values["period", j, "rows"] = period.rows
        values["period", j, "start"] = period.start
    return values


class FiniteWait:
    def __init__(self, model):
        self.model = model
        self._float = {}
        self._mp = {}
        self.guard = self._guard()

    def _guard(self) -> int:
        """Digits beyond the caller's: O(r + top) roundings, and the cancellation of (beta(s) - beta_0) for an
        irrational transform at small s (log10 1/(lambda b_1), likewise for the vacation)."""
        m = self.model
        lb = float(m.rate * m.service.moment(1))
        extra = max(0, math.ceil(-math.log10(lb))) if lb < 1 else 0
        if m.vacation is not None:
            lf = float(m.rate * m.vacation.moment(1))
            extra = max(extra, math.ceil(-math.log10(lf)) if lf < 1 else 0)
        return digits_for(m.capacity + 1) + 4 + extra

    def data(self, ctx, order=1):
        """The s-independent data for ``ctx`` (float64) or for at least ctx.dps + guard digits (mpmath; built
        24 digits finer, so that the confirmations of a tail, 7 to 8 digits apart, reuse it)."""
        return self._kept(ctx, order, "data")

    def moment_data(self, ctx, order=1):
        """:meth:`data` for the moments only: the count sequences stop where the rows vanish (partial admission) or
        are negligible (whole), and the residual moments' remainders come from the laws' own moments (module
        docstring, item 5)."""
        return self._kept(ctx, order, "moments")

    def _kept(self, ctx, order, key):
        rows = key == "moments"
        other = "data" if rows else "moments"
        if ctx.is_float64:
            got = self._float.get(key)
            if got is None or got.order < order:
                known = got if got is not None else self._float.get(other)
                q = known.q if known is not None else None
                got = self._float[key] = build_data(self.model, FLOAT64, max(order, 1), q, rows=rows)
            return got
        # the moments: O(r) roundings and the remainders' subtraction (item 5) only; the guard's cancellation of
        # beta(s) - beta_0 at small s concerns the transform
        want = ctx.dps + (digits_for(self.model.capacity + 1) + 3 if rows else self.guard)
        got = self._mp.get(key)
        if got is None or got.ctx.dps < want or got.order < order:
            r = self.model.capacity
            _limits.check("mp_capacity", r, f"the waiting time's data with mpmath cost about "
                          f"{max(1, round(4.5e-5 * r * r))} s at r = {r} (the finite engine's embedded law)")
            known = self._mp.get(other)
            if rows:  # the moments are asked once (no confirmation passes): no headroom, or the transform's q
                dps = max(want, got.ctx.dps if got is not None else 0)
                dps = known.ctx.dps if known is not None and known.ctx.dps >= dps else dps
            else:  # a heavy-tailed law's counts cost about the square of the digits: less headroom (item 4)
                dps = max(want + (HEADROOM_HEAVY if _heavy(self.model) else HEADROOM), got.ctx.dps if got else 0)
            known = [d for d in (got, known) if d is not None and d.ctx.dps == dps]
            q = known[0].q if known else None  # a higher order only, or the other data: the same q
            got = self._mp[key] = build_data(self.model, mp_context(dps), max(order, 1, got.order if got else 1), q,
                                             rows=rows)
        return got

    # -- transform --------------------------------------------------------------------------------
    def _levels(self, data, ectx, values, z, b, g0, hs, strategy):
        """Phi at the 1-d nodes z (kernel numbers of ``ectx``): by customers where stable, by batches elsewhere
        (``hs``: h_0 of each period family at the nodes). By customers the recursion is linear in its source: the
        services' (with Z' of every family) plus, per family, (lambda - s) h_0 V (a family starting at level 0 only,
        ``v0``, today's vacation, folded into the services' call); the flat times are added."""
        nodes = len(z)
        hs = hs or ()
        folded = data.v0 is not None and len(hs) > 0  # the first family is today's vacation, started at level 0
        h0 = hs[0] if folded else None
        if strategy == Strategy.BATCHES or (strategy == Strategy.AUTO and ectx.is_float64) or data.Zp is None:
            by_customers = np.zeros(nodes, dtype=bool)
        else:
            q = data.geometric[1] if data.geometric is not None and not data.whole else None
            with np.errstate(invalid="ignore", over="ignore"):  # a rate beyond the double range: inf - inf unused
                by_customers = K.wait_customer_stable(data.lam, data.low, z, q)
        Phi = K.fw_complex_zeros(ectx, (nodes, data.r))
        if not data.r:
            return Phi
        c = np.flatnonzero(by_customers)
        if len(c):
            Phi[c] = K.wait_levels_by_customers(ectx, z[c], values["lam"], values["admit"], values["pmf"],
                                                values["Y"], values["v0"], values["Zp"], g0[c],
                                                None if h0 is None else h0[c], data.support, values["geometric"])
            none = ectx.zeros(data.r)
            for j in range(1 if folded else 0, len(hs)):
                Phi[c] = Phi[c] + K.wait_levels_by_customers(ectx, z[c], values["lam"], values["admit"],
                                                             values["pmf"], values["period", j, "start"], None,
                                                             none, hs[j][c], None, data.support, values["geometric"])
            if data.flat is not None:
                Phi[c] = Phi[c] + values["flat"][None, :]
        rest = np.flatnonzero(~by_customers)
        if len(rest):
            # every period family by its own residual weights (item 6)
            periods = [(values["period", j, "counts"], values["period", j, "rows"]) for j in range(len(hs))]
            Phi[rest] = K.wait_levels_of_periods(ectx, z[rest], values["lam"], g0[rest], values["beta"], values["Ws"],
                                                 [h[rest] for h in hs], periods,
                                                 None if data.flat is None else values["flat"])
        return Phi

    @staticmethod
    def _fast_values(data):
        """The data as gmpy2 numbers (:class:`Converted`), once per data."""
        if data.converted is None:
            data.converted = Converted(data)
        return data.converted

    def parts(self, ctx, order=1) -> list:
        """The s-independent data of each kind of service period, as :meth:`data` (one here). A model whose arrival
        rate differs between periods (the hysteretic modes) has one per rate, each already weighted by its
        rate: N(s) and N(0) are the sums over the parts."""
        return [self.data(ctx, order)]

    def _node_sum(self, data, z, ctx, strategy, fast):
        """N(s) of one part at the 1-d nodes z (complex in float64, mpc otherwise) and b = beta(s)."""
        m = self.model
        if ctx.is_float64:
            values = _Cut(_values(data), self._sweep_counts(data, z, strategy))
            b, g0 = lst_at(m.service, FLOAT64, z, data.lam)
            hs = [lst_at(p.law, FLOAT64, z, data.lam)[1] for p in data.periods]
            with np.errstate(under="ignore"):
                Phi = self._levels(data, FLOAT64, values, z, b, g0, hs, strategy)
                N = K.wait_admission_sum(FLOAT64, Phi, b, data.tail, data.pmf, data.t_idle, data.whole, data.once)
                return N * suffix_at(data, FLOAT64, z, data.lam), b
        cuts = self._sweep_counts(data, z, strategy)
        lam = +data.lam
        b, g0 = lst_at(m.service, ctx, z, lam)
        hs = [lst_at(p.law, ctx, z, lam)[1] for p in data.periods]
        if fast and _gmpy_available():
            ectx = _GmpyContext(ctx.dps)
            with ectx:
                values = _Cut(self._fast_values(data), {}, cuts)
                zf, bf, gf = ectx.complexes(z), ectx.complexes(b), ectx.complexes(g0)
                hf = [ectx.complexes(h) for h in hs]
                Phi = self._levels(data, ectx, values, zf, bf, gf, hf, strategy)
                Nf = K.wait_admission_sum(ectx, Phi, bf, values["tail"], values["pmf"], values["t_idle"], data.whole,
                                          values["once"])
            N = np.array([ectx.to_mpmath(v) for v in Nf], dtype=object)
            return N * suffix_at(data, ctx, z, lam), b
        values = _Cut(_values(data), cuts)
        Phi = self._levels(data, ctx, values, z, b, g0, hs, strategy)
        N = K.wait_admission_sum(ctx, Phi, b, data.tail, data.pmf, data.t_idle, data.whole, data.once)
        return N * suffix_at(data, ctx, z, lam), b

    def _sweep_counts(self, data, z, strategy) -> dict:
        """The counts of a heavy-tailed law (:func:`_heavy`) that the nodes z need, as ``{field: counts[:top + 1]}``
        for :class:`_Cut` (empty for other laws: their counts as built), after lengthening the mpmath ones in place.

        The rows stop at k (partial admission: k = r - 1); beyond, the counts only feed the backward sweep of item 4,
        run where |c| < 1, c = (lambda - s) / lambda, at the nodes by batches (all in float64; in mpmath those where
        the customers' recursion is not stable under ``strategy``). Started from g_T = 0 it errs by g_T <= P(K > T) /
        lambda, carried to row k with the factor c^(T - k): the first T with c_max^(T - k) P(K > T) <= 10^-D P(K > 0)
        (D = 18.5 in float64, eps / 256, the data's digits in mpmath; P(K > T) <= P(K > n) at the last index n known,
        the counts having been made as far as the rows) bounds it by 10^-D of g_0's scale. Without such a node the
        rows' counts suffice (the forward recursion, |c| >= 1, needs no more). Measured (geometric batches, load 0.55,
        r = 200): at most 9 nodes of 74 by batches up to t = 4 s in mpmath, c_max 0.76 (630 terms beyond the rows at
        76 digits); a float64 tail near t = 0.64 s, c_max 0.71, 110 terms instead of the 2247 to negligibility that
        every node's sweep ran before. beta_T is made with the digits the factor c_max^(T - k) leaves of it (at least
        10) by the size-biased rule (:func:`~qderive.numeric.size_biased.count_terms`; in float64, or where 11 digits
        suffice, its float64 twin, about 1e-12 relative:
        :func:`~qderive.numeric.size_biased.count_terms_float64`). A node asking more than :data:`BACKWARD_TERMS`
        terms (c_max within about 1 / BACKWARD_TERMS of 1, near the circle |lambda - s| = lambda: pmf batches) is
        refused with the reason."""
        m = self.model
        laws = [("beta", m.service, data.beta, data.btail, data.Ws)]
        laws += [(("period", j, "counts"), p.law, p.counts, p.tail, p.rows) for j, p in enumerate(data.periods)]
        laws = [entry for entry in laws if numeric_transform(entry[1]) and has_size_biased_counts(entry[1])]
        if not laws or not len(z):
            return {}
        if data.ctx.is_float64 or strategy == Strategy.BATCHES or data.Zp is None:
            batch = np.ones(len(z), dtype=bool)
        else:
            q = data.geometric[1] if data.geometric is not None and not data.whole else None
            with np.errstate(invalid="ignore", over="ignore"):
                batch = ~K.wait_customer_stable(data.lam, data.low, z, q)
        lam = float(data.lam)
        c = np.array([abs(complex(lam - complex(v))) / lam for v in z])[batch]
        c = c[c < 1]
        c_max = float(c.max()) if len(c) else 0.0
        digits = 18.5 if data.ctx.is_float64 else data.ctx.dps
        cuts = {}
        for key, law, counts, tail, rows in laws:
            last = max(rows.shape[0] - 1, 0)
            top = last
            known = len(tail) - 1
            if c_max > 0 and tail[known] > 0:
                ratio = math.log(float(tail[known] / tail[0])) if data.ctx.is_float64 else \
                    float(mpmath.log(tail[known] / tail[0]))
                top = last + max(0, math.ceil((digits * math.log(10) + ratio) / -math.log(c_max)))
            if top - last > BACKWARD_TERMS:
                raise NumericalError(f"the transform of the waiting time at s = {mpmath.nstr(z[0], 6)}: the backward "
                                     f"sweep over the arrivals during the {law} time would need {top - last} counts "
                                     f"beyond the rows (a node within {1 - c_max:.1e} of the circle |lambda - s| = "
                                     f"lambda), more than {BACKWARD_TERMS}")
            if top >= len(counts):
                counts = self._lengthen(data, key, law, counts, top, last, c_max)
            cuts[key] = counts[: top + 1]
        return cuts

    def _lengthen(self, data, key, law, counts, top, last, c_max):
        """The mpmath counts of ``law`` over 0..top (:meth:`_sweep_counts`), stored in ``data`` under ``key``."""
        dps = 17 if data.ctx.is_float64 else data.ctx.dps
        decade = max(1e-12, -math.log10(c_max))
        extra = []
        ks = list(range(len(counts), top + 1))
        with mpmath.workdps(dps):
            for start in range(0, len(ks), 16):  # the digits the damping leaves, in groups of 16 terms
                group = ks[start: start + 16]
                digits = max(10, dps - int((group[0] - last) * decade) + 3)
                if data.ctx.is_float64 or digits <= FLOAT64_DIGITS:  # about 1e-12 relative, far below the damping
                    extra += [mpmath.mpf(v) for v in count_terms_float64(law, self.model.rate, group)]
                else:
                    extra += [+v for v in count_terms(law, self.model.rate, group, digits)]
        extra = np.array([float(v) for v in extra]) if data.ctx.is_float64 else data.ctx.array(extra)
        longer = np.concatenate([counts, extra])
        if key == "beta":
            data.beta = longer
        else:
            j = key[1]
            data.periods = data.periods[:j] + (dataclasses.replace(data.periods[j], counts=longer),) + \
                data.periods[j + 1:]
            if j == 0 and data.phi is not None:
                data.phi = longer
        data.converted = None
        return longer

    def transform_values(self, ctx, s, kind="wait", strategy=Strategy.AUTO, fast=True):
        """E e^{-s W} (or of the sojourn) at the array s (numbers of ``ctx``'s kind).

        float64: by batches at every node (one matrix product). mpmath: at ctx.dps + guard digits, by
        customers where that recursion is stable and by batches elsewhere (``strategy`` forces one), in
        gmpy2 numbers (``fast``) or mpmath's. N(s) / N(0) summed over the :meth:`parts`.
        """
        parts = self.parts(ctx)
        shape = np.shape(s)
        if ctx.is_float64:
            z = np.asarray(s, dtype=complex).ravel()
            sums = [self._node_sum(data, z, FLOAT64, strategy, fast) for data in parts]
            out = (sum(N for N, _ in sums) + self._excess(FLOAT64, parts, z)) / sum(data.N0 for data in parts)
            return (out * sums[0][1] if kind == "sojourn" else out).reshape(shape)
        mctx = mp_context(ctx.dps + self.guard)
        with mctx:
            z = np.array([mpmath.mpc(v) for v in np.asarray(s, dtype=object).ravel()], dtype=object)
            sums = [self._node_sum(data, z, mctx, strategy, fast) for data in parts]
            N = sums[0][0] + self._excess(mctx, parts, z)
            for other, _ in sums[1:]:
                N = N + other
            out = N / mpmath.fsum([data.N0 for data in parts])
            if kind == "sojourn":
                out = out * sums[0][1]
        with ctx:
            return np.array([+v for v in out], dtype=object).reshape(shape)

    def transform(self, kind):
        def make(ctx):
            failed = lambda s: np.full(np.shape(s), np.nan, dtype=complex)  # noqa: E731 - the policy escalates
            if not ctx.is_float64:
                return lambda s: self.transform_values(ctx, s, kind)
            try:
                self.parts(FLOAT64)
            except ArithmeticError:  # the float64 kernels refused (an underflow)
                return failed

            def F(s):
                try:
                    return self.transform_values(ctx, s, kind)
                except ArithmeticError:  # a law's transform beyond the double range at the nodes (a rate of 1e300)
                    return failed(s)

            return F

        return make

    # -- atom and moments -------------------------------------------------------------------------
    def p_zero(self, kind):
        """P(W = 0) = t_I A_I(oo) / N(0) (item 3; with N > 1 plus pi_0 Delta(oo), item 7) as ``p0(ctx)``. float64 data
        that over- or underflow raise :class:`Trouble` (the response's policy recomputes the atom with mpmath, with a
        note: :func:`~qderive.numeric.response.atom`). A heavy-tailed law (a numeric transform, the lognormal) reads
        the moments' data: the atom needs N(0) only, whose count sequences stop where the rows vanish (item 5), while
        the transform's data sum them to negligibility (at 30 digits more than 10^6 terms for a lognormal service of
        scv 2: refused by ``count-work``); the two agree (the rows beyond are 0 under partial admission, below
        eps/256 under whole admission). Other laws read the transform's data, which the inversion of their tails
        reuses."""
        def p0(ctx):
            if kind == "sojourn":  # P(T = 0) = P(W = 0) P(B = 0) = 0: service times are a.s. positive
                return ctx.num(0)
            parts = self._atom_parts(ctx)
            dctx = parts[0].ctx
            with dctx:
                atom = self._excess(dctx, parts, None)
                value = (dctx.fsum([d.zero_weight for d in parts]) + atom) / dctx.fsum([d.N0 for d in parts])
            with ctx:
                return float(value) if ctx.is_float64 else +value

        return p0

    #: P(W = 0) from the moments' data (item 5: the count sequences only as far as the rows reach; the same N(0) and
    #: idle weight) where the transform's data are not needed otherwise: the bounds (F7)/(F9) of a vacation with no
    #: exact pieces (a lognormal vacation's transform data take 10 s at r = 129, a quantile asks for the atom first)
    rows_atom = False

    def _atom_parts(self, ctx):
        """The data P(W = 0) reads: the moments' data for a heavy-tailed law or where :attr:`rows_atom` says so,
        else the transform's; float64 data that over- or underflow raise :class:`Trouble` (escalated with a note)."""
        heavy = any(numeric_transform(getattr(self.model, f, None)) for f in ("service", "vacation"))
        return self._safe_data(ctx, moments=heavy or self.rows_atom, what="P(W = 0)")

    def _excess(self, ctx, parts, z):
        """pi_0 Delta(s) of item 7 at the 1-d nodes z (None: the limit s -> oo, a number), in ``ctx``; 0 without a
        start threshold N > 1."""
        return 0

    def _excess_series(self, ctx, parts, order):
        """The power series in -s (coefficients over p = 0..order) of pi_0 Delta(s) of item 7; 0 without N > 1."""
        return 0

    def _safe_data(self, ctx, order=1, moments=False, what="the moments"):
        """The parts for ``ctx`` (``moments``: :meth:`_moment_parts`); float64 level vectors that over- or underflow
        raise :class:`Trouble` naming ``what`` (the response's policy recomputes the moments or the atom with mpmath,
        with a note)."""
        get = self._moment_parts if moments else self.parts
        if ctx.is_float64:
            try:
                return get(FLOAT64, order)
            except ArithmeticError:
                raise Trouble(f"the float64 data of {what} over- or underflow") from None
        return get(ctx, order)

    def _moment_parts(self, ctx, order):
        """:meth:`parts` for the moments: :meth:`moment_data` for this class; a subclass that builds its parts
        otherwise (the control's start law, the hysteretic modes) keeps its :meth:`parts`."""
        if type(self) is FiniteWait:
            return [self.moment_data(ctx, order)]
        return self.parts(ctx, order)

    def moment_values(self, kind):
        def values(k: int, digits):
            if digits is None:
                try:
                    return compute(k)
                except ArithmeticError:  # a float64 series over- or underflows (lambda^(p+1) at a rate of 1e300)
                    raise Trouble(f"the float64 series of E {'W' if kind == 'wait' else 'T'}^{k} over- or "
                                  "underflow") from None
            return compute(k, digits)

        def compute(k: int, digits=None):
            ctx = FLOAT64 if digits is None else mp_context(digits + 10)
            parts = self._safe_data(ctx, k, moments=True)
            dctx = parts[0].ctx
            with dctx:
                N = admission_series(self.model, parts[0], k)
                for data in parts[1:]:
                    N = N + admission_series(self.model, data, k)
                N = N + self._excess_series(dctx, parts, k)
                if kind == "sojourn":
                    N = K.fw_series_mul(N, _service_series(self.model, dctx, k))
                N0 = dctx.fsum([data.N0 for data in parts])
                out = [N[p] / N0 * math.factorial(p) for p in range(1, k + 1)]
                if dctx.is_float64:  # the remainders' subtraction: a bound above 1e-10 relative goes to mpmath
                    bound = sum(remainder_bound(self.model, data, k) for data in parts)
                    if kind == "sojourn":
                        bound = K.fw_series_mul(bound, _service_series(self.model, dctx, k))
                    failed = [p for p in range(1, k + 1) if not bound[p] <= 1e-10 * N[p]]  # NaN fails too
                    if failed:  # the response's policy recomputes, with a note naming the worst order
                        worst = max(failed, key=lambda p: bound[p] / N[p] if N[p] > 0 else math.inf)
                        raise Trouble(f"the float64 rounding bound of E {'W' if kind == 'wait' else 'T'}^{worst} "
                                      f"(the subtraction of the residual moments' remainders from the law's moments)"
                                      f" is {float(bound[worst] / N[worst]):.1e} of it, above 1e-10")
            if digits is None:
                return [float(v) for v in out]
            with ctx:
                return [+v for v in out]

        return values


# --------------------------------------------------------------------------------------
# A constant service: exact tails by sums of positive terms (kernel lattice_finite)
# --------------------------------------------------------------------------------------


def lattice_setup(service, vacation):
    """((D, vacation pieces), "") when the service is a constant D and the vacation (None: none) states its survival
    function by exact pieces (``TimeLaw.survival_pieces``): exponential pieces (exponential, hyperexponential,
    constant, empirical) or matrix-exponential ones (Erlang, Coxian, phase-type: (w, theta, None, (alpha, P)),
    returned with the exit vector 1 - P 1 computed exactly as a third matrix entry), so that the tails are the sums
    (F1)-(F4) of :mod:`qderive.numeric.kernels.lattice_finite`; else (None, why not) ("" when the service itself
    is not constant: the refusal then names its kinks)."""
    pieces = service.survival_pieces()
    if pieces is None or len(pieces) != 1 or pieces[0][0] != 1 or pieces[0][1] != 0 or pieces[0][2] is None:
        return None, ""
    vac, why = exact_vacation_pieces(vacation, f"the constant service {service}")
    return (None, why) if vac is None else ((Fraction(pieces[0][2]), vac), "")


def exact_vacation_pieces(vacation, service_text: str):
    """(pieces, "") of the vacation's survival function for the sums (F1)-(F4) (() without vacations; matrix pieces
    with their exit vector 1 - P 1 computed exactly), or (None, why not) naming ``service_text``."""
    if vacation is None:
        return (), ""
    vac = vacation.survival_pieces()
    if vac is None:
        return None, (f"the vacation time {vacation} has no exact sum with {service_text} in the "
                      "finite room (exact tails need a vacation law given by exact survival pieces: exponential, "
                      "hyperexponential, constant, empirical, Erlang, Coxian or phase-type; gamma, lognormal and "
                      "uniform laws have none)")
    out = []
    for p in vac:
        if p[0] == 0:  # a piece of weight 0 adds nothing
            continue
        if len(p) == 4:
            alpha, P = p[3]
            exit_ = tuple(1 - sum((Fraction(v) for v in row), Fraction(0)) for row in P)
            p = (p[0], p[1], None, (tuple(alpha), tuple(tuple(row) for row in P), exit_))
        out.append(p)
    return tuple(out), ""


#: rows of one period beyond which the sums stop extending them (the weights (F3) decay at least geometrically)
LATTICE_ROWS = LF.LATTICE_ROWS


def _context_piece(ctx, piece):
    """A survival piece of :func:`lattice_setup` in the context ``ctx`` (the infinite room's conversion, its
    numbers rounded once), a matrix piece with its exit vector: (w, theta, None, (alpha, P, exit))."""
    from .vacation_wait import survival_piece

    if len(piece) == 3:
        return survival_piece(ctx, piece)
    alpha, P, exit_ = piece[3]
    w, theta, d, (a, Pc) = survival_piece(ctx, (*piece[:3], (alpha, P)))
    return w, theta, d, (a, Pc, ctx.array([ctx.num(v) for v in exit_]))


class LatticeSums(LF.ConstantSums):
    """The sums (F1) of :class:`~qderive.numeric.kernels.lattice_finite.ConstantSums` for the law's data ``parts``
    (a list of :class:`WaitData`, one per arrival rate) and ``setup`` = (D, the vacation's exact survival pieces of
    :func:`lattice_setup`), the pieces converted to the context here (:func:`_context_piece`)."""

    def __init__(self, parts, setup):
        D, vacation = setup
        super().__init__(parts, D, vacation)

    def _periods(self, parts, service, vacation):
        super()._periods(parts, service, tuple(_context_piece(self.ctx, p) for p in vacation))


def _lattice_sums(law: "FiniteWait", ctx, setup) -> LatticeSums:
    """The :class:`LatticeSums` of ``law`` for ``ctx`` (float64, or mpmath for ctx.dps digits), kept with its data."""
    parts = law.parts(ctx)
    if parts[0].lattice is None:
        parts[0].lattice = LatticeSums(parts, setup)
    return parts[0].lattice


def lattice_tails(law: "FiniteWait", setup, kind: str):
    """The law's own ``tails`` (:class:`~qderive.numeric.response.ResponseLaw`) for a constant service D: P(W > t)
    by the positive sums (F1) of :mod:`qderive.numeric.kernels.lattice_finite` over the state at the batch's
    arrival of this module's items 1-3, and P(W + D > t) = P(W > t - D) (1 for t < D) for the sojourn.

    float64 keeps a tail whose error bound (rounding, rows cut or zeroed) is below 1e-10 of it and gives None
    otherwise (``response.py`` recomputes it at 15 digits, with a note); D digits use the mpmath data (D + guard
    + 24 digits: the rounding bound is far below 10^-(D+2)) and extend the rows until their truncation is below
    10^-(D+2) of the tail; a tail that cannot meet it raises a NumericalError."""
    shift = setup[0] if kind == "sojourn" else 0
    return _sum_tails(lambda ctx: _lattice_sums(law, ctx, setup), shift, "with the constant service",
                      f"the sums over {LATTICE_ROWS} rows of batches")


def _sum_tails(get_sums, shift, what, parts):
    """The ``tails`` function of a law whose tails are sums of positive terms (:class:`LatticeSums` or a subclass,
    ``get_sums(ctx)``), under the policy of :func:`lattice_tails`: P(T > t) = the sums' tail at t - ``shift``
    (1 below 0); ``what`` and ``parts`` name the case and its sums in the errors."""

    def tails(ts, digits):
        out, working = [], None
        if digits is None:
            try:  # an overflow leaves inf or nan in the data: those tails fail their test below and escalate
                with np.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
                    sums = get_sums(FLOAT64)
            except ArithmeticError:  # the float64 level vectors over- or underflow: every point escalates
                return [None] * len(ts), None
        else:
            try:
                sums = get_sums(mp_context(digits))
            except ArithmeticError as e:  # a size limit of the sums
                raise NumericalError(f"the tails {what}: {e}") from None
            working = sums.ctx.dps
        for t in ts:
            t = Fraction(t) - shift
            if t < 0:
                out.append(1.0 if digits is None else mpmath.mpf(1))
                continue
            with sums.ctx:
                goal = 1e-11 if digits is None else mpmath.mpf(10) ** (-(digits + 2))
                try:
                    with np.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
                        value, error = sums.tail(t, goal)  # inf or nan fail the float64 test below
                except ArithmeticError as e:  # t - j D beyond the float64 range, or a size limit: this point escalates
                    if digits is not None:
                        raise NumericalError(f"P(T > {mpmath.nstr(mpmath.mpf(t.numerator) / t.denominator, 6)}) "
                                             f"{what}: {e} (t is too large for these sums)") from None
                    out.append(None)
                    continue
                if digits is None:
                    ok = np.isfinite(value) and np.isfinite(error) and (value == 0 or (value > 0 and error <= 1e-10))
                    out.append(min(1.0, float(value)) if ok else None)
                    continue
                if value != 0 and not error <= 10 * goal:
                    raise NumericalError(f"P(T > {float(t):.6g}) {what}: {parts} still miss 10^-{digits + 1} of "
                                         "the tail")
                out.append(+value)
        return out, working

    return tails


# --------------------------------------------------------------------------------------
# A phase-type service with constant, empirical or uniform vacations: exact tails (kernel finite_kinked)
# --------------------------------------------------------------------------------------


def _vacation_parts(vacation):
    """(atoms ((w, d), ...), densities ((c, x_0, x_1), ...)) exactly when P(V > x) is piecewise linear: steps
    w 1{x < d} (``survival_pieces``: constant, empirical) or linear pieces (``survival``: uniform, whose density c
    on [x_0, x_1] is a mixture of constants); None otherwise."""
    vac = vacation.survival_pieces()
    if vac is not None:
        if not all(len(p) == 3 and p[1] == 0 and p[2] is not None for p in vac):
            return None
        return tuple((Fraction(w), Fraction(d)) for w, _, d in vac if w != 0), ()
    from .vacation_wait import linear_pieces

    lin = linear_pieces(vacation)
    return None if lin is None else linear_parts(lin)


def kinked_setup(service, vacation):
    """((theta, P, exit, beta, k), (atoms, densities)), "" when the service is phase-type (exponential, Erlang,
    integer gamma, hyperexponential, Coxian, PH with no atom at 0) and the vacation's survival function is piecewise
    linear (constant, empirical: atoms (w, d); uniform: a density c on [x_0, x_1], a mixture of constants), so that
    the tails are the positive sums (K1)-(K2) of :mod:`qderive.numeric.kernels.finite_kinked` (a density by
    Gauss-Legendre over d of the constant-d sums): the service uniformized exactly at theta = max |T_ii|,
    P = I + T / theta, exit = 1 - P 1, k the Erlang order when beta = e_1 and P is the shift (else None); otherwise
    (None, why not) ("" when the vacation's survival function is not given piecewise: the caller's reason stands)."""
    if vacation is None:
        return None, ""
    if vacation.survival_pieces() is None and vacation.survival(mpmath.mpf(0)) is None:
        return None, ""
    parts = _vacation_parts(vacation)
    if parts is None:
        if vacation.survival_pieces() is not None:
            return None, ""
        return None, (f"the vacation time {vacation} has no exact sum with the service {service} in the finite "
                      "room (exact tails there need a constant, empirical or uniform vacation with a phase-type "
                      "service, or a constant service)")
    ph = service.phase_type()
    why = (f"the service time {service} is not phase-type, so the finite room has no exact sum for it with the "
           f"vacation {vacation} (exact tails with constant or empirical vacations need an exponential, Erlang, "
           "hyperexponential, Coxian or phase-type service, or a smooth one with a closed-form transform: gamma)")
    if ph is None:
        from .blocks_finite_shifts import shift_setup

        shifted = shift_setup(service, vacation)  # a smooth service, a constant or empirical vacation: (SF)
        return (shifted, "") if shifted is not None else (None, why)
    try:
        alpha = tuple(Fraction(a) for a in ph[0])
        T = tuple(tuple(Fraction(v) for v in row) for row in ph[1])
    except (TypeError, ValueError):
        return None, why
    if sum(alpha) != 1:
        return None, why + " (its initial vector has an atom at 0)"
    return (FK.uniformized(alpha, T), parts), ""


#: Horner steps of the vacations' start (K2) beyond which the sums stop extending them
_KINKED_STEPS = FK.KINKED_STEPS


def _kinked_sums(parts, setup, extra):
    """The sums (K1)-(K2) of :class:`~qderive.numeric.kernels.finite_kinked.KinkedSums` for the law's ``parts``,
    the wait (``extra`` 0) or the sojourn (1), a uniform vacation's density by this package's Gauss-Legendre nodes."""
    from .vacation_wait import gauss_legendre

    return FK.KinkedSums(parts, setup, extra, gauss_legendre)

def kinked_tails(law: "FiniteWait", setup, kind: str):
    """The law's own ``tails`` (:class:`~qderive.numeric.response.ResponseLaw`) for a phase-type service with constant,
    empirical or uniform vacations: P(W > t) (or of the sojourn) by the positive sums (K1)-(K2) of
    :mod:`qderive.numeric.kernels.finite_kinked` over the state at the batch's arrival of this module's items 1-3.

    The precision policy of :func:`lattice_tails`: float64 keeps a tail whose error bound (rounding, rows cut or
    zeroed, Horner and Poisson sums cut, the two Gauss-Legendre orders' difference for a uniform vacation) is below
    1e-10 of it and gives None otherwise (recomputed at 15 digits, with
    a note); D digits use the mpmath data (D + guard + 24 digits) and extend rows and Horner steps until the
    truncation is below 10^-(D+2) of the tail."""
    from .blocks_finite_shifts import ShiftSetup, finite_shift_tails

    if isinstance(setup, ShiftSetup):  # a smooth service that is not phase-type: the shifted sums (SF)
        return finite_shift_tails(law, kind)
    extra = 1 if kind == "sojourn" else 0

    def sums_for(ctx):
        parts = law.parts(ctx)
        if parts[0].kinked is None:
            parts[0].kinked = {}
        if kind not in parts[0].kinked:
            parts[0].kinked[kind] = _kinked_sums(parts, setup, extra)
        return parts[0].kinked[kind]

    return _sum_tails(sums_for, 0, "with constant vacations", f"the sums over {_KINKED_STEPS} Horner steps")


# --------------------------------------------------------------------------------------
# The blocks (close-down, setup, start threshold N): the period families of the idle passage (items 6, 7)
# --------------------------------------------------------------------------------------


def _recording(base):
    """A subclass of the finite room's passage interpreter ``base``
    (:class:`~qderive.numeric.engines.blocks_finite.FinitePassage` or ``WholePassage``) that records, per stage
    i, what items 6 and 7 need: the kernel's :func:`~qderive.numeric.kernels.block_wait.recording_passage`."""
    from ..kernels.block_wait import recording_passage

    return recording_passage(base)


def stage_suffix(stages, i, top=1) -> tuple:
    """The laws of the stages a customer present at the end of stage ``i`` waits through in full before the first
    service, the thresholds (at most ``top``) met: the later ``during`` stages really entered (with N > 1 the
    customers still below N wait more: item 7). Refused for a stage it cannot wait through whole (an ``interrupt``
    later in the passage)."""
    from ...symbolic.blocks.machine import StageKind, resolve
    from ...symbolic.errors import ParameterError

    out = []
    j, _ = resolve(stages, i + 1, top)
    while j < len(stages):
        stage = stages[j]
        if stage.kind is not StageKind.DURING:
            raise ParameterError(f"the finite-room waiting-time law does not cover a {stage.kind.value} stage after "
                                 "a customer is present (the thresholds met)")
        out.append(stage.law)
        j, _ = resolve(stages, j + 1, top)
    return tuple(out)


def block_parts(model, ctx, order) -> list:
    """The s-independent data of a model with blocks (start threshold N >= 1; N > 1 where no batch is refused below
    N: item 7,
    the thresholds met, the excess weight pi_0 on the first part) as parts of :class:`FiniteWait`, one per suffix of
    full periods (item 6 of the module docstring), in ``ctx``: the departure chain pi and the first
    service's law y of :mod:`~qderive.numeric.engines.blocks_finite`, the services starting with n waiting
    Y_n = pi_{n+1} + pi_0 y_{n+1}, and pi_0 times what the passage records per idle period
    (:func:`_recording`)."""
    from ...symbolic.blocks import blocks_of, passage
    from ...symbolic.blocks.machine import machine, refuse_stuck
    from ...symbolic.errors import ParameterError
    from ..kernels import block_wait as BW
    from ..kernels import idle_passage as IP
    from . import blocks_finite as BF

    r = model.capacity
    whole = model.admission is Admission.WHOLE
    if refused_below_threshold(model):
        raise ParameterError("start-threshold", "the finite-room waiting-time law computes N > 1 under whole "
                             f"admission only when no batch can be refused below N (X <= "
                             f"{places_below_threshold(model)})", model.start_threshold)
    blocks = blocks_of(model)
    stages = machine(model, blocks)
    refuse_stuck(model, stages)
    BF.refuse_no_places(model, stages)
    top = max([s.threshold for s in stages if s.threshold is not None] + [1])
    with ctx:
        op = _recording(BF.WholePassage if whole else BF.FinitePassage)(model, ctx, stages, r)
        op.means = {law: ctx.num(law.moment(1)) for law in op._index}
        y = passage(blocks, op)
        pi, _ = (IP.whole_chain if whole else IP.partial_chain)(ctx, op, y[1:], r)
        pi0 = pi[0]
        lam = ctx.num(model.rate)
        bv = batch_vectors(model.batch, r + 1, ctx)
        pmf, tail = bv.pmf, bv.tail
        # a law with only a numeric transform (the lognormal: service, vacation, setup or close-down) has its counts
        # as far as the rows reach, its totals for the remainders, and more as the backward sweep asks (item 8)
        cap = None
        if _heavy(model) and not whole:
            cap = r
        elif _heavy(model) and r:
            keep = K.wait_keep(ctx, pmf, tail, r, whole, drop_full=True)
            cap = K.wait_rows_needed(ctx, r, pmf, keep, _rows_limit(ctx, r, pmf), bv.support, bv.geometric)
        beta, btail, btail2 = count_data(model.service, model.rate, ctx, order, _law_cap(model.service, cap, False))
        capped = {law for law in [model.service] + [st.law for st in stages] if _capped_law(law)}

        def period_counts(i):
            law = stages[i].law
            return (law, *count_data(law, model.rate, ctx, order, _law_cap(law, cap, False)))

        got, admit, low = BW.block_wait_parts(ctx, op.records, pi, y, r, whole, pmf, tail, bv.support, bv.geometric,
                                              beta, lambda i: stage_suffix(stages, i, top), period_counts)
        parts = []
        totals = {law: count_totals(law, model.rate, ctx, order) for law in capped}
        for g in got:
            periods = tuple(Period(*p, totals=totals.get(p[0])) for p in g["periods"])
            data = WaitData(ctx, order, r, whole, lam, pmf, tail, admit, low, bv.support, bv.geometric, g["Y"], None,
                            g["Zp"], g["t_idle"], g["zero_weight"], g["Ws"], ctx.zeros((0, r)), beta, btail, btail2,
                            None, None, None, periods=periods, flat=g["flat"], suffix=g["suffix"], once=g["once"])
            data.btotals = totals.get(model.service)
            data.N0 = admission_series(model, data, 0)[0]
            parts.append(data)
        if top > 1:  # the excess of the customers still below N (item 7), per idle period: weight pi_0
            parts[0].excess = pi0
        if ctx.is_float64 and not all(math.isfinite(d.N0) for d in parts):
            raise ArithmeticError("the level vectors over- or underflow float64")
        if ctx.is_float64 and capped and not sum(remainder_bound(model, d, 0)[0] for d in parts) <= \
                1e-13 * sum(d.N0 for d in parts):  # as build_data: N(0)'s remainders above 1e-13 go to mpmath
            raise ArithmeticError("the float64 remainders of N(0) exceed 1e-13 of it")
    return parts


def refused_below_threshold(model) -> bool:
    """True when a start threshold N > 1 under whole admission lets a batch be refused while the count is below N
    (P(X > m) > 0 with m = :func:`places_below_threshold`, the places at level N - 1): then the count below N is
    not the infinite room's and item 7 does not apply (refused)."""
    n = model.start_threshold
    return n != 1 and model.admission is Admission.WHOLE and model.batch.tail(places_below_threshold(model)) > 0


def places_below_threshold(model) -> int:
    """The fewest places a batch finds while the count is N - 1 < N (whole admission refuses a larger one):
    :func:`~qderive.symbolic.blocks.machine.places_below_threshold` of the model's state machine."""
    from ...symbolic.blocks.machine import machine, places_below_threshold as fewest

    return fewest(machine(model), model.start_threshold, model.capacity)


class BlockFiniteWait(FiniteWait):
    """:class:`FiniteWait` of a model with blocks (a setup, a close-down, a start threshold N): its parts are
    :func:`block_parts`, built at the precision rule of :meth:`FiniteWait.data`, plus pi_0 Delta(s) of item 7 when
    N > 1 (:meth:`_excess`, :meth:`_excess_series`)."""

    def _guard(self) -> int:
        m, extra = self.model, 0
        for law in [m.service] + [law for _, law in self._laws()]:
            lb = float(m.rate * law.moment(1))
            extra = max(extra, math.ceil(-math.log10(lb)) if lb < 1 else 0)
        return digits_for(m.capacity + 1) + 4 + extra

    def _laws(self):
        from ...symbolic.blocks import blocks_of

        return [fl for b in blocks_of(self.model) for fl in b.laws()]

    def _excess(self, ctx, parts, z):
        """pi_0 Delta(s) (item 7; :func:`~.blocks_threshold.threshold_excess`) at the nodes z of ``ctx``'s kind, or at
        the limit s -> oo (z None: a real number)."""
        from .blocks_threshold import threshold_excess

        if parts[0].excess is None:
            return 0
        weight = ctx.num(parts[0].excess) if ctx.is_float64 else +parts[0].excess
        if z is None:
            return threshold_excess(self.model, ctx, None)[0].real * weight
        return threshold_excess(self.model, ctx, z) * weight

    def _excess_series(self, ctx, parts, order):
        """pi_0 Delta(s) as a power series in -s (item 7): (-1)^p [s^p] Delta(s) =
        :func:`~.blocks_threshold.threshold_excess_moments` / p!."""
        from .blocks_threshold import threshold_excess_moments

        if parts[0].excess is None or order < 1:
            return 0
        out = ctx.zeros(order + 1)
        weight = parts[0].excess
        for p, v in enumerate(threshold_excess_moments(self.model, ctx, order), start=1):
            out[p] = v * weight / math.factorial(p)
        return out

    def parts(self, ctx, order=1) -> list:
        if ctx.is_float64:
            got = self._float.get("parts")
            if got is None or got[0].order < order:
                got = self._float["parts"] = block_parts(self.model, FLOAT64, max(order, 1))
            return got
        want = ctx.dps + self.guard
        got = self._mp.get("parts")
        if got is None or got[0].ctx.dps < want or got[0].order < order:
            r = self.model.capacity
            _limits.check("mp_capacity", r, f"the waiting time's data with mpmath cost about "
                          f"{max(1, round(4.5e-5 * r * r))} s at r = {r} (the finite engine's embedded law)")
            headroom = HEADROOM_HEAVY if _heavy(self.model) else HEADROOM
            dps = max(want + headroom, got[0].ctx.dps if got is not None else 0)
            got = self._mp["parts"] = block_parts(self.model, mp_context(dps),
                                                  max(order, 1, got[0].order if got else 1))
        return got


@functools.lru_cache(maxsize=4)
def wait_law_data(model) -> FiniteWait:
    """The computation behind :func:`response_laws`, one per model (a frozen model: its data are a function of
    the model and the precision; a few are kept so that repeated evaluations reuse them). Tests use it to
    force a strategy and to read intermediate quantities."""
    return BlockFiniteWait(model) if model.blocks else FiniteWait(model)


def _numeric_law_refusal(model) -> tuple[str, str]:
    """(field, reason) of the refusal of a lognormal law in the finite room (("", "") where none). Its tails are the
    transform's inversion (:func:`_inverted`: a lognormal service or vacation with a smooth other law; the counts
    from its size-biased laws, :mod:`qderive.numeric.size_biased`, as far as the rows and the backward sweep reach);
    else certified lattice brackets: a lognormal *service* with a vacation of exact survival pieces that is not
    smooth (a constant or empirical vacation: :func:`_capped_service`, (F5), (F6)), a lognormal vacation with a
    service on a lattice (:func:`rounded_vacation_setup`, (F7)/(F9)); a lognormal law with another law that is
    neither (a lognormal service with a uniform vacation) is refused."""
    if _inverted(model) or rounded_vacation_setup(model.service, model.vacation) is not None:  # (F7): bounds
        return "", ""
    for what in ("service", "vacation"):
        law = getattr(model, what, None)
        if numeric_transform(law) and not (what == "service" and _capped_service(model)):
            other = "vacation" if what == "service" else "service"
            bounds = ("a constant, empirical, uniform or lognormal service" if what == "vacation" else
                      "a vacation law with exact survival pieces")
            return what, (f"the {what} time {law} is heavy-tailed (only a numeric transform): the finite room inverts "
                          f"its transform with a smooth {other} time only ({getattr(model, other)} is not), and its "
                          f"lattice bounds need {bounds} (the moments are computed; the infinite room, "
                          "vacation-infinite, computes its tails)")
    return "", ""


def _smooth(model) -> tuple[bool, str]:
    """:func:`~.vacation_wait.smooth_laws` of the model's service and vacation, kept in the disk cache by their text."""
    from ...symbolic.cache import cached
    from .vacation_wait import smooth_laws

    laws = {k: v for k, v in model.parameters().items() if k in ("service", "vacation")}
    return tuple(cached("finite_wait_smooth_v3::" + json.dumps(laws, sort_keys=True), lambda: smooth_laws(model)))


def _inverted(model) -> bool:
    """True when the service or the vacation has only a numeric transform (the lognormal), every such law has counts
    from its size-biased laws (:func:`~qderive.numeric.size_biased.has_size_biased_counts`) and the model's laws are
    smooth (:func:`~.vacation_wait.smooth_laws`: no exp(-s D) factor): the tails are then the inversion of the
    transform (items 1-4), with the float64 check and the escalation of the precision policy."""
    numeric = [law for law in (model.service, model.vacation) if numeric_transform(law)]
    return bool(numeric) and all(has_size_biased_counts(law) for law in numeric) and _smooth(model)[0]


def _rounded(model):
    """:func:`rounded_vacation_setup` of the model's laws, or None where the transform is inverted instead
    (:func:`_inverted`: a lognormal service with a gamma or lognormal vacation, both smooth, is inverted to 15 digits
    rather than bracketed by (F7)/(F9) about 3 % wide)."""
    return None if _inverted(model) else rounded_vacation_setup(model.service, model.vacation)


def _capped_service(model) -> bool:
    """True when the service law has a numeric transform (the lognormal) that is not inverted (:func:`_inverted`: a
    vacation with exact survival pieces that is not smooth, a constant or an empirical one) and an unbounded support
    whose capped rounding gives certified brackets (:func:`capped_rounding`, (F6)): its tails are the lattice sums
    (F5), (F6) over the state from the true law's count sequences."""
    return (numeric_transform(model.service) and not numeric_transform(model.vacation) and not _inverted(model)
            and service_lattice_setup(model.service, model.vacation)[0] is not None)


def _tails_refusal(model, asked):
    """Refuse tails and quantiles for laws with kinks that no exact sum of the finite room covers (the choice of
    :func:`response_laws`), from the laws alone: before the model is solved."""
    from ...symbolic.cache import cached
    from ...symbolic.capabilities import Refusal
    from .vacation_wait import TAIL_MEASURES, smooth_field, smooth_laws

    wanted = TAIL_MEASURES & asked
    if not wanted:
        return None
    field, slow = _numeric_law_refusal(model)
    if slow:
        return Refusal(field, slow, min(wanted))
    if _rounded(model) is not None:  # (F7): the budget before any work
        return _lattice_budget(model)
    laws = {k: v for k, v in model.parameters().items() if k in ("service", "vacation")}
    smooth, why = (False, "") if _capped_service(model) else cached(
        "finite_wait_smooth_v3::" + json.dumps(laws, sort_keys=True), lambda: smooth_laws(model))
    if smooth:
        return None
    setup, why_not = lattice_setup(model.service, model.vacation)
    if setup is None and not why_not:
        setup, why_not = service_lattice_setup(model.service, model.vacation)
        if setup is not None:  # (r + 3) x N matrices of the lattice sums (F5): the budget before any work
            return _lattice_budget(model)
    if setup is None and not why_not:
        setup, why_not = kinked_setup(model.service, model.vacation)
    if setup is not None:
        return None
    field = smooth_field(model) or "service"
    return Refusal(field, (why_not or why) + ": transform inversion cannot give its tails to the requested digits "
                   "and no exact sum of the package covers these laws; the moments work for every law", min(wanted))


def _lattice_budget(model):
    """The refusal (or None) of the lattice sums (F5) by the limit ``lattice_work``: (r + 3) x N matrices."""
    from ...symbolic.capabilities import limit_refusal

    return limit_refusal("--capacity", "lattice_work", (model.capacity + 3) * _limits.current().lattice_levels,
                         "the finite room's tails with the service on a lattice hold (r + 3) x N numbers "
                         "(N = lattice-levels; 24 bytes and about nnz(b) operations each)")


def _block_tails_refusal(model) -> tuple[str, str] | None:
    """(field, reason) of the refusal of the tails of a model with blocks, or None: a law with only a numeric
    transform and no size-biased counts among the service, the vacation and the blocks' laws (none today: the
    lognormal's counts come from its size-biased laws as far as the rows and the backward sweep reach, item 8, the
    families of item 6 with its transform), else a law with kinks (:func:`~.blocks.kinked_law`)."""
    from .blocks import kinked_law
    from .blocks_finite_shifts import finite_shift_plan

    for field in ("service", "vacation", "setup", "close_down"):
        law = getattr(model, field)
        if numeric_transform(law) and not has_size_biased_counts(law):
            name = field.replace("_", "-")
            return field, (f"the {name} time {law} is heavy-tailed: the finite room's count sequences of its arrivals "
                           "do not settle within the time budget (the moments are computed; the infinite room, "
                           "vacation-infinite, computes its tails)")
    plan, why = finite_shift_plan(model)  # a constant or empirical law: the shifted sums (SF)
    if plan is not None:
        return None
    return why if why is not None else kinked_law(model)


def _response_check(model, asked):
    """The refusal of :func:`response_laws`: with a setup or a close-down :func:`_block_tails_refusal` for the tails
    and quantiles (with N > 1 first the infinite room's start-threshold check, the moments included: the excess of
    item 7 needs the derivatives of every law's transform, a closed form's or the lognormal's by its size-biased laws),
    else :func:`_tails_refusal`."""
    if model.blocks:
        from ...symbolic.capabilities import Refusal
        from .blocks import threshold_check
        from .vacation_wait import TAIL_MEASURES

        threshold = threshold_check(model, asked, derivatives=True)
        if threshold is not None:
            return threshold
        wanted = TAIL_MEASURES & frozenset(asked)
        refused = _block_tails_refusal(model) if wanted else None
        return None if refused is None else Refusal(refused[0], refused[1], min(wanted))
    return _tails_refusal(model, asked)


def _below_text(model) -> str:
    """The bound of :func:`places_below_threshold` as the rule's text: its formula and value."""
    m = places_below_threshold(model)
    formula = "r - N + 1" if m == model.capacity - model.start_threshold + 1 else "r - N + 2"
    unbounded = "" if model.batch.max_size is not None else (f"; the {model.batch} batches are unbounded, so every "
                                                             "capacity refuses one")
    return f"{formula} = {m}{unbounded}"


@declare(Rule("start_threshold", refused_below_threshold,
              lambda m: f"the finite-room waiting-time law computes a start threshold N > 1 under whole admission only "
                        f"when no batch can be refused below N (batch sizes at most {_below_text(m)}; a refused batch "
                        "does not count, so the count below N would not be the infinite room's, and the law of that "
                        "count with admission depending on the level is not derived; the queue-length measures are "
                        "computed)", whole=True), check=_response_check)
def response_laws(model, wait=None) -> dict:
    """``{"wait": ResponseLaw, "sojourn": ResponseLaw}`` of a concrete :class:`FiniteVacationQueue` (``wait``: the
    law object whose data they read, default :func:`wait_law_data` of the model; the contract's control injects
    its own start law, :class:`qderive.numeric.engines.sip.control.ControlWait`). With a setup, a close-down or a
    start threshold N > 1 (whole admission where no batch can be refused below N: the declared rule) the period
    families of items 6 and 7: transform inversion for smooth laws, the moments for every law with a closed-form
    transform; no exact sums (a law with kinks or a lognormal among the service, the vacation and the blocks' laws:
    tails refused, :func:`_block_tails_refusal`)."""
    from ...symbolic.cache import cached
    from .vacation_wait import smooth_laws

    if model.blocks:
        from .blocks_finite_shifts import finite_shift_plan, finite_shift_tails

        kinked = _block_tails_refusal(model)
        w = wait_law_data(model) if wait is None else wait
        if kinked is None and finite_shift_plan(model)[0] is not None:  # a constant or empirical law: (SF)
            why = "the wait's transform has exp(-s D) factors (a constant or empirical setup or vacation)"
            own = {kind: finite_shift_tails(w, kind) for kind in ("wait", "sojourn")}
            return {kind: ResponseLaw(kind, w.transform(kind), w.p_zero(kind), w.moment_values(kind), False, why,
                                      own[kind], own[kind].rough) for kind in ("wait", "sojourn")}
        return {kind: ResponseLaw(kind, w.transform(kind), w.p_zero(kind), w.moment_values(kind), kinked is None,
                                  "" if kinked is None else kinked[1]) for kind in ("wait", "sojourn")}
    laws = {k: v for k, v in model.parameters().items() if k in ("service", "vacation")}
    rounded = _rounded(model)
    _, slow = _numeric_law_refusal(model)
    if slow:
        smooth, why = False, slow
    elif _capped_service(model):  # the lognormal service: the capped lattice brackets (F6), not an inversion
        smooth, why = False, f"the service time {model.service} is heavy-tailed"
    elif rounded is not None:  # (F7): the vacation bounded on the services' lattice, not an inversion
        smooth, why = False, f"the vacation time {model.vacation} has no exact survival pieces"
    else:
        smooth, why = cached("finite_wait_smooth_v3::" + json.dumps(laws, sort_keys=True), lambda: smooth_laws(model))
    exact = not smooth and not slow  # a refused heavy-tailed law: no sums either (its reason stands)
    setup, why_not = lattice_setup(model.service, model.vacation) if exact else (None, "")
    make = lattice_tails
    if rounded is not None:
        setup, why_not, make = rounded, "", service_lattice_tails
    if exact and setup is None and not why_not:  # a discrete or bounded service on or off a lattice?
        setup, why_not = service_lattice_setup(model.service, model.vacation)
        make = service_lattice_tails
    if exact and setup is None and not why_not:  # the service is not constant: a phase-type one with steps?
        setup, why_not = kinked_setup(model.service, model.vacation)
        make = kinked_tails
    w = wait_law_data(model) if wait is None else wait
    if rounded is not None:  # (F7)/(F9): the atom from the data the sums use, not the transform's
        w.rows_atom = True
    out = {}
    for kind in ("wait", "sojourn"):
        own = None if setup is None else make(w, setup, kind)
        own, bracket, rough, bound = (own or (None,) * 4) if make is service_lattice_tails else (own, None, None, None)
        rough = getattr(own, "rough", rough)  # (SF): its float64 sums guide the quantile search
        out[kind] = ResponseLaw(kind, w.transform(kind), w.p_zero(kind), w.moment_values(kind), smooth,
                                why_not or why, own, rough, bracket, bound)
    return out


# --------------------------------------------------------------------------------------
# A service on a lattice, or rounded to one (empirical, uniform): exact sums or certified brackets (kernel (F5))
# --------------------------------------------------------------------------------------


def service_lattice_setup(service, vacation):
    """((service law, vacation pieces, rounded pmfs, atoms), "") when the service is not one constant but has a cdf
    with a bounded support that rounds to a lattice (a discrete law such as an empirical sample, or a uniform law:
    :func:`~.vacation_wait.service_rounding`) and the vacation (None: none) is given by exact survival pieces, as for
    :func:`lattice_setup`; then the tails are the sums (F1), (F5) of :mod:`qderive.numeric.kernels.lattice_finite`
    with the services on a lattice: exact when the law is on a lattice of few levels, certified brackets otherwise
    (:func:`service_lattice_tails`). Else (None, why not) ("" when the service has no bounded cdf: the caller's
    reason stands)."""
    from .vacation_wait import service_atoms, service_rounding

    if service.survival_pieces() is None and service.survival(mpmath.mpf(0)) is None:
        return None, ""
    atoms = service_atoms(service)
    got, _ = service_rounding(service, atoms)
    cap = None
    if got is None:  # an unbounded support with no exact transform (the lognormal): capped at the span, (F6)
        got = capped_rounding(service) if numeric_transform(service) else None
        if got is None:
            return None, ""
        got, cap = (got, None), service
    vac, why = exact_vacation_pieces(vacation, f"the service {service}")
    return (None, why) if vac is None else ((service, vac, got[0], atoms, cap), "")


def capped_rounding(law):
    """``pmfs(h, N)`` -> (b_down, b_up) over 0..N for a service law with an unbounded support, a float64
    ``survival_many`` and a ``stop_loss`` (the lognormal; None for a law without them): the capped service
    min(B, c), c = N h, rounded down and up to the lattice h (F6): b_down[N] = P(B >= c), b_up[N] =
    P(B > c - h) (the services in (c - h, c) rounded up to the cap as well: each pmf has total mass 1).

    **(F6) Why the brackets stay certified with the cap.** Take c >= t (the lattice spans [0, c], c >= 9/8 t). *The
    services ahead* (the j of (F5), and the customer's own for the sojourn): a service longer than c >= t makes W > t
    with the true law and with the capped one alike (S_j >= c >= t: the column u = 0 of (F1), every arrival of the
    period counted), so capping them at c changes no term, and below c the rounding down (up) is below (above) B
    pathwise: the monotone bounds of (F5) hold. *The residual of the service in progress* uses the survival
    function of the capped law, S_c(y) = S(y) 1{y < c} <= S(y): the lower bound stands (rounded down,
    S_c,down <= S_c <= S); the upper bound misses, per service period and for every row K (the rows beyond the
    last computed one too), int_0^oo Pois(K; lambda x) 1{x + u >= c} S(x + u) dx, whose sum over K (sum_K Pois = 1)
    is at most int_c^oo S(y) dy = E (B - c)^+, the law's ``stop_loss(c)``; with the rows' masses not increasing
    (|w_K|_1 <= |w_0|_1) and sum_j a[n, j] E[...] <= C[n, 0], the upper bound adds
    E (B - c)^+ sum_periods |w_0|_1 max_n C[n, 0] (:class:`ServiceLatticeSums` ``cap``). Nothing else of the
    law is needed: the state at the arrival (rows, admission, idle time) is the true law's, from its count
    sequences. float64 differences of ``survival_many`` give the pmfs, as for a uniform law
    (:func:`~.vacation_wait.service_rounding`)."""
    if law.survival(mpmath.mpf(1)) is None or law.stop_loss(mpmath.mpf(1)) is None:
        return None

    def pmfs(h, N):
        S = np.clip(np.asarray(law.survival_many(np.arange(N + 1) * float(h)), dtype=float), 0.0, 1.0)
        down, up = np.zeros(N + 1), np.zeros(N + 1)
        down[:N] = S[:N] - S[1:]  # P(k h <= B < (k + 1) h) (a continuous law)
        up[1:] = S[:N] - S[1:]  # P((k - 1) h < B <= k h)
        down[N] = S[N]  # P(B >= c): the cap
        up[N] = S[N - 1] if N else S[0]  # P(B > c - h): every service above c - h rounded up to the cap
        return np.maximum(down, 0.0), np.maximum(up, 0.0)

    return pmfs


def exact_lattice(atoms, r: int, extra: int):
    """(b, g, M) when the service law is discrete (``atoms`` ((value, weight), ...), else None) with every value an
    integer multiple of g (the gcd of its values) and the sums S_j, j <= r + 1 + extra, span at most
    M = (r + 1 + extra) max / g <= the limit ``lattice_levels`` levels: b[m] = P(B = m g) exactly (Fractions); else
    None (the certified brackets)."""
    from .vacation_wait import fraction_gcd

    if atoms is None:
        return None
    g = fraction_gcd([d for d, _ in atoms if d > 0])
    if g is None:
        return None
    top = int(atoms[-1][0] / g)
    M = (r + 1 + extra) * top
    if M > _limits.current().lattice_levels:
        return None
    b = [Fraction(0)] * (top + 1)
    for d, w in atoms:
        b[int(d / g)] += w
    return tuple(b), g, M


#: the levels up to which the certified brackets of a service off its lattice (raw floats, uniform) are refined
#: beyond ``lattice_levels`` (at its default or above; a lower value caps them), by the FFT sums (F10) of the
#: rounded laws (their width is O(1 / N): 16 times narrower than at 8192 levels, about 2 s a pair at t = 0.5 s;
#: within ``fine_lattice_levels``)
FFT_BRACKET_LEVELS = 1 << 17
#: the most levels of the quantile search's guide on a fine lattice (F10): the law rounded to the nearest point
GUIDE_LEVELS = 1 << 17
#: the default of the limit ``lattice_levels``: a lower value caps these brackets too (as it always did)
_DEFAULT_LEVELS = _limits.Limits().lattice_levels


def fine_lattice(atoms):
    """(b, g) of a discrete service law on the lattice g (the gcd of its values): b[m] = P(B = m g) as floats (each
    rounded once) over 0..max / g, for the streamed sums (F10) of :mod:`qderive.numeric.kernels.lattice_fft`; None
    for a law off a lattice, without atoms, or whose largest value spans more than ``fine_lattice_levels`` steps."""
    from .vacation_wait import fraction_gcd

    if not atoms:
        return None
    g = fraction_gcd([d for d, _ in atoms if d > 0])
    if g is None:
        return None
    top = atoms[-1][0] / g
    if top > _limits.current().fine_lattice_levels:  # raw floats (g tiny), or an outlier far beyond the span
        return None
    b = np.zeros(int(top) + 1)
    for d, w in atoms:
        b[int(d / g)] += float(w)
    return b, g


class FineServiceSums(LFF.FineLatticeSums, LatticeSums):
    """The sums (F10) of :mod:`qderive.numeric.kernels.lattice_fft` (a service on a fine lattice, its powers by FFT,
    streamed) with h exact (a Fraction) and the vacations' exact pieces converted to the context
    (:class:`LatticeSums`); ``bounds(t)`` the value -/+ its certified error, as the bracketed sums."""

    def __init__(self, parts, b, h, vacation, extra, mass):  # noqa: D107 - the class docstring says it
        self._fine_init(parts, b, Fraction(h), vacation, extra, mass)


class ServiceLatticeSums(LF.LatticeServiceSums, LatticeSums):
    """The sums (F1) with the services on the lattice h (kernel (F5),
    :class:`~qderive.numeric.kernels.lattice_finite.LatticeServiceSums`, which generated code ships) with h exact (a
    Fraction: t - k h exact) and the vacations' exact pieces converted to the context (:class:`LatticeSums`)."""

    def __init__(self, parts, b, h, M, vacation, extra, mass=None, shifted=None, cap=0.0):  # noqa: D107 - the class
        super().__init__(parts, b, Fraction(h), M, vacation, extra, mass, shifted, cap)


def service_lattice_tails(law: "FiniteWait", setup, kind: str):
    """(tails, bracket, rough, bound) of the wait (``kind`` "wait") or the sojourn for a service law on a lattice or
    rounded to one (:func:`service_lattice_setup`; a lognormal capped at the span, (F6)), the sums (F1), (F5) over
    the exact state at the batch's arrival; ``rough`` and ``bound`` (None for an exact lattice) guide the quantile
    search and give one side of the bracket (:class:`~qderive.numeric.response.ResponseLaw`).

    *An exact lattice* (:func:`exact_lattice`: a discrete law on the lattice g whose sums S_{r+1} span at most the
    limit ``lattice_levels``): the sums are exact, under the precision policy of :func:`lattice_tails` (float64
    within 1e-10 or 15 digits with a note; D digits in mpmath); ``bracket`` None. *A discrete law on a fine lattice
    g* (a sample recorded to 0.01 ms or 1 us; :func:`fine_lattice`, span / g within the limit ``fine_lattice_levels``):
    the same sums on g itself by FFT powers (F10) of :mod:`qderive.numeric.kernels.lattice_fft`, one sum for both
    sides of the bracket, which is the FFT's certified rounding (F11) (a few 1e-10 relative; --digits D up to about
    9). *Otherwise* certified brackets:
    every service rounded down and up to the lattice h over [0, g 2^e] (the span of :func:`~.vacation_wait.bracket_span`,
    N = 512, 1024, ... levels up to the limit ``lattice_levels``, refined while the bracket is wider than 1e-9
    relative, 10^-D for --digits D), the lower bound the rounded-down law's sum minus its rounding bound, the upper
    the rounded-up law's plus its rounding and row-cut bounds, both divided by the exact total N(W > -1); the value
    the Richardson extrapolation of the midpoints at h and 2 h clipped into the bracket; --digits D only when the
    bracket has D digits (the infinite room's :func:`~.vacation_wait.bound_tails`, whose note and limit these
    mirror). *A vacation with no exact pieces* (:class:`VacationRounding`): a smooth one by the quadrature (F9) in
    both sums (with a service on its lattice g: N = span / g levels, one sum for both bounds, the bracket its error
    estimate; the note says so, ``bracket.how``), a kinked one bounded by the steps (F7)."""
    from .vacation_wait import bracket_span, bracket_value, tail_at_zero

    service, vacation, pmfs, atoms, capped = setup
    extra = 1 if kind == "sojourn" else 0
    model = law.model
    rounded = isinstance(vacation, VacationRounding)  # (F7): the vacation bounded on the lattice too
    exact = None if rounded else exact_lattice(atoms, model.capacity, extra)
    if exact is not None:
        b, g, M = exact

        def sums_for(ctx):
            parts = law.parts(ctx)
            if parts[0].service_lattice is None:
                parts[0].service_lattice = {}
            if kind not in parts[0].service_lattice:
                parts[0].service_lattice[kind] = ServiceLatticeSums(parts, b, g, M, vacation, extra)
            return parts[0].service_lattice[kind]

        tails = _sum_tails(sums_for, 0, "with the lattice service", f"the sums over {LATTICE_ROWS} rows of batches")
        return tails, None, None, None

    brackets: dict = {}
    store: dict = {}
    coarse: dict = {}  # the lattices of the quantile guide (:func:`rough`), per span
    guides: dict = {}  # (F10): the guide's sums of the law rounded to the nearest coarse point, per span
    from .vacation_wait import fraction_gcd

    step = fraction_gcd([d for d, _ in atoms if d > 0]) if rounded and vacation.smooth and atoms else None
    fine = None if rounded or capped is not None else fine_lattice(atoms)  # (F10): the data's own lattice

    def fine_levels(cover):
        """(F10): the levels N = cover / g of a service on the lattice g within the limit ``fine_lattice_levels``,
        where both bounds are one sum, computed exactly but for the FFT's certified rounding; None otherwise."""
        if fine is None:
            return None
        n = Fraction(cover) / fine[1]
        return int(n) if n.denominator == 1 and n <= _limits.current().fine_lattice_levels else None

    def on_lattice(cover, limit):
        """(F9) with a service on the lattice g (a constant, a sample recorded to 1 ms): the levels N = cover / g
        (at least 512) at which it rounds to itself, so that both bounds are one sum and no finer lattice helps; None
        otherwise (or beyond the limit)."""
        if step is None:
            return None
        n = Fraction(cover) / step
        return max(int(n), min(512, limit)) if n.denominator == 1 and n <= limit else None
    on_digits = _quadrature_digits(law, vacation, atoms, extra) if rounded and vacation.smooth else None
    span = [Fraction(0)]
    final = [None]  # (levels, tolerance) where the last refinement stopped: a later point (a search) starts there
    at_digits = [None]  # D where the last value came from the quadrature at D digits (the note says so)

    def build(cover, N):  # the rounded-down and rounded-up sums over [0, cover] with N levels
        h = cover / N
        if fine is not None and h == fine[1]:  # (F10): the data's own lattice, one sum for both bounds
            parts = law.parts(FLOAT64)
            with np.errstate(under="ignore"):
                one = FineServiceSums(parts, fine[0], h, vacation, extra, FLOAT64.fsum([d.N0 for d in parts]))
            return one, one
        down, up = pmfs(h, rows=model.capacity + 3) if capped is None else pmfs(h, N)
        if N > _DEFAULT_LEVELS and not rounded and capped is None:  # (F10) on the finer lattices
            parts = law.parts(FLOAT64)
            mass = FLOAT64.fsum([d.N0 for d in parts])
            with np.errstate(under="ignore"):
                return (FineServiceSums(parts, down, h, vacation, extra, mass),
                        FineServiceSums(parts, up, h, vacation, extra, mass))
        cap = 0.0
        if capped is not None:  # (F6): E (B - c)^+ for the upper bound's residuals beyond the cap c
            with mpmath.workdps(20):
                cap = float(capped.stop_loss(mpmath.mpf(cover.numerator) / cover.denominator))
        if rounded:
            return _rounded_pair(law, vacation, down, up, h, N, extra, cap)
        parts = law.parts(FLOAT64)
        mass = FLOAT64.fsum([d.N0 for d in parts])
        with np.errstate(under="ignore"):
            low = ServiceLatticeSums(parts, down, h, N, vacation, extra, mass)
            if np.array_equal(down, up) and not cap:
                return low, low
            # no value on the lattice: the rounding up is the rounding down shifted by one step
            shift = up[0] == 0 and down[-1] == 0 and np.array_equal(up[1:], down[:-1])
            return low, ServiceLatticeSums(parts, up, h, N, vacation, extra, mass, low if shift else None, cap)

    def sums_at(N):
        if N not in store:
            store[N] = build(span[0], N)
        return store[N]

    def side(pair, t, which):  # one certified bound of P(T > t) from a pair of sums (0 lower, 1 upper)
        sums = pair[which]
        memo = sums.__dict__.setdefault("_bounds", {})  # both sides of a pair that is one sum (F9) from one _sum
        if t not in memo:
            with FLOAT64, np.errstate(under="ignore"):
                memo[t] = sums.bounds(t)
        value = memo[t][which] / sums.mass
        return max(float(value), 0.0) if which == 0 else min(float(value), 1.0)

    def prefetch(N, ts):  # (F10): every point of a call in one stream of powers per sum
        for sums in {id(s): s for s in sums_at(N)}.values():
            if hasattr(sums, "prefetch"):
                with FLOAT64, np.errstate(under="ignore"):
                    sums.prefetch(ts)

    def at(N, t):
        pair = sums_at(N)
        return side(pair, t, 0), side(pair, t, 1)

    def run(ts, digits):
        ts = [Fraction(t) for t in ts]
        at_digits[0] = None
        positive = [t for t in ts if t > 0]
        if positive and max(positive) > span[0]:
            span[0] = bracket_span(model, max(positive), atoms)
            store.clear()
            brackets.clear()  # another lattice: a search (the quantile note) must not mix the two
            final[0] = None
        tol = 1e-9 if digits is None else 10.0 ** -digits
        limit = _limits.current().lattice_levels
        N = on_lattice(span[0], limit) or fine_levels(span[0]) or min(512, limit)
        if not rounded and capped is None and limit >= _DEFAULT_LEVELS:  # the rounded laws' sums by FFT powers
            limit = max(limit, min(_limits.current().fine_lattice_levels, FFT_BRACKET_LEVELS))  # (F10), finer
        prev = result = None
        if final[0] is not None and final[0][1] == tol and final[0][0] in store:  # the lattice of an earlier call
            N = final[0][0]
            prev = [at(N // 2, t) for t in positive] if N // 2 in store else None
        elif span[0] in coarse and N <= coarse[span[0]][0].M <= limit:  # the quantile guide's (:func:`rough`):
            N = coarse[span[0]][0].M  # the refinement starts there (the same levels from there on; an earlier stop
            store[N] = coarse[span[0]]  # only where the bracket of 512 levels already met the tolerance)
        while positive:
            prefetch(N, positive)
            got = [at(N, t) for t in positive]
            est = []
            for i, (a, b) in enumerate(got):
                mid = (a + b) / 2
                if prev is not None:
                    mid = mid + (mid - (prev[i][0] + prev[i][1]) / 2) / 3
                est.append(min(max(mid, a), b))
            result = (got, est)
            # one sum for both bounds (a service on its lattice with the quadrature (F9)): no finer lattice helps
            if all(b - a <= tol * a for a, b in got) or 2 * N > limit or store[N][0] is store[N][1]:
                final[0] = (N, tol)
                break
            for key in [k for k in store if k < N]:  # only the finest two levels are reused
                del store[key]
            # the width is first order in h: where even the limit cannot meet the tolerance, go to it at once (its
            # half for the Richardson value first)
            skip = prev is None and 4 * N <= limit and any(b - a > tol * a * 4 * limit / N for a, b in got)
            prev, N = got, 2 * N
            if skip:
                N = limit // 2
                prefetch(N, positive)
                prev = [at(N, t) for t in positive]
                N = limit
        values = {}
        if positive:
            for t, (a, b), e in zip(positive, *result):
                brackets[t] = (a, b, N)
                values[t] = (a, b, e)
        out = []
        for t in ts:
            if t <= 0:  # P(T > 0) = 1 - P(T = 0) (exact: the sojourn 1)
                out.append(tail_at_zero(law.p_zero(kind), digits))
                continue
            a, b, _ = values[t]
            if digits is not None and rounded and vacation.smooth and store[N][0] is store[N][1] and b - a > tol * a:
                if on_digits is not None:  # the same quadrature at D digits
                    at_digits[0] = digits  # the note says where the value came from (:func:`how` below)
                    return on_digits(ts, digits)
                reached = math.log10(2 * b / (b - a))
                raise ParameterError(
                    f"--digits {digits}: P({kind} > {float(t):.6g}) with the vacation law {vacation.law} (no exact "
                    f"survival pieces) comes from a float64 quadrature (F9) that reaches {reached:.1f} digits "
                    f"({a:.6g} <= P <= {b:.6g}); ask for at most {int(reached)} digits or drop --digits")
            if digits is not None and fine is not None and fine_levels(span[0]) == N and b - a > tol * a:
                reached = math.log10(2 * b / (b - a))  # (F10): exact sums, their float64 FFTs certified this far
                raise ParameterError(
                    f"--digits {digits}: P({kind} > {float(t):.6g}) on the service times' own lattice of {N} levels "
                    f"is an exact sum computed in float64 by FFT convolutions, certified to {reached:.1f} digits "
                    f"({a:.12g} <= P <= {b:.12g}); ask for at most {int(reached)} digits or drop --digits")
            out.append(bracket_value(*values[t], t, kind, digits, tol, N, *(
                (f"the vacation law {vacation.law} has no exact survival pieces (" + (
                    "quadrature (F9), float64" if vacation.smooth else "bounds (F7)") + ")",) if rounded else ())))
        return out, (None if digits is None else digits)

    def bracket(t):
        t = Fraction(t)
        if t not in brackets:
            finest = max(store) if store else None
            if finest is not None and 0 < t <= span[0]:  # a quantile search: the finest lattice already built
                a, b = at(finest, t)
                brackets[t] = (a, b, finest)
            else:
                keep = at_digits[0]  # the bracket of the note: the value's precision stays the tails' own
                run([t], None)
                at_digits[0] = keep
        return brackets[t]

    def bound(t, which):
        """One side of :func:`bracket` (0 the lower bound, 1 the upper), at the finest lattice already built: the
        quantile note's root of one bound costs one sum per point, not two."""
        t = Fraction(t)
        if t in brackets:
            return brackets[t][which]
        if not store or not 0 < t <= span[0]:
            return bracket(t)[which]
        return side(sums_at(max(store)), t, which)

    def rough(t):
        """A float64 guide to P(T > t) for the quantile search (``ResponseLaw.rough_tails``): the midpoint of the
        bracket on the coarse lattice of limit / 8 levels over the span of t alone (second order in h, as the
        Richardson value's parts; the sums cost about 64 times less than on the finest lattice; kept per span, apart
        from the exact tails' lattice, which they do not move). A law on a fine lattice (F10): the sums of the law
        rounded to the nearest point of a lattice of 1/8 of its levels (ties split: second order in the step),
        whose root lies within a cell or so of the exact one (0.4 % off with the coarse brackets). Not certified:
        the search checks its root with the exact tails (``response._guided_bracket``)."""
        t = Fraction(t)
        if t <= 0:
            return None
        cover = bracket_span(model, t, atoms)
        if fine is not None and fine_levels(cover):  # (F10): the sums of the law rounded to the nearest point of
            if cover not in guides:  # a coarse lattice (second order in its step, no bracket), by the same FFT
                # powers, on 1/8 of the data's levels (at least lattice-levels, at most GUIDE_LEVELS): the search's
                # guide within a cell or so of the data's own lattice, so that its exact points share a few cells
                h = cover / max(_limits.current().lattice_levels, min(fine_levels(cover) // 8, GUIDE_LEVELS))
                parts = law.parts(FLOAT64)
                near = np.zeros(int(atoms[-1][0] / h) + 2)
                for d, w in atoms:  # a tie split between its two neighbours (rounding ties up biases the mean)
                    q = d / h
                    low = q.numerator // q.denominator
                    frac = q - low
                    if frac == Fraction(1, 2):
                        near[low] += float(w) / 2
                        near[low + 1] += float(w) / 2
                    else:
                        near[low + (frac > Fraction(1, 2))] += float(w)
                with np.errstate(under="ignore"):
                    guides[cover] = FineServiceSums(parts, near, h, vacation, extra,
                                                    FLOAT64.fsum([d.N0 for d in parts]))
            with FLOAT64, np.errstate(under="ignore"):
                lo, hi = guides[cover].bounds(t)
            return float((lo + hi) / 2 / guides[cover].mass)
        if cover not in coarse:
            limit = _limits.current().lattice_levels
            coarse[cover] = build(cover, on_lattice(cover, limit) or max(limit // 8, 64))
        return (side(coarse[cover], t, 0) + side(coarse[cover], t, 1)) / 2

    if rounded and vacation.smooth:  # (F9): the note says how the bounds were made
        alone = atoms is not None and len(atoms) == 1  # a constant service: the quadrature's error alone
        bounded = vacation.quadrature().bound is not None  # the law bounds S off the real axis: a remainder bound
        quad = ("the vacation's survival function integrated by Gauss-Legendre quadrature in the age, the error " + (
            "bounded on Bernstein ellipses (24 nodes per cell)" if bounded else
            "estimated from 12 and 24 nodes per cell"))

        def how(levels):  # a service on the lattice (one sum for both bounds): the quadrature's error alone
            if alone or (levels in store and store[levels][0] is store[levels][1]):
                return f"bounds: {quad}" + ("" if alone else f", the service times on a lattice of {levels} levels") + (
                    "; the value is the quadrature's" if at_digits[0] is None else
                    f"; these are the float64 quadrature's, the value is the same quadrature's at {at_digits[0]} "
                    "digits")
            return (f"bounds: the service times rounded down and up to a lattice of {levels} levels (certified) and "
                    f"{quad}; the value is an estimate inside them")

        bracket.how = how
        bracket.digits = on_digits is not None  # --digits D: the quadrature at D digits, whatever the bracket's width
        bracket.bounds = f"lower and upper bounds: the quadrature's error {'bound' if bounded else 'estimate'}" + (
            "" if alone or step is not None else " and the services' rounding")
    elif fine is not None:  # (F10): on the data's own lattice the bounds are the FFT's certified rounding

        def how(levels):
            if fine_levels(span[0]) == levels:
                return (f"exact sums over the service times' own lattice of {levels} levels, the services ahead "
                        "convolved by FFT; the bounds are their certified rounding error")
            return (f"certified bounds: the service times rounded down and up to a lattice of {levels} levels; the "
                    "value is an estimate inside them")

        bracket.how = how
    elif rounded:  # the note names what the bounds round (:func:`~qderive.numeric.response._bracket_notes`)
        bracket.rounded = ("the vacation's survival function" if atoms is not None and len(atoms) == 1 else
                           "the service times and the vacation's survival function")
    return run, bracket, rough, bound


# --------------------------------------------------------------------------------------
# A vacation with a survival function and no exact pieces (gamma, lognormal, uniform): certified brackets (F7)
# --------------------------------------------------------------------------------------

#: the steps (F7) beyond the vacation's lattice c_v = N_v h: widths STEP_FIRST h growing by STEP_GROWTH a step up to
#: STEP_RATIO times their start, then geometric (:func:`_step_grid`)
STEP_FIRST = 4
STEP_GROWTH = 17 / 16
STEP_RATIO = 1 / 64
#: the columns' u of the steps taken to multiples of c / STEP_GROUPS (:class:`~.kernels.lattice_finite.StepPieces`)
STEP_GROUPS = 128
#: the vacation's lattice is extended beyond the span (doubled at most STEP_EXTEND times) until P(V > c_v) <= STEP_START
STEP_EXTEND = 2
STEP_START = 2.0**-10
#: the steps stop where lambda c exceeds this (the weights R_K(y) of (F3) hold e^{lambda y} in float64)
STEP_REACH = 500.0
#: a kinked vacation takes the quadrature (F9) when its cells split at no more than this many points per column
#: level, sum_k ceil(k / g) (:attr:`VacationRounding.smooth`)
KINK_BREAKS = 1024


def _step_grid(cv: float, h: float, reach: float):
    """The points c_0 = ``cv`` < c_1 < ... of the steps (F7) (where the quadrature (F9) does not apply:
    :attr:`VacationRounding.smooth`): widths STEP_FIRST h, growing by STEP_GROWTH a step, at
    most STEP_RATIO c_i (then geometric), up to ``reach`` (lambda c <= STEP_REACH) or 2^14 steps. Fine where the
    density beyond the lattice is largest (its part of the bracket, sum_i (c_{i+1} - c_i)(s_i - s_{i+1}), stays
    near that of the lattice), coarse where little mass is left."""
    out, width = [cv], STEP_FIRST * h
    while out[-1] < reach and len(out) <= 1 << 14:
        width = min(width, STEP_RATIO * out[-1])
        out.append(out[-1] + width)
        width *= STEP_GROWTH
    return np.array(out)


class VacationBounds(enum.Enum):
    """How :class:`VacationRounding` takes the vacation's survival function in the sums; tests force one to compare."""

    #: the quadrature (F9) for a law analytic on (0, oo) (gamma, lognormal) and for a kinked one (uniform) with a
    #: service on a lattice; the steps (F7) for a kinked one with a service off every lattice
    AUTO = "auto"
    #: the steps (F7) on the services' lattice: certified, first order in h
    STEPS = "steps"


@dataclass(frozen=True)
class VacationRounding:
    """A vacation law with a float64 ``survival_many`` and a ``stop_loss`` but no exact survival pieces (gamma of
    any shape, lognormal, uniform), in the finite room's lattice sums of :mod:`qderive.numeric.kernels.lattice_finite`
    (:meth:`pieces`): a law analytic on (0, oo) (:attr:`smooth`: gamma, lognormal) by the quadrature (F9) of
    :mod:`qderive.numeric.kernels.vacation_quadrature` (its residual weights (F2) to about 1e-13, with an error
    estimate; an error bound where the law gives ``survival_bound``), and a law analytic between kinks (uniform) the
    same way when the service is on a lattice g (:attr:`lattice`; the cells split at the kinks' points k - u_j); a
    kinked one with a service off every lattice (or ``method`` :attr:`VacationBounds.STEPS`) bounded from below and
    above (F7).

    **(F7) Why the bounds are certified, although the queue changes with the vacation law.** The bounds do not
    compare two queues: they bound one term of the exact identity (F1)/(F5) of the *true* model. In (F1) the
    vacation law enters in three places: the embedded law q (and so Y, V = q_0, t_I), the rows w_K and the total
    N(W > -1), all computed from the true law's count sequences (item 1 of the module docstring; the rows
    w_K = V L^K depend on the batch law only), and the residual weights of the vacation periods,
    omega_K(u) = int_0^oo Pois(K; lambda x) S(x + u) dx (F2), S(x) = P(V > x), which are linear in S with
    positive weights. So any S_down <= S <= S_up pointwise gives N_down(W > t) <= N(W > t) <= N_up(W > t) with
    the same exact normaliser: no stochastic monotonicity of the finite queue in the vacation law is used (it
    would not hold: a longer vacation also changes the state seen by arrivals). Here, with the services' lattice h,
    c_v = N_v h (the lattice extended from the span c until P(V > c_v) <= 2^-10, at most 4 c) and the steps
    c_v = c_0 < c_1 < ... < c_L (widths from 4 h growing by 1/16 a step up to c_i / 64, :func:`_step_grid`, until
    P(V > c_L) <= 1e-16 or lambda c_L > 500), s_i = S(c_i):

        S_down(y) = P(V >= (floor(y / h) + 1) h) (y < c_v),  s_{i+1} on [c_i, c_{i+1}),  0 beyond c_L,
        S_up(y)   = P(V > floor(y / h) h)        (y < c_v),  s_i     on [c_i, c_{i+1}),  0 beyond c_L,

    each the survival function of a lattice law on [0, c_v] (a :class:`~qderive.numeric.kernels.lattice_finite.
    LatticePiece`, whose weights share the grid of the columns) plus steps w_i 1{y < c_{i+1}}
    (:class:`~qderive.numeric.kernels.lattice_finite.StepPieces`; their columns' u taken to multiples of c_v / 128,
    down for the upper bound and up for the lower one: omega_K(u) decreases in u). The upper bound misses S(y) for
    y >= c_L: per vacation period at most E (V - c_L)^+ |w_0|_1 max_n C[n, 0] (the argument of (F6)), added to it.
    The bracket's width has three parts: the services' rounding (none for a constant service on the lattice), the
    vacation's lattice (first order in h) and the steps (first order in their widths; the tail beyond t is where
    P(W > t) comes from, so they matter: measured, lognormal vacation of mean 0.06 and scv 2, r = 129, P(W > 0.5) at
    8192 levels: 0.04 % wide with the lattice extended to 2 c, 0.4 % without; at 2048 levels geometric steps of
    ratio 1 + 1/32 instead of 1 + 1/256 widened it threefold).
    float64 differences of ``survival_many`` give the pmfs and the steps (a continuous law: P(V >= x) = S(x)), as
    for a uniform or lognormal service (:func:`capped_rounding`)."""

    law: object
    method: VacationBounds = VacationBounds.AUTO
    #: the lattice step g of a service on a lattice (a constant, a sample recorded to 1 ms; None: off any lattice):
    #: a kinked law takes the quadrature (F9) only on it (:attr:`smooth`)
    lattice: Fraction | None = None
    #: the quadrature piece (F9) of a smooth law, kept for every lattice (its meshes per batch rate and rows)
    _kept: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def smooth(self) -> bool:
        """Whether the quadrature (F9) of :mod:`qderive.numeric.kernels.vacation_quadrature` replaces the steps
        (F7): a survival function analytic on (0, oo) (gamma, lognormal), or analytic between known kinks k
        (``survival_kinks``: a uniform law's ends) with a service on a lattice g, the cells split at every k - u_j
        (u_j = t - j g the columns' offsets), at most :data:`KINK_BREAKS` points sum_k ceil(k / g). A kinked law
        with a service off every lattice (a uniform or lognormal service rounded to N levels: the points would be
        k / h for the lattice h of up to 2^13 levels) keeps the steps (F7): their bracket is then of the size of the
        services' own rounding."""
        if self.method is not VacationBounds.AUTO:
            return False
        kinks = self.law.survival_kinks()
        if not kinks:
            return True
        g = self.lattice
        return g is not None and g > 0 and sum(math.ceil(Fraction(k) / g) for k in kinks) <= KINK_BREAKS

    def quadrature(self):
        """The :class:`~qderive.numeric.kernels.vacation_quadrature.QuadraturePiece` of the law (F9), split at its
        kinks."""
        if "piece" not in self._kept:
            law = self.law
            one = np.ones(1)
            bound = law.survival_bound if law.survival_bound(one, one, one, one) is not None else None
            self._kept["piece"] = VQ.QuadraturePiece(lambda xs: law.survival_many(np.asarray(xs, dtype=float)),
                                                     float(Fraction(law.moment(1))),
                                                     [float(Fraction(k)) for k in law.survival_kinks()], bound)
        return self._kept["piece"]

    def quadrature_at(self, ctx):
        """The twin of :meth:`quadrature` in the mpmath context ``ctx`` (D digits): the law's ``survival_many`` at
        the context's digits, E V and the kinks exact; the float64 meshes shared."""
        law = self.law

        def survival(xs):
            return np.array([+v for v in law.survival_many(list(xs), digits=ctx.dps)] + [None], dtype=object)[:-1]

        return self.quadrature().at(ctx, survival, ctx.num(Fraction(law.moment(1))),
                                    [ctx.num(Fraction(k)) for k in law.survival_kinks()])

    @staticmethod
    def covers(law) -> bool:
        """Whether ``law`` is a vacation these bounds take: no exact survival pieces, a float64 survival function
        and a stop-loss."""
        if law is None or exact_vacation_pieces(law, "")[0] is not None:
            return False
        with mpmath.workdps(17):
            if law.survival(mpmath.mpf(1)) is None or law.stop_loss(mpmath.mpf(1)) is None:
                return False
        return law.survival_many(np.array([0.5])) is not None

    def pieces(self, h: Fraction, N: int, lam: float):
        """((down pieces), (up pieces), E (V - c_L)^+) of (F7) in float64 for the lattice h with N levels over the
        services' span c = N h: each a tuple (LatticePiece, StepPieces) (no steps where P(V > c_v) = 0); a smooth law
        (:attr:`smooth`): its quadrature piece (F9) on both sides, E (V - c_L)^+ = 0 (the quadrature bounds its
        rest)."""
        if self.smooth:
            piece = (self.quadrature(),)
            return piece, piece, 0.0
        law, hf = self.law, float(h)
        Nv = N
        for _ in range(STEP_EXTEND):  # the lattice extended (doubled) while the tail beyond it is heavy
            if float(law.survival_many(np.array([Nv * hf]))[0]) <= STEP_START:
                break
            Nv *= 2
        S = np.clip(np.asarray(law.survival_many(np.arange(Nv + 1) * hf), dtype=float), 0.0, 1.0)
        S = np.minimum.accumulate(S)
        cv = Fraction(Nv) * h
        cs = _step_grid(float(cv), hf, STEP_REACH / lam)
        ss = np.minimum(np.clip(np.asarray(law.survival_many(cs), dtype=float), 0.0, 1.0), S[Nv])
        ss = np.minimum.accumulate(ss)
        ss[0] = S[Nv]
        last = np.flatnonzero(ss <= 1e-16)
        L = int(last[0]) if len(last) else len(cs) - 1  # the steps c_1..c_L
        cs, ss = cs[: L + 1], ss[: L + 1]
        ext = np.concatenate([ss, [0.0]])
        w_down = ext[1: L + 1] - ext[2: L + 2]  # at c_{i+1}: s_{i+1} - s_{i+2} (s_{L+1} = 0)
        w_up = ss[:L] - np.concatenate([ss[1:L], [0.0]]) if L else np.zeros(0)
        down, up = np.zeros(Nv + 1), np.zeros(Nv + 1)
        down[:Nv] = S[:Nv] - S[1:]  # P(k h <= V < (k + 1) h)
        up[1:] = S[:Nv] - S[1:]  # P((k - 1) h < V <= k h)
        down[Nv] = S[Nv] - (ss[1] if L else 0.0)  # P(c_v <= V < c_1): the steps hold P(V >= c_1)
        up[Nv] = up[Nv] + (0.0 if L else S[Nv])  # no steps: everything above c_v - h at c_v
        with mpmath.workdps(20):
            end = mpmath.mpf(float(cs[-1])) if L else mpmath.mpf(cv.numerator) / cv.denominator
            cap = float(law.stop_loss(end))
        d = cs[1:]
        hc = FLOAT64.num(h)
        spacing = float(cv) / STEP_GROUPS

        def side(b, w, upper):
            b = np.maximum(b, 0.0)
            keep = np.flatnonzero(w > 0)
            steps = (LF.StepPieces(w[keep], d[keep], spacing, upper),) if len(keep) else ()
            return (LF.LatticePiece(b, hc),) + steps

        return side(down, np.maximum(w_down, 0.0), False), side(up, np.maximum(w_up, 0.0), True), cap


class RoundedVacationSums(ServiceLatticeSums):
    """:class:`ServiceLatticeSums` whose vacation periods take the pieces of :meth:`VacationRounding.pieces` (already
    float64: no conversion) and whose upper term beyond the caps holds the service's E (B - c)^+ (F6) for the
    service periods and the vacation's E (V - c_L)^+ (F7) for the vacation periods, each times its periods' |w_0|_1
    and max_n C[n, 0]."""

    def __init__(self, parts, b, h, M, vacation, extra, mass=None, shifted=None, cap=0.0, vacation_cap=0.0):  # noqa: D107
        self._vacation_pieces = vacation
        super().__init__(parts, b, h, M, vacation, extra, mass, shifted, cap)
        scale = float(np.max(self.C[: self.r, 0], initial=0))
        self.cap = scale * sum(float(np.sum(W[0])) * (vacation_cap if pieces is vacation else cap)
                               for W, _, pieces, _, _ in self.periods if W.shape[0])

    def _periods(self, parts, service, vacation):
        LF.ConstantSums._periods(self, parts, service, vacation)


def _rounded_pair(law: "FiniteWait", vacation: VacationRounding, down, up, h, N, extra, cap):
    """(lower sums, upper sums) of (F5)-(F7) for the services rounded down / up (``down``, ``up``; ``cap`` E (B - c)^+
    of a capped service) and the vacation bounded by :meth:`VacationRounding.pieces` on the same lattice h, over the
    true law's state (the moments' data: the count sequences only as far as the rows reach, item 5)."""
    parts = law._moment_parts(FLOAT64, 1)
    mass = FLOAT64.fsum([d.N0 for d in parts])
    vdown, vup, vcap = vacation.pieces(h, N, float(parts[0].lam))
    with np.errstate(under="ignore"):
        low = RoundedVacationSums(parts, down, h, N, vdown, extra, mass)
        if vdown is vup and not cap and np.array_equal(down, up):  # (F9) and a service on the lattice: one sum
            return low, low
        shift = up[0] == 0 and down[-1] == 0 and len(up) == len(down) and np.array_equal(up[1:], down[:-1])
        return low, RoundedVacationSums(parts, up, h, N, vup, extra, mass, low if shift else None, cap, vcap)


def _quadrature_digits(law: "FiniteWait", vacation: VacationRounding, atoms, extra):
    """The ``tails(ts, digits)`` of the quadrature (F9) at D digits (:meth:`VacationRounding.quadrature_at`; kernel
    :mod:`~qderive.numeric.kernels.vacation_quadrature`, *At D digits*) for a service on an exact lattice
    (:func:`exact_lattice`: a constant, a sample of few levels), under the policy of :func:`lattice_tails` (the
    sums' error bound, the quadrature's included, must meet 10^-D); None for any other service (its rounding has
    no D-digit bracket)."""
    exact = exact_lattice(atoms, law.model.capacity, extra)
    if exact is None:
        return None
    b, g, M = exact
    kept: dict = {}

    def sums_for(ctx):
        if ctx.dps not in kept:
            with ctx:
                parts = law._moment_parts(ctx, 1)
                mass = ctx.fsum([d.N0 for d in parts])
                kept[ctx.dps] = RoundedVacationSums(parts, b, g, M, (vacation.quadrature_at(ctx),), extra, mass)
        return kept[ctx.dps]

    inner = _sum_tails(sums_for, 0, f"with the vacation law {vacation.law} by quadrature (F9)",
                       "the quadrature's cells")

    def tails(ts, digits):
        if digits > QUADRATURE_DIGITS:  # the budget, before any work at D digits
            raise ParameterError(
                f"--digits {digits}: the vacation law {vacation.law} (no exact survival pieces) is integrated by "
                f"quadrature (F9), which at {digits} digits needs {digits_nodes(digits)} nodes per cell and more "
                f"than the CPU budget (measured: about 2 to 30 s at 20 digits, r = 129); ask for at most "
                f"{QUADRATURE_DIGITS} digits")
        return inner(ts, digits)

    return tails


#: the working digits up to which the quadrature (F9) runs at D digits (:func:`_quadrature_digits`): measured CPU in
#: docs/performance.md
QUADRATURE_DIGITS = 60


def digits_nodes(dps):
    """The nodes per cell of the quadrature (F9) at ``dps`` working digits (the higher of its two orders)."""
    return VQ.digits_orders(dps)[1]


def rounded_vacation_setup(service, vacation):
    """The setup of :func:`service_lattice_tails` (service law, :class:`VacationRounding`, the service's rounded
    pmfs, its atoms, the capped law or None) when the vacation is one :class:`VacationRounding` covers and the
    service is one the lattice sums (F5) take (a constant, an empirical sample, a uniform law, a lognormal capped at
    the span (F6)); else None."""
    if not VacationRounding.covers(vacation):
        return None
    got, _ = service_lattice_setup(service, None)
    if got is None:
        return None
    from .vacation_wait import fraction_gcd

    atoms = got[3]
    lattice = fraction_gcd([d for d, _ in atoms if d > 0]) if atoms else None
    return (got[0], VacationRounding(vacation, lattice=lattice), got[2], got[3], got[4])
