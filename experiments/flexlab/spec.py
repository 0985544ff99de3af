"""Experiment files: schema, validation and the run matrix.

An experiment file (YAML, reference in docs/lab.md) describes the network
(topology, link rate, routers' schemes), the endpoints' transport, the
workload, how long and how often to run, and variants that each override any
part of it. Everything is validated before anything starts: unknown keys,
wrong types and out-of-range values are reported with the dotted field name
(and the variant it came from); scheme names and parameters are checked by
`flexplane-emulator check` on the generated emulator config.
"""
from __future__ import annotations

import copy
import ipaddress
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from flexlab.errors import SpecError
from flexlab.names import check_variant_name

REQUIRED = object()

# What the netns backend's host kernel offers (RECIPES.md section 6); the
# qemu backend's guests also have dctcp.
NETNS_CC = ("cubic", "reno", "bbr")
QEMU_CC = ("cubic", "reno", "bbr", "dctcp")


@dataclass
class F:
    """One field: type, default, bounds, allowed values and a description."""

    kind: Any
    default: Any = REQUIRED
    doc: str = ""
    choices: tuple | None = None
    lo: float | None = None
    hi: float | None = None
    item: Any = None  # list element type
    check: Callable[[Any], str | None] | None = None  # extra rule: returns an error or None


def _sizes_check(v: str) -> str | None:
    if not re.fullmatch(r"(fixed:\d+|mix:.+|cdf:.+)", v):
        return "expected fixed:BYTES, mix:BYTES@PROB[@DSCP],..., cdf:web-search, cdf:data-mining or cdf:PATH"
    if v.startswith("mix:"):
        total = 0.0
        for item in v[4:].split(","):
            parts = item.split("@")
            if len(parts) not in (2, 3) or not parts[0].isdigit() or int(parts[0]) <= 0:
                return f"mix item '{item}': expected BYTES@PROB[@DSCP]"
            try:
                p = float(parts[1])
            except ValueError:
                return f"mix item '{item}': probability '{parts[1]}' is not a number"
            if not 0 < p <= 1:
                return f"mix item '{item}': probability must be in (0, 1]"
            if len(parts) == 3 and not (parts[2].isdigit() and int(parts[2]) <= 63):
                return f"mix item '{item}': DSCP must be 0..63"
            total += p
        if abs(total - 1) > 1e-6:
            return f"mix probabilities sum to {total:g}, not 1"
    if v.startswith("fixed:") and int(v[6:]) <= 0:
        return "fixed size must be > 0"
    return None


_PROTOCOLS = ("tcp", "udp", "icmp", "icmpv6")


def _bypass_rule(spec: str) -> str | None:
    """The grammar of flexplane-nfq-endpoint --bypass (BypassRule::parse in
    endpoint/nfqueue/packet_holder.cc): ADDRESS/LENGTH, PROTO or tcp|udp:PORT."""
    if "/" in spec:
        addr, _, length = spec.partition("/")
        try:
            ip = ipaddress.ip_address(addr)
        except ValueError:
            ip = None
        if ip is None or not re.fullmatch(r"[0-9]{1,3}", length):
            return f"'{spec}': expected ADDRESS/LENGTH"
        if int(length) > ip.max_prefixlen:
            return f"'{spec}': prefix length {length} too long"
        return None
    proto, colon, port = spec.partition(":")
    if proto not in _PROTOCOLS and not (re.fullmatch(r"[0-9]{1,3}", proto) and 1 <= int(proto) <= 255):
        return f"'{spec}': unknown protocol (tcp, udp, icmp, icmpv6 or a number 1-255)"
    if colon and (proto not in ("tcp", "udp") or not re.fullmatch(r"[0-9]{1,5}", port)
                  or not 1 <= int(port) <= 65535):
        return f"'{spec}': expected tcp:PORT or udp:PORT with PORT 1-65535"
    return None


