"""Helpers of the packaging suite (tests/packaging)."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("FLEXPLANE_PKG_OUT", REPO / "build" / "packaging")).resolve()
os.environ.setdefault("FLEXPLANE_KERNEL_CACHE", str(OUT / "cache"))
APT = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "-y", "-q"]
MOK = [Path("/var/lib/dkms/mok.key"), Path("/var/lib/dkms/mok.pub")]


def run(argv, timeout=600, check=True, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def version() -> str:
    m = re.search(r'#define FLEXPLANE_VERSION "([^"]+)"', (REPO / "api/version.h").read_text())
    assert m, "api/version.h has no FLEXPLANE_VERSION"
    return m.group(1)


def headers_kver() -> str:
    """The installed Debian 6.1 headers' kernel (the running host kernel is not Debian's)."""
    found = sorted(p.name for p in Path("/lib/modules").iterdir()
                   if re.fullmatch(r"6\.1\.\d+-\d+-amd64", p.name) and (p / "build" / "Makefile").exists())
    if not found:
        pytest.fail("no /lib/modules/6.1.*-amd64/build: apt-get install linux-headers-amd64")
    return found[-1]


def installed(pkg: str) -> bool:
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg], capture_output=True, text=True)
    return p.returncode == 0 and "installed" in p.stdout and "not-installed" not in p.stdout


def purge(pkg: str) -> None:
    if installed(pkg) or subprocess.run(["dpkg", "-s", pkg], capture_output=True).returncode == 0:
        run(APT + ["purge", pkg])


