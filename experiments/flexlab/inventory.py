"""The inventory of the hosts backend (docs/lab.md, "Backend hosts"): the real
machines an experiment runs on, reached over SSH, and where the emulator runs.

    # flexplane lab inventory
    emulator:
      machine: local          # the machine running scripts/lab, or {address, user, key, port} (SSH)
      interface: eth1         # the NIC the emulator opens (DPDK af_packet)
      ip: 10.77.0.2           # the emulator's address on the experiment network
      bin: ""                 # remote machine: its flexplane-emulator (default: --bin-dir's, copied in)
    first_host_ip: 10.77.0.10 # host i has first_host_ip + i on its interface (the qdisc's `endpoints`)
    management_ports: [22]    # TCP/UDP ports the qdisc never holds (its `bypass`; at most 8)
    install: check            # check: the endpoint must be installed; deb: install `debs` first
    debs: []                  # install: deb: .deb files (flexplane-dkms, flexplane-tc) copied and installed
    remote_dir: /tmp          # each run's folder on a host: <remote_dir>/flexlab-<prefix>
    known_hosts: ""           # default: <inventory file>.known_hosts
    strict_host_keys: false   # true: keys must already be in known_hosts (else: accept-new)
    connect_timeout_s: 10
    rto_us: 2000              # the protocol's retransmission timeout (qdisc `rto`, emulator --rto-us)
    defaults: {user: root, key: ~/.ssh/id_ed25519, port: 22, interface: eth1}
    hosts:                    # host i of the experiment = hosts[i]
      - {address: 192.168.1.10, interface: eth1, user: root, key: ~/.ssh/id_ed25519, port: 22}

Everything is checked when the file is read; every error names the file and
the field (`hosts[2].user`), as experiment files do (spec.py).
"""
from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from flexlab.errors import SpecError
from flexlab.spec import _read_text, _UniqueKeyLoader

# Names that reach an ssh or a remote shell command line: strict, never
# starting with '-' (no option injection), no shell metacharacters.
HOSTNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}")
USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
IFACE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}")
REMOTE_DIR = re.compile(r"/[A-Za-z0-9_./-]{0,200}")

HOST_KEYS = ("address", "interface", "user", "key", "port")
TOP_KEYS = ("emulator", "first_host_ip", "management_ports", "install", "debs", "remote_dir", "known_hosts",
            "strict_host_keys", "connect_timeout_s", "rto_us", "defaults", "hosts")


@dataclass
class SshHost:
    """One machine reached over SSH."""
    name: str        # h<i> (or 'emulator'): how messages name it
    address: str
    user: str
    key: Path
    port: int
    interface: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} ({self.user}@{self.address}:{self.port})"


@dataclass
class Inventory:
    path: Path
    hosts: list[SshHost]
    emulator_interface: str
    emulator_ip: str
    emulator_machine: SshHost | None  # None: local
    emulator_bin: str                 # remote: the emulator's path there ('' = copied from --bin-dir)
    first_host_ip: str
    management_ports: list[int]
    install: str
    debs: list[Path]
    remote_dir: str
    known_hosts: Path
    strict_host_keys: bool
    connect_timeout_s: int
    rto_us: int
    raw: dict = field(default_factory=dict)

    def host_ip(self, i: int) -> str:
        return str(ipaddress.IPv4Address(self.first_host_ip) + i)


def _err(path: Path, where: str, msg: str) -> SpecError:
    return SpecError(f"{path}: {where}: {msg}")


