#!/usr/bin/env python3
"""Queue occupancy: a time series of one representative port per scheme, and
the CDF of per-port occupancy, one line per scheme.

    plots/plot_queues.py RESULTS_DIR [--out DIR] [--port ROUTER:PORT] [--log-x]

Reads RESULTS_DIR/<scheme>/occupancy.bin (the emulator's default: a row per
sample with a column per port, read by occupancy_io.py) or occupancy.csv
(columns timeslot, time_us, router, port, packets, bytes; one row per sampled
(time, router, port)) and writes to DIR (default RESULTS_DIR):

- queue_timeseries.png: packets queued over time at each scheme's most loaded
  port (highest mean occupancy over the samples; ties broken by router, port),
  or at --port ROUTER:PORT for every scheme;
- queue_cdf.png: empirical CDF of occupancy in packets over every sampled
  (time, router, port) of the scheme;
- queue_summary.csv: scheme, router, port (the representative), its mean and
  max packets, and the p50 / p99 / max packets over all ports.
"""
from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from occupancy_io import OccupancyError, find_occupancy, read_occupancy_bin  # noqa: E402
from results_io import DataError, ensure_venv, read_columns, scheme_colors  # noqa: E402

ensure_venv()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

OCC_COLUMNS = ["timeslot", "time_us", "router", "port", "packets", "bytes"]
OCC_NUMERIC = ["timeslot", "time_us", "packets", "bytes"]

PortKey = Tuple[str, str]  # (router, port) as written in the CSV


@dataclass
class SchemeQueues:
    scheme: str
    port: PortKey                 # the representative port
    time_us: np.ndarray           # its samples, sorted by time
    packets: np.ndarray
    all_packets: np.ndarray       # every sample of every port


def port_sort_key(key: PortKey) -> Tuple:
    """Numeric order when router/port are numbers, else by text."""
    def part(s: str) -> Tuple[int, float, str]:
        try:
            return (0, float(s), "")
        except ValueError:
            return (1, 0.0, s)
    return (part(key[0]), part(key[1]))


def find_variants(results_dir: Path) -> Dict[str, Path]:
    """scheme label -> its occupancy file (.bin preferred), for every subfolder that has one."""
    if not results_dir.is_dir():
        raise DataError(f"{results_dir}: not a directory")
    found: Dict[str, Path] = {}
    for sub in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        f = find_occupancy(sub)
        if f is not None:
            found[sub.name] = f
    return found


def pick_port(path: Path, by_port: Dict[PortKey, np.ndarray], port: Optional[PortKey]) -> PortKey:
    if port is None:
        # Most loaded: highest mean occupancy; ties -> first in (router, port) order.
        return min(by_port, key=lambda k: (-float(np.mean(by_port[k])), port_sort_key(k)))
    if port not in by_port:
        raise DataError(f"{path}: no samples for router {port[0]} port {port[1]}")
    return port


def load_binary(scheme: str, path: Path, port: Optional[PortKey]) -> SchemeQueues:
    try:
        occ = read_occupancy_bin(path)
    except (OccupancyError, KeyError, ValueError) as e:
        raise DataError(str(e)) from None
    by_port: Dict[PortKey, np.ndarray] = {}
    times: Dict[str, np.ndarray] = {}
    every: List[np.ndarray] = []
    for r in occ.routers:
        if not r.samples:
            continue
        m = np.frombuffer(r.packets, dtype=np.uint32).reshape(r.samples, r.ports).astype(float)
        times[r.name] = np.frombuffer(r.times, dtype=np.uint64) * (occ.timeslot_ns / 1000.0)
        every.append(m.ravel())
        for p in range(r.ports):
            by_port[(r.name, str(p))] = m[:, p]
    if not by_port:
        raise DataError(f"{path}: no occupancy samples")
    port = pick_port(path, by_port, port)
    return SchemeQueues(scheme, port, times[port[0]], by_port[port], np.concatenate(every))


