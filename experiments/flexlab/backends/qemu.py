"""The qemu backend: hosts are QEMU/TCG VMs running Debian's kernel with the
`flexplane` qdisc (kmod/, docs/kmod.md) on their NIC; guest TCP has
tcp_dctcp. The VMs, their network and their command channel are the kmod
VM harness's (kmod/vm/vmlab.py, one Lab per run; images from
kmod/vm/images.sh):

    <prefix>       network namespace with bridge br0 (pure L2)
    <prefix>t<i>   tap of VM i on br0; VM i is host i, 10.77.0.(10+i)
    <prefix>e      veth end opened by the emulator (DPDK af_packet), its
                   peer <prefix>b on br0; the emulator plays 10.77.0.2

Each VM boots the initramfs of the kmod tests with flexplane-workload added
(/sbin), gets the qdisc (`tc qdisc add dev eth0 root flexplane ...`) as its
endpoint, and runs the workload through the virtio-serial agent: a guest
process is started in the background with its log, pid and exit status in
/tmp/fp, polled by the runner (GuestPopen), and its --out files are copied
back to the host when it exits. At the end the qdisc's counters (tc -s -j)
become endpoints/h<i>/endpoint_counters.csv under the netns endpoint's names
(qdisc.json beside it keeps every counter), and the guest's TCP/IP counters
(/proc/net/netstat, snmp, snmp6: e.g. IpExt.InCEPkts, the CE marks its TCP
received) endpoints/h<i>/netstat.csv.
"""
from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from flexlab.backends.base import (EMULATOR_IP, Backend, LabSettings, host_ip, map_program_argv,
                                   remove_dpdk_runtime)
from flexlab.backends.netns import NetnsBackend, _run, list_netns
from flexlab.errors import LabError
from flexlab.procs import Proc, kill_pids, pids_in_netns

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "kmod" / "vm"))
from vmlab import Guest, GuestError, Lab  # noqa: E402

RTO_MS = 50   # protocol retransmission timeout, both directions (docs/lab.md, backend qemu)
POLL_S = 0.5  # a guest process's state is asked at most this often (each ask costs the TCG guest a fork)


class GuestPopen:
    """A process in a VM behind subprocess.Popen's interface (what
    flexlab.procs uses: poll, returncode, send_signal, wait, kill, pid)."""

    def __init__(self, guest: Guest, tag: str, cmd: str, log: Path, fetch: list[tuple[str, Path]]) -> None:
        self.guest, self.tag, self.log = guest, tag, log
        self.fetch = fetch              # (guest dir, host dir): files to copy back at exit
        self.dir = f"/tmp/fp/{tag}"
        self.returncode: int | None = None
        self.pid = -1
        self._asked = 0.0
        guest.sh(f"mkdir -p {self.dir}; ( {cmd} > {self.dir}/log 2>&1 & echo $! > {self.dir}/pid; wait $!; "
                 f"echo $? > {self.dir}/rc ) > /dev/null 2>&1 &")

    def _ask(self) -> None:
        try:
            out = self.guest.sh(f"cat {self.dir}/rc 2>/dev/null; echo @@log@@; cat {self.dir}/log", timeout=60)
        except (GuestError, OSError):
            self.returncode = -signal.SIGKILL  # the VM is gone
            return
        rc, _, text = out.partition("@@log@@")
        self.log.write_text(text.lstrip("\n") + ("\n" if text.strip() else ""))
        if rc.strip():
            self.returncode = int(rc.split()[0])
            self._bring_back()

    def _bring_back(self) -> None:
        """Copies the program's --out files to the host; a failure is written to
        its log (the analysis then names the missing file)."""
        try:
            for gdir, hdir in self.fetch:
                hdir.mkdir(parents=True, exist_ok=True)
                for name in self.guest.sh(f"ls {gdir}").split():
                    (hdir / name).write_text(self.guest.sh(f"cat {gdir}/{name}", timeout=120) + "\n")
        except (GuestError, OSError) as e:
            with open(self.log, "a") as f:
                f.write(f"lab: copying the output files back from {self.guest.name} failed: {e}\n")

    def poll(self) -> int | None:
        if self.returncode is None and time.monotonic() - self._asked >= POLL_S:
            self._asked = time.monotonic()
            self._ask()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                self.guest.sh(f"kill -{int(sig)} $(cat {self.dir}/pid) 2>/dev/null", check=False)
            except (GuestError, OSError):
                pass
            self._asked = 0.0

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.tag, timeout or 0)
            time.sleep(0.1)
        return self.returncode


