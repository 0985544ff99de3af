#!/usr/bin/env python3
"""All standard plots of one results directory, written into it.

    plots/plot_all.py RESULTS_DIR

Writes RESULTS_DIR/fct_slowdown.png and fct_summary.csv (plot_fct.py; plus
fct_network_slowdown.png and fct_network_summary.csv from network_slowdown) and
RESULTS_DIR/queue_timeseries.png, queue_cdf.png and queue_summary.csv
(plot_queues.py), and where runs had PFC pfc_pause_time.png and
pfc_summary.csv (plot_pfc.py). A plot whose input CSVs are absent from every scheme folder
is skipped with a note; malformed inputs are errors (exit status 1).
Runs under <repo>/.venv automatically if matplotlib is not installed here.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import DataError, ensure_venv, find_variants  # noqa: E402

ensure_venv()

import plot_fct  # noqa: E402
import plot_pfc  # noqa: E402
import plot_queues  # noqa: E402


def run(results_dir: Path) -> List[Path]:
    written: List[Path] = []
    flows = find_variants(results_dir, "flows.csv")
    if flows:
        written.append(plot_fct.run(results_dir))
        with open(next(iter(flows.values()))) as fh:
            header = fh.readline().strip().split(",")
        if "network_slowdown" in header:  # the in-network view, when the emulator wrote it
            written.append(plot_fct.run(results_dir, metric="network_slowdown"))
    else:
        print(f"plot_all: no <scheme>/flows.csv in {results_dir}: skipping FCT plots", file=sys.stderr)
    if plot_queues.find_variants(results_dir):
        written.extend(plot_queues.run(results_dir))
    else:
        print(f"plot_all: no <scheme>/occupancy.bin or occupancy.csv in {results_dir}: skipping queue plots",
              file=sys.stderr)
    if find_variants(results_dir, "pfc.csv"):  # lossless runs: pause time by tier
        written.extend(plot_pfc.run(results_dir))
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", type=Path, help="folder with one subfolder per scheme variant")
    args = ap.parse_args(argv)
    try:
        written = run(args.results_dir)
    except (DataError, OSError) as e:
        print(f"plot_all: {e}", file=sys.stderr)
        return 1
    if not written:
        print(f"plot_all: nothing to plot in {args.results_dir}", file=sys.stderr)
        return 1
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
