"""What the VM tests run: emulator configurations, qdisc commands, traffic,
and the analysis of what the emulator recorded (docs/kmod.md, "VM tests").

Three endpoint VMs: vm0 = endpoint 0 (10.77.0.10, fd77::10), vm1 = 1, vm2 = 2.
vm0 and vm1 send to vm2, so the bottleneck is port 2 of the emulated ToR
(each sender's emulated NIC runs at the same rate as the ToR port).
"""
from __future__ import annotations

import json
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from vmlab import Guest, Lab, read_csv, vm_ip, vm_ip6

# 4 Mbit/s links (3 ms timeslots): a rate two TCG guests fill through the
# qdisc even on a loaded 2-core host (at 10 Mbit/s they reached only ~75 % of
# the link with other builds running, at 5 Mbit/s ~90 %), so the emulated
# queues, not the VMs, are the bottleneck (docs/kmod.md explains the choice).
RATE_GBPS = 0.004
TIMESLOT_S = 1500 * 8 / (RATE_GBPS * 1e9)
# DCTCP's marking threshold: small next to the buffers (the DCTCP paper's 65
# packets at 10 Gbit/s), yet 180 ms of queue at 4 Mbit/s, so the vCPU
# stalls of a loaded host (tens of ms) do not drain it (K = 30 did, with
# the median falling to 11-22 as the host's load rose).
DCTCP_K = 60
SMALL_CAP = 8
LARGE_CAP = 4000
EMU_RTO_US = 50000
BOTTLENECK = ("tor0", "2")

QDISC = ("flexplane emulator 10.77.0.2 endpoints 10.77.0.10 endpoints6 fd77::10 count 3 "
         "rto 50ms")


def emu_config(routers: str, rate_gbps: float = RATE_GBPS, occupancy_us: int = 12000) -> str:
    return f"""description: flexplane kernel module VM test
seed: 1
network: {{link_rate_gbps: {rate_gbps}}}
topology: {{kind: single_rack, endpoints: 3}}
routers: {{default: {routers}}}
workload: {{kind: poisson, pattern: all_to_all, load: 0.1, fixed_size_pkts: 1}}
run: {{duration_ms: 1, occupancy_interval_us: {occupancy_us}}}
live: {{sleep_when_ahead: true, stats_interval_s: 1}}
"""


def qdisc(g: Guest, verb: str = "add", extra: str = "") -> str:
    return g.sh(f"tc qdisc {verb} dev eth0 root {QDISC} {extra}")


SERVER_PORTS = (5201, 5202, 5203)


def start_servers(g: Guest) -> None:
    """(Re)starts vm2's iperf3 servers: a listening socket keeps the congestion
    control of its creation, and a DCTCP sender's ECT SYN only gets ECN from a
    listener that needs ECN itself (tcp_ecn_create_request)."""
    g.sh("killall iperf3 2>/dev/null; sleep 0.3; "
         + "; ".join(f"iperf3 -s -D -p {p}" for p in SERVER_PORTS))


def set_tcp(lab: Lab, cc: str, ecn: int) -> None:
    for g in lab.guests:
        g.sh(f"sysctl -qw net.ipv4.tcp_congestion_control={cc} net.ipv4.tcp_ecn={ecn}")
    start_servers(lab.guests[2])


# ---- counters ----

def snapshot(lab: Lab) -> list[dict]:
    return [g.xstats() for g in lab.guests]


def delta(before: dict, after: dict) -> dict:
    return {k: v - before[k] for k, v in after.items()
            if isinstance(v, int) and not isinstance(v, bool) and k in before}


def quiesce(lab: Lab, timeout: float = 60) -> list[dict]:
    """Waits until no VM holds a packet or owes a verdict; returns the stats."""
    deadline = time.time() + timeout
    while True:
        st = snapshot(lab)
        if all(s["pending"] == 0 and s["held"] == 0 for s in st):
            return st
        if time.time() > deadline:
            raise AssertionError("packets still held after %d s: %s" % (
                timeout, [(s["held"], s["pending"], s["state"]) for s in st]))
        time.sleep(0.5)


def emulator_records(out: Path) -> tuple[Counter, Counter]:
    """Requests per source, verdicts per (source, action), as the emulator recorded them."""
    arrivals = Counter(int(r["src"]) for r in read_csv(out / "arrivals.csv"))
    verdicts = Counter((int(r["src"]), r["action"]) for r in read_csv(out / "verdicts.csv"))
    return arrivals, verdicts


def match_emulator(before: list[dict], after: list[dict], out: Path) -> list[dict]:
    """The module's counters over a phase equal what the emulator recorded, per endpoint:
    every request it sent reached the engine once, and it applied exactly the
    verdicts the engine gave. Returns the per-VM deltas."""
    arrivals, verdicts = emulator_records(out)
    deltas = []
    for i, (b, a) in enumerate(zip(before, after)):
        d = delta(b, a)
        assert a["pending"] == 0, f"vm{i}: {a['pending']} requests still without verdict"
        # a fallback gives requests back that the emulator may still answer
        # (to a session that is gone): then the records cannot match
        assert a["fallback_events"] == b["fallback_events"], \
            f"vm{i} fell back (no verdict for the hold time) during the phase: {delta(b, a)}"
        got = {"requests": d["requests"] - d["aborted"], "release": d["verdict_release"],
               "mark": d["verdict_mark"], "drop": d["verdict_drop"]}
        want = {"requests": arrivals[i], "release": verdicts[(i, "release")],
                "mark": verdicts[(i, "mark")], "drop": verdicts[(i, "drop")]}
        assert got == want, f"vm{i}: module {got} != emulator {want}"
        assert d["verdicts"] == d["verdict_release"] + d["verdict_mark"] + d["verdict_drop"]
        deltas.append(d)
    return deltas


