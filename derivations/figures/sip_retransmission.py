"""The goodput-collapse figure of ``sip-retransmission``: goodput and duplicate ratio against the offered load.

    qderive figure goodput-collapse --out goodput-collapse.png --csv goodput-collapse.csv

A scaled SIP server: exponential service of mean E[B] = 0.1 s (capacity 10 transactions per second), INVITE
timers with the RFC defaults (T1 = 0.5 s, Timer B = 32 s: 7 copies at most), offered load lambda_0 E[B] =
0.2, 0.3, ..., 3. Five curves (``CONTROLS``): ``none`` without a capacity limit (the server that collapses),
``ignore`` and ``503`` with thresholds (L, H) = (4, 5) -- H E[B] = 0.5 s = T1, the ratio of Asterisk's
high-water mark of 500 tasks at about 1 ms each -- and both with (L, H) = (20, 40) (H E[B] = 4 s = 8 T1: an
admitted copy can wait past several timers; how the thresholds move the collapse). Every fixed point of ``SipRetransmissionModel.evaluate()`` is drawn (filled: stable, open:
unstable; several at one load: bistability). Where the simulator :mod:`qderive.numeric.simulation.sip` is
installed, its estimates with 95 % intervals are drawn at a few loads (``SIM_LOADS``) and written to the CSV
(columns ``sim_goodput``, ``sim_goodput_hw``, ``sim_duplicate_ratio``, ``sim_duplicate_ratio_hw``).
matplotlib is imported only when a PNG is drawn.
"""

from __future__ import annotations

import csv
from fractions import Fraction

from .style import new_figure, save

__all__ = ["FIGURES", "figure_goodput_collapse", "plot_goodput_collapse", "LOADS", "SIM_LOADS", "CONTROLS", "STYLES",
           "model_at",
           "analytic_rows", "simulated_rows"]

MEAN = Fraction(1, 10)
LOADS = tuple(Fraction(k, 10) for k in range(2, 31))
SIM_LOADS = (Fraction(3, 10), Fraction(1, 2), Fraction(3, 5), Fraction(9, 10), Fraction(3, 2), Fraction(3))
#: curve label -> extra model fields
CONTROLS = {"none": {}, "ignore": {"control": "ignore", "thresholds": (4, 5)},
            "503": {"control": "503", "thresholds": (4, 5)},
            "ignore 20,40": {"control": "ignore", "thresholds": (20, 40)},
            "503 20,40": {"control": "503", "thresholds": (20, 40)}}
#: curve label -> (color, line style)
STYLES = {"none": ("C3", "-"), "ignore": ("C0", "-"), "503": ("C2", "-"), "ignore 20,40": ("C0", "--"),
          "503 20,40": ("C2", "--")}
#: simulation budget per point: horizon, warm-up (seconds), replications
SIM_RUN = (1000.0, 100.0, 5)


def model_at(control: str, load, scan_points: int = 80):
    """The figure's model for the curve ``control`` (a key of ``CONTROLS``) at offered load lambda_0 E[B] = ``load``."""
    from ...symbolic.laws import Exponential
    from ...symbolic.models.sip_retransmission import SipRetransmissionModel

    return SipRetransmissionModel(rate=Fraction(load) / MEAN, service=Exponential(MEAN), scan_points=scan_points,
                                  **CONTROLS[control])


def analytic_rows() -> list:
    """(control, load, solution index, offered rate, goodput / capacity, duplicate ratio, stable) for every
    fixed point at every load."""
    out = []
    for control in CONTROLS:
        for load in LOADS:
            r = model_at(control, load).evaluate()
            for i, s in enumerate(r.solutions):
                out.append((control, float(load), i, float(s["offered_rate"]), float(s["goodput"] * MEAN),
                            float(s["duplicate_ratio"]), bool(s["stable"])))
    return out


def simulated_rows(seed: int = 17) -> list:
    """(control, load, goodput / capacity, its half-width, duplicate ratio, its half-width) from the simulator at
    ``SIM_LOADS``; [] when the simulator is not installed."""
    try:
        from ...numeric.simulation.sip import simulate_sip
    except ImportError:
        return []
    horizon, warmup, reps = SIM_RUN
    out = []
    for c, control in enumerate(CONTROLS):
        for i, load in enumerate(SIM_LOADS):
            res = simulate_sip(model_at(control, load), horizon=horizon, warmup=warmup, replications=reps,
                               seed=seed + 100 * c + i)
            g, gh = res["goodput"]
            d, dh = res["duplicate_ratio"]
            out.append((control, float(load), float(g * MEAN), float(gh * MEAN), float(d), float(dh)))
    return out


