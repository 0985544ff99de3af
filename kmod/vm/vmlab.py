"""A lab of QEMU/TCG endpoint VMs for the flexplane kernel module.

    netns <prefix>            the lab; nothing in it reaches outside
      br0                     a Linux bridge (pure L2)
      <prefix>t<i>            tap of VM i (QEMU -netdev tap), on br0
      <prefix>e / <prefix>b   veth pair: <prefix>e carries no address and is
                              opened by the emulator (DPDK af_packet), its
                              peer <prefix>b sits on br0

VM i boots Debian's kernel with initramfs.cpio.gz (build_initramfs.sh),
gets 10.77.0.(10+i)/24 and fd77::(10+i)/64 on eth0, and is driven through a
virtio serial port (guest/agent.sh): Guest.sh() runs a shell command there.
The emulator (flexplane-emulator live) plays 10.77.0.2 on <prefix>e.

With Lab(ssh_pubkey=...) the VMs also run an SSH server (dropbear, root
login with that key only: guest/init) and br0 gets the management address
MGMT_IP, so `ip netns exec <prefix> ssh root@10.77.0.(10+i)` reaches VM i:
the lab's hosts backend drives such VMs exactly as it drives real servers
(docs/lab.md, "Backend hosts").

Everything started is recorded in <workdir>/lab.pids and torn down by
Lab.down() (also after failures; kill_leftovers() for a crashed harness).
"""
from __future__ import annotations

import base64
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

EMULATOR_IP = "10.77.0.2"
MGMT_IP = "10.77.0.3"  # br0's address when the VMs run SSH (the runner's side)
FIRST_IP = 10
KERNEL_DEBUG = ("slub_debug=FZPU page_poison=1 init_on_alloc=1 init_on_free=1 "
                "softlockup_panic=0 hung_task_panic=0")


def run(cmd: list[str], check: bool = True, timeout: float = 30, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p


def vm_ip(i: int) -> str:
    return f"10.77.0.{FIRST_IP + i}"


def vm_ip6(i: int) -> str:
    return f"fd77::{FIRST_IP + i}"


class GuestError(RuntimeError):
    pass


def parse_netstat(text: str) -> dict[str, int]:
    """/proc/net/netstat and snmp (header line + value line per group:
    "TcpExt.TCPLostRetransmit") and snmp6 (name value lines) as one dict."""
    vals: dict[str, int] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        a = lines[i].split()
        if a and a[0].endswith(":") and i + 1 < len(lines):
            b = lines[i + 1].split()
            if b and b[0] == a[0] and all(x.lstrip("-").isdigit() for x in b[1:]):
                vals.update({f"{a[0][:-1]}.{k}": int(v) for k, v in zip(a[1:], b[1:])})
                i += 2
                continue
        if len(a) == 2 and a[1].lstrip("-").isdigit():
            vals[a[0]] = int(a[1])
        i += 1
    return vals


class Guest:
    """One VM: its QEMU process and its command channel."""

    def __init__(self, lab: "Lab", index: int):
        self.lab, self.i = lab, index
        self.name = f"vm{index}"
        self.ip, self.ip6 = vm_ip(index), vm_ip6(index)
        self.mac = f"52:54:00:77:00:{FIRST_IP + index:02x}"
        self.tap = f"{lab.prefix}t{index}"
        self.ctl_path = lab.dir / f"{self.name}.ctl"
        self.console = lab.dir / f"{self.name}.console"
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.buf = b""
        self.seq = 0

    def start(self) -> None:
        debug = KERNEL_DEBUG if self.lab.debug else ""
        append = (f"console=ttyS0 panic=-1 quiet loglevel=4 {debug} "
                  f"fp.name={self.name} fp.ip={self.ip}/24 fp.ip6={self.ip6}/64")
        if self.lab.ssh_pubkey:
            key = base64.b64encode(self.lab.ssh_pubkey.strip().encode()).decode()
            append += f" fp.ssh=1 fp.sshkey={key}"
        argv = ["ip", "netns", "exec", self.lab.ns, "qemu-system-x86_64", "-accel", "tcg", "-m", self.lab.mem,
                "-smp", "1", "-kernel", str(self.lab.kernel), "-initrd", str(self.lab.initrd),
                "-append", append, "-display", "none", "-monitor", "none",
                "-serial", f"file:{self.console}", "-no-reboot", "-nodefaults",
                "-netdev", f"tap,id=n0,ifname={self.tap},script=no,downscript=no",
                "-device", f"virtio-net-pci,netdev=n0,mac={self.mac}",
                "-device", "virtio-serial-pci",
                "-chardev", f"socket,id=ctl,path={self.ctl_path},server=on,wait=off",
                "-device", "virtserialport,chardev=ctl,name=fp.ctl"]
        log = open(self.lab.dir / f"{self.name}.qemu.log", "w")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.lab.record_pid(self.proc.pid)

    def connect(self, timeout: float) -> None:
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise GuestError(f"{self.name}: QEMU exited ({self.proc.returncode}): {self.tail()}")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(str(self.ctl_path))
                self.sock = s
                break
            except OSError:
                s.close()
                if time.time() > deadline:
                    raise GuestError(f"{self.name}: no control socket after {timeout} s")
                time.sleep(0.1)
        line = self._readline(max(1.0, deadline - time.time()))
        if not line.startswith("READY"):
            raise GuestError(f"{self.name}: unexpected greeting {line!r}")

    def _readline(self, timeout: float) -> str:
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise GuestError(f"{self.name}: no answer within {timeout:.0f} s; console: {self.tail()}")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                raise GuestError(f"{self.name}: control channel closed; console: {self.tail()}")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def sh(self, cmd: str, timeout: float = 30, check: bool = True) -> str:
        """Runs cmd (one line of busybox sh) in the VM; returns its output."""
        assert "\n" not in cmd
        self.seq += 1
        tag = f"c{self.seq}x{os.getpid()}"
        self.sock.sendall(f"{tag}\t{cmd}\n".encode())
        out, begun = [], False
        while True:
            line = self._readline(timeout)
            if line == f"BEGIN {tag}":
                begun = True
            elif line.startswith(f"END {tag} ") and begun:
                rc = int(line.split()[-1])
                text = "\n".join(out)
                if check and rc != 0:
                    raise GuestError(f"{self.name}: `{cmd}` exited {rc}:\n{text}")
                return text
            elif begun:
                out.append(line)

    def xstats(self, dev: str = "eth0") -> dict:
        """The flexplane qdisc's statistics (tc -s -j, via q_flexplane.so)."""
        out = json.loads(self.sh(f"tc -s -j qdisc show dev {dev}"))
        for q in out:
            if q.get("kind") == "flexplane":
                return q
        raise GuestError(f"{self.name}: no flexplane qdisc on {dev}: {out}")

    def netstat(self) -> dict[str, int]:
        """Counters of /proc/net/netstat and /proc/net/snmp ("TcpExt.TCPLostRetransmit",
        "IpExt.InCEPkts", "Tcp.RetransSegs") and /proc/net/snmp6 ("Ip6InCEPkts")."""
        return parse_netstat(self.sh("cat /proc/net/netstat /proc/net/snmp /proc/net/snmp6"))

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.console.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout: float = 20) -> None:
        if self.sock:
            try:
                self.sock.sendall(b"x\t__exit\n")
            except OSError:
                pass
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.sock:
            self.sock.close()
            self.sock = None


