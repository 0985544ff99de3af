"""Bad input to flexplane-router, one row per input (issue 21): the exit
status and the message's place and field, for `--check` and for the real
start side by side.

`--check` and the start share their validation (RouterConfig::validate, run
before the EAL starts): before the fix `--check` said ok to every row below
whose start then exited 2. Each row runs `--check` with the start's EAL
arguments, the start itself, and `--check` without EAL arguments (where the
port count is unknown, so only the port-id rows pass, saying so)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

import pkt
from harness import EAL_BASE, find_bin

PORTS = "ports: {0: {ip: 10.1.0.1/24}, 1: {ip: 10.2.0.1/24}}\n"  # line 1
ROUTES = "routes: routes.txt\n"  # line 2 after PORTS


@dataclass
class Row:
    id: str
    config: str
    routes: str | None          # routes.txt text; None: no file
    place: str                  # the message's place and field, e.g. "r.yaml:1:9: router:"
    rest: str                   # more of the same line
    port_ids: bool = False      # only the port count can find it


ROWS = [
    Row("unknown-port-in-ports", "ports: {0: {ip: 10.1.0.1/24}, 1: {ip: 10.2.0.1/24}, 5: {ip: 10.5.0.1/24}}\n",
        None, "r.yaml:1:56: ports.5:", "no such port (the EAL arguments create 2 ports)", port_ids=True),
    Row("unknown-port-in-routes", PORTS + ROUTES, "10.9.0.0/16 port 5 mac 02:00:00:00:00:01\n",
        "routes.txt:1: port:", "5 does not exist (the router has 2 ports)", port_ids=True),
    Row("gateway-outside-subnets", PORTS + ROUTES, "10.9.0.0/16 via 10.7.0.2\n",
        "routes.txt:1: via:", "10.7.0.2 is in no port's subnet"),
    Row("gateway-is-router", PORTS + ROUTES, "# ok\n10.9.0.0/16 via 10.2.0.1\n",
        "routes.txt:2: via:", "10.2.0.1 is the router's own address"),
    Row("neighbor-outside-subnets", PORTS + ROUTES, "neighbor 10.8.0.1 mac 02:00:00:00:00:01\n",
        "routes.txt:1: neighbor:", "10.8.0.1 is in no port's subnet"),
    Row("lstf", "router: {scheme: lstf}\n" + PORTS, None,
        "r.yaml:1:9: router:", "scheme 'lstf' reads 4 bytes of endpoint-stamped custom data"),
    Row("lstf-on-a-port", "ports: {0: {ip: 10.1.0.1/24}, 1: {ip: 10.2.0.1/24, router: {scheme: lstf}}}\n", None,
        "r.yaml:1:60: ports.1.router:", "scheme 'lstf' reads 4 bytes"),
    Row("routes-is-a-folder", PORTS + "routes: sub\n", None, "r.yaml:2:9: routes:", "sub' is a folder"),
    Row("gateway-leading-zero", PORTS + ROUTES, "10.9.0.0/16 via 10.1.0.02\n",
        "routes.txt:1: via:", "'10.1.0.02' is not an IPv4 address"),
    Row("gateway-broadcast", PORTS + ROUTES, "10.9.0.0/16 via 255.255.255.255 port 1\n",
        "routes.txt:1: via:", "255.255.255.255 is the limited broadcast address"),
    Row("port-ip-leading-zero", "ports: {0: {ip: 10.1.0.01/24}}\n", None,
        "r.yaml:1:17: ports.0.ip:", "'10.1.0.01/24' is not a unicast address"),
    Row("control-bytes-in-routes", PORTS + ROUTES, "10.9.0.0/16 via 10.1.0.2\x1b[2J\n",
        "routes.txt:1: via:", "'10.1.0.2\\e[2J' is not an IPv4 address"),
    Row("control-bytes-in-name", 'name: "r\\e]0;pwned\\a"\n' + PORTS, None,
        "r.yaml:1:7: name:", "'r\\e]0;pwned\\x07' must be non-empty"),
]


def vdevs(tmp: Path, n: int = 2) -> list[str]:
    out = []
    for i in range(n):
        pkt.write_pcap(tmp / f"in{i}.pcap", [])
        out += ["--vdev", f"net_pcap{i},rx_pcap={tmp / f'in{i}.pcap'},tx_pcap={tmp / f'out{i}.pcap'}"]
    return out


def setup(tmp: Path, row: Row) -> Path:
    (tmp / "r.yaml").write_text(row.config + f"output: {{dir: {tmp / 'out'}}}\n" +
                                "run: {duration_s: 1, stats_interval_s: 0}\n")
    if row.routes is not None:
        (tmp / "routes.txt").write_text(row.routes)
    (tmp / "sub").mkdir()
    return tmp / "r.yaml"


def router(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(find_bin()), "r.yaml", *args], capture_output=True, text=True, cwd=tmp, timeout=120)


def refused(r: subprocess.CompletedProcess[str], row: Row) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    line = next((l for l in r.stderr.splitlines() if row.place in l), None)
    assert line is not None, r.stderr
    assert row.rest in line, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr  # control bytes shown escaped
    return line


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_check_and_start_refuse_alike(tmp_path: Path, row: Row) -> None:
    setup(tmp_path, row)
    eal = [*EAL_BASE, *vdevs(tmp_path)]
    checked = refused(router(tmp_path, "--check", "--", *eal), row)
    started = router(tmp_path, "--", *eal)
    assert refused(started, row) == checked  # the same message from the same code
    assert not (tmp_path / "out").exists()
    # Refused before the EAL starts: an EAL argument the EAL would refuse changes nothing.
    assert refused(router(tmp_path, "--", *eal, "--no-such-eal-option"), row) == checked
    # --check alone: no port count, so only the port-id rows pass, and say what went unchecked.
    alone = router(tmp_path, "--check")
    if row.port_ids:
        assert alone.returncode == 0, alone.stderr
        assert "r.yaml: ok (port ids not checked" in alone.stdout
    else:
        assert refused(alone, row) == checked


def test_start_checks_port_ids_with_the_devices_it_got(tmp_path: Path) -> None:
    """Without --no-pci the port count is unknown before the EAL: the start
    validates again, with the same function, once the devices exist, and
    refuses before configuring any port."""
    row = ROWS[0]
    setup(tmp_path, row)
    eal = [a for a in EAL_BASE if a != "--no-pci"] + vdevs(tmp_path)
    checked = router(tmp_path, "--check", "--", *eal)
    assert checked.returncode == 0 and "port ids not checked" in checked.stdout
    started = router(tmp_path, "--", *eal)
    assert started.returncode == 2, started.stderr
    assert "r.yaml:1:56: ports.5: no such port (the EAL arguments create 2 ports)" in started.stderr
    assert not (tmp_path / "out").exists()


def test_check_ok_names_the_port_count(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(PORTS + ROUTES)
    (tmp_path / "routes.txt").write_text("10.9.0.0/16 via 10.1.0.2\n10.8.0.0/16 port 1 mac 02:00:00:00:00:01\n")
    r = router(tmp_path, "--check", "--", *EAL_BASE, *vdevs(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "r.yaml: ok (2 ports)"
