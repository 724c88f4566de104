"""M|M|1 with bi-level hysteretic control (spec/other-models.md B) against a CTMC built here.

The oracle is the CTMC written in this file from the model's transition list (its own state
enumeration and rates), solved by GTH at 60 digits (``numeric.chains.stationary_gth``), with
first-passage times by mpmath LU on its jump chain. It shares no code with the closed forms
(``derivations.mm1_hysteretic``) or the positive recurrences (``numeric.mm1_hysteretic``).
Tolerance: closed forms are exact rationals and the oracle's GTH keeps ~58 digits on these
well-conditioned chains, so agreement to 1e-45 (stricter than the issue's 40 digits); float64
to 1e-12 relative (positive recurrences: error ~ R eps).
"""

from __future__ import annotations

import json
from fractions import Fraction
from functools import lru_cache

import mpmath
import pytest
import sympy as sp

from qderive.derivations import mm1_hysteretic as dm
from qderive.derivations.cli import main
from qderive.numeric import mm1_hysteretic as nm
from qderive.numeric.backend import FLOAT64, mp_backend
from qderive.numeric.chains import stationary_gth
from qderive.symbolic._exact import ParameterError

POINTS = [  # (lambda_0, lambda_1, mu, L, H, R)
    (Fraction(6, 5), Fraction(3, 5), 1, 3, 6, 9),  # the example
    (Fraction(1), Fraction(1, 2), 1, 2, 5, 8),  # rho_0 = 1
    (Fraction(3, 2), Fraction(1), 1, 4, 7, 12),  # rho_1 = 1
    (Fraction(1, 2), Fraction(1, 5), 1, 5, 10, 14),  # light load
    (Fraction(5, 2), Fraction(7, 4), Fraction(3, 2), 1, 2, 3),  # smallest thresholds
]
DPS = 60


@lru_cache(maxsize=None)
def oracle(point):
    lam0, lam1, mu, L, H, R = point
    lam = {0: sp.Rational(lam0), 1: sp.Rational(lam1)}
    mu = sp.Rational(mu)
    # transitions straight from the model description
    trans = {}
    for j in range(H):
        trans[(j, 0)] = [((j + 1, 0) if j < H - 1 else (H, 1), lam[0])] + ([((j - 1, 0), mu)] if j >= 1 else [])
    for j in range(L, R):
        trans[(j, 1)] = [((j + 1, 1) if j < R - 1 else (R, 2), lam[1]), ((j - 1, 1) if j > L else (L - 1, 0), mu)]
    for j in range(H + 1, R + 1):
        trans[(j, 2)] = [((j - 1, 2) if j > H + 1 else (H, 1), mu)]
    states = sorted(trans, key=lambda s: (s[1], s[0]))
    idx = {s: k for k, s in enumerate(states)}
    n = len(states)
    Q = [[sp.Integer(0)] * n for _ in range(n)]
    for s, outs in trans.items():
        for t, r in outs:
            Q[idx[s]][idx[t]] += r
    with mpmath.workdps(DPS):
        pi = stationary_gth(Q, mp_backend(DPS))
        out = [mpmath.mpf(sum(row).p) / sum(row).q for row in Q]
        J = [[mpmath.mpf(r.p) / r.q / out[k] for r in row] for k, row in enumerate(Q)]

        def hit(start, inside):
            rest = [k for k, s in enumerate(states) if inside(s)]
            M = mpmath.matrix(len(rest), len(rest))
            for a, i in enumerate(rest):
                for b, k in enumerate(rest):
                    M[a, b] = (1 if a == b else 0) - J[i][k]
            h = mpmath.lu_solve(M, mpmath.matrix([1 / out[i] for i in rest]))
            return h[rest.index(idx[start])]

        t0 = hit((L - 1, 0), lambda s: s[1] == 0)
        t12 = hit((H, 1), lambda s: s[1] != 0)
        p = [mpmath.fsum(pi[k] for k, s in enumerate(states) if s[1] == x) for x in range(3)]
        muf = mpmath.mpf(mu.p) / mu.q
        l0 = mpmath.mpf(lam[0].p) / lam[0].q
        thr = muf * (1 - pi[idx[(0, 0)]])
        return {
            "p_normal": p[0], "p_overload": p[1], "p_discard": p[2],
            "mean_normal_time": t0, "mean_return_time": t12, "mean_cycle_time": t0 + t12,
            "renewal": 1 / (muf * pi[idx[(L, 1)]]),
            "throughput": thr, "loss_probability": 1 - thr / l0,
            "pi": dict(zip(states, pi)),
        }


def rel(a, b):
    """|a - b| / |b| computed exactly (8000 bits): mpf(x) at the default 53 bits would round the inputs.

    Strings (JSON/CSV/guide values) are converted at that precision too, so pass them unconverted.
    """
    with mpmath.workprec(8000):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return abs(a - b) / abs(b)


@pytest.mark.parametrize("point", POINTS)
def test_closed_forms_equal_ctmc(point):
    ref = oracle(point)
    assert rel(ref["mean_cycle_time"], ref["renewal"]) < mpmath.mpf(10) ** -50  # renewal identity on the CTMC
    model = nm.MM1HystereticModel(*point)
    cf = dm.closed_forms()
    with mpmath.workdps(DPS):
        for key in ("p_normal", "p_overload", "p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time"):
            value = dm.substitute(cf[key], model)
            assert value.is_Rational, key
            assert rel(mpmath.mpf(value.p) / value.q, ref[key]) < mpmath.mpf(10) ** -45, key


