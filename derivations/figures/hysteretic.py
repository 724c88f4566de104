"""Figure 3 of Sopin 2013 (chapter 3): E tau_12 and E tau versus rho_0, batch and single arrivals.

Setting of the thesis: L = 73, H = 84, R = 100, deterministic service of 5 ms, lambda_1 =
lambda_0 / 2, batches geometric with l_i = 0.5^i (mean 2) or single arrivals. The thesis
plots rho_0 in [1, 2] only (it says (21) is unusable below 1); the points below 1 are added
here, computed with mpmath at 30 digits (the normal-mode sojourn grows to ~1e32 s at
rho_0 = 0.6, single arrivals; the plot's axis ends at 1e9 s, longer times are marked on its top
edge). The CSV also gives kappa_inf(I - P_0) of (21)
(:func:`qderive.numeric.engines.hysteretic.diagnostics`).

``qderive figure fig3 --out docs/figures/fig3.png --csv docs/figures/fig3.csv``

**The two control policies** (seed 002, abstract 2; ``qderive figure policies``): the Figure-3
setting under ``--policy departure`` (the mode changes at departures, the thesis) and
``--policy instant`` (the mode follows the count at once), analytic on rho_0 = 1.0, 1.1, ..., 2.0
for batches and single arrivals, and simulated (95 % intervals) at rho_0 = 1.2, 1.5, 1.8 with
batches. The CSV is in long form: one row per (arrivals, rho_0, policy, source, measure).

``qderive figure policies --out docs/figures/policies.png --csv docs/figures/policies.csv``
"""

from __future__ import annotations

import csv
import math
from fractions import Fraction

from .style import fit_log_axis, legend_outside, new_figure, save

__all__ = ["FIGURES", "figure3", "figure3_data", "plot_figure3", "plot_policies", "thesis_claims", "FIG3_THRESHOLDS",
           "LOADS_THESIS", "LOADS_BELOW_1", "OFF_SCALE",
           "COLUMNS", "policies_data", "policy_differences", "figure_policies", "POLICY_LOADS", "POLICY_SIM_LOADS",
           "POLICY_MEASURES"]

FIG3_THRESHOLDS = (73, 84, 100)
#: the thesis's range: rho_0 = 1.00, 1.05, ..., 2.00
LOADS_THESIS = tuple(Fraction(100 + 5 * i, 100) for i in range(21))
#: the points the thesis could not compute
LOADS_BELOW_1 = (Fraction(6, 10), Fraction(7, 10), Fraction(8, 10), Fraction(9, 10), Fraction(95, 100))
BELOW_1_DIGITS = 30
#: the top of the extended panel's axis (seconds): longer times (up to 1e32 s) are marked on its edge
OFF_SCALE = 1e9
COLUMNS = ("arrivals", "rho0", "precision", "p_normal", "p_overload", "p_discard", "mean_normal_time",
           "mean_return_time", "mean_cycle_time", "loss_probability", "throughput", "kappa")


def _arrivals() -> dict:
    from ...symbolic.batches import Constant, Geometric

    return {"batch": Geometric(2), "single": Constant(1)}


def figure3_model(batch, load):
    """The model of Figure 3 at offered load rho_0 = ``load`` with ``batch`` arrivals."""
    from ...symbolic.laws import Deterministic
    from ...symbolic.models.hysteretic import HystereticModel

    L, H, R = FIG3_THRESHOLDS
    return HystereticModel.from_load(load, service=Deterministic(Fraction(1, 200)), batch=batch, L=L, H=H, R=R)


def figure3_data(loads_thesis=LOADS_THESIS, loads_below=LOADS_BELOW_1, digits_below=BELOW_1_DIGITS) -> list[dict]:
    """Rows (one per arrival type and rho_0): float64 in the thesis's range, ``digits_below`` digits below 1."""
    from ...numeric.engines.hysteretic import diagnostics

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


