#!/usr/bin/env python3
"""Per-flow throughput, per variant (issue 26; docs/schemes.md, "Load
balancers"): for each finished flow, throughput = size_bytes * 8 / fct_us, in
Gbit/s. Long flows on a permutation show load balancing: ECMP's hash
collisions leave flows at half rate or less, spraying evens them out.

    plots/plot_flow_throughput.py RESULTS_DIR [--out DIR]

RESULTS_DIR is a run folder with flows.csv, or a folder of variant folders
that have one. Prints one line per variant (flows finished, min / p10 / p50 /
mean / max Gbit/s, the sums of the retransmits and lost_pkts columns) and
writes to DIR (default RESULTS_DIR) flow_throughput.png (the CDF, one line
per variant) and flow_throughput_summary.csv (variant, flows, finished,
min_gbps, p10_gbps, p50_gbps, mean_gbps, max_gbps, retransmits, lost_pkts).
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import DataError, ensure_venv, find_runs, read_columns, scheme_colors  # noqa: E402

ensure_venv()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLUMNS = ["size_bytes", "fct_us", "finished", "retransmits", "lost_pkts"]


def summarise(path: Path) -> Dict[str, object]:
    cols = read_columns(path, COLUMNS, numeric=["size_bytes", "fct_us"])
    done = [i for i, f in enumerate(cols["finished"]) if f == "1" and cols["fct_us"][i] > 0]
    gbps = np.sort(np.array([cols["size_bytes"][i] * 8 / cols["fct_us"][i] / 1e3 for i in done], dtype=float))
    count = lambda name: sum(int(x) for x in cols[name] if x not in ("", "nan"))  # noqa: E731
    return {"flows": len(cols["finished"]), "finished": len(done), "gbps": gbps,
            "retransmits": count("retransmits"), "lost_pkts": count("lost_pkts")}


def quantile(v: np.ndarray, q: float) -> float:  # nearest rank, as the emulator's summaries
    return float(v[min(len(v) - 1, int(q * len(v)))])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    out = a.out or a.results_dir
    try:
        variants = find_runs(a.results_dir, "flows.csv")
        if not variants:
            raise DataError(f"{a.results_dir}: no flows.csv there or in a folder below it")
        data = {name: summarise(path) for name, path in variants.items()}
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    colors = scheme_colors(list(data))
    fig, ax = plt.subplots(figsize=(7, 4))
    out.mkdir(parents=True, exist_ok=True)
    rows: List[List[object]] = []
    for name, d in data.items():
        g = d["gbps"]
        line = f"{name:<16} flows {d['finished']}/{d['flows']} finished"
        row: List[object] = [name, d["flows"], d["finished"]]
        if len(g):
            stats = [g[0], quantile(g, 0.1), quantile(g, 0.5), float(np.mean(g)), g[-1]]
            line += "  Gbit/s min {:.2f} p10 {:.2f} p50 {:.2f} mean {:.2f} max {:.2f}".format(*stats)
            row += [f"{x:.4f}" for x in stats]
            ax.step(g, np.arange(1, len(g) + 1) / len(g), where="post", color=colors[name], label=name)
        else:
            line += "; no finished flow"
            row += [""] * 5
        line += f"  retransmissions {d['retransmits']}  lost {d['lost_pkts']}"
        row += [d["retransmits"], d["lost_pkts"]]
        rows.append(row)
        print(line)
    with open(out / "flow_throughput_summary.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["variant", "flows", "finished", "min_gbps", "p10_gbps", "p50_gbps", "mean_gbps", "max_gbps",
                    "retransmits", "lost_pkts"])
        w.writerows(rows)
    ax.set_xlabel("per-flow throughput (Gbit/s): size / FCT")
    ax.set_ylabel("fraction of finished flows")
    ax.set_xlim(left=0)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "flow_throughput.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