# ---- traffic ----

def iperf_start(g: Guest, name: str, dst: str, port: int, args: str) -> None:
    g.sh(f"rm -f /tmp/{name}.json; iperf3 -c {dst} -p {port} -J {args} > /tmp/{name}.json 2>&1 &")


def iperf_result(g: Guest, name: str, timeout: float = 120) -> dict:
    """Waits for the iperf3 client to finish and returns its JSON report."""
    deadline = time.time() + timeout
    while True:
        text = g.sh(f"cat /tmp/{name}.json", timeout=60)
        try:
            j = json.loads(text)
            if "end" in j or "error" in j:
                return j
        except json.JSONDecodeError:
            pass
        if time.time() > deadline:
            raise AssertionError(f"{g.name}: iperf3 {name} did not finish: {text[-500:]}")
        time.sleep(1)


def mbps(j: dict) -> float:
    return j["end"]["sum_received"]["bits_per_second"] / 1e6


# ---- queues of the emulated network ----

def bottleneck_occupancy(lab: Lab, senders: tuple[int, ...], skip_s: float, tail_s: float) -> list[int]:
    """Backlog (packets) of the bottleneck port over the part of the phase where
    every sender was sending: from skip_s after the last sender started to
    tail_s before the first one stopped (replayed in virtual time from the
    recorded arrivals)."""
    out = lab.emulator.replay(lab.dir / f"{lab.emulator.out.name}-replay")
    starts, ends = {}, {}
    for r in read_csv(lab.emulator.out / "arrivals.csv"):
        s, t = int(r["src"]), int(r["timeslot"])
        if s in senders:
            starts[s] = min(starts.get(s, t), t)
            ends[s] = max(ends.get(s, t), t)
    lo = max(starts.values()) + skip_s / TIMESLOT_S
    hi = min(ends.values()) - tail_s / TIMESLOT_S
    return [int(r["packets"]) for r in read_csv(out / "occupancy.csv")
            if (r["router"], r["port"]) == BOTTLENECK and lo <= int(r["timeslot"]) <= hi]


def summary(values: list[int]) -> dict:
    v = sorted(values)
    return {"samples": len(v), "median": statistics.median(v), "p10": v[len(v) // 10],
            "p90": v[len(v) * 9 // 10], "max": v[-1]}


DMESG_BAD = ("WARNING:", "BUG:", "BUG ", "Oops", "general protection", "Call Trace", "refcount_t",
             "corruption", "Poison overwritten", "Redzone", "Objects remaining", "slab error",
             "INFO: task", "soft lockup", "hard LOCKUP", "self-detected stall", "UBSAN", "leak",
             "lockdep", "recursive locking", "sleeping function called", "scheduling while atomic")


def dmesg_problems(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if any(p in ln for p in DMESG_BAD)]


__all__ = ["vm_ip", "vm_ip6"]


STAGES = ("batch", "trip", "release")


def stage_delta(before: dict, after: dict) -> dict:
    """Each stage of the qdisc's hold (docs/kmod.md, "Stages") between two
    xstats dumps: count, mean and, from the histograms' difference (the bucket
    each value fell in, read at its middle), p50 and p99, in microseconds."""
    out = {}
    for name in STAGES:
        a, b = before["stages"][name], after["stages"][name]
        n = b["count"] - a["count"]
        hist = dict((lo, c) for lo, c in b["hist"])
        for lo, c in a["hist"]:
            hist[lo] -= c
        lows = sorted(lo for lo, c in hist.items() if c)

        def quantile(q: float) -> float:
            want, seen = max(1, round(q * n)), 0
            for lo in lows:
                seen += hist[lo]
                if seen >= want:
                    return bucket_middle(lo) / 1000
            return 0.0
        out[name] = {"count": n, "mean_us": (b["sum_ns"] - a["sum_ns"]) / n / 1000 if n else 0.0,
                     "p50_us": quantile(0.5), "p99_us": quantile(0.99)}
    return out


def bucket_middle(lo: int) -> float:
    """The middle of the stage histogram's bucket that starts at lo ns
    (uapi/flexplane.h: two buckets per power of two)."""
    if lo < 2:
        return lo + 0.5
    top = 1 << (lo.bit_length() - 1)          # the power of two at or below lo
    width = top // 2                          # each half-octave bucket
    return lo + width / 2


def ping_rtts(text: str) -> list[float]:
    """The round trips (ms) busybox ping printed, one per reply."""
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", text)]


def late_share(out: Path) -> dict:
    """The emulator run's lateness (live_summary.yaml): late timeslots over
    all, and the worst lag, so a figure measured while the engine fell
    behind real time says so (issue 22, item 4)."""
    text = (out / "live_summary.yaml").read_text()
    end = int(re.search(r"^end_timeslot: (\d+)", text, re.M).group(1))
    late = sum(int(x) for x in re.search(r"^late_timeslots: \[([\d, ]*)\]", text, re.M).group(1).split(",") if x.strip())
    lag = max(float(x) for x in re.search(r"^max_lag_us: \[([-\d., e+]*)\]", text, re.M).group(1).split(","))
    return {"late_pct": round(100 * late / max(end, 1), 2), "max_lag_us": round(lag, 1)}
