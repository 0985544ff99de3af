#!/usr/bin/env python3
"""Summarise and compare validation runs (flexplane vs ns-3).

Both simulators write the same files (docs/output-format.md,
docs/validation.md): flows.csv with `size_pkts`, `fct_us`, `finished`, and
occupancy.csv with `timeslot,time_us,router,port,packets,bytes`.

  compare.py summary DIR [--port P] [--from-us T0] [--until-us T1]
      per size bucket: flows, finished, mean and p99 FCT; queue occupancy
      median, p99 and max over the sampled ports (all, or --port) and window.
  compare.py compare FLEXPLANE_DIR NS3_DIR [same options] [--fct-tol 0.15] [--queue-tol 0.20]
                     [--ns3-fct fct_with_handshake_us] [--ns3-queue full_packets] [--common-window]
      the same for both, side by side, with the relative difference and
      whether it is within the issue's tolerance (FCT mean/p99 15 %, queue
      median/p99 20 %). Exit status 1 if any compared value is outside;
      the last line counts the values within tolerance (buckets with
      flows on both sides only).
      Where both flows.csv have them, the senders' RTOs and ECN window cuts
      per bucket follow (for reading, not part of the verdict).
  compare.py ensemble --flexplane DIR... --ns3 DIR... [the options of compare]
      the same verdict over several runs per side (validation/ensemble.sh:
      the same trace with start times perturbed): each side's flows and
      queue samples are pooled (mean and p99 of every flow of every run; RTO
      counts are per run on average), then a table of the single runs'
      spread per side: the range of each value over the runs, and how far
      the ends of that range lie from the side's pooled value; and each
      side pooled over the first and the second half of its runs, marked
      "(apart)" where the two sides' halves do not overlap.

Standard library only, so it runs without the project's venv.
"""
from __future__ import annotations

import argparse
import csv
import functools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

