"""Which program runs on which host for a workload (flexplane-workload,
docs/lab.md), and where its output goes."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flexlab.backends.base import host_ip

REPO = Path(__file__).resolve().parents[2]
FLOW_SIZES = REPO / "experiments" / "data" / "flow-sizes"
SERVER_PORT = 5001


@dataclass
class HostCommand:
    host: int
    role: str          # server | client
    argv: list[str]
    output: Path | None = None


def sizes_spec(spec: str) -> str:
    """cdf:web-search -> cdf:<repo>/experiments/data/flow-sizes/web-search.cdf."""
    if spec.startswith("cdf:"):
        name = spec[4:]
        builtin = FLOW_SIZES / f"{name}.cdf"
        return f"cdf:{builtin if builtin.exists() else Path(name).resolve()}"
    return spec


def mix_dscps(spec: str) -> list[int]:
    """DSCPs named by a mix:BYTES@P@DSCP size spec."""
    if not spec.startswith("mix:"):
        return []
    return [int(item.split("@")[2]) for item in spec[4:].split(",") if item.count("@") == 2]


def receivers(c: dict) -> list[int]:
    """Hosts whose downlink carries the workload's data (the bottleneck ports)."""
    w = c["workload"]
    if w["kind"] == "rpc":
        return list(w["clients"])
    return [w["receiver"] if w["kind"] == "bulk" else w["client"]]


def commands(c: dict, seed: int, bin_dir: Path, out_dir: Path, hints: dict[int, str],
             addresses: list[str] | None = None) -> list[HostCommand]:
    """The workload's programs; `addresses`: the hosts' (default host_ip(i))."""
    w = c["workload"]
    prog = str(bin_dir / "flexplane-workload")
    cc = c["transport"]["cc"]
    duration, drain = c["duration_s"], c["drain_s"]
    kind = w["kind"]
    servers = w["senders"] if kind == "bulk" else w["servers"]
    out: list[HostCommand] = []
    dscps = mix_dscps(w["sizes"]) if kind == "rpc" else []
    for h in servers:
        argv = [prog, "serve", "--port", str(SERVER_PORT), "--cc", cc]
        if hints.get(h):
            argv += ["--hints", hints[h]]
        if dscps:  # SYN-ACKs in the highest class used (a response's class is known only once asked)
            argv += ["--syn-dscp", str(max(dscps))]
        out.append(HostCommand(h, "server", argv))
    ip = (lambda h: addresses[h]) if addresses else host_ip
    addrs = ",".join(f"{ip(h)}:{SERVER_PORT}" for h in servers)
    common = ["--servers", addrs, "--cc", cc, "--duration-s", f"{duration:g}"]
    if kind == "rpc":
        for k, h in enumerate(w["clients"]):
            o = out_dir / f"h{h}.rpc.csv"
            argv = [prog, "rpc", *common, "--sizes", sizes_spec(w["sizes"]), "--seed", str(seed * 1000 + k),
                    "--drain-s", f"{drain:g}", "--max-inflight", str(w["max_inflight"]), "--out", str(o)]
            if w["rate_per_s"] is not None:
                argv += ["--rate", f"{w['rate_per_s']:g}"]
            else:
                argv += ["--load", f"{w['load']:g}", "--link-gbps", f"{c['network']['link_rate_gbps']:g}"]
            out.append(HostCommand(h, "client", argv, o))
    elif kind == "bulk":
        o = out_dir / f"h{w['receiver']}.bulk.csv"
        argv = [prog, "bulk", *common, "--interval-ms", f"{w['interval_ms']:g}", "--out", str(o)]
        out.append(HostCommand(w["receiver"], "client", argv, o))
    else:
        o = out_dir / f"h{w['client']}.incast.csv"
        argv = [prog, "incast", *common, "--size", str(w["size_bytes"]), "--queries", str(w["queries"]),
                "--gap-ms", f"{w['gap_ms']:g}", "--drain-s", f"{drain:g}", "--out", str(o)]
        out.append(HostCommand(w["client"], "client", argv, o))
    return out
