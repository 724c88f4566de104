"""The figures of seed 004 (two-level cluster with k copies): ``cluster-fig1`` and ``cluster-fig2``.

    qderive figure cluster-fig1 --out cluster-fig1.png --csv cluster-fig1.csv
    qderive figure cluster-fig2 --out cluster-fig2.png --csv cluster-fig2.csv

Both use the paper's example, n = m = 10, v_1 = v_2 = 0.3 s, and the package's measures under the
precision policy (``RedundantCluster.evaluate``, :func:`qderive.numeric.engines.cluster.optimize`).
matplotlib is imported only when a PNG is drawn.
"""

from __future__ import annotations

import csv
from fractions import Fraction

from .style import fit_log_axis, legend_outside, new_figure, save

__all__ = ["FIGURES", "figure_cluster1", "figure_cluster2", "plot_cluster1", "plot_cluster2",
           "cluster1_rows", "cluster2_rows", "CURVES1", "RATES1"]

_V = Fraction(3, 10)


def _values(rate, t0_over_v):
    return {"rate": rate, "nodes": (10, 10), "service_times": (_V, _V), "deadline": t0_over_v * _V}


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        wr = csv.writer(fh, lineterminator="\n")
        wr.writerow(header)
        for row in rows:
            wr.writerow([f"{v:.15g}" if isinstance(v, float) else v for v in row])


#: the curves of Fig. 1: (curve, t_0 / v, copies k)
CURVES1 = ((1, 2, 3), (2, 2, 2), (3, 2, 1), (4, 3, 3), (5, 3, 2), (6, 3, 1))
#: the request rates of Fig. 1: 0.05, 0.10, ..., 8 per second
RATES1 = tuple(Fraction(j, 20) for j in range(1, 161))


def cluster1_rows(rates=RATES1, curves=CURVES1) -> list[tuple]:
    """(curve, t_0/v, k, Lambda, r, R, R by the paper's discretisation N = 10) at every stable rate."""
    from ...numeric.backend import FLOAT64
    from ...numeric.engines.cluster import paper_discretised
    from ...symbolic.models.redundant_cluster import RedundantCluster

    rows = []
    for curve, t0v, k in curves:
        for lam in rates:
            if k * lam * _V >= 10:
                continue
            c = RedundantCluster(**_values(lam, t0v), copies=k)
            m = c.evaluate()
            r_paper = float(paper_discretised(c, 10, FLOAT64))
            rows.append((curve, t0v, k, float(lam), float(m.copy_timely_probability), float(m.timely_probability),
                         1 - (1 - r_paper) ** k))
    return rows


def figure_cluster1(out_png: str | None, out_csv: str | None) -> None:
    """Seed 004, Fig. 1: R versus Lambda (0..8 /s) for t_0 = 2v (curves 1-3) and 3v (4-6), k = 3, 2, 1.

    Drawn as 1 - R on a logarithmic axis, so that the whole range of the data is readable.

    Exact R (the closed forms); the CSV also holds r and the paper's discretised R with N = 10.
    Rates at which k copies are unstable (k Lambda v / n >= 1) are left out of the curve.
    """
    rows = cluster1_rows()
    if out_csv:
        _write_csv(out_csv, ("curve", "t0_over_v", "copies", "rate", "copy_timely_probability",
                             "timely_probability", "timely_probability_paper_N10"), rows)
    if out_png:
        save(plot_cluster1(rows, CURVES1), out_png)


def plot_cluster1(rows, curves):
    """The plot of :func:`figure_cluster1`'s rows: 1 - R (log) against Lambda, one curve per (t_0, k)."""
    with new_figure(6.4, 3.8) as (fig, ax):
        for curve, t0v, k in curves:
            pts = [(row[3], 1 - row[5]) for row in rows if row[0] == curve and row[5] < 1]
            ax.semilogy(*zip(*pts), ls="-" if t0v == 2 else "--", label=f"{curve}: $t_0 = {t0v}v$, $k = {k}$")
        ax.set_xlabel(r"request rate $\Lambda$ (1/s)")
        ax.set_ylabel(r"$1 - R$ (no copy waits $\leq t_0$)")
        fit_log_axis(ax, [1 - row[5] for row in rows])
        ax.set_xlim(0, max(row[3] for row in rows))
        ax.grid(True, which="both")
        legend_outside(ax)
        ax.set_title("Two-level cluster, $n = m = 10$, $v = 0.3$ s (seed 004, Fig. 1)")
    return fig


