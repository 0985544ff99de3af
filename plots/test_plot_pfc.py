"""plots/plot_pfc.py on synthetic pfc.csv files with known pause counts and times."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parent
HEADER = ["router", "port", "priority", "neighbour", "pauses_sent", "resumes_sent", "paused_sent_us",
          "pauses_received", "paused_us", "max_ingress_pkts", "headroom_overruns"]


def write(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)


def test_pause_time_by_tier(tmp_path: Path) -> None:
    write(tmp_path / "dcqcn" / "pfc.csv", [
        ["edge0_0", 2, 0, "agg0_0", 3, 3, 10.5, 0, 0, 33, 0],
        ["edge1_0", 0, 0, "host4", 1, 1, 2.0, 0, 0, 20, 0],
        ["agg0_0", 0, 0, "edge0_0", 0, 0, 0, 3, 10.5, 0, 0],   # received only: not a pausing port
        ["core0_0", 1, 0, "agg1_0", 2, 2, 4.0, 0, 0, 30, 1],
    ])
    write(tmp_path / "hpcc" / "pfc.csv", [["edge0_0", 2, 0, "agg0_0", 1, 1, 1.0, 0, 0, 17, 0]])
    r = subprocess.run([sys.executable, str(PLOTS / "plot_pfc.py"), str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "pfc_pause_time.png").stat().st_size > 0
    with (tmp_path / "pfc_summary.csv").open() as f:
        rows = {(x["variant"], x["tier"]): x for x in csv.DictReader(f)}
    assert rows[("dcqcn", "edge")]["pauses_sent"] == "4" and rows[("dcqcn", "edge")]["ports"] == "2"
    assert float(rows[("dcqcn", "edge")]["pause_time_us"]) == 12.5
    assert rows[("dcqcn", "agg")]["ports"] == "0"
    assert rows[("dcqcn", "all")]["pauses_sent"] == "6" and float(rows[("dcqcn", "all")]["pause_time_us"]) == 16.5
    assert rows[("dcqcn", "all")]["max_ingress_pkts"] == "33" and rows[("dcqcn", "all")]["headroom_overruns"] == "1"
    assert rows[("hpcc", "all")]["pauses_sent"] == "1"
    assert "pauses sent 6 by 3 ports" in r.stdout


def test_no_pfc_csv_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "lossy").mkdir()
    r = subprocess.run([sys.executable, str(PLOTS / "plot_pfc.py"), str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "no pfc.csv" in r.stderr
