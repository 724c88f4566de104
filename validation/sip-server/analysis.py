"""The measured points of ``harness.py`` against qderive: ``points.json``, the comparison CSV and the figure.

``python validation/sip-server/analysis.py`` reads ``data/runs.jsonl``, ``data/*_times.csv``,
``data/capacity.json`` and ``data/settings.json`` and writes

* ``data/points.json``: per control and offered load, the measured means with their 95 % intervals (batch means
  over every replication: ``--batches`` batches per run) and the inputs the models get, all measured on the
  server itself: the new-transaction rate lambda_0, the mean and squared coefficient of variation of the
  worker's busy cycle per request (the service time, kernel scheduling included), the cost of an absorbed
  copy (``--duplicate-cost``) and the socket's capacity in messages;
* ``docs/figures/sip-server.csv`` and ``docs/figures/sip-server.png``: prediction beside measurement.

:func:`predict` is the one place the predictions are computed; ``tests/test_sip_server_validation.py`` calls it
for the committed points.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import re
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# without control, below this load the socket's room (410 messages) is as good as unlimited: the M/G/1 queue
# reaches K copies with probability about rho^K < 0.95^410 = 7e-10, and the infinite-room route costs a second
# where the finite room of 410 costs minutes
UNLIMITED_BELOW = 0.95
QUANTILES = ("0.5", "0.9", "0.99")
TAIL_TIMES = ("0.01", "0.02", "0.05", "0.1", "0.2")
# response-time grid for the model's quantiles (s): P(R > t) at these times, interpolated in log(t)
GRID = tuple(round(x, 6) for x in np.geomspace(0.002, 5.0, 40))
# t quantiles (two-sided 95 %) for small degrees of freedom
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 19: 2.093, 23: 2.069, 31: 2.040}


def t975(df: int) -> float:
    if df in _T975:
        return _T975[df]
    keys = sorted(_T975)
    return _T975[max(k for k in keys if k <= df)] if df > 1 else _T975[1]


def interval(values) -> dict | None:
    """Mean and 95 % half-width (Student t over the batch means)."""
    v = np.array([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], float)
    if len(v) < 2:
        return None
    return {"mean": float(v.mean()), "half_width": float(t975(len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))),
            "n": int(len(v))}


def _rat(x: float, digits: int = 4) -> str:
    """A measured number as the exact decimal qderive reads (4 significant digits: far below the noise)."""
    return f"{float(f'{x:.{digits}g}'):.10g}"


def aggregate(data: Path) -> dict:
    runs = [json.loads(x) for x in (data / "runs.jsonl").read_text().splitlines() if x.strip()]
    settings = json.loads((data / "settings.json").read_text())
    cap = json.loads((data / "capacity.json").read_text())
    svc = np.loadtxt(data / "service_times.csv", delimiter=",", skiprows=1, ndmin=2)
    dup = np.loadtxt(data / "duplicate_times.csv", delimiter=",", skiprows=1, ndmin=2)
    rej = np.loadtxt(data / "reject_times.csv", delimiter=",", skiprows=1, ndmin=2)
    dup_mean = float(dup[:, 1].mean()) if len(dup) else None
    rej_mean = float(rej[:, 1].mean()) if len(rej) else None
    keys = sorted({(r["control"], r["load_nominal"]) for r in runs}, key=lambda k: (k[0] != "none", k[1]))
    points = []
    for control, load in keys:
        idx = [i for i, r in enumerate(runs) if r["control"] == control and r["load_nominal"] == load]
        rs = [runs[i] for i in idx]
        s = svc[np.isin(svc[:, 0], idx), 1]
        batches = [b for r in rs for b in r["batches"]]
        meas = {
            "rate": interval([b["rate"] for b in batches]),
            "goodput": interval([b["goodput"] for b in batches]),
            "fraction_503": interval([b["fraction_503"] for b in batches]),
            "fraction_timeout": interval([b["fraction_timeout"] for b in batches]),
            "retransmissions_per_transaction": interval([b["retransmissions_per_transaction"] for b in batches]),
            "response_quantiles_s": {q: interval([b["response_quantiles_s"][q] for b in batches]) for q in QUANTILES},
            "response_tail": {t: interval([b["response_tail"][t] for b in batches]) for t in TAIL_TIMES},
        }
        points.append({
            "control": control, "thresholds": rs[0]["thresholds"], "load_nominal": load, "runs": len(rs),
            "inputs": {"rate": float(np.mean([r["rate_measured"] for r in rs])),
                       "service_mean": float(s.mean()), "service_scv": float(s.var() / s.mean() ** 2),
                       "service_n": int(len(s)), "duplicate_cost": dup_mean / float(s.mean()) if dup_mean else None,
                       "reject_cost_s": rej_mean, "capacity": cap["capacity_messages"]},
            "measured": meas,
            "arrivals": {k: float(np.mean([r["arrivals"][k] for r in rs if r["arrivals"][k] is not None]))
                         for k in rs[0]["arrivals"]},
            "sipp_repartition": rs[0]["sipp_repartition_final"],
            "copies_received_per_callid": float(np.mean([r["copies_received_per_callid"] for r in rs])),
            "loadavg": [r["loadavg_after"].split()[0] for r in rs],
        })
    long_points = []
    if (data / "long_runs.jsonl").exists():
        # longer runs without control above capacity (harness.py --controls none --loads 1.25,2 --reps 1
        # --duration 40 --warmup 20): the first 20 s not counted, so that the socket is full and Timer F has run
        for r in (json.loads(x) for x in (data / "long_runs.jsonl").read_text().splitlines() if x.strip()):
            mb = r["service_cycle"]["mean"]
            b = r["batches"]
            long_points.append({
                "control": "none", "thresholds": None, "load_nominal": r["load_nominal"], "runs": 1,
                "window_s": r["window_s"],
                "inputs": {"rate": r["rate_measured"], "service_mean": mb, "service_scv": r["service_cycle"]["scv"],
                           "service_n": r["service_cycle"]["n"],
                           "duplicate_cost": r["duplicate_cycle"]["mean"] / mb, "capacity": cap["capacity_messages"]},
                "measured": {
                    "goodput": interval([x["goodput"] for x in b]),
                    "fraction_timeout": interval([x["fraction_timeout"] for x in b]),
                    "retransmissions_per_transaction": interval([x["retransmissions_per_transaction"] for x in b]),
                    "response_quantiles_s": {q: interval([x["response_quantiles_s"][q] for x in b]) for q in QUANTILES}},
                "loadavg": [r["loadavg_after"].split()[0]]})
    return {"long_points": long_points, "settings": {k: settings[k] for k in ("t1", "t2", "max_retrans", "client_timeout_s", "thresholds",
                                                  "service_mean", "service_shape", "duration", "warmup",
                                                  "duration_control", "warmup_control", "reps", "batches",
                                                  "pause", "versions", "calibration", "started_utc",
                                                  "loadavg_start", "loadavg_end") if k in settings},
            "capacity": cap, "points": points}


def model_args(point: dict, settings: dict) -> list[str]:
    """The ``qderive eval sip-retransmission`` options for one point: every number measured on the server."""
    inp = point["inputs"]
    shape = 1.0 / inp["service_scv"]
    args = ["--rate", _rat(inp["rate"]), "--service", f"gamma:shape={_rat(shape, 3)},mean={_rat(inp['service_mean'])}",
            "--method", "non-invite", "--t1", _rat(settings["t1"]), "--t2", _rat(settings["t2"]),
            "--timeout", _rat(settings["client_timeout_s"])]
    if point["control"] == "503":
        args += ["--control", "503", "--thresholds", ",".join(str(x) for x in point["thresholds"])]
    elif inp["rate"] * inp["service_mean"] >= UNLIMITED_BELOW:
        args += ["--capacity", str(inp["capacity"])]
    if inp["duplicate_cost"]:
        args += ["--duplicate-cost", _rat(min(inp["duplicate_cost"], 1.0), 3)]
    return args


def qderive_json(argv: list[str]) -> dict:
    """One ``qderive`` command, in process, its JSON output."""
    from qderive.derivations.cli import main  # noqa: PLC0415

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv + ["--json"])
    if code not in (0, None):
        raise RuntimeError(f"qderive {' '.join(argv)} exited with {code}")
    return json.loads(out.getvalue())


def quantile_from_tail(tail: dict, p: float, unanswered: float = 0.0) -> float | None:
    """The p-quantile of the response time of an answered transaction from qderive's P(R > t) on GRID, which is
    over all transactions (a rejected or timed-out one has R = infinity): P(R > t | answered) =
    (P(R > t) - P(unanswered)) / (1 - P(unanswered)); linear in log t between grid points."""
    ts = np.array([float(t) for t in tail])
    ps = np.array([(float(tail[t]) - unanswered) / (1.0 - unanswered) for t in tail])
    order = np.argsort(ts)
    ts, ps = ts[order], ps[order]
    target = 1.0 - p
    for i in range(len(ts)):
        if ps[i] <= target:
            if i == 0:
                return float(ts[0])
            a, b = ps[i - 1], ps[i]
            w = (a - target) / (a - b) if a != b else 0.0
            return float(math.exp(math.log(ts[i - 1]) + w * (math.log(ts[i]) - math.log(ts[i - 1]))))
    return None


def predict(point: dict, settings: dict, scan_points: int = 16) -> dict:
    """qderive's prediction for one measured point.

    ``sip-retransmission`` (the fixed point lambda = lambda_0 E[copies](lambda); docs/guides/sip-retransmission.md)
    with non-INVITE timers, the measured lambda_0, a gamma law with the measured mean and squared coefficient of
    variation of the worker's cycle, the measured cost of an absorbed copy as ``--duplicate-cost``, and either the
    503 control with the configured thresholds or the socket's measured capacity. The response-time quantiles are
    read off P(R > t) on a grid. Goodput in transactions per second; retransmissions per transaction
    E[copies] - 1.
    """
    argv = ["eval", "sip-retransmission"] + model_args(point, settings) + [
        "--scan-points", str(scan_points), "--response-tail", ",".join(f"{t:g}" for t in GRID)]
    res = qderive_json(argv)["measures"]
    tail = res.get("response_tail", {})
    rate = float(point["inputs"]["rate"])
    lost = float(res.get("reject_probability", 0.0)) + float(res["timeout_probability"])
    return {
        "goodput": float(res["goodput"]),
        "fraction_503": float(res.get("reject_probability", 0.0)),
        "fraction_timeout": float(res["timeout_probability"]),
        "retransmissions_per_transaction": float(res["mean_copies"]) - 1.0,
        "response_quantiles_s": {q: quantile_from_tail(tail, float(q), lost) for q in QUANTILES},
        "fixed_points": len(res.get("solutions", [])) or 1,
        "utilization": float(res["utilization"]) if "utilization" in res else None,
        "offered_rate": float(res["offered_rate"]),
        "rate": rate,
        "command": "qderive " + " ".join(argv),
    }


def simulate(point: dict, settings: dict, customers: int = 30000, replications: int = 4) -> dict:
    """qderive's transaction simulator (``qderive simulate sip-retransmission``: every transaction on its own
    timers, no mean-field approximation) with the same options as :func:`predict`: where the fixed point with the
    socket's room of 410 copies costs minutes, this costs seconds, and it measures the fixed point's own error."""
    argv = ["simulate", "sip-retransmission"] + model_args(point, settings) + [
        "--customers", str(customers), "--replications", str(replications), "--seed", "29"]
    res = qderive_json(argv)["measures"]

    def est(key, shift=0.0):
        v = res[key]
        return {"mean": v["estimate"] + shift, "ci95": [v["ci95"][0] + shift, v["ci95"][1] + shift]}
    return {"goodput": est("goodput"), "fraction_timeout": est("timeout_probability"),
            "fraction_503": est("reject_probability"),
            "retransmissions_per_transaction": est("mean_copies", -1.0), "command": "qderive " + " ".join(argv)}


def finite_room(point: dict, data: Path) -> dict | None:
    """The finite room alone, without the fixed point: M/G/1/K (``vacation-finite``, no vacation, the point's
    measured work of the admitted copies (first copies and absorbed ones) as an ``empirical:`` law, rounded to
    10 us, and r = K - 1 waiting places with K the
    measured socket capacity), fed with the copy rate SIPp measured, lambda_0 (1 + retransmissions per
    transaction): the fraction of copies the socket drops and the mean wait of an admitted copy, against the
    copies the server saw per transaction (``copies_received_per_callid``)."""
    if point["control"] != "none" or point["measured"]["retransmissions_per_transaction"] is None:
        return None
    copies = 1.0 + point["measured"]["retransmissions_per_transaction"]["mean"]
    lam = point["inputs"]["rate"] * copies
    runs = [json.loads(x) for x in (data / "runs.jsonl").read_text().splitlines() if x.strip()]
    idx = [i for i, r in enumerate(runs) if r["control"] == "none" and r["load_nominal"] == point["load_nominal"]]
    svc = np.loadtxt(data / "service_times.csv", delimiter=",", skiprows=1, ndmin=2)
    dup = np.loadtxt(data / "duplicate_times.csv", delimiter=",", skiprows=1, ndmin=2)
    # the work of every admitted copy: the first copies' cycles and the absorbed copies' cycles, in the
    # proportion the server met them
    sample = np.round(np.concatenate([svc[np.isin(svc[:, 0], idx), 1], dup[np.isin(dup[:, 0], idx), 1]]), 5)
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "service.csv"
        np.savetxt(f, sample, fmt="%.5f")
        res = qderive_json(["eval", "vacation-finite", "--rate", _rat(lam), "--batch", "const:n=1",
                            "--service", f"empirical:file={f}", "--vacation", "none",
                            "--capacity", str(point["inputs"]["capacity"] - 1)])["measures"]
    received = point["copies_received_per_callid"]
    return {"copy_rate": lam, "loss_probability": float(res["loss_probability"]),
            "mean_wait_s": float(res["mean_wait"]), "measured_loss": 1.0 - received / copies,
            "copies_sent_per_transaction": copies, "copies_received_per_transaction": received}


ROWS = ("goodput", "fraction_503", "fraction_timeout", "retransmissions_per_transaction")


def comparison_rows(points: dict, preds: list[dict]) -> list[dict]:
    rows = []
    for pt, pr in zip(points["points"], preds):
        row = {"control": pt["control"], "load": pt["load_nominal"], "rate": pt["inputs"]["rate"],
               "service_mean_ms": pt["inputs"]["service_mean"] * 1e3, "service_scv": pt["inputs"]["service_scv"]}
        for key in ROWS:
            m = pt["measured"][key]
            row[f"{key}_measured"] = m["mean"] if m else None
            row[f"{key}_hw"] = m["half_width"] if m else None
            row[f"{key}_model"] = pr[key] if pr else None
            sim = pt.get("simulated")
            row[f"{key}_simulated"] = sim[key]["mean"] if sim else None
        for q in QUANTILES:
            m = pt["measured"]["response_quantiles_s"][q]
            row[f"r{q}_measured_ms"] = m["mean"] * 1e3 if m else None
            row[f"r{q}_hw_ms"] = m["half_width"] * 1e3 if m else None
            v = pr["response_quantiles_s"][q] if pr else None
            row[f"r{q}_model_ms"] = v * 1e3 if v else None
        rows.append(row)
    return rows


def figure(rows: list[dict], path: Path) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    panels = [("goodput", "goodput / capacity", True), ("retransmissions_per_transaction",
              "retransmissions per transaction", False), ("fraction_503", "503 / timeout fraction", False),
              ("r0.9", "response time p50 / p90 (ms)", False)]
    style = {"none": ("tab:red", "no control"), "503": ("tab:blue", "503 (L,H)")}
    for ax, (key, label, per_cap) in zip(axes.flat, panels):
        for control, (color, name) in style.items():
            rs = [r for r in rows if r["control"] == control]
            if not rs:
                continue
            x = [r["load"] for r in rs]
            if key.startswith("r0"):
                for q, mk in (("0.5", "o"), ("0.9", "s")):
                    ax.errorbar(x, [r[f"r{q}_measured_ms"] for r in rs], yerr=[r[f"r{q}_hw_ms"] for r in rs],
                                fmt=mk, color=color, ms=4, capsize=2, label=f"{name} p{int(float(q) * 100)} measured")
                    xm = [r["load"] for r in rs if r[f"r{q}_model_ms"] is not None]
                    ax.plot(xm, [r[f"r{q}_model_ms"] for r in rs if r[f"r{q}_model_ms"] is not None],
                            "-" if q == "0.9" else "--", color=color)
                ax.set_yscale("log")
                continue
            cap = [1.0 / (r["service_mean_ms"] * 1e-3) if per_cap else 1.0 for r in rs]
            keys = [key] if key != "fraction_503" else (["fraction_503"] if control == "503" else ["fraction_timeout"])
            for k in keys:
                ax.errorbar(x, [r[f"{k}_measured"] / c for r, c in zip(rs, cap)],
                            yerr=[(r[f"{k}_hw"] or 0) / c for r, c in zip(rs, cap)], fmt="o", color=color, ms=4,
                            capsize=2, label=f"{name} measured" + (" (timeouts)" if k == "fraction_timeout" else ""))
                sims = [(r["load"], r[f"{k}_simulated"] / c) for r, c in zip(rs, cap)
                        if r.get(f"{k}_simulated") is not None]
                if sims:
                    ax.plot([a for a, _ in sims], [b for _, b in sims], "D", mfc="none", color=color, ms=6,
                            label=f"{name} qderive simulated")
                ok = [(r["load"], r[f"{k}_model"] / c) for r, c in zip(rs, cap) if r[f"{k}_model"] is not None]
                ax.plot([a for a, _ in ok], [b for _, b in ok], "-", color=color, label=f"{name} qderive")
        ax.set_xlabel("offered load (new transactions x E[B])")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Kamailio 5.6 (one UDP worker) under SIPp load on 127.0.0.1: measured (95 % intervals) "
                 "and qderive", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _pm(m, scale=1.0, fmt="{:.3f}"):
    if not m:
        return "-"
    return (fmt + " ± " + fmt).format(m["mean"] * scale, m["half_width"] * scale)


def _v(x, scale=1.0, fmt="{:.3f}"):
    return "-" if x is None else fmt.format(x * scale)


def markdown_tables(points: dict) -> str:
    """The guide's tables, from points.json: measured (95 % interval) against qderive, per point."""
    out = ["| control | load | lambda_0 /s | E[B] ms (SCV) | goodput / capacity, measured | qderive "
           "| 503 fraction, measured | qderive | timeouts, measured | qderive "
           "| retransmissions / transaction, measured | qderive |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for pt in points["points"]:
        m, pr, i = pt["measured"], pt.get("prediction"), pt["inputs"]
        cap = 1.0 / i["service_mean"]
        out.append(f"| {pt['control']} | {pt['load_nominal']} | {i['rate']:.1f} | {i['service_mean'] * 1e3:.2f} "
                   f"({i['service_scv']:.2f}) | {_pm(m['goodput'], 1 / cap)} | "
                   f"{_v(pr and pr['goodput'], 1 / cap)} | {_pm(m['fraction_503'])} | "
                   f"{_v(pr and pr['fraction_503'])} | {_pm(m['fraction_timeout'])} | "
                   f"{_v(pr and pr['fraction_timeout'])} | {_pm(m['retransmissions_per_transaction'], 1, '{:.2f}')} | "
                   f"{_v(pr and pr['retransmissions_per_transaction'], 1, '{:.2f}')} |")
    out += ["", "| control | load | p50 ms, measured | qderive | p90 ms, measured | qderive | p99 ms, measured "
            "| qderive | arrivals: CV | KS | dispersion 100 ms | 10 ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for pt in points["points"]:
        m, pr, a = pt["measured"]["response_quantiles_s"], pt.get("prediction"), pt["arrivals"]
        cells = []
        for q in QUANTILES:
            cells += [_pm(m[q], 1e3, "{:.1f}"), _v(pr and pr["response_quantiles_s"][q], 1e3, "{:.1f}")]
        out.append(f"| {pt['control']} | {pt['load_nominal']} | " + " | ".join(cells)
                   + f" | {a['interarrival_cv']:.2f} | {a['ks_exponential']:.2f} | {a['counts_100ms_dispersion']:.2f}"
                   f" | {a['counts_10ms_dispersion']:.2f} |")
    out += ["", "| load | goodput / capacity: measured | fixed point | simulated | timeouts: measured | fixed point "
            "| simulated | retransmissions / transaction: measured | fixed point | simulated |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for pt in points["points"]:
        sim = pt.get("simulated")
        if not sim:
            continue
        m, pr = pt["measured"], pt.get("prediction")
        cap = 1.0 / pt["inputs"]["service_mean"]

        def ci(v, scale=1.0, fmt="{:.3f}"):
            return (fmt + " ({}-{})").format(v["mean"] * scale, *(fmt.format(x * scale) for x in v["ci95"]))
        out.append(f"| {pt['load_nominal']} | {_pm(m['goodput'], 1 / cap)} | {_v(pr and pr['goodput'], 1 / cap)} | "
                   f"{ci(sim['goodput'], 1 / cap)} | {_pm(m['fraction_timeout'])} | "
                   f"{_v(pr and pr['fraction_timeout'])} | {ci(sim['fraction_timeout'])} | "
                   f"{_pm(m['retransmissions_per_transaction'], 1, '{:.2f}')} | "
                   f"{_v(pr and pr['retransmissions_per_transaction'], 1, '{:.2f}')} | "
                   f"{ci(sim['retransmissions_per_transaction'], 1, '{:.2f}')} |")
    if points.get("long_points"):
        out += ["", "| long run, load | lambda_0 /s | E[B] ms | goodput / capacity: measured | simulated | timeouts: "
                "measured | simulated | retransmissions / transaction: measured | simulated | median response s |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for pt in points["long_points"]:
            m, sim, i = pt["measured"], pt["simulated"], pt["inputs"]
            cap = 1.0 / i["service_mean"]
            out.append(f"| {pt['load_nominal']} | {i['rate']:.1f} | {i['service_mean'] * 1e3:.2f} | "
                       f"{_pm(m['goodput'], 1 / cap)} | {sim['goodput']['mean'] / cap:.3f} | "
                       f"{_pm(m['fraction_timeout'])} | {sim['fraction_timeout']['mean']:.3f} | "
                       f"{_pm(m['retransmissions_per_transaction'], 1, '{:.2f}')} | "
                       f"{sim['retransmissions_per_transaction']['mean']:.2f} | "
                       f"{_pm(m['response_quantiles_s']['0.5'], 1, '{:.2f}')} |")
    out += ["", "| load | copies sent / transaction (SIPp) | received by the server | socket loss, measured "
            "| M/G/1/K with the measured copy rate | its mean wait s |", "|---:|---:|---:|---:|---:|---:|"]
    for pt in points["points"]:
        fr = pt.get("finite_room")
        if fr:
            out.append(f"| {pt['load_nominal']} | {fr['copies_sent_per_transaction']:.2f} | "
                       f"{fr['copies_received_per_transaction']:.2f} | {fr['measured_loss']:.3f} | "
                       f"{fr['loss_probability']:.3f} | {fr['mean_wait_s']:.3f} |")
    out += ["", _repartition_table(points["points"])]
    return "\n".join(out)


def _repartition_table(points: list) -> str:
    """SIPp's own ResponseTimeRepartition (its statistics file, the first run of each point, the whole run with
    its warm-up): the share of the answered transactions in each bin of response time, in per cent."""
    key = "ResponseTimeRepartition1_"
    bins = [k[len(key):] for k in points[0]["sipp_repartition"]]
    out = ["| control | load | " + " | ".join(f"{b} ms" for b in bins) + " |",
           "|---|---:|" + "---:|" * len(bins)]
    for pt in points:
        counts = [pt["sipp_repartition"][key + b] for b in bins]
        total = sum(counts) or 1
        out.append(f"| {pt['control']} | {pt['load_nominal']} | "
                   + " | ".join(f"{100 * c / total:.1f}" for c in counts) + " |")
    return "\n".join(out)


def _unscanned(command: str) -> str:
    """A prediction's command without its scan density (it only decides how finely the fixed points are sought)."""
    return re.sub(r" --scan-points \d+", "", command)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=HERE / "data")
    p.add_argument("--figures", type=Path, default=ROOT / "docs" / "figures")
    p.add_argument("--scan-points", type=int, default=16)
    p.add_argument("--finite-room-budget", choices=("compute", "cached", "skip"), default="cached",
                   help="points whose model needs the socket's finite room of K copies (no control, load >= "
                   f"{UNLIMITED_BELOW}): compute (minutes of CPU per point), take the prediction from --cache or "
                   "from the existing points.json (the same command) when there, or skip")
    p.add_argument("--cache", type=Path, default=None, help="directory of predictions computed before by "
                   "predict() (files none-LOAD.json)")
    p.add_argument("--tables", action="store_true", help="print the guide's tables from data/points.json")
    args = p.parse_args(argv)
    if args.tables:
        print(markdown_tables(json.loads((args.data / "points.json").read_text())))
        return 0
    # predictions computed before for the same command (the committed points.json) are reused for the slow points
    before = {}
    if (args.data / "points.json").exists():
        for old in json.loads((args.data / "points.json").read_text())["points"]:
            if old.get("prediction"):
                before[_unscanned(old["prediction"]["command"])] = old["prediction"]
    points = aggregate(args.data)
    preds = []
    for pt in points["points"]:
        slow = "--capacity" in model_args(pt, points["settings"])
        cached = args.cache / f"{pt['control']}-{pt['load_nominal']}.json" if args.cache else None
        command = "qderive " + " ".join(["eval", "sip-retransmission"] + model_args(pt, points["settings"]) + [
            "--scan-points", str(args.scan_points), "--response-tail", ",".join(f"{t:g}" for t in GRID)])
        if slow and args.finite_room_budget != "compute":
            if args.finite_room_budget == "cached" and cached is not None and cached.exists():
                pr = json.loads(cached.read_text())
            elif args.finite_room_budget == "cached" and _unscanned(command) in before:
                pr = before[_unscanned(command)]
            else:
                pr = None
        else:
            pr = predict(pt, points["settings"], args.scan_points)
        pt["prediction"] = pr
        if slow:
            pt["simulated"] = simulate(pt, points["settings"])
        fr = finite_room(pt, args.data)
        if fr:
            pt["finite_room"] = fr
        preds.append(pr)
        print(pt["control"], pt["load_nominal"], {k: pr[k] for k in ROWS} if pr else None, flush=True)
    for pt in points["long_points"]:
        pt["simulated"] = simulate(pt, points["settings"])
    (args.data / "points.json").write_text(json.dumps(points, indent=1) + "\n")
    rows = comparison_rows(points, preds)
    import csv  # noqa: PLC0415

    with open(args.figures / "sip-server.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    figure(rows, args.figures / "sip-server.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
