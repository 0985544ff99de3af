"""Every config shipped in experiments/configs passes `flexplane-emulator
check` (every variant), so a parameter renamed or removed cannot leave a
documented experiment broken; and the congestion-control comparison runs
to completion in each variant."""
from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"
CONFIGS = sorted((REPO / "experiments" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_shipped_config_checks(config):
    p = subprocess.run([str(BIN), "check", str(config)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_datacenter_transports_every_flow_finishes(tmp_path):
    cfg = REPO / "experiments" / "configs" / "datacenter_transports.yaml"
    p = subprocess.run([str(BIN), "run", str(cfg), "--out", str(tmp_path), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for v in ("dctcp", "swift", "swift_paced", "dcqcn", "hpcc"):
        rows = list(csv.DictReader(open(tmp_path / v / "flows.csv")))
        assert len(rows) > 100 and all(r["finished"] == "1" for r in rows), v
