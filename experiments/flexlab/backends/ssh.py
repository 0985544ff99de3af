"""SSH for the hosts backend: the system OpenSSH client, one ControlMaster
per host (its socket in the run's scratch folder), BatchMode (never a
prompt), ConnectTimeout (an unreachable host is an error, never a hang), the
inventory's own known_hosts with StrictHostKeyChecking=accept-new (or yes).
Files move as `ssh host 'cat > PATH'` / `ssh host cat PATH` (any SSH server,
dropbear included). Commands run as root: `sudo -n` for another user."""
from __future__ import annotations

import shlex
import signal
import subprocess
import time
from pathlib import Path

from flexlab.errors import LabError
from flexlab.inventory import Inventory, SshHost
from flexlab.procs import Proc, Processes, _child_setup


class Ssh:
    """Commands on one machine. connect() starts the ControlMaster; without
    it (lab cleanup) every command opens its own connection."""

    def __init__(self, host: SshHost, inv: Inventory, control_dir: Path | None) -> None:
        self.host, self.inv = host, inv
        self.sock = control_dir / f"{host.name}.sock" if control_dir else None
        self.master: subprocess.Popen | None = None
        self.master_log = control_dir / f"{host.name}.ssh.log" if control_dir else None

    def argv(self, extra: list[str] | None = None) -> list[str]:
        h, inv = self.host, self.inv
        o = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={inv.connect_timeout_s}",
             "-o", f"UserKnownHostsFile={inv.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
             "-o", f"StrictHostKeyChecking={'yes' if inv.strict_host_keys else 'accept-new'}",
             "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "IdentitiesOnly=yes",
             "-o", "LogLevel=ERROR", "-i", str(h.key), "-p", str(h.port), "-l", h.user]
        if self.sock is not None:
            o += ["-o", f"ControlPath={self.sock}", "-o", "ControlMaster=no"]
        return ["ssh", *o, *(extra or []), "--", h.address]

    def root(self, cmd: str) -> str:
        """`cmd` (a shell line) as the remote command, run by root."""
        return cmd if self.host.user == "root" else f"sudo -n sh -c {shlex.quote(cmd)}"

    def connect(self) -> None:
        """Starts the ControlMaster (a child of the runner: it ends with it);
        returns once it is up, or raises LabError naming the host."""
        assert self.sock is not None and self.master_log is not None
        self.sock.unlink(missing_ok=True)  # a stale one would disable multiplexing
        log = open(self.master_log, "w")
        argv = self.argv(["-N", "-o", "ControlPersist=no"])  # no -M: with ControlMaster=yes it means "ask"
        argv[argv.index("ControlMaster=no")] = "ControlMaster=yes"
        self.master = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True, preexec_fn=_child_setup)
        log.close()

    def wait_connected(self) -> None:
        assert self.master is not None
        deadline = time.monotonic() + self.inv.connect_timeout_s + 20
        while True:
            if self.master.poll() is not None:
                why = self.master_log.read_text(errors="replace").strip() if self.master_log else ""
                self.master = None
                raise LabError(f"hosts: cannot reach {self.host.label}: {why or 'ssh exited'}")
            if self.sock.exists():
                p = subprocess.run(self.argv(["-O", "check"]), capture_output=True, text=True, timeout=10,
                                   start_new_session=True)
                if p.returncode == 0:
                    return
            if time.monotonic() > deadline:
                self.close()
                raise LabError(f"hosts: cannot reach {self.host.label}: no SSH session after "
                               f"{self.inv.connect_timeout_s + 20} s")
            time.sleep(0.1)

    def close(self) -> None:
        if self.master is not None:
            if self.master.poll() is None:
                subprocess.run(self.argv(["-O", "exit"]), capture_output=True, timeout=10, start_new_session=True)
                try:
                    self.master.wait(5)
                except subprocess.TimeoutExpired:
                    self.master.kill()
                    self.master.wait(5)
            self.master = None

    def run(self, cmd: str, timeout: float = 60, check: bool = True, stdin: bytes | None = None,
            what: str = "") -> subprocess.CompletedProcess:
        """Runs a shell line as root; LabError naming the host when it fails
        (check) or the connection does."""
        try:
            p = subprocess.run(self.argv() + [self.root(cmd)], input=stdin, capture_output=True, timeout=timeout,
                               start_new_session=True)
        except subprocess.TimeoutExpired:
            raise LabError(f"hosts: {self.host.label}: {what or cmd[:80]}: no answer after {timeout:g} s") from None
        if p.returncode == 255 and b"ssh:" in p.stderr or (check and p.returncode != 0):
            err = (p.stderr or p.stdout).decode(errors="replace").strip()
            raise LabError(f"hosts: {self.host.label}: {what or cmd[:80]} failed (status {p.returncode}): {err}")
        return p

    def text(self, cmd: str, timeout: float = 60, what: str = "") -> str:
        return self.run(cmd, timeout, what=what).stdout.decode(errors="replace")

    def put(self, data: bytes, path: str, mode: str = "644") -> None:
        q = shlex.quote(path)
        self.run(f"cat > {q} && chmod {mode} {q}", timeout=300, stdin=data, what=f"copying {path} in")

    def get(self, path: str) -> bytes:
        return self.run(f"cat {shlex.quote(path)}", timeout=300, what=f"copying {path} back").stdout


