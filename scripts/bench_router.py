#!/usr/bin/env python3
"""flexplane-router forwarding speed, with dpdk-testpmd io-forward on the
same devices in the same invocation as the floor (docs/performance.md).

Devices (virtual: this measures the software, not a NIC):
  port 0, 1  net_pcap rx_pcap=<1024 flows of 64-byte frames>,infinite_rx=1
             (the PMD replays the file from memory, copying each frame into a
             fresh mbuf; no tx file: transmit frees the mbuf)
  port 2, 3  net_pcap rx_pcap=<empty file> (receives nothing; transmit frees)
Traffic entering port 0 is routed to port 2, port 1 to port 3 (256 /24
routes each plus a /25 that needs a second LPM level). With 2 workers,
worker i polls port i and owns the port its traffic leaves by, so nothing
crosses between cores. testpmd io-forwards 0->2 and 1->3 (and the empty
2->0, 3->1), touching no packet data: the floor is the PMD cost.

Configurations (the router's own hot path only differs):
  testpmd     dpdk-testpmd --forward-mode=io
  lpm         flexplane-router, run.queueing false: RFC 1812 checks, LPM,
              TTL/checksum, MAC rewrite, straight to the device
  droptail    ... + the droptail scheme (classify/enqueue/schedule), unpaced port
  red_drr     ... + classifier by_flow (32 queues), queue_manager red, scheduler drr

Each run forwards for --seconds; the rate is taken over the last
(seconds - 1) s from the program's own counters (testpmd: `show port stats`
twice; router: stats.csv). "cycles/packet" = cores x TSC Hz / packets per
second (every cycle of the forwarding cores, both programs busy-poll); the
router also reports its own rte_rdtsc split (process = parse + LPM + scheme,
without the PMD's rx and tx). Runs are interleaved, --reps times; medians and
[min, max] are printed, and the raw rows written to --csv.

  sudo scripts/bench_router.py --reps 3 --seconds 5 --cores 1 2
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "router"))
import pkt  # noqa: E402

import yaml  # noqa: E402

PORT_MAC = "02:00:00:00:00:10"
EAL_COMMON = ["--no-pci", "--no-telemetry", "--log-level=error"]
HUGE = False  # --huge: --in-memory on hugepages the caller reserved, else --no-huge (4 KiB pages)


def eal_mem() -> list[str]:
    return EAL_COMMON + (["--in-memory"] if HUGE else ["--no-huge", "-m", "1024", "--no-shconf"])


def lcores(cores: int) -> list[str]:
    """CPU 0 (and 1): the forwarding lcores."""
    return ["-l", "0"] if cores == 1 else ["-l", "0,1"]


def make_inputs(d: Path) -> list[str]:
    for p in (0, 1):
        frames = [pkt.udp_frame(PORT_MAC, "02:00:00:00:01:10", f"10.{p + 1}.0.2", f"10.{100 + p}.{i % 256}.{1 + i // 256}",
                                sport=1000 + i) for i in range(1024)]
        assert len(frames[0]) == 60  # 64 bytes on the wire with the FCS
        pkt.write_pcap(d / f"in{p}.pcap", frames)
    pkt.write_pcap(d / "empty.pcap", [])
    routes = [f"10.{100 + p}.{i}.0/24 port {2 + p} mac 02:00:00:00:0{p}:{i % 256:02x}" for p in (0, 1) for i in range(256)]
    routes += [f"10.{100 + p}.7.0/25 port {2 + p} mac 02:00:00:00:0{p}:fe" for p in (0, 1)]
    (d / "routes.txt").write_text("\n".join(routes) + "\n")
    return ["--vdev", f"net_pcap0,rx_pcap={d / 'in0.pcap'},infinite_rx=1",
            "--vdev", f"net_pcap1,rx_pcap={d / 'in1.pcap'},infinite_rx=1",
            "--vdev", f"net_pcap2,rx_pcap={d / 'empty.pcap'}",
            "--vdev", f"net_pcap3,rx_pcap={d / 'empty.pcap'}"]


SCHEMES = {  # mode: (router config, run.queueing)
    "lpm": ("{scheme: droptail}", False),
    "droptail": ("{scheme: droptail}", True),
    "red_drr": ("{classifier: {name: by_flow, num_queues: 32}, queue_manager: red, scheduler: drr}", True),
}


def run_router(binary: Path, d: Path, vdevs: list[str], mode: str, cores: int, seconds: float, burst: int) -> dict:
    out = d / f"out-{mode}-{cores}"
    scheme, queueing = SCHEMES[mode]
    (d / "r.yaml").write_text(f"""