def _bypass_check(rules: list) -> str | None:
    for i, r in enumerate(rules):
        err = _bypass_rule(r)
        if err:
            return f"[{i}] {err}"
    return None


def _path_check(v: str) -> str | None:
    return "contains a NUL byte" if "\0" in v else None


SCHEMA: dict[str, Any] = {
    "description": F(str, "", "free text"),
    "backend": F(str, "netns", "where endpoints run (hosts: real machines listed by --inventory)",
                 choices=("netns", "qemu", "hosts")),
    "topology": F(dict, REQUIRED, "the emulated network's topology (docs/config.md), passed to the emulator"),
    "network": {
        "link_rate_gbps": F(float, REQUIRED, "emulated rate of every link", lo=1e-4, hi=100),
        "abstract_packet_bytes": F(int, 1500, "bytes one request stands for (= the IP MTU)", lo=64, hi=9000),
    },
    "routers": F(dict, {}, "schemes per router (docs/config.md), passed to the emulator"),
    "endpoint": F(dict, {}, "endpoint section of the emulator config (priority stamping)"),
    "transport": {
        "cc": F(str, "cubic", "TCP congestion control of every socket"),
        "ecn": F(bool, False, "hosts negotiate ECN (net.ipv4.tcp_ecn=1)"),
    },
    "workload": {
        "kind": F(str, REQUIRED, "rpc | bulk | incast", choices=("rpc", "bulk", "incast")),
        # rpc
        "clients": F(list, None, "rpc: hosts that send requests", item=int),
        "servers": F(list, None, "rpc / incast: hosts that answer", item=int),
        "sizes": F(str, None, "rpc: response sizes", check=_sizes_check),
        "load": F(float, None, "rpc: offered load per client, fraction of its link", lo=1e-6, hi=10),
        "rate_per_s": F(float, None, "rpc: requests per second per client (instead of load)", lo=1e-6, hi=1e6),
        "max_inflight": F(int, 2000, "rpc: requests a client keeps open before skipping new ones", lo=1, hi=100000),
        # bulk
        "senders": F(list, None, "bulk: hosts that send one long flow each", item=int),
        "receiver": F(int, None, "bulk: the host receiving every flow", lo=0),
        "interval_ms": F(float, 1000, "bulk: throughput sample period", lo=10, hi=60000),
        # incast
        "client": F(int, None, "incast: the host that queries", lo=0),
        "size_bytes": F(int, None, "incast: bytes each server answers", lo=1, hi=2**40),
        "queries": F(int, 20, "incast: queries, one after another", lo=1, hi=1000000),
        "gap_ms": F(float, 100, "incast: pause between queries", lo=0, hi=600000),
    },
    "duration_s": F(float, REQUIRED, "how long the workload generates traffic", lo=0.1, hi=86400),
    "drain_s": F(float, 10, "then wait this long for requests in flight", lo=0, hi=3600),
    "warmup_s": F(float, 0, "analysis skips throughput and queue samples of the first seconds", lo=0, hi=3600),
    "repetitions": F(int, 1, "runs per variant", lo=1, hi=1000),
    "seed": F(int, 1, "run r of a variant uses seed + r", lo=0, hi=2**62),
    "emulator": {
        "cores": F(int, 1, "engine cores", lo=1, hi=64),
        "occupancy_interval_us": F(float, 1000, "queue occupancy sample period (0 = off)", lo=0, hi=1e7),
        "endpoint_queue_pkts": F(int, 64, "emulated NIC queue per host, packets (small: see docs/lab.md, "
                                 "'the emulated NIC queue')", lo=1, hi=1 << 20),
        "lcores": F(str, "", "DPDK --lcores (default: two lcores floating over every CPU)"),
        "sleep_when_ahead": F(bool, True, "engine sleeps instead of spinning when ahead"),
        "realtime_priority": F(int, 20, "SCHED_FIFO priority of the engine thread(s) so they wake on time "
                               "(0 = normal scheduling)", lo=0, hi=99),
        "late_threshold": F(float, 0.001, "fraction of the emulator's timeslots that may start late before a "
                            "run's results are marked LATE (docs/lab.md, 'Fidelity')", lo=0, hi=1),
    },
    "lab": {
        "hold_ms": F(float, 3000, "longest a packet waits for its verdicts", lo=1, hi=600000),
        "fallback": F(str, "closed", "packets whose verdicts never come: open (accept) or closed (drop)",
                      choices=("open", "closed")),
        "bypass": F(list, [], "traffic never held (flexplane-nfq-endpoint --bypass)", item=str,
                    check=_bypass_check),
        "window": F(int, 4096, "protocol requests in flight per endpoint (power of two)", lo=1, hi=32768),
        "ipv6": F(bool, False, "hosts also get IPv6 addresses fd77::<10+i>, held like IPv4 (workloads use IPv4)"),
        "queue_at": F(str, "fabric", "netns backend: where packets are held: fabric (the bridge's FORWARD chain; "
                      "needs br_netfilter) or host (each host's own POSTROUTING, as the qdisc holds them)",
                      choices=("fabric", "host")),
        "trace_stages": F(bool, False, "netns backend: the emulator and every endpoint record each packet's times "
                          "(stages.csv, requests.csv; scripts/live_stages.py; docs/live.md)"),
    },
    "qemu": {
        "memory_mb": F(int, 256, "qemu backend: memory of each host VM", lo=128, hi=4096),
        "boot_timeout_s": F(float, 300, "qemu backend: longest the VMs may take to boot (TCG is slow)", lo=10, hi=3600),
        "kernel_debug": F(bool, False, "qemu backend: boot the guests with the kmod tests' memory-debugging "
                          "options (slower)"),
    },
    "analysis": {
        "short_max_bytes": F(int, 100_000, "flows up to this size are 'short'", lo=1),
        "long_min_bytes": F(int, 1_000_000, "flows from this size are 'long'", lo=1),
    },
    "variants": F(dict, None, "name -> overrides, deep-merged over the rest (one run set each)"),
    "output": {
        "dir": F(str, "", "results folder (default results/lab/<file stem>)", check=_path_check),
    },
}

