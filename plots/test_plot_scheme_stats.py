"""plots/plot_scheme_stats.py on a synthetic scheme_stats.csv with known means."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parent


def write(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timeslot", "time_us", "router", "port", "queue", "stat", "value"])
        w.writerows(rows)


def test_busiest_series_per_stat_and_variant(tmp_path: Path) -> None:
    # red: port 1 averages 3 (busier than port 0's 1); codel: a per-queue and a per-port stat.
    write(tmp_path / "red" / "scheme_stats.csv",
          [[t, t * 1.2, "tor0", p, 0, "red_avg_pkts", v] for t, p, v in
           [(0, 0, 1), (10, 0, 1), (0, 1, 2), (10, 1, 4)]])
    write(tmp_path / "codel" / "scheme_stats.csv",
          [[0, 0, "tor0", 2, 0, "codel_count", 5], [10, 12, "tor0", 2, 0, "codel_count", 7],
           [0, 0, "spine0", 1, "", "hull_phantom_bytes", 100]])
    r = subprocess.run([sys.executable, str(PLOTS / "plot_scheme_stats.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "scheme_stats.png").stat().st_size > 0
    with (tmp_path / "scheme_stats_summary.csv").open() as f:
        rows = {(x["variant"], x["stat"]): x for x in csv.DictReader(f)}
    assert rows[("red", "red_avg_pkts")]["port"] == "1" and float(rows[("red", "red_avg_pkts")]["mean"]) == 3
    assert float(rows[("codel", "codel_count")]["max"]) == 7
    assert rows[("codel", "hull_phantom_bytes")]["queue"] == ""


def test_no_statistics_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "droptail").mkdir()
    r = subprocess.run([sys.executable, str(PLOTS / "plot_scheme_stats.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no scheme_stats.csv" in r.stderr
