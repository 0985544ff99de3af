"""End-to-end tests of the flexplane-emulator command line: help, listing,
config errors (exit 2 with file:line, field and value), a small run's output
files (docs/output-format.md) and their invariants, and 1- vs 2-core identity."""
from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
# The binaries under test: FLEXPLANE_BIN_DIR (scripts/run_tests.sh sets it), else build/.
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"
WEB_SEARCH = REPO / "experiments" / "data" / "flow-sizes" / "web-search.cdf"
sys.path.insert(0, str(REPO / "plots"))
from occupancy_io import read_long, read_occupancy_bin  # noqa: E402

SMALL = f"""
seed: 3
topology: {{kind: leaf_spine, racks: 2, endpoints_per_rack: 4, spines: 2}}
routers:
  default: {{scheme: droptail, queue_manager: {{capacity_pkts: 32}}}}
workload: {{kind: poisson, load: 0.5, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 2, drain_ms: 2, occupancy_interval_us: 6, packet_log: true}}
"""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def write(tmp: Path, text: str, name: str = "exp.yaml") -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_help_lists_subcommands() -> None:
    r = run("--help")
    assert r.returncode == 0
    for word in ("run", "check", "list"):
        assert word in r.stdout
    r = run("run", "--help")
    assert r.returncode == 0 and "--variant" in r.stdout and "--cores" in r.stdout


def test_list_shows_every_scheme_and_parameter_docs() -> None:
    r = run("list")
    assert r.returncode == 0
    for scheme in ("droptail", "red", "dctcp", "hull", "priority_by_size", "round_robin", "drr", "pfabric",
                   "codel", "pie", "fq_codel", "lstf"):
        assert scheme in r.stdout, scheme
    assert "capacity_pkts" in r.stdout and "k_pkts" in r.stdout
    # Topology kinds and traffic patterns come from their registries too, with their parameters.
    assert "Topology kinds" in r.stdout and "leaf_spine" in r.stdout and "endpoints_per_rack" in r.stdout
    assert "Traffic patterns" in r.stdout and "incast" in r.stdout and "fan_in" in r.stdout
    assert "Collectives" in r.stdout and "ring_allreduce" in r.stdout and "fanout" in r.stdout