class RemotePopen:
    """A program on a remote host behind subprocess.Popen's interface (what
    flexlab.procs uses). The local `ssh` client streams its output into the
    log and exits with its status; `dir/pid` holds its remote pid (signals go
    by `kill`); when it ends, its --out files are copied back."""

    def __init__(self, ssh: Ssh, local: subprocess.Popen, rdir: str, fetch: list[tuple[str, Path]],
                 log: Path) -> None:
        self.ssh, self.local, self.rdir, self.fetch, self.log = ssh, local, rdir, fetch, log
        self.pid = local.pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self.local.poll() is not None:
            self._bring_back()
            self.returncode = self.local.returncode
        return self.returncode

    def _bring_back(self) -> None:
        try:
            for rdir, ldir in self.fetch:
                names = self.ssh.text(f"ls {shlex.quote(rdir)}", what="listing the output files").split()
                ldir.mkdir(parents=True, exist_ok=True)
                for n in names:
                    (ldir / n).write_bytes(self.ssh.get(f"{rdir}/{n}"))
        except (LabError, OSError) as e:
            with open(self.log, "a") as f:
                f.write(f"lab: copying the output files back from {self.ssh.host.label} failed: {e}\n")

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            d = shlex.quote(self.rdir)
            try:
                self.ssh.run(f"p=$(cat {d}/pid 2>/dev/null) && kill -{int(sig)} $p 2>/dev/null", timeout=20,
                             check=False, what="signalling a program")
            except LabError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
        if self.local.poll() is None:
            self.local.kill()

    def wait(self, timeout: float | None = None) -> int:
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired("ssh", timeout or 0)
            time.sleep(0.05)
        return self.returncode  # type: ignore[return-value]


def start_remote(procs: Processes, ssh: Ssh, name: str, rdir: str, argv: list[str], log: Path,
                 fetch: list[tuple[str, Path]]) -> Proc:
    """Runs argv (remote paths) on ssh's host from the folder rdir (created),
    as a tracked process of the run."""
    d = shlex.quote(rdir)
    cmd = f"mkdir -p {d} && cd {d} && echo $$ > pid && exec {' '.join(shlex.quote(a) for a in argv)} 2>&1"
    proc = procs.start(name, ssh.argv() + [ssh.root(cmd)], log)
    proc.popen = RemotePopen(ssh, proc.popen, rdir, fetch, log)  # type: ignore[assignment]
    return proc