def _write_csv(path, columns, rows, cell) -> None:
    """The rows as a CSV file: a header, then ``cell(row, column)`` for each column."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for r in rows:
            writer.writerow([cell(r, c) for c in columns])


def figure3(out_png: str | None, out_csv: str | None) -> None:
    """Draw Figure 3 (PNG) and/or write its data (CSV)."""
    rows = figure3_data()
    if out_csv:
        _write_csv(out_csv, COLUMNS, rows, lambda r, c: _fmt(r[c], r["precision"]))
    if out_png:
        save(plot_figure3(rows), out_png)


def plot_figure3(rows):
    """The Figure-3 plot of ``rows`` (:func:`figure3_data`): left the thesis's range, right extended below 1."""
    colors = {"batch": "C0", "single": "C3"}
    labels = {"batch": "batches, $l_i=0.5^i$", "single": "single arrivals"}
    with new_figure(12, 3.9, 1, 2) as (fig, (ax1, ax2)):
        left, right = [], []
        for name in ("batch", "single"):
            mine = sorted((r for r in rows if r["arrivals"] == name), key=lambda r: r["rho0"])
            x = [float(r["rho0"]) for r in mine]
            t12 = [float(r["mean_return_time"]) for r in mine]
            t = [float(r["mean_cycle_time"]) for r in mine]
            t0 = [float(r["mean_normal_time"]) for r in mine]
            thesis = [k for k, r in enumerate(mine) if r["rho0"] >= 1]
            ax1.plot([x[k] for k in thesis], [t[k] for k in thesis], "-", color=colors[name],
                     label=rf"$\mathrm{{E}}\tau$, {labels[name]}")
            ax1.plot([x[k] for k in thesis], [t12[k] for k in thesis], "--", color=colors[name],
                     label=rf"$\mathrm{{E}}\tau_{{12}}$, {labels[name]}")
            left += [t[k] for k in thesis] + [t12[k] for k in thesis]
            for values, ls, sym in ((t, "-", r"\tau"), (t0, ":", r"\tau_0"), (t12, "--", r"\tau_{12}")):
                shown = [(a, v) for a, v in zip(x, values) if v <= OFF_SCALE]
                ax2.semilogy([a for a, _ in shown], [v for _, v in shown], ls, color=colors[name],
                             label=rf"$\mathrm{{E}}{sym}$, {labels[name]}")
                right += [v for _, v in shown]
                off = [a for a, v in zip(x, values) if v > OFF_SCALE]
                if off:  # beyond the axis: a mark on its top edge (the values are in the CSV)
                    ax2.plot(off, [OFF_SCALE] * len(off), "^", color=colors[name], clip_on=False,
                             label=f"beyond $10^{{{round(math.log10(OFF_SCALE))}}}$ s (values in the CSV)")
            below = [k for k, r in enumerate(mine) if r["rho0"] < 1 and t[k] <= OFF_SCALE]
            ax2.semilogy([x[k] for k in below], [t[k] for k in below], "o", color=colors[name])
        ax1.set_yscale("log")
        fit_log_axis(ax1, left)
        fit_log_axis(ax2, right + [OFF_SCALE])
        ax1.set_xlabel(r"offered load $\rho_0$")
        ax1.set_ylabel("seconds")
        ax1.set_title("thesis range: return time and control cycle")
        ax1.grid(True, which="both")
        legend_outside(ax1, "right")
        below_loads = [float(r["rho0"]) for r in rows if r["rho0"] < 1]
        if below_loads:
            ax2.axvspan(min(below_loads) - 0.02, 1.0, color="0.92", zorder=0,
                        label=f"$\\rho_0 < 1$: mpmath, {BELOW_1_DIGITS} digits")
        ax2.set_xlabel(r"offered load $\rho_0$")
        ax2.set_ylabel("seconds")
        ax2.set_title(r"extended to $\rho_0<1$ (corrected (21))")
        ax2.grid(True, which="both")
        legend_outside(ax2, "right")
        fig.suptitle(r"$M^{[X]}|D|1|(73,84)|(84,100)$, $b=5$ ms, $\lambda_1=\lambda_0/2$")
    return fig


#: the loads of the policy comparison (analytic) and of its simulated check
POLICY_LOADS = tuple(Fraction(10 + i, 10) for i in range(11))
POLICY_SIM_LOADS = (Fraction(6, 5), Fraction(3, 2), Fraction(9, 5))
POLICY_MEASURES = ("p_discard", "mean_normal_time", "mean_return_time", "mean_cycle_time",
                   "mean_time_between_mode_changes", "loss_probability")
POLICY_COLUMNS = ("arrivals", "rho0", "policy", "source", "measure", "value", "ci95_low", "ci95_high")


def policies_data(loads=POLICY_LOADS, sim_loads=POLICY_SIM_LOADS, customers=200_000, replications=10,
                  seed=2024) -> list[dict]:
    """Rows (arrivals, rho0, policy, source, measure, value, ci95_low, ci95_high) of the policy comparison:
    float64 analytic values (both arrival types), then simulated estimates with their 95 % intervals
    (batches, ``customers`` per replication)."""
    from dataclasses import replace

    from ...numeric.simulation.hysteretic import simulate
    from ...symbolic.models.hysteretic import Policy

    rows = []
    for name, batch in _arrivals().items():
        for load in loads:
            for policy in Policy:
                values = replace(figure3_model(batch, load), policy=policy).evaluate().as_dict()
                rows += [{"arrivals": name, "rho0": load, "policy": policy.value, "source": "analytic", "measure": k,
                          "value": float(values[k]), "ci95_low": None, "ci95_high": None} for k in POLICY_MEASURES]
    for load in sim_loads:
        for policy in Policy:
            model = replace(figure3_model(_arrivals()["batch"], load), policy=policy)
            res = simulate(model, customers, replications, seed, quiet=True)
            for k in POLICY_MEASURES:
                est = res.measures[k]
                lo, hi = est.interval(0.95)
                rows.append({"arrivals": "batch", "rho0": load, "policy": policy.value, "source": "simulation",
                             "measure": k, "value": est.value, "ci95_low": lo, "ci95_high": hi})
    return rows