BUILTIN_CDFS = {"web-search", "data-mining"}


def deep_merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _type_name(kind: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
            dict: "a mapping"}.get(kind, str(kind))


def _coerce(value: Any, f: F, where: str) -> Any:
    kind = f.kind
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is bool and not isinstance(value, bool):
        raise SpecError(f"{where}: expected true or false, got {value!r}")
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise SpecError(f"{where}: expected an integer, got {value!r}")
    if not isinstance(value, kind):
        raise SpecError(f"{where}: expected {_type_name(kind)}, got {value!r}")
    if kind is float and not math.isfinite(value):
        raise SpecError(f"{where}: expected a finite number, got {value!r}")
    if f.choices is not None and value not in f.choices:
        raise SpecError(f"{where}: '{value}' is not one of {', '.join(map(str, f.choices))}")
    if f.lo is not None and value < f.lo:
        raise SpecError(f"{where}: {value} is below the minimum {f.lo:g}")
    if f.hi is not None and value > f.hi:
        raise SpecError(f"{where}: {value} is above the maximum {f.hi:g}")
    if kind is list and f.item is not None:
        for i, x in enumerate(value):
            if f.item is int and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
                raise SpecError(f"{where}[{i}]: expected a host index (integer >= 0), got {x!r}")
            if f.item is str and not isinstance(x, str):
                raise SpecError(f"{where}[{i}]: expected a string, got {x!r}")
    if f.check is not None:
        err = f.check(value)
        if err:
            raise SpecError(f"{where}: {err}")
    return value


