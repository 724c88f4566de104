"""Figure ``two-flow-comparison``: algorithm 1 (FIFO) versus 2 (non-INVITE first in overload), seed 001.

The study: non-INVITE service time 1 (mu_2 = 1), INVITE k times longer (mu_1 = 1/k, the work
ratio k = 4..12 of seed 001), the same rates in overload; INVITE share f of the arrivals
0.1..0.9; total rate lambda chosen so that the offered work lambda (f k + 1 - f) equals
rho = 1.2 (an overloaded server); lambda_1 = f lambda, lambda_2 = (1 - f) lambda;
thresholds L,H,R = 4,8,9. Each point is ``TwoFlowModel.evaluate()`` (float64 under the
precision policy; the chain has about 1300-1500 states: the sparse level solver).

``qderive figure two-flow-comparison --out two-flow.png --csv two-flow.csv``
"""

from __future__ import annotations

import csv
from fractions import Fraction

from ...symbolic.models.two_flow import Algorithm, TwoFlowModel
from .style import new_figure, save

__all__ = ["FIGURES", "STUDY", "COLUMNS", "comparison_rows", "figure_comparison", "plot_comparison"]

#: the study's fixed parameters
STUDY = {"rho": Fraction(6, 5), "L": 4, "H": 8, "R": 9, "shares": tuple(Fraction(k, 10) for k in range(1, 10)),
         "ratios": (4, 6, 8, 10, 12)}

#: the CSV columns (after the first five: measure keys of ``qderive eval two-flow``)
COLUMNS = ("invite_share", "work_ratio", "algorithm", "lambda_total", "throughput_total", "throughput_invite",
           "throughput_non_invite", "mean_sojourn", "mean_sojourn_invite", "mean_sojourn_non_invite",
           "rejection_invite", "rejection_non_invite", "p_mode0", "mean_return_time")


def comparison_rows(study: dict = STUDY) -> list[dict]:
    """One row per (work ratio k, INVITE share f, algorithm): the measures of the study's model (float64)."""
    rows = []
    for k in study["ratios"]:
        for f in study["shares"]:
            lam = study["rho"] / (f * k + 1 - f)
            for alg in Algorithm:
                model = TwoFlowModel(f * lam, (1 - f) * lam, Fraction(1, k), 1, study["L"], study["H"], study["R"], alg)
                m = model.evaluate().as_dict()
                rows.append({"invite_share": float(f), "work_ratio": k, "algorithm": alg.value,
                             "lambda_total": float(lam),
                             "throughput_total": m["throughput_invite"] + m["throughput_non_invite"],
                             **{key: m[key] for key in COLUMNS[5:]}})
    return rows


def figure_comparison(out_png: str | None, out_csv: str | None) -> None:
    """Top row: throughput, mean sojourn, INVITE rejection (solid: algorithm 1, dashed: 2; one colour per k).
    Bottom row: algorithm 2 relative to 1 (throughput and sojourn in %, INVITE rejection in points)."""
    rows = comparison_rows()
    if out_csv:
        with open(out_csv, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
            w.writeheader()
            for r in rows:
                w.writerow({k: (f"{v:.10g}" if isinstance(v, float) else v) for k, v in r.items()})
    if out_png:
        save(plot_comparison(rows), out_png)


def plot_comparison(rows, study: dict = STUDY):
    """The plot of :func:`comparison_rows`: the measures (top row) and algorithm 2 against 1 (bottom row)."""
    from matplotlib import colormaps

    colours = colormaps["viridis"]
    ratios = sorted({r["work_ratio"] for r in rows})
    by = {(r["work_ratio"], r["algorithm"], r["invite_share"]): r for r in rows}
    shares = sorted({r["invite_share"] for r in rows})
    panels = (
        ("throughput_total", "throughput (messages / time)", lambda a, b: 100 * (b / a - 1),
         "throughput: alg. 2 vs 1 (%)"),
        ("mean_sojourn", "mean sojourn (time)", lambda a, b: 100 * (b / a - 1), "mean sojourn: alg. 2 vs 1 (%)"),
        ("rejection_invite", "INVITE rejection probability", lambda a, b: 100 * (b - a),
         "INVITE rejection: alg. 2 $-$ alg. 1 (points)"),
    )
    with new_figure(11, 6.6, 2, 3) as (fig, axes):
        for col, (key, label, diff, dlabel) in enumerate(panels):
            top, bottom = axes[0, col], axes[1, col]
            for n, k in enumerate(ratios):
                colour = colours(n / max(1, len(ratios) - 1))
                for alg, style in (("fifo", "-"), ("priority", "--")):
                    top.plot(shares, [by[(k, alg, f)][key] for f in shares], style, color=colour, marker=".",
                             label=f"$k = {k}$" if alg == "fifo" else None)
                bottom.plot(shares, [diff(by[(k, "fifo", f)][key], by[(k, "priority", f)][key]) for f in shares],
                            color=colour, marker=".")
            bottom.axhline(0, color="grey", lw=0.8)
            top.set_ylabel(label)
            bottom.set_ylabel(dlabel)
            for ax in (top, bottom):
                ax.set_xlabel("INVITE share of arrivals")
        fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside right upper",
                   title="work ratio $k$\n(solid: alg. 1,\ndashed: alg. 2)")
        s = study
        fig.suptitle(f"Two-flow SIP server, algorithm 1 (FIFO) vs 2 (non-INVITE first in overload): offered work "
                     f"{float(s['rho']):g}, $L, H, R = {s['L']}, {s['H']}, {s['R']}$,\nnon-INVITE service time 1, "
                     f"INVITE $k$ times longer")
    return fig


FIGURES = {"two-flow-comparison": figure_comparison}
