"""The netns backend: hosts are network namespaces using the host kernel's TCP.

    <prefix>-fab   the fabric: Linux bridge br0 joining every host's port
                   (p<i>) and the emulator's (pemu). br_netfilter passes
                   bridged IP packets through iptables FORWARD, where each
                   host's traffic goes to NFQUEUE <i> (its own protocol
                   datagrams to the emulator excepted).
    <prefix>-emu   the emulator: veth vemu, opened by DPDK (af_packet); no
                   kernel address, the emulator answers ARP for 10.77.0.2.
    <prefix>-h<i>  host i: veth eth0 with 10.77.0.(10+i)/16, its apps, and
                   flexplane-nfq-endpoint, which binds NFQUEUE <i> in the
                   fabric namespace and talks to the emulator from eth0.

Why the packets are held in the fabric and not at the host's own OUTPUT
hook: a packet held before it leaves its socket's namespace still counts
against the socket (TCP small queues), which limits how much a flow can have
in flight to about a millisecond of data and would keep the emulated queues
from ever building. Once a packet has crossed the veth the socket has let go
of it, as with a real NIC and switch (measured: docs/lab.md).

Host veths have tx checksum offload, TSO and GSO off: full checksums on
frames DPDK reads, and MTU-sized packets at the hook (RECIPES.md 2 and 6).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from flexlab.backends.base import (EMULATOR_IP, EMULATOR_PORT, Backend, LabSettings, host_ip, host_ip6,
                                   remove_dpdk_runtime)
from flexlab.errors import LabError
from flexlab.procs import Proc, kill_pids, pids_in_netns


def _run(cmd: list[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    # Own session: a Ctrl-C at the terminal reaches the runner only, which
    # finishes what it is doing (a teardown's `ip netns del` included).
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, start_new_session=True)
    if check and p.returncode != 0:
        raise LabError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


def list_netns() -> list[str]:
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


class NetnsBackend(Backend):
    name = "netns"

    @classmethod
    def problems(cls) -> list[str]:
        out = []
        if os.geteuid() != 0:
            out.append("the netns backend needs root (network namespaces, NFQUEUE, DPDK af_packet)")
        for tool, pkg in (("ip", "iproute2"), ("ethtool", "ethtool"), ("iptables", "iptables")):
            if shutil.which(tool) is None:
                out.append(f"'{tool}' not found (apt-get install {pkg})")
        return out

    def __init__(self, prefix: str, procs) -> None:
        super().__init__(prefix, procs)
        self.fab = f"{prefix}-fab"
        self.emu = f"{prefix}-emu"
        self.hosts: list[str] = []

    def host_ns(self, i: int) -> str:
        return f"{self.prefix}-h{i}"

    # --- lifecycle ---
    def up(self, s: LabSettings) -> None:
        self.down()
        self.hosts = [self.host_ns(i) for i in range(s.hosts)]
        try:
            for ns in [self.fab, self.emu] + self.hosts:
                _run(["ip", "netns", "add", ns])
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
                v6 = s.ipv6 and ns in self.hosts
                _run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.all.disable_ipv6={0 if v6 else 1}"])
                _run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.default.disable_ipv6={0 if v6 else 1}"])
            self._fabric(s)
            self._attach(self.emu, "vemu", "pemu")
            for i, ns in enumerate(self.hosts):
                self._attach(ns, "eth0", f"p{i}")
                _run(["ip", "-n", ns, "addr", "add", f"{host_ip(i)}/16", "dev", "eth0"])
                if s.ipv6:
                    _run(["ip", "-n", ns, "addr", "add", f"{host_ip6(i)}/64", "dev", "eth0", "nodad"])
                _run(["ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off", "tso", "off", "gso", "off"])
                _run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.tcp_ecn={1 if s.ecn else 0}"])
                self._queue_rules(i, s)
        except Exception:
            self.down()
            raise

    def _fabric(self, s: LabSettings) -> None:
        _run(["ip", "-n", self.fab, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        _run(["ip", "-n", self.fab, "link", "set", "br0", "up"])
        if s.queue_at == "host":
            return  # held in the hosts' own namespaces (_queue_rules): no bridge netfilter needed
        # Bridged IPv4 through iptables (FORWARD): where packets are queued.
        for key in ("net.bridge.bridge-nf-call-iptables=1", "net.bridge.bridge-nf-call-ip6tables=1"):
            p = _run(["ip", "netns", "exec", self.fab, "sysctl", "-qw", key], check=False)
            if p.returncode != 0:
                raise LabError(f"cannot enable bridge netfilter ({key}): {p.stderr.strip()} "
                               "(the netns backend needs br_netfilter)")

    def _attach(self, ns: str, iface: str, port: str) -> None:
        _run(["ip", "link", "add", iface, "netns", ns, "type", "veth", "peer", "name", port, "netns", self.fab])
        _run(["ip", "-n", self.fab, "link", "set", port, "master", "br0"])
        _run(["ip", "netns", "exec", self.fab, "ethtool", "-K", port, "gro", "off"], check=False)
        _run(["ip", "-n", self.fab, "link", "set", port, "up"])
        _run(["ip", "-n", ns, "link", "set", iface, "up"])

    def _queue_rules(self, i: int, s: LabSettings) -> None:
        """Host i's packets to NFQUEUE queue i: where they cross the bridge
        (queue_at fabric), or on their way out of the host's eth0 (queue_at
        host: after routing, where the qdisc would hold them). The protocol's
        own packets to the emulator pass either way."""
        if s.queue_at == "host":
            ns, match = self.host_ns(i), ["-t", "mangle", "-A", "POSTROUTING", "-o", "eth0"]
        else:
            ns, match = self.fab, ["-A", "FORWARD", "-m", "physdev", "--physdev-in", f"p{i}"]
        ipt = ["ip", "netns", "exec", ns, "iptables"] + match
        _run(ipt + ["-p", "udp", "-d", EMULATOR_IP, "--dport", str(EMULATOR_PORT), "-j", "ACCEPT"])
        # fail open: with no endpoint listening the kernel lets packets through.
        queue = ["-j", "NFQUEUE", "--queue-num", str(i)] + (["--queue-bypass"] if s.fallback == "open" else [])
        _run(ipt + queue)
        if s.ipv6:
            _run(["ip", "netns", "exec", ns, "ip6tables"] + match + queue)

    def down(self) -> None:
        mine = [self.fab, self.emu] + self.hosts
        present = set(list_netns())
        for ns in mine:
            if ns in present:
                kill_pids(pids_in_netns(ns))
        for ns in mine:
            if ns in present:
                _run(["ip", "netns", "del", ns], check=False)
        remove_dpdk_runtime(self.prefix)  # the emulator's (--file-prefix), empty and left by DPDK

    # --- processes ---
    def start_emulator(self, argv: list[str], eal: list[str], log: Path) -> Proc:
        dev = ["--vdev=net_af_packet0,iface=vemu", f"--file-prefix={self.prefix}"]
        return self.procs.start("emulator", ["ip", "netns", "exec", self.emu] + argv + ["--"] + eal + dev, log)

    def endpoint_argv(self, i: int, config: Path, out_dir: Path, s: LabSettings) -> list[str]:
        """flexplane-nfq-endpoint for host i: its queue in the fabric, its protocol socket on eth0."""
        argv = [str(s.bin_dir / "flexplane-nfq-endpoint"), "--config", str(config), "--id", str(i),
                "--queue", str(i), "--queue-netns", self.fab if s.queue_at == "fabric" else self.host_ns(i),
                "--out", str(out_dir / f"h{i}"),
                "--hold-ms", str(s.hold_ms), "--fallback", s.fallback, "--window", str(s.window),
                "--hints", self.hints_path(s, i)]
        if s.ipv6:
            argv += [f"--peer={host_ip6(j)}={j}" for j in range(s.hosts)]
        if s.trace_stages:
            argv.append("--trace-stages")
        for b in s.bypass:
            argv += ["--bypass", b]
        return argv

    def start_endpoints(self, config: Path, out_dir: Path, s: LabSettings) -> list[Proc]:
        procs = [self.run_on_host(i, f"endpoint h{i}", self.endpoint_argv(i, config, out_dir, s), out_dir / f"h{i}.log")
                 for i in range(s.hosts)]
        for p in procs:
            self.procs.wait_for(p, r"session (re-)?established|cannot reach the emulator", 15, "a session with the emulator")
            if "cannot reach the emulator" in p.log_text() and "session established" not in p.log_text():
                raise LabError(f"{p.name}: {p.tail(2)}")
        return procs

    def run_on_host(self, host: int, name: str, argv: list[str], log: Path) -> Proc:
        return self.procs.start(name, ["ip", "netns", "exec", self.host_ns(host)] + argv, log)

    def hints_path(self, s: LabSettings, host: int) -> str:
        return str(s.scratch / f"h{host}.hints")

    @classmethod
    def cleanup(cls, prefix: str) -> list[str]:
        removed = []
        for ns in list_netns():
            if not ns.startswith(prefix):
                continue
            pids = pids_in_netns(ns)
            kill_pids(pids)
            _run(["ip", "netns", "del", ns], check=False)
            removed.append(f"netns {ns}" + (f" ({len(pids)} processes killed)" if pids else ""))
        removed += [f"DPDK runtime folder {d}" for d in remove_dpdk_runtime(prefix, exact=False)]
        # The runner's scratch folders (runner.py: flexlab-<prefix>-*; VM consoles, sockets).
        for d in sorted(Path(tempfile.gettempdir()).glob(f"flexlab-{prefix}*")):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(f"scratch folder {d}")
        return removed