def _validate(node: Any, schema: dict, where: str) -> dict:
    if node is None:
        node = {}
    if not isinstance(node, dict):
        raise SpecError(f"{where or 'experiment'}: expected a mapping, got {node!r}")
    out: dict[str, Any] = {}
    for k in node:
        if k not in schema:
            known = ", ".join(sorted(schema))
            raise SpecError(f"{where + '.' if where else ''}{k}: unknown key (known: {known})")
    for k, f in schema.items():
        dotted = f"{where}.{k}" if where else k
        if isinstance(f, dict):
            out[k] = _validate(node.get(k), f, dotted)
            continue
        if k not in node or node[k] is None:
            if f.default is REQUIRED:
                raise SpecError(f"{dotted}: required ({f.doc})")
            out[k] = copy.deepcopy(f.default)
            continue
        out[k] = _coerce(node[k], f, dotted)
    return out


def _check_unknown_keys(over: Any, schema: dict, where: str) -> None:
    """A variant's overrides may only name fields the schema knows."""
    if not isinstance(over, dict):
        raise SpecError(f"{where}: expected a mapping of overrides, got {over!r}")
    for k, v in over.items():
        if k not in schema or k == "variants":
            raise SpecError(f"{where}.{k}: unknown key" + (" (variants do not nest)" if k == "variants" else ""))
        if isinstance(schema[k], dict) and v is not None:
            _check_unknown_keys(v, schema[k], f"{where}.{k}")


@dataclass
class Variant:
    name: str
    config: dict                     # validated, fully resolved
    raw: dict = field(default_factory=dict)  # what the file said (merged), for the resolved-config record


@dataclass
class RunSpec:
    variant: Variant
    repetition: int
    seed: int

    @property
    def name(self) -> str:
        return f"{self.variant.name}/r{self.repetition}"


@dataclass
class Experiment:
    path: Path
    variants: list[Variant]
    raw: dict

    def runs(self, only: list[str] | None = None) -> list[RunSpec]:
        out = []
        for v in self.variants:
            if only and v.name not in only:
                continue
            for r in range(v.config["repetitions"]):
                out.append(RunSpec(v, r, v.config["seed"] + r))
        return out

    @property
    def output_dir(self) -> Path:
        d = self.variants[0].config["output"]["dir"]
        return Path(d) if d else Path("results/lab") / self.path.stem


def _check_workload(c: dict, where: str, hosts: int | None) -> None:
    w = c["workload"]
    kind = w["kind"]
    need = {"rpc": ["clients", "servers", "sizes"], "bulk": ["senders", "receiver"],
            "incast": ["client", "servers", "size_bytes"]}[kind]
    for k in need:
        if w[k] is None:
            raise SpecError(f"{where}workload.{k}: required for workload kind '{kind}'")
    allowed = set(need) | {"kind"} | {"rpc": {"load", "rate_per_s", "max_inflight"}, "bulk": {"interval_ms"},
                                      "incast": {"queries", "gap_ms"}}[kind]
    defaults = {"max_inflight", "interval_ms", "queries", "gap_ms"}
    for k, v in w.items():
        if k not in allowed and v is not None and k not in defaults:
            raise SpecError(f"{where}workload.{k}: not used by workload kind '{kind}'")
    if kind == "rpc":
        if (w["load"] is None) == (w["rate_per_s"] is None):
            raise SpecError(f"{where}workload: give exactly one of load and rate_per_s")
        if not w["clients"] or not w["servers"]:
            raise SpecError(f"{where}workload.{'clients' if not w['clients'] else 'servers'}: must not be empty")
        sizes = w["sizes"]
        if sizes.startswith("cdf:") and sizes[4:] not in BUILTIN_CDFS:
            err = _readable_file(sizes[4:])
            if err:
                raise SpecError(f"{where}workload.sizes: CDF file '{sizes[4:]}': {err} "
                                f"(built in: {', '.join(sorted(BUILTIN_CDFS))})")
    roles: list[tuple[str, list[int]]] = []
    if kind == "rpc":
        roles = [("clients", w["clients"]), ("servers", w["servers"])]
        overlap = set(w["clients"]) & set(w["servers"])
        if overlap:
            raise SpecError(f"{where}workload.servers: hosts {sorted(overlap)} are also clients (one role per host)")
    elif kind == "bulk":
        roles = [("senders", w["senders"]), ("receiver", [w["receiver"]])]
        if w["receiver"] in w["senders"]:
            raise SpecError(f"{where}workload.senders: the receiver {w['receiver']} cannot send to itself")
        if not w["senders"]:
            raise SpecError(f"{where}workload.senders: must not be empty")
    else:
        roles = [("client", [w["client"]]), ("servers", w["servers"])]
        if w["client"] in w["servers"]:
            raise SpecError(f"{where}workload.servers: the client {w['client']} cannot also serve")
        if not w["servers"]:
            raise SpecError(f"{where}workload.servers: must not be empty")
    for name, hs in roles:
        if len(set(hs)) != len(hs):
            raise SpecError(f"{where}workload.{name}: a host is listed twice")
        if hosts is not None:
            for h in hs:
                if h >= hosts:
                    raise SpecError(f"{where}workload.{name}: host {h} does not exist (the topology has {hosts} endpoints)")


