#!/usr/bin/env python3
"""Iteration times of collective workloads, per variant (issue 26; docs/collectives.md).

    plots/plot_collective.py RESULTS_DIR [--out DIR]

RESULTS_DIR is a run folder with collective.csv, or a folder of variant
folders that have one. An iteration's time is from the end of the previous
iteration (the first: from 0) to its own end, compute gap included
(collective.csv's iteration_us; docs/output-format.md). Prints one line per
variant (iterations completed, mean / min / max iteration time in us, the
mean communication time comm_us) and writes to DIR (default RESULTS_DIR)
iteration_times.png (one bar per iteration, grouped by variant) and
collective_summary.csv (variant, iterations, completed, mean_iteration_us,
min_iteration_us, max_iteration_us, mean_comm_us).
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import DataError, ensure_venv, find_runs, read_columns, scheme_colors  # noqa: E402

ensure_venv()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["iteration", "iteration_us", "comm_us"]


def summarise(path: Path) -> Dict[str, object]:
    cols = read_columns(path, COLUMNS, numeric=["iteration", "iteration_us", "comm_us"])
    done = [v for v in cols["iteration_us"] if not math.isnan(v)]
    comm = [v for v in cols["comm_us"] if not math.isnan(v)]
    return {"iterations": len(cols["iteration"]), "times": done, "comm": comm}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    out = a.out or a.results_dir
    try:
        variants = find_runs(a.results_dir, "collective.csv")
        if not variants:
            raise DataError(f"{a.results_dir}: no collective.csv there or in a folder below it "
                            "(written by runs with workload.kind: collective)")
        data = {name: summarise(path) for name, path in variants.items()}
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    colors = scheme_colors(list(data))
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(data) + 2), 4))
    rows: List[List[object]] = []
    for x, (name, d) in enumerate(data.items()):
        t = d["times"]
        line = f"{name:<16} iterations {len(t)}/{d['iterations']} completed"
        row: List[object] = [name, d["iterations"], len(t)]
        if t:
            mean_comm = sum(d["comm"]) / len(d["comm"]) if d["comm"] else float("nan")
            stats = [sum(t) / len(t), min(t), max(t), mean_comm]
            line += "  iteration us mean {:.1f} min {:.1f} max {:.1f}  comm us mean {:.1f}".format(*stats)
            row += [f"{v:.4f}" for v in stats]
            width = 0.8 / len(t)
            for i, v in enumerate(t):
                ax.bar(x - 0.4 + width * (i + 0.5), v, width * 0.9, color=colors[name],
                       label=name if i == 0 else None)
        else:
            line += "; no iteration completed"
            row += [""] * 4
        rows.append(row)
        print(line)
    with open(out / "collective_summary.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["variant", "iterations", "completed", "mean_iteration_us", "min_iteration_us",
                    "max_iteration_us", "mean_comm_us"])
        w.writerows(rows)
    ax.set_xticks(range(len(data)))
    ax.set_xticklabels(list(data), rotation=20, fontsize=8)
    ax.set_ylabel("iteration time (us), one bar per iteration")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(out / "iteration_times.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
