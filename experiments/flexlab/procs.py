"""Processes the lab starts: every one is tracked, logged to a file, and
ended on teardown (SIGTERM, then SIGKILL after a bounded wait).

Children run in their own session (a Ctrl-C reaches only the runner, which
stops them in order) and get PR_SET_PDEATHSIG=SIGTERM, so they end even if
the runner is SIGKILLed (the namespaces then need `lab cleanup`).
"""
from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from flexlab.errors import Interrupted, LabError

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _child_setup() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def running(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 8) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


class Processes:
    def __init__(self, stop_requested) -> None:
        self.procs: list[Proc] = []
        self._stop_requested = stop_requested  # callable: True once SIGINT/SIGTERM arrived

    def start(self, name: str, argv: list[str], log: Path, cwd: Path | None = None) -> Proc:
        log.parent.mkdir(parents=True, exist_ok=True)
        f = open(log, "w")
        try:
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True, preexec_fn=_child_setup, cwd=cwd)
        except OSError as e:
            f.close()
            raise LabError(f"cannot start {name} ({argv[0]}): {e.strerror}") from None
        f.close()
        proc = Proc(name, p, log)
        self.procs.append(proc)
        return proc

    def wait_for(self, proc: Proc, pattern: str, timeout: float, what: str) -> None:
        """Waits until the log matches `pattern`; LabError if the process
        exits first or the time runs out (with the log's tail)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_interrupt()
            if rx.search(proc.log_text()):
                return
            if not proc.running():
                raise LabError(f"{proc.name} exited (status {proc.popen.returncode}) before {what}:\n{proc.tail()}")
            time.sleep(0.05)
        raise LabError(f"{proc.name}: no {what} after {timeout:g} s:\n{proc.tail()}")

    def wait_exit(self, procs: list[Proc], timeout: float) -> bool:
        """Waits until every process has exited; False on timeout."""
        deadline = time.monotonic() + timeout
        for p in procs:
            while p.running():
                self.check_interrupt()
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.05)
        return True

    def stop(self, procs: list[Proc], sig: int = signal.SIGTERM, timeout: float = 10) -> None:
        """Signals each running process, waits, then SIGKILLs stragglers."""
        for p in procs:
            if p.running():
                try:
                    p.popen.send_signal(sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.popen.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait(5)

    def stop_all(self, timeout: float = 10) -> None:
        self.stop([p for p in self.procs if p.running()], signal.SIGTERM, timeout)

    def check_interrupt(self) -> None:
        if self._stop_requested():
            raise Interrupted("interrupted")


def pids_in_netns(ns: str) -> list[int]:
    p = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(x) for x in p.stdout.split()] if p.returncode == 0 else []


def kill_pids(pids: list[int], timeout: float = 5) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
