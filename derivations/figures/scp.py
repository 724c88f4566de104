"""Overload-control study for an SCP (seed 003): the adaptive window vs ITU-T call gapping and percentage.

Seed 003 claims its adaptive window is more robust than Call Gapping and percentage
throttling. :func:`figure_scp` (``qderive figure scp-overload``) tests the claim with the seeded
simulation of :mod:`qderive.numeric.simulation.scp`: throughput, goodput (completions within the
SSP timeout) and mean response time versus offered load from 0.5 to 3 times capacity, with 95%
confidence intervals from independent replications, in two scenarios: refusing a call is free,
and refusing a call AT THE SCP costs 10% of its processing (the window refuses at the SCP;
gapping and percentage act at the SSPs). :func:`sensitivity_table` varies each control's step,
the detector threshold and the refusal cost at twice the capacity.

    qderive figure scp-overload --out scp-overload.png --csv scp-overload.csv
    python -m qderive.derivations.figures.scp --sensitivity     # the table of docs/guides/scp-window.md
"""

from __future__ import annotations

import csv
import sys
import time
from dataclasses import replace
from fractions import Fraction

from ...numeric.simulation import scp as S
from .style import new_figure, save

__all__ = ["FIGURES", "STUDY_CONTROLS", "LOAD_FACTORS", "load_sweep", "figure_scp", "sensitivity_table",
           "SERVICES", "SERVICE_RATIOS", "SERVICE_LOADS", "service_controls", "figure_scp_services", "plot_scp",
           "plot_scp_services"]

#: offered load / capacity
LOAD_FACTORS = tuple(Fraction(j, 4) for j in range(2, 13))  # 0.5, 0.75, ..., 3
_MEASURES = ("offered_rate", "throughput", "goodput", "mean_response", "admitted_fraction")


#: the four controls of the study, each with its default tuning
STUDY_CONTROLS = (S.NoControl(), S.AdaptiveWindow(), S.CallGapping(), S.PercentageThrottling())


def _half_width(est) -> float:
    ci = est.interval(0.95)
    return float("nan") if ci is None else (ci[1] - ci[0]) / 2


def load_sweep(config, controls=None, load_factors=LOAD_FACTORS, replications: int = 10, seed: int = 1) -> list:
    """One row per (control, load factor): means and 95% CI half-widths over the replications
    (the same seeds for every control and load: common random numbers)."""
    rows = []
    for control in controls or STUDY_CONTROLS:
        for f in load_factors:
            est = S.replicate(config, control, Fraction(f) * Fraction(config.capacity).limit_denominator(10**6),
                              replications, seed)
            row = {"rejection_cost": float(config.rejection_cost), "control": control.name,
                   "load_factor": float(f), "replications": replications}
            for m in _MEASURES:
                row[m] = est[m].value
                row[m + "_ci95"] = _half_width(est[m])
            rows.append(row)
    return rows


def figure_scp(out_png: str | None, out_csv: str | None, *, load_factors=LOAD_FACTORS, replications: int = 10,
               config=None, rejection_costs=(Fraction(0), Fraction(1, 10))) -> list:
    """Throughput, goodput and mean response time vs offered load with 95% CIs, in two scenarios.

    Defaults: the SCP of :class:`~qderive.numeric.simulation.scp.SCPConfig` (capacity 100 calls/s),
    load factors 0.5..3, 10 replications of 120 s (about 30 s on one core). Returns the rows.
    """
    base = config or S.SCPConfig()
    rows = []
    for rc in rejection_costs:
        rows += load_sweep(replace(base, rejection_cost=rc), STUDY_CONTROLS, load_factors, replications)
    if out_csv:
        _write_rows(out_csv, rows)
    if out_png:
        save(plot_scp(rows, rejection_costs, base), out_png)
    return rows


def _write_rows(out_csv, rows) -> None:
    """The rows as CSV, floats to 6 significant digits."""
    with open(out_csv, "w", newline="", encoding="utf-8") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        wr.writeheader()
        for row in rows:
            wr.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})


