"""Kamailio under SIPp load on 127.0.0.1: the measurements that docs/guides/sip-server.md compares with qderive.

Run it with ``validation/sip-server/run.sh`` (installs kamailio and sip-tester with apt if missing, then calls
this file). Every process it starts runs in its own session and is killed on exit, on error and on timeout;
every socket it uses is on 127.0.0.1; every run is bounded in time.

Steps (each writes under ``--out``, default ``validation/sip-server/data``):

1. ``capacity``: the UDP socket's real capacity in messages. The worker is held in a 1.5 s ``usleep`` by one
   blocking request; a burst of ``--burst`` requests of the scenario's size (and a second burst of ~1 kB
   requests: the buffer is counted in bytes of kernel memory, not in messages) is sent meanwhile, and the
   requests the worker later answers are counted; the socket's drop counter (``/proc/net/udp``) is read too.
2. ``runs``: for every control (``none``; ``503`` with hysteresis ``L,H``) and offered load, ``--reps``
   replications of ``--duration`` seconds of SIPp load (non-INVITE OPTIONS transactions, RFC 3261 Timer E/F
   scaled by ``--t1``), each with a fresh Kamailio. Per run: the client's send and response stamps of every
   transaction (SIPp ``<log>``), SIPp's periodic statistics (retransmissions, response-time repartition),
   the server's per-copy log (start and completion of the route, in microseconds), ``/proc/loadavg``.

The raw logs are reduced at once to one JSON record per run (``runs.jsonl``) plus the service-time sample
(``service_times.csv``: busy-period cycles of admitted first copies, the time the worker really spent per
request, kernel scheduling included). ``analysis.py`` turns them into the comparison.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HOST = "127.0.0.1"  # the only address this harness ever uses
MPATHS = ["/usr/lib/x86_64-linux-gnu/kamailio/modules/", "/usr/lib/kamailio/modules/",
          "/usr/lib64/kamailio/modules/", "/usr/local/lib64/kamailio/modules/"]

_CHILDREN: list[subprocess.Popen] = []


def _kill(proc: subprocess.Popen) -> None:
    """Stop one process group this harness started: SIGTERM, then SIGKILL after 3 s."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=3)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=3)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


def _cleanup() -> None:
    while _CHILDREN:
        _kill(_CHILDREN.pop())


atexit.register(_cleanup)
for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, lambda s, f: sys.exit(128 + s))


def _start(cmd: list[str], log: Path, cwd: Path) -> subprocess.Popen:
    fh = open(log, "wb")
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                            start_new_session=True)
    _CHILDREN.append(proc)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    _kill(proc)
    if proc in _CHILDREN:
        _CHILDREN.remove(proc)


