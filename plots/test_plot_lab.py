"""Tests for the lab's analysis and plots on synthetic results with known
statistics (no root, no emulator).

    .venv/bin/python -m pytest -q plots/test_plot_lab.py
"""
from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PLOTS = Path(__file__).resolve().parent
sys.path.insert(0, str(PLOTS.parent / "experiments"))

from flexlab import analysis  # noqa: E402


def test_jain_percentile_and_stats():
    assert analysis.jain([5, 5, 5, 5]) == pytest.approx(1.0)
    assert analysis.jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert analysis.jain([1, 3]) == pytest.approx(16 / 20)
    assert math.isnan(analysis.jain([0, 0]))
    xs = list(range(1, 101))
    assert analysis.percentile(xs, 50) == pytest.approx(50.5)
    assert analysis.percentile(xs, 99) == pytest.approx(99.01)
    s = analysis.stats([1.0, 2.0, 3.0, 10.0])
    assert (s["n"], s["mean"], s["max"]) == (4, 4.0, 10.0)


def test_size_buckets_per_size_for_a_mix_and_decades_otherwise():
    assert [b[0] for b in analysis.size_buckets([1500, 10**6, 1500])] == ["1.5 KB", "1 MB"]
    decades = analysis.size_buckets(list(range(1000, 50_000_000, 7919)))
    assert [b[0] for b in decades] == ["<= 10 KB", "10 KB - 100 KB", "100 KB - 1 MB", "1 MB - 10 MB", "> 10 MB"]


def test_fairness_counts_a_silent_flow_as_zero():
    samples = [{"time_s": 1.0, "flow": 0, "mbps": 10.0}, {"time_s": 1.0, "flow": 1, "mbps": 10.0},
               {"time_s": 2.0, "flow": 0, "mbps": 20.0}]
    series = analysis.fairness_series(samples, 2)
    assert series[0] == (1.0, pytest.approx(1.0), 20.0)
    assert series[1] == (2.0, pytest.approx(0.5), 20.0)


def make_rpc_run(root: Path, variant: str, order: int, short_ms: list[float], long_ms: list[float],
                 queue: list[int]) -> None:
    run = root / variant / "r0"
    (run / "workload").mkdir(parents=True)
    (run / "emulator").mkdir()
    config = {"topology": {"kind": "single_rack", "endpoints": 3}, "warmup_s": 0, "duration_s": 10,
              "workload": {"kind": "rpc", "clients": [0], "servers": [1, 2]},
              "analysis": {"short_max_bytes": 100_000, "long_min_bytes": 1_000_000}}
    meta = {"variant": variant, "repetition": 0, "order": order, "hosts": 3, "experiment_dir": str(root),
            "workload_start_s": 1.0, "config": config}
    (run / "run.yaml").write_text(yaml.safe_dump(meta))
    (run / "summary.yaml").write_text("{}\n")
    with open(run / "workload" / "h0.rpc.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["request", "tag", "server", "size_bytes", "dscp", "start_real_ns", "connect_us", "first_byte_us",
                    "fct_us", "received_bytes", "status", "errno"])
        for i, ms in enumerate(short_ms):
            w.writerow([i, 0, "x", 1500, -1, 0, 1, 1, ms * 1000, 1500, "ok", 0])
        for i, ms in enumerate(long_ms):
            w.writerow([100 + i, 0, "x", 1_000_000, -1, 0, 1, 1, ms * 1000, 1_000_000, "ok", 0])
        w.writerow([999, 0, "x", 1500, -1, 0, "", "", "", 0, "unfinished", 0])  # not counted
    with open(run / "emulator" / "occupancy.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timeslot", "time_us", "router", "port", "packets", "bytes"])
        for i, q in enumerate(queue):  # workload from 1 s to 11 s: samples at 1.5, 2.5, ... s
            w.writerow([i, (1.5 + i) * 1e6, "tor0", 0, q, q * 1500])
        w.writerow([99, 0.5e6, "tor0", 0, 999, 0])    # before the workload: left out
        w.writerow([98, 2.0e6, "tor0", 1, 777, 0])    # a port that faces no receiver: left out


def read(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(open(path)))


def test_plot_lab_on_a_synthetic_rpc_experiment(tmp_path):
    make_rpc_run(tmp_path, "fifo", 0, short_ms=[float(x) for x in range(1, 11)], long_ms=[100, 200, 300],
                 queue=[0, 10, 20, 30, 40])
    make_rpc_run(tmp_path, "prio", 1, short_ms=[1.0] * 4, long_ms=[400.0], queue=[1, 1, 1])
    p = subprocess.run([sys.executable, str(PLOTS / "plot_lab.py"), str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for stem in ("fct_by_size", "fct_tradeoff", "queue_timeseries", "queue_cdf"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 5000
    rows = read(tmp_path / "fct_by_size.csv")
    fifo_short = next(r for r in rows if r["variant"] == "fifo" and r["bucket"] == "1.5 KB")
    assert int(fifo_short["n"]) == 10
    assert float(fifo_short["mean_ms"]) == pytest.approx(5.5)
    assert float(fifo_short["p99_ms"]) == pytest.approx(9.91)
    trade = {r["variant"]: r for r in read(tmp_path / "fct_tradeoff.csv")}
    assert float(trade["fifo"]["long_mean_ms"]) == pytest.approx(200)
    assert float(trade["prio"]["short_mean_ms"]) == pytest.approx(1.0)
    assert [r["variant"] for r in read(tmp_path / "fct_tradeoff.csv")] == ["fifo", "prio"]  # run order kept
    cdf = [r for r in read(tmp_path / "queue_cdf.csv") if r["variant"] == "fifo"]
    assert [int(r["packets"]) for r in cdf] == [0, 10, 20, 30, 40]
    assert float(cdf[-1]["cdf"]) == pytest.approx(1.0)
    ts = [r for r in read(tmp_path / "queue_timeseries.csv") if r["variant"] == "fifo"]
    assert [float(r["time_s"]) for r in ts] == pytest.approx([0.5, 1.5, 2.5, 3.5, 4.5])


def test_plot_lab_names_a_folder_without_runs(tmp_path):
    p = subprocess.run([sys.executable, str(PLOTS / "plot_lab.py"), str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 1
    assert "no finished runs" in p.stderr
