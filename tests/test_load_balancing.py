"""Load balancers from the command line (issue 26; docs/schemes.md, "Load
balancers"): the permutation config runs, metadata.yaml names each router's
load balancer with its parameters, plots/plot_flow_throughput.py summarises
and plots the runs, and a bad load balancer is refused naming the field."""
from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"
CONFIG = REPO / "experiments" / "configs" / "load_balancing_permutation.yaml"
SCRIPT = REPO / "plots" / "plot_flow_throughput.py"


def test_permutation_runs_are_summarised_per_variant(tmp_path: Path) -> None:
    out = tmp_path / "lb"
    subprocess.run([str(BIN), "run", str(CONFIG), "--variant", "ecmp", "--variant", "flowlet", "--out", str(out),
                    "--quiet"], check=True, timeout=300)
    meta = yaml.safe_load((out / "flowlet" / "metadata.yaml").read_text())
    lb = meta["routers"]["edge0_0"]["load_balancer"]
    assert lb["name"] == "flowlet" and float(lb["gap_us"]) == 50 and int(lb["table_entries"]) == 4096
    assert yaml.safe_load((out / "ecmp" / "metadata.yaml").read_text())["routers"]["core0_0"]["load_balancer"] == {
        "name": "ecmp"}
    assert "flowlet_flowlets" in (out / "flowlet" / "scheme_stats.csv").read_text()
    text = subprocess.run([sys.executable, str(SCRIPT), str(out)], check=True, capture_output=True, text=True,
                          timeout=120).stdout
    assert (out / "flow_throughput.png").stat().st_size > 0
    with (out / "flow_throughput_summary.csv").open() as f:
        summary = {row["variant"]: row for row in csv.DictReader(f)}
    assert summary["ecmp"]["finished"] == "128" and summary["ecmp"]["retransmits"] == "0"
    lines = text.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["ecmp", "flowlet"]
    for line in lines:
        m = re.search(r"flows (\d+)/(\d+) finished .*min ([\d.]+) p10 ([\d.]+) p50 ([\d.]+) mean [\d.]+ max ([\d.]+)",
                      line)
        assert m, line
        assert m.group(1) == m.group(2) == "128"
        lo, p10, p50, hi = (float(m.group(i)) for i in range(3, 7))
        assert 0 < lo <= p10 <= p50 <= hi < 10.0


def test_unknown_load_balancer_is_refused_naming_the_field(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("topology: {kind: fat_tree, k: 4}\n"
                   "routers: {default: {scheme: droptail}, agg: {load_balancer: {name: flowlet, table_entries: 1000}}}\n"
                   "workload: {kind: poisson, load: 0.1, fixed_size_pkts: 10}\n"
                   "run: {duration_ms: 1}\n")
    r = subprocess.run([str(BIN), "check", str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "routers.agg.load_balancer" in r.stderr and "power of two" in r.stderr, r.stderr
    cfg.write_text(cfg.read_text().replace("{name: flowlet, table_entries: 1000}", "sprey"))
    r = subprocess.run([str(BIN), "check", str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "unknown load_balancer 'sprey'" in r.stderr and "least_queue" in r.stderr, r.stderr
