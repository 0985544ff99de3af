"""Tests for the plot scripts on synthetic results with known statistics.

    .venv/bin/python -m pytest -q plots/test_plots.py
"""
from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

PLOTS = Path(__file__).resolve().parent
FLOW_HEADER = ["flow_id", "src", "dst", "size_pkts", "size_bytes", "start_timeslot", "finish_timeslot", "start_us",
               "fct_us", "ideal_fct_us", "slowdown", "finished", "delivered_pkts", "marked_pkts"]
OCC_HEADER = ["timeslot", "time_us", "router", "port", "packets", "bytes"]

# (size_pkts, slowdown or None for an unfinished flow)
Flow = Tuple[int, object]


def droptail_flows() -> List[Flow]:
    flows: List[Flow] = [(5, float(s)) for s in range(1, 101)]   # (0,10]: mean 50.5, p99 99.01
    flows += [(10, None)] * 3                                     # (0,10]: 3 unfinished (edge 10 inclusive)
    flows += [(50, s) for s in (2.0, 4.0, 6.0, 8.0)]              # (10,100]: mean 5, p99 7.94
    flows += [(500, None)]                                        # (100,1000]: none finished, 1 unfinished
    flows += [(10000, 3.0)]                                       # (1000,10000]: edge inclusive
    flows += [(10001, 7.0)]                                       # >10000
    return flows


def dctcp_flows() -> List[Flow]:
    return [(1, 1.0), (1, 3.0), (11, 2.0), (100, 2.0), (101, 4.0), (20000, 9.0)]


def write_flows(path: Path, flows: Sequence[Flow]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FLOW_HEADER)
        for i, (size, slow) in enumerate(flows):
            done = slow is not None
            ideal = size * 1.2
            w.writerow([i, 0, 1, size, size * 1500, i, (i + 10) if done else "", i * 1.2,
                        (slow * ideal) if done else "", ideal, slow if done else ("nan" if i % 2 else ""),
                        int(done), size if done else 0, 0])


def write_occupancy(path: Path, hot: Tuple[int, int], peak: int) -> None:
    """Routers 0..1, ports 0..2, 100 samples each; every port holds 1 packet except
    `hot`, which ramps 0..peak-1 (mean (peak-1)/2)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(OCC_HEADER)
        for t in range(100):
            for r in range(2):
                for p in range(3):
                    pk = (t * peak // 100) if (r, p) == hot else 1
                    w.writerow([t * 1000, t * 1000 * 1.2, r, p, pk, pk * 1500])


def write_occupancy_binary(path: Path, hot: Tuple[int, int], peak: int) -> None:
    """The same samples as write_occupancy, in the emulator's binary format (routers named "0", "1")."""
    sys.path.insert(0, str(PLOTS))
    from occupancy_io import Occupancy, RouterTrace, write_occupancy_bin
    path.parent.mkdir(parents=True, exist_ok=True)
    occ = Occupancy(1200.0, 1000)
    for r in range(2):
        pk = [(t * peak // 100) if (r, p) == hot else 1 for t in range(100) for p in range(3)]
        occ.routers.append(RouterTrace(str(r), "tor", 3, [t * 1000 for t in range(100)], pk, [x * 1500 for x in pk]))
    write_occupancy_bin(path, occ)


def run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PLOTS / name), *args], capture_output=True, text=True)


def read_summary(path: Path) -> Dict[Tuple[str, str], Dict[str, str]]:
    with open(path, newline="") as fh:
        return {(r["scheme"], r["bucket"]): r for r in csv.DictReader(fh)}


