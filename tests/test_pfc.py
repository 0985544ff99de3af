"""PFC through the command line (docs/pfc.md; the router side is
schemes/pfc_test.cc, the engine's emulator/run/pfc_test.cc): configuration
levels merge and `pfc: off` leaves a tier out, the summary line and
metadata.yaml report the pauses, pfc.csv names each port's neighbour, and
plots/plot_all.py draws the pause-time plot beside the usual ones."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"

CONFIG = """
seed: 1
network: {link_rate_gbps: 10}
topology: {kind: leaf_spine, racks: 2, endpoints_per_rack: 4, spines: 1}
routers:
  default: {scheme: droptail, queue_manager: {capacity_pkts: 512}, pfc: {xoff_pkts: 8, xon_pkts: 4}}
  tor: {pfc: {headroom_pkts: 6}}
  spine: {pfc: off}
transport: {kind: reno, min_rto_us: 1000}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 1, drain_ms: 50, occupancy_interval_us: 1.2}
"""


def test_levels_summary_metadata_csv_and_plot(tmp_path: Path) -> None:
    # Hosts 4..7 (rack 1) and 1..3 (rack 0) send 400 packets each to host 0.
    rows = ["flow_id,src,dst,size_pkts,start_timeslot"] + [f"{i},{s},0,400,0" for i, s in enumerate([1, 2, 3, 4, 5, 6, 7])]
    (tmp_path / "incast.csv").write_text("\n".join(rows) + "\n")
    cfg = tmp_path / "pfc.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "results" / "pfc"  # one variant folder, as plot_all wants
    r = subprocess.run([str(BIN), "run", str(cfg), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "drops 0," in r.stdout
    assert "pauses sent" in r.stdout and "(pfc.csv)" in r.stdout
    meta = yaml.safe_load((out / "metadata.yaml").read_text())
    routers = meta["routers"]
    assert "pfc" not in routers["spine0"]                      # `pfc: off` at the tier
    assert routers["tor0"]["pfc"]["xoff_pkts"] == 8          # from default ...
    assert routers["tor0"]["pfc"]["headroom_pkts"] == 6      # ... merged with the tier's
    assert meta["results"]["pfc"]["routers"] == 2
    assert meta["results"]["pfc"]["pauses_sent"] > 0
    assert meta["results"]["pfc"]["headroom_overruns"] == 0
    with (out / "pfc.csv").open() as f:
        pfc = list(csv.DictReader(f))
    assert {row["router"] for row in pfc} <= {"tor0", "tor1"}
    paused_hosts = {row["neighbour"] for row in pfc if int(row["pauses_sent"]) > 0}
    assert {"host1", "host2", "host3"} <= paused_hosts      # the receiver's ToR pauses its own senders
    assert all(int(row["pauses_sent"]) == int(row["resumes_sent"]) for row in pfc)
    # The spine has no PFC: tor0 pauses it (frames it honours), it pauses no one.
    assert any(row["router"] == "tor0" and row["neighbour"] == "spine0" and int(row["pauses_sent"]) > 0 for row in pfc)
    p = subprocess.run([sys.executable, str(REPO / "plots" / "plot_all.py"), str(tmp_path / "results")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "results" / "pfc_pause_time.png").stat().st_size > 0
