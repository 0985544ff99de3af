"""Runs scripts/lab as a user would, and looks for leftovers."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "scripts" / "lab"


def lab(*args: str, timeout: float = 300, bins: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    argv = [str(LAB), *args]
    if bins and args and args[0] in ("run", "check"):
        argv += ["--bin-dir", str(bins)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def namespaces(prefix: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix)]


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes (not zombies) that contain `text`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            found.append(f"{pid}: {cmd.strip()}")
    return found
