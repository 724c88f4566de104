"""The moments of the wait in M[X]/G/1 with vacations, in structure: W = W_b + J + R (independent parts).

The decomposition of the wait's transform W(s) = W_b(s) J(s) V_r(s) (Fuhrmann and Cooper 1985; for batches
Chaudhry and Templeton 1983, Takagi 1991 vol. 1 sec. 2.3; ``docs/theory/chapter2.md`` section 1, steps (W), (MS),
(MJ), (MB), (N8), (W3) of the derivation ``vacation-infinite``) makes every moment a short recursion in the
model's moments b_n (service), f_n (vacation), the factorial moments l_[m] of the batch, lambda and c_0:

* (MS) the work S_b of a batch (Faa di Bruno): E S_b^n = sum_{m=1}^{n} l_[m] B_{n,m}(b_1, ..., b_{n-m+1});
* (MJ) the service J of the own batch ahead: E J^n = sum_{m=1}^{n} l_[m+1] B_{n,m}(b_1, ...) / ((m + 1) l_1);
* (MB) the batch-level wait W_b (Takacs's recursion, M/G/1 with service S_b):
  E W_b^n = lambda / (1 - rho_bar) sum_{i=1}^{n} C(n, i) E S_b^{i+1} / (i + 1) E W_b^{n-i}, E W_b^0 = 1;
* the residual R of the non-serving period: E R^n = w f_{n+1} / ((n + 1) f_1), w = 1 (multiple vacations),
  lambda f_1 / (lambda f_1 + c_0) (single), 0 (none: R = 0);
* (N8), (W3) and the sojourn T = W + B: binomial convolutions E (X + Y)^n = sum_i C(n, i) E X^i E Y^{n-i}.

Each function is one step written once over plain arithmetic (``+``, ``*``, ``/`` of the arguments): with
numbers (Fraction exactly, mpf, float) it is the engine's evaluation (:func:`wait_moments`: no symbolic series,
microseconds for every order); with SymPy symbols for the earlier results it is the paper form the derivation
displays and proves equal to the moment of the transform (``derivations.vacation_infinite``).
"""

from math import comb


def partial_bell(n: int, m: int, x) -> object:
    """The partial Bell polynomial B_{n,m}(x_1, ..., x_{n-m+1}) (``x[i - 1]`` = x_i) by the recurrence
    B_{n,m} = sum_{i=1}^{n-m+1} C(n-1, i-1) x_i B_{n-i,m-1}, B_{0,0} = 1, B_{n,0} = B_{0,m} = 0 (n, m >= 1)."""
    table = {(0, 0): 1}

    def bell(a, c):
        if (a, c) not in table:
            table[a, c] = 0 if a == 0 or c == 0 else sum(
                (comb(a - 1, i - 1) * x[i - 1] * bell(a - i, c - 1) for i in range(1, a - c + 2)), 0)
        return table[a, c]

    return bell(n, m)


def work_moment(n: int, l_fact, bell):
    """(MS) E S_b^n = sum_{m=1}^{n} l_[m] B_{n,m}(b_1, ..., b_{n-m+1}): ``l_fact(m)`` the batch's factorial moment
    E X (X - 1) ... (X - m + 1), ``bell(n, m)`` the partial Bell polynomial of the service moments."""
    return sum((l_fact(m) * bell(n, m) for m in range(1, n + 1)), 0)


def own_moment(n: int, l_fact, bell, l1):
    """(MJ) E J^n = (1/l_1) sum_{m=1}^{n} l_[m+1] B_{n,m}(b_1, ...)/(m + 1): the number K of the own batch ahead has
    P(K = i) = P(X > i)/l_1, whose factorial moments are l_[m+1]/((m + 1) l_1)."""
    return sum((l_fact(m + 1) * bell(n, m) / ((m + 1) * l1) for m in range(1, n + 1)), 0)


def takacs_moment(n: int, lam, gap, work, earlier):
    """(MB) E W_b^n = lambda/(1 - rho_bar) sum_{i=1}^{n} C(n, i) E S_b^{i+1}/(i + 1) E W_b^{n-i} (Takacs's recursion;
    Takagi 1991, vol. 1, sec. 2.3): ``gap`` = 1 - rho_bar, ``work(j)`` = E S_b^j, ``earlier[j]`` = E W_b^j
    (``earlier[0]`` = 1)."""
    return sum((lam * comb(n, i) * work(i + 1) * earlier[n - i] / (i + 1) / gap for i in range(1, n + 1)), 0)


def residual_moment(n: int, f, f1):
    """E R^n = f_{n+1}/((n + 1) f_1) of the residual vacation R (the equilibrium law of the vacation), ``f(j)`` =
    f_j."""
    return f(n + 1) / ((n + 1) * f1)


def convolution(n: int, x, y):
    """E (X + Y)^n = sum_{i=0}^{n} C(n, i) E X^i E Y^{n-i} for independent X, Y (``x[i]`` = E X^i, x[0] = 1)."""
    return sum((comb(n, i) * x[i] * y[n - i] for i in range(n + 1)), 0)


def wait_moments(k: int, lam, b, f, l_fact, weight, sojourn: bool = False) -> list:
    """[E W, ..., E W^k] (``sojourn``: of T = W + B) from the numbers lambda, ``b`` = [b_1, ..., b_{k+1}],
    ``f`` = [f_1, ..., f_{k+1}] (unused when ``weight`` is 0), ``l_fact`` = [l_[1], ..., l_[k+1]] and the weight
    ``weight`` of the residual (module docstring: 1, lambda f_1/(lambda f_1 + c_0) or 0), exactly in the
    arithmetic of the arguments (Fractions give Fractions). O(k^3) operations."""
    bells = {}

    def bell(n, m):
        if (n, m) not in bells:
            bells[n, m] = partial_bell(n, m, b)
        return bells[n, m]

    def fact(m):
        return l_fact[m - 1]

    l1 = l_fact[0]
    gap = 1 - lam * l1 * b[0]
    work = [None] + [work_moment(n, fact, bell) for n in range(1, k + 2)]
    batch = [1]
    for n in range(1, k + 1):
        batch.append(takacs_moment(n, lam, gap, work.__getitem__, batch))
    own = [1] + [own_moment(n, fact, bell, l1) for n in range(1, k + 1)]
    none = [1] + [convolution(n, batch, own) for n in range(1, k + 1)]
    if weight == 0:
        wait = none
    else:
        residual = [1] + [weight * residual_moment(n, lambda j: f[j - 1], f[0]) for n in range(1, k + 1)]
        wait = [1] + [convolution(n, none, residual) for n in range(1, k + 1)]
    if sojourn:
        service = [1, *b]
        wait = [1] + [convolution(n, wait, service) for n in range(1, k + 1)]
    return wait[1:]
