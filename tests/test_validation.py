"""The ns-3 validation's own tooling (docs/validation.md), without ns-3:
validation/compare.py's verdicts on hand-made runs, and the part of
flexplane that validation/ns3_star.cc compiles in (the flow-trace parser)
still building as C++17, the newest standard ns-3 3.37's headers accept."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
COMPARE = REPO / "validation" / "compare.py"
EMULATOR = REPO / "build" / "flexplane-emulator"


def write_run(d: Path, fcts: dict[int, list[float]], queue: list[int], extra: str = "") -> Path:
    """A run folder: flows.csv (size -> FCTs) and occupancy.csv (one port)."""
    d.mkdir(parents=True)
    rows = ["flow_id,size_pkts,fct_us,finished" + extra]
    i = 0
    for size, values in fcts.items():
        for v in values:
            rows.append(f"{i},{size},{v},1" + ("," + str(v + 100) if extra else ""))
            i += 1
    (d / "flows.csv").write_text("\n".join(rows) + "\n")
    occ = ["timeslot,time_us,router,port,packets,bytes"]
    occ += [f"{t},{t * 1.2:.1f},tor0,0,{q},{q * 1500}" for t, q in enumerate(queue)]
    (d / "occupancy.csv").write_text("\n".join(occ) + "\n")
    return d


def compare(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(COMPARE), "compare", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def test_compare_passes_within_tolerance_and_fails_outside(tmp_path: Path) -> None:
    queue = [0] * 50 + [40] * 49 + [100]
    ns3 = write_run(tmp_path / "ns3", {5: [100.0, 200.0, 300.0], 50: [1000.0, 2000.0]}, queue,
                    extra=",fct_with_handshake_us")
    near = write_run(tmp_path / "near", {5: [110.0, 210.0, 320.0], 50: [1050.0, 2100.0]}, queue)
    r = compare(near, ns3)
    assert r.returncode == 0, r.stdout + r.stderr
    # means 213.3 vs 200 (+6.7 %), p99 (nearest rank: the maximum of 3) 320 vs 300
    assert "| 1-10 | 3/3 | 213.3 / 200.0 | +6.7% | 320.0 / 300.0 | +6.7% |" in r.stdout, r.stdout
    assert "OUTSIDE" not in r.stdout
    # 2 buckets with flows on both sides x (mean, p99); queue median and p99
    assert "4 of 4 FCT values within 15%, 2 of 2 queue values within 20%" in r.stdout, r.stdout

    far = write_run(tmp_path / "far", {5: [110.0, 210.0, 320.0], 50: [1500.0, 3000.0]}, queue)
    r = compare(far, ns3)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "| 11-100 | 2/2 | 2250.0 / 1500.0 | **+50.0%** |" in r.stdout, r.stdout
    assert "OUTSIDE tolerance" in r.stdout
    assert "2 of 4 FCT values within 15%" in r.stdout, r.stdout  # 11-100: mean and p99 (3000 vs 2000) +50 %

    # Against ns-3's FCT from the flow's start (handshake included: +100 us each here).
    r = compare(near, ns3, "--ns3-fct", "fct_with_handshake_us")
    assert "| 1-10 | 3/3 | 213.3 / 300.0 | **-28.9%** |" in r.stdout, r.stdout
    assert r.returncode == 1


def test_compare_names_a_missing_column(tmp_path: Path) -> None:
    queue = [0, 1]
    ns3 = write_run(tmp_path / "ns3", {5: [100.0]}, queue)
    fp = write_run(tmp_path / "fp", {5: [100.0]}, queue)
    r = compare(fp, ns3, "--ns3-fct", "fct_with_handshake_us")
    assert r.returncode != 0
    assert "has no column 'fct_with_handshake_us'" in r.stdout + r.stderr


def test_the_code_ns3_star_compiles_in_builds_as_cxx17() -> None:
    """run_ns3.sh compiles emulator/workload/flow_trace.cc (and what it
    includes: api/flow.h, api/packet.h) with -std=c++17; a C++20-only
    construct there breaks the ns-3 side while every other build passes."""
    r = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-I", str(REPO),
                        str(REPO / "emulator" / "workload" / "flow_trace.cc")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("scenario", sorted((REPO / "validation" / "scenarios").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_flexplane_scenario_file_checks(scenario: Path) -> None:
    """Each validation scenario (every variant, and the trace it names)
    passes `flexplane-emulator check`."""
    r = subprocess.run([str(EMULATOR), "check", str(scenario)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok: ") >= 1, r.stdout


def test_every_ns3_scenario_has_arguments_and_its_trace_exists() -> None:
    r = subprocess.run([str(REPO / "validation" / "run_ns3.sh"), "--list"], capture_output=True, text=True,
                       timeout=60, cwd=REPO)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    names = [line.split(":", 1)[0] for line in lines]
    assert {"websearch-dctcp-dctcp-preconnect", "bidir3-dctcp-dctcp", "incast-dctcp-dctcp"} <= set(names), names
    for line in lines:
        name, args = line.split(":", 1)
        assert "--hosts=" in args, line
        traces = [a.split("=", 1)[1] for a in args.split() if a.startswith("--trace=")]
        assert traces or "--incast-senders=" in args, line
        for t in traces:
            assert (REPO / t).is_file(), f"{name}: {t} is missing"


def test_compare_sums_rtos_and_ecn_cuts_per_bucket_when_both_runs_count_them(tmp_path: Path) -> None:
    queue = [0, 1]
    runs = {}
    for name, events in (("fp", [(1, 0), (2, 5), (0, 7)]), ("ns3", [(0, 1), (4, 0), (3, 9)])):
        d = write_run(tmp_path / name, {5: [100.0, 100.0], 50: [1000.0]}, queue)
        lines = (d / "flows.csv").read_text().splitlines()
        rows = [lines[0] + ",timeouts,ecn_reductions"]
        rows += [f"{line},{rto},{cuts}" for line, (rto, cuts) in zip(lines[1:], events)]
        (d / "flows.csv").write_text("\n".join(rows) + "\n")
        runs[name] = d
    r = compare(runs["fp"], runs["ns3"])
    assert "| 1-10 | 3 / 4 | 5 / 1 |" in r.stdout, r.stdout      # flows 0 and 1 of each run
    assert "| 11-100 | 0 / 3 | 7 / 9 |" in r.stdout, r.stdout
    assert "| >10000 | 0 / 0 | 0 / 0 |" in r.stdout, r.stdout

    plain = write_run(tmp_path / "plain", {5: [100.0, 100.0], 50: [1000.0]}, queue)
    assert "RTOs" not in compare(plain, runs["ns3"]).stdout


def test_ensemble_pools_runs_and_reports_each_sides_spread(tmp_path: Path) -> None:
    """compare.py ensemble: each side's flows pooled (mean over every flow,
    p99 by nearest rank over all), the verdict on the pooled values, and per
    side the range of the single runs' values and how far its ends lie from
    the pooled value."""
    queue = [0] * 50 + [40] * 50
    fp = [write_run(tmp_path / f"fp{i}", {5: v}, queue) for i, v in enumerate(([100.0, 200.0], [140.0, 160.0]))]
    ns = [write_run(tmp_path / f"ns{i}", {5: v}, queue) for i, v in enumerate(([120.0, 180.0], [100.0, 220.0]))]
    r = subprocess.run([sys.executable, str(COMPARE), "ensemble", "--flexplane", *map(str, fp),
                        "--ns3", *map(str, ns)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    # pooled: flexplane 100, 200, 140, 160 (mean 150, p99 200); ns-3 120, 180, 100, 220 (155, 220)
    assert "| 1-10 | 4/4 | 150.0 / 155.0 | -3.2% | 200.0 / 220.0 | -9.1% |" in r.stdout, r.stdout
    # single runs: flexplane means 150 and 150 (0 %), ns-3 150 and 160 (3 % from 155);
    # p99s: flexplane 200 and 160 (-20 % from 200), ns-3 180 and 220 (-18 % from 220)
    assert "| 1-10 | 150.0-150.0 (0%) | 150.0-160.0 (3%) | 160.0-200.0 (20%) | 180.0-220.0 (18%) |" in r.stdout, \
        r.stdout
    # halves (one run each here): they overlap on both values, so nothing is marked apart
    assert "| 1-10 | 150.0, 150.0 | 150.0, 160.0 | 200.0, 160.0 | 180.0, 220.0 |" in r.stdout, r.stdout
    assert "2 of 2 FCT values within 15%" in r.stdout, r.stdout
    # a flexplane side whose halves both lie below ns-3's: marked apart
    low = [write_run(tmp_path / f"low{i}", {5: v}, queue) for i, v in enumerate(([50.0, 60.0], [55.0, 65.0]))]
    r = subprocess.run([sys.executable, str(COMPARE), "ensemble", "--flexplane", *map(str, low),
                        "--ns3", *map(str, ns)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "| 1-10 | 55.0, 60.0 | 150.0, 160.0 (apart) | 60.0, 65.0 | 180.0, 220.0 (apart) |" in r.stdout, r.stdout
    # one side only: an error, not a verdict
    r = subprocess.run([sys.executable, str(COMPARE), "ensemble", "--flexplane", str(fp[0])],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--ns3" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--runs", "0", "websearch-newreno-droptail", "newreno-droptail"], "--runs must be a positive integer"),
    (["--jitter", "x", "websearch-newreno-droptail", "newreno-droptail"], "--jitter must be a whole number"),
    (["incast-dctcp-dctcp", "dctcp-dctcp"], "does not replay the web-search trace"),
    (["websearch-no-such", "dctcp-dctcp"], "unknown ns-3 scenario 'websearch-no-such'"),
    (["websearch-dctcp-dctcp", "no-such-variant"], "has no variant 'no-such-variant'"),
])
def test_ensemble_script_rejects_bad_arguments_before_running_anything(args: list[str], message: str,
                                                                       tmp_path: Path) -> None:
    r = subprocess.run([str(REPO / "validation" / "ensemble.sh"), "--out", str(tmp_path / "out"), *args],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