name: bench
router: {scheme}
ports:
  0: {{ip: 10.1.0.1/24, mac: "{PORT_MAC}"}}
  1: {{ip: 10.2.0.1/24, mac: "{PORT_MAC}"}}
  2: {{ip: 10.3.0.1/24}}
  3: {{ip: 10.4.0.1/24}}
routes: routes.txt
run: {{burst: {burst}, stats_interval_s: 0.5, queueing: {str(queueing).lower()}, watch_routes: false, drain_timeout_ms: 100}}
output: {{dir: {out}}}
""")
    cmd = [str(binary), str(d / "r.yaml"), "-q", "--duration-s", str(seconds + 0.5), "--",
           *lcores(cores), *eal_mem(), *vdevs]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, cwd=d)
    if p.returncode != 0:
        raise RuntimeError(f"router failed: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    # The stats.csv rows are written by the control thread at least every
    # 0.5 s (and once at the end); the stats the rows give are cumulative.
    rows = list(csv.DictReader(open(out / "stats.csv")))
    by_t: dict[float, int] = {}
    for r in rows:
        if int(r["port"]) in (0, 1):
            by_t[float(r["time_s"])] = by_t.get(float(r["time_s"]), 0) + int(r["rx_packets"])
    ts = sorted(t for t in by_t if t <= seconds + 0.01)
    if len(ts) < 2:
        raise RuntimeError(f"{mode}: only {len(ts)} stats rows in {seconds} s (machine too loaded? use more --seconds)")
    t0 = min(ts[:-1], key=lambda t: abs(t - 1.0))  # skip the first second (start-up)
    t1 = ts[-1]
    pps = (by_t[t1] - by_t[t0]) / (t1 - t0)
    meta = yaml.safe_load((out / "metadata.yaml").read_text())
    ws = meta["workers"]
    rx = sum(w["rx_packets"] for w in ws)
    proc = sum(w["process_cycles_per_packet"] * w["rx_packets"] for w in ws) / max(rx, 1)
    busy = sum(w["busy_cycles"] for w in ws) / max(rx, 1)
    drops = sum(meta["fast_path"]["drops"].values()) + sum(meta["fast_path"]["exceptions"].values())
    if drops or meta["fast_path"]["forwarded"] != rx:
        raise RuntimeError(f"{mode}: not every packet was forwarded: {meta['fast_path']}")
    return {"pps": pps, "tsc_hz": meta["tsc_hz"], "process_cpp": proc, "busy_cpp": busy}


def run_testpmd(d: Path, vdevs: list[str], cores: int, seconds: float, burst: int) -> dict:
    # Main lcore sleeps on the prompt: put it beside a forwarding lcore.
    lc = ["--lcores", "0@0,1@0"] if cores == 1 else ["--lcores", "0@0,1@0,2@1"]
    # stdbuf: testpmd prints its stats with stdio, block-buffered on a pipe.
    # --portlist 0,2,1,3 pairs 0<->2 and 1<->3 (the router's directions) and
    # gives each forwarding lcore one loaded port (streams rx0, rx2 | rx1, rx3).
    cmd = ["stdbuf", "-oL", "dpdk-testpmd", *lc, *eal_mem(), *vdevs, "--", "-i", "--forward-mode=io",
           f"--nb-cores={cores}", "--portlist=0,2,1,3", f"--burst={burst}", "--rxq=1", "--txq=1"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         bufsize=1)
    buf = ""

    def until(pattern: str, count: int = 1, timeout: float = 60) -> str:
        nonlocal buf
        deadline = time.monotonic() + timeout
        while len(re.findall(pattern, buf)) < count:
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError(f"testpmd: no '{pattern}':\n{buf}")
            r, _, _ = select.select([p.stdout], [], [], 0.5)
            if r:
                buf += os.read(p.stdout.fileno(), 65536).decode(errors="replace")
        i = list(re.finditer(pattern, buf))[count - 1].end()
        seen, buf = buf[:i], buf[i:]
        return seen

    def rx_total() -> tuple[float, int]:
        p.stdin.write("show port stats all\n")
        s = until(r"Tx-bps:\s+\d+", count=4)  # one block per port
        t = time.monotonic()
        counts = [int(x) for x in re.findall(r"RX-packets:\s+(\d+)", s)]
        return t, counts[0] + counts[1]

    try:
        until("testpmd> ")
        p.stdin.write("start\n")
        until("testpmd> ")
        time.sleep(1)
        t0, n0 = rx_total()
        time.sleep(seconds - 1)
        t1, n1 = rx_total()
        p.stdin.write("stop\nquit\n")
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return {"pps": (n1 - n0) / (t1 - t0)}


def tsc_hz() -> float:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and "@" in line:
            m = re.search(r"@\s*([\d.]+)GHz", line)
            if m:
                return float(m.group(1)) * 1e9
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--burst", type=int, default=64)
    ap.add_argument("--modes", nargs="+", default=["testpmd", "lpm", "droptail", "red_drr"])
    ap.add_argument("--csv", type=Path, default=None, help="raw rows (default: print only)")
    ap.add_argument("--bin", type=Path, default=REPO / "build" / "flexplane-router")
    ap.add_argument("--huge", action="store_true",
                    help="EAL --in-memory on hugepages (reserve them first: echo 1024 > /proc/sys/vm/nr_hugepages)")
    a = ap.parse_args()
    global HUGE
    HUGE = a.huge
    if os.geteuid() != 0:
        print("bench_router: must run as root (DPDK EAL)", file=sys.stderr)
        return 2
    rows = []
    hz = 0.0
    with tempfile.TemporaryDirectory(prefix="fp-bench-router-") as tmp:
        d = Path(tmp)
        vdevs = make_inputs(d)
        for rep in range(a.reps):
            for cores in a.cores:
                for mode in a.modes:
                    r = (run_testpmd(d, vdevs, cores, a.seconds, a.burst) if mode == "testpmd"
                         else run_router(a.bin, d, vdevs, mode, cores, a.seconds, a.burst))
                    hz = r.get("tsc_hz", hz) or hz
                    row = {"rep": rep, "cores": cores, "mode": mode, **r}
                    rows.append(row)
                    print(f"rep {rep} cores {cores} {mode:9s} {r['pps'] / 1e6:7.3f} Mpps"
                          + (f"  process {r['process_cpp']:6.1f} cyc/pkt  busy {r['busy_cpp']:6.1f} cyc/pkt"
                             if "process_cpp" in r else ""), flush=True)
    hz = hz or tsc_hz()
    if a.csv:
        with a.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=sorted({k for r in rows for k in r}))
            w.writeheader()
            w.writerows(rows)

    def med_range(v: list[float], fmt: str) -> str:
        return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}, {fmt.format(max(v))}]"

    print(f"\nTSC {hz / 1e9:.2f} GHz; median [min, max] over {a.reps} runs; 64-byte frames, burst {a.burst}; "
          f"{'hugepages (--in-memory)' if HUGE else '--no-huge (4 KiB pages)'}")
    print(f"{'config':10s} {'cores':>5s} {'Mpps':>24s} {'Mpps/core':>10s} {'cycles/pkt (all)':>24s} "
          f"{'router process cyc/pkt':>24s}")
    for cores in a.cores:
        for mode in a.modes:
            rs = [r for r in rows if r["cores"] == cores and r["mode"] == mode]
            if not rs:
                continue
            mpps = [r["pps"] / 1e6 for r in rs]
            cpp = [cores * hz / r["pps"] for r in rs]
            proc = med_range([r["process_cpp"] for r in rs], "{:.1f}") if "process_cpp" in rs[0] else "-"
            print(f"{mode:10s} {cores:5d} {med_range(mpps, '{:.2f}'):>24s} {statistics.median(mpps) / cores:10.2f} "
                  f"{med_range(cpp, '{:.0f}'):>24s} {proc:>24s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