# Flow-size buckets in abstract packets (upper bounds, inclusive).
BUCKETS: list[tuple[str, int, float]] = [
    ("1-10", 1, 10),
    ("11-100", 11, 100),
    ("101-1000", 101, 1000),
    ("1001-10000", 1001, 10000),
    (">10000", 10001, math.inf),
]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]); NaN for no values."""
    if not values:
        return math.nan
    s = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(s)))
    return s[rank - 1]


@dataclass
class BucketStats:
    name: str
    flows: int
    finished: int
    mean_fct_us: float
    p99_fct_us: float


@dataclass
class QueueStats:
    samples: int
    median: float
    p99: float
    max: float


@functools.lru_cache(maxsize=None)  # ensemble reads each run for the pooled, single-run and half tables
def read_flows(run_dir: Path, column: str) -> list[dict[str, str]]:
    path = run_dir / "flows.csv"
    if not path.is_file():
        raise SystemExit(f"compare: {path} does not exist")
    rows = list(csv.DictReader(path.open()))
    for col in ("size_pkts", column, "finished"):
        if rows and col not in rows[0]:
            raise SystemExit(f"compare: {path} has no column '{col}'")
    return rows


def as_list(run_dirs: Path | list[Path]) -> list[Path]:
    """One run folder, or several to pool."""
    return run_dirs if isinstance(run_dirs, list) else [run_dirs]


def fct_buckets(run_dirs: Path | list[Path], column: str = "fct_us") -> list[BucketStats]:
    """Per bucket over the flows of one run, or of several pooled."""
    rows = [r for d in as_list(run_dirs) for r in read_flows(d, column)]
    out = []
    for name, lo, hi in BUCKETS:
        sel = [r for r in rows if lo <= int(r["size_pkts"]) <= hi]
        fcts = [float(r[column]) for r in sel if r["finished"] == "1" and r[column]]
        mean = sum(fcts) / len(fcts) if fcts else math.nan
        out.append(BucketStats(name, len(sel), len(fcts), mean, percentile(fcts, 99)))
    return out


# Sender events both simulators count per flow (flows.csv), summed per bucket.
EVENT_COLUMNS = ("timeouts", "ecn_reductions")


def event_counts(run_dirs: Path | list[Path]) -> list[dict[str, float]] | None:
    """Per bucket, the sum of each EVENT_COLUMNS column (per run on average
    over several); None if one is missing."""
    dirs = as_list(run_dirs)
    out = [{c: 0.0 for c in EVENT_COLUMNS} for _ in BUCKETS]
    for d in dirs:
        rows = list(csv.DictReader((d / "flows.csv").open()))
        if not rows or any(c not in rows[0] for c in EVENT_COLUMNS):
            return None
        for o, (_, lo, hi) in zip(out, BUCKETS):
            for c in EVENT_COLUMNS:
                o[c] += sum(int(r[c] or 0) for r in rows if lo <= int(r["size_pkts"]) <= hi) / len(dirs)
    return out


def count(x: float) -> str:
    return f"{x:.0f}" if x == int(x) else f"{x:.1f}"


# ns-3's full data frame in IP bytes (occupancy.csv's `bytes`): 1458 B of
# payload + 40 B of headers (docs/validation.md, "Mapping").
NS3_FULL_PACKET_BYTES = 1498


def last_sample_us(run_dir: Path) -> float | None:
    """Time of the last occupancy sample (the end of the sampled run)."""
    path = run_dir / "occupancy.csv"
    if not path.is_file():
        return None
    last = None
    with path.open() as f:
        for r in csv.DictReader(f):
            last = r["time_us"]
    return None if last is None else float(last)


def queue_stats(run_dirs: Path | list[Path], port: int | None, t0: float | None, t1: float | None,
                full_packets_of: int | None = None) -> QueueStats | None:
    """Occupancy percentiles in packets, or with `full_packets_of` in bytes /
    that size (ns-3's queues hold ACKs too: 40-byte packets that count as
    one packet each but weigh ~3 % of a data packet). Several runs: their
    samples pooled."""
    paths = [d / "occupancy.csv" for d in as_list(run_dirs)]
    if not all(p.is_file() for p in paths):
        return None
    vals = []
    for path in paths:
        with path.open() as f:
            for r in csv.DictReader(f):
                if port is not None and int(r["port"]) != port:
                    continue
                t = float(r["time_us"])
                if (t0 is not None and t < t0) or (t1 is not None and t > t1):
                    continue
                vals.append(float(r["bytes"]) / full_packets_of if full_packets_of else float(r["packets"]))
    if not vals:
        return QueueStats(0, math.nan, math.nan, math.nan)
    return QueueStats(len(vals), percentile(vals, 50), percentile(vals, 99), max(vals))


def fmt(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}"


def summary(args: argparse.Namespace) -> int:
    d = Path(args.dir)
    print(f"# {d}")
    print("| size (pkts) | flows | finished | mean FCT (us) | p99 FCT (us) |")
    print("|---|---|---|---|---|")
    for b in fct_buckets(d):
        print(f"| {b.name} | {b.flows} | {b.finished} | {fmt(b.mean_fct_us)} | {fmt(b.p99_fct_us)} |")
    q = queue_stats(d, args.port, args.from_us, args.until_us)
    if q:
        print(f"\nqueue occupancy (pkts, {q.samples} samples): median {fmt(q.median)}, p99 {fmt(q.p99)}, max {fmt(q.max)}")
    return 0


def rel(a: float, b: float) -> float:
    """Relative difference of a (flexplane) from b (ns-3 reference)."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if b == 0:
        return 0.0 if a == 0 else math.inf
    return (a - b) / b