_PANELS = {
    "a": [(4, Fraction(3)), (3, Fraction(3)), (2, Fraction(3)), (Fraction(3, 2), Fraction(3))],
    "b": [(2, Fraction(11, 5)), (2, Fraction(3)), (2, Fraction(7, 2)), (2, Fraction(4))],
}


def cluster2_rows(panels=None, max_copies: int = 10) -> list[tuple]:
    """(panel, curve, t_0/v, Lambda, k, R, 1 - R, optimal?) for k = 1 .. the stable copies up to ``max_copies``."""
    panels = _PANELS if panels is None else panels
    from ...numeric.engines.cluster import optimize
    from ...symbolic.models.redundant_cluster import OptimizeCopiesRequest

    rows = []
    for panel, specs in panels.items():
        for curve, (t0v, lam) in enumerate(specs, start=1):
            best = optimize(_values(lam, t0v), OptimizeCopiesRequest(max_copies))
            table = zip(best["timely_probability_by_copies"], best["untimely_probability_by_copies"])
            for k, (R, U) in enumerate(table, start=1):
                rows.append((panel, curve, float(t0v), float(lam), k, float(R), float(U), int(k == best["copies"])))
    return rows


def figure_cluster2(out_png: str | None, out_csv: str | None) -> None:
    """Seed 004, Fig. 2: R versus k. (a) Lambda = 3/s, t_0 = 4v, 3v, 2v, 1.5v; (b) t_0 = 2v, Lambda = 2.2,
    3, 3.5, 4 /s. k runs over the stable copies up to 10; the optimum of each curve is marked. Drawn as
    1 - R on a logarithmic axis."""
    rows = cluster2_rows()
    if out_csv:
        _write_csv(out_csv, ("panel", "curve", "t0_over_v", "rate", "copies", "timely_probability",
                             "untimely_probability", "optimal"), rows)
    if out_png:
        save(plot_cluster2(rows), out_png)


def plot_cluster2(rows):
    """The plot of :func:`figure_cluster2`'s rows: 1 - R (log) against k in panels (a) and (b), optima starred."""
    with new_figure(10, 3.9, 1, 2) as (fig, axes):
        for ax, (panel, specs) in zip(axes, _PANELS.items()):
            for curve, (t0v, lam) in enumerate(specs, start=1):
                pts = [(row[4], row[6]) for row in rows if row[0] == panel and row[1] == curve]
                if not pts:
                    continue
                label = (f"{curve}: $t_0 = {float(t0v):g}v$" if panel == "a" else
                         f"{curve}: $\\Lambda = {float(lam):g}$/s")
                line, = ax.semilogy(*zip(*pts), marker="o", label=label)
                opt = [(row[4], row[6]) for row in rows if row[0] == panel and row[1] == curve and row[7]]
                ax.plot(*zip(*opt), marker="*", ms=11, ls="none", color=line.get_color(),
                        label="optimal $k$" if curve == 1 else None)
            ax.set_xlabel("copies $k$")
            ax.set_ylabel("$1 - R$ (no copy in time)")
            fit_log_axis(ax, [row[6] for row in rows if row[0] == panel])
            ax.grid(True, which="both")
            legend_outside(ax)
            ax.set_title("(a) $\\Lambda = 3$/s" if panel == "a" else "(b) $t_0 = 2v$")
        fig.suptitle("Two-level cluster, $n = m = 10$, $v = 0.3$ s (seed 004, Fig. 2)")
    return fig


FIGURES = {"cluster-fig1": figure_cluster1, "cluster-fig2": figure_cluster2}
