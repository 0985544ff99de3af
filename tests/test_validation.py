"""The ns-3 validation's own tooling (docs/validation.md), without ns-3:
validation/compare.py's verdicts on hand-made runs, the part of flexplane
that validation/ns3_star.cc compiles in (the flow-trace parser, the fat
tree's routing tables and flow hash) still building as C++17, the newest
standard ns-3 3.37's headers accept, the fat tree's routes there being
flexplane's own (checked against a flexplane run's per-port counts), and the
fat-tree scenarios running in flexplane."""
from __future__ import annotations

import csv
import random
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
    assert {"fat-tree-k8-dctcp", "fat-tree-k16-dctcp"} <= set(names), names
    for line in lines:
        name, args = line.split(":", 1)
        assert "--hosts=" in args or "--topology=fat-tree" in args, line
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


def build_fat_tree_paths(tmp_path: Path) -> Path:
    """validation/fat_tree_paths.cc, built as ns3_star.cc is (C++17)."""
    exe = tmp_path / "fat_tree_paths"
    r = subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Werror", "-I", str(REPO),
                        str(REPO / "validation" / "fat_tree_paths.cc"),
                        str(REPO / "emulator" / "workload" / "flow_trace.cc"), "-o", str(exe)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


def test_the_ns3_fat_tree_routes_every_flow_as_flexplane_does(tmp_path: Path) -> None:
    """validation/fat_tree_routes.h (what the ns-3 fat tree forwards by)
    against flexplane itself: a k = 4 tree, 40 flows spread out in time so
    that nothing is lost or resent; every router port carries in flexplane
    exactly the data packets of the flows whose path the header gives through
    it. A port, an uplink choice or a salt that differed would move packets
    between ports."""
    rng = random.Random(5)
    rows = ["flow_id,src,dst,size_pkts,start_timeslot"]
    for i in range(40):
        src = rng.randrange(16)
        dst = rng.randrange(15)
        dst += dst >= src
        rows.append(f"{i},{src},{dst},{rng.randint(1, 60)},{i * 150}")
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    cfg = tmp_path / "k4.yaml"
    cfg.write_text(f"""description: fat-tree routes check
seed: 13
network: {{link_rate_gbps: 10, abstract_packet_bytes: 1500}}
topology: {{kind: fat_tree, k: 4, link_latency_timeslots: 1}}
routers:
  default: {{scheme: dctcp, queue_manager: {{k_pkts: 65, capacity_pkts: 256}}}}
workload: {{kind: trace, trace: {trace}}}
transport: {{kind: dctcp, initial_cwnd_pkts: 10, min_rto_us: 1000}}
run: {{duration_ms: 10, drain_ms: 10, cores: 1}}
output: {{dir: {tmp_path / "out"}}}
""")
    r = subprocess.run([str(EMULATOR), "run", str(cfg), "-q"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    flows = list(csv.DictReader((tmp_path / "out" / "flows.csv").open()))
    assert len(flows) == 40 and all(f["finished"] == "1" and f["retransmits"] == "0" for f in flows)
    seen = {(c["router"], c["port"]): int(c["dequeued"])
            for c in csv.DictReader((tmp_path / "out" / "counters.csv").open()) if int(c["dequeued"])}

    paths = build_fat_tree_paths(tmp_path)
    r = subprocess.run([str(paths), "4", str(trace), "ports"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    predicted = {(c["router"], c["port"]): int(c["packets"]) for c in csv.DictReader(r.stdout.splitlines())}
    assert predicted == seen
    # ECMP at work: the edges' and the aggregations' uplinks (ports 2, 3) both carry flows
    assert {p for (router, p) in seen if router.startswith("agg")} >= {"2", "3"}
    assert {p for (router, p) in seen if router.startswith("edge")} >= {"2", "3"}

    r = subprocess.run([str(paths), "4", str(trace), "flows"], capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    assert lines[0] == "flow_id,src,dst,size_pkts,path" and len(lines) == 41
    # a path across pods crosses 5 routers: edge, agg, core, agg, edge
    across = [line for line in lines[1:] if int(line.split(",")[1]) // 4 != int(line.split(",")[2]) // 4]
    assert across and all(len(line.split(",")[4].split(";")) == 5 for line in across)


@pytest.mark.parametrize("k, ms", [(8, "1"), (16, "0.2")])
def test_the_fat_tree_scenarios_replay_their_trace_in_flexplane(k: int, ms: str, tmp_path: Path) -> None:
    """validation/scenarios/flexplane_fat_tree_k<K>.yaml, the flows that start
    in its first `ms` milliseconds (the whole trace is the benchmark, not a
    test): every one finishes, the run stops when done, and occupancy.csv
    names the tree's routers as the ns-3 side does."""
    scenario = REPO / "validation" / "scenarios" / f"flexplane_fat_tree_k{k}.yaml"
    text = scenario.read_text()
    assert "stop_when_done: true" in text and "duration_ms: 5" in text
    cfg = tmp_path / "short.yaml"
    cfg.write_text(text.replace("duration_ms: 5", f"duration_ms: {ms}")
                   .replace("trace: ../traces/", f"trace: {REPO / 'validation' / 'traces'}/"))
    out = tmp_path / "out"
    r = subprocess.run([str(EMULATOR), "run", str(cfg), "--out", str(out), "-q"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    flows = list(csv.DictReader((out / "flows.csv").open()))
    trace = list(csv.DictReader(line for line in (REPO / "validation" / "traces" /
                                                  f"websearch_fat_tree_k{k}.csv").open() if not line.startswith("#")))
    meta = (out / "metadata.yaml").read_text()
    arrivals = int(meta.split("arrival_timeslots: ", 1)[1].split()[0])
    started = [t for t in trace if int(t["start_timeslot"]) < arrivals]
    assert len(started) >= 5 and len(flows) == len(started)
    assert all(f["finished"] == "1" for f in flows)
    assert "end_reason: all_flows_done" in meta
    with (out / "occupancy.csv").open() as f:
        routers = {row["router"] for row in csv.DictReader(f)}
    assert len(routers) == k * k * 5 // 4 and {"edge0_0", "agg0_0", "core0_0"} <= routers


def test_bench_fat_tree_rejects_bad_arguments_before_running_anything(tmp_path: Path) -> None:
    script = REPO / "validation" / "bench_fat_tree.sh"
    for args, message in ((["--rounds", "0"], "--rounds must be a positive integer"),
                          ([str(tmp_path / "none")], "is not an executable"),
                          (["--k", "6"], "no scenario for k = 6")):
        r = subprocess.run([str(script), "--out", str(tmp_path / "out"), *args], capture_output=True, text=True,
                           timeout=60, cwd=REPO)
        assert r.returncode == 2 and message in r.stderr, r.stdout + r.stderr
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("script, args, message", [
    ("htsim_pfc.sh", ["--bogus"], "unknown argument '--bogus'"),
    ("htsim_pfc.sh", ["--htsim-src", "{empty}"], "is not htsim's sim/ folder"),
    ("htsim_websearch.sh", ["--ms", "0"], "--ms: '0' is not a number of ms in (0, 16]"),
    ("htsim_websearch.sh", ["--ms", "17"], "--ms: '17' is not a number of ms in (0, 16]"),
    ("htsim_websearch.sh", ["--seed", "x"], "--seed: 'x' is not a non-negative integer"),
    ("htsim_websearch.sh", ["--k-mark", "0"], "--k-mark: '0' is not a positive integer"),
    ("htsim_websearch.sh", ["--htsim-src", "{empty}"], "is not htsim's sim/ folder"),
    ("htsim_swift.sh", ["--bogus"], "unknown argument '--bogus'"),
    ("htsim_swift.sh", ["--pkts", "1"], "--pkts: '1' is not an integer of at least 2"),
    ("htsim_swift.sh", ["--pkts", "08"], "--pkts: '08' is not an integer of at least 2"),
    ("htsim_swift.sh", ["--htsim-src", "{empty}"], "is not htsim's sim/ folder"),
    ("htsim_dcqcn_causes.sh", ["--bogus"], "unknown argument '--bogus'"),
    ("htsim_dcqcn_causes.sh", ["--scenario", "x"], "--scenario: 'x' is not incast, websearch or both"),
    ("htsim_dcqcn_causes.sh", ["--ms", "0"], "--ms: '0' is not a number of ms in (0, 16]"),
    ("htsim_dcqcn_causes.sh", ["--seed", "x"], "--seed: 'x' is not a non-negative integer"),
    ("htsim_dcqcn_causes.sh", ["--htsim-src", "{empty}"], "is not htsim's sim/ folder"),
])
def test_the_htsim_scripts_reject_bad_arguments_before_building_anything(script: str, args: list[str], message: str,
                                                                        tmp_path: Path) -> None:
    """The htsim comparisons (docs/validation.md) need htsim's source and
    minutes to hours of runs: not run here, but a bad argument must stop them
    before they build or write anything. `{empty}` is a folder that is not
    htsim's; otherwise a stand-in with a datacenter/ folder gets past that check."""
    sim = tmp_path / "sim"
    (sim / "datacenter").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    args = [a.replace("{empty}", str(tmp_path / "empty")) for a in args]
    if "--htsim-src" not in args:
        args = ["--htsim-src", str(sim), *args]
    r = subprocess.run([str(REPO / "validation" / script), "--work", str(tmp_path / "work"), *args],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "work").exists()
