"""HPCC through the whole emulator (sender: transports/hpcc_test.cc, switch:
schemes/hpcc_test.cc): on an 8 -> 1 incast of long flows the telemetry keeps
the bottleneck queue at a few packets, where DCTCP's sits at its marking
threshold and the same senders behind switches without telemetry fill it,
with no loss and the link full; identical on 1 and 2 cores; bad
parameters are named."""
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
  default: {scheme: hpcc, queue_manager: {capacity_pkts: 256, base_rtt_timeslots: 4}}
transport: {kind: hpcc, min_rto_us: 1000}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 50, occupancy_interval_us: 1.2}
variants:
  hpcc: {}
  dctcp: {transport: {kind: dctcp}, routers: {default: {scheme: dctcp, queue_manager: {k_pkts: 20}}}}
  no_telemetry: {routers: {default: {scheme: droptail, queue_manager: {capacity_pkts: 256}}}}
"""


def setup(tmp_path: Path) -> Path:
    rows = ["flow_id,src,dst,size_pkts,start_timeslot"] + [f"{i - 1},{i},0,1000,{10 * i}" for i in range(1, 9)]
    (tmp_path / "incast.csv").write_text("\n".join(rows) + "\n")
    cfg = tmp_path / "hpcc.yaml"
    cfg.write_text(CONFIG)
    return cfg


def run(cfg: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), "run", str(cfg), "--out", str(out), "--quiet", *extra],
                          capture_output=True, text=True, timeout=120)


def port0(d: Path) -> dict:
    rows = list(csv.DictReader(open(d / "occupancy_summary.csv")))
    return next(r for r in rows if r["router"] == "tor0" and r["port"] == "0")


def test_hpcc_holds_the_incast_queue_near_empty_at_full_rate(tmp_path):
    cfg = setup(tmp_path)
    for v in ("hpcc", "dctcp", "no_telemetry"):
        p = run(cfg, tmp_path / v, "--variant", v)
        assert p.returncode == 0, p.stderr
    hp, dc = tmp_path / "hpcc" / "hpcc", tmp_path / "dctcp" / "dctcp"
    flows = list(csv.DictReader(open(hp / "flows.csv")))
    assert len(flows) == 8 and all(f["finished"] == "1" for f in flows)
    assert all(int(f["retransmits"]) == 0 for f in flows)
    # 8000 packets into one port from t = 10: the last arrives no later than 8000 + a few
    # timeslots after the first could (the link is never idle once the incast has started).
    assert max(int(f["finish_timeslot"]) for f in flows) <= 10 + 8000 + 20
    q_hp, q_dc = port0(hp), port0(dc)
    assert float(q_hp["p50_pkts"]) <= 8, q_hp
    assert float(q_hp["p99_pkts"]) < float(q_dc["p50_pkts"]), (q_hp, q_dc)
    assert float(q_dc["p50_pkts"]) >= 15, q_dc
    # The same senders behind switches that stamp nothing see U = 0 and only grow: the port
    # fills, drops, and the run ends at its cap with flows unfinished.
    q_none = port0(tmp_path / "no_telemetry" / "no_telemetry")
    assert float(q_none["p99_pkts"]) >= 200 and float(q_none["mean_pkts"]) > 5 * float(q_hp["mean_pkts"]), q_none
    none = list(csv.DictReader(open(tmp_path / "no_telemetry" / "no_telemetry" / "flows.csv")))
    assert sum(int(f["lost_pkts"]) for f in none) > 1000


def test_hpcc_same_outputs_on_1_and_2_cores(tmp_path):
    cfg = setup(tmp_path)
    cfg.write_text(CONFIG.replace("topology: {kind: single_rack, endpoints: 9}",
                                  "topology: {kind: leaf_spine, racks: 2, endpoints_per_rack: 5, spines: 2}"))
    outs = []
    for cores in ("1", "2"):
        p = run(cfg, tmp_path / f"c{cores}", "--variant", "hpcc", "--cores", cores)
        assert p.returncode == 0, p.stderr
        outs.append((tmp_path / f"c{cores}" / "hpcc" / "flows.csv").read_text())
    assert outs[0] == outs[1]
    assert all(r["finished"] == "1" for r in csv.DictReader(outs[0].splitlines()))


def test_bad_hpcc_parameters_are_named(tmp_path):
    cfg = setup(tmp_path)
    cfg.write_text(CONFIG.replace("transport: {kind: hpcc, min_rto_us: 1000}",
                                  "transport: {kind: hpcc, min_rto_us: 1000, hpcc_eta: 2}"))
    p = run(cfg, tmp_path / "bad", "--variant", "hpcc")
    assert p.returncode == 2 and "hpcc_eta" in p.stderr, p.stderr
    cfg.write_text(CONFIG.replace("base_rtt_timeslots: 4", "base_rtt_timeslots: 0"))
    p = run(cfg, tmp_path / "bad2", "--variant", "hpcc")
    assert p.returncode == 2 and "base_rtt_timeslots" in p.stderr, p.stderr
