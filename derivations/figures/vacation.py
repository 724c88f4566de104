"""Figure 1 of the thesis (Sopin 2013, chapter 2): loss probability versus offered load.

Setup (``docs/theory/chapter2.md`` section 5, item 6): waiting room r = 200, mean service
b_1 = 15 ms, mean vacation f_1 = 75 ms, multiple vacations, partial admission, geometric
batches on {1, 2, ...} with mean 5 and with mean 4, service and vacation of the same
type -- deterministic (D), Erlang-4 (E4) or exponential (M) -- and offered load
rho_bar = lambda l_1 b_1 from 0.375 to 0.75 (lambda = rho_bar / (l_1 b_1)). Each point is
``FiniteVacationQueue.evaluate()``: Theorem 1.1 (12) by the float64 cut recursion of
:mod:`qderive.numeric.kernels.vacation` under the precision policy; ``tests/test_figure1.py``
proves it within 1e-12 relative of the 50-digit values at every point of the grid (losses
down to ~2e-16).

``qderive figure fig1 --out docs/figures/fig1.png --csv docs/figures/fig1.csv``
"""

from __future__ import annotations

import csv
from fractions import Fraction

from ...symbolic.batches.geometric import Geometric
from ...symbolic.laws.deterministic import Deterministic
from ...symbolic.laws.gamma import Erlang, Exponential
from ...symbolic.models.vacation import FiniteVacationQueue
from .style import fit_log_axis, legend_outside, new_figure, save

__all__ = ["FIGURES", "figure1", "figure1_data", "plot_figure1", "fig1_model", "fig1_loads", "FIG1_LAWS",
           "FIG1_BATCH_MEANS",
           "B1", "F1", "CAPACITY", "COLUMNS"]

B1 = Fraction(15, 1000)
F1 = Fraction(75, 1000)
CAPACITY = 200
FIG1_BATCH_MEANS = (5, 4)
#: label -> time law with the given mean (service and vacation of the same type)
FIG1_LAWS = {
    "D": Deterministic,
    "E4": lambda mean: Erlang(4, mean),
    "M": Exponential,
}
#: the CSV columns (after batch_mean, law, load: measure keys of ``qderive eval vacation-finite``)
COLUMNS = ("batch_mean", "law", "load", "loss_probability", "idle_probability", "mean_wait")


def fig1_loads(points: int = 16) -> list[Fraction]:
    """``points`` equally spaced exact loads from 3/8 to 3/4 (6 points: the test and benchmark grid)."""
    lo, hi = Fraction(3, 8), Fraction(3, 4)
    return [lo + (hi - lo) * Fraction(n, points - 1) for n in range(points)]


def fig1_model(batch_mean: int, law: str, load, capacity: int = CAPACITY) -> FiniteVacationQueue:
    """The Figure-1 model at one point (r = 200, b1 = 15 ms, f1 = 75 ms, multiple vacations)."""
    make = FIG1_LAWS[law]
    return FiniteVacationQueue.from_load(load, Geometric(batch_mean), make(B1), make(F1), capacity)


def figure1_data(points: int = 16) -> list[dict]:
    """Rows {batch_mean, law, load, loss_probability, idle_probability, mean_wait} (float64)."""
    rows = []
    for mean in FIG1_BATCH_MEANS:
        for law in FIG1_LAWS:
            for load in fig1_loads(points):
                m = fig1_model(mean, law, load).evaluate()
                rows.append({"batch_mean": mean, "law": law, "load": float(load),
                             **{k: float(getattr(m, k)) for k in COLUMNS[3:]}})
    return rows


def figure1(out_png: str | None, out_csv: str | None, points: int = 16) -> None:
    """Draw Figure 1 (PNG, log-scale loss) and/or write its data (CSV, floats as their repr)."""
    rows = figure1_data(points)
    if out_csv:
        with open(out_csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    if out_png:
        save(plot_figure1(rows), out_png)


def plot_figure1(rows):
    """The Figure-1 plot of ``rows`` (:func:`figure1_data`): loss on a log axis, legend beside the axes."""
    colors = {"D": "C0", "E4": "C2", "M": "C3"}
    styles = {5: "-", 4: "--"}
    with new_figure(6.4, 3.8) as (fig, ax):
        for mean in FIG1_BATCH_MEANS:
            for law in FIG1_LAWS:
                pts = [(row["load"], row["loss_probability"]) for row in rows
                       if row["batch_mean"] == mean and row["law"] == law]
                name = {"D": "$D$", "E4": "$E_4$", "M": "$M$"}[law]
                ax.semilogy([x for x, _ in pts], [y for _, y in pts], styles[mean], color=colors[law],
                            marker="o", label=f"{name}, batch mean {mean}")
        fit_log_axis(ax, [row["loss_probability"] for row in rows])
        ax.set_xlabel(r"offered load $\bar\rho = \lambda l_1 b_1$")
        ax.set_ylabel(r"loss probability $\pi$")
        ax.set_title(r"$M^{[X]}/G/1/r$ with multiple vacations: $r = 200$, $b_1 = 15$ ms, $f_1 = 75$ ms")
        ax.grid(True, which="both")
        legend_outside(ax)
    return fig


FIGURES = {"fig1": figure1}
