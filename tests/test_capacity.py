"""The live capacity experiment (issue 22; docs/live.md, "Capacity"):
`flexplane-emulator capacity` paces the engine in real time and feeds it with
synthetic endpoints through LiveTraffic; every request gets one verdict
(offered = released + marked + dropped), a point past the late threshold is
marked late rather than passed off as a capacity, and bad arguments name the
flag. The CI machine is shared: these runs assert the accounting and the
report's form, never a rate."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"
CONFIG = REPO / "experiments" / "configs" / "live_capacity.yaml"

# 2 racks of 4, 12 us timeslots (1 Gbit/s links): slow enough for a loaded 2-core machine.
SMALL = """
seed: 2
network: {link_rate_gbps: 1, abstract_packet_bytes: 1500}
topology: {kind: leaf_spine, racks: 2, endpoints_per_rack: 4, spines: 1, links_per_spine: 1}
routers:
  default: {scheme: droptail, queue_manager: {capacity_pkts: 8}}
workload: {kind: poisson, load: 0.01, fixed_size_pkts: 1}
run: {cores: 1, duration_ms: 1}
live: {endpoint_queue_pkts: 32}
"""


def capacity(args, tmp_path, config=None):
    cfg = config or tmp_path / "small.yaml"
    if config is None:
        cfg.write_text(SMALL)
    return subprocess.run([str(BIN), "capacity", str(cfg), "--out", str(tmp_path / "out"), "--quiet", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("load_args", [["--load", "0.5"], ["--backlog", "4"], ["--load", "0.3", "--poll-us", "20"]])
def test_every_request_gets_one_verdict(tmp_path, load_args):
    p = capacity([*load_args, "--duration-s", "0.3", "--warmup-s", "0.05"], tmp_path)
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load((tmp_path / "out" / "capacity.yaml").read_text())
    q = r["requests"]
    assert q["offered"] > 0
    assert q["offered"] == q["submitted"] + q["refused_at_submit"]
    assert q["offered"] == q["released"] + q["marked"] + q["dropped"]
    assert q["outstanding_at_exit"] == 0 and r["accounted"] is True
    assert sum(q["drop_reasons"].values()) == q["dropped"] - q["refused_at_submit"]
    assert r["endpoints"] == 8 and r["routers"] == 3 and r["engine_cores"] == 1
    assert r["timeslot_ns"] == 12000
    # Delivered bytes cross one router (same rack) or three: router >= delivered <= 3x.
    assert 0 < r["delivered_gbps"] <= r["router_gbps"] <= 3 * r["delivered_gbps"] + 1e-9
    assert r["latency_us"]["samples"] > 0 and r["latency_us"]["p50"] <= r["latency_us"]["p99"]
    if r["late_fraction"] == 0:  # a late engine catches up faster than real time: wall latencies shrink
        assert r["latency_us"]["p50"] >= 2 * 12  # two access links of 12 us at least
    assert r["window_timeslots"] > 0 and 0 <= r["late_fraction"] <= 1
    assert r["status"] == ("late" if r["late_fraction"] > r["late_threshold"] else "ok")
    line = [l for l in p.stdout.splitlines() if l.startswith("capacity:")][-1]
    assert ("LATE" in line) == (r["status"] == "late")


def test_a_late_point_says_so(tmp_path):
    # A threshold of 0 marks any late timeslot; one the engine can't keep: 64 endpoints at
    # 10 Gbit/s, each keeping 16 requests outstanding against a NIC queue of 8, so the
    # queues overflow whatever pace a loaded machine gives the feeder and the engine.
    cfg = tmp_path / "overloaded.yaml"
    cfg.write_text(CONFIG.read_text().replace("endpoint_queue_pkts: 4096", "endpoint_queue_pkts: 8"))
    assert "endpoint_queue_pkts: 8" in cfg.read_text()
    p = capacity(["--backlog", "16", "--duration-s", "0.2", "--warmup-s", "0", "--late-threshold", "0"], tmp_path, cfg)
    assert p.returncode == 0, p.stderr
    r = yaml.safe_load((tmp_path / "out" / "capacity.yaml").read_text())
    assert r["late_fraction"] > 0 and r["status"] == "late"
    assert "LATE" in p.stdout
    assert r["requests"]["offered"] == r["requests"]["released"] + r["requests"]["marked"] + r["requests"]["dropped"]
    assert r["requests"]["drop_reasons"].get("endpoint_overflow", 0) > 0  # the NIC queues overflowed, visibly


@pytest.mark.parametrize("args,flag", [(["--load", "0"], "--load"), (["--drivers", "0"], "--drivers"),
                                       (["--duration-s", "-1"], "--duration-s"), (["--poll-us", "-3"], "--poll-us"),
                                       (["--late-threshold", "2"], "--late-threshold")])
def test_bad_arguments_name_the_flag(tmp_path, args, flag):
    p = capacity(args, tmp_path)
    assert p.returncode == 2
    assert flag in p.stderr
    assert not (tmp_path / "out" / "capacity.yaml").exists()


def test_sweep_script_prints_and_writes_rows(tmp_path):
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "live_capacity.py"), "--bin", str(BIN),
                        "--cores", "1", "--loads", "0.01,0.02", "--duration-s", "0.2", "--warmup-s", "0.02",
                        "--out", str(tmp_path / "sweep")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(open(tmp_path / "sweep" / "capacity.csv")))
    assert [float(r["load"]) for r in rows] == [0.01, 0.02]
    assert all(r["racks"] == "2" and r["endpoints"] == "64" and r["status"] in ("ok", "LATE") for r in rows)
    assert "capacity at < 0.1 % late timeslots" in p.stdout
    assert "1 core(s):" in p.stdout
    cfg = yaml.safe_load((tmp_path / "sweep" / "c1.yaml").read_text())
    assert cfg["topology"]["racks"] == 2