def test_no_arguments_is_a_usage_error() -> None:
    assert run().returncode == 2


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"topology": {"kind": "ring"}}, ["topology.kind", "unknown topology kind 'ring'"]),
        ({"topology": {"endpoints_per_rack": "many"}}, ["topology.endpoints_per_rack (topology kind 'leaf_spine')", "'endpoints_per_rack'", "'many'"]),
        ({"routers": {"default": {"scheme": "fancy"}}}, ["unknown scheme 'fancy'", "droptail"]),
        ({"routers": {"default": {"queue_manager": {"capacity_pkts": -1}}}}, ["capacity_pkts", "'-1'"]),
        ({"routers": {"default": {"queue_manager": {"k": 1}}}}, ["unknown parameter 'k'", "capacity_pkts"]),
        ({"routers": {"tor9": {"scheme": "droptail"}}}, ["no router or tier named 'tor9'"]),
        ({"workload": {"load": 7}}, ["workload", "load", "7"]),
        ({"run": {"cores": 0}}, ["run.cores", "'0'"]),
        ({"run": {"lookahead": "maybe"}}, ["run.lookahead", "'maybe'"]),
        ({"colour": "blue"}, ["unknown key 'colour'"]),
        ({"endpoint": {"priority": "vip"}}, ["unknown priority stamp 'vip'"]),
    ],
)
def test_bad_config_exits_2_naming_the_field(tmp_path: Path, change: dict, expected: list[str]) -> None:
    base = yaml.safe_load(SMALL)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged = dict(base[key])
            for k, v in value.items():
                merged[k] = {**merged.get(k, {}), **v} if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
            base[key] = merged
        else:
            base[key] = value
    cfg = write(tmp_path, yaml.safe_dump(base))
    r = run("check", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("error: ")
    assert str(cfg) in r.stderr
    for e in expected:
        assert e in r.stderr, (e, r.stderr)


def test_yaml_syntax_error_and_missing_file(tmp_path: Path) -> None:
    cfg = write(tmp_path, "topology: {kind: single_rack\n")
    r = run("check", str(cfg))
    assert r.returncode == 2 and "YAML syntax error" in r.stderr and f"{cfg}:" in r.stderr
    r = run("run", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and "cannot open" in r.stderr


def test_small_run_writes_documented_outputs_with_consistent_counts(tmp_path: Path) -> None:
    cfg = write(tmp_path, SMALL)
    r = run("run", str(cfg), "--out", str(tmp_path / "out"), "--cores", "1")
    assert r.returncode == 0, r.stderr
    assert "100.0%" in r.stderr  # progress output
    out = tmp_path / "out"
    flows = rows(out / "flows.csv")
    counters = rows(out / "counters.csv")
    packets = rows(out / "packets.csv")
    occupancy = read_long(out / "occupancy.bin")  # the default format
    assert not (out / "occupancy.csv").exists()
    meta = yaml.safe_load((out / "metadata.yaml").read_text())
    assert len(flows) == meta["results"]["flows"] > 0
    assert meta["seed"] == 3 and meta["routers"]["tor0"]["queue_manager"]["capacity_pkts"] == 32
    # The build records the commit it was built from (a commit of this repository, "-dirty" if
    # tracked files had changes), also in --version; "unknown" only outside a git checkout.
    commit = str(meta["git_commit"])
    inside_git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True).returncode == 0
    if inside_git:
        sha = commit.removesuffix("-dirty")
        assert len(sha) == 12, commit
        assert subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", sha + "^{commit}"]).returncode == 0, commit
    assert commit in run("--version").stdout
    finished = [f for f in flows if f["finished"] == "1"]
    assert len(finished) == meta["results"]["finished"]
    for f in finished:
        assert float(f["slowdown"]) >= 1.0 - 1e-9
        assert int(f["delivered_pkts"]) == int(f["size_pkts"])
    for f in flows:
        if f["finished"] == "0":
            assert f["fct_us"] == "" and int(f["delivered_pkts"]) < int(f["size_pkts"])
    # Per-packet log agrees with per-flow records and with the counters.
    delivered = sum(1 for p in packets if p["event"] == "delivered")
    dropped = sum(1 for p in packets if p["event"] == "dropped")
    assert delivered == sum(int(f["delivered_pkts"]) for f in flows)
    assert dropped == sum(int(f["lost_pkts"]) for f in flows) == meta["results"]["drops"]
    for c in counters:
        n = {k: int(v) for k, v in c.items() if k not in ("router",)}
        assert n["arrived"] == n["enqueued"] + n["dropped_on_arrival"]
        assert n["enqueued"] == n["dequeued"] + n["dropped_at_dequeue"] + n["evicted"] + n["backlog_pkts"]
        assert n["dropped_on_arrival"] + n["dropped_at_dequeue"] + n["evicted"] == sum(v for k, v in n.items() if k.startswith("drops_"))
    assert sum(int(c["dropped_on_arrival"]) + int(c["dropped_at_dequeue"]) + int(c["evicted"]) for c in counters) == dropped
    assert set(occupancy["router"]) == {"tor0", "tor1", "spine0", "spine1"}
    # No loss outside a queue in a correct network, and every kind is reported (zeros included).
    losses = rows(out / "losses.csv")
    kinds = {"no_route", "classifier_out_of_range", "link_collision", "no_link", "misdelivered", "unexpected_arrivals"}
    assert {x["kind"] for x in losses} == kinds and all(x["packets"] == "0" for x in losses)
    assert meta["results"]["losses"] == {k: 0 for k in kinds}
    assert not (out / "scheme_stats.csv").exists()  # droptail exports no statistics


def test_scheme_statistics_are_sampled_beside_the_occupancy(tmp_path: Path) -> None:
    # Three 50-packet flows into one endpoint at once: its ToR port builds a queue under RED.
    (tmp_path / "incast.csv").write_text("flow_id,src,dst,size_pkts,start_timeslot\n0,0,3,50,0\n1,1,3,50,0\n2,2,3,50,0\n")
    cfg = write(tmp_path, """
topology: {kind: single_rack, endpoints: 4}
routers: {default: {scheme: red, queue_manager: {min_th_pkts: 2, max_th_pkts: 20}}}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 0.012, drain_ms: 0.3, occupancy_interval_us: 6}
output: {occupancy: csv}
""")
    r = run("run", str(cfg), "--quiet", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    stats = rows(tmp_path / "out" / "scheme_stats.csv")
    occupancy = rows(tmp_path / "out" / "occupancy.csv")
    assert {s["stat"] for s in stats} == {"red_avg_pkts", "red_count"}
    # One value per stat, port and queue at every occupancy sample.
    assert {s["timeslot"] for s in stats} == {o["timeslot"] for o in occupancy}
    assert len(stats) == 2 * len(occupancy)
    assert max(float(s["value"]) for s in stats if s["stat"] == "red_avg_pkts") > 0


def test_live_refuses_more_custom_data_than_a_packet_carries(tmp_path: Path) -> None:
    # The protocol allows 16 bytes; the abstract packet keeps 12. Refused before DPDK starts.
    cfg = write(tmp_path, SMALL)
    for flag in ("--req-custom", "--verdict-custom"):
        r = run("live", str(cfg), flag, "16", "--out", str(tmp_path / "live"), "--", "--no-pci")
        assert r.returncode == 2, r.stderr
        assert f"{flag}: 16 bytes of custom data, but an abstract packet carries 12" in r.stderr
        assert "EAL" not in r.stderr


def test_one_and_two_cores_give_identical_files(tmp_path: Path) -> None:
    cfg = write(tmp_path, SMALL)
    no_lookahead = write(tmp_path, SMALL.replace("run: {", "run: {lookahead: false, "), "no_lookahead.yaml")
    runs = {"1": (cfg, "1"), "2": (cfg, "2"), "2-lockstep": (no_lookahead, "2")}
    for out, (config, cores) in runs.items():
        r = run("run", str(config), "--quiet", "--out", str(tmp_path / out), "--cores", cores)
        assert r.returncode == 0, r.stderr
    meta = yaml.safe_load((tmp_path / "2-lockstep" / "metadata.yaml").read_text())
    assert meta["lookahead"] is False
    for name in ("flows.csv", "counters.csv", "packets.csv", "occupancy.bin", "losses.csv", "occupancy_summary.csv",
                 "flows_summary.csv"):
        for out in ("2", "2-lockstep"):
            assert (tmp_path / "1" / name).read_bytes() == (tmp_path / out / name).read_bytes(), (out, name)


def test_variants_run_into_their_own_folders_and_can_be_selected(tmp_path: Path) -> None:
    cfg = write(tmp_path, SMALL + "variants:\n  a: {}\n  b: {routers: {default: {scheme: pfabric}}}\n")
    r = run("run", str(cfg), "--quiet", "--out", str(tmp_path / "res"), "--variant", "b")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "res" / "b" / "flows.csv").exists()
    assert not (tmp_path / "res" / "a").exists()
    meta = yaml.safe_load((tmp_path / "res" / "b" / "metadata.yaml").read_text())
    assert meta["routers"]["tor0"]["scheme"] == "pfabric"
    assert meta["endpoint_priority"] == "remaining_size"
    r = run("run", str(cfg), "--variant", "zzz")
    assert r.returncode == 2 and "no variant named 'zzz'" in r.stderr


def test_router_levels_override_and_a_new_scheme_starts_fresh(tmp_path: Path) -> None:
    # The example of docs/config.md: parameters given for dctcp at `default`
    # must not leak into the spine, which switches to red.
    cfg = write(tmp_path, SMALL.replace(
        "routers:\n  default: {scheme: droptail, queue_manager: {capacity_pkts: 32}}",
        "routers:\n"
        "  default: {scheme: dctcp, queue_manager: {k_pkts: 20}}\n"
        "  spine: {scheme: red, queue_manager: {ecn: true, min_th_pkts: 50, max_th_pkts: 150}}\n"
        "  tor1: {classifier: {name: by_source, num_queues: 4}, scheduler: drr}\n"))
    r = run("run", str(cfg), "--quiet", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    routers = yaml.safe_load((tmp_path / "out" / "metadata.yaml").read_text())["routers"]
    assert routers["tor0"]["queue_manager"]["name"] == "dctcp" and routers["tor0"]["queue_manager"]["k_pkts"] == 20
    assert routers["spine1"]["queue_manager"]["name"] == "red" and routers["spine1"]["queue_manager"]["ecn"] is True
    assert routers["spine1"]["queue_manager"]["min_th_pkts"] == 50
    assert routers["tor1"]["classifier"]["name"] == "by_source" and routers["tor1"]["scheduler"]["name"] == "drr"
    assert routers["tor1"]["queue_manager"]["k_pkts"] == 20  # tor1 keeps dctcp from default


def test_trace_replay_gives_the_hand_derived_per_packet_outcomes(tmp_path: Path) -> None:
    # Same scenario as engine_test.cc, through files: 3 endpoints on one ToR,
    # DropTail of 2 packets, flows 0 (0->2) and 1 (1->2) of 3 packets at t=0;
    # a timeslot's arrivals are taken in port order rotated by the timeslot.
    # t1: queue [1.0 0.0], send 1.0; t2: 1.1 dropped, send 0.0; t3: 0.2 dropped,
    # send 0.1; t4: send 1.2. Each packet arrives one timeslot after it is sent.
    (tmp_path / "flows.trace").write_text(
        "# flow_id,src,dst,size_pkts,start_timeslot\n"
        "flow_id,src,dst,size_pkts,start_timeslot\n0,0,2,3,0\n1,1,2,3,0\n")
    cfg = write(tmp_path, """
topology: {kind: single_rack, endpoints: 3}
routers: {default: {scheme: droptail, queue_manager: {capacity_pkts: 2}}}
workload: {kind: trace, trace: flows.trace}
run: {duration_ms: 0.0012, drain_ms: 0.012, packet_log: true}
""")
    r = run("run", str(cfg), "--quiet", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "out" / "packets.csv").read_text().splitlines()
    assert lines == [
        "timeslot,event,flow,seq,src,dst,router,port,reason,ce",
        "2,delivered,1,0,1,2,,,,0",
        "2,dropped,1,1,1,2,tor0,2,queue_full,",
        "3,delivered,0,0,0,2,,,,0",
        "3,dropped,0,2,0,2,tor0,2,queue_full,",
        "4,delivered,0,1,0,2,,,,0",
        "5,delivered,1,2,1,2,,,,0",
    ]
    flows = rows(tmp_path / "out" / "flows.csv")
    assert [f["finished"] for f in flows] == ["0", "0"]  # each lost one packet
    assert [f["delivered_pkts"] for f in flows] == ["2", "2"]
    assert [f["lost_pkts"] for f in flows] == ["1", "1"]


# ---- output folder, occupancy formats and summaries, fat tree (issue #13 items 3 and 4)

def nearest_rank(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[max(1, math.ceil(q * len(v))) - 1]


def test_an_unwritable_output_folder_is_reported_before_the_run(tmp_path: Path) -> None:
    cfg = write(tmp_path, SMALL.replace("duration_ms: 2", "duration_ms: 50"))
    r = run("run", str(cfg), "--out", "/proc/x")
    assert r.returncode == 2
    assert "error: output folder /proc/x" in r.stderr and "cannot" in r.stderr
    assert "%" not in r.stderr and r.stdout == ""  # no progress line, no summary: nothing ran
    # A file where the folder should be.
    (tmp_path / "taken").write_text("")
    r = run("run", str(cfg), "--out", str(tmp_path / "taken"))
    assert r.returncode == 2 and "cannot create it" in r.stderr
    # Read-only folder (root ignores permissions, so only where they apply) and one bad variant of two:
    # every run's folder is checked before the first run starts.
    two = write(tmp_path, SMALL + f"output: {{dir: {tmp_path / 'res'}}}\nvariants:\n  a: {{}}\n  b: {{}}\n", "two.yaml")
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "b").write_text("")  # variant b's folder is a file
    r = run("run", str(two), "--quiet")
    assert r.returncode == 2 and f"output folder {tmp_path / 'res' / 'b'}" in r.stderr
    assert not (tmp_path / "res" / "a" / "flows.csv").exists()
    # replay refuses the same way, before reading the arrivals
    r = run("replay", str(cfg), "--arrivals", str(tmp_path / "none.csv"), "--out", "/proc/x")
    assert r.returncode == 2 and "output folder /proc/x" in r.stderr


def test_occupancy_formats_hold_the_same_samples_and_the_summaries_need_none(tmp_path: Path) -> None:
    # Incasts: 0-3 and 5-6 into endpoint 4, then 4-6 into 0, so ToR and spine ports queue.
    trace = ["flow_id,src,dst,size_pkts,start_timeslot"]
    for i, (src, dst, start) in enumerate([(0, 4, 0), (1, 4, 0), (2, 4, 10), (3, 4, 20), (5, 4, 30), (6, 4, 30),
                                           (4, 0, 400), (5, 0, 400), (6, 0, 410), (7, 2, 500)]):
        trace.append(f"{i},{src},{dst},{60 + 7 * i},{start}")
    (tmp_path / "incast.csv").write_text("\n".join(trace) + "\n")
    base = SMALL.replace("packet_log: true", "packet_log: false").replace(
        f"{{kind: poisson, load: 0.5, size_cdf: {WEB_SEARCH}}}", "{kind: trace, trace: incast.csv}").replace(
        "capacity_pkts: 32", "capacity_pkts: 1024")  # queues build, nothing is dropped: every flow finishes
    outs = {}
    for fmt in ("binary", "csv", "none"):
        cfg = write(tmp_path, base + f"output: {{occupancy: {fmt}}}\n", f"{fmt}.yaml")
        r = run("run", str(cfg), "--quiet", "--out", str(tmp_path / fmt), "--cores", "1")
        assert r.returncode == 0, r.stderr
        outs[fmt] = tmp_path / fmt
    assert not (outs["binary"] / "occupancy.csv").exists() and not (outs["csv"] / "occupancy.bin").exists()
    assert not (outs["none"] / "occupancy.bin").exists() and not (outs["none"] / "occupancy.csv").exists()
    b = read_long(outs["binary"] / "occupancy.bin")
    c = read_long(outs["csv"] / "occupancy.csv")
    for col in ("timeslot", "router", "port", "packets", "bytes"):
        assert b[col] == c[col], col
    assert b["time_us"] == pytest.approx(c["time_us"], abs=1e-4)
    occ = read_occupancy_bin(outs["binary"] / "occupancy.bin")
    assert occ.timeslot_ns == 1200.0 and occ.interval_timeslots == 5  # 6 us / 1.2 us
    assert [r.tier for r in occ.routers] == ["tor", "tor", "spine", "spine"]
    assert max(c["packets"]) > 0  # queues did build
    # occupancy_summary.csv: the same with every format (histograms, not samples), and it agrees with the samples.
    summary = (outs["binary"] / "occupancy_summary.csv").read_text()
    assert summary == (outs["csv"] / "occupancy_summary.csv").read_text() == \
        (outs["none"] / "occupancy_summary.csv").read_text()
    per_port: dict[tuple[str, int], list[float]] = {}
    for router, port, pk in zip(c["router"], c["port"], c["packets"]):
        per_port.setdefault((router, int(port)), []).append(pk)
    srows = rows(outs["binary"] / "occupancy_summary.csv")
    assert len(srows) == len(per_port) == 2 * (4 + 2) + 2 * 2
    for s in srows:
        v = per_port[(s["router"], int(s["port"]))]
        assert int(s["samples"]) == len(v)
        assert float(s["mean_pkts"]) == pytest.approx(sum(v) / len(v), abs=1e-4)
        for col, q in (("p50_pkts", 0.5), ("p90_pkts", 0.9), ("p99_pkts", 0.99), ("p999_pkts", 0.999)):
            assert float(s[col]) == nearest_rank(v, q), (s["router"], s["port"], col)
        assert float(s["max_pkts"]) == max(v)
    # flows_summary.csv agrees with flows.csv.
    flows = rows(outs["none"] / "flows.csv")
    fs = {r["bucket_pkts"]: r for r in rows(outs["none"] / "flows_summary.csv")}
    assert int(fs["all"]["flows"]) == len(flows)
    assert int(fs["all"]["unfinished"]) == sum(f["finished"] == "0" for f in flows)
    fct = [float(f["fct_us"]) for f in flows if f["finished"] == "1"]
    assert len(fct) == len(flows) == 10
    slow = [float(f["slowdown"]) for f in flows if f["finished"] == "1"]
    assert float(fs["all"]["p99_fct_us"]) == pytest.approx(nearest_rank(fct, 0.99), abs=1e-3)
    assert float(fs["all"]["mean_slowdown"]) == pytest.approx(sum(slow) / len(slow), rel=1e-5)
    small = [f for f in flows if 60 <= int(f["size_pkts"]) <= 100]
    assert int(fs["11-100"]["flows"]) == len(small) == 6 and int(fs["1-10"]["flows"]) == 0
    assert sum(int(r["flows"]) for k, r in fs.items() if k != "all") == len(flows)
    # A bad format name is a config error naming the field.
    bad = write(tmp_path, base + "output: {occupancy: parquet}\n", "bad.yaml")
    r = run("check", str(bad))
    assert r.returncode == 2 and "output.occupancy" in r.stderr and "parquet" in r.stderr


FAT_TREE = f"""
seed: 5
topology: {{kind: fat_tree, k: 4}}
routers:
  default: {{scheme: droptail, queue_manager: {{capacity_pkts: 64}}}}
  agg: {{queue_manager: {{capacity_pkts: 32}}}}
  core: {{scheme: red, queue_manager: {{min_th_pkts: 4, max_th_pkts: 12, capacity_pkts: 24}}}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 20, drain_ms: 5, occupancy_interval_us: 12, packet_log: true}}
"""


def test_bench_scaling_times_each_core_count_and_placement_and_compares_their_files(tmp_path: Path) -> None:
    cfg = write(tmp_path, FAT_TREE.replace("duration_ms: 20", "duration_ms: 4"))
    r = subprocess.run([str(REPO / "scripts" / "bench_scaling.sh"), "-b", str(BIN), "-r", "1", "-p",
                        "grouped round_robin", str(cfg), "1", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows_ = list(csv.DictReader(r.stdout.splitlines()))
    assert [(x["placement"], x["cores"]) for x in rows_] == [
        ("grouped", "1"), ("grouped", "2"), ("round_robin", "1"), ("round_robin", "2")]
    for x in rows_:
        assert x["same_outputs"] == "yes" and float(x["wall_s"]) > 0 and float(x["engine_s"]) > 0
    bad = subprocess.run([str(REPO / "scripts" / "bench_scaling.sh"), str(cfg)], capture_output=True, text=True)
    assert bad.returncode == 2 and "CORES" in bad.stderr


def test_fat_tree_runs_with_per_tier_schemes_and_identical_files_on_one_and_two_cores(tmp_path: Path) -> None:
    cfg = write(tmp_path, FAT_TREE)
    rr = write(tmp_path, FAT_TREE.replace("packet_log: true}", "packet_log: true, placement: round_robin}"), "rr.yaml")
    for name, c, cores in (("1", cfg, "1"), ("2", cfg, "2"), ("3", cfg, "3"), ("2rr", rr, "2")):
        r = run("run", str(c), "--quiet", "--out", str(tmp_path / name), "--cores", cores)
        assert r.returncode == 0, r.stderr
        assert "lost outside any queue" not in r.stderr
    out = tmp_path / "1"
    meta = yaml.safe_load((out / "metadata.yaml").read_text())
    assert meta["placement"] == "grouped"
    assert yaml.safe_load((tmp_path / "2rr" / "metadata.yaml").read_text())["placement"] == "round_robin"
    routers = meta["routers"]
    assert len(routers) == 20
    assert routers["edge0_0"]["scheme"] == "droptail" and routers["edge0_0"]["queue_manager"]["capacity_pkts"] == 64
    assert routers["agg3_1"]["scheme"] == "droptail" and routers["agg3_1"]["queue_manager"]["capacity_pkts"] == 32
    assert routers["core1_1"]["scheme"] == "red" and routers["core1_1"]["queue_manager"]["capacity_pkts"] == 24
    # The ideal FCT follows each flow's own path: 2, 4 or 6 links of 1 timeslot (1.2 us).
    flows = rows(out / "flows.csv")
    assert len(flows) == meta["results"]["flows"] > 50
    seen = set()
    for f in flows:
        src, dst = int(f["src"]), int(f["dst"])
        links = 2 if src // 2 == dst // 2 else 4 if src // 4 == dst // 4 else 6
        seen.add(links)
        assert float(f["ideal_fct_us"]) == pytest.approx((int(f["size_pkts"]) + links) * 1.2, abs=1e-3)
    assert seen == {2, 4, 6}
    # Every tier queued packets, and every router appears in the occupancy.
    occ = read_occupancy_bin(out / "occupancy.bin")
    assert len(occ.routers) == 20
    busy = {r.tier for r in occ.routers if max(r.packets) > 0}
    assert busy == {"edge", "agg", "core"}
    counters = rows(out / "counters.csv")
    assert {c["router"].rstrip("0123456789_") for c in counters if int(c["dequeued"]) > 0} == {"edge", "agg", "core"}
    for name in ("flows.csv", "counters.csv", "packets.csv", "occupancy.bin", "losses.csv", "occupancy_summary.csv",
                 "flows_summary.csv"):
        for cores in ("2", "3", "2rr"):
            assert (out / name).read_bytes() == (tmp_path / cores / name).read_bytes(), (cores, name)
    # A placement that is not one of the two is a config error naming the field.
    bad = write(tmp_path, FAT_TREE.replace("packet_log: true}", "packet_log: true, placement: by_pod}"), "bad.yaml")
    r = run("check", str(bad))
    assert r.returncode == 2 and "run.placement" in r.stderr and "by_pod" in r.stderr


def test_closed_loop_metadata_records_every_transport_parameter(tmp_path: Path) -> None:
    """metadata.yaml's transport_params: each parameter's resolved value, the
    ones the config left out at their defaults, so a run says whether its
    senders had SACK."""
    cfg = write(tmp_path, SMALL + "transport: {kind: newreno, sack: true, sack_blocks: 4, min_rto_us: 500}\n")
    r = run("run", str(cfg), "--quiet", "--out", str(tmp_path / "out"), "--cores", "1")
    assert r.returncode == 0, r.stderr
    meta = yaml.safe_load((tmp_path / "out" / "metadata.yaml").read_text())
    assert meta["transport"] == "reno"
    params = meta["transport_params"]
    assert params["sack"] is True and params["sack_blocks"] == 4 and params["min_rto_us"] == 500
    assert params["initial_cwnd_pkts"] == 10 and params["rto_every_partial_ack"] is False  # defaults
    res = meta["results"]  # closed loop: nothing is lost for good; a long flow may still be sending
    assert res["flows"] > 0 and res["unfinished_lost"] == 0
    assert res["finished"] + res["unfinished_in_flight"] == res["flows"]
    bad = write(tmp_path, SMALL + "transport: {kind: pfabric, sack: true}\n", "bad.yaml")
    r = run("check", str(bad))
    assert r.returncode == 2 and "sack applies to reno, ecn and dctcp" in r.stderr, r.stderr
