#!/usr/bin/env python3
"""PFC pause time per variant and switch tier (issue 26; docs/pfc.md).

    plots/plot_pfc.py RESULTS_DIR [--out DIR]

RESULTS_DIR is a run folder with pfc.csv, or a folder of variant folders that
have one (runs with `pfc:` on their routers; docs/output-format.md). A row of
pfc.csv is one (router, port, priority): the pauses its ingress sent to the
neighbour on that port and for how long (paused_sent_us). The tier is the
router name without its digits and underscores (edge, agg, core in a fat
tree; tor, spine in a leaf-spine). Prints one line per variant and writes to
DIR (default RESULTS_DIR) pfc_pause_time.png (pause time and pauses sent,
by the pausing switch's tier, one bar group per variant) and pfc_summary.csv
(variant, tier, ports, pauses_sent, pause_time_us, max_ingress_pkts,
headroom_overruns; tier "all" sums the variant).
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import DataError, ensure_venv, find_runs, read_columns, scheme_colors  # noqa: E402

ensure_venv()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["router", "port", "priority", "pauses_sent", "paused_sent_us", "max_ingress_pkts", "headroom_overruns"]
NUMERIC = ["port", "priority", "pauses_sent", "paused_sent_us", "max_ingress_pkts", "headroom_overruns"]


def tier(router: str) -> str:
    return re.sub(r"[\d_]+", "", router) or router


def summarise(path: Path) -> Dict[str, Dict[str, float]]:
    """Per tier (and "all"): ports that paused, pauses sent, pause time, most held, overruns."""
    cols = read_columns(path, COLUMNS, NUMERIC)
    out: Dict[str, Dict[str, float]] = {}
    for i, router in enumerate(cols["router"]):
        for t in (tier(router), "all"):
            s = out.setdefault(t, {"ports": 0, "pauses_sent": 0, "pause_time_us": 0.0, "max_ingress_pkts": 0,
                                   "headroom_overruns": 0})
            sent = cols["pauses_sent"][i]
            s["ports"] += 1 if sent > 0 else 0
            s["pauses_sent"] += sent
            s["pause_time_us"] += cols["paused_sent_us"][i]
            s["max_ingress_pkts"] = max(s["max_ingress_pkts"], cols["max_ingress_pkts"][i])
            s["headroom_overruns"] += cols["headroom_overruns"][i]
    out.setdefault("all", {"ports": 0, "pauses_sent": 0, "pause_time_us": 0.0, "max_ingress_pkts": 0,
                           "headroom_overruns": 0})
    return out


def run(results_dir: Path, out: Path | None = None) -> List[Path]:
    out = out or results_dir
    variants = find_runs(results_dir, "pfc.csv")
    if not variants:
        raise DataError(f"{results_dir}: no pfc.csv there or in a folder below it (written by runs with `pfc:` "
                        "on their routers)")
    data = {name: summarise(path) for name, path in variants.items()}
    tiers: List[str] = []
    for d in data.values():
        tiers += [t for t in d if t != "all" and t not in tiers]
    out.mkdir(parents=True, exist_ok=True)
    rows: List[List[object]] = []
    for name, d in data.items():
        a = d["all"]
        print(f"{name:<16} pauses sent {int(a['pauses_sent'])} by {int(a['ports'])} ports, pause time "
              f"{a['pause_time_us']:.1f} us, most held from one ingress {int(a['max_ingress_pkts'])} packets, "
              f"headroom overruns {int(a['headroom_overruns'])}")
        for t in tiers + ["all"]:
            s = d.get(t)
            if s:
                rows.append([name, t, int(s["ports"]), int(s["pauses_sent"]), f"{s['pause_time_us']:.4f}",
                             int(s["max_ingress_pkts"]), int(s["headroom_overruns"])])
    with open(out / "pfc_summary.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["variant", "tier", "ports", "pauses_sent", "pause_time_us", "max_ingress_pkts",
                    "headroom_overruns"])
        w.writerows(rows)
    colors = scheme_colors(list(data))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(tiers) + 4), 4))
    width = 0.8 / len(data)
    for k, (metric, label) in enumerate([("pause_time_us", "pause time sent (us, summed over ports)"),
                                         ("pauses_sent", "pause frames sent (XOFF)")]):
        ax = axes[k]
        for i, (name, d) in enumerate(data.items()):
            ys = [d.get(t, {}).get(metric, 0) for t in tiers]
            ax.bar([x - 0.4 + width * (i + 0.5) for x in range(len(tiers))], ys, width * 0.9, color=colors[name],
                   label=name)
        ax.set_xticks(range(len(tiers)))
        ax.set_xticklabels(tiers)
        ax.set_xlabel("pausing switch tier")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    png = out / "pfc_pause_time.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return [png, out / "pfc_summary.csv"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    try:
        run(a.results_dir, a.out)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
