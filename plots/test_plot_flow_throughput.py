"""plots/plot_flow_throughput.py on synthetic flows.csv files with known throughputs."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parent
HEADER = ["flow_id", "size_bytes", "fct_us", "finished", "retransmits", "lost_pkts"]


def write(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)


def test_throughput_per_variant(tmp_path: Path) -> None:
    # 3 MB in 2400 us = 10 Gbit/s, in 4800 us = 5; an unfinished flow is left out of the quantiles.
    write(tmp_path / "ecmp" / "flows.csv",
          [[0, 3000000, 2400, 1, 0, 0], [1, 3000000, 4800, 1, 2, 0], [2, 3000000, "", 0, 5, 1]])
    write(tmp_path / "spray" / "flows.csv", [[0, 3000000, 2400, 1, "", ""], [1, 3000000, 3000, 1, "", ""]])
    r = subprocess.run([sys.executable, str(PLOTS / "plot_flow_throughput.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "flow_throughput.png").stat().st_size > 0
    with (tmp_path / "flow_throughput_summary.csv").open() as f:
        rows = {x["variant"]: x for x in csv.DictReader(f)}
    assert rows["ecmp"]["flows"] == "3" and rows["ecmp"]["finished"] == "2"
    assert float(rows["ecmp"]["min_gbps"]) == 5 and float(rows["ecmp"]["max_gbps"]) == 10
    assert rows["ecmp"]["retransmits"] == "7" and rows["ecmp"]["lost_pkts"] == "1"
    assert float(rows["spray"]["min_gbps"]) == 8 and rows["spray"]["retransmits"] == "0"
    assert "ecmp" in r.stdout and "min 5.00" in r.stdout


def test_no_flows_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = subprocess.run([sys.executable, str(PLOTS / "plot_flow_throughput.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "no flows.csv" in r.stderr