# The netns endpoint's counter names (analysis.run_metrics) from the qdisc's,
# like with like (docs/lab.md, "The qemu backend"). The NFQUEUE endpoint
# counts segments: packets on the wire, one verdict path each; the qdisc
# counts an skb (`pkts_managed`, a GSO packet once) and its segments
# (`segs_managed`), and its fates (`released`, `marked`, `dropped`,
# `fallback_*`) in segments. So packets_held is segs_managed; `released`
# includes the `marked` segments, which the NFQUEUE endpoint counts apart.
# Then packets_held = released + marked + dropped + timeout_* once nothing is
# held (the lab's invariant). `bypassed` stays in skbs (the qdisc counts
# bypassed packets once each, as it sees them).
def _endpoint_counters(q: dict) -> dict[str, int]:
    x = {k: v for k, v in q.items() if isinstance(v, int) and not isinstance(v, bool)}
    g = x.get
    return {
        "packets_held": g("segs_managed", 0),
        "requests": g("requests", 0),
        "requests_submitted": g("requests", 0) - g("aborted", 0),
        "verdicts": g("verdicts", 0),
        "packets_released": g("released", 0) - g("marked", 0),
        "packets_marked": g("marked", 0),
        "packets_dropped": g("dropped", 0),
        "timeout_accepted": g("fallback_released", 0) + g("fallback_unmanaged", 0),
        "timeout_dropped": g("fallback_dropped", 0),
        "bypassed": sum(v for k, v in x.items() if k.startswith("bypass_")),
        "retransmissions": g("retransmits", 0),
        "malformed": g("rx_bad", 0),
        "late_verdicts": g("verdict_mismatch", 0),
        **{f"qdisc_{k}": v for k, v in x.items()},
    }