def is_png(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 10_000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    write_flows(tmp_path / "droptail" / "flows.csv", droptail_flows())
    write_flows(tmp_path / "dctcp" / "flows.csv", dctcp_flows())
    write_occupancy(tmp_path / "droptail" / "occupancy.csv", hot=(1, 2), peak=200)
    write_occupancy(tmp_path / "dctcp" / "occupancy.csv", hot=(0, 1), peak=40)
    (tmp_path / "notes").mkdir()  # a folder without CSVs is ignored
    return tmp_path


def check(row: Dict[str, str], n: int, mean: float, p99: float, unfinished: int) -> None:
    assert int(row["n"]) == n
    assert int(row["unfinished"]) == unfinished
    for got, want in ((float(row["mean_slowdown"]), mean), (float(row["p99_slowdown"]), p99)):
        if math.isnan(want):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_plot_all_writes_everything(results: Path) -> None:
    r = run_script("plot_all.py", str(results))
    assert r.returncode == 0, r.stderr
    for png in ("fct_slowdown.png", "queue_timeseries.png", "queue_cdf.png"):
        assert is_png(results / png), png
    s = read_summary(results / "fct_summary.csv")
    assert {k[0] for k in s} == {"droptail", "dctcp"}
    assert len(s) == 2 * 6  # five buckets + "all" per scheme

    nan = math.nan
    check(s["droptail", "(0,10]"], 100, 50.5, 99.01, 3)
    check(s["droptail", "(10,100]"], 4, 5.0, 7.94, 0)
    check(s["droptail", "(100,1000]"], 0, nan, nan, 1)
    check(s["droptail", "(1000,10000]"], 1, 3.0, 3.0, 0)
    check(s["droptail", ">10000"], 1, 7.0, 7.0, 0)
    all_dt = [float(x) for x in range(1, 101)] + [2.0, 4.0, 6.0, 8.0, 3.0, 7.0]
    check(s["droptail", "all"], 106, sum(all_dt) / 106, 98.95, 4)  # p99 at rank 0.99 * 105 = 103.95: 98 + 0.95

    check(s["dctcp", "(0,10]"], 2, 2.0, 1.0 + 0.99 * 2.0, 0)
    check(s["dctcp", "(10,100]"], 2, 2.0, 2.0, 0)
    check(s["dctcp", "(100,1000]"], 1, 4.0, 4.0, 0)
    check(s["dctcp", "(1000,10000]"], 0, nan, nan, 0)
    check(s["dctcp", ">10000"], 1, 9.0, 9.0, 0)
    check(s["dctcp", "all"], 6, 21.0 / 6, 4.0 + 0.95 * 5.0, 0)

    # Representative port = most loaded one; CDF stats over all ports.
    with open(results / "queue_summary.csv", newline="") as fh:
        q = {r["scheme"]: r for r in csv.DictReader(fh)}
    assert (q["droptail"]["router"], q["droptail"]["port"]) == ("1", "2")
    assert (q["dctcp"]["router"], q["dctcp"]["port"]) == ("0", "1")
    assert float(q["droptail"]["port_max_pkts"]) == 198.0
    assert float(q["droptail"]["port_mean_pkts"]) == pytest.approx(sum(t * 2 for t in range(100)) / 100)
    assert float(q["dctcp"]["all_max_pkts"]) == 39.0
    assert float(q["dctcp"]["all_p50_pkts"]) == 1.0


def test_out_dir_buckets_and_port_options(results: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp("out")
    r = run_script("plot_fct.py", str(results), "--out", str(out), "--bucket-edges-pkts", "100")
    assert r.returncode == 0, r.stderr
    assert is_png(out / "fct_slowdown.png")
    assert not (results / "fct_summary.csv").exists()
    s = read_summary(out / "fct_summary.csv")
    assert sorted(b for (sch, b) in s if sch == "dctcp") == ["(0,100]", ">100", "all"]
    check(s["dctcp", ">100"], 2, 6.5, 4.0 + 0.99 * 5.0, 0)

    r = run_script("plot_queues.py", str(results), "--out", str(out), "--port", "0:0", "--log-x")
    assert r.returncode == 0, r.stderr
    assert is_png(out / "queue_timeseries.png") and is_png(out / "queue_cdf.png")
    with open(out / "queue_summary.csv", newline="") as fh:
        assert all((row["router"], row["port"], row["port_max_pkts"]) == ("0", "0", "1.0")
                   for row in csv.DictReader(fh))

    r = run_script("plot_queues.py", str(results), "--out", str(out), "--port", "7:7")
    assert r.returncode == 1 and "no samples for router 7 port 7" in r.stderr


def test_binary_occupancy_reads_and_plots_like_the_csv(results: Path, tmp_path: Path) -> None:
    # The same samples as the fixture's CSVs, in occupancy.bin: identical queue_summary.csv.
    binary = tmp_path / "binary"
    write_occupancy_binary(binary / "droptail" / "occupancy.bin", hot=(1, 2), peak=200)
    write_occupancy_binary(binary / "dctcp" / "occupancy.bin", hot=(0, 1), peak=40)
    sys.path.insert(0, str(PLOTS))
    from occupancy_io import read_long
    csv_cols = read_long(results / "droptail" / "occupancy.csv")
    bin_cols = read_long(binary / "droptail" / "occupancy.bin")
    assert bin_cols == csv_cols
    for d in (results, binary):
        r = run_script("plot_queues.py", str(d))
        assert r.returncode == 0, r.stderr
        assert is_png(d / "queue_timeseries.png") and is_png(d / "queue_cdf.png")
    assert (binary / "queue_summary.csv").read_text() == (results / "queue_summary.csv").read_text()
    # A truncated file is refused, naming it.
    data = (binary / "dctcp" / "occupancy.bin").read_bytes()
    (binary / "dctcp" / "occupancy.bin").write_bytes(data[:-4])
    r = run_script("plot_queues.py", str(binary))
    assert r.returncode == 1 and "occupancy.bin: truncated" in r.stderr


def test_errors_name_the_file(tmp_path: Path) -> None:
    r = run_script("plot_all.py", str(tmp_path))
    assert r.returncode == 1 and "nothing to plot" in r.stderr

    bad = tmp_path / "x" / "flows.csv"
    bad.parent.mkdir()
    bad.write_text("flow_id,size_pkts,finished\n0,3,1\n")
    r = run_script("plot_fct.py", str(tmp_path))
    assert r.returncode == 1 and str(bad) in r.stderr and "slowdown" in r.stderr

    write_flows(bad, [(3, 2.0), (4, 1.0)])
    text = bad.read_text().splitlines()
    text[2] = text[2].replace(",1.0,1,", ",fast,1,")
    bad.write_text("\n".join(text) + "\n")
    r = run_script("plot_fct.py", str(tmp_path))
    assert r.returncode == 1 and f"{bad}:3" in r.stderr and "'fast'" in r.stderr

    write_flows(bad, [(3, 2.0)])
    bad.write_text(bad.read_text().replace(",2.0,1,", ",,1,"))  # finished but no slowdown
    r = run_script("plot_fct.py", str(tmp_path))
    assert r.returncode == 1 and "without a slowdown" in r.stderr
