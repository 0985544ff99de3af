"""Runs `flexplane-emulator live` and `flexplane-endpoint`s inside a LiveNet
and reads what they wrote. Every wait is bounded; `stop()` always ends what
it started (SIGINT, then SIGKILL)."""
from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from netns import LiveNet

REPO = Path(__file__).resolve().parents[2]

# A tiny experiment: 4 endpoints on one ToR, incast bursts of 8-packet flows
# into a 6-packet DCTCP buffer (marks above 3), so releases, marks and drops
# all happen. 0.1 Gbit/s links: one timeslot = 120 us, slow enough for a
# shared 2-core machine.
TEST_CONFIG = """\
description: live integration test (4 endpoints, incast, small DCTCP buffer)
seed: 3
network: {link_rate_gbps: 0.1}
topology: {kind: single_rack, endpoints: 4}
routers: {default: {scheme: dctcp, queue_manager: {k_pkts: 3, capacity_pkts: 6}}}
workload: {kind: poisson, pattern: incast, fan_in: 3, load: 0.3, fixed_size_pkts: 8}
run: {duration_ms: %(duration_ms)d, drain_ms: 50}
live: {sleep_when_ahead: true, stats_interval_s: 0.5}
"""


def find_bin_dir() -> Path | None:
    """FLEXPLANE_BIN_DIR, else build/ (what `make` builds), else the newest
    build*/ folder holding both binaries."""
    env = os.environ.get("FLEXPLANE_BIN_DIR")
    if env:
        return Path(env)

    def has_both(d: Path) -> bool:
        return (d / "flexplane-emulator").exists() and (d / "flexplane-endpoint").exists()

    if has_both(REPO / "build"):
        return REPO / "build"
    best = None
    for d in sorted(REPO.glob("build*")):
        if has_both(d):
            t = min((d / "flexplane-emulator").stat().st_mtime, (d / "flexplane-endpoint").stat().st_mtime)
            if best is None or t > best[0]:
                best = (t, d)
    return best[1] if best else None


def eal_args(vdev: str, iface: str, prefix: str) -> list[str]:
    drv = {"af_packet": "net_af_packet0", "af_xdp": "net_af_xdp0"}[vdev]
    return ["-l", "0-1", "--no-huge", "-m", "512", "--no-pci", "--no-shconf", f"--file-prefix={prefix}",
            f"--vdev={drv},iface={iface}"]


def remove_eal_dir(prefix: str) -> None:
    """DPDK's EAL leaves a runtime folder per --file-prefix (with
    --no-shconf), at times with a telemetry socket in it; once the emulator has
    exited, remove it (the prefix is this run's alone)."""
    if not prefix:
        return
    shutil.rmtree(Path("/var/run/dpdk") / prefix, ignore_errors=True)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_counters(path: Path) -> dict[str, int]:
    return {r["counter"]: int(r["value"]) for r in read_csv(path)}


