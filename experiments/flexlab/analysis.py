"""Reading a lab run's outputs and computing its metrics (docs/lab.md):
FCT by size, short- vs long-flow FCT, throughput and Jain's fairness per
interval, query completion times, queue occupancy at the ports that carry
the workload's data, the emulator's lateness, and consistency checks
between what the endpoints held and what the emulator decided."""
from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml


class DataError(Exception):
    """A result file is missing or malformed; the message names it."""


def read_csv(path: Path) -> list[dict[str, str]]:
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise DataError(f"{path}: {e.strerror}") from None


def read_counters(path: Path) -> dict[str, int]:
    return {r["counter"]: int(float(r["value"])) for r in read_csv(path)}


def percentile(xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if not xs:
        return math.nan
    s = sorted(xs)
    k = (len(s) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def jain(xs: Iterable[float]) -> float:
    xs = list(xs)
    sq = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * sq) if xs and sq > 0 else math.nan


def stats(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "mean": statistics.fmean(xs) if xs else math.nan, "p50": percentile(xs, 50),
            "p99": percentile(xs, 99), "max": max(xs) if xs else math.nan}


# --- topology: which emulated port faces a host ---------------------------

def endpoints_per_rack(topology: dict, base: Path) -> tuple[str, int]:
    """(kind, endpoints per ToR) of the experiment's topology section."""
    t = dict(topology)
    if "file" in t:
        f = Path(t.pop("file"))
        f = f if f.is_absolute() else base / f
        loaded = yaml.safe_load(f.read_text()) or {}
        loaded.update(t)
        t = loaded
    kind = t.get("kind", "")
    if kind == "single_rack":
        return kind, int(t.get("endpoints", 32))
    return kind, int(t.get("endpoints_per_rack", 16))


def host_port(host: int, epr: int) -> tuple[str, str]:
    """(router, port) of the ToR port facing `host`, as occupancy.csv names them."""
    return f"tor{host // epr}", str(host % epr)


# --- size buckets ----------------------------------------------------------

LOG_EDGES = [10_000, 100_000, 1_000_000, 10_000_000]


def _fmt_bytes(b: float) -> str:
    for unit, scale in (("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            v = b / scale
            return f"{v:g} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(b)} B"


def size_buckets(sizes: list[int]) -> list[tuple[str, int, int]]:
    """(label, lo exclusive, hi inclusive): one bucket per size when there are
    few distinct sizes (a mix), decades otherwise (a CDF)."""
    distinct = sorted(set(sizes))
    if 0 < len(distinct) <= 6:
        out, lo = [], 0
        for s in distinct:
            out.append((_fmt_bytes(s), lo, s))
            lo = s
        return out
    edges = [0] + LOG_EDGES + [2**62]
    out = []
    for lo, hi in zip(edges, edges[1:]):
        label = f"<= {_fmt_bytes(hi)}" if lo == 0 else (f"> {_fmt_bytes(lo)}" if hi == 2**62 else
                                                        f"{_fmt_bytes(lo)} - {_fmt_bytes(hi)}")
        out.append((label, lo, hi))
    return out


# --- one run -----------------------------------------------------------------

@dataclass
class RunData:
    dir: Path
    meta: dict           # run.yaml
    config: dict         # the variant's validated experiment config

    @property
    def workload_dir(self) -> Path:
        return self.dir / "workload"


def load_run(run_dir: Path) -> RunData:
    try:
        meta = yaml.safe_load((run_dir / "run.yaml").read_text())
    except OSError as e:
        raise DataError(f"{run_dir / 'run.yaml'}: {e.strerror}") from None
    return RunData(run_dir, meta, meta["config"])


def rpc_flows(run: RunData) -> list[dict[str, Any]]:
    rows = []
    for h in run.config["workload"]["clients"]:
        for r in read_csv(run.workload_dir / f"h{h}.rpc.csv"):
            rows.append({"client": h, "size": int(r["size_bytes"]), "status": r["status"],
                         "fct_ms": float(r["fct_us"]) / 1000 if r["fct_us"] else math.nan,
                         "start_ns": int(r["start_real_ns"])})
    return rows


def bulk_samples(run: RunData) -> list[dict[str, Any]]:
    w = run.config["workload"]
    rows = read_csv(run.workload_dir / f"h{w['receiver']}.bulk.csv")
    return [{"time_s": float(r["time_s"]), "flow": int(r["flow"]), "sender": w["senders"][int(r["flow"])],
             "mbps": float(r["goodput_mbps"])} for r in rows]


def fairness_series(samples: list[dict[str, Any]], nflows: int) -> list[tuple[float, float, float]]:
    """(time_s, Jain's index over every flow, aggregate Mbps) per interval; a
    flow with no sample in an interval counts as 0."""
    by_t: dict[float, dict[int, float]] = {}
    for s in samples:
        by_t.setdefault(s["time_s"], {})[s["flow"]] = s["mbps"]
    out = []
    for t in sorted(by_t):
        xs = [by_t[t].get(f, 0.0) for f in range(nflows)]
        out.append((t, jain(xs), sum(xs)))
    return out


def incast_queries(run: RunData) -> list[dict[str, Any]]:
    w = run.config["workload"]
    rows = read_csv(run.workload_dir / f"h{w['client']}.incast.csv.queries.csv")
    return [{"query": int(r["query"]), "ok": int(r["ok"]), "servers": int(r["servers"]),
             "qct_ms": float(r["qct_us"]) / 1000 if r["qct_us"] else math.nan} for r in rows]


def queue_samples(run: RunData, receivers: list[int]) -> list[dict[str, Any]]:
    """Occupancy samples of the ToR ports facing the data's receivers, with
    time relative to the workload's start; only while the workload ran,
    after the warm-up."""
    path = run.dir / "emulator" / "occupancy.csv"
    if not path.exists():
        return []
    _, epr = endpoints_per_rack(run.config["topology"], Path(run.meta["experiment_dir"]))
    ports = {host_port(h, epr): h for h in receivers}
    offset = run.meta["workload_start_s"]  # workload start, seconds after the emulator's timeslot 0
    lo = offset + run.config["warmup_s"]
    hi = offset + run.config["duration_s"]
    out = []
    for r in read_csv(path):
        key = (r["router"], r["port"])
        if key not in ports:
            continue
        t = float(r["time_us"]) / 1e6
        if lo <= t <= hi:
            out.append({"time_s": t - offset, "host": ports[key], "packets": int(r["packets"])})
    return out


def sum_counters(files: list[Path]) -> dict[str, int]:
    total: dict[str, int] = {}
    for f in files:
        for k, v in read_counters(f).items():
            total[k] = total.get(k, 0) + v
    return total


def run_metrics(run: RunData, receivers: list[int]) -> dict[str, Any]:
    """Everything the run's summary.yaml holds: workload metrics, queue,
    emulator health, endpoint totals and the checks."""
    c = run.config
    m: dict[str, Any] = {}
    # Emulator.
    summary = yaml.safe_load((run.dir / "emulator" / "live_summary.yaml").read_text())
    comm = read_counters(run.dir / "emulator" / "comm_counters.csv")
    late = sum(summary.get("late_timeslots") or [0])
    m["emulator"] = {
        "timeslots": summary["end_timeslot"], "timeslot_us": summary["timeslot_ns"] / 1000,
        "late_timeslots": late, "late_fraction": late / max(1, summary["end_timeslot"]),
        "max_lag_us": max(summary.get("max_lag_us") or [0.0]),
        "requests": comm["requests"], "verdicts": comm["verdicts_pushed"], "releases": comm["releases"],
        "marks": comm["marks"], "drops": comm["drops"] + comm["refused_by_engine"] + comm["bad_dst"],
        "pending_at_exit": summary["pending_at_exit"], "malformed": comm["malformed"],
    }
    # Lateness is a fidelity verdict, not an accounting check: a run whose
    # engine fell behind real time more than the threshold allows is marked,
    # so that its rates and FCTs are not read as the emulated network's.
    threshold = c["emulator"].get("late_threshold", 0.001)
    m["emulator"]["late_threshold"] = threshold
    m["emulator"]["on_time"] = m["emulator"]["late_fraction"] <= threshold
    # Endpoints.
    ep_files = sorted((run.dir / "endpoints").glob("h*/endpoint_counters.csv"))
    e = sum_counters(ep_files)
    keys = ["packets_held", "requests", "verdicts", "packets_released", "packets_marked", "packets_dropped",
            "timeout_accepted", "timeout_dropped", "exit_accepted", "exit_dropped", "late_verdicts", "bypassed",
            "malformed", "max_holding", "retransmissions", "kernel_queue_dropped", "kernel_user_dropped",
            "requests_submitted", "hinted_requests"]
    m["endpoints"] = {k: e.get(k, 0) for k in keys}
    m["endpoints"]["files"] = len(ep_files)
    # The endpoints' own CPU per packet held (netns: flexplane-nfq-endpoint's
    # user + system time; the kernel's NFQUEUE work in the senders' context
    # is not in it). None where the endpoints do not report it (qdisc backends).
    if "cpu_user_us" in e:
        cpu_us = e["cpu_user_us"] + e.get("cpu_sys_us", 0)
        m["endpoints"]["cpu_us"] = cpu_us
        m["endpoints"]["cpu_ns_per_packet"] = 1000.0 * cpu_us / max(1, e.get("packets_held", 0))
    # Checks: every request the endpoints made reached the emulator once and was answered.
    checks = {
        "endpoint_counters_written": len(ep_files) == run.meta["hosts"],
        "requests_equal": e.get("requests_submitted", -1) == comm["requests"],
        "verdicts_equal": e.get("verdicts", -1) == comm["verdicts_pushed"],
        "every_request_answered": comm["requests"] == comm["verdicts_pushed"] and summary["pending_at_exit"] == 0,
        "no_fallback": e.get("timeout_accepted", 0) + e.get("timeout_dropped", 0) == 0,
    }
    m["checks"] = checks
    # Workload.
    kind = c["workload"]["kind"]
    a = c["analysis"]
    if kind == "rpc":
        flows = rpc_flows(run)
        ok = [f for f in flows if f["status"] == "ok"]
        short = [f["fct_ms"] for f in ok if f["size"] <= a["short_max_bytes"]]
        long_ = [f["fct_ms"] for f in ok if f["size"] >= a["long_min_bytes"]]
        m["workload"] = {"requests": len(flows), "ok": len(ok), "not_ok": len(flows) - len(ok),
                         "short": stats(short), "long": stats(long_), "all": stats([f["fct_ms"] for f in ok])}
    elif kind == "bulk":
        samples = [s for s in bulk_samples(run) if s["time_s"] > c["warmup_s"]]
        n = len(c["workload"]["senders"])
        series = fairness_series(samples, n)
        per_flow = [statistics.fmean([s["mbps"] for s in samples if s["flow"] == f] or [0.0]) for f in range(n)]
        m["workload"] = {"flows": n, "throughput_mbps": statistics.fmean([x[2] for x in series]) if series else math.nan,
                         "per_flow_mbps": per_flow, "jain_median": statistics.median([x[1] for x in series]) if series else math.nan,
                         "jain_of_means": jain(per_flow), "intervals": len(series)}
    else:
        q = incast_queries(run)
        done = [x["qct_ms"] for x in q if x["ok"] == x["servers"]]
        m["workload"] = {"queries": len(q), "complete": len(done), "qct": stats(done)}
    occ = [s["packets"] for s in queue_samples(run, receivers)]
    m["queue"] = {"ports": len(receivers), "samples": len(occ), "median_pkts": percentile(occ, 50) if occ else math.nan,
                  "p90_pkts": percentile(occ, 90) if occ else math.nan, "p99_pkts": percentile(occ, 99) if occ else math.nan,
                  "max_pkts": max(occ) if occ else math.nan}
    return m


# --- experiment-level tables (what the plots show) -------------------------

def experiment_runs(out_dir: Path) -> list[RunData]:
    runs = []
    for meta in sorted(out_dir.glob("*/r*/run.yaml")):
        run = load_run(meta.parent)
        if (meta.parent / "summary.yaml").exists():
            runs.append(run)
    if not runs:
        raise DataError(f"{out_dir}: no finished runs (*/r*/summary.yaml)")
    return runs


def variants_in_order(runs: list[RunData]) -> list[str]:
    seen: list[str] = []
    for r in sorted(runs, key=lambda r: r.meta.get("order", 0)):
        if r.meta["variant"] not in seen:
            seen.append(r.meta["variant"])
    return seen