def _int(path: Path, where: str, v, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _err(path, where, f"expected an integer, got {v!r}")
    if not lo <= v <= hi:
        raise _err(path, where, f"{v} is out of range {lo}..{hi}")
    return v


def _str(path: Path, where: str, v, rx: re.Pattern | None = None, rule: str = "") -> str:
    if not isinstance(v, str) or not v:
        raise _err(path, where, f"expected a non-empty string, got {v!r}")
    if rx is not None and not rx.fullmatch(v):
        raise _err(path, where, f"'{v}': {rule}")
    return v


def _ipv4(path: Path, where: str, v) -> str:
    try:
        return str(ipaddress.IPv4Address(_str(path, where, v)))
    except ValueError:
        raise _err(path, where, f"'{v}' is not an IPv4 address") from None


def _file(path: Path, where: str, v) -> Path:
    p = Path(os.path.expanduser(_str(path, where, v)))
    if not p.is_absolute():
        p = path.parent / p
    if not p.exists():
        raise _err(path, where, f"{p}: no such file")
    if not p.is_file():
        raise _err(path, where, f"{p}: not a regular file")
    try:
        with open(p, "rb") as f:
            f.read(1)
    except OSError as e:
        raise _err(path, where, f"{p}: cannot read: {e.strerror}") from None
    return p


def _keys(path: Path, where: str, node, known: tuple[str, ...]) -> dict:
    if not isinstance(node, dict):
        raise _err(path, where, f"expected a mapping, got {node!r}")
    for k in node:
        if k not in known:
            raise _err(path, f"{where}.{k}" if where != "inventory" else str(k),
                       f"unknown key (known: {', '.join(known)})")
    return node


def _host(path: Path, where: str, node, defaults: dict, name: str, need_interface: bool = True) -> SshHost:
    node = _keys(path, where, node, HOST_KEYS)
    v = {**defaults, **{k: x for k, x in node.items() if x is not None}}
    for k in ("address", "user", "key") + (("interface",) if need_interface else ()):
        if k not in v:
            raise _err(path, f"{where}.{k}", "required" + (" (here or in defaults)" if k != "address" else ""))
    src = {k: (where if k in node else "defaults") for k in HOST_KEYS}
    return SshHost(
        name=name,
        address=_str(path, f"{where}.address", v["address"], HOSTNAME,
                     "expected a host name or an IP address (letters, digits, '.', ':', '-', '_')"),
        user=_str(path, f"{src['user']}.user", v["user"], USER, "expected a Unix user name"),
        key=_file(path, f"{src['key']}.key", v["key"]),
        port=_int(path, f"{src['port']}.port", v.get("port", 22), 1, 65535),
        interface=_str(path, f"{src['interface']}.interface", v["interface"], IFACE,
                       "expected an interface name (at most 15 characters)") if need_interface else "")


def load_inventory(path: str | Path) -> Inventory:
    """Reads and validates an inventory; raises SpecError naming the field."""
    path = Path(path)
    if not path.exists():
        raise SpecError(f"--inventory {path}: no such file")
    text = _read_text(path)
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        where = f"{path}:{m.line + 1}:{m.column + 1}" if m else str(path)
        raise SpecError(f"{where}: not valid YAML: {e.problem}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    raw = _keys(path, "inventory", raw, TOP_KEYS)
    emu = _keys(path, "emulator", raw.get("emulator"), ("machine", "interface", "ip", "bin"))
    if "interface" not in emu:
        raise _err(path, "emulator.interface", "required (the NIC the emulator opens, DPDK af_packet)")
    defaults = _keys(path, "defaults", raw.get("defaults") or {}, HOST_KEYS)
    if "address" in defaults:
        raise _err(path, "defaults.address", "every host has its own address")
    machine_raw = emu.get("machine", "local")
    machine = None
    if isinstance(machine_raw, dict):
        if "interface" in machine_raw:
            raise _err(path, "emulator.machine.interface", "the emulator's NIC is emulator.interface")
        machine = _host(path, "emulator.machine", machine_raw, {k: v for k, v in defaults.items()
                                                                  if k != "interface"}, "emulator", False)
    elif machine_raw != "local":
        raise _err(path, "emulator.machine", f"{machine_raw!r}: expected 'local' (the machine running scripts/lab) "
                   "or a mapping {address, user, key, port} (reached by SSH)")
    ebin = emu.get("bin") or ""
    if ebin and (machine is None or not isinstance(ebin, str) or not REMOTE_DIR.fullmatch(ebin)):
        raise _err(path, "emulator.bin", f"{ebin!r}: " + ("only for a remote emulator.machine" if machine is None
                                                          else "expected an absolute path"))
    hosts_raw = raw.get("hosts")
    if not isinstance(hosts_raw, list) or not hosts_raw:
        raise _err(path, "hosts", "required: a list of hosts (host i of the experiment is hosts[i])")
    hosts = [_host(path, f"hosts[{i}]", h, defaults, f"h{i}") for i, h in enumerate(hosts_raw)]
    seen: dict[tuple[str, int], int] = {}
    for i, h in enumerate(hosts):
        if (h.address, h.port) in seen:
            raise _err(path, f"hosts[{i}].address", f"'{h.address}' port {h.port} is also hosts[{seen[h.address, h.port]}]")
        seen[h.address, h.port] = i
    ports = raw.get("management_ports", [22])
    if not isinstance(ports, list) or len(ports) > 8:
        raise _err(path, "management_ports", f"expected a list of at most 8 ports, got {ports!r}")
    ports = [_int(path, f"management_ports[{i}]", p, 1, 65535) for i, p in enumerate(ports)]
    install = raw.get("install", "check")
    if install not in ("check", "deb"):
        raise _err(path, "install", f"{install!r} is not one of check, deb")
    debs_raw = raw.get("debs") or []
    if not isinstance(debs_raw, list):
        raise _err(path, "debs", f"expected a list of .deb files, got {debs_raw!r}")
    debs = [_file(path, f"debs[{i}]", d) for i, d in enumerate(debs_raw)]
    for i, d in enumerate(debs):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+~-]*\.deb", d.name):
            raise _err(path, f"debs[{i}]", f"'{d.name}': expected a .deb file name")
    if install == "deb" and not debs:
        raise _err(path, "debs", "required for install: deb (flexplane-dkms_*.deb, flexplane-tc_*.deb)")
    if install == "check" and debs:
        raise _err(path, "debs", "given, but install is 'check' (set install: deb to install them)")
    remote_dir = _str(path, "remote_dir", raw.get("remote_dir", "/tmp"), REMOTE_DIR,
                      "expected an absolute path (letters, digits, '_', '.', '-', '/')")
    if ".." in remote_dir.split("/"):
        raise _err(path, "remote_dir", f"'{remote_dir}': no '..' allowed")
    kh = raw.get("known_hosts") or ""
    if not isinstance(kh, str) or "\0" in kh:
        raise _err(path, "known_hosts", f"expected a file name, got {kh!r}")
    known_hosts = Path(os.path.expanduser(kh)) if kh else path.with_name(path.name + ".known_hosts")
    if not known_hosts.is_absolute():
        known_hosts = path.parent / known_hosts
    if known_hosts.is_dir() or not known_hosts.parent.is_dir():
        raise _err(path, "known_hosts", f"{known_hosts}: not a file in an existing folder")
    strict = raw.get("strict_host_keys", False)
    if not isinstance(strict, bool):
        raise _err(path, "strict_host_keys", f"expected true or false, got {strict!r}")
    if strict and not known_hosts.is_file():
        raise _err(path, "known_hosts", f"{known_hosts}: no such file (strict_host_keys: true needs the hosts' keys)")
    return Inventory(
        path=path, hosts=hosts,
        emulator_interface=_str(path, "emulator.interface", emu["interface"], IFACE,
                                "expected an interface name (at most 15 characters)"),
        emulator_ip=_ipv4(path, "emulator.ip", emu.get("ip", "10.77.0.2")),
        emulator_machine=machine, emulator_bin=ebin,
        first_host_ip=_ipv4(path, "first_host_ip", raw.get("first_host_ip", "10.77.0.10")),
        management_ports=ports, install=install, debs=debs, remote_dir=remote_dir.rstrip("/") or "/",
        known_hosts=known_hosts, strict_host_keys=strict,
        connect_timeout_s=_int(path, "connect_timeout_s", raw.get("connect_timeout_s", 10), 1, 300),
        rto_us=_int(path, "rto_us", raw.get("rto_us", 2000), 100, 1_000_000), raw=raw)


def check_inventory_for(inv: Inventory, hosts: int, where: str) -> None:
    """The experiment's topology needs `hosts` machines; the emulator's
    address must not be one of theirs."""
    if len(inv.hosts) < hosts:
        raise SpecError(f"{inv.path}: hosts: {len(inv.hosts)} listed, the experiment's topology has "
                        f"{hosts} endpoints (host i runs on hosts[i]){' (' + where.rstrip(': ') + ')' if where else ''}")
    ips = [inv.host_ip(i) for i in range(hosts)]
    if inv.emulator_ip in ips:
        raise SpecError(f"{inv.path}: emulator.ip: {inv.emulator_ip} is host {ips.index(inv.emulator_ip)}'s "
                        f"address (first_host_ip + i)")