class LiveRun:
    def __init__(self, net: LiveNet, bin_dir: Path, workdir: Path, duration_ms: int = 300):
        self.net, self.bin, self.dir = net, bin_dir, workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = self.dir / "live_test.yaml"
        self.config.write_text(TEST_CONFIG % {"duration_ms": duration_ms})
        self.emu: subprocess.Popen | None = None
        self.emu_out: Path | None = None
        self.emu_log: Path | None = None
        self.eps: list[subprocess.Popen] = []
        self.ep_logs: list[Path] = []
        self.ep_out: list[Path] = []
        self.emu_runs = 0
        self.emu_prefix = ""

    # --- emulator ---
    def start_emulator(self, vdev: str = "af_packet", record: bool = True, max_s: float = 60,
                       ready_timeout: float = 30) -> Path:
        self.emu_runs += 1
        out = self.dir / f"emu{self.emu_runs}"
        log = self.dir / f"emu{self.emu_runs}.log"
        argv = [str(self.bin / "flexplane-emulator"), "live", str(self.config), "--out", str(out),
                "--duration-s", str(max_s)]
        if record:
            argv.append("--record")
        self.emu_prefix = f"{self.net.prefix}{self.emu_runs}"
        argv += ["--"] + eal_args(vdev, self.net.emu_iface, self.emu_prefix)
        self.emu = self.net.popen(self.net.emu, argv, str(log))
        self.emu_out, self.emu_log = out, log
        deadline = time.time() + ready_timeout
        while time.time() < deadline:
            if self.emu.poll() is not None:
                raise AssertionError(f"emulator exited early ({self.emu.returncode}):\n{log.read_text()}")
            if "listening on" in log.read_text():
                return out
            time.sleep(0.05)
        raise AssertionError(f"emulator not ready after {ready_timeout} s:\n{log.read_text()}")

    def stop_emulator(self, sig: int = signal.SIGINT, timeout: float = 30) -> int:
        p = self.emu
        if p is None:
            return 0
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
                raise AssertionError(f"emulator ignored signal {sig} for {timeout} s:\n{self.emu_log.read_text()}")
        self.emu = None
        remove_eal_dir(self.emu_prefix)
        return p.returncode

    def kill_emulator(self) -> None:
        """SIGKILL: the emulator dies with its sessions and engine state."""
        if self.emu and self.emu.poll() is None:
            self.emu.kill()
            self.emu.wait(10)
        self.emu = None
        remove_eal_dir(self.emu_prefix)

    # --- endpoints ---
    def start_endpoints(self, start_in_s: float = 0.5, limit_s: float = 40, extra: list[str] | None = None,
                        per_endpoint: dict[int, list[str]] | None = None) -> int:
        start_at = time.time_ns() + int(start_in_s * 1e9)
        self.eps, self.ep_logs, self.ep_out = [], [], []
        for i, ns in enumerate(self.net.eps):
            out = self.dir / f"ep{i}"
            log = self.dir / f"ep{i}.log"
            argv = [str(self.bin / "flexplane-endpoint"), "--config", str(self.config), "--id", str(i),
                    "--start-at", str(start_at), "--duration-s", str(limit_s), "--out", str(out)]
            argv += list(extra or []) + list((per_endpoint or {}).get(i, []))
            self.eps.append(self.net.popen(ns, argv, str(log)))
            self.ep_logs.append(log)
            self.ep_out.append(out)
        return start_at

    def wait_endpoints(self, timeout: float = 60) -> list[int]:
        deadline = time.time() + timeout
        codes = []
        for p in self.eps:
            try:
                codes.append(p.wait(max(0.1, deadline - time.time())))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
                codes.append(None)
        return codes

    def endpoint_logs(self) -> str:
        return "\n".join(f"--- endpoint {i} ---\n{l.read_text() if l.exists() else ''}"
                         for i, l in enumerate(self.ep_logs))

    def cleanup(self) -> None:
        for p in self.eps:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        if self.emu and self.emu.poll() is None:
            self.emu.send_signal(signal.SIGINT)
            try:
                self.emu.wait(15)
            except subprocess.TimeoutExpired:
                self.emu.kill()
                self.emu.wait(10)
        remove_eal_dir(self.emu_prefix)

    # --- results ---
    def expected_requests(self) -> dict[int, Counter]:
        """(flow, seq) every endpoint must request, from its flows.csv."""
        want = {}
        for i, out in enumerate(self.ep_out):
            c = Counter()
            for r in read_csv(out / "flows.csv"):
                for s in range(int(r["size_pkts"])):
                    c[(int(r["flow_id"]), s)] += 1
            want[i] = c
        return want

    def endpoint_verdicts(self) -> dict[int, list[dict]]:
        return {i: read_csv(out / "verdicts.csv") for i, out in enumerate(self.ep_out)}

    def endpoint_counters(self) -> dict[int, dict[str, int]]:
        return {i: read_counters(out / "endpoint_counters.csv") for i, out in enumerate(self.ep_out)}


def assert_exactly_once(run: LiveRun) -> int:
    """Every requested abstract packet got exactly one verdict at its
    endpoint; returns the number of requests."""
    total = 0
    want = run.expected_requests()
    got = run.endpoint_verdicts()
    for i in want:
        seen = Counter((int(v["flow"]), int(v["seq"])) for v in got[i])
        dup = {k: n for k, n in seen.items() if n > 1}
        missing = [k for k in want[i] if k not in seen]
        extra = [k for k in seen if k not in want[i]]
        assert not dup, f"endpoint {i}: duplicate verdicts {list(dup.items())[:10]}"
        assert not missing, f"endpoint {i}: {len(missing)} requests without a verdict, e.g. {missing[:10]}"
        assert not extra, f"endpoint {i}: verdicts for packets never requested {extra[:10]}"
        total += len(want[i])
    return total