def compare(args: argparse.Namespace) -> int:
    if args.cmd == "compare":
        fx, ns = [Path(args.flexplane)], [Path(args.ns3)]
        print(f"# flexplane {fx[0]} vs ns-3 {ns[0]}")
    else:
        fx, ns = [Path(d) for d in args.flexplane], [Path(d) for d in args.ns3]
        print(f"# ensemble: flexplane {len(fx)} runs ({fx[0]} ...) vs ns-3 {len(ns)} runs ({ns[0]} ...), pooled")
    ok = True
    counted = {"FCT": [0, 0], "queue": [0, 0]}  # values compared, within tolerance
    print("| size (pkts) | flows | mean FCT flexplane / ns-3 (us) | diff | p99 FCT flexplane / ns-3 (us) | diff |")
    print("|---|---|---|---|---|---|")
    for a, b in zip(fct_buckets(fx), fct_buckets(ns, args.ns3_fct)):
        dm, dp = rel(a.mean_fct_us, b.mean_fct_us), rel(a.p99_fct_us, b.p99_fct_us)
        marks = []
        for d in (dm, dp):
            bad = not math.isnan(d) and abs(d) > args.fct_tol
            ok &= not bad
            if not math.isnan(d):
                counted["FCT"][0] += 1
                counted["FCT"][1] += not bad
            marks.append(("**" if bad else "") + ("-" if math.isnan(d) else f"{d:+.1%}") + ("**" if bad else ""))
        print(f"| {a.name} | {a.flows}/{b.flows} | {fmt(a.mean_fct_us)} / {fmt(b.mean_fct_us)} | {marks[0]} "
              f"| {fmt(a.p99_fct_us)} / {fmt(b.p99_fct_us)} | {marks[1]} |")
    ea, eb = event_counts(fx), event_counts(ns)
    if ea and eb:
        per_run = " per run" if len(fx) > 1 or len(ns) > 1 else ""
        print(f"\n| size (pkts) | RTOs{per_run} flexplane / ns-3 | ECN cuts{per_run} flexplane / ns-3 |")
        print("|---|---|---|")
        for (name, _, _), x, y in zip(BUCKETS, ea, eb):
            print(f"| {name} | {count(x['timeouts'])} / {count(y['timeouts'])} "
                  f"| {count(x['ecn_reductions'])} / {count(y['ecn_reductions'])} |")
    until = args.until_us
    if args.common_window:  # flexplane samples duration + drain; ns-3 stops at its last flow's end
        ends = [e for d in fx + ns if (e := last_sample_us(d)) is not None]
        if ends:
            until = min(ends + ([until] if until is not None else []))
            print(f"\nqueue samples until {until:.1f} us (the shorter run's last sample)")
    qa = queue_stats(fx, args.port, args.from_us, until)
    qb = queue_stats(ns, args.port, args.from_us, until,
                     NS3_FULL_PACKET_BYTES if args.ns3_queue == "full_packets" else None)
    if qa and qb:
        print("\n| queue (pkts) | flexplane | ns-3 | diff |")
        print("|---|---|---|---|")
        for name, x, y in (("median", qa.median, qb.median), ("p99", qa.p99, qb.p99)):
            d = rel(x, y)
            bad = not math.isnan(d) and abs(d) > args.queue_tol
            ok &= not bad
            if not math.isnan(d):
                counted["queue"][0] += 1
                counted["queue"][1] += not bad
            print(f"| {name} | {fmt(x)} | {fmt(y)} | {'**' if bad else ''}{d:+.1%}{'**' if bad else ''} |")
        print(f"| max | {fmt(qa.max)} | {fmt(qb.max)} | |")
    if args.cmd == "ensemble":
        spread(fx, ns, args)
    print("\nwithin tolerance" if ok else "\nOUTSIDE tolerance (marked **)")
    print(f"{counted['FCT'][1]} of {counted['FCT'][0]} FCT values within {args.fct_tol:.0%}, "
          f"{counted['queue'][1]} of {counted['queue'][0]} queue values within {args.queue_tol:.0%}")
    return 0 if ok else 1


