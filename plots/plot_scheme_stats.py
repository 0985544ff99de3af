#!/usr/bin/env python3
"""The schemes' own state over time (scheme_stats.csv: RED's average, CoDel's
drop state, PIE's drop probability, HULL's phantom queue, ...).

    plots/plot_scheme_stats.py RESULTS_DIR [--out DIR]

RESULTS_DIR is a run folder with scheme_stats.csv, or a folder of variant
folders that have one. For each statistic, one panel: per variant, the series
(router, port, queue) with the highest mean. Writes to DIR (default
RESULTS_DIR) scheme_stats.png and scheme_stats_summary.csv (variant, stat,
router, port, queue, mean, max of the plotted series).
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import DataError, ensure_venv, find_runs, read_columns, scheme_colors  # noqa: E402

ensure_venv()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLUMNS = ["timeslot", "time_us", "router", "port", "queue", "stat", "value"]
Series = Tuple[str, str, str]  # router, port, queue


def busiest(path: Path) -> Dict[str, Tuple[Series, np.ndarray, np.ndarray]]:
    """stat -> (series with the highest mean, its times, its values)."""
    cols = read_columns(path, COLUMNS, numeric=["time_us", "value"])
    groups: Dict[str, Dict[Series, List[int]]] = {}
    for i, stat in enumerate(cols["stat"]):
        groups.setdefault(stat, {}).setdefault((cols["router"][i], cols["port"][i], cols["queue"][i]), []).append(i)
    t = np.asarray(cols["time_us"], dtype=float)
    v = np.asarray(cols["value"], dtype=float)
    out = {}
    for stat, series in groups.items():
        key = min(series, key=lambda k: (-float(np.mean(v[series[k]])), k))
        idx = series[key]
        out[stat] = (key, t[idx], v[idx])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    out = a.out or a.results_dir
    try:
        variants = find_runs(a.results_dir, "scheme_stats.csv")
        if not variants:
            raise DataError(f"{a.results_dir}: no scheme_stats.csv (run with run.occupancy_interval_us > 0 "
                            "and a scheme that exports statistics)")
        data = {name: busiest(path) for name, path in variants.items()}
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    stats = sorted({s for d in data.values() for s in d})
    colors = scheme_colors(list(data))
    fig, axes = plt.subplots(len(stats), 1, figsize=(8, 2.6 * len(stats)), squeeze=False)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "scheme_stats_summary.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["variant", "stat", "router", "port", "queue", "mean", "max"])
        for ax, stat in zip(axes[:, 0], stats):
            for name, d in data.items():
                if stat not in d:
                    continue
                (router, port, queue), t, v = d[stat]
                label = f"{name} ({router} port {port}" + (f" queue {queue})" if queue else ")")
                ax.plot(t, v, color=colors[name], label=label, linewidth=1)
                w.writerow([name, stat, router, port, queue, f"{np.mean(v):.6g}", f"{np.max(v):.6g}"])
            ax.set_title(stat)
            ax.set_xlabel("time (us)")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "scheme_stats.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
