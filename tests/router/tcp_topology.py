"""Two hosts and flexplane-router in network namespaces, real TCP through it.

    <p>h1  veth `eth0` 10.1.0.2/24, default via 10.1.0.1  ─┐
                                                          │ veth pair
    <p>rt  veths `r0`, `r1` (no kernel address): flexplane-router opens them
           with net_af_packet as ports 0 (10.1.0.1/24) and 1 (10.2.0.1/24)
                                                          │ veth pair
    <p>h2  veth `eth0` 10.2.0.2/24, default via 10.2.0.1  ─┘

The router answers the hosts' ARP for its addresses and resolves theirs (its
own slow path); the router namespace's kernel has no address and does not
forward. Host veths get tx checksum offload, TSO and GSO off: frames read by
af_packet must carry full checksums and be at most one MTU
(/work/shared/env/RECIPES.md section 2). Names carry a per-process prefix;
`down()` deletes every namespace it made, also after a failure.
"""
from __future__ import annotations

import os
import shutil
import subprocess

H1_IP, H2_IP = "10.1.0.2", "10.2.0.2"
PORT_IP = ["10.1.0.1/24", "10.2.0.1/24"]


def run(cmd: list[str], check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p


def missing_prerequisites() -> list[str]:
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces, veth, DPDK af_packet)")
    for tool in ("ip", "ethtool", "iperf3"):
        if shutil.which(tool) is None:
            problems.append(f"'{tool}' not found (apt-get install iproute2 ethtool iperf3)")
    return problems


class TcpTopology:
    def __init__(self, prefix: str | None = None):
        self.prefix = prefix or f"fprt{os.getpid() % 100000}"
        self.h1, self.rt, self.h2 = (f"{self.prefix}{s}" for s in ("h1", "rt", "h2"))

    def namespaces(self) -> list[str]:
        return [self.h1, self.rt, self.h2]

    def up(self) -> "TcpTopology":
        self.down()
        try:
            for ns in self.namespaces():
                run(["ip", "netns", "add", ns])
                run(["ip", "-n", ns, "link", "set", "lo", "up"])
                run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            for host, port, ip, gw in ((self.h1, "r0", H1_IP, "10.1.0.1"), (self.h2, "r1", H2_IP, "10.2.0.1")):
                run(["ip", "link", "add", "eth0", "netns", host, "type", "veth", "peer", "name", port, "netns", self.rt])
                run(["ip", "netns", "exec", host, "ethtool", "-K", "eth0", "tx", "off", "tso", "off", "gso", "off"])
                run(["ip", "netns", "exec", self.rt, "ethtool", "-K", port, "rx", "off", "gro", "off"], check=False)
                run(["ip", "-n", host, "addr", "add", f"{ip}/24", "dev", "eth0"])
                run(["ip", "-n", host, "link", "set", "eth0", "up"])
                run(["ip", "-n", self.rt, "link", "set", port, "up"])
                run(["ip", "-n", host, "route", "add", "default", "via", gw])
                # ECN-capable TCP (RFC 3168): the senders set ECT(0) and
                # react to echoed CE marks.
                run(["ip", "netns", "exec", host, "sysctl", "-qw", "net.ipv4.tcp_ecn=1"])
        except Exception:
            self.down()
            raise
        return self

    def down(self) -> None:
        listed = run(["ip", "netns", "list"], check=False).stdout.split("\n")
        for line in listed:
            name = line.split(" ")[0].strip()
            if name in self.namespaces():
                run(["ip", "netns", "del", name], check=False)

    def __enter__(self) -> "TcpTopology":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    def cmd(self, ns: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", ns, *argv]