def wait_qdiscs_drained(read_stats, timeout_s: float = 15) -> list[dict]:
    """The qdiscs' statistics (read_stats(): one dict per host) once none
    holds a packet or owes a verdict, or as they are after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        stats = read_stats()
        if all(x.get("held") == 0 and x.get("pending") == 0 for x in stats) or time.monotonic() > deadline:
            return stats
        time.sleep(0.5)


def write_qdisc_counters(d: Path, qdisc: dict, netstat: dict[str, int]) -> None:
    """A host's endpoint outputs (backends with the flexplane qdisc): qdisc.json
    (every counter), endpoint_counters.csv (the netns endpoint's names) and
    netstat.csv (the host's TCP/IP counters)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "qdisc.json").write_text(json.dumps(qdisc, indent=1))
    for name, counters in (("endpoint_counters.csv", _endpoint_counters(qdisc)), ("netstat.csv", netstat)):
        with open(d / name, "w") as f:
            f.write("counter,value\n")
            for k, v in counters.items():
                f.write(f"{k},{v}\n")

class QemuBackend(Backend):
    name = "qemu"
    _images: dict[str, dict[str, str]] = {}  # bin_dir -> KERNEL / INITRD / KVER (built once per process)

    @classmethod
    def problems(cls) -> list[str]:
        out = []
        if os.geteuid() != 0:
            out.append("the qemu backend needs root (network namespaces, taps, DPDK af_packet)")
        for tool, pkg in (("qemu-system-x86_64", "qemu-system-x86"), ("ip", "iproute2"), ("cpio", "cpio"),
                          ("busybox", "busybox"), ("modinfo", "kmod")):
            if shutil.which(tool) is None:
                out.append(f"'{tool}' not found (apt-get install {pkg})")
        if not Path("/dev/net/tun").exists():
            out.append("/dev/net/tun missing (QEMU's taps need it)")
        return out

    def __init__(self, prefix: str, procs) -> None:
        super().__init__(prefix, procs)
        self.lab: Lab | None = None
        self.workdir: Path | None = None
        self.seq = 0

    # --- images ---
    def _ensure_images(self, bin_dir: Path) -> dict[str, str]:
        key = str(bin_dir.resolve())
        if key not in self._images:
            print(f"      qemu: building the VM images (kmod/vm/images.sh {bin_dir}) ...", flush=True)
            p = subprocess.run([str(REPO / "kmod" / "vm" / "images.sh"), key], capture_output=True, text=True,
                               timeout=1800)
            if p.returncode != 0:
                raise LabError(f"qemu: building the VM images failed (kmod/vm/images.sh):\n{p.stderr.strip()[-2000:]}")
            self._images[key] = dict(line.split("=", 1) for line in p.stdout.split() if "=" in line)
        return self._images[key]

    # --- lifecycle ---
    def up(self, s: LabSettings) -> None:
        self.down()
        img = self._ensure_images(s.bin_dir)
        self.workdir = s.scratch / f"{self.prefix}-vms"
        shutil.rmtree(self.workdir, ignore_errors=True)
        q = s.qemu or {}
        self.lab = Lab(self.workdir, Path(img["KERNEL"]), Path(img["INITRD"]), s.bin_dir / "flexplane-emulator",
                       n=s.hosts, prefix=self.prefix, mem=f"{q.get('memory_mb', 256)}M",
                       debug=bool(q.get("kernel_debug", False)))
        t0 = time.monotonic()
        try:
            self.lab.up(boot_timeout=float(q.get("boot_timeout_s", 300)))
            print(f"      qemu: {s.hosts} VMs booted in {time.monotonic() - t0:.0f} s", flush=True)
            for g in self.lab.guests:
                g.sh(f"sysctl -qw net.ipv4.tcp_ecn={1 if s.ecn else 0} net.ipv4.tcp_congestion_control={s.cc}")
        except (GuestError, RuntimeError, subprocess.SubprocessError) as e:
            self.down()
            raise LabError(f"qemu: bringing up {s.hosts} VMs failed: {e}") from None
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        if self.lab is not None:
            self.lab.down()
            self.lab = None
        if self.prefix in list_netns():  # a Lab that failed half-way up
            kill_pids(pids_in_netns(self.prefix))
            _run(["ip", "netns", "del", self.prefix], check=False)
        remove_dpdk_runtime(self.prefix)  # the emulator's (--file-prefix), empty and left by DPDK

    # --- processes ---
    def start_emulator(self, argv: list[str], eal: list[str], log: Path) -> Proc:
        assert self.lab is not None
        dev = [f"--vdev=net_af_packet0,iface={self.lab.emu_if}", f"--file-prefix={self.prefix}"]
        # Retransmission timer for TCG guests, whose qdisc may answer tens of
        # ms late (the kmod VM tests' value; the qdisc gets the same, RTO_MS).
        argv = argv + ["--rto-us", str(RTO_MS * 1000)]
        return self.procs.start("emulator", ["ip", "netns", "exec", self.lab.ns] + argv + ["--"] + eal + dev, log)

    def start_endpoints(self, config: Path, out_dir: Path, s: LabSettings) -> list[Proc]:
        """The flexplane qdisc on every VM's eth0; returns once each has a session."""
        assert self.lab is not None
        qdisc = (f"flexplane emulator {EMULATOR_IP} endpoints {host_ip(0)} count {s.hosts} "
                 f"hold {max(1, round(s.hold_ms))}ms fallback {s.fallback} window {s.window} rto {RTO_MS}ms")
        try:
            for g in self.lab.guests:
                g.sh(f"modprobe flexplane && tc qdisc add dev eth0 root {qdisc}")
            deadline = time.monotonic() + 30
            for g in self.lab.guests:
                while (st := g.xstats()).get("state") != "managed":
                    self.procs.check_interrupt()
                    if time.monotonic() > deadline:
                        raise LabError(f"endpoint h{g.i}: the qdisc has no session with the emulator after 30 s "
                                       f"(state {st.get('state')})")
                    time.sleep(0.3)
        except GuestError as e:
            raise LabError(f"qemu: installing the flexplane qdisc failed: {e}") from None
        return []

    def stop_endpoints(self, out_dir: Path) -> None:
        """Waits (bounded) until no qdisc holds a packet or owes a verdict, then
        writes each host's counters."""
        try:
            self._write_endpoint_counters(out_dir)
        except GuestError as e:
            raise LabError(f"qemu: reading the qdiscs' counters failed: {e}") from None

    def _write_endpoint_counters(self, out_dir: Path) -> None:
        assert self.lab is not None
        stats = wait_qdiscs_drained(lambda: [g.xstats() for g in self.lab.guests])
        for g, st in zip(self.lab.guests, stats):
            write_qdisc_counters(out_dir / f"h{g.i}", st, g.netstat())

    def run_on_host(self, host: int, name: str, argv: list[str], log: Path) -> Proc:
        """Runs argv in VM `host`: programs from bin_dir are in the guest's /sbin,
        input files (cdf:PATH) are copied in, --out files are copied back."""
        assert self.lab is not None
        g = self.lab.guests[host]
        self.seq += 1
        tag = f"p{self.seq}"
        gdir = f"/tmp/fp/{tag}"
        pre: list[str] = []

        def place_input(f: Path) -> str:
            data = base64.b64encode(f.read_bytes()).decode()
            pre.append(f"mkdir -p {gdir}; echo {data} | base64 -d > {gdir}/in-{f.name}")
            return f"{gdir}/in-{f.name}"

        gargv, fetch = map_program_argv(argv, "/sbin", f"{gdir}/out", place_input)
        if fetch:
            pre.insert(0, f"mkdir -p {gdir}/out")
        try:
            for cmd in pre:
                g.sh(cmd)
            popen = GuestPopen(g, tag, " ".join(shlex.quote(x) for x in gargv), log, fetch)
        except GuestError as e:
            raise LabError(f"{name}: cannot start in VM {host}: {e}") from None
        proc = Proc(name, popen, log)  # type: ignore[arg-type]  # Popen's interface, in a guest
        self.procs.procs.append(proc)
        return proc

    @classmethod
    def cleanup(cls, prefix: str) -> list[str]:
        """Namespaces named prefix* with the QEMU processes and the emulator in
        them (the taps go with the namespace): what netns cleanup does."""
        return NetnsBackend.cleanup(prefix)
