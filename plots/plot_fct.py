#!/usr/bin/env python3
"""Flow completion time slowdown by flow size, one line per scheme.

    plots/plot_fct.py RESULTS_DIR [--out DIR] [--bucket-edges-pkts 10,100,1000,10000]

Reads RESULTS_DIR/<scheme>/flows.csv (columns flow_id, src, dst, size_pkts,
size_bytes, start_timeslot, finish_timeslot, start_us, fct_us, ideal_fct_us,
slowdown, finished, delivered_pkts, marked_pkts; `finished` is 0/1 and
fct/slowdown are empty or NaN for unfinished flows) and writes to DIR
(default RESULTS_DIR):

- fct_slowdown.png: mean and 99th-percentile slowdown per flow-size bucket
  (log y), and the number / fraction of flows that did not finish per scheme
  (a panel only when some did not: else a line saying every flow finished);
- fct_summary.csv: scheme, bucket, n, mean_slowdown, p99_slowdown, unfinished.

Buckets are in packets, (0, e1], (e1, e2], ..., (ek, inf), labelled with
bytes at --mtu-bytes per packet. Statistics are over finished flows only:
n counts them, unfinished counts the bucket's unfinished flows; p99 is
numpy.percentile(..., 99) (linear interpolation). Each scheme also gets a
bucket named "all". Empty statistics are written as nan.
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import DataError, ensure_venv, find_variants, read_columns, scheme_colors  # noqa: E402

ensure_venv()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import ticker  # noqa: E402

FLOW_COLUMNS = ["flow_id", "size_pkts", "finished"]
# metric column -> (output file stem, what it measures)
METRICS = {
    "slowdown": ("fct", "FCT from flow arrival (includes waiting in the source's FIFO NIC)"),
    "network_slowdown": ("fct_network", "in-network FCT (from the flow's first packet leaving its NIC)"),
}
DEFAULT_EDGES_PKTS = [10, 100, 1000, 10000]


@dataclass
class Bucket:
    name: str        # e.g. "(10,100]" — the key written to fct_summary.csv
    label: str       # tick label, bytes first
    lo_pkts: float   # exclusive
    hi_pkts: float   # inclusive (inf for the last)


@dataclass
class BucketStats:
    scheme: str
    bucket: str
    n: int                 # finished flows
    mean_slowdown: float
    p99_slowdown: float
    unfinished: int


def human_bytes(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:g} {unit}"
    return f"{b:g} B"


def make_buckets(edges_pkts: Sequence[float], mtu_bytes: int) -> List[Bucket]:
    if not edges_pkts or any(b <= a for a, b in zip(edges_pkts, edges_pkts[1:])) or edges_pkts[0] <= 0:
        raise DataError(f"bucket edges must be positive and increasing, got {list(edges_pkts)}")
    buckets: List[Bucket] = []
    lo = 0.0
    for hi in [*edges_pkts, math.inf]:
        if lo == 0:
            name, label = f"(0,{hi:g}]", f"≤{human_bytes(hi * mtu_bytes)}\n(≤{hi:g} pkts)"
        elif math.isinf(hi):
            name, label = f">{lo:g}", f">{human_bytes(lo * mtu_bytes)}\n(>{lo:g} pkts)"
        else:
            name = f"({lo:g},{hi:g}]"
            label = f"{human_bytes(lo * mtu_bytes)}–{human_bytes(hi * mtu_bytes)}\n({lo:g}–{hi:g} pkts)"
        buckets.append(Bucket(name, label, lo, hi))
        lo = hi
    return buckets


def summarize(scheme: str, cols: Dict[str, List], buckets: Sequence[Bucket], path: Path,
              metric: str = "slowdown") -> List[BucketStats]:
    size = np.asarray(cols["size_pkts"], dtype=float)
    slowdown = np.asarray(cols[metric], dtype=float)
    finished_raw = np.asarray(cols["finished"], dtype=float)
    if np.any(~np.isin(finished_raw, (0.0, 1.0))):
        raise DataError(f"{path}: column finished must be 0 or 1")
    finished = finished_raw == 1.0
    bad = finished & ~np.isfinite(slowdown)
    if np.any(bad):
        raise DataError(f"{path}: {int(bad.sum())} finished flow(s) without a slowdown "
                        f"(first flow_id {cols['flow_id'][int(np.argmax(bad))]:g})")

    def stats(name: str, sel: np.ndarray) -> BucketStats:
        done = slowdown[sel & finished]
        n = int(done.size)
        return BucketStats(scheme, name, n,
                           float(np.mean(done)) if n else math.nan,
                           float(np.percentile(done, 99)) if n else math.nan,
                           int(np.sum(sel & ~finished)))

    out = [stats(b.name, (size > b.lo_pkts) & (size <= b.hi_pkts)) for b in buckets]
    out.append(stats("all", np.ones_like(finished)))
    return out


def write_summary(rows: Sequence[BucketStats], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["scheme", "bucket", "n", "mean_slowdown", "p99_slowdown", "unfinished"])
        for r in rows:
            w.writerow([r.scheme, r.bucket, r.n, repr(r.mean_slowdown), repr(r.p99_slowdown), r.unfinished])


def percent_text(f: float) -> str:
    """A share of flows: 0.0036%, 1.1%, 10.0%; never rounded up to 100% while a flow finished."""
    if f in (0.0, 100.0):
        return f"{f:.0f}%"
    if f < 10:
        return f"{f:.2g}%"
    return f"{math.floor(f * 10) / 10:.1f}%"


def unfinished_note(totals: Dict[str, BucketStats]) -> str:
    """The line that replaces the unfinished-flows panel when every flow finished."""
    counts = sorted({t.n for t in totals.values()})
    each = f"{counts[0]} flows" if len(counts) == 1 else f"{counts[0]}–{counts[-1]} flows"
    return f"every flow finished in every scheme ({each} each)"


def figure(per_scheme: Dict[str, List[BucketStats]], buckets: Sequence[Bucket], title: str,
           metric: str = "slowdown") -> "matplotlib.figure.Figure":
    """The slowdown panels, and the unfinished flows per scheme only when some did not
    finish (one horizontal bar per scheme, its count on its own row); else a note."""
    schemes = list(per_scheme)
    colors = scheme_colors(schemes)
    totals = {s: next(r for r in per_scheme[s] if r.bucket == "all") for s in schemes}
    any_unfinished = any(t.unfinished for t in totals.values())
    if any_unfinished:
        fig, (ax_mean, ax_p99, ax_unf) = plt.subplots(
            1, 3, figsize=(17, 5.2), gridspec_kw={"width_ratios": [3, 3, 2]})
    else:
        fig, (ax_mean, ax_p99) = plt.subplots(1, 2, figsize=(13, 5.2))
    x = np.arange(len(buckets))
    for ax, field, what in ((ax_mean, "mean_slowdown", "mean"), (ax_p99, "p99_slowdown", "99th percentile")):
        for s in schemes:
            by_name = {r.bucket: r for r in per_scheme[s]}
            y = np.array([getattr(by_name[b.name], field) for b in buckets], dtype=float)
            y[~(y > 0)] = np.nan  # log axis: hide empty buckets
            ax.plot(x, y, marker="o", lw=1.8, color=colors[s], label=s)
        ax.set_yscale("log")
        # Plain numbers (20, 50, 100) instead of 2x10^1; minor ticks labelled when the range is narrow.
        ax.yaxis.set_major_formatter(ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
        ax.yaxis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
        ax.set_xticks(x)
        ax.set_xticklabels([b.label for b in buckets], fontsize=8.5)
        ax.set_xlabel("flow size (bytes at MTU; packets)")
        ax.set_ylabel(f"{what} FCT slowdown (FCT / ideal FCT)")
        ax.set_title(f"{what} slowdown by flow size", fontsize=10)
        ax.grid(True, which="both", axis="y", alpha=0.3)
        ax.legend(fontsize=9)

    if any_unfinished:
        # Horizontal bars, first scheme on top: each label sits on its own row, right of its
        # bar, so labels cannot run into each other however many schemes there are.
        frac = [100.0 * t.unfinished / max(1, t.n + t.unfinished) for t in totals.values()]
        rows = np.arange(len(schemes))[::-1]
        ax_unf.barh(rows, frac, color=[colors[s] for s in schemes], height=0.6)
        for row, t, f in zip(rows, totals.values(), frac):
            ax_unf.annotate(f"{t.unfinished} of {t.n + t.unfinished} ({percent_text(f)})", (f, row),
                            ha="left", va="center", fontsize=8.5, xytext=(3, 0), textcoords="offset points")
        ax_unf.set_yticks(rows)
        ax_unf.set_yticklabels(schemes, fontsize=9)
        ax_unf.set_xlabel("unfinished flows (% of flows)")
        # Room right of the longest bar for its label; no ticks out there (nor above 100%).
        ax_unf.set_xlim(0, max(frac) * 2.2)
        ax_unf.set_xticks([v for v in ax_unf.get_xticks() if 0 <= v <= min(100.0, max(frac) * 1.1)])
        ax_unf.set_xlim(0, max(frac) * 2.2)
        ax_unf.set_ylim(-0.6, len(schemes) - 0.4)
        ax_unf.set_title("flows not finished by end of run", fontsize=10)
        ax_unf.grid(True, axis="x", alpha=0.3)
    fig.suptitle(f"{title}: {METRICS[metric][1]}" if title else METRICS[metric][1])
    if any_unfinished:
        fig.tight_layout()
    else:
        fig.text(0.5, 0.01, unfinished_note(totals), ha="center", va="bottom", fontsize=10)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def plot(per_scheme: Dict[str, List[BucketStats]], buckets: Sequence[Bucket], out_png: Path, title: str,
         metric: str = "slowdown") -> None:
    fig = figure(per_scheme, buckets, title, metric)
    fig.savefig(out_png, dpi=130)
    plt.close(fig)


def run(results_dir: Path, out_dir: Optional[Path] = None, edges_pkts: Sequence[float] = DEFAULT_EDGES_PKTS,
        mtu_bytes: int = 1500, metric: str = "slowdown") -> Path:
    """Writes <stem>_slowdown.png and <stem>_summary.csv for `metric`; returns the PNG path."""
    if metric not in METRICS:
        raise DataError(f"unknown metric {metric!r} (known: {', '.join(METRICS)})")
    stem = METRICS[metric][0]
    out_dir = out_dir or results_dir
    variants = find_variants(results_dir, "flows.csv")
    if not variants:
        raise DataError(f"{results_dir}: no <scheme>/flows.csv found")
    buckets = make_buckets(edges_pkts, mtu_bytes)
    per_scheme: Dict[str, List[BucketStats]] = {}
    for scheme, path in variants.items():
        cols = read_columns(path, FLOW_COLUMNS + [metric], numeric=FLOW_COLUMNS + [metric])
        per_scheme[scheme] = summarize(scheme, cols, buckets, path, metric)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_summary([r for rows in per_scheme.values() for r in rows], out_dir / f"{stem}_summary.csv")
    png = out_dir / f"{stem}_slowdown.png"
    plot(per_scheme, buckets, png, title=results_dir.resolve().name, metric=metric)
    return png


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", type=Path, help="folder with one <scheme>/flows.csv per scheme variant")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: RESULTS_DIR)")
    ap.add_argument("--bucket-edges-pkts", default=",".join(map(str, DEFAULT_EDGES_PKTS)),
                    help="comma-separated upper bucket edges in packets (default %(default)s)")
    ap.add_argument("--mtu-bytes", type=int, default=1500, help="bytes per packet for labels (default %(default)s)")
    ap.add_argument("--metric", choices=list(METRICS), default="slowdown",
                    help="slowdown (from flow arrival) or network_slowdown (from first packet sent)")
    args = ap.parse_args(argv)
    try:
        edges = [float(e) for e in args.bucket_edges_pkts.split(",")]
    except ValueError:
        ap.error(f"--bucket-edges-pkts: '{args.bucket_edges_pkts}' is not a list of numbers")
    try:
        png = run(args.results_dir, args.out, edges, args.mtu_bytes, args.metric)
    except (DataError, OSError) as e:
        print(f"plot_fct: {e}", file=sys.stderr)
        return 1
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
