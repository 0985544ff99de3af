"""plots/plot_collective.py on synthetic collective.csv files with known iteration times."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parent
HEADER = ["iteration", "flows", "finished", "start_timeslot", "end_timeslot", "start_us", "end_us", "comm_us",
          "iteration_us"]


def write(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)


def test_iteration_times_per_variant(tmp_path: Path) -> None:
    # ring: two iterations of 100 and 300 us; tree: one done, the second unfinished (empty times).
    write(tmp_path / "ring" / "collective.csv",
          [[0, 4, 4, 0, 80, 0, 100, 100, 100], [1, 4, 4, 90, 240, 108, 400, 292, 300]])
    write(tmp_path / "tree" / "collective.csv",
          [[0, 2, 2, 0, 40, 0, 50, 50, 50], [1, 2, 1, 50, "", 60, "", "", ""]])
    r = subprocess.run([sys.executable, str(PLOTS / "plot_collective.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "iteration_times.png").stat().st_size > 0
    with (tmp_path / "collective_summary.csv").open() as f:
        rows = {x["variant"]: x for x in csv.DictReader(f)}
    assert rows["ring"]["completed"] == "2" and float(rows["ring"]["mean_iteration_us"]) == 200
    assert float(rows["ring"]["min_iteration_us"]) == 100 and float(rows["ring"]["max_iteration_us"]) == 300
    assert float(rows["ring"]["mean_comm_us"]) == 196
    assert rows["tree"]["iterations"] == "2" and rows["tree"]["completed"] == "1"
    assert "ring" in r.stdout and "mean 200.0" in r.stdout


def test_no_collective_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = subprocess.run([sys.executable, str(PLOTS / "plot_collective.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "no collective.csv" in r.stderr