def policy_differences(rows, source="analytic") -> dict:
    """{(arrivals, rho0, measure): instant / departure - 1} from the rows of :func:`policies_data`."""
    by = {(r["arrivals"], r["rho0"], r["policy"], r["measure"]): r["value"] for r in rows if r["source"] == source}
    return {(a, x, k): v / by[(a, x, "departure", k)] - 1 for (a, x, p, k), v in by.items() if p == "instant"}


def figure_policies(out_png: str | None, out_csv: str | None) -> None:
    """Draw the policy comparison (PNG) and/or write its data (CSV)."""
    rows = policies_data()
    if out_csv:
        _write_csv(out_csv, POLICY_COLUMNS, rows, lambda r, c: "" if r[c] is None else str(float(r[c])) if c == "rho0"
                   else repr(r[c]) if isinstance(r[c], float) else r[c])
    if out_png:
        save(plot_policies(rows), out_png)


def plot_policies(rows):
    """The policy comparison of ``rows`` (:func:`policies_data`): E tau, then instant / departure - 1 in %."""
    with new_figure(12.5, 4.6, 1, 3) as (fig, (ax1, ax2, ax3)):
        style = {"departure": "-", "instant": "--"}
        colors = {"batch": "C0", "single": "C3"}
        for name in ("batch", "single"):
            for policy in ("departure", "instant"):
                mine = sorted((r for r in rows if r["source"] == "analytic" and r["arrivals"] == name
                               and r["policy"] == policy and r["measure"] == "mean_cycle_time"),
                              key=lambda r: r["rho0"])
                ax1.plot([float(r["rho0"]) for r in mine], [r["value"] for r in mine], style[policy],
                         color=colors[name], label=rf"$\mathrm{{E}}\tau$, {name}, {policy}")
        for policy, marker in (("departure", "o"), ("instant", "s")):
            sim = [r for r in rows if r["source"] == "simulation" and r["policy"] == policy
                   and r["measure"] == "mean_cycle_time"]
            if sim:
                ax1.errorbar([float(r["rho0"]) for r in sim], [r["value"] for r in sim],
                             yerr=[[r["value"] - r["ci95_low"] for r in sim],
                                   [r["ci95_high"] - r["value"] for r in sim]],
                             fmt=marker, color="k", label=f"simulated (95 %), batch, {policy}")
        ax1.set_yscale("log")
        fit_log_axis(ax1, [r["value"] for r in rows if r["measure"] == "mean_cycle_time"])
        ax1.set_xlabel(r"offered load $\rho_0$")
        ax1.set_ylabel("seconds")
        ax1.set_title(r"control cycle $\mathrm{E}\tau$")
        ax1.grid(True, which="both")
        legend_outside(ax1, "below", ncol=2)
        diff = policy_differences(rows)
        loads = sorted({x for (_, x, _) in diff})
        labels = {"mean_normal_time": r"$\mathrm{E}\tau_0$", "mean_return_time": r"$\mathrm{E}\tau_{12}$",
                  "mean_cycle_time": r"$\mathrm{E}\tau$", "mean_time_between_mode_changes": "time between mode changes",
                  "p_discard": r"$P(S_2)$"}
        for name, ls in (("batch", "-"), ("single", "--")):
            for key, col in zip(labels, ("C2", "C1", "C0", "C4")):
                if key == "p_discard":
                    continue
                ax2.plot([float(x) for x in loads], [100 * diff[(name, x, key)] for x in loads], ls, color=col,
                         label=f"{labels[key]}, {name}")
            ax3.plot([float(x) for x in loads], [100 * diff[(name, x, "p_discard")] for x in loads], ls, color="C3",
                     label=f"{labels['p_discard']}, {name}")
        for ax, title in ((ax2, "times: instant / departure $-\\,1$"),
                          (ax3, "$P(S_2)$: instant / departure $-\\,1$")):
            ax.axhline(0, color="0.5", lw=0.8)
            ax.set_xlabel(r"offered load $\rho_0$")
            ax.set_ylabel("%")
            ax.set_title(title)
            legend_outside(ax, "below", ncol=2)
        fig.suptitle(r"two control policies, $M^{[X]}|D|1|(73,84)|(84,100)$, $b=5$ ms, $\lambda_1=\lambda_0/2$")
    return fig


FIGURES = {"fig3": figure3, "policies": figure_policies}
