"""The hosts backend: hosts are real machines reached over SSH, listed in an
inventory (flexlab/inventory.py; docs/lab.md, "Backend hosts"). Host i of the
experiment is the inventory's hosts[i], with the address first_host_ip + i on
its interface; the emulator runs on the machine running scripts/lab and opens
emulator.interface (DPDK af_packet), answering for emulator.ip.

Per run, on every host (one SSH ControlMaster each, flexlab/backends/ssh.py):

1. a run folder <remote_dir>/flexlab-<prefix> with a marker (lab.info); the
   .debs copied in and installed (install: deb, once per invocation); the
   endpoint checked: root, the interface and its address, `modprobe
   flexplane`, tc's q_flexplane.so, the congestion control; tcp_ecn saved
   (restored at the end) and set; flexplane-workload copied in;
2. `tc qdisc add dev IF root flexplane emulator E endpoints H0 count N hold
   H fallback F window W rto R bypass <management ports>` (the folder
   records it: `qdisc`), then waits for state `managed`;
3. the workload's programs run from the run folder: `ssh host 'echo $$ >
   pid; exec PROGRAM ...'`, their output streamed into the local logs,
   `cdf:` files copied in, --out files copied back when they exit, signals
   sent with `kill`;
4. the qdiscs' counters (tc -s -j) and /proc/net/netstat, snmp, snmp6 become
   endpoints/h<i>/ as on the qemu backend (qemu._endpoint_counters);
5. teardown (down(), on every exit path): the programs still running are
   killed (by the pids in the folder, checked against their command line),
   the qdisc is deleted (only a flexplane root qdisc this run added),
   tcp_ecn restored, the run folder removed, the ControlMaster closed.
   `lab cleanup --inventory FILE` does the same for the folders of a killed
   runner (by prefix).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from flexlab.backends.base import Backend, LabSettings, map_program_argv, remove_dpdk_runtime
from flexlab.backends.qemu import wait_qdiscs_drained, write_qdisc_counters
from flexlab.backends.ssh import Ssh, start_remote
from flexlab.errors import LabError
from flexlab.inventory import Inventory
from flexlab.procs import Proc, kill_pids
from vmlab import parse_netstat

# Finds the real tc and ip (busybox sh runs its own applets before PATH; a
# non-root login may lack /usr/sbin in PATH).
_FIND = ('for t in tc ip; do f=; for d in /usr/sbin /sbin /usr/bin /bin; do '
         '[ -x $d/$t ] && [ ! -L $d/$t ] && { f=$d/$t; break; }; done; echo "$t=$f"; done')

# Removes run folders named by the glob $1 (their programs, qdisc, sysctl):
# teardown (one folder) and `lab cleanup` (by prefix). Prints each folder.
CLEANUP = r'''
for d in $1; do
  [ -f "$d/lab.info" ] || continue
  for sig in TERM KILL; do
    for p in "$d"/*/pid; do
      [ -f "$p" ] || continue; pid=$(cat "$p")
      tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -qF "$d/" && kill -$sig $pid 2>/dev/null
    done
    [ $sig = TERM ] && sleep 0.3
  done
  if [ -f "$d/qdisc" ]; then
    read -r dev tc < "$d/qdisc"
    $tc qdisc show dev "$dev" root 2>/dev/null | grep -q "qdisc flexplane" && $tc qdisc del dev "$dev" root
  fi
  [ -f "$d/tcp_ecn" ] && cat "$d/tcp_ecn" > /proc/sys/net/ipv4/tcp_ecn
  [ -f "$d/dpdk_prefix" ] && rm -rf "/var/run/dpdk/$(cat "$d/dpdk_prefix")"
  rm -rf "$d"
  echo "$d"
done
'''


class HostsBackend(Backend):
    name = "hosts"
    _installed: set[tuple[str, int]] = set()  # (address, port) where the .debs went in (once per process)

    @classmethod
    def problems(cls) -> list[str]:
        out = []
        if os.geteuid() != 0:
            out.append("the hosts backend needs root here (the emulator's DPDK af_packet)")
        if shutil.which("ssh") is None:
            out.append("'ssh' not found (apt-get install openssh-client)")
        return out

    def __init__(self, prefix: str, procs) -> None:
        super().__init__(prefix, procs)
        self.inv: Inventory | None = None
        self.ssh: list[Ssh] = []
        self.emu_ssh: Ssh | None = None  # the emulator's machine, when it is not this one
        self.mine: list[tuple[Ssh, str]] = []  # run folders this run created (only those are torn down)
        self.tools: list[dict[str, str]] = []
        self.n = 0
        self.emu_cpus = 1
        self.seq = 0

    @property
    def rdir(self) -> str:
        assert self.inv is not None
        return f"{self.inv.remote_dir}/flexlab-{self.prefix}"

    @property
    def edir(self) -> str:
        """The run folder on a remote emulator machine (it may be a host too)."""
        return f"{self.rdir}-emu"

    # --- lifecycle ---
    def up(self, s: LabSettings) -> None:
        if s.inventory is None:
            raise LabError("hosts: no inventory (--inventory FILE)")
        self.inv, self.n = s.inventory, s.hosts
        cdir = s.scratch / f"{self.prefix}-ssh"
        cdir.mkdir(parents=True, exist_ok=True)
        self.ssh = [Ssh(h, self.inv, cdir) for h in self.inv.hosts[:s.hosts]]
        if self.inv.emulator_machine is not None:
            self.emu_ssh = Ssh(self.inv.emulator_machine, self.inv, cdir)
        every = self.ssh + ([self.emu_ssh] if self.emu_ssh else [])
        try:
            for c in every:
                c.connect()
            for c in every:
                c.wait_connected()
            if self.emu_ssh is not None:
                self._prepare_emulator(self.emu_ssh, s)
            self.tools = [self._prepare(i, c, s) for i, c in enumerate(self.ssh)]
        except BaseException:
            self.down()
            raise

    def _prepare(self, i: int, c: Ssh, s: LabSettings) -> dict[str, str]:
        assert self.inv is not None
        d, h, ip = self.rdir, c.host, self.inv.host_ip(i)
        if c.text("id -u", what="checking the user").strip() != "0":
            raise LabError(f"hosts: {h.label}: commands do not run as root (user {h.user} needs sudo without a password)")
        left = c.text(f"[ -e {d} ] && echo left || true").strip()
        if left:
            raise LabError(f"hosts: {h.label}: {d} exists (another run with prefix {self.prefix}, or a killed one: "
                           f"scripts/lab cleanup --prefix {self.prefix} --inventory {self.inv.path})")
        self.mine.append((c, d))
        c.run(f"mkdir -p {d} && echo 'flexplane lab run {self.prefix} from {os.uname().nodename}' > {d}/lab.info",
              what="creating the run folder")
        if self.inv.install == "deb" and (h.address, h.port) not in self._installed:
            self._install(c)
        tools = dict(line.split("=", 1) for line in c.text(_FIND, what="finding tc and ip").split())
        for t in ("tc", "ip"):
            if not tools.get(t):
                raise LabError(f"hosts: {h.label}: no '{t}' program (apt-get install iproute2)")
        ipt = tools["ip"]
        addrs = c.run(f"{ipt} -o -4 addr show dev {h.interface}", check=False, what="reading the addresses")
        if addrs.returncode != 0:
            raise LabError(f"hosts: {h.label}: interface '{h.interface}' (hosts[{i}].interface): "
                           f"{addrs.stderr.decode(errors='replace').strip()}")
        if f" {ip}/" not in addrs.stdout.decode():
            have = [w for line in addrs.stdout.decode().splitlines() for w in line.split()[3:4]]
            raise LabError(f"hosts: {h.label}: {h.interface} does not have the address {ip} (host {i} = "
                           f"first_host_ip + {i}); it has: {', '.join(have) or 'none'}")
        c.run("modprobe flexplane", what="loading the flexplane module (modprobe flexplane; install the "
              "flexplane-dkms package, docs/deploy.md)")
        root = c.text(f"{tools['tc']} qdisc show dev {h.interface} root", what="reading the root qdisc")
        if "qdisc flexplane" in root:
            raise LabError(f"hosts: {h.label}: {h.interface} already has a flexplane qdisc (another run? "
                           f"scripts/lab cleanup --prefix P --inventory {self.inv.path})")
        cc = s.cc
        avail = c.text(f"modprobe tcp_{cc} 2>/dev/null; cat /proc/sys/net/ipv4/tcp_available_congestion_control")
        if cc not in avail.split():
            raise LabError(f"hosts: {h.label}: transport.cc '{cc}' is not available (it has {avail.strip()})")
        c.run(f"cat /proc/sys/net/ipv4/tcp_ecn > {d}/tcp_ecn && echo {1 if s.ecn else 0} > /proc/sys/net/ipv4/tcp_ecn",
              what="setting net.ipv4.tcp_ecn")
        prog = s.bin_dir / "flexplane-workload"
        c.put(prog.read_bytes(), f"{d}/flexplane-workload", "755")
        return tools

    def _prepare_emulator(self, c: Ssh, s: LabSettings) -> None:
        """The remote emulator's machine: root, its run folder (with the
        DPDK prefix to remove at the end), the interface, the program."""
        assert self.inv is not None
        d, h, inv = self.edir, c.host, self.inv
        if c.text("id -u", what="checking the user").strip() != "0":
            raise LabError(f"hosts: {h.label}: commands do not run as root (user {h.user} needs sudo without a password)")
        if c.text(f"[ -e {d} ] && echo left || true").strip():
            raise LabError(f"hosts: {h.label}: {d} exists (another run with prefix {self.prefix}, or a killed one: "
                           f"scripts/lab cleanup --prefix {self.prefix} --inventory {inv.path})")
        self.mine.append((c, d))
        c.run(f"mkdir -p {d} && echo 'flexplane lab run {self.prefix} from {os.uname().nodename}: emulator' > "
              f"{d}/lab.info && echo {self.prefix} > {d}/dpdk_prefix", what="creating the run folder")
        p = c.run(f"[ -e /sys/class/net/{inv.emulator_interface} ]", check=False)
        if p.returncode != 0:
            raise LabError(f"hosts: {h.label}: no interface '{inv.emulator_interface}' (emulator.interface)")
        if inv.emulator_bin:
            if c.run(f"[ -x {inv.emulator_bin} ]", check=False).returncode != 0:
                raise LabError(f"hosts: {h.label}: {inv.emulator_bin} (emulator.bin): not an executable file")
        else:
            c.put((s.bin_dir / "flexplane-emulator").read_bytes(), f"{d}/flexplane-emulator", "755")
            missing = c.text(f"ldd {d}/flexplane-emulator 2>&1 | grep 'not found' || true").strip()
            if missing:
                raise LabError(f"hosts: {h.label}: the emulator from --bin-dir lacks libraries there (install "
                               f"DPDK's, or set emulator.bin): {' '.join(missing.split())}")
        self.emu_cpus = int(c.text("nproc").strip() or 1)

    def _install(self, c: Ssh) -> None:
        """Copies the inventory's .debs in and installs them (apt-get, which
        also pulls their dependencies: dkms builds the module)."""
        assert self.inv is not None
        d = self.rdir
        for deb in self.inv.debs:
            c.put(deb.read_bytes(), f"{d}/{deb.name}")
        names = " ".join(f"./{shlex.quote(deb.name)}" for deb in self.inv.debs)
        c.run(f"cd {d} && DEBIAN_FRONTEND=noninteractive apt-get install -y {names}", timeout=1200,
              what="installing the endpoint packages (apt-get install)")
        self._installed.add((c.host.address, c.host.port))

    def down(self) -> None:
        """Every host's run folder (programs, qdisc, tcp_ecn, files) and SSH
        connection, then the remote emulator's; each step bounded, each
        machine attempted whatever the others did."""
        for c, d in self.mine:
            try:
                c.run(f"sh -c {shlex.quote(CLEANUP)} cleanup {shlex.quote(d)}", timeout=60, check=False,
                      what="tearing down")
            except LabError:
                pass
        for c in self.ssh + ([self.emu_ssh] if self.emu_ssh else []):
            try:
                c.close()
            except Exception:  # noqa: BLE001 - teardown goes on
                pass
        self.ssh, self.emu_ssh, self.mine = [], None, []
        remove_dpdk_runtime(self.prefix)

    # --- processes ---
    def addresses(self, s: LabSettings) -> tuple[str, list[str]]:
        assert s.inventory is not None
        return s.inventory.emulator_ip, [s.inventory.host_ip(i) for i in range(s.hosts)]

    def start_emulator(self, argv: list[str], eal: list[str], log: Path) -> Proc:
        assert self.inv is not None
        dev = [f"--vdev=net_af_packet0,iface={self.inv.emulator_interface}", f"--file-prefix={self.prefix}"]
        argv = argv + ["--rto-us", str(self.inv.rto_us)]
        if self.emu_ssh is None:
            return self.procs.start("emulator", argv + ["--"] + eal + dev, log)
        return self._start_remote_emulator(argv, eal, dev, log)

    def _start_remote_emulator(self, argv: list[str], eal: list[str], dev: list[str], log: Path) -> Proc:
        """The emulator over SSH: its config (and the files it names:
        topology file, cdf) copied in, its --out folder copied back when it
        exits, the runner's default --lcores widened to that machine's CPUs."""
        assert self.inv is not None and self.emu_ssh is not None
        c, d = self.emu_ssh, self.edir
        cfg_path = Path(argv[2])
        cfg = yaml.safe_load(cfg_path.read_text())
        for sect, key in (("topology", "file"), ("workload", "size_cdf")):
            local = (cfg.get(sect) or {}).get(key)
            if isinstance(local, str) and Path(local).is_file():
                remote = f"{d}/in-{sect}-{Path(local).name}"
                c.put(Path(local).read_bytes(), remote)
                cfg[sect][key] = remote
        c.put(yaml.safe_dump(cfg, sort_keys=False).encode(), f"{d}/emulator.yaml")
        out = Path(argv[argv.index("--out") + 1])
        rargv = [self.inv.emulator_bin or f"{d}/flexplane-emulator", argv[1], f"{d}/emulator.yaml"] + argv[3:]
        rargv[rargv.index("--out") + 1] = f"{d}/out"
        cpus = os.cpu_count() or 1
        mine = f"--lcores=0@(0-{cpus - 1}),1@(0-{cpus - 1})" if cpus > 1 else "--lcores=0@(0),1@(0)"
        n = self.emu_cpus
        eal = [(f"--lcores=0@(0-{n - 1}),1@(0-{n - 1})" if n > 1 else "--lcores=0@(0),1@(0)") if a == mine else a
               for a in eal]
        return start_remote(self.procs, c, "emulator", f"{d}/p0", rargv + ["--"] + eal + dev, log, [(f"{d}/out", out)])

    def realtime_engine(self, emu: Proc, priority: int) -> list[int] | None:
        """A remote emulator's engine threads under SCHED_FIFO (chrt there,
        the same threads as the runner's _realtime_engine picks here)."""
        if self.emu_ssh is None:
            return None
        if priority <= 0:
            return []
        from flexlab.runner import _NOT_ENGINE
        skip = "|".join(f"{n}*" for n in _NOT_ENGINE)
        pid = f"$(cat {self.edir}/p0/pid)"
        out = self.emu_ssh.text(f"for t in /proc/{pid}/task/*; do case $(cat $t/comm) in {skip}) continue;; esac; "
                                f"chrt -f -p {int(priority)} ${{t##*/}} > /dev/null && echo ${{t##*/}}; done",
                                what="putting the emulator's engine under SCHED_FIFO (chrt)")
        return [int(x) for x in out.split()]

    def _qdisc(self) -> list[dict]:
        return [self._stats(i) for i in range(len(self.ssh))]

    def _stats(self, i: int) -> dict:
        c = self.ssh[i]
        out = c.text(f"{self.tools[i]['tc']} -s -j qdisc show dev {c.host.interface} root", what="reading the qdisc")
        for q in json.loads(out or "[]"):
            if q.get("kind") == "flexplane":
                return q
        raise LabError(f"hosts: {c.host.label}: no flexplane qdisc on {c.host.interface}")

    def start_endpoints(self, config: Path, out_dir: Path, s: LabSettings) -> list[Proc]:
        assert self.inv is not None
        inv = self.inv
        ports = ",".join(map(str, inv.management_ports))
        opts = (f"flexplane emulator {inv.emulator_ip} endpoints {inv.host_ip(0)} count {s.hosts} "
                f"hold {max(1, round(s.hold_ms))}ms fallback {s.fallback} window {s.window} "
                f"rto {inv.rto_us}us" + (f" bypass {ports}" if ports else ""))
        for i, c in enumerate(self.ssh):
            tc, dev = self.tools[i]["tc"], c.host.interface
            p = c.run(f"echo {dev} {tc} > {self.rdir}/qdisc && {tc} qdisc add dev {dev} root {opts}", check=False,
                      what="attaching the qdisc")
            if p.returncode != 0:
                err = (p.stderr or p.stdout).decode(errors="replace").strip()
                hint = (" (tc has no q_flexplane.so: install the flexplane-tc package, docs/deploy.md)"
                        if "Unknown qdisc" in err or "unparsable" in err else "")
                raise LabError(f"hosts: {c.host.label}: tc qdisc add dev {dev} root {opts}: {err}{hint}")
        deadline = time.monotonic() + 30
        for i, c in enumerate(self.ssh):
            while (st := self._stats(i)).get("state") != "managed":
                self.procs.check_interrupt()
                if time.monotonic() > deadline:
                    raise LabError(f"endpoint h{i} ({c.host.label}): the qdisc has no session with the emulator "
                                   f"at {inv.emulator_ip} after 30 s (state {st.get('state')})")
                time.sleep(0.3)
        return []

    def stop_endpoints(self, out_dir: Path) -> None:
        """Waits (bounded) until no qdisc holds a packet or owes a verdict,
        then writes each host's counters as the qemu backend does."""
        stats = wait_qdiscs_drained(self._qdisc)
        for i, (c, st) in enumerate(zip(self.ssh, stats)):
            net = parse_netstat(c.text("cat /proc/net/netstat /proc/net/snmp /proc/net/snmp6 2>/dev/null; true"))
            write_qdisc_counters(out_dir / f"h{i}", st, net)

    def run_on_host(self, host: int, name: str, argv: list[str], log: Path) -> Proc:
        """argv on host `host`, from its own folder in the run folder:
        programs from bin_dir are the copies in the run folder, cdf: files
        are copied in, --out files back when the program ends."""
        c = self.ssh[host]
        self.seq += 1
        pdir = f"{self.rdir}/p{self.seq}"
        c.run(f"mkdir -p {pdir}/out", what="creating a program folder")

        def place_input(f: Path) -> str:
            c.put(f.read_bytes(), f"{pdir}/in-{f.name}")
            return f"{pdir}/in-{f.name}"

        rargv, fetch = map_program_argv(argv, self.rdir, f"{pdir}/out", place_input)
        return start_remote(self.procs, c, name, pdir, rargv, log, fetch)

    @classmethod
    def cleanup(cls, prefix: str) -> list[str]:
        """Local leftovers of a killed run: its SSH ControlMasters (their
        sockets are in the run's scratch folder, which netns cleanup removes)."""
        mine = []
        root = Path(tempfile.gettempdir())
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd and cmd[0].endswith(b"ssh") and any(
                    x.startswith(f"ControlPath={root}/flexlab-{prefix}".encode()) for x in cmd):
                mine.append(int(pid))
        kill_pids(mine)
        return [f"ssh process {p}" for p in mine]

    @classmethod
    def probe(cls, inv: Inventory, n: int) -> list[str]:
        """`lab check --inventory`: each of the first n hosts is reachable,
        runs commands as root, has its interface with its address, the
        module (modinfo) and tc's plugin; changes nothing. LabError naming
        the first host that fails."""
        out = []
        for i, h in enumerate(inv.hosts[:n]):
            c, ip = Ssh(h, inv, None), inv.host_ip(i)
            script = (f"{_FIND}; echo uid=$(id -u); echo mod=$(modinfo -F vermagic flexplane 2>/dev/null | cut -d' ' -f1); "
                      f"ls /usr/lib/*/tc/q_flexplane.so /usr/lib/tc/q_flexplane.so 2>/dev/null | sed 's/^/so=/'")
            kv = {}
            for line in c.text(script, timeout=inv.connect_timeout_s + 30, what="checking the host").splitlines():
                k, _, v = line.partition("=")
                kv.setdefault(k, v)
            if kv.get("uid") != "0":
                raise LabError(f"hosts: {h.label}: commands do not run as root (user {h.user} needs sudo "
                               "without a password)")
            if not kv.get("ip") or not kv.get("tc"):
                raise LabError(f"hosts: {h.label}: no 'ip' or 'tc' program (apt-get install iproute2)")
            a = c.run(f"{kv['ip']} -o -4 addr show dev {h.interface}", check=False, what="reading the addresses")
            if a.returncode != 0 or f" {ip}/" not in a.stdout.decode():
                raise LabError(f"hosts: {h.label}: interface {h.interface} (hosts[{i}].interface) does not have "
                               f"the address {ip} (first_host_ip + {i}) "
                               f"{a.stderr.decode(errors='replace').strip()}".rstrip())
            if inv.install == "check":
                if not kv.get("mod"):
                    raise LabError(f"hosts: {h.label}: no flexplane module (modinfo flexplane): install the "
                                   "flexplane-dkms package (docs/deploy.md) or set install: deb")
                if not kv.get("so"):
                    raise LabError(f"hosts: {h.label}: no q_flexplane.so where tc looks (/usr/lib/*/tc): install "
                                   "the flexplane-tc package (docs/deploy.md) or set install: deb")
            out.append(f"{h.label}: reachable, root, {h.interface} has {ip}" +
                       (f", module {kv['mod']}, {kv['so']}" if kv.get("mod") and kv.get("so") else
                        ", packages to be installed (install: deb)"))
        if inv.emulator_machine is not None:
            c, dev = Ssh(inv.emulator_machine, inv, None), inv.emulator_interface
            kv = dict(line.partition("=")[::2] for line in c.text(
                f"echo uid=$(id -u); [ -e /sys/class/net/{dev} ] && echo dev=yes; "
                f"[ -x '{inv.emulator_bin}' ] && echo bin=yes; true", timeout=inv.connect_timeout_s + 30,
                what="checking the emulator's machine").splitlines())
            if kv.get("uid") != "0":
                raise LabError(f"hosts: {c.host.label}: commands do not run as root (sudo without a password)")
            if not kv.get("dev"):
                raise LabError(f"hosts: {c.host.label}: no interface '{dev}' (emulator.interface)")
            if inv.emulator_bin and not kv.get("bin"):
                raise LabError(f"hosts: {c.host.label}: {inv.emulator_bin} (emulator.bin): not an executable file")
            out.append(f"{c.host.label}: reachable, root, has {dev} (the emulator's machine)")
        return out

    @classmethod
    def cleanup_remote(cls, prefix: str, inv: Inventory) -> list[str]:
        """`lab cleanup --inventory`: every host's run folders of this prefix
        (programs, qdisc, tcp_ecn, files); unreachable hosts are reported."""
        removed = []
        for h in inv.hosts + ([inv.emulator_machine] if inv.emulator_machine else []):
            c = Ssh(h, inv, None)
            try:
                pattern = shlex.quote(f"{inv.remote_dir}/flexlab-{prefix}*")
                p = c.run(f"sh -c {shlex.quote(CLEANUP)} cleanup {pattern}",
                          timeout=60, what="cleaning up")
                removed += [f"{h.label}: {line}" for line in p.stdout.decode(errors="replace").split()]
            except LabError as e:
                removed.append(f"{h.label}: NOT cleaned: {e}")
        return removed
