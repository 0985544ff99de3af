"""A small lab for the NFQUEUE endpoint tests: the netns backend's fabric,
the live emulator with a config chosen by the test, the hosts' endpoints,
and UDP probes (udp_probe.py) sending and receiving real packets."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from flexlab.analysis import read_counters
from flexlab.backends.base import EMULATOR_IP, LabSettings, host_ip
from flexlab.backends.netns import NetnsBackend
from flexlab.procs import Proc, Processes

PROBE = Path(__file__).resolve().parent / "udp_probe.py"


class NfqLab:
    def __init__(self, tmp: Path, bins: Path, prefix: str, hosts: int = 2, ipv6: bool = False,
                 fallback: str = "closed", hold_ms: float = 3000, bypass: list[str] | None = None) -> None:
        self.tmp = tmp
        self.procs = Processes(lambda: False)
        self.backend = NetnsBackend(prefix, self.procs)
        self.settings = LabSettings(hosts=hosts, ecn=True, hold_ms=hold_ms, fallback=fallback, bypass=bypass or [],
                                    window=1024, bin_dir=bins, scratch=tmp, ipv6=ipv6)
        self.config = tmp / "emulator.yaml"
        self.emu: Proc | None = None
        self.endpoints: list[Proc] = []

    def write_config(self, routers: dict, link_gbps: float = 0.1, live: dict | None = None) -> None:
        cfg = {"seed": 1, "network": {"link_rate_gbps": link_gbps},
               "topology": {"kind": "single_rack", "endpoints": self.settings.hosts},
               "routers": {"default": routers},
               "workload": {"kind": "poisson", "load": 0.01, "fixed_size_pkts": 1},
               "run": {"cores": 1, "duration_ms": 1},
               "live": {"emulator_ip": EMULATOR_IP, "endpoint_ips": [host_ip(i) for i in range(self.settings.hosts)],
                        **(live or {})}}
        self.config.write_text(yaml.safe_dump(cfg))

    def up(self, routers: dict, link_gbps: float = 0.1, live: dict | None = None, emulator: bool = True,
           endpoints: bool = True) -> "NfqLab":
        self.write_config(routers, link_gbps, live)
        self.backend.up(self.settings)
        if emulator:
            self.emu = self.backend.start_emulator(
                [str(self.settings.bin_dir / "flexplane-emulator"), "live", str(self.config), "--out",
                 str(self.tmp / "emulator"), "--duration-s", "120"],
                ["--lcores=0@(0-1),1@(0-1)", "--no-huge", "-m", "256", "--no-pci", "--no-shconf"], self.tmp / "emulator.log")
            self.procs.wait_for(self.emu, "listening on", 30, "'listening on'")
        if endpoints:
            self.endpoints = self.backend.start_endpoints(self.config, self.tmp / "endpoints", self.settings)
        return self

    def start_endpoint(self, i: int, extra: list[str]) -> Proc:
        """One endpoint without waiting for a session (unreachable-emulator tests)."""
        argv = self.backend.endpoint_argv(i, self.config, self.tmp / "endpoints", self.settings) + extra
        p = self.backend.run_on_host(i, f"endpoint h{i}", argv, self.tmp / "endpoints" / f"h{i}.log")
        self.endpoints.append(p)
        return p

    # --- real packets ---
    def receive(self, host: int, port: int, seconds: float, v6: bool = False) -> subprocess.Popen:
        argv = ["ip", "netns", "exec", self.backend.host_ns(host), sys.executable, str(PROBE), "recv", str(port),
                "--seconds", str(seconds)] + (["--v6"] if v6 else [])
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 10
        while p.poll() is None and time.time() < deadline:  # wait for "ready"
            line = p.stderr.readline()
            if "ready" in line:
                return p
        raise AssertionError(f"receiver did not start: {p.stderr.read()}")

    def send(self, host: int, dst: str, port: int, count: int, tos: int = 0, first_seq: int = 0,
             gap_ms: float = 2, size: int = 1000) -> None:
        argv = ["ip", "netns", "exec", self.backend.host_ns(host), sys.executable, str(PROBE), "send", dst, str(port),
                "--count", str(count), "--tos", str(tos), "--first-seq", str(first_seq), "--gap-ms", str(gap_ms),
                "--size", str(size)]
        subprocess.run(argv, check=True, timeout=60, capture_output=True)

    @staticmethod
    def collect(receiver: subprocess.Popen) -> dict:
        out, err = receiver.communicate(timeout=60)
        assert receiver.returncode == 0, err
        return json.loads(out)

    # --- stop and read ---
    def stop_endpoints(self) -> list[dict[str, int]]:
        self.procs.stop(self.endpoints, signal.SIGTERM, 15)
        for p in self.endpoints:
            assert p.popen.returncode == 0, f"{p.name} exited {p.popen.returncode}:\n{p.tail()}"
        return [read_counters(self.tmp / "endpoints" / f"h{i}" / "endpoint_counters.csv")
                for i in range(self.settings.hosts)]

    def stop_emulator(self) -> dict[str, int]:
        assert self.emu is not None
        self.procs.stop([self.emu], signal.SIGINT, 30)
        assert self.emu.popen.returncode == 0, self.emu.tail()
        return read_counters(self.tmp / "emulator" / "comm_counters.csv")

    def down(self) -> None:
        self.procs.stop_all(10)
        self.backend.down()
