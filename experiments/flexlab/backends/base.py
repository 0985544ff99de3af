"""The backend seam: what the runner needs from wherever hosts live."""
from __future__ import annotations

import os
import shutil
import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from flexlab.procs import Proc, Processes

EMULATOR_IP = "10.77.0.2"
EMULATOR_PORT = 9977


def dpdk_runtime_root() -> Path:
    """Where DPDK's EAL keeps its per-prefix runtime folders
    (eal_get_runtime_dir: /var/run/dpdk for root, else $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk)."""
    if os.geteuid() == 0:
        return Path("/var/run/dpdk")
    return Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp") / "dpdk"


def _file_prefix_in_use(name: str) -> bool:
    """A live process was started with --file-prefix=<name>."""
    needle = f"--file-prefix={name}\0".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle in f.read() + b"\0":
                    return True
        except OSError:
            continue
    return False


def remove_dpdk_runtime(prefix: str, exact: bool = True) -> list[Path]:
    """Removes the EAL runtime folder(s) of the lab's emulators: the one named
    `prefix` (teardown; the runner's emulator was started with
    --file-prefix=<prefix>), or with exact=False every one whose name starts
    with `prefix` (`lab cleanup`). Only lab prefixes (names.PREFIX_NAME) and
    only folders no live process uses; returns what it removed."""
    from flexlab.names import PREFIX_NAME

    root = dpdk_runtime_root()
    if not root.is_dir():
        return []
    names = [prefix] if exact else sorted(p.name for p in root.iterdir() if p.name.startswith(prefix))
    removed = []
    for name in names:
        d = root / name
        if not PREFIX_NAME.fullmatch(name) or d.is_symlink() or not d.is_dir() or _file_prefix_in_use(name):
            continue
        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            removed.append(d)
    return removed


def host_ip(i: int) -> str:
    """Host i's address in the lab's 10.77.0.0/16 (10.77.0.10, .11, ...)."""
    n = 10 + i
    return f"10.77.{n // 256}.{n % 256}"


def host_ip6(i: int) -> str:
    """Host i's IPv6 address (lab.ipv6): fd77::a, fd77::b, ... (10 + i in hex)."""
    return f"fd77::{10 + i:x}"


def map_program_argv(argv: list[str], program_dir: str, out_dir: str,
                     place_input: Callable[[Path], str]) -> tuple[list[str], list[tuple[str, Path]]]:
    """A workload program's argv for a host with its own file system: the
    program (argv[0], from bin_dir) is taken from program_dir, each `--out
    FILE` is written to out_dir (returned as (out_dir, FILE's folder) pairs
    to copy back when the program ends), and each `cdf:FILE` is copied in
    by place_input(FILE), which returns the path on the host."""
    mapped: list[str] = []
    fetch: list[tuple[str, Path]] = []
    it = iter(argv)
    for a in it:
        if not mapped and "/" in a:
            a = f"{program_dir}/{Path(a).name}"
        elif a == "--out":
            local = Path(next(it))
            fetch.append((out_dir, local.parent))
            mapped += [a, f"{out_dir}/{local.name}"]
            continue
        elif a.startswith("cdf:") and Path(a[4:]).is_file():
            a = "cdf:" + place_input(Path(a[4:]))
        mapped.append(a)
    return mapped, fetch


@dataclass
class LabSettings:
    """What a backend needs to bring hosts up and start their endpoints."""
    hosts: int
    ecn: bool
    hold_ms: float
    fallback: str          # open | closed
    bypass: list[str]
    window: int
    bin_dir: Path
    scratch: Path          # short paths (Unix sockets)
    ipv6: bool = False     # hosts also get fd77::/64 addresses; their IPv6 packets are held too
    cc: str = "cubic"      # transport.cc: the hosts' default congestion control
    qemu: dict = field(default_factory=dict)  # the experiment's qemu section (backend qemu)
    inventory: Any = None  # flexlab.inventory.Inventory (backend hosts: --inventory)
    trace_stages: bool = False  # lab.trace_stages: endpoints write requests.csv (netns backend)
    queue_at: str = "fabric"    # lab.queue_at (netns backend): fabric | host


class Backend(ABC):
    name = "?"

    def __init__(self, prefix: str, procs: Processes) -> None:
        self.prefix = prefix
        self.procs = procs

    @classmethod
    @abstractmethod
    def problems(cls) -> list[str]:
        """Why this backend cannot run here (empty: it can)."""

    @abstractmethod
    def up(self, s: LabSettings) -> None:
        """Creates the hosts, the L2 segment they share with the emulator's
        port, and whatever holds their packets (everything torn down by down())."""

    @abstractmethod
    def down(self) -> None:
        """Removes everything up() created; safe to call twice or after a failed up()."""

    def addresses(self, s: LabSettings) -> tuple[str, list[str]]:
        """The emulator's address and the hosts' (host i: 10.77.0.(10+i) unless
        the backend's machines say otherwise: hosts, from the inventory)."""
        return EMULATOR_IP, [host_ip(i) for i in range(s.hosts)]

    @abstractmethod
    def start_emulator(self, argv: list[str], eal: list[str], log: Path) -> Proc:
        """Starts `flexplane-emulator live` (argv up to '--') on the hosts' segment; `eal` are
        the EAL options without the device, which the backend adds."""

    def realtime_engine(self, emu: Proc, priority: int) -> list[int] | None:
        """Puts the emulator's engine threads under SCHED_FIFO where it runs
        elsewhere (the thread ids); None: it runs here (the runner does it)."""
        return None

    @abstractmethod
    def start_endpoints(self, config: Path, out_dir: Path, s: LabSettings) -> list[Proc]:
        """Starts the per-host packet holders against `config` (the emulator's config); returns
        once every one has a session with the emulator (LabError naming the host otherwise)."""

    def stop_endpoints(self, out_dir: Path) -> None:
        """After the workload: the packet holders drain their outstanding
        verdicts and write out_dir/h<i>/endpoint_counters.csv. Default: the
        endpoint processes stop on SIGTERM and write their own counters."""
        self.procs.stop([p for p in self.procs.procs if p.name.startswith("endpoint")], signal.SIGTERM, 15)

    @abstractmethod
    def run_on_host(self, host: int, name: str, argv: list[str], log: Path) -> Proc:
        """Starts an application process on a host. Paths in argv are the
        runner's; a backend whose hosts see another file system maps them
        (programs from bin_dir, input files, and --out files, brought back
        when the process ends)."""

    def hints_path(self, s: LabSettings, host: int) -> str:
        """Where host's applications send flow-size hints ('' = not supported)."""
        return ""

    @classmethod
    @abstractmethod
    def cleanup(cls, prefix: str) -> list[str]:
        """Removes leftovers of killed runs whose names start with prefix; returns what it removed."""