def _port_busy(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind((HOST, port))
        return False
    except OSError:
        return True
    finally:
        s.close()


# ------------------------------------------------------------------------------------------------ server

def service_draws(mean_us: float, shape: int, n: int, seed: int) -> list[int]:
    """The table of drawn service times (Erlang-``shape`` of mean ``mean_us`` microseconds) the route cycles
    through: the time the worker sleeps per request; what it really spends is measured."""
    rng = np.random.default_rng(seed)
    return [int(round(x)) for x in rng.gamma(shape, mean_us / shape, n)]


def kamailio_cfg(args, t0: int, control: str, thresholds: tuple[int, int], work: str) -> str:
    """The configuration from ``kamailio.cfg.in``: one UDP worker, its port, the control and the work."""
    mpath = next((p for p in MPATHS if os.path.isdir(p)), None)
    if mpath is None:
        raise SystemExit("harness: no kamailio module directory found (looked in %s)" % ", ".join(MPATHS))
    low, high = thresholds
    text = (HERE / "kamailio.cfg.in").read_text()
    draws = service_draws(args.service_mean * 1e6, args.service_shape, 2048, args.seed)
    init = ",".join(str(d) for d in draws)
    subst = {"@T0@": str(t0), "@H@": str(high), "@LP1@": str(low + 1), "@PORT@": str(args.port),
             "@MAXBUFFER@": str(args.maxbuffer), "@MPATH@": mpath, "@WORK@": work, "@DRAWS@": init,
             "@NDRAWS@": str(len(draws)),
             "@CONTROL_DEFINE@": "#!define CONTROL" if control == "503" else "# no control"}
    for k, v in subst.items():
        text = text.replace(k, v)
    return text


class Kamailio:
    """One foreground Kamailio (``-DD -E``) with its own configuration, runtime directory and pid file."""

    def __init__(self, args, workdir: Path, cfg_text: str):
        self.dir = workdir
        self.cfg = workdir / "kamailio.cfg"
        self.cfg.write_text(cfg_text)
        self.log = workdir / "kamailio.log"
        (workdir / "run").mkdir(exist_ok=True)
        self.cmd = ["kamailio", "-f", str(self.cfg), "-DD", "-E", "-m", "64", "-M", "8",
                    "-P", str(workdir / "run" / "kamailio.pid"), "-Y", str(workdir / "run")]
        self.proc = None
        self.args = args

    def __enter__(self):
        if _port_busy(self.args.port):
            raise SystemExit(f"harness: udp {HOST}:{self.args.port} is already in use (--port)")
        self.proc = _start(self.cmd, self.log, self.dir)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("harness: kamailio exited at start:\n" + self.log.read_text()[-2000:])
            if _port_busy(self.args.port):
                time.sleep(0.3)
                return self
            time.sleep(0.05)
        raise SystemExit("harness: kamailio did not bind its port within 10 s")

    def __exit__(self, *exc):
        _stop(self.proc)

    def socket_drops(self) -> int | None:
        """The socket's drop counter from /proc/net/udp (column drops), None if not found."""
        hexport = "%04X" % self.args.port
        for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
            f = line.split()
            if f[1] == "0100007F:" + hexport:
                return int(f[-1])
        return None

    def rcvbuf(self) -> int | None:
        """The socket's receive-buffer size in bytes (``ss -m``: rb), None if ss is missing."""
        try:
            out = subprocess.run(["ss", "-uamn", "src", f"{HOST}:{self.args.port}"], capture_output=True,
                                 text=True, timeout=5).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        m = re.search(r"rb(\d+)", out)
        return int(m.group(1)) if m else None


LOG_RE = re.compile(r"ALERT: <script>: ([SDR]) (-?\d+) (-?\d+) (\S+)")


def parse_server_log(path: Path) -> list[tuple[str, int, int, str]]:
    """The route's records: kind (S answered 200, D absorbed copy, R 503), start, completion (us), Call-ID."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        m = LOG_RE.search(line)
        if m:
            out.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)))
    return out


def busy_cycles(records, kind: str, gap_us: int = 300) -> np.ndarray:
    """Service times of one kind of copy: completion minus the previous completion, for copies the worker
    started at once after the previous one (route start within ``gap_us`` of the previous completion: the
    copy was waiting). This cycle holds everything the worker spends per copy: socket read, parsing, the
    sleep, the reply, the log line, the scheduler's delays."""
    out = []
    for prev, cur in zip(records, records[1:]):
        if cur[0] == kind and 0 <= cur[1] - prev[2] <= gap_us:
            out.append(cur[2] - prev[2])
    return np.array(out, dtype=float) * 1e-6


# ------------------------------------------------------------------------------------------------ capacity

def sip_options(i: int, pad: int = 0) -> bytes:
    """One OPTIONS request shaped like the scenario's (same headers, same size), optionally padded."""
    body = (f"OPTIONS sip:svc@{HOST}:5070 SIP/2.0\r\nVia: SIP/2.0/UDP {HOST}:5071;branch=z9hG4bK-burst-{i}\r\n"
            f"From: <sip:c@{HOST}:5071>;tag={i}\r\nTo: <sip:svc@{HOST}:5070>\r\nCall-ID: burst-{i}@{HOST}\r\n"
            f"CSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nX-T: 0x0\r\n")
    if pad:
        body += "X-Pad: " + "p" * pad + "\r\n"
    return (body + "Content-Length: 0\r\n\r\n").encode()


def measure_capacity(args, workdir: Path) -> dict:
    """Hold the worker, send bursts, count what the worker later answers: the buffer in messages."""
    t0 = int(time.time()) - 1
    work = 'if ($hdr(X-Block) != $null) { usleep("1500000"); }'
    out = {}
    for label, pad in (("scenario_size", 0), ("padded_1kB", 640)):
        d = workdir / f"capacity-{label}"
        d.mkdir()
        with Kamailio(args, d, kamailio_cfg(args, t0, "none", (1, 2), work)) as k:
            drops0 = k.socket_drops()
            rb = k.rcvbuf()
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((HOST, 0))
            dest = (HOST, args.port)
            blocker = sip_options(-1).replace(b"X-T: 0x0\r\n", b"X-T: 0x0\r\nX-Block: 1\r\n")
            s.sendto(blocker, dest)
            time.sleep(0.2)  # the worker is asleep in the blocker's 1.5 s
            size = len(sip_options(0, pad))
            for i in range(args.burst):
                s.sendto(sip_options(i, pad), dest)
            time.sleep(2.5)
            drops1 = k.socket_drops()
            s.close()
        recs = parse_server_log(d / "kamailio.log")
        answered = sum(1 for r in recs if r[0] == "S" and r[3].startswith("burst-") and r[3] != "burst--1@" + HOST)
        out[label] = {"message_bytes": size, "burst": args.burst, "answered": answered,
                      "socket_drops": None if drops0 is None or drops1 is None else drops1 - drops0,
                      "rcvbuf_bytes": rb}
    out["capacity_messages"] = out["scenario_size"]["answered"] + 1  # the waiting room plus the one in service
    return out


# ------------------------------------------------------------------------------------------------ SIPp

def scenario_xml(args) -> str:
    """Non-INVITE transactions with RFC 3261 Timer E (T1 = --t1); each call first pauses an exponential
    time of mean --pause: calls started evenly by SIPp's -r and displaced by independent exponential delays
    are close to a Poisson stream (the displacement theorem; measured per run)."""
    t1_ms = int(round(args.t1 * 1000))
    return f"""<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="qderive-poisson-options">
  <pause distribution="exponential" mean="{int(args.pause * 1000)}"/>
  <nop><action><gettimeofday assign_to="s,u"/><log message="B [call_number] [$s] [$u]"/></action></nop>
  <send retrans="{t1_ms}" start_rtd="1"><![CDATA[
OPTIONS sip:svc@{HOST}:{args.port} SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:c@[local_ip]:[local_port]>;tag=[call_number]
To: <sip:svc@{HOST}:{args.port}>
Call-ID: [call_id]
CSeq: 1 OPTIONS
Max-Forwards: 70
X-T: [$s]x[$u]
Content-Length: 0

]]></send>
  <recv response="503" optional="true" next="rej" rtd="1"/>
  <recv response="200" rtd="1"/>
  <nop><action><gettimeofday assign_to="s2,u2"/><log message="A [call_number] [$s2] [$u2] 200"/></action></nop>
  <nop next="end"/>
  <label id="rej"/>
  <nop><action><gettimeofday assign_to="s2,u2"/><log message="A [call_number] [$s2] [$u2] 503"/></action></nop>
  <label id="end"/>
  <ResponseTimeRepartition value="5, 10, 20, 50, 100, 200, 500, 1000, 2000"/>
</scenario>
"""


def run_sipp(args, workdir: Path, rate: float, ncalls: int, duration: float) -> dict:
    scen = workdir / "scenario.xml"
    scen.write_text(scenario_xml(args))
    cmd = ["sipp", "-sf", str(scen), f"{HOST}:{args.port}", "-i", HOST, "-p", str(args.port + 1),
           "-r", f"{rate:.3f}", "-rp", "1000", "-m", str(ncalls), "-l", "100000", "-timer_resol", "1",
           "-T2", str(int(round(args.t2 * 1000))), "-max_non_invite_retrans", str(args.max_retrans),
           "-trace_logs", "-log_file", str(workdir / "sipp-log.txt"), "-trace_stat", "-stf",
           str(workdir / "sipp-stat.csv"), "-fd", "1", "-nostdin", "-trace_screen", "-screen_file",
           str(workdir / "sipp-screen.txt")]
    proc = _start(cmd, workdir / "sipp-out.txt", workdir)
    limit = duration + args.pause * 6 + args.timeout + 8
    try:
        proc.wait(timeout=limit)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    _stop(proc)
    return {"timed_out": timed_out, "cmd": " ".join(cmd)}


def parse_client(workdir: Path) -> tuple[dict, dict]:
    starts, answers = {}, {}
    for line in (workdir / "sipp-log.txt").read_text(errors="replace").splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "B":
            starts[int(f[1])] = float(f[2]) + float(f[3]) * 1e-6
        elif len(f) >= 5 and f[0] == "A":
            answers[int(f[1])] = (float(f[2]) + float(f[3]) * 1e-6, int(f[4]))
    return starts, answers


def parse_stat(path: Path) -> list[dict]:
    lines = path.read_text(errors="replace").splitlines()
    head = lines[0].split(";")
    return [dict(zip(head, ln.split(";"))) for ln in lines[1:] if ln.strip()]


def batch_means(args, win: dict, answers: dict, stat: list[dict], begin: float, end: float) -> list[dict]:
    """The window cut into ``--batches`` equal batches, each with its own measures (the batch means the analysis
    turns into confidence intervals together with the replications). Goodput counts the 200s answered inside
    the batch; the fractions and response times belong to the transactions started inside it."""
    nb = args.batches
    edges = np.linspace(begin, end, nb + 1)
    out = []
    for lo, hi in zip(edges, edges[1:]):
        cohort = [c for c, s in win.items() if lo <= s < hi]
        n = len(cohort)
        codes = [answers[c][1] if c in answers else None for c in cohort]
        resp = np.array([answers[c][0] - win[c] for c in cohort if c in answers and answers[c][1] == 200])
        g = sum(1 for c, (t, code) in answers.items() if code == 200 and lo <= t < hi)
        retr = calls = 0
        for row in stat:
            tt = float(row["CurrentTime"].split("\t")[-1])
            if lo < tt <= hi:
                retr += int(row["Retransmissions(P)"])
                calls += int(row["OutgoingCall(P)"])
        out.append({
            "transactions": n, "rate": n / (hi - lo), "goodput": g / (hi - lo),
            "fraction_503": codes.count(503) / n if n else None,
            "fraction_timeout": codes.count(None) / n if n else None,
            "retransmissions_per_transaction": retr / calls if calls else None,
            "response_quantiles_s": {str(p): float(np.quantile(resp, p)) if len(resp) else None
                                     for p in (0.5, 0.9, 0.99)},
            "response_tail": {str(t): float((resp > t).mean()) if len(resp) else None
                              for t in (0.01, 0.02, 0.05, 0.1, 0.2)},
        })
    return out


def reduce_run(args, workdir: Path, t0: int, rate: float, control: str, thresholds, rep: int,
               load_before: str, load_after: str, sipp_info: dict, duration: float,
               warmup: float) -> tuple[dict, dict]:
    starts, answers = parse_client(workdir)
    if not starts:
        raise SystemExit(f"harness: SIPp logged no transaction in {workdir}: see sipp-out.txt")
    ts = np.array(sorted(starts.values()))
    begin = ts[0] + warmup
    end = ts[0] + duration
    win = {c: s for c, s in starts.items() if begin <= s < end}
    n = len(win)
    n200 = n503 = 0
    resp = []
    for c, s in win.items():
        if c in answers:
            t, code = answers[c]
            if code == 200:
                n200 += 1
                resp.append(t - s)
            else:
                n503 += 1
    resp = np.array(resp)
    span = end - begin
    # goodput as the server delivers it: 200s answered inside the window, whatever their start
    thr200 = sum(1 for c, (t, code) in answers.items() if code == 200 and begin <= t < end)
    thr503 = sum(1 for c, (t, code) in answers.items() if code == 503 and begin <= t < end)
    arr = np.sort(np.array(list(win.values())))
    gaps = np.diff(arr)
    from scipy import stats as _st  # noqa: PLC0415 (only the harness needs scipy here)
    ks = _st.kstest(gaps / gaps.mean(), "expon").statistic if len(gaps) > 10 else None
    counts = np.histogram(arr, bins=np.arange(begin, end + 1e-9, 0.1))[0]
    counts10 = np.histogram(arr, bins=np.arange(begin, end + 1e-9, 0.01))[0]
    clumps = np.diff(arr)[np.diff(arr) >= 1e-3]  # gaps between SIPp's sending bursts (1 ms apart or more)
    # retransmissions: SIPp's periodic counters over the periods inside the window
    stat = parse_stat(workdir / "sipp-stat.csv")
    retr = calls = 0
    for row in stat:
        tt = float(row["CurrentTime"].split("\t")[-1])
        if begin <= tt <= end + 1:
            retr += int(row["Retransmissions(P)"])
            calls += int(row["OutgoingCall(P)"])
    final = stat[-1]
    rtd = {k: int(v) for k, v in final.items() if k.startswith("ResponseTimeRepartition1_")}
    batches = batch_means(args, win, answers, stat, begin, end)
    recs = parse_server_log(workdir / "kamailio.log")
    copies_seen = {}
    for kind, s_us, e_us, ci in recs:
        copies_seen[ci] = copies_seen.get(ci, 0) + 1
    svc = busy_cycles(recs, "S")
    dup = busy_cycles(recs, "D")
    rej = busy_cycles(recs, "R")
    q = (lambda x, p: float(np.quantile(x, p)) if len(x) else None)
    rec = {
        "control": control, "thresholds": list(thresholds) if control != "none" else None,
        "rate_target": rate, "rep": rep, "window_s": span,
        "transactions": n, "rate_measured": n / span, "answered_200": n200, "rejected_503": n503,
        "timed_out": n - n200 - n503, "goodput": thr200 / span, "goodput_cohort": n200 / span,
        "rejects_per_s": thr503 / span,
        "fraction_200": n200 / n, "fraction_503": n503 / n, "fraction_timeout": (n - n200 - n503) / n,
        "retransmissions_sipp": retr, "calls_sipp": calls,
        "retransmissions_per_transaction": retr / calls if calls else None,
        "copies_received_per_callid": (sum(copies_seen.values()) / len(copies_seen)) if copies_seen else None,
        "server_records": {"S": sum(r[0] == "S" for r in recs), "D": sum(r[0] == "D" for r in recs),
                           "R": sum(r[0] == "R" for r in recs)},
        "response_quantiles_s": {str(p): q(resp, p) for p in (0.5, 0.9, 0.99)},
        "response_mean_s": float(resp.mean()) if len(resp) else None,
        "response_tail": {str(t): float((resp > t).mean()) if len(resp) else None
                          for t in (0.01, 0.02, 0.05, 0.1, 0.2)},
        "sipp_repartition_final": rtd,
        "arrivals": {"interarrival_mean": float(gaps.mean()), "interarrival_cv": float(gaps.std() / gaps.mean()),
                     "ks_exponential": ks, "counts_100ms_dispersion": float(counts.var() / counts.mean()),
                     "counts_10ms_dispersion": float(counts10.var() / counts10.mean()),
                     "burst_gap_cv": float(clumps.std() / clumps.mean()) if len(clumps) > 10 else None,
                     "gaps_below_100us": float((gaps < 1e-4).mean())},
        "service_cycle": {"n": int(len(svc)), "mean": float(svc.mean()) if len(svc) else None,
                          "scv": float(svc.var() / svc.mean() ** 2) if len(svc) > 1 else None},
        "duplicate_cycle": {"n": int(len(dup)), "mean": float(dup.mean()) if len(dup) else None},
        "reject_cycle": {"n": int(len(rej)), "mean": float(rej.mean()) if len(rej) else None},
        "loadavg_before": load_before, "loadavg_after": load_after,
        "sipp_timed_out": sipp_info["timed_out"],
        "batches": batches,
    }
    return rec, {"service": svc, "duplicate": dup, "reject": rej}


# ------------------------------------------------------------------------------------------------ main

def versions() -> dict:
    def first(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            return (r.stdout + r.stderr).strip().splitlines()[0 if cmd[0] == "kamailio" else -1].strip()
        except (OSError, subprocess.TimeoutExpired, IndexError):
            return None
    sipp = None
    try:
        r = subprocess.run(["sipp", "-v"], capture_output=True, text=True, timeout=10)
        sipp = next((ln.strip() for ln in (r.stdout + r.stderr).splitlines() if "SIPp" in ln), None)
    except (OSError, subprocess.TimeoutExpired):
        pass
    sysctl = {}
    for k in ("rmem_default", "rmem_max", "wmem_default", "wmem_max"):
        try:
            sysctl["net.core." + k] = int(Path(f"/proc/sys/net/core/{k}").read_text())
        except OSError:
            pass
    return {"kamailio": first(["kamailio", "-v"]), "sipp": sipp, "kernel": platform.release(),
            "machine": platform.machine(), "cpus": os.cpu_count(), "sysctl": sysctl}


def write_runs(out: Path, recs: list[dict], samples: dict) -> None:
    with open(out / "runs.jsonl", "w") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    for k, parts in samples.items():
        arr = np.concatenate(parts) if parts else np.zeros((0, 2))
        np.savetxt(out / f"{k}_times.csv", arr, fmt=["%d", "%.6f"], delimiter=",", header="run,seconds",
                   comments="")


def rereduce(args) -> int:
    old = [json.loads(x) for x in (args.out / "runs.jsonl").read_text().splitlines() if x.strip()]
    recs, samples = [], {"service": [], "duplicate": [], "reject": []}
    for r in old:
        d = args.reduce_from / f"{r['control']}-{r['load_nominal']}-{r['rep']}"
        control = r["control"]
        duration, warmup = ((args.duration, args.warmup) if control == "none"
                            else (args.duration_control, args.warmup_control))
        th = tuple(r["thresholds"]) if r["thresholds"] else tuple(int(x) for x in args.thresholds.split(","))
        rec, smp = reduce_run(args, d, 0, r["rate_target"], control, th, r["rep"], r["loadavg_before"],
                              r["loadavg_after"], {"timed_out": r["sipp_timed_out"]}, duration, warmup)
        rec["load_nominal"] = r["load_nominal"]
        recs.append(rec)
        for k, v in smp.items():
            samples[k].append(np.column_stack([np.full(len(v), len(recs) - 1), v]))
    write_runs(args.out, recs, samples)
    print(f"re-reduced {len(recs)} runs from {args.reduce_from}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=HERE / "data")
    p.add_argument("--port", type=int, default=5070, help="Kamailio's UDP port on 127.0.0.1 (SIPp uses +1)")
    p.add_argument("--loads", default="0.5,0.75,0.9,1.0,1.25,1.5,2,3",
                   help="offered loads, in units of the nominal capacity 1/(E[sleep] + --overhead)")
    p.add_argument("--controls", default="none,503")
    p.add_argument("--thresholds", default="5,10", help="L,H of the 503 control")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--duration", type=float, default=12.0, help="seconds of new transactions per run "
                   "without control")
    p.add_argument("--warmup", type=float, default=4.0, help="seconds at the start of a run not counted "
                   "(without control: the buffer fills and Timer F runs out)")
    p.add_argument("--duration-control", type=float, default=6.0)
    p.add_argument("--warmup-control", type=float, default=2.0)
    p.add_argument("--pause", type=float, default=0.3, help="mean exponential delay of each call [s]")
    p.add_argument("--service-mean", type=float, default=0.003, help="mean drawn sleep per request [s]")
    p.add_argument("--service-shape", type=int, default=4, help="Erlang shape of the drawn sleep")
    p.add_argument("--overhead", type=float, default=0.0002, help="assumed per-request overhead for the "
                   "nominal capacity only (the analysis uses the measured service times) [s]")
    p.add_argument("--t1", type=float, default=0.06)
    p.add_argument("--t2", type=float, default=0.48)
    p.add_argument("--max-retrans", type=int, default=10)
    p.add_argument("--maxbuffer", type=int, default=262144, help="Kamailio's maxbuffer (receive buffer probing cap)")
    p.add_argument("--burst", type=int, default=3000)
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--skip-capacity", action="store_true")
    p.add_argument("--keep-logs", type=Path, default=None, help="copy every run's raw logs there")
    p.add_argument("--batches", type=int, default=4, help="batches per run window (batch means)")
    p.add_argument("--reduce-from", type=Path, default=None, help="recompute runs.jsonl and the samples from the "
                   "raw logs kept by --keep-logs (the records of --out/runs.jsonl give each run's settings)")
    args = p.parse_args(argv)
    args.timeout = sum(min(args.t1 * 2 ** k, args.t2) for k in range(args.max_retrans + 1))
    for tool in ("kamailio", "sipp"):
        if shutil.which(tool) is None:
            raise SystemExit(f"harness: {tool} not found (run validation/sip-server/run.sh, which installs it)")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.reduce_from is not None:
        return rereduce(args)
    started = time.monotonic()
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "keep_logs", "reduce_from")}
    settings["client_timeout_s"] = args.timeout
    settings["versions"] = versions()
    settings["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    settings["loadavg_start"] = Path("/proc/loadavg").read_text().strip()
    with tempfile.TemporaryDirectory(prefix="qderive-sip-") as tmp:
        tmp = Path(tmp)
        if not args.skip_capacity:
            cap = measure_capacity(args, tmp)
            (args.out / "capacity.json").write_text(json.dumps(cap, indent=1) + "\n")
            print("capacity:", json.dumps(cap), flush=True)
        low, high = (int(x) for x in args.thresholds.split(","))

        def one_run(control, rate, rep, duration, warmup, name):
            d = tmp / name
            d.mkdir()
            t0 = int(time.time()) - 1
            lb = Path("/proc/loadavg").read_text().strip()
            with Kamailio(args, d, kamailio_cfg(args, t0, control, (low, high), 'usleep("$var(us)");')):
                info = run_sipp(args, d, rate, int(round(rate * duration)), duration)
            la = Path("/proc/loadavg").read_text().strip()
            meta = {"t0": t0, "rate": rate, "control": control, "rep": rep, "loadavg_before": lb,
                    "loadavg_after": la, "sipp": info, "duration": duration, "warmup": warmup}
            (d / "meta.json").write_text(json.dumps(meta))
            rec, smp = reduce_run(args, d, t0, rate, control, (low, high), rep, lb, la, info, duration, warmup)
            if args.keep_logs:
                shutil.copytree(d, args.keep_logs / d.name, dirs_exist_ok=True)
            shutil.rmtree(d)
            return rec, smp

        # the capacity the loads refer to: the worker's measured cycle under overload (503 control, load
        # about 2), so that the loads 0.5 to 3 are loads of this machine as it is now
        cal, _ = one_run("503", 2.0 / (args.service_mean + args.overhead), 0, 4.0, 1.0, "calibration")
        nominal = 1.0 / cal["service_cycle"]["mean"]
        settings["calibration"] = {"cycle_mean_s": cal["service_cycle"]["mean"], "capacity_per_s": nominal,
                                   "loadavg": cal["loadavg_after"]}
        print(f"calibration: cycle {cal['service_cycle']['mean'] * 1e3:.3f} ms, capacity {nominal:.1f}/s",
              flush=True)
        samples = {"service": [], "duplicate": [], "reject": []}
        recs = []
        for control in args.controls.split(","):
            for load in (float(x) for x in args.loads.split(",")):
                for rep in range(args.reps):
                    rate = load * nominal
                    duration, warmup = ((args.duration, args.warmup) if control == "none"
                                        else (args.duration_control, args.warmup_control))
                    rec, smp = one_run(control, rate, rep, duration, warmup, f"{control}-{load}-{rep}")
                    rec["load_nominal"] = load
                    la = rec["loadavg_after"]
                    recs.append(rec)
                    for k, v in smp.items():
                        samples[k].append(np.column_stack([np.full(len(v), len(recs) - 1), v]))
                    print(f"{control:4} load {load:4} rep {rep}: {rec['transactions']} tx, goodput "
                          f"{rec['goodput']:.1f}/s, 503 {rec['fraction_503']:.3f}, timeout "
                          f"{rec['fraction_timeout']:.3f}, retr/tx {rec['retransmissions_per_transaction']}, "
                          f"cycle {rec['service_cycle']['mean']}, load {la.split()[0]} "
                          f"[{time.monotonic() - started:.0f} s]", flush=True)
        write_runs(args.out, recs, samples)
    settings["elapsed_s"] = time.monotonic() - started
    settings["loadavg_end"] = Path("/proc/loadavg").read_text().strip()
    (args.out / "settings.json").write_text(json.dumps(settings, indent=1) + "\n")
    print(f"done in {settings['elapsed_s']:.0f} s; data in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
