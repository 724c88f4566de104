"""Figure 3 of Sopin 2013 (chapter 3): E tau_12 and E tau versus rho_0, batch and single arrivals.

Setting of the thesis: L = 73, H = 84, R = 100, deterministic service of 5 ms, lambda_1 =
lambda_0 / 2, batches geometric with l_i = 0.5^i (mean 2) or single arrivals. The thesis
plots rho_0 in [1, 2] only (it says (21) is unusable below 1); the points below 1 are added
here, computed with mpmath at 30 digits (the normal-mode sojourn grows to ~1e32 s at
rho_0 = 0.6, single arrivals). The CSV also gives kappa_inf(I - P_0) of (21)
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
from fractions import Fraction

__all__ = ["FIGURES", "figure3", "figure3_data", "thesis_claims", "FIG3_THRESHOLDS", "LOADS_THESIS", "LOADS_BELOW_1",
           "COLUMNS", "policies_data", "policy_differences", "figure_policies", "POLICY_LOADS", "POLICY_SIM_LOADS",
           "POLICY_MEASURES"]

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

    from qderive.numeric.simulation.hysteretic import simulate
    from qderive.symbolic.models.hysteretic import Policy

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
        _plot_policies(rows, out_png)


def _plot_policies(rows, out_png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4.6))
    style = {"departure": "-", "instant": "--"}
    colors = {"batch": "tab:blue", "single": "tab:red"}
    for name in ("batch", "single"):
        for policy in ("departure", "instant"):
            mine = sorted((r for r in rows if r["source"] == "analytic" and r["arrivals"] == name
                           and r["policy"] == policy and r["measure"] == "mean_cycle_time"), key=lambda r: r["rho0"])
            ax1.plot([float(r["rho0"]) for r in mine], [r["value"] for r in mine], style[policy], color=colors[name],
                     label=rf"$E\tau$, {name}, {policy}")
    for policy, marker in (("departure", "o"), ("instant", "s")):
        sim = [r for r in rows if r["source"] == "simulation" and r["policy"] == policy
               and r["measure"] == "mean_cycle_time"]
        ax1.errorbar([float(r["rho0"]) for r in sim], [r["value"] for r in sim],
                     yerr=[[r["value"] - r["ci95_low"] for r in sim], [r["ci95_high"] - r["value"] for r in sim]],
                     fmt=marker, color="k", ms=4, capsize=3, label=f"simulated (95 %), batch, {policy}")
    ax1.set_yscale("log")
    ax1.set_xlabel(r"offered load $\rho_0$")
    ax1.set_ylabel("seconds")
    ax1.set_title(r"control cycle $E\tau$")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7)
    diff = policy_differences(rows)
    loads = sorted({x for (_, x, _) in diff})
    labels = {"mean_normal_time": r"$E\tau_0$", "mean_return_time": r"$E\tau_{12}$", "mean_cycle_time": r"$E\tau$",
              "mean_time_between_mode_changes": "time between mode changes", "p_discard": r"$P(S_2)$"}
    for name, ls in (("batch", "-"), ("single", "--")):
        for key, col in zip(labels, ("tab:green", "tab:orange", "tab:blue", "tab:purple")):
            if key == "p_discard":
                continue
            ax2.plot([float(x) for x in loads], [100 * diff[(name, x, key)] for x in loads], ls, color=col,
                     label=f"{labels[key]}, {name}")
        ax3.plot([float(x) for x in loads], [100 * diff[(name, x, "p_discard")] for x in loads], ls, color="tab:red",
                 label=f"{labels['p_discard']}, {name}")
    for ax, title in ((ax2, "times: instant / departure - 1"), (ax3, "discard probability: instant / departure - 1")):
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_xlabel(r"offered load $\rho_0$")
        ax.set_ylabel("%")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(r"two control policies, $M^{[X]}|D|1|(73,84)|(84,100)$, $b=5$ ms, $\lambda_1=\lambda_0/2$")
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


FIGURES = {"fig3": figure3, "policies": figure_policies}
