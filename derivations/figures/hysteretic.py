"""Figure 3 of Sopin 2013 (chapter 3): E tau_12 and E tau versus rho_0, batch and single arrivals.

Setting of the thesis: L = 73, H = 84, R = 100, deterministic service of 5 ms, lambda_1 =
lambda_0 / 2, batches geometric with l_i = 0.5^i (mean 2) or single arrivals. The thesis
plots rho_0 in [1, 2] only (it says (21) is unusable below 1); the points below 1 are added
here, computed with mpmath at 30 digits (the normal-mode sojourn grows to ~1e32 s at
rho_0 = 0.6, single arrivals). The CSV also gives kappa_inf(I - P_0) of (21)
(:func:`qderive.numeric.engines.hysteretic.diagnostics`).

``qderive figure fig3 --out docs/figures/fig3.png --csv docs/figures/fig3.csv``
"""

from __future__ import annotations

import csv
from fractions import Fraction

__all__ = ["FIGURES", "figure3", "figure3_data", "thesis_claims", "FIG3_THRESHOLDS", "LOADS_THESIS", "LOADS_BELOW_1",
           "COLUMNS"]

FIG3_THRESHOLDS = (73, 84, 100)
#: the thesis's range: rho_0 = 1.00, 1.05, ..., 2.00
LOADS_THESIS = tuple(Fraction(100 + 5 * i, 100) for i in range(21))
#: the points the thesis could not compute
LOADS_BELOW_1 = (Fraction(6, 10), Fraction(7, 10), Fraction(8, 10), Fraction(9, 10), Fraction(95, 100))
BELOW_1_DIGITS = 30
COLUMNS = ("arrivals", "rho0", "precision", "p_normal", "p_overload", "p_discard", "mean_normal_time",
           "mean_return_time", "mean_cycle_time", "loss_probability", "throughput", "kappa")


def _arrivals() -> dict:
    from qderive.symbolic.batches import Constant, Geometric

    return {"batch": Geometric(2), "single": Constant(1)}


def figure3_model(batch, load):
    """The model of Figure 3 at offered load rho_0 = ``load`` with ``batch`` arrivals."""
    from qderive.symbolic.laws import Deterministic
    from qderive.symbolic.models.hysteretic import HystereticModel

    L, H, R = FIG3_THRESHOLDS
    return HystereticModel.from_load(load, service=Deterministic(Fraction(1, 200)), batch=batch, L=L, H=H, R=R)


def figure3_data(loads_thesis=LOADS_THESIS, loads_below=LOADS_BELOW_1, digits_below=BELOW_1_DIGITS) -> list[dict]:
    """Rows (one per arrival type and rho_0): float64 in the thesis's range, ``digits_below`` digits below 1."""
    from qderive.numeric.engines.hysteretic import diagnostics

    rows = []
    for name, batch in _arrivals().items():
        for load, digits in [(x, digits_below) for x in loads_below] + [(x, None) for x in loads_thesis]:
            model = figure3_model(batch, load)
            row = {"arrivals": name, "rho0": load, "precision": "float64" if digits is None else digits}
            row.update(model.evaluate(digits).as_dict())
            row["kappa"] = diagnostics(model, digits)["kappa"]
            rows.append(row)
    return rows


def _fmt(value, digits):
    import mpmath

    if isinstance(value, Fraction):
        return str(float(value))
    if isinstance(value, (str, int)):
        return str(value)
    digits = 17 if digits == "float64" else digits
    with mpmath.workdps(digits + 10):  # mpf(value) rounds to the working precision
        return mpmath.nstr(mpmath.mpf(value), digits)


