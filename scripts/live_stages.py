#!/usr/bin/env python3
"""Where a live round trip goes (issue 22; docs/live.md, "Where a round trip
goes"): joins the emulator's stages.csv (`flexplane-emulator live
--trace-stages`) with an endpoint's requests.csv (`flexplane-endpoint
--trace-stages`), both CLOCK_MONOTONIC ns on one machine, and prints each
stage's percentiles:

  to emulator    endpoint hands the request to its protocol window -> the comm
                 core's loop that received it began (send, veth, PMD, the comm
                 core's poll or nap)
  to timeslot    -> the engine was due to start the timeslot the request entered
                 its emulated endpoint at (ring, the engine's real-time pacing)
  emulated       -> the timeslot of its verdict was due (the emulated network:
                 its own timeslot, links, queues)
  to comm core   -> the comm core's loop that collected the verdict began (the
                 engine's work in that timeslot, the verdict ring, polling)
  comm core      -> that loop had sent the verdict's datagram (protocol, tx burst)
  to endpoint    -> the endpoint handed the verdict to its driver (veth, its
                 wake-up, decoding)
  round trip     the sum; machinery = round trip - emulated
With the NFQUEUE endpoint's requests.csv (flexplane-nfq-endpoint
--trace-stages; the lab's `lab.trace_stages: true`) two more:
  hold           the packet was read from NFQUEUE -> its request went into the
                 protocol window (the holder, hints, the window)
  release        the verdict came back -> the kernel was told (NFQUEUE verdict
                 batch); held = hold + round trip + release

Usage: scripts/live_stages.py EMULATOR_OUT ENDPOINT_OUT [--src ID] [--skip 0.05] [--csv FILE]
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

STAGES = ["to emulator", "to timeslot", "emulated", "to comm core", "comm core", "to endpoint", "round trip",
          "machinery"]
HELD_STAGES = ["hold", "release", "held"]  # NFQUEUE endpoint only


def pct(xs: list[float], p: float) -> float:
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def join(emu: Path, ep: Path, src: int) -> list[dict[str, float]]:
    sent = {}
    for r in csv.DictReader(open(ep / "requests.csv")):
        if r["verdict_ns"]:
            held = (int(r["held_ns"]), int(r["released_ns"])) if r.get("held_ns") and r.get("released_ns") else None
            sent[(int(r["flow"]), int(r["seq"]))] = (int(r["sent_ns"]), int(r["verdict_ns"]), held)
    rows = []
    for r in csv.DictReader(open(emu / "stages.csv")):
        if int(r["src"]) != src or not r["arrival_due_ns"] or not r["collect_ns"]:
            continue
        key = (int(r["flow"]), int(r["seq"]))
        if key not in sent:
            continue
        s, v, held = sent[key]
        rx, arr, ver = int(r["rx_ns"]), int(r["arrival_due_ns"]), int(r["verdict_due_ns"])
        col, tx = int(r["collect_ns"]), int(r["tx_ns"])
        us = lambda a, b: (b - a) / 1000.0  # noqa: E731
        row = {"sent_ns": s, "to emulator": us(s, rx), "to timeslot": us(rx, arr), "emulated": us(arr, ver),
               "to comm core": us(ver, col), "comm core": us(col, tx), "to endpoint": us(tx, v),
               "round trip": us(s, v), "machinery": us(s, v) - us(arr, ver)}
        if held:
            row.update({"hold": us(held[0], s), "release": us(v, held[1]), "held": us(held[0], held[1])})
        rows.append(row)
    rows.sort(key=lambda x: x["sent_ns"])
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("emulator_out", type=Path, help="the emulator's --out (stages.csv)")
    ap.add_argument("endpoint_out", type=Path, help="the endpoint's --out (requests.csv)")
    ap.add_argument("--src", type=int, default=0, help="the endpoint's id (default 0)")
    ap.add_argument("--skip", type=float, default=0.05, help="leave out this first fraction (ARP, session setup)")
    ap.add_argument("--csv", type=Path, help="also write the joined per-request stages here")
    ap.add_argument("--label", default="", help="prefix of each printed line")
    a = ap.parse_args()
    for f in (a.emulator_out / "stages.csv", a.endpoint_out / "requests.csv"):
        if not f.exists():
            raise SystemExit(f"error: {f}: missing (run with --trace-stages)")
    rows = join(a.emulator_out, a.endpoint_out, a.src)
    rows = rows[int(len(rows) * a.skip):]
    if not rows:
        raise SystemExit("error: no request with a verdict in both files")
    stages = STAGES + (HELD_STAGES if all("hold" in r for r in rows) else [])
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["sent_ns", *stages])
            w.writeheader()
            w.writerows({k: r[k] for k in ["sent_ns", *stages]} for r in rows)
    print(f"{a.label}{'stage':14s} {'p50 us':>9s} {'p90 us':>9s} {'p99 us':>9s}   (n = {len(rows)})")
    for st in stages:
        xs = sorted(r[st] for r in rows)
        print(f"{a.label}{st:14s} {pct(xs, 50):9.1f} {pct(xs, 90):9.1f} {pct(xs, 99):9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