@pytest.mark.parametrize("point", POINTS)
def test_numeric_recurrences_equal_ctmc(point):
    ref = oracle(point)
    model = nm.MM1HystereticModel(*point)
    with mp_backend(55) as bk:
        got = nm.measures(model, bk)
    for key in nm.MEASURE_KEYS:
        assert rel(got[key], ref[key]) < mpmath.mpf(10) ** -45, key
    f64 = nm.measures(model, FLOAT64)
    for key in nm.MEASURE_KEYS:
        assert rel(f64[key], ref[key]) < 1e-12, key


@pytest.mark.parametrize("point", POINTS[:3])
def test_stationary_law_closed_form_equals_ctmc(point):
    """Every pi(j, s) from the segment closed forms (divided by M) = the CTMC's GTH solution."""
    ref = oracle(point)["pi"]
    model = nm.MM1HystereticModel(*point)
    cf = dm.closed_forms()
    L, H, R = model.L, model.H, model.R
    total = dm.substitute(cf["M0"] + cf["M1"] + cf["M2"], model)
    ranges = {"pi_normal_low": (0, range(0, L)), "pi_normal_high": (0, range(L - 1, H)),
              "pi_overload_low": (1, range(L, H + 1)), "pi_overload_high": (1, range(H, R)),
              "pi_discard": (2, range(H + 1, R + 1))}
    seen = set()
    with mpmath.workdps(DPS):
        for key, (s, js) in ranges.items():
            for jj in js:
                value = dm.substitute(cf[key].subs(dm.j, jj), model) / total
                assert rel(mpmath.mpf(value.p) / value.q, ref[(jj, s)]) < mpmath.mpf(10) ** -45, (key, jj)
                seen.add((jj, s))
    assert seen == set(ref)


def test_closed_forms_are_symbolic_in_rates_and_thresholds():
    cf = dm.closed_forms()
    names = {str(s) for s in cf["mean_normal_time"].free_symbols | cf["mean_return_time"].free_symbols}
    assert names == {"lambda_0", "lambda_1", "mu", "L", "H", "R"}
    assert not cf["M0"].has(sp.Sum) and not cf["M1"].has(sp.Sum)
    # the lambda_0 = mu branch is the limit of the generic branch (at L = 3, H = 7)
    generic = cf["M0"].args[1].expr.subs({dm.L: 3, dm.H: 7})
    at_one = cf["M0"].args[0].expr.subs({dm.L: 3, dm.H: 7})
    assert sp.simplify(sp.limit(generic, dm.lam0, dm.mu) - at_one) == 0


def test_large_thresholds_float64_stays_accurate():
    """R = 400 at rho_0 = 0.5: pi spans ~1e-120; the positive recurrences keep every digit."""
    model = nm.MM1HystereticModel(Fraction(1, 2), Fraction(1, 4), 1, 150, 300, 400)
    with mp_backend(40) as bk:
        ref = nm.measures(model, bk)
        cf = dm.closed_forms()
        exact = dm.substitute(cf["mean_normal_time"], model)
        assert rel(ref["mean_normal_time"], mpmath.mpf(exact.p) / exact.q) < mpmath.mpf(10) ** -35
    f64 = nm.measures(model, FLOAT64)
    for key in nm.MEASURE_KEYS:
        assert rel(f64[key], ref[key]) < 1e-12, key


def test_model_validation():
    with pytest.raises(ParameterError, match="L < H < R, got L=6, H=3"):
        nm.MM1HystereticModel(2, 1, 1, 6, 3, 9)
    with pytest.raises(ParameterError, match="lambda_1 < lambda_0"):
        nm.MM1HystereticModel(1, 2, 1, 3, 6, 9)
    with pytest.raises(ParameterError, match="must be > 0"):
        nm.MM1HystereticModel(1, 0, 1, 3, 6, 9)
    with pytest.raises(ParameterError, match="is a float"):
        nm.MM1HystereticModel(1.2, 0.6, 1, 3, 6, 9)


def test_cli_eval_json_and_digits(capsys):
    args = ["eval", "mm1-hysteretic", "--rates", "1.2,0.6", "--service-rate", "1", "--thresholds", "3,6,9"]
    ref = oracle(POINTS[0])
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in nm.MEASURE_KEYS:
        assert rel(out["measures"][key], ref[key]) < 1e-12, key
    assert main(args + ["--digits", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in nm.MEASURE_KEYS:
        assert rel(out["measures"][key], ref[key]) < mpmath.mpf(10) ** -48, key


@pytest.mark.parametrize("extra, message", [
    (["--rates", "1.2,0.6", "--thresholds", "6,3,9"], "L < H < R"),
    (["--rates", "0.6,1.2", "--thresholds", "3,6,9"], "lambda_1 < lambda_0"),
    (["--rates", "1.2", "--thresholds", "3,6,9"], "expected 2 values"),
])
def test_cli_bad_input_exits_2(capsys, extra, message):
    assert main(["eval", "mm1-hysteretic", "--service-rate", "1"] + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_derivation_verifies_at_40_digits():
    d = dm.build_derivation(dm.CHECK_POINTS[:2])
    results = d.verify(40)
    assert all(r.passed for r in results), [r for r in results if not r.passed]
    assert all(r.digits >= 40 for r in results)
    assert d.step("(B6)").relation.has(sp.Sum)


def test_exported_tex_compiles(tmp_path):
    import shutil
    import subprocess

    assert shutil.which("pdflatex"), "pdflatex is required (Debian: texlive-latex-base texlive-latex-extra)"
    tex = tmp_path / "mm1.tex"
    assert main(["derive", "mm1-hysteretic", "--latex", str(tex)]) == 0
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
