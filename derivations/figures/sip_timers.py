"""The SIP-timer figure: P(response > T1 (2^k - 1)) against the load, ``sip-timers``.

    qderive figure sip-timers --out sip-timers.png --csv sip-timers.csv

Over UDP a SIP client retransmits a request that has no answer T1 = 500 ms after it was sent,
then after 2 T1, 4 T1, ... (RFC 3261, Timer A), i.e. at T1 (2^k - 1) = 0.5, 1.5, 3.5, 7.5 s
after the first transmission. The probability that the server's response time (the sojourn
time: the wait plus the request's own service) exceeds those instants is the fraction of
requests that are sent k or more times. The model is the README's SIP server: batches geometric
with mean 5, Erlang-4 service of mean 15 ms, exponential vacations of mean 75 ms (multiple
vacations), infinite buffer, at loads rho_bar = 0.05 .. 0.95; the values come from
``VacationQueue.evaluate(sojourn_tail=..., wait_tail=...)`` under the precision policy. A tail
below 1e-250 (beyond the limit ``inversion_digits``) is left out of the CSV and the plot.
matplotlib is imported only when a figure is drawn (PNG, PDF or SVG).
"""

from __future__ import annotations

import csv
from fractions import Fraction

from .style import fit_log_axis, legend_outside, new_figure, save

__all__ = ["FIGURES", "figure_sip_timers", "plot_sip_timers", "rows", "T1", "INSTANTS", "LOADS"]

T1 = Fraction(1, 2)
#: the retransmission instants T1 (2^k - 1), k = 1..4
INSTANTS = tuple(T1 * (2**k - 1) for k in range(1, 5))
LOADS = tuple(Fraction(j, 20) for j in range(1, 20))


def _model(load):
    from ...symbolic.batches import Geometric
    from ...symbolic.laws import Erlang, Exponential
    from ...symbolic.models.vacation import VacationQueue

    return VacationQueue.from_load(load, Geometric(5), Erlang(4, Fraction(3, 200)), Exponential(Fraction(3, 40)))


def rows() -> list:
    """(load, k, t, P(T > t), P(W > t)) for every load and instant (tails below the limit left out)."""
    from ...symbolic.errors import BudgetError

    out = []
    keys = [str(t) for t in INSTANTS]
    for load in LOADS:
        model = _model(load)
        for k, (key, t) in enumerate(zip(keys, INSTANTS), start=1):
            try:
                r = model.evaluate(sojourn_tail=[key], wait_tail=[key])
            except BudgetError:
                continue
            out.append((float(load), k, float(t), float(r.response["sojourn_tail"][key]),
                        float(r.response["wait_tail"][key])))
    return out


def figure_sip_timers(out_png: str | None, out_csv: str | None) -> None:
    """P(response > T1 (2^k - 1)), k = 1..4, against rho_bar (module docstring), log scale."""
    data = rows()
    if out_csv:
        with open(out_csv, "w", newline="", encoding="utf-8") as fh:
            wr = csv.writer(fh, lineterminator="\n")
            wr.writerow(["load", "k", "t_seconds", "p_response_gt_t", "p_wait_gt_t"])
            for row in data:
                wr.writerow([f"{v:.15g}" if isinstance(v, float) else v for v in row])
    if out_png:
        save(plot_sip_timers(data), out_png)


def plot_sip_timers(data):
    """The plot of :func:`rows`: one curve per k, P(T > T_1 (2^k - 1)) on a log axis against the load."""
    with new_figure(6.4, 3.8) as (fig, ax):
        for k in range(1, 5):
            pts = [(load, p) for load, kk, _, p, _ in data if kk == k and p > 0]
            ax.semilogy([x for x, _ in pts], [y for _, y in pts], marker="o",
                        label=f"$k = {k}$: $T > {float(T1 * (2**k - 1)):g}$ s")
        fit_log_axis(ax, [p for _, _, _, p, _ in data])
        ax.set_xlabel(r"offered load $\bar\rho$")
        ax.set_ylabel(r"$P\,(T > T_1 (2^k - 1))$")
        ax.set_title(r"Requests retransmitted $k$ or more times ($T_1 = 0.5$ s)")
        ax.grid(True, which="both")
        legend_outside(ax, title="response time $T$")
    return fig


FIGURES = {"sip-timers": figure_sip_timers}