def figure_goodput_collapse(out_png: str | None, out_csv: str | None) -> None:
    """Goodput (per capacity) and duplicate ratio against lambda_0 E[B] (module docstring)."""
    rows = analytic_rows()
    sims = simulated_rows()
    if out_csv:
        with open(out_csv, "w", newline="", encoding="utf-8") as fh:
            wr = csv.writer(fh, lineterminator="\n")
            wr.writerow(["control", "load", "solution", "offered_rate", "goodput_per_capacity", "duplicate_ratio",
                         "stable", "sim_goodput", "sim_goodput_hw", "sim_duplicate_ratio", "sim_duplicate_ratio_hw"])
            for row in rows:
                wr.writerow([f"{v:.12g}" if isinstance(v, float) else v for v in row] + [""] * 4)
            for control, load, g, gh, d, dh in sims:
                wr.writerow([control, f"{load:.12g}", "sim", "", "", "", ""] + [f"{v:.12g}" for v in (g, gh, d, dh)])
    if out_png:
        save(plot_goodput_collapse(rows, sims), out_png)


#: legend text of each curve of ``CONTROLS``
_LEGEND = {"none": "no control", "ignore": "ignore, $(L, H) = (4, 5)$", "503": "503, $(L, H) = (4, 5)$",
           "ignore 20,40": "ignore, $(L, H) = (20, 40)$", "503 20,40": "503, $(L, H) = (20, 40)$"}


def plot_goodput_collapse(rows, sims):
    """The plot of :func:`analytic_rows` and :func:`simulated_rows`: goodput and duplicate ratio, legend below."""
    from matplotlib.lines import Line2D

    with new_figure(10, 4.6, 1, 2) as (fig, (a1, a2)):
        colors = {c: STYLES[c][0] for c in CONTROLS}
        for control in CONTROLS:
            first = [(x, g, d) for c, x, i, _, g, d, _ in rows if c == control and i == 0]
            ls = STYLES[control][1]
            a1.plot([x for x, _, _ in first], [g for _, g, _ in first], color=colors[control], ls=ls,
                    label=_LEGEND.get(control, control))
            a2.plot([x for x, _, _ in first], [d for _, _, d in first], color=colors[control], ls=ls)
            for stable in (True, False):
                pts = [(x, g, d) for c, x, i, _, g, d, s in rows if c == control and i > 0 and s is stable]
                if not pts:
                    continue
                style = dict(color=colors[control], ls="none", marker="o", ms=4,
                             mfc=colors[control] if stable else "none")
                a1.plot([x for x, _, _ in pts], [g for _, g, _ in pts], **style)
                a2.plot([x for x, _, _ in pts], [d for _, _, d in pts], **style)
            sp = [s for s in sims if s[0] == control]
            if sp:
                mk = dict(marker="s", mfc=colors[control]) if STYLES[control][1] == "-" else dict(marker="D", mfc="w")
                a1.errorbar([s[1] for s in sp], [s[2] for s in sp], yerr=[s[3] for s in sp], color=colors[control],
                            ls="none", ms=5, **mk)
                a2.errorbar([s[1] for s in sp], [s[4] for s in sp], yerr=[s[5] for s in sp], color=colors[control],
                            ls="none", ms=5, **mk)
        loads = [x for _, x, *_ in rows]
        a1.plot([min(loads), 1, max(loads)], [min(loads), 1, 1], color="0.6", ls=":", lw=1,
                label=r"$\min(\mathrm{load}, 1)$")
        a1.set_xlabel(r"offered load $\lambda_0 \mathrm{E}[B]$")
        a1.set_ylabel("goodput / capacity")
        a1.set_title("Goodput (circles: further fixed points; open: unstable)")
        a2.set_xlabel(r"offered load $\lambda_0 \mathrm{E}[B]$")
        a2.set_ylabel(r"duplicate ratio $1 - 1/\mathrm{E}[\mathrm{copies}]$")
        a2.set_title("Retransmitted copies among all copies")
        # colours and line styles name the curves; the markers' meaning is said once, in grey
        handles, labels = a1.get_legend_handles_labels()
        grey = dict(color="0.4", ls="none")
        for label, style in (("further fixed point, stable", dict(marker="o", ms=4)),
                             ("further fixed point, unstable", dict(marker="o", ms=4, mfc="none")),
                             ("simulated, 95 % interval", dict(marker="s", ms=5))):
            handles.append(Line2D([], [], **grey, **style))
            labels.append(label)
        fig.legend(handles, labels, loc="outside lower center", ncol=3,
                   title="solid and dashed: analytic, the smallest fixed point")
    return fig


FIGURES = {"goodput-collapse": figure_goodput_collapse}