def spread(fx: list[Path], ns: list[Path], args: argparse.Namespace) -> None:
    """How much single runs of each side vary: per bucket, the range of the
    runs' mean and p99 FCT, and the larger distance of its ends from the
    pooled value (what one run can be off by, on that side alone)."""
    print("\nsingle runs' spread: range over the runs (largest distance from the side's pooled value)")
    print("| size (pkts) | mean FCT flexplane | ns-3 | p99 FCT flexplane | ns-3 |")
    print("|---|---|---|---|---|")
    sides = []
    for dirs, column in ((fx, "fct_us"), (ns, args.ns3_fct)):
        sides.append((fct_buckets(dirs, column), [fct_buckets(d, column) for d in dirs]))

    def cell(pooled: float, values: list[float]) -> str:
        vals = [v for v in values if not math.isnan(v)]
        if not vals or math.isnan(pooled) or pooled == 0:
            return "-"
        far = max(abs(v - pooled) for v in vals) / pooled
        return f"{fmt(min(vals))}-{fmt(max(vals))} ({far:.0%})"

    for i, (name, _, _) in enumerate(BUCKETS):
        cells = []
        for attr in ("mean_fct_us", "p99_fct_us"):
            for pooled, runs in sides:
                cells.append(cell(getattr(pooled[i], attr), [getattr(r[i], attr) for r in runs]))
        print(f"| {name} | " + " | ".join(cells) + " |")
    if len(fx) < 2 or len(ns) < 2:
        return
    # The pooled values are estimates too: each side's two halves (first and
    # second half of its runs) show how far they could move. Where the two
    # sides' half ranges overlap, the runs cannot tell them apart.
    print("\nhalves: each side pooled over the first and over the second half of its runs")
    print("| size (pkts) | mean FCT flexplane | ns-3 | p99 FCT flexplane | ns-3 |")
    print("|---|---|---|---|---|")
    halves = [(fct_buckets(d[: len(d) // 2], c), fct_buckets(d[len(d) // 2:], c))
              for d, c in ((fx, "fct_us"), (ns, args.ns3_fct))]
    for i, (name, _, _) in enumerate(BUCKETS):
        cells = []
        for attr in ("mean_fct_us", "p99_fct_us"):
            ranges = []
            for a, b in halves:
                x, y = getattr(a[i], attr), getattr(b[i], attr)
                ranges.append((min(x, y), max(x, y)))
                cells.append("-" if math.isnan(x) or math.isnan(y) else f"{fmt(x)}, {fmt(y)}")
            (lo1, hi1), (lo2, hi2) = ranges
            if not any(math.isnan(v) for v in (lo1, hi1, lo2, hi2)) and (hi1 < lo2 or hi2 < lo1):
                cells[-1] += " (apart)"
        print(f"| {name} | " + " | ".join(cells) + " |")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("summary", "compare", "ensemble"):
        s = sub.add_parser(name)
        if name == "summary":
            s.add_argument("dir")
        else:
            if name == "compare":
                s.add_argument("flexplane")
                s.add_argument("ns3")
            else:
                s.add_argument("--flexplane", nargs="+", required=True, help="flexplane run folders")
                s.add_argument("--ns3", nargs="+", required=True, help="ns-3 run folders")
            s.add_argument("--fct-tol", type=float, default=0.15)
            s.add_argument("--queue-tol", type=float, default=0.20)
            s.add_argument("--ns3-fct", default="fct_us", choices=("fct_us", "fct_with_handshake_us"),
                           help="ns-3's FCT from the connection's establishment (default) or from the flow's "
                                "start (includes the SYN's wait in the host queue and the handshake)")
            s.add_argument("--ns3-queue", default="packets", choices=("packets", "full_packets"),
                           help="ns-3's backlog in packets (default; ACKs count as one each) or in full data "
                                f"packets (bytes / {NS3_FULL_PACKET_BYTES}: ACKs weigh what they take on the wire)")
            s.add_argument("--common-window", action="store_true",
                           help="queue samples only until the shorter run's last sample (flexplane samples "
                                "duration + drain, ns-3 stops at its last flow's end)")
        s.add_argument("--port", type=int, default=None, help="only this switch port's occupancy")
        s.add_argument("--from-us", type=float, default=None, help="occupancy samples from this time")
        s.add_argument("--until-us", type=float, default=None, help="occupancy samples until this time")
    args = p.parse_args(argv)
    return summary(args) if args.cmd == "summary" else compare(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