def _readable_file(name: str) -> str | None:
    """Why `name` cannot be read as a text file (None: it can). Its content
    is the emulator's to judge (the generated config names it)."""
    if "\0" in name:
        return "contains a NUL byte"
    p = Path(name)
    try:
        if not p.exists():
            return "no such file"
        if not p.is_file():
            return "not a regular file"
        with open(p, "rb") as f:
            f.read(1)
    except OSError as e:
        return f"cannot read: {e.strerror}"
    return None


def _check_transport(c: dict, where: str) -> None:
    cc = c["transport"]["cc"]
    if c["backend"] == "netns" and cc not in NETNS_CC:
        hint = " (DCTCP needs the qemu backend: the host kernel has no tcp_dctcp)" if cc == "dctcp" else ""
        raise SpecError(f"{where}transport.cc: '{cc}' is not available on backend netns "
                        f"(choose {', '.join(NETNS_CC)}){hint}")
    if c["backend"] == "qemu" and cc not in QEMU_CC:
        raise SpecError(f"{where}transport.cc: '{cc}' is not available on backend qemu (choose {', '.join(QEMU_CC)})")
    if c["backend"] == "hosts" and cc not in QEMU_CC:
        raise SpecError(f"{where}transport.cc: '{cc}' is not supported on backend hosts (choose {', '.join(QEMU_CC)})")
    if c["backend"] in ("qemu", "hosts"):
        # The flexplane qdisc manages IPv4 and IPv6 to endpoint addresses and
        # knows no per-rule bypass list (hosts: the inventory's
        # management_ports); the lab's IPv6 addressing is netns's.
        b = c["backend"]
        if c["lab"]["bypass"]:
            raise SpecError(f"{where}lab.bypass: not supported on backend {b} (the qdisc holds every packet "
                            "to an endpoint address" + ("; ports it never holds: the inventory's management_ports)"
                                                        if b == "hosts" else ")"))
        if c["lab"]["ipv6"]:
            raise SpecError(f"{where}lab.ipv6: not supported on backend {b} yet (hosts are IPv4 only)")
        if c["lab"]["queue_at"] != "fabric":
            raise SpecError(f"{where}lab.queue_at: netns backend only (on backend {b} the qdisc holds packets)")
        if c["lab"]["trace_stages"]:
            raise SpecError(f"{where}lab.trace_stages: not supported on backend {b} yet (the qdisc does not "
                            "record its packets' times; netns's NFQUEUE endpoints do)")
        # What the qdisc accepts (docs/kmod.md, options): hold 1ms..60s, window 2..32768.
        if c["lab"]["hold_ms"] > 60000:
            raise SpecError(f"{where}lab.hold_ms: {c['lab']['hold_ms']:g} is above 60000 on backend {b} "
                            "(the qdisc's hold is at most 60 s)")
        if c["lab"]["window"] < 2:
            raise SpecError(f"{where}lab.window: {c['lab']['window']} is below 2 on backend {b} "
                            "(the qdisc's window is 2..32768)")
    win = c["lab"]["window"]
    if win & (win - 1):
        raise SpecError(f"{where}lab.window: {win} is not a power of two")


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load, refusing a key given twice in one mapping (YAML says keys
    are unique; PyYAML would silently keep the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for k, _ in node.value if isinstance(node, yaml.MappingNode) else []:
            if k.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` keys may be overridden
                continue
            key = self.construct_object(k, deep=True)
            try:
                dup = key in seen
            except TypeError:  # an unhashable key: the base class reports it
                break
            if dup:
                m = k.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{key}' (first at line {seen[key].line + 1}, "
                    f"column {seen[key].column + 1})", m)
            seen[key] = k.start_mark
        return super().construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping)


def _read_text(path: Path) -> str:
    """The file as text: UTF-8 (YAML's encoding here), no NUL bytes."""
    try:
        if path.is_dir():
            raise SpecError(f"{path}: is a folder, not an experiment file")
        data = path.read_bytes()
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) > 1 and (data[0] == 0) != (data[1] == 0)):
        raise SpecError(f"{path}: looks like UTF-16 text; save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise SpecError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                        "experiment files are YAML in UTF-8") from None
    if "\0" in text:
        line = text[:text.index("\0")].count("\n") + 1
        raise SpecError(f"{path}:{line}: contains a NUL byte (a binary file?)")
    return text.removeprefix("\ufeff")


def load_experiment(path: str | Path, backend: str | None = None) -> Experiment:
    """Reads and validates an experiment file; raises SpecError naming the
    field. `backend` (--backend) replaces every variant's backend."""
    path = Path(path)
    text = _read_text(path)
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        where = f"{path}:{m.line + 1}:{m.column + 1}" if m else str(path)
        ctx = f" ({e.context}, line {e.context_mark.line + 1})" if e.context and e.context_mark else ""
        raise SpecError(f"{where}: not valid YAML: {e.problem}{ctx}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: expected a mapping at the top level")
    variants_raw = raw.get("variants")
    base_raw = {k: v for k, v in raw.items() if k != "variants"}
    try:
        if variants_raw is None:
            variants_raw = {"default": {}}
        if not isinstance(variants_raw, dict) or not variants_raw:
            raise SpecError("variants: expected a mapping of name -> overrides")
        # The base must be valid on its own only where variants do not fill it in.
        variants = []
        for name, over in variants_raw.items():
            check_variant_name(name, "")
            over = over or {}
            _check_unknown_keys(over, SCHEMA, f"variants.{name}")
            merged = deep_merge(base_raw, over)
            if backend is not None:
                merged["backend"] = backend
            where = f"variant '{name}': " if len(variants_raw) > 1 or name != "default" else ""
            try:
                config = _validate(merged, {k: v for k, v in SCHEMA.items() if k != "variants"}, "")
            except SpecError as e:
                raise SpecError(f"{where}{e}") from None
            _check_transport(config, where)
            _check_workload(config, where, None)
            variants.append(Variant(name, config, merged))
    except SpecError as e:
        raise SpecError(f"{path}: {e}") from None
    return Experiment(path, variants, raw)


def describe_schema() -> str:
    """The schema as indented text (docs/lab.md and `lab schema`)."""
    lines: list[str] = []

    def walk(s: dict, indent: str) -> None:
        for k, f in s.items():
            if isinstance(f, dict):
                lines.append(f"{indent}{k}:")
                walk(f, indent + "  ")
                continue
            d = "required" if f.default is REQUIRED else f"default {f.default!r}"
            extra = f" ({'|'.join(map(str, f.choices))})" if f.choices else ""
            lines.append(f"{indent}{k}: {_type_name(f.kind)}, {d}{extra} — {f.doc}")

    walk(SCHEMA, "")
    return "\n".join(lines)