def thesis_claims(rows) -> dict:
    """Numbers behind the thesis's two remarks on Figure 3, from the rows of :func:`figure3_data`.

    ``crossover``: the smallest tabulated rho_0 from which E tau_12 > E tau_0 (the cycle is no
    longer dominated by normal-mode time), per arrival type; ``max_gap``: the largest relative
    difference batch vs single of E tau_12 and of E tau on rho_0 in [1, 1.6) and in [1.6, 2].
    """
    by = {(r["arrivals"], r["rho0"]): r for r in rows}
    loads = sorted({r["rho0"] for r in rows if r["rho0"] >= 1})
    out = {"crossover": {}, "max_gap": {}}
    for name in ("batch", "single"):
        above = [x for x in loads
                 if float(by[(name, x)]["mean_return_time"]) > float(by[(name, x)]["mean_normal_time"])]
        out["crossover"][name] = float(min(above)) if above else None
    for key in ("mean_return_time", "mean_cycle_time"):
        for lo, hi in ((1, Fraction(8, 5)), (Fraction(8, 5), 3)):
            gaps = [abs(float(by[("batch", x)][key]) / float(by[("single", x)][key]) - 1)
                    for x in loads if lo <= x < hi]
            out["max_gap"][f"{key} rho0 in [{float(lo)}, {float(min(hi, 2))}{')' if hi < 2 else ']'}"] = max(gaps)
    return out


def figure3(out_png: str | None, out_csv: str | None) -> None:
    """Draw Figure 3 (PNG) and/or write its data (CSV)."""
    rows = figure3_data()
    if out_csv:
        with open(out_csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(COLUMNS)
            for r in rows:
                writer.writerow([_fmt(r[c], r["precision"]) for c in COLUMNS])
    if out_png:
        _plot(rows, out_png)


def _plot(rows, out_png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"batch": "tab:blue", "single": "tab:red"}
    labels = {"batch": "batches, $l_i=0.5^i$", "single": "single arrivals"}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for name in ("batch", "single"):
        mine = sorted((r for r in rows if r["arrivals"] == name), key=lambda r: r["rho0"])
        x = [float(r["rho0"]) for r in mine]
        t12 = [float(r["mean_return_time"]) for r in mine]
        t = [float(r["mean_cycle_time"]) for r in mine]
        t0 = [float(r["mean_normal_time"]) for r in mine]
        thesis = [k for k, r in enumerate(mine) if r["rho0"] >= 1]
        ax1.plot([x[k] for k in thesis], [t[k] for k in thesis], "-", color=colors[name],
                 label=rf"$E\tau$, {labels[name]}")
        ax1.plot([x[k] for k in thesis], [t12[k] for k in thesis], "--", color=colors[name],
                 label=rf"$E\tau_{{12}}$, {labels[name]}")
        ax2.semilogy(x, t, "-", color=colors[name], label=rf"$E\tau$, {labels[name]}")
        ax2.semilogy(x, t0, ":", color=colors[name], label=rf"$E\tau_0$, {labels[name]}")
        ax2.semilogy(x, t12, "--", color=colors[name], label=rf"$E\tau_{{12}}$, {labels[name]}")
        below = [k for k, r in enumerate(mine) if r["rho0"] < 1]
        ax2.semilogy([x[k] for k in below], [t[k] for k in below], "o", color=colors[name], ms=4)
    ax1.set_yscale("log")
    ax1.set_xlabel(r"offered load $\rho_0$")
    ax1.set_ylabel("seconds")
    ax1.set_title("Figure 3 (thesis range): return time and control cycle")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.axvspan(0.58, 1.0, color="0.9")
    ax2.text(0.79, 1e29, f"below 1: mpmath,\n{BELOW_1_DIGITS} digits", fontsize=8)
    ax2.set_xlabel(r"offered load $\rho_0$")
    ax2.set_ylabel("seconds")
    ax2.set_title(r"extended to $\rho_0<1$ (corrected (21))")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7, loc="upper right")
    fig.suptitle(r"$M^{[X]}|D|1|(73,84)|(84,100)$, $b=5$ ms, $\lambda_1=\lambda_0/2$")
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


FIGURES = {"fig3": figure3}
