#!/usr/bin/env python3
"""Plots of a lab experiment (scripts/lab run ...; docs/lab.md), one line or
point per variant, repetitions pooled. Each PNG has the CSV it plots beside it.

    plots/plot_lab.py RESULTS_DIR [--out DIR]

RPC workloads:
  fct_by_size.png/.csv     mean (solid) and p99 (dashed) FCT per response-size bucket
  fct_tradeoff.png/.csv    short-flow vs long-flow FCT, one point per variant (mean; p99)
Bulk workloads:
  throughput.png/.csv      goodput of every flow per interval (first repetition)
  fairness.png/.csv        Jain's fairness index per interval
Incast workloads:
  qct_cdf.png/.csv         CDF of query completion times
Every workload:
  queue_timeseries.png/.csv  packets queued at the port facing the data's receiver (first repetition)
  queue_cdf.png/.csv         CDF of those samples, repetitions pooled
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from results_io import ensure_venv  # noqa: E402

ensure_venv()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from flexlab import analysis  # noqa: E402
from flexlab.workload import receivers  # noqa: E402


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


def write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([f"{x:.6g}" if isinstance(x, float) else x for x in r])


def colors(variants: list[str]) -> dict[str, str]:
    cmap = plt.get_cmap("tab10")
    return {v: cmap(i % 10) for i, v in enumerate(variants)}


def save(fig, path: Path, written: list[Path]) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    written.append(path)


def plot_rpc(runs, variants, out: Path, written: list[Path]) -> None:
    col = colors(variants)
    flows = {v: [f for r in runs if r.meta["variant"] == v for f in analysis.rpc_flows(r)] for v in variants}
    all_sizes = [f["size"] for fs in flows.values() for f in fs]
    buckets = analysis.size_buckets(all_sizes)
    rows = []
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for v in variants:
        means, p99s, xs = [], [], []
        for i, (label, lo, hi) in enumerate(buckets):
            fct = [f["fct_ms"] for f in flows[v] if f["status"] == "ok" and lo < f["size"] <= hi]
            s = analysis.stats(fct)
            rows.append([v, label, lo, hi, s["n"], s["mean"], s["p50"], s["p99"]])
            if fct:
                xs.append(i)
                means.append(s["mean"])
                p99s.append(s["p99"])
        ax.plot(xs, means, "o-", color=col[v], label=f"{v} mean")
        ax.plot(xs, p99s, "s--", color=col[v], alpha=0.7, label=f"{v} p99")
    ax.set_xticks(range(len(buckets)))
    ax.set_xticklabels([b[0] for b in buckets], rotation=20)
    ax.set_yscale("log")
    ax.set_xlabel("response size")
    ax.set_ylabel("flow completion time (ms)")
    ax.set_title("FCT by response size (real TCP through the emulator)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    write_csv(out / "fct_by_size.csv", ["variant", "bucket", "lo_bytes_excl", "hi_bytes_incl", "n", "mean_ms",
                                        "p50_ms", "p99_ms"], rows)
    save(fig, out / "fct_by_size.png", written)

    # Trade-off: one point per variant.
    a = runs[0].config["analysis"]
    rows = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.3))
    for v in variants:
        ok = [f for f in flows[v] if f["status"] == "ok"]
        short = analysis.stats([f["fct_ms"] for f in ok if f["size"] <= a["short_max_bytes"]])
        long_ = analysis.stats([f["fct_ms"] for f in ok if f["size"] >= a["long_min_bytes"]])
        rows.append([v, short["n"], short["mean"], short["p99"], long_["n"], long_["mean"], long_["p99"]])
        marker = MARKERS[variants.index(v) % len(MARKERS)]
        for ax, key in zip(axes, ("mean", "p99")):
            if short["n"] and long_["n"]:
                ax.scatter(long_[key], short[key], color=col[v], marker=marker, s=70, zorder=3, label=v)
    axes[0].legend(fontsize=8, loc="best")
    for ax, key in zip(axes, ("mean", "p99")):
        ax.set_xlabel(f"long flows (>= {a['long_min_bytes'] / 1e6:g} MB): {key} FCT (ms)")
        ax.set_ylabel(f"short flows (<= {a['short_max_bytes'] / 1e3:g} KB): {key} FCT (ms)")
        ax.set_title(f"short vs long flows, {key}")
        ax.grid(True, alpha=0.3)
        ax.margins(0.25)
    write_csv(out / "fct_tradeoff.csv", ["variant", "short_n", "short_mean_ms", "short_p99_ms", "long_n",
                                         "long_mean_ms", "long_p99_ms"], rows)
    save(fig, out / "fct_tradeoff.png", written)


def plot_bulk(runs, variants, out: Path, written: list[Path]) -> None:
    col = colors(variants)
    first = {v: next(r for r in runs if r.meta["variant"] == v) for v in variants}
    rows = []
    fig, axes = plt.subplots(len(variants), 1, figsize=(7.5, 2.2 * len(variants) + 0.6), sharex=True, squeeze=False)
    for ax, v in zip(axes[:, 0], variants):
        samples = analysis.bulk_samples(first[v])
        for s in samples:
            rows.append([v, first[v].meta["repetition"], s["time_s"], s["flow"], s["sender"], s["mbps"]])
        for flow in sorted({s["flow"] for s in samples}):
            pts = [(s["time_s"], s["mbps"]) for s in samples if s["flow"] == flow]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.2, label=f"from h{first[v].config['workload']['senders'][flow]}")
        ax.set_title(v, fontsize=9)
        ax.set_ylabel("Mbit/s")
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=5, loc="upper right")
    axes[-1, 0].set_xlabel("time since the workload started (s)")
    fig.suptitle("goodput of each flow, per interval")
    write_csv(out / "throughput.csv", ["variant", "repetition", "time_s", "flow", "sender", "mbps"], rows)
    save(fig, out / "throughput.png", written)

    rows = []
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for v in variants:
        for r in [x for x in runs if x.meta["variant"] == v]:
            series = analysis.fairness_series(analysis.bulk_samples(r), len(r.config["workload"]["senders"]))
            rows += [[v, r.meta["repetition"], t, j, agg] for t, j, agg in series]
            if r is first[v]:
                ax.plot([s[0] for s in series], [s[1] for s in series], color=col[v], label=v)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("time since the workload started (s)")
    ax.set_ylabel("Jain's fairness index")
    ax.set_title("fairness across flows, per interval")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    write_csv(out / "fairness.csv", ["variant", "repetition", "time_s", "jain", "aggregate_mbps"], rows)
    save(fig, out / "fairness.png", written)


def plot_incast(runs, variants, out: Path, written: list[Path]) -> None:
    col = colors(variants)
    rows = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for v in variants:
        q = sorted(x["qct_ms"] for r in runs if r.meta["variant"] == v for x in analysis.incast_queries(r)
                   if x["ok"] == x["servers"])
        for i, t in enumerate(q):
            rows.append([v, t, (i + 1) / len(q)])
        if q:
            ax.step(q, [(i + 1) / len(q) for i in range(len(q))], where="post", color=col[v], label=v)
    ax.set_xlabel("query completion time (ms)")
    ax.set_ylabel("CDF")
    ax.set_title("incast: query completion times")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    write_csv(out / "qct_cdf.csv", ["variant", "qct_ms", "cdf"], rows)
    save(fig, out / "qct_cdf.png", written)


def plot_queues(runs, variants, out: Path, written: list[Path]) -> None:
    col = colors(variants)
    rows, cdf_rows = [], []
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    fig2, ax2 = plt.subplots(figsize=(6.5, 3.8))
    for v in variants:
        mine = [r for r in runs if r.meta["variant"] == v]
        pooled = []
        for r in mine:
            samples = analysis.queue_samples(r, receivers(r.config))
            pooled += [s["packets"] for s in samples]
            if r is mine[0] and samples:
                host = min(s["host"] for s in samples)
                pts = [s for s in samples if s["host"] == host]
                rows += [[v, r.meta["repetition"], s["time_s"], s["host"], s["packets"]] for s in pts]
                ax.plot([s["time_s"] for s in pts], [s["packets"] for s in pts], color=col[v], lw=0.9,
                        label=f"{v} (port to h{host})")
        if pooled:
            pooled.sort()
            n = len(pooled)
            xs, ys = [], []
            for i, p in enumerate(pooled):
                if i + 1 == n or pooled[i + 1] != p:
                    xs.append(p)
                    ys.append((i + 1) / n)
            cdf_rows += [[v, x, y] for x, y in zip(xs, ys)]
            ax2.step(xs, ys, where="post", color=col[v], label=f"{v} (median {analysis.percentile(pooled, 50):g})")
    ax.set_xlabel("time since the workload started (s)")
    ax.set_ylabel("packets queued")
    ax.set_title("queue at the receiver's ToR port (emulated)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax2.set_xlabel("packets queued at the receivers' ToR ports")
    ax2.set_ylabel("CDF")
    ax2.set_title("queue occupancy")
    ax2.set_xscale("symlog", linthresh=1)
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    write_csv(out / "queue_timeseries.csv", ["variant", "repetition", "time_s", "host", "packets"], rows)
    write_csv(out / "queue_cdf.csv", ["variant", "packets", "cdf"], cdf_rows)
    save(fig, out / "queue_timeseries.png", written)
    save(fig2, out / "queue_cdf.png", written)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--out", help="where to write (default RESULTS)")
    a = ap.parse_args(argv)
    res = Path(a.results)
    out = Path(a.out) if a.out else res
    out.mkdir(parents=True, exist_ok=True)
    try:
        runs = analysis.experiment_runs(res)
    except analysis.DataError as e:
        print(f"plot_lab: {e}", file=sys.stderr)
        return 1
    variants = analysis.variants_in_order(runs)
    kinds = {r.config["workload"]["kind"] for r in runs}
    written: list[Path] = []
    try:
        if "rpc" in kinds:
            plot_rpc([r for r in runs if r.config["workload"]["kind"] == "rpc"], variants, out, written)
        if "bulk" in kinds:
            plot_bulk([r for r in runs if r.config["workload"]["kind"] == "bulk"], variants, out, written)
        if "incast" in kinds:
            plot_incast([r for r in runs if r.config["workload"]["kind"] == "incast"], variants, out, written)
        plot_queues(runs, variants, out, written)
    except (analysis.DataError, KeyError, ValueError) as e:
        print(f"plot_lab: {e}", file=sys.stderr)
        return 1
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