def load_scheme(scheme: str, path: Path, port: Optional[PortKey]) -> SchemeQueues:
    if path.suffix == ".bin":
        return load_binary(scheme, path, port)
    cols = read_columns(path, OCC_COLUMNS, numeric=OCC_NUMERIC)
    if not cols["packets"]:
        raise DataError(f"{path}: no occupancy samples")
    packets = np.asarray(cols["packets"], dtype=float)
    time_us = np.asarray(cols["time_us"], dtype=float)
    if not np.all(np.isfinite(packets)) or not np.all(np.isfinite(time_us)):
        raise DataError(f"{path}: packets and time_us must be numbers on every row")
    keys: List[PortKey] = list(zip(cols["router"], cols["port"]))
    index: Dict[PortKey, List[int]] = {}
    for i, k in enumerate(keys):
        index.setdefault(k, []).append(i)
    port = pick_port(path, {k: packets[v] for k, v in index.items()}, port)
    idx = np.asarray(index[port])
    order = np.argsort(time_us[idx], kind="stable")
    return SchemeQueues(scheme, port, time_us[idx][order], packets[idx][order], packets)


def plot_timeseries(data: Sequence[SchemeQueues], out_png: Path, title: str) -> None:
    colors = scheme_colors([d.scheme for d in data])
    fig, ax = plt.subplots(figsize=(11, 4.8))
    for d in data:
        ax.plot(d.time_us, d.packets, drawstyle="steps-post", lw=1.2, color=colors[d.scheme],
                label=f"{d.scheme} (router {d.port[0]}, port {d.port[1]})")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("queue occupancy (packets)")
    ax.set_title("occupancy of the most loaded port" + (f" — {title}" if title else ""))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(out_png, dpi=130)
    plt.close(fig)


def plot_cdf(data: Sequence[SchemeQueues], out_png: Path, title: str, log_x: bool) -> None:
    colors = scheme_colors([d.scheme for d in data])
    fig, ax = plt.subplots(figsize=(8, 5))
    for d in data:
        x, counts = np.unique(d.all_packets, return_counts=True)  # occupancies repeat: plot each once
        y = np.cumsum(counts) / d.all_packets.size
        ax.step(x, y, where="post", lw=1.6, color=colors[d.scheme], label=d.scheme)
    if log_x:
        ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("per-port queue occupancy (packets)" + (" — symlog" if log_x else ""))
    ax.set_ylabel("CDF (fraction of port samples)")
    ax.set_ylim(0, 1.02)
    ax.set_title("queue occupancy CDF, all ports" + (f" — {title}" if title else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    fig.savefig(out_png, dpi=130)
    plt.close(fig)


def write_summary(data: Sequence[SchemeQueues], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["scheme", "router", "port", "port_mean_pkts", "port_max_pkts",
                    "all_p50_pkts", "all_p99_pkts", "all_max_pkts"])
        for d in data:
            w.writerow([d.scheme, d.port[0], d.port[1], repr(float(np.mean(d.packets))),
                        repr(float(np.max(d.packets))), repr(float(np.percentile(d.all_packets, 50))),
                        repr(float(np.percentile(d.all_packets, 99))), repr(float(np.max(d.all_packets)))])


def run(results_dir: Path, out_dir: Optional[Path] = None, port: Optional[PortKey] = None,
        log_x: bool = False) -> List[Path]:
    """Writes queue_timeseries.png, queue_cdf.png and queue_summary.csv; returns the PNG paths."""
    out_dir = out_dir or results_dir
    variants = find_variants(results_dir)
    if not variants:
        raise DataError(f"{results_dir}: no <scheme>/occupancy.bin or occupancy.csv found")
    data = [load_scheme(s, p, port) for s, p in variants.items()]
    out_dir.mkdir(parents=True, exist_ok=True)
    title = results_dir.resolve().name
    ts, cdf = out_dir / "queue_timeseries.png", out_dir / "queue_cdf.png"
    plot_timeseries(data, ts, title)
    plot_cdf(data, cdf, title, log_x)
    write_summary(data, out_dir / "queue_summary.csv")
    return [ts, cdf]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", type=Path, help="folder with one <scheme>/occupancy.bin (or .csv) per scheme variant")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: RESULTS_DIR)")
    ap.add_argument("--port", default=None, metavar="ROUTER:PORT",
                    help="plot this port's time series for every scheme instead of the most loaded one")
    ap.add_argument("--log-x", action="store_true", help="symlog x axis on the CDF")
    args = ap.parse_args(argv)
    port: Optional[PortKey] = None
    if args.port is not None:
        router, sep, p = args.port.rpartition(":")
        if not sep or not router or not p:
            ap.error(f"--port: expected ROUTER:PORT, got '{args.port}'")
        port = (router, p)
    try:
        pngs = run(args.results_dir, args.out, port, args.log_x)
    except (DataError, OSError) as e:
        print(f"plot_queues: {e}", file=sys.stderr)
        return 1
    for p in pngs:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
