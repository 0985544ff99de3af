"""Runs flexplane-router on pcap files (net_pcap) and reads back what it sent
and wrote: one process per run, real DPDK, no network."""
from __future__ import annotations

import csv
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

import pkt

REPO = Path(__file__).resolve().parents[2]

# The router's port MACs in these tests (set in the config; net_pcap has no
# filter of its own, so the router uses them in software).
PORT_MAC = ["02:00:00:00:00:%02x" % (0x10 + i) for i in range(8)]
HOST_MAC = ["02:00:00:00:01:%02x" % (0x10 + i) for i in range(8)]


def find_bin() -> Path:
    d = os.environ.get("FLEXPLANE_BIN_DIR")
    b = Path(d) / "flexplane-router" if d else REPO / "build" / "flexplane-router"
    if not b.exists():
        raise FileNotFoundError(f"{b} not built (cmake --build build, or set FLEXPLANE_BIN_DIR)")
    return b


# No hugepages, no PCI, no shared files: runs anywhere as root, in parallel.
# DPDK still makes an (empty) runtime folder named by the prefix, one per test
# process: conftest.py removes it when the suite ends.
EAL_PREFIX = f"fprt{os.getpid()}"
EAL_BASE = ["-l", "0", "--no-pci", "--no-huge", "-m", "512", "--no-shconf", "--no-telemetry", "--log-level=error",
            f"--file-prefix={EAL_PREFIX}"]


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str
    out: dict[int, list[pkt.Frame]]
    meta: dict
    counters: list[dict[str, str]]
    ports: list[dict[str, str]]
    dir: Path

    def queue(self, port: int, q: int = 0) -> dict[str, int]:
        for r in self.counters:
            if int(r["port"]) == port and int(r["queue"]) == q:
                return {k: int(v) for k, v in r.items() if k not in ("router",)}
        return {}

    def port_totals(self, port: int) -> dict[str, int]:
        tot: dict[str, int] = {}
        for r in self.counters:
            if int(r["port"]) == port:
                for k, v in r.items():
                    if k != "router":
                        tot[k] = tot.get(k, 0) + int(v)
        return tot


def rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def run_router(tmp: Path, config: str, routes: str, inputs: dict[int, list[bytes]], num_ports: int = 2,
               extra_args: list[str] | None = None, timeout: float = 120, gap_us: int = 10) -> Result:
    """`config`: YAML text without `routes:`/`output:` (added here); port i reads
    inputs[i] from a pcap file and writes what it sends to out<i>.pcap."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "routes.txt").write_text(routes)
    (tmp / "r.yaml").write_text(config + f"\nroutes: routes.txt\noutput: {{dir: {tmp / 'out'}}}\n")
    vdevs = []
    for i in range(num_ports):
        pkt.write_pcap(tmp / f"in{i}.pcap", inputs.get(i, []), gap_us=gap_us)
        vdevs += ["--vdev", f"net_pcap{i},rx_pcap={tmp / f'in{i}.pcap'},tx_pcap={tmp / f'out{i}.pcap'}"]
    cmd = [str(find_bin()), str(tmp / "r.yaml"), *(extra_args or []), "--", *EAL_BASE, *vdevs]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp)
    out = {i: pkt.read_pcap(tmp / f"out{i}.pcap") for i in range(num_ports) if (tmp / f"out{i}.pcap").exists()}
    meta_path = tmp / "out" / "metadata.yaml"
    meta = yaml.safe_load(meta_path.read_text()) if meta_path.exists() else {}
    return Result(p.returncode, p.stdout, p.stderr, out, meta, rows(tmp / "out" / "counters.csv"),
                  rows(tmp / "out" / "ports.csv"), tmp / "out")


def ports_config(num_ports: int = 2, extra: dict[int, str] | None = None) -> str:
    """ports: section with 10.<i+1>.0.1/24 and PORT_MAC[i] on port i."""
    lines = ["ports:"]
    for i in range(num_ports):
        more = (", " + extra[i]) if extra and i in extra else ""
        lines.append(f'  {i}: {{ip: 10.{i + 1}.0.1/24, mac: "{PORT_MAC[i]}"{more}}}')
    return "\n".join(lines)


def seq_of(f: pkt.Frame) -> int:
    """Test frames carry their sequence number in the first 4 payload bytes."""
    return int.from_bytes(f.udp_payload[:4], "big")


def numbered_udp(seq: int, dst: str, src: str = "10.1.0.2", tos: int = 0, size: int = 100, sport: int = 1000,
                 in_port: int = 0, **kw) -> bytes:
    """A UDP frame into port `in_port` whose payload starts with `seq`."""
    payload_len = max(4, size - 14 - 20 - 8)
    body = seq.to_bytes(4, "big") + bytes(payload_len - 4)
    u = pkt.udp(sport, 2000, body)
    return pkt.eth(PORT_MAC[in_port], HOST_MAC[in_port], pkt.ETH_IPV4,
                   pkt.ipv4_header(src, dst, 17, len(u), tos=tos, **kw) + u)
