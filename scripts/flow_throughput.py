#!/usr/bin/env python3
"""Per-flow throughput of runs (issue 26; docs/schemes.md, "Load balancers"):
for each run folder (one with flows.csv, or a folder of variant folders)
prints, over finished flows, throughput = size_bytes * 8 / fct in Gbit/s
(min, p10, p50, mean, max), with the flows finished and the sums of the
retransmits and lost_pkts columns (docs/output-format.md).

Usage: scripts/flow_throughput.py RESULTS [RESULTS ...]
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path


def runs(path: Path) -> list[Path]:
    if (path / "flows.csv").is_file():
        return [path]
    found = sorted(p.parent for p in path.glob("*/flows.csv"))
    if not found:
        sys.exit(f"error: {path}: no flows.csv there or in a folder below it")
    return found


def quantile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def summarise(run: Path) -> str:
    with open(run / "flows.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    done = [r for r in rows if r["finished"] == "1" and float(r["fct_us"]) > 0]
    gbps = sorted(int(r["size_bytes"]) * 8 / float(r["fct_us"]) / 1e3 for r in done)
    retx = sum(int(r["retransmits"] or 0) for r in rows)
    lost = sum(int(r["lost_pkts"] or 0) for r in rows)
    head = f"{run.name:<16} flows {len(done)}/{len(rows)} finished"
    if not gbps:
        return head + "; no finished flow"
    return (f"{head}  Gbit/s min {gbps[0]:.2f} p10 {quantile(gbps, 0.1):.2f} p50 {quantile(gbps, 0.5):.2f} "
            f"mean {statistics.fmean(gbps):.2f} max {gbps[-1]:.2f}  retransmissions {retx}  lost {lost}")


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 else 2)
    for arg in sys.argv[1:]:
        for run in runs(Path(arg)):
            print(summarise(run))


if __name__ == "__main__":
    main()
