"""Figure 1 of the thesis (Sopin 2013, chapter 2): loss probability versus offered load.

Setup (``spec/chapter2.md`` section 5, item 6): waiting room r = 200, mean service
b_1 = 15 ms, mean vacation f_1 = 75 ms, geometric batches on {1, 2, ...} with mean 5 and
with mean 4, service and vacation of the same type -- deterministic (D), Erlang-4 (E4)
or exponential (M) -- and offered load rho_bar = lambda l_1 b_1 from 0.375 to 0.75
(lambda = rho_bar / (l_1 b_1)). The loss is Theorem 1.1 (12) by the stable float64
pipeline of :mod:`qderive.numeric.vacation`, which the tests prove within 1e-12 relative
of the 50-digit values at every point of this grid (losses down to ~2e-16).

``qderive figure fig1 --out docs/figures/fig1.png --csv docs/figures/fig1.csv``
"""

from __future__ import annotations

import csv

import sympy as sp

from qderive.numeric.backend import FLOAT64
from qderive.numeric.vacation import FiniteSweep, VacationQueue
from qderive.symbolic import batches as B
from qderive.symbolic import laws as T

__all__ = ["figure1", "figure1_data", "FIG1_LAWS", "FIG1_BATCH_MEANS", "fig1_loads"]

B1 = sp.Rational(15, 1000)
F1 = sp.Rational(75, 1000)
CAPACITY = 200
FIG1_BATCH_MEANS = (5, 4)
#: label -> time law with the given mean (service and vacation of the same type)
FIG1_LAWS = {
    "D": T.Deterministic,
    "E4": lambda mean: T.Erlang(4, mean),
    "M": T.Exponential,
}


def fig1_loads(points: int = 16) -> list[sp.Rational]:
    """``points`` equally spaced exact loads from 3/8 to 3/4 (6 points: the benchmark grid)."""
    lo, hi = sp.Rational(3, 8), sp.Rational(3, 4)
    return [lo + (hi - lo) * sp.Rational(n, points - 1) for n in range(points)]


def fig1_model(batch_mean: int, law: str, load) -> VacationQueue:
    """The Figure-1 model at one point (r = 200, b1 = 15 ms, f1 = 75 ms)."""
    make = FIG1_LAWS[law]
    return VacationQueue.from_load(load, B.Geometric(batch_mean), make(B1), make(F1), CAPACITY)


def figure1_data(points: int = 16) -> list[dict]:
    """Rows {batch_mean, law, load, loss_probability, idle_probability, mean_wait} (float64)."""
    rows = []
    for mean in FIG1_BATCH_MEANS:
        for law in FIG1_LAWS:
            for load in fig1_loads(points):
                m = FiniteSweep(fig1_model(mean, law, load), FLOAT64).at(CAPACITY)
                rows.append({
                    "batch_mean": mean,
                    "law": law,
                    "load": float(load),
                    "loss_probability": m.loss_probability,
                    "idle_probability": m.idle_probability,
                    "mean_wait": m.mean_wait,
                })
    return rows


def figure1(out_png: str | None, out_csv: str | None, points: int = 16) -> None:
    """Draw Figure 1 (PNG, log-scale loss) and/or write its data (CSV)."""
    rows = figure1_data(points)
    if out_csv:
        with open(out_csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    if out_png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.8))
        colors = {"D": "tab:blue", "E4": "tab:green", "M": "tab:red"}
        styles = {5: "-", 4: "--"}
        for mean in FIG1_BATCH_MEANS:
            for law in FIG1_LAWS:
                pts = [(row["load"], row["loss_probability"]) for row in rows
                       if row["batch_mean"] == mean and row["law"] == law]
                ax.semilogy([x for x, _ in pts], [y for _, y in pts], styles[mean], color=colors[law],
                            marker="o", markersize=3, label=f"{law}, batch mean {mean}")
        ax.set_xlabel(r"offered load $\bar\rho = \lambda l_1 b_1$")
        ax.set_ylabel(r"loss probability $\pi$")
        ax.set_title(r"M$^X$/G/1/r with multiple vacations: r = 200, $b_1$ = 15 ms, $f_1$ = 75 ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        fig.tight_layout()
        fig.savefig(out_png, dpi=120)
        plt.close(fig)