def plot_scp(rows, rejection_costs, cfg):
    """The plot of :func:`figure_scp`'s rows: one row of panels per refusal cost, one legend below the figure."""
    panels = (("throughput", "throughput (completions/s)"),
              ("goodput", f"goodput (within {float(cfg.timeout):g} s timeout)/s"),
              ("mean_response", "mean response time (s)"))
    styles = {"no control": ("k", "x"), "adaptive window": ("C0", "o"), "call gapping": ("C1", "s"),
              "percentage": ("C2", "^")}
    with new_figure(11, 2.9 * len(rejection_costs) + 0.8, len(rejection_costs), 3, squeeze=False) as (fig, axes):
        for r_i, rc in enumerate(rejection_costs):
            for c_i, (key, label) in enumerate(panels):
                ax = axes[r_i][c_i]
                for control in STUDY_CONTROLS:
                    pts = [row for row in rows if row["control"] == control.name and row["rejection_cost"] == float(rc)]
                    color, marker = styles.get(control.name, (None, "."))
                    ax.errorbar([p["load_factor"] for p in pts], [p[key] for p in pts],
                                yerr=[p[key + "_ci95"] for p in pts], color=color, marker=marker, label=control.name)
                if key == "mean_response":
                    ax.set_yscale("log")
                    ax.axhline(float(cfg.threshold), color="grey", ls=":", lw=1, label="detector threshold")
                else:
                    ax.axhline(cfg.capacity, color="grey", ls=":", lw=1, label="capacity")
                ax.set_xlabel("offered load / capacity")
                ax.set_ylabel(label)
                ax.set_title(f"refusal at the SCP costs {float(rc) * 100:g}% of a call")
        handles = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=len(handles))
        fig.suptitle(f"SCP overload control: {cfg.servers} processors, capacity {cfg.capacity:g} calls/s, "
                     f"95% CIs over independent replications")
    return fig