class Emulator:
    """flexplane-emulator live in the lab's namespace, DPDK af_packet on <prefix>e."""

    def __init__(self, lab: "Lab", binary: Path):
        self.lab, self.bin = lab, binary
        self.proc: subprocess.Popen | None = None
        self.runs = 0
        self.ready_s: list[float] = []  # start to "listening on", per run
        self.out: Path | None = None
        self.log: Path | None = None
        self.config: Path | None = None

    def start(self, name: str, config_text: str, args: list[str] | None = None, ready_timeout: float = 60) -> Path:
        self.runs += 1
        self.config = self.lab.dir / f"{name}.yaml"
        self.config.write_text(config_text)
        self.out = self.lab.dir / name
        self.log = self.lab.dir / f"{name}.emulator.log"
        argv = ["ip", "netns", "exec", self.lab.ns, str(self.bin), "live", str(self.config), "--out", str(self.out),
                "--duration-s", "600", "--record", "-q"] + list(args or []) + [
                "--", "--lcores=0@(0-1),1@(0-1)", "--no-huge", "-m", "512", "--no-pci", "--no-shconf",
                f"--file-prefix={self.lab.prefix}{self.runs}", f"--vdev=net_af_packet0,iface={self.lab.emu_if}"]
        self.proc = subprocess.Popen(argv, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.lab.record_pid(self.proc.pid)
        t0 = time.time()
        deadline = t0 + ready_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"emulator exited ({self.proc.returncode}):\n{self.log.read_text()}")
            if "listening on" in self.log.read_text():
                self.ready_s.append(round(time.time() - t0, 1))
                return self.out
            time.sleep(0.05)
        raise RuntimeError(f"emulator not ready after {ready_timeout} s:\n{self.log.read_text()}")

    def stop(self, timeout: float = 60) -> None:
        """SIGINT: drains, writes its outputs, exits 0."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
                raise RuntimeError(f"emulator ignored SIGINT for {timeout} s:\n{self.log.read_text()}")
            self.remove_eal_dir()
            if rc != 0:
                raise RuntimeError(f"emulator exited {rc}:\n{self.log.read_text()}")
        self.remove_eal_dir()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: the emulator dies with its sessions and its engine."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.remove_eal_dir()
        self.proc = None

    def remove_eal_dir(self) -> None:
        """DPDK's EAL leaves a runtime folder per --file-prefix (with
        --no-shconf), at times with a telemetry socket in it; the emulator has
        exited, so remove it (the prefix is this lab run's alone)."""
        if self.runs == 0:
            return
        shutil.rmtree(Path("/var/run/dpdk") / f"{self.lab.prefix}{self.runs}", ignore_errors=True)

    def replay(self, out: Path) -> Path:
        run([str(self.bin), "replay", str(self.config), "--arrivals", str(self.out / "arrivals.csv"),
             "--out", str(out)], timeout=300)
        return out


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Lab:
    def __init__(self, workdir: Path, kernel: Path, initrd: Path, emulator_bin: Path, n: int = 3,
                 prefix: str | None = None, mem: str = "512M", debug: bool = True,
                 ssh_pubkey: str | None = None):
        """mem: each VM's memory; debug: boot with the kernel's memory-debugging
        options (KERNEL_DEBUG; the lab's qemu backend runs without, for speed);
        ssh_pubkey: an authorized_keys line: the VMs run dropbear (root, that
        key only) and br0 gets MGMT_IP/24, the runner's side."""
        self.ssh_pubkey = ssh_pubkey
        self.dir = Path(workdir)
        self.mem, self.debug = mem, debug
        self.dir.mkdir(parents=True, exist_ok=True)
        self.kernel, self.initrd = kernel, initrd
        if ssh_pubkey:  # the image with the SSH overlay appended (build_initramfs.sh: concatenated cpio archives)
            overlay = initrd.with_name(initrd.name.replace(".cpio.gz", ".ssh.cpio.gz"))
            if not overlay.is_file():
                raise GuestError(f"{overlay}: no SSH overlay beside {initrd} (rebuild it: kmod/vm/images.sh)")
            self.initrd = self.dir / "initramfs-ssh.cpio.gz"
            self.initrd.write_bytes(initrd.read_bytes() + overlay.read_bytes())
        self.prefix = prefix or f"fpk{os.getpid() % 100000}"
        self.ns = self.prefix
        self.emu_if, self.br_if = f"{self.prefix}e", f"{self.prefix}b"
        self.guests = [Guest(self, i) for i in range(n)]
        self.emulator = Emulator(self, emulator_bin)
        self.pids_file = self.dir / "lab.pids"

    def record_pid(self, pid: int) -> None:
        with open(self.pids_file, "a") as f:
            f.write(f"{pid}\n")

    def up(self, boot_timeout: float = 240) -> "Lab":
        kill_leftovers(self.dir, self.prefix)
        run(["ip", "netns", "add", self.ns])
        with open(self.dir / "lab.netns", "w") as f:
            f.write(self.ns + "\n")
        ns = ["ip", "-n", self.ns]
        run(ns + ["link", "set", "lo", "up"])
        run(["ip", "netns", "exec", self.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
        run(ns + ["link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        for fam in ("iptables", "ip6tables", "arptables"):  # pure L2, even with br_netfilter loaded
            run(["ip", "netns", "exec", self.ns, "sysctl", "-qw", f"net.bridge.bridge-nf-call-{fam}=0"], check=False)
        run(ns + ["link", "set", "br0", "up"])
        if self.ssh_pubkey:
            run(ns + ["addr", "add", f"{MGMT_IP}/24", "dev", "br0"])
        run(ns + ["link", "add", self.emu_if, "type", "veth", "peer", "name", self.br_if])
        run(ns + ["link", "set", self.br_if, "master", "br0"])
        for dev in (self.br_if, self.emu_if):
            run(ns + ["link", "set", dev, "up"])
        for g in self.guests:
            g.start()
        for g in self.guests:
            deadline = time.time() + 30
            while run(ns + ["link", "show", g.tap], check=False).returncode != 0:
                if g.proc.poll() is not None or time.time() > deadline:
                    raise GuestError(f"{g.name}: tap {g.tap} never appeared: {g.tail()}")
                time.sleep(0.05)
            run(ns + ["link", "set", g.tap, "master", "br0"])
            run(ns + ["link", "set", g.tap, "up"])
        for g in self.guests:
            g.connect(boot_timeout)
        return self

    def down(self) -> None:
        try:
            self.emulator.kill()
        finally:
            for g in self.guests:
                try:
                    g.stop()
                except Exception:  # noqa: BLE001 - teardown goes on
                    pass
            kill_leftovers(self.dir, self.prefix)

    def __enter__(self) -> "Lab":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()


def kill_leftovers(workdir: Path, prefix: str) -> None:
    """Kills what a lab in workdir started (pids it recorded) and deletes its namespace."""
    pids = Path(workdir) / "lab.pids"
    if pids.exists():
        for line in pids.read_text().split():
            try:
                os.killpg(int(line), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError):
                pass
        pids.unlink()
    if prefix in run(["ip", "netns", "list"], check=False).stdout.split():
        run(["ip", "netns", "del", prefix], check=False)
