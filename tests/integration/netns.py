"""Network-namespace plumbing for the live integration tests.

One topology, created and destroyed as a unit (`LiveNet`, a context manager):

    <p>br      a namespace holding the Linux bridge `br0`
    <p>emu     the emulator's namespace: veth `vemu` (no kernel address; DPDK
               opens it with net_af_packet or net_af_xdp and plays 10.77.0.2)
    <p>ep<i>   endpoint i: veth `veth0` with 10.77.0.(10+i)/24

Each veth's peer sits in <p>br on br0, so every endpoint reaches the emulator
(and nothing else) over L2. All traffic stays inside these namespaces.
Names carry a per-process prefix, so concurrent runs do not collide, and
`down()` deletes every namespace with that prefix even after a failure.

Kernel-side veths get `ethtool -K veth0 tx off`: with tx checksum offload on,
the frames DPDK reads through af_packet/af_xdp carry only a partial UDP
checksum (see /work/shared/env/RECIPES.md section 2).
"""
from __future__ import annotations

import os
import shutil
import subprocess

EMULATOR_IP = "10.77.0.2"
FIRST_ENDPOINT = 10


def run(cmd: list[str], check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p


def missing_prerequisites(need_nft: bool = False) -> list[str]:
    """Why the tests cannot run here (empty list: they can)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces, veth, DPDK af_packet/af_xdp)")
    for tool in ["ip", "ethtool"] + (["nft"] if need_nft else []):
        if shutil.which(tool) is None:
            problems.append(f"'{tool}' not found (apt-get install iproute2 ethtool nftables)")
    return problems


class LiveNet:
    def __init__(self, num_endpoints: int, prefix: str | None = None):
        self.n = num_endpoints
        self.prefix = prefix or f"fpt{os.getpid() % 100000}"
        self.br = f"{self.prefix}br"
        self.emu = f"{self.prefix}emu"
        self.eps = [f"{self.prefix}ep{i}" for i in range(num_endpoints)]
        self.emu_iface = "vemu"

    @staticmethod
    def endpoint_ip(i: int) -> str:
        return f"10.77.0.{FIRST_ENDPOINT + i}"

    def namespaces(self) -> list[str]:
        return [self.br, self.emu] + self.eps

    # --- lifecycle ---
    def up(self) -> "LiveNet":
        self.down()
        try:
            for ns in self.namespaces():
                run(["ip", "netns", "add", ns])
                run(["ip", "-n", ns, "link", "set", "lo", "up"])
                run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            run(["ip", "-n", self.br, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"])
            run(["ip", "-n", self.br, "link", "set", "br0", "up"])
            # A pure L2 bridge: with br_netfilter active, bridged IPv4/IPv6
            # would be sanity-checked and defragmented before the emulator
            # sees it (and malformed test frames silently dropped).
            for fam in ("iptables", "ip6tables", "arptables"):
                run(["ip", "netns", "exec", self.br, "sysctl", "-qw", f"net.bridge.bridge-nf-call-{fam}=0"], check=False)
            self._attach(self.emu, self.emu_iface, "bemu", None)
            for i, ns in enumerate(self.eps):
                self._attach(ns, "veth0", f"bep{i}", self.endpoint_ip(i))
        except Exception:
            self.down()
            raise
        return self

    def _attach(self, ns: str, iface: str, br_port: str, addr: str | None) -> None:
        run(["ip", "link", "add", iface, "netns", ns, "type", "veth", "peer", "name", br_port, "netns", self.br])
        run(["ip", "-n", self.br, "link", "set", br_port, "master", "br0"])
        run(["ip", "-n", self.br, "link", "set", br_port, "up"])
        if addr:
            run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", iface])
            # Full checksums on frames that DPDK will read (RECIPES.md section 2).
            run(["ip", "netns", "exec", ns, "ethtool", "-K", iface, "tx", "off"])
        run(["ip", "-n", ns, "link", "set", iface, "up"])

    def down(self) -> None:
        listed = run(["ip", "netns", "list"], check=False).stdout.split("\n")
        for line in listed:
            name = line.split(" ")[0].strip()
            if name and name.startswith(self.prefix) and name in self.namespaces():
                run(["ip", "netns", "del", name], check=False)

    def __enter__(self) -> "LiveNet":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # --- running things inside ---
    def cmd(self, ns: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", ns] + list(argv)

    def popen(self, ns: str, argv: list[str], log_path: str, **kw) -> subprocess.Popen:
        log = open(log_path, "w")
        return subprocess.Popen(self.cmd(ns, argv), stdout=log, stderr=subprocess.STDOUT, **kw)

    def exec(self, ns: str, argv: list[str], check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
        return run(self.cmd(ns, argv), check=check, timeout=timeout)

    # --- control-packet loss (nftables, real loss on the veth path) ---
    def add_loss(self, ns: str, percent: int, port: int = 9977) -> None:
        """Drop `percent`% of this endpoint's protocol datagrams in each direction."""
        rules = f"""
table inet fploss {{
  chain out {{
    type filter hook output priority 0; policy accept;
    udp dport {port} numgen random mod 100 < {percent} counter drop
  }}
  chain in {{
    type filter hook input priority 0; policy accept;
    udp sport {port} numgen random mod 100 < {percent} counter drop
  }}
}}
"""
        p = subprocess.run(self.cmd(ns, ["nft", "-f", "-"]), input=rules, capture_output=True, text=True, timeout=20)
        if p.returncode != 0:
            raise RuntimeError(f"nft failed in {ns}: {p.stderr}")

    def loss_counters(self, ns: str) -> dict[str, int]:
        """Packets dropped by add_loss's rules: {'out': n, 'in': n}."""
        out = self.exec(ns, ["nft", "list", "table", "inet", "fploss"]).stdout
        counts = {}
        chain = None
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("chain "):
                chain = line.split()[1]
            if "counter packets" in line and chain:
                counts[chain] = int(line.split("counter packets")[1].split()[0])
        return counts