def sensitivity_table(load_factor=Fraction(2), replications: int = 10, seed: int = 1) -> str:
    """A Markdown table: goodput and mean response of each control under other tunings, at ``load_factor``.

    Varies the control's step (window: initial size; gapping: ladder steps per doubling;
    percentage: step), the detector threshold (0.07, 0.1, 0.2 s) and the cost of refusing at the
    SCP (0, 5%, 10%). The load is switched on at t = 0 with every control at its loosest level and
    measured from t = 20 s to 120 s, so a slow control pays for its convergence (a surge); the
    column "steady state" measures from 150 s to 250 s instead.
    """
    variants = (
        ("adaptive window, w0 = 20 (default)", S.AdaptiveWindow()),
        ("adaptive window, w0 = 100", S.AdaptiveWindow(w_initial=100)),
        ("call gapping, 1 step per doubling", S.CallGapping(steps_per_doubling=1)),
        ("call gapping, 4 steps per doubling (default)", S.CallGapping()),
        ("call gapping, 16 steps per doubling", S.CallGapping(steps_per_doubling=16)),
        ("percentage, 20% steps", S.PercentageThrottling(step=0.2)),
        ("percentage, 5% steps (default)", S.PercentageThrottling()),
        ("percentage, 1% steps", S.PercentageThrottling(step=0.01)),
    )
    settings = (
        ("threshold 0.1 s", S.SCPConfig()),
        ("steady state (warm-up 150 s)", S.SCPConfig(warmup=150, horizon=250)),
        ("threshold 0.07 s", S.SCPConfig(threshold=Fraction(7, 100))),
        ("threshold 0.2 s", S.SCPConfig(threshold=Fraction(1, 5))),
        ("refusal costs 5%", S.SCPConfig(rejection_cost=Fraction(1, 20))),
        ("refusal costs 10%", S.SCPConfig(rejection_cost=Fraction(1, 10))),
    )
    head = "| control | " + " | ".join(name for name, _ in settings) + " |"
    lines = [head, "|" + "---|" * (len(settings) + 1)]
    for vname, control in variants:
        cells = []
        for _, cfg in settings:
            est = S.replicate(cfg, control, load_factor * Fraction(cfg.capacity).limit_denominator(10**6),
                              replications, seed)
            g, r = est["goodput"], est["mean_response"]
            cells.append(f"{g.value:.1f} ± {_half_width(g):.1f} / {r.value:.2g}")
        lines.append(f"| {vname} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: the two services of the multi-service comparison: (holding time h_i, share of the calls), ratios S_1 : S_2
SERVICES = ((Fraction(1, 100), 2), (Fraction(3, 100), 1))
SERVICE_RATIOS = (3, 1)
SERVICE_LOADS = (Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(2), Fraction(5, 2), Fraction(3))
_SERVICE_MEASURES = ("goodput", "fairness", "effectiveness", "throughput_1", "throughput_2")


def service_controls(ratios=SERVICE_RATIOS, holdings=tuple(h for h, _ in SERVICES)) -> tuple:
    """The controls compared with several services: seed 003's service windows (5), (6) with ws_i = h_i, the same
    with measured response times ws_i (:class:`~qderive.numeric.simulation.scp.MeasuredServiceWindows`), one
    shared adaptive window, call gapping and percentage throttling (default tunings)."""
    return (S.ServiceWindows(ratios=ratios, holdings=holdings),
            S.MeasuredServiceWindows(ratios=ratios, holdings=holdings),
            S.AdaptiveWindow(), S.CallGapping(), S.PercentageThrottling())


def figure_scp_services(out_png: str | None, out_csv: str | None, *, load_factors=SERVICE_LOADS,
                        replications: int = 5, config=None) -> list:
    """``qderive figure scp-services``: two services (10 ms and 30 ms processing, offered 2 : 1 calls, ratios
    S_1 : S_2 = 3 : 1) on the SCP of :class:`~qderive.numeric.simulation.scp.SCPConfig` (4 processors):
    goodput, fairness (Jain's index against the ratios) and effectiveness (processor share spent on timely
    calls) against the offered work / capacity, 95% CIs over ``replications`` (common random numbers).
    About 40 s with the defaults. Returns the rows."""
    cfg = config or S.SCPConfig()
    per_call = sum(h * w for h, w in SERVICES) / sum(w for _, w in SERVICES)  # mean work of an offered call
    rows = []
    for control in service_controls():
        for f in load_factors:
            lam = Fraction(f) * cfg.servers / per_call
            services = tuple((lam * w / sum(v for _, v in SERVICES), h) for h, w in SERVICES)
            est = S.replicate_services(cfg, control, services, SERVICE_RATIOS, replications)
            row = {"control": control.name, "load_factor": float(f), "replications": replications}
            for m in _SERVICE_MEASURES:
                row[m] = est[m].value
                row[m + "_ci95"] = _half_width(est[m])
            rows.append(row)
    if out_csv:
        _write_rows(out_csv, rows)
    if out_png:
        save(plot_scp_services(rows, cfg), out_png)
    return rows


def plot_scp_services(rows, cfg):
    """The plot of :func:`figure_scp_services`'s rows: goodput, fairness, effectiveness; one legend below."""
    panels = (("goodput", "goodput (calls/s within the timeout)"), ("fairness", "fairness (Jain, vs 3 : 1)"),
              ("effectiveness", "effectiveness (processor share, timely)"))
    names = list(dict.fromkeys(row["control"] for row in rows))
    # the controls' names in the CSV; the legend says what tells them apart
    legend = {"service windows": "service windows, $ws_i = h_i$",
              "adaptive windows": "service windows, measured $ws_i$",
              "adaptive window": "one shared adaptive window"}
    with new_figure(11, 3.8, 1, 3) as (fig, axes):
        for ax, (key, label) in zip(axes, panels):
            for n, name in enumerate(names):
                pts = [row for row in rows if row["control"] == name]
                ax.errorbar([p["load_factor"] for p in pts], [p[key] for p in pts],
                            yerr=[p[key + "_ci95"] for p in pts], marker="o", color=f"C{n}",
                            label=legend.get(name, name))
            ax.set_xlabel("offered work / capacity")
            ax.set_ylabel(label)
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
        fig.suptitle(f"two services (10 ms, 30 ms), ratios 3 : 1, {cfg.servers} processors, 95% CIs")
    return fig


FIGURES = {"scp-overload": figure_scp, "scp-services": figure_scp_services}


if __name__ == "__main__":  # pragma: no cover
    if "--sensitivity" in sys.argv:
        start = time.perf_counter()
        print(sensitivity_table())
        print(f"\n({time.perf_counter() - start:.0f} s)")
    else:
        print(__doc__)
