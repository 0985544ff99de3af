"""The endpoint packages, installed for real (docs/deploy.md): flexplane-dkms
builds flexplane.ko with DKMS on install, `modprobe flexplane` loads it with
its dependencies in Debian's kernel, flexplane-tc puts q_flexplane.so where
tc finds it, purging leaves nothing behind, check_tc_abi.sh refuses other
iproute2 ABIs, and the module builds against each supported kernel's headers.
Run: packaging/test.sh (root)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pkgtest import OUT, REPO, installed, run, version

PLUGIN_DIR = Path("/usr/lib/x86_64-linux-gnu/tc")
CHECK = REPO / "packaging/check_tc_abi.sh"


# ---- the packages ----

def test_debs_carry_the_module_sources_and_the_plugin(debs, tmp_path):
    v = version()
    files = run(["dpkg-deb", "-c", debs["dkms"]]).stdout
    src = f"./usr/src/flexplane-{v}/"
    makefile = (REPO / "kmod/Makefile").read_text()
    ksrc = next(l for l in makefile.splitlines() if l.startswith("KSRC := ")).split()[2:]
    psrc = next(l for l in makefile.splitlines() if l.startswith("PSRC := ")).split()[2:]
    for f in [*ksrc, *psrc, "dkms.conf"]:
        assert src + f in files, f"{src}{f} missing from {debs['dkms'].name}"
    run(["dpkg-deb", "-x", debs["dkms"], tmp_path])
    conf = (tmp_path / f"usr/src/flexplane-{v}/dkms.conf").read_text()
    assert f'PACKAGE_VERSION="{v}"' in conf and 'AUTOINSTALL="yes"' in conf
    info = run(["dpkg-deb", "-f", debs["dkms"], "Depends"]).stdout
    assert "dkms" in info and "linux-headers-amd64 | linux-headers-generic" in info
    tc = run(["dpkg-deb", "-c", debs["tc"]]).stdout
    assert f".{PLUGIN_DIR}/q_flexplane.so" in tc
    dep = run(["dpkg-deb", "-f", debs["tc"], "Depends"]).stdout
    assert "iproute2 (>= 6.1.0), iproute2 (<< 6.16~)" in dep, dep


# ---- flexplane-dkms installed: the DKMS build on install ----

def test_dkms_builds_and_installs_the_module_on_install(dkms_installed, kver):
    assert "Installing to /lib/modules/" in dkms_installed, dkms_installed
    ko = Path("/lib/modules") / kver / "updates/dkms/flexplane.ko"
    assert ko.is_file(), f"{ko} not installed; apt output:\n{dkms_installed}"
    status = run(["dkms", "status", "-m", "flexplane", "-v", version(), "-k", kver]).stdout
    assert f"flexplane/{version()}, {kver}, x86_64: installed" in status, status
    info = {k: run(["modinfo", "-F", k, ko]).stdout.strip() for k in ("vermagic", "version", "depends", "signer")}
    assert info["vermagic"].split()[0] == kver
    assert info["version"] == version()
    assert set(info["depends"].split(",")) == {"udp_tunnel", "ip6_udp_tunnel"}, info
    # dkms signs with its MOK key (docs/deploy.md, "Secure Boot")
    assert info["signer"] == "DKMS module signing key", info
    # depmod ran for that kernel: modprobe finds the module by name
    dep = (Path("/lib/modules") / kver / "modules.dep").read_text()
    assert "updates/dkms/flexplane.ko:" in dep
    show = run(["modprobe", "--show-depends", "-S", kver, "flexplane"]).stdout
    assert f"/lib/modules/{kver}/updates/dkms/flexplane.ko" in show


def test_a_kernel_install_rebuilds_the_module(dkms_installed, kver):
    """AUTOINSTALL: what a kernel (or headers) package runs on install,
    /etc/kernel/postinst.d/dkms KVER, builds and installs the module again."""
    ko = Path("/lib/modules") / kver / "updates/dkms/flexplane.ko"
    run(["dkms", "unbuild", "-m", "flexplane", "-v", version(), "-k", kver])
    assert not ko.exists()
    assert f"flexplane/{version()}: added" in run(["dkms", "status", "flexplane"]).stdout
    out = run(["/etc/kernel/postinst.d/dkms", kver]).stdout
    assert ko.is_file(), out
    assert f"flexplane/{version()}, {kver}, x86_64: installed" in run(["dkms", "status", "flexplane"]).stdout


def test_modprobe_resolves_udp_tunnel_against_the_kernels_modules(dkms_installed, kver, tmp_path):
    """This host has the 6.1 headers but not the image's modules; resolve the
    installed module's dependencies against the real linux-image's modules."""
    image = Path(run([REPO / "packaging/kernel_cache.sh", "modules", kver]).stdout.strip())
    root = tmp_path / "root"
    mdir = root / "lib/modules" / kver
    (mdir / "updates/dkms").mkdir(parents=True)
    (mdir / "kernel").symlink_to(image / "lib/modules" / kver / "kernel")
    for f in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        (mdir / f).write_bytes((image / "lib/modules" / kver / f).read_bytes())
    ko = Path("/lib/modules") / kver / "updates/dkms/flexplane.ko"
    (mdir / "updates/dkms/flexplane.ko").write_bytes(ko.read_bytes())
    run(["depmod", "-b", root, kver])
    show = run(["modprobe", "-d", root, "-S", kver, "--show-depends", "flexplane"]).stdout.splitlines()
    order = [Path(l.split()[1]).name for l in show if l.startswith("insmod ")]
    assert order == ["udp_tunnel.ko", "ip6_udp_tunnel.ko", "flexplane.ko"], show


def test_modprobe_and_tc_in_debians_kernel(dkms_installed, tc_installed, kver):
    """Debian's 6.1 kernel under QEMU: modprobe loads the DKMS-built module
    and its dependencies from modules.dep; the packaged plugin attaches,
    shows (options and xstats) and deletes the qdisc; rmmod succeeds."""
    ko = Path("/lib/modules") / kver / "updates/dkms/flexplane.ko"
    p = subprocess.run([REPO / "tests/packaging/vm_modprobe.sh", kver, ko, PLUGIN_DIR / "q_flexplane.so",
                        OUT / "vm"], capture_output=True, text=True, timeout=300, start_new_session=True)
    out = p.stdout
    assert p.returncode == 0, f"{out}\n{p.stderr[-3000:]}"
    for line in (f"FPK: kernel {kver}", "FPK: modprobe ok", "FPK: loaded udp_tunnel",
                 "FPK: loaded ip6_udp_tunnel", "FPK: loaded flexplane", "FPK: qdisc added",
                 "FPK: qdisc deleted", "FPK: rmmod ok", "FPK: done"):
        assert line in out.splitlines(), f"{line!r} missing:\n{out}\n{p.stderr[-2000:]}"
    assert "emulator 10.77.0.2:9977 endpoints 10.77.0.10 count 2" in out, out
    assert "pkts_managed" in out and "state connecting" in out, out


# ---- flexplane-tc: where tc finds it ----

def test_tc_loads_the_installed_plugin(tc_installed, netns):
    files = run(["dpkg", "-L", "flexplane-tc"]).stdout.splitlines()
    assert str(PLUGIN_DIR / "q_flexplane.so") in files
    tc = ["ip", "netns", "exec", netns, "tc", "qdisc", "add", "dev", "lo", "root", "flexplane"]
    env = {k: v for k, v in os.environ.items() if k != "TC_LIB_DIR"}
    p = run(tc + ["help"], check=False, env=env)
    assert "Usage: ... flexplane emulator ADDR[:PORT] endpoints ADDR" in p.stderr, p.stderr
    # a complete command line parses; this host's kernel has no flexplane qdisc
    p = run(tc + ["emulator", "10.77.0.2", "endpoints", "10.77.0.10", "count", "2"], check=False, env=env)
    assert p.returncode != 0 and "Specified qdisc kind is unknown" in p.stderr, p.stderr
    p = run(tc + ["emulator", "10.77.0.2", "endpoints", "10.77.0.10", "count", "zz"], check=False, env=env)
    assert 'flexplane: invalid count "zz"' in p.stderr, p.stderr


def test_backports_iproute2_loads_the_plugin(debs, netns, tmp_path):
    """iproute2 6.15 (bookworm-backports, unpacked, not installed): the upper
    end of the supported range loads the plugin this host built."""
    root = Path(run([REPO / "packaging/kernel_cache.sh", "deb", "bookworm-backports", "iproute2"]).stdout.strip())
    tc = root / "sbin/tc"
    assert "iproute2-6.15" in run([tc, "-V"]).stdout
    run(["sh", "-c", f"dpkg-deb --fsys-tarfile {debs['tc']} | tar -x -C {tmp_path}"])
    plugin_dir = tmp_path / str(PLUGIN_DIR).lstrip("/")
    p = run([CHECK, "--tc", tc, "--plugin", plugin_dir / "q_flexplane.so"])
    # 14: the netlink and print helpers q_flexplane.c declares (open/close_json_object since the stage lines)
    assert "is iproute2 6.15" in p.stdout and "14 helpers exported" in p.stdout, p.stdout
    env = dict(os.environ, TC_LIB_DIR=str(plugin_dir))
    p = run(["ip", "netns", "exec", netns, tc, "qdisc", "add", "dev", "lo", "root", "flexplane", "help"],
            check=False, env=env)
    assert "Usage: ... flexplane emulator ADDR[:PORT] endpoints ADDR" in p.stderr, p.stderr


# ---- check_tc_abi.sh refuses what it does not support ----

def fake_tc(tmp_path: Path, banner: str) -> Path:
    f = tmp_path / "tc"
    f.write_text(f"#!/bin/sh\necho '{banner}'\n")
    f.chmod(0o755)
    return f


def test_check_tc_abi_accepts_the_installed_iproute2():
    p = run([CHECK])
    assert "is iproute2 6.1.0: plugin ABI supported" in p.stdout, p.stdout


@pytest.mark.parametrize("banner,why", [
    ("tc utility, iproute2-5.10.0, libbpf 0.3.0", "is iproute2 5.10.0, outside the supported plugin ABI range"),
    ("tc utility, iproute2-6.16.0", "is iproute2 6.16.0, outside the supported plugin ABI range"),
    ("tc utility, iproute2-ss190107", "cannot read iproute2's version"),
])
def test_check_tc_abi_refuses_other_versions(tmp_path, banner, why):
    p = run([CHECK], check=False, env=dict(os.environ, TC=str(fake_tc(tmp_path, banner))))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "check_tc_abi: REFUSED" in p.stderr and why in p.stderr, p.stderr
    assert "supports iproute2 6.1.0 to 6.15.x" in p.stderr


def test_check_tc_abi_refuses_a_different_struct_layout(tmp_path):
    """An iproute2 tree whose struct qdisc_util lacks has_block (as before 4.x)."""
    header = tmp_path / "tc_util.h"
    header.write_text("struct qdisc_util {\n\tstruct qdisc_util *next;\n\tconst char *id;\n"
                      "\tint (*parse_qopt)(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n);\n"
                      "\tint (*print_qopt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);\n"
                      "\tint (*print_xstats)(struct qdisc_util *qu, FILE *f, struct rtattr *xstats);\n"
                      "\tint (*parse_copt)(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n);\n"
                      "\tint (*print_copt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);\n};\n")
    p = run([CHECK, "--header", header], check=False)
    assert p.returncode == 1
    assert "declares struct qdisc_util as (next id parse_qopt print_qopt print_xstats parse_copt " \
           "print_copt), the plugin as (next id parse_qopt print_qopt print_xstats parse_copt " \
           "print_copt has_block)" in p.stderr, p.stderr


def test_check_tc_abi_refuses_a_tc_without_the_helpers(tmp_path, debs):
    run(["sh", "-c", f"dpkg-deb --fsys-tarfile {debs['tc']} | tar -x -C {tmp_path}"])
    so = tmp_path / str(PLUGIN_DIR).lstrip("/") / "q_flexplane.so"
    p = run([CHECK, "--plugin", so], check=False,
            env=dict(os.environ, TC=str(fake_tc(tmp_path, "tc utility, iproute2-6.15.2"))))
    assert p.returncode == 1 and "exports no dynamic symbols" in p.stderr, p.stderr


# ---- purge: nothing left ----

def test_purge_removes_everything(dkms_installed, tc_installed, kver):
    v = version()
    run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "-y", "-q", "purge", "flexplane-dkms", "flexplane-tc"])
    assert not installed("flexplane-dkms") and not installed("flexplane-tc")
    assert subprocess.run(["dpkg", "-s", "flexplane-dkms"], capture_output=True).returncode != 0, "config files left"
    for path in (Path(f"/usr/src/flexplane-{v}"), Path("/var/lib/dkms/flexplane"),
                 Path("/lib/modules") / kver / "updates/dkms/flexplane.ko", PLUGIN_DIR / "q_flexplane.so"):
        assert not path.exists(), f"{path} left after purge"
    assert "flexplane" not in run(["dkms", "status"]).stdout
    p = run(["modprobe", "--show-depends", "-S", kver, "flexplane"], check=False)
    assert p.returncode != 0 and "not found" in p.stderr, p.stdout + p.stderr


# ---- the supported kernel range ----

@pytest.mark.parametrize("spec", ["installed:6.1", "bookworm-backports:6.12"])
def test_module_builds_against_kernel_headers(spec):
    p = run([REPO / "packaging/build_kernels.sh", OUT / "kernels"], check=False,
            env=dict(os.environ, FLEXPLANE_KERNELS=spec))
    assert p.returncode == 0, p.stdout + p.stderr
    assert ": OK, no warnings" in p.stdout, p.stdout
