"""The `live:` section's addresses through the programs (issue 21, item 4).

One strict parser (net/ipv4_address.h) reads them once, at load, and the
checks run there: so `flexplane-emulator check`, the live start (before its
DPDK EAL initialisation and before it creates its output folder) and the
endpoint programs refuse the same inputs with the same
`file:line:col: live.<field>: value ...` message and exit 2. Before the fix
`check` said ok to all of these, and the live start either failed after the
EAL had started with no field named (leading zeros) or ran with a broadcast,
multicast or duplicate address."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN_DIR = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build"))
EMULATOR = BIN_DIR / "flexplane-emulator"
ENDPOINT = BIN_DIR / "flexplane-endpoint"

BASE = ("topology: {kind: single_rack, endpoints: 4}\n"
        "workload: {kind: poisson, pattern: all_to_all, load: 0.1, fixed_size_pkts: 1}\n"
        "run: {duration_ms: 1}\n")  # lines 1-3; live: is line 4
# EAL arguments the live start would get (it must refuse these configs before the EAL).
EAL = ["-l", "0", "--no-pci", "--no-huge", "-m", "256", "--no-shconf", "--vdev", "net_null0"]

ROWS = [
    # (id, live: section, the message's place and field, the rest of it)
    ("leading-zero", "{emulator_ip: 10.77.0.010}", "exp.yaml:4:21: live.emulator_ip:",
     "'10.77.0.010' is not an IPv4 address"),
    ("broadcast", "{emulator_ip: 255.255.255.255}", "exp.yaml:4:21: live.emulator_ip:",
     "255.255.255.255 is the limited broadcast address"),
    ("unspecified", "{first_endpoint_ip: 0.0.0.0}", "exp.yaml:4:27: live.first_endpoint_ip:",
     "0.0.0.0 is the unspecified address"),
    ("multicast", "{endpoint_ips: [10.77.0.10, 239.1.1.1, 10.77.0.12, 10.77.0.13]}",
     "exp.yaml:4:35: live.endpoint_ips[1]:", "239.1.1.1 is a multicast address"),
    ("wrap", "{first_endpoint_ip: 255.255.255.253}", "exp.yaml:4:27: live.first_endpoint_ip:",
     "255.255.255.253 is a reserved address"),
    ("runs-into-multicast", "{first_endpoint_ip: 223.255.255.253}", "exp.yaml:4:27: live.first_endpoint_ip:",
     "endpoint 3 would be 224.0.0.0, a multicast address"),
    ("endpoint0-is-emulator", "{endpoint_ips: [10.77.0.2, 10.77.0.11, 10.77.0.12, 10.77.0.13]}",
     "exp.yaml:4:23: live.endpoint_ips[0]:", "10.77.0.2 is live.emulator_ip's address"),
    ("default-endpoint0-is-emulator", "{emulator_ip: 10.77.0.10}", "exp.yaml:4:21: live.emulator_ip:",
     "10.77.0.10 is endpoint 0's address"),
    ("two-spellings", "{endpoint_ips: [10.77.0.10, 10.77.0.11, 10.77.0.010, 10.77.0.13]}",
     "exp.yaml:4:47: live.endpoint_ips[2]:", "'10.77.0.010' is not an IPv4 address"),
    ("duplicate", "{endpoint_ips: [10.77.0.10, 10.77.0.11, 10.77.0.12, 10.77.0.11]}",
     "exp.yaml:4:59: live.endpoint_ips[3]:", "10.77.0.11 is endpoint 1's address too"),
    ("control-bytes", '{emulator_ip: "10.77.0.2\\e[2J"}', "exp.yaml:4:21: live.emulator_ip:",
     "'10.77.0.2\\e[2J' is not an IPv4 address"),
]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=cwd, timeout=120)


def write(tmp: Path, live: str) -> Path:
    cfg = tmp / "exp.yaml"
    cfg.write_text(BASE + f"live: {live}\n")
    return cfg


def refused(r: subprocess.CompletedProcess[str], place: str, rest: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    line = next((l for l in r.stderr.splitlines() if place in l), None)
    assert line is not None, r.stderr
    assert rest in line, r.stderr
    assert "\x1b" not in r.stderr  # control bytes are shown escaped


@pytest.mark.parametrize("case", ROWS, ids=[r[0] for r in ROWS])
def test_check_refuses(tmp_path: Path, case) -> None:
    _, live, place, rest = case
    write(tmp_path, live)
    refused(run([EMULATOR, "check", "exp.yaml"], tmp_path), place, rest)


@pytest.mark.parametrize("case", ROWS, ids=[r[0] for r in ROWS])
def test_live_start_refuses_before_the_eal(tmp_path: Path, case) -> None:
    _, live, place, rest = case
    write(tmp_path, live)
    # --duration-s: a start that wrongly accepts the config ends (exit 0) instead of serving forever.
    r = run([EMULATOR, "live", "exp.yaml", "--out", "out", "--duration-s", "1", "--", *EAL], tmp_path)
    if "built without DPDK" in r.stderr:
        pytest.skip("flexplane-emulator built without DPDK: no live subcommand")
    refused(r, place, rest)
    assert not (tmp_path / "out").exists()
    # Refused before the EAL starts: an argument the EAL would refuse changes nothing.
    refused(run([EMULATOR, "live", "exp.yaml", "--out", "out", "--duration-s", "1", "--", *EAL,
                 "--no-such-eal-option"], tmp_path), place, rest)


@pytest.mark.parametrize("case", ROWS[:3], ids=[r[0] for r in ROWS[:3]])
def test_endpoint_refuses(tmp_path: Path, case) -> None:
    """The endpoint reads the same config with the same loader."""
    if not ENDPOINT.exists():
        pytest.skip(f"{ENDPOINT} not built")
    _, live, place, rest = case
    write(tmp_path, live)
    refused(run([ENDPOINT, "--config", "exp.yaml", "--id", "0", "--out", "ep"], tmp_path), place, rest)


def test_endpoint_overrides_use_the_same_parser(tmp_path: Path) -> None:
    if not ENDPOINT.exists():
        pytest.skip(f"{ENDPOINT} not built")
    write(tmp_path, "{emulator_ip: 10.77.0.2}")
    for flag in ("--bind", "--emulator"):
        r = run([ENDPOINT, "--config", "exp.yaml", "--id", "0", "--out", "ep", flag, "10.77.0.010"], tmp_path)
        assert r.returncode == 2, r.stderr
        assert f"{flag} '10.77.0.010': expected IPv4[:PORT]" in r.stderr


def test_good_addresses_pass(tmp_path: Path) -> None:
    write(tmp_path, "{emulator_ip: 10.0.0.1, first_endpoint_ip: 10.0.0.254}")  # endpoints carry into 10.0.1.x
    r = run([EMULATOR, "check", "exp.yaml"], tmp_path)
    assert r.returncode == 0, r.stderr
