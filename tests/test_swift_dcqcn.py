"""Swift, pacing and DCQCN through the whole emulator (unit tests in
transports/swift_test.cc and dcqcn_test.cc): an 8 -> 1 incast of long flows
finishes without loss with the bottleneck port held near swift's target
delay, where reno fills the buffer and loses packets; DCQCN over RED with
ECN finishes it without loss, cutting its rate on CNPs; swift, paced and
DCQCN runs are identical on 1 and 2 cores; a bad parameter is refused
naming the field."""
from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"

CONFIG = """
seed: 1
network: {link_rate_gbps: 10}
topology: {kind: single_rack, endpoints: 9}
routers:
  default: {scheme: droptail, queue_manager: {capacity_pkts: 512}}
transport: {kind: swift, min_rto_us: 1000, swift_target_delay_us: 10}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 50, occupancy_interval_us: 12}
variants:
  swift: {}
  reno: {transport: {kind: reno}}
  swift_paced: {transport: {pacing_gain: 1}}
  dctcp_paced: {transport: {kind: dctcp, pacing_gain: 1.2}, routers: {default: {scheme: dctcp, queue_manager: {k_pkts: 20}}}}
  dcqcn:
    transport: {kind: dcqcn}
    routers: {default: {scheme: red, queue_manager: {min_th_pkts: 4, max_th_pkts: 40, max_p: 0.2, weight: 1, ecn: true}}}
"""


def setup(tmp_path: Path) -> Path:
    rows = ["flow_id,src,dst,size_pkts,start_timeslot"] + [f"{i - 1},{i},0,3000,{10 * i}" for i in range(1, 9)]
    (tmp_path / "incast.csv").write_text("\n".join(rows) + "\n")
    cfg = tmp_path / "swift.yaml"
    cfg.write_text(CONFIG)
    return cfg


def run(cfg: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), "run", str(cfg), "--out", str(out), "--quiet", *extra],
                          capture_output=True, text=True, timeout=120)


def port0(d: Path) -> dict:
    rows = list(csv.DictReader(open(d / "occupancy_summary.csv")))
    return next(r for r in rows if r["router"] == "tor0" and r["port"] == "0")


def test_swift_holds_the_incast_queue_near_its_target(tmp_path):
    cfg = setup(tmp_path)
    for v in ("swift", "reno"):
        p = run(cfg, tmp_path / v, "--variant", v)
        assert p.returncode == 0, p.stderr
    sw, re_ = tmp_path / "swift" / "swift", tmp_path / "reno" / "reno"
    flows = list(csv.DictReader(open(sw / "flows.csv")))
    assert len(flows) == 8 and all(f["finished"] == "1" for f in flows)
    assert all(int(f["retransmits"]) == 0 for f in flows)
    # Target 10 us = 8.3 timeslots of 1.2 us: about 8 packets queued.
    q_sw, q_re = port0(sw), port0(re_)
    assert 4 <= float(q_sw["p50_pkts"]) <= 14, q_sw
    assert float(q_sw["p99_pkts"]) <= 40, q_sw
    # Reno over the same DropTail port fills it and loses packets.
    assert float(q_re["p99_pkts"]) > 5 * float(q_sw["p99_pkts"]), (q_re, q_sw)
    assert sum(int(f["retransmits"]) for f in csv.DictReader(open(re_ / "flows.csv"))) > 0


def test_swift_and_pacing_same_outputs_on_1_and_2_cores(tmp_path):
    """Paced senders wake on their own timers (the lookahead must know when):
    the runs are the same on 1 and 2 cores, and every flow finishes."""
    cfg = setup(tmp_path)
    cfg.write_text(CONFIG.replace("topology: {kind: single_rack, endpoints: 9}",
                                  "topology: {kind: leaf_spine, racks: 2, endpoints_per_rack: 5, spines: 2}"))
    for v in ("swift", "swift_paced", "dctcp_paced", "dcqcn"):
        outs = []
        for cores in ("1", "2"):
            p = run(cfg, tmp_path / f"{v}{cores}", "--variant", v, "--cores", cores)
            assert p.returncode == 0, p.stderr
            outs.append((tmp_path / f"{v}{cores}" / v / "flows.csv").read_text())
        assert outs[0] == outs[1], v
        assert all(r["finished"] == "1" for r in csv.DictReader(outs[0].splitlines())), v


def test_bad_swift_parameter_is_named(tmp_path):
    cfg = setup(tmp_path)
    cfg.write_text(CONFIG.replace("swift_target_delay_us: 10", "swift_beta: 2"))
    p = run(cfg, tmp_path / "bad", "--variant", "swift")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "swift_beta" in p.stderr


def test_dcqcn_incast_without_loss(tmp_path):
    cfg = setup(tmp_path)
    p = run(cfg, tmp_path / "dq", "--variant", "dcqcn")
    assert p.returncode == 0, p.stderr
    flows = list(csv.DictReader(open(tmp_path / "dq" / "dcqcn" / "flows.csv")))
    assert len(flows) == 8 and all(f["finished"] == "1" for f in flows)
    assert all(int(f["retransmits"]) == 0 for f in flows)
    assert sum(int(f["ecn_reductions"]) for f in flows) > 8  # every sender cut its rate on CNPs
    assert all(int(f["marked_pkts"]) > 0 for f in flows)
