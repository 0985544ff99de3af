"""Fixtures of the packaging suite (packaging/test.sh; root): the .debs built
once, flexplane-dkms and flexplane-tc installed for real with apt and purged
afterwards (also on failure), with what the DKMS build leaves outside the
package (depmod's index in a kernel's module folder that had none, dkms's
self-generated MOK key) removed again when this run created it.
A missing prerequisite FAILS: CI runs as root and must not silently skip."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pkgtest import APT, MOK, OUT, REPO, headers_kver, purge, run, version


@pytest.fixture(scope="session", autouse=True)
def prerequisites():
    if os.geteuid() != 0:
        pytest.fail("the packaging tests install packages: run as root (packaging/test.sh)")
    missing = [t for t in ("dkms", "dpkg-deb", "qemu-system-x86_64", "busybox", "pahole", "depmod")
               if not shutil.which(t)]
    if missing:
        pytest.fail(f"missing {missing}: scripts/install_deps.sh")


@pytest.fixture(scope="session")
def debs() -> dict[str, Path]:
    out = OUT / "debs"
    run([REPO / "packaging/build_debs.sh", out])
    v = version()
    found = {"dkms": out / f"flexplane-dkms_{v}-1_all.deb", "tc": out / f"flexplane-tc_{v}-1_amd64.deb"}
    for name, f in found.items():
        assert f.is_file(), f"build_debs.sh did not write {f}"
    return found


@pytest.fixture(scope="session")
def kver() -> str:
    return headers_kver()


@pytest.fixture(scope="session")
def dkms_installed(debs, kver):
    """flexplane-dkms installed with apt (postinst: dkms add + install for
    every kernel with headers); purged at the end, host state restored."""
    moddir = Path("/lib/modules") / kver
    before = {p.name for p in moddir.iterdir()}
    mok_before = [m.exists() for m in MOK]
    purge("flexplane-dkms")          # a leftover of an interrupted run: ours
    try:
        p = run(APT + ["install", debs["dkms"]], timeout=900)
        yield p.stdout + p.stderr
    finally:
        purge("flexplane-dkms")
        for name in {p.name for p in moddir.iterdir()} - before:
            path = moddir / name
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        for m, existed in zip(MOK, mok_before):
            if not existed and m.exists():
                m.unlink()


@pytest.fixture(scope="session")
def tc_installed(debs):
    purge("flexplane-tc")
    try:
        run(APT + ["install", debs["tc"]])
        yield
    finally:
        purge("flexplane-tc")


@pytest.fixture
def netns():
    name = f"fpk-{os.getpid()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    run(["ip", "netns", "add", name])
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
